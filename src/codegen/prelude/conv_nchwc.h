/* conv_nchwc.h — channel-blocked (NCHW{B}c) convolution, pooling and reorders, float32, for the
 * lathe NchwcConv / Nchwc*Pool / NchwcReorder* ops (src/lower/lower_nchwc.c).
 *
 * A blocked tensor is [N, Cb, H, W, B]: one vector holds B channels of one pixel. All `static`,
 * named lt_nchwc_*; no allocation, printing or aborting. Threads: OpenMP over independent rows.
 *
 * ---- API ----------------------------------------------------------------------------------------
 *   void lt_nchwc_conv_pack(dst, w, M, C, KH, KW, dw, B)
 *       w [M, C or 1, KH, KW] -> dense [ceil(M/B)][ceil(C/B)][KH][KW][B in][B out], depthwise
 *       (dw != 0, M == C) [ceil(C/B)][KH][KW][B]; padding channels are 0.
 *   void lt_nchwc_conv_f32(y, x, wpacked, bias, res, N, C, H, W, M, KH, KW, SH, SW, PH, PW, DH, DW,
 *                          OH, OW, dw, B, has_bias, res_mode, act, act_a, act_b)
 *       y [N, ceil(M/B), OH, OW, B] = conv(x [N, ceil(C/B), H, W, B]) (+ bias[M]), res (y's shape)
 *       added before (res_mode 1) or after (2) the activation (abi.h's LT_ACT_*). PH/PW are the
 *       top/left pads (the bottom/right ones only shape OH/OW). Padding lanes of y: act(0 + res).
 *   void lt_nchwc_pool_f32(y, x, NC, H, W, OH, OW, KH, KW, SH, SW, PH, PW, PH1, PW1, DH, DW,
 *                          is_max, include_pad, B)     NC = N * Cb planes; global: KH=H, KW=W
 *   void lt_nchwc_reorder_in_f32(y, x, N, C, HW, B)    [N,C,HW] -> [N,ceil(C/B),HW,B], pad 0
 *   void lt_nchwc_reorder_out_f32(y, x, N, C, HW, B)   the inverse (drops the padding lanes)
 *
 * ---- Design -------------------------------------------------------------------------------------
 * The fast paths need B == LT_NCB, the f32 vector width this file is compiled for (16 with
 * AVX-512, else 8); any other B runs portable scalar loops (correct, slow).
 * Dense conv: a tile is 2 output-channel blocks x NP consecutive output pixels of one row in
 * registers (LT_NCB 16: NP 12, 24 zmm accumulators; 8: NP 6); for each input channel block, tap
 * and input lane i it loads the 2 weight vectors [i][0..B) and broadcasts each pixel's input lane:
 * 2*NP FMAs per 2 loads + NP broadcasts. Rows clip the kernel rows that fall in the padding; the
 * columns whose window leaves the image run one pixel at a time with clipped taps, the interior in
 * full tiles. Work items (image, channel-block pair, output row) are shared by the threads. A 1x1
 * stride-1 unpadded conv is a GEMM over pixels: work items are chunks of LT_NCPC pixels (their input
 * stays in L1) that meet every output block pair in turn. The epilogue (bias, residual before or
 * after the activation) is unrolled over the tile so the accumulators stay in registers; none /
 * ReLU / Clip are one max and one min (a spilled, per-vector switch cost ~15 cycles per vector). Depthwise: strips of up to LT_NCDWP (12) interior
 * pixels of a row in registers, each tap one weight vector and one FMA per pixel (the input vector
 * a memory operand); the border columns one pixel at a time with clipped taps.
 */
#ifndef LT_PRELUDE_CONV_NCHWC_H
#define LT_PRELUDE_CONV_NCHWC_H

#include "gemm.h"

#if defined(__AVX512F__)
#define LT_NCB 16
#define LT_NCNP 12
#define LT_NCDWP 12
#define LT_NCPC 48
#else
#define LT_NCB 8
#define LT_NCNP 6
#define LT_NCDWP 12
#define LT_NCPC 48
#endif
typedef float lt_ncv __attribute__((vector_size(LT_NCB * 4)));
typedef int32_t lt_nci __attribute__((vector_size(LT_NCB * 4)));
/* m ? a : b per lane (m: a comparison's all-ones / zero lanes; C has no vector ?:) */
#define LT_NCSEL(m, a, b) ((lt_ncv)(((m) & (lt_nci)(a)) | (~(m) & (lt_nci)(b))))

#define LT_NCLOAD(p) LT_VLOAD(lt_ncv, (p))
#define LT_NCSTORE(p, v) LT_VSTORE((p), (v))

LT_FN int64_t lt_nchwc_cdiv_(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- weights ---- */
LT_FN void lt_nchwc_conv_pack(float *dst, const float *w, int64_t M, int64_t C, int64_t KH, int64_t KW, int64_t dw,
                              int64_t B) {
    int64_t Mb = lt_nchwc_cdiv_(M, B), Cb = lt_nchwc_cdiv_(C, B), KK = KH * KW;
    if (dw) {
        memset(dst, 0, sizeof(float) * (size_t)(Cb * KK * B));
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < KK; k++) dst[((c / B) * KK + k) * B + c % B] = w[c * KK + k];
        return;
    }
    memset(dst, 0, sizeof(float) * (size_t)(Mb * Cb * KK * B * B));
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < KK; k++)
                dst[((((m / B) * Cb + c / B) * KK + k) * B + c % B) * B + m % B] = w[(m * C + c) * KK + k];
}

/* ---- epilogue of one output vector ---- */
/* max(lo, v) / min(hi, v) with v's NaN kept: x86's max/min return the second operand when one is
 * NaN, i.e. exactly v < lo ? lo : v (one instruction instead of a compare and a blend). */
LT_FN lt_ncv lt_nchwc_max_(lt_ncv lo, lt_ncv v) {
#if defined(__AVX512F__)
    return (lt_ncv)_mm512_max_ps((__m512)lo, (__m512)v);
#elif defined(__AVX2__) && defined(__FMA__)
    return (lt_ncv)_mm256_max_ps((__m256)lo, (__m256)v);
#else
    return LT_NCSEL(v < lo, lo, v);
#endif
}
LT_FN lt_ncv lt_nchwc_min_(lt_ncv hi, lt_ncv v) {
#if defined(__AVX512F__)
    return (lt_ncv)_mm512_min_ps((__m512)hi, (__m512)v);
#elif defined(__AVX2__) && defined(__FMA__)
    return (lt_ncv)_mm256_min_ps((__m256)hi, (__m256)v);
#else
    return LT_NCSEL(v > hi, hi, v);
#endif
}

LT_FN lt_ncv lt_nchwc_act_(lt_ncv v, int act, float a, float b) {
    lt_ncv zero = {0};
    switch (act) {
    case LT_ACT_NONE: return v;
    case LT_ACT_RELU: return lt_nchwc_max_(zero, v); /* NaN stays NaN */
    case LT_ACT_CLIP: return lt_nchwc_min_(zero + b, lt_nchwc_max_(zero + a, v));
    default: {
        float t[LT_NCB];
        memcpy(t, &v, sizeof t);
        for (int l = 0; l < LT_NCB; l++) t[l] = lt_act_f32(t[l], act, a, b);
        memcpy(&v, t, sizeof t);
        return v;
    }
    }
}

typedef struct lt_nchwc_geom_ {
    int64_t Cb, H, W, Mb, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, M;
    int res_mode, act;
    float act_a, act_b;
} lt_nchwc_geom_;

LT_FN void lt_nchwc_store_(const lt_nchwc_geom_ *g, lt_ncv v, float *yp, const float *rp) {
    if (g->res_mode == 1) v += LT_NCLOAD(rp);
    v = lt_nchwc_act_(v, g->act, g->act_a, g->act_b);
    if (g->res_mode == 2) v += LT_NCLOAD(rp);
    LT_NCSTORE(yp, v);
}

/* The epilogue of n accumulators (output vectors y + j*B, residual res + j*B), unrolled so they stay
 * in registers: no activation, ReLU and Clip are one max and one min (bounds -inf/+inf where there
 * is none), branch-free per vector; other activations go through lt_nchwc_store_. */
LT_FN __attribute__((always_inline)) void lt_nchwc_store_n_(const lt_nchwc_geom_ *g, const lt_ncv *acc, int n, float *y,
                                                            const float *res) {
    const int64_t B = LT_NCB;
    if (g->act == LT_ACT_NONE || g->act == LT_ACT_RELU || g->act == LT_ACT_CLIP) {
        lt_ncv lo = {0}, hi = {0};
        lo += g->act == LT_ACT_NONE ? -LT_INF_F32 : g->act == LT_ACT_RELU ? 0.0f : g->act_a;
        hi += g->act == LT_ACT_CLIP ? g->act_b : LT_INF_F32;
        if (!res) {
#pragma GCC unroll 16
            for (int j = 0; j < n; j++) LT_NCSTORE(y + j * B, lt_nchwc_min_(hi, lt_nchwc_max_(lo, acc[j])));
        } else if (g->res_mode == 1) {
#pragma GCC unroll 16
            for (int j = 0; j < n; j++)
                LT_NCSTORE(y + j * B, lt_nchwc_min_(hi, lt_nchwc_max_(lo, acc[j] + LT_NCLOAD(res + j * B))));
        } else {
#pragma GCC unroll 16
            for (int j = 0; j < n; j++)
                LT_NCSTORE(y + j * B, lt_nchwc_min_(hi, lt_nchwc_max_(lo, acc[j])) + LT_NCLOAD(res + j * B));
        }
        return;
    }
    for (int j = 0; j < n; j++) lt_nchwc_store_(g, acc[j], y + j * B, res ? res + j * B : NULL);
}

/* Dense tile: NOB (1, 2) channel blocks x np pixels starting at column ow0 of row oh, taps rows
 * [kh0, kh1), columns [kw0, kw1) (np == 1 when clipped). x, y, res: image base; w: block ob's. */
LT_FN __attribute__((always_inline)) void lt_nchwc_tile_(const lt_nchwc_geom_ *g, const float *x, const float *w,
                                                         const float *bias, float *y, const float *res, int64_t ob,
                                                         int nob, int np, int64_t oh, int64_t ow0, int64_t kh0,
                                                         int64_t kh1, int64_t kw0, int64_t kw1) {
    lt_ncv acc[2][LT_NCNP];
#pragma GCC unroll 2
    for (int o = 0; o < nob; o++) {
        lt_ncv b0 = {0};
        if (bias) memcpy(&b0, bias + (ob + o) * LT_NCB, sizeof b0);
#pragma GCC unroll 16
        for (int j = 0; j < np; j++) acc[o][j] = b0;
    }
    const int64_t B = LT_NCB, KK = g->KH * g->KW, wob = g->Cb * KK * B * B, HWB = g->H * g->W * B;
    const int64_t ih0 = oh * g->SH - g->PH, iw0 = ow0 * g->SW - g->PW, xs = g->SW * B;
    for (int64_t ib = 0; ib < g->Cb; ib++) {
        const float *xc = x + ib * HWB, *wc = w + ib * KK * B * B;
        for (int64_t kh = kh0; kh < kh1; kh++) {
            const float *xr = xc + (ih0 + kh * g->DH) * g->W * B;
            for (int64_t kw = kw0; kw < kw1; kw++) {
                const float *xk = xr + (iw0 + kw * g->DW) * B, *wk = wc + (kh * g->KW + kw) * B * B;
                for (int64_t i = 0; i < B; i++) {
                    lt_ncv w0 = LT_NCLOAD(wk + i * B), w1 = w0;
                    if (nob > 1) w1 = LT_NCLOAD(wk + wob + i * B);
#pragma GCC unroll 16
                    for (int j = 0; j < np; j++) {
                        float xv = xk[j * xs + i];
                        acc[0][j] += xv * w0;
                        if (nob > 1) acc[1][j] += xv * w1;
                    }
                }
            }
        }
    }
#pragma GCC unroll 2
    for (int o = 0; o < nob; o++) {
        int64_t off = (((ob + o) * g->OH + oh) * g->OW + ow0) * B;
        lt_nchwc_store_n_(g, acc[o], np, y + off, res ? res + off : NULL);
    }
}

/* Full tiles of every width, so each is unrolled with its accumulators in registers. */
#define LT_NCTILE_CASE(NP)                                                                          \
    case NP: lt_nchwc_tile_(g, x, w, bias, y, res, ob, nob, NP, oh, ow, kh0, kh1, 0, g->KW); break;
#if LT_NCNP > 6
#define LT_NCTILE_MORE LT_NCTILE_CASE(7) LT_NCTILE_CASE(8) LT_NCTILE_CASE(9) LT_NCTILE_CASE(10) LT_NCTILE_CASE(11) LT_NCTILE_CASE(12)
#else
#define LT_NCTILE_MORE
#endif
#define LT_NCTILE_SWITCH                                                                            \
    switch (np) {                                                                                   \
        LT_NCTILE_CASE(1) LT_NCTILE_CASE(2) LT_NCTILE_CASE(3) LT_NCTILE_CASE(4) LT_NCTILE_CASE(5)    \
        LT_NCTILE_CASE(6) LT_NCTILE_MORE                                                            \
    default: break;                                                                                 \
    }
LT_FN void lt_nchwc_tiles_(const lt_nchwc_geom_ *g, const float *x, const float *w, const float *bias, float *y,
                           const float *res, int64_t ob, int nob, int np, int64_t oh, int64_t ow, int64_t kh0,
                           int64_t kh1) {
    /* the same switch twice: in each branch nob is a constant the unrolled tile is specialized for */
    if (nob == 2) {
        LT_NCTILE_SWITCH
    } else {
        nob = 1;
        LT_NCTILE_SWITCH
    }
}
#undef LT_NCTILE_SWITCH
#undef LT_NCTILE_MORE
#undef LT_NCTILE_CASE

/* Valid tap range [k0, k1) of a window starting at input position p0 (step d) in [0, n). */
LT_FN void lt_nchwc_clip_(int64_t p0, int64_t d, int64_t K, int64_t n, int64_t *k0, int64_t *k1) {
    int64_t a = 0, b = K;
    while (a < K && p0 + a * d < 0) a++;
    while (b > a && p0 + (b - 1) * d >= n) b--;
    *k0 = a, *k1 = b;
}

/* One output row of channel blocks [ob, ob+nob) of one image. */
LT_FN void lt_nchwc_conv_row_(const lt_nchwc_geom_ *g, const float *x, const float *wp, const float *bias, float *y,
                              const float *res, int64_t ob, int nob, int64_t oh) {
    const float *w = wp + ob * g->Cb * g->KH * g->KW * LT_NCB * LT_NCB;
    int64_t kh0, kh1;
    lt_nchwc_clip_(oh * g->SH - g->PH, g->DH, g->KH, g->H, &kh0, &kh1);
    /* interior columns: every tap inside */
    int64_t lo = 0, hi = g->OW;
    while (lo < g->OW && lo * g->SW - g->PW < 0) lo++;
    while (hi > lo && (hi - 1) * g->SW - g->PW + (g->KW - 1) * g->DW >= g->W) hi--;
    for (int64_t ow = 0; ow < g->OW; ow++) {
        if (ow >= lo && ow < hi) {
            int np = (int)(hi - ow < LT_NCNP ? hi - ow : LT_NCNP);
            lt_nchwc_tiles_(g, x, w, bias, y, res, ob, nob, np, oh, ow, kh0, kh1);
            ow += np - 1;
            continue;
        }
        int64_t kw0, kw1;
        lt_nchwc_clip_(ow * g->SW - g->PW, g->DW, g->KW, g->W, &kw0, &kw1);
        if (nob == 2) lt_nchwc_tile_(g, x, w, bias, y, res, ob, 2, 1, oh, ow, kh0, kh1, kw0, kw1);
        else lt_nchwc_tile_(g, x, w, bias, y, res, ob, 1, 1, oh, ow, kh0, kh1, kw0, kw1);
    }
}

/* Depthwise: NP consecutive interior pixels (every column tap inside) of row oh in registers,
 * kernel rows [kh0, kh1): one weight vector per tap, NP input vectors and FMAs against it. */
LT_FN __attribute__((always_inline)) void lt_nchwc_dw_strip_(const lt_nchwc_geom_ *g, const float *xc, const float *wc,
                                                             lt_ncv b0, float *y, const float *res, int np, int64_t oh,
                                                             int64_t ow0, int64_t kh0, int64_t kh1) {
    const int64_t B = LT_NCB, xs = g->SW * B;
    lt_ncv acc[LT_NCDWP];
#pragma GCC unroll 16
    for (int j = 0; j < np; j++) acc[j] = b0;
    const float *x0 = xc + (ow0 * g->SW - g->PW) * B;
    for (int64_t kh = kh0; kh < kh1; kh++) {
        const float *xr = x0 + (oh * g->SH - g->PH + kh * g->DH) * g->W * B;
        const float *wr = wc + kh * g->KW * B;
        for (int64_t kw = 0; kw < g->KW; kw++) {
            lt_ncv wv = LT_NCLOAD(wr + kw * B);
            const float *xk = xr + kw * g->DW * B;
#pragma GCC unroll 16
            for (int j = 0; j < np; j++) acc[j] += LT_NCLOAD(xk + j * xs) * wv;
        }
    }
    lt_nchwc_store_n_(g, acc, np, y, res);
}

#define LT_NCDW_CASE(NP)                                                                            \
    case NP: lt_nchwc_dw_strip_(g, xc, wc, b0, y + off, res ? res + off : NULL, NP, oh, ow, kh0, kh1); break;

/* Depthwise: one output row of block cb (y, res: the image's). */
LT_FN void lt_nchwc_dw_row_(const lt_nchwc_geom_ *g, const float *x, const float *wp, const float *bias, float *y,
                            const float *res, int64_t cb, int64_t oh) {
    const int64_t B = LT_NCB;
    const float *xc = x + cb * g->H * g->W * B, *wc = wp + cb * g->KH * g->KW * B;
    int64_t kh0, kh1;
    lt_nchwc_clip_(oh * g->SH - g->PH, g->DH, g->KH, g->H, &kh0, &kh1);
    lt_ncv b0 = {0};
    if (bias) memcpy(&b0, bias + cb * B, sizeof b0);
    int64_t lo = 0, hi = g->OW; /* interior columns */
    while (lo < g->OW && lo * g->SW - g->PW < 0) lo++;
    while (hi > lo && (hi - 1) * g->SW - g->PW + (g->KW - 1) * g->DW >= g->W) hi--;
    for (int64_t ow = 0; ow < g->OW; ow++) {
        int64_t off = ((cb * g->OH + oh) * g->OW + ow) * B;
        if (ow >= lo && ow < hi) {
            int np = (int)(hi - ow < LT_NCDWP ? hi - ow : LT_NCDWP);
            switch (np) {
            LT_NCDW_CASE(1) LT_NCDW_CASE(2) LT_NCDW_CASE(3) LT_NCDW_CASE(4) LT_NCDW_CASE(5) LT_NCDW_CASE(6)
            LT_NCDW_CASE(7) LT_NCDW_CASE(8) LT_NCDW_CASE(9) LT_NCDW_CASE(10) LT_NCDW_CASE(11) LT_NCDW_CASE(12)
            default: break;
            }
            ow += np - 1;
            continue;
        }
        int64_t kw0, kw1, iw0 = ow * g->SW - g->PW;
        lt_nchwc_clip_(iw0, g->DW, g->KW, g->W, &kw0, &kw1);
        lt_ncv acc = b0;
        for (int64_t kh = kh0; kh < kh1; kh++) {
            const float *xr = xc + (oh * g->SH - g->PH + kh * g->DH) * g->W * B;
            for (int64_t kw = kw0; kw < kw1; kw++)
                acc += LT_NCLOAD(xr + (iw0 + kw * g->DW) * B) * LT_NCLOAD(wc + (kh * g->KW + kw) * B);
        }
        lt_nchwc_store_(g, acc, y + off, res ? res + off : NULL);
    }
}
#undef LT_NCDW_CASE

/* Any B: plain loops (the generated code was built for another vector width). */
LT_FN void lt_nchwc_conv_any_(const lt_nchwc_geom_ *g, int64_t N, int64_t B, int64_t dw, const float *x, const float *wp,
                              const float *bias, float *y, const float *res) {
    int64_t KK = g->KH * g->KW;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < g->Mb * B; m++)
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    float acc = bias && m < g->M ? bias[m] : 0.0f;
                    for (int64_t c = dw ? m : 0; c < (dw ? m + 1 : g->Cb * B); c++)
                        for (int64_t kh = 0; kh < g->KH; kh++) {
                            int64_t ih = oh * g->SH - g->PH + kh * g->DH;
                            if (ih < 0 || ih >= g->H) continue;
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t iw = ow * g->SW - g->PW + kw * g->DW;
                                if (iw < 0 || iw >= g->W) continue;
                                float xv = x[(((n * g->Cb + c / B) * g->H + ih) * g->W + iw) * B + c % B];
                                float wv = dw ? wp[((c / B) * KK + kh * g->KW + kw) * B + c % B]
                                              : wp[((((m / B) * g->Cb + c / B) * KK + kh * g->KW + kw) * B + c % B) * B + m % B];
                                acc += xv * wv;
                            }
                        }
                    int64_t off = (((n * g->Mb + m / B) * g->OH + oh) * g->OW + ow) * B + m % B;
                    if (g->res_mode == 1) acc += res[off];
                    acc = lt_act_f32(acc, g->act, g->act_a, g->act_b);
                    if (g->res_mode == 2) acc += res[off];
                    y[off] = acc;
                }
}

LT_FN void lt_nchwc_conv_f32(float *y, const float *x, const float *wp, const float *bias, const float *res, int64_t N,
                             int64_t C, int64_t H, int64_t W, int64_t M, int64_t KH, int64_t KW, int64_t SH, int64_t SW,
                             int64_t PH, int64_t PW, int64_t DH, int64_t DW, int64_t OH, int64_t OW, int64_t dw, int64_t B,
                             int64_t has_bias, int64_t res_mode, int64_t act, float act_a, float act_b) {
    lt_nchwc_geom_ g = {lt_nchwc_cdiv_(C, B), H, W, lt_nchwc_cdiv_(M, B), KH, KW, SH, SW, PH, PW, DH, DW, OH, OW, M,
                        (int)res_mode, (int)act, act_a, act_b};
    if (!res_mode) res = NULL;
    /* padded bias: the padding channels get 0 */
    float bpad[4096 + 64];
    const float *bp = NULL;
    if (has_bias) {
        if (g.Mb * B <= 4096) {
            memset(bpad, 0, sizeof(float) * (size_t)(g.Mb * B));
            memcpy(bpad, bias, sizeof(float) * (size_t)M);
            bp = bpad;
        }
    }
    if (B != LT_NCB || (has_bias && !bp)) {
        if (has_bias && !bp) { /* very wide: the scalar path reads bias[m < M] */
            lt_nchwc_conv_any_(&g, N, B, dw, x, wp, bias, y, res);
            return;
        }
        lt_nchwc_conv_any_(&g, N, B, dw, x, wp, bp, y, res);
        return;
    }
    int64_t xim = g.Cb * H * W * B, yim = g.Mb * OH * OW * B;
    int T = lt_nthreads();
    if (!dw && KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH == 0 && PW == 0 && OH == H && OW == W) {
        /* 1x1: a GEMM over pixels. A chunk of up to LT_NCPC pixels (its input, Cb lines per pixel,
         * stays in L1) meets every output block pair in turn (the weights, Cb KiB per block pair).
         * Chunks split an image evenly, in a multiple of the threads (7x7 in chunks of 48 and 1
         * left one thread idle). */
        int64_t HW = H * W, chunks = lt_nchwc_cdiv_(HW, LT_NCPC), pairs = (g.Mb + 1) / 2;
        if (T > 1 && N % T != 0) chunks = lt_nchwc_cdiv_(chunks, T) * T;
        if (chunks > HW) chunks = HW;
        int64_t items = N * chunks;
        g.W = g.OW = HW, g.H = g.OH = 1;
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1 && items > 1)
        for (int64_t it = 0; it < items; it++) {
            int64_t n = it / chunks, p0 = it % chunks * HW / chunks, p1 = (it % chunks + 1) * HW / chunks;
            const float *xn = x + n * xim;
            float *yn = y + n * yim;
            const float *rn = res ? res + n * yim : NULL;
            for (int64_t pr = 0; pr < pairs; pr++) {
                int64_t ob = pr * 2;
                int nob = ob + 1 < g.Mb ? 2 : 1;
                const float *w = wp + ob * g.Cb * LT_NCB * LT_NCB;
                for (int64_t p = p0; p < p1; p += LT_NCNP) {
                    int np = (int)(p1 - p < LT_NCNP ? p1 - p : LT_NCNP);
                    lt_nchwc_tiles_(&g, xn, w, bp, yn, rn, ob, nob, np, 0, p, 0, 1);
                }
            }
        }
        return;
    }
    if (dw) {
        int64_t items = N * g.Mb * g.OH;
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1 && items > 1)
        for (int64_t it = 0; it < items; it++) {
            int64_t n = it / (g.Mb * g.OH), cb = it / g.OH % g.Mb, oh = it % g.OH;
            lt_nchwc_dw_row_(&g, x + n * xim, wp, bp, y + n * yim, res ? res + n * yim : NULL, cb, oh);
        }
        return;
    }
    int64_t pairs = (g.Mb + 1) / 2, items = N * pairs * g.OH;
#pragma omp parallel for schedule(dynamic, 1) num_threads(T) if (T > 1 && items > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t n = it / (pairs * g.OH), pr = it / g.OH % pairs, oh = it % g.OH, ob = pr * 2;
        int nob = ob + 1 < g.Mb ? 2 : 1;
        lt_nchwc_conv_row_(&g, x + n * xim, wp, bp, y + n * yim, res ? res + n * yim : NULL, ob, nob, oh);
    }
}

/* ---- pooling ---- */
LT_FN void lt_nchwc_pool_f32(float *y, const float *x, int64_t NC, int64_t H, int64_t W, int64_t OH, int64_t OW,
                             int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PH, int64_t PW, int64_t PH1,
                             int64_t PW1, int64_t DH, int64_t DW, int64_t is_max, int64_t include_pad, int64_t B) {
    int T = lt_nthreads();
    int64_t items = NC * OH;
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1 && items > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t p = it / OH, oh = it % OH, kh0, kh1, ih0 = oh * SH - PH;
        lt_nchwc_clip_(ih0, DH, KH, H, &kh0, &kh1);
        int64_t rows_pad = 0; /* kernel rows inside the explicitly padded input */
        for (int64_t kh = 0; kh < KH; kh++) rows_pad += ih0 + kh * DH < H + PH1;
        const float *xp = x + p * H * W * B;
        for (int64_t ow = 0; ow < OW; ow++) {
            int64_t kw0, kw1, iw0 = ow * SW - PW, cols_pad = 0;
            lt_nchwc_clip_(iw0, DW, KW, W, &kw0, &kw1);
            for (int64_t kw = 0; kw < KW; kw++) cols_pad += iw0 + kw * DW < W + PW1;
            float *yp = y + ((p * OH + oh) * OW + ow) * B;
            if (B == LT_NCB) {
                lt_ncv acc = {0};
                if (is_max) acc -= LT_INF_F32;
                for (int64_t kh = kh0; kh < kh1; kh++)
                    for (int64_t kw = kw0; kw < kw1; kw++) {
                        lt_ncv v = LT_NCLOAD(xp + ((ih0 + kh * DH) * W + iw0 + kw * DW) * B);
                        if (is_max) acc = LT_NCSEL((v > acc) | (v != v), v, acc);
                        else acc += v;
                    }
                if (!is_max) {
                    int64_t cnt = include_pad ? rows_pad * cols_pad : (kh1 - kh0) * (kw1 - kw0);
                    acc = cnt ? acc / (float)cnt : acc * 0.0f;
                }
                LT_NCSTORE(yp, acc);
                continue;
            }
            for (int64_t l = 0; l < B; l++) {
                float acc = is_max ? -LT_INF_F32 : 0.0f;
                for (int64_t kh = kh0; kh < kh1; kh++)
                    for (int64_t kw = kw0; kw < kw1; kw++) {
                        float v = xp[((ih0 + kh * DH) * W + iw0 + kw * DW) * B + l];
                        acc = is_max ? (v > acc || v != v ? v : acc) : acc + v;
                    }
                if (!is_max) {
                    int64_t cnt = include_pad ? rows_pad * cols_pad : (kh1 - kh0) * (kw1 - kw0);
                    acc = cnt ? acc / (float)cnt : 0.0f;
                }
                yp[l] = acc;
            }
        }
    }
}

/* ---- reorders ---- */
LT_FN void lt_nchwc_reorder_in_f32(float *y, const float *x, int64_t N, int64_t C, int64_t HW, int64_t B) {
    int64_t Cb = lt_nchwc_cdiv_(C, B), items = N * Cb;
    int T = lt_nthreads();
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1 && items > 1 && HW * B > 4096)
    for (int64_t it = 0; it < items; it++) {
        int64_t n = it / Cb, cb = it % Cb, c0 = cb * B, nc = C - c0 < B ? C - c0 : B;
        const float *xs = x + (n * C + c0) * HW;
        float *yd = y + it * HW * B;
        int64_t p0 = 0;
#if defined(__AVX512F__)
        if (B == 16 && nc == 16) /* whole blocks: 16 x 16 register transposes */
            for (; p0 + 16 <= HW; p0 += 16) lt_gemm_tr16_(yd + p0 * B, B, xs + p0, HW);
#endif
        for (; p0 < HW; p0 += 16) { /* 16 pixels x B channels: a transposed tile */
            int64_t np = HW - p0 < 16 ? HW - p0 : 16;
            for (int64_t p = 0; p < np; p++)
                for (int64_t l = nc; l < B; l++) yd[(p0 + p) * B + l] = 0.0f;
            for (int64_t l = 0; l < nc; l++)
                for (int64_t p = 0; p < np; p++) yd[(p0 + p) * B + l] = xs[l * HW + p0 + p];
        }
    }
}

LT_FN void lt_nchwc_reorder_out_f32(float *y, const float *x, int64_t N, int64_t C, int64_t HW, int64_t B) {
    int64_t Cb = lt_nchwc_cdiv_(C, B), items = N * Cb;
    int T = lt_nthreads();
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1 && items > 1 && HW * B > 4096)
    for (int64_t it = 0; it < items; it++) {
        int64_t n = it / Cb, cb = it % Cb, c0 = cb * B, nc = C - c0 < B ? C - c0 : B;
        const float *xs = x + it * HW * B;
        float *yd = y + (n * C + c0) * HW;
        int64_t p0 = 0;
#if defined(__AVX512F__)
        if (B == 16 && nc == 16)
            for (; p0 + 16 <= HW; p0 += 16) lt_gemm_tr16_(yd + p0, HW, xs + p0 * B, B);
#endif
        for (; p0 < HW; p0 += 16) {
            int64_t np = HW - p0 < 16 ? HW - p0 : 16;
            for (int64_t l = 0; l < nc; l++)
                for (int64_t p = 0; p < np; p++) yd[l * HW + p0 + p] = xs[(p0 + p) * B + l];
        }
    }
}

#endif
