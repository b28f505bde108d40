/* resize_gather.c — a Resize (or Upsample) with constant scales or sizes becomes ops lathe compiles:
 * for each resized axis a, in the op's order,
 *     nearest:           y = Gather(y, idx, axis=a)
 *     linear / cubic:    y = sum over taps k of Gather(y, idx_k, axis=a) * w_k
 * where idx_k (int64 [out]) and w_k (the input's float type, [out, 1, ..]: broadcast over the later
 * axes) are the interpreter's own tap tables (ops/image/image_resize.h: coordinate modes, nearest
 * rounding, cubic and antialias kernels, edge clamping), so the rewrite picks the same elements
 * and weights. A tap whose weight is 0 at every position is left out; one of weight 1 everywhere is
 * the gather alone. Fusion then makes the chain one injective kernel. Sums run in the input's type
 * (the interpreter accumulates in double: float32 results agree to rounding).
 * Left alone (the interpreter runs them): a non-static input shape, parameters that are not
 * constants, tf_crop_and_resize, nearest with exclude_outside, integer inputs to weighted modes, an
 * empty output.
 * Level -O1.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

#include "../ops/image/image_resize.h"

/* A new constant tensor of dtype dt and shape dims[rank]; values from f(i). */
static lt_status const_value(lt_ctx *ctx, lt_graph *g, const char *hint, lt_dtype dt, int rank, const int64_t *dims,
                             const int64_t *ivals, const double *fvals, int64_t stride, int64_t off, lt_value **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, dt, rank, dims, &t));
    for (int64_t i = 0; i < t->numel; i++) {
        if (ivals) lt_store_i64(t->data, dt, i, ivals[i * stride + off]);
        else lt_store_f64(t->data, dt, i, fvals[i * stride + off]);
    }
    return lt_value_new_const(ctx, g, hint, t, out);
}

/* One resized axis: cur -> the weighted sum of its taps' gathers (or the one gather). */
static lt_status rewrite_axis(lt_ctx *ctx, lt_graph *g, lt_node *rs, int rank, int a, const lt_resize_taps *t,
                              bool nearest, lt_dtype dt, lt_value **cur) {
    char hint[96];
    snprintf(hint, sizeof hint, "%s_ax%d", rs->out[0]->name, a);
    int64_t wd[LT_MAX_RANK];
    wd[0] = t->out;
    for (int d = 1; d < rank - a; d++) wd[d] = 1;
    lt_value *sum = NULL;
    for (int k = 0; k < t->n; k++) {
        bool all0 = !nearest, all1 = !nearest;
        for (int64_t o = 0; !nearest && o < t->out; o++) {
            all0 &= t->w[o * t->n + k] == 0;
            all1 &= t->w[o * t->n + k] == 1;
        }
        if (all0) continue;
        lt_value *idx, *gathered, *w, *term;
        LT_TRY(const_value(ctx, g, hint, LT_INT64, 1, &t->out, t->idx, NULL, t->n, k, &idx));
        lt_value *gin[2] = {*cur, idx};
        LT_TRY(lt_pu_new_op(ctx, g, "Gather", 2, gin, "axis", a, hint, rs, &gathered));
        if (nearest || all1) {
            term = gathered;
        } else {
            LT_TRY(const_value(ctx, g, hint, dt, rank - a, wd, NULL, t->w, t->n, k, &w));
            lt_value *mi[2] = {gathered, w};
            LT_TRY(lt_pu_new_op(ctx, g, "Mul", 2, mi, NULL, 0, hint, rs, &term));
        }
        lt_value *ai[2] = {sum, term};
        if (sum) LT_TRY(lt_pu_new_op(ctx, g, "Add", 2, ai, NULL, 0, hint, rs, &sum));
        else sum = term;
    }
    if (!sum) return lt_error(ctx, LT_ERR_INTERNAL, "%s: every tap of axis %d has weight 0", rs->out[0]->name, a);
    *cur = sum;
    return LT_OK;
}

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *rs, bool *changed) {
    int rank;
    int64_t dims[LT_MAX_RANK];
    if (!rs->in[0] || !rs->out[0] || !lt_value_static_shape(rs->in[0], &rank, dims)) return LT_OK;
    lt_dtype dt = rs->in[0]->type.dtype;
    lt_resize_taps taps[LT_MAX_RANK];
    bool nearest;
    lt_ctx quiet = {0};
    lt_status s = lt_resize_taps_build(&quiet, rs, rank, dims, dt, taps, &nearest);
    if (s != LT_OK) return LT_OK; /* not expressible, refused, or tables too large: the interpreter reports it */
    for (int a = 0; a < rank; a++)
        if (taps[a].out < 1) { /* an empty output: nothing to compute, the interpreter makes it */
            lt_resize_taps_free(taps, rank);
            return LT_OK;
        }
    lt_value *cur = rs->in[0];
    for (int a = 0; a < rank && s == LT_OK; a++)
        if (taps[a].n) s = rewrite_axis(ctx, g, rs, rank, a, &taps[a], nearest, dt, &cur);
    lt_resize_taps_free(taps, rank);
    LT_TRY(s);
    if (cur == rs->in[0]) { /* nothing resized: the identity */
        LT_TRY(lt_pu_new_op(ctx, g, "Identity", 1, &cur, NULL, 0, rs->out[0]->name, rs, &cur));
    }
    lt_pu_take_name(g, cur, rs->out[0]);
    return lt_pu_forward(ctx, g, rs, 0, cur, changed);
}

static bool is_resize(const lt_node *n) { return n->op == LT_OP_Resize || n->op == LT_OP_Upsample; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_resize, rewrite, changed);
}

const lt_pass lt_pass_resize_gather = {.name = "resize_gather", .min_level = 1, .run = run,
    .summary = "Resize / Upsample with constant parameters -> Gathers and weighted sums (compiled)"};
