/* conv_dw.h — depthwise 2-D convolution (NCHW float32, G == C, OC a multiple of C) for conv.h.
 *
 * Included by conv.h after lt_conv2d_geom (never on its own); pasted into generated code with it.
 * Entry point: lt_conv2d_depthwise_(geom, x, w, y, ep) — w is [OC, KH, KW] as given (the
 * depthwise "packed" weights are a plain copy), ep the epilogue of gemm.h (bias per output
 * channel, residual of y's shape before or after the activation). No workspace, no allocation.
 *
 * Design. Output planes (n, oc) are shared out among threads (each reads one input plane), in
 * runs taken from a shared counter.
 *  - AVX-512, 3x3, stride 1 or 2, no dilation (MobileNet's shapes): the plane is cut into bands of
 *    up to 7 vectors of 16 output columns (112: a MobileNet row), and a band walks down the rows
 *    with its state in registers: each input row is loaded once and feeds every output row it
 *    belongs to (stride 1: as kernel rows 2, 1, 0 of three consecutive outputs, two partial sums
 *    per vector carried; stride 2: the row two outputs share, one carried), so an output vector
 *    costs 3 loads (stride 1) or 4 loads + 3 permutes per input row (stride 2), 9 FMAs and one
 *    store, and memory is read and written row by row (the prefetchers follow). Left/right
 *    padding and the ragged right edge are masked loads (lanes outside the row read as zero,
 *    nothing outside it is touched); rows above and below the image read as zero. Stride 2 loads
 *    32 contiguous input columns and deinterleaves them with vpermt2ps (even columns: tap 0, odd:
 *    tap 1; the same from 2 columns on: tap 2), so no strided gathers. The epilogue runs in
 *    registers: bias is the sums' initial value, residual (before) is a masked load, relu / clip /
 *    leaky relu are min/max; other activations (and a residual after them) run over the stored
 *    plane. One function per stride and band width (1, 2, 4 or 7 vectors), chosen through a table.
 *  - AVX-512, planes of at most 32 input and 16 output elements (any kernel up to 8x8, stride,
 *    dilation, padding): the input plane in two vectors, the output plane in one, a tap one permute
 *    and one FMA (lt_dw_tiny_planes_; taps wholly in the padding dropped).
 *  - AVX-512, stride 1 with the output the input's size, other kernels than 3x3 (5x5, 7x7, dilated):
 *    16 outputs of the flat plane read 16 contiguous inputs per tap, one masked load and one FMA
 *    (lt_dw_same_planes_).
 *  - AVX-512, output rows of at most 16 columns reading at most 32 input columns (any kernel up to
 *    16 wide, stride, dilation: MnasNet's 5x5 stride 2): an output row one vector (two rows when
 *    they have at most 8 outputs spanning at most 16 columns; then ahead of the "same" path), per
 *    kernel row the input span in two masked loads, per tap one permute and one FMA
 *    (lt_dw_narrow_planes_).
 *  - Everything else (other sizes, dilations, strides, no AVX-512): one output row at a time, the
 *    taps vectorized by the compiler over the interior columns, bounds-checked taps at the edges.
 */
#ifndef LT_PRELUDE_CONV_DW_H
#define LT_PRELUDE_CONV_DW_H

/* ---- generic path: one output row at a time ---- */
#define LT_DW_CHUNK 256 /* output columns per pass (the row buffer) */

/* Output row oh of plane (n, oc): taps from input plane xc (H x W), weights wk (KH x KW). */
LT_FN void lt_dw_row_(const lt_conv2d_geom *g, const float *xc, const float *wk, int64_t oh, float *out,
                      float b, const float *res, int act, float aa, float ab, int res_after) {
    const int64_t OW = g->OW, SW = g->SW;
    /* interior columns: every tap's iw = ow*SW - PW0 + kw*DW inside [0, W) */
    int64_t lo = g->PW0 > 0 ? (g->PW0 + SW - 1) / SW : 0;
    int64_t last = g->W - 1 + g->PW0 - (g->KW - 1) * g->DW; /* ow*SW <= last */
    int64_t hi = last < 0 ? 0 : last / SW + 1;
    if (hi > OW) hi = OW;
    if (lo > hi) lo = hi;
    for (int64_t c0 = 0; c0 < OW; c0 += LT_DW_CHUNK) {
        int64_t c1 = lt_gemm_min_(OW, c0 + LT_DW_CHUNK);
        float acc[LT_DW_CHUNK];
        for (int64_t q = 0; q < c1 - c0; q++) acc[q] = b;
        int64_t ilo = lo > c0 ? lo : c0, ihi = hi < c1 ? hi : c1;
        if (ihi < ilo) ihi = ilo;
        int64_t ih0 = oh * g->SH - g->PH0;
        if (g->KH == 3 && g->KW == 3 && ihi > ilo && ih0 >= 0 && ih0 + 2 * g->DH < g->H) {
            /* all nine taps inside the image: one pass, vectorised over ow */
            const float *r0 = xc + ih0 * g->W, *r1 = r0 + g->DH * g->W, *r2 = r1 + g->DH * g->W;
            const float w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3], w4 = wk[4], w5 = wk[5], w6 = wk[6],
                        w7 = wk[7], w8 = wk[8];
            int64_t D = g->DW, off = -g->PW0;
            if (SW == 1) {
                LT_PRAGMA_SIMD
                for (int64_t ow = ilo; ow < ihi; ow++) {
                    int64_t i = ow + off;
                    acc[ow - c0] += w0 * r0[i] + w1 * r0[i + D] + w2 * r0[i + 2 * D] + w3 * r1[i] + w4 * r1[i + D] +
                                    w5 * r1[i + 2 * D] + w6 * r2[i] + w7 * r2[i + D] + w8 * r2[i + 2 * D];
                }
            } else {
                LT_PRAGMA_SIMD
                for (int64_t ow = ilo; ow < ihi; ow++) {
                    int64_t i = ow * SW + off;
                    acc[ow - c0] += w0 * r0[i] + w1 * r0[i + D] + w2 * r0[i + 2 * D] + w3 * r1[i] + w4 * r1[i + D] +
                                    w5 * r1[i + 2 * D] + w6 * r2[i] + w7 * r2[i + D] + w8 * r2[i + 2 * D];
                }
            }
        } else if (ihi > ilo) {
            for (int64_t kh = 0; kh < g->KH; kh++) {
                int64_t ih = oh * g->SH - g->PH0 + kh * g->DH;
                if (ih < 0 || ih >= g->H) continue;
                const float *xr = xc + ih * g->W;
                for (int64_t kw = 0; kw < g->KW; kw++) {
                    float wv = wk[kh * g->KW + kw];
                    int64_t off = kw * g->DW - g->PW0;
                    LT_PRAGMA_SIMD
                    for (int64_t ow = ilo; ow < ihi; ow++) acc[ow - c0] += wv * xr[ow * SW + off];
                }
            }
        }
        /* border columns: bounds-checked taps */
        for (int64_t ow = c0; ow < c1; ow++) {
            if (ow >= ilo && ow < ihi) continue;
            float sacc = 0.0f;
            for (int64_t kh = 0; kh < g->KH; kh++) {
                int64_t ih = oh * g->SH - g->PH0 + kh * g->DH;
                if (ih < 0 || ih >= g->H) continue;
                for (int64_t kw = 0; kw < g->KW; kw++) {
                    int64_t iw = ow * SW - g->PW0 + kw * g->DW;
                    if (iw >= 0 && iw < g->W) sacc += wk[kh * g->KW + kw] * xc[ih * g->W + iw];
                }
            }
            acc[ow - c0] += sacc;
        }
        /* epilogue on the row chunk */
        int64_t n = c1 - c0;
        float *o = out + c0;
        const float *rr = res ? res + c0 : 0;
        if (rr && !res_after)
            for (int64_t q = 0; q < n; q++) acc[q] += rr[q];
        if (act == LT_ACT_RELU) {
            for (int64_t q = 0; q < n; q++) acc[q] = acc[q] < 0 ? 0.0f : acc[q];
        } else if (act == LT_ACT_CLIP) {
            for (int64_t q = 0; q < n; q++) acc[q] = acc[q] < aa ? aa : (acc[q] > ab ? ab : acc[q]);
        } else {
            lt_act_row_f32(acc, n, act, aa, ab);
        }
        if (rr && res_after)
            for (int64_t q = 0; q < n; q++) acc[q] += rr[q];
        memcpy(o, acc, (size_t)n * sizeof(float));
    }
}

/* ---- AVX-512 3x3 kernel: bands of up to 7 x 16 output columns, rows rolling top to bottom ---- */
#if defined(__AVX512F__)
#define LT_DW_BAND 7 /* vectors of 16 columns in a band */

/* Lanes i of a 16-wide access starting at column s with 0 <= s + i < n. */
LT_FN __mmask16 lt_dw_mask_(int64_t s, int64_t n) {
    int64_t a = s < 0 ? -s : 0, e = n - s;
    if (e > 16) e = 16;
    if (e <= a) return 0;
    return (__mmask16)((0xffffu >> (16 - e)) & (0xffffu << a));
}

/* The fast kernel's per-call state, shared by all planes: the epilogue, and the masks of output
 * vector j of a band starting at column ow0 (mk[j][0]: its output lanes; [1..3] or [1..4]: its
 * input loads, see LT_DW_TAPS) for the full bands and the last one. */
typedef struct lt_dw_ep {
    int act;      /* LT_ACT_*; NONE / RELU / CLIP / LEAKY_RELU run in registers (in_regs) */
    int in_regs;
    int res_mode; /* 0 none, 1 before the activation, 2 after it */
    float act_a, act_b;
} lt_dw_ep;

LT_FN void lt_dw_masks_(__mmask16 (*mk)[5], int nv, int64_t ow0, const lt_conv2d_geom *g) {
    for (int j = 0; j < nv; j++) {
        int64_t o = ow0 + 16 * j, c = o * g->SW - g->PW0; /* input column of lane 0, tap 0 */
        mk[j][0] = lt_dw_mask_(o, g->OW);
        if (g->SW == 1) { /* columns c, c+1, c+2 */
            mk[j][1] = lt_dw_mask_(c, g->W), mk[j][2] = lt_dw_mask_(c + 1, g->W);
            mk[j][3] = lt_dw_mask_(c + 2, g->W), mk[j][4] = 0;
        } else { /* columns c..c+31 (taps 0 and 1), c+2..c+33 (tap 2) */
            mk[j][1] = lt_dw_mask_(c, g->W), mk[j][2] = lt_dw_mask_(c + 16, g->W);
            mk[j][3] = lt_dw_mask_(c + 2, g->W), mk[j][4] = lt_dw_mask_(c + 18, g->W);
        }
    }
}

/* A band of NV output vectors (columns ow0 .. ow0+16*NV) of one plane, all OH rows, stride S (1
 * or 2). S and NV are constants at every call site: the band's state lives in registers. xr: the
 * input plane offset to the column of lane 0's tap 0 (ow0*S - PW0); y, res: the plane's output /
 * residual offset to column ow0. Rows roll through registers: each input row is loaded once and
 * feeds every output row it belongs to (stride 1: as kernel rows 2, 1, 0 of three consecutive
 * outputs, kept in A and B; stride 2: the row two outputs share, kept in A), so an output vector
 * costs 3 loads (stride 1) or 8 loads + 6 permutes (stride 2), 9 FMAs and a store, and memory is
 * read and written row by row. */
LT_GEMM_AI void lt_dw3_band_(const int S, const int NV, const float *xr, const lt_conv2d_geom *g,
                             const __mmask16 (*mk)[5], const float *wk, float b, float *y, const float *res,
                             const lt_dw_ep *e) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const int64_t H = g->H, W = g->W, PH0 = g->PH0, OH = g->OH, OW = g->OW;
    const __m512 zero = _mm512_setzero_ps(), bias = _mm512_set1_ps(b);
    const __m512 w0 = _mm512_set1_ps(wk[0]), w1 = _mm512_set1_ps(wk[1]), w2 = _mm512_set1_ps(wk[2]);
    const __m512 w3 = _mm512_set1_ps(wk[3]), w4 = _mm512_set1_ps(wk[4]), w5 = _mm512_set1_ps(wk[5]);
    const __m512 w6 = _mm512_set1_ps(wk[6]), w7 = _mm512_set1_ps(wk[7]), w8 = _mm512_set1_ps(wk[8]);
    const int res_mode = e->res_mode, in_regs = e->in_regs, leaky = e->act == LT_ACT_LEAKY_RELU;
    __m512 lo = _mm512_set1_ps(-LT_INF_F32), hi = _mm512_set1_ps(LT_INF_F32), la = _mm512_set1_ps(e->act_a);
    if (e->act == LT_ACT_RELU) lo = zero;
    if (e->act == LT_ACT_CLIP) lo = _mm512_set1_ps(e->act_a), hi = _mm512_set1_ps(e->act_b);
/* the three taps of input row ih (zero outside the image) for output vector j */
#define LT_DW_TAPS(ih, j, t0, t1, t2)                                                               \
    do {                                                                                          \
        if ((ih) < 0 || (ih) >= H) {                                                              \
            t0 = t1 = t2 = zero;                                                                  \
        } else if (S == 1) {                                                                      \
            const float *p_ = xr + (ih) * W + 16 * (j);                                           \
            t0 = _mm512_maskz_loadu_ps(mk[j][1], p_);                                             \
            t1 = _mm512_maskz_loadu_ps(mk[j][2], p_ + 1);                                         \
            t2 = _mm512_maskz_loadu_ps(mk[j][3], p_ + 2);                                         \
        } else {                                                                                  \
            const float *p_ = xr + (ih) * W + 32 * (j);                                           \
            __m512 a0_ = _mm512_maskz_loadu_ps(mk[j][1], p_);                                     \
            __m512 a1_ = _mm512_maskz_loadu_ps(mk[j][2], p_ + 16);                                \
            __m512 b0_ = _mm512_maskz_loadu_ps(mk[j][3], p_ + 2);                                 \
            __m512 b1_ = _mm512_maskz_loadu_ps(mk[j][4], p_ + 18);                                \
            t0 = _mm512_permutex2var_ps(a0_, ev, a1_);                                            \
            t1 = _mm512_permutex2var_ps(a0_, od, a1_);                                            \
            t2 = _mm512_permutex2var_ps(b0_, ev, b1_);                                            \
        }                                                                                         \
    } while (0)
#define LT_DW_ROW(acc, t0, t1, t2, wa, wb, wc) \
    _mm512_fmadd_ps(t2, wc, _mm512_fmadd_ps(t1, wb, _mm512_fmadd_ps(t0, wa, acc)))
    __m512 A[LT_DW_BAND], B[LT_DW_BAND], t0, t1, t2;
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) { /* A: output row 0 so far; stride 1: B: output row 1 so far */
        LT_DW_TAPS(-PH0, j, t0, t1, t2);
        A[j] = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
        B[j] = zero;
        if (S == 1) {
            LT_DW_TAPS(1 - PH0, j, t0, t1, t2);
            A[j] = LT_DW_ROW(A[j], t0, t1, t2, w3, w4, w5);
            B[j] = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
        }
    }
    for (int64_t o = 0; o < OH; o++) {
        float *yo = y + o * OW;
        const float *ro = res ? res + o * OW : 0;
        const int64_t ih = S == 1 ? o - PH0 + 2 : 2 * o - PH0 + 1;
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++) {
            __m512 v;
            LT_DW_TAPS(ih, j, t0, t1, t2);
            if (S == 1) {
                v = LT_DW_ROW(A[j], t0, t1, t2, w6, w7, w8);
                A[j] = LT_DW_ROW(B[j], t0, t1, t2, w3, w4, w5);
                B[j] = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
            } else {
                v = LT_DW_ROW(A[j], t0, t1, t2, w3, w4, w5);
                LT_DW_TAPS(ih + 1, j, t0, t1, t2);
                v = LT_DW_ROW(v, t0, t1, t2, w6, w7, w8);
                A[j] = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
            }
            const __mmask16 om = mk[j][0];
            if (res_mode == 1) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(om, ro + 16 * j));
            if (in_regs) {
                if (leaky) v = _mm512_fmadd_ps(la, _mm512_min_ps(zero, v), _mm512_max_ps(zero, v));
                else v = _mm512_min_ps(hi, _mm512_max_ps(lo, v)); /* relu / clip / none; NaN stays NaN */
                if (res_mode == 2) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(om, ro + 16 * j));
            }
            _mm512_mask_storeu_ps(yo + 16 * j, om, v);
        }
    }
#undef LT_DW_TAPS
#undef LT_DW_ROW
}

#define LT_DW_BAND_FN(S, NV)                                                                           \
    static __attribute__((noinline, unused)) void lt_dw3_band_##S##_##NV(                             \
        const float *xr, const lt_conv2d_geom *g, const __mmask16 (*mk)[5], const float *wk, float b,   \
        float *y, const float *res, const lt_dw_ep *e) {                                               \
        lt_dw3_band_(S, NV, xr, g, mk, wk, b, y, res, e);                                              \
    }
#define LT_DW_BAND_FNS(S) LT_DW_BAND_FN(S, 1) LT_DW_BAND_FN(S, 2) LT_DW_BAND_FN(S, 4) LT_DW_BAND_FN(S, 7)
LT_DW_BAND_FNS(1)
LT_DW_BAND_FNS(2)
typedef void (*lt_dw_band_fn)(const float *, const lt_conv2d_geom *, const __mmask16 (*)[5], const float *, float,
                              float *, const float *, const lt_dw_ep *);
/* by band width: 1, 2, 3-4, 5-7 vectors (a narrower band runs a wider instance; the extra
 * vectors' output lanes are masked off). MobileNet's rows (7, 14, 28, 56, 112) fit exactly. */
static const int lt_dw_band_nv[LT_DW_BAND] __attribute__((unused)) = {1, 2, 4, 4, 7, 7, 7};
static lt_dw_band_fn const lt_dw_band_table[2][LT_DW_BAND] __attribute__((unused)) = {
    {lt_dw3_band_1_1, lt_dw3_band_1_2, lt_dw3_band_1_4, lt_dw3_band_1_4, lt_dw3_band_1_7, lt_dw3_band_1_7,
     lt_dw3_band_1_7},
    {lt_dw3_band_2_1, lt_dw3_band_2_2, lt_dw3_band_2_4, lt_dw3_band_2_4, lt_dw3_band_2_7, lt_dw3_band_2_7,
     lt_dw3_band_2_7},
};

/* The planes [p0, p1) of the fast kernel: per plane its bands, then (activations not done in
 * registers) the activation and a residual after it over the stored plane. */
LT_FN void lt_dw3_planes_(const lt_conv2d_geom *g, const float *x, const float *w, float *y, const float *bias,
                          const float *res, const lt_dw_ep *e, int64_t p0, int64_t p1) {
    int64_t OW = g->OW, OHW = g->OH * OW, mult = g->OC / g->C, full = OW / (16 * LT_DW_BAND);
    int nlast = (int)lt_gemm_cdiv_(OW - full * 16 * LT_DW_BAND, 16); /* vectors in the last band */
    __mmask16 mfirst[LT_DW_BAND][5], mmid[LT_DW_BAND][5], mlast[LT_DW_BAND][5];
    if (full > 0) lt_dw_masks_(mfirst, LT_DW_BAND, 0, g);
    if (full > 1) lt_dw_masks_(mmid, LT_DW_BAND, 16 * LT_DW_BAND, g); /* interior bands: same masks */
    if (nlast) lt_dw_masks_(mlast, lt_dw_band_nv[nlast - 1], full * 16 * LT_DW_BAND, g);
    lt_dw_band_fn fb = lt_dw_band_table[g->SW - 1][LT_DW_BAND - 1];
    lt_dw_band_fn fl = nlast ? lt_dw_band_table[g->SW - 1][nlast - 1] : 0;
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / g->OC, oc = pl % g->OC, c = oc / mult;
        const float *xc = x + (n * g->C + c) * g->H * g->W - g->PW0;
        float *yp = y + pl * OHW;
        const float *rp = res ? res + pl * OHW : 0;
        const float *wk = w + oc * 9;
        float b = bias ? bias[oc] : 0.0f;
        for (int64_t i = 0; i <= full; i++) {
            int64_t ow0 = i * 16 * LT_DW_BAND;
            if (i == full && !nlast) break;
            lt_dw_band_fn f = i == full ? fl : fb;
            const __mmask16 (*mk)[5] = (const __mmask16 (*)[5])(i == full ? mlast : i == 0 ? mfirst : mmid);
            f(xc + ow0 * g->SW, g, mk, wk, b, yp + ow0, rp ? rp + ow0 : 0, e);
        }
        if (!e->in_regs) {
            lt_act_row_f32(yp, OHW, e->act, e->act_a, e->act_b);
            if (e->res_mode == 2)
                for (int64_t i = 0; i < OHW; i++) yp[i] += rp[i];
        }
    }
}
#endif

/* ---- AVX-512, tiny planes: the input plane in two vectors, the output plane in one ---- */
#if defined(__AVX512F__)
/* After a plane's sums are stored: the activation, then a residual added after it. */
LT_FN void lt_dw_plane_tail_(float *yp, const float *rp, int64_t n, int act, float aa, float ab, int res_after) {
    lt_act_row_f32(yp, n, act, aa, ab);
    if (rp && res_after)
        for (int64_t i = 0; i < n; i++) yp[i] += rp[i];
}

#define LT_DW_TINY_TAPS 64 /* at most 8x8 kernels */
/* Planes of at most 32 input and 16 output elements (the last layers of a mobile network at small
 * images: 4x4, 2x2): a tap is, for every output lane, one input element or none, the same for every
 * channel. Each tap with a lane inside the image becomes one index vector and mask, made once per
 * call; a plane is then one permute of its (at most two) input vectors and one FMA per live tap,
 * where the row path spent a bounds-checked row of mostly padding per output row. Taps outside the
 * image for every lane are dropped. */
typedef struct lt_dw_tiny {
    int n;                          /* live taps */
    int tap[LT_DW_TINY_TAPS];       /* their kh * KW + kw */
    __m512i idx[LT_DW_TINY_TAPS];   /* per output lane: the input element (of the two vectors) */
    __mmask16 m[LT_DW_TINY_TAPS];   /* the lanes whose element is inside the image */
} lt_dw_tiny;

LT_FN int lt_dw_tiny_fits_(const lt_conv2d_geom *g) {
    return g->H * g->W <= 32 && g->OH * g->OW <= 16 && g->KH * g->KW <= LT_DW_TINY_TAPS;
}

LT_FN void lt_dw_tiny_init_(const lt_conv2d_geom *g, lt_dw_tiny *t) {
    t->n = 0;
    for (int64_t kh = 0; kh < g->KH; kh++)
        for (int64_t kw = 0; kw < g->KW; kw++) {
            int32_t lane[16] = {0};
            __mmask16 m = 0;
            for (int64_t p = 0; p < g->OH * g->OW; p++) {
                int64_t ih = p / g->OW * g->SH - g->PH0 + kh * g->DH, iw = p % g->OW * g->SW - g->PW0 + kw * g->DW;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                lane[p] = (int32_t)(ih * g->W + iw);
                m |= (__mmask16)(1u << p);
            }
            if (!m) continue;
            t->tap[t->n] = (int)(kh * g->KW + kw);
            t->idx[t->n] = _mm512_loadu_si512(lane);
            t->m[t->n++] = m;
        }
}

/* The planes [p0, p1): their outputs, then the activation and a residual after it over the plane. */
LT_FN void lt_dw_tiny_planes_(const lt_conv2d_geom *g, const lt_dw_tiny *t, const float *x, const float *w, float *y,
                              const float *bias, const float *res, int act, float aa, float ab, int res_after,
                              int64_t p0, int64_t p1) {
    int64_t HW = g->H * g->W, OHW = g->OH * g->OW, mult = g->OC / g->C, KHW = g->KH * g->KW;
    __mmask16 in0 = lt_dw_mask_(0, HW), in1 = lt_dw_mask_(16, HW), out = lt_dw_mask_(0, OHW);
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / g->OC, oc = pl % g->OC, c = oc / mult;
        const float *xc = x + (n * g->C + c) * HW, *wk = w + oc * KHW;
        __m512 x0 = _mm512_maskz_loadu_ps(in0, xc), x1 = _mm512_maskz_loadu_ps(in1, xc + 16);
        __m512 acc = _mm512_set1_ps(bias ? bias[oc] : 0.0f);
        for (int i = 0; i < t->n; i++)
            acc = _mm512_fmadd_ps(_mm512_maskz_permutex2var_ps(t->m[i], x0, t->idx[i], x1), _mm512_set1_ps(wk[t->tap[i]]),
                                  acc);
        float *yp = y + pl * OHW;
        const float *rp = res ? res + pl * OHW : 0;
        if (rp && !res_after) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(out, rp));
        _mm512_mask_storeu_ps(yp, out, acc);
        lt_dw_plane_tail_(yp, rp, OHW, act, aa, ab, res_after);
    }
}
#endif

/* ---- AVX-512, stride 1 with the output the input's size ("same" padding), any kernel ---- */
#if defined(__AVX512F__)
/* Then output element p (flat in the plane) reads input element p + (kh*DH - PH0)*W + kw*DW - PW0
 * at tap (kh, kw): 16 outputs in a row of the flat plane read 16 contiguous inputs, those outside the
 * image masked off (a masked load touches nothing there). A tap per output vector is one masked load
 * and one FMA; the masks, the same for every channel, are made per vector of the plane as it goes.
 * (5x5 and 7x7 depthwise layers of EfficientNet / MnasNet / MobileNetV3 took the row path's
 * bounds-checked taps: mnasnet's 8x8 planes ran at 1.9 GFLOP/s.) */
LT_FN int lt_dw_same_fits_(const lt_conv2d_geom *g) {
    /* (the output coordinates come from a float division, exact while H * W < 2^22) */
    return g->SH == 1 && g->SW == 1 && g->OH == g->H && g->OW == g->W && g->KH <= 16 && g->KW <= 16 &&
           g->H * g->W < (1 << 22);
}

LT_FN void lt_dw_same_planes_(const lt_conv2d_geom *g, const float *x, const float *w, float *y, const float *bias,
                              const float *res, int act, float aa, float ab, int res_after, int64_t p0, int64_t p1) {
    int64_t HW = g->H * g->W, mult = g->OC / g->C, KHW = g->KH * g->KW;
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512 inv_w = _mm512_set1_ps(1.0f / (float)g->W);
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / g->OC, oc = pl % g->OC, c = oc / mult;
        const float *xc = x + (n * g->C + c) * HW, *wk = w + oc * KHW;
        float *yp = y + pl * HW;
        const float *rp = res ? res + pl * HW : 0;
        const __m512 b = _mm512_set1_ps(bias ? bias[oc] : 0.0f);
        for (int64_t q0 = 0; q0 < HW; q0 += 16) {
            const __mmask16 out = lt_dw_mask_(q0, HW);
            /* each lane's output row and column: floor((q + 1/2) / W) in float, exact here */
            const __m512i q = _mm512_add_epi32(_mm512_set1_epi32((int32_t)q0), lane);
            const __m512i oh = _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(0.5f)), inv_w));
            const __m512i ow = _mm512_sub_epi32(q, _mm512_mullo_epi32(oh, _mm512_set1_epi32((int32_t)g->W)));
            __mmask16 colm[16];
            for (int64_t kw = 0; kw < g->KW; kw++) { /* lanes whose column kw*DW - PW0 away is inside */
                const __m512i iw = _mm512_add_epi32(ow, _mm512_set1_epi32((int32_t)(kw * g->DW - g->PW0)));
                colm[kw] = _mm512_cmpge_epi32_mask(iw, _mm512_setzero_si512()) &
                           _mm512_cmplt_epi32_mask(iw, _mm512_set1_epi32((int32_t)g->W));
            }
            __m512 acc = b;
            for (int64_t kh = 0; kh < g->KH; kh++) {
                const int64_t dh = kh * g->DH - g->PH0;
                const __m512i ih = _mm512_add_epi32(oh, _mm512_set1_epi32((int32_t)dh));
                const __mmask16 rows = out & _mm512_cmpge_epi32_mask(ih, _mm512_setzero_si512()) &
                                       _mm512_cmplt_epi32_mask(ih, _mm512_set1_epi32((int32_t)g->H));
                if (!rows) continue;
                const float *xr = xc + q0 + dh * g->W;
                for (int64_t kw = 0; kw < g->KW; kw++) {
                    const __mmask16 m = rows & colm[kw];
                    const __m512 v = _mm512_maskz_loadu_ps(m, xr + kw * g->DW - g->PW0);
                    acc = _mm512_fmadd_ps(v, _mm512_set1_ps(wk[kh * g->KW + kw]), acc);
                }
            }
            if (rp && !res_after) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(out, rp + q0));
            _mm512_mask_storeu_ps(yp + q0, out, acc);
        }
        lt_dw_plane_tail_(yp, rp, HW, act, aa, ab, res_after);
    }
}
#endif

/* ---- AVX-512, narrow rows: an output row in one vector, the input row it reads in two ---- */
#if defined(__AVX512F__)
/* Output rows of at most 16 columns whose taps span at most 32 input columns ((OW-1)*SW +
 * (KW-1)*DW + 1, any stride, dilation and padding): per output row and kernel row, the input row's
 * span in two masked loads (columns outside the image read as zero), then per kernel column one
 * permute that picks each output's input (ow*SW + kw*DW) and one FMA. Kernel rows outside the image
 * are skipped. (MnasNet's 5x5 stride-2 layers on 8x8 and 16x16 planes took the row path's
 * bounds-checked taps at 1-1.5 GFLOP/s.) */
#define LT_DW_NARROW_KW 16
LT_FN int lt_dw_narrow_fits_(const lt_conv2d_geom *g) {
    return g->OW <= 16 && g->KW <= LT_DW_NARROW_KW && (g->OW - 1) * g->SW + (g->KW - 1) * g->DW + 1 <= 32;
}

/* Do its output rows go two to a vector (at most 8 outputs, spanning at most 16 input columns)? */
LT_FN int lt_dw_narrow_two_(const lt_conv2d_geom *g) {
    return g->OW <= 8 && (g->OW - 1) * g->SW + (g->KW - 1) * g->DW + 1 <= 16;
}

LT_FN void lt_dw_narrow_planes_(const lt_conv2d_geom *g, const float *x, const float *w, float *y, const float *bias,
                                const float *res, int act, float aa, float ab, int res_after, int64_t p0, int64_t p1) {
    int64_t HW = g->H * g->W, OHW = g->OH * g->OW, mult = g->OC / g->C, KHW = g->KH * g->KW;
    /* rows of at most 8 outputs whose span is at most 16 columns go two to a vector: the first
     * output row's input row in x0, the second's in x1 */
    const int two = lt_dw_narrow_two_(g);
    const int64_t rows = two ? 2 : 1;
    __m512i idx[LT_DW_NARROW_KW];
    for (int64_t kw = 0; kw < g->KW; kw++) {
        int32_t lane[16] = {0};
        for (int64_t r = 0; r < rows; r++)
            for (int64_t ow = 0; ow < g->OW; ow++) lane[r * g->OW + ow] = (int32_t)(16 * r + ow * g->SW + kw * g->DW);
        idx[kw] = _mm512_loadu_si512(lane);
    }
    const int64_t c0 = -g->PW0; /* the span's first column */
    const __mmask16 in0 = lt_dw_mask_(c0, g->W), in1 = lt_dw_mask_(c0 + 16, g->W);
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / g->OC, oc = pl % g->OC, c = oc / mult;
        const float *xc = x + (n * g->C + c) * HW, *wk = w + oc * KHW;
        float *yp = y + pl * OHW;
        const float *rp = res ? res + pl * OHW : 0;
        const __m512 b = _mm512_set1_ps(bias ? bias[oc] : 0.0f);
        for (int64_t oh = 0; oh < g->OH; oh += rows) {
            const int64_t nr = lt_gemm_min_(rows, g->OH - oh);
            const __mmask16 out = lt_dw_mask_(0, nr * g->OW);
            __m512 acc = b;
            for (int64_t kh = 0; kh < g->KH; kh++) {
                const int64_t ih = oh * g->SH - g->PH0 + kh * g->DH, ih2 = ih + g->SH;
                const int in_a = ih >= 0 && ih < g->H, in_b = two && nr > 1 && ih2 >= 0 && ih2 < g->H;
                if (!in_a && !in_b) continue;
                __m512 x0, x1;
                if (two) { /* a row outside the image reads as zero */
                    x0 = _mm512_maskz_loadu_ps(in_a ? in0 : 0, xc + ih * g->W + c0);
                    x1 = _mm512_maskz_loadu_ps(in_b ? in0 : 0, xc + ih2 * g->W + c0);
                } else {
                    const float *xr = xc + ih * g->W + c0;
                    x0 = _mm512_maskz_loadu_ps(in0, xr), x1 = _mm512_maskz_loadu_ps(in1, xr + 16);
                }
                for (int64_t kw = 0; kw < g->KW; kw++)
                    acc = _mm512_fmadd_ps(_mm512_permutex2var_ps(x0, idx[kw], x1), _mm512_set1_ps(wk[kh * g->KW + kw]), acc);
            }
            if (rp && !res_after) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(out, rp + oh * g->OW));
            _mm512_mask_storeu_ps(yp + oh * g->OW, out, acc);
        }
        lt_dw_plane_tail_(yp, rp, OHW, act, aa, ab, res_after);
    }
}
#endif

#if defined(__AVX512F__)
/* The paths above that take a run of planes [p0, p1) with the epilogue's parts. */
typedef void (*lt_dw_planes_fn)(const lt_conv2d_geom *g, const float *x, const float *w, float *y, const float *bias,
                                const float *res, int act, float aa, float ab, int res_after, int64_t p0, int64_t p1);
#endif

/* Does the AVX-512 3x3 kernel take this geometry? */
LT_FN int lt_dw3_fast_(const lt_conv2d_geom *g) {
#if defined(__AVX512F__)
    return g->KH == 3 && g->KW == 3 && g->DH == 1 && g->DW == 1 && g->SH == g->SW && (g->SH == 1 || g->SH == 2);
#else
    (void)g;
    return 0;
#endif
}

LT_FN void lt_conv2d_depthwise_(const lt_conv2d_geom *g, const float *x, const float *w, float *y,
                                const lt_epilogue *ep) {
    int64_t mult = g->OC / g->C, planes = g->N * g->OC, OHW = g->OH * g->OW, KHW = g->KH * g->KW;
    const float *bias = ep ? ep->bias : 0, *res = ep ? ep->residual : 0;
    int act = ep ? ep->act : LT_ACT_NONE, res_after = ep ? ep->residual_after_act : 0;
    float aa = ep ? ep->act_a : 0.0f, ab = ep ? ep->act_b : 0.0f;
    int T = lt_nthreads();
    if ((double)planes * (double)OHW * (double)KHW < 2.0e5) T = 1;
    if (T > planes) T = (int)planes;
    (void)T;
#if defined(__AVX512F__)
    if (lt_dw_tiny_fits_(g)) {
        lt_dw_tiny t;
        lt_dw_tiny_init_(g, &t);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1)
        for (int i = 0; i < T; i++)
            lt_dw_tiny_planes_(g, &t, x, w, y, bias, res, act, aa, ab, res_after, planes * i / T, planes * (i + 1) / T);
#else
        lt_dw_tiny_planes_(g, &t, x, w, y, bias, res, act, aa, ab, res_after, 0, planes);
#endif
        return;
    }
    lt_dw_planes_fn fn = lt_dw3_fast_(g)                              ? 0
                         : lt_dw_narrow_fits_(g) && lt_dw_narrow_two_(g) ? lt_dw_narrow_planes_
                         : lt_dw_same_fits_(g)                         ? lt_dw_same_planes_
                         : lt_dw_narrow_fits_(g)                       ? lt_dw_narrow_planes_
                                                                       : 0;
    if (fn) { /* equal shares of the planes */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1)
        for (int i = 0; i < T; i++) fn(g, x, w, y, bias, res, act, aa, ab, res_after, planes * i / T, planes * (i + 1) / T);
#else
        fn(g, x, w, y, bias, res, act, aa, ab, res_after, 0, planes);
#endif
        return;
    }
    if (lt_dw3_fast_(g)) {
        lt_dw_ep e;
        e.act = act, e.act_a = aa, e.act_b = ab;
        e.in_regs = act == LT_ACT_NONE || act == LT_ACT_RELU || act == LT_ACT_CLIP || act == LT_ACT_LEAKY_RELU;
        e.res_mode = res ? (res_after ? 2 : 1) : 0;
#ifdef _OPENMP
        if (T > 1) { /* runs of planes from a shared counter: a thread the OS delays is covered */
            int64_t next = 0, run = lt_gemm_cdiv_(planes, 4 * (int64_t)T);
#pragma omp parallel num_threads(T)
            for (int64_t p0 = __atomic_fetch_add(&next, run, __ATOMIC_RELAXED); p0 < planes;
                 p0 = __atomic_fetch_add(&next, run, __ATOMIC_RELAXED))
                lt_dw3_planes_(g, x, w, y, bias, res, &e, p0, lt_gemm_min_(p0 + run, planes));
            return;
        }
#endif
        lt_dw3_planes_(g, x, w, y, bias, res, &e, 0, planes);
        return;
    }
#endif
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(T) if (T > 1)
#endif
    for (int64_t pl = 0; pl < planes; pl++) {
        int64_t n = pl / g->OC, oc = pl % g->OC, c = oc / mult;
        const float *xc = x + (n * g->C + c) * g->H * g->W;
        float *yp = y + pl * OHW;
        const float *rp = res ? res + pl * OHW : 0;
        float b = bias ? bias[oc] : 0.0f;
        for (int64_t oh = 0; oh < g->OH; oh++)
            lt_dw_row_(g, xc, w + oc * KHW, oh, yp + oh * g->OW, b, rp ? rp + oh * g->OW : 0, act, aa, ab,
                       res_after);
    }
}

#endif
