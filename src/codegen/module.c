/* module.c — a whole translation unit: header comment, prelude, kernels, kernel table, extra code.
 *
 * The prelude is src/codegen/prelude/ embedded as strings (cmake/embed.cmake). Headers are pasted
 * as text: first the language's base headers, then each optional (microkernel) header that defines
 * a function a kernel CALLs or the extra code calls; a `#include "x.h"` of another prelude header is
 * replaced by that header's text the first time and dropped after, so every header appears once.
 * Marker lines (LT_EMIT_MARK_*) delimit the microkernel headers and the end of the prelude.
 * On failure the output buffer is left as it was. Entry points: lt_emit_module,
 * lt_emit_prelude_all, lt_prelude_find.
 */
#include "codegen.h"
#include "emit_impl.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

/* ---- prelude ---- */
const lt_prelude_file *lt_prelude_find(const char *name) {
    for (int i = 0; i < lt_prelude_n_files; i++)
        if (strcmp(lt_prelude_files[i].name, name) == 0) return &lt_prelude_files[i];
    return NULL;
}

static bool matches_any(const char *const *pats, const char *name) {
    for (int i = 0; pats && pats[i]; i++)
        if (fnmatch(pats[i], name, 0) == 0) return true;
    return false;
}

/* Paste a prelude file, replacing `#include "x.h"` of another prelude file by its text (once). */
static lt_status paste(lt_ctx *ctx, const lt_prelude_file *f, bool *done, lt_strbuf *out, int depth) {
    int id = (int)(f - lt_prelude_files);
    if (done[id]) return LT_OK;
    done[id] = true;
    if (depth > 16) return lt_error(ctx, LT_ERR_INTERNAL, "prelude %s: includes nested too deeply", f->name);
    lt_sb_printf(out, "\n/* ---- prelude: %s ---- */\n", f->name);
    const char *p = f->text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *q = p;
        while (q < p + len && (*q == ' ' || *q == '\t')) q++;
        bool handled = false;
        if (q < p + len && *q == '#') {
            q++;
            while (q < p + len && (*q == ' ' || *q == '\t')) q++;
            if ((size_t)(p + len - q) > 9 && strncmp(q, "include", 7) == 0) {
                const char *a = memchr(q, '"', (size_t)(p + len - q));
                const char *b = a ? memchr(a + 1, '"', (size_t)(p + len - a - 1)) : NULL;
                if (a && b) {
                    char inc[128];
                    snprintf(inc, sizeof inc, "%.*s", (int)(b - a - 1), a + 1);
                    const char *base = strrchr(inc, '/');
                    const lt_prelude_file *g = lt_prelude_find(base ? base + 1 : inc);
                    if (!g)
                        return lt_error(ctx, LT_ERR_INTERNAL, "prelude %s includes \"%s\", which is not an "
                                        "embedded prelude header", f->name, inc);
                    LT_TRY(paste(ctx, g, done, out, depth + 1));
                    lt_sb_printf(out, "/* ---- prelude: %s (continued) ---- */\n", f->name);
                    handled = true;
                }
            }
        }
        if (!handled) lt_sb_printf(out, "%.*s\n", (int)len, p);
        p = eol ? eol + 1 : p + len;
    }
    return LT_OK;
}

/* Does text contain `name` as a whole identifier followed by '('? */
static bool defines_call(const char *text, const char *name) {
    size_t n = strlen(name);
    if (!n) return false;
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        char before = p == text ? ' ' : p[-1];
        if ((before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') || (before >= '0' && before <= '9') || before == '_')
            continue;
        const char *q = p + n;
        while (*q == ' ') q++;
        if (*q == '(') return true;
    }
    return false;
}

typedef struct call_names {
    lt_vec names;
    bool oom;
} call_names;
static bool collect_calls(const lt_lnode *n, void *user) {
    call_names *c = user;
    if (n->kind == LT_L_CALL && n->name && !lt_vec_push(&c->names, (void *)n->name)) c->oom = true;
    return true;
}

lt_status lt_emit_prelude_all(lt_ctx *ctx, const lt_lang *lang, lt_strbuf *out) {
    if (!lang || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_emit_prelude_all: missing language or output");
    bool *done = lt_calloc(ctx, (size_t)lt_prelude_n_files + 1, sizeof *done, "prelude list");
    if (!done) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    lt_sb_printf(out, "/* lathe prelude for target %s: every header. */\n", lang->name);
    for (int i = 0; lang->prelude && lang->prelude[i] && s == LT_OK; i++) {
        const lt_prelude_file *f = lt_prelude_find(lang->prelude[i]);
        s = f ? paste(ctx, f, done, out, 0)
              : lt_error(ctx, LT_ERR_INTERNAL, "prelude header %s is not embedded", lang->prelude[i]);
    }
    if (s == LT_OK) lt_sb_printf(out, "%s", LT_EMIT_MARK_MICROKERNELS);
    for (int f = 0; f < lt_prelude_n_files && s == LT_OK; f++) {
        const lt_prelude_file *pf = &lt_prelude_files[f];
        if (!done[f] && matches_any(lang->prelude_optional, pf->name) && !matches_any(lang->prelude_exclude, pf->name))
            s = paste(ctx, pf, done, out, 0);
    }
    if (s == LT_OK) lt_sb_printf(out, "%s", LT_EMIT_MARK_END_PRELUDE);
    if (s == LT_OK && out->failed) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory writing the prelude");
    lt_mem_free(done);
    return s;
}

lt_status lt_emit_module(lt_ctx *ctx, const lt_lang *lang, const lt_emit_kernel *kernels, int n,
                         const char *extra, lt_strbuf *out) {
    if (!lang || !out || n < 0 || (n > 0 && !kernels))
        return lt_error(ctx, LT_ERR_USAGE, "lt_emit_module: missing language, kernels or output");
    for (int i = 0; i < n; i++) {
        if (!kernels[i].kernel || !kernels[i].kernel->name)
            return lt_error(ctx, LT_ERR_USAGE, "lt_emit_module: kernel %d is missing or has no name", i);
        for (int j = 0; j < i; j++)
            if (strcmp(kernels[i].kernel->name, kernels[j].kernel->name) == 0)
                return lt_error(ctx, LT_ERR_INVALID, "lt_emit_module: two kernels are named %s", kernels[i].kernel->name);
    }
    size_t start = out->len;
    bool *done = lt_calloc(ctx, (size_t)lt_prelude_n_files + 1, sizeof *done, "prelude list");
    if (!done) return LT_ERR_NOMEM;
    call_names calls = {{0}, false};
    lt_status s = LT_OK;

    lt_sb_printf(out, "/* Generated by lathe for target %s: %d kernel%s.\n * Build: %s\n */\n", lang->name, n,
                 n == 1 ? "" : "s", lang->build_note);
    if (lang->preamble) lt_sb_printf(out, "%s", lang->preamble);
    for (int i = 0; lang->prelude && lang->prelude[i] && s == LT_OK; i++) {
        const lt_prelude_file *f = lt_prelude_find(lang->prelude[i]);
        s = f ? paste(ctx, f, done, out, 0)
              : lt_error(ctx, LT_ERR_INTERNAL, "prelude header %s is not embedded (check cmake/embed.cmake)",
                         lang->prelude[i]);
    }
    /* optional headers: those defining a function a kernel or the extra code calls */
    bool any_optional = false;
    for (int i = 0; i < n; i++) lt_lwalk(kernels[i].kernel->body, collect_calls, &calls);
    if (calls.oom) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory listing calls");
    for (int f = 0; f < lt_prelude_n_files && s == LT_OK; f++) {
        const lt_prelude_file *pf = &lt_prelude_files[f];
        if (done[f] || !matches_any(lang->prelude_optional, pf->name) || matches_any(lang->prelude_exclude, pf->name))
            continue;
        bool used = false;
        for (int c = 0; c < calls.names.n && !used; c++) used = defines_call(pf->text, calls.names.items[c]);
        /* extra code: any lt_ identifier it calls */
        for (const char *p = extra ? strstr(extra, "lt_") : NULL; p && !used; p = strstr(p + 1, "lt_")) {
            char id[96];
            size_t len = 0;
            while (len + 1 < sizeof id && ((p[len] >= 'a' && p[len] <= 'z') || (p[len] >= 'A' && p[len] <= 'Z') ||
                                           (p[len] >= '0' && p[len] <= '9') || p[len] == '_'))
                id[len] = p[len], len++;
            id[len] = 0;
            used = defines_call(pf->text, id) && defines_call(extra, id);
        }
        if (used && !any_optional) {
            lt_sb_printf(out, "%s", LT_EMIT_MARK_MICROKERNELS);
            any_optional = true;
        }
        if (used) s = paste(ctx, pf, done, out, 0);
    }
    lt_sb_printf(out, "%s", LT_EMIT_MARK_END_PRELUDE);

    if (s == LT_OK) s = lt_emit_kernels_(ctx, lang, kernels, n, out);

    if (s == LT_OK && lang->kernel_table) {
        lt_sb_printf(out, "\nconst lt_kernel_desc lathe_kernels[] = {\n");
        for (int i = 0; i < n; i++) { /* the names are identifiers (emit.c checked them) */
            lt_sb_printf(out, "    {");
            lt_c_quote(out, kernels[i].kernel->name, 0);
            const lt_kernel *k = kernels[i].kernel;
            lt_sb_printf(out, ", %s, %d, %d},\n", k->name, k->n_args + k->n_scalars, k->n_scalars);
        }
        lt_sb_printf(out, "    {0, 0, 0, 0},\n};\nconst int lathe_n_kernels = %d;\n", n);
    }
    if (s == LT_OK && extra) lt_sb_printf(out, "\n%s%s", extra, extra[0] && extra[strlen(extra) - 1] != '\n' ? "\n" : "");
    if (s == LT_OK && out->failed) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory writing the generated module");
    if (s != LT_OK && !out->failed && out->s) { /* leave `out` as it was */
        out->len = start;
        out->s[start] = 0;
    }
    lt_vec_free(&calls.names);
    lt_mem_free(done);
    return s;
}
