/* cuda_kernels.h — host launchers for the CUDA prelude kernels (src/codegen/prelude/cuda_norm.h and
 * cuda_gemm.h): row normalizations / softmax / row sums, and matrix multiply with a fused epilogue.
 *
 * Each launcher picks a kernel variant from the shape, dtype and alignment, compiles it on first use
 * (one small module per kernel, through the cubin cache of lt_cuda_open), and enqueues it on the
 * device's stream (asynchronous, capturable into a CUDA graph once compiled: compile outside the
 * capture with lt_cuda_*_prepare). Pointers are device pointers; row-major layouts.
 * Errors: LT_ERR_USAGE for inconsistent arguments (naming the field), LT_ERR_UNSUPPORTED for a dtype
 * the kernels lack; driver and NVRTC errors as cuda.h reports them.
 * Entry points: lt_cuda_norm, lt_cuda_gemm, lt_cuda_gemm_config_*, lt_cuda_kernel_source.
 */
#ifndef LT_BACKEND_CUDA_KERNELS_H
#define LT_BACKEND_CUDA_KERNELS_H

#include "../../base/dtype.h"
#include "../../codegen/prelude/abi.h"
#include "cuda.h"

typedef enum lt_cuda_norm_op { /* the kernels' own codes (abi.h LT_NORM_*) */
    LT_CUDA_SOFTMAX = LT_NORM_SOFTMAX,       /* y = exp(x - max) / sum, over each row */
    LT_CUDA_LOGSOFTMAX = LT_NORM_LOGSOFTMAX, /* y = x - max - log(sum exp(x - max)) */
    LT_CUDA_LAYERNORM = LT_NORM_LAYERNORM,   /* y = (x - mean) / sqrt(var + eps) * gamma + beta */
    LT_CUDA_RMSNORM = LT_NORM_RMSNORM,       /* y = x / sqrt(mean(x^2) + eps) * gamma */
    LT_CUDA_ROWSUM = LT_NORM_ROWSUM          /* y[r] = scale * sum_c x[r, c] */
} lt_cuda_norm_op;

typedef struct lt_cuda_norm_args {
    lt_cuda_norm_op op;
    lt_dtype dtype;         /* LT_FLOAT, LT_FLOAT16, LT_BFLOAT16 (x, y, gamma, beta alike) */
    void *y;                /* [rows, cols]; ROWSUM: [rows] */
    const void *x;          /* [rows, cols] */
    const void *gamma;      /* [cols] or NULL (1) */
    const void *beta;       /* [cols] or NULL (0); LayerNorm only */
    float *mean, *rstd;     /* [rows] float outputs or NULL */
    int64_t rows;
    int cols;               /* >= 1 */
    float eps;
    float scale;            /* ROWSUM multiplier (0 is taken as 1) */
    int variant;            /* 0: choose; 32, 128, 256, 512, 1024: that many threads per row
                               (row in registers; needs alignment and a short enough row);
                               -1: the any-shape kernel */
} lt_cuda_norm_args;

lt_status lt_cuda_norm(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_norm_args *a);
/* The kernel lt_cuda_norm would launch ("lt_cuda_norm_f16_t128"), compiled now. */
lt_status lt_cuda_norm_prepare(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_norm_args *a, const char **kernel_name);

typedef struct lt_cuda_gemm_args {
    lt_dtype dtype;         /* LT_FLOAT16, LT_BFLOAT16 (tensor cores), LT_FLOAT (SIMT, no tf32) */
    bool b_trans;           /* B given as [n, k] (nt) instead of [k, n] (nn) */
    void *c;                /* [batch][m, n] (ldc) */
    const void *a, *b;      /* [batch][m, k] (lda); [batch][k, n] or [batch][n, k] (ldb) */
    const void *bias;       /* per column [n] (bias_kind 1) or per row [m] (bias_kind 2); dtype */
    const void *res;        /* residual [batch][m, n] (ldr), dtype; NULL: none */
    int m, n, k, batch;     /* batch 0 is taken as 1 */
    int lda, ldb, ldc, ldr; /* 0: dense */
    int64_t stride_a, stride_b, stride_c, stride_r; /* batch strides in elements; 0: shared */
    int bias_kind;
    int act;                /* abi.h LT_ACT_*: NONE, RELU, GELU (erf), GELU_TANH, SIGMOID */
    bool res_after_act;     /* act(alpha * AB + bias) + beta * R, instead of act(... + beta * R) */
    float alpha, beta;      /* 0 is taken as 1 for both */
    int config;             /* -1: choose; 0 .. lt_cuda_gemm_n_configs() - 1: that one (the SIMT
                               kernel is the last); a tensor-core config the operands do not fit,
                               or a wgmma one on a device other than sm_90a, is LT_ERR_UNSUPPORTED */
} lt_cuda_gemm_args;

lt_status lt_cuda_gemm(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_gemm_args *a);
lt_status lt_cuda_gemm_prepare(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_gemm_args *a, const char **kernel_name);
int lt_cuda_gemm_n_configs(void);
const char *lt_cuda_gemm_config_name(int config); /* "128x256x32" ... "simt" */

/* The source of the module lathe compiles for one prelude kernel (for tests and export): the CUDA
 * prelude with every header, then `instantiate` (e.g. "LT_NORM_KERNELS(f16)"). Heap string, free
 * with lt_mem_free. */
lt_status lt_cuda_kernel_source(lt_ctx *ctx, const char *instantiate, char **out);

#endif
