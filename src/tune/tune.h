/* tune.h — the tuning database and the schedule search driver.
 *
 * Database (tune_db.c). Maps a key -- the SHA-256 of a kernel's UNSCHEDULED Loop IR as printed
 * (or of any source text the caller chooses), a target string and an optional shapes string -- to
 * the best schedule measured for it (steps, schedule.h) and its time. Insert keeps the faster of
 * the stored and the new entry, so the database only improves. On disk it is one tab-separated
 * line per entry, easy to read, diff and merge:
 *     # lathe tuning database v1
 *     <hash>\t<target>\t<shapes or ->\t<seconds>\t<step>; <step>; ...   (or "-" for no steps)
 * e.g. "3fa9...e1\tcpu-avx512f\t64x256\t1.52e-05\tsplit j 16; vectorize j.i; parallel i".
 * Loading merges into what the database holds (so several files can be combined); a missing file
 * is an empty database; a malformed line is LT_ERR_INVALID naming the file and line. Saving is
 * atomic (temporary file + rename) and sorted by key, so the file diffs cleanly.
 *
 * Search (tune_search.c). lt_tune_search runs a beam search over schedules of one kernel: starting
 * from a base schedule (e.g. the default one of its group pattern), each round extends every
 * schedule in the beam by one action -- split a loop by a factor; split the innermost loop by a
 * vector width and vectorize the inner part (or vectorize it directly when its extent is a width);
 * parallelize an outer loop whose iterations write disjoint memory (never a reduction loop);
 * unroll an innermost loop -- drops the candidates whose steps do not
 * apply (their preconditions fail) or that were already tried, measures the others through the
 * caller's callback (which compiles and times the kernel, or, in tests, models it), and keeps the
 * `beam` fastest. It stops after `depth` rounds, when a round finds nothing faster, or when
 * `max_trials` measurements were spent. With `confirm`, a winner is timed again against the base
 * in turns and kept only if the medians agree it is faster: a search keeps the minimum of noisy
 * times, so its own numbers overstate a speed-up. The kernel is left exactly as it came in (its
 * body and its variable and buffer tables are restored after every candidate, so step names replay
 * verbatim).
 * lt_tune_kernel wraps it with the database: a hit returns the stored schedule without measuring.
 *
 * Errors: statuses with the message on ctx; a failing measure callback stops the search with its
 * status. Entry points: lt_tune_db_new/free/load/save/lookup/insert/count/get, lt_tune_key_make,
 * lt_tune_key_kernel, lt_tune_schedule_format/parse, lt_tune_search, lt_tune_kernel.
 */
#ifndef LT_TUNE_H
#define LT_TUNE_H

#include "../loop/schedule.h"

/* ---------------------------------------------------------------------------------------------
 * Keys and schedule text
 * ------------------------------------------------------------------------------------------- */

#define LT_TUNE_TARGET_MAX 128
#define LT_TUNE_SHAPES_MAX 256

typedef struct lt_tune_key {
    char hash[65];                       /* 64 lowercase hex digits */
    char target[LT_TUNE_TARGET_MAX];     /* "cpu-avx512f", "cuda-sm_90"...: no tab or newline, not empty */
    char shapes[LT_TUNE_SHAPES_MAX];     /* free text without tab or newline; "" = none */
} lt_tune_key;

/* key = SHA-256(text[0..len)), target, shapes (NULL = ""). Too-long target/shapes are an error. */
lt_status lt_tune_key_make(lt_ctx *ctx, const void *text, size_t len, const char *target, const char *shapes,
                           lt_tune_key *out);
/* key of a kernel: the hash of lt_kernel_print(k) with the kernel's and its buffers' names left
 * out (a model's identical layers share one key) -- call it on the UNSCHEDULED kernel. */
lt_status lt_tune_key_kernel(lt_ctx *ctx, const lt_kernel *k, const char *target, const char *shapes,
                             lt_tune_key *out);
/* "cpu-<isa>" for this machine ("cpu-avx512f", "cpu-avx2", "cpu-portable"). */
void lt_tune_target_cpu(char *buf, size_t n);

/* A schedule as one line: steps in lt_sstep_format's text joined by "; " ("-" when empty). */
void lt_tune_schedule_format(const lt_schedule *s, lt_strbuf *out);
/* Parse that line back (also accepts "" for no steps). LT_ERR_INVALID naming the step. */
lt_status lt_tune_schedule_parse(lt_ctx *ctx, const char *line, lt_schedule *out);

/* ---------------------------------------------------------------------------------------------
 * Database
 * ------------------------------------------------------------------------------------------- */

typedef struct lt_tune_entry {
    lt_tune_key key;
    double time_s;                       /* measured time of the kernel with this schedule (> 0) */
    int n_steps;
    const lt_sstep *steps;               /* owned by the database */
} lt_tune_entry;

typedef struct lt_tune_db lt_tune_db;

lt_status lt_tune_db_new(lt_ctx *ctx, lt_tune_db **out);
void lt_tune_db_free(lt_tune_db *db); /* NULL is fine */
/* Merge the file at path into db (absent file: nothing to merge). Keeps the faster of duplicates.
 * A symbolic link, or a file owned by another user or writable by group/others, is refused
 * (LT_ERR_IO): its schedules steer generated code. */
lt_status lt_tune_db_load(lt_ctx *ctx, lt_tune_db *db, const char *path);
/* The same from size bytes of text in memory; path names it in messages ("file:line: ..."). */
lt_status lt_tune_db_load_text(lt_ctx *ctx, lt_tune_db *db, const void *text, size_t size, const char *path);
/* Write every entry to path, atomically, sorted by (hash, target, shapes). */
lt_status lt_tune_db_save(lt_ctx *ctx, const lt_tune_db *db, const char *path);
/* The entry for key, NULL if none. Valid until the next insert/load. */
const lt_tune_entry *lt_tune_db_lookup(const lt_tune_db *db, const lt_tune_key *key);
/* Insert (key, schedule, time). An existing entry for key is replaced only if time_s is smaller;
 * *stored (may be NULL) says whether the new entry was kept. LT_ERR_USAGE for a bad key (empty
 * or non-hex hash, empty target, tab/newline in a field) or a time that is not positive and finite. */
lt_status lt_tune_db_insert(lt_ctx *ctx, lt_tune_db *db, const lt_tune_key *key, const lt_schedule *s, double time_s,
                            bool *stored);
int lt_tune_db_count(const lt_tune_db *db);
const lt_tune_entry *lt_tune_db_get(const lt_tune_db *db, int i); /* insertion order; NULL out of range */
/* Copy an entry's steps into a schedule. */
void lt_tune_entry_schedule(const lt_tune_entry *e, lt_schedule *out);

/* ---------------------------------------------------------------------------------------------
 * Search
 * ------------------------------------------------------------------------------------------- */

/* Measure kernel k, which has schedule s applied (simplified, verified, k->flops/bytes set).
 * Return LT_OK with *seconds > 0 for a time, LT_OK with *seconds = INFINITY (or <= 0) to reject the
 * candidate (it did not compile, gave wrong results...), or an error status to stop the search.
 * k is restored after the call: the callback must not keep pointers into its body. */
typedef lt_status (*lt_tune_measure_fn)(void *user, lt_ctx *ctx, const lt_kernel *k, const lt_schedule *s,
                                        double *seconds);

/* What the search may try. An array pointer of NULL takes the default list; a count of -1 with
 * any pointer disables that action. */
typedef struct lt_tune_space {
    const int64_t *split_factors;  int n_split;    /* default {2, 4, 8, 16, 32, 64} */
    const int64_t *vector_widths;  int n_vector;   /* default {4, 8, 16} */
    const int64_t *unroll_factors; int n_unroll;   /* default {2, 4, 8} */
    bool no_parallel;                              /* never add "parallel" */
    int parallel_max_depth;                        /* parallelize loops at most this deep (0: 2) */
} lt_tune_space;

typedef struct lt_tune_options {
    lt_tune_space space;
    int beam;                 /* schedules kept per round (0: 4) */
    int depth;                /* rounds = actions added to the base (0: 4) */
    int max_trials;           /* measurements, the base included (0: 256) */
    const lt_schedule *base;  /* starting schedule (NULL: none) */
    int confirm;              /* > 0: when the search found a schedule faster than the base, time
                               * the base and it again, in turns, `confirm` times each; the result's
                               * times are the two medians, and the best is kept only when its
                               * median is at least 2% lower (0: no confirmation; the search's times) */
} lt_tune_options;

typedef struct lt_tune_result {
    lt_schedule best;         /* the fastest schedule found (the base when nothing beat it) */
    double best_s;            /* its time (with confirm: the median of the confirming runs) */
    double base_s;            /* the base schedule's time (with confirm: measured the same way) */
    int trials;               /* measurements made by the search (the base included) */
    int confirmed;            /* confirming runs of each of base and best (0: none were made) */
    int rejected;             /* candidates whose steps did not apply or that measure rejected */
    int rounds;               /* rounds run */
} lt_tune_result;

/* Beam search over schedules of k (which must be unscheduled, or scheduled only as far as the
 * caller wants kept as the root: steps are applied on top of k->body). k is left unchanged.
 * Errors: LT_ERR_INVALID when the base schedule does not apply or measure rejects it; the
 * measure callback's status; LT_ERR_NOMEM. */
lt_status lt_tune_search(lt_ctx *ctx, lt_kernel *k, const lt_tune_options *opt, lt_tune_measure_fn measure,
                         void *user, lt_tune_result *out);

/* Database first: when db holds key, its schedule is returned (*hit = true, nothing measured,
 * out->best_s = the stored time, trials 0). Otherwise lt_tune_search, then the best is inserted. */
lt_status lt_tune_kernel(lt_ctx *ctx, lt_tune_db *db, const lt_tune_key *key, lt_kernel *k,
                         const lt_tune_options *opt, lt_tune_measure_fn measure, void *user,
                         lt_tune_result *out, bool *hit);

#endif
