/* loop_run.c — a Loop of a host step run by the plan: its body's compiled plan (split_body.c) run
 * once per iteration on buffers bound once, instead of the interpreter's Loop.
 *
 * The interpreter's Loop makes new tensors every iteration (the iteration number, the condition,
 * each output of the body) and stacks the scan outputs at the end. When the body's plan has static
 * shapes and hands each loop-carried value on with the dtype and shape it came in with, this runs
 * the iterations itself:
 *   - the body's plan runs on caller memory (lt_plan_run_buffers): nothing is allocated per iteration;
 *   - each loop-carried value has two buffers, read from one and written into the other in turn (the
 *     first iteration reads the Loop's input in place);
 *   - each scan output is one tensor that the body writes slice i of at iteration i, in place: sized
 *     to the trip count when it is known and small enough, else grown by doubling, within the limit
 *     of max_loop_bytes (the interpreter's, with its message);
 *   - the condition the body computes is read after each iteration.
 * Anything else is left to the caller, which interprets the Loop (and reports its errors in the
 * interpreter's words): a missing or non-scalar trip count or condition, zero iterations, a body
 * output without a static shape, a loop-carried value that changes dtype or shape, a body with
 * random ops (the interpreter draws from one stream across iterations).
 */
#include "split_impl.h"

#include "../passes/mutate.h"
#include "../passes/util.h"

#include <stdio.h>
#include <string.h>

/* Scan outputs whose whole size (trip count x slice) is at most this are allocated at once. */
#define SCAN_AT_ONCE_BYTES ((int64_t)64 << 20)
#define SCAN_FIRST_CAP 16

typedef struct scan_out {
    lt_tensor *t;          /* dims[0]: the iterations it has room for */
    int64_t slice;         /* bytes per iteration */
    int64_t slice_numel;   /* elements per iteration */
} scan_out;

static lt_status note_random(lt_ctx *ctx, lt_graph *g, void *user) {
    (void)ctx;
    for (int i = 0; i < g->n_nodes; i++) *(bool *)user |= lt_pu_is_random(g->nodes[i]);
    return LT_OK;
}

/* The value of a one-element tensor of dtype dt, or false. */
static bool scalar_of(const lt_datum *d, lt_dtype dt, int64_t *v) {
    if (!d || d->kind != LT_DK_TENSOR || d->tensor->dtype != dt || d->tensor->numel != 1) return false;
    *v = dt == LT_BOOL ? (int64_t)(*(const uint8_t *)d->tensor->data != 0) : *(const int64_t *)d->tensor->data;
    return true;
}

static bool same_as_slot(const lt_tensor *t, const lt_plan_slot *S) {
    if (t->dtype != S->dtype || t->rank != S->rank) return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] != S->dims[d]) return false;
    return true;
}

/* Why plan cannot run n's iterations as its body (NULL: it can). */
static const char *unfit(const lt_node *n, lt_plan *plan, lt_datum *const *in, int n_carried, int n_scan,
                         int n_roots) {
    const lt_graph *pg = lt_plan_model(plan)->graph;
    if (pg->n_outputs != 1 + n_carried + n_scan || lt_plan_n_inputs(plan) != 2 + n_carried + n_roots)
        return "its body's plan has other inputs or outputs than the Loop";
    for (int k = 0; k < pg->n_outputs; k++)
        if (lt_plan_output_bytes(plan, k) < 0) return "an output of its body has no static shape";
    const lt_plan_slot *c = lt_plan_get_slot(plan, lt_plan_output_slot(plan, 0));
    if (!c || c->dtype != LT_BOOL || c->numel != 1) return "its body's condition is not one bool";
    for (int k = 0; k < n_carried; k++) {
        const lt_plan_slot *S = lt_plan_get_slot(plan, lt_plan_output_slot(plan, 1 + k));
        const lt_datum *d = in[2 + k];
        if (!S || !d || d->kind != LT_DK_TENSOR || !same_as_slot(d->tensor, S))
            return "a loop-carried value changes dtype or shape";
    }
    for (int k = 0; k < n_scan; k++) {
        const lt_plan_slot *S = lt_plan_get_slot(plan, lt_plan_output_slot(plan, 1 + n_carried + k));
        if (!S || S->rank + 1 > LT_MAX_RANK) return "a scan output has too many dims";
    }
    bool random = false;
    lt_graph_foreach(NULL, (lt_graph *)lt_attr_graph(n, "body"), false, note_random, &random);
    return random ? "its body has random ops" : NULL;
}

/* Room in every scan output for iteration it (the trip count max_trip bounds it), within the limit
 * of bytes the scan outputs may hold. */
static lt_status scan_room(lt_eval *ev, const lt_node *n, scan_out *sc, int n_scan, int64_t it, int64_t max_trip) {
    if (!n_scan || it < sc[0].t->dims[0]) return LT_OK;
    int64_t cap = it == 0 ? SCAN_FIRST_CAP : 2 * it, per = 0, bytes;
    for (int k = 0; k < n_scan; k++) per += sc[k].slice;
    if (it == 0 && per > 0 && max_trip <= SCAN_AT_ONCE_BYTES / per) cap = max_trip;
    if (cap > max_trip) cap = max_trip;
    int64_t limit = ev->max_loop_bytes > 0 ? ev->max_loop_bytes : LT_EVAL_DEFAULT_MAX_LOOP_BYTES;
    if (per > 0 && (it + 1) > limit / per)
        return lt_op_error(ev, n, LT_ERR_NOMEM, "the Loop's scan outputs would hold more than the limit of %lld bytes "
                           "(a Loop whose trip count or condition never ends? raise it with LATHE_MAX_LOOP_BYTES, or "
                           "max_loop_bytes in the C API and Python)", (long long)limit);
    if (per > 0 && cap > limit / per) cap = limit / per;
    for (int k = 0; k < n_scan; k++) {
        lt_tensor *t = sc[k].t;
        if (!lt_mul_i64(cap, sc[k].slice, &bytes)) return lt_error(ev->ctx, LT_ERR_NOMEM, "out of memory (loop scan outputs)");
        void *nd = lt_mem_realloc(t->data, (size_t)(bytes > 0 ? bytes : 1));
        if (!nd) return lt_error(ev->ctx, LT_ERR_NOMEM, "out of memory (loop scan outputs)");
        t->data = nd, t->dims[0] = cap, t->numel = cap * sc[k].slice_numel;
    }
    return LT_OK;
}

/* A scan output's tensor before its first iteration: dims [0, slice dims...]. */
static lt_status scan_new(lt_ctx *ctx, const lt_plan_slot *S, scan_out *out) {
    int64_t dims[LT_MAX_RANK] = {0};
    for (int d = 0; d < S->rank; d++) dims[1 + d] = S->dims[d];
    out->slice = S->bytes, out->slice_numel = S->numel;
    return lt_tensor_new(ctx, S->dtype, S->rank + 1, dims, &out->t);
}

lt_status lt_loop_run(lt_eval *ev, const lt_node *n, lt_plan *plan, lt_datum *const *in, lt_datum *const *roots,
                      int n_roots, lt_datum **out, bool *done, char *why, size_t why_size, int64_t *iterations) {
    *done = false, *iterations = 0;
    lt_ctx *ctx = ev->ctx;
    const lt_graph *body = lt_attr_graph(n, "body");
    int n_carried = n->n_in > 2 ? n->n_in - 2 : 0, n_scan = n->n_out - n_carried;
    int64_t max_trip = INT64_MAX, cond = 1;
    bool has_m = n->n_in > 0 && in[0], has_c = n->n_in > 1 && in[1];
    if (!body || n_scan < 0 || body->n_inputs != 2 + n_carried || body->n_outputs != 1 + n_carried + n_scan ||
        (!has_m && !has_c) || (has_m && !scalar_of(in[0], LT_INT64, &max_trip)) ||
        (has_c && !scalar_of(in[1], LT_BOOL, &cond)) || max_trip <= 0 || !cond)
        return LT_OK; /* the interpreter's: errors, zero iterations */
    const char *w = unfit(n, plan, in, n_carried, n_scan, n_roots);
    if (w) {
        snprintf(why, why_size, "%s", w);
        return LT_OK;
    }
    int n_api = 2 + n_carried + n_roots, n_out = 1 + n_carried + n_scan;
    const void **ins = lt_calloc(ctx, (size_t)n_api, sizeof *ins, "loop");
    void **outs = lt_calloc(ctx, (size_t)n_out, sizeof *outs, "loop");
    lt_tensor **state = lt_calloc(ctx, 2 * (size_t)n_carried + 1, sizeof *state, "loop"); /* two per carried value */
    scan_out *sc = lt_calloc(ctx, (size_t)n_scan + 1, sizeof *sc, "loop");
    lt_status s = ins && outs && state && sc ? LT_OK : LT_ERR_NOMEM;
    for (int k = 0; k < 2 * n_carried && s == LT_OK; k++) {
        const lt_tensor *t = in[2 + k / 2]->tensor;
        s = lt_tensor_new(ctx, t->dtype, t->rank, t->dims, &state[k]);
    }
    for (int k = 0; k < n_scan && s == LT_OK; k++)
        s = scan_new(ctx, lt_plan_get_slot(plan, lt_plan_output_slot(plan, 1 + n_carried + k)), &sc[k]);
    for (int k = 0; k < n_carried && s == LT_OK; k++) ins[2 + k] = in[2 + k]->tensor->data;
    for (int k = 0; k < n_roots && s == LT_OK; k++) ins[2 + n_carried + k] = roots[k]->tensor->data;
    int64_t it = 0;
    uint8_t cond_in = 1, cond_out = 0;
    lt_plan_run_options ro = {.seed = ev->rng, .max_loop_bytes = ev->max_loop_bytes};
    for (; s == LT_OK && it < max_trip && cond; it++) {
        if ((s = scan_room(ev, n, sc, n_scan, it, max_trip)) != LT_OK) break;
        ins[0] = &it, ins[1] = &cond_in, outs[0] = &cond_out;
        for (int k = 0; k < n_carried; k++) outs[1 + k] = state[2 * k + (it & 1)]->data;
        for (int k = 0; k < n_scan; k++) outs[1 + n_carried + k] = (char *)sc[k].t->data + it * sc[k].slice;
        if ((s = lt_plan_run_buffers(ctx, plan, &ro, ins, outs)) != LT_OK) break;
        for (int k = 0; k < n_carried; k++) ins[2 + k] = outs[1 + k];
        cond = cond_out != 0;
    }
    for (int k = 0; k < n_carried && s == LT_OK; k++) { /* the buffer the last iteration wrote */
        lt_tensor *t = state[2 * k + ((it - 1) & 1)];
        state[2 * k + ((it - 1) & 1)] = NULL;
        s = lt_datum_tensor(ctx, t, &out[k]);
    }
    for (int k = 0; k < n_scan && s == LT_OK; k++) {
        lt_tensor *t = sc[k].t;
        sc[k].t = NULL;
        t->dims[0] = it, t->numel = it * sc[k].slice_numel;
        s = lt_datum_tensor(ctx, t, &out[n_carried + k]);
    }
    if (s == LT_OK) *done = true, *iterations = it;
    else
        for (int k = 0; k < n_out - 1; k++) {
            lt_datum_release(out[k]);
            out[k] = NULL;
        }
    for (int k = 0; state && k < 2 * n_carried; k++) lt_tensor_release(state[k]);
    for (int k = 0; sc && k < n_scan; k++) lt_tensor_release(sc[k].t);
    lt_mem_free(ins);
    lt_mem_free(outs);
    lt_mem_free(state);
    lt_mem_free(sc);
    return s == LT_ERR_NOMEM && !ctx->msg[0] ? lt_error(ctx, s, "out of memory (loop)") : s;
}
