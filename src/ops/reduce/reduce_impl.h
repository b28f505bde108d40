/* reduce_impl.h — private to the reduce family (reduce.c, reduce_norm.c, reduce_softmax.c,
 * reduce_scan.c): the hooks the other files define for reduce.c's table, and shared helpers.
 *
 * Helpers:
 *   lt_red_iter walks a tensor's elements in row-major order while keeping a second offset under
 *   arbitrary strides (0 along broadcast/reduced axes): the offset of the parameter element, or of
 *   the output element an input element reduces into.
 *   lt_red_split views a tensor as [outer, n, inner] around one axis.
 * Nothing here is part of the library's interface.
 */
#ifndef LT_REDUCE_IMPL_H
#define LT_REDUCE_IMPL_H

#include "../ops.h"

/* Row-major walk over dims with a second offset `off` under `strides`. */
typedef struct lt_red_iter {
    int rank;
    int64_t dims[LT_MAX_RANK], idx[LT_MAX_RANK], strides[LT_MAX_RANK];
    int64_t off;
} lt_red_iter;

void lt_red_iter_init(lt_red_iter *it, int rank, const int64_t *dims, const int64_t *strides);
static inline void lt_red_iter_next(lt_red_iter *it) {
    for (int d = it->rank - 1; d >= 0; d--) {
        if (++it->idx[d] < it->dims[d]) {
            it->off += it->strides[d];
            return;
        }
        it->off -= it->strides[d] * (it->dims[d] - 1);
        it->idx[d] = 0;
    }
}

/* Strides (in elements) of the keepdims-shaped output of a reduction over `mask` axes, with 0 along
 * reduced axes; *out_numel gets the output's element count. */
void lt_red_mask_strides(int rank, const int64_t *dims, const bool *mask, int64_t *strides,
                         int64_t *out_numel);
/* The shape rule of lt_red_uni_strides: p (rank pr, dims pd) unidirectionally broadcastable to x;
 * dims -1 are unknown (shape inference) and pass. For checks shared by infer and eval. */
lt_status lt_red_uni_check(lt_ctx *ctx, const lt_node *n, int pr, const int64_t *pd, int xr, const int64_t *xd,
                           const char *what);
/* Check `p` is unidirectionally broadcastable to `x` (numpy rules, p's rank <= x's) and give its
 * strides for reading it as x's shape. `what` names p in the error. */
lt_status lt_red_uni_strides(lt_eval *ev, const lt_node *n, const lt_tensor *p, const lt_tensor *x,
                             const char *what, int64_t *strides);
/* [outer, n, inner] around axis (0 <= axis < rank; rank 0 gives 1, 1, 1). */
void lt_red_split(const lt_tensor *t, int axis, int64_t *outer, int64_t *len, int64_t *inner);
/* Error unless t holds a float type (name: which input). */
lt_status lt_red_need_float(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *name);
/* Allocate `count` doubles (count 0 allowed); NULL after recording an error. */
double *lt_red_doubles(lt_eval *ev, int64_t count);

/* infer helpers */
/* Output i: dtype dt, shape of input j (rank -1 when unknown). */
lt_status lt_red_infer_like(lt_infer *ic, lt_node *n, int i, int j, lt_dtype dt);
/* Rank and dims (-1 unknown) of input j's tensor type; false when its rank is unknown. */
bool lt_red_in_shape(const lt_node *n, int j, int *rank, int64_t *dims);
/* Element count of a shape; -1 when a dim is unknown or the product overflows. */
int64_t lt_red_numel(int rank, const int64_t *dims);
/* dtype of input j (UNDEFINED if unknown). */
lt_dtype lt_red_in_dtype(const lt_node *n, int j);

/* hooks defined in the other files of the family */
#define LT_RED_HOOKS(name)                                                                         \
    lt_status lt_red_infer_##name(lt_infer *ic, lt_node *n);                                       \
    lt_status lt_red_eval_##name(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
/* reduce_norm.c */
LT_RED_HOOKS(batchnorm)
LT_RED_HOOKS(instancenorm)
LT_RED_HOOKS(groupnorm)
LT_RED_HOOKS(layernorm)
LT_RED_HOOKS(rmsnorm)
LT_RED_HOOKS(lpnorm)
LT_RED_HOOKS(mvn)
LT_RED_HOOKS(lrn)
LT_RED_HOOKS(dropout)
/* reduce_softmax.c */
LT_RED_HOOKS(softmax) /* Softmax, LogSoftmax, Hardmax (by n->op) */
LT_RED_HOOKS(nllloss)
LT_RED_HOOKS(sceloss)
/* reduce_scan.c */
LT_RED_HOOKS(cumulative) /* CumSum, CumProd */
LT_RED_HOOKS(topk)
#undef LT_RED_HOOKS

#endif
