/* image_decode_raw.c — ImageDecoder's hand-written decoders for the two uncompressed raster formats
 * Debian has no small, well-kept library for:
 *   BMP  uncompressed 1/4/8-bit palette, 24-bit and 32-bit (plain or 8-8-8 bit fields), bottom-up
 *        or top-down; RLE and other bit fields are unsupported.
 *   PNM  binary P5 (gray) and P6 (RGB) with maxval 255.
 * Both are defensive by construction: every field is read through a bounds check against the input,
 * the raster must be wholly present in the input before any pixel memory is allocated (so a tiny
 * file cannot claim a huge picture), and every palette index is checked.
 */
#include "image_decode.h"

#include <string.h>

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* ---- BMP ---- */

typedef struct bmp_hdr {
    uint32_t off, hs, comp, ncol;
    int64_t w, h;
    int bpp;
    bool topdown;
} bmp_hdr;

static lt_status bmp_header(const lt_img_src *d, bmp_hdr *b) {
    const uint8_t *p = d->p;
    if (d->len < 54) return lt_img_bad(d, "BMP", "truncated header");
    b->off = le32(p + 10), b->hs = le32(p + 14);
    if (b->hs < 40 || b->hs > d->len - 14)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "BMP header of %u bytes", b->hs);
    int32_t w = (int32_t)le32(p + 18), h = (int32_t)le32(p + 22);
    b->bpp = le16(p + 28);
    b->comp = le32(p + 30), b->ncol = le32(p + 46);
    if (b->comp != 0 && !(b->comp == 3 && b->bpp == 32))
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "compressed BMP (compression %u)", b->comp);
    if (b->bpp != 1 && b->bpp != 4 && b->bpp != 8 && b->bpp != 24 && b->bpp != 32)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "BMP with %d bits per pixel", b->bpp);
    if (w <= 0 || h == 0 || h == INT32_MIN) return lt_img_bad(d, "BMP", "bad dimensions");
    b->topdown = h < 0;
    b->w = w, b->h = b->topdown ? -(int64_t)h : h;
    if (b->comp == 3) {
        if (d->len < 66) return lt_img_bad(d, "BMP", "truncated bit field masks");
        if (le32(p + 54) != 0xff0000 || le32(p + 58) != 0xff00 || le32(p + 62) != 0xff)
            return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "BMP bit fields other than 8-8-8");
    }
    return LT_OK;
}

static lt_status bmp_palette(const lt_img_src *d, const bmp_hdr *b, uint8_t pal[256][3], int *npal) {
    *npal = 0;
    if (b->bpp > 8) return LT_OK;
    int n = b->ncol ? (int)(b->ncol > 256 ? 256 : b->ncol) : 1 << b->bpp;
    size_t po = 14 + (size_t)b->hs;
    if (po > d->len || (size_t)n * 4 > d->len - po) return lt_img_bad(d, "BMP", "truncated palette");
    for (int i = 0; i < n; i++) {
        const uint8_t *q = d->p + po + 4 * (size_t)i; /* B G R x */
        pal[i][0] = q[2], pal[i][1] = q[1], pal[i][2] = q[0];
    }
    *npal = n;
    return LT_OK;
}

lt_status lt_img_decode_bmp(const lt_img_src *d, lt_img *im) {
    bmp_hdr b = {0};
    uint8_t pal[256][3];
    int npal;
    LT_TRY(bmp_header(d, &b));
    LT_TRY(lt_img_check_size(d, "BMP", b.w, b.h));
    LT_TRY(bmp_palette(d, &b, pal, &npal));
    size_t stride = (((size_t)b.bpp * (size_t)b.w + 31) / 32) * 4;
    if (b.off > d->len || stride * (size_t)b.h > d->len - b.off) return lt_img_bad(d, "BMP", "truncated pixel data");
    LT_TRY(lt_img_alloc(d, "BMP", im, b.w, b.h, 3));
    for (int64_t y = 0; y < b.h; y++) {
        const uint8_t *row = d->p + b.off + stride * (size_t)(b.topdown ? y : b.h - 1 - y);
        for (int64_t x = 0; x < b.w; x++) {
            uint8_t *o = im->px + (y * b.w + x) * 3;
            if (b.bpp == 24 || b.bpp == 32) {
                const uint8_t *q = row + x * (b.bpp / 8);
                o[0] = q[2], o[1] = q[1], o[2] = q[0];
                continue;
            }
            int per = 8 / b.bpp, shift = 8 - b.bpp * (int)(x % per + 1);
            int v = (row[x / per] >> shift) & ((1 << b.bpp) - 1);
            if (v >= npal) return lt_img_bad(d, "BMP", "palette index out of range");
            memcpy(o, pal[v], 3);
        }
    }
    return LT_OK;
}

/* ---- PNM ---- */

static bool pnm_int(const lt_img_src *d, size_t *pos, int64_t *v) {
    const uint8_t *p = d->p;
    for (;;) {
        while (*pos < d->len && (p[*pos] == ' ' || p[*pos] == '\t' || p[*pos] == '\n' || p[*pos] == '\r')) (*pos)++;
        if (*pos < d->len && p[*pos] == '#') {
            while (*pos < d->len && p[*pos] != '\n') (*pos)++;
            continue;
        }
        break;
    }
    if (*pos >= d->len || p[*pos] < '0' || p[*pos] > '9') return false;
    int64_t x = 0;
    while (*pos < d->len && p[*pos] >= '0' && p[*pos] <= '9') {
        x = x * 10 + (p[*pos] - '0');
        if (x > LT_IMG_MAX_PIXELS) return false;
        (*pos)++;
    }
    *v = x;
    return true;
}

lt_status lt_img_decode_pnm(const lt_img_src *d, lt_img *im) {
    int ch = d->p[1] == '6' ? 3 : 1;
    size_t pos = 2;
    int64_t w, h, maxv;
    if (!pnm_int(d, &pos, &w) || !pnm_int(d, &pos, &h) || !pnm_int(d, &pos, &maxv) || pos >= d->len)
        return lt_img_bad(d, "PNM", "bad header");
    pos++; /* the single whitespace before the raster */
    if (maxv != 255) return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "PNM with maxval %lld", (long long)maxv);
    LT_TRY(lt_img_check_size(d, "PNM", w, h));
    size_t need = (size_t)(w * h * ch);
    if (need > d->len - pos) return lt_img_bad(d, "PNM", "truncated raster");
    LT_TRY(lt_img_alloc(d, "PNM", im, w, h, ch));
    memcpy(im->px, d->p + pos, need);
    return LT_OK;
}
