/* index_rule.h — the range rule of the Gather and Scatter families' indices, shared by the lowering
 * (which compiles such a node only when its indices are checked: constant and in range, or a model
 * input the runtime checks before each run) and the runtime (src/runtime/index_checks.c); and the
 * Scatter family's reduction attribute, shared by its eval hooks and its lowering.
 *
 * Gather, GatherElements and GatherND read data at positions their indices give; Scatter,
 * ScatterElements and ScatterND write there. An index i of an axis of size d is valid when
 * -d <= i < d (negative counts from the end). An index tuple of k components (GatherND, ScatterND:
 * the indices' last dim; else 1) has its component j checked against dims[j]. The indices are
 * input 1 of every one of these ops.
 */
#ifndef LT_INDEX_RULE_H
#define LT_INDEX_RULE_H

#include "../ops.h"

typedef struct lt_index_rule {
    int k;                      /* components per index tuple (1 unless GatherND) */
    int64_t dims[LT_MAX_RANK];  /* component j must lie in [-dims[j], dims[j]) */
} lt_index_rule;

/* The rule of node n (one of the six ops above whose data shape is static along the indexed axes and
 * whose attributes are valid); false for any other node. */
bool lt_index_rule_of(const lt_node *n, lt_index_rule *r);

/* The first element of the n int32/int64 indices at `data` that breaks rule r, or -1. */
int64_t lt_index_rule_violation(const lt_index_rule *r, const void *data, lt_dtype dt, int64_t n);

/* The reduction of a Scatter-family node (attribute `reduction`: add and mul from opset 16, max and
 * min from opset 18), read by the eval hooks (src/ops/shape/shape_index.c) and the lowering
 * (src/lower/lower_scatter.c); false when it is none of these. */
typedef enum lt_scatter_red { LT_SCATTER_NONE, LT_SCATTER_ADD, LT_SCATTER_MUL, LT_SCATTER_MAX, LT_SCATTER_MIN } lt_scatter_red;
bool lt_scatter_reduction(const lt_node *n, lt_scatter_red *r);

/* Are node n's indices (input 1) checked by its own kernel, as it reads them: one of the six ops
 * above whose indices are neither a constant nor a model input (so the model computes them)? The
 * lowering then records violations in the plan's check word, which the runtime reads after each
 * run (src/runtime/index_checks.c). */
bool lt_index_checked_in_kernel(const lt_node *n);

/* The model input that v is a view of (v itself, or the input of a chain of Reshape, Flatten,
 * Squeeze, Unsqueeze and Identity: the same elements in the same order), or NULL when v is computed
 * (or is a constant). Main graph only. */
const lt_value *lt_index_model_input(const lt_value *v);

#endif
