/* shape_impl.h — private to the shape family (shape.c, shape_util.c, shape_index.c,
 * shape_pad.c, shape_unique.c): the data-movement helpers they share and the hooks that shape.c
 * registers in lt_ops_shape[].
 *
 * All data movement is dtype-generic: elements are moved as lt_dtype_size() bytes, except STRING
 * elements, which are duplicated with lt_tensor_set_string (so every copy can fail with NOMEM and
 * returns a status). Offsets and strides count elements.
 */
#ifndef LT_SHAPE_IMPL_H
#define LT_SHAPE_IMPL_H

#include "../ops.h"

/* Rank of the views the strided copy accepts (Tile views a rank-r tensor as rank 2r). */
#define LT_SHP_MAX_VIEW (2 * LT_MAX_RANK + 2)

/* Copy n contiguous elements src[si..si+n) to dst[di..di+n) (same dtype). */
lt_status lt_shp_copy(lt_ctx *ctx, lt_tensor *dst, int64_t di, const lt_tensor *src, int64_t si, int64_t n);
/* Copy element si of src into dst[di..di+n) (same dtype). */
lt_status lt_shp_fill(lt_ctx *ctx, lt_tensor *dst, int64_t di, int64_t n, const lt_tensor *src, int64_t si);
/* For every multi-index x over dims[0..rank): dst[doff + x.dstr] = src[soff + x.sstr].
 * The caller guarantees every offset reached is in bounds. rank 0 copies one element. */
lt_status lt_shp_strided_copy(lt_ctx *ctx, lt_tensor *dst, int64_t doff, const int64_t *dstr,
                              const lt_tensor *src, int64_t soff, const int64_t *sstr, int rank,
                              const int64_t *dims);
/* Row-major strides (elements) of dims. */
void lt_shp_strides(int rank, const int64_t *dims, int64_t *strides);
/* Whole-tensor copy with new dims (same numel): output i of the node. */
lt_status lt_shp_out_reshaped(lt_eval *ev, const lt_node *n, lt_datum **out, int i, const lt_tensor *x,
                              int rank, const int64_t *dims);

/* Integer list from input `idx` when present, else from attribute `attr` (older opsets take these
 * as attributes; a valid node never has both). *present false when neither is given. At most max
 * entries (error beyond). attr may be NULL. */
lt_status lt_shp_int_list(lt_eval *ev, const lt_node *n, lt_datum **in, int idx, const char *attr,
                          int64_t *buf, int max, int *count, bool *present);
/* Scalar integer from t (a 0-d or 1-element integer tensor); `what` names it in errors. */
lt_status lt_shp_scalar_int(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what, int64_t *v);
/* Normalize `count` axes in place against rank; error on out-of-range or repeated axes. */
lt_status lt_shp_norm_axes(lt_eval *ev, const lt_node *n, int64_t *axes, int count, int rank);
/* Read index `v` for a dimension of size dim: negative values count from the end; error naming
 * the node if outside [-dim, dim). */
lt_status lt_shp_index(lt_eval *ev, const lt_node *n, int64_t v, int64_t dim, const char *where, int64_t *out);

/* ---- checks shared by the infer and eval hooks ----
 * Each takes the context and the node, so one function states a rule for both hooks and the error
 * (lt_node_error) reads the same whether inference or the interpreter finds it. */
/* Normalize an axis in [-rank, rank) to [0, rank) ("axis A is out of range for rank R"). */
lt_status lt_shp_axis(lt_ctx *ctx, const lt_node *n, int64_t axis, int rank, int *out);
/* Normalize `count` axes in place against rank; error on out-of-range or repeated axes. */
lt_status lt_shp_axes(lt_ctx *ctx, const lt_node *n, int64_t *axes, int count, int rank);
/* Integer list from tensor t (input `idx` of the node, NULL when omitted) or else attribute `attr`:
 * the rules of lt_shp_int_list. */
lt_status lt_shp_list(lt_ctx *ctx, const lt_node *n, const lt_tensor *t, int idx, const char *attr, int64_t *buf,
                      int max, int *count, bool *present);
/* A value that must be one integer: shape (rank, dims) and dtype; `what` names it. */
lt_status lt_shp_scalar_type(lt_ctx *ctx, const lt_node *n, const char *what, int rank, const int64_t *dims,
                             lt_dtype dt);
/* Element count of dims, error naming `what` when it overflows int64. */
lt_status lt_shp_numel(lt_ctx *ctx, const lt_node *n, const char *what, int rank, const int64_t *dims,
                       int64_t *numel);

/* ---- infer helpers ---- */
/* Every dim of input i, when it is a tensor of known rank and all dims known: true and dims set. */
bool lt_shp_infer_static(const lt_node *n, int i, int *rank, int64_t *dims);
/* Constant input i for a check: true with *t NULL when the input is omitted, true with *t set when it
 * is a constant, false when it is present but computed (its value is unknown until run time). */
bool lt_shp_infer_const_opt(const lt_node *n, int i, const lt_tensor **t);
/* Constant integer list from input i (or attribute attr when the input is absent / old opset).
 * Returns true when known. */
bool lt_shp_infer_ints(const lt_node *n, int i, const char *attr, int64_t *buf, int max, int *count);
/* Tensor type of input i with known rank, or NULL. */
const lt_type *lt_shp_infer_ranked(const lt_node *n, int i);
/* Dim d of a ranked type ({-1,NULL} when dims are unknown). */
lt_dim lt_shp_dim(const lt_type *t, int d);
/* Input i's element dtype (UNDEFINED if unknown). */
lt_dtype lt_shp_infer_dtype(const lt_node *n, int i);

/* ---- hooks (defined in shape_index.c, shape_pad.c, shape_unique.c) ---- */
#define LT_SHP_HOOKS(name)                                                                          \
    lt_status lt_shp_infer_##name(lt_infer *ic, lt_node *n);                                        \
    lt_status lt_shp_eval_##name(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
LT_SHP_HOOKS(Gather)
LT_SHP_HOOKS(GatherElements)
LT_SHP_HOOKS(GatherND)
LT_SHP_HOOKS(ScatterElements)
LT_SHP_HOOKS(ScatterND)
LT_SHP_HOOKS(TensorScatter)
LT_SHP_HOOKS(Compress)
LT_SHP_HOOKS(NonZero)
/* NonZero's two halves (shape_index.c), shared with NonZeroPadded (shape_split.c): the count of
 * nonzero elements of x, and their coordinates written as [rank, nnz] (coordinate k of the c-th
 * nonzero element, in row-major order, at o[k * nnz + c]). */
int64_t lt_shp_nonzero_count(const lt_tensor *x);
void lt_shp_nonzero_fill(const lt_tensor *x, int64_t nnz, int64_t *o);
LT_SHP_HOOKS(OneHot)
LT_SHP_HOOKS(Pad)
LT_SHP_HOOKS(CenterCropPad)
LT_SHP_HOOKS(Slice)
LT_SHP_HOOKS(DepthToSpace)
LT_SHP_HOOKS(SpaceToDepth)
LT_SHP_HOOKS(ReverseSequence)
LT_SHP_HOOKS(Unique)
#undef LT_SHP_HOOKS

#endif
