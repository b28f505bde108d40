/* sched_default.c — the default schedule of a lowered kernel, by group pattern (lt_sched_default).
 *
 * The schedule is recorded as steps (schedule.h) computed from the unscheduled loop structure, so
 * it can be printed, stored and replayed like a tuned one. Loops are recognized by their roles
 * (lt_loop_role, set by the lowering), never by their names; the steps then name the loops they
 * act on. Per top-level loop nest of the body:
 *   elementwise / broadcast / injective nests (OUTPUT loops):
 *     fuse the innermost loops while the innermost extent is below 2*lanes, split the innermost by
 *     the vector lanes and vectorize it when the lanes divide the extent, else peel it (a vector
 *     main loop and a scalar tail; shape-generic kernels always peel), parallelize the outermost
 *     loop when the nest is big enough to pay for threads (fusing the two outermost loops first when
 *     the outermost is too short to feed the threads);
 *   reductions, pooling, direct convolution (KEPT and BATCH loops outside, REDUCE loops inside):
 *     the kept loops are parallelized the same way; the reduction loops stay serial (their
 *     accumulator is a loop-carried dependence); the LANES loops of partial accumulators
 *     (lower_reduce.c) are vectorized, the innermost REDUCED_OUTPUT loops (the normalize pass of
 *     softmax and the norms) split by the lanes and vectorized, and pooling's interior LANE_OUTPUT
 *     loop too (one output per lane);
 *   GEMM calls (lower_gemm.c): the call is parallel inside; its BATCH loops stay serial and its
 *     EPILOGUE nest is scheduled as an elementwise nest;
 *   plain GEMM nests (lower_gemm.c with no_microkernels; they hold an INIT loop): the BLOCK loop
 *     parallel (or the BATCH_OUTER loop), the INIT_COLS and EPILOGUE_COLS loops vectorized.
 * With opt->gpu, nests are bound to blocks and threads instead (the CUDA backend): see "GPU
 * schedules" below (vectorized grid-stride elementwise nests; reductions a warp or a block per row
 * through the rowreduce step, or a thread per output).
 */
#include "lower_impl.h"

#include <stdio.h>
#include <string.h>

#define PARALLEL_MIN_WORK 16384 /* iterations below which threads cost more than they give */
#define PARALLEL_MIN_OUTER 8    /* an outer loop shorter than this is fused with the next one */

typedef struct sched_b {
    lt_ctx *ctx;
    lt_schedule *s;
    int lanes;
    const lt_kernel *k;
    bool generic; /* lt_lower_options.shape_generic: one code for every size of a bucket */
} sched_b;

#define STEP_NAME_MAX ((int)sizeof(((lt_sstep *)0)->loop) - 1) /* the longest loop name a step holds */

/* A loop name (plus `extra` characters of suffixes the steps will add) must fit a step: the names
 * come from the lowering and are short, so a longer one is a bug, reported rather than skipped. */
static lt_status name_fits(sched_b *b, const char *name, size_t extra) {
    if (strlen(name) + extra <= (size_t)STEP_NAME_MAX) return LT_OK;
    return lt_error(b->ctx, LT_ERR_INTERNAL, "default schedule of kernel %s: loop name '%.80s' (+%zu) is longer than a "
                    "schedule step holds (%d characters)", b->k->name, name, extra, STEP_NAME_MAX);
}

static lt_status push(sched_b *b, lt_sstep_kind kind, const char *loop, const char *loop2, const char *name,
                      int64_t f, int64_t f2) {
    int cap = (int)(sizeof b->s->steps / sizeof b->s->steps[0]);
    if (b->s->n >= cap)
        return lt_error(b->ctx, LT_ERR_UNSUPPORTED, "default schedule of kernel %s: more than %d steps (one schedule's "
                        "most)", b->k->name, cap);
    LT_TRY(name_fits(b, loop, 0));
    if (loop2) LT_TRY(name_fits(b, loop2, 0));
    lt_sstep *st = &b->s->steps[b->s->n];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    snprintf(st->loop, sizeof st->loop, "%s", loop);
    if (loop2) snprintf(st->loop2, sizeof st->loop2, "%s", loop2);
    if (name) snprintf(st->name, sizeof st->name, "%s", name);
    st->factor = f;
    st->factor2 = f2;
    b->s->n++;
    return LT_OK;
}

/* The perfect nest starting at FOR node n: loops[0] = n, each the only statement of the previous.
 * -1 when it is deeper than max. */
static int perfect_nest(const lt_lnode *n, const lt_lnode **loops, int max) {
    int c = 0;
    while (n && n->kind == LT_L_FOR) {
        if (c == max) return -1;
        loops[c++] = n;
        const lt_lnode *body = lt_lfor_body(n);
        while (body && body->kind == LT_L_SEQ && body->n == 1) body = lt_lseq_stmt(body, 0);
        n = body;
    }
    return c;
}

static int64_t extent(const lt_lnode *f) {
    int64_t e;
    return lt_lis_int(lt_lfor_extent(f), &e) ? e : -1;
}

/* Names of loops as the steps recorded so far rename them. */
typedef struct nest_names {
    int n;
    char name[LT_MAX_RANK * 2][64];
    int64_t ext[LT_MAX_RANK * 2];
} nest_names;

static lt_status fuse_pair(sched_b *b, nest_names *nn, int a) {
    char fused[64];
    LT_TRY(name_fits(b, nn->name[a], strlen(nn->name[a + 1]) + 1));
    LT_TRY(push(b, LT_S_FUSE, nn->name[a], nn->name[a + 1], NULL, 0, 0));
    snprintf(fused, sizeof fused, "%s.%s", nn->name[a], nn->name[a + 1]);
    memcpy(nn->name[a], fused, sizeof fused);
    nn->ext[a] *= nn->ext[a + 1];
    for (int i = a + 1; i + 1 < nn->n; i++) {
        memcpy(nn->name[i], nn->name[i + 1], sizeof nn->name[i]);
        nn->ext[i] = nn->ext[i + 1];
    }
    nn->n--;
    return LT_OK;
}

/* Parallelize loop 0 of nn (fusing 0 and 1 first when loop 0 is short). total = nest iterations.
 * Shape-generic kernels parallelize loop 0 as it is, with a run-time minimum of work. */
static lt_status parallel_outer(sched_b *b, nest_names *nn, int64_t total, int last_kept) {
    /* one code for every size: the outermost loop, threads by work at run time; never fused (the fused
     * index would divide by a run-time extent at every iteration) */
    if (nn->n > 0 && b->generic) return push(b, LT_S_PARALLEL, nn->name[0], NULL, NULL, PARALLEL_MIN_WORK, 0);
    if (nn->n == 0 || total < PARALLEL_MIN_WORK) return LT_OK;
    if (nn->ext[0] < PARALLEL_MIN_OUTER && last_kept >= 1 && nn->ext[1] > 0) {
        LT_TRY(fuse_pair(b, nn, 0));
    }
    if (nn->ext[0] < 2) return LT_OK;
    return push(b, LT_S_PARALLEL, nn->name[0], NULL, NULL, 0, 0);
}

/* ---- GPU schedules (opt->gpu) ----
 * Elementwise nests: one flat loop, split by the vector width V (16 bytes of the widest stored
 * element: 4 float32, 8 float16) into a vectorized loop (the CUDA emitter makes its contiguous
 * accesses 16-byte loads and stores, the tail lanes guarded), then GPU_THREADS threads per block;
 * when that makes more than GPU_STRIDE_BLOCKS blocks, each thread handles GPU_PER_THREAD vectors
 * one grid apart (a grid-stride loop of fixed trip count, unrolled).
 * Reductions: the kept loops fused into one row loop; when the reduced elements of a row are
 * contiguous (a load steps by 1 along the innermost reduced loop) and at least GPU_ROW_MIN (a warp's
 * width: shorter rows leave lanes idle), the row runs on a warp (rows of up to 32*4 vectors; a row of
 * fewer than 32 vectors takes one element per lane, GPU_WARP_ROWS rows per block, threads y) or on a block
 * (threads = a quarter of the row's vectors, 64..1024) through the rowreduce step (warp-shuffle and
 * shared-memory reductions, vector loads); otherwise one thread per output (a column reduction
 * reads consecutive outputs' elements side by side).
 * Shape-generic kernels (one code for many sizes) always take GPU_THREADS threads per block where
 * the size would pick fewer.
 * Nests already bound by the lowering (GPU GEMM / conv kernels) are left alone. */
#define GPU_THREADS 256
#define GPU_PER_THREAD 4
#define GPU_STRIDE_BLOCKS 4096
#define GPU_ROW_MIN 32
#define GPU_WARP_ROWS 4

static bool gpu_bound(const lt_lnode *n) {
    if (!n || !lt_lnode_info_get(n->kind)->is_stmt) return false;
    if (n->kind == LT_L_FOR && (n->op == LT_LOOP_GPU_BLOCK || n->op == LT_LOOP_GPU_THREAD)) return true;
    for (int i = 0; i < n->n; i++)
        if (gpu_bound(n->kids[i])) return true;
    return false;
}

/* Elements in 16 bytes of the widest argument (written ones only when `written`). */
static int64_t gpu_lanes(const lt_kernel *k, bool written) {
    int64_t w = 0;
    for (int i = 0; i < k->n_args; i++) {
        const lt_lbuf *a = k->args[i];
        int64_t sz = lt_dtype_size(a->dtype);
        if ((!written || a->written) && sz > w) w = sz;
    }
    return w <= 0 || w > 16 ? 1 : 16 / w;
}

static void name2(char *out, size_t n, const char *a, const char *b) { /* a + b (empty if too long) */
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb >= n) {
        out[0] = 0;
        return;
    }
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
}

static lt_status gpu_elementwise(sched_b *b, nest_names *nn, int64_t total) {
    while (nn->n > 1) LT_TRY(fuse_pair(b, nn, 0));
    LT_TRY(name_fits(b, nn->name[0], 10));
    char cur[80], o[80], in[80], oo[80], oi[80];
    snprintf(cur, sizeof cur, "%s", nn->name[0]);
    int64_t V = gpu_lanes(b->k, true), n = total;
    if (V > 1 && total >= V) {
        LT_TRY(push(b, LT_S_SPLIT, cur, NULL, NULL, V, 0));
        name2(in, sizeof in, cur, ".i");
        LT_TRY(push(b, LT_S_VECTORIZE, in, NULL, NULL, 0, 0));
        name2(cur, sizeof cur, nn->name[0], ".o");
        n = (total + V - 1) / V;
    }
    int64_t T = n >= GPU_THREADS || b->generic ? GPU_THREADS : (n + 31) / 32 * 32;
    LT_TRY(push(b, LT_S_SPLIT, cur, NULL, NULL, T, 0));
    name2(o, sizeof o, cur, ".o");
    name2(in, sizeof in, cur, ".i");
    int64_t blocks = (n + T - 1) / T;
    if (blocks >= GPU_STRIDE_BLOCKS) { /* grid-stride: o = s*NB + blk, s innermost of the three */
        int64_t nb = (blocks + GPU_PER_THREAD - 1) / GPU_PER_THREAD;
        LT_TRY(push(b, LT_S_SPLIT, o, NULL, NULL, nb, 0));
        name2(oo, sizeof oo, o, ".o");
        name2(oi, sizeof oi, o, ".i");
        LT_TRY(push(b, LT_S_REORDER, oo, oi, NULL, 0, 0));
        LT_TRY(push(b, LT_S_REORDER, oo, in, NULL, 0, 0));
        LT_TRY(push(b, LT_S_BIND, oi, NULL, NULL, 0, 0));
        LT_TRY(push(b, LT_S_BIND, in, NULL, NULL, 1, 0));
        return push(b, LT_S_UNROLL, oo, NULL, NULL, GPU_PER_THREAD, 0);
    }
    LT_TRY(push(b, LT_S_BIND, o, NULL, NULL, 0, 0));
    return push(b, LT_S_BIND, in, NULL, NULL, 1, 0);
}

/* The first FOR reachable through SEQ / IF statements of a row body. */
static const lt_lnode *first_nest(const lt_lnode *n) {
    if (!n) return NULL;
    if (n->kind == LT_L_FOR) return n;
    if (n->kind != LT_L_SEQ && n->kind != LT_L_IF) return NULL;
    for (int i = n->kind == LT_L_IF ? 1 : 0; i < n->n; i++) {
        const lt_lnode *f = first_nest(n->kids[i]);
        if (f) return f;
    }
    return NULL;
}

/* Coefficient of v in an affine index (false when not affine in v). */
static bool coef_of(const lt_lnode *n, const lt_lvar *v, int64_t *c) {
    int64_t a, b, k;
    switch (n->kind) {
    case LT_L_INT: *c = 0; return true;
    case LT_L_VAR: *c = n->var == v; return true;
    case LT_L_BINARY:
        if (n->op == LT_LOP_ADD || n->op == LT_LOP_SUB) {
            if (!coef_of(lt_lexpr_a(n), v, &a) || !coef_of(lt_lexpr_b(n), v, &b)) return false;
            *c = n->op == LT_LOP_ADD ? a + b : a - b;
            return true;
        }
        if (n->op == LT_LOP_MUL) {
            if (lt_lis_int(lt_lexpr_b(n), &k) && coef_of(lt_lexpr_a(n), v, &a)) { *c = a * k; return true; }
            if (lt_lis_int(lt_lexpr_a(n), &k) && coef_of(lt_lexpr_b(n), v, &a)) { *c = a * k; return true; }
        }
        if (!lt_luses_var(n, v)) { *c = 0; return true; }
        return false;
    default:
        if (lt_luses_var(n, v)) return false;
        *c = 0;
        return true;
    }
}

static bool steps_by_one(const lt_lnode *n, const lt_lvar *v) {
    if (!n) return false;
    int64_t c;
    if (n->kind == LT_L_LOAD && coef_of(lt_lload_index(n), v, &c) && c == 1) return true;
    for (int i = 0; i < n->n; i++)
        if (steps_by_one(n->kids[i], v)) return true;
    return false;
}

static lt_status gpu_reduce(sched_b *b, nest_names *nn, const lt_lnode *row) {
    while (nn->n > 1) LT_TRY(fuse_pair(b, nn, 0));
    LT_TRY(name_fits(b, nn->name[0], 10));
    char o[80], oo[80], oi[80];
    snprintf(o, sizeof o, "%s", nn->name[0]);
    int64_t rows = nn->ext[0];
    /* the reduced elements of a row: the first nest of the row body */
    const lt_lnode *f = first_nest(lt_lfor_body(row)), *last = f;
    int64_t C = 1;
    for (const lt_lnode *x = f; x && x->kind == LT_L_FOR;) {
        int64_t e = extent(x);
        C = e > 0 && C > 0 ? C * e : -1;
        last = x;
        x = lt_lfor_body(x);
        while (x && x->kind == LT_L_SEQ && x->n == 1) x = lt_lseq_stmt(x, 0);
    }
    int64_t V = gpu_lanes(b->k, false);
    if (f && C >= GPU_ROW_MIN && steps_by_one(lt_lfor_body(last), last->var)) {
        if (C < 32 * V) V = 1; /* a short row: an element per lane (one choice for 32..127, one bucket) */
        int64_t nv = (C + V - 1) / V;
        if (nv <= 32 * 4 && rows >= GPU_WARP_ROWS &&
            lt_sched_rowreduce_check(b->k, row->var->name, 32, V, NULL, 0)) { /* a warp per row */
            LT_TRY(push(b, LT_S_SPLIT, o, NULL, NULL, GPU_WARP_ROWS, 0));
            name2(oo, sizeof oo, o, ".o");
            name2(oi, sizeof oi, o, ".i");
            LT_TRY(push(b, LT_S_BIND, oo, NULL, NULL, 0, 0));
            LT_TRY(push(b, LT_S_BIND, oi, NULL, NULL, 1, 1));
            return push(b, LT_S_ROWREDUCE, oi, NULL, NULL, 32, V);
        }
        int64_t T = 64;
        while (T < 1024 && T * 4 < nv) T *= 2;
        if (lt_sched_rowreduce_check(b->k, row->var->name, T, V, NULL, 0)) { /* a block per row */
            LT_TRY(push(b, LT_S_BIND, o, NULL, NULL, 0, 0));
            return push(b, LT_S_ROWREDUCE, o, NULL, NULL, T, V);
        }
    }
    /* one thread per output */
    int64_t T = rows >= GPU_THREADS || b->generic ? GPU_THREADS : (rows + 31) / 32 * 32;
    LT_TRY(push(b, LT_S_SPLIT, o, NULL, NULL, T, 0));
    name2(oo, sizeof oo, o, ".o");
    name2(oi, sizeof oi, o, ".i");
    LT_TRY(push(b, LT_S_BIND, oo, NULL, NULL, 0, 0));
    return push(b, LT_S_BIND, oi, NULL, NULL, 1, 0);
}

/* Loop `name` of extent e by the lanes, the inner part vectorized: split when the lanes divide e
 * (or `split` is asked: a guarded tail), else, and always in a shape-generic kernel, peeled (a
 * vector main loop and a scalar tail, no guard). Returns through *peeled which it took. */
static lt_status vector_loop(sched_b *b, const char *name, int64_t e, bool split, bool *peeled) {
    bool peel = !split && (b->generic || e % b->lanes != 0);
    char in[80];
    LT_TRY(name_fits(b, name, 2));
    LT_TRY(push(b, peel ? LT_S_PEEL : LT_S_SPLIT, name, NULL, NULL, b->lanes, 0));
    name2(in, sizeof in, name, ".i");
    if (peeled) *peeled = peel;
    return push(b, LT_S_VECTORIZE, in, NULL, NULL, 0, 0);
}

/* Elementwise nest: all loops are output loops. */
static lt_status sched_elementwise(sched_b *b, const lt_lnode **loops, int nl, bool gpu) {
    nest_names nn = {0};
    int64_t total = 1;
    for (int i = 0; i < nl; i++) {
        LT_TRY(name_fits(b, loops[i]->var->name, 0));
        snprintf(nn.name[i], sizeof nn.name[i], "%s", loops[i]->var->name);
        nn.ext[i] = extent(loops[i]);
        if (nn.ext[i] < 0) return LT_OK; /* not a static nest: leave it */
        total *= nn.ext[i];
    }
    nn.n = nl;
    if (gpu) return gpu_elementwise(b, &nn, total);
    while (nn.n > 1 && nn.ext[nn.n - 1] < 2 * b->lanes) LT_TRY(fuse_pair(b, &nn, nn.n - 2));
    int inner = nn.n - 1;
    bool vec = b->lanes > 1 && (nn.ext[inner] >= b->lanes || b->generic); /* generic: tiny extents peel too */
    if (!vec) return parallel_outer(b, &nn, total, nn.n - 1);
    bool peel = nn.ext[inner] % b->lanes != 0 || b->generic; /* vector_loop's choice */
    if (peel && nn.n >= 2 && !b->generic && total >= PARALLEL_MIN_WORK && nn.ext[0] < PARALLEL_MIN_OUTER) {
        LT_TRY(fuse_pair(b, &nn, 0)); /* parallel_outer's fuse, before the peel ends the perfect nest */
        inner = nn.n - 1;
    }
    LT_TRY(vector_loop(b, nn.name[inner], nn.ext[inner], false, &peel));
    char o[sizeof nn.name[inner]];
    name2(o, sizeof o, nn.name[inner], ".o"); /* fits: vector_loop checked the name with 2 more */
    memcpy(nn.name[inner], o, sizeof o);
    nn.ext[inner] /= b->lanes;
    return parallel_outer(b, &nn, total, peel ? 0 : nn.n - 1); /* peeled: not perfectly nested, no more fusing */
}

/* Loops a reduction-like nest keeps (its iterations independent): KEPT dims and GEMM batches. */
static bool is_kept(const lt_lnode *f) {
    return f->role == LT_ROLE_KEPT || f->role == LT_ROLE_BATCH_OUTER || f->role == LT_ROLE_BATCH;
}

/* Kept loops outside reduction loops: parallelize the kept part. */
static lt_status sched_kept(sched_b *b, const lt_lnode **loops, int nl, int64_t inner_work, bool gpu) {
    nest_names nn = {0};
    int64_t total = inner_work;
    int kept = 0;
    for (int i = 0; i < nl; i++) {
        if (!is_kept(loops[i])) break;
        LT_TRY(name_fits(b, loops[i]->var->name, 0));
        snprintf(nn.name[i], sizeof nn.name[i], "%s", loops[i]->var->name);
        nn.ext[i] = extent(loops[i]);
        if (nn.ext[i] < 0) break;
        total *= nn.ext[i];
        kept++;
    }
    nn.n = kept;
    if (!kept) return LT_OK;
    if (gpu) return gpu_reduce(b, &nn, loops[kept - 1]);
    return parallel_outer(b, &nn, total, kept - 1);
}

/* Rough iteration count of everything under n (for the parallel threshold). */
static int64_t work_of(const lt_lnode *n) {
    if (!n) return 0;
    if (n->kind == LT_L_FOR) {
        int64_t e = extent(n);
        int64_t w = work_of(lt_lfor_body(n));
        return (e < 0 ? 1 : e) * (w < 1 ? 1 : w);
    }
    int64_t w = 0;
    if (lt_lnode_info_get(n->kind)->is_stmt)
        for (int i = 0; i < n->n; i++) w += work_of(n->kids[i]);
    return w ? w : 1;
}

/* The first loop of the given role in pre-order (NULL if none). */
static const lt_lnode *find_role(const lt_lnode *n, lt_loop_role role) {
    if (!n) return NULL;
    if (n->kind == LT_L_FOR && n->role == role) return n;
    if (!lt_lnode_info_get(n->kind)->is_stmt) return NULL;
    for (int i = 0; i < n->n; i++) {
        const lt_lnode *f = find_role(n->kids[i], role);
        if (f) return f;
    }
    return NULL;
}

/* Split loop f by the lanes and vectorize the inner part, when the lanes divide its extent (a
 * shape-generic kernel: always, peeled). */
static lt_status vectorize_loop(sched_b *b, const lt_lnode *f) {
    int64_t e = f ? extent(f) : -1;
    if (!f || b->lanes <= 1 || e < 1 || (!b->generic && (e < b->lanes || e % b->lanes))) return LT_OK;
    return vector_loop(b, f->var->name, e, false, NULL);
}

static lt_status sched_gemm(sched_b *b, const lt_lnode *body, const lt_lower_options *opt) {
    if (opt->gpu) return LT_OK;
    LT_TRY(vectorize_loop(b, find_role(body, LT_ROLE_INIT_COLS)));
    LT_TRY(vectorize_loop(b, find_role(body, LT_ROLE_EPILOGUE_COLS)));
    const lt_lnode *blk = find_role(body, LT_ROLE_BLOCK);
    if (blk) return push(b, LT_S_PARALLEL, blk->var->name, NULL, NULL, 0, 0);
    const lt_lnode *b0 = find_role(body, LT_ROLE_BATCH_OUTER);
    if (b0 && extent(b0) >= 2) return push(b, LT_S_PARALLEL, b0->var->name, NULL, NULL, 0, 0);
    return LT_OK;
}

/* Does the statement n hold an ASSIGN or a FOR (so it is not an innermost, dependence-free body)? */
static bool has_assign_or_loop(const lt_lnode *n) {
    if (!n || !lt_lnode_info_get(n->kind)->is_stmt) return false;
    if (n->kind == LT_L_ASSIGN || n->kind == LT_L_FOR) return true;
    for (int i = 0; i < n->n; i++)
        if (has_assign_or_loop(n->kids[i])) return true;
    return false;
}

/* Inside reductions: vectorize the LANES loops of partial accumulators, and split+vectorize the
 * innermost REDUCED_OUTPUT loops (softmax's and the norms' last pass: the body only stores). */
static lt_status sched_inner_vectors(sched_b *b, const lt_lnode *n) {
    if (!n || !lt_lnode_info_get(n->kind)->is_stmt) return LT_OK;
    if (n->kind == LT_L_FOR) {
        const char *nm = n->var->name;
        int64_t e = extent(n);
        if (n->role == LT_ROLE_LANES && e >= 1 && e <= 64) return push(b, LT_S_VECTORIZE, nm, NULL, NULL, 0, 0);
        /* pooling's unguarded interior positions: one output per lane */
        if (n->role == LT_ROLE_LANE_OUTPUT && e >= (b->generic ? 1 : 2) && b->lanes > 1) {
            if (e <= 64 && !b->generic) return push(b, LT_S_VECTORIZE, nm, NULL, NULL, 0, 0);
            return vector_loop(b, nm, e, !b->generic, NULL); /* a guarded split, or peeled (generic) */
        }
        if (n->role == LT_ROLE_REDUCED_OUTPUT && !has_assign_or_loop(lt_lfor_body(n)) && b->lanes > 1 &&
            (b->generic ? e >= 1 : e >= b->lanes && e % b->lanes == 0))
            return vector_loop(b, nm, e, false, NULL);
    }
    for (int i = 0; i < n->n; i++) LT_TRY(sched_inner_vectors(b, n->kids[i]));
    return LT_OK;
}

lt_status lt_sched_default(lt_ctx *ctx, const lt_group *g, const lt_kernel *k, const lt_lower_options *opt,
                           lt_schedule *out) {
    static const lt_lower_options dflt = {0};
    if (!opt) opt = &dflt;
    memset(out, 0, sizeof *out);
    sched_b b = {ctx, out, opt->vector_lanes > 0 ? opt->vector_lanes : 16, k, opt->shape_generic};
    const lt_lnode *body = k->body;
    if (!body) return LT_OK;
    /* plain GEMM nests (MatMul, Gemm, pointwise Conv): the output is zeroed, then accumulated */
    if (find_role(body, LT_ROLE_INIT)) return sched_gemm(&b, body, opt);
    /* each top-level nest */
    int nstmts = body->kind == LT_L_SEQ ? body->n : 1;
    for (int s = 0; s < nstmts; s++) {
        const lt_lnode *st = body->kind == LT_L_SEQ ? body->kids[s] : body;
        if (st->kind != LT_L_FOR) continue;
        const lt_lnode *loops[LT_MAX_RANK * 2];
        int nl = perfect_nest(st, loops, LT_MAX_RANK * 2);
        if (nl < 0)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "default schedule of kernel %s: a loop nest deeper than %d loops",
                            k->name, LT_MAX_RANK * 2);
        /* a GEMM call's batch loops stay serial (the call is parallel inside); its epilogue nest
         * is elementwise */
        const lt_lnode *inner = nl ? lt_lfor_body(loops[nl - 1]) : NULL;
        while (inner && inner->kind == LT_L_SEQ && inner->n == 1) inner = lt_lseq_stmt(inner, 0);
        if (inner && inner->kind == LT_L_EVAL) continue;
        if (opt->gpu && gpu_bound(st)) continue; /* bound by the lowering (GPU GEMM / conv kernels) */
        bool epilogue = st->role == LT_ROLE_EPILOGUE || st->role == LT_ROLE_EPILOGUE_COLS;
        bool chain = epilogue || g->pattern == LT_PK_ELEMWISE || g->pattern == LT_PK_BROADCAST ||
                     g->pattern == LT_PK_INJECTIVE;
        if (chain) LT_TRY(sched_elementwise(&b, loops, nl, opt->gpu));
        else {
            /* work inside the kept loops: what is under the last kept loop */
            int kept = 0;
            while (kept < nl && is_kept(loops[kept])) kept++;
            int64_t inner_work = kept ? work_of(lt_lfor_body(loops[kept - 1])) : 1;
            LT_TRY(sched_kept(&b, loops, nl, inner_work, opt->gpu));
            if (!opt->gpu) LT_TRY(sched_inner_vectors(&b, st));
        }
    }
    return LT_OK;
}
