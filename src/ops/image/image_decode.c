/* image_decode.c — ImageDecoder (opset 20): decode an encoded image (uint8 bytes) into
 * uint8[H, W, 3] (pixel_format RGB or BGR) or uint8[H, W, 1] (Grayscale).
 *
 * Formats, chosen by the file's signature:
 *   PNG  (own decoder over zlib's inflate, which lathe already links): every color type, bit depths
 *        1..16 (16-bit keeps the high byte), non-interlaced; chunk CRCs are checked.
 *   BMP  uncompressed 1/4/8-bit palette, 24 and 32-bit, bottom-up or top-down.
 *   PNM  binary P5 (gray) and P6 (RGB) with maxval 255.
 *   TIFF baseline uncompressed, chunky, 8-bit gray / RGB / RGBA.
 *   JPEG through libjpeg(-turbo) when built with LT_HAVE_JPEG (the build links the library);
 *        otherwise a JPEG is reported as unsupported.
 * Anything else (JPEG 2000, WebP, interlaced PNG, compressed TIFF...) is LT_ERR_UNSUPPORTED.
 * Semantics follow onnx's reference (Pillow): alpha is dropped, gray images give R = G = B, and
 * Grayscale from color is Pillow's L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
 * Every read is bounds-checked against the input; images over LT_IMG_MAX_PIXELS are refused before
 * any pixel memory is allocated.
 */
#include "image_impl.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#ifdef LT_HAVE_JPEG
#include <jpeglib.h>
#endif

#define LT_IMG_MAX_PIXELS ((int64_t)1 << 28)
#define LT_IMG_MAX_DIM ((int64_t)1 << 20)

/* A decoded picture: 8-bit samples, channels 1 (gray) or 3 (RGB), row-major. */
typedef struct img {
    int64_t w, h;
    int ch;
    uint8_t *px;
} img;

typedef struct dec {
    lt_eval *ev;
    const lt_node *n;
    const uint8_t *p;
    size_t len;
} dec;

static lt_status bad(dec *d, const char *fmt, const char *what) {
    return lt_op_error(d->ev, d->n, LT_ERR_INVALID, fmt, what);
}

static lt_status img_alloc(dec *d, img *im, int64_t w, int64_t h, int ch) {
    if (w <= 0 || h <= 0 || w > LT_IMG_MAX_DIM || h > LT_IMG_MAX_DIM || w * h > LT_IMG_MAX_PIXELS)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "image size %lldx%lld is empty or too large",
                           (long long)w, (long long)h);
    im->w = w, im->h = h, im->ch = ch;
    im->px = lt_alloc(d->ev->ctx, (size_t)(w * h * ch), "decoded image");
    return im->px ? LT_OK : LT_ERR_NOMEM;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* ---- PNG ---- */

static void *z_alloc(void *opaque, uInt items, uInt size) {
    (void)opaque;
    size_t n;
    if (!lt_mul_size(items, size, &n)) return NULL;
    return lt_mem_alloc(n);
}
static void z_free(void *opaque, void *p) {
    (void)opaque;
    lt_mem_free(p);
}

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = p > a ? p - a : a - p, pb = p > b ? p - b : b - p, pc = p > c ? p - c : c - p;
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

static lt_status dec_png(dec *d, img *im) {
    const uint8_t *p = d->p;
    size_t len = d->len, pos = 8;
    uint32_t w = 0, h = 0;
    int depth = 0, ctype = -1, interlace = 0;
    uint8_t pal[256][3];
    int npal = 0;
    bool ihdr = false, iend = false;
    uint8_t *z = NULL;
    size_t zlen = 0;
    lt_status s = LT_OK;
    while (!iend) {
        if (len - pos < 12) {
            s = bad(d, "%s: truncated PNG chunk", "png");
            goto done;
        }
        uint32_t cl = be32(p + pos);
        const uint8_t *type = p + pos + 4, *data = p + pos + 8;
        if (cl > len - pos - 12) {
            s = bad(d, "%s: PNG chunk runs past the end of the data", "png");
            goto done;
        }
        if ((uint32_t)crc32(crc32(0, NULL, 0), type, cl + 4) != be32(data + cl)) {
            s = bad(d, "%s: PNG chunk CRC mismatch", "png");
            goto done;
        }
        if (memcmp(type, "IHDR", 4) == 0) {
            if (cl < 13) {
                s = bad(d, "%s: short IHDR", "png");
                goto done;
            }
            w = be32(data), h = be32(data + 4), depth = data[8], ctype = data[9], interlace = data[12];
            ihdr = true;
        } else if (memcmp(type, "PLTE", 4) == 0) {
            npal = (int)(cl / 3 > 256 ? 256 : cl / 3);
            for (int i = 0; i < npal; i++) memcpy(pal[i], data + 3 * i, 3);
        } else if (memcmp(type, "IDAT", 4) == 0) {
            uint8_t *nz = lt_mem_realloc(z, zlen + cl + 1);
            if (!nz) {
                s = lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (png data)");
                goto done;
            }
            z = nz;
            memcpy(z + zlen, data, cl);
            zlen += cl;
        } else if (memcmp(type, "IEND", 4) == 0) {
            iend = true;
        } else if (!(type[0] & 0x20)) {
            char t[5] = {(char)type[0], (char)type[1], (char)type[2], (char)type[3], 0};
            s = lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "unknown critical PNG chunk '%s'", t);
            goto done;
        }
        pos += 12 + (size_t)cl;
    }
    if (!ihdr || !z) {
        s = bad(d, "%s: PNG without IHDR or IDAT", "png");
        goto done;
    }
    int chans = ctype == 0 ? 1 : ctype == 2 ? 3 : ctype == 3 ? 1 : ctype == 4 ? 2 : ctype == 6 ? 4 : 0;
    bool depth_ok = depth == 8 || depth == 16 || ((ctype == 0 || ctype == 3) && (depth == 1 || depth == 2 || depth == 4));
    if (!chans || !depth_ok || (ctype == 3 && depth == 16)) {
        s = lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "PNG color type %d with bit depth %d", ctype, depth);
        goto done;
    }
    if (interlace) {
        s = lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "interlaced PNG");
        goto done;
    }
    if (ctype == 3 && npal == 0) {
        s = bad(d, "%s: palette PNG without PLTE", "png");
        goto done;
    }
    s = img_alloc(d, im, w, h, ctype == 0 || ctype == 4 ? 1 : 3);
    if (s != LT_OK) goto done;
    {
        size_t bpp = (size_t)((chans * depth + 7) / 8), stride = ((size_t)w * (size_t)chans * (size_t)depth + 7) / 8;
        size_t rawlen = (stride + 1) * (size_t)h;
        uint8_t *raw = lt_alloc(d->ev->ctx, rawlen, "png pixels");
        if (!raw) {
            s = LT_ERR_NOMEM;
            goto done;
        }
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        zs.zalloc = z_alloc, zs.zfree = z_free;
        if (inflateInit(&zs) != Z_OK) {
            lt_mem_free(raw);
            s = lt_error(d->ev->ctx, LT_ERR_NOMEM, "out of memory (inflate)");
            goto done;
        }
        zs.next_in = z, zs.avail_in = (uInt)zlen, zs.next_out = raw, zs.avail_out = (uInt)rawlen;
        int zr = inflate(&zs, Z_FINISH);
        size_t got = rawlen - zs.avail_out;
        inflateEnd(&zs);
        if ((zr != Z_STREAM_END && zr != Z_BUF_ERROR && zr != Z_OK) || got != rawlen) {
            lt_mem_free(raw);
            s = bad(d, "%s: corrupt or short PNG image data", "png");
            goto done;
        }
        /* Unfilter in place. */
        for (size_t y = 0; y < h; y++) {
            uint8_t *row = raw + y * (stride + 1), ft = row[0], *cur = row + 1;
            const uint8_t *prev = y ? raw + (y - 1) * (stride + 1) + 1 : NULL;
            if (ft > 4) {
                lt_mem_free(raw);
                s = bad(d, "%s: bad PNG filter type", "png");
                goto done;
            }
            for (size_t i = 0; i < stride; i++) {
                int a = i >= bpp ? cur[i - bpp] : 0, b = prev ? prev[i] : 0, c = (prev && i >= bpp) ? prev[i - bpp] : 0;
                int v = cur[i];
                switch (ft) {
                case 1: v += a; break;
                case 2: v += b; break;
                case 3: v += (a + b) / 2; break;
                case 4: v += paeth(a, b, c); break;
                default: break;
                }
                cur[i] = (uint8_t)v;
            }
        }
        /* Convert to 8-bit gray or RGB. */
        for (size_t y = 0; y < h && s == LT_OK; y++) {
            const uint8_t *row = raw + y * (stride + 1) + 1;
            for (size_t x = 0; x < w; x++) {
                uint8_t *o = im->px + (y * w + x) * (size_t)im->ch;
                if (depth < 8) {
                    int per = 8 / depth, shift = 8 - depth * (int)(x % (size_t)per + 1);
                    int v = (row[x / (size_t)per] >> shift) & ((1 << depth) - 1);
                    if (ctype == 3) {
                        if (v >= npal) {
                            s = bad(d, "%s: palette index out of range", "png");
                            break;
                        }
                        memcpy(o, pal[v], 3);
                    } else {
                        o[0] = (uint8_t)(v * (255 / ((1 << depth) - 1)));
                    }
                    continue;
                }
                size_t sb = (size_t)depth / 8; /* bytes per sample; the high byte comes first */
                const uint8_t *px = row + x * (size_t)chans * sb;
                if (ctype == 3) {
                    if (px[0] >= npal) {
                        s = bad(d, "%s: palette index out of range", "png");
                        break;
                    }
                    memcpy(o, pal[px[0]], 3);
                } else if (ctype == 0 || ctype == 4) {
                    o[0] = px[0];
                } else {
                    o[0] = px[0], o[1] = px[sb], o[2] = px[2 * sb];
                }
            }
        }
        lt_mem_free(raw);
    }
done:
    lt_mem_free(z);
    return s;
}

/* ---- BMP ---- */

static lt_status dec_bmp(dec *d, img *im) {
    const uint8_t *p = d->p;
    size_t len = d->len;
    if (len < 54) return bad(d, "%s: truncated BMP header", "bmp");
    uint32_t off = le32(p + 10), hs = le32(p + 14);
    if (hs < 40 || hs > len - 14) return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "BMP header of %u bytes", hs);
    int32_t w = (int32_t)le32(p + 18), hh = (int32_t)le32(p + 22);
    int bpp = le16(p + 28);
    uint32_t comp = le32(p + 30), ncol = le32(p + 46);
    if (comp != 0 && !(comp == 3 && bpp == 32))
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "compressed BMP (compression %u)", comp);
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 24 && bpp != 32)
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "BMP with %d bits per pixel", bpp);
    if (w <= 0 || hh == 0 || hh == INT32_MIN) return bad(d, "%s: bad BMP dimensions", "bmp");
    bool topdown = hh < 0;
    int64_t h = topdown ? -(int64_t)hh : hh;
    uint8_t pal[256][3];
    int npal = 0;
    if (bpp <= 8) {
        npal = ncol ? (int)(ncol > 256 ? 256 : ncol) : 1 << bpp;
        size_t po = 14 + (size_t)hs;
        if (po + (size_t)npal * 4 > len) return bad(d, "%s: truncated BMP palette", "bmp");
        for (int i = 0; i < npal; i++) pal[i][0] = p[po + 4 * i + 2], pal[i][1] = p[po + 4 * i + 1], pal[i][2] = p[po + 4 * i];
    }
    uint32_t rmask = 0x00ff0000, gmask = 0x0000ff00, bmask = 0x000000ff;
    if (comp == 3) {
        if (len < 66) return bad(d, "%s: truncated BMP masks", "bmp");
        rmask = le32(p + 54), gmask = le32(p + 58), bmask = le32(p + 62);
        if (!((rmask == 0xff0000 && gmask == 0xff00 && bmask == 0xff)))
            return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "BMP bit fields other than 8-8-8");
    }
    LT_TRY(img_alloc(d, im, w, h, 3));
    size_t stride = (((size_t)bpp * (size_t)w + 31) / 32) * 4;
    if (off > len || stride * (size_t)h > len - off) return bad(d, "%s: truncated BMP pixel data", "bmp");
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *row = p + off + stride * (size_t)(topdown ? y : h - 1 - y);
        for (int64_t x = 0; x < w; x++) {
            uint8_t *o = im->px + (y * w + x) * 3;
            if (bpp == 24 || bpp == 32) {
                const uint8_t *q = row + x * (bpp / 8);
                o[0] = q[2], o[1] = q[1], o[2] = q[0];
            } else {
                int per = 8 / bpp, shift = 8 - bpp * (int)(x % per + 1);
                int v = (row[x / per] >> shift) & ((1 << bpp) - 1);
                if (v >= npal) return bad(d, "%s: BMP palette index out of range", "bmp");
                memcpy(o, pal[v], 3);
            }
        }
    }
    return LT_OK;
}

/* ---- PNM ---- */

static bool pnm_int(dec *d, size_t *pos, int64_t *v) {
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

static lt_status dec_pnm(dec *d, img *im) {
    int kind = d->p[1] - '0';
    size_t pos = 2;
    int64_t w, h, maxv;
    if (!pnm_int(d, &pos, &w) || !pnm_int(d, &pos, &h) || !pnm_int(d, &pos, &maxv) || pos >= d->len)
        return bad(d, "%s: bad PNM header", "pnm");
    pos++; /* the single whitespace before the raster */
    if (maxv != 255) return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "PNM with maxval %lld", (long long)maxv);
    int ch = kind == 6 ? 3 : 1;
    LT_TRY(img_alloc(d, im, w, h, ch));
    size_t need = (size_t)(w * h * ch);
    if (need > d->len - pos) return bad(d, "%s: truncated PNM raster", "pnm");
    memcpy(im->px, d->p + pos, need);
    return LT_OK;
}

/* ---- TIFF ---- */

typedef struct tiff {
    const uint8_t *p;
    size_t len;
    bool be;
} tiff;

static uint32_t t16(const tiff *t, size_t o) {
    return t->be ? (uint32_t)(t->p[o] << 8 | t->p[o + 1]) : (uint32_t)(t->p[o] | t->p[o + 1] << 8);
}
static uint32_t t32(const tiff *t, size_t o) { return t->be ? be32(t->p + o) : le32(t->p + o); }

/* Element k of an IFD entry (SHORT or LONG); false if out of bounds. */
static bool tiff_val(const tiff *t, size_t entry, uint32_t k, uint32_t *v) {
    uint32_t type = t16(t, entry + 2), cnt = t32(t, entry + 4);
    size_t sz = type == 3 ? 2 : type == 4 ? 4 : type == 1 ? 1 : 0;
    if (!sz || k >= cnt) return false;
    size_t base = (size_t)cnt * sz <= 4 ? entry + 8 : t32(t, entry + 8);
    size_t o = base + (size_t)k * sz;
    if (o > t->len || sz > t->len - o) return false;
    *v = sz == 2 ? t16(t, o) : sz == 4 ? t32(t, o) : t->p[o];
    return true;
}

static lt_status dec_tiff(dec *d, img *im) {
    tiff t = {d->p, d->len, d->p[0] == 'M'};
    if (d->len < 8) return bad(d, "%s: truncated TIFF header", "tiff");
    size_t ifd = t32(&t, 4);
    if (ifd > d->len || d->len - ifd < 2) return bad(d, "%s: TIFF IFD out of range", "tiff");
    uint32_t ne = t16(&t, ifd);
    if ((size_t)ne * 12 > d->len - ifd - 2) return bad(d, "%s: truncated TIFF IFD", "tiff");
    uint32_t w = 0, h = 0, bits = 8, comp = 1, photo = 2, spp = 1, rps = UINT32_MAX, planar = 1;
    size_t e_off = 0, e_cnt = 0;
    for (uint32_t i = 0; i < ne; i++) {
        size_t e = ifd + 2 + (size_t)i * 12;
        uint32_t tag = t16(&t, e), v = 0;
        bool ok = tiff_val(&t, e, 0, &v);
        switch (tag) {
        case 256: if (ok) w = v; break;
        case 257: if (ok) h = v; break;
        case 258: if (ok) bits = v; break;
        case 259: if (ok) comp = v; break;
        case 262: if (ok) photo = v; break;
        case 273: e_off = e; break;
        case 277: if (ok) spp = v; break;
        case 278: if (ok) rps = v; break;
        case 279: e_cnt = e; break;
        case 284: if (ok) planar = v; break;
        default: break;
        }
    }
    if (comp != 1 || bits != 8 || planar != 1 || (photo > 2) || (spp != 1 && spp != 3 && spp != 4) ||
        (photo == 2) != (spp >= 3))
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED,
                           "TIFF other than uncompressed 8-bit chunky gray/RGB (compression %u, bits %u, photometric %u)",
                           comp, bits, photo);
    if (!e_off) return bad(d, "%s: TIFF without StripOffsets", "tiff");
    LT_TRY(img_alloc(d, im, w, h, spp >= 3 ? 3 : 1));
    if (rps == 0 || rps > h) rps = h;
    uint32_t strips = (h + rps - 1) / rps;
    size_t rowb = (size_t)w * spp;
    for (uint32_t sidx = 0; sidx < strips; sidx++) {
        uint32_t so, sc = 0;
        if (!tiff_val(&t, e_off, sidx, &so)) return bad(d, "%s: missing TIFF strip offset", "tiff");
        uint32_t y0 = sidx * rps, rows = h - y0 < rps ? h - y0 : rps;
        size_t need = rowb * rows;
        if (e_cnt && tiff_val(&t, e_cnt, sidx, &sc) && sc < need) return bad(d, "%s: short TIFF strip", "tiff");
        if (so > d->len || need > d->len - so) return bad(d, "%s: TIFF strip out of range", "tiff");
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t x = 0; x < w; x++) {
                const uint8_t *q = d->p + so + r * rowb + (size_t)x * spp;
                uint8_t *o = im->px + ((size_t)(y0 + r) * w + x) * (size_t)im->ch;
                if (im->ch == 3) o[0] = q[0], o[1] = q[1], o[2] = q[2];
                else o[0] = photo == 0 ? (uint8_t)(255 - q[0]) : q[0];
            }
    }
    return LT_OK;
}

/* ---- JPEG (libjpeg) ---- */

#ifdef LT_HAVE_JPEG
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

static lt_status dec_jpeg(dec *d, img *im) {
    struct jpeg_decompress_struct ci;
    jerr e;
    /* Variables changed after setjmp and read after longjmp must be volatile. */
    uint8_t *volatile px = NULL;
    memset(&ci, 0, sizeof ci);
    ci.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = j_error_exit;
    e.mgr.output_message = j_output_message;
    e.msg[0] = 0;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&ci);
        lt_mem_free(px);
        return lt_op_error(d->ev, d->n, LT_ERR_INVALID, "jpeg: %s", e.msg);
    }
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, (unsigned char *)d->p, (unsigned long)d->len);
    jpeg_read_header(&ci, TRUE);
    int ch;
    if (ci.jpeg_color_space == JCS_GRAYSCALE) ci.out_color_space = JCS_GRAYSCALE, ch = 1;
    else if (ci.num_components == 3) ci.out_color_space = JCS_RGB, ch = 3;
    else {
        jpeg_destroy_decompress(&ci);
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "JPEG with %d components", ci.num_components);
    }
    int64_t w = ci.image_width, h = ci.image_height;
    if (w <= 0 || h <= 0 || w > LT_IMG_MAX_DIM || h > LT_IMG_MAX_DIM || w * h > LT_IMG_MAX_PIXELS) {
        jpeg_destroy_decompress(&ci);
        return lt_op_error(d->ev, d->n, LT_ERR_UNSUPPORTED, "image size %lldx%lld is empty or too large",
                           (long long)w, (long long)h);
    }
    px = lt_alloc(d->ev->ctx, (size_t)(w * h * ch), "decoded image");
    if (!px) {
        jpeg_destroy_decompress(&ci);
        return LT_ERR_NOMEM;
    }
    jpeg_start_decompress(&ci);
    if ((int64_t)ci.output_width != w || (int64_t)ci.output_height != h || ci.output_components != ch) {
        jpeg_destroy_decompress(&ci);
        lt_mem_free(px);
        return lt_op_error(d->ev, d->n, LT_ERR_INTERNAL, "jpeg: unexpected output geometry");
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

/* ---- the op ---- */

lt_status lt_img_decoder_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *t;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &t));
    if (t->dtype != LT_UINT8 || t->rank != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "encoded_stream must be a 1-D uint8 tensor");
    const char *pf = lt_attr_string(n, "pixel_format", "RGB");
    int fmt = strcmp(pf, "RGB") == 0 ? 0 : strcmp(pf, "BGR") == 0 ? 1 : strcmp(pf, "Grayscale") == 0 ? 2 : -1;
    if (fmt < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported pixel_format '%s'", pf);
    dec d = {ev, n, t->data, (size_t)t->numel};
    const uint8_t *p = d.p;
    img im = {0};
    lt_status s;
    if (d.len >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) s = dec_png(&d, &im);
    else if (d.len >= 2 && p[0] == 'B' && p[1] == 'M') s = dec_bmp(&d, &im);
    else if (d.len >= 3 && p[0] == 'P' && (p[1] == '5' || p[1] == '6') &&
             (p[2] == ' ' || p[2] == '\n' || p[2] == '\r' || p[2] == '\t'))
        s = dec_pnm(&d, &im);
    else if (d.len >= 4 && (memcmp(p, "II*\0", 4) == 0 || memcmp(p, "MM\0*", 4) == 0)) s = dec_tiff(&d, &im);
    else if (d.len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) {
#ifdef LT_HAVE_JPEG
        s = dec_jpeg(&d, &im);
#else
        s = lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "JPEG decoding is not built in (no libjpeg)");
#endif
    } else {
        s = lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unrecognized or unsupported image format");
    }
    if (s != LT_OK) {
        lt_mem_free(im.px);
        return s;
    }
    int och = fmt == 2 ? 1 : 3;
    int64_t od[3] = {im.h, im.w, och};
    lt_tensor *y;
    s = lt_out_new(ev, n, out, 0, LT_UINT8, 3, od, &y);
    if (s == LT_OK) {
        uint8_t *o = y->data;
        for (int64_t i = 0; i < im.w * im.h; i++) {
            const uint8_t *q = im.px + i * im.ch;
            uint8_t r = q[0], g = im.ch == 3 ? q[1] : q[0], b = im.ch == 3 ? q[2] : q[0];
            if (fmt == 2) o[i] = im.ch == 1 ? q[0] : (uint8_t)((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
            else if (fmt == 0) o[3 * i] = r, o[3 * i + 1] = g, o[3 * i + 2] = b;
            else o[3 * i] = b, o[3 * i + 1] = g, o[3 * i + 2] = r;
        }
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
