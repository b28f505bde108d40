/* image_decode.c — ImageDecoder (opset 20): decode an encoded image (uint8 bytes) into
 * uint8[H, W, 3] (pixel_format RGB or BGR) or uint8[H, W, 1] (Grayscale).
 *
 * This file recognizes the format by its signature, runs that format's decoder and converts the
 * decoded picture to the requested pixel_format. The decoders are one file each (image_decode.h):
 *   PNG        libpng         (LT_HAVE_PNG)
 *   JPEG       libjpeg-turbo  (LT_HAVE_JPEG)
 *   WebP       libwebp        (LT_HAVE_WEBP)
 *   JPEG 2000  libopenjp2     (LT_HAVE_OPENJP2; .jp2 files and raw .j2k codestreams)
 *   TIFF       libtiff        (LT_HAVE_TIFF)
 *   BMP, PNM   hand-written (uncompressed rasters only; Debian has no small library for them)
 * A format whose library this build lacks is LT_ERR_UNSUPPORTED, naming the format and the library;
 * anything unrecognized (GIF, ...) is LT_ERR_UNSUPPORTED too, and corrupt data LT_ERR_INVALID.
 * Semantics follow onnx's reference (Pillow): alpha is dropped, gray images give R = G = B, palettes
 * are expanded, and Grayscale from color is Pillow's ITU-R 601-2 luma in fixed point,
 * L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
 */
#include "image_decode.h"

#include <string.h>

lt_status lt_img_bad(const lt_img_src *d, const char *fmt, const char *msg) {
    return lt_op_error(d->ev, d->n, LT_ERR_INVALID, "%s image is corrupt: %s", fmt, msg);
}

lt_status lt_img_missing(const lt_img_src *d, const char *fmt, const char *lib) {
    return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "%s images are not supported: lathe was built without %s",
                       fmt, lib);
}

lt_status lt_img_check_size(const lt_img_src *d, const char *fmt, int64_t w, int64_t h) {
    if (w <= 0 || h <= 0 || w > LT_IMG_MAX_DIM || h > LT_IMG_MAX_DIM || w * h > LT_IMG_MAX_PIXELS)
        return lt_op_error(d->ev, d->n, LT_ERR_INVALID,
                           "%s image size %lldx%lld is empty or too large (limit %lld pixels, %lld a side)", fmt,
                           (long long)w, (long long)h, (long long)LT_IMG_MAX_PIXELS, (long long)LT_IMG_MAX_DIM);
    return LT_OK;
}

lt_status lt_img_alloc(const lt_img_src *d, const char *fmt, lt_img *im, int64_t w, int64_t h, int ch) {
    LT_TRY(lt_img_check_size(d, fmt, w, h));
    im->w = w, im->h = h, im->ch = ch;
    im->px = lt_alloc(d->ev->ctx, (size_t)(w * h * ch), "decoded image");
    return im->px ? LT_OK : LT_ERR_NOMEM;
}

static bool has_prefix(const lt_img_src *d, const void *sig, size_t n) {
    return d->len >= n && memcmp(d->p, sig, n) == 0;
}

static bool is_pnm(const lt_img_src *d) {
    const uint8_t *p = d->p;
    return d->len >= 3 && p[0] == 'P' && (p[1] == '5' || p[1] == '6') &&
           (p[2] == ' ' || p[2] == '\n' || p[2] == '\r' || p[2] == '\t');
}

static bool is_webp(const lt_img_src *d) {
    return d->len >= 12 && memcmp(d->p, "RIFF", 4) == 0 && memcmp(d->p + 8, "WEBP", 4) == 0;
}

/* A JP2 file starts with its signature box; a raw codestream with SOC and SIZ markers. */
static bool is_jp2(const lt_img_src *d) {
    return has_prefix(d, "\0\0\0\x0cjP  \r\n\x87\n", 12) || has_prefix(d, "\xff\x4f\xff\x51", 4);
}

static lt_status decode_any(const lt_img_src *d, lt_img *im) {
    if (has_prefix(d, "\x89PNG\r\n\x1a\n", 8)) return lt_img_decode_png(d, im);
    if (has_prefix(d, "\xff\xd8\xff", 3)) return lt_img_decode_jpeg(d, im);
    if (is_webp(d)) return lt_img_decode_webp(d, im);
    if (is_jp2(d)) return lt_img_decode_jp2(d, im);
    if (has_prefix(d, "II*\0", 4) || has_prefix(d, "MM\0*", 4)) return lt_img_decode_tiff(d, im);
    if (has_prefix(d, "BM", 2)) return lt_img_decode_bmp(d, im);
    if (is_pnm(d)) return lt_img_decode_pnm(d, im);
    return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "unrecognized or unsupported image format");
}

/* fmt: 0 RGB, 1 BGR, 2 Grayscale. */
static void convert(const lt_img *im, int fmt, uint8_t *o) {
    for (int64_t i = 0; i < im->w * im->h; i++) {
        const uint8_t *q = im->px + i * im->ch;
        uint8_t r = q[0], g = im->ch == 3 ? q[1] : q[0], b = im->ch == 3 ? q[2] : q[0];
        if (fmt == 2) o[i] = im->ch == 1 ? q[0] : (uint8_t)((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
        else if (fmt == 0) o[3 * i] = r, o[3 * i + 1] = g, o[3 * i + 2] = b;
        else o[3 * i] = b, o[3 * i + 1] = g, o[3 * i + 2] = r;
    }
}

lt_status lt_img_decoder_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *t;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &t));
    if (t->dtype != LT_UINT8 || t->rank != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "encoded_stream must be a 1-D uint8 tensor");
    const char *pf = lt_attr_string(n, "pixel_format", "RGB");
    int fmt = strcmp(pf, "RGB") == 0 ? 0 : strcmp(pf, "BGR") == 0 ? 1 : strcmp(pf, "Grayscale") == 0 ? 2 : -1;
    if (fmt < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported pixel_format '%s'", pf);
    lt_img_src d = {ev, n, t->data, (size_t)t->numel};
    lt_img im = {0};
    lt_status s = decode_any(&d, &im);
    if (s == LT_OK && (!im.px || (im.ch != 1 && im.ch != 3)))
        s = lt_op_error(ev, n, LT_ERR_INTERNAL, "image decoder returned no picture");
    if (s == LT_OK) {
        int64_t od[3] = {im.h, im.w, fmt == 2 ? 1 : 3};
        lt_tensor *y;
        s = lt_out_new(ev, n, out, 0, LT_UINT8, 3, od, &y);
        if (s == LT_OK) convert(&im, fmt, y->data);
    }
    lt_mem_free(im.px);
    return s;
}

lt_status lt_img_decoder_infer(lt_infer *ic, lt_node *n) {
    const char *pf = lt_attr_string(n, "pixel_format", "RGB");
    int64_t ch;
    if (strcmp(pf, "RGB") == 0 || strcmp(pf, "BGR") == 0) ch = 3;
    else if (strcmp(pf, "Grayscale") == 0) ch = 1;
    else return lt_infer_error(ic, n, "unsupported pixel_format '%s'", pf);
    int64_t od[3] = {-1, -1, ch};
    return lt_infer_set_i64(ic, n, 0, LT_UINT8, 3, od);
}
