/* recurrent_impl.h — private to the recurrent family (recurrent*.c): the hooks defined outside
 * recurrent.c (which holds the family table) and the small helpers the files share.
 *
 * Numerics: the reference ops work in double, rounding through lt_rec_round where onnx's numpy
 * reference rounds to a narrower type (float32 / float16 arithmetic), so results match it closely.
 */
#ifndef LT_RECURRENT_IMPL_H
#define LT_RECURRENT_IMPL_H

#include "../ops.h"

/* ---- hooks (recurrent_attention.c) ---- */
lt_status lt_rec_attention_infer(lt_infer *ic, lt_node *n);
lt_status lt_rec_attention_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_rec_flex_infer(lt_infer *ic, lt_node *n);
lt_status lt_rec_flex_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- hooks (recurrent_seq.c) ---- */
lt_status lt_rec_rotary_infer(lt_infer *ic, lt_node *n);
lt_status lt_rec_rotary_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_rec_linattn_infer(lt_infer *ic, lt_node *n);
lt_status lt_rec_linattn_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_rec_cconv_infer(lt_infer *ic, lt_node *n);
lt_status lt_rec_cconv_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- helpers (recurrent.c) ---- */
/* Round v to the precision of dt (float, float16, bfloat16; double and others unchanged). */
double lt_rec_round(lt_dtype dt, double v);
/* The floating types these ops compute on: float, double, float16, bfloat16. */
bool lt_rec_is_float(lt_dtype dt);
/* Error unless t has a floating dtype (name: the input's role in the message). */
lt_status lt_rec_check_float(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *name);
/* Error unless t has rank `rank` (name: the input's role). */
lt_status lt_rec_check_rank(lt_eval *ev, const lt_node *n, const lt_tensor *t, int rank, const char *name);
/* New heap array of count doubles, zeroed (at least one element); error on overflow / OOM. */
lt_status lt_rec_alloc(lt_eval *ev, const lt_node *n, int64_t count, double **out);
/* Copy a floating tensor's elements into a new heap array of doubles (free with lt_mem_free). */
lt_status lt_rec_load(lt_eval *ev, const lt_node *n, const lt_tensor *t, double **out);

/* ---- infer helpers (recurrent.c) ---- */
/* Dim k of input i as a lt_dim ({-1, NULL} when unknown / the input or its rank unknown). */
lt_dim lt_rec_dim(const lt_node *n, int i, int k);
/* Rank of input i (-1 when unknown or not a tensor). */
int lt_rec_rank(const lt_node *n, int i);
/* Element type of input i (UNDEFINED when unknown). */
lt_dtype lt_rec_dtype(const lt_node *n, int i);
/* Dim arithmetic on possibly unknown dims (unknown in, unknown out; division must be exact). */
lt_dim lt_rec_dim_add(lt_dim a, lt_dim b);
lt_dim lt_rec_dim_mul(lt_dim a, int64_t m);
lt_dim lt_rec_dim_div(lt_dim a, int64_t d);
static inline lt_dim lt_rec_known(int64_t v) { return (lt_dim){v, NULL}; }
static inline lt_dim lt_rec_unknown(void) { return (lt_dim){-1, NULL}; }

#endif
