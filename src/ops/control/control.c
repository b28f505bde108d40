/* control.c — control flow (If, Loop, Scan), sequences (Sequence*, SplitToSequence,
 * ConcatFromSequence, SequenceMap) and optionals (Optional, OptionalHasElement, OptionalGetElement).
 * Subgraphs run through lt_eval_subgraph, which resolves their outer-scope names. */
#include "../ops.h"

#include <string.h>

/* ---- small helpers ---- */

/* Copy `count` elements from src[si..] to dst[di..] (strings deep-copied). */
static lt_status copy_elems(lt_ctx *ctx, lt_tensor *dst, int64_t di, const lt_tensor *src, int64_t si, int64_t count) {
    if (count <= 0) return LT_OK;
    if (src->dtype == LT_STRING) {
        char *const *s = src->data;
        for (int64_t k = 0; k < count; k++) LT_TRY(lt_tensor_set_string(ctx, dst, di + k, s[si + k], strlen(s[si + k])));
        return LT_OK;
    }
    int64_t es = lt_dtype_size(src->dtype);
    memcpy((char *)dst->data + di * es, (const char *)src->data + si * es, (size_t)(count * es));
    return LT_OK;
}

static lt_status scalar_bool(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what, bool *out) {
    if (t->numel != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "%s must have exactly one element, has %lld", what, (long long)t->numel);
    *out = lt_load_f64(t->data, t->dtype, 0) != 0;
    return LT_OK;
}

static lt_status scalar_int(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what, int64_t *out) {
    if (t->numel != 1 || !lt_dtype_is_int(t->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be a single integer", what);
    *out = lt_load_i64(t->data, t->dtype, 0);
    return LT_OK;
}

/* ---- the memory limit of Loop scan outputs and sequences ----
 * A Loop with a huge trip count (or a condition that stays true) would grow its scan outputs, or a
 * sequence it carries, until the machine runs out of memory. The bytes they hold are counted as
 * they grow (each tensor's data plus its bookkeeping; strings by their pointers) and may not pass
 * ev->max_loop_bytes (default LT_EVAL_DEFAULT_MAX_LOOP_BYTES): an LT_ERR_NOMEM naming the node. */
#define HELD_OVERHEAD ((int64_t)(sizeof(lt_tensor) + sizeof(lt_datum)))

int64_t lt_eval_loop_limit(const lt_eval *ev) {
    return ev->max_loop_bytes > 0 ? ev->max_loop_bytes : LT_EVAL_DEFAULT_MAX_LOOP_BYTES;
}

static int64_t tensor_held(const lt_tensor *t) { return lt_tensor_nbytes(t) + HELD_OVERHEAD; }

/* Bytes datum d holds (nested sequences summed), saturating at INT64_MAX. */
static int64_t datum_held(const lt_datum *d) {
    if (!d) return 0;
    int64_t b = HELD_OVERHEAD;
    switch (d->kind) {
    case LT_DK_TENSOR: return tensor_held(d->tensor);
    case LT_DK_SEQUENCE:
        for (int i = 0; i < d->n; i++)
            if (!lt_add_i64(b, datum_held(d->items[i]), &b)) return INT64_MAX;
        return b;
    case LT_DK_OPTIONAL: return lt_add_i64(b, datum_held(d->value), &b) ? b : INT64_MAX;
    default: return b + (d->keys ? tensor_held(d->keys) : 0) + (d->values ? tensor_held(d->values) : 0);
    }
}

lt_status lt_eval_loop_hold(lt_eval *ev, const lt_node *n, int64_t *held, int64_t more, const char *what) {
    int64_t limit = lt_eval_loop_limit(ev);
    if (more > limit - *held)
        return lt_op_error(ev, n, LT_ERR_NOMEM, "%s would hold more than the limit of %lld bytes (a Loop whose trip "
                           "count or condition never ends? raise it with LATHE_MAX_LOOP_BYTES, or max_loop_bytes in the "
                           "C API and Python)", what, (long long)limit);
    *held += more;
    return LT_OK;
}

static void release_all(lt_datum **d, int n) {
    for (int i = 0; i < n; i++) { lt_datum_release(d[i]); d[i] = NULL; }
}

/* Stack `count` tensors of equal shape along a new axis `axis` (reverse: last item first). */
static lt_status stack_tensors(lt_eval *ev, const lt_node *n, lt_tensor *const *items, int64_t count, int axis,
                               bool reverse, lt_dtype dt, const lt_type *elem_type, lt_tensor **out) {
    int64_t dims[LT_MAX_RANK];
    if (count == 0) {
        /* Zero iterations: shape [0] + the body output's declared shape where known. */
        int rank = 1;
        dims[0] = 0;
        if (elem_type && elem_type->kind == LT_TK_TENSOR && elem_type->rank >= 0 && elem_type->rank < LT_MAX_RANK) {
            for (int k = 0; k < elem_type->rank; k++)
                dims[1 + k] = elem_type->dims && elem_type->dims[k].value >= 0 ? elem_type->dims[k].value : 0;
            rank = 1 + elem_type->rank;
        }
        return lt_tensor_new(ev->ctx, dt, rank, dims, out);
    }
    const lt_tensor *first = items[0];
    if (first->rank + 1 > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "rank too large to stack");
    if (axis < 0) axis += first->rank + 1;
    if (axis < 0 || axis > first->rank) return lt_op_error(ev, n, LT_ERR_INVALID, "scan output axis out of range");
    for (int64_t i = 1; i < count; i++) {
        if (items[i]->rank != first->rank || items[i]->dtype != first->dtype ||
            memcmp(items[i]->dims, first->dims, (size_t)first->rank * sizeof(int64_t)) != 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "iteration %lld produced a scan output of a different shape or type",
                               (long long)i);
    }
    for (int k = 0, j = 0; k <= first->rank; k++) dims[k] = k == axis ? count : first->dims[j++];
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ev->ctx, first->dtype, first->rank + 1, dims, &t));
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++) outer *= first->dims[k];
    for (int k = axis; k < first->rank; k++) inner *= first->dims[k];
    for (int64_t i = 0; i < count; i++) {
        const lt_tensor *src = items[reverse ? count - 1 - i : i];
        for (int64_t o = 0; o < outer; o++) {
            lt_status s = copy_elems(ev->ctx, t, (o * count + i) * inner, src, o * inner, inner);
            if (s) { lt_tensor_release(t); return s; }
        }
    }
    *out = t;
    return LT_OK;
}

/* Slice index `i` along `axis` of t (the axis removed). */
static lt_status slice_axis(lt_eval *ev, const lt_tensor *t, int axis, int64_t i, lt_tensor **out) {
    int64_t dims[LT_MAX_RANK];
    for (int k = 0, j = 0; k < t->rank; k++)
        if (k != axis) dims[j++] = t->dims[k];
    lt_tensor *r;
    LT_TRY(lt_tensor_new(ev->ctx, t->dtype, t->rank - 1, dims, &r));
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++) outer *= t->dims[k];
    for (int k = axis + 1; k < t->rank; k++) inner *= t->dims[k];
    for (int64_t o = 0; o < outer; o++) {
        lt_status s = copy_elems(ev->ctx, r, o * inner, t, (o * t->dims[axis] + i) * inner, inner);
        if (s) { lt_tensor_release(r); return s; }
    }
    *out = r;
    return LT_OK;
}

/* ---- If ---- */
static lt_status eval_if(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *c;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &c));
    bool cond = false;
    LT_TRY(scalar_bool(ev, n, c, "If condition", &cond));
    const lt_graph *g = lt_attr_graph(n, cond ? "then_branch" : "else_branch");
    if (!g) return lt_op_error(ev, n, LT_ERR_INVALID, "missing %s attribute", cond ? "then_branch" : "else_branch");
    if (g->n_outputs != n->n_out)
        return lt_op_error(ev, n, LT_ERR_INVALID, "branch has %d outputs, node has %d", g->n_outputs, n->n_out);
    return lt_eval_subgraph(ev, g, NULL, 0, out);
}

static bool same_dim(const lt_dim *x, const lt_dim *y) {
    if (x->value >= 0 || y->value >= 0) return x->value == y->value;
    return x->param && y->param && strcmp(x->param, y->param) == 0;
}

/* Output i of an If: what both branches agree on. Either branch may run, so a dim (or the rank) the
 * two branches do not both know to be the same is unknown; a branch whose output type is not known
 * at all leaves only the other's dtype known. */
static lt_status merge_branch_types(lt_infer *ic, lt_node *n, int i, const lt_type *ta, const lt_type *tb) {
    bool tensor_a = ta->kind == LT_TK_TENSOR, tensor_b = tb->kind == LT_TK_TENSOR;
    if (!tensor_a && !tensor_b) return lt_infer_set_type(ic, n, i, ta->kind != LT_TK_UNKNOWN ? ta : tb);
    if ((!tensor_a && ta->kind != LT_TK_UNKNOWN) || (!tensor_b && tb->kind != LT_TK_UNKNOWN))
        return lt_infer_error(ic, n, "output %d is a tensor in one branch and not in the other", i);
    if (tensor_a && tensor_b && ta->dtype != LT_UNDEFINED && tb->dtype != LT_UNDEFINED && ta->dtype != tb->dtype)
        return lt_infer_error(ic, n, "output %d is %s in then_branch and %s in else_branch", i, lt_dtype_name(ta->dtype),
                              lt_dtype_name(tb->dtype));
    lt_dtype dt = tensor_a && ta->dtype != LT_UNDEFINED ? ta->dtype : tensor_b ? tb->dtype : LT_UNDEFINED;
    if (!tensor_a || !tensor_b || ta->rank != tb->rank || ta->rank < 0 || ta->rank > LT_MAX_RANK || !ta->dims ||
        !tb->dims)
        return lt_infer_set(ic, n, i, dt, -1, NULL);
    lt_dim d[LT_MAX_RANK];
    for (int k = 0; k < ta->rank; k++)
        d[k] = same_dim(&ta->dims[k], &tb->dims[k]) ? ta->dims[k] : (lt_dim){-1, NULL};
    return lt_infer_set(ic, n, i, dt, ta->rank, d);
}

static lt_status infer_if(lt_infer *ic, lt_node *n) {
    const lt_graph *a = lt_attr_graph(n, "then_branch"), *b = lt_attr_graph(n, "else_branch");
    if (!a || !b) return lt_infer_error(ic, n, "If needs then_branch and else_branch");
    if (a->n_outputs != n->n_out || b->n_outputs != n->n_out)
        return lt_infer_error(ic, n, "branches have %d and %d outputs, node has %d", a->n_outputs, b->n_outputs, n->n_out);
    for (int i = 0; i < n->n_out; i++) LT_TRY(merge_branch_types(ic, n, i, &a->outputs[i]->type, &b->outputs[i]->type));
    return LT_OK;
}

/* ---- Loop ---- */
static lt_status eval_loop(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_graph *body = lt_attr_graph(n, "body");
    if (!body) return lt_op_error(ev, n, LT_ERR_INVALID, "missing body attribute");
    const lt_tensor *mt, *ct;
    LT_TRY(lt_in_tensor_opt(ev, n, in, 0, &mt));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &ct));
    int n_carried = n->n_in - 2;
    if (n_carried < 0) n_carried = 0;
    int n_scan = n->n_out - n_carried;
    if (n_scan < 0 || body->n_inputs != n_carried + 2 || body->n_outputs != n_carried + 1 + n_scan)
        return lt_op_error(ev, n, LT_ERR_INVALID,
                           "body signature mismatch: %d carried values, body has %d inputs and %d outputs, node %d outputs",
                           n_carried, body->n_inputs, body->n_outputs, n->n_out);
    int64_t max_trip = INT64_MAX;
    bool cond = true;
    if (mt) LT_TRY(scalar_int(ev, n, mt, "trip count M", &max_trip));
    if (ct) LT_TRY(scalar_bool(ev, n, ct, "loop condition", &cond));
    if (!mt && !ct) return lt_op_error(ev, n, LT_ERR_INVALID, "Loop with neither trip count nor condition never ends");

    lt_status s = LT_OK;
    int nb_in = body->n_inputs, nb_out = body->n_outputs;
    lt_datum **carried = lt_calloc(ev->ctx, (size_t)n_carried + 1, sizeof *carried, "loop state");
    lt_datum **bin = lt_calloc(ev->ctx, (size_t)nb_in, sizeof *bin, "loop body inputs");
    lt_datum **bout = lt_calloc(ev->ctx, (size_t)nb_out, sizeof *bout, "loop body outputs");
    lt_vec *scans = lt_calloc(ev->ctx, (size_t)n_scan + 1, sizeof *scans, "loop scan outputs");
    if (!carried || !bin || !bout || !scans) { s = LT_ERR_NOMEM; goto done; }
    for (int i = 0; i < n_carried; i++) carried[i] = lt_datum_retain(in[2 + i]);
    for (int i = 0; i < n_carried; i++)
        if (!carried[i]) { s = lt_op_error(ev, n, LT_ERR_INVALID, "loop-carried input %d is missing", i); goto done; }
    int64_t held = 0; /* bytes of the scan outputs so far */

    for (int64_t it = 0; it < max_trip && cond; it++) {
        lt_tensor *itt = NULL, *ctt = NULL;
        if ((s = lt_tensor_scalar_i64(ev->ctx, LT_INT64, it, &itt))) goto done;
        if ((s = lt_datum_tensor(ev->ctx, itt, &bin[0]))) goto done;
        if ((s = lt_tensor_scalar_i64(ev->ctx, LT_BOOL, cond, &ctt))) goto done;
        if ((s = lt_datum_tensor(ev->ctx, ctt, &bin[1]))) goto done;
        for (int i = 0; i < n_carried; i++) bin[2 + i] = carried[i], carried[i] = NULL;
        s = lt_eval_subgraph(ev, body, bin, nb_in, bout);
        release_all(bin, nb_in);
        if (s) goto done;
        const lt_datum *co = bout[0];
        if (!co || co->kind != LT_DK_TENSOR) { s = lt_op_error(ev, n, LT_ERR_INVALID, "body condition output must be a tensor"); goto done; }
        if ((s = scalar_bool(ev, n, co->tensor, "body condition output", &cond))) goto done;
        for (int i = 0; i < n_carried; i++) carried[i] = bout[1 + i], bout[1 + i] = NULL;
        for (int k = 0; k < n_scan; k++) {
            lt_datum *d = bout[1 + n_carried + k];
            if (!d || d->kind != LT_DK_TENSOR) { s = lt_op_error(ev, n, LT_ERR_INVALID, "scan output %d must be a tensor", k); goto done; }
            if ((s = lt_eval_loop_hold(ev, n, &held, tensor_held(d->tensor), "the Loop's scan outputs"))) goto done;
            if (scans[k].n == INT32_MAX) { s = lt_op_error(ev, n, LT_ERR_NOMEM, "more than %d loop iterations with scan outputs", INT32_MAX); goto done; }
            if (!lt_vec_push(&scans[k], lt_tensor_retain(d->tensor))) {
                lt_tensor_release(d->tensor);
                s = lt_error(ev->ctx, LT_ERR_NOMEM, "out of memory (loop scan outputs)");
                goto done;
            }
        }
        release_all(bout, nb_out);
    }
    for (int i = 0; i < n_carried; i++) out[i] = carried[i], carried[i] = NULL;
    for (int k = 0; k < n_scan; k++) {
        const lt_type *et = &body->outputs[1 + n_carried + k]->type;
        lt_tensor *t;
        if ((s = stack_tensors(ev, n, (lt_tensor *const *)scans[k].items, scans[k].n, 0, false,
                               et->dtype != LT_UNDEFINED ? et->dtype : LT_FLOAT, et, &t)))
            goto done;
        if ((s = lt_out_set(ev, out, n_carried + k, t))) goto done;
    }
done:
    if (carried) release_all(carried, n_carried);
    if (bout) release_all(bout, nb_out);
    if (scans)
        for (int k = 0; k < n_scan; k++) {
            for (int j = 0; j < scans[k].n; j++) lt_tensor_release(scans[k].items[j]);
            lt_vec_free(&scans[k]);
        }
    lt_mem_free(carried);
    lt_mem_free(bin);
    lt_mem_free(bout);
    lt_mem_free(scans);
    return s;
}

static lt_status infer_loop(lt_infer *ic, lt_node *n) {
    const lt_graph *body = lt_attr_graph(n, "body");
    if (!body) return lt_infer_error(ic, n, "Loop needs a body");
    int n_carried = n->n_in - 2 > 0 ? n->n_in - 2 : 0;
    if (body->n_outputs != n->n_out + 1) return lt_infer_error(ic, n, "body has %d outputs, expected %d", body->n_outputs, n->n_out + 1);
    if (n_carried > n->n_out || body->n_inputs != n_carried + 2)
        return lt_infer_error(ic, n, "body signature mismatch: %d carried values, body has %d inputs, node has %d outputs",
                              n_carried, body->n_inputs, n->n_out);
    for (int i = 0; i < n_carried; i++) {
        /* The body's output type says what the loop hands on; fall back to the initial value's. */
        const lt_type *t = &body->outputs[1 + i]->type;
        if (t->kind == LT_TK_UNKNOWN) t = lt_infer_in(n, 2 + i);
        if (t && t->kind == LT_TK_TENSOR) LT_TRY(lt_infer_set(ic, n, i, t->dtype, t->rank, t->dims));
        else if (t) LT_TRY(lt_infer_set_type(ic, n, i, t));
    }
    for (int k = n_carried; k < n->n_out; k++) {
        const lt_type *t = &body->outputs[1 + k]->type;
        if (t->kind == LT_TK_TENSOR && t->rank >= 0 && t->rank < LT_MAX_RANK) {
            lt_dim d[LT_MAX_RANK];
            d[0] = (lt_dim){-1, NULL};
            for (int j = 0; j < t->rank; j++) d[1 + j] = t->dims ? t->dims[j] : (lt_dim){-1, NULL};
            LT_TRY(lt_infer_set(ic, n, k, t->dtype, t->rank + 1, d));
        } else {
            LT_TRY(lt_infer_set(ic, n, k, t->dtype, -1, NULL));
        }
    }
    return LT_OK;
}

/* ---- Scan ---- */
/* One Scan over states + scan inputs (opset 9+ semantics; opset 8 calls it per batch entry). */
static lt_status scan_run(lt_eval *ev, const lt_node *n, const lt_graph *body, int n_state, int n_sin,
                          lt_datum **states_in, const lt_tensor **sins, const int64_t *in_axes,
                          const int64_t *in_dirs, int64_t seq_len_limit, lt_datum **outs,
                          const int64_t *out_axes, const int64_t *out_dirs, int n_sout) {
    lt_status s = LT_OK;
    int64_t len = -1;
    for (int i = 0; i < n_sin; i++) {
        int64_t l = sins[i]->dims[in_axes[i]];
        if (len >= 0 && l != len) return lt_op_error(ev, n, LT_ERR_INVALID, "scan inputs have different lengths %lld and %lld", (long long)len, (long long)l);
        len = l;
    }
    if (len < 0) len = 0;
    if (seq_len_limit >= 0 && seq_len_limit < len) len = seq_len_limit;
    int nb_in = body->n_inputs, nb_out = body->n_outputs;
    lt_datum **state = lt_calloc(ev->ctx, (size_t)n_state + 1, sizeof *state, "scan state");
    lt_datum **bin = lt_calloc(ev->ctx, (size_t)nb_in + 1, sizeof *bin, "scan body inputs");
    lt_datum **bout = lt_calloc(ev->ctx, (size_t)nb_out + 1, sizeof *bout, "scan body outputs");
    lt_tensor **slices = lt_calloc(ev->ctx, (size_t)(n_sout * (len ? len : 1)) + 1, sizeof *slices, "scan outputs");
    if (!state || !bin || !bout || !slices) { s = LT_ERR_NOMEM; goto done; }
    for (int i = 0; i < n_state; i++) state[i] = lt_datum_retain(states_in[i]);
    for (int64_t it = 0; it < len; it++) {
        for (int i = 0; i < n_state; i++) bin[i] = state[i], state[i] = NULL;
        for (int i = 0; i < n_sin; i++) {
            int64_t idx = in_dirs && in_dirs[i] ? len - 1 - it : it;
            lt_tensor *sl;
            if ((s = slice_axis(ev, sins[i], (int)in_axes[i], idx, &sl))) goto iter_fail;
            if ((s = lt_datum_tensor(ev->ctx, sl, &bin[n_state + i]))) goto iter_fail;
        }
        s = lt_eval_subgraph(ev, body, bin, nb_in, bout);
    iter_fail:
        release_all(bin, nb_in);
        if (s) goto done;
        for (int i = 0; i < n_state; i++) state[i] = bout[i], bout[i] = NULL;
        for (int k = 0; k < n_sout; k++) {
            lt_datum *d = bout[n_state + k];
            if (!d || d->kind != LT_DK_TENSOR) { s = lt_op_error(ev, n, LT_ERR_INVALID, "scan output %d must be a tensor", k); goto done; }
            slices[k * len + it] = lt_tensor_retain(d->tensor);
        }
        release_all(bout, nb_out);
    }
    for (int i = 0; i < n_state; i++) outs[i] = state[i], state[i] = NULL;
    for (int k = 0; k < n_sout; k++) {
        const lt_type *et = &body->outputs[n_state + k]->type;
        lt_tensor *t;
        if ((s = stack_tensors(ev, n, slices + k * len, len, out_axes ? (int)out_axes[k] : 0, out_dirs && out_dirs[k],
                               et->dtype != LT_UNDEFINED ? et->dtype : LT_FLOAT, et, &t)))
            goto done;
        if ((s = lt_datum_tensor(ev->ctx, t, &outs[n_state + k]))) goto done;
    }
done:
    if (state) release_all(state, n_state);
    if (bout) release_all(bout, nb_out);
    if (slices)
        for (int64_t i = 0; i < (int64_t)n_sout * len; i++) lt_tensor_release(slices[i]);
    lt_mem_free(state);
    lt_mem_free(bin);
    lt_mem_free(bout);
    lt_mem_free(slices);
    return s;
}

static lt_status read_axes(lt_eval *ev, const lt_node *n, const char *name, int count, const int64_t *ranks, int64_t dflt,
                           int64_t *out) {
    const int64_t *v;
    int k = lt_attr_ints(n, name, &v);
    if (k && k != count) return lt_op_error(ev, n, LT_ERR_INVALID, "%s has %d entries, expected %d", name, k, count);
    for (int i = 0; i < count; i++) {
        out[i] = k ? v[i] : dflt;
        if (ranks) {
            int a;
            LT_TRY(lt_norm_axis(ev, n, out[i], (int)ranks[i], &a));
            out[i] = a;
        }
    }
    return LT_OK;
}

static lt_status eval_scan(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_graph *body = lt_attr_graph(n, "body");
    if (!body) return lt_op_error(ev, n, LT_ERR_INVALID, "missing body attribute");
    int n_sin = (int)lt_attr_int(n, "num_scan_inputs", -1);
    bool v8 = n->opset < 9;
    int first = v8 ? 1 : 0;
    int n_state = n->n_in - first - n_sin;
    int n_sout = n->n_out - n_state;
    if (n_sin < 1 || n_state < 0 || n_sout < 0 || n_sin > 64 || n_sout > 64 || body->n_inputs != n_state + n_sin ||
        body->n_outputs != n->n_out)
        return lt_op_error(ev, n, LT_ERR_INVALID, "body signature does not match num_scan_inputs=%d and the node's %d inputs/%d outputs",
                           n_sin, n->n_in, n->n_out);
    const lt_tensor *sins[64];
    int64_t ranks[64], in_axes[64], in_dirs[64], out_axes[64], out_dirs[64];
    for (int i = 0; i < n_sin; i++) {
        LT_TRY(lt_in_tensor(ev, n, in, first + n_state + i, &sins[i]));
        ranks[i] = sins[i]->rank;
        if (sins[i]->rank < (v8 ? 2 : 1)) return lt_op_error(ev, n, LT_ERR_INVALID, "scan input %d has too small a rank", i);
    }
    for (int i = 0; i < n_state; i++)
        if (!in[first + i]) return lt_op_error(ev, n, LT_ERR_INVALID, "state input %d is missing", i);
    if (!v8) {
        LT_TRY(read_axes(ev, n, "scan_input_axes", n_sin, ranks, 0, in_axes));
        LT_TRY(read_axes(ev, n, "scan_input_directions", n_sin, NULL, 0, in_dirs));
        const int64_t *v;
        int k = lt_attr_ints(n, "scan_output_axes", &v);
        if (k && k != n_sout) return lt_op_error(ev, n, LT_ERR_INVALID, "scan_output_axes has %d entries, expected %d", k, n_sout);
        for (int i = 0; i < n_sout; i++) out_axes[i] = k ? v[i] : 0; /* negative axes resolved at stacking */
        LT_TRY(read_axes(ev, n, "scan_output_directions", n_sout, NULL, 0, out_dirs));
        return scan_run(ev, n, body, n_state, n_sin, in, sins, in_axes, in_dirs, -1, out, out_axes, out_dirs, n_sout);
    }
    /* Opset 8: a leading batch axis on every state and scan value; optional sequence_lens. */
    const lt_tensor *lens;
    LT_TRY(lt_in_tensor_opt(ev, n, in, 0, &lens));
    LT_TRY(read_axes(ev, n, "directions", n_sin, NULL, 0, in_dirs));
    int64_t batch = sins[0]->dims[0];
    for (int i = 0; i < n_state; i++) {
        const lt_datum *d = in[first + i];
        if (d->kind != LT_DK_TENSOR || d->tensor->rank < 1 || d->tensor->dims[0] != batch)
            return lt_op_error(ev, n, LT_ERR_INVALID, "state %d must be a tensor with batch dimension %lld", i, (long long)batch);
    }
    for (int i = 0; i < n_sin; i++) {
        in_axes[i] = 0;
        if (sins[i]->dims[0] != batch) return lt_op_error(ev, n, LT_ERR_INVALID, "scan input %d has a different batch size", i);
    }
    if (lens && lens->numel != batch) return lt_op_error(ev, n, LT_ERR_INVALID, "sequence_lens must have %lld entries", (long long)batch);
    lt_status s = LT_OK;
    int n_out = n->n_out;
    lt_datum **per = lt_calloc(ev->ctx, (size_t)(n_out * (batch ? batch : 1)) + 1, sizeof *per, "scan batch outputs");
    lt_datum *st[64] = {0};
    const lt_tensor *bs[64] = {0};
    lt_tensor *owned[128] = {0};
    if (!per) return LT_ERR_NOMEM;
    for (int64_t b = 0; b < batch && !s; b++) {
        int no = 0;
        for (int i = 0; i < n_state && !s; i++) {
            lt_tensor *t;
            if (!(s = slice_axis(ev, in[first + i]->tensor, 0, b, &t))) {
                owned[no++] = t;
                s = lt_datum_tensor(ev->ctx, lt_tensor_retain(t), &st[i]);
            }
        }
        for (int i = 0; i < n_sin && !s; i++) {
            lt_tensor *t;
            if (!(s = slice_axis(ev, sins[i], 0, b, &t))) { owned[no++] = t; bs[i] = t; }
        }
        int64_t limit = lens ? lt_load_i64(lens->data, lens->dtype, b) : -1;
        if (!s) s = scan_run(ev, n, body, n_state, n_sin, st, bs, in_axes, in_dirs, limit, per + b * n_out, NULL, NULL, n_sout);
        for (int i = 0; i < n_state; i++) { lt_datum_release(st[i]); st[i] = NULL; }
        for (int i = 0; i < no; i++) lt_tensor_release(owned[i]);
    }
    for (int k = 0; k < n_out && !s; k++) {
        lt_tensor *items[4096];
        if (batch > 4096) { s = lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "batch too large"); break; }
        for (int64_t b = 0; b < batch; b++) items[b] = per[b * n_out + k]->tensor;
        lt_tensor *t;
        const lt_type *et = &body->outputs[k]->type;
        if (!(s = stack_tensors(ev, n, items, batch, 0, false, et->dtype != LT_UNDEFINED ? et->dtype : LT_FLOAT, et, &t)))
            s = lt_out_set(ev, out, k, t);
    }
    for (int64_t i = 0; i < (int64_t)n_out * batch; i++) lt_datum_release(per[i]);
    lt_mem_free(per);
    return s;
}

static lt_status infer_scan(lt_infer *ic, lt_node *n) {
    const lt_graph *body = lt_attr_graph(n, "body");
    if (!body) return lt_infer_error(ic, n, "Scan needs a body");
    if (body->n_outputs != n->n_out) return lt_infer_error(ic, n, "body has %d outputs, node has %d", body->n_outputs, n->n_out);
    int n_sin = (int)lt_attr_int(n, "num_scan_inputs", 0);
    int first = n->opset < 9 ? 1 : 0;
    int n_state = n->n_in - first - n_sin;
    for (int i = 0; i < n->n_out; i++) {
        const lt_type *t = i < n_state ? lt_infer_in(n, first + i) : &body->outputs[i]->type;
        if (!t) continue;
        if (i < n_state) LT_TRY(lt_infer_set_type(ic, n, i, t));
        else LT_TRY(lt_infer_set(ic, n, i, t->dtype, t->kind == LT_TK_TENSOR && t->rank >= 0 ? t->rank + 1 + (first ? 1 : 0) : -1, NULL));
    }
    return LT_OK;
}

/* ---- sequences ---- */
static lt_status in_sequence(lt_eval *ev, const lt_node *n, lt_datum **in, int i, lt_datum **out) {
    lt_datum *d = i < n->n_in ? in[i] : NULL;
    if (d && d->kind == LT_DK_OPTIONAL) d = d->value;
    if (!d || d->kind != LT_DK_SEQUENCE) return lt_op_error(ev, n, LT_ERR_INVALID, "input %d must be a sequence", i);
    *out = d;
    return LT_OK;
}

static lt_status seq_position(lt_eval *ev, const lt_node *n, lt_datum **in, int i, int64_t len, int64_t dflt, bool allow_end,
                              int64_t *pos) {
    const lt_tensor *p;
    LT_TRY(lt_in_tensor_opt(ev, n, in, i, &p));
    int64_t v = dflt;
    if (p) LT_TRY(scalar_int(ev, n, p, "position", &v));
    int64_t hi = allow_end ? len : len - 1;
    if (v < -len || v > hi)
        return lt_op_error(ev, n, LT_ERR_INVALID, "position %lld out of range [%lld, %lld]", (long long)v, (long long)-len, (long long)hi);
    *pos = v < 0 ? v + len : v;
    return LT_OK;
}

static lt_status eval_sequence_empty(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    int64_t dt = lt_attr_int(n, "dtype", LT_FLOAT);
    if (!lt_dtype_valid((int)dt)) return lt_op_error(ev, n, LT_ERR_INVALID, "invalid dtype %lld", (long long)dt);
    return lt_datum_sequence(ev->ctx, (lt_dtype)dt, &out[0]);
}

static lt_status eval_sequence_construct(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *d;
    LT_TRY(lt_datum_sequence(ev->ctx, LT_UNDEFINED, &d));
    for (int i = 0; i < n->n_in; i++) {
        const lt_tensor *t;
        lt_status s = lt_in_tensor(ev, n, in, i, &t);
        if (!s && d->n && t->dtype != d->elem_dtype) s = lt_op_error(ev, n, LT_ERR_INVALID, "sequence elements must share one dtype");
        if (!s) s = lt_datum_seq_push(ev->ctx, d, lt_datum_retain(in[i]));
        if (s) { lt_datum_release(d); return s; }
    }
    out[0] = d;
    return LT_OK;
}

static lt_status eval_sequence_at(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *seq = NULL;
    int64_t pos = 0;
    LT_TRY(in_sequence(ev, n, in, 0, &seq));
    if (!in[1]) return lt_op_error(ev, n, LT_ERR_INVALID, "position is required");
    LT_TRY(seq_position(ev, n, in, 1, seq->n, 0, false, &pos));
    out[0] = lt_datum_retain(seq->items[pos]);
    return LT_OK;
}

static lt_status eval_sequence_insert(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *seq = NULL, *d = NULL;
    const lt_tensor *t;
    int64_t pos = 0;
    LT_TRY(in_sequence(ev, n, in, 0, &seq));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &t));
    if (seq->elem_dtype != LT_UNDEFINED && t->dtype != seq->elem_dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "inserting %s into a sequence of %s", lt_dtype_name(t->dtype), lt_dtype_name(seq->elem_dtype));
    LT_TRY(seq_position(ev, n, in, 2, seq->n, seq->n, true, &pos));
    int64_t held = 0;
    LT_TRY(lt_eval_loop_hold(ev, n, &held, datum_held(seq), "the sequence"));
    LT_TRY(lt_eval_loop_hold(ev, n, &held, datum_held(in[1]), "the sequence"));
    if (seq->n == INT32_MAX) return lt_op_error(ev, n, LT_ERR_NOMEM, "a sequence of more than %d elements", INT32_MAX);
    LT_TRY(lt_datum_sequence(ev->ctx, seq->elem_dtype, &d));
    lt_status s = LT_OK;
    for (int i = 0; i <= seq->n && !s; i++) {
        if (i == pos) s = lt_datum_seq_push(ev->ctx, d, lt_datum_retain(in[1]));
        if (i < seq->n && !s) s = lt_datum_seq_push(ev->ctx, d, lt_datum_retain(seq->items[i]));
    }
    if (s) { lt_datum_release(d); return s; }
    out[0] = d;
    return LT_OK;
}

static lt_status eval_sequence_erase(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *seq = NULL, *d = NULL;
    int64_t pos = 0;
    LT_TRY(in_sequence(ev, n, in, 0, &seq));
    if (seq->n == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "cannot erase from an empty sequence");
    LT_TRY(seq_position(ev, n, in, 1, seq->n, -1, false, &pos));
    LT_TRY(lt_datum_sequence(ev->ctx, seq->elem_dtype, &d));
    for (int i = 0; i < seq->n; i++) {
        if (i == pos) continue;
        lt_status s = lt_datum_seq_push(ev->ctx, d, lt_datum_retain(seq->items[i]));
        if (s) { lt_datum_release(d); return s; }
    }
    out[0] = d;
    return LT_OK;
}

static lt_status eval_sequence_length(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *seq = NULL;
    lt_tensor *t;
    LT_TRY(in_sequence(ev, n, in, 0, &seq));
    LT_TRY(lt_tensor_scalar_i64(ev->ctx, LT_INT64, seq->n, &t));
    return lt_out_set(ev, out, 0, t);
}

/* A sequence of `count` splits of x must fit the limit (x of shape [10^9, 0] splits into 10^9
 * empty tensors) before anything is allocated. */
static lt_status split_count_ok(lt_eval *ev, const lt_node *n, int64_t count, const lt_tensor *x) {
    int64_t held = 0, per_item;
    if (!lt_mul_i64(count, HELD_OVERHEAD, &per_item)) per_item = INT64_MAX;
    LT_TRY(lt_eval_loop_hold(ev, n, &held, per_item, "the sequence of splits"));
    LT_TRY(lt_eval_loop_hold(ev, n, &held, lt_tensor_nbytes(x), "the sequence of splits"));
    if (count > INT32_MAX) return lt_op_error(ev, n, LT_ERR_NOMEM, "a sequence of more than %d elements", INT32_MAX);
    return LT_OK;
}

static lt_status eval_split_to_sequence(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &sp));
    int axis;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", 0), x->rank, &axis));
    if (x->rank == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "cannot split a scalar");
    int64_t dim = x->dims[axis];
    int64_t sizes_stack[256], *sizes = sizes_stack;
    int64_t count = 0;
    bool squeeze = false;
    if (!sp) {
        count = dim;
        squeeze = lt_attr_int(n, "keepdims", 1) == 0;
        LT_TRY(split_count_ok(ev, n, count, x));
        if (count > 256) {
            sizes = lt_calloc(ev->ctx, (size_t)count, sizeof *sizes, "split sizes");
            if (!sizes) return LT_ERR_NOMEM;
        }
        for (int64_t i = 0; i < count; i++) sizes[i] = 1;
    } else if (sp->rank == 0) {
        int64_t chunk = 0;
        LT_TRY(scalar_int(ev, n, sp, "split", &chunk));
        if (chunk <= 0) return lt_op_error(ev, n, LT_ERR_INVALID, "split size must be positive, got %lld", (long long)chunk);
        count = dim / chunk + (dim % chunk != 0);
        LT_TRY(split_count_ok(ev, n, count, x));
        if (count > 256) {
            sizes = lt_calloc(ev->ctx, (size_t)count, sizeof *sizes, "split sizes");
            if (!sizes) return LT_ERR_NOMEM;
        }
        for (int64_t i = 0; i < count; i++) sizes[i] = i == count - 1 ? dim - chunk * (count - 1) : chunk;
    } else {
        int c;
        LT_TRY(lt_tensor_ints(ev, n, sp, sizes, 256, &c));
        count = c;
        int64_t total = 0;
        for (int i = 0; i < c; i++) {
            if (sizes[i] < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "negative split size");
            total += sizes[i];
        }
        if (total != dim) return lt_op_error(ev, n, LT_ERR_INVALID, "split sizes sum to %lld, axis has %lld", (long long)total, (long long)dim);
    }
    lt_datum *seq = NULL;
    lt_status s = lt_datum_sequence(ev->ctx, x->dtype, &seq);
    int64_t outer = 1, inner = 1, off = 0;
    for (int k = 0; k < axis; k++) outer *= x->dims[k];
    for (int k = axis + 1; k < x->rank; k++) inner *= x->dims[k];
    for (int64_t i = 0; i < count && !s; i++) {
        int64_t dims[LT_MAX_RANK];
        int rank = 0;
        for (int k = 0; k < x->rank; k++) {
            if (k == axis && squeeze) continue;
            dims[rank++] = k == axis ? sizes[i] : x->dims[k];
        }
        lt_tensor *t;
        if ((s = lt_tensor_new(ev->ctx, x->dtype, rank, dims, &t))) break;
        for (int64_t o = 0; o < outer && !s; o++)
            s = copy_elems(ev->ctx, t, o * sizes[i] * inner, x, (o * dim + off) * inner, sizes[i] * inner);
        off += sizes[i];
        lt_datum *d;
        if (s) { lt_tensor_release(t); break; }
        if (!(s = lt_datum_tensor(ev->ctx, t, &d))) s = lt_datum_seq_push(ev->ctx, seq, d);
    }
    if (sizes != sizes_stack) lt_mem_free(sizes);
    if (s) { lt_datum_release(seq); return s; }
    out[0] = seq;
    return LT_OK;
}

static lt_status eval_concat_from_sequence(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *seq = NULL;
    LT_TRY(in_sequence(ev, n, in, 0, &seq));
    if (seq->n == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "cannot concatenate an empty sequence");
    bool new_axis = lt_attr_int(n, "new_axis", 0) != 0;
    const lt_tensor *first = seq->items[0]->tensor;
    for (int i = 0; i < seq->n; i++)
        if (seq->items[i]->kind != LT_DK_TENSOR) return lt_op_error(ev, n, LT_ERR_INVALID, "sequence element %d is not a tensor", i);
    int axis;
    LT_TRY(lt_norm_axis(ev, n, lt_attr_int(n, "axis", 0), first->rank + (new_axis ? 1 : 0), &axis));
    if (new_axis) {
        lt_tensor *t, *items[4096];
        if (seq->n > 4096) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "sequence too long to stack");
        for (int i = 0; i < seq->n; i++) items[i] = seq->items[i]->tensor;
        LT_TRY(stack_tensors(ev, n, items, seq->n, axis, false, first->dtype, NULL, &t));
        return lt_out_set(ev, out, 0, t);
    }
    int64_t dims[LT_MAX_RANK], total = 0;
    for (int i = 0; i < seq->n; i++) {
        const lt_tensor *t = seq->items[i]->tensor;
        if (t->rank != first->rank || t->dtype != first->dtype) return lt_op_error(ev, n, LT_ERR_INVALID, "sequence elements differ in rank or dtype");
        for (int k = 0; k < t->rank; k++)
            if (k != axis && t->dims[k] != first->dims[k]) return lt_op_error(ev, n, LT_ERR_INVALID, "sequence elements differ in dimension %d", k);
        total += t->dims[axis];
    }
    memcpy(dims, first->dims, sizeof dims);
    dims[axis] = total;
    lt_tensor *r;
    LT_TRY(lt_out_new(ev, n, out, 0, first->dtype, first->rank, dims, &r));
    int64_t outer = 1, inner = 1, off = 0;
    for (int k = 0; k < axis; k++) outer *= first->dims[k];
    for (int k = axis + 1; k < first->rank; k++) inner *= first->dims[k];
    for (int i = 0; i < seq->n; i++) {
        const lt_tensor *t = seq->items[i]->tensor;
        for (int64_t o = 0; o < outer; o++)
            LT_TRY(copy_elems(ev->ctx, r, (o * total + off) * inner, t, o * t->dims[axis] * inner, t->dims[axis] * inner));
        off += t->dims[axis];
    }
    return LT_OK;
}

static lt_status eval_sequence_map(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_graph *body = lt_attr_graph(n, "body");
    if (!body) return lt_op_error(ev, n, LT_ERR_INVALID, "missing body attribute");
    lt_datum *seq = NULL;
    LT_TRY(in_sequence(ev, n, in, 0, &seq));
    if (body->n_inputs != n->n_in || body->n_outputs != n->n_out || n->n_in > 64 || n->n_out > 64)
        return lt_op_error(ev, n, LT_ERR_INVALID, "body signature does not match the node");
    for (int j = 1; j < n->n_in; j++)
        if (in[j] && in[j]->kind == LT_DK_SEQUENCE && in[j]->n != seq->n)
            return lt_op_error(ev, n, LT_ERR_INVALID, "additional sequence input %d has %d elements, expected %d", j, in[j]->n, seq->n);
    lt_status s = LT_OK;
    for (int k = 0; k < n->n_out && !s; k++) {
        const lt_type *t = &body->outputs[k]->type;
        s = lt_datum_sequence(ev->ctx, t->dtype, &out[k]);
    }
    for (int i = 0; i < seq->n && !s; i++) {
        lt_datum *bin[64], *bout[64] = {0};
        bin[0] = seq->items[i];
        for (int j = 1; j < n->n_in; j++) bin[j] = in[j] && in[j]->kind == LT_DK_SEQUENCE ? in[j]->items[i] : in[j];
        s = lt_eval_subgraph(ev, body, bin, n->n_in, bout);
        for (int k = 0; k < n->n_out; k++) {
            if (!s) s = lt_datum_seq_push(ev->ctx, out[k], bout[k]);
            else lt_datum_release(bout[k]);
        }
    }
    return s;
}

static lt_status infer_sequence_of_input(lt_infer *ic, lt_node *n, int in_idx) {
    const lt_type *t = lt_infer_in(n, in_idx);
    lt_type elem = {0}, seq = {0};
    if (t) elem = *t;
    elem.kind = LT_TK_TENSOR;
    elem.rank = t && t->kind == LT_TK_TENSOR ? t->rank : -1;
    if (!t) elem.dtype = LT_UNDEFINED;
    seq.kind = LT_TK_SEQUENCE;
    seq.elem = &elem;
    return lt_infer_set_type(ic, n, 0, &seq);
}

static lt_status infer_sequence_empty(lt_infer *ic, lt_node *n) {
    lt_type elem = {LT_TK_TENSOR, (lt_dtype)lt_attr_int(n, "dtype", LT_FLOAT), -1, NULL, NULL}, seq = {0};
    seq.kind = LT_TK_SEQUENCE;
    seq.elem = &elem;
    return lt_infer_set_type(ic, n, 0, &seq);
}
static lt_status infer_sequence_construct(lt_infer *ic, lt_node *n) { return infer_sequence_of_input(ic, n, 0); }
static lt_status infer_split_to_sequence(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_type elem = {LT_TK_TENSOR, t ? t->dtype : LT_UNDEFINED, -1, NULL, NULL}, seq = {0};
    seq.kind = LT_TK_SEQUENCE;
    seq.elem = &elem;
    return lt_infer_set_type(ic, n, 0, &seq);
}
static lt_status infer_same_sequence(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }
static lt_status infer_sequence_at(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    if (t && t->kind == LT_TK_SEQUENCE && t->elem) return lt_infer_set_type(ic, n, 0, t->elem);
    return LT_OK;
}
static lt_status infer_sequence_length(lt_infer *ic, lt_node *n) { return lt_infer_set(ic, n, 0, LT_INT64, 0, NULL); }
static lt_status infer_concat_from_sequence(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dtype dt = t && t->elem ? t->elem->dtype : LT_UNDEFINED;
    return lt_infer_set(ic, n, 0, dt, -1, NULL);
}
static lt_status infer_sequence_map(lt_infer *ic, lt_node *n) {
    const lt_graph *body = lt_attr_graph(n, "body");
    if (!body) return lt_infer_error(ic, n, "SequenceMap needs a body");
    for (int k = 0; k < n->n_out && k < body->n_outputs; k++) {
        lt_type seq = {0};
        seq.kind = LT_TK_SEQUENCE;
        seq.elem = &body->outputs[k]->type;
        LT_TRY(lt_infer_set_type(ic, n, k, &seq));
    }
    return LT_OK;
}

/* ---- optionals ---- */
static lt_status eval_optional(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *v = n->n_in > 0 ? in[0] : NULL;
    lt_dtype dt = LT_UNDEFINED;
    const lt_attr *a = lt_node_attr(n, "type");
    bool is_seq = false;
    if (a && a->tp) {
        const lt_type *tp = a->tp;
        if (tp->kind == LT_TK_SEQUENCE) { is_seq = true; tp = tp->elem; }
        if (tp) dt = tp->dtype;
    }
    if (!v && !a) return lt_op_error(ev, n, LT_ERR_INVALID, "Optional needs an input or a type attribute");
    LT_TRY(lt_datum_optional(ev->ctx, lt_datum_retain(v), dt, &out[0]));
    if (!v) out[0]->elem_is_sequence = is_seq;
    return LT_OK;
}

static lt_status eval_optional_has_element(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_datum *d = n->n_in > 0 ? in[0] : NULL;
    bool has = d && (d->kind != LT_DK_OPTIONAL || d->value);
    lt_tensor *t;
    LT_TRY(lt_tensor_scalar_i64(ev->ctx, LT_BOOL, has, &t));
    return lt_out_set(ev, out, 0, t);
}

static lt_status eval_optional_get_element(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    lt_datum *d = n->n_in > 0 ? in[0] : NULL;
    if (!d) return lt_op_error(ev, n, LT_ERR_INVALID, "input is missing");
    if (d->kind == LT_DK_OPTIONAL) {
        if (!d->value) return lt_op_error(ev, n, LT_ERR_INVALID, "the optional input is empty");
        d = d->value;
    }
    out[0] = lt_datum_retain(d);
    return LT_OK;
}

static lt_status infer_optional(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    const lt_attr *a = lt_node_attr(n, "type");
    lt_type opt = {0};
    opt.kind = LT_TK_OPTIONAL;
    opt.elem = (lt_type *)(t ? t : a ? a->tp : NULL);
    return lt_infer_set_type(ic, n, 0, &opt);
}
static lt_status infer_optional_has_element(lt_infer *ic, lt_node *n) { return lt_infer_set(ic, n, 0, LT_BOOL, 0, NULL); }
static lt_status infer_optional_get_element(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    if (!t) return LT_OK;
    if (t->kind == LT_TK_OPTIONAL && t->elem) return lt_infer_set_type(ic, n, 0, t->elem);
    return lt_infer_set_type(ic, n, 0, t);
}

const lt_op_reg lt_ops_control[] = {
    {LT_OP_If, infer_if, eval_if},
    {LT_OP_Loop, infer_loop, eval_loop},
    {LT_OP_Scan, infer_scan, eval_scan},
    {LT_OP_SequenceEmpty, infer_sequence_empty, eval_sequence_empty},
    {LT_OP_SequenceConstruct, infer_sequence_construct, eval_sequence_construct},
    {LT_OP_SequenceAt, infer_sequence_at, eval_sequence_at},
    {LT_OP_SequenceInsert, infer_same_sequence, eval_sequence_insert},
    {LT_OP_SequenceErase, infer_same_sequence, eval_sequence_erase},
    {LT_OP_SequenceLength, infer_sequence_length, eval_sequence_length},
    {LT_OP_SplitToSequence, infer_split_to_sequence, eval_split_to_sequence},
    {LT_OP_ConcatFromSequence, infer_concat_from_sequence, eval_concat_from_sequence},
    {LT_OP_SequenceMap, infer_sequence_map, eval_sequence_map},
    {LT_OP_Optional, infer_optional, eval_optional},
    {LT_OP_OptionalHasElement, infer_optional_has_element, eval_optional_has_element},
    {LT_OP_OptionalGetElement, infer_optional_get_element, eval_optional_get_element},
    {0, NULL, NULL},
};
