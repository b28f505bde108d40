/* test_ops_reduce.c — unit tests of the reduce family (src/ops/reduce/) for what the ONNX node
 * tests do not reach: old-opset semantics (Softmax coercion to 2-D, attribute axes), exact int64
 * reductions, empty reductions, tie and NaN order in TopK/ArgMax, error paths (bad indices, bad
 * shapes) and out-of-memory on every allocation. Nodes are built by hand and run through the hooks
 * in the op table. Exits non-zero on any failure. */
#include "ops/ops.h"
#include "test_node.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return test_report("test_ops_reduce");
}
