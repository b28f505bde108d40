/* interp.h — the reference interpreter: runs a graph node by node through the ops' eval hooks.
 * It is the oracle for tests and the compiled backends. Values are freed after their last use. */
#ifndef LT_INTERP_H
#define LT_INTERP_H

#include "../ops/ops.h"

typedef struct lt_interp_options {
    uint64_t seed; /* for random ops */
    /* Most bytes the scan outputs of one Loop, or one sequence, may hold (a Loop that never ends
     * fails with an error naming the node instead of growing forever); 0: 4 GiB. */
    int64_t max_loop_bytes;
} lt_interp_options;

/* An environment: one datum per value of `graph` (by value id) and the enclosing graph's environment,
 * through which subgraphs read outer-scope values (lt_value.outer). lt_eval.env points at the one of
 * the graph being run; a plan's host steps (src/runtime) keep one for the main graph. */
typedef struct lt_env {
    const lt_graph *graph;
    struct lt_env *parent;
    lt_datum **vals; /* by value id */
} lt_env;

/* The lt_eval.run_subgraph of every evaluator that runs graphs (lt_interp_run sets it; so do the
 * plan's host steps): runs g in ev->env, as ops.h's lt_eval_subgraph says. */
lt_status lt_interp_subgraph(lt_eval *ev, const lt_graph *g, lt_datum *const *inputs, int n_inputs,
                             lt_datum **outputs);

/* The datum of v, a value of the graph of ev->env or of a graph enclosing it (its initializer when
 * it has no other): a borrowed reference. Error when v is in none of them or has no value. */
lt_status lt_interp_env_value(lt_eval *ev, const lt_value *v, lt_datum **out);

/* inputs[i] binds m->graph->inputs[i]; NULL keeps its initializer (error if it has none).
 * outputs[0..m->graph->n_outputs) receive new references the caller releases. */
lt_status lt_interp_run(lt_ctx *ctx, const lt_model *m, const lt_interp_options *opt,
                        lt_datum *const *inputs, lt_datum **outputs);

#endif
