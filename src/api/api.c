/* api.c — the public C API (include/lathe.h) over the internal modules: a lathe_model wraps an
 * lt_model plus the list of inputs the caller provides and the last error; a lathe_tensor wraps a
 * reference to an lt_tensor. lathe_run checks inputs (io/bind.c), runs the reference interpreter and
 * hands back outputs the caller owns (copied when they alias model memory).
 */
#include "api_impl.h"

#include <stdio.h>
#include <string.h>

#include "base/file.h"
#include "compile/artifact.h"
#include "ops/infer.h"
#include "interp/interp.h"
#include "io/io.h"
#include "onnx/onnx.h"

#ifndef LATHE_VERSION
#define LATHE_VERSION "0.0.0"
#endif

_Static_assert(LATHE_OK == (int)LT_OK && LATHE_ERR_USAGE == (int)LT_ERR_USAGE &&
                   LATHE_ERR_INVALID == (int)LT_ERR_INVALID && LATHE_ERR_UNSUPPORTED == (int)LT_ERR_UNSUPPORTED &&
                   LATHE_ERR_NOMEM == (int)LT_ERR_NOMEM && LATHE_ERR_IO == (int)LT_ERR_IO &&
                   LATHE_ERR_INTERNAL == (int)LT_ERR_INTERNAL,
               "lathe_status mirrors lt_status");
_Static_assert(LATHE_INT2 == (int)LT_INT2 && LATHE_FLOAT == (int)LT_FLOAT && LATHE_BFLOAT16 == (int)LT_BFLOAT16,
               "lathe_dtype mirrors lt_dtype");
_Static_assert(LATHE_MAX_RANK == LT_MAX_RANK, "rank limit");

struct lathe_model {
    lt_model *m;
    void *bytes;     /* lathe_model_load_memory's copy of the file */
    int n_in;        /* inputs the caller provides */
    int *in_idx;     /* their positions in m->graph->inputs */
    uint64_t seed;
    int64_t max_loop_bytes;
    char err[LT_MSG_MAX];
};


const char *lathe_version(void) { return LATHE_VERSION; }

const char *lathe_status_name(lathe_status s) { return lt_status_name((lt_status)s); }

const char *lathe_dtype_name(lathe_dtype dt) {
    return lt_dtype_valid((int)dt) ? lt_dtype_name((lt_dtype)dt) : "undefined";
}

size_t lathe_dtype_size(lathe_dtype dt) {
    return lt_dtype_valid((int)dt) ? (size_t)lt_dtype_size((lt_dtype)dt) : 0;
}

/* ---- models ---- */
void lt_api_copy_err(const lt_ctx *ctx, char *errbuf, size_t n) {
    if (!errbuf || !n) return;
    size_t l = strlen(ctx->msg);
    if (l >= n) l = n - 1;
    memcpy(errbuf, ctx->msg, l);
    errbuf[l] = 0;
}

lt_status lt_api_bind(lt_ctx *ctx, lt_model *lm, const lathe_load_options *opts) {
    if (opts && opts->shapes && *opts->shapes) LT_TRY(lt_model_bind_shapes_spec(ctx, lm, opts->shapes));
    if (opts && opts->dims && *opts->dims) {
        char *copy = lt_mem_strdup(opts->dims), *save = NULL;
        if (!copy) return lt_error(ctx, LT_ERR_NOMEM, "out of memory");
        lt_status s = LT_OK;
        for (char *tok = strtok_r(copy, ",", &save); tok && s == LT_OK; tok = strtok_r(NULL, ",", &save))
            if (!strstr(tok, "..")) s = lt_model_bind_dim_spec(ctx, lm, tok); /* "seq=1..4096": a range, not a size */
        lt_mem_free(copy);
        return s;
    }
    return LT_OK;
}

static lathe_status finish_load(lt_ctx *ctx, lt_model *lm, void *bytes, const lathe_load_options *opts,
                                lathe_model **out, char *errbuf, size_t errbuf_size) {
    lathe_model *m = NULL;
    if (lt_api_bind(ctx, lm, opts) != LT_OK) goto fail;
    m = lt_calloc(ctx, 1, sizeof *m, "model handle");
    if (!m) goto fail;
    const lt_graph *g = lm->graph;
    m->in_idx = lt_calloc(ctx, (size_t)g->n_inputs + 1, sizeof *m->in_idx, "model handle");
    if (!m->in_idx) goto fail;
    for (int i = 0; i < g->n_inputs; i++)
        if (!g->inputs[i]->init) m->in_idx[m->n_in++] = i;
    m->m = lm;
    m->bytes = bytes;
    m->seed = opts ? opts->seed : 0;
    m->max_loop_bytes = opts ? opts->max_loop_bytes : 0;
    *out = m;
    return LATHE_OK;
fail:
    if (m) lt_mem_free(m->in_idx);
    lt_mem_free(m);
    lt_model_free(lm);
    lt_mem_free(bytes);
    lt_api_copy_err(ctx, errbuf, errbuf_size);
    return (lathe_status)ctx->status;
}

lathe_status lathe_model_load(const char *path, const lathe_load_options *opts, lathe_model **out, char *errbuf,
                              size_t errbuf_size) {
    lt_ctx ctx = {0};
    if (!path || !out) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_model_load: path and out must not be NULL");
        lt_api_copy_err(&ctx, errbuf, errbuf_size);
        return LATHE_ERR_USAGE;
    }
    lt_model *lm = NULL;
    if (lt_artifact_is_file(path)) { /* a .lathe artifact: its model (verified), shapes bound as saved; the
                                      * interpreter runs it, so its module's CPU features do not matter */
        lt_artifact *a = NULL;
        uint8_t *file = NULL;
        size_t size = 0;
        lt_status ls = lt_io_read_file(&ctx, path, &file, &size);
        if (ls == LT_OK) ls = lt_artifact_parse(&ctx, path, file, size, &a);
        lt_mem_free(file);
        if (ls != LT_OK || lt_artifact_load_model(&ctx, a, &lm) != LT_OK) {
            lt_artifact_free(a);
            lt_api_copy_err(&ctx, errbuf, errbuf_size);
            return (lathe_status)ctx.status;
        }
        void *bytes = a->data; /* the model section lies in it: the model handle keeps it */
        a->data = NULL;
        lt_artifact_free(a);
        return finish_load(&ctx, lm, bytes, opts, out, errbuf, errbuf_size);
    }
    if (lt_onnx_load_file(&ctx, path, NULL, &lm) != LT_OK) {
        lt_api_copy_err(&ctx, errbuf, errbuf_size);
        return (lathe_status)ctx.status;
    }
    return finish_load(&ctx, lm, NULL, opts, out, errbuf, errbuf_size);
}

lathe_status lathe_model_load_memory(const void *data, size_t size, const lathe_load_options *opts,
                                     lathe_model **out, char *errbuf, size_t errbuf_size) {
    lt_ctx ctx = {0};
    if ((!data && size) || !out) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_model_load_memory: data and out must not be NULL");
        lt_api_copy_err(&ctx, errbuf, errbuf_size);
        return LATHE_ERR_USAGE;
    }
    void *bytes = lt_alloc(&ctx, size ? size : 1, "model bytes");
    if (!bytes) {
        lt_api_copy_err(&ctx, errbuf, errbuf_size);
        return LATHE_ERR_NOMEM;
    }
    if (size) memcpy(bytes, data, size);
    lt_model *lm = NULL;
    if (lt_onnx_load_memory(&ctx, bytes, size, NULL, NULL, &lm) != LT_OK) {
        lt_mem_free(bytes);
        lt_api_copy_err(&ctx, errbuf, errbuf_size);
        return (lathe_status)ctx.status;
    }
    return finish_load(&ctx, lm, bytes, opts, out, errbuf, errbuf_size);
}

void lathe_model_free(lathe_model *m) {
    if (!m) return;
    lt_model_free(m->m);
    lt_mem_free(m->bytes);
    lt_mem_free(m->in_idx);
    lt_mem_free(m);
}

const char *lathe_model_error(const lathe_model *m) { return m ? m->err : ""; }

int lathe_model_num_inputs(const lathe_model *m) { return m ? m->n_in : 0; }
int lathe_model_num_outputs(const lathe_model *m) { return m ? m->m->graph->n_outputs : 0; }

static const lt_value *in_value(const lathe_model *m, int i) {
    return m && i >= 0 && i < m->n_in ? m->m->graph->inputs[m->in_idx[i]] : NULL;
}
static const lt_value *out_value(const lathe_model *m, int i) {
    return m && i >= 0 && i < m->m->graph->n_outputs ? m->m->graph->outputs[i] : NULL;
}

const char *lathe_model_input_name(const lathe_model *m, int i) {
    const lt_value *v = in_value(m, i);
    return v ? v->name : NULL;
}
const char *lathe_model_output_name(const lathe_model *m, int i) {
    const lt_value *v = out_value(m, i);
    return v ? v->name : NULL;
}

static lathe_dtype value_dtype(const lt_value *v) {
    return v && v->type.kind == LT_TK_TENSOR ? (lathe_dtype)v->type.dtype : LATHE_DTYPE_UNDEFINED;
}
lathe_dtype lathe_model_input_dtype(const lathe_model *m, int i) { return value_dtype(in_value(m, i)); }
lathe_dtype lathe_model_output_dtype(const lathe_model *m, int i) { return value_dtype(out_value(m, i)); }

static int value_shape(const lt_value *v, int64_t *dims, int max_dims) {
    if (!v || v->type.kind != LT_TK_TENSOR || v->type.rank < 0) return -1;
    for (int k = 0; k < v->type.rank && k < max_dims && dims; k++)
        dims[k] = v->type.dims[k].value >= 0 ? v->type.dims[k].value : -1;
    return v->type.rank;
}
int lathe_model_input_shape(const lathe_model *m, int i, int64_t *dims, int max_dims) {
    return value_shape(in_value(m, i), dims, max_dims);
}
int lathe_model_output_shape(const lathe_model *m, int i, int64_t *dims, int max_dims) {
    return value_shape(out_value(m, i), dims, max_dims);
}

static const char *value_dim_name(const lt_value *v, int axis) {
    if (!v || v->type.kind != LT_TK_TENSOR || axis < 0 || axis >= v->type.rank) return NULL;
    const lt_dim *d = &v->type.dims[axis];
    return d->value < 0 && d->param && *d->param ? d->param : NULL;
}
const char *lathe_model_input_dim_name(const lathe_model *m, int i, int axis) {
    return value_dim_name(in_value(m, i), axis);
}
const char *lathe_model_output_dim_name(const lathe_model *m, int i, int axis) {
    return value_dim_name(out_value(m, i), axis);
}

/* ---- tensors ---- */
static lathe_status wrap(lt_tensor *t, lathe_tensor **out) {
    lathe_tensor *w = lt_mem_alloc(sizeof *w);
    if (!w) {
        lt_tensor_release(t);
        return LATHE_ERR_NOMEM;
    }
    w->t = t;
    *out = w;
    return LATHE_OK;
}

lathe_status lathe_tensor_create(lathe_dtype dt, int rank, const int64_t *dims, lathe_tensor **out) {
    if (!out || !lt_dtype_valid((int)dt) || rank < 0 || rank > LT_MAX_RANK || (rank > 0 && !dims))
        return LATHE_ERR_USAGE;
    for (int k = 0; k < rank; k++)
        if (dims[k] < 0) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    lt_tensor *t = NULL;
    if (lt_tensor_new(&ctx, (lt_dtype)dt, rank, dims, &t) != LT_OK) return (lathe_status)ctx.status;
    return wrap(t, out);
}

lathe_status lathe_tensor_create_copy(lathe_dtype dt, int rank, const int64_t *dims, const void *data,
                                      lathe_tensor **out) {
    if (dt == LATHE_STRING) return LATHE_ERR_USAGE;
    lathe_tensor *w = NULL;
    lathe_status s = lathe_tensor_create(dt, rank, dims, &w);
    if (s != LATHE_OK) return s;
    int64_t nb = lt_tensor_nbytes(w->t);
    if (nb > 0) {
        if (!data) {
            lathe_tensor_free(w);
            return LATHE_ERR_USAGE;
        }
        memcpy(w->t->data, data, (size_t)nb);
    }
    *out = w;
    return LATHE_OK;
}

void lathe_tensor_free(lathe_tensor *t) {
    if (!t) return;
    lt_tensor_release(t->t);
    lt_mem_free(t);
}

void *lathe_tensor_data(lathe_tensor *t) { return t ? t->t->data : NULL; }
lathe_dtype lathe_tensor_dtype(const lathe_tensor *t) { return t ? (lathe_dtype)t->t->dtype : LATHE_DTYPE_UNDEFINED; }
int lathe_tensor_rank(const lathe_tensor *t) { return t ? t->t->rank : -1; }
const int64_t *lathe_tensor_shape(const lathe_tensor *t) { return t ? t->t->dims : NULL; }
int64_t lathe_tensor_numel(const lathe_tensor *t) { return t ? t->t->numel : 0; }
size_t lathe_tensor_nbytes(const lathe_tensor *t) { return t ? (size_t)lt_tensor_nbytes(t->t) : 0; }

lathe_status lathe_tensor_set_string(lathe_tensor *t, int64_t i, const char *s, size_t len) {
    if (!t || t->t->dtype != LT_STRING || i < 0 || i >= t->t->numel || (!s && len)) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    return (lathe_status)lt_tensor_set_string(&ctx, t->t, i, s ? s : "", len);
}

/* ---- running ---- */
lathe_status lathe_run(lathe_model *m, const lathe_tensor *const *inputs, int n_inputs, lathe_tensor **outputs,
                       int n_outputs) {
    if (!m) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    m->err[0] = 0;
    const lt_graph *g = m->m->graph;
    lt_datum **in = NULL, **outs = NULL;
    if (n_inputs != m->n_in || n_outputs != g->n_outputs || (n_inputs && !inputs) || (n_outputs && !outputs)) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_run: the model takes %d inputs and gives %d outputs (called with %d and %d)",
                 m->n_in, g->n_outputs, n_inputs, n_outputs);
        goto done;
    }
    if (lt_model_check_supported(&ctx, m->m) != LT_OK) goto done;
    in = lt_calloc(&ctx, (size_t)g->n_inputs + 1, sizeof *in, "inputs");
    outs = lt_calloc(&ctx, (size_t)g->n_outputs + 1, sizeof *outs, "outputs");
    if (!in || !outs) goto done;
    lt_dim_binding bind = {0};
    for (int i = 0; i < n_inputs; i++) {
        const lt_value *v = g->inputs[m->in_idx[i]];
        if (!inputs[i]) {
            lt_error(&ctx, LT_ERR_USAGE, "lathe_run: input %d '%s' is NULL", i, v->name);
            goto done;
        }
        if (lt_io_check_input(&ctx, v, inputs[i]->t, &bind) != LT_OK) goto done;
        if (lt_datum_tensor(&ctx, lt_tensor_retain(inputs[i]->t), &in[m->in_idx[i]]) != LT_OK) goto done;
    }
    lt_interp_options opt = {.seed = m->seed, .max_loop_bytes = m->max_loop_bytes};
    if (lt_interp_run(&ctx, m->m, &opt, in, outs) != LT_OK) goto done;
    if (lt_api_hand_outputs(&ctx, g, outs, outputs) != LT_OK) goto done;
done:
    for (int i = 0; in && i < g->n_inputs; i++) lt_datum_release(in[i]);
    for (int k = 0; outs && k < g->n_outputs; k++) lt_datum_release(outs[k]);
    lt_mem_free(in);
    lt_mem_free(outs);
    if (ctx.status != LT_OK) {
        snprintf(m->err, sizeof m->err, "%s", ctx.msg);
        return (lathe_status)ctx.status;
    }
    return LATHE_OK;
}

lt_status lt_api_hand_outputs(lt_ctx *ctx, const lt_graph *g, lt_datum *const *outs, lathe_tensor **outputs) {
    lt_tensor **res = lt_calloc(ctx, (size_t)g->n_outputs + 1, sizeof *res, "outputs");
    lathe_tensor **w = lt_calloc(ctx, (size_t)g->n_outputs + 1, sizeof *w, "outputs");
    lt_status s = LT_OK;
    if (!res || !w) { s = LT_ERR_NOMEM; goto done; }
    for (int k = 0; k < g->n_outputs && s == LT_OK; k++) {
        const lt_datum *d = outs[k];
        if (!d || d->kind != LT_DK_TENSOR) {
            s = lt_error(ctx, LT_ERR_UNSUPPORTED, "output %d '%s' is not a tensor: the C API returns tensors only", k,
                         g->outputs[k]->name);
            break;
        }
        /* A tensor shared with the model (an initializer passed through) or viewing its memory is
         * copied, so the caller may write to it and free the model first. */
        if (d->tensor->borrowed || d->tensor->refs > 1) s = lt_tensor_copy(ctx, d->tensor, &res[k]);
        else res[k] = lt_tensor_retain(d->tensor);
        if (s == LT_OK && !(w[k] = lt_mem_alloc(sizeof **w))) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (outputs)");
    }
    if (s == LT_OK) /* all outputs ready: hand them over */
        for (int k = 0; k < g->n_outputs; k++) {
            w[k]->t = res[k];
            res[k] = NULL;
            outputs[k] = w[k];
            w[k] = NULL;
        }
done:
    for (int k = 0; res && w && k < g->n_outputs; k++) {
        lt_tensor_release(res[k]);
        lt_mem_free(w[k]);
    }
    lt_mem_free(res);
    lt_mem_free(w);
    return s;
}
