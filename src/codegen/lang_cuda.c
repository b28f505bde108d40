/* lang_cuda.c — the CUDA target table for the shared emitter (see lang.h).
 *
 * Generated CUDA is compiled by NVRTC (src/backend/cuda/nvrtc.c) with no headers beyond the
 * prelude (cuda_core.h). Kernels are `extern "C" __global__` with one pointer parameter per
 * buffer; GPU_BLOCK / GPU_THREAD loops become blockIdx / threadIdx (the launch shape comes from
 * lt_emit_launch_dims); PARALLEL loops are rejected (bind them instead); VECTORIZED loops load
 * and store whole vectors (up to 16 bytes per access) into register arrays when their accesses are
 * contiguous and aligned (vector_memory, see emit.c), with the plain per-thread loop as the fallback;
 * SHARED buffers are __shared__ arrays; BARRIER is __syncthreads().
 * Accurate math by default; with fast_math the __expf family of intrinsics.
 */
#include "lang.h"

static const char *const cuda_prelude[] = {"cuda_core.h", NULL};
static const char *const cuda_optional[] = {"cuda_*.h", NULL};
static const char *const cuda_exclude[] = {"common.h", NULL};

const lt_lang lt_lang_cuda = {
    .name = "cuda",
    .build_note = "NVRTC: --gpu-architecture=sm_XX -std=c++17 (no include path needed)",
    .prelude = cuda_prelude,
    .prelude_optional = cuda_optional,
    .prelude_exclude = cuda_exclude,
    .kernel_prefix = "extern \"C\" __global__ void",
    .args_array = false,
    .kernel_table = false,
    .type_names = {
        [LT_FLOAT] = "float", [LT_DOUBLE] = "double", [LT_FLOAT16] = "uint16_t",
        [LT_BFLOAT16] = "uint16_t", [LT_INT8] = "int8_t", [LT_INT16] = "int16_t",
        [LT_INT32] = "int32_t", [LT_INT64] = "int64_t", [LT_UINT8] = "uint8_t",
        [LT_UINT16] = "uint16_t", [LT_UINT32] = "uint32_t", [LT_UINT64] = "uint64_t",
        [LT_BOOL] = "uint8_t",
    },
    .bool_compute = "int",
    .f32_suffix = "f",
    .math_f32 = {
        [LT_LOP_ABS] = "fabsf", [LT_LOP_EXP] = "expf", [LT_LOP_LOG] = "logf", [LT_LOP_SQRT] = "sqrtf",
        [LT_LOP_RSQRT] = "rsqrtf", [LT_LOP_TANH] = "tanhf", [LT_LOP_ERF] = "erff",
        [LT_LOP_FLOOR] = "floorf", [LT_LOP_CEIL] = "ceilf", [LT_LOP_ROUND] = "rintf",
        [LT_LOP_SIN] = "sinf", [LT_LOP_COS] = "cosf", [LT_LOP_TAN] = "tanf",
        [LT_LOP_ASIN] = "asinf", [LT_LOP_ACOS] = "acosf", [LT_LOP_ATAN] = "atanf",
        [LT_LOP_SINH] = "sinhf", [LT_LOP_COSH] = "coshf", [LT_LOP_ASINH] = "asinhf",
        [LT_LOP_ACOSH] = "acoshf", [LT_LOP_ATANH] = "atanhf", [LT_LOP_ISNAN] = "isnan",
        [LT_LOP_ISINF] = "isinf", [LT_LOP_FMOD] = "fmodf", [LT_LOP_POW] = "powf",
    },
    .math_f64 = {
        [LT_LOP_ABS] = "fabs", [LT_LOP_EXP] = "exp", [LT_LOP_LOG] = "log", [LT_LOP_SQRT] = "sqrt",
        [LT_LOP_RSQRT] = "rsqrt", [LT_LOP_TANH] = "tanh", [LT_LOP_ERF] = "erf",
        [LT_LOP_FLOOR] = "floor", [LT_LOP_CEIL] = "ceil", [LT_LOP_ROUND] = "rint",
        [LT_LOP_SIN] = "sin", [LT_LOP_COS] = "cos", [LT_LOP_TAN] = "tan",
        [LT_LOP_ASIN] = "asin", [LT_LOP_ACOS] = "acos", [LT_LOP_ATAN] = "atan",
        [LT_LOP_SINH] = "sinh", [LT_LOP_COSH] = "cosh", [LT_LOP_ASINH] = "asinh",
        [LT_LOP_ACOSH] = "acosh", [LT_LOP_ATANH] = "atanh", [LT_LOP_ISNAN] = "isnan",
        [LT_LOP_ISINF] = "isinf", [LT_LOP_FMOD] = "fmod", [LT_LOP_POW] = "pow",
    },
    .math_f32_fast = {
        [LT_LOP_EXP] = "__expf", [LT_LOP_LOG] = "__logf", [LT_LOP_SIN] = "__sinf",
        [LT_LOP_COS] = "__cosf", [LT_LOP_TAN] = "__tanf", [LT_LOP_POW] = "__powf",
    },
    .parallel_pragma = NULL,
    .simd_pragma = NULL,
    .simd_reduction_pragma = NULL,
    .unroll_pragma = "#pragma unroll %d",
    .block_index = {"blockIdx.x", "blockIdx.y", "blockIdx.z"},
    .thread_index = {"threadIdx.x", "threadIdx.y", "threadIdx.z"},
    .max_block_threads = 1024,
    .vector_types = false,
    .vector_memory = true,
    .shared_qualifier = "__shared__ ",
    .local_attr = "",
    .max_local_bytes = 48 * 1024,
    .barrier = "__syncthreads();",
};
