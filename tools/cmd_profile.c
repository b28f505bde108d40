/* cmd_profile.c — `lathe profile MODEL` and `lathe ceilings`.
 *
 * ceilings: this machine's peak FP32 FMA rate and memory bandwidth (src/profile), measured once per
 * thread count and cached in the cache directory (--remeasure measures again).
 * profile: compile the model, run it once to warm up, then --runs N times (default 10) timing every
 * plan step; print the roofline table (per kernel: median time, static FLOPs and bytes from the
 * Loop IR, GFLOP/s, GB/s, the roofline bound, % of it and which ceiling binds) sorted by time, the
 * whole-run median, optionally a Chrome/Perfetto trace of the median run (--trace FILE.json) and the
 * roofline as an SVG picture (--plot FILE.svg: every kernel a point on log-log axes, src/profile/
 * plot_svg.c). When a kernel runs faster than the ceilings allow (above the FP32 peak or the cache
 * bandwidth), the ceilings are stale or were measured under load: one line says so and suggests
 * --remeasure.
 * --backend cuda: ceilings are the device's (measured copy bandwidth, FP32 and tensor-core rates,
 * cuda_ceil.c) and kernel times come from CUDA events around each launch (kernels launched one by
 * one, not as the replayed graph; the whole-run time is the wall time including copies).
 * Exit codes: 0 ok, 1 usage, 2 bad model or input, 3 unsupported.
 */
#include "cli_compile.h"
#include "cli_family.h"
#include "cli_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/infer.h"
#include "profile/profile.h"

static const char CEIL_HELP[] =
    "usage: lathe ceilings [options]\n"
    "\n"
    "Measure (once, then cached) this machine's peak FP32 FMA rate and sustained memory bandwidth:\n"
    "the roofline `lathe profile` compares kernels with.\n"
    "\n"
    "options:\n"
    "  --backend NAME    cpu (default) or cuda: the GPU's copy bandwidth, FP32 and tensor-core (f16\n"
    "                    mma) rates, measured now (--device N, --nvrtc PATH as for run)\n"
    "  --threads N       threads to measure with (default: all CPUs this process may use)\n"
    "  --remeasure       measure again and replace the cached numbers\n"
    "  --cache-dir DIR   where the numbers are cached (default as for compiled modules)\n"
    "  -h, --help        show this help\n";

static const char PROF_HELP[] =
    "usage: lathe profile MODEL [options]\n"
    "\n"
    "Compile MODEL, time each kernel over several runs and print a roofline table: median time,\n"
    "FLOPs and bytes (static, from the loop IR), GFLOP/s, GB/s, the roofline bound, % of the bound and\n"
    "which ceiling binds (compute or memory), against this machine's ceilings (lathe ceilings).\n"
    "With --backend cuda, kernel times are CUDA event times and the ceilings the GPU's.\n"
    "\n"
    "options:\n"
    "  --runs N              timed runs after one warm-up (default 10)\n"
    "  --top N               show the N slowest kernels (default all; totals cover every kernel)\n"
    "  --trace FILE.json     write a Chrome/Perfetto trace of the median run (ui.perfetto.dev)\n"
    "  --plot FILE.svg       draw the roofline: every kernel a point (area: time, colour: kind) under\n"
    "                        the bandwidth and compute ceilings, log-log axes\n"
    "  --detail              print the graph nodes of each kernel under its row\n"
    "  --remeasure           measure the ceilings again\n"
    "  --family              compile as for every shape (the symbolic dims not bound by --dim N left\n"
    "                        unbound: kernels with run-time sizes, as `lathe run` over inputs of\n"
    "                        several shapes runs them) and profile its plan at the inputs' shapes;\n"
    "                        compare with a profile without it to see what run-time sizes cost\n"
    "  --input NAME=FILE, --shapes, --dim, --fill, --seed   inputs, as for `lathe run`\n"
    CLI_COMPILE_HELP
    "  -h, --help            show this help\n";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The kind column: "host", the anchor's op for anchored kernels (Conv, MatMul, Softmax, MaxPool),
 * else the chain's pattern (elemwise, broadcast, injective). */
static const char *step_kind(const lt_plan_step *st) {
    if (st->kind == LT_STEP_HOST) return "host";
    if (st->pattern != LT_PK_ELEMWISE && st->pattern != LT_PK_BROADCAST && st->pattern != LT_PK_INJECTIVE &&
        st->group && st->group->anchor)
        return st->group->anchor->op_type;
    return lt_pattern_name(st->pattern);
}

/* A device's ceilings (measured by its backend) and its name (from its target). */
static int device_ceilings(lt_backend *b, lt_backend_ceilings *out, char *name, size_t name_size) {
    lt_ctx ctx = {0};
    lt_target t;
    if (b->vt->ceilings(b, &ctx, out) != LT_OK || lt_backend_target(&ctx, b->vt, b, NULL, &t) != LT_OK)
        return cli_fail(&ctx);
    cli_fmt(name, name_size, "%s", t.device_name[0] ? t.device_name : t.name);
    return 0;
}

static int ceilings_device(cli_compile_args *ca) {
    lt_ctx ctx = {0};
    lt_backend *b = NULL;
    lt_backend_options bo = {.device = ca->o.device, .nvrtc = ca->o.nvrtc, .cache_dir = ca->o.cache_dir};
    if (lt_backend_create(&ctx, ca->backend, &bo, &b) != LT_OK) return cli_fail(&ctx);
    lt_backend_ceilings c = {0};
    char name[128] = "?";
    int rc = device_ceilings(b, &c, name, sizeof name);
    if (!rc) {
        printf("device: %s\n", name);
        printf("copy bandwidth: %.1f GB/s (device to device, read + write; spec %.1f GB/s)\n", c.mem_gbps,
               c.spec_mem_gbps);
        printf("FP32 FMA rate: %.1f GFLOP/s (spec %.1f GFLOP/s)\n", c.peak_gflops, c.spec_gflops);
        printf("tensor cores (mma.sync f16 -> f32): %.1f TFLOP/s\n", c.tc_tflops);
    }
    lt_backend_destroy(b);
    return rc;
}

int cmd_ceilings(int argc, char **argv) {
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    int64_t threads = 0;
    bool remeasure = false;
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(CEIL_HELP, stdout); return 0; }
        if (strcmp(a, "--remeasure") == 0) { remeasure = true; i++; continue; }
        if (strcmp(a, "--backend") == 0 || strncmp(a, "--backend=", 10) == 0 || strcmp(a, "--device") == 0 ||
            strncmp(a, "--device=", 9) == 0 || strcmp(a, "--nvrtc") == 0 || strncmp(a, "--nvrtc=", 8) == 0) {
            if (cli_compile_opt("ceilings", argc, argv, &i, &ca) < 0) return CLI_EXIT_USAGE;
            continue;
        }
        if ((r = cli_opt_value("ceilings", argc, argv, &i, "--threads", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (!cli_parse_i64(v, &threads) || threads > 4096)
                return cli_usage("ceilings", "--threads needs a count, got '%s'", v);
        } else if ((r = cli_opt_value("ceilings", argc, argv, &i, "--cache-dir", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            cli_fmt(ca.cache_dir, sizeof ca.cache_dir, "%s", v);
        } else {
            return cli_usage("ceilings", "unknown option '%s'", a);
        }
    }
    /* the host's roofline for kernels that run natively on host memory, the device's otherwise */
    lt_target tt;
    lt_ctx tctx = {0};
    bool known = lt_backend_target_named(&tctx, ca.backend, NULL, &tt) == LT_OK;
    if (!known || !tt.host_memory || tt.runs_loop_ir) {
        if (!known || tt.host_memory) {
            cli_error("ceilings: --backend must be cpu or cuda, not '%s'", ca.backend);
            return CLI_EXIT_UNSUPPORTED;
        }
        return ceilings_device(&ca);
    }
    lt_ctx ctx = {0};
    lt_ceilings c;
    bool cached = false;
    if (lt_ceilings_get(&ctx, ca.cache_dir[0] ? ca.cache_dir : NULL, (int)threads, remeasure, &c, &cached) != LT_OK)
        return cli_fail(&ctx);
    lt_strbuf b = {0};
    lt_ceilings_format(&c, &b);
    if (b.s) cli_put_text(stdout, b.s); /* kernel and node names come from the model */
    lt_sb_free(&b);
    if (ca.cache_dir[0]) {
        char path[4096];
        lt_ceilings_path(ca.cache_dir, (int)threads, path, sizeof path);
        printf("%s %s\n", cached ? "cached in" : "measured, saved to", path);
    }
    return 0;
}

/* One line when kernels beat the ceilings: those numbers are stale (cached) or were taken under load. */
static void stale_hint(const lt_profile_totals *t, const lt_prof_record *recs, const lt_ceilings *c, bool cached) {
    if (t->n_over_ceiling == 0 || t->worst_over < 0) return;
    char why[128] = "the ceilings measured now look low (a busy machine?)";
    struct tm tm;
    if (cached && c->measured_at > 0 && localtime_r(&c->measured_at, &tm))
        strftime(why, sizeof why, "the cached ceilings (measured %Y-%m-%d %H:%M) look stale", &tm);
    else if (cached)
        cli_fmt(why, sizeof why, "the cached ceilings look stale");
    const char *name = recs[t->worst_over].name ? recs[t->worst_over].name : "?";
    printf("hint: %d kernel(s) run faster than the ceilings allow (%s at %.0f%% of its bound): %s; rerun with "
           "--remeasure\n", t->n_over_ceiling, name, t->worst_pct, why);
}

int cmd_profile(int argc, char **argv) {
    const char *model = NULL, *trace = NULL, *plot = NULL;
    const char **shapes = calloc((size_t)argc, sizeof *shapes), **dims = calloc((size_t)argc, sizeof *dims),
               **inputs = calloc((size_t)argc, sizeof *inputs);
    int n_shapes = 0, n_dims = 0, n_inputs = 0, rc = 0;
    int64_t runs = 10, top = 0, seed = 0;
    bool remeasure = false, detail = false, have_rep = false, family = false, have_family = false;
    cli_dims dd = {0};
    cli_family cf;
    lt_fill_kind fill = LT_FILL_RANDOM;
    lt_model *m = NULL;
    lt_plan *plan = NULL;
    int n_in = 0; /* graph inputs before compiling (freezing removes some): in[]'s length */
    lt_compile_report rep = {0};
    lt_datum **in = NULL, **outs = NULL;
    double *secs = NULL, *total = NULL, *col = NULL;
    lt_prof_record *recs = NULL;
    lt_trace_event *ev = NULL;
    cli_compile_args ca;
    cli_compile_init(&ca, "cpu");
    if (!shapes || !dims || !inputs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(PROF_HELP, stdout); goto out; }
        if (strcmp(a, "--remeasure") == 0) { remeasure = true; i++; continue; }
        if (strcmp(a, "--detail") == 0) { detail = true; i++; continue; }
        if (strcmp(a, "--family") == 0) { family = true; i++; continue; }
        r = cli_compile_opt("profile", argc, argv, &i, &ca);
        if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
        if (r > 0) continue;
        static const char *const opts[] = {"--input", "--shapes", "--dim",   "--fill", "--seed",
                                           "--runs",  "--top",    "--trace", "--plot"};
        int which = -1;
        for (int k = 0; k < (int)(sizeof opts / sizeof *opts) && which < 0; k++) {
            r = cli_opt_value("profile", argc, argv, &i, opts[k], &v);
            if (r < 0) { rc = CLI_EXIT_USAGE; goto out; }
            if (r > 0) which = k;
        }
        switch (which) {
        case 0: inputs[n_inputs++] = v; break;
        case 1: shapes[n_shapes++] = v; break;
        case 2: dims[n_dims++] = v; break;
        case 3:
            if (!lt_fill_parse(v, &fill)) { rc = cli_usage("profile", "--fill must be random, zeros, ones or ramp, not '%s'", v); goto out; }
            break;
        case 4:
            if (!cli_parse_i64(v, &seed)) { rc = cli_usage("profile", "--seed needs a non-negative integer, got '%s'", v); goto out; }
            break;
        case 5:
            if (!cli_parse_i64(v, &runs) || runs < 1 || runs > 100000) { rc = cli_usage("profile", "--runs needs a count, got '%s'", v); goto out; }
            break;
        case 6:
            if (!cli_parse_i64(v, &top) || top > 1000000) { rc = cli_usage("profile", "--top needs a count, got '%s'", v); goto out; }
            break;
        case 7: trace = v; break;
        case 8: plot = v; break;
        default:
            if (a[0] == '-' && a[1]) { rc = cli_usage("profile", "unknown option '%s'", a); goto out; }
            if (model) { rc = cli_usage("profile", "only one MODEL may be given ('%s' and '%s')", model, a); goto out; }
            model = a;
            i++;
            break;
        }
    }
    if (!model) { rc = cli_usage("profile", "missing MODEL"); goto out; }
    if ((rc = cli_compile_check_backend(&ca, false))) goto out;
    if (family && (rc = cli_dims_split("profile", n_dims, dims, &dd))) goto out;
    if (family) rc = cli_load_model(model, n_shapes, shapes, dd.n_fixed, dd.fixed, &m);
    else rc = cli_load_model(model, n_shapes, shapes, n_dims, dims, &m);
    if (rc) goto out;
    lt_ctx ctx = {0};
    if (lt_model_check_supported(&ctx, m) != LT_OK) { rc = cli_fail(&ctx); goto out; }
    const lt_graph *g = m->graph;
    in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    n_in = g->n_inputs;
    outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!in || !outs) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    if ((rc = cli_inputs_bind("profile", m, n_inputs, inputs, fill, (uint64_t)seed, in))) goto out;
    ca.o.progress = cli_progress_compile;
    if (family) { /* the family's plan at the inputs' shapes (the family owns it) */
        cli_family_step fst;
        if ((rc = cli_family_open(&ca, model, n_shapes, shapes, &dd, m, &cf))) goto out;
        have_family = true;
        if ((rc = cli_family_plan(&cf, "profile", in, &plan, &fst))) goto out;
        lt_plan_get_stats(plan, &rep.plan);
    } else {
        if ((rc = cli_inputs_fix_shapes(m, in))) goto out;
        if ((rc = cli_compile_model(&ca, m, in, &plan, &rep))) goto out;
        have_rep = true;
    }

    /* ceilings for the thread count the kernels use, or the GPU's */
    lt_ceilings ceil;
    bool cached = false;
    int threads = ca.o.threads > 0 ? ca.o.threads : lt_cpu_count();
    lt_backend_ceilings gc = {0};
    char gpu_name[128] = "?";
    const char *gpu = NULL; /* the device's name when the plan runs on one */
    if (rep.plan.device) {
        gpu = gpu_name;
        lt_backend *pb = lt_plan_backend(plan);
        if ((rc = device_ceilings(pb, &gc, gpu_name, sizeof gpu_name))) goto out;
        memset(&ceil, 0, sizeof ceil);
        ceil.peak_gflops = gc.peak_gflops;
        ceil.mem_gbps = gc.mem_gbps;
        ceil.copy_gbps = gc.mem_gbps;
        ceil.threads = 1;
        cli_fmt(ceil.isa, sizeof ceil.isa, "%s", pb->vt->name); /* the roofline's label */
        cli_fmt(ceil.cpu, sizeof ceil.cpu, "%s", gpu);
    } else if (lt_ceilings_get(&ctx, ca.cache_dir[0] ? ca.cache_dir : NULL, threads, remeasure, &ceil, &cached) != LT_OK) {
        rc = cli_fail(&ctx);
        goto out;
    }

    int ns = lt_plan_n_steps(plan);
    secs = calloc((size_t)(ns + 1) * (size_t)(runs + 1), sizeof *secs);
    total = calloc((size_t)runs + 1, sizeof *total);
    col = calloc((size_t)runs + 1, sizeof *col);
    recs = calloc((size_t)ns + 1, sizeof *recs);
    ev = calloc((size_t)ns + 2, sizeof *ev);
    if (!secs || !total || !col || !recs || !ev) { cli_error("out of memory"); rc = CLI_EXIT_INVALID; goto out; }
    for (int64_t r = -1; r < runs; r++) { /* r = -1: warm-up */
        cli_progress("profile: run %lld of %lld", (long long)r + 2, (long long)runs + 1);
        lt_plan_run_options po = {.seed = (uint64_t)seed, .max_loop_bytes = cli_max_loop_bytes(),
                                  .step_seconds = r >= 0 ? secs + (size_t)r * (size_t)ns : NULL};
        double t0 = now_s();
        lt_status st = lt_plan_run(&ctx, plan, &po, in, outs);
        double t1 = now_s();
        for (int k = 0; k < g->n_outputs; k++) { lt_datum_release(outs[k]); outs[k] = NULL; }
        if (st != LT_OK) { rc = cli_fail(&ctx); goto out; }
        if (r >= 0) total[r] = t1 - t0;
    }
    cli_progress_clear();
    for (int i = 0; i < ns; i++) {
        const lt_plan_step *st = lt_plan_get_step(plan, i);
        for (int64_t r = 0; r < runs; r++) col[r] = secs[(size_t)r * (size_t)ns + (size_t)i];
        recs[i] = (lt_prof_record){
            .name = st->name,
            .kind = step_kind(st),
            .detail = st->origin,
            .time_s = lt_profile_median(col, (int)runs),
            .flops = st->flops,
            .bytes = st->bytes,
            .calls = (int)runs,
        };
    }
    /* the median run, for the whole-model time and the trace */
    for (int64_t r = 0; r < runs; r++) col[r] = total[r];
    double med_total = lt_profile_median(col, (int)runs);
    int64_t med_run = 0;
    for (int64_t r = 1; r < runs; r++)
        if (fabs(total[r] - med_total) < fabs(total[med_run] - med_total)) med_run = r;

    char title[512];
    if (gpu)
        cli_fmt(title, sizeof title, "profile of %s: %d steps (%d kernels, %d host), median of %lld runs, %s (CUDA event "
                "times per kernel)", model, ns, rep.plan.n_kernels, rep.plan.n_host, (long long)runs, gpu);
    else
        cli_fmt(title, sizeof title, "profile of %s: %d steps (%d kernels, %d host), median of %lld runs, %d thread%s", model,
                ns, rep.plan.n_kernels, rep.plan.n_host, (long long)runs, threads, threads == 1 ? "" : "s");
    lt_profile_options popt = {.sort_by_time = true, .top = (int)top, .show_detail = detail, .title = title};
    lt_strbuf b = {0};
    lt_profile_totals tot;
    if (lt_profile_report(&ctx, &ceil, recs, ns, &popt, &b, &tot) != LT_OK) {
        lt_sb_free(&b);
        rc = cli_fail(&ctx);
        goto out;
    }
    if (b.s) cli_put_text(stdout, b.s); /* kernel and node names come from the model */
    lt_sb_free(&b);
    printf("run: median %.3f ms for the whole run; the steps' medians add up to %.3f ms\n", med_total * 1e3,
           tot.time_s * 1e3);
    if (gpu)
        printf("ceilings: %.1f GFLOP/s FP32, %.1f TFLOP/s tensor cores (f16 mma), %.1f GB/s copy (%s, measured now)\n",
               ceil.peak_gflops, gc.tc_tflops, ceil.mem_gbps, gpu);
    else
        printf("ceilings: %.1f GFLOP/s, %.1f GB/s (%s, %s)\n", ceil.peak_gflops, ceil.mem_gbps, ceil.isa,
               cached ? "cached" : "measured now");
    if (!gpu) stale_hint(&tot, recs, &ceil, cached);
    if (plot) {
        if (lt_roofline_svg_write(&ctx, plot, &ceil, recs, ns, title) != LT_OK) { rc = cli_fail(&ctx); goto out; }
        printf("plot: %s (the roofline, one point per kernel)\n", plot);
    }
    if (trace) {
        double ts = 0;
        int ne = 0;
        for (int i = 0; i < ns; i++) {
            const lt_plan_step *st = lt_plan_get_step(plan, i);
            double d = secs[(size_t)med_run * (size_t)ns + (size_t)i] * 1e6;
            ev[ne++] = (lt_trace_event){.name = st->name, .cat = step_kind(st),
                                        .ts_us = ts, .dur_us = d, .tid = 0, .flops = st->flops, .bytes = st->bytes,
                                        .detail = st->origin};
            ts += d;
        }
        if (lt_trace_write_chrome(&ctx, trace, ev, ne, model) != LT_OK) { rc = cli_fail(&ctx); goto out; }
        printf("trace: %s (open it in ui.perfetto.dev or chrome://tracing)\n", trace);
    }
out:
    if (m) {
        for (int i = 0; in && i < n_in; i++) lt_datum_release(in[i]);
        for (int i = 0; outs && i < m->graph->n_outputs; i++) lt_datum_release(outs[i]);
    }
    free(in);
    free(outs);
    free(secs);
    free(total);
    free(col);
    free(recs);
    free(ev);
    if (have_family) cli_family_close(&cf); /* with its plans */
    else lt_plan_free(plan);
    cli_dims_free(&dd);
    if (have_rep) lt_compile_report_free(&rep);
    lt_model_free(m);
    free(shapes);
    free(dims);
    free(inputs);
    return rc;
}
