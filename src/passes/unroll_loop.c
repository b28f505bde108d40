/* unroll_loop.c — a Loop of the main graph that always runs a trip count known at compile time
 * becomes copies of its body, which compile:
 *
 *   Loop(M, cond, v0...) with M a constant (or folded to one), cond omitted or a constant true, and a
 *   body whose condition output is its condition input passed through (or an Identity of it) or a
 *   constant true, so that it runs exactly max(M, 0) iterations:
 *     iteration i: the body's nodes copied before the Loop (lt_pu_copy_subgraph), its iteration
 *                  number a new int64 scalar constant i, its condition input a constant true, its
 *                  loop-carried inputs the previous iteration's carried outputs (v0 first)
 *     carried outputs: the last iteration's; scan outputs: each iteration's value Unsqueezed on
 *     axis 0 and Concatenated, as the spec stacks them. Body initializers become one constant each,
 *     shared by every copy.
 * Left to the interpreter: Loops inside subgraphs, bodies holding subgraphs (If, Loop, Scan) or
 * random ops, trip counts not known at compile time, a run-time or false-able condition (early exit),
 * zero iterations with scan outputs, more than MAX_TRIPS iterations or MAX_NODES copied nodes.
 * Level -O1; in the simplification group (after inline_if), so a trip count that folds from shapes
 * unrolls, and the next round folds and simplifies the copies.
 */
#include "util.h"

#define MAX_TRIPS 256
#define MAX_NODES 20000

static bool is_main_loop(const lt_node *n) { return n->op == LT_OP_Loop && !n->graph->parent; }

static bool const_true(const lt_value *v) {
    const lt_tensor *t = v ? lt_value_const(v) : NULL;
    return t && t->numel == 1 && t->dtype != LT_STRING && lt_load_f64(t->data, t->dtype, 0) != 0;
}

/* The body's condition output is its condition input (possibly through Identity) or a constant true. */
static bool body_continues(const lt_graph *body) {
    const lt_value *c = body->outputs[0];
    for (int depth = 0; c && depth < 8; depth++) {
        if (c == body->inputs[1] || const_true(c)) return true;
        const lt_node *p = c->producer;
        if (!p || p->graph != body || p->op != LT_OP_Identity || p->n_in < 1) return false;
        c = p->in[0];
    }
    return false;
}

/* The number of iterations the Loop always runs, or -1 when it is not known or not unrollable. */
static int64_t static_trips(const lt_node *n, const lt_graph *body, int n_carried, int n_scan) {
    const lt_tensor *mt = n->n_in > 0 && n->in[0] ? lt_value_const(n->in[0]) : NULL;
    if (!mt || mt->numel != 1 || !lt_dtype_is_int(mt->dtype)) return -1;
    int64_t trips = lt_load_i64(mt->data, mt->dtype, 0);
    if (n->n_in > 1 && n->in[1]) {
        const lt_tensor *ct = lt_value_const(n->in[1]);
        if (!ct || ct->numel != 1 || ct->dtype == LT_STRING) return -1;
        if (lt_load_f64(ct->data, ct->dtype, 0) == 0) trips = 0;
    }
    if (trips < 0) trips = 0;
    if (trips > MAX_TRIPS || (trips == 0 && n_scan > 0)) return -1;
    if (trips > 1 && !body_continues(body)) return -1;
    if ((int64_t)body->n_nodes * trips > MAX_NODES) return -1;
    for (int k = 0; k < n_scan; k++)
        if (body->outputs[1 + n_carried + k]->type.kind != LT_TK_TENSOR) return -1;
    return trips;
}

static bool body_copyable(const lt_graph *body) {
    for (int i = 0; i < body->n_nodes; i++)
        if (lt_node_has_subgraphs(body->nodes[i]) || lt_pu_is_random(body->nodes[i])) return false;
    return true;
}

typedef struct unroller {
    lt_ctx *ctx;
    lt_graph *g;
    lt_node *loop;
    const lt_graph *body;
    int n_carried, n_scan;
    int64_t trips;
    lt_value **cur;    /* [n_carried] the carried values so far */
    lt_value **scans;  /* [n_scan * trips] each iteration's scan values, Unsqueezed */
    lt_value **consts; /* [body->n_values] body initializers as constants of g */
    lt_value **ins, **outs;
    lt_value *axis0, *yes;
} unroller;

static lt_status scalar_const(unroller *u, lt_dtype dt, int64_t v, const char *hint, lt_value **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_scalar_i64(u->ctx, dt, v, &t));
    return lt_value_new_const(u->ctx, u->g, hint, t, out);
}

static lt_status iteration(unroller *u, int64_t it) {
    const lt_graph *b = u->body;
    LT_TRY(scalar_const(u, LT_INT64, it, b->inputs[0]->name, &u->ins[0]));
    u->ins[1] = u->yes;
    for (int i = 0; i < u->n_carried; i++) u->ins[2 + i] = u->cur[i];
    LT_TRY(lt_pu_copy_subgraph(u->ctx, u->g, u->loop, b, u->ins, u->consts, "unroll_loop", u->outs));
    for (int i = 0; i < u->n_carried; i++) u->cur[i] = u->outs[1 + i];
    for (int k = 0; k < u->n_scan; k++) {
        lt_value *in[2] = {u->outs[1 + u->n_carried + k], u->axis0};
        const char *hint = u->loop->out[u->n_carried + k] ? u->loop->out[u->n_carried + k]->name : "scan";
        LT_TRY(lt_pu_new_op(u->ctx, u->g, "Unsqueeze", 2, in, NULL, 0, hint, u->loop, &u->scans[k * u->trips + it]));
    }
    return LT_OK;
}

/* Loop output k becomes v; a value that is a graph input or already an output goes through an
 * Identity so that the output keeps its name. */
static lt_status replace_output(unroller *u, int k, lt_value *v) {
    lt_value *old = u->loop->out[k];
    return old ? lt_pu_replace_output(u->ctx, u->g, u->loop, old, v) : LT_OK;
}

static lt_status unroll(unroller *u) {
    int64_t zero = 0;
    lt_tensor *ax;
    LT_TRY(lt_pu_tensor_i64(u->ctx, 1, &zero, &ax));
    LT_TRY(lt_value_new_const(u->ctx, u->g, "axes", ax, &u->axis0));
    LT_TRY(scalar_const(u, LT_BOOL, 1, u->body->inputs[1]->name, &u->yes));
    for (int i = 0; i < u->n_carried; i++) u->cur[i] = u->loop->in[2 + i];
    for (int64_t it = 0; it < u->trips; it++) LT_TRY(iteration(u, it));
    for (int i = 0; i < u->n_carried; i++) LT_TRY(replace_output(u, i, u->cur[i]));
    for (int k = 0; k < u->n_scan; k++) {
        lt_value *v = u->scans[k * u->trips];
        lt_node *at = u->loop;
        if (u->trips > 1) {
            const char *hint = at->out[u->n_carried + k] ? at->out[u->n_carried + k]->name : "scan";
            LT_TRY(lt_pu_new_op(u->ctx, u->g, "Concat", (int)u->trips, u->scans + k * u->trips, "axis", 0, hint, at, &v));
        }
        LT_TRY(replace_output(u, u->n_carried + k, v));
    }
    return LT_OK;
}

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    const lt_graph *body = lt_attr_graph(n, "body");
    int n_carried = n->n_in > 2 ? n->n_in - 2 : 0, n_scan = n->n_out - n_carried;
    if (!body || n_scan < 0 || body->n_inputs != n_carried + 2 || body->n_outputs != n_carried + 1 + n_scan)
        return LT_OK; /* the interpreter reports the mismatch */
    for (int i = 0; i < n_carried; i++)
        if (!n->in[2 + i]) return LT_OK;
    int64_t trips = static_trips(n, body, n_carried, n_scan);
    if (trips < 0 || !body_copyable(body)) return LT_OK;
    unroller u = {.ctx = ctx, .g = g, .loop = n, .body = body, .n_carried = n_carried, .n_scan = n_scan, .trips = trips};
    u.cur = lt_calloc(ctx, (size_t)n_carried + 1, sizeof *u.cur, "unroll_loop state");
    u.scans = lt_calloc(ctx, (size_t)(n_scan * trips) + 1, sizeof *u.scans, "unroll_loop scans");
    u.consts = lt_calloc(ctx, (size_t)body->n_values + 1, sizeof *u.consts, "unroll_loop constants");
    u.ins = lt_calloc(ctx, (size_t)body->n_inputs + 1, sizeof *u.ins, "unroll_loop inputs");
    u.outs = lt_calloc(ctx, (size_t)body->n_outputs + 1, sizeof *u.outs, "unroll_loop outputs");
    lt_status s = u.cur && u.scans && u.consts && u.ins && u.outs ? unroll(&u) : LT_ERR_NOMEM;
    lt_mem_free(u.cur);
    lt_mem_free(u.scans);
    lt_mem_free(u.consts);
    lt_mem_free(u.ins);
    lt_mem_free(u.outs);
    LT_TRY(s);
    lt_node_remove(g, n);
    *changed = true;
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)opt;
    return lt_pu_rewrite_each(ctx, m, is_main_loop, rewrite, changed);
}

const lt_pass lt_pass_unroll_loop = {.name = "unroll_loop", .min_level = 1, .run = run,
    .summary = "Loop with a trip count known at compile time and no early exit -> copies of its body"};
