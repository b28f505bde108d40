/* groupnorm_layernorm.c — GroupNormalization becomes a LayerNormalization, which lathe compiles:
 *     opset 18 (scale, bias per group):
 *         Y = Reshape(LayerNormalization(Reshape(X, [N, G, C/G*S]), scale [G, 1], bias [G, 1], axis 2))
 *     opset 21 (scale, bias per channel):
 *         Y = Reshape(LayerNormalization(Reshape(X, [N, G, C/G, S]), scale [G, C/G, 1], bias [G, C/G, 1],
 *                                        axis 2))
 * back to X's shape (S the product of the spatial dims). Each (image, group) block is normalized with
 * the node's epsilon and the parameters broadcast inside the LayerNormalization, so the whole op is
 * one reduction kernel. Scale and bias may be constants (reshaped here) or computed (a Reshape is
 * added). stash_type: the interpreter computes the statistics in double whatever it says, the
 * compiled LayerNormalization in float (double for double inputs): float32 results agree to rounding.
 * Left alone (the interpreter runs them): a non-static X, rank < 2, an empty X, a non-float dtype, a
 * missing or non-dividing num_groups, a scale or bias whose element count or dtype does not fit.
 * Level -O1.
 */
#include "util.h"

#include <stdio.h>

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    int rank;
    int64_t xd[LT_MAX_RANK], numel = 1;
    if (n->n_in < 3 || !n->in[0] || !n->out[0] || !lt_value_static_shape(n->in[0], &rank, xd) || rank < 2) return LT_OK;
    lt_dtype dt = n->in[0]->type.dtype;
    int64_t G = lt_node_attr(n, "num_groups") ? lt_attr_int(n, "num_groups", 0) : 0;
    for (int d = 0; d < rank; d++) numel *= xd[d];
    if (numel < 1 || !lt_dtype_is_float(dt) || G < 1 || xd[1] % G) return LT_OK;
    bool per_group = n->opset < 21; /* the interpreter's rule */
    int64_t count = per_group ? G : xd[1];
    if (!lt_pu_fits(n->in[1], dt, count) || !lt_pu_fits(n->in[2], dt, count)) return LT_OK;
    char hint[96];
    snprintf(hint, sizeof hint, "%s_ln", n->out[0]->name);
    lt_value *y;
    LT_TRY(lt_pu_group_norm(ctx, g, n, n->in[0], G, n->in[1], n->in[2], per_group, lt_attr_float(n, "epsilon", 1e-5f),
                            hint, &y));
    lt_pu_take_name(g, y, n->out[0]);
    return lt_pu_forward(ctx, g, n, 0, y, changed);
}

static bool is_groupnorm(const lt_node *n) { return n->op == LT_OP_GroupNormalization; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_groupnorm, rewrite, changed);
}

const lt_pass lt_pass_groupnorm_layernorm = {.name = "groupnorm_layernorm", .min_level = 1, .run = run,
    .summary = "GroupNormalization -> LayerNormalization over [N, G, ...] blocks (compiled)"};
