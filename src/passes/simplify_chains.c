/* simplify_chains.c — the simplify pass's chain rules: a node reading the output of a related node
 * reads that node's input instead, with one combined operation or none (the first node goes once
 * nothing else reads it: dce).
 *   Transpose(Transpose(x, p), q)       -> Transpose(x, p∘q), or x when p∘q is the identity;
 *   view(view(x)) with a static result   -> Reshape(x, const shape), or x when the shape is x's
 *                                          (view = Reshape, Flatten, Squeeze, Unsqueeze);
 *   Cast(Cast(x, T1), T2), x -> T1 exact -> Cast(x, T2), or x when T2 is x's type;
 *   Squeeze(Unsqueeze(x, axes), axes)    -> x (shapes may be symbolic);
 *   op(Expand(x, s), y...)               -> op(x, y...) for a multidirectional-broadcast op whose
 *                                          result keeps its shape without the Expand.
 */
#include "simplify.h"

#include <stdlib.h>
#include <string.h>

/* Rank of v if known (constant or typed), else -1. */
static int rank_of(const lt_value *v) {
    const lt_tensor *c = lt_value_const(v);
    if (c) return c->rank;
    return v->type.kind == LT_TK_TENSOR ? v->type.rank : -1;
}

/* perm of a Transpose node over rank r (the default reverses). */
static bool perm_of(const lt_node *n, int r, int64_t *perm) {
    const int64_t *p;
    int np = lt_attr_ints(n, "perm", &p);
    if (r < 0 || r > LT_MAX_RANK) return false;
    if (!p) {
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
        return true;
    }
    if (np != r) return false;
    for (int i = 0; i < r; i++) {
        if (p[i] < 0 || p[i] >= r) return false;
        perm[i] = p[i];
    }
    return true;
}

lt_status lt_simplify_transpose_chain(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || n->n_out != 1 || !n->out[0]) return LT_OK;
    lt_node *a = lt_pu_producer(g, n->in[0], LT_OP_Transpose);
    if (!a || a->n_in < 1 || !a->in[0]) return LT_OK;
    lt_value *x = a->in[0];
    int r = rank_of(x);
    int64_t pa[LT_MAX_RANK], pb[LT_MAX_RANK], pc[LT_MAX_RANK];
    if (!perm_of(a, r, pa) || !perm_of(n, r, pb)) return LT_OK;
    bool ident = true;
    for (int i = 0; i < r; i++) {
        pc[i] = pa[pb[i]];
        if (pc[i] != i) ident = false;
    }
    if (ident) return lt_pu_forward(ctx, g, n, 0, x, changed);
    LT_TRY(lt_node_set_attr_ints(ctx, n, "perm", r, pc));
    n->in[0] = x;
    *changed = true;
    lt_pu_remove_if_dead(g, a);
    return LT_OK;
}

static bool is_view(int op) {
    return op == LT_OP_Reshape || op == LT_OP_Flatten || op == LT_OP_Squeeze || op == LT_OP_Unsqueeze;
}

lt_status lt_simplify_view_chain(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || !n->in[0] || n->n_out != 1 || !n->out[0]) return LT_OK;
    lt_node *a = n->in[0]->producer;
    if (!a || a->graph != g || !is_view(a->op) || a->n_in < 1 || !a->in[0]) return LT_OK;
    lt_value *x = a->in[0];
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!lt_value_static_shape(n->out[0], &rank, dims)) return LT_OK;
    if (lt_pu_same_static_shape(x, n->out[0]) && lt_pu_dtype(x) == lt_pu_dtype(n->out[0]) && lt_pu_dtype(x))
        return lt_pu_forward(ctx, g, n, 0, x, changed);
    bool has_zero = false;
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0) has_zero = true;
    if (has_zero && lt_model_opset(g->model, "") < 14) return LT_OK; /* a 0 would mean "copy the dim" */
    lt_tensor *t;
    LT_TRY(lt_pu_tensor_i64(ctx, rank, dims, &t));
    lt_value *shape;
    LT_TRY(lt_value_new_const(ctx, g, "shape", t, &shape));
    if (n->op == LT_OP_Reshape && n->n_in >= 2 && (!has_zero || n->opset >= 14)) {
        n->in[0] = x;
        n->in[1] = shape;
        if (has_zero) LT_TRY(lt_node_set_attr_int(ctx, n, "allowzero", 1));
        *changed = true;
        lt_pu_remove_if_dead(g, a);
        return LT_OK;
    }
    lt_value *ins[2] = {x, shape};
    lt_node *r;
    LT_TRY(lt_node_new(ctx, g, "Reshape", "", 2, ins, 1, n->out[0]->name, n, &r));
    if (r->opset < 5) r->opset = 5;
    if (has_zero) {
        if (r->opset < 14) r->opset = 14;
        LT_TRY(lt_node_set_attr_int(ctx, r, "allowzero", 1));
    }
    LT_TRY(lt_type_copy(ctx, &g->model->arena, &r->out[0]->type, &n->out[0]->type));
    lt_pu_take_name(g, r->out[0], n->out[0]);
    LT_TRY(lt_pu_forward(ctx, g, n, 0, r->out[0], changed));
    *changed = true;
    return LT_OK;
}

/* Every value of type `from` is exactly representable in `to`. */
static bool lossless(lt_dtype from, lt_dtype to) {
    if (from == to) return true;
    switch (from) {
    case LT_BOOL:
        return to == LT_UINT8 || to == LT_INT8 || to == LT_UINT16 || to == LT_INT16 || to == LT_UINT32 || to == LT_INT32 ||
               to == LT_UINT64 || to == LT_INT64 || to == LT_FLOAT16 || to == LT_BFLOAT16 || to == LT_FLOAT ||
               to == LT_DOUBLE;
    case LT_UINT8:
        return to == LT_UINT16 || to == LT_INT16 || to == LT_UINT32 || to == LT_INT32 || to == LT_UINT64 ||
               to == LT_INT64 || to == LT_FLOAT16 || to == LT_BFLOAT16 || to == LT_FLOAT || to == LT_DOUBLE;
    case LT_INT8:
        return to == LT_INT16 || to == LT_INT32 || to == LT_INT64 || to == LT_FLOAT16 || to == LT_BFLOAT16 ||
               to == LT_FLOAT || to == LT_DOUBLE;
    case LT_UINT16:
        return to == LT_UINT32 || to == LT_INT32 || to == LT_UINT64 || to == LT_INT64 || to == LT_FLOAT || to == LT_DOUBLE;
    case LT_INT16: return to == LT_INT32 || to == LT_INT64 || to == LT_FLOAT || to == LT_DOUBLE;
    case LT_UINT32: return to == LT_UINT64 || to == LT_INT64 || to == LT_DOUBLE;
    case LT_INT32: return to == LT_INT64 || to == LT_DOUBLE;
    case LT_FLOAT16: case LT_BFLOAT16: return to == LT_FLOAT || to == LT_DOUBLE;
    case LT_FLOAT: return to == LT_DOUBLE;
    default: return false;
    }
}

/* A plain numeric type the chain rule reasons about (no strings, complex, float8/float4). */
static bool plain(lt_dtype t) {
    return t == LT_BOOL || t == LT_UINT8 || t == LT_INT8 || t == LT_UINT16 || t == LT_INT16 || t == LT_UINT32 ||
           t == LT_INT32 || t == LT_UINT64 || t == LT_INT64 || t == LT_FLOAT16 || t == LT_BFLOAT16 || t == LT_FLOAT ||
           t == LT_DOUBLE;
}

static bool default_cast(const lt_node *n) {
    return lt_node_attr(n, "to") && n->n_attr == 1; /* no saturate / round_mode */
}

lt_status lt_simplify_cast_chain(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || n->n_out != 1 || !n->out[0] || !default_cast(n)) return LT_OK;
    lt_node *a = lt_pu_producer(g, n->in[0], LT_OP_Cast);
    if (!a || a->n_in < 1 || !a->in[0] || !default_cast(a)) return LT_OK;
    lt_value *x = a->in[0];
    lt_dtype tx = lt_pu_dtype(x), t1 = (lt_dtype)lt_attr_int(a, "to", 0), t2 = (lt_dtype)lt_attr_int(n, "to", 0);
    if (!plain(tx) || !plain(t1) || !plain(t2) || !lossless(tx, t1)) return LT_OK;
    if (t2 == tx) return lt_pu_forward(ctx, g, n, 0, x, changed);
    n->in[0] = x;
    *changed = true;
    lt_pu_remove_if_dead(g, a);
    return LT_OK;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted axes of a Squeeze/Unsqueeze over rank r (attribute before opset 13, input after). */
static bool axes_of(const lt_node *n, int r, int64_t *axes, int *count) {
    if (n->opset >= 13) {
        if (n->n_in < 2 || !n->in[1] || !lt_pu_const_ints(n->in[1], axes, LT_MAX_RANK, count)) return false;
    } else {
        const int64_t *p;
        int np = lt_attr_ints(n, "axes", &p);
        if (!p || np > LT_MAX_RANK) return false;
        memcpy(axes, p, (size_t)np * sizeof *p);
        *count = np;
    }
    if (*count == 0) return false;
    for (int i = 0; i < *count; i++) {
        if (axes[i] < 0) axes[i] += r;
        if (axes[i] < 0 || axes[i] >= r) return false;
    }
    qsort(axes, (size_t)*count, sizeof *axes, cmp_i64);
    return true;
}

/* Number of axes of a Squeeze/Unsqueeze (-1 if not known). */
static int axes_count(const lt_node *n) {
    if (n->opset >= 13) {
        const lt_tensor *c = n->n_in >= 2 && n->in[1] ? lt_value_const(n->in[1]) : NULL;
        return c && c->rank <= 1 ? (int)c->numel : -1;
    }
    const int64_t *p;
    int np = lt_attr_ints(n, "axes", &p);
    return p ? np : -1;
}

lt_status lt_simplify_squeeze_pair(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (n->n_in < 1 || n->n_out != 1 || !n->out[0]) return LT_OK;
    lt_node *a = lt_pu_producer(g, n->in[0], LT_OP_Unsqueeze);
    if (!a || a->n_in < 1 || !a->in[0]) return LT_OK;
    int rx = rank_of(a->in[0]), na = axes_count(a);
    if (rx < 0 || na <= 0 || rx + na > LT_MAX_RANK) return LT_OK;
    int ro = rx + na; /* Unsqueeze axes refer to its output rank, Squeeze axes to its input rank: the same */
    int64_t ua[LT_MAX_RANK], sa[LT_MAX_RANK];
    int nu, ns;
    if (!axes_of(a, ro, ua, &nu) || !axes_of(n, ro, sa, &ns) || nu != ns) return LT_OK;
    for (int i = 0; i < nu; i++)
        if (ua[i] != sa[i]) return LT_OK;
    return lt_pu_forward(ctx, g, n, 0, a->in[0], changed);
}

static bool multidirectional(int op) {
    switch (op) {
    case LT_OP_Add: case LT_OP_Sub: case LT_OP_Mul: case LT_OP_Div: case LT_OP_Pow: case LT_OP_Mod: case LT_OP_And:
    case LT_OP_Or: case LT_OP_Xor: case LT_OP_BitShift: case LT_OP_BitwiseAnd: case LT_OP_BitwiseOr:
    case LT_OP_BitwiseXor: case LT_OP_Equal: case LT_OP_Greater: case LT_OP_GreaterOrEqual: case LT_OP_Less:
    case LT_OP_LessOrEqual: case LT_OP_Max: case LT_OP_Min: case LT_OP_Sum: case LT_OP_Mean: case LT_OP_Where:
        return true;
    default:
        return false;
    }
}

lt_status lt_simplify_expand_into_broadcast(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    (void)ctx;
    if (!multidirectional(n->op) || n->n_out != 1 || !n->out[0] || n->n_in > 16) return LT_OK;
    int ro;
    int64_t dout[LT_MAX_RANK];
    if (!lt_value_static_shape(n->out[0], &ro, dout)) return LT_OK;
    int rk[16];
    int64_t dk[16][LT_MAX_RANK];
    for (int i = 0; i < n->n_in; i++)
        if (!n->in[i] || !lt_value_static_shape(n->in[i], &rk[i], dk[i])) return LT_OK;
    for (int i = 0; i < n->n_in; i++) {
        lt_node *e = lt_pu_producer(g, n->in[i], LT_OP_Expand);
        if (!e || e->n_in < 1 || !e->in[0]) continue;
        int rx;
        int64_t dx[LT_MAX_RANK];
        if (!lt_value_static_shape(e->in[0], &rx, dx) || lt_pu_dtype(e->in[0]) != lt_pu_dtype(n->in[i])) continue;
        /* broadcast of all inputs with input i replaced by the Expand's input */
        int r = rx;
        int64_t d[LT_MAX_RANK];
        memcpy(d, dx, sizeof dx);
        bool ok = true;
        for (int k = 0; k < n->n_in && ok; k++) {
            if (k == i) continue;
            int r2;
            int64_t d2[LT_MAX_RANK];
            ok = lt_pu_broadcast(r, d, rk[k], dk[k], &r2, d2);
            r = r2;
            memcpy(d, d2, sizeof d2);
        }
        if (!ok || r != ro) continue;
        for (int k = 0; k < r && ok; k++)
            if (d[k] != dout[k]) ok = false;
        if (!ok) continue;
        n->in[i] = e->in[0];
        rk[i] = rx;
        memcpy(dk[i], dx, sizeof dx);
        *changed = true;
        lt_pu_remove_if_dead(g, e);
    }
    return LT_OK;
}
