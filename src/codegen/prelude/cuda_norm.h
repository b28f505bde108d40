/* cuda_norm.h — CUDA prelude: row kernels over a [rows, cols] tensor, one row per block (or one
 * row per warp for short rows): softmax and log-softmax (one-pass online max/sum), LayerNorm,
 * RMSNorm, and the row sum (ReduceSum/ReduceMean over the last axis), in float32, float16 and
 * bfloat16 (computed in float). Also the element-type helpers the GEMM prelude (cuda_gemm.h) shares.
 *
 * Kernels (extern "C"; instantiated by LT_NORM_KERNELS(dt) placed after the prelude, or all of them
 * with LT_CUDA_ENTRY_NORM defined, so a generated module that pastes this header for its device
 * functions compiles none of them):
 *   lt_cuda_norm_<dt>_t<TPR>(lt_cuda_norm_params p)   dt = f32 | f16 | bf16, TPR = 32, 128, 256,
 *       512, 1024 threads per row. The row is held in registers: each thread loads up to 4 16-byte
 *       vectors (float4 / 8 halves) at v = lane + j * TPR, so a row of up to TPR * 4 vectors is read
 *       once and written once. Needs cols % (16 / sizeof(T)) == 0 and 16-byte aligned x, y, gamma,
 *       beta. Block: TPR threads (TPR = 32: 4 rows of one warp each, 128 threads). Grid: rows
 *       (TPR = 32: ceil(rows / 4)).
 *   lt_cuda_norm_<dt>_any(p)   any cols, any alignment: scalar loads, 256 threads per row, the row
 *       read twice (softmax, RMSNorm) or three times (LayerNorm). Grid: rows.
 * p.op selects the operation (LT_NORM_*). Reductions: warp shuffles, then the per-warp partials
 * through shared memory (every thread combines them in the same order, so all threads of a row agree
 * bit for bit). Softmax carries (max, sum of exp(x - max)) pairs and merges them, so the row is
 * reduced once; exp is exp2f of a pre-scaled argument. NaN anywhere in a row makes that row's
 * softmax NaN, as the reference's does.
 * The entry points' parameter struct and op codes are abi.h's, shared with the host launchers
 * (src/backend/cuda/cuda_kernels.c).
 */
#ifndef LT_PRELUDE_CUDA_NORM_H
#define LT_PRELUDE_CUDA_NORM_H

#include "cuda_core.h"
#include "abi.h"

/* ---- element types: tags with their storage type, conversions, 16-byte vectors ---- */
struct lt_dt_f32 { typedef float S; };
struct lt_dt_f16 { typedef uint16_t S; };
struct lt_dt_bf16 { typedef uint16_t S; };

LT_FN float lt_cvt_in(lt_dt_f32, float v) { return v; }
LT_FN float lt_cvt_in(lt_dt_f16, uint16_t v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
}
LT_FN float lt_cvt_in(lt_dt_bf16, uint16_t v) { return __uint_as_float((uint32_t)v << 16); }
LT_FN float lt_cvt_out(lt_dt_f32, float f) { return f; }
LT_FN uint16_t lt_cvt_out(lt_dt_f16, float f) {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
LT_FN uint16_t lt_cvt_out(lt_dt_bf16, float f) {
#if __CUDA_ARCH__ >= 800
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return lt_f2bf(f);
#endif
}
template <typename D> LT_FN float lt_ld1(const typename D::S *p, long long i) { return lt_cvt_in(D(), p[i]); }
template <typename D> LT_FN void lt_st1(typename D::S *p, long long i, float v) { p[i] = lt_cvt_out(D(), v); }

/* Two floats <-> one 32-bit word of two narrow values (element 0 in the low half). */
LT_FN void lt_unpack2(lt_dt_f16, uint32_t w, float *f) {
    f[0] = lt_cvt_in(lt_dt_f16(), (uint16_t)(w & 0xffffu));
    f[1] = lt_cvt_in(lt_dt_f16(), (uint16_t)(w >> 16));
}
LT_FN void lt_unpack2(lt_dt_bf16, uint32_t w, float *f) {
    f[0] = __uint_as_float(w << 16);
    f[1] = __uint_as_float(w & 0xffff0000u);
}
LT_FN uint32_t lt_pack2(lt_dt_f16, float a, float b) {
    uint32_t w;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));
    return w;
}
LT_FN uint32_t lt_pack2(lt_dt_bf16, float a, float b) {
#if __CUDA_ARCH__ >= 800
    uint32_t w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));
    return w;
#else
    return (uint32_t)lt_f2bf(a) | ((uint32_t)lt_f2bf(b) << 16);
#endif
}

/* A 16-byte vector: LT_VN<D> elements as floats. */
template <typename D> struct lt_vn { enum { N = 8 }; };
template <> struct lt_vn<lt_dt_f32> { enum { N = 4 }; };

LT_FN void lt_unpack16(lt_dt_f32, uint4 u, float *f) {
    f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y), f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
}
template <typename D> LT_FN void lt_unpack16(D d, uint4 u, float *f) {
    lt_unpack2(d, u.x, f), lt_unpack2(d, u.y, f + 2), lt_unpack2(d, u.z, f + 4), lt_unpack2(d, u.w, f + 6);
}
LT_FN uint4 lt_pack16(lt_dt_f32, const float *f) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
}
template <typename D> LT_FN uint4 lt_pack16(D d, const float *f) {
    return make_uint4(lt_pack2(d, f[0], f[1]), lt_pack2(d, f[2], f[3]), lt_pack2(d, f[4], f[5]), lt_pack2(d, f[6], f[7]));
}

/* ---- the kernels' parameters: abi.h's LT_NORM_* and struct lt_cuda_norm_params (the host fills it) ---- */

#define LT_LOG2E 1.4426950408889634f

/* ---- reductions within a row of TPR threads ---- */
template <int TPR> LT_FN float lt_row_sum(float v, float *sh) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (TPR > 32) {
        const int w = (int)(threadIdx.x % TPR) >> 5;
        __syncthreads(); /* the previous reduction's readers are done with sh */
        if ((threadIdx.x & 31) == 0) sh[w] = v;
        __syncthreads();
        v = sh[0];
#pragma unroll
        for (int i = 1; i < TPR / 32; i++) v += sh[i];
    }
    return v;
}

/* Merge (m2, s2) into (m, s): s sums exp(x - m) over the elements seen. */
LT_FN void lt_ms_merge(float &m, float &s, float m2, float s2) {
    float mn = fmaxf(m, m2);
    float a = m == mn ? 1.0f : exp2f((m - mn) * LT_LOG2E);
    float b = m2 == mn ? 1.0f : exp2f((m2 - mn) * LT_LOG2E);
    s = s * a + s2 * b;
    m = mn;
}

template <int TPR> LT_FN void lt_row_ms(float &m, float &s, float *sh /* 2 * TPR / 32 */) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        lt_ms_merge(m, s, m2, s2);
    }
    if (TPR > 32) {
        const int w = (int)(threadIdx.x % TPR) >> 5;
        __syncthreads();
        if ((threadIdx.x & 31) == 0) sh[2 * w] = m, sh[2 * w + 1] = s;
        __syncthreads();
        m = sh[0], s = sh[1];
#pragma unroll
        for (int i = 1; i < TPR / 32; i++) lt_ms_merge(m, s, sh[2 * i], sh[2 * i + 1]);
    }
}

LT_FN float lt_norm_neg_inf(void) { return __uint_as_float(0xff800000u); }

/* ---- register-cached rows: TPR threads per row, RPB rows per block, up to NV vectors each ---- */
template <typename D, int TPR, int RPB, int NV>
LT_FN void lt_norm_rows_cached(const lt_cuda_norm_params &p) {
    typedef typename D::S S;
    enum { VN = lt_vn<D>::N, NW = TPR / 32 > 1 ? TPR / 32 : 1 };
    __shared__ float sh[RPB][2 * NW];
    const int lane = (int)(threadIdx.x % TPR), rib = (int)(threadIdx.x / TPR);
    const long long row = (long long)blockIdx.x * RPB + rib;
    if (TPR == 32 && row >= p.rows) return; /* whole warps: no block-wide barrier follows */
    const int cols = p.cols, nvec = cols / VN;
    const uint4 *xr = (const uint4 *)((const S *)p.x + row * cols);
    float v[NV][VN];
    bool ok[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = lane + j * TPR;
        ok[j] = c < nvec;
        uint4 u = ok[j] ? xr[c] : make_uint4(0, 0, 0, 0);
        lt_unpack16(D(), u, v[j]);
    }
    float *red = sh[rib];
    const int op = p.op;
    const float inv_n = 1.0f / (float)cols;
    if (op == LT_NORM_ROWSUM) {
        float s = 0;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < VN; e++) s += v[j][e];
        s = lt_row_sum<TPR>(s, red);
        if (lane == 0) lt_st1<D>((S *)p.y, row, s * p.scale);
        return;
    }
    float a = 1.0f, b = 0.0f; /* y = (x * a + b) (softmax: exp first) */
    if (op == LT_NORM_SOFTMAX || op == LT_NORM_LOGSOFTMAX) {
        float m = lt_norm_neg_inf(), s = 0;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < VN; e++)
                if (ok[j]) m = fmaxf(m, v[j][e]); /* a NaN is skipped here but makes the sum NaN */
        const float ml = m, ml2 = m * LT_LOG2E;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < VN; e++) {
                float ex = exp2f(fmaf(v[j][e], LT_LOG2E, -ml2));
                if (ok[j]) s += ex;
                if (op == LT_NORM_SOFTMAX) v[j][e] = ex;
            }
        lt_row_ms<TPR>(m, s, red);
        if (op == LT_NORM_SOFTMAX) { /* y = exp(x - ml) * exp(ml - m) / s */
            a = (ml == m ? 1.0f : exp2f((ml - m) * LT_LOG2E)) / s;
        } else { /* y = x - m - log(s) */
            b = -m - logf(s);
        }
    } else if (op == LT_NORM_LAYERNORM) {
        float s = 0;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < VN; e++) s += v[j][e];
        const float mean = lt_row_sum<TPR>(s, red) * inv_n;
        float q = 0;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < VN; e++) {
                float d = v[j][e] - mean;
                if (ok[j]) q = fmaf(d, d, q);
            }
        const float rstd = rsqrtf(lt_row_sum<TPR>(q, red) * inv_n + p.eps);
        if (lane == 0 && p.mean) p.mean[row] = mean;
        if (lane == 0 && p.rstd) p.rstd[row] = rstd;
        a = rstd;
        b = -mean * rstd;
    } else { /* RMSNORM */
        float q = 0;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < VN; e++) q = fmaf(v[j][e], v[j][e], q);
        const float rstd = rsqrtf(lt_row_sum<TPR>(q, red) * inv_n + p.eps);
        if (lane == 0 && p.rstd) p.rstd[row] = rstd;
        a = rstd;
    }
    uint4 *yr = (uint4 *)((S *)p.y + row * cols);
    const uint4 *gr = (const uint4 *)p.gamma, *br = (const uint4 *)p.beta;
    const bool affine = op == LT_NORM_LAYERNORM || op == LT_NORM_RMSNORM;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = lane + j * TPR;
        if (!ok[j]) continue;
        float o[VN];
#pragma unroll
        for (int e = 0; e < VN; e++) o[e] = fmaf(v[j][e], a, b);
        if (affine && gr) {
            float g[VN];
            lt_unpack16(D(), gr[c], g);
#pragma unroll
            for (int e = 0; e < VN; e++) o[e] *= g[e];
        }
        if (affine && br) {
            float g[VN];
            lt_unpack16(D(), br[c], g);
#pragma unroll
            for (int e = 0; e < VN; e++) o[e] += g[e];
        }
        yr[c] = lt_pack16(D(), o);
    }
}

/* ---- any row length and alignment: 256 threads per row, scalar loads ---- */
template <typename D> LT_FN void lt_norm_rows_any(const lt_cuda_norm_params &p) {
    typedef typename D::S S;
    enum { TPR = 256 };
    __shared__ float red[2 * TPR / 32];
    const long long row = blockIdx.x;
    const int t = (int)threadIdx.x, cols = p.cols, op = p.op;
    const S *x = (const S *)p.x + row * cols;
    S *y = (S *)p.y;
    const S *g = (const S *)p.gamma, *bb = (const S *)p.beta;
    const float inv_n = 1.0f / (float)cols;
    if (op == LT_NORM_ROWSUM) {
        float s = 0;
        for (int c = t; c < cols; c += TPR) s += lt_ld1<D>(x, c);
        s = lt_row_sum<TPR>(s, red);
        if (t == 0) lt_st1<D>(y, row, s * p.scale);
        return;
    }
    y += row * cols;
    if (op == LT_NORM_SOFTMAX || op == LT_NORM_LOGSOFTMAX) {
        float m = lt_norm_neg_inf(), s = 0;
        for (int c = t; c < cols; c += TPR) { /* online: rescale the sum when the max grows */
            float xv = lt_ld1<D>(x, c);
            if (xv > m) { /* exp(xv - xv): 1, or NaN for +inf, as exp(inf - inf) is in the reference */
                s = s * exp2f((m - xv) * LT_LOG2E) + exp2f((xv - xv) * LT_LOG2E);
                m = xv;
            } else {
                s += exp2f((xv - m) * LT_LOG2E); /* NaN: s becomes NaN */
            }
        }
        lt_row_ms<TPR>(m, s, red);
        const float inv = 1.0f / s, ls = m + logf(s);
        for (int c = t; c < cols; c += TPR) {
            float xv = lt_ld1<D>(x, c);
            lt_st1<D>(y, c, op == LT_NORM_SOFTMAX ? exp2f((xv - m) * LT_LOG2E) * inv : xv - ls);
        }
        return;
    }
    float mean = 0;
    if (op == LT_NORM_LAYERNORM) {
        float s = 0;
        for (int c = t; c < cols; c += TPR) s += lt_ld1<D>(x, c);
        mean = lt_row_sum<TPR>(s, red) * inv_n;
    }
    float q = 0;
    for (int c = t; c < cols; c += TPR) {
        float d = lt_ld1<D>(x, c) - mean;
        q = fmaf(d, d, q);
    }
    const float rstd = rsqrtf(lt_row_sum<TPR>(q, red) * inv_n + p.eps);
    if (t == 0 && p.mean && op == LT_NORM_LAYERNORM) p.mean[row] = mean;
    if (t == 0 && p.rstd) p.rstd[row] = rstd;
    for (int c = t; c < cols; c += TPR) {
        float o = (lt_ld1<D>(x, c) - mean) * rstd;
        if (g) o *= lt_ld1<D>(g, c);
        if (bb && op == LT_NORM_LAYERNORM) o += lt_ld1<D>(bb, c);
        lt_st1<D>(y, c, o);
    }
}

/* ---- entry points: LT_NORM_KERNELS(dt) instantiates the six kernels of one type (the host
 * compiles one module per type); LT_CUDA_ENTRY_NORM instantiates all three types ---- */
#define LT_NORM_ENTRY(dt, TPR, RPB)                                                                \
    extern "C" __global__ void __launch_bounds__(TPR * RPB) lt_cuda_norm_##dt##_t##TPR(lt_cuda_norm_params p) { \
        lt_norm_rows_cached<lt_dt_##dt, TPR, RPB, 4>(p);                                           \
    }
#define LT_NORM_KERNELS(dt)                                                                        \
    LT_NORM_ENTRY(dt, 32, 4)                                                                       \
    LT_NORM_ENTRY(dt, 128, 1)                                                                      \
    LT_NORM_ENTRY(dt, 256, 1)                                                                      \
    LT_NORM_ENTRY(dt, 512, 1)                                                                      \
    LT_NORM_ENTRY(dt, 1024, 1)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) lt_cuda_norm_##dt##_any(lt_cuda_norm_params p) { \
        lt_norm_rows_any<lt_dt_##dt>(p);                                                           \
    }
#ifdef LT_CUDA_ENTRY_NORM
LT_NORM_KERNELS(f32)
LT_NORM_KERNELS(f16)
LT_NORM_KERNELS(bf16)
#endif

#endif
