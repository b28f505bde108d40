/* gemm_i8_bench.c — the prelude's exact 8-bit integer GEMM and convolution (gemm_i8.h) against the
 * float32 ones (gemm.h, conv.h) on the same shapes: the MatMuls of BERT-base and of the zoo's int8
 * BERT, the convolutions of ResNet-18 (the QDQ variant's, at 64 x 64 and 224 x 224) and of
 * MobileNetV2 (1x1, depthwise). Weights packed once outside the timing (as at model load), the other
 * operand new per case; both kernels timed in turns in one process, medians of REPS pairs after a
 * warm-up, by the calling thread's CPU time with 1 thread (a shared machine), by wall time otherwise.
 *
 * Output: TSV `case <TAB> threads <TAB> f32 ms <TAB> int8 ms <TAB> f32/int8 <TAB> int8 GMAC/s`.
 * Build and run: bench/micro/run_i8.sh (cc -O3 -march=native -fopenmp, as the CPU backend).
 * Usage: gemm_i8_bench [-t 1,2] [-r REPS] [-f SUBSTRING]
 */
#include "codegen/prelude/conv.h"
#include "codegen/prelude/gemm_i8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    return p;
}
static uint32_t g_s = 12345u;
static uint32_t next_u(void) { return g_s = g_s * 1664525u + 1013904223u; }

/* A case: a GEMM (M x K times K x N, B the weight) or a convolution (C, HxW, OC, KxK, stride, pad,
 * group) at batch 1. */
typedef struct bcase {
    const char *name;
    int conv;
    int64_t M, N, K;                   /* GEMM */
    int64_t C, H, OC, KK, S, PAD, G;   /* convolution */
} bcase;

static const bcase CASES[] = {
    {"bert_qkv_128x768x768", 0, 128, 768, 768, 0, 0, 0, 0, 0, 0, 0},
    {"bert_ffn1_128x3072x768", 0, 128, 3072, 768, 0, 0, 0, 0, 0, 0, 0},
    {"bert_ffn2_128x768x3072", 0, 128, 768, 3072, 0, 0, 0, 0, 0, 0, 0},
    {"bert_ci_16x64x64", 0, 16, 64, 64, 0, 0, 0, 0, 0, 0, 0},
    {"gemv_1x4096x4096", 0, 1, 4096, 4096, 0, 0, 0, 0, 0, 0, 0},
    {"r18ci_stem_3x64_7x7s2", 1, 0, 0, 0, 3, 64, 64, 7, 2, 3, 1},
    {"r18ci_l1_64x16_3x3", 1, 0, 0, 0, 64, 16, 64, 3, 1, 1, 1},
    {"r18ci_l2_128x8_3x3", 1, 0, 0, 0, 128, 8, 128, 3, 1, 1, 1},
    {"r18ci_l3_256x4_3x3", 1, 0, 0, 0, 256, 4, 256, 3, 1, 1, 1},
    {"r18ci_l4_512x2_3x3", 1, 0, 0, 0, 512, 2, 512, 3, 1, 1, 1},
    {"r18_l1_64x56_3x3", 1, 0, 0, 0, 64, 56, 64, 3, 1, 1, 1},
    {"r18_l4_512x7_3x3", 1, 0, 0, 0, 512, 7, 512, 3, 1, 1, 1},
    {"mnv2_1x1_96x56_24", 1, 0, 0, 0, 96, 56, 24, 1, 1, 0, 1},
    {"mnv2_1x1_160x7_960", 1, 0, 0, 0, 160, 7, 960, 1, 1, 0, 1},
    {"mnv2_dw_144x56_3x3", 1, 0, 0, 0, 144, 56, 144, 3, 1, 1, 144},
    {"mnv2_dw_960x7_3x3", 1, 0, 0, 0, 960, 7, 960, 3, 1, 1, 960},
};

typedef struct run_ctx {
    const bcase *c;
    float *fa, *fb, *fc, *fws;
    uint8_t *qa;
    int8_t *qb;
    int32_t *qc;
    int16_t *qws;
    int64_t fws_n, qws_n;
} run_ctx;

static void run_f32(const run_ctx *r) {
    const bcase *c = r->c;
    if (!c->conv) {
        lt_sgemm(c->M, c->N, c->K, r->fa, c->K, LT_GEMM_N, r->fb, c->N, LT_GEMM_PACKED, r->fc, c->N, 1, 0, NULL, r->fws,
                 r->fws_n);
        return;
    }
    lt_conv2d(r->fc, r->fa, r->fb, 1, c->C, c->H, c->H, c->OC, c->KK, c->KK, c->S, c->S, c->PAD, c->PAD, c->PAD, c->PAD,
              1, 1, c->G, NULL, r->fws, r->fws_n);
}
static void run_i8(const run_ctx *r) {
    const bcase *c = r->c;
    static const uint8_t za = 131;
    static const int8_t zb = 0;
    if (!c->conv) {
        lt_gemm_i8(r->qc, r->qa, r->qb, &za, &zb, r->qws, c->M, c->N, c->K, c->K, LT_I8_U8, LT_ZP_SCALAR, c->N, LT_I8_S8,
                   LT_ZP_SCALAR, 1, c->N, r->qws_n);
        return;
    }
    lt_conv2d_i8(r->qc, r->qa, r->qb, &za, &zb, r->qws, 1, c->C, c->H, c->H, c->OC, c->KK, c->KK, c->S, c->S, c->PAD,
                 c->PAD, c->PAD, c->PAD, 1, 1, c->G, LT_I8_U8, LT_I8_S8, LT_ZP_SCALAR, LT_ZP_SCALAR, r->qws_n);
}

static void bench_case(const bcase *c, int threads, int reps) {
    run_ctx r = {c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    int64_t na, nb, nc, OH = 0;
    double macs;
    if (c->conv) {
        OH = (c->H + 2 * c->PAD - c->KK) / c->S + 1;
        na = c->C * c->H * c->H, nb = c->OC * (c->C / c->G) * c->KK * c->KK, nc = c->OC * OH * OH;
        macs = (double)nc * (double)(c->C / c->G) * (double)(c->KK * c->KK);
    } else {
        na = c->M * c->K, nb = c->K * c->N, nc = c->M * c->N;
        macs = (double)c->M * (double)c->N * (double)c->K;
    }
    float *wf = xmalloc(sizeof(float) * (size_t)nb);
    int8_t *wq = xmalloc((size_t)nb);
    r.fa = xmalloc(sizeof(float) * (size_t)na), r.qa = xmalloc((size_t)na);
    for (int64_t i = 0; i < na; i++) r.qa[i] = (uint8_t)(next_u() >> 24), r.fa[i] = (float)r.qa[i] / 255.0f;
    for (int64_t i = 0; i < nb; i++) wq[i] = (int8_t)(next_u() >> 24), wf[i] = (float)wq[i] / 127.0f;
    r.fc = xmalloc(sizeof(float) * (size_t)nc), r.qc = xmalloc(sizeof(int32_t) * (size_t)nc);
    if (c->conv) {
        r.fb = xmalloc(sizeof(float) * (size_t)lt_conv2d_packed_size(c->OC, c->C, c->KK, c->KK, c->G));
        lt_conv2d_pack(r.fb, wf, c->OC, c->C, c->KK, c->KK, c->G);
        r.qb = xmalloc((size_t)lt_conv2d_i8_packed_size(c->OC, c->C, c->KK, c->KK, c->G, OH * OH));
        lt_conv2d_i8_pack(r.qb, wq, c->OC, c->C, c->KK, c->KK, c->G, OH * OH);
        r.fws_n = (int64_t)threads * LT_GEMM_WS_PER_THREAD;
        int dw = c->G > 1 && c->G == c->C;
        r.qws_n = threads * (dw ? LT_CONV_I8_DW_WS_PER_THREAD(c->H + 2 * c->PAD, c->H + 2 * c->PAD, OH)
                                : LT_GEMM_I8_WS_PER_THREAD);
    } else {
        r.fb = xmalloc(sizeof(float) * (size_t)lt_sgemm_packed_b_size(c->K, c->N));
        lt_sgemm_pack_b(r.fb, wf, c->N, LT_GEMM_N, c->K, c->N);
        r.qb = xmalloc((size_t)lt_gemm_i8_packed_b_size(c->K, c->N));
        lt_gemm_i8_pack_b(r.qb, wq, c->K, c->N, c->N);
        r.fws_n = lt_sgemm_ws_floats(c->M, c->N, c->K, threads);
        r.qws_n = threads * LT_GEMM_I8_WS_PER_THREAD;
    }
    r.fws = xmalloc(sizeof(float) * (size_t)r.fws_n), r.qws = xmalloc(sizeof(int16_t) * (size_t)r.qws_n);
    run_f32(&r), run_i8(&r); /* warm-up */
    double *tf = xmalloc(sizeof(double) * (size_t)reps), *ti = xmalloc(sizeof(double) * (size_t)reps);
    double (*clk)(void) = threads == 1 ? cpu_now : wall_now;
    for (int k = 0; k < reps; k++) {
        double t0 = clk();
        run_f32(&r);
        double t1 = clk();
        run_i8(&r);
        double t2 = clk();
        tf[k] = t1 - t0, ti[k] = t2 - t1;
    }
    qsort(tf, (size_t)reps, sizeof(double), cmp_d);
    qsort(ti, (size_t)reps, sizeof(double), cmp_d);
    double mf = tf[reps / 2], mi = ti[reps / 2];
    printf("%s\t%d\t%.4f\t%.4f\t%.2f\t%.1f\n", c->name, threads, mf * 1e3, mi * 1e3, mf / mi, macs / mi * 1e-9);
    fflush(stdout);
    free(wf), free(wq), free(r.fa), free(r.qa), free(r.fb), free(r.qb), free(r.fc), free(r.qc), free(r.fws);
    free(r.qws), free(tf), free(ti);
}

int main(int argc, char **argv) {
    const char *tlist = "1", *filter = NULL;
    int reps = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) tlist = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) filter = argv[++i];
        else {
            fprintf(stderr, "usage: gemm_i8_bench [-t 1,2] [-r REPS] [-f SUBSTRING]\n");
            return 1;
        }
    }
    if (reps < 1) reps = 1;
    printf("# case\tthreads\tf32 ms\tint8 ms\tf32/int8\tint8 GMAC/s   (gemm.h %s, gemm_i8.h %s)\n", LT_GEMM_ISA, LT_GI8_ISA);
    for (const char *p = tlist; *p;) {
        int t = atoi(p);
        lathe_set_threads(t > 0 ? t : 1);
        for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
            if (!filter || strstr(CASES[i].name, filter)) bench_case(&CASES[i], t > 0 ? t : 1, reps);
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    return 0;
}
