/* bench_clock.h — the clocks and the sort order the micro-benchmarks (gemm_bench.c, gemm_i8_bench.c,
 * nchwc_bench.c) time with: wall time, the calling thread's CPU time (which leaves out time spent
 * descheduled on a shared machine), and a qsort comparator of doubles for medians.
 */
#ifndef LT_BENCH_CLOCK_H
#define LT_BENCH_CLOCK_H

#include <time.h>

static inline double wall_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static inline double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static inline int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
