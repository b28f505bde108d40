/* tensor.h — run-time tensors and the values the interpreter passes between ops.
 *
 * lt_tensor: dtype, rank, dims, contiguous row-major data (layout rules in dtype.h). A tensor is
 * reference counted; ops treat inputs as read-only and create fresh outputs. `borrowed` data points
 * into memory the tensor does not own (the mapped model file, an arena) and is never freed.
 * lt_datum: what flows along a graph edge at run time: a tensor, a sequence of datums, an optional
 * (present or absent), or a map (ai.onnx.ml; keys and values are tensors).
 * Sizes are checked: creating a tensor whose byte size overflows or exceeds LT_TENSOR_MAX_BYTES fails
 * with LT_ERR_NOMEM and a message, never a crash.
 */
#ifndef LT_TENSOR_H
#define LT_TENSOR_H

#include "base.h"
#include "dtype.h"

#define LT_MAX_RANK 16
#define LT_TENSOR_MAX_BYTES ((int64_t)1 << 40)

typedef struct lt_tensor {
    int refs;
    lt_dtype dtype;
    int rank;
    int64_t dims[LT_MAX_RANK];
    int64_t numel;
    void *data;     /* never NULL (a zero-size tensor still has a 1-byte block) */
    bool borrowed;  /* data not owned */
} lt_tensor;

/* New tensor with zeroed data (strings: every element an allocated ""). */
lt_status lt_tensor_new(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, lt_tensor **out);
/* New scalar (rank 0) tensors. */
lt_status lt_tensor_scalar_f64(lt_ctx *ctx, lt_dtype dt, double v, lt_tensor **out);
lt_status lt_tensor_scalar_i64(lt_ctx *ctx, lt_dtype dt, int64_t v, lt_tensor **out);
/* A tensor viewing memory it does not own (data must outlive it and be aligned for dt). */
lt_status lt_tensor_borrow(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, void *data,
                           lt_tensor **out);
/* Deep copy (always owns its data). */
lt_status lt_tensor_copy(lt_ctx *ctx, const lt_tensor *t, lt_tensor **out);
/* Same data, new dims (numel must match): copies the data (reference interpreter simplicity). */
lt_status lt_tensor_reshape_copy(lt_ctx *ctx, const lt_tensor *t, int rank, const int64_t *dims,
                                 lt_tensor **out);
/* Replace string element i (copies s). */
lt_status lt_tensor_set_string(lt_ctx *ctx, lt_tensor *t, int64_t i, const char *s, size_t len);
lt_tensor *lt_tensor_retain(lt_tensor *t);
void lt_tensor_release(lt_tensor *t);
/* Bytes of the data block (numel * element size). */
int64_t lt_tensor_nbytes(const lt_tensor *t);
/* Row-major strides in elements. */
void lt_tensor_strides(const lt_tensor *t, int64_t *strides);
/* "float[2,3]" into buf. */
const char *lt_tensor_describe(const lt_tensor *t, char *buf, size_t n);
/* Shape string "[2,3]" into buf. */
const char *lt_shape_str(int rank, const int64_t *dims, char *buf, size_t n);

typedef enum lt_datum_kind {
    LT_DK_TENSOR,
    LT_DK_SEQUENCE,
    LT_DK_OPTIONAL,
    LT_DK_MAP
} lt_datum_kind;

typedef struct lt_datum {
    int refs;
    lt_datum_kind kind;
    lt_tensor *tensor;          /* TENSOR */
    int n, cap;                 /* SEQUENCE: items[0..n) */
    struct lt_datum **items;
    struct lt_datum *value;     /* OPTIONAL: NULL when absent */
    lt_tensor *keys, *values;   /* MAP */
    /* Element type of a SEQUENCE/OPTIONAL (for empty ones): dtype of the tensors inside (if known),
     * and whether the element is itself a sequence. */
    lt_dtype elem_dtype;
    bool elem_is_sequence;
} lt_datum;

/* Wrap a tensor (takes over the caller's reference; on failure releases it). */
lt_status lt_datum_tensor(lt_ctx *ctx, lt_tensor *t, lt_datum **out);
lt_status lt_datum_sequence(lt_ctx *ctx, lt_dtype elem_dtype, lt_datum **out);
/* Append to a sequence (takes over the item's reference; on failure releases it). */
lt_status lt_datum_seq_push(lt_ctx *ctx, lt_datum *seq, lt_datum *item);
/* Optional: value NULL means absent (takes over value's reference). */
lt_status lt_datum_optional(lt_ctx *ctx, lt_datum *value, lt_dtype elem_dtype, lt_datum **out);
lt_datum *lt_datum_retain(lt_datum *d);
void lt_datum_release(lt_datum *d);
const char *lt_datum_describe(const lt_datum *d, char *buf, size_t n);

#endif
