/* split_rest.c — the rest of a split model (split.h): written as an ONNX model, found again in a
 * family's cache by its hash, loaded and compiled as a family at its first run, and run for the sizes
 * each run's data gives (the DataDependentRest step's hook).
 */
#include "split_impl.h"

#include "../base/hash.h"
#include "../onnx/onnx.h"
#include "../onnx/onnx_writer.h"
#include "../passes/mutate.h"

#include <stdio.h>
#include <string.h>

void lt_split_rest_release(rest_model *rm) {
    if (!rm || --rm->refs > 0) return;
    lt_family_free(rm->fam);
    lt_model_free(rm->model);
    lt_mem_free(rm->bytes);
    lt_arena_free(&rm->arena);
    lt_mem_free(rm);
}

lt_rest_cache *lt_rest_cache_new(void) { return lt_mem_calloc(1, sizeof(lt_rest_cache)); }

void lt_rest_cache_free(lt_rest_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) lt_split_rest_release(c->v[i]);
    lt_mem_free(c->v);
    lt_mem_free(c);
}

/* ---- the rest model ---- */

/* A rest model input (or output): v's name, its type with each size the data decides an unnamed
 * symbolic dim; in a family's compile also each dim whose size is one of its symbolic dims' (outputs:
 * every dim), so the plans of its input shapes write the same rest model and share it
 * (lt_rest_cache) unless a size is derived (a flattened batch) or equal to a static one by chance.
 * Sizes 0 and 1 stay: the family gives them plans of their own anyway. Unnamed: the family probes
 * unnamed dims of one size together, so sizes one op gives several outputs (Unique's values and
 * counts, TopK's values and indices) move alike in its probes, and nothing requires them to agree (a
 * Split by computed sizes gives outputs of different sizes). */
static bool symbolic_size(const lt_compile_options *o, int64_t v) {
    for (int i = 0; v > 1 && i < o->n_symbolic_sizes; i++)
        if (o->symbolic_sizes[i] == v) return true;
    return false;
}

static lt_status value_clone(lt_ctx *ctx, lt_arena *a, const cut *c, const lt_compile_options *o, lt_value *v,
                             bool input, lt_value **out) {
    lt_value *cl = lt_arena_alloc(a, sizeof *cl);
    if (!cl) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    memset(cl, 0, sizeof *cl);
    cl->name = v->name;
    cl->is_input = input, cl->is_output = !input;
    LT_TRY(lt_type_copy(ctx, a, &cl->type, &v->type));
    for (int d = 0; d < cl->type.rank; d++) {
        int64_t size = cl->type.dims[d].value;
        bool data = input && c->vclass[v->id] == V_PADDED ? d == c->pad_axis[v->id] : size < 0;
        if (data || (o->shape_generic && (!input || symbolic_size(o, size)))) cl->type.dims[d] = (lt_dim){-1, NULL};
    }
    *out = cl;
    return LT_OK;
}

static lt_status write_rest(lt_ctx *ctx, const lt_model *m, const cut *c, const lt_compile_options *o, rest_model *rm) {
    const lt_graph *g = c->g;
    lt_arena *a = &rm->arena;
    lt_graph tg = {.name = "rest", .n_inputs = c->n_in, .n_outputs = c->n_model_out};
    lt_model tm = *m;
    tm.graph = &tg;
    tg.model = &tm;
    tg.inputs = lt_arena_alloc(a, ((size_t)c->n_in + 1) * sizeof *tg.inputs);
    tg.values = lt_arena_alloc(a, ((size_t)c->n_in + (size_t)c->n_inits + 1) * sizeof *tg.values);
    tg.nodes = lt_arena_alloc(a, ((size_t)c->n_rest + 1) * sizeof *tg.nodes);
    if (!tg.inputs || !tg.values || !tg.nodes) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    tg.outputs = lt_arena_alloc(a, ((size_t)c->n_model_out + 1) * sizeof *tg.outputs);
    if (!tg.outputs) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    for (int i = 0; i < c->n_in; i++) {
        LT_TRY(value_clone(ctx, a, c, o, c->in[i], true, &tg.inputs[i]));
        tg.values[tg.n_values++] = tg.inputs[i];
    }
    for (int i = 0; i < c->n_model_out; i++) LT_TRY(value_clone(ctx, a, c, o, c->outs[i], false, &tg.outputs[i]));
    for (int i = 0; i < c->n_inits; i++) tg.values[tg.n_values++] = c->inits[i];
    for (int i = 0; i < g->n_nodes; i++)
        if (c->rest[i]) tg.nodes[tg.n_nodes++] = g->nodes[i];
    LT_TRY(lt_onnx_write_model(ctx, &tm, &rm->bytes, &rm->size));
    lt_sha256_hex(rm->bytes, rm->size, rm->sha);
    return LT_OK;
}

/* The compile options of the rest's family: the outer compile's target and code generation, none of
 * its dumps, hooks or artifact options; strings copied. */
lt_status lt_split_rest_options(lt_ctx *ctx, const lt_compile_options *o, rest_model *rm) {
    lt_compile_options *r = &rm->opt;
    lt_compile_options_init(r);
    r->opt_level = o->opt_level, r->cc_timeout_s = o->cc_timeout_s, r->threads = o->threads, r->device = o->device;
    r->no_graphs = o->no_graphs, r->no_fusion = o->no_fusion, r->no_epilogues = o->no_epilogues;
    r->no_microkernels = o->no_microkernels, r->no_inplace = o->no_inplace, r->strict = o->strict;
    r->vector_lanes = o->vector_lanes;
    const char *const src[] = {o->backend, o->cache_dir, o->cc, o->extra_cflags, o->nvrtc, o->arch, o->disable, o->enable};
    const char **dst[] = {&r->backend, &r->cache_dir, &r->cc, &r->extra_cflags, &r->nvrtc, &r->arch, &r->disable, &r->enable};
    for (size_t i = 0; i < sizeof src / sizeof *src; i++)
        if (src[i] && !(*dst[i] = lt_arena_strdup(&rm->arena, src[i]))) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    return LT_OK;
}

bool lt_split_compiles_rest(const lt_compile_options *o) {
    return !o->no_split && !o->all_host && !o->save_prebuilt && !o->prebuilt;
}

rest_model *lt_split_rest_new(lt_ctx *ctx) {
    rest_model *rm = lt_calloc(ctx, 1, sizeof *rm, "split");
    if (!rm) return NULL;
    rm->refs = 1;
    lt_arena_init(&rm->arena);
    return rm;
}

lt_status lt_split_make_rest(lt_ctx *ctx, const lt_model *m, const lt_compile_options *opt, const cut *c,
                           rest_model **out) {
    rest_model *rm = lt_split_rest_new(ctx);
    if (!rm) return LT_ERR_NOMEM;
    lt_status s = write_rest(ctx, m, c, opt, rm);
    if (s != LT_OK) {
        lt_split_rest_release(rm);
        return s;
    }
    return lt_split_rest_share(ctx, opt, rm, out);
}

lt_status lt_split_rest_share(lt_ctx *ctx, const lt_compile_options *opt, rest_model *rm, rest_model **out) {
    lt_status s = lt_split_rest_options(ctx, opt, rm);
    lt_rest_cache *cache = opt->rest_cache;
    for (int i = 0; s == LT_OK && cache && i < cache->n; i++)
        if (!strcmp(cache->v[i]->sha, rm->sha) && cache->v[i]->size == rm->size) {
            lt_split_rest_release(rm);
            *out = cache->v[i];
            (*out)->refs++;
            return LT_OK;
        }
    if (s == LT_OK && cache && cache->n == cache->cap) {
        int cap = cache->cap ? 2 * cache->cap : 4;
        rest_model **nv = lt_mem_realloc(cache->v, (size_t)cap * sizeof *nv);
        if (nv) cache->v = nv, cache->cap = cap;
        else s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (split)");
    }
    if (s != LT_OK) {
        lt_split_rest_release(rm);
        return s;
    }
    if (cache) {
        cache->v[cache->n++] = rm;
        rm->refs++;
    }
    *out = rm;
    return LT_OK;
}

/* ---- running the rest ---- */

static lt_status rest_load(void *user, lt_ctx *ctx, lt_model **out) {
    const rest_model *rm = user;
    return lt_onnx_load_memory(ctx, rm->bytes, rm->size, NULL, NULL, out);
}

lt_status lt_split_rest_family(lt_ctx *ctx, rest_model *rm) {
    if (rm->fam) return LT_OK;
    if (!rm->model) LT_TRY(rest_load(rm, ctx, &rm->model));
    lt_family_options fo = {.compile = rm->opt, .model = rm->model, .load = rest_load, .load_user = rm};
    return lt_family_new(ctx, &fo, &rm->fam);
}

lt_status lt_split_download(lt_ctx *ctx, lt_backend *dev, lt_dtype dt, int rank, const int64_t *dims, const void *src,
                            lt_tensor **out) {
    LT_TRY(lt_tensor_new(ctx, dt, rank, dims, out));
    int64_t bytes = lt_tensor_nbytes(*out);
    lt_status s = bytes > 0 ? dev->vt->copy(dev, ctx, (*out)->data, src, (size_t)bytes, LT_COPY_DEVICE_TO_HOST) : LT_OK;
    if (s != LT_OK) lt_tensor_release(*out), *out = NULL;
    return s;
}

/* A host copy of device tensor t (its data in dev's memory), counted in copies. */
static lt_status download(lt_ctx *ctx, lt_backend *dev, const lt_tensor *t, lt_plan_copies *copies, lt_datum **out) {
    lt_tensor *h = NULL;
    LT_TRY(lt_split_download(ctx, dev, t->dtype, t->rank, t->dims, t->data, &h));
    copies->n[LT_COPY_DEVICE_TO_HOST]++, copies->bytes[LT_COPY_DEVICE_TO_HOST] += lt_tensor_nbytes(h);
    return lt_datum_tensor(ctx, h, out);
}

/* Run the rest's device plan on its inputs' device memory (each tin on the device): its outputs into
 * device buffers of this run, then copied to new host tensors (tout). */
static lt_status run_on_device(lt_ctx *ctx, lt_plan *plan, const lt_plan_run_options *ro, lt_datum *const *tin, int n,
                               lt_datum **tout, int n_out, lt_plan_copies *copies) {
    lt_backend *be = lt_plan_backend(plan);
    const void **ins = lt_calloc(ctx, (size_t)n + 1, sizeof *ins, "rest inputs");
    void **outs = lt_calloc(ctx, (size_t)n_out + 1, sizeof *outs, "rest outputs");
    lt_status s = ins && outs ? LT_OK : LT_ERR_NOMEM;
    for (int i = 0; i < n && s == LT_OK; i++) ins[i] = tin[i]->tensor->data;
    for (int k = 0; k < n_out && s == LT_OK; k++) {
        int64_t bytes = lt_plan_output_bytes(plan, k);
        s = be->vt->alloc(be, ctx, (size_t)(bytes > 0 ? bytes : 1), &outs[k]);
    }
    if (s == LT_OK) s = lt_plan_run_device(ctx, plan, ro, ins, outs);
    lt_plan_copies cp;
    lt_plan_last_copies(plan, &cp);
    for (int d = 0; d < 3; d++) copies->n[d] += cp.n[d], copies->bytes[d] += cp.bytes[d];
    for (int k = 0; k < n_out && s == LT_OK; k++) {
        const lt_plan_slot *S = lt_plan_get_slot(plan, lt_plan_output_slot(plan, k));
        lt_tensor t = {.dtype = S->dtype, .rank = S->rank, .data = outs[k]}; /* a view of the device buffer */
        memcpy(t.dims, S->dims, sizeof t.dims);
        s = download(ctx, be, &t, copies, &tout[k]);
    }
    for (int k = 0; outs && k < n_out; k++)
        if (outs[k]) be->vt->free(be, outs[k]);
    lt_mem_free(ins);
    lt_mem_free(outs);
    return s;
}

/* Can the rest's plan run on the device memory its inputs are in: a device plan whose outputs have
 * static shapes, every input on the device? */
static bool device_run_fits(const lt_split *sp, lt_plan *plan, const bool *on_device) {
    if (!on_device || !plan || lt_plan_backend(plan)->vt->host_memory) return false;
    for (int i = 0; i < sp->n_in; i++)
        if (!on_device[sp->ins[i].value_in]) return false;
    for (int k = 0; k < sp->n_model_out; k++)
        if (lt_plan_output_bytes(plan, k) < 0) return false;
    return true;
}

static lt_status rest_run(void *user, lt_ctx *ctx, const lt_plan_run_options *ro, lt_datum *const *in,
                          const bool *on_device, lt_backend *dev, int n_in, lt_datum **out, int n_out,
                          lt_plan_copies *copies) {
    lt_split *sp = user;
    rest_model *rm = sp->rm;
    if (n_out != sp->n_out || !rm)
        return lt_error(ctx, LT_ERR_INTERNAL, "the rest of a split model: %d outputs, %d expected", n_out, sp->n_out);
    if (sp->n_model_out > 0) LT_TRY(lt_split_rest_family(ctx, rm));
    int n = sp->n_in;
    lt_datum **tin = lt_calloc(ctx, (size_t)n + 1, sizeof *tin, "rest inputs");
    lt_datum **tout = lt_calloc(ctx, (size_t)sp->n_model_out + 1, sizeof *tout, "rest outputs");
    int *ranks = lt_calloc(ctx, (size_t)n + 1, sizeof *ranks, "rest inputs");
    const int64_t **dims = lt_calloc(ctx, (size_t)n + 1, sizeof *dims, "rest inputs");
    lt_status s = tin && tout && ranks && dims ? LT_OK : LT_ERR_NOMEM;
    for (int i = 0; i < n && s == LT_OK; i++) {
        const rest_in *ri = &sp->ins[i];
        lt_datum *d = ri->value_in < n_in ? in[ri->value_in] : NULL;
        if (!d || d->kind != LT_DK_TENSOR || !d->tensor) {
            s = lt_error(ctx, LT_ERR_INTERNAL, "the rest of a split model: input %d is not a tensor", i);
            break;
        }
        if (ri->count_in < 0) {
            tin[i] = lt_datum_retain(d);
        } else { /* the padded buffer's first elements, compact, the axis count long */
            const lt_datum *cd = ri->count_in < n_in ? in[ri->count_in] : NULL;
            const lt_tensor *b = d->tensor;
            int64_t count = cd && cd->kind == LT_DK_TENSOR && cd->tensor && cd->tensor->numel == 1
                                ? *(const int64_t *)cd->tensor->data : -1;
            int64_t len = ri->axis >= 0 && ri->axis < b->rank ? b->dims[ri->axis] : -1;
            if (len < 0 || count < 0 || count > len) {
                const char *who = ri->label ? ri->label : sp->first;
                s = ri->topk ? lt_error(ctx, LT_ERR_INVALID, "%s: K %lld out of range [0, %lld]", who, (long long)count,
                                        (long long)len)
                             : lt_error(ctx, LT_ERR_INVALID, "%s: the size the data gives, %lld, is outside 0..%lld", who,
                                        (long long)count, (long long)len);
                break;
            }
            int64_t vd[LT_MAX_RANK];
            memcpy(vd, b->dims, (size_t)b->rank * sizeof *vd);
            vd[ri->axis] = count;
            lt_tensor *t = NULL;
            s = lt_tensor_borrow(ctx, b->dtype, b->rank, vd, b->data, &t);
            if (s == LT_OK) s = lt_datum_tensor(ctx, t, &tin[i]);
        }
        if (s == LT_OK) ranks[i] = tin[i]->tensor->rank, dims[i] = tin[i]->tensor->dims;
    }
    lt_plan *plan = NULL;
    if (s == LT_OK && sp->n_model_out > 0) s = lt_family_plan(ctx, rm->fam, n, ranks, dims, &plan);
    bool on_dev = s == LT_OK && device_run_fits(sp, plan, on_device);
    for (int i = 0; i < n && s == LT_OK && on_device && !on_dev; i++) /* the host's run: device inputs copied down */
        if (on_device[sp->ins[i].value_in]) {
            lt_datum *h = NULL;
            s = download(ctx, dev, tin[i]->tensor, copies, &h);
            lt_datum_release(tin[i]);
            tin[i] = h;
        }
    if (s == LT_OK && plan) {
        if (on_dev) {
            s = run_on_device(ctx, plan, ro, tin, n, tout, sp->n_model_out, copies);
        } else {
            s = lt_plan_run(ctx, plan, ro, tin, tout);
            lt_plan_copies cp;
            lt_plan_last_copies(plan, &cp);
            for (int d = 0; d < 3; d++) copies->n[d] += cp.n[d], copies->bytes[d] += cp.bytes[d];
        }
    }
    for (int k = 0; k < n_out && s == LT_OK; k++) {
        const rest_out *o = &sp->outs[k];
        if (o->model_out >= 0) {
            out[k] = tout[o->model_out], tout[o->model_out] = NULL;
        } else if (on_dev && on_device[sp->ins[o->view_of].value_in]) { /* a padded output the graph returns */
            s = download(ctx, dev, tin[o->view_of]->tensor, copies, &out[k]);
        } else {
            out[k] = lt_datum_retain(tin[o->view_of]);
        }
    }
    for (int i = 0; tin && i < n; i++) lt_datum_release(tin[i]);
    for (int k = 0; tout && k < sp->n_model_out; k++) lt_datum_release(tout[k]);
    lt_mem_free(tin);
    lt_mem_free(tout);
    lt_mem_free(ranks);
    lt_mem_free(dims);
    return s == LT_ERR_NOMEM && !ctx->msg[0] ? lt_error(ctx, s, "out of memory (the rest of a split model)") : s;
}

void lt_split_free(lt_split *sp) {
    if (!sp) return;
    lt_split_rest_release(sp->rm);
    lt_arena_free(&sp->arena);
    lt_mem_free(sp);
}

static void rest_free(void *user) { lt_split_free(user); }

static void rest_print(void *user, lt_strbuf *out) {
    const lt_split *sp = user;
    lt_sb_printf(out, "the rest after %s, compiled at run time for the sizes the data gives: ", sp->first);
    if (sp->rm && sp->rm->fam) lt_family_print(sp->rm->fam, out);
    else lt_sb_printf(out, "%s\n", sp->n_model_out ? "not run yet" : "nothing to compile (the outputs are views)");
}

void lt_split_attach(lt_split *sp, lt_plan *p) {
    lt_plan_rest rest = {.user = sp, .run = rest_run, .free = rest_free, .print = rest_print};
    lt_plan_set_rest(p, &rest);
}
