/* fold_constants.c — constant folding: a node whose inputs are all constants (initializers that are
 * not graph inputs, folded values, Constant outputs) is evaluated once through its op's reference
 * eval hook (an lt_eval with env NULL) and its outputs become initializers; the node goes.
 *
 * Not folded: ops holding subgraphs, random ops (lt_pu_is_random: Random*, Bernoulli, Multinomial,
 * Dropout in training mode), ops without an eval hook, nodes whose outputs would exceed
 * opt->fold_max_bytes (known from the inferred output shapes before evaluating; when a shape is not
 * known, ops whose output size comes from input values (ConstantOfShape, Expand, Tile, Range, Pad,
 * Resize...) are skipped and the others are checked after evaluating), and nodes whose evaluation
 * fails (the same error will be reported when the model runs). An Expand that would turn a small
 * constant into a big one (over 64 KiB and 16x its inputs) stays: a broadcasting consumer reads the
 * small constant directly once simplify drops the Expand, and a materialized copy would only cost
 * memory bandwidth at run time. Works in every graph, subgraphs
 * included (a subgraph node reading only outer constants folds into a subgraph initializer).
 * The walk re-infers each node's types first (what was folded before it may tell more), and, when
 * the fold_shapes pass is enabled, folds shape queries too (lt_fold_shape_node): the shape
 * arithmetic of every layer of a deep model folds in one sweep instead of one layer per round.
 * Level -O1.
 */
#include "util.h"

#define EXPAND_KEEP_BYTES (64 << 10)

typedef struct fold_state {
    const lt_model *m;
    int64_t cap;
    bool shapes; /* the fold_shapes pass is enabled: fold shape queries during the walk too */
    bool changed;
} fold_state;

/* Ops whose output size is set by input values: only folded when the output shape is known. */
static bool size_from_values(int op) {
    switch (op) {
    case LT_OP_ConstantOfShape: case LT_OP_Expand: case LT_OP_Tile: case LT_OP_Range: case LT_OP_Pad:
    case LT_OP_Resize: case LT_OP_Upsample: case LT_OP_OneHot: case LT_OP_CenterCropPad: case LT_OP_MelWeightMatrix:
    case LT_OP_HannWindow: case LT_OP_HammingWindow: case LT_OP_BlackmanWindow: case LT_OP_Col2Im:
    case LT_OP_MaxUnpool: case LT_OP_ConvTranspose: case LT_OP_DFT: case LT_OP_STFT: case LT_OP_TfIdfVectorizer:
    case LT_OP_AffineGrid: case LT_OP_ImageDecoder:
        return true;
    default:
        return false;
    }
}

static bool foldable(const fold_state *st, const lt_node *n) {
    if (n->op == LT_OP_UNKNOWN || !lt_op_hooks_get(n->op)->eval || lt_node_has_subgraphs(n) || lt_pu_is_random(n))
        return false;
    bool any_out = false;
    for (int k = 0; k < n->n_out; k++) {
        const lt_value *v = n->out[k];
        if (!v) continue;
        any_out = true;
        if (v->is_input || (v->type.kind != LT_TK_TENSOR && v->type.kind != LT_TK_UNKNOWN)) return false;
        if (lt_type_is_static(&v->type)) {
            int64_t numel = 1, bytes;
            for (int d = 0; d < v->type.rank; d++)
                if (!lt_mul_i64(numel, v->type.dims[d].value, &numel)) return false;
            int es = v->type.dtype == LT_UNDEFINED ? 8 : lt_dtype_size(v->type.dtype);
            if (v->type.dtype == LT_STRING) es = 64; /* string bytes are not known: a rough guess */
            if (!lt_mul_i64(numel, es, &bytes) || bytes > st->cap) return false;
        } else if (size_from_values(n->op)) {
            return false;
        }
    }
    if (!any_out) return false;
    int64_t in_bytes = 0;
    for (int i = 0; i < n->n_in; i++) {
        if (!n->in[i]) continue;
        const lt_tensor *c = lt_value_const(n->in[i]);
        if (!c) return false;
        in_bytes += lt_tensor_nbytes(c);
    }
    if (n->op == LT_OP_Expand && n->out[0]) { /* a big copy of a small constant: keep the Expand */
        int r;
        int64_t d[LT_MAX_RANK], numel;
        if (!lt_value_static_shape(n->out[0], &r, d) || !lt_prod_i64(d, r, &numel)) return false;
        int64_t bytes = numel * lt_dtype_size(lt_pu_dtype(n->in[0]));
        if (bytes > EXPAND_KEEP_BYTES && bytes / 16 > in_bytes) return false;
    }
    return true;
}

static lt_status fold_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    fold_state *st = user;
    for (int i = 0; i < g->n_nodes;) {
        lt_node *n = g->nodes[i];
        /* Types downstream of what was folded earlier in this walk are stale (a Reshape whose shape
         * just became constant): refresh them before looking at the node. */
        if (!lt_node_has_subgraphs(n)) {
            lt_status s = lt_node_infer(ctx, n);
            /* a node of an If branch may be wrong where the branch is never taken: leave it to
             * the interpreter, which checks it if the branch runs (as lt_graph_infer does) */
            if (s == LT_ERR_INVALID && g->parent) {
                lt_ctx_clear(ctx);
                i++;
                continue;
            }
            LT_TRY(s);
        }
        if (st->shapes) {
            bool done = false;
            LT_TRY(lt_fold_shape_node(ctx, g, n, &done));
            if (done) {
                lt_node_remove(g, n);
                st->changed = true;
                continue;
            }
        }
        if (!foldable(st, n)) { i++; continue; }
        lt_tensor *res[64];
        const lt_attr *cv = n->op == LT_OP_Constant && n->n_out == 1 ? lt_node_attr(n, "value") : NULL;
        if (cv && cv->type == LT_AT_TENSOR && cv->t) {
            res[0] = lt_tensor_retain(cv->t); /* share the attribute's tensor: no copy of big constants */
        } else if (n->n_out > 64 || !lt_pu_eval_node(st->m, n, res)) {
            i++;
            continue;
        }
        bool fits = true;
        for (int k = 0; k < n->n_out; k++)
            if (res[k] && lt_tensor_nbytes(res[k]) > st->cap) fits = false;
        if (!fits) {
            for (int k = 0; k < n->n_out; k++) lt_tensor_release(res[k]);
            i++;
            continue;
        }
        lt_status s = LT_OK;
        for (int k = 0; k < n->n_out; k++) {
            if (!res[k]) continue;
            if (!s) s = lt_value_set_const(ctx, g, n->out[k], res[k]);
            else lt_tensor_release(res[k]);
        }
        if (s) return s;
        lt_node_remove(g, n); /* every output is now an initializer: nothing reads the node */
        st->changed = true;
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    fold_state st = {m, opt && opt->fold_max_bytes > 0 ? opt->fold_max_bytes : LT_PASS_DEFAULT_FOLD_BYTES,
                     lt_pass_is_enabled(opt, &lt_pass_fold_shapes), false};
    LT_TRY(lt_graph_foreach(ctx, m->graph, false, fold_graph, &st));
    *changed = st.changed;
    return LT_OK;
}

const lt_pass lt_pass_fold_constants = {.name = "fold_constants", .min_level = 1, .run = run,
    .summary = "evaluate nodes whose inputs are all constants; their outputs become initializers"};
