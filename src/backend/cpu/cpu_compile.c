/* cpu_compile.c — compile generated C with the system compiler into a cached shared object and load
 * it (see cpu.h for the contract: flags, cache key, atomic writes, error reporting).
 *
 * Steps of lt_cpu_compile: identify the compiler (`cc --version`, spawned with posix_spawnp, output
 * read through a pipe) and the CPU (/proc/cpuinfo model name and flags, for -march=native); hash
 * everything that decides the object code; on a hit dlopen <dir>/<key>.so; on a miss write
 * <key>.c atomically, run the compiler into a unique temporary .so, rename it into place, dlopen.
 * Nothing here prints or reads environment variables (the compiler inherits the process environment
 * unchanged, as any child does).
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../hash.h"

extern char **environ;

#define CPU_FLAGS "-O3 -march=native -fopenmp -fPIC -shared -std=gnu11 -fno-math-errno -fwrapv"
#define KEY_VERSION "lathe-cpu-module-v1"
#define MAX_WORDS 64
#define LOG_KEEP (256 * 1024)

const char *lt_cpu_default_flags(void) { return CPU_FLAGS; }

struct lt_cpu_module {
    void *handle;
    const lt_cpu_kernel_desc *kernels;
    int n_kernels;
    void (*set_threads)(int);
    char *so_path, *src_path;
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

/* Run argv with stdin from /dev/null and stdout+stderr captured (the first LOG_KEEP bytes).
 * *exit_code: the exit status, or -1 when killed by a signal. */
static lt_status run_capture(lt_ctx *ctx, char *const *argv, lt_strbuf *out, int *exit_code) {
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0) return lt_error(ctx, LT_ERR_IO, "cannot create a pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "cannot run the C compiler '%s': %s", argv[0], strerror(rc));
    }
    char buf[4096];
    for (;;) {
        ssize_t r = read(fd[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (out->len < LOG_KEEP) lt_sb_printf(out, "%.*s", (int)r, buf);
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return lt_error(ctx, LT_ERR_IO, "waiting for '%s': %s", argv[0], strerror(errno));
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

static lt_status mkdir_p(lt_ctx *ctx, const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return lt_error(ctx, LT_ERR_USAGE, "cache directory path too long: %s", dir);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(path, 0700) != 0 && errno != EEXIST)
                return lt_error(ctx, LT_ERR_IO, "cannot create cache directory %s: %s", path, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return lt_error(ctx, LT_ERR_IO, "cache directory %s is not a directory", path);
    return LT_OK;
}

static unsigned next_tmp_id(void) {
    static unsigned counter;
    return __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
}

/* Write data to `path` through a unique temporary file in the same directory and rename(2). */
static lt_status write_atomic(lt_ctx *ctx, const char *path, const char *data, size_t len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), next_tmp_id());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return lt_error(ctx, LT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int err = errno;
            close(fd);
            unlink(tmp);
            return lt_error(ctx, LT_ERR_IO, "cannot write %s: %s", tmp, strerror(err));
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        return lt_error(ctx, LT_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
    return LT_OK;
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

static lt_status load(lt_ctx *ctx, lt_cpu_module *m) {
    dlerror();
    m->handle = dlopen(m->so_path, RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) {
        const char *why = dlerror();
        return lt_error(ctx, LT_ERR_IO, "cannot load compiled module %s: %s", m->so_path, why ? why : "?");
    }
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

static void remove_private_dir(const char *dir, const char *key) {
    char p[4200];
    static const char *const ext[] = {".c", ".so", ".log"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s%s", dir, key, ext[i]);
        unlink(p);
    }
    rmdir(dir);
}

lt_status lt_cpu_compile(lt_ctx *ctx, const char *source, const lt_cpu_options *options, lt_cpu_module **out) {
    if (!source || !out) return lt_error(ctx, LT_ERR_USAGE, "lt_cpu_compile: missing source or output");
    double t0 = now_s();
    lt_cpu_options opt = options ? *options : (lt_cpu_options){0};
    const char *cc = opt.cc && *opt.cc ? opt.cc : "cc";

    /* argv: compiler words + default flags + extra flags (+ -o out src -lm later) */
    char store[8192];
    char *argv[MAX_WORDS + 8];
    int ncc = split_words(cc, store, 2048, argv, 8);
    if (ncc <= 0) return lt_error(ctx, LT_ERR_USAGE, "C compiler command '%s' is empty or too long", cc);
    int nflags = split_words(CPU_FLAGS, store + 2048, 1024, argv + ncc, MAX_WORDS / 2);
    int nextra = split_words(opt.extra_flags, store + 3072, sizeof store - 3072, argv + ncc + nflags, MAX_WORDS / 2 - 2);
    if (nflags < 0 || nextra < 0) return lt_error(ctx, LT_ERR_USAGE, "too many compiler flags: %s", opt.extra_flags);
    int nargs = ncc + nflags + nextra;

    /* compiler identity */
    char *ver_argv[12];
    memcpy(ver_argv, argv, (size_t)ncc * sizeof *argv);
    ver_argv[ncc] = "--version";
    ver_argv[ncc + 1] = NULL;
    lt_strbuf ident = {0};
    int code = 0;
    lt_status s = run_capture(ctx, ver_argv, &ident, &code);
    if (s == LT_OK && code != 0)
        s = lt_error(ctx, LT_ERR_UNSUPPORTED, "C compiler '%s' failed to report its version (exit %d): %s", cc, code,
                     ident.s ? ident.s : "");
    if (s != LT_OK) { lt_sb_free(&ident); return s; }
    cpu_identity(&ident);

    /* cache key */
    lt_sha256 h;
    uint8_t dig[32];
    lt_sha256_init(&h);
    lt_sha256_update(&h, KEY_VERSION, sizeof KEY_VERSION);
    for (int i = ncc; i < nargs; i++) lt_sha256_update(&h, argv[i], strlen(argv[i]) + 1);
    lt_sha256_update(&h, "\n", 1);
    if (ident.s) lt_sha256_update(&h, ident.s, ident.len + 1);
    lt_sha256_update(&h, source, strlen(source));
    lt_sha256_final(&h, dig);
    bool ident_oom = ident.failed;
    lt_sb_free(&ident);
    if (ident_oom) return lt_error(ctx, LT_ERR_NOMEM, "out of memory reading the compiler version");

    lt_cpu_module *m = lt_calloc(ctx, 1, sizeof *m, "CPU module");
    if (!m) return LT_ERR_NOMEM;
    for (int i = 0; i < 32; i++) snprintf(m->info.key + 2 * i, 3, "%02x", dig[i]);
    char key[33];
    snprintf(key, sizeof key, "%.32s", m->info.key); /* file names: the first 128 bits */

    char tmpdir[64] = "";
    const char *dir = opt.cache_dir;
    if (!dir || !*dir) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/lathe-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            lt_mem_free(m);
            return lt_error(ctx, LT_ERR_IO, "cannot create a temporary directory: %s", strerror(errno));
        }
        dir = tmpdir;
    } else if ((s = mkdir_p(ctx, dir)) != LT_OK) {
        lt_mem_free(m);
        return s;
    }
    m->so_path = dup_printf("%s/%s.so", dir, key);
    m->src_path = dup_printf("%s/%s.c", dir, key);
    if (!m->so_path || !m->src_path) {
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (module paths)");
        goto fail;
    }

    struct stat st;
    if (!tmpdir[0] && stat(m->so_path, &st) == 0 && S_ISREG(st.st_mode)) {
        lt_ctx probe = {0};
        if (load(&probe, m) == LT_OK) { /* hit; a file that does not load is rebuilt below */
            if (stat(m->src_path, &st) != 0) write_atomic(&probe, m->src_path, source, strlen(source));
            m->info.cache_hit = true;
            goto loaded;
        }
    }

    /* miss: write the source, compile to a unique temporary name, rename into place */
    if ((s = write_atomic(ctx, m->src_path, source, strlen(source))) != LT_OK) goto fail;
    char tmp_so[4200];
    snprintf(tmp_so, sizeof tmp_so, "%s.tmp.%ld.%u", m->so_path, (long)getpid(), next_tmp_id());
    argv[nargs] = "-o";
    argv[nargs + 1] = tmp_so;
    argv[nargs + 2] = m->src_path;
    argv[nargs + 3] = "-lm";
    argv[nargs + 4] = NULL;
    lt_strbuf log = {0};
    s = run_capture(ctx, argv, &log, &code);
    if (s == LT_OK && code != 0) {
        char *log_path = dup_printf("%s/%s.log", dir, key);
        lt_ctx ignore = {0};
        if (log_path && log.s) write_atomic(&ignore, log_path, log.s, log.len);
        char head[LT_MSG_MAX];
        first_lines(log.s ? log.s : "(no output)\n", 40, head, sizeof head);
        s = lt_error(ctx, LT_ERR_INTERNAL, "the C compiler failed (%s %d) on the generated file %s (full output: %s):\n%s",
                     code < 0 ? "killed, status" : "exit", code, m->src_path, log_path ? log_path : "?", head);
        lt_mem_free(log_path);
        tmpdir[0] = 0; /* keep the files the message names */
    }
    lt_sb_free(&log);
    if (s != LT_OK) {
        unlink(tmp_so);
        goto fail;
    }
    if (rename(tmp_so, m->so_path) != 0) {
        s = lt_error(ctx, LT_ERR_IO, "cannot move the compiled module to %s: %s", m->so_path, strerror(errno));
        unlink(tmp_so);
        goto fail;
    }
    if ((s = load(ctx, m)) != LT_OK) goto fail;

loaded:
    if (tmpdir[0]) { /* private build: nothing to keep */
        remove_private_dir(tmpdir, key);
        lt_mem_free(m->so_path);
        lt_mem_free(m->src_path);
        m->so_path = m->src_path = NULL;
    }
    m->info.so_path = m->so_path;
    m->info.source_path = m->src_path;
    m->info.compile_seconds = now_s() - t0;
    *out = m;
    return LT_OK;

fail:
    if (tmpdir[0]) remove_private_dir(tmpdir, key);
    lt_mem_free(m->so_path);
    lt_mem_free(m->src_path);
    lt_mem_free(m);
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
    if (mod->handle) dlclose(mod->handle);
    lt_mem_free(mod->so_path);
    lt_mem_free(mod->src_path);
    lt_mem_free(mod);
}
