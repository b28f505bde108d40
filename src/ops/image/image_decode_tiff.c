/* image_decode_tiff.c — ImageDecoder's TIFF decoder, through libtiff when the build found it
 * (LT_HAVE_TIFF); otherwise TIFF is reported as unsupported.
 *
 * The first image of the file is read with libtiff's RGBA reader (TIFFReadRGBAImageOriented), which
 * handles every compression, bit depth, photometric interpretation (gray, palette, RGB, YCbCr,
 * CIELab, ...), strips and tiles the library knows; what it does not is LT_ERR_UNSUPPORTED with the
 * library's reason. Two of the reader's habits are turned off to give Pillow's values: extra
 * samples are marked unspecified (the reader would premultiply unassociated alpha; alpha is
 * dropped anyway), and the Orientation tag is taken as top-left (Pillow returns rows as stored).
 * 16-bit samples are scaled to 8 bits by the library (rounded, where Pillow keeps the high byte).
 *
 * Hostile input: the file is read from lathe's buffer through bounds-checked callbacks (never
 * memory-mapped); the image size is checked before the raster is allocated; with libtiff 4.5 or
 * later each of the library's own allocations is capped (TIFFOpenOptionsSetMaxSingleMemAlloc) and
 * its error messages come here (the first one becomes ours) instead of to stderr.
 */
#include "image_decode.h"

#ifndef LT_HAVE_TIFF
lt_status lt_img_decode_tiff(const lt_img_src *d, lt_img *im) {
    (void)im;
    return lt_img_missing(d, "TIFF", "libtiff");
}
#else
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

/* Options and per-handle error handlers arrived with libtiff 4.5.0. */
#define LT_TIFF_OPTIONS (TIFFLIB_VERSION >= 20221213)
/* The largest single allocation libtiff may make: a strip or tile of the largest image, and more. */
#define LT_TIFF_MAX_ALLOC ((tmsize_t)1 << 30)

typedef struct tiff_ctx {
    const lt_img_src *d;
    size_t pos;
    char msg[200];
} tiff_ctx;

/* ---- the memory file ---- */

static tmsize_t tiff_read(thandle_t h, void *buf, tmsize_t n) {
    tiff_ctx *c = (tiff_ctx *)h;
    if (n < 0) return -1;
    size_t k = c->pos >= c->d->len ? 0 : c->d->len - c->pos;
    if ((size_t)n < k) k = (size_t)n;
    memcpy(buf, c->d->p + c->pos, k);
    c->pos += k;
    return (tmsize_t)k;
}
static tmsize_t tiff_write(thandle_t h, void *buf, tmsize_t n) {
    (void)h, (void)buf, (void)n;
    return -1;
}
static toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
    tiff_ctx *c = (tiff_ctx *)h;
    uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? c->pos : c->d->len;
    if (off > UINT64_MAX - base || base + off > SIZE_MAX) return (toff_t)-1;
    c->pos = (size_t)(base + off); /* past the end is allowed; reads there return nothing */
    return (toff_t)c->pos;
}
static int tiff_close(thandle_t h) { return (void)h, 0; }
static toff_t tiff_size(thandle_t h) { return (toff_t)((tiff_ctx *)h)->d->len; }
static int tiff_map(thandle_t h, void **base, toff_t *size) { return (void)h, (void)base, (void)size, 0; }
static void tiff_unmap(thandle_t h, void *base, toff_t size) { (void)h, (void)base, (void)size; }

#if LT_TIFF_OPTIONS
static int tiff_on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)module;
    tiff_ctx *c = user;
    if (!c->msg[0]) vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    return 1; /* handled: not passed on to the global handler */
}
static int tiff_on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1;
}
#endif

static TIFF *tiff_open(tiff_ctx *c) {
#if LT_TIFF_OPTIONS
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts) return NULL;
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts, LT_TIFF_MAX_ALLOC);
    TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_on_error, c);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_on_warning, c);
    TIFF *tif = TIFFClientOpenExt("image", "rm", (thandle_t)c, tiff_read, tiff_write, tiff_seek, tiff_close,
                                  tiff_size, tiff_map, tiff_unmap, opts);
    TIFFOpenOptionsFree(opts);
    return tif;
#else
    return TIFFClientOpen("image", "rm", (thandle_t)c, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                          tiff_map, tiff_unmap);
#endif
}

/* Make the RGBA reader return samples as stored: no alpha premultiplication, no reorientation. */
static void tiff_plain(TIFF *tif) {
    uint16_t n = 0, *types = NULL;
    if (TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &n, &types) && n > 0 && n <= 64) {
        uint16_t un[64] = {0}; /* EXTRASAMPLE_UNSPECIFIED */
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, n, un);
    }
    TIFFSetField(tif, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
}

/* Pack the reader's ABGR words (R in the low byte) into RGB triplets, in place, front to back:
 * triplet i ends at byte 3i + 2, before word i + 1 starts. */
static void tiff_pack_rgb(uint8_t *px, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t v;
        memcpy(&v, px + 4 * i, 4);
        px[3 * i] = (uint8_t)TIFFGetR(v), px[3 * i + 1] = (uint8_t)TIFFGetG(v), px[3 * i + 2] = (uint8_t)TIFFGetB(v);
    }
}

static lt_status tiff_run(const lt_img_src *d, tiff_ctx *c, TIFF *tif, lt_img *im) {
    uint32_t w = 0, h = 0;
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h))
        return lt_img_bad(d, "TIFF", "no image width or length");
    LT_TRY(lt_img_check_size(d, "TIFF", w, h));
    char why[1024] = "";
    if (!TIFFRGBAImageOK(tif, why))
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "TIFF image not supported: %s", why);
    tiff_plain(tif);
    /* 4 bytes a pixel for the reader; the RGB triplets are then packed into the same buffer. */
    LT_TRY(lt_img_alloc(d, "TIFF", im, w, h, 4));
    if (!TIFFReadRGBAImageOriented(tif, w, h, (uint32_t *)(void *)im->px, ORIENTATION_TOPLEFT, 1)) {
        lt_mem_free(im->px);
        im->px = NULL;
        return lt_img_bad(d, "TIFF", c->msg[0] ? c->msg : "reading the image failed");
    }
    tiff_pack_rgb(im->px, (int64_t)w * h);
    im->ch = 3;
    return LT_OK;
}

lt_status lt_img_decode_tiff(const lt_img_src *d, lt_img *im) {
    tiff_ctx c = {.d = d};
    TIFF *tif = tiff_open(&c);
    if (!tif) return lt_img_bad(d, "TIFF", c.msg[0] ? c.msg : "cannot read the header");
    lt_status s = tiff_run(d, &c, tif, im);
    TIFFClose(tif);
    return s;
}
#endif
