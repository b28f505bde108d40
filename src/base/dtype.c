/* dtype.c — the dtype table and the element conversions declared in dtype.h.
 * Narrow float formats (float8, float4) are converted through a table of their decoded values:
 * decoding is a lookup, encoding finds the nearest representable value with ties to even. */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const lt_dtype_info g_info[LT_DTYPE_COUNT] = {
    [LT_UNDEFINED] = {"undefined", 0, 0, LT_DC_NONE, NULL},
    [LT_FLOAT] = {"float", 4, 32, LT_DC_FLOAT, "<f4"},
    [LT_UINT8] = {"uint8", 1, 8, LT_DC_UINT, "|u1"},
    [LT_INT8] = {"int8", 1, 8, LT_DC_SINT, "|i1"},
    [LT_UINT16] = {"uint16", 2, 16, LT_DC_UINT, "<u2"},
    [LT_INT16] = {"int16", 2, 16, LT_DC_SINT, "<i2"},
    [LT_INT32] = {"int32", 4, 32, LT_DC_SINT, "<i4"},
    [LT_INT64] = {"int64", 8, 64, LT_DC_SINT, "<i8"},
    [LT_STRING] = {"string", (int)sizeof(char *), 0, LT_DC_STRING, NULL},
    [LT_BOOL] = {"bool", 1, 8, LT_DC_BOOL, "|b1"},
    [LT_FLOAT16] = {"float16", 2, 16, LT_DC_FLOAT, "<f2"},
    [LT_DOUBLE] = {"double", 8, 64, LT_DC_FLOAT, "<f8"},
    [LT_UINT32] = {"uint32", 4, 32, LT_DC_UINT, "<u4"},
    [LT_UINT64] = {"uint64", 8, 64, LT_DC_UINT, "<u8"},
    [LT_COMPLEX64] = {"complex64", 8, 64, LT_DC_COMPLEX, "<c8"},
    [LT_COMPLEX128] = {"complex128", 16, 128, LT_DC_COMPLEX, "<c16"},
    [LT_BFLOAT16] = {"bfloat16", 2, 16, LT_DC_FLOAT, NULL},
    [LT_FLOAT8E4M3FN] = {"float8e4m3fn", 1, 8, LT_DC_FLOAT, NULL},
    [LT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1, 8, LT_DC_FLOAT, NULL},
    [LT_FLOAT8E5M2] = {"float8e5m2", 1, 8, LT_DC_FLOAT, NULL},
    [LT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1, 8, LT_DC_FLOAT, NULL},
    [LT_UINT4] = {"uint4", 1, 4, LT_DC_UINT, NULL},
    [LT_INT4] = {"int4", 1, 4, LT_DC_SINT, NULL},
    [LT_FLOAT4E2M1] = {"float4e2m1", 1, 4, LT_DC_FLOAT, NULL},
    [LT_FLOAT8E8M0] = {"float8e8m0", 1, 8, LT_DC_FLOAT, NULL},
    [LT_UINT2] = {"uint2", 1, 2, LT_DC_UINT, NULL},
    [LT_INT2] = {"int2", 1, 2, LT_DC_SINT, NULL},
};

bool lt_dtype_valid(int dt) { return dt > 0 && dt < LT_DTYPE_COUNT; }
const lt_dtype_info *lt_dtype_get(lt_dtype dt) {
    return lt_dtype_valid((int)dt) ? &g_info[dt] : &g_info[LT_UNDEFINED];
}
lt_dtype lt_dtype_from_name(const char *name) {
    for (int i = 1; i < LT_DTYPE_COUNT; i++)
        if (strcmp(g_info[i].name, name) == 0) return (lt_dtype)i;
    return LT_UNDEFINED;
}

/* ---- float16 / bfloat16 ---- */
static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

float lt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0) {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (man << 13));
    return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round a finite non-negative double to a binary format with `mbits` mantissa bits and minimum
 * normal exponent emin (subnormals below); returns the rounded value as a double (ties to even). */
static double round_to_format(double a, int mbits, int emin) {
    if (a == 0) return 0;
    int e;
    frexp(a, &e);                 /* a = m * 2^e, m in [0.5,1) -> exponent of leading bit is e-1 */
    int lead = e - 1;
    if (lead < emin) lead = emin; /* subnormal spacing */
    double quantum = ldexp(1.0, lead - mbits);
    return nearbyint(a / quantum) * quantum; /* default rounding mode: ties to even */
}

uint16_t lt_f64_to_f16(double d) {
    uint16_t sign = (d2u(d) >> 48) & 0x8000;
    if (isnan(d)) return 0x7e00 | sign;
    double a = fabs(d);
    double r = round_to_format(a, 10, -14);
    if (r >= 65520.0 || isinf(a)) return sign | 0x7c00;
    if (r > 65504.0) r = 65504.0;
    if (r < ldexp(1.0, -14)) return sign | (uint16_t)nearbyint(r / ldexp(1.0, -24));
    int e;
    double m = frexp(r, &e); /* r = m*2^e, m in [0.5,1) */
    uint16_t exp = (uint16_t)(e - 1 + 15);
    uint16_t man = (uint16_t)((m * 2 - 1) * 1024.0);
    return sign | (uint16_t)(exp << 10) | man;
}
uint16_t lt_f32_to_f16(float f) { return lt_f64_to_f16((double)f); }

float lt_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }
uint16_t lt_f32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    uint32_t rounding = 0x7fff + ((u >> 16) & 1);
    return (uint16_t)((u + rounding) >> 16);
}

/* ---- float8 / float4 / e8m0 through decoded tables ---- */
typedef struct f8fmt {
    int ebits, mbits, bias;
    bool fnuz;    /* no negative zero, NaN is 0x80, no infinity */
    bool has_inf; /* E5M2: exponent all ones is inf/NaN */
} f8fmt;

static f8fmt fmt_of(lt_dtype dt) {
    switch (dt) {
    case LT_FLOAT8E4M3FN: return (f8fmt){4, 3, 7, false, false};
    case LT_FLOAT8E4M3FNUZ: return (f8fmt){4, 3, 8, true, false};
    case LT_FLOAT8E5M2: return (f8fmt){5, 2, 15, false, true};
    default: return (f8fmt){5, 2, 16, true, false}; /* E5M2FNUZ */
    }
}

float lt_f8_to_f32(uint8_t v, lt_dtype dt) {
    f8fmt f = fmt_of(dt);
    /* NaN keeps the sign bit (as ml_dtypes decodes it; the FNUZ NaN 0x80 is negative). */
    if (f.fnuz && v == 0x80) return -NAN;
    int sign = v >> 7, e = (v >> f.mbits) & ((1 << f.ebits) - 1), m = v & ((1 << f.mbits) - 1);
    int emax = (1 << f.ebits) - 1;
    if (f.has_inf && e == emax) return m ? (sign ? -NAN : NAN) : (sign ? -INFINITY : INFINITY);
    if (!f.has_inf && !f.fnuz && e == emax && m == (1 << f.mbits) - 1) return sign ? -NAN : NAN; /* E4M3FN */
    float r = e == 0 ? ldexpf((float)m, 1 - f.bias - f.mbits)
                     : ldexpf((float)((1 << f.mbits) | m), e - f.bias - f.mbits);
    return sign ? -r : r;
}

static float f8_max(f8fmt f) {
    if (f.has_inf) return ldexpf(1.75f, (1 << f.ebits) - 2 - f.bias);             /* E5M2 */
    if (f.fnuz) return ldexpf(2.0f - ldexpf(1.0f, -f.mbits), (1 << f.ebits) - 1 - f.bias);
    return ldexpf(2.0f - ldexpf(2.0f, -f.mbits), (1 << f.ebits) - 1 - f.bias);    /* E4M3FN: 448 */
}

/* Encode like ml_dtypes' astype (round to nearest even) with ONNX's saturation: saturate=true clamps
 * infinities and finite overflow to the largest finite value (onnx.numpy_helper.saturate_cast);
 * false gives inf (E5M2) or NaN (the others). NaN keeps its sign where the format can. */
uint8_t lt_f32_to_f8(float x, lt_dtype dt, bool saturate) {
    f8fmt f = fmt_of(dt);
    uint8_t sign = (f2u(x) >> 24) & 0x80;
    uint8_t nan = f.fnuz ? 0x80 : (uint8_t)(sign | (f.has_inf ? 0x7e : 0x7f));
    uint8_t over = f.fnuz ? 0x80 : (uint8_t)(sign | (f.has_inf ? 0x7c : 0x7f)); /* unsaturated overflow */
    if (isnan(x)) return nan;
    float maxv = f8_max(f);
    if (isinf(x)) return saturate ? (uint8_t)(sign | lt_f32_to_f8(maxv, dt, true)) : over;
    double a = fabs((double)x);
    double r = round_to_format(a, f.mbits, 1 - f.bias);
    if (r > maxv) {
        if (!saturate) return over;
        r = maxv;
    }
    if (r == 0) return f.fnuz ? 0 : sign;
    double minnorm = ldexp(1.0, 1 - f.bias);
    uint8_t bits;
    if (r < minnorm) {
        bits = (uint8_t)nearbyint(r / ldexp(1.0, 1 - f.bias - f.mbits));
    } else {
        int e;
        double m = frexp(r, &e);
        int exp = e - 1 + f.bias;
        int man = (int)((m * 2 - 1) * (1 << f.mbits));
        bits = (uint8_t)((exp << f.mbits) | man);
    }
    return sign | bits;
}

float lt_f4e2m1_to_f32(uint8_t v) {
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float r = mag[v & 7];
    return (v & 8) ? -r : r;
}
/* float4 has no NaN or infinity: infinities saturate to +-6; NaN encodes as ml_dtypes does it
 * (0x8 for a positive NaN, 0x0 for a negative one). */
uint8_t lt_f32_to_f4e2m1(float x) {
    uint8_t sign = (f2u(x) >> 28) & 8;
    if (isnan(x)) return sign ? 0x0 : 0x8;
    double a = fabs((double)x);
    double r = isinf(x) ? 6.0 : round_to_format(a, 1, 0);
    if (r > 6.0) r = 6.0;
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    for (uint8_t i = 0; i < 8; i++)
        if (mag[i] == r) return sign | i;
    return sign | 7;
}

float lt_e8m0_to_f32(uint8_t v) { return v == 0xff ? NAN : ldexpf(1.0f, (int)v - 127); }
/* onnx.numpy_helper.to_float8e8m0: works on the float32 exponent bits (the sign is dropped, NaN and
 * infinity give 0xFF); rounding looks at the mantissa bits; saturate keeps 0xFE from rounding up
 * into 0xFF. */
uint8_t lt_f32_to_e8m0_rm(float x, bool saturate, int round_mode) {
    uint32_t b = f2u(x);
    uint32_t e = (b >> 23) & 0xff;
    if (e == 0xff) return 0xff;
    bool up = false;
    if (round_mode == LT_ROUND_NEAREST) {
        bool g = (b & 0x400000) != 0, r = (b & 0x200000) != 0, s = (b & 0x1fffff) != 0, lsb = e > 0;
        up = g && (r || s || lsb);
    } else if (round_mode == LT_ROUND_UP) {
        up = (b & 0x7fffff) != 0;
    }
    if (up && !(saturate && e == 0xfe)) e++;
    return (uint8_t)e;
}
uint8_t lt_f32_to_e8m0(float x, bool saturate) { return lt_f32_to_e8m0_rm(x, saturate, LT_ROUND_UP); }

/* ---- generic loads and stores ---- */
#define LD(T) ({ T v_; memcpy(&v_, (const char *)data + i * (int64_t)sizeof(T), sizeof(T)); v_; })

double lt_load_f64(const void *data, lt_dtype dt, int64_t i) {
    switch (dt) {
    case LT_FLOAT: return LD(float);
    case LT_DOUBLE: return LD(double);
    case LT_FLOAT16: return lt_f16_to_f32(LD(uint16_t));
    case LT_BFLOAT16: return lt_bf16_to_f32(LD(uint16_t));
    case LT_FLOAT8E4M3FN: case LT_FLOAT8E4M3FNUZ: case LT_FLOAT8E5M2: case LT_FLOAT8E5M2FNUZ:
        return lt_f8_to_f32(LD(uint8_t), dt);
    case LT_FLOAT4E2M1: return lt_f4e2m1_to_f32(LD(uint8_t));
    case LT_FLOAT8E8M0: return lt_e8m0_to_f32(LD(uint8_t));
    case LT_INT8: case LT_INT4: case LT_INT2: return LD(int8_t);
    case LT_UINT8: case LT_UINT4: case LT_UINT2: case LT_BOOL: return LD(uint8_t);
    case LT_INT16: return LD(int16_t);
    case LT_UINT16: return LD(uint16_t);
    case LT_INT32: return LD(int32_t);
    case LT_UINT32: return LD(uint32_t);
    case LT_INT64: return (double)LD(int64_t);
    case LT_UINT64: return (double)LD(uint64_t);
    case LT_COMPLEX64: { float c[2]; memcpy(c, (const char *)data + i * 8, 8); return c[0]; }
    case LT_COMPLEX128: { double c[2]; memcpy(c, (const char *)data + i * 16, 16); return c[0]; }
    default: return 0;
    }
}

static int64_t sat_i64(double v) {
    if (isnan(v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
static uint64_t sat_u64(double v) {
    if (isnan(v) || v <= 0) return v <= -1 ? (uint64_t)sat_i64(v) : 0;
    if (v >= 18446744073709551615.0) return UINT64_MAX;
    return (uint64_t)v;
}

int64_t lt_load_i64(const void *data, lt_dtype dt, int64_t i) {
    switch (dt) {
    case LT_INT64: return LD(int64_t);
    case LT_UINT64: return (int64_t)LD(uint64_t);
    case LT_INT32: return LD(int32_t);
    case LT_UINT32: return LD(uint32_t);
    case LT_INT16: return LD(int16_t);
    case LT_UINT16: return LD(uint16_t);
    case LT_INT8: case LT_INT4: case LT_INT2: return LD(int8_t);
    case LT_UINT8: case LT_UINT4: case LT_UINT2: case LT_BOOL: return LD(uint8_t);
    default: return sat_i64(lt_load_f64(data, dt, i));
    }
}
uint64_t lt_load_u64(const void *data, lt_dtype dt, int64_t i) {
    if (dt == LT_UINT64) return LD(uint64_t);
    if (lt_dtype_is_float(dt)) return sat_u64(lt_load_f64(data, dt, i));
    return (uint64_t)lt_load_i64(data, dt, i);
}

#define ST(T, x) do { T v_ = (T)(x); memcpy((char *)data + i * (int64_t)sizeof(T), &v_, sizeof(T)); } while (0)

void lt_store_i64(void *data, lt_dtype dt, int64_t i, int64_t v) {
    switch (dt) {
    case LT_INT64: ST(int64_t, v); break;
    case LT_UINT64: ST(uint64_t, (uint64_t)v); break;
    case LT_INT32: ST(int32_t, (int32_t)(uint32_t)v); break;
    case LT_UINT32: ST(uint32_t, (uint32_t)v); break;
    case LT_INT16: ST(int16_t, (int16_t)(uint16_t)v); break;
    case LT_UINT16: ST(uint16_t, (uint16_t)v); break;
    case LT_INT8: ST(int8_t, (int8_t)(uint8_t)v); break;
    case LT_UINT8: ST(uint8_t, (uint8_t)v); break;
    case LT_BOOL: ST(uint8_t, v != 0); break;
    case LT_UINT4: ST(uint8_t, (uint8_t)v & 0xf); break;
    case LT_UINT2: ST(uint8_t, (uint8_t)v & 0x3); break;
    case LT_INT4: { int8_t b = (int8_t)((uint8_t)((uint8_t)v << 4)) >> 4; ST(int8_t, b); break; }
    case LT_INT2: { int8_t b = (int8_t)((uint8_t)((uint8_t)v << 6)) >> 6; ST(int8_t, b); break; }
    default: lt_store_f64(data, dt, i, (double)v); break;
    }
}
void lt_store_u64(void *data, lt_dtype dt, int64_t i, uint64_t v) {
    if (lt_dtype_is_float(dt) || dt == LT_COMPLEX64 || dt == LT_COMPLEX128) lt_store_f64(data, dt, i, (double)v);
    else lt_store_i64(data, dt, i, (int64_t)v);
}

static void store_f64_rm(void *data, lt_dtype dt, int64_t i, double v, bool saturate, int round_mode) {
    switch (dt) {
    case LT_FLOAT: ST(float, v); break;
    case LT_DOUBLE: ST(double, v); break;
    case LT_FLOAT16: ST(uint16_t, lt_f64_to_f16(v)); break;
    case LT_BFLOAT16: ST(uint16_t, lt_f32_to_bf16((float)v)); break;
    case LT_FLOAT8E4M3FN: case LT_FLOAT8E4M3FNUZ: case LT_FLOAT8E5M2: case LT_FLOAT8E5M2FNUZ:
        ST(uint8_t, lt_f32_to_f8((float)v, dt, saturate)); break;
    case LT_FLOAT4E2M1: ST(uint8_t, lt_f32_to_f4e2m1((float)v)); break;
    case LT_FLOAT8E8M0: ST(uint8_t, lt_f32_to_e8m0_rm((float)v, saturate, round_mode)); break;
    case LT_BOOL: ST(uint8_t, v != 0); break;
    case LT_UINT64: ST(uint64_t, sat_u64(v)); break;
    case LT_UINT32: case LT_UINT16: case LT_UINT8: case LT_UINT4: case LT_UINT2:
    case LT_INT64: case LT_INT32: case LT_INT16: case LT_INT8: case LT_INT4: case LT_INT2:
        lt_store_i64(data, dt, i, sat_i64(v)); break;
    case LT_COMPLEX64: { float c[2] = {(float)v, 0}; memcpy((char *)data + i * 8, c, 8); break; }
    case LT_COMPLEX128: { double c[2] = {v, 0}; memcpy((char *)data + i * 16, c, 16); break; }
    default: break;
    }
}
void lt_store_f64_sat(void *data, lt_dtype dt, int64_t i, double v, bool saturate) {
    store_f64_rm(data, dt, i, v, saturate, LT_ROUND_UP);
}
void lt_store_f64(void *data, lt_dtype dt, int64_t i, double v) { lt_store_f64_sat(data, dt, i, v, true); }

/* Cast one element. Integer -> integer stays exact (wrapping); integer -> float32 rounds once from
 * the integer (no detour through double); float -> integer truncates (NaN 0, saturating to int64,
 * then wrapping to the target width); anything -> bool is "!= 0" (NaN is true); complex gives its
 * real part. Narrow float targets round from float32 like ml_dtypes, except float16 (from double,
 * like numpy). */
void lt_convert_elem_rm(const void *src, lt_dtype sdt, int64_t i, void *dst, lt_dtype ddt, int64_t j,
                        bool saturate, int round_mode) {
    lt_dclass sc = lt_dtype_get(sdt)->cls, dc = lt_dtype_get(ddt)->cls;
    if (dc == LT_DC_BOOL) {
        ((uint8_t *)dst)[j] = (sc == LT_DC_FLOAT || sc == LT_DC_COMPLEX) ? lt_load_f64(src, sdt, i) != 0
                                                                        : lt_load_i64(src, sdt, i) != 0;
    } else if ((sc == LT_DC_SINT || sc == LT_DC_BOOL) && (dc == LT_DC_SINT || dc == LT_DC_UINT)) {
        lt_store_i64(dst, ddt, j, lt_load_i64(src, sdt, i));
    } else if (sc == LT_DC_UINT && (dc == LT_DC_SINT || dc == LT_DC_UINT)) {
        lt_store_u64(dst, ddt, j, lt_load_u64(src, sdt, i));
    } else if (ddt == LT_FLOAT && (sc == LT_DC_SINT || sc == LT_DC_BOOL)) {
        float f = (float)lt_load_i64(src, sdt, i);
        memcpy((char *)dst + j * 4, &f, 4);
    } else if (ddt == LT_FLOAT && sc == LT_DC_UINT) {
        float f = (float)lt_load_u64(src, sdt, i);
        memcpy((char *)dst + j * 4, &f, 4);
    } else if (sc == LT_DC_UINT && sdt == LT_UINT64) {
        store_f64_rm(dst, ddt, j, (double)lt_load_u64(src, sdt, i), saturate, round_mode);
    } else {
        store_f64_rm(dst, ddt, j, lt_load_f64(src, sdt, i), saturate, round_mode);
    }
}
void lt_convert_elem(const void *src, lt_dtype sdt, int64_t i, void *dst, lt_dtype ddt, int64_t j,
                     bool saturate) {
    lt_convert_elem_rm(src, sdt, i, dst, ddt, j, saturate, LT_ROUND_UP);
}
