/* cpu_compile.c — compile generated C with the system compiler into a cached shared object and load
 * it (see cpu.h for the contract: flags, cache key, atomic writes, trust checks, error reporting).
 *
 * Steps of lt_cpu_compile: identify the compiler (`cc --version`, spawned with posix_spawnp in its
 * own process group, output read through a pipe, under the compile time limit) and the CPU
 * (/proc/cpuinfo model name and flags, for -march=native); hash everything that decides the object
 * code; check the cache folder (cpu_cache.c: ours, 0700-style); on a hit, load <dir>/<key>.so
 * through a descriptor checked against <key>.manifest; on a miss (or a failed check) sweep stale
 * temporaries, write <key>.c atomically, run the compiler into a unique temporary .so, check and
 * hash it through a descriptor, rename it into place, write the manifest, dlopen that descriptor.
 * A module that calls microkernels is compiled without their headers and linked (by soname) against
 * the shared prelude library (build_split, cpu_split.c), which is loaded first, through its own
 * checked descriptor; any failure there falls back to the whole module.
 * Nothing here prints or reads environment variables (the compiler inherits the process environment
 * unchanged, as any child does).
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../codegen/codegen.h"
#include "../../base/hash.h"
#include "../../base/private_file.h"
#include "cpu_impl.h"

extern char **environ;

#define CPU_FLAGS "-O3 -march=native -fopenmp -fPIC -shared -std=gnu11 -fno-math-errno -fno-trapping-math -fwrapv"
#define KEY_VERSION "lathe-cpu-module-v2"
#define MAX_WORDS 64
#define LOG_KEEP (256 * 1024)
#define STALE_TMP_S (30 * 60.0) /* a temporary file this old belongs to a compile that was killed */

const char *lt_cpu_default_flags(void) { return CPU_FLAGS; }

struct lt_cpu_module {
    void *handle, *lib_handle; /* the module; the shared prelude library it links (NULL: none) */
    int fd, lib_fd;            /* the checked descriptors they were loaded through (-1: none) */
    const lt_cpu_kernel_desc *kernels;
    int n_kernels;
    void (*set_threads)(int);
    char *so_path, *src_path;
    char *lib_path; /* the shared prelude library it links, or NULL */
    lt_cpu_module_info info;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Split `s` on spaces into words copied into `store` (size cap); returns the count or -1. */
static int split_words(const char *s, char *store, size_t cap, char **words, int max) {
    int n = 0;
    size_t used = 0;
    while (s && *s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        size_t len = strcspn(s, " \t");
        if (n == max || used + len + 1 > cap) return -1;
        memcpy(store + used, s, len);
        store[used + len] = 0;
        words[n++] = store + used;
        used += len + 1;
        s += len;
    }
    return n;
}

/* The compiler command: its words, the flags, and room for the inputs and output. */
typedef struct ccmd {
    char store[8192];
    char *argv[MAX_WORDS + 12];
    int ncc, nargs;   /* compiler words; words before the inputs */
    double timeout_s; /* per compiler run; 0 = no limit */
    bool timed_out;   /* a run hit the limit (no point in trying another route) */
} ccmd;

/* Read what the child writes until EOF or the deadline (0: none); false when the deadline passed. */
static bool drain_pipe(int fd, double deadline, lt_strbuf *out) {
    char buf[4096];
    for (;;) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - now_s();
            if (left <= 0) return false;
            wait_ms = left > 60 ? 60000 : (int)(left * 1000) + 1;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, wait_ms);
        if (pr <= 0) continue; /* timeout slice or EINTR: look at the clock again */
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0) return true;
        if (out->len < LOG_KEEP) lt_sb_printf(out, "%.*s", (int)r, buf);
    }
}

/* Wait for pid until the deadline (0: none): 1 reaped, 0 the deadline passed, -1 waitpid failed (errno). */
static int wait_child(pid_t pid, double deadline, int *status) {
    for (;;) {
        pid_t w = waitpid(pid, status, deadline > 0 ? WNOHANG : 0);
        if (w == pid) return 1;
        if (w < 0 && errno != EINTR) return -1;
        if (deadline > 0 && now_s() >= deadline) return 0;
        if (w == 0) nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
}

/* Run argv in its own process group with stdin from /dev/null and stdout+stderr captured (the first
 * LOG_KEEP bytes), for at most c->timeout_s: past it the whole group (the compiler driver and its
 * cc1 / as / ld) is killed with SIGKILL and the result is LT_ERR_IO naming the command and the
 * limit. *exit_code: the exit status, or -1 when killed by a signal. */
static lt_status run_capture(lt_ctx *ctx, ccmd *c, char *const *argv, lt_strbuf *out, int *exit_code) {
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0) return lt_error(ctx, LT_ERR_IO, "cannot create a pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "cannot run the C compiler '%s': %s", argv[0], strerror(rc));
    }
    double deadline = c->timeout_s > 0 ? now_s() + c->timeout_s : 0;
    int status = 0, waited = drain_pipe(fd[0], deadline, out) ? wait_child(pid, deadline, &status) : 0;
    int err = errno;
    close(fd[0]);
    if (waited < 0) return lt_error(ctx, LT_ERR_IO, "waiting for '%s': %s", argv[0], strerror(err));
    if (waited == 0) {
        kill(-pid, SIGKILL); /* the group: the driver's children would otherwise run on */
        wait_child(pid, 0, &status);
        c->timed_out = true;
        return lt_error(ctx, LT_ERR_IO,
                        "the C compiler '%s' did not finish within %g s and was stopped (its process group killed); "
                        "raise the limit (compile option cc_timeout, lathe --cc-timeout) if it is only slow",
                        argv[0], c->timeout_s);
    }
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return LT_OK;
}

/* The CPU's model name and feature flags (the first of each in /proc/cpuinfo), for the key. */
static void cpu_identity(lt_strbuf *out) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) { lt_sb_printf(out, "cpu: unknown\n"); return; }
    char *line = NULL;
    size_t cap = 0;
    bool model = false, flags = false;
    while ((!model || !flags) && getline(&line, &cap, f) > 0) {
        if (!model && strncmp(line, "model name", 10) == 0) model = true, lt_sb_printf(out, "%s", line);
        if (!flags && strncmp(line, "flags", 5) == 0) flags = true, lt_sb_printf(out, "%s", line);
    }
    free(line); /* getline's buffer comes from the C library's malloc */
    fclose(f);
}

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? lt_mem_alloc((size_t)n + 1) : NULL;
    if (s) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

/* The compiler's output cut to its first `max` lines, for the error message. */
static void first_lines(const char *log, int max, char *out, size_t cap) {
    const char *p = log;
    int lines = 0;
    while (*p && lines < max) {
        const char *e = strchr(p, '\n');
        p = e ? e + 1 : p + strlen(p);
        lines++;
    }
    int more = 0;
    for (const char *q = p; *q; q++) more += *q == '\n';
    snprintf(out, cap, "%.*s%s", (int)(p - log), log, more ? "[...]\n" : "");
}

/* Unload the module and its library, then release the descriptors they came through. */
static void unload(lt_cpu_module *m) {
    if (m->handle) dlclose(m->handle);
    if (m->lib_handle) dlclose(m->lib_handle);
    m->handle = m->lib_handle = NULL;
    lt_cpu_fd_release(m->fd);
    lt_cpu_fd_release(m->lib_fd);
    m->fd = m->lib_fd = -1;
    m->kernels = NULL;
    m->n_kernels = 0;
    m->set_threads = NULL;
}

/* dlopen the checked descriptors (the library first: the module's DT_NEEDED names its soname, which
 * the dynamic loader then finds already loaded) and look up the kernel table. */
static lt_status load_checked(lt_ctx *ctx, lt_cpu_module *m) {
    if (m->lib_fd >= 0 && !m->lib_handle) LT_TRY(lt_cpu_dlopen_fd(ctx, m->lib_fd, m->lib_path, &m->lib_handle));
    LT_TRY(lt_cpu_dlopen_fd(ctx, m->fd, m->so_path, &m->handle));
    /* The OpenMP runtime the module pulled in keeps a pool of threads alive after a parallel loop;
     * unloading it with the last module would leave them running in unmapped code. Pin it (NOLOAD:
     * only if it is already loaded, NODELETE: never unload) — libgomp for gcc, libomp for clang. */
    static const char *const omp_libs[] = {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"};
    for (size_t i = 0; i < sizeof omp_libs / sizeof omp_libs[0]; i++) {
        void *h = dlopen(omp_libs[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (h) dlclose(h); /* drops our reference only; NODELETE stays */
    }
    m->kernels = dlsym(m->handle, "lathe_kernels");
    const int *n = dlsym(m->handle, "lathe_n_kernels");
    m->n_kernels = m->kernels && n ? *n : 0;
    if (!n) m->kernels = NULL;
    *(void **)&m->set_threads = dlsym(m->handle, "lathe_set_threads");
    return LT_OK;
}

/* Open a cached object checked (cpu_cache.c) and compare its hash with its manifest. */
static lt_status open_entry(lt_ctx *ctx, const char *so, const char *manifest, lt_cpu_manifest *man, int *fd) {
    LT_TRY(lt_cpu_manifest_read(ctx, manifest, man));
    char sha[65];
    LT_TRY(lt_cpu_open_checked(ctx, so, false, fd, sha));
    if (strcmp(sha, man->sha256) != 0) {
        close(*fd); /* not loaded: a plain close */
        *fd = -1;
        return lt_error(ctx, LT_ERR_IO, "%s does not match its manifest %s", so, manifest);
    }
    return LT_OK;
}

/* A cache hit: the module (and the prelude library its manifest names) checked, then loaded. Any
 * failure leaves m for unload() and the caller rebuilds. */
static lt_status load_cached(lt_ctx *ctx, lt_cpu_module *m, const char *manifest, const char *absdir) {
    lt_cpu_manifest man;
    LT_TRY(open_entry(ctx, m->so_path, manifest, &man, &m->fd));
    if (man.prelude[0]) {
        lt_cpu_manifest lman;
        char *lm = dup_printf("%s/%s.prelude.manifest", absdir, man.prelude);
        m->lib_path = dup_printf("%s/%s.prelude.so", absdir, man.prelude);
        lt_status s = lm && m->lib_path ? open_entry(ctx, m->lib_path, lm, &lman, &m->lib_fd)
                                        : lt_error(ctx, LT_ERR_NOMEM, "out of memory (module paths)");
        lt_mem_free(lm);
        LT_TRY(s);
    }
    return load_checked(ctx, m);
}

/* One compiler run: src (+ link_lib) -> so. */
typedef struct so_build {
    const char *src, *link_lib, *so, *log; /* the library to link may be NULL */
    const char *manifest;    /* written after the .so is in place (NULL: a private build, none) */
    const char *prelude_key; /* recorded in the manifest ("": none) */
    const char *soname_flag; /* "-Wl,-soname,..." for a library (NULL: none) */
    bool private_build;      /* no cache: the files are removed, the message must not point at them */
} so_build;

/* The compiler failed: keep its output in the log (cache builds) and say so. */
static lt_status compile_failed(lt_ctx *ctx, const so_build *b, const lt_strbuf *log, int code) {
    if (!b->private_build && log->s) {
        lt_ctx ignore = {0};
        lt_private_write_atomic(&ignore, b->log, log->s, log->len);
    }
    char head[LT_MSG_MAX];
    first_lines(log->s ? log->s : "(no output)\n", 40, head, sizeof head);
    if (b->private_build)
        return lt_error(ctx, LT_ERR_INTERNAL,
                        "the C compiler failed (%s %d) on the generated source (a no-cache build: its temporary "
                        "folder is removed; compile with a cache folder to keep the source and the full output):\n%s",
                        code < 0 ? "killed, status" : "exit", code, head);
    return lt_error(ctx, LT_ERR_INTERNAL, "the C compiler failed (%s %d) on the generated file %s (full output: %s):\n%s",
                    code < 0 ? "killed, status" : "exit", code, b->src, b->log, head);
}

/* Compile into a unique temporary name; check and hash the result through a descriptor, rename it
 * into place, write the manifest; *fd: the checked descriptor to load it through. A compiler failure
 * is LT_ERR_INTERNAL naming the source and quoting the compiler (full output in b->log). */
static lt_status build_so(lt_ctx *ctx, ccmd *c, const so_build *b, int *fd) {
    char tmp_so[4200];
    lt_private_tmp_name(tmp_so, sizeof tmp_so, b->so);
    int n = c->nargs;
    if (b->soname_flag) c->argv[n++] = (char *)b->soname_flag;
    c->argv[n++] = "-o";
    c->argv[n++] = tmp_so;
    c->argv[n++] = (char *)b->src;
    if (b->link_lib) c->argv[n++] = (char *)b->link_lib;
    c->argv[n++] = "-lm";
    c->argv[n] = NULL;
    lt_strbuf log = {0};
    int code = 0;
    lt_status s = run_capture(ctx, c, c->argv, &log, &code);
    if (s == LT_OK && code != 0) s = compile_failed(ctx, b, &log, code);
    lt_sb_free(&log);
    lt_cpu_manifest man = {{0}, {0}};
    *fd = -1;
    if (s == LT_OK) s = lt_cpu_open_checked(ctx, tmp_so, true, fd, man.sha256);
    if (s == LT_OK && rename(tmp_so, b->so) != 0)
        s = lt_error(ctx, LT_ERR_IO, "cannot move the compiled module to %s: %s", b->so, strerror(errno));
    if (s == LT_OK && b->manifest) {
        snprintf(man.prelude, sizeof man.prelude, "%s", b->prelude_key);
        s = lt_cpu_manifest_write(ctx, b->manifest, &man);
    }
    if (s != LT_OK) {
        unlink(tmp_so);
        if (*fd >= 0) close(*fd);
        *fd = -1;
    }
    return s;
}

/* The microkernel route (cpu_split.c): make sure the shared prelude library in dir is there and
 * checks out (built under a lock when not), then compile the module without the microkernel
 * headers, linked against it. Any failure: false (the caller compiles the module whole; unless the
 * compiler hit its time limit: c->timed_out, ctx says so). */
static bool build_split(lt_ctx *ctx, ccmd *c, const char *ident, const char *source, const char *dir,
                        const char *absdir, const char *key, const char *manifest, lt_cpu_module *m) {
    lt_ctx local = {0};
    lt_strbuf lib = {0}, tu = {0};
    char *lib_so = NULL, *lib_man = NULL, *lib_c = NULL, *lib_log = NULL, *tu_c = NULL, *tu_log = NULL;
    bool ok = false;
    if (lt_cpu_prelude_library_source(&local, &lib) != LT_OK || !lt_cpu_split_module(source, lib.s, &tu) || tu.failed)
        goto out;
    lt_sha256 h;
    uint8_t dig[32];
    lt_sha256_init(&h);
    lt_sha256_update(&h, KEY_VERSION "-prelude", sizeof KEY_VERSION "-prelude");
    for (int i = c->ncc; i < c->nargs; i++) lt_sha256_update(&h, c->argv[i], strlen(c->argv[i]) + 1);
    lt_sha256_update(&h, ident, strlen(ident) + 1);
    lt_sha256_update(&h, lib.s, lib.len);
    lt_sha256_final(&h, dig);
    char lkey[33], soname[80];
    for (int i = 0; i < 16; i++) snprintf(lkey + 2 * i, 3, "%02x", dig[i]);
    /* the module records the library by this soname; load_checked loads the library first */
    snprintf(soname, sizeof soname, "-Wl,-soname,lathe-prelude-%s.so", lkey);
    lib_so = dup_printf("%s/%s.prelude.so", absdir, lkey);
    lib_man = dup_printf("%s/%s.prelude.manifest", absdir, lkey);
    lib_c = dup_printf("%s/%s.prelude.c", dir, lkey);
    lib_log = dup_printf("%s/%s.prelude.log", dir, lkey);
    tu_c = dup_printf("%s/%s.tu.c", dir, key);
    tu_log = dup_printf("%s/%s.tu.log", dir, key);
    if (!lib_so || !lib_man || !lib_c || !lib_log || !tu_c || !tu_log) goto out;
    lt_cpu_manifest lman;
    lt_ctx probe = {0};
    if (open_entry(&probe, lib_so, lib_man, &lman, &m->lib_fd) != LT_OK) {
        /* one process builds the library while the others (parallel conformance runs) wait for it */
        char *lock = dup_printf("%s/%s.prelude.lock", dir, lkey);
        int fd = lock ? open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
        if (fd >= 0) while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
        lt_ctx again = {0};
        so_build b = {.src = lib_c, .so = lib_so, .log = lib_log, .manifest = lib_man, .prelude_key = "",
                      .soname_flag = soname};
        bool built = open_entry(&again, lib_so, lib_man, &lman, &m->lib_fd) == LT_OK ||
                     (lt_private_write_atomic(&local, lib_c, lib.s, lib.len) == LT_OK &&
                      build_so(&local, c, &b, &m->lib_fd) == LT_OK);
        if (fd >= 0) close(fd); /* releases the lock */
        lt_mem_free(lock);
        if (!built) goto out;
    }
    if (lt_private_write_atomic(&local, tu_c, tu.s, tu.len) != LT_OK) goto out;
    so_build b = {.src = tu_c, .link_lib = lib_so, .so = m->so_path, .log = tu_log, .manifest = manifest,
                  .prelude_key = lkey};
    ok = build_so(&local, c, &b, &m->fd) == LT_OK;
    unlink(tu_c);
    if (ok) {
        m->lib_path = lib_so;
        lib_so = NULL;
    }
out:
    if (!ok && m->lib_fd >= 0) {
        close(m->lib_fd); /* checked, not loaded yet */
        m->lib_fd = -1;
    }
    if (c->timed_out) lt_error(ctx, local.status, "%s", local.msg);
    lt_sb_free(&lib);
    lt_sb_free(&tu);
    lt_mem_free(lib_so), lt_mem_free(lib_man), lt_mem_free(lib_c), lt_mem_free(lib_log);
    lt_mem_free(tu_c), lt_mem_free(tu_log);
    return ok;
}

/* Parse the compiler command and flags into c; LT_ERR_USAGE when they do not fit. */
static lt_status make_command(lt_ctx *ctx, ccmd *c, const char *cc, const lt_cpu_options *opt) {
    c->ncc = split_words(cc, c->store, 2048, c->argv, 8);
    int nflags = c->ncc > 0 ? split_words(CPU_FLAGS, c->store + 2048, 1024, c->argv + c->ncc, MAX_WORDS / 2) : 0;
    int nextra = c->ncc > 0 ? split_words(opt->extra_flags, c->store + 3072, sizeof c->store - 3072,
                                          c->argv + c->ncc + nflags, MAX_WORDS / 2 - 3) : 0;
    if (c->ncc <= 0) return lt_error(ctx, LT_ERR_USAGE, "C compiler command '%s' is empty or too long", cc);
    if (nflags < 0 || nextra < 0) return lt_error(ctx, LT_ERR_USAGE, "too many compiler flags: %s", opt->extra_flags);
    c->nargs = c->ncc + nflags + nextra;
    c->timeout_s = opt->cc_timeout_s == 0 ? LT_CPU_CC_TIMEOUT_DEFAULT : opt->cc_timeout_s > 0 ? opt->cc_timeout_s : 0;
    return LT_OK;
}

/* The compiler's identity (`cc --version`) and this CPU's (for -march=native), appended to ident. */
static lt_status identify(lt_ctx *ctx, ccmd *c, const char *cc, lt_strbuf *ident) {
    char *ver_argv[12];
    memcpy(ver_argv, c->argv, (size_t)c->ncc * sizeof *c->argv);
    ver_argv[c->ncc] = "--version";
    ver_argv[c->ncc + 1] = NULL;
    int code = 0;
    LT_TRY(run_capture(ctx, c, ver_argv, ident, &code));
    if (code != 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "C compiler '%s' failed to report its version (exit %d): %s", cc, code,
                        ident->s ? ident->s : "");
    cpu_identity(ident);
    if (ident->failed || !ident->s) return lt_error(ctx, LT_ERR_NOMEM, "out of memory reading the compiler version");
    return LT_OK;
}

lt_status lt_cpu_compile(lt_ctx *ctx, const char *source, const lt_cpu_options *options, lt_cpu_module **out) {
    if (!source || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_cpu_compile: missing source or output");
    double t0 = now_s();
    lt_cpu_options opt = options ? *options : (lt_cpu_options){0};
    const char *cc = opt.cc && *opt.cc ? opt.cc : "cc";

    /* argv: compiler words + default flags + extra flags (+ -o out src [lib] -lm in build_so) */
    ccmd *c = lt_calloc(ctx, 1, sizeof *c, "compiler command");
    if (!c) return LT_ERR_NOMEM;
    lt_status s = LT_OK;
    lt_strbuf ident = {0};
    lt_cpu_module *m = NULL;
    char tmpdir[64] = "", key[33] = "";
    char *absdir = NULL, *log_path = NULL, *manifest = NULL;
    if ((s = make_command(ctx, c, cc, &opt)) != LT_OK || (s = identify(ctx, c, cc, &ident)) != LT_OK) goto fail;

    /* cache key */
    lt_sha256 h;
    uint8_t dig[32];
    lt_sha256_init(&h);
    lt_sha256_update(&h, KEY_VERSION, sizeof KEY_VERSION);
    for (int i = c->ncc; i < c->nargs; i++) lt_sha256_update(&h, c->argv[i], strlen(c->argv[i]) + 1);
    lt_sha256_update(&h, "\n", 1);
    lt_sha256_update(&h, ident.s, ident.len + 1);
    lt_sha256_update(&h, source, strlen(source));
    lt_sha256_final(&h, dig);

    if (!(m = lt_calloc(ctx, 1, sizeof *m, "CPU module"))) { s = LT_ERR_NOMEM; goto fail; }
    m->fd = m->lib_fd = -1;
    for (int i = 0; i < 32; i++) snprintf(m->info.key + 2 * i, 3, "%02x", dig[i]);
    snprintf(key, sizeof key, "%.32s", m->info.key); /* file names: the first 128 bits */

    const char *dir = opt.cache_dir;
    if (!dir || !*dir) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/lathe-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            tmpdir[0] = 0;
            s = lt_error(ctx, LT_ERR_IO, "cannot create a temporary directory: %s", strerror(errno));
            goto fail;
        }
        dir = tmpdir;
    } else if ((s = lt_private_dir_prepare(ctx, dir, "cache folder")) != LT_OK) {
        goto fail;
    }
    if (!(absdir = realpath(dir, NULL))) { /* the prelude library is reported by its absolute path */
        s = lt_error(ctx, LT_ERR_IO, "cannot resolve the cache folder %s: %s", dir, strerror(errno));
        goto fail;
    }
    m->so_path = dup_printf("%s/%s.so", dir, key);
    m->src_path = dup_printf("%s/%s.c", dir, key);
    log_path = dup_printf("%s/%s.log", dir, key);
    manifest = dup_printf("%s/%s.manifest", dir, key);
    if (!m->so_path || !m->src_path || !log_path || !manifest) {
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (module paths)");
        goto fail;
    }

    if (!tmpdir[0]) {
        lt_ctx probe = {0};
        if (load_cached(&probe, m, manifest, absdir) == LT_OK) { /* a hit; anything else is rebuilt */
            struct stat st;
            if (lstat(m->src_path, &st) != 0) lt_private_write_atomic(&probe, m->src_path, source, strlen(source));
            m->info.cache_hit = true;
            goto loaded;
        }
        unload(m);
        lt_mem_free(m->lib_path);
        m->lib_path = NULL;
        lt_private_sweep_tmp(dir, STALE_TMP_S);
    }

    /* miss: write the source; compile (through the prelude library when the module calls
     * microkernels and there is a cache to keep the library in), rename into place, load */
    s = lt_private_write_atomic(ctx, m->src_path, source, strlen(source));
    if (s == LT_OK && (tmpdir[0] || opt.whole_module || !strstr(source, LT_EMIT_MARK_MICROKERNELS) ||
                       !build_split(ctx, c, ident.s, source, dir, absdir, key, manifest, m))) {
        so_build b = {.src = m->src_path, .so = m->so_path, .log = log_path, .manifest = tmpdir[0] ? NULL : manifest,
                      .prelude_key = "", .private_build = tmpdir[0] != 0};
        s = c->timed_out ? ctx->status : build_so(ctx, c, &b, &m->fd);
    }
    if (s != LT_OK || (s = load_checked(ctx, m)) != LT_OK) goto fail;

loaded:
    if (tmpdir[0]) { /* private build: nothing to keep (the loaded object lives on through its descriptor) */
        lt_private_remove_dir(tmpdir);
        lt_mem_free(m->so_path);
        lt_mem_free(m->src_path);
        m->so_path = m->src_path = NULL;
    }
    m->info.so_path = m->so_path;
    m->info.source_path = m->src_path;
    m->info.prelude_library = m->lib_path;
    m->info.compile_seconds = now_s() - t0;
    *out = m;
    m = NULL;

fail:
    if (tmpdir[0] && m) lt_private_remove_dir(tmpdir); /* a failed no-cache build leaves nothing */
    if (m) {
        unload(m);
        lt_mem_free(m->so_path);
        lt_mem_free(m->src_path);
        lt_mem_free(m->lib_path);
        lt_mem_free(m);
    }
    free(absdir); /* realpath's buffer comes from the C library's malloc */
    lt_mem_free(log_path);
    lt_mem_free(manifest);
    lt_sb_free(&ident);
    lt_mem_free(c);
    return s;
}

void *lt_cpu_module_sym(const lt_cpu_module *mod, const char *name) {
    return mod && mod->handle && name ? dlsym(mod->handle, name) : NULL;
}

const lt_cpu_kernel_desc *lt_cpu_module_kernels(const lt_cpu_module *mod, int *n) {
    if (n) *n = mod ? mod->n_kernels : 0;
    return mod ? mod->kernels : NULL;
}

const lt_cpu_kernel_desc *lt_cpu_module_kernel(const lt_cpu_module *mod, const char *name) {
    for (int i = 0; mod && name && i < mod->n_kernels; i++)
        if (mod->kernels[i].name && strcmp(mod->kernels[i].name, name) == 0) return &mod->kernels[i];
    return NULL;
}

void lt_cpu_module_set_threads(lt_cpu_module *mod, int n) {
    if (mod && mod->set_threads) mod->set_threads(n);
}

const lt_cpu_module_info *lt_cpu_module_get_info(const lt_cpu_module *mod) { return mod ? &mod->info : NULL; }

void lt_cpu_module_free(lt_cpu_module *mod) {
    if (!mod) return;
    unload(mod);
    lt_mem_free(mod->so_path);
    lt_mem_free(mod->src_path);
    lt_mem_free(mod->lib_path);
    lt_mem_free(mod);
}

/* ---- deploying without a compiler: a module's bytes out, prebuilt bytes in (cpu.h) ---- */

lt_status lt_cpu_module_image(lt_ctx *ctx, const lt_cpu_module *mod, uint8_t **data, size_t *size) {
    if (!mod || !data || !size) return lt_error(ctx, LT_ERR_USAGE, "lt_cpu_module_image: bad arguments");
    if (mod->lib_path || mod->lib_fd >= 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED,
                        "the compiled module links the shared prelude library; an artifact needs a whole module "
                        "(built with no cache folder)");
    struct stat sb;
    if (mod->fd < 0 || fstat(mod->fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0)
        return lt_error(ctx, LT_ERR_IO, "the compiled module's file cannot be read back");
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = lt_mem_alloc(n);
    if (!buf) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu bytes of compiled module)", n);
    for (size_t off = 0; off < n;) {
        ssize_t r = pread(mod->fd, buf + off, n - off, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            lt_mem_free(buf);
            return lt_error(ctx, LT_ERR_IO, "reading the compiled module back: %s", r < 0 ? strerror(errno) : "short read");
        }
        off += (size_t)r;
    }
    *data = buf;
    *size = n;
    return LT_OK;
}

static bool write_all(int fd, const void *data, size_t size) {
    const uint8_t *p = data;
    while (size) {
        ssize_t w = write(fd, p, size);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        size -= (size_t)w;
    }
    return true;
}

lt_status lt_cpu_module_load_image(lt_ctx *ctx, const void *data, size_t size, const char *sha256, const char *what,
                                   lt_cpu_module **out) {
    if (!data || !size || !sha256 || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_cpu_module_load_image: bad arguments");
    char tmpdir[64] = "", path[128] = "";
    int fd = memfd_create("lathe-artifact-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) { /* no memfd: a private folder only we can enter, removed once loaded */
        snprintf(tmpdir, sizeof tmpdir, "/tmp/lathe-XXXXXX");
        if (!mkdtemp(tmpdir)) return lt_error(ctx, LT_ERR_IO, "cannot create a temporary directory: %s", strerror(errno));
        snprintf(path, sizeof path, "%s/module.so", tmpdir);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            lt_status s = lt_error(ctx, LT_ERR_IO, "cannot create %s: %s", path, strerror(errno));
            rmdir(tmpdir);
            return s;
        }
    }
    lt_status s = LT_OK;
    lt_cpu_module *m = NULL;
    char sha[65];
    uint64_t n = 0;
    if (!write_all(fd, data, size)) s = lt_error(ctx, LT_ERR_IO, "cannot write the %s to memory: %s", what, strerror(errno));
    if (s == LT_OK && !tmpdir[0]) fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
    if (s == LT_OK && !lt_sha256_fd(fd, sha, &n)) s = lt_error(ctx, LT_ERR_IO, "cannot hash the %s: %s", what, strerror(errno));
    if (s == LT_OK && (n != size || strcmp(sha, sha256) != 0))
        s = lt_error(ctx, LT_ERR_IO, "the %s changed after it was checked (SHA-256 %s, expected %s)", what, sha, sha256);
    if (s == LT_OK && !(m = lt_calloc(ctx, 1, sizeof *m, "CPU module"))) s = LT_ERR_NOMEM;
    if (s == LT_OK) {
        m->fd = fd;
        m->lib_fd = -1;
        fd = -1;
        m->so_path = dup_printf("%s", what); /* names it in a dlopen error only */
        s = m->so_path ? load_checked(ctx, m) : lt_error(ctx, LT_ERR_NOMEM, "out of memory (module name)");
        lt_mem_free(m->so_path);
        m->so_path = NULL;
    }
    if (tmpdir[0]) { /* loaded (or not): the file goes, the object lives on through its descriptor */
        unlink(path);
        rmdir(tmpdir);
    }
    if (fd >= 0) close(fd);
    if (s != LT_OK) {
        if (m) lt_cpu_module_free(m);
        return s;
    }
    snprintf(m->info.key, sizeof m->info.key, "%s", sha256);
    *out = m;
    return LT_OK;
}

/* Flags of /proc/cpuinfo that name instruction-set extensions -march=native may enable (x86). */
static const char *const isa_flags[] = {
    "sse", "sse2", "pni", "ssse3", "sse4_1", "sse4_2", "sse4a", "popcnt", "abm", "lahf_lm", "cx16", "movbe",
    "aes", "pclmulqdq", "sha_ni", "rdrand", "rdseed", "adx", "xsave", "xsaveopt", "xsavec", "avx", "avx2", "fma",
    "fma4", "f16c", "bmi1", "bmi2", "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512ifma",
    "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bitalg", "avx512_vpopcntdq", "avx512_bf16",
    "avx512_fp16", "avx512er", "avx512pf", "avx512_4vnniw", "avx512_4fmaps", "avx_vnni", "avx_vnni_int8",
    "avx_ifma", "avx_ne_convert", "gfni", "vaes", "vpclmulqdq", "amx_tile", "amx_int8", "amx_bf16", "amx_fp16",
    "clflushopt", "clwb", "movdiri", "movdir64b", "serialize", "waitpkg", "3dnowprefetch",
};

void lt_cpu_isa_features(lt_strbuf *features, lt_strbuf *model) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    bool got_model = false, got_flags = false;
    while ((!got_model || !got_flags) && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        const char *val = colon + 1 + strspn(colon + 1, " \t");
        if (!got_model && strncmp(line, "model name", 10) == 0) {
            got_model = true;
            if (model) lt_sb_printf(model, "%s", val);
        }
        bool x86 = strncmp(line, "flags", 5) == 0, arm = strncmp(line, "Features", 8) == 0;
        if (got_flags || (!x86 && !arm)) continue;
        got_flags = true;
        size_t start = features->len;
        for (const char *p = val; *p;) {
            size_t len = strcspn(p, " \t");
            bool keep = arm && len > 0;
            for (size_t k = 0; x86 && k < sizeof isa_flags / sizeof *isa_flags && !keep; k++)
                keep = strlen(isa_flags[k]) == len && strncmp(isa_flags[k], p, len) == 0;
            if (keep) lt_sb_printf(features, "%s%.*s", features->len > start ? " " : "", (int)len, p);
            p += len;
            p += strspn(p, " \t");
        }
    }
    free(line); /* getline's buffer comes from the C library's malloc */
    fclose(f);
}
