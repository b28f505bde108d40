/* lower_select.c — `lower` hooks of NonZeroPadded and CompressPadded: NonZero and Compress with an
 * output of a size known at compile time (src/ops/shape/shape_split.c), the compiled half of a model
 * split at its data-dependent op.
 *
 * NonZeroPadded.
 * Kernel shape: two serial passes over X in row-major order (loops "r0".."r{rank-1}", role REDUCE:
 * the count carries from one element to the next, so no schedule parallelizes or vectorizes them):
 *   pass 1 counts the nonzero elements into `cnt` and stores it to the count output;
 *   pass 2 stores the coordinates of the c-th nonzero element at Y[k * cnt + c], so the first
 *   rank * cnt elements of Y are NonZero's [rank, cnt] result, compact.
 * X is read with lt_lower_value, so a fused elementwise prologue (NonZero(Greater(x, t)), the
 * exporters' idiom) is computed in the kernel. An element is nonzero as the interpreter decides: a
 * float compares != 0 (NaN counts), an integer or bool != 0. The loop is one thread's on a GPU; a
 * parallel count (a prefix sum over blocks) is the next step when large inputs make it matter.
 *
 * CompressPadded. Pass 1 counts the true elements of the condition (length L <= the axis length)
 * into `cnt` and stores it; pass 2, for each true position j in order (the c-th), copies the slice
 * of X at j along the axis to Y's slice c in the compact layout of an axis cnt long: Y[(o * cnt + c)
 * * inner + i] = X[o, j, i] (o over the dims before the axis, i after; without an axis X is read
 * flat). X is read with lt_lower_value (a fused prologue is computed in the kernel).
 */
#include "lower_impl.h"

#include <stdio.h>

#define K (lc->k)

static bool accept_nonzero(const lt_node *n, char *why, size_t size) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rank, dims) || rank < 1) {
        snprintf(why, size, "input has no static shape of rank >= 1");
        return false;
    }
    if (n->n_out < 2 || !n->out[0] || !n->out[1]) {
        snprintf(why, size, "an output is absent");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* Serial loops over dims around body, their variables in v. */
static lt_lnode *nest(lt_lctx *lc, int rank, const int64_t *dims, lt_lvar *const *v, lt_lnode *body) {
    for (int d = rank - 1; d >= 0; d--)
        body = lt_l_for(K, v[d], LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, dims[d]), LT_LOOP_SERIAL, body);
    return body;
}

/* e != 0 in e's type (a BOOL expression; a float NaN is nonzero, as in the interpreter). */
static lt_lnode *ne_zero(lt_lctx *lc, lt_lnode *e) {
    lt_lnode *zero = lt_dtype_is_float(e->dtype) ? lt_l_float(K, e->dtype, 0) : lt_l_cast(K, e->dtype, lt_l_int(K, 0));
    return lt_l_binary(K, LT_LOP_NE, e, zero);
}

/* "X at the pass's index is nonzero", a BOOL expression. */
static lt_status is_nonzero(lt_lctx *lc, const lt_node *n, lt_lvar *const *v, int rank, lt_lnode **res) {
    lt_lnode *idx[LT_MAX_RANK], *x = NULL;
    for (int d = 0; d < rank; d++) idx[d] = lt_l_var(K, v[d]);
    LT_TRY(lt_lower_value(lc, n->in[0], idx, &x));
    LT_TRY(LT_LNN(lc, x));
    *res = ne_zero(lc, x);
    return LT_LNN(lc, *res);
}

static lt_status pass_vars(lt_lctx *lc, int rank, const char *prefix, lt_lvar **v) {
    for (int d = 0; d < rank; d++) {
        char name[16];
        snprintf(name, sizeof name, "%s%d", prefix, d);
        if (!(v[d] = lt_kernel_var(K, name, LT_INT64))) return lt_lower_nomem(lc);
    }
    return LT_OK;
}

static lt_status l_nonzero(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rank, dims) || rank < 1)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input has no static shape of rank >= 1");
    lt_lbuf *yb = lc->vbuf[n->out[0]->id], *cb = lc->vbuf[n->out[1]->id];
    if (!yb || !cb || yb->dtype != LT_INT64 || cb->dtype != LT_INT64)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    lt_lvar *v1[LT_MAX_RANK], *v2[LT_MAX_RANK];
    LT_TRY(pass_vars(lc, rank, "r", v1));
    LT_TRY(pass_vars(lc, rank, "s", v2));
    lt_lvar *cnt = lt_kernel_var(K, "cnt", LT_INT64), *c = lt_kernel_var(K, "c", LT_INT64);
    if (!cnt || !c) return lt_lower_nomem(lc);
    lt_lnode *nz1 = NULL, *nz2 = NULL;
    LT_TRY(is_nonzero(lc, n, v1, rank, &nz1));
    LT_TRY(is_nonzero(lc, n, v2, rank, &nz2));
    /* pass 1: cnt += nonzero */
    lt_lnode *count = lt_l_assign(K, cnt, lt_l_add(K, lt_l_var(K, cnt), lt_l_select(K, nz1, lt_l_int(K, 1), lt_l_int(K, 0))));
    /* pass 2: Y[k * cnt + c] = coordinate k; c += 1 */
    lt_lnode *put[LT_MAX_RANK + 1];
    for (int d = 0; d < rank; d++)
        put[d] = lt_l_store(K, yb, lt_l_add(K, lt_l_mul(K, lt_l_int(K, d), lt_l_var(K, cnt)), lt_l_var(K, c)),
                            lt_l_var(K, v2[d]));
    put[rank] = lt_l_assign(K, c, lt_l_add(K, lt_l_var(K, c), lt_l_int(K, 1)));
    lt_lnode *all[5] = {
        lt_l_let(K, cnt, lt_l_int(K, 0)),
        nest(lc, rank, dims, v1, count),
        lt_l_store(K, cb, lt_l_int(K, 0), lt_l_var(K, cnt)),
        lt_l_let(K, c, lt_l_int(K, 0)),
        nest(lc, rank, dims, v2, lt_l_if(K, nz2, lt_l_seq(K, rank + 1, put), NULL)),
    };
    *res = lt_l_seq(K, 5, all);
    return LT_LNN(lc, *res);
}

/* ---- CompressPadded ---- */

static int compress_axis(const lt_node *n) { /* -1: flat */
    const lt_attr *aa = lt_node_attr(n, "axis");
    int r = n->in[0]->type.rank;
    return aa ? (int)(aa->i < 0 ? aa->i + r : aa->i) : -1;
}

static bool accept_compress(const lt_node *n, char *why, size_t size) {
    int rank, crank;
    int64_t dims[LT_MAX_RANK], cd[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rank, dims) || !lt_lower_shape(n->in[1], &crank, cd) || crank != 1) {
        snprintf(why, size, "input or condition has no static shape");
        return false;
    }
    int a = compress_axis(n);
    if (a >= rank || (a >= 0 && cd[0] > dims[a]) || (a < 0 && cd[0] > lt_lower_numel(n->in[0]))) {
        snprintf(why, size, "the condition is longer than the axis");
        return false;
    }
    if (n->n_out < 2 || !n->out[0] || !n->out[1]) {
        snprintf(why, size, "an output is absent");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

static lt_status l_compress(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int rank, crank;
    int64_t dims[LT_MAX_RANK], cd[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rank, dims) || !lt_lower_shape(n->in[1], &crank, cd))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "no static shape");
    int axis = compress_axis(n);
    lt_lbuf *yb = lc->vbuf[n->out[0]->id], *cb = lc->vbuf[n->out[1]->id];
    if (!yb || !cb || cb->dtype != LT_INT64)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    /* the view: [outer dims..., axis, inner dims...] of X; flat: X as one axis */
    lt_lvar *j1 = lt_kernel_var(K, "r0", LT_INT64), *j2 = lt_kernel_var(K, "s0", LT_INT64);
    lt_lvar *cnt = lt_kernel_var(K, "cnt", LT_INT64), *c = lt_kernel_var(K, "c", LT_INT64);
    lt_lvar *v[LT_MAX_RANK];
    if (!j1 || !j2 || !cnt || !c) return lt_lower_nomem(lc);
    lt_lnode *cidx[1] = {lt_l_var(K, j1)}, *cv1 = NULL, *cv2 = NULL;
    LT_TRY(lt_lower_value(lc, n->in[1], cidx, &cv1));
    cidx[0] = lt_l_var(K, j2);
    LT_TRY(lt_lower_value(lc, n->in[1], cidx, &cv2));
    LT_TRY(LT_LNN(lc, cv1));
    LT_TRY(LT_LNN(lc, cv2));
    lt_lnode *count = lt_l_assign(
        K, cnt, lt_l_add(K, lt_l_var(K, cnt), lt_l_select(K, ne_zero(lc, cv1), lt_l_int(K, 1), lt_l_int(K, 0))));
    /* the copy of slice j2 to slice c: loops over the other dims (none when flat) */
    lt_lnode *xi[LT_MAX_RANK], *x = NULL, *yflat = NULL;
    int64_t inner = 1;
    for (int d = axis + 1; axis >= 0 && d < rank; d++) inner *= dims[d];
    if (axis < 0) { /* flat: element j2 of X in row-major order */
        int64_t st = 1;
        for (int d = rank - 1; d >= 0; d--) {
            xi[d] = lt_l_binary(K, LT_LOP_MOD, lt_l_binary(K, LT_LOP_DIV, lt_l_var(K, j2), lt_l_int(K, st)), lt_l_int(K, dims[d]));
            st *= dims[d];
        }
        yflat = lt_l_var(K, c);
    } else {
        lt_lnode *o = NULL, *i = NULL;
        for (int d = 0; d < rank; d++) {
            char name[16];
            snprintf(name, sizeof name, "q%d", d);
            if (d == axis) {
                v[d] = NULL;
                xi[d] = lt_l_var(K, j2);
                continue;
            }
            if (!(v[d] = lt_kernel_var(K, name, LT_INT64))) return lt_lower_nomem(lc);
            xi[d] = lt_l_var(K, v[d]);
            lt_lnode **acc = d < axis ? &o : &i;
            *acc = *acc ? lt_l_add(K, lt_l_mul(K, *acc, lt_l_int(K, dims[d])), lt_l_var(K, v[d])) : lt_l_var(K, v[d]);
        }
        lt_lnode *oc = lt_l_add(K, lt_l_mul(K, o ? o : lt_l_int(K, 0), lt_l_var(K, cnt)), lt_l_var(K, c));
        yflat = lt_l_add(K, lt_l_mul(K, oc, lt_l_int(K, inner)), i ? i : lt_l_int(K, 0));
    }
    LT_TRY(lt_lower_value(lc, n->in[0], xi, &x));
    LT_TRY(LT_LNN(lc, x));
    lt_lnode *copy = lt_l_store(K, yb, yflat, lt_lower_conv(lc, x, yb->dtype));
    for (int d = rank - 1; axis >= 0 && d >= 0; d--)
        if (d != axis)
            copy = lt_l_for(K, v[d], LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, dims[d]), LT_LOOP_SERIAL, copy);
    lt_lnode *put[2] = {copy, lt_l_assign(K, c, lt_l_add(K, lt_l_var(K, c), lt_l_int(K, 1)))};
    lt_lnode *pick = lt_l_if(K, ne_zero(lc, cv2), lt_l_seq(K, 2, put), NULL);
    lt_lnode *all[5] = {
        lt_l_let(K, cnt, lt_l_int(K, 0)),
        lt_l_for(K, j1, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, cd[0]), LT_LOOP_SERIAL, count),
        lt_l_store(K, cb, lt_l_int(K, 0), lt_l_var(K, cnt)),
        lt_l_let(K, c, lt_l_int(K, 0)),
        lt_l_for(K, j2, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, cd[0]), LT_LOOP_SERIAL, pick),
    };
    *res = lt_l_seq(K, 5, all);
    return LT_LNN(lc, *res);
}

const lt_lower_reg lt_lower_select[] = {
    {LT_OP_NonZeroPadded, accept_nonzero, NULL, l_nonzero, 0, 0, LT_LF_NO_EPILOGUE},
    {LT_OP_CompressPadded, accept_compress, NULL, l_compress, 0, 0, LT_LF_NO_EPILOGUE},
    {0},
};
