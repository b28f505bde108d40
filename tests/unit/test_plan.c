/* test_plan.c — the compile pipeline and the runtime plan on the small models of tests/data (the test
 * runs from the source root), against the reference interpreter on random inputs (never zeros):
 *   - every node a host step (all_host, -O0: bitwise equal to the interpreter; -O2: within 1e-4);
 *   - compiled with the C compiler (when `cc` runs here): within 1e-4, twice (the plan is reused),
 *     through lt_plan_run_buffers too, with and without in-place reuse; the memory plan of the real
 *     plan is checked pair by pair (no two live workspace buffers overlap);
 *   - the optimized graph written as ONNX (onnx_writer.c) and read back runs to the same outputs;
 *   - inputs with an initializer are frozen unless given; a frozen input given at run time fails;
 *   - allocation failures at every point of compile + run are reported, never crash.
 * Exits non-zero on failure. */
#include "compile/compile.h"
#include "interp/interp.h"
#include "onnx/onnx.h"
#include "onnx/onnx_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "test_models.h"

static const char *const MODELS[] = {"tests/data/lower_ew.onnx",  "tests/data/lower_ln.onnx",
                                     "tests/data/lower_attn.onnx", "tests/data/lower_mlp.onnx",
                                     "tests/data/lower_conv.onnx", "tests/data/lower_inj.onnx",
                                     "tests/data/lower_red.onnx",  "tests/data/lower_host.onnx", NULL};

/* Compiled modules are cached across runs of this test (content-addressed: always safe). */
static char cache_dir[512];

static uint64_t rng = 0x9E3779B97F4A7C15ull; /* the random inputs' sequence (test_models.h) */

static bool close_datum(const lt_datum *a, const lt_datum *b, double tol) {
    if (!a || !b || a->kind != b->kind) return false;
    if (a->kind != LT_DK_TENSOR) return true;
    const lt_tensor *x = a->tensor, *y = b->tensor;
    if (x->dtype != y->dtype || x->rank != y->rank || x->numel != y->numel) return false;
    for (int k = 0; k < x->rank; k++)
        if (x->dims[k] != y->dims[k]) return false;
    for (int64_t i = 0; i < x->numel; i++) {
        double p = lt_load_f64(x->data, x->dtype, i), q = lt_load_f64(y->data, y->dtype, i);
        if (tol == 0 ? memcmp(&p, &q, sizeof p) != 0 && !(isnan(p) && isnan(q))
                     : !(fabs(p - q) <= tol * (1 + fabs(q)) || (isnan(p) && isnan(q))))
            return false;
    }
    return true;
}

/* Interpreter outputs of m on `in`. */
static lt_datum **reference(const lt_model *m, lt_datum **in) {
    lt_ctx ctx = {0};
    lt_datum **out = calloc((size_t)m->graph->n_outputs + 1, sizeof *out);
    if (!out || lt_interp_run(&ctx, m, NULL, in, out) != LT_OK) {
        fprintf(stderr, "interpreter: %s\n", ctx.msg);
        failures++;
    }
    return out;
}

/* Pairwise check of the plan's workspace: live ranges that intersect never share bytes. */
static void check_plan_memory(const lt_plan *p) {
    int n = lt_plan_n_slots(p);
    for (int i = 0; i < n; i++) {
        const lt_plan_slot *a = lt_plan_get_slot(p, i);
        if (a->kind != LT_SLOT_WORKSPACE || a->bytes == 0) continue;
        if (a->alias_of >= 0 && lt_plan_get_slot(p, a->alias_of)->kind != LT_SLOT_WORKSPACE) continue; /* views an input */
        CHECK(a->offset % LT_MEMPLAN_ALIGN == 0 && a->def_step <= a->last_step);
        for (int j = i + 1; j < n; j++) {
            const lt_plan_slot *b = lt_plan_get_slot(p, j);
            if (b->kind != LT_SLOT_WORKSPACE || b->bytes == 0) continue;
            if (b->alias_of >= 0 && lt_plan_get_slot(p, b->alias_of)->kind != LT_SLOT_WORKSPACE) continue;
            bool live = a->def_step <= b->last_step && b->def_step <= a->last_step;
            bool mem = a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
            bool handover = (b->inplace && b->def_step == a->last_step) || (a->inplace && a->def_step == b->last_step);
            int ra = a->alias_of >= 0 ? a->alias_of : i, rb = b->alias_of >= 0 ? b->alias_of : j;
            if (ra == rb) continue; /* a view and what it views share memory by design */
            if (live && mem && !handover) {
                fprintf(stderr, "slots %d '%s' and %d '%s' overlap while both live\n", i, a->value->name, j,
                        b->value->name);
                failures++;
            }
        }
    }
    lt_plan_stats st;
    lt_plan_get_stats(p, &st);
    CHECK(st.workspace_bytes <= st.intermediates_bytes && st.workspace_bytes >= st.lower_bound_bytes);
}

/* Compile a fresh copy of `path` with `o`, run it twice on `in`, compare with `want`. */
static int compiled_vs_reference(const char *path, lt_compile_options *o, lt_datum **in, lt_datum **want,
                                 double tol, const char *what) {
    lt_model *m = test_load_model(path);
    if (!m) return 0;
    lt_ctx ctx = {0};
    lt_plan *p = NULL;
    lt_compile_report rep = {0};
    if (lt_compile(&ctx, m, o, &p, &rep) != LT_OK) {
        fprintf(stderr, "%s (%s): compile: %s\n", path, what, ctx.msg);
        failures++;
        lt_compile_report_free(&rep);
        lt_model_free(m);
        return 0;
    }
    CHECK(rep.n_fallback_groups == 0);
    int no = m->graph->n_outputs;
    for (int r = 0; r < 2; r++) {
        lt_datum **out = calloc((size_t)no + 1, sizeof *out);
        lt_ctx c2 = {0};
        CHECK(lt_plan_run(&c2, p, NULL, in, out) == LT_OK);
        for (int k = 0; k < no; k++)
            if (!close_datum(out[k], want[k], tol)) {
                fprintf(stderr, "%s (%s, run %d): output %d '%s' differs from the interpreter %s\n", path, what, r, k,
                        m->graph->outputs[k]->name, c2.msg);
                failures++;
            }
        test_free_datums(out, no);
    }
    /* caller memory, when every output is static */
    bool all_static = true;
    for (int k = 0; k < no; k++) all_static &= lt_plan_output_bytes(p, k) >= 0;
    if (all_static) {
        void **ob = calloc((size_t)no + 1, sizeof *ob);
        const void **ib = calloc((size_t)m->graph->n_inputs + 1, sizeof *ib);
        for (int i = 0; i < m->graph->n_inputs; i++) ib[i] = in[i] ? in[i]->tensor->data : NULL;
        for (int k = 0; k < no; k++) ob[k] = calloc(1, (size_t)lt_plan_output_bytes(p, k) + 1);
        lt_ctx c3 = {0};
        CHECK(lt_plan_run_buffers(&c3, p, NULL, ib, ob) == LT_OK);
        for (int k = 0; k < no; k++) {
            lt_tensor *t = NULL;
            lt_datum *d = NULL;
            const lt_tensor *w = want[k]->tensor;
            lt_tensor_borrow(&c3, w->dtype, w->rank, w->dims, ob[k], &t);
            lt_datum_tensor(&c3, t, &d);
            if (!close_datum(d, want[k], tol)) {
                fprintf(stderr, "%s (%s, buffers): output %d differs %s\n", path, what, k, c3.msg);
                failures++;
            }
            lt_datum_release(d);
            free(ob[k]);
        }
        free(ob);
        free(ib);
    }
    check_plan_memory(p);
    int n_inplace = rep.plan.n_inplace;
    lt_plan_free(p);
    lt_compile_report_free(&rep);
    lt_model_free(m);
    return n_inplace;
}

static void roundtrip_onnx(const char *path, lt_datum **in, lt_datum **want) {
    lt_model *m = test_load_model(path);
    if (!m) return;
    lt_ctx ctx = {0};
    lt_pass_options po = {.level = 3};
    lt_pass_report pr = {0};
    CHECK(lt_passes_run(&ctx, m, &po, &pr) == LT_OK);
    lt_pass_report_free(&pr);
    uint8_t *data = NULL;
    size_t size = 0;
    CHECK(lt_onnx_write_model(&ctx, m, &data, &size) == LT_OK);
    lt_model *m2 = NULL;
    if (data && lt_onnx_load_memory(&ctx, data, size, NULL, NULL, &m2) != LT_OK) {
        fprintf(stderr, "%s: the written ONNX does not load: %s\n", path, ctx.msg);
        failures++;
    }
    if (m2) {
        CHECK(m2->graph->n_nodes == m->graph->n_nodes && m2->graph->n_outputs == m->graph->n_outputs);
        for (int i = 0; i < m->graph->n_nodes && i < m2->graph->n_nodes; i++)
            CHECK(strcmp(m->graph->nodes[i]->op_type, m2->graph->nodes[i]->op_type) == 0);
        lt_datum **out = reference(m2, in);
        for (int k = 0; k < m2->graph->n_outputs; k++)
            if (!close_datum(out[k], want[k], 1e-4)) {
                fprintf(stderr, "%s: output %d of the written ONNX differs\n", path, k);
                failures++;
            }
        test_free_datums(out, m2->graph->n_outputs);
    }
    lt_model_free(m2);
    lt_mem_free(data);
    lt_model_free(m);
}

/* A model whose weight W is a graph input with an initializer (IR < 4 style). */
static void test_freeze(bool have_cc) {
    lt_ctx ctx = {0};
    lt_model *m = test_load_model("tests/data/lower_mlp.onnx");
    if (!m) return;
    /* make every initializer a graph input too */
    lt_graph *g = m->graph;
    int n_init = 0;
    for (int i = 0; i < g->n_values; i++) n_init += g->values[i]->init && !g->values[i]->is_input;
    lt_value **ins = lt_arena_alloc(&m->arena, sizeof(lt_value *) * (size_t)(g->n_inputs + n_init + 1));
    memcpy(ins, g->inputs, sizeof(lt_value *) * (size_t)g->n_inputs);
    int n = g->n_inputs;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init && !g->values[i]->is_input) {
            g->values[i]->is_input = true;
            ins[n++] = g->values[i];
        }
    g->inputs = ins;
    int n_before = g->n_inputs;
    g->n_inputs = n;
    lt_datum **in = test_random_inputs(m, &rng, false);
    lt_datum **want = reference(m, in);
    lt_compile_options o;
    lt_compile_options_init(&o);
    o.all_host = !have_cc;
    o.cache_dir = cache_dir;
    lt_plan *p = NULL;
    lt_compile_report rep = {0};
    CHECK(lt_compile(&ctx, m, &o, &p, &rep) == LT_OK);
    CHECK(rep.n_frozen_inputs == n - n_before && m->graph->n_inputs == n_before);
    CHECK(p && lt_plan_n_inputs(p) == n);
    if (p) {
        lt_datum **out = calloc((size_t)g->n_outputs + 1, sizeof *out);
        CHECK(lt_plan_run(&ctx, p, NULL, in, out) == LT_OK);
        for (int k = 0; k < g->n_outputs; k++) CHECK(close_datum(out[k], want[k], 1e-4));
        test_free_datums(out, g->n_outputs);
        /* giving a frozen input is an error naming it */
        lt_ctx c2 = {0};
        lt_datum *w = NULL;
        lt_datum_tensor(&c2, lt_tensor_retain(ins[n - 1]->init), &w);
        lt_datum **in2 = calloc((size_t)n + 1, sizeof *in2);
        for (int i = 0; i < n; i++) in2[i] = in[i] ? lt_datum_retain(in[i]) : NULL;
        in2[n - 1] = w;
        lt_datum **out2 = calloc((size_t)g->n_outputs + 1, sizeof *out2);
        CHECK(lt_plan_run(&c2, p, NULL, in2, out2) == LT_ERR_INVALID && strstr(c2.msg, "frozen"));
        CHECK(out2[0] == NULL);
        test_free_datums(out2, g->n_outputs);
        test_free_datums(in2, n);
    }
    lt_plan_free(p);
    lt_compile_report_free(&rep);
    test_free_datums(in, n);
    test_free_datums(want, g->n_outputs);
    lt_model_free(m);
}

/* ---- allocation failures ---- */
static long fail_at = -1, calls;
static void *f_alloc(void *u, size_t n) { (void)u; return calls++ == fail_at ? NULL : malloc(n); }
static void *f_realloc(void *u, void *p, size_t n) { (void)u; return calls++ == fail_at ? NULL : realloc(p, n); }
static void f_free(void *u, void *p) { (void)u; free(p); }

static void test_oom(void) {
    const char *path = "tests/data/lower_host.onnx";
    lt_model *m0 = test_load_model(path);
    if (!m0) return;
    lt_datum **in = test_random_inputs(m0, &rng, false);
    int nin = m0->graph->n_inputs, nout = m0->graph->n_outputs;
    lt_allocator al = {f_alloc, f_realloc, f_free, NULL};
    int nomem = 0, ok = 0;
    for (fail_at = 0; fail_at < 4000; fail_at += fail_at < 300 ? 1 : 7) {
        lt_model *m = test_load_model(path);
        if (!m) break;
        calls = 0;
        lt_set_allocator(&al);
        lt_ctx ctx = {0};
        lt_compile_options o;
        lt_compile_options_init(&o);
        o.all_host = true;
        lt_plan *p = NULL;
        lt_compile_report rep = {0};
        lt_status s = lt_compile(&ctx, m, &o, &p, &rep);
        lt_datum **out = calloc((size_t)nout + 1, sizeof *out);
        if (s == LT_OK) s = lt_plan_run(&ctx, p, NULL, in, out);
        lt_set_allocator(NULL);
        if (s == LT_OK) ok++;
        else if (s == LT_ERR_NOMEM || strstr(ctx.msg, "out of memory")) nomem++;
        else {
            fprintf(stderr, "allocation failure %ld: unexpected status %s: %s\n", fail_at, lt_status_name(s), ctx.msg);
            failures++;
        }
        test_free_datums(out, nout);
        lt_plan_free(p);
        lt_compile_report_free(&rep);
        lt_model_free(m);
        if (s == LT_OK && calls <= fail_at) break; /* past the last allocation */
    }
    CHECK(nomem > 20 && ok >= 1);
    test_free_datums(in, nin);
    lt_model_free(m0);
}

int main(void) {
    bool have_cc = system("cc --version >/dev/null 2>&1") == 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(cache_dir, sizeof cache_dir, "%s/lathe-test-cache-%ld", tmp && *tmp ? tmp : "/tmp", (long)getuid());
    if (!have_cc) printf("test_plan: no `cc` here: compiled plans are not tested\n");
    for (int i = 0; MODELS[i]; i++) {
        lt_model *m = test_load_model(MODELS[i]);
        if (!m) continue;
        lt_datum **in = test_random_inputs(m, &rng, false);
        lt_datum **want = reference(m, in);
        lt_compile_options o;
        lt_compile_options_init(&o);
        o.all_host = true;
        o.opt_level = 0;
        compiled_vs_reference(MODELS[i], &o, in, want, 0, "all host, -O0");
        o.opt_level = 2;
        compiled_vs_reference(MODELS[i], &o, in, want, 1e-4, "all host, -O2");
        if (have_cc) {
            lt_compile_options_init(&o);
            o.threads = 2;
            o.cache_dir = cache_dir;
            compiled_vs_reference(MODELS[i], &o, in, want, 1e-4, "compiled, -O3");
            o.no_inplace = true;
            o.opt_level = 1;
            o.strict = true;
            compiled_vs_reference(MODELS[i], &o, in, want, 1e-4, "compiled, -O1, strict, no in-place");
        }
        roundtrip_onnx(MODELS[i], in, want);
        test_free_datums(in, m->graph->n_inputs);
        test_free_datums(want, m->graph->n_outputs);
        lt_model_free(m);
    }
    if (have_cc) { /* one kernel per node: elementwise kernels reuse their dying input in place */
        int total = 0;
        for (int i = 0; MODELS[i]; i++) {
            lt_model *m = test_load_model(MODELS[i]);
            if (!m) continue;
            lt_datum **in = test_random_inputs(m, &rng, false);
            lt_datum **want = reference(m, in);
            lt_compile_options o;
            lt_compile_options_init(&o);
            o.cache_dir = cache_dir;
            o.no_fusion = true;
            o.strict = true;
            total += compiled_vs_reference(MODELS[i], &o, in, want, 1e-4, "compiled, no fusion, in place");
            test_free_datums(in, m->graph->n_inputs);
            test_free_datums(want, m->graph->n_outputs);
            lt_model_free(m);
        }
        CHECK(total >= 3);
    }
    test_freeze(have_cc);
    test_oom();
    if (failures) {
        fprintf(stderr, "test_plan: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_plan: ok\n");
    return 0;
}
