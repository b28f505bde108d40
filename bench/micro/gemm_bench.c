/* gemm_bench.c — micro-benchmark of the prelude's SGEMM and convolution kernels (gemm.h, conv.h) at
 * every distinct MatMul / Conv shape of ResNet-50, MobileNetV2, BERT-base and GPT-2 small (batch 1,
 * sequence 128), against this machine's measured FP32 FMA peak. bench/micro/run.sh builds it with the CPU backend's flags and
 * puts onnxruntime's numbers for the same cases beside it (ort_bench.py).
 *
 * Output: TSV lines `case <TAB> threads <TAB> median ms <TAB> GFLOP/s`, and `peak <TAB> threads
 * <TAB> 0 <TAB> GFLOP/s` (an in-register FMA loop: 2 FMA units x 16 lanes x 2 flops x clock).
 * Usage: gemm_bench [-t 1,2] [-r REPS] [-f SUBSTRING] [-l (list the cases)]. Weights are packed once outside the timing
 * (as at model load); inputs and outputs are new per case, timings are medians of REPS runs after
 * one warm-up (at least 0.2 s of runs).
 */
#include "codegen/prelude/conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static float *rnd(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    uint32_t s = 12345u;
    for (int64_t i = 0; i < n; i++) s = s * 1664525u + 1013904223u, p[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    return p;
}

typedef struct bcase {
    const char *name;
    int kind; /* 0 MatMul (B = weights, pre-packed), 1 Conv, 2 batched MatMul (attention) */
    int64_t M, N, K;         /* MatMul */
    int64_t batch, transb;   /* batched */
    int64_t C, H, W, OC, KH, KW, S, P, G; /* Conv (N = 1, square kernels/strides/pads) */
} bcase;

static const bcase cases[] = {
    /* name                     kind  M     N     K   batch tb  C    H    W    OC   KH KW S P G */
    /* BERT-base and GPT-2 small, sequence 128 (MatMul + bias, weights pre-packed; attention: */
    /* batched MatMul of two activations), the poolers / classifiers at batch 1 */
    {"bert_qkv_128x768x768", 0, 128, 768, 768, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"bert_ffn1_128x3072x768", 0, 128, 3072, 768, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"bert_ffn2_128x768x3072", 0, 128, 768, 3072, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"attn_qk_12x128x128x64", 2, 128, 128, 64, 12, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"attn_pv_12x128x64x128", 2, 128, 64, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"bert_pooler_1x768x768", 0, 1, 768, 768, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"gpt2_qkv_128x2304x768", 0, 128, 2304, 768, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"gpt2_lmhead_128x50257x768", 0, 128, 50257, 768, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* ResNet-50 v1.5 (224 x 224): every distinct convolution, and the classifier */
    {"r50_conv1_7x7s2_3to64", 1, 0, 0, 0, 0, 0, 3, 224, 224, 64, 7, 7, 2, 3, 1},
    {"r50_l1_1x1_64to64_56", 1, 0, 0, 0, 0, 0, 64, 56, 56, 64, 1, 1, 1, 0, 1},
    {"r50_l1_3x3_64to64_56", 1, 0, 0, 0, 0, 0, 64, 56, 56, 64, 3, 3, 1, 1, 1},
    {"r50_l1_1x1_64to256_56", 1, 0, 0, 0, 0, 0, 64, 56, 56, 256, 1, 1, 1, 0, 1},
    {"r50_l1_1x1_256to64_56", 1, 0, 0, 0, 0, 0, 256, 56, 56, 64, 1, 1, 1, 0, 1},
    {"r50_l2_1x1_256to128_56", 1, 0, 0, 0, 0, 0, 256, 56, 56, 128, 1, 1, 1, 0, 1},
    {"r50_l2_3x3s2_128_56", 1, 0, 0, 0, 0, 0, 128, 56, 56, 128, 3, 3, 2, 1, 1},
    {"r50_l2_1x1_128to512_28", 1, 0, 0, 0, 0, 0, 128, 28, 28, 512, 1, 1, 1, 0, 1},
    {"r50_l2_ds_1x1s2_256to512_56", 1, 0, 0, 0, 0, 0, 256, 56, 56, 512, 1, 1, 2, 0, 1},
    {"r50_l2_1x1_512to128_28", 1, 0, 0, 0, 0, 0, 512, 28, 28, 128, 1, 1, 1, 0, 1},
    {"r50_l2_3x3_128to128_28", 1, 0, 0, 0, 0, 0, 128, 28, 28, 128, 3, 3, 1, 1, 1},
    {"r50_l3_1x1_512to256_28", 1, 0, 0, 0, 0, 0, 512, 28, 28, 256, 1, 1, 1, 0, 1},
    {"r50_l3_3x3s2_256_28", 1, 0, 0, 0, 0, 0, 256, 28, 28, 256, 3, 3, 2, 1, 1},
    {"r50_l3_1x1_256to1024_14", 1, 0, 0, 0, 0, 0, 256, 14, 14, 1024, 1, 1, 1, 0, 1},
    {"r50_l3_ds_1x1s2_512to1024_28", 1, 0, 0, 0, 0, 0, 512, 28, 28, 1024, 1, 1, 2, 0, 1},
    {"r50_l3_1x1_1024to256_14", 1, 0, 0, 0, 0, 0, 1024, 14, 14, 256, 1, 1, 1, 0, 1},
    {"r50_l3_3x3_256to256_14", 1, 0, 0, 0, 0, 0, 256, 14, 14, 256, 3, 3, 1, 1, 1},
    {"r50_l4_1x1_1024to512_14", 1, 0, 0, 0, 0, 0, 1024, 14, 14, 512, 1, 1, 1, 0, 1},
    {"r50_l4_3x3s2_512_14", 1, 0, 0, 0, 0, 0, 512, 14, 14, 512, 3, 3, 2, 1, 1},
    {"r50_l4_1x1_512to2048_7", 1, 0, 0, 0, 0, 0, 512, 7, 7, 2048, 1, 1, 1, 0, 1},
    {"r50_l4_ds_1x1s2_1024to2048_14", 1, 0, 0, 0, 0, 0, 1024, 14, 14, 2048, 1, 1, 2, 0, 1},
    {"r50_l4_1x1_2048to512_7", 1, 0, 0, 0, 0, 0, 2048, 7, 7, 512, 1, 1, 1, 0, 1},
    {"r50_l4_3x3_512to512_7", 1, 0, 0, 0, 0, 0, 512, 7, 7, 512, 3, 3, 1, 1, 1},
    {"r50_fc_1x1000x2048", 0, 1, 1000, 2048, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* MobileNetV2 (224 x 224): every distinct convolution, and the classifier */
    {"mv2_conv0_3x3s2_3to32", 1, 0, 0, 0, 0, 0, 3, 224, 224, 32, 3, 3, 2, 1, 1},
    {"mv2_dw_3x3_32_112", 1, 0, 0, 0, 0, 0, 32, 112, 112, 32, 3, 3, 1, 1, 32},
    {"mv2_pw_1x1_32to16_112", 1, 0, 0, 0, 0, 0, 32, 112, 112, 16, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_16to96_112", 1, 0, 0, 0, 0, 0, 16, 112, 112, 96, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3s2_96_112", 1, 0, 0, 0, 0, 0, 96, 112, 112, 96, 3, 3, 2, 1, 96},
    {"mv2_pw_1x1_96to24_56", 1, 0, 0, 0, 0, 0, 96, 56, 56, 24, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_24to144_56", 1, 0, 0, 0, 0, 0, 24, 56, 56, 144, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3_144_56", 1, 0, 0, 0, 0, 0, 144, 56, 56, 144, 3, 3, 1, 1, 144},
    {"mv2_pw_1x1_144to24_56", 1, 0, 0, 0, 0, 0, 144, 56, 56, 24, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3s2_144_56", 1, 0, 0, 0, 0, 0, 144, 56, 56, 144, 3, 3, 2, 1, 144},
    {"mv2_pw_1x1_144to32_28", 1, 0, 0, 0, 0, 0, 144, 28, 28, 32, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_32to192_28", 1, 0, 0, 0, 0, 0, 32, 28, 28, 192, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3_192_28", 1, 0, 0, 0, 0, 0, 192, 28, 28, 192, 3, 3, 1, 1, 192},
    {"mv2_pw_1x1_192to32_28", 1, 0, 0, 0, 0, 0, 192, 28, 28, 32, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3s2_192_28", 1, 0, 0, 0, 0, 0, 192, 28, 28, 192, 3, 3, 2, 1, 192},
    {"mv2_pw_1x1_192to64_14", 1, 0, 0, 0, 0, 0, 192, 14, 14, 64, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_64to384_14", 1, 0, 0, 0, 0, 0, 64, 14, 14, 384, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3_384_14", 1, 0, 0, 0, 0, 0, 384, 14, 14, 384, 3, 3, 1, 1, 384},
    {"mv2_pw_1x1_384to64_14", 1, 0, 0, 0, 0, 0, 384, 14, 14, 64, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_384to96_14", 1, 0, 0, 0, 0, 0, 384, 14, 14, 96, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_96to576_14", 1, 0, 0, 0, 0, 0, 96, 14, 14, 576, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3_576_14", 1, 0, 0, 0, 0, 0, 576, 14, 14, 576, 3, 3, 1, 1, 576},
    {"mv2_pw_1x1_576to96_14", 1, 0, 0, 0, 0, 0, 576, 14, 14, 96, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3s2_576_14", 1, 0, 0, 0, 0, 0, 576, 14, 14, 576, 3, 3, 2, 1, 576},
    {"mv2_pw_1x1_576to160_7", 1, 0, 0, 0, 0, 0, 576, 7, 7, 160, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_160to960_7", 1, 0, 0, 0, 0, 0, 160, 7, 7, 960, 1, 1, 1, 0, 1},
    {"mv2_dw_3x3_960_7", 1, 0, 0, 0, 0, 0, 960, 7, 7, 960, 3, 3, 1, 1, 960},
    {"mv2_pw_1x1_960to160_7", 1, 0, 0, 0, 0, 0, 960, 7, 7, 160, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_960to320_7", 1, 0, 0, 0, 0, 0, 960, 7, 7, 320, 1, 1, 1, 0, 1},
    {"mv2_pw_1x1_320to1280_7", 1, 0, 0, 0, 0, 0, 320, 7, 7, 1280, 1, 1, 1, 0, 1},
    {"mv2_fc_1x1000x1280", 0, 1, 1000, 1280, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    /* a large square-ish GEMM (ResNet-50 layer 1 3x3 as an explicit im2col GEMM) */
    {"gemm_256x3136x576", 0, 256, 3136, 576, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

/* In-register FMA throughput: 12 independent accumulators per thread (4-cycle latency x 2 ports
 * x 1.5 to spare), reported in GFLOP/s over all threads; one thread is timed by its CPU time. */
double lt_bench_peak(int threads) {
    double best = 0;
    double (*clk)(void) = threads == 1 ? cpu_now : wall_now;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = clk();
        long iters = 10000000;
        float sink = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : sink)
#endif
        {
            lt_gv b = LT_GV_SET1(1.0000001f), c = LT_GV_SET1(1e-7f);
            lt_gv a0 = LT_GV_SET1(0.f), a1 = LT_GV_SET1(1.f), a2 = LT_GV_SET1(2.f), a3 = LT_GV_SET1(3.f),
                  a4 = LT_GV_SET1(4.f), a5 = LT_GV_SET1(5.f), a6 = LT_GV_SET1(6.f), a7 = LT_GV_SET1(7.f),
                  a8 = LT_GV_SET1(8.f), a9 = LT_GV_SET1(9.f), a10 = LT_GV_SET1(10.f), a11 = LT_GV_SET1(11.f);
            for (long it = 0; it < iters; it++) {
                a0 = LT_GV_FMA(a0, b, c), a1 = LT_GV_FMA(a1, b, c), a2 = LT_GV_FMA(a2, b, c);
                a3 = LT_GV_FMA(a3, b, c), a4 = LT_GV_FMA(a4, b, c), a5 = LT_GV_FMA(a5, b, c);
                a6 = LT_GV_FMA(a6, b, c), a7 = LT_GV_FMA(a7, b, c), a8 = LT_GV_FMA(a8, b, c);
                a9 = LT_GV_FMA(a9, b, c), a10 = LT_GV_FMA(a10, b, c), a11 = LT_GV_FMA(a11, b, c);
                __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
                __asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
            }
            lt_gv s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
            sink += s[0];
        }
        double t = clk() - t0;
        double g = (double)iters * 12 * 2 * LT_GL * threads / t / 1e9;
        if (g > best) best = g;
        if (sink == 12345.0f) printf("#\n"); /* keep the loop */
    }
    return best;
}

static __attribute__((unused)) double flops_of(const bcase *c) {
    if (c->kind == 0) return 2.0 * c->M * c->N * c->K;
    if (c->kind == 2) return 2.0 * c->batch * c->M * c->N * c->K;
    int64_t OH = (c->H + 2 * c->P - c->KH) / c->S + 1, OW = (c->W + 2 * c->P - c->KW) / c->S + 1;
    return 2.0 * c->OC * OH * OW * (c->C / c->G) * c->KH * c->KW;
}

/* One case, ready to run: buffers allocated, weights packed (the library interface ort_bench.py
 * drives through ctypes, so both runtimes are timed in one process, run for run). */
typedef struct bench {
    const bcase *c;
    int threads;
    float *x, *w, *wp, *y, *bias, *ws;
    int64_t wsf;
    lt_epilogue ep;
} bench;

int lt_bench_ncases(void) { return (int)(sizeof cases / sizeof cases[0]); }

void *lt_bench_prepare(int i, int threads) {
    bench *b = calloc(1, sizeof *b);
    const bcase *c = &cases[i];
    if (!b) return NULL;
    b->c = c, b->threads = threads;
    if (c->kind == 0 || c->kind == 2) {
        int64_t nb = c->kind == 2 ? c->batch : 1;
        b->x = rnd(nb * c->M * c->K), b->w = rnd(nb * c->K * c->N), b->y = rnd(nb * c->M * c->N), b->bias = rnd(c->N);
        if (c->kind == 0) {
            b->wp = malloc(sizeof(float) * (size_t)lt_sgemm_packed_b_size(c->K, c->N));
            lt_sgemm_pack_b(b->wp, b->w, c->N, LT_GEMM_N, c->K, c->N);
        }
        b->wsf = lt_sgemm_ws_floats(c->M, c->N, c->K, threads);
    } else {
        int64_t OH = (c->H + 2 * c->P - c->KH) / c->S + 1, OW = (c->W + 2 * c->P - c->KW) / c->S + 1;
        b->x = rnd(c->C * c->H * c->W), b->w = rnd(c->OC * (c->C / c->G) * c->KH * c->KW);
        b->y = rnd(c->OC * OH * OW), b->bias = rnd(c->OC);
        b->wp = malloc(sizeof(float) * (size_t)lt_conv2d_packed_size(c->OC, c->C, c->KH, c->KW, c->G));
        lt_conv2d_pack(b->wp, b->w, c->OC, c->C, c->KH, c->KW, c->G);
        b->wsf = lt_conv2d_ws_floats(1, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->S, c->S, c->P, c->P, c->P, c->P, 1,
                                     1, c->G, threads);
    }
    b->ws = malloc(sizeof(float) * (size_t)(b->wsf > 0 ? b->wsf : 1));
    b->ep.bias = b->bias; /* MatMul + Add(bias) and Conv with B: both fuse the bias */
    return b;
}

void lt_bench_run(void *h) {
    bench *b = h;
    const bcase *c = b->c;
    lathe_set_threads(b->threads);
    if (c->kind == 0)
        lt_sgemm(c->M, c->N, c->K, b->x, c->K, LT_GEMM_N, b->wp, c->N, LT_GEMM_PACKED, b->y, c->N, 1.0f, 0.0f, &b->ep,
                 b->ws, b->wsf);
    else if (c->kind == 2) /* Q K^T: B is K stored [N, K] (transposed); P V: plain */
        lt_sgemm_batched(1, c->batch, c->M, c->N, c->K, b->x, c->K, LT_GEMM_N, 0, c->M * c->K, b->w,
                         c->transb ? c->K : c->N, c->transb ? LT_GEMM_T : LT_GEMM_N, 0, c->K * c->N, b->y, c->N, 0,
                         c->M * c->N, 1.0f, 0.0f, NULL, 0, 0, b->ws, b->wsf);
    else
        lt_conv2d(b->y, b->x, b->wp, 1, c->C, c->H, c->W, c->OC, c->KH, c->KW, c->S, c->S, c->P, c->P, c->P, c->P, 1,
                  1, c->G, &b->ep, b->ws, b->wsf);
}

void lt_bench_free(void *h) {
    bench *b = h;
    if (!b) return;
    free(b->x), free(b->w), free(b->wp), free(b->y), free(b->bias), free(b->ws), free(b);
}

#ifndef LT_BENCH_LIBRARY
static void run_case(int i, int threads, int reps) {
    void *b = lt_bench_prepare(i, threads);
    if (!b) { fprintf(stderr, "out of memory\n"); exit(1); }
    enum { MAXR = 1000 };
    double t[MAXR];
    int n = 0;
    double start = wall_now();
    for (int r = -1; r < MAXR && (r < reps || wall_now() - start < 0.2); r++) {
        double t0 = wall_now();
        lt_bench_run(b);
        double dt = wall_now() - t0;
        if (r >= 0) t[n++] = dt;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_d);
    double med = t[n / 2];
    printf("%s\t%d\t%.4f\t%.1f\n", cases[i].name, threads, med * 1e3, flops_of(&cases[i]) / med / 1e9);
    fflush(stdout);
    lt_bench_free(b);
}
int main(int argc, char **argv) {
    int th[8] = {1, 2}, nth = 2, reps = 20;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            nth = 0;
            for (char *p = argv[++i]; *p && nth < 8; p++) {
                th[nth++] = (int)strtol(p, &p, 10);
                if (!*p) break;
            }
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            filter = argv[++i];
        } else if (!strcmp(argv[i], "-l")) { /* the case table, for ort_bench.py */
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                const bcase *b = &cases[c];
                printf("%s %d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %.0f\n", b->name,
                       b->kind, (long long)b->M, (long long)b->N, (long long)b->K, (long long)b->batch,
                       (long long)b->transb, (long long)b->C, (long long)b->H, (long long)b->W, (long long)b->OC,
                       (long long)b->KH, (long long)b->KW, (long long)b->S, (long long)b->P, (long long)b->G,
                       flops_of(b));
            }
            return 0;
        } else {
            fprintf(stderr, "usage: gemm_bench [-t 1,2] [-r REPS] [-f SUBSTRING] [-l]\n");
            return 2;
        }
    }
    printf("# lathe prelude kernels: %s, MR=%d NR=%d KC=%d NC=%d\n", LT_GEMM_ISA, LT_GEMM_MR, LT_GEMM_NR, LT_GEMM_KC,
           LT_GEMM_NC);
    for (int t = 0; t < nth; t++) printf("peak\t%d\t0\t%.1f\n", th[t], lt_bench_peak(th[t]));
    for (int i = 0; i < lt_bench_ncases(); i++)
        if (!filter || strstr(cases[i].name, filter))
            for (int t = 0; t < nth; t++) run_case(i, th[t], reps);
    return 0;
}
#endif
