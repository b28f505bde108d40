/* expand_quant.c — the quantization ops become float and integer ops lathe compiles, with the
 * interpreter's exact results:
 *
 *   QuantizeLinear        y = Cast(Clip(Round(x / scale) [+ zp], lo, hi), int type) (unsigned via int32)
 *   DequantizeLinear      y = (Cast(x, float) [- Cast(zp, float)]) * scale
 *   DynamicQuantizeLinear lo = Min(ReduceMin(x), 0), hi = Max(ReduceMax(x), 0),
 *                         scale = (hi == lo ? 1 : hi - lo) / 255, zp = Round(Clip(-lo / scale, 0, 255)),
 *                         y = Cast(Clip(Round(x / scale) + zp, 0, 255), uint8)
 *   MatMulInteger         targets with 8-bit integer kernels (lt_pass_options.no_int8_gemm false: the
 *   ConvInteger           CPUs): kept, compiled to the exact int8 GEMM / convolution (lower_int8.c,
 *                         codegen/prelude/gemm_i8.h); otherwise Cast(MatMul(A - za, B - zb), int32)
 *                         and Cast(Conv(x - zx, w - zw), int32), in float
 *
 * Round is half to even, as the ops round. The float integer products are exact: every partial
 * sum of at most EXACT_TERMS products of two 8-bit differences (|d| <= 255) is an integer below
 * 2^24, whatever order a kernel sums in; longer dot products are cut into chunks of at most
 * EXACT_TERMS terms (Slices along K, or along the input channels of a Conv), each chunk's result
 * cast to int32 and the chunks summed in int32. Scales and zero points per tensor or per axis
 * (1-D) are reshaped to broadcast; constant weights fold (a QDQ model's DequantizeLinear of an int8
 * weight becomes a float weight).
 *
 * QDQ products on targets with int8 kernels: a MatMul, Gemm (transA 0) or 2-D Conv whose data and
 * weight operands are both DequantizeLinear outputs of 8-bit tensors (the data's scale and zero
 * point one value; the weight's one value or one per output column / channel) becomes the integer
 * product scaled once:
 *   MatMul(DQ(qx), DQ(qw))        -> Cast(MatMulInteger(qx, qw, zx, zw), float) * (sx * sw)
 *   Gemm(DQ(qx), DQ(qw), C)       -> the same (qw transposed when transB) * alpha [+ beta * C]
 *   Conv(DQ(qx), DQ(qw), bias)    -> Cast(ConvInteger(qx, qw, zx, zw), float) * (sx * sw) [+ bias]
 * The integer sum is exact; the float result differs from the float product of the dequantized
 * values only by rounding (one rounding of the int32 sum and of sx * sw, against the float sum's
 * roundings: a few float32 ulps, as onnxruntime's integer kernels differ). The DequantizeLinear
 * nodes are left for such a consumer (rewritten in a later round if anything else reads them), and
 * the pass runs before fold_constants in the simplification group so that a constant weight's
 * DequantizeLinear is still there in the first round.
 *
 * Left to the interpreter: block quantization, float8/int4 types, zero points of another dtype than
 * their data, per-row zero points of MatMulInteger's A, a grouped ConvInteger whose dot products
 * need chunks (float path), float16/double scales, opsets before 11 (no Round / Clip inputs).
 * Level -O1; in the simplification group, so a node is rewritten once its shapes are static and
 * the float ops it becomes fold where their inputs are constant.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

#define EXACT_TERMS 258 /* 258 * 255 * 255 < 2^24 */

static int64_t numel_of(const lt_value *v) {
    int r;
    int64_t d[LT_MAX_RANK], n = 1;
    if (!v || !lt_value_static_shape(v, &r, d)) return -1;
    for (int i = 0; i < r; i++) n *= d[i];
    return n;
}

static lt_status scalar(lt_ctx *ctx, lt_graph *g, lt_dtype dt, double v, const char *hint, lt_value **out) {
    lt_tensor *t;
    LT_TRY(lt_tensor_new(ctx, dt, 0, NULL, &t));
    lt_store_f64(t->data, dt, 0, v);
    return lt_value_new_const(ctx, g, hint, t, out);
}

/* The name new values of node n are named after: its first requested output's, else its op's. */
static const char *hint_of(const lt_node *n) {
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k]) return n->out[k]->name;
    return n->op_type;
}

static lt_status op1(lt_ctx *ctx, lt_graph *g, const char *op, lt_value *a, const char *attr, int64_t val,
                     lt_node *before, lt_value **out) {
    return lt_pu_new_op(ctx, g, op, 1, &a, attr, val, hint_of(before), before, out);
}

static lt_status op2(lt_ctx *ctx, lt_graph *g, const char *op, lt_value *a, lt_value *b, lt_node *before,
                     lt_value **out) {
    lt_value *in[2] = {a, b};
    return lt_pu_new_op(ctx, g, op, 2, in, NULL, 0, hint_of(before), before, out);
}

static lt_status clip(lt_ctx *ctx, lt_graph *g, lt_value *x, double lo, double hi, lt_node *before, lt_value **out) {
    lt_value *in[3] = {x, NULL, NULL};
    LT_TRY(scalar(ctx, g, LT_FLOAT, lo, hint_of(before), &in[1]));
    LT_TRY(scalar(ctx, g, LT_FLOAT, hi, hint_of(before), &in[2]));
    return lt_pu_new_op(ctx, g, "Clip", 3, in, NULL, 0, hint_of(before), before, out);
}

/* NaN -> 0 (the interpreter maps a NaN quotient to the zero point, and leaves NaN out of ranges). */
static lt_status nan_to_zero(lt_ctx *ctx, lt_graph *g, lt_value *x, lt_node *before, lt_value **out) {
    lt_value *isnan, *zero;
    LT_TRY(op1(ctx, g, "IsNaN", x, NULL, 0, before, &isnan));
    LT_TRY(scalar(ctx, g, LT_FLOAT, 0, hint_of(before), &zero));
    lt_value *w[3] = {isnan, zero, x};
    return lt_pu_new_op(ctx, g, "Where", 3, w, NULL, 0, hint_of(before), before, out);
}

/* n's inputs 0..need-1 are given, its output 0 is requested, and output 0 has a static shape (its
 * inference succeeded: a node of a branch that never runs may have failed it). */
static bool well_formed(const lt_node *n, int need) {
    if (n->n_in < need || n->n_out < 1 || !n->out[0] || numel_of(n->out[0]) < 0) return false;
    for (int i = 0; i < need; i++)
        if (!n->in[i]) return false;
    return true;
}

static bool int_range(lt_dtype dt, double *lo, double *hi) {
    switch (dt) {
    case LT_INT8: *lo = -128, *hi = 127; return true;
    case LT_UINT8: *lo = 0, *hi = 255; return true;
    case LT_INT16: *lo = -32768, *hi = 32767; return true;
    case LT_UINT16: *lo = 0, *hi = 65535; return true;
    default: return false;
    }
}

/* Cast of the float integer values v (in odt's range) to odt; unsigned types through int32, since a
 * float to unsigned Cast is not compiled (the reference wraps what C leaves undefined). */
static lt_status to_int(lt_ctx *ctx, lt_graph *g, lt_value *v, lt_dtype odt, lt_node *before, lt_value **out) {
    if (odt == LT_UINT8 || odt == LT_UINT16) LT_TRY(op1(ctx, g, "Cast", v, "to", LT_INT32, before, &v));
    return op1(ctx, g, "Cast", v, "to", odt, before, out);
}

static bool is_8bit(lt_dtype dt) { return dt == LT_INT8 || dt == LT_UINT8; }


/* A scale or zero point p of x (rank r) as a value that broadcasts against x: per tensor (one
 * element) as it is, per axis (1-D of x's extent along `axis`) reshaped to [C, 1, ..]. false when
 * it is neither. */
static bool param_shape(const lt_value *p, const lt_value *x, int64_t axis, int *prank, int64_t *pdims) {
    int r, pr;
    int64_t xd[LT_MAX_RANK], pd[LT_MAX_RANK];
    if (!lt_value_static_shape(x, &r, xd) || !lt_value_static_shape(p, &pr, pd)) return false;
    int64_t n = numel_of(p);
    if (n == 1) {
        *prank = 0;
        return true;
    }
    if (pr != 1 || axis < -r || axis >= r) return false;
    int a = (int)(axis < 0 ? axis + r : axis);
    if (pd[0] != xd[a]) return false;
    *prank = r - a;
    pdims[0] = xd[a];
    for (int i = 1; i < *prank; i++) pdims[i] = 1;
    return true;
}

static lt_status broadcastable(lt_ctx *ctx, lt_graph *g, lt_value *p, int prank, const int64_t *pdims, lt_node *n,
                               lt_value **out) {
    return lt_pu_reshape(ctx, g, p, prank, pdims, n->out[0]->name, n, out);
}

/* zp as float, broadcastable; NULL when absent. */
static lt_status zero_point(lt_ctx *ctx, lt_graph *g, lt_value *zp, int prank, const int64_t *pdims, lt_node *n,
                            lt_value **out) {
    *out = NULL;
    if (!zp) return LT_OK;
    lt_value *b;
    LT_TRY(broadcastable(ctx, g, zp, prank, pdims, n, &b));
    return op1(ctx, g, "Cast", b, "to", LT_FLOAT, n, out);
}

static lt_status finish(lt_ctx *ctx, lt_graph *g, lt_node *n, int k, lt_value *v, bool *changed) {
    lt_pu_take_name(g, v, n->out[k]);
    return lt_pu_forward(ctx, g, n, k, v, changed);
}

/* ---- QuantizeLinear / DequantizeLinear ---- */

static bool qdq_params(const lt_node *n, int *prank, int64_t *pdims) {
    if (!well_formed(n, 2) || n->opset < 11) return false;
    if (lt_attr_int(n, "block_size", 0) != 0 || lt_attr_int(n, "precision", 0) != 0) return false;
    if (n->in[1]->type.dtype != LT_FLOAT || numel_of(n->in[0]) < 0) return false;
    int64_t axis = lt_attr_int(n, "axis", 1);
    if (!param_shape(n->in[1], n->in[0], axis, prank, pdims)) return false;
    const lt_value *zp = n->n_in > 2 ? n->in[2] : NULL;
    if (zp) {
        int zr;
        int64_t zd[LT_MAX_RANK];
        if (!param_shape(zp, n->in[0], axis, &zr, zd) || zr != *prank) return false;
    }
    return true;
}

static lt_status rewrite_quantize(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    int pr;
    int64_t pd[LT_MAX_RANK];
    lt_value *zp = n->n_in > 2 ? n->in[2] : NULL;
    double lo, hi;
    if (!qdq_params(n, &pr, pd) || n->in[0]->type.dtype != LT_FLOAT) return LT_OK;
    lt_dtype odt = n->out[0]->type.dtype;
    if (!int_range(odt, &lo, &hi)) return LT_OK;
    if (zp && zp->type.dtype != odt) return LT_OK;
    lt_value *scale, *zf, *y;
    LT_TRY(broadcastable(ctx, g, n->in[1], pr, pd, n, &scale));
    LT_TRY(zero_point(ctx, g, zp, pr, pd, n, &zf));
    LT_TRY(op2(ctx, g, "Div", n->in[0], scale, n, &y));
    LT_TRY(nan_to_zero(ctx, g, y, n, &y));
    LT_TRY(op1(ctx, g, "Round", y, NULL, 0, n, &y));
    if (zf) LT_TRY(op2(ctx, g, "Add", y, zf, n, &y));
    LT_TRY(clip(ctx, g, y, lo, hi, n, &y));
    LT_TRY(to_int(ctx, g, y, odt, n, &y));
    return finish(ctx, g, n, 0, y, changed);
}

static lt_status rewrite_dequantize(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    int pr;
    int64_t pd[LT_MAX_RANK];
    lt_value *zp = n->n_in > 2 ? n->in[2] : NULL;
    double lo, hi;
    if (!qdq_params(n, &pr, pd) || n->out[0]->type.dtype != LT_FLOAT) return LT_OK;
    lt_dtype xdt = n->in[0]->type.dtype;
    if (!int_range(xdt, &lo, &hi) && xdt != LT_INT32) return LT_OK;
    if (zp && zp->type.dtype != xdt) return LT_OK;
    if (zp && xdt == LT_INT32) { /* int32 - zp is not exact in float: only a zero zero point */
        const lt_tensor *c = lt_value_const(zp);
        if (!c || !lt_pu_tensor_all_equal(c, 0)) return LT_OK;
        zp = NULL;
    }
    lt_value *scale, *zf, *y;
    LT_TRY(broadcastable(ctx, g, n->in[1], pr, pd, n, &scale));
    LT_TRY(zero_point(ctx, g, zp, pr, pd, n, &zf));
    LT_TRY(op1(ctx, g, "Cast", n->in[0], "to", LT_FLOAT, n, &y));
    if (zf) LT_TRY(op2(ctx, g, "Sub", y, zf, n, &y));
    LT_TRY(op2(ctx, g, "Mul", y, scale, n, &y));
    return finish(ctx, g, n, 0, y, changed);
}

/* ---- DynamicQuantizeLinear ---- */

static lt_status rewrite_dynamic(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (!well_formed(n, 1) || n->n_out != 3 || n->in[0]->type.dtype != LT_FLOAT || numel_of(n->in[0]) < 1 ||
        n->opset < 11)
        return LT_OK;
    lt_value *x = n->in[0], *xr;
    const char *h = hint_of(n);
    lt_value *zero, *one, *c255, *mx, *mn, *eq, *range, *scale, *zp, *y;
    LT_TRY(scalar(ctx, g, LT_FLOAT, 0, h, &zero));
    LT_TRY(scalar(ctx, g, LT_FLOAT, 1, h, &one));
    LT_TRY(scalar(ctx, g, LT_FLOAT, 255, h, &c255));
    LT_TRY(nan_to_zero(ctx, g, x, n, &xr)); /* NaN takes no part in the range */
    LT_TRY(op1(ctx, g, "ReduceMax", xr, "keepdims", 0, n, &mx));
    LT_TRY(op1(ctx, g, "ReduceMin", xr, "keepdims", 0, n, &mn));
    LT_TRY(op2(ctx, g, "Max", mx, zero, n, &mx));
    LT_TRY(op2(ctx, g, "Min", mn, zero, n, &mn));
    LT_TRY(op2(ctx, g, "Equal", mx, mn, n, &eq));
    LT_TRY(op2(ctx, g, "Sub", mx, mn, n, &range));
    lt_value *w[3] = {eq, one, range};
    LT_TRY(lt_pu_new_op(ctx, g, "Where", 3, w, NULL, 0, h, n, &range));
    LT_TRY(op2(ctx, g, "Div", range, c255, n, &scale));
    LT_TRY(op2(ctx, g, "Div", mn, scale, n, &zp));
    LT_TRY(op1(ctx, g, "Neg", zp, NULL, 0, n, &zp));
    LT_TRY(clip(ctx, g, zp, 0, 255, n, &zp));
    LT_TRY(op1(ctx, g, "Round", zp, NULL, 0, n, &zp));
    LT_TRY(op2(ctx, g, "Div", x, scale, n, &y));
    LT_TRY(nan_to_zero(ctx, g, y, n, &y)); /* a NaN element becomes the zero point */
    LT_TRY(op1(ctx, g, "Round", y, NULL, 0, n, &y));
    LT_TRY(op2(ctx, g, "Add", y, zp, n, &y));
    LT_TRY(clip(ctx, g, y, 0, 255, n, &y));
    LT_TRY(to_int(ctx, g, y, LT_UINT8, n, &y));
    lt_value *zq;
    LT_TRY(to_int(ctx, g, zp, LT_UINT8, n, &zq));
    lt_value *outs[3] = {y, scale, zq};
    for (int k = 0; k < 3 && k < n->n_out; k++)
        if (n->out[k]) {
            lt_pu_take_name(g, outs[k], n->out[k]);
            LT_TRY(lt_value_replace_uses(ctx, g, n->out[k], outs[k]));
        }
    *changed = true;
    lt_node_remove(g, n);
    return LT_OK;
}

/* ---- MatMulInteger / ConvInteger ---- */

/* v - zp in float (zp broadcast per tensor, or along v's axis `axis` when 1-D). */
static lt_status centered(lt_ctx *ctx, lt_graph *g, lt_node *n, lt_value *v, lt_value *zp, int64_t axis,
                          lt_value **out) {
    LT_TRY(op1(ctx, g, "Cast", v, "to", LT_FLOAT, n, out));
    if (!zp) return LT_OK;
    int pr;
    int64_t pd[LT_MAX_RANK];
    if (!param_shape(zp, v, axis, &pr, pd))
        return lt_error(ctx, LT_ERR_INTERNAL, "%s: zero point of a shape it cannot broadcast", n->out[0]->name);
    lt_value *zf;
    LT_TRY(zero_point(ctx, g, zp, pr, pd, n, &zf));
    return op2(ctx, g, "Sub", *out, zf, n, out);
}

static lt_status slice(lt_ctx *ctx, lt_graph *g, lt_node *n, lt_value *v, int64_t axis, int64_t b, int64_t e,
                       lt_value **out) {
    lt_tensor *ts[3];
    int64_t vals[3] = {b, e, axis};
    lt_value *in[4] = {v, NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        LT_TRY(lt_pu_tensor_i64(ctx, 1, &vals[i], &ts[i]));
        LT_TRY(lt_value_new_const(ctx, g, n->out[0]->name, ts[i], &in[i + 1]));
    }
    return lt_pu_new_op(ctx, g, "Slice", 4, in, NULL, 0, n->out[0]->name, n, out);
}

/* sum over chunks c of Cast(op(a[.., chunk c along a_axis], b[chunk c along b_axis]), int32). */
static lt_status chunked(lt_ctx *ctx, lt_graph *g, lt_node *n, const char *op, lt_value *a, int a_axis, lt_value *b,
                         int b_axis, int64_t extent, int64_t per_unit, lt_value **out) {
    if (extent < 1 || per_unit < 1 || per_unit > EXACT_TERMS)
        return lt_error(ctx, LT_ERR_INTERNAL, "expand_quant: a dot product of %lld x %lld terms", (long long)extent,
                        (long long)per_unit);
    int64_t step = EXACT_TERMS / per_unit;
    lt_value *sum = NULL;
    for (int64_t k0 = 0; k0 < extent; k0 += step) {
        int64_t k1 = k0 + step < extent ? k0 + step : extent;
        lt_value *ac = a, *bc = b, *part;
        if (step < extent) {
            LT_TRY(slice(ctx, g, n, a, a_axis, k0, k1, &ac));
            LT_TRY(slice(ctx, g, n, b, b_axis, k0, k1, &bc));
        }
        lt_value *in[2] = {ac, bc};
        lt_node *m;
        LT_TRY(lt_node_new(ctx, g, op, "", 2, in, 1, n->out[0]->name, n, &m));
        if (n->op == LT_OP_ConvInteger) LT_TRY(lt_node_copy_attrs(ctx, m, n));
        LT_TRY(lt_node_infer(ctx, m));
        LT_TRY(op1(ctx, g, "Cast", m->out[0], "to", LT_INT32, n, &part));
        if (sum) LT_TRY(op2(ctx, g, "Add", sum, part, n, &sum));
        else sum = part;
    }
    *out = sum;
    return LT_OK;
}

/* zp (NULL: absent) has v's dtype and one element, or (per_axis) is 1-D along v's axis `axis`. */
static bool zero_point_ok(const lt_value *zp, const lt_value *v, int64_t axis, bool per_axis) {
    int pr;
    int64_t pd[LT_MAX_RANK];
    if (!zp) return true;
    if (zp->type.dtype != v->type.dtype || !param_shape(zp, v, axis, &pr, pd)) return false;
    return per_axis || numel_of(zp) == 1;
}

/* ---- what the int8 kernels take (lower_int8.c accepts at least this) ---- */

/* MatMulInteger: 8-bit operands of rank >= 2 with static shapes, K >= 1, A's zero point one value
 * and B's one value or one per column, each of its operand's dtype. */
static bool int8_matmul_ok(const lt_node *n) {
    if (!well_formed(n, 2) || n->opset < 10) return false;
    const lt_value *A = n->in[0], *B = n->in[1];
    const lt_value *za = n->n_in > 2 ? n->in[2] : NULL, *zb = n->n_in > 3 ? n->in[3] : NULL;
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!is_8bit(A->type.dtype) || !is_8bit(B->type.dtype)) return false;
    if (!lt_value_static_shape(A, &ra, da) || !lt_value_static_shape(B, &rb, db) || ra < 2 || rb < 2) return false;
    return da[ra - 1] >= 1 && zero_point_ok(za, A, ra - 1, false) && zero_point_ok(zb, B, rb - 1, true);
}

/* ConvInteger: 2-D, 8-bit, a constant weight, x's zero point one value, w's one or one per output
 * channel. */
static bool int8_conv_ok(const lt_node *n) {
    if (!well_formed(n, 2) || n->opset < 10) return false;
    const lt_value *X = n->in[0], *W = n->in[1];
    const lt_value *zx = n->n_in > 2 ? n->in[2] : NULL, *zw = n->n_in > 3 ? n->in[3] : NULL;
    int rx, rw;
    int64_t dx[LT_MAX_RANK], dw[LT_MAX_RANK];
    if (!is_8bit(X->type.dtype) || !is_8bit(W->type.dtype) || !lt_value_is_const(W)) return false;
    if (!lt_value_static_shape(X, &rx, dx) || !lt_value_static_shape(W, &rw, dw) || rx != 4 || rw != 4) return false;
    return zero_point_ok(zx, X, 1, false) && zero_point_ok(zw, W, 0, true);
}

static lt_status rewrite_matmul_integer(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (!well_formed(n, 2) || n->opset < 11) return LT_OK;
    lt_value *A = n->in[0], *B = n->in[1];
    lt_value *za = n->n_in > 2 ? n->in[2] : NULL, *zb = n->n_in > 3 ? n->in[3] : NULL;
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!is_8bit(A->type.dtype) || !is_8bit(B->type.dtype)) return LT_OK;
    if (!lt_value_static_shape(A, &ra, da) || !lt_value_static_shape(B, &rb, db) || ra < 2 || rb < 2) return LT_OK;
    if (da[ra - 1] < 1 || !zero_point_ok(za, A, ra - 1, false) || !zero_point_ok(zb, B, rb - 1, true)) return LT_OK;
    lt_value *af, *bf, *y;
    LT_TRY(centered(ctx, g, n, A, za, ra - 1, &af));
    LT_TRY(centered(ctx, g, n, B, zb, rb - 1, &bf));
    LT_TRY(chunked(ctx, g, n, "MatMul", af, ra - 1, bf, rb - 2, da[ra - 1], 1, &y));
    return finish(ctx, g, n, 0, y, changed);
}

static lt_status rewrite_conv_integer(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    if (!well_formed(n, 2) || n->opset < 11) return LT_OK;
    lt_value *X = n->in[0], *W = n->in[1];
    lt_value *zx = n->n_in > 2 ? n->in[2] : NULL, *zw = n->n_in > 3 ? n->in[3] : NULL;
    int rx, rw;
    int64_t dx[LT_MAX_RANK], dw[LT_MAX_RANK];
    if (!is_8bit(X->type.dtype) || !is_8bit(W->type.dtype)) return LT_OK;
    if (!lt_value_static_shape(X, &rx, dx) || !lt_value_static_shape(W, &rw, dw) || rw != rx || rw < 3) return LT_OK;
    if (!zero_point_ok(zx, X, 1, false) || !zero_point_ok(zw, W, 0, true)) return LT_OK;
    /* the terms of one output's dot product: window per input channel, dw[1] channels */
    int64_t group = lt_attr_int(n, "group", 1), window = 1, terms;
    for (int i = 2; i < rw; i++)
        if (dw[i] < 1 || !lt_mul_i64(window, dw[i], &window)) return LT_OK;
    if (dw[1] < 1 || window > EXACT_TERMS || !lt_mul_i64(dw[1], window, &terms)) return LT_OK;
    if (group != 1 && terms > EXACT_TERMS) return LT_OK;
    lt_value *xf, *wf, *y;
    LT_TRY(centered(ctx, g, n, X, zx, 1, &xf));
    LT_TRY(centered(ctx, g, n, W, zw, 0, &wf));
    LT_TRY(chunked(ctx, g, n, "Conv", xf, 1, wf, 1, dw[1], window, &y));
    return finish(ctx, g, n, 0, y, changed);
}

/* ---- QDQ products -> integer products (targets with int8 kernels) ---- */

/* The parts of v = DequantizeLinear(q, scale, zp) for an 8-bit q and a float result: the scale and
 * zero point one value, or (per_axis) 1-D along q's axis `axis`. */
typedef struct dq_parts {
    lt_node *dq;
    lt_value *q, *scale, *zp;
    bool per_axis;
    int axis;
} dq_parts;

static bool dq_parts_of(const lt_graph *g, const lt_value *v, dq_parts *p) {
    lt_node *d = lt_pu_producer(g, v, LT_OP_DequantizeLinear);
    int pr, r;
    int64_t pd[LT_MAX_RANK], dq[LT_MAX_RANK];
    if (!d || d->out[0] != v || !qdq_params(d, &pr, pd) || v->type.dtype != LT_FLOAT) return false;
    lt_value *zp = d->n_in > 2 ? d->in[2] : NULL;
    if (!is_8bit(d->in[0]->type.dtype) || (zp && zp->type.dtype != d->in[0]->type.dtype)) return false;
    if (!lt_value_static_shape(d->in[0], &r, dq)) return false;
    int64_t axis = lt_attr_int(d, "axis", 1);
    p->dq = d, p->q = d->in[0], p->scale = d->in[1], p->zp = zp;
    p->per_axis = numel_of(d->in[1]) != 1;
    p->axis = (int)(axis < 0 ? axis + r : axis);
    return true;
}

typedef struct qdq_prod {
    dq_parts x, w; /* the data and the weight operand */
    bool trans_w;  /* Gemm's transB: the weight is [N, K] */
} qdq_prod;

/* Is n a MatMul / Gemm / 2-D Conv of two dequantized 8-bit operands that the int8 kernels compute
 * (see the file comment)? */
static bool qdq_product(const lt_graph *g, const lt_node *n, qdq_prod *q) {
    if (n->op != LT_OP_MatMul && n->op != LT_OP_Gemm && n->op != LT_OP_Conv) return false;
    if (n->n_in < 2 || !n->in[0] || !n->in[1] || n->in[0] == n->in[1] || n->n_out < 1 || !n->out[0]) return false;
    if (n->out[0]->type.dtype != LT_FLOAT || numel_of(n->out[0]) < 0) return false;
    if (!dq_parts_of(g, n->in[0], &q->x) || !dq_parts_of(g, n->in[1], &q->w) || q->x.per_axis) return false;
    int rx, rw;
    int64_t dx[LT_MAX_RANK], dw[LT_MAX_RANK];
    if (!lt_value_static_shape(q->x.q, &rx, dx) || !lt_value_static_shape(q->w.q, &rw, dw)) return false;
    q->trans_w = false;
    const lt_value *extra = n->n_in > 2 ? n->in[2] : NULL;
    switch (n->op) {
    case LT_OP_MatMul: /* [.., M, K] x [K, N]; the weight per column */
        return rx >= 2 && rw == 2 && dx[rx - 1] >= 1 && (!q->w.per_axis || q->w.axis == 1);
    case LT_OP_Gemm: /* [M, K] x [K, N] (or [N, K] transposed); the weight per output column */
        q->trans_w = lt_attr_int(n, "transB", 0) != 0;
        if (lt_attr_int(n, "transA", 0) != 0 || rx != 2 || rw != 2 || dx[1] < 1) return false;
        if (extra && extra->type.dtype != LT_FLOAT) return false;
        return !q->w.per_axis || q->w.axis == (q->trans_w ? 0 : 1);
    default: /* Conv: [N, C, H, W] x [M, C/group, KH, KW], a constant weight per output channel */
        if (rx != 4 || rw != 4 || !lt_value_is_const(q->w.q) || (q->w.per_axis && q->w.axis != 0)) return false;
        return !extra || (extra->type.dtype == LT_FLOAT && numel_of(extra) == dw[0]);
    }
}

/* Does a product the int8 kernels compute read v (a DequantizeLinear output) as an operand? */
static bool feeds_qdq_product(const lt_graph *g, const lt_node *dq) {
    const lt_value *v = dq->out[0];
    for (int i = 0; v && i < g->n_nodes; i++) {
        const lt_node *c = g->nodes[i];
        qdq_prod q;
        if (c->n_in >= 2 && (c->in[0] == v || c->in[1] == v) && qdq_product(g, c, &q) &&
            (q.x.dq == dq || q.w.dq == dq))
            return true;
    }
    return false;
}

static lt_status rewrite_qdq_product(lt_ctx *ctx, lt_graph *g, lt_node *n, const qdq_prod *q, bool *changed) {
    const char *h = hint_of(n);
    lt_value *qw = q->w.q, *zx = q->x.zp, *zw = q->w.zp;
    if (q->trans_w) {
        lt_value *t;
        LT_TRY(lt_pu_new_op(ctx, g, "Transpose", 1, &qw, NULL, 0, h, n, &t)); /* default perm: [1, 0] */
        qw = t;
    }
    lt_value *in[4] = {q->x.q, qw, zx, zw};
    lt_node *m;
    LT_TRY(lt_node_new(ctx, g, n->op == LT_OP_Conv ? "ConvInteger" : "MatMulInteger", "", zw ? 4 : zx ? 3 : 2, in, 1,
                       h, n, &m));
    if (n->op == LT_OP_Conv) LT_TRY(lt_node_copy_attrs(ctx, m, n));
    LT_TRY(lt_node_infer(ctx, m));
    lt_value *y, *s;
    LT_TRY(op1(ctx, g, "Cast", m->out[0], "to", LT_FLOAT, n, &y));
    LT_TRY(op2(ctx, g, "Mul", q->x.scale, q->w.scale, n, &s));
    int64_t M = numel_of(q->w.scale);
    if (n->op == LT_OP_Conv && M > 1) {
        int64_t d3[3] = {M, 1, 1};
        LT_TRY(lt_pu_reshape(ctx, g, s, 3, d3, h, n, &s));
    }
    if (n->op == LT_OP_Gemm && lt_attr_float(n, "alpha", 1.0f) != 1.0f) {
        lt_value *a;
        LT_TRY(scalar(ctx, g, LT_FLOAT, lt_attr_float(n, "alpha", 1.0f), h, &a));
        LT_TRY(op2(ctx, g, "Mul", s, a, n, &s));
    }
    LT_TRY(op2(ctx, g, "Mul", y, s, n, &y));
    lt_value *extra = n->n_in > 2 ? n->in[2] : NULL;
    if (extra && n->op == LT_OP_Gemm) { /* + beta * C */
        float beta = lt_attr_float(n, "beta", 1.0f);
        if (beta != 0.0f) {
            lt_value *c = extra;
            if (beta != 1.0f) {
                lt_value *b;
                LT_TRY(scalar(ctx, g, LT_FLOAT, beta, h, &b));
                LT_TRY(op2(ctx, g, "Mul", c, b, n, &c));
            }
            LT_TRY(op2(ctx, g, "Add", y, c, n, &y));
        }
    } else if (extra) { /* Conv's bias per output channel */
        int64_t d3[3] = {numel_of(extra), 1, 1};
        lt_value *b;
        LT_TRY(lt_pu_reshape(ctx, g, extra, 3, d3, h, n, &b));
        LT_TRY(op2(ctx, g, "Add", y, b, n, &y));
    }
    return finish(ctx, g, n, 0, y, changed);
}

static bool is_quant(const lt_node *n) {
    return n->op == LT_OP_QuantizeLinear || n->op == LT_OP_DequantizeLinear || n->op == LT_OP_DynamicQuantizeLinear ||
           n->op == LT_OP_MatMulInteger || n->op == LT_OP_ConvInteger;
}

typedef struct eq_state {
    bool int8;     /* the target has 8-bit integer kernels */
    bool *changed;
} eq_state;

static lt_status rewrite(lt_ctx *ctx, lt_graph *g, lt_node *n, const eq_state *st) {
    bool *changed = st->changed;
    if (n->op == LT_OP_MatMul || n->op == LT_OP_Gemm || n->op == LT_OP_Conv) {
        qdq_prod q;
        return st->int8 && qdq_product(g, n, &q) ? rewrite_qdq_product(ctx, g, n, &q, changed) : LT_OK;
    }
    if (lt_pu_remove_if_dead(g, n)) { /* a DequantizeLinear whose product became integer */
        *changed = true;
        return LT_OK;
    }
    switch (n->op) {
    case LT_OP_QuantizeLinear: return rewrite_quantize(ctx, g, n, changed);
    case LT_OP_DequantizeLinear:
        if (st->int8 && feeds_qdq_product(g, n)) return LT_OK; /* the product reads q, scale, zp */
        return rewrite_dequantize(ctx, g, n, changed);
    case LT_OP_DynamicQuantizeLinear: return rewrite_dynamic(ctx, g, n, changed);
    case LT_OP_MatMulInteger:
        if (st->int8 && int8_matmul_ok(n)) return LT_OK;
        return rewrite_matmul_integer(ctx, g, n, changed);
    default:
        if (st->int8 && int8_conv_ok(n)) return LT_OK;
        return rewrite_conv_integer(ctx, g, n, changed);
    }
}

/* Every graph: each quantization node (and, with int8 kernels, each MatMul / Gemm / Conv) in order,
 * from the start again after a rewrite (lt_pu_rewrite_each's walk, with the target's capability). */
static lt_status rewrite_graph(lt_ctx *ctx, lt_graph *g, void *user) {
    const eq_state *st = user;
    for (int i = 0; i < g->n_nodes;) {
        lt_node *n = g->nodes[i];
        bool product = st->int8 && (n->op == LT_OP_MatMul || n->op == LT_OP_Gemm || n->op == LT_OP_Conv);
        if (is_quant(n) || product) {
            int before = g->n_nodes;
            LT_TRY(rewrite(ctx, g, n, st));
            if (g->n_nodes != before) {
                i = 0;
                continue;
            }
        }
        i++;
    }
    return LT_OK;
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    eq_state st = {!(opt && opt->no_int8_gemm), changed};
    return lt_graph_foreach(ctx, m->graph, false, rewrite_graph, &st);
}

const lt_pass lt_pass_expand_quant = {.name = "expand_quant", .min_level = 1, .run = run,
    .summary = "QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear -> exact float ops; MatMulInteger, "
               "ConvInteger (and QDQ MatMul / Gemm / Conv) -> int8 kernels, or exact float ops without them"};
