/* nn_impl.h — private interface between the nn family's files (nn*.c); not for other modules.
 *
 * nn.c          the family table, shared helpers (window geometry, dtype buffers, shape inference)
 * nn_kernels.c  the dense numeric kernels (GEMM, im2col/col2im, convolution) instantiated from
 *               nn_kernels_tmpl.h for float, double and uint64 (wrapping integer arithmetic)
 * nn_conv.c     Conv, ConvInteger, QLinearConv, ConvTranspose, DeformConv, Col2Im
 * nn_pool.c     AveragePool, MaxPool, LpPool, the Global pools, MaxUnpool
 * nn_matmul.c   MatMul, MatMulInteger, QLinearMatMul, Gemm, Det
 * nn_quant.c    QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
 * nn_einsum.c   Einsum
 * Every eval hook validates shapes, attributes and indices before touching data; the kernels assume
 * valid geometry (they are only called with the checked nn_geom below). The shape and attribute rules
 * of an op live in one function (conv_check, pool_check, mm_check, gemm_check, ...) over dims that
 * may be unknown (-1), called by both its infer hook and its eval hook, so shape inference rejects
 * what eval would and the compiled path (which trusts inferred shapes) reports the same error.
 */
#ifndef LT_NN_IMPL_H
#define LT_NN_IMPL_H

#include "../ops.h"

#define NN_MAX_SP (LT_MAX_RANK - 2) /* spatial dims of a conv/pool input */

typedef enum nn_autopad { NN_PAD_NOTSET, NN_PAD_SAME_UPPER, NN_PAD_SAME_LOWER, NN_PAD_VALID } nn_autopad;

/* Geometry of a sliding window over nsp spatial dims: input positions i map to output positions o
 * by i = o*s - pb + kk*d (conv/pool), or the reverse (transposed conv, col2im). Unknown sizes are -1
 * (shape inference only). */
typedef struct nn_geom {
    int nsp;
    int64_t in[NN_MAX_SP], k[NN_MAX_SP], s[NN_MAX_SP], d[NN_MAX_SP];
    int64_t pb[NN_MAX_SP], pe[NN_MAX_SP], out[NN_MAX_SP];
} nn_geom;

/* ---- geometry (nn.c): return false with a message in err ---- */
bool nn_parse_autopad(const lt_node *n, nn_autopad *ap, char *err, size_t errn);
/* Read kernel_shape (or take `kernel` when the attribute is absent; NULL = required attribute),
 * strides, dilations and pads for nsp spatial dims, check them, set g->in from `in`, and compute the
 * output size and effective pads. pool: apply ceil_mode, and explicit pads must be smaller than the
 * kernel (onnxruntime's rule); conv otherwise. An output size below 1 is an error, and all window
 * arithmetic is overflow-checked. Unknown sizes (-1, shape inference) skip the rules they take part
 * in. Shape inference and eval hooks both call it (the checks they share). */
bool nn_geom_init(const lt_node *n, int nsp, const int64_t *in, const int64_t *kernel, bool pool,
                  nn_geom *g, char *err, size_t errn);
/* Read strides, dilations, pads (no kernel attribute) with defaults for nsp dims. */
bool nn_geom_attrs(const lt_node *n, int nsp, nn_geom *g, char *err, size_t errn);
/* (k-1)*d+1 with overflow check. */
bool nn_span(int64_t k, int64_t d, int64_t *out);

/* ---- element buffers (nn.c) ---- */
/* A float32 view of a float-class tensor: the data itself for FLOAT, else a converted copy (*owned
 * set, free with lt_mem_free). */
lt_status nn_f32_view(lt_eval *ev, const lt_node *n, const lt_tensor *t, const float **out, float **owned);
/* All elements as double / as uint64 (two's complement of the int64 value for signed types). */
lt_status nn_f64_copy(lt_eval *ev, const lt_node *n, const lt_tensor *t, double **out);
lt_status nn_u64_copy(lt_eval *ev, const lt_node *n, const lt_tensor *t, uint64_t **out);
void *nn_alloc(lt_eval *ev, const lt_node *n, int64_t count, size_t elem, const char *what);
/* Store a float/double buffer into a tensor of any numeric dtype (rounding as lt_store_f64). */
void nn_store_f32(lt_tensor *t, const float *v);
void nn_store_f64(lt_tensor *t, const double *v);
/* Round v as if it were computed in dtype dt (float, float16, bfloat16; double: unchanged). */
double nn_round_to(lt_dtype dt, double v);
bool nn_is_float(lt_dtype dt); /* float, double, float16, bfloat16 */

/* ---- shape inference helpers (nn.c) ---- */
/* Rank and dims (value -1 unknown) of input i's tensor type; false when the type is unknown. */
bool nn_in_shape(const lt_node *n, int i, int *rank, int64_t *dims);
lt_dtype nn_in_dtype(const lt_node *n, int i);
/* Dim `axis` of input i's type ({-1, NULL} when unknown). */
lt_dim nn_in_dim(const lt_node *n, int i, int axis);
/* Set output i from int64 dims (-1 unknown), taking s0/s1 (symbolic dims) for unknown dims 0 and 1. */
lt_status nn_infer_out(lt_infer *ic, lt_node *n, int i, lt_dtype dt, int rank, const int64_t *dims, lt_dim s0,
                       lt_dim s1);
/* Read up to max ints from constant input i (false if not constant or too long). */
bool nn_const_ints(const lt_node *n, int i, int64_t *buf, int max, int *count);

/* ---- kernels (nn_kernels.c) ---- */
/* C[M,N] (+)= A[M,K] * B[K,N]; A element (i,k) at A[i*ars + k*acs]; B, C row-major with row strides
 * ldb, ldc. acc: add to C, else overwrite. */
void nn_gemm_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs,
                 const float *B, int64_t ldb, float *C, int64_t ldc, bool acc);
void nn_gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t ars, int64_t acs,
                 const double *B, int64_t ldb, double *C, int64_t ldc, bool acc);
void nn_gemm_u64(int64_t M, int64_t N, int64_t K, const uint64_t *A, int64_t ars, int64_t acs,
                 const uint64_t *B, int64_t ldb, uint64_t *C, int64_t ldc, bool acc);
/* dot product of n contiguous floats */
float nn_dot_f32(int64_t n, const float *a, const float *b);
/* y[N,M,out] = conv(x[N,C,in], w[M,C/group,k]) (+ bias[M]); false when scratch memory runs out. */
bool nn_conv_f32(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const float *x,
                 const float *w, const float *bias, float *y);
bool nn_conv_f64(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const double *x,
                 const double *w, const double *bias, double *y);
bool nn_conv_u64(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const uint64_t *x,
                 const uint64_t *w, const uint64_t *bias, uint64_t *y);
/* y[N,M,out] = convtranspose(x[N,C,in], w[C,M/group,k]) (+ bias[M]); g->in: x spatial, g->out: y. */
bool nn_convt_f32(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const float *x,
                  const float *w, const float *bias, float *y);
bool nn_convt_f64(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const double *x,
                  const double *w, const double *bias, double *y);
bool nn_convt_u64(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const uint64_t *x,
                  const uint64_t *w, const uint64_t *bias, uint64_t *y);
/* img[rows, out] += scatter of col[rows*K, P(in)] (rows channels, K = prod(k)); g->in: the block
 * grid, g->out: the image. */
void nn_col2im_f32(const nn_geom *g, int64_t rows, const float *col, float *img);
void nn_col2im_f64(const nn_geom *g, int64_t rows, const double *col, double *img);
void nn_col2im_u64(const nn_geom *g, int64_t rows, const uint64_t *col, uint64_t *img);

/* ---- hooks ---- */
#define NN_HOOKS(name)                                                                             \
    lt_status nn_infer_##name(lt_infer *ic, lt_node *n);                                           \
    lt_status nn_eval_##name(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
NN_HOOKS(Conv)
NN_HOOKS(ConvInteger)
NN_HOOKS(QLinearConv)
NN_HOOKS(ConvTranspose)
NN_HOOKS(DeformConv)
NN_HOOKS(Col2Im)
NN_HOOKS(AveragePool)
NN_HOOKS(MaxPool)
NN_HOOKS(LpPool)
NN_HOOKS(GlobalPool)
NN_HOOKS(MaxUnpool)
NN_HOOKS(MatMul)
NN_HOOKS(MatMulInteger)
NN_HOOKS(QLinearMatMul)
NN_HOOKS(Gemm)
NN_HOOKS(Det)
NN_HOOKS(QuantizeLinear)
NN_HOOKS(DequantizeLinear)
NN_HOOKS(DynamicQuantizeLinear)
NN_HOOKS(Einsum)
#undef NN_HOOKS

#endif
