/* freeze_inputs.c — opt-in (lt_pass_options.freeze_inputs): main-graph inputs that have an
 * initializer become plain initializers. IR < 4 models list every initializer as a graph input;
 * ONNX makes those overridable defaults, so no other pass may treat them as constants and their
 * weights never fold. Freezing removes them from g->inputs (the remaining inputs keep their order),
 * so callers bind only the true inputs afterwards. Subgraph inputs are positional and stay.
 * Level -O1, runs once, before the simplification group.
 */
#include "util.h"

static bool enabled(const lt_pass_options *opt) { return opt && opt->freeze_inputs; }

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    (void)ctx;
    (void)opt;
    lt_graph *g = m->graph;
    int w = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        lt_value *v = g->inputs[i];
        if (v->init) {
            v->is_input = false;
            *changed = true;
            continue;
        }
        g->inputs[w++] = v;
    }
    g->n_inputs = w;
    return LT_OK;
}

const lt_pass lt_pass_freeze_inputs = {.name = "freeze_inputs", .min_level = 1, .run = run, .enabled = enabled,
    .summary = "graph inputs that have an initializer become constants (opt-in)"};
