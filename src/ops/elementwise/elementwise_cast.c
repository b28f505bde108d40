/* elementwise_cast.c — Cast, CastLike and BitCast.
 *
 * Numeric conversions go through dtype.c (lt_convert_elem_rm): the rounding, saturation and
 * NaN/Inf rules of onnx's reference (numpy + ml_dtypes). Strings follow numpy's astype:
 *   number -> string: the shortest digits that read back to the same value, written positionally
 *     when 1e-4 <= |x| < 1e16 ("0.1", "123456790.0") and in scientific form otherwise ("1e-05",
 *     "1.5e+20"); "nan", "inf", "-inf"; integers in decimal; bools "True"/"False".
 *   string -> number: decimal or scientific text, "inf"/"nan" in any case, surrounding blanks
 *     allowed; anything else is an error naming the element. string -> bool: non-empty is true.
 * BitCast reinterprets the bits of each element between types of the same bit width.
 */
#include "elementwise_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the `to` attribute (INT, or the opset-1 STRING spelling) ---- */
static lt_dtype cast_to_attr(const lt_node *n) {
    const lt_attr *a = lt_node_attr(n, "to");
    if (!a) return LT_UNDEFINED;
    if (a->type == LT_AT_INT) return lt_dtype_valid((int)a->i) && a->i == (int)a->i ? (lt_dtype)a->i : LT_UNDEFINED;
    if (a->type == LT_AT_STRING && a->s) return lt_ew_dtype_from_any_name(a->s);
    return LT_UNDEFINED;
}

static int round_mode_of(const lt_node *n, bool *ok) {
    const char *m = lt_attr_string(n, "round_mode", "up");
    *ok = true;
    if (strcmp(m, "up") == 0) return LT_ROUND_UP;
    if (strcmp(m, "down") == 0) return LT_ROUND_DOWN;
    if (strcmp(m, "nearest") == 0) return LT_ROUND_NEAREST;
    *ok = false;
    return LT_ROUND_UP;
}

lt_status lt_ew_infer_cast(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    lt_dtype to = cast_to_attr(n);
    if (to == LT_UNDEFINED) return lt_infer_error(ic, n, "missing or invalid 'to' attribute");
    return lt_ew_infer_unary_dt(ic, n, to);
}

lt_status lt_ew_infer_castlike(lt_infer *ic, lt_node *n) {
    LT_TRY(lt_ew_check_infer(ic, n));
    const lt_type *t = lt_infer_in(n, 1);
    return lt_ew_infer_unary_dt(ic, n, t && t->kind == LT_TK_TENSOR ? t->dtype : LT_UNDEFINED);
}

lt_status lt_ew_infer_bitcast(lt_infer *ic, lt_node *n) { return lt_ew_infer_cast(ic, n); }

/* ---- number -> string ---- */
/* Does the decimal text `s` read back (in dtype dt) to the element v came from? */
static bool reads_back(const char *s, lt_dtype dt, double v) {
    double p = strtod(s, NULL);
    if (dt == LT_DOUBLE) return p == v;
    if (dt == LT_FLOAT) return strtof(s, NULL) == (float)v;
    unsigned char a[8] = {0}, b[8] = {0};
    lt_store_f64(a, dt, 0, p);
    lt_store_f64(b, dt, 0, v);
    return memcmp(a, b, (size_t)lt_dtype_size(dt)) == 0;
}

/* Shortest round-tripping repr of a finite float element, numpy style. */
static void format_float(char *out, size_t cap, double v, lt_dtype dt) {
    if (isnan(v)) { snprintf(out, cap, "nan"); return; }
    if (isinf(v)) { snprintf(out, cap, v < 0 ? "-inf" : "inf"); return; }
    if (v == 0) { snprintf(out, cap, signbit(v) ? "-0.0" : "0.0"); return; }
    char tmp[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (reads_back(tmp, dt, v)) break;
    }
    /* tmp = [-]D[.DDD]e[+-]XX : collect the digits and the exponent. */
    const char *q = tmp;
    bool neg = *q == '-';
    if (neg) q++;
    char dig[32];
    int nd = 0;
    for (; *q && *q != 'e'; q++)
        if (isdigit((unsigned char)*q) && nd < 31) dig[nd++] = *q;
    int exp10 = *q == 'e' ? atoi(q + 1) : 0;
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    dig[nd] = 0;
    double a = fabs(v);
    char *o = out, *end = out + cap - 1;
#define PUT(c) do { if (o < end) *o++ = (c); } while (0)
    if (neg) PUT('-');
    if (a >= 1e-4 && a < 1e16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++) PUT(i < nd ? dig[i] : '0');
            PUT('.');
            if (nd > exp10 + 1) for (int i = exp10 + 1; i < nd; i++) PUT(dig[i]);
            else PUT('0');
        } else {
            PUT('0');
            PUT('.');
            for (int i = 0; i < -exp10 - 1; i++) PUT('0');
            for (int i = 0; i < nd; i++) PUT(dig[i]);
        }
    } else {
        PUT(dig[0]);
        if (nd > 1) {
            PUT('.');
            for (int i = 1; i < nd; i++) PUT(dig[i]);
        }
        char e[16];
        snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        for (char *c = e; *c; c++) PUT(*c);
    }
#undef PUT
    *o = 0;
}

static lt_status to_string(lt_eval *ev, const lt_node *n, const lt_tensor *x, lt_tensor *y) {
    lt_ew_kind k = lt_ew_kind_of(x->dtype);
    char buf[80];
    for (int64_t i = 0; i < x->numel; i++) {
        const char *s = buf;
        if (k == LT_EW_STR) s = ((char *const *)x->data)[i];
        else if (k == LT_EW_B) s = ((const uint8_t *)x->data)[i] ? "True" : "False";
        else if (k == LT_EW_S) snprintf(buf, sizeof buf, "%lld", (long long)lt_load_i64(x->data, x->dtype, i));
        else if (k == LT_EW_U) snprintf(buf, sizeof buf, "%llu", (unsigned long long)lt_load_u64(x->data, x->dtype, i));
        else if (k == LT_EW_F) format_float(buf, sizeof buf, lt_load_f64(x->data, x->dtype, i), x->dtype);
        else return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "cannot cast %s to string", lt_dtype_name(x->dtype));
        LT_TRY(lt_tensor_set_string(ev->ctx, y, i, s, strlen(s)));
    }
    return LT_OK;
}

/* ---- string -> number ---- */
/* Whole-string parse (blanks around allowed). */
static bool parse_f64(const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s) return false;
    while (isspace((unsigned char)*end)) end++;
    return *end == 0;
}
static bool parse_f32(const char *s, float *v) {
    char *end;
    *v = strtof(s, &end);
    if (end == s) return false;
    while (isspace((unsigned char)*end)) end++;
    return *end == 0;
}

static lt_status from_string(lt_eval *ev, const lt_node *n, const lt_tensor *x, lt_tensor *y, bool saturate, int rm) {
    lt_ew_kind k = lt_ew_kind_of(y->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        const char *s = ((char *const *)x->data)[i];
        if (k == LT_EW_B) {
            ((uint8_t *)y->data)[i] = s[0] != 0;
            continue;
        }
        if (k == LT_EW_S || k == LT_EW_U) {
            char *end;
            errno = 0;
            const char *t = s;
            while (isspace((unsigned char)*t)) t++;
            bool ok = false;
            if (k == LT_EW_S) {
                long long v = strtoll(t, &end, 10);
                if (end != t && errno == 0) {
                    while (isspace((unsigned char)*end)) end++;
                    if (*end == 0) { lt_store_i64(y->data, y->dtype, i, v); ok = true; }
                }
            } else if (*t != '-') {
                unsigned long long v = strtoull(t, &end, 10);
                if (end != t && errno == 0) {
                    while (isspace((unsigned char)*end)) end++;
                    if (*end == 0) { lt_store_u64(y->data, y->dtype, i, v); ok = true; }
                }
            }
            double d;
            if (!ok && parse_f64(s, &d) && !isnan(d)) { lt_store_f64(y->data, y->dtype, i, d); ok = true; }
            if (!ok)
                return lt_op_error(ev, n, LT_ERR_INVALID, "element %lld: cannot parse '%.64s' as %s", (long long)i, s,
                                   lt_dtype_name(y->dtype));
            continue;
        }
        if (k != LT_EW_F)
            return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "cannot cast string to %s", lt_dtype_name(y->dtype));
        float f = 0;
        double d = 0;
        bool ok = y->dtype == LT_FLOAT ? parse_f32(s, &f) : parse_f64(s, &d);
        if (!ok)
            return lt_op_error(ev, n, LT_ERR_INVALID, "element %lld: cannot parse '%.64s' as %s", (long long)i, s,
                               lt_dtype_name(y->dtype));
        if (y->dtype == LT_FLOAT) {
            ((float *)y->data)[i] = f;
        } else {
            double one[1] = {d};
            lt_convert_elem_rm(one, LT_DOUBLE, 0, y->data, y->dtype, i, saturate, rm);
        }
    }
    return LT_OK;
}

/* ---- Cast / CastLike ---- */
/* Tight loops for the most common pairs whose C conversion is exactly Cast's (exact, or rounding
 * once to nearest even). Float -> integer is not among them: it needs dtype.c's saturating rule. */
static bool cast_fast(const lt_tensor *x, lt_tensor *y) {
    int64_t n = x->numel;
#define EW_CAST_LOOP(ST, DT)                                                                       \
    do {                                                                                           \
        const ST *s_ = x->data;                                                                    \
        DT *d_ = y->data;                                                                          \
        for (int64_t i = 0; i < n; i++) d_[i] = (DT)s_[i];                                         \
        return true;                                                                               \
    } while (0)
    switch (x->dtype * 64 + y->dtype) {
    case LT_FLOAT * 64 + LT_DOUBLE: EW_CAST_LOOP(float, double);
    case LT_DOUBLE * 64 + LT_FLOAT: EW_CAST_LOOP(double, float);
    case LT_INT64 * 64 + LT_FLOAT: EW_CAST_LOOP(int64_t, float);
    case LT_INT64 * 64 + LT_DOUBLE: EW_CAST_LOOP(int64_t, double);
    case LT_INT32 * 64 + LT_FLOAT: EW_CAST_LOOP(int32_t, float);
    case LT_INT32 * 64 + LT_DOUBLE: EW_CAST_LOOP(int32_t, double);
    case LT_INT32 * 64 + LT_INT64: EW_CAST_LOOP(int32_t, int64_t);
    case LT_UINT8 * 64 + LT_FLOAT: EW_CAST_LOOP(uint8_t, float);
    case LT_INT8 * 64 + LT_FLOAT: EW_CAST_LOOP(int8_t, float);
    case LT_BOOL * 64 + LT_FLOAT: EW_CAST_LOOP(uint8_t, float);
    case LT_BOOL * 64 + LT_INT64: EW_CAST_LOOP(uint8_t, int64_t);
    case LT_BOOL * 64 + LT_INT32: EW_CAST_LOOP(uint8_t, int32_t);
    case LT_INT64 * 64 + LT_INT32: { /* wraps, as lt_store_i64 does */
        const int64_t *s_ = x->data;
        int32_t *d_ = y->data;
        for (int64_t i = 0; i < n; i++) d_[i] = (int32_t)(uint32_t)(uint64_t)s_[i];
        return true;
    }
    case LT_FLOAT * 64 + LT_FLOAT16: {
        const float *s_ = x->data;
        uint16_t *d_ = y->data;
        for (int64_t i = 0; i < n; i++) d_[i] = lt_f32_to_f16(s_[i]);
        return true;
    }
    case LT_FLOAT16 * 64 + LT_FLOAT: {
        const uint16_t *s_ = x->data;
        float *d_ = y->data;
        for (int64_t i = 0; i < n; i++) d_[i] = lt_f16_to_f32(s_[i]);
        return true;
    }
    case LT_FLOAT * 64 + LT_BOOL: {
        const float *s_ = x->data;
        uint8_t *d_ = y->data;
        for (int64_t i = 0; i < n; i++) d_[i] = s_[i] != 0;
        return true;
    }
    default: return false;
    }
#undef EW_CAST_LOOP
}

static lt_status cast_to(lt_eval *ev, const lt_node *n, const lt_tensor *x, lt_dtype to, lt_datum **out) {
    bool saturate = lt_attr_int(n, "saturate", 1) != 0, ok;
    int rm = round_mode_of(n, &ok);
    if (!ok) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown round_mode '%s'", lt_attr_string(n, "round_mode", ""));
    lt_ew_kind kx = lt_ew_kind_of(x->dtype), ky = lt_ew_kind_of(to);
    if (kx == LT_EW_OTHER && x->dtype != LT_COMPLEX64 && x->dtype != LT_COMPLEX128)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "cannot cast from %s", lt_dtype_name(x->dtype));
    if (ky == LT_EW_OTHER && to != LT_COMPLEX64 && to != LT_COMPLEX128)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "cannot cast to %s", lt_dtype_name(to));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, to, x->rank, x->dims, &y));
    if (ky == LT_EW_STR) return to_string(ev, n, x, y);
    if (kx == LT_EW_STR) return from_string(ev, n, x, y, saturate, rm);
    if (x->dtype == to) {
        memcpy(y->data, x->data, (size_t)lt_tensor_nbytes(x));
        return LT_OK;
    }
    if (cast_fast(x, y)) return LT_OK;
    for (int64_t i = 0; i < x->numel; i++) lt_convert_elem_rm(x->data, x->dtype, i, y->data, to, i, saturate, rm);
    return LT_OK;
}

lt_status lt_ew_eval_cast(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_dtype to = cast_to_attr(n);
    if (to == LT_UNDEFINED) return lt_op_error(ev, n, LT_ERR_INVALID, "missing or invalid 'to' attribute");
    return cast_to(ev, n, x, to, out);
}

lt_status lt_ew_eval_castlike(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    LT_TRY(lt_ew_check_eval(ev, n, in));
    const lt_tensor *x, *like;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &like));
    return cast_to(ev, n, x, like->dtype, out);
}

/* ---- BitCast ---- */
lt_status lt_ew_eval_bitcast(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    lt_dtype to = cast_to_attr(n);
    if (to == LT_UNDEFINED) return lt_op_error(ev, n, LT_ERR_INVALID, "missing or invalid 'to' attribute");
    if (to == LT_STRING || x->dtype == LT_STRING)
        return lt_op_error(ev, n, LT_ERR_INVALID, "BitCast from or to string is not allowed");
    int bits = lt_dtype_get(x->dtype)->wire_bits, tbits = lt_dtype_get(to)->wire_bits;
    if (bits != tbits)
        return lt_op_error(ev, n, LT_ERR_INVALID, "BitCast needs types of the same width: %s is %d bits, %s is %d",
                           lt_dtype_name(x->dtype), bits, lt_dtype_name(to), tbits);
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, to, x->rank, x->dims, &y));
    size_t es = (size_t)lt_dtype_size(to);
    if (bits >= 8 && to != LT_BOOL) {
        memcpy(y->data, x->data, (size_t)x->numel * es);
        return LT_OK;
    }
    /* Sub-byte types and bool: move the low `bits` bits, then lay them out as the target wants. */
    const uint8_t *xp = x->data;
    uint8_t *yp = y->data;
    uint8_t mask = (uint8_t)((1u << bits) - 1u);
    for (int64_t i = 0; i < x->numel; i++) {
        uint8_t b = xp[i] & mask;
        if (to == LT_BOOL) b = b != 0;
        else if (lt_dtype_get(to)->cls == LT_DC_SINT && (b >> (bits - 1)) & 1) b |= (uint8_t)~mask; /* sign-extend */
        yp[i] = b;
    }
    return LT_OK;
}
