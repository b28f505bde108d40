/* simplify.c — algebraic simplification: the simplify pass and its identity rules.
 *
 * Identity rules: a node whose output equals one of its inputs (same dtype, same static shape where
 * shapes could differ) is bypassed: its readers read the input, and the node goes.
 *   Identity; Dropout in inference mode with its mask unread; Cast / CastLike to the input's own
 *   type; Reshape / Flatten / Squeeze / Unsqueeze / Expand whose output shape is the input's;
 *   Transpose with the identity permutation; Slice with unit steps keeping the whole shape; Pad with
 *   all-zero pads; Tile with all-one repeats; Concat / Sum / Max / Min / Mean of one input; Split
 *   into one piece; Add/Sub x+0, x-0, Mul/Div x*1, x/1, Pow x^1 by a constant (either side for
 *   Add and Mul) when the result has x's shape and dtype (x + 0 turns -0.0 into +0.0: equal values);
 *   Where with a constant all-true / all-false condition, when the chosen input has the output's
 *   shape.
 * Chain rules (simplify_chains.c): Transpose∘Transpose -> one (or none); chains of Reshape /
 * Flatten / Squeeze / Unsqueeze with a static result -> one Reshape (or none); Cast∘Cast when the
 * first cast is lossless; Unsqueeze then Squeeze of the same axes -> none; an Expand feeding a
 * broadcasting elementwise op that broadcasts anyway -> dropped.
 * Each rule checks what it needs (constants, known dtypes, static shapes) and otherwise leaves the
 * node alone. Level -O2.
 */
#include "simplify.h"

#include <string.h>

static bool same_dtype(const lt_value *a, const lt_value *b) {
    lt_dtype x = lt_pu_dtype(a), y = lt_pu_dtype(b);
    return x != LT_UNDEFINED && x == y;
}

/* out[0] is in[i] unchanged when dtype and static shape agree. */
static bool passes_through(const lt_node *n, int i) {
    return i < n->n_in && n->in[i] && n->out[0] && same_dtype(n->in[i], n->out[0]) &&
           lt_pu_same_static_shape(n->in[i], n->out[0]);
}

static lt_status bypass(lt_ctx *ctx, lt_graph *g, lt_node *n, int i, bool *changed) {
    return lt_pu_forward(ctx, g, n, 0, n->in[i], changed);
}

static bool all_ints_equal(const lt_value *v, int64_t x, bool *known) {
    int64_t buf[64];
    int cnt;
    *known = lt_pu_const_ints(v, buf, 64, &cnt);
    if (!*known) return false;
    for (int i = 0; i < cnt; i++)
        if (buf[i] != x) return false;
    return true;
}

static lt_status rule_identity(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || !n->in[0] || n->n_out != 1) return LT_OK;
    return bypass(ctx, g, n, 0, changed);
}

static lt_status rule_dropout(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || !n->in[0] || n->n_out < 1 || lt_pu_is_random(n)) return LT_OK;
    if (n->n_out > 1 && n->out[1] && (n->out[1]->is_output || lt_value_count_uses(g, n->out[1]) > 0)) return LT_OK;
    return lt_pu_forward(ctx, g, n, 0, n->in[0], changed);
}

static lt_status rule_cast(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || !n->in[0] || n->n_out != 1) return LT_OK;
    lt_dtype in = lt_pu_dtype(n->in[0]);
    lt_dtype to = n->op == LT_OP_Cast ? (lt_dtype)lt_attr_int(n, "to", 0)
                                      : n->n_in > 1 && n->in[1] ? lt_pu_dtype(n->in[1]) : LT_UNDEFINED;
    if (in == LT_UNDEFINED || in != to) return LT_OK;
    return bypass(ctx, g, n, 0, changed);
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Expand: same static shape in and out. */
static lt_status rule_same_shape(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_out != 1 || !passes_through(n, 0)) return LT_OK;
    return bypass(ctx, g, n, 0, changed);
}

static lt_status rule_transpose(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || !n->in[0] || n->n_out != 1) return LT_OK;
    const int64_t *perm;
    int np = lt_attr_ints(n, "perm", &perm);
    int rank = n->in[0]->type.kind == LT_TK_TENSOR ? n->in[0]->type.rank : -1;
    const lt_tensor *c = lt_value_const(n->in[0]);
    if (c) rank = c->rank;
    if (!perm) {
        if (rank < 0 || rank > 1) return LT_OK; /* default perm reverses the dims */
    } else {
        if (rank >= 0 && np != rank) return LT_OK;
        for (int i = 0; i < np; i++)
            if (perm[i] != i) return LT_OK;
    }
    return bypass(ctx, g, n, 0, changed);
}

static lt_status rule_slice(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_out != 1 || !passes_through(n, 0)) return LT_OK;
    if (n->opset >= 10 && n->n_in > 4 && n->in[4]) {
        bool known;
        if (!all_ints_equal(n->in[4], 1, &known)) return LT_OK;
    }
    return bypass(ctx, g, n, 0, changed);
}

static lt_status rule_pad(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || !n->in[0] || n->n_out != 1) return LT_OK;
    if (n->opset >= 11) {
        bool known;
        if (n->n_in < 2 || !n->in[1] || !all_ints_equal(n->in[1], 0, &known)) return LT_OK;
    } else {
        const int64_t *p;
        int np = lt_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &p);
        for (int i = 0; i < np; i++)
            if (p[i] != 0) return LT_OK;
    }
    if (!same_dtype(n->in[0], n->out[0]) && lt_pu_dtype(n->out[0]) != LT_UNDEFINED) return LT_OK;
    return bypass(ctx, g, n, 0, changed);
}

static lt_status rule_tile(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    bool known;
    if (n->n_in < 2 || !n->in[0] || !n->in[1] || n->n_out != 1 || !all_ints_equal(n->in[1], 1, &known)) return LT_OK;
    return bypass(ctx, g, n, 0, changed);
}

/* Concat, Sum, Max, Min, Mean of a single input; Split into one output. */
static lt_status rule_single(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_out != 1 || !n->out[0] || n->n_in < 1 || !n->in[0]) return LT_OK;
    if (n->op == LT_OP_Split) {
        if (!passes_through(n, 0)) return LT_OK;
    } else if (n->n_in != 1) {
        return LT_OK;
    }
    return bypass(ctx, g, n, 0, changed);
}

/* x op c with c a constant neutral element (all elements equal to it). */
static lt_status rule_neutral(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in != 2 || n->n_out != 1 || !n->in[0] || !n->in[1] || !n->out[0]) return LT_OK;
    double neutral = n->op == LT_OP_Add || n->op == LT_OP_Sub ? 0.0 : 1.0;
    bool commutes = n->op == LT_OP_Add || n->op == LT_OP_Mul;
    for (int side = 1; side >= 0; side--) {
        if (side == 0 && !commutes) break;
        const lt_tensor *c = lt_value_const(n->in[side]);
        if (!c || !lt_pu_tensor_all_equal(c, neutral)) continue;
        int xi = 1 - side;
        if (!passes_through(n, xi)) continue;
        return bypass(ctx, g, n, xi, changed);
    }
    return LT_OK;
}

static lt_status rule_where(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in != 3 || n->n_out != 1 || !n->in[0]) return LT_OK;
    const lt_tensor *c = lt_value_const(n->in[0]);
    if (!c || c->dtype != LT_BOOL || c->numel == 0) return LT_OK;
    int pick;
    if (lt_pu_tensor_all_equal(c, 1.0)) pick = 1;
    else if (lt_pu_tensor_all_equal(c, 0.0)) pick = 2;
    else return LT_OK;
    if (!passes_through(n, pick)) return LT_OK;
    return bypass(ctx, g, n, pick, changed);
}

/* Rules per op, tried in order until one changes the graph. */
static int rules_for(const lt_node *n, lt_simplify_rule *r) {
    int k = 0;
    switch (n->op) {
    case LT_OP_Identity: r[k++] = rule_identity; break;
    case LT_OP_Dropout: r[k++] = rule_dropout; break;
    case LT_OP_Cast:
        r[k++] = rule_cast;
        r[k++] = lt_simplify_cast_chain;
        break;
    case LT_OP_CastLike: r[k++] = rule_cast; break;
    case LT_OP_Reshape: case LT_OP_Flatten: case LT_OP_Unsqueeze:
        r[k++] = rule_same_shape;
        r[k++] = lt_simplify_view_chain;
        break;
    case LT_OP_Squeeze:
        r[k++] = rule_same_shape;
        r[k++] = lt_simplify_squeeze_pair;
        r[k++] = lt_simplify_view_chain;
        break;
    case LT_OP_Expand: r[k++] = rule_same_shape; break;
    case LT_OP_Transpose:
        r[k++] = rule_transpose;
        r[k++] = lt_simplify_transpose_chain;
        break;
    case LT_OP_Slice: r[k++] = rule_slice; break;
    case LT_OP_Pad: r[k++] = rule_pad; break;
    case LT_OP_Tile: r[k++] = rule_tile; break;
    case LT_OP_Concat: case LT_OP_Sum: case LT_OP_Max: case LT_OP_Min: case LT_OP_Mean: case LT_OP_Split:
        r[k++] = rule_single;
        break;
    case LT_OP_Add: case LT_OP_Sub: case LT_OP_Mul: case LT_OP_Div: case LT_OP_Pow: r[k++] = rule_neutral; break;
    case LT_OP_Where: r[k++] = rule_where; break;
    default: break;
    }
    if (lt_op_info_get(n->op)->pattern == LT_PK_BROADCAST) r[k++] = lt_simplify_expand_into_broadcast;
    return k;
}

static lt_status simplify_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    for (int i = 0; i < g->n_nodes;) {
        lt_node *n = g->nodes[i];
        lt_simplify_rule rules[8];
        int nr = rules_for(n, rules);
        bool ch = false;
        for (int k = 0; k < nr && !ch && n->index >= 0; k++) LT_TRY(rules[k](ctx, g, n, &ch));
        if (ch) *changed = true;
        /* n may have been removed (the next node slid into i) or nodes inserted before it */
        i = n->index >= 0 ? n->index + 1 : i;
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, false, simplify_graph, changed);
}

const lt_pass lt_pass_simplify = {.name = "simplify", .min_level = 2, .run = run,
    .summary = "algebraic identities, Transpose/Reshape/Cast chains, redundant Expand, constant Where"};
