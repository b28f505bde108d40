/* cpu_compile.c — compile generated C with the system compiler into a cached shared object and load
 * it (see cpu.h for the contract: flags, cache key, atomic writes, error reporting).
 *
 * Steps of lt_cpu_compile: identify the compiler (`cc --version`, spawned with posix_spawnp, output
 * read through a pipe) and the CPU (/proc/cpuinfo model name and flags, for -march=native); hash
 * everything that decides the object code; on a hit dlopen <dir>/<key>.so; on a miss write
 * <key>.c atomically, run the compiler into a unique temporary .so, rename it into place, dlopen.
 * A module that calls microkernels is compiled without their headers and linked against the
 * shared prelude library (build_split, cpu_split.c), falling back to the whole module.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../codegen/codegen.h"
#include "../hash.h"
#include "cpu_impl.h"

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

/* The compiler command: its words, the flags, and room for the inputs and output. */
typedef struct ccmd {
    char store[8192];
    char *argv[MAX_WORDS + 12];
    int ncc, nargs; /* compiler words; words before the inputs */
} ccmd;

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Compile src_path (and the extra input, a library to link, when not NULL) into so_path through a
 * unique temporary name. A compiler failure is LT_ERR_INTERNAL naming src_path and quoting the
 * compiler; its full output goes to log_path. */
static lt_status build_so(lt_ctx *ctx, ccmd *c, const char *src_path, const char *extra_input, const char *so_path,
                          const char *log_path) {
    char tmp_so[4200];
    snprintf(tmp_so, sizeof tmp_so, "%s.tmp.%ld.%u", so_path, (long)getpid(), next_tmp_id());
    int n = c->nargs;
    c->argv[n++] = "-o";
    c->argv[n++] = tmp_so;
    c->argv[n++] = (char *)src_path;
    if (extra_input) c->argv[n++] = (char *)extra_input;
    c->argv[n++] = "-lm";
    c->argv[n] = NULL;
    lt_strbuf log = {0};
    int code = 0;
    lt_status s = run_capture(ctx, c->argv, &log, &code);
    if (s == LT_OK && code != 0) {
        lt_ctx ignore = {0};
        if (log.s) write_atomic(&ignore, log_path, log.s, log.len);
        char head[LT_MSG_MAX];
        first_lines(log.s ? log.s : "(no output)\n", 40, head, sizeof head);
        s = lt_error(ctx, LT_ERR_INTERNAL, "the C compiler failed (%s %d) on the generated file %s (full output: %s):\n%s",
                     code < 0 ? "killed, status" : "exit", code, src_path, log_path, head);
    }
    lt_sb_free(&log);
    if (s == LT_OK && rename(tmp_so, so_path) != 0)
        s = lt_error(ctx, LT_ERR_IO, "cannot move the compiled module to %s: %s", so_path, strerror(errno));
    if (s != LT_OK) unlink(tmp_so);
    return s;
}

/* The microkernel route (cpu_split.c): make sure the shared prelude library exists in dir, then
 * compile the module without the microkernel headers, linked against it. Any failure: false (the
 * caller compiles the module whole). */
static bool build_split(ccmd *c, const char *ident, const char *source, const char *dir, const char *key,
                        lt_cpu_module *m) {
    lt_ctx ctx = {0};
    lt_strbuf lib = {0}, tu = {0};
    char *lib_so = NULL, *lib_c = NULL, *lib_log = NULL, *tu_c = NULL, *tu_log = NULL;
    bool ok = false;
    if (lt_cpu_prelude_library_source(&ctx, &lib) != LT_OK || !lt_cpu_split_module(source, lib.s, &tu) || tu.failed)
        goto out;
    lt_sha256 h;
    uint8_t dig[32];
    lt_sha256_init(&h);
    lt_sha256_update(&h, KEY_VERSION "-prelude", sizeof KEY_VERSION "-prelude");
    for (int i = c->ncc; i < c->nargs; i++) lt_sha256_update(&h, c->argv[i], strlen(c->argv[i]) + 1);
    lt_sha256_update(&h, ident, strlen(ident) + 1);
    lt_sha256_update(&h, lib.s, lib.len);
    lt_sha256_final(&h, dig);
    char lkey[33];
    for (int i = 0; i < 16; i++) snprintf(lkey + 2 * i, 3, "%02x", dig[i]);
    char *absdir = realpath(dir, NULL); /* the module records the library's path: make it absolute */
    if (!absdir) goto out;
    lib_so = dup_printf("%s/%s.prelude.so", absdir, lkey);
    free(absdir); /* realpath's buffer comes from the C library's malloc */
    lib_c = dup_printf("%s/%s.prelude.c", dir, lkey);
    lib_log = dup_printf("%s/%s.prelude.log", dir, lkey);
    tu_c = dup_printf("%s/%s.tu.c", dir, key);
    tu_log = dup_printf("%s/%s.tu.log", dir, key);
    if (!lib_so || !lib_c || !lib_log || !tu_c || !tu_log) goto out;
    if (!file_exists(lib_so)) {
        /* one process builds the library while the others (parallel conformance runs) wait for it */
        char *lock = dup_printf("%s/%s.prelude.lock", dir, lkey);
        int fd = lock ? open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
        if (fd >= 0) while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
        bool built = file_exists(lib_so) || (write_atomic(&ctx, lib_c, lib.s, lib.len) == LT_OK &&
                                             build_so(&ctx, c, lib_c, NULL, lib_so, lib_log) == LT_OK);
        if (fd >= 0) close(fd); /* releases the lock */
        lt_mem_free(lock);
        if (!built) goto out;
    }
    if (write_atomic(&ctx, tu_c, tu.s, tu.len) != LT_OK) goto out;
    ok = build_so(&ctx, c, tu_c, lib_so, m->so_path, tu_log) == LT_OK;
    unlink(tu_c);
    if (ok) {
        m->lib_path = lib_so;
        lib_so = NULL;
    }
out:
    lt_sb_free(&lib);
    lt_sb_free(&tu);
    lt_mem_free(lib_so), lt_mem_free(lib_c), lt_mem_free(lib_log), lt_mem_free(tu_c), lt_mem_free(tu_log);
    return ok;
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
    c->ncc = split_words(cc, c->store, 2048, c->argv, 8);
    int nflags = c->ncc > 0 ? split_words(CPU_FLAGS, c->store + 2048, 1024, c->argv + c->ncc, MAX_WORDS / 2) : 0;
    int nextra = c->ncc > 0 ? split_words(opt.extra_flags, c->store + 3072, sizeof c->store - 3072,
                                          c->argv + c->ncc + nflags, MAX_WORDS / 2 - 2) : 0;
    if (c->ncc <= 0) { s = lt_error(ctx, LT_ERR_USAGE, "C compiler command '%s' is empty or too long", cc); goto fail; }
    if (nflags < 0 || nextra < 0) { s = lt_error(ctx, LT_ERR_USAGE, "too many compiler flags: %s", opt.extra_flags); goto fail; }
    c->nargs = c->ncc + nflags + nextra;

    /* compiler identity and this CPU (for -march=native) */
    char *ver_argv[12];
    memcpy(ver_argv, c->argv, (size_t)c->ncc * sizeof *c->argv);
    ver_argv[c->ncc] = "--version";
    ver_argv[c->ncc + 1] = NULL;
    int code = 0;
    s = run_capture(ctx, ver_argv, &ident, &code);
    if (s == LT_OK && code != 0)
        s = lt_error(ctx, LT_ERR_UNSUPPORTED, "C compiler '%s' failed to report its version (exit %d): %s", cc, code,
                     ident.s ? ident.s : "");
    if (s != LT_OK) goto fail;
    cpu_identity(&ident);
    if (ident.failed || !ident.s) { s = lt_error(ctx, LT_ERR_NOMEM, "out of memory reading the compiler version"); goto fail; }

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
    } else if ((s = mkdir_p(ctx, dir)) != LT_OK) {
        goto fail;
    }
    m->so_path = dup_printf("%s/%s.so", dir, key);
    m->src_path = dup_printf("%s/%s.c", dir, key);
    char *log_path = dup_printf("%s/%s.log", dir, key);
    if (!m->so_path || !m->src_path || !log_path) {
        lt_mem_free(log_path);
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (module paths)");
        goto fail;
    }

    if (!tmpdir[0] && file_exists(m->so_path)) {
        lt_ctx probe = {0};
        if (load(&probe, m) == LT_OK) { /* hit; a file that does not load is rebuilt below */
            if (!file_exists(m->src_path)) write_atomic(&probe, m->src_path, source, strlen(source));
            m->info.cache_hit = true;
            lt_mem_free(log_path);
            goto loaded;
        }
    }

    /* miss: write the source; compile (through the prelude library when the module calls
     * microkernels and there is a cache to keep the library in), rename into place, load */
    s = write_atomic(ctx, m->src_path, source, strlen(source));
    if (s == LT_OK && (tmpdir[0] || opt.whole_module || !strstr(source, LT_EMIT_MARK_MICROKERNELS) ||
                       !build_split(c, ident.s, source, dir, key, m)))
        s = build_so(ctx, c, m->src_path, NULL, m->so_path, log_path);
    lt_mem_free(log_path);
    if (s != LT_OK) {
        tmpdir[0] = 0; /* keep the files the message names */
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
    m->info.prelude_library = m->lib_path;
    m->info.compile_seconds = now_s() - t0;
    *out = m;
    lt_sb_free(&ident);
    lt_mem_free(c);
    return LT_OK;

fail:
    if (tmpdir[0]) remove_private_dir(tmpdir, key);
    if (m) {
        if (m->handle) dlclose(m->handle);
        lt_mem_free(m->so_path);
        lt_mem_free(m->src_path);
        lt_mem_free(m->lib_path);
        lt_mem_free(m);
    }
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
    if (mod->handle) dlclose(mod->handle);
    lt_mem_free(mod->so_path);
    lt_mem_free(mod->src_path);
    lt_mem_free(mod->lib_path);
    lt_mem_free(mod);
}
