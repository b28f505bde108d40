/* export.c — standalone C export of a plan (see export.h for the files and the API they define).
 *
 * The translation unit is the backend's: the same emitter and prelude (lt_emit_module with the C
 * language table), the kernels of the plan's KERNEL steps and their pack kernels, then the API as
 * the module's extra code. The API's run function calls the kernels in plan order; each call's
 * argument array is built from the plan's slots: WORKSPACE slots at their static offsets in the
 * workspace, weights at their offsets in the weight blob, packed weights in buffers filled by
 * P_init, inputs and outputs through the caller's structs. Graph outputs that are not written by a
 * kernel (an input, a constant, or the same value listed twice) are copied at the end.
 * No name from the model becomes an identifier or raw comment text: the fields of P_inputs and
 * P_outputs are in_<i> and out_<i> by graph position, the ONNX names live only in the escaped string
 * tables P_input_names / P_output_names (and escaped in comments), through the one escaper of the
 * code generator (lt_c_escape). The generated files build as C99 and C11 alike with -Wall -Werror:
 * 64-byte aligned memory comes from malloc (no aligned_alloc), the program's timer is POSIX
 * clock_gettime behind a feature macro, else clock(). The program (P_main.c) reads .npy or raw inputs
 * and writes .npy or raw outputs; --help lists them.
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

/* A model's text (a name, the model path) in generated code: quoted and escaped (lt_c_escape), for a
 * string literal or a comment alike. */
static void quote(lt_strbuf *b, const char *text, size_t max_bytes) { lt_c_quote(b, text, max_bytes); }

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
    const char **in_names, **out_names; /* C names per graph input / output: in_<i>, out_<i> */
} exp_state;

static const char *arg_expr(exp_state *e, int sl, char *buf, size_t n) {
    const lt_plan_slot *S = &e->p->slots[sl];
    if (S->alias_of >= 0 && e->p->slots[S->alias_of].kind != LT_SLOT_WORKSPACE) /* a view of an input */
        S = &e->p->slots[S->alias_of];
    switch (S->kind) {
    case LT_SLOT_WORKSPACE: snprintf(buf, n, "ws + %lld", (long long)S->offset); break;
    case LT_SLOT_CONST: snprintf(buf, n, "%s_w_ + %lld", e->P, (long long)e->woff[sl]); break;
    case LT_SLOT_PACKED: snprintf(buf, n, "%s_pk_[%d]", e->P, e->pack_index[sl]); break;
    case LT_SLOT_INPUT: snprintf(buf, n, "(void *)x_%d", S->io_index); break;
    case LT_SLOT_OUTPUT: snprintf(buf, n, "(void *)out->%s", e->out_names[S->io_index]); break;
    case LT_SLOT_DYNAMIC: snprintf(buf, n, "0 /* dynamic */"); break;
    case LT_SLOT_CHECK: snprintf(buf, n, "(void *)%s_ck_", e->P); break;
    }
    return buf;
}

static void dims_str(const lt_plan_slot *S, char *buf, size_t n) {
    size_t o = (size_t)snprintf(buf, n, "%s[", lt_dtype_name(S->dtype));
    for (int k = 0; k < S->rank && o < n; k++) o += (size_t)snprintf(buf + o, n - o, "%s%lld", k ? "," : "", (long long)S->dims[k]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* The .npy descr of a dtype (little-endian; bfloat16 as its bits, '<u2') */
static const char *npy_descr(lt_dtype dt) {
    switch (dt) {
    case LT_FLOAT: return "<f4";
    case LT_DOUBLE: return "<f8";
    case LT_FLOAT16: return "<f2";
    case LT_INT8: return "|i1";
    case LT_INT16: return "<i2";
    case LT_INT32: return "<i4";
    case LT_INT64: return "<i8";
    case LT_UINT8: return "|u1";
    case LT_BOOL: return "|b1";
    case LT_UINT32: return "<u4";
    case LT_UINT64: return "<u8";
    default: return lt_dtype_size(dt) == 1 ? "|u1" : lt_dtype_size(dt) == 4 ? "<u4" : lt_dtype_size(dt) == 8 ? "<u8" : "<u2";
    }
}

/* The static graph inputs the API takes (others have no slot or no static shape). */
static bool api_input(const lt_plan *p, int i) { return p->input_slot[i] >= 0 && p->rt[p->input_slot[i]].is_static; }

static void gen_header(exp_state *e, const lt_export_options *opt, bool embedded, lt_strbuf *h) {
    const lt_plan *p = e->p;
    const lt_graph *g = p->model->graph;
    const char *P = e->P;
    char up[80];
    size_t k = 0;
    for (; P[k] && k + 1 < sizeof up; k++) up[k] = (char)toupper((unsigned char)P[k]);
    up[k] = 0;
    char d[256];
    lt_sb_printf(h, "/* %s.h: a model compiled by lathe into standalone C (no lathe library needed).\n", P);
    if (opt->model_path) {
        lt_sb_printf(h, " * Source model: ");
        quote(h, opt->model_path, 200);
        lt_sb_printf(h, "\n");
    }
    lt_sb_printf(h, " *\n * Build:  cc -O2 %s.c %s_main.c -lm           (one thread, portable: C99 or later)\n"
                    " *         cc -O3 -march=native -fopenmp %s.c %s_main.c -lm   (threads, native SIMD)\n *\n", P, P, P, P);
    lt_sb_printf(h, " * Inputs: fields of %s_inputs (row-major, C order); %s_input_names[i] is the ONNX name of in_i:\n", P, P);
    for (int i = 0; i < g->n_inputs; i++) {
        if (!api_input(p, i)) continue;
        int sl = p->input_slot[i];
        dims_str(&p->slots[sl], d, sizeof d);
        lt_sb_printf(h, " *   %-8s ", e->in_names[i]);
        quote(h, g->inputs[i]->name, 80);
        lt_sb_printf(h, ": %s, %lld bytes%s\n", d, (long long)p->slots[sl].bytes,
                     g->inputs[i]->init ? " (optional: NULL uses the model's default)" : "");
    }
    lt_sb_printf(h, " * Outputs: fields of %s_outputs, each pointing to room for the bytes given; %s_output_names[i]\n"
                    " * is the ONNX name of out_i:\n", P, P);
    for (int i = 0; i < g->n_outputs; i++) {
        int sl = p->output_slot[i];
        dims_str(&p->slots[sl], d, sizeof d);
        lt_sb_printf(h, " *   %-8s ", e->out_names[i]);
        quote(h, g->outputs[i]->name, 80);
        lt_sb_printf(h, ": %s, %lld bytes\n", d, (long long)p->slots[sl].bytes);
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
                    " * several calls at once from different threads, else NULL for the one %s_init made.\n"
                    " * %s_main.c is a command-line program around this API (.npy in, .npy out): see its --help.\n */\n",
                 P, embedded ? "NULL" : "\"model.weights\"", P, P, P, P, P, P, P, up, P, P);
    lt_sb_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n", up, up);
    lt_sb_printf(h, "#define %s_WORKSPACE_BYTES %lldu\n#define %s_WEIGHT_BYTES %lldu\n#define %s_NUM_INPUTS %d\n"
                    "#define %s_NUM_OUTPUTS %d\n\n", up, (long long)p->stats.workspace_bytes, up, (long long)e->wbytes, up,
                 g->n_inputs, up, g->n_outputs);
    lt_sb_printf(h, "/* The ONNX names of the graph's inputs and outputs, in order (in_i, out_i), NULL-ended. */\n"
                    "extern const char *const %s_input_names[];\nextern const char *const %s_output_names[];\n\n", P, P);
    lt_sb_printf(h, "typedef struct %s_inputs {\n", P);
    int n_in = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        if (!api_input(p, i)) continue;
        lt_sb_printf(h, "    const %s *%s; /* ", c_type(p->slots[p->input_slot[i]].dtype), e->in_names[i]);
        quote(h, g->inputs[i]->name, 80);
        lt_sb_printf(h, " */\n");
        n_in++;
    }
    if (!n_in) lt_sb_printf(h, "    int unused_; /* the model has no input */\n");
    lt_sb_printf(h, "} %s_inputs;\n\ntypedef struct %s_outputs {\n", P, P);
    for (int i = 0; i < g->n_outputs; i++) {
        lt_sb_printf(h, "    %s *%s; /* ", c_type(p->slots[p->output_slot[i]].dtype), e->out_names[i]);
        quote(h, g->outputs[i]->name, 80);
        lt_sb_printf(h, " */\n");
    }
    lt_sb_printf(h, "} %s_outputs;\n\n", P);
    lt_sb_printf(h, "int %s_init(const char *weights_path);\n"
                    "int %s_run(const %s_inputs *in, %s_outputs *out, void *workspace);\n"
                    "void %s_free(void);\nconst char *%s_error(void);\nvoid %s_set_threads(int n);\n"
                    "size_t %s_workspace_size(void);\n\n#endif\n", P, P, P, P, P, P, P, P);
}

/* The run function's checks of indices the caller gives (the plan's index checks): a bad index fails
 * the run with the node, input and element named, before any kernel runs. */
static void emit_index_checks(lt_strbuf *c, const lt_plan *p, const char *P) {
    char label[200];
    for (int i = 0; i < p->n_index_checks; i++) {
        const lt_plan_index_check *ck = p->index_checks[i];
        const lt_plan_slot *S = &p->slots[ck->slot];
        lt_node_label(ck->node, label, sizeof label);
        lt_sb_printf(c, "    { /* indices of ");
        lt_c_escape(c, label, 200);
        lt_sb_printf(c, " */\n        static const long long d_[%d] = {", ck->rule.k);
        for (int j = 0; j < ck->rule.k; j++) lt_sb_printf(c, "%s%lldLL", j ? ", " : "", (long long)ck->rule.dims[j]);
        lt_sb_printf(c, "};\n        for (long long i_ = 0; i_ < %lldLL; i_++) {\n"
                        "            long long v_ = (long long)x_%d[i_], n_ = d_[i_ %% %d];\n"
                        "            if (v_ < -n_ || v_ >= n_) {\n"
                        "                snprintf(%s_err_, sizeof %s_err_, \"%%s: index %%lld (element %%lld of input "
                        "'%%.200s') is out of range [%%lld, %%lld)\", ",
                     (long long)S->numel, S->io_index, ck->rule.k, P, P);
        quote(c, label, 200);
        lt_sb_printf(c, ", v_, i_, %s_input_names[%d], -n_, n_);\n                return -1;\n            }\n"
                        "        }\n    }\n", P, S->io_index);
    }
}

/* After the kernels: the check word of kernels that check the indices the model computes (see
 * src/runtime/index_checks.c), reported naming the node, and zeroed for the next run. */
static void emit_check_word(lt_strbuf *c, const lt_plan *p, const char *P) {
    if (p->check_slot < 0) return;
    const lt_graph *g = p->model->graph;
    char label[200];
    lt_sb_printf(c, "    if (%s_ck_[0]) {\n        const char *who_ = \"?\", *ind_ = \"?\";\n        switch (%s_ck_[0]) {\n",
                 P, P);
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        if (!lt_index_checked_in_kernel(n)) continue;
        lt_sb_printf(c, "        case %dLL: who_ = ", i + 1);
        quote(c, lt_node_label(n, label, sizeof label), 200);
        lt_sb_printf(c, "; ind_ = ");
        quote(c, n->in[1]->name, 200);
        lt_sb_printf(c, "; break;\n");
    }
    lt_sb_printf(c, "        default: break;\n        }\n"
                    "        snprintf(%s_err_, sizeof %s_err_, \"%%s: index %%lld (element %%lld of '%%.200s') is out of range "
                    "[%%lld, %%lld)\", who_, %s_ck_[2], %s_ck_[1], ind_, -%s_ck_[3], %s_ck_[3]);\n"
                    "        memset(%s_ck_, 0, sizeof %s_ck_);\n        return -1;\n    }\n",
                 P, P, P, P, P, P, P, P);
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
    lt_sb_printf(c, "const char *const %s_input_names[] = {", P);
    for (int i = 0; i < g->n_inputs; i++) {
        lt_sb_printf(c, "\n    ");
        quote(c, g->inputs[i]->name, 0);
        lt_sb_printf(c, ",");
    }
    lt_sb_printf(c, "\n    0,\n};\nconst char *const %s_output_names[] = {", P);
    for (int i = 0; i < g->n_outputs; i++) {
        lt_sb_printf(c, "\n    ");
        quote(c, g->outputs[i]->name, 0);
        lt_sb_printf(c, ",");
    }
    lt_sb_printf(c, "\n    0,\n};\n\n");
    if (embedded) {
        lt_sb_printf(c, "static const unsigned char %s_wdata_[%lld] __attribute__((aligned(64))) = {", P,
                     (long long)(e->wbytes > 0 ? e->wbytes : 1));
        for (int64_t i = 0; i < e->wbytes; i++) lt_sb_printf(c, "%s%u,", i % 24 ? "" : "\n    ", blob[i]);
        if (!e->wbytes) lt_sb_printf(c, "0");
        lt_sb_printf(c, "\n};\n");
    }
    lt_sb_printf(c, "static unsigned char *%s_w_;\nstatic unsigned char *%s_ws_;\nstatic void *%s_pk_[%d];\n"
                    "static int %s_ready_;\nstatic char %s_err_[512];\n\n", P, P, P, p->n_packs ? p->n_packs : 1, P, P);
    if (p->check_slot >= 0) /* kernels that check the indices the model computes write here */
        lt_sb_printf(c, "static long long %s_ck_[%d];\n\n", P, LT_CHECK_WORDS);
    /* 64-byte aligned memory in plain C99 (aligned_alloc is C11, posix_memalign POSIX): the block
     * malloc gave is kept just below the aligned address */
    lt_sb_printf(c, "static void *%s_alloc_(size_t n) {\n"
                    "    unsigned char *raw;\n    uintptr_t at;\n"
                    "    if (n > (size_t)-1 - 64 - sizeof(void *)) return 0;\n"
                    "    raw = (unsigned char *)malloc(n + 64 + sizeof(void *));\n    if (!raw) return 0;\n"
                    "    at = ((uintptr_t)(raw + sizeof(void *)) + 63) & ~(uintptr_t)63;\n"
                    "    ((void **)at)[-1] = raw;\n    return (void *)at;\n}\n"
                    "static void %s_release_(void *a) { if (a) free(((void **)a)[-1]); }\n\n", P, P);
    lt_sb_printf(c, "const char *%s_error(void) { return %s_err_; }\nvoid %s_set_threads(int n) { lathe_set_threads(n); }\n"
                    "size_t %s_workspace_size(void) { return %s_WORKSPACE_BYTES; }\n\n", P, P, P, P, up);
    lt_sb_printf(c, "void %s_free(void) {\n", P);
    if (!embedded) lt_sb_printf(c, "    %s_release_(%s_w_);\n", P, P);
    lt_sb_printf(c, "    %s_release_(%s_ws_);\n", P, P);
    for (int i = 0; i < p->n_packs; i++) /* a pack that repeats an earlier one holds that one's buffer */
        if (p->packs[i].same_as < 0) lt_sb_printf(c, "    %s_release_(%s_pk_[%d]);\n", P, P, i);
    lt_sb_printf(c, "    for (int i = 0; i < %d; i++) %s_pk_[i] = 0;\n"
                    "    %s_w_ = 0; %s_ws_ = 0; %s_ready_ = 0;\n}\n\n", p->n_packs, P, P, P, P);
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
        if (pk->same_as >= 0) { /* the same constant packed the same way: one buffer */
            lt_sb_printf(c, "    %s_pk_[%d] = %s_pk_[%d];\n", P, i, P, pk->same_as);
            continue;
        }
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
        if (!api_input(p, i)) continue;
        int sl = p->input_slot[i];
        const char *nm = e->in_names[i];
        const char *ct = c_type(p->slots[sl].dtype);
        if (e->woff[sl] >= 0)
            lt_sb_printf(c, "    const %s *x_%d = in->%s ? in->%s : (const %s *)(%s_w_ + %lld);\n", ct, i, nm, nm, ct, P,
                         (long long)e->woff[sl]);
        else
            lt_sb_printf(c, "    const %s *x_%d = in->%s;\n    if (!x_%d) { snprintf(%s_err_, sizeof %s_err_, "
                            "\"input '%%.200s' is NULL\", %s_input_names[%d]); return -1; }\n", ct, i, nm, i, P, P, P, i);
    }
    emit_index_checks(c, p, P);
    for (int k2 = 0; k2 < g->n_outputs; k2++)
        lt_sb_printf(c, "    if (!out->%s) { snprintf(%s_err_, sizeof %s_err_, \"output '%%.200s' is NULL\", %s_output_names[%d]); "
                        "return -1; }\n", e->out_names[k2], P, P, P, k2);
    for (int i = 0; i < p->n_steps; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (st->view) { /* its output shares its input's memory */
            lt_sb_printf(c, "    /* %d: ", i);
            lt_c_escape(c, st->origin, 300);
            lt_sb_printf(c, ": a view, nothing to run */\n");
            continue;
        }
        lt_sb_printf(c, "    { /* %d: ", i);
        lt_c_escape(c, st->origin, 300);
        int na = st->n_args + st->n_scalars;
        lt_sb_printf(c, " */\n        void *a[%d] = {", na > 0 ? na : 1);
        for (int j = 0; j < st->n_args; j++) lt_sb_printf(c, "%s%s", j ? ", " : "", arg_expr(e, st->arg_slots[j], ab, sizeof ab));
        for (int j = 0; j < st->n_scalars; j++) /* run-time scalars: this plan's values, by value */
            lt_sb_printf(c, "%s(void *)(intptr_t)(long long)0x%llxULL", st->n_args + j ? ", " : "",
                         (unsigned long long)(intptr_t)st->args[st->n_args + j]);
        lt_sb_printf(c, "};\n        %s(a);\n    }\n", st->name);
    }
    emit_check_word(c, p, P);
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

/* The command-line program's helpers (model_main.c): the timer, .npy input and output, printing a
 * model's names whatever bytes they hold. Plain C99 (+ POSIX clock_gettime when the system has it). */
static const char main_helpers[] =
    "typedef struct io_desc_ {\n"
    "    const char *descr; /* .npy dtype */\n"
    "    const char *dtype; /* ONNX name */\n"
    "    int rank;\n"
    "    long long dims[MAX_RANK_];\n"
    "    size_t bytes;\n"
    "} io_desc_;\n"
    "\n"
    "static double now_ms(void) {\n"
    "#if defined(CLOCK_MONOTONIC)\n"
    "    struct timespec t;\n"
    "    clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;\n"
    "#else\n"
    "    return (double)clock() * 1e3 / CLOCKS_PER_SEC;\n"
    "#endif\n"
    "}\n"
    "static int cmp(const void *a, const void *b) {\n"
    "    double x = *(const double *)a, y = *(const double *)b;\n"
    "    return x < y ? -1 : x > y;\n"
    "}\n"
    "\n"
    "/* a model's name, printable whatever bytes it holds */\n"
    "static void put_name(FILE *f, const char *s) {\n"
    "    fputc('\\'', f);\n"
    "    for (; *s; s++) {\n"
    "        unsigned char c = (unsigned char)*s;\n"
    "        if (c >= 0x20 && c < 0x7f && c != '\\\\' && c != '\\'') fputc(c, f);\n"
    "        else fprintf(f, \"\\\\x%02x\", c);\n"
    "    }\n"
    "    fputc('\\'', f);\n"
    "}\n"
    "static void put_shape(FILE *f, int rank, const long long *dims) {\n"
    "    fputc('(', f);\n"
    "    for (int k = 0; k < rank; k++) fprintf(f, \"%s%lld\", k ? \", \" : \"\", dims[k]);\n"
    "    fputs(rank == 1 ? \",)\" : \")\", f);\n"
    "}\n"
    "static void put_io(FILE *f, const char *name, const io_desc_ *d) {\n"
    "    fputs(\"  \", f);\n"
    "    put_name(f, name);\n"
    "    fprintf(f, \": %s \", d->dtype);\n"
    "    put_shape(f, d->rank, d->dims);\n"
    "    fprintf(f, \", %zu bytes\\n\", d->bytes);\n"
    "}\n"
    "\n"
    "static int little_endian(void) {\n"
    "    unsigned x = 1;\n"
    "    return *(unsigned char *)&x == 1;\n"
    "}\n"
    "\n"
    "/* the value after 'key': in a .npy header dict, or 0 */\n"
    "static const char *npy_key(const char *h, const char *key) {\n"
    "    const char *p = strstr(h, key);\n"
    "    if (!p) return 0;\n"
    "    p += strlen(key);\n"
    "    while (*p == ' ') p++;\n"
    "    if (*p++ != ':') return 0;\n"
    "    while (*p == ' ') p++;\n"
    "    return p;\n"
    "}\n"
    "\n"
    "/* Check a .npy header (dict text) against what the input needs; 0 if it fits, else prints why. */\n"
    "static int npy_check(const char *path, const char *h, const io_desc_ *d) {\n"
    "    const char *p = npy_key(h, \"'descr'\");\n"
    "    char descr[32] = \"\";\n"
    "    if (p && (*p == '\\'' || *p == '\"')) {\n"
    "        size_t n = 0;\n"
    "        char q = *p++;\n"
    "        while (p[n] && p[n] != q && n + 1 < sizeof descr) n++;\n"
    "        memcpy(descr, p, n);\n"
    "        descr[n] = 0;\n"
    "    }\n"
    "    int dt_ok = strlen(descr) == 3 && strchr(\"<=|\", descr[0]) && strcmp(descr + 1, d->descr + 1) == 0;\n"
    "    if (!dt_ok) {\n"
    "        fprintf(stderr, \"%s: dtype '%s', this input needs '%s' (%s)\\n\", path, descr, d->descr, d->dtype);\n"
    "        return -1;\n"
    "    }\n"
    "    p = npy_key(h, \"'fortran_order'\");\n"
    "    if (!p || strncmp(p, \"False\", 5) != 0) {\n"
    "        fprintf(stderr, \"%s: only C order (fortran_order False) is supported\\n\", path);\n"
    "        return -1;\n"
    "    }\n"
    "    p = npy_key(h, \"'shape'\");\n"
    "    long long dims[64];\n"
    "    int rank = 0;\n"
    "    if (!p || *p++ != '(') {\n"
    "        fprintf(stderr, \"%s: no shape in the .npy header\\n\", path);\n"
    "        return -1;\n"
    "    }\n"
    "    for (;;) {\n"
    "        while (*p == ' ' || *p == ',') p++;\n"
    "        if (*p == ')') break;\n"
    "        char *end;\n"
    "        long long v = strtoll(p, &end, 10);\n"
    "        if (end == p || rank == 64) {\n"
    "            fprintf(stderr, \"%s: bad shape in the .npy header\\n\", path);\n"
    "            return -1;\n"
    "        }\n"
    "        dims[rank++] = v;\n"
    "        p = end;\n"
    "    }\n"
    "    int same = rank == d->rank;\n"
    "    for (int k = 0; same && k < rank; k++) same = dims[k] == d->dims[k];\n"
    "    if (!same) {\n"
    "        fprintf(stderr, \"%s: shape \", path);\n"
    "        put_shape(stderr, rank, dims);\n"
    "        fputs(\", this input needs \", stderr);\n"
    "        put_shape(stderr, d->rank, d->dims);\n"
    "        fputc('\\n', stderr);\n"
    "        return -1;\n"
    "    }\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* An input: a .npy file (v1-3, C order, the input's dtype and shape), else exactly its bytes raw. */\n"
    "static void *read_input(const char *path, const io_desc_ *d) {\n"
    "    FILE *f = fopen(path, \"rb\");\n"
    "    if (!f) {\n"
    "        fprintf(stderr, \"%s: cannot open\\n\", path);\n"
    "        return 0;\n"
    "    }\n"
    "    unsigned char head[12];\n"
    "    size_t got = fread(head, 1, 10, f);\n"
    "    void *b = malloc(d->bytes ? d->bytes : 1);\n"
    "    int ok = b != 0;\n"
    "    if (ok && got == 10 && memcmp(head, \"\\223NUMPY\", 6) == 0) {\n"
    "        size_t hlen = (size_t)head[8] | (size_t)head[9] << 8;\n"
    "        if (head[6] >= 2 && head[6] <= 3 && fread(head + 10, 1, 2, f) == 2)\n"
    "            hlen |= (size_t)head[10] << 16 | (size_t)head[11] << 24;\n"
    "        else if (head[6] != 1) hlen = 0;\n"
    "        char *h = hlen && hlen < (1u << 20) ? (char *)malloc(hlen + 1) : 0;\n"
    "        ok = h && fread(h, 1, hlen, f) == hlen;\n"
    "        if (!ok) fprintf(stderr, \"%s: not a .npy file this program reads (version 1 to 3)\\n\", path);\n"
    "        if (ok) {\n"
    "            h[hlen] = 0;\n"
    "            ok = npy_check(path, h, d) == 0;\n"
    "        }\n"
    "        if (ok && !little_endian()) {\n"
    "            fprintf(stderr, \"%s: .npy inputs need a little-endian machine: give the raw bytes instead\\n\", path);\n"
    "            ok = 0;\n"
    "        }\n"
    "        free(h);\n"
    "        got = 0;\n"
    "    } else if (ok) {\n"
    "        got = got > d->bytes ? d->bytes + 1 : got; /* raw: these bytes are data */\n"
    "        memcpy(b, head, got < d->bytes ? got : d->bytes);\n"
    "    }\n"
    "    if (ok) {\n"
    "        size_t more = got <= d->bytes ? fread((unsigned char *)b + got, 1, d->bytes - got, f) : 0;\n"
    "        int extra = fgetc(f);\n"
    "        if (got + more != d->bytes || extra != EOF) {\n"
    "            fprintf(stderr, \"%s: expected exactly %zu bytes of data (%s \", path, d->bytes, d->dtype);\n"
    "            put_shape(stderr, d->rank, d->dims);\n"
    "            fputs(\")\\n\", stderr);\n"
    "            ok = 0;\n"
    "        }\n"
    "    }\n"
    "    fclose(f);\n"
    "    if (!ok) free(b);\n"
    "    return ok ? b : 0;\n"
    "}\n"
    "\n"
    "/* An output: .npy (version 1.0) when the path ends in .npy, else the raw bytes. */\n"
    "static int write_output(const char *path, const io_desc_ *d, const void *data) {\n"
    "    size_t n = strlen(path);\n"
    "    FILE *f = fopen(path, \"wb\");\n"
    "    int ok = f != 0;\n"
    "    if (ok && n >= 4 && strcmp(path + n - 4, \".npy\") == 0) {\n"
    "        char h[2048];\n"
    "        int len = snprintf(h, sizeof h, \"{'descr': '%s', 'fortran_order': False, 'shape': (\", d->descr);\n"
    "        for (int k = 0; k < d->rank; k++) len += snprintf(h + len, sizeof h - (size_t)len, \"%lld, \", d->dims[k]);\n"
    "        if (d->rank > 1) len -= 2; /* (3, 4) but (5,) */\n"
    "        else if (d->rank == 1) len -= 1;\n"
    "        len += snprintf(h + len, sizeof h - (size_t)len, \"), }\");\n"
    "        while ((10 + len + 1) % 64) h[len++] = ' ';\n"
    "        h[len++] = '\\n';\n"
    "        unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};\n"
    "        pre[8] = (unsigned char)(len & 0xff);\n"
    "        pre[9] = (unsigned char)(len >> 8);\n"
    "        ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)len, f) == (size_t)len;\n"
    "    }\n"
    "    if (ok) ok = fwrite(data, 1, d->bytes, f) == d->bytes;\n"
    "    if (f && fclose(f) != 0) ok = 0;\n"
    "    if (!ok) fprintf(stderr, \"%s: cannot write\\n\", path);\n"
    "    return ok ? 0 : -1;\n"
    "}\n";

static void gen_main(exp_state *e, bool embedded, lt_strbuf *m) {
    const lt_plan *p = e->p;
    const lt_graph *g = p->model->graph;
    const char *P = e->P;
    int n_in = 0, max_rank = 1;
    for (int i = 0; i < g->n_inputs; i++)
        if (api_input(p, i)) {
            n_in++;
            if (p->slots[p->input_slot[i]].rank > max_rank) max_rank = p->slots[p->input_slot[i]].rank;
        }
    for (int k = 0; k < g->n_outputs; k++)
        if (p->slots[p->output_slot[k]].rank > max_rank) max_rank = p->slots[p->output_slot[k]].rank;
    lt_sb_printf(m,
                 "/* %s_main.c: a command-line program for %s.c (generated by lathe): reads the model's %d input(s)\n"
                 " * from .npy files (or raw files of exactly their bytes), runs, writes the %d output(s) as .npy\n"
                 " * (or raw) files; `prog --help` lists them with their shapes. Builds as C99 or later:\n"
                 " *   cc -O2 %s.c %s_main.c -lm -o prog   (add -O3 -march=native -fopenmp for speed) */\n",
                 P, P, n_in, g->n_outputs, P, P);
    lt_sb_printf(m, "#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)\n#define _POSIX_C_SOURCE 200112L /* clock_gettime */\n"
                    "#endif\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
                    "#include \"%s.h\"\n\n#define MAX_RANK_ %d\n", P, max_rank);
    lt_sb_printf(m, "%s", main_helpers);
    /* the inputs and outputs the program takes, in order */
    for (int pass = 0; pass < 2; pass++) {
        lt_sb_printf(m, "\nstatic const io_desc_ %s_[] = {\n", pass ? "outputs" : "inputs");
        int n = pass ? g->n_outputs : g->n_inputs;
        for (int i = 0; i < n; i++) {
            if (!pass && !api_input(p, i)) continue;
            const lt_plan_slot *S = &p->slots[pass ? p->output_slot[i] : p->input_slot[i]];
            lt_sb_printf(m, "    {\"%s\", \"%s\", %d, {", npy_descr(S->dtype), lt_dtype_name(S->dtype), S->rank);
            for (int k = 0; k < S->rank; k++) lt_sb_printf(m, "%s%lld", k ? ", " : "", (long long)S->dims[k]);
            lt_sb_printf(m, "%s}, %lldu}, /* %s_%d */\n", S->rank ? "" : "0", (long long)S->bytes, pass ? "out" : "in", i);
        }
        lt_sb_printf(m, "    {0, 0, 0, {0}, 0},\n};\n");
    }
    lt_sb_printf(m, "static const int input_index_[] = {");
    for (int i = 0; i < g->n_inputs; i++)
        if (api_input(p, i)) lt_sb_printf(m, "%d, ", i);
    lt_sb_printf(m, "-1};\n#define N_IN_ %d\n#define N_OUT_ %d\n\n", n_in, g->n_outputs);
    /* usage */
    lt_sb_printf(m, "static void usage(FILE *f, const char *prog) {\n"
                    "    fprintf(f, \"usage: %%s [-w WEIGHTS] [-n RUNS] [-t THREADS] INPUT... OUTPUT...\\n\", prog);\n"
                    "    fputs(\"Runs the model that lathe compiled into %s.c.\\n\"\n"
                    "          \"  INPUT       one file per input, in the order below: a .npy file of the dtype and shape\\n\"\n"
                    "          \"              listed, or a raw file of exactly its bytes (C order, this machine's byte order)\\n\"\n"
                    "          \"  OUTPUT      one file per output, in the order below: .npy when the name ends in .npy,\\n\"\n"
                    "          \"              else the raw bytes\\n\"\n", P);
    if (embedded)
        lt_sb_printf(m, "          \"  -w WEIGHTS  not needed: the weights are built into the program\\n\"\n");
    else
        lt_sb_printf(m, "          \"  -w WEIGHTS  the weights file (default: %s.weights in the current folder, else in the\\n\"\n"
                        "          \"              program's folder)\\n\"\n", P);
    lt_sb_printf(m, "          \"  -n RUNS     then time RUNS more runs and print the median\\n\"\n"
                    "          \"  -t THREADS  threads (when built with -fopenmp)\\n\"\n"
                    "          \"inputs:\\n\", f);\n"
                    "    for (int i = 0; i < N_IN_; i++) put_io(f, %s_input_names[input_index_[i]], &inputs_[i]);\n"
                    "    fputs(\"outputs:\\n\", f);\n"
                    "    for (int i = 0; i < N_OUT_; i++) put_io(f, %s_output_names[i], &outputs_[i]);\n}\n\n", P, P);
    /* main */
    lt_sb_printf(m, "int main(int argc, char **argv) {\n    const char *weights = 0;\n    int runs = 0, threads = 0, np = 0;\n"
                    "    const char *pos[N_IN_ + N_OUT_ + 1];\n"
                    "    for (int i = 1; i < argc; i++) {\n"
                    "        if (!strcmp(argv[i], \"-h\") || !strcmp(argv[i], \"--help\")) { usage(stdout, argv[0]); return 0; }\n"
                    "        else if (!strcmp(argv[i], \"-w\") && i + 1 < argc) weights = argv[++i];\n"
                    "        else if (!strcmp(argv[i], \"-n\") && i + 1 < argc) runs = atoi(argv[++i]);\n"
                    "        else if (!strcmp(argv[i], \"-t\") && i + 1 < argc) threads = atoi(argv[++i]);\n"
                    "        else if (argv[i][0] == '-' && argv[i][1]) { fprintf(stderr, \"%%s: unknown option %%s\\n\", argv[0], argv[i]); np = -1; break; }\n"
                    "        else if (np >= 0 && np < N_IN_ + N_OUT_) pos[np++] = argv[i];\n"
                    "        else { np = -1; break; }\n    }\n"
                    "    if (np != N_IN_ + N_OUT_) { usage(stderr, argv[0]); return 1; }\n");
    if (!embedded)
        lt_sb_printf(m, "    char wbuf[4096];\n"
                        "    if (!weights) { /* %s.weights here, else next to the program */\n"
                        "        FILE *f = fopen(\"%s.weights\", \"rb\");\n"
                        "        const char *slash = strrchr(argv[0], '/');\n"
                        "        weights = \"%s.weights\";\n"
                        "        if (f) fclose(f);\n"
                        "        else if (slash && (size_t)(slash - argv[0]) + sizeof \"/%s.weights\" < sizeof wbuf) {\n"
                        "            memcpy(wbuf, argv[0], (size_t)(slash - argv[0]));\n"
                        "            strcpy(wbuf + (slash - argv[0]), \"/%s.weights\");\n"
                        "            weights = wbuf;\n        }\n    }\n", P, P, P, P, P);
    lt_sb_printf(m, "    %s_inputs in;\n    %s_outputs out;\n    memset(&in, 0, sizeof in);\n    memset(&out, 0, sizeof out);\n", P, P);
    int q = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        if (!api_input(p, i)) continue;
        lt_sb_printf(m, "    if (!(in.%s = read_input(pos[%d], &inputs_[%d]))) return 2;\n", e->in_names[i], q, q);
        q++;
    }
    for (int k = 0; k < g->n_outputs; k++)
        lt_sb_printf(m, "    if (!(out.%s = malloc(outputs_[%d].bytes + 1))) return 2;\n", e->out_names[k], k);
    lt_sb_printf(m,
                 "    if (%s_init(weights) != 0) { fprintf(stderr, \"%%s\\n\", %s_error()); return 2; }\n"
                 "    if (threads > 0) %s_set_threads(threads);\n"
                 "    if (%s_run(&in, &out, NULL) != 0) { fprintf(stderr, \"%%s\\n\", %s_error()); return 2; }\n"
                 "    if (runs > 0) {\n        double *t = (double *)malloc(sizeof *t * (size_t)runs);\n"
                 "        if (!t) return 2;\n"
                 "        for (int r = 0; r < runs; r++) { double t0 = now_ms(); %s_run(&in, &out, NULL); t[r] = now_ms() - t0; }\n"
                 "        qsort(t, (size_t)runs, sizeof *t, cmp);\n"
                 "        printf(\"median %%.3f ms over %%d runs\\n\", t[runs / 2], runs);\n        free(t);\n    }\n",
                 P, P, P, P, P, P);
    for (int k = 0; k < g->n_outputs; k++)
        lt_sb_printf(m, "    if (write_output(pos[N_IN_ + %d], &outputs_[%d], out.%s) != 0) return 2;\n", k, k, e->out_names[k]);
    for (int i = 0; i < g->n_inputs; i++)
        if (api_input(p, i)) lt_sb_printf(m, "    free((void *)in.%s);\n", e->in_names[i]);
    for (int k = 0; k < g->n_outputs; k++) lt_sb_printf(m, "    free(out.%s);\n", e->out_names[k]);
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
    if (!e.woff || !e.pack_index || !e.in_names || !e.out_names) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
    /* names */
    for (int i = 0; i < g->n_inputs; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "in_%d", i);
        if (!(e.in_names[i] = lt_arena_strdup(&e.a, nm))) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "out_%d", k);
        if (!(e.out_names[k] = lt_arena_strdup(&e.a, nm))) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (export)"); goto done; }
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
    if ((s = lt_emit_module(ctx, opt->lang ? opt->lang : &lt_lang_c, ek, ne, api.s, &src)) != LT_OK) goto done;
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
