/* infer_util.c — helpers shared by the infer hooks: setting output types, broadcasting symbolic
 * shapes, reading constant inputs. */
#include "ops.h"

#include <stdio.h>
#include <string.h>

lt_status lt_infer_error(lt_infer *ic, const lt_node *n, const char *fmt, ...) {
    char label[256], msg[LT_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_error(ic->ctx, LT_ERR_INVALID, "%s: %s", lt_node_label(n, label, sizeof label), msg);
}

const lt_type *lt_infer_in(const lt_node *n, int i) {
    if (i >= n->n_in || !n->in[i]) return NULL;
    const lt_value *v = n->in[i];
    while (v->outer && v->type.kind == LT_TK_UNKNOWN) v = v->outer;
    return &v->type;
}

const lt_tensor *lt_infer_const(const lt_node *n, int i) {
    if (i >= n->n_in || !n->in[i]) return NULL;
    const lt_value *v = n->in[i];
    while (v->outer && !v->init) v = v->outer;
    /* A graph input with an initializer can be overridden by the caller: not a constant. */
    if (v->is_input) return NULL;
    if (v->init) return v->init;
    /* The output of a Constant node is as constant as an initializer. */
    if (v->producer && v->producer->op == LT_OP_Constant) return lt_attr_tensor(v->producer, "value");
    return NULL;
}

static lt_status copy_type(lt_infer *ic, lt_type *dst, const lt_type *src) {
    *dst = *src;
    if (src->rank > 0 && src->dims) {
        dst->dims = lt_arena_alloc(ic->arena, (size_t)src->rank * sizeof *dst->dims);
        if (!dst->dims) return lt_error(ic->ctx, LT_ERR_NOMEM, "out of memory (types)");
        memcpy(dst->dims, src->dims, (size_t)src->rank * sizeof *dst->dims);
    }
    if (src->elem) {
        dst->elem = lt_arena_alloc(ic->arena, sizeof *dst->elem);
        if (!dst->elem) return lt_error(ic->ctx, LT_ERR_NOMEM, "out of memory (types)");
        return copy_type(ic, dst->elem, src->elem);
    }
    return LT_OK;
}

lt_status lt_infer_set_type(lt_infer *ic, lt_node *n, int i, const lt_type *t) {
    if (i >= n->n_out || !n->out[i]) return LT_OK;
    return copy_type(ic, &n->out[i]->type, t);
}

lt_status lt_infer_set(lt_infer *ic, lt_node *n, int i, lt_dtype dt, int rank, const lt_dim *dims) {
    if (i >= n->n_out || !n->out[i]) return LT_OK;
    lt_type *t = &n->out[i]->type;
    lt_dim *d = NULL;
    if (rank > 0) {
        d = lt_arena_alloc(ic->arena, (size_t)rank * sizeof *d);
        if (!d) return lt_error(ic->ctx, LT_ERR_NOMEM, "out of memory (types)");
        for (int k = 0; k < rank; k++) d[k] = dims ? dims[k] : (lt_dim){-1, NULL};
    }
    lt_type_set_tensor(t, dt, rank, d);
    return LT_OK;
}

lt_status lt_infer_set_i64(lt_infer *ic, lt_node *n, int i, lt_dtype dt, int rank, const int64_t *dims) {
    lt_dim d[LT_MAX_RANK];
    if (rank > LT_MAX_RANK) return lt_infer_set(ic, n, i, dt, -1, NULL);
    for (int k = 0; k < rank; k++) d[k] = (lt_dim){dims[k] >= 0 ? dims[k] : -1, NULL};
    return lt_infer_set(ic, n, i, dt, rank, d);
}

lt_status lt_infer_copy(lt_infer *ic, lt_node *n, int i, int j) {
    const lt_type *src = lt_infer_in(n, j);
    if (!src) return LT_OK;
    return lt_infer_set_type(ic, n, i, src);
}

static bool dim_eq(lt_dim a, lt_dim b) {
    if (a.value >= 0 || b.value >= 0) return a.value == b.value;
    return a.param && b.param && strcmp(a.param, b.param) == 0;
}

lt_status lt_infer_broadcast(lt_infer *ic, lt_node *n, lt_dtype dt) {
    const lt_type *t0 = lt_infer_in(n, 0);
    if (dt == LT_UNDEFINED && t0) dt = t0->dtype;
    int r = 0;
    for (int k = 0; k < n->n_in; k++) {
        const lt_type *t = lt_infer_in(n, k);
        if (!t) continue;
        if (t->kind != LT_TK_TENSOR || t->rank < 0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
        if (t->rank > r) r = t->rank;
    }
    if (r > LT_MAX_RANK) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    lt_dim out[LT_MAX_RANK];
    for (int d = 0; d < r; d++) out[d] = (lt_dim){1, NULL};
    for (int k = 0; k < n->n_in; k++) {
        const lt_type *t = lt_infer_in(n, k);
        if (!t) continue;
        for (int d = 0; d < t->rank; d++) {
            lt_dim *o = &out[r - t->rank + d], v = t->dims[d];
            if (v.value == 1 || dim_eq(*o, v)) continue;
            if (o->value == 1) { *o = v; continue; }
            if (o->value >= 0 && v.value >= 0)
                return lt_infer_error(ic, n, "dimension %lld and %lld cannot be broadcast (axis %d)",
                                      (long long)o->value, (long long)v.value, r - t->rank + d);
            /* symbolic vs something else: unknown unless one side is known > 1 */
            if (v.value > 1) *o = v;
            else if (o->value < 0) *o = (lt_dim){-1, NULL};
        }
    }
    return lt_infer_set(ic, n, 0, dt, r, out);
}

lt_status lt_infer_same_as_input0(lt_infer *ic, lt_node *n) {
    for (int i = 0; i < n->n_out; i++) LT_TRY(lt_infer_copy(ic, n, i, 0));
    return LT_OK;
}
lt_status lt_infer_broadcast_same(lt_infer *ic, lt_node *n) { return lt_infer_broadcast(ic, n, LT_UNDEFINED); }
lt_status lt_infer_broadcast_bool(lt_infer *ic, lt_node *n) { return lt_infer_broadcast(ic, n, LT_BOOL); }
