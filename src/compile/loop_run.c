/* loop_run.c — a Loop of a host step run by the plan: its body's compiled plan (split_body.c) run
 * once per iteration on buffers bound once, instead of the interpreter's Loop.
 *
 * The interpreter's Loop makes new tensors every iteration (the iteration number, the condition,
 * each output of the body) and stacks the scan outputs at the end. When the body's plan has static
 * shapes and hands each loop-carried value on with the dtype and shape it came in with, this runs
 * the iterations itself:
 *   - the body's plan runs on caller memory (lt_plan_run_buffers): nothing is allocated per iteration;
 *   - each loop-carried value has two buffers, read from one and written into the other in turn (the
 *     Loop's input copied into one first);
 *   - each scan output is one tensor that the body writes slice i of at iteration i, in place: sized
 *     to the trip count when it is known and small enough, else grown by doubling, within the limit
 *     of max_loop_bytes (the interpreter's, with its message);
 *   - the condition the body computes is read after each iteration (on a device, one byte copied
 *     back, unless the body hands its condition input on unchanged).
 * A body compiled for a device (CUDA) keeps the loop on the device: the outer values and the first
 * loop-carried values are uploaded once, into the body plan's own input buffers when it has them
 * (lt_plan_device_input: no copy per iteration; the next loop-carried values are copied back there);
 * the body's plan runs on device memory (lt_plan_run_device: its captured graph replayed), its
 * iterations queued without a sync (no_sync) unless the condition must be read; the iteration numbers
 * are uploaded in blocks, the scan outputs grow on the device, and the results come back once.
 * Anything else is left to the caller, which interprets the Loop (and reports its errors in the
 * interpreter's words): a missing or non-scalar trip count or condition, zero iterations, a body
 * output without a static shape, a loop-carried value that changes dtype or shape. (A body with
 * random ops never gets here: split_body.c leaves it to the interpreter, which draws from one stream
 * across iterations.)
 */
#include "split_impl.h"

#include <stdio.h>
#include <string.h>

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

/* Why plan cannot run a Loop's iterations as its body (NULL: it can). */
static const char *unfit(lt_plan *plan, lt_datum *const *in, int n_carried, int n_scan, int n_roots) {
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
    return NULL;
}

/* Scan outputs whose whole size (trip count x slice) is at most this are allocated at once. */
#define SCAN_AT_ONCE_BYTES ((int64_t)64 << 20)
#define SCAN_FIRST_CAP 16
/* Iteration numbers uploaded at a time to a device. */
#define ITER_BLOCK 1024

/* Where the loop's buffers live: host memory (dev NULL) or the body plan's device. */
typedef struct loop_mem {
    lt_ctx *ctx;
    lt_backend *dev;
} loop_mem;

/* A buffer: a host tensor (t, whose data is the buffer) or device memory (d). */
typedef struct buffer {
    lt_tensor *t;
    void *d;
} buffer;

static void *buf_ptr(const buffer *b) { return b->t ? b->t->data : b->d; }

/* A buffer of dtype dt and shape dims (a host tensor, or bytes of device memory). */
static lt_status buf_new(const loop_mem *lm, lt_dtype dt, int rank, const int64_t *dims, int64_t bytes, buffer *out) {
    if (!lm->dev) return lt_tensor_new(lm->ctx, dt, rank, dims, &out->t);
    return lm->dev->vt->alloc(lm->dev, lm->ctx, (size_t)(bytes > 0 ? bytes : 1), &out->d);
}

static void buf_free(const loop_mem *lm, buffer *b) {
    if (b->t) lt_tensor_release(b->t);
    if (b->d) lm->dev->vt->free(lm->dev, b->d);
    b->t = NULL, b->d = NULL;
}

static lt_status buf_put(const loop_mem *lm, buffer *b, const void *src, int64_t bytes) {
    if (bytes <= 0) return LT_OK;
    if (!lm->dev) {
        memcpy(b->t->data, src, (size_t)bytes);
        return LT_OK;
    }
    return lm->dev->vt->copy(lm->dev, lm->ctx, b->d, src, (size_t)bytes, LT_COPY_HOST_TO_DEVICE);
}

/* b as a host tensor of dtype dt and shape dims: the buffer itself on the host, a copy of a device
 * buffer. */
static lt_status buf_tensor(const loop_mem *lm, buffer *b, lt_dtype dt, int rank, const int64_t *dims, lt_tensor **out) {
    if (lm->dev) return lt_split_download(lm->ctx, lm->dev, dt, rank, dims, b->d, out);
    *out = b->t, b->t = NULL;
    (*out)->rank = rank, (*out)->numel = 1;
    for (int d = 0; d < rank; d++) (*out)->dims[d] = dims[d], (*out)->numel *= dims[d];
    return LT_OK;
}

typedef struct scan_out {
    buffer b;
    const lt_plan_slot *slice;  /* the body's output: one iteration's slice */
    int64_t cap;                /* iterations it has room for */
} scan_out;

/* Room in every scan output for iteration it (the trip count max_trip bounds it), within the limit
 * of bytes the scan outputs may hold; what they hold so far is kept. */
static lt_status scan_room(lt_eval *ev, const loop_mem *lm, const lt_node *n, scan_out *sc, int n_scan, int64_t it,
                           int64_t max_trip) {
    if (!n_scan || it < sc[0].cap) return LT_OK;
    int64_t cap = it == 0 ? SCAN_FIRST_CAP : 2 * it, per = 0;
    for (int k = 0; k < n_scan; k++) per += sc[k].slice->bytes;
    if (it == 0 && per > 0 && max_trip <= SCAN_AT_ONCE_BYTES / per) cap = max_trip;
    if (cap > max_trip) cap = max_trip;
    int64_t limit = lt_eval_loop_limit(ev), held = it * per;
    LT_TRY(lt_eval_loop_hold(ev, n, &held, per, "the Loop's scan outputs")); /* iteration it's slices */
    if (per > 0 && cap > limit / per) cap = limit / per;
    for (int k = 0; k < n_scan; k++) {
        scan_out *o = &sc[k];
        int64_t bytes = cap * o->slice->bytes, kept = it * o->slice->bytes;
        if (!lm->dev) {
            void *nd = lt_mem_realloc(o->b.t->data, (size_t)(bytes > 0 ? bytes : 1));
            if (!nd) return lt_error(ev->ctx, LT_ERR_NOMEM, "out of memory (loop scan outputs)");
            o->b.t->data = nd;
        } else {
            if (k == 0 && it > 0) LT_TRY(lm->dev->vt->sync(lm->dev, ev->ctx)); /* queued iterations write the old one */
            buffer nb = {0};
            LT_TRY(buf_new(lm, o->slice->dtype, 0, NULL, bytes, &nb));
            lt_status s = kept > 0 ? lm->dev->vt->copy(lm->dev, ev->ctx, nb.d, o->b.d, (size_t)kept, LT_COPY_DEVICE_TO_DEVICE) : LT_OK;
            buf_free(lm, s == LT_OK ? &o->b : &nb);
            LT_TRY(s);
            o->b = nb;
        }
        o->cap = cap;
    }
    return LT_OK;
}

/* The buffers of one Loop run: every one freed by loop_free. */
typedef struct loop_bufs {
    const void **ins;      /* the body plan's inputs */
    void **outs;           /* its outputs */
    buffer *state;         /* two per loop-carried value */
    buffer *roots;         /* device: the outer values uploaded */
    scan_out *sc;
    buffer iters, flags;   /* device: a block of iteration numbers; the condition in (1) and out */
    void **carry_dev;      /* device, when set: the body plan's own input buffer of each loop-carried
                            * value, where the body's output is copied back (state unused) */
} loop_bufs;

static void loop_free(const loop_mem *lm, loop_bufs *lb, int n_carried, int n_roots, int n_scan) {
    for (int k = 0; lb->state && k < 2 * n_carried; k++) buf_free(lm, &lb->state[k]);
    for (int k = 0; lb->roots && k < n_roots; k++) buf_free(lm, &lb->roots[k]);
    for (int k = 0; lb->sc && k < n_scan; k++) buf_free(lm, &lb->sc[k].b);
    buf_free(lm, &lb->iters);
    buf_free(lm, &lb->flags);
    lt_mem_free(lb->ins);
    lt_mem_free(lb->outs);
    lt_mem_free(lb->state);
    lt_mem_free(lb->roots);
    lt_mem_free(lb->sc);
    lt_mem_free(lb->carry_dev);
}

/* Can the body's plan take each loop-carried value in its own input buffer and write the next one
 * there too? Not when an output is an input passed on (copied out of another input's buffer that an
 * earlier copy of the same run may have overwritten). */
static bool carried_in_place(lt_plan *plan, int n_carried) {
    for (int k = 0; k < n_carried; k++) {
        const lt_plan_slot *S = lt_plan_get_slot(plan, lt_plan_output_slot(plan, 1 + k));
        if (!lt_plan_device_input(plan, 2 + k) || !S || S->kind == LT_SLOT_INPUT) return false;
    }
    return true;
}

/* A host value uploaded once for the whole loop, into the body plan's own buffer of its input i when
 * it has one (no copy per iteration), else into own (a buffer of the loop's). */
static lt_status upload_input(const loop_mem *lm, lt_plan *plan, int i, const lt_tensor *t, buffer *own, void **dptr) {
    void *pb = lt_plan_device_input(plan, i);
    buffer b = {.d = pb};
    if (!pb) LT_TRY(buf_new(lm, t->dtype, t->rank, t->dims, lt_tensor_nbytes(t), own));
    LT_TRY(buf_put(lm, pb ? &b : own, t->data, lt_tensor_nbytes(t)));
    *dptr = pb ? pb : own->d;
    return LT_OK;
}

/* The buffers, the first loop-carried values in state[2k + 1] (iteration 0 reads them there and writes
 * state[2k]), the outer values in place (host) or uploaded (device). */
static lt_status loop_alloc(const loop_mem *lm, lt_plan *plan, lt_datum *const *in, lt_datum *const *roots,
                            int n_carried, int n_roots, int n_scan, loop_bufs *lb) {
    lt_ctx *ctx = lm->ctx;
    int n_api = 2 + n_carried + n_roots, n_out = 1 + n_carried + n_scan;
    lb->ins = lt_calloc(ctx, (size_t)n_api, sizeof *lb->ins, "loop");
    lb->outs = lt_calloc(ctx, (size_t)n_out, sizeof *lb->outs, "loop");
    lb->state = lt_calloc(ctx, 2 * (size_t)n_carried + 1, sizeof *lb->state, "loop");
    lb->roots = lt_calloc(ctx, (size_t)n_roots + 1, sizeof *lb->roots, "loop");
    lb->sc = lt_calloc(ctx, (size_t)n_scan + 1, sizeof *lb->sc, "loop");
    if (!lb->ins || !lb->outs || !lb->state || !lb->roots || !lb->sc) return LT_ERR_NOMEM;
    if (lm->dev && n_carried && carried_in_place(plan, n_carried)) {
        lb->carry_dev = lt_calloc(ctx, (size_t)n_carried, sizeof *lb->carry_dev, "loop");
        if (!lb->carry_dev) return LT_ERR_NOMEM;
        for (int k = 0; k < n_carried; k++) {
            LT_TRY(upload_input(lm, plan, 2 + k, in[2 + k]->tensor, &lb->state[2 * k], &lb->carry_dev[k]));
            lb->ins[2 + k] = lb->outs[1 + k] = lb->carry_dev[k];
        }
    }
    for (int k = 0; k < 2 * n_carried && !lb->carry_dev; k++) {
        const lt_tensor *t = in[2 + k / 2]->tensor;
        LT_TRY(buf_new(lm, t->dtype, t->rank, t->dims, lt_tensor_nbytes(t), &lb->state[k]));
        if (k & 1) LT_TRY(buf_put(lm, &lb->state[k], t->data, lt_tensor_nbytes(t)));
    }
    for (int k = 0; k < n_scan; k++) {
        scan_out *o = &lb->sc[k];
        o->slice = lt_plan_get_slot(plan, lt_plan_output_slot(plan, 1 + n_carried + k));
        int64_t dims[LT_MAX_RANK] = {0};
        for (int d = 0; d < o->slice->rank; d++) dims[1 + d] = o->slice->dims[d];
        LT_TRY(buf_new(lm, o->slice->dtype, o->slice->rank + 1, dims, 0, &o->b));
    }
    for (int k = 0; k < n_roots; k++) {
        const lt_tensor *t = roots[k]->tensor;
        if (!lm->dev) {
            lb->ins[2 + n_carried + k] = t->data;
            continue;
        }
        void *d = NULL;
        LT_TRY(upload_input(lm, plan, 2 + n_carried + k, t, &lb->roots[k], &d));
        lb->ins[2 + n_carried + k] = d;
    }
    if (lm->dev) {
        static const uint8_t one = 1;
        LT_TRY(buf_new(lm, LT_INT64, 0, NULL, ITER_BLOCK * (int64_t)sizeof(int64_t), &lb->iters));
        LT_TRY(buf_new(lm, LT_BOOL, 0, NULL, 2, &lb->flags));
        LT_TRY(buf_put(lm, &lb->flags, &one, 1));
    }
    return LT_OK;
}

/* Does the body hand its condition input on as its condition output (it never stops the loop)? */
static bool cond_passes_through(lt_plan *plan) {
    int out = lt_plan_output_slot(plan, 0);
    return out >= 0 && out == lt_plan_input_slot(plan, 1);
}

/* Run iterations from 0 while it < max_trip and the condition holds; *it: how many ran. */
static lt_status iterate(lt_eval *ev, const loop_mem *lm, const lt_node *n, lt_plan *plan, loop_bufs *lb, int n_carried,
                         int n_scan, int64_t max_trip, int64_t *it_out) {
    lt_ctx *ctx = ev->ctx;
    /* on a device the iterations stay queued: what the host reads (the condition, the results) is
     * copied in stream order and waited for */
    lt_plan_run_options ro = {.seed = ev->rng, .max_loop_bytes = ev->max_loop_bytes, .no_sync = true};
    bool read_cond = !lm->dev || !cond_passes_through(plan);
    int64_t it = 0, block[ITER_BLOCK];
    uint8_t one = 1, cond = 1;
    lt_status s = LT_OK;
    for (; it < max_trip && cond; it++) {
        if ((s = scan_room(ev, lm, n, lb->sc, n_scan, it, max_trip)) != LT_OK) break;
        if (lm->dev && it % ITER_BLOCK == 0) {
            for (int j = 0; j < ITER_BLOCK; j++) block[j] = it + j;
            if ((s = buf_put(lm, &lb->iters, block, sizeof block)) != LT_OK) break;
        }
        lb->ins[0] = lm->dev ? (const void *)((int64_t *)lb->iters.d + it % ITER_BLOCK) : (const void *)&it;
        lb->ins[1] = lm->dev ? lb->flags.d : (const void *)&one;
        /* a condition passed through goes onto itself on a device: no copy */
        lb->outs[0] = !lm->dev ? (void *)&cond : read_cond ? (void *)((uint8_t *)lb->flags.d + 1) : lb->flags.d;
        for (int k = 0; k < n_carried && !lb->carry_dev; k++) {
            lb->ins[2 + k] = buf_ptr(&lb->state[2 * k + !(it & 1)]);
            lb->outs[1 + k] = buf_ptr(&lb->state[2 * k + (it & 1)]);
        }
        for (int k = 0; k < n_scan; k++) lb->outs[1 + n_carried + k] = (char *)buf_ptr(&lb->sc[k].b) + it * lb->sc[k].slice->bytes;
        s = lm->dev ? lt_plan_run_device(ctx, plan, &ro, lb->ins, lb->outs) : lt_plan_run_buffers(ctx, plan, &ro, lb->ins, lb->outs);
        if (s == LT_OK && lm->dev && read_cond)
            s = lm->dev->vt->copy(lm->dev, ctx, &cond, (uint8_t *)lb->flags.d + 1, 1, LT_COPY_DEVICE_TO_HOST);
        if (s != LT_OK) break;
        cond = !read_cond || cond != 0;
    }
    *it_out = it;
    return s;
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
    const char *w = unfit(plan, in, n_carried, n_scan, n_roots);
    if (w) {
        snprintf(why, why_size, "%s", w);
        return LT_OK;
    }
    lt_backend *be = lt_plan_backend(plan);
    loop_mem lm = {ctx, be && !be->vt->host_memory ? be : NULL};
    loop_bufs lb = {0};
    int64_t it = 0;
    lt_status s = loop_alloc(&lm, plan, in, roots, n_carried, n_roots, n_scan, &lb);
    if (s == LT_OK) s = iterate(ev, &lm, n, plan, &lb, n_carried, n_scan, max_trip, &it);
    for (int k = 0; k < n_carried && s == LT_OK; k++) { /* the buffer the last iteration wrote */
        const lt_tensor *t0 = in[2 + k]->tensor;
        lt_tensor *t = NULL;
        buffer *b = lb.carry_dev ? &(buffer){.d = lb.carry_dev[k]} : &lb.state[2 * k + ((it - 1) & 1)];
        s = buf_tensor(&lm, b, t0->dtype, t0->rank, t0->dims, &t);
        if (s == LT_OK) s = lt_datum_tensor(ctx, t, &out[k]);
    }
    for (int k = 0; k < n_scan && s == LT_OK; k++) {
        const lt_plan_slot *S = lb.sc[k].slice;
        int64_t dims[LT_MAX_RANK] = {it};
        for (int d = 0; d < S->rank; d++) dims[1 + d] = S->dims[d];
        lt_tensor *t = NULL;
        s = buf_tensor(&lm, &lb.sc[k].b, S->dtype, S->rank + 1, dims, &t);
        if (s == LT_OK) s = lt_datum_tensor(ctx, t, &out[n_carried + k]);
    }
    if (s == LT_OK) *done = true, *iterations = it;
    else
        for (int k = 0; k < n->n_out; k++) {
            lt_datum_release(out[k]);
            out[k] = NULL;
        }
    loop_free(&lm, &lb, n_carried, n_roots, n_scan);
    return s == LT_ERR_NOMEM && !ctx->msg[0] ? lt_error(ctx, s, "out of memory (loop)") : s;
}
