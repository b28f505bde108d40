/* nn_matmul.c — matrix products: MatMul (numpy semantics: batch broadcasting, 1-D operands),
 * MatMulInteger, QLinearMatMul, Gemm (transA/transB/alpha/beta, C broadcast to [M,N]), and Det.
 *
 * Float products run on the blocked GEMM of nn_kernels.c in float32 (float, float16, bfloat16 round
 * once at the end) or float64; integer products in exact wrapping 64-bit arithmetic, stored with
 * two's-complement wrap to the output type (numpy's int32/int64 behaviour). */
#include "nn_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------- */
/* MatMul shapes                                                                                    */

typedef struct mm_shape {
    int rank;                  /* output rank */
    int64_t dims[LT_MAX_RANK]; /* output dims */
    int brank;                 /* broadcast batch rank */
    int64_t bdims[LT_MAX_RANK], astr[LT_MAX_RANK], bstr[LT_MAX_RANK]; /* batch dims, strides in matrices */
    int64_t M, N, K, batch;
} mm_shape;

/* The rules of MatMul-like products (numpy matmul) on A (rank ar, dims ad) and B: ranks >= 1, equal
 * inner dims, broadcastable batch dims. Dims may be -1 (unknown, shape inference): every rule whose
 * dims are known is checked. Shape inference and eval both call it (one message on every backend). */
static lt_status mm_check(lt_ctx *ctx, const lt_node *n, int ar, const int64_t *ad, int br, const int64_t *bd) {
    if (ar < 1 || br < 1)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "operands must have rank >= 1 (got %d and %d)", ar, br);
    int64_t ka = ad[ar - 1], kb = br == 1 ? bd[0] : bd[br - 2];
    bool ok = ka < 0 || kb < 0 || ka == kb;
    int abr = ar > 2 ? ar - 2 : 0, bbr = br > 2 ? br - 2 : 0, r = abr > bbr ? abr : bbr;
    for (int d = 0; ok && d < r; d++) {
        int ai = d - (r - abr), bi = d - (r - bbr);
        int64_t av = ai >= 0 ? ad[ai] : 1, bv = bi >= 0 ? bd[bi] : 1;
        if (av >= 0 && bv >= 0 && av != bv && av != 1 && bv != 1) ok = false;
    }
    if (!ok) {
        char x[256], y[256];
        return lt_node_error(ctx, n, LT_ERR_INVALID, "shapes %s and %s are not aligned for matmul",
                             lt_shape_str(ar, ad, x, sizeof x), lt_shape_str(br, bd, y, sizeof y));
    }
    return LT_OK;
}

static lt_status mm_setup(lt_eval *ev, const lt_node *n, const lt_tensor *a, const lt_tensor *b, mm_shape *s) {
    LT_TRY(mm_check(ev->ctx, n, a->rank, a->dims, b->rank, b->dims));
    int ar = a->rank, br = b->rank;
    bool avec = ar == 1, bvec = br == 1;
    s->M = avec ? 1 : a->dims[ar - 2];
    s->K = a->dims[ar - 1];
    s->N = bvec ? 1 : b->dims[br - 1];
    int abr = ar > 2 ? ar - 2 : 0, bbr = br > 2 ? br - 2 : 0;
    s->brank = abr > bbr ? abr : bbr;
    int64_t as = 1, bs = 1;
    for (int d = s->brank - 1; d >= 0; d--) {
        int ad = d - (s->brank - abr), bd = d - (s->brank - bbr);
        int64_t av = ad >= 0 ? a->dims[ad] : 1, bv = bd >= 0 ? b->dims[bd] : 1;
        if (av != bv && av != 1 && bv != 1) {
            char x[256], y[256];
            return lt_op_error(ev, n, LT_ERR_INVALID, "batch dims of %s and %s cannot be broadcast",
                               lt_shape_str(ar, a->dims, x, sizeof x), lt_shape_str(br, b->dims, y, sizeof y));
        }
        s->bdims[d] = av == 1 ? bv : av;
        s->astr[d] = av == 1 ? 0 : as;
        s->bstr[d] = bv == 1 ? 0 : bs;
        as *= av;
        bs *= bv;
    }
    s->rank = 0;
    s->batch = 1;
    for (int d = 0; d < s->brank; d++) {
        s->dims[s->rank++] = s->bdims[d];
        s->batch *= s->bdims[d];
    }
    if (!avec) s->dims[s->rank++] = s->M;
    if (!bvec) s->dims[s->rank++] = s->N;
    return LT_OK;
}

/* Call fn(ctx, aoff, boff, coff) for every batch entry (offsets in elements). */
#define MM_FOR_BATCH(s, BODY)                                                                      \
    do {                                                                                           \
        int64_t bi_[LT_MAX_RANK] = {0};                                                            \
        for (int64_t q_ = 0; q_ < (s)->batch; q_++) {                                              \
            int64_t am_ = 0, bm_ = 0;                                                              \
            for (int d_ = 0; d_ < (s)->brank; d_++) {                                              \
                am_ += bi_[d_] * (s)->astr[d_];                                                    \
                bm_ += bi_[d_] * (s)->bstr[d_];                                                    \
            }                                                                                      \
            int64_t aoff = am_ * (s)->M * (s)->K, boff = bm_ * (s)->K * (s)->N;                    \
            int64_t coff = q_ * (s)->M * (s)->N;                                                   \
            BODY;                                                                                  \
            lt_index_next((s)->brank, (s)->bdims, bi_);                                            \
        }                                                                                          \
    } while (0)

static bool mm_dtype_ok(lt_dtype dt) { return nn_is_float(dt) || lt_dtype_is_int(dt); }

lt_status nn_eval_MatMul(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *a, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &a));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &b));
    if (!mm_dtype_ok(a->dtype) || b->dtype != a->dtype)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes %s, %s", lt_dtype_name(a->dtype),
                           lt_dtype_name(b->dtype));
    mm_shape s;
    LT_TRY(mm_setup(ev, n, a, b, &s));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, a->dtype, s.rank, s.dims, &y));
    if (y->numel == 0) return LT_OK;
    lt_status st = LT_OK;
    if (a->dtype == LT_DOUBLE) {
        const double *A = a->data, *B = b->data;
        double *C = y->data;
        MM_FOR_BATCH(&s, nn_gemm_f64(s.M, s.N, s.K, A + aoff, s.K, 1, B + boff, s.N, C + coff, s.N, false));
    } else if (nn_is_float(a->dtype)) {
        const float *A, *B;
        float *ao = NULL, *bo = NULL, *C = y->data, *co = NULL;
        st = nn_f32_view(ev, n, a, &A, &ao);
        if (!st) st = nn_f32_view(ev, n, b, &B, &bo);
        if (!st && y->dtype != LT_FLOAT && !(C = co = nn_alloc(ev, n, y->numel, sizeof(float), "the output")))
            st = LT_ERR_NOMEM;
        if (!st) {
            MM_FOR_BATCH(&s, nn_gemm_f32(s.M, s.N, s.K, A + aoff, s.K, 1, B + boff, s.N, C + coff, s.N, false));
            if (co) nn_store_f32(y, co);
        }
        lt_mem_free(ao);
        lt_mem_free(bo);
        lt_mem_free(co);
    } else {
        uint64_t *A = NULL, *B = NULL, *C = NULL;
        st = nn_u64_copy(ev, n, a, &A);
        if (!st) st = nn_u64_copy(ev, n, b, &B);
        if (!st && !(C = nn_alloc(ev, n, y->numel, sizeof(uint64_t), "the output"))) st = LT_ERR_NOMEM;
        if (!st) {
            MM_FOR_BATCH(&s, nn_gemm_u64(s.M, s.N, s.K, A + aoff, s.K, 1, B + boff, s.N, C + coff, s.N, false));
            for (int64_t i = 0; i < y->numel; i++) lt_store_u64(y->data, y->dtype, i, C[i]);
        }
        lt_mem_free(A);
        lt_mem_free(B);
        lt_mem_free(C);
    }
    return st;
}

/* ---- shape inference with symbolic dims ---- */

static bool dim_same(lt_dim a, lt_dim b) {
    if (a.value >= 0 || b.value >= 0) return a.value == b.value;
    return a.param && b.param && strcmp(a.param, b.param) == 0;
}

static lt_status mm_infer(lt_infer *ic, lt_node *n, int ai, int bi, lt_dtype dt) {
    const lt_type *ta = lt_infer_in(n, ai), *tb = lt_infer_in(n, bi);
    int ar, br;
    int64_t ad[LT_MAX_RANK], bd[LT_MAX_RANK];
    if (!nn_in_shape(n, ai, &ar, ad) || !nn_in_shape(n, bi, &br, bd)) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    LT_TRY(mm_check(ic->ctx, n, ar, ad, br, bd));
    if (!ta->dims || !tb->dims) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int abr = ar > 2 ? ar - 2 : 0, bbr = br > 2 ? br - 2 : 0, r = abr > bbr ? abr : bbr, o = 0;
    lt_dim od[LT_MAX_RANK];
    for (int d = 0; d < r; d++) {
        int ad = d - (r - abr), bd = d - (r - bbr);
        lt_dim av = ad >= 0 ? ta->dims[ad] : (lt_dim){1, NULL}, bv = bd >= 0 ? tb->dims[bd] : (lt_dim){1, NULL};
        lt_dim v;
        if (av.value == 1) v = bv;
        else if (bv.value == 1 || dim_same(av, bv)) v = av;
        else if (av.value >= 0 && bv.value >= 0)
            return lt_infer_error(ic, n, "batch dims %lld and %lld cannot be broadcast", (long long)av.value,
                                  (long long)bv.value);
        else v = av.value > 1 ? av : bv.value > 1 ? bv : (lt_dim){-1, NULL};
        od[o++] = v;
    }
    if (ar > 1) od[o++] = ta->dims[ar - 2];
    if (br > 1) od[o++] = tb->dims[br - 1];
    return lt_infer_set(ic, n, 0, dt, o, od);
}

lt_status nn_infer_MatMul(lt_infer *ic, lt_node *n) { return mm_infer(ic, n, 0, 1, nn_in_dtype(n, 0)); }

/* ---- MatMulInteger / QLinearMatMul ---- */

/* The rules of MatMulInteger / QLinearMatMul beyond mm_check, shared by eval and shape inference:
 * integer operands of at most 16 bits (adt, bdt; LT_UNDEFINED: unknown), and each zero point (zdt
 * its dtype, znumel its element count, -1 unknown) an integer scalar or one per row (M, for A) or
 * column (N, for B) of `count` (-1 unknown). */
static lt_status mmi_dtypes_check(lt_ctx *ctx, const lt_node *n, lt_dtype adt, lt_dtype bdt) {
    bool ok_a = adt == LT_UNDEFINED || (lt_dtype_is_int(adt) && lt_dtype_size(adt) <= 2);
    bool ok_b = bdt == LT_UNDEFINED || (lt_dtype_is_int(bdt) && lt_dtype_size(bdt) <= 2);
    if (!ok_a || !ok_b)
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "unsupported dtypes %s, %s", lt_dtype_name(adt),
                             lt_dtype_name(bdt));
    return LT_OK;
}
static lt_status mmi_zp_check(lt_ctx *ctx, const lt_node *n, lt_dtype zdt, int64_t znumel, int64_t count,
                              const char *what) {
    if ((zdt != LT_UNDEFINED && !lt_dtype_is_int(zdt)) || (znumel >= 0 && count >= 0 && znumel != 1 && znumel != count))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be an integer scalar or have %lld elements", what,
                             (long long)count);
    return LT_OK;
}

/* Integer operands minus zero points: zp per tensor (1 element), per row (M, for A) or per column
 * (N, for B); the element's row is (i / K) % M, its column i % N. */
static lt_status sub_zp(lt_eval *ev, const lt_node *n, const lt_tensor *t, const lt_tensor *zp, bool rows,
                        int64_t M, int64_t K, int64_t N, const char *what, uint64_t **out) {
    if (zp) LT_TRY(mmi_zp_check(ev->ctx, n, zp->dtype, zp->numel, rows ? M : N, what));
    LT_TRY(nn_u64_copy(ev, n, t, out));
    if (!zp) return LT_OK;
    uint64_t *v = *out;
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t j = zp->numel == 1 ? 0 : rows ? (i / K) % M : i % N;
        v[i] -= (uint64_t)lt_load_i64(zp->data, zp->dtype, j);
    }
    return LT_OK;
}

/* acc = (a - azp) @ (b - bzp) in wrapping 64-bit arithmetic. */
static lt_status int_matmul(lt_eval *ev, const lt_node *n, const lt_tensor *a, const lt_tensor *azp,
                            const lt_tensor *b, const lt_tensor *bzp, mm_shape *s, uint64_t **acc) {
    LT_TRY(mmi_dtypes_check(ev->ctx, n, a->dtype, b->dtype));
    LT_TRY(mm_setup(ev, n, a, b, s));
    int64_t total;
    if (!lt_mul_i64(s->batch * s->M, s->N, &total)) return lt_op_error(ev, n, LT_ERR_NOMEM, "output too large");
    uint64_t *A = NULL, *B = NULL, *C = NULL;
    lt_status st = sub_zp(ev, n, a, azp, true, s->M, s->K, s->N, "a_zero_point", &A);
    if (!st) st = sub_zp(ev, n, b, bzp, false, s->M, s->K, s->N, "b_zero_point", &B);
    if (!st && !(C = nn_alloc(ev, n, total, sizeof(uint64_t), "the accumulator"))) st = LT_ERR_NOMEM;
    if (!st) MM_FOR_BATCH(s, nn_gemm_u64(s->M, s->N, s->K, A + aoff, s->K, 1, B + boff, s->N, C + coff, s->N, false));
    lt_mem_free(A);
    lt_mem_free(B);
    if (st) {
        lt_mem_free(C);
        return st;
    }
    *acc = C;
    return LT_OK;
}

lt_status nn_eval_MatMulInteger(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *a, *b, *azp, *bzp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &a));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &b));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &azp));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &bzp));
    mm_shape s;
    uint64_t *acc;
    LT_TRY(int_matmul(ev, n, a, azp, b, bzp, &s, &acc));
    lt_tensor *y;
    lt_status st = lt_out_new(ev, n, out, 0, LT_INT32, s.rank, s.dims, &y);
    if (!st) {
        int32_t *yd = y->data;
        for (int64_t i = 0; i < y->numel; i++) yd[i] = (int32_t)(uint32_t)acc[i];
    }
    lt_mem_free(acc);
    return st;
}

/* Zero point i of a MatMulInteger: its dtype and element count from its type (-1: unknown). */
static void zp_type(const lt_node *n, int i, lt_dtype *dt, int64_t *numel) {
    int r;
    int64_t d[LT_MAX_RANK];
    *dt = LT_UNDEFINED, *numel = -1;
    if (!lt_infer_in(n, i)) return;
    *dt = nn_in_dtype(n, i);
    if (!nn_in_shape(n, i, &r, d)) return;
    int64_t c = 1;
    for (int k = 0; k < r; k++) {
        if (d[k] < 0) return;
        c *= d[k];
    }
    *numel = c;
}

/* The eval hook's rules: operand dtypes, matmul shapes, zero points (a scalar, or one per row of A
 * (M) / column of B (N)). */
lt_status nn_infer_MatMulInteger(lt_infer *ic, lt_node *n) {
    lt_dtype adt = lt_infer_in(n, 0) ? nn_in_dtype(n, 0) : LT_UNDEFINED;
    lt_dtype bdt = lt_infer_in(n, 1) ? nn_in_dtype(n, 1) : LT_UNDEFINED;
    LT_TRY(mmi_dtypes_check(ic->ctx, n, adt, bdt));
    int ar = -1, br = -1;
    int64_t ad[LT_MAX_RANK], bd[LT_MAX_RANK];
    int64_t M = -1, N = -1;
    if (nn_in_shape(n, 0, &ar, ad) && ar >= 1) M = ar == 1 ? 1 : ad[ar - 2];
    if (nn_in_shape(n, 1, &br, bd) && br >= 1) N = br == 1 ? 1 : bd[br - 1];
    LT_TRY(mm_infer(ic, n, 0, 1, LT_INT32));
    for (int i = 2; i < 4 && i < n->n_in; i++) {
        lt_dtype zdt;
        int64_t zn;
        zp_type(n, i, &zdt, &zn);
        if (n->in[i]) LT_TRY(mmi_zp_check(ic->ctx, n, zdt, zn, i == 2 ? M : N, i == 2 ? "a_zero_point" : "b_zero_point"));
    }
    return LT_OK;
}

/* The dtype numpy computes a product of two float scalars in. */
static lt_dtype promote_float(lt_dtype a, lt_dtype b) {
    if (a == b) return a;
    if (a == LT_DOUBLE || b == LT_DOUBLE) return LT_DOUBLE;
    return LT_FLOAT;
}

lt_status nn_eval_QLinearMatMul(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *a, *as, *azp, *b, *bs, *bzp, *ys, *yzp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &a));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &as));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &azp));
    LT_TRY(lt_in_tensor(ev, n, in, 3, &b));
    LT_TRY(lt_in_tensor(ev, n, in, 4, &bs));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 5, &bzp));
    LT_TRY(lt_in_tensor(ev, n, in, 6, &ys));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 7, &yzp));
    if (!nn_is_float(as->dtype) || !nn_is_float(bs->dtype) || !nn_is_float(ys->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "scales must be floating point");
    lt_dtype ydt = yzp ? yzp->dtype : a->dtype;
    if (ydt != LT_INT8 && ydt != LT_UINT8)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported output dtype %s", lt_dtype_name(ydt));
    mm_shape s;
    uint64_t *acc;
    LT_TRY(int_matmul(ev, n, a, azp, b, bzp, &s, &acc));
    lt_status st = LT_OK;
    if (as->numel != 1 && as->numel != s.M) st = lt_op_error(ev, n, LT_ERR_INVALID, "a_scale must have 1 or M elements");
    else if (bs->numel != 1 && bs->numel != s.N)
        st = lt_op_error(ev, n, LT_ERR_INVALID, "b_scale must have 1 or N elements");
    else if (ys->numel != 1 && ys->numel != s.N)
        st = lt_op_error(ev, n, LT_ERR_INVALID, "y_scale must have 1 or N elements");
    else if (yzp && yzp->numel != 1 && yzp->numel != s.N)
        st = lt_op_error(ev, n, LT_ERR_INVALID, "y_zero_point must have 1 or N elements");
    lt_tensor *y;
    if (!st) st = lt_out_new(ev, n, out, 0, ydt, s.rank, s.dims, &y);
    if (!st) {
        lt_dtype pd = promote_float(as->dtype, bs->dtype), qd = promote_float(pd, ys->dtype);
        double lo = ydt == LT_INT8 ? -128 : 0, hi = ydt == LT_INT8 ? 127 : 255;
        for (int64_t i = 0; i < y->numel; i++) {
            int64_t col = i % s.N, row = (i / s.N) % s.M;
            double av = lt_load_f64(as->data, as->dtype, as->numel == 1 ? 0 : row);
            double bv = lt_load_f64(bs->data, bs->dtype, bs->numel == 1 ? 0 : col);
            double yv = lt_load_f64(ys->data, ys->dtype, ys->numel == 1 ? 0 : col);
            double mult = nn_round_to(qd, nn_round_to(pd, av * bv) / yv);
            double z = yzp ? (double)lt_load_i64(yzp->data, yzp->dtype, yzp->numel == 1 ? 0 : col) : 0;
            double r = rint((double)(int32_t)(uint32_t)acc[i] * mult + z);
            if (r != r) r = lo;
            r = r < lo ? lo : r > hi ? hi : r;
            lt_store_i64(y->data, ydt, i, (int64_t)r);
        }
    }
    lt_mem_free(acc);
    return st;
}

lt_status nn_infer_QLinearMatMul(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 7);
    if (dt == LT_UNDEFINED) dt = nn_in_dtype(n, 0);
    return mm_infer(ic, n, 0, 3, dt);
}

/* ---------------------------------------------------------------------------------------------- */
/* Gemm                                                                                             */

/* The rules of Gemm on A, B (2-D; [M, K] and [K, N] after transA / transB) and C (cr < 0: absent or
 * unknown; rank <= 2, unidirectionally broadcastable to [M, N]). Dims may be -1 (unknown, shape
 * inference). Shape inference and eval both call it, so every backend reports the same error. */
static lt_status gemm_check(lt_ctx *ctx, const lt_node *n, int ar, const int64_t *ad, int br, const int64_t *bd,
                            int cr, const int64_t *cd) {
    if (ar != 2 || br != 2)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "A and B must be 2-D (got rank %d and %d)", ar, br);
    bool ta = lt_attr_int(n, "transA", 0) != 0, tb = lt_attr_int(n, "transB", 0) != 0;
    int64_t M = ad[ta ? 1 : 0], K = ad[ta ? 0 : 1], Kb = bd[tb ? 1 : 0], N = bd[tb ? 0 : 1];
    if (K >= 0 && Kb >= 0 && K != Kb)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "inner dimensions %lld and %lld differ", (long long)K,
                             (long long)Kb);
    if (cr < 0) return LT_OK;
    if (cr > 2) return lt_node_error(ctx, n, LT_ERR_INVALID, "C must have rank <= 2");
    int64_t c0 = cr == 2 ? cd[0] : 1, c1 = cr >= 1 ? cd[cr - 1] : 1;
    if ((c0 >= 0 && M >= 0 && c0 != 1 && c0 != M) || (c1 >= 0 && N >= 0 && c1 != 1 && c1 != N))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "C [%lld, %lld] cannot be broadcast to [%lld, %lld]",
                             (long long)c0, (long long)c1, (long long)M, (long long)N);
    return LT_OK;
}

lt_status nn_eval_Gemm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *a, *b, *c;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &a));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &b));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &c));
    lt_dtype dt = a->dtype;
    if (!mm_dtype_ok(dt) || b->dtype != dt || (c && c->dtype != dt))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported or mismatched dtypes (A is %s)", lt_dtype_name(dt));
    LT_TRY(gemm_check(ev->ctx, n, a->rank, a->dims, b->rank, b->dims, c ? c->rank : -1, c ? c->dims : NULL));
    bool ta = lt_attr_int(n, "transA", 0) != 0, tb = lt_attr_int(n, "transB", 0) != 0;
    double alpha = lt_attr_float(n, "alpha", 1.0f), beta = lt_attr_float(n, "beta", 1.0f);
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t N = tb ? b->dims[0] : b->dims[1];
    int64_t cs0 = 0, cs1 = 0; /* strides of C broadcast to [M, N] */
    if (c && beta != 0) {
        int64_t c0 = c->rank == 2 ? c->dims[0] : 1, c1 = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        cs0 = c0 == 1 ? 0 : c1;
        cs1 = c1 == 1 ? 0 : 1;
    } else {
        c = NULL;
    }
    int64_t dims[2] = {M, N};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, 2, dims, &y));
    if (y->numel == 0) return LT_OK;
    /* A element (i,k) at A[i*ars + k*acs] */
    int64_t ars = ta ? 1 : K, acs = ta ? M : 1;
    lt_status st = LT_OK;
    if (nn_is_float(dt) && dt != LT_DOUBLE) {
        const float *A, *B, *Cc = NULL;
        float *ao = NULL, *bo = NULL, *co = NULL, *Y = y->data, *yo = NULL, *bt = NULL;
        st = nn_f32_view(ev, n, a, &A, &ao);
        if (!st) st = nn_f32_view(ev, n, b, &B, &bo);
        if (!st && c) st = nn_f32_view(ev, n, c, &Cc, &co);
        if (!st && dt != LT_FLOAT && !(Y = yo = nn_alloc(ev, n, y->numel, sizeof(float), "the output")))
            st = LT_ERR_NOMEM;
        /* transB: transpose B to [K, N] for the GEMM kernel when A is transposed too or there are
         * many rows and B is not huge; otherwise dot products of rows of A and B, B in cached blocks */
        if (!st && tb && (ta || (M > 8 && K * N <= ((int64_t)1 << 24)))) {
            if (!(bt = nn_alloc(ev, n, K * N, sizeof(float), "transposed B"))) st = LT_ERR_NOMEM;
            else
                for (int64_t j = 0; j < N; j++)
                    for (int64_t k = 0; k < K; k++) bt[k * N + j] = B[j * K + k];
        }
        if (!st) {
            if (tb && !bt) {
                int64_t nb = K > 0 ? (((int64_t)1 << 16) / K) + 1 : N; /* ~256 KiB of B rows per block */
                for (int64_t j0 = 0; j0 < N; j0 += nb)
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t j = j0; j < N && j < j0 + nb; j++)
                            Y[i * N + j] = nn_dot_f32(K, A + i * K, B + j * K);
            } else {
                nn_gemm_f32(M, N, K, A, ars, acs, bt ? bt : B, N, Y, N, false);
            }
            /* numpy's order and rounding: round(round(round(AB) * alpha) + round(C * beta)) in dt */
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double v = nn_round_to(dt, Y[i * N + j]);
                    if (alpha != 1.0) v = nn_round_to(dt, v * alpha);
                    if (Cc) v = nn_round_to(dt, v + nn_round_to(dt, Cc[i * cs0 + j * cs1] * beta));
                    Y[i * N + j] = (float)v;
                }
            if (yo) nn_store_f32(y, yo);
        }
        lt_mem_free(ao);
        lt_mem_free(bo);
        lt_mem_free(co);
        lt_mem_free(yo);
        lt_mem_free(bt);
    } else if (dt == LT_DOUBLE) {
        const double *A = a->data, *B = b->data, *Cc = c ? c->data : NULL;
        double *Y = y->data, *bt = NULL;
        if (tb) {
            if (!(bt = nn_alloc(ev, n, K * N, sizeof(double), "transposed B"))) return LT_ERR_NOMEM;
            for (int64_t j = 0; j < N; j++)
                for (int64_t k = 0; k < K; k++) bt[k * N + j] = B[j * K + k];
        }
        nn_gemm_f64(M, N, K, A, ars, acs, bt ? bt : B, N, Y, N, false);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double v = Y[i * N + j] * alpha;
                if (Cc) v += Cc[i * cs0 + j * cs1] * beta;
                Y[i * N + j] = v;
            }
        lt_mem_free(bt);
    } else {
        uint64_t *A = NULL, *B = NULL, *Y = NULL, *bt = NULL;
        st = nn_u64_copy(ev, n, a, &A);
        if (!st) st = nn_u64_copy(ev, n, b, &B);
        if (!st && !(Y = nn_alloc(ev, n, y->numel, sizeof(uint64_t), "the accumulator"))) st = LT_ERR_NOMEM;
        if (!st && tb) {
            if (!(bt = nn_alloc(ev, n, K * N, sizeof(uint64_t), "transposed B"))) st = LT_ERR_NOMEM;
            else
                for (int64_t j = 0; j < N; j++)
                    for (int64_t k = 0; k < K; k++) bt[k * N + j] = B[j * K + k];
        }
        if (!st) {
            nn_gemm_u64(M, N, K, A, ars, acs, bt ? bt : B, N, Y, N, false);
            bool uns = lt_dtype_get(dt)->cls == LT_DC_UINT;
            bool exact = alpha == 1.0 && (!c || beta == 1.0);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t o = i * N + j;
                    if (exact) {
                        uint64_t v = Y[o];
                        if (c) v += uns ? lt_load_u64(c->data, dt, i * cs0 + j * cs1)
                                        : (uint64_t)lt_load_i64(c->data, dt, i * cs0 + j * cs1);
                        lt_store_u64(y->data, dt, o, v);
                    } else {
                        double v = (uns ? (double)Y[o] : (double)(int64_t)Y[o]) * alpha;
                        if (c) v += lt_load_f64(c->data, dt, i * cs0 + j * cs1) * beta;
                        lt_store_f64(y->data, dt, o, v);
                    }
                }
        }
        lt_mem_free(A);
        lt_mem_free(B);
        lt_mem_free(Y);
        lt_mem_free(bt);
    }
    return st;
}

lt_status nn_infer_Gemm(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    int ar, br, cr = -1;
    int64_t ad[LT_MAX_RANK], bd[LT_MAX_RANK], cd[LT_MAX_RANK];
    if (!nn_in_shape(n, 0, &ar, ad) || !nn_in_shape(n, 1, &br, bd)) return lt_infer_set(ic, n, 0, dt, 2, NULL);
    if (!nn_in_shape(n, 2, &cr, cd)) cr = -1;
    LT_TRY(gemm_check(ic->ctx, n, ar, ad, br, bd, cr, cd));
    bool transA = lt_attr_int(n, "transA", 0) != 0, transB = lt_attr_int(n, "transB", 0) != 0;
    lt_dim od[2] = {nn_in_dim(n, 0, transA ? 1 : 0), nn_in_dim(n, 1, transB ? 0 : 1)};
    return lt_infer_set(ic, n, 0, dt, 2, od);
}

/* ---------------------------------------------------------------------------------------------- */
/* Det                                                                                              */

lt_status nn_eval_Det(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (!nn_is_float(x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(x->dtype));
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
        char b[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "input %s is not a (batch of) square matrices",
                           lt_shape_str(x->rank, x->dims, b, sizeof b));
    }
    int64_t m = x->dims[x->rank - 1];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank - 2, x->dims, &y));
    double *xd, *lu;
    LT_TRY(nn_f64_copy(ev, n, x, &xd));
    if (!(lu = nn_alloc(ev, n, m * m, sizeof(double), "the LU factorization"))) {
        lt_mem_free(xd);
        return LT_ERR_NOMEM;
    }
    for (int64_t q = 0; q < y->numel; q++) {
        memcpy(lu, xd + q * m * m, (size_t)(m * m) * sizeof(double));
        double det = 1.0;
        for (int64_t c = 0; c < m && det != 0; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < m; r++)
                if (fabs(lu[r * m + c]) > fabs(lu[p * m + c])) p = r;
            if (lu[p * m + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (int64_t k = 0; k < m; k++) {
                    double t = lu[c * m + k];
                    lu[c * m + k] = lu[p * m + k];
                    lu[p * m + k] = t;
                }
                det = -det;
            }
            double piv = lu[c * m + c];
            det *= piv;
            for (int64_t r = c + 1; r < m; r++) {
                double f = lu[r * m + c] / piv;
                for (int64_t k = c + 1; k < m; k++) lu[r * m + k] -= f * lu[c * m + k];
            }
        }
        lt_store_f64(y->data, y->dtype, q, det);
    }
    lt_mem_free(xd);
    lt_mem_free(lu);
    return LT_OK;
}

lt_status nn_infer_Det(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 2 || !t->dims) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    return lt_infer_set(ic, n, 0, dt, t->rank - 2, t->dims);
}
