/* tune_cpu.h — tuned schedules for the CPU in the compile pipeline (tune_cpu.c): the
 * lt_compile_options.schedule_hook that looks kernels up in a tuning database and, for `lathe tune`,
 * searches and measures the ones it lacks.
 *
 *     lt_tune_cpu tc = {.db = db};                       // lookups only
 *     o.schedule_hook = lt_tune_cpu_hook, o.schedule_user = &tc;
 *     lt_tune_cpu tc = {.db = db, .search = true, .cc = cc, .cache_dir = dir,
 *                       .options = {.beam = 2, .depth = 2, .max_trials = 12}};   // lathe tune
 */
#ifndef LT_TUNE_CPU_H
#define LT_TUNE_CPU_H

#include "../lower/lower.h"
#include "tune.h"

typedef struct lt_tune_cpu {
    lt_tune_db *db;             /* lookups read it; the search inserts its results (caller saves) */
    bool search;                /* measure kernels the database lacks (lathe tune) */
    lt_tune_options options;    /* the search's beam, depth, trials, space (base: the default) */
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
} lt_tune_cpu;

/* compile.h's schedule_hook; user is an lt_tune_cpu. */
lt_status lt_tune_cpu_hook(void *user, lt_ctx *ctx, lt_lowered *lw, int threads, bool *replaced);

#endif
