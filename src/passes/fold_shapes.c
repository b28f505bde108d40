/* fold_shapes.c — shape folding: once dims are bound, Shape and Size of values whose shapes are
 * known become constants, so Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains fold away
 * with fold_constants.
 *
 *   Shape(x)  (start/end attributes from opset 15) -> int64[len] when the dims in range are known
 *             (the other dims may stay symbolic);
 *   Size(x)   -> int64 scalar when every dim is known;
 *   Gather(Shape(x), indices const, axis 0) -> int64 constant when the gathered dims are known,
 *             even if x has other unknown dims (a model with a dynamic batch still folds its
 *             sequence-length arithmetic).
 * Known means a dim value >= 0 in the inferred type (after lt_model_bind_* and inference).
 * Level -O1.
 */
#include "util.h"

/* The dims of Shape node n's input in [*start, *end), following the op's clamping rules; false if
 * the rank is unknown. */
static bool shape_range(const lt_node *n, int *rank_out, int *start, int *end) {
    const lt_value *x = n->n_in > 0 ? n->in[0] : NULL;
    const lt_tensor *c = x ? lt_value_const(x) : NULL;
    int rank = c ? c->rank : x && x->type.kind == LT_TK_TENSOR ? x->type.rank : -1;
    if (rank < 0 || (!c && rank > 0 && !x->type.dims)) return false;
    int64_t s = 0, e = rank;
    if (n->opset >= 15) {
        s = lt_attr_int(n, "start", 0);
        const lt_attr *a = lt_node_attr(n, "end");
        if (a && a->type == LT_AT_INT) e = a->i;
    }
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *rank_out = rank;
    *start = (int)s;
    *end = (int)(e > s ? e : s);
    return true;
}

/* Dim i of x (-1 if unknown). */
static int64_t dim_of(const lt_value *x, int i) {
    const lt_tensor *c = lt_value_const(x);
    if (c) return c->dims[i];
    return x->type.dims[i].value >= 0 ? x->type.dims[i].value : -1;
}

static lt_status fold_shape(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *done) {
    int rank, s, e;
    *done = false;
    if (!n->out[0] || !shape_range(n, &rank, &s, &e)) return LT_OK;
    int64_t d[LT_MAX_RANK];
    for (int i = s; i < e; i++)
        if ((d[i - s] = dim_of(n->in[0], i)) < 0) return LT_OK;
    lt_tensor *t;
    LT_TRY(lt_pu_tensor_i64(ctx, e - s, d, &t));
    LT_TRY(lt_value_set_const(ctx, g, n->out[0], t));
    *done = true;
    return LT_OK;
}

static lt_status fold_size(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *done) {
    int rank;
    int64_t dims[LT_MAX_RANK], numel;
    *done = false;
    if (!n->out[0] || !lt_value_static_shape(n->in[0], &rank, dims) || !lt_prod_i64(dims, rank, &numel)) return LT_OK;
    lt_tensor *t;
    LT_TRY(lt_tensor_scalar_i64(ctx, LT_INT64, numel, &t));
    LT_TRY(lt_value_set_const(ctx, g, n->out[0], t));
    *done = true;
    return LT_OK;
}

/* Gather(Shape(x), const indices) along axis 0 with the gathered dims known. */
static lt_status fold_gather_of_shape(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *done) {
    *done = false;
    if (n->n_in < 2 || !n->in[0] || !n->in[1] || !n->out[0]) return LT_OK;
    const lt_node *sh = n->in[0]->producer;
    if (!sh || sh->op != LT_OP_Shape || sh->graph != g || !sh->in[0]) return LT_OK;
    int rank, s, e;
    if (!shape_range(sh, &rank, &s, &e)) return LT_OK;
    int64_t axis = lt_attr_int(n, "axis", 0);
    if (axis != 0 && axis != -1) return LT_OK;
    const lt_tensor *ix = lt_value_const(n->in[1]);
    if (!ix || !lt_dtype_is_int(ix->dtype) || ix->rank > 1 || ix->numel > LT_MAX_RANK) return LT_OK;
    int64_t len = e - s, vals[LT_MAX_RANK];
    for (int64_t j = 0; j < ix->numel; j++) {
        int64_t k = lt_load_i64(ix->data, ix->dtype, j);
        if (k < 0) k += len;
        if (k < 0 || k >= len) return LT_OK; /* out of range: leave the error to run time */
        if ((vals[j] = dim_of(sh->in[0], (int)(s + k))) < 0) return LT_OK;
    }
    lt_tensor *t;
    if (ix->rank == 0) LT_TRY(lt_tensor_scalar_i64(ctx, LT_INT64, vals[0], &t));
    else LT_TRY(lt_pu_tensor_i64(ctx, (int)ix->numel, vals, &t));
    LT_TRY(lt_value_set_const(ctx, g, n->out[0], t));
    *done = true;
    return LT_OK;
}

lt_status lt_fold_shape_node(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *done) {
    *done = false;
    if (n->n_in < 1 || !n->in[0] || n->n_out != 1) return LT_OK;
    if (n->op == LT_OP_Shape) return fold_shape(ctx, g, n, done);
    if (n->op == LT_OP_Size) return fold_size(ctx, g, n, done);
    if (n->op == LT_OP_Gather) return fold_gather_of_shape(ctx, g, n, done);
    return LT_OK;
}

static lt_status fold_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    for (int i = 0; i < g->n_nodes;) {
        lt_node *n = g->nodes[i];
        bool done = false;
        LT_TRY(lt_fold_shape_node(ctx, g, n, &done));
        if (done) {
            lt_node_remove(g, n);
            *changed = true;
        } else {
            i++;
        }
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, false, fold_graph, changed);
}

const lt_pass lt_pass_fold_shapes = {.name = "fold_shapes", .min_level = 1, .run = run,
    .summary = "Shape/Size of values with known dims (and Gather of a Shape) become constants"};
