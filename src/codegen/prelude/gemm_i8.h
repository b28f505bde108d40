/* gemm_i8.h — exact 8-bit integer GEMM and 2-D convolution: the CPU microkernels behind
 * MatMulInteger and ConvInteger (and the QDQ MatMul / Gemm / Conv that the expand_quant pass turns
 * into them) in generated code.
 *
 * Pasted into a generated C translation unit by the emitter when a kernel calls one of these
 * functions (after core.h). Everything is `static`, named lt_*; nothing allocates, prints or aborts.
 * Builds with `-O3 -march=native -fopenmp` (the AVX2 kernel, OpenMP threads) and with plain
 * `cc -O2` (the portable kernel, one thread).
 *
 * ---- API (what generated code and the runtime call) ---------------------------------------------
 *
 *   C[i,j] = sum_k (A[i,k] - za) * (B[k,j] - zb)        int32, wrapping (the reference's int32 result)
 *
 *   A, B: uint8 or int8 (a_type, b_type: LT_I8_U8 / LT_I8_S8, abi.h); zero points of the operand's
 *   type, LT_ZP_NONE, LT_ZP_SCALAR (one value) or LT_ZP_VECTOR (one per row of A / column of B).
 *
 *   void lt_gemm_i8(C, A, B, za, zb, ws, M, N, K, lda, a_type, za_mode, ldb, b_type, zb_mode,
 *                   b_packed, ldc, ws_size)
 *     A[i*lda + k], C[i*ldc + j]; B[k*ldb + j], or (b_packed 1) B from lt_gemm_i8_pack_b. C must not
 *     overlap the operands. ws: int16 scratch, LT_GEMM_I8_WS_PER_THREAD per thread at full speed;
 *     less runs with fewer threads and narrower blocks (down to a stack buffer).
 *   int64_t lt_gemm_i8_packed_b_size(K, N)                          bytes
 *   void    lt_gemm_i8_pack_b(dst, B, K, N, ldb)                    once, at load time
 *
 *   Convolution, NCHW (x [N, C, H, W] uint8/int8, weights [OC, C/G, KH, KW], y [N, OC, OH, OW] int32):
 *   void lt_conv2d_i8(y, x, wpacked, zx, zw, ws, N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1,
 *                     DH, DW, G, x_type, w_type, zx_mode, zw_mode, ws_size)
 *     zx one value (or none), zw one value or one per output channel; padding contributes 0 (the
 *     zero point, once centred). ws: int16 scratch per thread, LT_GEMM_I8_WS_PER_THREAD, or for a
 *     depthwise one LT_CONV_I8_DW_WS_PER_THREAD of its padded plane (less: fewer threads, then a
 *     slower path without the padded copy).
 *   int64_t lt_conv2d_i8_packed_size(OC, C, KH, KW, G, P)           bytes (P = OH * OW)
 *   void    lt_conv2d_i8_pack(dst, w, OC, C, KH, KW, G, P)
 *
 * ---- Design -------------------------------------------------------------------------------------
 * Exactness: the kernel widens both operands to int16 and multiplies pairs of k with vpmaddwd
 * (_mm256_madd_epi16), adding into int32 lanes. An operand is either *centred* (a run-time operand,
 * packed with its zero points subtracted: int16 in [-255, 255]) or *raw* (a constant pre-packed as
 * its bytes, in [-128, 255]); at most one is raw. Every product is then at most 255 * 255 in
 * magnitude and a pair sum at most 130050, so vpmaddwd never saturates (unlike vpmaddubsw's int16
 * pair sums), and the int32 sums wrap mod 2^32 exactly as the reference's int32 result does. A raw
 * operand's zero points are applied after each K block from the other operand's sums:
 *   sum_k (a_ik - za_i)(b_kj - zb_j) = sum_k a'_ik b_kj - zb_j * sum_k a'_ik      (a' centred, b raw)
 * (and the mirror for a raw A). The portable kernel computes the same sums in uint32.
 * Layout: k in pairs. B in panels of NR columns: element (r, k) at [(k/2)*NR*2 + r*2 + k%2] of its
 * panel (a k pair of a panel is one vector). A packed at run time as int16 rows (a row's k pair is
 * a 32-bit broadcast in place: packing is a widening copy); a pre-packed A in panels of MR rows like
 * B's, widened per block. A pre-packed operand keeps the whole K (Kp = K rounded up to even) per
 * panel: panel t at t*W*Kp bytes. An odd K ends with a zero.
 * Kernel: MR x NR = 6 x 16, 12 accumulators of 8 int32; per k pair two B loads (int16, or 16 bytes
 * widened with vpmovsxbw / vpmovzxbw: a constant B streams at one byte per weight, prefetched a
 * panel ahead), six 32-bit broadcasts of A pairs, 12 vpmaddwd + 12 vpaddd; instances for 1, 2, 4
 * and 6 rows (a tail of 3 or 5 computes a row it does not store), one shared store routine that
 * applies the zero-point corrections. Signed and unsigned bytes share the packing loops (an int8
 * is its byte ^ 0x80, read unsigned, minus 128).
 * Driver: K blocks of KC; C cut into chunks (M range x N range x batch) taken by threads from a
 * shared counter, N first (a chunk packs only its B columns, once; one row panel against a
 * pre-packed B takes all of N, so A is packed once). Per chunk and K block: B's block packed once
 * (or read pre-packed), each A panel packed (or widened) once and run against every B panel.
 * Convolution: per image and group a GEMM with an implicit im2col operand: the weights are the
 * raw pre-packed operand and the input is packed centred straight from x (the padding is 0 once
 * centred; a 1x1 stride-1 unpadded convolution reads x as a plain [C, H*W] matrix). With at least
 * NR output pixels the output channels are A's rows and the pixels B's columns (C row-major);
 * with fewer (LT_CONV_I8_PIXEL_ROWS) the pixels are A's rows and the channels B's columns, stored
 * transposed. Depthwise (G == C, OC a multiple of C): direct loops over a centred, zero-padded
 * int16 copy of each input plane, one output row at a time, vectorized by the compiler.
 */
#ifndef LT_PRELUDE_GEMM_I8_H
#define LT_PRELUDE_GEMM_I8_H

#include "core.h"
#include "abi.h" /* LT_I8_*, LT_ZP_*, LT_GEMM_I8_* */

#if defined(__AVX2__)
#include <immintrin.h>
#define LT_GI8_ISA "avx2"
#else
#define LT_GI8_ISA "portable"
#endif

#define LT_GI8_MR LT_GEMM_I8_MR
#define LT_GI8_NR LT_GEMM_I8_NR
#define LT_GI8_KC LT_GEMM_I8_KC
#define LT_GI8_NC LT_GEMM_I8_NC
#define LT_GI8_AI static inline __attribute__((always_inline, unused))
/* The smallest workspace (int16) of one thread: an A block and one B panel block. */
#define LT_GI8_WS_MIN ((int64_t)LT_GI8_KC * (LT_GI8_NR + LT_GI8_MR) + 2 * (LT_GI8_NR + LT_GI8_MR) + 64)

LT_FN int64_t lt_gi8_min_(int64_t a, int64_t b) { return a < b ? a : b; }
LT_FN int64_t lt_gi8_cdiv_(int64_t a, int64_t b) { return (a + b - 1) / b; }
LT_GI8_AI int32_t lt_gi8_ld_(const void *p, int64_t i, int s8) {
    return s8 ? (int32_t)((const int8_t *)p)[i] : (int32_t)((const uint8_t *)p)[i];
}
/* The hot loops read either type as bytes: an int8 b is (b ^ 0x80) - 128 read as uint8, so with
 * m = 0x80 and the 128 folded into the zero point one loop serves both (half the code). */
LT_GI8_AI int32_t lt_gi8_lx_(const void *p, int64_t i, uint8_t m) { return (int32_t)(((const uint8_t *)p)[i] ^ m); }
LT_GI8_AI uint8_t lt_gi8_mask_(int type) { return type == LT_I8_S8 ? 0x80 : 0; }

/* ---- operands ---- */
/* An operand: rows r (A: M, B: N) by k. A matrix (element (r, k) at p[r*rs + k*ks]), packed centred
 * at run time; a pre-packed raw one (packed: panels over the whole K); or a custom centred packer
 * (the convolution's im2col). Zero points of the elements' type: none, one, or one per row. */
typedef struct lt_gi8_src {
    const void *p;
    int64_t rs, ks;
    int type;  /* LT_I8_U8 / LT_I8_S8 */
    int packed;
    int zmode; /* LT_ZP_* */
    const void *z;
    void (*pack)(const struct lt_gi8_src *s, int16_t *dst, int64_t r0, int64_t nr, int64_t k0, int64_t kc, int W);
    const void *ctx;
} lt_gi8_src;

LT_FN int32_t lt_gi8_z_(const lt_gi8_src *s, int64_t r) {
    if (s->zmode == LT_ZP_NONE || !s->z) return 0;
    return lt_gi8_ld_(s->z, s->zmode == LT_ZP_VECTOR ? r : 0, s->type == LT_I8_S8);
}

/* Run-time operands are packed centred, block by block (k in [k0, k0+kc), kcp = kc rounded up to
 * even, the odd k past kc 0), in one of two layouts chosen by W:
 *   W == MR (A): rows of kcp int16, row r at dst[r*kcp] (its k pairs are the kernel's 32-bit
 *                broadcasts in place: packing is a widening copy);
 *   W == NR (B): panels of NR rows, element (r, k) at dst[(r/NR)*NR*kcp + (k/2)*NR*2 + (r%NR)*2 + k%2]
 *                (a k pair of NR columns is one vector); rows past nr are 0. */
LT_GI8_AI void lt_gi8_pack_mat_t_(const lt_gi8_src *s, int16_t *restrict dst, int64_t r0, int64_t nr, int64_t k0,
                                   int64_t kc, int W) {
    int64_t kcp = (kc + 1) & ~(int64_t)1, np = lt_gi8_cdiv_(nr, W);
    const int64_t rs = s->rs, ks = s->ks;
    const uint8_t m = lt_gi8_mask_(s->type);
    const int32_t off = m ? 128 : 0;
    if (W == LT_GI8_MR) { /* A rows */
        for (int64_t r = 0; r < nr; r++) {
            int16_t *d = dst + r * kcp;
            int32_t z = lt_gi8_z_(s, r0 + r) + off;
            const char *row = (const char *)s->p + (r0 + r) * rs + k0 * ks;
            if (ks == 1)
                for (int64_t k = 0; k < kc; k++) d[k] = (int16_t)(lt_gi8_lx_(row, k, m) - z);
            else
                for (int64_t k = 0; k < kc; k++) d[k] = (int16_t)(lt_gi8_lx_(row, k * ks, m) - z);
            if (kc < kcp) d[kc] = 0;
        }
        return;
    }
    /* B panels: two source rows k, k+1 interleaved (rows r contiguous: B of a MatMul, x of a 1x1
     * convolution), else element by element */
    int32_t zs = lt_gi8_z_(s, 0) + off;
    int vec = s->zmode == LT_ZP_VECTOR;
    for (int64_t k = 0; k < kc; k += 2) {
        const char *s0 = (const char *)s->p + (k0 + k) * ks + r0 * rs;
        const char *s1 = k + 1 < kc ? s0 + ks : NULL;
        for (int64_t t = 0; t < np; t++) {
            int16_t *d = dst + t * W * kcp + k / 2 * W * 2;
            int64_t w = lt_gi8_min_(W, nr - t * W), rb = t * W;
            if (!vec && s1 && rs == 1) {
                for (int64_t r = 0; r < w; r++) {
                    d[2 * r] = (int16_t)(lt_gi8_lx_(s0, rb + r, m) - zs);
                    d[2 * r + 1] = (int16_t)(lt_gi8_lx_(s1, rb + r, m) - zs);
                }
            } else {
                for (int64_t r = 0; r < w; r++) {
                    int32_t z = vec ? lt_gi8_z_(s, r0 + rb + r) + off : zs;
                    d[2 * r] = (int16_t)(lt_gi8_lx_(s0, (rb + r) * rs, m) - z);
                    d[2 * r + 1] = s1 ? (int16_t)(lt_gi8_lx_(s1, (rb + r) * rs, m) - z) : 0;
                }
            }
            for (int64_t r = w; r < W; r++) d[2 * r] = d[2 * r + 1] = 0;
        }
    }
}
LT_FN void lt_gi8_pack_mat_(const lt_gi8_src *s, int16_t *dst, int64_t r0, int64_t nr, int64_t k0, int64_t kc, int W) {
    if (W == LT_GI8_MR) lt_gi8_pack_mat_t_(s, dst, r0, nr, k0, kc, LT_GI8_MR);
    else lt_gi8_pack_mat_t_(s, dst, r0, nr, k0, kc, LT_GI8_NR);
}

/* sums[r] = the sum over the block of row r of a packed block (the layout of W, kcp deep), for
 * rows [0, nr) rounded up to MR (rows) or whole panels (padding rows sum to 0). */
LT_FN void lt_gi8_row_sums_(const int16_t *p, int64_t nr, int64_t kcp, int W, int32_t *sums) {
    if (W == LT_GI8_MR) {
        for (int64_t r = 0; r < LT_GI8_MR; r++) {
            uint32_t acc = 0;
            if (r < nr)
                for (int64_t k = 0; k < kcp; k++) acc += (uint32_t)(int32_t)p[r * kcp + k];
            sums[r] = (int32_t)acc;
        }
        return;
    }
    int64_t np = lt_gi8_cdiv_(nr, W);
    for (int64_t t = 0; t < np; t++) {
        uint32_t acc[LT_GI8_NR];
        for (int r = 0; r < W; r++) acc[r] = 0;
        const int16_t *q = p + t * W * kcp;
        for (int64_t k = 0; k < kcp / 2; k++)
            for (int r = 0; r < W; r++) acc[r] += (uint32_t)((int32_t)q[k * W * 2 + 2 * r] + q[k * W * 2 + 2 * r + 1]);
        for (int r = 0; r < W; r++) sums[t * W + r] = (int32_t)acc[r];
    }
}

/* Raw byte panels of a whole constant operand (element (r, k) at src[r*rs + k*ks], R rows, W per
 * panel, K in pairs): the pre-packed layout. */
LT_FN void lt_gi8_pack_raw_(int8_t *restrict dst, const int8_t *restrict src, int64_t rs, int64_t ks, int64_t R,
                            int64_t K, int W) {
    int64_t Kp = (K + 1) & ~(int64_t)1, np = lt_gi8_cdiv_(R, W);
    memset(dst, 0, (size_t)(np * W * Kp));
    for (int64_t r = 0; r < R; r++) {
        int8_t *d = dst + r / W * W * Kp + r % W * 2;
        const int8_t *s = src + r * rs;
        for (int64_t k = 0; k < K; k++) d[k / 2 * W * 2 + k % 2] = s[k * ks];
    }
}

/* ---- the micro-kernel ---- */
/* A register tile's store: C (+)= acc - rs[i]*cz[j] - rz[i]*cs[j] (each correction when its
 * pointers are set: rs/rz MR long, cz/cs NR long, zero-padded). */
typedef struct lt_gi8_tile {
    int first; /* write C instead of adding to it */
    const char *pf; /* a pre-packed B block the next call reads (32 bytes per k pair), prefetched, or NULL */
    const int32_t *rs, *cz; /* A centred (its row sums) x B raw (its column zero points) */
    const int32_t *rz, *cs; /* A raw (its row zero points) x B centred (its column sums) */
} lt_gi8_tile;

/* Scalar store of a tile tmp[r*NR + j] (corrections applied) into C. */
LT_FN void lt_gi8_store_(const int32_t *tmp, int32_t *c, int64_t ci, int64_t cj, int mr, int nc, int first) {
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nc; j++) {
            int32_t *cp = c + r * ci + j * cj;
            uint32_t v = (uint32_t)tmp[r * LT_GI8_NR + j];
            if (!first) v += (uint32_t)*cp;
            *cp = (int32_t)v;
        }
}

/* Portable kernel: any tile shape, B as int16 (bk 0), int8 (1) or uint8 (2) pairs; A's k pair p of
 * row r at a[r*ars + p*aps] (int16: rows ars = kcp, aps = 2; a widened panel ars = 2, aps = 2*MR). */
static __attribute__((noinline, unused)) void lt_gi8_kern_c_(int64_t np, const int16_t *a, int64_t ars, int64_t aps,
                                                             const void *bv, int bk, int32_t *c, int64_t ci,
                                                             int64_t cj, int mr, int nc, const lt_gi8_tile *t) {
    uint32_t acc[LT_GI8_MR][LT_GI8_NR];
    memset(acc, 0, sizeof acc);
    int32_t bb[2 * LT_GI8_NR];
    for (int64_t p = 0; p < np; p++) {
        if (bk == 0) for (int j = 0; j < 2 * LT_GI8_NR; j++) bb[j] = ((const int16_t *)bv)[p * 2 * LT_GI8_NR + j];
        else if (bk == 1) for (int j = 0; j < 2 * LT_GI8_NR; j++) bb[j] = ((const int8_t *)bv)[p * 2 * LT_GI8_NR + j];
        else for (int j = 0; j < 2 * LT_GI8_NR; j++) bb[j] = ((const uint8_t *)bv)[p * 2 * LT_GI8_NR + j];
        const int16_t *ap = a + p * aps;
        for (int r = 0; r < mr; r++) {
            int32_t a0 = ap[r * ars], a1 = ap[r * ars + 1];
            for (int j = 0; j < LT_GI8_NR; j++) acc[r][j] += (uint32_t)(a0 * bb[2 * j] + a1 * bb[2 * j + 1]);
        }
    }
    int32_t tmp[LT_GI8_MR * LT_GI8_NR];
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nc; j++) {
            uint32_t v = acc[r][j];
            if (t->rs) v -= (uint32_t)t->rs[r] * (uint32_t)t->cz[j];
            if (t->rz) v -= (uint32_t)t->rz[r] * (uint32_t)t->cs[j];
            tmp[r * LT_GI8_NR + j] = (int32_t)v;
        }
    lt_gi8_store_(tmp, c, ci, cj, mr, nc, t->first);
}

typedef void (*lt_gi8_kfn)(int64_t np, const int16_t *a, int64_t ars, int64_t aps, const void *b, int32_t *c,
                           int64_t ci, int64_t cj, int mr, int nc, const lt_gi8_tile *t);

#if defined(__AVX2__)
/* The tile's store: the sums tmp[r*NR + j] corrected (lt_gi8_tile) into C; whole rows of 8
 * columns in vectors, the rest element by element. */
static __attribute__((noinline, unused)) void lt_gi8_store_tile_(int32_t *tmp, int32_t *c, int64_t ci, int64_t cj,
                                                                 int mr, int nc, const lt_gi8_tile *t) {
    int nv = cj == 1 ? nc / 8 : 0;
    __m256i cz[2], cs[2];
    for (int v = 0; v < 2; v++) {
        cz[v] = t->rs ? _mm256_loadu_si256((const __m256i *)(t->cz + 8 * v)) : _mm256_setzero_si256();
        cs[v] = t->rz ? _mm256_loadu_si256((const __m256i *)(t->cs + 8 * v)) : _mm256_setzero_si256();
    }
    for (int r = 0; r < mr; r++) {
        for (int v = 0; v < 2 && 8 * v < nc; v++) {
            __m256i x = _mm256_load_si256((const __m256i *)(tmp + r * LT_GI8_NR + 8 * v));
            if (t->rs) x = _mm256_sub_epi32(x, _mm256_mullo_epi32(_mm256_set1_epi32(t->rs[r]), cz[v]));
            if (t->rz) x = _mm256_sub_epi32(x, _mm256_mullo_epi32(_mm256_set1_epi32(t->rz[r]), cs[v]));
            if (v < nv) {
                int32_t *cp = c + r * ci + 8 * v;
                if (!t->first) x = _mm256_add_epi32(x, _mm256_loadu_si256((const __m256i *)cp));
                _mm256_storeu_si256((__m256i *)cp, x);
            } else {
                _mm256_store_si256((__m256i *)(tmp + r * LT_GI8_NR + 8 * v), x);
            }
        }
    }
    if (nv * 8 < nc) { /* the ragged right edge, or C stored with strides */
        int j0 = nv * 8;
        lt_gi8_store_(tmp + j0, c + j0 * cj, ci, cj, mr, nc - j0, t->first);
    }
}

/* AVX2 kernel for MR_ rows and NV_ vectors of 8 columns; BK: B as int16 (0), int8 (1), uint8 (2).
 * The accumulators are named variables (an array of them stays in memory at -O3). */
#define LT_GI8_ROW_(r)                                                                                                 \
    if (MR_ > r) {                                                                                                     \
        int32_t w_;                                                                                                    \
        memcpy(&w_, ap + r * ars, 4);                                                                                  \
        __m256i av_ = _mm256_set1_epi32(w_);                                                                           \
        c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(av_, b0));                                               \
        if (NV_ > 1) c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(av_, b1));                                  \
    }
LT_GI8_AI void lt_gi8_kern_avx2_(const int MR_, const int NV_, const int BK, int64_t np, const int16_t *restrict a,
                                 int64_t ars, int64_t aps, const void *restrict bv, int32_t *restrict c, int64_t ci,
                                 int64_t cj, int mr, int nc, const lt_gi8_tile *t) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
            c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const int16_t *b16 = (const int16_t *)bv;
    const int8_t *b8 = (const int8_t *)bv;
    const char *pf = t->pf;
    for (int64_t p = 0; p < np; p++) {
        if (pf) __builtin_prefetch(pf + p * 32, 0, 3);
        __m256i b0, b1 = _mm256_setzero_si256();
        if (BK == 0) {
            b0 = _mm256_loadu_si256((const __m256i *)(b16 + p * 32));
            if (NV_ > 1) b1 = _mm256_loadu_si256((const __m256i *)(b16 + p * 32 + 16));
        } else if (BK == 1) {
            b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b8 + p * 32)));
            if (NV_ > 1) b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b8 + p * 32 + 16)));
        } else {
            b0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b8 + p * 32)));
            if (NV_ > 1) b1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b8 + p * 32 + 16)));
        }
        const int16_t *ap = a + p * aps;
        LT_GI8_ROW_(0) LT_GI8_ROW_(1) LT_GI8_ROW_(2) LT_GI8_ROW_(3) LT_GI8_ROW_(4) LT_GI8_ROW_(5)
    }
    /* the sums to the tile buffer; one shared routine stores them (a smaller kernel per shape) */
    __m256i acc[LT_GI8_MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    int32_t tmp[LT_GI8_MR * LT_GI8_NR] __attribute__((aligned(32)));
    for (int r = 0; r < MR_; r++)
        for (int v = 0; v < NV_; v++) _mm256_store_si256((__m256i *)(tmp + r * LT_GI8_NR + 8 * v), acc[r][v]);
    lt_gi8_store_tile_(tmp, c, ci, cj, mr, nc, t);
}

#define LT_GI8_K(BK, MR_, NV_)                                                                                         \
    static void lt_gi8_k##BK##_##MR_##_##NV_(int64_t np, const int16_t *a, int64_t ars, int64_t aps, const void *b,     \
                                             int32_t *c, int64_t ci, int64_t cj, int mr, int nc,                      \
                                             const lt_gi8_tile *t) {                                                   \
        lt_gi8_kern_avx2_(MR_, NV_, BK, np, a, ars, aps, b, c, ci, cj, mr, nc, t);                                     \
    }
/* rows 1 (a GEMV), 2, 4 and 6: a tail of 3 or 5 computes one row more (A's rows past the tile are in
 * its buffer, zero or stale, and never stored), to keep the prelude's compile short */
#define LT_GI8_KROWS(BK)                                                                                               \
    LT_GI8_K(BK, 1, 1) LT_GI8_K(BK, 1, 2) LT_GI8_K(BK, 2, 1) LT_GI8_K(BK, 2, 2) LT_GI8_K(BK, 4, 1) LT_GI8_K(BK, 4, 2)  \
    LT_GI8_K(BK, 6, 1) LT_GI8_K(BK, 6, 2)
LT_GI8_KROWS(0)
LT_GI8_KROWS(1)
LT_GI8_KROWS(2)
LT_ABI_ASSERT(LT_GI8_MR == 6 && LT_GI8_NR == 16, "gemm_i8.h: the AVX2 kernel instances are 6 x 16");
#define LT_GI8_KTAB(BK)                                                                                                \
    {{lt_gi8_k##BK##_1_1, lt_gi8_k##BK##_1_2}, {lt_gi8_k##BK##_2_1, lt_gi8_k##BK##_2_2},                             \
     {lt_gi8_k##BK##_4_1, lt_gi8_k##BK##_4_2}, {lt_gi8_k##BK##_4_1, lt_gi8_k##BK##_4_2},                             \
     {lt_gi8_k##BK##_6_1, lt_gi8_k##BK##_6_2}, {lt_gi8_k##BK##_6_1, lt_gi8_k##BK##_6_2}}
static lt_gi8_kfn const lt_gi8_ktab[3][LT_GI8_MR][2] __attribute__((unused)) = {LT_GI8_KTAB(0), LT_GI8_KTAB(1),
                                                                                LT_GI8_KTAB(2)};
#endif

LT_FN void lt_gi8_kernel_(int64_t np, const int16_t *a, int64_t ars, int64_t aps, const void *b, int bk, int32_t *c,
                          int64_t ci, int64_t cj, int mr, int nc, const lt_gi8_tile *t) {
#if defined(__AVX2__)
    lt_gi8_ktab[bk][mr - 1][nc > 8](np, a, ars, aps, b, c, ci, cj, mr, nc, t);
#else
    lt_gi8_kern_c_(np, a, ars, aps, b, bk, c, ci, cj, mr, nc, t);
#endif
}

/* ---- the driver ---- */
typedef struct lt_gi8_prob {
    int64_t M, N, K;
    lt_gi8_src a, b;          /* a: the rows (M), b: the columns (N) */
    int32_t *C;
    int64_t ci, cj;           /* C[i*ci + j*cj] */
    /* batch (x1, x2) in [0, b1) x [0, b2): operand offsets in elements (bytes of a pre-packed one),
     * zero-point offsets in elements (per-row zero points of a group's rows) */
    int64_t b1, b2, sa1, sa2, sb1, sb2, sc1, sc2, sza1, sza2, szb1, szb2;
} lt_gi8_prob;

/* Panels [r0, r0+nr) x [k0, k0+kc) of a run-time operand, centred, into dst. */
LT_FN void lt_gi8_pack_(const lt_gi8_src *s, int16_t *dst, int64_t r0, int64_t nr, int64_t k0, int64_t kc, int W) {
    if (s->pack) s->pack(s, dst, r0, nr, k0, kc, W);
    else lt_gi8_pack_mat_(s, dst, r0, nr, k0, kc, W);
}

/* One chunk: rows [m0, m0+mc) x columns [n0, n0+nc) of batch (x1, x2), every K block. m0 is a
 * multiple of MR and n0 of NR. wa: MR*KC int16, wb: (nc rounded to NR)*KC int16, sa: MR int32,
 * sb: nc rounded to NR int32. */
LT_FN void lt_gi8_chunk_(const lt_gi8_prob *P, int64_t x1, int64_t x2, int64_t m0, int64_t mc, int64_t n0, int64_t nc,
                         int16_t *wa, int16_t *wb, int32_t *sa, int32_t *sb) {
    lt_gi8_src a = P->a, b = P->b;
    a.p = (const char *)a.p + x1 * P->sa1 + x2 * P->sa2;
    b.p = (const char *)b.p + x1 * P->sb1 + x2 * P->sb2;
    if (a.z && a.zmode == LT_ZP_VECTOR) a.z = (const char *)a.z + x1 * P->sza1 + x2 * P->sza2;
    if (b.z && b.zmode == LT_ZP_VECTOR) b.z = (const char *)b.z + x1 * P->szb1 + x2 * P->szb2;
    int32_t *C = P->C + x1 * P->sc1 + x2 * P->sc2;
    const int64_t K = P->K, Kp = (K + 1) & ~(int64_t)1;
    const int need_bsum = a.packed && a.zmode != LT_ZP_NONE && a.z; /* C -= za_i * sum_k b'_kj */
    const int need_asum = b.packed && b.zmode != LT_ZP_NONE && b.z; /* C -= zb_j * sum_k a'_ik */
    if (K <= 0) {
        for (int64_t i = 0; i < mc; i++)
            for (int64_t j = 0; j < nc; j++) C[(m0 + i) * P->ci + (n0 + j) * P->cj] = 0;
        return;
    }
    int32_t rz[LT_GI8_MR], cz[LT_GI8_NR];
    for (int64_t p0 = 0; p0 < K; p0 += LT_GI8_KC) {
        int64_t kc = lt_gi8_min_(LT_GI8_KC, K - p0), kcp = (kc + 1) & ~(int64_t)1;
        /* the B block: pre-packed bytes read in place, or centred panels packed once for the chunk */
        const char *bblk;
        int64_t bstep; /* bytes from one B panel to the next */
        int bk;
        if (b.packed) {
            bblk = (const char *)b.p + n0 / LT_GI8_NR * LT_GI8_NR * Kp + p0 * LT_GI8_NR;
            bstep = LT_GI8_NR * Kp;
            bk = b.type == LT_I8_S8 ? 1 : 2;
        } else {
            lt_gi8_pack_(&b, wb, n0, nc, p0, kc, LT_GI8_NR);
            if (need_bsum) lt_gi8_row_sums_(wb, nc, kcp, LT_GI8_NR, sb);
            bblk = (const char *)wb;
            bstep = LT_GI8_NR * kcp * 2;
            bk = 0;
        }
        lt_gi8_tile t;
        t.first = p0 == 0;
        t.pf = 0;
        t.rs = need_asum ? sa : 0;
        t.cz = need_asum ? cz : 0;
        t.rz = need_bsum ? rz : 0;
        for (int64_t i = 0; i < mc; i += LT_GI8_MR) {
            int mr = (int)lt_gi8_min_(LT_GI8_MR, mc - i);
            if (a.packed) { /* widen the pre-packed panel's block to int16 */
                const char *src = (const char *)a.p + (m0 + i) / LT_GI8_MR * LT_GI8_MR * Kp + p0 * LT_GI8_MR;
                int64_t n = LT_GI8_MR * kcp;
                const uint8_t m = lt_gi8_mask_(a.type);
                const int32_t off = m ? 128 : 0;
                for (int64_t q = 0; q < n; q++) wa[q] = (int16_t)(lt_gi8_lx_(src, q, m) - off);
            } else {
                lt_gi8_pack_(&a, wa, m0 + i, mr, p0, kc, LT_GI8_MR);
                if (need_asum) lt_gi8_row_sums_(wa, mr, kcp, LT_GI8_MR, sa);
            }
            if (need_bsum)
                for (int r = 0; r < LT_GI8_MR; r++) rz[r] = r < mr ? lt_gi8_z_(&a, m0 + i + r) : 0;
            for (int64_t j = 0; j < nc; j += LT_GI8_NR) {
                int w = (int)lt_gi8_min_(LT_GI8_NR, nc - j);
                if (need_asum)
                    for (int q = 0; q < LT_GI8_NR; q++) cz[q] = q < w ? lt_gi8_z_(&b, n0 + j + q) : 0;
                t.cs = need_bsum ? sb + j : 0;
                /* a pre-packed B streams from memory: the next panel's block (or the next K block's
                 * first, after the last row panel) is prefetched meanwhile */
                if (b.packed) {
                    if (j + LT_GI8_NR < nc) t.pf = bblk + (j / LT_GI8_NR + 1) * bstep;
                    else if (i + LT_GI8_MR >= mc && p0 + LT_GI8_KC < K) t.pf = bblk + LT_GI8_KC * LT_GI8_NR;
                    else t.pf = 0;
                }
                lt_gi8_kernel_(kcp / 2, wa, a.packed ? 2 : kcp, a.packed ? 2 * LT_GI8_MR : 2, bblk + j / LT_GI8_NR * bstep,
                               bk, C + (m0 + i) * P->ci + (n0 + j) * P->cj,
                               P->ci, P->cj, mr, w, &t);
            }
        }
    }
}

/* Chunking as gemm.h's: N chunks of at most nc_max columns, split further (N first, then M) until
 * there are at least 3 per thread and a multiple of T, unless panels run out. */
LT_FN void lt_gi8_plan_(const lt_gi8_prob *P, int T, int64_t nc_max, int64_t *cm, int64_t *cn) {
    int64_t pm = lt_gi8_cdiv_(P->M, LT_GI8_MR), pn = lt_gi8_cdiv_(P->N, LT_GI8_NR);
    int64_t m = 1, n = lt_gi8_cdiv_(pn, nc_max / LT_GI8_NR), nb = P->b1 * P->b2;
    while (T > 1 && nb * m * n < 64 * T && (nb * m * n < 3 * T || (nb * m * n) % T != 0)) {
        int can_m = m < pm, can_n = n < pn;
        if (!can_m && !can_n) break;
        if (can_n) n++;
        else m++;
    }
    *cm = m;
    *cn = n;
}

/* int16 workspace of one thread for chunks of at most nc columns (a pre-packed B needs no block). */
LT_FN int64_t lt_gi8_ws_thread_(int64_t nc, int b_packed) {
    return (int64_t)LT_GI8_KC * ((b_packed ? 0 : nc) + LT_GI8_MR) + 2 * (nc + LT_GI8_MR) + 64;
}

LT_FN void lt_gi8_worker_(const lt_gi8_prob *P, int tid, int16_t *ws, int64_t ws_per, int64_t nc_max, int64_t cm,
                          int64_t cn, int64_t *next) {
    int64_t pm = lt_gi8_cdiv_(P->M, LT_GI8_MR), pn = lt_gi8_cdiv_(P->N, LT_GI8_NR);
    int16_t stack_buf[LT_GI8_WS_MIN];
    int16_t *w = ws_per > 0 ? ws + tid * ws_per : stack_buf;
    int16_t *wa = w, *wb = w + LT_GI8_MR * LT_GI8_KC, *we = wb + (P->b.packed ? 0 : nc_max * LT_GI8_KC);
    /* the sums as int32 after the blocks (4-byte aligned: w is, and the offsets are even) */
    int32_t *sa = (int32_t *)(void *)(we + ((uintptr_t)we & 2 ? 1 : 0));
    int32_t *sb = sa + LT_GI8_MR;
    int64_t per_batch = cm * cn, total = per_batch * P->b1 * P->b2;
    for (int64_t u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); u < total;
         u = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED)) {
        int64_t x = u / per_batch, r = u % per_batch, im = r / cn, in = r % cn;
        int64_t m0 = im * pm / cm * LT_GI8_MR, m1 = lt_gi8_min_((im + 1) * pm / cm * LT_GI8_MR, P->M);
        int64_t n0 = in * pn / cn * LT_GI8_NR, n1 = lt_gi8_min_((in + 1) * pn / cn * LT_GI8_NR, P->N);
        if (m1 <= m0 || n1 <= n0) continue;
        lt_gi8_chunk_(P, x / P->b2, x % P->b2, m0, m1 - m0, n0, n1 - n0, wa, wb, sa, sb);
    }
}

LT_FN void lt_gi8_run_(const lt_gi8_prob *P, int16_t *ws, int64_t ws_size, int max_threads) {
    if (P->M <= 0 || P->N <= 0 || P->b1 <= 0 || P->b2 <= 0) return;
    double ops = 2.0 * (double)P->M * (double)P->N * (double)(P->K > 0 ? P->K : 1) * (double)(P->b1 * P->b2);
    int T = max_threads > 0 ? max_threads : 1;
    if (ops < 2.0e6) T = 1; /* below ~10 us the fork costs more than it gains */
    int64_t npad = lt_gi8_cdiv_(P->N, LT_GI8_NR) * LT_GI8_NR;
    /* chunks of at most NC columns keep a B block in L2 for the row panels; with one row panel and a
     * pre-packed B there is no reuse to keep, and one chunk packs A once */
    int64_t nc_max = P->b.packed && P->M <= LT_GI8_MR ? npad : lt_gi8_min_(LT_GI8_NC, npad);
    int64_t need = lt_gi8_ws_thread_(nc_max, P->b.packed);
    if (!ws) ws_size = 0;
    while (T > 1 && need * T > ws_size) T--;
    while (need > ws_size && nc_max > LT_GI8_NR) { /* narrower chunks, down to one panel */
        nc_max = lt_gi8_cdiv_(nc_max / 2, LT_GI8_NR) * LT_GI8_NR;
        need = lt_gi8_ws_thread_(nc_max, P->b.packed);
    }
    int64_t ws_per = need <= ws_size ? need : 0; /* 0: one thread, on its stack buffer (one panel wide) */
    if (!ws_per) nc_max = LT_GI8_NR, T = 1;
    int64_t cm, cn;
    lt_gi8_plan_(P, T, nc_max, &cm, &cn);
    if (cm * cn * P->b1 * P->b2 < T) T = (int)(cm * cn * P->b1 * P->b2);
    int64_t next = 0;
#ifdef _OPENMP
    if (T > 1) {
#pragma omp parallel num_threads(T)
        lt_gi8_worker_(P, omp_get_thread_num(), ws, ws_per, nc_max, cm, cn, &next);
        return;
    }
#endif
    lt_gi8_worker_(P, 0, ws, ws_per, nc_max, cm, cn, &next);
}

LT_FN void lt_gi8_prob_init_(lt_gi8_prob *P, int64_t M, int64_t N, int64_t K) {
    memset(P, 0, sizeof *P);
    P->M = M, P->N = N, P->K = K;
    P->b1 = P->b2 = 1;
}

/* ---- public entry points: GEMM ---- */
LT_FN int64_t lt_gemm_i8_packed_b_size(int64_t K, int64_t N) {
    return lt_gi8_cdiv_(N > 0 ? N : 1, LT_GI8_NR) * LT_GI8_NR * ((K > 0 ? K + 1 : 2) & ~(int64_t)1);
}
LT_FN void lt_gemm_i8_pack_b(int8_t *dst, const void *B, int64_t K, int64_t N, int64_t ldb) {
    lt_gi8_pack_raw_(dst, (const int8_t *)B, 1, ldb, N, K, LT_GI8_NR);
}

LT_FN void lt_gemm_i8(int32_t *C, const void *A, const void *B, const void *za, const void *zb, int16_t *ws,
                      int64_t M, int64_t N, int64_t K, int64_t lda, int64_t a_type, int64_t za_mode, int64_t ldb,
                      int64_t b_type, int64_t zb_mode, int64_t b_packed, int64_t ldc, int64_t ws_size) {
    lt_gi8_prob P;
    lt_gi8_prob_init_(&P, M, N, K);
    P.a.p = A, P.a.rs = lda, P.a.ks = 1, P.a.type = (int)a_type, P.a.zmode = (int)za_mode, P.a.z = za;
    P.b.p = B, P.b.rs = 1, P.b.ks = ldb, P.b.type = (int)b_type, P.b.zmode = (int)zb_mode, P.b.z = zb;
    P.b.packed = b_packed != 0;
    P.C = C, P.ci = ldc, P.cj = 1;
    lt_gi8_run_(&P, ws, ws_size, lt_nthreads());
}

/* ---- convolution ---- */
typedef struct lt_ci8_geom {
    int64_t C, H, W, KH, KW, SH, SW, PH0, PW0, DH, DW, OH, OW;
} lt_ci8_geom;

/* im2col, centred: rows r = output pixels (r0..), k = (ci, kh, kw) of the group; s->p points at
 * the image's group's first input channel. Written in the layout of W (lt_gi8_pack_mat_t_'s: B
 * panels when the pixels are B's columns, A rows when they are A's rows). */
typedef struct lt_ci8_tap {
    const char *plane;   /* the input channel */
    int64_t ihoff, iwoff; /* input row = oh*SH + ihoff, column = ow*SW + iwoff */
    int64_t lo, hi;      /* output columns whose input column is inside */
    int on;              /* a k inside the block (0: the odd K's padding) */
} lt_ci8_tap;

LT_FN void lt_ci8_tap_(const lt_ci8_geom *g, const char *x, int64_t ci, int64_t kh, int64_t kw, lt_ci8_tap *t) {
    t->plane = x + ci * g->H * g->W;
    t->ihoff = kh * g->DH - g->PH0, t->iwoff = kw * g->DW - g->PW0;
    if (g->SW == 1) {
        t->lo = t->iwoff >= 0 ? 0 : -t->iwoff;
        t->hi = g->W - t->iwoff;
    } else {
        t->lo = t->iwoff >= 0 ? 0 : (-t->iwoff + g->SW - 1) / g->SW;
        t->hi = g->W - 1 - t->iwoff < 0 ? 0 : (g->W - 1 - t->iwoff) / g->SW + 1;
    }
    if (t->hi > g->OW) t->hi = g->OW;
    if (t->hi < t->lo) t->hi = t->lo;
    t->on = 1;
}

/* The value of tap t at output (oh, ow): centred, 0 outside the image. */
LT_GI8_AI int16_t lt_ci8_at_(const lt_ci8_geom *g, const lt_ci8_tap *t, int64_t oh, int64_t ow, int32_t z, uint8_t m) {
    int64_t ih = oh * g->SH + t->ihoff;
    if (!t->on || ih < 0 || ih >= g->H || ow < t->lo || ow >= t->hi) return 0;
    return (int16_t)(lt_gi8_lx_(t->plane + ih * g->W, ow * g->SW + t->iwoff, m) - z);
}

LT_GI8_AI void lt_ci8_im2col_t_(const lt_gi8_src *s, int16_t *restrict dst, int64_t r0, int64_t nr, int64_t k0,
                                int64_t kc, int W) {
    const lt_ci8_geom *g = (const lt_ci8_geom *)s->ctx;
    const int rows = W == LT_GI8_MR;
    int64_t kcp = (kc + 1) & ~(int64_t)1, np = lt_gi8_cdiv_(nr, W), khw = g->KH * g->KW;
    const uint8_t m = lt_gi8_mask_(s->type);
    int32_t z = lt_gi8_z_(s, 0) + (m ? 128 : 0);
    /* (ci, kh, kw) of k0, then advanced k by k (no divisions per k) */
    int64_t ci = k0 / khw, kh = k0 % khw / g->KW, kw = k0 % g->KW;
    for (int64_t k = 0; k < kcp; k += 2) {
        lt_ci8_tap t[2];
        for (int e = 0; e < 2; e++) {
            if (k + e >= kc) {
                memset(&t[e], 0, sizeof t[e]);
                continue;
            }
            if (k + e > 0 && ++kw == g->KW) {
                kw = 0;
                if (++kh == g->KH) kh = 0, ci++;
            }
            lt_ci8_tap_(g, (const char *)s->p, ci, kh, kw, &t[e]);
        }
        if (rows) { /* A rows: pixel r's pair at dst[r*kcp + k] */
            int64_t oh = r0 / g->OW, ow = r0 % g->OW;
            for (int64_t r = 0; r < nr; r++) {
                dst[r * kcp + k] = lt_ci8_at_(g, &t[0], oh, ow, z, m);
                dst[r * kcp + k + 1] = lt_ci8_at_(g, &t[1], oh, ow, z, m);
                if (++ow == g->OW) ow = 0, oh++;
            }
            continue;
        }
        /* B panels: runs of pixels in one output row and one panel, the pair interleaved; where both
         * taps are inside, a loop the compiler vectorizes */
        int16_t *dk = dst + k / 2 * W * 2;
        int64_t r = 0, oh = r0 / g->OW, ow = r0 % g->OW;
        while (r < nr) {
            int64_t run = lt_gi8_min_(lt_gi8_min_(g->OW - ow, nr - r), W - r % W);
            int16_t *d = dk + r / W * W * kcp + r % W * 2;
            int64_t ih0 = oh * g->SH + t[0].ihoff, ih1 = oh * g->SH + t[1].ihoff;
            int in0 = t[0].on && ih0 >= 0 && ih0 < g->H, in1 = t[1].on && ih1 >= 0 && ih1 < g->H;
            int64_t a = ow, b = ow + run;
            if (in0 && in1) { /* the columns both taps read inside */
                a = t[0].lo > a ? t[0].lo : a, a = t[1].lo > a ? t[1].lo : a;
                b = t[0].hi < b ? t[0].hi : b, b = t[1].hi < b ? t[1].hi : b;
                if (b < a) b = a;
            } else {
                b = a;
            }
            int64_t q = 0;
            for (; ow + q < a; q++) {
                d[2 * q] = lt_ci8_at_(g, &t[0], oh, ow + q, z, m);
                d[2 * q + 1] = lt_ci8_at_(g, &t[1], oh, ow + q, z, m);
            }
            if (b > a) {
                const char *x0 = t[0].plane + ih0 * g->W + t[0].iwoff, *x1 = t[1].plane + ih1 * g->W + t[1].iwoff;
                int64_t n = b - a, o = a;
                int16_t *dd = d + 2 * (a - ow);
                if (g->SW == 1) {
                    const char *y0 = x0 + o, *y1 = x1 + o;
                    for (int64_t u = 0; u < n; u++) {
                        dd[2 * u] = (int16_t)(lt_gi8_lx_(y0, u, m) - z);
                        dd[2 * u + 1] = (int16_t)(lt_gi8_lx_(y1, u, m) - z);
                    }
                } else {
                    for (int64_t u = 0; u < n; u++) {
                        dd[2 * u] = (int16_t)(lt_gi8_lx_(x0, (o + u) * g->SW, m) - z);
                        dd[2 * u + 1] = (int16_t)(lt_gi8_lx_(x1, (o + u) * g->SW, m) - z);
                    }
                }
                q = b - ow;
            }
            for (; q < run; q++) {
                d[2 * q] = lt_ci8_at_(g, &t[0], oh, ow + q, z, m);
                d[2 * q + 1] = lt_ci8_at_(g, &t[1], oh, ow + q, z, m);
            }
            r += run, ow += run;
            if (ow == g->OW) ow = 0, oh++;
        }
        for (r = nr; r < np * W; r++) dk[r / W * W * kcp + r % W * 2] = dk[r / W * W * kcp + r % W * 2 + 1] = 0;
    }
}
LT_FN void lt_ci8_im2col_(const lt_gi8_src *s, int16_t *dst, int64_t r0, int64_t nr, int64_t k0, int64_t kc, int W) {
    if (W == LT_GI8_NR) lt_ci8_im2col_t_(s, dst, r0, nr, k0, kc, LT_GI8_NR); /* a constant width: no division */
    else lt_ci8_im2col_t_(s, dst, r0, nr, k0, kc, LT_GI8_MR);
}

LT_FN int lt_ci8_is_depthwise_(int64_t C, int64_t OC, int64_t G) { return G > 1 && G == C && OC % C == 0; }

LT_FN int64_t lt_conv2d_i8_packed_size(int64_t OC, int64_t C, int64_t KH, int64_t KW, int64_t G, int64_t P) {
    if (G < 1) G = 1;
    if (lt_ci8_is_depthwise_(C, OC, G)) return OC * KH * KW > 0 ? OC * KH * KW : 1;
    int64_t Kp = (C / G * KH * KW + 1) & ~(int64_t)1, W = LT_CONV_I8_PIXEL_ROWS(P) ? LT_GI8_NR : LT_GI8_MR;
    return G * lt_gi8_cdiv_(OC / G, W) * W * (Kp > 0 ? Kp : 2);
}
LT_FN void lt_conv2d_i8_pack(int8_t *dst, const void *w, int64_t OC, int64_t C, int64_t KH, int64_t KW, int64_t G,
                             int64_t P) {
    if (G < 1) G = 1;
    if (lt_ci8_is_depthwise_(C, OC, G)) {
        memcpy(dst, w, (size_t)(OC * KH * KW));
        return;
    }
    int64_t ocg = OC / G, kg = C / G * KH * KW, Kp = (kg + 1) & ~(int64_t)1;
    int W = LT_CONV_I8_PIXEL_ROWS(P) ? LT_GI8_NR : LT_GI8_MR;
    int64_t per = lt_gi8_cdiv_(ocg, W) * W * Kp;
    for (int64_t g = 0; g < G; g++) lt_gi8_pack_raw_(dst + g * per, (const int8_t *)w + g * ocg * kg, kg, 1, ocg, kg, W);
}

/* Depthwise: per (image, channel) a centred, zero-padded int16 copy of the plane, then for each of
 * the channel's outputs one row at a time: acc[ow] += w' * xp[oh*SH + kh*DH][ow*SW + kw*DW]. */
LT_GI8_AI void lt_ci8_dw_plane_(int32_t *y, const char *x, const char *w, int s8x, int s8w, int32_t zx,
                                const void *zw, int zw_mode, int64_t oc0, int64_t mult, int64_t H, int64_t W,
                                int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PH0, int64_t PW0, int64_t DH,
                                int64_t DW, int64_t OH, int64_t OW, int64_t HP, int64_t WP, int16_t *xp, uint32_t *acc) {
    memset(xp, 0, (size_t)(HP * WP) * sizeof(int16_t));
    for (int64_t h = 0; h < H; h++)
        for (int64_t v = 0; v < W; v++) xp[(h + PH0) * WP + v + PW0] = (int16_t)(lt_gi8_ld_(x, h * W + v, s8x) - zx);
    for (int64_t m = 0; m < mult; m++) {
        int64_t oc = oc0 + m;
        int32_t zwv = zw_mode == LT_ZP_NONE || !zw ? 0 : lt_gi8_ld_(zw, zw_mode == LT_ZP_VECTOR ? oc : 0, s8w);
        const char *wc = w + oc * KH * KW;
        int32_t *yc = y + oc * OH * OW;
        for (int64_t oh = 0; oh < OH; oh++) {
            for (int64_t ow = 0; ow < OW; ow++) acc[ow] = 0;
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    int32_t wv = lt_gi8_ld_(wc, kh * KW + kw, s8w) - zwv;
                    const int16_t *src = xp + (oh * SH + kh * DH) * WP + kw * DW;
                    if (SW == 1)
                        for (int64_t ow = 0; ow < OW; ow++) acc[ow] += (uint32_t)(wv * (int32_t)src[ow]);
                    else
                        for (int64_t ow = 0; ow < OW; ow++) acc[ow] += (uint32_t)(wv * (int32_t)src[ow * SW]);
                }
            for (int64_t ow = 0; ow < OW; ow++) yc[oh * OW + ow] = (int32_t)acc[ow];
        }
    }
}

/* Without workspace: the same sums with bounds checks (no padded copy). */
LT_FN void lt_ci8_dw_direct_(int32_t *y, const char *x, const char *w, int s8x, int s8w, int32_t zx, const void *zw,
                             int zw_mode, int64_t oc0, int64_t mult, int64_t H, int64_t W, int64_t KH, int64_t KW,
                             int64_t SH, int64_t SW, int64_t PH0, int64_t PW0, int64_t DH, int64_t DW, int64_t OH,
                             int64_t OW) {
    for (int64_t m = 0; m < mult; m++) {
        int64_t oc = oc0 + m;
        int32_t zwv = zw_mode == LT_ZP_NONE || !zw ? 0 : lt_gi8_ld_(zw, zw_mode == LT_ZP_VECTOR ? oc : 0, s8w);
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                uint32_t acc = 0;
                for (int64_t kh = 0; kh < KH; kh++)
                    for (int64_t kw = 0; kw < KW; kw++) {
                        int64_t ih = oh * SH + kh * DH - PH0, iw = ow * SW + kw * DW - PW0;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        int32_t xv = lt_gi8_ld_(x, ih * W + iw, s8x) - zx;
                        acc += (uint32_t)(xv * (lt_gi8_ld_(w, oc * KH * KW + kh * KW + kw, s8w) - zwv));
                    }
                y[oc * OH * OW + oh * OW + ow] = (int32_t)acc;
            }
    }
}

LT_FN void lt_ci8_depthwise_(int32_t *y, const void *x, const int8_t *w, const void *zx, const void *zw, int16_t *ws,
                             int64_t ws_size, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH,
                             int64_t KW, int64_t SH, int64_t SW, int64_t PH0, int64_t PW0, int64_t PH1, int64_t PW1,
                             int64_t DH, int64_t DW, int64_t OH, int64_t OW, int s8x, int s8w, int zx_mode,
                             int zw_mode) {
    int64_t mult = OC / C, HP = H + PH0 + PH1, WP = W + PW0 + PW1, total = N * C;
    int64_t per = LT_CONV_I8_DW_WS_PER_THREAD(HP, WP, OW);
    int32_t zxv = zx_mode == LT_ZP_NONE || !zx ? 0 : lt_gi8_ld_(zx, 0, s8x);
    int T = lt_nthreads();
    if (!ws) ws_size = 0;
    if ((double)total * (double)OH * (double)OW * (double)(KH * KW) * (double)mult < 2.0e5) T = 1;
    while (T > 1 && per * T > ws_size) T--;
    if (T > total) T = (int)(total > 0 ? total : 1);
    int padded = per <= ws_size;
    int64_t next = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(T) if (T > 1)
#endif
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        int16_t *xp = padded ? ws + tid * per : 0;
        uint32_t *acc = padded ? (uint32_t *)(void *)(xp + HP * WP + ((uintptr_t)(xp + HP * WP) & 2 ? 1 : 0)) : 0;
        for (int64_t u = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED); u < total;
             u = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED)) {
            int64_t n = u / C, c = u % C;
            const char *xc = (const char *)x + (n * C + c) * H * W;
            int32_t *yn = y + n * OC * OH * OW;
            if (padded)
                lt_ci8_dw_plane_(yn, xc, (const char *)w, s8x, s8w, zxv, zw, zw_mode, c * mult, mult, H, W, KH, KW, SH,
                                 SW, PH0, PW0, DH, DW, OH, OW, HP, WP, xp, acc);
            else
                lt_ci8_dw_direct_(yn, xc, (const char *)w, s8x, s8w, zxv, zw, zw_mode, c * mult, mult, H, W, KH, KW,
                                  SH, SW, PH0, PW0, DH, DW, OH, OW);
        }
    }
}

LT_FN void lt_conv2d_i8(int32_t *y, const void *x, const int8_t *wp, const void *zx, const void *zw, int16_t *ws,
                        int64_t N, int64_t C, int64_t H, int64_t W, int64_t OC, int64_t KH, int64_t KW, int64_t SH,
                        int64_t SW, int64_t PH0, int64_t PW0, int64_t PH1, int64_t PW1, int64_t DH, int64_t DW,
                        int64_t G, int64_t x_type, int64_t w_type, int64_t zx_mode, int64_t zw_mode, int64_t ws_size) {
    if (G < 1) G = 1;
    if (SH < 1) SH = 1;
    if (SW < 1) SW = 1;
    if (DH < 1) DH = 1;
    if (DW < 1) DW = 1;
    int64_t eh = DH * (KH - 1) + 1, ew = DW * (KW - 1) + 1;
    int64_t OH = H + PH0 + PH1 >= eh ? (H + PH0 + PH1 - eh) / SH + 1 : 0;
    int64_t OW = W + PW0 + PW1 >= ew ? (W + PW0 + PW1 - ew) / SW + 1 : 0;
    if (N <= 0 || OC <= 0 || OH <= 0 || OW <= 0) return;
    if (lt_ci8_is_depthwise_(C, OC, G)) {
        lt_ci8_depthwise_(y, x, wp, zx, zw, ws, ws_size, N, C, H, W, OC, KH, KW, SH, SW, PH0, PW0, PH1, PW1, DH, DW, OH,
                          OW, x_type == LT_I8_S8, w_type == LT_I8_S8, (int)zx_mode, (int)zw_mode);
        return;
    }
    lt_ci8_geom g = {C / G, H, W, KH, KW, SH, SW, PH0, PW0, DH, DW, OH, OW};
    int64_t P = OH * OW, ocg = OC / G, kg = C / G * KH * KW, Kp = (kg + 1) & ~(int64_t)1;
    int pix_rows = LT_CONV_I8_PIXEL_ROWS(P);
    lt_gi8_src im, wt;
    memset(&im, 0, sizeof im);
    memset(&wt, 0, sizeof wt);
    im.p = x, im.type = (int)x_type, im.zmode = zx_mode == LT_ZP_NONE ? LT_ZP_NONE : LT_ZP_SCALAR, im.z = zx;
    if (KH == 1 && KW == 1 && SH == 1 && SW == 1 && PH0 == 0 && PW0 == 0 && PH1 == 0 && PW1 == 0)
        im.rs = 1, im.ks = H * W; /* x is a [C, H*W] matrix (k-major: rows k are channels) */
    else
        im.pack = lt_ci8_im2col_, im.ctx = &g;
    wt.p = wp, wt.packed = 1, wt.type = (int)w_type, wt.zmode = (int)zw_mode, wt.z = zw;
    lt_gi8_prob Pb;
    lt_gi8_prob_init_(&Pb, pix_rows ? P : ocg, pix_rows ? ocg : P, kg);
    int64_t wper = lt_gi8_cdiv_(ocg, pix_rows ? LT_GI8_NR : LT_GI8_MR) * (pix_rows ? LT_GI8_NR : LT_GI8_MR) * Kp;
    int64_t zstep = zw_mode == LT_ZP_VECTOR ? ocg : 0;
    if (pix_rows) { /* pixels x channels, stored transposed */
        Pb.a = im, Pb.b = wt;
        Pb.ci = 1, Pb.cj = P;
        Pb.sa1 = C * H * W, Pb.sa2 = C / G * H * W, Pb.sb2 = wper, Pb.szb2 = zstep;
    } else {
        Pb.a = wt, Pb.b = im;
        Pb.ci = P, Pb.cj = 1;
        Pb.sb1 = C * H * W, Pb.sb2 = C / G * H * W, Pb.sa2 = wper, Pb.sza2 = zstep;
    }
    Pb.C = y;
    Pb.b1 = N, Pb.b2 = G;
    Pb.sc1 = OC * P, Pb.sc2 = ocg * P;
    lt_gi8_run_(&Pb, ws, ws_size, lt_nthreads());
}

#endif
