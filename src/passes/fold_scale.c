/* fold_scale.c — a multiplication by a scalar constant folded into the linear op that reads it.
 *
 *   y = Mul(x, c) | Mul(c, x) | Div(x, c)   (c a finite, non-zero float scalar constant)
 *   [ -> Reshape / Flatten / Squeeze / Unsqueeze ... ]   (each read once)
 *   -> MatMul(y, W) | MatMul(W, y)   with W a constant:  W' = c * W, a new initializer
 *   -> Conv(y, W, b)                 with W a constant:  W' = c * W (the bias unchanged)
 *   -> Gemm(y, B, C) | Gemm(A, y, C):                    alpha' = c * alpha
 * and the reader reads x. Exporters write such scales for an inference-mode dropout (paddle's
 * downscale_in_infer: x * (1 - p)) and for attention's 1 / sqrt(d) before a product with a weight;
 * left alone they are a pass over the activations of their own (on the GPU a kernel: what follows
 * an activation cannot join a convolution's epilogue). y must have x's shape and dtype and be read
 * once; W a float constant (its other readers keep the original). The products differ by one
 * rounding of c * W instead of c * x: within float tolerance. Level -O2.
 */
#include "util.h"

#include <math.h>
#include <stdio.h>

static bool float_type(lt_dtype dt) {
    return dt == LT_FLOAT || dt == LT_DOUBLE || dt == LT_FLOAT16 || dt == LT_BFLOAT16;
}

static bool read_once(const lt_graph *g, const lt_value *v) {
    return v && !v->is_output && lt_value_count_uses(g, v) == 1;
}

/* The node of g reading v (read once). */
static lt_node *reader_of(const lt_graph *g, const lt_value *v, int *slot) {
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i]->n_in; k++)
            if (g->nodes[i]->in[k] == v) {
                *slot = k;
                return g->nodes[i];
            }
    return NULL;
}

static bool is_view(const lt_node *n) {
    return n->op == LT_OP_Reshape || n->op == LT_OP_Flatten || n->op == LT_OP_Squeeze || n->op == LT_OP_Unsqueeze;
}

/* The scale of scalar-multiply node n and the input it scales (false when n is not one). */
static bool scalar_scale(const lt_node *n, double *scale, lt_value **x) {
    if ((n->op != LT_OP_Mul && n->op != LT_OP_Div) || n->n_in != 2 || !n->in[0] || !n->in[1] || !n->out[0]) return false;
    int ci = lt_value_is_const(n->in[1]) ? 1 : n->op == LT_OP_Mul && lt_value_is_const(n->in[0]) ? 0 : -1;
    if (ci < 0) return false;
    const lt_tensor *c = lt_value_const(n->in[ci]);
    if (c->numel != 1 || !float_type(c->dtype)) return false;
    double v = lt_load_f64(c->data, c->dtype, 0);
    if (!isfinite(v) || v == 0) return false;
    *x = n->in[1 - ci];
    lt_dtype dt = lt_pu_dtype(*x);
    if (!float_type(dt) || dt != lt_pu_dtype(n->out[0]) || !lt_pu_same_static_shape(*x, n->out[0])) return false;
    *scale = n->op == LT_OP_Mul ? v : 1.0 / v;
    return true;
}

/* c * w as a new tensor of w's type and shape. */
static lt_status scaled(lt_ctx *ctx, const lt_tensor *w, double c, lt_tensor **out) {
    LT_TRY(lt_tensor_new(ctx, w->dtype, w->rank, w->dims, out));
    for (int64_t i = 0; i < w->numel; i++) lt_store_f64((*out)->data, w->dtype, i, lt_load_f64(w->data, w->dtype, i) * c);
    return LT_OK;
}

/* Reader m takes the scale through its constant input wi: a new initializer c * W in that slot. */
static lt_status scale_weight(lt_ctx *ctx, lt_graph *g, lt_node *m, int wi, double c) {
    lt_tensor *t;
    LT_TRY(scaled(ctx, lt_value_const(m->in[wi]), c, &t));
    char hint[256];
    snprintf(hint, sizeof hint, "%s_scaled", m->in[wi]->name ? m->in[wi]->name : "w");
    lt_value *nw;
    LT_TRY(lt_value_new_const(ctx, g, hint, t, &nw));
    m->in[wi] = nw;
    return LT_OK;
}

static bool float_const_at(const lt_node *m, int i) {
    const lt_tensor *t = i < m->n_in && m->in[i] ? lt_value_const(m->in[i]) : NULL;
    return t && float_type(t->dtype);
}

static lt_status fold_one(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    double c;
    lt_value *x;
    if (!scalar_scale(n, &c, &x) || !read_once(g, n->out[0])) return LT_OK;
    /* through views, each read once, to the reader that takes the scale */
    int slot, first_slot;
    lt_node *first = reader_of(g, n->out[0], &first_slot), *m = first;
    slot = first_slot;
    for (int guard = 0; m && is_view(m) && slot == 0 && guard < 8; guard++) {
        if (!m->out[0] || !read_once(g, m->out[0])) return LT_OK;
        m = reader_of(g, m->out[0], &slot);
    }
    if (!m || m->graph != g) return LT_OK;
    if (m->op == LT_OP_MatMul && m->n_in == 2 && slot < 2 && float_const_at(m, 1 - slot)) {
        LT_TRY(scale_weight(ctx, g, m, 1 - slot, c));
    } else if (m->op == LT_OP_Conv && slot == 0 && float_const_at(m, 1)) {
        LT_TRY(scale_weight(ctx, g, m, 1, c));
    } else if (m->op == LT_OP_Gemm && slot < 2) {
        LT_TRY(lt_node_set_attr_float(ctx, m, "alpha", (float)(lt_attr_float(m, "alpha", 1.0f) * c)));
    } else {
        return LT_OK;
    }
    first->in[first_slot] = x; /* the scale is gone: the chain reads x */
    lt_pu_remove_if_dead(g, n);
    *changed = true;
    return LT_OK;
}

static bool is_scale_op(const lt_node *n) { return n->op == LT_OP_Mul || n->op == LT_OP_Div; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_scale_op, fold_one, changed);
}

const lt_pass lt_pass_fold_scale = {.name = "fold_scale", .min_level = 2, .run = run,
    .summary = "fold a scalar Mul/Div into the constant weights of the MatMul / Conv (or Gemm's alpha) reading it"};
