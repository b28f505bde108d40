/* cmd_run.c — `lathe run MODEL`: bind inputs from .npy / .npz / .pb files (or fill them), compile the
 * model for the CPU (the default backend; `--backend cuda` for the GPU, `--backend interp` runs the
 * reference interpreter), run it,
 * print a summary per output and optionally write every output to an .npz. Inputs must match the
 * declared dtype and shape (symbolic dims bind to the data and must agree across inputs); the model
 * is compiled for the shapes of the data. The output file is written atomically, so a failed run
 * leaves none behind. --bench N prints the median of N runs after a warm-up run (on a device backend
 * also the median device time of the steps, from backend events: the replayed CUDA graph without
 * the input and output copies, next to the wall time that includes them). Output names and string
 * values are printed escaped (cli_esc). --dim NAME=LO..HI keeps a dim symbolic within a range (data
 * outside it is refused, naming the input and dim). --each FILE.npz (repeatable) runs the model once
 * per file in this process (tools/cli_family.c): a model that keeps symbolic dims is compiled once
 * for every shape (src/compile/family.h), so a compiler runs only for a shape that needs a new bucket;
 * with --output DIR each run's outputs go to DIR/STEM.npz. The options, the result printing, --bench
 * and the output file are shared with the --each runs (cli_family.h).
 * Exit codes: 0 ok, 1 usage, 2 bad model or input, 3 unsupported op or backend.
 */
#include "cli_family.h"

#include <math.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/infer.h"
#include "interp/interp.h"
#include "onnx/onnx.h"

static const char HELP[] =
    "usage: lathe run MODEL [options]\n"
    "\n"
    "Compile an ONNX model for the CPU or a CUDA GPU (or run it on the reference interpreter), run it\n"
    "and print a summary of every output. MODEL may be a .lathe artifact (lathe compile --save): it\n"
    "runs with the options and the module it was saved with, and no C compiler.\n"
    "\n"
    "With --each FILE.npz (repeatable) the model runs once per file in one process. A model whose\n"
    "symbolic dims are not all bound by --dim/--shapes is then compiled once for every shape: each new\n"
    "shape runs the host pipeline (milliseconds) and shapes of one bucket share one built module, so\n"
    "the C compiler (NVRTC with --backend cuda) runs only for a shape that needs a new bucket; the\n"
    "bucket report (shapes, buckets, modules built and reused) ends the output. Such a model uses the\n"
    "default schedules (no tuning database). An artifact runs the files of the shapes it was saved at.\n"
    "\n"
    "options:\n"
    "  --input NAME=FILE     data for input NAME from FILE: .npy (format 1-3), .npz (the member named\n"
    "                        NAME, or its only member) or .pb (ONNX TensorProto) (repeatable)\n"
    "  --input FILE.npz      bind every array of the .npz to the input of the same name\n"
    "  --input FILE          a single-input model's data\n"
    "  --shapes NAME:DIMS[,NAME:DIMS]  fix input shapes, e.g. --shapes data:1x3x224x224 (repeatable)\n"
    "  --dim NAME=N          bind a symbolic dim everywhere, e.g. --dim batch=1 (repeatable)\n"
    "  --dim NAME=LO..HI     keep dim NAME symbolic within LO..HI, e.g. --dim sequence=1..4096: data\n"
    "                        outside it is refused\n"
    "  --each FILE.npz       run once per file (repeatable): its arrays give the inputs of their names,\n"
    "                        others get --fill data (their dims from --shapes/--dim or the file's)\n"
    "  --fill KIND           data for inputs not given: random (default: uniform [0,1) floats, ints in\n"
    "                        [0,10), random bools), zeros, ones, or ramp (arange(n)/n for floats)\n"
    "  --seed N              seed for --fill random and random ops (default 0)\n"
    "  --output FILE.npz     write all outputs to an .npz (numpy.load reads it); with --each a folder\n"
    "                        (created if missing) that gets one STEM.npz per run, named after its file\n"
    "  --values N            how many leading values to print per output (default 8)\n"
    "  --backend NAME        cpu (default: compiled), cuda (compiled for the GPU; nodes with no GPU\n"
    "                        lowering run on the host) or interp (the reference interpreter)\n"
    "  --bench N             time N runs after a warm-up run and print the median (and min, max);\n"
    "                        cuda: also the median device time of the replayed plan (CUDA events);\n"
    "                        with --each, for every file\n"
    "  --verbose             print the compile report: stage times, kernels, host steps, memory plan\n"
    "                        (with --each on symbolic dims: the bucket report after each new shape)\n"
    CLI_COMPILE_HELP
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 ok, 1 usage error, 2 bad model or input data, 3 unsupported op or backend.\n";

/* ---- printing a summary ---- */
static void print_value(const lt_tensor *t, int64_t i) {
    lt_dclass c = lt_dtype_get(t->dtype)->cls;
    if (c == LT_DC_STRING) printf("\"%s\"", cli_esc(((char *const *)t->data)[i]));
    else if (c == LT_DC_BOOL) printf("%s", lt_load_i64(t->data, t->dtype, i) ? "true" : "false");
    else if (c == LT_DC_UINT) printf("%llu", (unsigned long long)lt_load_u64(t->data, t->dtype, i));
    else if (c == LT_DC_SINT) printf("%lld", (long long)lt_load_i64(t->data, t->dtype, i));
    else if (c == LT_DC_COMPLEX) {
        double re = t->dtype == LT_COMPLEX64 ? ((const float *)t->data)[2 * i] : ((const double *)t->data)[2 * i];
        double im = t->dtype == LT_COMPLEX64 ? ((const float *)t->data)[2 * i + 1] : ((const double *)t->data)[2 * i + 1];
        printf("(%.6g%+.6gj)", re, im);
    } else printf("%.6g", lt_load_f64(t->data, t->dtype, i));
}

static void print_tensor(const lt_tensor *t, int indent, const char *label, int values) {
    char d[256];
    printf("%*s%s: %s", indent, "", label, lt_tensor_describe(t, d, sizeof d));
    lt_dclass c = lt_dtype_get(t->dtype)->cls;
    if (t->numel > 0 && (c == LT_DC_FLOAT || c == LT_DC_SINT || c == LT_DC_UINT)) {
        double mn = INFINITY, mx = -INFINITY, sum = 0;
        int64_t nan = 0, finite = 0;
        for (int64_t i = 0; i < t->numel; i++) {
            double v = lt_load_f64(t->data, t->dtype, i);
            if (isnan(v)) { nan++; continue; }
            if (v < mn) mn = v;
            if (v > mx) mx = v;
            if (isfinite(v)) { sum += v; finite++; }
        }
        if (nan < t->numel) {
            if (c == LT_DC_FLOAT) printf("  min %.6g  max %.6g  mean %.6g", mn, mx, finite ? sum / (double)finite : NAN);
            else printf("  min %.0f  max %.0f", mn, mx);
        }
        if (nan) printf("  nan %lld", (long long)nan);
    }
    printf("\n%*s  [", indent, "");
    int64_t shown = t->numel < values ? t->numel : values;
    for (int64_t i = 0; i < shown; i++) {
        if (i) printf(", ");
        print_value(t, i);
    }
    printf("%s]\n", t->numel > shown ? ", ..." : "");
}

static void print_datum(const lt_datum *d, int indent, const char *label, int values) {
    if (!d) { printf("%*s%s: (none)\n", indent, "", label); return; }
    char sub[512];
    switch (d->kind) {
    case LT_DK_TENSOR: print_tensor(d->tensor, indent, label, values); break;
    case LT_DK_SEQUENCE:
        printf("%*s%s: sequence of %d\n", indent, "", label, d->n);
        for (int i = 0; i < d->n; i++) {
            snprintf(sub, sizeof sub, "[%d]", i);
            print_datum(d->items[i], indent + 2, sub, values);
        }
        break;
    case LT_DK_OPTIONAL:
        if (!d->value) printf("%*s%s: optional (empty)\n", indent, "", label);
        else {
            snprintf(sub, sizeof sub, "%s (optional)", label);
            print_datum(d->value, indent, sub, values);
        }
        break;
    case LT_DK_MAP:
        printf("%*s%s: map\n", indent, "", label);
        if (d->keys) print_tensor(d->keys, indent + 2, "keys", values);
        if (d->values) print_tensor(d->values, indent + 2, "values", values);
        break;
    }
}

/* ---- collecting outputs for the .npz ---- */
typedef struct npz_list {
    int n, cap;
    char **names;
    const lt_tensor **ts;
} npz_list;

static bool npz_add(npz_list *l, const char *name, const lt_tensor *t) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        char **nn = realloc(l->names, (size_t)cap * sizeof *nn);
        if (!nn) return false;
        l->names = nn;
        const lt_tensor **nt = realloc(l->ts, (size_t)cap * sizeof *nt);
        if (!nt) return false;
        l->ts = nt;
        l->cap = cap;
    }
    l->names[l->n] = strdup(name);
    if (!l->names[l->n]) return false;
    l->ts[l->n++] = t;
    return true;
}

/* Tensors of d under `name`: sequences as name_0, name_1, ...; optionals as their value. */
static bool npz_collect(npz_list *l, const char *name, const lt_datum *d, bool *skipped) {
    if (!d) return true;
    char sub[1024];
    switch (d->kind) {
    case LT_DK_TENSOR: return npz_add(l, name, d->tensor);
    case LT_DK_SEQUENCE:
        for (int i = 0; i < d->n; i++) {
            snprintf(sub, sizeof sub, "%s_%d", name, i);
            if (!npz_collect(l, sub, d->items[i], skipped)) return false;
        }
        return true;
    case LT_DK_OPTIONAL:
        if (!d->value) *skipped = true;
        return npz_collect(l, name, d->value, skipped);
    case LT_DK_MAP:
        snprintf(sub, sizeof sub, "%s_keys", name);
        if (d->keys && !npz_add(l, sub, d->keys)) return false;
        snprintf(sub, sizeof sub, "%s_values", name);
        return !d->values || npz_add(l, sub, d->values);
    }
    return true;
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The bench's memory line: the process's peak resident set (everything: the model, the compile, the
 * runs) and what the plan holds, on the host and, for a device plan, on the device. */
static void print_memory(const lt_plan_stats *ps) {
    struct rusage ru;
    double peak = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : -1; /* KiB on Linux */
    const double MiB = 1024.0 * 1024.0;
    printf("memory: host peak %.1f MiB (the process's high-water resident set: model, compile, runs)", peak);
    if (ps && ps->device)
        printf("; device %.1f MiB held by the plan (constants %.1f, inputs and outputs %.1f, workspace %.1f, packed "
               "%.1f); host staging %.1f MiB\n",
               (double)(ps->device_const_bytes + ps->io_bytes + ps->workspace_bytes + ps->packed_bytes) / MiB,
               (double)ps->device_const_bytes / MiB, (double)ps->io_bytes / MiB, (double)ps->workspace_bytes / MiB,
               (double)ps->packed_bytes / MiB, (double)ps->staging_bytes / MiB);
    else if (ps)
        printf("; the plan holds %.1f MiB (workspace %.1f, packed weights %.1f) beside %.1f MiB of weights used in "
               "place\n", (double)(ps->workspace_bytes + ps->packed_bytes) / MiB, (double)ps->workspace_bytes / MiB,
               (double)ps->packed_bytes / MiB, (double)ps->weight_bytes / MiB);
    else
        printf("\n");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One run on the chosen backend (outs receives new references). */
lt_status cli_run_once(lt_ctx *ctx, const char *backend, lt_model *m, lt_plan *plan, uint64_t seed,
                          lt_datum **in, lt_datum **outs, double *device_s) {
    if (plan) {
        lt_plan_run_options po = {.seed = seed, .device_seconds = device_s, .max_loop_bytes = cli_max_loop_bytes()};
        return lt_plan_run(ctx, plan, &po, in, outs);
    }
    (void)backend;
    lt_interp_options opt = {.seed = seed, .max_loop_bytes = cli_max_loop_bytes()};
    return lt_interp_run(ctx, m, &opt, in, outs);
}

/* ---- options ---- */

/* A value option at argv[*i] (index into opts, -1: none; -2: usage error printed). */
static int value_option(int argc, char **argv, int *i, const char **v) {
    static const char *const opts[] = {"--input", "--shapes", "--dim", "--output", "--fill", "--seed", "--values",
                                       "--bench", "--each"};
    for (int k = 0; k < (int)(sizeof opts / sizeof *opts); k++) {
        int r = cli_opt_value("run", argc, argv, i, opts[k], v);
        if (r) return r < 0 ? -2 : k;
    }
    return -1;
}

/* Parse argv into ra: 0, -1 when --help was printed, else the exit code. */
static int parse_args(int argc, char **argv, cli_run_args *ra) {
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(HELP, stdout); return -1; }
        if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) { ra->verbose = true; i++; continue; }
        int r = cli_compile_opt("run", argc, argv, &i, &ra->ca);
        if (r < 0) return CLI_EXIT_USAGE;
        if (r > 0) continue;
        switch (value_option(argc, argv, &i, &v)) {
        case -2: return CLI_EXIT_USAGE;
        case 0: ra->inputs[ra->n_inputs++] = v; break;
        case 1: ra->shapes[ra->n_shapes++] = v; break;
        case 2: ra->dims[ra->n_dims++] = v; break;
        case 3: ra->output = v; break;
        case 4:
            if (!lt_fill_parse(v, &ra->fill))
                return cli_usage("run", "--fill must be random, zeros, ones or ramp, not '%s'", v);
            break;
        case 5:
            if (!cli_parse_i64(v, &ra->seed))
                return cli_usage("run", "--seed needs a non-negative integer, got '%s'", v);
            break;
        case 6:
            if (!cli_parse_i64(v, &ra->values) || ra->values > 1000000)
                return cli_usage("run", "--values needs a count, got '%s'", v);
            break;
        case 7:
            if (!cli_parse_i64(v, &ra->bench) || ra->bench < 1 || ra->bench > 1000000)
                return cli_usage("run", "--bench needs a number of runs, got '%s'", v);
            break;
        case 8: ra->each[ra->n_each++] = v; break;
        default:
            if (a[0] == '-' && a[1]) return cli_usage("run", "unknown option '%s'", a);
            if (ra->model) return cli_usage("run", "only one MODEL may be given ('%s' and '%s')", ra->model, a);
            ra->model = a;
            i++;
            break;
        }
    }
    if (!ra->model) return cli_usage("run", "missing MODEL");
    return cli_dims_split("run", ra->n_dims, ra->dims, &ra->dd);
}

/* ---- one run's report ---- */

/* --bench: N more runs, the median (and on a device the device time), the memory line. Exit code. */
static int bench_runs(const cli_run_args *ra, lt_model *m, lt_plan *plan, const lt_graph *g, lt_datum **in) {
    int64_t bench = ra->bench;
    const cli_compile_args *ca = &ra->ca;
    lt_ctx ctx = {0};
    lt_plan_stats ps = {0};
    if (plan) lt_plan_get_stats(plan, &ps);
    double *times = calloc((size_t)bench * 2, sizeof *times);
    double *dev = times ? times + bench : NULL;
    lt_datum **tmp = calloc((size_t)g->n_outputs + 1, sizeof *tmp);
    int rc = 0;
    if (!times || !tmp) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto done; }
    for (int64_t r = 0; r < bench; r++) {
        double b0 = cli_now_ms(), ds = 0;
        lt_status st = cli_run_once(&ctx, ca->backend, m, plan, (uint64_t)ra->seed, in, tmp, ps.device ? &ds : NULL);
        times[r] = cli_now_ms() - b0;
        dev[r] = ds * 1e3;
        for (int k = 0; k < g->n_outputs; k++) { lt_datum_release(tmp[k]); tmp[k] = NULL; }
        if (st != LT_OK) { rc = cli_fail(&ctx); goto done; }
    }
    qsort(times, (size_t)bench, sizeof *times, cmp_double);
    qsort(dev, (size_t)bench, sizeof *dev, cmp_double);
    double med = bench % 2 ? times[bench / 2] : 0.5 * (times[bench / 2 - 1] + times[bench / 2]);
    double dmed = bench % 2 ? dev[bench / 2] : 0.5 * (dev[bench / 2 - 1] + dev[bench / 2]);
    char thr[32];
    if (ps.device) snprintf(thr, sizeof thr, "%d graph%s, %d host step%s", ps.n_graphs, ps.n_graphs == 1 ? "" : "s",
                            ps.n_host, ps.n_host == 1 ? "" : "s");
    else if (!plan) snprintf(thr, sizeof thr, "1 thread");
    else if (ca->o.threads > 0) snprintf(thr, sizeof thr, "%d thread%s", ca->o.threads, ca->o.threads == 1 ? "" : "s");
    else snprintf(thr, sizeof thr, "default threads");
    printf("bench: median %.3f ms over %lld runs (min %.3f, max %.3f; %s, %s)\n", med, (long long)bench,
           times[0], times[bench - 1], ca->backend, thr);
    if (ps.device)
        printf("bench: device median %.3f ms (min %.3f, max %.3f; CUDA events around the steps, input and output "
               "copies excluded; the wall time above includes them)\n", dmed, dev[0], dev[bench - 1]);
    print_memory(plan ? &ps : NULL);
done:
    free(tmp);
    free(times);
    return rc;
}

/* Every output into one .npz at path (written atomically). Exit code. */
static int write_outputs(const char *path, const lt_graph *g, lt_datum **outs) {
    npz_list nl = {0};
    lt_ctx ctx = {0};
    bool skipped = false, widened = false;
    int rc = 0;
    for (int k = 0; k < g->n_outputs && !rc; k++)
        if (!npz_collect(&nl, g->outputs[k]->name, outs[k], &skipped)) {
            cli_error("out of memory");
            rc = CLI_EXIT_INVALID;
        }
    if (!rc && lt_npz_write_file(&ctx, path, nl.n, (const char *const *)nl.names, nl.ts, &widened) != LT_OK)
        rc = cli_fail(&ctx);
    if (!rc && skipped) cli_warn("empty optional outputs were not written to %s", path);
    if (!rc && widened) cli_warn("outputs of types numpy lacks were widened (to float32 / int8 / uint8) in %s", path);
    for (int i = 0; i < nl.n; i++) free(nl.names[i]);
    free(nl.names);
    free(nl.ts);
    return rc;
}

/* What a run prints and writes: each output's summary, the time line (`how`: the backend and what
 * compiling took), --bench, and the outputs into out_path (NULL: none). Exit code. */
int cli_run_finish(const cli_run_args *ra, lt_model *m, lt_plan *plan, const lt_graph *g, lt_datum **in,
                      lt_datum **outs, double run_ms, const char *how, const char *out_path) {
    for (int k = 0; k < g->n_outputs; k++) {
        char label[1024];
        snprintf(label, sizeof label, "output %d '%s'", k, cli_esc(g->outputs[k]->name));
        print_datum(outs[k], 0, label, (int)ra->values);
    }
    printf("time: %.3f ms (%s)\n", run_ms, how);
    int rc = ra->bench > 0 ? bench_runs(ra, m, plan, g, in) : 0;
    return !rc && out_path ? write_outputs(out_path, g, outs) : rc;
}

/* The ONNX file with the --shapes and --dim sizes bound; --dim ranges must name dims left symbolic. */
int cli_run_load_model(const cli_run_args *ra, lt_model **m) {
    int rc = cli_load_model(ra->model, ra->n_shapes, ra->shapes, ra->dd.n_fixed, ra->dd.fixed, m);
    return rc ? rc : cli_dims_check_ranges("run", &ra->dd, *m);
}

/* ---- one run (no --each) ---- */
static int run_plain(cli_run_args *ra) {
    cli_compile_args *ca = &ra->ca;
    lt_model *m = NULL;
    lt_artifact *art = NULL; /* MODEL is a .lathe artifact: the model lies in its bytes */
    lt_datum **in = NULL, **outs = NULL;
    lt_plan *plan = NULL;
    int n_in = 0, rc = 0; /* graph inputs before compiling (freezing removes some): in[]'s length */
    lt_compile_report rep = {0};
    bool have_rep = false;
    bool is_artifact = lt_artifact_is_file(ra->model); /* its saved shapes, options, module */
    if (is_artifact && (rc = cli_load_artifact(ra->model, ca, &art, &m))) goto out;
    if ((rc = cli_compile_check_backend(ca, true))) goto out;
    bool interp = strcmp(ca->backend, "interp") == 0;
    if (!is_artifact && (rc = cli_run_load_model(ra, &m))) goto out;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    const lt_graph *g = m->graph;
    in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    n_in = g->n_inputs;
    outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!in || !outs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    if ((rc = cli_inputs_bind("run", m, ra->n_inputs, ra->inputs, ra->fill, (uint64_t)ra->seed, in)) ||
        (rc = cli_ranges_check(&ra->dd, m, in, NULL)))
        goto out;
    double compile_ms = 0;
    if (!interp) {
        if ((rc = cli_inputs_fix_shapes(m, in))) goto out;
        double t0 = cli_now_ms();
        if ((rc = cli_compile_model(ca, m, in, &plan, &rep))) goto out;
        have_rep = true;
        compile_ms = cli_now_ms() - t0;
        if (ra->verbose) cli_compile_print_report(&rep, stdout);
    }
    double t0 = cli_now_ms();
    if (cli_run_once(&ctx, ca->backend, m, plan, (uint64_t)ra->seed, in, outs, NULL) != LT_OK) {
        rc = cli_fail(&ctx);
        goto out;
    }
    double t1 = cli_now_ms();
    char how[256];
    if (interp) cli_fmt(how, sizeof how, "interp");
    else cli_fmt(how, sizeof how, "%s, first run; compile %.3f s%s", ca->backend, compile_ms / 1e3,
                 rep.n_kernels ? (rep.cache_hit ? ", cached" : "") : "");
    rc = cli_run_finish(ra, m, plan, g, in, outs, t1 - t0, how, ra->output);
out:
    if (m) {
        for (int i = 0; in && i < n_in; i++) lt_datum_release(in[i]);
        for (int i = 0; outs && i < m->graph->n_outputs; i++) lt_datum_release(outs[i]);
    }
    free(in);
    free(outs);
    lt_plan_free(plan);
    if (have_rep) lt_compile_report_free(&rep);
    lt_model_free(m);
    lt_artifact_free(art);
    return rc;
}

int cmd_run(int argc, char **argv) {
    cli_run_args ra = {.fill = LT_FILL_RANDOM, .values = 8};
    int rc = 0;
    cli_compile_init(&ra.ca, "cpu");
    ra.shapes = calloc((size_t)argc, sizeof *ra.shapes), ra.dims = calloc((size_t)argc, sizeof *ra.dims);
    ra.inputs = calloc((size_t)argc, sizeof *ra.inputs), ra.each = calloc((size_t)argc, sizeof *ra.each);
    if (!ra.shapes || !ra.dims || !ra.inputs || !ra.each) {
        cli_error("out of memory");
        rc = CLI_EXIT_INVALID;
        goto out;
    }
    if ((rc = parse_args(argc, argv, &ra))) { rc = rc < 0 ? 0 : rc; goto out; }
    if (lt_artifact_is_file(ra.model) && (ra.n_shapes || ra.n_dims)) {
        rc = cli_usage("run", "%s is an artifact: its shapes are fixed", ra.model);
        goto out;
    }
    rc = ra.n_each ? cli_run_each(&ra) : run_plain(&ra);
out:
    cli_dims_free(&ra.dd);
    free(ra.shapes);
    free(ra.dims);
    free(ra.inputs);
    free(ra.each);
    return rc;
}
