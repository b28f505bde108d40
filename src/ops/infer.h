/* infer.h — shape and type inference over a whole graph, and binding symbolic dims.
 *
 * lt_graph_infer walks nodes in order and calls each op's infer hook (subgraphs recursively); a
 * value's declared type (value_info, graph outputs) is kept where inference learns nothing.
 * Binding: `--shapes name:1x3x224x224` fixes an input's shape, `--dim batch=1` a named dim everywhere;
 * inference then runs again.
 */
#ifndef LT_INFER_H
#define LT_INFER_H

#include "../graph/graph.h"

lt_status lt_graph_infer(lt_ctx *ctx, lt_model *m);
/* One node (its subgraphs first): the op's infer hook from unknown outputs, the declared types kept
 * where it learns less, lt_node.shapes_verified set. Passes call it through lt_node_infer. */
struct lt_infer;
lt_status lt_infer_node(struct lt_infer *ic, lt_node *n);
/* Set the shape of graph input `name` (error if unknown, or rank/known dims disagree). */
lt_status lt_model_bind_shape(lt_ctx *ctx, lt_model *m, const char *name, int rank, const int64_t *dims);
/* Replace every dim named `param` by value (error if no dim has that name). */
lt_status lt_model_bind_dim(lt_ctx *ctx, lt_model *m, const char *param, int64_t value);
/* Parse "name:1x3x224x224[,name2:...]" and "batch=1" (the CLI grammar), then bind. */
lt_status lt_model_bind_shapes_spec(lt_ctx *ctx, lt_model *m, const char *spec);
lt_status lt_model_bind_dim_spec(lt_ctx *ctx, lt_model *m, const char *spec);
/* Every node (subgraphs included) whose op lathe cannot evaluate, reported at once:
 * LT_ERR_UNSUPPORTED with one line per (domain, op_type, opset): count and first node name. */
lt_status lt_model_check_supported(lt_ctx *ctx, const lt_model *m);

#endif
