/* test_ops_image.c — unit tests of the image family (src/ops/image/) for what the ONNX node tests
 * do not reach: MaxRoiPool (no node test), old-opset Resize/Upsample rules, exact int64 and string
 * nearest resizing, ImageDecoder formats built here byte by byte (palette / gray / 16-bit PNG, BMP,
 * PGM, TIFF; truncated and unknown data; a format whose library the build lacks is unsupported), NonMaxSuppression without optional inputs, an odd-length
 * inverse real DFT, shape inference from constant inputs, error paths, and out-of-memory on every
 * allocation. Nodes are built by hand and run through the hooks in the op table.
 * Exits non-zero on any failure. */
#include "ops/ops.h"
#include "test_node.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static bool near(double a, double b) { return fabs(a - b) <= 1e-5 + 1e-5 * fabs(b); }

/* ---- MaxRoiPool ---- */

static void test_maxroipool(void) {
    tnode t;
    int64_t xd[4] = {1, 1, 4, 4}, rd[2] = {3, 5}, ps[2] = {2, 2};
    double x[16], rois[15] = {0, 0, 0, 3, 3, /* whole image, 2x2 bins */
                              0, 1, 1, 2, 2, /* the center 2x2 */
                              0, 9, 9, 12, 12 /* outside: empty bins give 0 */};
    for (int i = 0; i < 16; i++) x[i] = i;
    tn_init(&t, LT_OP_MaxRoiPool, "MaxRoiPool", 1, 1);
    tn_input(&t, LT_FLOAT, 4, xd, x, false);
    tn_input(&t, LT_FLOAT, 2, rd, rois, false);
    tn_ints(&t, "pooled_shape", ps, 2);
    CHECK(tn_eval(&t) == LT_OK);
    int64_t od[4] = {3, 1, 2, 2};
    CHECK(out_shape(&t, 0, 4, od));
    if (out_shape(&t, 0, 4, od)) {
        CHECK(outf(&t, 0, 0) == 5 && outf(&t, 0, 1) == 7 && outf(&t, 0, 2) == 13 && outf(&t, 0, 3) == 15);
        CHECK(outf(&t, 0, 4) == 5 && outf(&t, 0, 5) == 6 && outf(&t, 0, 6) == 9 && outf(&t, 0, 7) == 10);
        CHECK(outf(&t, 0, 8) == 0 && outf(&t, 0, 11) == 0);
    }
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.rank == 4 && t.vout[0].type.dims[2].value == 2);
    tn_free(&t);
    /* batch index out of range */
    tn_init(&t, LT_OP_MaxRoiPool, "MaxRoiPool", 1, 1);
    tn_input(&t, LT_FLOAT, 4, xd, x, false);
    int64_t rd1[2] = {1, 5};
    double bad[5] = {1, 0, 0, 1, 1};
    tn_input(&t, LT_FLOAT, 2, rd1, bad, false);
    tn_ints(&t, "pooled_shape", ps, 2);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && strstr(t.ctx.msg, "out of range"));
    tn_free(&t);
}

/* ---- Resize / Upsample ---- */

static void test_resize_legacy(void) {
    tnode t;
    int64_t xd[2] = {2, 4}, sd[1] = {2};
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, sc[2] = {0.6, 0.6};
    /* Resize-10 nearest downsampling: asymmetric, ceil when downsampling -> [[1, 3]] */
    tn_init(&t, LT_OP_Resize, "Resize", 10, 1);
    tn_input(&t, LT_FLOAT, 2, xd, x, false);
    tn_input(&t, LT_FLOAT, 1, sd, sc, false);
    CHECK(tn_eval(&t) == LT_OK);
    int64_t od[2] = {1, 2};
    CHECK(out_shape(&t, 0, 2, od) && outf(&t, 0, 0) == 1 && outf(&t, 0, 1) == 3);
    tn_free(&t);
    /* Upsample-7 (attribute scales), nearest: repeat */
    tn_init(&t, LT_OP_Upsample, "Upsample", 7, 1);
    int64_t d1[2] = {1, 2};
    double v[2] = {1, 2};
    float scales[2] = {1.0f, 3.0f};
    tn_input(&t, LT_FLOAT, 2, d1, v, false);
    tn_floats(&t, "scales", scales, 2);
    CHECK(tn_eval(&t) == LT_OK);
    int64_t o6[2] = {1, 6};
    CHECK(out_shape(&t, 0, 2, o6) && outf(&t, 0, 2) == 1 && outf(&t, 0, 3) == 2 && outf(&t, 0, 5) == 2);
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.dims[1].value == 6);
    tn_free(&t);
    /* Upsample-9 linear: asymmetric, edge clamped -> [1, 1.5, 2, 2] */
    tn_init(&t, LT_OP_Upsample, "Upsample", 9, 1);
    double s2[2] = {1, 2};
    tn_input(&t, LT_FLOAT, 2, d1, v, false);
    tn_input(&t, LT_FLOAT, 1, sd, s2, true);
    tn_str(&t, "mode", "linear");
    CHECK(tn_eval(&t) == LT_OK);
    int64_t o4[2] = {1, 4};
    CHECK(out_shape(&t, 0, 2, o4) && outf(&t, 0, 0) == 1 && outf(&t, 0, 1) == 1.5 && outf(&t, 0, 2) == 2 && outf(&t, 0, 3) == 2);
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.rank == 2 && t.vout[0].type.dims[1].value == 4);
    tn_free(&t);
}

static void test_resize_exact(void) {
    tnode t;
    /* int64 nearest: values beyond 2^53 come through exactly */
    tn_init(&t, LT_OP_Resize, "Resize", 19, 1);
    int64_t xd[1] = {2}, sd[1] = {1};
    lt_tensor *x = tn_input(&t, LT_INT64, 1, xd, NULL, false);
    ((int64_t *)x->data)[0] = ((int64_t)1 << 60) + 1;
    ((int64_t *)x->data)[1] = -(((int64_t)1 << 60) + 3);
    tn_skip_input(&t);
    tn_skip_input(&t);
    double sz[1] = {4};
    tn_input(&t, LT_INT64, 1, sd, sz, true);
    CHECK(tn_eval(&t) == LT_OK);
    const lt_tensor *y = tn_out(&t, 0);
    CHECK(y && y->numel == 4);
    if (y && y->numel == 4) {
        const int64_t *yd = y->data;
        CHECK(yd[0] == ((int64_t)1 << 60) + 1 && yd[3] == -(((int64_t)1 << 60) + 3));
    }
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.dims[0].value == 4 && t.vout[0].type.dtype == LT_INT64);
    tn_free(&t);
    /* strings: nearest copies them; linear is refused */
    tn_init(&t, LT_OP_Resize, "Resize", 19, 1);
    lt_tensor *s = tn_input(&t, LT_STRING, 1, xd, NULL, false);
    lt_tensor_set_string(&t.ctx, s, 0, "ab", 2);
    lt_tensor_set_string(&t.ctx, s, 1, "cde", 3);
    tn_skip_input(&t);
    tn_skip_input(&t);
    tn_input(&t, LT_INT64, 1, sd, sz, false);
    CHECK(tn_eval(&t) == LT_OK);
    y = tn_out(&t, 0);
    CHECK(y && y->numel == 4 && strcmp(((char **)y->data)[1], "ab") == 0 && strcmp(((char **)y->data)[2], "cde") == 0);
    tn_str(&t, "mode", "linear");
    CHECK(tn_eval(&t) == LT_ERR_UNSUPPORTED);
    tn_free(&t);
    /* uint8 cubic saturates instead of wrapping */
    tn_init(&t, LT_OP_Resize, "Resize", 19, 1);
    int64_t d4[1] = {4};
    double v[4] = {0, 255, 255, 0}, sc[1] = {2};
    tn_input(&t, LT_UINT8, 1, d4, v, false);
    tn_skip_input(&t);
    tn_input(&t, LT_FLOAT, 1, sd, sc, false);
    tn_str(&t, "mode", "cubic");
    CHECK(tn_eval(&t) == LT_OK);
    y = tn_out(&t, 0);
    bool in_range = y && y->numel == 8;
    for (int64_t k = 0; in_range && k < 8; k++) in_range = outf(&t, 0, k) >= 0 && outf(&t, 0, k) <= 255;
    CHECK(in_range && outf(&t, 0, 3) == 255);
    tn_free(&t);
}

/* ---- ImageDecoder ---- */

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;
static void put(buf *b, const void *p, size_t n) {
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void put32be(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}
static void put16le(buf *b, uint32_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}
static void put32le(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void png_chunk(buf *b, const char *type, const uint8_t *data, size_t n) {
    put32be(b, (uint32_t)n);
    size_t at = b->n;
    put(b, type, 4);
    if (n) put(b, data, n);
    put32be(b, (uint32_t)crc32(crc32(0, NULL, 0), b->b + at, (uInt)(n + 4)));
}
/* A PNG of w x h from raw scanlines (each with its filter byte). */
static void make_png(buf *b, uint32_t w, uint32_t h, int depth, int ctype, const uint8_t *raw, size_t rawn,
                     const uint8_t *plte, size_t npl) {
    b->n = 0;
    put(b, "\x89PNG\r\n\x1a\n", 8);
    uint8_t ihdr[13] = {0};
    for (int i = 0; i < 4; i++) ihdr[i] = (uint8_t)(w >> (24 - 8 * i)), ihdr[4 + i] = (uint8_t)(h >> (24 - 8 * i));
    ihdr[8] = (uint8_t)depth, ihdr[9] = (uint8_t)ctype;
    png_chunk(b, "IHDR", ihdr, 13);
    if (plte) png_chunk(b, "PLTE", plte, npl);
    uint8_t z[1024];
    uLongf zn = sizeof z;
    compress(z, &zn, raw, (uLong)rawn);
    png_chunk(b, "IDAT", z, zn);
    png_chunk(b, "IEND", NULL, 0);
}

static lt_status decode(const buf *b, const char *fmt, tnode *t) {
    tn_init(t, LT_OP_ImageDecoder, "ImageDecoder", 20, 1);
    tn_bytes(t, b->b, b->n);
    tn_str(t, "pixel_format", fmt);
    return tn_eval(t);
}

static void test_image_decoder(void) {
    tnode t;
    buf b;
    /* palette PNG, 2-bit, 4x2; the second row uses the Up filter */
#ifdef LT_HAVE_PNG
    const uint8_t plte[12] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
    const uint8_t raw[4] = {0, 0x1B /* 00 01 10 11 */, 2, 0};
    make_png(&b, 4, 2, 2, 3, raw, 4, plte, 12);
    CHECK(decode(&b, "RGB", &t) == LT_OK);
    int64_t od[3] = {2, 4, 3};
    CHECK(out_shape(&t, 0, 3, od));
    if (out_shape(&t, 0, 3, od)) {
        const uint8_t *y = tn_out(&t, 0)->data;
        CHECK(y[0] == 255 && y[1] == 0 && y[3] == 0 && y[4] == 255 && y[9] == 10 && y[11] == 30);
        CHECK(memcmp(y, y + 12, 12) == 0); /* filter 2 (Up) with zero deltas repeats the row */
    }
    tn_free(&t);
    /* 16-bit gray PNG keeps the high byte; Grayscale output of a gray image is the gray value */
    const uint8_t raw16[5] = {1, 0x12, 0x34, 0x10, 0x00}; /* Sub filter: second = 0x12 + 0x10 */
    make_png(&b, 2, 1, 16, 0, raw16, 5, NULL, 0);
    CHECK(decode(&b, "Grayscale", &t) == LT_OK);
    int64_t og[3] = {1, 2, 1};
    CHECK(out_shape(&t, 0, 3, og) && outf(&t, 0, 0) == 0x12 && outf(&t, 0, 1) == 0x22);
    tn_free(&t);
    /* RGBA PNG -> BGR drops alpha and swaps; Grayscale uses Pillow's weights */
    const uint8_t rgba[5] = {0, 200, 100, 50, 7};
    make_png(&b, 1, 1, 8, 6, rgba, 5, NULL, 0);
    CHECK(decode(&b, "BGR", &t) == LT_OK);
    CHECK(tn_out(&t, 0) && outf(&t, 0, 0) == 50 && outf(&t, 0, 1) == 100 && outf(&t, 0, 2) == 200);
    tn_free(&t);
    CHECK(decode(&b, "Grayscale", &t) == LT_OK);
    CHECK(tn_out(&t, 0) && outf(&t, 0, 0) == ((200 * 19595u + 100 * 38470u + 50 * 7471u + 0x8000u) >> 16));
    tn_free(&t);
    /* a corrupted CRC and a truncated file are invalid; an unknown format is unsupported */
    make_png(&b, 1, 1, 8, 6, rgba, 5, NULL, 0);
    b.b[20] ^= 1;
    CHECK(decode(&b, "RGB", &t) == LT_ERR_INVALID);
    tn_free(&t);
    b.b[20] ^= 1;
    b.n = 30;
    CHECK(decode(&b, "RGB", &t) == LT_ERR_INVALID);
    tn_free(&t);
#else
    const uint8_t rgba[5] = {0, 200, 100, 50, 7};
    make_png(&b, 1, 1, 8, 6, rgba, 5, NULL, 0); /* a build without libpng: PNG is unsupported */
    CHECK(decode(&b, "RGB", &t) == LT_ERR_UNSUPPORTED);
    tn_free(&t);
#endif
    memcpy(b.b, "GIF89a", 6);
    CHECK(decode(&b, "RGB", &t) == LT_ERR_UNSUPPORTED);
    tn_free(&t);
    CHECK(decode(&b, "CMYK", &t) == LT_ERR_INVALID);
    tn_free(&t);

    /* BMP, 8-bit palette, top-down 3x1 (rows padded to 4 bytes) */
    b.n = 0;
    put(&b, "BM", 2);
    put32le(&b, 0), put32le(&b, 0), put32le(&b, 14 + 40 + 8);
    put32le(&b, 40), put32le(&b, 3), put32le(&b, (uint32_t)-1), put16le(&b, 1), put16le(&b, 8);
    put32le(&b, 0), put32le(&b, 4), put32le(&b, 0), put32le(&b, 0), put32le(&b, 2), put32le(&b, 0);
    const uint8_t pal[8] = {1, 2, 3, 0, 30, 20, 10, 0}; /* B G R x */
    put(&b, pal, 8);
    const uint8_t px[4] = {1, 0, 1, 0};
    put(&b, px, 4);
    CHECK(decode(&b, "RGB", &t) == LT_OK);
    int64_t ob[3] = {1, 3, 3};
    CHECK(out_shape(&t, 0, 3, ob) && outf(&t, 0, 0) == 10 && outf(&t, 0, 2) == 30 && outf(&t, 0, 3) == 3 && outf(&t, 0, 5) == 1);
    tn_free(&t);
    /* palette index beyond the palette */
    b.b[b.n - 4] = 7;
    CHECK(decode(&b, "RGB", &t) == LT_ERR_INVALID);
    tn_free(&t);

    /* PGM with a comment; gray replicated to RGB */
    b.n = 0;
    put(&b, "P5\n# c\n2 1\n255\n\x05\xfa", 17);
    CHECK(decode(&b, "RGB", &t) == LT_OK);
    int64_t op[3] = {1, 2, 3};
    CHECK(out_shape(&t, 0, 3, op) && outf(&t, 0, 0) == 5 && outf(&t, 0, 2) == 5 && outf(&t, 0, 5) == 250);
    tn_free(&t);
    b.n = 16; /* raster cut short */
    CHECK(decode(&b, "RGB", &t) == LT_ERR_INVALID);
    tn_free(&t);

    /* TIFF, big-endian, uncompressed 8-bit WhiteIsZero gray 2x1 */
    b.n = 0;
    put(&b, "MM\0*", 4);
    put32be(&b, 8);
    const uint16_t tags[8][2] = {{256, 2}, {257, 1}, {258, 8}, {259, 1}, {262, 0}, {273, 8 + 2 + 8 * 12 + 4},
                                 {277, 1}, {279, 2}};
    uint8_t ne[2] = {0, 8};
    put(&b, ne, 2);
    for (int i = 0; i < 8; i++) {
        uint8_t e[12] = {(uint8_t)(tags[i][0] >> 8), (uint8_t)tags[i][0], 0, 3, 0, 0, 0, 1,
                         (uint8_t)(tags[i][1] >> 8), (uint8_t)tags[i][1], 0, 0};
        put(&b, e, 12);
    }
    put32be(&b, 0);
    put(&b, "\x00\xf0", 2);
#ifdef LT_HAVE_TIFF
    CHECK(decode(&b, "Grayscale", &t) == LT_OK);
    int64_t ot[3] = {1, 2, 1};
    CHECK(out_shape(&t, 0, 3, ot) && outf(&t, 0, 0) == 255 && outf(&t, 0, 1) == 15);
#else
    CHECK(decode(&b, "Grayscale", &t) == LT_ERR_UNSUPPORTED);
#endif
    tn_free(&t);

    /* infer: channels from pixel_format */
    tn_init(&t, LT_OP_ImageDecoder, "ImageDecoder", 20, 1);
    tn_bytes(&t, b.b, b.n);
    tn_str(&t, "pixel_format", "Grayscale");
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.rank == 3 && t.vout[0].type.dims[2].value == 1 &&
          t.vout[0].type.dtype == LT_UINT8);
    tn_free(&t);
}

/* ---- NonMaxSuppression, DFT ---- */

static void test_nms_defaults(void) {
    tnode t;
    tn_init(&t, LT_OP_NonMaxSuppression, "NonMaxSuppression", 11, 1);
    int64_t bd[3] = {1, 2, 4}, sd[3] = {1, 1, 2};
    double boxes[8] = {0, 0, 1, 1, 0, 0, 1, 1}, scores[2] = {0.5, 0.9};
    tn_input(&t, LT_FLOAT, 3, bd, boxes, false);
    tn_input(&t, LT_FLOAT, 3, sd, scores, false);
    CHECK(tn_eval(&t) == LT_OK); /* max_output_boxes_per_class defaults to 0: nothing selected */
    int64_t e[2] = {0, 3};
    CHECK(out_shape(&t, 0, 2, e));
    int64_t md[1] = {1};
    double mo[1] = {5};
    tn_input(&t, LT_INT64, 1, md, mo, false);
    CHECK(tn_eval(&t) == LT_OK); /* identical boxes, iou threshold 0: only the best one */
    int64_t e1[2] = {1, 3};
    CHECK(out_shape(&t, 0, 2, e1) && outf(&t, 0, 2) == 1);
    tn_free(&t);
}

static void test_dft_irfft_odd(void) {
    /* x = [1, 2, 3, 4, 5]: rfft gives 3 bins; the inverse with dft_length 5 returns x */
    double x[5] = {1, 2, 3, 4, 5}, spec[6];
    for (int k = 0; k < 3; k++) {
        double re = 0, im = 0;
        for (int j = 0; j < 5; j++) {
            re += x[j] * cos(2 * M_PI * j * k / 5);
            im -= x[j] * sin(2 * M_PI * j * k / 5);
        }
        spec[2 * k] = re, spec[2 * k + 1] = im;
    }
    tnode t;
    tn_init(&t, LT_OP_DFT, "DFT", 20, 1);
    int64_t xd[3] = {1, 3, 2}, sd[1] = {1};
    double len[1] = {5};
    tn_input(&t, LT_DOUBLE, 3, xd, spec, false);
    tn_input(&t, LT_INT64, 1, sd, len, true);
    tn_int(&t, "inverse", 1);
    tn_int(&t, "onesided", 1);
    CHECK(tn_eval(&t) == LT_OK);
    int64_t od[3] = {1, 5, 1};
    CHECK(out_shape(&t, 0, 3, od));
    for (int j = 0; j < 5 && out_shape(&t, 0, 3, od); j++) CHECK(near(outf(&t, 0, j), x[j]));
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.rank == 3 && t.vout[0].type.dims[1].value == 5 &&
          t.vout[0].type.dims[2].value == 1);
    tn_free(&t);
    /* the last axis cannot be the signal axis */
    tn_init(&t, LT_OP_DFT, "DFT", 17, 1);
    tn_input(&t, LT_FLOAT, 3, xd, spec, false);
    tn_int(&t, "axis", 2);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
}

/* ---- out of memory ---- */

static void test_oom(void) {
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = (i * 7) % 11 - 5;
    tnode t;
    int64_t xd[4] = {1, 2, 4, 4}, sd[1] = {4};
    double sc[4] = {1, 1, 1.5, 0.5};
    tn_init(&t, LT_OP_Resize, "Resize", 19, 1);
    tn_input(&t, LT_FLOAT, 4, xd, v, false);
    tn_skip_input(&t);
    tn_input(&t, LT_FLOAT, 1, sd, sc, false);
    tn_str(&t, "mode", "cubic");
    tn_int(&t, "antialias", 1);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_GridSample, "GridSample", 20, 1);
    int64_t gd[4] = {1, 2, 2, 2};
    double g[8] = {-1, -1, 0.3, 0.2, 1.5, -0.7, 0, 0};
    tn_input(&t, LT_FLOAT, 4, xd, v, false);
    tn_input(&t, LT_FLOAT, 4, gd, g, false);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_NonMaxSuppression, "NonMaxSuppression", 11, 1);
    int64_t bd[3] = {1, 3, 4}, scd[3] = {1, 2, 3}, md[1] = {1};
    double boxes[12] = {0, 0, 1, 1, 0, 0.1, 1, 1.1, 5, 5, 6, 6}, scores[6] = {0.9, 0.8, 0.7, 0.1, 0.2, 0.3}, mo[1] = {2};
    tn_input(&t, LT_FLOAT, 3, bd, boxes, false);
    tn_input(&t, LT_FLOAT, 3, scd, scores, false);
    tn_input(&t, LT_INT64, 1, md, mo, false);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_DFT, "DFT", 20, 1);
    int64_t dd[3] = {2, 12, 1};
    tn_input(&t, LT_FLOAT, 3, dd, v, false);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_MelWeightMatrix, "MelWeightMatrix", 17, 1);
    int64_t s0[1] = {1};
    double a[5][1] = {{4}, {16}, {8000}, {0}, {4000}};
    for (int i = 0; i < 3; i++) tn_input(&t, LT_INT64, 0, s0, a[i], false);
    for (int i = 3; i < 5; i++) tn_input(&t, LT_FLOAT, 0, s0, a[i], false);
    oom_sweep(&t);
    tn_free(&t);

#ifdef LT_HAVE_PNG
    /* a PNG: libpng's allocations come from lathe's allocator too, and fail in the sweep */
    buf b;
    const uint8_t raw[7] = {0, 1, 2, 3, 4, 5, 6};
    make_png(&b, 2, 1, 8, 2, raw, 7, NULL, 0);
    tn_init(&t, LT_OP_ImageDecoder, "ImageDecoder", 20, 1);
    tn_bytes(&t, b.b, b.n);
    oom_sweep(&t);
    tn_free(&t);
#endif
}

int main(void) {
    test_maxroipool();
    test_resize_legacy();
    test_resize_exact();
    test_image_decoder();
    test_nms_defaults();
    test_dft_irfft_odd();
    test_oom();
    return test_report("test_ops_image");
}
