/* test_io.c — unit tests of src/io: .npy encode/decode round trips for every dtype, hand-made headers
 * (format 2.0 and 3.0, Fortran order, big-endian, byte and unicode strings), .npz stored and deflated
 * members, and malformed files (truncated, lying headers, bad zip offsets, CRC errors, allocation
 * failures), each of which must be an error, never a crash. Exits non-zero on the first failure. */
#define _GNU_SOURCE /* memmem */
#include "io/io.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static bool same_tensor(const lt_tensor *a, const lt_tensor *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    if (a->dtype == LT_STRING) {
        for (int64_t i = 0; i < a->numel; i++)
            if (strcmp(((char **)a->data)[i], ((char **)b->data)[i]) != 0) return false;
        return true;
    }
    return memcmp(a->data, b->data, (size_t)lt_tensor_nbytes(a)) == 0;
}

/* Build a .npy image from a header dict and raw data. */
static uint8_t *make_npy(int major, const char *dict, const void *data, size_t dlen, size_t *size) {
    size_t dl = strlen(dict), pre = major == 1 ? 10 : 12;
    size_t hl = dl + 1;
    uint8_t *b = malloc(pre + hl + dlen + 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    if (major == 1) { b[8] = (uint8_t)hl; b[9] = (uint8_t)(hl >> 8); }
    else { b[8] = (uint8_t)hl; b[9] = (uint8_t)(hl >> 8); b[10] = 0; b[11] = 0; }
    memcpy(b + pre, dict, dl);
    b[pre + dl] = '\n';
    if (dlen) memcpy(b + pre + hl, data, dlen);
    *size = pre + hl + dlen;
    return b;
}

static void test_roundtrip(void) {
    const lt_dtype dts[] = {LT_FLOAT, LT_DOUBLE, LT_FLOAT16, LT_INT8, LT_INT16, LT_INT32, LT_INT64, LT_UINT8,
                            LT_UINT16, LT_UINT32, LT_UINT64, LT_BOOL, LT_COMPLEX64, LT_COMPLEX128};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        lt_ctx ctx = {0};
        int64_t dims[3] = {2, 3, 4};
        for (int rank = 0; rank <= 3; rank++) {
            lt_tensor *t = NULL, *back = NULL;
            CHECK(lt_tensor_new(&ctx, dts[d], rank, dims, &t) == LT_OK);
            uint8_t *p = t->data;
            for (int64_t i = 0; i < lt_tensor_nbytes(t); i++) p[i] = dts[d] == LT_BOOL ? (uint8_t)(i & 1) : (uint8_t)(i * 7 + 1);
            uint8_t *img;
            size_t n;
            bool widened = false;
            CHECK(lt_npy_encode(&ctx, t, &img, &n, &widened) == LT_OK && !widened);
            CHECK(n % 64 == (size_t)lt_tensor_nbytes(t) % 64); /* header padded to 64 */
            CHECK(lt_npy_decode(&ctx, img, n, "mem", &back) == LT_OK);
            CHECK(back && same_tensor(t, back));
            lt_mem_free(img);
            lt_tensor_release(t);
            lt_tensor_release(back);
        }
        CHECK(ctx.status == LT_OK);
    }
    /* widened types */
    lt_ctx ctx = {0};
    lt_tensor *t = NULL, *back = NULL;
    int64_t dims[1] = {3};
    CHECK(lt_tensor_new(&ctx, LT_BFLOAT16, 1, dims, &t) == LT_OK);
    lt_store_f64(t->data, LT_BFLOAT16, 0, 1.5);
    lt_store_f64(t->data, LT_BFLOAT16, 1, -2);
    uint8_t *img;
    size_t n;
    bool widened = false;
    CHECK(lt_npy_encode(&ctx, t, &img, &n, &widened) == LT_OK && widened);
    CHECK(lt_npy_decode(&ctx, img, n, "mem", &back) == LT_OK && back->dtype == LT_FLOAT);
    CHECK(((float *)back->data)[0] == 1.5f && ((float *)back->data)[1] == -2.0f);
    lt_mem_free(img);
    lt_tensor_release(t);
    lt_tensor_release(back);
    /* strings */
    CHECK(lt_tensor_new(&ctx, LT_STRING, 1, dims, &t) == LT_OK);
    CHECK(lt_tensor_set_string(&ctx, t, 0, "h\xc3\xa9llo", 6) == LT_OK);
    CHECK(lt_tensor_set_string(&ctx, t, 2, "\xe2\x82\xac", 3) == LT_OK);
    CHECK(lt_npy_encode(&ctx, t, &img, &n, NULL) == LT_OK);
    CHECK(memmem(img, n, "'<U5'", 5) != NULL);
    CHECK(lt_npy_decode(&ctx, img, n, "mem", &back) == LT_OK && same_tensor(t, back));
    lt_mem_free(img);
    lt_tensor_release(t);
    lt_tensor_release(back);
    CHECK(ctx.status == LT_OK);
}

static void test_headers(void) {
    lt_ctx ctx = {0};
    lt_tensor *t = NULL;
    size_t n;
    /* version 2 and 3 headers */
    float f[2] = {1, 2};
    for (int major = 2; major <= 3; major++) {
        uint8_t *b = make_npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f, 8, &n);
        CHECK(lt_npy_decode(&ctx, b, n, "v2", &t) == LT_OK && t->numel == 2 && ((float *)t->data)[1] == 2);
        lt_tensor_release(t);
        t = NULL;
        free(b);
    }
    /* Fortran order: [[0,1,2],[3,4,5]] stored column-major as 0,3,1,4,2,5 */
    int32_t fo[6] = {0, 3, 1, 4, 2, 5};
    uint8_t *b = make_npy(1, "{\"descr\": \"<i4\", \"fortran_order\": True, \"shape\": (2, 3)}", fo, sizeof fo, &n);
    CHECK(lt_npy_decode(&ctx, b, n, "f", &t) == LT_OK);
    for (int i = 0; t && i < 6; i++) CHECK(((int32_t *)t->data)[i] == i);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    /* big-endian */
    uint8_t be[4] = {0, 0, 1, 2};
    b = make_npy(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", be, 4, &n);
    CHECK(lt_npy_decode(&ctx, b, n, "be", &t) == LT_OK && t && ((int32_t *)t->data)[0] == 258);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    /* byte strings, NUL padded */
    b = make_npy(1, "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }", "ab\0xyz", 6, &n);
    CHECK(lt_npy_decode(&ctx, b, n, "S", &t) == LT_OK && t && strcmp(((char **)t->data)[0], "ab") == 0 &&
          strcmp(((char **)t->data)[1], "xyz") == 0);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    CHECK(ctx.status == LT_OK);

    /* malformed: each must fail cleanly */
    static const char *const bad_dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",   /* too few data bytes */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",   /* too many data bytes */
        "{'descr': '<f4', 'fortran_order': False}",                    /* no shape */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",  /* negative */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), }",
        "{'descr': '<q9', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2), }",
        "{'descr': '<U0', 'fortran_order': False, 'shape': (2,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ",
        "",
    };
    for (size_t i = 0; i < sizeof bad_dicts / sizeof *bad_dicts; i++) {
        lt_ctx c = {0};
        b = make_npy(1, bad_dicts[i], f, 8, &n);
        t = NULL;
        CHECK(lt_npy_decode(&c, b, n, "bad", &t) != LT_OK && t == NULL && c.msg[0]);
        free(b);
    }
    /* truncations of a valid file */
    b = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f, 8, &n);
    for (size_t cut = 0; cut < n; cut++) {
        lt_ctx c = {0};
        t = NULL;
        CHECK(lt_npy_decode(&c, b, cut, "cut", &t) != LT_OK && t == NULL);
    }
    b[8] = 0xFF; /* header length beyond the file */
    {
        lt_ctx c = {0};
        CHECK(lt_npy_decode(&c, b, n, "len", &t) == LT_ERR_INVALID);
    }
    free(b);
    /* invalid code point in a unicode array */
    uint32_t cp[1] = {0x110000};
    b = make_npy(1, "{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }", cp, 4, &n);
    {
        lt_ctx c = {0};
        CHECK(lt_npy_decode(&c, b, n, "u", &t) == LT_ERR_INVALID);
    }
    free(b);
}

/* Build a zip with one deflated member by hand (raw deflate via zlib). */
static uint8_t *deflated_zip(const char *name, const uint8_t *data, size_t len, size_t *size) {
    uint8_t *comp = malloc(len + 1024);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (Bytef *)data;
    zs.avail_in = (uInt)len;
    zs.next_out = comp;
    zs.avail_out = (uInt)(len + 1024);
    deflate(&zs, Z_FINISH);
    size_t clen = zs.total_out;
    deflateEnd(&zs);
    uint32_t crc = (uint32_t)crc32(0, data, (uInt)len);
    size_t nl = strlen(name);
    size_t total = 30 + nl + clen + 46 + nl + 22;
    uint8_t *b = calloc(1, total);
    uint8_t *p = b;
#define W16(v) do { p[0] = (uint8_t)(v); p[1] = (uint8_t)((v) >> 8); p += 2; } while (0)
#define W32(v) do { W16((v) & 0xFFFF); W16(((uint32_t)(v)) >> 16); } while (0)
    W32(0x04034b50u); W16(20); W16(0); W16(8); W16(0); W16(0); W32(crc); W32(clen); W32(len); W16(nl); W16(0);
    memcpy(p, name, nl); p += nl;
    memcpy(p, comp, clen); p += clen;
    size_t cd = (size_t)(p - b);
    W32(0x02014b50u); W16(20); W16(20); W16(0); W16(8); W16(0); W16(0); W32(crc); W32(clen); W32(len);
    W16(nl); W16(0); W16(0); W16(0); W16(0); W32(0); W32(0);
    memcpy(p, name, nl); p += nl;
    size_t cdl = (size_t)(p - b) - cd;
    W32(0x06054b50u); W16(0); W16(0); W16(1); W16(1); W32(cdl); W32(cd); W16(0);
#undef W16
#undef W32
    free(comp);
    *size = total;
    return b;
}

static void test_npz(void) {
    lt_ctx ctx = {0};
    int64_t d1[2] = {2, 2}, d2[1] = {5};
    lt_tensor *a = NULL, *b = NULL;
    CHECK(lt_tensor_new(&ctx, LT_FLOAT, 2, d1, &a) == LT_OK);
    CHECK(lt_tensor_new(&ctx, LT_INT64, 1, d2, &b) == LT_OK);
    for (int i = 0; i < 4; i++) ((float *)a->data)[i] = (float)i / 3;
    for (int i = 0; i < 5; i++) ((int64_t *)b->data)[i] = -i;
    const char *names[2] = {"x", "y:0/odd name"};
    const lt_tensor *ts[2] = {a, b};
    uint8_t *img;
    size_t n;
    CHECK(lt_npz_encode(&ctx, 2, names, ts, &img, &n, NULL) == LT_OK);
    lt_npz *z = NULL;
    CHECK(lt_npz_decode(&ctx, img, n, "mem.npz", &z) == LT_OK);
    CHECK(z && z->n == 2 && lt_npz_find(z, "x") == 0 && lt_npz_find(z, "y:0/odd name") == 1);
    if (z && z->n == 2) {
        CHECK(same_tensor(z->tensors[0], a));
        CHECK(same_tensor(z->tensors[1], b));
    }
    lt_npz_free(z);
    /* every truncation and every single-byte corruption fails cleanly or decodes (never crashes) */
    for (size_t cut = 0; cut < n; cut++) {
        lt_ctx c = {0};
        z = NULL;
        CHECK(lt_npz_decode(&c, img, cut, "cut", &z) != LT_OK && z == NULL);
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t *copy = malloc(n);
        memcpy(copy, img, n);
        copy[i] ^= 0x5A;
        lt_ctx c = {0};
        z = NULL;
        lt_status s = lt_npz_decode(&c, copy, n, "flip", &z);
        CHECK((s == LT_OK) == (z != NULL));
        lt_npz_free(z);
        free(copy);
    }
    /* duplicate names refused by the writer */
    const char *dup[2] = {"x", "x"};
    CHECK(lt_npz_encode(&ctx, 2, dup, ts, &img, &n, NULL) == LT_ERR_INVALID);
    lt_ctx_clear(&ctx);
    lt_mem_free(img);

    /* deflated member */
    uint8_t *npy;
    size_t nn;
    CHECK(lt_npy_encode(&ctx, a, &npy, &nn, NULL) == LT_OK);
    size_t zn;
    uint8_t *zip = deflated_zip("a.npy", npy, nn, &zn);
    z = NULL;
    CHECK(lt_npz_decode(&ctx, zip, zn, "deflated.npz", &z) == LT_OK);
    CHECK(z && z->n == 1 && strcmp(z->names[0], "a") == 0 && same_tensor(z->tensors[0], a));
    lt_npz_free(z);
    /* corrupt the compressed stream / CRC */
    zip[30 + 5 + 3] ^= 0xFF;
    {
        lt_ctx c = {0};
        z = NULL;
        CHECK(lt_npz_decode(&c, zip, zn, "bad.npz", &z) != LT_OK && z == NULL);
    }
    free(zip);
    /* not a zip at all */
    {
        lt_ctx c = {0};
        z = NULL;
        CHECK(lt_npz_decode(&c, npy, nn, "npy.npz", &z) == LT_ERR_INVALID && z == NULL);
    }
    lt_mem_free(npy);

    /* allocation failures at every step: error, no leak, no crash */
    lt_set_allocator(&g_test_alloc);
    for (long k = 0; k < 40; k++) {
        g_countdown = k;
        lt_ctx c = {0};
        uint8_t *im = NULL;
        size_t in = 0;
        lt_status s = lt_npz_encode(&c, 2, names, ts, &im, &in, NULL);
        if (s == LT_OK) {
            lt_npz *zz = NULL;
            g_countdown = k;
            if (lt_npz_decode(&c, im, in, "oom", &zz) == LT_OK) lt_npz_free(zz);
            g_countdown = -1;
            lt_mem_free(im);
        }
    }
    g_countdown = -1;
    lt_set_allocator(NULL);
    lt_tensor_release(a);
    lt_tensor_release(b);
}

static void test_bind(void) {
    lt_ctx ctx = {0};
    lt_dim dims[2] = {{-1, "N"}, {3, NULL}};
    lt_value v = {0};
    v.name = "x";
    lt_type_set_tensor(&v.type, LT_FLOAT, 2, dims);
    lt_value w = v;
    w.name = "w";
    lt_dim_binding b = {0};
    int64_t d23[2] = {2, 3}, d43[2] = {4, 3}, d24[2] = {2, 4};
    lt_tensor *t = NULL;
    CHECK(lt_tensor_new(&ctx, LT_FLOAT, 2, d23, &t) == LT_OK);
    CHECK(lt_io_check_input(&ctx, &v, t, &b) == LT_OK && b.n == 1 && b.values[0] == 2);
    lt_tensor_release(t);
    CHECK(lt_tensor_new(&ctx, LT_FLOAT, 2, d43, &t) == LT_OK);
    CHECK(lt_io_check_input(&ctx, &w, t, &b) == LT_ERR_INVALID && strstr(ctx.msg, "'N'"));
    lt_ctx_clear(&ctx);
    lt_tensor_release(t);
    CHECK(lt_tensor_new(&ctx, LT_FLOAT, 2, d24, &t) == LT_OK);
    CHECK(lt_io_check_input(&ctx, &w, t, &b) == LT_ERR_INVALID && strstr(ctx.msg, "'w'"));
    lt_ctx_clear(&ctx);
    lt_tensor_release(t);
    CHECK(lt_tensor_new(&ctx, LT_INT32, 2, d23, &t) == LT_OK);
    CHECK(lt_io_check_input(&ctx, &w, t, &b) == LT_ERR_INVALID && strstr(ctx.msg, "dtype float"));
    lt_ctx_clear(&ctx);
    lt_tensor_release(t);
    int rank;
    int64_t shape[LT_MAX_RANK];
    CHECK(lt_io_input_shape(&ctx, &w, &b, &rank, shape) == LT_OK && rank == 2 && shape[0] == 2 && shape[1] == 3);
    lt_dim_binding empty = {0};
    CHECK(lt_io_input_shape(&ctx, &w, &empty, &rank, shape) == LT_ERR_USAGE && strstr(ctx.msg, "--dim N="));
    lt_ctx_clear(&ctx);
    /* fills */
    uint64_t rng = 1;
    lt_fill_kind k;
    CHECK(lt_fill_parse("ramp", &k) && k == LT_FILL_RAMP && !lt_fill_parse("bogus", &k));
    CHECK(lt_io_fill_tensor(&ctx, LT_FLOAT, 2, d24, LT_FILL_RAMP, &rng, &t) == LT_OK);
    CHECK(((float *)t->data)[0] == 0.0f && ((float *)t->data)[4] == 0.5f);
    lt_tensor_release(t);
    CHECK(lt_io_fill_tensor(&ctx, LT_DOUBLE, 2, d24, LT_FILL_RANDOM, &rng, &t) == LT_OK);
    for (int i = 0; i < 8; i++) CHECK(((double *)t->data)[i] >= 0 && ((double *)t->data)[i] < 1);
    lt_tensor_release(t);
    CHECK(lt_io_fill_tensor(&ctx, LT_STRING, 1, d24, LT_FILL_RAMP, &rng, &t) == LT_OK);
    CHECK(strcmp(((char **)t->data)[1], "1") == 0);
    lt_tensor_release(t);
}

int main(void) {
    test_roundtrip();
    test_headers();
    test_npz();
    test_bind();
    return test_report("test_io");
}
