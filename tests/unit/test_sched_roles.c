/* test_sched_roles.c — default schedules depend on loop roles, never on loop names: every kernel
 * the compile lowers for the ONNX node-test suite (with GEMM microkernels and without) gets its
 * default schedule twice, once as lowered and once with every variable renamed ("n<id>", a name no
 * lowering gives), for CPU vector widths 16 and 4 and for the GPU schedules. The two schedules must
 * be the same steps (kinds and factors equal, each step naming the same loop: the variable it names
 * resolves to the same id when the step is applied) and must give the same scheduled kernel
 * (printed with every variable as "v<id>"). A default schedule that finds loops by their names
 * fails this (the renamed kernel gets another schedule).
 *
 * The kernels come through the compile's schedule_hook (emit_only: no C compiler runs); the GPU
 * schedules are computed on the CPU lowering. The suite is found as onnx_suite.h says; not finding
 * it is a failure. Exits non-zero on any failure, printing the test and kernel. */
#include "compile/compile.h"
#include "loop/schedule.h"
#include "onnx_suite.h"
#include "test_util.h"

typedef struct checker {
    const char *test;
    int kernels, schedules, steps, failed;
} checker;

/* The scheduled kernel printed with every variable as v<id> (names put back after). */
static char *canonical(lt_kernel *k) {
    const char **names = malloc(sizeof *names * (size_t)(k->n_vars + 1));
    char (*tmp)[24] = malloc(sizeof *tmp * (size_t)(k->n_vars + 1));
    if (!names || !tmp) {
        free(names);
        free(tmp);
        return NULL;
    }
    for (int i = 0; i < k->n_vars; i++) {
        names[i] = k->vars[i]->name;
        snprintf(tmp[i], sizeof tmp[i], "v%d", i);
        k->vars[i]->name = tmp[i];
    }
    lt_strbuf b = {0};
    lt_kernel_print(k, &b);
    for (int i = 0; i < k->n_vars; i++) k->vars[i]->name = names[i];
    free(names);
    free(tmp);
    if (b.failed) {
        lt_sb_free(&b);
        return NULL;
    }
    return b.s ? b.s : strdup("");
}

static int var_id(const lt_kernel *k, const char *name) {
    const lt_lvar *v = name[0] ? lt_kernel_find_var(k, name) : NULL;
    return v ? v->id : -1;
}

/* What applying schedule s to k (from body0) gives: per step the ids of the loops it names, the
 * status, and the canonical print. The kernel is restored (body, variable and buffer counts). */
typedef struct outcome {
    int ids[(int)(sizeof(((lt_schedule *)0)->steps) / sizeof(((lt_schedule *)0)->steps[0]))][2];
    lt_status st;
    char *text;
} outcome;

static void run_schedule(lt_kernel *k, lt_lnode *body0, const lt_schedule *s, outcome *o) {
    int nv = k->n_vars, nb = k->n_bufs;
    k->body = body0;
    o->st = LT_OK;
    o->text = NULL;
    for (int i = 0; i < s->n && o->st == LT_OK; i++) {
        const lt_sstep *st = &s->steps[i];
        o->ids[i][0] = st->kind == LT_S_CACHE ? -2 : var_id(k, st->loop);
        o->ids[i][1] = var_id(k, st->loop2);
        lt_ctx c = {0};
        o->st = lt_sched_apply(&c, k, st);
    }
    if (o->st == LT_OK) {
        lt_lnode *b = lt_lsimplify(k, k->body);
        if (b) k->body = b;
        o->text = canonical(k);
    }
    k->body = body0;
    k->n_vars = nv;
    k->n_bufs = nb;
}

static void fail(checker *c, const lt_kernel *k, const char *variant, const char *what, int step) {
    fprintf(stderr, "%s: kernel %s (%s): %s", c->test, k->name, variant, what);
    if (step >= 0) fprintf(stderr, " at step %d", step);
    fprintf(stderr, "\n");
    c->failed++;
}

static void compare(checker *c, lt_lowered *lw, const lt_lower_options *lo, const char *variant) {
    lt_kernel *k = lw->kernel;
    lt_ctx ctx = {0};
    lt_schedule *s1 = calloc(1, sizeof *s1), *s2 = calloc(1, sizeof *s2);
    outcome *o1 = calloc(1, sizeof *o1), *o2 = calloc(1, sizeof *o2);
    const char **names = malloc(sizeof *names * (size_t)(k->n_vars + 1));
    char (*tmp)[24] = malloc(sizeof *tmp * (size_t)(k->n_vars + 1));
    if (!s1 || !s2 || !o1 || !o2 || !names || !tmp) {
        fail(c, k, variant, "out of memory", -1);
        goto done;
    }
    lt_status a = lt_sched_default(&ctx, lw->group, k, lo, s1);
    run_schedule(k, lw->body0, s1, o1);
    for (int i = 0; i < k->n_vars; i++) { /* rename */
        names[i] = k->vars[i]->name;
        snprintf(tmp[i], sizeof tmp[i], "n%d", i);
        k->vars[i]->name = tmp[i];
    }
    lt_status b = lt_sched_default(&ctx, lw->group, k, lo, s2);
    run_schedule(k, lw->body0, s2, o2);
    for (int i = 0; i < k->n_vars; i++) k->vars[i]->name = names[i];
    c->schedules++;
    c->steps += s1->n;
    if (a != b) fail(c, k, variant, "the default schedule's status depends on the names", -1);
    else if (s1->n != s2->n) fail(c, k, variant, "a different number of steps after renaming", -1);
    else {
        for (int i = 0; i < s1->n; i++) {
            const lt_sstep *x = &s1->steps[i], *y = &s2->steps[i];
            if (x->kind != y->kind || x->factor != y->factor || x->factor2 != y->factor2 || strcmp(x->name, y->name) ||
                (x->kind == LT_S_CACHE && strcmp(x->loop, y->loop))) {
                fail(c, k, variant, "another step after renaming", i);
                break;
            }
            if (i < (o1->st == LT_OK ? s1->n : 0) && (o1->ids[i][0] != o2->ids[i][0] || o1->ids[i][1] != o2->ids[i][1])) {
                fail(c, k, variant, "a step names another loop after renaming", i);
                break;
            }
        }
        if (o1->st != o2->st) fail(c, k, variant, "the schedule applies in one naming only", -1);
        else if ((o1->text == NULL) != (o2->text == NULL) || (o1->text && strcmp(o1->text, o2->text)))
            fail(c, k, variant, "another scheduled kernel after renaming", -1);
    }
done:
    if (o1) free(o1->text);
    if (o2) free(o2->text);
    free(s1);
    free(s2);
    free(o1);
    free(o2);
    free(names);
    free(tmp);
}

static lt_status hook(void *user, lt_ctx *ctx, lt_lowered *lw, int threads, bool *replaced) {
    (void)ctx, (void)threads;
    checker *c = user;
    *replaced = false;
    c->kernels++;
    lt_lower_options cpu16 = {.vector_lanes = 16}, cpu4 = {.vector_lanes = 4}, gpu = {.vector_lanes = 16, .gpu = true};
    compare(c, lw, &cpu16, "cpu, 16 lanes");
    compare(c, lw, &cpu4, "cpu, 4 lanes");
    compare(c, lw, &gpu, "gpu");
    return LT_OK;
}

static void check_test(const char *suite, const char *test, bool no_microkernels, checker *c) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", suite, test);
    lt_model *m = suite_load(dir);
    if (!m) return;
    c->test = test;
    lt_compile_options o;
    lt_compile_options_init(&o);
    o.emit_only = true;
    o.vector_lanes = 16;
    o.no_microkernels = no_microkernels;
    o.schedule_hook = hook;
    o.schedule_user = c;
    lt_ctx ctx = {0};
    lt_plan *plan = NULL;
    lt_compile(&ctx, m, &o, &plan, NULL); /* models the compile refuses have no kernels to check */
    lt_model_free(m);
}

int main(void) {
    char suite[1024];
    if (!suite_find(suite, sizeof suite)) {
        fprintf(stderr, "test_sched_roles: the ONNX node tests were not found (set LATHE_ONNX_SUITE, or "
                        "install the onnx package of requirements.txt)\n");
        return 1;
    }
    int n = 0;
    char **names = suite_list(suite, &n);
    if (!names) return 1;
    checker c = {0};
    for (int i = 0; i < n; i++) {
        check_test(suite, names[i], false, &c);
        check_test(suite, names[i], true, &c);
        free(names[i]);
    }
    free(names);
    printf("test_sched_roles: %d kernels, %d default schedules (%d steps) compared before and after renaming, "
           "%d differ\n",
           c.kernels, c.schedules, c.steps, c.failed);
    CHECK(c.kernels > 1000 && c.steps > 1000); /* the suite was really there and the schedules had steps */
    return c.failed || failures ? 1 : 0;
}
