/* cli_util.c — helpers the subcommands share: error printing, option parsing, loading a model with
 * its --shapes / --dim bindings, and listing the ops a model uses.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph/infer.h"
#include "onnx/onnx.h"

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("lathe: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("lathe: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_fail(const lt_ctx *ctx) {
    lt_status s = ctx->status == LT_OK ? LT_ERR_INTERNAL : ctx->status;
    cli_error("%s", ctx->msg[0] ? ctx->msg : lt_status_name(s));
    return lt_status_exit_code(s);
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("lathe: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'lathe %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
    return CLI_EXIT_USAGE;
}

int cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        *i += 1;
        return 1;
    }
    if (a[n] != 0) return 0;
    if (*i + 1 >= argc) {
        cli_usage(cmd, "option %s needs a value", name);
        return -1;
    }
    *val = argv[*i + 1];
    *i += 2;
    return 1;
}

void cli_fmt(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

bool cli_parse_i64(const char *s, int64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

int cli_load_model(const char *path, int n_shapes, const char *const *shapes, int n_dims,
                   const char *const *dims, lt_model **out) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) {
        int code = cli_fail(&ctx);
        /* a file that cannot be read or decoded is a bad model (2), whatever the status */
        return code == CLI_EXIT_UNSUPPORTED ? code : CLI_EXIT_INVALID;
    }
    for (int i = 0; i < n_shapes; i++)
        if (lt_model_bind_shapes_spec(&ctx, m, shapes[i]) != LT_OK) goto fail;
    for (int i = 0; i < n_dims; i++)
        if (lt_model_bind_dim_spec(&ctx, m, dims[i]) != LT_OK) goto fail;
    *out = m;
    return CLI_EXIT_OK;
fail:
    lt_model_free(m);
    return cli_fail(&ctx);
}

/* ---- ops used ---- */
static bool collect_ops(const lt_graph *g, lt_arena *a, lt_vec *v) {
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        const char *dom = n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0 ? n->domain : NULL;
        char buf[512];
        snprintf(buf, sizeof buf, "%s%s%s", dom ? dom : "", dom ? ":" : "", n->op_type);
        bool seen = false;
        for (int k = 0; k < v->n && !seen; k++) seen = strcmp(v->items[k], buf) == 0;
        if (!seen) {
            char *s = lt_arena_strdup(a, buf);
            if (!s || !lt_vec_push(v, s)) return false;
        }
        for (int k = 0; k < n->n_attr; k++) {
            const lt_attr *at = &n->attrs[k];
            if (at->type == LT_AT_GRAPH && at->g && !collect_ops(at->g, a, v)) return false;
            if (at->type == LT_AT_GRAPHS)
                for (int j = 0; j < at->n; j++)
                    if (at->graphs[j] && !collect_ops(at->graphs[j], a, v)) return false;
        }
    }
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cli_model_ops(const lt_model *m, lt_arena *a, const char ***out) {
    lt_vec v = {0};
    if (!collect_ops(m->graph, a, &v)) {
        lt_vec_free(&v);
        return -1;
    }
    if (v.n) qsort(v.items, (size_t)v.n, sizeof *v.items, cmp_str);
    *out = (const char **)v.items;
    return v.n;
}
