/* abi.h — the ABI between lathe's host code and the generated kernels: every enum, constant and
 * parameter struct that the lowering (src/lower), the CUDA launchers (src/backend/cuda) and the C /
 * CUDA preludes (gemm.h, conv*.h, cuda_*.h) must agree on, defined once, plus the kernel calling
 * convention for run-time scalars.
 *
 * One plain-C header with three readers:
 *   - lathe itself (C11): the lowering and the launchers include it by path;
 *   - generated C: pasted into the translation unit where gemm.h includes it (built as C99 .. gnu17);
 *   - generated CUDA: pasted through cuda_norm.h and compiled as C++17 by NVRTC (no headers).
 * So it holds only enums, macros and structs of pointers, int, long long and float (no <stdint.h>
 * names, no functions), and its layout assertions compile on every side: _Static_assert in C11 and
 * later, static_assert in C++ (NVRTC), no check before C11 (the export built with -std=c99). A field
 * whose size or offset differs between the host compiler and the device compiler fails the build.
 *
 * ---- kernel calling convention (docs/COMPILER.md "Kernel ABI") ------------------------------------
 * A kernel's arguments are B buffers (outputs first, then inputs, then weights) followed by S run-time
 * scalars: 64-bit signed integers (loop extents, strides, offsets not known when the code is
 * generated, e.g. a batch or sequence length bound at run time). S is 0 for every static-shape kernel,
 * whose code is exactly what it was before scalars existed.
 *   C:    void lt_k<N>(void *const *args)
 *         args[0 .. B-1]      the buffer pointers;
 *         args[B .. B+S-1]    the scalars, by value in the pointer slot (the slot's bits are the
 *                             int64: long long v = (long long)args[B + i]; pointers are 64-bit,
 *                             asserted below). The kernel table's arg count is B + S.
 *   CUDA: extern "C" __global__ void lt_k<N>(T0 *a0, ..., T(B-1) *a(B-1), long long s0, ..., s(S-1))
 *         cuLaunchKernel's kernelParams[i] is &args[i] for every i: an 8-byte pointer slot holding the
 *         scalar's bits is a valid `long long` parameter, so buffers and scalars travel alike.
 *   launch (src/backend/backend.h): launch(b, ctx, k, args, B + S), the same array on every backend;
 *         the runtime writes the scalar slots (the plan's current extents) before each launch.
 *   CUDA graphs: a captured launch keeps the argument values of its capture (the driver copies
 *         kernelParams), so a graph is valid for one set of scalar values: the runtime keys a captured
 *         graph by its scalars and captures again (or updates the kernel nodes) when they change.
 */
#ifndef LT_PRELUDE_ABI_H
#define LT_PRELUDE_ABI_H

#if defined(__cplusplus)
#define LT_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define LT_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#else /* C99: a declaration that checks nothing (an empty expansion would leave a stray ';') */
#define LT_ABI_ASSERT(cond, msg) extern int lt_abi_unchecked_
#endif
/* Field offsets: NVRTC has no constant offsetof, so there the check is that the field exists; the
 * offsets follow anyway from the field types' sizes and alignments, asserted on every side below
 * (the structs are standard-layout, laid out by the same rules by the host and the device compiler). */
#if defined(__CUDACC_RTC__)
#define LT_ABI_ASSERT_OFFSET(type, field, off) LT_ABI_ASSERT(sizeof(((type *)0)->field) > 0, #type "." #field)
#else
#define LT_ABI_ASSERT_OFFSET(type, field, off) LT_ABI_ASSERT(__builtin_offsetof(type, field) == (off), #type "." #field)
#endif
#if defined(__cplusplus)
#define LT_ABI_ALIGNOF(type) alignof(type)
#else
#define LT_ABI_ALIGNOF(type) __alignof__(type)
#endif

LT_ABI_ASSERT(sizeof(void *) == 8 && sizeof(long long) == 8, "64-bit pointer slots carry int64 scalars");
LT_ABI_ASSERT(sizeof(int) == 4 && sizeof(float) == 4 && LT_ABI_ALIGNOF(void *) == 8 && LT_ABI_ALIGNOF(long long) == 8 &&
                  LT_ABI_ALIGNOF(int) == 4 && LT_ABI_ALIGNOF(float) == 4,
              "the parameter structs' field types have the same size and alignment on every side");

/* ---- fused epilogues (gemm.h, conv.h, conv_nchwc.h, cuda_gemm.h, cuda_conv.h) ---- */
/* Activation codes (act, with parameters act_a, act_b), the same on the CPU and the GPU. */
enum {
    LT_ACT_NONE = 0,
    LT_ACT_RELU = 1,
    LT_ACT_CLIP = 2,         /* min act_a, max act_b */
    LT_ACT_LEAKY_RELU = 3,   /* alpha act_a */
    LT_ACT_SIGMOID = 4,
    LT_ACT_TANH = 5,
    LT_ACT_GELU = 6,         /* erf form */
    LT_ACT_GELU_TANH = 7,
    LT_ACT_SILU = 8,         /* x * sigmoid(x) */
    LT_ACT_HARD_SIGMOID = 9, /* max(0, min(1, act_a * x + act_b)) */
    LT_ACT_HARD_SWISH = 10,  /* x * max(0, min(1, x / 6 + 1/2)) */
    LT_ACT_COUNT = 11
};
/* Bias codes (bias_mode / bias_kind / has_bias): none, bias[j] per column (Conv: per output
 * channel when has_bias is 1), bias[i] per row. */
enum { LT_BIAS_NONE = 0, LT_BIAS_COL = 1, LT_BIAS_ROW = 2 };
/* Residual codes (res_mode): none, act(v + R), act(v) + R. */
enum { LT_RES_NONE = 0, LT_RES_BEFORE_ACT = 1, LT_RES_AFTER_ACT = 2 };

/* ---- CPU GEMM (gemm.h): operand modes, blocking, workspace, packed panels ---- */
enum { LT_GEMM_N = 0, LT_GEMM_T = 1, LT_GEMM_PACKED = 2 };
#ifndef LT_GEMM_KC
#define LT_GEMM_KC 256 /* deepest K block */
#endif
#ifndef LT_GEMM_NC
#define LT_GEMM_NC 768 /* columns of an N chunk (B block KC x NC in L2) */
#endif
/* workspace floats one thread needs at full speed, for every instruction set (MR <= 16) */
#define LT_GEMM_WS_PER_THREAD ((long long)LT_GEMM_KC * (LT_GEMM_NC + 16) + 32)
/* rows of an A panel (MR) per instruction set, and the widest B panel (NR) of any: the packed
 * sizes the lowering reserves (lt_sgemm_packed_{a,b}_size) hold every instruction set's layout */
#define LT_GEMM_MR_AVX512 8
#define LT_GEMM_MR_AVX2 6
#define LT_GEMM_MR_PORTABLE 6
#define LT_GEMM_NR_MAX 48
LT_ABI_ASSERT(LT_GEMM_MR_PORTABLE == LT_GEMM_MR_AVX2, "the lowering rounds A panels for two MRs");

/* ---- CPU 8-bit integer GEMM and convolution (gemm_i8.h) ---- */
/* Element types of the 8-bit operands and zero points, and how a zero point is given. */
enum { LT_I8_U8 = 0, LT_I8_S8 = 1 };
enum { LT_ZP_NONE = 0, LT_ZP_SCALAR = 1, LT_ZP_VECTOR = 2 /* one per row (A) / column (B) / channel */ };
/* Register tile (the same on every instruction set, so packed sizes do not depend on it), K block
 * (even) and N chunk (a multiple of NR). */
#define LT_GEMM_I8_MR 6
#define LT_GEMM_I8_NR 16
#define LT_GEMM_I8_KC 512
#define LT_GEMM_I8_NC 256
/* Workspace (int16 elements) one thread needs at full speed: an A block, a B block, their sums. */
#define LT_GEMM_I8_WS_PER_THREAD                                                                   \
    ((long long)LT_GEMM_I8_KC * (LT_GEMM_I8_NC + LT_GEMM_I8_MR) + 2LL * (LT_GEMM_I8_NC + LT_GEMM_I8_MR) + 64)
/* Depthwise convolution: one zero-padded input plane (HP x WP) and an output row (OW int32). */
#define LT_CONV_I8_DW_WS_PER_THREAD(HP, WP, OW) ((long long)(HP) * (WP) + 2LL * (OW) + 64)
/* A convolution with fewer output pixels than NR takes the pixels as the GEMM's rows and the
 * output channels as its columns (weights packed as B panels), else the channels as rows. */
#define LT_CONV_I8_PIXEL_ROWS(P) ((P) < LT_GEMM_I8_NR)
LT_ABI_ASSERT(LT_GEMM_I8_KC % 2 == 0 && LT_GEMM_I8_NC % LT_GEMM_I8_NR == 0, "int8 GEMM blocking");

/* ---- CUDA row kernels (cuda_norm.h; launched by src/backend/cuda/cuda_kernels.c) ---- */
enum { LT_NORM_SOFTMAX = 0, LT_NORM_LOGSOFTMAX = 1, LT_NORM_LAYERNORM = 2, LT_NORM_RMSNORM = 3, LT_NORM_ROWSUM = 4 };

typedef struct lt_cuda_norm_params {
    void *y;            /* [rows, cols]; ROWSUM: [rows] */
    const void *x;      /* [rows, cols] */
    const void *gamma;  /* [cols] scale (LayerNorm, RMSNorm), NULL: 1 */
    const void *beta;   /* [cols] bias (LayerNorm), NULL: 0 */
    float *mean;        /* [rows] LayerNorm's mean, NULL: not written */
    float *rstd;        /* [rows] 1 / sqrt(variance + eps) (LayerNorm, RMSNorm), NULL: not written */
    long long rows;
    int cols;
    int op;             /* LT_NORM_* */
    float eps;
    float scale;        /* ROWSUM: the sum is multiplied by it (1 / cols: a mean) */
} lt_cuda_norm_params;
LT_ABI_ASSERT(sizeof(lt_cuda_norm_params) == 72, "lt_cuda_norm_params layout");
LT_ABI_ASSERT_OFFSET(lt_cuda_norm_params, rows, 48);
LT_ABI_ASSERT_OFFSET(lt_cuda_norm_params, cols, 56);
LT_ABI_ASSERT_OFFSET(lt_cuda_norm_params, op, 60);
LT_ABI_ASSERT_OFFSET(lt_cuda_norm_params, eps, 64);
LT_ABI_ASSERT_OFFSET(lt_cuda_norm_params, scale, 68);

/* ---- CUDA GEMM (cuda_gemm.h; launched by cuda_kernels.c, built from the tile entries' arguments) ---- */
typedef struct lt_cuda_gemm_params {
    void *c;
    const void *a;
    const void *b;
    const void *bias;    /* NULL: none */
    const void *res;     /* residual R, same type and shape as C (ldr, stride_r); NULL: none */
    long long stride_a, stride_b, stride_c, stride_r;
    int m, n, k;
    int lda, ldb, ldc, ldr;
    int bias_kind;       /* LT_BIAS_* */
    int act;             /* LT_ACT_* */
    int res_after_act;   /* 1: act(v + bias) + R; 0: act(v + bias + R) */
    float alpha, beta;
    float act_a, act_b;  /* LeakyRelu alpha; Clip min, max; HardSigmoid alpha, beta */
} lt_cuda_gemm_params;
LT_ABI_ASSERT(sizeof(lt_cuda_gemm_params) == 128, "lt_cuda_gemm_params layout");
LT_ABI_ASSERT_OFFSET(lt_cuda_gemm_params, stride_a, 40);
LT_ABI_ASSERT_OFFSET(lt_cuda_gemm_params, m, 72);
LT_ABI_ASSERT_OFFSET(lt_cuda_gemm_params, bias_kind, 100);
LT_ABI_ASSERT_OFFSET(lt_cuda_gemm_params, act, 104);
LT_ABI_ASSERT_OFFSET(lt_cuda_gemm_params, alpha, 112);
LT_ABI_ASSERT_OFFSET(lt_cuda_gemm_params, act_b, 124);

/* The standalone GEMM kernels' configurations (cuda_gemm.h instantiates them; the launchers list
 * them, in this order, as their config numbers). mma.sync: X(dt, lay, BT, BM, BN, BK, WM, WN,
 * stages, min blocks per SM); wgmma: X(dt, lay, BT, BM, BN, BK, stages, min blocks per SM). */
#define LT_GEMM_TC_CONFIGS(X, dt, lay, BT)                                                         \
    X(dt, lay, BT, 128, 256, 32, 64, 64, 4, 1)                                                     \
    X(dt, lay, BT, 256, 128, 32, 64, 64, 4, 1)                                                     \
    X(dt, lay, BT, 128, 128, 32, 64, 64, 4, 2)                                                     \
    X(dt, lay, BT, 64, 64, 32, 32, 32, 3, 4)
#define LT_GEMM_WG_CONFIGS(X, dt, lay, BT)                                                         \
    X(dt, lay, BT, 128, 256, 64, 4, 1)                                                             \
    X(dt, lay, BT, 256, 128, 64, 4, 1)                                                             \
    X(dt, lay, BT, 128, 128, 64, 3, 2)
/* Dynamic shared memory of a tensor-core tile in bytes: ST stages of a BM x BK and a BK x BN tile of
 * 2-byte elements; wgmma adds 1024 (the kernel aligns its stages to 1024 bytes). */
#define LT_GEMM_SMEM_TC(BM, BN, BK, ST) ((ST) * ((BM) + (BN)) * (BK) * 2)
#define LT_GEMM_SMEM_WG(BM, BN, BK, ST) (LT_GEMM_SMEM_TC(BM, BN, BK, ST) + 1024)
/* ... of the compiled models' big tile entries (cuda_gemm.h lt_cuda_mm_*_wg*, _128x256; BK 64 for
 * wgmma, 32 for mma.sync) and of the 256x128 convolution tile (cuda_conv.h, BK 32), which the
 * lowering records on the kernel (lt_kernel.dyn_shared) */
#define LT_MM_DYN_SMEM_WG(BM, BN, ST) LT_GEMM_SMEM_WG(BM, BN, 64, ST)
#define LT_MM_DYN_SMEM_TC(BM, BN, ST) LT_GEMM_SMEM_TC(BM, BN, 32, ST)
#define LT_CONV_DYN_SMEM(BM, BN, ST) LT_GEMM_SMEM_TC(BM, BN, 32, ST)
/* The skinny GEMM tiles (cuda_gemm.h lt_cuda_mm_*_skinny for few rows, _tall for few columns; 256
 * threads): the small dim x the large one a tile, the slices of K its threads split, and the least K
 * the lowering gives them (below it most slices are idle; a tall product's alternative, SIMT tiles
 * of 32 rows, is worse down to a K of one warp) */
#define LT_SKINNY_MR 8
#define LT_SKINNY_BN 8
#define LT_SKINNY_KS 32
#define LT_SKINNY_MIN_K 256
#define LT_TALL_MIN_K 32

#endif
