/* image_decode_png.c — ImageDecoder's PNG decoder, through libpng when the build found it
 * (LT_HAVE_PNG); otherwise PNG is reported as unsupported.
 *
 * Output as Pillow gives it: gray (any bit depth, 1/2/4-bit scaled to 0..255) decodes to one
 * channel, palette and truecolor to RGB; alpha and tRNS are dropped; 16-bit samples keep their high
 * byte (Pillow's rawmodes for 16-bit RGB do the same; for 16-bit gray Pillow's "I;16" -> "L"
 * clips the value at 255 instead, which is not copied); interlaced images are supported; gAMA and
 * color profiles are ignored, as Pillow ignores them.
 *
 * Hostile input: png_set_user_limits caps the header's width and height (before any row is read),
 * lt_img_check_size caps their product before the picture is allocated, png_set_chunk_malloc_max
 * and png_set_chunk_cache_max bound what ancillary chunks (compressed text, profiles) may take, and
 * all of libpng's memory comes from lathe's allocator. libpng reports errors (corrupt data, bad
 * CRCs of critical chunks, running out of input or memory) by longjmp to the setjmp in
 * png_decode; everything allocated is released there: the pixel buffer is a volatile pointer.
 */
#include "image_decode.h"

#ifndef LT_HAVE_PNG
lt_status lt_img_decode_png(const lt_img_src *d, lt_img *im) {
    (void)im;
    return lt_img_missing(d, "PNG", "libpng");
}
#else
#include <png.h>
#include <string.h>

/* What libpng's callbacks reach through png_get_io_ptr / png_get_error_ptr / png_get_mem_ptr. */
typedef struct png_ctx {
    const lt_img_src *d;
    size_t pos;   /* read position in d->p */
    bool oom;     /* an allocation of libpng's failed */
    char msg[160];
} png_ctx;

static void png_read(png_structp png, png_bytep out, size_t n) {
    png_ctx *c = png_get_io_ptr(png);
    if (n > c->d->len - c->pos) png_error(png, "truncated file");
    memcpy(out, c->d->p + c->pos, n);
    c->pos += n;
}

static void png_on_error(png_structp png, png_const_charp msg) {
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static png_voidp png_on_malloc(png_structp png, png_alloc_size_t n) {
    void *p = lt_mem_alloc(n ? n : 1);
    if (!p) ((png_ctx *)png_get_mem_ptr(png))->oom = true;
    return p;
}
static void png_on_free(png_structp png, png_voidp p) {
    (void)png;
    lt_mem_free(p);
}

/* Transforms to 8-bit gray or RGB with no alpha; returns the output channel count and sets the
 * number of interlace passes. */
static int png_setup_transforms(png_structp png, png_infop info, int *passes) {
    int ctype = png_get_color_type(png, info);
    png_set_strip_16(png);
    png_set_packing(png);
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_expand_gray_1_2_4_to_8(png);
    png_set_strip_alpha(png);
    *passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    return png_get_channels(png, info);
}

/* The part that may longjmp: header, limits, transforms, rows. */
static lt_status png_decode(png_structp png, png_infop info, png_ctx *c, lt_img *im) {
    const lt_img_src *d = c->d;
    uint8_t *volatile px = NULL;
    if (setjmp(png_jmpbuf(png))) {
        lt_mem_free(px);
        if (c->oom) return lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (png)");
        return lt_img_bad(d, "PNG", c->msg);
    }
    png_set_user_limits(png, (png_uint_32)LT_IMG_MAX_DIM, (png_uint_32)LT_IMG_MAX_DIM);
    png_set_chunk_malloc_max(png, (png_alloc_size_t)8 << 20);
    png_set_chunk_cache_max(png, 1000);
    png_set_read_fn(png, c, png_read);
    png_read_info(png, info);
    int64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    lt_status s = lt_img_check_size(d, "PNG", w, h);
    if (s != LT_OK) return s;
    int passes;
    int ch = png_setup_transforms(png, info, &passes);
    if ((ch != 1 && ch != 3) || png_get_bit_depth(png, info) != 8 || png_get_rowbytes(png, info) != (size_t)(w * ch))
        return lt_op_error(d->ev, d->n, LT_ERR_INTERNAL, "PNG: unexpected layout after transforms");
    px = lt_alloc(d->ev->ctx, (size_t)(w * h * ch), "decoded image");
    if (!px) return LT_ERR_NOMEM;
    for (int pass = 0; pass < passes; pass++)
        for (int64_t y = 0; y < h; y++) png_read_row(png, px + (size_t)(y * w * ch), NULL);
    png_read_end(png, NULL);
    im->w = w, im->h = h, im->ch = ch, im->px = px;
    return LT_OK;
}

lt_status lt_img_decode_png(const lt_img_src *d, lt_img *im) {
    png_ctx c = {.d = d};
    png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &c, png_on_error, png_on_warning, &c,
                                               png_on_malloc, png_on_free);
    if (!png) return lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (png)");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (png)");
    }
    lt_status s = png_decode(png, info, &c, im);
    png_destroy_read_struct(&png, &info, NULL);
    return s;
}
#endif
