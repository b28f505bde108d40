/* artifact.c — .lathe artifacts (see artifact.h): the container's writer and reader, every check a
 * loaded file goes through before its module is used (structure, section hashes, meta keys, the
 * machine), and the glue to the compile (recorded options, the prebuilt module).
 *
 * The reader treats the file as hostile: every length is compared with the bytes left before it is
 * used, the section count is capped, each section is hashed before its contents are looked at, and
 * every error is one line naming the file and the byte offset. Nothing here runs a compiler, except
 * the offline build of a module when saving with no device (lt_artifact_offline_build: NVRTC).
 */
#include "artifact.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../backend/cpu/cpu.h"
#include "../backend/cuda/cuda.h"
#include "../base/file.h"
#include "../base/hash.h"
#include "../onnx/onnx.h"
#include "../ops/infer.h"

#ifndef LATHE_VERSION
#define LATHE_VERSION "0.0.0"
#endif

#define HEADER_BYTES 16u  /* magic, version, section count */
#define SECTION_HEAD 48u  /* tag, length, SHA-256 */

static const char *const tags[] = {"meta", "model", "module"};
enum { SEC_META, SEC_MODEL, SEC_MODULE, SEC_COUNT };

bool lt_artifact_is_data(const void *data, size_t size) {
    return data && size >= 8 && memcmp(data, LT_ARTIFACT_MAGIC, 8) == 0;
}

bool lt_artifact_is_file(const char *path) {
    if (!path) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char head[8];
    bool is = fread(head, 1, sizeof head, f) == sizeof head && lt_artifact_is_data(head, sizeof head);
    fclose(f);
    return is;
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* One line: "<name>: byte <off>: <message> (not a valid .lathe artifact...)". */
static lt_status bad(lt_ctx *ctx, const char *name, size_t off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static lt_status bad(lt_ctx *ctx, const char *name, size_t off, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_error(ctx, LT_ERR_INVALID, "%s: byte %zu: %s", name, off, msg);
}

void lt_artifact_free(lt_artifact *a) {
    if (!a) return;
    lt_mem_free(a->name);
    lt_mem_free(a->data);
    lt_mem_free(a->meta);
    lt_mem_free(a->cpu_features);
    lt_mem_free(a->enable);
    lt_mem_free(a->disable);
    for (char **g = a->given; g && *g; g++) lt_mem_free(*g);
    lt_mem_free(a->given);
    lt_mem_free(a->shapes);
    lt_mem_free(a);
}

/* ---- meta: key=value lines; values escaped (%XX for '%', controls and DEL) ---- */

static void put_escaped(lt_strbuf *b, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '%') lt_sb_printf(b, "%%%02X", *p);
        else lt_sb_printf(b, "%c", *p);
    }
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The unescaped copy of v[0..n) (heap), NULL on a bad escape or NUL or no memory (*bad_escape says which). */
static char *unescape(const char *v, size_t n, bool *bad_escape) {
    char *out = lt_mem_alloc(n + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] != '%') {
            out[k++] = v[i];
            continue;
        }
        int a = i + 1 < n ? hexval(v[i + 1]) : -1, c = i + 2 < n ? hexval(v[i + 2]) : -1;
        if (a < 0 || c < 0 || (a == 0 && c == 0)) {
            lt_mem_free(out);
            *bad_escape = true;
            return NULL;
        }
        out[k++] = (char)(a * 16 + c);
        i += 2;
    }
    out[k] = 0;
    return out;
}

static bool parse_int(const char *v, size_t n, int lo, int hi, int *out) {
    if (n == 0 || n > 10) return false;
    long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') return false;
        x = x * 10 + (v[i] - '0');
    }
    if (x < lo || x > hi) return false;
    *out = (int)x;
    return true;
}

static bool is_hex64(const char *v, size_t n) {
    if (n != 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f'))) return false;
    return true;
}

/* "<pos>:<d0>x<d1>..." ("<pos>:" a scalar). */
static bool parse_shape(const char *v, size_t n, lt_artifact_shape *s) {
    const char *colon = memchr(v, ':', n);
    if (!colon || !parse_int(v, (size_t)(colon - v), 0, 1 << 20, &s->input)) return false;
    s->rank = 0;
    const char *p = colon + 1, *end = v + n;
    while (p < end) {
        if (s->rank == LT_MAX_RANK) return false;
        const char *x = memchr(p, 'x', (size_t)(end - p));
        const char *e = x ? x : end;
        if (e == p || e - p > 18) return false;
        int64_t d = 0;
        for (const char *q = p; q < e; q++) {
            if (*q < '0' || *q > '9') return false;
            d = d * 10 + (*q - '0');
        }
        s->dims[s->rank++] = d;
        p = x ? x + 1 : end;
        if (x && p == end) return false;
    }
    return true;
}

static bool copy_field(char *dst, size_t cap, const char *v, size_t n) {
    if (n >= cap || memchr(v, 0, n)) return false;
    memcpy(dst, v, n);
    dst[n] = 0;
    return true;
}

static lt_status parse_meta(lt_ctx *ctx, lt_artifact *a, size_t base) {
    const char *t = a->meta, *name = a->name;
    bool have_format = false, have_source = false, have_module = false;
    int n_given = 0, n_shapes = 0;
    for (const char *p = t; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        n_given += strncmp(p, "given=", 6) == 0, n_shapes += strncmp(p, "input=", 6) == 0;
    a->given = lt_calloc(ctx, (size_t)n_given + 1, sizeof *a->given, "artifact given inputs");
    a->shapes = lt_calloc(ctx, (size_t)n_shapes + 1, sizeof *a->shapes, "artifact input shapes");
    if (!a->given || !a->shapes) return LT_ERR_NOMEM;
    int ng = 0;
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        size_t off = base + (size_t)(p - t);
        const char *eq = memchr(p, '=', len);
        if (!eq) return bad(ctx, name, off, "meta line without '=': '%.40s'", p);
        size_t kl = (size_t)(eq - p), vl = len - kl - 1;
        const char *v = eq + 1;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(p, k, kl) == 0)
        bool ok = true, esc = false;
        int flag = 0;
        if (KEY("format")) {
            int f = 0;
            ok = parse_int(v, vl, 0, 1 << 30, &f);
            if (ok && (unsigned)f != LT_ARTIFACT_VERSION)
                return bad(ctx, name, off, "meta format %d; this lathe reads format %u", f, LT_ARTIFACT_VERSION);
            have_format = ok;
        } else if (KEY("lathe_version")) ok = copy_field(a->version, sizeof a->version, v, vl);
        else if (KEY("backend")) ok = copy_field(a->backend, sizeof a->backend, v, vl) && vl > 0;
        else if (KEY("machine")) ok = copy_field(a->machine, sizeof a->machine, v, vl);
        else if (KEY("arch")) ok = copy_field(a->arch, sizeof a->arch, v, vl);
        else if (KEY("opt_level")) ok = parse_int(v, vl, 0, 3, &a->opt_level);
        else if (KEY("threads")) ok = parse_int(v, vl, 1, 4096, &a->threads);
        else if (KEY("vector_lanes")) ok = parse_int(v, vl, 1, 1024, &a->vector_lanes);
        else if (KEY("stop_after")) ok = parse_int(v, vl, 0, 1 << 30, &a->stop_after);
        else if (KEY("no_microkernels")) ok = parse_int(v, vl, 0, 1, &flag), a->no_microkernels = flag;
        else if (KEY("no_fusion")) ok = parse_int(v, vl, 0, 1, &flag), a->no_fusion = flag;
        else if (KEY("no_epilogues")) ok = parse_int(v, vl, 0, 1, &flag), a->no_epilogues = flag;
        else if (KEY("all_host")) ok = parse_int(v, vl, 0, 1, &flag), a->all_host = flag;
        else if (KEY("keep_initializer_inputs")) ok = parse_int(v, vl, 0, 1, &flag), a->keep_initializer_inputs = flag;
        else if (KEY("enable") || KEY("disable")) {
            char **dst = KEY("enable") ? &a->enable : &a->disable;
            lt_mem_free(*dst);
            *dst = vl ? unescape(v, vl, &esc) : NULL;
            ok = !vl || *dst;
        } else if (KEY("given")) {
            ok = (a->given[ng] = unescape(v, vl, &esc)) != NULL;
            ng += ok;
        } else if (KEY("input")) {
            ok = parse_shape(v, vl, &a->shapes[a->n_shapes]);
            a->n_shapes += ok;
        } else if (KEY("cpu_model")) {
            char *m = unescape(v, vl, &esc);
            ok = m && copy_field(a->cpu_model, sizeof a->cpu_model, m, strlen(m) > 127 ? 127 : strlen(m));
            lt_mem_free(m);
        } else if (KEY("cpu_features")) {
            lt_mem_free(a->cpu_features);
            ok = (a->cpu_features = unescape(v, vl, &esc)) != NULL;
        } else if (KEY("source_sha256")) {
            ok = is_hex64(v, vl) && copy_field(a->module.source_sha256, 65, v, vl);
            have_source = ok;
        } else if (KEY("module_sha256")) {
            ok = is_hex64(v, vl) && copy_field(a->module.image_sha256, 65, v, vl);
            have_module = ok;
        } else {
            return bad(ctx, name, off, "unknown meta key '%.*s' (written by another lathe version?)", (int)(kl > 40 ? 40 : kl), p);
        }
#undef KEY
        if (!ok && !esc && ctx->status == LT_ERR_NOMEM) return LT_ERR_NOMEM;
        if (!ok) return bad(ctx, name, off, "bad meta value for '%.*s'", (int)(kl > 40 ? 40 : kl), p);
        p = nl ? nl + 1 : p + len;
    }
    if (!have_format) return bad(ctx, name, base, "meta has no format line");
    if (!a->backend[0]) return bad(ctx, name, base, "meta names no backend");
    if (!have_source) return bad(ctx, name, base, "meta has no source_sha256");
    if (a->threads <= 0 || a->vector_lanes <= 0) return bad(ctx, name, base, "meta lacks threads or vector_lanes");
    if ((a->module.image != NULL) != have_module)
        return bad(ctx, name, base, "meta and sections disagree on the module (module_sha256 %s, module section %s)",
                   have_module ? "given" : "missing", a->module.image ? "present" : "absent");
    if (a->module.image) {
        char sha[65];
        lt_sha256_hex(a->module.image, a->module.image_size, sha);
        if (strcmp(sha, a->module.image_sha256) != 0)
            return bad(ctx, name, base, "meta's module_sha256 is not the module section's hash");
    }
    if (!a->cpu_features && !(a->cpu_features = lt_mem_strdup(""))) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    return LT_OK;
}

/* ---- the container ---- */

lt_status lt_artifact_parse(lt_ctx *ctx, const char *name, const void *data, size_t size, lt_artifact **out) {
    if (!name) name = "(artifact)";
    if (!data || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_artifact_parse: no data or output");
    const uint8_t *d = data;
    if (size < 8 || memcmp(d, LT_ARTIFACT_MAGIC, 8) != 0)
        return bad(ctx, name, 0, "not a .lathe artifact (no \"" LT_ARTIFACT_MAGIC "\" magic)");
    if (size < HEADER_BYTES) return bad(ctx, name, size, "truncated artifact: the header needs %u bytes, the file has %zu", HEADER_BYTES, size);
    uint32_t version = rd32(d + 8), n = rd32(d + 12);
    if (version != LT_ARTIFACT_VERSION)
        return bad(ctx, name, 8, "artifact format %u; this lathe reads format %u (save it again with this lathe)", version,
                   LT_ARTIFACT_VERSION);
    if (n == 0 || n > LT_ARTIFACT_MAX_SECTIONS) return bad(ctx, name, 12, "%u sections (1 to %d expected)", n, LT_ARTIFACT_MAX_SECTIONS);
    lt_artifact *a = lt_calloc(ctx, 1, sizeof *a, "artifact");
    if (!a) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    a->name = lt_mem_strdup(name);
    a->data = lt_mem_alloc(size ? size : 1);
    if (!a->name || !a->data) {
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu bytes of artifact)", size);
        goto fail;
    }
    memcpy(a->data, d, size);
    a->size = size;
    d = a->data;
    size_t off = HEADER_BYTES, meta_off = 0;
    const uint8_t *sec[SEC_COUNT] = {0};
    size_t sec_len[SEC_COUNT] = {0};
    int last = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (size - off < SECTION_HEAD) {
            s = bad(ctx, name, off, "truncated artifact: section %u's header needs %u bytes, %zu left", i, SECTION_HEAD, size - off);
            goto fail;
        }
        char tag[9];
        memcpy(tag, d + off, 8);
        tag[8] = 0;
        int which = -1;
        for (int k = 0; k < SEC_COUNT; k++)
            if (memcmp(d + off, tags[k], strlen(tags[k])) == 0 && strlen(tags[k]) < 9 &&
                !memcmp(d + off + strlen(tags[k]), "\0\0\0\0\0\0\0\0", 8 - strlen(tags[k])))
                which = k;
        if (which < 0) {
            for (int k = 0; k < 8; k++)
                if ((unsigned char)tag[k] < 0x20 || (unsigned char)tag[k] > 0x7e) tag[k] = tag[k] ? '?' : 0;
            s = bad(ctx, name, off, "unknown section tag '%s'", tag);
            goto fail;
        }
        if (which <= last) {
            s = bad(ctx, name, off, "section '%s' repeated or out of order", tags[which]);
            goto fail;
        }
        last = which;
        uint64_t len = rd64(d + off + 8);
        size_t body = off + SECTION_HEAD;
        if (len > (uint64_t)(size - body)) {
            s = bad(ctx, name, off + 8, "section '%s' claims %llu bytes but only %zu follow (truncated or corrupt artifact)",
                    tags[which], (unsigned long long)len, size - body);
            goto fail;
        }
        char want[65], got[65];
        for (int k = 0; k < 32; k++) snprintf(want + 2 * k, 3, "%02x", d[off + 16 + k]);
        lt_sha256_hex(d + body, (size_t)len, got);
        if (strcmp(want, got) != 0) {
            s = lt_error(ctx, LT_ERR_INVALID,
                         "%s: byte %zu: section '%s' (%llu bytes) fails its SHA-256 check: the file is corrupt or was "
                         "modified", name, body, tags[which], (unsigned long long)len);
            goto fail;
        }
        sec[which] = d + body;
        sec_len[which] = (size_t)len;
        if (which == SEC_META) meta_off = body;
        off = body + (size_t)len;
    }
    if (off != size) {
        s = bad(ctx, name, off, "%zu bytes after the last section", size - off);
        goto fail;
    }
    if (!sec[SEC_META] || !sec[SEC_MODEL]) {
        s = bad(ctx, name, HEADER_BYTES, "artifact lacks its '%s' section", !sec[SEC_META] ? "meta" : "model");
        goto fail;
    }
    if (memchr(sec[SEC_META], 0, sec_len[SEC_META])) {
        s = bad(ctx, name, meta_off, "meta holds a NUL byte");
        goto fail;
    }
    a->model = sec[SEC_MODEL];
    a->model_size = sec_len[SEC_MODEL];
    if (sec[SEC_MODULE]) {
        if (!sec_len[SEC_MODULE]) {
            s = bad(ctx, name, HEADER_BYTES, "the module section is empty");
            goto fail;
        }
        a->module.image = (uint8_t *)sec[SEC_MODULE];
        a->module.image_size = sec_len[SEC_MODULE];
    }
    if (!(a->meta = lt_mem_alloc(sec_len[SEC_META] + 1))) {
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (artifact meta)");
        goto fail;
    }
    memcpy(a->meta, sec[SEC_META], sec_len[SEC_META]);
    a->meta[sec_len[SEC_META]] = 0;
    if ((s = parse_meta(ctx, a, meta_off)) != LT_OK) goto fail;
    *out = a;
    return LT_OK;
fail:
    lt_artifact_free(a);
    return s;
}

static void this_machine(char *buf, size_t n) {
    struct utsname u;
    snprintf(buf, n, "%s", uname(&u) == 0 ? u.machine : "");
}

lt_status lt_artifact_check_machine(lt_ctx *ctx, const lt_artifact *a) {
    char mach[65];
    this_machine(mach, sizeof mach);
    if (a->machine[0] && strcmp(a->machine, mach) != 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: built for %s machines; this one is %s", a->name, a->machine, mach);
    if (!a->cpu_features || !a->cpu_features[0]) return LT_OK;
    lt_strbuf have = {0}, missing = {0};
    lt_cpu_isa_features(&have, NULL);
    const char *h = have.s ? have.s : "";
    int n_missing = 0;
    for (const char *p = a->cpu_features; *p;) {
        size_t len = strcspn(p, " ");
        bool found = false;
        for (const char *q = h; *q && !found;) {
            size_t ql = strcspn(q, " ");
            found = ql == len && strncmp(q, p, len) == 0;
            q += ql;
            q += strspn(q, " ");
        }
        if (!found && len) {
            lt_sb_printf(&missing, "%s%.*s", n_missing ? " " : "", (int)len, p);
            n_missing++;
        }
        p += len;
        p += strspn(p, " ");
    }
    lt_status s = LT_OK;
    if (n_missing)
        s = lt_error(ctx, LT_ERR_UNSUPPORTED,
                     "%s: this CPU lacks %s %s the artifact's module was built for (on '%s'); save the artifact on a "
                     "machine without %s", a->name, n_missing == 1 ? "the feature" : "the features",
                     missing.s ? missing.s : "?", a->cpu_model[0] ? a->cpu_model : "?", n_missing == 1 ? "it" : "them");
    lt_sb_free(&have);
    lt_sb_free(&missing);
    return s;
}

lt_status lt_artifact_open(lt_ctx *ctx, const char *path, lt_artifact **out) {
    uint8_t *data = NULL;
    size_t size = 0;
    LT_TRY(lt_io_read_file(ctx, path, &data, &size));
    lt_artifact *a = NULL;
    lt_status s = lt_artifact_parse(ctx, path, data, size, &a);
    lt_mem_free(data);
    if (s == LT_OK && (s = lt_artifact_check_machine(ctx, a)) != LT_OK) {
        lt_artifact_free(a);
        return s;
    }
    if (s == LT_OK) *out = a;
    return s;
}

lt_status lt_artifact_load_model(lt_ctx *ctx, const lt_artifact *a, lt_model **out) {
    lt_model *m = NULL;
    lt_ctx c2 = {0};
    if (lt_onnx_load_memory(&c2, a->model, a->model_size, NULL, NULL, &m) != LT_OK)
        return lt_error(ctx, c2.status, "%s: its model section: %s", a->name, c2.msg);
    const lt_graph *g = m->graph;
    for (int i = 0; i < a->n_shapes; i++) {
        const lt_artifact_shape *sh = &a->shapes[i];
        if (sh->input >= g->n_inputs) {
            lt_model_free(m);
            return lt_error(ctx, LT_ERR_INVALID, "%s: meta binds input %d, the model has %d", a->name, sh->input, g->n_inputs);
        }
        if (lt_model_bind_shape(&c2, m, g->inputs[sh->input]->name, sh->rank, sh->dims) != LT_OK) {
            lt_model_free(m);
            return lt_error(ctx, c2.status, "%s: binding its recorded shapes: %s", a->name, c2.msg);
        }
    }
    *out = m;
    return LT_OK;
}

void lt_artifact_compile_options(const lt_artifact *a, lt_compile_options *o) {
    o->backend = a->backend;
    o->opt_level = a->opt_level;
    o->threads = a->threads;
    o->vector_lanes = a->vector_lanes;
    o->no_microkernels = a->no_microkernels;
    o->no_fusion = a->no_fusion;
    o->no_epilogues = a->no_epilogues;
    o->all_host = a->all_host;
    o->keep_initializer_inputs = a->keep_initializer_inputs;
    o->stop_after = a->stop_after;
    o->enable = a->enable;
    o->disable = a->disable;
    o->arch = a->arch[0] ? a->arch : NULL;
    o->given_inputs = (const char *const *)a->given;
    o->schedule_hook = NULL;
    o->schedule_user = NULL;
    o->tuned_passes = NULL;
    o->stop_after_stage = NULL;
    o->emit_only = false;
    o->save_prebuilt = NULL;
    o->prebuilt = &a->module;
}

/* ---- saving ---- */

lt_status lt_artifact_meta(lt_ctx *ctx, const lt_model *m, const lt_compile_options *o, lt_strbuf *meta) {
    const char *backend = o->backend ? o->backend : "cpu";
    if (o->emit_only || o->stop_after_stage)
        return lt_error(ctx, LT_ERR_USAGE, "an artifact needs a whole compile (no emit-only, no stop after a stage)");
    lt_target t;
    lt_target_options to = {.threads = o->threads, .vector_lanes = o->vector_lanes, .arch = o->arch,
                            .no_microkernels = o->no_microkernels};
    LT_TRY(lt_backend_target_named(ctx, backend, &to, &t));
    char mach[65];
    this_machine(mach, sizeof mach);
    lt_sb_printf(meta, "format=%u\nlathe_version=%s\nbackend=%s\nmachine=%s\n", LT_ARTIFACT_VERSION, LATHE_VERSION,
                 backend, mach);
    lt_sb_printf(meta, "opt_level=%d\nthreads=%d\nvector_lanes=%d\nstop_after=%d\n", o->opt_level,
                 lt_target_threads(o->threads), t.vector_lanes, o->stop_after > 0 ? o->stop_after : 0);
    lt_sb_printf(meta, "no_microkernels=%d\nno_fusion=%d\nno_epilogues=%d\nall_host=%d\nkeep_initializer_inputs=%d\n",
                 o->no_microkernels, o->no_fusion, o->no_epilogues, o->all_host, o->keep_initializer_inputs);
    if (o->enable && *o->enable) lt_sb_printf(meta, "enable="), put_escaped(meta, o->enable), lt_sb_printf(meta, "\n");
    if (o->disable && *o->disable) lt_sb_printf(meta, "disable="), put_escaped(meta, o->disable), lt_sb_printf(meta, "\n");
    if (o->arch) lt_sb_printf(meta, "arch="), put_escaped(meta, o->arch), lt_sb_printf(meta, "\n");
    for (const char *const *g = o->given_inputs; g && *g; g++) lt_sb_printf(meta, "given="), put_escaped(meta, *g), lt_sb_printf(meta, "\n");
    const lt_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (v->init || v->type.kind != LT_TK_TENSOR || v->type.rank < 0) continue;
        bool known = true;
        for (int k = 0; k < v->type.rank; k++) known &= v->type.dims[k].value >= 0;
        if (!known) continue;
        lt_sb_printf(meta, "input=%d:", i);
        for (int k = 0; k < v->type.rank; k++) lt_sb_printf(meta, "%s%lld", k ? "x" : "", (long long)v->type.dims[k].value);
        lt_sb_printf(meta, "\n");
    }
    if (!t.gpu_blocks) { /* the module is native code built with -march=native */
        lt_strbuf feat = {0}, model = {0};
        lt_cpu_isa_features(&feat, &model);
        lt_sb_printf(meta, "cpu_model="), put_escaped(meta, model.s ? model.s : ""), lt_sb_printf(meta, "\n");
        lt_sb_printf(meta, "cpu_features="), put_escaped(meta, feat.s ? feat.s : ""), lt_sb_printf(meta, "\n");
        bool failed = feat.failed || model.failed;
        lt_sb_free(&feat);
        lt_sb_free(&model);
        if (failed) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (artifact meta)");
    } else if (!o->arch || !o->arch[0]) { /* the loader lowers for the recorded architecture */
        return lt_error(ctx, LT_ERR_USAGE, "a %s artifact records the GPU architecture its module is built for: no "
                        "architecture given (options.arch)", backend);
    }
    if (meta->failed) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (artifact meta)");
    return LT_OK;
}

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool failed;
} wbuf;

static void put(wbuf *b, const void *data, size_t n) {
    if (b->failed || !n) return;
    if (b->n + n < b->n) { b->failed = true; return; }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap = cap * 2 > cap ? cap * 2 : b->n + n;
        uint8_t *q = lt_mem_realloc(b->p, cap);
        if (!q) { b->failed = true; return; }
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_le(wbuf *b, uint64_t v, int bytes) {
    uint8_t x[8];
    for (int i = 0; i < bytes; i++) x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, (size_t)bytes);
}

static void put_section(wbuf *b, const char *tag, const void *data, size_t n) {
    char t[8] = {0};
    memcpy(t, tag, strlen(tag));
    put(b, t, 8);
    put_le(b, n, 8);
    lt_sha256 h;
    uint8_t dig[32];
    lt_sha256_init(&h);
    lt_sha256_update(&h, data, n);
    lt_sha256_final(&h, dig);
    put(b, dig, 32);
    put(b, data, n);
}

lt_status lt_artifact_write(lt_ctx *ctx, const char *path, const char *meta, const void *model, size_t model_size,
                            const lt_prebuilt *pb) {
    if (!path || !meta || !model || !pb) return lt_error(ctx, LT_ERR_USAGE, "lt_artifact_write: missing arguments");
    lt_model *probe = NULL;
    lt_ctx c2 = {0};
    if (lt_onnx_load_memory(&c2, model, model_size, NULL, NULL, &probe) != LT_OK)
        return lt_error(ctx, LT_ERR_UNSUPPORTED,
                        "%s: cannot save an artifact of this model: it does not load from its own bytes (%s); models "
                        "with external data are not supported: convert it to one file first", path, c2.msg);
    lt_model_free(probe);
    lt_strbuf full = {0};
    lt_sb_printf(&full, "%ssource_sha256=%s\n", meta, pb->source_sha256);
    if (pb->image) lt_sb_printf(&full, "module_sha256=%s\n", pb->image_sha256);
    if (full.failed || !full.s) {
        lt_sb_free(&full);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (artifact meta)");
    }
    wbuf b = {0};
    put(&b, LT_ARTIFACT_MAGIC, 8);
    put_le(&b, LT_ARTIFACT_VERSION, 4);
    put_le(&b, pb->image ? 3 : 2, 4);
    put_section(&b, "meta", full.s, full.len);
    put_section(&b, "model", model, model_size);
    if (pb->image) put_section(&b, "module", pb->image, pb->image_size);
    lt_sb_free(&full);
    lt_status s = b.failed ? lt_error(ctx, LT_ERR_NOMEM, "out of memory (artifact)") : lt_io_write_file_atomic(ctx, path, b.p, b.n);
    lt_mem_free(b.p);
    return s;
}

/* ---- saving with no device ---- */

/* sm_XY, sm_XYa or sm_XYf (XY: 2 or 3 digits): an architecture NVRTC builds a cubin for. */
static bool cubin_arch(const char *a) {
    if (strncmp(a, "sm_", 3) != 0) return false;
    size_t n = strspn(a + 3, "0123456789");
    if (n < 2 || n > 3) return false;
    const char *p = a + 3 + n;
    if (*p == 'a' || *p == 'f') p++;
    return *p == 0;
}

static lt_status offline_arch(lt_ctx *ctx, const char *backend, const char *arch) {
    if (!backend || strcmp(backend, "cuda") != 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "backend '%s' builds an artifact's module only where it runs (no "
                        "build without its device)", backend ? backend : "cpu");
    if (!arch || !arch[0])
        return lt_error(ctx, LT_ERR_USAGE, "a CUDA artifact built with no GPU needs the architecture to build for "
                        "(sm_90a for H100/H200, sm_80 for A100, ...)");
    if (strncmp(arch, "compute_", 8) == 0 && strlen(arch) < 16)
        return lt_error(ctx, LT_ERR_USAGE, "architecture '%s' is virtual (PTX); an artifact holds a cubin: give sm_%s",
                        arch, arch + 8);
    if (!cubin_arch(arch))
        return lt_error(ctx, LT_ERR_USAGE, "'%.40s%s' is not a GPU architecture: give sm_XY, sm_XYa or sm_XYf (sm_90a "
                        "for H100/H200, sm_80 for A100, ...)", arch, strlen(arch) > 40 ? "..." : "");
    return LT_OK;
}

static lt_status offline_nvrtc(lt_ctx *ctx, const char *nvrtc, lt_nvrtc **nv) {
    lt_ctx c2 = {0};
    if (lt_nvrtc_open_path(&c2, nvrtc, nv) == LT_OK) return LT_OK;
    return lt_error(ctx, c2.status == LT_ERR_NOMEM ? LT_ERR_NOMEM : LT_ERR_UNSUPPORTED,
                    "building a CUDA artifact with no GPU needs NVRTC: %s", c2.msg);
}

/* NVRTC's reason in one line: its log's first line when the message quotes one, else the message's. */
static void first_reason(const char *msg, char *out, size_t n) {
    const char *nl = strchr(msg, '\n');
    const char *p = nl && nl[1] ? nl + 1 : msg;
    size_t len = strcspn(p, "\n");
    snprintf(out, n, "%.*s", (int)(len > 200 ? 200 : len), p);
}

lt_status lt_artifact_offline_check(lt_ctx *ctx, const char *backend, const char *nvrtc, const char *arch) {
    LT_TRY(offline_arch(ctx, backend, arch));
    lt_nvrtc *nv = NULL;
    LT_TRY(offline_nvrtc(ctx, nvrtc, &nv));
    static const char probe[] = "extern \"C\" __global__ void lathe_arch_probe(int *p) { if (p) *p = 1; }\n";
    lt_ctx c2 = {0};
    lt_nvrtc_output o = {0};
    lt_status s = lt_nvrtc_compile(&c2, nv, probe, "lathe_arch_probe.cu", arch, NULL, 0, &o);
    int ma = 0, mi = 0;
    lt_nvrtc_version(nv, &ma, &mi);
    lt_nvrtc_output_free(&o);
    lt_nvrtc_close(nv);
    if (s == LT_OK) return LT_OK;
    if (s == LT_ERR_NOMEM) return lt_error(ctx, s, "%s", c2.msg);
    char why[256];
    first_reason(c2.msg, why, sizeof why);
    return lt_error(ctx, LT_ERR_USAGE, "NVRTC %d.%d cannot build for %s: %s", ma, mi, arch, why);
}

lt_status lt_artifact_offline_build(lt_ctx *ctx, const char *backend, const char *nvrtc, const char *arch,
                                    const char *source, size_t source_len, lt_prebuilt *pb, lt_strbuf *log) {
    if (!pb || (source_len && !source)) return lt_error(ctx, LT_ERR_USAGE, "lt_artifact_offline_build: missing arguments");
    memset(pb, 0, sizeof *pb);
    LT_TRY(offline_arch(ctx, backend, arch));
    if (source_len && memchr(source, 0, source_len))
        return lt_error(ctx, LT_ERR_INVALID, "the emitted source holds a NUL byte");
    lt_sha256_hex(source_len ? source : "", source_len, pb->source_sha256); /* what the loader's compile hashes */
    if (!source_len) return LT_OK; /* no kernels: no module, as the backend stage builds none */
    char *src = lt_mem_alloc(source_len + 1); /* NUL-terminated, as the compile hands it to the backend */
    if (!src) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu bytes of source)", source_len);
    memcpy(src, source, source_len);
    src[source_len] = 0;
    lt_nvrtc *nv = NULL;
    lt_status s = offline_nvrtc(ctx, nvrtc, &nv);
    lt_cuda_image img = {0};
    if (s == LT_OK) {
        lt_ctx c2 = {0};
        lt_cuda_compile_options co = {.name = LT_CUDA_MODULE_PROGRAM}; /* the backend's: it names symbols */
        if ((s = lt_cuda_build(&c2, nv, src, arch, NULL, &co, &img)) != LT_OK)
            s = lt_error(ctx, s, "NVRTC: %s", c2.msg[0] ? c2.msg : lt_status_name(s));
        else if (!img.is_cubin || !img.data || !img.size)
            s = lt_error(ctx, LT_ERR_INTERNAL, "NVRTC built no cubin for %s", arch);
    }
    if (s == LT_OK) {
        int ma = 0, mi = 0;
        lt_nvrtc_version(nv, &ma, &mi);
        pb->image = img.data; /* lt_mem heap: the caller's now */
        pb->image_size = img.size;
        img.data = NULL;
        lt_sha256_hex(pb->image, pb->image_size, pb->image_sha256);
        if (log) lt_sb_printf(log, "NVRTC %d.%d built the cubin for %s: %zu bytes, %.2f s\n", ma, mi, arch, pb->image_size,
                              img.seconds);
    }
    lt_cuda_image_free(&img);
    lt_nvrtc_close(nv);
    lt_mem_free(src);
    return s;
}
