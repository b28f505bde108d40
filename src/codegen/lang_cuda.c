/* lang_cuda.c — the CUDA target table for the shared emitter (see lang.h): the base (C) table of
 * lang_base.h with CUDA's differences overriding its entries, so everything not listed here (type
 * names, most math names, float suffix, ...) is the C target's.
 *
 * Generated CUDA is compiled by NVRTC (src/backend/cuda/nvrtc.c) with no headers beyond the
 * prelude (cuda_core.h). Kernels are `extern "C" __global__` with one pointer parameter per
 * buffer; GPU_BLOCK / GPU_THREAD loops become blockIdx / threadIdx (the launch shape comes from
 * lt_emit_launch_dims); PARALLEL loops are rejected (bind them instead); VECTORIZED loops load
 * and store whole vectors (up to 16 bytes per access) into register arrays when their accesses are
 * contiguous and aligned (vector_memory, see emit.c), with the plain per-thread loop as the fallback;
 * SHARED buffers are __shared__ arrays; BARRIER is __syncthreads().
 * Accurate math by default (the device's expf / logf / tanhf / erff instead of the C prelude's
 * vectorizable versions, and rsqrt); with fast_math the __expf family of intrinsics.
 */
#include "lang_base.h"

LT_LANG_DERIVE_BEGIN
const lt_lang lt_lang_cuda = {
    LT_LANG_BASE,
    .name = "cuda",
    .build_note = "NVRTC: --gpu-architecture=sm_XX -std=c++17 (no include path needed)",
    .preamble = NULL,
    .prelude = (const char *const[]){"cuda_core.h", NULL},
    .prelude_optional = (const char *const[]){"cuda_*.h", NULL},
    .prelude_exclude = (const char *const[]){"common.h", NULL},
    .kernel_prefix = "extern \"C\" __global__ void",
    .launch_bounds = "__launch_bounds__(%lld)",
    .args_array = false,
    .kernel_table = false,
    .math_f32[LT_LOP_EXP] = "expf",
    .math_f32[LT_LOP_LOG] = "logf",
    .math_f32[LT_LOP_TANH] = "tanhf",
    .math_f32[LT_LOP_ERF] = "erff",
    .math_f32[LT_LOP_RSQRT] = "rsqrtf",
    .math_f64[LT_LOP_RSQRT] = "rsqrt",
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
LT_LANG_DERIVE_END
