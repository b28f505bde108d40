/* gemm.h — packed single-precision GEMM with a fused epilogue: the CPU microkernel behind MatMul,
 * Gemm and (through conv.h) Conv in generated code.
 *
 * Pasted into a generated C translation unit by the emitter when a kernel calls one of these
 * functions (it includes core.h, which the emitter pastes first anyway). Everything is `static`,
 * named lt_*; nothing allocates, prints or aborts. Builds with `-O3 -march=native -fopenmp` (AVX-512
 * or AVX2 kernels, OpenMP threads) and with plain `cc -O2` (portable kernel, one thread).
 *
 * ---- API (what generated code and the runtime call) ---------------------------------------------
 *
 *   C[M,N] = epilogue( alpha * op(A)[M,K] * op(B)[K,N] + beta * C )        all row-major float32
 *
 *   void lt_sgemm(M, N, K, A, lda, a_mode, B, ldb, b_mode, C, ldc, alpha, beta, ep, ws, ws_floats)
 *     a_mode: LT_GEMM_N  A[i*lda + k]        b_mode: LT_GEMM_N  B[k*ldb + j]
 *             LT_GEMM_T  A[k*lda + i]                LT_GEMM_T  B[j*ldb + k]
 *             LT_GEMM_PACKED  A from lt_sgemm_pack_a (lda ignored); likewise B from lt_sgemm_pack_b
 *     beta == 0: C is write-only (may hold garbage or NaN); otherwise it is read first. C must not
 *     overlap A, B or the residual (partial sums are stored in C between K blocks).
 *     ep: the fused epilogue (NULL: none), applied once per element after the K sum, in registers
 *         or while the C tile is in L1:
 *            v = alpha*acc + beta*C_old
 *            v += bias[j] (or bias[i] when bias_per_row)
 *            v += residual[i*ldr + j]     (here, or after the activation: residual_after_act)
 *            v = act(v)                   LT_ACT_* below; act_a, act_b are its parameters
 *     ws, ws_floats: scratch for packing (any alignment). The full-speed size is
 *         lt_sgemm_ws_floats(M, N, K, threads); less is fine (fewer threads, smaller blocks, and
 *         below LT_GEMM_WS_MIN floats a slower path with a ~56 KiB stack buffer). ws may be NULL
 *         when ws_floats is 0. A safe static bound is LT_GEMM_WS_PER_THREAD floats per thread.
 *     Threads: lt_nthreads() of the module (lathe_set_threads); small problems run on one thread;
 *     inside an enclosing parallel region OpenMP's nesting rules apply (usually one thread).
 *
 *   Weight pre-packing (once, at load time; the layout is private to this translation unit):
 *     int64_t lt_sgemm_packed_b_size(K, N)                          floats
 *     void    lt_sgemm_pack_b(dst, B, ldb, b_mode /N or T/, K, N)
 *     int64_t lt_sgemm_packed_a_size(M, K)
 *     void    lt_sgemm_pack_a(dst, A, lda, a_mode /N or T/, M, K)
 *
 *   Batched (attention MatMuls; ONNX batch broadcasting up to two batch levels):
 *     void lt_sgemm_batched(b1, b2, M, N, K, A, lda, a_mode, sa1, sa2, B, ldb, b_mode, sb1, sb2,
 *                           C, ldc, sc1, sc2, alpha, beta, ep, sr1, sr2, ws, ws_floats)
 *     batch (x1, x2) in [0,b1) x [0,b2) uses A + x1*sa1 + x2*sa2 (strides in floats, 0 to
 *     broadcast), B, C and the epilogue's residual likewise; bias is shared by all batches.
 *
 *   Flat form for generated code (scalars and pointers only; an unused pointer may be any valid
 *   pointer, e.g. C, because the mode says it is not read):
 *     void lt_gemm_f32(C, A, B, bias, residual, ws,
 *                      b1, b2, M, N, K,
 *                      lda, a_mode, sa1, sa2,   ldb, b_mode, sb1, sb2,   ldc, sc1, sc2,
 *                      bias_mode /0 none, 1 per column, 2 per row/,
 *                      res_mode /0 none, 1 before act, 2 after act/, ldr, sr1, sr2,
 *                      act, act_a, act_b, alpha, beta, ws_floats)
 *
 * Activation codes (act, act_a, act_b): LT_ACT_* of abi.h (the same codes on the GPU): NONE, RELU,
 *   CLIP (min a, max b), LEAKY_RELU (alpha a), SIGMOID, TANH, GELU (erf form), GELU_TANH, SILU
 *   (x*sigmoid(x)), HARD_SIGMOID (max(0, min(1, a*x + b))).
 *
 * ---- Design -------------------------------------------------------------------------------------
 * Packed panels: an operand is cut into K blocks (lt_gemm_kblock: at most LT_GEMM_KC deep, equal
 * sizes) and, inside a block, into panels of W rows (W = MR for A, NR for B; conv.h may pack A in
 * wider panels, lt_gemm_src.pw, read MR rows at a time) stored k-major:
 * panel[k*W + r]; the last panel is zero-padded. A pre-packed matrix holds block p0 (its first k)
 * at p0*Rpad, panel t at +t*W*kc, where Rpad = R rounded up to W.
 * Register-blocked kernels: AVX-512 8x48 (24 zmm accumulators, 3 B loads and 8 broadcasts per k),
 * AVX2+FMA 6x16, portable 6x8 (GCC vector extensions, 16-byte vectors); on AVX-512 a pre-packed A
 * times at most 12 columns takes the narrow path instead (rows as the vector, see below). One kernel is instantiated
 * per (rows, vectors) tail shape (padded B columns are zero). The common epilogues (bias, residual
 * before the activation, relu / clip / none) are applied in registers; the rest (alpha, beta,
 * other activations, a ragged right edge) from the tile spilled to L1 (lt_gemm_store_tile_).
 * Cache blocking: K blocks of at most LT_GEMM_KC; N chunks of at most LT_GEMM_NC columns, whose
 * packed B block (256 x 768 floats = 768 KiB) stays in the 2 MiB L2; each A micro-panel (MR x kc,
 * 8 KiB) stays in L1 while the B block streams past it, so A needs neither packing ahead nor M
 * blocking. A row-major A is not packed at all: the kernel broadcasts from its MR rows in place
 * (lt_gkr_*; a transposing copy per chunk cost 3-20% of a MatMul); a transposed A is packed one
 * micro-panel at a time, just before use. A row-major B whose rows are whole vectors and whose K
 * block is small (attention's V) is read in place too; a transposed B (attention's K^T) is packed
 * through 16 x 16 register transposes. A pre-packed B (weights) larger than L2 streams from
 * memory: while the M panels pass over one K block, the kernels prefetch the next block (or the
 * next chunk's first) into L2, a share per call, so the first pass over a block does not stall.
 * Threads: C is cut into chunks (M range x N range x batch), at least 3 per thread, which threads
 * take from a shared counter, so a C tile is written by one thread only (its epilogue runs when
 * its last K block is done) and a thread delayed by the OS is covered by the others. Chunks are cut
 * along N first (each streams only its own part of B; Conv's B, packed at run time, is never
 * packed twice), along M once N has no panels left to share out.
 */
#ifndef LT_PRELUDE_GEMM_H
#define LT_PRELUDE_GEMM_H

#include "core.h"
#include "abi.h" /* LT_ACT_*, LT_GEMM_* modes, blocking and workspace constants */

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

/* ---- public types (the constants, LT_GEMM_* and LT_ACT_*, are abi.h's) ---- */
typedef struct lt_epilogue {
    const float *bias;      /* NULL: none; bias[j] per column, or bias[i] when bias_per_row */
    int bias_per_row;
    int act;                /* LT_ACT_* */
    float act_a, act_b;     /* CLIP: min, max; LEAKY_RELU: alpha; HARD_SIGMOID: alpha, beta */
    const float *residual;  /* NULL: none; residual[i*ldr + j] is added */
    int64_t ldr;
    int residual_after_act; /* 0: act(v + residual) (ResNet); 1: act(v) + residual */
} lt_epilogue;

/* ---- configuration per instruction set (blocking LT_GEMM_KC / LT_GEMM_NC: abi.h) ---- */
#if defined(__AVX512F__)
#define LT_GEMM_ISA "avx512"
#define LT_GL 16 /* lanes */
#ifndef LT_GEMM_MR
#define LT_GEMM_MR LT_GEMM_MR_AVX512
#endif
#ifndef LT_GEMM_NV
#define LT_GEMM_NV 3
#endif
typedef __m512 lt_gv;
#define LT_GV_ZERO() _mm512_setzero_ps()
#define LT_GV_SET1(x) _mm512_set1_ps(x)
#define LT_GV_LOAD(p) _mm512_loadu_ps(p)
#define LT_GV_STORE(p, v) _mm512_storeu_ps((p), (v))
#define LT_GV_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define LT_GV_MAX(a, b) _mm512_max_ps((a), (b)) /* b when either is NaN */
#define LT_GV_MIN(a, b) _mm512_min_ps((a), (b))
#elif defined(__AVX2__) && defined(__FMA__)
#define LT_GEMM_ISA "avx2"
#define LT_GL 8
#ifndef LT_GEMM_MR
#define LT_GEMM_MR LT_GEMM_MR_AVX2
#endif
#ifndef LT_GEMM_NV
#define LT_GEMM_NV 2
#endif
typedef __m256 lt_gv;
#define LT_GV_ZERO() _mm256_setzero_ps()
#define LT_GV_SET1(x) _mm256_set1_ps(x)
#define LT_GV_LOAD(p) _mm256_loadu_ps(p)
#define LT_GV_STORE(p, v) _mm256_storeu_ps((p), (v))
#define LT_GV_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define LT_GV_MAX(a, b) _mm256_max_ps((a), (b))
#define LT_GV_MIN(a, b) _mm256_min_ps((a), (b))
#else
#define LT_GEMM_ISA "portable"
#define LT_GL 4
#ifndef LT_GEMM_MR
#define LT_GEMM_MR LT_GEMM_MR_PORTABLE
#endif
#ifndef LT_GEMM_NV
#define LT_GEMM_NV 2
#endif
typedef float lt_gv __attribute__((vector_size(16)));
#define LT_GV_ZERO() ((lt_gv){0, 0, 0, 0})
#define LT_GV_SET1(x) ((lt_gv){0, 0, 0, 0} + (x))
#define LT_GV_LOAD(p) ({ lt_gv lt_gv_; memcpy(&lt_gv_, (p), sizeof lt_gv_); lt_gv_; })
#define LT_GV_STORE(p, v) do { lt_gv lt_gs_ = (v); memcpy((p), &lt_gs_, sizeof lt_gs_); } while (0)
#define LT_GV_FMA(a, b, c) ((a) * (b) + (c))
LT_FN lt_gv lt_gv_max_(lt_gv a, lt_gv b) { lt_gv r; for (int i = 0; i < 4; i++) r[i] = a[i] > b[i] ? a[i] : b[i]; return r; }
LT_FN lt_gv lt_gv_min_(lt_gv a, lt_gv b) { lt_gv r; for (int i = 0; i < 4; i++) r[i] = a[i] < b[i] ? a[i] : b[i]; return r; }
#define LT_GV_MAX(a, b) lt_gv_max_((a), (b))
#define LT_GV_MIN(a, b) lt_gv_min_((a), (b))
#endif

#define LT_GEMM_NR (LT_GEMM_NV * LT_GL)
LT_ABI_ASSERT(LT_GEMM_NR <= LT_GEMM_NR_MAX, "packed B sizes (abi.h LT_GEMM_NR_MAX) assume NR <= 48");
#define LT_GEMM_WS_MIN ((int64_t)LT_GEMM_MR * LT_GEMM_KC + (int64_t)LT_GEMM_KC * LT_GEMM_NR + 32)

#define LT_GEMM_AI static inline __attribute__((always_inline, unused))
#ifdef _OPENMP
#define LT_PRAGMA_SIMD _Pragma("omp simd")
#else
#define LT_PRAGMA_SIMD
#endif

LT_FN int64_t lt_gemm_min_(int64_t a, int64_t b) { return a < b ? a : b; }
LT_FN int64_t lt_gemm_cdiv_(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- activations: branch-free float code the compiler vectorizes (accurate to a few ulp) ---- */
LT_GEMM_AI float lt_fbits_(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
/* exp(x): Cody-Waite reduction, degree-6 polynomial, 2^n applied in two halves (denormal results). */
LT_GEMM_AI float lt_vexpf(float x) {
    /* NaN takes the 0 path (converting NaN to int is undefined) and is returned as NaN below. */
    float xc = x != x ? 0.0f : x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    float n = __builtin_rintf(xc * 1.44269504088896341f);
    float r = xc - n * 0.693145751953125f;
    r = r - n * 1.42860682030941723e-6f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ni = (int32_t)n, n1 = ni / 2, n2 = ni - n1;
    float s1 = lt_fbits_((uint32_t)(n1 + 127) << 23), s2 = lt_fbits_((uint32_t)(n2 + 127) << 23);
    float y = p * s1 * s2;
    return x != x ? x : y;
}
LT_GEMM_AI float lt_vsigmoidf(float x) { return 1.0f / (1.0f + lt_vexpf(-x)); }
/* tanh: vmath.h's (always inlined), the same as the elementwise Tanh kernels. */
LT_GEMM_AI float lt_vtanhf(float x) { return lt_tanh_f32(x); }
/* erfc(z) for z >= 0 (Numerical Recipes' Chebyshev fit, relative error < 1.2e-7). */
LT_GEMM_AI float lt_verfcf_pos(float z) {
    float t = 1.0f / (1.0f + 0.5f * z);
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
    return t * lt_vexpf(p - z * z);
}
/* gelu(x) = x/2 * (1 + erf(x/sqrt2)) = x/2 * erfc(-x/sqrt2): no cancellation for negative x. */
LT_GEMM_AI float lt_vgeluf(float x) {
    float z = x * 0.70710678118654752f;
    float e = lt_verfcf_pos(__builtin_fabsf(z));
    float one_plus_erf = x < 0 ? e : 2.0f - e;
    return 0.5f * x * one_plus_erf;
}
/* gelu, tanh form: x/2 (1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3). */
LT_GEMM_AI float lt_vgelu_tanhf(float x) {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x * lt_vsigmoidf(2.0f * u);
}
LT_FN float lt_act_f32(float v, int act, float a, float b) {
    switch (act) {
    case LT_ACT_RELU: return v < 0 ? 0.0f : v;
    case LT_ACT_CLIP: return v < a ? a : (v > b ? b : v);
    case LT_ACT_LEAKY_RELU: return v > 0 ? v : a * v;
    case LT_ACT_SIGMOID: return lt_vsigmoidf(v);
    case LT_ACT_TANH: return lt_vtanhf(v);
    case LT_ACT_GELU: return lt_vgeluf(v);
    case LT_ACT_GELU_TANH: return lt_vgelu_tanhf(v);
    case LT_ACT_SILU: return v * lt_vsigmoidf(v);
    case LT_ACT_HARD_SIGMOID: { float h = a * v + b; return h < 0 ? 0.0f : (h > 1 ? 1.0f : h); }
    case LT_ACT_HARD_SWISH: { float h = v / 6.0f + 0.5f; return v * (h < 0 ? 0.0f : (h > 1 ? 1.0f : h)); }
    default: return v;
    }
}
/* act over a row: one loop per kind so each vectorizes. */
LT_FN void lt_act_row_f32(float *x, int64_t n, int act, float a, float b) {
    switch (act) {
    case LT_ACT_NONE: return;
    case LT_ACT_SIGMOID: LT_PRAGMA_SIMD for (int64_t j = 0; j < n; j++) x[j] = lt_vsigmoidf(x[j]); return;
    case LT_ACT_TANH: LT_PRAGMA_SIMD for (int64_t j = 0; j < n; j++) x[j] = lt_vtanhf(x[j]); return;
    case LT_ACT_GELU: LT_PRAGMA_SIMD for (int64_t j = 0; j < n; j++) x[j] = lt_vgeluf(x[j]); return;
    case LT_ACT_GELU_TANH: LT_PRAGMA_SIMD for (int64_t j = 0; j < n; j++) x[j] = lt_vgelu_tanhf(x[j]); return;
    case LT_ACT_SILU: LT_PRAGMA_SIMD for (int64_t j = 0; j < n; j++) x[j] = x[j] * lt_vsigmoidf(x[j]); return;
    case LT_ACT_HARD_SWISH:
        LT_PRAGMA_SIMD for (int64_t j = 0; j < n; j++) {
            float h = x[j] / 6.0f + 0.5f;
            x[j] = x[j] * (h < 0 ? 0.0f : (h > 1 ? 1.0f : h));
        }
        return;
    default: for (int64_t j = 0; j < n; j++) x[j] = lt_act_f32(x[j], act, a, b); return;
    }
}
/* Activations the kernels apply in registers; the others run over the stored tile. */
LT_FN int lt_act_is_cheap(int act) {
    return act == LT_ACT_NONE || act == LT_ACT_RELU || act == LT_ACT_CLIP || act == LT_ACT_LEAKY_RELU;
}

/* ---- packing ---- */
/* K blocking: equal blocks of at most LT_GEMM_KC (a multiple of 8 except the last one). */
LT_FN int64_t lt_gemm_kblock(int64_t K) {
    if (K <= LT_GEMM_KC) return K > 0 ? K : 1;
    int64_t nb = lt_gemm_cdiv_(K, LT_GEMM_KC), kb = lt_gemm_cdiv_(K, nb);
    return (kb + 7) / 8 * 8;
}

#if defined(__AVX512F__)
/* d[k*ldd + r] = s[r*lds + k] for r, k < 16 (a 16 x 16 transpose in registers). */
LT_FN void lt_gemm_tr16_(float *restrict d, int64_t ldd, const float *restrict s, int64_t lds) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(s + i * lds);
    for (int i = 0; i < 16; i += 2) { /* pairs of rows interleaved */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* then pairs of pairs: 4 rows per 128-bit lane */
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    /* r[4g + j], lane l (128-bit): rows 4g..4g+3 of column 4l + j; gather the lanes */
    for (int j = 0; j < 4; j++) {
        __m512 a = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88), b = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
        __m512 c = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88), e = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
        t[j] = _mm512_shuffle_f32x4(a, c, 0x88);      /* column j */
        t[8 + j] = _mm512_shuffle_f32x4(a, c, 0xdd);  /* column 8 + j */
        t[4 + j] = _mm512_shuffle_f32x4(b, e, 0x88);  /* column 4 + j */
        t[12 + j] = _mm512_shuffle_f32x4(b, e, 0xdd); /* column 12 + j */
    }
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(d + i * ldd, t[i]);
}
#endif

/* Pack rows [r0, r0+nr) x k [k0, k0+kc) of a matrix into panels of width W (W in {MR, NR}):
 * dst[t*W*kc + k*W + r]. kmajor: element (r, k) at src[k*ld + r] (A^T, B); else src[r*ld + k]. */
LT_FN void lt_gemm_pack_(float *restrict dst, const float *restrict src, int64_t ld, int kmajor, int64_t r0,
                         int64_t nr, int64_t k0, int64_t kc, int W) {
    int64_t np = lt_gemm_cdiv_(nr, W), wl = nr - (np - 1) * W; /* panels; width of the last one */
    if (kmajor) { /* source rows are k: read each row once, left to right, dealing it to the panels */
        for (int64_t k = 0; k < kc; k++) {
            const float *s = src + (k0 + k) * ld + r0;
            float *d = dst + k * W;
            for (int64_t t = 0; t < np - 1; t++, s += W, d += W * kc) memcpy(d, s, (size_t)W * sizeof(float));
            int64_t r = 0;
            for (; r < wl; r++) d[r] = s[r];
            for (; r < W; r++) d[r] = 0.0f;
        }
        return;
    }
    for (int64_t t = 0; t < np; t++) { /* source rows are r: transpose W rows at a time */
        float *d = dst + t * W * kc;
        int64_t w = t == np - 1 ? wl : W;
        const float *s = src + (r0 + t * W) * ld + k0;
        if (w < W)
            for (int64_t k = 0; k < kc; k++)
                for (int64_t r = w; r < W; r++) d[k * W + r] = 0.0f;
#if defined(__AVX512F__)
        if (W % 16 == 0 && w == W) { /* 16 x 16 blocks through registers, then the k tail */
            int64_t k16 = kc / 16 * 16;
            for (int64_t kb = 0; kb < k16; kb += 16)
                for (int64_t rb = 0; rb < W; rb += 16) lt_gemm_tr16_(d + kb * W + rb, W, s + rb * ld + kb, ld);
            for (int64_t r = 0; r < w; r++)
                for (int64_t k = k16; k < kc; k++) d[k * W + r] = s[r * ld + k];
            continue;
        }
#endif
        for (int64_t k8 = 0; k8 < kc; k8 += 8) { /* 8 k at a time keeps the W source lines in L1 */
            int64_t ke = lt_gemm_min_(k8 + 8, kc);
            for (int64_t r = 0; r < w; r++)
                for (int64_t k = k8; k < ke; k++) d[k * W + r] = s[r * ld + k];
        }
    }
}

LT_FN int64_t lt_sgemm_packed_a_size(int64_t M, int64_t K) {
    return lt_gemm_cdiv_(M, LT_GEMM_MR) * LT_GEMM_MR * (K > 0 ? K : 1);
}
LT_FN int64_t lt_sgemm_packed_b_size(int64_t K, int64_t N) {
    return lt_gemm_cdiv_(N, LT_GEMM_NR) * LT_GEMM_NR * (K > 0 ? K : 1);
}
/* Whole-matrix packing (weights at load time): K block p0 at dst + p0*Rpad. */
LT_FN void lt_gemm_pack_all_(float *dst, const float *src, int64_t ld, int kmajor, int64_t R, int64_t K, int W) {
    int64_t rpad = lt_gemm_cdiv_(R, W) * W, kb = lt_gemm_kblock(K);
    if (K <= 0) { memset(dst, 0, (size_t)rpad * sizeof(float)); return; }
    for (int64_t p0 = 0; p0 < K; p0 += kb)
        lt_gemm_pack_(dst + p0 * rpad, src, ld, kmajor, 0, R, p0, lt_gemm_min_(kb, K - p0), W);
}
LT_FN void lt_sgemm_pack_a(float *dst, const float *A, int64_t lda, int a_mode, int64_t M, int64_t K) {
    lt_gemm_pack_all_(dst, A, lda, a_mode == LT_GEMM_T, M, K, LT_GEMM_MR);
}
LT_FN void lt_sgemm_pack_b(float *dst, const float *B, int64_t ldb, int b_mode, int64_t K, int64_t N) {
    lt_gemm_pack_all_(dst, B, ldb, b_mode != LT_GEMM_T, N, K, LT_GEMM_NR);
}

/* ---- the micro-kernel ---- */
/* What a kernel call does after its K block: the tile's share of the epilogue, pre-offset to the
 * tile (bias, residual point at the tile's first row/column). */
typedef struct lt_gemm_tile {
    float alpha, beta;
    int first, last; /* first: C is not yet accumulated (beta applies); last: run the epilogue */
    const float *bias_col, *bias_row, *res;
    int64_t ldr;
    int64_t as; /* floats between an A panel's consecutive k (MR, a wider packed panel's width, or
                   lda of an A^T read in place) */
    int64_t ars; /* A read in place, row-major: floats between its rows (k is contiguous) */
    int64_t bs;  /* floats between consecutive k of the B panel (NR; ldb of a B read in place) */
    int act, res_after;
    float act_a, act_b;
    const char *pf; /* npf cache lines from pf to prefetch into L2 during the call (the next B block) */
    int64_t npf;
} lt_gemm_tile;

/* Scalar tile store (tails, or a tile spilled from registers): tmp[i*ldt + j] holds the sums. */
LT_FN void lt_gemm_store_scalar_(const float *tmp, int64_t ldt, float *c, int64_t ldc, int mr, int nc,
                                 const lt_gemm_tile *t) {
    for (int i = 0; i < mr; i++) {
        float *cr = c + i * ldc;
        const float *tr = tmp + i * ldt;
        for (int j = 0; j < nc; j++) {
            float v = t->alpha * tr[j];
            if (!t->first) v += cr[j];
            else if (t->beta != 0.0f) v += t->beta * cr[j];
            if (t->last) {
                if (t->bias_col) v += t->bias_col[j];
                if (t->bias_row) v += t->bias_row[i];
                if (t->res && !t->res_after) v += t->res[i * t->ldr + j];
                if (lt_act_is_cheap(t->act)) {
                    v = lt_act_f32(v, t->act, t->act_a, t->act_b);
                    if (t->res && t->res_after) v += t->res[i * t->ldr + j];
                }
            }
            cr[j] = v;
        }
    }
}
/* The rest of the epilogue for expensive activations, over the stored tile (in L1). */
LT_FN void lt_gemm_tile_act_(float *c, int64_t ldc, int mr, int nc, const lt_gemm_tile *t) {
    for (int i = 0; i < mr; i++) {
        lt_act_row_f32(c + i * ldc, nc, t->act, t->act_a, t->act_b);
        if (t->res && t->res_after) {
            float *cr = c + i * ldc;
            const float *rr = t->res + i * t->ldr;
            for (int j = 0; j < nc; j++) cr[j] += rr[j];
        }
    }
}

/* The tile's epilogue: the K block's sums tmp[i*NR + j] (alpha not applied) -> C, full vectors in
 * SIMD registers, the ragged right edge element by element. Shared by every kernel instance. */
static __attribute__((noinline, unused)) void lt_gemm_store_tile_(const float *tmp, float *c, int64_t ldc, int mr,
                                                                  int nc, const lt_gemm_tile *t) {
    int cheap = lt_act_is_cheap(t->act), nv = nc / LT_GL;
    lt_gv va = LT_GV_SET1(t->alpha), vb = LT_GV_SET1(t->beta), zero = LT_GV_ZERO();
    lt_gv lo = LT_GV_SET1(t->act == LT_ACT_CLIP ? t->act_a : 0.0f);
    lt_gv hi = LT_GV_SET1(t->act_b), la = LT_GV_SET1(t->act_a);
    for (int i = 0; i < mr; i++) {
        float *cr = c + i * ldc;
        const float *tr = tmp + i * LT_GEMM_NR;
        const float *rr = t->res ? t->res + i * t->ldr : 0;
        lt_gv brow = t->bias_row ? LT_GV_SET1(t->bias_row[i]) : zero;
        for (int v = 0; v < nv; v++) {
            lt_gv x = LT_GV_LOAD(tr + v * LT_GL);
            if (t->alpha != 1.0f) x = x * va;
            if (!t->first) x = x + LT_GV_LOAD(cr + v * LT_GL);
            else if (t->beta != 0.0f) x = LT_GV_FMA(vb, LT_GV_LOAD(cr + v * LT_GL), x);
            if (t->last) {
                if (t->bias_col) x = x + LT_GV_LOAD(t->bias_col + v * LT_GL);
                if (t->bias_row) x = x + brow;
                if (rr && !t->res_after) x = x + LT_GV_LOAD(rr + v * LT_GL);
                if (cheap) {
                    switch (t->act) {
                    case LT_ACT_RELU: x = LT_GV_MAX(zero, x); break; /* NaN stays NaN */
                    case LT_ACT_CLIP: x = LT_GV_MIN(hi, LT_GV_MAX(lo, x)); break;
                    case LT_ACT_LEAKY_RELU: x = LT_GV_MAX(zero, x) + la * LT_GV_MIN(zero, x); break;
                    default: break;
                    }
                    if (rr && t->res_after) x = x + LT_GV_LOAD(rr + v * LT_GL);
                }
            }
            LT_GV_STORE(cr + v * LT_GL, x);
        }
    }
    if (nv * LT_GL < nc) {
        lt_gemm_tile e = *t;
        if (e.bias_col) e.bias_col += nv * LT_GL;
        if (e.res) e.res += nv * LT_GL;
        lt_gemm_store_scalar_(tmp + nv * LT_GL, LT_GEMM_NR, c + nv * LT_GL, ldc, mr, nc - nv * LT_GL, &e);
    }
    if (t->last && !cheap) lt_gemm_tile_act_(c, ldc, mr, nc, t);
}

/* kc steps of the rank-1 update on an MR_ x NV_ register tile: a is the A panel (MR wide), b the
 * B panel (NR wide); the sums go to tmp. MR_ and NV_ are constants at every call site, so the
 * loops unroll and acc lives in registers. mode (lt_gemm_mode_) != 0: store to c directly. */
LT_GEMM_AI void lt_gemm_kernel_(const int AROW, const int MR_, const int NV_, int64_t kc, const float *restrict a,
                                const float *restrict b, float *restrict tmp, float *c, int64_t ldc,
                                int mode, const lt_gemm_tile *t) {
    lt_gv acc[LT_GEMM_MR][LT_GEMM_NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV_; v++) acc[i][v] = LT_GV_ZERO();
    /* bring the C tile in while the products run (the epilogue reads or writes it) */
#pragma GCC unroll 16
    for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV_; v++) __builtin_prefetch(c + i * ldc + v * LT_GL, 1, 3);
    const int64_t as = t->as, ars = t->ars, npf = t->npf, bs = t->bs;
    const char *pf = t->pf;
    for (int64_t k = 0; k < kc; k++) {
        if (k < npf) __builtin_prefetch(pf + 64 * k, 0, 2);
        lt_gv bv[LT_GEMM_NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV_; v++) bv[v] = LT_GV_LOAD(b + v * LT_GL);
#pragma GCC unroll 16
        for (int i = 0; i < MR_; i++) {
            lt_gv av = LT_GV_SET1(AROW ? a[i * ars] : a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV_; v++) acc[i][v] = LT_GV_FMA(av, bv[v], acc[i][v]);
        }
        a += AROW ? 1 : as;
        b += bs;
    }
    if (mode) { /* full width, a common epilogue: straight from registers */
        const lt_gv zero = LT_GV_ZERO();
        lt_gv bc[LT_GEMM_NV], lo = LT_GV_SET1(-LT_INF_F32), hi = LT_GV_SET1(LT_INF_F32);
#pragma GCC unroll 4
        for (int v = 0; v < NV_; v++) bc[v] = mode >= 3 && t->bias_col ? LT_GV_LOAD(t->bias_col + v * LT_GL) : zero;
        if (mode >= 3 && t->act == LT_ACT_RELU) lo = zero;
        if (mode >= 3 && t->act == LT_ACT_CLIP) lo = LT_GV_SET1(t->act_a), hi = LT_GV_SET1(t->act_b);
#pragma GCC unroll 16
        for (int i = 0; i < MR_; i++) {
            float *cr = c + i * ldc;
            if (mode <= 2) {
#pragma GCC unroll 4
                for (int v = 0; v < NV_; v++) {
                    lt_gv x = acc[i][v];
                    if (mode == 2) x = x + LT_GV_LOAD(cr + v * LT_GL);
                    LT_GV_STORE(cr + v * LT_GL, x);
                }
                continue;
            }
            lt_gv br = t->bias_row ? LT_GV_SET1(t->bias_row[i]) : zero;
            const float *rr = t->res ? t->res + i * t->ldr : 0;
#pragma GCC unroll 4
            for (int v = 0; v < NV_; v++) {
                lt_gv x = acc[i][v];
                if (mode == 4) x = x + LT_GV_LOAD(cr + v * LT_GL);
                x = x + (bc[v] + br);
                if (rr) x = x + LT_GV_LOAD(rr + v * LT_GL);
                x = LT_GV_MIN(hi, LT_GV_MAX(lo, x)); /* relu / clip / none; NaN stays NaN */
                LT_GV_STORE(cr + v * LT_GL, x);
            }
        }
        return;
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV_; v++) LT_GV_STORE(tmp + i * LT_GEMM_NR + v * LT_GL, acc[i][v]);
}

/* How a kernel stores its tile. From registers: 1 the sums, 2 C + sums, 3 sums + bias (row or
 * column) + residual then relu/clip/none, 4 the same on C + sums. 0: spilled for
 * lt_gemm_store_tile_ (alpha, beta, ragged edge, other activations, residual after it). */
LT_FN int lt_gemm_mode_(const lt_gemm_tile *t, int nc, int nv) {
    if (nc != nv * LT_GL || t->alpha != 1.0f || (t->first && t->beta != 0.0f)) return 0;
    if (!t->last || (!t->bias_col && !t->bias_row && !t->res && t->act == LT_ACT_NONE)) return t->first ? 1 : 2;
    if (t->act != LT_ACT_NONE && t->act != LT_ACT_RELU && t->act != LT_ACT_CLIP) return 0;
    if (t->res && t->res_after) return 0;
    return t->first ? 3 : 4;
}

/* One function per tail shape (rows 1..MR x vectors 1..NV) and A layout (lt_gk_*: k-major panels,
 * lt_gkr_*: row-major A read in place), chosen through a table. */
#define LT_GK_FN(mr, nv)                                                                             \
    static __attribute__((noinline, unused)) void lt_gk_##mr##_##nv(int64_t kc, const float *a,     \
                                                     const float *b, float *c, int64_t ldc, int nc,  \
                                                     const lt_gemm_tile *t) {                        \
        float tmp[LT_GEMM_MR * LT_GEMM_NR] __attribute__((aligned(64)));                            \
        int mode = lt_gemm_mode_(t, nc, nv);                                                         \
        lt_gemm_kernel_(0, mr, nv, kc, a, b, tmp, c, ldc, mode, t);                                  \
        if (!mode) lt_gemm_store_tile_(tmp, c, ldc, mr, nc, t);                                      \
    }                                                                                                \
    static __attribute__((noinline, unused)) void lt_gkr_##mr##_##nv(int64_t kc, const float *a,    \
                                                      const float *b, float *c, int64_t ldc, int nc, \
                                                      const lt_gemm_tile *t) {                       \
        float tmp[LT_GEMM_MR * LT_GEMM_NR] __attribute__((aligned(64)));                            \
        int mode = lt_gemm_mode_(t, nc, nv);                                                         \
        lt_gemm_kernel_(1, mr, nv, kc, a, b, tmp, c, ldc, mode, t);                                  \
        if (!mode) lt_gemm_store_tile_(tmp, c, ldc, mr, nc, t);                                      \
    }
#if LT_GEMM_NV == 1
#define LT_GK_ROW(mr) LT_GK_FN(mr, 1)
#define LT_GK_R(P, mr) {P##mr##_1, 0, 0, 0}
#elif LT_GEMM_NV == 2
#define LT_GK_ROW(mr) LT_GK_FN(mr, 1) LT_GK_FN(mr, 2)
#define LT_GK_R(P, mr) {P##mr##_1, P##mr##_2, 0, 0}
#elif LT_GEMM_NV == 3
#define LT_GK_ROW(mr) LT_GK_FN(mr, 1) LT_GK_FN(mr, 2) LT_GK_FN(mr, 3)
#define LT_GK_R(P, mr) {P##mr##_1, P##mr##_2, P##mr##_3, 0}
#elif LT_GEMM_NV == 4
#define LT_GK_ROW(mr) LT_GK_FN(mr, 1) LT_GK_FN(mr, 2) LT_GK_FN(mr, 3) LT_GK_FN(mr, 4)
#define LT_GK_R(P, mr) {P##mr##_1, P##mr##_2, P##mr##_3, P##mr##_4}
#else
#error "gemm.h: LT_GEMM_NV must be 1..4"
#endif
#if LT_GEMM_MR > 14
#error "gemm.h: LT_GEMM_MR > 14 needs more kernel instances"
#endif
LT_GK_ROW(1) LT_GK_ROW(2) LT_GK_ROW(3) LT_GK_ROW(4)
#if LT_GEMM_MR > 4
LT_GK_ROW(5) LT_GK_ROW(6)
#endif
#if LT_GEMM_MR > 6
LT_GK_ROW(7) LT_GK_ROW(8)
#endif
#if LT_GEMM_MR > 8
LT_GK_ROW(9) LT_GK_ROW(10) LT_GK_ROW(11) LT_GK_ROW(12)
#endif
#if LT_GEMM_MR > 12
LT_GK_ROW(13) LT_GK_ROW(14)
#endif
typedef void (*lt_gk_fn)(int64_t, const float *, const float *, float *, int64_t, int, const lt_gemm_tile *);
#define LT_GK_TABLE(P)                                                   \
    {                                                                    \
        LT_GK_R(P, 1), LT_GK_R(P, 2), LT_GK_R(P, 3), LT_GK_R(P, 4),      \
        LT_GK_R5_(P) LT_GK_R7_(P) LT_GK_R9_(P) LT_GK_R13_(P)             \
    }
#if LT_GEMM_MR > 4
#define LT_GK_R5_(P) LT_GK_R(P, 5), LT_GK_R(P, 6),
#else
#define LT_GK_R5_(P)
#endif
#if LT_GEMM_MR > 6
#define LT_GK_R7_(P) LT_GK_R(P, 7), LT_GK_R(P, 8),
#else
#define LT_GK_R7_(P)
#endif
#if LT_GEMM_MR > 8
#define LT_GK_R9_(P) LT_GK_R(P, 9), LT_GK_R(P, 10), LT_GK_R(P, 11), LT_GK_R(P, 12),
#else
#define LT_GK_R9_(P)
#endif
#if LT_GEMM_MR > 12
#define LT_GK_R13_(P) LT_GK_R(P, 13), LT_GK_R(P, 14),
#else
#define LT_GK_R13_(P)
#endif
/* [0]: k-major A (packed panels, A^T in place), [1]: row-major A in place */
static lt_gk_fn const lt_gk_table[2][LT_GEMM_MR][4] __attribute__((unused)) = {LT_GK_TABLE(lt_gk_),
                                                                               LT_GK_TABLE(lt_gkr_)};

/* ---- the driver ---- */
/* An operand source: packs (or points at) the panels of a block. For A the panel rows run over M,
 * for B over N. `pack` is a custom packer (conv.h's im2col) or NULL for a matrix. */
typedef struct lt_gemm_src {
    const float *p;
    int64_t ld;
    int mode;   /* LT_GEMM_N / T / PACKED (meaning per operand, see the top of the file) */
    int64_t R;  /* rows of panels: M for A, N for B (PACKED: the packed matrix's) */
    int pw;     /* PACKED A only: its panel width when wider than MR (conv.h's 16-row panels), or 0 */
    void (*pack)(const struct lt_gemm_src *s, float *dst, int64_t r0, int64_t nr, int64_t k0, int64_t kc, int W);
    const void *ctx;
} lt_gemm_src;

typedef struct lt_gemm_prob {
    int64_t M, N, K;
    lt_gemm_src a, b;   /* b.mode for a plain matrix: N means B[k*ldb + j] */
    float *C;
    int64_t ldc;
    float alpha, beta;
    lt_epilogue ep;
    int has_ep;
    /* batching: batch x = (x1, x2); operand offsets x1*s1 + x2*s2 */
    int64_t b1, b2, sa1, sa2, sb1, sb2, sc1, sc2, sr1, sr2;
    int64_t sbias1, sbias2; /* bias strides per batch level (0: shared; conv.h: the group's rows) */
} lt_gemm_prob;

/* Panels of rows [r0, r0+nr) x [k0, k0+kc) of operand s (W wide): packed into buf or pointed at. */
LT_FN const float *lt_gemm_block_(const lt_gemm_src *s, int64_t off, float *buf, int64_t r0, int64_t nr,
                                  int64_t k0, int64_t kc, int W, int is_a) {
    if (s->mode == LT_GEMM_PACKED) {
        if (is_a && s->pw > W) { /* rows r0.. of a wider panel (r0 is a multiple of W) */
            int64_t rpad = lt_gemm_cdiv_(s->R, s->pw) * s->pw;
            return s->p + off + k0 * rpad + r0 / s->pw * s->pw * kc + r0 % s->pw;
        }
        int64_t rpad = lt_gemm_cdiv_(s->R, W) * W;
        return s->p + off + k0 * rpad + r0 * kc;
    }
    if (s->pack) {
        lt_gemm_src t = *s;
        t.p = s->p + off;
        s->pack(&t, buf, r0, nr, k0, kc, W);
        return buf;
    }
    int kmajor = is_a ? s->mode == LT_GEMM_T : s->mode != LT_GEMM_T;
    lt_gemm_pack_(buf, s->p + off, s->ld, kmajor, r0, nr, k0, kc, W);
    return buf;
}

/* One chunk: rows [m0, m0+mc) x cols [n0, n0+nc) of batch (x1, x2), all K blocks. */
/* nn0, nnc: the columns of the chunk this thread takes next (nnc 0: unknown), whose first pre-packed
 * B block is prefetched during the last K block. */
LT_FN void lt_gemm_chunk_(const lt_gemm_prob *P, int64_t x1, int64_t x2, int64_t m0, int64_t mc, int64_t n0,
                          int64_t nc, float *wa, float *wb, int64_t kb, int64_t nn0, int64_t nnc) {
    int64_t offa = x1 * P->sa1 + x2 * P->sa2, offb = x1 * P->sb1 + x2 * P->sb2;
    float *C = P->C + x1 * P->sc1 + x2 * P->sc2;
    const lt_epilogue *ep = &P->ep;
    const float *res = P->has_ep && ep->residual ? ep->residual + x1 * P->sr1 + x2 * P->sr2 : 0;
    int64_t K = P->K;
    lt_gemm_tile t;
    t.alpha = P->alpha;
    t.beta = P->beta;
    t.ldr = P->has_ep ? ep->ldr : 0;
    t.pf = 0, t.npf = 0;
    t.as = P->a.mode == LT_GEMM_PACKED && P->a.pw > LT_GEMM_MR ? P->a.pw : LT_GEMM_MR;
    /* a row-major A is read in place (its panels would cost a transposing copy per chunk) */
    const int arow = P->a.mode == LT_GEMM_N && !P->a.pack;
    t.ars = arow ? P->a.ld : 0;
    /* a small row-major B whose rows are whole vectors is read in place (no packing pass) */
    const int b_inplace = P->b.mode == LT_GEMM_N && !P->b.pack && P->N % LT_GL == 0 &&
                          (double)lt_gemm_min_(kb, K) * (double)P->b.ld <= 65536.0;
    t.bs = b_inplace ? P->b.ld : LT_GEMM_NR;
    t.act = P->has_ep ? ep->act : LT_ACT_NONE;
    t.act_a = P->has_ep ? ep->act_a : 0.0f;
    t.act_b = P->has_ep ? ep->act_b : 0.0f;
    t.res_after = P->has_ep ? ep->residual_after_act : 0;
    const float *bias = P->has_ep && ep->bias ? ep->bias + x1 * P->sbias1 + x2 * P->sbias2 : 0;
    int bias_row = P->has_ep && ep->bias_per_row;
    if (K <= 0) { /* no products: the epilogue still runs on alpha*0 + beta*C */
        float zero[LT_GEMM_MR * LT_GEMM_NR];
        memset(zero, 0, sizeof zero);
        t.first = t.last = 1;
        for (int64_t i = m0; i < m0 + mc; i += LT_GEMM_MR)
            for (int64_t j = n0; j < n0 + nc; j += LT_GEMM_NR) {
                int mr = (int)lt_gemm_min_(LT_GEMM_MR, m0 + mc - i), w = (int)lt_gemm_min_(LT_GEMM_NR, n0 + nc - j);
                t.bias_col = bias && !bias_row ? bias + j : 0;
                t.bias_row = bias && bias_row ? bias + i : 0;
                t.res = res ? res + i * t.ldr + j : 0;
                lt_gemm_store_scalar_(zero, LT_GEMM_NR, C + i * P->ldc + j, P->ldc, mr, w, &t);
                if (!lt_act_is_cheap(t.act)) lt_gemm_tile_act_(C + i * P->ldc + j, P->ldc, mr, w, &t);
            }
        return;
    }
    for (int64_t p0 = 0; p0 < K; p0 += kb) {
        int64_t kc = lt_gemm_min_(kb, K - p0);
        t.first = p0 == 0;
        t.last = p0 + kc >= K;
        /* the B block (kc x nc) stays in L2; each A micro-panel (MR x kc) stays in L1 while the
         * B block streams past it, so the A block needs no cache residency and M needs no blocking */
        const float *bp = b_inplace ? P->b.p + offb + p0 * P->b.ld + n0
                                    : lt_gemm_block_(&P->b, offb, wb, n0, nc, p0, kc, LT_GEMM_NR, 0);
        const int64_t bstep = b_inplace ? 1 : kc; /* floats from one B panel to the next, per column */
        /* pre-packed B: the next K block's columns stream in from memory meanwhile, a share per call */
        const char *pf = 0;
        int64_t pf_lines = 0, pf_per = 0;
        if (P->b.mode == LT_GEMM_PACKED && (p0 + kc < K || nnc > 0)) {
            int64_t pk = p0 + kc < K ? p0 + kc : 0, pn0 = p0 + kc < K ? n0 : nn0, pnc = p0 + kc < K ? nc : nnc;
            int64_t kn = lt_gemm_min_(kb, K - pk);
            pf = (const char *)lt_gemm_block_(&P->b, offb, wb, pn0, pnc, pk, kn, LT_GEMM_NR, 0);
            pf_lines = lt_gemm_cdiv_(kn * lt_gemm_cdiv_(pnc, LT_GEMM_NR) * LT_GEMM_NR, 16);
            pf_per = lt_gemm_cdiv_(pf_lines, lt_gemm_cdiv_(mc, LT_GEMM_MR) * lt_gemm_cdiv_(nc, LT_GEMM_NR));
        }
        for (int64_t i = 0; i < mc; i += LT_GEMM_MR) {
            int mr = (int)lt_gemm_min_(LT_GEMM_MR, mc - i);
            const float *a = arow ? P->a.p + offa + (m0 + i) * P->a.ld + p0
                                  : lt_gemm_block_(&P->a, offa, wa, m0 + i, mr, p0, kc, LT_GEMM_MR, 1);
            t.bias_row = bias && bias_row ? bias + m0 + i : 0;
            for (int64_t j = 0; j < nc; j += LT_GEMM_NR) {
                int w = (int)lt_gemm_min_(LT_GEMM_NR, nc - j);
                int nv = (w + LT_GL - 1) / LT_GL;
                t.bias_col = bias && !bias_row ? bias + n0 + j : 0;
                t.res = res ? res + (m0 + i) * t.ldr + n0 + j : 0;
                t.npf = lt_gemm_min_(pf_per, pf_lines), t.pf = pf;
                if (pf) pf += 64 * t.npf; /* NULL when nothing is prefetched (no offset on NULL) */
                pf_lines -= t.npf;
                lt_gk_table[arow][mr - 1][nv - 1](kc, a, bp + j * bstep, C + (m0 + i) * P->ldc + n0 + j, P->ldc, w,
                                                  &t);
            }
        }
    }
}

/* Chunking: counts of M chunks (cm) and N chunks (cn, each at most nc_max wide) for T threads:
 * at least 3 per thread (threads take them dynamically, so a thread the OS delays is covered by
 * the others) and a multiple of T (equal shares when none is delayed), unless panels run out. */
LT_FN void lt_gemm_plan_(const lt_gemm_prob *P, int T, int64_t nc_max, int64_t *cm, int64_t *cn) {
    int64_t pm = lt_gemm_cdiv_(P->M, LT_GEMM_MR), pn = lt_gemm_cdiv_(P->N, LT_GEMM_NR);
    int64_t m = 1, n = lt_gemm_cdiv_(pn, nc_max / LT_GEMM_NR), nb = P->b1 * P->b2;
    /* split N first: a chunk then streams only its own columns of B, reused by all M rows (an M
     * split would read all of B once per chunk); the A panels a chunk repacks are K x M, small
     * next to B in MatMul, and pre-packed in Conv. M only once N has run out of panels. */
    while (T > 1 && nb * m * n < 64 * T && (nb * m * n < 3 * T || (nb * m * n) % T != 0)) {
        int can_m = m < pm, can_n = n < pn;
        if (!can_m && !can_n) break;
        if (can_n) n++;
        else m++;
    }
    *cm = m;
    *cn = n;
}

LT_FN void lt_gemm_worker_(const lt_gemm_prob *P, int tid, int T, float *ws, int64_t ws_per, int64_t cm,
                           int64_t cn, int64_t *next) {
    int64_t pm = lt_gemm_cdiv_(P->M, LT_GEMM_MR), pn = lt_gemm_cdiv_(P->N, LT_GEMM_NR);
    int64_t kb = lt_gemm_kblock(P->K);
    float stack_buf[LT_GEMM_WS_MIN];
    float *w = ws_per > 0 ? ws + tid * ws_per : stack_buf;
    float *wa = w, *wb = w + LT_GEMM_MR * kb;
    int64_t per_batch = cm * cn, total = per_batch * P->b1 * P->b2;
    for (int64_t u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); u < total;
         u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED)) {
        int64_t x = u / per_batch, r = u % per_batch, im = r / cn, in = r % cn;
        /* panels split as evenly as possible: chunk c gets panels [c*p/cnt, (c+1)*p/cnt) */
        int64_t m0 = im * pm / cm * LT_GEMM_MR, m1 = lt_gemm_min_((im + 1) * pm / cm * LT_GEMM_MR, P->M);
        int64_t n0 = in * pn / cn * LT_GEMM_NR, n1 = lt_gemm_min_((in + 1) * pn / cn * LT_GEMM_NR, P->N);
        if (m1 <= m0 || n1 <= n0) continue;
        /* one thread takes the chunks in order: the next one is the next N range (same batch, M) */
        int64_t nn0 = 0, nnc = 0;
        if (T == 1 && in + 1 < cn) {
            nn0 = (in + 1) * pn / cn * LT_GEMM_NR;
            nnc = lt_gemm_min_((in + 2) * pn / cn * LT_GEMM_NR, P->N) - nn0;
        }
        lt_gemm_chunk_(P, x / P->b2, x % P->b2, m0, m1 - m0, n0, n1 - n0, wa, wb, kb, nn0, nnc);
    }
}

/* Floats of workspace a thread needs for N chunks of at most nc columns. */
LT_FN int64_t lt_gemm_ws_thread_(int64_t nc, int64_t K) {
    int64_t kb = lt_gemm_kblock(K);
    return LT_GEMM_MR * kb + kb * nc + 32;
}

/* ---- narrow products: pre-packed A, at most LT_GEMM_NARROW_N columns ---- */
/* A 1x1 convolution of a small image (2x2, 3x3 at the end of a mobile network: N = positions) has
 * the weights as a pre-packed A of many rows and a handful of columns; the register tile above is
 * 16 to 48 columns wide, so most of its FMAs would multiply padding. Here the rows are the vector
 * (a packed panel holds its MR = 8 rows contiguous per k; two panels make a 16-row AVX-512 vector) and
 * each column of B one broadcast: per k, four panels and N columns cost two vector loads, N
 * broadcasts and 2N FMAs (2N independent chains), the weights streamed once. The epilogue is the
 * scalar tile store's. (mnasnet's 1x1 layers on 2x2 planes: 2.2x faster than the register tile; 4x4
 * planes, 16 columns, stay with the tile, which is as fast as onnxruntime there.) */
#if defined(__AVX512F__) && LT_GEMM_MR == 8
#define LT_GEMM_NARROW_N 12
#define LT_GEMM_NARROW_PANELS 4
LT_FN int lt_gemm_narrow_fits_(const lt_gemm_prob *P) {
    return P->N <= LT_GEMM_NARROW_N && P->a.mode == LT_GEMM_PACKED && (P->a.pw == 0 || P->a.pw == LT_GEMM_MR) &&
           !P->b.pack && (P->b.mode == LT_GEMM_N || P->b.mode == LT_GEMM_T) && P->K > 0 &&
           P->M >= LT_GEMM_NARROW_PANELS * LT_GEMM_MR;
}

/* Two panels' rows at one k as one AVX-512 vector. */
typedef __m512 lt_gemm_v2p;
#define LT_GEMM_V2P_ZERO() _mm512_setzero_ps()
#define LT_GEMM_V2P_LOAD(p, q) _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p)), _mm256_loadu_ps(q), 1)
#define LT_GEMM_V2P_FMA(acc, x, b) ((acc) = _mm512_fmadd_ps((x), _mm512_set1_ps(b), (acc)))
#define LT_GEMM_V2P_STORE(dst, v) _mm512_storeu_ps((dst), (v))

/* Sums of panels t0 .. t0+3 of A (the missing ones past the last read it again) against all nn
 * columns of B (element (k, j) at B[k*bk + j*bj]) over every K block: out[j * 4*MR + q*MR + r] for
 * column j, panel q, row r. */
#define LT_GEMM_NARROW_FN(nn)                                                                      \
    static __attribute__((noinline, unused)) void lt_gemm_narrow_##nn(const float *A, int64_t Mpad, int64_t K,     \
                                                                      int64_t kb, int64_t t0, int np, const float *B, \
                                                                      int64_t bk, int64_t bj, float *out) {     \
        lt_gemm_v2p acc0[nn], acc1[nn];                                                            \
        for (int j = 0; j < nn; j++) acc0[j] = LT_GEMM_V2P_ZERO(), acc1[j] = LT_GEMM_V2P_ZERO();   \
        for (int64_t p0 = 0; p0 < K; p0 += kb) {                                                   \
            int64_t kc = lt_gemm_min_(kb, K - p0), step = LT_GEMM_MR * kc;                         \
            const float *a[LT_GEMM_NARROW_PANELS];                                                 \
            for (int q = 0; q < LT_GEMM_NARROW_PANELS; q++)                                        \
                a[q] = A + p0 * Mpad + (t0 + (q < np ? q : np - 1)) * step;                        \
            const float *b = B + p0 * bk;                                                          \
            for (int64_t k = 0; k < kc; k++) {                                                     \
                const int64_t o = k * LT_GEMM_MR;                                                  \
                const lt_gemm_v2p x0 = LT_GEMM_V2P_LOAD(a[0] + o, a[1] + o);                       \
                const lt_gemm_v2p x1 = LT_GEMM_V2P_LOAD(a[2] + o, a[3] + o);                       \
                for (int j = 0; j < nn; j++) {                                                     \
                    const float bv = b[k * bk + j * bj];                                           \
                    LT_GEMM_V2P_FMA(acc0[j], x0, bv);                                              \
                    LT_GEMM_V2P_FMA(acc1[j], x1, bv);                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int j = 0; j < nn; j++) {                                                             \
            LT_GEMM_V2P_STORE(out + j * LT_GEMM_NARROW_PANELS * LT_GEMM_MR, acc0[j]);              \
            LT_GEMM_V2P_STORE(out + j * LT_GEMM_NARROW_PANELS * LT_GEMM_MR + 2 * LT_GEMM_MR, acc1[j]); \
        }                                                                                          \
    }
LT_GEMM_NARROW_FN(1) LT_GEMM_NARROW_FN(2) LT_GEMM_NARROW_FN(3) LT_GEMM_NARROW_FN(4)
LT_GEMM_NARROW_FN(5) LT_GEMM_NARROW_FN(6) LT_GEMM_NARROW_FN(7) LT_GEMM_NARROW_FN(8)
LT_GEMM_NARROW_FN(9) LT_GEMM_NARROW_FN(10) LT_GEMM_NARROW_FN(11) LT_GEMM_NARROW_FN(12)
typedef void (*lt_gemm_narrow_fn)(const float *, int64_t, int64_t, int64_t, int64_t, int, const float *, int64_t,
                                  int64_t, float *);
static lt_gemm_narrow_fn const lt_gemm_narrow_table[LT_GEMM_NARROW_N] __attribute__((unused)) = {
    lt_gemm_narrow_1, lt_gemm_narrow_2, lt_gemm_narrow_3, lt_gemm_narrow_4,
    lt_gemm_narrow_5, lt_gemm_narrow_6, lt_gemm_narrow_7, lt_gemm_narrow_8,
    lt_gemm_narrow_9, lt_gemm_narrow_10, lt_gemm_narrow_11, lt_gemm_narrow_12};

/* Panel groups [u0, u1) of every batch entry (group u: batch u / groups, panels from 4 * (u % groups)). */
LT_FN void lt_gemm_narrow_groups_(const lt_gemm_prob *P, int64_t u0, int64_t u1) {
    enum { GP = LT_GEMM_NARROW_PANELS, GR = GP * LT_GEMM_MR };
    int64_t panels = lt_gemm_cdiv_(P->M, LT_GEMM_MR), groups = lt_gemm_cdiv_(panels, GP);
    int64_t Mpad = panels * LT_GEMM_MR, kb = lt_gemm_kblock(P->K);
    const lt_epilogue *ep = &P->ep;
    float sums[GR * LT_GEMM_NARROW_N];
    lt_gemm_tile t;
    memset(&t, 0, sizeof t);
    t.alpha = P->alpha, t.beta = P->beta, t.first = t.last = 1;
    t.ldr = P->has_ep ? ep->ldr : 0;
    t.act = P->has_ep ? ep->act : LT_ACT_NONE;
    t.act_a = P->has_ep ? ep->act_a : 0.0f, t.act_b = P->has_ep ? ep->act_b : 0.0f;
    t.res_after = P->has_ep ? ep->residual_after_act : 0;
    const int bt = P->b.mode == LT_GEMM_T;
    for (int64_t u = u0; u < u1; u++) {
        int64_t x = u / groups, t0 = GP * (u % groups), x1 = x / P->b2, x2 = x % P->b2;
        int np = (int)lt_gemm_min_(GP, panels - t0);
        lt_gemm_narrow_table[P->N - 1](P->a.p + x1 * P->sa1 + x2 * P->sa2, Mpad, P->K, kb, t0, np,
                                       P->b.p + x1 * P->sb1 + x2 * P->sb2, bt ? 1 : P->b.ld, bt ? P->b.ld : 1, sums);
        int64_t i0 = t0 * LT_GEMM_MR;
        int mr = (int)lt_gemm_min_(GR, P->M - i0);
        float *C = P->C + x1 * P->sc1 + x2 * P->sc2 + i0 * P->ldc;
        const float *bias = P->has_ep && ep->bias ? ep->bias + x1 * P->sbias1 + x2 * P->sbias2 : 0;
        t.bias_col = bias && !ep->bias_per_row ? bias : 0;
        t.bias_row = bias && ep->bias_per_row ? bias + i0 : 0;
        t.res = P->has_ep && ep->residual ? ep->residual + x1 * P->sr1 + x2 * P->sr2 + i0 * t.ldr : 0;
        /* sums are column-major (a column's rows contiguous): the tile store reads C^T's layout */
        float tile[GR * LT_GEMM_NARROW_N];
        for (int r = 0; r < mr; r++)
            for (int j = 0; j < (int)P->N; j++) tile[r * LT_GEMM_NARROW_N + j] = sums[j * GR + r];
        lt_gemm_store_scalar_(tile, LT_GEMM_NARROW_N, C, P->ldc, mr, (int)P->N, &t);
        if (!lt_act_is_cheap(t.act)) lt_gemm_tile_act_(C, P->ldc, mr, (int)P->N, &t);
    }
}
#else /* AVX2 and portable builds keep the register tile (the narrow path is measured on AVX-512 only) */
LT_FN int lt_gemm_narrow_fits_(const lt_gemm_prob *P) { return (void)P, 0; }
LT_FN void lt_gemm_narrow_groups_(const lt_gemm_prob *P, int64_t u0, int64_t u1) { (void)P, (void)u0, (void)u1; }
#define LT_GEMM_NARROW_PANELS 4
#endif

LT_FN void lt_gemm_run_(const lt_gemm_prob *P, float *ws, int64_t ws_floats, int max_threads) {
    if (P->M <= 0 || P->N <= 0 || P->b1 <= 0 || P->b2 <= 0) return;
    double flops = 2.0 * (double)P->M * (double)P->N * (double)(P->K > 0 ? P->K : 1) * (double)(P->b1 * P->b2);
    int T = max_threads;
    if (flops < 2.0e6) T = 1; /* below ~10 us the fork costs more than it gains */
    if (lt_gemm_narrow_fits_(P)) {
        int64_t total = lt_gemm_cdiv_(lt_gemm_cdiv_(P->M, LT_GEMM_MR), LT_GEMM_NARROW_PANELS) * P->b1 * P->b2;
        if (T > total) T = (int)total;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1)
#endif
        for (int i = 0; i < T; i++) lt_gemm_narrow_groups_(P, total * i / T, total * (i + 1) / T);
        return;
    }
    int64_t npad = lt_gemm_cdiv_(P->N, LT_GEMM_NR) * LT_GEMM_NR;
    int64_t nc_max = lt_gemm_min_(LT_GEMM_NC, npad);
    int64_t need = lt_gemm_ws_thread_(nc_max, P->K);
    /* shrink threads, then the N block, to what the workspace holds */
    if (!ws) ws_floats = 0;
    while (T > 1 && need * T > ws_floats) T--;
    while (need > ws_floats && nc_max > LT_GEMM_NR) {
        nc_max = lt_gemm_cdiv_(nc_max / 2, LT_GEMM_NR) * LT_GEMM_NR;
        need = lt_gemm_ws_thread_(nc_max, P->K);
    }
    int64_t ws_per = need <= ws_floats ? need : 0; /* 0: each thread uses its stack buffer */
    int64_t cm, cn;
    lt_gemm_plan_(P, T, nc_max, &cm, &cn);
    if (cm * cn * P->b1 * P->b2 < T) T = (int)(cm * cn * P->b1 * P->b2);
    int64_t next = 0; /* the next chunk to take */
#ifdef _OPENMP
    if (T > 1) {
#pragma omp parallel num_threads(T)
        lt_gemm_worker_(P, omp_get_thread_num(), omp_get_num_threads(), ws, ws_per, cm, cn, &next);
        return;
    }
#endif
    lt_gemm_worker_(P, 0, 1, ws, ws_per, cm, cn, &next);
}
LT_FN void lt_gemm_prob_init_(lt_gemm_prob *P, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                              int a_mode, const float *B, int64_t ldb, int b_mode, float *C, int64_t ldc,
                              float alpha, float beta, const lt_epilogue *ep) {
    memset(P, 0, sizeof *P);
    P->M = M, P->N = N, P->K = K;
    P->a.p = A, P->a.ld = lda, P->a.mode = a_mode, P->a.R = M;
    P->b.p = B, P->b.ld = ldb, P->b.mode = b_mode, P->b.R = N;
    P->C = C, P->ldc = ldc, P->alpha = alpha, P->beta = beta;
    if (ep) P->ep = *ep, P->has_ep = 1;
    P->b1 = P->b2 = 1;
}

/* ---- public entry points ---- */
LT_FN int64_t lt_sgemm_ws_floats(int64_t M, int64_t N, int64_t K, int threads) {
    int64_t mpad = lt_gemm_cdiv_(M > 0 ? M : 1, LT_GEMM_MR) * LT_GEMM_MR;
    int64_t npad = lt_gemm_cdiv_(N > 0 ? N : 1, LT_GEMM_NR) * LT_GEMM_NR;
    (void)mpad;
    return (threads > 0 ? threads : 1) * lt_gemm_ws_thread_(lt_gemm_min_(LT_GEMM_NC, npad), K);
}

LT_FN void lt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int a_mode, const float *B,
                    int64_t ldb, int b_mode, float *C, int64_t ldc, float alpha, float beta,
                    const lt_epilogue *ep, float *ws, int64_t ws_floats) {
    lt_gemm_prob P;
    lt_gemm_prob_init_(&P, M, N, K, A, lda, a_mode, B, ldb, b_mode, C, ldc, alpha, beta, ep);
    lt_gemm_run_(&P, ws, ws_floats, lt_nthreads());
}

LT_FN void lt_sgemm_batched(int64_t b1, int64_t b2, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                            int a_mode, int64_t sa1, int64_t sa2, const float *B, int64_t ldb, int b_mode,
                            int64_t sb1, int64_t sb2, float *C, int64_t ldc, int64_t sc1, int64_t sc2,
                            float alpha, float beta, const lt_epilogue *ep, int64_t sr1, int64_t sr2, float *ws,
                            int64_t ws_floats) {
    lt_gemm_prob P;
    lt_gemm_prob_init_(&P, M, N, K, A, lda, a_mode, B, ldb, b_mode, C, ldc, alpha, beta, ep);
    P.b1 = b1, P.b2 = b2;
    P.sa1 = sa1, P.sa2 = sa2, P.sb1 = sb1, P.sb2 = sb2, P.sc1 = sc1, P.sc2 = sc2, P.sr1 = sr1, P.sr2 = sr2;
    lt_gemm_run_(&P, ws, ws_floats, lt_nthreads());
}

LT_FN void lt_gemm_f32(float *C, const float *A, const float *B, const float *bias, const float *residual,
                       float *ws, int64_t b1, int64_t b2, int64_t M, int64_t N, int64_t K, int64_t lda,
                       int64_t a_mode, int64_t sa1, int64_t sa2, int64_t ldb, int64_t b_mode, int64_t sb1,
                       int64_t sb2, int64_t ldc, int64_t sc1, int64_t sc2, int64_t bias_mode, int64_t res_mode,
                       int64_t ldr, int64_t sr1, int64_t sr2, int64_t act, float act_a, float act_b, float alpha,
                       float beta, int64_t ws_floats) {
    lt_epilogue ep;
    memset(&ep, 0, sizeof ep);
    ep.bias = bias_mode ? bias : 0;
    ep.bias_per_row = bias_mode == 2;
    ep.residual = res_mode ? residual : 0;
    ep.residual_after_act = res_mode == 2;
    ep.ldr = ldr;
    ep.act = (int)act;
    ep.act_a = act_a;
    ep.act_b = act_b;
    lt_sgemm_batched(b1, b2, M, N, K, A, lda, (int)a_mode, sa1, sa2, B, ldb, (int)b_mode, sb1, sb2, C, ldc, sc1,
                     sc2, alpha, beta, &ep, sr1, sr2, ws, ws_floats);
}

#endif
