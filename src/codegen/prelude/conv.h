/* conv.h — 2-D convolution, NCHW float32, for generated code: direct kernels (conv_direct.h) or an
 * implicit-im2col GEMM for dense and grouped convolutions, a direct SIMD kernel for depthwise ones
 * (conv_dw.h), the GEMM's fused epilogue.
 *
 * Pasted by the emitter after gemm.h (included below) when a kernel calls these functions. All
 * `static`, named lt_*; no allocation, printing or aborting.
 *
 * ---- API ----------------------------------------------------------------------------------------
 *   Shapes: x [N, C, H, W], weights [OC, C/G, KH, KW], y [N, OC, OH, OW] with
 *     OH = (H + PH0 + PH1 - DH*(KH-1) - 1) / SH + 1   (likewise OW; PH0/PW0 pad the top/left)
 *
 *   Weights are packed once, at load time (the layout is private to this translation unit):
 *     int64_t lt_conv2d_packed_size(OC, C, KH, KW, G)                 floats
 *     void    lt_conv2d_pack(dst, w, OC, C, KH, KW, G)
 *
 *   void lt_conv2d(y, x, wpacked, N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G,
 *                  ep, ws, ws_floats)
 *     ep (NULL: none): bias[oc] per output channel (bias_per_row and ldr are ignored); residual
 *     has y's shape and layout; act, act_a, act_b, residual_after_act as in gemm.h. y must not
 *     overlap x or the residual (partial sums are stored in y before the residual is read).
 *     ws: lt_conv2d_ws_floats(...) floats for full speed; less works, slower (see lt_sgemm).
 *   int64_t lt_conv2d_ws_floats(N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G,
 *                               threads)
 *
 *   Flat form for generated code (an unused pointer may be any valid pointer):
 *     void lt_conv2d_f32(y, x, wpacked, bias, residual, ws, N, C, H, W, OC, KH, KW, SH, SW,
 *                        PH0, PW0, PH1, PW1, DH, DW, G, bias_mode /0 none, 1 per channel/,
 *                        res_mode /0 none, 1 before act, 2 after act/, act, act_a, act_b, ws_floats)
 *
 * ---- Design -------------------------------------------------------------------------------------
 * Dense / grouped: per image n and group g, C_g[OC/G, OH*OW] = W_g[OC/G, K] * B[K, OH*OW] with
 * K = C/G*KH*KW and B = im2col(x_g). The weights are packed once as the GEMM's A operand, in
 * panels of 16 output channels with AVX-512 when OC/G % 16 == 0 (lt_conv2d_pw_: the same size as
 * MR-row panels; conv_direct.h's pixel-major kernel loads them as vectors), else of MR rows.
 *  - AVX-512 (conv_direct.h): B is never gathered into panels. The input is copied once per chunk
 *    of output rows into a slab of zero-padded (stride 2: phase-split) planes in which every row
 *    of B is a contiguous run at a per-k offset, and the kernels load B from it directly
 *    (channel-major tiles: 8 channels x 48 pixels; pixel-major tiles on small images: 8 pixels x
 *    48 channels). A 1x1 stride-1 convolution reads x as its slab; on a large image with more
 *    than twice as many output as input channels it goes to the GEMM with x as B instead.
 *  - Otherwise: the GEMM driver asks this file's packer for each K block x N chunk of B panels,
 *    gathered straight from x (a 1x1 stride-1 unpadded convolution reads x as a plain [C, H*W]
 *    matrix). Images and groups are the GEMM's two batch levels, so threads share out (image,
 *    group, N chunk) work items.
 * Depthwise (G == C, OC a multiple of C; conv_dw.h): AVX-512 3x3 stride 1/2 bands of 16-column
 * vectors rolling down the rows, else one output row at a time vectorized by the compiler. The
 * depthwise "packed" weights are a plain copy.
 */
#ifndef LT_PRELUDE_CONV_H
#define LT_PRELUDE_CONV_H

#include "gemm.h"

typedef struct lt_conv2d_geom {
    int64_t N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G, OH, OW;
} lt_conv2d_geom;

LT_FN void lt_conv2d_geom_init_(lt_conv2d_geom *g, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC,
                                int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PH0, int64_t PW0,
                                int64_t PH1, int64_t PW1, int64_t DH, int64_t DW, int64_t G) {
    g->N = N, g->C = C, g->H = H, g->W = W, g->OC = OC, g->KH = KH, g->KW = KW;
    g->SH = SH > 0 ? SH : 1, g->SW = SW > 0 ? SW : 1, g->PH0 = PH0, g->PW0 = PW0, g->PH1 = PH1, g->PW1 = PW1;
    g->DH = DH > 0 ? DH : 1, g->DW = DW > 0 ? DW : 1, g->G = G > 0 ? G : 1;
    int64_t eh = g->DH * (KH - 1) + 1, ew = g->DW * (KW - 1) + 1;
    g->OH = H + PH0 + PH1 >= eh ? (H + PH0 + PH1 - eh) / g->SH + 1 : 0;
    g->OW = W + PW0 + PW1 >= ew ? (W + PW0 + PW1 - ew) / g->SW + 1 : 0;
}
LT_FN int lt_conv2d_is_depthwise_(const lt_conv2d_geom *g) {
    return g->G > 1 && g->G == g->C && g->OC % g->C == 0;
}

/* Panel width of the packed weights of a group with ocg output channels: 16 rows (two 8-row
 * halves for the GEMM kernel; one vector of channels for conv_direct.h's pixel-major kernel) with
 * AVX-512 when ocg % 16 == 0 (no padding, so the size is the same), else MR. */
LT_FN int lt_conv2d_pw_(int64_t ocg) {
#if defined(__AVX512F__) && LT_GEMM_MR == 8 && LT_GL == 16
    return ocg % 16 == 0 ? 16 : LT_GEMM_MR;
#else
    (void)ocg;
    return LT_GEMM_MR;
#endif
}

#include "conv_dw.h"     /* lt_conv2d_depthwise_ */
#include "conv_direct.h" /* lt_cd_*: dense convolutions without im2col panels (AVX-512) */

/* ---- weight packing ---- */
LT_FN int64_t lt_conv2d_packed_size(int64_t OC, int64_t C, int64_t KH, int64_t KW, int64_t G) {
    if (G < 1) G = 1;
    if (G > 1 && G == C && OC % C == 0) return OC * KH * KW;
    return G * lt_sgemm_packed_a_size(OC / G, C / G * KH * KW);
}
LT_FN void lt_conv2d_pack(float *dst, const float *w, int64_t OC, int64_t C, int64_t KH, int64_t KW, int64_t G) {
    if (G < 1) G = 1;
    if (G > 1 && G == C && OC % C == 0) {
        memcpy(dst, w, (size_t)(OC * KH * KW) * sizeof(float));
        return;
    }
    int64_t ocg = OC / G, kg = C / G * KH * KW, per = lt_sgemm_packed_a_size(ocg, kg);
    for (int64_t g = 0; g < G; g++)
        lt_gemm_pack_all_(dst + g * per, w + g * ocg * kg, kg, 0, ocg, kg, lt_conv2d_pw_(ocg));
}

/* ---- implicit im2col: the GEMM's B packer ---- */
/* Rows of the B "matrix" are k = (ci, kh, kw), columns are output pixels p = (oh, ow); panel
 * element [k][r] = x[ci][oh*SH - PH0 + kh*DH][ow*SW - PW0 + kw*DW] (0 outside the image). s->p
 * points at the group's first input channel of the image. */
LT_FN void lt_conv2d_pack_b_(const lt_gemm_src *s, float *dst, int64_t r0, int64_t nr, int64_t k0, int64_t kc, int Wd) {
    const lt_conv2d_geom *g = (const lt_conv2d_geom *)s->ctx;
    const float *x = s->p;
    int64_t KHW = g->KH * g->KW, HW = g->H * g->W, np = lt_gemm_cdiv_(nr, Wd);
    float row[LT_GEMM_NC + 64]; /* one k row of the block, before it is dealt into panels */
    for (int64_t cs = 0; cs < nr; cs += LT_GEMM_NC) { /* nr <= LT_GEMM_NC unless ws forced a stack path */
        int64_t cn = lt_gemm_min_(LT_GEMM_NC, nr - cs);
        for (int64_t k = 0; k < kc; k++) {
            int64_t kk = k0 + k, ci = kk / KHW, kh = kk / g->KW % g->KH, kw = kk % g->KW;
            const float *xc = x + ci * HW;
            int64_t p = r0 + cs, pe = p + cn, oh = p / g->OW, ow = p % g->OW;
            float *o = row;
            while (p < pe) { /* one output row segment at a time */
                int64_t seg = lt_gemm_min_(g->OW - ow, pe - p);
                int64_t ih = oh * g->SH - g->PH0 + kh * g->DH;
                if (ih < 0 || ih >= g->H) {
                    for (int64_t q = 0; q < seg; q++) o[q] = 0.0f;
                } else {
                    const float *xr = xc + ih * g->W;
                    int64_t off = kw * g->DW - g->PW0; /* iw = ow*SW + off */
                    if (g->SW == 1) {
                        int64_t q = 0;
                        for (; q < seg && ow + q + off < 0; q++) o[q] = 0.0f;
                        int64_t qe = lt_gemm_min_(seg, g->W - off - ow);
                        if (qe > q) memcpy(o + q, xr + ow + q + off, (size_t)(qe - q) * sizeof(float)), q = qe;
                        for (; q < seg; q++) o[q] = 0.0f;
                    } else {
                        for (int64_t q = 0; q < seg; q++) {
                            int64_t iw = (ow + q) * g->SW + off;
                            o[q] = iw >= 0 && iw < g->W ? xr[iw] : 0.0f;
                        }
                    }
                }
                o += seg, p += seg, ow = 0, oh++;
            }
            /* deal the row into panels: element r of the row goes to panel (cs+r)/Wd, lane (cs+r)%Wd */
            for (int64_t r = 0; r < cn; r += Wd) {
                int64_t t = (cs + r) / Wd, w = lt_gemm_min_(Wd, cn - r);
                float *d = dst + t * Wd * kc + k * Wd;
                memcpy(d, row + r, (size_t)w * sizeof(float));
                for (int64_t q = w; q < Wd; q++) d[q] = 0.0f;
            }
        }
    }
    (void)np;
}

/* ---- entry points ---- */
LT_FN int64_t lt_conv2d_ws_floats(int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                                  int64_t SH, int64_t SW, int64_t PH0, int64_t PW0, int64_t PH1, int64_t PW1,
                                  int64_t DH, int64_t DW, int64_t G, int threads) {
    lt_conv2d_geom g;
    lt_conv2d_geom_init_(&g, N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G);
    if (lt_conv2d_is_depthwise_(&g)) return 0;
    int64_t need = lt_sgemm_ws_floats(OC / g.G, g.OH * g.OW, C / g.G * KH * KW, threads);
#if LT_CD_ENABLED
    int64_t cd = lt_cd_ws_floats_(&g, threads);
    if (cd > need) need = cd;
#endif
    return need;
}

LT_FN void lt_conv2d(float *y, const float *x, const float *wp, int64_t N, int64_t C, int64_t H, int64_t W,
                     int64_t OC, int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PH0, int64_t PW0,
                     int64_t PH1, int64_t PW1, int64_t DH, int64_t DW, int64_t G, const lt_epilogue *ep,
                     float *ws, int64_t ws_floats) {
    lt_conv2d_geom g;
    lt_conv2d_geom_init_(&g, N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G);
    if (g.N <= 0 || g.OC <= 0 || g.OH <= 0 || g.OW <= 0) return;
    if (lt_conv2d_is_depthwise_(&g)) {
        lt_conv2d_depthwise_(&g, x, wp, y, ep);
        return;
    }
#if LT_CD_ENABLED
    lt_cd_plan cp;
    if (lt_cd_plan_(&cp, &g, ws ? ws_floats : 0, lt_nthreads())) {
        lt_cd_run_(&cp, x, wp, y, ep, ws);
        return;
    }
#endif
    int64_t ocg = OC / g.G, cg = C / g.G, kg = cg * KH * KW, OHW = g.OH * g.OW;
    lt_gemm_prob P;
    memset(&P, 0, sizeof P);
    P.M = ocg, P.N = OHW, P.K = kg;
    P.a.p = wp, P.a.mode = LT_GEMM_PACKED, P.a.R = ocg, P.a.pw = lt_conv2d_pw_(ocg);
    P.b.R = OHW;
    if (KH == 1 && KW == 1 && g.SH == 1 && g.SW == 1 && PH0 == 0 && PW0 == 0 && g.OH == H && g.OW == W) {
        P.b.p = x, P.b.ld = OHW, P.b.mode = LT_GEMM_N; /* x_g is the [C/G, H*W] matrix itself */
    } else {
        P.b.p = x, P.b.mode = LT_GEMM_N, P.b.pack = lt_conv2d_pack_b_, P.b.ctx = &g;
    }
    P.C = y, P.ldc = OHW, P.alpha = 1.0f, P.beta = 0.0f;
    if (ep) {
        P.ep = *ep, P.has_ep = 1;
        P.ep.bias_per_row = 1;
        P.ep.ldr = OHW;
    }
    P.b1 = g.N, P.b2 = g.G;
    P.sa1 = 0, P.sa2 = lt_sgemm_packed_a_size(ocg, kg);
    P.sb1 = C * H * W, P.sb2 = cg * H * W;
    P.sc1 = OC * OHW, P.sc2 = ocg * OHW;
    P.sr1 = P.sc1, P.sr2 = P.sc2;
    P.sbias2 = ocg;
    lt_gemm_run_(&P, ws, ws_floats, lt_nthreads());
}

LT_FN void lt_conv2d_f32(float *y, const float *x, const float *wp, const float *bias, const float *residual,
                         float *ws, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW,
                         int64_t SH, int64_t SW, int64_t PH0, int64_t PW0, int64_t PH1, int64_t PW1, int64_t DH,
                         int64_t DW, int64_t G, int64_t bias_mode, int64_t res_mode, int64_t act, float act_a,
                         float act_b, int64_t ws_floats) {
    lt_epilogue ep;
    memset(&ep, 0, sizeof ep);
    ep.bias = bias_mode ? bias : 0;
    ep.residual = res_mode ? residual : 0;
    ep.residual_after_act = res_mode == 2;
    ep.act = (int)act;
    ep.act_a = act_a;
    ep.act_b = act_b;
    lt_conv2d(y, x, wp, N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, G, &ep, ws, ws_floats);
}

#endif
