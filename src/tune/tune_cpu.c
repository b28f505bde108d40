/* tune_cpu.c — tuned schedules in the compile pipeline (compile.h's schedule_hook), for a target
 * whose capabilities say the tuning database applies (lt_target.tune_db): a database lookup for
 * every compile (lathe run / compile / profile) and a measured search for `lathe tune` (tune.h).
 *
 * Key of a kernel: the hash of its unscheduled Loop IR (lt_tune_key_kernel: the name left out, so
 * a model's identical layers share one entry), the target "cpu-<isa>" and "threads=<N>" (a schedule
 * tuned for N threads is only looked up for N threads).
 *
 * Search (lt_tune_cpu.search): kernels built from plain loops only (no microkernel call: those have
 * scratch buffers or packed weights, and their tile sizes are the microkernels' business) are tuned
 * by lt_tune_kernel, starting from the default schedule, with a measure callback that
 *   - emits the scheduled kernel as a module of its own (lt_emit_module, the backend's language
 *     table) and builds it through the backend vtable of the backend the caller compiles for
 *     (lt_tune_cpu.backend; one instance per tuning session, created on the first search and kept
 *     until lt_tune_cpu_end): vt->compile (cached by content like every module), vt->load by the
 *     kernel's name, module_set_threads, and vt->launch on the argument pointers. The arguments are
 *     host memory, so the backend must have host memory (vt->host_memory) and a target that takes
 *     the tuning database;
 *   - runs it on fixed random arguments (floats in [-1, 1); integers and bools zero, which is a
 *     valid index for any gather), each argument restored from a pristine copy first;
 *   - checks the outputs against the default schedule's (|got - want| <= 1e-4 (|want| + mean|want|)):
 *     a schedule that computes something else is rejected, never stored;
 *   - times it: runs batched to at least min_seconds (sized on a warm call), the median of 5 batches.
 * The best schedule goes into the database (the caller saves it). A compile error of a candidate
 * rejects it; other errors stop the search.
 */
#include "tune_cpu.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../backend/backend.h"
#include "../codegen/codegen.h"
#include "../graph/graph.h"
#include "../profile/profile.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

lt_status lt_tune_cpu_kernel_key(lt_ctx *ctx, const lt_kernel *k, int threads, lt_tune_key *key) {
    char target[64], shapes[32];
    lt_tune_target_cpu(target, sizeof target);
    snprintf(shapes, sizeof shapes, "threads=%d", threads);
    return lt_tune_key_kernel(ctx, k, target, shapes, key);
}

/* Walk callback: remember loops and calls (nothing below a call matters). */
static bool find_call_or_loop(const lt_lnode *n, void *user) {
    int *seen = user; /* bit 0: a loop, bit 1: a call */
    if (n->kind == LT_L_FOR) *seen |= 1;
    if (n->kind == LT_L_EVAL) *seen |= 2;
    return !(*seen & 2);
}

/* Only loops: a kernel with scratch buffers or packed weights calls a microkernel, and one that
 * calls a prelude routine (the channel-blocked reorders and pools) or has no loop has nothing the
 * search could change. */
static bool tunable(const lt_lowered *lw) {
    if (lw->n_scratch != 0 || lw->n_packs != 0) return false;
    int seen = 0;
    lt_lwalk(lw->kernel->body, find_call_or_loop, &seen);
    return seen == 1;
}

/* ---- measuring one kernel ---- */

typedef struct measure_state {
    lt_tune_cpu *tc;
    int threads;
    int n;                /* arguments */
    void **arg;           /* working copies */
    void **pristine;      /* the random inputs */
    size_t *bytes;
    float **want;         /* the default schedule's float outputs (NULL: not a float output) */
    bool have_want;
} measure_state;

static void state_free(measure_state *m) {
    for (int i = 0; i < m->n; i++) {
        free(m->arg[i]);
        free(m->pristine[i]);
        if (m->want) free(m->want[i]);
    }
    free(m->arg);
    free(m->pristine);
    free(m->bytes);
    free(m->want);
    memset(m, 0, sizeof *m);
}

static lt_status state_init(lt_ctx *ctx, measure_state *m, const lt_kernel *k) {
    m->n = k->n_args;
    m->arg = calloc((size_t)m->n + 1, sizeof *m->arg);
    m->pristine = calloc((size_t)m->n + 1, sizeof *m->pristine);
    m->bytes = calloc((size_t)m->n + 1, sizeof *m->bytes);
    m->want = calloc((size_t)m->n + 1, sizeof *m->want);
    if (!m->arg || !m->pristine || !m->bytes || !m->want) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning)");
    uint32_t seed = 0x9e3779b9u;
    for (int i = 0; i < m->n; i++) {
        const lt_lbuf *b = k->args[i];
        size_t es = lt_dtype_size(b->dtype), nb = (size_t)(b->size > 0 ? b->size : 1) * (es ? es : 1);
        m->bytes[i] = nb;
        m->arg[i] = malloc(nb);
        m->pristine[i] = calloc(1, nb);
        if (!m->arg[i] || !m->pristine[i])
            return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning %s: argument %s, %zu bytes)", k->name, b->name, nb);
        if (b->dtype == LT_FLOAT)
            for (int64_t e = 0; e < b->size; e++) {
                seed = seed * 1664525u + 1013904223u;
                ((float *)m->pristine[i])[e] = (float)(seed >> 8) / 8388608.0f - 1.0f;
            }
    }
    return LT_OK;
}

static void restore(measure_state *m) {
    for (int i = 0; i < m->n; i++) memcpy(m->arg[i], m->pristine[i], m->bytes[i]);
}

/* The default schedule's outputs (the first measurement): copies of the written arguments. */
static lt_status record_outputs(lt_ctx *ctx, measure_state *m, const lt_kernel *k) {
    for (int i = 0; i < m->n; i++) {
        if (!k->args[i]->written) continue;
        if (!(m->want[i] = malloc(m->bytes[i])))
            return lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning %s: outputs)", k->name);
        memcpy(m->want[i], m->arg[i], m->bytes[i]);
    }
    m->have_want = true;
    return LT_OK;
}

/* A candidate's outputs against the default's: integers and bools exactly, floats within
 * 1e-4 (|want| + mean |want|), NaN where NaN. */
static bool same_outputs(const measure_state *m, const lt_kernel *k) {
    for (int i = 0; i < m->n; i++) {
        const lt_lbuf *b = k->args[i];
        if (!b->written) continue;
        if (b->dtype != LT_FLOAT) {
            if (memcmp(m->want[i], m->arg[i], m->bytes[i]) != 0) return false;
            continue;
        }
        const float *got = m->arg[i], *want = m->want[i];
        double mean = 0;
        for (int64_t e = 0; e < b->size; e++) mean += fabs((double)want[e]);
        mean = b->size > 0 ? mean / (double)b->size : 0;
        for (int64_t e = 0; e < b->size; e++) {
            double w = want[e], g = got[e];
            if (w != w ? g == g : !(fabs(g - w) <= 1e-4 * (fabs(w) + mean))) return false;
        }
    }
    return true;
}

/* The session's backend instance: created on the first search from tc->backend, after checking
 * that its target takes the tuning database and its memory is host memory (the arguments are). */
static lt_status session_backend(lt_ctx *ctx, lt_tune_cpu *tc, lt_backend **out) {
    if (!tc->b) {
        const lt_backend_vtbl *vt = tc->backend ? lt_backend_find(tc->backend) : NULL;
        if (!vt) return lt_error(ctx, LT_ERR_USAGE, "tuning: no backend %s to measure kernels on",
                                 tc->backend ? tc->backend : "named");
        lt_target t;
        LT_TRY(lt_backend_target(ctx, vt, NULL, NULL, &t));
        if (!t.tune_db)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "tuning: the %s backend's target takes no tuned schedules", vt->name);
        if (!vt->host_memory)
            return lt_error(ctx, LT_ERR_UNSUPPORTED,
                            "tuning: kernels are measured on host memory, and the %s backend's memory is not", vt->name);
        lt_backend_options bo = {.cc = tc->cc, .cache_dir = tc->cache_dir};
        LT_TRY(lt_backend_create(ctx, vt->name, &bo, &tc->b));
    }
    *out = tc->b;
    return LT_OK;
}

static lt_status measure(void *user, lt_ctx *ctx, const lt_kernel *k, const lt_schedule *s, double *seconds) {
    (void)s;
    measure_state *m = user;
    lt_tune_cpu *tc = m->tc;
    *seconds = INFINITY;
    lt_backend *b = NULL;
    LT_TRY(session_backend(ctx, tc, &b));
    const lt_backend_vtbl *vt = b->vt;
    lt_emit_kernel ek = {k, "lathe tune"};
    lt_strbuf src = {0};
    lt_status st = lt_emit_module(ctx, vt->lang, &ek, 1, NULL, &src);
    if (st == LT_OK && (src.failed || !src.s)) st = lt_error(ctx, LT_ERR_NOMEM, "out of memory (tuning %s)", k->name);
    if (st != LT_OK) {
        lt_sb_free(&src);
        return st;
    }
    lt_bmodule *mod = NULL;
    lt_ctx c2 = {0};
    st = vt->compile(b, &c2, src.s, &mod);
    lt_sb_free(&src);
    if (st == LT_ERR_NOMEM || st == LT_ERR_UNSUPPORTED) return lt_error(ctx, st, "%s", c2.msg);
    if (st != LT_OK) return LT_OK; /* this candidate does not compile: rejected */
    lt_bkernel *fn = NULL;
    if ((st = vt->load(b, ctx, mod, k->name, &fn)) != LT_OK) {
        vt->module_free(b, mod);
        return st;
    }
    if (vt->module_set_threads) vt->module_set_threads(b, mod, m->threads);
    void *const *args = m->arg;
    restore(m);
    double t0 = now_s();
    st = vt->launch(b, ctx, fn, args, m->n);
    double once = now_s() - t0;
    if (st != LT_OK) {
        vt->module_free(b, mod);
        return st;
    }
    tc->n_trials++;
    if (!m->have_want) { /* the first measurement is the default schedule's */
        if ((st = record_outputs(ctx, m, k)) != LT_OK) {
            vt->module_free(b, mod);
            return st;
        }
    } else if (!same_outputs(m, k)) {
        tc->n_wrong++;
        vt->module_free(b, mod);
        return LT_OK; /* computes something else: rejected */
    }
    double min_s = tc->min_seconds > 0 ? tc->min_seconds : 0.02;
    t0 = now_s(); /* the first call also paid for page faults and starting threads: size batches on a warm one */
    st = vt->launch(b, ctx, fn, args, m->n);
    once = now_s() - t0;
    int64_t reps = once > 0 ? (int64_t)(min_s / 5 / once) + 1 : 1000;
    if (reps > 100000) reps = 100000;
    double t[5];
    for (int bt = 0; bt < 5 && st == LT_OK; bt++) {
        t0 = now_s();
        for (int64_t r = 0; r < reps && st == LT_OK; r++) st = vt->launch(b, ctx, fn, args, m->n);
        t[bt] = (now_s() - t0) / (double)reps;
    }
    vt->module_free(b, mod);
    if (st != LT_OK) return st;
    double med = lt_profile_median(t, 5);
    *seconds = med > 0 ? med : 1e-9;
    return LT_OK;
}

/* ---- the hook ---- */

lt_status lt_tune_cpu_hook(void *user, lt_ctx *ctx, lt_lowered *lw, int threads, bool *replaced) {
    lt_tune_cpu *tc = user;
    *replaced = false;
    if (!tc || !tc->db || !lw || !lw->kernel) return LT_OK;
    lt_kernel *k = lw->kernel;
    lt_tune_key key;
    LT_TRY(lt_tune_cpu_kernel_key(ctx, k, threads, &key));
    const lt_tune_entry *e = lt_tune_db_lookup(tc->db, &key);
    if (e) {
        lt_tune_entry_schedule(e, &lw->schedule);
        tc->n_hits++;
        *replaced = true;
        return LT_OK;
    }
    if (!tc->search || !tunable(lw)) return LT_OK;
    measure_state m = {.tc = tc, .threads = threads};
    lt_status st = state_init(ctx, &m, k);
    lt_tune_options o = tc->options;
    o.base = &lw->schedule;
    lt_tune_result res;
    memset(&res, 0, sizeof res);
    bool hit = false;
    int wrong0 = tc->n_wrong;
    if (st == LT_OK) st = lt_tune_kernel(ctx, tc->db, &key, k, &o, measure, &m, &res, &hit);
    state_free(&m);
    k->body = lw->body0;
    if (st != LT_OK) return st;
    tc->n_searched++;
    if (tc->log) {
        char line[1024];
        lt_strbuf sb = {0};
        lt_tune_schedule_format(&res.best, &sb);
        snprintf(line, sizeof line, "%-8s %10.4f %10.4f %6.2fx %6d %6d  %s", k->name, res.base_s * 1e3,
                 res.best_s * 1e3, res.best_s > 0 ? res.base_s / res.best_s : 0.0, res.trials, tc->n_wrong - wrong0,
                 sb.s ? sb.s : "?");
        lt_sb_free(&sb);
        tc->log(tc->log_user, line);
    }
    lw->schedule = res.best;
    *replaced = true;
    return LT_OK;
}

/* ---- whole-model choices ---- */

lt_status lt_tune_model_key(lt_ctx *ctx, const lt_model *m, int threads, const char *variant, lt_tune_key *key) {
    if (!m || !m->graph) return lt_error(ctx, LT_ERR_USAGE, "tuning: no model graph");
    char target[64], shapes[96];
    lt_tune_target_cpu(target, sizeof target);
    snprintf(shapes, sizeof shapes, "threads=%d passes=%s", threads, variant);
    lt_strbuf b = {0};
    lt_graph_print(m->graph, &b);
    if (b.failed || !b.s) {
        lt_sb_free(&b);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (printing the model for its tuning key)");
    }
    lt_status st = lt_tune_key_make(ctx, b.s, b.len, target, shapes, key);
    lt_sb_free(&b);
    return st;
}

lt_status lt_tune_model_passes(lt_ctx *ctx, const lt_tune_db *db, const lt_model *m, int threads, const char **out) {
    *out = "";
    if (!db) return LT_OK;
    lt_tune_key kd, kb;
    LT_TRY(lt_tune_model_key(ctx, m, threads, "default", &kd));
    LT_TRY(lt_tune_model_key(ctx, m, threads, "layout_nchwc", &kb));
    const lt_tune_entry *d = lt_tune_db_lookup(db, &kd), *b = lt_tune_db_lookup(db, &kb);
    if (d && b && b->time_s < 0.98 * d->time_s) *out = "layout_nchwc";
    return LT_OK;
}

/* ---- a compile's database ---- */

lt_status lt_tune_cpu_attach(lt_ctx *ctx, const char *path, bool missing_ok, const lt_model *m, lt_compile_options *o,
                             lt_tune_cpu *tc) {
    memset(tc, 0, sizeof *tc);
    if (access(path, F_OK) != 0) {
        if (missing_ok) return LT_OK;
        return lt_error(ctx, LT_ERR_INVALID, "tuning database %s: %s", path, strerror(errno));
    }
    const char *passes = "";
    lt_status st = lt_tune_db_new(ctx, &tc->db);
    if (st == LT_OK) st = lt_tune_db_load(ctx, tc->db, path);
    if (st == LT_OK) st = lt_tune_model_passes(ctx, tc->db, m, lt_compile_threads(o->threads), &passes);
    if (st != LT_OK) {
        lt_tune_db_free(tc->db);
        tc->db = NULL;
        return st;
    }
    o->schedule_hook = lt_tune_cpu_hook;
    o->schedule_user = tc;
    o->tuned_passes = passes;
    return LT_OK;
}

void lt_tune_cpu_detach(lt_compile_options *o, lt_tune_cpu *tc) {
    if (o->schedule_user == tc) o->schedule_hook = NULL, o->schedule_user = NULL, o->tuned_passes = NULL;
    lt_tune_db_free(tc->db);
    tc->db = NULL;
    lt_tune_cpu_end(tc);
}

void lt_tune_cpu_end(lt_tune_cpu *tc) {
    lt_backend_destroy(tc->b);
    tc->b = NULL;
}
