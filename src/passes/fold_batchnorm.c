/* fold_batchnorm.c — BatchNormalization (inference mode) folded into the op before it.
 *
 * BN(y) = (y - mean) * s + bias with s = scale / sqrt(var + epsilon), per channel (dim 1).
 *   Conv(x, W, b) -> BN           : W'[m,...] = W[m,...] * s[m];  b'[m] = (b[m] - mean[m]) * s[m] + bias[m]
 *   Gemm(A, B, C; alpha, beta)->BN : B' scales output column n by s[n];
 *                                    C' = (beta * C - mean) * s + bias (beta becomes 1)
 *   MatMul(A, W) [+ Add(b)] -> BN  : rank-2 product only (its dim 1 is the BN channel):
 *                                    W' scales column n by s[n]; b' = (b - mean) * s + bias
 * The producer's output must be read by the BN alone (the Add's too); every parameter must be a
 * constant of a float type, sizes must match. New weights are new initializers (computed in
 * double, stored in the weight's dtype); the originals stay while anything else reads them (dce
 * drops them otherwise). BN in training mode (training_mode=1, or before opset 14 any statistics
 * output requested) is never folded. Level -O2.
 */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool float_const(const lt_tensor *t) {
    return t && (t->dtype == LT_FLOAT || t->dtype == LT_DOUBLE || t->dtype == LT_FLOAT16 || t->dtype == LT_BFLOAT16);
}

static bool bn_inference(const lt_graph *g, const lt_node *n) {
    bool extras = false;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k]) extras = true;
    if (n->opset >= 14) {
        if (lt_attr_int(n, "training_mode", 0) != 0) return false;
    } else {
        if (n->opset < 9 && lt_attr_int(n, "spatial", 1) == 0) return false;
        if (extras && !(n->opset < 7 && lt_attr_int(n, "is_test", 0))) return false;
    }
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] && (n->out[k]->is_output || lt_value_count_uses(g, n->out[k]) > 0)) return false;
    return true;
}

/* Value read only once, by a node (not a graph output). */
static bool single_use(const lt_graph *g, const lt_value *v) {
    return v && !v->is_output && lt_value_count_uses(g, v) == 1;
}

/* s = scale / sqrt(var + eps) and t = bias - mean * s, over C channels (heap arrays). */
static bool bn_params(lt_ctx *ctx, const lt_node *bn, int64_t C, double **s_out, double **mean_out, double **bias_out) {
    const lt_tensor *sc = lt_value_const(bn->in[1]), *b = lt_value_const(bn->in[2]), *m = lt_value_const(bn->in[3]),
                    *v = lt_value_const(bn->in[4]);
    if (!float_const(sc) || !float_const(b) || !float_const(m) || !float_const(v)) return false;
    if (sc->numel != C || b->numel != C || m->numel != C || v->numel != C) return false;
    double eps = lt_attr_float(bn, "epsilon", 1e-5f);
    double *s = lt_calloc(ctx, (size_t)C * 3, sizeof *s, "BatchNorm fold");
    if (!s) return false;
    for (int64_t c = 0; c < C; c++) {
        s[c] = lt_load_f64(sc->data, sc->dtype, c) / sqrt(lt_load_f64(v->data, v->dtype, c) + eps);
        s[C + c] = lt_load_f64(m->data, m->dtype, c);
        s[2 * C + c] = lt_load_f64(b->data, b->dtype, c);
    }
    *s_out = s;
    *mean_out = s + C;
    *bias_out = s + 2 * C;
    return true;
}

/* New tensor shaped like w, element i = w[i] * s[channel(i)] where channel(i) = (i / inner) % C. */
static lt_status scale_weights(lt_ctx *ctx, const lt_tensor *w, const double *s, int64_t C, int64_t inner, lt_tensor **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, w->dtype, w->rank, w->dims, &t));
    if (inner <= 0) inner = 1;
    if (w->dtype == LT_FLOAT) { /* the common case, without the generic element access */
        const float *src = w->data;
        float *dst = t->data;
        for (int64_t i = 0; i < w->numel; i += inner) {
            double f = s[(i / inner) % C];
            int64_t end = i + inner < w->numel ? i + inner : w->numel;
            for (int64_t j = i; j < end; j++) dst[j] = (float)((double)src[j] * f);
        }
    } else {
        for (int64_t i = 0; i < w->numel; i++)
            lt_store_f64(t->data, t->dtype, i, lt_load_f64(w->data, w->dtype, i) * s[(i / inner) % C]);
    }
    *out = t;
    return LT_OK;
}

/* 1-D bias [C]: b'[c] = (b[c] - mean[c]) * s[c] + bias[c] (b NULL: 0). */
static lt_status fold_bias(lt_ctx *ctx, lt_dtype dt, const lt_tensor *b, const double *s, const double *mean,
                           const double *bias, int64_t C, lt_tensor **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, dt, 1, &C, &t));
    for (int64_t c = 0; c < C; c++) {
        double bc = b ? lt_load_f64(b->data, b->dtype, b->numel == 1 ? 0 : c) : 0.0;
        lt_store_f64(t->data, dt, c, (bc - mean[c]) * s[c] + bias[c]);
    }
    *out = t;
    return LT_OK;
}

static lt_status new_const(lt_ctx *ctx, lt_graph *g, const lt_value *like, const char *suffix, lt_tensor *t, lt_value **out) {
    char hint[256];
    snprintf(hint, sizeof hint, "%s%s", like ? like->name : "bn", suffix);
    return lt_value_new_const(ctx, g, hint, t, out);
}

static lt_status fold_conv(lt_ctx *ctx, lt_graph *g, lt_node *conv, lt_node *bn, bool *changed) {
    if (conv->n_in < 2 || !conv->in[0] || !conv->in[1] || !single_use(g, conv->out[0])) return LT_OK;
    const lt_tensor *w = lt_value_const(conv->in[1]);
    const lt_tensor *b = conv->n_in > 2 && conv->in[2] ? lt_value_const(conv->in[2]) : NULL;
    if (!float_const(w) || w->rank < 3 || (conv->n_in > 2 && conv->in[2] && !float_const(b))) return LT_OK;
    int64_t M = w->dims[0];
    if (b && b->numel != M) return LT_OK;
    double *s, *mean, *bias;
    if (!bn_params(ctx, bn, M, &s, &mean, &bias)) return ctx->status;
    lt_tensor *nw = NULL, *nb = NULL;
    lt_status st = scale_weights(ctx, w, s, M, w->numel / (M ? M : 1), &nw);
    if (!st) st = fold_bias(ctx, w->dtype, b, s, mean, bias, M, &nb);
    lt_mem_free(s);
    if (st) {
        lt_tensor_release(nw);
        return st;
    }
    lt_value *vw, *vb;
    st = new_const(ctx, g, conv->in[1], "_bnfold", nw, &vw);
    if (st) {
        lt_tensor_release(nb);
        return st;
    }
    LT_TRY(new_const(ctx, g, conv->n_in > 2 && conv->in[2] ? conv->in[2] : conv->in[1], "_bnbias", nb, &vb));
    if (conv->n_in < 3) LT_TRY(lt_node_set_n_inputs(ctx, conv, 3));
    conv->in[1] = vw;
    conv->in[2] = vb;
    return lt_pu_forward(ctx, g, bn, 0, conv->out[0], changed);
}

static lt_status fold_gemm(lt_ctx *ctx, lt_graph *g, lt_node *gm, lt_node *bn, bool *changed) {
    if (gm->n_in < 2 || !gm->in[0] || !gm->in[1] || !single_use(g, gm->out[0])) return LT_OK;
    const lt_tensor *B = lt_value_const(gm->in[1]);
    const lt_tensor *C = gm->n_in > 2 && gm->in[2] ? lt_value_const(gm->in[2]) : NULL;
    if (!float_const(B) || B->rank != 2 || (gm->n_in > 2 && gm->in[2] && !float_const(C))) return LT_OK;
    bool tb = lt_attr_int(gm, "transB", 0) != 0;
    int64_t N = tb ? B->dims[0] : B->dims[1];
    double beta = lt_attr_float(gm, "beta", 1.0f);
    /* C broadcast to [M, N]: a row of N (or a scalar) gives a 1-D bias; a full [M, N] / [M, 1] keeps its rows */
    int64_t M = 1;
    bool rows = false;
    if (C) {
        if (C->rank > 2) return LT_OK;
        int64_t cn = C->rank >= 1 ? C->dims[C->rank - 1] : 1;
        int64_t cm = C->rank == 2 ? C->dims[0] : 1;
        if (cn != 1 && cn != N) return LT_OK;
        if (cm != 1) {
            rows = true;
            M = cm;
        }
    }
    double *s, *mean, *bias;
    if (!bn_params(ctx, bn, N, &s, &mean, &bias)) return ctx->status;
    lt_tensor *nB = NULL, *nC = NULL;
    lt_status st = scale_weights(ctx, B, s, N, tb ? B->dims[1] : 1, &nB);
    if (!st) {
        int64_t dims[2] = {M, N};
        st = lt_tensor_new(ctx, B->dtype, rows ? 2 : 1, rows ? dims : &dims[1], &nC);
    }
    if (!st) {
        int64_t cn = C && C->rank >= 1 ? C->dims[C->rank - 1] : 1;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double c = C ? lt_load_f64(C->data, C->dtype, (C->numel == 1 ? 0 : m * cn + (cn == 1 ? 0 : n))) : 0.0;
                lt_store_f64(nC->data, nC->dtype, m * N + n, (beta * c - mean[n]) * s[n] + bias[n]);
            }
    }
    lt_mem_free(s);
    if (st) {
        lt_tensor_release(nB);
        return st;
    }
    lt_value *vB, *vC;
    st = new_const(ctx, g, gm->in[1], "_bnfold", nB, &vB);
    if (st) {
        lt_tensor_release(nC);
        return st;
    }
    LT_TRY(new_const(ctx, g, gm->in[1], "_bnbias", nC, &vC));
    if (gm->n_in < 3) LT_TRY(lt_node_set_n_inputs(ctx, gm, 3));
    gm->in[1] = vB;
    gm->in[2] = vC;
    LT_TRY(lt_node_set_attr_float(ctx, gm, "beta", 1.0f));
    return lt_pu_forward(ctx, g, bn, 0, gm->out[0], changed);
}

/* MatMul(A, W) [-> Add(b)] -> BN, rank-2 product. */
static lt_status fold_matmul(lt_ctx *ctx, lt_graph *g, lt_node *mm, lt_node *add, lt_node *bn, bool *changed) {
    if (mm->n_in != 2 || !mm->in[0] || !mm->in[1] || !single_use(g, mm->out[0])) return LT_OK;
    int ra;
    int64_t da[LT_MAX_RANK];
    if (!lt_value_static_shape(mm->in[0], &ra, da) || ra != 2) return LT_OK;
    const lt_tensor *W = lt_value_const(mm->in[1]);
    if (!float_const(W) || W->rank != 2) return LT_OK;
    int64_t N = W->dims[1];
    const lt_tensor *b = NULL;
    int bi = -1;
    if (add) {
        if (add->n_in != 2 || !single_use(g, add->out[0])) return LT_OK;
        bi = add->in[0] == mm->out[0] ? 1 : 0;
        b = add->in[bi] ? lt_value_const(add->in[bi]) : NULL;
        if (!float_const(b) || b->rank > 2 || (b->numel != N && b->numel != 1) || b->dtype != W->dtype) return LT_OK;
        if (b->rank == 2 && b->dims[0] != 1) return LT_OK;
    }
    double *s, *mean, *bias;
    if (!bn_params(ctx, bn, N, &s, &mean, &bias)) return ctx->status;
    lt_tensor *nW = NULL, *nb = NULL;
    lt_status st = scale_weights(ctx, W, s, N, 1, &nW);
    if (!st) st = fold_bias(ctx, W->dtype, b, s, mean, bias, N, &nb);
    lt_mem_free(s);
    if (st) {
        lt_tensor_release(nW);
        return st;
    }
    lt_value *vW, *vb;
    st = new_const(ctx, g, mm->in[1], "_bnfold", nW, &vW);
    if (st) {
        lt_tensor_release(nb);
        return st;
    }
    LT_TRY(new_const(ctx, g, mm->in[1], "_bnbias", nb, &vb));
    mm->in[1] = vW;
    if (add) {
        add->in[bi] = vb;
        return lt_pu_forward(ctx, g, bn, 0, add->out[0], changed);
    }
    lt_value *ins[2] = {mm->out[0], vb};
    lt_node *a;
    LT_TRY(lt_node_new(ctx, g, "Add", "", 2, ins, 1, bn->out[0] ? bn->out[0]->name : "bn", bn, &a));
    LT_TRY(lt_node_infer(ctx, a));
    lt_pu_take_name(g, a->out[0], bn->out[0]);
    return lt_pu_forward(ctx, g, bn, 0, a->out[0], changed);
}

static lt_status fold_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    for (int i = 0; i < g->n_nodes;) {
        lt_node *bn = g->nodes[i];
        i++;
        if (bn->op != LT_OP_BatchNormalization || bn->n_in < 5 || !bn->in[0] || !bn->out[0] || !bn_inference(g, bn))
            continue;
        for (int k = 1; k < 5; k++)
            if (!bn->in[k]) goto next;
        lt_node *p = bn->in[0]->producer;
        if (!p || p->graph != g) continue;
        bool ch = false;
        if (p->op == LT_OP_Conv) LT_TRY(fold_conv(ctx, g, p, bn, &ch));
        else if (p->op == LT_OP_Gemm) LT_TRY(fold_gemm(ctx, g, p, bn, &ch));
        else if (p->op == LT_OP_MatMul) LT_TRY(fold_matmul(ctx, g, p, NULL, bn, &ch));
        else if (p->op == LT_OP_Add) {
            for (int k = 0; k < 2 && p->n_in == 2 && !ch; k++) {
                lt_node *mm = lt_pu_producer(g, p->in[k], LT_OP_MatMul);
                if (mm) LT_TRY(fold_matmul(ctx, g, mm, p, bn, &ch));
            }
        }
        if (ch) {
            *changed = true;
            i = 0; /* nodes moved (an Add may have been inserted, the BN removed): rescan */
        }
    next:;
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, false, fold_graph, changed);
}

const lt_pass lt_pass_fold_batchnorm = {.name = "fold_batchnorm", .min_level = 2, .run = run,
    .summary = "fold inference BatchNormalization into the Conv / Gemm / MatMul(+Add) before it"};
