/* expand_contrib.c — onnxruntime's com.microsoft ops (what its transformer optimizer and quantizer
 * emit) become standard ONNX ops that lathe compiles, so the patterns, folding and CSE that run after
 * see ordinary graphs. Each rewrite follows the op's reference (src/ops/contrib/, which documents
 * the semantics):
 *   Gelu / BiasGelu          Gelu(x [+ bias])                        (opset 20, approximate none)
 *   FastGelu                 Gelu(x [+ bias], approximate tanh)
 *   QuickGelu                x * Sigmoid(alpha * x)
 *   BiasAdd                  x + bias + skip
 *   FusedMatMul              alpha * MatMul(Transpose(A), Transpose(B)) (transposes as needed)
 *   SkipLayerNormalization   s = input + skip [+ bias]; LayerNormalization(s, gamma, beta)
 *   SkipSimplifiedLayerNorm. s = input + skip [+ bias]; RMSNormalization(s, gamma)       (opset 23)
 *   SimplifiedLayerNorm.     RMSNormalization(X, scale, axis, epsilon)
 *     optional mean / inv_std_var outputs: ReduceMean chains; input_skip_bias_sum: s
 *   MatMulNBits              MatMul(A, W) [+ bias] where W [K, N] is the packed weight dequantized
 *                            at compile time (lt_nbits_dequant, the op's own function) into a float
 *                            constant: the weight grows 8x (4 bits -> 32). A true int4 kernel is future
 *                            work. Non-constant B, scales or zero points are left to the interpreter.
 *   RotaryEmbedding          cos / sin rows gathered by constant positions (checked in range by the
 *                            op's check; positions given at run time leave the op to the interpreter),
 *                            the rotated dims sliced in halves (or in pairs through a [.., R/2, 2]
 *                            reshape), x1 c - x2 s and x2 c + x1 s concatenated back, the rest kept
 *   Attention / MultiHeadAttention / GroupQueryAttention: expand_contrib_attn.c
 *   DynamicQuantizeLSTM / DynamicQuantizeMatMul / MatMulIntegerToFloat / EmbedLayerNormalization:
 *                            expand_contrib_quant.c
 * Left alone (the interpreter runs them): inputs whose rank (norms, FusedMatMul) or shape (rotary,
 * attention) is not known yet, ops or attribute values the rewrite does not cover. Level -O1. It runs
 * in the simplification group (last): a round rewrites what that round's folding made static (a Reshape
 * whose shape came from Shape / Gather / Concat), and the next round's passes see the standard ops.
 */
#include "expand_contrib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ops/contrib/contrib_matmul.h"
#include "../ops/contrib/contrib_rotary.h"

/* ---- builder ---- */

static int opset_of(const char *op) {
    if (!strcmp(op, "Gelu")) return 20;
    if (!strcmp(op, "RMSNormalization")) return 23;
    return 17;
}

lt_status xc_node(xc *b, const char *op, int n_in, lt_value *const *in, int n_out, lt_node **out) {
    LT_TRY(lt_node_new(b->ctx, b->g, op, "", n_in, in, n_out, b->hint, b->at, out));
    (*out)->opset = opset_of(op);
    return LT_OK;
}

lt_status xc_done(xc *b, lt_node *n, lt_value **out) {
    LT_TRY(lt_node_infer(b->ctx, n));
    if (out) *out = n->out[0];
    return LT_OK;
}

lt_status xc_op(xc *b, const char *op, int n_in, lt_value *const *in, lt_value **out) {
    lt_node *n;
    LT_TRY(xc_node(b, op, n_in, in, 1, &n));
    return xc_done(b, n, out);
}

lt_status xc_op2(xc *b, const char *op, lt_value *x, lt_value *y, lt_value **out) {
    lt_value *in[2] = {x, y};
    return xc_op(b, op, 2, in, out);
}

lt_status xc_op_int(xc *b, const char *op, lt_value *x, const char *attr, int64_t v, lt_value **out) {
    lt_node *n;
    LT_TRY(xc_node(b, op, 1, &x, 1, &n));
    LT_TRY(lt_node_set_attr_int(b->ctx, n, attr, v));
    return xc_done(b, n, out);
}

lt_status xc_const(xc *b, lt_dtype dt, int rank, const int64_t *dims, const double *v, lt_value **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(b->ctx, dt, rank, dims, &t));
    for (int64_t i = 0; i < t->numel; i++) lt_store_f64(t->data, dt, i, v[i]);
    return lt_value_new_const(b->ctx, b->g, b->hint, t, out);
}

lt_status xc_scalar(xc *b, lt_dtype dt, double v, lt_value **out) { return xc_const(b, dt, 0, NULL, &v, out); }

lt_status xc_ints(xc *b, int n, const int64_t *v, lt_value **out) {
    lt_tensor *t;
    LT_TRY(lt_pu_tensor_i64(b->ctx, n, v, &t));
    return lt_value_new_const(b->ctx, b->g, b->hint, t, out);
}

lt_status xc_reshape(xc *b, lt_value *x, int rank, const int64_t *dims, lt_value **out) {
    lt_value *s;
    LT_TRY(xc_ints(b, rank, dims, &s));
    return xc_op2(b, "Reshape", x, s, out);
}

lt_status xc_transpose(xc *b, lt_value *x, int rank, const int *perm, lt_value **out) {
    int64_t p[LT_MAX_RANK];
    bool id = true;
    for (int k = 0; k < rank; k++) {
        p[k] = perm[k];
        id &= perm[k] == k;
    }
    if (id) {
        *out = x;
        return LT_OK;
    }
    lt_node *n;
    LT_TRY(xc_node(b, "Transpose", 1, &x, 1, &n));
    LT_TRY(lt_node_set_attr_ints(b->ctx, n, "perm", rank, p));
    return xc_done(b, n, out);
}

lt_status xc_slice(xc *b, lt_value *x, int64_t axis, int64_t start, int64_t end, lt_value **out) {
    lt_value *in[4];
    in[0] = x;
    LT_TRY(xc_ints(b, 1, &start, &in[1]));
    LT_TRY(xc_ints(b, 1, &end, &in[2]));
    LT_TRY(xc_ints(b, 1, &axis, &in[3]));
    return xc_op(b, "Slice", 4, in, out);
}

lt_status xc_concat(xc *b, int n, lt_value *const *in, int64_t axis, lt_value **out) {
    lt_node *c;
    LT_TRY(xc_node(b, "Concat", n, in, 1, &c));
    LT_TRY(lt_node_set_attr_int(b->ctx, c, "axis", axis));
    return xc_done(b, c, out);
}

lt_status xc_unsqueeze(xc *b, lt_value *x, int64_t axis, lt_value **out) {
    lt_value *ax;
    LT_TRY(xc_ints(b, 1, &axis, &ax));
    return xc_op2(b, "Unsqueeze", x, ax, out);
}

lt_status xc_mul_scalar(xc *b, lt_value *x, double v, lt_value **out) {
    if (v == 1.0) {
        *out = x;
        return LT_OK;
    }
    lt_value *c;
    LT_TRY(xc_scalar(b, lt_pu_dtype(x), v, &c));
    return xc_op2(b, "Mul", x, c, out);
}

lt_status xc_to_float(xc *b, lt_value *x, lt_value **out) {
    if (lt_pu_dtype(x) == LT_FLOAT) {
        *out = x;
        return LT_OK;
    }
    return xc_op_int(b, "Cast", x, "to", LT_FLOAT, out);
}

/* Output k of n becomes v (names kept). */
lt_status xc_forward(xc *b, lt_node *n, int k, lt_value *v, bool *changed) {
    if (k >= n->n_out || !n->out[k] || !v) return LT_OK;
    lt_pu_take_name(b->g, v, n->out[k]);
    return lt_pu_forward(b->ctx, b->g, n, k, v, changed);
}

bool xc_static(const lt_value *v, int *rank, int64_t *dims) {
    return v && lt_value_static_shape(v, rank, dims);
}

/* ---- activations ---- */

static lt_status gelu(xc *b, lt_value *x, const char *approx, lt_value **out) {
    lt_node *n;
    LT_TRY(xc_node(b, "Gelu", 1, &x, 1, &n));
    if (strcmp(approx, "none")) LT_TRY(lt_node_set_attr_string(b->ctx, n, "approximate", approx));
    return xc_done(b, n, out);
}

static lt_status rw_act(xc *b, lt_node *n, bool *changed) {
    lt_value *x = n->in[0], *y;
    if (n->n_in > 1 && n->in[1]) LT_TRY(xc_op2(b, "Add", x, n->in[1], &x));
    switch (n->op) {
    case LT_OP_FastGelu: LT_TRY(gelu(b, x, "tanh", &y)); break;
    case LT_OP_QuickGelu: {
        lt_value *s;
        LT_TRY(xc_mul_scalar(b, x, lt_attr_float(n, "alpha", 1.702f), &s));
        LT_TRY(xc_op(b, "Sigmoid", 1, &s, &s));
        LT_TRY(xc_op2(b, "Mul", x, s, &y));
        break;
    }
    case LT_OP_BiasAdd: LT_TRY(xc_op2(b, "Add", x, n->in[2], &y)); break;
    default: LT_TRY(gelu(b, x, "none", &y)); break; /* Gelu, BiasGelu */
    }
    return xc_forward(b, n, 0, y, changed);
}

/* ---- FusedMatMul ---- */

static lt_status rw_fused_matmul(xc *b, lt_node *n, bool *changed) {
    int ra, rb, pa[LT_MAX_RANK], pb[LT_MAX_RANK];
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!lt_pu_dims(n->in[0], &ra, da) || !lt_pu_dims(n->in[1], &rb, db)) return LT_OK; /* ranks suffice */
    lt_fused_matmul_perm(ra, lt_attr_int(n, "transBatchA", 0), lt_attr_int(n, "transA", 0), pa);
    lt_fused_matmul_perm(rb, lt_attr_int(n, "transBatchB", 0), lt_attr_int(n, "transB", 0), pb);
    lt_value *a, *bb, *y;
    LT_TRY(xc_transpose(b, n->in[0], ra, pa, &a));
    LT_TRY(xc_transpose(b, n->in[1], rb, pb, &bb));
    LT_TRY(xc_op2(b, "MatMul", a, bb, &y));
    LT_TRY(xc_mul_scalar(b, y, lt_attr_float(n, "alpha", 1.0f), &y));
    return xc_forward(b, n, 0, y, changed);
}

/* ---- layer norms ---- */

/* ReduceMean over axes [axis, rank), keepdims (opset 17: axes attribute). */
static lt_status mean_over(xc *b, lt_value *x, int axis, int rank, lt_value **out) {
    int64_t axes[LT_MAX_RANK];
    for (int k = axis; k < rank; k++) axes[k - axis] = k;
    lt_node *n;
    LT_TRY(xc_node(b, "ReduceMean", 1, &x, 1, &n));
    LT_TRY(lt_node_set_attr_ints(b->ctx, n, "axes", rank - axis, axes));
    return xc_done(b, n, out);
}

/* 1 / sqrt(mean(d * d) + eps) in float, d over axes [axis, rank). */
static lt_status inv_std(xc *b, lt_value *d, int axis, int rank, double eps, lt_value **out) {
    lt_value *sq, *m, *e;
    LT_TRY(xc_to_float(b, d, &d));
    LT_TRY(xc_op2(b, "Mul", d, d, &sq));
    LT_TRY(mean_over(b, sq, axis, rank, &m));
    LT_TRY(xc_scalar(b, LT_FLOAT, eps, &e));
    LT_TRY(xc_op2(b, "Add", m, e, &m));
    LT_TRY(xc_op(b, "Sqrt", 1, &m, &m));
    return xc_op(b, "Reciprocal", 1, &m, out);
}

static lt_status norm_node(xc *b, const char *op, lt_value *x, lt_value *scale, lt_value *bias, int axis, double eps,
                           lt_value **out) {
    lt_value *in[3] = {x, scale, bias};
    lt_node *n;
    LT_TRY(xc_node(b, op, bias ? 3 : 2, in, 1, &n));
    LT_TRY(lt_node_set_attr_int(b->ctx, n, "axis", axis));
    LT_TRY(lt_node_set_attr_float(b->ctx, n, "epsilon", (float)eps));
    return xc_done(b, n, out);
}

static bool wanted(const lt_node *n, int k) { return k < n->n_out && n->out[k]; }

static lt_status rw_skip_norm(xc *b, lt_node *n, bool *changed) {
    int rank;
    int64_t d[LT_MAX_RANK];
    if (!lt_pu_dims(n->in[0], &rank, d)) return LT_OK; /* the rank suffices */
    bool simplified = n->op == LT_OP_SkipSimplifiedLayerNormalization;
    lt_value *bias = simplified ? (n->n_in > 3 ? n->in[3] : NULL) : (n->n_in > 4 ? n->in[4] : NULL);
    lt_value *beta = simplified ? NULL : (n->n_in > 3 ? n->in[3] : NULL);
    double eps = lt_attr_float(n, "epsilon", 1e-12f);
    lt_value *s, *y, *mean = NULL, *inv = NULL;
    LT_TRY(xc_op2(b, "Add", n->in[0], n->in[1], &s));
    if (bias) LT_TRY(xc_op2(b, "Add", s, bias, &s));
    LT_TRY(norm_node(b, simplified ? "RMSNormalization" : "LayerNormalization", s, n->in[2], beta, -1, eps, &y));
    if (wanted(n, 1) || (wanted(n, 2) && !simplified)) {
        lt_value *sf;
        LT_TRY(xc_to_float(b, s, &sf));
        LT_TRY(mean_over(b, sf, rank - 1, rank, &mean));
    }
    if (wanted(n, 2)) {
        lt_value *dev = s;
        if (!simplified) {
            LT_TRY(xc_to_float(b, s, &dev));
            LT_TRY(xc_op2(b, "Sub", dev, mean, &dev));
        }
        LT_TRY(inv_std(b, dev, rank - 1, rank, eps, &inv));
    }
    LT_TRY(xc_forward(b, n, 0, y, changed));
    LT_TRY(xc_forward(b, n, 1, mean, changed));
    LT_TRY(xc_forward(b, n, 2, inv, changed));
    return xc_forward(b, n, 3, s, changed);
}

static lt_status rw_simplified_norm(xc *b, lt_node *n, bool *changed) {
    int rank, axis;
    int64_t d[LT_MAX_RANK];
    if (!lt_pu_dims(n->in[0], &rank, d)) return LT_OK;
    if (lt_node_axis(b->ctx, n, lt_attr_int(n, "axis", -1), rank, &axis)) return LT_ERR_INVALID;
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_value *y, *inv = NULL;
    LT_TRY(norm_node(b, "RMSNormalization", n->in[0], n->in[1], NULL, axis, eps, &y));
    if (wanted(n, 1)) LT_TRY(inv_std(b, n->in[0], axis, rank, eps, &inv));
    LT_TRY(xc_forward(b, n, 0, y, changed));
    return xc_forward(b, n, 1, inv, changed);
}

/* ---- MatMulNBits ---- */

static lt_status rw_nbits(xc *b, lt_node *n, bool *changed) {
    const lt_tensor *B = lt_value_const(n->in[1]), *sc = lt_value_const(n->in[2]);
    const lt_tensor *zp = n->n_in > 3 && n->in[3] ? lt_value_const(n->in[3]) : NULL;
    lt_dtype dt = lt_pu_dtype(n->in[0]);
    if (!B || !sc || (n->n_in > 3 && n->in[3] && !zp) || (n->n_in > 4 && n->in[4]) || dt == LT_UNDEFINED) return LT_OK;
    lt_nbits p;
    LT_TRY(lt_nbits_attrs(b->ctx, n, &p));
    double *w = lt_mem_calloc((size_t)(p.K * p.N), sizeof *w);
    if (!w) return lt_error(b->ctx, LT_ERR_NOMEM, "out of memory (dequantized MatMulNBits weight)");
    lt_value *wv = NULL, *y;
    int64_t wd[2] = {p.K, p.N};
    lt_status s = lt_nbits_dequant(b->ctx, n, &p, B, sc, zp, w);
    if (!s) s = xc_const(b, dt, 2, wd, w, &wv);
    lt_mem_free(w);
    LT_TRY(s);
    LT_TRY(xc_op2(b, "MatMul", n->in[0], wv, &y));
    if (n->n_in > 5 && n->in[5]) LT_TRY(xc_op2(b, "Add", y, n->in[5], &y));
    return xc_forward(b, n, 0, y, changed);
}

/* ---- RotaryEmbedding ---- */

/* cos or sin rows for the positions: [S, R/2] (positions p0 + s) or [B, S, R/2]. */
static lt_status rope_rows(xc *b, lt_value *cache, lt_value *pos, const lt_rotary *g, lt_value **out) {
    const lt_tensor *pc = lt_value_const(pos);
    int64_t S = g->S;
    lt_value *idx;
    if (!g->per_token) {
        int64_t *ids = lt_mem_alloc((size_t)(S ? S : 1) * sizeof *ids);
        if (!ids) return lt_error(b->ctx, LT_ERR_NOMEM, "out of memory");
        for (int64_t s = 0; s < S; s++) ids[s] = s + (pc ? lt_load_i64(pc->data, pc->dtype, 0) : 0);
        lt_status st = xc_ints(b, (int)S, ids, &idx);
        lt_mem_free(ids);
        LT_TRY(st);
        if (!pc) LT_TRY(xc_op2(b, "Add", idx, pos, &idx)); /* arange(S) + p0 */
    } else {
        idx = pos;
    }
    lt_node *gn;
    lt_value *in[2] = {cache, idx};
    LT_TRY(xc_node(b, "Gather", 2, in, 1, &gn));
    LT_TRY(lt_node_set_attr_int(b->ctx, gn, "axis", 0));
    return xc_done(b, gn, out);
}

/* x [.., R] rotated by c, s (broadcast against x's leading dims, last dim R/2). */
static lt_status xc_rotate(xc *b, lt_value *x, int rank, const int64_t *xd, int64_t R, bool interleaved, lt_value *c,
                    lt_value *s, lt_value **out) {
    int64_t h = R / 2;
    lt_value *x1, *x2, *a, *t, *o1, *o2;
    int64_t pd[LT_MAX_RANK + 1];
    if (interleaved) { /* [.., h, 2]: pairs on the last axis, cos / sin get a trailing 1 */
        for (int k = 0; k < rank - 1; k++) pd[k] = xd[k];
        pd[rank - 1] = h;
        pd[rank] = 2;
        LT_TRY(xc_reshape(b, x, rank + 1, pd, &x));
        LT_TRY(xc_unsqueeze(b, c, -1, &c));
        LT_TRY(xc_unsqueeze(b, s, -1, &s));
        LT_TRY(xc_slice(b, x, -1, 0, 1, &x1));
        LT_TRY(xc_slice(b, x, -1, 1, 2, &x2));
    } else {
        LT_TRY(xc_slice(b, x, -1, 0, h, &x1));
        LT_TRY(xc_slice(b, x, -1, h, R, &x2));
    }
    LT_TRY(xc_op2(b, "Mul", x1, c, &a));
    LT_TRY(xc_op2(b, "Mul", x2, s, &t));
    LT_TRY(xc_op2(b, "Sub", a, t, &o1));
    LT_TRY(xc_op2(b, "Mul", x2, c, &a));
    LT_TRY(xc_op2(b, "Mul", x1, s, &t));
    LT_TRY(xc_op2(b, "Add", a, t, &o2));
    lt_value *parts[2] = {o1, o2};
    LT_TRY(xc_concat(b, 2, parts, -1, out));
    if (interleaved) {
        for (int k = 0; k < rank - 1; k++) pd[k] = xd[k];
        pd[rank - 1] = R;
        LT_TRY(xc_reshape(b, *out, rank, pd, out));
    }
    return LT_OK;
}

/* x [.., H]: its first R dims rotated, the rest kept. */
lt_status xc_rotate_head(xc *b, lt_value *x, int rank, const int64_t *xd, int64_t R, bool interleaved, lt_value *c,
                         lt_value *s, lt_value **out) {
    int64_t H = xd[rank - 1], rd[LT_MAX_RANK];
    if (R == H) return xc_rotate(b, x, rank, xd, R, interleaved, c, s, out);
    lt_value *head, *tail;
    memcpy(rd, xd, sizeof rd);
    rd[rank - 1] = R;
    LT_TRY(xc_slice(b, x, -1, 0, R, &head));
    LT_TRY(xc_slice(b, x, -1, R, H, &tail));
    LT_TRY(xc_rotate(b, head, rank, rd, R, interleaved, c, s, &head));
    lt_value *parts[2] = {head, tail};
    return xc_concat(b, 2, parts, -1, out);
}

static lt_status rw_rotary(xc *b, lt_node *n, bool *changed) {
    int rank, pr, cr, sr;
    int64_t d[LT_MAX_RANK], pd[LT_MAX_RANK], cd[LT_MAX_RANK], sd[LT_MAX_RANK];
    if (!xc_static(n->in[0], &rank, d) || !xc_static(n->in[1], &pr, pd) || !xc_static(n->in[2], &cr, cd) ||
        !xc_static(n->in[3], &sr, sd) || cr != 2 || sr != 2)
        return LT_OK;
    if (!lt_value_is_const(n->in[1])) return LT_OK; /* positions at run time: the op checks their range */
    lt_rotary g;
    LT_TRY(lt_rotary_geom(b->ctx, n, rank, d, pr, pd, cd, sd, &g));
    lt_value *c, *s, *x = n->in[0], *y;
    LT_TRY(rope_rows(b, n->in[2], n->in[1], &g, &c));
    LT_TRY(rope_rows(b, n->in[3], n->in[1], &g, &s));
    /* x as [B, S, N, H] (3-D input) or [B, N, S, H]; the rows get a heads axis of 1 */
    int64_t xd[4] = {g.B, g.bnsh ? g.N : g.S, g.bnsh ? g.S : g.N, g.H};
    int heads_axis = g.bnsh ? (g.per_token ? 1 : 0) : (g.per_token ? 2 : 1);
    LT_TRY(xc_unsqueeze(b, c, heads_axis, &c));
    LT_TRY(xc_unsqueeze(b, s, heads_axis, &s));
    if (!g.bnsh) LT_TRY(xc_reshape(b, x, 4, xd, &x));
    LT_TRY(xc_rotate_head(b, x, 4, xd, g.R, g.interleaved, c, s, &y));
    if (!g.bnsh) LT_TRY(xc_reshape(b, y, rank, d, &y));
    return xc_forward(b, n, 0, y, changed);
}

/* ---- the pass ---- */

static bool is_contrib(const lt_node *n) { return !strcmp(lt_op_info_get(n->op)->family, "contrib"); }

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    xc b = {ctx, g, n, ""};
    snprintf(b.hint, sizeof b.hint, "%s", n->out[0] ? n->out[0]->name : n->op_type);
    if (!n->in[0]) return LT_OK;
    switch (n->op) {
    case LT_OP_MsGelu: case LT_OP_FastGelu: case LT_OP_BiasGelu: case LT_OP_QuickGelu: case LT_OP_BiasAdd:
        return rw_act(&b, n, changed);
    case LT_OP_FusedMatMul: return rw_fused_matmul(&b, n, changed);
    case LT_OP_SkipLayerNormalization: case LT_OP_SkipSimplifiedLayerNormalization: return rw_skip_norm(&b, n, changed);
    case LT_OP_SimplifiedLayerNormalization: case LT_OP_MsSimplifiedLayerNormalization:
        return rw_simplified_norm(&b, n, changed);
    case LT_OP_MatMulNBits: return rw_nbits(&b, n, changed);
    case LT_OP_MsRotaryEmbedding: return rw_rotary(&b, n, changed);
    case LT_OP_DynamicQuantizeLSTM: case LT_OP_DynamicQuantizeMatMul: case LT_OP_MatMulIntegerToFloat:
    case LT_OP_EmbedLayerNormalization:
        return xc_quant(&b, n, changed);
    default: return xc_attention(&b, n, changed);
    }
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_contrib, rewrite, changed);
}

const lt_pass lt_pass_expand_contrib = {.name = "expand_contrib", .min_level = 1, .run = run,
    .summary = "onnxruntime com.microsoft ops (fused norms, GELUs, attention, MatMulNBits, rotary) -> standard ops"};
