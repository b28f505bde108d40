/* image_decode_webp.c — ImageDecoder's WebP decoder, through libwebp when the build found it
 * (LT_HAVE_WEBP); otherwise WebP is reported as unsupported.
 *
 * Lossy and lossless still images decode to RGB (libwebp's MODE_RGB: alpha dropped, colors not
 * premultiplied, the values Pillow gives); animated WebP is unsupported. The header is read first
 * (WebPGetFeatures) and the size limit checked before anything is allocated; libwebp then decodes
 * straight into lathe's buffer (external memory), and its status codes become the error message.
 */
#include "image_decode.h"

#ifndef LT_HAVE_WEBP
lt_status lt_img_decode_webp(const lt_img_src *d, lt_img *im) {
    (void)im;
    return lt_img_missing(d, "WebP", "libwebp");
}
#else
#include <webp/decode.h>

static const char *webp_status(VP8StatusCode s) {
    switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "decoding suspended";
    case VP8_STATUS_USER_ABORT: return "decoding aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated data";
    default: return "decoding failed";
    }
}

static lt_status webp_fail(const lt_img_src *d, VP8StatusCode s) {
    if (s == VP8_STATUS_OUT_OF_MEMORY) return lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (webp)");
    if (s == VP8_STATUS_UNSUPPORTED_FEATURE)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "WebP image uses an unsupported feature");
    return lt_img_bad(d, "WebP", webp_status(s));
}

lt_status lt_img_decode_webp(const lt_img_src *d, lt_img *im) {
    WebPDecoderConfig cfg;
    if (!WebPInitDecoderConfig(&cfg))
        return lt_op_error(d->ev, d->n, LT_ERR_INTERNAL, "libwebp version mismatch");
    VP8StatusCode vs = WebPGetFeatures(d->p, d->len, &cfg.input);
    if (vs != VP8_STATUS_OK) return webp_fail(d, vs);
    if (cfg.input.has_animation)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "animated WebP images are not supported");
    LT_TRY(lt_img_alloc(d, "WebP", im, cfg.input.width, cfg.input.height, 3));
    cfg.output.colorspace = MODE_RGB;
    cfg.output.is_external_memory = 1;
    cfg.output.u.RGBA.rgba = im->px;
    cfg.output.u.RGBA.stride = (int)(im->w * 3);
    cfg.output.u.RGBA.size = (size_t)(im->w * im->h * 3);
    vs = WebPDecode(d->p, d->len, &cfg);
    WebPFreeDecBuffer(&cfg.output); /* frees nothing of ours: the memory is external */
    if (vs != VP8_STATUS_OK) {
        lt_mem_free(im->px);
        im->px = NULL;
        return webp_fail(d, vs);
    }
    return LT_OK;
}
#endif
