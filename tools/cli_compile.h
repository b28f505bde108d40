/* cli_compile.h — private interface of the CLI's compiled path: shared compile options
 * (cli_compile.c), input binding (cli_inputs.c), and the subcommands that compile (compile,
 * profile, ceilings).
 */
#ifndef LATHE_CLI_COMPILE_H
#define LATHE_CLI_COMPILE_H

#include "cli.h"
#include "compile/artifact.h"
#include "compile/compile.h"
#include "io/io.h"
#include "tune/tune_cpu.h"

typedef struct cli_compile_args {
    lt_compile_options o;
    const char *backend;    /* "cpu", "interp", ... */
    bool backend_given;
    bool no_cache;
    char disable[4096];     /* --disable-pass names, comma-joined */
    char enable[4096];      /* --enable-pass names, comma-joined */
    char cache_dir[4096];   /* default: $LATHE_CACHE_DIR, $XDG_CACHE_HOME/lathe, ~/.cache/lathe */
    char tune_db[4096];     /* --tune-db FILE (default: tune.tsv in the cache directory, if it exists) */
    bool tune_db_given;
    bool no_tune_db;        /* --no-tune-db: default schedules only */
    lt_tune_cpu lookups;    /* the database's schedule hook during one cli_compile_model */
    bool stop_stages;       /* --stop-after takes a stage name too (lathe compile: no plan needed) */
} cli_compile_args;

/* Defaults (level, backend, CC and cache directory from the environment). */
void cli_compile_init(cli_compile_args *ca, const char *default_backend);
/* At argv[*i]: a compile option? 1 consumed (i advanced), 0 not one, -1 usage error (printed). */
int cli_compile_opt(const char *cmd, int argc, char **argv, int *i, cli_compile_args *ca);
/* 0 when ca->backend is a backend (or "interp" when allowed); else prints and returns exit 3. */
int cli_compile_check_backend(const cli_compile_args *ca, bool allow_interp);
/* The same, checked in a forked child, so this process never initializes the device (CUDA does not
 * survive fork: commands that fork workers use this). */
int cli_compile_check_backend_forked(const cli_compile_args *ca, bool allow_interp);
/* Compile m for inputs `in` (per graph input; non-NULL ones are given: an input with an initializer
 * that is not given is frozen to it). in may be NULL (nothing given). Pass dumps and --time-passes on stderr, fallback warnings). Exit code; on 0 *out and
 * *rep are set (free rep with lt_compile_report_free). */
int cli_compile_model(cli_compile_args *ca, lt_model *m, lt_datum *const *in, lt_plan **out, lt_compile_report *rep);
void cli_compile_print_report(const lt_compile_report *rep, FILE *f);
/* lt_compile_options.dump_cb for --dump-after: "; after PASS" and the dump on stderr. */
void cli_compile_dump_cb(void *user, const char *pass, int round, const char *ir);

/* MODEL is a .lathe artifact (src/compile/artifact.h): verify it, check this machine, load its model
 * (shapes as saved) into *m and put its recorded options and module into ca (no tuning database;
 * --backend interp stays, any other backend is the artifact's). *art must outlive *m and the plan
 * (lt_artifact_free). Exit code. */
int cli_load_artifact(const char *path, cli_compile_args *ca, lt_artifact **art, lt_model **m);

/* The tuning database a compile reads: --tune-db FILE, else tune.tsv in the cache directory
 * (written there by `lathe tune`); "" when --no-tune-db or there is no cache directory. */
void cli_tune_db_path(const cli_compile_args *ca, char *buf, size_t n);

/* The help lines of the shared compile options. */
#define CLI_COMPILE_HELP                                                                               \
    "  -O0 .. -O3            optimization level (default -O3): -O0 no passes and no fusion, -O1 folding\n" \
    "                        and DCE, -O2 + simplification, CSE, BatchNorm folding, -O3 + patterns\n"       \
    "  --verify-each         verify the graph after every pass\n"                                          \
    "  --dump-after PASS|STAGE|all  print the graph after PASS when it changed, or what STAGE produced\n"  \
    "                        (graph, groups, every kernel's Loop IR, source, plan), or after every one,\n" \
    "                        on stderr\n"                                                                   \
    "  --time-passes         print each pass's and each compile stage's time on stderr\n"                  \
    "  --disable-pass NAME   do not run pass NAME (repeatable)\n"                                          \
    "  --enable-pass NAME    run pass NAME though it is off by default, e.g. layout_nchwc (repeatable)\n"   \
    "  --stop-after N        run at most N passes (bisecting); lathe compile also takes a stage name:\n"    \
    "                        inputs, passes, fuse, lower, tuned, schedule, simplify_loops, emit,\n"       \
    "                        backend, plan or memplan (stop after it: a report and --dump-code files;\n"  \
    "                        no plan before memplan)\n"                                                    \
    "  --dump-code DIR       write the generated C (model.c), Loop IR (kernels.txt), groups and plan\n"    \
    "  --dump-graph OUT.onnx write the optimized graph as ONNX (Netron opens it)\n"                        \
    "  --threads N           threads of parallel loops (default: all CPUs)\n"                              \
    "  --cache-dir DIR       compiled-module cache (default $LATHE_CACHE_DIR, $XDG_CACHE_HOME/lathe or\n"  \
    "                        ~/.cache/lathe; created 0700, refused when another user owns it or group or\n" \
    "                        others can write it); --no-cache builds in a temporary folder\n"              \
    "  --cc CMD              C compiler (default $CC, else cc)\n"                                          \
    "  --cc-timeout SECONDS  stop a C compiler run (its whole process group) that takes longer\n"          \
    "                        (default 300; 0 = no limit)\n"                                                \
    "  --tune-db FILE        CPU: take kernels' schedules from this tuning database (lathe tune writes it;\n" \
    "                        default: tune.tsv in the cache directory when it exists); --no-tune-db: the\n" \
    "                        default schedules\n"                                                           \
    "  --device N            CUDA device ordinal (default 0)\n"                                            \
    "  --nvrtc PATH          NVRTC library tried before libnvrtc.so.13 / .12 (default $LATHE_NVRTC)\n"     \
    "  --no-graphs           CUDA: launch kernels one by one instead of replaying a captured CUDA graph\n" \
    "  --no-split            keep data-dependent ops (NonZero, NonMaxSuppression, ...) and every node\n"  \
    "                        after them as host steps, instead of compiling the rest for the sizes\n"    \
    "                        the data gives; host steps' subgraphs (Loop bodies) stay interpreted\n"     \
    "  --no-fusion, --no-epilogues, --no-microkernels, --no-inplace, --all-host, --strict\n"               \
    "                        debugging: one kernel per node, no epilogue fusion, plain loops for\n"        \
    "                        GEMM/conv, no in-place buffers, every node on the interpreter, compiler\n"    \
    "                        errors fail instead of falling back to the interpreter\n"

/* cli_inputs.c: bind --input specs and fill the rest (in[] per graph input; exit code). */
int cli_inputs_bind(const char *cmd, lt_model *m, int n_specs, const char *const *specs, lt_fill_kind fill,
                    uint64_t seed, lt_datum **in);
/* Fix the declared shape of every tensor input to its data's (for compiling). Exit code. */
int cli_inputs_fix_shapes(lt_model *m, lt_datum *const *in);

int cmd_compile(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_ceilings(int argc, char **argv);

#endif
