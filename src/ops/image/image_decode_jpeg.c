/* image_decode_jpeg.c — ImageDecoder's JPEG decoder, through libjpeg(-turbo) when the build found
 * it (LT_HAVE_JPEG); otherwise JPEG is reported as unsupported. Gray JPEGs decode to one channel,
 * three-component ones to RGB (the library's YCbCr conversion, as Pillow's); CMYK is unsupported.
 * The library's errors, and running out of data, longjmp back here (its error_exit), where
 * everything is released; the size limit is checked from the header before any pixel memory is
 * allocated.
 */
#include "image_decode.h"

#ifndef LT_HAVE_JPEG
lt_status lt_img_decode_jpeg(const lt_img_src *d, lt_img *im) {
    (void)im;
    return lt_img_missing(d, "JPEG", "libjpeg");
}
#else
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

typedef struct jerr {
    struct jpeg_error_mgr mgr;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jerr;

static void j_error_exit(j_common_ptr c) {
    jerr *e = (jerr *)c->err;
    c->err->format_message(c, e->msg);
    longjmp(e->jb, 1);
}
static void j_output_message(j_common_ptr c) { (void)c; /* the library never prints */ }
/* Warnings are ignored, except running out of data: a truncated file is an error (as in Pillow),
 * not a picture padded with gray. */
static void j_emit_message(j_common_ptr c, int level) {
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) j_error_exit(c);
}

/* Pick the output color space from the header: 1 or 3 channels, 0 if unsupported. */
static int jpeg_channels(struct jpeg_decompress_struct *ci) {
    if (ci->jpeg_color_space == JCS_GRAYSCALE) {
        ci->out_color_space = JCS_GRAYSCALE;
        return 1;
    }
    if (ci->num_components == 3) {
        ci->out_color_space = JCS_RGB;
        return 3;
    }
    return 0;
}

lt_status lt_img_decode_jpeg(const lt_img_src *d, lt_img *im) {
    struct jpeg_decompress_struct ci;
    jerr e;
    /* Variables changed after setjmp and read after longjmp must be volatile. */
    uint8_t *volatile px = NULL;
    memset(&ci, 0, sizeof ci);
    ci.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = j_error_exit;
    e.mgr.output_message = j_output_message;
    e.mgr.emit_message = j_emit_message;
    e.msg[0] = 0;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&ci);
        lt_mem_free(px);
        return lt_img_bad(d, "JPEG", e.msg);
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, (unsigned char *)d->p, (unsigned long)d->len);
    jpeg_read_header(&ci, TRUE);
    int ch = jpeg_channels(&ci);
    int64_t w = ci.image_width, h = ci.image_height;
    lt_status s = ch ? lt_img_check_size(d, "JPEG", w, h)
                     : lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "JPEG with %d components", ci.num_components);
    if (s == LT_OK) {
        px = lt_alloc(d->ev->ctx, (size_t)(w * h * ch), "decoded image");
        if (!px) s = LT_ERR_NOMEM;
    }
    if (s != LT_OK) {
        jpeg_destroy_decompress(&ci);
        return s;
    }
    jpeg_start_decompress(&ci);
    if ((int64_t)ci.output_width != w || (int64_t)ci.output_height != h || ci.output_components != ch) {
        jpeg_destroy_decompress(&ci);
        lt_mem_free(px);
        return lt_op_error(d->ev, d->n, LT_ERR_INTERNAL, "JPEG: unexpected output geometry");
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW row = px + (size_t)ci.output_scanline * (size_t)w * (size_t)ch;
        jpeg_read_scanlines(&ci, &row, 1);
    }
    jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    im->w = w, im->h = h, im->ch = ch, im->px = px;
    return LT_OK;
}
#endif
