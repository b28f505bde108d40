/* split_body.c — the subgraphs a plan's host steps run (a Loop's body, an If's branches, a Scan's
 * body), compiled at run time instead of interpreted.
 *
 * A host step's evaluator runs subgraphs through lt_eval.run_subgraph (ops.h). A plan whose host
 * steps hold subgraphs gets this runner (lt_plan_set_subgraphs). At a subgraph's first call with
 * given input dtypes and ranks, the subgraph is written as an ONNX model of its own: its inputs, then
 * the outer-scope values it (or a graph nested in it) reads, each with the dtype and rank of the
 * datum it is called with and every dim an unnamed symbolic one; its initializers; its nodes; its
 * outputs. That model is compiled as a family (src/compile/family.h), as the rest of a split model
 * is: each call selects the plan of its shapes, with no C compiler or NVRTC run for shapes whose
 * bucket exists, so a Loop's iterations run compiled kernels. The model bytes are shared through the
 * family's rest cache, so the plans of a symbolic model compile one body once.
 *
 * The interpreter runs a subgraph instead (and keeps running it) when it cannot be written or
 * compiled (a sequence input, an output of unknown type, a name two scopes share, a compile error —
 * the interpreter then reports any real error in its own words), or when its shapes change from call
 * to call (a Loop whose state grows: a new plan per iteration would cost more than it saves). The
 * report lists each subgraph, compiled (its buckets) or interpreted (why).
 */
#include "split_impl.h"

#include "../base/hash.h"
#include "../interp/interp.h"
#include "../onnx/onnx_writer.h"
#include "../passes/mutate.h"
#include "../passes/util.h"

#include <stdio.h>
#include <string.h>

/* Calls after which a subgraph whose every call so far built a plan of its own goes back to the
 * interpreter. */
#define BODY_SHAPES_MAX 4
/* Inputs (and roots) a call handles in stack arrays, without allocating: the common case, once per
 * iteration of a Loop. */
#define STACK_INPUTS 16

typedef struct body {
    const lt_graph *g;
    int n_in;                  /* inputs it is called with (g->n_inputs), then n_roots outer values */
    lt_value **roots;          /* the outer-scope values it reads (the ones that hold them) */
    int n_roots;
    lt_dtype *dtypes;          /* the signature it was compiled for: per input and root */
    int *ranks;
    rest_model *rm;            /* compiled: its model and family; NULL: interpreted */
    char why[200];             /* interpreted: why */
    int64_t calls;
    /* a Loop's body: the Loops the plan ran itself (loop_run.c), or why it does not */
    int64_t loop_runs;
    char loop_why[160];
} body;

typedef struct bodies {
    const lt_model *m;         /* the plan's model (owns the subgraphs) */
    rest_model opts;           /* only its compile options (and their strings) */
    lt_arena arena;            /* bodies' arrays */
    body *v;
    int n, cap;
} bodies;

/* ---- the outer values a subgraph reads ---- */

static bool in_graph(const lt_graph *g, const lt_value *v) {
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v;
}

/* The value outside r->g that v (of r->g or of a graph nested in it) reads, or NULL: follow the
 * chain of outer references; one that reaches a value of r->g itself stays inside. */
static lt_value *outside_root(const value_set *r, lt_value *v) {
    if (!v->outer) return NULL;
    lt_value *u = v;
    while (u->outer) {
        u = u->outer;
        if (in_graph(r->g, u) && !u->outer) return NULL;
    }
    return in_graph(r->g, u) ? NULL : u;
}

static lt_status add_roots(lt_ctx *ctx, lt_graph *sg, void *user) {
    (void)ctx;
    value_set *r = user;
    for (int i = 0; i < sg->n_values; i++) {
        lt_value *root = outside_root(r, sg->values[i]);
        if (root) lt_split_vset_add(r, root);
    }
    return LT_OK;
}

/* ---- writing and compiling one subgraph ---- */

static lt_status clone_value(lt_ctx *ctx, lt_arena *a, const char *name, lt_dtype dt, int rank, bool input, lt_value **out) {
    lt_value *cl = lt_arena_alloc(a, sizeof *cl);
    lt_dim *dims = rank > 0 ? lt_arena_alloc(a, (size_t)rank * sizeof *dims) : NULL;
    if (!cl || (rank > 0 && !dims)) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (subgraph)");
    memset(cl, 0, sizeof *cl);
    cl->name = name;
    cl->is_input = input, cl->is_output = !input;
    cl->type.kind = LT_TK_TENSOR, cl->type.dtype = dt, cl->type.rank = rank, cl->type.dims = dims;
    for (int d = 0; d < rank; d++) dims[d] = (lt_dim){-1, NULL};
    *out = cl;
    return LT_OK;
}

/* The name of input i of b's model: the subgraph's inputs, then the outer values. */
static const char *in_name(const body *b, int i) {
    return i < b->n_in ? b->g->inputs[i]->name : b->roots[i - b->n_in]->name;
}

/* Do two of the model's inputs share a name? */
static bool names_clash(const body *b) {
    for (int i = 0; i < b->n_in + b->n_roots; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(in_name(b, i), in_name(b, j))) return true;
    return false;
}

static lt_status write_body(lt_ctx *ctx, const bodies *bs, body *b, rest_model *rm) {
    const lt_graph *g = b->g;
    lt_arena *a = &rm->arena;
    int n_vals = b->n_in + b->n_roots;
    for (int i = 0; i < g->n_values; i++) n_vals += g->values[i]->init && !g->values[i]->is_input && !g->values[i]->outer;
    lt_graph tg = {.name = g->name ? g->name : "body", .n_inputs = b->n_in + b->n_roots, .n_outputs = g->n_outputs,
                   .n_nodes = g->n_nodes, .nodes = g->nodes};
    lt_model tm = *bs->m;
    tm.graph = &tg;
    tg.model = &tm;
    tg.inputs = lt_arena_alloc(a, ((size_t)tg.n_inputs + 1) * sizeof *tg.inputs);
    tg.values = lt_arena_alloc(a, ((size_t)n_vals + 1) * sizeof *tg.values);
    tg.outputs = lt_arena_alloc(a, ((size_t)g->n_outputs + 1) * sizeof *tg.outputs);
    if (!tg.inputs || !tg.values || !tg.outputs) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (subgraph)");
    for (int i = 0; i < tg.n_inputs; i++) {
        LT_TRY(clone_value(ctx, a, in_name(b, i), b->dtypes[i], b->ranks[i], true, &tg.inputs[i]));
        tg.values[tg.n_values++] = tg.inputs[i];
    }
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init && !g->values[i]->is_input && !g->values[i]->outer) tg.values[tg.n_values++] = g->values[i];
    for (int k = 0; k < g->n_outputs; k++) {
        const lt_type *t = &g->outputs[k]->type;
        LT_TRY(clone_value(ctx, a, g->outputs[k]->name, t->dtype, -1, false, &tg.outputs[k]));
        tg.outputs[k]->type.rank = -1, tg.outputs[k]->type.dims = NULL;
    }
    LT_TRY(lt_onnx_write_model(ctx, &tm, &rm->bytes, &rm->size));
    lt_sha256_hex(rm->bytes, rm->size, rm->sha);
    return LT_OK;
}

/* Why the subgraph cannot be compiled from its definition (before any write), or NULL. */
static const char *unwritable(const lt_graph *g, int n_inputs) {
    if (n_inputs != g->n_inputs) return "called with fewer inputs than it declares";
    for (int k = 0; k < g->n_outputs; k++) {
        const lt_type *t = &g->outputs[k]->type;
        if (t->kind != LT_TK_TENSOR || t->dtype == LT_UNDEFINED || t->dtype == LT_STRING)
            return "an output is not a numeric tensor of known type";
    }
    return NULL;
}

/* The datum of each root, borrowed. */
static lt_status root_datums(lt_eval *ev, const body *b, lt_datum **d) {
    for (int i = 0; i < b->n_roots; i++) LT_TRY(lt_interp_env_value(ev, b->roots[i], &d[i]));
    return LT_OK;
}

static bool numeric_tensor(const lt_datum *d) {
    return d && d->kind == LT_DK_TENSOR && d->tensor && d->tensor->dtype != LT_UNDEFINED && d->tensor->dtype != LT_STRING;
}

/* Compile b for the datums it is called with (in: inputs then roots); on a failure that is not out
 * of memory, b stays interpreted with the reason in b->why and the error is cleared. */
static lt_status compile_body(lt_ctx *ctx, bodies *bs, body *b, lt_datum *const *in) {
    int n = b->n_in + b->n_roots;
    for (int i = 0; i < n; i++)
        if (!numeric_tensor(in[i])) {
            snprintf(b->why, sizeof b->why, "%s '%s' is not a numeric tensor", i < b->n_in ? "input" : "outer value",
                     in_name(b, i));
            return LT_OK;
        }
    b->dtypes = lt_arena_alloc(&bs->arena, (size_t)n * sizeof *b->dtypes + 1);
    b->ranks = lt_arena_alloc(&bs->arena, (size_t)n * sizeof *b->ranks + 1);
    if (!b->dtypes || !b->ranks) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (subgraph)");
    for (int i = 0; i < n; i++) b->dtypes[i] = in[i]->tensor->dtype, b->ranks[i] = in[i]->tensor->rank;
    rest_model *rm = lt_split_rest_new(ctx);
    if (!rm) return LT_ERR_NOMEM;
    lt_status s = write_body(ctx, bs, b, rm);
    if (s != LT_OK) lt_split_rest_release(rm);
    else s = lt_split_rest_share(ctx, &bs->opts.opt, rm, &rm); /* releases rm when it fails */
    if (s != LT_OK) rm = NULL;
    if (s == LT_OK) s = lt_split_rest_family(ctx, rm);
    if (s == LT_OK) {
        b->rm = rm;
        return LT_OK;
    }
    lt_split_rest_release(rm);
    if (s == LT_ERR_NOMEM) return s;
    snprintf(b->why, sizeof b->why, "not compiled: %.180s", ctx->msg[0] ? ctx->msg : "error");
    lt_ctx_clear(ctx);
    return LT_OK;
}

/* ---- the runner ---- */

/* Are the datums of a call (inputs then roots) of the dtypes and ranks b was compiled for? */
static bool same_signature(const body *b, lt_datum *const *in, int n) {
    if (n != b->n_in + b->n_roots) return false;
    for (int k = 0; k < n; k++)
        if (!numeric_tensor(in[k]) || in[k]->tensor->dtype != b->dtypes[k] || in[k]->tensor->rank != b->ranks[k])
            return false;
    return true;
}

static lt_status new_body(lt_ctx *ctx, bodies *bs, const lt_graph *g, int n_inputs, body **out) {
    if (bs->n == bs->cap) {
        int cap = bs->cap ? 2 * bs->cap : 4;
        body *nv = lt_mem_realloc(bs->v, (size_t)cap * sizeof *nv);
        if (!nv) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (subgraph)");
        bs->v = nv, bs->cap = cap;
    }
    body *b = &bs->v[bs->n++];
    memset(b, 0, sizeof *b);
    b->g = g, b->n_in = n_inputs;
    *out = b;
    const char *why = unwritable(g, n_inputs);
    if (why) {
        snprintf(b->why, sizeof b->why, "%s", why);
        return LT_OK;
    }
    value_set r = {.g = g};
    lt_status s = lt_graph_foreach(ctx, (lt_graph *)g, false, add_roots, &r);
    if (s == LT_OK && r.nomem) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (subgraph)");
    if (s == LT_OK && r.n) {
        b->roots = lt_arena_alloc(&bs->arena, (size_t)r.n * sizeof *b->roots);
        if (b->roots) memcpy(b->roots, r.v, (size_t)r.n * sizeof *b->roots), b->n_roots = r.n;
        else s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (subgraph)");
    }
    lt_mem_free(r.v);
    if (s == LT_OK && names_clash(b)) snprintf(b->why, sizeof b->why, "an input and an outer value share a name");
    return s;
}

/* The plan of b's family for the shapes of the datums of a call (inputs then roots). */
static lt_status body_plan(lt_ctx *ctx, body *b, lt_datum *const *in, lt_plan **plan) {
    int n = b->n_in + b->n_roots;
    int ranks[STACK_INPUTS];
    const int64_t *dims[STACK_INPUTS];
    int *rk = n <= STACK_INPUTS ? ranks : lt_calloc(ctx, (size_t)n, sizeof *rk, "subgraph");
    const int64_t **dm = n <= STACK_INPUTS ? dims : lt_calloc(ctx, (size_t)n, sizeof *dm, "subgraph");
    lt_status s = rk && dm ? LT_OK : LT_ERR_NOMEM;
    for (int i = 0; i < n && s == LT_OK; i++) rk[i] = in[i]->tensor->rank, dm[i] = in[i]->tensor->dims;
    *plan = NULL;
    if (s == LT_OK) s = lt_family_plan(ctx, b->rm->fam, n, rk, dm, plan);
    if (s == LT_OK && !*plan) s = lt_error(ctx, LT_ERR_INTERNAL, "subgraph '%s': no plan", b->g->name ? b->g->name : "");
    if (rk != ranks) lt_mem_free(rk);
    if (dm != dims) lt_mem_free(dm);
    return s;
}

static lt_status run_compiled(lt_ctx *ctx, lt_eval *ev, body *b, lt_datum *const *in, lt_datum **outputs) {
    lt_plan *plan = NULL;
    LT_TRY(body_plan(ctx, b, in, &plan));
    lt_plan_run_options ro = {.seed = ev->rng, .max_loop_bytes = ev->max_loop_bytes};
    return lt_plan_run(ctx, plan, &ro, in, outputs);
}

/* A subgraph whose every call built a plan of its own goes back to the interpreter. */
static void check_shapes(body *b) {
    lt_family_stats st;
    lt_family_get_stats(b->rm->fam, &st);
    if (b->calls < BODY_SHAPES_MAX || st.plans_built * 2 <= b->calls) return;
    snprintf(b->why, sizeof b->why, "its shapes change from call to call (%d shapes in %lld calls)", st.plans_built,
             (long long)b->calls);
    lt_split_rest_release(b->rm);
    b->rm = NULL;
}

/* The record of subgraph g, made at its first call (*made then true). */
static lt_status find_body(lt_ctx *ctx, bodies *bs, const lt_graph *g, int n_inputs, body **b, bool *made) {
    *b = NULL, *made = false;
    for (int i = 0; i < bs->n && !*b; i++) *b = bs->v[i].g == g ? &bs->v[i] : NULL;
    if (*b) return LT_OK;
    *made = true;
    return new_body(ctx, bs, g, n_inputs, b);
}

static lt_status bodies_run(lt_eval *ev, const lt_graph *g, lt_datum *const *inputs, int n_inputs, lt_datum **outputs) {
    bodies *bs = ev->subgraph_user;
    lt_ctx *ctx = ev->ctx;
    body *b = NULL;
    bool made;
    LT_TRY(find_body(ctx, bs, g, n_inputs, &b, &made));
    if (b->why[0] || n_inputs != b->n_in) return lt_interp_subgraph(ev, g, inputs, n_inputs, outputs);
    int n = n_inputs + b->n_roots;
    lt_datum *stack[STACK_INPUTS];
    lt_datum **in = n <= STACK_INPUTS ? stack : lt_calloc(ctx, (size_t)n, sizeof *in, "subgraph inputs");
    if (!in) return LT_ERR_NOMEM;
    for (int i = 0; i < n_inputs; i++) in[i] = inputs[i];
    lt_status s = root_datums(ev, b, in + n_inputs);
    if (s == LT_OK && !b->rm) s = compile_body(ctx, bs, b, in);
    bool compiled = s == LT_OK && b->rm && same_signature(b, in, n);
    if (compiled) {
        b->calls++;
        s = run_compiled(ctx, ev, b, in, outputs);
        if (s == LT_OK) check_shapes(b);
    }
    if (in != stack) lt_mem_free(in);
    if (s != LT_OK || compiled) return s;
    return lt_interp_subgraph(ev, g, inputs, n_inputs, outputs); /* interpreted, or called with other dtypes */
}

static lt_status note_random(lt_ctx *ctx, lt_graph *g, void *user) {
    (void)ctx;
    for (int i = 0; i < g->n_nodes; i++) *(bool *)user |= lt_pu_is_random(g->nodes[i]);
    return LT_OK;
}

/* A Loop step: run by the plan itself (lt_loop_run) with its body's plan for the first iteration's
 * shapes, compiled now at the body's first call; *done false leaves it to the Loop's eval hook. */
static lt_status bodies_run_loop(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out, bool *done) {
    *done = false;
    bodies *bs = ev->subgraph_user;
    lt_ctx *ctx = ev->ctx;
    const lt_graph *g = lt_attr_graph(n, "body");
    int n_carried = n->n_in > 2 ? n->n_in - 2 : 0;
    if (!g || g->n_inputs != 2 + n_carried) return LT_OK;
    body *b = NULL;
    bool made, random = false;
    LT_TRY(find_body(ctx, bs, g, g->n_inputs, &b, &made));
    if (made) /* the interpreter draws from one stream across iterations; the plan's runs would not */
        lt_graph_foreach(NULL, (lt_graph *)g, false, note_random, &random);
    if (random) snprintf(b->loop_why, sizeof b->loop_why, "its body has random ops");
    if (b->why[0] || b->loop_why[0]) return LT_OK;
    for (int k = 0; k < n_carried; k++)
        if (!numeric_tensor(in[2 + k])) return LT_OK;
    int n_all = g->n_inputs + b->n_roots;
    lt_datum **all = lt_calloc(ctx, (size_t)n_all, sizeof *all, "loop");
    lt_tensor *it = NULL, *cond = NULL;
    lt_status s = all ? LT_OK : LT_ERR_NOMEM;
    if (s == LT_OK) s = lt_tensor_scalar_i64(ctx, LT_INT64, 0, &it);
    if (s == LT_OK) s = lt_datum_tensor(ctx, it, &all[0]);
    if (s == LT_OK) s = lt_tensor_scalar_i64(ctx, LT_BOOL, 1, &cond);
    if (s == LT_OK) s = lt_datum_tensor(ctx, cond, &all[1]);
    for (int k = 0; k < n_carried && s == LT_OK; k++) all[2 + k] = lt_datum_retain(in[2 + k]);
    if (s == LT_OK) s = root_datums(ev, b, all + g->n_inputs);
    if (s == LT_OK && !b->rm) s = compile_body(ctx, bs, b, all);
    lt_plan *plan = NULL;
    if (s == LT_OK && b->rm && same_signature(b, all, n_all)) s = body_plan(ctx, b, all, &plan);
    int64_t iters = 0;
    if (s == LT_OK && plan)
        s = lt_loop_run(ev, n, plan, in, all + g->n_inputs, b->n_roots, out, done, b->loop_why, sizeof b->loop_why, &iters);
    if (*done) b->calls += iters, b->loop_runs++;
    for (int k = 0; all && k < g->n_inputs; k++) lt_datum_release(all[k]); /* the roots are borrowed */
    lt_mem_free(all);
    return s;
}

static void bodies_free(void *user) {
    bodies *bs = user;
    if (!bs) return;
    for (int i = 0; i < bs->n; i++) lt_split_rest_release(bs->v[i].rm);
    lt_mem_free(bs->v);
    lt_arena_free(&bs->arena);
    lt_arena_free(&bs->opts.arena);
    lt_mem_free(bs);
}

static void bodies_print(void *user, lt_strbuf *out) {
    const bodies *bs = user;
    for (int i = 0; i < bs->n; i++) {
        const body *b = &bs->v[i];
        char label[256] = "";
        if (b->g->owner) lt_node_label(b->g->owner, label, sizeof label);
        lt_sb_printf(out, "subgraph '%s' of %s: ", b->g->name ? b->g->name : "", label);
        if (b->rm && b->rm->fam) {
            lt_sb_printf(out, "compiled at run time, %lld calls", (long long)b->calls);
            if (b->loop_runs) lt_sb_printf(out, ", the Loop run by the plan %lld times", (long long)b->loop_runs);
            if (b->loop_why[0]) lt_sb_printf(out, ", the Loop interpreted (%s)", b->loop_why);
            lt_sb_printf(out, ": ");
            lt_family_print(b->rm->fam, out);
        } else {
            lt_sb_printf(out, "interpreted: %s", b->why);
            if (b->loop_why[0]) lt_sb_printf(out, ", the Loop interpreted (%s)", b->loop_why);
            lt_sb_printf(out, "\n");
        }
    }
}

lt_status lt_split_attach_subgraphs(lt_ctx *ctx, const lt_model *m, const lt_compile_options *opt, lt_plan *p) {
    if (!lt_split_compiles_rest(opt) || !lt_plan_host_subgraphs(p)) return LT_OK;
    bodies *bs = lt_calloc(ctx, 1, sizeof *bs, "subgraph");
    if (!bs) return LT_ERR_NOMEM;
    bs->m = m;
    lt_arena_init(&bs->arena);
    lt_arena_init(&bs->opts.arena);
    lt_status s = lt_split_rest_options(ctx, opt, &bs->opts);
    if (s != LT_OK) {
        bodies_free(bs);
        return s;
    }
    bs->opts.opt.rest_cache = opt->rest_cache;
    lt_plan_subgraphs sub = {.user = bs, .run = bodies_run, .run_loop = bodies_run_loop, .free = bodies_free,
                             .print = bodies_print};
    lt_plan_set_subgraphs(p, &sub);
    return LT_OK;
}
