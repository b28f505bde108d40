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
 * float compares != 0 (NaN counts), an integer or bool != 0. On the GPU the two passes run on one
 * block of 1024 threads, each over a contiguous chunk of the flat input, the chunks' counts turned
 * into offsets between them (l_nonzero_gpu).
 *
 * CompressPadded. Pass 1 counts the true elements of the condition (length L <= the axis length)
 * into `cnt` and stores it; pass 2, for each true position j in order (the c-th), copies the slice
 * of X at j along the axis to Y's slice c in the compact layout of an axis cnt long: Y[(o * cnt + c)
 * * inner + i] = X[o, j, i] (o over the dims before the axis, i after; without an axis X is read
 * flat). X is read with lt_lower_value (a fused prologue is computed in the kernel).
 */
#include "lower_impl.h"
#include "lower_gpu.h"

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

/* ---- NonZeroPadded on the GPU: one block, each thread a contiguous chunk of the flat input ---- */
#define NZ_THREADS 1024

/* Element thread * chunk + q of the flat input (a new expression tree each call); last >= 0: at most
 * that (the last element: what a thread past the end reads, whatever order its guard runs in). */
static lt_lnode *flat_elem(lt_lctx *lc, lt_lvar *thr, int64_t chunk, lt_lvar *q, int64_t last) {
    lt_lnode *e = lt_l_add(K, lt_l_mul(K, lt_l_var(K, thr), lt_l_int(K, chunk)), lt_l_var(K, q));
    return last < 0 ? e : lt_l_binary(K, LT_LOP_MIN, e, lt_l_int(K, last));
}

/* Its coordinates in dims, row-major, into idx. */
static void unflat(lt_lctx *lc, lt_lvar *thr, int64_t chunk, lt_lvar *qv, int64_t last, int rank, const int64_t *dims,
                   lt_lnode **idx) {
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        lt_lnode *e = flat_elem(lc, thr, chunk, qv, last);
        lt_lnode *q = stride == 1 ? e : lt_l_binary(K, LT_LOP_DIV, e, lt_l_int(K, stride));
        idx[d] = d == 0 ? q : lt_l_binary(K, LT_LOP_MOD, q, lt_l_int(K, dims[d]));
        stride *= dims[d];
    }
}

/* Pass 1 counts each thread's chunk into part[thread]; a scan over the block (log2 T steps of adding
 * the value s threads back) makes part[t] the count up to and including thread t's chunk, and
 * part[T - 1] the total (the count output); pass 2 writes each thread's nonzero coordinates from its
 * offset on, in order. The result is the serial kernel's, with up to 1024 threads reading the input
 * instead of one (a NonZero over a detector's score map of 10^5..10^6 elements). A model compiled
 * for every shape takes 1024 threads at every size (a thread count is no run-time scalar). */
static lt_status l_nonzero_gpu(lt_lctx *lc, const lt_node *n, int rank, const int64_t *dims, lt_lbuf *yb, lt_lbuf *cb,
                               lt_lnode **res) {
    int64_t total = 1;
    for (int d = 0; d < rank; d++) total *= dims[d];
    int64_t T = lc->opt->shape_generic || total >= NZ_THREADS ? NZ_THREADS : (total + 31) / 32 * 32;
    int64_t chunk = (total + T - 1) / T;
    lt_lvar *blk = lt_kernel_var(K, "gblk", LT_INT64), *thr = lt_kernel_var(K, "gthr", LT_INT64);
    lt_lvar *q1 = lt_kernel_var(K, "q", LT_INT64), *q2 = lt_kernel_var(K, "q", LT_INT64);
    lt_lvar *cnt = lt_kernel_var(K, "cnt", LT_INT64), *v = lt_kernel_var(K, "v", LT_INT64);
    lt_lvar *off = lt_kernel_var(K, "off", LT_INT64), *tot = lt_kernel_var(K, "tot", LT_INT64);
    lt_lbuf *part = lt_kernel_local(K, "part", LT_INT64, T, LT_SCOPE_SHARED);
    if (!blk || !thr || !q1 || !q2 || !cnt || !v || !off || !tot || !part) return lt_lower_nomem(lc);
    lt_lnode *nz[2], *idx[LT_MAX_RANK], *coord[LT_MAX_RANK];
    lt_lvar *qs[2] = {q1, q2};
    for (int p = 0; p < 2; p++) { /* the element in range and nonzero */
        unflat(lc, thr, chunk, qs[p], total - 1, rank, dims, idx);
        lt_lnode *x = NULL;
        LT_TRY(lt_lower_value(lc, n->in[0], idx, &x));
        LT_TRY(LT_LNN(lc, x));
        lt_lnode *in = lt_l_binary(K, LT_LOP_LT, flat_elem(lc, thr, chunk, qs[p], -1), lt_l_int(K, total));
        nz[p] = lt_l_binary(K, LT_LOP_AND, in, ne_zero(lc, x));
    }
    unflat(lc, thr, chunk, q2, -1, rank, dims, coord);
    lt_lnode *body[64];
    int nb = 0;
    body[nb++] = lt_l_let(K, cnt, lt_l_int(K, 0));
    body[nb++] = lt_l_for(K, q1, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, chunk), LT_LOOP_SERIAL,
                          lt_l_assign(K, cnt, lt_l_add(K, lt_l_var(K, cnt), lt_l_select(K, nz[0], lt_l_int(K, 1), lt_l_int(K, 0)))));
    body[nb++] = lt_l_store(K, part, lt_l_var(K, thr), lt_l_var(K, cnt));
    body[nb++] = lt_l_barrier(K);
    body[nb++] = lt_l_let(K, v, lt_l_int(K, 0));
    for (int64_t st = 1; st < T; st *= 2) { /* part[t] += part[t - st] (those before it: 0) */
        lt_lnode *back = lt_l_load(K, part, lt_l_binary(K, LT_LOP_MAX, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, thr), lt_l_int(K, st)), lt_l_int(K, 0)));
        body[nb++] = lt_l_assign(K, v, lt_l_select(K, lt_l_binary(K, LT_LOP_GE, lt_l_var(K, thr), lt_l_int(K, st)), back, lt_l_int(K, 0)));
        body[nb++] = lt_l_barrier(K);
        body[nb++] = lt_l_store(K, part, lt_l_var(K, thr), lt_l_add(K, lt_l_load(K, part, lt_l_var(K, thr)), lt_l_var(K, v)));
        body[nb++] = lt_l_barrier(K);
    }
    body[nb++] = lt_l_let(K, off, lt_l_binary(K, LT_LOP_SUB, lt_l_load(K, part, lt_l_var(K, thr)), lt_l_var(K, cnt)));
    body[nb++] = lt_l_let(K, tot, lt_l_load(K, part, lt_l_int(K, T - 1)));
    body[nb++] = lt_l_if(K, lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, thr), lt_l_int(K, 0)),
                         lt_l_store(K, cb, lt_l_int(K, 0), lt_l_var(K, tot)), NULL);
    lt_lnode *put[LT_MAX_RANK + 1];
    for (int d = 0; d < rank; d++)
        put[d] = lt_l_store(K, yb, lt_l_add(K, lt_l_mul(K, lt_l_int(K, d), lt_l_var(K, tot)), lt_l_var(K, off)), coord[d]);
    put[rank] = lt_l_assign(K, off, lt_l_add(K, lt_l_var(K, off), lt_l_int(K, 1)));
    body[nb++] = lt_l_for(K, q2, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, chunk), LT_LOOP_SERIAL,
                          lt_l_if(K, nz[1], lt_l_seq(K, rank + 1, put), NULL));
    lt_lnode *b = lt_lower_gpu_loop(lc, thr, LT_ROLE_OUTPUT, T, LT_LOOP_GPU_THREAD, 0, lt_l_alloc(K, part, lt_l_seq(K, nb, body)));
    *res = lt_lower_gpu_loop(lc, blk, LT_ROLE_OUTPUT, 1, LT_LOOP_GPU_BLOCK, 0, b);
    return LT_LNN(lc, *res);
}

static lt_status l_nonzero(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rank, dims) || rank < 1)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "input has no static shape of rank >= 1");
    lt_lbuf *yb = lc->vbuf[n->out[0]->id], *cb = lc->vbuf[n->out[1]->id];
    if (!yb || !cb || yb->dtype != LT_INT64 || cb->dtype != LT_INT64)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the outputs are not stored as they are");
    if (lc->opt->gpu) return l_nonzero_gpu(lc, n, rank, dims, yb, cb, res);
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
