/* cuda_emitted.h — the row and elementwise kernels a compiled model gets on the GPU, built the way
 * the compiler builds them: a one-op (or one-chain) graph made with the mutation API, shape
 * inference, fusion, lowering with opt.gpu, the default GPU schedule (sched_default.c), and the
 * shared emitter with the CUDA table. Shared by tests/unit/test_cuda_nvrtc.c (compiles them),
 * tests/unit/test_cuda_gpu.c (runs them against the reference interpreter) and
 * bench/gpu/bench_kernels.c (times them). Header-only (static functions).
 *
 *   em_build(ctx, op, dtype, rows, cols, &k)   k.src = the CUDA module, k.kernel its kernel name,
 *                                              k.role[j] = which tensor kernel argument j is
 *                                              (EM_CONST: a constant, data in k.cval[j])
 *   em_free(&k)
 * Tensors: x [rows, cols] (input), y (output: [rows, cols], [rows, 1] for the row sum), and for the
 * norms gamma and beta [cols] (graph inputs, so they stay kernel arguments). All of dtype dt.
 * Ops: the elementwise chain y = max(x * 1.5 + 0.25, 0) * x, ReduceSum over the last axis
 * (keepdims), Softmax (axis -1), LayerNormalization and RMSNormalization (axis -1, eps 1e-5).
 */
#ifndef TEST_CUDA_EMITTED_H
#define TEST_CUDA_EMITTED_H

#include "codegen/codegen.h"
#include "ops/infer.h"
#include "passes/mutate.h"
#include "loop/schedule.h"
#include "lower/lower.h"

#include <stdio.h>
#include <string.h>

typedef enum em_op { EM_EW_CHAIN, EM_ROWSUM, EM_SOFTMAX, EM_LAYERNORM, EM_RMSNORM, EM_N_OPS } em_op;
enum { EM_Y, EM_X, EM_GAMMA, EM_BETA, EM_CONST };

static const char *const em_op_names[EM_N_OPS] = {"ew_chain", "rowsum", "softmax", "layernorm", "rmsnorm"};

typedef struct em_kernel {
    lt_model *m;
    lt_arena arena;    /* groups, Loop IR */
    lt_strbuf src;     /* the CUDA module */
    char kernel[32];   /* its kernel */
    int n_args;
    int role[8];       /* EM_Y, EM_X, EM_GAMMA, EM_BETA or EM_CONST per kernel argument */
    const lt_tensor *cval[8]; /* EM_CONST: the constant's data (float16 scalars stay arguments) */
    char schedule[2048]; /* the schedule steps, one per line */
    lt_value *vals[4]; /* y, x, gamma, beta */
} em_kernel;

static lt_value *em_input(lt_ctx *ctx, lt_model *m, const char *name, lt_dtype dt, int rank, const int64_t *dims) {
    lt_type t = {0};
    lt_dim d[2] = {{dims[0], NULL}, {rank > 1 ? dims[1] : 0, NULL}};
    lt_type_set_tensor(&t, dt, rank, d);
    lt_value *v = NULL;
    if (lt_value_new(ctx, m->graph, name, &t, &v) != LT_OK) return NULL;
    v->is_input = true;
    lt_value **ins = lt_arena_alloc(&m->arena, sizeof *ins * (size_t)(m->graph->n_inputs + 1));
    if (!ins) return NULL;
    if (m->graph->n_inputs) memcpy(ins, m->graph->inputs, sizeof *ins * (size_t)m->graph->n_inputs);
    ins[m->graph->n_inputs++] = v;
    m->graph->inputs = ins;
    return v;
}

static lt_value *em_scalar(lt_ctx *ctx, lt_model *m, const char *name, lt_dtype dt, double x) {
    lt_tensor *t = NULL;
    lt_value *v = NULL;
    if (lt_tensor_new(ctx, dt, 0, NULL, &t) != LT_OK) return NULL;
    lt_store_f64(t->data, dt, 0, x);
    return lt_value_new_const(ctx, m->graph, name, t, &v) == LT_OK ? v : NULL;
}

static lt_value *em_node(lt_ctx *ctx, lt_model *m, const char *op, const char *out, int n_in, lt_value *a, lt_value *b,
                         lt_value *c, lt_node **node) {
    lt_value *ins[3] = {a, b, c};
    lt_node *n = NULL;
    if (lt_node_new(ctx, m->graph, op, "", n_in, ins, 1, out, NULL, &n) != LT_OK) return NULL;
    if (node) *node = n;
    return n->out[0];
}

static void em_free(em_kernel *k) {
    if (k->m) lt_model_free(k->m);
    lt_arena_free(&k->arena);
    lt_sb_free(&k->src);
    memset(k, 0, sizeof *k);
}

static lt_status em_build(lt_ctx *ctx, em_op op, lt_dtype dt, int64_t rows, int64_t cols, em_kernel *k) {
    memset(k, 0, sizeof *k);
    lt_arena_init(&k->arena);
    lt_arena a;
    lt_arena_init(&a);
    lt_model *m = lt_arena_alloc(&a, sizeof *m);
    if (!m) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    memset(m, 0, sizeof *m);
    m->arena = a;
    k->m = m;
    m->ir_version = 9;
    m->producer_name = m->producer_version = "";
    m->n_opsets = 1;
    m->opsets = lt_arena_alloc(&m->arena, sizeof *m->opsets);
    lt_graph *g = lt_arena_alloc(&m->arena, sizeof *g);
    if (!m->opsets || !g) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    m->opsets[0] = (lt_opset){"", 23};
    memset(g, 0, sizeof *g);
    g->model = m;
    g->name = "main";
    m->graph = g;
    int64_t xd[2] = {rows, cols}, cd[1] = {cols};
    lt_value *x = em_input(ctx, m, "x", dt, 2, xd), *y = NULL, *gamma = NULL, *beta = NULL;
    lt_node *n = NULL;
    switch (op) {
    case EM_EW_CHAIN: {
        lt_value *t = em_node(ctx, m, "Mul", "t0", 2, x, em_scalar(ctx, m, "c_1_5", dt, 1.5), NULL, NULL);
        t = em_node(ctx, m, "Add", "t1", 2, t, em_scalar(ctx, m, "c_0_25", dt, 0.25), NULL, NULL);
        t = em_node(ctx, m, "Max", "t2", 2, t, em_scalar(ctx, m, "c_0", dt, 0), NULL, NULL);
        y = em_node(ctx, m, "Mul", "y", 2, t, x, NULL, NULL);
        break;
    }
    case EM_ROWSUM: {
        lt_tensor *t = NULL;
        int64_t one = 1;
        lt_value *axes = NULL;
        if (lt_tensor_new(ctx, LT_INT64, 1, &one, &t) != LT_OK) return ctx->status;
        ((int64_t *)t->data)[0] = -1;
        if (lt_value_new_const(ctx, g, "axes", t, &axes) != LT_OK) return ctx->status;
        y = em_node(ctx, m, "ReduceSum", "y", 2, x, axes, NULL, NULL);
        break;
    }
    case EM_SOFTMAX: y = em_node(ctx, m, "Softmax", "y", 1, x, NULL, NULL, &n); break;
    case EM_LAYERNORM:
    case EM_RMSNORM:
        gamma = em_input(ctx, m, "gamma", dt, 1, cd);
        if (op == EM_LAYERNORM) beta = em_input(ctx, m, "beta", dt, 1, cd);
        y = em_node(ctx, m, op == EM_LAYERNORM ? "LayerNormalization" : "RMSNormalization", "y", op == EM_LAYERNORM ? 3 : 2,
                    x, gamma, beta, &n);
        if (n && lt_node_set_attr_float(ctx, n, "epsilon", 1e-5f) != LT_OK) return ctx->status;
        break;
    default: return lt_error(ctx, LT_ERR_USAGE, "em_build: unknown op %d", (int)op);
    }
    if (!x || !y) return ctx->status ? ctx->status : lt_error(ctx, LT_ERR_INTERNAL, "em_build: graph construction failed");
    g->outputs = lt_arena_alloc(&m->arena, sizeof *g->outputs);
    if (!g->outputs) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    g->outputs[0] = y;
    g->n_outputs = 1;
    y->is_output = true;
    k->vals[EM_Y] = y, k->vals[EM_X] = x, k->vals[EM_GAMMA] = gamma, k->vals[EM_BETA] = beta;
    LT_TRY(lt_graph_infer(ctx, m));

    lt_groups gs;
    LT_TRY(lt_fuse(ctx, m, &k->arena, NULL, &gs));
    const lt_group *grp = NULL;
    for (int i = 0; i < gs.n; i++)
        if (!gs.groups[i].host) {
            if (grp) return lt_error(ctx, LT_ERR_INTERNAL, "em_build %s: more than one kernel group", em_op_names[op]);
            grp = &gs.groups[i];
        }
    if (!grp) return lt_error(ctx, LT_ERR_INTERNAL, "em_build %s: no compiled group", em_op_names[op]);
    lt_lower_options lo = {.gpu = true};
    lt_lowered lw;
    LT_TRY(lt_lower_group(ctx, &gs, grp, &k->arena, &lo, &lw));
    size_t len = 0;
    for (int i = 0; i < lw.schedule.n && len + 80 < sizeof k->schedule; i++) {
        lt_sstep_format(&lw.schedule.steps[i], k->schedule + len, sizeof k->schedule - len);
        len += strlen(k->schedule + len);
        k->schedule[len++] = '\n';
        k->schedule[len] = 0;
    }
    LT_TRY(lt_lower_apply_schedule(ctx, &lw));
    LT_TRY(lt_lower_simplify(ctx, &lw));
    snprintf(k->kernel, sizeof k->kernel, "%s", lw.kernel->name);
    k->n_args = lw.n_args;
    if (k->n_args > 8) return lt_error(ctx, LT_ERR_INTERNAL, "em_build %s: %d kernel arguments", em_op_names[op], k->n_args);
    for (int j = 0; j < lw.n_args; j++) {
        k->role[j] = -1;
        for (int r = 0; r < 4; r++)
            if (lw.arg_values[j] && lw.arg_values[j] == k->vals[r]) k->role[j] = r;
        if (k->role[j] < 0 && lw.arg_values[j] && lt_value_const(lw.arg_values[j]))
            k->role[j] = EM_CONST, k->cval[j] = lt_value_const(lw.arg_values[j]);
        if (k->role[j] < 0)
            return lt_error(ctx, LT_ERR_INTERNAL, "em_build %s: kernel argument %d is no tensor of the graph", em_op_names[op], j);
    }
    char origin[64];
    snprintf(origin, sizeof origin, "%s (emitted from the compiler's Loop IR)", em_op_names[op]);
    lt_emit_kernel ek = {lw.kernel, origin};
    return lt_emit_module(ctx, &lt_lang_cuda, &ek, 1, NULL, &k->src);
}

#endif
