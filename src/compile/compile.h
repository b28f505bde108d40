/* compile.h — the compile pipeline: an imported model (shapes bound) in, an executable plan out.
 *
 *   lt_compile(ctx, model, options, &plan, &report) runs a table of named stages (compile.c), each a
 *   function over one compile state, run by a small driver that times each (the report's
 *   stage_seconds), dumps what it produced (dump_after = its name), verifies it (verify_each: the
 *   graph after graph stages, every kernel after loop passes) and stops after it (stop_after_stage):
 *     inputs     graph inputs with initializers become constants (unless given)
 *     passes     graph passes at the -O level (src/passes: verify, dump, time, disable, stop-after N)
 *     split      the graph cut at its data-dependent ops, the rest compiled at run time for the sizes
 *                the data gives (src/compile/split.h)
 *     fuse       partition the main graph into kernel groups (src/lower: lt_fuse)
 *     lower      loop pass: each compiled group to a Loop IR kernel (lt_lower_group; GPU schedules
 *                when the target binds GPU blocks, as CUDA does); a group the lowering rejects
 *                (LT_ERR_UNSUPPORTED) falls back to host steps, one per node, and is counted in the
 *                report (options.strict makes it an error instead)
 *     tuned      loop pass: schedules from options.schedule_hook (tuning database, lathe tune)
 *     schedule   loop pass: the default schedule of each group's pattern (lt_lower_apply_schedule)
 *     simplify_loops  loop pass: each scheduled kernel simplified (lt_lower_simplify)
 *     emit       ONE translation unit holding every kernel and pack kernel (src/codegen)
 *     backend    compile + load it (CPU: cc -> .so -> dlopen; CUDA: NVRTC -> cubin -> driver;
 *                cached by content hash), or take a prebuilt module (options.prebuilt: artifacts)
 *     plan       steps and slots (src/runtime/plan.h: lt_plan_build_steps)
 *     memplan    static memory plan, workspace, packed weights, kernel arguments (lt_plan_build_memory)
 *   The target (src/backend/target.h) is built once before the stages, by the backend. The model is
 *   rewritten by the passes (answers unchanged) and must outlive the plan (weights are used in place).
 *
 * The library never reads the environment: the cache directory and compiler come from the options
 * (the CLI reads CC / XDG_CACHE_HOME / HOME). Errors name the stage and the thing at fault (pass,
 * group, node, kernel, generated file). On failure *out is untouched and the report holds what ran.
 * Entry points: lt_compile_options_init, lt_compile, lt_compile_report_print, lt_compile_report_free.
 * Related: src/runtime/export.h (standalone C export of a plan), src/onnx/onnx_writer.h (the
 * optimized graph as ONNX, for dump_graph).
 */
#ifndef LT_COMPILE_H
#define LT_COMPILE_H

#include "../lower/lower.h"
#include "../passes/pass.h"
#include "../runtime/plan.h"

#define LT_COMPILE_DEFAULT_LEVEL 3

/* A module built once, kept with the model it was built from, loaded later with no compiler: what a
 * .lathe artifact carries (src/compile/artifact.h). */
typedef struct lt_rest_cache lt_rest_cache; /* src/compile/split.h */

typedef struct lt_prebuilt {
    char source_sha256[65];     /* hex SHA-256 of the emitted translation unit ("" source: no kernels) */
    char image_sha256[65];      /* hex SHA-256 of image */
    uint8_t *image;             /* the backend's module (CPU: one whole shared object; CUDA: a cubin);
                                 * NULL when the model has no kernels */
    size_t image_size;
} lt_prebuilt;

typedef struct lt_compile_options {
    int opt_level;              /* 0..3 (lt_compile_options_init: LT_COMPILE_DEFAULT_LEVEL) */
    const char *backend;        /* "cpu", "cuda" (NULL = "cpu") */
    const char *cache_dir;      /* compiled-module cache (NULL: none, built in a temporary folder) */
    const char *cc;             /* C compiler command (NULL = "cc") */
    double cc_timeout_s;        /* seconds one C compiler run may take (0 = 300, < 0 = no limit) */
    const char *extra_cflags;   /* appended to the backend's flags */
    int threads;                /* threads of parallel loops (0: backend default) */
    int device;                 /* CUDA: device ordinal */
    const char *nvrtc;          /* CUDA: NVRTC library tried first (the CLI: --nvrtc or $LATHE_NVRTC) */
    const char *arch;           /* CUDA: the target kernels are lowered and built for ("sm_90a": the
                                 * wgmma GEMM entries too). NULL: the device's own (sm_90a on Hopper);
                                 * with emit_only and no device, entries that run on any target */
    bool no_graphs;             /* device backends: launch kernels one by one, no captured graph */
    bool no_split;              /* data-dependent ops and every node after them stay host steps (no
                                 * split stage: src/compile/split.h) */
    struct lt_rest_cache *rest_cache; /* a family's: split plans share their rest (split.h); NULL: none */
    const int64_t *symbolic_sizes; /* a family's compile: the sizes its symbolic dims have now */
    int n_symbolic_sizes;
    bool shape_generic;         /* compiled once for many shapes (set by compile/family.c): schedules
                                 * whose code does not change with a size (lt_lower_options) */
    /* The plan's workspace from the caller (lt_plan_build_args.workspace); NULL: its own. */
    lt_status (*workspace)(void *user, lt_ctx *ctx, int64_t bytes, void **out);
    void *workspace_user;
    /* Device plans: graphs and constants shared with the caller's other plans; NULL: none. */
    const lt_plan_device_share *device_share;
    /* Graph inputs that have an initializer (every weight of an IR < 4 model is one) are frozen:
     * they become constants, so what is computed from them folds and compiles, except those named
     * in given_inputs (NULL-terminated), which the caller will provide at run time.
     * keep_initializer_inputs keeps them all overridable instead. */
    const char *const *given_inputs;
    bool keep_initializer_inputs;
    /* pass manager options (level is taken from opt_level; dump output goes to the report's
     * pass_dump unless dump_cb is set) */
    bool verify_each;
    const char *dump_after;     /* NULL, "all", a pass name or a stage name (graph stages print the
                                 * graph, fuse the groups, loop stages every kernel's Loop IR, emit
                                 * the source, plan the plan); "all": every pass and stage */
    void (*dump_cb)(void *user, const char *pass, int round, const char *ir);
    void *dump_user;
    bool time_passes;           /* each pass's time in the report (every stage is always timed) */
    const char *disable;        /* comma-separated pass names */
    const char *enable;         /* comma-separated pass names run though off by default (layout_nchwc) */
    int stop_after;             /* > 0: run at most N graph passes (the compile goes on) */
    const char *stop_after_stage; /* a stage name (lt_compile_stage_name): stop after it; no plan
                                 * (*out = NULL), the report says what ran (stopped_after) */
    /* code generation */
    bool no_fusion;             /* every compilable node its own kernel */
    bool no_epilogues;
    bool all_host;              /* every node a host step (the interpreter through the plan) */
    bool no_microkernels;
    bool no_inplace;            /* memory plan without in-place reuse */
    bool strict;                /* a group the lowering rejects is an error, not a host fallback */
    int vector_lanes;           /* 0: detected from the CPU (16 AVX-512, 8 AVX2, 4 otherwise) */
    /* dumps */
    const char *dump_code_dir;  /* write model.c (model.cu for CUDA: the translation unit), kernels.txt (Loop IR per
                                 * kernel before/after scheduling), groups.txt, plan.txt here */
    const char *dump_graph;     /* write the optimized graph as ONNX to this path */
    bool emit_only;             /* stop after emitting (and dumping) the translation unit: no backend
                                 * instance, no plan (*out = NULL). Needs no device: CUDA source for
                                 * `lathe compile --target cuda` on a machine without a GPU */
    lt_strbuf *emit_source;     /* when set, the emitted translation unit is appended here (the
                                 * caller frees it): with emit_only, to build it elsewhere */
    /* Schedules other than the default: before each kernel's schedule is applied, schedule_hook
     * (when set) may replace lw->schedule (kernel unscheduled: lw->kernel->body == lw->body0;
     * threads: the plan's thread count) and says so in *replaced. src/tune provides two: a tuning
     * database lookup (lt_tune_lookup_hook: run, compile, profile) and a search that measures
     * (lt_tune_search_hook: lathe tune). A replaced schedule that fails to apply falls back to the
     * default; an error status from the hook fails the compile. */
    lt_status (*schedule_hook)(void *user, lt_ctx *ctx, lt_lowered *lw, int threads, bool *replaced);
    void *schedule_user;
    /* Passes a tuning database found faster for this model (lt_tune_model_passes: "layout_nchwc"
     * or ""), comma-separated: enabled like `enable`, except those named in `disable`; the report
     * lists the ones that ran as tuned. NULL: none. */
    const char *tuned_passes;
    /* Progress (NULL: none): called as each stage starts (done = total = 0), for each kernel the
     * schedule stage handles (done of total: a tuning search there takes seconds per kernel), and
     * once at the end, success or not, with stage -1. Stages are LT_STAGE_*; the backend stage runs
     * the C compiler on a cache miss (the long part of a cold compile). */
    void (*progress)(void *user, int stage, int done, int total);
    void *progress_user;
    /* Deploying without a compiler (src/compile/artifact.h); both ignore schedule_hook and
     * tuned_passes (an artifact's schedules come from the model and the options alone).
     * save_prebuilt: the backend builds one whole module with no cache folder (CPU: no shared
     * prelude library) and its bytes (heap: lt_mem_free image) and both hashes land here.
     * prebuilt: the backend stage takes prebuilt->image instead of running the C compiler or NVRTC,
     * when the emitted source's SHA-256 equals prebuilt->source_sha256; otherwise the compile fails
     * (LT_ERR_INVALID: built by another lathe version or options), never compiling instead. */
    lt_prebuilt *save_prebuilt;
    const lt_prebuilt *prebuilt;
    /* Many shapes, one module (src/compile/family.h). shared_backend: the instance to compile for
     * and run on, the caller's (the plan uses it and never destroys it). kernels_hook runs after the
     * simplify_loops stage and may rewrite kernels with run-time scalars (src/loop/kparams.h). At the
     * backend stage, module_lookup names a module already loaded on shared_backend that was built
     * from the very source emitted (by its hex SHA-256): then nothing is compiled; otherwise the
     * module built goes to the caller through module_built, who owns it from then on and frees it
     * after every plan using it. */
    lt_backend *shared_backend;
    lt_status (*kernels_hook)(void *user, lt_ctx *ctx, const lt_target *t, lt_lowered *lowered, int n_groups);
    lt_bmodule *(*module_lookup)(void *user, const char *source_sha256);
    void (*module_built)(void *user, lt_bmodule *m, const char *source_sha256);
    void *share_user;
} lt_compile_options;

void lt_compile_options_init(lt_compile_options *o);
/* The thread count a compile with options.threads = threads builds for (0: the online CPUs). */
int lt_compile_threads(int threads);

/* The stages, in the order the compile runs them (compile.c's stage table): inputs (freeze
 * initializer inputs), passes (graph passes), split (data-dependent ops), fuse, lower / tuned / schedule (loop passes over each
 * group's kernel: lowering with its default schedule recorded, tuned schedules from schedule_hook,
 * the default schedules; Loop IR simplification runs inside lowering and after each schedule is
 * applied), emit (the translation unit), backend (build and load the module), plan (steps, the
 * static memory plan, packed weights: lt_plan_build). */
enum {
    LT_STAGE_INPUTS, LT_STAGE_PASSES, LT_STAGE_SPLIT, LT_STAGE_FUSE, LT_STAGE_LOWER, LT_STAGE_TUNED, LT_STAGE_SCHEDULE,
    LT_STAGE_SIMPLIFY, LT_STAGE_EMIT, LT_STAGE_BACKEND, LT_STAGE_PLAN, LT_STAGE_MEMPLAN, LT_STAGE_COUNT
};
const char *lt_compile_stage_name(int stage); /* "inputs", "passes", "fuse", ... */
int lt_compile_stage_find(const char *name);  /* LT_STAGE_* of a stage name, -1 if none */

typedef struct lt_compile_report {
    double stage_seconds[LT_STAGE_COUNT]; /* per stage of the table (LT_STAGE_*) */
    const char *stopped_after;  /* the last stage run when the compile stopped before a plan
                                 * (stop_after_stage, emit_only); NULL when it built one */
    double total_seconds;
    lt_pass_report passes;      /* heap: freed by lt_compile_report_free */
    lt_strbuf pass_dump;        /* --dump-after output when no dump_cb (heap) */
    int nodes_before, nodes_after; /* main graph, before and after the passes */
    int n_frozen_inputs;        /* graph inputs with an initializer made constants */
    int n_groups, n_host_groups, n_kernels, n_pack_kernels;
    int n_fallback_groups;      /* compiled groups the lowering rejected, run as host steps */
    int n_split_frontier;       /* data-dependent ops the graph was split at (src/compile/split.h) */
    int n_split_padded;         /* of those, NonZeros compiled with a padded output */
    int n_rest_nodes;           /* nodes after them, compiled at run time for the sizes the data gives */
    char split_first[256];      /* the first of them */
    int n_unscheduled;          /* kernels whose default schedule failed to apply (left unscheduled) */
    int n_tuned;                /* kernels whose schedule came from schedule_hook (a tuned one) */
    int n_tuned_rejected;       /* tuned schedules that failed to apply (stale or foreign entry): default used */
    char tuned_rejected_first[512]; /* the first such message */
    char tuned_passes[128];     /* options.tuned_passes enabled by this compile ("" none) */
    char fallback_first[512];   /* the first such message */
    size_t source_bytes;        /* the generated translation unit */
    bool cache_hit;
    char cache_key[65];
    char source_path[1024];     /* the generated file on disk ("" when not kept) */
    lt_plan_stats plan;
} lt_compile_report;

lt_status lt_compile(lt_ctx *ctx, lt_model *m, const lt_compile_options *opt, lt_plan **out,
                     lt_compile_report *report /* may be NULL; zero it first */);
void lt_compile_report_free(lt_compile_report *r);
/* A few lines: per-stage times, groups/kernels/host steps, the fraction of nodes compiled, the
 * cache hit, the memory plan (workspace peak next to the sum of intermediates). */
void lt_compile_report_print(const lt_compile_report *r, lt_strbuf *out);
/* --time-passes: one line per stage of the table with its time, then the total. */
void lt_compile_report_print_stages(const lt_compile_report *r, lt_strbuf *out);

/* The CPU's f32 SIMD width in lanes (16 with AVX-512F, 8 with AVX2, 4 otherwise): the default of
 * vector_lanes. */
int lt_compile_host_lanes(void);

#endif
