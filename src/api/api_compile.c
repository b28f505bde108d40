/* api_compile.c — the public C API of compiled models (include/lathe.h, "compiled models"): a
 * lathe_compiled owns its own loaded model (the passes rewrite it) and the plan lt_compile built.
 *
 * Its inputs are the graph inputs without an initializer, in graph order (those with one are frozen
 * to it: constants for the compiler). The plan's run takes one entry per graph input as it was
 * before compiling; api_idx maps the public input i to that position. Input and output types come
 * from the plan's slots (the compiled dtype and shape).
 * lathe_compiled_run_device (models compiled for a device backend) checks the caller's device
 * pointers and orders the run after the caller's stream through the CUDA layer, then runs the plan on
 * them (lt_plan_run_device).
 */
#include "api_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda.h"
#include "compile/artifact.h"
#include "compile/compile.h"
#include "compile/family.h"
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
    char *report_base;  /* a plan with a rest (a split model): the compile's report, before the rest's */
    lt_artifact *art;   /* a .lathe artifact's bytes (the model lies in them), NULL for an ONNX file */
    /* Symbolic dims left unbound: one family (compile/family.h) hands out a plan per input shape,
     * sharing built modules; plan stays NULL, m is the model as bound (names and declared types). */
    lt_family *fam;
    lt_plan *cur;       /* the family's plan of the last shapes run or selected (lathe_compiled_select_shapes);
                         * valid until the family's next plan call, which sets it again */
    lt_arena keep;      /* the family's copies: the file, the load bindings, the compile options' strings */
    const char *path, *shapes, *dims;
    int threads;        /* lathe_compiled_set_threads, for every plan of the family (0: default) */
    lt_plan_copies copies; /* the last run's (lathe_compiled_last_run_copies) */
    char err[LT_MSG_MAX];
};

void lathe_compiled_free(lathe_compiled *c) {
    if (!c) return;
    lt_family_free(c->fam);
    lt_arena_free(&c->keep);
    lt_plan_free(c->plan);
    lt_model_free(c->m);
    lt_artifact_free(c->art);
    lt_mem_free(c->api_idx);
    lt_mem_free(c->names);
    lt_mem_free(c->report);
    lt_mem_free(c->report_base);
    lt_mem_free(c);
}

/* The family's loader: the file again, with the load options' shapes and sizes. */
static lt_status family_load(void *user, lt_ctx *ctx, lt_model **out) {
    const lathe_compiled *c = user;
    LT_TRY(lt_onnx_load_file(ctx, c->path, NULL, out));
    lathe_load_options lo = {.shapes = c->shapes, .dims = c->dims};
    lt_status s = lt_api_bind(ctx, *out, &lo);
    if (s != LT_OK) {
        lt_model_free(*out);
        *out = NULL;
    }
    return s;
}

static const char *keep_str(lathe_compiled *c, const char *s) { return s ? lt_arena_strdup(&c->keep, s) : NULL; }

/* Ranges of the load options' dims ("seq=1..4096"), into the family options. */
static lt_status parse_ranges(lt_ctx *ctx, lathe_compiled *c, lt_family_options *fo) {
    if (!c->dims) return LT_OK;
    int n = 1;
    for (const char *p = c->dims; *p; p++) n += *p == ',';
    lt_dim_range *r = lt_arena_alloc(&c->keep, (size_t)n * sizeof *r);
    char *copy = lt_arena_strdup(&c->keep, c->dims), *save = NULL;
    if (!r || !copy) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (dim ranges)");
    fo->ranges = r;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *dots = strstr(tok, ".."), *end1 = NULL, *end2 = NULL;
        if (!dots) continue;
        long long lo = eq ? strtoll(eq + 1, &end1, 10) : 0, hi = strtoll(dots + 2, &end2, 10);
        if (!eq || eq == tok || end1 != dots || !*(dots + 2) || *end2)
            return lt_error(ctx, LT_ERR_USAGE, "dim range '%s': expected NAME=LO..HI (seq=1..4096)", tok);
        *eq = 0;
        r[fo->n_ranges++] = (lt_dim_range){tok, lo, hi};
    }
    return LT_OK;
}

/* Symbolic dims left unbound: the family that compiles each input shape it meets. */
static lt_status make_family(lt_ctx *ctx, lathe_compiled *c, const char *path, const lathe_load_options *load,
                             const lt_compile_options *co) {
    if (c->art)
        return lt_error(ctx, LT_ERR_USAGE, "an artifact is saved for the shapes it was compiled at: every dim is bound");
    c->path = keep_str(c, path);
    c->shapes = load ? keep_str(c, load->shapes) : NULL;
    c->dims = load ? keep_str(c, load->dims) : NULL;
    lt_family_options fo = {.compile = *co, .model = c->m, .load = family_load, .load_user = c};
    lt_compile_options *fc = &fo.compile; /* its strings live as long as the family */
    fc->backend = keep_str(c, co->backend), fc->cache_dir = keep_str(c, co->cache_dir), fc->cc = keep_str(c, co->cc);
    fc->dump_code_dir = keep_str(c, co->dump_code_dir), fc->nvrtc = keep_str(c, co->nvrtc);
    fc->enable = keep_str(c, co->enable);
    fc->given_inputs = NULL, fc->schedule_hook = NULL, fc->schedule_user = NULL, fc->tuned_passes = NULL;
    if (!c->path) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
    LT_TRY(parse_ranges(ctx, c, &fo));
    LT_TRY(lt_family_new(ctx, &fo, &c->fam));
    c->report = lt_mem_strdup("compiled for every input shape: each new shape runs the host pipeline, "
                              "kernels are built once per bucket (none yet)\n");
    return c->report ? LT_OK : lt_error(ctx, LT_ERR_NOMEM, "out of memory");
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
    lt_arena_init(&c->keep);
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
    bool symbolic = false; /* a dim left unbound: compiled for every shape (a family) */
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (v->init) continue;
        if (v->type.kind == LT_TK_TENSOR) {
            int rank;
            int64_t dims[LT_MAX_RANK];
            lt_ctx c2 = {0};
            if (lt_io_input_shape(&c2, v, NULL, &rank, dims) != LT_OK) {
                if (v->type.rank < 0) { /* not even a rank: nothing to compile for */
                    lt_error(&ctx, c2.status, "%s", c2.msg);
                    goto fail;
                }
                symbolic = true;
            }
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
        co.no_split = opts->no_split != 0;
        co.dump_code_dir = opts->dump_code_dir;
        co.nvrtc = opts->nvrtc;
        co.enable = opts->enable_passes;
    }
    co.given_inputs = given;
    if (c->art) lt_artifact_compile_options(c->art, &co); /* the saved options and module: no compiler */
    if (symbolic) {
        for (int i = 0; i < c->n_in; i++) c->names[i] = g->inputs[c->api_idx[i]]->name;
        if (make_family(&ctx, c, path, load, &co) != LT_OK) goto fail;
        lt_mem_free(given);
        *out = c;
        return LATHE_OK;
    }
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
    lt_strbuf rest = {0};
    bool split = lt_plan_rest_print(c->plan, &rest);
    lt_sb_free(&rest);
    if (split && !(c->report_base = lt_mem_strdup(c->report))) {
        lt_error(&ctx, LT_ERR_NOMEM, "out of memory (compile report)");
        goto fail;
    }
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
/* A split model's report: the compile's, then what its rest compiled so far; built when asked, not on
 * every run (the rest's plans change only in runs, its counts are read now). */
static void rest_report(lathe_compiled *c, lt_strbuf *b) {
    lt_sb_printf(b, "%s", c->report_base);
    lt_plan_rest_print(c->plan, b);
}

/* A family's report, once it has built a plan: its buckets and counts as they are now (runs change
 * the graph counts). */
static void family_report(lathe_compiled *c, lt_strbuf *b) {
    lt_family_stats st;
    lt_family_get_stats(c->fam, &st);
    if (st.plans_built > 0) lt_family_print(c->fam, b); /* the compile's line stands until then */
}

const char *lathe_compiled_report(const lathe_compiled *c) {
    if (!c) return "";
    /* the report string is a cache the call refreshes */
    lt_strbuf b = {0};
    if (c->fam) family_report((lathe_compiled *)c, &b);
    else if (c->report_base) rest_report((lathe_compiled *)c, &b);
    if (!b.failed && b.s) {
        lt_mem_free(c->report);
        ((lathe_compiled *)c)->report = b.s;
    } else lt_sb_free(&b);
    return c->report ? c->report : "";
}
int lathe_compiled_num_inputs(const lathe_compiled *c) { return c ? c->n_in : 0; }
int lathe_compiled_num_outputs(const lathe_compiled *c) { return c ? c->m->graph->n_outputs : 0; }

const char *lathe_compiled_input_name(const lathe_compiled *c, int i) {
    return c && i >= 0 && i < c->n_in ? c->names[i] : NULL;
}
const char *lathe_compiled_output_name(const lathe_compiled *c, int i) {
    return c && i >= 0 && i < c->m->graph->n_outputs ? c->m->graph->outputs[i]->name : NULL;
}

static const lt_plan_slot *in_slot(const lathe_compiled *c, int i) {
    if (!c || !c->plan || i < 0 || i >= c->n_in) return NULL;
    return lt_plan_get_slot(c->plan, lt_plan_input_slot(c->plan, c->api_idx[i]));
}
/* The plan runs take: the compiled one, or the family's for the shapes last run or selected. */
static lt_plan *run_plan(const lathe_compiled *c) { return c->fam ? c->cur : c->plan; }

/* Output k as declared, or (a family with shapes selected) as bound at those shapes. */
static const lt_value *out_value(const lathe_compiled *c, int k) {
    if (!c || k < 0 || k >= c->m->graph->n_outputs) return NULL;
    if (c->fam && c->cur) return lt_plan_model(c->cur)->graph->outputs[k];
    return c->m->graph->outputs[k];
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
    if (c && c->fam && i >= 0 && i < c->n_in) /* every shape: the declared one, -1 where symbolic */
        return type_shape(&c->m->graph->inputs[c->api_idx[i]]->type, dims, max_dims);
    return -1;
}

int lathe_compiled_output_shape(const lathe_compiled *c, int k, int64_t *dims, int max_dims) {
    const lt_value *v = out_value(c, k);
    return v ? type_shape(&v->type, dims, max_dims) : -1;
}

size_t lathe_compiled_output_bytes(const lathe_compiled *c, int k) {
    if (!c || !run_plan(c) || k < 0 || k >= c->m->graph->n_outputs) return 0;
    int64_t b = lt_plan_output_bytes(run_plan(c), k);
    return b > 0 ? (size_t)b : 0;
}

void lathe_compiled_set_threads(lathe_compiled *c, int threads) {
    if (!c) return;
    c->threads = threads > 0 ? threads : 0;
    if (c->plan) lt_plan_set_threads(c->plan, c->threads);
}

/* The family's plan for these input shapes (compiled now if new; the report then says so); it becomes
 * the current one (c->cur). */
static lt_status family_plan_at(lt_ctx *ctx, lathe_compiled *c, const int *ranks, const int64_t *const *dims,
                                lt_plan **out) {
    c->cur = NULL; /* the family's call may drop the plan it pointed at */
    LT_TRY(lt_family_plan(ctx, c->fam, c->n_in, ranks, dims, out));
    c->cur = *out;
    if (c->threads) lt_plan_set_threads(*out, c->threads);
    return LT_OK;
}

static lt_status family_plan(lt_ctx *ctx, lathe_compiled *c, const lathe_tensor *const *inputs, lt_plan **out) {
    int ranks[64];
    const int64_t *dims[64];
    if (c->n_in > 64) return lt_error(ctx, LT_ERR_UNSUPPORTED, "a model of more than 64 inputs compiled for every shape");
    for (int i = 0; i < c->n_in; i++) ranks[i] = inputs[i]->t->rank, dims[i] = inputs[i]->t->dims;
    return family_plan_at(ctx, c, ranks, dims, out);
}

static void record_copies(lathe_compiled *c, const lt_plan *plan) {
    if (plan) lt_plan_last_copies(plan, &c->copies);
    else memset(&c->copies, 0, sizeof c->copies);
}

static lathe_status finish(lathe_compiled *c, const lt_ctx *ctx) {
    if (ctx->status == LT_OK) return LATHE_OK;
    snprintf(c->err, sizeof c->err, "%s", ctx->msg);
    return (lathe_status)ctx->status;
}

lathe_status lathe_compiled_select_shapes(lathe_compiled *c, int n_inputs, const int *ranks,
                                          const int64_t *const *dims) {
    if (!c) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    c->err[0] = 0;
    if (n_inputs != c->n_in || (n_inputs && (!ranks || !dims))) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_select_shapes: the model takes %d inputs (called with %d)", c->n_in,
                 n_inputs);
        return finish(c, &ctx);
    }
    for (int i = 0; i < n_inputs && ctx.status == LT_OK; i++)
        if (ranks[i] < 0 || ranks[i] > LT_MAX_RANK || (ranks[i] && !dims[i]))
            lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_select_shapes: input %d '%s': rank %d", i, c->names[i], ranks[i]);
    if (ctx.status == LT_OK && c->n_in > 64)
        lt_error(&ctx, LT_ERR_UNSUPPORTED, "a model of more than 64 inputs compiled for every shape");
    if (ctx.status == LT_OK && c->fam) {
        lt_plan *p;
        family_plan_at(&ctx, c, ranks, dims, &p);
        return finish(c, &ctx);
    }
    for (int i = 0; i < n_inputs && ctx.status == LT_OK; i++) { /* compiled for fixed shapes: these must be them */
        int64_t want[LT_MAX_RANK];
        int r = lathe_compiled_input_shape(c, i, want, LT_MAX_RANK);
        bool same = r == ranks[i];
        for (int a = 0; same && a < r; a++) same = want[a] == dims[i][a];
        if (r >= 0 && !same)
            lt_error(&ctx, LT_ERR_INVALID, "lathe_compiled_select_shapes: input %d '%s' does not have the shape the "
                     "model was compiled for", i, c->names[i]);
    }
    return finish(c, &ctx);
}

lathe_status lathe_compiled_run(lathe_compiled *c, const lathe_tensor *const *inputs, int n_inputs,
                                lathe_tensor **outputs, int n_outputs) {
    if (!c) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    c->err[0] = 0;
    memset(&c->copies, 0, sizeof c->copies);
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
    lt_plan *plan = c->plan;
    if (c->fam && family_plan(&ctx, c, inputs, &plan) != LT_OK) goto done;
    lt_status rs = lt_plan_run(&ctx, plan, &c->run, in, outs);
    record_copies(c, plan);
    if (rs != LT_OK) goto done;
    lt_api_hand_outputs(&ctx, g, outs, outputs);
done:
    for (int i = 0; in && i < c->n_plan_in; i++) lt_datum_release(in[i]);
    for (int k = 0; outs && k < g->n_outputs; k++) lt_datum_release(outs[k]);
    lt_mem_free(in);
    lt_mem_free(outs);
    return finish(c, &ctx);
}

/* The start of a run on caller memory: the error and copy counts cleared, the counts checked against
 * the model's (false, with the error in ctx, when they do not match or an array is missing). */
static bool run_start(lathe_compiled *c, lt_ctx *ctx, const char *fn, int n_inputs, bool have_inputs, int n_outputs,
                      bool have_outputs) {
    c->err[0] = 0;
    memset(&c->copies, 0, sizeof c->copies);
    const lt_graph *g = c->m->graph;
    if (n_inputs == c->n_in && n_outputs == g->n_outputs && (!n_inputs || have_inputs) && (!n_outputs || have_outputs))
        return true;
    lt_error(ctx, LT_ERR_USAGE, "%s: the model takes %d inputs and gives %d outputs (called with %d and %d)", fn, c->n_in,
             g->n_outputs, n_inputs, n_outputs);
    return false;
}

lathe_status lathe_compiled_run_buffers(lathe_compiled *c, const void *const *inputs, int n_inputs,
                                        void *const *outputs, int n_outputs) {
    if (!c) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    if (!run_start(c, &ctx, "lathe_compiled_run_buffers", n_inputs, inputs != NULL, n_outputs, outputs != NULL))
        return finish(c, &ctx);
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
    if (ctx.status == LT_OK && c->fam && !c->cur)
        lt_error(&ctx, LT_ERR_UNSUPPORTED, "lathe_compiled_run_buffers: the model has symbolic dims, so buffers "
                 "do not say its shapes: select them first (lathe_compiled_select_shapes), or use lathe_compiled_run");
    if (ctx.status == LT_OK) {
        lt_plan_run_buffers(&ctx, run_plan(c), &c->run, in, outputs);
        record_copies(c, run_plan(c));
    }
    if (in != stack_in) lt_mem_free(in);
    return finish(c, &ctx);
}

lathe_status lathe_compiled_run_device(lathe_compiled *c, const void *const *inputs, int n_inputs,
                                       void *const *outputs, int n_outputs, void *stream) {
    static const char empty[LT_MEMPLAN_ALIGN]; /* the address of a zero-byte input given as NULL */
    if (!c) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    const lt_graph *g = c->m->graph;
    if (!run_start(c, &ctx, "lathe_compiled_run_device", n_inputs, inputs != NULL, n_outputs, outputs != NULL))
        return finish(c, &ctx);
    if (c->fam && !c->cur) {
        lt_error(&ctx, LT_ERR_UNSUPPORTED, "lathe_compiled_run_device: the model was compiled for every shape (symbolic "
                 "dims left unbound), and device pointers do not say the shapes: select them first "
                 "(lathe_compiled_select_shapes)");
        return finish(c, &ctx);
    }
    lt_plan *plan = run_plan(c);
    lt_plan_stats st;
    lt_plan_get_stats(plan, &st);
    lt_backend *b = lt_plan_backend(plan);
    if (!st.device) {
        lt_error(&ctx, LT_ERR_UNSUPPORTED, "lathe_compiled_run_device: the model is compiled for the %s backend, which "
                 "runs on host memory: device pointers need a model compiled for the GPU (backend \"cuda\"); give "
                 "host memory to lathe_compiled_run_buffers", b ? b->vt->name : "cpu");
        return finish(c, &ctx);
    }
    lt_cuda *cu = lt_backend_cuda_device(b); /* NULL: another device backend (tests), nothing to ask a driver */
    const void *stack_in[16];
    const void **in = c->n_plan_in <= 16 ? stack_in : lt_calloc(&ctx, (size_t)c->n_plan_in, sizeof *in, "inputs");
    if (!in) return finish(c, &ctx);
    for (int i = 0; i < c->n_plan_in; i++) in[i] = NULL;
    char what[LT_MSG_MAX / 4];
    for (int i = 0; i < n_inputs && ctx.status == LT_OK; i++) {
        const lt_plan_slot *S = lt_plan_get_slot(plan, lt_plan_input_slot(plan, c->api_idx[i]));
        int64_t bytes = S ? S->bytes : -1;
        if (!inputs[i] && bytes != 0) {
            lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_run_device: input %d '%s' is NULL", i, c->names[i]);
            break;
        }
        in[c->api_idx[i]] = inputs[i] ? inputs[i] : empty;
        snprintf(what, sizeof what, "lathe_compiled_run_device: input %d '%s'", i, c->names[i]);
        if (cu && bytes > 0) lt_cuda_check_ptr(cu, &ctx, inputs[i], (size_t)bytes, what);
    }
    for (int k = 0; k < n_outputs && ctx.status == LT_OK; k++) {
        int64_t bytes = lt_plan_output_bytes(plan, k);
        if (bytes < 0) continue; /* refused by the plan: no static shape */
        if (!outputs[k] && bytes > 0) {
            lt_error(&ctx, LT_ERR_USAGE, "lathe_compiled_run_device: output %d '%s' is NULL", k, g->outputs[k]->name);
            break;
        }
        snprintf(what, sizeof what, "lathe_compiled_run_device: output %d '%s'", k, g->outputs[k]->name);
        if (cu && bytes > 0) lt_cuda_check_ptr(cu, &ctx, outputs[k], (size_t)bytes, what);
    }
    if (ctx.status == LT_OK && cu) lt_cuda_wait_stream(cu, &ctx, stream);
    if (ctx.status == LT_OK) {
        lt_plan_run_device(&ctx, plan, &c->run, in, outputs);
        record_copies(c, plan);
    }
    if (in != stack_in) lt_mem_free(in);
    return finish(c, &ctx);
}

lathe_status lathe_compiled_last_run_copies(const lathe_compiled *c, lathe_run_copies *out) {
    if (!c || !out) return LATHE_ERR_USAGE;
    const lt_plan_copies *p = &c->copies;
    *out = (lathe_run_copies){
        .host_to_device_bytes = p->bytes[LT_COPY_HOST_TO_DEVICE], .device_to_host_bytes = p->bytes[LT_COPY_DEVICE_TO_HOST],
        .device_to_device_bytes = p->bytes[LT_COPY_DEVICE_TO_DEVICE], .host_to_device = p->n[LT_COPY_HOST_TO_DEVICE],
        .device_to_host = p->n[LT_COPY_DEVICE_TO_HOST], .device_to_device = p->n[LT_COPY_DEVICE_TO_DEVICE]};
    return LATHE_OK;
}
