/* lower_scatter.c — `lower` hooks of the scatter ops: ScatterElements (and opset 9's Scatter, the
 * same op) and ScatterND, every reduction (none, add, mul, max, min).
 *
 * A scatter's output is its data with some elements replaced (or combined) by updates, in the
 * order of the updates: with repeated indices the last update wins (reduction none) or the updates
 * combine one after the other, exactly as the interpreter's eval hook does. The kernel is split
 * into *fibers*, sets of output elements no other fiber's updates can touch, so fibers run in
 * parallel (CPU threads, one GPU thread per fiber) with no race and no barrier between the copy and
 * the updates, and within a fiber everything runs in the interpreter's order:
 *
 *   ScatterElements (axis a): a fiber is one line along axis a (every position of the other dims).
 *     for f (KEPT: parallel / GPU threads) over the lines:
 *       for t in [0, D[a]):  out[p, t] = data[p, t]                     (the copy)
 *       if p lies inside the indices' extent (when they are smaller than data on another axis):
 *         for j in [0, I[a]):  out[p, idx[p, j]] = combine(out[p, idx[p, j]], updates[p, j])
 *   ScatterND (index tuples of k components): a fiber is one element s of the slice (data dims k..)
 *     for every prefix (data dims ..k-1): the copy, then for each tuple j in order:
 *         out[tuple_j, s] = combine(out[tuple_j, s], updates[j, s])
 *     (k equal to data's rank leaves a single fiber: such a scatter runs on one thread.)
 *
 * Indices are range-checked (lt_lower_indices_checked): constants when compiling, a model input by
 * the plan before each run, indices the model computes by this kernel as it reads them
 * (lt_lower_index_pos: a violation goes into the plan's check word and the run fails). Every index
 * expression is normalized (negative from the end) and kept in range, so no write can leave the
 * buffer. The output is written twice, so nothing fuses after a
 * scatter (LT_LF_NO_EPILOGUE). Reductions combine in the compute type (float for float16 and
 * bfloat16, rounded once when stored, as the interpreter's double arithmetic rounds once); max and
 * min give NaN when either side is NaN, and otherwise the interpreter's `a > b ? a : b`.
 */
#include "lower_gpu.h"
#include "lower_impl.h"

#include "../ops/shape/index_rule.h"

#include <stdio.h>
#include <string.h>

#define K (lc->k)
#define GPU_FIBER_THREADS 128 /* threads per block of the GPU fibers */

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K, v); }
static lt_lnode *V(lt_lctx *lc, lt_lvar *v) { return lt_l_var(K, v); }
static lt_lnode *bin(lt_lctx *lc, lt_lop op, lt_lnode *a, lt_lnode *b) { return lt_l_binary(K, op, a, b); }
static lt_lnode *loop(lt_lctx *lc, lt_lvar *v, lt_loop_role role, int64_t ext, lt_lnode *body) {
    return lt_l_for(K, v, role, I(lc, 0), I(lc, ext), LT_LOOP_SERIAL, body);
}

/* combine(old, upd) in the compute type of dtype dt. */
static lt_lnode *combine(lt_lctx *lc, lt_dtype dt, lt_scatter_red r, lt_lnode *old, lt_lnode *upd) {
    if (r == LT_SCATTER_NONE) return upd;
    if (dt == LT_BOOL) return bin(lc, r == LT_SCATTER_ADD || r == LT_SCATTER_MAX ? LT_LOP_OR : LT_LOP_AND, old, upd);
    if (r == LT_SCATTER_ADD) return bin(lc, LT_LOP_ADD, old, upd);
    if (r == LT_SCATTER_MUL) return bin(lc, LT_LOP_MUL, old, upd);
    lt_lnode *pick = lt_l_select(K, bin(lc, r == LT_SCATTER_MAX ? LT_LOP_GT : LT_LOP_LT, old, upd), old, upd);
    if (!lt_dtype_is_float(dt)) return pick;
    /* NaN on either side gives NaN */
    return lt_l_select(K, lt_l_unary(K, LT_LOP_ISNAN, old), old,
                       lt_l_select(K, lt_l_unary(K, LT_LOP_ISNAN, upd), upd, pick));
}

/* The statement over all fibers: for f in [0, F) { body(f) }, a KEPT loop the default schedule
 * parallelizes on the CPU; on the GPU bound here to blocks of GPU_FIBER_THREADS threads. */
static lt_status fiber_loop(lt_lctx *lc, lt_lvar *f, int64_t F, lt_lnode *body, lt_lnode **res) {
    if (!lc->opt || !lc->opt->gpu) {
        *res = loop(lc, f, LT_ROLE_KEPT, F, body);
        return LT_LNN(lc, *res);
    }
    int64_t T = F >= GPU_FIBER_THREADS ? GPU_FIBER_THREADS : (F + 31) / 32 * 32;
    lt_lvar *blk = lt_kernel_var(K, "fb", LT_INT64), *thr = lt_kernel_var(K, "ft", LT_INT64);
    if (!blk || !thr) return lt_lower_nomem(lc);
    lt_lnode *fv = lt_l_add(K, lt_l_mul(K, V(lc, blk), I(lc, T)), V(lc, thr));
    lt_lnode *in = lt_l_if(K, bin(lc, LT_LOP_LT, V(lc, f), I(lc, F)), body, NULL);
    lt_lnode *two[2] = {lt_l_let(K, f, fv), in};
    lt_lnode *s = lt_l_seq(K, 2, two);
    s = lt_lower_gpu_loop(lc, thr, LT_ROLE_OUTPUT, T, LT_LOOP_GPU_THREAD, 0, s);
    s = lt_lower_gpu_loop(lc, blk, LT_ROLE_OUTPUT, (F + T - 1) / T, LT_LOOP_GPU_BLOCK, 0, s);
    *res = s;
    return LT_LNN(lc, s);
}

static bool accept_scatter(const lt_node *n, char *why, size_t size) {
    lt_scatter_red r;
    if (!lt_scatter_reduction(n, &r)) {
        snprintf(why, size, "unknown reduction");
        return false;
    }
    if (n->n_in < 3 || !n->in[0] || !n->in[1] || !n->in[2] || n->in[0]->type.rank < 1) {
        snprintf(why, size, "scatter of this form");
        return false;
    }
    return lt_lower_indices_checked(n, why, size) && lt_lower_accept_default(n, why, size);
}

typedef struct scat {
    lt_dtype dt;
    lt_scatter_red red;
    int r;                       /* data rank */
    int64_t d[LT_MAX_RANK];      /* data dims */
    lt_lbuf *out;
} scat;

static lt_status scat_begin(lt_lctx *lc, const lt_node *n, scat *s) {
    s->dt = n->out[0]->type.dtype;
    if (!lt_scatter_reduction(n, &s->red) || !lt_lower_shape(n->in[0], &s->r, s->d))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "scatter accepted without a reduction or a static shape");
    s->out = lt_lower_out_buf(lc, n->out[0], NULL);
    return LT_OK;
}

/* out[flat] = combine(out[flat], upd) */
static lt_lnode *update(lt_lctx *lc, const scat *s, lt_lnode *flat, lt_lnode *upd) {
    lt_lnode *old = s->red == LT_SCATTER_NONE ? NULL : lt_lower_conv(lc, lt_l_load(K, s->out, flat), s->dt);
    lt_lnode *v = combine(lc, s->dt, s->red, old, upd);
    if (v && v->dtype != s->out->dtype) v = lt_l_cast(K, s->out->dtype, v);
    return v ? lt_l_store(K, s->out, flat, v) : NULL;
}

/* ---- ScatterElements / Scatter ---- */

static lt_status lower_scatter_elements(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    scat s;
    LT_TRY(scat_begin(lc, n, &s));
    if (!s.out) return LT_LNN(lc, *res = lt_l_empty(K));
    int64_t ax = lt_attr_int(n, "axis", 0);
    int a = (int)(ax < 0 ? ax + s.r : ax), ri;
    int64_t id[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[1], &ri, id) || ri != s.r)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "indices of another rank than data");
    /* the fiber's position p over the non-axis dims of data */
    int64_t fd[LT_MAX_RANK], F = 1;
    int nf = 0;
    for (int i = 0; i < s.r; i++)
        if (i != a) F *= (fd[nf++] = s.d[i]);
    lt_lvar *f = lt_kernel_var(K, "f", LT_INT64), *t = lt_kernel_var(K, "t", LT_INT64),
            *j = lt_kernel_var(K, "j", LT_INT64);
    if (!f || !t || !j) return lt_lower_nomem(lc);
    lt_lnode *p[LT_MAX_RANK];
    if (nf) LT_TRY(lt_lower_unflat(lc, V(lc, f), nf, fd, p));
    lt_lnode *at[LT_MAX_RANK], *inside = NULL;
    for (int i = 0, q = 0; i < s.r; i++) {
        if (i == a) continue;
        at[i] = p[q++];
        if (id[i] < s.d[i]) {
            lt_lnode *c = bin(lc, LT_LOP_LT, at[i], I(lc, id[i]));
            inside = inside ? bin(lc, LT_LOP_AND, inside, c) : c;
        }
    }
    /* the copy along the line */
    at[a] = V(lc, t);
    lt_lnode *dv, *copy;
    LT_TRY(lt_lower_value(lc, n->in[0], at, &dv));
    LT_TRY(lt_lower_store_out(lc, n->out[0], at, dv, &copy));
    copy = loop(lc, t, LT_ROLE_REDUCE, s.d[a], copy);
    /* the updates along the line, in order */
    at[a] = V(lc, j);
    lt_lnode *iv, *uv;
    LT_TRY(lt_lower_value(lc, n->in[1], at, &iv));
    LT_TRY(lt_lower_value(lc, n->in[2], at, &uv));
    at[a] = lt_lower_index_pos(lc, n, iv, s.d[a], lt_lower_flat(lc, ri, id, at));
    if (!at[a]) return lt_lower_nomem(lc);
    lt_lnode *upd = update(lc, &s, lt_lower_flat(lc, s.r, s.d, at), uv);
    upd = upd ? loop(lc, j, LT_ROLE_REDUCE, id[a], upd) : NULL;
    if (upd && inside) upd = lt_l_if(K, inside, upd, NULL);
    lt_lnode *two[2] = {copy, upd};
    lt_lnode *body = copy && upd ? lt_l_seq(K, 2, two) : NULL;
    if (!body) return lt_lower_nomem(lc);
    return fiber_loop(lc, f, F, body, res);
}

/* ---- ScatterND ---- */

static lt_status lower_scatter_nd(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    scat s;
    LT_TRY(scat_begin(lc, n, &s));
    if (!s.out) return LT_LNN(lc, *res = lt_l_empty(K));
    int ri;
    int64_t id[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[1], &ri, id) || ri < 1 || id[ri - 1] < 1 || id[ri - 1] > s.r)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "index tuples that do not fit the data");
    int k = (int)id[ri - 1], rs = s.r - k;
    int64_t P = 1, S = 1, J = 1;
    for (int i = 0; i < k; i++) P *= s.d[i];
    for (int i = k; i < s.r; i++) S *= s.d[i];
    for (int i = 0; i < ri - 1; i++) J *= id[i];
    lt_lvar *f = lt_kernel_var(K, "f", LT_INT64), *pv = lt_kernel_var(K, "p", LT_INT64),
            *j = lt_kernel_var(K, "j", LT_INT64), *off = lt_kernel_var(K, "off", LT_INT64);
    if (!f || !pv || !j || !off) return lt_lower_nomem(lc);
    /* the fiber: one element of the slice (data dims k..) */
    lt_lnode *sl[LT_MAX_RANK];
    if (rs) LT_TRY(lt_lower_unflat(lc, V(lc, f), rs, s.d + k, sl));
    /* the copy over every prefix */
    lt_lnode *at[LT_MAX_RANK];
    LT_TRY(lt_lower_unflat(lc, V(lc, pv), k, s.d, at));
    for (int i = 0; i < rs; i++) at[k + i] = sl[i];
    lt_lnode *dv, *copy;
    LT_TRY(lt_lower_value(lc, n->in[0], at, &dv));
    LT_TRY(lt_lower_store_out(lc, n->out[0], at, dv, &copy));
    copy = loop(lc, pv, LT_ROLE_REDUCE, P, copy);
    /* tuple j: off = its prefix position, then the update of element (off, s) */
    lt_lnode *tj[LT_MAX_RANK + 1];
    if (ri > 1) LT_TRY(lt_lower_unflat(lc, V(lc, j), ri - 1, id, tj));
    lt_lnode *offe = I(lc, 0);
    for (int c = 0; c < k && offe; c++) {
        tj[ri - 1] = I(lc, c);
        lt_lnode *iv;
        LT_TRY(lt_lower_value(lc, n->in[1], tj, &iv));
        lt_lnode *pos = lt_lower_index_pos(lc, n, iv, s.d[c], lt_lower_flat(lc, ri, id, tj));
        offe = pos ? lt_l_add(K, lt_l_mul(K, offe, I(lc, s.d[c])), pos) : NULL;
    }
    lt_lnode *ui[LT_MAX_RANK];
    for (int i = 0; i < ri - 1; i++) ui[i] = tj[i];
    for (int i = 0; i < rs; i++) ui[ri - 1 + i] = sl[i];
    lt_lnode *uv;
    LT_TRY(lt_lower_value(lc, n->in[2], ui, &uv));
    lt_lnode *sflat = rs ? lt_lower_flat(lc, rs, s.d + k, sl) : I(lc, 0);
    lt_lnode *flat = offe && sflat ? lt_l_add(K, lt_l_mul(K, V(lc, off), I(lc, S)), sflat) : NULL;
    lt_lnode *st = flat ? update(lc, &s, flat, uv) : NULL;
    lt_lnode *two[2] = {offe ? lt_l_let(K, off, offe) : NULL, st};
    lt_lnode *upd = two[0] && st ? loop(lc, j, LT_ROLE_REDUCE, J, lt_l_seq(K, 2, two)) : NULL;
    lt_lnode *body2[2] = {copy, upd};
    lt_lnode *body = copy && upd ? lt_l_seq(K, 2, body2) : NULL;
    if (!body) return lt_lower_nomem(lc);
    return fiber_loop(lc, f, S, body, res);
}

/* Indices (input 1) are read by the kernel; nothing is compile-time only. */
const lt_lower_reg lt_lower_scatter[] = {
    {LT_OP_Scatter, accept_scatter, NULL, lower_scatter_elements, 0, 0, LT_LF_NO_EPILOGUE},
    {LT_OP_ScatterElements, accept_scatter, NULL, lower_scatter_elements, 0, 0, LT_LF_NO_EPILOGUE},
    {LT_OP_ScatterND, accept_scatter, NULL, lower_scatter_nd, 0, 0, LT_LF_NO_EPILOGUE},
    {0, NULL, NULL, NULL, 0, 0, 0},
};
