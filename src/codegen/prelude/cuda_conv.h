/* cuda_conv.h — CUDA prelude: 2-D convolution (NCHW, any stride / padding / dilation / group) with a
 * fused epilogue, for compiled models. Three kinds of kernel body, each a tile entry point a lowered
 * Conv kernel calls as
 *   for GPU_BLOCK blk in [0, nblocks): for GPU_THREAD t in [0, threads):
 *       lt_cuda_conv_<dt>_<kind>(y, x, w, bias, res, geometry..., blk, nblocks, t)
 * with static shared memory, or dynamic for the biggest tile:
 *   - implicit GEMM on tensor cores (float16 / bfloat16, mma.sync m16n8k16, float32 accumulation),
 *     `tc<BM>x<BN>`: 128x128, 64x128, 64x64 (128 threads, two static stages) and 256x128 (256
 *     threads, three stages in dynamic shared memory, LT_CONV_DYN_SMEM): per image and group,
 *     Y[oc, p] = W[oc, k] * im2col(X)[k, p] with k = (c, kh, kw); the W tile comes by cp.async (rows
 *     of W are contiguous: needs Cg*KH*KW % 8 == 0 and a 16-byte aligned W), the im2col tile is
 *     gathered into registers while the tensor cores work on the previous one and stored swizzled
 *     as the GEMM's [BK][BN] B tile, so the MMA fragments and the epilogue are cuda_gemm.h's
 *     (lt_tc_frags, lt_tc_mmas, lt_tc_store);
 *   - implicit GEMM on the SIMT cores (`simt`, 256 threads, any dtype, float32 without tf32): the
 *     GEMM's 128x128x8 SIMT tile with the same gather;
 *   - direct (`direct`, 256 threads): one output per thread, for depthwise and narrow groups
 *     (fewer than 16 output channels a group), where a GEMM tile would be mostly empty.
 * Blocks loop over (image, group, tile) so any grid is correct. Epilogue per output (cuda_gemm.h's
 * lt_epilogue): bias[oc] (has_bias), residual R of Y's shape before (res_mode 1) or after (2) the
 * activation (LT_ACT_* with act_a / act_b). Accumulation is float32 throughout.
 * Function templates with a defaulted parameter: a module instantiates only the entries it calls.
 */
#ifndef LT_PRELUDE_CUDA_CONV_H
#define LT_PRELUDE_CUDA_CONV_H

#include "cuda_gemm.h"

struct lt_cuda_conv_geom {
    int C, H, W, KH, KW, sh, sw, ph, pw, dh, dw, OW;
};

#define LT_CONV_ARGS                                                                               \
    void *y, const void *x, const void *w, const void *bias, const void *res, int N, int C, int H, int W, int OC, \
        int KH, int KW, int sh, int sw, int ph, int pw, int dh, int dw, int G, int OH, int OW, int has_bias,        \
        int res_mode, int act, float act_a, float act_b, long long block, long long nblocks, long long thread
#define LT_CONV_PASS                                                                               \
    y, x, w, bias, res, N, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw, G, OH, OW, has_bias, res_mode, act, act_a, \
        act_b, block, nblocks, thread

/* The implicit GEMM of (image, group) z: m = OC / G, n = OH * OW, k = C / G * KH * KW; p.a = W of
 * the group (lda k), p.b = the image's channels of the group, p.c = Y of both (ldc n). */
template <typename D, int BM, int BN, typename Tile>
LT_FN void lt_conv_run(LT_CONV_ARGS, Tile tile) {
    typedef typename D::S S;
    const int Cg = C / G, OCg = OC / G, P = OH * OW, Kg = Cg * KH * KW;
    lt_cuda_gemm_params p;
    p.c = y, p.a = w, p.b = x, p.bias = bias, p.res = 0;
    p.stride_a = p.stride_b = p.stride_c = p.stride_r = 0;
    p.m = OCg, p.n = P, p.k = Kg, p.lda = Kg, p.ldb = P, p.ldc = P, p.ldr = P;
    p.bias_kind = has_bias ? 2 : 0, p.act = act, p.res_after_act = res_mode == 2;
    p.alpha = 1.0f, p.beta = 1.0f, p.act_a = act_a, p.act_b = act_b;
    lt_cuda_conv_geom g;
    g.C = C, g.H = H, g.W = W, g.KH = KH, g.KW = KW, g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw, g.dh = dh, g.dw = dw;
    g.OW = OW;
    const long long tiles = (long long)((OCg + BM - 1) / BM) * ((P + BN - 1) / BN), total = tiles * N * G;
    for (long long t = block; t < total; t += nblocks) {
        const long long z = lt_div_i64(t, tiles), ni = z / G, gi = z - ni * G; /* 32-bit when small */
        const long long yoff = (ni * OC + gi * OCg) * (long long)P;
        lt_cuda_gemm_params q = p;
        q.c = (S *)y + yoff;
        q.a = (const S *)w + gi * OCg * (long long)Kg;
        q.b = (const S *)x + (ni * C + gi * Cg) * (long long)H * W;
        if (has_bias) q.bias = (const S *)bias + gi * OCg;
        if (res_mode) q.res = (const S *)res + yoff;
        tile(q, g, (int)(t - z * tiles), (int)thread);
        __syncthreads(); /* shared memory is reused by the next tile */
    }
}

/* Input origin (ih, iw at kh = kw = 0) of output column pcol; far outside for columns past n. */
LT_FN void lt_conv_origin(const lt_cuda_conv_geom &g, int pcol, int n, int *ih0, int *iw0) {
    if (pcol < n) {
        const int oh = pcol / g.OW, ow = pcol - oh * g.OW;
        *ih0 = oh * g.sh - g.ph, *iw0 = ow * g.sw - g.pw;
    } else {
        *ih0 = -(1 << 29), *iw0 = -(1 << 29);
    }
}

/* Position (c, kh, kw) of row k of the im2col matrix, advanced by a fixed stride without dividing:
 * the gathers visit k, k + S, k + 2S, ... so each thread decomposes its rows once a tile. */
struct lt_conv_kpos {
    int c, kh, kw;
};
LT_FN lt_conv_kpos lt_conv_kpos_of(const lt_cuda_conv_geom &g, int k) {
    lt_conv_kpos q;
    const int khw = g.KH * g.KW, r = k % khw;
    q.c = k / khw, q.kh = r / g.KW, q.kw = r - q.kh * g.KW;
    return q;
}
/* q += s (s a stride decomposed by lt_conv_kpos_of: s.kh < KH, s.kw < KW, so one carry each) */
LT_FN void lt_conv_kpos_add(const lt_cuda_conv_geom &g, lt_conv_kpos &q, const lt_conv_kpos &s) {
    q.kw += s.kw, q.kh += s.kh, q.c += s.c;
    if (q.kw >= g.KW) q.kw -= g.KW, q.kh++;
    if (q.kh >= g.KH) q.kh -= g.KH, q.c++;
}

/* ---- tensor cores ---- */
/* Block `bid` of the implicit GEMM on mma.sync: BM x BN x 32 tiles, warps of WM x WN, STAGES (>= 2)
 * shared stages of [BM][32] W and [32][BN] im2col at smem. The W tiles come by cp.async, STAGES - 1
 * tiles ahead; the im2col tile of step kt + 1 is gathered into registers while the tensor cores
 * work on step kt and stored (swizzled as the GEMM's [BK][BN] B tile) before the barrier that ends
 * step kt. (The GEMM's double-buffered fragments, lt_gemm_tc, do not fit here beside the gather's
 * registers: 68 bytes spilled in the 128x128 tile.) */
template <typename D, int BM, int BN, int WM, int WN, int STAGES>
LT_FN void lt_conv_tc(const lt_cuda_gemm_params &p, const lt_cuda_conv_geom &g, char *smem, int bid, int tid) {
    typedef typename D::S S;
    enum {
        BK = 32, WARPS_N = BN / WN, NT = 32 * (BM / WM) * (BN / WN), MT = WM / 16, NTL = WN / 8,
        CHA = BK / 8, CHB = BN / 8, A_BYTES = BM * BK * 2, STAGE_BYTES = (BM + BN) * BK * 2, A_PER = BM * CHA / NT,
        B_PER = BK * CHB / NT
    };
    static_assert(BM * CHA % NT == 0 && BK * CHB % NT == 0 && NT % CHA == 0 && NT % CHB == 0, "tile loads");
    static_assert(STAGES >= 2, "pipeline");
    const int lane = tid & 31, warp = tid >> 5, wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int M = p.m, N = p.n, K = p.k;
    int m0, n0;
    lt_tile_origin(bid, M, N, BM, BN, &m0, &n0);
    const S *A = (const S *)p.a, *X = (const S *)p.b;
    const uint32_t sbase = lt_smem_u32(smem);
    const int KT = (K + BK - 1) / BK;
    /* this thread's 16-byte chunk of every B row: 8 fixed output columns */
    const int cb = tid % CHB;
    int ih0[8], iw0[8];
#pragma unroll
    for (int e = 0; e < 8; e++) lt_conv_origin(g, n0 + cb * 8 + e, N, &ih0[e], &iw0[e]);
    uint32_t breg[B_PER][4];
    lt_conv_kpos kp[B_PER]; /* the position of each of this thread's B rows in the next gather */
    const lt_conv_kpos kstep = lt_conv_kpos_of(g, BK);
#pragma unroll
    for (int i = 0; i < B_PER; i++) kp[i] = lt_conv_kpos_of(g, tid / CHB + i * (NT / CHB));

    auto load_a = [&](int stage, int kt) {
        lt_tc_load_a<S, BK, NT, A_PER>(sbase + stage * STAGE_BYTES, A, p.lda, m0, M, kt * BK, K, tid);
    };
    /* called for kt = 0, 1, 2, ... in order (kp advances a step each call) */
    auto gather = [&](int kt) {
#pragma unroll
        for (int i = 0; i < B_PER; i++) {
            const int row = tid / CHB + i * (NT / CHB), k = kt * BK + row;
            uint32_t v[8];
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] = 0;
            if (k < K) {
                const int kh = kp[i].kh * g.dh, kw = kp[i].kw * g.dw;
                const S *xc = X + (long long)kp[i].c * g.H * g.W;
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    const int ih = ih0[e] + kh, iw = iw0[e] + kw;
                    if ((unsigned)ih < (unsigned)g.H && (unsigned)iw < (unsigned)g.W) v[e] = xc[ih * g.W + iw];
                }
            }
            lt_conv_kpos_add(g, kp[i], kstep);
#pragma unroll
            for (int q = 0; q < 4; q++) breg[i][q] = v[2 * q] | (v[2 * q + 1] << 16);
        }
    };
    auto store_b = [&](int stage) {
#pragma unroll
        for (int i = 0; i < B_PER; i++) {
            const int row = tid / CHB + i * (NT / CHB);
            *(uint4 *)(smem + stage * STAGE_BYTES + A_BYTES + (row * CHB + lt_swz<CHB>(row, cb)) * 16) =
                make_uint4(breg[i][0], breg[i][1], breg[i][2], breg[i][3]);
        }
    };

    float acc[MT][NTL][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NTL; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load_a(s, s);
        lt_cp_async_commit();
    }
    gather(0);
    store_b(0);
    lt_cp_async_wait<STAGES - 2>(); /* tile 0's W has landed */
    __syncthreads();
    int rs = 0, ws = STAGES - 1; /* the stage being read; the stage the next W copies go to */
    for (int kt = 0; kt < KT; kt++) {
        const uint32_t sa = sbase + rs * STAGE_BYTES;
        if (kt + STAGES - 1 < KT) load_a(ws, kt + STAGES - 1);
        lt_cp_async_commit();
        ws = ws + 1 == STAGES ? 0 : ws + 1;
        if (kt + 1 < KT) gather(kt + 1); /* global loads in flight while the tensor cores work */
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t af[MT][4], bfr[NTL][2];
            lt_tc_frags<BM, BN, BK, WM, WN, false>(af, bfr, sa, sa + A_BYTES, kk, lane, wm, wn);
            lt_tc_mmas<D, WM, WN>(acc, af, bfr);
        }
        /* step kt + 1: its im2col tile into the stage that tile kt + 1 - STAGES left (every warp was
         * done with it at the previous barrier), once its W has landed */
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        if (kt + 1 < KT) store_b(rs);
        lt_cp_async_wait<STAGES - 2>();
        __syncthreads();
    }
    lt_cp_async_wait<0>();
    const bool pairs = (p.ldc & 1) == 0 && ((unsigned long long)p.c & 3) == 0;
    lt_tc_store<D, WM, WN>(p, acc, (S *)p.c, m0 + wm * WM, n0 + wn * WN, lane, pairs, 0);
}

/* ---- SIMT ---- */
template <typename D>
LT_FN void lt_conv_simt(const lt_cuda_gemm_params &p, const lt_cuda_conv_geom &g, int bid, int tid) {
    typedef typename D::S S;
    int m0, n0;
    lt_tile_origin(bid, p.m, p.n, 128, 128, &m0, &n0);
    const S *A = (const S *)p.a, *X = (const S *)p.b;
    const int M = p.m, N = p.n, K = p.k, KHW = g.KH * g.KW;
    const int ar = tid >> 1, aq = (tid & 1) * 4, bk = tid >> 5, bq = (tid & 31) * 4;
    int ih0[4], iw0[4];
#pragma unroll
    for (int e = 0; e < 4; e++) lt_conv_origin(g, n0 + bq + e, N, &ih0[e], &iw0[e]);
    auto fetch = [&](int k0, float *ra, float *rb) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int k = k0 + aq + e;
            ra[e] = (m0 + ar < M && k < K) ? lt_ld1<D>(A, (long long)(m0 + ar) * p.lda + k) : 0.0f;
            rb[e] = 0.0f;
        }
        const int k = k0 + bk;
        if (k < K) {
            const int c = k / KHW, r = k - c * KHW, kh = r / g.KW, kw = r - kh * g.KW;
            const S *xc = X + (long long)c * g.H * g.W;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int ih = ih0[e] + kh * g.dh, iw = iw0[e] + kw * g.dw;
                if ((unsigned)ih < (unsigned)g.H && (unsigned)iw < (unsigned)g.W) rb[e] = lt_ld1<D>(xc, ih * g.W + iw);
            }
        }
    };
    lt_simt_tile<D, false>(p, (S *)p.c, m0, n0, tid, 0, fetch);
}

/* SIMT with sliced K (cuda_gemm.h lt_simt_sk_tile): BM x BN tiles for grids too small for 128x128.
 * Each thread's B column (output position) is fixed, so its input origin is found once a tile. */
template <typename D, int BM, int BN, int TM, int TN>
LT_FN void lt_conv_simt_sk(const lt_cuda_gemm_params &p, const lt_cuda_conv_geom &g, int bid, int tid) {
    typedef typename D::S S;
    enum { NT = 256, KC = 8 * (NT / ((BM / TM) * (BN / TN))), APT = BM * KC / NT, BPT = BN * KC / NT };
    int m0, n0;
    lt_tile_origin(bid, p.m, p.n, BM, BN, &m0, &n0);
    const S *A = (const S *)p.a, *X = (const S *)p.b;
    const int M = p.m, N = p.n, K = p.k;
    const int kq = tid % KC, rq = tid / KC, bc = tid % BN, bkr = tid / BN;
    int ih0, iw0;
    lt_conv_origin(g, n0 + bc, N, &ih0, &iw0);
    /* the position of this thread's first B row in the next fetch; its rows are NT / BN apart */
    lt_conv_kpos kp = lt_conv_kpos_of(g, bkr);
    const lt_conv_kpos kstep = lt_conv_kpos_of(g, KC), estep = lt_conv_kpos_of(g, NT / BN);
    /* called for k0 = 0, KC, 2 KC, ... in order (kp advances a step each call) */
    auto fetch = [&](int k0, float *ra, float *rb) {
        const int ka = k0 + kq;
#pragma unroll
        for (int e = 0; e < APT; e++) {
            const int r = m0 + rq + e * (NT / KC);
            ra[e] = (r < M && ka < K) ? lt_ld1<D>(A, (long long)r * p.lda + ka) : 0.0f;
        }
        lt_conv_kpos q = kp;
#pragma unroll
        for (int e = 0; e < BPT; e++) {
            const int k = k0 + bkr + e * (NT / BN);
            rb[e] = 0.0f;
            if (k < K) {
                const int ih = ih0 + q.kh * g.dh, iw = iw0 + q.kw * g.dw;
                if ((unsigned)ih < (unsigned)g.H && (unsigned)iw < (unsigned)g.W)
                    rb[e] = lt_ld1<D>(X, ((long long)q.c * g.H + ih) * g.W + iw);
            }
            lt_conv_kpos_add(g, q, estep);
        }
        lt_conv_kpos_add(g, kp, kstep);
    };
    lt_simt_sk_tile<D, false, BM, BN, TM, TN>(p, (S *)p.c, m0, n0, tid, 0, fetch);
}

/* ---- direct: one output per thread (256 a block) ---- */
/* The taps of one output: x offsets of type I (int when every offset of X fits, else long long), the
 * image's first element at xb, the output channel's weights at wb. A tap's load is predicated on its
 * row and column being inside the image, never branched around: with the sizes run-time scalars the
 * compiler cannot prove taps inside, and a load under a branch waits for the tap before it (measured
 * on pplcnet_ci's depthwise layers: 5-9% of the whole model, static or not). A row's taps are one
 * row offset plus immediates. */
template <typename D, typename I>
LT_FN float lt_conv_direct_taps(const typename D::S *X, const typename D::S *wb, I xb, int Cg, int H, int W, int KH,
                                int KW, int sh, int sw, int ph, int pw, int dh, int dw, int oh, int ow) {
    const int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
    float acc = 0.0f;
    for (int c = 0; c < Cg; c++)
        for (int kh = 0; kh < KH; kh++) {
            const int ih = ih0 + kh * dh;
            const bool row_in = (unsigned)ih < (unsigned)H;
            const I row = xb + ((I)c * H + ih) * (I)W + iw0; /* tap (kh, 0); read only when inside */
            const typename D::S *wrow = wb + (c * KH + kh) * KW;
            for (int kw = 0; kw < KW; kw++) {
                float xv = 0.0f;
                if (row_in && (unsigned)(iw0 + kw * dw) < (unsigned)W) xv = lt_ld1<D>(X, row + kw * dw);
                acc = fmaf(xv, lt_ld1<D>(wrow, kw), acc);
            }
        }
    return acc;
}

/* One output (index i < N * OC * P) in 32-bit indices: the coordinates by lt_divu31 with the
 * multipliers mp, moc, mow, mocg (lt_div_magic31 of P = OH * OW, OC, OW and OC / G, from the
 * lowering, which knows the sizes; in a kernel compiled for every shape they are run-time scalars like
 * the sizes): a multiply-high, an add and a shift each, where a division by a run-time divisor is
 * ~17 dependent instructions. */
template <typename D>
LT_FN void lt_conv_direct_one(const lt_cuda_gemm_params &p, const typename D::S *X, const typename D::S *Wt,
                              void *y, unsigned i, int C, int H, int W, int OC, int KH, int KW, int sh, int sw,
                              int ph, int pw, int dh, int dw, int Cg, int P, int OW, unsigned long long mp,
                              unsigned long long moc, unsigned long long mow, unsigned long long mocg) {
    typedef typename D::S S;
    const unsigned row = lt_divu31(i, mp); /* ni * OC + oc */
    const int pp = (int)(i - row * (unsigned)P);
    const int ni = (int)lt_divu31(row, moc), oc = (int)(row - (unsigned)ni * (unsigned)OC);
    const int oh = (int)lt_divu31((unsigned)pp, mow), ow = pp - oh * OW;
    const int gi = (int)lt_divu31((unsigned)oc, mocg);
    const float acc = lt_conv_direct_taps<D, int>(X, Wt + (long long)oc * (Cg * KH * KW), (ni * C + gi * Cg) * H * W,
                                                  Cg, H, W, KH, KW, sh, sw, ph, pw, dh, dw, oh, ow);
    float v[1] = {acc};
    lt_epilogue<D>(p, ni, v, [&](int, int &r, int &c) { r = oc, c = pp; });
    lt_st1<D>((S *)y, i, v[0]);
}

/* mode (the lowering's, from the sizes; a kernel compiled for every shape keeps it a constant, so a
 * shape that needs another mode takes another bucket): 2 when every output and input offset fits 31
 * bits and the grid has a thread for each output (one output a thread, no loop); 1 when the offsets
 * fit but the grid was capped (a grid-stride loop over 32-bit indices); 0 otherwise (64-bit indices,
 * hardware divisions; the multipliers are not used). */
template <typename D>
LT_FN void lt_conv_direct(LT_CONV_ARGS, int mode, unsigned long long mp, unsigned long long moc,
                          unsigned long long mow, unsigned long long mocg) {
    typedef typename D::S S;
    const int Cg = C / G, OCg = OC / G, P = OH * OW;
    lt_cuda_gemm_params p;
    p.m = OC, p.n = P; /* the epilogue's rows and columns: output channel, position */
    p.bias = bias, p.res = res_mode ? res : 0, p.stride_r = (long long)OC * P, p.ldr = P;
    p.bias_kind = has_bias ? 2 : 0, p.act = act, p.res_after_act = res_mode == 2;
    p.alpha = 1.0f, p.beta = 1.0f, p.act_a = act_a, p.act_b = act_b;
    const S *X = (const S *)x, *Wt = (const S *)w;
    const long long total = (long long)N * OC * P;
    if (mode == 2) {
        const unsigned i = (unsigned)block * 256u + (unsigned)thread;
        if (i < (unsigned)total)
            lt_conv_direct_one<D>(p, X, Wt, y, i, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw, Cg, P, OW, mp, moc, mow,
                                  mocg);
        return;
    }
    if (mode == 1) {
        for (long long i = block * 256 + thread; i < total; i += nblocks * 256)
            lt_conv_direct_one<D>(p, X, Wt, y, (unsigned)i, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw, Cg, P, OW, mp,
                                  moc, mow, mocg);
        return;
    }
    for (long long i = block * 256 + thread; i < total; i += nblocks * 256) {
        const long long ni = i / ((long long)OC * P);
        const int rem = (int)(i - ni * OC * P);
        const int oc = rem / P, pp = rem - oc * P;
        const int oh = pp / OW, ow = pp - oh * OW, gi = oc / OCg;
        const float acc = lt_conv_direct_taps<D, long long>(X, Wt + (long long)oc * Cg * KH * KW,
                                                            (ni * C + (long long)gi * Cg) * H * W, Cg, H, W, KH, KW, sh,
                                                            sw, ph, pw, dh, dw, oh, ow);
        float v[1] = {acc};
        lt_epilogue<D>(p, ni, v, [&](int, int &r, int &c) { r = oc, c = pp; });
        lt_st1<D>((S *)y, i, v[0]);
    }
}

/* ---- entry points ---- */
/* tensor cores in static shared memory: 2 stages (at most 32 KiB) */
#define LT_CONV_TC_BODY(dt, BM, BN, WM, WN)                                                        \
    __shared__ __align__(128) char smem[2 * (BM + BN) * 32 * 2];                                   \
    lt_conv_run<lt_dt_##dt, BM, BN>(LT_CONV_PASS, [&](const lt_cuda_gemm_params &q, const lt_cuda_conv_geom &g, int bid, \
                                                       int tid) { lt_conv_tc<lt_dt_##dt, BM, BN, WM, WN, 2>(q, g, smem, bid, tid); });
/* ... and in dynamic shared memory (cuda_gemm.h lt_gemm_dyn_smem), abi.h's LT_CONV_DYN_SMEM(BM, BN, ST)
 * bytes (the lowering, src/lower/lower_gpu_conv.c, records that number on the kernel) */
#define LT_CONV_TC_DYN_BODY(dt, BM, BN, WM, WN, ST)                                                \
    lt_conv_run<lt_dt_##dt, BM, BN>(LT_CONV_PASS, [&](const lt_cuda_gemm_params &q, const lt_cuda_conv_geom &g, int bid, \
                                                       int tid) { lt_conv_tc<lt_dt_##dt, BM, BN, WM, WN, ST>(q, g, lt_gemm_dyn_smem, bid, tid); });
#define LT_CONV_SIMT_BODY(dt)                                                                      \
    lt_conv_run<lt_dt_##dt, 128, 128>(LT_CONV_PASS, [&](const lt_cuda_gemm_params &q, const lt_cuda_conv_geom &g, int bid, \
                                                        int tid) { lt_conv_simt<lt_dt_##dt>(q, g, bid, tid); });
#define LT_CONV_SIMT_SK_BODY(dt, T, TT)                                                            \
    lt_conv_run<lt_dt_##dt, T, T>(LT_CONV_PASS, [&](const lt_cuda_gemm_params &q, const lt_cuda_conv_geom &g, int bid, \
                                                    int tid) { lt_conv_simt_sk<lt_dt_##dt, T, T, TT, TT>(q, g, bid, tid); });
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_tc128x128(LT_CONV_ARGS) { LT_CONV_TC_BODY(f16, 128, 128, 64, 64) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_tc128x128(LT_CONV_ARGS) { LT_CONV_TC_BODY(bf16, 128, 128, 64, 64) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_tc64x128(LT_CONV_ARGS) { LT_CONV_TC_BODY(f16, 64, 128, 32, 64) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_tc64x128(LT_CONV_ARGS) { LT_CONV_TC_BODY(bf16, 64, 128, 32, 64) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_tc64x64(LT_CONV_ARGS) { LT_CONV_TC_BODY(f16, 64, 64, 32, 32) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_tc64x64(LT_CONV_ARGS) { LT_CONV_TC_BODY(bf16, 64, 64, 32, 32) }
/* 256 output channels x 128 positions, 8 warps of 64x64 (256 threads), 3 stages: 72 KiB. For wide
 * layers: each gathered im2col element feeds twice the MMAs of the 128-row tile. */
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_tc256x128(LT_CONV_ARGS) { LT_CONV_TC_DYN_BODY(f16, 256, 128, 64, 64, 3) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_tc256x128(LT_CONV_ARGS) { LT_CONV_TC_DYN_BODY(bf16, 256, 128, 64, 64, 3) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f32_simt(LT_CONV_ARGS) { LT_CONV_SIMT_BODY(f32) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_simt(LT_CONV_ARGS) { LT_CONV_SIMT_BODY(f16) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_simt(LT_CONV_ARGS) { LT_CONV_SIMT_BODY(bf16) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f32_simt64(LT_CONV_ARGS) { LT_CONV_SIMT_SK_BODY(f32, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f32_simt32(LT_CONV_ARGS) { LT_CONV_SIMT_SK_BODY(f32, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_simt64(LT_CONV_ARGS) { LT_CONV_SIMT_SK_BODY(f16, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_simt32(LT_CONV_ARGS) { LT_CONV_SIMT_SK_BODY(f16, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_simt64(LT_CONV_ARGS) { LT_CONV_SIMT_SK_BODY(bf16, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_simt32(LT_CONV_ARGS) { LT_CONV_SIMT_SK_BODY(bf16, 32, 4) }
/* direct: the arguments of the others, then the index mode and the division multipliers (lt_conv_direct) */
#define LT_CONV_DIRECT_ARGS                                                                        \
    LT_CONV_ARGS, int mode, unsigned long long mp, unsigned long long moc, unsigned long long mow, unsigned long long mocg
#define LT_CONV_DIRECT_PASS LT_CONV_PASS, mode, mp, moc, mow, mocg
template <int I_ = 0> LT_FN void lt_cuda_conv_f32_direct(LT_CONV_DIRECT_ARGS) { lt_conv_direct<lt_dt_f32>(LT_CONV_DIRECT_PASS); }
template <int I_ = 0> LT_FN void lt_cuda_conv_f16_direct(LT_CONV_DIRECT_ARGS) { lt_conv_direct<lt_dt_f16>(LT_CONV_DIRECT_PASS); }
template <int I_ = 0> LT_FN void lt_cuda_conv_bf16_direct(LT_CONV_DIRECT_ARGS) { lt_conv_direct<lt_dt_bf16>(LT_CONV_DIRECT_PASS); }

#endif
