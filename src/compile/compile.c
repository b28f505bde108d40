/* compile.c — the compile pipeline (see compile.h): passes -> fuse -> lower -> schedule -> emit ONE
 * translation unit -> backend compile (cached) -> plan. One readable function of named stages, each
 * timed; dumps (optimized graph as ONNX, generated code, Loop IR, groups, plan) on request.
 *
 * Host fallback: a compiled group whose lowering fails (the lowering rejects an attribute it only
 * sees at this point, or has a bug) runs as host steps instead, one per node, through the reference
 * eval hooks; a default schedule that fails to apply leaves the kernel unscheduled (correct, slower).
 * Both are counted in the report with the first message, and options.strict turns them into errors
 * (the compiler's own tests use it). Out of memory is never a fallback.
 */
#include "compile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../backend/cpu/cpu.h"
#include "../backend/cuda/cuda.h"
#include "../codegen/codegen.h"
#include "../ops/infer.h"
#include "../onnx/onnx_writer.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void lt_compile_options_init(lt_compile_options *o) {
    memset(o, 0, sizeof *o);
    o->opt_level = LT_COMPILE_DEFAULT_LEVEL;
    o->backend = "cpu";
}

const char *lt_compile_stage_name(int stage) {
    static const char *const names[LT_STAGE_COUNT] = {"passes", "fuse", "lower", "schedule", "emit", "backend", "plan"};
    return stage >= 0 && stage < LT_STAGE_COUNT ? names[stage] : "?";
}

int lt_compile_host_lanes(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx2")) return 8;
#endif
    return 4;
}

/* Threads the plan's kernels may use (sizes per-thread scratch): the option, else the CPUs online. */
int lt_compile_threads(int threads) {
    if (threads > 0) return threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* Is `name` in the comma-separated list (NULL: empty)? */
static bool list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* Append opt->tuned_passes' names to enable (unless disabled or already there); note them in r. */
static lt_status add_tuned_passes(lt_ctx *ctx, const lt_compile_options *opt, char *enable, size_t size,
                                  lt_compile_report *r) {
    for (const char *p = opt->tuned_passes; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (len >= sizeof name) return lt_error(ctx, LT_ERR_USAGE, "tuned pass name '%.*s' too long", (int)len, p);
        memcpy(name, p, len);
        name[len] = 0;
        p = e ? e + 1 : NULL;
        if (!len || list_has(opt->disable, name) || list_has(enable, name)) continue;
        size_t used = strlen(enable), rused = strlen(r->tuned_passes);
        if (used + len + 2 > size || rused + len + 2 > sizeof r->tuned_passes)
            return lt_error(ctx, LT_ERR_USAGE, "too many pass names (tuned passes)");
        snprintf(enable + used, size - used, "%s%s", used ? "," : "", name);
        snprintf(r->tuned_passes + rused, sizeof r->tuned_passes - rused, "%s%s", rused ? "," : "", name);
    }
    return LT_OK;
}

/* ---- dumps ---- */

static lt_status write_text(lt_ctx *ctx, const char *dir, const char *name, const char *text, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return lt_error(ctx, LT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    size_t w = len ? fwrite(text, 1, len, f) : 0;
    int rc = fclose(f);
    if (w != len || rc != 0) return lt_error(ctx, LT_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return LT_OK;
}

static lt_status make_dir(lt_ctx *ctx, const char *dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return lt_error(ctx, LT_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return lt_error(ctx, LT_ERR_IO, "%s: not a directory", dir);
    return LT_OK;
}

static const char *group_origin(lt_arena *a, const lt_group *g) {
    lt_strbuf b = {0};
    for (int i = 0; i < g->n_nodes && i < 16; i++) {
        const lt_node *n = g->nodes[i];
        if (n->name && *n->name) lt_sb_printf(&b, "%s'%s' (%s)", i ? ", " : "", n->name, n->op_type);
        else lt_sb_printf(&b, "%s%s #%d", i ? ", " : "", n->op_type, n->index);
    }
    if (g->n_nodes > 16) lt_sb_printf(&b, ", ... %d nodes", g->n_nodes);
    char *r = lt_arena_strdup(a, b.s ? b.s : "");
    lt_sb_free(&b);
    /* it goes into comments of generated C: no comment end, no line break (node names are data) */
    for (char *c = r; c && *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = ' ';
        if (c[0] == '*' && c[1] == '/') c[1] = '|';
        if (c[0] == '/' && c[1] == '*') c[1] = '|';
    }
    return r;
}

static void note_fallback(lt_compile_report *r, const lt_group *g, const char *what, const lt_ctx *c) {
    r->n_fallback_groups++;
    if (!r->fallback_first[0])
        snprintf(r->fallback_first, sizeof r->fallback_first, "group g%d (%.40s): %s: %.400s", g->id,
                 g->anchor ? g->anchor->op_type : "?", what, c->msg);
}

/* Give every pack kernel a name unique in the module ("lt_k3_pack0"). */
static lt_status name_packs(lt_ctx *ctx, lt_arena *a, lt_lowered *lw) {
    for (int i = 0; i < lw->n_packs; i++) {
        lt_kernel *k = lw->packs[i].kernel;
        if (!k) return lt_error(ctx, LT_ERR_INTERNAL, "kernel %s: packed weight %d has no pack kernel", lw->kernel->name, i);
        char nm[64];
        snprintf(nm, sizeof nm, "%s_pack%d", lw->kernel->name, i);
        if (!k->name || strcmp(k->name, nm) != 0) {
            const char *s = lt_arena_strdup(a, nm);
            if (!s) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel names)");
            k->name = s;
        }
    }
    return LT_OK;
}

/* Graph inputs with an initializer that the caller does not provide become constants. */
static lt_status freeze_inputs(lt_ctx *ctx, lt_model *m, const char *const *given, bool *frozen, int *count) {
    lt_graph *g = m->graph;
    int k = 0, n = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        lt_value *v = g->inputs[i];
        bool keep = !v->init;
        for (int j = 0; given && given[j] && !keep; j++) keep = strcmp(given[j], v->name) == 0;
        frozen[i] = !keep;
        if (keep) g->inputs[k++] = v;
        else {
            v->is_input = false;
            n++;
        }
    }
    g->n_inputs = k;
    *count = n;
    if (n == 0) return LT_OK;
    return lt_graph_infer(ctx, m);
}

static void progress(const lt_compile_options *o, int stage, int done, int total) {
    if (o->progress) o->progress(o->progress_user, stage, done, total);
}

lt_status lt_compile(lt_ctx *ctx, lt_model *m, const lt_compile_options *opt, lt_plan **out, lt_compile_report *report) {
    lt_compile_options dflt;
    if (!opt) {
        lt_compile_options_init(&dflt);
        opt = &dflt;
    }
    lt_compile_report local = {0};
    lt_compile_report *r = report ? report : &local;
    if (!m || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_compile: missing model or output");
    if (opt->opt_level < 0 || opt->opt_level > 3)
        return lt_error(ctx, LT_ERR_USAGE, "optimization level must be 0 to 3, not %d", opt->opt_level);
    const char *bname = opt->backend ? opt->backend : "cpu";
    const lt_backend_vtbl *vt = lt_backend_find(bname);
    if (!vt) {
        lt_strbuf names = {0};
        for (const char *const *n = lt_backend_names(); n && *n; n++) lt_sb_printf(&names, "%s%s", names.len ? ", " : "", *n);
        lt_status s = lt_error(ctx, LT_ERR_UNSUPPORTED, "backend '%s' is not available (backends: %s)", bname,
                               names.s ? names.s : "none");
        lt_sb_free(&names);
        return s;
    }
    double t_start = now_s(), t;
    lt_status s = LT_OK;
    lt_arena *arena = NULL;
    lt_backend *backend = NULL;
    lt_bmodule *module = NULL;
    lt_strbuf src = {0};
    lt_emit_kernel *ek = NULL;

    arena = lt_mem_alloc(sizeof *arena);
    if (!arena) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (compilation arena)");
    lt_arena_init(arena);

    /* 0. inputs with initializers become constants (unless given) */
    t = now_s();
    int n_api = m->graph->n_inputs;
    const char **api_names = lt_arena_alloc(arena, sizeof(char *) * (size_t)(n_api + 1));
    bool *api_frozen = lt_arena_alloc(arena, sizeof(bool) * (size_t)(n_api + 1));
    if (!api_names || !api_frozen) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (inputs)"); goto fail; }
    for (int i = 0; i < n_api; i++) {
        api_names[i] = lt_arena_strdup(arena, m->graph->inputs[i]->name);
        if (!api_names[i]) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (inputs)"); goto fail; }
    }
    if (!opt->keep_initializer_inputs && (s = freeze_inputs(ctx, m, opt->given_inputs, api_frozen, &r->n_frozen_inputs)) != LT_OK)
        goto fail;

    /* 1. graph passes (with the tuned ones not disabled by name) */
    progress(opt, LT_STAGE_PASSES, 0, 0);
    char enable[1024];
    snprintf(enable, sizeof enable, "%s", opt->enable ? opt->enable : "");
    if (opt->tuned_passes && (s = add_tuned_passes(ctx, opt, enable, sizeof enable, r)) != LT_OK) goto fail;
    lt_pass_options po = {
        .level = opt->opt_level,
        .verify_each = opt->verify_each,
        .dump_after = opt->dump_after,
        .dump_cb = opt->dump_cb,
        .dump_user = opt->dump_user,
        .dump = opt->dump_cb ? NULL : &r->pass_dump,
        .time_passes = opt->time_passes,
        .disable = opt->disable,
        .enable = enable[0] ? enable : NULL,
        .stop_after = opt->stop_after,
        .target = bname,
        .no_microkernels = opt->no_microkernels || vt->loop_ir_only,
    };
    r->nodes_before = m->graph->n_nodes;
    if ((s = lt_pass_options_check(ctx, &po)) != LT_OK) goto fail;
    if (opt->opt_level > 0 && (s = lt_passes_run(ctx, m, &po, &r->passes)) != LT_OK) goto fail;
    r->nodes_after = m->graph->n_nodes;
    r->stage_seconds[LT_STAGE_PASSES] = now_s() - t;
    if (opt->dump_graph && (s = lt_onnx_write_model_file(ctx, m, opt->dump_graph)) != LT_OK) goto fail;

    /* 2. fusion, of a graph verified again after the passes: every node's shapes are checked once
     * more by inference (lt_node.shapes_verified), and lowering compiles only nodes it verified */
    progress(opt, LT_STAGE_FUSE, 0, 0);
    t = now_s();
    if ((s = lt_graph_verify(ctx, m->graph)) != LT_OK || (s = lt_graph_infer(ctx, m)) != LT_OK) goto fail;
    lt_groups *gs = lt_arena_alloc(arena, sizeof *gs);
    if (!gs) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (groups)"); goto fail; }
    bool gpu = vt->lang && vt->lang->block_index[0] != NULL; /* the target binds GPU blocks (CUDA) */
    lt_fuse_options fo = {.no_fusion = opt->no_fusion || opt->opt_level == 0,
                          .no_epilogues = opt->no_epilogues,
                          .all_host = opt->all_host,
                          .gpu = gpu};
    if ((s = lt_fuse(ctx, m, arena, &fo, gs)) != LT_OK) goto fail;
    r->n_groups = gs->n;
    r->n_host_groups = gs->n_host;
    r->stage_seconds[LT_STAGE_FUSE] = now_s() - t;

    /* The GPU target the kernels are lowered for (which tile entries they may call): the option,
     * else the device's own, so a device backend is created (the device opened) before lowering. */
    lt_backend_options bo = {.cc = opt->cc, .cache_dir = opt->cache_dir, .extra_flags = opt->extra_cflags,
                             .cc_timeout_s = opt->cc_timeout_s, .threads = opt->threads, .device = opt->device,
                             .nvrtc = opt->nvrtc, .arch = opt->arch};
    const char *gpu_arch = opt->arch;
    if (gpu && !opt->emit_only) {
        t = now_s();
        if ((s = lt_backend_create(ctx, bname, &bo, &backend)) != LT_OK) goto fail;
        lt_cuda *dev = lt_backend_cuda_device(backend);
        if (!gpu_arch && dev) gpu_arch = lt_cuda_get_info(dev)->arch;
        r->stage_seconds[LT_STAGE_BACKEND] = now_s() - t;
    }

    /* 3. lowering (host fallback per group) */
    progress(opt, LT_STAGE_LOWER, 0, 0);
    t = now_s();
    lt_lower_options lo = {.vector_lanes = opt->vector_lanes > 0 ? opt->vector_lanes : lt_compile_host_lanes(),
                           .no_microkernels = opt->no_microkernels || vt->loop_ir_only,
                           .scratch = true, /* the plan binds lt_lscratch buffers in its workspace */
                           .threads = lt_compile_threads(opt->threads),
                           .gpu = gpu,
                           .gpu_arch = gpu ? gpu_arch : NULL};
    lt_lowered *lowered = lt_arena_alloc(arena, sizeof *lowered * (size_t)(gs->n + 1));
    if (!lowered) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (lowered kernels)"); goto fail; }
    int n_emit = 0;
    for (int i = 0; i < gs->n; i++) {
        const lt_group *g = &gs->groups[i];
        if (g->host) continue;
        lt_ctx c2 = {0};
        lt_status ls = lt_lower_group(&c2, gs, g, arena, &lo, &lowered[i]);
        if (ls == LT_OK) ls = name_packs(&c2, arena, &lowered[i]);
        if (ls != LT_OK) {
            if (ls == LT_ERR_NOMEM || opt->strict) {
                s = lt_error(ctx, ls, "lowering group g%d: %s", g->id, c2.msg);
                goto fail;
            }
            note_fallback(r, g, "lowering", &c2);
            memset(&lowered[i], 0, sizeof lowered[i]);
            continue;
        }
        n_emit += 1 + lowered[i].n_packs;
    }
    r->stage_seconds[LT_STAGE_LOWER] = now_s() - t;

    /* 4. default schedules */
    t = now_s();
    lt_strbuf kdump = {0};
    for (int i = 0; i < gs->n; i++) {
        lt_lowered *lw = &lowered[i];
        progress(opt, LT_STAGE_SCHEDULE, i, gs->n);
        if (!lw->kernel) continue;
        if (opt->dump_code_dir) {
            char sched[128];
            lt_sb_printf(&kdump, "==== %s (group g%d, %s): %s\n---- unscheduled\n", lw->kernel->name, i,
                         lt_pattern_name(gs->groups[i].pattern), group_origin(arena, &gs->groups[i]));
            lt_kernel_print(lw->kernel, &kdump);
            lt_sb_printf(&kdump, "---- schedule\n");
            for (int k = 0; k < lw->schedule.n; k++) {
                lt_sstep_format(&lw->schedule.steps[k], sched, sizeof sched);
                lt_sb_printf(&kdump, "  %s\n", sched);
            }
        }
        lt_ctx c2 = {0};
        lt_status ss = LT_OK;
        bool applied = false;
        if (opt->schedule_hook && !gpu) { /* a tuned schedule instead of the default? */
            lt_schedule dflt = lw->schedule;
            bool replaced = false;
            if ((s = opt->schedule_hook(opt->schedule_user, ctx, lw, lo.threads, &replaced)) != LT_OK) {
                lt_sb_free(&kdump);
                goto fail;
            }
            lw->kernel->body = lw->body0; /* the hook may have tried schedules on it */
            if (replaced) {
                ss = lt_lower_apply_schedule(&c2, lw);
                applied = ss == LT_OK || ss == LT_ERR_NOMEM;
                if (ss == LT_OK) r->n_tuned++;
                if (!applied) { /* a stale or foreign entry: the default schedule instead */
                    lw->schedule = dflt, lw->kernel->body = lw->body0;
                    c2 = (lt_ctx){0}, ss = LT_OK;
                }
            }
        }
        if (!applied) ss = lt_lower_apply_schedule(&c2, lw);
        if (ss != LT_OK) {
            if (ss == LT_ERR_NOMEM || opt->strict) {
                s = lt_error(ctx, ss, "scheduling %s (group g%d): %s", lw->kernel->name, i, c2.msg);
                lt_sb_free(&kdump);
                goto fail;
            }
            /* unscheduled is correct, only slower */
            lw->kernel->body = lw->body0;
            lt_kernel_cost(lw->kernel);
            if (!r->fallback_first[0])
                snprintf(r->fallback_first, sizeof r->fallback_first, "%.40s: default schedule not applied: %.400s",
                         lw->kernel->name, c2.msg);
            r->n_unscheduled++;
        }
        if (opt->dump_code_dir) {
            lt_sb_printf(&kdump, "---- scheduled (%.0f flops, %.0f bytes)\n", lw->kernel->flops, lw->kernel->bytes);
            lt_kernel_print(lw->kernel, &kdump);
        }
    }
    r->stage_seconds[LT_STAGE_SCHEDULE] = now_s() - t;

    /* 5. one translation unit */
    progress(opt, LT_STAGE_EMIT, 0, 0);
    t = now_s();
    ek = lt_calloc(ctx, (size_t)n_emit + 1, sizeof *ek, "kernel list");
    if (!ek) { s = LT_ERR_NOMEM; lt_sb_free(&kdump); goto fail; }
    int ne = 0;
    for (int i = 0; i < gs->n; i++) {
        lt_lowered *lw = &lowered[i];
        if (!lw->kernel) continue;
        const char *origin = group_origin(arena, &gs->groups[i]);
        for (int k = 0; k < lw->n_packs; k++) {
            lt_kernel *pk = lw->packs[k].kernel;
            if (pk->body) lt_kernel_cost(pk);
            ek[ne++] = (lt_emit_kernel){pk, "weight packing"};
            r->n_pack_kernels++;
        }
        ek[ne++] = (lt_emit_kernel){lw->kernel, origin};
        r->n_kernels++;
    }
    /* a backend that runs the Loop IR itself needs no source unless someone asked to see it */
    bool need_source = !vt->compile_ir || opt->dump_code_dir || opt->emit_source || opt->emit_only;
    if (ne > 0 && need_source && (s = lt_emit_module(ctx, vt->lang, ek, ne, NULL, &src)) != LT_OK) {
        lt_sb_free(&kdump);
        goto fail;
    }
    r->source_bytes = src.len;
    r->stage_seconds[LT_STAGE_EMIT] = now_s() - t;
    if (opt->dump_code_dir) {
        lt_strbuf gdump = {0};
        lt_groups_print(gs, &gdump);
        s = make_dir(ctx, opt->dump_code_dir);
        if (s == LT_OK) s = write_text(ctx, opt->dump_code_dir, gpu ? "model.cu" : "model.c", src.s ? src.s : "", src.len);
        if (s == LT_OK) s = write_text(ctx, opt->dump_code_dir, "kernels.txt", kdump.s ? kdump.s : "", kdump.len);
        if (s == LT_OK) s = write_text(ctx, opt->dump_code_dir, "groups.txt", gdump.s ? gdump.s : "", gdump.len);
        if (s == LT_OK && (kdump.failed || gdump.failed)) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (code dump)");
        lt_sb_free(&gdump);
    }
    lt_sb_free(&kdump);
    if (s != LT_OK) goto fail;
    if (opt->emit_source && src.len) {
        lt_sb_printf(opt->emit_source, "%.*s", (int)src.len, src.s);
        if (opt->emit_source->failed) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (emitted source)"); goto fail; }
    }
    if (opt->emit_only) {
        progress(opt, -1, 0, 0);
        r->total_seconds = now_s() - t_start;
        lt_arena_free(arena);
        lt_mem_free(arena);
        lt_sb_free(&src);
        lt_mem_free(ek);
        if (!report) lt_compile_report_free(&local);
        *out = NULL;
        return LT_OK;
    }

    /* 6. backend compile (cached) */
    progress(opt, LT_STAGE_BACKEND, 0, 0);
    t = now_s();
    if (!backend && (s = lt_backend_create(ctx, bname, &bo, &backend)) != LT_OK) goto fail;
    if (ne > 0 && vt->compile_ir) {
        const lt_kernel **ks = lt_arena_alloc(arena, (size_t)ne * sizeof *ks);
        if (!ks) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel list)"); goto fail; }
        for (int i = 0; i < ne; i++) ks[i] = ek[i].kernel;
        if ((s = vt->compile_ir(backend, ctx, ks, ne, &module)) != LT_OK) goto fail;
    } else if (ne > 0) {
        if ((s = backend->vt->compile(backend, ctx, src.s, &module)) != LT_OK) goto fail;
        if (strcmp(bname, "cpu") == 0) {
            const lt_cpu_module_info *mi = lt_cpu_module_get_info((const lt_cpu_module *)module);
            r->cache_hit = mi->cache_hit;
            snprintf(r->cache_key, sizeof r->cache_key, "%s", mi->key);
            snprintf(r->source_path, sizeof r->source_path, "%s", mi->source_path ? mi->source_path : "");
        } else if (vt == &lt_backend_cuda) {
            const lt_cuda_image *img = lt_cuda_module_image((const lt_cuda_module *)module);
            if (img) {
                r->cache_hit = img->cache_hit;
                snprintf(r->cache_key, sizeof r->cache_key, "%s", img->key);
            }
        }
    }
    r->stage_seconds[LT_STAGE_BACKEND] += now_s() - t;

    /* 7. the plan (it takes over arena, backend and module) */
    progress(opt, LT_STAGE_PLAN, 0, 0);
    t = now_s();
    lt_plan_build_args pa = {.model = m, .arena = arena, .groups = gs, .lowered = lowered, .backend = backend,
                             .module = module, .threads = opt->threads, .no_inplace = opt->no_inplace,
                             .no_graphs = opt->no_graphs,
                             .n_api_inputs = n_api, .api_input_names = api_names, .api_input_frozen = api_frozen};
    arena = NULL;
    backend = NULL;
    module = NULL;
    lt_plan *plan = NULL;
    if ((s = lt_plan_build(ctx, &pa, &plan)) != LT_OK) goto fail;
    lt_plan_get_stats(plan, &r->plan);
    r->stage_seconds[LT_STAGE_PLAN] = now_s() - t;
    if (opt->dump_code_dir) {
        lt_strbuf pd = {0};
        lt_plan_print(plan, &pd);
        s = pd.failed ? lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan dump)")
                      : write_text(ctx, opt->dump_code_dir, "plan.txt", pd.s ? pd.s : "", pd.len);
        lt_sb_free(&pd);
        if (s != LT_OK) {
            lt_plan_free(plan);
            goto fail;
        }
    }
    r->total_seconds = now_s() - t_start;
    lt_sb_free(&src);
    lt_mem_free(ek);
    if (!report) lt_compile_report_free(&local);
    progress(opt, -1, 0, 0);
    *out = plan;
    return LT_OK;
fail:
    if (module) backend->vt->module_free(backend, module);
    lt_backend_destroy(backend);
    if (arena) {
        lt_arena_free(arena);
        lt_mem_free(arena);
    }
    lt_sb_free(&src);
    lt_mem_free(ek);
    r->total_seconds = now_s() - t_start;
    if (!report) lt_compile_report_free(&local);
    progress(opt, -1, 0, 0);
    return s;
}

void lt_compile_report_free(lt_compile_report *r) {
    if (!r) return;
    lt_pass_report_free(&r->passes);
    lt_sb_free(&r->pass_dump);
}

static void human(int64_t b, char *buf, size_t n) {
    if (b >= ((int64_t)1 << 20)) snprintf(buf, n, "%.2f MiB", (double)b / (double)((int64_t)1 << 20));
    else if (b >= 1024) snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else snprintf(buf, n, "%lld B", (long long)b);
}

void lt_compile_report_print(const lt_compile_report *r, lt_strbuf *out) {
    lt_sb_printf(out, "compile: %.3f s (", r->total_seconds);
    for (int i = 0; i < LT_STAGE_COUNT; i++)
        lt_sb_printf(out, "%s%s %.3f", i ? ", " : "", lt_compile_stage_name(i), r->stage_seconds[i]);
    lt_sb_printf(out, ")%s\n", r->n_kernels ? (r->cache_hit ? ", cache hit" : ", cache miss") : "");
    const lt_plan_stats *p = &r->plan;
    int pct = p->n_nodes ? (int)(100.0 * p->n_nodes_compiled / p->n_nodes + 0.5) : 100;
    lt_sb_printf(out, "graph: %d nodes -> %d after passes; %d groups, %d kernels (+%d weight packing), %d host steps; "
                 "nodes compiled %d/%d (%d%%)\n", r->nodes_before, r->nodes_after, r->n_groups, r->n_kernels,
                 r->n_pack_kernels, p->n_host, p->n_nodes_compiled, p->n_nodes, pct);
    if (r->n_tuned) lt_sb_printf(out, "tuned schedules: %d kernel(s)\n", r->n_tuned);
    if (r->tuned_passes[0]) lt_sb_printf(out, "tuned passes: %s (measured faster for this model)\n", r->tuned_passes);
    if (r->n_fallback_groups || r->n_unscheduled)
        lt_sb_printf(out, "fallbacks: %d group(s) run as host steps, %d kernel(s) unscheduled; first: %s\n",
                     r->n_fallback_groups, r->n_unscheduled, r->fallback_first);
    char a[32], b[32], c[32], d[32];
    human(p->workspace_bytes, a, sizeof a);
    human(p->intermediates_bytes, b, sizeof b);
    human(p->lower_bound_bytes, c, sizeof c);
    human(p->weight_bytes + p->packed_bytes, d, sizeof d);
    lt_sb_printf(out, "memory: workspace %s peak vs %s sum of %d intermediates (%d in place, %d views; live peak %s); "
                 "weights %s\n", a, b, p->n_workspace_slots, p->n_inplace, p->n_views, c, d);
    if (p->device) {
        human(p->device_const_bytes, a, sizeof a);
        human(p->io_bytes, b, sizeof b);
        human(p->staging_bytes, c, sizeof c);
        lt_sb_printf(out, "device: %d kernel segment(s), %d replayed as graphs; %d copies per run (inputs, outputs, "
                     "host-step crossings); constants %s uploaded once, input/output buffers %s, host staging %s\n",
                     p->n_segments, p->n_graphs, p->n_transfers, a, b, c);
    }
}
