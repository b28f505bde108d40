/* schedule.h — schedules as data: an array of recorded steps applied to a kernel's loop nest.
 *
 * A step names its target loops by variable name ("i", "i.o", ...). lt_sched_apply checks the step's
 * preconditions and returns LT_ERR_INVALID with a message naming the loop when they fail (never
 * asserts). Steps print as one line each ("split i 16", "parallel i.o") and parse back, so tuned
 * schedules can be stored in a database and replayed.
 */
#ifndef LT_SCHEDULE_H
#define LT_SCHEDULE_H

#include "loop.h"

typedef enum lt_sstep_kind {
    LT_S_SPLIT,       /* loop -> loop.o, loop.i with extent factor (tail guarded) */
    LT_S_REORDER,     /* swap two perfectly nested loops: loop (outer) and loop2 (inner) */
    LT_S_TILE,        /* split loop by factor, loop2 by factor2, reorder to o,o,i,i */
    LT_S_FUSE,        /* merge perfectly nested loop and loop2 into loop.loop2 */
    LT_S_VECTORIZE,   /* mark loop vectorized (extent should be a constant) */
    LT_S_UNROLL,      /* mark loop unrolled */
    LT_S_PARALLEL,    /* mark loop parallel (CPU threads) */
    LT_S_BIND,        /* mark loop GPU block (factor 0) or thread (factor 1), axis factor2 */
    LT_S_CACHE,       /* stage buffer `loop` into a LOCAL (factor 0) or SHARED (factor 1) copy at loop2 */
    LT_S_MICROKERNEL, /* replace the loop nest at `loop` with a call to microkernel `name` */
    LT_S_COUNT
} lt_sstep_kind;

typedef struct lt_sstep {
    lt_sstep_kind kind;
    char loop[64];
    char loop2[64];
    char name[64];
    int64_t factor, factor2;
} lt_sstep;

typedef struct lt_schedule {
    int n;
    lt_sstep steps[64];
} lt_schedule;

lt_status lt_sched_apply(lt_ctx *ctx, lt_kernel *k, const lt_sstep *step);
lt_status lt_sched_apply_all(lt_ctx *ctx, lt_kernel *k, const lt_schedule *s);
/* "split i 16" <-> step */
void lt_sstep_format(const lt_sstep *s, char *buf, size_t n);
lt_status lt_sstep_parse(lt_ctx *ctx, const char *line, lt_sstep *out);

#endif
