/* schedule.h — schedules as data: an array of recorded steps applied to a kernel's loop nest.
 *
 * A step names its target loops by variable name ("i", "i.o", ...). lt_sched_apply checks the step's
 * preconditions and returns LT_ERR_INVALID with a message naming the loop when they fail (never
 * asserts). Steps print as one line each ("split i 16", "parallel i.o") and parse back, so tuned
 * schedules can be stored in a database and replayed.
 *
 * Step semantics (E = extent, m = min of the named loop; new loops are named after the old ones):
 * New loops keep the role (lt_loop_role) of the loop they come from: both loops of a split (and of
 * each split of a tile), the outer loop's for a fuse; copy loops of a cache step are COPY; the
 * thread loop of rowreduce is ROW_THREADS, its flattened loops keep the role of the nest they replace.
 *
 *  split L f       L in [m, m+E) -> L.o in [0, ceil(E/f)) { L.i in [0, f) } with L = m + L.o*f + L.i.
 *                  When f does not divide E (or E is not a constant) the innermost statement of the
 *                  perfectly nested body is wrapped in `if L.o*f + L.i < E` (the nest stays perfect).
 *                  L.o keeps L's kind; L.i is serial. f in [1, max(E, LT_SCHED_MAX_FACTOR)]
 *                  (a constant E; else [1, LT_SCHED_MAX_FACTOR]).        text: "split i 16"
 *                  A shape-generic kernel (lt_kernel.shape_generic) keeps the guard when f divides E.
 *  peel L f        L in [m, m+E), E a constant -> L.o in [0, E/f) { L.i in [0, f) } then
 *                  L.t in [0, E%f): the same body at m + (E/f)*f + L.t, no guard (L.i can be
 *                  vectorized for any E). L.o keeps L's kind; L.i, L.t are serial. f in
 *                  [1, LT_SCHED_MAX_FACTOR].                               text: "peel i 8"
 *  reorder L L2    swap two perfectly nested loops (either may be the outer one; the inner's bounds
 *                  must not use the outer's variable).                   text: "reorder i j"
 *  tile L L2 f f2  L (outer) directly holding L2: split both, reorder to L.o, L2.o, L.i, L2.i.
 *                                                                        text: "tile i j 8 16"
 *  fuse L L2       L (outer) directly holding L2, both constant extents: one loop "L.L2" over
 *                  E*E2 with L = m + f / E2, L2 = m2 + f % E2; it keeps L's kind. text: "fuse i j"
 *  vectorize L     kind VECTORIZED, ival = E; E must be a constant in [1, 64]. "vectorize j"
 *  unroll L f      kind UNROLLED, ival = f (0 = fully; needs a constant E). "unroll k 4"
 *  parallel L [w]  kind PARALLEL; L may not be inside or contain another parallel loop. "parallel i"
 *                  With w > 0 (ival = w), threads only run it when its nest's work (the product of
 *                  the extents of L and of the first loop inside each level) is at least w at run
 *                  time, for kernels whose extents are run-time scalars.   "parallel i 16384"
 *  bind L ...      factor 0: GPU_BLOCK, 1: GPU_THREAD; factor2 = axis 0..2 (x, y, z); an enclosing
 *                  loop bound to the same kind and axis is an error. text: "bind i.o block x"
 *  cache B L       stage buffer B (step.loop) at loop L (step.loop2) into a LOCAL (factor 0) or
 *                  SHARED (factor 1) buffer "B_local"/"B_shared". Inside each iteration of L, every
 *                  access of B in L's body must be affine in the loops nested in L (constant bounds)
 *                  with one common base (the part made of outer variables). The footprint is a box
 *                  whose dimensions are the distinct index coefficients (dense copy; conv's (oh+kh)
 *                  becomes one dimension), or, when the accesses differ by constant offsets, the
 *                  contiguous window [lowest, highest]. At most 65536 elements. The body becomes
 *                    alloc B_local: copy-in; [barrier]; body (B redirected); [barrier]; copy-out
 *                  copy-in is skipped for a buffer only written (and fully covered), copy-out is
 *                  emitted when the body writes B. A written buffer needs a single access pattern
 *                  (same coefficients and offset everywhere, no enclosing IF inside L); copy-in of
 *                  a read buffer is bounds-guarded unless the footprint is exactly what is read.
 *                  Barriers are emitted for SHARED (a cooperative copy is the GPU backend's job).
 *                                                  text: "cache A j.o local", "cache A k.o shared"
 *  microkernel L name   replace the loop nest rooted at L by `eval name(args)`; see below.
 *                                                  text: "microkernel i lt_sgemm"
 *
 *  rowreduce L T V   GPU only (sched_rows.c): each iteration of L (a row of a reduction) runs on T
 *                  threads (new loop "L.t" bound to threads x); the serial nests in its body are
 *                  flattened and distributed as f = (j*T + L.t)*V + v with v a vectorized loop of V
 *                  lanes; their accumulators (a = a OP e) combine across the threads through the
 *                  CUDA prelude's lt_warp_* (T = 32) / lt_block_* reductions; STOREs outside the
 *                  nests run in thread 0.                              text: "rowreduce o0 256 4"
 *
 * Microkernel calling convention. The nest's loops are every FOR in L's subtree in pre-order (outer
 * first): l_0 = L, ..., l_{n-1}; their bounds may not depend on each other. Its buffers are
 * b_0..b_{m-1} in order of first appearance in a pre-order walk (a STORE's buffer comes before the
 * loads of its value). Every access of b_j must be affine in the nest variables with one pattern
 * (same coefficients, base and offset for all its accesses), and the nest may hold no IF. Then
 *     args = &b_0[off_0], ..., &b_{m-1}[off_{m-1}],          (ADDR nodes: the element at all mins)
 *            E_0, ..., E_{n-1},                              (extents, int64 expressions)
 *            S_{0,0}, ..., S_{0,n-1}, ..., S_{m-1,n-1}       (int64 constants: the coefficient of
 *                                                             l_i's variable in b_j's index, 0 if unused)
 * so element (x_0..x_{n-1}) of b_j is at ptr_j + sum_i S_{j,i} * x_i. For a matmul nest
 *   for i: for j: for k: C[i*N + j] = C[i*N + j] + A[i*K + k] * B[k*N + j]
 * "microkernel i mm" gives mm(&C[0], &A[0], &B[0], M, N, K, N,1,0, K,0,1, 0,1,N). The CALL is void
 * (dtype UNDEFINED) and records the nest's static cost (fval FLOPs, ival bytes) for lt_kernel_cost.
 *
 * Every step simplifies the index expressions it touches (lt_lsimplify on expressions only; loops
 * of extent 1 stay so later steps can name them). Steps never assert: a failed precondition is
 * LT_ERR_INVALID with "schedule step 'TEXT': ..." naming the loop(s) and buffer; the kernel is left
 * unchanged. An out-of-memory midway is LT_ERR_NOMEM.
 */
#ifndef LT_SCHEDULE_H
#define LT_SCHEDULE_H

#include "loop.h"

/* The largest split (and tile) factor beyond a loop's constant extent (a GPU block's most threads):
 * a factor above both makes an inner loop of that many mostly idle iterations (a tuning database
 * step "split i 9223372036854775807" made one of 2^63) and is refused, naming the step. */
#define LT_SCHED_MAX_FACTOR ((int64_t)1024)

typedef enum lt_sstep_kind {
    LT_S_SPLIT,       /* loop -> loop.o, loop.i with extent factor (tail guarded) */
    LT_S_REORDER,     /* swap two perfectly nested loops: loop (outer) and loop2 (inner) */
    LT_S_TILE,        /* split loop by factor, loop2 by factor2, reorder to o,o,i,i */
    LT_S_FUSE,        /* merge perfectly nested loop and loop2 into loop.loop2 */
    LT_S_VECTORIZE,   /* mark loop vectorized (extent should be a constant) */
    LT_S_UNROLL,      /* mark loop unrolled */
    LT_S_PARALLEL,    /* mark loop parallel (CPU threads); factor > 0: only for that much work at run time */
    LT_S_BIND,        /* mark loop GPU block (factor 0) or thread (factor 1), axis factor2 */
    LT_S_CACHE,       /* stage buffer `loop` into a LOCAL (factor 0) or SHARED (factor 1) copy at loop2 */
    LT_S_MICROKERNEL, /* replace the loop nest at `loop` with a call to microkernel `name` */
    LT_S_ROWREDUCE,   /* spread each iteration of `loop` over factor GPU threads, factor2 lanes (sched_rows.c) */
    LT_S_PEEL,        /* loop (constant extent e) -> loop.o (e / factor) holding loop.i (factor), then
                       * loop.t (e % factor) for the rest: no guard, so loop.i can be vectorized */
    LT_S_COUNT
} lt_sstep_kind;

typedef struct lt_sstep {
    lt_sstep_kind kind;
    char loop[64];
    char loop2[64];
    char name[64];
    int64_t factor, factor2;
} lt_sstep;

typedef struct lt_schedule {
    int n;
    lt_sstep steps[64];
} lt_schedule;

lt_status lt_sched_apply(lt_ctx *ctx, lt_kernel *k, const lt_sstep *step);
lt_status lt_sched_apply_all(lt_ctx *ctx, lt_kernel *k, const lt_schedule *s); /* stops at the first error */
const char *lt_sstep_kind_name(lt_sstep_kind k); /* "split", "reorder", ... */
/* "split i 16" <-> step (the formats above; words separated by blanks). format always writes a
 * NUL-terminated line (truncated to n); parse fails with LT_ERR_INVALID naming the line. */
void lt_sstep_format(const lt_sstep *s, char *buf, size_t n);
lt_status lt_sstep_parse(lt_ctx *ctx, const char *line, lt_sstep *out);

/* Would "rowreduce loop threads lanes" apply to k? On false, why (may be NULL) says what is in the
 * way. lt_sched_rowreduce_ is the step itself (lt_sched_apply calls it). */
bool lt_sched_rowreduce_check(const lt_kernel *k, const char *loop, int64_t threads, int64_t lanes, char *why,
                              size_t why_n);
lt_status lt_sched_rowreduce_(lt_ctx *ctx, lt_kernel *k, const lt_sstep *step);

#endif
