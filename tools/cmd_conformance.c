/* cmd_conformance.c — `lathe conformance`: runs the ONNX backend node tests (one folder per test with
 * model.onnx and test_data_set_<k>/input_N.pb, output_N.pb) and compares lathe's outputs with the
 * expected ones.
 *
 * With --backend cpu each data set's model is compiled for the shapes of its inputs (a fresh load,
 * input shapes fixed to the data's, lt_compile, lt_plan_run); ops the compiler cannot take run as
 * host steps through the same eval hooks the interpreter uses. Compile options (-O, --strict, ...)
 * apply. Each test runs in a forked child, so a crash or a hang in one test is reported as that test's
 * failure (with the signal name, or "timed out") and never stops the run; -j N children run at once.
 * The child sends its verdict to the parent through a pipe as three lines: status letter (P/F),
 * reason, comma-separated ops. Results are printed in test-name order as soon as every earlier test
 * has finished; the last line is exactly "N passed, N failed, N skipped". On a terminal, a progress
 * line on stderr counts the tests done and failed (cli_progress.h); the children never draw.
 * --compile-only (a backend whose vtable builds without a device: build_offline; cuda, with NVRTC):
 * each data set's model is compiled as above but only emitted, and the translation unit built by the
 * backend's offline builder, readied once by the parent before the tests fork; nothing runs.
 */
#include "cli_compile.h"
#include "cli_progress.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ops/infer.h"
#include "interp/interp.h"
#include "io/io.h"
#include "onnx/onnx.h"

#if defined(__SANITIZE_ADDRESS__)
#define CLI_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLI_ASAN 1
#endif
#endif
#ifdef CLI_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#define REASON_MAX 2048
#define OPS_MAX 2048
#define RTOL 1e-3
#define ATOL 1e-7

static const char HELP[] =
    "usage: lathe conformance [options]\n"
    "\n"
    "Run the ONNX backend node tests and compare lathe's outputs with the expected ones.\n"
    "Prints one line per failing test and ends with 'N passed, N failed, N skipped'.\n"
    "\n"
    "options:\n"
    "  --backend NAME   backend to test: interp (default, the reference interpreter), cpu or cuda\n"
    "                   (compiled for each data set's input shapes; compile options below apply; on\n"
    "                   cuda, nodes with no GPU lowering run as host steps)\n"
    "  --suite DIR      folder of test folders (default: $LATHE_ONNX_SUITE, else the 'node' tests of\n"
    "                   the onnx Python package found with $LATHE_PYTHON or python3; generated\n"
    "                   with that package's own generator when it ships no test files)\n"
    "  --filter RE      run only tests whose name matches the POSIX extended regex RE\n"
    "  --json FILE      write per-test results (name, status, reason, ops, seconds) as JSON\n"
    "  -j, --jobs N     tests to run in parallel (default: number of CPUs)\n"
    "  --timeout SEC    per-test time limit in seconds (default 60, 300 with --backend cpu: compiling\n"
    "                   counts; 0 = none)\n"
    "  --mem-limit MB   per-test address-space limit in MiB (default 4096, none for --backend cuda;\n"
    "                   0 = none)\n"
    "  --rtol X         relative tolerance (default 1e-3, the suite's own)\n"
    "  --atol X         absolute tolerance (default 1e-7)\n"
    "  --verbose        also print passing and skipped tests\n"
    "  --compile-only   with a backend that builds without a device (cuda): compile every test for\n"
    "                   it (emit + build for --arch; cuda: NVRTC, cubins cached in the cache dir)\n"
    "                   without running it: needs NVRTC, no GPU. A test passes when its translation\n"
    "                   unit builds (CI checks the CUDA emitter so)\n"
    "  --arch SM        --compile-only: the architecture to build for (cuda: NVRTC's, default sm_90)\n"
    "  -h, --help       show this help\n"
    "compile options (--backend cpu, cuda):\n"
    CLI_COMPILE_HELP
    "\n"
    "Exit status: 0 when the run completed (whatever the results), 1 on a usage error,\n"
    "2 when the suite cannot be found.\n";

typedef struct test {
    char *name;
    char status; /* 'P' pass, 'F' fail, 'S' skipped, 0 pending */
    char *reason;
    char *ops;
    double secs;
} test;

typedef struct slot {
    pid_t pid;
    int fd;
    int test;
    double start;
    char buf[REASON_MAX + OPS_MAX + 64];
    size_t len;
} slot;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *xstrdup(const char *s) {
    char *p = strdup(s ? s : "");
    if (!p) {
        cli_error("out of memory");
        exit(CLI_EXIT_INVALID);
    }
    return p;
}

static bool is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}
static bool is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* ---- finding the suite ---- */
static char *find_suite(void) {
    const char *env = getenv("LATHE_ONNX_SUITE");
    if (env && *env) return xstrdup(env);
    const char *py = getenv("LATHE_PYTHON");
    if (!py || !*py) py = "python3";
    /* single-quote the interpreter path for the shell */
    char cmd[4096];
    size_t k = 0;
    cmd[k++] = '\'';
    for (const char *p = py; *p && k < sizeof cmd - 200; p++) {
        if (*p == '\'') { memcpy(cmd + k, "'\\''", 4); k += 4; }
        else cmd[k++] = *p;
    }
    cli_fmt(cmd + k, sizeof cmd - k, "' -c 'import onnx,os;print(os.path.dirname(onnx.__file__))' 2>/dev/null");
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    char line[4096] = "";
    char *got = fgets(line, sizeof line, f);
    int rc = pclose(f);
    if (!got || rc != 0) return NULL;
    line[strcspn(line, "\r\n")] = 0;
    if (!*line) return NULL;
    char path[8192];
    cli_fmt(path, sizeof path, "%s/backend/test/data/node", line);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return xstrdup(path);
    /* The package ships no test files (onnx >= 1.23 builds them in memory): generate them with the
     * package's own generator into lathe's cache folder, once. */
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char out[4096];
    if (xdg && *xdg) cli_fmt(out, sizeof out, "%s/lathe/onnx-suite", xdg);
    else cli_fmt(out, sizeof out, "%s/.cache/lathe/onnx-suite", home && *home ? home : "/tmp");
    cli_fmt(path, sizeof path, "%s/node", out);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return xstrdup(path);
    fprintf(stderr, "lathe: the onnx package has no node test files; generating them into %s\n", out);
    cmd[k] = 0;
    char gen[8192 + 512];
    cli_fmt(gen, sizeof gen, "mkdir -p '%s/node' && %s' -m onnx.backend.test.cmd_tools generate-data -o '%s' >/dev/null 2>&1",
            out, cmd, out);
    if (strchr(out, '\'') || system(gen) != 0 || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) return NULL;
    return xstrdup(path);
}

/* ---- the child: run one test ---- */
typedef struct child_out {
    char reason[REASON_MAX];
    char ops[OPS_MAX];
} child_out;

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted test_data_set_* folder names of dir (heap array of heap strings). */
static int list_datasets(const char *dir, char ***out) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char **v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_data_set_", 14) != 0) continue;
        char p[8192];
        cli_fmt(p, sizeof p, "%s/%s", dir, e->d_name);
        if (!is_dir(p)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        v[n] = strdup(e->d_name);
        if (v[n]) n++;
    }
    closedir(d);
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_names);
    *out = v;
    return n;
}

/* --compile-only: the architecture built for (NULL when tests run) and the backend's offline builder,
 * readied once by the parent (the forked test processes inherit it) */
static const char *g_compile_only_arch;
static const lt_backend_vtbl *g_offline_vt;
static lt_boffline *g_offline;

/* --compile-only: build one emitted translation unit with the backend's offline builder. */
static lt_status offline_build(lt_ctx *ctx, const char *src, child_out *co) {
    lt_status s = g_offline_vt->build_offline(g_offline, ctx, src);
    if (s != LT_OK) cli_fmt(co->reason, REASON_MAX, "%s", ctx->msg[0] ? ctx->msg : lt_status_name(s));
    return s;
}

/* Compile m for the shapes of `inputs` (cpu backend): fix the input shapes, compile. With
 * --compile-only, emit the translation unit and build it offline instead (*plan stays NULL). */
static bool compile_for(lt_model *m, lt_datum *const *inputs, const cli_compile_args *ca, lt_plan **plan,
                        child_out *co) {
    lt_ctx ctx = {0};
    const lt_graph *g = m->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        const lt_value *v = g->inputs[i];
        const lt_datum *d = inputs[i];
        if (!d || d->kind != LT_DK_TENSOR || v->type.kind != LT_TK_TENSOR) continue;
        bool known = v->type.rank == d->tensor->rank && v->type.dims;
        for (int k = 0; known && k < v->type.rank; k++) known = v->type.dims[k].value == d->tensor->dims[k];
        if (!known && lt_model_bind_shape(&ctx, m, v->name, d->tensor->rank, d->tensor->dims) != LT_OK) {
            cli_fmt(co->reason, REASON_MAX, "binding the shape of input '%s': %s", v->name, ctx.msg);
            return false;
        }
    }
    lt_compile_options o = ca->o;
    o.backend = ca->backend;
    const char *given[256];
    int ng = 0;
    for (int i = 0; i < g->n_inputs && ng < 255; i++)
        if (inputs[i]) given[ng++] = g->inputs[i]->name;
    given[ng] = NULL;
    o.given_inputs = given;
    o.dump_after = NULL;
    o.time_passes = false;
    lt_compile_report rep = {0};
    lt_strbuf src = {0};
    if (g_compile_only_arch) {
        o.emit_only = true;
        o.emit_source = &src;
        o.arch = g_compile_only_arch; /* lowered for the architecture the offline builder builds for */
    }
    lt_status s = lt_compile(&ctx, m, &o, plan, &rep);
    lt_compile_report_free(&rep);
    if (s != LT_OK) {
        cli_fmt(co->reason, REASON_MAX, "compile: %s", ctx.msg[0] ? ctx.msg : lt_status_name(ctx.status));
        lt_sb_free(&src);
        return false;
    }
    if (g_compile_only_arch && src.len) s = offline_build(&ctx, src.s, co);
    lt_sb_free(&src);
    return s == LT_OK;
}

static bool run_dataset(const lt_model *m0, const char *model_path, const char *ds, double rtol, double atol,
                        const cli_compile_args *ca, child_out *co) {
    lt_ctx ctx = {0};
    bool ok = false;
    char path[8192];
    lt_model *own = NULL;
    lt_plan *plan = NULL;
    /* the compiled path rewrites the model and fixes its shapes: a fresh copy per data set */
    if (ca && lt_onnx_load_file(&ctx, model_path, NULL, &own) != LT_OK) {
        cli_fmt(co->reason, REASON_MAX, "load: %s", ctx.msg);
        return false;
    }
    const lt_model *m = own ? own : m0;
    const lt_graph *g = m->graph;
    const int n_in = g->n_inputs; /* compiling freezes initialized inputs: inputs[]'s length stays */
    lt_datum **inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
    lt_datum **outputs = calloc((size_t)g->n_outputs + 1, sizeof *outputs);
    if (!inputs || !outputs) { cli_fmt(co->reason, REASON_MAX, "out of memory"); goto done; }
    int next_free = 0;
    for (int k = 0;; k++) {
        cli_fmt(path, sizeof path, "%s/input_%d.pb", ds, k);
        if (!is_file(path)) break;
        while (next_free < g->n_inputs && g->inputs[next_free]->init) next_free++;
        if (next_free >= g->n_inputs) {
            cli_fmt(co->reason, REASON_MAX, "%s: more input files than graph inputs without initializers", path);
            goto done;
        }
        const lt_value *v = g->inputs[next_free];
        if (lt_onnx_read_datum_file(&ctx, path, &v->type, &inputs[next_free]) != LT_OK) {
            cli_fmt(co->reason, REASON_MAX, "reading input %d '%s': %s", k, v->name, ctx.msg);
            goto done;
        }
        next_free++;
    }
    if (ca) {
        if (!compile_for(own, inputs, ca, &plan, co)) goto done;
        if (g_compile_only_arch) { /* compiled: nothing to run */
            ok = true;
            goto done;
        }
        lt_plan_run_options po = {0};
        if (lt_plan_run(&ctx, plan, &po, inputs, outputs) != LT_OK) {
            cli_fmt(co->reason, REASON_MAX, "%s", ctx.msg[0] ? ctx.msg : lt_status_name(ctx.status));
            goto done;
        }
    } else {
        lt_interp_options opt = {0};
        if (lt_interp_run(&ctx, m, &opt, inputs, outputs) != LT_OK) {
            cli_fmt(co->reason, REASON_MAX, "%s", ctx.msg[0] ? ctx.msg : lt_status_name(ctx.status));
            goto done;
        }
    }
    for (int k = 0;; k++) {
        cli_fmt(path, sizeof path, "%s/output_%d.pb", ds, k);
        if (!is_file(path)) break;
        if (k >= g->n_outputs) {
            cli_fmt(co->reason, REASON_MAX, "%s: more expected outputs than graph outputs (%d)", path, g->n_outputs);
            goto done;
        }
        lt_datum *want = NULL;
        if (lt_onnx_read_datum_file(&ctx, path, &g->outputs[k]->type, &want) != LT_OK) {
            cli_fmt(co->reason, REASON_MAX, "reading expected output %d '%s': %s", k, g->outputs[k]->name, ctx.msg);
            goto done;
        }
        char what[512];
        cli_fmt(what, sizeof what, "output %d '%s'", k, g->outputs[k]->name);
        bool same = cli_compare_datum(outputs[k], want, rtol, atol, what, co->reason, REASON_MAX);
        lt_datum_release(want);
        if (!same) goto done;
    }
    ok = true;
done:
    for (int i = 0; inputs && i < n_in; i++) lt_datum_release(inputs[i]);
    for (int i = 0; outputs && i < g->n_outputs; i++) lt_datum_release(outputs[i]);
    free(inputs);
    free(outputs);
    lt_plan_free(plan);
    lt_model_free(own);
    return ok;
}

static char child_test(const char *dir, double rtol, double atol, const cli_compile_args *ca, child_out *co) {
    char path[8192];
    cli_fmt(path, sizeof path, "%s/model.onnx", dir);
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) {
        cli_fmt(co->reason, REASON_MAX, "load: %s", ctx.msg);
        return 'F';
    }
    lt_arena a;
    lt_arena_init(&a);
    const char **ops = NULL;
    int n_ops = cli_model_ops(m, &a, &ops);
    size_t off = 0;
    for (int i = 0; i < n_ops && off < OPS_MAX; i++)
        off += (size_t)snprintf(co->ops + off, OPS_MAX - off, "%s%s", i ? "," : "", ops[i]);
    lt_mem_free(ops);
    lt_arena_free(&a);
    char st = 'F';
    if (lt_model_check_supported(&ctx, m) != LT_OK) {
        cli_fmt(co->reason, REASON_MAX, "%s", ctx.msg);
    } else {
        char **ds = NULL;
        int n = list_datasets(dir, &ds);
        st = 'P';
        for (int i = 0; i < n && st == 'P'; i++) {
            char p[8192];
            cli_fmt(p, sizeof p, "%s/%s", dir, ds[i]);
            if (!run_dataset(m, path, p, rtol, atol, ca, co)) {
                st = 'F';
                if (n > 1) {
                    char tmp[REASON_MAX];
                    cli_fmt(tmp, sizeof tmp, "%s: %s", ds[i], co->reason);
                    memcpy(co->reason, tmp, sizeof tmp);
                }
            }
        }
        for (int i = 0; i < n; i++) free(ds[i]);
        free(ds);
    }
    lt_model_free(m);
    return st;
}

static void write_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void oneline(char *s) {
    for (; *s; s++)
        if (*s == '\n' || *s == '\r') *s = (s[1] && s[1] != '\n') ? ';' : ' ';
}

/* ---- the parent ---- */
static const char *sig_name(int sig) {
    static const struct { int sig; const char *name; } tab[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"},
        {SIGILL, "SIGILL"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGPIPE, "SIGPIPE"},
        {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
        {SIGINT, "SIGINT"}, {SIGHUP, "SIGHUP"}, {SIGALRM, "SIGALRM"},
    };
    static char buf[160];
    const char *name = NULL;
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++)
        if (tab[i].sig == sig) name = tab[i].name;
    if (name) cli_fmt(buf, sizeof buf, "%s (%s)", name, strsignal(sig));
    else cli_fmt(buf, sizeof buf, "signal %d (%s)", sig, strsignal(sig));
    return buf;
}

static void json_str(lt_strbuf *b, const char *s) {
    lt_sb_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') lt_sb_printf(b, "\\%c", *p);
        else if (*p == '\n') lt_sb_printf(b, "\\n");
        else if (*p == '\t') lt_sb_printf(b, "\\t");
        else if (*p < 0x20) lt_sb_printf(b, "\\u%04x", *p);
        else lt_sb_printf(b, "%c", *p);
    }
    lt_sb_printf(b, "\"");
}

static int write_json(const char *path, const char *suite, const char *backend, const test *t, int n, int np, int nf,
                      int ns) {
    lt_strbuf b = {0};
    lt_sb_printf(&b, "{\n  \"suite\": ");
    json_str(&b, suite);
    lt_sb_printf(&b, ",\n  \"backend\": ");
    json_str(&b, backend);
    lt_sb_printf(&b, ",\n  \"passed\": %d,\n  \"failed\": %d,\n  \"skipped\": %d,\n  \"tests\": [\n", np, nf, ns);
    for (int i = 0; i < n; i++) {
        lt_sb_printf(&b, "    {\"name\": ");
        json_str(&b, t[i].name);
        lt_sb_printf(&b, ", \"status\": \"%s\", \"reason\": ",
                     t[i].status == 'P' ? "pass" : t[i].status == 'S' ? "skip" : "fail");
        json_str(&b, t[i].reason);
        lt_sb_printf(&b, ", \"ops\": [");
        const char *o = t[i].ops ? t[i].ops : "";
        for (int k = 0; *o; k++) {
            size_t l = strcspn(o, ",");
            char op[256];
            cli_fmt(op, sizeof op, "%.*s", (int)(l < 255 ? l : 255), o);
            lt_sb_printf(&b, "%s", k ? ", " : "");
            json_str(&b, op);
            o += l;
            if (*o == ',') o++;
        }
        lt_sb_printf(&b, "], \"seconds\": %.3f}%s\n", t[i].secs, i + 1 < n ? "," : "");
    }
    lt_sb_printf(&b, "  ]\n}\n");
    if (b.failed) {
        lt_sb_free(&b);
        cli_error("out of memory writing %s", path);
        return CLI_EXIT_INVALID;
    }
    lt_ctx ctx = {0};
    lt_status st = lt_io_write_file_atomic(&ctx, path, b.s, b.len);
    lt_sb_free(&b);
    return st == LT_OK ? CLI_EXIT_OK : cli_fail(&ctx);
}

static void finish(test *t, slot *s, int wstatus, double timeout, bool timed_out) {
    /* parse "S\nreason\nops\n" */
    s->buf[s->len < sizeof s->buf ? s->len : sizeof s->buf - 1] = 0;
    char *l1 = s->buf, *l2 = strchr(l1, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;
    bool complete = l2 && l3 && strchr(l3 + 1, '\n');
    if (complete) {
        *l2 = 0;
        *l3 = 0;
        l3[1 + strcspn(l3 + 1, "\n")] = 0;
    }
    t->ops = xstrdup(complete ? l3 + 1 : "");
    char why[REASON_MAX + 128];
    if (timed_out) {
        t->status = 'F';
        cli_fmt(why, sizeof why, "timed out after %g s", timeout);
    } else if (WIFSIGNALED(wstatus)) {
        t->status = 'F';
        cli_fmt(why, sizeof why, "crashed: %s", sig_name(WTERMSIG(wstatus)));
    } else if (!complete || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        t->status = 'F';
        cli_fmt(why, sizeof why, "test process exited with status %d without a verdict",
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    } else {
        t->status = l1[0] == 'P' ? 'P' : 'F';
        cli_fmt(why, sizeof why, "%s", l2 + 1);
    }
    t->reason = xstrdup(why);
    t->secs = now_s() - s->start;
}

static void print_result(const test *t, bool verbose) {
    /* test names are folder names and reasons quote the models: escaped for the terminal */
    if (t->status == 'F') printf("FAIL %s: %s\n", cli_esc(t->name), cli_esc(t->reason));
    else if (verbose && t->status == 'P') printf("PASS %s (%.2f s)\n", cli_esc(t->name), t->secs);
    else if (verbose && t->status == 'S') printf("SKIP %s: %s\n", cli_esc(t->name), cli_esc(t->reason));
}

int cmd_conformance(int argc, char **argv) {
    const char *suite_arg = NULL, *filter = NULL, *json = NULL;
    static cli_compile_args ca; /* static: large, and the forked children read it */
    cli_compile_init(&ca, "interp");
    ca.o.progress = NULL; /* the tests compile in children: only this process draws the progress line */
    int64_t jobs = sysconf(_SC_NPROCESSORS_ONLN);
    double timeout = -1, rtol = RTOL, atol = ATOL;
    bool mem_given = false;
#ifdef CLI_ASAN
    int64_t mem_mb = 0; /* the sanitizer reserves huge address ranges */
#else
    int64_t mem_mb = 4096;
#endif
    bool verbose = false, compile_only = false;
    const char *arch = NULL;
    int r_backend;
    for (int i = 1; i < argc;) {
        const char *v = NULL, *a = argv[i];
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(HELP, stdout); return 0; }
        if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) { verbose = true; i++; continue; }
        if (strcmp(a, "--compile-only") == 0) { compile_only = true; i++; continue; }
        if ((r = cli_compile_opt("conformance", argc, argv, &i, &ca))) {
            if (r < 0) return CLI_EXIT_USAGE;
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--suite", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            suite_arg = v;
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--arch", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            arch = v;
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--filter", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            filter = v;
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--json", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            json = v;
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--jobs", &v)) ||
                   (r = cli_opt_value("conformance", argc, argv, &i, "-j", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (!cli_parse_i64(v, &jobs) || jobs < 1 || jobs > 1024)
                return cli_usage("conformance", "-j needs a number of jobs between 1 and 1024, got '%s'", v);
        } else if (strncmp(a, "-j", 2) == 0 && a[2] >= '0' && a[2] <= '9') {
            if (!cli_parse_i64(a + 2, &jobs) || jobs < 1 || jobs > 1024)
                return cli_usage("conformance", "-j needs a number of jobs between 1 and 1024, got '%s'", a + 2);
            i++;
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--timeout", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (!cli_parse_double(v, &timeout) || timeout < 0)
                return cli_usage("conformance", "--timeout needs a number of seconds, got '%s'", v);
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--mem-limit", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            mem_given = true;
            if (!cli_parse_i64(v, &mem_mb) || mem_mb > ((int64_t)1 << 40))
                return cli_usage("conformance", "--mem-limit needs a number of MiB, got '%s'", v);
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--rtol", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (!cli_parse_double(v, &rtol) || rtol < 0) return cli_usage("conformance", "bad --rtol '%s'", v);
        } else if ((r = cli_opt_value("conformance", argc, argv, &i, "--atol", &v))) {
            if (r < 0) return CLI_EXIT_USAGE;
            if (!cli_parse_double(v, &atol) || atol < 0) return cli_usage("conformance", "bad --atol '%s'", v);
        } else if (a[0] == '-') {
            return cli_usage("conformance", "unknown option '%s'", a);
        } else {
            return cli_usage("conformance", "unexpected argument '%s'", a);
        }
    }
    if (compile_only) { /* no device: the emitter and the backend's offline builder only */
        const lt_backend_vtbl *vt = lt_backend_find(ca.backend);
        if (!vt || !vt->offline_open || !vt->build_offline) {
            char names[256] = "";
            size_t len = 0;
            for (const char *const *n = lt_backend_names(); *n; n++) {
                const lt_backend_vtbl *b = lt_backend_find(*n);
                if (b && b->offline_open && b->build_offline && len < sizeof names)
                    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", *n);
            }
            return cli_usage("conformance", "--compile-only needs a backend that builds without a device (%s), "
                             "got --backend %s", names[0] ? names : "none", ca.backend);
        }
        lt_backend_options bo = {.arch = arch, .nvrtc = ca.o.nvrtc,
                                 .cache_dir = !ca.no_cache && ca.cache_dir[0] ? ca.cache_dir : NULL};
        lt_ctx nctx = {0};
        if (vt->offline_open(&nctx, &bo, &g_offline, &g_compile_only_arch) != LT_OK) {
            cli_error("--compile-only: %s", nctx.msg);
            return CLI_EXIT_UNSUPPORTED;
        }
        g_offline_vt = vt;
    } else if (arch) {
        return cli_usage("conformance", "--arch is for --compile-only");
    }
    /* in a child: the tests run in forked children, and CUDA initialized here would not survive fork */
    if (!compile_only && (r_backend = cli_compile_check_backend_forked(&ca, true))) return r_backend;
    const cli_compile_args *cargs = strcmp(ca.backend, "interp") == 0 ? NULL : &ca;
    if (!mem_given && cargs && !lt_backend_find(ca.backend)->host_memory)
        mem_mb = 0; /* a device driver reserves address space far beyond 4 GiB (CUDA: tens of GiB) */
    if (ca.o.threads == 0) ca.o.threads = 1; /* tests run in parallel: one thread each */
    if (timeout < 0) timeout = cargs ? 300 : 60;   /* a compile (cache miss) counts in the test's time */
    regex_t re;
    if (filter) {
        int rc = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char eb[256];
            regerror(rc, &re, eb, sizeof eb);
            return cli_usage("conformance", "bad --filter regex '%s': %s", filter, eb);
        }
    }
    char *suite = suite_arg ? xstrdup(suite_arg) : find_suite();
    if (!suite || !is_dir(suite)) {
        if (suite)
            cli_error("ONNX node test suite not found at '%s'", suite);
        else
            cli_error("cannot find the ONNX node test suite: the onnx Python package (1.22.0) was not found "
                      "with %s. Run the project's setup script (scripts/setup.sh) to install it, set "
                      "LATHE_PYTHON to a Python that has it, or pass --suite DIR / set LATHE_ONNX_SUITE",
                      getenv("LATHE_PYTHON") && *getenv("LATHE_PYTHON") ? getenv("LATHE_PYTHON") : "python3");
        free(suite);
        if (filter) regfree(&re);
        return CLI_EXIT_INVALID;
    }

    /* enumerate tests */
    DIR *d = opendir(suite);
    if (!d) {
        cli_error("%s: cannot open: %s", suite, strerror(errno));
        free(suite);
        if (filter) regfree(&re);
        return CLI_EXIT_INVALID;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (filter && regexec(&re, e->d_name, 0, NULL, 0) != 0) continue;
        char p[8192];
        cli_fmt(p, sizeof p, "%s/%s", suite, e->d_name);
        if (!is_dir(p)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nv = realloc(names, (size_t)cap * sizeof *names);
            if (!nv) { cli_error("out of memory"); exit(CLI_EXIT_INVALID); }
            names = nv;
        }
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (filter) regfree(&re);
    if (n == 0 && !filter) { /* an empty folder (a failed generation): no run to report */
        cli_error("%s holds no test folders: give the onnx 1.22.0 node tests with --suite DIR or LATHE_ONNX_SUITE",
                  suite);
        free(names);
        free(suite);
        return CLI_EXIT_INVALID;
    }
    if (n) qsort(names, (size_t)n, sizeof *names, cmp_names);
    test *tests = calloc((size_t)(n ? n : 1), sizeof *tests);
    if (!tests) { cli_error("out of memory"); return CLI_EXIT_INVALID; }
    for (int i = 0; i < n; i++) {
        tests[i].name = names[i];
        char p[8192];
        cli_fmt(p, sizeof p, "%s/%s/model.onnx", suite, names[i]);
        char **ds = NULL;
        cli_fmt(p, sizeof p, "%s/%s/model.onnx", suite, names[i]);
        bool has_model = is_file(p);
        cli_fmt(p, sizeof p, "%s/%s", suite, names[i]);
        int nds = list_datasets(p, &ds);
        for (int k = 0; k < nds; k++) free(ds[k]);
        free(ds);
        if (!has_model || nds == 0) {
            tests[i].status = 'S';
            tests[i].reason = xstrdup(!has_model ? "no model.onnx" : "no test_data_set_* folder");
            tests[i].ops = xstrdup("");
        }
    }
    free(names);

    if (jobs > n) jobs = n > 0 ? n : 1;
    slot *slots = calloc((size_t)jobs, sizeof *slots);
    struct pollfd *pfds = calloc((size_t)jobs, sizeof *pfds);
    if (!slots || !pfds) { cli_error("out of memory"); return CLI_EXIT_INVALID; }
    for (int j = 0; j < jobs; j++) slots[j].pid = 0;
    int next = 0, running = 0, printed = 0, done = 0, failed = 0;
    signal(SIGPIPE, SIG_IGN);
    while (next < n || running > 0) {
        /* launch */
        while (running < jobs && next < n) {
            if (tests[next].status) { next++; continue; }
            int j = 0;
            while (slots[j].pid) j++;
            int pfd[2];
            if (pipe(pfd) != 0) { cli_error("pipe: %s", strerror(errno)); exit(CLI_EXIT_INVALID); }
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid < 0) { cli_error("fork: %s", strerror(errno)); exit(CLI_EXIT_INVALID); }
            if (pid == 0) {
                close(pfd[0]);
                struct rlimit rl = {0, 0};
                setrlimit(RLIMIT_CORE, &rl);
                if (mem_mb > 0) {
                    rl.rlim_cur = rl.rlim_max = (rlim_t)mem_mb << 20;
                    setrlimit(RLIMIT_AS, &rl);
                }
                static child_out co;
                char dir[8192];
                cli_fmt(dir, sizeof dir, "%s/%s", suite, tests[next].name);
                char st = child_test(dir, rtol, atol, cargs, &co);
#ifdef CLI_ASAN
                /* the child exits with _exit (no atexit leak check): check here, a leak fails the test */
                if (__lsan_do_recoverable_leak_check()) {
                    static char prev[REASON_MAX];
                    memcpy(prev, co.reason, REASON_MAX);
                    st = 'F';
                    cli_fmt(co.reason, REASON_MAX, "memory leak (LeakSanitizer report on stderr)%s%s",
                            prev[0] ? "; " : "", prev);
                }
#endif
                oneline(co.reason);
                char msg[sizeof co + 16];
                int len = snprintf(msg, sizeof msg, "%c\n%s\n%s\n", st, co.reason, co.ops);
                write_all(pfd[1], msg, (size_t)(len < (int)sizeof msg ? len : (int)sizeof msg - 1));
                close(pfd[1]);
                _exit(0);
            }
            close(pfd[1]);
            slots[j] = (slot){.pid = pid, .fd = pfd[0], .test = next, .start = now_s(), .len = 0};
            running++;
            next++;
        }
        if (running == 0) break;
        /* wait for output, an exit, or the nearest deadline */
        int np = 0, map[1024];
        double t_now = now_s(), wait_s = 1.0;
        for (int j = 0; j < jobs; j++) {
            if (!slots[j].pid) continue;
            pfds[np] = (struct pollfd){.fd = slots[j].fd, .events = POLLIN};
            map[np++] = j;
            if (timeout > 0) {
                double left = slots[j].start + timeout - t_now;
                if (left < wait_s) wait_s = left;
            }
        }
        if (wait_s < 0) wait_s = 0;
        int pr = poll(pfds, (nfds_t)np, (int)(wait_s * 1000) + 1);
        if (pr < 0 && errno != EINTR) { cli_error("poll: %s", strerror(errno)); exit(CLI_EXIT_INVALID); }
        for (int q = 0; q < np; q++) {
            slot *s = &slots[map[q]];
            bool eof = false;
            if (pr > 0 && (pfds[q].revents & (POLLIN | POLLHUP | POLLERR))) {
                char tmp[4096];
                ssize_t r = read(s->fd, tmp, sizeof tmp);
                if (r > 0) {
                    size_t room = sizeof s->buf - 1 - s->len;
                    size_t c = (size_t)r < room ? (size_t)r : room;
                    memcpy(s->buf + s->len, tmp, c);
                    s->len += c;
                } else if (r == 0 || errno != EINTR) {
                    eof = true;
                }
            }
            bool timed_out = !eof && timeout > 0 && now_s() - s->start > timeout;
            if (!eof && !timed_out) continue;
            if (timed_out) kill(s->pid, SIGKILL);
            int ws = 0;
            while (waitpid(s->pid, &ws, 0) < 0 && errno == EINTR) {}
            close(s->fd);
            finish(&tests[s->test], s, ws, timeout, timed_out);
            s->pid = 0;
            running--;
            done++;
        }
        while (printed < n && tests[printed].status) {
            if (tests[printed].status == 'F' || verbose) cli_progress_clear();
            if (tests[printed].status == 'F') failed++;
            print_result(&tests[printed++], verbose);
        }
        cli_progress("conformance (%s): %d of %d tests, %d failed", ca.backend, printed, n, failed);
    }
    while (printed < n && tests[printed].status) print_result(&tests[printed++], verbose);
    cli_progress_clear();
    int np = 0, nf = 0, ns = 0;
    for (int i = 0; i < n; i++) {
        if (tests[i].status == 'P') np++;
        else if (tests[i].status == 'S') ns++;
        else nf++;
    }
    int rc = CLI_EXIT_OK;
    if (json) rc = write_json(json, suite, ca.backend, tests, n, np, nf, ns);
    printf("%d passed, %d failed, %d skipped\n", np, nf, ns);
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        free(tests[i].name);
        free(tests[i].reason);
        free(tests[i].ops);
    }
    free(tests);
    free(slots);
    free(pfds);
    free(suite);
    if (g_offline_vt && g_offline_vt->offline_close) g_offline_vt->offline_close(g_offline);
    g_offline = NULL;
    (void)done;
    return rc;
}
