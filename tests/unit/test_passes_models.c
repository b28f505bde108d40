/* test_passes_models.c — the whole pipeline on models written the way exporters write them
 * (tests/data/passes/, made by tests/passes/make_models.py with random weights; expected outputs
 * from onnxruntime): a BERT encoder layer, a conv net with BatchNorms, a GPT-2 block.
 * For each: the interpreter matches onnxruntime before the passes; after -O3 (with --verify-each)
 * it still matches, and matches its own earlier answer closely; the graph shrank the way it should
 * (shape chains folded when dims are bound, BatchNorms folded, LayerNorm / GELU recognized). The
 * same with the symbolic dims left unbound (only partial folding is possible). Exits non-zero on
 * any failure. Run from the repository root (CTest does). */
#include "test_passes_util.h"

#include "onnx/onnx.h"

#define DIR "tests/data/passes/"

typedef struct model_case {
    const char *name;
    bool bind;
    /* op counts expected after -O3 (-1: not checked) */
    int shape_ops, layernorms, gelus, batchnorms;
    int max_nodes;
} model_case;

static int count_op(const lt_graph *g, int op) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) c += g->nodes[i]->op == op;
    return c;
}

static bool file_exists(const char *p) {
    FILE *f = fopen(p, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static bool bind_dims(lt_ctx *ctx, lt_model *m, const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/dims.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[256];
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (*line && lt_model_bind_dim_spec(ctx, m, line) != LT_OK) ok = false;
    }
    fclose(f);
    return ok;
}

/* Compare outputs with rtol / atol; prints the first mismatch. */
static bool close_all(const char *what, lt_datum **got, lt_datum **want, int n, double rtol, double atol) {
    for (int i = 0; i < n; i++) {
        const lt_tensor *a = got[i]->tensor, *b = want[i]->tensor;
        if (a->dtype != b->dtype || a->numel != b->numel) {
            fprintf(stderr, "%s: output %d: dtype or size differs\n", what, i);
            return false;
        }
        for (int64_t k = 0; k < a->numel; k++) {
            double x = lt_load_f64(a->data, a->dtype, k), y = lt_load_f64(b->data, b->dtype, k);
            if (!(fabs(x - y) <= atol + rtol * fabs(y))) {
                fprintf(stderr, "%s: output %d element %lld: %.9g vs %.9g\n", what, i, (long long)k, x, y);
                return false;
            }
        }
    }
    return true;
}

static void run_case(const model_case *mc) {
    char dir[256], path[512], what[300];
    snprintf(dir, sizeof dir, DIR "%s", mc->name);
    snprintf(what, sizeof what, "%s (%s)", mc->name, mc->bind ? "dims bound" : "dims symbolic");
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) {
        fprintf(stderr, "%s: %s\n", what, ctx.msg);
        failures++;
        return;
    }
    if (mc->bind) CHECK(bind_dims(&ctx, m, dir));
    lt_graph *g = m->graph;
    lt_datum *in[8] = {0}, *want[8] = {0}, *before[8] = {0}, *after[8] = {0};
    int n_in = 0, n_out = g->n_outputs;
    for (; n_in < g->n_inputs && n_in < 8; n_in++) {
        snprintf(path, sizeof path, "%s/input_%d.pb", dir, n_in);
        CHECK_OK(lt_onnx_read_datum_file(&ctx, path, &g->inputs[n_in]->type, &in[n_in]), &ctx);
    }
    for (int k = 0; k < n_out && k < 8; k++) {
        snprintf(path, sizeof path, "%s/output_%d.pb", dir, k);
        CHECK_OK(lt_onnx_read_datum_file(&ctx, path, &g->outputs[k]->type, &want[k]), &ctx);
    }
    CHECK_OK(lt_interp_run(&ctx, m, NULL, in, before), &ctx);
    if (!ctx.status) CHECK(close_all(what, before, want, n_out, 1e-4, 1e-5)); /* the oracle agrees with ORT */

    int nodes = g->n_nodes;
    lt_pass_options o = {.level = 3, .verify_each = true};
    lt_pass_report rep = {0};
    CHECK_OK(lt_passes_run(&ctx, m, &o, &rep), &ctx);
    CHECK(rep.converged);
    lt_pass_report_free(&rep);
    CHECK_OK(lt_interp_run(&ctx, m, NULL, in, after), &ctx);
    if (!ctx.status) {
        CHECK(close_all(what, after, want, n_out, 1e-4, 1e-5));
        CHECK(close_all(what, after, before, n_out, 1e-5, 1e-6));
    }
    int shapes = count_op(g, LT_OP_Shape) + count_op(g, LT_OP_Gather) + count_op(g, LT_OP_Concat);
    if (mc->shape_ops >= 0 && shapes != mc->shape_ops) {
        fprintf(stderr, "%s: %d Shape/Gather/Concat nodes left, expected %d\n", what, shapes, mc->shape_ops);
        failures++;
    }
    if (mc->layernorms >= 0) CHECK(count_op(g, LT_OP_LayerNormalization) == mc->layernorms);
    if (mc->gelus >= 0) CHECK(count_op(g, LT_OP_Gelu) == mc->gelus);
    if (mc->batchnorms >= 0) CHECK(count_op(g, LT_OP_BatchNormalization) == mc->batchnorms);
    if (g->n_nodes > mc->max_nodes) {
        fprintf(stderr, "%s: %d -> %d nodes, expected at most %d\n", what, nodes, g->n_nodes, mc->max_nodes);
        failures++;
    }
    for (int i = 0; i < 8; i++) {
        lt_datum_release(in[i]);
        lt_datum_release(want[i]);
        lt_datum_release(before[i]);
        lt_datum_release(after[i]);
    }
    lt_model_free(m);
}

int main(void) {
    if (!file_exists(DIR "bert_layer/model.onnx")) {
        fprintf(stderr, "test_passes_models: %s not found: run from the repository root\n", DIR);
        return 1;
    }
    static const model_case cases[] = {
        /* bert: 6 MatMul+Add linears, 2 attention MatMuls, Softmax, mask (Unsqueeze/Cast/Sub/Mul folded? no:
         * the mask is an input), head reshapes with constant shapes, 2 LayerNorm, 1 Gelu */
        {"bert_layer", true, 0, 2, 1, -1, 40},
        {"bert_layer", false, -1, 2, 1, -1, 80},
        {"convnet", true, -1, 0, 0, 0, 12},
        {"gpt_block", true, 0, 2, 0, -1, 45},
        {"gpt_block", false, -1, 2, 0, -1, 110},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
    if (failures) {
        fprintf(stderr, "test_passes_models: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_passes_models: all passed\n");
    return 0;
}
