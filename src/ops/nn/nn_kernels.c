/* nn_kernels.c — the nn family's dense kernels (GEMM, convolution, transposed convolution, col2im)
 * for float, double and uint64 (exact wrapping integer arithmetic), instantiated from
 * nn_kernels_tmpl.h with 16-byte GNU vectors so the inner loops are SIMD at -O2 on any target. */
#include "nn_impl.h"

#include <string.h>

typedef float nn_vf32 __attribute__((vector_size(16)));
typedef double nn_vf64 __attribute__((vector_size(16)));
typedef uint64_t nn_vu64 __attribute__((vector_size(16)));

#define NN_T float
#define NN_V nn_vf32
#define NN_VW 4
#define NN_FN(name) name##_f32
#include "nn_kernels_tmpl.h"
#undef NN_T
#undef NN_V
#undef NN_VW
#undef NN_FN

#define NN_T double
#define NN_V nn_vf64
#define NN_VW 2
#define NN_FN(name) name##_f64
#include "nn_kernels_tmpl.h"
#undef NN_T
#undef NN_V
#undef NN_VW
#undef NN_FN

#define NN_T uint64_t
#define NN_V nn_vu64
#define NN_VW 2
#define NN_FN(name) name##_u64
#include "nn_kernels_tmpl.h"
#undef NN_T
#undef NN_V
#undef NN_VW
#undef NN_FN

float nn_dot_f32(int64_t n, const float *a, const float *b) {
    nn_vf32 s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        nn_vf32 a0, a1, b0, b1;
        memcpy(&a0, a + i, 16);
        memcpy(&a1, a + i + 4, 16);
        memcpy(&b0, b + i, 16);
        memcpy(&b1, b + i + 4, 16);
        s0 += a0 * b0;
        s1 += a1 * b1;
    }
    s0 += s1;
    float s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}
