/* lang.h — a target language as data: what the shared emitter (emit.c) needs to know to write C or
 * CUDA from the same Loop IR. Two tables exist: lt_lang_c (lang_c.c) and lt_lang_cuda (lang_cuda.c),
 * both derived from one base list of entries (lang_base.h: the C target's): a target's table is the
 * base with its differences overriding it, so an entry the targets share is written once.
 *
 * Everything target-specific lives here: type names, float literal suffixes, math function names
 * per dtype, how each loop kind is rendered (pragmas, GPU indices), the kernel signature, how local
 * and shared buffers are declared, the barrier, and which prelude headers start a file. A new target
 * is a new table (the base plus its delta), not a new emitter. Tables are constant; to vary one
 * (CUDA fast math), copy it: `lt_lang l = lt_lang_cuda; l.fast_math = true;`.
 * Operators that both languages spell the same (+, <, ?:, ...) are not in the table. Math ops with a
 * NULL name fall back to the prelude helper named lt_<op>_<suffix> (lt_sigmoid_f32, lt_max_i64,
 * see prelude/common.h); integer ops always use those helpers.
 */
#ifndef LT_LANG_H
#define LT_LANG_H

#include "../loop/loop.h"

#define LT_LAUNCH_BOUNDS_MIN_THREADS 256 /* 65536 registers / 256 threads = 255, the most a thread has */

typedef struct lt_lang {
    const char *name;                     /* "c", "cuda" */
    const char *build_note;               /* how to build the file, for its header comment */
    const char *preamble;                 /* lines written before the prelude (NULL: none) */
    const char *const *prelude;           /* headers always pasted first, in order; NULL-ended */
    const char *const *prelude_optional;  /* fnmatch patterns of headers pasted when the module
                                             calls a function they define (microkernels); NULL-ended */
    const char *const *prelude_exclude;   /* patterns never pasted (the other target's headers) */

    /* kernels */
    const char *kernel_prefix;            /* "void" / "extern \"C\" __global__ void" */
    const char *launch_bounds;            /* printf format of the kernel's threads per block written
                                             after kernel_prefix ("__launch_bounds__(%lld)": the
                                             compiler keeps registers within what such a block may
                                             use), for blocks of more than
                                             LT_LAUNCH_BOUNDS_MIN_THREADS threads (smaller ones may
                                             use every register a thread can have: the bound would
                                             only change the compiler's heuristics); NULL: none */
    bool args_array;                      /* true: f(void *const *args); false: one param per buffer */
    bool kernel_table;                    /* emit lathe_kernels[] / lathe_n_kernels */

    /* types: storage type per dtype (NULL: the target cannot handle the dtype); float16 and
     * bfloat16 are stored as bits and computed in float through the prelude's conversions */
    const char *type_names[LT_DTYPE_COUNT];
    const char *bool_compute;             /* the type of a BOOL scalar local ("int") */
    const char *f32_suffix;               /* float literal suffix: "f" */

    /* math: function names by lt_lop for float and double operands (NULL: prelude helper) */
    const char *math_f32[LT_LOP_COUNT];
    const char *math_f64[LT_LOP_COUNT];
    const char *math_f32_fast[LT_LOP_COUNT]; /* used instead of math_f32 when fast_math (if set) */
    bool fast_math;

    /* loops */
    const char *parallel_pragma;          /* line before a PARALLEL loop; NULL: unsupported */
    const char *simd_pragma;              /* line before a VECTORIZED loop (NULL: none) */
    const char *simd_reduction_pragma;    /* printf format with (op, var) for a sum/product reduction */
    const char *unroll_pragma;            /* printf format with the unroll factor */
    const char *block_index[3];           /* GPU_BLOCK axis x/y/z; NULL: unsupported */
    const char *thread_index[3];          /* GPU_THREAD axis x/y/z */
    int64_t max_block_threads;            /* product of the block's thread extents (CUDA 1024) */
    bool vector_types;                    /* lanes > 1 through GCC vector extensions */
    bool vector_memory;                   /* VECTORIZED loops load/store whole vectors through the
                                             prelude's LT_COPY16/8/4 when the accesses allow (emit.c) */

    /* buffers */
    const char *shared_qualifier;         /* declaration prefix of SHARED buffers ("__shared__ ") */
    const char *local_attr;               /* suffix of LOCAL/SHARED array declarations */
    int64_t max_local_bytes;              /* larger LOCAL/SHARED buffers are an error */
    const char *barrier;                  /* BARRIER statement; NULL: emitted as a comment */
} lt_lang;

extern const lt_lang lt_lang_c;
extern const lt_lang lt_lang_cuda;

#endif
