/* reduce_softmax.c — Softmax, LogSoftmax, Hardmax and the two losses built on log-probabilities,
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (part of the reduce family, see reduce.c).
 *
 * Softmax-like ops before opset 13 coerce the input to 2-D at `axis` (default 1) and normalize each
 * row of prod(dims[axis:]) elements; from 13 on they normalize along the one axis (default -1).
 * Computation is in double with the max subtracted, rounded once to the input type.
 * Losses: input [N, C, d1..dk], target [N, d1..dk] (int32/int64), optional weight [C];
 * reduction none | sum | mean (mean divides by the sum of the weights used, ignored targets weigh 0).
 * A target outside [0, C) that is not ignore_index is an error.
 */
#include "reduce_impl.h"

#include <math.h>
#include <string.h>

/* ================= Softmax / LogSoftmax / Hardmax ================= */

/* The axis rule of Softmax-like ops on a rank-`rank` input: before opset 13 (coerced to 2-D) axis
 * in [-rank, rank], from 13 in [-rank, rank) (a scalar takes 0 or -1). *a gets the normalized axis.
 * Shape inference and eval both call it, so every backend reports the same error. */
static lt_status softmax_check(lt_ctx *ctx, const lt_node *n, int rank, int64_t *a) {
    bool old = n->opset < 13;
    int64_t axis = lt_attr_int(n, "axis", old ? 1 : -1);
    if (old) {
        *a = axis < 0 ? axis + rank : axis;
        if (*a < 0 || *a > rank)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld out of range [-%d, %d]", (long long)axis, rank, rank);
        return LT_OK;
    }
    if (rank == 0) {
        if (axis != 0 && axis != -1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld out of range for a scalar", (long long)axis);
        *a = 0;
        return LT_OK;
    }
    *a = axis < 0 ? axis + rank : axis;
    if (*a < 0 || *a >= rank)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, rank);
    return LT_OK;
}

/* The [outer, len, inner] view the op normalizes over. */
static lt_status softmax_view(lt_eval *ev, const lt_node *n, const lt_tensor *x, int64_t *outer, int64_t *len,
                              int64_t *inner) {
    int64_t a;
    int rank = x->rank;
    LT_TRY(softmax_check(ev->ctx, n, rank, &a));
    if (n->opset < 13) {
        /* Coerced to 2-D: axis may be rank (then every row holds one element). */
        int64_t o = 1, l = 1;
        for (int d = 0; d < rank; d++) {
            if (d < a) o *= x->dims[d];
            else l *= x->dims[d];
        }
        *outer = o;
        *len = l;
        *inner = 1;
        return LT_OK;
    }
    if (rank == 0) {
        *outer = *len = *inner = 1;
        return LT_OK;
    }
    lt_red_split(x, (int)a, outer, len, inner);
    return LT_OK;
}

lt_status lt_red_eval_softmax(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_red_need_float(ev, n, x, "input"));
    int64_t outer = 0, len = 0, inner = 0;
    LT_TRY(softmax_view(ev, n, x, &outer, &len, &inner));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    if (x->numel == 0) return LT_OK;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            if (n->op == LT_OP_Hardmax) {
                /* One-hot at the first maximum (numpy argmax: the first NaN counts as the maximum). */
                int64_t best = 0;
                double b = lt_load_f64(x->data, x->dtype, base);
                for (int64_t k = 1; k < len && !isnan(b); k++) {
                    double v = lt_load_f64(x->data, x->dtype, base + k * inner);
                    if (isnan(v) || v > b) {
                        b = v;
                        best = k;
                    }
                }
                for (int64_t k = 0; k < len; k++) lt_store_f64(y->data, y->dtype, base + k * inner, k == best ? 1.0 : 0.0);
                continue;
            }
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = lt_load_f64(x->data, x->dtype, base + k * inner);
                if (v > mx || isnan(v)) mx = v;
                if (isnan(mx)) break;
            }
            if (isinf(mx)) mx = mx > 0 ? mx : 0; /* all -inf: exp gives 0s and the sum 0 (NaN as numpy) */
            for (int64_t k = 0; k < len; k++) sum += exp(lt_load_f64(x->data, x->dtype, base + k * inner) - mx);
            double lsum = log(sum);
            for (int64_t k = 0; k < len; k++) {
                int64_t e = base + k * inner;
                double v = lt_load_f64(x->data, x->dtype, e) - mx;
                lt_store_f64(y->data, y->dtype, e, n->op == LT_OP_LogSoftmax ? v - lsum : exp(v) / sum);
            }
        }
    }
    return LT_OK;
}

lt_status lt_red_infer_softmax(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    int64_t a;
    if (t && t->kind == LT_TK_TENSOR && t->rank >= 0) LT_TRY(softmax_check(ic->ctx, n, t->rank, &a));
    return lt_infer_copy(ic, n, 0, 0);
}

/* ================= losses ================= */

typedef enum { RED_NONE, RED_SUM, RED_MEAN } loss_red;

static lt_status loss_reduction(lt_eval *ev, const lt_node *n, loss_red *r) {
    const char *s = lt_attr_string(n, "reduction", "mean");
    if (!strcmp(s, "none")) *r = RED_NONE;
    else if (!strcmp(s, "sum")) *r = RED_SUM;
    else if (!strcmp(s, "mean")) *r = RED_MEAN;
    else return lt_op_error(ev, n, LT_ERR_INVALID, "reduction '%s' is not none, sum or mean", s);
    return LT_OK;
}

/* Check the shapes of input [N, C, d...], target [N, d...], weight [C]; give N, C, D = prod(d). */
static lt_status loss_shapes(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *t,
                             const lt_tensor *w, int64_t *N, int64_t *C, int64_t *D) {
    if (x->rank < 2) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 2, got %d", x->rank);
    if (t->dtype != LT_INT32 && t->dtype != LT_INT64)
        return lt_op_error(ev, n, LT_ERR_INVALID, "target must be int32 or int64, got %s", lt_dtype_name(t->dtype));
    bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int d = 1; ok && d < t->rank; d++) ok = t->dims[d] == x->dims[d + 1];
    if (!ok) {
        char a[256], b[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "target shape %s does not match input shape %s",
                           lt_shape_str(t->rank, t->dims, a, sizeof a), lt_shape_str(x->rank, x->dims, b, sizeof b));
    }
    if (w) {
        if (w->rank != 1 || w->dims[0] != x->dims[1])
            return lt_op_error(ev, n, LT_ERR_INVALID, "weight must have shape [%lld]", (long long)x->dims[1]);
        if (!lt_dtype_is_float(w->dtype))
            return lt_op_error(ev, n, LT_ERR_INVALID, "weight must be a float tensor, got %s", lt_dtype_name(w->dtype));
    }
    *N = x->dims[0];
    *C = x->dims[1];
    int64_t dd = 1;
    for (int d = 2; d < x->rank; d++) dd *= x->dims[d];
    *D = dd;
    return LT_OK;
}

/* The loss from log-probabilities lp[N][C][D] (double), into output `slot` of type dt. */
static lt_status loss_core(lt_eval *ev, const lt_node *n, lt_datum **out, const double *lp, int64_t N, int64_t C,
                           int64_t D, const lt_tensor *t, const lt_tensor *w, lt_dtype dt) {
    loss_red red = RED_MEAN;
    LT_TRY(loss_reduction(ev, n, &red));
    const lt_attr *iia = lt_node_attr(n, "ignore_index");
    bool has_ii = iia != NULL;
    int64_t ii = iia ? iia->i : 0;
    lt_tensor *y;
    if (red == RED_NONE) LT_TRY(lt_out_new(ev, n, out, 0, dt, t->rank, t->dims, &y));
    else LT_TRY(lt_out_new(ev, n, out, 0, dt, 0, NULL, &y));
    double sum = 0, wsum = 0;
    for (int64_t b = 0; b < N; b++) {
        for (int64_t d = 0; d < D; d++) {
            int64_t e = b * D + d, tv = lt_load_i64(t->data, t->dtype, e);
            double l = 0, wt = 0;
            if (!(has_ii && tv == ii)) {
                if (tv < 0 || tv >= C)
                    return lt_op_error(ev, n, LT_ERR_INVALID, "target %lld out of range [0, %lld) at element %lld",
                                       (long long)tv, (long long)C, (long long)e);
                wt = w ? lt_load_f64(w->data, w->dtype, tv) : 1.0;
                l = -lp[(b * C + tv) * D + d] * wt;
            }
            if (red == RED_NONE) lt_store_f64(y->data, dt, e, l);
            sum += l;
            wsum += wt;
        }
    }
    if (red == RED_SUM) lt_store_f64(y->data, dt, 0, sum);
    if (red == RED_MEAN) lt_store_f64(y->data, dt, 0, sum / wsum); /* 0/0 is NaN, as the reference */
    return LT_OK;
}

static lt_status loss_inputs(lt_eval *ev, const lt_node *n, lt_datum **in, const lt_tensor **x,
                             const lt_tensor **t, const lt_tensor **w) {
    LT_TRY(lt_in_tensor(ev, n, in, 0, x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, t));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, w));
    return lt_red_need_float(ev, n, *x, "input");
}

lt_status lt_red_eval_nllloss(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *t, *w;
    int64_t N = 0, C = 0, D = 0;
    LT_TRY(loss_inputs(ev, n, in, &x, &t, &w));
    LT_TRY(loss_shapes(ev, n, x, t, w, &N, &C, &D));
    double *lp = lt_red_doubles(ev, x->numel);
    if (!lp) return LT_ERR_NOMEM;
    for (int64_t i = 0; i < x->numel; i++) lp[i] = lt_load_f64(x->data, x->dtype, i);
    lt_status s = loss_core(ev, n, out, lp, N, C, D, t, w, x->dtype);
    lt_mem_free(lp);
    return s;
}

lt_status lt_red_eval_sceloss(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *t, *w;
    int64_t N = 0, C = 0, D = 0;
    LT_TRY(loss_inputs(ev, n, in, &x, &t, &w));
    LT_TRY(loss_shapes(ev, n, x, t, w, &N, &C, &D));
    double *lp = lt_red_doubles(ev, x->numel);
    if (!lp) return LT_ERR_NOMEM;
    /* log_softmax over axis 1 */
    for (int64_t b = 0; b < N; b++) {
        for (int64_t d = 0; d < D; d++) {
            int64_t base = b * C * D + d;
            double mx = -INFINITY, sum = 0;
            for (int64_t c = 0; c < C; c++) {
                double v = lt_load_f64(x->data, x->dtype, base + c * D);
                lp[base + c * D] = v;
                if (v > mx || isnan(v)) mx = v;
            }
            if (isinf(mx)) mx = mx > 0 ? mx : 0;
            for (int64_t c = 0; c < C; c++) sum += exp(lp[base + c * D] - mx);
            double lsum = log(sum);
            for (int64_t c = 0; c < C; c++) lp[base + c * D] = lp[base + c * D] - mx - lsum;
        }
    }
    lt_status s = loss_core(ev, n, out, lp, N, C, D, t, w, x->dtype);
    if (!s && n->n_out > 1) {
        lt_tensor *y;
        s = lt_out_new(ev, n, out, 1, x->dtype, x->rank, x->dims, &y);
        if (!s)
            for (int64_t i = 0; i < x->numel; i++) lt_store_f64(y->data, y->dtype, i, lp[i]);
    }
    lt_mem_free(lp);
    return s;
}

static lt_status infer_loss(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_red_in_dtype(n, 0);
    const char *r = lt_attr_string(n, "reduction", "mean");
    if (!strcmp(r, "none")) LT_TRY(lt_red_infer_like(ic, n, 0, 1, dt));
    else LT_TRY(lt_infer_set(ic, n, 0, dt, 0, NULL));
    return LT_OK;
}

lt_status lt_red_infer_nllloss(lt_infer *ic, lt_node *n) { return infer_loss(ic, n); }

lt_status lt_red_infer_sceloss(lt_infer *ic, lt_node *n) {
    LT_TRY(infer_loss(ic, n));
    return lt_infer_copy(ic, n, 1, 0);
}
