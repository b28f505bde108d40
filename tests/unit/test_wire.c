/* test_wire.c — unit tests of the ONNX wire reader (src/onnx/wire.c) and of tensor / model / test-data
 * decoding: truncation, overflowing varints, nesting limits, packed and unpacked repeated fields,
 * raw_data of the wrong length, negative and overflowing dims, 4-bit and 2-bit unpacking, float16 in
 * int32_data, strings, sparse tensors, sequences / optionals / maps, encoding round trips, model
 * import errors, function inlining, and allocation failures injected at every allocation (each must
 * give an error, never a crash or a leak). Exits non-zero on the first failure. */
#include "ops/infer.h"
#include "onnx/onnx.h"
#include "onnx/wire.h"
#include "ops/ops.h"
#include "test_pb.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- wire reader ---- */
static void test_wire_basics(void) {
    lt_ctx ctx = {0};
    lt_wire_src src;
    lt_wire w;
    /* field 1 varint 300, field 2 bytes "hi", field 3 fixed32 1.5, field 4 fixed64 */
    pb b = {0};
    fv(&b, 1, 300);
    fs(&b, 2, "hi");
    ff32(&b, 3, 1.5f);
    key(&b, 4, 1);
    double d = -2.25;
    put(&b, &d, 8);
    lt_wire_src_init(&src, &ctx, b.p, b.n, "t.pb", 0);
    lt_wire_root(&w, &src, "Test");
    uint64_t v = 0;
    const uint8_t *p;
    size_t n;
    float f = 0;
    double dd = 0;
    CHECK(lt_wire_next(&w) && w.field == 1 && lt_wire_u64(&w, &v) && v == 300);
    CHECK(lt_wire_next(&w) && w.field == 2 && lt_wire_bytes(&w, &p, &n) && n == 2 && memcmp(p, "hi", 2) == 0);
    CHECK(lt_wire_next(&w) && w.field == 3 && lt_wire_f32(&w, &f) && f == 1.5f);
    CHECK(lt_wire_next(&w) && w.field == 4 && lt_wire_f64(&w, &dd) && dd == -2.25);
    CHECK(!lt_wire_next(&w) && !lt_wire_failed(&w));
    /* unconsumed values are skipped */
    lt_wire_root(&w, &src, "Test");
    int fields = 0;
    while (lt_wire_next(&w)) fields++;
    CHECK(fields == 4 && !lt_wire_failed(&w));
    /* a wire-type mismatch is an error */
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && !lt_wire_bytes(&w, &p, &n) && lt_wire_failed(&w) && ctx.status == LT_ERR_INVALID);
    CHECK_MSG(ctx, "t.pb: byte 0");
    pfree(&b);

    /* truncated varint */
    uint8_t trunc[] = {0x08, 0x80, 0x80};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, trunc, sizeof trunc, "trunc.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && !lt_wire_u64(&w, &v));
    CHECK(ctx.status == LT_ERR_INVALID);
    CHECK_MSG(ctx, "truncated varint");
    CHECK_MSG(ctx, "byte 1");

    /* overflowing varint: 10th byte > 1 */
    uint8_t over[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, over, sizeof over, "over.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && !lt_wire_u64(&w, &v));
    CHECK_MSG(ctx, "overflows 64 bits");
    /* 11-byte varint */
    uint8_t longv[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, longv, sizeof longv, "long.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && !lt_wire_u64(&w, &v) && ctx.status == LT_ERR_INVALID);
    /* maximal valid varint */
    uint8_t maxv[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, maxv, sizeof maxv, "max.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && lt_wire_u64(&w, &v) && v == UINT64_MAX);

    /* length past the end */
    uint8_t len[] = {0x12, 0x05, 'a', 'b'};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, len, sizeof len, "len.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && !lt_wire_bytes(&w, &p, &n));
    CHECK_MSG(ctx, "length 5 exceeds the 2 bytes left");
    /* huge length */
    uint8_t hlen[] = {0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, hlen, sizeof hlen, "hlen.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(lt_wire_next(&w) && !lt_wire_skip(&w) && ctx.status == LT_ERR_INVALID);
    /* groups and field 0 are refused */
    uint8_t grp[] = {0x0b};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, grp, sizeof grp, "g.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(!lt_wire_next(&w) && lt_wire_failed(&w));
    uint8_t f0[] = {0x00, 0x01};
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, f0, sizeof f0, "f0.pb", 0);
    lt_wire_root(&w, &src, "Test");
    CHECK(!lt_wire_next(&w) && lt_wire_failed(&w));
}

static void test_wire_nesting(void) {
    /* 70 nested messages in field 1 */
    pb b = {0};
    fv(&b, 2, 7);
    for (int i = 0; i < 70; i++) {
        pb o = {0};
        fmsg(&o, 1, &b);
        b = o;
    }
    for (int limit = 64; limit <= 80; limit += 16) {
        lt_ctx ctx = {0};
        lt_wire_src src;
        lt_wire_src_init(&src, &ctx, b.p, b.n, "nest.pb", limit);
        lt_wire w, sub;
        lt_wire_root(&w, &src, "Nest");
        int depth = 0;
        while (lt_wire_next(&w) && w.field == 1 && lt_wire_msg(&w, &sub, "Nest")) {
            w = sub;
            depth++;
        }
        if (limit == 64) {
            CHECK(depth == 64 && ctx.status == LT_ERR_INVALID);
            CHECK_MSG(ctx, "nested deeper than the limit of 64");
        } else {
            CHECK(depth == 70 && ctx.status == LT_OK);
        }
    }
    pfree(&b);
}

static void test_wire_repeated(void) {
    lt_ctx ctx = {0};
    pb b = {0}, packed = {0};
    fv(&b, 1, 5); /* unpacked */
    varint(&packed, 1);
    varint(&packed, 300);
    varint(&packed, UINT64_MAX);
    fbytes(&b, 1, packed.p, packed.n); /* packed */
    fv(&b, 1, 7);
    pfree(&packed);
    float fl[3] = {1, 2, 3};
    fbytes(&b, 2, fl, sizeof fl);
    ff32(&b, 2, 4);
    lt_wire_src src;
    lt_wire w;
    lt_wire_src_init(&src, &ctx, b.p, b.n, "rep.pb", 0);
    int64_t nv = 0, nf = 0;
    lt_wire_root(&w, &src, "Rep");
    while (lt_wire_next(&w)) {
        if (w.field == 1) lt_wire_rep_varint(&w, NULL, 0, &nv);
        if (w.field == 2) lt_wire_rep_fixed32(&w, NULL, 0, &nf);
    }
    CHECK(nv == 5 && nf == 4 && !lt_wire_failed(&w));
    uint64_t vals[5];
    uint32_t fv32[4];
    int64_t gv = 0, gf = 0;
    lt_wire_root(&w, &src, "Rep");
    while (lt_wire_next(&w)) {
        if (w.field == 1) lt_wire_rep_varint(&w, vals, 5, &gv);
        if (w.field == 2) lt_wire_rep_fixed32(&w, fv32, 4, &gf);
    }
    CHECK(gv == 5 && vals[0] == 5 && vals[1] == 1 && vals[2] == 300 && vals[3] == UINT64_MAX && vals[4] == 7);
    float f3;
    memcpy(&f3, &fv32[3], 4);
    CHECK(gf == 4 && f3 == 4.0f);
    /* capacity is enforced */
    gv = 0;
    lt_wire_root(&w, &src, "Rep");
    while (lt_wire_next(&w))
        if (w.field == 1) lt_wire_rep_varint(&w, vals, 2, &gv);
    CHECK(lt_wire_failed(&w));
    pfree(&b);
    /* packed fixed32 whose length is not a multiple of 4 */
    pb bad = {0};
    fbytes(&bad, 2, "abcde", 5);
    lt_ctx_clear(&ctx);
    lt_wire_src_init(&src, &ctx, bad.p, bad.n, "bad.pb", 0);
    lt_wire_root(&w, &src, "Rep");
    nf = 0;
    CHECK(lt_wire_next(&w) && !lt_wire_rep_fixed32(&w, NULL, 0, &nf));
    pfree(&bad);
}

/* ---- TensorProto ---- */
static void tensor_hdr(pb *t, int dtype, int rank, const int64_t *dims) {
    for (int i = 0; i < rank; i++) fv(t, 1, (uint64_t)dims[i]);
    fv(t, 2, (uint64_t)dtype);
    fs(t, 8, "t");
}

static lt_status decode(pb *t, lt_ctx *ctx, lt_tensor **out) { return lt_onnx_decode_tensor(ctx, t->p, t->n, out, NULL); }

static void test_tensor_decode(void) {
    lt_ctx ctx = {0};
    lt_tensor *t = NULL;
    int64_t d23[2] = {2, 3};

    /* raw float */
    pb b = {0};
    tensor_hdr(&b, LT_FLOAT, 2, d23);
    float raw[6] = {1, 2, 3, 4, 5, 6};
    fbytes(&b, 9, raw, sizeof raw);
    char *name = NULL;
    CHECK(lt_onnx_decode_tensor(&ctx, b.p, b.n, &t, &name) == LT_OK);
    CHECK(t && t->dtype == LT_FLOAT && t->rank == 2 && t->numel == 6 && ((float *)t->data)[5] == 6 && !t->borrowed);
    CHECK(name && strcmp(name, "t") == 0);
    lt_mem_free(name);
    lt_tensor_release(t);
    pfree(&b);

    /* raw_data of the wrong length */
    tensor_hdr(&b, LT_FLOAT, 2, d23);
    fbytes(&b, 9, raw, 8);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "raw_data has 8 bytes, expected 24");
    CHECK_MSG(ctx, "'t'");
    pfree(&b);

    /* negative dim */
    lt_ctx_clear(&ctx);
    int64_t dneg[2] = {2, -3};
    tensor_hdr(&b, LT_FLOAT, 2, dneg);
    fbytes(&b, 9, raw, 24);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "negative dimension -3");
    pfree(&b);

    /* overflowing dims product */
    lt_ctx_clear(&ctx);
    int64_t dbig[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 16};
    tensor_hdr(&b, LT_FLOAT, 3, dbig);
    fbytes(&b, 9, raw, 24);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "overflow");
    pfree(&b);
    /* product fits int64 but bytes do not: [2^61, 8] int64 */
    lt_ctx_clear(&ctx);
    int64_t dbig2[2] = {(int64_t)1 << 61, 2};
    tensor_hdr(&b, LT_INT64, 2, dbig2);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    pfree(&b);

    /* float_data, packed and unpacked mixed */
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_FLOAT, 2, d23);
    fbytes(&b, 4, raw, 16);
    ff32(&b, 4, 5);
    ff32(&b, 4, 6);
    CHECK(decode(&b, &ctx, &t) == LT_OK && ((float *)t->data)[3] == 4 && ((float *)t->data)[5] == 6);
    lt_tensor_release(t);
    pfree(&b);
    /* wrong count in float_data */
    tensor_hdr(&b, LT_FLOAT, 2, d23);
    fbytes(&b, 4, raw, 20);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "float_data has 5 entries, expected 6");
    pfree(&b);

    /* int64_data with negatives (10-byte varints) */
    lt_ctx_clear(&ctx);
    int64_t d3[1] = {3};
    tensor_hdr(&b, LT_INT64, 1, d3);
    fv(&b, 7, (uint64_t)(int64_t)-5);
    pb pk = {0};
    varint(&pk, 7);
    varint(&pk, (uint64_t)INT64_MIN);
    fbytes(&b, 7, pk.p, pk.n);
    pfree(&pk);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    CHECK(t && ((int64_t *)t->data)[0] == -5 && ((int64_t *)t->data)[1] == 7 && ((int64_t *)t->data)[2] == INT64_MIN);
    lt_tensor_release(t);
    pfree(&b);

    /* int4 raw: [1, -1, -7, 7, -8] packed low nibble first */
    int64_t d5[1] = {5};
    tensor_hdr(&b, LT_INT4, 1, d5);
    uint8_t i4[3] = {0xF1, 0x79, 0x08};
    fbytes(&b, 9, i4, 3);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    if (t) {
        int8_t *q = t->data;
        CHECK(q[0] == 1 && q[1] == -1 && q[2] == -7 && q[3] == 7 && q[4] == -8);
    }
    lt_tensor_release(t);
    pfree(&b);
    /* uint4 in int32_data (one packed byte per entry) */
    tensor_hdr(&b, LT_UINT4, 1, d5);
    fv(&b, 5, 0xF1);
    fv(&b, 5, 0x79);
    fv(&b, 5, 0x08);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    if (t) {
        uint8_t *q = t->data;
        CHECK(q[0] == 1 && q[1] == 15 && q[2] == 9 && q[3] == 7 && q[4] == 8);
    }
    lt_tensor_release(t);
    pfree(&b);
    /* int4 raw of the wrong length */
    tensor_hdr(&b, LT_INT4, 1, d5);
    fbytes(&b, 9, i4, 2);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    pfree(&b);
    /* int2: [1, -1, -2, 0, 1] -> bits 01 11 10 00 | 01 */
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_INT2, 1, d5);
    uint8_t i2[2] = {0x01 | 0x03 << 2 | 0x02 << 4, 0x01};
    fbytes(&b, 9, i2, 2);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    if (t) {
        int8_t *q = t->data;
        CHECK(q[0] == 1 && q[1] == -1 && q[2] == -2 && q[3] == 0 && q[4] == 1);
    }
    lt_tensor_release(t);
    pfree(&b);

    /* float16 bits in int32_data */
    int64_t d2[1] = {2};
    tensor_hdr(&b, LT_FLOAT16, 1, d2);
    fv(&b, 5, 0x3C00);
    fv(&b, 5, 0xC000);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    if (t) CHECK(lt_f16_to_f32(((uint16_t *)t->data)[0]) == 1.0f && lt_f16_to_f32(((uint16_t *)t->data)[1]) == -2.0f);
    lt_tensor_release(t);
    pfree(&b);

    /* bool raw normalized to 0/1 */
    int64_t d4[1] = {4};
    tensor_hdr(&b, LT_BOOL, 1, d4);
    uint8_t bl[4] = {0, 1, 2, 255};
    fbytes(&b, 9, bl, 4);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    if (t) CHECK(((uint8_t *)t->data)[2] == 1 && ((uint8_t *)t->data)[3] == 1 && ((uint8_t *)t->data)[0] == 0);
    lt_tensor_release(t);
    pfree(&b);

    /* strings */
    tensor_hdr(&b, LT_STRING, 1, d2);
    fs(&b, 6, "hello");
    fbytes(&b, 6, "", 0);
    CHECK(decode(&b, &ctx, &t) == LT_OK);
    if (t) CHECK(strcmp(((char **)t->data)[0], "hello") == 0 && ((char **)t->data)[1][0] == 0);
    lt_tensor_release(t);
    pfree(&b);
    /* strings in raw_data are refused */
    tensor_hdr(&b, LT_STRING, 1, d2);
    fbytes(&b, 9, "ab", 2);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    pfree(&b);

    /* complex64 pairs in float_data; uint32 in uint64_data */
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_COMPLEX64, 1, d2);
    fbytes(&b, 4, raw, 16);
    CHECK(decode(&b, &ctx, &t) == LT_OK && t->numel == 2 && ((float *)t->data)[3] == 4);
    lt_tensor_release(t);
    pfree(&b);
    tensor_hdr(&b, LT_UINT32, 1, d2);
    fv(&b, 11, 0xFFFFFFFFu);
    fv(&b, 11, 7);
    CHECK(decode(&b, &ctx, &t) == LT_OK && ((uint32_t *)t->data)[0] == 0xFFFFFFFFu && ((uint32_t *)t->data)[1] == 7);
    lt_tensor_release(t);
    pfree(&b);

    /* no data for a non-empty tensor; an empty tensor needs none */
    tensor_hdr(&b, LT_FLOAT, 2, d23);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "has no data");
    pfree(&b);
    lt_ctx_clear(&ctx);
    int64_t d0[2] = {0, 5};
    tensor_hdr(&b, LT_FLOAT, 2, d0);
    CHECK(decode(&b, &ctx, &t) == LT_OK && t->numel == 0);
    lt_tensor_release(t);
    pfree(&b);
    /* both raw_data and float_data */
    tensor_hdr(&b, LT_FLOAT, 1, d2);
    fbytes(&b, 9, raw, 8);
    fbytes(&b, 4, raw, 8);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    pfree(&b);
    /* wrong typed field for the dtype */
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_INT64, 1, d2);
    fbytes(&b, 4, raw, 8);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "float_data given for a int64 tensor");
    pfree(&b);
    /* rank over the limit, invalid data_type, missing data_type, segment, external from memory */
    int64_t d17[17];
    for (int i = 0; i < 17; i++) d17[i] = 1;
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_FLOAT, 17, d17);
    fbytes(&b, 9, raw, 4);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_UNSUPPORTED);
    pfree(&b);
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, 99, 1, d2);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    pfree(&b);
    lt_ctx_clear(&ctx);
    fv(&b, 1, 2);
    fbytes(&b, 4, raw, 8);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "no data_type");
    pfree(&b);
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_FLOAT, 1, d2);
    pb seg = {0};
    fv(&seg, 1, 0);
    fmsg(&b, 3, &seg);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_UNSUPPORTED);
    pfree(&b);
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_FLOAT, 1, d2);
    pb kv = {0};
    fs(&kv, 1, "location");
    fs(&kv, 2, "w.bin");
    fmsg(&b, 13, &kv);
    fv(&b, 14, 1);
    CHECK(decode(&b, &ctx, &t) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "w.bin");
    pfree(&b);
    /* truncated tensor */
    lt_ctx_clear(&ctx);
    tensor_hdr(&b, LT_FLOAT, 2, d23);
    fbytes(&b, 9, raw, 24);
    CHECK(lt_onnx_decode_tensor(&ctx, b.p, b.n - 3, &t, NULL) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "exceeds");
    pfree(&b);
}

static void test_encode_roundtrip(void) {
    lt_ctx ctx = {0};
    int64_t d5[1] = {5};
    lt_tensor *t, *u;
    CHECK(lt_tensor_new(&ctx, LT_INT4, 1, d5, &t) == LT_OK);
    int8_t vals[5] = {-8, 7, -1, 0, 3};
    memcpy(t->data, vals, 5);
    uint8_t *buf;
    size_t n;
    CHECK(lt_onnx_encode_tensor(&ctx, t, "q", &buf, &n) == LT_OK);
    char *name = NULL;
    CHECK(lt_onnx_decode_tensor(&ctx, buf, n, &u, &name) == LT_OK);
    CHECK(u->dtype == LT_INT4 && u->numel == 5 && memcmp(u->data, vals, 5) == 0 && strcmp(name, "q") == 0);
    lt_mem_free(buf);
    lt_mem_free(name);
    lt_tensor_release(t);
    lt_tensor_release(u);

    int64_t d2[2] = {1, 2};
    CHECK(lt_tensor_new(&ctx, LT_STRING, 2, d2, &t) == LT_OK);
    lt_tensor_set_string(&ctx, t, 1, "xyz", 3);
    CHECK(lt_onnx_encode_tensor(&ctx, t, NULL, &buf, &n) == LT_OK);
    CHECK(lt_onnx_decode_tensor(&ctx, buf, n, &u, NULL) == LT_OK);
    CHECK(u->rank == 2 && strcmp(((char **)u->data)[1], "xyz") == 0);
    lt_mem_free(buf);
    lt_tensor_release(t);
    lt_tensor_release(u);

    CHECK(lt_tensor_new(&ctx, LT_DOUBLE, 0, NULL, &t) == LT_OK);
    ((double *)t->data)[0] = -1.25;
    CHECK(lt_onnx_encode_tensor(&ctx, t, "s", &buf, &n) == LT_OK);
    CHECK(lt_onnx_decode_tensor(&ctx, buf, n, &u, NULL) == LT_OK);
    CHECK(u->rank == 0 && ((double *)u->data)[0] == -1.25);
    lt_mem_free(buf);
    lt_tensor_release(t);
    lt_tensor_release(u);
}

/* ---- test data values ---- */
static void float_tensor(pb *t, int n, float base) {
    fv(t, 1, (uint64_t)n);
    fv(t, 2, LT_FLOAT);
    for (int i = 0; i < n; i++) ff32(t, 4, base + (float)i);
}

static void test_datums(void) {
    lt_ctx ctx = {0};
    lt_type tens = {.kind = LT_TK_TENSOR, .dtype = LT_FLOAT, .rank = -1};
    lt_type seqt = {.kind = LT_TK_SEQUENCE, .rank = -1, .elem = &tens};
    lt_type optt = {.kind = LT_TK_OPTIONAL, .rank = -1, .elem = &tens};
    lt_type mapt = {.kind = LT_TK_MAP, .dtype = LT_INT64, .rank = -1, .elem = &tens};
    /* sequence of two tensors */
    pb s = {0}, t1 = {0}, t2 = {0};
    fs(&s, 1, "seq");
    fv(&s, 2, 1);
    float_tensor(&t1, 2, 1);
    float_tensor(&t2, 3, 10);
    fmsg(&s, 3, &t1);
    fmsg(&s, 3, &t2);
    lt_datum *d = NULL;
    CHECK(lt_onnx_decode_datum(&ctx, s.p, s.n, &seqt, &d) == LT_OK);
    CHECK(d && d->kind == LT_DK_SEQUENCE && d->n == 2 && d->items[1]->tensor->numel == 3 &&
          ((float *)d->items[1]->tensor->data)[2] == 12);
    lt_datum_release(d);
    pfree(&s);
    /* empty sequence keeps the expected dtype */
    fv(&s, 2, 1);
    CHECK(lt_onnx_decode_datum(&ctx, s.p, s.n, &seqt, &d) == LT_OK && d->n == 0 && d->elem_dtype == LT_FLOAT);
    lt_datum_release(d);
    pfree(&s);
    /* a sequence holding a value of the wrong kind */
    fv(&s, 2, 1);
    pb inner = {0};
    fv(&inner, 2, 1);
    fmsg(&s, 5, &inner);
    CHECK(lt_onnx_decode_datum(&ctx, s.p, s.n, &seqt, &d) == LT_ERR_INVALID);
    pfree(&s);
    lt_ctx_clear(&ctx);
    /* optional: absent, and present */
    pb o = {0};
    fs(&o, 1, "opt");
    CHECK(lt_onnx_decode_datum(&ctx, o.p, o.n, &optt, &d) == LT_OK && d->kind == LT_DK_OPTIONAL && !d->value &&
          d->elem_dtype == LT_FLOAT);
    lt_datum_release(d);
    fv(&o, 2, 1);
    float_tensor(&t1, 1, 4);
    fmsg(&o, 3, &t1);
    CHECK(lt_onnx_decode_datum(&ctx, o.p, o.n, &optt, &d) == LT_OK && d->value && d->value->tensor->numel == 1);
    lt_datum_release(d);
    pfree(&o);
    /* map int64 -> float */
    pb mp = {0}, vals = {0};
    fv(&mp, 2, LT_INT64);
    fv(&mp, 3, 5);
    fv(&mp, 3, 9);
    fv(&vals, 2, 1);
    float_tensor(&t1, 1, 0.5f);
    float_tensor(&t2, 1, 1.5f);
    fmsg(&vals, 3, &t1);
    fmsg(&vals, 3, &t2);
    fmsg(&mp, 5, &vals);
    CHECK(lt_onnx_decode_datum(&ctx, mp.p, mp.n, &mapt, &d) == LT_OK);
    CHECK(d && d->kind == LT_DK_MAP && d->keys->numel == 2 && ((int64_t *)d->keys->data)[1] == 9 &&
          d->values->numel == 2 && ((float *)d->values->data)[1] == 1.5f);
    lt_datum_release(d);
    pfree(&mp);
    /* a plain tensor with no expected type */
    float_tensor(&t1, 2, 3);
    CHECK(lt_onnx_decode_datum(&ctx, t1.p, t1.n, NULL, &d) == LT_OK && d->kind == LT_DK_TENSOR);
    lt_datum_release(d);
    pfree(&t1);
}

/* ---- models ---- */
static void vi(pb *g, int field, const char *name, int dtype, int rank) {
    pb v = {0}, tp = {0}, tt = {0}, sh = {0};
    fs(&v, 1, name);
    if (dtype) {
        fv(&tt, 1, (uint64_t)dtype);
        for (int i = 0; i < rank; i++) {
            pb dim = {0};
            if (i == 0) fs(&dim, 2, "N");
            else fv(&dim, 1, 4);
            fmsg(&sh, 1, &dim);
        }
        if (rank >= 0) fmsg(&tt, 2, &sh);
        fmsg(&tp, 1, &tt);
        fmsg(&v, 2, &tp);
    }
    fmsg(g, field, &v);
    pfree(&sh);
    pfree(&tt);
    pfree(&tp);
}
static void node_in(pb *g, int field, const char *op, const char *in0, const char *in1, const char *out, const char *name) {
    pb n = {0};
    if (in0) fs(&n, 1, in0);
    if (in1) fs(&n, 1, in1);
    fs(&n, 2, out);
    if (name) fs(&n, 3, name);
    fs(&n, 4, op);
    fmsg(g, field, &n);
}
static void node(pb *g, const char *op, const char *in0, const char *in1, const char *out, const char *name) {
    node_in(g, 1, op, in0, in1, out, name);
}
static void model(pb *m, int ir, pb *graph) {
    fv(m, 1, (uint64_t)ir);
    pb os = {0};
    fs(&os, 1, "");
    fv(&os, 2, 17);
    fmsg(m, 8, &os);
    if (graph) fmsg(m, 7, graph);
}

static lt_status load(pb *m, lt_ctx *ctx, lt_model **out) { return lt_onnx_load_memory(ctx, m->p, m->n, NULL, NULL, out); }

/* graph: y = Relu(x) + w with an initializer */
static void small_model(pb *m) {
    pb g = {0}, w = {0};
    fs(&g, 2, "main");
    node(&g, "Relu", "x", NULL, "r", "relu1");
    node(&g, "Add", "r", "w", "y", "add1");
    int64_t d4[1] = {4};
    tensor_hdr(&w, LT_FLOAT, 1, d4);
    float wv[4] = {1, 2, 3, 4};
    fbytes(&w, 9, wv, sizeof wv);
    /* rename the initializer to "w" (tensor_hdr named it "t"): later field wins */
    fs(&w, 8, "w");
    fmsg(&g, 5, &w);
    vi(&g, 11, "x", LT_FLOAT, 2);
    vi(&g, 12, "y", LT_FLOAT, 2);
    vi(&g, 13, "r", LT_FLOAT, 2);
    model(m, 8, &g);
}

/* If nested `levels` deep along then_branch; every leaf returns Identity of the outer x. */
static void nested_if(pb *g, int levels, int id) {
    char out[32];
    snprintf(out, sizeof out, "o%d", id);
    if (levels == 0) {
        node(g, "Identity", "x", NULL, out, NULL);
        vi(g, 12, out, 0, -1);
        return;
    }
    pb n = {0}, a1 = {0}, a2 = {0}, g1 = {0}, g2 = {0};
    fs(&n, 1, "c");
    fs(&n, 2, out);
    fs(&n, 4, "If");
    nested_if(&g1, levels - 1, id * 2 + 1);
    nested_if(&g2, 0, id * 2 + 2);
    fs(&a1, 1, "then_branch");
    fv(&a1, 20, LT_AT_GRAPH);
    fmsg(&a1, 6, &g1);
    fs(&a2, 1, "else_branch");
    fv(&a2, 20, LT_AT_GRAPH);
    fmsg(&a2, 6, &g2);
    fmsg(&n, 5, &a1);
    fmsg(&n, 5, &a2);
    fmsg(g, 1, &n);
    vi(g, 12, out, 0, -1);
}

static void test_models(void) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    pb b = {0};
    small_model(&b);
    CHECK(load(&b, &ctx, &m) == LT_OK);
    if (m) {
        lt_graph *g = m->graph;
        CHECK(m->ir_version == 8 && lt_model_opset(m, "") == 17);
        CHECK(g->n_nodes == 2 && g->n_inputs == 1 && g->n_outputs == 1 && strcmp(g->name, "main") == 0);
        CHECK(g->nodes[0]->op == lt_op_lookup("", "Relu") && g->nodes[1]->in[1]->init != NULL);
        /* zero-copy: the initializer borrows from the buffer exactly when its bytes are aligned */
        const lt_tensor *w = g->nodes[1]->in[1]->init;
        const float wv[4] = {1, 2, 3, 4};
        const uint8_t *at = NULL;
        for (size_t i = 0; i + sizeof wv <= b.n && !at; i++)
            if (memcmp(b.p + i, wv, sizeof wv) == 0) at = b.p + i;
        CHECK(at && w->borrowed == ((uintptr_t)at % 4 == 0) && (!w->borrowed || w->data == at));
        CHECK(g->inputs[0]->type.rank == 2 && g->inputs[0]->type.dims[0].value == -1 &&
              strcmp(g->inputs[0]->type.dims[0].param, "N") == 0 && g->inputs[0]->type.dims[1].value == 4);
        for (int i = 0; i < g->n_values; i++) CHECK(g->values[i]->id == i);
        CHECK(g->outputs[0]->producer == g->nodes[1]);
        lt_model_free(m);
    }
    /* every truncation of a valid model fails cleanly (or loads a prefix that is still valid) */
    for (size_t n = 0; n < b.n; n++) {
        lt_ctx c = {0};
        lt_model *mm = NULL;
        lt_status st = lt_onnx_load_memory(&c, b.p, n, NULL, NULL, &mm);
        CHECK(st == LT_OK || (c.status != LT_OK && c.msg[0]));
        if (st == LT_OK) lt_model_free(mm);
    }
    pfree(&b);

    /* IR versions */
    pb g = {0};
    node(&g, "Relu", "x", NULL, "y", NULL);
    vi(&g, 11, "x", LT_FLOAT, 1);
    vi(&g, 12, "y", 0, -1);
    pb g2 = {0};
    put(&g2, g.p, g.n);
    model(&b, 2, &g);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_ERR_UNSUPPORTED);
    CHECK_MSG(ctx, "IR version 2");
    pfree(&b);
    model(&b, 15, &g2);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_ERR_UNSUPPORTED);
    pfree(&b);
    /* no ir_version, no graph */
    lt_ctx_clear(&ctx);
    CHECK(lt_onnx_load_memory(&ctx, "", 0, NULL, NULL, &m) == LT_ERR_INVALID);
    model(&b, 8, NULL);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "no graph");
    pfree(&b);

    /* input used before it is defined */
    node(&g, "Relu", "later", NULL, "y", "first");
    node(&g, "Relu", "x", NULL, "later", "second");
    vi(&g, 11, "x", LT_FLOAT, 1);
    vi(&g, 12, "y", 0, -1);
    model(&b, 8, &g);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "'first'");
    CHECK_MSG(ctx, "input 'later' is not defined before use");
    pfree(&b);
    /* an output defined twice */
    node(&g, "Relu", "x", NULL, "y", NULL);
    node(&g, "Relu", "x", NULL, "y", "dup");
    vi(&g, 11, "x", LT_FLOAT, 1);
    vi(&g, 12, "y", 0, -1);
    model(&b, 8, &g);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "defined more than once");
    pfree(&b);
    /* an unknown op loads (reported later by lt_model_check_supported) */
    node(&g, "NoSuchOp", "x", NULL, "y", "mystery");
    vi(&g, 11, "x", LT_FLOAT, 1);
    vi(&g, 12, "y", LT_FLOAT, 1);
    model(&b, 8, &g);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_OK);
    if (m) {
        CHECK(m->graph->nodes[0]->op == LT_OP_UNKNOWN);
        lt_ctx c2 = {0};
        CHECK(lt_model_check_supported(&c2, m) == LT_ERR_UNSUPPORTED);
        CHECK_MSG(c2, "NoSuchOp");
        lt_model_free(m);
    }
    pfree(&b);

    /* nested subgraphs: 4 levels load, with outer references; 30 levels exceed the depth limit */
    for (int levels = 4; levels <= 30; levels += 26) {
        nested_if(&g, levels, 0);
        vi(&g, 11, "c", LT_BOOL, 0);
        vi(&g, 11, "x", LT_FLOAT, 1);
        model(&b, 8, &g);
        lt_ctx_clear(&ctx);
        m = NULL;
        lt_status st = load(&b, &ctx, &m);
        if (levels == 4) {
            CHECK(st == LT_OK);
            if (m) {
                const lt_graph *sg = lt_attr_graph(m->graph->nodes[0], "then_branch");
                CHECK(sg && sg->parent == m->graph && sg->owner == m->graph->nodes[0]);
                const lt_value *c = sg ? lt_graph_find_value(sg, "c") : NULL;
                CHECK(c && c->outer == m->graph->inputs[0]);
                lt_model_free(m);
            }
        } else {
            CHECK(st == LT_ERR_INVALID);
            CHECK_MSG(ctx, "nested deeper than the limit");
        }
        pfree(&b);
    }
    /* 22 levels pass the default limit of 64 but load with a limit of 128 */
    nested_if(&g, 22, 0);
    vi(&g, 11, "c", LT_BOOL, 0);
    vi(&g, 11, "x", LT_FLOAT, 1);
    model(&b, 8, &g);
    lt_ctx_clear(&ctx);
    CHECK(load(&b, &ctx, &m) == LT_ERR_INVALID);
    lt_load_options opt = {.max_depth = 128};
    lt_ctx_clear(&ctx);
    m = NULL;
    CHECK(lt_onnx_load_memory(&ctx, b.p, b.n, NULL, &opt, &m) == LT_OK);
    lt_model_free(m);
    pfree(&b);
}

/* A model-local function: Scale(a) = LeakyRelu(Mul(a, 2), alpha=@alpha), called twice. */
static void test_functions(void) {
    pb f = {0}, n1 = {0}, n2 = {0}, a = {0}, attr = {0}, os = {0};
    fs(&f, 1, "Scale");
    fs(&f, 10, "local");
    fs(&f, 4, "a");
    fs(&f, 5, "b");
    fs(&f, 6, "alpha");
    /* Constant k = 2.0 */
    fs(&n1, 2, "k");
    fs(&n1, 4, "Constant");
    fs(&a, 1, "value_float");
    fv(&a, 20, LT_AT_FLOAT);
    ff32(&a, 2, 2.0f);
    fmsg(&n1, 5, &a);
    fmsg(&f, 7, &n1);
    node_in(&f, 7, "Mul", "a", "k", "m", "mul");
    fs(&n2, 1, "m");
    fs(&n2, 2, "b");
    fs(&n2, 4, "LeakyRelu");
    fs(&attr, 1, "alpha");
    fv(&attr, 20, LT_AT_FLOAT);
    fs(&attr, 21, "alpha");
    fmsg(&n2, 5, &attr);
    fmsg(&f, 7, &n2);
    fs(&os, 1, "");
    fv(&os, 2, 17);
    fmsg(&f, 9, &os);

    pb g = {0}, c1 = {0}, c2 = {0}, ca = {0};
    fs(&c1, 1, "x");
    fs(&c1, 2, "y1");
    fs(&c1, 3, "call1");
    fs(&c1, 4, "Scale");
    fs(&c1, 7, "local");
    fs(&ca, 1, "alpha");
    fv(&ca, 20, LT_AT_FLOAT);
    ff32(&ca, 2, 0.25f);
    fmsg(&c1, 5, &ca);
    fmsg(&g, 1, &c1);
    fs(&c2, 1, "y1");
    fs(&c2, 2, "y");
    fs(&c2, 4, "Scale");
    fs(&c2, 7, "local");
    fmsg(&g, 1, &c2);
    vi(&g, 11, "x", LT_FLOAT, 1);
    vi(&g, 12, "y", LT_FLOAT, 1);
    pb m = {0};
    model(&m, 8, &g);
    pb f2 = {0};
    put(&f2, f.p, f.n);
    fmsg(&m, 25, &f);

    lt_ctx ctx = {0};
    lt_model *mod = NULL;
    CHECK(load(&m, &ctx, &mod) == LT_OK);
    if (mod) {
        lt_graph *gr = mod->graph;
        CHECK(gr->n_nodes == 6);
        if (gr->n_nodes != 6) {
            lt_model_free(mod);
            pfree(&m);
            return;
        }
        CHECK(gr->nodes[2]->op == lt_op_lookup("", "LeakyRelu"));
        CHECK(lt_attr_float(gr->nodes[2], "alpha", -1) == 0.25f);   /* from the caller */
        CHECK(lt_node_attr(gr->nodes[5], "alpha") == NULL);          /* caller gave none: dropped */
        CHECK(strcmp(gr->nodes[2]->out[0]->name, "y1") == 0);
        CHECK(strcmp(gr->nodes[5]->out[0]->name, "y") == 0 && gr->outputs[0] == gr->nodes[5]->out[0]);
        CHECK(strncmp(gr->nodes[1]->name, "call1#", 6) == 0);
        CHECK(gr->nodes[4]->in[0] == gr->nodes[2]->out[0]);
        lt_model_free(mod);
    }
    pfree(&m);
    /* a recursive function is refused, not followed forever */
    pb rf = {0};
    fs(&rf, 1, "Rec");
    fs(&rf, 10, "local");
    fs(&rf, 4, "a");
    fs(&rf, 5, "b");
    pb rn = {0};
    fs(&rn, 1, "a");
    fs(&rn, 2, "b");
    fs(&rn, 4, "Rec");
    fs(&rn, 7, "local");
    fmsg(&rf, 7, &rn);
    pb rg = {0}, rc = {0};
    fs(&rc, 1, "x");
    fs(&rc, 2, "y");
    fs(&rc, 4, "Rec");
    fs(&rc, 7, "local");
    fmsg(&rg, 1, &rc);
    vi(&rg, 11, "x", LT_FLOAT, 1);
    vi(&rg, 12, "y", LT_FLOAT, 1);
    model(&m, 8, &rg);
    fmsg(&m, 25, &rf);
    lt_ctx_clear(&ctx);
    CHECK(load(&m, &ctx, &mod) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "nested deeper");
    pfree(&m);
    pfree(&f2);

    /* exponential fan-out: F0 calls F1 twice, F1 calls F2 twice, ... F24 is a Relu: 2^24 nodes */
    pb eg = {0};
    node(&eg, "F0", "x", NULL, "y", NULL);
    /* node() writes no domain: the functions live in the default domain */
    vi(&eg, 11, "x", LT_FLOAT, 1);
    vi(&eg, 12, "y", LT_FLOAT, 1);
    model(&m, 8, &eg);
    for (int i = 0; i < 25; i++) {
        pb fn = {0};
        char name[16], callee[16];
        snprintf(name, sizeof name, "F%d", i);
        snprintf(callee, sizeof callee, "F%d", i + 1);
        fs(&fn, 1, name);
        fs(&fn, 4, "a");
        fs(&fn, 5, "b");
        if (i == 24) {
            node_in(&fn, 7, "Relu", "a", NULL, "b", NULL);
        } else {
            node_in(&fn, 7, callee, "a", NULL, "t", NULL);
            node_in(&fn, 7, callee, "t", NULL, "b", NULL);
        }
        fmsg(&m, 25, &fn);
    }
    lt_ctx_clear(&ctx);
    CHECK(load(&m, &ctx, &mod) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "would create more than");
    pfree(&m);
}

static void test_sparse(void) {
    lt_ctx ctx = {0};
    lt_type tens = {.kind = LT_TK_TENSOR, .dtype = LT_FLOAT, .rank = -1};
    lt_type seqt = {.kind = LT_TK_SEQUENCE, .rank = -1, .elem = &tens};
    /* a sequence holding one sparse tensor: dims [2, 3], values at (0,1) and (1,2) */
    pb sp = {0}, vals = {0}, idx = {0}, seq = {0};
    float_tensor(&vals, 2, 7);
    fs(&vals, 8, "sv"); /* a sparse tensor's name is its values' name */
    int64_t d22[2] = {2, 2};
    tensor_hdr(&idx, LT_INT64, 2, d22);
    fv(&idx, 7, 0);
    fv(&idx, 7, 1);
    fv(&idx, 7, 1);
    fv(&idx, 7, 2);
    fmsg(&sp, 1, &vals);
    fmsg(&sp, 2, &idx);
    fv(&sp, 3, 2);
    fv(&sp, 3, 3);
    pb sp_copy = {0};
    put(&sp_copy, sp.p, sp.n);
    fv(&seq, 2, 2);
    fmsg(&seq, 4, &sp);
    lt_datum *d = NULL;
    CHECK(lt_onnx_decode_datum(&ctx, seq.p, seq.n, &seqt, &d) == LT_OK);
    if (d) {
        const lt_tensor *t = d->items[0]->tensor;
        const float *f = t->data;
        CHECK(t->rank == 2 && t->numel == 6 && f[1] == 7 && f[5] == 8 && f[0] == 0 && f[4] == 0);
        lt_datum_release(d);
    }
    pfree(&seq);
    /* an index out of range */
    pb bad = {0};
    float_tensor(&vals, 1, 1);
    int64_t d1[1] = {1};
    tensor_hdr(&idx, LT_INT64, 1, d1);
    fv(&idx, 7, 6);
    fmsg(&bad, 1, &vals);
    fmsg(&bad, 2, &idx);
    fv(&bad, 3, 2);
    fv(&bad, 3, 3);
    fv(&seq, 2, 2);
    fmsg(&seq, 4, &bad);
    lt_ctx_clear(&ctx);
    CHECK(lt_onnx_decode_datum(&ctx, seq.p, seq.n, &seqt, &d) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "sparse index 6 out of range");
    pfree(&seq);
    /* a huge dense shape from a tiny sparse tensor is refused */
    float_tensor(&vals, 1, 1);
    tensor_hdr(&idx, LT_INT64, 1, d1);
    fv(&idx, 7, 0);
    fmsg(&bad, 1, &vals);
    fmsg(&bad, 2, &idx);
    fv(&bad, 3, 1 << 20);
    fv(&bad, 3, 1 << 20);
    fv(&seq, 2, 2);
    fmsg(&seq, 4, &bad);
    lt_ctx_clear(&ctx);
    CHECK(lt_onnx_decode_datum(&ctx, seq.p, seq.n, &seqt, &d) == LT_ERR_INVALID);
    CHECK_MSG(ctx, "too large");
    pfree(&seq);
    /* as a sparse initializer of a model */
    pb g = {0}, m = {0};
    fmsg(&g, 15, &sp_copy);
    fs(&g, 2, "g");
    pb n = {0};
    fs(&n, 1, "x");
    fs(&n, 1, "sv");
    fs(&n, 2, "y");
    fs(&n, 4, "Add");
    fmsg(&g, 1, &n);
    vi(&g, 11, "x", LT_FLOAT, -1);
    vi(&g, 12, "y", LT_FLOAT, -1);
    model(&m, 8, &g);
    lt_model *mod = NULL;
    lt_ctx_clear(&ctx);
    CHECK(load(&m, &ctx, &mod) == LT_OK);
    if (mod) {
        const lt_value *v = lt_graph_find_value(mod->graph, "sv");
        CHECK(v && v->init && v->init->numel == 6 && ((float *)v->init->data)[5] == 8 && v->type.rank == 2);
        lt_model_free(mod);
    }
    pfree(&m);
}

/* ---- allocation failures: every allocation in turn ---- */
typedef lt_status (*job_fn)(lt_ctx *ctx, pb *in);

static lt_status job_model(lt_ctx *ctx, pb *in) {
    lt_model *m = NULL;
    lt_status st = lt_onnx_load_memory(ctx, in->p, in->n, NULL, NULL, &m);
    if (st == LT_OK) lt_model_free(m);
    return st;
}
static lt_status job_tensor(lt_ctx *ctx, pb *in) {
    lt_tensor *t = NULL;
    char *name = NULL;
    lt_status st = lt_onnx_decode_tensor(ctx, in->p, in->n, &t, &name);
    if (st == LT_OK) {
        lt_tensor_release(t);
        lt_mem_free(name);
    }
    return st;
}
static lt_status job_seq(lt_ctx *ctx, pb *in) {
    lt_type tens = {.kind = LT_TK_TENSOR, .dtype = LT_FLOAT, .rank = -1};
    lt_type seqt = {.kind = LT_TK_SEQUENCE, .rank = -1, .elem = &tens};
    lt_datum *d = NULL;
    lt_status st = lt_onnx_decode_datum(ctx, in->p, in->n, &seqt, &d);
    if (st == LT_OK) lt_datum_release(d);
    return st;
}

static void fail_each_allocation(const char *what, job_fn job, pb *in) {
    lt_set_allocator(&g_test_alloc);
    long n_ok = -1;
    for (long k = 0; k < 100000; k++) {
        g_fail_at = k;
        g_calls = 0;
        g_live = 0;
        lt_ctx ctx = {0};
        lt_status st = job(&ctx, in);
        if (g_live != 0) {
            fprintf(stderr, "%s: allocation %ld failed: %ld blocks leaked (status %d: %s)\n", what, k, g_live, st, ctx.msg);
            failures++;
            break;
        }
        if (g_calls <= k) { /* the failure was never reached: the whole job ran */
            if (st != LT_OK) {
                fprintf(stderr, "%s: failed without an injected failure: %s\n", what, ctx.msg);
                failures++;
            }
            n_ok = k;
            break;
        }
        if (st == LT_OK) continue; /* the failed allocation was optional (e.g. a cache) */
        if (ctx.status == LT_OK || !ctx.msg[0]) {
            fprintf(stderr, "%s: allocation %ld failed with status %d but no message\n", what, k, st);
            failures++;
        }
    }
    g_fail_at = -1;
    lt_set_allocator(NULL);
    CHECK(n_ok > 0);
}

static void test_alloc_failures(void) {
    pb m = {0};
    small_model(&m);
    fail_each_allocation("small model", job_model, &m);
    pfree(&m);
    /* a model with subgraphs and outer references */
    pb g = {0};
    nested_if(&g, 2, 0);
    vi(&g, 11, "c", LT_BOOL, 0);
    vi(&g, 11, "x", LT_FLOAT, 1);
    model(&m, 8, &g);
    fail_each_allocation("nested If", job_model, &m);
    pfree(&m);
    /* tensors of several kinds */
    pb t = {0};
    int64_t d3[1] = {3};
    tensor_hdr(&t, LT_STRING, 1, d3);
    fs(&t, 6, "a");
    fs(&t, 6, "bb");
    fs(&t, 6, "ccc");
    fail_each_allocation("string tensor", job_tensor, &t);
    pfree(&t);
    tensor_hdr(&t, LT_INT4, 1, d3);
    fv(&t, 5, 0x21);
    fv(&t, 5, 0x03);
    fail_each_allocation("int4 tensor", job_tensor, &t);
    pfree(&t);
    pb s = {0}, t1 = {0}, t2 = {0};
    fv(&s, 2, 1);
    float_tensor(&t1, 2, 1);
    float_tensor(&t2, 3, 1);
    fmsg(&s, 3, &t1);
    fmsg(&s, 3, &t2);
    fail_each_allocation("sequence", job_seq, &s);
    pfree(&s);
}

int main(void) {
    test_wire_basics();
    test_wire_nesting();
    test_wire_repeated();
    test_tensor_decode();
    test_encode_roundtrip();
    test_datums();
    test_models();
    test_functions();
    test_sparse();
    test_alloc_failures();
    return test_report("test_wire");
}
