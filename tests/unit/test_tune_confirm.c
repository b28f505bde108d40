/* test_tune_confirm.c — lt_tune_search's confirmation (lt_tune_options.confirm): a speed-up is the
 * ratio of two medians measured the same way, in turns, never the search's cold first time of the
 * default against the luckiest time of a candidate.
 *
 * A fake measure callback stands in for compiling and timing. Noise model: the first measurement
 * (the default schedule, cold) takes 100 ms; one candidate gets a lucky 0.2 ms once; every other run
 * takes the schedule's true time, 1 ms, or 0.25 ms with a vectorized loop when `vector_helps`.
 *   - no schedule is really faster: without confirmation the search reports 500x; with it, the
 *     default is kept at a speed-up of exactly 1 (same medians) and the confirming runs alternate;
 *   - vectorizing is 4x faster: the winner is kept and the speed-up is the true 4x, not 400x;
 *   - confirming runs are not counted as search trials; a confirming run that fails stops the
 *     search with its status.
 */
#include "loop/loop.h"
#include "tune/tune.h"
#include "test_util.h"

#include <math.h>

typedef struct noisy {
    int calls, lucky_at, fail_at;
    bool vector_helps;
    char order[512]; /* per run: 'b' the default schedule, 'w' another */
    int n_order;
} noisy;

static bool vectorized(const lt_schedule *s) {
    for (int i = 0; i < s->n; i++)
        if (s->steps[i].kind == LT_S_VECTORIZE) return true;
    return false;
}

static lt_status noisy_measure(void *user, lt_ctx *ctx, const lt_kernel *k, const lt_schedule *s, double *seconds) {
    (void)k;
    noisy *f = user;
    f->calls++;
    if (f->fail_at && f->calls == f->fail_at) return lt_error(ctx, LT_ERR_IO, "measure failed");
    if (f->n_order < (int)sizeof f->order - 1) f->order[f->n_order++] = s->n == 0 ? 'b' : 'w';
    if (f->calls == 1) *seconds = 0.1;
    else if (f->calls == f->lucky_at) *seconds = 0.2e-3;
    else *seconds = f->vector_helps && vectorized(s) ? 0.25e-3 : 1e-3;
    return LT_OK;
}

/* C[i*256 + j] = A[...] + B[...] over 64 x 256: splits, vectorization and parallel loops apply. */
static lt_kernel *build_add(lt_arena *a) {
    lt_kernel *k = lt_kernel_new(a, "add");
    lt_lbuf *C = lt_kernel_arg(k, "C", LT_FLOAT, 64 * 256), *A = lt_kernel_arg(k, "A", LT_FLOAT, 64 * 256),
            *B = lt_kernel_arg(k, "B", LT_FLOAT, 64 * 256);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, 256)), lt_l_var(k, j));
    lt_lnode *st = lt_l_store(k, C, idx, lt_l_binary(k, LT_LOP_ADD, lt_l_load(k, A, idx), lt_l_load(k, B, idx)));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 64), LT_LOOP_SERIAL,
                       lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 256), LT_LOOP_SERIAL, st));
    if (k->body) lt_kernel_cost(k);
    return k->body ? k : NULL;
}

static lt_status search(lt_kernel *k, noisy *f, int confirm, lt_tune_result *r, lt_ctx *ctx) {
    lt_tune_options o = {.beam = 2, .depth = 2, .max_trials = 12, .confirm = confirm};
    memset(r, 0, sizeof *r);
    return lt_tune_search(ctx, k, &o, noisy_measure, f, r);
}

static void test_no_real_speedup(lt_kernel *k) {
    lt_ctx ctx = {0};
    lt_tune_result r;
    noisy f = {.lucky_at = 3};
    CHECK(search(k, &f, 0, &r, &ctx) == LT_OK);
    CHECK(r.base_s / r.best_s > 100); /* what the search alone claims */
    CHECK(r.confirmed == 0);

    noisy g = {.lucky_at = 3};
    CHECK(search(k, &g, 5, &r, &ctx) == LT_OK);
    CHECK(r.confirmed == 5);
    CHECK(r.best.n == 0);                        /* the default, kept */
    CHECK(r.base_s == 1e-3 && r.best_s == 1e-3); /* medians of the confirming runs */
    CHECK(r.trials > 2 && g.calls == r.trials + 10); /* 5 runs of each, not counted as trials */
}

static void test_real_speedup(lt_kernel *k) {
    lt_ctx ctx = {0};
    lt_tune_result r;
    noisy f = {.vector_helps = true};
    CHECK(search(k, &f, 5, &r, &ctx) == LT_OK);
    CHECK(vectorized(&r.best));
    CHECK(r.confirmed == 5 && r.base_s == 1e-3 && r.best_s == 0.25e-3);
    CHECK(fabs(r.base_s / r.best_s - 4) < 1e-9);
}

/* The confirming runs come last and alternate default, winner, default, winner ... */
static void test_order_and_failure(lt_kernel *k) {
    lt_ctx ctx = {0};
    lt_tune_result r;
    noisy f = {.vector_helps = true};
    CHECK(search(k, &f, 3, &r, &ctx) == LT_OK);
    CHECK(f.n_order == r.trials + 6 && !strcmp(f.order + r.trials, "bwbwbw"));
    /* a confirming run that fails is the search's error */
    noisy g = {.vector_helps = true, .fail_at = r.trials + 2};
    lt_ctx e = {0};
    CHECK(search(k, &g, 3, &r, &e) == LT_ERR_IO);
    CHECK_MSG(e, "measure failed");
}

int main(void) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    CHECK(k != NULL);
    if (k) {
        test_no_real_speedup(k);
        test_real_speedup(k);
        test_order_and_failure(k);
    }
    lt_arena_free(&a);
    return test_report("test_tune_confirm");
}
