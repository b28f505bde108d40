/* vmath.h — float32 exp, log, tanh and erf for the C target that the compiler can vectorize.
 *
 * Without -ffast-math (which lathe does not use: results must match the reference), GCC calls
 * libm's expf/erff once per element and never vectorizes them; in a fused GELU or softmax kernel
 * those calls cost more than everything else. These versions are branch-free (selects only), call
 * nothing but rintf (a single vroundps with -fno-math-errno), and are accurate to a few ulp:
 * measured max relative error over dense sweeps (tests/unit/test_backend_cpu.c) below 3e-7 for
 * exp/log/tanh and 1e-6 for erf, with NaN, infinities, overflow and underflow as libm gives them.
 * The polynomials are the classic Cephes minimax fits (exp, log) and a Chebyshev fit of erfc
 * (Numerical Recipes' erfcc) blended with the Maclaurin series of erf and tanh near 0.
 * Included by core.h (C only; CUDA has fast device math). Entry points: lt_exp_f32, lt_log_f32,
 * lt_tanh_f32, lt_erf_f32.
 */
#ifndef LT_PRELUDE_VMATH_H
#define LT_PRELUDE_VMATH_H

/* exp(r) for |r| <= ln2 / 2, and the reduction t = n ln2 + r that gives it (n = rintf(t / ln2)). */
LT_FN __attribute__((always_inline)) float lt_exp_reduced_f32(float t, float n) {
    float r = t - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return 1.0f + r + r * r * p;
}

LT_FN float lt_exp_f32(float x) {
    float t = x > 88.7228394f ? 88.7228394f : x;
    t = t < -103.972076f ? -103.972076f : t;
    t = t == t ? t : 0.0f;                      /* NaN: computed on 0, selected away below */
    float n = rintf(t * 1.44269504088896341f);  /* x = n ln2 + r, |r| <= ln2 / 2 */
    float e = lt_exp_reduced_f32(t, n);
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1; /* 2^n in two steps: subnormal results */
    e = e * LT_U2F((uint32_t)(n1 + 127) << 23) * LT_U2F((uint32_t)(n2 + 127) << 23);
    e = x > 88.7228394f ? LT_INF_F32 : e;
    return x == x ? e : x;
}

LT_FN float lt_log_f32(float x) {
    float xs = x < 1.17549435e-38f ? x * 8388608.0f : x; /* subnormals: scale by 2^23 */
    uint32_t b = LT_F2U(xs);
    float e = (float)((int32_t)((b >> 23) & 0xffu) - 126) - (x < 1.17549435e-38f ? 23.0f : 0.0f);
    float m = LT_U2F((b & 0x807fffffu) | 0x3f000000u); /* [0.5, 1) */
    int lo = m < 0.707106781186547524f;
    e = lo ? e - 1.0f : e;
    m = lo ? m + m - 1.0f : m - 1.0f;
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = y * m - 1.1514610310e-1f;
    y = y * m + 1.1676998740e-1f;
    y = y * m - 1.2420140846e-1f;
    y = y * m + 1.4249322787e-1f;
    y = y * m - 1.6668057665e-1f;
    y = y * m + 2.0000714765e-1f;
    y = y * m - 2.4999993993e-1f;
    y = y * m + 3.3333331174e-1f;
    y = y * m * z;
    y = y + e * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = m + y + e * 0.693359375f;
    r = x == 0.0f ? -LT_INF_F32 : r;
    r = x < 0.0f ? LT_NAN_F32 : r;
    r = x == LT_INF_F32 ? x : r;
    return x == x ? r : x;
}

/* tanh(x) = 1 - 2 / (exp(2|x|) + 1) from |x| = 0.4 up (|x| clamped to 9, where tanh rounds to 1; so
 * exp's argument is in [0.8, 18] and 2^n needs one step, no clamps), the Maclaurin series below,
 * the sign copied from x (tanh(-0) = -0). Always inlined: the GEMM epilogue's activation row (gemm.h)
 * calls it from the prelude library, where GCC would otherwise keep it out of line and scalar. */
LT_FN __attribute__((always_inline)) float lt_tanh_f32(float x) {
    float a = x < 0 ? -x : x;
    a = a <= 9.0f ? a : 9.0f;                  /* NaN too: computed on 9, selected away below */
    float y = a + a;
    float n = rintf(y * 1.44269504088896341f);
    float e = lt_exp_reduced_f32(y, n) * LT_U2F((uint32_t)((int32_t)n + 127) << 23);
    float big = 1.0f - 2.0f / (e + 1.0f);
    float z = a * a;                            /* Maclaurin series below 0.4 */
    float s = -1382.0f / 155925.0f;
    s = s * z + 62.0f / 2835.0f;
    s = s * z - 17.0f / 315.0f;
    s = s * z + 2.0f / 15.0f;
    s = s * z - 1.0f / 3.0f;
    float small = a + a * z * s;
    float t = __builtin_copysignf(a < 0.4f ? small : big, x);
    return x == x ? t : x;
}

LT_FN float lt_erf_f32(float x) {
    float a = x < 0 ? -x : x;
    a = a > 10.0f ? 10.0f : a;
    float t = 1.0f / (1.0f + 0.5f * a);         /* erfc(a) = t exp(-a^2 + P(t)), rel. error 1.2e-7 */
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    float big = 1.0f - t * lt_exp_f32(p - a * a);
    float z = a * a;                            /* Maclaurin series below 0.5 */
    float s = 1.0f / 75600.0f;
    s = s * z - 1.0f / 9360.0f;
    s = s * z + 1.0f / 1320.0f;
    s = s * z - 1.0f / 216.0f;
    s = s * z + 1.0f / 42.0f;
    s = s * z - 1.0f / 10.0f;
    s = s * z + 1.0f / 3.0f;
    float small = 1.12837916709551257f * (a - a * z * s);
    float r = a < 0.5f ? small : big;
    r = x < 0 ? -r : r;
    return x == x ? r : x;
}

#endif
