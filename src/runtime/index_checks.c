/* index_checks.c — the plan's checks of indices that come from the caller.
 *
 * A compiled Gather, GatherElements, GatherND, Scatter, ScatterElements or ScatterND whose indices
 * are a model input (or a view of one: the embedding lookup of every transformer reads its token ids
 * so) cannot report a bad index from inside its kernel, which only clamps. So the plan checks those inputs on the host before each
 * run, before anything is launched or copied to a device: an index out of range fails the run with
 * the node, the input and the element named, as the interpreter would fail it. Indices the model
 * computes never reach a kernel (the lowering leaves those nodes to the interpreter), and constant
 * ones were checked when the model was compiled.
 */
#include "plan_impl.h"

#include <stdio.h>

static lt_status add_check(lt_ctx *ctx, lt_plan *p, lt_vec *checks, const lt_node *n) {
    lt_index_rule rule;
    if (!lt_index_rule_of(n, &rule) || lt_infer_const(n, 1)) return LT_OK;
    const lt_value *src = lt_index_model_input(n->in[1]);
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
