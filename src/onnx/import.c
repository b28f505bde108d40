/* import.c — ModelProto -> lt_model: the entry points lt_onnx_load_file / lt_onnx_load_memory, and
 * the import of graphs, nodes, attributes and value infos.
 *
 * Everything lives in the model arena (names included); initializers and attribute tensors are
 * registered in m->owned_tensors; mappings in m->mappings (unmapped by m->on_free). The scratch
 * arena of the load (slice lists, external file table) is freed when the load ends. A failed load
 * frees everything it made and leaves *out untouched.
 * Graph import order: initializers, inputs (an initializer also listed as an input is an input with
 * a default), nodes in file order (each input must already be defined: a graph input, an
 * initializer, an earlier output, or a name of an enclosing graph, for which a local value with
 * ->outer is created), outputs, value_info. A node's subgraphs are imported before its outputs are
 * defined, so they cannot see them. Nodes calling a model-local function are inlined (functions.c).
 * Unknown ops keep node->op = LT_OP_UNKNOWN; lt_model_check_supported reports them later.
 * After import the graph is verified (lt_graph_verify) and shape inference runs (lt_graph_infer).
 */
#include "onnx_int.h"

#include "../ops/infer.h"
#include "../ops/ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

lt_value onnx_absent_value;

/* Error at byte `at` of the source: "FILE: byte N: text". */
lt_status onnx_err(onnx_load *L, const uint8_t *at, lt_status s, const char *fmt, ...) {
    char text[LT_MSG_MAX - 300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    L->src.failed = true;
    if (!L->src.status) L->src.status = s;
    return lt_error(L->ctx, s, "%s: byte %zu: %s", L->file, (size_t)(at - L->src.base), text);
}

lt_status onnx_nomem(onnx_load *L, const char *what) {
    L->src.failed = true;
    if (!L->src.status) L->src.status = LT_ERR_NOMEM;
    return lt_error(L->ctx, LT_ERR_NOMEM, "%s: out of memory (%s)", L->file, what);
}

static void *model_alloc(onnx_load *L, size_t n, const char *what) {
    void *p = lt_arena_alloc(&L->m->arena, n);
    if (!p) onnx_nomem(L, what);
    return p;
}

static void *scratch_alloc(onnx_load *L, size_t n, const char *what) {
    void *p = lt_arena_alloc(&L->scratch, n);
    if (!p) onnx_nomem(L, what);
    return p;
}

bool onnx_slice(lt_wire *w, lt_slice *out, const char *msg) {
    lt_wire sub;
    if (!lt_wire_msg(w, &sub, msg)) return false;
    *out = (lt_slice){sub.start, (size_t)(sub.end - sub.start), sub.depth};
    return true;
}

const char *onnx_str(onnx_load *L, lt_wire *w, const uint8_t *p, size_t n, const char *what) {
    if (n && memchr(p, 0, n)) {
        lt_wire_error(w, w->key_at, LT_ERR_INVALID, "%s contains a NUL byte", what);
        return NULL;
    }
    char *s = lt_arena_strndup(&L->m->arena, (const char *)p, n);
    if (!s) onnx_nomem(L, "names");
    return s;
}

/* A string field read in a first pass (slice of the buffer). */
typedef struct sfield {
    const uint8_t *p;
    size_t n;
    bool set;
} sfield;

static bool read_sfield(lt_wire *w, sfield *f) {
    f->set = lt_wire_bytes(w, &f->p, &f->n);
    return f->set;
}
static const char *sfield_str(onnx_load *L, lt_wire *w, const sfield *f, const char *what) {
    return f->set ? onnx_str(L, w, f->p, f->n, what) : "";
}

/* ---- values and scopes ---- */
static lt_status value_create(onnx_load *L, onnx_gstate *gs, const char *name, lt_value **out) {
    lt_value *v = model_alloc(L, sizeof *v, "values");
    if (!v) return LT_ERR_NOMEM;
    v->name = name;
    v->id = gs->values.n;
    v->type.kind = LT_TK_UNKNOWN;
    v->type.rank = -1;
    if (!lt_vec_push(&gs->values, v) || !lt_strmap_put(&gs->all, name, v)) return onnx_nomem(L, "value table");
    *out = v;
    return LT_OK;
}

lt_status onnx_new_value(onnx_load *L, onnx_scope *sc, const char *name, lt_value **out) {
    LT_TRY(value_create(L, sc->gs, name, out));
    if (sc->names != &sc->gs->all && !lt_strmap_put(sc->names, name, *out)) return onnx_nomem(L, "value table");
    return LT_OK;
}

lt_status onnx_resolve(onnx_load *L, onnx_scope *sc, const char *name, size_t len, lt_value **out) {
    lt_value *v = lt_strmap_get(sc->names, name, len);
    if (v || !sc->parent) {
        *out = v;
        return LT_OK;
    }
    lt_value *pv;
    LT_TRY(onnx_resolve(L, sc->parent, name, len, &pv));
    if (!pv || pv == &onnx_absent_value) {
        *out = pv;
        return LT_OK;
    }
    lt_value *ref;
    LT_TRY(value_create(L, sc->gs, pv->name, &ref));
    ref->outer = pv;
    LT_TRY(onnx_type_clone(L, &pv->type, &ref->type));
    *out = ref;
    return LT_OK;
}

/* Define a node output named `name` in scope sc (function scopes rename it). */
static lt_status define_output(onnx_load *L, onnx_scope *sc, const char *name, const uint8_t *at, const char *who,
                               lt_value **out) {
    if (sc->is_function) return onnx_func_define(L, sc, name, at, who, out);
    lt_value *old = lt_strmap_get(&sc->gs->all, name, strlen(name));
    if (old)
        return onnx_err(L, at, LT_ERR_INVALID, "%s: output '%s' is defined more than once (already %s)", who, name,
                    old->init ? "an initializer" : old->is_input ? "a graph input" : old->outer ? "used as an outer-scope value" : "an earlier output");
    return value_create(L, sc->gs, name, out);
}

lt_status onnx_define_in(onnx_load *L, onnx_scope *sc, const char *name, const uint8_t *at, const char *who, lt_value **out) {
    return define_output(L, sc, name, at, who, out);
}

int64_t onnx_scope_opset(const onnx_load *L, const onnx_scope *sc, const char *domain) {
    if (sc->call) {
        const onnx_func *f = sc->call->fn;
        for (int i = 0; i < f->n_opsets; i++)
            if (strcmp(onnx_norm_domain(f->opsets[i].domain), onnx_norm_domain(domain)) == 0) return f->opsets[i].version;
    }
    return lt_model_opset(L->m, domain);
}

/* ---- ValueInfoProto ---- */
static lt_status parse_value_info(onnx_load *L, lt_slice s, const char **name, lt_type *type) {
    lt_wire w;
    onnx_reader(L, &w, s, "ValueInfoProto");
    sfield nm = {0};
    lt_slice ts = {0};
    bool has_type = false;
    while (lt_wire_next(&w)) {
        if (w.field == 1) read_sfield(&w, &nm);
        else if (w.field == 2) has_type = onnx_slice(&w, &ts, "TypeProto");
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (!(*name = sfield_str(L, &w, &nm, "value name"))) return onnx_wire_status(L);
    memset(type, 0, sizeof *type);
    type->kind = LT_TK_UNKNOWN;
    type->rank = -1;
    if (has_type) LT_TRY(onnx_type(L, ts, type));
    return LT_OK;
}

static lt_status type_of_tensor(onnx_load *L, const lt_tensor *t, lt_type *type) {
    lt_dim *d = NULL;
    if (t->rank) {
        if (!(d = model_alloc(L, (size_t)t->rank * sizeof *d, "types"))) return LT_ERR_NOMEM;
        for (int i = 0; i < t->rank; i++) d[i] = (lt_dim){t->dims[i], NULL};
    }
    lt_type_set_tensor(type, t->dtype, t->rank, d);
    return LT_OK;
}

/* ---- attributes ---- */
static lt_status import_subgraph(onnx_load *L, onnx_scope *sc, lt_node *owner, lt_slice s, lt_graph **out) {
    lt_graph *g = model_alloc(L, sizeof *g, "graphs");
    if (!g) return LT_ERR_NOMEM;
    g->model = L->m;
    g->parent = sc->gs->g;
    g->owner = owner;
    LT_TRY(onnx_import_graph(L, sc, s, g));
    *out = g;
    return LT_OK;
}

static lt_status attr_by_ref(onnx_load *L, onnx_scope *sc, lt_node *owner, lt_wire *w, const char *name, const char *ref,
                             lt_attr *a, bool *keep) {
    onnx_call *call = sc->call;
    if (!call)
        return lt_wire_error(w, w->start, LT_ERR_INVALID, "attribute '%s' refers to function attribute '%s' outside a function",
                             name, ref);
    for (int j = 0; j < call->n_attrs; j++) {
        if (strcmp(call->attrs[j].name, ref) != 0) continue;
        *a = call->attrs[j];
        a->name = name;
        if (a->type == LT_AT_GRAPH && a->g) a->g->owner = owner;
        return LT_OK;
    }
    const onnx_func *fn = call->fn;
    for (int j = 0; j < fn->n_attr_defaults; j++) {
        if (strcmp(fn->attr_default_names[j], ref) != 0) continue;
        LT_TRY(onnx_attr(L, call->caller, owner, fn->attr_defaults[j], a, keep));
        a->name = name;
        return LT_OK;
    }
    *keep = false;
    return LT_OK;
}

lt_status onnx_attr(onnx_load *L, onnx_scope *sc, lt_node *owner, lt_slice s, lt_attr *a, bool *keep) {
    lt_wire w;
    onnx_reader(L, &w, s, "AttributeProto");
    memset(a, 0, sizeof *a);
    *keep = true;
    sfield nm = {0}, ref = {0}, sv = {0};
    bool has_f = false, has_i = false, has_t = false, has_g = false, has_sp = false, has_tp = false;
    lt_slice t_s = {0}, g_s = {0}, sp_s = {0}, tp_s = {0};
    float f = 0;
    int64_t iv = 0, n_floats = 0, n_ints = 0, n_strings = 0, n_tensors = 0, n_graphs = 0, n_sparse = 0, n_tps = 0;
    int32_t type = 0;
    while (lt_wire_next(&w)) {
        switch (w.field) {
        case 1: read_sfield(&w, &nm); break;
        case 2: has_f = lt_wire_f32(&w, &f); break;
        case 3: has_i = lt_wire_i64(&w, &iv); break;
        case 4: read_sfield(&w, &sv); break;
        case 5: has_t = onnx_slice(&w, &t_s, "TensorProto"); break;
        case 6: has_g = onnx_slice(&w, &g_s, "GraphProto"); break;
        case 7: lt_wire_rep_fixed32(&w, NULL, 0, &n_floats); break;
        case 8: lt_wire_rep_varint(&w, NULL, 0, &n_ints); break;
        case 9: n_strings++; break;
        case 10: n_tensors++; break;
        case 11: n_graphs++; break;
        case 14: has_tp = onnx_slice(&w, &tp_s, "TypeProto"); break;
        case 15: n_tps++; break;
        case 20: lt_wire_i32(&w, &type); break;
        case 21: read_sfield(&w, &ref); break;
        case 22: has_sp = onnx_slice(&w, &sp_s, "SparseTensorProto"); break;
        case 23: n_sparse++; break;
        default: break;
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    const char *name = sfield_str(L, &w, &nm, "attribute name");
    if (!name) return onnx_wire_status(L);
    w.field = 0;
    if (!*name) return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute without a name");
    a->name = name;
    if (ref.set) {
        const char *r = sfield_str(L, &w, &ref, "ref_attr_name");
        if (!r) return onnx_wire_status(L);
        return attr_by_ref(L, sc, owner, &w, name, r, a, keep);
    }
    if (type == 0) { /* old models: infer the type from the field present */
        if (has_f) type = LT_AT_FLOAT;
        else if (has_i) type = LT_AT_INT;
        else if (sv.set) type = LT_AT_STRING;
        else if (has_t) type = LT_AT_TENSOR;
        else if (has_g) type = LT_AT_GRAPH;
        else if (has_sp) type = LT_AT_SPARSE_TENSOR;
        else if (has_tp) type = LT_AT_TYPE_PROTO;
        else if (n_floats) type = LT_AT_FLOATS;
        else if (n_ints) type = LT_AT_INTS;
        else if (n_strings) type = LT_AT_STRINGS;
        else if (n_tensors) type = LT_AT_TENSORS;
        else if (n_graphs) type = LT_AT_GRAPHS;
        else if (n_sparse) type = LT_AT_SPARSE_TENSORS;
        else if (n_tps) type = LT_AT_TYPE_PROTOS;
        else return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' has neither a type nor a value", name);
    }
    if (type < 1 || type > 14) return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' has unknown type %d", name, (int)type);
    a->type = (lt_attr_type)type;
    char what[300];
    snprintf(what, sizeof what, "attribute '%s'", name);
    int64_t n = 0;
    uint32_t field = 0;
    switch (a->type) {
    case LT_AT_FLOAT: a->f = f; return LT_OK;
    case LT_AT_INT: a->i = iv; return LT_OK;
    case LT_AT_STRING: {
        if (!(a->s = lt_arena_strndup(&L->m->arena, sv.set ? (const char *)sv.p : "", sv.set ? sv.n : 0))) return onnx_nomem(L, "attributes");
        a->s_len = (int64_t)(sv.set ? sv.n : 0);
        return LT_OK;
    }
    case LT_AT_TENSOR:
    case LT_AT_SPARSE_TENSOR: {
        bool sparse = a->type == LT_AT_SPARSE_TENSOR;
        if (!(sparse ? has_sp : has_t))
            return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' of type %s has no value", name, sparse ? "SPARSE_TENSOR" : "TENSOR");
        lt_tensor *t;
        LT_TRY(sparse ? onnx_sparse_tensor(L, sp_s, what, &t, NULL) : onnx_tensor(L, t_s, what, &t, NULL));
        LT_TRY(onnx_own(L, t));
        a->t = t;
        return LT_OK;
    }
    case LT_AT_GRAPH:
        if (!has_g) return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' of type GRAPH has no graph", name);
        return import_subgraph(L, sc, owner, g_s, &a->g);
    case LT_AT_TYPE_PROTO:
        if (!has_tp) return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' of type TYPE_PROTO has no type", name);
        if (!(a->tp = model_alloc(L, sizeof *a->tp, "attributes"))) return LT_ERR_NOMEM;
        return onnx_type(L, tp_s, a->tp);
    case LT_AT_FLOATS: n = n_floats; field = 7; break;
    case LT_AT_INTS: n = n_ints; field = 8; break;
    case LT_AT_STRINGS: n = n_strings; field = 9; break;
    case LT_AT_TENSORS: n = n_tensors; field = 10; break;
    case LT_AT_GRAPHS: n = n_graphs; field = 11; break;
    case LT_AT_SPARSE_TENSORS: n = n_sparse; field = 23; break;
    case LT_AT_TYPE_PROTOS: n = n_tps; field = 15; break;
    default: return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' has unknown type %d", name, (int)type);
    }
    if (n > INT32_MAX / 16) return lt_wire_error(&w, w.start, LT_ERR_INVALID, "attribute '%s' has %lld values", name, (long long)n);
    a->n = (int)n;
    size_t cnt = (size_t)(n ? n : 1);
    switch (a->type) {
    case LT_AT_FLOATS: a->floats = model_alloc(L, cnt * sizeof *a->floats, "attributes"); if (!a->floats) return LT_ERR_NOMEM; break;
    case LT_AT_INTS: a->ints = model_alloc(L, cnt * sizeof *a->ints, "attributes"); if (!a->ints) return LT_ERR_NOMEM; break;
    case LT_AT_STRINGS:
        a->strings = model_alloc(L, cnt * sizeof *a->strings, "attributes");
        a->string_lens = model_alloc(L, cnt * sizeof *a->string_lens, "attributes");
        if (!a->strings || !a->string_lens) return LT_ERR_NOMEM;
        break;
    case LT_AT_TENSORS:
    case LT_AT_SPARSE_TENSORS: a->tensors = model_alloc(L, cnt * sizeof *a->tensors, "attributes"); if (!a->tensors) return LT_ERR_NOMEM; break;
    case LT_AT_GRAPHS: a->graphs = model_alloc(L, cnt * sizeof *a->graphs, "attributes"); if (!a->graphs) return LT_ERR_NOMEM; break;
    default: a->tps = model_alloc(L, cnt * sizeof *a->tps, "attributes"); if (!a->tps) return LT_ERR_NOMEM; break;
    }
    int64_t got = 0;
    onnx_reader(L, &w, s, "AttributeProto");
    while (lt_wire_next(&w)) {
        if (w.field != field) continue;
        if (field == 7) {
            uint32_t tmp[1];
            int64_t one = 0;
            if (w.wt == LT_WT_I32) {
                if (!lt_wire_rep_fixed32(&w, tmp, 1, &one)) break;
                if (got < n) memcpy(&a->floats[got++], tmp, 4);
            } else {
                const uint8_t *p;
                size_t len;
                if (!lt_wire_bytes(&w, &p, &len)) break;
                if (len % 4) return lt_wire_error(&w, w.key_at, LT_ERR_INVALID, "packed floats: length %zu is not a multiple of 4", len);
                for (size_t k = 0; k < len / 4 && got < n; k++) memcpy(&a->floats[got++], p + 4 * k, 4);
            }
        } else if (field == 8) {
            if (!lt_wire_rep_varint(&w, (uint64_t *)(void *)a->ints, n, &got)) break;
        } else if (field == 9) {
            const uint8_t *p;
            size_t len;
            if (!lt_wire_bytes(&w, &p, &len) || got >= n) break;
            char *str = lt_arena_strndup(&L->m->arena, (const char *)p, len);
            if (!str) return onnx_nomem(L, "attributes");
            a->strings[got] = str;
            a->string_lens[got++] = (int64_t)len;
        } else {
            lt_slice item;
            const char *msg = field == 10 ? "TensorProto" : field == 11 ? "GraphProto" : field == 23 ? "SparseTensorProto" : "TypeProto";
            if (!onnx_slice(&w, &item, msg) || got >= n) break;
            if (field == 10 || field == 23) {
                lt_tensor *t;
                LT_TRY(field == 10 ? onnx_tensor(L, item, what, &t, NULL) : onnx_sparse_tensor(L, item, what, &t, NULL));
                LT_TRY(onnx_own(L, t));
                a->tensors[got++] = t;
            } else if (field == 11) {
                LT_TRY(import_subgraph(L, sc, owner, item, &a->graphs[got]));
                got++;
            } else {
                if (!(a->tps[got] = model_alloc(L, sizeof **a->tps, "attributes"))) return LT_ERR_NOMEM;
                LT_TRY(onnx_type(L, item, a->tps[got]));
                got++;
            }
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (got != n) return lt_wire_error(&w, w.start, LT_ERR_INTERNAL, "attribute '%s': %lld of %lld values read", name, (long long)got, (long long)n);
    return LT_OK;
}

/* ---- nodes ---- */
static lt_status check_dup_attrs(onnx_load *L, const uint8_t *at, const char *who, const lt_attr *attrs, int n) {
    if (n <= 16) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                if (strcmp(attrs[i].name, attrs[j].name) == 0)
                    return onnx_err(L, at, LT_ERR_INVALID, "%s: attribute '%s' is given twice", who, attrs[i].name);
        return LT_OK;
    }
    lt_strmap seen = {0};
    lt_status st = LT_OK;
    for (int i = 0; i < n && !st; i++) {
        if (lt_strmap_get(&seen, attrs[i].name, strlen(attrs[i].name)))
            st = onnx_err(L, at, LT_ERR_INVALID, "%s: attribute '%s' is given twice", who, attrs[i].name);
        else if (!lt_strmap_put(&seen, attrs[i].name, (void *)&attrs[i]))
            st = onnx_nomem(L, "attribute table");
    }
    lt_strmap_free(&seen);
    return st;
}

lt_status onnx_import_node(onnx_load *L, onnx_scope *sc, lt_slice s, int depth_calls) {
    lt_wire w;
    onnx_reader(L, &w, s, "NodeProto");
    sfield nm = {0}, op = {0}, dom = {0}, ovl = {0};
    int64_t n_in = 0, n_out = 0, n_attr = 0;
    while (lt_wire_next(&w)) {
        switch (w.field) {
        case 1: n_in++; break;
        case 2: n_out++; break;
        case 3: read_sfield(&w, &nm); break;
        case 4: read_sfield(&w, &op); break;
        case 5: n_attr++; break;
        case 7: read_sfield(&w, &dom); break;
        case 8: read_sfield(&w, &ovl); break;
        default: break;
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    w.field = 0;
    const char *name = sfield_str(L, &w, &nm, "node name"), *op_type = name ? sfield_str(L, &w, &op, "op_type") : NULL;
    const char *domain = op_type ? sfield_str(L, &w, &dom, "domain") : NULL;
    const char *overload = domain ? sfield_str(L, &w, &ovl, "overload") : NULL;
    if (!overload) return onnx_wire_status(L);
    onnx_gstate *gs = sc->gs;
    char who[400];
    snprintf(who, sizeof who, "node %d '%.150s' (%s%s%.150s)", gs->nodes.n, name, domain, *domain ? "." : "", op_type);
    if (!*op_type) return onnx_err(L, s.p, LT_ERR_INVALID, "%s: node has no op_type", who);
    if (n_in > INT32_MAX / 16 || n_out > INT32_MAX / 16 || n_attr > INT32_MAX / 16)
        return onnx_err(L, s.p, LT_ERR_INVALID, "%s: too many inputs, outputs or attributes", who);
    if (sc->is_function && *name) {
        char *full = lt_arena_alloc(&L->m->arena, strlen(sc->call->prefix) + strlen(name) + 2);
        if (!full) return onnx_nomem(L, "names");
        sprintf(full, "%s/%s", sc->call->prefix, name);
        name = full;
    }
    if (sc->call && ++L->inlined_nodes > LT_ONNX_MAX_INLINED_NODES)
        return onnx_err(L, s.p, LT_ERR_INVALID, "%s: inlining model-local functions would create more than %lld nodes", who,
                        (long long)LT_ONNX_MAX_INLINED_NODES);
    const onnx_func *fn = onnx_find_function(L, domain, op_type, overload);
    lt_node *node = NULL;
    if (!fn) {
        if (!(node = model_alloc(L, sizeof *node, "nodes"))) return LT_ERR_NOMEM;
        node->index = gs->nodes.n;
        node->name = name;
        node->op_type = op_type;
        node->domain = domain;
        node->op = lt_op_lookup(domain, op_type);
        node->opset = (int)onnx_scope_opset(L, sc, domain);
        node->graph = gs->g;
    }
    /* inputs */
    lt_value **in = n_in ? model_alloc(L, (size_t)n_in * sizeof *in, "node inputs") : NULL;
    if (n_in && !in) return LT_ERR_NOMEM;
    int k = 0;
    onnx_reader(L, &w, s, "NodeProto");
    while (lt_wire_next(&w)) {
        if (w.field != 1) continue;
        const uint8_t *p;
        size_t n;
        const uint8_t *at = w.key_at;
        if (!lt_wire_bytes(&w, &p, &n)) break;
        if (n == 0) {
            in[k++] = NULL;
            continue;
        }
        if (memchr(p, 0, n)) return onnx_err(L, at, LT_ERR_INVALID, "%s: input name contains a NUL byte", who);
        lt_value *v;
        LT_TRY(onnx_resolve(L, sc, (const char *)p, n, &v));
        if (!v)
            return onnx_err(L, at, LT_ERR_INVALID,
                            "%s: input '%.*s' is not defined before use (not a graph input, initializer, earlier output or "
                            "outer-scope value)",
                            who, (int)(n > 300 ? 300 : n), (const char *)p);
        in[k++] = v == &onnx_absent_value ? NULL : v;
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    /* attributes */
    lt_attr *attrs = n_attr ? (fn ? scratch_alloc(L, (size_t)n_attr * sizeof *attrs, "attributes")
                                  : model_alloc(L, (size_t)n_attr * sizeof *attrs, "attributes"))
                            : NULL;
    if (n_attr && !attrs) return LT_ERR_NOMEM;
    int na = 0;
    onnx_reader(L, &w, s, "NodeProto");
    while (lt_wire_next(&w)) {
        if (w.field != 5) continue;
        lt_slice as;
        if (!onnx_slice(&w, &as, "AttributeProto")) break;
        bool keep;
        LT_TRY(onnx_attr(L, sc, node, as, &attrs[na], &keep));
        if (keep) na++;
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    LT_TRY(check_dup_attrs(L, s.p, who, attrs, na));
    /* outputs */
    const char **out_names = n_out ? scratch_alloc(L, (size_t)n_out * sizeof *out_names, "node outputs") : NULL;
    const uint8_t **out_at = n_out ? scratch_alloc(L, (size_t)n_out * sizeof *out_at, "node outputs") : NULL;
    if (n_out && (!out_names || !out_at)) return LT_ERR_NOMEM;
    k = 0;
    onnx_reader(L, &w, s, "NodeProto");
    while (lt_wire_next(&w)) {
        if (w.field != 2) continue;
        const uint8_t *p;
        size_t n;
        out_at[k] = w.key_at;
        if (!lt_wire_bytes(&w, &p, &n)) break;
        if (!(out_names[k++] = n ? onnx_str(L, &w, p, n, "output name") : "")) return onnx_wire_status(L);
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (fn) {
        for (int i = 0; i < (int)n_out; i++)
            if (!*out_names[i]) out_names[i] = NULL;
        /* Call depth comes from the scope (subgraphs inside bodies inherit it), so recursion through
         * subgraphs is bounded too. */
        (void)depth_calls;
        return onnx_inline_call(L, sc, fn, name, in, (int)n_in, out_names, (int)n_out, attrs, na,
                                sc->call ? sc->call->depth + 1 : 0);
    }
    node->n_in = (int)n_in;
    node->in = in;
    node->n_attr = na;
    node->attrs = attrs;
    node->n_out = (int)n_out;
    if (n_out && !(node->out = model_alloc(L, (size_t)n_out * sizeof *node->out, "node outputs"))) return LT_ERR_NOMEM;
    for (int i = 0; i < (int)n_out; i++) {
        if (!*out_names[i]) continue;
        lt_value *v;
        LT_TRY(define_output(L, sc, out_names[i], out_at[i], who, &v));
        v->producer = node;
        v->producer_out = i;
        node->out[i] = v;
    }
    if (!lt_vec_push(&gs->nodes, node)) return onnx_nomem(L, "node list");
    return LT_OK;
}

/* ---- graphs ---- */
enum { GF_NODE = 1, GF_INIT = 5, GF_INPUT = 11, GF_OUTPUT = 12, GF_VINFO = 13, GF_SPARSE = 15, GF_MAX = 16 };

static const char *graph_field_msg(int f) {
    switch (f) {
    case GF_NODE: return "NodeProto";
    case GF_INIT: return "TensorProto";
    case GF_SPARSE: return "SparseTensorProto";
    default: return "ValueInfoProto";
    }
}

static lt_status init_value(onnx_load *L, onnx_scope *sc, lt_slice s, lt_tensor *t, lt_slice nm, const char *what) {
    lt_wire w;
    onnx_reader(L, &w, s, "TensorProto");
    if (!nm.n) return onnx_err(L, s.p, LT_ERR_INVALID, "graph '%s': %s without a name", sc->gs->g->name, what);
    const char *name = onnx_str(L, &w, nm.p, nm.n, "initializer name");
    if (!name) return onnx_wire_status(L);
    if (lt_strmap_get(&sc->gs->all, name, strlen(name)))
        return onnx_err(L, s.p, LT_ERR_INVALID, "graph '%s': %s '%s' is defined more than once", sc->gs->g->name, what, name);
    lt_value *v;
    LT_TRY(value_create(L, sc->gs, name, &v));
    v->init = t;
    return type_of_tensor(L, t, &v->type);
}

static lt_status graph_body(onnx_load *L, onnx_scope *sc, lt_slice s) {
    lt_graph *g = sc->gs->g;
    lt_wire w;
    onnx_reader(L, &w, s, "GraphProto");
    int64_t cnt[GF_MAX] = {0};
    sfield nm = {0};
    while (lt_wire_next(&w)) {
        switch (w.field) {
        case GF_NODE: case GF_INIT: case GF_INPUT: case GF_OUTPUT: case GF_VINFO: case GF_SPARSE: cnt[w.field]++; break;
        case 2: read_sfield(&w, &nm); break;
        default: break;
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    w.field = 0;
    if (!(g->name = sfield_str(L, &w, &nm, "graph name"))) return onnx_wire_status(L);
    lt_slice *sl[GF_MAX] = {0};
    int64_t fill[GF_MAX] = {0};
    for (int f = 0; f < GF_MAX; f++) {
        if (!cnt[f]) continue;
        if (cnt[f] > INT32_MAX / 16) return onnx_err(L, s.p, LT_ERR_INVALID, "graph '%s': %lld entries", g->name, (long long)cnt[f]);
        if (!(sl[f] = scratch_alloc(L, (size_t)cnt[f] * sizeof **sl, "graph lists"))) return LT_ERR_NOMEM;
    }
    onnx_reader(L, &w, s, "GraphProto");
    while (lt_wire_next(&w)) {
        uint32_t f = w.field;
        if (f >= GF_MAX || !sl[f] || f == 2) continue;
        if (!onnx_slice(&w, &sl[f][fill[f]++], graph_field_msg((int)f))) break;
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);

    for (int64_t i = 0; i < cnt[GF_INIT]; i++) {
        lt_tensor *t;
        lt_slice tn;
        LT_TRY(onnx_tensor(L, sl[GF_INIT][i], "initializer", &t, &tn));
        LT_TRY(onnx_own(L, t));
        LT_TRY(init_value(L, sc, sl[GF_INIT][i], t, tn, "initializer"));
    }
    for (int64_t i = 0; i < cnt[GF_SPARSE]; i++) {
        lt_tensor *t;
        lt_slice tn = {0};
        LT_TRY(onnx_sparse_tensor(L, sl[GF_SPARSE][i], "sparse initializer", &t, &tn));
        LT_TRY(onnx_own(L, t));
        LT_TRY(init_value(L, sc, sl[GF_SPARSE][i], t, tn, "sparse initializer"));
    }
    g->n_inputs = (int)cnt[GF_INPUT];
    if (g->n_inputs && !(g->inputs = model_alloc(L, (size_t)g->n_inputs * sizeof *g->inputs, "graph inputs"))) return LT_ERR_NOMEM;
    for (int i = 0; i < g->n_inputs; i++) {
        const char *name;
        lt_type type;
        lt_slice is = sl[GF_INPUT][i];
        LT_TRY(parse_value_info(L, is, &name, &type));
        if (!*name) return onnx_err(L, is.p, LT_ERR_INVALID, "graph '%s': input %d has no name", g->name, i);
        lt_value *v = lt_strmap_get(&sc->gs->all, name, strlen(name));
        if (v && v->is_input) return onnx_err(L, is.p, LT_ERR_INVALID, "graph '%s': input '%s' is listed twice", g->name, name);
        if (!v) LT_TRY(value_create(L, sc->gs, name, &v));
        v->is_input = true;
        if (type.kind != LT_TK_UNKNOWN) v->type = type;
        g->inputs[i] = v;
    }
    for (int64_t i = 0; i < cnt[GF_NODE]; i++) LT_TRY(onnx_import_node(L, sc, sl[GF_NODE][i], 0));
    g->n_outputs = (int)cnt[GF_OUTPUT];
    if (g->n_outputs && !(g->outputs = model_alloc(L, (size_t)g->n_outputs * sizeof *g->outputs, "graph outputs"))) return LT_ERR_NOMEM;
    for (int i = 0; i < g->n_outputs; i++) {
        const char *name;
        lt_type type;
        lt_slice os = sl[GF_OUTPUT][i];
        LT_TRY(parse_value_info(L, os, &name, &type));
        if (!*name) return onnx_err(L, os.p, LT_ERR_INVALID, "graph '%s': output %d has no name", g->name, i);
        lt_value *v;
        LT_TRY(onnx_resolve(L, sc, name, strlen(name), &v));
        if (!v || v == &onnx_absent_value)
            return onnx_err(L, os.p, LT_ERR_INVALID, "graph '%s': output '%s' is never produced", g->name, name);
        v->is_output = true;
        if (type.kind != LT_TK_UNKNOWN && v->type.kind == LT_TK_UNKNOWN) v->type = type;
        g->outputs[i] = v;
    }
    for (int64_t i = 0; i < cnt[GF_VINFO]; i++) {
        const char *name;
        lt_type type;
        LT_TRY(parse_value_info(L, sl[GF_VINFO][i], &name, &type));
        lt_value *v = *name ? lt_strmap_get(&sc->gs->all, name, strlen(name)) : NULL;
        if (v && v->type.kind == LT_TK_UNKNOWN && type.kind != LT_TK_UNKNOWN) v->type = type;
    }
    return LT_OK;
}

static lt_status finish_graph(onnx_load *L, onnx_gstate *gs) {
    lt_graph *g = gs->g;
    g->n_values = gs->values.n;
    g->n_nodes = gs->nodes.n;
    if (g->n_values) {
        if (!(g->values = model_alloc(L, (size_t)g->n_values * sizeof *g->values, "graph values"))) return LT_ERR_NOMEM;
        memcpy(g->values, gs->values.items, (size_t)g->n_values * sizeof *g->values);
    }
    if (g->n_nodes) {
        if (!(g->nodes = model_alloc(L, (size_t)g->n_nodes * sizeof *g->nodes, "graph nodes"))) return LT_ERR_NOMEM;
        memcpy(g->nodes, gs->nodes.items, (size_t)g->n_nodes * sizeof *g->nodes);
    }
    return LT_OK;
}

lt_status onnx_import_graph(onnx_load *L, onnx_scope *parent, lt_slice s, lt_graph *g) {
    onnx_gstate gs = {.g = g};
    onnx_scope sc = {.gs = &gs, .names = &gs.all, .parent = parent, .call = parent ? parent->call : NULL};
    lt_status st = graph_body(L, &sc, s);
    if (!st) st = finish_graph(L, &gs);
    lt_strmap_free(&gs.all);
    lt_vec_free(&gs.values);
    lt_vec_free(&gs.nodes);
    return st;
}

/* ---- model ---- */
lt_status onnx_parse_opset(onnx_load *L, lt_slice s, lt_opset *o) {
    lt_wire w;
    onnx_reader(L, &w, s, "OperatorSetIdProto");
    sfield d = {0};
    o->version = 0;
    while (lt_wire_next(&w)) {
        if (w.field == 1) read_sfield(&w, &d);
        else if (w.field == 2) lt_wire_i64(&w, &o->version);
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (!(o->domain = sfield_str(L, &w, &d, "opset domain"))) return onnx_wire_status(L);
    return LT_OK;
}

/* The first pass over the model's top-level fields failed. A file that ran out in the middle of a
 * value after well-formed ModelProto fields is a truncated model: the message says where. Any other
 * top-level failure (a wire type or field number protobuf does not have, a field of the wrong wire
 * type, bytes that do not even start a field) means the file is not an ONNX model at all (another
 * format, text, or another protobuf message): say that first, keeping the detail with its offset. */
static lt_status top_level_failure(onnx_load *L, int well_formed) {
    lt_status s = onnx_wire_status(L);
    size_t fl = strlen(L->file);
    const char *msg = L->ctx->msg;
    if (s == LT_ERR_NOMEM || (L->src.truncated && well_formed > 0)) return s;
    if (strncmp(msg, L->file, fl) != 0 || strncmp(msg + fl, ": byte ", 7) != 0) return s; /* not the decoder's */
    char detail[LT_MSG_MAX];
    snprintf(detail, sizeof detail, "%s", msg + fl + 2);
    lt_ctx_clear(L->ctx);
    return lt_error(L->ctx, LT_ERR_INVALID, "%s: not an ONNX model (%s)", L->file, detail);
}

/* The wire type ModelProto gives a top-level field (-1: a field lathe does not know). */
static int model_field_wt(uint32_t field) {
    switch (field) {
    case 1: case 5: return LT_WT_VARINT;                                     /* ir_version, model_version */
    case 2: case 3: case 4: case 6: case 7: case 8: case 14: case 20: case 25: case 26: return LT_WT_LEN;
    default: return -1;
    }
}

static lt_status import_model(onnx_load *L) {
    lt_model *m = L->m;
    lt_wire w;
    lt_wire_root(&w, &L->src, "ModelProto");
    bool has_ir = false, has_graph = false;
    int64_t ir = 0, n_ops = 0, n_funcs = 0;
    int well_formed = 0; /* top-level fields read whole, with ModelProto's wire type */
    lt_slice graph = {0};
    sfield pn = {0}, pv = {0};
    while (lt_wire_next(&w)) {
        bool known = model_field_wt(w.field) == w.wt;
        switch (w.field) {
        case 1: known = has_ir = lt_wire_i64(&w, &ir); break;
        case 2: known = read_sfield(&w, &pn); break;
        case 3: known = read_sfield(&w, &pv); break;
        case 7: known = has_graph = onnx_slice(&w, &graph, "GraphProto"); break;
        case 8: n_ops++; break;
        case 25: n_funcs++; break;
        default: break;
        }
        if (known && lt_wire_skip(&w)) well_formed++;
    }
    if (lt_wire_failed(&w)) return top_level_failure(L, well_formed);
    w.field = 0;
    const uint8_t *base = L->src.base;
    if (!has_ir) return lt_error(L->ctx, LT_ERR_INVALID, "%s: not an ONNX model (ModelProto has no ir_version)", L->file);
    m->ir_version = ir;
    if (ir < 3 || ir > 14)
        return onnx_err(L, base, LT_ERR_UNSUPPORTED, "ONNX IR version %lld is not supported (lathe reads IR versions 3 to 14)", (long long)ir);
    if (!(m->producer_name = sfield_str(L, &w, &pn, "producer_name"))) return onnx_wire_status(L);
    if (!(m->producer_version = sfield_str(L, &w, &pv, "producer_version"))) return onnx_wire_status(L);
    if (n_ops > 100000 || n_funcs > INT32_MAX / 16)
        return onnx_err(L, base, LT_ERR_INVALID, "%lld opset imports and %lld functions", (long long)n_ops, (long long)n_funcs);
    if (n_ops && !(m->opsets = model_alloc(L, (size_t)n_ops * sizeof *m->opsets, "opsets"))) return LT_ERR_NOMEM;
    if (n_funcs && !(L->funcs = scratch_alloc(L, (size_t)n_funcs * sizeof *L->funcs, "functions"))) return LT_ERR_NOMEM;
    lt_wire_root(&w, &L->src, "ModelProto");
    while (lt_wire_next(&w)) {
        lt_slice s;
        if (w.field == 8) {
            if (!onnx_slice(&w, &s, "OperatorSetIdProto")) break;
            LT_TRY(onnx_parse_opset(L, s, &m->opsets[m->n_opsets++]));
        } else if (w.field == 25) {
            if (!onnx_slice(&w, &s, "FunctionProto")) break;
            LT_TRY(onnx_parse_function(L, s, &L->funcs[L->n_funcs++]));
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    if (!has_graph) return onnx_err(L, base, LT_ERR_INVALID, "model has no graph");
    lt_graph *g = model_alloc(L, sizeof *g, "graphs");
    if (!g) return LT_ERR_NOMEM;
    g->model = m;
    LT_TRY(onnx_import_graph(L, NULL, graph, g));
    m->graph = g;
    lt_ctx c = {0};
    lt_status st = lt_graph_verify(&c, g);
    if (st) return lt_error(L->ctx, st, "%s: %s", L->file, c.msg);
    if ((st = lt_graph_infer(&c, m))) return lt_error(L->ctx, st, "%s: shape inference: %s", L->file, c.msg);
    return LT_OK;
}

static lt_status model_new(lt_ctx *ctx, lt_model **out) {
    lt_arena a;
    lt_arena_init(&a);
    lt_model *m = lt_arena_alloc(&a, sizeof *m);
    if (!m) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (model)");
    m->arena = a; /* the arena now lives in the model it holds */
    m->on_free = onnx_model_on_free;
    *out = m;
    return LT_OK;
}

static lt_status check_options(lt_ctx *ctx, const lt_load_options *opt, int64_t *max_bytes, int *max_depth) {
    *max_bytes = opt && opt->max_bytes > 0 ? opt->max_bytes : LT_ONNX_DEFAULT_MAX_BYTES;
    *max_depth = opt && opt->max_depth > 0 ? opt->max_depth : 64;
    if ((opt && (opt->max_bytes < 0 || opt->max_depth < 0)) || *max_depth > 256)
        return lt_error(ctx, LT_ERR_USAGE, "load options: max_bytes must be >= 0 and max_depth in 0..256");
    return LT_OK;
}

/* Import from bytes already owned by m (mapping) or by the caller. */
static lt_status load_bytes(lt_ctx *ctx, lt_model *m, const void *data, size_t size, const char *file, const char *base_dir,
                            int64_t max_bytes, int max_depth) {
    onnx_load L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.m = m;
    L.file = file;
    L.base_dir = base_dir;
    L.max_bytes = max_bytes;
    L.borrow = true;
    lt_arena_init(&L.scratch);
    lt_wire_src_init(&L.src, ctx, data, size, file, max_depth);
    lt_status st = import_model(&L);
    lt_arena_free(&L.scratch);
    if (st && ctx->status == LT_OK) lt_error(ctx, st, "%s: import failed (%s)", file, lt_status_name(st));
    return st;
}

lt_status lt_onnx_load_memory(lt_ctx *ctx, const void *data, size_t size, const char *base_dir, const lt_load_options *opt,
                              lt_model **out) {
    int64_t max_bytes;
    int max_depth;
    LT_TRY(check_options(ctx, opt, &max_bytes, &max_depth));
    if (!data && size) return lt_error(ctx, LT_ERR_USAGE, "lt_onnx_load_memory: NULL data");
    if ((uint64_t)size > (uint64_t)max_bytes)
        return lt_error(ctx, LT_ERR_INVALID, "<memory>: model of %zu bytes exceeds the limit of %lld bytes", size, (long long)max_bytes);
    lt_model *m = NULL;
    LT_TRY(model_new(ctx, &m));
    lt_status st = load_bytes(ctx, m, data, size, "<memory>", base_dir, max_bytes, max_depth);
    if (st) {
        lt_model_free(m);
        return st;
    }
    *out = m;
    return LT_OK;
}

lt_status lt_onnx_load_file(lt_ctx *ctx, const char *path, const lt_load_options *opt, lt_model **out) {
    int64_t max_bytes;
    int max_depth;
    LT_TRY(check_options(ctx, opt, &max_bytes, &max_depth));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return lt_error(ctx, LT_ERR_INVALID, "%s: not a regular file", path);
    }
    if (sb.st_size < 0 || (int64_t)sb.st_size > max_bytes) {
        close(fd);
        return lt_error(ctx, LT_ERR_INVALID, "%s: file of %lld bytes exceeds the limit of %lld bytes", path, (long long)sb.st_size,
                        (long long)max_bytes);
    }
    lt_model *m = NULL;
    lt_status st = model_new(ctx, &m);
    if (st) {
        close(fd);
        return st;
    }
    size_t size = (size_t)sb.st_size;
    void *data = NULL;
    if (size) {
        data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (data == MAP_FAILED) {
            int e = errno;
            close(fd);
            lt_model_free(m);
            return lt_error(ctx, LT_ERR_IO, "%s: cannot map: %s", path, strerror(e));
        }
    }
    close(fd);
    onnx_load tmp = {.ctx = ctx, .m = m};
    if (size && (st = onnx_keep_mapping(&tmp, data, size))) {
        lt_model_free(m);
        return st;
    }
    /* The model's folder, for external data. */
    const char *slash = strrchr(path, '/');
    char *dir = slash ? lt_arena_strndup(&m->arena, path, slash == path ? 1 : (size_t)(slash - path)) : lt_arena_strdup(&m->arena, ".");
    if (!dir || !(m->path = lt_arena_strdup(&m->arena, path))) {
        lt_model_free(m);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (model path)");
    }
    st = load_bytes(ctx, m, data, size, m->path, dir, max_bytes, max_depth);
    if (st) {
        lt_model_free(m);
        return st;
    }
    *out = m;
    return LT_OK;
}
