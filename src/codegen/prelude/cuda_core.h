/* cuda_core.h — the CUDA target's prelude: the first thing in every generated CUDA translation unit.
 *
 * Generated CUDA is compiled by NVRTC with no include path, so this file declares what the kernels
 * need itself: the fixed-width integer types, bit casts through the CUDA intrinsics, infinities and
 * NaNs, and then the helpers shared with the C target (common.h). Kernels are
 * `extern "C" __global__` with one pointer parameter per buffer (outputs first, then inputs,
 * weights), so the driver's cuLaunchKernel argument array maps one to one; launch dimensions come
 * from the kernel's GPU_BLOCK / GPU_THREAD loops (lt_emit_launch_dims).
 *
 * After common.h: what the GPU schedules need beyond plain loops.
 *   LT_COPY16/8/4(dst, src)  one 16/8/4-byte memory access (uint4 / uint2 / uint32): the emitter's
 *                            explicit vector loads and stores in VECTORIZED loops (both addresses
 *                            aligned, checked at run time with LT_ALIGNED(ptr, bytes)).
 *   lt_warp_OP_S(v)          OP (sum prod max min) of v over the 32 lanes of a warp, by an xor
 *                            butterfly: every lane gets the same bits (each step combines the same
 *                            two values on both lanes of a pair).
 *   lt_block_OP_S(v, n)      the same over the n threads (a multiple of 32, <= 1024) of a 1-D block:
 *                            warp results through shared memory, then every warp reduces all of
 *                            them in the same order; two __syncthreads, so every thread of the block
 *                            must call it (the rowreduce schedule step guarantees that).
 * S is f32, f64, i32 or i64 (the accumulator types of the reductions).
 */
#ifndef LT_PRELUDE_CUDA_CORE_H
#define LT_PRELUDE_CUDA_CORE_H

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

#define LT_FN static __device__ __forceinline__
#define LT_COLD_FN static __device__ __noinline__ /* a rare path, kept out of line */
#define LT_F2U(f) ((uint32_t)__float_as_uint(f))
#define LT_U2F(u) __uint_as_float(u)
#define LT_D2U(d) ((uint64_t)__double_as_longlong(d))
#define LT_U2D(u) __longlong_as_double((long long)(u))
#define LT_INF_F32 __uint_as_float(0x7f800000u)
#define LT_NAN_F32 __uint_as_float(0x7fc00000u)
#define LT_INF_F64 __longlong_as_double(0x7ff0000000000000LL)
#define LT_NAN_F64 __longlong_as_double(0x7ff8000000000000LL)

#define LT_EXP_F32 expf
#include "common.h"

#define LT_ALIGNED(p, n) ((((unsigned long long)(p)) & (unsigned long long)((n) - 1)) == 0)
#define LT_COPY16(dst, src) (*(uint4 *)(dst) = *(const uint4 *)(src))
#define LT_COPY8(dst, src) (*(uint2 *)(dst) = *(const uint2 *)(src))
#define LT_COPY4(dst, src) (*(uint32_t *)(dst) = *(const uint32_t *)(src))
#define LT_VREG(T, name, n) T name[n] __attribute__((aligned(16)))

/* exp(d) for d = x - max <= 0 (softmax, log-sum-exp sums): exp2f of the pre-scaled argument, one
 * FMA-class multiply and the SFU's ex2 (expf's argument reduction costs more, and row kernels at the
 * memory roofline are bound by it in fp16/bf16); relative error ~|d| * 2^-24 beyond exp2f's 2 ulp */
LT_FN float lt_exp_nonpos_f32(float d) { return exp2f(d * 1.4426950408889634f); }

LT_FN float lt_radd_f32(float a, float b) { return a + b; }
LT_FN float lt_rmul_f32(float a, float b) { return a * b; }
LT_FN double lt_radd_f64(double a, double b) { return a + b; }
LT_FN double lt_rmul_f64(double a, double b) { return a * b; }
LT_FN int32_t lt_radd_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
LT_FN int32_t lt_rmul_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
LT_FN int64_t lt_radd_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
LT_FN int64_t lt_rmul_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

#define LT_DEF_XRED(OP, S, T, COMBINE, ID)                                                         \
    LT_FN T lt_warp_##OP##_##S(T v) {                                                              \
        for (int o = 16; o > 0; o >>= 1) v = COMBINE(v, __shfl_xor_sync(0xffffffffu, v, o));       \
        return v;                                                                                  \
    }                                                                                              \
    LT_FN T lt_block_##OP##_##S(T v, int n) {                                                      \
        __shared__ T part[32];                                                                     \
        int lane = (int)(threadIdx.x & 31u), w = (int)(threadIdx.x >> 5);                          \
        v = lt_warp_##OP##_##S(v);                                                                 \
        if (lane == 0) part[w] = v;                                                                \
        __syncthreads();                                                                           \
        v = lane < (n >> 5) ? part[lane] : (ID);                                                   \
        v = lt_warp_##OP##_##S(v);                                                                 \
        __syncthreads();                                                                           \
        return v;                                                                                  \
    }
#define LT_DEF_XRED_ALL(S, T, LOW, HIGH)                                                           \
    LT_DEF_XRED(sum, S, T, lt_radd_##S, (T)0)                                                      \
    LT_DEF_XRED(prod, S, T, lt_rmul_##S, (T)1)                                                     \
    LT_DEF_XRED(max, S, T, lt_max_##S, LOW)                                                        \
    LT_DEF_XRED(min, S, T, lt_min_##S, HIGH)
LT_DEF_XRED_ALL(f32, float, -LT_INF_F32, LT_INF_F32)
LT_DEF_XRED_ALL(f64, double, -LT_INF_F64, LT_INF_F64)
LT_DEF_XRED_ALL(i32, int32_t, (int32_t)(-0x7fffffff - 1), (int32_t)0x7fffffff)
LT_DEF_XRED_ALL(i64, int64_t, (int64_t)(-0x7fffffffffffffffLL - 1), (int64_t)0x7fffffffffffffffLL)

#endif
