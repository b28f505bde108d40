/* test_util.h — shared by the C unit tests in tests/unit/: the failure counter with the CHECK and
 * CHECK_MSG macros, the end-of-run report, and an allocator hook (src/base/base.h) that fails on
 * demand and counts the blocks it has handed out, for the out-of-memory sweeps.
 * Header-only (static functions): each test program includes it once. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include "base/base.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks ---- */
static int failures; /* checks failed so far; test_report turns it into the exit status */

/* Count a failure (and print where) unless cond holds; the test goes on. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Count a failure unless the error message recorded in ctx (an lt_ctx, not a pointer) contains sub. */
#define CHECK_MSG(ctx, sub)                                                                        \
    do {                                                                                           \
        if (!strstr((ctx).msg, (sub))) {                                                           \
            fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n", __FILE__, __LINE__, (ctx).msg, (sub)); \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The end of main: prints "name: ok" and returns 0, or prints the failure count and returns 1. */
static inline int test_report(const char *name) {
    if (failures) {
        fprintf(stderr, "%s: %d failure(s)\n", name, failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

/* ---- an allocator hook that fails on demand ----
 * Two ways to fail, both off at -1:
 *   g_countdown = n: n more allocations succeed, then every later one fails (until reset to -1);
 *   g_fail_at = n:   only the allocation numbered n (counting from g_calls = 0) fails.
 * g_live counts the blocks handed out and not yet freed, to find leaks on the failure paths. */
__attribute__((unused)) static long g_countdown = -1, g_fail_at = -1, g_calls, g_live;

static inline bool test_alloc_should_fail(void) {
    if (g_countdown == 0) return true;
    if (g_countdown > 0) g_countdown--;
    return g_fail_at >= 0 && g_calls++ == g_fail_at;
}
static inline void *test_hook_alloc(void *u, size_t n) {
    (void)u;
    if (test_alloc_should_fail()) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) g_live++;
    return p;
}
static inline void *test_hook_realloc(void *u, void *p, size_t n) {
    (void)u;
    if (test_alloc_should_fail()) return NULL;
    void *q = realloc(p, n ? n : 1);
    if (q && !p) g_live++;
    return q;
}
static inline void test_hook_free(void *u, void *p) {
    (void)u;
    if (p) g_live--;
    free(p);
}
__attribute__((unused)) static const lt_allocator g_test_alloc = {test_hook_alloc, test_hook_realloc, test_hook_free, NULL};

/* Install the hook with the first n allocations succeeding and every later one failing. */
static inline void test_alloc_fail_after(long n) {
    lt_set_allocator(&g_test_alloc);
    g_countdown = n;
}
/* Back to malloc, nothing failing. */
static inline void test_alloc_restore(void) {
    lt_set_allocator(NULL);
    g_countdown = -1;
}

#endif
