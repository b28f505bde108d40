/* patterns.c — decomposed normalizations and activations that exporters emit, recognized and
 * replaced by the single op (which the compiled path lowers as one kernel):
 *
 *   LayerNorm:  m = ReduceMean(x, axes = trailing axes k..r-1, keepdims=1); d = Sub(x, m);
 *               v = ReduceMean(Pow(d, 2) | Mul(d, d)) (PyTorch) or ReduceMean(x·x) - m·m (the ONNX
 *               function body), same axes; s = Sqrt(Add(v, eps));
 *               y = Div(d, s) | Mul(d, Reciprocal(s)) [ -> Mul(y, gamma) [ -> Add(., beta) ] ]
 *               => LayerNormalization(x, gamma | ones, beta?, axis=k, epsilon=eps)
 *   GELU (erf): e = Erf(Div(x, √2) | Mul(x, 1/√2)); p = Add(e, 1);
 *               y = 0.5 · x · p in any association (Mul(Mul(x, p), 0.5), Mul(Mul(x, 0.5), p),
 *               Mul(x, Mul(p, 0.5)), ...)  => Gelu(x)   (opset 20 semantics, approximate="none")
 *   hardswish:  Mul(x, HardSigmoid(x, alpha = 1/6, beta = 1/2))  => HardSwish(x)
 *   SiLU:       Mul(x, Sigmoid(x))                             => Swish(x, alpha = 1)
 * Constants must match (√2 to 1e-5 relative, 0.5 / 1 / 2 exactly up to float rounding), gamma and
 * beta must have the normalized shape (static; leading 1s allowed), the dtype a float type. The
 * intermediate values may have other readers (they stay); only the final value is replaced.
 * Numerics: the fused op computes in float (double for double inputs): results agree with the
 * decomposed graph to float rounding. Level -O3.
 */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The node of g that reads v, when exactly one node does and v is not a graph output. */
static lt_node *sole_consumer(const lt_graph *g, const lt_value *v) {
    if (!v || v->is_output) return NULL;
    lt_node *found = NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == v) {
                if (found && found != n) return NULL;
                found = (lt_node *)n;
            }
    }
    if (found && lt_value_count_uses(g, v) != 1) return NULL; /* also read twice by one node, or by a subgraph */
    return found;
}

static bool near(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

/* Rank of v (constant or typed), -1 if unknown. */
static int rank_of(const lt_value *v) {
    int r;
    int64_t d[LT_MAX_RANK];
    return v && lt_pu_dims(v, &r, d) ? r : -1;
}

/* A one-element constant near x that cannot raise the rank of a value of rank r by broadcasting
 * (rank 0, or rank <= r when r is known): an operation with it keeps the other operand's shape. */
static bool const_near_r(const lt_value *v, double x, double rel, int r) {
    double c;
    if (!v || !lt_pu_const_scalar(v, &c) || !near(c, x, rel)) return false;
    int cr = lt_value_const(v)->rank;
    return cr == 0 || (r >= 0 && cr <= r);
}
static bool const_near(const lt_value *v, double x, double rel) { return const_near_r(v, x, rel, 0); }

/* The other input of binary node n, given one input v (NULL if v is not an input). */
static lt_value *other_input(const lt_node *n, const lt_value *v) {
    if (n->n_in != 2) return NULL;
    if (n->in[0] == v) return n->in[1];
    if (n->in[1] == v) return n->in[0];
    return NULL;
}

static bool float_dtype(lt_dtype t) { return t == LT_FLOAT || t == LT_DOUBLE || t == LT_FLOAT16 || t == LT_BFLOAT16; }

/* ---------------------------------------------------------------- LayerNorm */

/* Normalized axes of a ReduceMean over rank r with keepdims=1 forming k..r-1; returns k or -1. */
static int trailing_axes(const lt_node *n, int r) {
    if (lt_attr_int(n, "keepdims", 1) != 1 || r <= 0) return -1;
    int64_t axes[LT_MAX_RANK];
    int cnt = 0;
    if (n->opset >= 18) {
        if (n->n_in < 2 || !n->in[1] || !lt_pu_const_ints(n->in[1], axes, LT_MAX_RANK, &cnt)) return -1;
    } else {
        const int64_t *p;
        cnt = lt_attr_ints(n, "axes", &p);
        if (!p || cnt > LT_MAX_RANK) return -1;
        memcpy(axes, p, (size_t)cnt * sizeof *p);
    }
    if (cnt == 0) return -1;
    bool seen[LT_MAX_RANK] = {0};
    for (int i = 0; i < cnt; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || seen[a]) return -1;
        seen[a] = true;
    }
    int k = r - cnt;
    for (int a = k; a < r; a++)
        if (!seen[a]) return -1;
    return k;
}

/* gamma/beta shaped like the normalized dims (leading 1s allowed, static), dtype dt. */
static bool param_shape(const lt_value *v, int r, int k, const int64_t *xd, lt_dtype dt) {
    int pr;
    int64_t pd[LT_MAX_RANK];
    if (!v || lt_pu_dtype(v) != dt || !lt_value_static_shape(v, &pr, pd) || pr > r || pr < 1) return false;
    int lead = pr - (r - k);
    for (int i = 0; i < pr; i++) {
        if (i < lead) {
            if (pd[i] != 1) return false;
        } else if (pd[i] != xd[k + i - lead]) {
            return false;
        }
    }
    return true;
}

/* v = Mul(a, a) or Pow(a, 2)? */
static bool is_square_of(const lt_graph *g, const lt_value *v, const lt_value *a) {
    lt_node *n = v ? v->producer : NULL;
    if (!n || n->graph != g || n->n_in != 2) return false;
    if (n->op == LT_OP_Mul) return n->in[0] == a && n->in[1] == a;
    return n->op == LT_OP_Pow && n->in[0] == a && const_near(n->in[1], 2.0, 1e-7);
}

/* Is v the variance of x over the mean's axes: ReduceMean((x - m)^2) with d = x - m, or
 * ReduceMean(x^2) - m^2? */
static bool is_variance(const lt_graph *g, const lt_value *v, const lt_node *mean, const lt_value *d, int r, int k) {
    lt_node *rm = lt_pu_producer(g, v, LT_OP_ReduceMean);
    if (rm) return rm->n_in >= 1 && is_square_of(g, rm->in[0], d) && trailing_axes(rm, r) == k;
    lt_node *sub = lt_pu_producer(g, v, LT_OP_Sub);
    if (!sub || sub->n_in != 2) return false;
    lt_node *ms = lt_pu_producer(g, sub->in[0], LT_OP_ReduceMean);
    return ms && ms->n_in >= 1 && is_square_of(g, ms->in[0], mean->in[0]) && trailing_axes(ms, r) == k &&
           is_square_of(g, sub->in[1], mean->out[0]);
}

/* anchor: Div(d, s) or Mul(d, Reciprocal(s)) (either order) with s = Sqrt(var + eps). */
static lt_status try_layernorm(lt_ctx *ctx, lt_graph *g, lt_node *anchor, bool *changed) {
    if (anchor->n_in != 2 || !anchor->in[0] || !anchor->in[1] || !anchor->out[0]) return LT_OK;
    lt_value *d = NULL, *sv = NULL;
    if (anchor->op == LT_OP_Div) {
        d = anchor->in[0];
        sv = anchor->in[1];
    } else {
        for (int i = 0; i < 2 && !sv; i++) {
            lt_node *rc = lt_pu_producer(g, anchor->in[i], LT_OP_Reciprocal);
            if (rc && rc->n_in == 1) {
                sv = rc->in[0];
                d = anchor->in[1 - i];
            }
        }
        if (!sv) return LT_OK;
    }
    lt_node *sub = lt_pu_producer(g, d, LT_OP_Sub);
    lt_node *sqrt_n = lt_pu_producer(g, sv, LT_OP_Sqrt);
    if (!sub || !sqrt_n || sub->n_in != 2 || !sub->in[0] || !sub->in[1] || !sqrt_n->in[0]) return LT_OK;
    lt_value *x = sub->in[0];
    lt_node *mean = lt_pu_producer(g, sub->in[1], LT_OP_ReduceMean);
    if (!mean || mean->n_in < 1 || mean->in[0] != x) return LT_OK;
    lt_node *add_eps = lt_pu_producer(g, sqrt_n->in[0], LT_OP_Add);
    if (!add_eps || add_eps->n_in != 2) return LT_OK;
    int r;
    int64_t xd[LT_MAX_RANK];
    lt_dtype dt = lt_pu_dtype(x);
    if (!float_dtype(dt) || !lt_pu_dims(x, &r, xd)) return LT_OK;
    int k = trailing_axes(mean, r);
    if (k < 0) return LT_OK;
    for (int i = k; i < r; i++)
        if (xd[i] < 0) return LT_OK; /* the normalized dims must be known (scale shape) */
    double eps = -1;
    int vi = -1;
    for (int i = 0; i < 2 && vi < 0; i++)
        if (lt_pu_const_scalar(add_eps->in[1 - i], &eps) && lt_value_const(add_eps->in[1 - i])->rank <= r &&
            is_variance(g, add_eps->in[i], mean, d, r, k))
            vi = i;
    if (vi < 0 || !(eps >= 0)) return LT_OK;
    /* Shapes follow from the structure: d has x's shape (x minus a keepdims reduction of x), the
     * divisor is a keepdims reduction (eps cannot raise its rank), gamma / beta have the normalized
     * shape: every step keeps x's shape, known or not. */
    if (lt_pu_dtype(anchor->out[0]) != dt) return LT_OK;
    /* optional affine tail */
    lt_value *result = anchor->out[0], *gamma = NULL, *beta = NULL;
    lt_node *mul = sole_consumer(g, result);
    if (mul && mul->op == LT_OP_Mul) {
        lt_value *o = other_input(mul, result);
        if (o && o != result && param_shape(o, r, k, xd, dt)) {
            gamma = o;
            result = mul->out[0];
            lt_node *add = sole_consumer(g, result);
            lt_value *b = add && add->op == LT_OP_Add ? other_input(add, result) : NULL;
            if (b && b != result && param_shape(b, r, k, xd, dt)) {
                beta = b;
                result = add->out[0];
            }
        }
    }
    if (!gamma) {
        int64_t nd[LT_MAX_RANK];
        int nr = r - k;
        for (int i = 0; i < nr; i++) nd[i] = xd[k + i];
        lt_tensor *ones;
        LT_TRY(lt_tensor_new(ctx, dt, nr, nd, &ones));
        for (int64_t i = 0; i < ones->numel; i++) lt_store_f64(ones->data, dt, i, 1.0);
        LT_TRY(lt_value_new_const(ctx, g, "ln_scale", ones, &gamma));
    }
    /* x, gamma and beta are all read by nodes up to the last one of the pattern, so they are defined
     * before it: the LayerNormalization goes just before that node. */
    lt_value *ins[3] = {x, gamma, beta};
    lt_node *ln, *last = result->producer;
    LT_TRY(lt_node_new(ctx, g, "LayerNormalization", "", beta ? 3 : 2, ins, 1, result->name, last, &ln));
    ln->opset = 17;
    LT_TRY(lt_node_set_attr_int(ctx, ln, "axis", k));
    LT_TRY(lt_node_set_attr_float(ctx, ln, "epsilon", (float)eps));
    LT_TRY(lt_node_set_attr_int(ctx, ln, "stash_type", dt == LT_DOUBLE ? LT_DOUBLE : LT_FLOAT));
    LT_TRY(lt_node_infer(ctx, ln));
    lt_pu_take_name(g, ln->out[0], result);
    LT_TRY(lt_pu_forward(ctx, g, last, 0, ln->out[0], changed));
    *changed = true;
    return LT_OK;
}

/* ---------------------------------------------------------------- GELU */

/* Is v = Mul(x, 0.5) (either order)? */
static bool is_half_of(const lt_graph *g, const lt_value *v, const lt_value *x, int r) {
    lt_node *m = lt_pu_producer(g, v, LT_OP_Mul);
    lt_value *o = m ? other_input(m, x) : NULL;
    return o && o != x && const_near_r(o, 0.5, 1e-7, r);
}

static lt_status try_gelu(lt_ctx *ctx, lt_graph *g, lt_node *erf, bool *changed) {
    if (erf->n_in != 1 || !erf->in[0] || !erf->out[0]) return LT_OK;
    lt_node *a = erf->in[0]->producer;
    if (!a || a->graph != g || a->n_in != 2 || !a->in[0] || !a->in[1]) return LT_OK;
    lt_value *x = a->in[0];
    int r = -1;
    if (a->op == LT_OP_Div) {
        r = rank_of(x);
        if (!const_near_r(a->in[1], sqrt(2.0), 1e-5, r)) return LT_OK;
    } else if (a->op == LT_OP_Mul) {
        if (!lt_value_const(a->in[1])) x = a->in[1];
        r = rank_of(x);
        if (!const_near_r(other_input(a, x), 0.70710678118654752440, 1e-5, r)) return LT_OK;
    } else {
        return LT_OK;
    }
    /* every constant below is one element of rank <= x's: each step keeps x's shape */
    lt_dtype dt = lt_pu_dtype(x);
    if (!float_dtype(dt)) return LT_OK;
    lt_node *p = sole_consumer(g, erf->out[0]);
    if (!p || p->op != LT_OP_Add || !const_near_r(other_input(p, erf->out[0]), 1.0, 1e-7, r)) return LT_OK;
    lt_value *pv = p->out[0];
    lt_node *q = sole_consumer(g, pv);
    if (!q || q->op != LT_OP_Mul) return LT_OK;
    lt_value *o = other_input(q, pv), *result = NULL;
    if (!o) return LT_OK;
    if (o == x) { /* x * p, then * 0.5 */
        lt_node *m = sole_consumer(g, q->out[0]);
        if (m && m->op == LT_OP_Mul && const_near_r(other_input(m, q->out[0]), 0.5, 1e-7, r)) result = m->out[0];
    } else if (is_half_of(g, o, x, r)) { /* (x * 0.5) * p */
        result = q->out[0];
    } else if (const_near_r(o, 0.5, 1e-7, r)) { /* (p * 0.5) * x */
        lt_node *m = sole_consumer(g, q->out[0]);
        if (m && m->op == LT_OP_Mul && other_input(m, q->out[0]) == x) result = m->out[0];
    }
    if (!result || lt_pu_dtype(result) != dt) return LT_OK;
    lt_node *gelu;
    LT_TRY(lt_node_new(ctx, g, "Gelu", "", 1, &x, 1, result->name, result->producer, &gelu));
    gelu->opset = 20;
    LT_TRY(lt_node_infer(ctx, gelu));
    lt_pu_take_name(g, gelu->out[0], result);
    LT_TRY(lt_pu_forward(ctx, g, result->producer, 0, gelu->out[0], changed));
    *changed = true;
    return LT_OK;
}

/* x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (PaddlePaddle's and some PyTorch exports of
 * hardswish) => HardSwish(x); x * Sigmoid(x) => Swish(x) (alpha 1: SiLU). One elementwise op, which a
 * convolution or GEMM then applies in its epilogue. */
static lt_status try_x_times_gate(lt_ctx *ctx, lt_graph *g, lt_node *gate, bool *changed) {
    if (gate->n_in != 1 || !gate->in[0] || gate->n_out != 1 || !gate->out[0]) return LT_OK;
    lt_value *x = gate->in[0];
    if (!float_dtype(lt_pu_dtype(x)) || lt_pu_dtype(gate->out[0]) != lt_pu_dtype(x)) return LT_OK;
    if (gate->op == LT_OP_HardSigmoid && (!near(lt_attr_float(gate, "alpha", 0.2f), 1.0 / 6.0, 1e-6) ||
                                          !near(lt_attr_float(gate, "beta", 0.5f), 0.5, 1e-7)))
        return LT_OK;
    lt_node *m = sole_consumer(g, gate->out[0]);
    if (!m || m->op != LT_OP_Mul || m->n_in != 2 || other_input(m, gate->out[0]) != x || !m->out[0] ||
        lt_pu_dtype(m->out[0]) != lt_pu_dtype(x))
        return LT_OK;
    lt_value *result = m->out[0];
    bool hs = gate->op == LT_OP_HardSigmoid;
    lt_node *fused;
    LT_TRY(lt_node_new(ctx, g, hs ? "HardSwish" : "Swish", "", 1, &x, 1, result->name, m, &fused));
    fused->opset = hs ? 14 : 24;
    fused->name = m->name;
    if (!hs) LT_TRY(lt_node_set_attr_float(ctx, fused, "alpha", 1.0f));
    LT_TRY(lt_node_infer(ctx, fused));
    lt_pu_take_name(g, fused->out[0], result);
    LT_TRY(lt_pu_forward(ctx, g, m, 0, fused->out[0], changed));
    *changed = true;
    return LT_OK;
}

static lt_status patterns_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        bool ch = false;
        if (n->op == LT_OP_Div || n->op == LT_OP_Mul) LT_TRY(try_layernorm(ctx, g, n, &ch));
        else if (n->op == LT_OP_Erf) LT_TRY(try_gelu(ctx, g, n, &ch));
        else if (n->op == LT_OP_HardSigmoid || n->op == LT_OP_Sigmoid) LT_TRY(try_x_times_gate(ctx, g, n, &ch));
        if (ch) *changed = true;
        i = n->index >= 0 ? n->index : i - 1; /* nodes inserted before n shift it; a removed n: redo slot i */
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, false, patterns_graph, changed);
}

const lt_pass lt_pass_patterns = {.name = "patterns", .min_level = 3, .run = run,
    .summary = "decomposed LayerNorm, GELU (erf form), hardswish and SiLU become one op"};
