/* expand_contrib.h — private to the expand_contrib pass (expand_contrib.c: the pass, small ops, norms,
 * MatMulNBits, rotary; expand_contrib_attn.c: the attention ops; expand_contrib_quant.c: the quantized
 * ops and EmbedLayerNormalization): a builder that places new standard
 * ops (with the opset their semantics are written for) before the node being rewritten. */
#ifndef LT_EXPAND_CONTRIB_H
#define LT_EXPAND_CONTRIB_H

#include "util.h"

typedef struct xc {
    lt_ctx *ctx;
    lt_graph *g;
    lt_node *at;   /* new nodes go before it */
    char hint[96]; /* names of new values */
} xc;

/* A node of op (domain "", its opset fixed: Gelu 20, RMSNormalization 23, else 17) before b->at;
 * xc_done infers it and gives its first output. */
lt_status xc_node(xc *b, const char *op, int n_in, lt_value *const *in, int n_out, lt_node **out);
lt_status xc_done(xc *b, lt_node *n, lt_value **out);
lt_status xc_op(xc *b, const char *op, int n_in, lt_value *const *in, lt_value **out);
lt_status xc_op2(xc *b, const char *op, lt_value *x, lt_value *y, lt_value **out);
lt_status xc_op_int(xc *b, const char *op, lt_value *x, const char *attr, int64_t v, lt_value **out);
/* Constants: a tensor of dtype dt from doubles, a scalar, a 1-D int64 tensor. */
lt_status xc_const(xc *b, lt_dtype dt, int rank, const int64_t *dims, const double *v, lt_value **out);
lt_status xc_scalar(xc *b, lt_dtype dt, double v, lt_value **out);
lt_status xc_ints(xc *b, int n, const int64_t *v, lt_value **out);
lt_status xc_reshape(xc *b, lt_value *x, int rank, const int64_t *dims, lt_value **out);
lt_status xc_transpose(xc *b, lt_value *x, int rank, const int *perm, lt_value **out); /* identity: x */
lt_status xc_slice(xc *b, lt_value *x, int64_t axis, int64_t start, int64_t end, lt_value **out);
lt_status xc_concat(xc *b, int n, lt_value *const *in, int64_t axis, lt_value **out);
lt_status xc_unsqueeze(xc *b, lt_value *x, int64_t axis, lt_value **out);
lt_status xc_mul_scalar(xc *b, lt_value *x, double v, lt_value **out); /* v == 1: x */
lt_status xc_to_float(xc *b, lt_value *x, lt_value **out);
/* Output k of n becomes v (names kept; n goes once none of its outputs is read). */
lt_status xc_forward(xc *b, lt_node *n, int k, lt_value *v, bool *changed);
bool xc_static(const lt_value *v, int *rank, int64_t *dims);
/* Rotary embedding of x [.., H] (dims xd): its first R dims rotated by cos c and sin s ([.., R/2],
 * broadcast against x's leading dims), in halves or interleaved pairs; the rest kept. */
lt_status xc_rotate_head(xc *b, lt_value *x, int rank, const int64_t *xd, int64_t R, bool interleaved, lt_value *c,
                         lt_value *s, lt_value **out);

/* expand_contrib_attn.c: Attention, MultiHeadAttention, GroupQueryAttention (other ops: left alone). */
lt_status xc_attention(xc *b, lt_node *n, bool *changed);
/* expand_contrib_quant.c: DynamicQuantizeLSTM, DynamicQuantizeMatMul, MatMulIntegerToFloat,
 * EmbedLayerNormalization (other ops: left alone). */
lt_status xc_quant(xc *b, lt_node *n, bool *changed);

#endif
