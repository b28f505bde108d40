/* lower_ew.c — `expr` hooks of the ELEMWISE and BROADCAST ops: the Loop IR expression of the output
 * at an index, from the inputs read with numpy broadcasting (lt_lower_input0).
 *
 * Semantics follow the reference eval hooks (src/ops/elementwise*.c) in the compute dtype (float16
 * and bfloat16 compute in float): Relu and the clamps keep NaN, integer Div/Mod by zero give 0
 * instead of trapping, Mod with fmod=0 takes the divisor's sign, Max/Min/Sum/Mean fold left.
 * Pow lowers small constant exponents to multiplications (x^2 = x*x, x^0.5 = sqrt x).
 * BatchNormalization (inference) reads its [C] parameters at the channel index (axis 1).
 */
#include "lower_impl.h"

#include <math.h>
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
