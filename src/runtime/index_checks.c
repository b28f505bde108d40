/* index_checks.c — the plan's checks of the indices its compiled Gathers and Scatters read.
 *
 * An index out of range must fail the run, naming the node, as the interpreter fails it; a kernel
 * only keeps its index expressions in range. Three cases, by where the indices come from:
 *   - constants: checked when the model was compiled (an out-of-range one leaves the node to the
 *     interpreter);
 *   - a model input (or a view of one: the embedding lookup of every transformer reads its token ids
 *     so): checked here on the host before each run, before anything is launched or copied to a
 *     device (lt_plan_index_checks_run), naming the node, the input and the element;
 *   - computed by the model: checked by the node's own kernel as it reads each index
 *     (lt_check_index, codegen/prelude/common.h), which records the violation in the plan's check
 *     word, one persistent int64[LT_CHECK_WORDS] buffer (device memory on a device) zero between
 *     runs; read after the steps (lt_plan_check_word_run: one small copy on a device), it fails the
 *     run naming the node, the element and the value, and is zeroed again.
 */
#include "plan_impl.h"

#include <stdio.h>
#include <string.h>

static lt_status add_check(lt_ctx *ctx, lt_plan *p, lt_vec *checks, const lt_node *n) {
    lt_index_rule rule;
    if (!lt_index_rule_of(n, &rule) || lt_infer_const(n, 1)) return LT_OK;
    const lt_value *src = lt_index_model_input(n->in[1]);
    if (!src) return LT_OK; /* computed: the kernel checks them */
    int sl = src && src->id >= 0 && src->id < p->model->graph->n_values ? p->value_slot[src->id] : -1;
    if (sl < 0 || p->slots[sl].kind != LT_SLOT_INPUT || !p->rt[sl].is_static)
        return lt_error(ctx, LT_ERR_INTERNAL, "plan: the indices of compiled node '%s' are no model input it can check",
                        n->name);
    lt_plan_index_check *c = lt_arena_alloc(p->arena, sizeof *c);
    if (!c) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
    c->slot = sl;
    c->node = n;
    c->rule = rule;
    return lt_vec_push(checks, c) ? LT_OK : lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
}

lt_status lt_plan_index_checks_build(lt_ctx *ctx, lt_plan *p) {
    lt_vec checks = {0};
    lt_status s = LT_OK;
    for (int i = 0; i < p->n_steps && s == LT_OK; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (st->kind != LT_STEP_KERNEL) continue;
        for (int k = 0; k < st->group->n_nodes && s == LT_OK; k++) s = add_check(ctx, p, &checks, st->group->nodes[k]);
    }
    if (s == LT_OK && checks.n) {
        p->index_checks = lt_arena_alloc(p->arena, sizeof(lt_plan_index_check *) * (size_t)checks.n);
        if (!p->index_checks) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
        for (int i = 0; s == LT_OK && i < checks.n; i++) p->index_checks[i] = checks.items[i];
        if (s == LT_OK) p->n_index_checks = checks.n;
    }
    lt_vec_free(&checks);
    return s;
}

lt_status lt_plan_index_checks_run(lt_ctx *ctx, const lt_plan *p) {
    for (int i = 0; i < p->n_index_checks; i++) {
        const lt_plan_index_check *c = p->index_checks[i];
        const lt_plan_slot *S = &p->slots[c->slot];
        const void *data = lt_plan_host_addr(p, c->slot);
        if (!data) continue; /* not bound: the run fails on the missing input */
        int64_t bad = lt_index_rule_violation(&c->rule, data, S->dtype, S->numel);
        if (bad < 0) continue;
        int64_t d = c->rule.dims[bad % c->rule.k];
        char label[160];
        return lt_error(ctx, LT_ERR_INVALID, "%s: index %lld (element %lld of input '%s') is out of range [%lld, %lld)",
                        lt_node_label(c->node, label, sizeof label), (long long)lt_load_i64(data, S->dtype, bad),
                        (long long)bad, S->value->name, (long long)-d, (long long)d);
    }
    return LT_OK;
}

lt_status lt_plan_check_word_alloc(lt_ctx *ctx, lt_plan *p) {
    if (p->check_slot < 0) return LT_OK;
    lt_plan_slot *S = &p->slots[p->check_slot];
    const lt_backend_vtbl *vt = p->backend->vt;
    LT_TRY(vt->alloc(p->backend, ctx, (size_t)S->bytes, &S->ptr));
    static const int64_t zero[LT_CHECK_WORDS];
    if (p->host_memory) {
        memcpy(S->ptr, zero, sizeof zero);
        return LT_OK;
    }
    return vt->copy(p->backend, ctx, S->ptr, zero, sizeof zero, LT_COPY_HOST_TO_DEVICE);
}

lt_status lt_plan_check_word_run(lt_ctx *ctx, lt_plan *p, bool report) {
    if (p->check_slot < 0) return LT_OK;
    lt_plan_slot *S = &p->slots[p->check_slot];
    const lt_backend_vtbl *vt = p->backend->vt;
    static const int64_t zero[LT_CHECK_WORDS];
    int64_t w[LT_CHECK_WORDS];
    if (p->host_memory) memcpy(w, S->ptr, sizeof w);
    else LT_TRY(vt->copy(p->backend, ctx, w, S->ptr, sizeof w, LT_COPY_DEVICE_TO_HOST));
    if (w[0] == 0) return LT_OK;
    /* zero it for the next run before reporting */
    if (p->host_memory) memcpy(S->ptr, zero, sizeof zero);
    else LT_TRY(vt->copy(p->backend, ctx, S->ptr, zero, sizeof zero, LT_COPY_HOST_TO_DEVICE));
    if (!report) return LT_OK;
    const lt_graph *g = p->model->graph;
    if (w[0] < 1 || w[0] > g->n_nodes)
        return lt_error(ctx, LT_ERR_INTERNAL, "plan: a kernel reported an index check of unknown node %lld",
                        (long long)w[0]);
    const lt_node *n = g->nodes[w[0] - 1];
    char label[160];
    return lt_error(ctx, LT_ERR_INVALID, "%s: index %lld (element %lld of '%s') is out of range [%lld, %lld)",
                    lt_node_label(n, label, sizeof label), (long long)w[2], (long long)w[1],
                    n->n_in > 1 && n->in[1] ? n->in[1]->name : "?", (long long)-w[3], (long long)w[3]);
}
