/* core.h — the C target's prelude: the first thing in every generated C translation unit.
 *
 * Makes a generated file self-contained (it needs no lathe header to build): the standard headers,
 * the kernel table type, the thread-count hook, bit casts, GCC vector helpers for vectorized loads
 * and stores, vectorizable float math (vmath.h), and the shared helpers of common.h (narrow
 * floats, NaN-aware min/max, integer ops without undefined behaviour). Everything is `static`
 * except lathe_set_threads, so each TU includes the prelude once. Builds with
 * `-O3 -march=native -fopenmp` (the CPU backend) and with plain `cc -O2` (standalone export:
 * OpenMP pragmas are then ignored and the code runs on one thread). Exported per TU:
 *   const lt_kernel_desc lathe_kernels[]   (emitted after the kernels, ends with {0})
 *   const int lathe_n_kernels
 *   void lathe_set_threads(int n)          (n <= 0: the OpenMP default)
 */
#ifndef LT_PRELUDE_CORE_H
#define LT_PRELUDE_CORE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define LT_FN static inline __attribute__((unused))

LT_FN uint32_t lt_f2u_(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
LT_FN float lt_u2f_(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
LT_FN uint64_t lt_d2u_(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
LT_FN double lt_u2d_(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
#define LT_F2U(f) lt_f2u_(f)
#define LT_U2F(u) lt_u2f_(u)
#define LT_D2U(d) lt_d2u_(d)
#define LT_U2D(u) lt_u2d_(u)
#define LT_INF_F32 __builtin_inff()
#define LT_NAN_F32 __builtin_nanf("")
#define LT_INF_F64 __builtin_inf()
#define LT_NAN_F64 __builtin_nan("")

/* One entry per generated kernel; the table ends with an entry whose name is NULL. */
typedef struct lt_kernel_desc {
    const char *name;
    void (*fn)(void *const *args); /* args: buffer pointers, outputs first, then inputs, weights */
    int n_args;    /* buffers + run-time scalars */
    int n_scalars; /* the last n_scalars arguments are values, not pointers */
} lt_kernel_desc;

/* Threads used by the parallel loops of this module (0: the OpenMP default). In the CPU backend's
 * shared prelude library (LT_PRELUDE_LIBRARY) each call from a module passes that module's count,
 * kept per calling thread, so modules with different counts can share the library. */
#ifdef LT_PRELUDE_LIBRARY
static __thread int lt_threads_ = 0;
#else
static int lt_threads_ = 0;
void lathe_set_threads(int n) { lt_threads_ = n > 0 ? n : 0; }
#endif
LT_FN int lt_nthreads(void) {
#ifdef _OPENMP
    return lt_threads_ > 0 ? lt_threads_ : omp_get_max_threads();
#else
    return 1;
#endif
}

/* Unaligned vector load/store of a GCC vector type T (vectorized LOAD/STORE with lanes > 1). */
#define LT_VLOAD(T, p) ({ T lt_v_; memcpy(&lt_v_, (p), sizeof lt_v_); lt_v_; })
#define LT_VSTORE(p, v) do { __typeof__(v) lt_v_ = (v); memcpy((p), &lt_v_, sizeof lt_v_); } while (0)

#define LT_EXP_F32 lt_exp_f32
#include "vmath.h"
#include "common.h"

#endif
