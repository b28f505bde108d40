/* ops.h — the operator table, the per-op hooks, and the helpers op implementations share.
 *
 * Every op is one line in ops.def. Each family (the fourth column of ops.def) lives in its folder,
 * src/ops/<family>/ (the nchwc ops in nn/, the split ops in shape/): its main file <family>.c defines a table
 *     const lt_op_reg lt_ops_<family>[] = { {LT_OP_Abs, infer_fn, eval_fn}, ..., {0} };
 * the family's other files define hooks for it, and <family>_impl.h (where the family has more than
 * one file) declares what they share, private to src/ops (but nn_impl.h's window geometry, which
 * lowering reuses). ops.c gathers the family tables; the
 * rest of src/ops is shared by all families (ops_util.c, infer_util.c) or drives the hooks over a
 * whole graph (infer.c). An op's hooks:
 *   infer(ic, node): set the type of every node->out[i] (non-NULL) from the input types (and constant
 *     inputs, lt_infer_const) — dtype always, shape where it can be known, else rank -1 / dims -1.
 *     Return an error only for a definite inconsistency, naming the node (lt_infer_error).
 *   eval(ev, node, in, out): the reference implementation. in[i] is NULL for an omitted optional
 *     input (i < node->n_in); set out[i] for every i < node->n_out (the driver releases what no one
 *     reads). Never read or write out of bounds on bad data: an index out of range, a bad shape,
 *     an unsupported dtype is an error naming the node (lt_op_error). Opset differences: node->opset.
 */
#ifndef LT_OPS_H
#define LT_OPS_H

#include "../graph/graph.h"

typedef enum lt_op {
    LT_OP_UNKNOWN = 0,
#define LT_OP(name, domain, pattern, family, flags) LT_OP_##name,
#define LT_OP_NAMED(id, name, domain, pattern, family, flags) LT_OP_##id,
#include "ops.def"
#undef LT_OP_NAMED
#undef LT_OP
    LT_OP_COUNT
} lt_op;

/* Fusion pattern kinds, from most to least fusable. */
typedef enum lt_pattern {
    LT_PK_ELEMWISE,       /* one output element from the same input element */
    LT_PK_BROADCAST,      /* elementwise with broadcasting */
    LT_PK_INJECTIVE,      /* each output element from one input element (data movement) */
    LT_PK_REDUCE,         /* reduces along axes */
    LT_PK_OUT_EW_FUSABLE, /* complex op whose output takes elementwise epilogues (Conv, MatMul) */
    LT_PK_OPAQUE,         /* anything else */
    LT_PK_CONTROL         /* holds subgraphs */
} lt_pattern;

typedef struct lt_op_info {
    const char *name, *domain, *family;
    lt_pattern pattern;
    unsigned flags; /* LT_OPF_* */
} lt_op_info;

const lt_op_info *lt_op_info_get(int op); /* LT_OP_UNKNOWN's entry for out-of-range */
/* Find an op by domain ("" and "ai.onnx" are the same) and op_type; LT_OP_UNKNOWN if none. */
int lt_op_lookup(const char *domain, const char *op_type);

/* ---- evaluation context ---- */
struct lt_env;
struct lt_eval;
/* Runs subgraph g for the node being evaluated (the contract of lt_eval_subgraph below). */
typedef lt_status (*lt_subgraph_fn)(struct lt_eval *ev, const lt_graph *g, lt_datum *const *inputs, int n_inputs,
                                    lt_datum **outputs);
typedef struct lt_eval {
    lt_ctx *ctx;
    uint64_t rng;          /* state for random ops (lt_eval_random) */
    struct lt_env *env;    /* the environment of the graph being run (for subgraph outer scope) */
    const lt_model *model;
    int64_t max_loop_bytes; /* most bytes a Loop's scan outputs or one sequence may hold; 0: the default */
    /* Runs the subgraphs of If, Loop, Scan, SequenceMap and FlexAttention: set by whoever runs graphs
     * (the interpreter's lt_interp_subgraph, in the interpreter and in a plan's host steps), so the
     * ops need nothing above them. NULL: this evaluator runs no subgraph (lt_eval_subgraph fails). */
    lt_subgraph_fn run_subgraph;
    void *subgraph_user;   /* for run_subgraph (a plan's compiled-subgraph runner keeps its state here) */
} lt_eval;
#define LT_EVAL_DEFAULT_MAX_LOOP_BYTES ((int64_t)4 << 30)

/* ---- inference context ---- */
typedef struct lt_infer {
    lt_ctx *ctx;
    lt_arena *arena; /* the model arena: allocate dims here */
} lt_infer;

typedef lt_status (*lt_infer_fn)(lt_infer *ic, lt_node *n);
typedef lt_status (*lt_eval_fn)(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out);

/* lt_op_info.flags (the last column of ops.def) */
enum {
    /* The infer hook enforces every rule on shapes and attributes that the spec (and the eval hook)
     * imposes, whenever the input shapes and the constant inputs it reads are known: compiled code
     * may trust the shapes it infers. Only values that depend on data (gather indices) are left to
     * run-time checks. Lowering compiles a node only if its op has this flag (see
     * lt_node.shapes_verified). Checks shared with eval live in one function both call. */
    LT_OPF_INFER_CHECKS = 1u << 0,
};
#define LT_OPF_0 0u
#define LT_OPF_CHECKS LT_OPF_INFER_CHECKS

typedef struct lt_op_reg {
    int op;
    lt_infer_fn infer;
    lt_eval_fn eval;
} lt_op_reg;

typedef struct lt_op_hooks {
    lt_infer_fn infer;
    lt_eval_fn eval;
} lt_op_hooks;

/* Never NULL. A hook an op lacks is NULL; such an op is reported as unsupported, by name. */
const lt_op_hooks *lt_op_hooks_get(int op);

/* Family tables, each ended by an entry with op 0. */
extern const lt_op_reg lt_ops_elementwise[], lt_ops_reduce[], lt_ops_shape[], lt_ops_nn[],
    lt_ops_control[], lt_ops_recurrent[], lt_ops_image[], lt_ops_misc[], lt_ops_nchwc[], lt_ops_split[], lt_ops_contrib[];

/* ---- running subgraphs (If, Loop, Scan, SequenceMap, FlexAttention) ----
 * Binds inputs[i] to g->inputs[i] (n_inputs may be fewer than g->n_inputs only if the rest have
 * initializers), resolves outer-scope names through ev->env, runs g, and stores new references to
 * its outputs in outputs[0..g->n_outputs). The caller releases inputs it owns and the outputs.
 * Calls ev->run_subgraph (LT_ERR_INTERNAL when it is NULL). */
lt_status lt_eval_subgraph(lt_eval *ev, const lt_graph *g, lt_datum *const *inputs, int n_inputs,
                           lt_datum **outputs);

/* Error of kind s prefixed with the node's label ("node 3 'conv1' (Conv): ..."): the one format of
 * lt_op_error and lt_infer_error, for checks shared by infer and eval hooks. */
lt_status lt_node_error(lt_ctx *ctx, const lt_node *n, lt_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- the memory limit of Loop scan outputs and sequences (control.c) ----
 * The most bytes they may hold: ev->max_loop_bytes, or LT_EVAL_DEFAULT_MAX_LOOP_BYTES when it is 0. */
int64_t lt_eval_loop_limit(const lt_eval *ev);
/* *held += more, or LT_ERR_NOMEM naming node n and `what` ("the Loop's scan outputs") when that
 * passes the limit. */
lt_status lt_eval_loop_hold(lt_eval *ev, const lt_node *n, int64_t *held, int64_t more, const char *what);

/* ---- helpers for eval hooks (ops_util.c) ---- */
/* Error prefixed with the node's label: "node 3 'conv1' (Conv): ..." */
lt_status lt_op_error(lt_eval *ev, const lt_node *n, lt_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Input i as a tensor; error if absent or not a tensor. */
lt_status lt_in_tensor(lt_eval *ev, const lt_node *n, lt_datum **in, int i, const lt_tensor **out);
/* Input i as a tensor or NULL when omitted (error if present but not a tensor). */
lt_status lt_in_tensor_opt(lt_eval *ev, const lt_node *n, lt_datum **in, int i, const lt_tensor **out);
/* Create output i as a new zeroed tensor and return it for filling. */
lt_status lt_out_new(lt_eval *ev, const lt_node *n, lt_datum **out, int i, lt_dtype dt, int rank,
                     const int64_t *dims, lt_tensor **t);
/* Set output i to an existing tensor (takes over the caller's reference). */
lt_status lt_out_set(lt_eval *ev, lt_datum **out, int i, lt_tensor *t);
/* Normalize an axis in [-rank, rank) to [0, rank); error naming the node otherwise (lt_node_axis:
 * the same for checks shared by infer and eval hooks). */
lt_status lt_node_axis(lt_ctx *ctx, const lt_node *n, int64_t axis, int rank, int *out);
lt_status lt_norm_axis(lt_eval *ev, const lt_node *n, int64_t axis, int rank, int *out);
/* Read an integer tensor (any int dtype) into int64s (max entries; error if more). */
lt_status lt_tensor_ints(lt_eval *ev, const lt_node *n, const lt_tensor *t, int64_t *buf, int max,
                         int *count);
/* Multidirectional (numpy) broadcast of shapes; error naming the node if incompatible. */
lt_status lt_broadcast_shapes(lt_eval *ev, const lt_node *n, int count, const lt_tensor *const *ts,
                              int *rank, int64_t *dims);
/* Strides (in elements) for reading t as if broadcast to out_dims (0 along broadcast dims). */
void lt_broadcast_strides(const lt_tensor *t, int out_rank, const int64_t *out_dims, int64_t *strides);
/* Advance a row-major multi-index; returns false after the last one. */
bool lt_index_next(int rank, const int64_t *dims, int64_t *idx);
/* Offset of a multi-index under strides. */
static inline int64_t lt_index_offset(int rank, const int64_t *idx, const int64_t *strides) {
    int64_t o = 0;
    for (int i = 0; i < rank; i++) o += idx[i] * strides[i];
    return o;
}
/* Next uniform double in [0,1) from the evaluation RNG (deterministic per seed). */
double lt_eval_random(lt_eval *ev);

/* ---- helpers for infer hooks (infer_util.c) ---- */
lt_status lt_infer_error(lt_infer *ic, const lt_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Type of input i (NULL if omitted). */
const lt_type *lt_infer_in(const lt_node *n, int i);
/* Constant value of input i if it is an initializer/constant, else NULL. */
const lt_tensor *lt_infer_const(const lt_node *n, int i);
/* Set output i to a tensor type; dims copied (NULL with rank >= 0 means all unknown; rank -1: unknown). */
lt_status lt_infer_set(lt_infer *ic, lt_node *n, int i, lt_dtype dt, int rank, const lt_dim *dims);
/* Same with concrete int64 dims (-1 = unknown). */
lt_status lt_infer_set_i64(lt_infer *ic, lt_node *n, int i, lt_dtype dt, int rank, const int64_t *dims);
/* Output i gets input j's type (deep copy). */
lt_status lt_infer_copy(lt_infer *ic, lt_node *n, int i, int j);
/* Output i gets any type (deep copy of t). */
lt_status lt_infer_set_type(lt_infer *ic, lt_node *n, int i, const lt_type *t);
/* Output 0 = broadcast of all present inputs' shapes, with dtype dt (UNDEFINED: input 0's). */
lt_status lt_infer_broadcast(lt_infer *ic, lt_node *n, lt_dtype dt);
/* Generic hooks usable directly in tables. */
lt_status lt_infer_same_as_input0(lt_infer *ic, lt_node *n);  /* all outputs: input 0's type */
lt_status lt_infer_broadcast_same(lt_infer *ic, lt_node *n);  /* broadcast, input 0's dtype */
lt_status lt_infer_broadcast_bool(lt_infer *ic, lt_node *n);  /* broadcast, bool (comparisons) */

#endif
