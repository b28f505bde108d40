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

/* inputs[i] binds m->graph->inputs[i]; NULL keeps its initializer (error if it has none).
 * outputs[0..m->graph->n_outputs) receive new references the caller releases. */
lt_status lt_interp_run(lt_ctx *ctx, const lt_model *m, const lt_interp_options *opt,
                        lt_datum *const *inputs, lt_datum **outputs);

#endif
