/* elementwise_impl.h — private to the elementwise family (elementwise*.c): typed element accessors,
 * the broadcasting iterator, and the hooks the family's extra files export to the table in
 * elementwise.c.
 *
 * Accessors: an op picks a loader/storer once per tensor (lt_ew_ldf / lt_ew_stf / ...) and calls it
 * per element, instead of switching on the dtype per element. Float loaders return the exact value
 * as a double; integer loaders return the value as int64 (UINT64: the same bits, reinterpret as
 * uint64). Storers round (floats, as dtype.h's lt_store_f64) or wrap (integers, two's complement).
 *
 * Broadcasting: lt_ew_bc_init computes the numpy broadcast of up to LT_EW_MAXIN inputs and keeps one
 * running element offset per input; lt_ew_bc_next advances them in row-major output order.
 */
#ifndef LT_ELEMENTWISE_IMPL_H
#define LT_ELEMENTWISE_IMPL_H

#include "../ops.h"

typedef double (*lt_ew_ldf_fn)(const void *p, int64_t i);
typedef void (*lt_ew_stf_fn)(void *p, int64_t i, double v);
typedef int64_t (*lt_ew_ldi_fn)(const void *p, int64_t i);
typedef void (*lt_ew_sti_fn)(void *p, int64_t i, int64_t v);

/* Loader / storer for a dtype (never NULL for numeric and bool dtypes; STRING and UNDEFINED get
 * functions that read 0 and write nothing). */
lt_ew_ldf_fn lt_ew_ldf(lt_dtype dt);
lt_ew_stf_fn lt_ew_stf(lt_dtype dt);
lt_ew_ldi_fn lt_ew_ldi(lt_dtype dt);
lt_ew_sti_fn lt_ew_sti(lt_dtype dt);

/* Compute classes an op dispatches on. */
typedef enum lt_ew_kind { LT_EW_F, LT_EW_S, LT_EW_U, LT_EW_B, LT_EW_STR, LT_EW_OTHER } lt_ew_kind;
lt_ew_kind lt_ew_kind_of(lt_dtype dt);
/* Width in bits of an integer dtype (8 for bool, 4 for int4, ...). */
int lt_ew_int_bits(lt_dtype dt);

#define LT_EW_MAXIN 3
typedef struct lt_ew_bc {
    int rank, n;
    int64_t dims[LT_MAX_RANK];
    int64_t numel;
    int64_t idx[LT_MAX_RANK];
    int64_t st[LT_EW_MAXIN][LT_MAX_RANK];
    int64_t off[LT_EW_MAXIN];
} lt_ew_bc;

/* Broadcast n (<= LT_EW_MAXIN) tensors (entries may not be NULL). */
lt_status lt_ew_bc_init(lt_eval *ev, const lt_node *node, int n, const lt_tensor *const *ts, lt_ew_bc *bc);
/* Same, broadcasting the inputs to a given shape (used by the variadic ops); the inputs must be
 * broadcastable to it. */
void lt_ew_bc_init_to(int n, const lt_tensor *const *ts, int rank, const int64_t *dims, lt_ew_bc *bc);
static inline void lt_ew_bc_next(lt_ew_bc *b) {
    for (int d = b->rank - 1; d >= 0; d--) {
        if (++b->idx[d] < b->dims[d]) {
            for (int k = 0; k < b->n; k++) b->off[k] += b->st[k][d];
            return;
        }
        b->idx[d] = 0;
        for (int k = 0; k < b->n; k++) b->off[k] -= b->st[k][d] * (b->dims[d] - 1);
    }
}

/* Opset < 7 binary ops with broadcast=1: B's shape aligned to A's from `axis` (default: suffix).
 * Writes into *view a shallow copy of B (same data) with A's rank; false (and view = *B) when
 * legacy broadcasting does not apply. Error when B does not fit. */
lt_status lt_ew_legacy_bcast(lt_eval *ev, const lt_node *n, const lt_tensor *a, const lt_tensor *b,
                             lt_tensor *view);

/* ---- the rules shared by the infer and eval hooks ----
 * One input as the checks see it: omitted, or a rank (< 0: unknown), dims (< 0: unknown) and a
 * dtype (UNDEFINED: unknown). Inference fills them from types, eval from tensors, and both call
 * lt_ew_check, so a model that breaks a rule gets the same error from every backend. */
typedef struct lt_ew_arg {
    bool present;
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_dtype dtype;
} lt_ew_arg;
/* Every shape, dtype-agreement and attribute rule of node n's op (the family's ops) over its
 * count inputs: broadcasting (multidirectional; legacy axis broadcast before opset 7; PRelu's
 * slope unidirectional to X; Clip's bounds one element), inputs that must share a dtype,
 * attributes (BitShift direction, Mod fmod for floats, Gelu approximate, Celu alpha, Cast to and
 * round_mode). */
lt_status lt_ew_check(lt_ctx *ctx, const lt_node *n, int count, const lt_ew_arg *args);
/* lt_ew_check on the node's inputs as eval sees them / as inference sees them. */
lt_status lt_ew_check_eval(lt_eval *ev, const lt_node *n, lt_datum **in);
lt_status lt_ew_check_infer(lt_infer *ic, const lt_node *n);

/* Shape inference for ops whose output has input 0's shape and dtype dt. */
lt_status lt_ew_infer_unary_dt(lt_infer *ic, lt_node *n, lt_dtype dt);

/* Parse an ONNX dtype name case-insensitively ("FLOAT", "float16"): the opset-1 Cast spelling. */
lt_dtype lt_ew_dtype_from_any_name(const char *s);

/* ---- hooks defined in elementwise_binary.c ---- */
lt_status lt_ew_infer_binary(lt_infer *ic, lt_node *n);
lt_status lt_ew_infer_compare(lt_infer *ic, lt_node *n);
lt_status lt_ew_infer_where(lt_infer *ic, lt_node *n);
lt_status lt_ew_infer_variadic(lt_infer *ic, lt_node *n);
lt_status lt_ew_eval_arith(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_pow(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_compare(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_logical(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_bitwise(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_bitshift(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_prelu(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_where(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_clip(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_variadic(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* ---- hooks defined in elementwise_cast.c ---- */
lt_status lt_ew_infer_cast(lt_infer *ic, lt_node *n);
lt_status lt_ew_infer_castlike(lt_infer *ic, lt_node *n);
lt_status lt_ew_infer_bitcast(lt_infer *ic, lt_node *n);
lt_status lt_ew_eval_cast(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_castlike(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);
lt_status lt_ew_eval_bitcast(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

#endif
