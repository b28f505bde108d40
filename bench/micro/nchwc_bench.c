/* nchwc_bench.c — one convolution layer in isolation, NCHW (conv.h's lt_conv2d, what lathe runs by
 * default) against channel-blocked NCHW{B}c (conv_nchwc.h's lt_nchwc_conv_f32, what the layout_nchwc
 * pass lowers to), at the distinct Conv shapes of MobileNetV2 and ResNet-50 (batch 1), with each
 * layer's fused epilogue (bias, ReLU / Clip, residual add), plus the reorders at the ends of a chain.
 *
 * Output: TSV `case <TAB> threads <TAB> nchw ms <TAB> nchwc ms <TAB> nchwc/nchw <TAB> nchwc GFLOP/s`.
 * Both kernels run in turns (run for run) in one process; timings are medians of REPS pairs after a
 * warm-up, 1 thread by the calling thread's CPU time (a shared machine), more threads by wall time.
 * Build and run: bench/micro/run_nchwc.sh (cc -O3 -march=native -fopenmp, as the CPU backend).
 * Usage: nchwc_bench [-t 1,2] [-r REPS] [-f SUBSTRING]
 */
#include "codegen/prelude/conv.h"
#include "codegen/prelude/conv_nchwc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static float *rnd(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    uint32_t s = 12345u;
    for (int64_t i = 0; i < n; i++) s = s * 1664525u + 1013904223u, p[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    return p;
}

/* kind: 0 conv (G 1 or depthwise G == C == OC), 1 reorder in (C, H), 2 reorder out */
typedef struct ncase {
    const char *name;
    int kind;
    int64_t C, H, OC, K, S, G;
    int act;  /* LT_ACT_NONE / RELU / CLIP (0..6) */
    int res;  /* residual added before the activation */
} ncase;

static const ncase cases[] = {
    /* MobileNetV2 */
    {"mv2_dw_32_112", 0, 32, 112, 32, 3, 1, 32, LT_ACT_CLIP, 0},
    {"mv2_proj_32to16_112", 0, 32, 112, 16, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_exp_16to96_112", 0, 16, 112, 96, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_dw_96s2_112", 0, 96, 112, 96, 3, 2, 96, LT_ACT_CLIP, 0},
    {"mv2_proj_96to24_56", 0, 96, 56, 24, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_exp_24to144_56", 0, 24, 56, 144, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_dw_144_56", 0, 144, 56, 144, 3, 1, 144, LT_ACT_CLIP, 0},
    {"mv2_proj_144to24_56_res", 0, 144, 56, 24, 1, 1, 1, LT_ACT_NONE, 1},
    {"mv2_dw_144s2_56", 0, 144, 56, 144, 3, 2, 144, LT_ACT_CLIP, 0},
    {"mv2_proj_144to32_28", 0, 144, 28, 32, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_exp_32to192_28", 0, 32, 28, 192, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_dw_192_28", 0, 192, 28, 192, 3, 1, 192, LT_ACT_CLIP, 0},
    {"mv2_proj_192to32_28_res", 0, 192, 28, 32, 1, 1, 1, LT_ACT_NONE, 1},
    {"mv2_dw_192s2_28", 0, 192, 28, 192, 3, 2, 192, LT_ACT_CLIP, 0},
    {"mv2_proj_192to64_14", 0, 192, 14, 64, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_exp_64to384_14", 0, 64, 14, 384, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_dw_384_14", 0, 384, 14, 384, 3, 1, 384, LT_ACT_CLIP, 0},
    {"mv2_proj_384to64_14_res", 0, 384, 14, 64, 1, 1, 1, LT_ACT_NONE, 1},
    {"mv2_proj_384to96_14", 0, 384, 14, 96, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_exp_96to576_14", 0, 96, 14, 576, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_dw_576_14", 0, 576, 14, 576, 3, 1, 576, LT_ACT_CLIP, 0},
    {"mv2_proj_576to96_14_res", 0, 576, 14, 96, 1, 1, 1, LT_ACT_NONE, 1},
    {"mv2_dw_576s2_14", 0, 576, 14, 576, 3, 2, 576, LT_ACT_CLIP, 0},
    {"mv2_proj_576to160_7", 0, 576, 7, 160, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_exp_160to960_7", 0, 160, 7, 960, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_dw_960_7", 0, 960, 7, 960, 3, 1, 960, LT_ACT_CLIP, 0},
    {"mv2_proj_960to160_7_res", 0, 960, 7, 160, 1, 1, 1, LT_ACT_NONE, 1},
    {"mv2_proj_960to320_7", 0, 960, 7, 320, 1, 1, 1, LT_ACT_NONE, 0},
    {"mv2_last_320to1280_7", 0, 320, 7, 1280, 1, 1, 1, LT_ACT_CLIP, 0},
    {"mv2_reorder_in_32_112", 1, 32, 112, 0, 0, 0, 0, 0, 0},
    {"mv2_reorder_out_1280_7", 2, 1280, 7, 0, 0, 0, 0, 0, 0},
    /* ResNet-50 */
    {"r50_l1_1x1_64to64_56", 0, 64, 56, 64, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l1_3x3_64_56", 0, 64, 56, 64, 3, 1, 1, LT_ACT_RELU, 0},
    {"r50_l1_1x1_64to256_56_res", 0, 64, 56, 256, 1, 1, 1, LT_ACT_RELU, 1},
    {"r50_l1_1x1_64to256_56", 0, 64, 56, 256, 1, 1, 1, LT_ACT_NONE, 0},
    {"r50_l1_1x1_256to64_56", 0, 256, 56, 64, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l2_1x1_256to128_56", 0, 256, 56, 128, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l2_3x3s2_128_56", 0, 128, 56, 128, 3, 2, 1, LT_ACT_RELU, 0},
    {"r50_l2_1x1_128to512_28_res", 0, 128, 28, 512, 1, 1, 1, LT_ACT_RELU, 1},
    {"r50_l2_ds_1x1s2_256to512_56", 0, 256, 56, 512, 1, 2, 1, LT_ACT_NONE, 0},
    {"r50_l2_1x1_512to128_28", 0, 512, 28, 128, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l2_3x3_128_28", 0, 128, 28, 128, 3, 1, 1, LT_ACT_RELU, 0},
    {"r50_l3_1x1_512to256_28", 0, 512, 28, 256, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l3_3x3s2_256_28", 0, 256, 28, 256, 3, 2, 1, LT_ACT_RELU, 0},
    {"r50_l3_1x1_256to1024_14_res", 0, 256, 14, 1024, 1, 1, 1, LT_ACT_RELU, 1},
    {"r50_l3_1x1_1024to256_14", 0, 1024, 14, 256, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l3_3x3_256_14", 0, 256, 14, 256, 3, 1, 1, LT_ACT_RELU, 0},
    {"r50_l4_1x1_1024to512_14", 0, 1024, 14, 512, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l4_3x3s2_512_14", 0, 512, 14, 512, 3, 2, 1, LT_ACT_RELU, 0},
    {"r50_l4_1x1_512to2048_7_res", 0, 512, 7, 2048, 1, 1, 1, LT_ACT_RELU, 1},
    {"r50_l4_1x1_2048to512_7", 0, 2048, 7, 512, 1, 1, 1, LT_ACT_RELU, 0},
    {"r50_l4_3x3_512_7", 0, 512, 7, 512, 3, 1, 1, LT_ACT_RELU, 0},
    {"r50_reorder_in_64_56", 1, 64, 56, 0, 0, 0, 0, 0, 0},
};
enum { NCASES = (int)(sizeof cases / sizeof cases[0]) };

typedef struct layer {
    const ncase *c;
    int64_t OH, P, B, Cb, Mb;
    float *x, *w, *wp, *bias, *y, *res, *ws;          /* NCHW */
    float *xb, *wpb, *yb, *resb;                      /* NCHWc */
    int64_t wsf;
    lt_epilogue ep;
} layer;

static void prepare(layer *L, const ncase *c, int threads) {
    memset(L, 0, sizeof *L);
    L->c = c;
    L->B = LT_NCB;
    L->Cb = lt_nchwc_cdiv_(c->C, L->B);
    if (c->kind) {
        L->x = rnd(c->C * c->H * c->H), L->xb = rnd(L->Cb * c->H * c->H * L->B);
        return;
    }
    L->P = c->K / 2;
    L->OH = (c->H + 2 * L->P - c->K) / c->S + 1;
    L->Mb = lt_nchwc_cdiv_(c->OC, L->B);
    int64_t HW = c->H * c->H, OHW = L->OH * L->OH, cg = c->C / c->G;
    L->x = rnd(c->C * HW), L->w = rnd(c->OC * cg * c->K * c->K), L->bias = rnd(c->OC);
    L->y = rnd(c->OC * OHW), L->res = c->res ? rnd(c->OC * OHW) : NULL;
    L->wp = malloc(sizeof(float) * (size_t)lt_conv2d_packed_size(c->OC, c->C, c->K, c->K, c->G));
    lt_conv2d_pack(L->wp, L->w, c->OC, c->C, c->K, c->K, c->G);
    L->wsf = lt_conv2d_ws_floats(1, c->C, c->H, c->H, c->OC, c->K, c->K, c->S, c->S, L->P, L->P, L->P, L->P, 1, 1, c->G,
                                 threads);
    L->ws = malloc(sizeof(float) * (size_t)(L->wsf > 0 ? L->wsf : 1));
    L->ep.bias = L->bias;
    L->ep.act = c->act;
    L->ep.act_a = 0.0f, L->ep.act_b = 6.0f;
    L->ep.residual = L->res;
    L->ep.ldr = OHW;
    int dw = c->G > 1;
    L->xb = rnd(L->Cb * HW * L->B), L->yb = rnd(L->Mb * OHW * L->B);
    L->resb = c->res ? rnd(L->Mb * OHW * L->B) : NULL;
    size_t wn = dw ? (size_t)(L->Cb * c->K * c->K * L->B) : (size_t)(L->Mb * L->Cb * c->K * c->K * L->B * L->B);
    L->wpb = malloc(sizeof(float) * wn);
    lt_nchwc_conv_pack(L->wpb, L->w, c->OC, c->C, c->K, c->K, dw, L->B);
}

static void run_nchw(layer *L) {
    const ncase *c = L->c;
    if (c->kind == 1) { /* an NCHW copy of the same bytes: what the NCHW plan does instead (nothing) */
        return;
    }
    if (c->kind == 2) return;
    lt_conv2d(L->y, L->x, L->wp, 1, c->C, c->H, c->H, c->OC, c->K, c->K, c->S, c->S, L->P, L->P, L->P, L->P, 1, 1, c->G,
              &L->ep, L->ws, L->wsf);
}

static void run_nchwc(layer *L) {
    const ncase *c = L->c;
    if (c->kind == 1) {
        lt_nchwc_reorder_in_f32(L->xb, L->x, 1, c->C, c->H * c->H, L->B);
        return;
    }
    if (c->kind == 2) {
        lt_nchwc_reorder_out_f32(L->x, L->xb, 1, c->C, c->H * c->H, L->B);
        return;
    }
    lt_nchwc_conv_f32(L->yb, L->xb, L->wpb, L->bias, L->resb, 1, c->C, c->H, c->H, c->OC, c->K, c->K, c->S, c->S, L->P,
                      L->P, 1, 1, L->OH, L->OH, c->G > 1, L->B, 1, c->res ? 1 : 0, c->act, 0.0f, 6.0f);
}

static void release(layer *L) {
    free(L->x), free(L->w), free(L->wp), free(L->bias), free(L->y), free(L->res), free(L->ws);
    free(L->xb), free(L->wpb), free(L->yb), free(L->resb);
}

static double flops(const layer *L) {
    const ncase *c = L->c;
    if (c->kind) return 0;
    return 2.0 * c->OC * L->OH * L->OH * (c->C / c->G) * c->K * c->K;
}

int main(int argc, char **argv) {
    int th[8] = {1}, nth = 1, reps = 30;
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
        } else {
            fprintf(stderr, "usage: nchwc_bench [-t 1,2] [-r REPS] [-f SUBSTRING]\n");
            return 2;
        }
    }
    enum { MAXR = 500 };
    static double ta[MAXR], tb[MAXR];
    if (reps > MAXR) reps = MAXR;
    printf("# case\tthreads\tnchw_ms\tnchwc_ms\tnchwc/nchw\tnchwc_GFLOP/s (B=%d)\n", LT_NCB);
    for (int i = 0; i < NCASES; i++) {
        if (filter && !strstr(cases[i].name, filter)) continue;
        for (int t = 0; t < nth; t++) {
            layer L;
            prepare(&L, &cases[i], th[t]);
            lathe_set_threads(th[t]);
            double (*clk)(void) = th[t] == 1 ? cpu_now : wall_now;
            run_nchw(&L), run_nchwc(&L);
            for (int r = 0; r < reps; r++) {
                double t0 = clk();
                run_nchw(&L);
                double t1 = clk();
                run_nchwc(&L);
                double t2 = clk();
                ta[r] = t1 - t0, tb[r] = t2 - t1;
            }
            qsort(ta, (size_t)reps, sizeof ta[0], cmp_d);
            qsort(tb, (size_t)reps, sizeof tb[0], cmp_d);
            double a = ta[reps / 2], b = tb[reps / 2];
            printf("%s\t%d\t%.4f\t%.4f\t%.2f\t%.1f\n", cases[i].name, th[t], a * 1e3, b * 1e3, a > 0 ? b / a : 0,
                   b > 0 ? flops(&L) / b / 1e9 : 0);
            fflush(stdout);
            release(&L);
        }
    }
    return 0;
}
