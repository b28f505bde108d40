/* test_lower.c — end-to-end tests of fusion + lowering without a C compiler: every model of
 * tests/data/lower_*.onnx is fused, each compiled group is lowered to Loop IR and run by the Loop
 * IR evaluator (src/loop/leval.c), host groups run through the ops' eval hooks, and the graph
 * outputs must match the reference interpreter on random inputs (rtol 1e-4). Each model runs four
 * ways: unscheduled and with the default schedule, with and without the GEMM microkernel step (the
 * evaluator implements `lt_sgemm` by the microkernel calling convention of schedule.h). Also checks
 * the printed Loop IR of a small elementwise group and of a reduction. Exits non-zero on failure. */
#include "interp/interp.h"
#include "loop/leval.h"
#include "lower/lower.h"
#include "onnx/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define CHECK_OK(ctx, expr)                                                                        \
    do {                                                                                           \
        if ((expr) != LT_OK) {                                                                     \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, (ctx)->msg);      \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static uint64_t rng = 99;
static double urand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* lt_sgemm(C, A, B, M, N, K, S_C(i,j,k), S_A(i,j,k), S_B(i,j,k)): C += A*B, the nest it replaced */
static lt_status call_fn(lt_ctx *ctx, const char *name, int n, const lt_leval_arg *a, lt_leval_arg *res, void *user) {
    (void)res;
    int *calls = user;
    if (strcmp(name, "lt_sgemm") != 0 || n != 15)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "test evaluator: unknown call %s/%d", name, n);
    float *C = a[0].ptr;
    const float *A = a[1].ptr, *B = a[2].ptr;
    int64_t M = a[3].i, N = a[4].i, K = a[5].i;
    const int64_t *s = NULL;
    int64_t st[9];
    for (int i = 0; i < 9; i++) st[i] = a[6 + i].i;
    s = st;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            int64_t co = i * s[0] + j * s[1];
            if (co < 0 || co >= a[0].avail) return lt_error(ctx, LT_ERR_INVALID, "lt_sgemm: C out of range");
            for (int64_t k = 0; k < K; k++) {
                int64_t ao = i * s[3] + j * s[4] + k * s[5], bo = i * s[6] + j * s[7] + k * s[8];
                if (ao < 0 || ao >= a[1].avail || bo < 0 || bo >= a[2].avail)
                    return lt_error(ctx, LT_ERR_INVALID, "lt_sgemm: operand out of range");
                C[co] += A[ao] * B[bo];
            }
        }
    (*calls)++;
    return LT_OK;
}

static lt_tensor *random_tensor(const lt_value *v) {
    lt_ctx c = {0};
    int64_t dims[LT_MAX_RANK];
    for (int i = 0; i < v->type.rank; i++) dims[i] = v->type.dims[i].value;
    lt_tensor *t = NULL;
    if (lt_tensor_new(&c, v->type.dtype, v->type.rank, dims, &t) != LT_OK) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        switch (t->dtype) {
        case LT_FLOAT: ((float *)t->data)[i] = (float)(urand() * 2 - 1); break;
        case LT_INT64: ((int64_t *)t->data)[i] = (int64_t)(urand() * 10); break; /* ids < 10 */
        case LT_BOOL: ((uint8_t *)t->data)[i] = urand() < 0.5; break;
        default: break;
        }
    }
    return t;
}

typedef struct run_opts {
    bool schedule, no_microkernels;
    lt_fuse_options fuse;
} run_opts;

/* Run the groups in order; outputs[i] gets graph output i (new references). */
static lt_status run_groups(lt_ctx *ctx, const lt_model *m, lt_datum **vals, const run_opts *ro, int *sgemm_calls,
                            int *kernels) {
    const lt_graph *g = m->graph;
    lt_arena arena;
    lt_arena_init(&arena);
    lt_groups gs;
    lt_status s = lt_fuse(ctx, m, &arena, &ro->fuse, &gs);
    lt_lower_options lo = {.vector_lanes = 4, .no_microkernels = ro->no_microkernels};
    for (int gi = 0; s == LT_OK && gi < gs.n; gi++) {
        const lt_group *gr = &gs.groups[gi];
        if (gr->host) {
            const lt_node *n = gr->nodes[0];
            lt_datum *in[16] = {0}, *out[16] = {0};
            for (int i = 0; i < n->n_in; i++) in[i] = n->in[i] ? vals[n->in[i]->id] : NULL;
            lt_eval ev = {ctx, 0, NULL, m};
            s = lt_op_hooks_get(n->op)->eval(&ev, n, in, out);
            for (int i = 0; i < n->n_out; i++)
                if (n->out[i]) vals[n->out[i]->id] = out[i];
                else lt_datum_release(out[i]);
            continue;
        }
        lt_lowered lw;
        s = lt_lower_group(ctx, &gs, gr, &arena, &lo, &lw);
        if (s == LT_OK && ro->schedule) s = lt_lower_apply_schedule(ctx, &lw);
        if (s != LT_OK) break;
        (*kernels)++;
        void *args[64];
        for (int i = 0; i < lw.n_args && s == LT_OK; i++) {
            const lt_value *v = lw.arg_values[i];
            if (i < gr->n_outputs) {
                int64_t dims[LT_MAX_RANK];
                for (int d = 0; d < v->type.rank; d++) dims[d] = v->type.dims[d].value;
                lt_tensor *t;
                s = lt_tensor_new(ctx, v->type.dtype, v->type.rank, dims, &t);
                if (s == LT_OK) s = lt_datum_tensor(ctx, t, &vals[v->id]);
            }
            if (s == LT_OK && !vals[v->id]) s = lt_error(ctx, LT_ERR_INTERNAL, "test: no value for '%s'", v->name);
            if (s == LT_OK) args[i] = vals[v->id]->tensor->data;
        }
        if (s == LT_OK) s = lt_leval(ctx, lw.kernel, args, call_fn, sgemm_calls);
    }
    lt_arena_free(&arena);
    (void)g;
    return s;
}

static void run_model(const char *path, const run_opts *ro, int expect_kernels_min) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) {
        fprintf(stderr, "load %s: %s\n", path, ctx.msg);
        failures++;
        return;
    }
    const lt_graph *g = m->graph;
    lt_datum **inputs = calloc((size_t)g->n_inputs, sizeof *inputs);
    lt_datum **ref = calloc((size_t)g->n_outputs, sizeof *ref);
    lt_datum **vals = calloc((size_t)g->n_values, sizeof *vals);
    rng = 99;
    for (int i = 0; i < g->n_inputs; i++) {
        lt_tensor *t = random_tensor(g->inputs[i]);
        CHECK(t && lt_datum_tensor(&ctx, t, &inputs[i]) == LT_OK);
        vals[g->inputs[i]->id] = lt_datum_retain(inputs[i]);
    }
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init && !vals[i]) {
            lt_tensor_retain(g->values[i]->init);
            CHECK(lt_datum_tensor(&ctx, g->values[i]->init, &vals[i]) == LT_OK);
        }
    CHECK_OK(&ctx, lt_interp_run(&ctx, m, NULL, inputs, ref));
    int calls = 0, kernels = 0;
    lt_status s = run_groups(&ctx, m, vals, ro, &calls, &kernels);
    if (s != LT_OK) {
        fprintf(stderr, "%s (schedule %d, no_mk %d): %s\n", path, ro->schedule, ro->no_microkernels, ctx.msg);
        failures++;
    }
    CHECK(kernels >= expect_kernels_min);
    if (ro->schedule && !ro->no_microkernels && strstr(path, "mlp")) CHECK(calls > 0);
    if (ro->no_microkernels || !ro->schedule) CHECK(calls == 0);
    for (int i = 0; s == LT_OK && i < g->n_outputs; i++) {
        const lt_datum *a = ref[i], *b = vals[g->outputs[i]->id];
        CHECK(a && b && a->tensor && b->tensor);
        if (!a || !b || !a->tensor || !b->tensor) continue;
        const lt_tensor *ta = a->tensor, *tb = b->tensor;
        CHECK(ta->numel == tb->numel && ta->dtype == tb->dtype);
        if (ta->numel != tb->numel || ta->dtype != tb->dtype) continue;
        int bad = 0;
        for (int64_t j = 0; j < ta->numel; j++) {
            double x, y;
            if (ta->dtype == LT_FLOAT) x = ((float *)ta->data)[j], y = ((float *)tb->data)[j];
            else if (ta->dtype == LT_INT64) x = (double)((int64_t *)ta->data)[j], y = (double)((int64_t *)tb->data)[j];
            else continue;
            if (!(fabs(x - y) <= 1e-5 + 1e-4 * fabs(x))) {
                if (bad++ < 3)
                    fprintf(stderr, "%s output %s[%lld]: ref %g got %g (schedule %d)\n", path, g->outputs[i]->name,
                            (long long)j, x, y, ro->schedule);
            }
        }
        CHECK(bad == 0);
    }
    for (int i = 0; i < g->n_inputs; i++) lt_datum_release(inputs[i]);
    for (int i = 0; i < g->n_outputs; i++) lt_datum_release(ref[i]);
    for (int i = 0; i < g->n_values; i++) lt_datum_release(vals[i]);
    free(inputs), free(ref), free(vals);
    lt_model_free(m);
}

static const struct {
    const char *path;
    int min_kernels;
} models[] = {
    {"tests/data/lower_ew.onnx", 2},   {"tests/data/lower_ln.onnx", 3},  {"tests/data/lower_attn.onnx", 4},
    {"tests/data/lower_mlp.onnx", 3},  {"tests/data/lower_conv.onnx", 6}, {"tests/data/lower_inj.onnx", 3},
    {"tests/data/lower_red.onnx", 10}, {"tests/data/lower_host.onnx", 2},
};

/* The printed Loop IR of one lowered group. */
static char *lowered_text(const char *path, int group, bool schedule) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) return NULL;
    lt_arena arena;
    lt_arena_init(&arena);
    lt_groups gs;
    lt_lowered lw;
    lt_lower_options lo = {.vector_lanes = 4};
    char *res = NULL;
    if (lt_fuse(&ctx, m, &arena, NULL, &gs) == LT_OK && group < gs.n &&
        lt_lower_group(&ctx, &gs, &gs.groups[group], &arena, &lo, &lw) == LT_OK &&
        (!schedule || lt_lower_apply_schedule(&ctx, &lw) == LT_OK)) {
        lt_strbuf sb = {0};
        lt_kernel_print(lw.kernel, &sb);
        res = strdup(sb.s ? sb.s : "");
        lt_sb_free(&sb);
    } else {
        fprintf(stderr, "lowered_text %s g%d: %s\n", path, group, ctx.msg);
    }
    lt_arena_free(&arena);
    lt_model_free(m);
    return res;
}

static void test_printed_ir(void) {
    /* y = exp(relu(x) * c + z) over [2,3,4] with c[4]: the coalesced view is [6, 4] */
    char *t = lowered_text("tests/data/lower_ew.onnx", 0, false);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "for i0 in [0, 6)") || !strstr(t, "for i1 in [0, 4)") || !strstr(t, "exp(") ||
            !strstr(t, "c[i1]"))
            fprintf(stderr, "unexpected Loop IR for lower_ew g0:\n%s\n", t), failures++;
        free(t);
    }
    /* the second group: y2 = -sigmoid(x), one flat loop of 24 */
    t = lowered_text("tests/data/lower_ew.onnx", 1, true);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "[0, 24)") && !strstr(t, "vectorized")) fprintf(stderr, "lower_ew g1:\n%s\n", t), failures++;
        free(t);
    }
}

int main(void) {
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        for (int v = 0; v < 3; v++) {
            run_opts ro = {.schedule = v >= 1, .no_microkernels = v == 1};
            run_model(models[i].path, &ro, models[i].min_kernels);
        }
        run_opts nofuse = {.schedule = true, .fuse = {.no_fusion = true}};
        run_model(models[i].path, &nofuse, models[i].min_kernels);
    }
    test_printed_ir();
    if (failures) fprintf(stderr, "test_lower: %d failure(s)\n", failures);
    return failures != 0;
}
