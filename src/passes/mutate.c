/* mutate.c — graph editing for passes: values, nodes, attributes, use replacement, topological
 * re-sort and compaction. See mutate.h for the contract and the invariants each function keeps.
 *
 * Arrays (g->nodes, g->values, node->in, node->attrs) live in the model arena and are replaced by a
 * larger copy when they grow (the old copy stays in the arena until the model is freed); node and
 * value structs never move, so pointers held by passes stay valid. */
#include "mutate.h"

#include "../ops/ops.h"
#include "../ops/infer.h"

#include <stdio.h>
#include <string.h>

/* ---- walking ---- */
bool lt_node_has_subgraphs(const lt_node *n) {
    for (int a = 0; a < n->n_attr; a++)
        if (n->attrs[a].type == LT_AT_GRAPH || (n->attrs[a].type == LT_AT_GRAPHS && n->attrs[a].n > 0)) return true;
    return false;
}

lt_status lt_graph_foreach(lt_ctx *ctx, lt_graph *g, bool children_first, lt_graph_fn fn, void *user) {
    if (!children_first) LT_TRY(fn(ctx, g, user));
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        for (int a = 0; a < n->n_attr; a++) {
            lt_attr *at = &n->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) LT_TRY(lt_graph_foreach(ctx, at->g, children_first, fn, user));
            if (at->type == LT_AT_GRAPHS)
                for (int k = 0; k < at->n; k++)
                    if (at->graphs[k]) LT_TRY(lt_graph_foreach(ctx, at->graphs[k], children_first, fn, user));
        }
    }
    if (children_first) LT_TRY(fn(ctx, g, user));
    return LT_OK;
}

/* Run `body` with `sub` bound to each subgraph directly held by `node` (body may `return`). */
#define FOR_SUBGRAPHS(node, sub, body)                                                                                 \
    for (int fs_a_ = 0; fs_a_ < (node)->n_attr; fs_a_++) {                                                             \
        lt_attr *fs_at_ = &(node)->attrs[fs_a_];                                                                       \
        int fs_cnt_ = fs_at_->type == LT_AT_GRAPH ? 1 : fs_at_->type == LT_AT_GRAPHS ? fs_at_->n : 0;                  \
        for (int fs_k_ = 0; fs_k_ < fs_cnt_; fs_k_++) {                                                                \
            lt_graph *sub = fs_at_->type == LT_AT_GRAPH ? fs_at_->g : fs_at_->graphs[fs_k_];                           \
            if (!sub) continue;                                                                                        \
            body                                                                                                       \
        }                                                                                                              \
    }

/* ---- queries ---- */
const lt_tensor *lt_value_const(const lt_value *v) {
    while (v) {
        if (v->is_input) return NULL;
        if (v->init) return v->init;
        if (v->producer && v->producer->op == LT_OP_Constant) return lt_attr_tensor(v->producer, "value");
        v = v->outer;
    }
    return NULL;
}

bool lt_type_is_static(const lt_type *t) {
    if (t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK) return false;
    if (t->rank > 0 && !t->dims) return false;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].value < 0) return false;
    return true;
}

bool lt_value_static_shape(const lt_value *v, int *rank, int64_t *dims) {
    const lt_tensor *c = lt_value_const(v);
    if (c) {
        *rank = c->rank;
        for (int i = 0; i < c->rank; i++) dims[i] = c->dims[i];
        return true;
    }
    if (!lt_type_is_static(&v->type)) return false;
    *rank = v->type.rank;
    for (int i = 0; i < v->type.rank; i++) dims[i] = v->type.dims[i].value;
    return true;
}

/* Count values of sub (and of its nested subgraphs) whose outer reference is v. */
static int count_refs(const lt_graph *sub, const lt_value *v) {
    int c = 0;
    for (int i = 0; i < sub->n_values; i++)
        if (sub->values[i]->outer == v) c++;
    for (int i = 0; i < sub->n_nodes; i++) {
        lt_node *n = sub->nodes[i];
        FOR_SUBGRAPHS(n, s2, { c += count_refs(s2, v); })
    }
    return c;
}

int lt_value_count_uses(const lt_graph *g, const lt_value *v) {
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == v) c++;
        FOR_SUBGRAPHS(n, sub, { c += count_refs(sub, v); })
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) c++;
    return c;
}

/* Add one use to u for every value of sub (any depth) whose outer reference is a value of g. */
static void count_sub_refs(const lt_graph *g, const lt_graph *sub, lt_uses *u) {
    for (int i = 0; i < sub->n_values; i++) {
        const lt_value *o = sub->values[i]->outer;
        if (o && o->id >= 0 && o->id < u->n && g->values[o->id] == o) u->count[o->id]++;
    }
    for (int i = 0; i < sub->n_nodes; i++) {
        lt_node *n = sub->nodes[i];
        FOR_SUBGRAPHS(n, s2, { count_sub_refs(g, s2, u); })
    }
}

lt_status lt_uses_build(lt_ctx *ctx, const lt_graph *g, lt_uses *u) {
    int *c = lt_calloc(ctx, (size_t)(g->n_values ? g->n_values : 1), sizeof *c, "use counts");
    if (!c) return LT_ERR_NOMEM;
    u->n = g->n_values;
    u->count = c;
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            const lt_value *v = n->in[k];
            if (v && v->id >= 0 && v->id < u->n && g->values[v->id] == v) c[v->id]++;
        }
        FOR_SUBGRAPHS(n, sub, { count_sub_refs(g, sub, u); })
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const lt_value *v = g->outputs[i];
        if (v->id >= 0 && v->id < u->n && g->values[v->id] == v) c[v->id]++;
    }
    return LT_OK;
}

void lt_uses_free(lt_uses *u) {
    lt_mem_free(u->count);
    u->count = NULL;
    u->n = 0;
}

/* ---- arena helpers ---- */
static void *arena_alloc(lt_ctx *ctx, lt_graph *g, size_t size, const char *what) {
    void *p = lt_arena_alloc(&g->model->arena, size ? size : 1);
    if (!p) lt_error(ctx, LT_ERR_NOMEM, "out of memory (%s, graph '%s')", what, g->name ? g->name : "");
    return p;
}

/* Replace *arr (n pointers) by an arena copy with room for n + 1; the new slot is NULL. */
static lt_status grow_ptrs(lt_ctx *ctx, lt_graph *g, void ***arr, int n, const char *what) {
    void **p = arena_alloc(ctx, g, (size_t)(n + 1) * sizeof *p, what);
    if (!p) return LT_ERR_NOMEM;
    if (n) memcpy(p, *arr, (size_t)n * sizeof *p);
    *arr = p;
    return LT_OK;
}

/* ---- values ---- */
lt_status lt_type_copy(lt_ctx *ctx, lt_arena *a, lt_type *dst, const lt_type *src) {
    lt_type t = *src;
    if (src->rank > 0 && src->dims) {
        t.dims = lt_arena_alloc(a, (size_t)src->rank * sizeof *t.dims);
        if (!t.dims) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (types)");
        memcpy(t.dims, src->dims, (size_t)src->rank * sizeof *t.dims);
    }
    if (src->elem) {
        t.elem = lt_arena_alloc(a, sizeof *t.elem);
        if (!t.elem) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (types)");
        LT_TRY(lt_type_copy(ctx, a, t.elem, src->elem));
    }
    *dst = t;
    return LT_OK;
}

static lt_status unique_name(lt_ctx *ctx, lt_graph *g, const char *hint, const char **out) {
    if (!hint || !*hint) hint = "v";
    if (!lt_graph_find_value(g, hint)) {
        char *s = lt_arena_strdup(&g->model->arena, hint);
        if (!s) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (names)");
        *out = s;
        return LT_OK;
    }
    size_t len = strlen(hint);
    char *buf = arena_alloc(ctx, g, len + 24, "names");
    if (!buf) return LT_ERR_NOMEM;
    /* "x_1", "x_2"... while few are taken; then jump to the value count, which is rarely in use */
    for (int i = 1;; i++) {
        snprintf(buf, len + 24, "%s_%d", hint, i <= 4 ? i : g->n_values + i);
        if (!lt_graph_find_value(g, buf)) break;
    }
    *out = buf;
    return LT_OK;
}

/* Append v to g->values (sets v->id). */
static lt_status add_value(lt_ctx *ctx, lt_graph *g, lt_value *v) {
    LT_TRY(grow_ptrs(ctx, g, (void ***)&g->values, g->n_values, "graph values"));
    v->id = g->n_values;
    g->values[g->n_values++] = v;
    return LT_OK;
}

lt_status lt_value_new(lt_ctx *ctx, lt_graph *g, const char *hint, const lt_type *type, lt_value **out) {
    lt_value *v = arena_alloc(ctx, g, sizeof *v, "values");
    if (!v) return LT_ERR_NOMEM;
    LT_TRY(unique_name(ctx, g, hint, &v->name));
    if (type) LT_TRY(lt_type_copy(ctx, &g->model->arena, &v->type, type));
    else {
        v->type.kind = LT_TK_UNKNOWN;
        v->type.rank = -1;
    }
    LT_TRY(add_value(ctx, g, v));
    *out = v;
    return LT_OK;
}

/* Register t in m->owned_tensors (taking over the reference); releases t on failure. */
static lt_status own_tensor(lt_ctx *ctx, lt_model *m, lt_tensor *t) {
    if (!lt_vec_push(&m->owned_tensors, t)) {
        lt_tensor_release(t);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tensor list)");
    }
    return LT_OK;
}

static lt_status type_from_tensor(lt_ctx *ctx, lt_graph *g, const lt_tensor *t, lt_type *type) {
    lt_dim *d = NULL;
    if (t->rank) {
        d = arena_alloc(ctx, g, (size_t)t->rank * sizeof *d, "types");
        if (!d) return LT_ERR_NOMEM;
        for (int i = 0; i < t->rank; i++) d[i] = (lt_dim){t->dims[i], NULL};
    }
    lt_type_set_tensor(type, t->dtype, t->rank, d);
    return LT_OK;
}

static lt_status set_const_in(lt_ctx *ctx, lt_graph *g, lt_value *v, lt_tensor *t) {
    if (v->is_input || v->outer) {
        lt_tensor_release(t);
        return lt_error(ctx, LT_ERR_INTERNAL, "value '%s' is a graph input or an outer-scope reference: it cannot become a constant",
                        v->name);
    }
    lt_type type;
    lt_status s = type_from_tensor(ctx, g, t, &type);
    if (s) {
        lt_tensor_release(t);
        return s;
    }
    LT_TRY(own_tensor(ctx, g->model, t));
    if (v->producer) {
        lt_node *p = v->producer;
        if (v->producer_out >= 0 && v->producer_out < p->n_out && p->out[v->producer_out] == v) p->out[v->producer_out] = NULL;
        v->producer = NULL;
        v->producer_out = 0;
    }
    v->init = t;
    v->type = type;
    return LT_OK;
}

lt_status lt_value_set_const(lt_ctx *ctx, lt_graph *g, lt_value *v, lt_tensor *t) {
    if (!(v->id >= 0 && v->id < g->n_values && g->values[v->id] == v)) {
        lt_tensor_release(t);
        return lt_error(ctx, LT_ERR_INTERNAL, "lt_value_set_const: value '%s' is not in graph '%s'", v->name,
                        g->name ? g->name : "");
    }
    return set_const_in(ctx, g, v, t);
}

lt_status lt_value_new_const(lt_ctx *ctx, lt_graph *g, const char *hint, lt_tensor *t, lt_value **out) {
    lt_value *v;
    lt_status s = lt_value_new(ctx, g, hint, NULL, &v);
    if (s) {
        lt_tensor_release(t);
        return s;
    }
    LT_TRY(set_const_in(ctx, g, v, t));
    *out = v;
    return LT_OK;
}

/* Rename the references (in subgraphs, any depth) that point at v to v's current name. */
static void rename_refs(lt_graph *g, const lt_value *v) {
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        FOR_SUBGRAPHS(n, sub, {
            for (int k = 0; k < sub->n_values; k++)
                if (sub->values[k]->outer == v) {
                    sub->values[k]->name = v->name;
                    rename_refs(sub, sub->values[k]);
                }
        })
    }
}

lt_status lt_value_rename(lt_ctx *ctx, lt_graph *g, lt_value *v, const char *name) {
    lt_value *other = lt_graph_find_value(g, name);
    if (other && other != v)
        return lt_error(ctx, LT_ERR_INTERNAL, "cannot rename '%s' to '%s': graph '%s' already has that name", v->name, name,
                        g->name ? g->name : "");
    char *s = lt_arena_strdup(&g->model->arena, name);
    if (!s) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (names)");
    v->name = s;
    rename_refs(g, v);
    return LT_OK;
}

static lt_status replace_in_graph(lt_ctx *ctx, lt_graph *g, lt_value *old, lt_value *nv);

/* In subgraph sub, references to old now read nv. */
static lt_status replace_refs(lt_ctx *ctx, lt_graph *sub, lt_value *old, lt_value *nv) {
    lt_value *existing = NULL;
    for (int k = 0; k < sub->n_values; k++)
        if (sub->values[k]->outer == nv) existing = sub->values[k];
    for (int k = 0; k < sub->n_values; k++) {
        lt_value *r = sub->values[k];
        if (r->outer != old) continue;
        if (existing) {
            LT_TRY(replace_in_graph(ctx, sub, r, existing));
            r->outer = NULL; /* r is now unused and undefined: lt_graph_compact drops it */
        } else {
            r->outer = nv;
            r->name = nv->name;
            if (nv->type.kind != LT_TK_UNKNOWN) r->type = nv->type;
            rename_refs(sub, r);
            existing = r;
        }
    }
    /* deeper references that skip a level (not made by the importer, tolerated) */
    for (int i = 0; i < sub->n_nodes; i++) {
        lt_node *n = sub->nodes[i];
        FOR_SUBGRAPHS(n, s2, { LT_TRY(replace_refs(ctx, s2, old, nv)); })
    }
    return LT_OK;
}

/* Node inputs and subgraph references of g (no graph outputs). */
static lt_status replace_in_graph(lt_ctx *ctx, lt_graph *g, lt_value *old, lt_value *nv) {
    for (int i = 0; i < g->n_nodes; i++) {
        lt_node *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == old) n->in[k] = nv;
        FOR_SUBGRAPHS(n, sub, { LT_TRY(replace_refs(ctx, sub, old, nv)); })
    }
    /* outputs of a subgraph are positional: the slot takes the new value */
    if (g->parent)
        for (int i = 0; i < g->n_outputs; i++)
            if (g->outputs[i] == old) {
                g->outputs[i] = nv;
                nv->is_output = true;
                old->is_output = false;
            }
    return LT_OK;
}

lt_status lt_value_replace_uses(lt_ctx *ctx, lt_graph *g, lt_value *old, lt_value *nv) {
    if (old == nv) return LT_OK;
    LT_TRY(replace_in_graph(ctx, g, old, nv));
    if (g->parent || !old->is_output) return LT_OK;
    /* main graph: outputs are named; nv takes over the name when it can */
    bool nv_owned = nv->id >= 0 && nv->id < g->n_values && g->values[nv->id] == nv;
    if (!nv_owned || nv->is_input || nv->is_output || nv->outer) return LT_OK;
    const char *out_name = old->name, *nv_name = nv->name;
    old->name = nv_name;
    nv->name = out_name;
    rename_refs(g, nv);
    rename_refs(g, old);
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == old) g->outputs[i] = nv;
    nv->is_output = true;
    old->is_output = false;
    return LT_OK;
}

/* ---- nodes ---- */
lt_status lt_node_new(lt_ctx *ctx, lt_graph *g, const char *op_type, const char *domain, int n_in,
                      lt_value *const *in, int n_out, const char *out_hint, lt_node *before, lt_node **out) {
    if (!domain) domain = "";
    if (n_in < 0 || n_out < 0 || (before && (before->graph != g || g->nodes[before->index] != before)))
        return lt_error(ctx, LT_ERR_INTERNAL, "lt_node_new(%s): bad arguments", op_type);
    lt_node *n = arena_alloc(ctx, g, sizeof *n, "nodes");
    if (!n) return LT_ERR_NOMEM;
    n->name = "";
    if (!(n->op_type = lt_arena_strdup(&g->model->arena, op_type)) || !(n->domain = lt_arena_strdup(&g->model->arena, domain)))
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (names)");
    n->op = lt_op_lookup(domain, op_type);
    n->opset = (int)lt_model_opset(g->model, domain);
    n->graph = g;
    n->index = -1;
    n->n_in = n_in;
    n->n_out = n_out;
    if (n_in && !(n->in = arena_alloc(ctx, g, (size_t)n_in * sizeof *n->in, "node inputs"))) return LT_ERR_NOMEM;
    if (n_out && !(n->out = arena_alloc(ctx, g, (size_t)n_out * sizeof *n->out, "node outputs"))) return LT_ERR_NOMEM;
    for (int i = 0; i < n_in; i++) n->in[i] = in ? in[i] : NULL;
    /* the new nodes[] first, so that nothing below can fail once outputs point at the node */
    lt_node **arr = arena_alloc(ctx, g, (size_t)(g->n_nodes + 1) * sizeof *arr, "graph nodes");
    if (!arr) return LT_ERR_NOMEM;
    for (int i = 0; i < n_out; i++) {
        lt_status s = lt_value_new(ctx, g, out_hint ? out_hint : op_type, NULL, &n->out[i]);
        if (s) return s; /* the values made so far have no producer and no use: compaction drops them */
    }
    for (int i = 0; i < n_out; i++) {
        n->out[i]->producer = n;
        n->out[i]->producer_out = i;
    }
    int at = before ? before->index : g->n_nodes;
    if (at) memcpy(arr, g->nodes, (size_t)at * sizeof *arr);
    arr[at] = n;
    if (g->n_nodes > at) memcpy(&arr[at + 1], &g->nodes[at], (size_t)(g->n_nodes - at) * sizeof *arr);
    g->nodes = arr;
    g->n_nodes++;
    for (int i = at; i < g->n_nodes; i++) g->nodes[i]->index = i;
    *out = n;
    return LT_OK;
}

/* Slot for attribute `name` on n (existing one cleared, or a new one appended). */
static lt_status attr_slot(lt_ctx *ctx, lt_node *n, const char *name, lt_attr **out) {
    for (int a = 0; a < n->n_attr; a++)
        if (strcmp(n->attrs[a].name, name) == 0) {
            const char *nm = n->attrs[a].name;
            memset(&n->attrs[a], 0, sizeof n->attrs[a]);
            n->attrs[a].name = nm;
            *out = &n->attrs[a];
            return LT_OK;
        }
    lt_attr *arr = arena_alloc(ctx, n->graph, (size_t)(n->n_attr + 1) * sizeof *arr, "attributes");
    if (!arr) return LT_ERR_NOMEM;
    if (n->n_attr) memcpy(arr, n->attrs, (size_t)n->n_attr * sizeof *arr);
    if (!(arr[n->n_attr].name = lt_arena_strdup(&n->graph->model->arena, name)))
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (names)");
    n->attrs = arr;
    *out = &arr[n->n_attr++];
    return LT_OK;
}

lt_status lt_node_set_attr_int(lt_ctx *ctx, lt_node *n, const char *name, int64_t v) {
    lt_attr *a;
    LT_TRY(attr_slot(ctx, n, name, &a));
    a->type = LT_AT_INT;
    a->i = v;
    return LT_OK;
}

lt_status lt_node_set_attr_float(lt_ctx *ctx, lt_node *n, const char *name, float v) {
    lt_attr *a;
    LT_TRY(attr_slot(ctx, n, name, &a));
    a->type = LT_AT_FLOAT;
    a->f = v;
    return LT_OK;
}

lt_status lt_node_set_attr_ints(lt_ctx *ctx, lt_node *n, const char *name, int count, const int64_t *v) {
    int64_t *p = arena_alloc(ctx, n->graph, (size_t)count * sizeof *p, "attributes");
    if (!p) return LT_ERR_NOMEM;
    if (count) memcpy(p, v, (size_t)count * sizeof *p);
    lt_attr *a;
    LT_TRY(attr_slot(ctx, n, name, &a));
    a->type = LT_AT_INTS;
    a->n = count;
    a->ints = p;
    return LT_OK;
}

lt_status lt_node_set_attr_floats(lt_ctx *ctx, lt_node *n, const char *name, int count, const float *v) {
    float *p = arena_alloc(ctx, n->graph, (size_t)count * sizeof *p, "attributes");
    if (!p) return LT_ERR_NOMEM;
    if (count) memcpy(p, v, (size_t)count * sizeof *p);
    lt_attr *a;
    LT_TRY(attr_slot(ctx, n, name, &a));
    a->type = LT_AT_FLOATS;
    a->n = count;
    a->floats = p;
    return LT_OK;
}

lt_status lt_node_set_attr_string(lt_ctx *ctx, lt_node *n, const char *name, const char *s) {
    char *p = lt_arena_strdup(&n->graph->model->arena, s);
    if (!p) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (attributes)");
    lt_attr *a;
    LT_TRY(attr_slot(ctx, n, name, &a));
    a->type = LT_AT_STRING;
    a->s = p;
    a->s_len = (int64_t)strlen(p);
    return LT_OK;
}

lt_status lt_node_set_attr_tensor(lt_ctx *ctx, lt_node *n, const char *name, lt_tensor *t) {
    LT_TRY(own_tensor(ctx, n->graph->model, t));
    lt_attr *a;
    LT_TRY(attr_slot(ctx, n, name, &a));
    a->type = LT_AT_TENSOR;
    a->t = t;
    return LT_OK;
}

void lt_node_del_attr(lt_node *n, const char *name) {
    for (int a = 0; a < n->n_attr; a++)
        if (strcmp(n->attrs[a].name, name) == 0) {
            memmove(&n->attrs[a], &n->attrs[a + 1], (size_t)(n->n_attr - a - 1) * sizeof *n->attrs);
            n->n_attr--;
            return;
        }
}

lt_status lt_node_copy_attrs(lt_ctx *ctx, lt_node *dst, const lt_node *src) {
    if (lt_node_has_subgraphs(src))
        return lt_error(ctx, LT_ERR_INTERNAL, "lt_node_copy_attrs: node '%s' (%s) holds subgraphs", src->name, src->op_type);
    lt_attr *arr = NULL;
    if (src->n_attr) {
        if (!(arr = arena_alloc(ctx, dst->graph, (size_t)src->n_attr * sizeof *arr, "attributes"))) return LT_ERR_NOMEM;
        memcpy(arr, src->attrs, (size_t)src->n_attr * sizeof *arr);
    }
    dst->attrs = arr;
    dst->n_attr = src->n_attr;
    return LT_OK;
}

lt_status lt_node_set_n_inputs(lt_ctx *ctx, lt_node *n, int n_in) {
    if (n_in < 0) return lt_error(ctx, LT_ERR_INTERNAL, "lt_node_set_n_inputs: negative count");
    if (n_in > n->n_in) {
        lt_value **p = arena_alloc(ctx, n->graph, (size_t)n_in * sizeof *p, "node inputs");
        if (!p) return LT_ERR_NOMEM;
        if (n->n_in) memcpy(p, n->in, (size_t)n->n_in * sizeof *p);
        n->in = p;
    }
    n->n_in = n_in;
    return LT_OK;
}

void lt_node_remove(lt_graph *g, lt_node *n) {
    int at = n->index;
    if (at < 0 || at >= g->n_nodes || g->nodes[at] != n) return;
    memmove(&g->nodes[at], &g->nodes[at + 1], (size_t)(g->n_nodes - at - 1) * sizeof *g->nodes);
    g->n_nodes--;
    for (int i = at; i < g->n_nodes; i++) g->nodes[i]->index = i;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] && n->out[k]->producer == n) n->out[k]->producer = NULL;
    n->index = -1;
}

lt_status lt_node_infer(lt_ctx *ctx, lt_node *n) {
    lt_infer ic = {ctx, &n->graph->model->arena};
    return lt_infer_node(&ic, n); /* the one per-node driver of ops/infer.c */
}

/* ---- whole graph ---- */
/* Producer of v inside g (following outer chains from subgraph references), or NULL. */
static lt_node *producer_in(const lt_graph *g, const lt_value *v) {
    for (; v; v = v->outer)
        if (v->producer && v->producer->graph == g) return v->producer;
    return NULL;
}

/* Push onto deps every node of g that a subgraph of n (any depth) reads through outer references. */
static lt_status sub_deps(lt_ctx *ctx, const lt_graph *g, const lt_graph *sub, lt_vec *deps) {
    for (int i = 0; i < sub->n_values; i++) {
        lt_node *p = sub->values[i]->outer ? producer_in(g, sub->values[i]->outer) : NULL;
        if (p && !lt_vec_push(deps, p)) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (sort)");
    }
    for (int i = 0; i < sub->n_nodes; i++) {
        lt_node *n = sub->nodes[i];
        FOR_SUBGRAPHS(n, s2, { LT_TRY(sub_deps(ctx, g, s2, deps)); })
    }
    return LT_OK;
}

/* First node of g that n's subgraphs read and that is not placed yet (state != 2), or NULL. */
static lt_status pending_sub_dep(lt_ctx *ctx, const lt_graph *g, lt_node *n, const char *state, lt_vec *deps,
                                 lt_node **out) {
    deps->n = 0;
    FOR_SUBGRAPHS(n, sub, { LT_TRY(sub_deps(ctx, g, sub, deps)); })
    *out = NULL;
    for (int k = 0; k < deps->n; k++) {
        lt_node *d = deps->items[k];
        if (d != n && state[d->index] != 2) {
            *out = d;
            break;
        }
    }
    return LT_OK;
}

lt_status lt_graph_sort(lt_ctx *ctx, lt_graph *g) {
    int n = g->n_nodes;
    if (n == 0) return LT_OK;
    for (int i = 0; i < n; i++) g->nodes[i]->index = i;
    /* state: 0 unvisited, 1 on the stack, 2 placed */
    char *state = lt_calloc(ctx, (size_t)n, 1, "sort state");
    lt_node **order = lt_calloc(ctx, (size_t)n, sizeof *order, "sort order");
    lt_node **stack = lt_calloc(ctx, (size_t)n, sizeof *stack, "sort stack");
    int *next = lt_calloc(ctx, (size_t)n, sizeof *next, "sort cursor");
    lt_vec deps = {0};
    lt_status s = LT_OK;
    if (!state || !order || !stack || !next) { s = LT_ERR_NOMEM; goto done; }
    int placed = 0;
    /* Iterative DFS in the current order: a node is placed after its producers (inputs, then the
     * values its subgraphs read), so an already sorted graph keeps its order. */
    for (int root = 0; root < n && !s; root++) {
        if (state[root]) continue;
        int sp = 0;
        stack[sp++] = g->nodes[root];
        state[root] = 1;
        while (sp && !s) {
            lt_node *cur = stack[sp - 1];
            int ci = cur->index;
            lt_node *dep = NULL;
            while (next[ci] < cur->n_in && !dep) {
                lt_value *v = cur->in[next[ci]++];
                lt_node *p = v ? producer_in(g, v) : NULL;
                if (p && p->index >= 0 && p->index < n && g->nodes[p->index] == p && state[p->index] != 2) dep = p;
            }
            if (!dep && lt_node_has_subgraphs(cur) && (s = pending_sub_dep(ctx, g, cur, state, &deps, &dep))) break;
            if (dep && !(dep->index >= 0 && dep->index < n && g->nodes[dep->index] == dep)) dep = NULL;
            if (dep) {
                if (state[dep->index] == 1) {
                    char label[256];
                    s = lt_error(ctx, LT_ERR_INVALID, "graph '%s' has a cycle through %s", g->name ? g->name : "",
                                 lt_node_label(dep, label, sizeof label));
                    break;
                }
                state[dep->index] = 1;
                stack[sp++] = dep;
                continue;
            }
            state[ci] = 2;
            order[placed++] = cur;
            sp--;
        }
    }
    if (!s) {
        for (int i = 0; i < n; i++) {
            g->nodes[i] = order[i];
            order[i]->index = i;
        }
    }
done:
    lt_vec_free(&deps);
    lt_mem_free(state);
    lt_mem_free(order);
    lt_mem_free(stack);
    lt_mem_free(next);
    return s;
}

static lt_status compact_one(lt_ctx *ctx, lt_graph *g, void *user) {
    (void)user;
    lt_uses u;
    LT_TRY(lt_uses_build(ctx, g, &u));
    int w = 0;
    for (int i = 0; i < g->n_values; i++) {
        lt_value *v = g->values[i];
        bool defined = v->producer || v->init || v->is_input || v->outer;
        bool used = u.count[i] > 0 || v->is_output;
        bool produced = v->producer && v->producer->graph == g && v->producer->index >= 0 &&
                        v->producer->index < g->n_nodes && g->nodes[v->producer->index] == v->producer;
        bool keep = v->init || v->is_input || v->is_output || produced || (defined && used);
        if (v->outer && !used) keep = false; /* an outer reference nothing reads */
        if (!keep) continue;
        v->id = w;
        g->values[w++] = v;
    }
    g->n_values = w;
    lt_uses_free(&u);
    return LT_OK;
}

lt_status lt_graph_compact(lt_ctx *ctx, lt_graph *g) { return lt_graph_foreach(ctx, g, true, compact_one, NULL); }

void lt_graph_release_init(lt_graph *g, lt_value *v) {
    lt_tensor *t = v->init;
    if (!t) return;
    v->init = NULL;
    lt_vec *owned = &g->model->owned_tensors;
    for (int i = owned->n - 1; i >= 0; i--)
        if (owned->items[i] == t) {
            owned->items[i] = owned->items[--owned->n];
            lt_tensor_release(t);
            return;
        }
}

lt_status lt_model_import_lathe(lt_ctx *ctx, lt_model *m) {
    if (lt_model_opset(m, "lathe")) return LT_OK;
    lt_opset *o = lt_arena_alloc(&m->arena, sizeof *o * (size_t)(m->n_opsets + 1));
    if (!o) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (opset imports)");
    if (m->n_opsets) memcpy(o, m->opsets, sizeof *o * (size_t)m->n_opsets);
    o[m->n_opsets] = (lt_opset){.domain = "lathe", .version = 1};
    m->opsets = o;
    m->n_opsets++;
    return LT_OK;
}
