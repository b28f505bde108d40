/* api_compile.c — the public C API of compiled models (include/lathe.h, "compiled models"): a
 * lathe_compiled owns its own loaded model (the passes rewrite it) and the plan lt_compile built.
 *
 * Its inputs are the graph inputs without an initializer, in graph order (those with one are frozen
 * to it: constants for the compiler). The plan's run takes one entry per graph input as it was
 * before compiling; api_idx maps the public input i to that position. Input and output types come
 * from the plan's slots (the compiled dtype and shape).
 */
#include "api_impl.h"

#include <stdio.h>
#include <string.h>

#include "compile/artifact.h"
#include "compile/compile.h"
#include "ops/infer.h"
#include "io/io.h"
#include "onnx/onnx.h"
#include "tune/tune_cpu.h"

struct lathe_compiled {
    lt_model *m;
    lt_plan *plan;
    int n_in;
    int *api_idx;       /* public input -> plan input (graph input before compiling) */
    const char **names; /* public input names (strings in the plan) */
    int n_plan_in;
    lt_plan_run_options run; /* the load options' seed and Loop limit, for every run */
    char *report;
    lt_artifact *art;   /* a .lathe artifact's bytes (the model lies in them), NULL for an ONNX file */
    char err[LT_MSG_MAX];
};

void lathe_compiled_free(lathe_compiled *c) {
    if (!c) return;
    lt_plan_free(c->plan);
    lt_model_free(c->m);
    lt_artifact_free(c->art);
    lt_mem_free(c->api_idx);
    lt_mem_free(c->names);
    lt_mem_free(c->report);
    lt_mem_free(c);
}

lathe_status lathe_compile(const char *path, const lathe_load_options *load, const lathe_compile_options *opts,
                           lathe_compiled **out, char *errbuf, size_t errbuf_size) {
    lt_ctx ctx = {0};
    lathe_compiled *c = NULL;
    const char **given = NULL;
    lt_compile_report rep = {0};
    lt_tune_cpu tc = {0}; /* a tuning database's schedules (CPU), when opts->tune_db names one */
    if (!path || !out) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_compile: path and out must not be NULL");
        goto fail;
    }
    if (opts && (opts->opt_level < -1 || opts->opt_level > 3)) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_compile: opt_level must be -1 (-O0), 0 (default), 1, 2 or 3, not %d",
                 opts->opt_level);
        goto fail;
    }
    c = lt_calloc(&ctx, 1, sizeof *c, "compiled model");
    if (!c) goto fail;
    if (load) c->run.seed = load->seed, c->run.max_loop_bytes = load->max_loop_bytes;
    if (lt_artifact_is_file(path)) { /* verified, checked against this machine, shapes as saved */
        if (lt_artifact_open(&ctx, path, &c->art) != LT_OK || lt_artifact_load_model(&ctx, c->art, &c->m) != LT_OK)
            goto fail;
    } else if (lt_onnx_load_file(&ctx, path, NULL, &c->m) != LT_OK) {
        goto fail;
    }
    if (lt_api_bind(&ctx, c->m, load) != LT_OK || lt_model_check_supported(&ctx, c->m) != LT_OK) goto fail;
    const lt_graph *g = c->m->graph;
    c->n_plan_in = g->n_inputs;
    c->api_idx = lt_calloc(&ctx, (size_t)g->n_inputs + 1, sizeof *c->api_idx, "compiled model");
    c->names = lt_calloc(&ctx, (size_t)g->n_inputs + 1, sizeof *c->names, "compiled model");
    given = lt_calloc(&ctx, (size_t)g->n_inputs + 1, sizeof *given, "compiled model");
    if (!c->api_idx || !c->names || !given) goto fail;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (v->init) continue;
        if (v->type.kind == LT_TK_TENSOR) { /* every dim must be known */
            int rank;
            int64_t dims[LT_MAX_RANK];
            if (lt_io_input_shape(&ctx, v, NULL, &rank, dims) != LT_OK) goto fail;
        }
        given[c->n_in] = v->name;
        c->api_idx[c->n_in++] = i;
    }
    lt_compile_options co;
    lt_compile_options_init(&co);
    if (opts) {
        co.opt_level = opts->opt_level == 0 ? LT_COMPILE_DEFAULT_LEVEL : opts->opt_level < 0 ? 0 : opts->opt_level;
        if (opts->backend) co.backend = opts->backend;
        co.threads = opts->threads > 0 ? opts->threads : 0;
        co.cache_dir = opts->cache_dir;
        co.cc = opts->cc;
        co.cc_timeout_s = opts->cc_timeout;
        co.dump_code_dir = opts->dump_code_dir;
        co.nvrtc = opts->nvrtc;
        co.enable = opts->enable_passes;
    }
    co.given_inputs = given;
    if (c->art) lt_artifact_compile_options(c->art, &co); /* the saved options and module: no compiler */
    lt_target tgt;
    lt_ctx tctx = {0};
    bool tunable = lt_backend_target_named(&tctx, co.backend, NULL, &tgt) == LT_OK && tgt.tune_db;
    if (opts && opts->tune_db && tunable && !c->art &&
        lt_tune_cpu_attach(&ctx, opts->tune_db, false, c->m, &co, &tc) != LT_OK)
        goto fail;
    lt_status cs = lt_compile(&ctx, c->m, &co, &c->plan, &rep);
    lt_tune_cpu_detach(&co, &tc);
    if (cs != LT_OK) goto fail;
    for (int i = 0; i < c->n_in; i++) c->names[i] = lt_plan_input_name(c->plan, c->api_idx[i]);
    lt_strbuf b = {0};
    lt_compile_report_print(&rep, &b);
    if (b.failed || !b.s) {
        lt_sb_free(&b);
        lt_error(&ctx, LT_ERR_NOMEM, "out of memory (compile report)");
        goto fail;
    }
    c->report = b.s;
    lt_compile_report_free(&rep);
    lt_mem_free(given);
    *out = c;
    return LATHE_OK;
fail:
    lt_tune_db_free(tc.db);
    lt_compile_report_free(&rep);
    lt_mem_free(given);
    lathe_compiled_free(c);
    lt_api_copy_err(&ctx, errbuf, errbuf_size);
    return (lathe_status)(ctx.status ? ctx.status : LT_ERR_INTERNAL);
}

const char *lathe_compiled_error(const lathe_compiled *c) { return c ? c->err : ""; }
const char *lathe_compiled_report(const lathe_compiled *c) { return c && c->report ? c->report : ""; }
int lathe_compiled_num_inputs(const lathe_compiled *c) { return c ? c->n_in : 0; }
int lathe_compiled_num_outputs(const lathe_compiled *c) { return c ? c->m->graph->n_outputs : 0; }

const char *lathe_compiled_input_name(const lathe_compiled *c, int i) {
    return c && i >= 0 && i < c->n_in ? c->names[i] : NULL;
}
const char *lathe_compiled_output_name(const lathe_compiled *c, int i) {
    return c && i >= 0 && i < c->m->graph->n_outputs ? c->m->graph->outputs[i]->name : NULL;
}

static const lt_plan_slot *in_slot(const lathe_compiled *c, int i) {
    if (!c || i < 0 || i >= c->n_in) return NULL;
    return lt_plan_get_slot(c->plan, lt_plan_input_slot(c->plan, c->api_idx[i]));
}
static const lt_value *out_value(const lathe_compiled *c, int k) {
    return c && k >= 0 && k < c->m->graph->n_outputs ? c->m->graph->outputs[k] : NULL;
}

lathe_dtype lathe_compiled_input_dtype(const lathe_compiled *c, int i) {
    const lt_plan_slot *s = in_slot(c, i);
    if (s) return (lathe_dtype)s->dtype;
    /* an input no step reads has no slot: its declared type */
    if (c && i >= 0 && i < c->n_in) {
        const lt_value *v = NULL;
        for (int k = 0; k < c->m->graph->n_inputs; k++)
            if (strcmp(c->m->graph->inputs[k]->name, c->names[i]) == 0) v = c->m->graph->inputs[k];
        if (v && v->type.kind == LT_TK_TENSOR) return (lathe_dtype)v->type.dtype;
    }
    return LATHE_DTYPE_UNDEFINED;
}

lathe_dtype lathe_compiled_output_dtype(const lathe_compiled *c, int k) {
    const lt_value *v = out_value(c, k);
    return v && v->type.kind == LT_TK_TENSOR ? (lathe_dtype)v->type.dtype : LATHE_DTYPE_UNDEFINED;
}

static int type_shape(const lt_type *t, int64_t *dims, int max_dims) {
    if (t->kind != LT_TK_TENSOR || t->rank < 0) return -1;
    for (int k = 0; k < t->rank && k < max_dims && dims; k++) dims[k] = t->dims[k].value >= 0 ? t->dims[k].value : -1;
    return t->rank;
}

int lathe_compiled_input_shape(const lathe_compiled *c, int i, int64_t *dims, int max_dims) {
    const lt_plan_slot *s = in_slot(c, i);
    if (s && s->value) return type_shape(&s->value->type, dims, max_dims);
    return -1;
}

int lathe_compiled_output_shape(const lathe_compiled *c, int k, int64_t *dims, int max_dims) {
    const lt_value *v = out_value(c, k);
    return v ? type_shape(&v->type, dims, max_dims) : -1;
}

size_t lathe_compiled_output_bytes(const lathe_compiled *c, int k) {
    if (!c || k < 0 || k >= c->m->graph->n_outputs) return 0;
    int64_t b = lt_plan_output_bytes(c->plan, k);
    return b > 0 ? (size_t)b : 0;
}

void lathe_compiled_set_threads(lathe_compiled *c, int threads) {
    if (c) lt_plan_set_threads(c->plan, threads > 0 ? threads : 0);
}

static lathe_status finish(lathe_compiled *c, const lt_ctx *ctx) {
    if (ctx->status == LT_OK) return LATHE_OK;
    snprintf(c->err, sizeof c->err, "%s", ctx->msg);
    return (lathe_status)ctx->status;
}

lathe_status lathe_compiled_run(lathe_compiled *c, const lathe_tensor *const *inputs, int n_inputs,
                                lathe_tensor **outputs, int n_outputs) {
    if (!c) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    c->err[0] = 0;
    const lt_graph *g = c->m->graph;
    lt_datum **in = NULL, **outs = NULL;
    if (n_inputs != c->n_in || n_outputs != g->n_outputs || (n_inputs && !inputs) || (n_outputs && !outputs)) {
        lt_error(&ctx, LT_ERR_USAGE,
                 "lathe_compiled_run: the model takes %d inputs and gives %d outputs (called with %d and %d)", c->n_in,
                 g->n_outputs, n_inputs, n_outputs);
        return finish(c, &ctx);
    }
    in = lt_calloc(&ctx, (size_t)c->n_plan_in + 1, sizeof *in, "inputs");
    outs = lt_calloc(&ctx, (size_t)g->n_outputs + 1, sizeof *outs, "outputs");
    if (!in || !outs) goto done;
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i]) {
            lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_run: input %d '%s' is NULL", i, c->names[i]);
            goto done;
        }
        if (lt_datum_tensor(&ctx, lt_tensor_retain(inputs[i]->t), &in[c->api_idx[i]]) != LT_OK) goto done;
    }
    if (lt_plan_run(&ctx, c->plan, &c->run, in, outs) != LT_OK) goto done;
    lt_api_hand_outputs(&ctx, g, outs, outputs);
done:
    for (int i = 0; in && i < c->n_plan_in; i++) lt_datum_release(in[i]);
    for (int k = 0; outs && k < g->n_outputs; k++) lt_datum_release(outs[k]);
    lt_mem_free(in);
    lt_mem_free(outs);
    return finish(c, &ctx);
}

lathe_status lathe_compiled_run_buffers(lathe_compiled *c, const void *const *inputs, int n_inputs,
                                        void *const *outputs, int n_outputs) {
    if (!c) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    c->err[0] = 0;
    const lt_graph *g = c->m->graph;
    if (n_inputs != c->n_in || n_outputs != g->n_outputs || (n_inputs && !inputs) || (n_outputs && !outputs)) {
        lt_error(&ctx, LT_ERR_USAGE,
                 "lathe_compiled_run_buffers: the model takes %d inputs and gives %d outputs (called with %d and %d)",
                 c->n_in, g->n_outputs, n_inputs, n_outputs);
        return finish(c, &ctx);
    }
    const void *stack_in[16];
    const void **in = c->n_plan_in <= 16 ? stack_in : lt_calloc(&ctx, (size_t)c->n_plan_in, sizeof *in, "inputs");
    if (!in) return finish(c, &ctx);
    for (int i = 0; i < c->n_plan_in; i++) in[i] = NULL;
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i]) {
            lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_run_buffers: input %d '%s' is NULL", i, c->names[i]);
            break;
        }
        in[c->api_idx[i]] = inputs[i];
    }
    for (int k = 0; k < n_outputs && ctx.status == LT_OK; k++)
        if (!outputs[k]) lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_run_buffers: output %d is NULL", k);
    if (ctx.status == LT_OK) lt_plan_run_buffers(&ctx, c->plan, &c->run, in, outputs);
    if (in != stack_in) lt_mem_free(in);
    return finish(c, &ctx);
}
