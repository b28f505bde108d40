/* test_models.h — loading test models and filling their inputs with random data, for the plan tests
 * (test_plan.c, test_plan_device.c). Header-only; include after test_util.h (it counts failures).
 * Random values come from a caller-owned xorshift state, so each test keeps its own sequence. */
#ifndef LT_TEST_MODELS_H
#define LT_TEST_MODELS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx/onnx.h"

/* in [-1, -0.1] u [0.1, 1]: never zero */
static inline double test_frand(uint64_t *rng) {
    *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
    double v = 0.1 + 0.9 * (double)(*rng >> 11) / 9007199254740992.0;
    return (*rng >> 3) & 1 ? v : -v;
}

/* The model at path, or NULL (a failure counted, the message printed). */
static inline lt_model *test_load_model(const char *path) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) {
        fprintf(stderr, "%s: %s\n", path, ctx.msg);
        failures++;
        return NULL;
    }
    return m;
}

/* Random inputs for every graph input without an initializer (static shapes): floats from
 * test_frand, int64 in [0, 3], bools random when fill_bool (else false). */
static inline lt_datum **test_random_inputs(const lt_model *m, uint64_t *rng, bool fill_bool) {
    const lt_graph *g = m->graph;
    lt_datum **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    lt_ctx ctx = {0};
    for (int i = 0; in && i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (v->init) continue;
        int64_t dims[LT_MAX_RANK];
        for (int k = 0; k < v->type.rank; k++) dims[k] = v->type.dims[k].value;
        lt_tensor *t = NULL;
        if (lt_tensor_new(&ctx, v->type.dtype, v->type.rank, dims, &t) != LT_OK) break;
        for (int64_t e = 0; e < t->numel; e++) {
            if (v->type.dtype == LT_FLOAT) ((float *)t->data)[e] = (float)test_frand(rng);
            else if (v->type.dtype == LT_INT64) ((int64_t *)t->data)[e] = (int64_t)(fabs(test_frand(rng)) * 3.99);
            else if (fill_bool && v->type.dtype == LT_BOOL) ((uint8_t *)t->data)[e] = test_frand(rng) > 0;
        }
        lt_datum_tensor(&ctx, t, &in[i]);
    }
    return in;
}

static inline void test_free_datums(lt_datum **d, int n) {
    for (int i = 0; d && i < n; i++) lt_datum_release(d[i]);
    free(d);
}

#endif
