/* interp.c — the reference interpreter: runs a graph node by node through the ops' eval hooks.
 *
 * An environment holds one datum per graph value (indexed by value id) and points at the enclosing
 * graph's environment, through which subgraphs read outer-scope values (lt_value.outer). Each value
 * is released after its last use in the graph (a use inside a subgraph counts as a use by the node
 * that owns the subgraph); graph outputs are kept and handed to the caller. */
#include "interp.h"

#include <limits.h>
#include <string.h>

/* Mark, for every value of `g` that subgraph `sub` (nested anywhere) reads through ->outer, a use
 * at node index `at`. */
static void mark_outer_uses(const lt_graph *sub, const lt_graph *g, int at, int *last_use) {
    for (int i = 0; i < sub->n_values; i++) {
        /* Follow the chain of outer references up to the value that lives in g, if any. */
        for (const lt_value *v = sub->values[i]->outer; v; v = v->outer)
            if (v->id >= 0 && v->id < g->n_values && g->values[v->id] == v) {
                if (last_use[v->id] < at) last_use[v->id] = at;
                break;
            }
    }
    for (int n = 0; n < sub->n_nodes; n++)
        for (int a = 0; a < sub->nodes[n]->n_attr; a++) {
            const lt_attr *at_ = &sub->nodes[n]->attrs[a];
            if (at_->type == LT_AT_GRAPH) mark_outer_uses(at_->g, g, at, last_use);
            if (at_->type == LT_AT_GRAPHS)
                for (int k = 0; k < at_->n; k++) mark_outer_uses(at_->graphs[k], g, at, last_use);
        }
}

static lt_status lookup(lt_eval *ev, lt_env *env, const lt_value *v, lt_datum **out) {
    if (v->outer) {
        if (!env->parent)
            return lt_error(ev->ctx, LT_ERR_INTERNAL, "outer-scope value '%s' has no enclosing environment", v->name);
        return lookup(ev, env->parent, v->outer, out);
    }
    if (v->id < 0 || v->id >= env->graph->n_values || env->graph->values[v->id] != v)
        return lt_error(ev->ctx, LT_ERR_INTERNAL, "value '%s' does not belong to graph '%s'", v->name,
                        env->graph->name ? env->graph->name : "");
    lt_datum **slot = &env->vals[v->id];
    if (!*slot && v->init) {
        lt_tensor_retain(v->init);
        LT_TRY(lt_datum_tensor(ev->ctx, v->init, slot));
    }
    if (!*slot) return lt_error(ev->ctx, LT_ERR_INVALID, "value '%s' has no value at run time", v->name);
    *out = *slot;
    return LT_OK;
}

static lt_status run_node(lt_eval *ev, lt_env *env, const lt_node *n) {
    char label[256];
    const lt_op_hooks *h = lt_op_hooks_get(n->op);
    if (!h->eval)
        return lt_error(ev->ctx, LT_ERR_UNSUPPORTED, "%s: operator %s%s%s (opset %d) is not supported",
                        lt_node_label(n, label, sizeof label), *n->domain ? n->domain : "", *n->domain ? "." : "",
                        n->op_type, n->opset);
    lt_datum *in_stack[16], *out_stack[16];
    lt_datum **in = n->n_in <= 16 ? in_stack : lt_calloc(ev->ctx, (size_t)n->n_in, sizeof *in, "node inputs");
    lt_datum **out = n->n_out <= 16 ? out_stack : lt_calloc(ev->ctx, (size_t)n->n_out, sizeof *out, "node outputs");
    lt_status s = LT_OK;
    if (!in || !out) { s = LT_ERR_NOMEM; goto done; }
    for (int i = 0; i < n->n_out; i++) out[i] = NULL;
    for (int i = 0; i < n->n_in; i++) {
        in[i] = NULL;
        if (n->in[i] && (s = lookup(ev, env, n->in[i], &in[i]))) goto done;
    }
    s = h->eval(ev, n, in, out);
    if (s == LT_OK && ev->ctx->status != LT_OK) s = ev->ctx->status; /* an op that reported but returned OK */
    if (s == LT_OK) {
        for (int i = 0; i < n->n_out; i++) {
            if (!n->out[i]) continue;
            if (!out[i]) {
                s = lt_error(ev->ctx, LT_ERR_INTERNAL, "%s: output %d '%s' was not produced",
                             lt_node_label(n, label, sizeof label), i, n->out[i]->name);
                break;
            }
            lt_datum **slot = &env->vals[n->out[i]->id];
            lt_datum_release(*slot);
            *slot = out[i];
            out[i] = NULL;
        }
    }
    for (int i = 0; i < n->n_out; i++) lt_datum_release(out[i]);
done:
    if (in && in != in_stack) lt_mem_free(in);
    if (out && out != out_stack) lt_mem_free(out);
    return s;
}

static lt_status run_graph(lt_eval *ev, lt_env *parent, const lt_graph *g, lt_datum *const *inputs, int n_inputs,
                           lt_datum **outputs) {
    lt_env env = {g, parent, NULL};
    int *last_use = NULL;
    lt_status s = LT_OK;
    env.vals = lt_calloc(ev->ctx, (size_t)(g->n_values ? g->n_values : 1), sizeof *env.vals, "interpreter values");
    last_use = lt_calloc(ev->ctx, (size_t)(g->n_values ? g->n_values : 1), sizeof *last_use, "interpreter liveness");
    if (!env.vals || !last_use) { s = LT_ERR_NOMEM; goto done; }

    for (int i = 0; i < g->n_values; i++) last_use[i] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] && !n->in[k]->outer) last_use[n->in[k]->id] = i;
        for (int a = 0; a < n->n_attr; a++) {
            if (n->attrs[a].type == LT_AT_GRAPH) mark_outer_uses(n->attrs[a].g, g, i, last_use);
            if (n->attrs[a].type == LT_AT_GRAPHS)
                for (int k = 0; k < n->attrs[a].n; k++) mark_outer_uses(n->attrs[a].graphs[k], g, i, last_use);
        }
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (!g->outputs[i]->outer) last_use[g->outputs[i]->id] = INT_MAX;

    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (i < n_inputs && inputs[i]) {
            env.vals[v->id] = lt_datum_retain(inputs[i]);
        } else if (!v->init) {
            s = lt_error(ev->ctx, LT_ERR_INVALID, "graph '%s': input %d '%s' was not given a value", g->name ? g->name : "",
                         i, v->name);
            goto done;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        lt_env *saved = ev->env;
        ev->env = &env; /* subgraphs run by this node see this graph as their outer scope */
        s = run_node(ev, &env, n);
        ev->env = saved;
        if (s) goto done;
        for (int k = 0; k < n->n_in; k++) {
            const lt_value *v = n->in[k];
            if (v && !v->outer && last_use[v->id] == i) {
                lt_datum_release(env.vals[v->id]);
                env.vals[v->id] = NULL;
            }
        }
        for (int k = 0; k < n->n_out; k++) { /* outputs nobody reads */
            const lt_value *v = n->out[k];
            if (v && last_use[v->id] < i) {
                lt_datum_release(env.vals[v->id]);
                env.vals[v->id] = NULL;
            }
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        lt_datum *d;
        if ((s = lookup(ev, &env, g->outputs[i], &d))) {
            for (int k = 0; k < i; k++) { lt_datum_release(outputs[k]); outputs[k] = NULL; }
            goto done;
        }
        outputs[i] = lt_datum_retain(d);
    }
done:
    if (env.vals)
        for (int i = 0; i < g->n_values; i++) lt_datum_release(env.vals[i]);
    lt_mem_free(env.vals);
    lt_mem_free(last_use);
    return s;
}

lt_status lt_interp_subgraph(lt_eval *ev, const lt_graph *g, lt_datum *const *inputs, int n_inputs, lt_datum **outputs) {
    return run_graph(ev, ev->env, g, inputs, n_inputs, outputs);
}

lt_status lt_interp_env_value(lt_eval *ev, const lt_value *v, lt_datum **out) {
    for (lt_env *e = ev->env; e; e = e->parent)
        if (v->id >= 0 && v->id < e->graph->n_values && e->graph->values[v->id] == v) return lookup(ev, e, v, out);
    return lt_error(ev->ctx, LT_ERR_INTERNAL, "value '%s' is in no enclosing graph", v->name);
}

lt_status lt_interp_run(lt_ctx *ctx, const lt_model *m, const lt_interp_options *opt, lt_datum *const *inputs,
                        lt_datum **outputs) {
    lt_eval ev = {.ctx = ctx, .rng = opt ? opt->seed : 0, .model = m, .max_loop_bytes = opt ? opt->max_loop_bytes : 0,
                  .run_subgraph = lt_interp_subgraph};
    const lt_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_datum *d = inputs ? inputs[i] : NULL;
        const lt_type *t = &g->inputs[i]->type;
        if (!d || d->kind != LT_DK_TENSOR || t->kind != LT_TK_TENSOR) continue;
        if (t->dtype != LT_UNDEFINED && d->tensor->dtype != t->dtype)
            return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected %s, got %s", g->inputs[i]->name,
                            lt_dtype_name(t->dtype), lt_dtype_name(d->tensor->dtype));
        if (t->rank >= 0 && d->tensor->rank != t->rank)
            return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected rank %d, got rank %d", g->inputs[i]->name, t->rank,
                            d->tensor->rank);
        for (int k = 0; t->rank > 0 && t->dims && k < t->rank; k++)
            if (t->dims[k].value >= 0 && t->dims[k].value != d->tensor->dims[k])
                return lt_error(ctx, LT_ERR_INVALID, "input '%s': dimension %d must be %lld, got %lld", g->inputs[i]->name, k,
                                (long long)t->dims[k].value, (long long)d->tensor->dims[k]);
    }
    /* run_graph needs ev.env for subgraphs: it is set per graph through the environment chain. */
    return run_graph(&ev, NULL, g, inputs, g->n_inputs, outputs);
}
