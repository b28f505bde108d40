/* lang_base.h — the base language table: the C target's entries as one designated-initializer list
 * (LT_LANG_BASE), from which every target table is derived. Included by the lang_<target>.c files only.
 *
 * lang_c.c is exactly this list. Another target's table is this list followed by its differences
 * (lang_cuda.c): in an initializer a later designator overrides an earlier one for the same field or
 * array element (C11 6.7.9p19; the rest of an array given earlier is kept), so a target states only
 * what it does differently, and an entry common to the targets is written once. A new target
 * (OpenCL, Metal) is the same kind of small delta. Overriding is the point, so a derived table's file
 * turns off -Woverride-init (LT_LANG_DERIVE_BEGIN / _END around its definition).
 *
 * The C entries: GNU C11 for gcc/clang, OpenMP `parallel for` for PARALLEL loops (thread count from
 * the module's lathe_set_threads), `omp simd` for VECTORIZED loops, `GCC unroll` for UNROLLED ones,
 * GCC vector extensions for lanes > 1; float exp/log/tanh/erf from the prelude's vectorizable
 * versions (vmath.h, a few ulp), other math from libm (no -ffast-math: results stay within 1e-4 of
 * the reference), prelude helpers for everything with ONNX-specific semantics. LOCAL and SHARED
 * buffers live on the stack of the thread that runs the block.
 */
#ifndef LT_LANG_BASE_H
#define LT_LANG_BASE_H

#include "lang.h"

#define LT_LANG_BASE                                                                                       \
    .name = "c",                                                                                           \
    .build_note = "cc -O3 -march=native -fopenmp -fPIC -shared -std=gnu11 -fno-math-errno "                \
                  "-fno-trapping-math -fwrapv "                                                            \
                  "(or plain cc -O2 -fwrapv: one thread, portable SIMD)",                                  \
    /* built without -fopenmp, the omp pragmas are meant to be ignored (one thread, plain loops): say      \
     * so, so that -Wall -Werror builds (the standalone export) do not fail on them */                    \
    .preamble = "#if !defined(_OPENMP) && defined(__GNUC__)\n"                                             \
                "#pragma GCC diagnostic ignored \"-Wunknown-pragmas\"\n"                                   \
                "#endif\n",                                                                                \
    .prelude = (const char *const[]){"core.h", NULL},                                                      \
    .prelude_optional = (const char *const[]){"*.h", NULL},                                                \
    .prelude_exclude = (const char *const[]){"cuda*", "common.h", NULL},                                   \
    .kernel_prefix = "void",                                                                               \
    .args_array = true,                                                                                    \
    .kernel_table = true,                                                                                  \
    .type_names = {                                                                                        \
        [LT_FLOAT] = "float", [LT_DOUBLE] = "double", [LT_FLOAT16] = "uint16_t",                           \
        [LT_BFLOAT16] = "uint16_t", [LT_INT8] = "int8_t", [LT_INT16] = "int16_t",                          \
        [LT_INT32] = "int32_t", [LT_INT64] = "int64_t", [LT_UINT8] = "uint8_t",                            \
        [LT_UINT16] = "uint16_t", [LT_UINT32] = "uint32_t", [LT_UINT64] = "uint64_t",                      \
        [LT_BOOL] = "uint8_t",                                                                             \
    },                                                                                                     \
    .bool_compute = "int",                                                                                 \
    .f32_suffix = "f",                                                                                     \
    .math_f32 = {                                                                                          \
        [LT_LOP_ABS] = "fabsf", [LT_LOP_EXP] = "lt_exp_f32", [LT_LOP_LOG] = "lt_log_f32",                  \
        [LT_LOP_SQRT] = "sqrtf", [LT_LOP_TANH] = "lt_tanh_f32", [LT_LOP_ERF] = "lt_erf_f32",               \
        [LT_LOP_FLOOR] = "floorf",                                                                         \
        [LT_LOP_CEIL] = "ceilf", [LT_LOP_ROUND] = "rintf", [LT_LOP_SIN] = "sinf",                          \
        [LT_LOP_COS] = "cosf", [LT_LOP_TAN] = "tanf", [LT_LOP_ASIN] = "asinf",                             \
        [LT_LOP_ACOS] = "acosf", [LT_LOP_ATAN] = "atanf", [LT_LOP_SINH] = "sinhf",                         \
        [LT_LOP_COSH] = "coshf", [LT_LOP_ASINH] = "asinhf", [LT_LOP_ACOSH] = "acoshf",                     \
        [LT_LOP_ATANH] = "atanhf", [LT_LOP_ISNAN] = "isnan", [LT_LOP_ISINF] = "isinf",                     \
        [LT_LOP_FMOD] = "fmodf", [LT_LOP_POW] = "powf",                                                    \
    },                                                                                                     \
    .math_f64 = {                                                                                          \
        [LT_LOP_ABS] = "fabs", [LT_LOP_EXP] = "exp", [LT_LOP_LOG] = "log", [LT_LOP_SQRT] = "sqrt",         \
        [LT_LOP_TANH] = "tanh", [LT_LOP_ERF] = "erf", [LT_LOP_FLOOR] = "floor",                            \
        [LT_LOP_CEIL] = "ceil", [LT_LOP_ROUND] = "rint", [LT_LOP_SIN] = "sin",                             \
        [LT_LOP_COS] = "cos", [LT_LOP_TAN] = "tan", [LT_LOP_ASIN] = "asin",                                \
        [LT_LOP_ACOS] = "acos", [LT_LOP_ATAN] = "atan", [LT_LOP_SINH] = "sinh",                            \
        [LT_LOP_COSH] = "cosh", [LT_LOP_ASINH] = "asinh", [LT_LOP_ACOSH] = "acosh",                        \
        [LT_LOP_ATANH] = "atanh", [LT_LOP_ISNAN] = "isnan", [LT_LOP_ISINF] = "isinf",                      \
        [LT_LOP_FMOD] = "fmod", [LT_LOP_POW] = "pow",                                                      \
    },                                                                                                     \
    .parallel_pragma = "#pragma omp parallel for schedule(static) num_threads(lt_nthreads())",            \
    .simd_pragma = "#pragma omp simd",                                                                     \
    .simd_reduction_pragma = "#pragma omp simd reduction(%s:%s)",                                          \
    .unroll_pragma = "#pragma GCC unroll %d",                                                              \
    .vector_types = true,                                                                                  \
    .shared_qualifier = "",                                                                                \
    .local_attr = " __attribute__((aligned(64)))",                                                         \
    .max_local_bytes = 256 * 1024,                                                                         \
    .barrier = NULL

/* Around a derived table: its overrides of LT_LANG_BASE's entries are intended. */
#define LT_LANG_DERIVE_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Woverride-init\"")
#define LT_LANG_DERIVE_END _Pragma("GCC diagnostic pop")

#endif
