/* target.h — what the compiler may assume about the machine it compiles for, built once per compile
 * by the backend (lt_backend_vtbl.target) and asked, never re-derived, by everything above
 * src/backend: the graph passes, fusion, lowering, default schedules, code generation, the runtime
 * and the tools. Nothing outside src/backend branches on which target it is (its name is for
 * messages only): a pass or lowering that needs something of the machine reads a capability here.
 *
 * Construction: the backend's `target` hook fills an lt_target from the options (and, for a device
 * backend, from the opened device when there is one: the CUDA target from the device's compute
 * capability, else from options.arch for a compile that only emits source). lt_target_host fills
 * the host CPU's fields (SIMD width, caches, memory, threads) that every backend starts from.
 *
 * Threads: options.threads 0 means "the default" everywhere: at run time the OpenMP runtime's own
 * count (the plan and module keep 0), at compile time every online CPU (lt_target_threads), which is
 * the most the run-time default can be and what per-thread scratch is sized for. lt_target.threads
 * is that resolved count, >= 1; lt_target.threads_requested is the option as given (0: default).
 * Entry points: lt_target_host, lt_target_threads, lt_target_host_lanes, lt_target_dtype_ok,
 * lt_target_print.
 */
#ifndef LT_TARGET_H
#define LT_TARGET_H

#include "../base/base.h"
#include "../codegen/lang.h"

typedef struct lt_target {
    const char *name;            /* the backend's name: for messages only, never compared */
    const lt_lang *lang;         /* the language table the emitter writes kernels with */
    char arch[32];               /* architecture: "sm_90a" (GPU), "x86_64" / "aarch64" (CPU); "" unknown */
    char device_name[128];       /* "NVIDIA H100 80GB HBM3", or "" */
    const char *source_ext;      /* file extension of the generated translation unit: "c", "cu" */

    /* code generation */
    int vector_lanes;            /* f32 SIMD lanes kernels are scheduled for (16 AVX-512, 8 AVX2, 4) */
    bool gpu_blocks;             /* kernels bind thread blocks (a GPU grid) instead of parallel loops */
    int warp_size;               /* GPU: threads of a warp (0 on a CPU) */
    int max_threads_per_block;   /* GPU: the largest block (0 on a CPU) */
    int64_t shared_mem_per_block; /* GPU: shared memory one block may use, bytes (0 unknown / CPU) */
    int sm_count;                /* GPU: streaming multiprocessors (0 unknown / CPU) */
    bool wgmma;                  /* GPU: Hopper tensor cores through wgmma (the sm_90a tile entries) */
    bool microkernels;           /* kernels may call the prelude's GEMM / conv microkernels */
    uint32_t dtypes;             /* bit d set: the language can store lt_dtype d (lt_target_dtype_ok) */

    /* machine */
    int threads;                 /* resolved thread count, >= 1 (see the header comment) */
    int threads_requested;       /* the option as given: 0 = the default */
    int64_t cache_l1, cache_l2, cache_l3; /* data cache bytes per level (0 where unknown) */
    int64_t memory_bytes;        /* host memory (CPU) or device memory (GPU); 0 unknown */

    /* what the rest of the compiler does for this target */
    bool host_memory;            /* buffers are host memory the runtime may read and write */
    bool runs_loop_ir;           /* the backend runs Loop IR itself (no source unless asked) */
    bool tune_db;                /* tuned schedules and passes of the tuning database apply */
    bool layout_nchwc;           /* the blocked NCHWc layout pass may rewrite convolutions */
    bool narrow_float_gemm;      /* GEMM and convolution kernels take float16 / bfloat16 operands (else
                                  * the widen_gemm pass computes them in float32) */
    bool int8_gemm;              /* MatMulInteger and ConvInteger compile to exact 8-bit integer kernels
                                  * (CPUs: the prelude's gemm_i8.h); else the expand_quant pass computes
                                  * the integer products as exact float chunks */
} lt_target;

/* What a target is built from (the compile's options). */
typedef struct lt_target_options {
    int threads;                 /* 0: the default */
    int vector_lanes;            /* 0: the host CPU's (lt_target_host_lanes) */
    const char *arch;            /* GPU: the architecture to build for (NULL: the device's) */
    bool no_microkernels;        /* plain loops for GEMM / conv even where microkernels exist */
} lt_target_options;

/* The host CPU's fields: lang C, SIMD width, caches, memory, threads, arch; GPU fields zero and
 * every capability on (a backend's constructor turns off what it lacks). */
void lt_target_host(const lt_target_options *opt, lt_target *t);
/* The compile-time thread count for a request: threads if > 0, else the online CPUs (1..256). */
int lt_target_threads(int threads);
/* The CPU's f32 SIMD width in lanes: 16 with AVX-512F, 8 with AVX2, 4 otherwise. */
int lt_target_host_lanes(void);
/* The dtype mask of a language table (the dtypes it has a storage type for). */
uint32_t lt_target_lang_dtypes(const lt_lang *lang);
bool lt_target_dtype_ok(const lt_target *t, lt_dtype d);
/* A few lines describing the target (for reports and --help). */
void lt_target_print(const lt_target *t, lt_strbuf *out);

#endif
