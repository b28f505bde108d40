/* image_decode_jp2.c — ImageDecoder's JPEG 2000 decoder (.jp2 files and raw .j2k codestreams),
 * through libopenjp2 when the build found it (LT_HAVE_OPENJP2); otherwise JPEG 2000 is reported as
 * unsupported.
 *
 * Output as Pillow gives it: 1 or 2 components (gray, gray + alpha) decode to one channel, 3 or 4
 * (RGB, RGBA; a JP2 palette is expanded by the library) to RGB, alpha dropped; samples of other
 * precisions are scaled to 8 bits (higher ones keep their high bits, signed ones are offset to
 * unsigned); subsampled components are upsampled by repetition; sYCC is converted to RGB with the
 * JFIF equations; CMYK and e-YCC are unsupported.
 *
 * Hostile input: the stream reads lathe's buffer through bounds-checked callbacks; the header is read
 * first and the image size, component count, precision and subsampling checked before the library
 * allocates any sample memory (opj_decode), and again after it (a palette adds components); the
 * decoder runs in strict mode, so truncated
 * codestreams are errors, and the library's error messages (no longjmp here) become ours.
 */
#include "image_decode.h"

#ifndef LT_HAVE_OPENJP2
lt_status lt_img_decode_jp2(const lt_img_src *d, lt_img *im) {
    (void)im;
    return lt_img_missing(d, "JPEG 2000", "libopenjp2");
}
#else
#include <math.h>
#include <openjpeg.h>
#include <stdio.h>
#include <string.h>

typedef struct jp2_ctx {
    const lt_img_src *d;
    size_t pos;
    char msg[160];
} jp2_ctx;

/* ---- the memory stream ---- */

static OPJ_SIZE_T jp2_read(void *buf, OPJ_SIZE_T n, void *user) {
    jp2_ctx *c = user;
    if (c->pos >= c->d->len) return (OPJ_SIZE_T)-1;
    if (n > c->d->len - c->pos) n = c->d->len - c->pos;
    memcpy(buf, c->d->p + c->pos, n);
    c->pos += n;
    return n;
}

static OPJ_OFF_T jp2_skip(OPJ_OFF_T n, void *user) {
    jp2_ctx *c = user;
    if (n < 0) n = (size_t)-n > c->pos ? -(OPJ_OFF_T)c->pos : n;
    else if ((uint64_t)n > c->d->len - c->pos) n = (OPJ_OFF_T)(c->d->len - c->pos);
    c->pos = (size_t)((OPJ_OFF_T)c->pos + n);
    return n;
}

static OPJ_BOOL jp2_seek(OPJ_OFF_T off, void *user) {
    jp2_ctx *c = user;
    if (off < 0 || (uint64_t)off > c->d->len) return OPJ_FALSE;
    c->pos = (size_t)off;
    return OPJ_TRUE;
}

static opj_stream_t *jp2_stream(jp2_ctx *c) {
    opj_stream_t *st = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
    if (!st) return NULL;
    opj_stream_set_user_data(st, c, NULL);
    opj_stream_set_user_data_length(st, c->d->len);
    opj_stream_set_read_function(st, jp2_read);
    opj_stream_set_skip_function(st, jp2_skip);
    opj_stream_set_seek_function(st, jp2_seek);
    return st;
}

/* ---- messages ---- */

static void jp2_on_error(const char *msg, void *user) {
    jp2_ctx *c = user;
    if (c->msg[0]) return; /* the first error says the most */
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "decoding failed");
    size_t n = strlen(c->msg);
    while (n && (c->msg[n - 1] == '\n' || c->msg[n - 1] == '\r')) c->msg[--n] = 0;
}
static void jp2_on_quiet(const char *msg, void *user) { (void)msg, (void)user; }

static opj_codec_t *jp2_codec(const lt_img_src *d, jp2_ctx *c) {
    bool raw = d->len >= 4 && memcmp(d->p, "\xff\x4f\xff\x51", 4) == 0;
    opj_codec_t *codec = opj_create_decompress(raw ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
    if (!codec) return NULL;
    opj_dparameters_t par;
    opj_set_default_decoder_parameters(&par);
    opj_set_error_handler(codec, jp2_on_error, c);
    opj_set_warning_handler(codec, jp2_on_quiet, c);
    opj_set_info_handler(codec, jp2_on_quiet, c);
    if (!opj_setup_decoder(codec, &par) || !opj_decoder_set_strict_mode(codec, OPJ_TRUE)) {
        opj_destroy_codec(codec);
        return NULL;
    }
    return codec;
}

/* ---- header checks and conversion ---- */

/* Output channels (1 or 3) for the header's components, or an error. */
static lt_status jp2_check(const lt_img_src *d, const opj_image_t *img, int *ch) {
    if (img->x1 <= img->x0 || img->y1 <= img->y0) return lt_img_bad(d, "JPEG 2000", "empty image area");
    LT_TRY(lt_img_check_size(d, "JPEG 2000", (int64_t)img->x1 - img->x0, (int64_t)img->y1 - img->y0));
    if (img->numcomps < 1 || img->numcomps > 4)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "JPEG 2000 image with %u components", img->numcomps);
    if (img->color_space == OPJ_CLRSPC_CMYK || img->color_space == OPJ_CLRSPC_EYCC)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "JPEG 2000 image in CMYK or e-YCC");
    for (OPJ_UINT32 i = 0; i < img->numcomps; i++) {
        const opj_image_comp_t *cp = &img->comps[i];
        if (cp->prec < 1 || cp->prec > 16 || cp->dx < 1 || cp->dy < 1 || cp->dx > 255 || cp->dy > 255)
            return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "JPEG 2000 component of %u bits, subsampling %ux%u",
                               cp->prec, cp->dx, cp->dy);
    }
    *ch = img->numcomps >= 3 ? 3 : 1;
    return LT_OK;
}

/* Sample of component cp at absolute reference-grid position (X, Y), as 8 bits. */
static int jp2_sample(const opj_image_comp_t *cp, OPJ_UINT32 X, OPJ_UINT32 Y) {
    int64_t cx = (int64_t)(X / cp->dx) - cp->x0, cy = (int64_t)(Y / cp->dy) - cp->y0;
    cx = cx < 0 ? 0 : cx >= cp->w ? cp->w - 1 : cx;
    cy = cy < 0 ? 0 : cy >= cp->h ? cp->h - 1 : cy;
    int64_t v = cp->data[cy * cp->w + cx];
    if (cp->sgnd) v += (int64_t)1 << (cp->prec - 1);
    int64_t max = ((int64_t)1 << cp->prec) - 1;
    v = v < 0 ? 0 : v > max ? max : v;
    return (int)(cp->prec >= 8 ? v >> (cp->prec - 8) : v << (8 - cp->prec));
}

static uint8_t clamp8(double v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lrint(v)); }

static void jp2_convert(const opj_image_t *img, lt_img *im) {
    bool sycc = img->color_space == OPJ_CLRSPC_SYCC && im->ch == 3;
    for (int64_t y = 0; y < im->h; y++)
        for (int64_t x = 0; x < im->w; x++) {
            OPJ_UINT32 X = img->x0 + (OPJ_UINT32)x, Y = img->y0 + (OPJ_UINT32)y;
            uint8_t *o = im->px + (y * im->w + x) * im->ch;
            if (im->ch == 1) {
                o[0] = (uint8_t)jp2_sample(&img->comps[0], X, Y);
                continue;
            }
            int a = jp2_sample(&img->comps[0], X, Y), b = jp2_sample(&img->comps[1], X, Y),
                c = jp2_sample(&img->comps[2], X, Y);
            if (sycc) {
                o[0] = clamp8(a + 1.402 * (c - 128));
                o[1] = clamp8(a - 0.344136 * (b - 128) - 0.714136 * (c - 128));
                o[2] = clamp8(a + 1.772 * (b - 128));
            } else {
                o[0] = (uint8_t)a, o[1] = (uint8_t)b, o[2] = (uint8_t)c;
            }
        }
}

/* Header, checks, decode and conversion over a set-up codec and stream. */
static lt_status jp2_run(const lt_img_src *d, jp2_ctx *c, opj_codec_t *codec, opj_stream_t *st, lt_img *im) {
    opj_image_t *img = NULL;
    lt_status s = LT_OK;
    int ch = 0;
    if (!opj_read_header(st, codec, &img)) s = lt_img_bad(d, "JPEG 2000", c->msg[0] ? c->msg : "bad header");
    if (s == LT_OK) s = jp2_check(d, img, &ch);
    if (s == LT_OK && !(opj_decode(codec, st, img) && opj_end_decompress(codec, st)))
        s = lt_img_bad(d, "JPEG 2000", c->msg[0] ? c->msg : "decoding failed");
    if (s == LT_OK) s = jp2_check(d, img, &ch); /* again: a JP2 palette adds components */
    for (OPJ_UINT32 i = 0; s == LT_OK && i < img->numcomps; i++)
        if (!img->comps[i].data) s = lt_img_bad(d, "JPEG 2000", "component without data");
    if (s == LT_OK) s = lt_img_alloc(d, "JPEG 2000", im, (int64_t)img->x1 - img->x0, (int64_t)img->y1 - img->y0, ch);
    if (s == LT_OK) jp2_convert(img, im);
    if (img) opj_image_destroy(img);
    return s;
}

lt_status lt_img_decode_jp2(const lt_img_src *d, lt_img *im) {
    jp2_ctx c = {.d = d};
    opj_codec_t *codec = jp2_codec(d, &c);
    opj_stream_t *st = codec ? jp2_stream(&c) : NULL;
    lt_status s = st ? jp2_run(d, &c, codec, st, im) : lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (openjp2)");
    if (st) opj_stream_destroy(st);
    if (codec) opj_destroy_codec(codec);
    return s;
}
#endif
