/* plan_device.c — plans on a backend whose memory is not host memory (CUDA; see plan.h "Device
 * plans"). Everything goes through the backend's vtable: alloc, copy / copy_async, launch, sync, and
 * the optional graph and event calls.
 *
 * Build (after the memory plan placed the workspace on the device):
 *   lt_plan_device_prepare
 *     1. constants a kernel reads: one device allocation, each uploaded once (ptr = device address,
 *        hptr = the initializer); or, with the caller's share.const_acquire (a family), the caller's
 *        buffers, shared by plans whose constants hold the same bytes;
 *     2. kernel-used graph inputs and all OUTPUT slots: one device allocation of fixed buffers, so no
 *        kernel argument changes between runs (views of an input follow their root);
 *     3. host copies (hptr) of workspace values that host steps read or write: one host allocation;
 *     4. the copies of a run, by a walk over the steps that tracks where each value is valid (device
 *        buffer, host copy, or both): inputs host->device before step 0; a kernel-written value
 *        device->host before the first host step that reads it; a host-written value host->device
 *        right after its host step, when a kernel reads it; outputs device->host at the end unless
 *        their host copy is already current.
 *   lt_plan_device_capture (after the argument arrays): segments = maximal runs of kernel steps with
 *     no host step and no copy inside; each is captured once as a graph when the backend has graphs
 *     and the plan allows them, so a plan without host steps is one graph. With the caller's graph
 *     slots (a family's plans of one bucket) a segment is captured as a template instead, and a run
 *     replays it through one of the slot's few instantiated graphs, updated in place when none holds
 *     it: graphs per bucket, not per shape (lt_plan_graph_slot).
 * Run (lt_plan_device_run_steps): at each position its copies (uploads queued, downloads before a
 * host step followed by one sync), then the step or the segment's graph; one sync at the end after
 * the outputs' downloads. Nothing is allocated here except the per-step events of the first run that
 * times steps (lt_plan_run_options.step_seconds), kept for later runs.
 * Device runs (lt_plan_run_device, plan.c): the same copies, but an input's upload is a device-to-
 * device copy from the caller's device memory and the outputs go device to device into the caller's
 * (device_run_outputs); inputs and outputs that host steps or index checks touch get host copies
 * (lt_plan_device_run_staging: one host allocation on the first device run, kept). Every copy is
 * counted (lt_plan_last_copies).
 */
#include "plan_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t align_up(int64_t v) { return (v + LT_MEMPLAN_ALIGN - 1) / LT_MEMPLAN_ALIGN * LT_MEMPLAN_ALIGN; }

static bool written_by_host(const lt_plan *p, int sl) {
    int d = p->slots[sl].def_step;
    return d >= 0 && d < p->n_steps && p->steps[d].kind == LT_STEP_HOST;
}

/* Does workspace slot sl need a host copy (a host step reads or writes it)? */
static bool needs_staging(const lt_plan *p, int sl) {
    const lt_plan_slot *S = &p->slots[sl];
    return S->kind == LT_SLOT_WORKSPACE && !S->scratch && (p->rt[sl].host_read || written_by_host(p, sl));
}

static const char *slot_name(const lt_plan *p, int sl) {
    return p->slots[sl].value ? p->slots[sl].value->name : "(scratch)";
}

/* 1-3: constants, input/output buffers, staging. */
static lt_status place_buffers(lt_ctx *ctx, lt_plan *p) {
    const lt_backend_vtbl *vt = p->backend->vt;
    int64_t cbytes = 0, iobytes = 0, sbytes = 0;
    int nconst = 0, nio = 0;
    for (int sl = 0; sl < p->n_slots; sl++) {
        const lt_plan_slot *S = &p->slots[sl];
        const lt_slot_rt *R = &p->rt[sl];
        if (S->kind == LT_SLOT_CONST && R->kernel_use) cbytes += align_up(S->bytes), nconst++;
        if ((S->kind == LT_SLOT_INPUT && R->kernel_use) || S->kind == LT_SLOT_OUTPUT) iobytes += align_up(S->bytes), nio++;
        if (needs_staging(p, sl)) sbytes += align_up(S->bytes);
    }
    /* at least one aligned block whenever a slot is placed, so even an empty tensor has an address */
    bool shared = p->share.const_acquire && p->share.const_release;
    if (shared && nconst > 0) { /* the caller's buffers (a family's plans share their constants) */
        p->held_consts = lt_arena_alloc(p->arena, sizeof(void *) * (size_t)nconst);
        if (!p->held_consts) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan constants)");
    } else if (nconst > 0) {
        LT_TRY(vt->alloc(p->backend, ctx, (size_t)(cbytes > 0 ? cbytes : LT_MEMPLAN_ALIGN), &p->dev_consts));
    }
    if (nio > 0) LT_TRY(vt->alloc(p->backend, ctx, (size_t)(iobytes > 0 ? iobytes : LT_MEMPLAN_ALIGN), &p->dev_io));
    if (sbytes > 0) {
        p->staging = lt_mem_alloc((size_t)sbytes);
        if (!p->staging) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (%lld bytes of host staging)", (long long)sbytes);
    }
    int64_t co = 0, io = 0, so = 0;
    for (int sl = 0; sl < p->n_slots; sl++) {
        lt_plan_slot *S = &p->slots[sl];
        lt_slot_rt *R = &p->rt[sl];
        if (S->kind == LT_SLOT_CONST) R->hptr = S->value->init->data;
        if (S->kind == LT_SLOT_CONST && R->kernel_use && p->held_consts) {
            LT_TRY(p->share.const_acquire(p->share.user, ctx, slot_name(p, sl), R->hptr, S->bytes, &S->ptr));
            p->held_consts[p->n_held_consts++] = S->ptr;
        } else if (S->kind == LT_SLOT_CONST && R->kernel_use) {
            S->ptr = (char *)p->dev_consts + co;
            co += align_up(S->bytes);
            if (S->bytes > 0) LT_TRY(vt->copy(p->backend, ctx, S->ptr, R->hptr, (size_t)S->bytes, LT_COPY_HOST_TO_DEVICE));
        }
        if ((S->kind == LT_SLOT_INPUT && R->kernel_use) || S->kind == LT_SLOT_OUTPUT) {
            S->ptr = (char *)p->dev_io + io;
            io += align_up(S->bytes);
        }
        if (needs_staging(p, sl)) {
            R->hptr = (char *)p->staging + so;
            so += align_up(S->bytes);
        }
    }
    /* views follow their root's (now fixed) device buffer */
    for (int sl = 0; sl < p->n_slots; sl++)
        if (p->slots[sl].alias_of >= 0) p->slots[sl].ptr = p->slots[p->slots[sl].alias_of].ptr;
    p->stats.device_const_bytes = cbytes;
    p->stats.io_bytes = iobytes;
    p->stats.staging_bytes = sbytes;
    return LT_OK;
}

/* ---- 4. the copies of a run ---- */

typedef struct xfer_walk {
    bool *dev_ok, *host_ok;
    lt_vec list; /* lt_plan_xfer * */
    lt_plan_xfer *pool;
    int n, cap;
} xfer_walk;

static lt_status add_xfer(lt_ctx *ctx, xfer_walk *w, int pos, int sl, lt_copy_dir dir) {
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 32;
        lt_plan_xfer *np = lt_mem_realloc(w->pool, (size_t)cap * sizeof *np);
        if (!np) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan copies)");
        w->pool = np;
        w->cap = cap;
    }
    w->pool[w->n++] = (lt_plan_xfer){pos, sl, dir};
    return LT_OK;
}

/* Kernel step i reads slot sl: its device buffer must be current. */
static lt_status need_device(lt_ctx *ctx, lt_plan *p, xfer_walk *w, int sl, int i) {
    if (w->dev_ok[sl]) return LT_OK;
    if (!w->host_ok[sl] || (p->slots[sl].kind != LT_SLOT_OUTPUT && !p->rt[sl].hptr))
        return lt_error(ctx, LT_ERR_INTERNAL, "plan: kernel %s reads '%s', which no earlier step wrote", p->steps[i].name,
                        slot_name(p, sl));
    int d = p->slots[sl].def_step;
    LT_TRY(add_xfer(ctx, w, d >= 0 ? d + 1 : 0, sl, LT_COPY_HOST_TO_DEVICE));
    w->dev_ok[sl] = true;
    return LT_OK;
}

/* Host step i reads slot sl: its host copy must be current. */
static lt_status need_host(lt_ctx *ctx, lt_plan *p, xfer_walk *w, int sl, int i) {
    lt_slot_kind k = p->slots[sl].kind;
    if (w->host_ok[sl] || (k != LT_SLOT_WORKSPACE && k != LT_SLOT_OUTPUT && k != LT_SLOT_PACKED)) return LT_OK;
    if (!w->dev_ok[sl] || (k != LT_SLOT_OUTPUT && !p->rt[sl].hptr))
        return lt_error(ctx, LT_ERR_INTERNAL, "plan: host step %s reads '%s', which has no current copy", p->steps[i].name,
                        slot_name(p, sl));
    LT_TRY(add_xfer(ctx, w, i, sl, LT_COPY_DEVICE_TO_HOST));
    w->host_ok[sl] = true;
    return LT_OK;
}

static int cmp_xfer(const void *a, const void *b) {
    const lt_plan_xfer *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Can a step read slot sl on the device: a buffer a kernel writes, or one uploaded for kernels? */
static bool device_readable(const lt_plan *p, int sl) {
    const lt_plan_slot *S = &p->slots[sl];
    switch (S->kind) {
    case LT_SLOT_WORKSPACE: return !S->scratch;
    case LT_SLOT_OUTPUT: return true;
    case LT_SLOT_INPUT:
    case LT_SLOT_CONST: return p->rt[sl].kernel_use;
    default: return false;
    }
}

static bool listed(const lt_attr *a, int k) {
    for (int j = 0; a && j < a->n; j++)
        if (a->ints[j] == k) return true;
    return false;
}

/* The inputs of DataDependentRest steps read on the device (step dev_in: all but the node's
 * "host_inputs", when device_readable), then which slots host steps read on the host. */
static lt_status rest_device_inputs(lt_ctx *ctx, lt_plan *p) {
    for (int i = 0; i < p->n_steps; i++) {
        lt_plan_step *st = &p->steps[i];
        const lt_attr *host = st->kind == LT_STEP_HOST && st->node->op == LT_OP_DataDependentRest
                                  ? lt_node_attr(st->node, "host_inputs") : NULL;
        if (!host || host->type != LT_AT_INTS) continue;
        st->dev_in = lt_arena_alloc(p->arena, (size_t)st->n_in + 1);
        if (!st->dev_in) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan)");
        for (int k = 0; k < st->n_in; k++)
            st->dev_in[k] = st->in_slots[k] >= 0 && !listed(host, k) && device_readable(p, st->in_slots[k]);
    }
    lt_plan_mark_host_reads(p);
    return LT_OK;
}

static lt_status plan_xfers(lt_ctx *ctx, lt_plan *p) {
    xfer_walk w = {0};
    w.dev_ok = lt_calloc(ctx, (size_t)p->n_slots + 1, 1, "plan copies");
    w.host_ok = lt_calloc(ctx, (size_t)p->n_slots + 1, 1, "plan copies");
    lt_status s = LT_OK;
    if (!w.dev_ok || !w.host_ok) { s = LT_ERR_NOMEM; goto done; }
    for (int sl = 0; sl < p->n_slots && s == LT_OK; sl++) {
        const lt_plan_slot *S = &p->slots[sl];
        switch (S->kind) {
        case LT_SLOT_CONST: w.host_ok[sl] = true; w.dev_ok[sl] = p->rt[sl].kernel_use; break;
        case LT_SLOT_PACKED:
        case LT_SLOT_CHECK: w.dev_ok[sl] = true; break;
        case LT_SLOT_DYNAMIC: w.host_ok[sl] = true; break;
        case LT_SLOT_INPUT:
            w.host_ok[sl] = true;
            if (p->rt[sl].kernel_use) {
                s = add_xfer(ctx, &w, 0, sl, LT_COPY_HOST_TO_DEVICE);
                w.dev_ok[sl] = true;
            }
            break;
        default: break;
        }
    }
    for (int i = 0; i < p->n_steps && s == LT_OK; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (st->kind == LT_STEP_KERNEL) {
            int nout = st->group->n_outputs;
            for (int j = nout; j < st->n_args && s == LT_OK; j++) {
                int sl = st->arg_slots[j];
                if (!p->slots[sl].scratch) s = need_device(ctx, p, &w, sl, i);
            }
            for (int j = 0; j < st->n_args; j++) { /* outputs, and scratch (defined here) */
                int sl = st->arg_slots[j];
                if (j >= nout && !p->slots[sl].scratch) continue;
                w.dev_ok[sl] = true;
                w.host_ok[sl] = false;
            }
        } else {
            for (int k = 0; k < st->n_in && s == LT_OK; k++)
                if (st->in_slots[k] >= 0)
                    s = st->dev_in && st->dev_in[k] ? need_device(ctx, p, &w, st->in_slots[k], i)
                                                    : need_host(ctx, p, &w, st->in_slots[k], i);
            for (const int *o = p->outer_vals[i]; o && *o >= 0 && s == LT_OK; o++)
                if (p->value_slot[*o] >= 0) s = need_host(ctx, p, &w, p->value_slot[*o], i);
            for (int k = 0; k < st->n_out; k++) {
                int sl = st->out_slots[k];
                if (sl < 0) continue;
                w.host_ok[sl] = true;
                w.dev_ok[sl] = false;
            }
        }
    }
    for (int sl = 0; sl < p->n_slots && s == LT_OK; sl++)
        if (p->slots[sl].kind == LT_SLOT_OUTPUT && !w.host_ok[sl]) {
            if (!w.dev_ok[sl])
                s = lt_error(ctx, LT_ERR_INTERNAL, "plan: output '%s' is written by no step", slot_name(p, sl));
            else s = add_xfer(ctx, &w, p->n_steps, sl, LT_COPY_DEVICE_TO_HOST);
        }
    if (s != LT_OK) goto done;
    qsort(w.pool, (size_t)w.n, sizeof *w.pool, cmp_xfer);
    p->xfers = lt_arena_alloc(p->arena, sizeof(lt_plan_xfer) * (size_t)(w.n + 1));
    p->xfer_first = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(p->n_steps + 2));
    if (!p->xfers || !p->xfer_first) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan copies)"); goto done; }
    if (w.n) memcpy(p->xfers, w.pool, sizeof *w.pool * (size_t)w.n);
    p->n_xfers = w.n;
    for (int pos = 0, k = 0; pos <= p->n_steps + 1; pos++) {
        while (k < w.n && w.pool[k].pos < pos) k++;
        p->xfer_first[pos] = k;
    }
    p->stats.n_transfers = w.n;
done:
    lt_mem_free(w.dev_ok);
    lt_mem_free(w.host_ok);
    lt_mem_free(w.pool);
    return s;
}

lt_status lt_plan_device_prepare(lt_ctx *ctx, lt_plan *p) {
    p->stats.device = true;
    LT_TRY(rest_device_inputs(ctx, p));
    LT_TRY(place_buffers(ctx, p));
    LT_TRY(plan_xfers(ctx, p));
    if (p->backend->vt->event_new)
        for (int k = 0; k < 2; k++) LT_TRY(p->backend->vt->event_new(p->backend, ctx, &p->ev_run[k]));
    return LT_OK;
}

/* ---- segments and graphs ---- */

static bool has_xfers_at(const lt_plan *p, int pos) { return p->xfer_first[pos + 1] > p->xfer_first[pos]; }

/* Templates' ids: unique in the process, so a slot never mistakes a new plan's template for the
 * freed one it last held. */
static _Atomic uint64_t next_template_id = 1;

static lt_status capture(lt_ctx *ctx, lt_plan *p, lt_plan_segment *sg, bool instantiate) {
    const lt_backend_vtbl *vt = p->backend->vt;
    LT_TRY(vt->graph_begin(p->backend, ctx));
    lt_status s = LT_OK;
    for (int i = sg->first; i < sg->end && s == LT_OK; i++) {
        const lt_plan_step *st = &p->steps[i];
        if (!st->view) s = vt->launch(p->backend, ctx, st->bk, st->args, st->n_args + st->n_scalars);
    }
    void *g = NULL;
    lt_ctx c2 = {0};
    lt_status e = vt->graph_end(p->backend, s == LT_OK ? ctx : &c2, instantiate, &g); /* ends the capture either way */
    if (s != LT_OK) {
        if (e == LT_OK) vt->graph_free(p->backend, g);
        return s;
    }
    if (e != LT_OK) return e;
    sg->graph = g;
    return LT_OK;
}

lt_status lt_plan_device_capture(lt_ctx *ctx, lt_plan *p) {
    p->segment_at = lt_arena_alloc(p->arena, sizeof(int) * (size_t)(p->n_steps + 1));
    p->segments = lt_arena_alloc(p->arena, sizeof(lt_plan_segment) * (size_t)(p->n_steps + 1));
    if (!p->segment_at || !p->segments) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan segments)");
    for (int i = 0; i < p->n_steps; i++) p->segment_at[i] = -1;
    for (int i = 0; i < p->n_steps;) {
        if (p->steps[i].kind != LT_STEP_KERNEL) { i++; continue; }
        int e = i + 1;
        while (e < p->n_steps && p->steps[e].kind == LT_STEP_KERNEL && !has_xfers_at(p, e)) e++;
        lt_plan_segment *sg = &p->segments[p->n_segments];
        *sg = (lt_plan_segment){.first = i, .end = e};
        for (int k = i; k < e; k++) sg->n_launches += !p->steps[k].view;
        p->segment_at[i] = p->n_segments++;
        i = e;
    }
    p->stats.n_segments = p->n_segments;
    const lt_backend_vtbl *vt = p->backend->vt;
    if (!p->use_graphs || !vt->graph_begin || !vt->graph_end || !vt->graph_launch || !vt->graph_free) return LT_OK;
    for (int k = 0; k < p->n_segments; k++) {
        lt_plan_segment *sg = &p->segments[k];
        if (sg->n_launches == 0) continue;
        /* shared graphs only where they update in place (else each switch would instantiate) */
        bool shares = p->share.graph_slot && vt->graph_replay && (!vt->graph_can_update || vt->graph_can_update(p->backend));
        sg->slot = shares ? p->share.graph_slot(p->share.user, k) : NULL;
        LT_TRY(capture(ctx, p, sg, !sg->slot));
        if (sg->slot) sg->id = next_template_id++;
        p->stats.n_graphs++;
    }
    return LT_OK;
}

/* A segment's graph: its own, or its template through one of the bucket's shared ones: the one
 * holding it, else an unused one, else the least recently used (loaded with it). */
static lt_status launch_segment(lt_ctx *ctx, lt_plan *p, lt_plan_segment *sg) {
    const lt_backend_vtbl *vt = p->backend->vt;
    if (!sg->slot) return vt->graph_launch(p->backend, ctx, sg->graph);
    lt_plan_graph_slot *sl = sg->slot;
    int cap = sl->capacity < 1 ? 1 : sl->capacity > LT_GRAPH_SLOT_MAX ? LT_GRAPH_SLOT_MAX : sl->capacity, j = -1;
    for (int k = 0; k < cap && j < 0; k++)
        if (sl->exec[k] && sl->loaded[k] == sg->id) j = k;
    for (int k = 0; k < cap && j < 0; k++)
        if (!sl->exec[k]) j = k;
    if (j < 0) {
        j = 0;
        for (int k = 1; k < cap; k++)
            if (sl->used[k] < sl->used[j]) j = k;
    }
    lt_graph_replay how = LT_GRAPH_REPLAYED;
    lt_status s = vt->graph_replay(p->backend, ctx, &sl->exec[j], sg->graph, sl->loaded[j] != sg->id, &how);
    if (how == LT_GRAPH_INSTANTIATED) sl->instantiated++;
    if (how == LT_GRAPH_UPDATED) sl->updated++;
    sl->loaded[j] = s == LT_OK ? sg->id : 0; /* after a failure, load again next time */
    sl->used[j] = ++sl->clock;
    return s;
}

/* ---- running ---- */

lt_status lt_plan_device_copy(lt_ctx *ctx, lt_plan *p, void *dst, const void *src, int64_t bytes, lt_copy_dir dir,
                              bool async) {
    if (bytes <= 0) return LT_OK;
    const lt_backend_vtbl *vt = p->backend->vt;
    if (async && vt->copy_async) LT_TRY(vt->copy_async(p->backend, ctx, dst, src, (size_t)bytes, dir));
    else LT_TRY(vt->copy(p->backend, ctx, dst, src, (size_t)bytes, dir));
    p->copies.n[dir]++;
    p->copies.bytes[dir] += bytes;
    return LT_OK;
}

/* The copies before position pos. Downloads are followed by one sync (a host step reads them next;
 * at the end, the run's one sync). A device run (lt_plan_run_device) takes its inputs from the
 * caller's device memory instead of a host copy (device to device), and leaves the outputs' last
 * copies to device_run_outputs. */
static lt_status do_xfers(lt_ctx *ctx, lt_plan *p, int pos) {
    const lt_backend_vtbl *vt = p->backend->vt;
    bool down = false;
    for (int k = p->xfer_first[pos]; k < p->xfer_first[pos + 1]; k++) {
        const lt_plan_xfer *x = &p->xfers[k];
        const lt_plan_slot *S = &p->slots[x->slot];
        const lt_slot_rt *R = &p->rt[x->slot];
        void *h = R->hptr;
        if (S->bytes <= 0) continue;
        if (p->dev_run && S->kind == LT_SLOT_OUTPUT && pos == p->n_steps) continue;
        if (p->dev_run && S->kind == LT_SLOT_INPUT && R->dptr && x->dir == LT_COPY_HOST_TO_DEVICE) {
            if (R->dptr != S->ptr) /* the caller wrote its input into the plan's buffer: nothing to copy */
                LT_TRY(lt_plan_device_copy(ctx, p, S->ptr, R->dptr, S->bytes, LT_COPY_DEVICE_TO_DEVICE, true));
            continue;
        }
        if (!h) return lt_error(ctx, LT_ERR_INTERNAL, "plan: '%s' has no host memory at run time", slot_name(p, x->slot));
        void *dst = x->dir == LT_COPY_HOST_TO_DEVICE ? S->ptr : h;
        const void *src = x->dir == LT_COPY_HOST_TO_DEVICE ? h : S->ptr;
        LT_TRY(lt_plan_device_copy(ctx, p, dst, src, S->bytes, x->dir, true));
        down |= x->dir == LT_COPY_DEVICE_TO_HOST;
    }
    if (down && pos < p->n_steps && vt->copy_async) LT_TRY(vt->sync(p->backend, ctx));
    return LT_OK;
}

/* ---- device runs (lt_plan_run_device) ---- */

bool lt_plan_device_queued(const lt_plan *p, const lt_plan_run_options *opt) {
    return opt && opt->no_sync && p->dev_run && p->stats.n_host == 0 && !opt->device_seconds && !opt->step_seconds;
}

static int64_t align_stage(int64_t bytes) { return align_up(bytes > 0 ? bytes : 1); }

/* Does INPUT / OUTPUT slot sl need a host copy in a device run: an input a host step reads or whose
 * values an index check reads, an output a host step reads or writes? */
static bool run_staged(const lt_plan *p, int sl) {
    const lt_plan_slot *S = &p->slots[sl];
    const lt_slot_rt *R = &p->rt[sl];
    if (!R->is_static) return false;
    if (S->kind == LT_SLOT_INPUT) {
        if (R->host_read) return true;
        for (int i = 0; i < p->n_index_checks; i++)
            if (p->index_checks[i]->slot == sl) return true;
        return false;
    }
    return S->kind == LT_SLOT_OUTPUT && (R->host_read || written_by_host(p, sl));
}

lt_status lt_plan_device_run_staging(lt_ctx *ctx, lt_plan *p) {
    if (p->dev_staging_ready) return LT_OK;
    int64_t bytes = 0;
    for (int sl = 0; sl < p->n_slots; sl++)
        if (run_staged(p, sl)) bytes += align_stage(p->slots[sl].bytes);
    if (bytes > 0) {
        p->dev_staging = lt_mem_alloc((size_t)bytes);
        if (!p->dev_staging)
            return lt_error(ctx, LT_ERR_NOMEM, "out of memory (%lld bytes of host copies for a device run)", (long long)bytes);
    }
    int64_t o = 0;
    for (int sl = 0; sl < p->n_slots; sl++)
        if (run_staged(p, sl)) {
            p->rt[sl].dstage = (char *)p->dev_staging + o;
            o += align_stage(p->slots[sl].bytes);
        }
    p->dev_staging_ready = true;
    return LT_OK;
}

/* Is the device buffer of OUTPUT slot sl current after the steps? Always when a kernel wrote it; a
 * value a host step wrote is current there when it was uploaded for a kernel to read. */
static bool device_current(const lt_plan *p, int sl) {
    if (!written_by_host(p, sl)) return true;
    for (int k = 0; k < p->n_xfers; k++)
        if (p->xfers[k].slot == sl && p->xfers[k].dir == LT_COPY_HOST_TO_DEVICE) return true;
    return false;
}

/* A device run's outputs into the caller's device memory: from the plan's device buffer (device to
 * device), or, for a value only a host step holds, from its host copy. */
static lt_status device_run_outputs(lt_ctx *ctx, lt_plan *p) {
    for (int sl = 0; sl < p->n_slots; sl++) {
        const lt_plan_slot *S = &p->slots[sl];
        const lt_slot_rt *R = &p->rt[sl];
        if (S->kind != LT_SLOT_OUTPUT || !R->dptr || S->bytes <= 0) continue;
        if (device_current(p, sl)) {
            LT_TRY(lt_plan_device_copy(ctx, p, R->dptr, S->ptr, S->bytes, LT_COPY_DEVICE_TO_DEVICE, true));
        } else {
            if (!R->hptr) return lt_error(ctx, LT_ERR_INTERNAL, "plan: output '%s' has no host copy", slot_name(p, sl));
            LT_TRY(lt_plan_device_copy(ctx, p, R->dptr, R->hptr, S->bytes, LT_COPY_HOST_TO_DEVICE, true));
        }
    }
    return LT_OK;
}

static lt_status step_events(lt_ctx *ctx, lt_plan *p) {
    const lt_backend_vtbl *vt = p->backend->vt;
    if (p->ev_steps || !vt->event_new) return LT_OK;
    void **ev = lt_calloc(ctx, (size_t)(2 * p->n_steps + 1), sizeof *ev, "step events");
    if (!ev) return LT_ERR_NOMEM;
    p->ev_steps = ev;
    for (int i = 0; i < p->n_steps; i++)
        if (p->steps[i].kind == LT_STEP_KERNEL && !p->steps[i].view) {
            LT_TRY(vt->event_new(p->backend, ctx, &ev[2 * i]));
            LT_TRY(vt->event_new(p->backend, ctx, &ev[2 * i + 1]));
        }
    return LT_OK;
}

static void release_dead(lt_plan *p, int i) {
    const lt_plan_step *st = &p->steps[i];
    if (st->kind != LT_STEP_HOST) return;
    for (int k = 0; k < st->n_in; k++) {
        int sl = st->in_slots[k];
        if (sl >= 0 && p->slots[sl].kind == LT_SLOT_DYNAMIC && p->slots[sl].last_step == i) {
            lt_datum_release(p->rt[sl].cur);
            p->rt[sl].cur = NULL;
        }
    }
}

lt_status lt_plan_device_run_steps(lt_ctx *ctx, lt_plan *p, const lt_plan_run_options *opt) {
    const lt_backend_vtbl *vt = p->backend->vt;
    p->rng = opt ? opt->seed : 0;
    p->max_loop_bytes = opt ? opt->max_loop_bytes : 0;
    double *secs = opt ? opt->step_seconds : NULL;
    double *dev_secs = opt ? opt->device_seconds : NULL;
    bool events = vt->event_new && vt->event_record && vt->event_elapsed;
    if (secs && events) LT_TRY(step_events(ctx, p));
    bool per_step = secs && events && p->ev_steps;
    double t_first = 0, t_last = 0;
    LT_TRY(do_xfers(ctx, p, 0));
    if (dev_secs) { /* the steps' time: after the inputs' uploads, before the outputs' downloads */
        if (events && p->ev_run[0]) LT_TRY(vt->event_record(p->backend, ctx, p->ev_run[0]));
        else LT_TRY(vt->sync(p->backend, ctx));
        t_first = now_s();
    }
    for (int i = 0; i < p->n_steps; i++) {
        if (i > 0) LT_TRY(do_xfers(ctx, p, i));
        const lt_plan_step *st = &p->steps[i];
        int sg = p->segment_at[i];
        if (!secs && sg >= 0 && p->segments[sg].graph) {
            LT_TRY(launch_segment(ctx, p, &p->segments[sg]));
            i = p->segments[sg].end - 1;
            continue;
        }
        if (st->kind == LT_STEP_KERNEL) {
            if (st->view) continue;
            if (per_step) LT_TRY(vt->event_record(p->backend, ctx, p->ev_steps[2 * i]));
            double t0 = secs && !per_step ? now_s() : 0;
            LT_TRY(vt->launch(p->backend, ctx, st->bk, st->args, st->n_args + st->n_scalars));
            if (per_step) LT_TRY(vt->event_record(p->backend, ctx, p->ev_steps[2 * i + 1]));
            else if (secs) {
                LT_TRY(vt->sync(p->backend, ctx));
                secs[i] += now_s() - t0;
            }
        } else {
            double t0 = secs ? now_s() : 0;
            LT_TRY(lt_plan_host_run(ctx, p, i));
            if (secs) secs[i] += now_s() - t0;
            release_dead(p, i);
        }
    }
    if (dev_secs) {
        if (events && p->ev_run[1]) LT_TRY(vt->event_record(p->backend, ctx, p->ev_run[1]));
        else {
            LT_TRY(vt->sync(p->backend, ctx));
            t_last = now_s();
        }
    }
    if (p->n_steps > 0) LT_TRY(do_xfers(ctx, p, p->n_steps));
    if (p->dev_run) LT_TRY(device_run_outputs(ctx, p));
    if (!lt_plan_device_queued(p, opt)) LT_TRY(vt->sync(p->backend, ctx)); /* the run's one sync: outputs are downloaded */
    if (dev_secs) {
        if (events && p->ev_run[0] && p->ev_run[1])
            LT_TRY(vt->event_elapsed(p->backend, ctx, p->ev_run[0], p->ev_run[1], dev_secs));
        else *dev_secs = t_last - t_first;
    }
    for (int i = 0; per_step && i < p->n_steps; i++) {
        if (!p->ev_steps[2 * i]) continue;
        double t = 0;
        LT_TRY(vt->event_elapsed(p->backend, ctx, p->ev_steps[2 * i], p->ev_steps[2 * i + 1], &t));
        secs[i] += t;
    }
    return LT_OK;
}

void lt_plan_device_free(lt_plan *p) {
    if (!p->backend) return;
    const lt_backend_vtbl *vt = p->backend->vt;
    for (int k = 0; k < p->n_segments; k++)
        if (p->segments[k].graph) vt->graph_free(p->backend, p->segments[k].graph);
    for (int k = 0; k < 2; k++)
        if (p->ev_run[k]) vt->event_free(p->backend, p->ev_run[k]);
    for (int i = 0; p->ev_steps && i < 2 * p->n_steps; i++)
        if (p->ev_steps[i]) vt->event_free(p->backend, p->ev_steps[i]);
    lt_mem_free(p->ev_steps);
    if (p->dev_consts) vt->free(p->backend, p->dev_consts);
    for (int k = 0; k < p->n_held_consts; k++) p->share.const_release(p->share.user, p->held_consts[k]);
    p->n_held_consts = 0;
    if (p->dev_io) vt->free(p->backend, p->dev_io);
    lt_mem_free(p->staging);
    lt_mem_free(p->dev_staging);
    p->ev_steps = NULL;
    p->dev_consts = p->dev_io = p->staging = p->dev_staging = NULL;
    p->dev_staging_ready = false;
    p->n_segments = 0;
}
