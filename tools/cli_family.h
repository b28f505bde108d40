/* cli_family.h — private interface of the CLI's path for models compiled once for every input shape
 * (src/compile/family.h): --dim specs split into sizes and ranges (NAME=LO..HI), range checks that
 * name the file, input and dim, a model family built from the CLI's compile options with a plan per
 * set of input shapes (and which bucket / module each took) and its report (cli_family.c);
 * `lathe run`'s shared pieces (tools/cmd_run.c) and its --each runs (cli_family.c); the probe shapes
 * `lathe compile` reports on (cli_probes.c).
 */
#ifndef LATHE_CLI_FAMILY_H
#define LATHE_CLI_FAMILY_H

#include "cli_compile.h"
#include "compile/family.h"

/* --dim specs: NAME=N sizes (bound when loading) and NAME=LO..HI ranges (kept symbolic). */
typedef struct cli_dims {
    int n_fixed;
    const char **fixed;     /* the NAME=N specs as given */
    int n_ranges;
    lt_dim_range *ranges;   /* names are heap copies */
} cli_dims;

/* Split the specs; a malformed range is a usage error (printed; returns 1). */
int cli_dims_split(const char *cmd, int n, const char *const *specs, cli_dims *out);
void cli_dims_free(cli_dims *d);
/* Every range must name a dim some input of m (loaded, sizes bound) still keeps symbolic. Exit code. */
int cli_dims_check_ranges(const char *cmd, const cli_dims *d, const lt_model *m);
/* Does an input of m without an initializer keep a symbolic dim? An input of unknown rank, or one
 * that is not a tensor beside symbolic dims, cannot be compiled for every shape: an error. Exit code
 * (0 with *symbolic set). */
int cli_model_symbolic(const lt_model *m, bool *symbolic);
/* Input i's shape within the ranges: else an error (one line: "SRC: input 'x' dim 'seq' (axis 1) is
 * 5000, outside its range 1..4096"; no "SRC: " when src is NULL) and exit 2. */
int cli_ranges_check_shape(const cli_dims *d, const lt_value *v, int rank, const int64_t *dims, const char *src);
/* The range of symbolic dim `param` (NULL: none). */
const lt_dim_range *cli_dims_range(const cli_dims *d, const char *param);
/* The same for the data of every input (in: per graph input of m). */
int cli_ranges_check(const cli_dims *d, const lt_model *m, lt_datum *const *in, const char *src);

/* What one plan request did. */
typedef struct cli_family_step {
    bool cached;            /* the shape's plan was kept from an earlier run */
    bool new_bucket;        /* the shape made a bucket */
    bool module_built;      /* a module was built (a compiler run, or a load from the cache) */
    int bucket;             /* 1-based; 0 when not known (a plan with no module) */
    int module;             /* 1-based index of the module in the order first used; 0: none */
    double seconds;         /* the host pipeline (and the compiler, when it ran) */
} cli_family_step;

typedef struct cli_family {
    lt_family *f;
    const lt_model *model;  /* the caller's, sizes bound, symbolic dims kept (outlives the family) */
    const char *path;       /* the ONNX file, loaded again for every shape */
    int n_shapes;
    const char *const *shapes;
    const cli_dims *dims;
    int n_mods;             /* modules seen, in the order first used, with the bucket each came from */
    const void **mods;
    int *mod_bucket;
} cli_family;

/* A family of the model at `path` (m: it loaded with the same shapes and dims) compiled with ca's
 * options (no tuning database; its strings must outlive the family). Exit code. */
int cli_family_open(cli_compile_args *ca, const char *path, int n_shapes, const char *const *shapes,
                    const cli_dims *dims, const lt_model *m, cli_family *cf);
void cli_family_close(cli_family *cf);
/* The plan for these shapes (n: the model's inputs without an initializer, in graph order); valid
 * until the next call. Errors name src (a file, a probe) and are printed; exit code (2 for shapes
 * the model refuses). */
int cli_family_plan_shapes(cli_family *cf, const char *src, const int *ranks, const int64_t *const *dims,
                           lt_plan **plan, cli_family_step *st);
/* The same for data (in: per graph input); an input that has an initializer cannot be given. */
int cli_family_plan(cli_family *cf, const char *src, lt_datum *const *in, lt_plan **plan, cli_family_step *st);
/* "plan 0.021 s: bucket 1, its module reused (no compiler run)" and the like. */
void cli_family_step_describe(const cli_family_step *st, char *buf, size_t n);
/* The counts and lt_family_print's bucket report. */
void cli_family_print(const cli_family *cf, FILE *f);

/* ---- lathe run (tools/cmd_run.c), and its --each runs (cli_family.c) ---- */
typedef struct cli_run_args {
    const char *model, *output;
    const char **shapes, **dims, **inputs, **each; /* from argv; n_* of each */
    int n_shapes, n_dims, n_inputs, n_each;
    lt_fill_kind fill;
    int64_t seed, values, bench;
    bool verbose;
    cli_compile_args ca;
    cli_dims dd;                                   /* --dim: sizes and ranges */
} cli_run_args;

double cli_now_ms(void);
/* The ONNX file with the --shapes and --dim sizes bound; --dim ranges must name dims left symbolic. */
int cli_run_load_model(const cli_run_args *ra, lt_model **m);
/* One run: the plan's, or with no plan the interpreter's on m (outs receives new references). */
lt_status cli_run_once(lt_ctx *ctx, const char *backend, lt_model *m, lt_plan *plan, uint64_t seed, lt_datum **in,
                       lt_datum **outs, double *device_s);
/* What a run prints and writes: each output's summary, the time line (`how`: the backend and what
 * compiling took), --bench (m and plan as for cli_run_once), and the outputs into out_path (NULL:
 * none), atomically. Exit code. */
int cli_run_finish(const cli_run_args *ra, lt_model *m, lt_plan *plan, const lt_graph *g, lt_datum **in,
                   lt_datum **outs, double run_ms, const char *how, const char *out_path);
/* lathe run --each FILE.npz ...: one run per file in this process (the interpreter per file; one
 * plan when every dim is bound or MODEL is an artifact; else a family's plan per shape), the
 * outputs into --output DIR/STEM.npz, the family's report at the end. Exit code. */
int cli_run_each(cli_run_args *ra);

/* ---- lathe compile (tools/cli_probes.c) ---- */
/* `lathe compile` on a model that keeps symbolic dims: build it at every probe shape (--probe specs,
 * or the default set: each ranged dim at its low end, midpoint and high end, others at 1 and 8, every
 * combination) and print which shapes share which module. print_plan: each probe's plan too. */
int cli_family_report(cli_compile_args *ca, const char *path, int n_shapes, const char *const *shapes,
                      const cli_dims *dims, const lt_model *m, int n_probes, const char *const *probes,
                      bool print_plan);

#endif
