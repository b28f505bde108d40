/* inline_if.c — an If of the main graph becomes the ops of its branches, which compile:
 *
 *   constant condition (or one folded from shapes):  the taken branch's nodes, in place of the If
 *   condition known only at run time:                both branches' nodes, and per output
 *                                                    Where(cond, then_output, else_output)
 *
 * The branches' nodes are copied into the main graph before the If (their outer-scope reads become
 * the values they refer to, their initializers new constants), then the If's outputs are replaced.
 * With a run-time condition both branches run and the Where keeps the taken one's outputs: the
 * branches must be free of side effects that matter (no random ops) and give outputs of the same
 * dtype and static shape; the untaken branch's kernels clamp their indices like every kernel, so it
 * cannot read out of bounds, and its values are discarded. Selecting branches in the plan (running
 * only the taken one) is future work; until then a model whose two branches are large pays for both.
 * Left to the interpreter: Ifs inside subgraphs, branches with nested subgraphs (If, Loop, Scan) or
 * random ops, run-time conditions whose branches differ in output type or shape, or have a value of
 * non-static shape.
 * Level -O1; in the simplification group, so a condition that folds to a constant inlines one branch.
 */
#include "util.h"

#include <stdio.h>

static bool is_main_if(const lt_node *n) { return n->op == LT_OP_If && !n->graph->parent; }

/* Every node of b can be copied (no subgraphs, nothing random); with `static_shapes`, every value
 * of b has a static tensor shape. */
static bool branch_copyable(const lt_graph *b, int n_out, bool static_shapes) {
    if (!b || b->n_inputs || b->n_outputs != n_out) return false;
    for (int i = 0; i < b->n_nodes; i++)
        if (lt_node_has_subgraphs(b->nodes[i]) || lt_pu_is_random(b->nodes[i])) return false;
    int r;
    int64_t d[LT_MAX_RANK];
    for (int i = 0; static_shapes && i < b->n_values; i++)
        if (!lt_value_static_shape(b->values[i], &r, d)) return false;
    return true;
}

typedef struct inliner {
    lt_graph *g;       /* the main graph */
    lt_node *before;   /* the If */
    lt_value **map;    /* branch value id -> main-graph value */
} inliner;

static lt_status resolve(lt_ctx *ctx, inliner *in, lt_value *v, lt_value **out) {
    *out = NULL;
    if (!v) return LT_OK;
    if (in->map[v->id]) {
        *out = in->map[v->id];
        return LT_OK;
    }
    if (v->outer) *out = v->outer;
    else if (v->init) LT_TRY(lt_value_new_const(ctx, in->g, v->name, lt_tensor_retain(v->init), out));
    else return lt_error(ctx, LT_ERR_INTERNAL, "inline_if: branch value '%s' has no definition", v->name);
    in->map[v->id] = *out;
    return LT_OK;
}

/* Copy branch b's nodes before the If; outs[k] the main-graph value of b's output k. */
static lt_status copy_branch(lt_ctx *ctx, lt_graph *g, lt_node *iff, const lt_graph *b, lt_value **outs) {
    inliner in = {g, iff, lt_calloc(ctx, (size_t)b->n_values + 1, sizeof(lt_value *), "inline_if map")};
    if (!in.map) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    lt_value *args[64];
    for (int i = 0; i < b->n_nodes && s == LT_OK; i++) {
        const lt_node *bn = b->nodes[i];
        if (bn->n_in > 64) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "inline_if: node with %d inputs", bn->n_in);
            break;
        }
        for (int k = 0; k < bn->n_in && s == LT_OK; k++) s = resolve(ctx, &in, bn->in[k], &args[k]);
        lt_node *nn = NULL;
        const char *hint = bn->n_out && bn->out[0] ? bn->out[0]->name : bn->op_type;
        if (s == LT_OK) s = lt_node_new(ctx, g, bn->op_type, bn->domain, bn->n_in, args, bn->n_out, hint, iff, &nn);
        if (s == LT_OK) s = lt_node_copy_attrs(ctx, nn, bn);
        if (s != LT_OK) break;
        nn->name = bn->name;
        nn->opset = bn->opset;
        for (int k = 0; k < bn->n_out; k++) {
            if (bn->out[k]) {
                in.map[bn->out[k]->id] = nn->out[k];
            } else { /* an optional output the branch did not request */
                nn->out[k]->producer = NULL;
                nn->out[k] = NULL;
            }
        }
        s = lt_node_infer(ctx, nn);
    }
    for (int k = 0; k < b->n_outputs && s == LT_OK; k++) s = resolve(ctx, &in, b->outputs[k], &outs[k]);
    lt_mem_free(in.map);
    return s;
}

static bool same_static_type(const lt_value *a, const lt_value *b) {
    return a->type.kind == LT_TK_TENSOR && b->type.kind == LT_TK_TENSOR && a->type.dtype == b->type.dtype &&
           lt_pu_same_static_shape(a, b);
}

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    const lt_graph *tb = lt_attr_graph(n, "then_branch"), *eb = lt_attr_graph(n, "else_branch");
    const lt_tensor *c = lt_value_const(n->in[0]);
    lt_value *cond = n->in[0];
    if (!cond || n->n_out > 64) return LT_OK;
    lt_value *t[64], *e[64];
    if (c) { /* one branch */
        if (c->numel != 1) return LT_OK;
        const lt_graph *b = lt_load_i64(c->data, c->dtype, 0) ? tb : eb;
        if (!branch_copyable(b, n->n_out, false)) return LT_OK;
        LT_TRY(copy_branch(ctx, g, n, b, t));
    } else {
        int r;
        int64_t d[LT_MAX_RANK];
        if (!lt_value_static_shape(cond, &r, d) || lt_pu_dtype(cond) != LT_BOOL) return LT_OK;
        for (int i = 0; i < r; i++)
            if (d[i] != 1) return LT_OK;
        if (!branch_copyable(tb, n->n_out, true) || !branch_copyable(eb, n->n_out, true)) return LT_OK;
        for (int k = 0; k < n->n_out; k++)
            if (!same_static_type(tb->outputs[k], eb->outputs[k])) return LT_OK;
        LT_TRY(copy_branch(ctx, g, n, tb, t));
        LT_TRY(copy_branch(ctx, g, n, eb, e));
        if (r) LT_TRY(lt_pu_reshape(ctx, g, cond, 0, NULL, cond->name, n, &cond));
        for (int k = 0; k < n->n_out; k++) {
            if (t[k] == e[k]) continue;
            lt_value *w[3] = {cond, t[k], e[k]};
            LT_TRY(lt_pu_new_op(ctx, g, "Where", 3, w, NULL, 0, n->out[k] ? n->out[k]->name : "if_out", n, &t[k]));
        }
    }
    for (int k = 0; k < n->n_out; k++) {
        if (!n->out[k]) continue;
        lt_pu_take_name(g, t[k], n->out[k]);
        LT_TRY(lt_value_replace_uses(ctx, g, n->out[k], t[k]));
    }
    lt_node_remove(g, n);
    *changed = true;
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_main_if, rewrite, changed);
}

const lt_pass lt_pass_inline_if = {.name = "inline_if", .min_level = 1, .run = run,
    .summary = "If -> its taken branch (constant condition) or both branches and Where (run-time condition)"};
