/* plan.c — building and running an executable plan (see plan.h for the model of steps and slots).
 *
 * Build (lt_plan_build):
 *   1. steps, in group order: a KERNEL step per lowered group, a HOST step per host group, and one
 *      HOST step per node of a group whose lowering failed (host fallback);
 *   2. slots for every value a step reads or writes (and every graph input and output), with the
 *      live range of each over the steps; subgraph (outer-scope) reads of host steps count as reads;
 *   3. kinds: initializers CONST, graph inputs INPUT, values a kernel touches WORKSPACE (OUTPUT when
 *      a graph output), values only host steps touch DYNAMIC (datums passed along, no copies);
 *   4. packed weights: one persistent buffer each, filled by running its pack kernel once;
 *   5. the memory plan of the WORKSPACE slots (memplan.c; in-place for single-output elementwise
 *      kernels whose same-size input dies there), the workspace, argument arrays, patch lists.
 * Run (lt_plan_run / lt_plan_run_buffers): bind inputs, point outputs at the caller's memory (or
 * new tensors), patch argument arrays, run the steps in order (host steps in host.c), release
 * DYNAMIC datums after their last use, hand outputs back. Compiled steps allocate nothing.
 * Device plans (backend memory not host memory) add plan_device.c's stages to the build (constants
 * uploaded, fixed input/output buffers, staging, the copies of a run, graphs) and run their steps
 * there; the caller's memory is then the host copy of inputs and outputs, and nothing is patched.
 * lt_plan_run_device runs a device plan on the caller's device memory instead: inputs and outputs
 * copied device to device into and out of the fixed buffers (plan_device.c).
 */
#include "plan_impl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>


static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- slots ---- */

static bool type_static(const lt_type *t, int *rank, int64_t *dims, int64_t *numel) {
    if (t->kind != LT_TK_TENSOR || t->dtype == LT_UNDEFINED || t->dtype == LT_STRING || t->rank < 0 ||
        t->rank > LT_MAX_RANK || lt_dtype_size(t->dtype) <= 0)
        return false;
    int64_t n = 1;
    for (int k = 0; k < t->rank; k++) {
        if (!t->dims || t->dims[k].value < 0) return false;
        dims[k] = t->dims[k].value;
        if (!lt_mul_i64(n, dims[k], &n)) return false;
    }
    *rank = t->rank;
    *numel = n;
    return true;
}

static int find_io(lt_value *const *list, int n, const lt_value *v) {
    for (int i = 0; i < n; i++)
        if (list[i] == v) return i;
    return -1;
}

static int new_slot(lt_ctx *ctx, lt_plan *p, const lt_value *v, lt_slot_kind kind) {
    if (p->n_slots == p->cap_slots) {
        int cap = p->cap_slots ? p->cap_slots * 2 : 64;
        lt_plan_slot *ns = lt_mem_realloc(p->slots, (size_t)cap * sizeof *ns);
        if (!ns) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan slots)"), -1;
        p->slots = ns;
        lt_slot_rt *nr = lt_mem_realloc(p->rt, (size_t)cap * sizeof *nr);
        if (!nr) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan slots)"), -1;
        p->rt = nr;
        p->cap_slots = cap;
    }
    int s = p->n_slots++;
    lt_plan_slot *sl = &p->slots[s];
    memset(sl, 0, sizeof *sl);
    memset(&p->rt[s], 0, sizeof p->rt[s]);
    sl->value = v;
    sl->kind = kind;
    sl->def_step = -1;
    sl->last_step = -1;
    sl->io_index = -1;
    sl->alias_of = -1;
    p->rt[s].mp_index = -1;
    p->rt[s].first_alias = -1;
    p->rt[s].next_alias = -1;
    if (v) {
        int64_t numel = 0;
        p->rt[s].is_static = type_static(&v->type, &sl->rank, sl->dims, &numel);
        if (!p->rt[s].is_static && v->init && v->init->dtype != LT_STRING) {
            sl->rank = v->init->rank;
            memcpy(sl->dims, v->init->dims, sizeof sl->dims);
            numel = v->init->numel;
            p->rt[s].is_static = true;
        }
        sl->dtype = v->init ? v->init->dtype : v->type.dtype;
        sl->numel = numel;
        if (!lt_mul_i64(numel, (int64_t)lt_dtype_size(sl->dtype), &sl->bytes) || sl->bytes > LT_TENSOR_MAX_BYTES) {
            p->n_slots--;
            lt_error(ctx, LT_ERR_INVALID, "plan: value '%s' (%lld elements of %s) is larger than a tensor may be (%lld bytes)",
                     v->name, (long long)numel, lt_dtype_name(sl->dtype), (long long)LT_TENSOR_MAX_BYTES);
            return -1;
        }
    }
    return s;
}

/* The slot of value v (created on first use). */
static int slot_of(lt_ctx *ctx, lt_plan *p, const lt_value *v) {
    if (v->id < 0 || v->id >= p->model->graph->n_values || p->model->graph->values[v->id] != v) {
        lt_error(ctx, LT_ERR_INTERNAL, "plan: value '%s' is not a value of the main graph", v->name);
        return -1;
    }
    if (p->value_slot[v->id] >= 0) return p->value_slot[v->id];
    const lt_graph *g = p->model->graph;
    lt_slot_kind kind = v->is_input || find_io(g->inputs, g->n_inputs, v) >= 0 ? LT_SLOT_INPUT
                        : v->init                                            ? LT_SLOT_CONST
                                                                             : LT_SLOT_DYNAMIC;
    int s = new_slot(ctx, p, v, kind);
    if (s < 0) return -1;
    p->value_slot[v->id] = s;
    if (kind == LT_SLOT_INPUT) p->slots[s].io_index = find_io(g->inputs, g->n_inputs, v);
    if (kind == LT_SLOT_CONST) p->slots[s].ptr = v->init->data;
    return s;
}

static void use(lt_plan *p, int s, int step) {
    if (p->slots[s].last_step < step) p->slots[s].last_step = step;
}

/* ---- outer-scope reads of subgraphs ---- */

typedef struct outer_acc {
    const lt_graph *main;
    bool *mark;
} outer_acc;

static void collect_outer(const lt_graph *sub, outer_acc *acc) {
    for (int i = 0; i < sub->n_values; i++)
        for (const lt_value *v = sub->values[i]->outer; v; v = v->outer)
            if (v->id >= 0 && v->id < acc->main->n_values && acc->main->values[v->id] == v) {
                acc->mark[v->id] = true;
                break;
            }
    for (int n = 0; n < sub->n_nodes; n++)
        for (int a = 0; a < sub->nodes[n]->n_attr; a++) {
            const lt_attr *at = &sub->nodes[n]->attrs[a];
            if (at->type == LT_AT_GRAPH && at->g) collect_outer(at->g, acc);
            if (at->type == LT_AT_GRAPHS)
                for (int k = 0; k < at->n; k++) collect_outer(at->graphs[k], acc);
        }
}

static lt_status node_outer_vals(lt_ctx *ctx, lt_plan *p, const lt_node *n, bool *mark, int **out) {
    bool any_graph = false;
    for (int a = 0; a < n->n_attr; a++)
        if (n->attrs[a].type == LT_AT_GRAPH || n->attrs[a].type == LT_AT_GRAPHS) any_graph = true;
    *out = NULL;
    if (!any_graph) return LT_OK;
    const lt_graph *g = p->model->graph;
    memset(mark, 0, (size_t)g->n_values);
    outer_acc acc = {g, mark};
    for (int a = 0; a < n->n_attr; a++) {
        const lt_attr *at = &n->attrs[a];
        if (at->type == LT_AT_GRAPH && at->g) collect_outer(at->g, &acc);
        if (at->type == LT_AT_GRAPHS)
            for (int k = 0; k < at->n; k++) collect_outer(at->graphs[k], &acc);
    }
    int cnt = 0;
    for (int i = 0; i < g->n_values; i++) cnt += mark[i];
    int *ids = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(cnt + 1));
    if (!ids) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
    int k = 0;
    for (int i = 0; i < g->n_values; i++)
        if (mark[i]) ids[k++] = i;
    ids[k] = -1;
    *out = ids;
    return LT_OK;
}

/* ---- building ---- */

static const char *origin_of(lt_arena *a, const lt_node *const *nodes, int n) {
    lt_strbuf b = {0};
    for (int i = 0; i < n && i < 12; i++) {
        if (nodes[i]->name && *nodes[i]->name)
            lt_sb_printf(&b, "%s'%s' (%s)", i ? ", " : "", nodes[i]->name, nodes[i]->op_type);
        else
            lt_sb_printf(&b, "%s%s #%d", i ? ", " : "", nodes[i]->op_type, nodes[i]->index);
    }
    if (n > 12) lt_sb_printf(&b, ", ... (%d nodes)", n);
    char *r = lt_arena_strdup(a, b.s ? b.s : "");
    lt_sb_free(&b);
    /* it goes into comments of generated C: no comment end, no line break (node names are data) */
    for (char *c = r; c && *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
        if (c[0] == '*' && c[1] == '/') c[1] = '|';
        if (c[0] == '/' && c[1] == '*') c[1] = '|';
    }
    return r;
}

static lt_status add_host_step(lt_ctx *ctx, lt_plan *p, const lt_node *n, const lt_group *g, const char *reason,
                               lt_vec *steps) {
    lt_plan_step *st = lt_arena_alloc(p->arena, sizeof *st);
    if (!st || !lt_vec_push(steps, st)) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan steps)");
    st->kind = LT_STEP_HOST;
    st->name = n->op_type;
    st->origin = origin_of(p->arena, &n, 1);
    st->group = g;
    st->pattern = lt_op_info_get(n->op)->pattern;
    st->node = n;
    st->reason = reason;
    st->n_in = n->n_in;
    st->n_out = n->n_out;
    st->in_slots = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(n->n_in + 1));
    st->out_slots = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(n->n_out + 1));
    if (!st->origin || !st->in_slots || !st->out_slots) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan steps)");
    return LT_OK;
}

static lt_status add_kernel_step(lt_ctx *ctx, lt_plan *p, const lt_lowered *lw, lt_vec *steps) {
    lt_plan_step *st = lt_arena_alloc(p->arena, sizeof *st);
    if (!st || !lt_vec_push(steps, st)) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan steps)");
    const lt_group *g = lw->group;
    st->kind = LT_STEP_KERNEL;
    st->kernel = lw->kernel;
    st->name = lw->kernel->name;
    st->origin = origin_of(p->arena, (const lt_node *const *)g->nodes, g->n_nodes);
    st->group = g;
    st->pattern = g->pattern;
    st->flops = lw->kernel->flops;
    st->bytes = lw->kernel->bytes;
    st->n_args = lw->n_args;
    st->n_scalars = lw->kernel->n_scalars;
    st->arg_slots = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(lw->n_args + 1));
    st->args = lt_arena_alloc(p->arena, sizeof(void *) * (size_t)(lw->n_args + st->n_scalars + 1));
    if (!st->origin || !st->arg_slots || !st->args) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan steps)");
    for (int i = 0; i < st->n_scalars; i++) /* by value in the pointer slot (the kernel ABI) */
        st->args[lw->n_args + i] = (void *)(intptr_t)lw->kernel->scalar_bits[i];
    return p->backend->vt->load(p->backend, ctx, p->module, lw->kernel->name, (lt_bkernel **)&st->bk);
}

static bool is_packed_arg(const lt_lowered *lw, int arg, int *pack) {
    for (int i = 0; i < lw->n_packs; i++)
        if (lw->packs[i].arg == arg) {
            *pack = i;
            return true;
        }
    return false;
}

/* Scratch argument j of kernel step i (lt_lscratch: GEMM packing buffers, im2col): a WORKSPACE slot of
 * no graph value, defined and dead at step i, so the memory plan shares it with everything not live
 * there. */
static lt_status bind_scratch(lt_ctx *ctx, lt_plan *p, const lt_lowered *lw, lt_plan_step *st, int i, int j) {
    const lt_lscratch *sc = NULL;
    for (int k = 0; k < lw->n_scratch && !sc; k++)
        if (lw->scratch[k].arg == j) sc = &lw->scratch[k];
    if (!sc || sc->size < 0 || lt_dtype_size(sc->dtype) <= 0)
        return lt_error(ctx, LT_ERR_INTERNAL, "plan: kernel %s argument %d has no value and is no scratch buffer",
                        st->name, j);
    int sl = new_slot(ctx, p, NULL, LT_SLOT_WORKSPACE);
    if (sl < 0) return ctx->status ? ctx->status : LT_ERR_NOMEM;
    lt_plan_slot *S = &p->slots[sl];
    S->dtype = sc->dtype;
    S->rank = 1;
    S->dims[0] = sc->size;
    S->numel = sc->size;
    if (!lt_mul_i64(sc->size, (int64_t)lt_dtype_size(sc->dtype), &S->bytes) || S->bytes > LT_TENSOR_MAX_BYTES)
        return lt_error(ctx, LT_ERR_INVALID, "plan: kernel %s: scratch buffer of %lld elements is too large", st->name,
                        (long long)sc->size);
    S->def_step = i;
    S->last_step = i;
    S->scratch = true;
    p->rt[sl].is_static = true;
    p->rt[sl].kernel_use = true;
    st->arg_slots[j] = sl;
    return LT_OK;
}

int lt_plan_check_slot(lt_ctx *ctx, lt_plan *p) {
    if (p->check_slot >= 0) return p->check_slot;
    int sl = new_slot(ctx, p, NULL, LT_SLOT_CHECK);
    if (sl < 0) return -1;
    lt_plan_slot *S = &p->slots[sl];
    S->dtype = LT_INT64;
    S->rank = 1;
    S->dims[0] = S->numel = LT_CHECK_WORDS;
    S->bytes = LT_CHECK_WORDS * (int64_t)sizeof(int64_t);
    p->rt[sl].is_static = true;
    p->rt[sl].kernel_use = true;
    return p->check_slot = sl;
}

/* Slots of every step's values, live ranges, packed weights. */
static lt_status bind_values(lt_ctx *ctx, lt_plan *p, const lt_lowered *lowered_by_step_group) {
    const lt_graph *g = p->model->graph;
    bool *mark = lt_calloc(ctx, (size_t)g->n_values + 1, 1, "plan");
    if (!mark) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    for (int i = 0; i < p->n_steps && s == LT_OK; i++) {
        lt_plan_step *st = &p->steps[i];
        if (st->kind == LT_STEP_KERNEL) {
            const lt_lowered *lw = &lowered_by_step_group[st->group->id];
            for (int j = 0; j < lw->n_args && s == LT_OK; j++) {
                int pk;
                if (is_packed_arg(lw, j, &pk)) {
                    const lt_lpack *lp = &lw->packs[pk];
                    int src = slot_of(ctx, p, lp->src);
                    if (src >= 0 && p->slots[src].kind != LT_SLOT_CONST) {
                        s = lt_error(ctx, LT_ERR_INTERNAL, "plan: kernel %s packs '%s', which is not a constant",
                                     st->name, lp->src->name);
                        break;
                    }
                    int ps = src < 0 ? -1 : new_slot(ctx, p, lp->src, LT_SLOT_PACKED);
                    if (ps < 0) { s = ctx->status ? ctx->status : LT_ERR_INTERNAL; break; }
                    lt_plan_slot *sl = &p->slots[ps];
                    sl->dtype = lp->dtype;
                    sl->rank = 1;
                    sl->dims[0] = lp->size;
                    sl->numel = lp->size;
                    if (!lt_mul_i64(lp->size, (int64_t)lt_dtype_size(lp->dtype), &sl->bytes) ||
                        sl->bytes > LT_TENSOR_MAX_BYTES) {
                        s = lt_error(ctx, LT_ERR_INVALID, "plan: kernel %s: packed '%s' of %lld elements is too large",
                                     st->name, lp->src->name, (long long)lp->size);
                        break;
                    }
                    p->rt[ps].is_static = true;
                    p->rt[ps].kernel_use = true;
                    st->arg_slots[j] = ps;
                    lt_plan_pack *pp = &p->packs[p->n_packs++];
                    pp->slot = ps;
                    pp->src_slot = src;
                    pp->kernel = lp->kernel;
                    pp->same_as = -1;
                    s = p->backend->vt->load(p->backend, ctx, p->module, lp->kernel->name, (lt_bkernel **)&pp->bk);
                    continue;
                }
                if (j == lw->status_arg) { /* the check word: one buffer for the whole plan */
                    int cs = lt_plan_check_slot(ctx, p);
                    if (cs < 0) { s = ctx->status ? ctx->status : LT_ERR_NOMEM; break; }
                    st->arg_slots[j] = cs;
                    continue;
                }
                if (!lw->arg_values[j]) { /* scratch: workspace live during this step only */
                    s = bind_scratch(ctx, p, lw, st, i, j);
                    continue;
                }
                int sl = slot_of(ctx, p, lw->arg_values[j]);
                if (sl < 0) { s = ctx->status ? ctx->status : LT_ERR_INTERNAL; break; }
                st->arg_slots[j] = sl;
                p->rt[sl].kernel_use = true;
                if (j < st->group->n_outputs) {
                    if (p->slots[sl].def_step >= 0 || p->slots[sl].kind == LT_SLOT_INPUT || p->slots[sl].kind == LT_SLOT_CONST)
                        s = lt_error(ctx, LT_ERR_INTERNAL, "plan: value '%s' is written twice (kernel %s)",
                                     lw->arg_values[j]->name, st->name);
                    p->slots[sl].def_step = i;
                    use(p, sl, i);
                } else {
                    use(p, sl, i);
                }
            }
        } else {
            const lt_node *n = st->node;
            for (int k = 0; k < n->n_in && s == LT_OK; k++) {
                st->in_slots[k] = -1;
                if (!n->in[k]) continue;
                int sl = slot_of(ctx, p, n->in[k]);
                if (sl < 0) { s = ctx->status; break; }
                st->in_slots[k] = sl;
                use(p, sl, i);
            }
            for (int k = 0; k < n->n_out && s == LT_OK; k++) {
                st->out_slots[k] = -1;
                if (!n->out[k]) continue;
                int sl = slot_of(ctx, p, n->out[k]);
                if (sl < 0) { s = ctx->status; break; }
                if (p->slots[sl].def_step >= 0 || p->slots[sl].kind == LT_SLOT_INPUT)
                    s = lt_error(ctx, LT_ERR_INTERNAL, "plan: value '%s' is written twice (host step %s)",
                                 n->out[k]->name, st->name);
                st->out_slots[k] = sl;
                p->slots[sl].def_step = i;
                use(p, sl, i);
            }
            int *ids = NULL;
            if (s == LT_OK) s = node_outer_vals(ctx, p, n, mark, &ids);
            p->outer_vals[i] = ids;
            for (int k = 0; ids && ids[k] >= 0 && s == LT_OK; k++) {
                int sl = slot_of(ctx, p, g->values[ids[k]]);
                if (sl < 0) { s = ctx->status; break; }
                use(p, sl, i);
            }
        }
    }
    lt_mem_free(mark);
    if (s != LT_OK) return s;
    /* graph inputs and outputs */
    for (int i = 0; i < g->n_inputs; i++) {
        int sl = slot_of(ctx, p, g->inputs[i]);
        if (sl < 0) return ctx->status;
        p->input_slot[i] = sl;
    }
    for (int k = 0; k < g->n_outputs; k++) {
        int sl = slot_of(ctx, p, g->outputs[k]);
        if (sl < 0) return ctx->status;
        p->output_slot[k] = sl;
        p->slots[sl].last_step = p->n_steps; /* kept to the end */
        if (p->slots[sl].kind == LT_SLOT_DYNAMIC && p->slots[sl].def_step < 0)
            return lt_error(ctx, LT_ERR_INVALID, "plan: graph output '%s' is computed by no node", g->outputs[k]->name);
    }
    /* kinds of computed values */
    for (int sl = 0; sl < p->n_slots; sl++) {
        lt_plan_slot *S = &p->slots[sl];
        lt_slot_rt *R = &p->rt[sl];
        if (S->kind != LT_SLOT_DYNAMIC) continue;
        if (S->def_step < 0)
            return lt_error(ctx, LT_ERR_INVALID, "plan: value '%s' is read but never computed", S->value->name);
        if (S->last_step < S->def_step) S->last_step = S->def_step;
        if (!R->kernel_use) continue; /* host-only values stay datums */
        if (!R->is_static)
            return lt_error(ctx, LT_ERR_INTERNAL, "plan: value '%s' is used by a kernel but has no static shape",
                            S->value->name);
        int k = find_io(g->outputs, g->n_outputs, S->value);
        S->kind = k >= 0 ? LT_SLOT_OUTPUT : LT_SLOT_WORKSPACE;
        S->io_index = k;
    }
    for (int sl = 0; sl < p->n_slots; sl++)
        if (p->rt[sl].kernel_use && !p->rt[sl].is_static)
            return lt_error(ctx, LT_ERR_INTERNAL, "plan: value '%s' is used by a kernel but has no static shape",
                            p->slots[sl].value->name);
    return LT_OK;
}

/* Views: a kernel step whose nodes only reshape (Reshape, Flatten, Squeeze, Unsqueeze, Identity),
 * with one input and one output of the same bytes, copies nothing: its WORKSPACE output shares the
 * memory of its input (a WORKSPACE or INPUT slot, or the root such a view already shares), and the
 * root's live range grows to cover the view's. */
static bool is_view_op(int op) {
    return op == LT_OP_Reshape || op == LT_OP_Flatten || op == LT_OP_Squeeze || op == LT_OP_Unsqueeze ||
           op == LT_OP_Identity;
}

static void find_views(lt_plan *p) {
    for (int i = 0; i < p->n_steps; i++) {
        lt_plan_step *st = &p->steps[i];
        if (st->kind != LT_STEP_KERNEL || st->n_args != 2 || !st->group || st->group->n_outputs != 1) continue;
        bool only_views = true;
        for (int k = 0; k < st->group->n_nodes && only_views; k++) only_views = is_view_op(st->group->nodes[k]->op);
        if (!only_views) continue;
        int o = st->arg_slots[0], in = st->arg_slots[1];
        int root = p->slots[in].alias_of >= 0 ? p->slots[in].alias_of : in;
        lt_plan_slot *O = &p->slots[o], *R = &p->slots[root];
        if (O->kind != LT_SLOT_WORKSPACE || (R->kind != LT_SLOT_WORKSPACE && R->kind != LT_SLOT_INPUT)) continue;
        if (O->bytes != R->bytes || O->dtype != R->dtype || o == root) continue;
        st->view = true;
        O->alias_of = root;
        p->rt[o].next_alias = p->rt[root].first_alias;
        p->rt[root].first_alias = o;
        if (O->last_step > R->last_step) R->last_step = O->last_step;
        p->stats.n_views++;
    }
}

static int root_of(const lt_plan *p, int sl) { return p->slots[sl].alias_of >= 0 ? p->slots[sl].alias_of : sl; }

/* In-place candidate of kernel step i: a single-output elementwise/broadcast chain whose output is
 * a WORKSPACE slot, and an input WORKSPACE slot of the same element count and element size that
 * dies at this step. */
static int inplace_candidate(const lt_plan *p, int i) {
    const lt_plan_step *st = &p->steps[i];
    if (st->kind != LT_STEP_KERNEL || st->view || !st->group || st->group->n_outputs != 1) return -1;
    if (st->pattern != LT_PK_ELEMWISE && st->pattern != LT_PK_BROADCAST) return -1;
    const lt_plan_slot *o = &p->slots[st->arg_slots[0]];
    if (o->kind != LT_SLOT_WORKSPACE || o->alias_of >= 0) return -1;
    for (int j = 1; j < st->n_args; j++) {
        int sl = root_of(p, st->arg_slots[j]);
        const lt_plan_slot *in = &p->slots[sl];
        if (in->kind != LT_SLOT_WORKSPACE || in->last_step != i || in->def_step >= i) continue;
        if (in->numel != o->numel || lt_dtype_size(in->dtype) != lt_dtype_size(o->dtype)) continue;
        if (sl != st->arg_slots[0]) return sl;
    }
    return -1;
}

static lt_status plan_memory(lt_ctx *ctx, lt_plan *p, bool no_inplace) {
    int n = 0;
    for (int s = 0; s < p->n_slots; s++)
        if (p->slots[s].kind == LT_SLOT_WORKSPACE && p->slots[s].alias_of < 0) p->rt[s].mp_index = n++;
    lt_mp_buf *bufs = lt_calloc(ctx, (size_t)n + 1, sizeof *bufs, "memory plan");
    if (!bufs) return LT_ERR_NOMEM;
    for (int s = 0; s < p->n_slots; s++) {
        int m = p->rt[s].mp_index;
        if (m < 0) continue;
        bufs[m] = (lt_mp_buf){.bytes = p->slots[s].bytes, .def = p->slots[s].def_step, .last = p->slots[s].last_step,
                              .inplace_of = -1};
    }
    for (int i = 0; i < p->n_steps && !no_inplace; i++) {
        int src = inplace_candidate(p, i);
        if (src < 0) continue;
        bufs[p->rt[p->steps[i].arg_slots[0]].mp_index].inplace_of = p->rt[src].mp_index;
    }
    lt_status s = lt_memplan(ctx, bufs, n, &p->mem);
    if (s == LT_OK) s = lt_memplan_verify(ctx, bufs, n, p->mem.workspace_bytes);
    if (s == LT_OK) {
        size_t bytes = (size_t)(p->mem.workspace_bytes > 0 ? p->mem.workspace_bytes : LT_MEMPLAN_ALIGN);
        if (p->workspace_fn) {
            s = p->workspace_fn(p->workspace_user, ctx, (int64_t)bytes, &p->workspace);
            p->workspace_borrowed = s == LT_OK;
        } else {
            s = p->backend->vt->alloc(p->backend, ctx, bytes, &p->workspace);
        }
    }
    if (s == LT_OK)
        for (int sl = 0; sl < p->n_slots; sl++) {
            int m = p->rt[sl].mp_index;
            if (m < 0) continue;
            p->slots[sl].offset = bufs[m].offset;
            p->slots[sl].inplace = bufs[m].inplace;
            p->slots[sl].ptr = (char *)p->workspace + bufs[m].offset;
        }
    if (s == LT_OK) /* views share their root's memory */
        for (int sl = 0; sl < p->n_slots; sl++) {
            lt_plan_slot *S = &p->slots[sl];
            if (S->alias_of < 0) continue;
            bool ws = p->slots[S->alias_of].kind == LT_SLOT_WORKSPACE;
            S->offset = ws ? p->slots[S->alias_of].offset : -1; /* a view of an input: no workspace */
            S->ptr = p->slots[S->alias_of].ptr;
        }
    lt_mem_free(bufs);
    return s;
}

/* Packs that repeat an earlier one: the same constant packed by a kernel whose body prints the same
 * (the same layout, so the same bytes) takes the earlier pack's buffer (same_as). An unrolled
 * recurrence packs its one recurrent weight for every step's MatMul: with a buffer each, every step
 * read its own copy from memory instead of one copy from the cache. */
static lt_status find_repeated_packs(lt_ctx *ctx, lt_plan *p) {
    lt_strbuf *text = lt_calloc(ctx, (size_t)p->n_packs + 1, sizeof *text, "plan packs");
    if (!text) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    for (int i = 0; i < p->n_packs && s == LT_OK; i++) {
        lt_plan_pack *pk = &p->packs[i];
        lt_lprint(pk->kernel->body, &text[i], 0);
        if (!text[i].s) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan packs)"); break; }
        for (int j = 0; j < i && pk->same_as < 0; j++) {
            const lt_plan_pack *o = &p->packs[j];
            if (o->same_as < 0 && o->src_slot == pk->src_slot && p->slots[o->slot].bytes == p->slots[pk->slot].bytes &&
                p->slots[o->slot].dtype == p->slots[pk->slot].dtype && strcmp(text[j].s, text[i].s) == 0)
                pk->same_as = j;
        }
    }
    for (int i = 0; i < p->n_packs; i++) lt_sb_free(&text[i]);
    lt_mem_free(text);
    return s;
}

/* Packed weights: allocate and fill once, by the pack kernel on the backend. On a device, a source
 * no kernel reads directly (so not uploaded with the constants) goes through one temporary buffer. */
static lt_status fill_packs(lt_ctx *ctx, lt_plan *p) {
    const lt_backend_vtbl *vt = p->backend->vt;
    LT_TRY(find_repeated_packs(ctx, p));
    int64_t tmp_bytes = 0;
    for (int i = 0; i < p->n_packs && !p->host_memory; i++) {
        int src = p->packs[i].src_slot;
        if (!p->rt[src].kernel_use && p->slots[src].bytes > tmp_bytes) tmp_bytes = p->slots[src].bytes;
    }
    void *tmp = NULL;
    if (tmp_bytes > 0) LT_TRY(vt->alloc(p->backend, ctx, (size_t)tmp_bytes, &tmp));
    lt_status s = LT_OK;
    for (int i = 0; i < p->n_packs && s == LT_OK; i++) {
        lt_plan_pack *pk = &p->packs[i];
        lt_plan_slot *S = &p->slots[pk->slot];
        const lt_plan_slot *src = &p->slots[pk->src_slot];
        if (pk->same_as >= 0) { /* the earlier pack's buffer (after its adoption: the caller's, if so) */
            S->ptr = p->slots[p->packs[pk->same_as].slot].ptr;
            continue;
        }
        s = vt->alloc(p->backend, ctx, (size_t)(S->bytes > 0 ? S->bytes : 1), &S->ptr);
        if (s != LT_OK) break;
        void *args[2] = {S->ptr, src->ptr};
        if (!p->host_memory && !p->rt[pk->src_slot].kernel_use) {
            s = vt->copy(p->backend, ctx, tmp, src->value->init->data, (size_t)src->bytes, LT_COPY_HOST_TO_DEVICE);
            args[1] = tmp;
        }
        if (s == LT_OK) s = vt->launch(p->backend, ctx, pk->bk, args, 2);
        if (s == LT_OK && tmp) s = vt->sync(p->backend, ctx); /* before the next upload reuses tmp */
        p->stats.packed_bytes += S->bytes;
        if (s == LT_OK && p->share.pack_adopt && p->share.const_release) { /* one copy for plans of equal packs */
            if (!tmp && !p->host_memory) s = vt->sync(p->backend, ctx); /* the pack is written */
            char name[300];
            snprintf(name, sizeof name, "packed %s", src->value ? src->value->name : "?");
            if (s == LT_OK) s = p->share.pack_adopt(p->share.user, ctx, name, S->bytes, &S->ptr);
            if (s == LT_OK) pk->shared = true;
        }
    }
    if (s == LT_OK && !p->host_memory) s = vt->sync(p->backend, ctx);
    if (tmp) vt->free(p->backend, tmp);
    return s;
}

/* Does slot sl live in the caller's memory (its address patched at each run)? Never on a device:
 * inputs and outputs have fixed device buffers there. */
static bool patched(const lt_plan *p, int sl) {
    if (!p->host_memory) return false;
    lt_slot_kind k = p->slots[root_of(p, sl)].kind;
    return k == LT_SLOT_INPUT || k == LT_SLOT_OUTPUT;
}

/* Argument arrays and the patch lists of INPUT / OUTPUT slots (and views of them). */
static lt_status prepare_args(lt_ctx *ctx, lt_plan *p) {
    int n = 0;
    for (int i = 0; i < p->n_steps; i++) {
        lt_plan_step *st = &p->steps[i];
        if (st->kind != LT_STEP_KERNEL) continue;
        for (int j = 0; j < st->n_args; j++) {
            const lt_plan_slot *S = &p->slots[st->arg_slots[j]];
            int64_t want = st->kernel->args[j]->size;
            if (want != S->numel || st->kernel->args[j]->dtype != S->dtype)
                return lt_error(ctx, LT_ERR_INTERNAL,
                                "plan: kernel %s argument %d '%s' is %s[%lld] but its buffer '%s' holds %s[%lld]",
                                st->name, j, st->kernel->args[j]->name, lt_dtype_name(st->kernel->args[j]->dtype),
                                (long long)want, S->value ? S->value->name : "?", lt_dtype_name(S->dtype),
                                (long long)S->numel);
            st->args[j] = S->ptr;
            if (patched(p, st->arg_slots[j])) n++;
        }
    }
    p->patches = lt_arena_alloc(p->arena, sizeof(void *) * (size_t)(n + 1));
    if (!p->patches) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
    for (int sl = 0; sl < p->n_slots; sl++) {
        lt_slot_rt *R = &p->rt[sl];
        R->first_patch = p->n_patches;
        if (!patched(p, sl)) continue;
        for (int i = 0; i < p->n_steps; i++) {
            lt_plan_step *st = &p->steps[i];
            if (st->kind != LT_STEP_KERNEL) continue;
            for (int j = 0; j < st->n_args; j++)
                if (st->arg_slots[j] == sl) p->patches[p->n_patches++] = &st->args[j];
        }
        R->n_patch = p->n_patches - R->first_patch;
    }
    return LT_OK;
}

/* The caller's view of the inputs (before freezing) -> current graph inputs, by name. */
static lt_status map_api_inputs(lt_ctx *ctx, lt_plan *p, const lt_plan_build_args *a) {
    const lt_graph *g = p->model->graph;
    int n = a->api_input_names ? a->n_api_inputs : g->n_inputs;
    p->n_api = n;
    p->api_names = lt_arena_alloc(p->arena, sizeof(char *) * (size_t)(n + 1));
    p->api_cur = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(n + 1));
    p->api_frozen = lt_arena_alloc(p->arena, sizeof(bool) * (size_t)(n + 1));
    if (!p->api_names || !p->api_cur || !p->api_frozen) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
    for (int i = 0; i < n; i++) {
        const char *nm = a->api_input_names ? a->api_input_names[i] : g->inputs[i]->name;
        p->api_names[i] = lt_arena_strdup(p->arena, nm);
        if (!p->api_names[i]) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
        p->api_frozen[i] = a->api_input_frozen && a->api_input_frozen[i];
        p->api_cur[i] = -1;
        for (int k = 0; k < g->n_inputs; k++)
            if (strcmp(g->inputs[k]->name, nm) == 0) p->api_cur[i] = k;
    }
    return LT_OK;
}

lt_status lt_plan_build_steps(lt_ctx *ctx, const lt_plan_build_args *a, lt_plan **out) {
    lt_plan *p = lt_calloc(ctx, 1, sizeof *p, "plan");
    if (!p) {
        if (a->module && !a->shared_module) a->backend->vt->module_free(a->backend, a->module);
        if (!a->shared_module) lt_backend_destroy(a->backend);
        if (a->arena) { lt_arena_free(a->arena); lt_mem_free(a->arena); }
        return LT_ERR_NOMEM;
    }
    p->model = a->model;
    p->check_slot = -1;
    p->arena = a->arena;
    p->groups = a->groups;
    p->backend = a->backend;
    p->module = a->module;
    p->shared_module = a->shared_module;
    p->threads = a->threads;
    p->host_memory = a->backend && a->backend->vt->host_memory;
    p->use_graphs = !a->no_graphs;
    p->workspace_fn = a->workspace, p->workspace_user = a->workspace_user;
    if (a->device_share) p->share = *a->device_share;
    const lt_graph *g = a->model->graph;
    const lt_groups *gs = a->groups;
    lt_status s = LT_OK;
    lt_vec steps = {0};
    int n_pack_total = 0;

    p->value_slot = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(g->n_values + 1));
    p->input_slot = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(g->n_inputs + 1));
    p->output_slot = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(g->n_outputs + 1));
    if (!p->value_slot || !p->input_slot || !p->output_slot) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)"); goto fail; }
    for (int i = 0; i < g->n_values; i++) p->value_slot[i] = -1;
    if (!p->backend) { s = lt_error(ctx, LT_ERR_USAGE, "lt_plan_build: no backend"); goto fail; }

    /* 1. steps */
    for (int gi = 0; gi < gs->n && s == LT_OK; gi++) {
        const lt_group *grp = &gs->groups[gi];
        const lt_lowered *lw = &a->lowered[gi];
        if (grp->host) {
            s = add_host_step(ctx, p, grp->nodes[0], grp, grp->reason, &steps);
        } else if (lw->kernel) {
            if (!p->module) s = lt_error(ctx, LT_ERR_INTERNAL, "plan: kernel %s but no compiled module", lw->kernel->name);
            else s = add_kernel_step(ctx, p, lw, &steps);
            n_pack_total += lw->n_packs;
        } else {
            for (int k = 0; k < grp->n_nodes && s == LT_OK; k++)
                s = add_host_step(ctx, p, grp->nodes[k], grp, "host fallback: the lowering rejected its group", &steps);
        }
    }
    if (s != LT_OK) goto fail;
    p->n_steps = steps.n;
    p->steps = lt_arena_alloc(p->arena, sizeof(lt_plan_step) * (size_t)(steps.n + 1));
    p->outer_vals = lt_arena_alloc(p->arena, sizeof(int *) * (size_t)(steps.n + 1));
    p->packs = lt_arena_alloc(p->arena, sizeof(lt_plan_pack) * (size_t)(n_pack_total + 1));
    if (!p->steps || !p->outer_vals || !p->packs) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)"); goto fail; }
    for (int i = 0; i < steps.n; i++) p->steps[i] = *(lt_plan_step *)steps.items[i];
    lt_vec_free(&steps);

    /* 2-3. slots, live ranges, kinds */
    if ((s = bind_values(ctx, p, a->lowered)) != LT_OK) goto fail;
    lt_plan_mark_host_reads(p);
    if ((s = map_api_inputs(ctx, p, a)) != LT_OK) goto fail;
    if ((s = lt_plan_index_checks_build(ctx, p)) != LT_OK) goto fail;
    find_views(p);

    /* stats of the steps */
    lt_plan_stats *st = &p->stats;
    st->n_steps = p->n_steps;
    st->n_nodes = g->n_nodes;
    for (int i = 0; i < p->n_steps; i++) {
        if (p->steps[i].kind == LT_STEP_KERNEL) {
            st->n_kernels++;
            st->n_nodes_compiled += p->steps[i].group->n_nodes;
        } else {
            st->n_host++;
        }
    }
    *out = p;
    return LT_OK;
fail:
    lt_vec_free(&steps);
    lt_plan_free(p);
    return s ? s : LT_ERR_INTERNAL;
}

lt_status lt_plan_build_memory(lt_ctx *ctx, lt_plan *p, bool no_inplace, int threads) {
    /* 5. memory plan + workspace; 4. packed weights */
    LT_TRY(plan_memory(ctx, p, no_inplace));
    if (!p->host_memory) LT_TRY(lt_plan_device_prepare(ctx, p));
    LT_TRY(fill_packs(ctx, p));
    LT_TRY(lt_plan_check_word_alloc(ctx, p));
    LT_TRY(prepare_args(ctx, p));
    LT_TRY(lt_plan_host_prepare(ctx, p));
    if (!p->host_memory) LT_TRY(lt_plan_device_capture(ctx, p));
    lt_plan_set_threads(p, threads);
    lt_plan_stats *st = &p->stats;
    st->n_slots = p->n_slots;
    for (int sl = 0; sl < p->n_slots; sl++) {
        if (p->slots[sl].kind == LT_SLOT_WORKSPACE && p->slots[sl].alias_of < 0) st->n_workspace_slots++;
        if (p->slots[sl].kind == LT_SLOT_CONST && p->rt[sl].is_static) st->weight_bytes += p->slots[sl].bytes;
    }
    st->n_inplace = p->mem.n_inplace;
    st->workspace_bytes = p->mem.workspace_bytes;
    st->intermediates_bytes = p->mem.sum_bytes;
    st->lower_bound_bytes = p->mem.lower_bound;
    st->threads = p->threads;
    p->memory_planned = true;
    return LT_OK;
}

lt_status lt_plan_build(lt_ctx *ctx, const lt_plan_build_args *a, lt_plan **out) {
    lt_plan *p = NULL;
    LT_TRY(lt_plan_build_steps(ctx, a, &p));
    lt_status s = lt_plan_build_memory(ctx, p, a->no_inplace, a->threads);
    if (s != LT_OK) {
        lt_plan_free(p);
        return s;
    }
    *out = p;
    return LT_OK;
}

void lt_plan_set_rest(lt_plan *p, const lt_plan_rest *rest) { p->rest = *rest; }

void lt_plan_set_subgraphs(lt_plan *p, const lt_plan_subgraphs *sub) { p->subgraphs = *sub; }

bool lt_plan_host_subgraphs(const lt_plan *p) {
    for (int i = 0; p && i < p->n_steps; i++) {
        const lt_node *n = p->steps[i].kind == LT_STEP_HOST ? p->steps[i].node : NULL;
        for (int a = 0; n && a < n->n_attr; a++)
            if (n->attrs[a].type == LT_AT_GRAPH || n->attrs[a].type == LT_AT_GRAPHS) return true;
    }
    return false;
}

bool lt_plan_rest_print(const lt_plan *p, lt_strbuf *out) {
    if (!p || (!p->rest.print && !p->subgraphs.print)) return false;
    if (p->rest.print) p->rest.print(p->rest.user, out);
    if (p->subgraphs.print) p->subgraphs.print(p->subgraphs.user, out);
    return true;
}

void lt_plan_free(lt_plan *p) {
    if (!p) return;
    if (p->rest.free) p->rest.free(p->rest.user);
    if (p->subgraphs.free) p->subgraphs.free(p->subgraphs.user);
    lt_plan_host_free(p);
    if (p->backend && !p->host_memory) lt_plan_device_free(p);
    if (p->backend) {
        for (int i = 0; i < p->n_packs; i++) {
            void *ptr = p->slots && p->packs[i].same_as < 0 ? p->slots[p->packs[i].slot].ptr : NULL;
            if (ptr && p->packs[i].shared) p->share.const_release(p->share.user, ptr);
            else if (ptr) p->backend->vt->free(p->backend, ptr);
        }
        if (p->workspace && !p->workspace_borrowed) p->backend->vt->free(p->backend, p->workspace);
        if (p->check_slot >= 0 && p->slots[p->check_slot].ptr)
            p->backend->vt->free(p->backend, p->slots[p->check_slot].ptr);
        if (p->module && !p->shared_module) p->backend->vt->module_free(p->backend, p->module);
        if (!p->shared_module) lt_backend_destroy(p->backend);
    }
    lt_mem_free(p->slots);
    lt_mem_free(p->rt);
    if (p->arena) {
        lt_arena_free(p->arena);
        lt_mem_free(p->arena);
    }
    lt_mem_free(p);
}

/* ---- running ---- */

static void patch_one(lt_plan *p, int sl) {
    const lt_slot_rt *R = &p->rt[sl];
    for (int k = 0; k < R->n_patch; k++) *(void **)p->patches[R->first_patch + k] = p->slots[sl].ptr;
    if (R->wrap) R->wrap->data = p->slots[sl].ptr;
}

/* Slot sl (INPUT / OUTPUT) is at `host` in the caller's memory for this run. Host-memory plans: its
 * argument entries, its host view and its views' follow; device plans: it is the host copy (the
 * device buffer is fixed). */
static void bind_host(lt_plan *p, int sl, void *host) {
    if (!p->host_memory) {
        p->rt[sl].hptr = host;
        if (p->rt[sl].wrap) p->rt[sl].wrap->data = host;
        return;
    }
    p->slots[sl].ptr = host;
    patch_one(p, sl);
    for (int a = p->rt[sl].first_alias; a >= 0; a = p->rt[a].next_alias) {
        p->slots[a].ptr = p->slots[sl].ptr;
        patch_one(p, a);
    }
}

static void release_run(lt_plan *p) {
    for (int sl = 0; sl < p->n_slots; sl++) {
        lt_datum_release(p->rt[sl].cur);
        p->rt[sl].cur = NULL;
        if (p->slots[sl].kind == LT_SLOT_INPUT || p->slots[sl].kind == LT_SLOT_OUTPUT) {
            if (p->host_memory) p->slots[sl].ptr = NULL;
            else p->rt[sl].hptr = NULL;
        }
    }
}

static bool same_shape(const lt_plan_slot *S, const lt_tensor *t) {
    if (t->dtype != S->dtype || t->rank != S->rank) return false;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k] != S->dims[k]) return false;
    return true;
}

static lt_status run_host_steps(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt);

/* The steps, then the check word of kernels that check the indices they read. */
static lt_status run_steps(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt) {
    lt_status s = p->host_memory ? run_host_steps(ctx, p, opt) : lt_plan_device_run_steps(ctx, p, opt);
    lt_status c = lt_plan_check_word_run(ctx, p, s == LT_OK); /* cleared for the next run either way */
    return s != LT_OK ? s : c;
}

static lt_status run_host_steps(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt) {
    double t_run = opt && opt->device_seconds ? now_s() : 0;
    p->rng = opt ? opt->seed : 0;
    p->max_loop_bytes = opt ? opt->max_loop_bytes : 0;
    double *secs = opt ? opt->step_seconds : NULL;
    const lt_backend_vtbl *vt = p->backend->vt;
    for (int i = 0; i < p->n_steps; i++) {
        lt_plan_step *st = &p->steps[i];
        double t0 = secs ? now_s() : 0;
        if (st->view) { /* shares its input's memory: nothing to do */
        } else if (st->kind == LT_STEP_KERNEL) LT_TRY(vt->launch(p->backend, ctx, st->bk, st->args, st->n_args + st->n_scalars));
        else LT_TRY(lt_plan_host_run(ctx, p, i));
        if (secs) secs[i] += now_s() - t0;
        /* DYNAMIC values die after their last reader */
        if (st->kind == LT_STEP_HOST)
            for (int k = 0; k < st->n_in; k++) {
                int sl = st->in_slots[k];
                if (sl >= 0 && p->slots[sl].kind == LT_SLOT_DYNAMIC && p->slots[sl].last_step == i) {
                    lt_datum_release(p->rt[sl].cur);
                    p->rt[sl].cur = NULL;
                }
            }
    }
    if (opt && opt->device_seconds) *opt->device_seconds = now_s() - t_run;
    return LT_OK;
}

static lt_status bind_input_datum(lt_ctx *ctx, lt_plan *p, int i, lt_datum *d) {
    int sl = p->input_slot[i];
    if (sl < 0) return LT_OK;
    lt_plan_slot *S = &p->slots[sl];
    lt_slot_rt *R = &p->rt[sl];
    const lt_value *v = S->value;
    if (!d) d = R->dflt;
    if (!d) return lt_error(ctx, LT_ERR_INVALID, "input %d '%s' was not given a value", i, v->name);
    const lt_type *t = &v->type;
    if (d->kind == LT_DK_TENSOR && t->kind == LT_TK_TENSOR) { /* the declared type, as the interpreter checks */
        const lt_tensor *x = d->tensor;
        if (t->dtype != LT_UNDEFINED && x->dtype != t->dtype)
            return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected %s, got %s", v->name, lt_dtype_name(t->dtype),
                            lt_dtype_name(x->dtype));
        if (t->rank >= 0 && x->rank != t->rank)
            return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected rank %d, got rank %d", v->name, t->rank, x->rank);
        for (int k = 0; t->rank > 0 && t->dims && k < t->rank; k++)
            if (t->dims[k].value >= 0 && t->dims[k].value != x->dims[k])
                return lt_error(ctx, LT_ERR_INVALID, "input '%s': dimension %d must be %lld, got %lld", v->name, k,
                                (long long)t->dims[k].value, (long long)x->dims[k]);
    }
    if (R->kernel_use) {
        char want[256], got[256];
        if (d->kind != LT_DK_TENSOR || !same_shape(S, d->tensor))
            return lt_error(ctx, LT_ERR_INVALID, "input '%s': the plan was compiled for %s, got %s", v->name,
                            lt_shape_str(S->rank, S->dims, want, sizeof want),
                            d->kind == LT_DK_TENSOR ? lt_tensor_describe(d->tensor, got, sizeof got) : "a non-tensor");
        if (d->tensor->dtype != S->dtype)
            return lt_error(ctx, LT_ERR_INVALID, "input '%s': expected %s, got %s", v->name, lt_dtype_name(S->dtype),
                            lt_dtype_name(d->tensor->dtype));
    }
    R->cur = lt_datum_retain(d);
    bind_host(p, sl, d->kind == LT_DK_TENSOR ? d->tensor->data : NULL);
    return LT_OK;
}

lt_status lt_plan_run(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt, lt_datum *const *inputs,
                      lt_datum **outputs) {
    if (!p || !outputs) return lt_error(ctx, LT_ERR_USAGE, "lt_plan_run: missing plan or outputs");
    if (!p->memory_planned) return lt_error(ctx, LT_ERR_USAGE, "lt_plan_run: the plan's memory is not planned");
    const lt_graph *g = p->model->graph;
    lt_status s = LT_OK;
    memset(&p->copies, 0, sizeof p->copies);
    for (int i = 0; i < p->n_api && s == LT_OK; i++) {
        lt_datum *d = inputs ? inputs[i] : NULL;
        if (p->api_cur[i] >= 0) s = bind_input_datum(ctx, p, p->api_cur[i], d);
        else if (d && p->api_frozen[i])
            s = lt_error(ctx, LT_ERR_INVALID, "input %d '%s' was frozen to its initializer when the model was compiled: "
                         "compile with it among the given inputs to override it", i, p->api_names[i]);
    }
    /* outputs computed by kernels: new tensors, written in place by the kernels */
    for (int sl = 0; sl < p->n_slots && s == LT_OK; sl++) {
        lt_plan_slot *S = &p->slots[sl];
        if (S->kind != LT_SLOT_OUTPUT) continue;
        lt_tensor *t = NULL;
        s = lt_tensor_new(ctx, S->dtype, S->rank, S->dims, &t);
        if (s == LT_OK) s = lt_datum_tensor(ctx, t, &p->rt[sl].cur);
        if (s == LT_OK) bind_host(p, sl, p->rt[sl].cur->tensor->data);
    }
    if (s == LT_OK) s = lt_plan_index_checks_run(ctx, p);
    if (s == LT_OK) s = run_steps(ctx, p, opt);
    /* hand the outputs back */
    int k = 0;
    for (; k < g->n_outputs && s == LT_OK; k++) {
        int sl = p->output_slot[k];
        lt_plan_slot *S = &p->slots[sl];
        lt_datum *d = p->rt[sl].cur;
        if (S->kind == LT_SLOT_CONST) d = p->rt[sl].wrapd;
        if (!d) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "plan: output %d '%s' has no value after the run", k, S->value->name);
            break;
        }
        if (S->kind == LT_SLOT_OUTPUT && S->io_index != k) { /* the same value listed twice: a copy */
            lt_tensor *t = NULL;
            s = lt_tensor_copy(ctx, d->tensor, &t);
            if (s == LT_OK) s = lt_datum_tensor(ctx, t, &outputs[k]);
        } else {
            outputs[k] = lt_datum_retain(d);
        }
    }
    if (s != LT_OK)
        for (int j = 0; j < k; j++) {
            lt_datum_release(outputs[j]);
            outputs[j] = NULL;
        }
    release_run(p);
    return s;
}

/* API input i given as caller memory src (NULL: its initializer) in a run on caller memory: the slot
 * to bind it to (*slot), or -1 when nothing is left to do (an input no step reads, or bound to its
 * initializer now). Errors: memory for an input frozen at compile time, an input with no static shape. */
static lt_status caller_input(lt_ctx *ctx, lt_plan *p, int i, const void *src, int *slot) {
    *slot = -1;
    int cur = p->api_cur[i];
    if (cur < 0) {
        if (src && p->api_frozen[i])
            return lt_error(ctx, LT_ERR_INVALID, "input %d '%s' was frozen to its initializer when the model was "
                            "compiled", i, p->api_names[i]);
        return LT_OK;
    }
    int sl = p->input_slot[cur];
    if (sl < 0) return LT_OK;
    if (!src) return bind_input_datum(ctx, p, cur, NULL);
    if (!p->rt[sl].wrap)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "input %d '%s' has no static shape: use lt_plan_run", i,
                        p->slots[sl].value->name);
    *slot = sl;
    return LT_OK;
}

lt_status lt_plan_run_buffers(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt, const void *const *inputs,
                              void *const *outputs) {
    if (!p || (!outputs && p->model->graph->n_outputs)) return lt_error(ctx, LT_ERR_USAGE, "lt_plan_run_buffers: missing plan or outputs");
    if (!p->memory_planned) return lt_error(ctx, LT_ERR_USAGE, "lt_plan_run_buffers: the plan's memory is not planned");
    const lt_graph *g = p->model->graph;
    lt_status s = LT_OK;
    memset(&p->copies, 0, sizeof p->copies);
    for (int k = 0; k < g->n_outputs; k++)
        if (lt_plan_output_bytes(p, k) < 0)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "output %d '%s' has no static shape: use lt_plan_run", k,
                            g->outputs[k]->name);
    for (int i = 0; i < p->n_api && s == LT_OK; i++) {
        const void *src = inputs ? inputs[i] : NULL;
        int sl;
        if ((s = caller_input(ctx, p, i, src, &sl)) != LT_OK || sl < 0) continue;
        lt_slot_rt *R = &p->rt[sl];
        bind_host(p, sl, (void *)src);
        R->cur = lt_datum_retain(R->wrapd);
    }
    for (int sl = 0; sl < p->n_slots && s == LT_OK; sl++) {
        lt_plan_slot *S = &p->slots[sl];
        if (S->kind != LT_SLOT_OUTPUT) continue;
        bind_host(p, sl, outputs[S->io_index]);
        if (p->rt[sl].wrapd) p->rt[sl].cur = lt_datum_retain(p->rt[sl].wrapd);
    }
    if (s == LT_OK) s = lt_plan_index_checks_run(ctx, p);
    if (s == LT_OK) s = run_steps(ctx, p, opt);
    for (int k = 0; k < g->n_outputs && s == LT_OK; k++) {
        int sl = p->output_slot[k];
        lt_plan_slot *S = &p->slots[sl];
        if (S->kind == LT_SLOT_OUTPUT && S->io_index == k) continue; /* written in place */
        const void *src = NULL;
        int64_t bytes = lt_plan_output_bytes(p, k);
        lt_datum *d = S->kind == LT_SLOT_CONST ? p->rt[sl].wrapd : p->rt[sl].cur;
        if (S->kind == LT_SLOT_OUTPUT) src = lt_plan_host_addr(p, sl);
        else if (d && d->kind == LT_DK_TENSOR && same_shape(S, d->tensor)) src = d->tensor->data;
        if (!src) {
            s = lt_error(ctx, LT_ERR_INVALID, "output %d '%s': the value computed has not the static shape expected", k,
                         S->value->name);
            break;
        }
        if (src != outputs[k]) memmove(outputs[k], src, (size_t)bytes);
    }
    release_run(p);
    return s;
}

lt_status lt_plan_run_device(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt, const void *const *inputs,
                             void *const *outputs) {
    if (!p || (!outputs && p->model->graph->n_outputs)) return lt_error(ctx, LT_ERR_USAGE, "lt_plan_run_device: missing plan or outputs");
    if (!p->memory_planned) return lt_error(ctx, LT_ERR_USAGE, "lt_plan_run_device: the plan's memory is not planned");
    const lt_graph *g = p->model->graph;
    if (p->host_memory)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "the model is compiled for the %s backend, whose memory is host memory: "
                        "device pointers need a model compiled for a device (backend cuda); give host memory to "
                        "lt_plan_run_buffers", p->backend->vt->name);
    for (int k = 0; k < g->n_outputs; k++) {
        int64_t bytes = lt_plan_output_bytes(p, k);
        if (bytes < 0)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "output %d '%s' has no static shape (it is known only at run time): "
                            "use lt_plan_run", k, g->outputs[k]->name);
        if (bytes > 0 && !outputs[k]) return lt_error(ctx, LT_ERR_USAGE, "output %d '%s' is NULL", k, g->outputs[k]->name);
    }
    memset(&p->copies, 0, sizeof p->copies);
    LT_TRY(lt_plan_device_run_staging(ctx, p));
    const lt_backend_vtbl *vt = p->backend->vt;
    lt_status s = LT_OK;
    bool down = false;
    p->dev_run = true;
    /* inputs: the caller's device memory (copied into the plan's buffers with the steps' copies);
     * those host steps or index checks read are downloaded into their host copies now */
    for (int i = 0; i < p->n_api && s == LT_OK; i++) {
        const void *src = inputs ? inputs[i] : NULL;
        int sl;
        if ((s = caller_input(ctx, p, i, src, &sl)) != LT_OK || sl < 0) continue;
        lt_slot_rt *R = &p->rt[sl];
        const lt_plan_slot *S = &p->slots[sl];
        R->dptr = (void *)src;
        bind_host(p, sl, R->dstage);
        R->cur = lt_datum_retain(R->wrapd);
        if (R->dstage && S->bytes > 0) {
            s = lt_plan_device_copy(ctx, p, R->dstage, src, S->bytes, LT_COPY_DEVICE_TO_HOST, true);
            down = true;
        }
    }
    for (int sl = 0; sl < p->n_slots && s == LT_OK; sl++) {
        lt_plan_slot *S = &p->slots[sl];
        if (S->kind != LT_SLOT_OUTPUT) continue;
        p->rt[sl].dptr = outputs[S->io_index];
        bind_host(p, sl, p->rt[sl].dstage);
        if (p->rt[sl].wrapd) p->rt[sl].cur = lt_datum_retain(p->rt[sl].wrapd);
    }
    if (s == LT_OK && down) s = vt->sync(p->backend, ctx);
    if (s == LT_OK) s = lt_plan_index_checks_run(ctx, p);
    if (s == LT_OK) s = run_steps(ctx, p, opt);
    /* outputs with no OUTPUT buffer of their own: a value listed twice, an input, a constant, or a
     * value only host steps computed */
    bool more = false;
    for (int k = 0; k < g->n_outputs && s == LT_OK; k++) {
        int sl = p->output_slot[k];
        lt_plan_slot *S = &p->slots[sl];
        lt_slot_rt *R = &p->rt[sl];
        int64_t bytes = lt_plan_output_bytes(p, k);
        if ((S->kind == LT_SLOT_OUTPUT && S->io_index == k) || bytes <= 0) continue;
        more = true;
        if (S->kind == LT_SLOT_OUTPUT) {
            s = lt_plan_device_copy(ctx, p, outputs[k], outputs[S->io_index], bytes, LT_COPY_DEVICE_TO_DEVICE, true);
        } else if (S->kind == LT_SLOT_INPUT && R->dptr) { /* an input passed through (no copy onto itself) */
            if (outputs[k] != R->dptr) s = lt_plan_device_copy(ctx, p, outputs[k], R->dptr, bytes, LT_COPY_DEVICE_TO_DEVICE, true);
        } else {
            lt_datum *d = S->kind == LT_SLOT_CONST ? R->wrapd : R->cur;
            if (!d || d->kind != LT_DK_TENSOR || !same_shape(S, d->tensor))
                s = lt_error(ctx, LT_ERR_INVALID, "output %d '%s': the value computed has not the static shape expected",
                             k, S->value->name);
            else /* waits for the copy: the datum is released below */
                s = lt_plan_device_copy(ctx, p, outputs[k], d->tensor->data, bytes, LT_COPY_HOST_TO_DEVICE, false);
        }
    }
    if (s == LT_OK && more && !lt_plan_device_queued(p, opt)) s = vt->sync(p->backend, ctx);
    p->dev_run = false;
    for (int sl = 0; sl < p->n_slots; sl++) p->rt[sl].dptr = NULL;
    release_run(p);
    return s;
}

void lt_plan_last_copies(const lt_plan *p, lt_plan_copies *out) { *out = p->copies; }

void lt_plan_mark_host_reads(lt_plan *p) {
    for (int sl = 0; sl < p->n_slots; sl++) p->rt[sl].host_read = false;
    for (int i = 0; i < p->n_steps; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (st->kind != LT_STEP_HOST) continue;
        for (int k = 0; k < st->n_in; k++)
            if (st->in_slots[k] >= 0 && !(st->dev_in && st->dev_in[k])) p->rt[st->in_slots[k]].host_read = true;
        for (const int *o = p->outer_vals[i]; o && *o >= 0; o++)
            if (p->value_slot[*o] >= 0) p->rt[p->value_slot[*o]].host_read = true;
    }
}

void *lt_plan_device_input(const lt_plan *p, int i) {
    int sl = lt_plan_input_slot(p, i);
    if (p->host_memory || sl < 0 || p->slots[sl].kind != LT_SLOT_INPUT || !p->rt[sl].kernel_use) return NULL;
    return p->slots[sl].ptr;
}

/* ---- accessors ---- */

const lt_model *lt_plan_model(const lt_plan *p) { return p->model; }
void lt_plan_get_stats(const lt_plan *p, lt_plan_stats *out) { *out = p->stats; }
int lt_plan_n_steps(const lt_plan *p) { return p->n_steps; }
const lt_plan_step *lt_plan_get_step(const lt_plan *p, int i) { return i >= 0 && i < p->n_steps ? &p->steps[i] : NULL; }
int lt_plan_n_slots(const lt_plan *p) { return p->n_slots; }
const lt_plan_slot *lt_plan_get_slot(const lt_plan *p, int i) { return i >= 0 && i < p->n_slots ? &p->slots[i] : NULL; }
lt_backend *lt_plan_backend(const lt_plan *p) { return p->backend; }
lt_bmodule *lt_plan_module(const lt_plan *p) { return p->module; }

int lt_plan_n_inputs(const lt_plan *p) { return p->n_api; }
const char *lt_plan_input_name(const lt_plan *p, int i) { return i >= 0 && i < p->n_api ? p->api_names[i] : NULL; }

int lt_plan_input_index(const lt_plan *p, const char *name) {
    for (int i = 0; name && i < p->n_api; i++)
        if (strcmp(p->api_names[i], name) == 0) return i;
    return -1;
}

int lt_plan_input_slot(const lt_plan *p, int i) {
    return i >= 0 && i < p->n_api && p->api_cur[i] >= 0 ? p->input_slot[p->api_cur[i]] : -1;
}
int lt_plan_output_slot(const lt_plan *p, int k) {
    return k >= 0 && k < p->model->graph->n_outputs ? p->output_slot[k] : -1;
}

int64_t lt_plan_output_bytes(const lt_plan *p, int k) {
    int sl = lt_plan_output_slot(p, k);
    if (sl < 0 || !p->rt[sl].is_static) return -1;
    return p->slots[sl].bytes;
}

const lt_plan_step *lt_plan_first_host(const lt_plan *p) {
    for (int i = 0; i < p->n_steps; i++)
        if (p->steps[i].kind == LT_STEP_HOST) return &p->steps[i];
    return NULL;
}

void lt_plan_set_threads(lt_plan *p, int threads) {
    p->threads = threads > 0 ? threads : 0;
    p->stats.threads = p->threads;
    if (p->module && p->backend && p->backend->vt->module_set_threads)
        p->backend->vt->module_set_threads(p->backend, p->module, p->threads);
}

static const char *slot_kind_name(lt_slot_kind k) {
    switch (k) {
    case LT_SLOT_WORKSPACE: return "ws";
    case LT_SLOT_CONST: return "const";
    case LT_SLOT_PACKED: return "packed";
    case LT_SLOT_INPUT: return "input";
    case LT_SLOT_OUTPUT: return "output";
    case LT_SLOT_DYNAMIC: return "dynamic";
    case LT_SLOT_CHECK: return "check";
    }
    return "?";
}

static void human_bytes(int64_t b, char *buf, size_t n) {
    if (b >= ((int64_t)1 << 30)) snprintf(buf, n, "%.2f GiB", (double)b / (double)((int64_t)1 << 30));
    else if (b >= ((int64_t)1 << 20)) snprintf(buf, n, "%.2f MiB", (double)b / (double)((int64_t)1 << 20));
    else if (b >= 1024) snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%lld B", (long long)b);
}

const char *lt_plan_memory_summary(const lt_plan *p, char *buf, size_t n) {
    char a[32], b[32], c[32];
    human_bytes(p->stats.workspace_bytes, a, sizeof a);
    human_bytes(p->stats.intermediates_bytes, b, sizeof b);
    human_bytes(p->stats.lower_bound_bytes, c, sizeof c);
    snprintf(buf, n, "workspace %s (sum of intermediates %s, %d buffers, %d in place, %d views; live peak %s)", a, b,
             p->stats.n_workspace_slots, p->stats.n_inplace, p->stats.n_views, c);
    return buf;
}

static void print_slot_ref(const lt_plan *p, int sl, lt_strbuf *out) {
    if (sl < 0) { lt_sb_printf(out, "-"); return; }
    const lt_plan_slot *S = &p->slots[sl];
    lt_sb_printf(out, "%s", S->value ? S->value->name : S->scratch ? "scratch" : S->kind == LT_SLOT_CHECK ? "word" : "?");
    if (S->alias_of >= 0 && p->slots[S->alias_of].kind != LT_SLOT_WORKSPACE)
        lt_sb_printf(out, "=%s", p->slots[S->alias_of].value->name);
    else if (S->kind == LT_SLOT_WORKSPACE && !p->memory_planned) lt_sb_printf(out, "@?");
    else if (S->kind == LT_SLOT_WORKSPACE) lt_sb_printf(out, "@%lld%s", (long long)S->offset, S->inplace ? "*" : "");
    else lt_sb_printf(out, "(%s)", slot_kind_name(S->kind));
}

void lt_plan_print(const lt_plan *p, lt_strbuf *out) {
    for (int i = 0; i < p->n_steps; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (st->kind == LT_STEP_KERNEL) {
            lt_sb_printf(out, "%3d %-6s %-8s %-14s ", i, st->view ? "view" : "kernel", st->name, lt_pattern_name(st->pattern));
            for (int j = 0; j < st->n_args; j++) {
                lt_sb_printf(out, "%s", j == 0 ? "" : j == st->group->n_outputs ? " <- " : ", ");
                print_slot_ref(p, st->arg_slots[j], out);
            }
            lt_sb_printf(out, "   # %s\n", st->origin);
        } else {
            lt_sb_printf(out, "%3d host   %-8s ", i, st->name);
            for (int k = 0; k < st->n_out; k++) {
                lt_sb_printf(out, "%s", k ? ", " : "");
                print_slot_ref(p, st->out_slots[k], out);
            }
            lt_sb_printf(out, " <- ");
            for (int k = 0; k < st->n_in; k++) {
                lt_sb_printf(out, "%s", k ? ", " : "");
                print_slot_ref(p, st->in_slots[k], out);
            }
            lt_sb_printf(out, "   # %s: %s\n", st->origin, st->reason ? st->reason : "");
        }
    }
    char buf[256];
    lt_sb_printf(out, "steps: %d (%d kernels, %d host)\n%s\n", p->stats.n_steps, p->stats.n_kernels, p->stats.n_host,
                 p->memory_planned ? lt_plan_memory_summary(p, buf, sizeof buf) : "memory: not planned yet");
}
