/* pass.h — graph passes: the pass descriptor, the pipeline, the pass manager and its report.
 *
 * A pass is one file in src/passes/ exporting one descriptor (lt_pass): its name, the lowest -O
 * level that runs it, and run(ctx, model, options, &changed). A pass rewrites the model's graphs
 * (all of them: subgraphs included) through src/passes/mutate.h, keeps the interpreter's answers
 * unchanged, leaves the graph valid (lt_graph_verify) and sets *changed only when it changed
 * something. It reports errors on ctx (naming the node or value at fault); the manager prefixes
 * them with the pass name.
 *
 * The pipeline is one array in pipeline.c. Consecutive entries marked LT_PIPE_FIXPOINT form the
 * simplification group, run again and again until a whole round changes nothing (bounded by
 * max_rounds). After every pass that changed the graph the manager drops dead values
 * (lt_graph_compact) and re-runs shape inference (lt_graph_infer), so the next pass sees fresh types.
 *
 * Pipeline entries marked LT_PIPE_OFF (off by default: layout_nchwc) run only when named in the
 * options' enable list; they then run at their position in the pipeline.
 *
 * Manager options: level (0 runs nothing), target (the backend compiled for), no_microkernels,
 * verify_each, dump_after ("all" or a pass name: the graph is printed after that pass only when it
 * changed, into a callback or a string buffer — the library never prints), time_passes, disabled
 * and enabled pass names, stop_after N pass runs (bisecting).
 * Entry point: lt_passes_run(ctx, model, &opts, &report).
 */
#ifndef LT_PASS_H
#define LT_PASS_H

#include "../graph/graph.h"

#define LT_PASS_DEFAULT_FOLD_BYTES ((int64_t)64 << 20)
#define LT_PASS_DEFAULT_ROUNDS 8

typedef struct lt_pass_options {
    int level;                /* 0..3 (-O0..-O3); a pass runs when level >= its min_level */
    bool verify_each;         /* lt_graph_verify after every pass run; a failure names the pass */
    const char *dump_after;   /* NULL, "all", or a pass name: print the graph after it when it changed */
    /* Where dumps go: dump_cb if set, else appended to *dump (header line "; after PASS (round R)"). */
    void (*dump_cb)(void *user, const char *pass, int round, const char *ir);
    void *dump_user;
    lt_strbuf *dump;
    bool time_passes;         /* record each run's wall time in the report */
    const char *disable;      /* comma-separated pass names not to run ("cse,simplify"), or NULL */
    /* comma-separated pass names to run even when off by default (LT_PIPE_OFF) or above the -O level
     * (level >= 1 still needed; the pass's enabled hook still applies); naming one in both lists is
     * a usage error */
    const char *enable;
    int stop_after;           /* > 0: run at most this many passes, then stop (bisecting); 0: no limit */
    int max_rounds;           /* fixed-point rounds of the simplification group (0: LT_PASS_DEFAULT_ROUNDS) */
    int64_t fold_max_bytes;   /* constant folding: largest output folded (0: LT_PASS_DEFAULT_FOLD_BYTES) */
    /* Graph inputs that have an initializer (IR < 4 models list every weight as an input) are by
     * ONNX rules overridable defaults, so no pass treats them as constants. true: the freeze_inputs
     * pass makes them plain initializers (removed from the main graph's inputs: callers can no longer
     * bind them), which lets weights fold. */
    bool freeze_inputs;
    /* Capabilities of the target the model is compiled for, that passes ask about (the compile
     * copies them from its lt_target; zero: the host CPU's): the target has no kernels for the
     * blocked NCHWc layout, so layout_nchwc does not run. */
    bool no_nchwc_layout;
    /* Lowering without microkernel calls (--no-microkernels): passes whose ops lower only to
     * prelude calls (layout_nchwc) do not run, the model keeps its plain ops. */
    bool no_microkernels;
    /* The target's GEMM and convolution kernels take float16 / bfloat16 operands (CUDA); false
     * (CPUs): widen_gemm computes those ops in float32 between Casts. */
    bool narrow_float_gemm;
    /* The target has no 8-bit integer GEMM / convolution kernels (CUDA: lt_target.int8_gemm false):
     * expand_quant computes MatMulInteger and ConvInteger as exact float chunks. false (CPUs): they
     * stay integer ops, and a QDQ MatMul / Gemm / Conv becomes one. */
    bool no_int8_gemm;
} lt_pass_options;

typedef lt_status (*lt_pass_fn)(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed);

typedef struct lt_pass {
    const char *name;     /* lower_snake_case, unique */
    int min_level;        /* 1..3 */
    lt_pass_fn run;
    const char *summary;  /* one line, for help texts and docs */
    /* optional: false when the options turn the pass off (it is then not run nor recorded) */
    bool (*enabled)(const lt_pass_options *opt);
} lt_pass;

/* Pipeline entries (pipeline.c). */
enum { LT_PIPE_ONCE = 0, LT_PIPE_FIXPOINT = 1 };
enum { LT_PIPE_ON = 0, LT_PIPE_OFF = 1 };
typedef struct lt_pipeline_entry {
    const lt_pass *pass;
    int group;   /* LT_PIPE_ONCE or LT_PIPE_FIXPOINT */
    int state;   /* LT_PIPE_ON (0: runs at its level), or LT_PIPE_OFF: runs only when enabled by name (.enable) */
} lt_pipeline_entry;
int lt_pipeline_size(void);
const lt_pipeline_entry *lt_pipeline_get(int i); /* NULL out of range */
const lt_pass *lt_pass_find(const char *name);   /* NULL if no pass has that name */
bool lt_pass_off_by_default(const lt_pass *p);   /* its pipeline entry is LT_PIPE_OFF */
/* The pipeline's pass names, comma-separated, into buf (for "unknown pass" messages). */
void lt_pass_names(char *buf, size_t size);

/* One pass run. */
typedef struct lt_pass_record {
    const char *name;
    int round;          /* fixed-point round (1-based); 0 for a pass outside the group */
    bool changed;
    double seconds;     /* wall time (time_passes; else 0) */
    int nodes_before, nodes_after; /* nodes of the main graph */
} lt_pass_record;

typedef struct lt_pass_report {
    int n, cap;
    lt_pass_record *runs;  /* heap: lt_pass_report_free */
    int rounds;            /* fixed-point rounds run */
    bool converged;        /* the group reached a fixed point within max_rounds */
    bool stopped;          /* stop_after cut the pipeline short */
    double total_seconds;  /* time_passes: whole pipeline, verification and inference included */
    int nodes_before, nodes_after;
} lt_pass_report;

/* Would the manager run p under these options (level, disable and enable lists, off-by-default
 * entries, the pass's enabled hook)? */
bool lt_pass_is_enabled(const lt_pass_options *opt, const lt_pass *p);
/* May the blocked NCHWc layout pass rewrite convolutions for the target (opt NULL: the host CPU)? */
bool lt_pass_target_nchwc(const lt_pass_options *opt);
/* Check the option values (level range, dump_after / disable / enable name existing passes, no pass
 * both disabled and enabled): usage errors listing the known passes. */
lt_status lt_pass_options_check(lt_ctx *ctx, const lt_pass_options *opt);
/* Run the pipeline on m. report may be NULL; when given it is filled (zero it first) even when a
 * pass fails (the runs so far). On error the model may be partly rewritten but stays valid unless
 * the error came from verification. */
lt_status lt_passes_run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, lt_pass_report *report);
void lt_pass_report_free(lt_pass_report *r);
/* The report as a table (one line per run, then totals). */
void lt_pass_report_print(const lt_pass_report *r, lt_strbuf *out);

/* The passes (one file each). */
extern const lt_pass lt_pass_freeze_inputs, lt_pass_fold_constants, lt_pass_fold_shapes, lt_pass_dce, lt_pass_cse,
    lt_pass_simplify, lt_pass_fold_batchnorm, lt_pass_patterns, lt_pass_resize_gather, lt_pass_unroll_rnn;
extern const lt_pass lt_pass_convt_phases, lt_pass_instnorm_layernorm, lt_pass_groupnorm_layernorm,
    lt_pass_einsum_matmul;
extern const lt_pass lt_pass_expand_quant;  /* expand_quant.c */
extern const lt_pass lt_pass_widen_gemm;    /* widen_gemm.c */
extern const lt_pass lt_pass_inline_if;     /* inline_if.c */
extern const lt_pass lt_pass_unroll_loop;   /* unroll_loop.c */
extern const lt_pass lt_pass_layout_nchwc; /* layout_nchwc.c */
extern const lt_pass lt_pass_fold_scale;   /* fold_scale.c */
extern const lt_pass lt_pass_expand_contrib; /* expand_contrib.c (+ expand_contrib_attn.c) */

#endif
