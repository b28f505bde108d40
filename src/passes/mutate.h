/* mutate.h — editing the graph IR: the API graph passes use to create, rewire and remove values and
 * nodes while keeping the invariants of graph.h.
 *
 * Memory: everything created here lives in the model arena (g->model->arena): nodes, values, names,
 * attribute arrays, the grown nodes[]/values[] arrays. A tensor handed to lt_value_set_const /
 * lt_value_new_const / lt_node_set_attr_tensor is registered in m->owned_tensors (the caller's
 * reference is taken over, and released on failure), so lt_model_free releases it.
 *
 * Invariants kept by every function (and checked by lt_graph_verify):
 *   - g->values[v->id] == v for every value of g; g->nodes[n->index] == n and n->graph == g;
 *   - a value has at most one definition: a producer node (v->producer / v->producer_out), or an
 *     initializer (v->init), or it is a graph input, or an outer-scope reference (v->outer);
 *   - subgraph references: a value of a subgraph that reads a value P of the enclosing graph has
 *     ->outer == P (chains: a nested subgraph points at its parent's reference, never further);
 *   - graph outputs keep their names: the main graph's outputs are read by name and position, so a
 *     replacement takes over the output's name (see lt_value_replace_uses).
 * Intermediate states may break topological order (a node created at the end that feeds an earlier
 * one); lt_graph_sort restores it. Removing nodes leaves their output values in values[] (without a
 * producer) until lt_graph_compact drops the values nothing defines or reads.
 *
 * Entry points, by task:
 *   walk:     lt_graph_foreach (a graph and every nested subgraph), lt_node_subgraphs
 *   query:    lt_value_is_const / lt_value_const, lt_type_is_static, lt_value_static_shape,
 *             lt_value_count_uses, lt_uses_build (counts for a whole graph)
 *   values:   lt_value_new, lt_value_new_const, lt_value_set_const, lt_value_replace_uses,
 *             lt_value_rename, lt_type_copy
 *   nodes:    lt_node_new, lt_node_set_attr_* / lt_node_copy_attrs, lt_node_set_n_inputs,
 *             lt_node_remove, lt_node_infer
 *   graph:    lt_model_import_lathe, lt_graph_sort (stable topological re-sort), lt_graph_compact (drop dead values,
 *             re-number ids), lt_graph_release_init (drop an unused initializer and its tensor)
 */
#ifndef LT_MUTATE_H
#define LT_MUTATE_H

#include "../graph/graph.h"

/* ---- walking ---- */
typedef lt_status (*lt_graph_fn)(lt_ctx *ctx, lt_graph *g, void *user);
/* Call fn on g and every subgraph nested in it (at any depth). children_first: a subgraph is visited
 * before the graph holding it (post-order); else parents first. Stops at the first error. */
lt_status lt_graph_foreach(lt_ctx *ctx, lt_graph *g, bool children_first, lt_graph_fn fn, void *user);
/* True if node n holds at least one subgraph attribute. */
bool lt_node_has_subgraphs(const lt_node *n);

/* ---- queries ---- */
/* The constant value of v, or NULL: an initializer that is not a graph input (an input with an
 * initializer is only a default the caller may override), the output of a Constant node with a
 * tensor `value`, following outer-scope references. */
const lt_tensor *lt_value_const(const lt_value *v);
static inline bool lt_value_is_const(const lt_value *v) { return v && lt_value_const(v) != NULL; }
/* True for a tensor type whose rank and every dim are known. */
bool lt_type_is_static(const lt_type *t);
/* Static shape of v into dims (LT_MAX_RANK entries) and *rank; false unless lt_type_is_static. */
bool lt_value_static_shape(const lt_value *v, int *rank, int64_t *dims);
/* Uses of v in g: node inputs of g, g's outputs, and subgraph references (v->outer chains that
 * end at v, counted once per referencing value). O(size of g and its subgraphs). */
int lt_value_count_uses(const lt_graph *g, const lt_value *v);

/* Use counts for every value of g (indexed by value id, n_values entries at build time). A value of
 * g read from a subgraph counts one use per referencing value of the subgraph (all depths). */
typedef struct lt_uses {
    int n;       /* g->n_values when built */
    int *count;  /* heap */
} lt_uses;
lt_status lt_uses_build(lt_ctx *ctx, const lt_graph *g, lt_uses *u);
static inline int lt_uses_of(const lt_uses *u, const lt_value *v) {
    return v->id >= 0 && v->id < u->n ? u->count[v->id] : 0;
}
void lt_uses_free(lt_uses *u);

/* ---- values ---- */
/* Deep copy of a type (dims, element types) into the arena. */
lt_status lt_type_copy(lt_ctx *ctx, lt_arena *a, lt_type *dst, const lt_type *src);
/* New value in g with a name unique in g built from hint ("x" -> "x", "x_1", ...); type deep-copied
 * (NULL: unknown). No definition yet: make it a node output, an initializer or a graph input. */
lt_status lt_value_new(lt_ctx *ctx, lt_graph *g, const char *hint, const lt_type *type, lt_value **out);
/* New initializer value holding t (reference taken over; released on failure). */
lt_status lt_value_new_const(lt_ctx *ctx, lt_graph *g, const char *hint, lt_tensor *t, lt_value **out);
/* Make v (a value of g) an initializer holding t (reference taken over; released on failure): its producer, if
 * any, stops producing it (node->out[k] = NULL), its type becomes t's. v keeps its name, id and uses.
 * Error if v is a graph input or an outer-scope reference. */
lt_status lt_value_set_const(lt_ctx *ctx, lt_graph *g, lt_value *v, lt_tensor *t);
/* Every use of `old` in g becomes a use of `nv`: node inputs of g, subgraph references (a subgraph
 * reading old now reads nv: the reference is re-pointed, or merged into an existing reference to nv),
 * and g's outputs. Outputs: in a subgraph (positional) the output slot becomes nv; in the main graph
 * (named) nv takes over old's name when it can (nv is not a graph input nor already an output: the
 * two values swap names) and becomes the output; otherwise the output stays `old` (still defined by
 * its producer), so the output name never changes. nv must be visible in g (a value of g). */
lt_status lt_value_replace_uses(lt_ctx *ctx, lt_graph *g, lt_value *old, lt_value *nv);
/* Rename v (name must be unique in g; copied) and the subgraph references that mirror its name. */
lt_status lt_value_rename(lt_ctx *ctx, lt_graph *g, lt_value *v, const char *name);

/* ---- nodes ---- */
/* New node in g: op and opset looked up from (domain, op_type) and the model's opset imports
 * (node->opset may be changed after). in[0..n_in) copied (NULL entries = omitted inputs; in may be
 * NULL for all omitted). n_out fresh output values named from out_hint (NULL: op_type), types
 * unknown (lt_node_infer fills them). Placed just before `before` (a node of g), or at the end when
 * before is NULL (then lt_graph_sort must run before the graph is used if it feeds earlier nodes). */
lt_status lt_node_new(lt_ctx *ctx, lt_graph *g, const char *op_type, const char *domain, int n_in,
                      lt_value *const *in, int n_out, const char *out_hint, lt_node *before, lt_node **out);
/* Attributes (added, or replaced when the name exists; values copied into the arena). */
lt_status lt_node_set_attr_int(lt_ctx *ctx, lt_node *n, const char *name, int64_t v);
lt_status lt_node_set_attr_float(lt_ctx *ctx, lt_node *n, const char *name, float v);
lt_status lt_node_set_attr_ints(lt_ctx *ctx, lt_node *n, const char *name, int count, const int64_t *v);
lt_status lt_node_set_attr_floats(lt_ctx *ctx, lt_node *n, const char *name, int count, const float *v);
lt_status lt_node_set_attr_string(lt_ctx *ctx, lt_node *n, const char *name, const char *s);
/* Tensor attribute: reference to t taken over (released on failure). */
lt_status lt_node_set_attr_tensor(lt_ctx *ctx, lt_node *n, const char *name, lt_tensor *t);
/* Remove attribute `name` if present. */
void lt_node_del_attr(lt_node *n, const char *name);
/* dst gets a shallow copy of src's attribute array (subgraph attributes are refused). */
lt_status lt_node_copy_attrs(lt_ctx *ctx, lt_node *dst, const lt_node *src);
/* Grow or shrink the input list (new slots NULL). */
lt_status lt_node_set_n_inputs(lt_ctx *ctx, lt_node *n, int n_in);
/* Take n out of its graph: nodes[] shrinks, later nodes are re-indexed, its outputs lose their
 * producer (they stay in values[] until lt_graph_compact). The caller makes sure nothing still reads
 * them (lt_graph_verify reports a use of a removed node's output). */
void lt_node_remove(lt_graph *g, lt_node *n);
/* Run n's op infer hook (types of its outputs), keeping what an output already declares. */
lt_status lt_node_infer(lt_ctx *ctx, lt_node *n);

/* ---- whole graph ---- */
/* The model imports the "lathe" domain (version 1), once it has lathe nodes (lt_node_new looks a
 * node's opset up there), so that a written model declares every domain it uses. */
lt_status lt_model_import_lathe(lt_ctx *ctx, lt_model *m);
/* Stable topological sort of g->nodes (a node keeps its place unless a producer must move ahead of
 * it; reads through subgraphs count as edges); re-indexes. Error on a cycle naming a node on it. */
lt_status lt_graph_sort(lt_ctx *ctx, lt_graph *g);
/* Drop the values of g that have no definition and no use, and outer references nothing reads
 * (subgraphs first, so a parent value read only by a dead reference is dropped too); re-number ids.
 * Initializers are kept (lt_graph_release_init drops them). */
lt_status lt_graph_compact(lt_ctx *ctx, lt_graph *g);
/* v (an initializer of g that is not a graph input nor output, with no uses) leaves g: its tensor
 * reference is released from m->owned_tensors. Call lt_graph_compact after to drop the slot. */
void lt_graph_release_init(lt_graph *g, lt_value *v);

#endif
