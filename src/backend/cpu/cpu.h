/* cpu.h — the CPU backend's compiler driver: generated C source -> shared object -> dlopen, with a
 * content-addressed cache so compiling the same module again is just a dlopen.
 *
 * lt_cpu_compile runs the system C compiler (options->cc, default "cc"; the CLI passes $CC — the
 * library never reads the environment) with
 *     -O3 -march=native -fopenmp -fPIC -shared -std=gnu11 -fno-math-errno -fno-trapping-math -fwrapv
 * (-fno-math-errno lets sqrt & co. vectorize and changes no result; -fno-trapping-math lets GCC turn
 * a float select whose condition may be NaN (`x == x ? e : x`, the clamps of the prelude's exp) into a
 * blend, so tanh, sigmoid, exp rows vectorize, and changes no result either; -fwrapv gives signed integer
 * overflow the two's complement wrap ONNX expects; no -ffast-math: results must match the reference
 * within 1e-4). The cache key is SHA-256 (see hash.h) of: a format version, the source, the flags,
 * the compiler's `--version` output and this CPU's model and feature flags (because of
 * -march=native). Files in the cache folder: <key>.c (the generated source, kept so a compiler
 * error or a profile can point at it), <key>.so and <key>.manifest (the .so's SHA-256 and the
 * prelude library it links). Each is written to a temporary name (<name>.tmp.<pid>.<n>) and
 * renamed, so concurrent compiles of the same key never see a partial file; temporaries older than
 * 30 minutes (a compile killed with -9) are swept on the next miss.
 * Trust (cpu_cache.c): the cache folder and the parents lathe creates are created 0700; a folder
 * owned by another user or writable by group/others is refused (LT_ERR_IO, one line naming the
 * folder, its owner and mode, and what to do). Every .so is loaded through a descriptor opened with
 * O_NOFOLLOW and checked (a regular file owned by the effective user, no group/other write, SHA-256
 * equal to its manifest's), as /proc/self/fd/N: the path is never reopened after the check. A
 * failed check (a planted, tampered, symlinked or stray file, a missing manifest) is a miss: the
 * module is rebuilt and replaced atomically, never loaded. A cache hit costs a `cc --version`
 * spawn, the source hash, the .so's hash and a dlopen.
 * The compiler runs in its own process group, at most cc_timeout_s per run (default 300 s): past it
 * the whole group is killed and the compile fails with LT_ERR_IO naming the compiler and the limit.
 * With cache_dir NULL the module is built in a private temporary folder that is removed once
 * loaded or once the build failed (nothing is cached or left behind).
 * Microkernels: a module whose kernels call the prelude's microkernels (GEMM, convolution) is
 * compiled without those headers and linked against a shared prelude library built once per
 * cache folder (<lkey>.prelude.so with its manifest; see cpu_split.c), by its soname
 * (lathe-prelude-<lkey>.so): the library is checked and loaded first, the same way, and the dynamic
 * loader resolves the module's dependency to it by that name. A cold compile then costs the model's
 * own kernels only. If that route fails for any reason the module is compiled whole, as emitted.
 * A compiler failure returns LT_ERR_INTERNAL naming the generated file and quoting the first 40
 * lines of the compiler's output; a missing compiler returns LT_ERR_UNSUPPORTED.
 * Entry points: lt_cpu_compile, lt_cpu_module_sym, lt_cpu_module_kernels, lt_cpu_module_set_threads,
 * lt_cpu_module_info, lt_cpu_module_free.
 */
#ifndef LT_BACKEND_CPU_H
#define LT_BACKEND_CPU_H

#include "../../base/base.h"

typedef struct lt_cpu_options {
    const char *cc;          /* compiler command, NULL = "cc"; words split on spaces ("ccache gcc") */
    const char *cache_dir;   /* NULL = no cache (temporary directory, removed after loading) */
    const char *extra_flags; /* appended to the default flags (space-separated; part of the key) */
    bool whole_module;       /* compile microkernel headers inside the module, not through the
                                shared prelude library (debugging; see below) */
    double cc_timeout_s;     /* seconds one compiler run may take: 0 = LT_CPU_CC_TIMEOUT_DEFAULT,
                                < 0 = no limit */
} lt_cpu_options;

#define LT_CPU_CC_TIMEOUT_DEFAULT 300.0

/* Host view of the generated `lathe_kernels[]` table (same layout as the prelude's lt_kernel_desc). */
typedef struct lt_cpu_kernel_desc {
    const char *name;
    void (*fn)(void *const *args);
    int n_args;    /* buffers + run-time scalars (the generated lathe_kernels[] table) */
    int n_scalars;
} lt_cpu_kernel_desc;

typedef struct lt_cpu_module_info {
    const char *so_path;     /* the loaded shared object (NULL after a no-cache build: removed) */
    const char *source_path; /* the generated source on disk (NULL after a no-cache build) */
    char key[65];            /* hex SHA-256 cache key */
    const char *prelude_library; /* the shared prelude library the module links (NULL: none) */
    bool cache_hit;
    double compile_seconds;  /* wall time of lt_cpu_compile (hit: hash + dlopen) */
} lt_cpu_module_info;

typedef struct lt_cpu_module lt_cpu_module;

lt_status lt_cpu_compile(lt_ctx *ctx, const char *source, const lt_cpu_options *options, lt_cpu_module **out);
/* A symbol of the module (dlsym), NULL if absent. */
void *lt_cpu_module_sym(const lt_cpu_module *mod, const char *name);
/* The generated kernel table (NULL and *n = 0 when the source had none). */
const lt_cpu_kernel_desc *lt_cpu_module_kernels(const lt_cpu_module *mod, int *n);
/* Find a kernel by name in the table; NULL if absent. */
const lt_cpu_kernel_desc *lt_cpu_module_kernel(const lt_cpu_module *mod, const char *name);
/* Calls the module's lathe_set_threads (n <= 0: OpenMP default); no-op if the module has none. */
void lt_cpu_module_set_threads(lt_cpu_module *mod, int n);
const lt_cpu_module_info *lt_cpu_module_get_info(const lt_cpu_module *mod);
void lt_cpu_module_free(lt_cpu_module *mod); /* NULL is fine */

/* Deploying without a compiler (src/compile/artifact.h). lt_cpu_module_image: the bytes of the
 * shared object the module was loaded from (read through the descriptor it was loaded through) into
 * a new heap buffer (lt_mem_free it); LT_ERR_UNSUPPORTED for a module that links the shared prelude
 * library (an artifact's module must be whole: build it with no cache folder or whole_module).
 * lt_cpu_module_load_image: load such bytes with no compiler run: they are written to a sealed
 * memfd (else a private 0700 temporary folder, removed at once), hashed again through that
 * descriptor and compared with sha256 (hex), then dlopen'ed through it; `what` names the bytes in
 * errors ("module of artifact x.lathe"). */
lt_status lt_cpu_module_image(lt_ctx *ctx, const lt_cpu_module *mod, uint8_t **data, size_t *size);
lt_status lt_cpu_module_load_image(lt_ctx *ctx, const void *data, size_t size, const char *sha256, const char *what,
                                   lt_cpu_module **out);
/* The instruction-set features of this CPU that code built with -march=native may use, as
 * space-separated /proc/cpuinfo flag names in the kernel's spelling ("sse4_2 avx avx2 fma ...";
 * aarch64: its "Features" line), each once; "" when unknown. Also this CPU's model name (may be ""). */
void lt_cpu_isa_features(lt_strbuf *features, lt_strbuf *model);

/* The default flags, for reports ("-O3 -march=native ..."). */
const char *lt_cpu_default_flags(void);

#endif
