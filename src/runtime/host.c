/* host.c — host steps of a plan: one graph node run through its op's reference `eval` hook.
 *
 * Inputs are datums: CONST slots a datum over the initializer, INPUT slots the caller's datum,
 * DYNAMIC slots the datum an earlier host step produced, and fixed buffers (WORKSPACE, OUTPUT,
 * PACKED) a borrowed tensor over the buffer, made once at plan build (its data pointer is updated at
 * each run for the caller's memory; on a device plan, over the host copy: lt_plan_host_addr).
 * Outputs go back either into the fixed buffer (or host copy) of their slot
 * (copied, after checking dtype and shape against the plan) or, for DYNAMIC slots, kept as a datum —
 * detached first: any borrowed tensor inside (one of our buffer views, which an op such as Identity
 * may hand through) is copied, so no datum outlives the memory it points at.
 * The DataDependentRest step of a split model runs through the plan's rest hook (lt_plan_set_rest)
 * instead of an eval hook. Subgraphs (If, Loop, Scan) read main-graph values through ev->env: the plan fills an environment
 * with the values a step's subgraphs read just before the step and empties it after.
 * Entry points (plan_impl.h): lt_plan_host_prepare, lt_plan_host_run, lt_plan_slot_datum,
 * lt_plan_detach, lt_plan_host_free.
 */
#include "plan_impl.h"

#include <string.h>

lt_status lt_plan_host_prepare(lt_ctx *ctx, lt_plan *p) {
    const lt_graph *g = p->model->graph;
    p->env.graph = g;
    p->env.parent = NULL;
    p->env.vals = lt_calloc(ctx, (size_t)g->n_values + 1, sizeof *p->env.vals, "plan environment");
    if (!p->env.vals) return LT_ERR_NOMEM;
    for (int sl = 0; sl < p->n_slots; sl++) {
        lt_plan_slot *S = &p->slots[sl];
        lt_slot_rt *R = &p->rt[sl];
        const lt_value *v = S->value;
        if (S->kind == LT_SLOT_CONST || (S->kind == LT_SLOT_INPUT && v->init)) {
            lt_datum **dst = S->kind == LT_SLOT_CONST ? &R->wrapd : &R->dflt;
            LT_TRY(lt_datum_tensor(ctx, lt_tensor_retain(v->init), dst));
        }
        bool want_wrap = false;
        switch (S->kind) {
        case LT_SLOT_WORKSPACE:
        case LT_SLOT_PACKED: want_wrap = R->host_read; break;
        case LT_SLOT_INPUT:
        case LT_SLOT_OUTPUT: want_wrap = R->is_static; break;
        default: break;
        }
        if (!want_wrap) continue;
        /* INPUT / OUTPUT point at the caller's memory at run time; a placeholder until then */
        static char placeholder[LT_MEMPLAN_ALIGN] __attribute__((aligned(LT_MEMPLAN_ALIGN)));
        void *host = lt_plan_host_addr(p, sl);
        void *data = host ? host : placeholder;
        LT_TRY(lt_tensor_borrow(ctx, S->dtype, S->rank, S->dims, data, &R->wrap));
        LT_TRY(lt_datum_tensor(ctx, lt_tensor_retain(R->wrap), &R->wrapd));
    }
    return LT_OK;
}

void lt_plan_host_free(lt_plan *p) {
    if (!p->rt) return;
    for (int sl = 0; sl < p->n_slots; sl++) {
        lt_datum_release(p->rt[sl].wrapd);
        lt_tensor_release(p->rt[sl].wrap);
        lt_datum_release(p->rt[sl].dflt);
        lt_datum_release(p->rt[sl].cur);
    }
    lt_mem_free(p->env.vals);
    p->env.vals = NULL;
}

void *lt_plan_host_addr(const lt_plan *p, int sl) { return p->host_memory ? p->slots[sl].ptr : p->rt[sl].hptr; }

lt_datum *lt_plan_slot_datum(lt_plan *p, int sl) {
    const lt_plan_slot *S = &p->slots[sl];
    switch (S->kind) {
    case LT_SLOT_CONST:
    case LT_SLOT_WORKSPACE:
    case LT_SLOT_PACKED: return p->rt[sl].wrapd;
    case LT_SLOT_INPUT:
    case LT_SLOT_OUTPUT:
    case LT_SLOT_DYNAMIC: return p->rt[sl].cur;
    case LT_SLOT_CHECK: return NULL; /* kernels' only */
    }
    return NULL;
}

/* ---- detaching ---- */

static bool needs_detach(const lt_datum *d) {
    if (!d) return false;
    switch (d->kind) {
    case LT_DK_TENSOR: return d->tensor && d->tensor->borrowed;
    case LT_DK_SEQUENCE:
        for (int i = 0; i < d->n; i++)
            if (needs_detach(d->items[i])) return true;
        return false;
    case LT_DK_OPTIONAL: return needs_detach(d->value);
    case LT_DK_MAP: return (d->keys && d->keys->borrowed) || (d->values && d->values->borrowed);
    }
    return false;
}

/* A new reference to a datum equal to d with no borrowed tensor inside. */
static lt_status detached(lt_ctx *ctx, lt_datum *d, lt_datum **out) {
    if (!needs_detach(d)) {
        *out = lt_datum_retain(d);
        return LT_OK;
    }
    switch (d->kind) {
    case LT_DK_TENSOR: {
        lt_tensor *t = NULL;
        LT_TRY(lt_tensor_copy(ctx, d->tensor, &t));
        return lt_datum_tensor(ctx, t, out);
    }
    case LT_DK_SEQUENCE: {
        lt_datum *seq = NULL;
        LT_TRY(lt_datum_sequence(ctx, d->elem_dtype, &seq));
        seq->elem_is_sequence = d->elem_is_sequence;
        for (int i = 0; i < d->n; i++) {
            lt_datum *item = NULL;
            lt_status s = detached(ctx, d->items[i], &item);
            if (s == LT_OK) s = lt_datum_seq_push(ctx, seq, item);
            if (s != LT_OK) {
                lt_datum_release(seq);
                return s;
            }
        }
        *out = seq;
        return LT_OK;
    }
    case LT_DK_OPTIONAL: {
        lt_datum *v = NULL;
        LT_TRY(detached(ctx, d->value, &v));
        return lt_datum_optional(ctx, v, d->elem_dtype, out);
    }
    case LT_DK_MAP: {
        lt_datum *m = lt_calloc(ctx, 1, sizeof *m, "map");
        if (!m) return LT_ERR_NOMEM;
        m->refs = 1;
        m->kind = LT_DK_MAP;
        m->elem_dtype = d->elem_dtype;
        lt_status s = LT_OK;
        if (d->keys) s = d->keys->borrowed ? lt_tensor_copy(ctx, d->keys, &m->keys) : (m->keys = lt_tensor_retain(d->keys), LT_OK);
        if (s == LT_OK && d->values)
            s = d->values->borrowed ? lt_tensor_copy(ctx, d->values, &m->values)
                                    : (m->values = lt_tensor_retain(d->values), LT_OK);
        if (s != LT_OK) {
            lt_datum_release(m);
            return s;
        }
        *out = m;
        return LT_OK;
    }
    }
    return lt_error(ctx, LT_ERR_INTERNAL, "plan: unknown datum kind %d", (int)d->kind);
}

lt_status lt_plan_detach(lt_ctx *ctx, lt_datum **d) {
    if (!needs_detach(*d)) return LT_OK;
    lt_datum *n = NULL;
    LT_TRY(detached(ctx, *d, &n));
    lt_datum_release(*d);
    *d = n;
    return LT_OK;
}

/* ---- running one host step ---- */

static lt_status store_output(lt_ctx *ctx, lt_plan *p, const lt_plan_step *st, int k, lt_datum **d) {
    int sl = st->out_slots[k];
    lt_plan_slot *S = &p->slots[sl];
    char label[256];
    if (S->kind == LT_SLOT_DYNAMIC) {
        LT_TRY(lt_plan_detach(ctx, d));
        lt_datum_release(p->rt[sl].cur);
        p->rt[sl].cur = *d;
        *d = NULL;
        return LT_OK;
    }
    /* a fixed buffer: the kernels after it were compiled for this dtype and shape */
    const lt_tensor *t = (*d)->kind == LT_DK_TENSOR ? (*d)->tensor : NULL;
    bool ok = t && t->dtype == S->dtype && t->rank == S->rank;
    for (int j = 0; ok && j < t->rank; j++) ok = t->dims[j] == S->dims[j];
    if (!ok) {
        char want[128], got[128];
        return lt_error(ctx, LT_ERR_INVALID, "%s: output %d '%s' is %s but the plan was compiled for %s%s",
                        lt_node_label(st->node, label, sizeof label), k, S->value->name,
                        t ? lt_tensor_describe(t, got, sizeof got) : "not a tensor", lt_dtype_name(S->dtype),
                        lt_shape_str(S->rank, S->dims, want, sizeof want));
    }
    void *dst = lt_plan_host_addr(p, sl);
    if (S->bytes > 0 && !dst)
        return lt_error(ctx, LT_ERR_INTERNAL, "%s: output %d '%s' has no host memory", lt_node_label(st->node, label, sizeof label),
                        k, S->value->name);
    if (S->bytes > 0 && t->data != dst) memmove(dst, t->data, (size_t)S->bytes);
    lt_datum_release(*d);
    *d = NULL;
    return LT_OK;
}

lt_status lt_plan_host_run(lt_ctx *ctx, lt_plan *p, int i) {
    const lt_plan_step *st = &p->steps[i];
    const lt_node *n = st->node;
    char label[256];
    const lt_op_hooks *h = lt_op_hooks_get(n->op);
    if (!h->eval)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "%s: operator %s%s%s (opset %d) is not supported",
                        lt_node_label(n, label, sizeof label), *n->domain ? n->domain : "", *n->domain ? "." : "",
                        n->op_type, n->opset);
    lt_datum *in_stack[16], *out_stack[16];
    lt_datum **in = n->n_in <= 16 ? in_stack : lt_calloc(ctx, (size_t)n->n_in, sizeof *in, "host step inputs");
    lt_datum **out = n->n_out <= 16 ? out_stack : lt_calloc(ctx, (size_t)n->n_out, sizeof *out, "host step outputs");
    lt_status s = LT_OK;
    const int *outer = p->outer_vals[i];
    for (int k = 0; in && k < n->n_in; k++) in[k] = NULL;
    if (!in || !out) { s = LT_ERR_NOMEM; goto done; }
    for (int k = 0; k < n->n_out; k++) out[k] = NULL;
    for (int k = 0; k < n->n_in; k++) {
        if (st->dev_in && st->dev_in[k]) { /* the rest reads it on the device: a tensor over its device address */
            const lt_plan_slot *S = &p->slots[st->in_slots[k]];
            lt_tensor *t = NULL;
            in[k] = NULL;
            if ((s = lt_tensor_borrow(ctx, S->dtype, S->rank, S->dims, S->ptr, &t)) != LT_OK ||
                (s = lt_datum_tensor(ctx, t, &in[k])) != LT_OK)
                goto done;
            continue;
        }
        in[k] = st->in_slots[k] >= 0 ? lt_plan_slot_datum(p, st->in_slots[k]) : NULL;
        if (st->in_slots[k] >= 0 && !in[k]) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "%s: input %d '%s' has no value at run time",
                         lt_node_label(n, label, sizeof label), k, n->in[k]->name);
            goto done;
        }
    }
    for (int k = 0; outer && outer[k] >= 0; k++) {
        int sl = p->value_slot[outer[k]];
        p->env.vals[outer[k]] = sl >= 0 ? lt_plan_slot_datum(p, sl) : NULL;
    }
    lt_eval ev = {.ctx = ctx, .rng = p->rng, .env = &p->env, .model = p->model,
                  .run_subgraph = p->subgraphs.run ? p->subgraphs.run : lt_interp_subgraph,
                  .subgraph_user = p->subgraphs.user, .max_loop_bytes = p->max_loop_bytes};
    if (n->op == LT_OP_DataDependentRest && p->rest.run) { /* the rest of a split model */
        lt_plan_run_options ro = {.seed = p->rng, .max_loop_bytes = p->max_loop_bytes};
        if (st->dev_in) s = p->backend->vt->sync(p->backend, ctx); /* the kernels that wrote them are done */
        if (s == LT_OK)
            s = p->rest.run(p->rest.user, ctx, &ro, in, st->dev_in, p->backend, n->n_in, out, n->n_out, &p->copies);
    } else if (st->dev_in) {
        s = lt_error(ctx, LT_ERR_INTERNAL, "%s: reads device memory but the plan has no rest", lt_node_label(n, label, sizeof label));
    } else {
        bool done = false;
        if (n->op == LT_OP_Loop && p->subgraphs.run_loop) s = p->subgraphs.run_loop(&ev, n, in, out, &done);
        if (s == LT_OK && !done) s = h->eval(&ev, n, in, out);
    }
    if (s == LT_OK && ctx->status != LT_OK) s = ctx->status; /* an op that reported but returned OK */
    p->rng = ev.rng;
    for (int k = 0; outer && outer[k] >= 0; k++) {
        int sl = p->value_slot[outer[k]];
        lt_datum *mine = sl >= 0 ? lt_plan_slot_datum(p, sl) : NULL;
        if (p->env.vals[outer[k]] != mine) lt_datum_release(p->env.vals[outer[k]]); /* made by the lookup */
        p->env.vals[outer[k]] = NULL;
    }
    for (int k = 0; k < n->n_out && s == LT_OK; k++) {
        if (st->out_slots[k] < 0) continue;
        if (!out[k]) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "%s: output %d '%s' was not produced",
                         lt_node_label(n, label, sizeof label), k, n->out[k]->name);
            break;
        }
        s = store_output(ctx, p, st, k, &out[k]);
    }
    for (int k = 0; k < n->n_out; k++) lt_datum_release(out[k]);
done:
    for (int k = 0; in && st->dev_in && k < n->n_in; k++)
        if (st->dev_in[k]) lt_datum_release(in[k]); /* made here; the others are the plan's */
    if (in && in != in_stack) lt_mem_free(in);
    if (out && out != out_stack) lt_mem_free(out);
    return s;
}
