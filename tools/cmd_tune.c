/* cmd_tune.c — `lathe tune MODEL`: search schedules for the model's loop kernels on this CPU,
 * measure them, and keep the fastest in the tuning database that later compiles read.
 *
 * The model is compiled as `lathe run` would (same passes, fusion and thread count) with
 * src/tune/tune_cpu.c's search hook: every kernel built from plain loops (not the GEMM and
 * convolution microkernels) that the database lacks for this CPU and thread count is tuned by a
 * beam search from its default schedule (splits, vectorization, parallel loops, unrolling), each
 * candidate built and timed alone and rejected when its outputs differ from the default's. The
 * search keeps the lowest of noisy times, so a winner is timed again against the default, in turns
 * (--confirm N runs each), and kept only if its median is at least 2% lower. One line per kernel:
 * the default's and the kept schedule's medians, the speedup, the trials and the schedule kept. The
 * database is saved (atomically) to --db FILE, default tune.tsv in the cache directory, which `lathe
 * run`, `compile` and `profile` read by default (--tune-db FILE / --no-tune-db there). Kernels
 * already in the database are not measured again, so tuning a model twice costs one compile.
 * Then the layout: a model with convolutions is compiled a second time with the channel-blocked
 * layout pass (layout_nchwc, off by default), both plans are timed in turns (--runs each, medians),
 * and both times go into the database under the model's key; later compiles of this model turn the
 * pass on when it was at least 2% faster (lt_tune_model_passes; the compile report says so).
 * --no-layout skips this, as does --disable-pass layout_nchwc.
 * The summary counts each variant's kernels: searched now, identical to one searched now (same
 * Loop IR: the database entry is shared), taken from the database as it was, and not tunable
 * (microkernel calls). On a terminal, a progress line on stderr shows the compile and the kernel
 * being searched.
 * Exit codes: 0 ok, 1 usage, 2 bad model, input or database, 3 unsupported.
 */
#include "cli_compile.h"
#include "cli_progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/infer.h"
#include "profile/profile.h"

static const char TUNE_HELP[] =
    "usage: lathe tune MODEL [options]\n"
    "\n"
    "Search faster schedules for MODEL's loop kernels (elementwise chains, reductions, softmax, norms;\n"
    "not the GEMM/convolution microkernels) on this CPU, measuring each candidate alone and checking\n"
    "its outputs against the default schedule's, and keep the fastest in a tuning database. Later\n"
    "compiles for the same CPU and thread count take them from there (lathe run / compile / profile\n"
    "read the default database; --no-tune-db there turns it off).\n"
    "\n"
    "options:\n"
    "  --db FILE             the tuning database (default: tune.tsv in the cache directory)\n"
    "  --trials N            measurements per kernel, the default schedule included (default 12)\n"
    "  --beam N              schedules kept per round of the search (default 2)\n"
    "  --depth N             rounds: steps added to the default schedule (default 3)\n"
    "  --min-time MS         time each candidate for at least MS milliseconds (default 20)\n"
    "  --confirm N           time a winner and the default again, in turns, N times each; keep the\n"
    "                        winner only if its median is at least 2% lower (default 5)\n"
    "  --runs N              whole-model runs per layout when timing the blocked layout (default 10)\n"
    "  --no-layout           do not time the channel-blocked layout (models with convolutions)\n"
    "  --input NAME=FILE, --shapes, --dim   shapes, as for `lathe run`\n"
    CLI_COMPILE_HELP
    "  -h, --help            show this help\n";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Median times of plans a and b over `runs` runs each, in turns of one untimed run and 5 timed. */
static int time_in_turns(lt_plan *const plans[2], lt_datum *const *in, int n_out, int runs, double med[2]) {
    double *t = calloc((size_t)runs * 2 + 2, sizeof *t);
    lt_datum **outs = calloc((size_t)n_out + 1, sizeof *outs);
    int n[2] = {0, 0}, rc = 0;
    if (!t || !outs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    while (n[0] < runs && !rc)
        for (int v = 0; v < 2 && !rc; v++)
            for (int k = -1; k < 5 && n[v] < runs; k++) { /* k = -1: the settling run */
                lt_ctx ctx = {0};
                double t0 = now_s();
                if (lt_plan_run(&ctx, plans[v], NULL, in, outs) != LT_OK) { rc = cli_fail(&ctx); break; }
                double dt = now_s() - t0;
                for (int o = 0; o < n_out; o++) lt_datum_release(outs[o]), outs[o] = NULL;
                if (k >= 0) t[v * runs + n[v]++] = dt;
            }
    for (int v = 0; v < 2 && !rc; v++) med[v] = lt_profile_median(t + v * runs, runs);
out:
    free(t);
    free(outs);
    return rc;
}

static bool has_conv(const lt_model *m) {
    for (int i = 0; i < m->graph->n_nodes; i++)
        if (m->graph->nodes[i]->op == LT_OP_Conv) return true;
    return false;
}

/* Did the compile's layout_nchwc pass change the model? */
static bool layout_ran(const lt_compile_report *rep) {
    for (int i = 0; i < rep->passes.n; i++)
        if (!strcmp(rep->passes.runs[i].name, "layout_nchwc") && rep->passes.runs[i].changed) return true;
    return false;
}

/* The kernel rows (user: a tune_run). A row of the blocked variant comes after a line saying so. */
static void log_line(void *user, const char *line) {
    const char **heading = user;
    cli_progress_clear();
    if (*heading) printf("%s\n", *heading), *heading = NULL;
    printf("%s\n", cli_esc(line)); /* rows name kernels after the model's nodes */
    fflush(stdout);
}

/* What happened to a compile's kernels. */
typedef struct tune_counts {
    int kernels, searched, same, known, untunable;
} tune_counts;

/* The schedule hook of lathe tune: lt_tune_cpu_hook, with each kernel counted by where its schedule
 * comes from (known: the database as loaded) and a progress line while it is searched. */
typedef struct tune_run {
    const char *heading; /* printed before the next kernel row (log_line's user points here) */
    lt_tune_cpu tc;
    const lt_tune_db *known;
    const char *variant;
    tune_counts c;
} tune_run;

static lt_status tune_hook(void *user, lt_ctx *ctx, lt_lowered *lw, int threads, bool *replaced) {
    tune_run *r = user;
    *replaced = false;
    if (!lw || !lw->kernel) return LT_OK;
    lt_tune_key key;
    LT_TRY(lt_tune_cpu_kernel_key(ctx, lw->kernel, threads, &key));
    bool known = lt_tune_db_lookup(r->known, &key) != NULL, now = lt_tune_db_lookup(r->tc.db, &key) != NULL;
    int searched = r->tc.n_searched;
    r->c.kernels++;
    if (!known && !now) cli_progress("tune (%s): searching %s, kernel %d", r->variant, lw->kernel->name, r->c.kernels);
    LT_TRY(lt_tune_cpu_hook(&r->tc, ctx, lw, threads, replaced));
    if (known) r->c.known++;
    else if (now) r->c.same++;
    else if (r->tc.n_searched > searched) r->c.searched++;
    else r->c.untunable++;
    return LT_OK;
}

static void print_counts(const char *variant, const tune_counts *c, const lt_compile_report *rep) {
    printf("%s: %d kernel(s), %d with tuned schedules: %d searched now, %d identical to one searched now, "
           "%d from the database; %d not tunable (microkernel calls)\n",
           variant, c->kernels, rep->n_tuned, c->searched, c->same, c->known, c->untunable);
}

int cmd_tune(int argc, char **argv) {
    const char *model = NULL, *db_arg = NULL;
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims),
               **inputs = calloc((size_t)argc, sizeof *inputs);
    int n_shapes = 0, n_dims = 0, n_inputs = 0, rc = 0, n_in = 0;
    int64_t trials = 12, beam = 2, depth = 3, min_ms = 20, runs = 10, confirm = 5;
    bool no_layout = false;
    lt_model *m = NULL, *m2 = NULL;
    lt_plan *plan = NULL, *plan2 = NULL;
    lt_datum **in = NULL;
    lt_tune_db *db = NULL, *known = NULL;
    lt_compile_report rep = {0}, rep2 = {0};
    bool have_rep = false, have_rep2 = false;
    tune_run run = {0};
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    if (!shapes || !dims || !inputs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(TUNE_HELP, stdout); goto out; }
        if (strcmp(a, "--no-layout") == 0) { no_layout = true; i++; continue; }
        r = cli_compile_opt("tune", argc, argv, &i, &ca);
        if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
        if (r > 0) continue;
        static const char *const opts[] = {"--db", "--trials", "--beam", "--depth", "--min-time", "--runs",
                                           "--confirm", "--input", "--shapes", "--dim"};
        int which = -1;
        for (int k = 0; k < (int)(sizeof opts / sizeof *opts) && which < 0; k++) {
            r = cli_opt_value("tune", argc, argv, &i, opts[k], &v);
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            if (r > 0) which = k;
        }
        int64_t *num[] = {NULL, &trials, &beam, &depth, &min_ms, &runs, &confirm};
        if (which >= 1 && which <= 6) {
            if (!cli_parse_i64(v, num[which]) || *num[which] < 1 || *num[which] > 100000) {
                rc = cli_usage("tune", "%s needs a positive count, got '%s'", opts[which], v);
                goto out;
            }
            continue;
        }
        switch (which) {
        case 0: db_arg = v; break;
        case 7: inputs[n_inputs++] = v; break;
        case 8: shapes[n_shapes++] = v; break;
        case 9: dims[n_dims++] = v; break;
        default:
            if (a[0] == '-' && a[1]) { rc = cli_usage("tune", "unknown option '%s'", a); goto out; }
            if (model) { rc = cli_usage("tune", "only one MODEL may be given ('%s' and '%s')", model, a); goto out; }
            model = a;
            i++;
            break;
        }
    }
    if (!model) { rc = cli_usage("tune", "missing MODEL"); goto out; }
    lt_target tt;
    lt_ctx tctx = {0};
    if (lt_backend_target_named(&tctx, ca.backend, NULL, &tt) != LT_OK || !tt.tune_db) {
        rc = cli_usage("tune", "only the cpu backend is tuned (got --backend %s)", ca.backend);
        goto out;
    }
    if (db_arg) {
        cli_fmt(ca.tune_db, sizeof ca.tune_db, "%s", db_arg);
        ca.tune_db_given = true;
        ca.no_tune_db = false;
    }
    char path[4200];
    cli_tune_db_path(&ca, path, sizeof path);
    if (!path[0]) { rc = cli_usage("tune", "no database: give --db FILE (there is no cache directory)"); goto out; }
    if ((rc = cli_compile_check_backend(&ca, false))) goto out;
    if ((rc = cli_load_model(model, n_shapes, shapes, n_dims, dims, &m))) goto out;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    n_in = m->graph->n_inputs;
    in = calloc((size_t)n_in + 1, sizeof *in);
    if (!in) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    if ((rc = cli_inputs_bind("tune", m, n_inputs, inputs, LT_FILL_RANDOM, 0, in))) goto out;
    if ((rc = cli_inputs_fix_shapes(m, in))) goto out;
    if (lt_tune_db_new(&ctx, &db) != LT_OK || lt_tune_db_load(&ctx, db, path) != LT_OK ||
        lt_tune_db_new(&ctx, &known) != LT_OK || lt_tune_db_load(&ctx, known, path) != LT_OK) {
        rc = cli_fail(&ctx);
        goto out;
    }
    int before = lt_tune_db_count(db);
    run = (tune_run){.tc = {.db = db, .search = true, .backend = ca.backend, .cc = ca.o.cc,
                            .cache_dir = ca.o.cache_dir, .min_seconds = (double)min_ms * 1e-3, .log = log_line,
                            .options = {.beam = (int)beam, .depth = (int)depth, .max_trials = (int)trials,
                                        .confirm = (int)confirm}},
                     .known = known, .variant = "NCHW"};
    run.tc.log_user = &run.heading;
    ca.o.schedule_hook = tune_hook;
    ca.o.schedule_user = &run;
    ca.o.progress = cli_progress_compile;
    int threads = lt_compile_threads(ca.o.threads);
    char isa[64];
    lt_tune_target_cpu(isa, sizeof isa);
    printf("tuning %s on this CPU (%s, %d thread%s); database %s (%d entries)\n", model, isa, threads,
           threads == 1 ? "" : "s", path, before);
    printf("%-8s %10s %10s %7s %6s %6s  %s\n", "kernel", "default ms", "tuned ms", "speedup", "trials", "wrong",
           "schedule");
    printf("(default and tuned: medians of %d runs each, timed in turns, when the search found a faster schedule)\n",
           (int)confirm);
    fflush(stdout);
    lt_tune_key kd, kb; /* the model's keys: before compiling, which rewrites it */
    if (lt_tune_model_key(&ctx, m, threads, "default", &kd) != LT_OK ||
        lt_tune_model_key(&ctx, m, threads, "layout_nchwc", &kb) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    bool try_layout = !no_layout && has_conv(m) && !strstr(ca.disable, "layout_nchwc") && !strstr(ca.enable, "layout_nchwc");
    if ((rc = cli_compile_model(&ca, m, in, &plan, &rep))) goto out;
    have_rep = true;
    tune_counts nchw = run.c;
    if (try_layout) { /* the same model in the channel-blocked layout */
        if ((rc = cli_load_model(model, n_shapes, shapes, n_dims, dims, &m2))) goto out;
        size_t len = strlen(ca.enable);
        cli_fmt(ca.enable + len, sizeof ca.enable - len, "%slayout_nchwc", len ? "," : "");
        ca.o.enable = ca.enable;
        run.c = (tune_counts){0};
        run.variant = "channel-blocked";
        run.heading = "the channel-blocked layout (layout_nchwc):";
        rc = cli_compile_model(&ca, m2, in, &plan2, &rep2);
        run.heading = NULL;
        ca.enable[len] = 0;
        ca.o.enable = len ? ca.enable : NULL;
        if (rc) goto out;
        have_rep2 = true;
        if (!layout_ran(&rep2)) {
            printf("layout: the channel-blocked layout does not apply to this model here\n");
        } else if (rep2.n_fallback_groups > rep.n_fallback_groups) {
            printf("layout: not timed: the channel-blocked variant runs %d group(s) on the interpreter (%s)\n",
                   rep2.n_fallback_groups, rep2.fallback_first);
        } else {
            lt_plan *const plans[2] = {plan, plan2};
            double med[2];
            cli_progress("tune: timing both layouts, %d runs each", (int)runs);
            rc = time_in_turns(plans, in, m->graph->n_outputs, (int)runs, med);
            cli_progress_clear();
            if (rc) goto out;
            lt_schedule none = {0};
            bool stored;
            if (lt_tune_db_insert(&ctx, db, &kd, &none, med[0], &stored) != LT_OK ||
                lt_tune_db_insert(&ctx, db, &kb, &none, med[1], &stored) != LT_OK) { rc = cli_fail(&ctx); goto out; }
            /* the database keeps each variant's best time over tunes: the decision compiles read */
            const lt_tune_entry *ed = lt_tune_db_lookup(db, &kd), *eb = lt_tune_db_lookup(db, &kb);
            bool pays = ed && eb && eb->time_s < 0.98 * ed->time_s;
            printf("layout: NCHW %.3f ms, channel-blocked %.3f ms (medians of %d runs each, in turns; best recorded "
                   "%.3f / %.3f): %s\n",
                   med[0] * 1e3, med[1] * 1e3, (int)runs, ed ? ed->time_s * 1e3 : 0.0, eb ? eb->time_s * 1e3 : 0.0,
                   pays ? "compiles of this model will use the blocked layout"
                        : "the blocked layout does not pay; compiles keep NCHW");
        }
    }
    if (lt_tune_db_save(&ctx, db, path) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    print_counts("NCHW", &nchw, &rep);
    if (have_rep2) print_counts("channel-blocked", &run.c, &rep2);
    printf("measurements: %d kernel builds timed, %d rejected as wrong\n", run.tc.n_trials, run.tc.n_wrong);
    printf("database: %s (%d entries, %d new)\n", path, lt_tune_db_count(db), lt_tune_db_count(db) - before);
out:
    lt_tune_cpu_end(&run.tc); /* the search's backend instance */
    for (int i = 0; in && i < n_in; i++) lt_datum_release(in[i]);
    free(in);
    lt_plan_free(plan);
    lt_plan_free(plan2);
    if (have_rep) lt_compile_report_free(&rep);
    if (have_rep2) lt_compile_report_free(&rep2);
    lt_tune_db_free(db);
    lt_tune_db_free(known);
    lt_model_free(m);
    lt_model_free(m2);
    free(shapes);
    free(dims);
    free(inputs);
    return rc;
}
