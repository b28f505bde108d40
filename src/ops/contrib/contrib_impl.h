/* contrib_impl.h — private to the contrib family (src/ops/contrib/): onnxruntime's com.microsoft ops
 * (and its ai.onnx SimplifiedLayerNormalization).
 *
 * Every op of the family is one ct_op: a check function holding all of the op's shape and attribute
 * rules over dims that may be unknown (-1), shared by the infer hook (types from input types and
 * constant inputs) and the eval hook, and a compute function, the reference implementation. The
 * family's generic hooks (contrib.c) drive both: eval loads every input into doubles (row-major),
 * runs the check to get the output shapes and dtypes, allocates the outputs as doubles, computes,
 * and stores each output in its dtype. Reference code stays plain loops in double precision.
 */
#ifndef LT_CONTRIB_IMPL_H
#define LT_CONTRIB_IMPL_H

#include "../ops.h"

#define CT_ABSENT (-2) /* ct_arg.rank of an omitted input, ct_out.rank of an output not made */
#define CT_MAX_IN 14
#define CT_MAX_OUT 4

typedef struct ct_arg {
    int rank;               /* CT_ABSENT: omitted; -1: rank unknown (infer only) */
    int64_t d[LT_MAX_RANK]; /* -1 where unknown (infer only) */
    lt_dtype dt;            /* LT_UNDEFINED when unknown */
    const lt_tensor *c;     /* the value when known: a constant at inference, the input at eval */
    double *v;              /* eval: the values in row-major order (NULL at inference) */
    int64_t numel;          /* eval: element count */
} ct_arg;

typedef struct ct_out {
    int rank;               /* set by the check: CT_ABSENT when the op leaves this output empty */
    int64_t d[LT_MAX_RANK]; /* -1 where unknown */
    lt_dtype dt;
    double *v;              /* eval: zero-filled values for compute to write */
    int64_t numel;
} ct_out;

/* The check: every rule of the op on in[0..CT_MAX_IN) (omitted: rank CT_ABSENT) and its attributes;
 * fills out[0..n->n_out) (shape with -1 where unknown, dtype). Errors name the node (lt_node_error). */
typedef lt_status (*ct_check_fn)(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out);
/* The reference computation on checked inputs (static shapes, values loaded). */
typedef lt_status (*ct_compute_fn)(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out);

typedef struct ct_op {
    int op;
    int min_in, max_in; /* inputs present at least / at most */
    ct_check_fn check;
    ct_compute_fn compute;
} ct_op;

/* The ops, one table per file (each ended by an entry with op 0). */
extern const ct_op ct_ops_act[], ct_ops_norm[], ct_ops_matmul[], ct_ops_rotary[], ct_ops_attention[], ct_ops_quant[];

/* Generic hooks for lt_ops_contrib. */
lt_status ct_infer(lt_infer *ic, lt_node *n);
lt_status ct_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
/* DynamicQuantizeLSTM's own hooks (contrib_qlstm.c): the LSTM reference on dequantized weights. */
lt_status ct_qlstm_infer(lt_infer *ic, lt_node *n);
lt_status ct_qlstm_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- helpers for checks (contrib.c) ---- */
bool ct_present(const ct_arg *a);
bool ct_is_float(lt_dtype dt); /* float, float16, bfloat16, double */
/* in[i] is a float tensor of dtype `like` (when both known); what names it in the message. */
lt_status ct_want_float(lt_ctx *ctx, const lt_node *n, const ct_arg *a, lt_dtype like, const char *what);
/* in[i] has rank r (when known). */
lt_status ct_want_rank(lt_ctx *ctx, const lt_node *n, const ct_arg *a, int r, const char *what);
/* Dim a == b unless one is unknown. */
lt_status ct_want_dim(lt_ctx *ctx, const lt_node *n, int64_t a, int64_t b, const char *what);
/* A 1-D tensor of `len` entries (len -1: any). */
lt_status ct_want_vec(lt_ctx *ctx, const lt_node *n, const ct_arg *a, int64_t len, const char *what);
/* out = shape and dtype of a. */
void ct_out_like(ct_out *o, const ct_arg *a, lt_dtype dt);
void ct_out_set(ct_out *o, lt_dtype dt, int rank, const int64_t *d);
/* The element count of dims (-1 if any is unknown or it overflows). */
int64_t ct_numel(int rank, const int64_t *d);
/* An integer attribute in [lo, hi], else an error naming it. */
lt_status ct_attr_int(lt_ctx *ctx, const lt_node *n, const char *name, int64_t dflt, int64_t lo, int64_t hi,
                      int64_t *out);

/* Every position of the constant pos (NULL: not known yet) in [0, max_pos); with span > 0 pos holds
 * the first of span consecutive positions (rotary's (1)-shaped position_ids). */
lt_status ct_check_positions(lt_ctx *ctx, const lt_node *n, const lt_tensor *pos, int64_t span, int64_t max_pos);

/* ---- numerics shared by the computes ---- */
/* C[b] = A[b] (M x K) * B[b] (K x N) for one matrix pair, accumulated in double. */
void ct_gemm(int64_t M, int64_t N, int64_t K, const double *A, const double *B, double *C);
double ct_gelu_erf(double x);
/* One head vector x (H values) rotated into y: its first R dims by the position's cos c and sin s
 * (R / 2 each), in halves or interleaved pairs (contrib_rotary.h); the rest copied. */
void ct_rotate(const double *x, double *y, int64_t H, int64_t R, const double *c, const double *s, bool interleaved);
double ct_gelu_tanh(double x);

#endif
