/* contrib_act.c — com.microsoft's activations and bias adds:
 *   Gelu(X)               0.5 x (1 + erf(x / sqrt 2))
 *   FastGelu(X, bias?)    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), x = X + bias
 *   BiasGelu(A, B)        Gelu(A + B)
 *   QuickGelu(X)          x sigmoid(alpha x), alpha default 1.702
 *   BiasAdd(X, bias, skip) X + bias + skip, X and skip (N, S, C), bias (C)
 * A bias is 1-D with the length of the input's last dim. */
#include "contrib_impl.h"

#include <math.h>

/* A float input x with an optional (or required) bias vector along its last dim. */
static lt_status bias_check(lt_ctx *ctx, const lt_node *n, const ct_arg *x, const ct_arg *bias, bool required,
                            ct_out *out) {
    LT_TRY(ct_want_float(ctx, n, x, LT_UNDEFINED, "input"));
    if (x->rank < 1 && (ct_present(bias) || required))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 1 to take a bias");
    if (ct_present(bias)) {
        LT_TRY(ct_want_float(ctx, n, bias, x->dt, "bias"));
        LT_TRY(ct_want_vec(ctx, n, bias, x->d[x->rank - 1], "bias"));
    } else if (required) {
        return lt_node_error(ctx, n, LT_ERR_INVALID, "the bias input is required");
    }
    ct_out_like(&out[0], x, x->dt);
    return LT_OK;
}

static lt_status check_gelu(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    return bias_check(ctx, n, &in[0], &in[1], false, out);
}

static lt_status check_biasgelu(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    return bias_check(ctx, n, &in[0], &in[1], true, out);
}

static lt_status check_quickgelu(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    if (!isfinite(lt_attr_float(n, "alpha", 1.702f)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute alpha must be finite");
    return bias_check(ctx, n, &in[0], &in[1], false, out);
}

static lt_status check_biasadd(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    LT_TRY(ct_want_rank(ctx, n, &in[0], 3, "X"));
    if (!ct_present(&in[2])) return lt_node_error(ctx, n, LT_ERR_INVALID, "the skip input is required");
    LT_TRY(ct_want_float(ctx, n, &in[2], in[0].dt, "skip"));
    LT_TRY(ct_want_rank(ctx, n, &in[2], 3, "skip"));
    for (int k = 0; k < 3; k++) LT_TRY(ct_want_dim(ctx, n, in[2].d[k], in[0].d[k], "a dim of skip"));
    return bias_check(ctx, n, &in[0], &in[1], true, out);
}

/* y[i] = f(x[i] + bias[i % C]) (+ skip[i]) */
static double act(int op, double x, double alpha) {
    switch (op) {
    case LT_OP_FastGelu: return ct_gelu_tanh(x);
    case LT_OP_QuickGelu: return x / (1.0 + exp(-alpha * x));
    case LT_OP_BiasAdd: return x;
    default: return ct_gelu_erf(x); /* Gelu, BiasGelu */
    }
}

static lt_status compute(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    (void)ev;
    const ct_arg *x = &in[0], *b = &in[1];
    const double *skip = n->op == LT_OP_BiasAdd ? in[2].v : NULL;
    int64_t C = x->rank > 0 ? x->d[x->rank - 1] : 1;
    double alpha = lt_attr_float(n, "alpha", 1.702f);
    for (int64_t i = 0; i < x->numel; i++) {
        double v = x->v[i] + (ct_present(b) ? b->v[i % C] : 0.0);
        out[0].v[i] = act(n->op, v, alpha) + (skip ? skip[i] : 0.0);
    }
    return LT_OK;
}

const ct_op ct_ops_act[] = {
    {LT_OP_MsGelu, 1, 1, check_gelu, compute},
    {LT_OP_FastGelu, 1, 2, check_gelu, compute},
    {LT_OP_BiasGelu, 2, 2, check_biasgelu, compute},
    {LT_OP_QuickGelu, 1, 1, check_quickgelu, compute},
    {LT_OP_BiasAdd, 3, 3, check_biasadd, compute},
    {0, 0, 0, NULL, NULL},
};
