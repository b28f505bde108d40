/* dce.c — dead-code elimination: nodes none of whose outputs is read (by a node, a graph output, or
 * a subgraph through an outer reference) are removed, last to first so whole dead chains go in one
 * run; then initializers nothing reads (and that are neither graph inputs nor outputs) are dropped
 * and their tensors released.
 *
 * Subgraphs are cleaned first (children before parents), so a parent value read only by dead code
 * inside a subgraph is dead too. Graph inputs always stay (they are the interface). No op in ONNX
 * inference has a side effect, so any unread node may go. Level -O1.
 */
#include "util.h"

/* The enclosing-graph values that sub (any depth) reads through outer references lose one use each. */
static void drop_sub_refs(const lt_graph *g, const lt_graph *sub, lt_uses *u) {
    for (int i = 0; i < sub->n_values; i++) {
        const lt_value *o = sub->values[i]->outer;
        if (o && o->id >= 0 && o->id < u->n && g->values[o->id] == o) u->count[o->id]--;
    }
    for (int i = 0; i < sub->n_nodes; i++) {
        const lt_node *n = sub->nodes[i];
        for (int a = 0; a < n->n_attr; a++) {
            const lt_attr *at = &n->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) drop_sub_refs(g, at->g, u);
            if (at->type == LT_AT_GRAPHS)
                for (int k = 0; k < at->n; k++)
                    if (at->graphs[k]) drop_sub_refs(g, at->graphs[k], u);
        }
    }
}

static lt_status dce_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    lt_uses u;
    LT_TRY(lt_uses_build(ctx, g, &u));
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        lt_node *n = g->nodes[i];
        bool live = false;
        for (int k = 0; k < n->n_out && !live; k++) {
            const lt_value *v = n->out[k];
            if (v && (v->is_output || lt_uses_of(&u, v) > 0)) live = true;
        }
        if (live) continue;
        for (int k = 0; k < n->n_in; k++) {
            const lt_value *v = n->in[k];
            if (v && v->id >= 0 && v->id < u.n && g->values[v->id] == v) u.count[v->id]--;
        }
        for (int a = 0; a < n->n_attr; a++) {
            const lt_attr *at = &n->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) drop_sub_refs(g, at->g, &u);
            if (at->type == LT_AT_GRAPHS)
                for (int k = 0; k < at->n; k++)
                    if (at->graphs[k]) drop_sub_refs(g, at->graphs[k], &u);
        }
        lt_node_remove(g, n);
        *changed = true;
    }
    for (int i = 0; i < g->n_values; i++) {
        lt_value *v = g->values[i];
        if (v->init && !v->is_input && !v->is_output && lt_uses_of(&u, v) <= 0) {
            lt_graph_release_init(g, v);
            *changed = true;
        }
    }
    lt_uses_free(&u);
    /* Drop the dead values now, so the enclosing graph (visited next) no longer counts the outer
     * references that only dead code here held. */
    return lt_graph_compact(ctx, g);
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, true, dce_graph, changed);
}

const lt_pass lt_pass_dce = {.name = "dce", .min_level = 1, .run = run,
    .summary = "remove nodes whose outputs nothing reads, and unused initializers"};
