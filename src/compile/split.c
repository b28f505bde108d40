/* split.c — the compile's split stage: the main graph cut at its data-dependent ops, the rest
 * written as a model of its own and run as a family of plans keyed by the sizes the data gives
 * (what and why: split.h). One pass over the nodes in order classifies each value (before the
 * cut, computed by the rest, a padded NonZero's output, a host frontier node's output); the rest
 * model is written from the classified nodes before the graph is rewritten.
 */
#include "split.h"

#include "family.h"
#include "../base/hash.h"
#include "../onnx/onnx.h"
#include "../onnx/onnx_writer.h"
#include "../passes/mutate.h"

#include <stdio.h>
#include <string.h>

/* What a main-graph value is to the cut. */
enum { V_HEAD, V_REST, V_PADDED, V_FRONTIER };

typedef struct rest_in {  /* one input of the rest model */
    int value_in;         /* the DataDependentRest node's input holding it (padded: the buffer) */
    int count_in;         /* padded: the node's input holding the count; -1 */
    int axis;             /* padded: the axis whose length is the count (the value is the buffer's
                           * first elements, compact, with that axis count long) */
} rest_in;

typedef struct rest_out { /* one output of the DataDependentRest node */
    int model_out;        /* the rest model's output it is, or -1: */
    int view_of;          /* a padded NonZero output the graph returns: this rest model input */
} rest_out;

/* The rest model and its family: one per split plan, or shared by the plans of a family whose shapes
 * split alike (lt_rest_cache: the same model bytes). */
typedef struct rest_model {
    int refs;
    char sha[65];         /* of bytes */
    uint8_t *bytes;       /* the rest model (ONNX) */
    size_t size;
    lt_arena arena;       /* the options' strings */
    lt_compile_options opt;
    lt_model *model;      /* as loaded, the family's (made at the first run) */
    lt_family *fam;
} rest_model;

struct lt_rest_cache {
    rest_model **v;
    int n, cap;
};

struct lt_split {
    lt_arena arena;
    int n_in, n_out, n_model_out;
    rest_in *ins;
    rest_out *outs;
    rest_model *rm;       /* NULL: the rest model was not written (a compile that builds no plan) */
    char first[256];      /* the first data-dependent node, for reports */
};

static void rest_release(rest_model *rm) {
    if (!rm || --rm->refs > 0) return;
    lt_family_free(rm->fam);
    lt_model_free(rm->model);
    lt_mem_free(rm->bytes);
    lt_arena_free(&rm->arena);
    lt_mem_free(rm);
}

lt_rest_cache *lt_rest_cache_new(void) { return lt_mem_calloc(1, sizeof(lt_rest_cache)); }

void lt_rest_cache_free(lt_rest_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) rest_release(c->v[i]);
    lt_mem_free(c->v);
    lt_mem_free(c);
}

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

typedef struct reads {
    const lt_graph *g;
    lt_value **v;         /* the main-graph values a node reads (inputs, then its subgraphs' references) */
    int n, cap;
    bool nomem;
} reads;

static void reads_add(reads *r, lt_value *v) {
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
    reads *r = user;
    for (int i = 0; i < sg->n_values; i++) {
        lt_value *root = outer_root(r->g, sg->values[i]);
        if (root) reads_add(r, root);
    }
    return LT_OK;
}

static lt_status node_reads(lt_ctx *ctx, const lt_node *n, reads *r) {
    r->n = 0;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]) reads_add(r, n->in[i]);
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

/* The cut: per value its class, per node whether it is in the rest. */
typedef struct cut {
    const lt_graph *g;
    unsigned char *vclass;  /* per value id */
    bool *rest, *padded;    /* per node index */
    int *pad_axis;          /* per value id: a padded output's data-decided axis (-1) */
    int n_rest, n_frontier, n_padded;
    const lt_node *first;   /* the first frontier node */
    lt_value **in;          /* the rest model's inputs: values crossing (V_HEAD, V_FRONTIER), padded outputs */
    int n_in;
    lt_value **inits;       /* initializers the rest reads */
    int n_inits;
    lt_value **outs;        /* the DataDependentRest node's outputs: graph outputs of the rest, then
                             * padded outputs the graph returns */
    int n_outs, n_model_out;
} cut;

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
    reads r = {.g = g};
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
        c->padded[i] = padded_axis(n, 0) >= 0;
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

/* ---- the rest model ---- */

/* A rest model input (or output): v's name, its type with each size the data decides an unnamed
 * symbolic dim; in a family's compile also each dim whose size is one of its symbolic dims' (outputs:
 * every dim), so the plans of its input shapes write the same rest model and share it
 * (lt_rest_cache) unless a size is derived (a flattened batch) or equal to a static one by chance.
 * Sizes 0 and 1 stay: the family gives them plans of their own anyway. Unnamed: the family probes
 * unnamed dims of one size together, so sizes one op gives several outputs (Unique's values and
 * counts, TopK's values and indices) move alike in its probes, and nothing requires them to agree (a
 * Split by computed sizes gives outputs of different sizes). */
static bool symbolic_size(const lt_compile_options *o, int64_t v) {
    for (int i = 0; v > 1 && i < o->n_symbolic_sizes; i++)
        if (o->symbolic_sizes[i] == v) return true;
    return false;
}

static lt_status value_clone(lt_ctx *ctx, lt_arena *a, const cut *c, const lt_compile_options *o, lt_value *v,
                             bool input, lt_value **out) {
    lt_value *cl = lt_arena_alloc(a, sizeof *cl);
    if (!cl) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    memset(cl, 0, sizeof *cl);
    cl->name = v->name;
    cl->is_input = input, cl->is_output = !input;
    LT_TRY(lt_type_copy(ctx, a, &cl->type, &v->type));
    for (int d = 0; d < cl->type.rank; d++) {
        int64_t size = cl->type.dims[d].value;
        bool data = input && c->vclass[v->id] == V_PADDED ? d == c->pad_axis[v->id] : size < 0;
        if (data || (o->shape_generic && (!input || symbolic_size(o, size)))) cl->type.dims[d] = (lt_dim){-1, NULL};
    }
    *out = cl;
    return LT_OK;
}

static lt_status write_rest(lt_ctx *ctx, const lt_model *m, const cut *c, const lt_compile_options *o, rest_model *rm) {
    const lt_graph *g = c->g;
    lt_arena *a = &rm->arena;
    lt_graph tg = {.name = "rest", .n_inputs = c->n_in, .n_outputs = c->n_model_out};
    lt_model tm = *m;
    tm.graph = &tg;
    tg.model = &tm;
    tg.inputs = lt_arena_alloc(a, ((size_t)c->n_in + 1) * sizeof *tg.inputs);
    tg.values = lt_arena_alloc(a, ((size_t)c->n_in + (size_t)c->n_inits + 1) * sizeof *tg.values);
    tg.nodes = lt_arena_alloc(a, ((size_t)c->n_rest + 1) * sizeof *tg.nodes);
    if (!tg.inputs || !tg.values || !tg.nodes) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    tg.outputs = lt_arena_alloc(a, ((size_t)c->n_model_out + 1) * sizeof *tg.outputs);
    if (!tg.outputs) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    for (int i = 0; i < c->n_in; i++) {
        LT_TRY(value_clone(ctx, a, c, o, c->in[i], true, &tg.inputs[i]));
        tg.values[tg.n_values++] = tg.inputs[i];
    }
    for (int i = 0; i < c->n_model_out; i++) LT_TRY(value_clone(ctx, a, c, o, c->outs[i], false, &tg.outputs[i]));
    for (int i = 0; i < c->n_inits; i++) tg.values[tg.n_values++] = c->inits[i];
    for (int i = 0; i < g->n_nodes; i++)
        if (c->rest[i]) tg.nodes[tg.n_nodes++] = g->nodes[i];
    LT_TRY(lt_onnx_write_model(ctx, &tm, &rm->bytes, &rm->size));
    lt_sha256_hex(rm->bytes, rm->size, rm->sha);
    return LT_OK;
}

/* The compile options of the rest's family: the outer compile's target and code generation, none of
 * its dumps, hooks or artifact options; strings copied. */
static lt_status rest_options(lt_ctx *ctx, const lt_compile_options *o, rest_model *rm) {
    lt_compile_options *r = &rm->opt;
    lt_compile_options_init(r);
    r->opt_level = o->opt_level, r->cc_timeout_s = o->cc_timeout_s, r->threads = o->threads, r->device = o->device;
    r->no_graphs = o->no_graphs, r->no_fusion = o->no_fusion, r->no_epilogues = o->no_epilogues;
    r->no_microkernels = o->no_microkernels, r->no_inplace = o->no_inplace, r->strict = o->strict;
    r->vector_lanes = o->vector_lanes;
    const char *const src[] = {o->backend, o->cache_dir, o->cc, o->extra_cflags, o->nvrtc, o->arch, o->disable, o->enable};
    const char **dst[] = {&r->backend, &r->cache_dir, &r->cc, &r->extra_cflags, &r->nvrtc, &r->arch, &r->disable, &r->enable};
    for (size_t i = 0; i < sizeof src / sizeof *src; i++)
        if (src[i] && !(*dst[i] = lt_arena_strdup(&rm->arena, src[i]))) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
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
        bool topk = n->op == LT_OP_TopK, nz = n->op == LT_OP_NonZero;
        const char *op = topk ? "TopKPadded" : nz ? "NonZeroPadded" : "CompressPadded";
        int n_data = topk ? 2 : 1; /* data outputs, then the count */
        if ((s = lt_node_new(ctx, g, op, "lathe", nz ? 1 : 2, n->in, n_data + 1, n->out[0]->name, n, &pn)) != LT_OK) break;
        pn->name = n->name;
        if (!nz) { /* the op's attributes and opset (its eval is the padded op's reference) */
            pn->opset = n->opset;
            if ((s = lt_node_copy_attrs(ctx, pn, n)) != LT_OK) break;
        }
        if ((s = lt_node_infer(ctx, pn)) != LT_OK) break;
        for (int k = 0; k < n_data; k++)
            if (n->out[k]) buf[n->out[k]->id] = pn->out[k], cnt[n->out[k]->id] = pn->out[pn->n_out - 1];
        gone[n_gone++] = n;
    }
    /* the rest node's inputs, in the rest model's input order */
    for (int i = 0; i < c->n_in && s == LT_OK; i++) {
        lt_value *v = c->in[i];
        bool pad = c->vclass[v->id] == V_PADDED;
        sp->ins[i] = (rest_in){n_rin, pad ? n_rin + 1 : -1, pad ? c->pad_axis[v->id] : -1};
        rin[n_rin++] = pad ? buf[v->id] : v;
        if (pad) rin[n_rin++] = cnt[v->id];
    }
    for (int i = 0; i < n_gone && s == LT_OK; i++) lt_node_remove(g, gone[i]);
    lt_node *rn = NULL;
    if (s == LT_OK) s = lt_node_new(ctx, g, "DataDependentRest", "lathe", n_rin, rin, c->n_outs, "rest", NULL, &rn);
    if (s == LT_OK) {
        char label[256], name[320];
        snprintf(name, sizeof name, "the rest after %s", lt_node_label(c->first, label, sizeof label));
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

/* The rest model of this cut: written, then the cache's when it holds the same bytes. */
static lt_status make_rest(lt_ctx *ctx, const lt_model *m, const lt_compile_options *opt, const cut *c,
                           rest_model **out) {
    rest_model *rm = lt_calloc(ctx, 1, sizeof *rm, "split");
    if (!rm) return LT_ERR_NOMEM;
    rm->refs = 1;
    lt_arena_init(&rm->arena);
    lt_status s = write_rest(ctx, m, c, opt, rm);
    if (s == LT_OK) s = rest_options(ctx, opt, rm);
    lt_rest_cache *cache = opt->rest_cache;
    for (int i = 0; s == LT_OK && cache && i < cache->n; i++)
        if (!strcmp(cache->v[i]->sha, rm->sha) && cache->v[i]->size == rm->size) {
            rest_release(rm);
            *out = cache->v[i];
            (*out)->refs++;
            return LT_OK;
        }
    if (s == LT_OK && cache && cache->n == cache->cap) {
        int cap = cache->cap ? 2 * cache->cap : 4;
        rest_model **nv = lt_mem_realloc(cache->v, (size_t)cap * sizeof *nv);
        if (nv) cache->v = nv, cache->cap = cap;
        else s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    }
    if (s != LT_OK) {
        rest_release(rm);
        return s;
    }
    if (cache) {
        cache->v[cache->n++] = rm;
        rm->refs++;
    }
    *out = rm;
    return LT_OK;
}

lt_status lt_split_graph(lt_ctx *ctx, lt_model *m, const lt_compile_options *opt, bool build_rest,
                         lt_compile_report *r, lt_split **out) {
    *out = NULL;
    if (opt->no_split || opt->all_host || opt->save_prebuilt || opt->prebuilt || !m->graph) return LT_OK;
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
    if (s == LT_OK && build_rest) s = make_rest(ctx, m, opt, &c, &sp->rm);
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

/* ---- running the rest ---- */

static lt_status rest_load(void *user, lt_ctx *ctx, lt_model **out) {
    const rest_model *rm = user;
    return lt_onnx_load_memory(ctx, rm->bytes, rm->size, NULL, NULL, out);
}

static lt_status rest_run(void *user, lt_ctx *ctx, const lt_plan_run_options *ro, lt_datum *const *in, int n_in,
                          lt_datum **out, int n_out, lt_plan_copies *copies) {
    lt_split *sp = user;
    rest_model *rm = sp->rm;
    if (n_out != sp->n_out || !rm)
        return lt_error(ctx, LT_ERR_INTERNAL, "the rest of a split model: %d outputs, %d expected", n_out, sp->n_out);
    if (!rm->fam && sp->n_model_out > 0) {
        if (!rm->model) LT_TRY(rest_load(rm, ctx, &rm->model));
        lt_family_options fo = {.compile = rm->opt, .model = rm->model, .load = rest_load, .load_user = rm};
        LT_TRY(lt_family_new(ctx, &fo, &rm->fam));
    }
    int n = sp->n_in;
    lt_datum **tin = lt_calloc(ctx, (size_t)n + 1, sizeof *tin, "rest inputs");
    lt_datum **tout = lt_calloc(ctx, (size_t)sp->n_model_out + 1, sizeof *tout, "rest outputs");
    int *ranks = lt_calloc(ctx, (size_t)n + 1, sizeof *ranks, "rest inputs");
    const int64_t **dims = lt_calloc(ctx, (size_t)n + 1, sizeof *dims, "rest inputs");
    lt_status s = tin && tout && ranks && dims ? LT_OK : LT_ERR_NOMEM;
    for (int i = 0; i < n && s == LT_OK; i++) {
        const rest_in *ri = &sp->ins[i];
        lt_datum *d = ri->value_in < n_in ? in[ri->value_in] : NULL;
        if (!d || d->kind != LT_DK_TENSOR || !d->tensor) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "the rest of a split model: input %d is not a tensor", i);
            break;
        }
        if (ri->count_in < 0) {
            tin[i] = lt_datum_retain(d);
        } else { /* the padded buffer's first elements, compact, the axis count long */
            const lt_datum *cd = ri->count_in < n_in ? in[ri->count_in] : NULL;
            const lt_tensor *b = d->tensor;
            int64_t count = cd && cd->kind == LT_DK_TENSOR && cd->tensor && cd->tensor->numel == 1
                                ? *(const int64_t *)cd->tensor->data : -1;
            int64_t len = ri->axis >= 0 && ri->axis < b->rank ? b->dims[ri->axis] : -1;
            if (len < 0 || count < 0 || count > len) {
                s = lt_error(ctx, LT_ERR_INVALID, "%s: the size the data gives, %lld, is outside 0..%lld", sp->first,
                             (long long)count, (long long)len);
                break;
            }
            int64_t vd[LT_MAX_RANK];
            memcpy(vd, b->dims, (size_t)b->rank * sizeof *vd);
            vd[ri->axis] = count;
            lt_tensor *t = NULL;
            s = lt_tensor_borrow(ctx, b->dtype, b->rank, vd, b->data, &t);
            if (s == LT_OK) s = lt_datum_tensor(ctx, t, &tin[i]);
        }
        if (s == LT_OK) ranks[i] = tin[i]->tensor->rank, dims[i] = tin[i]->tensor->dims;
    }
    lt_plan *plan = NULL;
    if (s == LT_OK && sp->n_model_out > 0) s = lt_family_plan(ctx, rm->fam, n, ranks, dims, &plan);
    if (s == LT_OK && plan) {
        s = lt_plan_run(ctx, plan, ro, tin, tout);
        lt_plan_copies cp;
        lt_plan_last_copies(plan, &cp);
        for (int d = 0; d < 3; d++) copies->n[d] += cp.n[d], copies->bytes[d] += cp.bytes[d];
    }
    for (int k = 0; k < n_out && s == LT_OK; k++) {
        const rest_out *o = &sp->outs[k];
        out[k] = o->model_out >= 0 ? tout[o->model_out] : lt_datum_retain(tin[o->view_of]);
        if (o->model_out >= 0) tout[o->model_out] = NULL;
    }
    for (int i = 0; tin && i < n; i++) lt_datum_release(tin[i]);
    for (int k = 0; tout && k < sp->n_model_out; k++) lt_datum_release(tout[k]);
    lt_mem_free(tin);
    lt_mem_free(tout);
    lt_mem_free(ranks);
    lt_mem_free(dims);
    return s == LT_ERR_NOMEM && !ctx->msg[0] ? lt_error(ctx, s, "out of memory (the rest of a split model)") : s;
}

void lt_split_free(lt_split *sp) {
    if (!sp) return;
    rest_release(sp->rm);
    lt_arena_free(&sp->arena);
    lt_mem_free(sp);
}

static void rest_free(void *user) { lt_split_free(user); }

static void rest_print(void *user, lt_strbuf *out) {
    const lt_split *sp = user;
    lt_sb_printf(out, "the rest after %s, compiled at run time for the sizes the data gives: ", sp->first);
    if (sp->rm && sp->rm->fam) lt_family_print(sp->rm->fam, out);
    else lt_sb_printf(out, "%s\n", sp->n_model_out ? "not run yet" : "nothing to compile (the outputs are views)");
}

void lt_split_attach(lt_split *sp, lt_plan *p) {
    lt_plan_rest rest = {.user = sp, .run = rest_run, .free = rest_free, .print = rest_print};
    lt_plan_set_rest(p, &rest);
}
