/* split.c — the compile's split stage: the main graph cut at its data-dependent ops (what and why:
 * split.h). One pass over the nodes in order classifies each value (before the cut, computed by the
 * rest, a padded op's output, a host frontier node's output); the rest model is written from the
 * classified nodes (split_rest.c) before the graph is rewritten.
 */
#include "split_impl.h"

#include "../passes/mutate.h"

#include <stdio.h>
#include <string.h>

/* ---- classifying ---- */

static bool ranked_tensor(const lt_value *v) {
    return v && v->type.kind == LT_TK_TENSOR && v->type.rank >= 0 && v->type.dtype != LT_UNDEFINED;
}

/* The main-graph value a subgraph value refers to, or NULL (a value of the subgraph itself). */
static lt_value *outer_root(const lt_graph *g, lt_value *v) {
    if (!v->outer) return NULL;
    while (v->outer) v = v->outer;
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v ? v : NULL;
}

void lt_split_vset_add(value_set *r, lt_value *v) {
    for (int i = 0; i < r->n; i++)
        if (r->v[i] == v) return;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        lt_value **nv = lt_mem_realloc(r->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            r->nomem = true;
            return;
        }
        r->v = nv, r->cap = cap;
    }
    r->v[r->n++] = v;
}

static lt_status add_outer(lt_ctx *ctx, lt_graph *sg, void *user) {
    (void)ctx;
    value_set *r = user;
    for (int i = 0; i < sg->n_values; i++) {
        lt_value *root = outer_root(r->g, sg->values[i]);
        if (root) lt_split_vset_add(r, root);
    }
    return LT_OK;
}

/* The main-graph values n reads (inputs, then its subgraphs' references) into r (emptied first). */
static lt_status node_reads(lt_ctx *ctx, const lt_node *n, value_set *r) {
    r->n = 0;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]) lt_split_vset_add(r, n->in[i]);
    for (int a = 0; a < n->n_attr; a++) {
        const lt_attr *at = &n->attrs[a];
        if (at->type == LT_AT_GRAPH && at->g) LT_TRY(lt_graph_foreach(ctx, at->g, false, add_outer, r));
        for (int k = 0; at->type == LT_AT_GRAPHS && k < at->n; k++)
            LT_TRY(lt_graph_foreach(ctx, at->graphs[k], false, add_outer, r));
    }
    return r->nomem ? lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)") : LT_OK;
}

/* A frontier node with a kernel of padded outputs: NonZero, TopK with a K known at run time (opset
 * >= 10), Compress of a numeric tensor by a condition no longer than its axis. The axis of output k
 * whose length the data decides, or -1 (not padded). */
static int padded_axis(const lt_node *n, int k) {
    if (n->n_in < 1 || !n->in[0] || !lt_type_is_static(&n->in[0]->type) || n->in[0]->type.rank < 1 || k >= n->n_out ||
        !n->out[0])
        return -1;
    if (n->op == LT_OP_NonZero) return k == 0 ? 1 : -1;
    if (n->op == LT_OP_NonMaxSuppression) {
        const lt_value *sc = n->n_in > 1 ? n->in[1] : NULL;
        bool ok = n->in[0]->type.rank == 3 && sc && lt_type_is_static(&sc->type) && sc->type.rank == 3;
        return ok && k == 0 ? 0 : -1;
    }
    if (n->op == LT_OP_Unique) { /* Y (along the axis, if any), indices and counts padded; inverse_indices static */
        lt_dclass cls = lt_dtype_get(n->in[0]->type.dtype)->cls;
        const lt_attr *aa = lt_node_attr(n, "axis");
        int rank = n->in[0]->type.rank;
        bool ok = (cls == LT_DC_SINT || cls == LT_DC_UINT || cls == LT_DC_BOOL || cls == LT_DC_FLOAT) &&
                  (!aa || (aa->i >= -rank && aa->i < rank));
        int a = aa ? (int)(aa->i < 0 ? aa->i + rank : aa->i) : 0;
        return ok && k < 4 && k != 2 ? (k == 0 ? a : 0) : -1;
    }
    if (n->op == LT_OP_Compress) {
        const lt_value *x = n->in[0], *c = n->n_in > 1 ? n->in[1] : NULL;
        if (k != 0 || !c || !lt_type_is_static(&c->type) || c->type.rank != 1 || x->type.dtype == LT_STRING) return -1;
        const lt_attr *aa = lt_node_attr(n, "axis");
        int rank = x->type.rank;
        int64_t len = 1;
        for (int d = 0; d < rank; d++) len *= x->type.dims[d].value;
        if (aa && (aa->i < -rank || aa->i >= rank)) return -1;
        int a = aa ? (int)(aa->i < 0 ? aa->i + rank : aa->i) : 0;
        if (aa) len = x->type.dims[a].value;
        return c->type.dims[0].value <= len ? a : -1;
    }
    if (n->op != LT_OP_TopK || n->opset < 10 || n->n_in < 2 || !n->in[1] || !lt_type_is_static(&n->in[1]->type) ||
        k > 1)
        return -1;
    int rank = n->in[0]->type.rank;
    int64_t a = lt_attr_int(n, "axis", -1);
    return a >= -rank && a < rank ? (int)(a < 0 ? a + rank : a) : -1;
}

/* The padded op that replaces a frontier node n (padded_axis(n, 0) >= 0), or NULL. */
static const char *padded_op(const lt_node *n) {
    switch (n->op) {
    case LT_OP_NonZero: return "NonZeroPadded";
    case LT_OP_TopK: return "TopKPadded";
    case LT_OP_Compress: return "CompressPadded";
    case LT_OP_NonMaxSuppression: return "NonMaxSuppressionPadded";
    case LT_OP_Unique: return "UniquePadded";
    default: return NULL;
    }
}

static void cut_free(cut *c) {
    lt_mem_free(c->vclass);
    lt_mem_free(c->rest);
    lt_mem_free(c->padded);
    lt_mem_free(c->pad_axis);
    lt_mem_free(c->in);
    lt_mem_free(c->inits);
    lt_mem_free(c->outs);
}

static bool listed(lt_value *const *list, int n, const lt_value *v) {
    for (int i = 0; i < n; i++)
        if (list[i] == v) return true;
    return false;
}

/* Classify; false (nothing to split) when there is no frontier with a rest after it, or the rest would
 * read a value that is not a ranked tensor. */
static lt_status find_cut(lt_ctx *ctx, const lt_graph *g, cut *c, bool *found) {
    *found = false;
    c->g = g;
    int nv = g->n_values, nn = g->n_nodes;
    c->vclass = lt_calloc(ctx, (size_t)nv + 1, 1, "split");
    c->rest = lt_calloc(ctx, (size_t)nn + 1, sizeof *c->rest, "split");
    c->padded = lt_calloc(ctx, (size_t)nn + 1, sizeof *c->padded, "split");
    c->pad_axis = lt_calloc(ctx, (size_t)nv + 1, sizeof *c->pad_axis, "split");
    c->in = lt_calloc(ctx, (size_t)nv + 1, sizeof *c->in, "split");
    c->inits = lt_calloc(ctx, (size_t)nv + 1, sizeof *c->inits, "split");
    c->outs = lt_calloc(ctx, (size_t)g->n_outputs + 1, sizeof *c->outs, "split");
    if (!c->vclass || !c->rest || !c->padded || !c->pad_axis || !c->in || !c->inits || !c->outs) return LT_ERR_NOMEM;
    value_set r = {.g = g};
    lt_status s = LT_OK;
    for (int i = 0; i < nn && s == LT_OK; i++) {
        const lt_node *n = g->nodes[i];
        if ((s = node_reads(ctx, n, &r)) != LT_OK) break;
        bool after = false, static_in = true;
        for (int k = 0; k < r.n; k++) after |= c->vclass[r.v[k]->id] != V_HEAD;
        for (int k = 0; k < n->n_in; k++) static_in &= !n->in[k] || lt_type_is_static(&n->in[k]->type);
        if (after) {
            c->rest[i] = true, c->n_rest++;
            for (int k = 0; k < n->n_out; k++)
                if (n->out[k]) c->vclass[n->out[k]->id] = V_REST;
            continue;
        }
        bool dyn = false, ranked = true;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k]) dyn |= !lt_type_is_static(&n->out[k]->type), ranked &= ranked_tensor(n->out[k]);
        if (!static_in || !dyn || !ranked || n->op == LT_OP_DataDependentRest) continue;
        c->padded[i] = padded_axis(n, 0) >= 0 && padded_op(n);
        c->n_frontier++, c->n_padded += c->padded[i];
        if (!c->first) c->first = n;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k]) {
                c->vclass[n->out[k]->id] = c->padded[i] ? V_PADDED : V_FRONTIER;
                c->pad_axis[n->out[k]->id] = padded_axis(n, k);
            }
    }
    /* what the rest reads from before the cut, and the initializers it reads */
    for (int i = 0; i < nn && s == LT_OK; i++) {
        if (!c->rest[i]) continue;
        if ((s = node_reads(ctx, g->nodes[i], &r)) != LT_OK) break;
        for (int k = 0; k < r.n; k++) {
            lt_value *v = r.v[k];
            int vc = c->vclass[v->id];
            if (vc == V_REST) continue;
            if (vc == V_HEAD && v->init && !v->is_input) {
                if (!listed(c->inits, c->n_inits, v)) c->inits[c->n_inits++] = v;
                continue;
            }
            if (!ranked_tensor(v)) goto none; /* a sequence, a map, an unknown rank */
            if (!listed(c->in, c->n_in, v)) c->in[c->n_in++] = v;
        }
    }
    lt_mem_free(r.v);
    if (s != LT_OK) return s;
    for (int k = 0; k < g->n_outputs; k++) /* the graph outputs the rest computes */
        if (c->vclass[g->outputs[k]->id] == V_REST && !listed(c->outs, c->n_outs, g->outputs[k]))
            c->outs[c->n_outs++] = g->outputs[k];
    c->n_model_out = c->n_outs;
    for (int k = 0; k < g->n_outputs; k++) { /* padded outputs the graph returns: a view of the rest's input */
        lt_value *v = g->outputs[k];
        if (c->vclass[v->id] != V_PADDED || listed(c->outs, c->n_outs, v)) continue;
        c->outs[c->n_outs++] = v;
        if (!listed(c->in, c->n_in, v)) c->in[c->n_in++] = v;
    }
    *found = c->n_rest > 0 || c->n_padded > 0;
    return LT_OK;
none:
    lt_mem_free(r.v);
    return LT_OK;
}

/* ---- rewriting the graph ---- */

static lt_status rewrite(lt_ctx *ctx, lt_model *m, const cut *c, lt_split *sp) {
    lt_graph *g = m->graph;
    int nn = g->n_nodes;
    lt_node **gone = lt_calloc(ctx, 2 * (size_t)nn + 1, sizeof *gone, "split"); /* the rest, then the padded */
    lt_value **buf = lt_calloc(ctx, (size_t)g->n_values + 1, sizeof *buf, "split"); /* per value id: padded buffer */
    lt_value **cnt = lt_calloc(ctx, (size_t)g->n_values + 1, sizeof *cnt, "split");
    lt_value **rin = lt_calloc(ctx, 2 * (size_t)c->n_in + 1, sizeof *rin, "split");
    lt_status s = gone && buf && cnt && rin ? LT_OK : LT_ERR_NOMEM;
    int n_gone = 0, n_rin = 0;
    if (s == LT_OK && c->n_padded) s = lt_model_import_lathe(ctx, m);
    lt_node **pads = gone + nn; /* the padded NonZeros (collected first: new nodes shift the indices) */
    int n_pads = 0;
    for (int i = 0; s == LT_OK && i < nn; i++) {
        if (c->rest[i]) gone[n_gone++] = g->nodes[i];
        if (c->padded[i]) pads[n_pads++] = g->nodes[i];
    }
    for (int i = 0; i < n_pads && s == LT_OK; i++) {
        lt_node *n = pads[i], *pn = NULL;
        bool nz = n->op == LT_OP_NonZero;
        /* data outputs (all of the op's, present or not), then the count */
        int n_data = n->op == LT_OP_TopK ? 2 : n->op == LT_OP_Unique ? 4 : 1;
        if ((s = lt_node_new(ctx, g, padded_op(n), "lathe", n->n_in, n->in, n_data + 1, n->out[0]->name, n, &pn)) != LT_OK)
            break;
        pn->name = n->name;
        if (!nz) { /* the op's attributes and opset (its eval is the padded op's reference) */
            pn->opset = n->opset;
            if ((s = lt_node_copy_attrs(ctx, pn, n)) != LT_OK) break;
        }
        if ((s = lt_node_infer(ctx, pn)) != LT_OK) break;
        for (int k = 0; k < n_data && k < n->n_out; k++)
            if (n->out[k]) buf[n->out[k]->id] = pn->out[k], cnt[n->out[k]->id] = pn->out[pn->n_out - 1];
        gone[n_gone++] = n;
    }
    /* the rest node's inputs, in the rest model's input order */
    for (int i = 0; i < c->n_in && s == LT_OK; i++) {
        lt_value *v = c->in[i];
        bool from_pad = c->vclass[v->id] == V_PADDED, pad = from_pad && c->pad_axis[v->id] >= 0;
        sp->ins[i] = (rest_in){n_rin, pad ? n_rin + 1 : -1, pad ? c->pad_axis[v->id] : -1, NULL, false};
        if (pad && v->producer) { /* still the original op: the nodes are removed below */
            char label[256];
            sp->ins[i].label = lt_arena_strdup(&sp->arena, lt_node_label(v->producer, label, sizeof label));
            sp->ins[i].topk = v->producer->op == LT_OP_TopK;
            if (!sp->ins[i].label) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
        }
        rin[n_rin++] = from_pad ? buf[v->id] : v;
        if (pad) rin[n_rin++] = cnt[v->id];
    }
    for (int i = 0; i < n_gone && s == LT_OK; i++) lt_node_remove(g, gone[i]);
    lt_node *rn = NULL;
    if (s == LT_OK) s = lt_node_new(ctx, g, "DataDependentRest", "lathe", n_rin, rin, c->n_outs, "rest", NULL, &rn);
    if (s == LT_OK) { /* the inputs the rest reads on the host: the counts (the others, on a device plan,
                       * stay on the device) */
        int64_t *host = lt_calloc(ctx, (size_t)c->n_in + 1, sizeof *host, "split");
        int nh = 0;
        for (int i = 0; host && i < c->n_in; i++)
            if (sp->ins[i].count_in >= 0) host[nh++] = sp->ins[i].count_in;
        s = host ? lt_node_set_attr_ints(ctx, rn, "host_inputs", nh, host) : LT_ERR_NOMEM;
        lt_mem_free(host);
    }
    if (s == LT_OK) {
        char name[320];
        snprintf(name, sizeof name, "the rest after %s", sp->first); /* labelled before the nodes moved */
        rn->name = lt_arena_strdup(&m->arena, name);
        if (!rn->name) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    }
    for (int k = 0; k < c->n_outs && s == LT_OK; k++) { /* it produces the graph's own output values */
        rn->out[k]->producer = NULL;
        rn->out[k] = c->outs[k];
        c->outs[k]->producer = rn, c->outs[k]->producer_out = k;
    }
    if (s == LT_OK) s = lt_graph_compact(ctx, g);
    lt_mem_free(gone);
    lt_mem_free(buf);
    lt_mem_free(cnt);
    lt_mem_free(rin);
    return s == LT_ERR_NOMEM && !ctx->msg[0] ? lt_error(ctx, s, "out of memory (split)") : s;
}

lt_status lt_split_graph(lt_ctx *ctx, lt_model *m, const lt_compile_options *opt, bool build_rest,
                         lt_compile_report *r, lt_split **out) {
    *out = NULL;
    if (!lt_split_compiles_rest(opt) || !m->graph) return LT_OK;
    cut c = {0};
    bool found = false;
    lt_status s = find_cut(ctx, m->graph, &c, &found);
    if (s != LT_OK || !found) {
        cut_free(&c);
        return s == LT_ERR_NOMEM && !ctx->msg[0] ? lt_error(ctx, s, "out of memory (split)") : s;
    }
    lt_split *sp = lt_calloc(ctx, 1, sizeof *sp, "split");
    if (!sp) {
        cut_free(&c);
        return LT_ERR_NOMEM;
    }
    lt_arena_init(&sp->arena);
    sp->n_in = c.n_in, sp->n_out = c.n_outs, sp->n_model_out = c.n_model_out;
    sp->ins = lt_arena_alloc(&sp->arena, ((size_t)c.n_in + 1) * sizeof *sp->ins);
    sp->outs = lt_arena_alloc(&sp->arena, ((size_t)c.n_outs + 1) * sizeof *sp->outs);
    if (!sp->ins || !sp->outs) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    for (int k = 0; k < c.n_outs && s == LT_OK; k++) {
        sp->outs[k] = (rest_out){k < c.n_model_out ? k : -1, -1};
        for (int i = 0; k >= c.n_model_out && i < c.n_in; i++)
            if (c.in[i] == c.outs[k]) sp->outs[k].view_of = i;
    }
    if (s == LT_OK && build_rest) s = lt_split_make_rest(ctx, m, opt, &c, &sp->rm);
    r->n_split_frontier = c.n_frontier, r->n_split_padded = c.n_padded, r->n_rest_nodes = c.n_rest;
    if (s == LT_OK) {
        lt_node_label(c.first, r->split_first, sizeof r->split_first);
        snprintf(sp->first, sizeof sp->first, "%s", r->split_first);
    }
    if (s == LT_OK) s = rewrite(ctx, m, &c, sp);
    cut_free(&c);
    if (s != LT_OK) {
        lt_split_free(sp);
        return s;
    }
    *out = sp;
    return LT_OK;
}

