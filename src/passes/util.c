/* util.c — helpers shared by the graph passes (see util.h). */
#include "util.h"

#include <string.h>

bool lt_pu_is_random(const lt_node *n) {
    switch (n->op) {
    case LT_OP_RandomNormal: case LT_OP_RandomNormalLike: case LT_OP_RandomUniform: case LT_OP_RandomUniformLike:
    case LT_OP_Bernoulli: case LT_OP_Multinomial:
        return true;
    case LT_OP_Dropout: {
        if (n->opset < 7) return lt_attr_int(n, "is_test", 0) == 0 && lt_attr_float(n, "ratio", 0.5f) != 0;
        if (n->opset < 12) return false;
        if (n->n_in < 3 || !n->in[2]) return false;
        double r;
        if (n->n_in >= 2 && n->in[1] && lt_pu_const_scalar(n->in[1], &r) && r == 0) return false;
        const lt_tensor *tm = lt_value_const(n->in[2]);
        if (!tm || tm->numel != 1 || tm->dtype != LT_BOOL) return true;
        return ((const uint8_t *)tm->data)[0] != 0;
    }
    default:
        return n->op == LT_OP_UNKNOWN;
    }
}

bool lt_pu_const_ints(const lt_value *v, int64_t *buf, int max, int *count) {
    const lt_tensor *t = v ? lt_value_const(v) : NULL;
    if (!t || !lt_dtype_is_int(t->dtype) || t->rank > 1 || t->numel > max) return false;
    for (int64_t i = 0; i < t->numel; i++) buf[i] = lt_load_i64(t->data, t->dtype, i);
    *count = (int)t->numel;
    return true;
}

bool lt_pu_tensor_all_equal(const lt_tensor *t, double x) {
    lt_dclass c = lt_dtype_get(t->dtype)->cls;
    if (t->numel == 0 || (c != LT_DC_FLOAT && c != LT_DC_SINT && c != LT_DC_UINT && c != LT_DC_BOOL)) return false;
    for (int64_t i = 0; i < t->numel; i++)
        if (lt_load_f64(t->data, t->dtype, i) != x) return false;
    return true;
}

bool lt_pu_const_scalar(const lt_value *v, double *out) {
    const lt_tensor *t = v ? lt_value_const(v) : NULL;
    if (!t || t->numel != 1) return false;
    lt_dclass c = lt_dtype_get(t->dtype)->cls;
    if (c != LT_DC_FLOAT && c != LT_DC_SINT && c != LT_DC_UINT && c != LT_DC_BOOL) return false;
    *out = lt_load_f64(t->data, t->dtype, 0);
    return true;
}

bool lt_pu_same_static_shape(const lt_value *a, const lt_value *b) {
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!lt_value_static_shape(a, &ra, da) || !lt_value_static_shape(b, &rb, db) || ra != rb) return false;
    for (int i = 0; i < ra; i++)
        if (da[i] != db[i]) return false;
    return true;
}

bool lt_pu_dims(const lt_value *v, int *rank, int64_t *dims) {
    const lt_tensor *c = lt_value_const(v);
    if (c) {
        *rank = c->rank;
        for (int i = 0; i < c->rank; i++) dims[i] = c->dims[i];
        return true;
    }
    const lt_type *t = &v->type;
    if (t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK || (t->rank > 0 && !t->dims)) return false;
    *rank = t->rank;
    for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i].value >= 0 ? t->dims[i].value : -1;
    return true;
}

bool lt_pu_same_shape(const lt_value *a, const lt_value *b) {
    if (lt_pu_same_static_shape(a, b)) return true;
    const lt_type *x = &a->type, *y = &b->type;
    if (lt_value_const(a) || lt_value_const(b)) return false; /* a constant's shape is static */
    if (x->kind != LT_TK_TENSOR || y->kind != LT_TK_TENSOR || x->rank < 0 || x->rank != y->rank) return false;
    if (x->rank > 0 && (!x->dims || !y->dims)) return false;
    for (int i = 0; i < x->rank; i++) {
        lt_dim p = x->dims[i], q = y->dims[i];
        if (p.value >= 0 || q.value >= 0) {
            if (p.value != q.value) return false;
        } else if (!p.param || !q.param || strcmp(p.param, q.param) != 0) {
            return false;
        }
    }
    return true;
}

bool lt_pu_type_equal(const lt_type *a, const lt_type *b) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank && a->kind == LT_TK_TENSOR; i++) {
        lt_dim x = a->dims ? a->dims[i] : (lt_dim){-1, NULL}, y = b->dims ? b->dims[i] : (lt_dim){-1, NULL};
        if (x.value != y.value) return false;
        if (x.value < 0 && (!x.param || !y.param || strcmp(x.param, y.param) != 0)) return false;
    }
    if (!a->elem != !b->elem) return false;
    return !a->elem || lt_pu_type_equal(a->elem, b->elem);
}

bool lt_pu_tensor_equal(const lt_tensor *a, const lt_tensor *b) {
    if (a == b) return true;
    if (!a || !b || a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    if (a->dtype == LT_STRING) {
        for (int64_t i = 0; i < a->numel; i++)
            if (strcmp(((char *const *)a->data)[i], ((char *const *)b->data)[i]) != 0) return false;
        return true;
    }
    return memcmp(a->data, b->data, (size_t)lt_tensor_nbytes(a)) == 0;
}

static bool attr_equal(const lt_attr *a, const lt_attr *b) {
    if (a->type != b->type) return false;
    switch (a->type) {
    case LT_AT_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case LT_AT_INT: return a->i == b->i;
    case LT_AT_STRING: return a->s_len == b->s_len && memcmp(a->s ? a->s : "", b->s ? b->s : "", (size_t)a->s_len) == 0;
    case LT_AT_TENSOR: case LT_AT_SPARSE_TENSOR: return lt_pu_tensor_equal(a->t, b->t);
    case LT_AT_FLOATS: return a->n == b->n && (a->n == 0 || memcmp(a->floats, b->floats, (size_t)a->n * sizeof *a->floats) == 0);
    case LT_AT_INTS: return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints) == 0);
    case LT_AT_STRINGS:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++) {
            int64_t la = a->string_lens ? a->string_lens[i] : (int64_t)strlen(a->strings[i]);
            int64_t lb = b->string_lens ? b->string_lens[i] : (int64_t)strlen(b->strings[i]);
            if (la != lb || memcmp(a->strings[i], b->strings[i], (size_t)la) != 0) return false;
        }
        return true;
    case LT_AT_TENSORS:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!lt_pu_tensor_equal(a->tensors[i], b->tensors[i])) return false;
        return true;
    case LT_AT_TYPE_PROTO: return a->tp && b->tp && lt_pu_type_equal(a->tp, b->tp);
    default: return false; /* graphs and anything unknown never compare equal */
    }
}

bool lt_pu_attrs_equal(const lt_node *a, const lt_node *b) {
    if (a->n_attr != b->n_attr) return false;
    for (int i = 0; i < a->n_attr; i++) {
        const lt_attr *y = lt_node_attr(b, a->attrs[i].name);
        if (!y || !attr_equal(&a->attrs[i], y)) return false;
    }
    return true;
}

lt_dtype lt_pu_dtype(const lt_value *v) {
    const lt_tensor *c = lt_value_const(v);
    if (c) return c->dtype;
    return v->type.kind == LT_TK_TENSOR ? v->type.dtype : LT_UNDEFINED;
}

lt_status lt_pu_tensor_i64(lt_ctx *ctx, int n, const int64_t *vals, lt_tensor **out) {
    int64_t d = n;
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, LT_INT64, 1, &d, &t));
    if (n) memcpy(t->data, vals, (size_t)n * sizeof *vals);
    *out = t;
    return LT_OK;
}

bool lt_pu_eval_node(const lt_model *m, const lt_node *n, lt_tensor **out) {
    const lt_op_hooks *h = lt_op_hooks_get(n->op);
    if (!h->eval || lt_node_has_subgraphs(n) || n->n_in > 64 || n->n_out > 64) return false;
    lt_ctx tmp = {0};
    lt_eval ev = {.ctx = &tmp, .model = m}; /* no run_subgraph: nodes with subgraphs are not evaluated here */
    lt_datum *in[64] = {0}, *res[64] = {0};
    bool ok = true;
    for (int i = 0; i < n->n_in && ok; i++) {
        if (!n->in[i]) continue;
        const lt_tensor *c = lt_value_const(n->in[i]);
        if (!c) { ok = false; break; }
        lt_tensor *t = lt_tensor_retain((lt_tensor *)c);
        if (lt_datum_tensor(&tmp, t, &in[i]) != LT_OK) ok = false;
    }
    if (ok && (h->eval(&ev, n, in, res) != LT_OK || tmp.status != LT_OK)) ok = false;
    for (int k = 0; k < n->n_out && ok; k++)
        if (n->out[k] && (!res[k] || res[k]->kind != LT_DK_TENSOR || !res[k]->tensor)) ok = false;
    for (int k = 0; k < n->n_out; k++) {
        out[k] = NULL;
        if (ok && n->out[k]) out[k] = lt_tensor_retain(res[k]->tensor);
        lt_datum_release(res[k]);
    }
    for (int i = 0; i < n->n_in; i++) lt_datum_release(in[i]);
    return ok;
}

bool lt_pu_remove_if_dead(lt_graph *g, lt_node *n) {
    if (n->index < 0) return false;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] && (n->out[k]->is_output || lt_value_count_uses(g, n->out[k]) > 0)) return false;
    lt_node_remove(g, n);
    return true;
}

lt_status lt_pu_forward(lt_ctx *ctx, lt_graph *g, lt_node *n, int k, lt_value *nv, bool *changed) {
    lt_value *old = n->out[k];
    if (!old || old == nv) return LT_OK;
    int uses = lt_value_count_uses(g, old);
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == old) uses--;
    bool was_output = old->is_output;
    LT_TRY(lt_value_replace_uses(ctx, g, old, nv));
    if (uses > 0 || (was_output && !old->is_output)) *changed = true;
    if (lt_pu_remove_if_dead(g, n)) *changed = true;
    return LT_OK;
}

bool lt_pu_broadcast(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims) {
    int r = ra > rb ? ra : rb;
    if (r > LT_MAX_RANK) return false;
    for (int i = 0; i < r; i++) {
        int64_t x = i - (r - ra) >= 0 ? da[i - (r - ra)] : 1;
        int64_t y = i - (r - rb) >= 0 ? db[i - (r - rb)] : 1;
        if (x != y && x != 1 && y != 1) return false;
        dims[i] = x == 1 ? y : x;
    }
    *rank = r;
    return true;
}

lt_node *lt_pu_producer(const lt_graph *g, const lt_value *v, int op) {
    if (!v || !v->producer || v->producer->graph != g || v->producer->op != op) return NULL;
    return v->producer;
}

void lt_pu_take_name(lt_graph *g, lt_value *nv, lt_value *old) {
    if (!nv || !old || nv == old || nv->is_input || nv->is_output || old->is_input || old->is_output) return;
    const char *a = nv->name;
    nv->name = old->name;
    old->name = a;
    /* subgraph references mirror the names: rename through the public API (names stay unique) */
    lt_ctx tmp = {0};
    lt_value_rename(&tmp, g, nv, nv->name);
    lt_value_rename(&tmp, g, old, old->name);
}

lt_status lt_pu_new_op(lt_ctx *ctx, lt_graph *g, const char *op, int n_in, lt_value *const *in, const char *int_attr,
                       int64_t int_val, const char *hint, lt_node *before, lt_value **out) {
    lt_node *n;
    LT_TRY(lt_node_new(ctx, g, op, "", n_in, in, 1, hint, before, &n));
    if (int_attr) LT_TRY(lt_node_set_attr_int(ctx, n, int_attr, int_val));
    LT_TRY(lt_node_infer(ctx, n));
    *out = n->out[0];
    return LT_OK;
}

lt_status lt_pu_replace_output(lt_ctx *ctx, lt_graph *g, lt_node *before, lt_value *old, lt_value *v) {
    if (old->is_output && (v->is_input || v->is_output))
        LT_TRY(lt_pu_new_op(ctx, g, "Identity", 1, &v, NULL, 0, old->name, before, &v));
    lt_pu_take_name(g, v, old);
    return lt_value_replace_uses(ctx, g, old, v);
}

typedef struct rewrite_each {
    bool (*match)(const lt_node *n);
    lt_pu_rewrite_fn rewrite;
    bool *changed;
} rewrite_each;

static lt_status rewrite_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    const rewrite_each *r = user;
    for (int i = 0; i < g->n_nodes;) {
        lt_node *n = g->nodes[i];
        if (r->match(n)) {
            int before = g->n_nodes;
            LT_TRY(r->rewrite(ctx, g, n, r->changed));
            if (g->n_nodes != before) {
                i = 0;
                continue;
            }
        }
        i++;
    }
    return LT_OK;
}

lt_status lt_pu_rewrite_each(lt_ctx *ctx, lt_model *m, bool (*match)(const lt_node *n), lt_pu_rewrite_fn rewrite,
                             bool *changed) {
    rewrite_each r = {match, rewrite, changed};
    return lt_graph_foreach(ctx, m->graph, false, rewrite_graph, &r);
}

bool lt_pu_fits(const lt_value *v, lt_dtype dt, int64_t count) {
    int rank;
    int64_t d[LT_MAX_RANK], numel = 1;
    if (!v || lt_pu_dtype(v) != dt || !lt_value_static_shape(v, &rank, d)) return false;
    for (int i = 0; i < rank; i++) numel *= d[i];
    return numel == count;
}

lt_status lt_pu_reshape(lt_ctx *ctx, lt_graph *g, lt_value *v, int rank, const int64_t *dims, const char *hint,
                        lt_node *before, lt_value **out) {
    const lt_tensor *c = lt_value_const(v);
    if (c && c->dtype != LT_STRING) {
        lt_tensor *t;
        LT_TRY(lt_tensor_new(ctx, c->dtype, rank, dims, &t));
        if (t->numel != c->numel) {
            lt_tensor_release(t);
            return lt_error(ctx, LT_ERR_INTERNAL, "%s: reshape of %lld elements into %lld", v->name,
                            (long long)c->numel, (long long)t->numel);
        }
        memcpy(t->data, c->data, (size_t)lt_tensor_nbytes(t));
        return lt_value_new_const(ctx, g, hint, t, out);
    }
    lt_tensor *shape;
    lt_value *in[2] = {v, NULL};
    LT_TRY(lt_pu_tensor_i64(ctx, rank, dims, &shape));
    LT_TRY(lt_value_new_const(ctx, g, hint, shape, &in[1]));
    return lt_pu_new_op(ctx, g, "Reshape", 2, in, NULL, 0, hint, before, out);
}

lt_status lt_pu_group_norm(lt_ctx *ctx, lt_graph *g, lt_node *before, lt_value *x, int64_t groups, lt_value *scale,
                           lt_value *bias, bool per_group, float eps, const char *hint, lt_value **out) {
    int rank;
    int64_t xd[LT_MAX_RANK], blocks[4], pd[3];
    if (!lt_value_static_shape(x, &rank, xd) || rank < 2 || groups < 1 || xd[1] % groups)
        return lt_error(ctx, LT_ERR_INTERNAL, "%s: group norm of a non-static input", x->name);
    int64_t cpg = xd[1] / groups, S = 1;
    for (int d = 2; d < rank; d++) S *= xd[d];
    if (cpg == 1) per_group = true; /* one channel per group: per channel is per group */
    /* x as [N, G, cpg*S] (per group) or [N, G, cpg, S]; parameters [G, 1] or [G, cpg, 1] */
    int br = per_group ? 3 : 4, pr = br - 1;
    blocks[0] = xd[0], blocks[1] = groups, blocks[2] = per_group ? cpg * S : cpg, blocks[3] = S;
    pd[0] = groups, pd[1] = per_group ? 1 : cpg, pd[2] = 1;
    lt_value *xb = x, *in[3];
    bool same = rank == br;
    for (int d = 0; same && d < br; d++) same = xd[d] == blocks[d];
    if (!same) LT_TRY(lt_pu_reshape(ctx, g, x, br, blocks, hint, before, &xb));
    in[0] = xb;
    LT_TRY(lt_pu_reshape(ctx, g, scale, pr, pd, hint, before, &in[1]));
    LT_TRY(lt_pu_reshape(ctx, g, bias, pr, pd, hint, before, &in[2]));
    lt_node *ln;
    LT_TRY(lt_node_new(ctx, g, "LayerNormalization", "", 3, in, 1, hint, before, &ln));
    LT_TRY(lt_node_set_attr_int(ctx, ln, "axis", 2));
    LT_TRY(lt_node_set_attr_float(ctx, ln, "epsilon", eps));
    LT_TRY(lt_node_infer(ctx, ln));
    *out = ln->out[0];
    if (xb != x) LT_TRY(lt_pu_reshape(ctx, g, *out, rank, xd, hint, before, out));
    return LT_OK;
}

typedef struct sub_copy {
    lt_graph *g;
    lt_value **map;    /* b's value id -> value of g, for this copy */
    lt_value **consts; /* b's initializer id -> constant of g, shared across copies (may be NULL) */
    const char *who;
} sub_copy;

static lt_status sub_resolve(lt_ctx *ctx, sub_copy *c, lt_value *v, lt_value **out) {
    *out = NULL;
    if (!v) return LT_OK;
    if (c->map[v->id]) {
        *out = c->map[v->id];
        return LT_OK;
    }
    if (v->outer) {
        *out = v->outer;
    } else if (v->init) {
        if (c->consts && c->consts[v->id]) *out = c->consts[v->id];
        else LT_TRY(lt_value_new_const(ctx, c->g, v->name, lt_tensor_retain(v->init), out));
        if (c->consts) c->consts[v->id] = *out;
    } else {
        return lt_error(ctx, LT_ERR_INTERNAL, "%s: subgraph value '%s' has no definition", c->who, v->name);
    }
    c->map[v->id] = *out;
    return LT_OK;
}

/* One node of b copied before `before`; its outputs recorded in the map. */
static lt_status sub_copy_node(lt_ctx *ctx, sub_copy *c, lt_node *before, const lt_node *bn) {
    lt_value *args[64];
    if (bn->n_in > 64) return lt_error(ctx, LT_ERR_INTERNAL, "%s: node with %d inputs", c->who, bn->n_in);
    for (int k = 0; k < bn->n_in; k++) LT_TRY(sub_resolve(ctx, c, bn->in[k], &args[k]));
    lt_node *nn;
    const char *hint = bn->n_out && bn->out[0] ? bn->out[0]->name : bn->op_type;
    LT_TRY(lt_node_new(ctx, c->g, bn->op_type, bn->domain, bn->n_in, args, bn->n_out, hint, before, &nn));
    LT_TRY(lt_node_copy_attrs(ctx, nn, bn));
    nn->name = bn->name;
    nn->opset = bn->opset;
    for (int k = 0; k < bn->n_out; k++) {
        if (bn->out[k]) {
            c->map[bn->out[k]->id] = nn->out[k];
        } else { /* an optional output the subgraph did not request */
            nn->out[k]->producer = NULL;
            nn->out[k] = NULL;
        }
    }
    return lt_node_infer(ctx, nn);
}

lt_status lt_pu_copy_subgraph(lt_ctx *ctx, lt_graph *g, lt_node *before, const lt_graph *b, lt_value *const *ins,
                              lt_value **consts, const char *who, lt_value **outs) {
    sub_copy c = {g, lt_calloc(ctx, (size_t)b->n_values + 1, sizeof(lt_value *), "subgraph copy map"), consts, who};
    if (!c.map) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    for (int i = 0; i < b->n_inputs && s == LT_OK; i++) {
        if (!ins || !ins[i]) s = lt_error(ctx, LT_ERR_INTERNAL, "%s: subgraph input '%s' is not bound", who, b->inputs[i]->name);
        else c.map[b->inputs[i]->id] = ins[i];
    }
    for (int i = 0; i < b->n_nodes && s == LT_OK; i++) s = sub_copy_node(ctx, &c, before, b->nodes[i]);
    for (int k = 0; k < b->n_outputs && s == LT_OK; k++) s = sub_resolve(ctx, &c, b->outputs[k], &outs[k]);
    lt_mem_free(c.map);
    return s;
}
