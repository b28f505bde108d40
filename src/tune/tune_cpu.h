/* tune_cpu.h — tuned schedules in the compile pipeline (tune_cpu.c), for a target that takes the
 * tuning database (lt_target.tune_db): the lt_compile_options.schedule_hook that looks kernels up in
 * a tuning database and, for `lathe tune`, searches and measures the ones it lacks through the
 * vtable of the backend the caller compiles for.
 *
 *     lt_tune_cpu tc = {.db = db};                       // lookups only
 *     o.schedule_hook = lt_tune_cpu_hook, o.schedule_user = &tc;
 *     lt_tune_cpu tc = {.db = db, .search = true, .backend = o.backend,
 *                       .cc = cc, .cache_dir = dir,
 *                       .options = {.beam = 2, .depth = 2, .max_trials = 12}};   // lathe tune
 *     ... compiles ...; lt_tune_cpu_end(&tc);                // the search's backend instance
 * and, per model, whether the blocked layout pays (lt_tune_model_record / lt_tune_model_passes).
 */
#ifndef LT_TUNE_CPU_H
#define LT_TUNE_CPU_H

#include "../compile/compile.h"
#include "../lower/lower.h"
#include "tune.h"

typedef struct lt_tune_cpu {
    lt_tune_db *db;             /* lookups read it; the search inserts its results (caller saves) */
    bool search;                /* measure kernels the database lacks (lathe tune) */
    lt_tune_options options;    /* the search's beam, depth, trials, space (base: the default) */
    const char *backend;        /* search: the backend the caller compiles for (registry name); the
                                   measured modules are built and run through its vtable */
    const char *cc;             /* compiler of the measured modules (NULL: "cc") */
    const char *cache_dir;      /* their cache (NULL: none) */
    double min_seconds;         /* one timing batch runs at least min_seconds / 5 (0: 0.02) */
    void (*log)(void *user, const char *line); /* one line per searched kernel (may be NULL): name,
                                                  default ms, best ms, speedup, trials, rejected as
                                                  wrong, the schedule */
    void *log_user;
    /* counts, filled in */
    int n_hits;                 /* kernels whose schedule came from the database */
    int n_searched;             /* kernels searched (and inserted) */
    int n_trials;               /* kernel modules built and run */
    int n_wrong;                /* candidates rejected because their outputs differed */
    /* the search's backend instance: created on the first search, kept for the session */
    lt_backend *b;
} lt_tune_cpu;

/* compile.h's schedule_hook; user is an lt_tune_cpu. */
lt_status lt_tune_cpu_hook(void *user, lt_ctx *ctx, lt_lowered *lw, int threads, bool *replaced);
/* The database key the hook uses for kernel k (unscheduled) at `threads`: lt_tune_key_kernel with the
 * target "cpu-<isa>" and shapes "threads=N". */
lt_status lt_tune_cpu_kernel_key(lt_ctx *ctx, const lt_kernel *k, int threads, lt_tune_key *key);

/* A CPU compile of model m reading the database at path: loads it into tc->db (tc zeroed first),
 * points o's schedule hook at tc and sets o->tuned_passes (lt_tune_model_passes at o->threads). A path
 * that does not exist is LT_ERR_INVALID naming it, unless missing_ok (then nothing is set up, tc->db
 * stays NULL). After the compile, lt_tune_cpu_detach. */
lt_status lt_tune_cpu_attach(lt_ctx *ctx, const char *path, bool missing_ok, const lt_model *m, lt_compile_options *o,
                             lt_tune_cpu *tc);
/* Undo lt_tune_cpu_attach: the hook and tuned passes cleared from o, tc->db freed (and
 * lt_tune_cpu_end). */
void lt_tune_cpu_detach(lt_compile_options *o, lt_tune_cpu *tc);
/* End a tuning session: the backend instance the search created (if any) destroyed. */
void lt_tune_cpu_end(lt_tune_cpu *tc);

/* Whole-model choices: whether the channel-blocked layout (the layout_nchwc pass) pays for a model.
 * `lathe tune` times the model both ways and inserts each time (no schedule steps) under the model's
 * key, computed before compiling (compiling rewrites the model): the SHA-256 of its main graph as
 * printed (structure, shapes, constants' names), target
 * "cpu-<isa>", shapes "threads=N passes=<variant>" (variant "default" or "layout_nchwc"). */
lt_status lt_tune_model_key(lt_ctx *ctx, const lt_model *m, int threads, const char *variant, lt_tune_key *key);
/* The passes the database says pay for m at `threads`: "layout_nchwc" when both variants were
 * timed and the blocked one was at least 2% faster; "" otherwise (nothing recorded, or NCHW won). */
lt_status lt_tune_model_passes(lt_ctx *ctx, const lt_tune_db *db, const lt_model *m, int threads, const char **out);

#endif
