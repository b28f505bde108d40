/* cmd_tune.c — `lathe tune MODEL`: search schedules for the model's loop kernels on this CPU,
 * measure them, and keep the fastest in the tuning database that later compiles read.
 *
 * The model is compiled as `lathe run` would (same passes, fusion and thread count) with
 * src/tune/tune_cpu.c's search hook: every kernel built from plain loops (not the GEMM and
 * convolution microkernels) that the database lacks for this CPU and thread count is tuned by a
 * beam search from its default schedule (splits, vectorization, parallel loops, unrolling), each
 * candidate built and timed alone and rejected when its outputs differ from the default's. One line
 * per kernel: its default and best time, the speedup, the trials and the schedule kept. The database
 * is saved (atomically) to --db FILE, default tune.tsv in the cache directory, which `lathe run`,
 * `compile` and `profile` read by default (--tune-db FILE / --no-tune-db there). Kernels already in
 * the database are not measured again, so tuning a model twice costs one compile.
 * Exit codes: 0 ok, 1 usage, 2 bad model, input or database, 3 unsupported.
 */
#include "cli_compile.h"

#include <stdlib.h>
#include <string.h>

#include "graph/infer.h"
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
    "  --input NAME=FILE, --shapes, --dim   shapes, as for `lathe run`\n"
    CLI_COMPILE_HELP
    "  -h, --help            show this help\n";

static void log_line(void *user, const char *line) {
    (void)user;
    printf("%s\n", line);
    fflush(stdout);
}

int cmd_tune(int argc, char **argv) {
    const char *model = NULL, *db_arg = NULL;
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims),
               **inputs = calloc((size_t)argc, sizeof *inputs);
    int n_shapes = 0, n_dims = 0, n_inputs = 0, rc = 0, n_in = 0;
    int64_t trials = 12, beam = 2, depth = 3, min_ms = 20;
    lt_model *m = NULL;
    lt_plan *plan = NULL;
    lt_datum **in = NULL;
    lt_tune_db *db = NULL;
    lt_compile_report rep = {0};
    bool have_rep = false;
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    if (!shapes || !dims || !inputs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(TUNE_HELP, stdout); goto out; }
        r = cli_compile_opt("tune", argc, argv, &i, &ca);
        if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
        if (r > 0) continue;
        static const char *const opts[] = {"--db", "--trials", "--beam", "--depth", "--min-time", "--input",
                                           "--shapes", "--dim"};
        int which = -1;
        for (int k = 0; k < (int)(sizeof opts / sizeof *opts) && which < 0; k++) {
            r = cli_opt_value("tune", argc, argv, &i, opts[k], &v);
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            if (r > 0) which = k;
        }
        int64_t *num[] = {NULL, &trials, &beam, &depth, &min_ms};
        if (which >= 1 && which <= 4) {
            if (!cli_parse_i64(v, num[which]) || *num[which] < 1 || *num[which] > 100000) {
                rc = cli_usage("tune", "%s needs a positive count, got '%s'", opts[which], v);
                goto out;
            }
            continue;
        }
        switch (which) {
        case 0: db_arg = v; break;
        case 5: inputs[n_inputs++] = v; break;
        case 6: shapes[n_shapes++] = v; break;
        case 7: dims[n_dims++] = v; break;
        default:
            if (a[0] == '-' && a[1]) { rc = cli_usage("tune", "unknown option '%s'", a); goto out; }
            if (model) { rc = cli_usage("tune", "only one MODEL may be given ('%s' and '%s')", model, a); goto out; }
            model = a;
            i++;
            break;
        }
    }
    if (!model) { rc = cli_usage("tune", "missing MODEL"); goto out; }
    if (strcmp(ca.backend, "cpu") != 0) {
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
    if (lt_tune_db_new(&ctx, &db) != LT_OK || lt_tune_db_load(&ctx, db, path) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    int before = lt_tune_db_count(db);
    lt_tune_cpu tc = {.db = db, .search = true, .cc = ca.o.cc, .cache_dir = ca.o.cache_dir,
                      .min_seconds = (double)min_ms * 1e-3, .log = log_line,
                      .options = {.beam = (int)beam, .depth = (int)depth, .max_trials = (int)trials}};
    ca.o.schedule_hook = lt_tune_cpu_hook;
    ca.o.schedule_user = &tc;
    printf("tuning %s for %s (%d thread%s); database %s (%d entries)\n", model, "this CPU",
           ca.o.threads > 0 ? ca.o.threads : lt_cpu_count(), (ca.o.threads > 0 ? ca.o.threads : lt_cpu_count()) == 1 ? "" : "s",
           path, before);
    printf("%-8s %10s %10s %7s %6s %6s  %s\n", "kernel", "default ms", "tuned ms", "speedup", "trials", "wrong",
           "schedule");
    fflush(stdout);
    if ((rc = cli_compile_model(&ca, m, in, &plan, &rep))) goto out;
    have_rep = true;
    if (lt_tune_db_save(&ctx, db, path) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    printf("tuned %d kernel(s) (%d measurements, %d rejected as wrong), %d from the database; "
           "%d kernel(s) of %d use tuned schedules\n", tc.n_searched, tc.n_trials, tc.n_wrong, tc.n_hits, rep.n_tuned,
           rep.n_kernels);
    printf("database: %s (%d entries, %d new)\n", path, lt_tune_db_count(db), lt_tune_db_count(db) - before);
out:
    for (int i = 0; in && i < n_in; i++) lt_datum_release(in[i]);
    free(in);
    lt_plan_free(plan);
    if (have_rep) lt_compile_report_free(&rep);
    lt_tune_db_free(db);
    lt_model_free(m);
    free(shapes);
    free(dims);
    free(inputs);
    return rc;
}
