/* cmd_run.c — `lathe run MODEL`: bind inputs from .npy / .npz / .pb files (or fill them), run the model
 * on the reference interpreter, print a summary per output and optionally write every output to an
 * .npz. Inputs must match the declared dtype and shape (symbolic dims bind to the data and must agree
 * across inputs); the output file is written atomically, so a failed run leaves none behind.
 * Exit codes: 0 ok, 1 usage, 2 bad model or input, 3 unsupported op or backend.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "graph/infer.h"
#include "interp/interp.h"
#include "io/io.h"
#include "onnx/onnx.h"

static const char HELP[] =
    "usage: lathe run MODEL [options]\n"
    "\n"
    "Run an ONNX model on the reference interpreter and print a summary of every output.\n"
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
    "  --backend NAME        execution backend (default interp; the only one available)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Exit status: 0 ok, 1 usage error, 2 bad model or input data, 3 unsupported op or backend.\n";

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

static int find_input(const lt_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) return i;
    return -1;
}

static void list_inputs(const lt_graph *g, char *buf, size_t n) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < g->n_inputs && off < n; i++)
        if (!g->inputs[i]->init)
            off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", g->inputs[i]->name);
}

/* ---- printing a summary ---- */
static void print_value(const lt_tensor *t, int64_t i) {
    lt_dclass c = lt_dtype_get(t->dtype)->cls;
    if (c == LT_DC_STRING) printf("\"%s\"", ((char *const *)t->data)[i]);
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

/* ---- reading input files ---- */
typedef struct run_state {
    lt_model *m;
    lt_datum **in;  /* per graph input */
    const char **src; /* where each came from */
} run_state;

static int bind_datum(run_state *rs, int idx, lt_datum *d, const char *src) {
    const lt_value *v = rs->m->graph->inputs[idx];
    if (rs->in[idx]) {
        lt_datum_release(d);
        return cli_usage("run", "input '%s' given twice (%s and %s)", v->name, rs->src[idx], src);
    }
    rs->in[idx] = d;
    rs->src[idx] = src;
    return 0;
}

static int read_named(run_state *rs, int idx, const char *path) {
    const lt_value *v = rs->m->graph->inputs[idx];
    lt_ctx ctx = {0};
    lt_datum *d = NULL;
    if (ends_with(path, ".pb")) {
        if (lt_onnx_read_datum_file(&ctx, path, &v->type, &d) != LT_OK) return cli_fail(&ctx);
        return bind_datum(rs, idx, d, path);
    }
    lt_tensor *t = NULL;
    if (ends_with(path, ".npz")) {
        lt_npz *z = NULL;
        if (lt_npz_read_file(&ctx, path, &z) != LT_OK) return cli_fail(&ctx);
        int k = lt_npz_find(z, v->name);
        if (k < 0 && z->n == 1) k = 0;
        if (k < 0) {
            cli_error("%s: no array named '%s' (and %d arrays, so none is implied)", path, v->name, z->n);
            lt_npz_free(z);
            return CLI_EXIT_INVALID;
        }
        t = lt_tensor_retain(z->tensors[k]);
        lt_npz_free(z);
    } else if (lt_io_read_tensor_file(&ctx, path, &t) != LT_OK) {
        return cli_fail(&ctx);
    }
    if (lt_datum_tensor(&ctx, t, &d) != LT_OK) return cli_fail(&ctx);
    return bind_datum(rs, idx, d, path);
}

static int read_input_spec(run_state *rs, const char *spec) {
    const lt_graph *g = rs->m->graph;
    char names[2048];
    const char *eq = strchr(spec, '=');
    if (eq) {
        char name[1024];
        snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
        int idx = find_input(g, name);
        if (idx >= 0) return read_named(rs, idx, eq + 1);
        if (access(spec, F_OK) != 0) {
            list_inputs(g, names, sizeof names);
            return cli_usage("run", "--input %s: the model has no input named '%s' (inputs: %s)", spec, name, names);
        }
    }
    /* a plain FILE */
    if (ends_with(spec, ".npz")) {
        lt_ctx ctx = {0};
        lt_npz *z = NULL;
        if (lt_npz_read_file(&ctx, spec, &z) != LT_OK) return cli_fail(&ctx);
        int rc = 0, only = -1, n_free = 0;
        for (int i = 0; i < g->n_inputs; i++)
            if (!g->inputs[i]->init) { only = i; n_free++; }
        for (int k = 0; k < z->n && !rc; k++) {
            int idx = find_input(g, z->names[k]);
            if (idx < 0 && z->n == 1 && n_free == 1) idx = only; /* np.savez(f, x): 'arr_0' */
            if (idx < 0) {
                list_inputs(g, names, sizeof names);
                cli_error("%s: array '%s' matches no model input (inputs: %s)", spec, z->names[k], names);
                rc = CLI_EXIT_INVALID;
                break;
            }
            lt_datum *d = NULL;
            if (lt_datum_tensor(&ctx, lt_tensor_retain(z->tensors[k]), &d) != LT_OK) { rc = cli_fail(&ctx); break; }
            rc = bind_datum(rs, idx, d, spec);
        }
        lt_npz_free(z);
        return rc;
    }
    int only = -1, n_free = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (!g->inputs[i]->init) { only = i; n_free++; }
    if (n_free != 1) {
        list_inputs(g, names, sizeof names);
        return cli_usage("run", "--input %s: say which input it is with NAME=FILE (inputs: %s)", spec, names);
    }
    return read_named(rs, only, spec);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int cmd_run(int argc, char **argv) {
    const char *model = NULL, *output = NULL, *backend = "interp";
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims),
               **inputs = calloc((size_t)argc, sizeof *inputs);
    int n_shapes = 0, n_dims = 0, n_inputs = 0, rc = CLI_EXIT_OK;
    lt_fill_kind fill = LT_FILL_RANDOM;
    int64_t seed = 0, values = 8;
    run_state rs = {0};
    lt_datum **outs = NULL;
    npz_list nl = {0};
    if (!shapes || !dims || !inputs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(HELP, stdout); goto out; }
        static const char *const opts[] = {"--input", "--shapes", "--dim",  "--output",
                                           "--backend", "--fill", "--seed", "--values"};
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
        case 4: backend = v; break;
        case 5:
            if (!lt_fill_parse(v, &fill)) {
                rc = cli_usage("run", "--fill must be random, zeros, ones or ramp, not '%s'", v);
                goto out;
            }
            break;
        case 6:
            if (!cli_parse_i64(v, &seed)) {
                rc = cli_usage("run", "--seed needs a non-negative integer, got '%s'", v);
                goto out;
            }
            break;
        case 7:
            if (!cli_parse_i64(v, &values) || values > 1000000) {
                rc = cli_usage("run", "--values needs a count, got '%s'", v);
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
    if (strcmp(backend, "interp") != 0) {
        cli_error("backend '%s' is not available (backends: interp)", backend);
        rc = CLI_EXIT_UNSUPPORTED;
        goto out;
    }
    rc = cli_load_model(model, n_shapes, shapes, n_dims, dims, &rs.m);
    if (rc) goto out;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, rs.m) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    const lt_graph *g = rs.m->graph;
    rs.in = calloc((size_t)g->n_inputs + 1, sizeof *rs.in);
    rs.src = calloc((size_t)g->n_inputs + 1, sizeof *rs.src);
    outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!rs.in || !rs.src || !outs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int k = 0; k < n_inputs; k++)
        if ((rc = read_input_spec(&rs, inputs[k]))) goto out;
    /* check given data, binding symbolic dims */
    lt_dim_binding bind = {0};
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_datum *d = rs.in[i];
        if (!d) continue;
        if (d->kind == LT_DK_TENSOR) {
            if (lt_io_check_input(&ctx, g->inputs[i], d->tensor, &bind) != LT_OK) {
                cli_error("%s (from %s)", ctx.msg, rs.src[i]);
                rc = CLI_EXIT_INVALID;
                goto out;
            }
        } else if (g->inputs[i]->type.kind == LT_TK_TENSOR) {
            cli_error("input '%s': expected a tensor, %s holds a %s", g->inputs[i]->name, rs.src[i],
                      d->kind == LT_DK_SEQUENCE ? "sequence" : d->kind == LT_DK_OPTIONAL ? "optional" : "map");
            rc = CLI_EXIT_INVALID;
            goto out;
        }
    }
    /* fill the rest */
    uint64_t rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (rs.in[i] || v->init) continue;
        int rank = 0;
        int64_t shape[LT_MAX_RANK];
        if (lt_io_input_shape(&ctx, v, &bind, &rank, shape) != LT_OK) { rc = cli_fail(&ctx); goto out; }
        if (v->type.dtype == LT_UNDEFINED) {
            cli_error("input '%s' has no declared dtype: give its data with --input %s=FILE", v->name, v->name);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        lt_tensor *t = NULL;
        if (lt_io_fill_tensor(&ctx, v->type.dtype, rank, shape, fill, &rng, &t) != LT_OK ||
            lt_datum_tensor(&ctx, t, &rs.in[i]) != LT_OK) {
            rc = cli_fail(&ctx);
            goto out;
        }
        rs.src[i] = "fill";
    }
    lt_interp_options opt = {.seed = (uint64_t)seed};
    double t0 = now_ms();
    if (lt_interp_run(&ctx, rs.m, &opt, rs.in, outs) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    double t1 = now_ms();
    for (int k = 0; k < g->n_outputs; k++) {
        char label[1024];
        snprintf(label, sizeof label, "output %d '%s'", k, g->outputs[k]->name);
        print_datum(outs[k], 0, label, (int)values);
    }
    printf("time: %.3f ms (interp)\n", t1 - t0);
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
    if (rs.m) {
        for (int i = 0; rs.in && i < rs.m->graph->n_inputs; i++) lt_datum_release(rs.in[i]);
        for (int i = 0; outs && i < rs.m->graph->n_outputs; i++) lt_datum_release(outs[i]);
    }
    for (int i = 0; i < nl.n; i++) free(nl.names[i]);
    free(nl.names);
    free(nl.ts);
    free(rs.in);
    free(rs.src);
    free(outs);
    lt_model_free(rs.m);
    free(shapes);
    free(dims);
    free(inputs);
    return rc;
}
