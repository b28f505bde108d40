/* fuzz_cli_specs.c — libFuzzer target for the command line's option values: --shapes and --dim specs
 * (lt_model_bind_shapes_spec / lt_model_bind_dim_spec, as tools/cli_util.c applies them), --input
 * specs (cli_input_spec_parse, tools/cli_specs.c) and the escaping of names for the terminal
 * (cli_esc / cli_esc_into, tools/cli_util.c), on two small models built here (symbolic, fixed,
 * scalar, unknown-rank and initializer-backed inputs; names holding ':', '=' and ',').
 * Input: one selector byte (bit 0: which model; bit 1: whether a spec with '=' is an existing file),
 * then up to three NUL-separated strings: the --shapes spec, the --dim spec, the --input spec (one
 * string is used for all three). Besides the sanitizers it checks what each parser promises:
 * - a --shapes or --dim spec that binds has only numbers that fit in int64, and the inputs it names
 *   then have exactly the shapes it gives;
 * - the --input spec's reading names a real input, points into the spec, and matches the grammar;
 * - escaped text holds no control byte, no byte that is not UTF-8, no C1 control or direction
 *   override, is the same through cli_esc and cli_esc_into (any buffer size), and unescapes to
 *   the original.
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DLATHE_FUZZ=ON && cmake --build build-fuzz
 * Run:   build-fuzz/fuzz_cli_specs -max_len=512 -dict=fuzz/cli_specs.dict CORPUS_DIR
 *        (seeds: fuzz/cli_specs_seeds.sh DIR)
 */
#include "cli.h"
#include "ops/infer.h"
#include "io/io.h"
#include "onnx/onnx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- a protobuf writer for the two models ---- */
typedef struct buf {
    uint8_t p[4096];
    size_t n;
} buf;

static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > sizeof b->p) abort(); /* the models are fixed and small */
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void varint(buf *b, uint64_t v) {
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) c |= 0x80;
        put(b, &c, 1);
    } while (v);
}
static void fv(buf *b, int f, uint64_t v) { varint(b, (uint64_t)f << 3); varint(b, v); }
static void fbytes(buf *b, int f, const void *d, size_t n) { varint(b, (uint64_t)f << 3 | 2); varint(b, n); put(b, d, n); }
static void fs(buf *b, int f, const char *s) { fbytes(b, f, s, strlen(s)); }
static void fmsg(buf *b, int f, const buf *m) { fbytes(b, f, m->p, m->n); }

/* ValueInfoProto: a float tensor; dims "N" symbolic, "3" fixed; rank < 0: no shape. */
static void value_info(buf *g, int field, const char *name, int rank, const char *const *dims) {
    buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    fv(&tt, 1, 1); /* FLOAT */
    for (int i = 0; i < rank; i++) {
        buf d = {0};
        if (dims[i][0] >= '0' && dims[i][0] <= '9') fv(&d, 1, strtoull(dims[i], NULL, 10));
        else fs(&d, 2, dims[i]);
        fmsg(&sh, 1, &d);
    }
    if (rank >= 0) fmsg(&tt, 2, &sh);
    fmsg(&tp, 1, &tt);
    fs(&vi, 1, name);
    fmsg(&vi, 2, &tp);
    fmsg(g, field, &vi);
}

static void relu(buf *g, const char *in, const char *out) {
    buf n = {0};
    fs(&n, 1, in);
    fs(&n, 2, out);
    fs(&n, 4, "Relu");
    fmsg(g, 1, &n);
}

static void model_bytes(buf *m, int which) {
    buf g = {0}, op = {0};
    fs(&g, 2, "g");
    if (which == 0) {
        static const char *const x[] = {"N", "3"}, *const y[] = {"2", "M"}, *const z[] = {"M"}, *const w[] = {"2"};
        value_info(&g, 11, "x", 2, x);
        value_info(&g, 11, "y", 2, y);
        value_info(&g, 11, "z", 1, z);
        value_info(&g, 11, "a:b=c", -1, NULL);
        value_info(&g, 11, "s", 0, NULL);
        value_info(&g, 11, "w", 1, w);
        buf t = {0}; /* w's initializer: float[2] */
        fv(&t, 1, 2);
        fv(&t, 2, 1);
        fs(&t, 8, "w");
        fbytes(&t, 9, (const float[]){1, 2}, 8);
        fmsg(&g, 5, &t);
        static const char *const ins[] = {"x", "y", "z", "a:b=c", "s", "w"};
        for (int i = 0; i < 6; i++) {
            char out[16];
            snprintf(out, sizeof out, "o%d", i);
            relu(&g, ins[i], out);
            value_info(&g, 12, out, -1, NULL);
        }
    } else {
        static const char *const k[] = {"K"};
        value_info(&g, 11, "in", 1, k);
        relu(&g, "in", "out");
        value_info(&g, 12, "out", -1, NULL);
    }
    fv(&op, 2, 17);
    fv(m, 1, 8);
    fmsg(m, 7, &g);
    fmsg(m, 8, &op);
}

static lt_model *load(int which) {
    static buf bytes[2];
    if (!bytes[which].n) model_bytes(&bytes[which], which);
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_memory(&ctx, bytes[which].p, bytes[which].n, NULL, NULL, &m) != LT_OK) {
        fprintf(stderr, "fuzz_cli_specs: the built-in model %d does not load: %s\n", which, ctx.msg);
        abort();
    }
    return m;
}

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "fuzz_cli_specs: " __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                                    \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

static const lt_value *input(const lt_model *m, const char *name, size_t n) {
    for (int i = 0; i < m->graph->n_inputs; i++) {
        const char *s = m->graph->inputs[i]->name;
        if (strlen(s) == n && memcmp(s, name, n) == 0) return m->graph->inputs[i];
    }
    return NULL;
}

/* A number as strtoll reads it (the spec grammar); false when it is not one or overflows int64. */
static bool number(const char *s, const char **end, int64_t *v) {
    char *e;
    errno = 0;
    long long x = strtoll(s, &e, 10);
    *end = e;
    *v = x;
    return e != s && errno != ERANGE;
}

/* --shapes accepted: every item's dims fit in int64 and the input now has exactly that shape. */
static void check_shapes(const lt_model *m, const char *spec) {
    char *copy = strdup(spec), *save = NULL;
    if (!copy) return;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(item, ':');
        CHECK(colon && colon != item, "--shapes '%s' bound, but item '%s' has no NAME:", spec, item);
        const lt_value *v = input(m, item, (size_t)(colon - item));
        CHECK(v, "--shapes '%s' bound, but names no input in '%s'", spec, item);
        int64_t dims[LT_MAX_RANK + 1];
        int rank = 0;
        for (const char *p = colon + 1; *p && rank <= LT_MAX_RANK;) {
            const char *end;
            CHECK(number(p, &end, &dims[rank]), "--shapes '%s' bound with a dim that is not an int64 at '%s'", spec, p);
            rank++;
            p = *end ? end + 1 : end;
        }
        CHECK(v->type.kind == LT_TK_TENSOR && v->type.rank == rank, "--shapes '%s': input rank %d, spec rank %d", spec,
              v->type.rank, rank);
        for (int k = 0; k < rank; k++)
            CHECK(v->type.dims[k].value == dims[k] && !v->type.dims[k].param, "--shapes '%s': dim %d is %lld, not %lld",
                  spec, k, (long long)v->type.dims[k].value, (long long)dims[k]);
    }
    free(copy);
}

/* --dim accepted: NAME=VALUE with VALUE an int64 >= 0. */
static void check_dim(const char *spec) {
    const char *eq = strchr(spec, '='), *end;
    int64_t v;
    CHECK(eq && eq != spec, "--dim '%s' bound without NAME=", spec);
    CHECK(number(eq + 1, &end, &v) && !*end && v >= 0, "--dim '%s' bound a value that is not an int64 >= 0", spec);
}

static bool exists_yes(const char *p) { (void)p; return true; }
static bool exists_no(const char *p) { (void)p; return false; }

static void check_input_spec(const lt_model *m, const char *spec, bool file_exists) {
    const lt_graph *g = m->graph;
    cli_input_spec is;
    cli_input_spec_parse(g, spec, file_exists ? exists_yes : exists_no, &is);
    const char *eq = strchr(spec, '=');
    int n_free = 0;
    for (int i = 0; i < g->n_inputs; i++) n_free += !g->inputs[i]->init;
    switch (is.kind) {
    case CLI_INPUT_NAMED: {
        CHECK(is.input >= 0 && is.input < g->n_inputs, "--input '%s': index %d", spec, is.input);
        size_t n = strlen(g->inputs[is.input]->name);
        CHECK(is.path == spec + n + 1 && spec[n] == '=' && memcmp(spec, g->inputs[is.input]->name, n) == 0,
              "--input '%s': NAME=FILE does not split at the input's name", spec);
        break;
    }
    case CLI_INPUT_NO_SUCH_INPUT:
        CHECK(eq && !file_exists && is.name == spec && is.name_len == (size_t)(eq - spec),
              "--input '%s': no-such-input reading is wrong", spec);
        for (const char *e = eq; e; e = strchr(e + 1, '='))
            CHECK(!input(m, spec, (size_t)(e - spec)), "--input '%s': an input was named but not found", spec);
        break;
    case CLI_INPUT_NPZ_ALL:
        CHECK(is.path == spec && strlen(spec) >= 4 && (!eq || file_exists), "--input '%s': not an .npz FILE", spec);
        break;
    case CLI_INPUT_ONLY:
        CHECK(is.path == spec && n_free == 1 && is.input >= 0 && !g->inputs[is.input]->init && (!eq || file_exists),
              "--input '%s': the only input is wrong", spec);
        break;
    case CLI_INPUT_WHICH:
        CHECK(is.path == spec && n_free != 1 && is.input == -1 && (!eq || file_exists), "--input '%s': WHICH is wrong", spec);
        break;
    default: CHECK(0, "--input '%s': kind %d", spec, (int)is.kind);
    }
}

/* Escaped text: printable ASCII or well-formed UTF-8 with no controls; the same from every entry;
 * unescapes to the original. */
static void check_escape(const char *s) {
    const char *e = cli_esc(s);
    size_t n = strlen(e);
    CHECK(cli_esc_into(NULL, 0, s, false) == n, "cli_esc_into length differs from cli_esc");
    for (size_t i = 0; i < n;) {
        const unsigned char *p = (const unsigned char *)e + i;
        if (*p < 0x80) {
            CHECK(*p >= 0x20 && *p != 0x7f, "escaped text holds control byte 0x%02x", *p);
            i++;
            continue;
        }
        int len = *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : 2;
        CHECK(*p >= 0xC2 && *p <= 0xF4 && i + (size_t)len <= n, "escaped text holds a byte that is not UTF-8");
        for (int k = 1; k < len; k++) CHECK((p[k] & 0xC0) == 0x80, "escaped text holds broken UTF-8");
        CHECK(!(p[0] == 0xC2 && p[1] < 0xA0), "escaped text holds a C1 control");
        CHECK(!(p[0] == 0xE2 && p[1] == 0x80 && ((p[2] >= 0xA8 && p[2] <= 0xAE) || p[2] == 0x8E || p[2] == 0x8F)),
              "escaped text holds a direction control");
        CHECK(!(p[0] == 0xE2 && p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9), "escaped text holds an isolate");
        i += (size_t)len;
    }
    size_t caps[] = {1, 2, 5, n / 2 + 1, n, n + 1}; /* truncation: a terminated prefix */
    char *small = malloc(n + 2);
    for (size_t c = 0; small && c < sizeof caps / sizeof *caps; c++) {
        size_t cap = caps[c];
        if (cap == 0 || cap > n + 2) continue;
        memset(small, 'Z', n + 2);
        cli_esc_into(small, cap, s, false);
        size_t got = strlen(small);
        CHECK(got == (n < cap ? n : cap - 1) && memcmp(small, e, got) == 0, "cli_esc_into(%zu) is not a prefix", cap);
    }
    free(small);
    if (strchr(s, '\\')) return; /* a backslash in the name itself makes the escapes ambiguous */
    char *u = malloc(n + 1);
    size_t k = 0;
    if (!u) return;
    for (size_t i = 0; i < n; i++) {
        if (e[i] != '\\') { u[k++] = e[i]; continue; }
        char c = e[++i];
        if (c == 'n') u[k++] = '\n';
        else if (c == 't') u[k++] = '\t';
        else if (c == 'r') u[k++] = '\r';
        else {
            CHECK(c == 'x' && i + 2 < n, "unknown escape \\%c", c);
            u[k++] = (char)strtol((char[3]){e[i + 1], e[i + 2], 0}, NULL, 16);
            i += 2;
        }
    }
    u[k] = 0;
    CHECK(k == strlen(s) && strcmp(u, s) == 0, "escaped text does not unescape to the original");
    free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    int which = data[0] & 1;
    bool file_exists = data[0] & 2;
    char text[4097];
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    const char *parts[3] = {text, NULL, NULL};
    size_t end = size - 1, at = strlen(text);
    for (int k = 1; k < 3 && at < end; k++) {
        parts[k] = text + at + 1;
        at += 1 + strlen(parts[k]);
    }
    if (!parts[1]) parts[1] = parts[2] = text;
    if (!parts[2]) parts[2] = parts[1];

    lt_model *m = load(which);
    lt_ctx ctx = {0};
    if (lt_model_bind_shapes_spec(&ctx, m, parts[0]) == LT_OK) check_shapes(m, parts[0]);
    else CHECK(ctx.msg[0], "--shapes '%s' failed with no message", parts[0]);
    lt_ctx_clear(&ctx);
    if (lt_model_bind_dim_spec(&ctx, m, parts[1]) == LT_OK) check_dim(parts[1]);
    else CHECK(ctx.msg[0], "--dim '%s' failed with no message", parts[1]);
    lt_ctx_clear(&ctx);
    for (int i = 0; i < m->graph->n_inputs; i++) { /* what run and compile ask of each input next */
        int rank;
        int64_t dims[LT_MAX_RANK];
        (void)lt_io_input_shape(&ctx, m->graph->inputs[i], NULL, &rank, dims);
        lt_ctx_clear(&ctx);
    }
    check_input_spec(m, parts[2], file_exists);
    lt_model_free(m);
    for (int k = 0; k < 3; k++) check_escape(parts[k]);
    return 0;
}
