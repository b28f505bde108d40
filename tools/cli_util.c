/* cli_util.c — helpers the subcommands share: error printing, printing names safely (escaping what a
 * terminal would act on), option parsing, creating output folders, loading a model with its
 * --shapes / --dim bindings, and listing the ops a model uses.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ops/infer.h"
#include "onnx/onnx.h"

/* ---- printing names safely ---- */
/* Length of the well-formed UTF-8 sequence at p (1 to 4), 0 when p does not start one. */
static int utf8_seq(const unsigned char *p) {
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    int n;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : lo, hi = c == 0xED ? 0x9F : hi;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : lo, hi = c == 0xF4 ? 0x8F : hi;
    else return 0;
    if (p[1] < lo || p[1] > hi) return 0; /* also stops at the terminating 0 */
    for (int k = 2; k < n; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    return n;
}

/* A well-formed sequence that is still not shown as is: C1 controls, direction marks, embeddings,
 * overrides and isolates, line and paragraph separators (they reorder or break what is printed). */
static bool utf8_control(const unsigned char *p, int n) {
    if (n == 2) return p[0] == 0xC2 && p[1] <= 0x9F;
    if (n != 3 || p[0] != 0xE2) return false;
    unsigned cp = 0x2000u | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    return (cp >= 0x200E && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

typedef struct esc_sink {
    char *buf; /* NULL: count only */
    size_t cap, len;
    FILE *f;   /* or write here */
} esc_sink;

static void sink_put(esc_sink *o, const char *s, size_t n) {
    if (o->f) fwrite(s, 1, n, o->f);
    for (size_t i = 0; o->buf && i < n && o->len + i + 1 < o->cap; i++) o->buf[o->len + i] = s[i];
    o->len += n;
}

static void esc_emit(esc_sink *o, const char *s, bool keep_lines) {
    const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
    while (*p) {
        int n = utf8_seq(p);
        if (n == 1 && *p >= 0x20 && *p != 0x7F) {
            const unsigned char *q = p; /* a run of printable ASCII at once */
            while (*q >= 0x20 && *q < 0x7F) q++;
            sink_put(o, (const char *)p, (size_t)(q - p));
            p = q;
        } else if (n == 1 && keep_lines && (*p == '\n' || *p == '\t')) {
            sink_put(o, (const char *)p++, 1);
        } else if (n == 1 && (*p == '\n' || *p == '\t' || *p == '\r')) {
            sink_put(o, *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : "\\r", 2);
            p++;
        } else if (n > 1 && !utf8_control(p, n)) {
            sink_put(o, (const char *)p, (size_t)n);
            p += n;
        } else { /* a control byte, a control sequence byte by byte, or a byte that is not UTF-8 */
            for (int k = 0; k < (n ? n : 1); k++) {
                static const char digits[] = "0123456789abcdef";
                char hex[4] = {'\\', 'x', digits[p[k] >> 4], digits[p[k] & 15]};
                sink_put(o, hex, 4);
            }
            p += n ? n : 1;
        }
    }
}

size_t cli_esc_into(char *buf, size_t n, const char *s, bool keep_lines) {
    esc_sink o = {buf, n, 0, NULL};
    esc_emit(&o, s, keep_lines);
    if (buf && n) buf[o.len < n ? o.len : n - 1] = 0;
    return o.len;
}

const char *cli_esc(const char *s) {
    static _Thread_local char *ring[8];
    static _Thread_local size_t caps[8];
    static _Thread_local unsigned next;
    unsigned k = next++ % 8;
    size_t need = cli_esc_into(NULL, 0, s, false) + 1;
    if (caps[k] < need) {
        char *nb = realloc(ring[k], need);
        if (!nb) return "(name not shown: out of memory)";
        ring[k] = nb;
        caps[k] = need;
    }
    cli_esc_into(ring[k], caps[k], s, false);
    return ring[k];
}

void cli_put_text(FILE *f, const char *text) {
    esc_sink o = {NULL, 0, 0, f};
    esc_emit(&o, text, true);
}

/* "lathe: KIND: MESSAGE\n" on stderr, the message escaped. */
static void print_line(const char *kind, const char *fmt, va_list ap) {
    char small[1024], *msg = small;
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)) != NULL) vsnprintf(msg, (size_t)n + 1, fmt, cp);
    va_end(cp);
    fprintf(stderr, "lathe: %s: ", kind);
    cli_put_text(stderr, msg ? msg : small);
    if (msg != small) free(msg);
}

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_line("error", fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    print_line("warning", fmt, ap);
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
    print_line("error", fmt, ap);
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

int64_t cli_env_size(const char *name) {
    const char *e = getenv(name);
    if (!e || !*e) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(e, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : *end == 'T' ? 40 : 0;
    if (shift) end++;
    if (errno || end == e || *end || v <= 0 || v > (INT64_MAX >> shift)) {
        cli_warn("%s='%s' is not a size (bytes, or a number with K, M, G or T): using the default", name, e);
        return 0;
    }
    return (int64_t)v << shift;
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

/* ---- output folders ---- */
/* mkdir -p dir; errors say "WHAT ARG: ..." (ARG: what the user gave). */
static int make_dirs(const char *what, const char *arg, const char *dir) {
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    if (!p) {
        cli_error("out of memory");
        return CLI_EXIT_INVALID;
    }
    memcpy(p, dir, n + 1);
    int rc = CLI_EXIT_OK;
    for (char *s = p + 1;; s++) { /* each prefix that ends a component, the whole path last */
        if (*s && (*s != '/' || s[-1] == '/')) continue;
        char end = *s;
        *s = 0;
        struct stat st;
        if (mkdir(p, 0777) != 0) {
            int e = errno;
            if (stat(p, &st) != 0) {
                cli_error("%s %s: cannot create folder %s: %s", what, arg, p, strerror(e));
                rc = CLI_EXIT_INVALID;
            } else if (!S_ISDIR(st.st_mode)) {
                cli_error("%s %s: cannot create folder %s: %s is not a folder", what, arg, dir, p);
                rc = CLI_EXIT_INVALID;
            }
        }
        *s = end;
        if (rc || !end) break;
    }
    free(p);
    return rc;
}

int cli_make_dirs(const char *what, const char *dir) {
    if (!dir || !*dir) {
        cli_error("%s: an empty folder name", what);
        return CLI_EXIT_USAGE;
    }
    return make_dirs(what, dir, dir);
}

int cli_make_parent_dirs(const char *what, const char *path) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash || slash == path) return CLI_EXIT_OK;
    char *dir = malloc((size_t)(slash - path) + 1);
    if (!dir) {
        cli_error("out of memory");
        return CLI_EXIT_INVALID;
    }
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = 0;
    struct stat st;
    int rc = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? CLI_EXIT_OK : make_dirs(what, path, dir);
    free(dir);
    return rc;
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

char *cli_copy_str(const char *s, size_t n) {
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = 0;
    }
    return c;
}
