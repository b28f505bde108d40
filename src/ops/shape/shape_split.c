/* shape_split.c — lathe's internal ops of a model split at a data-dependent op: infer + eval.
 *
 * These ops exist only inside lathe (domain "lathe"); the compiler's split stage
 * (src/compile/split.c) introduces them when a node's output size depends on the data:
 *   NonZeroPadded(X) -> (Y, count)   NonZero with an output of a size known at compile time:
 *       Y is int64[rank, numel(X)], of which the first rank * count elements hold NonZero's result
 *       [rank, count] (coordinate k of the c-th nonzero element, row-major order, at Y[k * count +
 *       c]); count is an int64 scalar. The rest of Y is unspecified. X needs a static shape of rank
 *       >= 1. Compiled as one kernel (src/lower/lower_select.c); this eval is its reference.
 *   TopKPadded(X, K) -> (V, I, count)   TopK whose k is known only at run time (K computed or
 *       given): V and I have X's shape; their first elements hold TopK's outputs with the axis of
 *       length k, compact (the layout of an [.., k, ..] tensor); count is k, an int64 scalar. The
 *       node keeps TopK's attributes and opset. Compiled as one kernel (src/lower/lower_scan.c); this
 *       eval is its reference (TopK's eval, copied into the padded outputs).
 *   CompressPadded(X, condition) -> (Y, count)   Compress: Y has X's shape (with `axis`) or
 *       [numel(X)] (without); its first elements hold Compress's output with the axis count long,
 *       compact. The split makes it only where the condition is no longer than the axis (longer
 *       ones keep Compress's own error). Compiled (src/lower/lower_select.c); this eval is its
 *       reference (Compress's eval, copied into the padded output).
 *   NonMaxSuppressionPadded(boxes, scores, [max_output, iou_threshold, score_threshold]) ->
 *       (selected, count)   NonMaxSuppression with selected int64[B * C * N, 3] (boxes [B, N, 4],
 *       scores [B, C, N], static), its first 3 * count elements NonMaxSuppression's [count, 3]
 *       result. The node keeps center_point_box. Compiled (src/lower/lower_nms.c); this eval is its
 *       reference (NonMaxSuppression's eval, copied into the padded output).
 *   UniquePadded(X) -> (Y, indices, inverse_indices, counts, count)   Unique (sorted, or in the
 *       order of appearance with sorted=0) of the flattened X: Y, indices and counts of length
 *       numel(X), their first count elements Unique's outputs; or of X's slices along `axis`: Y of
 *       X's shape holding Unique's Y compact at its start (that axis count long), indices and
 *       counts of length X.dims[axis]. inverse_indices is Unique's own. Compiled
 *       (src/lower/lower_unique.c); this eval is its reference (Unique's eval, copied).
 *   DataDependentRest(...) -> (...)  the part of the model after the data-dependent ops, compiled
 *       at run time for the sizes the data gives. Its output types are set by the split; it runs
 *       only as a step of a compiled plan (the plan's rest hook), never through this eval.
 */
#include "shape_impl.h"

#include <string.h>

static lt_status infer_NonZeroPadded(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return LT_OK;
    if (t->rank < 1) return lt_infer_error(ic, n, "input must have rank >= 1, not 0");
    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0) return LT_OK; /* the split makes it only for static shapes */
        numel *= t->dims[i].value;
    }
    int64_t d[2] = {t->rank, numel};
    LT_TRY(lt_infer_set_i64(ic, n, 0, LT_INT64, 2, d));
    return n->n_out > 1 && n->out[1] ? lt_infer_set_i64(ic, n, 1, LT_INT64, 0, NULL) : LT_OK;
}

/* Output i of n: a tensor of g's dtype and shape dims whose first elements are g's (the padded
 * layout: g is the op's own output, its data-decided axis compact at the start). */
static lt_status padded_out(lt_eval *ev, const lt_node *n, lt_datum **out, int i, const lt_tensor *g, int rank,
                            const int64_t *dims) {
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, i, g->dtype, rank, dims, &y));
    if (g->numel) memcpy(y->data, g->data, (size_t)g->numel * lt_dtype_size(g->dtype));
    return LT_OK;
}

/* Output i of n, when the node has it: the count, an int64 scalar. */
static lt_status count_out(lt_eval *ev, const lt_node *n, lt_datum **out, int i, int64_t count) {
    lt_tensor *c;
    if (n->n_out <= i || !n->out[i]) return LT_OK;
    LT_TRY(lt_out_new(ev, n, out, i, LT_INT64, 0, NULL, &c));
    *(int64_t *)c->data = count;
    return LT_OK;
}

static lt_status eval_NonZeroPadded(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (x->rank < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 1, not 0");
    int64_t nnz = lt_shp_nonzero_count(x), d[2] = {x->rank, x->numel};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_INT64, 2, d, &y));
    lt_shp_nonzero_fill(x, nnz, y->data);
    return count_out(ev, n, out, 1, nnz);
}

static lt_status infer_TopKPadded(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return LT_OK;
    if (t->rank < 1) return lt_infer_error(ic, n, "input must have rank >= 1, not 0");
    int64_t a = lt_attr_int(n, "axis", -1);
    if (a < -t->rank || a >= t->rank) return lt_infer_error(ic, n, "axis %lld is out of range for rank %d", (long long)a, t->rank);
    int64_t d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0) return LT_OK; /* the split makes it only for static shapes */
        d[i] = t->dims[i].value;
    }
    const lt_type *k = n->n_in > 1 && n->in[1] ? &n->in[1]->type : NULL;
    if (!k || (k->dtype != LT_UNDEFINED && !lt_dtype_is_int(k->dtype)))
        return lt_infer_error(ic, n, "K must be a one-element integer tensor");
    LT_TRY(lt_infer_set_i64(ic, n, 0, t->dtype, t->rank, d));
    LT_TRY(lt_infer_set_i64(ic, n, 1, LT_INT64, t->rank, d));
    return n->n_out > 2 && n->out[2] ? lt_infer_set_i64(ic, n, 2, LT_INT64, 0, NULL) : LT_OK;
}

static lt_status eval_TopKPadded(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t a = lt_attr_int(n, "axis", -1);
    if (x->rank < 1 || a < -x->rank || a >= x->rank)
        return lt_op_error(ev, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a, x->rank);
    lt_datum *got[2] = {NULL, NULL};
    lt_status s = lt_op_hooks_get(LT_OP_TopK)->eval(ev, n, in, got); /* TopK's own result, [.., k, ..] */
    for (int i = 0; i < 2 && s == LT_OK; i++) s = padded_out(ev, n, out, i, got[i]->tensor, x->rank, x->dims);
    if (s == LT_OK) s = count_out(ev, n, out, 2, got[0]->tensor->dims[a < 0 ? a + x->rank : a]);
    lt_datum_release(got[0]);
    lt_datum_release(got[1]);
    return s;
}

static lt_status infer_CompressPadded(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0), *c = n->n_in > 1 && n->in[1] ? lt_shp_infer_ranked(n, 1) : NULL;
    if (!t || !c) return LT_OK;
    if (c->rank != 1) return lt_infer_error(ic, n, "condition must be 1-D, got rank %d", c->rank);
    int64_t d[LT_MAX_RANK], numel = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0) return LT_OK; /* the split makes it only for static shapes */
        numel *= d[i] = t->dims[i].value;
    }
    const lt_attr *aa = lt_node_attr(n, "axis");
    if (aa && (aa->i < -t->rank || aa->i >= t->rank))
        return lt_infer_error(ic, n, "axis %lld is out of range for rank %d", (long long)aa->i, t->rank);
    LT_TRY(aa ? lt_infer_set_i64(ic, n, 0, t->dtype, t->rank, d) : lt_infer_set_i64(ic, n, 0, t->dtype, 1, &numel));
    return n->n_out > 1 && n->out[1] ? lt_infer_set_i64(ic, n, 1, LT_INT64, 0, NULL) : LT_OK;
}

static lt_status eval_CompressPadded(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_datum *got[1] = {NULL};
    lt_status s = lt_op_hooks_get(LT_OP_Compress)->eval(ev, n, in, got); /* Compress's own result */
    const lt_attr *aa = lt_node_attr(n, "axis");
    int axis = aa ? (int)(aa->i < 0 ? aa->i + x->rank : aa->i) : 0;
    int64_t numel = x->numel;
    if (s == LT_OK) s = aa ? padded_out(ev, n, out, 0, got[0]->tensor, x->rank, x->dims)
                           : padded_out(ev, n, out, 0, got[0]->tensor, 1, &numel);
    if (s == LT_OK) s = count_out(ev, n, out, 1, got[0]->tensor->dims[axis]);
    lt_datum_release(got[0]);
    return s;
}

/* The static numel of input i, or -1. */
static int64_t static_numel(const lt_node *n, int i) {
    const lt_type *t = n->n_in > i && n->in[i] ? lt_shp_infer_ranked(n, i) : NULL;
    int64_t numel = t ? 1 : -1;
    for (int d = 0; t && d < t->rank && numel >= 0; d++) numel = t->dims[d].value < 0 ? -1 : numel * t->dims[d].value;
    return numel;
}

static lt_status infer_NmsPadded(lt_infer *ic, lt_node *n) {
    const lt_type *b = lt_shp_infer_ranked(n, 0), *sc = lt_shp_infer_ranked(n, 1);
    if (!b || !sc) return LT_OK;
    if (b->rank != 3 || sc->rank != 3) return lt_infer_error(ic, n, "boxes and scores must be 3-D");
    if (static_numel(n, 0) < 0 || static_numel(n, 1) < 0) return LT_OK; /* the split makes it only for static shapes */
    int64_t d[2] = {sc->dims[0].value * sc->dims[1].value * sc->dims[2].value, 3};
    LT_TRY(lt_infer_set_i64(ic, n, 0, LT_INT64, 2, d));
    return n->n_out > 1 && n->out[1] ? lt_infer_set_i64(ic, n, 1, LT_INT64, 0, NULL) : LT_OK;
}

static lt_status eval_NmsPadded(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *sc;
    LT_TRY(lt_in_tensor(ev, n, in, 1, &sc));
    if (sc->rank != 3) return lt_op_error(ev, n, LT_ERR_INVALID, "scores must be 3-D, not rank %d", sc->rank);
    lt_datum *got[1] = {NULL};
    lt_status s = lt_op_hooks_get(LT_OP_NonMaxSuppression)->eval(ev, n, in, got); /* [count, 3] */
    int64_t d[2] = {sc->numel, 3};
    if (s == LT_OK) s = padded_out(ev, n, out, 0, got[0]->tensor, 2, d);
    if (s == LT_OK) s = count_out(ev, n, out, 1, got[0]->tensor->dims[0]);
    lt_datum_release(got[0]);
    return s;
}

/* UniquePadded's axis (normalized) into *axis, -1 without one; false when it is out of range. */
static bool unique_axis(const lt_node *n, int rank, int *axis) {
    const lt_attr *a = lt_node_attr(n, "axis");
    *axis = -1;
    if (!a) return true;
    if (rank < 1 || a->i < -rank || a->i >= rank) return false;
    *axis = (int)(a->i < 0 ? a->i + rank : a->i);
    return true;
}

static lt_status infer_UniquePadded(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return LT_OK;
    int64_t numel = static_numel(n, 0);
    if (numel < 0) return LT_OK; /* the split makes it only for static shapes */
    int axis;
    if (!unique_axis(n, t->rank, &axis)) return lt_infer_error(ic, n, "axis out of range for rank %d", t->rank);
    int64_t items = axis < 0 ? numel : t->dims[axis].value, dims[LT_MAX_RANK];
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
    if (axis < 0) LT_TRY(lt_infer_set_i64(ic, n, 0, t->dtype, 1, &numel));
    else LT_TRY(lt_infer_set_i64(ic, n, 0, t->dtype, t->rank, dims));
    for (int k = 1; k < 4; k++)
        if (n->n_out > k && n->out[k]) LT_TRY(lt_infer_set_i64(ic, n, k, LT_INT64, 1, &items));
    return n->n_out > 4 && n->out[4] ? lt_infer_set_i64(ic, n, 4, LT_INT64, 0, NULL) : LT_OK;
}

static lt_status eval_UniquePadded(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int axis;
    if (!unique_axis(n, x->rank, &axis)) return lt_op_error(ev, n, LT_ERR_INVALID, "axis out of range for rank %d", x->rank);
    lt_datum *got[4] = {NULL, NULL, NULL, NULL};
    lt_status s = lt_op_hooks_get(LT_OP_Unique)->eval(ev, n, in, got); /* Unique's four outputs */
    int64_t numel = x->numel, items = axis < 0 ? numel : x->dims[axis];
    for (int k = 0; k < 4 && s == LT_OK; k++)
        if (n->n_out > k && n->out[k])
            s = k == 0 && axis >= 0 ? padded_out(ev, n, out, k, got[k]->tensor, x->rank, x->dims)
                                    : padded_out(ev, n, out, k, got[k]->tensor, 1, k == 0 ? &numel : &items);
    if (s == LT_OK) s = count_out(ev, n, out, 4, got[0]->tensor->dims[axis < 0 ? 0 : axis]);
    for (int k = 0; k < 4; k++) lt_datum_release(got[k]);
    return s;
}

static lt_status infer_Rest(lt_infer *ic, lt_node *n) {
    (void)ic, (void)n; /* its outputs keep the types the split gave them */
    return LT_OK;
}

static lt_status eval_Rest(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    (void)in, (void)out;
    return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "runs only as a step of a compiled plan");
}

const lt_op_reg lt_ops_split[] = {
    {LT_OP_NonZeroPadded, infer_NonZeroPadded, eval_NonZeroPadded},
    {LT_OP_TopKPadded, infer_TopKPadded, eval_TopKPadded},
    {LT_OP_CompressPadded, infer_CompressPadded, eval_CompressPadded},
    {LT_OP_NonMaxSuppressionPadded, infer_NmsPadded, eval_NmsPadded},
    {LT_OP_UniquePadded, infer_UniquePadded, eval_UniquePadded},
    {LT_OP_DataDependentRest, infer_Rest, eval_Rest},
    {0, NULL, NULL},
};
