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
 * random ops; with a run-time condition, branches that differ in output type or shape, have a value
 * of non-static shape, or hold a node that can fail on the values it reads (a Gather or Scatter with
 * indices not constant: the branch not taken must not fail the run).
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

/* A node of b can fail the run on the values it reads (an index out of range): both branches run
 * when the condition is known only at run time, so such a branch is left to the interpreter, which
 * runs only the taken one. */
static bool checks_values(const lt_graph *b) {
    for (int i = 0; i < b->n_nodes; i++) {
        const lt_node *m = b->nodes[i];
        bool indexed = m->op == LT_OP_Gather || m->op == LT_OP_GatherElements || m->op == LT_OP_GatherND ||
                       m->op == LT_OP_ScatterElements || m->op == LT_OP_ScatterND || m->op == LT_OP_Scatter ||
                       m->op == LT_OP_OneHot;
        if (indexed && !(m->n_in > 1 && m->in[1] && lt_value_const(m->in[1]))) return true;
    }
    return false;
}

/* Copy branch b's nodes before the If; outs[k] the main-graph value of b's output k. */
static lt_status copy_branch(lt_ctx *ctx, lt_graph *g, lt_node *iff, const lt_graph *b, lt_value **outs) {
    return lt_pu_copy_subgraph(ctx, g, iff, b, NULL, NULL, "inline_if", outs);
}

static bool same_static_type(const lt_value *a, const lt_value *b) {
    return a->type.kind == LT_TK_TENSOR && b->type.kind == LT_TK_TENSOR && a->type.dtype == b->type.dtype &&
           lt_pu_same_static_shape(a, b);
}

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    const lt_graph *tb = lt_attr_graph(n, "then_branch"), *eb = lt_attr_graph(n, "else_branch");
    if (n->n_in < 1 || !n->in[0] || n->n_out > 64) return LT_OK;
    lt_value *cond = n->in[0];
    const lt_tensor *c = lt_value_const(cond);
    lt_value *t[64], *e[64];
    if (c) { /* one branch */
        if (c->numel != 1) return LT_OK;
        const lt_graph *b = lt_load_f64(c->data, c->dtype, 0) != 0 ? tb : eb; /* the interpreter's rule */
        if (!branch_copyable(b, n->n_out, false)) return LT_OK;
        LT_TRY(copy_branch(ctx, g, n, b, t));
    } else {
        int r;
        int64_t d[LT_MAX_RANK];
        if (!lt_value_static_shape(cond, &r, d) || lt_pu_dtype(cond) != LT_BOOL) return LT_OK;
        for (int i = 0; i < r; i++)
            if (d[i] != 1) return LT_OK;
        if (!branch_copyable(tb, n->n_out, true) || !branch_copyable(eb, n->n_out, true)) return LT_OK;
        if (checks_values(tb) || checks_values(eb)) return LT_OK;
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
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k]) LT_TRY(lt_pu_replace_output(ctx, g, n, n->out[k], t[k]));
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
