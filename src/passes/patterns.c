/* patterns.c — decomposed normalizations and activations that exporters emit, recognized and
 * replaced by the single op (which the compiled path lowers as one kernel):
 *
 *   LayerNorm:  m = ReduceMean(x, axes = trailing axes k..r-1, keepdims=1); d = Sub(x, m);
 *               v = ReduceMean(Pow(d, 2) | Mul(d, d), same axes); s = Sqrt(Add(v, eps));
 *               y = Div(d, s) [ -> Mul(y, gamma) [ -> Add(., beta) ] ]
 *               => LayerNormalization(x, gamma | ones, beta?, axis=k, epsilon=eps)
 *   GELU (erf): e = Erf(Div(x, √2) | Mul(x, 1/√2)); p = Add(e, 1);
 *               y = 0.5 · x · p in any association (Mul(Mul(x, p), 0.5), Mul(Mul(x, 0.5), p),
 *               Mul(x, Mul(p, 0.5)), ...)  => Gelu(x)   (opset 20 semantics, approximate="none")
 * Constants must match (√2 to 1e-5 relative, 0.5 / 1 / 2 exactly up to float rounding), gamma and
 * beta must be constants of the normalized shape (leading 1s allowed), the dtype a float type. The
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

static bool const_near(const lt_value *v, double x, double rel) {
    double c;
    return v && lt_pu_const_scalar(v, &c) && near(c, x, rel);
}

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

/* gamma/beta constant shaped like the normalized dims (leading 1s allowed), dtype dt. */
static bool param_shape(const lt_value *v, int r, int k, const int64_t *xd, lt_dtype dt) {
    const lt_tensor *t = v ? lt_value_const(v) : NULL;
    if (!t || t->dtype != dt || t->rank > r) return false;
    int lead = t->rank - (r - k);
    for (int i = 0; i < t->rank; i++) {
        if (i < lead) {
            if (t->dims[i] != 1) return false;
        } else if (t->dims[i] != xd[k + i - lead]) {
            return false;
        }
    }
    return t->rank >= 1 || r - k == 0;
}

static lt_status try_layernorm(lt_ctx *ctx, lt_graph *g, lt_node *div, bool *changed) {
    if (div->n_in != 2 || !div->in[0] || !div->in[1] || !div->out[0]) return LT_OK;
    lt_node *sub = lt_pu_producer(g, div->in[0], LT_OP_Sub);
    lt_node *sqrt_n = lt_pu_producer(g, div->in[1], LT_OP_Sqrt);
    if (!sub || !sqrt_n || sub->n_in != 2 || !sub->in[0] || !sub->in[1]) return LT_OK;
    lt_value *x = sub->in[0], *d = div->in[0];
    lt_node *mean = lt_pu_producer(g, sub->in[1], LT_OP_ReduceMean);
    if (!mean || mean->in[0] != x) return LT_OK;
    lt_node *add_eps = lt_pu_producer(g, sqrt_n->in[0], LT_OP_Add);
    if (!add_eps || add_eps->n_in != 2) return LT_OK;
    int vi = lt_pu_producer(g, add_eps->in[0], LT_OP_ReduceMean) ? 0 : 1;
    lt_node *var = lt_pu_producer(g, add_eps->in[vi], LT_OP_ReduceMean);
    double eps;
    if (!var || !lt_pu_const_scalar(add_eps->in[1 - vi], &eps) || !(eps >= 0)) return LT_OK;
    lt_node *sq = var->in[0] ? var->in[0]->producer : NULL;
    if (!sq || sq->graph != g || sq->n_in != 2) return LT_OK;
    if (sq->op == LT_OP_Pow) {
        if (sq->in[0] != d || !const_near(sq->in[1], 2.0, 1e-7)) return LT_OK;
    } else if (sq->op == LT_OP_Mul) {
        if (sq->in[0] != d || sq->in[1] != d) return LT_OK;
    } else {
        return LT_OK;
    }
    int r;
    int64_t xd[LT_MAX_RANK];
    lt_dtype dt = lt_pu_dtype(x);
    if (!float_dtype(dt) || !lt_value_static_shape(x, &r, xd)) return LT_OK;
    int k = trailing_axes(mean, r);
    if (k < 0 || trailing_axes(var, r) != k) return LT_OK;
    /* optional affine tail */
    lt_value *result = div->out[0], *gamma = NULL, *beta = NULL;
    lt_node *mul = sole_consumer(g, result);
    if (mul && mul->op == LT_OP_Mul) {
        lt_value *o = other_input(mul, result);
        if (o && o != result && param_shape(o, r, k, xd, dt) && lt_pu_same_static_shape(mul->out[0], x)) {
            gamma = o;
            result = mul->out[0];
            lt_node *add = sole_consumer(g, result);
            lt_value *b = add && add->op == LT_OP_Add ? other_input(add, result) : NULL;
            if (b && b != result && param_shape(b, r, k, xd, dt) && lt_pu_same_static_shape(add->out[0], x)) {
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
    lt_value *ins[3] = {x, gamma, beta};
    lt_node *ln;
    LT_TRY(lt_node_new(ctx, g, "LayerNormalization", "", beta ? 3 : 2, ins, 1, result->name,
                       result->producer, &ln));
    ln->opset = 17;
    LT_TRY(lt_node_set_attr_int(ctx, ln, "axis", k));
    LT_TRY(lt_node_set_attr_float(ctx, ln, "epsilon", (float)eps));
    LT_TRY(lt_node_set_attr_int(ctx, ln, "stash_type", dt == LT_DOUBLE ? LT_DOUBLE : LT_FLOAT));
    LT_TRY(lt_node_infer(ctx, ln));
    LT_TRY(lt_pu_forward(ctx, g, result->producer, 0, ln->out[0], changed));
    *changed = true;
    return LT_OK;
}

/* ---------------------------------------------------------------- GELU */

/* Is v = Mul(x, 0.5) (either order)? */
static bool is_half_of(const lt_graph *g, const lt_value *v, const lt_value *x) {
    lt_node *m = lt_pu_producer(g, v, LT_OP_Mul);
    lt_value *o = m ? other_input(m, x) : NULL;
    return o && o != x && const_near(o, 0.5, 1e-7);
}

static lt_status try_gelu(lt_ctx *ctx, lt_graph *g, lt_node *erf, bool *changed) {
    if (erf->n_in != 1 || !erf->in[0] || !erf->out[0]) return LT_OK;
    lt_node *a = erf->in[0]->producer;
    if (!a || a->graph != g || a->n_in != 2 || !a->in[0]) return LT_OK;
    lt_value *x = a->in[0];
    if (a->op == LT_OP_Div) {
        if (!const_near(a->in[1], sqrt(2.0), 1e-5)) return LT_OK;
    } else if (a->op == LT_OP_Mul) {
        if (const_near(a->in[0], 0.70710678118654752440, 1e-5)) x = a->in[1];
        else if (!const_near(a->in[1], 0.70710678118654752440, 1e-5)) return LT_OK;
    } else {
        return LT_OK;
    }
    lt_dtype dt = lt_pu_dtype(x);
    if (!x || !float_dtype(dt) || !lt_pu_same_static_shape(x, erf->out[0])) return LT_OK;
    lt_node *p = sole_consumer(g, erf->out[0]);
    if (!p || p->op != LT_OP_Add || !const_near(other_input(p, erf->out[0]), 1.0, 1e-7)) return LT_OK;
    lt_value *pv = p->out[0];
    lt_node *q = sole_consumer(g, pv);
    if (!q || q->op != LT_OP_Mul) return LT_OK;
    lt_value *o = other_input(q, pv), *result = NULL;
    if (!o) return LT_OK;
    if (o == x) { /* x * p, then * 0.5 */
        lt_node *r = sole_consumer(g, q->out[0]);
        if (r && r->op == LT_OP_Mul && const_near(other_input(r, q->out[0]), 0.5, 1e-7)) result = r->out[0];
    } else if (is_half_of(g, o, x)) { /* (x * 0.5) * p */
        result = q->out[0];
    } else if (const_near(o, 0.5, 1e-7)) { /* (p * 0.5) * x */
        lt_node *r = sole_consumer(g, q->out[0]);
        if (r && r->op == LT_OP_Mul && other_input(r, q->out[0]) == x) result = r->out[0];
    }
    if (!result || !lt_pu_same_static_shape(result, x) || lt_pu_dtype(result) != dt) return LT_OK;
    lt_node *gelu;
    LT_TRY(lt_node_new(ctx, g, "Gelu", "", 1, &x, 1, result->name, result->producer, &gelu));
    gelu->opset = 20;
    LT_TRY(lt_node_infer(ctx, gelu));
    LT_TRY(lt_pu_forward(ctx, g, result->producer, 0, gelu->out[0], changed));
    *changed = true;
    return LT_OK;
}

static lt_status patterns_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        bool ch = false;
        if (n->op == LT_OP_Div) LT_TRY(try_layernorm(ctx, g, n, &ch));
        else if (n->op == LT_OP_Erf) LT_TRY(try_gelu(ctx, g, n, &ch));
        if (ch) *changed = true;
        i = n->index >= 0 ? n->index : i - 1; /* nodes inserted before n shift it; a removed n: redo slot i */
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, false, patterns_graph, changed);
}

const lt_pass lt_pass_patterns = {"patterns", 3, run, "decomposed LayerNorm and GELU (erf form) become one op"};
