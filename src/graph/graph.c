/* graph.c — graph IR queries (attributes, labels, types), the verifier, the printer, and freeing a
 * model. Construction lives in the ONNX importer (src/onnx/import.c). */
#include "graph.h"

#include <stdio.h>
#include <string.h>

lt_value *lt_graph_find_value(const lt_graph *g, const char *name) {
    for (int i = 0; i < g->n_values; i++)
        if (strcmp(g->values[i]->name, name) == 0) return g->values[i];
    return NULL;
}

const lt_attr *lt_node_attr(const lt_node *n, const char *name) {
    for (int i = 0; i < n->n_attr; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}
int64_t lt_attr_int(const lt_node *n, const char *name, int64_t dflt) {
    const lt_attr *a = lt_node_attr(n, name);
    return a && a->type == LT_AT_INT ? a->i : dflt;
}
float lt_attr_float(const lt_node *n, const char *name, float dflt) {
    const lt_attr *a = lt_node_attr(n, name);
    if (a && a->type == LT_AT_FLOAT) return a->f;
    if (a && a->type == LT_AT_INT) return (float)a->i;
    return dflt;
}
const char *lt_attr_string(const lt_node *n, const char *name, const char *dflt) {
    const lt_attr *a = lt_node_attr(n, name);
    return a && a->type == LT_AT_STRING ? a->s : dflt;
}
int lt_attr_ints(const lt_node *n, const char *name, const int64_t **out) {
    const lt_attr *a = lt_node_attr(n, name);
    if (!a || a->type != LT_AT_INTS) { *out = NULL; return 0; }
    *out = a->ints;
    return a->n;
}
int lt_attr_floats(const lt_node *n, const char *name, const float **out) {
    const lt_attr *a = lt_node_attr(n, name);
    if (!a || a->type != LT_AT_FLOATS) { *out = NULL; return 0; }
    *out = a->floats;
    return a->n;
}
int lt_attr_strings(const lt_node *n, const char *name, const char *const **out) {
    const lt_attr *a = lt_node_attr(n, name);
    if (!a || a->type != LT_AT_STRINGS) { *out = NULL; return 0; }
    *out = a->strings;
    return a->n;
}
const lt_tensor *lt_attr_tensor(const lt_node *n, const char *name) {
    const lt_attr *a = lt_node_attr(n, name);
    return a && (a->type == LT_AT_TENSOR || a->type == LT_AT_SPARSE_TENSOR) ? a->t : NULL;
}
const lt_graph *lt_attr_graph(const lt_node *n, const char *name) {
    const lt_attr *a = lt_node_attr(n, name);
    return a && a->type == LT_AT_GRAPH ? a->g : NULL;
}
int64_t lt_model_opset(const lt_model *m, const char *domain) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int i = 0; i < m->n_opsets; i++) {
        const char *d = m->opsets[i].domain;
        if (strcmp(d, "ai.onnx") == 0) d = "";
        if (strcmp(d, domain) == 0) return m->opsets[i].version;
    }
    return 0;
}

const char *lt_node_label(const lt_node *n, char *buf, size_t size) {
    snprintf(buf, size, "node %d '%s' (%s%s%s)", n->index, n->name ? n->name : "", n->domain && *n->domain ? n->domain : "",
             n->domain && *n->domain ? "." : "", n->op_type);
    return buf;
}

void lt_type_set_tensor(lt_type *t, lt_dtype dt, int rank, lt_dim *dims) {
    t->kind = LT_TK_TENSOR;
    t->dtype = dt;
    t->rank = rank;
    t->dims = rank > 0 ? dims : NULL;
    t->elem = NULL;
}

static size_t type_str(const lt_type *t, char *buf, size_t n) {
    size_t o = 0;
#define PUT(...) do { if (o < n) o += (size_t)snprintf(buf + o, n - o, __VA_ARGS__); } while (0)
    switch (t->kind) {
    case LT_TK_UNKNOWN: PUT("?"); break;
    case LT_TK_TENSOR:
    case LT_TK_SPARSE_TENSOR:
        PUT("%s%s", t->kind == LT_TK_SPARSE_TENSOR ? "sparse " : "", lt_dtype_name(t->dtype));
        if (t->rank < 0) { PUT("[...]"); break; }
        PUT("[");
        for (int i = 0; i < t->rank; i++) {
            lt_dim d = t->dims ? t->dims[i] : (lt_dim){-1, NULL};
            if (i) PUT(",");
            if (d.value >= 0) PUT("%lld", (long long)d.value);
            else if (d.param) PUT("%s", d.param);
            else PUT("?");
        }
        PUT("]");
        break;
    case LT_TK_SEQUENCE:
    case LT_TK_OPTIONAL:
        PUT("%s(", t->kind == LT_TK_SEQUENCE ? "seq" : "optional");
        if (t->elem && o < n) o += type_str(t->elem, buf + o, n - o);
        PUT(")");
        break;
    case LT_TK_MAP:
        PUT("map(%s,", lt_dtype_name(t->dtype));
        if (t->elem && o < n) o += type_str(t->elem, buf + o, n - o);
        PUT(")");
        break;
    }
#undef PUT
    return o;
}

const char *lt_type_str(const lt_type *t, char *buf, size_t n) {
    if (n) buf[0] = 0;
    type_str(t, buf, n);
    return buf;
}

void lt_model_free(lt_model *m) {
    if (!m) return;
    for (int i = 0; i < m->owned_tensors.n; i++) lt_tensor_release(m->owned_tensors.items[i]);
    lt_vec_free(&m->owned_tensors);
    if (m->on_free) m->on_free(m);
    lt_arena model_arena = m->arena; /* the model struct itself may live in its arena */
    lt_arena_free(&model_arena);
}

/* ---- verifier ---- */
static bool defined_before(const lt_graph *g, const lt_value *v, int node_index) {
    if (v->outer || v->init || v->is_input) return true;
    if (!v->producer) return false;
    return v->producer->graph == g && v->producer->index < node_index;
}

lt_status lt_graph_verify(lt_ctx *ctx, const lt_graph *g) {
    char label[256];
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        if (n->index != i || n->graph != g)
            return lt_error(ctx, LT_ERR_INTERNAL, "graph '%s': node %d has inconsistent index/graph", g->name, i);
        for (int k = 0; k < n->n_in; k++) {
            const lt_value *v = n->in[k];
            if (v && !defined_before(g, v, i))
                return lt_error(ctx, LT_ERR_INVALID, "%s: input '%s' is not defined before use (graph '%s')",
                                lt_node_label(n, label, sizeof label), v->name, g->name);
        }
        for (int k = 0; k < n->n_out; k++) {
            const lt_value *v = n->out[k];
            if (v && (v->producer != n || v->producer_out != k))
                return lt_error(ctx, LT_ERR_INVALID, "%s: output '%s' is defined more than once",
                                lt_node_label(n, label, sizeof label), v->name);
        }
        for (int a = 0; a < n->n_attr; a++) {
            if (n->attrs[a].type == LT_AT_GRAPH) LT_TRY(lt_graph_verify(ctx, n->attrs[a].g));
            if (n->attrs[a].type == LT_AT_GRAPHS)
                for (int k = 0; k < n->attrs[a].n; k++) LT_TRY(lt_graph_verify(ctx, n->attrs[a].graphs[k]));
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const lt_value *v = g->outputs[i];
        if (!v->producer && !v->init && !v->is_input && !v->outer)
            return lt_error(ctx, LT_ERR_INVALID, "graph '%s': output '%s' is never produced", g->name, v->name);
    }
    return LT_OK;
}

/* ---- printer ---- */
static void print_graph(const lt_graph *g, lt_strbuf *out, int indent) {
    char tb[512];
    lt_sb_printf(out, "%*sgraph %s (", indent, "", g->name ? g->name : "");
    for (int i = 0; i < g->n_inputs; i++)
        lt_sb_printf(out, "%s%%%s: %s", i ? ", " : "", g->inputs[i]->name, lt_type_str(&g->inputs[i]->type, tb, sizeof tb));
    lt_sb_printf(out, ") {\n");
    for (int i = 0; i < g->n_nodes; i++) {
        const lt_node *n = g->nodes[i];
        lt_sb_printf(out, "%*s  ", indent, "");
        for (int k = 0; k < n->n_out; k++)
            lt_sb_printf(out, "%s%%%s", k ? ", " : "", n->out[k] ? n->out[k]->name : "_");
        lt_sb_printf(out, " = %s%s%s(", *n->domain ? n->domain : "", *n->domain ? "." : "", n->op_type);
        for (int k = 0; k < n->n_in; k++) lt_sb_printf(out, "%s%%%s", k ? ", " : "", n->in[k] ? n->in[k]->name : "_");
        lt_sb_printf(out, ")");
        for (int a = 0; a < n->n_attr; a++) {
            const lt_attr *at = &n->attrs[a];
            lt_sb_printf(out, "%s%s=", a ? ", " : " {", at->name);
            switch (at->type) {
            case LT_AT_FLOAT: lt_sb_printf(out, "%g", (double)at->f); break;
            case LT_AT_INT: lt_sb_printf(out, "%lld", (long long)at->i); break;
            case LT_AT_STRING: lt_sb_printf(out, "\"%s\"", at->s); break;
            case LT_AT_INTS:
                lt_sb_printf(out, "[");
                for (int k = 0; k < at->n; k++) lt_sb_printf(out, "%s%lld", k ? "," : "", (long long)at->ints[k]);
                lt_sb_printf(out, "]");
                break;
            case LT_AT_FLOATS:
                lt_sb_printf(out, "[");
                for (int k = 0; k < at->n; k++) lt_sb_printf(out, "%s%g", k ? "," : "", (double)at->floats[k]);
                lt_sb_printf(out, "]");
                break;
            case LT_AT_TENSOR: lt_sb_printf(out, "%s", at->t ? lt_tensor_describe(at->t, tb, sizeof tb) : "tensor"); break;
            case LT_AT_GRAPH: lt_sb_printf(out, "<graph>"); break;
            default: lt_sb_printf(out, "<%d>", (int)at->type); break;
            }
            if (a == n->n_attr - 1) lt_sb_printf(out, "}");
        }
        lt_sb_printf(out, " : ");
        for (int k = 0; k < n->n_out; k++)
            lt_sb_printf(out, "%s%s", k ? ", " : "", n->out[k] ? lt_type_str(&n->out[k]->type, tb, sizeof tb) : "_");
        lt_sb_printf(out, "\n");
        for (int a = 0; a < n->n_attr; a++) {
            if (n->attrs[a].type == LT_AT_GRAPH) print_graph(n->attrs[a].g, out, indent + 4);
            if (n->attrs[a].type == LT_AT_GRAPHS)
                for (int k = 0; k < n->attrs[a].n; k++) print_graph(n->attrs[a].graphs[k], out, indent + 4);
        }
    }
    lt_sb_printf(out, "%*s  return ", indent, "");
    for (int i = 0; i < g->n_outputs; i++) lt_sb_printf(out, "%s%%%s", i ? ", " : "", g->outputs[i]->name);
    lt_sb_printf(out, "\n%*s}\n", indent, "");
}

void lt_graph_print(const lt_graph *g, lt_strbuf *out) { print_graph(g, out, 0); }
