/* test_passes_util.h — shared by the tests/unit/test_passes*.c programs: a builder for small models
 * made with the mutation API (src/passes/mutate.h), a runner of one pass (or a pass list) through the
 * pass manager, printed-IR comparison, and the correctness check every pass test makes: the
 * interpreter's outputs on the same (random, never zero) inputs agree before and after.
 * Header-only (static functions): each test program includes it once. */
#ifndef TEST_PASSES_UTIL_H
#define TEST_PASSES_UTIL_H

#include "ops/infer.h"
#include "passes/mutate.h"
#include "interp/interp.h"
#include "ops/ops.h"
#include "passes/pass.h"
#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_OK(expr, ctxp)                                                                       \
    do {                                                                                           \
        lt_status s_ = (expr);                                                                     \
        if (s_ != LT_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, (ctxp)->msg);     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- building ---- */
typedef struct tb {
    lt_model *m;
    lt_graph *g;
    lt_ctx ctx;
} tb;

static inline void tb_init(tb *b, int opset) {
    memset(b, 0, sizeof *b);
    lt_arena a;
    lt_arena_init(&a);
    lt_model *m = lt_arena_alloc(&a, sizeof *m);
    m->arena = a;
    m->ir_version = 8;
    m->producer_name = m->producer_version = "";
    m->n_opsets = 1;
    m->opsets = lt_arena_alloc(&m->arena, sizeof *m->opsets);
    m->opsets[0] = (lt_opset){"", opset};
    lt_graph *g = lt_arena_alloc(&m->arena, sizeof *g);
    g->model = m;
    g->name = "main";
    m->graph = g;
    b->m = m;
    b->g = g;
}

static inline void tb_free(tb *b) { lt_model_free(b->m); }

static inline lt_value **grow(lt_model *m, lt_value **arr, int n) {
    lt_value **p = lt_arena_alloc(&m->arena, (size_t)(n + 1) * sizeof *p);
    if (n) memcpy(p, arr, (size_t)n * sizeof *p);
    return p;
}

static inline lt_type tb_type(lt_dtype dt, int rank, const int64_t *dims, const char *const *params) {
    lt_type t = {0};
    lt_dim *d = rank > 0 ? calloc((size_t)rank, sizeof *d) : NULL; /* copied by lt_value_new */
    for (int i = 0; i < rank; i++) d[i] = (lt_dim){dims[i], params && params[i] ? params[i] : NULL};
    lt_type_set_tensor(&t, dt, rank, d);
    return t;
}

/* Graph input of graph g (b->g when NULL); dims -1 with a param name make symbolic dims. */
static inline lt_value *tb_input_in(tb *b, lt_graph *g, const char *name, lt_dtype dt, int rank, const int64_t *dims,
                             const char *const *params) {
    lt_type t = tb_type(dt, rank, dims, params);
    lt_value *v = NULL;
    CHECK_OK(lt_value_new(&b->ctx, g, name, &t, &v), &b->ctx);
    free(t.dims);
    v->is_input = true;
    g->inputs = grow(b->m, g->inputs, g->n_inputs);
    g->inputs[g->n_inputs++] = v;
    return v;
}
static inline lt_value *tb_input(tb *b, const char *name, lt_dtype dt, int rank, const int64_t *dims) {
    return tb_input_in(b, b->g, name, dt, rank, dims, NULL);
}

static inline void tb_output_in(tb *b, lt_graph *g, lt_value *v) {
    g->outputs = grow(b->m, g->outputs, g->n_outputs);
    g->outputs[g->n_outputs++] = v;
    v->is_output = true;
}
static inline void tb_output(tb *b, lt_value *v) { tb_output_in(b, b->g, v); }

/* Constant initializer from doubles (any numeric dtype). */
static inline lt_value *tb_const(tb *b, const char *name, lt_dtype dt, int rank, const int64_t *dims, const double *vals) {
    lt_tensor *t = NULL;
    CHECK_OK(lt_tensor_new(&b->ctx, dt, rank, dims, &t), &b->ctx);
    for (int64_t i = 0; t && i < t->numel; i++) lt_store_f64(t->data, dt, i, vals[i]);
    lt_value *v = NULL;
    CHECK_OK(lt_value_new_const(&b->ctx, b->g, name, t, &v), &b->ctx);
    return v;
}
static inline lt_value *tb_scalar(tb *b, const char *name, lt_dtype dt, double x) { return tb_const(b, name, dt, 0, NULL, &x); }
static inline lt_value *tb_ints(tb *b, const char *name, int n, const int64_t *vals) {
    lt_tensor *t = NULL;
    int64_t d = n;
    CHECK_OK(lt_tensor_new(&b->ctx, LT_INT64, 1, &d, &t), &b->ctx);
    if (t && n) memcpy(t->data, vals, (size_t)n * sizeof *vals);
    lt_value *v = NULL;
    CHECK_OK(lt_value_new_const(&b->ctx, b->g, name, t, &v), &b->ctx);
    return v;
}

/* Node in graph g appended at the end, outputs named `out` (or out, out_1, ...), types inferred. */
static inline lt_node *tb_node_in(tb *b, lt_graph *g, const char *op, const char *out, int n_out, int n_in, ...) {
    lt_value *ins[16];
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++) ins[i] = va_arg(ap, lt_value *);
    va_end(ap);
    lt_node *n = NULL;
    CHECK_OK(lt_node_new(&b->ctx, g, op, "", n_in, ins, n_out, out, NULL, &n), &b->ctx);
    return n;
}
#define tb_node(b, op, out, n_in, ...) tb_node_in((b), (b)->g, (op), (out), 1, (n_in), __VA_ARGS__)

static inline void tb_infer(tb *b) { CHECK_OK(lt_graph_infer(&b->ctx, b->m), &b->ctx); }

/* ---- printing and comparing ---- */
static inline char *tb_print(const tb *b) {
    lt_strbuf s = {0};
    lt_graph_print(b->g, &s);
    return s.s ? s.s : calloc(1, 1);
}

static inline int expect_ir_at(const tb *b, const char *want, const char *file, int line) {
    char *got = tb_print(b);
    int bad = strcmp(got, want) != 0;
    if (bad) {
        fprintf(stderr, "%s:%d: printed IR differs.\n--- want\n%s--- got\n%s---\n", file, line, want, got);
        failures++;
    }
    lt_mem_free(got);
    return bad;
}
#define EXPECT_IR(b, want) expect_ir_at((b), (want), __FILE__, __LINE__)

/* Does the printed IR contain s? */
static inline bool ir_has(const tb *b, const char *s) {
    char *got = tb_print(b);
    bool r = strstr(got, s) != NULL;
    lt_mem_free(got);
    return r;
}

/* ---- running ---- */
/* Run the passes in `only` (comma list) at level 3 with verification; others disabled. */
static inline lt_status tb_run_passes(tb *b, const char *only, lt_pass_report *rep) {
    char disable[512] = "";
    for (int i = 0; i < lt_pipeline_size(); i++) {
        const char *nm = lt_pipeline_get(i)->pass->name;
        char pat[64];
        snprintf(pat, sizeof pat, ",%s,", nm);
        char list[512];
        snprintf(list, sizeof list, ",%s,", only);
        if (!strstr(list, pat)) {
            if (*disable) strcat(disable, ",");
            strcat(disable, nm);
        }
    }
    lt_pass_options o = {.level = 3, .verify_each = true, .disable = disable};
    return lt_passes_run(&b->ctx, b->m, &o, rep);
}

/* Deterministic inputs: uniform in [-2, 2] excluding tiny magnitudes (never zero); ints in 1..5. */
static inline lt_datum *tb_random_input(const lt_value *v, uint64_t *seed) {
    lt_ctx c = {0};
    int64_t dims[LT_MAX_RANK];
    for (int i = 0; i < v->type.rank; i++) dims[i] = v->type.dims[i].value >= 0 ? v->type.dims[i].value : 2;
    lt_tensor *t = NULL;
    if (lt_tensor_new(&c, v->type.dtype, v->type.rank, dims, &t)) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(*seed >> 11) / 9007199254740992.0;
        double x = lt_dtype_is_float(t->dtype) ? (u < 0.5 ? -0.1 - 3.8 * u : 0.1 + 3.8 * (u - 0.5)) : 1 + (int)(u * 5);
        if (t->dtype == LT_BOOL) x = u < 0.5;
        lt_store_f64(t->data, t->dtype, i, x);
    }
    lt_datum *d = NULL;
    lt_datum_tensor(&c, t, &d);
    return d;
}

typedef struct tb_snap {
    int n, compare; /* outputs; how many to compare (the rest may be random) */
    lt_datum *out[8];
    lt_datum *in[8];
} tb_snap;

/* Run the interpreter on fresh deterministic inputs (kept in the snapshot for the second run). */
static inline void tb_snapshot(tb *b, tb_snap *s) {
    memset(s, 0, sizeof *s);
    uint64_t seed = 12345;
    for (int i = 0; i < b->g->n_inputs && i < 8; i++) s->in[i] = tb_random_input(b->g->inputs[i], &seed);
    s->n = s->compare = b->g->n_outputs;
    lt_ctx c = {0};
    if (lt_interp_run(&c, b->m, NULL, s->in, s->out) != LT_OK) {
        fprintf(stderr, "interpreter (before): %s\n", c.msg);
        failures++;
        s->n = 0;
    }
}

static inline bool tensors_close(const lt_tensor *a, const lt_tensor *b, double rtol, double atol) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    for (int64_t i = 0; i < a->numel; i++) {
        double x = lt_load_f64(a->data, a->dtype, i), y = lt_load_f64(b->data, b->dtype, i);
        if (isnan(x) && isnan(y)) continue;
        if (!(fabs(x - y) <= atol + rtol * fabs(y))) return false;
    }
    return true;
}

/* Same outputs as the snapshot (names kept, values within rtol). Frees the snapshot. */
static inline void tb_check_same_at(tb *b, tb_snap *s, double rtol, const char *file, int line) {
    lt_datum *out[8] = {0};
    lt_ctx c = {0};
    if (b->g->n_outputs != s->n) {
        fprintf(stderr, "%s:%d: output count changed %d -> %d\n", file, line, s->n, b->g->n_outputs);
        failures++;
    } else if (lt_interp_run(&c, b->m, NULL, s->in, out) != LT_OK) {
        fprintf(stderr, "%s:%d: interpreter (after): %s\n", file, line, c.msg);
        failures++;
    } else {
        for (int i = 0; i < s->n; i++) {
            if (i < s->compare && !tensors_close(out[i]->tensor, s->out[i]->tensor, rtol, 1e-6)) {
                fprintf(stderr, "%s:%d: output %d '%s' differs after the passes\n", file, line, i, b->g->outputs[i]->name);
                failures++;
            }
            lt_datum_release(out[i]);
        }
    }
    for (int i = 0; i < 8; i++) {
        lt_datum_release(s->in[i]);
        lt_datum_release(s->out[i]);
    }
}
#define TB_CHECK_SAME(b, s) tb_check_same_at((b), (s), 1e-6, __FILE__, __LINE__)
#define TB_CHECK_CLOSE(b, s, rtol) tb_check_same_at((b), (s), (rtol), __FILE__, __LINE__)

#endif
