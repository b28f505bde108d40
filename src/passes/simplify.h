/* simplify.h — the rule functions of the simplify pass, shared by simplify.c (identities: a node
 * that returns one of its inputs unchanged) and simplify_chains.c (two nodes that become one or
 * none). A rule rewrites node n of graph g when it applies, sets *changed only when it changed
 * something, and may remove n (the caller re-reads g->nodes). Private to src/passes/. */
#ifndef LT_PASSES_SIMPLIFY_H
#define LT_PASSES_SIMPLIFY_H

#include "util.h"

typedef lt_status (*lt_simplify_rule)(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);

/* simplify_chains.c */
lt_status lt_simplify_transpose_chain(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);
lt_status lt_simplify_view_chain(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);
lt_status lt_simplify_cast_chain(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);
lt_status lt_simplify_squeeze_pair(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);
lt_status lt_simplify_expand_into_broadcast(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed);

#endif
