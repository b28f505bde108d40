/* cuda_gemm.h — CUDA prelude: matrix multiply C = epilogue(alpha * A @ B) for float16 and bfloat16
 * on tensor cores (wgmma on sm_90a, mma.sync m16n8k16 everywhere; float32 accumulation) and for
 * float32 on the SIMT cores (no tf32: results match an fp32 reference), batched, with a fused
 * epilogue; plus the peak-rate probes that lathe's ceilings use.
 *
 * Layouts (row-major, leading dimensions in elements): A [m, k] (lda), B [k, n] (ldb) — or, in the
 * "nt" kernels, B given as [n, k] (a Linear/Gemm transB weight) — C [m, n] (ldc); batch z =
 * blockIdx.y with element strides stride_a/b/c/r (0: the operand is shared by the whole batch).
 * Epilogue per element: v = alpha * acc; v += bias (per column, or per row); then the residual
 * beta * R[z, r, c] is added before or after the activation (relu, gelu erf, gelu tanh, sigmoid).
 *
 * Tensor-core kernels lt_cuda_gemm_<f16|bf16>_<nn|nt>_<BM>x<BN>x<BK> (mma.sync): a block computes a
 * BM x BN tile with warps of 64x64 (32x32 for the 64x64 tile); K advances BK at a time through a
 * STAGES-deep ring of shared-memory buffers filled with cp.async (16-byte copies, zero-filled past
 * the edges) while the tensor cores work on an earlier stage; the ldmatrix fragments of the next
 * 16-deep step are read while the MMAs of this one run. Shared tiles have 16-byte chunks
 * XOR-swizzled by row, so both the cp.async writes and the ldmatrix reads (x4; .trans for a [k, n]
 * B) touch 32 distinct banks: no padding, no conflicts. Tiles are visited in groups of 8 tile-rows
 * for L2 reuse. Launch: block (BM / WM) * (BN / WN) * 32 threads, dynamic shared memory
 * STAGES * (BM + BN) * BK * 2 bytes.
 * lt_cuda_gemm_<f16|bf16>_<nn|nt>_wg<BM>x<BN>x<BK> (wgmma, sm_90a only): warpgroups of 128 threads
 * each compute 64 x BN of the tile with wgmma m64nBNk16 reading both operands from shared memory,
 * which holds them in the 128- or 64-byte swizzle layouts (the same XOR swizzle) filled by cp.async
 * as above; see lt_gemm_wg. Launch: block BM / 64 * 128 threads, dynamic shared memory
 * STAGES * (BM + BN) * BK * 2 + 1024 bytes.
 * Both: grid (tiles_m * tiles_n, batch); shared memory above 48 KiB needs cuFuncSetAttribute.
 * Requirements (the host checks them, else it uses the SIMT kernel): k % 8 == 0, n % 8 == 0, lda,
 * ldb, ldc, ldr multiples of 8, A, B, C 16-byte aligned.
 * SIMT kernels lt_cuda_gemm_<f32|f16|bf16>_<nn|nt>_simt: any shape and alignment; 128x128x8 tiles,
 * 256 threads of 8x8 outputs, shared memory double-buffered through registers. Grid as above.
 * Kernels are instantiated by macros (LT_GEMM_TC, LT_GEMM_WG, LT_GEMM_SIMT) placed after the
 * prelude, one per module, so a module compiles only what it uses; LT_CUDA_ENTRY_GEMM instantiates
 * every one and LT_CUDA_ENTRY_PEAK the peak-rate probes. Compiled models call the tile bodies
 * through the __device__ entries lt_cuda_mm_<dt>_<nn|nt>_<tile> (block and thread indices as
 * arguments; see "tile entry points" below): mma.sync 128x128, 64x128, 64x64 and SIMT simt, simt64,
 * simt32, skinny and tall (few rows or few columns: products bound by reading the big operand) in
 * static shared memory; wgmma wg128x256, wg128x128, wg64x128 (sm_90a) and mma.sync
 * 128x256 in dynamic shared memory. cuda_conv.h reuses the A-tile loader, the MMA fragments and
 * steps, the epilogue and the SIMT tile. The parameter struct, the activation codes and the
 * configurations the host launches are abi.h's (one definition for the host and the device).
 */
#ifndef LT_PRELUDE_CUDA_GEMM_H
#define LT_PRELUDE_CUDA_GEMM_H

#include "cuda_norm.h"

/* LT_ACT_* (the CPU's codes) and struct lt_cuda_gemm_params, which the host launchers fill: abi.h */

LT_FN float lt_gemm_act(int act, float a, float b, float v) {
    switch (act) {
    case LT_ACT_RELU: return v < 0.0f ? 0.0f : v; /* NaN stays NaN */
    case LT_ACT_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case LT_ACT_GELU_TANH: return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    case LT_ACT_SIGMOID: return lt_sigmoid_f32(v);
    case LT_ACT_TANH: return tanhf(v);
    case LT_ACT_LEAKY_RELU: return v < 0.0f ? a * v : v;
    case LT_ACT_CLIP: return v < a ? a : (v > b ? b : v);
    case LT_ACT_HARD_SIGMOID: {
        const float h = a * v + b;
        return h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h);
    }
    case LT_ACT_SILU: return v * lt_sigmoid_f32(v);
    case LT_ACT_HARD_SWISH: {
        const float h = v / 6.0f + 0.5f;
        return v * (h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h));
    }
    default: return v;
    }
}

/* The activation as a call: one copy of its code per kernel instead of one per output register; its
 * arguments are scalars, so a call costs a few instructions. */
static __device__ __noinline__ float lt_gemm_act_call(int act, float a, float b, float v) { return lt_gemm_act(act, a, b, v); }

/* The epilogue of a thread's N outputs v[e] at (row, col) = rc(e), in place: v = alpha * acc, + bias
 * (per column or row), + beta * R before or after the activation. Each step is one pass over the N
 * values under one uniform branch (the residual at batch entry z): in the tile entries the
 * parameters are constants and the branches fold away; a kernel with run-time parameters gets a few branches, not several per output. (A call
 * per output taking p by reference from local memory, as before, cost ~600 cycles an output: more
 * than the MMAs of BERT-base's 1024 x 768 GEMM tiles.) Loads are guarded by r < p.m, c < p.n. */
template <typename D, int N, typename RC>
LT_FN void lt_epilogue(const lt_cuda_gemm_params &p, long long z, float (&v)[N], RC rc) {
    typedef typename D::S S;
    /* p's fields are read where used: kernel parameters (the standalone kernels) stay in the constant
     * bank instead of taking registers beside the accumulators */
    auto add_res = [&]() {
        const S *res = (const S *)p.res + z * p.stride_r;
#pragma unroll
        for (int e = 0; e < N; e++) {
            int r, c;
            rc(e, r, c);
            if (r < p.m && c < p.n) v[e] += p.beta * lt_ld1<D>(res, (long long)r * p.ldr + c);
        }
    };
#pragma unroll
    for (int e = 0; e < N; e++) v[e] *= p.alpha;
    if (p.bias_kind == 1) {
#pragma unroll
        for (int e = 0; e < N; e++) {
            int r, c;
            rc(e, r, c);
            if (r < p.m && c < p.n) v[e] += lt_ld1<D>((const S *)p.bias, c);
        }
    } else if (p.bias_kind == 2) {
#pragma unroll
        for (int e = 0; e < N; e++) {
            int r, c;
            rc(e, r, c);
            if (r < p.m && c < p.n) v[e] += lt_ld1<D>((const S *)p.bias, r);
        }
    }
    if (p.res && !p.res_after_act) add_res();
    if (p.act == LT_ACT_RELU) {
#pragma unroll
        for (int e = 0; e < N; e++) v[e] = v[e] < 0.0f ? 0.0f : v[e]; /* NaN stays NaN */
    } else if (p.act != LT_ACT_NONE) {
#pragma unroll
        for (int e = 0; e < N; e++) v[e] = lt_gemm_act_call(p.act, p.act_a, p.act_b, v[e]);
    }
    if (p.res && p.res_after_act) add_res();
}

/* ---- tensor-core building blocks ---- */
LT_FN uint32_t lt_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
LT_FN void lt_cp_async16(uint32_t dst, const void *src, bool full) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(full ? 16 : 0));
}
LT_FN void lt_cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> LT_FN void lt_cp_async_wait(void) { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
LT_FN void lt_ldsm_x4(uint32_t *r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
LT_FN void lt_ldsm_x4_t(uint32_t *r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
LT_FN void lt_mma16816(lt_dt_f16, float *d, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
LT_FN void lt_mma16816(lt_dt_bf16, float *d, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Physical 16-byte chunk of logical chunk c in row r of a tile with CH chunks a row: an XOR with
 * row bits, so 8 consecutive rows at one chunk (ldmatrix) and 8 consecutive chunks of a row
 * (cp.async) each land on 8 different 4-bank groups. */
template <int CH> LT_FN int lt_swz(int r, int c) {
    return CH >= 8 ? (c ^ (r & 7)) : CH == 4 ? (c ^ ((r >> 1) & 3)) : CH == 2 ? (c ^ ((r >> 2) & 1)) : c;
}

/* cp.async of one A tile (BM rows x BK columns of a row-major [M, K] matrix, leading dimension lda)
 * into the swizzled stage at sa; rows past M and columns past K are zero-filled. NT threads, thread
 * tid copies A_PER 16-byte chunks. Shared by the GEMMs (and the wgmma one's [n, k] B, stored alike)
 * and the implicit-GEMM convolution. */
template <typename S, int BK, int NT, int A_PER>
LT_FN void lt_tc_load_a(uint32_t sa, const S *A, long long lda, int m0, int M, int k0, int K, int tid) {
    enum { CHA = BK / 8 };
#pragma unroll
    for (int i = 0; i < A_PER; i++) {
        const int row = tid / CHA + i * (NT / CHA), c = tid % CHA;
        const bool ok = m0 + row < M && k0 + c * 8 < K;
        const S *src = ok ? A + (long long)(m0 + row) * lda + k0 + c * 8 : A;
        lt_cp_async16(sa + (uint32_t)(row * CHA + lt_swz<CHA>(row, c)) * 16u, src, ok);
    }
}

/* The A and B fragments of the 16-deep k step kk of a warp's WM x WN tile: A [BM][BK] and B
 * ([BN][BK] when BT, else [BK][BN]) in shared memory at sa / sb, swizzled as lt_swz says. */
template <int BM, int BN, int BK, int WM, int WN, bool BT>
LT_FN void lt_tc_frags(uint32_t (&af)[WM / 16][4], uint32_t (&bfr)[WN / 8][2], uint32_t sa, uint32_t sb, int kk,
                       int lane, int wm, int wn) {
    enum { MT = WM / 16, NTL = WN / 8, CHA = BK / 8, CHB = BT ? BK / 8 : BN / 8 };
#pragma unroll
    for (int i = 0; i < MT; i++) {
        const int row = wm * WM + i * 16 + (lane & 15), c = kk * 2 + (lane >> 4);
        lt_ldsm_x4(af[i], sa + (uint32_t)(row * CHA + lt_swz<CHA>(row, c)) * 16u);
    }
#pragma unroll
    for (int j = 0; j < NTL / 2; j++) {
        uint32_t r[4];
        if (BT) { /* [n][k]: rows are n; matrices (n lo, k lo), (n lo, k hi), (n hi, k lo), (n hi, k hi) */
            const int row = wn * WN + j * 16 + (lane >> 4) * 8 + (lane & 7), c = kk * 2 + ((lane >> 3) & 1);
            lt_ldsm_x4(r, sb + (uint32_t)(row * CHB + lt_swz<CHB>(row, c)) * 16u);
        } else { /* [k][n]: rows are k, transposed on load; same matrix order */
            const int row = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = (wn * WN + j * 16) / 8 + (lane >> 4);
            lt_ldsm_x4_t(r, sb + (uint32_t)(row * CHB + lt_swz<CHB>(row, c)) * 16u);
        }
        bfr[2 * j][0] = r[0], bfr[2 * j][1] = r[1], bfr[2 * j + 1][0] = r[2], bfr[2 * j + 1][1] = r[3];
    }
}

/* The MMAs of one 16-deep k step on fragments from lt_tc_frags. */
template <typename D, int WM, int WN>
LT_FN void lt_tc_mmas(float (&acc)[WM / 16][WN / 8][4], const uint32_t (&af)[WM / 16][4],
                      const uint32_t (&bfr)[WN / 8][2]) {
#pragma unroll
    for (int i = 0; i < WM / 16; i++)
#pragma unroll
        for (int j = 0; j < WN / 8; j++) lt_mma16816(D(), acc[i][j], af[i], bfr[j]);
}

/* The epilogue of a warp's tile: thread (g, t) of a warp holds rows g, g + 8 and columns 2t, 2t + 1
 * of each 16x8 tile. C already points at batch entry z (the residual is read at z * p.stride_r). Pairs are stored as one
 * 32-bit word when the row start and ldc are even (always for the GEMMs: n % 8 == 0), else singly. */
template <typename D, int WM, int WN>
LT_FN void lt_tc_store(const lt_cuda_gemm_params &p, float (&acc)[WM / 16][WN / 8][4], typename D::S *C, int r0,
                       int c0, int lane, bool pairs, long long z) {
    enum { MT = WM / 16, NTL = WN / 8 };
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int i = 0; i < MT; i++) {
        /* one 16-row block at a time (the epilogue's loads in flight for 32 values, not all):
         * value e = j * 4 + 2 * h + q at row i * 16 + g + 8 * h, column j * 8 + 2 * t4 + q */
        lt_epilogue<D>(p, z, reinterpret_cast<float(&)[NTL * 4]>(acc[i]), [&](int e, int &r, int &c) {
            r = r0 + i * 16 + g + ((e >> 1) & 1) * 8, c = c0 + (e >> 2) * 8 + t4 * 2 + (e & 1);
        });
#pragma unroll
        for (int j = 0; j < NTL; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = r0 + i * 16 + g + h * 8, c = c0 + j * 8 + t4 * 2;
                if (r >= p.m || c >= p.n) continue;
                const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                if (pairs && c + 1 < p.n) {
                    *(uint32_t *)(C + (long long)r * p.ldc + c) = lt_pack2(D(), v0, v1);
                } else {
                    lt_st1<D>(C, (long long)r * p.ldc + c, v0);
                    if (c + 1 < p.n) lt_st1<D>(C, (long long)r * p.ldc + c + 1, v1);
                }
            }
    }
}

/* Tile (m0, n0) of the tile order: groups of 8 tile-rows, down the rows first within a group (L2
 * reuse of B). Unsigned divisions (fewer instructions than signed ones where a size is known only at
 * run time); at most 8 tile-rows are one group, divided by the tile-row count alone (a constant
 * where M is). */
LT_FN void lt_tile_origin(int bid, int M, int N, int BM, int BN, int *m0, int *n0) {
    const unsigned tiles_m = (unsigned)(M + BM - 1) / (unsigned)BM, tiles_n = (unsigned)(N + BN - 1) / (unsigned)BN;
    const unsigned b = (unsigned)bid;
    if (tiles_m == 1) { /* one tile-row (skinny products, small M): no division where M is a run-time size */
        *m0 = 0, *n0 = (int)b * BN;
        return;
    }
    if (tiles_m <= 8) {
        const unsigned tn = b / tiles_m;
        *m0 = (int)(b - tn * tiles_m) * BM, *n0 = (int)tn * BN;
        return;
    }
    const unsigned per_group = 8 * tiles_n, grp = b / per_group;
    const unsigned first_m = grp * 8, gm = min(tiles_m - first_m, 8u), in_grp = b - grp * per_group;
    const unsigned tn = in_grp / gm;
    *m0 = (int)(first_m + in_grp - tn * gm) * BM, *n0 = (int)tn * BN;
}

/* Block `bid` (a tile, see lt_tile_origin) of batch entry z on mma.sync, computed by thread `tid` of
 * (BM / WM) * (BN / WN) * 32; smem holds STAGES * (BM + BN) * BK * 2 bytes. */
template <typename D, int BM, int BN, int BK, int WM, int WN, int STAGES, bool BT>
LT_FN void lt_gemm_tc(const lt_cuda_gemm_params &p, char *smem, int bid, long long z, int tid) {
    typedef typename D::S S;
    enum {
        WARPS_N = BN / WN, NT = 32 * (BM / WM) * (BN / WN), MT = WM / 16, NTL = WN / 8,
        CHA = BK / 8,               /* 16-byte chunks in a row of the A tile [BM][BK] */
        CHB = BT ? BK / 8 : BN / 8, /* ... of the B tile: [BN][BK] (nt) or [BK][BN] (nn) */
        RB = BT ? BN : BK,          /* rows of the B tile */
        A_BYTES = BM * BK * 2, STAGE_BYTES = (BM + BN) * BK * 2,
        A_PER = BM * CHA / NT, B_PER = RB * CHB / NT
    };
    static_assert(BM * CHA % NT == 0 && RB * CHB % NT == 0 && NT % CHA == 0 && NT % CHB == 0, "tile loads");
    static_assert(NTL % 2 == 0 && BK % 16 == 0 && WM % 16 == 0, "warp tile");
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int M = p.m, N = p.n, K = p.k;
    int m0, n0;
    lt_tile_origin(bid, M, N, BM, BN, &m0, &n0);
    const S *A = (const S *)p.a + z * p.stride_a;
    const S *B = (const S *)p.b + z * p.stride_b;
    const uint32_t sbase = lt_smem_u32(smem);
    const int KT = (K + BK - 1) / BK;

    /* B: this thread's chunks are rows tid / CHB + i * (NT / CHB), chunk tid % CHB of the tile; the
     * copies of k tile kt start kt * BK columns (nt) or rows (nn) after b_src */
    const int rb = tid / CHB, cb = tid % CHB;
    const S *b_src = BT ? B + (long long)(n0 + rb) * p.ldb + cb * 8 : B + (long long)rb * p.ldb + n0 + cb * 8;
    auto load_tile = [&](int stage, int kt) {
        const uint32_t sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
        const int k0 = kt * BK;
        lt_tc_load_a<S, BK, NT, A_PER>(sa, A, p.lda, m0, M, k0, K, tid);
#pragma unroll
        for (int i = 0; i < B_PER; i++) {
            const int row = rb + i * (NT / CHB);
            const bool ok = BT ? n0 + row < N && k0 + cb * 8 < K : k0 + row < K && n0 + cb * 8 < N;
            const S *src = b_src + (long long)i * (NT / CHB) * p.ldb + (BT ? (long long)k0 : (long long)k0 * p.ldb);
            lt_cp_async16(sb + (uint32_t)(row * CHB + lt_swz<CHB>(row, cb)) * 16u, ok ? src : B, ok);
        }
    };

    float acc[MT][NTL][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NTL; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load_tile(s, s);
        lt_cp_async_commit();
    }
    /* Software pipeline over the 16-deep k steps: the fragments of step kk + 1 are read from shared
     * memory while the tensor cores work on step kk, across tile boundaries too (two fragment
     * buffers). One barrier per BK tile, before the first fragments of the next tile are read: it
     * says that tile's copies have landed, and that every warp is done with the stage the copies
     * issued next (at kk == 0) overwrite. */
    enum { KK = BK / 16 };
    uint32_t af[2][MT][4], bfr[2][NTL][2];
    lt_cp_async_wait<STAGES - 2>(); /* tile 0 has landed */
    __syncthreads();
    int rs = 0, ws = STAGES - 1; /* the stage being read; the stage the next copies go to */
    lt_tc_frags<BM, BN, BK, WM, WN, BT>(af[0], bfr[0], sbase, sbase + A_BYTES, 0, lane, wm, wn);
    for (int kt = 0; kt < KT; kt++) {
#pragma unroll
        for (int kk = 0; kk < KK; kk++) {
            if (kk == KK - 1) { /* the next fragments come from tile kt + 1 */
                lt_cp_async_wait<STAGES - 2>();
                __syncthreads();
                rs = rs + 1 == STAGES ? 0 : rs + 1;
            }
            const uint32_t sa = sbase + rs * STAGE_BYTES;
            lt_tc_frags<BM, BN, BK, WM, WN, BT>(af[(kk + 1) & 1], bfr[(kk + 1) & 1], sa, sa + A_BYTES, (kk + 1) % KK,
                                                lane, wm, wn);
            if (kk == 0) {
                if (kt + STAGES - 1 < KT) load_tile(ws, kt + STAGES - 1);
                lt_cp_async_commit();
                ws = ws + 1 == STAGES ? 0 : ws + 1;
            }
            lt_tc_mmas<D, WM, WN>(acc, af[kk & 1], bfr[kk & 1]);
        }
    }
    lt_cp_async_wait<0>();

    lt_tc_store<D, WM, WN>(p, acc, (S *)p.c + z * p.stride_c, m0 + wm * WM, n0 + wn * WN, lane, true, z);
}

/* ---- warpgroup MMA (wgmma, sm_90a only): a 64 x N x 16 product per instruction, issued by a warpgroup
 * (4 warps) with both operands read by the tensor cores straight from shared memory ---- */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LT_HAVE_WGMMA 1
#endif
LT_FN void lt_fence_async_smem(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
LT_FN void lt_wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
LT_FN void lt_wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> LT_FN void lt_wg_wait(void) {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Keeps the compiler from moving accesses of the accumulators across the asynchronous MMAs. */
template <int NB> LT_FN void lt_wg_fence_acc(float (&d)[1][NB][4]) {
#pragma unroll
    for (int j = 0; j < NB; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+f"(d[0][j][e])::"memory");
}
/* Shared-memory matrix descriptor of a tile stored in swizzle atoms of 8 rows of RB bytes (RB 128 or
 * 64: the 128- or 64-byte swizzle modes), 16-byte chunk c of row r at lt_swz<RB / 16>(r, c), atoms
 * aligned to 8 * RB bytes. lbo, sbo: the byte strides the PTX ISA names leading and stride dimension
 * byte offsets. */
template <int RB> LT_FN uint64_t lt_wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 |
           (RB == 128 ? 1ull : 2ull) << 62;
}
/* d[0][j][e] (j < N / 8) are the f32 accumulators of wgmma m64nNk16: element (16 * warp + g + 8 * (e >> 1),
 * 8 * j + 2 * t + (e & 1)) of the warpgroup's 64 x N tile for lane 4 * g + t, the mma.sync C layout */
#define LT_WG_D8(i)                                                                                \
    "+f"(d[0][(i) / 4][0]), "+f"(d[0][(i) / 4][1]), "+f"(d[0][(i) / 4][2]), "+f"(d[0][(i) / 4][3]), \
        "+f"(d[0][(i) / 4 + 1][0]), "+f"(d[0][(i) / 4 + 1][1]), "+f"(d[0][(i) / 4 + 1][2]), "+f"(d[0][(i) / 4 + 1][3])
#define LT_WG_D64(i)                                                                               \
    LT_WG_D8(i), LT_WG_D8(i + 8), LT_WG_D8(i + 16), LT_WG_D8(i + 24), LT_WG_D8(i + 32), LT_WG_D8(i + 40), \
        LT_WG_D8(i + 48), LT_WG_D8(i + 56)
#define LT_WG_R64 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define LT_WG_R128 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
/* D += A * B, A K-major, B K-major (TB 0) or N-major (TB 1). Operands: the N / 2 accumulators (REGS),
 * then the descriptors da, db, scale-d (1: accumulate) and TB, whose numbers I0 .. I3 are spelled out */
#define LT_WGMMA_ASM(N, TY, REGS, I0, I1, I2, I3, ...)                                             \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" I2 ", 0;\nwgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY \
                 "." TY " {" REGS "}, %" I0 ", %" I1 ", p, 1, 1, 0, %" I3 ";\n}\n"                    \
                 : __VA_ARGS__                                                                     \
                 : "l"(da), "l"(db), "r"(1), "n"(TB))
template <int TB> LT_FN void lt_wgmma(lt_dt_f16, float (&d)[1][16][4], uint64_t da, uint64_t db) {
    LT_WGMMA_ASM(128, "f16", LT_WG_R64, "64", "65", "66", "67", LT_WG_D64(0));
}
template <int TB> LT_FN void lt_wgmma(lt_dt_bf16, float (&d)[1][16][4], uint64_t da, uint64_t db) {
    LT_WGMMA_ASM(128, "bf16", LT_WG_R64, "64", "65", "66", "67", LT_WG_D64(0));
}
template <int TB> LT_FN void lt_wgmma(lt_dt_f16, float (&d)[1][32][4], uint64_t da, uint64_t db) {
    LT_WGMMA_ASM(256, "f16", LT_WG_R128, "128", "129", "130", "131", LT_WG_D64(0), LT_WG_D64(64));
}
template <int TB> LT_FN void lt_wgmma(lt_dt_bf16, float (&d)[1][32][4], uint64_t da, uint64_t db) {
    LT_WGMMA_ASM(256, "bf16", LT_WG_R128, "128", "129", "130", "131", LT_WG_D64(0), LT_WG_D64(64));
}

/* Block `bid` (a tile, see lt_tile_origin) of batch entry z on wgmma: BM / 64 warpgroups of 128
 * threads, each computing 64 x BN (BN 128 or 256) of the BM x BN tile; thread tid. K advances BK (64
 * or 32) at a time through a STAGES-deep ring (STAGES >= 3) filled with cp.async by all threads. Rows
 * of RB = 2 * BK bytes in swizzle atoms of 8 rows (lt_swz<BK / 8>: the 128- or 64-byte swizzle mode
 * the descriptors name): a stage holds A as [BM][BK] and B as [BN][BK] (nt), both K-major, or B as
 * [BN / AC][BK][AC] (nn: N-major atoms of AC = RB / 2 columns). Each k tile is one commit group of
 * BK / 16 wgmma per warpgroup, left running while the next tile starts: copies go STAGES - 2 tiles
 * ahead, into the stage of tile kt - 2, which every warpgroup is done with once past the barrier of
 * tile kt. smem: STAGES * (BM + BN) * RB bytes + 1024 (alignment). */
template <typename D, int BM, int BN, int BK, int STAGES, bool BT>
LT_FN void lt_gemm_wg(const lt_cuda_gemm_params &p, char *smem, int bid, long long z, int tid) {
#if LT_HAVE_WGMMA
    typedef typename D::S S;
    enum {
        NT = BM / 64 * 128, RB = BK * 2, CH = BK / 8, AC = RB / 2, CHN = BN / 8, A_BYTES = BM * RB,
        STAGE_BYTES = (BM + BN) * RB, A_PER = BM * CH / NT, B_PER = BN * CH / NT
    };
    static_assert(BM % 64 == 0 && (BN == 128 || BN == 256) && (BK == 32 || BK == 64) && STAGES >= 3 &&
                      A_PER * NT == BM * CH && B_PER * NT == BN * CH,
                  "wgmma tile");
    const int warp = tid >> 5, wg = warp >> 2;
    const int M = p.m, N = p.n, K = p.k;
    int m0, n0;
    lt_tile_origin(bid, M, N, BM, BN, &m0, &n0);
    const S *A = (const S *)p.a + z * p.stride_a;
    const S *B = (const S *)p.b + z * p.stride_b;
    const uint32_t sbase = (lt_smem_u32(smem) + 1023u) & ~1023u;
    const int KT = (K + BK - 1) / BK;

    auto load_tile = [&](int stage, int kt) {
        const uint32_t sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
        const int k0 = kt * BK;
        lt_tc_load_a<S, BK, NT, A_PER>(sa, A, p.lda, m0, M, k0, K, tid);
        if (BT) {
            lt_tc_load_a<S, BK, NT, B_PER>(sb, B, p.ldb, n0, N, k0, K, tid); /* rows n, like A */
        } else {
#pragma unroll
            for (int i = 0; i < B_PER; i++) { /* row k, chunk c (8 columns): consecutive threads along a row */
                const int q = tid + i * NT, row = q / CHN, c = q % CHN;
                const bool ok = k0 + row < K && n0 + c * 8 < N;
                const S *src = ok ? B + (long long)(k0 + row) * p.ldb + n0 + c * 8 : B;
                const int atom = c / (AC / 8), ca = c % (AC / 8);
                lt_cp_async16(sb + (uint32_t)(atom * (BK * RB) + row * RB + lt_swz<CH>(row, ca) * 16), src, ok);
            }
        }
    };

    float acc[1][BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; j++) acc[0][j][0] = acc[0][j][1] = acc[0][j][2] = acc[0][j][3] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 2; s++) {
        if (s < KT) load_tile(s, s);
        lt_cp_async_commit();
    }
    for (int kt = 0; kt < KT; kt++) {
        lt_cp_async_wait<STAGES - 3>(); /* this thread's copies of tile kt have landed */
        lt_fence_async_smem();           /* ... visibly to the tensor cores (the async proxy) */
        __syncthreads();                 /* everyone's have; every warpgroup is done with tile kt - 2 */
        if (kt + STAGES - 2 < KT) load_tile((kt + STAGES - 2) % STAGES, kt + STAGES - 2);
        lt_cp_async_commit();
        const uint32_t sa = sbase + (kt % STAGES) * STAGE_BYTES, sb = sa + A_BYTES;
        lt_wg_fence();
        lt_wg_fence_acc(acc);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            /* A: this warpgroup's 64 rows; k step kk is 32 bytes into the rows */
            const uint64_t da = lt_wg_desc<RB>(sa + wg * 64 * RB + kk * 32, 16, 8 * RB);
            /* B: K-major like A, or N-major: 16 rows (k) further, atoms of AC columns BK * RB bytes apart */
            const uint64_t db = BT ? lt_wg_desc<RB>(sb + kk * 32, 16, 8 * RB)
                                   : lt_wg_desc<RB>(sb + kk * 16 * RB, BK * RB, 8 * RB);
            lt_wgmma<BT ? 0 : 1>(D(), acc, da, db);
        }
        lt_wg_commit();
        lt_wg_fence_acc(acc);
        lt_wg_wait<1>(); /* tile kt - 1's MMAs are done */
    }
    lt_wg_wait<0>();
    lt_wg_fence_acc(acc);
    lt_cp_async_wait<0>();
    lt_tc_store<D, 16, BN>(p, acc, (S *)p.c + z * p.stride_c, m0 + wg * 64 + (warp & 3) * 16, n0, tid & 31, true, z);
#else
    __trap(); /* wgmma needs sm_90a: the host picks these kernels only there */
#endif
}

/* ---- SIMT: any shape, any alignment (float32, and narrow types the tensor-core path refuses) ---- */
/* The 128x128x8 tile at (m0, n0) of C (batch entry z: the residual is read at z * p.stride_r), 256 threads of 8x8 outputs. fetch(k0, ra, rb)
 * loads this thread's share of the k0 step into registers: ra[e] = A[m0 + (tid >> 1)][k0 + (tid & 1) * 4
 * + e]; rb[e] = B[k0 + (tid >> 5)][n0 + (tid & 31) * 4 + e] (nn), or B^T[n0 + (tid >> 1)][k0 +
 * (tid & 1) * 4 + e] (BT); zero outside. Shared with the implicit-GEMM convolution. */
template <typename D, bool BT, typename Fetch>
LT_FN void lt_simt_tile(const lt_cuda_gemm_params &p, typename D::S *C, int m0, int n0, int tid, long long z, Fetch fetch) {
    enum { BM = 128, BN = 128, BK = 8, NT = 256 };
    __shared__ __align__(16) float As[2][BK][BM + 4];
    __shared__ __align__(16) float Bs[2][BK][BN + 4];
    const int tx = tid & 15, ty = tid >> 4;
    const int M = p.m, N = p.n, K = p.k;
    const int ar = tid >> 1, aq = (tid & 1) * 4, bk = tid >> 5, bq = (tid & 31) * 4;
    float ra[4], rb[4];
    auto stash = [&](int buf) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            As[buf][aq + e][ar] = ra[e];
            if (BT) Bs[buf][aq + e][ar] = rb[e];
            else Bs[buf][bk][bq + e] = rb[e];
        }
    };
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
    const int KT = (K + BK - 1) / BK;
    fetch(0, ra, rb);
    stash(0);
    __syncthreads();
    for (int kt = 0; kt < KT; kt++) {
        const int buf = kt & 1;
        if (kt + 1 < KT) fetch((kt + 1) * BK, ra, rb);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[8], b[8];
            const float4 a0 = *(const float4 *)&As[buf][k][ty * 4], a1 = *(const float4 *)&As[buf][k][64 + ty * 4];
            const float4 b0 = *(const float4 *)&Bs[buf][k][tx * 4], b1 = *(const float4 *)&Bs[buf][k][64 + tx * 4];
            a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
            b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < KT) stash(buf ^ 1);
        __syncthreads();
    }
    lt_epilogue<D>(p, z, reinterpret_cast<float(&)[64]>(acc), [&](int e, int &r, int &c) {
        const int i = e >> 3, j = e & 7;
        r = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4), c = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
    });
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int r = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int c = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (c < N) lt_st1<D>(C, (long long)r * p.ldc + c, acc[i][j]);
        }
    }
}

/* SIMT with sliced K, for grids too small for 128x128 tiles: the BM x BN tile at (m0, n0), 256
 * threads in SL = 256 / ((BM / TM) * (BN / TN)) slices of TM x TN outputs a thread. K advances KC = 8 * SL
 * at a time (shared memory double-buffered through registers); slice s multiplies k rows
 * [8s, 8s + 8) of each step, and the slices' partial tiles are summed through shared memory before
 * slice 0 applies the epilogue. fetch(k0, ra, rb) loads this thread's share of the k0 step:
 * ra[e] = A[m0 + tid / KC + e * (256 / KC)][k0 + tid % KC] (e < BM * KC / 256);
 * rb[e] = B[k0 + tid / BN + e * (256 / BN)][n0 + tid % BN] (nn), or
 * B^T[n0 + tid / KC + e * (256 / KC)][k0 + tid % KC] (BT) (e < BN * KC / 256); zero outside. */
template <typename D, bool BT, int BM, int BN, int TM, int TN, typename Fetch>
LT_FN void lt_simt_sk_tile(const lt_cuda_gemm_params &p, typename D::S *C, int m0, int n0, int tid, long long z,
                           Fetch fetch) {
    enum {
        NT = 256, TX = BN / TN, TY = BM / TM, GROUP = TX * TY, SL = NT / GROUP, KC = 8 * SL,
        APT = BM * KC / NT, BPT = BN * KC / NT, RQ = TM / 4, CQ = TN / 4
    };
    static_assert(NT % GROUP == 0 && SL >= 1 && TM % 4 == 0 && TN % 4 == 0, "slices");
    static_assert(BM * KC % NT == 0 && BN * KC % NT == 0 && NT % KC == 0 && NT % BN == 0, "tile loads");
    static_assert(BM * BN <= KC * (BM + 4) * 2, "reduction buffer");
    __shared__ __align__(16) float As[2][KC][BM + 4];
    __shared__ __align__(16) float Bs[2][KC][BN + 4];
    const int sl = tid / GROUP, t = tid - sl * GROUP, tx = t % TX, ty = t / TX;
    const int M = p.m, N = p.n, K = p.k;
    float ra[APT], rb[BPT];
    auto stash = [&](int buf) {
#pragma unroll
        for (int e = 0; e < APT; e++) As[buf][tid % KC][tid / KC + e * (NT / KC)] = ra[e];
#pragma unroll
        for (int e = 0; e < BPT; e++) {
            if (BT) Bs[buf][tid % KC][tid / KC + e * (NT / KC)] = rb[e];
            else Bs[buf][tid / BN + e * (NT / BN)][tid % BN] = rb[e];
        }
    };
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    const int KT = (K + KC - 1) / KC;
    fetch(0, ra, rb);
    stash(0);
    __syncthreads();
    for (int kt = 0; kt < KT; kt++) {
        const int buf = kt & 1;
        if (kt + 1 < KT) fetch((kt + 1) * KC, ra, rb);
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            const int k = sl * 8 + kk;
            float a[TM], b[TN];
#pragma unroll
            for (int q = 0; q < RQ; q++) {
                const float4 v = *(const float4 *)&As[buf][k][q * (BM / RQ) + ty * 4];
                a[4 * q] = v.x, a[4 * q + 1] = v.y, a[4 * q + 2] = v.z, a[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int q = 0; q < CQ; q++) {
                const float4 v = *(const float4 *)&Bs[buf][k][q * (BN / CQ) + tx * 4];
                b[4 * q] = v.x, b[4 * q + 1] = v.y, b[4 * q + 2] = v.z, b[4 * q + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (kt + 1 < KT) stash(buf ^ 1);
        __syncthreads();
    }
    /* sum the slices into slice 0, one slice at a time, through As (free after the last sync) */
    float *red = &As[0][0][0];
    for (int s = SL - 1; s >= 1; s--) {
        if (sl == s)
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) red[(i * TN + j) * GROUP + t] = acc[i][j];
        __syncthreads();
        if (sl == 0)
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] += red[(i * TN + j) * GROUP + t];
        __syncthreads();
    }
    if (sl != 0) return;
    lt_epilogue<D>(p, z, reinterpret_cast<float(&)[TM * TN]>(acc), [&](int e, int &r, int &c) {
        const int i = e / TN, j = e % TN;
        r = m0 + (i >> 2) * (BM / RQ) + ty * 4 + (i & 3), c = n0 + (j >> 2) * (BN / CQ) + tx * 4 + (j & 3);
    });
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int r = m0 + (i >> 2) * (BM / RQ) + ty * 4 + (i & 3);
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int c = n0 + (j >> 2) * (BN / CQ) + tx * 4 + (j & 3);
            if (c < N) lt_st1<D>(C, (long long)r * p.ldc + c, acc[i][j]);
        }
    }
}

/* GEMM block `bid` of batch entry z on the SIMT cores with sliced K (lt_simt_sk_tile), thread tid of 256. */
template <typename D, bool BT, int BM, int BN, int TM, int TN>
LT_FN void lt_gemm_simt_sk(const lt_cuda_gemm_params &p, int bid, long long z, int tid) {
    typedef typename D::S S;
    enum { NT = 256, KC = 8 * (NT / ((BM / TM) * (BN / TN))), APT = BM * KC / NT, BPT = BN * KC / NT };
    int m0, n0;
    lt_tile_origin(bid, p.m, p.n, BM, BN, &m0, &n0);
    const S *A = (const S *)p.a + z * p.stride_a;
    const S *B = (const S *)p.b + z * p.stride_b;
    const int M = p.m, N = p.n, K = p.k;
    const int kq = tid % KC, rq = tid / KC, bc = tid % BN, bkr = tid / BN;
    auto fetch = [&](int k0, float *ra, float *rb) {
        const int k = k0 + kq;
#pragma unroll
        for (int e = 0; e < APT; e++) {
            const int r = m0 + rq + e * (NT / KC);
            ra[e] = (r < M && k < K) ? lt_ld1<D>(A, (long long)r * p.lda + k) : 0.0f;
        }
#pragma unroll
        for (int e = 0; e < BPT; e++) {
            if (BT) {
                const int c = n0 + rq + e * (NT / KC);
                rb[e] = (c < N && k < K) ? lt_ld1<D>(B, (long long)c * p.ldb + k) : 0.0f;
            } else {
                const int kb = k0 + bkr + e * (NT / BN), c = n0 + bc;
                rb[e] = (kb < K && c < N) ? lt_ld1<D>(B, (long long)kb * p.ldb + c) : 0.0f;
            }
        }
    };
    lt_simt_sk_tile<D, BT, BM, BN, TM, TN>(p, (S *)p.c + z * p.stride_c, m0, n0, tid, z, fetch);
}

/* GEMM block `bid` of batch entry z on the SIMT cores, thread tid of 256. */
template <typename D, bool BT> LT_FN void lt_gemm_simt(const lt_cuda_gemm_params &p, int bid, long long z, int tid) {
    typedef typename D::S S;
    int m0, n0;
    lt_tile_origin(bid, p.m, p.n, 128, 128, &m0, &n0);
    const S *A = (const S *)p.a + z * p.stride_a;
    const S *B = (const S *)p.b + z * p.stride_b;
    const int M = p.m, N = p.n, K = p.k;
    const int ar = tid >> 1, aq = (tid & 1) * 4, bk = tid >> 5, bq = (tid & 31) * 4;
    auto fetch = [&](int k0, float *ra, float *rb) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int k = k0 + aq + e;
            ra[e] = (m0 + ar < M && k < K) ? lt_ld1<D>(A, (long long)(m0 + ar) * p.lda + k) : 0.0f;
            if (BT) rb[e] = (n0 + ar < N && k < K) ? lt_ld1<D>(B, (long long)(n0 + ar) * p.ldb + k) : 0.0f;
            else rb[e] = (k0 + bk < K && n0 + bq + e < N) ? lt_ld1<D>(B, (long long)(k0 + bk) * p.ldb + n0 + bq + e) : 0.0f;
        }
    };
    lt_simt_tile<D, BT>(p, (S *)p.c + z * p.stride_c, m0, n0, tid, z, fetch);
}

/* Few rows or few columns (at most abi.h's LT_SKINNY_MR a tile): a matrix-vector product more than a
 * GEMM, bound by reading the big operand once. The tile is LT_SKINNY_MR "small" indices (rows m, or
 * columns n when TALL) x LT_SKINNY_BN "large" ones (n, or m when TALL); the big operand (B, or A when
 * TALL) is read once, the small one (A, or B) a few times from cache. The 256 threads split K into
 * LT_SKINNY_KS slices: where the big operand runs along k (nt, or TALL) a warp per large index with
 * lanes along k, else (nn) 8 large indices x 4 slices a warp. Each thread has 8 k steps of both
 * operands in flight before it multiplies (the loop is unrolled by 8), and the slices are summed
 * through shared memory before the epilogue. The SIMT tiles would give such a product a handful of
 * blocks, each walking K in steps of 8 to 32 (pplcnet_ci's classifier, 2 x 1280 x 100: 4 blocks, 35 us
 * on an H200; its squeeze-and-excite products, m = 32..1280 with n = 1: 5-10 us each). */
/* One step of a thread's share: U k indices (k0, k0 + KS, ...) of the big operand and of R rows of the
 * small one, loaded before they are multiplied; GUARD: indices past K read as 0. Rows past `rows` (the
 * tile's count, at most R) read row rows - 1 again: their sums are never stored. */
template <typename D, int R, bool GUARD>
LT_FN void lt_skinny_step(const typename D::S *mx, long long mstep, const typename D::S *V, long long vrow, long long vk,
                          int K, int k0, int rows, float (&acc)[LT_SKINNY_MR]) {
    enum { KS = LT_SKINNY_KS, U = 8 };
    typedef typename D::S S;
    float b[U], a[R][U];
    /* one base pointer per operand row and step, the u steps offsets from it (immediates where the
     * k stride is 1): indices recomputed per load in 64 bits took three instructions a load */
    const S *bp = mx + (long long)k0 * mstep, *vp = V + (long long)k0 * vk;
#pragma unroll
    for (int u = 0; u < U; u++)
        b[u] = !GUARD || k0 + u * KS < K ? lt_ld1<D>(bp, (long long)(u * KS) * mstep) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const S *row = vp + vrow * (r < rows ? r : rows - 1);
#pragma unroll
        for (int u = 0; u < U; u++)
            a[r][u] = !GUARD || k0 + u * KS < K ? lt_ld1<D>(row, (long long)(u * KS) * vk) : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int u = 0; u < U; u++) acc[r] = fmaf(a[r][u], b[u], acc[r]);
}

/* Thread's share of a skinny tile of R small indices (a constant: no per-row guard), `rows` of them real. */
template <typename D, int R>
LT_FN void lt_skinny_rows(const typename D::S *mx, long long mstep, const typename D::S *V, long long vrow, long long vk,
                          int K, int ks, int rows, float (&acc)[LT_SKINNY_MR]) {
    enum { KS = LT_SKINNY_KS, U = 8 };
    int k0 = ks;
    /* whole steps with no guard (with K known only at run time a guard per load costs as much as
     * the load's issue), then at most one guarded step */
    for (; k0 + (U - 1) * KS < K; k0 += KS * U) lt_skinny_step<D, R, false>(mx, mstep, V, vrow, vk, K, k0, rows, acc);
    if (k0 < K) lt_skinny_step<D, R, true>(mx, mstep, V, vrow, vk, K, k0, rows, acc);
}

template <typename D, bool BT, bool TALL>
LT_FN void lt_gemm_skinny(const lt_cuda_gemm_params &p, int bid, long long z, int tid) {
    typedef typename D::S S;
    enum { MR = LT_SKINNY_MR, BN = LT_SKINNY_BN, KS = LT_SKINNY_KS, ALONG_K = TALL || BT };
    static_assert(BN * KS == 256 && MR == 8, "256 threads, 8 small indices");
    __shared__ float part[KS][MR * BN];
    const int small = TALL ? p.n : p.m, large = TALL ? p.m : p.n, K = p.k;
    int s0, l0;
    lt_tile_origin(bid, small, large, MR, BN, &s0, &l0);
    const S *A = (const S *)p.a + z * p.stride_a;
    const S *B = (const S *)p.b + z * p.stride_b;
    const int rows = min(small - s0, (int)MR);
    const int col = ALONG_K ? tid / KS : tid % BN, ks = ALONG_K ? tid % KS : tid / BN, l = l0 + col;
    /* the big operand at (l, k): mx[k * mstep]; the small one at (s0 + r, k): V[vrow * r + vk * k] */
    const S *mx = TALL ? A + (long long)l * p.lda : BT ? B + (long long)l * p.ldb : B + l;
    const long long mstep = ALONG_K ? 1 : p.ldb;
    const S *V = TALL ? (BT ? B + (long long)s0 * p.ldb : B + s0) : A + (long long)s0 * p.lda;
    const long long vrow = TALL ? (BT ? p.ldb : 1) : p.lda, vk = TALL && !BT ? p.ldb : 1;
    float acc[MR];
#pragma unroll
    for (int r = 0; r < MR; r++) acc[r] = 0.0f;
    /* the tile's count of small indices, one branch for the whole tile: with it known only at run
     * time (a batch of rows), guarding each row's loads doubled the instructions. Four sizes, not
     * eight: a kernel that takes the count at run time carries every case, and eight unrolled cases
     * (36 KB of code) stalled on instruction fetch; 3 rows take the 4-row case, 5 to 7 the 8-row one
     * (a repeated row is read from cache) */
    if (l < large) switch (rows) {
        case 1: lt_skinny_rows<D, 1>(mx, mstep, V, vrow, vk, K, ks, 1, acc); break;
        case 2: lt_skinny_rows<D, 2>(mx, mstep, V, vrow, vk, K, ks, 2, acc); break;
        case 3:
        case 4: lt_skinny_rows<D, 4>(mx, mstep, V, vrow, vk, K, ks, rows, acc); break;
        default: lt_skinny_rows<D, 8>(mx, mstep, V, vrow, vk, K, ks, rows, acc); break;
        }
#pragma unroll
    for (int r = 0; r < MR; r++) part[ks][r * BN + col] = acc[r];
    __syncthreads();
    if (tid >= MR * BN) return;
    float v[1] = {0.0f};
    for (int q = 0; q < KS; q++) v[0] += part[q][tid];
    const int si = s0 + tid / BN, li = l0 + tid % BN, r = TALL ? li : si, c = TALL ? si : li;
    lt_epilogue<D>(p, z, v, [&](int, int &rr, int &cc) { rr = r, cc = c; });
    if (r < p.m && c < p.n) lt_st1<D>((S *)p.c + z * p.stride_c, (long long)r * p.ldc + c, v[0]);
}

/* Dynamic shared memory of a kernel (the GEMM kernels' stages; the tile entries below that need more
 * than 48 KiB): one array for the whole translation unit, sized at launch. */
extern __shared__ __align__(128) char lt_gemm_dyn_smem[];

/* ---- tile entry points for compiled models: a lowered MatMul/Gemm kernel is
 *   for GPU_BLOCK blk in [0, nblocks): for GPU_THREAD t in [0, threads): lt_cuda_mm_<cfg>(..., blk, nblocks, t)
 * with static shared memory (at most 48 KiB), or, for the big tiles, dynamic shared memory whose size
 * the lowering records on the kernel (the launch passes it; LT_MM_DYN_SMEM_* below). Arguments: C, A,
 * B, bias (per column: bias_kind 1, per row: 2), residual R (read with C's strides; res_mode 1 before the activation, 2 after), two batch
 * dims b1 x b2 with element strides per operand (0: shared), m, n, k, leading dimensions, the
 * activation (LT_ACT_*) with its parameters, alpha; then the block index, the block count (any:
 * blocks loop over the tiles of every batch entry) and the thread index. Threads: 128 for the
 * static tensor-core tiles (4 warps; 64x128 for m <= 64, e.g. 1x1 convs of 64 channels), the big
 * tiles' own counts (below), 256 for SIMT (128x128; the sliced-K 64x64 and 32x32 tiles for small
 * grids). The tensor-core entries need what LT_GEMM_TC needs
 * (k % 8, n % 8, leading dimensions and batch strides multiples of 8, 16-byte aligned operands);
 * the lowering checks that statically. Function templates with a defaulted parameter, so a module
 * instantiates only the entries it calls. ---- */
#define LT_MM_ARGS                                                                                 \
    void *c, const void *a, const void *b, const void *bias, const void *res, long long b1, long long b2, int m,  \
        int n, int k, int lda, long long sa1, long long sa2, int ldb, long long sb1, long long sb2, int ldc,      \
        long long sc1, long long sc2, int bias_kind, int res_mode, int act, float act_a, float act_b, float alpha, \
        long long block, long long nblocks, long long thread

template <typename D, int BM, int BN, typename Tile>
LT_FN void lt_mm_run(LT_MM_ARGS, Tile tile) {
    typedef typename D::S S;
    lt_cuda_gemm_params p;
    p.c = c, p.a = a, p.b = b, p.bias = bias, p.res = res_mode ? res : 0;
    p.stride_a = p.stride_b = p.stride_c = p.stride_r = 0;
    p.m = m, p.n = n, p.k = k, p.lda = lda, p.ldb = ldb, p.ldc = ldc, p.ldr = ldc;
    p.bias_kind = bias_kind, p.act = act, p.res_after_act = res_mode == 2;
    p.alpha = alpha, p.beta = 1.0f, p.act_a = act_a, p.act_b = act_b;
    const long long tiles = (long long)((m + BM - 1) / BM) * ((n + BN - 1) / BN), total = tiles * b1 * b2;
    for (long long t = block; t < total; t += nblocks) {
        /* one batch entry (b1 * b2 == 1): no division at all; else 32-bit ones when small */
        const long long z = total == tiles ? 0 : lt_div_i64(t, tiles), z1 = b2 == 1 ? z : lt_div_i64(z, b2), z2 = z - z1 * b2;
        lt_cuda_gemm_params q = p;
        q.c = (S *)c + z1 * sc1 + z2 * sc2;
        q.a = (const S *)a + z1 * sa1 + z2 * sa2;
        q.b = (const S *)b + z1 * sb1 + z2 * sb2;
        if (q.res) q.res = (const S *)res + z1 * sc1 + z2 * sc2;
        tile(q, (int)(t - z * tiles), (int)thread);
        __syncthreads(); /* shared memory is reused by the next tile */
    }
}
#define LT_MM_PASS                                                                                 \
    c, a, b, bias, res, b1, b2, m, n, k, lda, sa1, sa2, ldb, sb1, sb2, ldc, sc1, sc2, bias_kind, res_mode, act, act_a, \
        act_b, alpha, block, nblocks, thread
/* 3 stages of BK 32: 128x128 tiles take 48 KiB, 64x128 tiles 36 KiB, 64x64 tiles 24 KiB */
#define LT_MM_TC_BODY(dt, BT, BM, BN, WM, WN)                                                      \
    __shared__ __align__(128) char smem[3 * (BM + BN) * 32 * 2];                                   \
    lt_mm_run<lt_dt_##dt, BM, BN>(LT_MM_PASS, [&](const lt_cuda_gemm_params &q, int bid, int tid) { \
        lt_gemm_tc<lt_dt_##dt, BM, BN, 32, WM, WN, 3, BT>(q, smem, bid, 0, tid);                   \
    });
/* Big tiles in dynamic shared memory (lt_gemm_dyn_smem), bytes LT_MM_DYN_SMEM(kind, BM, BN, ST):
 *   wgmma (sm_90a only; elsewhere the body traps): BM x BN x 64 in ST stages, BM / 64 warpgroups of
 *   128 threads, ST * (BM + BN) * 128 + 1024 bytes (the stages are aligned to 1024 inside);
 *   mma.sync: BM x BN x 32 in ST stages, warps of 64x64, ST * (BM + BN) * 64 bytes.
 * The sizes are abi.h's LT_MM_DYN_SMEM_WG / _TC, which the lowering (src/lower/lower_gpu_gemm.c)
 * records; its table repeats the thread counts. */
#define LT_MM_WG_BODY(dt, BT, BM, BN, ST)                                                          \
    lt_mm_run<lt_dt_##dt, BM, BN>(LT_MM_PASS, [&](const lt_cuda_gemm_params &q, int bid, int tid) { \
        lt_gemm_wg<lt_dt_##dt, BM, BN, 64, ST, BT>(q, lt_gemm_dyn_smem, bid, 0, tid);              \
    });
#define LT_MM_TC_DYN_BODY(dt, BT, BM, BN, ST)                                                      \
    lt_mm_run<lt_dt_##dt, BM, BN>(LT_MM_PASS, [&](const lt_cuda_gemm_params &q, int bid, int tid) { \
        lt_gemm_tc<lt_dt_##dt, BM, BN, 32, 64, 64, ST, BT>(q, lt_gemm_dyn_smem, bid, 0, tid);      \
    });
/* sliced-K SIMT tiles: 64x64 (8x8 a thread) and 32x32 (4x4 a thread), 4 slices of K each */
#define LT_MM_SIMT_SK_BODY(dt, BT, T, TT)                                                          \
    lt_mm_run<lt_dt_##dt, T, T>(LT_MM_PASS, [&](const lt_cuda_gemm_params &q, int bid, int tid) {  \
        lt_gemm_simt_sk<lt_dt_##dt, BT, T, T, TT, TT>(q, bid, 0, tid);                             \
    });
/* the skinny tiles: MR x BN (rows x columns) or, TALL, BN x MR; the same count of tiles either way */
#define LT_MM_SKINNY_BODY(dt, BT, TALL)                                                            \
    lt_mm_run<lt_dt_##dt, LT_SKINNY_MR, LT_SKINNY_BN>(LT_MM_PASS, [&](const lt_cuda_gemm_params &q, int bid, int tid) { \
        lt_gemm_skinny<lt_dt_##dt, BT, TALL>(q, bid, 0, tid);                                      \
    });
#define LT_MM_SIMT_BODY(dt, BT)                                                                    \
    lt_mm_run<lt_dt_##dt, 128, 128>(LT_MM_PASS, [&](const lt_cuda_gemm_params &q, int bid, int tid) { \
        lt_gemm_simt<lt_dt_##dt, BT>(q, bid, 0, tid);                                              \
    });
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_128x128(LT_MM_ARGS) { LT_MM_TC_BODY(f16, false, 128, 128, 64, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_128x128(LT_MM_ARGS) { LT_MM_TC_BODY(f16, true, 128, 128, 64, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_128x128(LT_MM_ARGS) { LT_MM_TC_BODY(bf16, false, 128, 128, 64, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_128x128(LT_MM_ARGS) { LT_MM_TC_BODY(bf16, true, 128, 128, 64, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_64x128(LT_MM_ARGS) { LT_MM_TC_BODY(f16, false, 64, 128, 32, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_64x128(LT_MM_ARGS) { LT_MM_TC_BODY(f16, true, 64, 128, 32, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_64x128(LT_MM_ARGS) { LT_MM_TC_BODY(bf16, false, 64, 128, 32, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_64x128(LT_MM_ARGS) { LT_MM_TC_BODY(bf16, true, 64, 128, 32, 64) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_64x64(LT_MM_ARGS) { LT_MM_TC_BODY(f16, false, 64, 64, 32, 32) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_64x64(LT_MM_ARGS) { LT_MM_TC_BODY(f16, true, 64, 64, 32, 32) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_64x64(LT_MM_ARGS) { LT_MM_TC_BODY(bf16, false, 64, 64, 32, 32) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_64x64(LT_MM_ARGS) { LT_MM_TC_BODY(bf16, true, 64, 64, 32, 32) }
/* wgmma: 128x256 (256 threads, 4 stages, 193 KiB), 128x128 (256 threads, 3 stages, 97 KiB), 64x128
 * (128 threads, 4 stages, 97 KiB); mma.sync 128x256 (256 threads, 4 stages, 96 KiB) */
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_wg128x256(LT_MM_ARGS) { LT_MM_WG_BODY(f16, false, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_wg128x128(LT_MM_ARGS) { LT_MM_WG_BODY(f16, false, 128, 128, 3) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_wg64x128(LT_MM_ARGS) { LT_MM_WG_BODY(f16, false, 64, 128, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_128x256(LT_MM_ARGS) { LT_MM_TC_DYN_BODY(f16, false, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_wg128x256(LT_MM_ARGS) { LT_MM_WG_BODY(f16, true, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_wg128x128(LT_MM_ARGS) { LT_MM_WG_BODY(f16, true, 128, 128, 3) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_wg64x128(LT_MM_ARGS) { LT_MM_WG_BODY(f16, true, 64, 128, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_128x256(LT_MM_ARGS) { LT_MM_TC_DYN_BODY(f16, true, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_wg128x256(LT_MM_ARGS) { LT_MM_WG_BODY(bf16, false, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_wg128x128(LT_MM_ARGS) { LT_MM_WG_BODY(bf16, false, 128, 128, 3) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_wg64x128(LT_MM_ARGS) { LT_MM_WG_BODY(bf16, false, 64, 128, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_128x256(LT_MM_ARGS) { LT_MM_TC_DYN_BODY(bf16, false, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_wg128x256(LT_MM_ARGS) { LT_MM_WG_BODY(bf16, true, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_wg128x128(LT_MM_ARGS) { LT_MM_WG_BODY(bf16, true, 128, 128, 3) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_wg64x128(LT_MM_ARGS) { LT_MM_WG_BODY(bf16, true, 64, 128, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_128x256(LT_MM_ARGS) { LT_MM_TC_DYN_BODY(bf16, true, 128, 256, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nn_simt(LT_MM_ARGS) { LT_MM_SIMT_BODY(f32, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nt_simt(LT_MM_ARGS) { LT_MM_SIMT_BODY(f32, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_simt(LT_MM_ARGS) { LT_MM_SIMT_BODY(f16, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_simt(LT_MM_ARGS) { LT_MM_SIMT_BODY(f16, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_simt(LT_MM_ARGS) { LT_MM_SIMT_BODY(bf16, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_simt(LT_MM_ARGS) { LT_MM_SIMT_BODY(bf16, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nn_simt64(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f32, false, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nn_simt32(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f32, false, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nt_simt64(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f32, true, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nt_simt32(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f32, true, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_simt64(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f16, false, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_simt32(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f16, false, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_simt64(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f16, true, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_simt32(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(f16, true, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_simt64(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(bf16, false, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_simt32(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(bf16, false, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_simt64(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(bf16, true, 64, 8) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_simt32(LT_MM_ARGS) { LT_MM_SIMT_SK_BODY(bf16, true, 32, 4) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nn_skinny(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f32, false, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nn_tall(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f32, false, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nt_skinny(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f32, true, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f32_nt_tall(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f32, true, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_skinny(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f16, false, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nn_tall(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f16, false, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_skinny(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f16, true, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_f16_nt_tall(LT_MM_ARGS) { LT_MM_SKINNY_BODY(f16, true, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_skinny(LT_MM_ARGS) { LT_MM_SKINNY_BODY(bf16, false, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nn_tall(LT_MM_ARGS) { LT_MM_SKINNY_BODY(bf16, false, true) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_skinny(LT_MM_ARGS) { LT_MM_SKINNY_BODY(bf16, true, false) }
template <int I_ = 0> LT_FN void lt_cuda_mm_bf16_nt_tall(LT_MM_ARGS) { LT_MM_SKINNY_BODY(bf16, true, true) }

/* ---- entry points: a macro instantiates one kernel (the host compiles each one it needs as its own
 * small module); LT_CUDA_ENTRY_GEMM instantiates them all (the NVRTC test) ---- */
/* lt_cuda_gemm_<dt>_<nn|nt>_<BM>x<BN>x<BK> */
#define LT_GEMM_TC(dt, lay, BT, BM, BN, BK, WM, WN, ST, MINB)                                      \
    extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)                 \
        lt_cuda_gemm_##dt##_##lay##_##BM##x##BN##x##BK(lt_cuda_gemm_params p) {                    \
        lt_gemm_tc<lt_dt_##dt, BM, BN, BK, WM, WN, ST, BT>(p, lt_gemm_dyn_smem, (int)blockIdx.x, blockIdx.y, (int)threadIdx.x);                   \
    }
/* lt_cuda_gemm_<dt>_<nn|nt>_simt */
#define LT_GEMM_SIMT(dt, lay, BT)                                                                  \
    extern "C" __global__ void __launch_bounds__(256) lt_cuda_gemm_##dt##_##lay##_simt(lt_cuda_gemm_params p) { \
        lt_gemm_simt<lt_dt_##dt, BT>(p, (int)blockIdx.x, blockIdx.y, (int)threadIdx.x);            \
    }
/* lt_cuda_gemm_<dt>_<nn|nt>_wg<BM>x<BN>x<BK> (wgmma: sm_90a; elsewhere the body traps) */
#define LT_GEMM_WG(dt, lay, BT, BM, BN, BK, ST, MINB)                                              \
    extern "C" __global__ void __launch_bounds__(BM / 64 * 128, MINB)                              \
        lt_cuda_gemm_##dt##_##lay##_wg##BM##x##BN##x##BK(lt_cuda_gemm_params p) {                  \
        lt_gemm_wg<lt_dt_##dt, BM, BN, BK, ST, BT>(p, lt_gemm_dyn_smem, (int)blockIdx.x, blockIdx.y,            \
                                                   (int)threadIdx.x);                              \
    }
/* The configurations: abi.h's LT_GEMM_TC_CONFIGS / LT_GEMM_WG_CONFIGS (the host's table too). */
#ifdef LT_CUDA_ENTRY_GEMM
LT_GEMM_TC_CONFIGS(LT_GEMM_TC, f16, nn, false)
LT_GEMM_TC_CONFIGS(LT_GEMM_TC, f16, nt, true)
LT_GEMM_TC_CONFIGS(LT_GEMM_TC, bf16, nn, false)
LT_GEMM_TC_CONFIGS(LT_GEMM_TC, bf16, nt, true)
LT_GEMM_WG_CONFIGS(LT_GEMM_WG, f16, nn, false)
LT_GEMM_WG_CONFIGS(LT_GEMM_WG, f16, nt, true)
LT_GEMM_WG_CONFIGS(LT_GEMM_WG, bf16, nn, false)
LT_GEMM_WG_CONFIGS(LT_GEMM_WG, bf16, nt, true)
LT_GEMM_SIMT(f32, nn, false)
LT_GEMM_SIMT(f32, nt, true)
LT_GEMM_SIMT(f16, nn, false)
LT_GEMM_SIMT(f16, nt, true)
LT_GEMM_SIMT(bf16, nn, false)
LT_GEMM_SIMT(bf16, nt, true)
#endif

#ifdef LT_CUDA_ENTRY_PEAK
/* Peak-rate probes (compiled alone by cuda_ceil.c). FP32 FMA rate: 8 independent chains per thread, 16 x 8 FMAs per iteration.
 * FLOPs = blocks * 256 * iters * 256. */
extern "C" __global__ void __launch_bounds__(256) lt_cuda_peak_fma(float *out, int iters) {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; j++) a[j] = (float)threadIdx.x * 1e-6f + (float)j;
    for (int i = 0; i < iters; i++)
#pragma unroll
        for (int u = 0; u < 16; u++)
#pragma unroll
            for (int j = 0; j < 8; j++) a[j] = fmaf(a[j], 0.9999f, 0.0001f);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) s += a[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
/* Tensor-core rate: each warp issues 8 independent m16n8k16 f16 MMAs per iteration.
 * FLOPs = blocks * 8 warps * iters * 8 * 4096. */
extern "C" __global__ void __launch_bounds__(256) lt_cuda_peak_mma_f16(float *out, int iters) {
    const uint32_t v = 0x3c003c00u ^ (threadIdx.x & 7u); /* halves near 1 */
    const uint32_t a[4] = {v, v, v, v}, b[2] = {v, v};
    float acc[8][4];
#pragma unroll
    for (int j = 0; j < 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int i = 0; i < iters; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) lt_mma16816(lt_dt_f16(), acc[j], a, b);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
#endif

#endif
