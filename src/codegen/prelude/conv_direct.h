/* conv_direct.h — dense / grouped 2-D convolution without im2col panels (AVX-512), for conv.h.
 *
 * Included by conv.h after lt_conv2d_geom (never on its own); pasted into generated code with it.
 * Entry points (internal to conv.h):
 *   int     lt_cd_plan_(plan, geom, ws_floats, threads)   0: this path does not take the geometry
 *   int64_t lt_cd_ws_floats_(geom, threads)               workspace for full speed (0: not taken)
 *   void    lt_cd_run_(plan, x, wpacked, y, ep, ws)       y = conv(x) with gemm.h's epilogue
 * The weights are conv.h's packed A operand (lt_sgemm_pack_a per group: MR-row panels, K blocks).
 *
 * Design. A convolution is C[oc, p] = sum_k W[oc, k] B[k, p] with k = (ci, kh, kw) and p an output
 * pixel. Instead of gathering B into packed panels (an im2col pass as large as B, paid on every
 * run), the input is copied once into a "slab" in which every row k of B is a contiguous run:
 *   - the slab holds, per input channel, the phase planes of the zero-padded input that the taps
 *     use (phase (a, b) = padded rows a, a+SH, ... and columns b, b+SW, ...; one plane when the
 *     stride is 1 or the kernel 1x1), each Wq = OW + (KW-1)*DW/SW columns wide;
 *   - output pixel (oh, ow) is lane q = oh*Wq + ow of a "q space" (Wq - OW columns of every row
 *     are padding lanes whose results are dropped), and B[k, q] = slab[off[k] + q] with
 *     off[k] = ci*cstride + phase(kh*DH % SH, kw*DW % SW)*pstride + (kh*DH/SH)*Wq + kw*DW/SW.
 * So the register-blocked kernel (8 output channels x 48 lanes, 24 zmm accumulators, as gemm.h's)
 * loads its B vectors straight from the slab at a per-k offset (off[] is one table for the
 * call), and stride 2 needs no gathers: the phase planes were split when the slab was filled.
 * The slab is 1/SH/SW of the input plus halo rows, filled once per chunk of output rows (it stays
 * in L2 while every weight panel passes over it); the tile's valid lanes go to y with
 * vcompressps (the padding lanes of a row drop out, so consecutive rows land contiguously), and
 * the epilogue (bias per channel, residual through vexpandps, relu / clip / leaky relu) runs in
 * registers; other activations run over the stored row segment.
 * Small images waste lanes in q space (7x7 outputs: 49 of 64 lanes; 14x14: 196 of 240), so when
 * the weights are packed in 16-channel panels (conv.h's lt_conv2d_pw_), a pixel-major kernel takes
 * them instead: a tile is 8 output pixels x 48 output channels, each k broadcasts the 8 pixels'
 * slab values and loads 3 vectors of 16 channels' weights (all 48 lanes useful); the tile is
 * transposed on the way out. A 1x1 stride-1 convolution reads x itself as its slab.
 * Work items are (image, group, chunk of output rows, range of pixels of the chunk, range of output
 * channels), taken by threads from a shared counter; a thread refills its slab only when its item's
 * rows change. A 1x1 convolution's pixel-major items split pixels (in 8-pixel tiles) when it has
 * few channels, and channels in 48-channel groups: a 16- or 32-channel range runs the 1- or
 * 2-vector tile, which loads a pixel's broadcast for 16 or 32 FMAs instead of 48 (mv2's 384->96 at
 * 14x14 on 2 threads: 0.16 ms split in 16-channel ranges, 0.11 ms in pixel ranges).
 */
#ifndef LT_PRELUDE_CONV_DIRECT_H
#define LT_PRELUDE_CONV_DIRECT_H

#if defined(__AVX512F__) && LT_GEMM_MR == 8 && LT_GL == 16
#define LT_CD_ENABLED 1
#define LT_CD_NV 3        /* vectors of 16 lanes in a tile */
#define LT_CD_QT 48       /* lanes in a tile */
#define LT_CD_MAXQT 128   /* tiles in a chunk of rows (q lanes <= 6144) */
#define LT_CD_SLAB 98304  /* target slab size in floats (384 KiB: in L2 beside the weight panels) */
#define LT_CD_MAXS 16     /* largest stride */

typedef struct lt_cd_plan {
    const lt_conv2d_geom *g;
    int64_t ocg, cg, K, kb, mpad, per; /* per group: rows of W, channels, K = cg*KH*KW, K block, padded
                                          rows, floats of packed weights */
    int64_t pw;                        /* panel width of the packed weights (lt_conv2d_pw_) */
    int64_t Wq, ex;                    /* phase-plane row width; halo rows below a chunk's outputs */
    int64_t rows, nrc, nmc;            /* output rows per chunk, chunks per image, channel ranges */
    int64_t npc;                       /* pixel ranges per chunk (the pixel-major kernel; else 1) */
    int64_t pstride, cstride, slab;    /* slab: floats per phase plane, per channel, in all (+ slack) */
    int64_t ws_per;                    /* workspace floats per thread: slab, then off[K] */
    int T;                             /* threads */
    int pix;                           /* 1: the pixel-major kernel, 0: the channel-major one */
    int na, nb;                        /* phases the taps use: row phases a[], column phases b[] */
    int8_t pa[LT_CD_MAXS], pb[LT_CD_MAXS]; /* the used phases in order; ia[phase], ib[phase]: their */
    int8_t ia[LT_CD_MAXS], ib[LT_CD_MAXS]; /* index among them (-1: unused, never filled) */
    int xslab;                         /* 1: x is the slab (1x1, stride 1, no padding) */
} lt_cd_plan;

/* Floats per thread for chunks of `rows` output rows. */
/* Floats per thread for chunks of `rows` output rows (xslab: the offsets only). */
LT_FN int64_t lt_cd_thread_floats_(const lt_cd_plan *p, int64_t rows) {
    if (p->xslab) return p->K + 16;
    return p->cg * p->na * p->nb * (rows + p->ex) * p->Wq + p->Wq + 64 + (p->K + 16);
}

/* Floats of B data a chunk of `rows` output rows reads (what the slab holds). */
LT_FN int64_t lt_cd_chunk_floats_(const lt_cd_plan *p, int64_t rows) {
    return p->cg * p->na * p->nb * (rows + p->ex) * p->Wq;
}

/* The units an item's channel range is counted in: 8-row tiles (channel-major), 16-channel panels
 * (pixel-major), or groups of LT_CD_NV panels (pixel-major with x read in place and fewer than
 * 24 panels: its ranges then keep the widest tile; with more, ranges are long anyway). */
LT_FN int64_t lt_cd_channel_units_(const lt_cd_plan *p) {
    if (!p->pix) return lt_gemm_cdiv_(p->ocg, LT_GEMM_MR);
    return p->xslab && p->ocg / 16 < 24 ? lt_gemm_cdiv_(p->ocg / 16, LT_CD_NV) : p->ocg / 16;
}
/* Panels per channel unit of the pixel-major kernel. */
LT_FN int64_t lt_cd_unit_panels_(const lt_cd_plan *p) {
    return p->xslab && p->ocg / 16 < 24 ? LT_CD_NV : 1;
}

LT_FN int lt_cd_plan_(lt_cd_plan *p, const lt_conv2d_geom *g, int64_t ws_floats, int threads) {
    memset(p, 0, sizeof *p);
    p->g = g;
    if (g->G > 1 && g->G == g->C && g->OC % g->C == 0) return 0; /* depthwise: conv_dw.h */
    int is1x1 = g->KH == 1 && g->KW == 1 && g->SH == 1 && g->SW == 1 && g->PH0 == 0 && g->PW0 == 0 &&
                g->OH == g->H && g->OW == g->W;
    p->ocg = g->OC / g->G, p->cg = g->C / g->G, p->K = p->cg * g->KH * g->KW;
    if (p->K <= 0 || p->ocg <= 0) return 0;
    p->kb = lt_gemm_kblock(p->K);
    p->pw = lt_conv2d_pw_(p->ocg);
    p->mpad = lt_gemm_cdiv_(p->ocg, p->pw) * p->pw;
    p->per = lt_sgemm_packed_a_size(p->ocg, p->K);
    if (g->SH > LT_CD_MAXS || g->SW > LT_CD_MAXS) return 0;
    /* the phases the taps use (stride 2, 1x1: only (0, 0); 3x3: all four) */
    for (int i = 0; i < LT_CD_MAXS; i++) p->ia[i] = p->ib[i] = -1;
    for (int64_t kh = 0; kh < g->KH; kh++) {
        int a = (int)(kh * g->DH % g->SH);
        if (p->ia[a] < 0) p->ia[a] = (int8_t)p->na, p->pa[p->na++] = (int8_t)a;
    }
    for (int64_t kw = 0; kw < g->KW; kw++) {
        int b = (int)(kw * g->DW % g->SW);
        if (p->ib[b] < 0) p->ib[b] = (int8_t)p->nb, p->pb[p->nb++] = (int8_t)b;
    }
    p->Wq = g->OW + (g->KW - 1) * g->DW / g->SW;
    p->ex = (g->KH - 1) * g->DH / g->SH;
    if (p->Wq > LT_CD_QT * LT_CD_MAXQT) return 0;
    /* the pixel-major kernel: when q space wastes lanes (below 90% useful), and on images up to
     * 32x32, 16x16 for 1x1 stride 1 (measured: 3x3 runs faster pixel-major at 28x28 and 14x14,
     * channel-major at 56x56; 1x1 pixel-major at 14x14, not at 28x28) */
    double qlanes = (double)lt_gemm_cdiv_((g->OH - 1) * p->Wq + g->OW, 16) * 16;
    p->pix = p->pw == 16 && ((double)(g->OH * g->OW) < 0.9 * qlanes || g->OH * g->OW <= (is1x1 ? 256 : 1024));
    /* a 1x1 convolution reads x in place either way; with many output channels per input channel
     * the GEMM's packed B panels (streamed past more weight rows) pay for their copy */
    if (is1x1 && !p->pix && p->ocg > 2 * p->K) return 0;
    p->xslab = is1x1;
    if (lt_cd_thread_floats_(p, 1) > (int64_t)1 << 30) return 0; /* offsets are int32 */
    /* rows per chunk: the chunk's B data (the slab, or x's rows) stays in L2 while every weight
     * panel passes over it; twice as much when the weights are larger still (read once a chunk) */
    int64_t rows = 1, cap = LT_CD_SLAB * (p->ocg * p->K > LT_CD_SLAB ? 2 : 1);
    while (rows < g->OH && (rows + 1) * p->Wq <= LT_CD_QT * LT_CD_MAXQT && lt_cd_chunk_floats_(p, rows + 1) <= cap)
        rows++;
    rows = lt_gemm_cdiv_(g->OH, lt_gemm_cdiv_(g->OH, rows)); /* balanced chunks */
    /* threads: enough work items (at least 2 per thread), splitting rows before channels */
    int T = threads > 0 ? threads : 1;
    double flops = 2.0 * (double)g->N * (double)g->OC * (double)g->OH * (double)g->OW * (double)p->K;
    if (flops < 2.0e6) T = 1;
    int64_t nrc = lt_gemm_cdiv_(g->OH, rows), nmc = 1, npc = 1;
    int64_t mp = lt_cd_channel_units_(p); /* channel units an item's range is made of */
    /* x read in place (1x1, stride 1), pixel-major: split pixels first when the channel units
     * are fewer than 2 per thread, else channels (each thread then streams only its share of
     * the weights: measured faster for mv2's 64->384 and 96->576 at 14x14). Otherwise halve the
     * rows while chunks keep 4 tiles of lanes (each row chunk fills its own slab), then split
     * the channels, then the rows further. */
    const int px_split = p->pix && p->xslab, px_first = px_split && mp < 2 * T;
    while (T > 1 && g->N * g->G * nrc * npc * nmc < 2 * T) {
        int px_ok = px_split && lt_gemm_min_(rows, g->OH) * g->OW / (npc + 1) >= 16;
        if (px_ok && px_first) npc++;
        else if (!px_split && rows > 1 && rows / 2 * p->Wq >= 4 * LT_CD_QT) rows = lt_gemm_cdiv_(rows, 2);
        else if (nmc < mp) nmc++;
        else if (px_ok) npc++;
        else if (rows > 1) rows = lt_gemm_cdiv_(rows, 2), npc = 1;
        else break;
        nrc = lt_gemm_cdiv_(g->OH, rows);
    }
    /* the workspace: shrink rows, then threads, to what it holds */
    if (!ws_floats) return 0;
    while (rows > 1 && lt_cd_thread_floats_(p, rows) * T > ws_floats) rows--;
    while (T > 1 && lt_cd_thread_floats_(p, rows) * T > ws_floats) T--;
    if (lt_cd_thread_floats_(p, rows) * T > ws_floats) return 0;
    p->rows = rows, p->nrc = lt_gemm_cdiv_(g->OH, rows), p->nmc = nmc, p->npc = npc, p->T = T;
    if (p->xslab) {
        p->pstride = p->cstride = g->H * g->W, p->slab = 0;
    } else {
        p->pstride = (rows + p->ex) * p->Wq;
        p->cstride = p->na * p->nb * p->pstride;
        p->slab = p->cg * p->cstride + p->Wq + 64;
    }
    p->ws_per = lt_cd_thread_floats_(p, rows);
    return 1;
}

LT_FN int64_t lt_cd_ws_floats_(const lt_conv2d_geom *g, int threads) {
    lt_cd_plan p;
    if (!lt_cd_plan_(&p, g, (int64_t)1 << 40, threads)) return 0;
    return p.ws_per * p.T;
}

/* Fill the slab with output rows [r0, r0 + rows) of image n, group gi (channels of the group). */
LT_FN void lt_cd_fill_(const lt_cd_plan *p, const float *x, int64_t n, int64_t gi, int64_t r0, float *slab) {
    const lt_conv2d_geom *g = p->g;
    const int64_t SH = g->SH, SW = g->SW, Wq = p->Wq, rq = p->rows + p->ex, H = g->H, W = g->W;
    const float *xg = x + (n * g->C + gi * p->cg) * H * W;
    /* phase column b: j -> input column j*SW + b - PW0; [jlo, jhi) inside the image */
    for (int64_t ci = 0; ci < p->cg; ci++) {
        const float *xc = xg + ci * H * W;
        float *sc = slab + ci * p->cstride;
        for (int ua = 0; ua < p->na; ua++)
            for (int64_t i = 0; i < rq; i++) {
                int64_t ih = (r0 + i) * SH + p->pa[ua] - g->PH0;
                for (int ub = 0; ub < p->nb; ub++) {
                    int64_t b = p->pb[ub];
                    float *d = sc + (ua * p->nb + ub) * p->pstride + i * Wq;
                    if (ih < 0 || ih >= H) {
                        memset(d, 0, (size_t)Wq * sizeof(float));
                        continue;
                    }
                    const float *s = xc + ih * W;
                    int64_t off = b - g->PW0; /* iw = j*SW + off */
                    int64_t jlo = off >= 0 ? 0 : (-off + SW - 1) / SW;
                    int64_t jhi = W - off > 0 ? (W - off + SW - 1) / SW : 0;
                    if (jhi > Wq) jhi = Wq;
                    if (jlo > jhi) jlo = jhi;
                    for (int64_t j = 0; j < jlo; j++) d[j] = 0.0f;
                    if (SW == 1) {
                        memcpy(d + jlo, s + jlo + off, (size_t)(jhi - jlo) * sizeof(float));
                    } else {
                        const float *s2 = s + off;
                        LT_PRAGMA_SIMD
                        for (int64_t j = jlo; j < jhi; j++) d[j] = s2[j * SW];
                    }
                    for (int64_t j = jhi; j < Wq; j++) d[j] = 0.0f;
                }
            }
    }
    memset(slab + p->cg * p->cstride, 0, (size_t)(p->Wq + 64) * sizeof(float)); /* read by padding lanes */
}

/* off[k] for k = (ci, kh, kw) of the group, in the packed weights' order. */
LT_FN void lt_cd_offsets_(const lt_cd_plan *p, int32_t *off) {
    const lt_conv2d_geom *g = p->g;
    int64_t k = 0;
    for (int64_t ci = 0; ci < p->cg; ci++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t dh = kh * g->DH, dw = kw * g->DW;
                int64_t o = ci * p->cstride + (p->ia[dh % g->SH] * p->nb + p->ib[dw % g->SW]) * p->pstride +
                            (dh / g->SH) * p->Wq + dw / g->SW;
                off[k++] = (int32_t)o;
            }
}

/* A tile's store pattern: per vector, its valid lanes and the output index (from the chunk's
 * first pixel) of the first one; the lanes' output indices are consecutive. */
typedef struct lt_cd_tile {
    __mmask16 m[LT_CD_NV];
    __mmask16 lm[LT_CD_NV]; /* lanes inside q space (< nq): the B loads (x as the slab ends there) */
    int masked;             /* x is the slab and the tile has lanes beyond q space: masked loads */
    int64_t pos[LT_CD_NV];
    int64_t first, count; /* output index of the first valid lane of the tile; valid lanes */
} lt_cd_tile;

LT_FN void lt_cd_tiles_(const lt_cd_plan *p, int64_t nr, lt_cd_tile *tl, int64_t ntiles) {
    const int64_t Wq = p->Wq, OW = p->g->OW, nq = (nr - 1) * Wq + OW;
    for (int64_t t = 0; t < ntiles; t++) {
        lt_cd_tile *e = tl + t;
        int64_t q = t * LT_CD_QT, r = q / Wq, c = q % Wq;
        e->first = -1, e->count = 0, e->masked = 0;
        for (int v = 0; v < LT_CD_NV; v++) {
            unsigned m = 0, lm = 0;
            e->pos[v] = 0;
            int have = 0;
            for (int l = 0; l < 16; l++, q++) {
                if (q < nq) lm |= 1u << l;
                if (q < nq && c < OW) {
                    if (!have) e->pos[v] = r * OW + c, have = 1;
                    if (e->first < 0) e->first = r * OW + c;
                    m |= 1u << l;
                    e->count++;
                }
                if (++c == Wq) c = 0, r++;
            }
            e->m[v] = (__mmask16)m, e->lm[v] = (__mmask16)lm;
            if (p->xslab && lm != 0xffffu) e->masked = 1;
        }
    }
}

/* What a kernel call needs besides the operands. */
typedef struct lt_cd_args {
    int64_t K, kb, mpad;   /* mpad: rows of the packed weights, padded to the panel width */
    const float *a;        /* the group's packed weights */
    int64_t t, pw;         /* the 8 rows (t*8..): in panel t*8/pw, from row t*8 % pw; panel width */
    const float *bq;       /* the slab, offset to the tile's first lane */
    const int32_t *off;
    float *c;              /* output row of the tile's first channel, offset to the chunk's first pixel */
    const float *res;      /* the same in the residual, or NULL */
    const float *bias;     /* the tile's first channel's bias, or NULL */
    int64_t ldc;           /* OH*OW */
    const lt_cd_tile *tile;
    int act, res_mode, in_regs; /* res_mode: 0 none, 1 before the activation, 2 after */
    float act_a, act_b;
    int mr;                /* rows of the tile stored (<= 8) */
} lt_cd_args;

/* The tail of the epilogue for activations not run in registers: over each row's stored lanes. */
static __attribute__((noinline, unused)) void lt_cd_post_(const lt_cd_args *A, int mr) {
    const lt_cd_tile *tl = A->tile;
    if (tl->count <= 0) return;
    for (int i = 0; i < mr; i++) {
        float *c = A->c + i * A->ldc + tl->first;
        lt_act_row_f32(c, tl->count, A->act, A->act_a, A->act_b);
        if (A->res_mode == 2) {
            const float *r = A->res + i * A->ldc + tl->first;
            for (int64_t j = 0; j < tl->count; j++) c[j] += r[j];
        }
    }
}

/* 8 x NV_ tile over all of K (every K block of the packed weights), then the epilogue of its first
 * A->mr rows (the packed panels are zero-padded, so the rows beyond are computed and dropped). */
LT_GEMM_AI void lt_cd_kernel_(const int NV_, const int MASKED, const lt_cd_args *A) {
    const int MR_ = LT_GEMM_MR, mr = A->mr;
    __m512 acc[LT_GEMM_MR][LT_CD_NV];
#pragma GCC unroll 8
    for (int i = 0; i < MR_; i++)
#pragma GCC unroll 3
        for (int v = 0; v < NV_; v++) acc[i][v] = _mm512_setzero_ps();
    const float *bq = A->bq;
    __mmask16 lm[LT_CD_NV];
#pragma GCC unroll 3
    for (int v = 0; v < NV_; v++) lm[v] = A->tile->lm[v];
    for (int64_t p0 = 0; p0 < A->K; p0 += A->kb) {
        int64_t kc = lt_gemm_min_(A->kb, A->K - p0);
        /* panel t: 8 rows of a pw-wide panel (pw = 8 or 16) */
        const float *a = A->a + p0 * A->mpad + A->t * LT_GEMM_MR / A->pw * A->pw * kc + A->t * LT_GEMM_MR % A->pw;
        const int32_t *off = A->off + p0;
        for (int64_t k = 0; k < kc; k++) {
            const float *b = bq + off[k];
            { /* the slab lines of a later k (its rows jump between channels and kernel rows) */
                const float *pf = bq + off[k + 12 < kc ? k + 12 : k];
                _mm_prefetch((const char *)pf, _MM_HINT_T0);
                _mm_prefetch((const char *)(pf + 16 * NV_ - 1), _MM_HINT_T0);
                if (NV_ > 1) _mm_prefetch((const char *)(pf + 16), _MM_HINT_T0);
                if (NV_ > 2) _mm_prefetch((const char *)(pf + 32), _MM_HINT_T0);
            }
            __m512 bv[LT_CD_NV];
#pragma GCC unroll 3
            for (int v = 0; v < NV_; v++) bv[v] = MASKED ? _mm512_maskz_loadu_ps(lm[v], b + 16 * v) : _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 8
            for (int i = 0; i < MR_; i++) {
                __m512 av = _mm512_set1_ps(a[i]);
#pragma GCC unroll 3
                for (int v = 0; v < NV_; v++) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
            }
            a += A->pw;
        }
    }
    const lt_cd_tile *tl = A->tile;
    const __m512 zero = _mm512_setzero_ps();
    __m512 lo = _mm512_set1_ps(-LT_INF_F32), hi = _mm512_set1_ps(LT_INF_F32), la = _mm512_set1_ps(A->act_a);
    if (A->act == LT_ACT_RELU) lo = zero;
    if (A->act == LT_ACT_CLIP) lo = _mm512_set1_ps(A->act_a), hi = _mm512_set1_ps(A->act_b);
    const int leaky = A->act == LT_ACT_LEAKY_RELU, in_regs = A->in_regs, res_mode = A->res_mode;
#pragma GCC unroll 8
    for (int i = 0; i < MR_; i++) {
        if (i >= mr) break;
        __m512 bi = A->bias ? _mm512_set1_ps(A->bias[i]) : zero;
        float *c = A->c + i * A->ldc;
        const float *r = A->res ? A->res + i * A->ldc : 0;
#pragma GCC unroll 3
        for (int v = 0; v < NV_; v++) {
            __mmask16 m = tl->m[v];
            if (!m) continue;
            __m512 x = _mm512_add_ps(acc[i][v], bi);
            int full = m == 0xffff;
            if (res_mode == 1)
                x = _mm512_add_ps(x, full ? _mm512_loadu_ps(r + tl->pos[v]) : _mm512_maskz_expandloadu_ps(m, r + tl->pos[v]));
            if (in_regs) {
                if (leaky) x = _mm512_fmadd_ps(la, _mm512_min_ps(zero, x), _mm512_max_ps(zero, x));
                else x = _mm512_min_ps(hi, _mm512_max_ps(lo, x)); /* relu / clip / none; NaN stays NaN */
                if (res_mode == 2)
                    x = _mm512_add_ps(x, full ? _mm512_loadu_ps(r + tl->pos[v])
                                              : _mm512_maskz_expandloadu_ps(m, r + tl->pos[v]));
            }
            if (full) {
                _mm512_storeu_ps(c + tl->pos[v], x);
            } else {
                int cnt = __builtin_popcount((unsigned)m);
                _mm512_mask_storeu_ps(c + tl->pos[v], (__mmask16)((1u << cnt) - 1u), _mm512_maskz_compress_ps(m, x));
            }
        }
    }
    if (!in_regs) lt_cd_post_(A, mr);
}

/* one instance per tile width (a ragged last row of channels runs the 8-row kernel), and with
 * masked B loads for the tiles that reach past the end of x read in place */
#define LT_CD_FN(nv)                                                                                   \
    static __attribute__((noinline, unused)) void lt_cd_k_##nv(const lt_cd_args *A) { lt_cd_kernel_(nv, 0, A); } \
    static __attribute__((noinline, unused)) void lt_cd_km_##nv(const lt_cd_args *A) { lt_cd_kernel_(nv, 1, A); }
LT_CD_FN(1) LT_CD_FN(2) LT_CD_FN(3)
static void (*const lt_cd_table[2][3])(const lt_cd_args *) __attribute__((unused)) = {
    {lt_cd_k_1, lt_cd_k_2, lt_cd_k_3}, {lt_cd_km_1, lt_cd_km_2, lt_cd_km_3}};

/* ---- pixel-major kernel: 8 output pixels x 48 output channels ---- */
typedef struct lt_cp_args {
    int64_t K, kb, mpad;
    const float *a;         /* the group's packed weights (16-channel panels) */
    int64_t u;              /* the tile's first panel */
    const float *px[8];     /* the tile's pixels in the slab (lane q of each) */
    const int32_t *off;
    float *c;               /* output row of the tile's first channel, at the tile's first pixel */
    const float *res;       /* the same in the residual, or NULL */
    const float *bias;      /* the tile's first channel's bias, or NULL */
    int64_t ldc;
    int act, res_mode, in_regs;
    float act_a, act_b;
    int mrp;                /* pixels of the tile (<= 8) */
} lt_cp_args;

/* The rest of a pixel-major tile's epilogue for activations not run in registers: over each of
 * the nch channel rows' mrp stored pixels. */
static __attribute__((noinline, unused)) void lt_cp_post_(const lt_cp_args *A, int mrp, int nch) {
    for (int j = 0; j < nch; j++) {
        float *cr = A->c + j * A->ldc;
        lt_act_row_f32(cr, mrp, A->act, A->act_a, A->act_b);
        if (A->res_mode == 2) {
            const float *rr = A->res + j * A->ldc;
            for (int r = 0; r < mrp; r++) cr[r] += rr[r];
        }
    }
}

/* Store 16 channels x 8 pixels: x[r] holds pixel r's 16 channels (zero for r >= the tile's
 * pixels). An 8x8 transpose runs on both 256-bit halves at once, so t[c] holds channel c's 8
 * pixels in its low half and channel c+8's in its high half; then the epilogue, and each half
 * goes to its channel's row (mask m8: the tile's pixels). */
static __attribute__((noinline, unused)) void lt_cp_store16_(const lt_cp_args *A, const __m512 *x, int j0,
                                                             __mmask8 m8) {
    __m512 t[8], u[8];
    t[0] = _mm512_unpacklo_ps(x[0], x[1]), t[1] = _mm512_unpackhi_ps(x[0], x[1]);
    t[2] = _mm512_unpacklo_ps(x[2], x[3]), t[3] = _mm512_unpackhi_ps(x[2], x[3]);
    t[4] = _mm512_unpacklo_ps(x[4], x[5]), t[5] = _mm512_unpackhi_ps(x[4], x[5]);
    t[6] = _mm512_unpacklo_ps(x[6], x[7]), t[7] = _mm512_unpackhi_ps(x[6], x[7]);
    u[0] = _mm512_shuffle_ps(t[0], t[2], 0x44), u[1] = _mm512_shuffle_ps(t[0], t[2], 0xEE);
    u[2] = _mm512_shuffle_ps(t[1], t[3], 0x44), u[3] = _mm512_shuffle_ps(t[1], t[3], 0xEE);
    u[4] = _mm512_shuffle_ps(t[4], t[6], 0x44), u[5] = _mm512_shuffle_ps(t[4], t[6], 0xEE);
    u[6] = _mm512_shuffle_ps(t[5], t[7], 0x44), u[7] = _mm512_shuffle_ps(t[5], t[7], 0xEE);
    /* 128-bit lanes: lo = [a0, b0, a2, b2], hi = [a1, b1, a3, b3] */
    const __m512i ilo = _mm512_set_epi32(27, 26, 25, 24, 11, 10, 9, 8, 19, 18, 17, 16, 3, 2, 1, 0);
    const __m512i ihi = _mm512_set_epi32(31, 30, 29, 28, 15, 14, 13, 12, 23, 22, 21, 20, 7, 6, 5, 4);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_permutex2var_ps(u[i], ilo, u[i + 4]);
        t[i + 4] = _mm512_permutex2var_ps(u[i], ihi, u[i + 4]);
    }
    const __m512 zero = _mm512_setzero_ps();
    __m512 lo = _mm512_set1_ps(-LT_INF_F32), hi = _mm512_set1_ps(LT_INF_F32), la = _mm512_set1_ps(A->act_a);
    if (A->act == LT_ACT_RELU) lo = zero;
    if (A->act == LT_ACT_CLIP) lo = _mm512_set1_ps(A->act_a), hi = _mm512_set1_ps(A->act_b);
    const int leaky = A->act == LT_ACT_LEAKY_RELU;
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        const int64_t ja = j0 + c, jb = j0 + c + 8;
        __m512 v = t[c];
        if (A->bias)
            v = _mm512_add_ps(v, _mm512_insertf32x8(_mm512_set1_ps(A->bias[ja]), _mm256_set1_ps(A->bias[jb]), 1));
#define LT_CP_RES() \
    _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_maskz_loadu_ps(m8, A->res + ja * A->ldc)), \
                       _mm256_maskz_loadu_ps(m8, A->res + jb * A->ldc), 1)
        if (A->res_mode == 1) v = _mm512_add_ps(v, LT_CP_RES());
        if (A->in_regs) {
            if (leaky) v = _mm512_fmadd_ps(la, _mm512_min_ps(zero, v), _mm512_max_ps(zero, v));
            else v = _mm512_min_ps(hi, _mm512_max_ps(lo, v)); /* relu / clip / none; NaN stays NaN */
            if (A->res_mode == 2) v = _mm512_add_ps(v, LT_CP_RES());
        }
#undef LT_CP_RES
        _mm256_mask_storeu_ps(A->c + ja * A->ldc, m8, _mm512_castps512_ps256(v));
        _mm256_mask_storeu_ps(A->c + jb * A->ldc, m8, _mm512_extractf32x8_ps(v, 1));
    }
}

/* MRP (1, 4 or 8) pixel rows computed, the first A->mrp of them stored; rows beyond read pixel 0's
 * values. */
LT_GEMM_AI void lt_cp_kernel_(const int MRP, const int NV_, const lt_cp_args *A) {
    const int mrp = A->mrp;
    __m512 acc[8][LT_CD_NV];
#pragma GCC unroll 8
    for (int r = 0; r < MRP; r++)
#pragma GCC unroll 3
        for (int v = 0; v < NV_; v++) acc[r][v] = _mm512_setzero_ps();
    const float *px[8];
#pragma GCC unroll 8
    for (int r = 0; r < MRP; r++) px[r] = r < mrp ? A->px[r] : A->px[0];
    for (int64_t p0 = 0; p0 < A->K; p0 += A->kb) {
        int64_t kc = lt_gemm_min_(A->kb, A->K - p0);
        const float *w = A->a + p0 * A->mpad + A->u * 16 * kc; /* panel u+v at + v*16*kc */
        const int64_t ps = 16 * kc;
        const int32_t *off = A->off + p0;
        for (int64_t k = 0; k < kc; k++) {
            const int64_t o = off[k];
            { /* the slab lines of a later k (its rows jump between channels and kernel rows) */
                const int64_t of = off[k + 12 < kc ? k + 12 : k];
                _mm_prefetch((const char *)(px[0] + of), _MM_HINT_T0);
                _mm_prefetch((const char *)(px[MRP - 1] + of), _MM_HINT_T0);
            }
            __m512 wv[LT_CD_NV];
#pragma GCC unroll 3
            for (int v = 0; v < NV_; v++) wv[v] = _mm512_loadu_ps(w + v * ps);
#pragma GCC unroll 8
            for (int r = 0; r < MRP; r++) {
                __m512 xv = _mm512_set1_ps(px[r][o]);
#pragma GCC unroll 3
                for (int v = 0; v < NV_; v++) acc[r][v] = _mm512_fmadd_ps(xv, wv[v], acc[r][v]);
            }
            w += 16;
        }
    }
    const __mmask8 m8 = (__mmask8)((1u << mrp) - 1u);
#pragma GCC unroll 3
    for (int v = 0; v < NV_; v++) {
        __m512 x[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) x[r] = r < MRP ? acc[r][v] : _mm512_setzero_ps();
        lt_cp_store16_(A, x, 16 * v, m8);
    }
    if (!A->in_regs) lt_cp_post_(A, mrp, 16 * NV_);
}

#define LT_CP_FN(mr, nv)                                                                      \
    static __attribute__((noinline, unused)) void lt_cp_k_##mr##_##nv(const lt_cp_args *A) { \
        lt_cp_kernel_(mr, nv, A);                                                              \
    }
#define LT_CP_ROW(mr) LT_CP_FN(mr, 1) LT_CP_FN(mr, 2) LT_CP_FN(mr, 3)
LT_CP_ROW(1) LT_CP_ROW(4) LT_CP_ROW(8)
#define LT_CP_R(mr) {lt_cp_k_##mr##_1, lt_cp_k_##mr##_2, lt_cp_k_##mr##_3}
/* by pixels: 1 (7x7 images: 49 = 6*8 + 1), 2-4 (14x14: 196 = 24*8 + 4), 5-8 */
static void (*const lt_cp_table[8][3])(const lt_cp_args *) __attribute__((unused)) = {
    LT_CP_R(1), LT_CP_R(4), LT_CP_R(4), LT_CP_R(4), LT_CP_R(8), LT_CP_R(8), LT_CP_R(8), LT_CP_R(8),
};

/* ---- the driver ---- */
/* Channel-major tiles of one work item: weight rows [8*t0, 8*t1) over the slab's q tiles. */
LT_FN void lt_cd_item_cm_(const lt_cd_plan *p, lt_cd_args *A, const float *slab, const lt_cd_tile *tiles,
                          int64_t ntiles, int64_t nr, int64_t t0, int64_t t1, float *y0, const float *r0,
                          const float *b0) {
    const lt_conv2d_geom *g = p->g;
    int64_t OHW = g->OH * g->OW;
    for (int64_t t = t0; t < t1; t++) {
        int mr = (int)lt_gemm_min_(LT_GEMM_MR, p->ocg - t * LT_GEMM_MR);
        A->t = t;
        A->c = y0 + t * LT_GEMM_MR * OHW;
        A->res = r0 ? r0 + t * LT_GEMM_MR * OHW : 0;
        A->bias = b0 ? b0 + t * LT_GEMM_MR : 0;
        for (int64_t q = 0; q < ntiles; q++) {
            int64_t lanes = (nr - 1) * p->Wq + g->OW - q * LT_CD_QT;
            int nv = (int)lt_gemm_min_(LT_CD_NV, lt_gemm_cdiv_(lanes, 16));
            A->bq = slab + q * LT_CD_QT;
            A->tile = tiles + q;
            A->mr = mr;
            lt_cd_table[tiles[q].masked][nv - 1](A);
        }
    }
}

/* Pixel-major tiles of one work item: 16-channel panels [u0, u1) over pixels [q0, q1) of the
 * chunk's nr*OW. */
LT_FN void lt_cd_item_pm_(const lt_cd_plan *p, lt_cp_args *A, const float *slab, int64_t q0, int64_t q1,
                          int64_t u0, int64_t u1, float *y0, const float *r0, const float *b0) {
    const lt_conv2d_geom *g = p->g;
    int64_t OHW = g->OH * g->OW;
    for (int64_t u = u0; u < u1; u += LT_CD_NV) {
        int nv = (int)lt_gemm_min_(LT_CD_NV, u1 - u);
        A->u = u;
        for (int64_t p0 = q0; p0 < q1; p0 += 8) {
            int mrp = (int)lt_gemm_min_(8, q1 - p0);
            for (int r = 0; r < mrp; r++) {
                int64_t q = (p0 + r) / g->OW * p->Wq + (p0 + r) % g->OW;
                A->px[r] = slab + q;
            }
            A->c = y0 + u * 16 * OHW + p0;
            A->res = r0 ? r0 + u * 16 * OHW + p0 : 0;
            A->bias = b0 ? b0 + u * 16 : 0;
            A->mrp = mrp;
            lt_cp_table[mrp - 1][nv - 1](A);
        }
    }
}

LT_FN void lt_cd_worker_(const lt_cd_plan *p, const float *x, const float *wp, float *y, const lt_epilogue *ep,
                         float *ws, int64_t *next) {
    const lt_conv2d_geom *g = p->g;
    float *slab = ws;
    int32_t *off = (int32_t *)(ws + p->slab);
    lt_cd_offsets_(p, off);
    lt_cd_tile tiles[LT_CD_MAXQT];
    int64_t have = -1; /* the (image, group, chunk) in the slab */
    int64_t mp = lt_cd_channel_units_(p), OHW = g->OH * g->OW;
    int64_t total = g->N * g->G * p->nrc * p->npc * p->nmc;
    int act = ep ? ep->act : LT_ACT_NONE, in_regs = lt_act_is_cheap(act);
    int res_mode = ep && ep->residual ? (ep->residual_after_act ? 2 : 1) : 0;
    float aa = ep ? ep->act_a : 0.0f, ab = ep ? ep->act_b : 0.0f;
    lt_cd_args A;
    lt_cp_args B;
    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    A.K = B.K = p->K, A.kb = B.kb = p->kb, A.mpad = B.mpad = p->mpad, A.off = B.off = off, A.ldc = B.ldc = OHW;
    A.pw = p->pw;
    A.act = B.act = act, A.act_a = B.act_a = aa, A.act_b = B.act_b = ab, A.in_regs = B.in_regs = in_regs;
    A.res_mode = B.res_mode = res_mode;
    int64_t ntiles = 0, nr = 0;
    const float *src = slab;
    for (int64_t u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); u < total;
         u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED)) {
        int64_t mc = u % p->nmc, pc = u / p->nmc % p->npc, s = u / p->nmc / p->npc; /* s = (image, group, chunk) */
        int64_t rc = s % p->nrc, gi = s / p->nrc % g->G, n = s / p->nrc / g->G;
        int64_t r0 = rc * p->rows;
        if (s != have) {
            nr = lt_gemm_min_(p->rows, g->OH - r0);
            if (p->xslab) {
                src = x + (n * g->C + gi * p->cg) * OHW + r0 * g->OW;
            } else {
                lt_cd_fill_(p, x, n, gi, r0, slab);
                src = slab;
            }
            if (!p->pix) {
                ntiles = lt_gemm_cdiv_((nr - 1) * p->Wq + g->OW, LT_CD_QT);
                lt_cd_tiles_(p, nr, tiles, ntiles);
            }
            have = s;
        }
        int64_t c0 = mc * mp / p->nmc, c1 = (mc + 1) * mp / p->nmc; /* channel units of this item */
        if (p->pix) c0 *= lt_cd_unit_panels_(p), c1 = lt_gemm_min_(c1 * lt_cd_unit_panels_(p), p->ocg / 16);
        int64_t oc0 = gi * p->ocg, cbase = (n * g->OC + oc0) * OHW + r0 * g->OW;
        float *y0 = y + cbase;
        const float *rs = res_mode ? ep->residual + cbase : 0;
        const float *bs = ep && ep->bias ? ep->bias + oc0 : 0;
        if (p->pix) {
            B.a = wp + gi * p->per;
            int64_t tiles = lt_gemm_cdiv_(nr * g->OW, 8); /* pixel range pc of npc, in whole 8-pixel tiles */
            int64_t q0 = pc * tiles / p->npc * 8, q1 = lt_gemm_min_((pc + 1) * tiles / p->npc * 8, nr * g->OW);
            lt_cd_item_pm_(p, &B, src, q0, q1, c0, c1, y0, rs, bs);
        } else {
            A.a = wp + gi * p->per;
            lt_cd_item_cm_(p, &A, src, tiles, ntiles, nr, c0, c1, y0, rs, bs);
        }
    }
}

LT_FN void lt_cd_run_(const lt_cd_plan *p, const float *x, const float *wp, float *y, const lt_epilogue *ep,
                      float *ws) {
    int64_t next = 0;
#ifdef _OPENMP
    if (p->T > 1) {
#pragma omp parallel num_threads(p->T)
        lt_cd_worker_(p, x, wp, y, ep, ws + omp_get_thread_num() * p->ws_per, &next);
        return;
    }
#endif
    lt_cd_worker_(p, x, wp, y, ep, ws, &next);
}
#else
#define LT_CD_ENABLED 0
#endif

#endif
