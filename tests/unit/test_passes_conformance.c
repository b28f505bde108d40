/* test_passes_conformance.c — the passes against the whole ONNX node-test suite: for every test
 * model, bind the input shapes of its first data set, run the -O3 pipeline with verification, and,
 * when the passes changed the graph, run the interpreter on the data set before and after: the
 * answers must agree (rtol 1e-5; NaN matches NaN). Models with random ops are only checked for
 * a valid graph (their draws may legitimately change). Whether the interpreter agrees with the
 * expected outputs is the conformance runner's business; here only "passes change nothing".
 *
 * The suite is found like `lathe conformance` finds it: $LATHE_ONNX_SUITE, else the onnx Python
 * package ($LATHE_PYTHON or python3; requirements.txt pins it). Not finding it is a failure.
 * Exits non-zero on any failure, printing the test names. */
#include "test_passes_util.h"

#include "onnx/onnx.h"

#include "onnx_suite.h"

static bool has_random(const lt_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        if (n->op == LT_OP_RandomNormal || n->op == LT_OP_RandomNormalLike || n->op == LT_OP_RandomUniform ||
            n->op == LT_OP_RandomUniformLike || n->op == LT_OP_Bernoulli || n->op == LT_OP_Multinomial ||
            n->op == LT_OP_Dropout)
            return true;
        for (int a = 0; a < n->n_attr; a++) {
            if (n->attrs[a].type == LT_AT_GRAPH && has_random(n->attrs[a].g)) return true;
            if (n->attrs[a].type == LT_AT_GRAPHS)
                for (int k = 0; k < n->attrs[a].n; k++)
                    if (has_random(n->attrs[a].graphs[k])) return true;
        }
    }
    return false;
}

static bool same_datum(const lt_datum *a, const lt_datum *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case LT_DK_TENSOR: {
        const lt_tensor *x = a->tensor, *y = b->tensor;
        if (x->dtype != y->dtype || x->rank != y->rank || x->numel != y->numel) return false;
        for (int i = 0; i < x->rank; i++)
            if (x->dims[i] != y->dims[i]) return false;
        if (x->dtype == LT_STRING) {
            for (int64_t i = 0; i < x->numel; i++)
                if (strcmp(((char *const *)x->data)[i], ((char *const *)y->data)[i]) != 0) return false;
            return true;
        }
        lt_dclass c = lt_dtype_get(x->dtype)->cls;
        if (c != LT_DC_FLOAT && c != LT_DC_COMPLEX)
            return memcmp(x->data, y->data, (size_t)lt_tensor_nbytes(x)) == 0;
        for (int64_t i = 0; i < x->numel; i++) {
            double p = lt_load_f64(x->data, x->dtype, i), q = lt_load_f64(y->data, y->dtype, i);
            if (isnan(p) && isnan(q)) continue;
            if (isinf(p) || isinf(q)) {
                if (p != q) return false;
                continue;
            }
            if (!(fabs(p - q) <= 1e-6 + 1e-5 * fabs(q))) return false;
        }
        return true;
    }
    case LT_DK_SEQUENCE:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!same_datum(a->items[i], b->items[i])) return false;
        return true;
    case LT_DK_OPTIONAL: return same_datum(a->value, b->value);
    default: return true; /* maps: not produced by node tests' outputs we compare */
    }
}

typedef struct stats {
    int models, changed, compared, skipped_random, failed;
} stats;

static void report_fail(stats *st, const char *test, const char *fmt, const char *msg) {
    fprintf(stderr, "%s: ", test);
    fprintf(stderr, fmt, msg);
    fprintf(stderr, "\n");
    st->failed++;
}

static void check_test(const char *suite, const char *test, stats *st) {
    char dir[2048], path[2304];
    snprintf(dir, sizeof dir, "%s/%s", suite, test);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) return; /* the conformance runner reports loads */
    if (lt_model_check_supported(&ctx, m) != LT_OK) {
        lt_model_free(m);
        return;
    }
    st->models++;
    lt_graph *g = m->graph;
    int n_in = g->n_inputs, n_out = g->n_outputs;
    lt_datum **in = calloc((size_t)n_in + 1, sizeof *in), **before = calloc((size_t)n_out + 1, sizeof *before),
             **after = calloc((size_t)n_out + 1, sizeof *after);
    /* inputs of data set 0: input_k.pb binds the k-th graph input without an initializer */
    int next = 0;
    bool have_data = suite_is_dir(dir);
    for (int k = 0; have_data; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
        FILE *f = fopen(path, "rb");
        if (!f) break;
        fclose(f);
        while (next < n_in && g->inputs[next]->init) next++;
        if (next >= n_in || lt_onnx_read_datum_file(&ctx, path, &g->inputs[next]->type, &in[next]) != LT_OK) {
            have_data = false;
            break;
        }
        const lt_datum *d = in[next];
        if (d->kind == LT_DK_TENSOR && g->inputs[next]->type.kind == LT_TK_TENSOR) {
            lt_ctx bc = {0};
            lt_model_bind_shape(&bc, m, g->inputs[next]->name, d->tensor->rank, d->tensor->dims); /* best effort */
        }
        next++;
    }
    lt_ctx_clear(&ctx);
    bool random = has_random(g);
    bool ran_before = have_data && !random && lt_interp_run(&ctx, m, NULL, in, before) == LT_OK;
    lt_ctx_clear(&ctx);
    lt_pass_options o = {.level = 3, .verify_each = true};
    lt_pass_report rep = {0};
    if (lt_passes_run(&ctx, m, &o, &rep) != LT_OK) {
        report_fail(st, test, "passes: %s", ctx.msg);
    } else {
        bool changed = false;
        for (int i = 0; i < rep.n; i++) changed |= rep.runs[i].changed;
        if (!rep.converged) report_fail(st, test, "%s", "no fixed point within the round limit");
        if (changed) st->changed++;
        if (changed && random) st->skipped_random++;
        if (changed && ran_before) {
            st->compared++;
            if (g->n_outputs != n_out) {
                report_fail(st, test, "%s", "the passes changed the number of outputs");
            } else if (lt_interp_run(&ctx, m, NULL, in, after) != LT_OK) {
                report_fail(st, test, "interpreter after the passes: %s", ctx.msg);
            } else {
                for (int k = 0; k < n_out; k++)
                    if (!same_datum(before[k], after[k])) {
                        report_fail(st, test, "output '%s' differs after the passes", g->outputs[k]->name);
                        break;
                    }
            }
        }
    }
    lt_pass_report_free(&rep);
    for (int i = 0; i < n_in; i++) lt_datum_release(in[i]);
    for (int i = 0; i < n_out; i++) {
        lt_datum_release(before[i]);
        lt_datum_release(after[i]);
    }
    free(in);
    free(before);
    free(after);
    lt_model_free(m);
}

int main(void) {
    char suite[1024];
    if (!suite_find(suite, sizeof suite)) {
        fprintf(stderr, "test_passes_conformance: the ONNX node tests were not found (set LATHE_ONNX_SUITE, or "
                        "install the onnx package of requirements.txt)\n");
        return 1;
    }
    int n = 0;
    char **names = suite_list(suite, &n);
    if (!names) return 1;
    stats st = {0};
    for (int i = 0; i < n; i++) {
        check_test(suite, names[i], &st);
        free(names[i]);
    }
    free(names);
    printf("test_passes_conformance: %d models, %d changed by -O3, %d compared before/after, %d with random ops, "
           "%d failed\n",
           st.models, st.changed, st.compared, st.skipped_random, st.failed);
    CHECK(st.models > 1000 && st.compared > 200); /* the suite was really there and the passes had work */
    return st.failed || failures ? 1 : 0;
}
