/* lower.h — fusion of the main graph into kernel groups, lowering of each group to a Loop IR kernel,
 * and the default schedule of each group pattern.
 *
 * Pipeline position: after the graph passes (shapes bound and folded), before codegen.
 *
 *   lt_fuse        partitions the main graph's nodes into groups (lt_groups), by pattern kind:
 *                  - chains of ELEMWISE / BROADCAST / INJECTIVE nodes fuse together;
 *                  - such a chain fuses into a following REDUCE node as its prologue (softmax,
 *                    LayerNorm, RMSNorm are one kernel each);
 *                  - elementwise nodes that follow an anchor (a node lowered by a `lower` hook:
 *                    reductions, MatMul, Gemm, Conv, pooling) and keep its output shape (and, for
 *                    OUT_EW_FUSABLE anchors, its dtype) fuse into it as its epilogue (bias add,
 *                    activation, residual add), also across a reshape that only adds or drops
 *                    leading 1s; a MatMul's epilogue may end with a Transpose keeping its columns
 *                    innermost (the call stores the transposed layout: attention's merged heads);
 *                    a node a GEMM call cannot apply that leads into a softmax/norm joins that
 *                    reduction as its prologue instead (unless it reads a bool mask);
 *                  - MatMul/Gemm/Conv take no computed prologue (the microkernels read operands
 *                    from memory), only reshapes, and for MatMul transposes, of a stored value
 *                    that are strided views of it (lower_view.c: attention's heads);
 *                  - a value read by more than one node, or a graph output, ends its group (it is
 *                    stored to memory), and an elementwise producer whose output is smaller than its
 *                    consumer's (broadcast) is not inlined, so no work is duplicated.
 *                  A node is compilable only when the lowering has a hook for its op that accepts it
 *                  (dtypes, attributes, constant shape/axes inputs) and every input/output shape is
 *                  static. Other nodes become single-node HOST groups, run by the runtime through the
 *                  op's reference eval hook. Constant nodes are host groups too (cheap; the constant
 *                  folding pass normally removes them).
 *   lt_lower_group builds the Loop IR kernel of one compiled group (lt_lowered): the anchor's `lower`
 *                  hook (reductions, softmax, norms, pooling, MatMul/Gemm/Conv: an EVAL of the
 *                  prelude's lt_gemm_f32 / lt_conv2d_f32 with the longest prefix of the epilogue it
 *                  can apply fused into the call (scalar scale as alpha, bias, residual,
 *                  activation) and the rest in a Loop IR nest after it, operands and output as
 *                  strided views, constant weights pre-packed) or, for pure
 *                  elementwise/injective groups, one loop nest per output that stores the output
 *                  expression built by the ops' `expr` hooks (producers in the same group are
 *                  inlined, others are LOADed from the kernel's input buffers with numpy broadcasting
 *                  or the op's injective index map). Epilogues are applied before the final STORE.
 *                  It also records the default schedule for the group's pattern (sched_default.c):
 *                  the kernel is returned UNSCHEDULED (body0) with the schedule beside it;
 *                  lt_lower_apply_schedule applies it, lt_lower_simplify then tidies the result.
 *
 * Invariants:
 *   - groups are listed in a topological order (every input of a group is a graph input, a constant,
 *     or an output of an earlier group); every node of the main graph is in exactly one group;
 *   - a group's values that are not in `outputs` are read only inside the group (they are never
 *     materialized: the runtime needs no buffer for them);
 *   - kernel argument order (the kernel ABI of docs/COMPILER.md): the group's outputs first, then its
 *     inputs that are not constants, then its constant inputs (weights), then packed weights and
 *     scratch buffers in the order the lowering created them. lt_lowered.arg_values[i] is the graph
 *     value bound to kernel argument i (a packed weight's source constant; NULL for scratch). A
 *     kernel may still list a weight it reads only through its packed copy (the runtime binds it
 *     in place: it costs nothing);
 *   - everything lives in the caller's arena (compilation lifetime); nothing here mallocs without
 *     freeing, prints, or reads the environment.
 *
 * Entry points: lt_fuse, lt_groups_print, lt_lower_group, lt_lower_apply_schedule,
 *               lt_sched_default, lt_lower_supported.
 */
#ifndef LT_LOWER_H
#define LT_LOWER_H

#include "../loop/schedule.h"
#include "../ops/ops.h"

/* ---------------------------------------------------------------------------------------------
 * Groups
 * ------------------------------------------------------------------------------------------- */

typedef struct lt_group {
    int id;                /* index in lt_groups.groups */
    lt_pattern pattern;    /* ELEMWISE / BROADCAST / INJECTIVE (pure chains: the least fusable kind
                            * in the chain), REDUCE or OUT_EW_FUSABLE (the anchor's kind), or the
                            * node's own kind for host groups */
    bool host;             /* run through the interpreter's eval hook (one node) */
    const char *reason;    /* host groups: why not compiled ("no lowering for Einsum", "dynamic shape
                            * of input 0 'x'", ...); NULL for compiled groups */
    lt_node *anchor;       /* REDUCE / OUT_EW_FUSABLE node, or the node that produces the first output
                            * of a pure chain; host groups: their node */
    int n_nodes;
    lt_node **nodes;       /* in topological order */
    int n_inputs;
    lt_value **inputs;     /* values read from outside the group, each once, non-constants first
                            * (graph inputs and earlier groups' outputs), then constants (weights).
                            * Inputs read only at compile time (Reshape's shape, Slice's starts, a
                            * reduction's axes, ...) are not listed for compiled groups. Host groups
                            * list their node's present inputs, in node order. */
    int n_outputs;
    lt_value **outputs;    /* values read after the group or graph outputs, in node order */
} lt_group;

typedef struct lt_groups {
    const lt_model *model;
    int n;
    lt_group *groups;      /* topological order */
    int *node_group;       /* main-graph node index -> group id */
    int n_host;            /* number of host groups */
    int n_compiled_nodes;  /* nodes inside compiled groups (for "fraction compiled" reports) */
} lt_groups;

typedef struct lt_fuse_options {
    bool no_fusion;        /* every compilable node is its own group (-O0/-O1, bisecting) */
    bool no_epilogues;     /* do not fuse elementwise epilogues into anchors */
    bool all_host;         /* every node is a host group (the interpreter through the plan) */
    bool gpu;              /* for the CUDA backend: MatMul/Gemm/Conv also compile in float16 and
                            * bfloat16 (lt_lower_gpu_supported), and take into their group only the
                            * epilogue nodes their CUDA entry applies (bias/residual Add, scalar
                            * Mul/Div, activations, reshapes): the rest starts a new group */
} lt_fuse_options;

/* Partition m->graph (the main graph) into groups. opt may be NULL (defaults: full fusion). The
 * result lives in `arena`. Errors: LT_ERR_NOMEM; LT_ERR_INVALID naming the node for a graph whose
 * values have no type (run shape inference first). Groups that cannot compile are not errors. */
lt_status lt_fuse(lt_ctx *ctx, const lt_model *m, lt_arena *arena, const lt_fuse_options *opt,
                  lt_groups *out);

/* One line per group:
 *   "g3 reduce anchor=n7 'ln' (ReduceMean) nodes=[n5 Sub, n6 Pow, n7 ReduceMean, n8 Add]
 *       in=[x, w] out=[y]"
 *   "g4 host (NonZero) n9 'nz': no lowering for NonZero"
 * followed by a summary line "groups: 12 (2 host), nodes compiled: 40/42". */
void lt_groups_print(const lt_groups *gs, lt_strbuf *out);
/* "reduce" / "elemwise" / "broadcast" / "injective" / "out_ew_fusable" / "opaque" / "control" */
const char *lt_pattern_name(lt_pattern p);

/* Can node n (of the main graph, types inferred) be compiled? On false, writes the reason (for
 * the host group) into why. */
bool lt_lower_supported(const lt_node *n, char *why, size_t why_size);
/* On the GPU only (lower_gpu_gemm.c): a float16/bfloat16 MatMul, Gemm or 2-D Conv that would
 * compile in float32. False (why set when it says something) otherwise. */
bool lt_lower_gpu_supported(const lt_node *n, char *why, size_t why_size);

/* ---------------------------------------------------------------------------------------------
 * Lowering
 * ------------------------------------------------------------------------------------------- */

typedef struct lt_lower_options {
    int vector_lanes;      /* f32 SIMD lanes of the target (16 AVX-512, 8 AVX2, 4 SSE/NEON, 1
                            * portable); 0 means 16. Used by the default schedules. */
    bool no_microkernels;  /* MatMul/Gemm/Conv as plain Loop IR nests (no prelude GEMM/conv call) */
    bool no_packing;       /* microkernel calls read weights as they are (no lt_lpack) */
    bool scratch;          /* the caller binds scratch arguments (lt_lscratch); without them the GEMM
                            * and conv calls pack on their stack, on one thread */
    int threads;           /* threads the plan may use: sizes scratch (0 means 8) */
    bool gpu;              /* default schedules bind GPU blocks/threads instead of parallel/vector
                            * (lt_target.gpu_blocks) */
    bool wgmma;            /* with gpu: GEMMs may use the Hopper-only wgmma tile entries
                            * (lt_target.wgmma); false: entries that run on any target */
    bool shape_generic;    /* the model is compiled once for many shapes (compile/family.h): the
                            * default schedules pick what does not depend on a size's residue or
                            * exact value (vector main loops with a peeled tail, fixed GPU block
                            * sizes), and kernels are marked lt_kernel.shape_generic */
    const char *gpu_tile;  /* with gpu: the tensor-core GEMM tile every GEMM that can use one gets
                            * ("wg128x256", "128x128", ... of lower_gpu_gemm.c's table; wgmma ones
                            * only for sm_90a), for benchmarks that time each. NULL: the cost model's */
} lt_lower_options;

/* Scratch memory a kernel needs during its step only (GEMM packing buffers, im2col): the runtime
 * binds `size` elements of workspace to kernel argument `arg` (its lt_lowered.arg_values entry is
 * NULL); the content is undefined on entry and dead after the step. */
typedef struct lt_lscratch {
    int arg;
    lt_dtype dtype;
    int64_t size;          /* elements */
} lt_lscratch;

/* A weight the runtime packs once, at plan build, into its own persistent buffer: the runtime runs
 * `kernel` (args: packed output, then the source constant) and binds the packed buffer to kernel
 * argument `arg` of the group's kernel. The pack kernel is lowered Loop IR (usually an EVAL CALL of
 * a prelude packing routine) emitted into the same translation unit. */
typedef struct lt_lpack {
    int arg;               /* argument index in the group kernel */
    lt_value *src;         /* the constant it is packed from */
    lt_dtype dtype;
    int64_t size;          /* elements of the packed buffer */
    lt_kernel *kernel;     /* the packing kernel */
} lt_lpack;

typedef struct lt_lowered {
    const lt_group *group;
    lt_kernel *kernel;     /* named "lt_k<group id>"; body == body0 until a schedule is applied */
    lt_lnode *body0;       /* the unscheduled body: to try another schedule, reset kernel->body to
                            * body0 and apply it (nodes are immutable) */
    lt_schedule schedule;  /* the default schedule for the group's pattern (not yet applied) */
    int n_args;            /* == kernel->n_args */
    lt_value **arg_values; /* value bound to each kernel argument (packed args: their source;
                            * scratch args: NULL) */
    int n_packs;
    lt_lpack *packs;
    int n_scratch;
    lt_lscratch *scratch;
    int status_arg;        /* -1, or the kernel argument the runtime binds to the plan's check word
                            * (int64[LT_CHECK_WORDS], zero between runs): a kernel that checks
                            * indices the model computes (lt_lower_index_pos) records the first
                            * violation it meets there; the run then fails naming the node */
} lt_lowered;

/* The check word: [0] the failing node's index in the main graph + 1 (0: no violation), [1] the
 * element of its indices, [2] the index value, [3] the size of the axis it indexes. */
#define LT_CHECK_WORDS 4

/* Lower compiled group g (not host) of gs into a Loop IR kernel allocated in `arena`, with its
 * default schedule recorded (not applied). opt may be NULL. Errors name the group and node:
 * LT_ERR_UNSUPPORTED (an op/attribute the hook rejects at this point), LT_ERR_NOMEM,
 * LT_ERR_INTERNAL (a bug: the kernel failed lt_kernel_verify). */
lt_status lt_lower_group(lt_ctx *ctx, const lt_groups *gs, const lt_group *g, lt_arena *arena,
                         const lt_lower_options *opt, lt_lowered *out);

/* Apply lw->schedule to lw->kernel (from body0), verify it and compute the static cost. */
lt_status lt_lower_apply_schedule(lt_ctx *ctx, lt_lowered *lw);
/* The loop pass after scheduling: simplify lw->kernel's body (lt_lsimplify: constant folding, loops
 * of one iteration removed, guards proven true dropped), verify it, recompute the cost. */
lt_status lt_lower_simplify(lt_ctx *ctx, lt_lowered *lw);

/* The default schedule for a lowered kernel of group pattern g->pattern (sched_default.c):
 *   elementwise / broadcast / injective: fuse short inner loops, split the innermost by the vector
 *     lanes and vectorize it, parallelize the outermost when the nest is big enough;
 *   reductions, pooling: parallel over the kept (row) loops; vectorized partial accumulators
 *     ("lane" loops), store-only inner passes and pooling's unguarded interior;
 *   microkernel calls: parallel inside the call; their epilogue nest as elementwise.
 * Loops are found by the roles the lowering gave them (lt_loop_role, see lower_impl.h), never by
 * their names; the steps name the loops they act on. */
lt_status lt_sched_default(lt_ctx *ctx, const lt_group *g, const lt_kernel *k,
                           const lt_lower_options *opt, lt_schedule *out);

#endif
