/* cse.c — common-subexpression elimination.
 *
 * Two nodes of one graph with the same op, domain, opset, inputs (the same values, in order),
 * output count and attributes (deep: tensors by content) compute the same thing: the later one's
 * outputs are replaced by the earlier one's and it goes. Small constants (initializers up to
 * CSE_CONST_BYTES, and not graph inputs) with equal dtype, shape and bytes are merged first, so
 * nodes fed by separate-but-equal constants (exporters emit one `axes` tensor per Unsqueeze) merge.
 * Never merged: nodes holding subgraphs, random ops, unknown ops, nodes without outputs. A node whose
 * output is a main-graph output that cannot take over the earlier name stays (names are kept).
 * Level -O2.
 */
#include "util.h"

#include "../base/hash.h"

#include <string.h>

#define CSE_CONST_BYTES 4096

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_tensor(const lt_tensor *t) {
    uint64_t h = mix((uint64_t)t->dtype, (uint64_t)t->rank);
    for (int i = 0; i < t->rank; i++) h = mix(h, (uint64_t)t->dims[i]);
    if (t->dtype == LT_STRING) {
        for (int64_t i = 0; i < t->numel; i++) {
            const char *s = ((char *const *)t->data)[i];
            h = mix(h, lt_fnv1a(s, strlen(s)));
        }
        return h;
    }
    return mix(h, lt_fnv1a(t->data, (size_t)lt_tensor_nbytes(t)));
}

static uint64_t hash_node(const lt_node *n) {
    uint64_t h = mix((uint64_t)n->op, lt_fnv1a(n->op_type, strlen(n->op_type)));
    h = mix(h, (uint64_t)n->n_in * 131 + (uint64_t)n->n_out);
    for (int i = 0; i < n->n_in; i++) h = mix(h, (uint64_t)(uintptr_t)n->in[i]);
    /* attributes in any order: combine commutatively */
    uint64_t ah = 0;
    for (int a = 0; a < n->n_attr; a++) {
        const lt_attr *at = &n->attrs[a];
        uint64_t x = mix(lt_fnv1a(at->name, strlen(at->name)), (uint64_t)at->type);
        if (at->type == LT_AT_INT) x = mix(x, (uint64_t)at->i);
        if (at->type == LT_AT_INTS && at->n) x = mix(x, lt_fnv1a(at->ints, (size_t)at->n * sizeof *at->ints));
        ah += x;
    }
    return mix(h, ah);
}

static bool same_node(const lt_node *a, const lt_node *b) {
    if (a->op != b->op || strcmp(a->op_type, b->op_type) != 0 || strcmp(a->domain, b->domain) != 0 ||
        a->opset != b->opset || a->n_in != b->n_in || a->n_out != b->n_out)
        return false;
    for (int i = 0; i < a->n_in; i++)
        if (a->in[i] != b->in[i]) return false;
    /* b's requested outputs must all be produced by a */
    for (int k = 0; k < a->n_out; k++)
        if (b->out[k] && !a->out[k]) return false;
    return lt_pu_attrs_equal(a, b);
}

static bool cse_able(const lt_node *n) {
    if (n->op == LT_OP_UNKNOWN || n->n_out == 0 || lt_node_has_subgraphs(n) || lt_pu_is_random(n)) return false;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] && n->out[k]->is_input) return false;
    return true;
}

/* Open-addressing table of entries (hash, item). */
typedef struct table {
    uint64_t *hash;
    void **item;
    size_t cap;
} table;

static lt_status table_init(lt_ctx *ctx, table *t, int n) {
    size_t cap = 16;
    while (cap < (size_t)n * 2 + 1) cap *= 2;
    t->cap = cap;
    t->hash = lt_calloc(ctx, cap, sizeof *t->hash, "CSE table");
    t->item = lt_calloc(ctx, cap, sizeof *t->item, "CSE table");
    return t->hash && t->item ? LT_OK : LT_ERR_NOMEM;
}

static void table_free(table *t) {
    lt_mem_free(t->hash);
    lt_mem_free(t->item);
}

/* Find an item with hash h for which eq(item, key) holds; else insert key. Returns the match or NULL. */
static void *table_find_or_add(table *t, uint64_t h, void *key, bool (*eq)(const void *, const void *)) {
    size_t i = (size_t)h & (t->cap - 1);
    while (t->item[i]) {
        if (t->hash[i] == h && eq(t->item[i], key)) return t->item[i];
        i = (i + 1) & (t->cap - 1);
    }
    t->hash[i] = h;
    t->item[i] = key;
    return NULL;
}

static bool eq_node(const void *a, const void *b) { return same_node(a, b); }
static bool eq_const(const void *a, const void *b) {
    return lt_pu_tensor_equal(((const lt_value *)a)->init, ((const lt_value *)b)->init);
}

/* Uses of v other than graph-output slots, in g. */
static int non_output_uses(const lt_graph *g, const lt_value *v) {
    int c = lt_value_count_uses(g, v);
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) c--;
    return c;
}

/* Replace v by keep everywhere in g; *changed when something was rewired. */
static lt_status merge_value(lt_ctx *ctx, lt_graph *g, lt_value *v, lt_value *keep, bool *changed) {
    bool was_output = v->is_output;
    if (non_output_uses(g, v) > 0) *changed = true;
    LT_TRY(lt_value_replace_uses(ctx, g, v, keep));
    if (was_output && !v->is_output) *changed = true;
    return LT_OK;
}

static lt_status merge_consts(lt_ctx *ctx, lt_graph *g, bool *changed) {
    table t;
    lt_status s = table_init(ctx, &t, g->n_values);
    for (int i = 0; i < g->n_values && !s; i++) {
        lt_value *v = g->values[i];
        if (!v->init || v->is_input || lt_tensor_nbytes(v->init) > CSE_CONST_BYTES) continue;
        lt_value *keep = table_find_or_add(&t, hash_tensor(v->init), v, eq_const);
        if (keep) s = merge_value(ctx, g, v, keep, changed);
    }
    table_free(&t);
    return s;
}

static lt_status cse_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    bool *changed = user;
    LT_TRY(merge_consts(ctx, g, changed));
    table t;
    lt_status s = table_init(ctx, &t, g->n_nodes);
    for (int i = 0; i < g->n_nodes && !s;) {
        lt_node *n = g->nodes[i];
        lt_node *keep = cse_able(n) ? table_find_or_add(&t, hash_node(n), n, eq_node) : NULL;
        if (!keep) { i++; continue; }
        bool still_needed = false;
        for (int k = 0; k < n->n_out && !s; k++) {
            if (!n->out[k]) continue;
            s = merge_value(ctx, g, n->out[k], keep->out[k], changed);
            if (n->out[k]->is_output) still_needed = true;
        }
        if (s || still_needed) { i++; continue; }
        lt_node_remove(g, n);
        *changed = true;
    }
    table_free(&t);
    return s;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_graph_foreach(ctx, m->graph, true, cse_graph, changed);
}

const lt_pass lt_pass_cse = {.name = "cse", .min_level = 2, .run = run,
    .summary = "merge identical nodes (same op, inputs, attributes) and equal small constants"};
