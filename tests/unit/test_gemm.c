/* test_gemm.c — the prelude's GEMM and convolution microkernels (src/codegen/prelude/gemm.h,
 * conv.h) against naive double-precision references on random data.
 *
 * Covers: M/N/K in {1, 7, 33, 257} and tails around the register tile, every operand mode (plain
 * A read in place, transposed A packed, pre-packed; B packed, read in place, transposed through
 * the 16x16 register transpose), attention-like and small-N shapes, alpha/beta, every epilogue
 * part (bias per column/row, residual before and after the activation, each activation), batched
 * GEMM with broadcast strides, workspace sizes from none (stack path) to full, K = 0, the flat
 * entry points; convolutions with pads, strides, dilations, groups: the direct kernels
 * (channel-major and pixel-major, 8- and 16-channel weight panels, x as the slab for 1x1, strided
 * phase planes, K blocks, two threads), the implicit-im2col GEMM (no workspace), depthwise (the
 * AVX-512 3x3 band kernel at every band width, strides 1/2, pads 0..2, multipliers; 5x5 and
 * dilated on the generic path; small planes with strides, dilations, uneven pads and taps wholly
 * in the padding on each instruction set's path), and the activation functions against libm.
 * Tolerance: |got - ref| <= 1e-4 |ref| + 1e-5 sum|terms|.
 * The 8-bit integer GEMM and convolution (gemm_i8.h) bit for bit against int64 references
 * truncated to int32: uint8 and int8 operands, zero points none / one / per column or channel at
 * their extremes (0, 255, -128, 127), K odd, below and above the K block, 3072 and past 33025
 * (where int32 sums wrap), M = 1, N around the 8- and 16-column vectors, B pre-packed or packed per
 * call, no / tiny / full workspace; convolutions with pads, strides, dilations, groups, depthwise
 * (with and without workspace), 1x1, and fewer than 16 output pixels (pixels as rows).
 *
 * The prelude compiles to the instruction set of its translation unit, so this program runs its
 * checks in-process (the build's flags: usually the portable kernel), then recompiles itself with
 * the system C compiler as the CPU backend does (-O3 -march=native -fopenmp: AVX-512 or AVX2
 * kernels, 1 and 2 threads) and with -mavx2 -mfma (AVX2 kernel, when the CPU has it), and runs
 * those builds with --child. A missing compiler skips those runs with a message; a failing one
 * fails the test. Exit status 0 only when every check passed.
 */
#include "codegen/prelude/conv.h"
#include "codegen/prelude/gemm_i8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_fail, g_checks;
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static float frand(void) { /* uniform in [-1, 1) */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(g_rng >> 40) / (double)(1ull << 23) - 1.0);
}
static float *rand_buf(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (int64_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

static double ref_act(double v, int act, double a, double b) {
    switch (act) {
    case LT_ACT_RELU: return v < 0 ? 0 : v;
    case LT_ACT_CLIP: return v < a ? a : (v > b ? b : v);
    case LT_ACT_LEAKY_RELU: return v > 0 ? v : a * v;
    case LT_ACT_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case LT_ACT_TANH: return tanh(v);
    case LT_ACT_GELU: return 0.5 * v * erfc(-v / sqrt(2.0)); /* no cancellation for v << 0 */
    case LT_ACT_GELU_TANH: return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case LT_ACT_SILU: return v / (1.0 + exp(-v));
    case LT_ACT_HARD_SIGMOID: { double h = a * v + b; return h < 0 ? 0 : (h > 1 ? 1 : h); }
    case LT_ACT_HARD_SWISH: { double h = v / 6 + 0.5; return v * (h < 0 ? 0 : (h > 1 ? 1 : h)); }
    default: return v;
    }
}

/* Compare n values; ref and scale (sum of |terms|) in double. Reports the first few mismatches. */
static void check(const char *what, const float *got, const double *ref, const double *scale, int64_t n) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double tol = 1e-4 * fabs(ref[i]) + 1e-5 * scale[i] + 1e-30;
        double err = fabs((double)got[i] - ref[i]);
        if (!(err <= tol)) {
            if (bad < 3)
                fprintf(stderr, "FAIL %s [%lld]: got %.9g want %.9g (tol %.3g)\n", what, (long long)i, got[i],
                        ref[i], tol);
            bad++;
        }
    }
    g_checks++;
    if (bad) g_fail++;
}

/* ---- GEMM ---- */
typedef struct gcase {
    int64_t M, N, K;
    int a_mode, b_mode; /* N, T, PACKED */
    float alpha, beta;
    int bias;           /* 0 none, 1 column, 2 row */
    int res;            /* 0 none, 1 before act, 2 after */
    int act;
    int ws;             /* 0 full, 1 none (stack path), 2 tiny */
} gcase;

static void run_gemm(const gcase *c) {
    int64_t M = c->M, N = c->N, K = c->K;
    /* A stored [M,K] (N) or [K,M] (T); B stored [K,N] (N) or [N,K] (T); padded leading dims */
    int at = c->a_mode == LT_GEMM_T, bt = c->b_mode == LT_GEMM_T;
    int64_t lda = (at ? M : K) + 3, ldb = (bt ? K : N) + 5, ldc = N + 2, ldr = N + 1;
    float *A = rand_buf((at ? K : M) * lda), *B = rand_buf((bt ? N : K) * ldb);
    float *C = rand_buf(M * ldc), *bias = rand_buf(M > N ? M : N), *R = rand_buf(M * ldr);
    double *ref = malloc(sizeof(double) * (size_t)(M * N + 1)), *sc = malloc(sizeof(double) * (size_t)(M * N + 1));
    float *got = malloc(sizeof(float) * (size_t)(M * N + 1));
    float aa = c->act == LT_ACT_CLIP ? -0.5f : c->act == LT_ACT_HARD_SIGMOID ? 0.2f : 0.1f;
    float ab = c->act == LT_ACT_CLIP ? 0.7f : 0.5f;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, sa = 0;
            for (int64_t k = 0; k < K; k++) {
                double a = at ? A[k * lda + i] : A[i * lda + k], b = bt ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b, sa += fabs(a * b);
            }
            double v = c->alpha * s + (c->beta != 0 ? c->beta * (double)C[i * ldc + j] : 0.0);
            sa = fabs(c->alpha) * sa + fabs(c->beta * C[i * ldc + j]);
            if (c->bias) v += c->bias == 1 ? bias[j] : bias[i], sa += 1;
            if (c->res == 1) v += R[i * ldr + j], sa += 1;
            v = ref_act(v, c->act, aa, ab);
            if (c->res == 2) v += R[i * ldr + j], sa += 1;
            ref[i * N + j] = v;
            sc[i * N + j] = sa;
        }
    lt_epilogue ep;
    memset(&ep, 0, sizeof ep);
    ep.bias = c->bias ? bias : NULL;
    ep.bias_per_row = c->bias == 2;
    ep.act = c->act, ep.act_a = aa, ep.act_b = ab;
    ep.residual = c->res ? R : NULL;
    ep.ldr = ldr;
    ep.residual_after_act = c->res == 2;
    const float *a = A, *b = B;
    float *ap = NULL, *bp = NULL;
    if (c->a_mode == LT_GEMM_PACKED) {
        ap = malloc(sizeof(float) * (size_t)lt_sgemm_packed_a_size(M, K));
        lt_sgemm_pack_a(ap, A, lda, LT_GEMM_N, M, K);
        a = ap;
    }
    if (c->b_mode == LT_GEMM_PACKED) {
        bp = malloc(sizeof(float) * (size_t)lt_sgemm_packed_b_size(K, N));
        lt_sgemm_pack_b(bp, B, ldb, LT_GEMM_N, K, N);
        b = bp;
    }
    int64_t wsf = c->ws == 0 ? lt_sgemm_ws_floats(M, N, K, lt_nthreads()) : c->ws == 1 ? 0 : 1000;
    float *ws = wsf ? malloc(sizeof(float) * (size_t)wsf) : NULL;
    int no_ep = !c->bias && !c->res && c->act == LT_ACT_NONE && (M + N + K) % 2 == 0;
    lt_sgemm(M, N, K, a, lda, c->a_mode, b, ldb, c->b_mode, C, ldc, c->alpha, c->beta, no_ep ? NULL : &ep, ws, wsf);
    for (int64_t i = 0; i < M; i++) memcpy(got + i * N, C + i * ldc, sizeof(float) * (size_t)N);
    char what[200];
    snprintf(what, sizeof what, "gemm M=%lld N=%lld K=%lld a=%d b=%d alpha=%g beta=%g bias=%d res=%d act=%d ws=%d",
             (long long)M, (long long)N, (long long)K, c->a_mode, c->b_mode, c->alpha, c->beta, c->bias, c->res,
             c->act, c->ws);
    check(what, got, ref, sc, M * N);
    free(A), free(B), free(C), free(bias), free(R), free(ref), free(sc), free(got), free(ap), free(bp), free(ws);
}

static void test_gemm_shapes(void) {
    static const int64_t dims[] = {1, 7, 33, 257};
    for (int mi = 0; mi < 4; mi++)
        for (int ni = 0; ni < 4; ni++)
            for (int ki = 0; ki < 4; ki++) {
                int64_t M = dims[mi], N = dims[ni], K = dims[ki];
                int big = (M == 257) + (N == 257) + (K == 257);
                for (int am = 0; am < 3; am++)
                    for (int bm = 0; bm < 3; bm++) {
                        if (big >= 2 && (am + bm) % 3 != 0) continue; /* keep the runtime short */
                        gcase c = {M, N, K, am, bm, 1.0f, 0.0f, 0, 0, 0, 0};
                        run_gemm(&c);
                    }
            }
    /* tails around the register tile and the blocking: M, N near multiples of MR, NR; K across KC */
    static const int64_t tails[][3] = {{8, 48, 64}, {9, 49, 300}, {6, 16, 256}, {5, 17, 257}, {16, 96, 512},
                                       {13, 95, 513}, {48, 800, 40}, {100, 1600, 20}, {3, 2000, 3}};
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++)
        for (int am = 0; am < 3; am += 2)
            for (int bm = 0; bm < 3; bm += 2) {
                gcase c = {tails[t][0], tails[t][1], tails[t][2], am, bm, 1.0f, 0.0f, 0, 0, 0, (int)(t % 3)};
                run_gemm(&c);
            }
    /* attention-like (A read in place; B transposed through the 16x16 register transpose, or read
     * in place when its rows are whole vectors) and small-N shapes, every operand mode */
    static const int64_t small[][3] = {{128, 128, 64}, {128, 64, 128}, {49, 64, 512}, {24, 32, 300}, {17, 80, 33}};
    for (size_t t = 0; t < sizeof small / sizeof small[0]; t++)
        for (int am = 0; am < 3; am++)
            for (int bm = 0; bm < 3; bm++) {
                gcase c = {small[t][0], small[t][1], small[t][2], am, bm, 1.0f, 0.0f, (int)(t % 3), 0, 0, 0};
                run_gemm(&c);
            }
}

static void test_gemm_epilogues(void) {
    static const int64_t shapes[][3] = {{33, 57, 70}, {8, 48, 300}, {70, 20, 9}};
    for (size_t s = 0; s < 3; s++)
        for (int act = 0; act <= LT_ACT_HARD_SIGMOID; act++)
            for (int bias = 0; bias < 3; bias++)
                for (int res = 0; res < 3; res++) {
                    if ((act + bias + res + (int)s) % 2) continue; /* half of the combinations */
                    gcase c = {shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 3), (int)((s + 1) % 3),
                               1.0f, 0.0f, bias, res, act, 0};
                    run_gemm(&c);
                }
    gcase ab[] = {
        {33, 50, 300, 0, 2, 0.5f, 1.0f, 1, 1, LT_ACT_RELU, 0},
        {33, 50, 300, 1, 0, -2.0f, 0.25f, 2, 2, LT_ACT_CLIP, 0},
        {7, 7, 7, 2, 1, 1.0f, 1.0f, 0, 0, LT_ACT_NONE, 1},
        {20, 30, 0, 0, 0, 1.0f, 0.5f, 1, 1, LT_ACT_SIGMOID, 0}, /* K = 0: epilogue on beta*C */
        {20, 30, 0, 0, 0, 1.0f, 0.0f, 2, 0, LT_ACT_TANH, 1},
    };
    for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++) run_gemm(&ab[i]);
}

/* a pre-packed A with at most 12 columns (the narrow path: rows as the vector, four panels at a
 * time; a group cut short at M's end, K across blocks), B plain or transposed, with each epilogue */
static void test_gemm_narrow(void) {
    static const int64_t ms[] = {32, 33, 70, 1000}, ks[] = {1, 9, 300, 600};
    for (int64_t n = 1; n <= 13; n++)
        for (int mi = 0; mi < 4; mi++) {
            int64_t M = ms[mi], K = ks[(n + mi) % 4];
            int bias = (int)((n + mi) % 3), res = (int)(n % 3), act = (int)((n * 3 + mi) % (LT_ACT_HARD_SWISH + 1));
            gcase c = {M, n, K, LT_GEMM_PACKED, (int)(n % 2), 1.0f, 0.0f, bias, res, act, 0};
            run_gemm(&c);
        }
    gcase ab[] = {{40, 4, 50, LT_GEMM_PACKED, LT_GEMM_N, 0.5f, 1.0f, 2, 1, LT_ACT_RELU, 0},
                  {40, 7, 50, LT_GEMM_PACKED, LT_GEMM_T, -2.0f, 0.25f, 1, 2, LT_ACT_CLIP, 0}};
    for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++) run_gemm(&ab[i]);
}

/* batched: A broadcast over the first level, B over the second, residual per batch */
static void test_gemm_batched(void) {
    const int64_t b1 = 2, b2 = 3, M = 19, N = 37, K = 29;
    float *A = rand_buf(b2 * M * K), *B = rand_buf(b1 * K * N), *C = rand_buf(b1 * b2 * M * N);
    float *R = rand_buf(b1 * b2 * M * N), *bias = rand_buf(N);
    double *ref = malloc(sizeof(double) * (size_t)(b1 * b2 * M * N)), *sc = malloc(sizeof(double) * (size_t)(b1 * b2 * M * N));
    for (int64_t x1 = 0; x1 < b1; x1++)
        for (int64_t x2 = 0; x2 < b2; x2++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0, sa = 0;
                    for (int64_t k = 0; k < K; k++) {
                        /* A transposed: [K, M] per x2; B plain [K, N] per x1 */
                        double a = A[x2 * M * K + k * M + i], b = B[x1 * K * N + k * N + j];
                        s += a * b, sa += fabs(a * b);
                    }
                    int64_t o = ((x1 * b2 + x2) * M + i) * N + j;
                    double v = 0.125 * s + bias[j] + R[o];
                    ref[o] = v > 0 ? v : 0;
                    sc[o] = 0.125 * sa + 2;
                }
    lt_epilogue ep = {bias, 0, LT_ACT_RELU, 0, 0, R, N, 0};
    int64_t wsf = lt_sgemm_ws_floats(M, N, K, lt_nthreads());
    float *ws = malloc(sizeof(float) * (size_t)wsf);
    lt_sgemm_batched(b1, b2, M, N, K, A, M, LT_GEMM_T, 0, M * K, B, N, LT_GEMM_N, K * N, 0, C, N, b2 * M * N, M * N,
                     0.125f, 0.0f, &ep, b2 * M * N, M * N, ws, wsf);
    check("gemm batched (broadcast strides)", C, ref, sc, b1 * b2 * M * N);
    /* the flat entry point, same problem */
    float *C2 = rand_buf(b1 * b2 * M * N);
    lt_gemm_f32(C2, A, B, bias, R, ws, b1, b2, M, N, K, M, LT_GEMM_T, 0, M * K, N, LT_GEMM_N, K * N, 0, N,
                b2 * M * N, M * N, 1, 1, N, b2 * M * N, M * N, LT_ACT_RELU, 0.0f, 0.0f, 0.125f, 0.0f, wsf);
    check("lt_gemm_f32 batched", C2, ref, sc, b1 * b2 * M * N);
    free(A), free(B), free(C), free(C2), free(R), free(bias), free(ref), free(sc), free(ws);
}

/* ---- convolution ---- */
typedef struct ccase {
    int64_t N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G;
    int bias, res, act; /* res: 0 none, 1 before act, 2 after */
    int ws;             /* 0 full, 1 none */
} ccase;

static void run_conv(const ccase *c) {
    lt_conv2d_geom g;
    lt_conv2d_geom_init_(&g, c->N, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->SH, c->SW, c->PH0, c->PW0, c->PH1,
                         c->PW1, c->DH, c->DW, c->G);
    int64_t OH = g.OH, OW = g.OW, cg = c->C / c->G, ocg = c->OC / c->G, ny = c->N * c->OC * OH * OW;
    float *x = rand_buf(c->N * c->C * c->H * c->W), *w = rand_buf(c->OC * cg * c->KH * c->KW);
    float *bias = rand_buf(c->OC), *R = rand_buf(ny), *y = rand_buf(ny);
    double *ref = malloc(sizeof(double) * (size_t)(ny + 1)), *sc = malloc(sizeof(double) * (size_t)(ny + 1));
    float aa = c->act == LT_ACT_CLIP ? 0.0f : 0.1f, ab = 6.0f;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t oc = 0; oc < c->OC; oc++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t gi = oc / ocg;
                    double s = 0, sa = 0;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t ih = oh * g.SH - c->PH0 + kh * g.DH, iw = ow * g.SW - c->PW0 + kw * g.DW;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                double t = (double)w[((oc * cg + ci) * c->KH + kh) * c->KW + kw] *
                                           x[((n * c->C + gi * cg + ci) * c->H + ih) * c->W + iw];
                                s += t, sa += fabs(t);
                            }
                    int64_t o = ((n * c->OC + oc) * OH + oh) * OW + ow;
                    if (c->bias) s += bias[oc], sa += 1;
                    if (c->res == 1) s += R[o], sa += 1;
                    s = ref_act(s, c->act, aa, ab);
                    if (c->res == 2) s += R[o], sa += 1;
                    ref[o] = s;
                    sc[o] = sa;
                }
    float *wp = malloc(sizeof(float) * (size_t)lt_conv2d_packed_size(c->OC, c->C, c->KH, c->KW, c->G));
    lt_conv2d_pack(wp, w, c->OC, c->C, c->KH, c->KW, c->G);
    int64_t wsf = c->ws ? 0
                        : lt_conv2d_ws_floats(c->N, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->SH, c->SW, c->PH0,
                                              c->PW0, c->PH1, c->PW1, c->DH, c->DW, c->G, lt_nthreads());
    float *ws = wsf ? malloc(sizeof(float) * (size_t)wsf) : NULL;
    char what[240];
    snprintf(what, sizeof what,
             "conv N=%lld C=%lld %lldx%lld OC=%lld k=%lldx%lld s=%lld,%lld p=%lld,%lld,%lld,%lld d=%lld,%lld G=%lld "
             "bias=%d res=%d act=%d ws=%d",
             (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->OC, (long long)c->KH,
             (long long)c->KW, (long long)c->SH, (long long)c->SW, (long long)c->PH0, (long long)c->PW0,
             (long long)c->PH1, (long long)c->PW1, (long long)c->DH, (long long)c->DW, (long long)c->G, c->bias,
             c->res, c->act, c->ws);
    if ((c->N + c->C + c->OC) % 2) {
        lt_epilogue ep = {c->bias ? bias : NULL, 0, c->act, aa, ab, c->res ? R : NULL, 0, c->res == 2};
        lt_conv2d(y, x, wp, c->N, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->SH, c->SW, c->PH0, c->PW0, c->PH1, c->PW1,
                  c->DH, c->DW, c->G, &ep, ws, wsf);
    } else {
        lt_conv2d_f32(y, x, wp, bias, R, ws, c->N, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->SH, c->SW, c->PH0,
                      c->PW0, c->PH1, c->PW1, c->DH, c->DW, c->G, c->bias, c->res, c->act, aa, ab, wsf);
    }
    check(what, y, ref, sc, ny);
    free(x), free(w), free(bias), free(R), free(y), free(ref), free(sc), free(wp), free(ws);
}

static void test_conv(void) {
    static const ccase cs[] = {
        /* N  C   H   W  OC KH KW SH SW PH0 PW0 PH1 PW1 DH DW G  bias res act ws */
        {1, 16, 14, 14, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, LT_ACT_RELU, 0},  /* 1x1 direct GEMM */
        {2, 16, 9, 11, 20, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 0, LT_ACT_NONE, 0},   /* 1x1 stride 2 */
        {1, 8, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, LT_ACT_RELU, 0},   /* 3x3 pad 1 */
        {2, 7, 13, 10, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, LT_ACT_CLIP, 0},    /* 3x3 s2 */
        {1, 3, 23, 23, 10, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, LT_ACT_RELU, 0},   /* stem 7x7 s2 */
        {1, 5, 15, 16, 6, 3, 3, 1, 2, 2, 0, 1, 3, 2, 2, 1, 1, 0, LT_ACT_SIGMOID, 0}, /* dilation, odd pads */
        {1, 6, 10, 10, 9, 2, 4, 3, 1, 0, 2, 1, 0, 1, 3, 1, 0, 1, LT_ACT_NONE, 1},    /* ws none */
        {2, 8, 9, 9, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, LT_ACT_NONE, 0},     /* grouped */
        {1, 16, 7, 7, 16, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 4, 1, 2, LT_ACT_GELU, 0},    /* grouped 4 */
        {1, 32, 40, 37, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, 1, 1, LT_ACT_CLIP, 0}, /* depthwise 3x3 */
        {2, 24, 33, 30, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24, 1, 0, LT_ACT_RELU, 0}, /* depthwise s2 */
        {1, 8, 300, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 0, 2, LT_ACT_NONE, 0},    /* depthwise tall */
        {1, 4, 6, 600, 4, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 4, 1, 0, LT_ACT_TANH, 0},    /* depthwise wide (chunks) */
        {1, 6, 12, 12, 12, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 6, 1, 1, LT_ACT_NONE, 0},   /* depthwise 5x5, mult 2 */
        {1, 5, 11, 11, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 5, 0, 0, LT_ACT_LEAKY_RELU, 0}, /* depthwise dilated */
        {1, 4, 3, 3, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 4, 1, 0, LT_ACT_NONE, 0},      /* depthwise, one pixel */
        {1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, LT_ACT_RELU, 0},  /* ResNet-like */
        {1, 130, 7, 7, 50, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, LT_ACT_NONE, 1},   /* 1x1, K tail */
        /* depthwise 3x3 fast path (AVX-512): band widths 1..7 vectors and several bands, strides
         * 1 and 2, pads 0..2, odd sizes, multipliers, every epilogue placement */
        {1, 5, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, 1, 0, LT_ACT_CLIP, 0},       /* MobileNet 7x7 */
        {1, 3, 14, 14, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3, 1, 1, LT_ACT_CLIP, 0},     /* 14 -> 7, s2 */
        {1, 2, 9, 112, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, LT_ACT_RELU, 0},     /* one full band */
        {1, 2, 6, 113, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 0, LT_ACT_NONE, 0},     /* band + 1 column */
        {2, 3, 5, 250, 3, 3, 3, 1, 1, 0, 2, 2, 0, 1, 1, 3, 1, 1, LT_ACT_LEAKY_RELU, 0}, /* 3 bands, odd pads */
        {1, 2, 11, 229, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 2, LT_ACT_CLIP, 0},    /* s2, 2 bands */
        {1, 4, 10, 47, 8, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 4, 0, 0, LT_ACT_NONE, 0},     /* s2 no pad, mult 2 */
        {1, 3, 8, 33, 3, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 3, 1, 2, LT_ACT_SIGMOID, 0},   /* s2 pad 2, act after */
        {1, 3, 2, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, LT_ACT_GELU, 0},       /* 2x2 image */
        {1, 3, 1, 17, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 2, LT_ACT_HARD_SIGMOID, 0}, /* one row */
        {1, 2, 20, 16, 2, 3, 3, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1, 2, LT_ACT_TANH, 0},     /* uneven pads */
        {1, 2, 5, 90, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, LT_ACT_CLIP, 0},      /* 6 vectors: 7-wide */
        {1, 2, 7, 150, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, 1, 0, LT_ACT_NONE, 0},     /* s2, 5 vectors */
        /* depthwise on small planes, each instruction set's path (AVX-512: tiny, narrow and "same"
         * planes; otherwise the row path): strides 1, 2 and 3, dilations, uneven and one-sided pads,
         * multipliers, taps wholly in the padding (a 5x5 kernel on 2x2 and 1x1 planes), tall narrow
         * planes, every epilogue placement */
        {1, 6, 8, 8, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 6, 1, 1, LT_ACT_HARD_SWISH, 0},  /* 5x5 on 8x8 */
        {2, 4, 4, 4, 8, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 4, 1, 2, LT_ACT_RELU, 0},       /* 5x5 on 4x4, mult 2 */
        {1, 7, 2, 2, 7, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 7, 1, 1, LT_ACT_CLIP, 0},       /* 5x5 on 2x2 */
        {1, 3, 1, 1, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 2, LT_ACT_NONE, 0},       /* 3x3 on 1x1, mult 2 */
        {1, 5, 16, 16, 5, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 5, 1, 0, LT_ACT_CLIP, 0},     /* 5x5 s2 */
        {1, 3, 9, 7, 3, 3, 3, 2, 1, 1, 0, 0, 2, 1, 1, 3, 0, 1, LT_ACT_NONE, 0},       /* s 2x1, uneven pads */
        {1, 4, 13, 11, 4, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 4, 1, 2, LT_ACT_SIGMOID, 0},  /* dilated s2 */
        {1, 3, 10, 7, 3, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1, 3, 1, 0, LT_ACT_TANH, 0},      /* 7x7 */
        {1, 3, 6, 9, 3, 4, 2, 1, 3, 0, 1, 3, 0, 1, 2, 3, 1, 1, LT_ACT_LEAKY_RELU, 0}, /* 4x2, s 1x3, odd pads */
        {1, 2, 300, 8, 2, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2, 1, 1, LT_ACT_NONE, 0},     /* tall, 8 columns */
        {1, 2, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, LT_ACT_GELU, 0},       /* 9x9 */
        /* direct convolution (AVX-512, conv_direct.h): channel-major on larger images, pixel-major
         * on small ones with 16-channel weight panels; x as the slab for 1x1 */
        {1, 20, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, LT_ACT_RELU, 0},    /* pixel-major 3x3 */
        {1, 40, 7, 7, 48, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 2, LT_ACT_CLIP, 0},    /* pixel 1x1: x slab */
        {2, 24, 9, 9, 80, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, LT_ACT_GELU, 0},    /* pixel s2, 5 panels */
        {1, 32, 6, 5, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 2, LT_ACT_SIGMOID, 0}, /* pixel, groups */
        {1, 16, 3, 3, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, LT_ACT_LEAKY_RELU, 0}, /* 9 pixels */
        {1, 12, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, LT_ACT_NONE, 0},  /* 14x14 */
        {1, 8, 30, 31, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, LT_ACT_RELU, 0},   /* channel-major, 16-wide */
        {1, 6, 29, 33, 24, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, LT_ACT_TANH, 0},   /* s2 5x5, 8-wide */
        {1, 10, 26, 27, 16, 3, 3, 2, 2, 1, 1, 1, 1, 2, 2, 1, 1, 0, LT_ACT_NONE, 0},  /* s2 dilated */
        {1, 300, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, LT_ACT_RELU, 0},   /* K blocks, pixel */
        {1, 300, 20, 20, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, LT_ACT_NONE, 0},   /* K blocks, channel */
        {1, 64, 14, 14, 64, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 1, LT_ACT_RELU, 0},  /* 1x1 s2 (downsample) */
        /* 1x1 pixel-major on 2 threads (>= 2 MFLOP): pixel ranges (2 channel groups), ragged 7x7 */
        {1, 384, 14, 14, 96, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, LT_ACT_CLIP, 0},
        {1, 960, 7, 7, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 2, LT_ACT_RELU, 0},
        /* channel groups of 3 panels then 1 (10 panels) */
        {1, 576, 7, 7, 160, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, LT_ACT_NONE, 0},
        {1, 3, 40, 40, 16, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 0, LT_ACT_RELU, 0},   /* stem-like */
        {1, 3, 33, 33, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, LT_ACT_CLIP, 0},   /* MobileNet stem */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv(&cs[i]);
}

/* ---- 8-bit integer GEMM and convolution (gemm_i8.h): exact ---- */
static uint8_t *rand_bytes(int64_t n) {
    uint8_t *p = malloc((size_t)(n > 0 ? n : 1));
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (int64_t i = 0; i < n; i++) {
        g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(g_rng >> 56);
    }
    return p;
}
static int64_t i8_at(const uint8_t *p, int64_t i, int s8) { return s8 ? (int64_t)(int8_t)p[i] : (int64_t)p[i]; }

static void check_i32(const char *what, const int32_t *got, const int32_t *ref, int64_t n) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != ref[i]) {
            if (bad < 3) fprintf(stderr, "FAIL %s [%lld]: got %d want %d\n", what, (long long)i, got[i], ref[i]);
            bad++;
        }
    g_checks++;
    if (bad) g_fail++;
}

typedef struct i8case {
    int64_t M, N, K;
    int as8, bs8;       /* int8 (1) or uint8 (0) operands */
    int za_mode, zb_mode;
    int zext;           /* zero points at their extremes (0 / 255, -128 / 127) instead of random */
    int packed, ws;     /* B pre-packed; ws 0 full, 1 none, 2 tiny */
} i8case;

static void run_gemm_i8(const i8case *c) {
    int64_t M = c->M, N = c->N, K = c->K, lda = K + 3, ldb = N + 1, ldc = N + 2;
    uint8_t *A = rand_bytes(M * lda), *B = rand_bytes(K * ldb), *za = rand_bytes(M), *zb = rand_bytes(N);
    if (c->zext) {
        za[0] = c->as8 ? 0x80 : 255; /* -128 / 255 */
        for (int64_t j = 0; j < N; j++) zb[j] = c->bs8 ? (j % 2 ? 0x7f : 0x80) : (j % 2 ? 0 : 255);
    }
    int32_t *C = (int32_t *)rand_bytes(4 * M * ldc), *got = malloc(sizeof(int32_t) * (size_t)(M * N + 1));
    int32_t *ref = malloc(sizeof(int32_t) * (size_t)(M * N + 1));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            int64_t s = 0, a0 = c->za_mode ? i8_at(za, c->za_mode == LT_ZP_VECTOR ? i : 0, c->as8) : 0;
            int64_t b0 = c->zb_mode ? i8_at(zb, c->zb_mode == LT_ZP_VECTOR ? j : 0, c->bs8) : 0;
            for (int64_t k = 0; k < K; k++) s += (i8_at(A, i * lda + k, c->as8) - a0) * (i8_at(B, k * ldb + j, c->bs8) - b0);
            ref[i * N + j] = (int32_t)(uint32_t)(uint64_t)s;
        }
    int8_t *bp = NULL;
    const void *b = B;
    if (c->packed) {
        bp = malloc((size_t)lt_gemm_i8_packed_b_size(K, N));
        lt_gemm_i8_pack_b(bp, B, K, N, ldb);
        b = bp;
    }
    int64_t wsn = c->ws == 0 ? LT_GEMM_I8_WS_PER_THREAD * (lt_nthreads() > 0 ? lt_nthreads() : 1) : c->ws == 1 ? 0 : 3000;
    int16_t *ws = wsn ? malloc(sizeof(int16_t) * (size_t)wsn) : NULL;
    lt_gemm_i8(C, A, b, za, zb, ws, M, N, K, lda, c->as8, c->za_mode, ldb, c->bs8, c->zb_mode, c->packed, ldc, wsn);
    for (int64_t i = 0; i < M; i++) memcpy(got + i * N, C + i * ldc, sizeof(int32_t) * (size_t)N);
    char what[200];
    snprintf(what, sizeof what, "gemm_i8 M=%lld N=%lld K=%lld a=%s b=%s za=%d zb=%d zext=%d packed=%d ws=%d",
             (long long)M, (long long)N, (long long)K, c->as8 ? "s8" : "u8", c->bs8 ? "s8" : "u8", c->za_mode,
             c->zb_mode, c->zext, c->packed, c->ws);
    check_i32(what, got, ref, M * N);
    free(A), free(B), free(za), free(zb), free(C), free(got), free(ref), free(bp), free(ws);
}

static void test_gemm_i8(void) {
    static const int64_t Ms[] = {1, 5, 6, 7, 33}, Ns[] = {1, 8, 15, 16, 17, 40}, Ks[] = {1, 2, 7, 64, 513};
    int v = 0;
    for (int mi = 0; mi < 5; mi++)
        for (int ni = 0; ni < 6; ni++)
            for (int ki = 0; ki < 5; ki++, v++) {
                i8case c = {Ms[mi], Ns[ni], Ks[ki], v % 2, v / 2 % 2, v % 3 ? LT_ZP_SCALAR : LT_ZP_NONE,
                            v % 3, v % 5 == 0, v / 3 % 2, v % 7 == 0 ? 1 : v % 11 == 0 ? 2 : 0};
                run_gemm_i8(&c);
            }
    static const i8case big[] = {
        {24, 70, 3072, 0, 1, LT_ZP_SCALAR, LT_ZP_VECTOR, 1, 1, 0},  /* u8 x s8, K 3072, packed */
        {9, 40, 3072, 0, 0, LT_ZP_SCALAR, LT_ZP_SCALAR, 1, 1, 0},   /* u8 x u8 (zero points 255 / 0) */
        {7, 33, 3071, 1, 1, LT_ZP_SCALAR, LT_ZP_VECTOR, 1, 0, 0},   /* s8 x s8, run-time B */
        {3, 17, 40000, 0, 1, LT_ZP_SCALAR, LT_ZP_VECTOR, 1, 1, 0},  /* int32 sums wrap */
        {2, 5, 40001, 0, 0, LT_ZP_SCALAR, LT_ZP_SCALAR, 1, 0, 1},   /* wrap, run-time B, no workspace */
        {130, 300, 700, 0, 1, LT_ZP_SCALAR, LT_ZP_NONE, 0, 1, 0},   /* several chunks (threads) */
        {64, 600, 96, 1, 0, LT_ZP_VECTOR, LT_ZP_VECTOR, 0, 1, 0},   /* per-row za */
    };
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) run_gemm_i8(&big[i]);
}

typedef struct ci8case {
    int64_t N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G;
    int xs8, ws8, zx_mode, zw_mode, ws;
} ci8case;

static void run_conv_i8(const ci8case *c) {
    int64_t G = c->G, cg = c->C / G, ocg = c->OC / G, khw = c->KH * c->KW;
    int64_t OH = (c->H + c->PH0 + c->PH1 - c->DH * (c->KH - 1) - 1) / c->SH + 1;
    int64_t OW = (c->W + c->PW0 + c->PW1 - c->DW * (c->KW - 1) - 1) / c->SW + 1, P = OH * OW;
    int64_t nx = c->N * c->C * c->H * c->W, nw = c->OC * cg * khw, ny = c->N * c->OC * P;
    uint8_t *x = rand_bytes(nx), *w = rand_bytes(nw), *zx = rand_bytes(1), *zw = rand_bytes(c->OC);
    int32_t *y = (int32_t *)rand_bytes(4 * ny), *ref = malloc(sizeof(int32_t) * (size_t)ny);
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t oc = 0; oc < c->OC; oc++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t s = 0, g = oc / ocg, x0 = c->zx_mode ? i8_at(zx, 0, c->xs8) : 0;
                    int64_t w0 = c->zw_mode ? i8_at(zw, c->zw_mode == LT_ZP_VECTOR ? oc : 0, c->ws8) : 0;
                    for (int64_t ic = 0; ic < cg; ic++)
                        for (int64_t kh = 0; kh < c->KH; kh++)
                            for (int64_t kw = 0; kw < c->KW; kw++) {
                                int64_t ih = oh * c->SH + kh * c->DH - c->PH0, iw = ow * c->SW + kw * c->DW - c->PW0;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                int64_t xv = i8_at(x, ((n * c->C + g * cg + ic) * c->H + ih) * c->W + iw, c->xs8) - x0;
                                s += xv * (i8_at(w, (oc * cg + ic) * khw + kh * c->KW + kw, c->ws8) - w0);
                            }
                    ref[((n * c->OC + oc) * OH + oh) * OW + ow] = (int32_t)(uint32_t)(uint64_t)s;
                }
    int8_t *wp = malloc((size_t)lt_conv2d_i8_packed_size(c->OC, c->C, c->KH, c->KW, G, P));
    lt_conv2d_i8_pack(wp, w, c->OC, c->C, c->KH, c->KW, G, P);
    int dw = G > 1 && G == c->C && c->OC % c->C == 0;
    int64_t per = dw ? LT_CONV_I8_DW_WS_PER_THREAD(c->H + c->PH0 + c->PH1, c->W + c->PW0 + c->PW1, OW)
                     : LT_GEMM_I8_WS_PER_THREAD;
    int64_t wsn = c->ws ? 0 : per * (lt_nthreads() > 0 ? lt_nthreads() : 1);
    int16_t *ws = wsn ? malloc(sizeof(int16_t) * (size_t)wsn) : NULL;
    lt_conv2d_i8(y, x, wp, zx, zw, ws, c->N, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->SH, c->SW, c->PH0, c->PW0,
                 c->PH1, c->PW1, c->DH, c->DW, G, c->xs8, c->ws8, c->zx_mode, c->zw_mode, wsn);
    char what[240];
    snprintf(what, sizeof what, "conv_i8 N=%lld C=%lld %lldx%lld OC=%lld k%lldx%lld s%lldx%lld p%lld,%lld,%lld,%lld "
             "d%lldx%lld G=%lld x=%s w=%s zx=%d zw=%d ws=%d", (long long)c->N, (long long)c->C, (long long)c->H,
             (long long)c->W, (long long)c->OC, (long long)c->KH, (long long)c->KW, (long long)c->SH, (long long)c->SW,
             (long long)c->PH0, (long long)c->PW0, (long long)c->PH1, (long long)c->PW1, (long long)c->DH,
             (long long)c->DW, (long long)G, c->xs8 ? "s8" : "u8", c->ws8 ? "s8" : "u8", c->zx_mode, c->zw_mode, c->ws);
    check_i32(what, y, ref, ny);
    free(x), free(w), free(zx), free(zw), free(y), free(ref), free(wp), free(ws);
}

static void test_conv_i8(void) {
    enum { S = LT_ZP_SCALAR, V = LT_ZP_VECTOR, Z = LT_ZP_NONE };
    static const ci8case cs[] = {
        /* N  C   H   W  OC KH KW SH SW PH0 PW0 PH1 PW1 DH DW G  xs8 ws8 zx zw ws */
        {1, 16, 14, 14, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, S, V, 0},   /* 1x1: x as the matrix */
        {2, 16, 9, 11, 20, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1, 0, 0, S, S, 0},    /* 1x1 stride 2 */
        {1, 8, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, S, V, 0},    /* 3x3 pad 1 */
        {2, 7, 13, 10, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 1, S, Z, 0},     /* 3x3 s2 */
        {1, 3, 23, 23, 10, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1, 0, 1, S, V, 0},    /* stem 7x7 s2 */
        {1, 5, 15, 16, 6, 3, 3, 1, 2, 2, 0, 1, 3, 2, 2, 1, 1, 0, S, V, 0},     /* dilation, odd pads */
        {1, 6, 10, 10, 9, 2, 4, 3, 1, 0, 2, 1, 0, 1, 3, 1, 0, 0, Z, S, 1},     /* no workspace */
        {2, 8, 9, 9, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 0, 1, S, V, 0},      /* grouped */
        {1, 16, 7, 7, 16, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 4, 1, 1, S, V, 0},     /* grouped 4, 16 pixels */
        {1, 32, 20, 17, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, 0, 1, S, V, 0},  /* depthwise 3x3 */
        {2, 24, 13, 14, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24, 0, 0, S, S, 0},  /* depthwise s2 */
        {1, 6, 12, 12, 12, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 6, 1, 1, S, V, 0},    /* depthwise 5x5, mult 2 */
        {1, 5, 11, 11, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 5, 0, 1, S, V, 1},     /* depthwise dilated, no ws */
        {1, 64, 16, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, S, V, 0},   /* ResNet-like */
        {1, 130, 7, 7, 50, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, S, V, 0},    /* 1x1, K tail */
        {1, 300, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, S, S, 0},  /* K blocks */
        {1, 128, 4, 4, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 1, S, V, 0},    /* 4 pixels: pixels as rows */
        {1, 512, 2, 2, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, S, V, 0},    /* 4 pixels, K 4608 */
        {2, 64, 3, 3, 70, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, 1, 0, S, V, 0},     /* 9 pixels 1x1, groups */
        {1, 3, 33, 33, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 1, S, V, 0},    /* MobileNet stem */
        {1, 5, 3, 4, 12, 3, 3, 2, 1, 1, 0, 1, 2, 1, 2, 1, 1, 0, S, V, 0},      /* 4 pixels, odd K, dilated */
        {1, 9, 7, 6, 20, 3, 3, 2, 2, 0, 1, 2, 0, 1, 1, 1, 0, 1, S, S, 0},      /* 12 pixels, s2, odd pads */
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_conv_i8(&cs[i]);
}

/* ---- activation functions against libm ---- */
static void test_act_math(void) {
    enum { NP = 4001 };
    float got[NP];
    double ref[NP], sc[NP];
    struct { const char *name; float (*f)(float); double (*r)(double); double lo, hi; } fs[] = {
        {"exp", lt_vexpf, exp, -105, 88.7}, {"tanh", lt_vtanhf, tanh, -12, 12},
        {"sigmoid", lt_vsigmoidf, NULL, -30, 30}, {"gelu", lt_vgeluf, NULL, -12, 12},
    };
    for (size_t f = 0; f < sizeof fs / sizeof fs[0]; f++) {
        for (int i = 0; i < NP; i++) {
            double x = fs[f].lo + (fs[f].hi - fs[f].lo) * i / (NP - 1);
            if (i % 97 == 3) x = 1e-3 * (i - 2000) / 2000.0; /* tiny arguments */
            float xf = (float)x;
            got[i] = fs[f].f(xf);
            ref[i] = fs[f].r ? fs[f].r(xf) : f == 2 ? ref_act(xf, LT_ACT_SIGMOID, 0, 0) : ref_act(xf, LT_ACT_GELU, 0, 0);
            sc[i] = 0; /* pure relative error 1e-4 */
            if (fabs(ref[i]) < 1e-37) sc[i] = 1e-30; /* underflow region */
        }
        char what[64];
        snprintf(what, sizeof what, "activation %s vs libm", fs[f].name);
        check(what, got, ref, sc, NP);
    }
    float nan = __builtin_nanf("");
    g_checks++;
    if (lt_vexpf(nan) == lt_vexpf(nan) || lt_vtanhf(nan) == lt_vtanhf(nan) || lt_vexpf(100.0f) != __builtin_inff()) {
        fprintf(stderr, "FAIL activation special values (NaN / overflow)\n");
        g_fail++;
    }
}

static void run_all(const char *label) {
    int f0 = g_fail, c0 = g_checks;
    test_act_math();
    test_gemm_shapes();
    test_gemm_epilogues();
    test_gemm_narrow();
    test_gemm_batched();
    test_conv();
    test_gemm_i8();
    test_conv_i8();
    printf("  %s [%s, MR=%d NR=%d, int8 %s, threads=%d]: %d checks, %d failed\n", label, LT_GEMM_ISA, LT_GEMM_MR,
           LT_GEMM_NR, LT_GI8_ISA, lt_nthreads(), g_checks - c0, g_fail - f0);
}

/* Rebuild this file with `flags` and run it with --child; 0 ok, 1 failed, -1 skipped. */
static int child(const char *cc, const char *flags, const char *dir) {
    char src[1024], root[1024], cmd[4096];
    snprintf(src, sizeof src, "%s", __FILE__);
    snprintf(root, sizeof root, "%s", __FILE__);
    char *p = strstr(root, "tests/unit/test_gemm.c");
    if (!p) {
        printf("  skipped %s: source path %s unknown\n", flags, src);
        return -1;
    }
    *p = 0;
    snprintf(cmd, sizeof cmd, "%s %s -std=gnu11 -Wall -Wextra -Werror -I%ssrc %s -o %s/child -lm", cc, flags,
             root[0] ? root : "./", src, dir);
    if (system(cmd) != 0) {
        printf("FAIL: could not build the child: %s\n", cmd);
        return 1;
    }
    snprintf(cmd, sizeof cmd, "%s/child --child", dir);
    int rc = system(cmd);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0) {
#ifdef _OPENMP
        lathe_set_threads(1);
        run_all("child");
        lathe_set_threads(2);
        run_all("child");
#else
        run_all("child");
#endif
        return g_fail ? 1 : 0;
    }
    printf("test_gemm: in-process build\n");
    run_all("in-process");
    int failed = g_fail != 0;
    if (argc > 1 && strcmp(argv[1], "--no-child") == 0) goto done;
    if (system("cc --version > /dev/null 2>&1") != 0) {
        printf("  skipped the -march=native and AVX2 builds: no `cc` on PATH\n");
        goto done;
    }
    char dir[] = "/tmp/lathe_test_gemm_XXXXXX";
    if (!mkdtemp(dir)) {
        printf("FAIL: mkdtemp\n");
        failed = 1;
        goto done;
    }
    printf("test_gemm: -O3 -march=native -fopenmp build (the CPU backend's flags)\n");
    fflush(stdout);
    if (child("cc", "-O3 -march=native -fopenmp", dir) == 1) failed = 1;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        printf("test_gemm: -O2 -mavx2 -mfma -fopenmp build (the AVX2 kernel)\n");
        fflush(stdout);
        if (child("cc", "-O2 -mavx2 -mfma -fopenmp", dir) == 1) failed = 1;
    } else {
        printf("  skipped the AVX2 build: this CPU lacks AVX2/FMA\n");
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
done:
    printf("test_gemm: %s\n", failed ? "FAILED" : "all checks passed");
    return failed;
}
