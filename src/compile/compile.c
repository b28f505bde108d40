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
#include "split.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/hash.h"
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

int lt_compile_host_lanes(void) { return lt_target_host_lanes(); }

/* Threads the plan's kernels may use (sizes per-thread scratch): the option, else the CPUs online. */
int lt_compile_threads(int threads) { return lt_target_threads(threads); }

/* An artifact's compile (saved or loaded) takes no schedule or pass from a tuning database. */
static bool no_tuning(const lt_compile_options *o) { return o->prebuilt || o->save_prebuilt; }

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

/* ---- the compile state every stage reads and writes ---- */

typedef struct cstate {
    lt_ctx *ctx;
    lt_model *m;
    const lt_compile_options *opt;
    lt_compile_report *r;
    const char *bname;
    const lt_backend_vtbl *vt;
    lt_backend_options bo;
    lt_target target;
    lt_arena *arena;             /* owned until the plan takes it */
    lt_backend *backend;         /* likewise */
    lt_bmodule *module;          /* likewise */
    int n_api;                   /* the graph's inputs as the caller knows them */
    const char **api_names;
    bool *api_frozen;
    char enable[1024];           /* enable + tuned passes */
    lt_groups *gs;
    lt_lower_options lo;
    lt_lowered *lowered;         /* per group; kernel NULL: host group or lowering fallback */
    bool *tuned;                 /* per group: a tuned schedule was applied */
    lt_strbuf *kdump;            /* per group: Loop IR before and after scheduling (dump_code_dir) */
    int n_emit;                  /* kernels + pack kernels */
    lt_emit_kernel *ek;
    int ne;
    lt_strbuf src;               /* the translation unit */
    bool dumped;                 /* dump_code_dir files written */
    bool plan_ready;             /* memplan ran: st->plan can run */
    lt_plan *plan;
    int stop_stage;              /* the last stage to run */
    lt_split *split;             /* the rest of a split model, until the plan takes it */
} cstate;

typedef enum stage_kind {
    SK_GRAPH,   /* rewrites the graph: dumps print it, verify_each verifies it */
    SK_GROUPS,  /* partitions it: dumps print the groups */
    SK_LOOP,    /* a loop pass over each group's kernel: dumps print every kernel, verify_each verifies it */
    SK_CODE,    /* source: dumps print the translation unit */
    SK_MODULE,  /* the backend's module */
    SK_PLAN     /* the plan: dumps print it */
} stage_kind;

typedef struct stage {
    const char *name;
    int id;                      /* LT_STAGE_*: its slot in the report's stage_seconds */
    stage_kind kind;
    bool (*wanted)(const cstate *st); /* NULL: always runs */
    lt_status (*run)(cstate *st);     /* the whole stage, or (loop passes) NULL and: */
    lt_status (*run_group)(cstate *st, int group);
} stage;

/* inputs: graph inputs with initializers become constants (unless given) */
static lt_status st_inputs(cstate *st) {
    lt_graph *g = st->m->graph;
    st->n_api = g->n_inputs;
    st->api_names = lt_arena_alloc(st->arena, sizeof(char *) * (size_t)(st->n_api + 1));
    st->api_frozen = lt_arena_alloc(st->arena, sizeof(bool) * (size_t)(st->n_api + 1));
    if (!st->api_names || !st->api_frozen) return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (inputs)");
    for (int i = 0; i < st->n_api; i++)
        if (!(st->api_names[i] = lt_arena_strdup(st->arena, g->inputs[i]->name)))
            return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (inputs)");
    if (st->opt->keep_initializer_inputs) return LT_OK;
    return freeze_inputs(st->ctx, st->m, st->opt->given_inputs, st->api_frozen, &st->r->n_frozen_inputs);
}

/* The pass manager's dump_after: a pass name or "all" (a stage name is the driver's). */
static const char *pass_dump_after(const char *d) { return d && (!strcmp(d, "all") || lt_pass_find(d)) ? d : NULL; }

/* passes: the graph passes at the -O level (with the tuned ones not disabled by name) */
static lt_status st_passes(cstate *st) {
    const lt_compile_options *opt = st->opt;
    lt_compile_report *r = st->r;
    snprintf(st->enable, sizeof st->enable, "%s", opt->enable ? opt->enable : "");
    if (opt->tuned_passes && !no_tuning(opt)) LT_TRY(add_tuned_passes(st->ctx, opt, st->enable, sizeof st->enable, r));
    lt_pass_options po = {
        .level = opt->opt_level,
        .verify_each = opt->verify_each,
        .dump_after = pass_dump_after(opt->dump_after),
        .dump_cb = opt->dump_cb,
        .dump_user = opt->dump_user,
        .dump = opt->dump_cb ? NULL : &r->pass_dump,
        .time_passes = opt->time_passes,
        .disable = opt->disable,
        .enable = st->enable[0] ? st->enable : NULL,
        .stop_after = opt->stop_after,
        .no_nchwc_layout = !st->target.layout_nchwc,
        .narrow_float_gemm = st->target.narrow_float_gemm,
        .no_int8_gemm = !st->target.int8_gemm,
        .no_microkernels = !st->target.microkernels,
    };
    r->nodes_before = st->m->graph->n_nodes;
    LT_TRY(lt_pass_options_check(st->ctx, &po));
    if (opt->opt_level > 0) LT_TRY(lt_passes_run(st->ctx, st->m, &po, &r->passes));
    r->nodes_after = st->m->graph->n_nodes;
    if (opt->dump_graph) LT_TRY(lt_onnx_write_model_file(st->ctx, st->m, opt->dump_graph));
    return LT_OK;
}

/* fuse: partition the graph, verified again after the passes: every node's shapes are checked once
 * more by inference (lt_node.shapes_verified), and lowering compiles only nodes it verified */
/* split: the graph cut at its data-dependent ops (src/compile/split.h); the rest model is written
 * only when this compile builds a plan */
static lt_status st_split(cstate *st) {
    bool build = !st->opt->emit_only && st->stop_stage >= LT_STAGE_PLAN;
    return lt_split_graph(st->ctx, st->m, st->opt, build, st->r, &st->split);
}

static lt_status st_fuse(cstate *st) {
    LT_TRY(lt_graph_verify(st->ctx, st->m->graph));
    LT_TRY(lt_graph_infer(st->ctx, st->m));
    st->gs = lt_arena_alloc(st->arena, sizeof *st->gs);
    if (!st->gs) return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (groups)");
    lt_fuse_options fo = {.no_fusion = st->opt->no_fusion || st->opt->opt_level == 0,
                          .no_epilogues = st->opt->no_epilogues,
                          .all_host = st->opt->all_host,
                          .gpu = st->target.gpu_blocks};
    LT_TRY(lt_fuse(st->ctx, st->m, st->arena, &fo, st->gs));
    st->r->n_groups = st->gs->n;
    st->r->n_host_groups = st->gs->n_host;
    int n = st->gs->n + 1;
    st->lowered = lt_arena_alloc(st->arena, sizeof *st->lowered * (size_t)n);
    st->tuned = lt_arena_alloc(st->arena, sizeof *st->tuned * (size_t)n);
    st->kdump = lt_arena_alloc(st->arena, sizeof *st->kdump * (size_t)n);
    if (!st->lowered || !st->tuned || !st->kdump) return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (lowered kernels)");
    memset(st->lowered, 0, sizeof *st->lowered * (size_t)n);
    memset(st->tuned, 0, sizeof *st->tuned * (size_t)n);
    memset(st->kdump, 0, sizeof *st->kdump * (size_t)n);
    return LT_OK;
}

/* The lowering options: the target's capabilities, in this one place. */
static void lower_options(cstate *st) {
    const lt_target *t = &st->target;
    st->lo = (lt_lower_options){.vector_lanes = t->vector_lanes,
                                .no_microkernels = !t->microkernels,
                                .scratch = true, /* the plan binds lt_lscratch buffers in its workspace */
                                .threads = t->threads,
                                .gpu = t->gpu_blocks,
                                .wgmma = t->gpu_blocks && t->wgmma,
                                .shape_generic = st->opt->shape_generic};
}

/* lower (a loop pass): one group to a Loop IR kernel with its default schedule recorded; a group the
 * lowering rejects falls back to host steps. Loop IR simplification runs inside (lt_lower_group). */
static lt_status lp_lower(cstate *st, int i) {
    const lt_group *g = &st->gs->groups[i];
    if (i == 0) progress(st->opt, LT_STAGE_LOWER, 0, 0);
    if (g->host) return LT_OK;
    lt_lowered *lw = &st->lowered[i];
    lt_ctx c2 = {0};
    lt_status ls = lt_lower_group(&c2, st->gs, g, st->arena, &st->lo, lw);
    if (ls == LT_OK) ls = name_packs(&c2, st->arena, lw);
    if (ls != LT_OK) {
        if (ls == LT_ERR_NOMEM || st->opt->strict) return lt_error(st->ctx, ls, "lowering group g%d: %s", g->id, c2.msg);
        note_fallback(st->r, g, "lowering", &c2);
        memset(lw, 0, sizeof *lw);
        return LT_OK;
    }
    st->n_emit += 1 + lw->n_packs;
    if (st->opt->dump_code_dir) {
        lt_strbuf *kd = &st->kdump[i];
        char sched[128];
        lt_sb_printf(kd, "==== %s (group g%d, %s): %s\n---- unscheduled\n", lw->kernel->name, i, lt_pattern_name(g->pattern),
                     group_origin(st->arena, g));
        lt_kernel_dump(lw->kernel, kd);
        lt_sb_printf(kd, "---- schedule\n");
        for (int k = 0; k < lw->schedule.n; k++) {
            lt_sstep_format(&lw->schedule.steps[k], sched, sizeof sched);
            lt_sb_printf(kd, "  %s\n", sched);
        }
    }
    return LT_OK;
}

/* tuned (a loop pass): a schedule from options.schedule_hook (the tuning database, or lathe tune's
 * search) instead of the default; one that fails to apply (a stale or foreign database entry) leaves
 * the default to the next pass, counted in the report, or is an error under options.strict. */
static bool want_tuned(const cstate *st) {
    return st->opt->schedule_hook && !st->target.gpu_blocks && !no_tuning(st->opt);
}

static lt_status lp_tuned(cstate *st, int i) {
    lt_lowered *lw = &st->lowered[i];
    progress(st->opt, LT_STAGE_TUNED, i, st->gs->n);
    if (!lw->kernel) return LT_OK;
    lt_schedule dflt = lw->schedule;
    bool replaced = false;
    LT_TRY(st->opt->schedule_hook(st->opt->schedule_user, st->ctx, lw, st->lo.threads, &replaced));
    lw->kernel->body = lw->body0; /* the hook may have tried schedules on it */
    if (!replaced) return LT_OK;
    lt_ctx c2 = {0};
    lt_status ss = lt_lower_apply_schedule(&c2, lw);
    if (ss == LT_ERR_NOMEM)
        return lt_error(st->ctx, ss, "scheduling %s (group g%d): %s", lw->kernel->name, i, c2.msg);
    if (ss == LT_OK) {
        st->tuned[i] = true;
        st->r->n_tuned++;
        return LT_OK;
    }
    /* a stale or foreign entry: the default instead, counted (an error under strict) */
    if (st->opt->strict)
        return lt_error(st->ctx, ss, "tuned schedule of %s (group g%d) does not apply: %s", lw->kernel->name, i, c2.msg);
    lw->schedule = dflt, lw->kernel->body = lw->body0;
    lt_compile_report *r = st->r;
    if (!r->n_tuned_rejected++)
        snprintf(r->tuned_rejected_first, sizeof r->tuned_rejected_first, "%.40s: %.400s", lw->kernel->name, c2.msg);
    return LT_OK;
}

/* schedule (a loop pass): the default schedule of the group's pattern, where no tuned one applied;
 * one that fails leaves the kernel unscheduled (correct, slower). */
static lt_status lp_schedule(cstate *st, int i) {
    lt_lowered *lw = &st->lowered[i];
    if (!want_tuned(st)) progress(st->opt, LT_STAGE_SCHEDULE, i, st->gs->n);
    if (!lw->kernel) return LT_OK;
    if (!st->tuned[i]) {
        lt_ctx c2 = {0};
        lt_status ss = lt_lower_apply_schedule(&c2, lw);
        if (ss != LT_OK) {
            if (ss == LT_ERR_NOMEM || st->opt->strict)
                return lt_error(st->ctx, ss, "scheduling %s (group g%d): %s", lw->kernel->name, i, c2.msg);
            lw->kernel->body = lw->body0;
            lt_kernel_cost(lw->kernel);
            lt_compile_report *r = st->r;
            if (!r->fallback_first[0])
                snprintf(r->fallback_first, sizeof r->fallback_first, "%.40s: default schedule not applied: %.400s",
                         lw->kernel->name, c2.msg);
            r->n_unscheduled++;
        }
    }
    return LT_OK;
}

/* simplify_loops (a loop pass): every kernel tidied after its schedule (lt_lower_simplify) */
static lt_status lp_simplify(cstate *st, int i) {
    lt_lowered *lw = &st->lowered[i];
    if (!lw->kernel) return LT_OK;
    lt_ctx c2 = {0};
    lt_status s = lt_lower_simplify(&c2, lw);
    if (s != LT_OK) return lt_error(st->ctx, s, "simplifying %s (group g%d): %s", lw->kernel->name, i, c2.msg);
    if (st->opt->dump_code_dir) {
        lt_sb_printf(&st->kdump[i], "---- scheduled (%.0f flops, %.0f bytes)\n", lw->kernel->flops, lw->kernel->bytes);
        lt_kernel_dump(lw->kernel, &st->kdump[i]);
    }
    return LT_OK;
}

static void free_kdump(cstate *st) {
    for (int i = 0; st->gs && st->kdump && i < st->gs->n; i++) lt_sb_free(&st->kdump[i]);
    st->kdump = NULL;
}

/* The dump_code_dir files of what exists so far: groups.txt, kernels.txt, the translation unit. */
static lt_status write_dumps(cstate *st) {
    const lt_compile_options *opt = st->opt;
    if (!opt->dump_code_dir || st->dumped) return LT_OK;
    st->dumped = true;
    lt_strbuf gdump = {0}, kd = {0};
    if (st->gs) lt_groups_print(st->gs, &gdump);
    bool failed = false;
    for (int i = 0; st->gs && st->kdump && i < st->gs->n; i++) {
        if (st->kdump[i].len) lt_sb_printf(&kd, "%.*s", (int)st->kdump[i].len, st->kdump[i].s);
        failed |= st->kdump[i].failed;
    }
    lt_status s = make_dir(st->ctx, opt->dump_code_dir);
    char fname[32];
    snprintf(fname, sizeof fname, "model.%s", st->target.source_ext ? st->target.source_ext : "c");
    if (s == LT_OK && st->ek) s = write_text(st->ctx, opt->dump_code_dir, fname, st->src.s ? st->src.s : "", st->src.len);
    if (s == LT_OK && st->lowered) s = write_text(st->ctx, opt->dump_code_dir, "kernels.txt", kd.s ? kd.s : "", kd.len);
    if (s == LT_OK && st->gs) s = write_text(st->ctx, opt->dump_code_dir, "groups.txt", gdump.s ? gdump.s : "", gdump.len);
    if (s == LT_OK && (kd.failed || gdump.failed || failed)) s = lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (code dump)");
    lt_sb_free(&gdump);
    lt_sb_free(&kd);
    return s;
}

/* emit: ONE translation unit of every kernel and pack kernel */
static lt_status st_emit(cstate *st) {
    const lt_compile_options *opt = st->opt;
    lt_compile_report *r = st->r;
    st->ek = lt_calloc(st->ctx, (size_t)st->n_emit + 1, sizeof *st->ek, "kernel list");
    if (!st->ek) return LT_ERR_NOMEM;
    for (int i = 0; i < st->gs->n; i++) {
        lt_lowered *lw = &st->lowered[i];
        if (!lw->kernel) continue;
        const char *origin = group_origin(st->arena, &st->gs->groups[i]);
        for (int k = 0; k < lw->n_packs; k++) {
            lt_kernel *pk = lw->packs[k].kernel;
            if (pk->body) lt_kernel_cost(pk);
            st->ek[st->ne++] = (lt_emit_kernel){pk, "weight packing"};
            r->n_pack_kernels++;
        }
        st->ek[st->ne++] = (lt_emit_kernel){lw->kernel, origin};
        r->n_kernels++;
    }
    /* a backend that runs the Loop IR itself needs no source unless someone asked to see it */
    bool need_source = !st->target.runs_loop_ir || opt->dump_code_dir || opt->emit_source || opt->emit_only;
    if (st->ne > 0 && need_source) LT_TRY(lt_emit_module(st->ctx, st->target.lang, st->ek, st->ne, NULL, &st->src));
    r->source_bytes = st->src.len;
    LT_TRY(write_dumps(st));
    if (opt->emit_source && st->src.len) {
        lt_sb_printf(opt->emit_source, "%.*s", (int)st->src.len, st->src.s);
        if (opt->emit_source->failed) return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (emitted source)");
    }
    return LT_OK;
}

static bool want_backend(const cstate *st) { return !st->opt->emit_only; }

/* The emitted source's SHA-256 (hex; of "" when there are no kernels). */
static void source_sha256(const cstate *st, char out[65]) { lt_sha256_hex(st->src.s ? st->src.s : "", st->src.len, out); }

/* options.prebuilt: the module built from this very source, loaded with no compiler. */
static lt_status load_prebuilt(cstate *st) {
    const lt_prebuilt *pb = st->opt->prebuilt;
    char sha[65];
    source_sha256(st, sha);
    if (strcmp(sha, pb->source_sha256) != 0)
        return lt_error(st->ctx, LT_ERR_INVALID,
                        "artifact built by another lathe version/options: the emitted source differs from the one its "
                        "module was built from (SHA-256 %.16s..., recorded %.16s...); save it again with this lathe",
                        sha, pb->source_sha256);
    if (st->ne == 0) return LT_OK;
    if (!pb->image || !pb->image_size)
        return lt_error(st->ctx, LT_ERR_INVALID, "artifact has no module for its %d kernel(s)", st->ne);
    lt_backend *b = st->backend;
    LT_TRY(b->vt->load_prebuilt(b, st->ctx, st->src.s, pb->source_sha256, pb->image_sha256, pb->image, pb->image_size,
                                &st->module));
    st->r->cache_hit = true; /* nothing was compiled */
    return LT_OK;
}

/* options.save_prebuilt: the module's bytes and hashes for the artifact. */
static lt_status save_prebuilt(cstate *st) {
    lt_prebuilt *pb = st->opt->save_prebuilt;
    memset(pb, 0, sizeof *pb);
    source_sha256(st, pb->source_sha256);
    if (!st->module) return LT_OK;
    lt_backend *b = st->backend;
    LT_TRY(b->vt->module_image(b, st->ctx, st->module, &pb->image, &pb->image_size));
    lt_sha256_hex(pb->image, pb->image_size, pb->image_sha256);
    return LT_OK;
}

/* backend: build and load the module (cached), or take the prebuilt one */
static lt_status st_backend(cstate *st) {
    if (!st->backend) LT_TRY(lt_backend_create(st->ctx, st->bname, &st->bo, &st->backend));
    lt_backend *b = st->backend;
    if ((st->opt->prebuilt || st->opt->save_prebuilt) &&
        (b->vt->compile_ir || !b->vt->load_prebuilt || !b->vt->module_image))
        return lt_error(st->ctx, LT_ERR_UNSUPPORTED, "backend '%s' cannot save or load a prebuilt module (artifacts)",
                        b->vt->name);
    if (st->opt->prebuilt) return load_prebuilt(st);
    char sha[65] = ""; /* a shared backend's modules are known by their source's hash */
    bool shared = st->opt->shared_backend && st->ne > 0;
    if (shared) source_sha256(st, sha);
    if (shared && st->opt->module_lookup && (st->module = st->opt->module_lookup(st->opt->share_user, sha))) {
        st->r->cache_hit = true; /* the caller's module built from this very source */
        return LT_OK;
    }
    if (st->ne > 0 && b->vt->compile_ir) {
        const lt_kernel **ks = lt_arena_alloc(st->arena, (size_t)st->ne * sizeof *ks);
        if (!ks) return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (kernel list)");
        for (int i = 0; i < st->ne; i++) ks[i] = st->ek[i].kernel;
        LT_TRY(b->vt->compile_ir(b, st->ctx, ks, st->ne, &st->module));
    } else if (st->ne > 0) {
        LT_TRY(b->vt->compile(b, st->ctx, st->src.s, &st->module));
        if (b->vt->module_info) { /* cache facts for the report */
            lt_bmodule_info mi = {0};
            b->vt->module_info(b, st->module, &mi);
            st->r->cache_hit = mi.cache_hit;
            snprintf(st->r->cache_key, sizeof st->r->cache_key, "%s", mi.key);
            snprintf(st->r->source_path, sizeof st->r->source_path, "%s", mi.source_path);
        }
    }
    if (st->opt->save_prebuilt) LT_TRY(save_prebuilt(st));
    if (shared && st->module && st->opt->module_built) /* the caller owns it from here */
        st->opt->module_built(st->opt->share_user, st->module, sha);
    return LT_OK;
}

/* plan: steps and slots (lt_plan_build_steps); it takes over the arena, backend and module */
static lt_status st_plan(cstate *st) {
    free_kdump(st); /* the arena goes to the plan */
    lt_plan_build_args pa = {.model = st->m, .arena = st->arena, .groups = st->gs, .lowered = st->lowered,
                             .backend = st->backend, .module = st->module, .threads = st->opt->threads,
                             .shared_module = st->opt->shared_backend != NULL,
                             .no_inplace = st->opt->no_inplace, .no_graphs = st->opt->no_graphs,
                             .workspace = st->opt->workspace, .workspace_user = st->opt->workspace_user,
                             .device_share = st->opt->device_share,
                             .n_api_inputs = st->n_api, .api_input_names = st->api_names,
                             .api_input_frozen = st->api_frozen};
    st->arena = NULL;
    st->backend = NULL;
    st->module = NULL;
    LT_TRY(lt_plan_build_steps(st->ctx, &pa, &st->plan));
    if (st->split) lt_split_attach(st->split, st->plan);
    st->split = NULL;
    return lt_split_attach_subgraphs(st->ctx, st->m, st->opt, st->plan);
}

/* memplan: the static memory plan, workspace, packed weights, kernel arguments (lt_plan_build_memory) */
static lt_status st_memplan(cstate *st) {
    LT_TRY(lt_plan_build_memory(st->ctx, st->plan, st->opt->no_inplace, st->opt->threads));
    st->plan_ready = true;
    lt_plan_get_stats(st->plan, &st->r->plan);
    if (st->opt->dump_code_dir) {
        lt_strbuf pd = {0};
        lt_plan_print(st->plan, &pd);
        lt_status s = pd.failed ? lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (plan dump)")
                                : write_text(st->ctx, st->opt->dump_code_dir, "plan.txt", pd.s ? pd.s : "", pd.len);
        lt_sb_free(&pd);
        return s;
    }
    return LT_OK;
}

/* The stages in order; LT_STAGE_* (compile.h) follows this table. */
static const stage stages[LT_STAGE_COUNT] = {
    {"inputs", LT_STAGE_INPUTS, SK_GRAPH, NULL, st_inputs, NULL},
    {"passes", LT_STAGE_PASSES, SK_GRAPH, NULL, st_passes, NULL},
    {"split", LT_STAGE_SPLIT, SK_GRAPH, NULL, st_split, NULL},
    {"fuse", LT_STAGE_FUSE, SK_GROUPS, NULL, st_fuse, NULL},
    {"lower", LT_STAGE_LOWER, SK_LOOP, NULL, NULL, lp_lower},
    {"tuned", LT_STAGE_TUNED, SK_LOOP, want_tuned, NULL, lp_tuned},
    {"schedule", LT_STAGE_SCHEDULE, SK_LOOP, NULL, NULL, lp_schedule},
    {"simplify_loops", LT_STAGE_SIMPLIFY, SK_LOOP, NULL, NULL, lp_simplify},
    {"emit", LT_STAGE_EMIT, SK_CODE, NULL, st_emit, NULL},
    {"backend", LT_STAGE_BACKEND, SK_MODULE, want_backend, st_backend, NULL},
    {"plan", LT_STAGE_PLAN, SK_PLAN, want_backend, st_plan, NULL},
    {"memplan", LT_STAGE_MEMPLAN, SK_PLAN, want_backend, st_memplan, NULL},
};

const char *lt_compile_stage_name(int stage) { return stage >= 0 && stage < LT_STAGE_COUNT ? stages[stage].name : "?"; }

int lt_compile_stage_find(const char *name) {
    for (int i = 0; name && i < LT_STAGE_COUNT; i++)
        if (!strcmp(stages[i].name, name)) return i;
    return -1;
}

/* --dump-after for a stage: what it produced, through dump_cb or into the report's pass_dump. */
static void dump_stage(cstate *st, const stage *sg) {
    const lt_compile_options *opt = st->opt;
    if (!opt->dump_after || (strcmp(opt->dump_after, "all") != 0 && strcmp(opt->dump_after, sg->name) != 0)) return;
    lt_strbuf b = {0};
    switch (sg->kind) {
    case SK_GRAPH: lt_graph_print(st->m->graph, &b); break;
    case SK_GROUPS: lt_groups_print(st->gs, &b); break;
    case SK_LOOP:
        for (int i = 0; i < st->gs->n; i++) {
            const lt_lowered *lw = &st->lowered[i];
            if (!lw->kernel) continue;
            for (int k = 0; k < lw->n_packs; k++) {
                lt_sb_printf(&b, "==== %s (group g%d, weight packing)\n", lw->packs[k].kernel->name, i);
                lt_kernel_dump(lw->packs[k].kernel, &b);
            }
            lt_sb_printf(&b, "==== %s (group g%d)\n", lw->kernel->name, i);
            lt_kernel_dump(lw->kernel, &b);
        }
        break;
    case SK_CODE: lt_sb_printf(&b, "%.*s", (int)st->src.len, st->src.s ? st->src.s : ""); break;
    case SK_MODULE: lt_sb_printf(&b, "module: %d kernel(s)%s\n", st->ne, st->r->cache_hit ? ", cache hit" : ""); break;
    case SK_PLAN: lt_plan_print(st->plan, &b); break;
    }
    if (opt->dump_cb) opt->dump_cb(opt->dump_user, sg->name, 0, b.s ? b.s : "");
    else {
        lt_sb_printf(&st->r->pass_dump, "; after %s\n", sg->name);
        lt_sb_printf(&st->r->pass_dump, "%.*s", (int)b.len, b.s ? b.s : "");
    }
    lt_sb_free(&b);
}

/* --verify-each for a stage: the graph after graph stages, every kernel after loop passes. */
static lt_status verify_stage(cstate *st, const stage *sg) {
    if (!st->opt->verify_each) return LT_OK;
    lt_ctx c2 = {0};
    lt_status s = LT_OK;
    if (sg->kind == SK_GRAPH) s = lt_graph_verify(&c2, st->m->graph);
    for (int i = 0; sg->kind == SK_LOOP && s == LT_OK && i < st->gs->n; i++) {
        const lt_lowered *lw = &st->lowered[i];
        if (!lw->kernel) continue;
        for (int k = 0; k < lw->n_packs && s == LT_OK; k++)
            if (lw->packs[k].kernel->body) s = lt_kernel_verify(&c2, lw->packs[k].kernel);
        if (s == LT_OK) s = lt_kernel_verify(&c2, lw->kernel);
    }
    return s ? lt_error(st->ctx, s, "after stage '%s': %s", sg->name, c2.msg) : LT_OK;
}

/* Run one stage: the whole of it, or (a loop pass) each group in order. */
static lt_status run_stage(cstate *st, const stage *sg) {
    if (sg->run) return sg->run(st);
    for (int i = 0; i < st->gs->n; i++) LT_TRY(sg->run_group(st, i));
    return LT_OK;
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
    int stop_stage = LT_STAGE_COUNT - 1;
    if (opt->stop_after_stage && (stop_stage = lt_compile_stage_find(opt->stop_after_stage)) < 0) {
        lt_strbuf names = {0};
        for (int i = 0; i < LT_STAGE_COUNT; i++) lt_sb_printf(&names, "%s%s", i ? ", " : "", stages[i].name);
        lt_status s = lt_error(ctx, LT_ERR_USAGE, "stop after '%s': no stage has that name (stages: %s)",
                               opt->stop_after_stage, names.s ? names.s : "");
        lt_sb_free(&names);
        return s;
    }
    if (opt->dump_after && strcmp(opt->dump_after, "all") != 0 && !lt_pass_find(opt->dump_after) &&
        lt_compile_stage_find(opt->dump_after) < 0)
        return lt_error(ctx, LT_ERR_USAGE, "--dump-after=%s: no pass or stage has that name (try 'all', a pass or a stage)",
                        opt->dump_after);
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
    double t_start = now_s();
    lt_status s = LT_OK;
    cstate *st = lt_calloc(ctx, 1, sizeof *st, "compile state");
    if (!st) return LT_ERR_NOMEM;
    *st = (cstate){.ctx = ctx, .m = m, .opt = opt, .r = r, .bname = bname, .vt = vt, .stop_stage = stop_stage};
    st->bo = (lt_backend_options){.cc = opt->cc, .cache_dir = opt->cache_dir, .extra_flags = opt->extra_cflags,
                                  .cc_timeout_s = opt->cc_timeout_s, .threads = opt->threads, .device = opt->device,
                                  .nvrtc = opt->nvrtc, .arch = opt->arch};
    if (opt->save_prebuilt) { /* one self-contained module, built afresh (a cached one may be split) */
        st->bo.cache_dir = NULL;
        st->bo.whole_module = true;
    }
    st->arena = lt_mem_alloc(sizeof *st->arena);
    if (!st->arena) {
        lt_mem_free(st);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (compilation arena)");
    }
    lt_arena_init(st->arena);

    /* the target, once: from the options, and from the device for a backend that opens one (so the
     * device is opened first, unless the compile only emits source) */
    if (opt->shared_backend) st->backend = opt->shared_backend;
    else if (vt->opens_device && !opt->emit_only) {
        double tb = now_s();
        if ((s = lt_backend_create(ctx, bname, &st->bo, &st->backend)) != LT_OK) goto done;
        r->stage_seconds[LT_STAGE_BACKEND] = now_s() - tb;
    }
    lt_target_options tgo = {.threads = opt->threads, .vector_lanes = opt->vector_lanes, .arch = opt->arch,
                             .no_microkernels = opt->no_microkernels};
    if ((s = lt_backend_target(ctx, vt, st->backend, &tgo, &st->target)) != LT_OK) goto done;
    lower_options(st);

    /* the stages, each timed, dumped and verified on request; emit_only stops after emit */
    for (int i = 0; i <= stop_stage && s == LT_OK; i++) {
        const stage *sg = &stages[i];
        if (sg->wanted && !sg->wanted(st)) continue;
        if (sg->id != LT_STAGE_LOWER && sg->id != LT_STAGE_TUNED && sg->id != LT_STAGE_SCHEDULE &&
            sg->id != LT_STAGE_SIMPLIFY)
            progress(opt, sg->id, 0, 0);
        double t = now_s();
        s = run_stage(st, sg);
        if (s == LT_OK && sg->id == LT_STAGE_SIMPLIFY && opt->kernels_hook) /* run-time scalars */
            s = opt->kernels_hook(opt->share_user, ctx, &st->target, st->lowered, st->gs->n);
        r->stage_seconds[sg->id] += now_s() - t;
        if (s == LT_OK) s = verify_stage(st, sg);
        if (s == LT_OK) dump_stage(st, sg);
    }
    if (s == LT_OK) s = write_dumps(st); /* stopped before emit: what exists */
    if (s == LT_OK && !st->plan_ready) r->stopped_after = lt_compile_stage_name(opt->emit_only ? LT_STAGE_EMIT : stop_stage);
done:
    if (st->plan && (s != LT_OK || !st->plan_ready)) { /* failed, or stopped before memplan */
        lt_plan_free(st->plan);
        st->plan = NULL;
    }
    if (!opt->shared_backend) { /* a shared backend and its modules are the caller's */
        if (st->module) st->backend->vt->module_free(st->backend, st->module);
        lt_backend_destroy(st->backend);
    }
    if (st->arena) {
        free_kdump(st);
        lt_arena_free(st->arena);
        lt_mem_free(st->arena);
    }
    lt_sb_free(&st->src);
    lt_mem_free(st->ek);
    lt_split_free(st->split);
    r->total_seconds = now_s() - t_start;
    if (!report) lt_compile_report_free(&local);
    progress(opt, -1, 0, 0);
    if (s == LT_OK) *out = st->plan;
    lt_mem_free(st);
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

void lt_compile_report_print_stages(const lt_compile_report *r, lt_strbuf *out) {
    lt_sb_printf(out, "%-16s %10s\n", "stage", "ms");
    for (int i = 0; i < LT_STAGE_COUNT; i++) lt_sb_printf(out, "%-16s %10.3f\n", lt_compile_stage_name(i), r->stage_seconds[i] * 1e3);
    lt_sb_printf(out, "compile total %.3f ms%s%s\n", r->total_seconds * 1e3, r->stopped_after ? ", stopped after " : "",
                 r->stopped_after ? r->stopped_after : "");
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
    if (r->n_tuned_rejected)
        lt_sb_printf(out, "tuned schedules rejected: %d (the default used instead); first: %s\n", r->n_tuned_rejected,
                     r->tuned_rejected_first);
    if (r->tuned_passes[0]) lt_sb_printf(out, "tuned passes: %s (measured faster for this model)\n", r->tuned_passes);
    if (r->n_split_frontier)
        lt_sb_printf(out, "data-dependent sizes: split after %d op(s) (%d compiled with a padded output, the others host "
                     "steps), first %s; the %d node(s) after them compile at run time for the sizes the data gives, once "
                     "per bucket\n", r->n_split_frontier, r->n_split_padded, r->split_first, r->n_rest_nodes);
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
