/* contrib_norm.c — onnxruntime's fused layer norms, over the last dim H of a (B, S, H) or (T, H) input:
 *   SkipLayerNormalization(input, skip, gamma, beta?, bias?)      x = input + skip + bias,
 *       output = (x - mean) / sqrt(var + epsilon) * gamma + beta
 *   SkipSimplifiedLayerNormalization(input, skip, gamma, bias?)   x = input + skip + bias,
 *       output = x / sqrt(mean(x^2) + epsilon) * gamma
 *   epsilon default 1e-12; skip is (B, S, H), (1, S, H) or (S, H); gamma, beta, bias are (H).
 *   Optional outputs: mean and inv_std_var (float, the input's dims with the last one 1; the simplified
 *   form's "mean" is the plain mean of x, which it does not use), input_skip_bias_sum (x).
 *   SimplifiedLayerNormalization(X, scale) (ai.onnx in onnxruntime's registry, and com.microsoft):
 *   RMS normalization over dims [axis, rank) (axis default -1, epsilon 1e-5), scale with the
 *   normalized dims; optional output inv_std_var (float, X's dims with the normalized ones 1).
 */
#include "contrib_impl.h"

#include <math.h>

static bool is_skip(const lt_node *n) {
    return n->op == LT_OP_SkipLayerNormalization || n->op == LT_OP_SkipSimplifiedLayerNormalization;
}

static lt_status check_param(lt_ctx *ctx, const lt_node *n, const ct_arg *p, const ct_arg *x, const char *what) {
    if (!ct_present(p)) return LT_OK;
    LT_TRY(ct_want_float(ctx, n, p, x->dt, what));
    return ct_want_vec(ctx, n, p, x->d[x->rank - 1], what);
}

static lt_status check_skip(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0], *skip = &in[1];
    bool simplified = n->op == LT_OP_SkipSimplifiedLayerNormalization;
    LT_TRY(ct_want_float(ctx, n, x, LT_UNDEFINED, "input"));
    if (x->rank != 2 && x->rank != 3)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "input must be (batch, sequence, hidden) or (tokens, hidden), not of rank %d",
                             x->rank);
    LT_TRY(ct_want_float(ctx, n, skip, x->dt, "skip"));
    /* skip: input's shape, or (1, S, H), or (S, H) with a 3-D input */
    if (skip->rank != x->rank && !(x->rank == 3 && skip->rank == 2))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "skip has rank %d, input rank %d", skip->rank, x->rank);
    int off = x->rank - skip->rank;
    for (int k = 0; k < skip->rank; k++) {
        int64_t sd = skip->d[k], xd = x->d[k + off];
        if (k + off == 0 && sd == 1 && x->rank == 3) continue;
        LT_TRY(ct_want_dim(ctx, n, sd, xd, "a dim of skip"));
    }
    if (lt_attr_float(n, "epsilon", 1e-12f) < 0 || !isfinite(lt_attr_float(n, "epsilon", 1e-12f)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute epsilon must be finite and >= 0");
    LT_TRY(check_param(ctx, n, &in[2], x, "gamma"));
    if (!ct_present(&in[2])) return lt_node_error(ctx, n, LT_ERR_INVALID, "gamma is required");
    LT_TRY(check_param(ctx, n, &in[3], x, simplified ? "bias" : "beta"));
    if (!simplified) LT_TRY(check_param(ctx, n, &in[4], x, "bias"));
    ct_out_like(&out[0], x, x->dt);
    int64_t sd[LT_MAX_RANK];
    for (int k = 0; k < x->rank; k++) sd[k] = k == x->rank - 1 ? 1 : x->d[k];
    if (n->n_out > 1) ct_out_set(&out[1], LT_FLOAT, x->rank, sd);
    if (n->n_out > 2) ct_out_set(&out[2], LT_FLOAT, x->rank, sd);
    if (n->n_out > 3) ct_out_like(&out[3], x, x->dt);
    return LT_OK;
}

/* SimplifiedLayerNormalization: the normalized axis (>= 0) */
static lt_status sln_axis(lt_ctx *ctx, const lt_node *n, int rank, int *axis) {
    return lt_node_axis(ctx, n, lt_attr_int(n, "axis", -1), rank, axis);
}

static lt_status check_sln(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0], *scale = &in[1];
    LT_TRY(ct_want_float(ctx, n, x, LT_UNDEFINED, "X"));
    if (x->rank < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "X must have rank >= 1");
    int axis;
    LT_TRY(sln_axis(ctx, n, x->rank, &axis));
    float eps = lt_attr_float(n, "epsilon", 1e-5f);
    if (eps < 0 || !isfinite(eps)) return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute epsilon must be finite and >= 0");
    LT_TRY(ct_want_float(ctx, n, scale, x->dt, "scale"));
    if (scale->rank > x->rank - axis)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "scale has rank %d, more than the %d normalized dims", scale->rank,
                             x->rank - axis);
    for (int k = 0; k < x->rank - axis; k++) { /* scale right-aligned on the normalized dims, 1 before */
        int j = k - (x->rank - axis - scale->rank);
        LT_TRY(ct_want_dim(ctx, n, j >= 0 ? scale->d[j] : 1, x->d[axis + k], "a dim of scale"));
    }
    ct_out_like(&out[0], x, x->dt);
    int64_t sd[LT_MAX_RANK];
    for (int k = 0; k < x->rank; k++) sd[k] = k >= axis ? 1 : x->d[k];
    if (n->n_out > 1) ct_out_set(&out[1], LT_FLOAT, x->rank, sd);
    return LT_OK;
}

/* One row of H values: the skip sum into x, then mean and inverse std (plain or RMS). */
static lt_status compute(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *x = &in[0];
    bool skip = is_skip(n);
    bool rms = n->op != LT_OP_SkipLayerNormalization;
    int axis = x->rank - 1;
    if (!skip) LT_TRY(sln_axis(ev->ctx, n, x->rank, &axis));
    int64_t H = 1;
    for (int k = axis; k < x->rank; k++) H *= x->d[k];
    int64_t rows = H ? x->numel / H : 0;
    double eps = lt_attr_float(n, "epsilon", skip ? 1e-12f : 1e-5f);
    const ct_arg *gamma = skip ? &in[2] : &in[1];
    const ct_arg *beta = n->op == LT_OP_SkipLayerNormalization ? &in[3] : NULL;
    const ct_arg *bias = !skip ? NULL : n->op == LT_OP_SkipLayerNormalization ? &in[4] : &in[3];
    int64_t skip_n = skip ? in[1].numel : 0;
    double *row = lt_mem_alloc((size_t)(H ? H : 1) * sizeof *row);
    if (!row) return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0, sq = 0;
        for (int64_t j = 0; j < H; j++) {
            int64_t i = r * H + j;
            double v = x->v[i];
            if (skip) v += in[1].v[i % skip_n] + (ct_present(bias) ? bias->v[j] : 0.0);
            row[j] = v;
            sum += v;
        }
        double mean = H ? sum / (double)H : 0;
        for (int64_t j = 0; j < H; j++) sq += rms ? row[j] * row[j] : (row[j] - mean) * (row[j] - mean);
        double inv = 1.0 / sqrt((H ? sq / (double)H : 0) + eps);
        for (int64_t j = 0; j < H; j++) {
            int64_t i = r * H + j;
            double g = gamma->v[j % gamma->numel];
            out[0].v[i] = rms ? row[j] * inv * g : (row[j] - mean) * inv * g + (beta && ct_present(beta) ? beta->v[j] : 0.0);
            if (skip && n->n_out > 3) out[3].v[i] = row[j];
        }
        if (skip && n->n_out > 1) out[1].v[r] = mean;
        if (n->n_out > (skip ? 2 : 1)) out[skip ? 2 : 1].v[r] = inv;
    }
    lt_mem_free(row);
    return LT_OK;
}

const ct_op ct_ops_norm[] = {
    {LT_OP_SkipLayerNormalization, 3, 5, check_skip, compute},
    {LT_OP_SkipSimplifiedLayerNormalization, 3, 4, check_skip, compute},
    {LT_OP_SimplifiedLayerNormalization, 2, 2, check_sln, compute},
    {LT_OP_MsSimplifiedLayerNormalization, 2, 2, check_sln, compute},
    {0, 0, 0, NULL, NULL},
};
