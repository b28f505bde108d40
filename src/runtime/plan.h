/* plan.h — the executable plan of a compiled model, its static memory plan, and the runtime.
 *
 * A plan (lt_plan) is what lt_compile (src/compile/compile.h) produces: the steps of the model in
 * order, each either
 *   KERNEL  a generated kernel (function pointer of the loaded module) and its argument pointer
 *           array, prepared once when the plan is built (kernel ABI of docs/COMPILER.md: outputs,
 *           then inputs, then weights; packed weights in place of their source constant), or
 *   HOST    one graph node run through its op's reference `eval` hook (src/interp): ops with no
 *           lowering, dynamic shapes, strings, sequences, control flow. Its inputs are wrapped as
 *           borrowed tensors over the plan's buffers; its outputs are copied into them.
 * and the buffers (slots) the steps read and write: one slot per graph value that exists at run time.
 *
 * Memory. Every intermediate value with a static shape and a fixed-size dtype lives at a static
 * offset of ONE workspace, allocated when the plan is built (lt_memplan: liveness over the step
 * order, best-fit offsets, in-place reuse for single-output elementwise kernels whose input dies at
 * that step; the output of a step that only reshapes is a view sharing its input's memory, its live
 * range joined to the input's). Weights (initializers) are used in place, never copied; packed weights get one
 * persistent buffer each, filled once at plan build by their pack kernel (kernels that pack the same
 * constant the same way share one: an unrolled recurrence's steps). Graph inputs and outputs are
 * the caller's memory: their addresses are patched into the argument arrays at each run. So running
 * compiled steps allocates nothing; host steps allocate what their eval hook allocates, and values
 * without a static shape (DYNAMIC slots) are held as reference-counted datums during the run.
 *
 * Device plans. When the backend's memory is not host memory (vtbl host_memory false: CUDA), the
 * same plan lives on the device, driven only through the backend's calls (plan_device.c): constants
 * a kernel reads are uploaded once at build (one allocation), pack kernels run on the device, the
 * workspace is device memory, kernel-used graph inputs and outputs get plan-owned device buffers
 * (one allocation) so every kernel argument is fixed at build. A run copies the inputs host->device
 * first and the outputs device->host last, with one sync at the end; a value crossing between a
 * kernel and a host step is copied (device->host before the host step that reads it, host->device
 * right after the host step that wrote it) through host staging allocated at build. Slot ptr is
 * then the device address; host steps use the host copy. Kernel steps between host steps form
 * segments, each captured once at build as a backend graph and replayed at each run (one graph for
 * a plan without host steps), unless no_graphs.
 *
 * Invariants: steps are in a topological order of the main graph; a slot is written by exactly one
 * step (or bound as an input / constant); two WORKSPACE slots whose live ranges [def, last] overlap
 * never overlap in memory unless one is the declared in-place successor of the other; the plan never
 * changes after lt_plan_build except the per-run addresses of INPUT / OUTPUT slots.
 * Ownership: a plan borrows its model (weights are referenced in place: the model must outlive the
 * plan) and owns its arena (groups, kernels, names), its backend instance and module, its workspace.
 * A plan is used by one thread at a time (it keeps per-run state); kernels run in parallel inside.
 *
 * Entry points: lt_plan_run (datums in and out, bound by graph input index like lt_interp_run),
 * lt_plan_run_buffers (caller-owned memory: no allocation), lt_plan_run_device (device plans: the
 * caller's device memory, no host staging), lt_plan_last_copies, lt_plan_input_index, lt_plan_print,
 * lt_plan_free; lt_memplan for the static memory planner (also used by tests on synthetic
 * lifetimes). Building a plan is lt_compile's job (compile.h); lt_plan_build is its last stage.
 */
#ifndef LT_PLAN_H
#define LT_PLAN_H

#include "../backend/backend.h"
#include "../lower/lower.h"

/* ---------------------------------------------------------------------------------------------
 * Static memory planning (memplan.c)
 * ------------------------------------------------------------------------------------------- */

#define LT_MEMPLAN_ALIGN 64 /* every buffer starts at a multiple of this (cache line, AVX-512) */

/* One buffer to place: it is written at step `def` and read last at step `last` (def <= last; a
 * buffer nobody reads has last == def). Two buffers conflict when [def, last] intervals intersect.
 * inplace_of >= 0 names an earlier buffer whose memory this one may take over: legal when
 * bufs[inplace_of].last == def (it dies at the step that writes this one) and it is at least as
 * large; the planner then gives both the same offset (chains a -> b -> c share one region). */
typedef struct lt_mp_buf {
    int64_t bytes;      /* >= 0 (0-byte buffers get offset 0 and take no space) */
    int def, last;      /* step indices */
    int inplace_of;     /* -1, or index of the buffer to reuse in place */
    int64_t offset;     /* out: offset in the workspace */
    bool inplace;       /* out: the in-place request was granted */
} lt_mp_buf;

typedef struct lt_mp_result {
    int64_t workspace_bytes; /* peak: max(offset + bytes), rounded up to LT_MEMPLAN_ALIGN */
    int64_t sum_bytes;       /* naive: the sum of all buffers (aligned), one allocation each */
    int64_t lower_bound;     /* max over steps of the bytes live at that step (no plan does better) */
    int n_inplace;           /* in-place requests granted */
} lt_mp_result;

/* Assign offsets to n buffers (greedy by size, each into the best-fitting gap among the buffers
 * whose live ranges conflict with it, else at the end). Errors: LT_ERR_INVALID naming the buffer for
 * negative sizes, def > last or a bad inplace_of; LT_ERR_NOMEM (size overflow or allocation). */
lt_status lt_memplan(lt_ctx *ctx, lt_mp_buf *bufs, int n, lt_mp_result *out);
/* Check a placement: no two conflicting buffers overlap (except granted in-place pairs), every
 * buffer is aligned and inside workspace_bytes. LT_ERR_INTERNAL naming the two buffers otherwise. */
lt_status lt_memplan_verify(lt_ctx *ctx, const lt_mp_buf *bufs, int n, int64_t workspace_bytes);

/* ---------------------------------------------------------------------------------------------
 * The plan
 * ------------------------------------------------------------------------------------------- */

typedef enum lt_slot_kind {
    LT_SLOT_WORKSPACE, /* intermediate with a static shape: at `offset` in the workspace */
    LT_SLOT_CONST,     /* initializer: its tensor's data, in place */
    LT_SLOT_PACKED,    /* packed weight: a persistent buffer filled at plan build */
    LT_SLOT_INPUT,     /* graph input: the caller's memory, bound at each run */
    LT_SLOT_OUTPUT,    /* graph output with a static shape: the caller's memory (or a new tensor) */
    LT_SLOT_DYNAMIC,   /* no static shape, or not a numeric tensor: a datum held during the run */
    LT_SLOT_CHECK      /* the check word (int64[LT_CHECK_WORDS], lower.h) of kernels that check the
                        * indices the model computes: a persistent buffer, zero between runs, read
                        * after each run (index_checks.c); value NULL */
} lt_slot_kind;

typedef struct lt_plan_slot {
    const lt_value *value;  /* the graph value (PACKED: its source constant) */
    lt_slot_kind kind;
    lt_dtype dtype;         /* static slots */
    int rank;
    int64_t dims[LT_MAX_RANK];
    int64_t numel, bytes;
    int64_t offset;         /* WORKSPACE */
    int io_index;           /* INPUT: index in graph->inputs; OUTPUT: first index in graph->outputs */
    void *ptr;              /* address now (CONST, PACKED, WORKSPACE, CHECK: fixed; INPUT, OUTPUT: per run) */
    int def_step, last_step;/* live range over the steps (-1 def: before the first step) */
    bool inplace;           /* shares the memory of the slot it was computed from (in-place) */
    int alias_of;           /* -1, or the slot whose memory this view shares (a Reshape-like step's
                             * output: same bytes, no copy); chains point at their root */
    bool scratch;           /* WORKSPACE of no graph value (value NULL): a kernel's scratch buffer
                             * (lt_lscratch), live during its step only */
} lt_plan_slot;

typedef enum lt_step_kind { LT_STEP_KERNEL, LT_STEP_HOST } lt_step_kind;

typedef struct lt_plan_step {
    lt_step_kind kind;
    const char *name;       /* kernel name ("lt_k3"), or the node's op_type for host steps */
    const char *origin;     /* graph nodes it runs: "'conv1' (Conv), 'relu1' (Relu)" */
    const lt_group *group;  /* its fusion group (host fallbacks: the group that failed to lower) */
    lt_pattern pattern;
    double flops, bytes;    /* static cost from the Loop IR (kernels; 0 for host steps) */
    /* KERNEL */
    const lt_kernel *kernel;/* its Loop IR (scheduled) */
    const lt_bkernel *bk;   /* loaded kernel */
    int n_args;             /* buffer arguments */
    int *arg_slots;         /* slot of each argument */
    void **args;            /* argument pointers (patched for INPUT / OUTPUT slots at each run), then
                             * n_scalars run-time scalars (the kernel's extents at this plan's shape,
                             * lt_kernel.scalar_bits): a launch passes n_args + n_scalars */
    int n_scalars;
    /* HOST */
    const lt_node *node;
    int n_in, n_out;
    int *in_slots;          /* slot per node input, -1 for an omitted optional input */
    int *out_slots;         /* slot per node output, -1 for an output nobody requested */
    const char *reason;     /* why it is a host step */
    bool *dev_in;           /* a device plan's DataDependentRest step: per input, read on the device
                             * (the rest's plan takes its device buffer; not downloaded); NULL: every
                             * input on the host */
    bool view;              /* KERNEL of Reshape/Flatten/Squeeze/Unsqueeze/Identity only: its output
                             * aliases its input's memory, nothing runs */
} lt_plan_step;

/* Per-run options (NULL: defaults). */
typedef struct lt_plan_run_options {
    uint64_t seed;          /* random ops in host steps */
    int64_t max_loop_bytes; /* host steps: most a Loop's scan outputs or one sequence may hold (0: default) */
    double *step_seconds;   /* if set: n_steps entries; each step's time is ADDED to its entry (wall
                             * time; device plans: kernel steps' device time from backend events,
                             * launched one by one instead of as graphs) */
    double *device_seconds; /* if set: the time of the steps, from the first to the last (device
                             * plans: measured with backend events, copies of the inputs and outputs
                             * excluded, host steps in between included; else wall time) */
    bool no_sync;           /* lt_plan_run_device of a plan without host steps: return with the run's
                             * work still queued on the backend's stream (kernels, device copies), no
                             * sync at the end: the caller syncs before reading the outputs from the
                             * host or changing the inputs' memory other than in stream order.
                             * Ignored by other runs and plans with host steps. */
} lt_plan_run_options;

typedef struct lt_plan lt_plan; /* opaque; read it through the accessors below */

/* Summary numbers of a plan (for reports). */
typedef struct lt_plan_stats {
    int n_steps, n_kernels, n_host;
    int n_nodes, n_nodes_compiled;  /* main-graph nodes, and those inside compiled kernels */
    int n_slots, n_workspace_slots, n_inplace;
    int n_views;                    /* steps turned into views (no copy, no launch) */
    int64_t workspace_bytes;        /* the one workspace (peak of the memory plan) */
    int64_t intermediates_bytes;    /* sum of all workspace intermediates (what allocating each costs) */
    int64_t lower_bound_bytes;      /* most bytes live at any one step */
    int64_t packed_bytes;           /* persistent packed weights */
    int64_t weight_bytes;           /* initializers referenced in place */
    int threads;
    /* device plans (backend memory is not host memory) */
    bool device;
    int n_graphs;                   /* kernel segments replayed as captured graphs */
    int n_segments;                 /* maximal runs of kernel steps between host steps */
    int n_transfers;                /* copies per run: inputs, outputs, host-step crossings */
    int64_t device_const_bytes;     /* constants uploaded once */
    int64_t io_bytes;               /* device buffers of graph inputs and outputs */
    int64_t staging_bytes;          /* host copies of values crossing to host steps */
} lt_plan_stats;

/* Build inputs: what lt_compile hands to lt_plan_build. The plan takes over `arena` (a heap
 * struct from lt_mem_alloc, lt_arena_init'ed: groups, kernels and names live in it), `backend` and
 * `module`, on success and on failure alike. */
/* The instantiated graphs that device plans of one bucket share for one segment
 * (lt_plan_device_share.graph_slot): up to `capacity` of them, each holding one plan's template. A run
 * whose template one holds replays it; otherwise an empty one is instantiated, or else the least
 * recently used is updated in place to it. So a few shapes in turn replay without updates (an
 * update costs about what the graph's launches do), and the graphs a bucket holds stay bounded
 * however many shapes it serves. */
enum { LT_GRAPH_SLOT_MAX = 8 };
typedef struct lt_plan_graph_slot {
    int capacity;                    /* 1..LT_GRAPH_SLOT_MAX (the owner sets it; 0 counts as 1) */
    void *exec[LT_GRAPH_SLOT_MAX];   /* the backend's holders (graph_replay); NULL until used; the
                                      * owner frees them with the backend's graph_free */
    uint64_t loaded[LT_GRAPH_SLOT_MAX]; /* the template each holds (a process-unique id; 0: none) */
    uint64_t used[LT_GRAPH_SLOT_MAX];   /* the slot's clock at each one's last run */
    uint64_t clock;
    int instantiated;                /* instantiations (a holder's first run, or an update refused) */
    int updated;                     /* updates in place to another plan's template */
} lt_plan_graph_slot;

/* What plans of one model share (src/compile/family.c), each hook optional (NULL: the plan's own),
 * user passed to each; a plan keeps a copy. All but pack_adopt are for device plans.
 *   graph_slot     plans of one bucket (the same kernels at other sizes) replay a few instantiated
 *                  graphs per segment instead of one each: called once per segment at build, it
 *                  gives the caller's slot for segment k (NULL: this plan instantiates its own),
 *                  which outlives the plan; the plan's segment is then a captured template that a
 *                  run loads into one of the slot's graphs;
 *   const_acquire  each constant a kernel reads in the caller's device buffer instead of the plan's
 *   const_release  own upload: acquire gets its name and host bytes and gives a buffer holding those
 *                  bytes (another plan's when they are the same); the plan gives it back with
 *                  release when freed. Both or neither;
 *   pack_adopt     each packed weight once its pack kernel has filled the plan's buffer *buf (backend
 *                  memory, host or device, of `bytes`): the caller keeps that buffer, or frees it and
 *                  sets *buf to one holding the same bytes (another plan's); either way the plan gives
 *                  it back with const_release when freed (needs const_release). name identifies what
 *                  was packed. */
typedef struct lt_plan_device_share {
    lt_plan_graph_slot *(*graph_slot)(void *user, int segment);
    lt_status (*const_acquire)(void *user, lt_ctx *ctx, const char *name, const void *host, int64_t bytes, void **dptr);
    void (*const_release)(void *user, void *dptr);
    lt_status (*pack_adopt)(void *user, lt_ctx *ctx, const char *name, int64_t bytes, void **buf);
    void *user;
} lt_plan_device_share;

typedef struct lt_plan_build_args {
    const lt_model *model;
    lt_arena *arena;              /* compilation lifetime */
    const lt_groups *groups;
    lt_lowered *lowered;          /* indexed by group id (groups->n entries), scheduled. kernel NULL:
                                   * a host group, or a group whose lowering failed: its nodes then
                                   * run as host steps, one each (host fallback) */
    lt_backend *backend;
    lt_bmodule *module;           /* NULL when there is no kernel */
    bool shared_module;           /* backend and module are the caller's (many plans, one module:
                                   * src/compile/family.c): the plan uses them and frees neither */
    int threads;
    bool no_inplace;              /* disable in-place reuse (debugging) */
    bool no_graphs;               /* device plans: launch kernels one by one, never as a captured
                                   * graph (profiling, debugging) */
    /* The workspace from the caller instead of an allocation of the plan's own (many plans of one
     * model, one run at a time: src/compile/family.c): called once with the bytes the memory plan
     * needs, it gives backend memory of at least that size that outlives the plan (the plan never
     * frees it). NULL: the plan allocates its own. */
    lt_status (*workspace)(void *user, lt_ctx *ctx, int64_t bytes, void **out);
    void *workspace_user;
    const lt_plan_device_share *device_share; /* device plans: what they share (NULL: nothing) */
    /* The graph inputs as the caller knew them before compiling (lt_compile may turn inputs that
     * have an initializer into constants, "frozen"): the order lt_plan_run's inputs[] follows.
     * NULL: the model's current graph inputs. */
    int n_api_inputs;
    const char *const *api_input_names;
    const bool *api_input_frozen;  /* per API input: made a constant at compile time */
} lt_plan_build_args;

lt_status lt_plan_build(lt_ctx *ctx, const lt_plan_build_args *a, lt_plan **out);
/* lt_plan_build in its two stages: the steps and slots (the plan takes over a's arena, backend and
 * module; *out is a plan that can be printed and freed, not run), then the static memory plan, the
 * workspace, packed weights and kernel arguments (on failure the caller frees p). */
lt_status lt_plan_build_steps(lt_ctx *ctx, const lt_plan_build_args *a, lt_plan **out);
lt_status lt_plan_build_memory(lt_ctx *ctx, lt_plan *p, bool no_inplace, int threads);
void lt_plan_free(lt_plan *p); /* NULL is fine */

/* Run. inputs[i] binds API input i: the model's graph input i as it was before compiling
 * (lt_plan_n_inputs / lt_plan_input_name). NULL keeps its initializer; an input without one must be
 * given; an input frozen to its initializer at compile time must be NULL. Its dtype and shape must be
 * the ones the plan was compiled for (LT_ERR_INVALID naming the input otherwise).
 * outputs[0..n_outputs) receive new references the caller releases; on failure none are written. */
lt_status lt_plan_run(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt, lt_datum *const *inputs,
                      lt_datum **outputs);
/* Run on caller-owned memory, with no allocation for compiled steps: inputs[i] points at the data of
 * API input i (NULL: its initializer), outputs[k] at room for graph output k (lt_plan_output_bytes).
 * LT_ERR_UNSUPPORTED when an output has no static shape. */
lt_status lt_plan_run_buffers(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt,
                              const void *const *inputs, void *const *outputs);

/* Run a device plan on device memory (the backend's memory: CUDA device pointers in the primary
 * context the backend retains): inputs[i] points at API input i's data on the device (NULL: its
 * initializer), outputs[k] at lt_plan_output_bytes(p, k) bytes of device memory for graph output k.
 * Inputs are copied device-to-device into the plan's fixed input buffers and outputs out of its
 * output buffers (kernel arguments and captured graphs never change), all queued on the backend's
 * stream; nothing passes through host memory except what host steps read or write (an input a host
 * step reads, or whose values a compiled Gather checks: downloaded into a host copy made on the first
 * device run and kept; an output a host step computes: uploaded from there). Ends with the run's one
 * sync: the outputs are written when it returns. The caller orders the run after the work that
 * wrote the inputs (api_compile.c waits for the caller's stream). LT_ERR_UNSUPPORTED for a plan on
 * host memory (use lt_plan_run_buffers), an output or input with no static shape (use lt_plan_run);
 * LT_ERR_USAGE for a NULL output of more than 0 bytes. */
lt_status lt_plan_run_device(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt, const void *const *inputs,
                             void *const *outputs);

/* The device buffer of API input i that a device plan's kernels read (NULL: none: a plan on host
 * memory, an input no kernel reads, a frozen one). Given to lt_plan_run_device as input i's memory it
 * is not copied: whoever writes there (before the run, in stream order) sets the input. */
void *lt_plan_device_input(const lt_plan *p, int i);

/* The copies the last run made between host and device memory (device plans; all zero for plans on
 * host memory), per lt_copy_dir: inputs, outputs, host-step crossings. The check word of kernels that
 * check computed indices (LT_CHECK_WORDS int64, read back each run) is not counted. */
typedef struct lt_plan_copies {
    int n[3];           /* copies, indexed by lt_copy_dir */
    int64_t bytes[3];
} lt_plan_copies;
void lt_plan_last_copies(const lt_plan *p, lt_plan_copies *out);

/* ---- accessors ---- */
const lt_model *lt_plan_model(const lt_plan *p);
void lt_plan_get_stats(const lt_plan *p, lt_plan_stats *out);
int lt_plan_n_steps(const lt_plan *p);
const lt_plan_step *lt_plan_get_step(const lt_plan *p, int i); /* NULL out of range */
int lt_plan_n_slots(const lt_plan *p);
const lt_plan_slot *lt_plan_get_slot(const lt_plan *p, int i);
/* API inputs (see lt_plan_run): count, names, index of a name (-1 if none). */
int lt_plan_n_inputs(const lt_plan *p);
const char *lt_plan_input_name(const lt_plan *p, int i);
int lt_plan_input_index(const lt_plan *p, const char *name);
/* Static byte size of graph output k, -1 if it has no static shape. */
int64_t lt_plan_output_bytes(const lt_plan *p, int k);
/* Slot of API input i / graph output k (-1 if none: a frozen or unused input). */
int lt_plan_input_slot(const lt_plan *p, int i);
int lt_plan_output_slot(const lt_plan *p, int k);
/* The rest of a model split at its data-dependent ops (src/compile/split.h): the plan's
 * DataDependentRest step calls run with the step's input datums and fills its outputs (new references,
 * host memory), adding the copies its own plan made to *copies; free runs with lt_plan_free. On a
 * device plan the inputs the node's "host_inputs" attribute does not list (everything but the counts)
 * stay on the device when a kernel wrote them: on_device[k] is then set and in[k] is a tensor whose
 * data is the address in dev's memory (never read on the host), current when run is called (the plan's
 * stream synced). on_device NULL: every input in host memory. Set once, after the plan is built. */
typedef struct lt_plan_copies lt_plan_copies;
typedef struct lt_plan_rest {
    void *user;
    lt_status (*run)(void *user, lt_ctx *ctx, const lt_plan_run_options *opt, lt_datum *const *in, const bool *on_device,
                     lt_backend *dev, int n_in, lt_datum **out, int n_out, lt_plan_copies *copies);
    void (*free)(void *user);
    void (*print)(void *user, lt_strbuf *out); /* what it compiled so far, for reports */
} lt_plan_rest;
void lt_plan_set_rest(lt_plan *p, const lt_plan_rest *rest);
/* The subgraphs its host steps run (a Loop's body, an If's branches) compiled at run time
 * (src/compile/split_body.c): the host steps' evaluator runs subgraphs through run, with
 * lt_eval.subgraph_user = user (run NULL: the interpreter runs them); a Loop step goes to run_loop
 * first (optional), which runs the whole Loop itself (*done true) or leaves it to the Loop's eval
 * hook; free runs with lt_plan_free. Set once, after the plan is built. */
typedef struct lt_plan_subgraphs {
    void *user;
    lt_subgraph_fn run;
    lt_status (*run_loop)(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out, bool *done);
    void (*free)(void *user);
    void (*print)(void *user, lt_strbuf *out); /* what it compiled so far, for reports */
} lt_plan_subgraphs;
void lt_plan_set_subgraphs(lt_plan *p, const lt_plan_subgraphs *sub);
/* Does a host step run a subgraph (a node with a graph attribute)? */
bool lt_plan_host_subgraphs(const lt_plan *p);
/* Append what the plan compiles at run time: its rest, its host steps' subgraphs (nothing, false,
 * when it has neither). */
bool lt_plan_rest_print(const lt_plan *p, lt_strbuf *out);

/* Number of host steps; the first one (for "export needs no host steps" messages), or NULL. */
const lt_plan_step *lt_plan_first_host(const lt_plan *p);
/* The backend and module (for the profiler's ceilings and for export). */
lt_backend *lt_plan_backend(const lt_plan *p);
lt_bmodule *lt_plan_module(const lt_plan *p);
/* Set the thread count of parallel loops (0: the backend's default). */
void lt_plan_set_threads(lt_plan *p, int threads);

/* Human-readable plan: one line per step (kind, name, origin, argument slots with offsets), then the
 * memory summary "workspace: PEAK bytes (intermediates: SUM bytes, N in place)". */
void lt_plan_print(const lt_plan *p, lt_strbuf *out);
/* "workspace 1.2 MiB (sum of intermediates 8.5 MiB, 2 in place)" into buf. */
const char *lt_plan_memory_summary(const lt_plan *p, char *buf, size_t n);

#endif
