/* lower_unique.c — `lower` hook of UniquePadded (src/ops/shape/shape_split.c): a Unique (sorted or in
 * the order of appearance, of the flattened X or of its slices along an axis) whose outputs have a
 * size known at compile time, the compiled half of a model split at it (src/compile/split.h).
 *
 * Kernel shape: one serial kernel (every loop role REDUCE, LT_LOOP_SERIAL: the iterations carry state,
 * so no schedule parallelizes or vectorizes them). On a GPU passes 1-2 are a bitonic sort on one block
 * (sort_gpu), and pass 3 of a sorted Unique without an axis runs on the block too (scan_groups_gpu);
 * the other passes run on its thread 0. X is read flat (element p at its row-major multi-index):
 *   1. the indices 0..N-1 in `perm`, an int64 [N] array: the counts output (a scratch buffer when the
 *      kernel has none);
 *   2. sort (merge_sort): bottom-up merges of runs of 1, 2, 4, .. indices, perm -> a scratch buffer
 *      -> perm each round, a merge taking the right run's next index only when it ranks before the
 *      left's; perm ends in ascending order;
 *   3. scan: sorted position i reads p = perm[i] first, then starts group u (Y[u] = X[p], indices[u]
 *      = p) when X[p] differs from the previous element's key, or extends it; counts[u] = the group's
 *      size so far, inverse_indices[p] = u. As u <= i, counts[u] only overwrites permutation slots
 *      already read. The number of groups is stored to the count output.
 * With sorted=0 the groups come in the order of their first occurrences instead: pass 3 stores, for
 * every element p, its group's leader (the group's first element in the sorted order, its first
 * occurrence) in inverse_indices (a scratch buffer when the kernel has none) and counts nothing; then
 *   4. appearance: p = 0..N-1 in order: p is its own leader -> the next group u (Y[u] = X[p],
 *      indices[u] = p, counts[u] = 1, inverse_indices[p] = u); else its leader, an earlier element,
 *      already holds its group: inverse_indices[p] = that group, whose count grows. The permutation
 *      is no longer read, so counts may overwrite it.
 * With `axis` the items sorted are X's N = X.dims[axis] slices along it instead of its N = numel(X)
 * elements: two slices compare at their first differing elements (row-major with the axis removed,
 * numpy's order; slice_cmp, a serial loop inside every comparison), a group's start records its
 * first slice, and
 *   5. copy: Y[o, v, i] = X[o, first[v], i] for each group v, compact as if the axis were `count`
 *      long (the count known only now), first being indices (a scratch buffer when it has none).
 * The order is total: index a ranks before b when its key is smaller, or the keys are equal and a < b.
 * That is the permutation of the reference's stable merge sort (src/ops/shape/shape_unique.c), so a
 * group is led by its first occurrence (Y holds that element, a -0 or a 0 as stored). Keys compare as
 * the reference compares them: signed integers as int64, unsigned and bool as uint64, floats in their
 * compute type (float16 and bfloat16 widen exactly to float; float64 stays double) with -0 == 0, NaNs
 * equal to each other and after every number. X is read with lt_lower_value at every comparison, so a
 * fused elementwise prologue (Unique(Abs(x))) is computed in the kernel; a float16 / bfloat16 value
 * computed there is rounded to its type first, as the interpreter holds it between the ops, and Y
 * copies a stored float16 / bfloat16 X as bits (a NaN keeps its payload). Every output
 * has a buffer, used by the model or not (fusion makes all of an anchor's outputs group outputs); one
 * without would not be stored, and without counts' buffer `perm` would be a scratch argument.
 */
#include "lower_impl.h"
#include "lower_gpu.h"

#include <stdio.h>

#define K (lc->k)

/* The kernel under construction: X's shape, the key type, the output buffers (NULL: not stored). */
typedef struct uq {
    lt_lctx *lc;
    const lt_node *n;
    int rank;
    int64_t dims[LT_MAX_RANK];
    int64_t numel;
    lt_dtype dt;   /* X's dtype */
    lt_dtype kt;   /* the key type: INT64, UINT64, FLOAT or DOUBLE */
    lt_lbuf *yb, *ib, *invb, *cb, *nb;
    lt_lbuf *perm; /* the permutation: cb, or a scratch buffer */
    bool sorted;   /* sorted=1; else the order of appearance (pass 4) */
    lt_lbuf *lead; /* sorted=0: each element's group leader, then its group: invb, or a scratch buffer */
    /* with `axis`: the items are X's slices along it, slice j holding X[o, j, i] (o < outer, i < inner) */
    bool by_axis;
    int64_t items, outer, dim, inner; /* items: numel, or dim with an axis */
    lt_lbuf *first; /* by_axis: each group's first slice (ib, or a scratch buffer when Y needs it;
                     * NULL when neither is stored); Y is copied last */
    lt_lvar *ngroups; /* by_axis: the group count, for the copy */
} uq;

static bool key_class_ok(lt_dtype dt) {
    lt_dclass cls = lt_dtype_get(dt)->cls;
    return cls == LT_DC_SINT || cls == LT_DC_UINT || cls == LT_DC_BOOL || cls == LT_DC_FLOAT;
}

static lt_dtype key_type(lt_dtype dt) {
    switch (lt_dtype_get(dt)->cls) {
    case LT_DC_SINT: return LT_INT64;
    case LT_DC_UINT:
    case LT_DC_BOOL: return LT_UINT64;
    default: return lt_lower_cdtype(dt);
    }
}

static bool accept_unique(const lt_node *n, char *why, size_t size) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (n->n_in < 1 || !n->in[0] || !lt_lower_shape(n->in[0], &rank, dims)) {
        snprintf(why, size, "input has no static shape");
        return false;
    }
    const lt_attr *aa = lt_node_attr(n, "axis");
    if (aa && (rank < 1 || aa->i < -rank || aa->i >= rank)) {
        snprintf(why, size, "axis %lld out of range for rank %d", (long long)aa->i, rank);
        return false;
    }
    lt_dtype dt = n->in[0]->type.dtype;
    if (!key_class_ok(dt) || !lt_lower_dtype_ok(dt)) {
        snprintf(why, size, "input dtype %s", lt_dtype_name(dt));
        return false;
    }
    if (n->n_out != 5) {
        snprintf(why, size, "%d outputs, not 5", n->n_out);
        return false;
    }
    for (int k = 1; k < 5; k++)
        if (n->out[k] && n->out[k]->type.dtype != LT_INT64) {
            snprintf(why, size, "output %d is not int64", k);
            return false;
        }
    return lt_lower_accept_default(n, why, size);
}

/* ---- reading X ---- */

/* X at flat index p (a variable) in its compute type; a float16 / bfloat16 value computed in the
 * kernel (a fused prologue) is rounded to its type first. *raw (when not NULL) gets the load of a
 * stored float16 / bfloat16 X (its bits), NULL otherwise. */
static lt_status x_at(uq *u, lt_lnode *flat, lt_lnode **x, lt_lnode **raw) {
    lt_lctx *lc = u->lc;
    const lt_value *xv = u->n->in[0];
    lt_lnode *idx[LT_MAX_RANK];
    LT_TRY(LT_LNN(lc, flat));
    LT_TRY(lt_lower_unflat(lc, flat, u->rank, u->dims, idx));
    LT_TRY(lt_lower_value(lc, xv, idx, x));
    LT_TRY(LT_LNN(lc, *x));
    bool narrow = lt_dtype_size(u->dt) == 2 && lt_dtype_is_float(u->dt);
    if (raw) {
        const lt_lnode *l = (*x)->kind == LT_L_CAST ? lt_lexpr_a(*x) : NULL;
        bool stored = l && l->kind == LT_L_LOAD && l->dtype == u->dt && !lc->in_group[xv->id];
        *raw = narrow && stored ? lt_l_load(K, l->buf, lt_lload_index(l)) : NULL;
    }
    bool rounded = (*x)->kind == LT_L_CAST && lt_lexpr_a(*x)->dtype == u->dt; /* a Cast to dt's value */
    if (narrow && lc->in_group[xv->id] && !rounded) *x = lt_lower_conv(lc, lt_l_cast(K, u->dt, *x), u->dt);
    return LT_LNN(lc, *x);
}

/* The flat index of element e (an expression) of slice j (a variable): X[o, j, i], e = o * inner + i. */
static lt_lnode *slice_elem(uq *u, lt_lvar *j, lt_lnode *e) {
    lt_lctx *lc = u->lc;
    lt_lnode *o = u->inner == 1 ? e : lt_l_binary(K, LT_LOP_DIV, e, lt_l_int(K, u->inner));
    lt_lnode *i = u->inner == 1 ? lt_l_int(K, 0) : lt_l_binary(K, LT_LOP_MOD, e, lt_l_int(K, u->inner));
    lt_lnode *row = u->outer == 1 ? lt_l_var(K, j) : lt_l_add(K, lt_l_mul(K, o, lt_l_int(K, u->dim)), lt_l_var(K, j));
    return lt_l_add(K, lt_l_mul(K, row, lt_l_int(K, u->inner)), i);
}

/* LET k = the key of X at the flat index `flat`. */
static lt_status let_key_at(uq *u, lt_lvar *k, lt_lnode *flat, lt_lnode **res) {
    lt_lnode *x = NULL;
    LT_TRY(x_at(u, flat, &x, NULL));
    lt_lctx *lc = u->lc;
    *res = lt_l_let(K, k, x->dtype == u->kt ? x : lt_l_cast(K, u->kt, x));
    return LT_LNN(lc, *res);
}

/* LET k = the key of item p: X at flat index p; with an axis, slices compare element by element
 * (slice_cmp) and k is an unused zero. */
static lt_status let_key(uq *u, lt_lvar *k, lt_lvar *p, lt_lnode **res);

/* ---- the order ---- */

static bool key_is_float(const uq *u) { return lt_dtype_is_float(u->kt); }

/* key a < key b: for floats a number is before a NaN, NaNs tie. */
static lt_lnode *key_less(uq *u, lt_lvar *a, lt_lvar *b) {
    lt_lctx *lc = u->lc;
    lt_lnode *lt = lt_l_binary(K, LT_LOP_LT, lt_l_var(K, a), lt_l_var(K, b));
    if (!key_is_float(u)) return lt;
    lt_lnode *num_nan = lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_NOT, lt_l_unary(K, LT_LOP_ISNAN, lt_l_var(K, a))),
                                    lt_l_unary(K, LT_LOP_ISNAN, lt_l_var(K, b)));
    return lt_l_binary(K, LT_LOP_OR, num_nan, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, a), lt_l_var(K, b)));
}

/* key a == key b: for floats -0 == 0 and NaNs are equal. */
static lt_lnode *key_equal(uq *u, lt_lvar *a, lt_lvar *b) {
    lt_lctx *lc = u->lc;
    lt_lnode *eq = lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, a), lt_l_var(K, b));
    if (!key_is_float(u)) return eq;
    lt_lnode *nans = lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_ISNAN, lt_l_var(K, a)),
                                 lt_l_unary(K, LT_LOP_ISNAN, lt_l_var(K, b)));
    return lt_l_binary(K, LT_LOP_OR, nans, eq);
}

/* Element (key ka, index ia) ranks before (kb, ib): a smaller key, or an equal key and a smaller index. */
static lt_lnode *ranks_before(uq *u, lt_lvar *ka, lt_lvar *ia, lt_lvar *kb, lt_lvar *ib) {
    lt_lctx *lc = u->lc;
    lt_lnode *tie = lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_NOT, key_less(u, kb, ka)),
                                lt_l_binary(K, LT_LOP_LT, lt_l_var(K, ia), lt_l_var(K, ib)));
    return lt_l_binary(K, LT_LOP_OR, key_less(u, ka, kb), tie);
}

static lt_lnode *zero_key(uq *u) {
    lt_lctx *lc = u->lc;
    return key_is_float(u) ? lt_l_float(K, u->kt, 0) : lt_l_cast(K, u->kt, lt_l_int(K, 0));
}

static lt_status let_key(uq *u, lt_lvar *k, lt_lvar *p, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    if (u->by_axis) {
        *res = lt_l_let(K, k, zero_key(u));
        return LT_LNN(lc, *res);
    }
    return let_key_at(u, k, lt_l_var(K, p), res);
}

/* LET c = the order of slices a and b: -1, 0 or 1 at their first elements that differ (row-major
 * with the axis removed), compared as keys: a serial loop over the slice that stops comparing once
 * it has an answer. */
static lt_status slice_cmp(uq *u, lt_lvar *a, lt_lvar *b, lt_lvar *c, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lvar *e = lt_kernel_var(K, "e", LT_INT64), *ka = lt_kernel_var(K, "ka", u->kt), *kb = lt_kernel_var(K, "kb", u->kt);
    if (!e || !ka || !kb) return lt_lower_nomem(lc);
    lt_lnode *step[3];
    LT_TRY(let_key_at(u, ka, slice_elem(u, a, lt_l_var(K, e)), &step[0]));
    LT_TRY(let_key_at(u, kb, slice_elem(u, b, lt_l_var(K, e)), &step[1]));
    lt_lnode *order = lt_l_select(K, key_less(u, ka, kb), lt_l_int(K, -1),
                                  lt_l_select(K, key_less(u, kb, ka), lt_l_int(K, 1), lt_l_int(K, 0)));
    step[2] = lt_l_assign(K, c, order);
    lt_lnode *undecided = lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, c), lt_l_int(K, 0));
    lt_lnode *all[2] = {
        lt_l_let(K, c, lt_l_int(K, 0)),
        lt_l_for(K, e, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, u->outer * u->inner), LT_LOOP_SERIAL,
                 lt_l_if(K, undecided, lt_l_seq(K, 3, step), NULL)),
    };
    *res = lt_l_seq(K, 2, all);
    return LT_LNN(lc, *res);
}

/* IF item (key ka, index ia) ranks before (kb, ib) THEN t ELSE e (NULL: nothing). */
static lt_status if_before(uq *u, lt_lvar *ka, lt_lvar *ia, lt_lvar *kb, lt_lvar *ib, lt_lnode *t, lt_lnode *e,
                           lt_lnode **res) {
    lt_lctx *lc = u->lc;
    if (!u->by_axis) {
        *res = lt_l_if(K, ranks_before(u, ka, ia, kb, ib), t, e);
        return LT_LNN(lc, *res);
    }
    lt_lvar *c = lt_kernel_var(K, "cmp", LT_INT64);
    if (!c) return lt_lower_nomem(lc);
    lt_lnode *all[2];
    LT_TRY(slice_cmp(u, ia, ib, c, &all[0]));
    lt_lnode *tie = lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, c), lt_l_int(K, 0)),
                                lt_l_binary(K, LT_LOP_LT, lt_l_var(K, ia), lt_l_var(K, ib)));
    lt_lnode *before = lt_l_binary(K, LT_LOP_OR, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, c), lt_l_int(K, 0)), tie);
    all[1] = lt_l_if(K, before, t, e);
    *res = lt_l_seq(K, 2, all);
    return LT_LNN(lc, *res);
}

static lt_lnode *perm_at(uq *u, lt_lnode *slot) { return lt_l_load(u->lc->k, u->perm, slot); }

/* ---- passes 1-2 on the CPU: a bottom-up merge sort ---- */

/* One merge pass from src to dst: runs of `width` items (a variable) merged in pairs, each output
 * position k of block [lo, hi) taking the left run's next item unless the right run's next ranks
 * before it (a run that is done gives the other's). A width of at least N copies src. */
static lt_status merge_pass(uq *u, lt_lbuf *src, lt_lbuf *dst, lt_lnode *width_expr, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    const char *nm[] = {"mw", "mb", "mlo", "mmid", "mhi", "mi", "mj", "mk", "ma", "mb2", "mleft"};
    lt_lvar *v[11];
    for (int x = 0; x < 11; x++)
        if (!(v[x] = lt_kernel_var(K, nm[x], LT_INT64))) return lt_lower_nomem(lc);
    lt_lvar *w = v[0], *blk = v[1], *lo = v[2], *mid = v[3], *hi = v[4], *i = v[5], *j = v[6], *k = v[7], *a = v[8],
            *b = v[9], *left = v[10];
    lt_lvar *ka = lt_kernel_var(K, "mka", u->kt), *kb = lt_kernel_var(K, "mkb", u->kt);
    if (!ka || !kb) return lt_lower_nomem(lc);
    int64_t last = u->items - 1;
    lt_lnode *n = lt_l_int(K, u->items);
    lt_lnode *cmp[3];
    LT_TRY(let_key(u, ka, a, &cmp[0]));
    LT_TRY(let_key(u, kb, b, &cmp[1]));
    LT_TRY(if_before(u, kb, b, ka, a, lt_l_assign(K, left, lt_l_int(K, 0)), NULL, &cmp[2]));
    lt_lnode *take_l[2] = {lt_l_store(K, dst, lt_l_var(K, k), lt_l_var(K, a)), lt_l_assign(K, i, lt_l_add(K, lt_l_var(K, i), lt_l_int(K, 1)))};
    lt_lnode *take_r[2] = {lt_l_store(K, dst, lt_l_var(K, k), lt_l_var(K, b)), lt_l_assign(K, j, lt_l_add(K, lt_l_var(K, j), lt_l_int(K, 1)))};
    lt_lnode *right_open = lt_l_if(K, lt_l_binary(K, LT_LOP_GE, lt_l_var(K, i), lt_l_var(K, mid)),
                                   lt_l_assign(K, left, lt_l_int(K, 0)), lt_l_seq(K, 3, cmp));
    lt_lnode *step[5] = {
        lt_l_let(K, a, lt_l_load(K, src, lt_l_binary(K, LT_LOP_MIN, lt_l_var(K, i), lt_l_int(K, last)))),
        lt_l_let(K, b, lt_l_load(K, src, lt_l_binary(K, LT_LOP_MIN, lt_l_var(K, j), lt_l_int(K, last)))),
        lt_l_let(K, left, lt_l_int(K, 1)),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, j), lt_l_var(K, hi)), right_open, NULL),
        lt_l_if(K, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, left), lt_l_int(K, 0)), lt_l_seq(K, 2, take_l), lt_l_seq(K, 2, take_r)),
    };
    lt_lnode *two_w = lt_l_mul(K, lt_l_var(K, w), lt_l_int(K, 2));
    lt_lnode *block[6] = {
        lt_l_let(K, lo, lt_l_mul(K, lt_l_var(K, blk), two_w)),
        lt_l_let(K, mid, lt_l_binary(K, LT_LOP_MIN, lt_l_add(K, lt_l_var(K, lo), lt_l_var(K, w)), n)),
        lt_l_let(K, hi, lt_l_binary(K, LT_LOP_MIN, lt_l_add(K, lt_l_var(K, lo), lt_l_mul(K, lt_l_var(K, w), lt_l_int(K, 2))),
                                    lt_l_int(K, u->items))),
        lt_l_let(K, i, lt_l_var(K, lo)),
        lt_l_let(K, j, lt_l_var(K, mid)),
        lt_l_for(K, k, LT_ROLE_REDUCE, lt_l_var(K, lo), lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, hi), lt_l_var(K, lo)),
                 LT_LOOP_SERIAL, lt_l_seq(K, 5, step)),
    };
    lt_lnode *blocks = lt_l_binary(K, LT_LOP_DIV, lt_l_add(K, lt_l_int(K, u->items - 1), lt_l_mul(K, lt_l_var(K, w), lt_l_int(K, 2))),
                                   lt_l_mul(K, lt_l_var(K, w), lt_l_int(K, 2)));
    lt_lnode *all[2] = {lt_l_let(K, w, width_expr),
                        lt_l_for(K, blk, LT_ROLE_REDUCE, lt_l_int(K, 0), blocks, LT_LOOP_SERIAL, lt_l_seq(K, 6, block))};
    *res = lt_l_seq(K, 2, all);
    return LT_LNN(lc, *res);
}

/* perm = 0..N-1 sorted (passes 1-2 on the CPU): merges of runs of 1, 2, 4, .. items, two passes per
 * round, perm -> a scratch buffer -> perm, so perm holds the result. */
static lt_status merge_sort(uq *u, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    int logn = 0;
    while (((int64_t)1 << logn) < u->items) logn++;
    lt_lbuf *tmp = lt_lower_add_scratch(lc, "merged", LT_INT64, u->items);
    lt_lvar *i = lt_kernel_var(K, "m0", LT_INT64), *r = lt_kernel_var(K, "mr", LT_INT64);
    if (!tmp || !i || !r) return lt_lower_nomem(lc);
    lt_lnode *pass[2];
    /* round r: widths 4^r (perm -> tmp) and 2 * 4^r (tmp -> perm) */
    lt_lnode *w1 = lt_l_binary(K, LT_LOP_SHL, lt_l_int(K, 1), lt_l_mul(K, lt_l_var(K, r), lt_l_int(K, 2)));
    lt_lnode *w2 = lt_l_binary(K, LT_LOP_SHL, lt_l_int(K, 1), lt_l_add(K, lt_l_mul(K, lt_l_var(K, r), lt_l_int(K, 2)), lt_l_int(K, 1)));
    LT_TRY(merge_pass(u, u->perm, tmp, w1, &pass[0]));
    LT_TRY(merge_pass(u, tmp, u->perm, w2, &pass[1]));
    lt_lnode *all[2] = {
        lt_l_for(K, i, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, u->items), LT_LOOP_SERIAL,
                 lt_l_store(K, u->perm, lt_l_var(K, i), lt_l_var(K, i))),
        lt_l_for(K, r, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, (logn + 1) / 2), LT_LOOP_SERIAL, lt_l_seq(K, 2, pass)),
    };
    *res = lt_l_seq(K, 2, all);
    return LT_LNN(lc, *res);
}

/* ---- pass 3: the groups ---- */

/* A group starts at element p (a variable) as group g: Y[g] = X[p], indices[g] = p. */
/* Y's value of X at the flat index `flat`: a stored float16 / bfloat16 as its bits. */
static lt_status y_value(uq *u, lt_lnode *flat, lt_lnode **y) {
    lt_lctx *lc = u->lc;
    lt_lnode *x = NULL, *raw = NULL;
    LT_TRY(x_at(u, flat, &x, &raw));
    *y = raw ? raw : x->dtype == u->dt ? x : lt_l_cast(K, u->dt, x);
    return LT_LNN(lc, *y);
}

/* A group starts at item p (a variable) as group g: Y[g] = X[p] and indices[g] = p; with an axis
 * first[g] = p (Y is copied once the count is known: copy_slices). */
static lt_status start_group(uq *u, lt_lvar *p, lt_lvar *g, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lnode *s[2];
    int ns = 0;
    if (u->by_axis) {
        *res = u->first ? lt_l_store(K, u->first, lt_l_var(K, g), lt_l_var(K, p)) : lt_l_empty(K);
        return LT_LNN(lc, *res);
    }
    if (u->yb) {
        lt_lnode *y = NULL;
        LT_TRY(y_value(u, lt_l_var(K, p), &y));
        s[ns++] = lt_l_store(K, u->yb, lt_l_var(K, g), y);
    }
    if (u->ib) s[ns++] = lt_l_store(K, u->ib, lt_l_var(K, g), lt_l_var(K, p));
    *res = lt_l_seq(K, ns, s);
    return LT_LNN(lc, *res);
}

/* For sorted position i: p = perm[i]; a new group when X[p]'s key differs from the previous one (or i
 * is 0), else the group grows; counts[g] = its size so far, inverse_indices[p] = g. Then count = g + 1. */
static lt_status scan_groups(uq *u, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lvar *i = lt_kernel_var(K, "r2", LT_INT64), *p = lt_kernel_var(K, "p", LT_INT64);
    lt_lvar *g = lt_kernel_var(K, "g", LT_INT64), *size = lt_kernel_var(K, "size", LT_INT64);
    /* the previous item's key, or with an axis the previous slice (compared by slice_cmp) */
    lt_lvar *k = lt_kernel_var(K, "key", u->kt), *prev = lt_kernel_var(K, "prev", u->by_axis ? LT_INT64 : u->kt);
    lt_lvar *c = lt_kernel_var(K, "cmp", LT_INT64);
    if (!i || !p || !g || !size || !k || !prev || !c) return lt_lower_nomem(lc);
    lt_lnode *start = NULL, *get_key = NULL;
    if (u->sorted) LT_TRY(start_group(u, p, g, &start));
    if (u->by_axis) LT_TRY(slice_cmp(u, p, prev, c, &get_key));
    else LT_TRY(let_key(u, k, p, &get_key));
    lt_lnode *differs = u->by_axis ? lt_l_binary(K, LT_LOP_NE, lt_l_var(K, c), lt_l_int(K, 0))
                                   : lt_l_unary(K, LT_LOP_NOT, key_equal(u, k, prev));
    lt_lnode *is_new = lt_l_binary(K, LT_LOP_OR, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, g), lt_l_int(K, 0)), differs);
    lt_lnode *open[3] = {lt_l_assign(K, g, lt_l_add(K, lt_l_var(K, g), lt_l_int(K, 1))),
                         u->sorted ? lt_l_assign(K, size, lt_l_int(K, 1)) : lt_l_assign(K, size, lt_l_var(K, p)), start};
    lt_lnode *grow = lt_l_assign(K, size, lt_l_add(K, lt_l_var(K, size), lt_l_int(K, 1)));
    lt_lnode *body[6];
    int nb = 0;
    body[nb++] = lt_l_let(K, p, perm_at(u, lt_l_var(K, i)));
    body[nb++] = get_key;
    if (u->sorted) { /* the group's size so far, and each element's group */
        body[nb++] = lt_l_if(K, is_new, lt_l_seq(K, 3, open), grow);
        if (u->cb) body[nb++] = lt_l_store(K, u->cb, lt_l_var(K, g), lt_l_var(K, size));
        if (u->invb) body[nb++] = lt_l_store(K, u->invb, lt_l_var(K, p), lt_l_var(K, g));
    } else { /* `size` holds the group's leader: each element's is stored (pass 4 numbers the groups) */
        body[nb++] = lt_l_if(K, is_new, lt_l_seq(K, 2, open), NULL);
        body[nb++] = lt_l_store(K, u->lead, lt_l_var(K, p), lt_l_var(K, size));
    }
    body[nb++] = lt_l_assign(K, prev, lt_l_var(K, u->by_axis ? p : k));
    lt_lnode *all[7];
    int na = 0;
    all[na++] = lt_l_let(K, g, lt_l_int(K, -1));
    all[na++] = lt_l_let(K, size, lt_l_int(K, 0));
    all[na++] = lt_l_let(K, prev, u->by_axis ? lt_l_int(K, 0) : zero_key(u));
    all[na++] = lt_l_for(K, i, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, u->items), LT_LOOP_SERIAL, lt_l_seq(K, nb, body));
    if (u->nb) all[na++] = lt_l_store(K, u->nb, lt_l_int(K, 0), lt_l_add(K, lt_l_var(K, g), lt_l_int(K, 1)));
    if (u->ngroups) all[na++] = lt_l_assign(K, u->ngroups, lt_l_add(K, lt_l_var(K, g), lt_l_int(K, 1)));
    *res = lt_l_seq(K, na, all);
    return LT_LNN(lc, *res);
}

/* Pass 4 (sorted=0): the groups in the order of their first occurrences (see the top). */
static lt_status number_by_appearance(uq *u, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lvar *p = lt_kernel_var(K, "r3", LT_INT64), *g = lt_kernel_var(K, "g", LT_INT64);
    lt_lvar *l = lt_kernel_var(K, "l", LT_INT64), *og = lt_kernel_var(K, "og", LT_INT64);
    if (!p || !g || !l || !og) return lt_lower_nomem(lc);
    lt_lnode *start = NULL;
    LT_TRY(start_group(u, p, g, &start));
    lt_lnode *open[4], *join[3];
    int no = 0, nj = 0;
    open[no++] = lt_l_assign(K, g, lt_l_add(K, lt_l_var(K, g), lt_l_int(K, 1)));
    open[no++] = start;
    open[no++] = lt_l_store(K, u->lead, lt_l_var(K, p), lt_l_var(K, g));
    if (u->cb) open[no++] = lt_l_store(K, u->cb, lt_l_var(K, g), lt_l_int(K, 1));
    join[nj++] = lt_l_let(K, og, lt_l_load(K, u->lead, lt_l_var(K, l))); /* the leader's group: l < p */
    join[nj++] = lt_l_store(K, u->lead, lt_l_var(K, p), lt_l_var(K, og));
    if (u->cb)
        join[nj++] = lt_l_store(K, u->cb, lt_l_var(K, og), lt_l_add(K, lt_l_load(K, u->cb, lt_l_var(K, og)), lt_l_int(K, 1)));
    lt_lnode *body[2] = {
        lt_l_let(K, l, lt_l_load(K, u->lead, lt_l_var(K, p))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, l), lt_l_var(K, p)), lt_l_seq(K, no, open), lt_l_seq(K, nj, join)),
    };
    lt_lnode *all[2] = {
        lt_l_let(K, g, lt_l_int(K, -1)),
        lt_l_for(K, p, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, u->items), LT_LOOP_SERIAL, lt_l_seq(K, 2, body)),
    };
    *res = lt_l_seq(K, 2, all);
    return LT_LNN(lc, *res);
}

/* Last pass with an axis: Y, compact as Unique's own (the axis ngroups long) at the buffer's start:
 * Y[o, v, i] = X[o, first[v], i] for v < ngroups. */
static lt_status copy_slices(uq *u, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lvar *v = lt_kernel_var(K, "r4", LT_INT64), *e = lt_kernel_var(K, "r5", LT_INT64), *src = lt_kernel_var(K, "src", LT_INT64);
    if (!v || !e || !src) return lt_lower_nomem(lc);
    lt_lnode *y = NULL;
    LT_TRY(y_value(u, slice_elem(u, src, lt_l_var(K, e)), &y));
    lt_lnode *ev = lt_l_var(K, e);
    lt_lnode *o = u->inner == 1 ? ev : lt_l_binary(K, LT_LOP_DIV, ev, lt_l_int(K, u->inner));
    lt_lnode *in = u->inner == 1 ? lt_l_int(K, 0) : lt_l_binary(K, LT_LOP_MOD, lt_l_var(K, e), lt_l_int(K, u->inner));
    lt_lnode *row = lt_l_add(K, lt_l_mul(K, o, lt_l_var(K, u->ngroups)), lt_l_var(K, v));
    lt_lnode *copy = lt_l_store(K, u->yb, lt_l_add(K, lt_l_mul(K, row, lt_l_int(K, u->inner)), in), y);
    lt_lnode *slice[2] = {
        lt_l_let(K, src, lt_l_load(K, u->first, lt_l_var(K, v))),
        lt_l_for(K, e, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, u->outer * u->inner), LT_LOOP_SERIAL, copy),
    };
    lt_lnode *body = lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, v), lt_l_var(K, u->ngroups)), lt_l_seq(K, 2, slice), NULL);
    *res = lt_l_for(K, v, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, u->items), LT_LOOP_SERIAL, body);
    return LT_LNN(lc, *res);
}

/* ---- the kernel ---- */

/* Buffer of output k, or NULL when the node or the kernel has none. */
static lt_lbuf *out_buf(lt_lctx *lc, const lt_node *n, int k) { return n->out[k] ? lc->vbuf[n->out[k]->id] : NULL; }

static lt_status uq_init(lt_lctx *lc, const lt_node *n, uq *u) {
    *u = (uq){.lc = lc, .n = n, .dt = n->in[0]->type.dtype};
    if (!lt_lower_shape(n->in[0], &u->rank, u->dims) || n->n_out != 5)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input has no static shape or the outputs are not 5");
    u->numel = lt_lower_numel(n->in[0]);
    u->kt = key_type(u->dt);
    u->items = u->numel, u->outer = 1, u->dim = u->numel, u->inner = 1;
    const lt_attr *aa = lt_node_attr(n, "axis");
    if (aa) {
        if (u->rank < 1 || aa->i < -u->rank || aa->i >= u->rank)
            return lt_lower_error(lc, n, LT_ERR_INVALID, "axis %lld out of range for rank %d", (long long)aa->i, u->rank);
        int a = (int)(aa->i < 0 ? aa->i + u->rank : aa->i);
        u->by_axis = true, u->dim = u->items = u->dims[a];
        for (int d = 0; d < a; d++) u->outer *= u->dims[d];
        for (int d = a + 1; d < u->rank; d++) u->inner *= u->dims[d];
    }
    u->yb = out_buf(lc, n, 0), u->ib = out_buf(lc, n, 1), u->invb = out_buf(lc, n, 2);
    u->cb = out_buf(lc, n, 3), u->nb = out_buf(lc, n, 4);
    if ((u->yb && u->yb->dtype != u->dt) || (u->ib && u->ib->dtype != LT_INT64) || (u->invb && u->invb->dtype != LT_INT64) ||
        (u->cb && u->cb->dtype != LT_INT64) || (u->nb && u->nb->dtype != LT_INT64))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    u->perm = u->cb ? u->cb : lt_lower_add_scratch(lc, "perm", LT_INT64, u->items);
    if (!u->perm) return lt_lower_nomem(lc);
    u->sorted = lt_attr_int(n, "sorted", 1) != 0;
    if (!u->sorted && !(u->lead = u->invb ? u->invb : lt_lower_add_scratch(lc, "lead", LT_INT64, u->items)))
        return lt_lower_nomem(lc);
    if (u->by_axis && u->yb) { /* Y needs each group's first slice and the count */
        if (!(u->first = u->ib ? u->ib : lt_lower_add_scratch(lc, "first", LT_INT64, u->items)) ||
            !(u->ngroups = lt_kernel_var(K, "ngroups", LT_INT64)))
            return lt_lower_nomem(lc);
    } else if (u->by_axis) {
        u->first = u->ib; /* indices when stored; nothing reads it else */
    }
    return LT_OK;
}

/* ---- the GPU: a bitonic sort on one block ---- */

/* LET sw = 1 when item x ranks before item y (variables) in the sort buffer's order: the items' own,
 * the padding slots (index >= items) after every item and among themselves by index. */
static lt_status sort_before(uq *u, lt_lvar *x, lt_lvar *y, lt_lvar *sw, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lvar *kx = lt_kernel_var(K, "kx", u->kt), *ky = lt_kernel_var(K, "ky", u->kt);
    if (!kx || !ky) return lt_lower_nomem(lc);
    lt_lnode *xpad = lt_l_binary(K, LT_LOP_GE, lt_l_var(K, x), lt_l_int(K, u->items));
    lt_lnode *ypad = lt_l_binary(K, LT_LOP_GE, lt_l_var(K, y), lt_l_int(K, u->items));
    lt_lnode *cmp[3];
    LT_TRY(let_key(u, kx, x, &cmp[0]));
    LT_TRY(let_key(u, ky, y, &cmp[1]));
    LT_TRY(if_before(u, kx, x, ky, y, lt_l_assign(K, sw, lt_l_int(K, 1)), NULL, &cmp[2]));
    lt_lnode *real = lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_NOT, xpad), lt_l_unary(K, LT_LOP_NOT, ypad));
    /* an item before padding; two paddings by index */
    lt_lnode *pad = lt_l_binary(K, LT_LOP_OR, lt_l_binary(K, LT_LOP_AND, lt_l_unary(K, LT_LOP_NOT, xpad), ypad),
                                lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_AND, xpad, ypad),
                                            lt_l_binary(K, LT_LOP_LT, lt_l_var(K, x), lt_l_var(K, y))));
    lt_lnode *all[2] = {lt_l_let(K, sw, lt_l_int(K, 0)),
                        lt_l_if(K, real, lt_l_seq(K, 3, cmp), lt_l_assign(K, sw, lt_l_select(K, pad, lt_l_int(K, 1), lt_l_int(K, 0))))};
    *res = lt_l_seq(K, 2, all);
    return LT_LNN(lc, *res);
}

/* LET p = perm[i]; LET st = 1 when sorted position i (a variable) starts a group: it is the first, or
 * its key differs from the one before (variables of their own for each use: a loop of one iteration
 * is unrolled into its scope). */
static lt_status starts_group(uq *u, lt_lvar *i, lt_lvar *p, lt_lvar *st, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    lt_lvar *pp = lt_kernel_var(K, "spp", LT_INT64), *k = lt_kernel_var(K, "sk", u->kt), *kp = lt_kernel_var(K, "skp", u->kt);
    if (!pp || !k || !kp) return lt_lower_nomem(lc);
    lt_lnode *prev[4] = {lt_l_let(K, pp, perm_at(u, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, i), lt_l_int(K, 1)))), NULL, NULL,
                         lt_l_assign(K, st, lt_l_select(K, key_equal(u, k, kp), lt_l_int(K, 0), lt_l_int(K, 1)))};
    LT_TRY(let_key(u, kp, pp, &prev[1]));
    LT_TRY(let_key(u, k, p, &prev[2]));
    lt_lnode *all[3] = {lt_l_let(K, p, perm_at(u, lt_l_var(K, i))), lt_l_let(K, st, lt_l_int(K, 1)),
                        lt_l_if(K, lt_l_binary(K, LT_LOP_GT, lt_l_var(K, i), lt_l_int(K, 0)), lt_l_seq(K, 4, prev), NULL)};
    *res = lt_l_seq(K, 3, all);
    return LT_LNN(lc, *res);
}

/* The groups of a sorted Unique of the flattened X on the GPU (pass 3 on the block; see scan_groups),
 * after the sort, on T threads (thread variable thr): thread t takes the E sorted positions from t E.
 * Each thread counts the positions that start a group (starts_group), the counts are scanned over
 * the block (part: the shared T entries), so the thread's first group is known; it then writes Y,
 * indices and inverse_indices for its positions and each group's first position (gstart); after a
 * barrier counts[g] is the distance to the next group's first position. Thread 0 stores the number
 * of groups. */
static lt_status scan_groups_gpu(uq *u, lt_lvar *thr, int64_t T, lt_lbuf *part, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    int64_t E = (u->items + T - 1) / T;
    lt_lbuf *gstart = u->cb ? lt_lower_add_scratch(lc, "gstart", LT_INT64, u->items) : NULL;
    lt_lvar *e = lt_kernel_var(K, "se", LT_INT64), *e2 = lt_kernel_var(K, "se", LT_INT64);
    lt_lvar *i = lt_kernel_var(K, "si", LT_INT64), *i2 = lt_kernel_var(K, "si", LT_INT64);
    lt_lvar *p = lt_kernel_var(K, "sp", LT_INT64), *p2 = lt_kernel_var(K, "sp", LT_INT64);
    lt_lvar *st = lt_kernel_var(K, "sst", LT_INT64), *st2 = lt_kernel_var(K, "sst", LT_INT64);
    lt_lvar *ns = lt_kernel_var(K, "sns", LT_INT64), *v = lt_kernel_var(K, "sv", LT_INT64);
    lt_lvar *G = lt_kernel_var(K, "sgroups", LT_INT64), *g = lt_kernel_var(K, "sg", LT_INT64);
    lt_lvar *q = lt_kernel_var(K, "sq", LT_INT64), *gc = lt_kernel_var(K, "sgc", LT_INT64);
    if ((u->cb && !gstart) || !e || !e2 || !i || !i2 || !p || !p2 || !st || !st2 || !ns || !v || !G || !g || !q || !gc)
        return lt_lower_nomem(lc);
    lt_lnode *first_count = NULL, *first_write = NULL;
    LT_TRY(starts_group(u, i, p, st, &first_count));
    LT_TRY(starts_group(u, i2, p2, st2, &first_write));
    lt_lnode *counted[2] = {first_count, lt_l_assign(K, ns, lt_l_add(K, lt_l_var(K, ns), lt_l_var(K, st)))};
    lt_lnode *count[2] = {lt_l_let(K, i, lt_l_add(K, lt_l_mul(K, lt_l_var(K, thr), lt_l_int(K, E)), lt_l_var(K, e))),
                          lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, i), lt_l_int(K, u->items)), lt_l_seq(K, 2, counted), NULL)};
    lt_lnode *open = NULL;
    LT_TRY(start_group(u, p2, g, &open));
    lt_lnode *opened[3] = {lt_l_assign(K, g, lt_l_add(K, lt_l_var(K, g), lt_l_int(K, 1))), open,
                           gstart ? lt_l_store(K, gstart, lt_l_var(K, g), lt_l_var(K, i2)) : NULL};
    lt_lnode *write[3] = {first_write, lt_l_if(K, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, st2), lt_l_int(K, 0)),
                                               lt_l_seq(K, gstart ? 3 : 2, opened), NULL),
                          u->invb ? lt_l_store(K, u->invb, lt_l_var(K, p2), lt_l_var(K, g)) : NULL};
    lt_lnode *writes[2] = {lt_l_let(K, i2, lt_l_add(K, lt_l_mul(K, lt_l_var(K, thr), lt_l_int(K, E)), lt_l_var(K, e2))),
                           lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, i2), lt_l_int(K, u->items)),
                                   lt_l_seq(K, u->invb ? 3 : 2, write), NULL)};
    lt_lnode *body[64];
    int nb = 0;
    body[nb++] = lt_l_let(K, ns, lt_l_int(K, 0));
    body[nb++] = lt_l_for(K, e, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, E), LT_LOOP_SERIAL, lt_l_seq(K, 2, count));
    body[nb++] = lt_l_store(K, part, lt_l_var(K, thr), lt_l_var(K, ns));
    body[nb++] = lt_l_barrier(K);
    body[nb++] = lt_l_let(K, v, lt_l_int(K, 0));
    nb += lt_lower_gpu_block_scan(lc, part, thr, v, T, body + nb);
    body[nb++] = lt_l_let(K, G, lt_l_load(K, part, lt_l_int(K, T - 1)));
    if (u->nb)
        body[nb++] = lt_l_if(K, lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, thr), lt_l_int(K, 0)),
                             lt_l_store(K, u->nb, lt_l_int(K, 0), lt_l_var(K, G)), NULL);
    /* the group before the thread's first start */
    body[nb++] = lt_l_let(K, g, lt_l_binary(K, LT_LOP_SUB, lt_l_binary(K, LT_LOP_SUB, lt_l_load(K, part, lt_l_var(K, thr)),
                                                                     lt_l_var(K, ns)), lt_l_int(K, 1)));
    body[nb++] = lt_l_for(K, e2, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, E), LT_LOOP_SERIAL, lt_l_seq(K, 2, writes));
    if (gstart) { /* counts[g]: to the next group's first position */
        body[nb++] = lt_l_barrier(K);
        lt_lnode *next = lt_l_select(K, lt_l_binary(K, LT_LOP_LT, lt_l_add(K, lt_l_var(K, gc), lt_l_int(K, 1)), lt_l_var(K, G)),
                                     lt_l_load(K, gstart, lt_l_binary(K, LT_LOP_MIN, lt_l_add(K, lt_l_var(K, gc), lt_l_int(K, 1)),
                                                                      lt_l_int(K, u->items - 1))),
                                     lt_l_int(K, u->items));
        lt_lnode *cnt[2] = {lt_l_let(K, gc, lt_l_add(K, lt_l_mul(K, lt_l_var(K, q), lt_l_int(K, T)), lt_l_var(K, thr))),
                            lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, gc), lt_l_var(K, G)),
                                    lt_l_store(K, u->cb, lt_l_var(K, gc),
                                               lt_l_binary(K, LT_LOP_SUB, next, lt_l_load(K, gstart, lt_l_var(K, gc)))), NULL)};
        body[nb++] = lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, (u->items + T - 1) / T), LT_LOOP_SERIAL,
                              lt_l_seq(K, 2, cnt));
    }
    *res = lt_l_alloc(K, part, lt_l_seq(K, nb, body));
    return LT_LNN(lc, *res);
}

/* The sort of a GPU kernel, on one block of T threads: perm (P = a power of two >= items slots) starts
 * as 0..P-1, then each stage (k = 2, 4, .. P; j = k/2 .. 1) compares slots i and i + j (i with bit j
 * clear) for P/2 pairs a stage, T at a time, and swaps them when they are out of order (ascending
 * where bit k of i is clear, else descending); a barrier ends each stage. The order is total, so perm
 * ends as the CPU's merge sort leaves it. Then thread 0 runs the passes after the sort (`after`). */
static lt_status sort_gpu(uq *u, int64_t P, lt_lnode *after, bool scan_on_block, lt_lnode **res) {
    lt_lctx *lc = u->lc;
    int logp = 0;
    while (((int64_t)1 << logp) < P) logp++;
    int64_t T = lc->opt->shape_generic || P / 2 >= 1024 ? 1024 : (P / 2 + 31) / 32 * 32;
    lt_lvar *blk = lt_kernel_var(K, "gblk", LT_INT64), *thr = lt_kernel_var(K, "gthr", LT_INT64);
    lt_lvar *q0 = lt_kernel_var(K, "q0", LT_INT64), *i0 = lt_kernel_var(K, "i0", LT_INT64);
    lt_lvar *kk = lt_kernel_var(K, "kk", LT_INT64), *jj = lt_kernel_var(K, "jj", LT_INT64), *js = lt_kernel_var(K, "js", LT_INT64);
    lt_lvar *q = lt_kernel_var(K, "q", LT_INT64), *t = lt_kernel_var(K, "t", LT_INT64), *i = lt_kernel_var(K, "i", LT_INT64);
    lt_lvar *l = lt_kernel_var(K, "l", LT_INT64), *a = lt_kernel_var(K, "a", LT_INT64), *b = lt_kernel_var(K, "b", LT_INT64);
    lt_lvar *x = lt_kernel_var(K, "x", LT_INT64), *y = lt_kernel_var(K, "y", LT_INT64), *sw = lt_kernel_var(K, "sw", LT_INT64);
    if (!blk || !thr || !q0 || !i0 || !kk || !jj || !js || !q || !t || !i || !l || !a || !b || !x || !y || !sw)
        return lt_lower_nomem(lc);
    lt_lnode *one = lt_l_int(K, 1);
    /* perm[i0] = i0 for every slot */
    lt_lnode *init[2] = {lt_l_let(K, i0, lt_l_add(K, lt_l_mul(K, lt_l_var(K, q0), lt_l_int(K, T)), lt_l_var(K, thr))),
                         lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, i0), lt_l_int(K, P)),
                                 lt_l_store(K, u->perm, lt_l_var(K, i0), lt_l_var(K, i0)), NULL)};
    lt_lnode *before = NULL;
    LT_TRY(sort_before(u, x, y, sw, &before));
    lt_lnode *up = lt_l_binary(K, LT_LOP_EQ, lt_l_binary(K, LT_LOP_BITAND, lt_l_var(K, i), lt_l_binary(K, LT_LOP_SHL, one, lt_l_var(K, kk))),
                               lt_l_int(K, 0));
    lt_lnode *low = lt_l_binary(K, LT_LOP_BITAND, lt_l_var(K, t),
                                lt_l_binary(K, LT_LOP_SUB, lt_l_binary(K, LT_LOP_SHL, lt_l_int(K, 1), lt_l_var(K, js)), lt_l_int(K, 1)));
    lt_lnode *high = lt_l_binary(K, LT_LOP_SHL, lt_l_binary(K, LT_LOP_SHR, lt_l_var(K, t), lt_l_var(K, js)),
                                 lt_l_add(K, lt_l_var(K, js), lt_l_int(K, 1)));
    lt_lnode *swap[2] = {lt_l_store(K, u->perm, lt_l_var(K, i), lt_l_var(K, b)), lt_l_store(K, u->perm, lt_l_var(K, l), lt_l_var(K, a))};
    lt_lnode *pair[8] = {
        lt_l_let(K, i, lt_l_add(K, high, low)),
        lt_l_let(K, l, lt_l_add(K, lt_l_var(K, i), lt_l_binary(K, LT_LOP_SHL, lt_l_int(K, 1), lt_l_var(K, js)))),
        lt_l_let(K, a, perm_at(u, lt_l_var(K, i))),
        lt_l_let(K, b, perm_at(u, lt_l_var(K, l))),
        lt_l_let(K, x, lt_l_select(K, up, lt_l_var(K, b), lt_l_var(K, a))), /* ascending: is b before a? */
        lt_l_let(K, y, lt_l_select(K, lt_l_binary(K, LT_LOP_EQ, lt_l_binary(K, LT_LOP_BITAND, lt_l_var(K, i),
                                                                             lt_l_binary(K, LT_LOP_SHL, lt_l_int(K, 1), lt_l_var(K, kk))),
                                                  lt_l_int(K, 0)),
                                   lt_l_var(K, a), lt_l_var(K, b))),
        before,
        lt_l_if(K, lt_l_binary(K, LT_LOP_NE, lt_l_var(K, sw), lt_l_int(K, 0)), lt_l_seq(K, 2, swap), NULL),
    };
    lt_lnode *slot_pair[2] = {
        lt_l_let(K, t, lt_l_add(K, lt_l_mul(K, lt_l_var(K, q), lt_l_int(K, T)), lt_l_var(K, thr))),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, t), lt_l_int(K, P / 2)), lt_l_seq(K, 8, pair), NULL),
    };
    lt_lnode *stage[3] = {
        lt_l_let(K, js, lt_l_binary(K, LT_LOP_SUB, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, kk), lt_l_var(K, jj)), one)),
        lt_l_for(K, q, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, (P / 2 + T - 1) / T), LT_LOOP_SERIAL, lt_l_seq(K, 2, slot_pair)),
        lt_l_barrier(K),
    };
    lt_lnode *stages = lt_l_for(K, kk, LT_ROLE_REDUCE, lt_l_int(K, 1), lt_l_int(K, logp), LT_LOOP_SERIAL, /* kk = 1..logp */
                                lt_l_for(K, jj, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_var(K, kk), LT_LOOP_SERIAL,
                                         lt_l_seq(K, 3, stage)));
    lt_lnode *body[4] = {
        lt_l_for(K, q0, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, (P + T - 1) / T), LT_LOOP_SERIAL, lt_l_seq(K, 2, init)),
        lt_l_barrier(K),
        stages,
        after ? lt_l_if(K, lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, thr), lt_l_int(K, 0)), after, NULL) : NULL,
    };
    if (scan_on_block) {
        lt_lbuf *part = lt_kernel_local(K, "part", LT_INT64, T, LT_SCOPE_SHARED);
        if (!part) return lt_lower_nomem(lc);
        LT_TRY(scan_groups_gpu(u, thr, T, part, &body[3]));
    }
    lt_lnode *blkb = lt_lower_gpu_loop(lc, thr, LT_ROLE_OUTPUT, T, LT_LOOP_GPU_THREAD, 0, lt_l_seq(K, 4, body));
    *res = lt_lower_gpu_loop(lc, blk, LT_ROLE_OUTPUT, 1, LT_LOOP_GPU_BLOCK, 0, blkb);
    return LT_LNN(lc, *res);
}

static lt_status l_unique(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    uq u;
    LT_TRY(uq_init(lc, n, &u));
    if (lc->opt->gpu && u.items > 1) { /* the sort on a block into a buffer of its own, the scans on thread 0 */
        int64_t P = 2;
        while (P < u.items) P *= 2;
        if (!(u.perm = lt_lower_add_scratch(lc, "sorted", LT_INT64, P))) return lt_lower_nomem(lc);
        if (u.sorted && !u.by_axis) return sort_gpu(&u, P, NULL, true, res);
        lt_lnode *pass[4];
        int np = 0;
        if (u.ngroups) pass[np++] = lt_l_let(K, u.ngroups, lt_l_int(K, 0));
        LT_TRY(scan_groups(&u, &pass[np++]));
        if (!u.sorted) LT_TRY(number_by_appearance(&u, &pass[np++]));
        if (u.ngroups && u.numel > 0) LT_TRY(copy_slices(&u, &pass[np++]));
        return sort_gpu(&u, P, lt_l_seq(K, np, pass), false, res);
    }
    lt_lnode *pass[6];
    int np = 0;
    if (u.ngroups) pass[np++] = lt_l_let(K, u.ngroups, lt_l_int(K, 0));
    if (u.items > 0) LT_TRY(merge_sort(&u, &pass[np++]));
    LT_TRY(scan_groups(&u, &pass[np++]));
    if (!u.sorted) LT_TRY(number_by_appearance(&u, &pass[np++]));
    if (u.ngroups && u.numel > 0) LT_TRY(copy_slices(&u, &pass[np++]));
    *res = lt_l_seq(K, np, pass);
    return LT_LNN(lc, *res);
}

const lt_lower_reg lt_lower_unique[] = {
    {LT_OP_UniquePadded, accept_unique, NULL, l_unique, 0, 0, LT_LF_NO_EPILOGUE},
    {0},
};
