/* lower_ew.c — `expr` hooks of the ELEMWISE and BROADCAST ops: the Loop IR expression of the output
 * at an index, from the inputs read with numpy broadcasting (lt_lower_input0).
 *
 * Semantics follow the reference eval hooks (src/ops/elementwise/) in the compute dtype (float16
 * and bfloat16 compute in float): Relu and the clamps keep NaN, integer Div/Mod by zero give 0
 * instead of trapping, Mod with fmod=0 takes the divisor's sign, Max/Min/Sum/Mean fold left.
 * Pow lowers small constant exponents to multiplications (x^2 = x*x, x^0.5 = sqrt x).
 * BatchNormalization (inference) reads its [C] parameters at the channel index (axis 1).
 */
#include "lower_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define K (lc->k)

static lt_lnode *fimm(lt_lctx *lc, const lt_lnode *like, double v) { return lt_lower_imm(lc, like->dtype, v); }
static lt_lnode *un(lt_lctx *lc, lt_lop op, lt_lnode *a) { return lt_l_unary(K, op, a); }
static lt_lnode *bin(lt_lctx *lc, lt_lop op, lt_lnode *a, lt_lnode *b) { return lt_l_binary(K, op, a, b); }
static lt_lnode *sel(lt_lctx *lc, lt_lnode *c, lt_lnode *a, lt_lnode *b) { return lt_l_select(K, c, a, b); }

static lt_status in0(lt_lctx *lc, const lt_node *n, int i, lt_lnode *const *idx, lt_lnode **x) {
    return lt_lower_input0(lc, n, i, idx, x);
}

/* the output's compute dtype */
static lt_dtype odt(const lt_node *n, int o) { return lt_lower_cdtype(n->out[o]->type.dtype); }

/* ---- unary ---- */

static lt_lop unary_lop(int op) {
    switch (op) {
    case LT_OP_Abs: return LT_LOP_ABS;
    case LT_OP_Acos: return LT_LOP_ACOS;
    case LT_OP_Acosh: return LT_LOP_ACOSH;
    case LT_OP_Asin: return LT_LOP_ASIN;
    case LT_OP_Asinh: return LT_LOP_ASINH;
    case LT_OP_Atan: return LT_LOP_ATAN;
    case LT_OP_Atanh: return LT_LOP_ATANH;
    case LT_OP_Ceil: return LT_LOP_CEIL;
    case LT_OP_Cos: return LT_LOP_COS;
    case LT_OP_Cosh: return LT_LOP_COSH;
    case LT_OP_Erf: return LT_LOP_ERF;
    case LT_OP_Exp: return LT_LOP_EXP;
    case LT_OP_Floor: return LT_LOP_FLOOR;
    case LT_OP_Log: return LT_LOP_LOG;
    case LT_OP_Neg: return LT_LOP_NEG;
    case LT_OP_Not: return LT_LOP_NOT;
    case LT_OP_Reciprocal: return LT_LOP_RECIP;
    case LT_OP_Round: return LT_LOP_ROUND;
    case LT_OP_Sigmoid: return LT_LOP_SIGMOID;
    case LT_OP_Sign: return LT_LOP_SIGN;
    case LT_OP_Sin: return LT_LOP_SIN;
    case LT_OP_Sinh: return LT_LOP_SINH;
    case LT_OP_Sqrt: return LT_LOP_SQRT;
    case LT_OP_Tan: return LT_LOP_TAN;
    case LT_OP_Tanh: return LT_LOP_TANH;
    case LT_OP_IsNaN: return LT_LOP_ISNAN;
    default: return LT_LOP_COUNT;
    }
}

static lt_status e_unary(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x;
    LT_TRY(in0(lc, n, 0, idx, &x));
    *r = un(lc, unary_lop(n->op), x);
    return LT_LNN(lc, *r);
}

static lt_status e_identity(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    if (o == 1) { /* Dropout's mask: all true in inference */
        *r = lt_lower_imm(lc, LT_BOOL, 1);
        return LT_LNN(lc, *r);
    }
    return in0(lc, n, 0, idx, r);
}

static lt_lnode *softplus(lt_lctx *lc, lt_lnode *x) {
    /* x > 0 ? x + log(1 + exp(-x)) : log(1 + exp(x)) == max(x, 0) + log(1 + exp(-|x|)) */
    lt_lnode *ax = un(lc, LT_LOP_ABS, x);
    return bin(lc, LT_LOP_ADD, bin(lc, LT_LOP_MAX, x, fimm(lc, x, 0)),
               un(lc, LT_LOP_LOG, bin(lc, LT_LOP_ADD, fimm(lc, x, 1), un(lc, LT_LOP_EXP, un(lc, LT_LOP_NEG, ax)))));
}

static lt_lnode *clamp01(lt_lctx *lc, lt_lnode *v) {
    /* NaN stays NaN: v < 0 ? 0 : (v > 1 ? 1 : v) */
    return sel(lc, bin(lc, LT_LOP_LT, v, fimm(lc, v, 0)), fimm(lc, v, 0),
               sel(lc, bin(lc, LT_LOP_GT, v, fimm(lc, v, 1)), fimm(lc, v, 1), v));
}

static lt_status e_activation(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x;
    LT_TRY(in0(lc, n, 0, idx, &x));
    double alpha = lt_attr_float(n, "alpha", 0.01f);
    lt_lnode *zero = fimm(lc, x, 0);
    switch (n->op) {
    case LT_OP_Relu: *r = sel(lc, bin(lc, LT_LOP_LT, x, zero), zero, x); break;
    case LT_OP_LeakyRelu: *r = sel(lc, bin(lc, LT_LOP_GT, x, zero), x, bin(lc, LT_LOP_MUL, fimm(lc, x, alpha), x)); break;
    case LT_OP_ThresholdedRelu:
        *r = sel(lc, bin(lc, LT_LOP_GT, x, fimm(lc, x, lt_attr_float(n, "alpha", 1.0f))), x, zero);
        break;
    case LT_OP_Elu: {
        double a = lt_attr_float(n, "alpha", 1.0f);
        lt_lnode *neg = bin(lc, LT_LOP_MUL, fimm(lc, x, a), bin(lc, LT_LOP_SUB, un(lc, LT_LOP_EXP, x), fimm(lc, x, 1)));
        *r = sel(lc, bin(lc, LT_LOP_GT, x, zero), x, neg);
        break;
    }
    case LT_OP_Selu: {
        double a = lt_attr_float(n, "alpha", 1.67326319217681884765625f);
        double gm = lt_attr_float(n, "gamma", 1.05070102214813232421875f);
        lt_lnode *neg = bin(lc, LT_LOP_SUB, bin(lc, LT_LOP_MUL, fimm(lc, x, a), un(lc, LT_LOP_EXP, x)), fimm(lc, x, a));
        *r = bin(lc, LT_LOP_MUL, fimm(lc, x, gm), sel(lc, bin(lc, LT_LOP_GT, x, zero), x, neg));
        break;
    }
    case LT_OP_Celu: {
        double a = lt_attr_float(n, "alpha", 1.0f);
        lt_lnode *neg = bin(lc, LT_LOP_MUL, fimm(lc, x, a),
                            bin(lc, LT_LOP_SUB, un(lc, LT_LOP_EXP, bin(lc, LT_LOP_DIV, x, fimm(lc, x, a))), fimm(lc, x, 1)));
        *r = bin(lc, LT_LOP_ADD, sel(lc, bin(lc, LT_LOP_GT, x, zero), x, zero),
                 sel(lc, bin(lc, LT_LOP_LT, neg, zero), neg, zero));
        break;
    }
    case LT_OP_HardSigmoid: {
        double a = lt_attr_float(n, "alpha", 0.2f), b = lt_attr_float(n, "beta", 0.5f);
        *r = clamp01(lc, bin(lc, LT_LOP_ADD, bin(lc, LT_LOP_MUL, fimm(lc, x, a), x), fimm(lc, x, b)));
        break;
    }
    case LT_OP_HardSwish:
        *r = bin(lc, LT_LOP_MUL, x, clamp01(lc, bin(lc, LT_LOP_ADD, bin(lc, LT_LOP_DIV, x, fimm(lc, x, 6)), fimm(lc, x, 0.5))));
        break;
    case LT_OP_Softplus: *r = softplus(lc, x); break;
    case LT_OP_Softsign:
        *r = bin(lc, LT_LOP_DIV, x, bin(lc, LT_LOP_ADD, fimm(lc, x, 1), un(lc, LT_LOP_ABS, x)));
        break;
    case LT_OP_Mish: *r = bin(lc, LT_LOP_MUL, x, un(lc, LT_LOP_TANH, softplus(lc, x))); break;
    case LT_OP_Swish:
        *r = bin(lc, LT_LOP_MUL, x, un(lc, LT_LOP_SIGMOID, bin(lc, LT_LOP_MUL, fimm(lc, x, lt_attr_float(n, "alpha", 1.0f)), x)));
        break;
    case LT_OP_Gelu: {
        const char *ap = lt_attr_string(n, "approximate", "none");
        lt_lnode *half_x = bin(lc, LT_LOP_MUL, fimm(lc, x, 0.5), x), *t;
        if (strcmp(ap, "tanh") == 0) {
            lt_lnode *x3 = bin(lc, LT_LOP_MUL, bin(lc, LT_LOP_MUL, x, x), x);
            t = un(lc, LT_LOP_TANH, bin(lc, LT_LOP_MUL, fimm(lc, x, 0.7978845608028654),
                                        bin(lc, LT_LOP_ADD, x, bin(lc, LT_LOP_MUL, fimm(lc, x, 0.044715), x3))));
        } else {
            t = un(lc, LT_LOP_ERF, bin(lc, LT_LOP_MUL, x, fimm(lc, x, 0.7071067811865476)));
        }
        *r = bin(lc, LT_LOP_MUL, half_x, bin(lc, LT_LOP_ADD, fimm(lc, x, 1), t));
        break;
    }
    case LT_OP_Shrink: {
        double bias = lt_attr_float(n, "bias", 0.0f), l = lt_attr_float(n, "lambd", 0.5f);
        *r = sel(lc, bin(lc, LT_LOP_LT, x, fimm(lc, x, -l)), bin(lc, LT_LOP_ADD, x, fimm(lc, x, bias)),
                 sel(lc, bin(lc, LT_LOP_GT, x, fimm(lc, x, l)), bin(lc, LT_LOP_SUB, x, fimm(lc, x, bias)), zero));
        break;
    }
    case LT_OP_IsInf: {
        int64_t dn = lt_attr_int(n, "detect_negative", 1), dp = lt_attr_int(n, "detect_positive", 1);
        lt_lnode *inf = un(lc, LT_LOP_ISINF, x);
        if (dn && dp) *r = inf;
        else if (dn) *r = bin(lc, LT_LOP_AND, inf, bin(lc, LT_LOP_LT, x, zero));
        else if (dp) *r = bin(lc, LT_LOP_AND, inf, bin(lc, LT_LOP_GT, x, zero));
        else *r = lt_lower_imm(lc, LT_BOOL, 0);
        break;
    }
    case LT_OP_BitwiseNot: *r = bin(lc, LT_LOP_BITXOR, x, lt_l_int(K, -1)); break; /* all ones */
    default: return lt_lower_error(lc, n, LT_ERR_INTERNAL, "no activation expression");
    }
    return LT_LNN(lc, *r);
}

/* ---- binary, variadic, ternary ---- */

static lt_lop binary_lop(const lt_node *n) {
    switch (n->op) {
    case LT_OP_Add: case LT_OP_Sum: case LT_OP_Mean: return LT_LOP_ADD;
    case LT_OP_Sub: return LT_LOP_SUB;
    case LT_OP_Mul: return LT_LOP_MUL;
    case LT_OP_Div: return LT_LOP_DIV;
    case LT_OP_Max: return LT_LOP_MAX;
    case LT_OP_Min: return LT_LOP_MIN;
    case LT_OP_And: return LT_LOP_AND;
    case LT_OP_Or: return LT_LOP_OR;
    case LT_OP_Xor: return LT_LOP_XOR;
    case LT_OP_BitwiseAnd: return LT_LOP_BITAND;
    case LT_OP_BitwiseOr: return LT_LOP_BITOR;
    case LT_OP_BitwiseXor: return LT_LOP_BITXOR;
    case LT_OP_Equal: return LT_LOP_EQ;
    case LT_OP_Greater: return LT_LOP_GT;
    case LT_OP_GreaterOrEqual: return LT_LOP_GE;
    case LT_OP_Less: return LT_LOP_LT;
    case LT_OP_LessOrEqual: return LT_LOP_LE;
    case LT_OP_BitShift: return strcmp(lt_attr_string(n, "direction", ""), "LEFT") == 0 ? LT_LOP_SHL : LT_LOP_SHR;
    default: return LT_LOP_COUNT;
    }
}

/* a / b for integers with b == 0 giving 0 (no trap) */
static lt_lnode *safe_idiv(lt_lctx *lc, lt_lop op, lt_lnode *a, lt_lnode *b) {
    lt_lnode *bz = bin(lc, LT_LOP_EQ, b, fimm(lc, b, 0));
    return sel(lc, bz, fimm(lc, a, 0), bin(lc, op, a, sel(lc, bz, fimm(lc, b, 1), b)));
}

static lt_lnode *max_nan(lt_lctx *lc, lt_lop op, lt_lnode *a, lt_lnode *b) {
    /* Max/Min propagate NaN (the reference's rule): a != a ? a : op(a, b) with b's NaN by op order */
    if (!lt_dtype_is_float(a->dtype)) return bin(lc, op, a, b);
    lt_lnode *m = bin(lc, op, a, b);
    return sel(lc, un(lc, LT_LOP_ISNAN, a), a, sel(lc, un(lc, LT_LOP_ISNAN, b), b, m));
}

static lt_status e_binary(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lop op = binary_lop(n);
    lt_lnode *acc = NULL;
    int cnt = 0;
    for (int i = 0; i < n->n_in; i++) {
        if (!n->in[i]) continue;
        lt_lnode *x;
        LT_TRY(in0(lc, n, i, idx, &x));
        if (!acc) acc = x;
        else if ((op == LT_LOP_DIV) && !lt_dtype_is_float(acc->dtype)) acc = safe_idiv(lc, op, acc, x);
        else if (op == LT_LOP_MAX || op == LT_LOP_MIN) acc = max_nan(lc, op, acc, x);
        else if (op == LT_LOP_SHL || op == LT_LOP_SHR) {
            /* shifts by the width or more give 0 */
            int bits = 8 * lt_dtype_size(acc->dtype);
            acc = sel(lc, bin(lc, LT_LOP_GE, x, fimm(lc, x, bits)), fimm(lc, acc, 0), bin(lc, op, acc, x));
        } else acc = bin(lc, op, acc, x);
        cnt++;
        if (!acc) return lt_lower_nomem(lc);
    }
    if (n->op == LT_OP_Mean && cnt > 1) acc = bin(lc, LT_LOP_DIV, acc, fimm(lc, acc, cnt));
    *r = acc;
    return LT_LNN(lc, *r);
}

static lt_status e_mod(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *a, *b;
    LT_TRY(in0(lc, n, 0, idx, &a));
    LT_TRY(in0(lc, n, 1, idx, &b));
    if (lt_dtype_is_float(a->dtype)) {
        *r = bin(lc, LT_LOP_FMOD, a, b);
        return LT_LNN(lc, *r);
    }
    lt_lnode *m = safe_idiv(lc, LT_LOP_MOD, a, b); /* C remainder: sign of the dividend */
    if (lt_attr_int(n, "fmod", 0) == 0 && lt_dtype_get(a->dtype)->cls == LT_DC_SINT) {
        /* Python: the divisor's sign: r != 0 && (r < 0) != (b < 0) ? r + b : r */
        lt_lnode *zero = fimm(lc, a, 0);
        lt_lnode *fix = bin(lc, LT_LOP_AND, bin(lc, LT_LOP_NE, m, zero),
                            bin(lc, LT_LOP_NE, bin(lc, LT_LOP_LT, m, zero), bin(lc, LT_LOP_LT, b, zero)));
        m = sel(lc, fix, bin(lc, LT_LOP_ADD, m, b), m);
    }
    *r = m;
    return LT_LNN(lc, *r);
}

static lt_status e_pow(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x, *y;
    LT_TRY(in0(lc, n, 0, idx, &x));
    const lt_tensor *ct = lt_lower_is_imm(n->in[1]) ? lt_lower_const(n->in[1]) : NULL;
    if (ct) {
        double e = ct->dtype == LT_FLOAT ? ((const float *)ct->data)[0]
                 : ct->dtype == LT_DOUBLE ? ((const double *)ct->data)[0] : NAN;
        if (ct->dtype == LT_INT64) e = (double)((const int64_t *)ct->data)[0];
        if (ct->dtype == LT_INT32) e = ((const int32_t *)ct->data)[0];
        if (e == 1) { *r = x; return LT_OK; }
        if (e == 2) { *r = bin(lc, LT_LOP_MUL, x, x); return LT_LNN(lc, *r); }
        if (e == 3) { *r = bin(lc, LT_LOP_MUL, bin(lc, LT_LOP_MUL, x, x), x); return LT_LNN(lc, *r); }
        if (e == 0.5) { *r = un(lc, LT_LOP_SQRT, x); return LT_LNN(lc, *r); }
        if (e == -1) { *r = bin(lc, LT_LOP_DIV, fimm(lc, x, 1), x); return LT_LNN(lc, *r); }
    }
    LT_TRY(in0(lc, n, 1, idx, &y));
    if (y->dtype != x->dtype) y = lt_l_cast(K, x->dtype, y);
    *r = bin(lc, LT_LOP_POW, x, y);
    return LT_LNN(lc, *r);
}

static lt_status e_prelu(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x, *s;
    LT_TRY(in0(lc, n, 0, idx, &x));
    LT_TRY(in0(lc, n, 1, idx, &s));
    *r = sel(lc, bin(lc, LT_LOP_LT, x, fimm(lc, x, 0)), bin(lc, LT_LOP_MUL, s, x), x);
    return LT_LNN(lc, *r);
}

static lt_status e_where(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *c, *a, *b;
    LT_TRY(in0(lc, n, 0, idx, &c));
    LT_TRY(in0(lc, n, 1, idx, &a));
    LT_TRY(in0(lc, n, 2, idx, &b));
    if (c->dtype != LT_BOOL) c = bin(lc, LT_LOP_NE, c, fimm(lc, c, 0));
    *r = sel(lc, c, a, b);
    return LT_LNN(lc, *r);
}

static lt_status e_clip(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x, *lo = NULL, *hi = NULL;
    LT_TRY(in0(lc, n, 0, idx, &x));
    if (n->opset < 11) {
        const lt_attr *amin = lt_node_attr(n, "min"), *amax = lt_node_attr(n, "max");
        if (amin) lo = fimm(lc, x, lt_attr_float(n, "min", 0));
        if (amax) hi = fimm(lc, x, lt_attr_float(n, "max", 0));
    } else {
        if (n->n_in > 1 && n->in[1]) LT_TRY(in0(lc, n, 1, idx, &lo));
        if (n->n_in > 2 && n->in[2]) LT_TRY(in0(lc, n, 2, idx, &hi));
    }
    /* x < lo ? lo : x, then > hi ? hi : x (NaN stays NaN; min wins over max when lo > hi as in the
     * reference, which applies min last) */
    if (lo) x = sel(lc, bin(lc, LT_LOP_LT, x, lo), lo, x);
    if (hi) x = sel(lc, bin(lc, LT_LOP_GT, x, hi), hi, x);
    *r = x;
    return LT_LNN(lc, *r);
}

static lt_status e_cast(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x;
    LT_TRY(in0(lc, n, 0, idx, &x));
    lt_dtype to = odt(n, 0), stored = n->out[0]->type.dtype;
    if (stored != to && lt_dtype_is_float(stored) && x->dtype == to) {
        /* to float16 / bfloat16, computed in float: round through the narrow type, so that a value
         * cast down and back up keeps the rounding the model asked for */
        *r = lt_l_cast(K, to, lt_l_cast(K, stored, x));
    } else if (x->dtype == to) *r = x;
    else if (to == LT_BOOL) *r = bin(lc, LT_LOP_NE, x, fimm(lc, x, 0));
    else if (lt_dtype_is_float(x->dtype) && !lt_dtype_is_float(to)) {
        /* NaN -> 0 as the reference does (C leaves it undefined) */
        *r = lt_l_cast(K, to, sel(lc, un(lc, LT_LOP_ISNAN, x), fimm(lc, x, 0), x));
    } else *r = lt_l_cast(K, to, x);
    return LT_LNN(lc, *r);
}

static bool accept_cast(const lt_node *n, char *why, size_t size) {
    if (!lt_lower_accept_default(n, why, size)) return false;
    if (n->op == LT_OP_Cast && n->out[0]->type.dtype != n->in[0]->type.dtype &&
        lt_dtype_is_float(n->in[0]->type.dtype) && lt_dtype_get(n->out[0]->type.dtype)->cls == LT_DC_UINT) {
        snprintf(why, size, "float to unsigned Cast wraps in the reference");
        return false;
    }
    return true;
}

/* BatchNormalization, inference: (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + B[c], c = idx[1]. */
static lt_status e_batchnorm(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    lt_lnode *x, *p[4];
    LT_TRY(lt_lower_value(lc, n->in[0], idx, &x));
    lt_lnode *ci[1] = {idx[1]};
    for (int i = 0; i < 4; i++) LT_TRY(lt_lower_value(lc, n->in[i + 1], ci, &p[i]));
    double eps = lt_attr_float(n, "epsilon", 1e-5f);
    lt_lnode *den = un(lc, LT_LOP_SQRT, bin(lc, LT_LOP_ADD, p[3], fimm(lc, p[3], eps)));
    lt_lnode *y = bin(lc, LT_LOP_DIV, bin(lc, LT_LOP_SUB, x, p[2]), den);
    *r = bin(lc, LT_LOP_ADD, bin(lc, LT_LOP_MUL, y, p[0]), p[1]);
    return LT_LNN(lc, *r);
}

static bool accept_batchnorm(const lt_node *n, char *why, size_t size) {
    if (!lt_lower_accept_float(n, why, size)) return false;
    int r;
    int64_t d[LT_MAX_RANK];
    if (lt_attr_int(n, "training_mode", 0) != 0 || (n->n_out > 1 && (n->out[1] || (n->n_out > 2 && n->out[2])))) {
        snprintf(why, size, "training mode");
        return false;
    }
    if (n->n_in < 5 || !lt_lower_shape(n->in[0], &r, d) || r < 2) {
        snprintf(why, size, "needs 5 inputs and rank >= 2");
        return false;
    }
    for (int i = 1; i < 5; i++) {
        int ri;
        int64_t di[LT_MAX_RANK];
        if (!n->in[i] || !lt_lower_shape(n->in[i], &ri, di) || ri != 1 || di[0] != d[1]) {
            snprintf(why, size, "parameter %d is not of shape [C]", i);
            return false;
        }
    }
    return true;
}

static bool accept_dropout(const lt_node *n, char *why, size_t size) {
    int64_t t[1];
    if (n->n_in > 2 && n->in[2] && (lt_lower_const_ints(n, 2, t, 1) != 1 || t[0] != 0)) {
        snprintf(why, size, "training_mode is not a constant false");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

static bool accept_pow(const lt_node *n, char *why, size_t size) {
    if (!lt_dtype_is_float(n->in[0]->type.dtype)) {
        snprintf(why, size, "integer Pow");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* IsNaN, IsInf: a float input, a bool output */
static bool accept_isclass(const lt_node *n, char *why, size_t size) {
    if (!lt_dtype_is_float(n->in[0]->type.dtype) || n->out[0]->type.dtype != LT_BOOL) {
        snprintf(why, size, "input %s, output %s (float in, bool out only)", lt_dtype_name(n->in[0]->type.dtype),
                 lt_dtype_name(n->out[0]->type.dtype));
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

#define UN(op) {LT_OP_##op, lt_lower_accept_float, e_unary, NULL, 0, 0, 0}
#define ACT(op) {LT_OP_##op, lt_lower_accept_float, e_activation, NULL, 0, 0, 0}
#define BIN(op) {LT_OP_##op, NULL, e_binary, NULL, 0, 0, 0}

const lt_lower_reg lt_lower_elementwise[] = {
    UN(Acos), UN(Acosh), UN(Asin), UN(Asinh), UN(Atan), UN(Atanh), UN(Ceil), UN(Cos), UN(Cosh),
    UN(Erf), UN(Exp), UN(Floor), UN(Log), UN(Reciprocal), UN(Round), UN(Sigmoid), UN(Sin), UN(Sinh),
    UN(Sqrt), UN(Tan), UN(Tanh),
    {LT_OP_IsNaN, accept_isclass, e_unary, NULL, 0, 0, 0},
    {LT_OP_Abs, NULL, e_unary, NULL, 0, 0, 0},
    {LT_OP_Neg, NULL, e_unary, NULL, 0, 0, 0},
    {LT_OP_Sign, NULL, e_unary, NULL, 0, 0, 0},
    {LT_OP_Not, NULL, e_unary, NULL, 0, 0, 0},
    {LT_OP_Relu, NULL, e_activation, NULL, 0, 0, 0},
    {LT_OP_BitwiseNot, NULL, e_activation, NULL, 0, 0, 0},
    ACT(LeakyRelu), ACT(ThresholdedRelu), ACT(Elu), ACT(Selu), ACT(Celu), ACT(HardSigmoid),
    ACT(HardSwish), ACT(Softplus), ACT(Softsign), ACT(Mish), ACT(Swish), ACT(Gelu), ACT(Shrink),
    {LT_OP_IsInf, accept_isclass, e_activation, NULL, 0, 0, 0},
    BIN(Add), BIN(Sub), BIN(Mul), BIN(Div), BIN(Max), BIN(Min), BIN(Sum), BIN(Mean), BIN(And), BIN(Or),
    BIN(Xor), BIN(BitwiseAnd), BIN(BitwiseOr), BIN(BitwiseXor), BIN(Equal), BIN(Greater),
    BIN(GreaterOrEqual), BIN(Less), BIN(LessOrEqual), BIN(BitShift),
    {LT_OP_Mod, NULL, e_mod, NULL, 0, 0, 0},
    {LT_OP_Pow, accept_pow, e_pow, NULL, 0, 0, 0},
    {LT_OP_PRelu, lt_lower_accept_float, e_prelu, NULL, 0, 0, 0},
    {LT_OP_Where, NULL, e_where, NULL, 0, 0, 0},
    {LT_OP_Clip, NULL, e_clip, NULL, 0, 0, 0},
    {LT_OP_Cast, accept_cast, e_cast, NULL, 0, 0, 0},
    {LT_OP_CastLike, accept_cast, e_cast, NULL, 0, 1u << 1, 0},
    {LT_OP_Identity, NULL, e_identity, NULL, 0, 0, 0},
    {LT_OP_Dropout, accept_dropout, e_identity, NULL, 0, 1u << 1 | 1u << 2, 0},
    {LT_OP_BatchNormalization, accept_batchnorm, e_batchnorm, NULL, 0, 0, LT_LF_NO_VIEW},
    {0},
};
