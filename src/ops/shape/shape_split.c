/* shape_split.c — lathe's internal ops of a model split at a data-dependent op: infer + eval.
 *
 * These ops exist only inside lathe (domain "lathe"); the compiler's split stage
 * (src/compile/split.c) introduces them when a node's output size depends on the data:
 *   NonZeroPadded(X) -> (Y, count)   NonZero with an output of a size known at compile time:
 *       Y is int64[rank, numel(X)], of which the first rank * count elements hold NonZero's result
 *       [rank, count] (coordinate k of the c-th nonzero element, row-major order, at Y[k * count +
 *       c]); count is an int64 scalar. The rest of Y is unspecified. X needs a static shape of rank
 *       >= 1. Compiled as one kernel (src/lower/lower_select.c); this eval is its reference.
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

static lt_status eval_NonZeroPadded(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (x->rank < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 1, not 0");
    int64_t nnz = lt_shp_nonzero_count(x), d[2] = {x->rank, x->numel};
    lt_tensor *y, *c;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_INT64, 2, d, &y));
    lt_shp_nonzero_fill(x, nnz, y->data);
    if (n->n_out < 2 || !n->out[1]) return LT_OK;
    LT_TRY(lt_out_new(ev, n, out, 1, LT_INT64, 0, NULL, &c));
    *(int64_t *)c->data = nnz;
    return LT_OK;
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
    {LT_OP_DataDependentRest, infer_Rest, eval_Rest},
    {0, NULL, NULL},
};
