/* reduce.c — the reduce family's table, the Reduce* ops, ArgMax/ArgMin, and the family's helpers.
 *
 * Reduce*: axes come from the `axes` attribute before opset 18 (ReduceSum: before 13) and from the
 * optional second input after; absent/empty axes reduce everything unless noop_with_empty_axes=1,
 * which reduces nothing (each output element is the "reduction" of one element, so ReduceSumSquare
 * squares, ReduceL1 takes |x|, ... as the spec says). Empty reductions give the identity of the
 * operation as the onnx reference does: sum 0, prod 1, max -inf (integers: the type's minimum),
 * min +inf (maximum), log-sum -inf, mean NaN.
 * Floats are computed in double and rounded once; integer sums/products wrap in uint64 (the same
 * residue as numpy's fixed-width arithmetic) and max/min compare exactly, never through double.
 * The other ops of the family live in reduce_norm.c, reduce_softmax.c and reduce_scan.c
 * (reduce_impl.h declares their hooks); this file holds the one exported table.
 */
#include "reduce_impl.h"

#include <math.h>
#include <string.h>

/* ================= shared helpers (reduce_impl.h) ================= */

void lt_red_iter_init(lt_red_iter *it, int rank, const int64_t *dims, const int64_t *strides) {
    it->rank = rank;
    it->off = 0;
    for (int d = 0; d < rank; d++) {
        it->dims[d] = dims[d];
        it->idx[d] = 0;
        it->strides[d] = strides[d];
    }
}

void lt_red_mask_strides(int rank, const int64_t *dims, const bool *mask, int64_t *strides,
                         int64_t *out_numel) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        if (mask[d]) {
            strides[d] = 0;
        } else {
            strides[d] = s;
            s *= dims[d]; /* <= the input's numel: no overflow */
        }
    }
    *out_numel = s;
}

lt_status lt_red_uni_check(lt_ctx *ctx, const lt_node *n, int pr, const int64_t *pd, int xr, const int64_t *xd,
                           const char *what) {
    bool ok = pr <= xr;
    for (int d = 0; ok && d < pr; d++) {
        int64_t p = pd[d], x = xd[xr - pr + d];
        if (p >= 0 && x >= 0 && p != x && p != 1) ok = false;
    }
    if (!ok) {
        char a[256], b[256];
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s of shape %s cannot be broadcast to the input's shape %s", what,
                             lt_shape_str(pr, pd, a, sizeof a), lt_shape_str(xr, xd, b, sizeof b));
    }
    return LT_OK;
}

lt_status lt_red_uni_strides(lt_eval *ev, const lt_node *n, const lt_tensor *p, const lt_tensor *x,
                             const char *what, int64_t *strides) {
    LT_TRY(lt_red_uni_check(ev->ctx, n, p->rank, p->dims, x->rank, x->dims, what));
    lt_broadcast_strides(p, x->rank, x->dims, strides);
    return LT_OK;
}

void lt_red_split(const lt_tensor *t, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    int64_t o = 1, in = 1;
    for (int d = 0; d < axis && d < t->rank; d++) o *= t->dims[d];
    for (int d = axis + 1; d < t->rank; d++) in *= t->dims[d];
    *outer = o;
    *len = t->rank ? t->dims[axis] : 1;
    *inner = in;
}

lt_status lt_red_need_float(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *name) {
    if (!lt_dtype_is_float(t->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "%s of type %s is not supported (float types only)", name,
                           lt_dtype_name(t->dtype));
    return LT_OK;
}

double *lt_red_doubles(lt_eval *ev, int64_t count) {
    if (count < 0) count = 0;
    return lt_calloc(ev->ctx, (size_t)(count ? count : 1), sizeof(double), "reduction scratch");
}

bool lt_red_in_shape(const lt_node *n, int j, int *rank, int64_t *dims) {
    const lt_type *t = lt_infer_in(n, j);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK) return false;
    *rank = t->rank;
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims ? t->dims[d].value : -1;
    return true;
}

int64_t lt_red_numel(int rank, const int64_t *dims) {
    int64_t c = 1;
    for (int d = 0; d < rank; d++)
        if (dims[d] < 0 || !lt_mul_i64(c, dims[d], &c)) return -1;
    return c;
}

lt_dtype lt_red_in_dtype(const lt_node *n, int j) {
    const lt_type *t = lt_infer_in(n, j);
    return t && t->kind == LT_TK_TENSOR ? t->dtype : LT_UNDEFINED;
}

lt_status lt_red_infer_like(lt_infer *ic, lt_node *n, int i, int j, lt_dtype dt) {
    const lt_type *t = lt_infer_in(n, j);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0) return lt_infer_set(ic, n, i, dt, -1, NULL);
    return lt_infer_set(ic, n, i, dt, t->rank, t->dims);
}

/* ================= Reduce* ================= */

typedef enum rkind { R_SUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE } rkind;

static rkind reduce_kind(int op) {
    switch (op) {
    case LT_OP_ReduceMean: return R_MEAN;
    case LT_OP_ReduceProd: return R_PROD;
    case LT_OP_ReduceMax: return R_MAX;
    case LT_OP_ReduceMin: return R_MIN;
    case LT_OP_ReduceL1: return R_L1;
    case LT_OP_ReduceL2: return R_L2;
    case LT_OP_ReduceSumSquare: return R_SUMSQ;
    case LT_OP_ReduceLogSum: return R_LOGSUM;
    case LT_OP_ReduceLogSumExp: return R_LSE;
    default: return R_SUM;
    }
}

/* Axes are an input (index 1) from this opset on. */
static bool axes_from_input(const lt_node *n) { return n->opset >= (n->op == LT_OP_ReduceSum ? 13 : 18); }

#define MAX_AXES 64

/* The reduced axes of a rank-`rank` input into mask[0..rank): `count` axes (count 0: none given),
 * each in [-rank, rank) and given once; none reduce everything unless noop_with_empty_axes (opsets
 * with the axes input). Shape inference and eval both call it, so every backend gives one error. */
static lt_status reduce_axes_mask(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *axes, int count,
                                  bool *mask) {
    if (count > MAX_AXES)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%d axes given for a rank-%d input", count, rank);
    for (int d = 0; d < rank; d++) mask[d] = false;
    if (count == 0) {
        bool noop = axes_from_input(n) && lt_attr_int(n, "noop_with_empty_axes", 0) != 0;
        for (int d = 0; d < rank; d++) mask[d] = !noop;
        return LT_OK;
    }
    for (int k = 0; k < count; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a < 0 || a >= rank)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld out of range [-%d, %d)", (long long)axes[k], rank,
                                 rank);
        if (mask[a]) return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is repeated", (long long)axes[k]);
        mask[a] = true;
    }
    return LT_OK;
}

/* Mark the reduced axes in mask[0..rank). Errors name the node. */
static lt_status reduce_mask(lt_eval *ev, const lt_node *n, lt_datum **in, int rank, bool *mask) {
    int64_t axes[MAX_AXES];
    int count = 0;
    if (axes_from_input(n)) {
        const lt_tensor *t;
        LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &t));
        if (t && t->numel > 0) LT_TRY(lt_tensor_ints(ev, n, t, axes, MAX_AXES, &count));
        return reduce_axes_mask(ev->ctx, n, rank, axes, count, mask);
    }
    const int64_t *a;
    int c = lt_attr_ints(n, "axes", &a);
    return reduce_axes_mask(ev->ctx, n, rank, a, c > 0 ? c : 0, mask);
}

/* Output dims of a reduction. */
static int reduce_out_dims(int rank, const int64_t *dims, const bool *mask, bool keepdims, int64_t *out) {
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (!mask[d]) out[r++] = dims[d];
        else if (keepdims) out[r++] = 1;
    }
    return r;
}

/* Value range of an integer dtype (bool: 0..1). */
static void int_range(lt_dtype dt, int64_t *lo, uint64_t *hi) {
    int bits = dt == LT_INT4 || dt == LT_UINT4 ? 4 : dt == LT_INT2 || dt == LT_UINT2 ? 2 : lt_dtype_size(dt) * 8;
    if (dt == LT_BOOL) {
        *lo = 0;
        *hi = 1;
    } else if (lt_dtype_get(dt)->cls == LT_DC_SINT) {
        *lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        *hi = bits == 64 ? (uint64_t)INT64_MAX : ((uint64_t)1 << (bits - 1)) - 1;
    } else {
        *lo = 0;
        *hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    }
}

/* Float path (also used for integer L2 / LogSum / LogSumExp): accumulate in double. */
static lt_status reduce_float(lt_eval *ev, rkind k, const lt_tensor *x, const int64_t *ostr, int64_t count,
                              lt_tensor *y) {
    int64_t on = y->numel;
    double *acc = lt_red_doubles(ev, on), *mx = NULL;
    if (!acc) return LT_ERR_NOMEM;
    double init = k == R_PROD ? 1.0 : k == R_MAX ? -INFINITY : k == R_MIN ? INFINITY : 0.0;
    for (int64_t o = 0; o < on; o++) acc[o] = init;
    lt_red_iter it;
    if (k == R_LSE) {
        /* Shift by the largest finite value of each group (0 if none) for stability. */
        mx = lt_red_doubles(ev, on);
        if (!mx) {
            lt_mem_free(acc);
            return LT_ERR_NOMEM;
        }
        for (int64_t o = 0; o < on; o++) mx[o] = -INFINITY;
        lt_red_iter_init(&it, x->rank, x->dims, ostr);
        for (int64_t i = 0; i < x->numel; i++, lt_red_iter_next(&it)) {
            double v = lt_load_f64(x->data, x->dtype, i);
            if (isfinite(v) && v > mx[it.off]) mx[it.off] = v;
        }
        for (int64_t o = 0; o < on; o++)
            if (mx[o] == -INFINITY) mx[o] = 0;
    }
    lt_red_iter_init(&it, x->rank, x->dims, ostr);
    for (int64_t i = 0; i < x->numel; i++, lt_red_iter_next(&it)) {
        double v = lt_load_f64(x->data, x->dtype, i), *a = &acc[it.off];
        switch (k) {
        case R_SUM: case R_MEAN: case R_LOGSUM: *a += v; break;
        case R_PROD: *a *= v; break;
        case R_MAX: if (isnan(v) || v > *a) *a = v; break;
        case R_MIN: if (isnan(v) || v < *a) *a = v; break;
        case R_L1: *a += fabs(v); break;
        case R_L2: case R_SUMSQ: *a += v * v; break;
        case R_LSE: *a += exp(v - mx[it.off]); break;
        }
    }
    for (int64_t o = 0; o < on; o++) {
        double v = acc[o];
        switch (k) {
        case R_MEAN: v = count ? v / (double)count : NAN; break;
        case R_L2: v = sqrt(v); break;
        case R_LOGSUM: v = log(v); break;
        case R_LSE: v = log(v) + mx[o]; break;
        default: break;
        }
        lt_store_f64(y->data, y->dtype, o, v);
    }
    lt_mem_free(acc);
    lt_mem_free(mx);
    return LT_OK;
}

/* Integer path: exact. Sums and products wrap modulo 2^64 (then to the type's width on store). */
static lt_status reduce_int(lt_eval *ev, rkind k, const lt_tensor *x, const int64_t *ostr, int64_t count,
                            lt_tensor *y) {
    int64_t on = y->numel;
    bool sgn = lt_dtype_get(x->dtype)->cls == LT_DC_SINT;
    uint64_t *acc = lt_calloc(ev->ctx, (size_t)(on ? on : 1), sizeof *acc, "reduction scratch");
    if (!acc) return LT_ERR_NOMEM;
    int64_t lo;
    uint64_t hi;
    int_range(x->dtype, &lo, &hi);
    uint64_t init = k == R_PROD ? 1 : k == R_MAX ? (uint64_t)lo : k == R_MIN ? hi : 0;
    for (int64_t o = 0; o < on; o++) acc[o] = init;
    lt_red_iter it;
    lt_red_iter_init(&it, x->rank, x->dims, ostr);
    for (int64_t i = 0; i < x->numel; i++, lt_red_iter_next(&it)) {
        uint64_t v = sgn ? (uint64_t)lt_load_i64(x->data, x->dtype, i) : lt_load_u64(x->data, x->dtype, i);
        uint64_t *a = &acc[it.off];
        switch (k) {
        case R_SUM: case R_MEAN: *a += v; break;
        case R_PROD: *a *= v; break;
        case R_MAX:
            if (sgn ? (int64_t)v > (int64_t)*a : v > *a) *a = v;
            break;
        case R_MIN:
            if (sgn ? (int64_t)v < (int64_t)*a : v < *a) *a = v;
            break;
        case R_L1: *a += (sgn && (int64_t)v < 0) ? (uint64_t)0 - v : v; break;
        case R_SUMSQ: *a += v * v; break;
        default: break; /* the float path handles the rest */
        }
    }
    for (int64_t o = 0; o < on; o++) {
        uint64_t v = acc[o];
        if (k == R_MEAN) {
            if (!count) v = 0;
            else if (sgn) v = (uint64_t)((int64_t)v / count);
            else v = v / (uint64_t)count;
        }
        if (sgn) lt_store_i64(y->data, y->dtype, o, (int64_t)v);
        else lt_store_u64(y->data, y->dtype, o, v);
    }
    lt_mem_free(acc);
    return LT_OK;
}

static lt_status eval_reduce(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    rkind k = reduce_kind(n->op);
    lt_dclass cls = lt_dtype_get(x->dtype)->cls;
    bool boolok = k == R_MAX || k == R_MIN;
    if (cls != LT_DC_FLOAT && cls != LT_DC_SINT && cls != LT_DC_UINT && !(cls == LT_DC_BOOL && boolok))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    bool mask[LT_MAX_RANK];
    LT_TRY(reduce_mask(ev, n, in, x->rank, mask));
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    int64_t odims[LT_MAX_RANK], ostr[LT_MAX_RANK], on, count = 1;
    int orank = reduce_out_dims(x->rank, x->dims, mask, keep, odims);
    lt_red_mask_strides(x->rank, x->dims, mask, ostr, &on);
    for (int d = 0; d < x->rank; d++)
        if (mask[d]) count *= x->dims[d]; /* <= numel, or 0 */
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, orank, odims, &y));
    if (cls == LT_DC_FLOAT || k == R_L2 || k == R_LOGSUM || k == R_LSE) return reduce_float(ev, k, x, ostr, count, y);
    return reduce_int(ev, k, x, ostr, count, y);
}

static lt_status infer_reduce(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    lt_dtype dt = lt_red_in_dtype(n, 0);
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int rank = t->rank;
    if (rank > LT_MAX_RANK) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t axes[MAX_AXES];
    const int64_t *ap = axes;
    int count = 0;
    if (axes_from_input(n)) {
        if (n->n_in > 1 && n->in[1]) {
            const lt_tensor *c = lt_infer_const(n, 1);
            if (!c || !lt_dtype_is_int(c->dtype) || c->numel > MAX_AXES) {
                /* axes known only at run time: eval checks them */
                if (keep) return lt_infer_set(ic, n, 0, dt, rank, NULL);
                return lt_infer_set(ic, n, 0, dt, -1, NULL);
            }
            for (int64_t i = 0; i < c->numel; i++) axes[i] = lt_load_i64(c->data, c->dtype, i);
            count = (int)c->numel;
        }
    } else {
        int c = lt_attr_ints(n, "axes", &ap);
        count = c > 0 ? c : 0;
    }
    bool mask[LT_MAX_RANK] = {0};
    LT_TRY(reduce_axes_mask(ic->ctx, n, rank, ap, count, mask));
    lt_dim od[LT_MAX_RANK];
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (!mask[d]) od[r++] = t->dims ? t->dims[d] : (lt_dim){-1, NULL};
        else if (keep) od[r++] = (lt_dim){1, NULL};
    }
    return lt_infer_set(ic, n, 0, dt, r, od);
}

/* ================= ArgMax / ArgMin ================= */

/* The rules of ArgMax / ArgMin on a rank-`rank` input (dims -1 when unknown): axis in range, the
 * axis not empty. *axis gets the normalized axis. Shared by shape inference and eval. */
static lt_status arg_check(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *dims, int *axis) {
    int64_t ax = lt_attr_int(n, "axis", 0), a = ax < 0 ? ax + rank : ax;
    if (a < 0 || a >= (rank ? rank : 1))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)ax, rank);
    if (rank > 0 && dims && dims[a] == 0)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot take %s over axis %d of size 0",
                             n->op == LT_OP_ArgMax ? "ArgMax" : "ArgMin", (int)a);
    *axis = (int)a;
    return LT_OK;
}

static lt_status eval_arg(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_dclass cls = lt_dtype_get(x->dtype)->cls;
    if (cls != LT_DC_FLOAT && cls != LT_DC_SINT && cls != LT_DC_UINT && cls != LT_DC_BOOL)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input type %s is not supported", lt_dtype_name(x->dtype));
    int axis = 0;
    LT_TRY(arg_check(ev->ctx, n, x->rank, x->dims, &axis));
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    bool last = n->opset >= 12 && lt_attr_int(n, "select_last_index", 0) != 0;
    bool is_max = n->op == LT_OP_ArgMax;
    int64_t outer = 0, len = 0, inner = 0;
    lt_red_split(x, axis, &outer, &len, &inner);
    int64_t odims[LT_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d != axis) odims[orank++] = x->dims[d];
        else if (keep) odims[orank++] = 1;
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_INT64, orank, odims, &y));
    int64_t *yd = y->data;
    bool sgn = cls == LT_DC_SINT;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            if (cls == LT_DC_FLOAT) {
                double b = lt_load_f64(x->data, x->dtype, base);
                for (int64_t k = 1; k < len; k++) {
                    double v = lt_load_f64(x->data, x->dtype, base + k * inner);
                    bool take;
                    if (isnan(b)) take = last && isnan(v); /* numpy: the first (last) NaN wins */
                    else if (isnan(v)) take = true;
                    else if (is_max) take = last ? v >= b : v > b;
                    else take = last ? v <= b : v < b;
                    if (take) {
                        b = v;
                        best = k;
                    }
                }
            } else {
                uint64_t b = sgn ? (uint64_t)lt_load_i64(x->data, x->dtype, base) : lt_load_u64(x->data, x->dtype, base);
                for (int64_t k = 1; k < len; k++) {
                    int64_t e = base + k * inner;
                    uint64_t v = sgn ? (uint64_t)lt_load_i64(x->data, x->dtype, e) : lt_load_u64(x->data, x->dtype, e);
                    int c = sgn ? ((int64_t)v > (int64_t)b) - ((int64_t)v < (int64_t)b) : (v > b) - (v < b);
                    if (!is_max) c = -c;
                    if (c > 0 || (last && c == 0)) {
                        b = v;
                        best = k;
                    }
                }
            }
            yd[o * inner + i] = best;
        }
    }
    return LT_OK;
}

static lt_status infer_arg(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR || t->rank < 0 || t->rank > LT_MAX_RANK)
        return lt_infer_set(ic, n, 0, LT_INT64, -1, NULL);
    int rank = t->rank, a = 0;
    int64_t dims[LT_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) dims[d] = t->dims ? t->dims[d].value : -1;
    LT_TRY(arg_check(ic->ctx, n, rank, dims, &a));
    bool keep = lt_attr_int(n, "keepdims", 1) != 0;
    lt_dim od[LT_MAX_RANK];
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (d != a) od[r++] = t->dims ? t->dims[d] : (lt_dim){-1, NULL};
        else if (keep) od[r++] = (lt_dim){1, NULL};
    }
    return lt_infer_set(ic, n, 0, LT_INT64, r, od);
}

/* ================= the family table ================= */

const lt_op_reg lt_ops_reduce[] = {
    {LT_OP_ArgMax, infer_arg, eval_arg},
    {LT_OP_ArgMin, infer_arg, eval_arg},
    {LT_OP_BatchNormalization, lt_red_infer_batchnorm, lt_red_eval_batchnorm},
    {LT_OP_CumProd, lt_red_infer_cumulative, lt_red_eval_cumulative},
    {LT_OP_CumSum, lt_red_infer_cumulative, lt_red_eval_cumulative},
    {LT_OP_Dropout, lt_red_infer_dropout, lt_red_eval_dropout},
    {LT_OP_GroupNormalization, lt_red_infer_groupnorm, lt_red_eval_groupnorm},
    {LT_OP_Hardmax, lt_red_infer_softmax, lt_red_eval_softmax},
    {LT_OP_InstanceNormalization, lt_red_infer_instancenorm, lt_red_eval_instancenorm},
    {LT_OP_LRN, lt_red_infer_lrn, lt_red_eval_lrn},
    {LT_OP_LayerNormalization, lt_red_infer_layernorm, lt_red_eval_layernorm},
    {LT_OP_LogSoftmax, lt_red_infer_softmax, lt_red_eval_softmax},
    {LT_OP_LpNormalization, lt_red_infer_lpnorm, lt_red_eval_lpnorm},
    {LT_OP_MeanVarianceNormalization, lt_red_infer_mvn, lt_red_eval_mvn},
    {LT_OP_NegativeLogLikelihoodLoss, lt_red_infer_nllloss, lt_red_eval_nllloss},
    {LT_OP_RMSNormalization, lt_red_infer_rmsnorm, lt_red_eval_rmsnorm},
    {LT_OP_ReduceL1, infer_reduce, eval_reduce},
    {LT_OP_ReduceL2, infer_reduce, eval_reduce},
    {LT_OP_ReduceLogSum, infer_reduce, eval_reduce},
    {LT_OP_ReduceLogSumExp, infer_reduce, eval_reduce},
    {LT_OP_ReduceMax, infer_reduce, eval_reduce},
    {LT_OP_ReduceMean, infer_reduce, eval_reduce},
    {LT_OP_ReduceMin, infer_reduce, eval_reduce},
    {LT_OP_ReduceProd, infer_reduce, eval_reduce},
    {LT_OP_ReduceSum, infer_reduce, eval_reduce},
    {LT_OP_ReduceSumSquare, infer_reduce, eval_reduce},
    {LT_OP_Softmax, lt_red_infer_softmax, lt_red_eval_softmax},
    {LT_OP_SoftmaxCrossEntropyLoss, lt_red_infer_sceloss, lt_red_eval_sceloss},
    {LT_OP_TopK, lt_red_infer_topk, lt_red_eval_topk},
    {0, NULL, NULL},
};
