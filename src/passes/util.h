/* util.h — helpers the graph passes share (src/passes/ only): op properties passes ask about
 * (random, foldable), reading constant inputs, comparing types and tensors, and building small
 * constant tensors. Nothing here changes a graph. */
#ifndef LT_PASSES_UTIL_H
#define LT_PASSES_UTIL_H

#include "mutate.h"
#include "../ops/ops.h"
#include "pass.h"

/* Random ops (Random*, Bernoulli, Multinomial) and Dropout unless it is known to be in inference
 * mode (training_mode omitted or a constant false): never folded, merged or removed as duplicates. */
bool lt_pu_is_random(const lt_node *n);
/* Integer constant v (any integer dtype, rank <= 1) into buf (max entries); false if not constant,
 * not integer, or longer than max. */
bool lt_pu_const_ints(const lt_value *v, int64_t *buf, int max, int *count);
/* True when every element of the numeric tensor t equals x (false for strings and empty tensors). */
bool lt_pu_tensor_all_equal(const lt_tensor *t, double x);
/* Scalar value of a constant with one element (any numeric dtype). */
bool lt_pu_const_scalar(const lt_value *v, double *out);
/* Both values have static shapes and they are equal. */
bool lt_pu_same_static_shape(const lt_value *a, const lt_value *b);
/* Same shape known at compile time up to names: equal ranks, each dim equal (both known) or the
 * same symbolic name. */
bool lt_pu_same_shape(const lt_value *a, const lt_value *b);
/* Rank of v and its dims (-1 where unknown); false if the rank is unknown. */
bool lt_pu_dims(const lt_value *v, int *rank, int64_t *dims);
/* Deep equality of types (kind, dtype, rank, dims incl. symbolic names). */
bool lt_pu_type_equal(const lt_type *a, const lt_type *b);
/* Deep equality of tensors (dtype, shape, bytes; strings by content). */
bool lt_pu_tensor_equal(const lt_tensor *a, const lt_tensor *b);
/* Deep equality of two nodes' attribute sets (any order; tensors deep; subgraphs never equal). */
bool lt_pu_attrs_equal(const lt_node *a, const lt_node *b);
/* dtype of a tensor-typed value (UNDEFINED if unknown). */
lt_dtype lt_pu_dtype(const lt_value *v);
/* New 1-D int64 tensor with the given entries. */
lt_status lt_pu_tensor_i64(lt_ctx *ctx, int n, const int64_t *vals, lt_tensor **out);
/* Evaluate node n (all inputs constant, no subgraphs) through its eval hook into tensors out[k]
 * (NULL where n->out[k] is NULL). false (nothing allocated) if the hook fails or an output is not a
 * tensor; errors are not reported (folding is an optimization). */
bool lt_pu_eval_node(const lt_model *m, const lt_node *n, lt_tensor **out);

/* Node n's output k is replaced by nv everywhere in g (main-graph outputs keep their names, see
 * lt_value_replace_uses); n is removed when none of its outputs is read any more. *changed is set
 * only when something was rewired or removed, so a rule that cannot act does not loop forever. */
lt_status lt_pu_forward(lt_ctx *ctx, lt_graph *g, lt_node *n, int k, lt_value *nv, bool *changed);
/* nv (a new value replacing old) takes old's name and old gets nv's, so printed IR keeps the
 * names the model gave; nothing happens when either is a graph input or output. */
void lt_pu_take_name(lt_graph *g, lt_value *nv, lt_value *old);
/* Remove n if none of its outputs is read (graph outputs included); true if removed. */
bool lt_pu_remove_if_dead(lt_graph *g, lt_node *n);
/* Numpy broadcast of static shapes; false if incompatible or a rank exceeds LT_MAX_RANK. */
bool lt_pu_broadcast(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims);
/* Producer of v if it is a node of g with the given op, else NULL. */
lt_node *lt_pu_producer(const lt_graph *g, const lt_value *v, int op);
/* A new node op(in[0..n_in)) placed before `before`, with one int attribute when int_attr is not
 * NULL, inferred; *out its one output. */
lt_status lt_pu_new_op(lt_ctx *ctx, lt_graph *g, const char *op, int n_in, lt_value *const *in, const char *int_attr,
                       int64_t int_val, const char *hint, lt_node *before, lt_value **out);
/* v (not NULL) has dtype dt and a static shape of `count` elements. */
bool lt_pu_fits(const lt_value *v, lt_dtype dt, int64_t count);
/* v with shape dims[rank] (same element count): a new constant holding v's data when v is a
 * constant, else Reshape(v, dims) placed before `before`, inferred. */
lt_status lt_pu_reshape(lt_ctx *ctx, lt_graph *g, lt_value *v, int rank, const int64_t *dims, const char *hint,
                        lt_node *before, lt_value **out);
/* Group normalization of x (static [N, C, spatial...], C a multiple of groups) as ops lathe compiles:
 * Reshape -> LayerNormalization over each (image, group) block with epsilon eps, the scale and bias
 * folded in (per_group: scale and bias hold one value per group, else one per channel) -> Reshape
 * back; before `before`. InstanceNormalization is the case groups = C. */
lt_status lt_pu_group_norm(lt_ctx *ctx, lt_graph *g, lt_node *before, lt_value *x, int64_t groups, lt_value *scale,
                           lt_value *bias, bool per_group, float eps, const char *hint, lt_value **out);
/* Output `old` of a node being replaced becomes v everywhere (lt_value_replace_uses; v takes old's
 * name); when old is a graph output and v is a graph input or already an output, v goes through an
 * Identity placed before `before`, so that every output keeps its name and its own producer. */
lt_status lt_pu_replace_output(lt_ctx *ctx, lt_graph *g, lt_node *before, lt_value *old, lt_value *v);
/* Rewrite passes that replace one node by several: rewrite(ctx, g, n, changed) on every node of every
 * graph of m for which match(n); the walk starts again after a rewrite that changed the node count
 * (nodes were inserted before n, and n may be gone). */
typedef lt_status (*lt_pu_rewrite_fn)(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);
lt_status lt_pu_rewrite_each(lt_ctx *ctx, lt_model *m, bool (*match)(const lt_node *n), lt_pu_rewrite_fn rewrite,
                             bool *changed);

/* Copy the nodes of subgraph b (no nested subgraphs) into g before `before`, in order, each
 * inferred: b's input i reads ins[i] (ins may be NULL when b has no inputs), an outer-scope
 * reference reads the outer value, an initializer becomes a constant of g (memoized in consts[v->id]
 * when consts, an array of b->n_values entries, is given: copies made in turn share one constant),
 * an optional output b's node omitted stays omitted. outs[k] is the value of g for b's output k.
 * `who` names the pass in errors. */
lt_status lt_pu_copy_subgraph(lt_ctx *ctx, lt_graph *g, lt_node *before, const lt_graph *b, lt_value *const *ins,
                              lt_value **consts, const char *who, lt_value **outs);

/* fold_shapes.c: fold node n if it is Shape / Size of a value with known dims, or Gather of such a
 * Shape; *done when n's output became a constant (the caller removes n). fold_constants calls it
 * while it walks so that one sweep folds the shape arithmetic of every layer of a deep model. */
lt_status lt_fold_shape_node(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *done);

#endif
