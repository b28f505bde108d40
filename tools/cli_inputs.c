/* cli_inputs.c — binding data to a model's inputs for `lathe run` and `lathe profile`: --input
 * specs (.npy / .npz / .pb, by name or implied), checks against the declared types (symbolic dims
 * bind to the data and must agree across inputs), fills for inputs not given (random / zeros / ones
 * / ramp), and fixing the model's input shapes to the data's before compiling (compiled kernels have
 * static shapes).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ops/infer.h"
#include "io/io.h"
#include "onnx/onnx.h"

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

/* The decoders' memory limit: LATHE_MAX_INPUT_BYTES (bytes, or with a K/M/G/T suffix) raises or
 * lowers the default (lt_io_limits.max_bytes). An unreadable value keeps the default. */
static lt_io_limits input_limits(void) {
    lt_io_limits lim = {.max_bytes = cli_env_size("LATHE_MAX_INPUT_BYTES")};
    return lim;
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

typedef struct bind_state {
    const char *cmd;
    lt_model *m;
    lt_datum **in;    /* per graph input */
    const char **src; /* where each came from */
} bind_state;

static int bind_datum(bind_state *rs, int idx, lt_datum *d, const char *src) {
    const lt_value *v = rs->m->graph->inputs[idx];
    if (rs->in[idx]) {
        lt_datum_release(d);
        return cli_usage(rs->cmd, "input '%s' given twice (%s and %s)", v->name, rs->src[idx], src);
    }
    rs->in[idx] = d;
    rs->src[idx] = src;
    return 0;
}

static int read_named(bind_state *rs, int idx, const char *path) {
    const lt_value *v = rs->m->graph->inputs[idx];
    lt_ctx ctx = {0};
    lt_datum *d = NULL;
    if (ends_with(path, ".pb")) {
        if (lt_onnx_read_datum_file(&ctx, path, &v->type, &d) != LT_OK) return cli_fail(&ctx);
        return bind_datum(rs, idx, d, path);
    }
    lt_tensor *t = NULL;
    lt_io_limits lim = input_limits();
    if (ends_with(path, ".npz")) {
        lt_npz *z = NULL;
        if (lt_npz_read_file_limited(&ctx, path, &lim, &z) != LT_OK) return cli_fail(&ctx);
        int k = lt_npz_find(z, v->name);
        if (k < 0 && z->n == 1) k = 0;
        if (k < 0) {
            cli_error("%s: no array named '%s' (and %d arrays, so none is implied)", path, v->name, z->n);
            lt_npz_free(z);
            return CLI_EXIT_INVALID;
        }
        t = lt_tensor_retain(z->tensors[k]);
        lt_npz_free(z);
    } else if (lt_io_read_tensor_file_limited(&ctx, path, &lim, &t) != LT_OK) {
        return cli_fail(&ctx);
    }
    if (lt_datum_tensor(&ctx, t, &d) != LT_OK) return cli_fail(&ctx);
    return bind_datum(rs, idx, d, path);
}

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

static int read_input_spec(bind_state *rs, const char *spec) {
    const lt_graph *g = rs->m->graph;
    char names[2048];
    cli_input_spec is;
    cli_input_spec_parse(g, spec, file_exists, &is);
    if (is.kind == CLI_INPUT_NAMED) return read_named(rs, is.input, is.path);
    if (is.kind == CLI_INPUT_NO_SUCH_INPUT) {
        list_inputs(g, names, sizeof names);
        return cli_usage(rs->cmd, "--input %s: the model has no input named '%.*s' (inputs: %s)", spec,
                         is.name_len > 1024 ? 1024 : (int)is.name_len, is.name, names);
    }
    /* a plain FILE */
    if (is.kind == CLI_INPUT_NPZ_ALL) {
        lt_ctx ctx = {0};
        lt_npz *z = NULL;
        lt_io_limits lim = input_limits();
        if (lt_npz_read_file_limited(&ctx, spec, &lim, &z) != LT_OK) return cli_fail(&ctx);
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
    if (is.kind == CLI_INPUT_WHICH) {
        list_inputs(g, names, sizeof names);
        return cli_usage(rs->cmd, "--input %s: say which input it is with NAME=FILE (inputs: %s)", spec, names);
    }
    return read_named(rs, is.input, spec);
}

int cli_inputs_bind(const char *cmd, lt_model *m, int n_specs, const char *const *specs, lt_fill_kind fill,
                    uint64_t seed, lt_datum **in) {
    const lt_graph *g = m->graph;
    bind_state rs = {cmd, m, in, calloc((size_t)g->n_inputs + 1, sizeof(char *))};
    lt_ctx ctx = {0};
    int rc = 0;
    if (!rs.src) { cli_error("out of memory"); return CLI_EXIT_INVALID; }
    for (int k = 0; k < n_specs && !rc; k++) rc = read_input_spec(&rs, specs[k]);
    /* check given data, binding symbolic dims */
    lt_dim_binding bind = {0};
    for (int i = 0; i < g->n_inputs && !rc; i++) {
        const lt_datum *d = in[i];
        if (!d) continue;
        if (d->kind == LT_DK_TENSOR) {
            if (lt_io_check_input(&ctx, g->inputs[i], d->tensor, &bind) != LT_OK) {
                cli_error("%s (from %s)", ctx.msg, rs.src[i]);
                rc = CLI_EXIT_INVALID;
            }
        } else if (g->inputs[i]->type.kind == LT_TK_TENSOR) {
            cli_error("input '%s': expected a tensor, %s holds a %s", g->inputs[i]->name, rs.src[i],
                      d->kind == LT_DK_SEQUENCE ? "sequence" : d->kind == LT_DK_OPTIONAL ? "optional" : "map");
            rc = CLI_EXIT_INVALID;
        }
    }
    /* fill the rest */
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < g->n_inputs && !rc; i++) {
        const lt_value *v = g->inputs[i];
        if (in[i] || v->init) continue;
        int rank = 0;
        int64_t shape[LT_MAX_RANK];
        if (lt_io_input_shape(&ctx, v, &bind, &rank, shape) != LT_OK) { rc = cli_fail(&ctx); break; }
        if (v->type.dtype == LT_UNDEFINED) {
            cli_error("input '%s' has no declared dtype: give its data with --input %s=FILE", v->name, v->name);
            rc = CLI_EXIT_USAGE;
            break;
        }
        lt_tensor *t = NULL;
        if (lt_io_fill_tensor(&ctx, v->type.dtype, rank, shape, fill, &rng, &t) != LT_OK ||
            lt_datum_tensor(&ctx, t, &in[i]) != LT_OK) {
            rc = cli_fail(&ctx);
            break;
        }
    }
    free(rs.src);
    return rc;
}

int cli_inputs_fix_shapes(lt_model *m, lt_datum *const *in) {
    const lt_graph *g = m->graph;
    lt_ctx ctx = {0};
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        const lt_datum *d = in[i];
        if (!d || d->kind != LT_DK_TENSOR || v->type.kind != LT_TK_TENSOR) continue;
        bool known = v->type.rank == d->tensor->rank && v->type.dims;
        for (int k = 0; known && k < v->type.rank; k++) known = v->type.dims[k].value == d->tensor->dims[k];
        if (known) continue;
        if (lt_model_bind_shape(&ctx, m, v->name, d->tensor->rank, d->tensor->dims) != LT_OK) return cli_fail(&ctx);
    }
    return 0;
}
