/* image_decode.h — private interface between ImageDecoder's dispatcher (image_decode.c) and its
 * per-format decoders, one file each: image_decode_png.c (libpng), image_decode_jpeg.c (libjpeg),
 * image_decode_webp.c (libwebp), image_decode_jp2.c (libopenjp2), image_decode_tiff.c (libtiff)
 * and image_decode_raw.c (hand-written BMP and binary PNM). A library is optional at build time
 * (LT_HAVE_PNG, LT_HAVE_JPEG, LT_HAVE_WEBP, LT_HAVE_OPENJP2, LT_HAVE_TIFF, set by CMakeLists.txt);
 * without it the decoder reports its format as unsupported (lt_img_missing).
 *
 * A decoder fills an lt_img of 8-bit samples with 1 (gray) or 3 (RGB) channels; the dispatcher
 * converts it to the requested pixel_format. Every decoder refuses, before allocating pixel memory,
 * an image over LT_IMG_MAX_DIM on a side or LT_IMG_MAX_PIXELS in all (lt_img_check_size).
 */
#ifndef LT_IMAGE_DECODE_H
#define LT_IMAGE_DECODE_H

#include "image_impl.h"

#define LT_IMG_MAX_PIXELS ((int64_t)1 << 28)
#define LT_IMG_MAX_DIM ((int64_t)1 << 20)

/* A decoded picture: 8-bit samples, ch 1 (gray) or 3 (RGB), row-major; px from lt_alloc. */
typedef struct lt_img {
    int64_t w, h;
    int ch;
    uint8_t *px;
} lt_img;

/* The encoded bytes and the node being evaluated (for error messages). */
typedef struct lt_img_src {
    lt_eval *ev;
    const lt_node *n;
    const uint8_t *p;
    size_t len;
} lt_img_src;

/* LT_ERR_INVALID "<fmt> image is corrupt: <msg>", named after the node. */
lt_status lt_img_bad(const lt_img_src *d, const char *fmt, const char *msg);
/* LT_ERR_UNSUPPORTED "<fmt> images are not supported: lathe was built without <lib>". */
lt_status lt_img_missing(const lt_img_src *d, const char *fmt, const char *lib);
/* LT_ERR_INVALID (input refused) unless 0 < w, h <= LT_IMG_MAX_DIM and w * h <= LT_IMG_MAX_PIXELS. */
lt_status lt_img_check_size(const lt_img_src *d, const char *fmt, int64_t w, int64_t h);
/* lt_img_check_size, then im->px of w * h * ch bytes (LT_ERR_NOMEM if that fails). */
lt_status lt_img_alloc(const lt_img_src *d, const char *fmt, lt_img *im, int64_t w, int64_t h, int ch);

/* The decoders: on success im holds the picture; on failure im->px is NULL or the caller frees it. */
lt_status lt_img_decode_png(const lt_img_src *d, lt_img *im);
lt_status lt_img_decode_jpeg(const lt_img_src *d, lt_img *im);
lt_status lt_img_decode_webp(const lt_img_src *d, lt_img *im);
lt_status lt_img_decode_jp2(const lt_img_src *d, lt_img *im);
lt_status lt_img_decode_tiff(const lt_img_src *d, lt_img *im);
lt_status lt_img_decode_bmp(const lt_img_src *d, lt_img *im);
lt_status lt_img_decode_pnm(const lt_img_src *d, lt_img *im);

#endif
