/* reduce_scan.c — CumSum, CumProd and TopK (part of the reduce family, see reduce.c).
 *
 * CumSum/CumProd: axis is a scalar int32/int64 input; `exclusive` shifts by one (identity first),
 * `reverse` scans from the end. Integers accumulate exactly, wrapping like fixed-width arithmetic.
 * TopK: K is the second input from opset 10 (a one-element int64 tensor), the `k` attribute before.
 * The result is sorted (also when sorted=0, which allows any order); ties keep the lower index
 * first; NaN ranks above every number (as numpy's sort places it last).
 * Each op's shape and attribute rules are one function (cum_check, topk_check) that the infer and
 * the eval hook both call, so a bad axis or K is refused at shape inference, naming the node, with
 * the interpreter's message (ops.def flags them CHECKS; src/lower/lower_scan.c compiles them).
 */
#include "reduce_impl.h"

#include <math.h>
#include <string.h>

/* ================= CumSum / CumProd ================= */

/* The rules of CumSum / CumProd, over what is known (rank -1, numel -1, dtype UNDEFINED, axis NULL:
 * unknown, passes): X of rank >= 1; the axis input a scalar or one-element 1-D tensor of int32 or
 * int64 whose value lies in [-rank, rank). *axis gets the normalized axis when both are known (else
 * -1). Shared by shape inference and eval. */
static lt_status cum_check(lt_ctx *ctx, const lt_node *n, int xrank, lt_dtype adt, int arank, int64_t anumel,
                           const int64_t *axis_val, int *axis) {
    *axis = -1;
    if (anumel >= 0 && (anumel != 1 || arank > 1))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis must be a scalar, got %lld elements", (long long)anumel);
    if (adt != LT_UNDEFINED && adt != LT_INT32 && adt != LT_INT64)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis must be int32 or int64, got %s", lt_dtype_name(adt));
    if (xrank == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 1");
    if (xrank > 0 && axis_val) LT_TRY(lt_node_axis(ctx, n, *axis_val, xrank, axis));
    return LT_OK;
}

lt_status lt_red_eval_cumulative(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *at;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &at));
    lt_dclass cls = lt_dtype_get(x->dtype)->cls;
    if (cls != LT_DC_FLOAT && cls != LT_DC_SINT && cls != LT_DC_UINT)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    int axis = 0;
    bool ok = at->numel == 1 && (at->dtype == LT_INT32 || at->dtype == LT_INT64);
    int64_t av = ok ? lt_load_i64(at->data, at->dtype, 0) : 0;
    LT_TRY(cum_check(ev->ctx, n, x->rank, at->dtype, at->rank, at->numel, &av, &axis));
    bool excl = lt_attr_int(n, "exclusive", 0) != 0, rev = lt_attr_int(n, "reverse", 0) != 0;
    bool prod = n->op == LT_OP_CumProd, sgn = cls == LT_DC_SINT;
    int64_t outer = 0, len = 0, inner = 0;
    lt_red_split(x, axis, &outer, &len, &inner);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            double fa = prod ? 1.0 : 0.0;
            uint64_t ia = prod ? 1 : 0;
            for (int64_t j = 0; j < len; j++) {
                int64_t e = base + (rev ? len - 1 - j : j) * inner;
                if (cls == LT_DC_FLOAT) {
                    double v = lt_load_f64(x->data, x->dtype, e);
                    if (excl) lt_store_f64(y->data, y->dtype, e, fa);
                    fa = prod ? fa * v : fa + v;
                    if (!excl) lt_store_f64(y->data, y->dtype, e, fa);
                } else {
                    uint64_t v = sgn ? (uint64_t)lt_load_i64(x->data, x->dtype, e) : lt_load_u64(x->data, x->dtype, e);
                    if (excl) lt_store_u64(y->data, y->dtype, e, ia);
                    ia = prod ? ia * v : ia + v;
                    if (!excl) lt_store_u64(y->data, y->dtype, e, ia);
                }
            }
        }
    }
    return LT_OK;
}

lt_status lt_red_infer_cumulative(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0), *at = lt_infer_in(n, 1);
    if (!at) return lt_infer_error(ic, n, "the axis input is missing");
    int xrank = t && t->kind == LT_TK_TENSOR ? t->rank : -1, arank = -1;
    int64_t adims[LT_MAX_RANK], anumel = -1;
    if (at->kind == LT_TK_TENSOR && lt_red_in_shape(n, 1, &arank, adims)) anumel = lt_red_numel(arank, adims);
    else arank = -1;
    const lt_tensor *ac = lt_infer_const(n, 1);
    int64_t av = 0;
    bool known = ac && ac->numel == 1 && (ac->dtype == LT_INT32 || ac->dtype == LT_INT64);
    if (known) av = lt_load_i64(ac->data, ac->dtype, 0);
    if (ac) arank = ac->rank, anumel = ac->numel;
    int axis;
    lt_dtype adt = ac ? ac->dtype : lt_red_in_dtype(n, 1);
    LT_TRY(cum_check(ic->ctx, n, xrank, adt, arank, anumel, known ? &av : NULL, &axis));
    return lt_infer_copy(ic, n, 0, 0);
}

/* ================= TopK ================= */

typedef struct topk_keys {
    int kind; /* 0 float, 1 signed, 2 unsigned */
    const double *f;
    const int64_t *s;
    const uint64_t *u;
    bool largest;
} topk_keys;

/* Does element a rank strictly before element b? (ties: neither; the stable sort keeps index order) */
static bool topk_before(const topk_keys *k, int64_t a, int64_t b) {
    int c;
    if (k->kind == 0) {
        double x = k->f[a], y = k->f[b];
        bool xn = isnan(x), yn = isnan(y);
        if (xn || yn) c = xn - yn; /* NaN is the greatest */
        else c = (x > y) - (x < y);
    } else if (k->kind == 1) {
        c = (k->s[a] > k->s[b]) - (k->s[a] < k->s[b]);
    } else {
        c = (k->u[a] > k->u[b]) - (k->u[a] < k->u[b]);
    }
    return k->largest ? c > 0 : c < 0;
}

/* Stable merge sort of positions idx[0..len) (tmp: scratch of the same size). */
static void topk_sort(const topk_keys *k, int64_t *idx, int64_t *tmp, int64_t len) {
    for (int64_t w = 1; w < len; w *= 2) {
        for (int64_t lo = 0; lo < len; lo += 2 * w) {
            int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = topk_before(k, idx[b], idx[a]) ? idx[b++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)len * sizeof *idx);
    }
}

/* The rules of TopK, over what is known (rank -1, dims -1, K's dtype UNDEFINED or numel -1:
 * unknown, passes): X of rank >= 1; axis in [-rank, rank); K (opset >= 10: the second input, a
 * one-element integer tensor; before: the `k` attribute, required) in [0, the axis' length]. k:
 * K's value or NULL when unknown. *axis gets the normalized axis (-1 when the rank is unknown).
 * Shared by shape inference and eval. */
static lt_status topk_check(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *dims, lt_dtype kdt,
                            int64_t knumel, const int64_t *k, int *axis) {
    *axis = -1;
    if (rank == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 1");
    if (n->opset >= 10) {
        if ((knumel >= 0 && knumel != 1) || (kdt != LT_UNDEFINED && !lt_dtype_is_int(kdt)))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "K must be a one-element integer tensor");
    } else if (!lt_node_attr(n, "k")) {
        return lt_node_error(ctx, n, LT_ERR_INVALID, "attribute k is missing");
    }
    if (rank > 0) LT_TRY(lt_node_axis(ctx, n, lt_attr_int(n, "axis", -1), rank, axis));
    int64_t len = *axis >= 0 && dims ? dims[*axis] : -1;
    if (k && (*k < 0 || (len >= 0 && *k > len))) {
        if (len < 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "K %lld is negative", (long long)*k);
        return lt_node_error(ctx, n, LT_ERR_INVALID, "K %lld out of range [0, %lld] for axis %d", (long long)*k,
                             (long long)len, *axis);
    }
    return LT_OK;
}

lt_status lt_red_eval_topk(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_dclass cls = lt_dtype_get(x->dtype)->cls;
    if (cls != LT_DC_FLOAT && cls != LT_DC_SINT && cls != LT_DC_UINT)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    int64_t k = 0;
    lt_dtype kdt = LT_UNDEFINED;
    int64_t knumel = -1;
    if (n->opset >= 10) {
        const lt_tensor *kt;
        LT_TRY(lt_in_tensor(ev, n, in, 1, &kt));
        kdt = kt->dtype, knumel = kt->numel;
        if (kt->numel == 1 && lt_dtype_is_int(kt->dtype)) k = lt_load_i64(kt->data, kt->dtype, 0);
    } else {
        k = lt_attr_int(n, "k", 0);
    }
    int axis = 0;
    LT_TRY(topk_check(ev->ctx, n, x->rank, x->dims, kdt, knumel, &k, &axis));
    int64_t outer = 0, len = 0, inner = 0;
    lt_red_split(x, axis, &outer, &len, &inner);
    bool largest = n->opset < 11 || lt_attr_int(n, "largest", 1) != 0;
    int64_t odims[LT_MAX_RANK];
    memcpy(odims, x->dims, (size_t)x->rank * sizeof *odims);
    odims[axis] = k;
    lt_tensor *yv, *yi, *own_i = NULL; /* indices: the second output, or scratch when it is omitted */
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, odims, &yv));
    if (n->n_out > 1) {
        LT_TRY(lt_out_new(ev, n, out, 1, LT_INT64, x->rank, odims, &yi));
    } else {
        LT_TRY(lt_tensor_new(ev->ctx, LT_INT64, x->rank, odims, &own_i));
        yi = own_i;
    }
    if (yv->numel == 0) {
        lt_tensor_release(own_i);
        return LT_OK;
    }
    /* Per slice: keys loaded once, positions sorted. */
    int64_t *idx = lt_calloc(ev->ctx, (size_t)len, sizeof *idx, "TopK scratch");
    int64_t *tmp = lt_calloc(ev->ctx, (size_t)len, sizeof *tmp, "TopK scratch");
    void *keys = lt_calloc(ev->ctx, (size_t)len, 8, "TopK scratch");
    if (!idx || !tmp || !keys) {
        lt_mem_free(idx);
        lt_mem_free(tmp);
        lt_mem_free(keys);
        lt_tensor_release(own_i);
        return LT_ERR_NOMEM;
    }
    topk_keys tk = {cls == LT_DC_FLOAT ? 0 : cls == LT_DC_SINT ? 1 : 2, keys, keys, keys, largest};
    int64_t *yid = yi->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            for (int64_t j = 0; j < len; j++) {
                int64_t e = base + j * inner;
                idx[j] = j;
                if (tk.kind == 0) ((double *)keys)[j] = lt_load_f64(x->data, x->dtype, e);
                else if (tk.kind == 1) ((int64_t *)keys)[j] = lt_load_i64(x->data, x->dtype, e);
                else ((uint64_t *)keys)[j] = lt_load_u64(x->data, x->dtype, e);
            }
            topk_sort(&tk, idx, tmp, len);
            for (int64_t j = 0; j < k; j++) {
                int64_t oe = o * k * inner + j * inner + i;
                yid[oe] = idx[j];
                lt_convert_elem(x->data, x->dtype, base + idx[j] * inner, yv->data, yv->dtype, oe, true);
            }
        }
    }
    lt_mem_free(idx);
    lt_mem_free(tmp);
    lt_mem_free(keys);
    lt_tensor_release(own_i);
    return LT_OK;
}

lt_status lt_red_infer_topk(lt_infer *ic, lt_node *n) {
    int rank = -1;
    int64_t dims[LT_MAX_RANK];
    lt_dtype dt = lt_red_in_dtype(n, 0);
    if (!lt_red_in_shape(n, 0, &rank, dims)) rank = -1;
    int64_t k = -1, knumel = -1, kd[LT_MAX_RANK];
    lt_dtype kdt = LT_UNDEFINED;
    bool known = false;
    if (n->opset >= 10) {
        int kr;
        if (!lt_infer_in(n, 1)) return lt_infer_error(ic, n, "input K is missing");
        kdt = lt_red_in_dtype(n, 1);
        if (lt_red_in_shape(n, 1, &kr, kd)) knumel = lt_red_numel(kr, kd);
        const lt_tensor *kt = lt_infer_const(n, 1);
        if (kt) kdt = kt->dtype, knumel = kt->numel;
        if (kt && kt->numel == 1 && lt_dtype_is_int(kt->dtype)) k = lt_load_i64(kt->data, kt->dtype, 0), known = true;
    } else if (lt_node_attr(n, "k")) {
        k = lt_attr_int(n, "k", 0), known = true;
    }
    int a;
    LT_TRY(topk_check(ic->ctx, n, rank, dims, kdt, knumel, known ? &k : NULL, &a));
    if (rank < 0) {
        LT_TRY(lt_infer_set(ic, n, 0, dt, -1, NULL));
        return lt_infer_set(ic, n, 1, LT_INT64, -1, NULL);
    }
    const lt_type *t = lt_infer_in(n, 0);
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < rank; i++) d[i] = t->dims ? t->dims[i] : (lt_dim){-1, NULL};
    d[a] = (lt_dim){known ? k : -1, NULL};
    LT_TRY(lt_infer_set(ic, n, 0, dt, rank, d));
    return lt_infer_set(ic, n, 1, LT_INT64, rank, d);
}
