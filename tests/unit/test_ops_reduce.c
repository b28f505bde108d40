/* test_ops_reduce.c — unit tests of the reduce family (src/ops/reduce*.c) for what the ONNX node
 * tests do not reach: old-opset semantics (Softmax coercion to 2-D, attribute axes), exact int64
 * reductions, empty reductions, tie and NaN order in TopK/ArgMax, error paths (bad indices, bad
 * shapes) and out-of-memory on every allocation. Nodes are built by hand and run through the hooks
 * in the op table. Exits non-zero on any failure. */
#include "ops/ops.h"

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

/* ---- a hand-built node ---- */
#define MAXIO 6
typedef struct tnode {
    lt_node node;
    lt_value vin[MAXIO], vout[MAXIO];
    lt_value *pin[MAXIO], *pout[MAXIO];
    lt_dim dims[MAXIO][LT_MAX_RANK];
    lt_datum *in[MAXIO], *out[MAXIO];
    lt_attr attrs[8];
    lt_ctx ctx;
    lt_arena arena;
} tnode;

static void tn_init(tnode *t, int op, const char *op_type, int opset, int n_out) {
    memset(t, 0, sizeof *t);
    lt_arena_init(&t->arena);
    t->node.name = "t";
    t->node.op_type = op_type;
    t->node.domain = "";
    t->node.op = op;
    t->node.opset = opset;
    t->node.in = t->pin;
    t->node.out = t->pout;
    t->node.attrs = t->attrs;
    t->node.n_out = n_out;
    for (int i = 0; i < n_out; i++) {
        t->vout[i].name = "y";
        t->pout[i] = &t->vout[i];
    }
}

/* Append input: a tensor of doubles (or NULL data: omitted input). const_init: also an initializer. */
static lt_tensor *tn_input(tnode *t, lt_dtype dt, int rank, const int64_t *dims, const double *vals, bool const_init) {
    int i = t->node.n_in++;
    lt_tensor *x;
    if (lt_tensor_new(&t->ctx, dt, rank, dims, &x)) return NULL;
    for (int64_t k = 0; vals && k < x->numel; k++) lt_store_f64(x->data, dt, k, vals[k]);
    lt_datum_tensor(&t->ctx, x, &t->in[i]);
    for (int d = 0; d < rank; d++) t->dims[i][d] = (lt_dim){dims[d], NULL};
    t->vin[i].name = "x";
    lt_type_set_tensor(&t->vin[i].type, dt, rank, t->dims[i]);
    if (const_init) t->vin[i].init = x;
    else t->vin[i].is_input = true;
    t->pin[i] = &t->vin[i];
    return x;
}
static void tn_skip_input(tnode *t) { t->node.n_in++; }

static void tn_int(tnode *t, const char *name, int64_t v) {
    lt_attr *a = &t->attrs[t->node.n_attr++];
    a->name = name;
    a->type = LT_AT_INT;
    a->i = v;
}
static void tn_ints(tnode *t, const char *name, int64_t *v, int n) {
    lt_attr *a = &t->attrs[t->node.n_attr++];
    a->name = name;
    a->type = LT_AT_INTS;
    a->ints = v;
    a->n = n;
}
static void tn_str(tnode *t, const char *name, const char *s) {
    lt_attr *a = &t->attrs[t->node.n_attr++];
    a->name = name;
    a->type = LT_AT_STRING;
    a->s = s;
    a->s_len = (int64_t)strlen(s);
}

static lt_status tn_eval(tnode *t) {
    lt_eval ev = {&t->ctx, 1, NULL, NULL};
    for (int i = 0; i < MAXIO; i++) {
        lt_datum_release(t->out[i]);
        t->out[i] = NULL;
    }
    return lt_op_hooks_get(t->node.op)->eval(&ev, &t->node, t->in, t->out);
}
static lt_status tn_infer(tnode *t) {
    lt_infer ic = {&t->ctx, &t->arena};
    return lt_op_hooks_get(t->node.op)->infer(&ic, &t->node);
}
static const lt_tensor *tn_out(tnode *t, int i) { return t->out[i] ? t->out[i]->tensor : NULL; }
static double outf(tnode *t, int i, int64_t k) { return lt_load_f64(tn_out(t, i)->data, tn_out(t, i)->dtype, k); }
static int64_t outi(tnode *t, int i, int64_t k) { return lt_load_i64(tn_out(t, i)->data, tn_out(t, i)->dtype, k); }

static void tn_free(tnode *t) {
    for (int i = 0; i < MAXIO; i++) {
        lt_datum_release(t->in[i]);
        lt_datum_release(t->out[i]);
    }
    lt_arena_free(&t->arena);
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-6 + 1e-5 * fabs(b); }

/* ---- tests ---- */

static void test_reduce_int64_exact(void) {
    tnode t;
    tn_init(&t, LT_OP_ReduceSum, "ReduceSum", 13, 1);
    int64_t dims[2] = {2, 2};
    lt_tensor *x = tn_input(&t, LT_INT64, 2, dims, NULL, false);
    int64_t *xd = x->data;
    xd[0] = ((int64_t)1 << 61) + 1;
    xd[1] = 3;
    xd[2] = ((int64_t)1 << 61) + 5;
    xd[3] = -7;
    int64_t ax[1] = {1};
    double axv[1] = {0};
    tn_input(&t, LT_INT64, 1, ax, axv, true);
    tn_int(&t, "keepdims", 0);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->rank == 1 && tn_out(&t, 0)->dims[0] == 2);
    CHECK(outi(&t, 0, 0) == (((int64_t)1 << 61) + 1) + (((int64_t)1 << 61) + 5)); /* exact, not via double */
    CHECK(outi(&t, 0, 1) == -4);
    /* infer knows the shape from the constant axes */
    CHECK(tn_infer(&t) == LT_OK);
    CHECK(t.vout[0].type.rank == 1 && t.vout[0].type.dims[0].value == 2 && t.vout[0].type.dtype == LT_INT64);
    tn_free(&t);
}

static void test_reduce_empty_and_noop(void) {
    tnode t;
    tn_init(&t, LT_OP_ReduceMax, "ReduceMax", 18, 1);
    int64_t dims[2] = {3, 0};
    tn_input(&t, LT_INT32, 2, dims, NULL, false);
    CHECK(tn_eval(&t) == LT_OK); /* all axes, keepdims */
    CHECK(tn_out(&t, 0)->rank == 2 && tn_out(&t, 0)->numel == 1 && outi(&t, 0, 0) == INT32_MIN);
    tn_free(&t);

    tn_init(&t, LT_OP_ReduceSumSquare, "ReduceSumSquare", 18, 1);
    int64_t d3[1] = {3}, d0[1] = {0};
    double v[3] = {1, -2, 3};
    tn_input(&t, LT_FLOAT, 1, d3, v, false);
    tn_input(&t, LT_INT64, 1, d0, NULL, false);
    tn_int(&t, "noop_with_empty_axes", 1);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->numel == 3 && outf(&t, 0, 1) == 4 && outf(&t, 0, 2) == 9);
    tn_free(&t);

    /* opset 11: axes attribute; mean of float over axis 0 */
    tn_init(&t, LT_OP_ReduceMean, "ReduceMean", 11, 1);
    int64_t d22[2] = {2, 2};
    double w[4] = {1, 2, 3, 5};
    int64_t axes[1] = {-2};
    tn_input(&t, LT_DOUBLE, 2, d22, w, false);
    tn_ints(&t, "axes", axes, 1);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->rank == 2 && outf(&t, 0, 0) == 2 && outf(&t, 0, 1) == 3.5);
    tn_free(&t);
}

static void test_softmax_coerce(void) {
    /* opset 11, axis 0: one row of all 6 elements */
    tnode t;
    tn_init(&t, LT_OP_Softmax, "Softmax", 11, 1);
    int64_t dims[2] = {2, 3};
    double v[6] = {1, 2, 3, 4, 5, 6};
    tn_input(&t, LT_FLOAT, 2, dims, v, false);
    tn_int(&t, "axis", 0);
    CHECK(tn_eval(&t) == LT_OK);
    double s = 0;
    for (int k = 0; k < 6; k++) s += outf(&t, 0, k);
    CHECK(near(s, 1.0));
    CHECK(near(outf(&t, 0, 5) / outf(&t, 0, 0), exp(5.0)));
    tn_free(&t);
    /* opset 13, axis 0: each column normalized */
    tn_init(&t, LT_OP_Softmax, "Softmax", 13, 1);
    tn_input(&t, LT_FLOAT, 2, dims, v, false);
    tn_int(&t, "axis", 0);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(near(outf(&t, 0, 0) + outf(&t, 0, 3), 1.0));
    tn_free(&t);
}

static void test_topk_argmax_order(void) {
    tnode t;
    tn_init(&t, LT_OP_TopK, "TopK", 11, 2);
    int64_t dims[1] = {5}, kd[1] = {1};
    double v[5] = {1, NAN, 3, 3, -1}, k[1] = {3};
    tn_input(&t, LT_FLOAT, 1, dims, v, false);
    tn_input(&t, LT_INT64, 1, kd, k, true);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(isnan(outf(&t, 0, 0)) && outi(&t, 1, 0) == 1); /* NaN ranks first */
    CHECK(outi(&t, 1, 1) == 2 && outi(&t, 1, 2) == 3);   /* ties: lower index first */
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.dims[0].value == 3 && t.vout[1].type.dtype == LT_INT64);
    tn_free(&t);

    tn_init(&t, LT_OP_ArgMax, "ArgMax", 13, 1);
    double a[4] = {3, 1, 3, 2};
    int64_t ad[1] = {4};
    tn_input(&t, LT_UINT64, 1, ad, a, false);
    tn_int(&t, "select_last_index", 1);
    CHECK(tn_eval(&t) == LT_OK && outi(&t, 0, 0) == 2);
    tn_free(&t);
}

static void test_cumsum_int(void) {
    tnode t;
    tn_init(&t, LT_OP_CumSum, "CumSum", 14, 1);
    int64_t dims[1] = {4}, none[1] = {0};
    double v[4] = {1, 2, 3, 4}, ax[1] = {0};
    tn_input(&t, LT_INT32, 1, dims, v, false);
    tn_input(&t, LT_INT32, 0, none, ax, false);
    tn_int(&t, "exclusive", 1);
    tn_int(&t, "reverse", 1);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(outi(&t, 0, 0) == 9 && outi(&t, 0, 1) == 7 && outi(&t, 0, 2) == 4 && outi(&t, 0, 3) == 0);
    tn_free(&t);
}

static void test_losses(void) {
    tnode t;
    tn_init(&t, LT_OP_NegativeLogLikelihoodLoss, "NegativeLogLikelihoodLoss", 13, 1);
    int64_t xd[2] = {3, 2}, td[1] = {3};
    double x[6] = {-1, -2, -3, -4, -5, -6}, tg[3] = {1, 0, 1};
    tn_input(&t, LT_FLOAT, 2, xd, x, false);
    lt_tensor *tt = tn_input(&t, LT_INT64, 1, td, tg, false);
    tn_int(&t, "ignore_index", 0);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->rank == 0 && near(outf(&t, 0, 0), (2.0 + 6.0) / 2.0)); /* mean over non-ignored */
    ((int64_t *)tt->data)[1] = 7;                                                /* out of range */
    CHECK(tn_eval(&t) == LT_ERR_INVALID && strstr(t.ctx.msg, "out of range"));
    tn_free(&t);

    tn_init(&t, LT_OP_SoftmaxCrossEntropyLoss, "SoftmaxCrossEntropyLoss", 13, 2);
    double z[6] = {0, 0, 0, 0, 0, 0}, tz[3] = {0, 1, 0};
    tn_input(&t, LT_FLOAT, 2, xd, z, false);
    tn_input(&t, LT_INT64, 1, td, tz, false);
    tn_str(&t, "reduction", "sum");
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(near(outf(&t, 0, 0), 3 * log(2.0)) && near(outf(&t, 1, 0), -log(2.0)));
    tn_free(&t);
}

static void test_errors(void) {
    tnode t;
    tn_init(&t, LT_OP_ReduceSum, "ReduceSum", 13, 1);
    int64_t dims[2] = {2, 2}, ad[1] = {2};
    double v[4] = {1, 2, 3, 4}, axes[2] = {1, -1};
    tn_input(&t, LT_FLOAT, 2, dims, v, false);
    tn_input(&t, LT_INT64, 1, ad, axes, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID && strstr(t.ctx.msg, "repeated")); /* 1 and -1 name one axis */
    tn_free(&t);

    tn_init(&t, LT_OP_GroupNormalization, "GroupNormalization", 21, 1);
    int64_t xd[3] = {1, 4, 2}, cd[1] = {4};
    double x[8] = {0}, c[4] = {1, 1, 1, 1};
    tn_input(&t, LT_FLOAT, 3, xd, x, false);
    tn_input(&t, LT_FLOAT, 1, cd, c, false);
    tn_input(&t, LT_FLOAT, 1, cd, c, false);
    tn_int(&t, "num_groups", 3);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init(&t, LT_OP_TopK, "TopK", 11, 2);
    int64_t kd[1] = {1};
    double k[1] = {5};
    tn_input(&t, LT_FLOAT, 2, dims, v, false);
    tn_input(&t, LT_INT64, 1, kd, k, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init(&t, LT_OP_LayerNormalization, "LayerNormalization", 17, 1);
    tn_input(&t, LT_FLOAT, 2, dims, v, false);
    tn_skip_input(&t);
    CHECK(tn_eval(&t) == LT_ERR_INVALID); /* Scale is required */
    tn_free(&t);
}

/* Every allocation of an eval fails in turn: the op reports NOMEM (never crashes or leaks). */
static long g_countdown = -1;
static void *failing_alloc(void *u, size_t n) {
    (void)u;
    if (g_countdown == 0) return NULL;
    if (g_countdown > 0) g_countdown--;
    return malloc(n ? n : 1);
}
static void *failing_realloc(void *u, void *p, size_t n) {
    (void)u;
    if (g_countdown == 0) return NULL;
    if (g_countdown > 0) g_countdown--;
    return realloc(p, n ? n : 1);
}
static void plain_free(void *u, void *p) { (void)u; free(p); }

static void oom_sweep(tnode *t) {
    lt_allocator a = {failing_alloc, failing_realloc, plain_free, NULL};
    bool ok = false;
    for (long n = 0; n < 64 && !ok; n++) {
        lt_ctx_clear(&t->ctx);
        lt_set_allocator(&a);
        g_countdown = n;
        lt_status s = tn_eval(t);
        lt_set_allocator(NULL);
        g_countdown = -1;
        CHECK(s == LT_OK || s == LT_ERR_NOMEM);
        ok = s == LT_OK;
    }
    CHECK(ok);
}

static void test_oom(void) {
    int64_t dims[3] = {2, 3, 4}, kd[1] = {1}, cd[1] = {3};
    double v[24], k[1] = {2}, ax[1] = {1}, c[3] = {1, 2, 3};
    for (int i = 0; i < 24; i++) v[i] = (i * 7) % 11 - 5;
    tnode t;
    tn_init(&t, LT_OP_ReduceLogSumExp, "ReduceLogSumExp", 18, 1);
    tn_input(&t, LT_FLOAT, 3, dims, v, false);
    tn_input(&t, LT_INT64, 1, kd, ax, false);
    oom_sweep(&t);
    tn_free(&t);
    tn_init(&t, LT_OP_TopK, "TopK", 11, 2);
    tn_input(&t, LT_FLOAT, 3, dims, v, false);
    tn_input(&t, LT_INT64, 1, kd, k, false);
    oom_sweep(&t);
    tn_free(&t);
    tn_init(&t, LT_OP_BatchNormalization, "BatchNormalization", 15, 3);
    tn_input(&t, LT_FLOAT, 3, dims, v, false);
    for (int i = 0; i < 4; i++) tn_input(&t, LT_FLOAT, 1, cd, c, false);
    tn_int(&t, "training_mode", 1);
    oom_sweep(&t);
    tn_free(&t);
    tn_init(&t, LT_OP_SoftmaxCrossEntropyLoss, "SoftmaxCrossEntropyLoss", 13, 2);
    int64_t xd[2] = {4, 3}, td[1] = {4};
    double tg[4] = {0, 1, 2, 1};
    tn_input(&t, LT_FLOAT, 2, xd, v, false);
    tn_input(&t, LT_INT64, 1, td, tg, false);
    oom_sweep(&t);
    tn_free(&t);
}

int main(void) {
    test_reduce_int64_exact();
    test_reduce_empty_and_noop();
    test_softmax_coerce();
    test_topk_argmax_order();
    test_cumsum_int();
    test_losses();
    test_errors();
    test_oom();
    if (failures) {
        fprintf(stderr, "test_ops_reduce: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_ops_reduce: ok\n");
    return 0;
}
