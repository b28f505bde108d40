/* nn_quant.c — linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
 *
 * Scales and zero points apply per tensor (one element), per axis (1-D along `axis`) or per block
 * (same rank as x, `block_size` consecutive elements along `axis` share one entry). Quantize divides
 * in the precision numpy uses for the operand dtypes (or the `precision` attribute), rounds half to
 * even, adds the zero point and saturates to the integer range; float8 outputs convert with
 * `saturate`, float4e2m1 with rounding to nearest even. Dequantize computes (x - zp) * scale in float32
 * (float64 for double scales), then converts to the output dtype. */
#include "nn_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Map from an element of x to its entry in a scale/zero-point tensor. */
typedef struct qmap {
    int mode; /* 0 per tensor, 1 per axis, 2 blocked */
    int64_t A, I, SA, bs;
} qmap;

static lt_status qmap_init(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *p, int64_t raw_axis,
                           int64_t block, const char *what, qmap *q) {
    memset(q, 0, sizeof *q);
    if (p->numel == 1) return LT_OK;
    if (x->rank == 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be a scalar for a scalar input", what);
    int axis;
    LT_TRY(lt_norm_axis(ev, n, raw_axis, x->rank, &axis));
    q->A = x->dims[axis];
    q->I = 1;
    for (int d = axis + 1; d < x->rank; d++) q->I *= x->dims[d];
    if (block <= 0) {
        if (p->rank != 1 || p->numel != q->A)
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be a scalar or 1-D with %lld elements (axis %d)", what,
                               (long long)q->A, axis);
        q->mode = 1;
        return LT_OK;
    }
    int64_t want = q->A / block + (q->A % block != 0);
    bool ok = p->rank == x->rank;
    for (int d = 0; ok && d < x->rank; d++) ok = p->dims[d] == (d == axis ? want : x->dims[d]);
    if (!ok) {
        char a[256], b[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s shape %s does not block input %s (axis %d, block_size %lld)", what,
                           lt_shape_str(p->rank, p->dims, a, sizeof a), lt_shape_str(x->rank, x->dims, b, sizeof b),
                           axis, (long long)block);
    }
    q->mode = 2;
    q->SA = want;
    q->bs = block;
    return LT_OK;
}

static inline int64_t qmap_at(const qmap *q, int64_t i) {
    if (q->mode == 0) return 0;
    int64_t a = (i / q->I) % q->A;
    if (q->mode == 1) return a;
    int64_t o = i / (q->I * q->A), r = i % q->I;
    return (o * q->SA + a / q->bs) * q->I + r;
}

static bool is_f8(lt_dtype dt) {
    return dt == LT_FLOAT8E4M3FN || dt == LT_FLOAT8E4M3FNUZ || dt == LT_FLOAT8E5M2 || dt == LT_FLOAT8E5M2FNUZ;
}

/* Integer range of a quantized type; false if dt is not an integer quantization type. */
static bool int_range(lt_dtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case LT_UINT8: *lo = 0; *hi = 255; return true;
    case LT_INT8: *lo = -128; *hi = 127; return true;
    case LT_UINT16: *lo = 0; *hi = 65535; return true;
    case LT_INT16: *lo = -32768; *hi = 32767; return true;
    case LT_UINT4: *lo = 0; *hi = 15; return true;
    case LT_INT4: *lo = -8; *hi = 7; return true;
    case LT_UINT2: *lo = 0; *hi = 3; return true;
    case LT_INT2: *lo = -2; *hi = 1; return true;
    default: return false;
    }
}

/* The dtype numpy divides x by the scale in. */
static lt_dtype div_dtype(lt_dtype x, lt_dtype s) {
    if (!nn_is_float(x) || x == LT_DOUBLE || s == LT_DOUBLE) return LT_DOUBLE;
    if (x == s) return x;
    return LT_FLOAT;
}

lt_status nn_eval_QuantizeLinear(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc, *zp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &sc));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &zp));
    if (!nn_is_float(x->dtype) && x->dtype != LT_INT32)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported input dtype %s", lt_dtype_name(x->dtype));
    if (!nn_is_float(sc->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "y_scale must be floating point, got %s", lt_dtype_name(sc->dtype));
    int64_t odt = lt_attr_int(n, "output_dtype", 0);
    if (zp && odt && odt != zp->dtype)
        return lt_op_error(ev, n, LT_ERR_INVALID, "output_dtype %lld differs from the zero point's %s", (long long)odt,
                           lt_dtype_name(zp->dtype));
    lt_dtype dt = zp ? zp->dtype : odt ? (lt_dtype)odt : LT_UINT8;
    int64_t lo = 0, hi = 0;
    bool isint = int_range(dt, &lo, &hi);
    if (!isint && !is_f8(dt) && dt != LT_FLOAT4E2M1)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported quantized type %s",
                           lt_dtype_valid((int)dt) ? lt_dtype_name(dt) : "(invalid)");
    int64_t axis = lt_attr_int(n, "axis", 1); /* normalized only where a scale is per axis */
    int64_t block = lt_attr_int(n, "block_size", 0);
    if (block < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "block_size must be >= 0");
    qmap qs, qz;
    LT_TRY(qmap_init(ev, n, x, sc, axis, block, "y_scale", &qs));
    if (zp) LT_TRY(qmap_init(ev, n, x, zp, axis, block, "y_zero_point", &qz));
    int64_t prec = lt_attr_int(n, "precision", 0);
    if (prec && !nn_is_float((lt_dtype)prec))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported precision %lld", (long long)prec);
    bool saturate = lt_attr_int(n, "saturate", 1) != 0;
    lt_dtype cdt = prec ? (lt_dtype)prec : div_dtype(x->dtype, sc->dtype);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, x->rank, x->dims, &y));
    for (int64_t i = 0; i < x->numel; i++) {
        double xv = lt_load_f64(x->data, x->dtype, i), sv = lt_load_f64(sc->data, sc->dtype, qmap_at(&qs, i));
        if (prec) {
            xv = nn_round_to(cdt, xv);
            sv = nn_round_to(cdt, sv);
        }
        double v = nn_round_to(cdt, xv / sv);
        if (isint) {
            double z = zp ? (double)lt_load_i64(zp->data, zp->dtype, qmap_at(&qz, i)) : 0.0;
            double r = rint(v) + z;
            if (r != r) r = z;
            r = r < (double)lo ? (double)lo : r > (double)hi ? (double)hi : r;
            lt_store_i64(y->data, dt, i, (int64_t)r);
        } else if (dt == LT_FLOAT4E2M1) {
            if (zp) v += lt_load_f64(zp->data, zp->dtype, qmap_at(&qz, i));
            lt_store_f64(y->data, dt, i, (float)v);
        } else {
            lt_store_f64_sat(y->data, dt, i, (float)v, saturate);
        }
    }
    return LT_OK;
}

lt_status nn_infer_QuantizeLinear(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 2);
    if (dt == LT_UNDEFINED) {
        int64_t odt = lt_attr_int(n, "output_dtype", 0);
        dt = odt > 0 && lt_dtype_valid((int)odt) ? (lt_dtype)odt : LT_UINT8;
    }
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    return lt_infer_set(ic, n, 0, dt, t->rank, t->dims);
}

lt_status nn_eval_DequantizeLinear(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sc, *zp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &sc));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &zp));
    int64_t lo, hi;
    bool xint = int_range(x->dtype, &lo, &hi) || x->dtype == LT_INT32;
    bool xf8 = is_f8(x->dtype), xf4 = x->dtype == LT_FLOAT4E2M1;
    if (!xint && !xf8 && !xf4)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported input dtype %s", lt_dtype_name(x->dtype));
    if (!nn_is_float(sc->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "x_scale must be floating point, got %s", lt_dtype_name(sc->dtype));
    int64_t odt = lt_attr_int(n, "output_dtype", 0);
    if (odt && !nn_is_float((lt_dtype)odt))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported output_dtype %lld", (long long)odt);
    lt_dtype dt = odt ? (lt_dtype)odt : sc->dtype;
    int64_t axis = lt_attr_int(n, "axis", 1); /* normalized only where a scale is per axis */
    int64_t block = lt_attr_int(n, "block_size", 0);
    if (block < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "block_size must be >= 0");
    qmap qs, qz;
    LT_TRY(qmap_init(ev, n, x, sc, axis, block, "x_scale", &qs));
    if (zp && xint) {
        if (zp->dtype != x->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "x_zero_point dtype %s differs from x's %s",
                               lt_dtype_name(zp->dtype), lt_dtype_name(x->dtype));
        LT_TRY(qmap_init(ev, n, x, zp, axis, block, "x_zero_point", &qz));
    } else if (zp && xf8) {
        for (int64_t i = 0; i < zp->numel; i++)
            if (((const uint8_t *)zp->data)[i] != 0)
                return lt_op_error(ev, n, LT_ERR_INVALID, "x_zero_point must be zero for float8 inputs");
        zp = NULL;
    } else {
        zp = NULL; /* float4e2m1: the zero point does not apply */
    }
    bool wide = sc->dtype == LT_DOUBLE || (x->dtype == LT_INT32 && zp);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, dt, x->rank, x->dims, &y));
    for (int64_t i = 0; i < x->numel; i++) {
        double dx = (float)lt_load_f64(x->data, x->dtype, i);
        if (zp) dx -= (double)lt_load_i64(zp->data, zp->dtype, qmap_at(&qz, i));
        double v = dx * lt_load_f64(sc->data, sc->dtype, qmap_at(&qs, i));
        if (!wide) v = (float)v;
        lt_store_f64(y->data, dt, i, v);
    }
    return LT_OK;
}

lt_status nn_infer_DequantizeLinear(lt_infer *ic, lt_node *n) {
    int64_t odt = lt_attr_int(n, "output_dtype", 0);
    lt_dtype dt = odt > 0 && lt_dtype_valid((int)odt) ? (lt_dtype)odt : nn_in_dtype(n, 1);
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    return lt_infer_set(ic, n, 0, dt, t->rank, t->dims);
}

lt_status nn_eval_DynamicQuantizeLinear(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (x->dtype != LT_FLOAT)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(x->dtype));
    const float *xv = x->data;
    float mx = 0.0f, mn = 0.0f;
    for (int64_t i = 0; i < x->numel; i++) {
        if (xv[i] > mx) mx = xv[i];
        if (xv[i] < mn) mn = xv[i];
    }
    float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
    float zp0 = 0.0f - mn / scale;
    float zpc = zp0 < 0.0f ? 0.0f : zp0 > 255.0f ? 255.0f : zp0;
    float zpi = rintf(zpc);
    lt_tensor *y, *ys, *yz;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_UINT8, x->rank, x->dims, &y));
    LT_TRY(lt_out_new(ev, n, out, 1, LT_FLOAT, 0, NULL, &ys));
    LT_TRY(lt_out_new(ev, n, out, 2, LT_UINT8, 0, NULL, &yz));
    uint8_t *yd = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        float q = rintf(xv[i] / scale) + zpi;
        if (q != q) q = zpi;
        yd[i] = (uint8_t)(q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q);
    }
    *(float *)ys->data = scale;
    *(uint8_t *)yz->data = (uint8_t)zpi;
    return LT_OK;
}

lt_status nn_infer_DynamicQuantizeLinear(lt_infer *ic, lt_node *n) {
    const lt_type *t = lt_infer_in(n, 0);
    if (!t || t->kind != LT_TK_TENSOR) LT_TRY(lt_infer_set(ic, n, 0, LT_UINT8, -1, NULL));
    else LT_TRY(lt_infer_set(ic, n, 0, LT_UINT8, t->rank, t->dims));
    LT_TRY(lt_infer_set(ic, n, 1, LT_FLOAT, 0, NULL));
    return lt_infer_set(ic, n, 2, LT_UINT8, 0, NULL);
}
