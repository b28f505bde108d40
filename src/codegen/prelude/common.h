/* common.h — prelude helpers shared by the C and CUDA targets: narrow-float conversions, NaN-aware
 * min/max/sign, and integer ops with ONNX (numpy) semantics and no undefined behaviour.
 *
 * Pasted into every generated translation unit by the emitter (never included by lathe itself).
 * The including language prelude (core.h for C, cuda_core.h for CUDA) defines first:
 *   LT_EXP_F32       the float exp to build on (lt_exp_f32 / expf)
 *   LT_FN            function qualifiers ("static inline" / "static __device__ __forceinline__")
 *   LT_COLD_FN       (CUDA) the same for a rare path kept out of line (noinline)
 *   LT_F2U, LT_U2F   float <-> uint32 bit casts;  LT_D2U, LT_U2D  double <-> uint64 bit casts
 *   the <stdint.h> type names, LT_INF_F32 / LT_NAN_F32 / LT_INF_F64 / LT_NAN_F64
 * Invariants: the helpers are pure, defined for every input (x / 0 == 0, INT_MIN / -1 wraps, shifts
 * by the width or more give 0), and round float16/bfloat16 to nearest even exactly as lathe's
 * reference (src/base/dtype.c) does. Names follow lt_<op>_<type suffix> (f32 f64 i8..i64 u8..u64),
 * the rule the emitter uses to name them.
 */
#ifndef LT_PRELUDE_COMMON_H
#define LT_PRELUDE_COMMON_H

/* ---- float16 / bfloat16 (stored as uint16_t bits, computed in float) ---- */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* On the GPU the hardware converts in one instruction, rounding to nearest even like the software
 * path below (NaN payloads may differ; NaN stays NaN). */
LT_FN float lt_h2f(uint16_t h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
LT_FN uint16_t lt_f2h(float f) { uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
LT_FN float lt_bf2f(uint16_t h) { return LT_U2F((uint32_t)h << 16); }
LT_FN uint16_t lt_f2bf(float f) { uint16_t h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#else
#if defined(__F16C__) && defined(__FLT16_MAX__) && defined(__GNUC__)
/* An x86 CPU with F16C and a compiler with _Float16 (the CPU backend builds with -march=native):
 * each conversion is one instruction (vcvtph2ps / vcvtps2ph), which vectorizes, rounding to nearest
 * even like the software path below (NaN payloads may differ; NaN stays NaN). */
__extension__ typedef union { uint16_t u; _Float16 h; } lt_h16_bits;
LT_FN float lt_h2f(uint16_t h) { lt_h16_bits c; c.u = h; return (float)c.h; }
LT_FN uint16_t lt_f2h(float f) { lt_h16_bits c; c.h = __extension__ (_Float16)f; return c.u; }
#else
LT_FN float lt_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
    if (em >= 0x7c00u) return LT_U2F(sign | 0x7f800000u | ((em & 0x3ffu) << 13)); /* inf, NaN */
    if (em >= 0x0400u) return LT_U2F(sign | ((em << 13) + 0x38000000u));          /* normal */
    return LT_U2F(sign | LT_F2U((float)em * 5.9604644775390625e-8f));               /* subnormal */
}
LT_FN uint16_t lt_f2h(float f) { /* round to nearest even */
    uint32_t x = LT_F2U(f), sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);             /* NaN */
    if (x >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);            /* >= 65536: inf */
    if (x < 0x38800000u) {                                              /* subnormal or zero */
        uint32_t magic = 126u << 23;                                    /* 0.5: aligns 2^-24 to bit 0 */
        return (uint16_t)(sign | (LT_F2U(LT_U2F(x) + LT_U2F(magic)) - magic));
    }
    x += 0xc8000fffu + ((x >> 13) & 1u); /* rebias (-112 << 23) and round half to even */
    return (uint16_t)(sign | (x >> 13));
}
#endif
LT_FN float lt_bf2f(uint16_t h) { return LT_U2F((uint32_t)h << 16); }
LT_FN uint16_t lt_f2bf(float f) {
    uint32_t x = LT_F2U(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
#endif
/* double -> float rounded to odd: the sticky bit keeps a later rounding to a narrower format
 * (float16, bfloat16) exact, so double -> float16 never rounds twice. */
LT_FN float lt_d2f_odd(double d) {
    float f = (float)d;
    if (f != f || (double)f == d) return f;
    uint32_t u = LT_F2U(f);
    if (f != 0 && (f > 0) == ((double)f > d)) u -= 1; /* rounded away from zero: step back */
    return LT_U2F(u | 1u);
}
LT_FN uint16_t lt_d2h(double d) { return lt_f2h(lt_d2f_odd(d)); }
LT_FN uint16_t lt_d2bf(double d) { return lt_f2bf(lt_d2f_odd(d)); }
/* Round a value to the precision of float16 / bfloat16 while keeping it in float (Cast in compute). */
LT_FN float lt_round_h(float f) { return lt_h2f(lt_f2h(f)); }
LT_FN float lt_round_bf(float f) { return lt_bf2f(lt_f2bf(f)); }

/* ---- floating helpers: NaN propagates through min/max/sign, as the reference does ----
 * max / min: a NaN a, else a NaN b, else the larger / smaller. In C written as an unordered test
 * first, the one form of it GCC 12 vectorizes (`a > b || a != a ? a : b` kept a pooling loop scalar,
 * a branch per comparison, 8x slower). */
#ifdef __CUDACC__
#define LT_NAN_FIRST_(a, b, cmp) (((a) cmp (b) || (a) != (a)) ? (a) : (b))
#else
#define LT_NAN_FIRST_(a, b, cmp) (__builtin_isunordered(a, b) ? ((a) != (a) ? (a) : (b)) : ((a) cmp (b) ? (a) : (b)))
#endif
#define LT_DEF_FLOAT_OPS(S, T, ONE)                                                                \
    LT_FN T lt_max_##S(T a, T b) { return LT_NAN_FIRST_(a, b, >); }                              \
    LT_FN T lt_min_##S(T a, T b) { return LT_NAN_FIRST_(a, b, <); }                              \
    LT_FN T lt_sign_##S(T a) { return a > 0 ? ONE : a < 0 ? -ONE : a != a ? a : (T)0; }          \
    LT_FN T lt_recip_##S(T a) { return ONE / a; }
LT_DEF_FLOAT_OPS(f32, float, 1.0f)
LT_DEF_FLOAT_OPS(f64, double, 1.0)
/* sigmoid through exp(-|x|) <= 1: no overflow, and tiny results for x << 0 keep their digits. */
LT_FN float lt_sigmoid_f32(float x) {
    float e = LT_EXP_F32(x < 0 ? x : -x), s = 1.0f / (1.0f + e);
    return x < 0 ? e * s : s;
}
LT_FN double lt_sigmoid_f64(double x) {
    double e = exp(x < 0 ? x : -x), s = 1.0 / (1.0 + e);
    return x < 0 ? e * s : s;
}
LT_FN float lt_rsqrt_f32(float x) { return 1.0f / sqrtf(x); }
LT_FN double lt_rsqrt_f64(double x) { return 1.0 / sqrt(x); }
LT_FN float lt_fmod_f32(float a, float b) { return fmodf(a, b); }
LT_FN double lt_fmod_f64(double a, double b) { return fmod(a, b); }

/* Float -> integer as ONNX Cast: truncate toward zero, NaN -> 0, saturate beyond int64 (the result
 * is then wrapped to the target width by a plain C cast). */
LT_FN int64_t lt_f2i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return (int64_t)0x7fffffffffffffffLL;
    if (x <= -9223372036854775808.0) return (int64_t)(-0x7fffffffffffffffLL - 1);
    return (int64_t)x;
}
LT_FN uint64_t lt_f2u64(double x) {
    if (x != x) return 0;
    if (x < 0) return (uint64_t)lt_f2i64(x);
    if (x >= 18446744073709551615.0) return 0xffffffffffffffffULL;
    return (uint64_t)x;
}

/* ---- integers: exact, wrapping, never undefined ---- */
#define LT_DEF_INT_COMMON(S, T, UT, BITS)                                                          \
    LT_FN T lt_max_##S(T a, T b) { return a > b ? a : b; }                                       \
    LT_FN T lt_min_##S(T a, T b) { return a < b ? a : b; }                                       \
    LT_FN T lt_shl_##S(T a, T b) { return (UT)b >= (UT)(BITS) ? (T)0 : (T)((UT)a << (UT)b); }    \
    LT_FN T lt_ipow_##S(T a, UT e) { return (T)lt_ipow64((uint64_t)a, (uint64_t)e); }
/* a^e modulo 2^64: reduces consistently to every narrower width. */
LT_FN uint64_t lt_ipow64(uint64_t x, uint64_t e) {
    uint64_t r = 1;
    while (e) {
        if (e & 1u) r *= x;
        x *= x;
        e >>= 1;
    }
    return r;
}
/* On GPUs, 64-bit division and remainder of operands that both fit in 31 bits (a kernel's flat index
 * split into coordinates by run-time sizes, in code compiled for every shape) take the 32-bit
 * unsigned instruction: the same result, several times cheaper (GPUs emulate 64-bit division). The
 * test is on the values, so it holds for any sign and size; narrower types never take it (sizeof
 * folds). CPUs divide in hardware: measured on bert_ci compiled for every shape (AMD EPYC), the
 * test and the multiplier below cost more than they saved, so the C target keeps the division. */
#ifdef __CUDA_ARCH__
#define LT_SMALL_OPERANDS(T, UT, a, b) (sizeof(T) == 8 && (((UT)(a) | (UT)(b)) >> 31) == 0)
#else
#define LT_SMALL_OPERANDS(T, UT, a, b) 0
#endif
#define LT_DEF_SINT_OPS(S, T, UT, BITS)                                                            \
    LT_DEF_INT_COMMON(S, T, UT, BITS)                                                              \
    LT_FN T lt_abs_##S(T a) { return a < 0 ? (T)(0 - (UT)a) : a; }                               \
    LT_FN T lt_sign_##S(T a) { return (T)((a > 0) - (a < 0)); }                                   \
    LT_FN T lt_div_##S(T a, T b) {                                                                \
        if (b == 0) return 0;                                                                     \
        if (LT_SMALL_OPERANDS(T, UT, a, b)) return (T)((uint32_t)a / (uint32_t)b);                \
        return b == -1 ? (T)(0 - (UT)a) : (T)(a / b);                                             \
    }                                                                                             \
    LT_FN T lt_fmod_##S(T a, T b) {                                                               \
        if (b == 0 || b == -1) return 0;                                                          \
        if (LT_SMALL_OPERANDS(T, UT, a, b)) return (T)((uint32_t)a % (uint32_t)b);                \
        return (T)(a % b);                                                                        \
    }                                                                                             \
    LT_FN T lt_mod_##S(T a, T b) { /* Python's %: the divisor's sign (ONNX Mod, fmod=0) */        \
        if (b == 0 || b == -1) return 0;                                                          \
        if (LT_SMALL_OPERANDS(T, UT, a, b)) return (T)((uint32_t)a % (uint32_t)b);                \
        T r = (T)(a % b);                                                                         \
        return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;                                 \
    }                                                                                             \
    LT_FN T lt_shr_##S(T a, T b) {                                                                \
        if (b < 0 || (UT)b >= (UT)(BITS)) return a < 0 ? (T)-1 : (T)0;                           \
        return a < 0 ? (T)~(~a >> b) : (T)(a >> b);                                              \
    }                                                                                             \
    LT_FN T lt_pow_##S(T a, T e) {                                                                \
        if (e < 0) return a == 1 ? (T)1 : a == -1 ? ((e & 1) ? (T)-1 : (T)1) : (T)0;              \
        return lt_ipow_##S(a, (UT)e);                                                             \
    }
#define LT_DEF_UINT_OPS(S, T, BITS)                                                                \
    LT_DEF_INT_COMMON(S, T, T, BITS)                                                               \
    LT_FN T lt_abs_##S(T a) { return a; }                                                         \
    LT_FN T lt_sign_##S(T a) { return (T)(a != 0); }                                              \
    LT_FN T lt_div_##S(T a, T b) {                                                                \
        if (b == 0) return 0;                                                                     \
        return LT_SMALL_OPERANDS(T, T, a, b) ? (T)((uint32_t)a / (uint32_t)b) : (T)(a / b);       \
    }                                                                                             \
    LT_FN T lt_fmod_##S(T a, T b) {                                                               \
        if (b == 0) return 0;                                                                     \
        return LT_SMALL_OPERANDS(T, T, a, b) ? (T)((uint32_t)a % (uint32_t)b) : (T)(a % b);       \
    }                                                                                             \
    LT_FN T lt_mod_##S(T a, T b) { return lt_fmod_##S(a, b); }                                   \
    LT_FN T lt_shr_##S(T a, T b) { return b >= (T)(BITS) ? (T)0 : (T)(a >> b); }                  \
    LT_FN T lt_pow_##S(T a, T e) { return lt_ipow_##S(a, e); }
LT_DEF_SINT_OPS(i8, int8_t, uint8_t, 8)
LT_DEF_SINT_OPS(i16, int16_t, uint16_t, 16)
LT_DEF_SINT_OPS(i32, int32_t, uint32_t, 32)
LT_DEF_SINT_OPS(i64, int64_t, uint64_t, 64)
LT_DEF_UINT_OPS(u8, uint8_t, 8)
LT_DEF_UINT_OPS(u16, uint16_t, 16)
LT_DEF_UINT_OPS(u32, uint32_t, 32)
LT_DEF_UINT_OPS(u64, uint64_t, 64)

/* a / d for 0 <= a < 2^31 and 1 <= d < 2^31, with ml = lt_div_magic31(d) (src/loop/loop.h): a
 * multiply-high, an add and a shift, no branch (a kernel that knows its indices fit 31 bits) */
#ifdef __CUDA_ARCH__
LT_FN uint32_t lt_divu31(uint32_t a, uint64_t ml) { return (__umulhi(a, (uint32_t)ml) + a) >> (uint32_t)(ml >> 32); }
#else
LT_FN uint32_t lt_divu31(uint32_t a, uint64_t ml) {
    return (uint32_t)((((uint64_t)a * (uint32_t)ml) >> 32) + a) >> (uint32_t)(ml >> 32);
}
#endif

/* Division and remainder by a run-time divisor b with its multiplier m = ceil(2^64 / b) (a kernel
 * compiled for every shape gets m as another scalar: lt_div_magic; m != 0 means 2 <= b < 2^32). On
 * GPUs, for 0 <= a < 2^32 the quotient is the high half of a * m, a multiply instead of an emulated
 * division; b == 1 needs neither; any other a, or m == 0, divides (out of line, so nested index
 * divisions stay small).
 * CPUs divide in hardware (see LT_SMALL_OPERANDS). */
#ifdef __CUDA_ARCH__
LT_COLD_FN int64_t lt_div_cold_i64(int64_t a, int64_t b) { return lt_div_i64(a, b); }
LT_COLD_FN int64_t lt_fmod_cold_i64(int64_t a, int64_t b) { return lt_fmod_i64(a, b); }
LT_FN int64_t lt_divm_i64(int64_t a, int64_t b, uint64_t m) {
    if (m && ((uint64_t)a >> 32) == 0) return (int64_t)__umul64hi((uint64_t)a, m);
    return b == 1 ? a : lt_div_cold_i64(a, b);
}
LT_FN int64_t lt_fmodm_i64(int64_t a, int64_t b, uint64_t m) {
    if (m && ((uint64_t)a >> 32) == 0) return a - (int64_t)__umul64hi((uint64_t)a, m) * b;
    return b == 1 ? 0 : lt_fmod_cold_i64(a, b);
}
#else
LT_FN int64_t lt_divm_i64(int64_t a, int64_t b, uint64_t m) { return (void)m, lt_div_i64(a, b); }
LT_FN int64_t lt_fmodm_i64(int64_t a, int64_t b, uint64_t m) { return (void)m, lt_fmod_i64(a, b); }
#endif

/* ---- index checks ----
 * An index v of an axis of size d (element `elem` of the indices of main-graph node code - 1), as a
 * position in [0, d): negative counts from the end. Out of range (v < -d or v >= d), the violation
 * goes into the plan's check word w (int64[4]: code, elem, v, d; the run then fails naming the node)
 * and position 0 is read, so nothing leaves the buffer. Racing writers store whole words of some
 * violation; which one is reported does not matter. */
LT_FN int64_t lt_check_index(int64_t *w, int64_t code, int64_t elem, int64_t v, int64_t d) {
    if (v < -d || v >= d) {
        w[1] = elem;
        w[2] = v;
        w[3] = d;
        w[0] = code;
        return 0;
    }
    return v < 0 ? v + d : v;
}

/* ---- ordering keys ----
 * A float32 as an integer in [INT32_MIN, INT32_MAX] that orders as the value does: -0 and +0 equal,
 * every NaN above +inf (one key). Comparisons of keys are plain integer ones (TopK's heap). */
LT_FN int64_t lt_f32_order(float x) {
    if (x != x) return 0x7fffffff;
    if (x == 0.0f) return 0;
    int32_t b = (int32_t)LT_F2U(x);
    return b >= 0 ? b : b ^ 0x7fffffff;
}

#endif
