/* cuda_core.h — the CUDA target's prelude: the first thing in every generated CUDA translation unit.
 *
 * Generated CUDA is compiled by NVRTC with no include path, so this file declares what the kernels
 * need itself: the fixed-width integer types, bit casts through the CUDA intrinsics, infinities and
 * NaNs, and then the helpers shared with the C target (common.h). Kernels are
 * `extern "C" __global__` with one pointer parameter per buffer (outputs first, then inputs,
 * weights), so the driver's cuLaunchKernel argument array maps one to one; launch dimensions come
 * from the kernel's GPU_BLOCK / GPU_THREAD loops (lt_emit_launch_dims).
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

#endif
