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
 * float compares != 0 (NaN counts), an integer or bool != 0. On the GPU the passes run on one
 * block of up to 1024 threads walking the flat input in tiles, each thread a few contiguous elements
 * of a tile, the counts scanned into offsets over the block (l_nonzero_gpu).
 *
 * CompressPadded. Pass 1 counts the true elements of the condition (length L <= the axis length)
 * into `cnt` and stores it; pass 2, for each true position j in order (the c-th), copies the slice
 * of X at j along the axis to Y's slice c in the compact layout of an axis cnt long: Y[(o * cnt + c)
 * * inner + i] = X[o, j, i] (o over the dims before the axis, i after; without an axis X is read
 * flat). X is read with lt_lower_value (a fused prologue is computed in the kernel). On the GPU one
 * block of up to 1024 threads scans the condition in tiles, lists each tile's true positions in
 * shared memory and copies their slices with every thread of the block (l_compress_gpu).
 */
#include "lower_impl.h"
#include "lower_gpu.h"

#include <stdio.h>
#include <string.h>

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

/* 1 where the BOOL expression b holds, else 0 (an INT64 count's term) */
static lt_lnode *one_if(lt_lctx *lc, lt_lnode *b) { return lt_l_select(K, b, lt_l_int(K, 1), lt_l_int(K, 0)); }

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

/* ---- NonZeroPadded on the GPU: one block of threads walking the flat input in tiles ---- */
#define NZ_THREADS 1024
#define NZ_PER_THREAD 8 /* contiguous elements a thread takes from a tile */

/* The walk: T threads (thr) of one block over `total` elements in `tiles` tiles of tile_len = T * E,
 * a thread E contiguous elements of each; with the variables both passes use (ta / qa: pass 1's tile
 * and entry, tb / qb / qc: pass 2's tile and its two entry loops) and the scan's shared part[T]. */
typedef struct nz_walk {
    lt_lvar *thr;
    int64_t T, E, tile_len, total, tiles;
    lt_lvar *blk, *ta, *tb, *qa, *qb, *qc, *all, *cnt, *v, *off, *tot, *base;
    lt_lbuf *part;
} nz_walk;

/* The walk over `total` elements, at most max_e a thread each tile: 1024 threads (a model compiled
 * for every shape takes 1024 at every size: a thread count is no run-time scalar), or fewer for
 * fewer elements. */
static lt_status walk_init(lt_lctx *lc, int64_t total, int64_t max_e, nz_walk *w) {
    memset(w, 0, sizeof *w);
    w->T = lc->opt->shape_generic || total >= NZ_THREADS ? NZ_THREADS : (total + 31) / 32 * 32;
    w->E = (total + w->T - 1) / w->T;
    if (w->E > max_e) w->E = max_e;
    w->tile_len = w->T * w->E, w->total = total, w->tiles = (total + w->tile_len - 1) / w->tile_len;
    lt_lvar **vars[] = {&w->blk, &w->ta, &w->tb, &w->qa, &w->qb, &w->qc, &w->all, &w->cnt, &w->v, &w->off, &w->tot,
                        &w->base, &w->thr};
    const char *names[] = {"gblk", "tile", "tile", "q", "q", "q", "all", "cnt", "v", "off", "tot", "base", "gthr"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (!(*vars[i] = lt_kernel_var(K, names[i], LT_INT64))) return lt_lower_nomem(lc);
    if (!(w->part = lt_kernel_local(K, "part", LT_INT64, w->T, LT_SCOPE_SHARED))) return lt_lower_nomem(lc);
    return LT_OK;
}

/* Element tile * tile_len + thread * E + q of the flat input (a new expression tree each call);
 * clamp: at most the last element (what a thread past the end reads, whatever order its guard runs
 * in). */
static lt_lnode *flat_elem(lt_lctx *lc, const nz_walk *w, lt_lvar *tile, lt_lvar *q, bool clamp) {
    lt_lnode *e = lt_l_add(K, lt_l_add(K, lt_l_mul(K, lt_l_var(K, tile), lt_l_int(K, w->tile_len)),
                                       lt_l_mul(K, lt_l_var(K, w->thr), lt_l_int(K, w->E))),
                           lt_l_var(K, q));
    return clamp ? lt_l_binary(K, LT_LOP_MIN, e, lt_l_int(K, w->total - 1)) : e;
}

/* "Element tile * tile_len + thread * E + q of the flat value v (of dims) is in range and nonzero", a
 * BOOL expression: NonZero's input, or Compress's condition (rank 1). */
static lt_status walk_at(lt_lctx *lc, const lt_value *v, int rank, const int64_t *dims, const nz_walk *w,
                         lt_lvar *tile, lt_lvar *q, lt_lnode **res) {
    lt_lnode *idx[LT_MAX_RANK], *x = NULL;
    LT_TRY(lt_lower_unflat(lc, flat_elem(lc, w, tile, q, true), rank, dims, idx));
    LT_TRY(lt_lower_value(lc, v, idx, &x));
    LT_TRY(LT_LNN(lc, x));
    lt_lnode *in = lt_l_binary(K, LT_LOP_LT, flat_elem(lc, w, tile, q, false), lt_l_int(K, w->total));
    *res = lt_l_binary(K, LT_LOP_AND, in, ne_zero(lc, x));
    return LT_LNN(lc, *res);
}

int lt_lower_gpu_block_scan(lt_lctx *lc, lt_lbuf *part, lt_lvar *thr, lt_lvar *v, int64_t T, lt_lnode **body) {
    int nb = 0;
    for (int64_t st = 1; st < T; st *= 2) {
        lt_lnode *back = lt_l_load(K, part, lt_l_binary(K, LT_LOP_MAX, lt_l_binary(K, LT_LOP_SUB, lt_l_var(K, thr), lt_l_int(K, st)),
                                                        lt_l_int(K, 0)));
        body[nb++] = lt_l_assign(K, v, lt_l_select(K, lt_l_binary(K, LT_LOP_GE, lt_l_var(K, thr), lt_l_int(K, st)), back, lt_l_int(K, 0)));
        body[nb++] = lt_l_barrier(K);
        body[nb++] = lt_l_store(K, part, lt_l_var(K, thr), lt_l_add(K, lt_l_load(K, part, lt_l_var(K, thr)), lt_l_var(K, v)));
        body[nb++] = lt_l_barrier(K);
    }
    return nb;
}

/* Pass 1 of the block walks, appended to body: each thread counts the entries where `hit` (a BOOL at
 * tile ta, entry qa) holds, the counts are scanned over the block into part, thread 0 stores the
 * total to cb[0], and every thread has it in `tot`, with `base` = 0 for pass 2. */
static int block_total(lt_lctx *lc, const nz_walk *w, lt_lnode *hit, lt_lbuf *cb, lt_lnode **body) {
    int nb = 0;
    body[nb++] = lt_l_let(K, w->all, lt_l_int(K, 0));
    body[nb++] = lt_l_for(K, w->ta, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, w->tiles), LT_LOOP_SERIAL,
                          lt_l_for(K, w->qa, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, w->E), LT_LOOP_SERIAL,
                                   lt_l_assign(K, w->all, lt_l_add(K, lt_l_var(K, w->all), one_if(lc, hit)))));
    body[nb++] = lt_l_store(K, w->part, lt_l_var(K, w->thr), lt_l_var(K, w->all));
    body[nb++] = lt_l_barrier(K);
    body[nb++] = lt_l_let(K, w->v, lt_l_int(K, 0));
    nb += lt_lower_gpu_block_scan(lc, w->part, w->thr, w->v, w->T, body + nb);
    body[nb++] = lt_l_let(K, w->tot, lt_l_load(K, w->part, lt_l_int(K, w->T - 1)));
    body[nb++] = lt_l_if(K, lt_l_binary(K, LT_LOP_EQ, lt_l_var(K, w->thr), lt_l_int(K, 0)),
                         lt_l_store(K, cb, lt_l_int(K, 0), lt_l_var(K, w->tot)), NULL);
    body[nb++] = lt_l_let(K, w->base, lt_l_int(K, 0));
    body[nb++] = lt_l_barrier(K); /* every thread has read the total before part is reused */
    return nb;
}

/* The start of a tile of pass 2, appended to body: the thread's count of its E entries where `hit`
 * (at entry qb) holds in cnt, scanned over the block into part (part[thr] - cnt: the thread's offset in the
 * tile, part[T - 1]: the tile's count). */
static int tile_count(lt_lctx *lc, const nz_walk *w, lt_lnode *hit, lt_lnode **body) {
    int nb = 0;
    body[nb++] = lt_l_let(K, w->cnt, lt_l_int(K, 0));
    body[nb++] = lt_l_for(K, w->qb, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, w->E), LT_LOOP_SERIAL,
                          lt_l_assign(K, w->cnt, lt_l_add(K, lt_l_var(K, w->cnt), one_if(lc, hit))));
    body[nb++] = lt_l_store(K, w->part, lt_l_var(K, w->thr), lt_l_var(K, w->cnt));
    body[nb++] = lt_l_barrier(K);
    return nb + lt_lower_gpu_block_scan(lc, w->part, w->thr, w->v, w->T, body + nb);
}

/* The kernel: pass 1's nodes, then the loop over pass 2's tiles, on one block of T threads (with
 * part and any `more` shared buffer allocated around them). */
static lt_status walk_kernel(lt_lctx *lc, const nz_walk *w, lt_lnode **body, int nb, lt_lnode **tile_body, int nt,
                             lt_lbuf *more, lt_lnode **res) {
    body[nb++] = lt_l_for(K, w->tb, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, w->tiles), LT_LOOP_SERIAL,
                          lt_l_seq(K, nt, tile_body));
    lt_lnode *in = lt_l_seq(K, nb, body);
    if (more) in = lt_l_alloc(K, more, in);
    lt_lnode *b = lt_lower_gpu_loop(lc, w->thr, LT_ROLE_OUTPUT, w->T, LT_LOOP_GPU_THREAD, 0, lt_l_alloc(K, w->part, in));
    *res = lt_lower_gpu_loop(lc, w->blk, LT_ROLE_OUTPUT, 1, LT_LOOP_GPU_BLOCK, 0, b);
    return LT_LNN(lc, *res);
}

/* The input in tiles of T * E elements, a thread E contiguous ones of each. Pass 1 counts every
 * thread's elements and scans the counts over the block: the total (the count output, and the row
 * length of Y). Pass 2, tile by tile: count, scan, and each thread writes its nonzero coordinates
 * from the tile's base plus its offset, in order. The result is the serial kernel's, with up to 1024
 * threads reading the input instead of one, neighbouring threads neighbouring memory. A model
 * compiled for every shape takes 1024 threads at every size (a thread count is no run-time scalar). */
static lt_status l_nonzero_gpu(lt_lctx *lc, const lt_node *n, int rank, const int64_t *dims, lt_lbuf *yb, lt_lbuf *cb,
                               lt_lnode **res) {
    int64_t total = 1;
    for (int d = 0; d < rank; d++) total *= dims[d];
    nz_walk w;
    LT_TRY(walk_init(lc, total, NZ_PER_THREAD, &w));
    lt_lnode *nza, *nzb, *nzc, *coord[LT_MAX_RANK];
    LT_TRY(walk_at(lc, n->in[0], rank, dims, &w, w.ta, w.qa, &nza));
    LT_TRY(walk_at(lc, n->in[0], rank, dims, &w, w.tb, w.qb, &nzb));
    LT_TRY(walk_at(lc, n->in[0], rank, dims, &w, w.tb, w.qc, &nzc));
    LT_TRY(lt_lower_unflat(lc, flat_elem(lc, &w, w.tb, w.qc, false), rank, dims, coord));
    lt_lnode *body[96], *tile_body[64];
    int nb = 0, nt = 0;
    /* pass 1: the total */
    nb += block_total(lc, &w, nza, cb, body + nb);
    /* pass 2, per tile: count, scan, write from base + the thread's offset */
    nt += tile_count(lc, &w, nzb, tile_body + nt);
    tile_body[nt++] = lt_l_let(K, w.off, lt_l_binary(K, LT_LOP_SUB, lt_l_add(K, lt_l_var(K, w.base), lt_l_load(K, w.part, lt_l_var(K, w.thr))),
                                                     lt_l_var(K, w.cnt)));
    lt_lnode *put[LT_MAX_RANK + 1];
    for (int d = 0; d < rank; d++)
        put[d] = lt_l_store(K, yb, lt_l_add(K, lt_l_mul(K, lt_l_int(K, d), lt_l_var(K, w.tot)), lt_l_var(K, w.off)), coord[d]);
    put[rank] = lt_l_assign(K, w.off, lt_l_add(K, lt_l_var(K, w.off), lt_l_int(K, 1)));
    tile_body[nt++] = lt_l_for(K, w.qc, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, w.E), LT_LOOP_SERIAL,
                               lt_l_if(K, nzc, lt_l_seq(K, rank + 1, put), NULL));
    tile_body[nt++] = lt_l_assign(K, w.base, lt_l_add(K, lt_l_var(K, w.base), lt_l_load(K, w.part, lt_l_int(K, w.T - 1))));
    tile_body[nt++] = lt_l_barrier(K); /* every thread has read the tile's count before part is reused */
    return walk_kernel(lc, &w, body, nb, tile_body, nt, NULL, res);
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
    lt_lnode *count = lt_l_assign(K, cnt, lt_l_add(K, lt_l_var(K, cnt), one_if(lc, nz1)));
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

/* ---- CompressPadded on the GPU: one block, the condition in tiles, each tile's slices copied by
 * all threads ---- */
#define CP_PER_THREAD 4 /* condition entries a thread takes from a tile (the tile's list is T * 4) */

/* Up to 1024 threads over the condition's L entries in tiles of T * E (E <= CP_PER_THREAD), as
 * NonZero's walk. Pass 1: the count (a block scan of the threads' counts). Pass 2, tile by tile: each
 * thread puts its true positions, in order, at its scanned offset in the tile's list (shared memory);
 * then all threads copy the tile's slices, one element each per step, the inner index fastest:
 * Y[(o * cnt + base + s) * I + i] = X[o, list[s], i] for the tile's s-th true position, o over the
 * dims before the axis (O), i over those after it (I). Flat (no axis): X as one axis, O = I = 1. */
static lt_status l_compress_gpu(lt_lctx *lc, const lt_node *n, int rank, const int64_t *dims, int64_t L, int axis,
                                lt_lbuf *yb, lt_lbuf *cb, lt_lnode **res) {
    nz_walk w;
    LT_TRY(walk_init(lc, L, CP_PER_THREAD, &w));
    int64_t O = 1, I = 1, T = w.T;
    for (int d = 0; d < axis; d++) O *= dims[d];
    for (int d = axis + 1; axis >= 0 && d < rank; d++) I *= dims[d];
    lt_lvar *st = lt_kernel_var(K, "step", LT_INT64), *f = lt_kernel_var(K, "f", LT_INT64);
    lt_lvar *tc = lt_kernel_var(K, "tc", LT_INT64), *s = lt_kernel_var(K, "s", LT_INT64);
    lt_lvar *oi = lt_kernel_var(K, "o", LT_INT64), *ii = lt_kernel_var(K, "i", LT_INT64);
    lt_lbuf *list = lt_kernel_local(K, "list", LT_INT64, T * CP_PER_THREAD, LT_SCOPE_SHARED);
    if (!st || !f || !tc || !s || !oi || !ii || !list) return lt_lower_nomem(lc);
    lt_lvar *thr = w.thr, *tot = w.tot, *base = w.base, *off = w.off;
    lt_lnode *ca, *cbn, *cc;
    LT_TRY(walk_at(lc, n->in[1], 1, &L, &w, w.ta, w.qa, &ca));
    LT_TRY(walk_at(lc, n->in[1], 1, &L, &w, w.tb, w.qb, &cbn));
    LT_TRY(walk_at(lc, n->in[1], 1, &L, &w, w.tb, w.qc, &cc));
    lt_lnode *body[96], *tile_body[64];
    int nb = 0, nt = 0;
    /* pass 1: the count */
    nb += block_total(lc, &w, ca, cb, body + nb);
    /* pass 2, per tile: count, scan, list the true positions, copy their slices */
    nt += tile_count(lc, &w, cbn, tile_body + nt);
    tile_body[nt++] = lt_l_let(K, off, lt_l_binary(K, LT_LOP_SUB, lt_l_load(K, w.part, lt_l_var(K, thr)), lt_l_var(K, w.cnt)));
    lt_lnode *put[2] = {lt_l_store(K, list, lt_l_var(K, off), flat_elem(lc, &w, w.tb, w.qc, false)),
                        lt_l_assign(K, off, lt_l_add(K, lt_l_var(K, off), lt_l_int(K, 1)))};
    tile_body[nt++] = lt_l_for(K, w.qc, LT_ROLE_REDUCE, lt_l_int(K, 0), lt_l_int(K, w.E), LT_LOOP_SERIAL,
                               lt_l_if(K, cc, lt_l_seq(K, 2, put), NULL));
    tile_body[nt++] = lt_l_let(K, tc, lt_l_load(K, w.part, lt_l_int(K, T - 1)));
    tile_body[nt++] = lt_l_barrier(K); /* the list is complete */
    /* the copy: element f of the tile's tc * O * I, f = step * T + thread */
    lt_lnode *fx = lt_l_add(K, lt_l_mul(K, lt_l_var(K, st), lt_l_int(K, T)), lt_l_var(K, thr));
    lt_lnode *xi[LT_MAX_RANK], *x = NULL;
    lt_lnode *jv = lt_l_load(K, list, lt_l_var(K, s));
    if (axis < 0) {
        LT_TRY(lt_lower_unflat(lc, jv, rank, dims, xi));
    } else {
        LT_TRY(lt_lower_unflat(lc, lt_l_var(K, oi), axis, dims, xi));
        xi[axis] = jv;
        LT_TRY(lt_lower_unflat(lc, lt_l_var(K, ii), rank - axis - 1, dims + axis + 1, xi + axis + 1));
    }
    LT_TRY(lt_lower_value(lc, n->in[0], xi, &x));
    LT_TRY(LT_LNN(lc, x));
    /* f = (o * tc + s) * I + i */
    lt_lnode *per_o = lt_l_mul(K, lt_l_var(K, tc), lt_l_int(K, I));
    lt_lnode *copy_body[4] = {
        lt_l_let(K, ii, lt_l_binary(K, LT_LOP_MOD, lt_l_var(K, f), lt_l_int(K, I))),
        lt_l_let(K, s, lt_l_binary(K, LT_LOP_MOD, lt_l_binary(K, LT_LOP_DIV, lt_l_var(K, f), lt_l_int(K, I)), lt_l_var(K, tc))),
        lt_l_let(K, oi, lt_l_binary(K, LT_LOP_DIV, lt_l_var(K, f), per_o)),
        lt_l_store(K, yb,
                   lt_l_add(K, lt_l_mul(K, lt_l_add(K, lt_l_add(K, lt_l_mul(K, lt_l_var(K, oi), lt_l_var(K, tot)),
                                                                 lt_l_var(K, base)),
                                                        lt_l_var(K, s)),
                                        lt_l_int(K, I)),
                              lt_l_var(K, ii)),
                   lt_lower_conv(lc, x, yb->dtype)),
    };
    lt_lnode *n_copy = lt_l_mul(K, lt_l_mul(K, lt_l_var(K, tc), lt_l_int(K, O)), lt_l_int(K, I));
    lt_lnode *steps = lt_l_binary(K, LT_LOP_DIV, lt_l_add(K, n_copy, lt_l_int(K, T - 1)), lt_l_int(K, T));
    lt_lnode *one = lt_l_seq(K, 2, (lt_lnode *[]){
        lt_l_let(K, f, fx),
        lt_l_if(K, lt_l_binary(K, LT_LOP_LT, lt_l_var(K, f),
                               lt_l_mul(K, lt_l_mul(K, lt_l_var(K, tc), lt_l_int(K, O)), lt_l_int(K, I))),
                lt_l_seq(K, 4, copy_body), NULL)});
    tile_body[nt++] = lt_l_for(K, st, LT_ROLE_REDUCE, lt_l_int(K, 0), steps, LT_LOOP_SERIAL, one);
    tile_body[nt++] = lt_l_assign(K, base, lt_l_add(K, lt_l_var(K, base), lt_l_var(K, tc)));
    tile_body[nt++] = lt_l_barrier(K); /* every thread is done with the list and part before the next tile */
    return walk_kernel(lc, &w, body, nb, tile_body, nt, list, res);
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
    if (lc->opt->gpu) return l_compress_gpu(lc, n, rank, dims, cd[0], axis, yb, cb, res);
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
        K, cnt, lt_l_add(K, lt_l_var(K, cnt), one_if(lc, ne_zero(lc, cv1))));
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
