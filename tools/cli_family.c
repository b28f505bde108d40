/* cli_family.c — the CLI's models compiled once for every input shape (cli_family.h): --dim specs
 * split into sizes and ranges, range checks naming the file, input and dim, a family
 * (src/compile/family.h) built from the CLI's compile options (no tuning database, as the C API's),
 * the plan per data or probe shape with the bucket and module it took, the bucket report; and
 * `lathe run --each FILE.npz ...`: every file run in one process, checked before the first run
 * (each exists; no two write one output), the interpreter per file, one plan when every dim is bound
 * or MODEL is an artifact (a file of other shapes is refused, naming it), else a plan per shape from
 * the family, so a compiler runs only for a shape that needs a new bucket; one .npz per run into
 * --output DIR, named after the input file's stem.
 */
#include "cli_family.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ops/infer.h"
#include "onnx/onnx.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- --dim specs ---- */

/* "LO..HI" of `NAME=LO..HI` (dots points at the ".."). */
static bool parse_range(const char *eq, const char *dots, int64_t *lo, int64_t *hi) {
    char buf[32];
    size_t n = (size_t)(dots - eq - 1);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, eq + 1, n);
    buf[n] = 0;
    return cli_parse_i64(buf, lo) && cli_parse_i64(dots + 2, hi);
}

int cli_dims_split(const char *cmd, int n, const char *const *specs, cli_dims *out) {
    memset(out, 0, sizeof *out);
    out->fixed = calloc((size_t)n + 1, sizeof *out->fixed);
    out->ranges = calloc((size_t)n + 1, sizeof *out->ranges);
    if (!out->fixed || !out->ranges) {
        cli_error("out of memory");
        return CLI_EXIT_INVALID;
    }
    for (int i = 0; i < n; i++) {
        const char *s = specs[i], *eq = strchr(s, '='), *dots = eq ? strstr(eq + 1, "..") : NULL;
        if (!dots) {
            out->fixed[out->n_fixed++] = s;
            continue;
        }
        int64_t lo = 0, hi = 0;
        if (eq == s || !parse_range(eq, dots, &lo, &hi) || lo < 1 || hi < lo)
            return cli_usage(cmd, "--dim %s: a range is NAME=LO..HI with 1 <= LO <= HI, e.g. --dim sequence=1..4096",
                             s);
        for (int r = 0; r < out->n_ranges; r++)
            if (strlen(out->ranges[r].name) == (size_t)(eq - s) && !strncmp(out->ranges[r].name, s, (size_t)(eq - s)))
                return cli_usage(cmd, "--dim %s: dim '%s' has a range already", s, out->ranges[r].name);
        char *name = cli_copy_str(s, (size_t)(eq - s));
        if (!name) {
            cli_error("out of memory");
            return CLI_EXIT_INVALID;
        }
        out->ranges[out->n_ranges++] = (lt_dim_range){name, lo, hi};
    }
    return 0;
}

void cli_dims_free(cli_dims *d) {
    for (int r = 0; d->ranges && r < d->n_ranges; r++) free((char *)d->ranges[r].name);
    free(d->ranges);
    free(d->fixed);
    memset(d, 0, sizeof *d);
}

const lt_dim_range *cli_dims_range(const cli_dims *d, const char *param) {
    for (int r = 0; d && param && r < d->n_ranges; r++)
        if (!strcmp(d->ranges[r].name, param)) return &d->ranges[r];
    return NULL;
}

/* Does an input of m without an initializer keep symbolic dim `param`? */
static bool input_keeps(const lt_model *m, const char *param) {
    const lt_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_type *t = &g->inputs[i]->type;
        if (g->inputs[i]->init || t->kind != LT_TK_TENSOR || t->rank <= 0 || !t->dims) continue;
        for (int k = 0; k < t->rank; k++)
            if (t->dims[k].value < 0 && t->dims[k].param && !strcmp(t->dims[k].param, param)) return true;
    }
    return false;
}

int cli_dims_check_ranges(const char *cmd, const cli_dims *d, const lt_model *m) {
    for (int r = 0; r < d->n_ranges; r++)
        if (!input_keeps(m, d->ranges[r].name))
            return cli_usage(cmd, "--dim %s=%lld..%lld: no input of the model keeps a symbolic dim named '%s' (a "
                             "range is for a dim left unbound)", d->ranges[r].name, (long long)d->ranges[r].lo,
                             (long long)d->ranges[r].hi, d->ranges[r].name);
    return 0;
}

int cli_model_symbolic(const lt_model *m, bool *symbolic) {
    const lt_graph *g = m->graph;
    const lt_value *odd = NULL; /* an input of unknown rank, or not a tensor */
    *symbolic = false;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        if (v->init) continue;
        if (v->type.kind != LT_TK_TENSOR || v->type.rank < 0) {
            if (!odd) odd = v;
            continue;
        }
        for (int k = 0; k < v->type.rank; k++) *symbolic |= v->type.dims[k].value < 0;
    }
    if (*symbolic && odd) {
        cli_error("input '%s' %s: a model compiled for every shape needs every input's rank (give --shapes %s:DIMS, "
                  "or bind every dim with --dim)", odd->name,
                  odd->type.kind == LT_TK_TENSOR ? "has an unknown rank" : "is not a tensor", odd->name);
        return CLI_EXIT_INVALID;
    }
    return 0;
}

int cli_ranges_check_shape(const cli_dims *d, const lt_value *v, int rank, const int64_t *dims, const char *src) {
    const lt_type *t = &v->type;
    if (t->kind != LT_TK_TENSOR || t->rank != rank || !t->dims) return 0;
    for (int k = 0; k < rank; k++) {
        const lt_dim_range *r = t->dims[k].value < 0 ? cli_dims_range(d, t->dims[k].param) : NULL;
        if (r && (dims[k] < r->lo || dims[k] > r->hi)) {
            cli_error("%s%sinput '%s' dim '%s' (axis %d) is %lld, outside its range %lld..%lld", src ? src : "",
                      src ? ": " : "", v->name, r->name, k, (long long)dims[k], (long long)r->lo, (long long)r->hi);
            return CLI_EXIT_INVALID;
        }
    }
    return 0;
}

int cli_ranges_check(const cli_dims *d, const lt_model *m, lt_datum *const *in, const char *src) {
    const lt_graph *g = m->graph;
    int rc = 0;
    for (int i = 0; i < g->n_inputs && !rc; i++)
        if (in[i] && in[i]->kind == LT_DK_TENSOR)
            rc = cli_ranges_check_shape(d, g->inputs[i], in[i]->tensor->rank, in[i]->tensor->dims, src);
    return rc;
}

/* ---- the family ---- */

/* The family's loader: the file again, with the --shapes and --dim sizes. */
static lt_status family_load(void *user, lt_ctx *ctx, lt_model **out) {
    const cli_family *cf = user;
    lt_model *m = NULL;
    LT_TRY(lt_onnx_load_file(ctx, cf->path, NULL, &m));
    lt_status s = LT_OK;
    for (int i = 0; s == LT_OK && i < cf->n_shapes; i++) s = lt_model_bind_shapes_spec(ctx, m, cf->shapes[i]);
    for (int i = 0; s == LT_OK && i < cf->dims->n_fixed; i++) s = lt_model_bind_dim_spec(ctx, m, cf->dims->fixed[i]);
    if (s != LT_OK) {
        lt_model_free(m);
        return s;
    }
    *out = m;
    return LT_OK;
}

int cli_family_open(cli_compile_args *ca, const char *path, int n_shapes, const char *const *shapes,
                    const cli_dims *dims, const lt_model *m, cli_family *cf) {
    int rc = 0;
    memset(cf, 0, sizeof *cf);
    cf->model = m, cf->path = path, cf->n_shapes = n_shapes, cf->shapes = shapes, cf->dims = dims;
    if ((ca->o.dump_code_dir && (rc = cli_make_dirs("--dump-code", ca->o.dump_code_dir))) ||
        (ca->o.dump_graph && (rc = cli_make_parent_dirs("--dump-graph", ca->o.dump_graph))))
        return rc;
    lt_family_options fo = {.compile = ca->o, .model = m, .load = family_load, .load_user = cf,
                            .n_ranges = dims->n_ranges, .ranges = dims->ranges};
    lt_compile_options *co = &fo.compile; /* as the C API's: no tuning database for every shape */
    co->backend = ca->backend;
    co->given_inputs = NULL, co->schedule_hook = NULL, co->schedule_user = NULL, co->tuned_passes = NULL;
    if (co->dump_after) co->dump_cb = cli_compile_dump_cb, co->dump_user = NULL;
    lt_ctx ctx = {0};
    if (lt_family_new(&ctx, &fo, &cf->f) != LT_OK) return cli_fail(&ctx);
    return 0;
}

void cli_family_close(cli_family *cf) {
    lt_family_free(cf->f);
    free(cf->mods);
    free(cf->mod_bucket);
    memset(cf, 0, sizeof *cf);
}

/* The module's number (1-based, in the order first used), recorded with its bucket when new. */
static int module_number(cli_family *cf, const void *mod, int bucket) {
    if (!mod) return 0;
    for (int k = 0; k < cf->n_mods; k++)
        if (cf->mods[k] == mod) return k + 1;
    const void **nm = realloc(cf->mods, (size_t)(cf->n_mods + 1) * sizeof *nm);
    if (nm) cf->mods = nm;
    int *nb = realloc(cf->mod_bucket, (size_t)(cf->n_mods + 1) * sizeof *nb);
    if (nb) cf->mod_bucket = nb;
    if (!nm || !nb) return 0; /* out of memory: only the report loses it */
    cf->mods[cf->n_mods] = mod;
    cf->mod_bucket[cf->n_mods] = bucket;
    return ++cf->n_mods;
}

static int n_free_inputs(const lt_model *m) {
    int n = 0;
    for (int i = 0; i < m->graph->n_inputs; i++) n += !m->graph->inputs[i]->init;
    return n;
}

int cli_family_plan_shapes(cli_family *cf, const char *src, const int *ranks, const int64_t *const *dims,
                           lt_plan **plan, cli_family_step *st) {
    lt_ctx ctx = {0};
    lt_family_stats before, after;
    memset(st, 0, sizeof *st);
    lt_family_get_stats(cf->f, &before);
    double t0 = now_s();
    lt_status s = lt_family_plan(&ctx, cf->f, n_free_inputs(cf->model), ranks, dims, plan);
    st->seconds = now_s() - t0;
    if (s != LT_OK) {
        cli_error("%s: %s", src, ctx.msg[0] ? ctx.msg : lt_status_name(s));
        return lt_status_exit_code(s);
    }
    lt_family_get_stats(cf->f, &after);
    st->cached = after.plan_hits > before.plan_hits;
    st->new_bucket = after.buckets > before.buckets;
    st->module_built = after.modules_built > before.modules_built;
    /* the family's module number stands for the module (with emit_only there is no plan, nor module) */
    int fm = lt_family_last_module(cf->f);
    st->module = module_number(cf, fm ? (const void *)(uintptr_t)fm : NULL, st->new_bucket ? after.buckets : 0);
    st->bucket = st->new_bucket ? after.buckets : st->module ? cf->mod_bucket[st->module - 1] : 0;
    return 0;
}

int cli_family_plan(cli_family *cf, const char *src, lt_datum *const *in, lt_plan **plan, cli_family_step *st) {
    const lt_graph *g = cf->model->graph;
    int n = n_free_inputs(cf->model), k = 0, rc = 0;
    int *ranks = calloc((size_t)n + 1, sizeof *ranks);
    const int64_t **dims = calloc((size_t)n + 1, sizeof *dims);
    if (!ranks || !dims) {
        cli_error("out of memory");
        rc = CLI_EXIT_INVALID;
    }
    for (int i = 0; i < g->n_inputs && !rc; i++) {
        const lt_value *v = g->inputs[i];
        if (v->init && in[i]) {
            cli_error("%s: input '%s' has an initializer, which a model compiled for every shape keeps as a constant "
                      "(bind every dim with --dim / --shapes to give it)", src, v->name);
            rc = CLI_EXIT_INVALID;
        } else if (!v->init && (!in[i] || in[i]->kind != LT_DK_TENSOR)) {
            cli_error("%s: input '%s': a model compiled for every shape takes a tensor here", src, v->name);
            rc = CLI_EXIT_INVALID;
        } else if (!v->init) {
            ranks[k] = in[i]->tensor->rank;
            dims[k++] = in[i]->tensor->dims;
        }
    }
    if (!rc) rc = cli_family_plan_shapes(cf, src, ranks, (const int64_t *const *)dims, plan, st);
    free(ranks);
    free(dims);
    return rc;
}

void cli_family_step_describe(const cli_family_step *st, char *buf, size_t n) {
    if (st->cached) cli_fmt(buf, n, "bucket %d, plan kept from an earlier run", st->bucket);
    else if (!st->bucket) cli_fmt(buf, n, "plan %.3f s, no compiled kernels", st->seconds);
    else if (st->new_bucket)
        cli_fmt(buf, n, "plan %.3f s: new bucket %d, %s", st->seconds, st->bucket,
                st->module_built ? "module built" : "an existing module's source: nothing built");
    else cli_fmt(buf, n, "plan %.3f s: bucket %d, its module reused (no compiler run)", st->seconds, st->bucket);
}

void cli_family_print(const cli_family *cf, FILE *f) {
    lt_family_stats s;
    lt_family_get_stats(cf->f, &s);
    fprintf(f, "compiled for every shape: plans built %d, buckets %d, modules built %d (compiler runs, or loads from "
               "the module cache), plans that reused a module %d\n", s.plans_built, s.buckets, s.modules_built,
            s.modules_reused);
    lt_strbuf b = {0};
    lt_family_print(cf->f, &b);
    if (b.s) cli_put_text(f, b.s);
    lt_sb_free(&b);
}

/* ---- --each FILE.npz: one run per file ---- */
typedef enum each_mode {
    EACH_INTERP,   /* the interpreter, per file */
    EACH_ONE_PLAN, /* every dim bound (or an artifact): one plan, compiled at the first file */
    EACH_FAMILY,   /* symbolic dims: a plan per shape from the family, modules shared per bucket */
} each_mode;

typedef struct each_state {
    cli_run_args *ra;
    each_mode mode;
    lt_model *m;        /* inputs bind against it (never compiled); the interpreter runs it */
    lt_model *mc;       /* EACH_ONE_PLAN: the copy compiled at the first file's shapes */
    lt_artifact *art;
    lt_plan *plan;      /* EACH_ONE_PLAN's plan */
    cli_family cf;      /* EACH_FAMILY's family */
    bool have_family;
    const char **specs; /* the --input specs, then the run's file */
    char out_path[4200];
} each_state;

static bool ends_with_npz(const char *s) {
    size_t n = strlen(s);
    return n >= 4 && strcasecmp(s + n - 4, ".npz") == 0;
}

/* The file's name without its folder and .npz: the name of its run's output. */
static void file_stem(const char *path, char *buf, size_t n) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    if (ends_with_npz(base)) len -= 4;
    cli_fmt(buf, n, "%.*s", (int)(len < 4096 ? len : 4096), base);
}

/* Before any run: every file is an .npz that exists, and no two runs write one output. Exit code. */
static int each_check(const cli_run_args *ra) {
    if (ra->output && ends_with_npz(ra->output))
        return cli_usage("run", "--output with --each names a folder (one .npz per run, named after its input "
                         "file), not '%s'", ra->output);
    for (int k = 0; k < ra->n_each; k++) {
        const char *p = ra->each[k];
        struct stat st;
        if (!ends_with_npz(p))
            return cli_usage("run", "--each %s: expected an .npz file (its arrays named after the inputs)", p);
        const char *why = stat(p, &st) != 0 ? strerror(errno) : !S_ISREG(st.st_mode) ? "not a file"
                        : access(p, R_OK) != 0 ? strerror(errno) : NULL;
        if (why) {
            cli_error("--each %s: %s", p, why);
            return CLI_EXIT_INVALID;
        }
        char a[4200], b[4200];
        file_stem(p, a, sizeof a);
        for (int j = 0; ra->output && j < k; j++) {
            file_stem(ra->each[j], b, sizeof b);
            if (!strcmp(a, b))
                return cli_usage("run", "--each %s and %s would both write %s/%s.npz", ra->each[j], p, ra->output, a);
        }
    }
    return 0;
}

/* The model again, for EACH_ONE_PLAN's compile (the artifact's, or the file with its bindings). */
static int load_copy(each_state *es) {
    if (!es->art) return cli_run_load_model(es->ra, &es->mc);
    lt_ctx ctx = {0};
    return lt_artifact_load_model(&ctx, es->art, &es->mc) == LT_OK ? 0 : cli_fail(&ctx);
}

/* Load, check, pick the mode, open the family, create the output folder. Exit code. */
static int each_setup(each_state *es) {
    cli_run_args *ra = es->ra;
    int rc = 0;
    bool symbolic = false;
    es->specs = calloc((size_t)ra->n_inputs + 2, sizeof *es->specs);
    if (!es->specs) { cli_error("out of memory"); return CLI_EXIT_INVALID; }
    for (int i = 0; i < ra->n_inputs; i++) es->specs[i] = ra->inputs[i];
    bool is_artifact = lt_artifact_is_file(ra->model);
    if (is_artifact && (rc = cli_load_artifact(ra->model, &ra->ca, &es->art, &es->m))) return rc;
    if ((rc = cli_compile_check_backend(&ra->ca, true))) return rc;
    if (!is_artifact && (rc = cli_run_load_model(ra, &es->m))) return rc;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, es->m) != LT_OK) return cli_fail(&ctx);
    bool interp = strcmp(ra->ca.backend, "interp") == 0;
    if (!interp && !is_artifact && (rc = cli_model_symbolic(es->m, &symbolic))) return rc;
    es->mode = interp ? EACH_INTERP : symbolic ? EACH_FAMILY : EACH_ONE_PLAN; /* an artifact: one plan */
    if (es->mode == EACH_ONE_PLAN && (rc = load_copy(es))) return rc;
    if (es->mode == EACH_FAMILY) {
        if ((rc = cli_family_open(&ra->ca, ra->model, ra->n_shapes, ra->shapes, &ra->dd, es->m, &es->cf))) return rc;
        es->have_family = true;
    }
    return ra->output ? cli_make_dirs("--output", ra->output) : 0;
}

/* "input_ids int64[4,33], attention_mask int64[4,33]" */
static void print_header(const each_state *es, int k, lt_datum *const *in) {
    const lt_graph *g = es->m->graph;
    char d[256];
    printf("%srun %d of %d: %s:", k ? "\n" : "", k + 1, es->ra->n_each, cli_esc(es->ra->each[k]));
    for (int i = 0, n = 0; i < g->n_inputs; i++)
        if (in[i])
            printf("%s %s %s", n++ ? "," : "", cli_esc(g->inputs[i]->name), lt_datum_describe(in[i], d, sizeof d));
    printf("\n");
}

/* The run's plan (NULL: the interpreter) and what getting it took, for the time line. Exit code. */
static int each_plan(each_state *es, const char *file, lt_datum **in, lt_plan **plan, char *how, size_t n) {
    cli_compile_args *ca = &es->ra->ca;
    int rc = 0;
    *plan = NULL;
    if (es->mode == EACH_INTERP) {
        cli_fmt(how, n, "interp");
    } else if (es->mode == EACH_FAMILY) {
        cli_family_step st;
        char step[256];
        if ((rc = cli_family_plan(&es->cf, file, in, plan, &st))) return rc;
        cli_family_step_describe(&st, step, sizeof step);
        cli_fmt(how, n, "%s, first run; %s", ca->backend, step);
        if (es->ra->verbose && !st.cached) cli_family_print(&es->cf, stdout);
    } else if (es->plan) {
        *plan = es->plan;
        cli_fmt(how, n, "%s, first run; compiled once, at the first file", ca->backend);
    } else {
        lt_compile_report rep = {0};
        double t0 = cli_now_ms();
        if ((rc = cli_inputs_fix_shapes(es->mc, in)) || (rc = cli_compile_model(ca, es->mc, in, &es->plan, &rep)))
            return rc;
        cli_fmt(how, n, "%s, first run; compile %.3f s%s", ca->backend, (cli_now_ms() - t0) / 1e3,
                rep.n_kernels ? (rep.cache_hit ? ", cached" : "") : "");
        if (es->ra->verbose) cli_compile_print_report(&rep, stdout);
        lt_compile_report_free(&rep);
        *plan = es->plan;
    }
    return 0;
}

/* Run k: bind its file (and the --input specs), check the ranges, plan, run, report. Exit code. */
static int each_run(each_state *es, int k) {
    cli_run_args *ra = es->ra;
    const char *file = ra->each[k];
    const lt_graph *g = es->m->graph;
    lt_ctx ctx = {0};
    lt_plan *plan = NULL;
    char how[512], stem[4200];
    int rc = 0;
    lt_datum **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    lt_datum **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!in || !outs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    es->specs[ra->n_inputs] = file;
    if ((rc = cli_inputs_bind("run", es->m, ra->n_inputs + 1, es->specs, ra->fill, (uint64_t)ra->seed, in)) ||
        (rc = cli_ranges_check(&ra->dd, es->m, in, file)))
        goto out;
    print_header(es, k, in);
    if ((rc = each_plan(es, file, in, &plan, how, sizeof how))) goto out;
    lt_model *runs = es->mode == EACH_INTERP ? es->m : NULL;
    double t0 = cli_now_ms();
    if (cli_run_once(&ctx, ra->ca.backend, runs, plan, (uint64_t)ra->seed, in, outs, NULL) != LT_OK) {
        cli_error("%s: %s", file, ctx.msg);
        rc = lt_status_exit_code(ctx.status ? ctx.status : LT_ERR_INTERNAL);
        goto out;
    }
    double t1 = cli_now_ms();
    if (ra->output) {
        file_stem(file, stem, sizeof stem);
        cli_fmt(es->out_path, sizeof es->out_path, "%s/%s.npz", ra->output, stem);
    }
    rc = cli_run_finish(ra, runs, plan, g, in, outs, t1 - t0, how, ra->output ? es->out_path : NULL);
out:
    for (int i = 0; in && i < g->n_inputs; i++) lt_datum_release(in[i]);
    for (int i = 0; outs && i < g->n_outputs; i++) lt_datum_release(outs[i]);
    free(in);
    free(outs);
    return rc;
}

int cli_run_each(cli_run_args *ra) {
    each_state es = {.ra = ra};
    int rc = each_check(ra);
    if (!rc) rc = each_setup(&es);
    for (int k = 0; k < ra->n_each && !rc; k++) rc = each_run(&es, k);
    if (!rc && es.have_family) {
        printf("\n");
        cli_family_print(&es.cf, stdout);
    }
    if (es.have_family) cli_family_close(&es.cf);
    lt_plan_free(es.plan);
    lt_model_free(es.mc);
    lt_model_free(es.m);
    lt_artifact_free(es.art);
    free(es.specs);
    return rc;
}
