/* export.c — standalone C export of a plan (see export.h for the files and the API they define).
 *
 * The translation unit is the backend's: the same emitter and prelude (lt_emit_module with the C
 * language table), the kernels of the plan's KERNEL steps and their pack kernels, then the API as
 * the module's extra code. The API's run function calls the kernels in plan order; each call's
 * argument array is built from the plan's slots: WORKSPACE slots at their static offsets in the
 * workspace, weights at their offsets in the weight blob, packed weights in buffers filled by
 * P_init, inputs and outputs through the caller's structs. Graph outputs that are not written by a
 * kernel (an input, a constant, or the same value listed twice) are copied at the end.
 * Value names are made C identifiers: non-alphanumerics become '_', a leading digit or a C keyword
 * gets a "v_" prefix, duplicates a numeric suffix.
 */
#include "export.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../codegen/codegen.h"
#include "../io/io.h"
#include "plan_impl.h"

#define EXPORT_EMBED_DEFAULT ((int64_t)1 << 20)

static int64_t align64(int64_t v) { return (v + 63) / 64 * 64; }

static bool is_keyword(const char *s) {
    static const char *const kw[] = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
                                     "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
                                     "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
                                     "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
                                     "bool", "true", "false", "main", NULL};
    for (int i = 0; kw[i]; i++)
        if (strcmp(kw[i], s) == 0) return true;
    return false;
}

/* C identifier for name, unique among used[0..n). Allocated in arena. */
static const char *c_ident(lt_arena *a, const char *name, const char *const *used, int n) {
    char buf[96];
    size_t j = 0;
    for (size_t i = 0; name && name[i] && j < 64; i++) buf[j++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    buf[j] = 0;
    if (!j || isdigit((unsigned char)buf[0]) || is_keyword(buf)) {
        char t[96];
        snprintf(t, sizeof t, "v_%s", buf);
        snprintf(buf, sizeof buf, "%s", t);
    }
    char cand[112];
    snprintf(cand, sizeof cand, "%s", buf);
    for (int k = 2;; k++) {
        bool clash = false;
        for (int i = 0; i < n && !clash; i++) clash = used[i] && strcmp(used[i], cand) == 0;
        if (!clash) break;
        snprintf(cand, sizeof cand, "%s_%d", buf, k);
    }
    return lt_arena_strdup(a, cand);
}

/* Text safe inside a C comment: no comment start/end, no control characters. */
static const char *cmt(lt_arena *a, const char *text) {
    char *r = lt_arena_strdup(a, text ? text : "");
    for (char *c = r; c && *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
        if ((c[0] == '*' && c[1] == '/') || (c[0] == '/' && c[1] == '*')) c[1] = '|';
    }
    return r ? r : "";
}

/* Text safe inside a C string literal (and a printf format): printable ASCII, escaped. */
static const char *cstr(lt_arena *a, const char *text) {
    lt_strbuf b = {0};
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        if (*c == '"' || *c == '\\') lt_sb_printf(&b, "\\%c", *c);
        else if (*c == '%') lt_sb_printf(&b, "%%%%");
        else if (*c < 0x20 || *c >= 0x7f) lt_sb_printf(&b, "?");
        else lt_sb_printf(&b, "%c", *c);
    }
    const char *r = lt_arena_strdup(a, b.s ? b.s : "");
    lt_sb_free(&b);
    return r ? r : "";
}

static const char *c_type(lt_dtype dt) {
    const char *t = dt >= 0 && dt < LT_DTYPE_COUNT ? lt_lang_c.type_names[dt] : NULL;
    if (t) return t;
    return lt_dtype_size(dt) == 1 ? "uint8_t" : lt_dtype_size(dt) == 2 ? "uint16_t" : lt_dtype_size(dt) == 4 ? "uint32_t" : "uint64_t";
}

static lt_status write_file(lt_ctx *ctx, lt_export_report *rep, const char *dir, const char *name, const void *data,
                            size_t len) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    LT_TRY(lt_io_write_file_atomic(ctx, path, data, len));
    if (rep && rep->n_files < 4) snprintf(rep->files[rep->n_files++], sizeof rep->files[0], "%.1000s", path);
    return LT_OK;
}

typedef struct exp_state {
    lt_ctx *ctx;
    const lt_plan *p;
    lt_arena a;
    const char *P;              /* prefix */
    int64_t *woff;              /* per slot: offset in the weight blob, -1 */
    int64_t wbytes;
    int *pack_index;            /* per slot: index of the packed buffer, -1 */
    const char **in_names, **out_names; /* C names per graph input / output */
    const char **used;
    int n_used;
} exp_state;

static const char *arg_expr(exp_state *e, int sl, char *buf, size_t n) {
    const lt_plan_slot *S = &e->p->slots[sl];
    if (S->alias_of >= 0 && e->p->slots[S->alias_of].kind != LT_SLOT_WORKSPACE) /* a view of an input */
        S = &e->p->slots[S->alias_of];
    switch (S->kind) {
    case LT_SLOT_WORKSPACE: snprintf(buf, n, "ws + %lld", (long long)S->offset); break;
    case LT_SLOT_CONST: snprintf(buf, n, "%s_w_ + %lld", e->P, (long long)e->woff[sl]); break;
    case LT_SLOT_PACKED: snprintf(buf, n, "%s_pk_[%d]", e->P, e->pack_index[sl]); break;
    case LT_SLOT_INPUT: snprintf(buf, n, "(void *)in_%s", e->in_names[S->io_index]); break;
    case LT_SLOT_OUTPUT: snprintf(buf, n, "(void *)out->%s", e->out_names[S->io_index]); break;
    case LT_SLOT_DYNAMIC: snprintf(buf, n, "0 /* dynamic */"); break;
    }
    return buf;
}

static void dims_str(const lt_plan_slot *S, char *buf, size_t n) {
    size_t o = (size_t)snprintf(buf, n, "%s[", lt_dtype_name(S->dtype));
    for (int k = 0; k < S->rank && o < n; k++) o += (size_t)snprintf(buf + o, n - o, "%s%lld", k ? "," : "", (long long)S->dims[k]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

static void gen_header(exp_state *e, const lt_export_options *opt, bool embedded, lt_strbuf *h) {
    const lt_plan *p = e->p;
    const lt_graph *g = p->model->graph;
    const char *P = e->P;
    char up[80];
    size_t k = 0;
    for (; P[k] && k + 1 < sizeof up; k++) up[k] = (char)toupper((unsigned char)P[k]);
    up[k] = 0;
    char d[256];
    lt_sb_printf(h, "/* %s.h — a model compiled by lathe into standalone C (no lathe library needed).\n", P);
    if (opt->model_path) lt_sb_printf(h, " * Source model: %s\n", cmt(&e->a, opt->model_path));
    lt_sb_printf(h, " *\n * Build:  cc -O2 %s.c main.c -lm           (one thread, portable)\n"
                    " *         cc -O3 -march=native -fopenmp %s.c main.c -lm   (threads, native SIMD)\n *\n", P, P);
    lt_sb_printf(h, " * Inputs (pointers in %s_inputs; row-major, C order):\n", P);
    for (int i = 0; i < g->n_inputs; i++) {
        int sl = p->input_slot[i];
        if (sl < 0 || !p->rt[sl].is_static) continue;
        dims_str(&p->slots[sl], d, sizeof d);
        lt_sb_printf(h, " *   %-20s '%s': %s, %lld bytes%s\n", e->in_names[i], cmt(&e->a, g->inputs[i]->name), d,
                     (long long)p->slots[sl].bytes, g->inputs[i]->init ? " (optional: NULL uses the model's default)" : "");
    }
    lt_sb_printf(h, " * Outputs (pointers in %s_outputs, to room for the bytes given):\n", P);
    for (int i = 0; i < g->n_outputs; i++) {
        int sl = p->output_slot[i];
        dims_str(&p->slots[sl], d, sizeof d);
        lt_sb_printf(h, " *   %-20s '%s': %s, %lld bytes\n", e->out_names[i], cmt(&e->a, g->outputs[i]->name), d,
                     (long long)p->slots[sl].bytes);
    }
    lt_sb_printf(h, " * Workspace: %lld bytes (%s_WORKSPACE_BYTES), reused by every run; intermediates would need "
                    "%lld bytes one by one.\n", (long long)p->stats.workspace_bytes, up,
                 (long long)p->stats.intermediates_bytes);
    if (embedded) lt_sb_printf(h, " * Weights: %lld bytes, embedded in %s.c: call %s_init(NULL).\n", (long long)e->wbytes, P, P);
    else lt_sb_printf(h, " * Weights: %lld bytes in %s.weights: call %s_init(\"path/to/%s.weights\").\n", (long long)e->wbytes, P, P, P);
    lt_sb_printf(h, " *\n * Use:\n"
                    " *   if (%s_init(%s) != 0) { fprintf(stderr, \"%%s\\n\", %s_error()); return 1; }\n"
                    " *   %s_inputs in = {...};  %s_outputs out = {...};\n"
                    " *   if (%s_run(&in, &out, NULL) != 0) fprintf(stderr, \"%%s\\n\", %s_error());\n"
                    " *   %s_free();\n"
                    " * %s_run allocates nothing; pass your own workspace (%s_WORKSPACE_BYTES, 64-byte aligned) to run\n"
                    " * several calls at once from different threads, else NULL for the one %s_init made.\n */\n",
                 P, embedded ? "NULL" : "\"model.weights\"", P, P, P, P, P, P, P, up, P);
    lt_sb_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n", up, up);
    lt_sb_printf(h, "#define %s_WORKSPACE_BYTES %lldu\n#define %s_WEIGHT_BYTES %lldu\n#define %s_NUM_INPUTS %d\n"
                    "#define %s_NUM_OUTPUTS %d\n\n", up, (long long)p->stats.workspace_bytes, up, (long long)e->wbytes, up,
                 g->n_inputs, up, g->n_outputs);
    lt_sb_printf(h, "typedef struct %s_inputs {\n", P);
    int n_in = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        int sl = p->input_slot[i];
        if (sl < 0 || !p->rt[sl].is_static) continue;
        lt_sb_printf(h, "    const %s *%s; /* '%s' */\n", c_type(p->slots[sl].dtype), e->in_names[i],
                     cmt(&e->a, g->inputs[i]->name));
        n_in++;
    }
    if (!n_in) lt_sb_printf(h, "    int unused_; /* the model has no input */\n");
    lt_sb_printf(h, "} %s_inputs;\n\ntypedef struct %s_outputs {\n", P, P);
    for (int i = 0; i < g->n_outputs; i++)
        lt_sb_printf(h, "    %s *%s; /* '%s' */\n", c_type(p->slots[p->output_slot[i]].dtype), e->out_names[i],
                     cmt(&e->a, g->outputs[i]->name));
    lt_sb_printf(h, "} %s_outputs;\n\n", P);
    lt_sb_printf(h, "int %s_init(const char *weights_path);\n"
                    "int %s_run(const %s_inputs *in, %s_outputs *out, void *workspace);\n"
                    "void %s_free(void);\nconst char *%s_error(void);\nvoid %s_set_threads(int n);\n"
                    "size_t %s_workspace_size(void);\n\n#endif\n", P, P, P, P, P, P, P, P);
}

static void gen_api(exp_state *e, bool embedded, const uint8_t *blob, lt_strbuf *c) {
    const lt_plan *p = e->p;
    const lt_graph *g = p->model->graph;
    const char *P = e->P;
    char up[80];
    size_t k = 0;
    for (; P[k] && k + 1 < sizeof up; k++) up[k] = (char)toupper((unsigned char)P[k]);
    up[k] = 0;
    char ab[256];
    lt_sb_printf(c, "/* ---- standalone API (lathe export) ---- */\n#include <stdio.h>\n#include <stdlib.h>\n"
                    "#include \"%s.h\"\n\n", P);
    if (embedded) {
        lt_sb_printf(c, "static const unsigned char %s_wdata_[%lld] __attribute__((aligned(64))) = {", P,
                     (long long)(e->wbytes > 0 ? e->wbytes : 1));
        for (int64_t i = 0; i < e->wbytes; i++) lt_sb_printf(c, "%s%u,", i % 24 ? "" : "\n    ", blob[i]);
        if (!e->wbytes) lt_sb_printf(c, "0");
        lt_sb_printf(c, "\n};\n");
    }
    lt_sb_printf(c, "static unsigned char *%s_w_;\nstatic unsigned char *%s_ws_;\nstatic void *%s_pk_[%d];\n"
                    "static int %s_ready_;\nstatic char %s_err_[512];\n\n", P, P, P, p->n_packs ? p->n_packs : 1, P, P);
    lt_sb_printf(c, "const char *%s_error(void) { return %s_err_; }\nvoid %s_set_threads(int n) { lathe_set_threads(n); }\n"
                    "size_t %s_workspace_size(void) { return %s_WORKSPACE_BYTES; }\n\n", P, P, P, P, up);
    lt_sb_printf(c, "void %s_free(void) {\n", P);
    if (!embedded) lt_sb_printf(c, "    free(%s_w_);\n", P);
    lt_sb_printf(c, "    free(%s_ws_);\n    for (int i = 0; i < %d; i++) { free(%s_pk_[i]); %s_pk_[i] = 0; }\n"
                    "    %s_w_ = 0; %s_ws_ = 0; %s_ready_ = 0;\n}\n\n", P, p->n_packs, P, P, P, P, P);
    lt_sb_printf(c, "static void *%s_alloc_(size_t n) { return aligned_alloc(64, n ? (n + 63) / 64 * 64 : 64); }\n\n", P);
    lt_sb_printf(c, "int %s_init(const char *weights_path) {\n    %s_free();\n    %s_err_[0] = 0;\n", P, P, P);
    if (embedded) {
        lt_sb_printf(c, "    (void)weights_path;\n    %s_w_ = (unsigned char *)%s_wdata_;\n", P, P);
    } else {
        lt_sb_printf(c,
                     "    const char *path = weights_path ? weights_path : \"%s.weights\";\n"
                     "    FILE *f = fopen(path, \"rb\");\n"
                     "    if (!f) { snprintf(%s_err_, sizeof %s_err_, \"%%s: cannot open the weights\", path); return -1; }\n"
                     "    unsigned char hdr[16];\n    unsigned long long n = 0;\n"
                     "    if (fread(hdr, 1, 16, f) != 16 || memcmp(hdr, \"LATHEWTS\", 8) != 0) {\n"
                     "        fclose(f); snprintf(%s_err_, sizeof %s_err_, \"%%s: not a lathe weights file\", path); return -1;\n    }\n"
                     "    for (int i = 0; i < 8; i++) n |= (unsigned long long)hdr[8 + i] << (8 * i);\n"
                     "    if (n != %s_WEIGHT_BYTES) {\n        fclose(f);\n"
                     "        snprintf(%s_err_, sizeof %s_err_, \"%%s: %%llu bytes of weights, this model needs %%llu\", path, n,"
                     " (unsigned long long)%s_WEIGHT_BYTES);\n        return -1;\n    }\n"
                     "    %s_w_ = %s_alloc_((size_t)n);\n"
                     "    if (!%s_w_ || fread(%s_w_, 1, (size_t)n, f) != (size_t)n) {\n"
                     "        fclose(f); snprintf(%s_err_, sizeof %s_err_, \"%%s: cannot read %%llu bytes of weights\", path, n);\n"
                     "        %s_free(); return -1;\n    }\n    fclose(f);\n",
                     P, P, P, P, P, up, P, P, up, P, P, P, P, P, P, P);
    }
    lt_sb_printf(c, "    %s_ws_ = %s_alloc_(%s_WORKSPACE_BYTES);\n", P, P, up);
    lt_sb_printf(c, "    if (!%s_ws_) { snprintf(%s_err_, sizeof %s_err_, \"out of memory\"); %s_free(); return -1; }\n", P, P, P, P);
    for (int i = 0; i < p->n_packs; i++) {
        const lt_plan_pack *pk = &p->packs[i];
        lt_sb_printf(c, "    %s_pk_[%d] = %s_alloc_(%lldu);\n", P, i, P, (long long)p->slots[pk->slot].bytes);
        lt_sb_printf(c, "    if (!%s_pk_[%d]) { snprintf(%s_err_, sizeof %s_err_, \"out of memory\"); %s_free(); return -1; }\n",
                     P, i, P, P, P);
        lt_sb_printf(c, "    { void *a[2] = {%s_pk_[%d], %s_w_ + %lld}; %s(a); }\n", P, i, P, (long long)e->woff[pk->src_slot],
                     pk->kernel->name);
    }
    lt_sb_printf(c, "    %s_ready_ = 1;\n    return 0;\n}\n\n", P);

    /* run */
    lt_sb_printf(c, "int %s_run(const %s_inputs *in, %s_outputs *out, void *workspace) {\n", P, P, P);
    lt_sb_printf(c, "    if (!%s_ready_) { snprintf(%s_err_, sizeof %s_err_, \"call %s_init first\"); return -1; }\n"
                    "    if (!in || !out) { snprintf(%s_err_, sizeof %s_err_, \"%s_run: in and out must not be NULL\"); return -1; }\n"
                    "    unsigned char *ws = workspace ? (unsigned char *)workspace : %s_ws_;\n    (void)ws;\n",
                 P, P, P, P, P, P, P, P);
    for (int i = 0; i < g->n_inputs; i++) {
        int sl = p->input_slot[i];
        if (sl < 0 || !p->rt[sl].is_static) continue;
        const char *nm = e->in_names[i];
        const char *ct = c_type(p->slots[sl].dtype);
        if (e->woff[sl] >= 0)
            lt_sb_printf(c, "    const %s *in_%s = in->%s ? in->%s : (const %s *)(%s_w_ + %lld);\n", ct, nm, nm, nm, ct, P,
                         (long long)e->woff[sl]);
        else
            lt_sb_printf(c, "    const %s *in_%s = in->%s;\n    if (!in_%s) { snprintf(%s_err_, sizeof %s_err_, "
                            "\"input '%s' is NULL\"); return -1; }\n", ct, nm, nm, nm, P, P, cstr(&e->a, g->inputs[i]->name));
    }
    for (int k2 = 0; k2 < g->n_outputs; k2++)
        lt_sb_printf(c, "    if (!out->%s) { snprintf(%s_err_, sizeof %s_err_, \"output '%s' is NULL\"); return -1; }\n",
                     e->out_names[k2], P, P, cstr(&e->a, g->outputs[k2]->name));
    for (int i = 0; i < p->n_steps; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (st->view) { /* its output shares its input's memory */
            lt_sb_printf(c, "    /* %d: %s: a view, nothing to run */\n", i, st->origin);
            continue;
        }
        lt_sb_printf(c, "    { /* %d: %s */\n        void *a[%d] = {", i, st->origin, st->n_args > 0 ? st->n_args : 1);
        for (int j = 0; j < st->n_args; j++) lt_sb_printf(c, "%s%s", j ? ", " : "", arg_expr(e, st->arg_slots[j], ab, sizeof ab));
        lt_sb_printf(c, "};\n        %s(a);\n    }\n", st->name);
    }
    /* outputs no kernel wrote */
    for (int k2 = 0; k2 < g->n_outputs; k2++) {
        int sl = p->output_slot[k2];
        const lt_plan_slot *S = &p->slots[sl];
        if (S->kind == LT_SLOT_OUTPUT && S->io_index == k2) continue;
        const char *src = S->kind == LT_SLOT_OUTPUT || S->kind == LT_SLOT_INPUT || S->kind == LT_SLOT_CONST
                              ? arg_expr(e, sl, ab, sizeof ab) : "0";
        lt_sb_printf(c, "    memcpy(out->%s, %s, %lldu);\n", e->out_names[k2], src, (long long)S->bytes);
    }
    lt_sb_printf(c, "    return 0;\n}\n");
}

static void gen_main(exp_state *e, bool embedded, lt_strbuf *m) {
    const lt_plan *p = e->p;
    const lt_graph *g = p->model->graph;
    const char *P = e->P;
    int n_in = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (p->input_slot[i] >= 0 && p->rt[p->input_slot[i]].is_static) n_in++;
    lt_sb_printf(m,
                 "/* %s_main.c — example driver for %s.c (generated by lathe).\n"
                 " * usage: prog [-w WEIGHTS] [-n RUNS] [-t THREADS] IN... OUT...\n"
                 " * Reads each of the %d input(s) from a raw file (exactly its byte size, row-major), runs, and\n"
                 " * writes each of the %d output(s) to a raw file. -n RUNS times RUNS runs after one warm-up\n"
                 " * and prints the median in ms. Build: cc -O2 %s.c %s_main.c -lm */\n",
                 P, P, n_in, g->n_outputs, P, P);
    lt_sb_printf(m, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n#include \"%s.h\"\n\n", P);
    lt_sb_printf(m,
                 "static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); "
                 "return t.tv_sec * 1e3 + t.tv_nsec * 1e-6; }\n"
                 "static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; "
                 "return x < y ? -1 : x > y; }\n"
                 "static void *read_raw(const char *path, size_t n) {\n"
                 "    FILE *f = fopen(path, \"rb\");\n    if (!f) { fprintf(stderr, \"%%s: cannot open\\n\", path); return 0; }\n"
                 "    void *b = malloc(n ? n : 1);\n    size_t got = b ? fread(b, 1, n, f) : 0;\n    int extra = fgetc(f);\n    fclose(f);\n"
                 "    if (!b || got != n || extra != EOF) { fprintf(stderr, \"%%s: expected exactly %%zu bytes\\n\", path, n); free(b); return 0; }\n"
                 "    return b;\n}\n\n");
    lt_sb_printf(m, "int main(int argc, char **argv) {\n    const char *weights = %s;\n    int runs = 0, threads = 0, np = 0;\n"
                    "    const char *pos[%d];\n", embedded ? "NULL" : "\"" "model.weights" "\"", n_in + g->n_outputs + 1);
    if (!embedded) lt_sb_printf(m, "    weights = \"%s.weights\";\n", P);
    lt_sb_printf(m,
                 "    for (int i = 1; i < argc; i++) {\n"
                 "        if (!strcmp(argv[i], \"-w\") && i + 1 < argc) weights = argv[++i];\n"
                 "        else if (!strcmp(argv[i], \"-n\") && i + 1 < argc) runs = atoi(argv[++i]);\n"
                 "        else if (!strcmp(argv[i], \"-t\") && i + 1 < argc) threads = atoi(argv[++i]);\n"
                 "        else if (np < %d) pos[np++] = argv[i];\n"
                 "        else { np = -1; break; }\n    }\n"
                 "    if (np != %d) { fprintf(stderr, \"usage: %%s [-w WEIGHTS] [-n RUNS] [-t THREADS] IN(%d) OUT(%d)\\n\", argv[0]); return 1; }\n",
                 n_in + g->n_outputs, n_in + g->n_outputs, n_in, g->n_outputs);
    lt_sb_printf(m, "    %s_inputs in;\n    %s_outputs out;\n    memset(&in, 0, sizeof in);\n    memset(&out, 0, sizeof out);\n", P, P);
    int q = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        int sl = p->input_slot[i];
        if (sl < 0 || !p->rt[sl].is_static) continue;
        lt_sb_printf(m, "    if (!(in.%s = read_raw(pos[%d], %lldu))) return 2;\n", e->in_names[i], q++,
                     (long long)p->slots[sl].bytes);
    }
    for (int k = 0; k < g->n_outputs; k++)
        lt_sb_printf(m, "    if (!(out.%s = malloc(%lldu + 1))) return 2;\n", e->out_names[k],
                     (long long)p->slots[p->output_slot[k]].bytes);
    lt_sb_printf(m,
                 "    if (%s_init(weights) != 0) { fprintf(stderr, \"%%s\\n\", %s_error()); return 2; }\n"
                 "    if (threads > 0) %s_set_threads(threads);\n"
                 "    if (%s_run(&in, &out, NULL) != 0) { fprintf(stderr, \"%%s\\n\", %s_error()); return 2; }\n"
                 "    if (runs > 0) {\n        double *t = malloc(sizeof *t * (size_t)runs);\n"
                 "        for (int r = 0; r < runs; r++) { double t0 = now_ms(); %s_run(&in, &out, NULL); t[r] = now_ms() - t0; }\n"
                 "        qsort(t, (size_t)runs, sizeof *t, cmp);\n"
                 "        printf(\"median %%.3f ms over %%d runs\\n\", t[runs / 2], runs);\n        free(t);\n    }\n",
                 P, P, P, P, P, P);
    for (int k = 0; k < g->n_outputs; k++)
        lt_sb_printf(m,
                     "    { FILE *f = fopen(pos[%d], \"wb\");\n"
                     "      if (!f || fwrite(out.%s, 1, %lldu, f) != %lldu || fclose(f) != 0) { fprintf(stderr, \"%%s: cannot write\\n\", pos[%d]); return 2; } }\n",
                     n_in + k, e->out_names[k], (long long)p->slots[p->output_slot[k]].bytes,
                     (long long)p->slots[p->output_slot[k]].bytes, n_in + k);
    lt_sb_printf(m, "    %s_free();\n    return 0;\n}\n", P);
}

lt_status lt_export_c(lt_ctx *ctx, const lt_plan *p, const lt_export_options *opt, lt_export_report *rep) {
    if (!p || !opt || !opt->dir) return lt_error(ctx, LT_ERR_USAGE, "export: missing plan or output folder");
    const lt_plan_step *h = lt_plan_first_host(p);
    if (h) {
        char label[256];
        return lt_error(ctx, LT_ERR_UNSUPPORTED,
                        "export: the plan has %d host step(s) that need the lathe runtime; the first is %s: %s "
                        "(standalone C needs every node compiled: bind all shapes with --shapes/--dim, use -O1 or "
                        "higher so constants fold, or run the model with `lathe run`)",
                        p->stats.n_host, lt_node_label(h->node, label, sizeof label), h->reason ? h->reason : "");
    }
    const lt_graph *g = p->model->graph;
    for (int k = 0; k < g->n_outputs; k++)
        if (!p->rt[p->output_slot[k]].is_static)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "export: output '%s' has no static shape", g->outputs[k]->name);
    const char *P = opt->prefix ? opt->prefix : "model";
    for (const char *c = P; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_') || isdigit((unsigned char)P[0]))
            return lt_error(ctx, LT_ERR_USAGE, "export: name '%s' is not a C identifier", P);
    if (!*P || is_keyword(P)) return lt_error(ctx, LT_ERR_USAGE, "export: name '%s' is not usable as a C prefix", P);

    exp_state e = {.ctx = ctx, .p = p, .P = P};
    lt_arena_init(&e.a);
    lt_status s = LT_OK;
    lt_strbuf src = {0}, hdr = {0}, mainc = {0}, api = {0};
    uint8_t *blob = NULL;
    lt_emit_kernel *ek = NULL;
    e.woff = lt_arena_alloc(&e.a, sizeof(int64_t) * (size_t)(p->n_slots + 1));
    e.pack_index = lt_arena_alloc(&e.a, sizeof(int) * (size_t)(p->n_slots + 1));
    e.in_names = lt_arena_alloc(&e.a, sizeof(char *) * (size_t)(g->n_inputs + 1));
    e.out_names = lt_arena_alloc(&e.a, sizeof(char *) * (size_t)(g->n_outputs + 1));
    e.used = lt_arena_alloc(&e.a, sizeof(char *) * (size_t)(g->n_inputs + g->n_outputs + 1));
    if (!e.woff || !e.pack_index || !e.in_names || !e.out_names || !e.used) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
    /* names */
    for (int i = 0; i < g->n_inputs; i++) {
        e.in_names[i] = c_ident(&e.a, g->inputs[i]->name, e.used, e.n_used);
        if (!e.in_names[i]) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
        e.used[e.n_used++] = e.in_names[i];
    }
    for (int k = 0; k < g->n_outputs; k++) {
        e.out_names[k] = c_ident(&e.a, g->outputs[k]->name, e.used, e.n_used);
        if (!e.out_names[k]) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
        e.used[e.n_used++] = e.out_names[k];
    }
    /* weights: constants the kernels, the pack kernels or the outputs read, and input defaults */
    for (int sl = 0; sl < p->n_slots; sl++) {
        e.woff[sl] = -1;
        e.pack_index[sl] = -1;
        const lt_plan_slot *S = &p->slots[sl];
        bool need = (S->kind == LT_SLOT_CONST && p->rt[sl].is_static) ||
                    (S->kind == LT_SLOT_INPUT && S->value->init && p->rt[sl].is_static);
        if (!need) continue;
        e.woff[sl] = e.wbytes;
        e.wbytes = align64(e.wbytes + S->bytes);
    }
    for (int i = 0; i < p->n_packs; i++) e.pack_index[p->packs[i].slot] = i;
    blob = lt_mem_calloc((size_t)(e.wbytes + 16), 1);
    if (!blob) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (%lld bytes of weights)", (long long)e.wbytes); goto done; }
    memcpy(blob, "LATHEWTS", 8);
    for (int i = 0; i < 8; i++) blob[8 + i] = (uint8_t)((uint64_t)e.wbytes >> (8 * i));
    for (int sl = 0; sl < p->n_slots; sl++)
        if (e.woff[sl] >= 0 && p->slots[sl].bytes > 0)
            memcpy(blob + 16 + e.woff[sl], p->slots[sl].value->init->data, (size_t)p->slots[sl].bytes);
    int64_t limit = opt->embed_limit == 0 ? EXPORT_EMBED_DEFAULT : opt->embed_limit;
    bool embedded = limit > 0 && e.wbytes < limit;

    /* kernels, in the order the backend's module has them */
    ek = lt_calloc(ctx, (size_t)(p->n_steps + p->n_packs + 1), sizeof *ek, "export kernels");
    if (!ek) { s = LT_ERR_NOMEM; goto done; }
    int ne = 0;
    for (int i = 0; i < p->n_packs; i++) ek[ne++] = (lt_emit_kernel){p->packs[i].kernel, "weight packing"};
    for (int i = 0; i < p->n_steps; i++) ek[ne++] = (lt_emit_kernel){p->steps[i].kernel, p->steps[i].origin};
    gen_api(&e, embedded, blob + 16, &api);
    if (api.failed) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
    if ((s = lt_emit_module(ctx, &lt_lang_c, ek, ne, api.s, &src)) != LT_OK) goto done;
    gen_header(&e, opt, embedded, &hdr);
    gen_main(&e, embedded, &mainc);
    if (src.failed || hdr.failed || mainc.failed) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
    if (mkdir(opt->dir, 0777) != 0 && errno != EEXIST) {
        s = lt_error(ctx, LT_ERR_IO, "%s: cannot create: %s", opt->dir, strerror(errno));
        goto done;
    }
    char name[256];
    if (rep) memset(rep, 0, sizeof *rep);
    snprintf(name, sizeof name, "%s.c", P);
    if ((s = write_file(ctx, rep, opt->dir, name, src.s, src.len)) != LT_OK) goto done;
    snprintf(name, sizeof name, "%s.h", P);
    if ((s = write_file(ctx, rep, opt->dir, name, hdr.s, hdr.len)) != LT_OK) goto done;
    snprintf(name, sizeof name, "%s_main.c", P);
    if ((s = write_file(ctx, rep, opt->dir, name, mainc.s, mainc.len)) != LT_OK) goto done;
    if (!embedded) {
        snprintf(name, sizeof name, "%s.weights", P);
        if ((s = write_file(ctx, rep, opt->dir, name, blob, (size_t)(e.wbytes + 16))) != LT_OK) goto done;
    }
    if (rep) {
        rep->weight_bytes = e.wbytes;
        rep->workspace_bytes = p->stats.workspace_bytes;
        rep->packed_bytes = p->stats.packed_bytes;
        rep->embedded = embedded;
        rep->n_kernels = ne;
        rep->source_bytes = src.len;
    }
done:
    lt_sb_free(&src);
    lt_sb_free(&hdr);
    lt_sb_free(&mainc);
    lt_sb_free(&api);
    lt_mem_free(blob);
    lt_mem_free(ek);
    lt_arena_free(&e.a);
    return s;
}
