/* instnorm_layernorm.c — InstanceNormalization becomes a LayerNormalization, which lathe compiles:
 *     Y = Reshape(LayerNormalization(Reshape(X, [N, C, S]), scale [C, 1], B [C, 1], axis 2), X's shape)
 * (S the product of the spatial dims; the reshape is left out for a rank-3 X). Each image's channel
 * is normalized over its S elements with the node's epsilon, and the per-channel scale and bias are
 * the LayerNormalization's own (broadcast over the normalized axis), so the whole op is one reduction
 * kernel. Scale and bias may be constants (reshaped here) or computed (a Reshape is added). The
 * interpreter accumulates the statistics in double; the compiled LayerNormalization in float
 * (double for double inputs): float32 results agree to rounding.
 * Left alone (the interpreter runs them): a non-static X, rank < 2, an empty X, a non-float dtype,
 * a scale or bias whose element count is not C or whose dtype differs from X's.
 * Level -O1.
 */
#include "util.h"

#include <stdio.h>

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    int rank;
    int64_t xd[LT_MAX_RANK], numel = 1;
    if (n->n_in < 3 || !n->in[0] || !n->out[0] || !lt_value_static_shape(n->in[0], &rank, xd) || rank < 2) return LT_OK;
    lt_dtype dt = n->in[0]->type.dtype;
    for (int d = 0; d < rank; d++) numel *= xd[d];
    if (numel < 1 || !lt_dtype_is_float(dt) || !lt_pu_fits(n->in[1], dt, xd[1]) || !lt_pu_fits(n->in[2], dt, xd[1]))
        return LT_OK;
    char hint[96];
    snprintf(hint, sizeof hint, "%s_ln", n->out[0]->name);
    lt_value *y;
    LT_TRY(lt_pu_group_norm(ctx, g, n, n->in[0], xd[1], n->in[1], n->in[2], true, lt_attr_float(n, "epsilon", 1e-5f),
                            hint, &y));
    lt_pu_take_name(g, y, n->out[0]);
    return lt_pu_forward(ctx, g, n, 0, y, changed);
}

static bool is_instnorm(const lt_node *n) { return n->op == LT_OP_InstanceNormalization; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_instnorm, rewrite, changed);
}

const lt_pass lt_pass_instnorm_layernorm = {.name = "instnorm_layernorm", .min_level = 1, .run = run,
    .summary = "InstanceNormalization -> LayerNormalization over [N, C, spatial] (compiled)"};
