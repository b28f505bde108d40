/* cpu_split.c — the shared prelude library: compile the microkernel headers once, not per model.
 *
 * The GEMM / convolution microkernels (prelude gemm.h, conv.h) take seconds to compile and are the
 * same for every model; pasted into each model's translation unit they dominated cold compiles
 * (~4 s of CPU for gemm.h alone). So the CPU backend builds one shared library per (prelude text,
 * flags, compiler, CPU) in the cache directory, holding every header with LT_PRELUDE_LIBRARY set and
 * an exported wrapper per public microkernel function:
 *     RET lt_pl_<f>(int threads, PARAMS) { lt_threads_ = threads; return <f>(ARGS); }
 * and compiles each model's TU without the microkernel headers, with forwarding stubs instead:
 *     RET lt_pl_<f>(int threads, PARAMS);
 *     LT_FN RET <f>(PARAMS) { return lt_pl_<f>(lt_threads_, ARGS); }
 * linked against the library (DT_NEEDED by absolute path). The module's thread count travels with
 * each call (the library keeps it per calling thread), so modules with different counts share it.
 * Public functions: `LT_FN RET lt_name(PARAMS) {` definitions in the microkernel section whose
 * name does not end in '_' (the prelude's convention for internals) and whose parameters are named
 * declarations of C / <stdint.h> types (a struct of the header would not exist in the module). Anything unexpected makes lt_cpu_split_module decline, and the backend
 * compiles the module whole, as emitted: the split is an optimization that never changes results.
 */
#include <stdio.h>
#include <string.h>

#include "../../codegen/codegen.h"
#include "cpu_impl.h"

typedef struct pl_fn {
    const char *ret, *name, *params; /* spans in the library source */
    int ret_len, name_len, params_len;
    char args[512];                  /* the parameter names, comma-separated */
    bool plain;                      /* all types are C's or <stdint.h>'s: forwardable */
} pl_fn;

static bool is_id(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Do the words of a declaration (minus its last identifier, the name, when named) use only types
 * the module's own prelude knows? A struct of the microkernel header would not compile there. */
static bool plain_words(const char *p, const char *end) {
    static const char *const ok[] = {"const", "restrict", "__restrict", "__restrict__", "volatile", "void", "char",
                                     "short", "int", "long", "unsigned", "signed", "float", "double", "size_t",
                                     "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                                     "uint32_t", "uint64_t", "_Bool", NULL};
    while (p < end) {
        if (!is_id(*p)) { p++; continue; }
        const char *b = p;
        while (p < end && is_id(*p)) p++;
        bool known = false;
        for (int i = 0; ok[i] && !known; i++) known = (size_t)(p - b) == strlen(ok[i]) && strncmp(b, ok[i], (size_t)(p - b)) == 0;
        if (!known) return false;
    }
    return true;
}

/* Parse `LT_FN RET name(PARAMS) {` at p (a line start); false if it is not a forwardable definition. */
static bool parse_fn(const char *p, pl_fn *f) {
    if (strncmp(p, "LT_FN ", 6) != 0) return false;
    const char *ret = p + 6, *open = strchr(ret, '(');
    if (!open) return false;
    const char *ne = open;
    while (ne > ret && ne[-1] == ' ') ne--;
    const char *nb = ne;
    while (nb > ret && is_id(nb[-1])) nb--;
    if (nb == ne || ne - nb < 4 || strncmp(nb, "lt_", 3) != 0 || ne[-1] == '_') return false;
    for (const char *q = ret; q < nb; q++)
        if (*q == '\n' || *q == '\\' || *q == '#' || *q == ';' || *q == '{') return false;
    const char *close = open + 1;
    int depth = 1;
    for (; *close && depth; close++) {
        if (*close == '(') depth++;
        if (*close == ')') depth--;
        if (*close == '[' || *close == ';' || *close == '{' || *close == '\\' || *close == '#') return false;
    }
    if (depth || close - open - 2 < 0) return false;
    close--; /* at ')' */
    const char *after = close + 1;
    while (*after == ' ' || *after == '\n') after++;
    if (*after != '{') return false; /* a prototype, or an attribute we do not know */
    /* parameter names: the last identifier of each comma-separated declaration */
    size_t na = 0;
    f->plain = plain_words(ret, nb);
    f->args[0] = 0;
    const char *q = open + 1;
    while (q < close) {
        const char *e = q;
        int d = 0;
        while (e < close && (d || *e != ',')) {
            if (*e == '(') d++;
            if (*e == ')') d--;
            e++;
        }
        const char *ie = e;
        while (ie > q && !is_id(ie[-1])) ie--;
        const char *ib = ie;
        while (ib > q && is_id(ib[-1])) ib--;
        if (ie == ib) return false;
        if (ie - ib == 4 && strncmp(ib, "void", 4) == 0 && q == open + 1 && e == close) break; /* (void) */
        const char *t = q; /* an unnamed parameter is a lone type: the name must follow a type */
        while (t < ib && (*t == ' ' || *t == '\n')) t++;
        if (t == ib) return false;
        if (!plain_words(q, ib)) f->plain = false;
        int w = snprintf(f->args + na, sizeof f->args - na, "%s%.*s", na ? ", " : "", (int)(ie - ib), ib);
        if (w < 0 || (size_t)w >= sizeof f->args - na) return false;
        na += (size_t)w;
        q = e < close ? e + 1 : close;
    }
    f->ret = ret;
    f->ret_len = (int)(nb - ret);
    while (f->ret_len > 0 && ret[f->ret_len - 1] == ' ') f->ret_len--;
    f->name = nb;
    f->name_len = (int)(ne - nb);
    f->params = open + 1;
    f->params_len = (int)(close - open - 1);
    return f->ret_len > 0;
}

static bool returns_void(const pl_fn *f) { return f->ret_len == 4 && strncmp(f->ret, "void", 4) == 0; }

/* Call fn on each public function of the microkernel section of `lib`; stops when fn returns false. */
static bool each_fn(const char *lib, bool (*fn)(const pl_fn *, void *), void *user) {
    const char *p = strstr(lib, LT_EMIT_MARK_MICROKERNELS);
    const char *end = p ? strstr(p, LT_EMIT_MARK_END_PRELUDE) : NULL;
    if (!p || !end) return false;
    for (; p && p < end; p = strchr(p, '\n')) {
        p++;
        pl_fn f;
        if (parse_fn(p, &f) && !fn(&f, user)) return false;
    }
    return true;
}

static bool add_wrapper(const pl_fn *f, void *user) {
    lt_strbuf *o = user;
    if (!f->plain) return true;
    lt_sb_printf(o, "__attribute__((visibility(\"default\"))) %.*s lt_pl_%.*s(int lt_nt_%s%.*s) {\n", f->ret_len, f->ret,
                 f->name_len, f->name, f->params_len ? ", " : "", f->params_len, f->params);
    lt_sb_printf(o, "    lt_threads_ = lt_nt_;\n    %s%.*s(%s);\n}\n", returns_void(f) ? "" : "return ", f->name_len,
                 f->name, f->args);
    return true;
}

lt_status lt_cpu_prelude_library_source(lt_ctx *ctx, lt_strbuf *out) {
    lt_sb_printf(out, "#define LT_PRELUDE_LIBRARY 1\n");
    LT_TRY(lt_emit_prelude_all(ctx, &lt_lang_c, out));
    lt_sb_printf(out, "\n/* ---- exported entry points (lt_pl_<name>: thread count, then the arguments) ---- */\n");
    if (out->s) {
        /* add_wrapper appends to `out`, which may move its text: walk a copy (reading out->s while
         * it grows was a use-after-free that crashed compiles at random). */
        char *text = lt_mem_strdup(out->s);
        if (!text) return lt_error(ctx, LT_ERR_NOMEM, "out of memory writing the prelude library");
        each_fn(text, add_wrapper, out);
        lt_mem_free(text);
    }
    if (out->failed) return lt_error(ctx, LT_ERR_NOMEM, "out of memory writing the prelude library");
    return LT_OK;
}

typedef struct stub_ctx {
    const char *kernels; /* the module's text after its prelude */
    lt_strbuf *out;
    int n;
    bool bad; /* a called function cannot be forwarded */
} stub_ctx;

/* Is `name(` called in text (as a whole identifier)? */
static bool calls(const char *text, const char *name, int len) {
    for (const char *p = strstr(text, "lt_"); p; p = strstr(p + 1, "lt_")) {
        if ((p > text && is_id(p[-1])) || strncmp(p, name, (size_t)len) != 0 || is_id(p[len])) continue;
        const char *q = p + len;
        while (*q == ' ') q++;
        if (*q == '(') return true;
    }
    return false;
}

static bool add_stub(const pl_fn *f, void *user) {
    stub_ctx *s = user;
    if (!calls(s->kernels, f->name, f->name_len)) return true;
    if (!f->plain) {
        s->bad = true;
        return false;
    }
    lt_sb_printf(s->out, "%.*s lt_pl_%.*s(int lt_nt_%s%.*s);\n", f->ret_len, f->ret, f->name_len, f->name,
                 f->params_len ? ", " : "", f->params_len, f->params);
    lt_sb_printf(s->out, "LT_FN %.*s %.*s(%.*s) {\n    %slt_pl_%.*s(lt_threads_%s%s);\n}\n", f->ret_len, f->ret, f->name_len,
                 f->name, f->params_len ? f->params_len : 4, f->params_len ? f->params : "void",
                 returns_void(f) ? "" : "return ", f->name_len, f->name, f->args[0] ? ", " : "", f->args);
    s->n++;
    return true;
}

bool lt_cpu_split_module(const char *source, const char *library_source, lt_strbuf *out) {
    const char *mk = strstr(source, LT_EMIT_MARK_MICROKERNELS);
    const char *end = mk ? strstr(mk, LT_EMIT_MARK_END_PRELUDE) : NULL;
    if (!mk || !end) return false;
    const char *kernels = end + strlen(LT_EMIT_MARK_END_PRELUDE);
    lt_sb_printf(out, "%.*s", (int)(mk - source), source);
    lt_sb_printf(out, "\n/* ---- microkernels: in the shared prelude library (see src/backend/cpu/cpu_split.c) ---- */\n");
    stub_ctx s = {kernels, out, 0, false};
    if (!each_fn(library_source, add_stub, &s) || s.bad || s.n == 0) return false;
    lt_sb_printf(out, "%s%s", LT_EMIT_MARK_END_PRELUDE, kernels);
    return !out->failed;
}
