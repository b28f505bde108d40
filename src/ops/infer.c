/* infer.c — whole-graph shape and type inference, binding symbolic dims, and the supported-op check.
 *
 * lt_graph_infer visits nodes in order (subgraphs of a node first, so control-flow ops can read their
 * bodies' types) and calls each op's infer hook. A value's declared type (from the model's
 * value_info / graph outputs) is kept when the hook learns less than the declaration says. */
#include "infer.h"

#include "ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True if inferred type `t` says less than declared type `d` (unknown kind, rank or dtype). */
static bool less_known(const lt_type *t, const lt_type *d) {
    if (d->kind == LT_TK_UNKNOWN) return false;
    if (t->kind == LT_TK_UNKNOWN) return true;
    if (t->kind != d->kind) return true; /* the model's declaration wins a disagreement of kind */
    if (t->kind == LT_TK_TENSOR) {
        if (t->dtype == LT_UNDEFINED && d->dtype != LT_UNDEFINED) return true;
        if (t->rank < 0 && d->rank >= 0) return true;
    }
    return false;
}

/* Fill unknown dims of an inferred tensor type from the declared one (same rank). */
static void merge_dims(lt_type *t, const lt_type *d) {
    if (t->kind != LT_TK_TENSOR || d->kind != LT_TK_TENSOR || t->rank != d->rank || t->rank <= 0) return;
    if (!t->dims || !d->dims) return;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].value < 0 && !t->dims[i].param && (d->dims[i].value >= 0 || d->dims[i].param))
            t->dims[i] = d->dims[i];
}

static lt_status infer_graph(lt_infer *ic, lt_graph *g);

/* A tensor type with a known rank and every dim a known value. */
static bool type_static(const lt_type *t) {
    if (t->kind != LT_TK_TENSOR || t->rank < 0 || (t->rank > 0 && !t->dims)) return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].value < 0) return false;
    return true;
}

/* Did the hook just verify node n? Its op checks every rule at inference, every input it has is a
 * static tensor, and the hook itself (before declared types are merged in) gave every output a
 * static shape: a shape the model declares but inference could not derive was never checked. */
static bool node_verified(const lt_node *n) {
    if (!(lt_op_info_get(n->op)->flags & LT_OPF_INFER_CHECKS)) return false;
    for (int i = 0; i < n->n_in; i++) {
        const lt_value *v = n->in[i];
        if (!v) continue;
        while (v->outer && v->type.kind == LT_TK_UNKNOWN) v = v->outer;
        if (!type_static(&v->type)) return false;
    }
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] && !type_static(&n->out[i]->type)) return false;
    return true;
}

/* Infer a subgraph (an If branch, a Loop body). A branch may hold nodes that would be wrong were it
 * taken (an If that picks the branch for the input's rank): an inconsistency there is not the
 * model's error unless the branch runs, so it is left to the interpreter, which runs subgraphs and
 * checks every node it runs. Out of memory still fails. */
static lt_status infer_subgraph(lt_infer *ic, lt_graph *g) {
    lt_status s = infer_graph(ic, g);
    if (s == LT_ERR_INVALID) {
        lt_ctx_clear(ic->ctx);
        return LT_OK;
    }
    return s;
}

lt_status lt_infer_node(lt_infer *ic, lt_node *n) {
    for (int a = 0; a < n->n_attr; a++) {
        lt_attr *at = &n->attrs[a];
        if (at->type == LT_AT_GRAPH) LT_TRY(infer_subgraph(ic, at->g));
        if (at->type == LT_AT_GRAPHS)
            for (int k = 0; k < at->n; k++) LT_TRY(infer_subgraph(ic, at->graphs[k]));
    }
    const lt_op_hooks *h = lt_op_hooks_get(n->op);
    n->shapes_verified = false;
    if (!h->infer) return LT_OK;
    /* Keep the declared types aside: the hook overwrites out types. */
    lt_type declared[64];
    int nd = n->n_out < 64 ? n->n_out : 64;
    for (int i = 0; i < nd; i++) declared[i] = n->out[i] ? n->out[i]->type : (lt_type){0};
    /* The hook starts from unknown outputs, so what it leaves static it derived itself. */
    for (int i = 0; i < nd; i++)
        if (n->out[i]) n->out[i]->type = (lt_type){.kind = LT_TK_UNKNOWN, .rank = -1};
    LT_TRY(h->infer(ic, n));
    n->shapes_verified = n->n_out <= 64 && node_verified(n);
    for (int i = 0; i < nd; i++) {
        lt_value *v = n->out[i];
        if (!v) continue;
        if (less_known(&v->type, &declared[i])) v->type = declared[i];
        else merge_dims(&v->type, &declared[i]);
    }
    return LT_OK;
}

static lt_status infer_graph(lt_infer *ic, lt_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) LT_TRY(lt_infer_node(ic, g->nodes[i]));
    return LT_OK;
}

lt_status lt_graph_infer(lt_ctx *ctx, lt_model *m) {
    lt_infer ic = {ctx, &m->arena};
    return infer_graph(&ic, m->graph);
}

/* ---- binding ---- */
lt_status lt_model_bind_shape(lt_ctx *ctx, lt_model *m, const char *name, int rank, const int64_t *dims) {
    lt_graph *g = m->graph;
    lt_value *v = NULL;
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) v = g->inputs[i];
    if (!v) return lt_error(ctx, LT_ERR_USAGE, "--shapes: the model has no input named '%s'", name);
    if (v->type.kind != LT_TK_TENSOR)
        return lt_error(ctx, LT_ERR_USAGE, "--shapes: input '%s' is not a tensor", name);
    if (v->type.rank >= 0 && v->type.rank != rank)
        return lt_error(ctx, LT_ERR_USAGE, "--shapes: input '%s' has rank %d, the shape given has rank %d", name,
                        v->type.rank, rank);
    if (rank > LT_MAX_RANK) return lt_error(ctx, LT_ERR_UNSUPPORTED, "--shapes: rank %d exceeds %d", rank, LT_MAX_RANK);
    lt_dim *d = rank ? lt_arena_alloc(&m->arena, (size_t)rank * sizeof *d) : NULL;
    if (rank && !d) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (binding shapes)");
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return lt_error(ctx, LT_ERR_USAGE, "--shapes: negative dimension for input '%s'", name);
        if (v->type.rank >= 0 && v->type.dims && v->type.dims[i].value >= 0 && v->type.dims[i].value != dims[i])
            return lt_error(ctx, LT_ERR_USAGE, "--shapes: input '%s' dimension %d is fixed at %lld, not %lld", name, i,
                            (long long)v->type.dims[i].value, (long long)dims[i]);
        d[i] = (lt_dim){dims[i], NULL};
    }
    /* Bind the symbolic names this input used, everywhere. */
    if (v->type.rank == rank && v->type.dims)
        for (int i = 0; i < rank; i++)
            if (v->type.dims[i].param) {
                const char *p = v->type.dims[i].param;
                v->type.dims[i].param = NULL; /* avoid rebinding this entry twice */
                lt_status s = lt_model_bind_dim(ctx, m, p, dims[i]);
                if (s == LT_ERR_USAGE) lt_ctx_clear(ctx); /* only this input used it */
                else if (s) return s;
            }
    v->type.rank = rank;
    v->type.dims = d;
    return lt_graph_infer(ctx, m);
}

static int bind_type(lt_type *t, const char *param, int64_t value) {
    int count = 0;
    if (!t) return 0;
    if (t->kind == LT_TK_TENSOR && t->rank > 0 && t->dims)
        for (int i = 0; i < t->rank; i++)
            if (t->dims[i].param && strcmp(t->dims[i].param, param) == 0) {
                t->dims[i] = (lt_dim){value, NULL};
                count++;
            }
    return count + bind_type(t->elem, param, value);
}

static int bind_graph(lt_graph *g, const char *param, int64_t value) {
    int count = 0;
    for (int i = 0; i < g->n_values; i++) count += bind_type(&g->values[i]->type, param, value);
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < g->nodes[i]->n_attr; a++) {
            lt_attr *at = &g->nodes[i]->attrs[a];
            if (at->type == LT_AT_GRAPH) count += bind_graph(at->g, param, value);
            if (at->type == LT_AT_GRAPHS)
                for (int k = 0; k < at->n; k++) count += bind_graph(at->graphs[k], param, value);
        }
    return count;
}

lt_status lt_model_bind_dim(lt_ctx *ctx, lt_model *m, const char *param, int64_t value) {
    if (value < 0) return lt_error(ctx, LT_ERR_USAGE, "--dim %s: negative value %lld", param, (long long)value);
    if (bind_graph(m->graph, param, value) == 0)
        return lt_error(ctx, LT_ERR_USAGE, "--dim: the model has no dimension named '%s'", param);
    return lt_graph_infer(ctx, m);
}

/* "name:1x3x224x224" — the name may itself contain ':' (the last ':' separates). */
static lt_status bind_one_shape(lt_ctx *ctx, lt_model *m, const char *item) {
    const char *colon = strrchr(item, ':');
    if (!colon || colon == item)
        return lt_error(ctx, LT_ERR_USAGE, "--shapes: expected NAME:DxDxD, got '%s'", item);
    char name[512];
    size_t nl = (size_t)(colon - item);
    if (nl >= sizeof name) return lt_error(ctx, LT_ERR_USAGE, "--shapes: input name too long");
    memcpy(name, item, nl);
    name[nl] = 0;
    int64_t dims[LT_MAX_RANK];
    int rank = 0;
    const char *p = colon + 1;
    if (*p) {
        for (;;) {
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (end == p || v < 0 || errno == ERANGE) return lt_error(ctx, LT_ERR_USAGE, "--shapes: bad dimension in '%s'", item);
            if (rank == LT_MAX_RANK) return lt_error(ctx, LT_ERR_USAGE, "--shapes: too many dimensions in '%s'", item);
            dims[rank++] = v;
            if (*end == 0) break;
            if (*end != 'x' && *end != 'X') return lt_error(ctx, LT_ERR_USAGE, "--shapes: bad separator in '%s'", item);
            p = end + 1;
        }
    }
    return lt_model_bind_shape(ctx, m, name, rank, dims);
}

lt_status lt_model_bind_shapes_spec(lt_ctx *ctx, lt_model *m, const char *spec) {
    char *copy = lt_mem_strdup(spec);
    if (!copy) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    lt_status s = LT_OK;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && !s; tok = strtok_r(NULL, ",", &save)) s = bind_one_shape(ctx, m, tok);
    lt_mem_free(copy);
    return s;
}

lt_status lt_model_bind_dim_spec(lt_ctx *ctx, lt_model *m, const char *spec) {
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) return lt_error(ctx, LT_ERR_USAGE, "--dim: expected NAME=VALUE, got '%s'", spec);
    char name[256];
    size_t nl = (size_t)(eq - spec);
    if (nl >= sizeof name) return lt_error(ctx, LT_ERR_USAGE, "--dim: name too long");
    memcpy(name, spec, nl);
    name[nl] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || *end || v < 0 || errno == ERANGE) return lt_error(ctx, LT_ERR_USAGE, "--dim: bad value in '%s'", spec);
    return lt_model_bind_dim(ctx, m, name, v);
}

/* ---- supported-op check ---- */
typedef struct unsupported {
    const char *domain, *op_type, *first_node;
    int64_t opset;
    int count;
} unsupported;

static void collect(const lt_graph *g, unsupported *list, int *n, int max) {
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *nd = g->nodes[i];
        for (int a = 0; a < nd->n_attr; a++) {
            if (nd->attrs[a].type == LT_AT_GRAPH) collect(nd->attrs[a].g, list, n, max);
            if (nd->attrs[a].type == LT_AT_GRAPHS)
                for (int k = 0; k < nd->attrs[a].n; k++) collect(nd->attrs[a].graphs[k], list, n, max);
        }
        if (lt_op_hooks_get(nd->op)->eval) continue;
        int k = 0;
        for (; k < *n; k++)
            if (strcmp(list[k].op_type, nd->op_type) == 0 && strcmp(list[k].domain, nd->domain) == 0 &&
                list[k].opset == nd->opset)
                break;
        if (k < *n) list[k].count++;
        else if (*n < max) list[(*n)++] = (unsupported){nd->domain, nd->op_type, nd->name, nd->opset, 1};
    }
}

lt_status lt_model_check_supported(lt_ctx *ctx, const lt_model *m) {
    unsupported list[128];
    int n = 0;
    collect(m->graph, list, &n, 128);
    if (!n) return LT_OK;
    lt_strbuf b = {0};
    lt_sb_printf(&b, "%d unsupported operator%s:", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++)
        lt_sb_printf(&b, "\n  %s (domain '%s', opset %lld): %d node%s, first '%s'", list[i].op_type,
                     *list[i].domain ? list[i].domain : "ai.onnx", (long long)list[i].opset, list[i].count,
                     list[i].count == 1 ? "" : "s", list[i].first_node);
    lt_status s = lt_error(ctx, LT_ERR_UNSUPPORTED, "%s", b.failed ? "unsupported operators" : b.s);
    lt_sb_free(&b);
    return s;
}
