/* conv_dw.h — depthwise 2-D convolution (NCHW float32, G == C, OC a multiple of C) for conv.h.
 *
 * Included by conv.h after lt_conv2d_geom (never on its own); pasted into generated code with it.
 * Entry point: lt_conv2d_depthwise_(geom, x, w, y, ep) — w is [OC, KH, KW] as given (the
 * depthwise "packed" weights are a plain copy), ep the epilogue of gemm.h (bias per output
 * channel, residual of y's shape before or after the activation). No workspace, no allocation.
 *
 * Design. Output planes (n, oc) are shared out among threads (each reads one input plane).
 *  - AVX-512, 3x3, stride 1 or 2, no dilation (MobileNet's shapes): a block of R output rows at a
 *    time, SIMD over 16 output columns. Each input row of the block is loaded once per vector
 *    column and feeds the (up to 3) output rows it touches, so R = 4 rows at stride 1 read 6 input
 *    rows instead of 12. Left/right padding and the ragged right edge are masked loads (lanes
 *    outside the row read as zero, nothing outside it is touched); rows above and below the image
 *    are skipped. Stride 2 loads 32 contiguous input columns and deinterleaves them with two
 *    vpermt2ps (even columns: tap 0, odd: tap 1; the same from 2 columns on: tap 2), so no strided
 *    gathers. The epilogue runs in registers: bias is the accumulators' initial value, residual
 *    (before) is a masked load, relu / clip / leaky relu are min/max; other activations (and a
 *    residual after them) run over the stored rows.
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

/* ---- AVX-512 3x3 kernel: a strip of 16 output columns, top to bottom ---- */
#if defined(__AVX512F__)
/* Lanes i of a 16-wide access starting at column s with 0 <= s + i < n. */
LT_FN __mmask16 lt_dw_mask_(int64_t s, int64_t n) {
    int64_t a = s < 0 ? -s : 0, e = n - s;
    if (e > 16) e = 16;
    if (e <= a) return 0;
    return (__mmask16)((0xffffu >> (16 - e)) & (0xffffu << a));
}

/* The epilogue of the fast kernel. */
typedef struct lt_dw_ep {
    int act;      /* LT_ACT_*; NONE / RELU / CLIP / LEAKY_RELU run in registers (in_regs) */
    int in_regs;
    int res_mode; /* 0 none, 1 before the activation, 2 after it */
    float act_a, act_b;
} lt_dw_ep;

/* One 16-column strip of an output plane, all OH rows, stride S (1 or 2; a constant at each call
 * site). xr: the input plane offset to the column of lane 0's tap 0 (c0 = ow0*S - PW0); y, res:
 * the plane's output / residual offset to column ow0. Rows roll through registers: each input
 * row is loaded once and feeds the output rows it belongs to (stride 1: three, as kernel rows
 * 2, 1, 0 of consecutive outputs; stride 2: the shared row between two outputs), so an output
 * vector costs 3 loads (stride 1) or 8 loads + 6 permutes (stride 2), 9 FMAs and one store. */
LT_GEMM_AI void lt_dw3_strip_(const int S, const float *xr, int64_t H, int64_t W, int64_t PH0, int64_t c0,
                              int64_t OH, int64_t OW, const float *wk, float b, float *y, const float *res,
                              int64_t ow0, const lt_dw_ep *e) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512 zero = _mm512_setzero_ps(), bias = _mm512_set1_ps(b);
    const __m512 w0 = _mm512_set1_ps(wk[0]), w1 = _mm512_set1_ps(wk[1]), w2 = _mm512_set1_ps(wk[2]);
    const __m512 w3 = _mm512_set1_ps(wk[3]), w4 = _mm512_set1_ps(wk[4]), w5 = _mm512_set1_ps(wk[5]);
    const __m512 w6 = _mm512_set1_ps(wk[6]), w7 = _mm512_set1_ps(wk[7]), w8 = _mm512_set1_ps(wk[8]);
    const int res_mode = e->res_mode, in_regs = e->in_regs, leaky = e->act == LT_ACT_LEAKY_RELU;
    __m512 lo = _mm512_set1_ps(-LT_INF_F32), hi = _mm512_set1_ps(LT_INF_F32), la = _mm512_set1_ps(e->act_a);
    if (e->act == LT_ACT_RELU) lo = zero;
    if (e->act == LT_ACT_CLIP) lo = _mm512_set1_ps(e->act_a), hi = _mm512_set1_ps(e->act_b);
    const __mmask16 om = lt_dw_mask_(ow0, OW);
    __mmask16 m0, m1, m2, m3 = 0;
    if (S == 1) {
        m0 = lt_dw_mask_(c0, W), m1 = lt_dw_mask_(c0 + 1, W), m2 = lt_dw_mask_(c0 + 2, W);
    } else { /* columns c0..c0+31 (taps 0 and 1), c0+2..c0+33 (tap 2) */
        m0 = lt_dw_mask_(c0, W), m1 = lt_dw_mask_(c0 + 16, W), m2 = lt_dw_mask_(c0 + 2, W);
        m3 = lt_dw_mask_(c0 + 18, W);
    }
/* the three taps of input row ih (zero outside the image) */
#define LT_DW_TAPS(ih, t0, t1, t2)                                                                  \
    do {                                                                                          \
        if ((ih) < 0 || (ih) >= H) {                                                              \
            t0 = t1 = t2 = zero;                                                                  \
        } else if (S == 1) {                                                                      \
            const float *p_ = xr + (ih) * W;                                                      \
            t0 = _mm512_maskz_loadu_ps(m0, p_);                                                   \
            t1 = _mm512_maskz_loadu_ps(m1, p_ + 1);                                               \
            t2 = _mm512_maskz_loadu_ps(m2, p_ + 2);                                               \
        } else {                                                                                  \
            const float *p_ = xr + (ih) * W;                                                      \
            __m512 a0_ = _mm512_maskz_loadu_ps(m0, p_), a1_ = _mm512_maskz_loadu_ps(m1, p_ + 16); \
            __m512 b0_ = _mm512_maskz_loadu_ps(m2, p_ + 2), b1_ = _mm512_maskz_loadu_ps(m3, p_ + 18); \
            t0 = _mm512_permutex2var_ps(a0_, ev, a1_);                                            \
            t1 = _mm512_permutex2var_ps(a0_, od, a1_);                                            \
            t2 = _mm512_permutex2var_ps(b0_, ev, b1_);                                            \
        }                                                                                         \
    } while (0)
#define LT_DW_ROW(acc, t0, t1, t2, wa, wb, wc) \
    _mm512_fmadd_ps(t2, wc, _mm512_fmadd_ps(t1, wb, _mm512_fmadd_ps(t0, wa, acc)))
    __m512 t0, t1, t2, A, B = zero;
    if (S == 1) { /* A: output row o so far, B: output row o+1 so far */
        LT_DW_TAPS(-PH0, t0, t1, t2);
        A = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
        LT_DW_TAPS(1 - PH0, t0, t1, t2);
        A = LT_DW_ROW(A, t0, t1, t2, w3, w4, w5);
        B = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
    } else {
        LT_DW_TAPS(-PH0, t0, t1, t2);
        A = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
    }
    for (int64_t o = 0; o < OH; o++) {
        __m512 v;
        if (S == 1) {
            int64_t ih = o - PH0 + 2;
            LT_DW_TAPS(ih, t0, t1, t2);
            v = LT_DW_ROW(A, t0, t1, t2, w6, w7, w8);
            A = LT_DW_ROW(B, t0, t1, t2, w3, w4, w5);
            B = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
        } else {
            int64_t ih = 2 * o - PH0 + 1;
            LT_DW_TAPS(ih, t0, t1, t2);
            v = LT_DW_ROW(A, t0, t1, t2, w3, w4, w5);
            LT_DW_TAPS(ih + 1, t0, t1, t2);
            v = LT_DW_ROW(v, t0, t1, t2, w6, w7, w8);
            A = LT_DW_ROW(bias, t0, t1, t2, w0, w1, w2);
        }
        float *yo = y + o * OW;
        const float *ro = res ? res + o * OW : 0;
        if (res_mode == 1) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(om, ro));
        if (in_regs) {
            if (leaky) v = _mm512_fmadd_ps(la, _mm512_min_ps(zero, v), _mm512_max_ps(zero, v));
            else v = _mm512_min_ps(hi, _mm512_max_ps(lo, v)); /* relu / clip / none; NaN stays NaN */
            if (res_mode == 2) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(om, ro));
        }
        _mm512_mask_storeu_ps(yo, om, v);
    }
    (void)B;
#undef LT_DW_TAPS
#undef LT_DW_ROW
}

/* One output plane with the 3x3 kernel of stride S: its 16-column strips, then (activations not
 * done in registers) the activation and a residual after it over the stored plane. */
LT_GEMM_AI void lt_dw3_plane_(const int S, const lt_conv2d_geom *g, const float *xc, const float *wk, float *y,
                              const float *res, float b, const lt_dw_ep *e) {
    for (int64_t ow0 = 0; ow0 < g->OW; ow0 += 16) {
        int64_t c0 = ow0 * S - g->PW0;
        lt_dw3_strip_(S, xc + c0, g->H, g->W, g->PH0, c0, g->OH, g->OW, wk, b, y + ow0, res ? res + ow0 : 0, ow0, e);
    }
    if (!e->in_regs) {
        int64_t n = g->OH * g->OW;
        lt_act_row_f32(y, n, e->act, e->act_a, e->act_b);
        if (e->res_mode == 2)
            for (int64_t i = 0; i < n; i++) y[i] += res[i];
    }
}
static __attribute__((noinline, unused)) void lt_dw3_plane_s1_(const lt_conv2d_geom *g, const float *xc,
                                                               const float *wk, float *y, const float *res, float b,
                                                               const lt_dw_ep *e) {
    lt_dw3_plane_(1, g, xc, wk, y, res, b, e);
}
static __attribute__((noinline, unused)) void lt_dw3_plane_s2_(const lt_conv2d_geom *g, const float *xc,
                                                               const float *wk, float *y, const float *res, float b,
                                                               const lt_dw_ep *e) {
    lt_dw3_plane_(2, g, xc, wk, y, res, b, e);
}
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
    int fast = lt_dw3_fast_(g);
    int T = lt_nthreads();
    if ((double)planes * (double)OHW * (double)KHW < 2.0e5) T = 1;
    (void)T, (void)fast, (void)act, (void)res_after, (void)aa, (void)ab;
#if defined(__AVX512F__)
    lt_dw_ep e;
    e.act = act, e.act_a = aa, e.act_b = ab;
    e.in_regs = act == LT_ACT_NONE || act == LT_ACT_RELU || act == LT_ACT_CLIP || act == LT_ACT_LEAKY_RELU;
    e.res_mode = res ? (res_after ? 2 : 1) : 0;
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
#if defined(__AVX512F__)
        if (fast) {
            if (pl + 1 < planes) { /* bring the next plane in while this one computes (the strips
                                      walk down columns, which the hardware prefetchers follow poorly) */
                int64_t n1 = (pl + 1) / g->OC, c1 = (pl + 1) % g->OC / mult, bytes = g->H * g->W * 4;
                const char *nx = (const char *)(x + (n1 * g->C + c1) * g->H * g->W);
                if (bytes <= 0)
                    for (int64_t q = 0; q < bytes; q += 64) __builtin_prefetch(nx + q, 0, 3);
            }
            if (g->SH == 1) lt_dw3_plane_s1_(g, xc, w + oc * KHW, yp, rp, b, &e);
            else lt_dw3_plane_s2_(g, xc, w + oc * KHW, yp, rp, b, &e);
            continue;
        }
#endif
        for (int64_t oh = 0; oh < g->OH; oh++)
            lt_dw_row_(g, xc, w + oc * KHW, oh, yp + oh * g->OW, b, rp ? rp + oh * g->OW : 0, act, aa, ab,
                       res_after);
    }
}

#endif
