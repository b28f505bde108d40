/* functions.c — model-local functions (ModelProto.functions) and their inlining.
 *
 * Every node whose (domain, op_type, overload) names a model-local function is replaced by the
 * function's body at import. The body runs in its own scope: formal inputs map to the caller's
 * values (an omitted optional input maps to "absent", so body nodes see NULL there), formal outputs
 * map to the caller's output names (an output the caller did not request gets an internal name),
 * and every other body value gets a unique name "<prefix>/<name>" in the caller's graph, where the
 * prefix is the call node's name (or the function's) with "#N" for the N-th inlined call. Body node
 * names get the same prefix. Attributes with ref_attr_name take the caller's attribute of that name,
 * else the function's attribute_proto default, else they are dropped. Body nodes use the function's
 * opset_import for their domain (the model's when the function does not import it). Calls inside
 * bodies are inlined recursively up to LT_ONNX_MAX_INLINE_DEPTH (which also stops recursive
 * functions). A formal output that is directly a formal input or another output gets an Identity.
 */
#include "onnx_int.h"

#include "../ops/ops.h"

#include <stdio.h>
#include <string.h>

lt_status onnx_parse_function(onnx_load *L, lt_slice s, onnx_func *f) {
    lt_wire w;
    onnx_reader(L, &w, s, "FunctionProto");
    memset(f, 0, sizeof *f);
    f->proto = s;
    const uint8_t *np = NULL, *dp = NULL, *op = NULL;
    size_t nn = 0, dn = 0, on = 0;
    int64_t n_in = 0, n_out = 0, n_nodes = 0, n_def = 0, n_ops = 0;
    while (lt_wire_next(&w)) {
        switch (w.field) {
        case 1: lt_wire_bytes(&w, &np, &nn); break;
        case 4: n_in++; break;
        case 5: n_out++; break;
        case 7: n_nodes++; break;
        case 9: n_ops++; break;
        case 10: lt_wire_bytes(&w, &dp, &dn); break;
        case 11: n_def++; break;
        case 13: lt_wire_bytes(&w, &op, &on); break;
        default: break;
        }
    }
    if (lt_wire_failed(&w)) return onnx_wire_status(L);
    w.field = 0;
    if (!(f->name = onnx_str(L, &w, np ? np : (const uint8_t *)"", nn, "function name")) ||
        !(f->domain = onnx_str(L, &w, dp ? dp : (const uint8_t *)"", dn, "function domain")) ||
        !(f->overload = onnx_str(L, &w, op ? op : (const uint8_t *)"", on, "function overload")))
        return onnx_wire_status(L);
    if (!*f->name) return onnx_err(L, s.p, LT_ERR_INVALID, "model-local function without a name");
    if (n_in > INT32_MAX / 16 || n_out > INT32_MAX / 16 || n_nodes > INT32_MAX / 16 || n_def > INT32_MAX / 16 || n_ops > 100000)
        return onnx_err(L, s.p, LT_ERR_INVALID, "function '%s': too many entries", f->name);
    size_t szs[5] = {(size_t)n_in * sizeof *f->inputs, (size_t)n_out * sizeof *f->outputs, (size_t)n_nodes * sizeof *f->nodes,
                     (size_t)n_def * (sizeof *f->attr_defaults + sizeof *f->attr_default_names), (size_t)n_ops * sizeof *f->opsets};
    void *ps[5];
    for (int i = 0; i < 5; i++)
        if (!(ps[i] = lt_arena_alloc(&L->scratch, szs[i] ? szs[i] : 1))) return onnx_nomem(L, "functions");
    f->inputs = ps[0];
    f->outputs = ps[1];
    f->nodes = ps[2];
    f->attr_defaults = ps[3];
    f->attr_default_names = (const char **)(void *)((lt_slice *)ps[3] + n_def);
    f->opsets = ps[4];
    onnx_reader(L, &w, s, "FunctionProto");
    while (lt_wire_next(&w)) {
        const uint8_t *p;
        size_t n;
        lt_slice sub;
        switch (w.field) {
        case 4:
        case 5:
            if (!lt_wire_bytes(&w, &p, &n)) break;
            {
                const char *str = onnx_str(L, &w, p, n, "function input/output name");
                if (!str) return onnx_wire_status(L);
                if (w.field == 4) f->inputs[f->n_in++] = str;
                else f->outputs[f->n_out++] = str;
            }
            break;
        case 7:
            if (onnx_slice(&w, &sub, "NodeProto")) f->nodes[f->n_nodes++] = sub;
            break;
        case 9:
            if (!onnx_slice(&w, &sub, "OperatorSetIdProto")) break;
            LT_TRY(onnx_parse_opset(L, sub, &f->opsets[f->n_opsets++]));
            break;
        case 11: {
            if (!onnx_slice(&w, &sub, "AttributeProto")) break;
            lt_wire a;
            onnx_reader(L, &a, sub, "AttributeProto");
            const uint8_t *an = NULL;
            size_t al = 0;
            while (lt_wire_next(&a))
                if (a.field == 1) lt_wire_bytes(&a, &an, &al);
            if (lt_wire_failed(&a)) return onnx_wire_status(L);
            const char *aname = onnx_str(L, &a, an ? an : (const uint8_t *)"", al, "attribute name");
            if (!aname) return onnx_wire_status(L);
            f->attr_defaults[f->n_attr_defaults] = sub;
            f->attr_default_names[f->n_attr_defaults++] = aname;
            break;
        }
        default: break;
        }
    }
    return lt_wire_failed(&w) ? onnx_wire_status(L) : LT_OK;
}

const onnx_func *onnx_find_function(const onnx_load *L, const char *domain, const char *op_type, const char *overload) {
    domain = onnx_norm_domain(domain);
    for (int i = 0; i < L->n_funcs; i++) {
        const onnx_func *f = &L->funcs[i];
        if (strcmp(f->name, op_type) == 0 && strcmp(onnx_norm_domain(f->domain), domain) == 0 && strcmp(f->overload, overload) == 0)
            return f;
    }
    return NULL;
}

/* "<prefix>/<name>", made unique in the graph with a numeric suffix. */
static const char *unique_name(onnx_load *L, onnx_gstate *gs, const char *prefix, const char *name) {
    size_t n = strlen(prefix) + strlen(name) + 32;
    char *s = lt_arena_alloc(&L->m->arena, n);
    if (!s) {
        onnx_nomem(L, "names");
        return NULL;
    }
    snprintf(s, n, "%s/%s", prefix, name);
    for (long k = 2; lt_strmap_get(&gs->all, s, strlen(s)); k++) snprintf(s, n, "%s/%s_%ld", prefix, name, k);
    return s;
}

lt_status onnx_func_define(onnx_load *L, onnx_scope *sc, const char *name, const uint8_t *at, const char *who, lt_value **out) {
    onnx_call *c = sc->call;
    const onnx_func *fn = c->fn;
    if (lt_strmap_get(&sc->own, name, strlen(name)))
        return onnx_err(L, at, LT_ERR_INVALID, "function '%s': %s: output '%s' is defined more than once", fn->name, who, name);
    lt_value *v = NULL;
    for (int i = 0; i < fn->n_out; i++) {
        if (strcmp(fn->outputs[i], name) != 0 || !c->actual_out[i]) continue;
        LT_TRY(onnx_define_in(L, c->caller, c->actual_out[i], at, who, &v));
        c->produced[i] = v;
        break;
    }
    if (!v) {
        const char *u = unique_name(L, sc->gs, c->prefix, name);
        if (!u) return LT_ERR_NOMEM;
        LT_TRY(onnx_new_value(L, sc, u, &v));
    }
    if (!lt_strmap_put(&sc->own, name, v)) return onnx_nomem(L, "value table");
    *out = v;
    return LT_OK;
}

/* Identity node copying `src` into the caller's output named `actual`. */
static lt_status add_identity(onnx_load *L, onnx_scope *fsc, lt_value *src, const char *actual, int i, const uint8_t *at) {
    onnx_gstate *gs = fsc->gs;
    lt_node *node = lt_arena_alloc(&L->m->arena, sizeof *node);
    lt_value **in = lt_arena_alloc(&L->m->arena, sizeof *in);
    lt_value **out = lt_arena_alloc(&L->m->arena, sizeof *out);
    size_t nl = strlen(fsc->call->prefix) + 32;
    char *name = lt_arena_alloc(&L->m->arena, nl);
    if (!node || !in || !out || !name) return onnx_nomem(L, "nodes");
    snprintf(name, nl, "%s/output_%d", fsc->call->prefix, i);
    node->index = gs->nodes.n;
    node->name = name;
    node->op_type = "Identity";
    node->domain = "";
    node->op = lt_op_lookup("", "Identity");
    node->opset = (int)onnx_scope_opset(L, fsc, "");
    node->graph = gs->g;
    node->n_in = node->n_out = 1;
    node->in = in;
    node->out = out;
    in[0] = src;
    char who[300];
    snprintf(who, sizeof who, "node %d '%.200s' (Identity)", node->index, name);
    lt_value *v;
    LT_TRY(onnx_define_in(L, fsc->call->caller, actual, at, who, &v));
    v->producer = node;
    v->producer_out = 0;
    out[0] = v;
    if (!lt_vec_push(&gs->nodes, node)) return onnx_nomem(L, "node list");
    return LT_OK;
}

static lt_status inline_body(onnx_load *L, onnx_scope *fsc, const onnx_func *fn, lt_value **in, int n_in, int depth_calls) {
    onnx_call *c = fsc->call;
    for (int i = 0; i < fn->n_in; i++) {
        if (!*fn->inputs[i]) continue;
        lt_value *v = i < n_in && in[i] ? in[i] : &onnx_absent_value;
        if (!lt_strmap_put(&fsc->own, fn->inputs[i], v)) return onnx_nomem(L, "value table");
    }
    for (int i = 0; i < fn->n_nodes; i++) LT_TRY(onnx_import_node(L, fsc, fn->nodes[i], depth_calls + 1));
    for (int i = 0; i < fn->n_out; i++) {
        if (!c->actual_out[i] || c->produced[i]) continue;
        lt_value *v = lt_strmap_get(&fsc->own, fn->outputs[i], strlen(fn->outputs[i]));
        if (!v || v == &onnx_absent_value)
            return onnx_err(L, fn->proto.p, LT_ERR_INVALID, "function '%s': output '%s' is never produced", fn->name, fn->outputs[i]);
        LT_TRY(add_identity(L, fsc, v, c->actual_out[i], i, fn->proto.p));
    }
    return LT_OK;
}

lt_status onnx_inline_call(onnx_load *L, onnx_scope *sc, const onnx_func *fn, const char *node_name, lt_value **in, int n_in,
                           const char **out_names, int n_out, const lt_attr *attrs, int n_attrs, int depth_calls) {
    if (depth_calls >= LT_ONNX_MAX_INLINE_DEPTH)
        return onnx_err(L, fn->proto.p, LT_ERR_INVALID, "function '%s': calls nested deeper than %d (a recursive function?)", fn->name,
                        LT_ONNX_MAX_INLINE_DEPTH);
    if (n_in > fn->n_in || n_out > fn->n_out)
        return onnx_err(L, fn->proto.p, LT_ERR_INVALID, "function '%s' takes %d inputs and %d outputs; node '%s' gives %d and %d",
                        fn->name, fn->n_in, fn->n_out, node_name, n_in, n_out);
    onnx_call c = {.fn = fn, .attrs = attrs, .n_attrs = n_attrs, .caller = sc, .depth = depth_calls};
    size_t pl = strlen(*node_name ? node_name : fn->name) + 32;
    char *prefix = lt_arena_alloc(&L->m->arena, pl);
    c.actual_out = lt_arena_alloc(&L->scratch, (size_t)(fn->n_out + 1) * sizeof *c.actual_out);
    c.produced = lt_arena_alloc(&L->scratch, (size_t)(fn->n_out + 1) * sizeof *c.produced);
    if (!prefix || !c.actual_out || !c.produced) return onnx_nomem(L, "function call");
    snprintf(prefix, pl, "%s#%lld", *node_name ? node_name : fn->name, (long long)++L->inline_count);
    c.prefix = prefix;
    for (int i = 0; i < n_out; i++) c.actual_out[i] = out_names[i];
    onnx_scope fsc = {.gs = sc->gs, .parent = NULL, .call = &c, .is_function = true};
    fsc.names = &fsc.own;
    lt_status st = inline_body(L, &fsc, fn, in, n_in, depth_calls);
    lt_strmap_free(&fsc.own);
    return st;
}
