/* cmd_run.c — `lathe run MODEL`: bind inputs from .npy / .npz / .pb files (or fill them), compile the
 * model for the CPU (the default backend; `--backend cuda` for the GPU, `--backend interp` runs the
 * reference interpreter), run it,
 * print a summary per output and optionally write every output to an .npz. Inputs must match the
 * declared dtype and shape (symbolic dims bind to the data and must agree across inputs); the model
 * is compiled for the shapes of the data. The output file is written atomically, so a failed run
 * leaves none behind. --bench N prints the median of N runs after a warm-up run (on a device backend
 * also the median device time of the steps, from backend events: the replayed CUDA graph without
 * the input and output copies, next to the wall time that includes them). Output names and string
 * values are printed escaped (cli_esc).
 * Exit codes: 0 ok, 1 usage, 2 bad model or input, 3 unsupported op or backend.
 */
#include "cli_compile.h"

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
    "options:\n"
    "  --input NAME=FILE     data for input NAME from FILE: .npy (format 1-3), .npz (the member named\n"
    "                        NAME, or its only member) or .pb (ONNX TensorProto) (repeatable)\n"
    "  --input FILE.npz      bind every array of the .npz to the input of the same name\n"
    "  --input FILE          a single-input model's data\n"
    "  --shapes NAME:DIMS[,NAME:DIMS]  fix input shapes, e.g. --shapes data:1x3x224x224 (repeatable)\n"
    "  --dim NAME=N          bind a symbolic dim everywhere, e.g. --dim batch=1 (repeatable)\n"
    "  --fill KIND           data for inputs not given: random (default: uniform [0,1) floats, ints in\n"
    "                        [0,10), random bools), zeros, ones, or ramp (arange(n)/n for floats)\n"
    "  --seed N              seed for --fill random and random ops (default 0)\n"
    "  --output FILE.npz     write all outputs to an .npz (numpy.load reads it)\n"
    "  --values N            how many leading values to print per output (default 8)\n"
    "  --backend NAME        cpu (default: compiled), cuda (compiled for the GPU; nodes with no GPU\n"
    "                        lowering run on the host) or interp (the reference interpreter)\n"
    "  --bench N             time N runs after a warm-up run and print the median (and min, max);\n"
    "                        cuda: also the median device time of the replayed plan (CUDA events)\n"
    "  --verbose             print the compile report: stage times, kernels, host steps, memory plan\n"
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

static double now_ms(void) {
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
static lt_status run_once(lt_ctx *ctx, const char *backend, lt_model *m, lt_plan *plan, uint64_t seed,
                          lt_datum **in, lt_datum **outs, double *device_s) {
    if (plan) {
        lt_plan_run_options po = {.seed = seed, .device_seconds = device_s, .max_loop_bytes = cli_max_loop_bytes()};
        return lt_plan_run(ctx, plan, &po, in, outs);
    }
    (void)backend;
    lt_interp_options opt = {.seed = seed, .max_loop_bytes = cli_max_loop_bytes()};
    return lt_interp_run(ctx, m, &opt, in, outs);
}

int cmd_run(int argc, char **argv) {
    const char *model = NULL, *output = NULL;
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims),
               **inputs = calloc((size_t)argc, sizeof *inputs);
    int n_shapes = 0, n_dims = 0, n_inputs = 0, rc = CLI_EXIT_OK;
    lt_fill_kind fill = LT_FILL_RANDOM;
    int64_t seed = 0, values = 8, bench = 0;
    bool verbose = false;
    lt_model *m = NULL;
    lt_artifact *art = NULL; /* MODEL is a .lathe artifact: the model lies in its bytes */
    lt_datum **in = NULL, **outs = NULL;
    lt_plan *plan = NULL;
    int n_in = 0; /* graph inputs before compiling (freezing removes some): in[]'s length */
    lt_compile_report rep = {0};
    bool have_rep = false;
    npz_list nl = {0};
    double *times = NULL;
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    if (!shapes || !dims || !inputs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(HELP, stdout); goto out; }
        if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) { verbose = true; i++; continue; }
        r = cli_compile_opt("run", argc, argv, &i, &ca);
        if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
        if (r > 0) continue;
        static const char *const opts[] = {"--input", "--shapes", "--dim", "--output", "--fill", "--seed", "--values",
                                           "--bench"};
        int which = -1;
        for (int k = 0; k < (int)(sizeof opts / sizeof *opts) && which < 0; k++) {
            r = cli_opt_value("run", argc, argv, &i, opts[k], &v);
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            if (r > 0) which = k;
        }
        switch (which) {
        case 0: inputs[n_inputs++] = v; break;
        case 1: shapes[n_shapes++] = v; break;
        case 2: dims[n_dims++] = v; break;
        case 3: output = v; break;
        case 4:
            if (!lt_fill_parse(v, &fill)) {
                rc = cli_usage("run", "--fill must be random, zeros, ones or ramp, not '%s'", v);
                goto out;
            }
            break;
        case 5:
            if (!cli_parse_i64(v, &seed)) {
                rc = cli_usage("run", "--seed needs a non-negative integer, got '%s'", v);
                goto out;
            }
            break;
        case 6:
            if (!cli_parse_i64(v, &values) || values > 1000000) {
                rc = cli_usage("run", "--values needs a count, got '%s'", v);
                goto out;
            }
            break;
        case 7:
            if (!cli_parse_i64(v, &bench) || bench < 1 || bench > 1000000) {
                rc = cli_usage("run", "--bench needs a number of runs, got '%s'", v);
                goto out;
            }
            break;
        default:
            if (a[0] == '-' && a[1]) {
                rc = cli_usage("run", "unknown option '%s'", a);
                goto out;
            }
            if (model) {
                rc = cli_usage("run", "only one MODEL may be given ('%s' and '%s')", model, a);
                goto out;
            }
            model = a;
            i++;
            break;
        }
    }
    if (!model) { rc = cli_usage("run", "missing MODEL"); goto out; }
    bool is_artifact = lt_artifact_is_file(model); /* a .lathe artifact: its saved shapes, options, module */
    if (is_artifact && (n_shapes || n_dims)) { rc = cli_usage("run", "%s is an artifact: its shapes are fixed", model); goto out; }
    if (is_artifact && (rc = cli_load_artifact(model, &ca, &art, &m))) goto out;
    if ((rc = cli_compile_check_backend(&ca, true))) goto out;
    bool interp = strcmp(ca.backend, "interp") == 0;
    rc = is_artifact ? 0 : cli_load_model(model, n_shapes, shapes, n_dims, dims, &m);
    if (rc) goto out;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    const lt_graph *g = m->graph;
    in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    n_in = g->n_inputs;
    outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!in || !outs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    if ((rc = cli_inputs_bind("run", m, n_inputs, inputs, fill, (uint64_t)seed, in))) goto out;
    double compile_ms = 0;
    if (!interp) {
        if ((rc = cli_inputs_fix_shapes(m, in))) goto out;
        double t0 = now_ms();
        if ((rc = cli_compile_model(&ca, m, in, &plan, &rep))) goto out;
        have_rep = true;
        compile_ms = now_ms() - t0;
        if (verbose) cli_compile_print_report(&rep, stdout);
    }
    double t0 = now_ms();
    if (run_once(&ctx, ca.backend, m, plan, (uint64_t)seed, in, outs, NULL) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    double t1 = now_ms();
    for (int k = 0; k < g->n_outputs; k++) {
        char label[1024];
        snprintf(label, sizeof label, "output %d '%s'", k, cli_esc(g->outputs[k]->name));
        print_datum(outs[k], 0, label, (int)values);
    }
    if (interp) printf("time: %.3f ms (interp)\n", t1 - t0);
    else printf("time: %.3f ms (%s, first run; compile %.3f s%s)\n", t1 - t0, ca.backend, compile_ms / 1e3,
                rep.n_kernels ? (rep.cache_hit ? ", cached" : "") : "");
    if (bench > 0) {
        lt_plan_stats ps = {0};
        if (plan) lt_plan_get_stats(plan, &ps);
        times = calloc((size_t)bench * 2, sizeof *times);
        double *dev = times ? times + bench : NULL;
        lt_datum **tmp = calloc((size_t)g->n_outputs + 1, sizeof *tmp);
        if (!times || !tmp) { free(tmp); cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
        for (int64_t r = 0; r < bench; r++) {
            double b0 = now_ms(), ds = 0;
            lt_status st = run_once(&ctx, ca.backend, m, plan, (uint64_t)seed, in, tmp, ps.device ? &ds : NULL);
            times[r] = now_ms() - b0;
            dev[r] = ds * 1e3;
            for (int k = 0; k < g->n_outputs; k++) { lt_datum_release(tmp[k]); tmp[k] = NULL; }
            if (st != LT_OK) { free(tmp); rc = cli_fail(&ctx); goto out; }
        }
        free(tmp);
        qsort(times, (size_t)bench, sizeof *times, cmp_double);
        qsort(dev, (size_t)bench, sizeof *dev, cmp_double);
        double med = bench % 2 ? times[bench / 2] : 0.5 * (times[bench / 2 - 1] + times[bench / 2]);
        double dmed = bench % 2 ? dev[bench / 2] : 0.5 * (dev[bench / 2 - 1] + dev[bench / 2]);
        char thr[32];
        if (ps.device) snprintf(thr, sizeof thr, "%d graph%s, %d host step%s", ps.n_graphs, ps.n_graphs == 1 ? "" : "s",
                                ps.n_host, ps.n_host == 1 ? "" : "s");
        else if (interp) snprintf(thr, sizeof thr, "1 thread");
        else if (ca.o.threads > 0) snprintf(thr, sizeof thr, "%d thread%s", ca.o.threads, ca.o.threads == 1 ? "" : "s");
        else snprintf(thr, sizeof thr, "default threads");
        printf("bench: median %.3f ms over %lld runs (min %.3f, max %.3f; %s, %s)\n", med, (long long)bench,
               times[0], times[bench - 1], ca.backend, thr);
        if (ps.device)
            printf("bench: device median %.3f ms (min %.3f, max %.3f; CUDA events around the steps, input and output "
                   "copies excluded; the wall time above includes them)\n", dmed, dev[0], dev[bench - 1]);
        print_memory(plan ? &ps : NULL);
    }
    if (output) {
        bool skipped = false, widened = false;
        for (int k = 0; k < g->n_outputs; k++)
            if (!npz_collect(&nl, g->outputs[k]->name, outs[k], &skipped)) {
                cli_error("out of memory");
                rc = CLI_EXIT_INVALID;
                goto out;
            }
        if (lt_npz_write_file(&ctx, output, nl.n, (const char *const *)nl.names, nl.ts, &widened) != LT_OK) {
            rc = cli_fail(&ctx);
            goto out;
        }
        if (skipped) cli_warn("empty optional outputs were not written to %s", output);
        if (widened) cli_warn("outputs of types numpy lacks were widened (to float32 / int8 / uint8) in %s", output);
    }
out:
    if (m) {
        for (int i = 0; in && i < n_in; i++) lt_datum_release(in[i]);
        for (int i = 0; outs && i < m->graph->n_outputs; i++) lt_datum_release(outs[i]);
    }
    for (int i = 0; i < nl.n; i++) free(nl.names[i]);
    free(nl.names);
    free(nl.ts);
    free(in);
    free(outs);
    free(times);
    lt_plan_free(plan);
    if (have_rep) lt_compile_report_free(&rep);
    lt_model_free(m);
    lt_artifact_free(art);
    free(shapes);
    free(dims);
    free(inputs);
    return rc;
}
