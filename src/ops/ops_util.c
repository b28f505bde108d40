/* ops_util.c — helpers shared by the eval hooks: node-labelled errors, input/output access,
 * axis normalization, broadcasting, multi-index iteration, subgraphs (through the evaluator's
 * run_subgraph), the evaluation RNG. */
#include "ops.h"

#include <stdio.h>
#include <string.h>

static lt_status node_verror(lt_ctx *ctx, const lt_node *n, lt_status s, const char *fmt, va_list ap) {
    char label[256], msg[LT_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return lt_error(ctx, s, "%s: %s", lt_node_label(n, label, sizeof label), msg);
}

lt_status lt_node_error(lt_ctx *ctx, const lt_node *n, lt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    lt_status r = node_verror(ctx, n, s, fmt, ap);
    va_end(ap);
    return r;
}

lt_status lt_op_error(lt_eval *ev, const lt_node *n, lt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    lt_status r = node_verror(ev->ctx, n, s, fmt, ap);
    va_end(ap);
    return r;
}

static const char *in_name(const lt_node *n, int i) {
    return (i < n->n_in && n->in[i]) ? n->in[i]->name : "";
}

lt_status lt_in_tensor_opt(lt_eval *ev, const lt_node *n, lt_datum **in, int i, const lt_tensor **out) {
    if (i >= n->n_in || !in[i]) {
        *out = NULL;
        return LT_OK;
    }
    const lt_datum *d = in[i];
    if (d->kind == LT_DK_OPTIONAL && d->value && d->value->kind == LT_DK_TENSOR) d = d->value;
    if (d->kind != LT_DK_TENSOR)
        return lt_op_error(ev, n, LT_ERR_INVALID, "input %d '%s' must be a tensor", i, in_name(n, i));
    *out = d->tensor;
    return LT_OK;
}

lt_status lt_in_tensor(lt_eval *ev, const lt_node *n, lt_datum **in, int i, const lt_tensor **out) {
    LT_TRY(lt_in_tensor_opt(ev, n, in, i, out));
    if (!*out) return lt_op_error(ev, n, LT_ERR_INVALID, "required input %d is missing", i);
    return LT_OK;
}

lt_status lt_out_set(lt_eval *ev, lt_datum **out, int i, lt_tensor *t) {
    lt_datum *d;
    LT_TRY(lt_datum_tensor(ev->ctx, t, &d));
    lt_datum_release(out[i]);
    out[i] = d;
    return LT_OK;
}

lt_status lt_out_new(lt_eval *ev, const lt_node *n, lt_datum **out, int i, lt_dtype dt, int rank,
                     const int64_t *dims, lt_tensor **t) {
    lt_tensor *x;
    lt_status s = lt_tensor_new(ev->ctx, dt, rank, dims, &x);
    if (s) {
        char label[256];
        /* The tensor code already said what; add which node asked. */
        size_t len = strlen(ev->ctx->msg);
        snprintf(ev->ctx->msg + len, sizeof ev->ctx->msg - len, " (output %d of %s)", i,
                 lt_node_label(n, label, sizeof label));
        return s;
    }
    LT_TRY(lt_out_set(ev, out, i, x));
    *t = x;
    return LT_OK;
}

lt_status lt_node_axis(lt_ctx *ctx, const lt_node *n, int64_t axis, int rank, int *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, rank);
    *out = (int)a;
    return LT_OK;
}

lt_status lt_norm_axis(lt_eval *ev, const lt_node *n, int64_t axis, int rank, int *out) {
    return lt_node_axis(ev->ctx, n, axis, rank, out);
}

lt_status lt_tensor_ints(lt_eval *ev, const lt_node *n, const lt_tensor *t, int64_t *buf, int max, int *count) {
    if (!lt_dtype_is_int(t->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "expected an integer tensor, got %s", lt_dtype_name(t->dtype));
    if (t->numel > max)
        return lt_op_error(ev, n, LT_ERR_INVALID, "integer list of %lld entries exceeds %d", (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++) buf[i] = lt_load_i64(t->data, t->dtype, i);
    *count = (int)t->numel;
    return LT_OK;
}

lt_status lt_broadcast_shapes(lt_eval *ev, const lt_node *n, int count, const lt_tensor *const *ts, int *rank,
                              int64_t *dims) {
    int r = 0;
    for (int k = 0; k < count; k++)
        if (ts[k] && ts[k]->rank > r) r = ts[k]->rank;
    for (int d = 0; d < r; d++) dims[d] = 1;
    for (int k = 0; k < count; k++) {
        const lt_tensor *t = ts[k];
        if (!t) continue;
        for (int d = 0; d < t->rank; d++) {
            int64_t *o = &dims[r - t->rank + d], v = t->dims[d];
            if (v == *o || v == 1) continue;
            if (*o == 1) { *o = v; continue; }
            char a[256], b[256];
            return lt_op_error(ev, n, LT_ERR_INVALID, "shapes %s and %s cannot be broadcast",
                               lt_shape_str(r, dims, a, sizeof a), lt_shape_str(t->rank, t->dims, b, sizeof b));
        }
    }
    *rank = r;
    return LT_OK;
}

void lt_broadcast_strides(const lt_tensor *t, int out_rank, const int64_t *out_dims, int64_t *strides) {
    (void)out_dims;
    int64_t s = 1;
    for (int d = out_rank - 1; d >= 0; d--) {
        int td = d - (out_rank - t->rank);
        if (td < 0) { strides[d] = 0; continue; }
        strides[d] = t->dims[td] == 1 ? 0 : s;
        s *= t->dims[td];
    }
}

bool lt_index_next(int rank, const int64_t *dims, int64_t *idx) {
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) return true;
        idx[d] = 0;
    }
    return false;
}

lt_status lt_eval_subgraph(lt_eval *ev, const lt_graph *g, lt_datum *const *inputs, int n_inputs,
                           lt_datum **outputs) {
    if (!ev->run_subgraph)
        return lt_error(ev->ctx, LT_ERR_INTERNAL, "subgraph '%s': this evaluator runs no subgraphs", g->name ? g->name : "");
    return ev->run_subgraph(ev, g, inputs, n_inputs, outputs);
}

double lt_eval_random(lt_eval *ev) {
    /* splitmix64 */
    uint64_t z = (ev->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
