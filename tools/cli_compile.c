/* cli_compile.c — the compile options the compiled-path commands share (run, compile, profile,
 * conformance): -O0..-O3, --backend, pass manager flags, dumps, threads, cache, compiler and its
 * time limit (--cc-timeout); their defaults from the environment (the CLI is the only part of
 * lathe that reads it: CC for the compiler, LATHE_CACHE_DIR / XDG_CACHE_HOME / HOME for the cache
 * directory, LATHE_NVRTC for the NVRTC library the CUDA backend tries first, overridden by
 * --nvrtc), and one call that compiles a model and prints what the flags asked for (pass dumps and
 * timings on stderr).
 */
#include "cli_compile.h"
#include "cli_progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void cli_compile_init(cli_compile_args *ca, const char *default_backend) {
    memset(ca, 0, sizeof *ca);
    lt_compile_options_init(&ca->o);
    ca->backend = default_backend;
    const char *cc = getenv("CC");
    if (cc && *cc) ca->o.cc = cc;
    const char *dir = getenv("LATHE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && *dir) cli_fmt(ca->cache_dir, sizeof ca->cache_dir, "%s", dir);
    else if (xdg && *xdg) cli_fmt(ca->cache_dir, sizeof ca->cache_dir, "%s/lathe", xdg);
    else if (home && *home) cli_fmt(ca->cache_dir, sizeof ca->cache_dir, "%s/.cache/lathe", home);
    ca->o.cache_dir = ca->cache_dir[0] ? ca->cache_dir : NULL;
    const char *nvrtc = getenv("LATHE_NVRTC");
    if (nvrtc && *nvrtc) ca->o.nvrtc = nvrtc;
    ca->o.progress = cli_progress_compile; /* a progress line while it compiles, on a terminal only */
}

/* Append name to a comma-joined list of --disable-pass / --enable-pass names (checked at compile). */
static int name_add(char *list, size_t size, const char *cmd, const char *flag, const char *name) {
    size_t len = strlen(list);
    if (!*name || strchr(name, ',')) return cli_usage(cmd, "%s needs one pass name, got '%s'", flag, name);
    if (len + strlen(name) + 2 >= size) return cli_usage(cmd, "too many %s names", flag);
    cli_fmt(list + len, size - len, "%s%s", len ? "," : "", name);
    return 0;
}

int cli_compile_opt(const char *cmd, int argc, char **argv, int *i, cli_compile_args *ca) {
    const char *a = argv[*i], *v = NULL;
    int r;
    if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
        ca->o.opt_level = a[2] - '0';
        (*i)++;
        return 1;
    }
    if (a[0] == '-' && a[1] == 'O') return cli_usage(cmd, "unknown optimization level '%s' (use -O0 to -O3)", a), -1;
    static const struct { const char *name; size_t off; } flags[] = {
        {"--verify-each", offsetof(lt_compile_options, verify_each)},
        {"--time-passes", offsetof(lt_compile_options, time_passes)},
        {"--no-fusion", offsetof(lt_compile_options, no_fusion)},
        {"--no-epilogues", offsetof(lt_compile_options, no_epilogues)},
        {"--no-microkernels", offsetof(lt_compile_options, no_microkernels)},
        {"--no-inplace", offsetof(lt_compile_options, no_inplace)},
        {"--all-host", offsetof(lt_compile_options, all_host)},
        {"--strict", offsetof(lt_compile_options, strict)},
        {"--no-graphs", offsetof(lt_compile_options, no_graphs)},
        {"--no-split", offsetof(lt_compile_options, no_split)},
    };
    for (size_t k = 0; k < sizeof flags / sizeof *flags; k++)
        if (strcmp(a, flags[k].name) == 0) {
            *(bool *)((char *)&ca->o + flags[k].off) = true;
            (*i)++;
            return 1;
        }
    if (strcmp(a, "--no-cache") == 0) {
        ca->o.cache_dir = NULL;
        ca->no_cache = true;
        (*i)++;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--backend", &v))) {
        if (r < 0) return -1;
        ca->backend = v;
        ca->backend_given = true;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--dump-after", &v))) {
        if (r < 0) return -1;
        ca->o.dump_after = v;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--disable-pass", &v))) {
        if (r < 0) return -1;
        if (name_add(ca->disable, sizeof ca->disable, cmd, "--disable-pass", v)) return -1;
        ca->o.disable = ca->disable;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--enable-pass", &v))) {
        if (r < 0) return -1;
        if (name_add(ca->enable, sizeof ca->enable, cmd, "--enable-pass", v)) return -1;
        ca->o.enable = ca->enable;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--stop-after", &v))) {
        int64_t n;
        if (r < 0) return -1;
        if (ca->stop_stages && lt_compile_stage_find(v) >= 0) { /* a stage name (lathe compile) */
            ca->o.stop_after_stage = v;
            return 1;
        }
        if (!cli_parse_i64(v, &n) || n < 1 || n > 1000000)
            return cli_usage(cmd, ca->stop_stages ? "--stop-after needs a positive number of passes or a stage name, got '%s'"
                                                  : "--stop-after needs a positive number of passes, got '%s'", v), -1;
        ca->o.stop_after = (int)n;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--dump-code", &v))) {
        if (r < 0) return -1;
        ca->o.dump_code_dir = v;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--dump-graph", &v))) {
        if (r < 0) return -1;
        ca->o.dump_graph = v;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--threads", &v))) {
        int64_t n;
        if (r < 0) return -1;
        if (!cli_parse_i64(v, &n) || n > 4096) return cli_usage(cmd, "--threads needs a count (0 = all), got '%s'", v), -1;
        ca->o.threads = (int)n;
        return 1;
    }
    if (strcmp(a, "--no-tune-db") == 0) {
        ca->no_tune_db = true;
        (*i)++;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--tune-db", &v))) {
        if (r < 0) return -1;
        cli_fmt(ca->tune_db, sizeof ca->tune_db, "%s", v);
        ca->tune_db_given = true;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--cache-dir", &v))) {
        if (r < 0) return -1;
        cli_fmt(ca->cache_dir, sizeof ca->cache_dir, "%s", v);
        ca->o.cache_dir = ca->cache_dir;
        ca->no_cache = false;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--nvrtc", &v))) {
        if (r < 0) return -1;
        ca->o.nvrtc = v;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--device", &v))) {
        int64_t n;
        if (r < 0) return -1;
        if (!cli_parse_i64(v, &n) || n > 1024) return cli_usage(cmd, "--device needs a device ordinal, got '%s'", v), -1;
        ca->o.device = (int)n;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--cc", &v))) {
        if (r < 0) return -1;
        ca->o.cc = v;
        return 1;
    }
    if ((r = cli_opt_value(cmd, argc, argv, i, "--cc-timeout", &v))) {
        double t;
        if (r < 0) return -1;
        if (!cli_parse_double(v, &t) || !(t >= 0) || t > 1e6)
            return cli_usage(cmd, "--cc-timeout needs a number of seconds (0 = no limit), got '%s'", v), -1;
        ca->o.cc_timeout_s = t > 0 ? t : -1; /* the library's 0 is its default */
        return 1;
    }
    return 0;
}

int cli_compile_check_backend(const cli_compile_args *ca, bool allow_interp) {
    if (allow_interp && strcmp(ca->backend, "interp") == 0) return 0;
    if (lt_backend_find(ca->backend)) { /* registered: can it start here (a driver, a device)? */
        lt_ctx ctx = {0};
        lt_backend *b = NULL;
        lt_backend_options bo = {.cc = ca->o.cc, .threads = ca->o.threads, .device = ca->o.device, .nvrtc = ca->o.nvrtc};
        if (lt_backend_create(&ctx, ca->backend, &bo, &b) != LT_OK) return cli_fail(&ctx);
        lt_backend_destroy(b);
        return 0;
    }
    char names[256] = "";
    size_t off = 0;
    for (const char *const *n = lt_backend_names(); n && *n && off < sizeof names; n++)
        off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", off ? ", " : "", *n);
    if (allow_interp && off < sizeof names) snprintf(names + off, sizeof names - off, "%sinterp", off ? ", " : "");
    cli_error("backend '%s' is not available (backends: %s)", ca->backend, names);
    return CLI_EXIT_UNSUPPORTED;
}

int cli_compile_check_backend_forked(const cli_compile_args *ca, bool allow_interp) {
    const lt_backend_vtbl *vt = lt_backend_find(ca->backend);
    if ((allow_interp && strcmp(ca->backend, "interp") == 0) || (vt && !vt->opens_device)) /* no device to spoil */
        return cli_compile_check_backend(ca, allow_interp);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        cli_error("fork: %s", strerror(errno));
        return CLI_EXIT_INVALID;
    }
    if (pid == 0) _exit(cli_compile_check_backend(ca, allow_interp));
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) {
            cli_error("waitpid: %s", strerror(errno));
            return CLI_EXIT_INVALID;
        }
    if (WIFEXITED(ws)) return WEXITSTATUS(ws);
    cli_error("backend '%s': the check crashed (signal %d)", ca->backend, WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    return CLI_EXIT_UNSUPPORTED;
}

void cli_compile_dump_cb(void *user, const char *pass, int round, const char *ir) {
    (void)user;
    cli_progress_clear();
    if (round > 0) fprintf(stderr, "; after %s (round %d)\n", pass, round);
    else fprintf(stderr, "; after %s\n", pass);
    cli_put_text(stderr, ir);
}

void cli_tune_db_path(const cli_compile_args *ca, char *buf, size_t n) {
    buf[0] = 0;
    if (ca->no_tune_db) return;
    if (ca->tune_db_given) cli_fmt(buf, n, "%s", ca->tune_db);
    else if (ca->o.cache_dir) cli_fmt(buf, n, "%s/tune.tsv", ca->o.cache_dir);
}

/* The tuning database's schedules and layout choice for a compile whose target takes them (CPU) (unless the caller set a hook:
 * lathe tune). A default database that does not exist is no database; a named one is an error. */
static int tune_db_open(cli_compile_args *ca, const lt_model *m) {
    char path[4200];
    cli_tune_db_path(ca, path, sizeof path);
    lt_target t;
    lt_ctx tctx = {0};
    if (ca->o.schedule_hook || !path[0] || lt_backend_target_named(&tctx, ca->backend, NULL, &t) != LT_OK || !t.tune_db)
        return 0;
    lt_ctx ctx = {0};
    if (lt_tune_cpu_attach(&ctx, path, !ca->tune_db_given, m, &ca->o, &ca->lookups) != LT_OK) return cli_fail(&ctx);
    return 0;
}

int cli_compile_model(cli_compile_args *ca, lt_model *m, lt_datum *const *in, lt_plan **out, lt_compile_report *rep) {
    lt_ctx ctx = {0};
    int code = 0;
    if ((ca->o.dump_code_dir && (code = cli_make_dirs("--dump-code", ca->o.dump_code_dir))) ||
        (ca->o.dump_graph && (code = cli_make_parent_dirs("--dump-graph", ca->o.dump_graph))))
        return code;
    if ((code = tune_db_open(ca, m))) return code;
    const lt_graph *g = m->graph;
    const char **given = calloc((size_t)g->n_inputs + 1, sizeof *given);
    if (!given) {
        lt_tune_cpu_detach(&ca->o, &ca->lookups);
        cli_error("out of memory");
        return CLI_EXIT_INVALID;
    }
    for (int i = 0, k = 0; in && i < g->n_inputs; i++)
        if (in[i]) given[k++] = g->inputs[i]->name;
    const char *const *keep_given = ca->o.given_inputs;
    if (!ca->o.prebuilt) ca->o.given_inputs = given; /* an artifact's are the ones it was saved with */
    ca->o.backend = ca->backend;
    if (ca->o.dump_after) {
        ca->o.dump_cb = cli_compile_dump_cb;
        ca->o.dump_user = NULL;
    }
    memset(rep, 0, sizeof *rep);
    lt_status s = lt_compile(&ctx, m, &ca->o, out, rep);
    ca->o.given_inputs = ca->o.prebuilt ? keep_given : NULL;
    free(given);
    lt_tune_cpu_detach(&ca->o, &ca->lookups); /* this compile's lookups only */
    if (ca->o.time_passes) {
        lt_strbuf b = {0};
        if (rep->passes.n) lt_pass_report_print(&rep->passes, &b);
        lt_compile_report_print_stages(rep, &b);
        if (b.s) cli_put_text(stderr, b.s);
        lt_sb_free(&b);
    }
    if (s != LT_OK) {
        code = cli_fail(&ctx);
        lt_compile_report_free(rep);
        return code;
    }
    if (rep->n_fallback_groups || rep->n_unscheduled)
        cli_warn("%d group(s) run through the interpreter and %d kernel(s) left unscheduled after compiler "
                 "errors; first: %s", rep->n_fallback_groups, rep->n_unscheduled, rep->fallback_first);
    if (rep->n_tuned_rejected)
        cli_warn("%d tuned schedule(s) from the tuning database did not apply (default schedules used; run lathe "
                 "tune again); first: %s", rep->n_tuned_rejected, rep->tuned_rejected_first);
    return 0;
}

void cli_compile_print_report(const lt_compile_report *rep, FILE *f) {
    lt_strbuf b = {0};
    lt_compile_report_print(rep, &b);
    if (b.s) cli_put_text(f, b.s);
    lt_sb_free(&b);
}

int cli_load_artifact(const char *path, cli_compile_args *ca, lt_artifact **art, lt_model **m) {
    lt_ctx ctx = {0};
    if (lt_artifact_open(&ctx, path, art) != LT_OK || lt_artifact_load_model(&ctx, *art, m) != LT_OK) {
        lt_artifact_free(*art);
        *art = NULL;
        return cli_fail(&ctx);
    }
    if (!ca->backend_given || strcmp(ca->backend, "interp") != 0) ca->backend = (*art)->backend;
    ca->no_tune_db = true;
    lt_artifact_compile_options(*art, &ca->o);
    return 0;
}
