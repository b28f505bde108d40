/* contrib.c — the contrib family (see contrib_impl.h): the family table, the generic infer and eval
 * hooks that drive each op's check and compute functions, and the helpers the op files share.
 * The ops: contrib_act.c (Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd), contrib_norm.c (the skip and
 * simplified layer norms), contrib_matmul.c (FusedMatMul, MatMulNBits), contrib_rotary.c
 * (RotaryEmbedding), contrib_attention.c (Attention, MultiHeadAttention, GroupQueryAttention),
 * contrib_quant.c (DynamicQuantizeMatMul, MatMulIntegerToFloat, EmbedLayerNormalization),
 * contrib_qlstm.c (DynamicQuantizeLSTM, with its own hooks). */
#include "contrib_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const lt_op_reg lt_ops_contrib[] = {
    {LT_OP_BiasAdd, ct_infer, ct_eval},
    {LT_OP_BiasGelu, ct_infer, ct_eval},
    {LT_OP_DynamicQuantizeLSTM, ct_qlstm_infer, ct_qlstm_eval},
    {LT_OP_DynamicQuantizeMatMul, ct_infer, ct_eval},
    {LT_OP_EmbedLayerNormalization, ct_infer, ct_eval},
    {LT_OP_FastGelu, ct_infer, ct_eval},
    {LT_OP_FusedMatMul, ct_infer, ct_eval},
    {LT_OP_GroupQueryAttention, ct_infer, ct_eval},
    {LT_OP_MatMulIntegerToFloat, ct_infer, ct_eval},
    {LT_OP_MatMulNBits, ct_infer, ct_eval},
    {LT_OP_MultiHeadAttention, ct_infer, ct_eval},
    {LT_OP_QuickGelu, ct_infer, ct_eval},
    {LT_OP_SimplifiedLayerNormalization, ct_infer, ct_eval},
    {LT_OP_SkipLayerNormalization, ct_infer, ct_eval},
    {LT_OP_SkipSimplifiedLayerNormalization, ct_infer, ct_eval},
    {LT_OP_MsAttention, ct_infer, ct_eval},
    {LT_OP_MsGelu, ct_infer, ct_eval},
    {LT_OP_MsRotaryEmbedding, ct_infer, ct_eval},
    {LT_OP_MsSimplifiedLayerNormalization, ct_infer, ct_eval},
    {0, NULL, NULL},
};

static const ct_op *find_op(int op) {
    const ct_op *const tables[] = {ct_ops_act, ct_ops_norm, ct_ops_matmul, ct_ops_rotary, ct_ops_attention,
                                      ct_ops_quant};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const ct_op *o = tables[t]; o->op; o++)
            if (o->op == op) return o;
    return NULL;
}

static lt_status arity(lt_ctx *ctx, const lt_node *n, const ct_op *o) {
    if (!o) return lt_node_error(ctx, n, LT_ERR_INTERNAL, "no contrib implementation");
    if (n->n_in > o->max_in || n->n_in > CT_MAX_IN)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "has %d inputs, at most %d allowed", n->n_in, o->max_in);
    if (n->n_out > CT_MAX_OUT) return lt_node_error(ctx, n, LT_ERR_INVALID, "has %d outputs, at most %d", n->n_out, CT_MAX_OUT);
    if (n->n_out < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "has no output");
    return LT_OK;
}

static lt_status required(lt_ctx *ctx, const lt_node *n, const ct_op *o, const ct_arg *in) {
    for (int i = 0; i < o->min_in; i++)
        if (!ct_present(&in[i])) return lt_node_error(ctx, n, LT_ERR_INVALID, "required input %d is missing", i);
    return LT_OK;
}

static void args_absent(ct_arg *in, ct_out *out) {
    for (int i = 0; i < CT_MAX_IN; i++) in[i] = (ct_arg){.rank = CT_ABSENT, .dt = LT_UNDEFINED};
    for (int i = 0; i < CT_MAX_OUT; i++) out[i] = (ct_out){.rank = CT_ABSENT, .dt = LT_UNDEFINED};
}

lt_status ct_infer(lt_infer *ic, lt_node *n) {
    const ct_op *o = find_op(n->op);
    LT_TRY(arity(ic->ctx, n, o));
    ct_arg in[CT_MAX_IN];
    ct_out out[CT_MAX_OUT];
    args_absent(in, out);
    bool unknown = false;
    for (int i = 0; i < n->n_in; i++) {
        const lt_type *t = lt_infer_in(n, i);
        if (!t) continue;
        if (t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK || (t->rank > 0 && !t->dims)) {
            in[i].rank = -1;
            unknown = true;
            in[i].dt = t->kind == LT_TK_TENSOR ? t->dtype : LT_UNDEFINED;
            continue;
        }
        in[i].rank = t->rank;
        in[i].dt = t->dtype;
        for (int k = 0; k < t->rank; k++) in[i].d[k] = t->dims[k].value >= 0 ? t->dims[k].value : -1;
        in[i].c = lt_infer_const(n, i);
    }
    LT_TRY(required(ic->ctx, n, o, in));
    if (unknown) { /* nothing to check yet: outputs of input 0's dtype, shapes unknown */
        for (int i = 0; i < n->n_out; i++) LT_TRY(lt_infer_set(ic, n, i, in[0].dt, -1, NULL));
        return LT_OK;
    }
    LT_TRY(o->check(ic->ctx, n, in, out));
    for (int i = 0; i < n->n_out; i++) {
        if (out[i].rank == CT_ABSENT) continue;
        LT_TRY(lt_infer_set_i64(ic, n, i, out[i].dt, out[i].rank, out[i].d));
    }
    return LT_OK;
}

static lt_status load(lt_eval *ev, const lt_node *n, int i, const lt_tensor *t, ct_arg *a) {
    lt_dclass c = lt_dtype_get(t->dtype)->cls;
    if (c != LT_DC_FLOAT && c != LT_DC_SINT && c != LT_DC_UINT && c != LT_DC_BOOL)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input %d has unsupported dtype %s", i, lt_dtype_name(t->dtype));
    a->rank = t->rank;
    for (int k = 0; k < t->rank; k++) a->d[k] = t->dims[k];
    a->dt = t->dtype;
    a->c = t;
    a->numel = t->numel;
    if (!(a->v = lt_mem_alloc((size_t)(t->numel ? t->numel : 1) * sizeof(double))))
        return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (input %d)", i);
    for (int64_t k = 0; k < t->numel; k++) a->v[k] = lt_load_f64(t->data, t->dtype, k);
    return LT_OK;
}

static lt_status eval_run(lt_eval *ev, const lt_node *n, const ct_op *o, lt_datum **in, lt_datum **out, ct_arg *a,
                          ct_out *r) {
    for (int i = 0; i < n->n_in; i++) {
        const lt_tensor *t;
        LT_TRY(lt_in_tensor_opt(ev, n, in, i, &t));
        if (t) LT_TRY(load(ev, n, i, t, &a[i]));
    }
    LT_TRY(required(ev->ctx, n, o, a));
    LT_TRY(o->check(ev->ctx, n, a, r));
    for (int i = 0; i < n->n_out; i++) {
        if (r[i].rank == CT_ABSENT) continue;
        if ((r[i].numel = ct_numel(r[i].rank, r[i].d)) < 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "output %d has no static size", i);
        if (!(r[i].v = lt_mem_calloc((size_t)(r[i].numel ? r[i].numel : 1), sizeof(double))))
            return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (output %d)", i);
    }
    LT_TRY(o->compute(ev, n, a, r));
    for (int i = 0; i < n->n_out; i++) {
        if (r[i].rank == CT_ABSENT) continue;
        lt_tensor *y;
        LT_TRY(lt_out_new(ev, n, out, i, r[i].dt, r[i].rank, r[i].d, &y));
        for (int64_t k = 0; k < y->numel; k++) lt_store_f64(y->data, y->dtype, k, r[i].v[k]);
    }
    return LT_OK;
}

lt_status ct_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const ct_op *o = find_op(n->op);
    LT_TRY(arity(ev->ctx, n, o));
    ct_arg a[CT_MAX_IN];
    ct_out r[CT_MAX_OUT];
    args_absent(a, r);
    lt_status s = eval_run(ev, n, o, in, out, a, r);
    for (int i = 0; i < CT_MAX_IN; i++) lt_mem_free(a[i].v);
    for (int i = 0; i < CT_MAX_OUT; i++) lt_mem_free(r[i].v);
    return s;
}

/* ---- helpers ---- */

bool ct_present(const ct_arg *a) { return a->rank != CT_ABSENT; }

bool ct_is_float(lt_dtype dt) {
    return dt == LT_FLOAT || dt == LT_FLOAT16 || dt == LT_BFLOAT16 || dt == LT_DOUBLE;
}

lt_status ct_want_float(lt_ctx *ctx, const lt_node *n, const ct_arg *a, lt_dtype like, const char *what) {
    if (a->dt == LT_UNDEFINED) return LT_OK;
    if (!ct_is_float(a->dt))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be float, float16, bfloat16 or double, not %s", what,
                             lt_dtype_name(a->dt));
    if (like != LT_UNDEFINED && a->dt != like)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s has dtype %s, expected %s", what, lt_dtype_name(a->dt),
                             lt_dtype_name(like));
    return LT_OK;
}

lt_status ct_want_rank(lt_ctx *ctx, const lt_node *n, const ct_arg *a, int r, const char *what) {
    if (a->rank >= 0 && a->rank != r)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must have rank %d, not %d", what, r, a->rank);
    return LT_OK;
}

lt_status ct_want_dim(lt_ctx *ctx, const lt_node *n, int64_t a, int64_t b, const char *what) {
    if (a >= 0 && b >= 0 && a != b)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s is %lld, expected %lld", what, (long long)a, (long long)b);
    return LT_OK;
}

lt_status ct_want_vec(lt_ctx *ctx, const lt_node *n, const ct_arg *a, int64_t len, const char *what) {
    if (a->rank != 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be 1-D, not of rank %d", what, a->rank);
    char buf[160];
    snprintf(buf, sizeof buf, "the length of %s", what);
    return ct_want_dim(ctx, n, a->d[0], len, buf);
}

void ct_out_set(ct_out *o, lt_dtype dt, int rank, const int64_t *d) {
    o->rank = rank;
    o->dt = dt;
    for (int k = 0; k < rank; k++) o->d[k] = d[k];
}

void ct_out_like(ct_out *o, const ct_arg *a, lt_dtype dt) { ct_out_set(o, dt, a->rank, a->d); }

int64_t ct_numel(int rank, const int64_t *d) {
    int64_t p = 1;
    for (int k = 0; k < rank; k++)
        if (d[k] < 0 || !lt_mul_i64(p, d[k], &p)) return -1;
    return p;
}

lt_status ct_attr_int(lt_ctx *ctx, const lt_node *n, const char *name, int64_t dflt, int64_t lo, int64_t hi,
                      int64_t *out) {
    int64_t v = lt_attr_int(n, name, dflt);
    if (v < lo || v > hi)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute %s = %lld is out of range [%lld, %lld]", name,
                             (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return LT_OK;
}

void ct_gemm(int64_t M, int64_t N, int64_t K, const double *A, const double *B, double *C) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
            C[i * N + j] = s;
        }
}

double ct_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }

double ct_gelu_tanh(double x) {
    const double k = 0.7978845608028654; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}
