/* cpu_backend.c — the CPU backend's vtable (backend.h) over the compiler driver (cpu.h).
 *
 * Memory is host memory, 64-byte aligned (a cache line, and an AVX-512 vector); copies are memcpy
 * in every direction; launch calls the kernel function with the argument array after checking the
 * count against the module's kernel table; sync has nothing to wait for; the thread count given at
 * creation is applied to each module compiled (its lathe_set_threads). Ceilings come from the
 * profiler (src/profile): read from the cache directory when measured before, else measured
 * (and saved there); kept for the life of the backend instance. The environment is left alone: the
 * OpenMP wait policy (idle threads sleeping) is the CLI's default (tools/lathe.c), not the library's.
 */
#include "../backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../profile/profile.h"
#include "cpu.h"

typedef struct cpu_backend {
    lt_backend base;
    lt_cpu_options opt;
    char *cc, *cache_dir, *extra_flags; /* owned copies of the option strings */
    int threads;
    bool have_ceilings;
    lt_backend_ceilings ceil;
} cpu_backend;

static char *dup_opt(const char *s, bool *oom) {
    if (!s) return NULL;
    char *d = lt_mem_strdup(s);
    if (!d) *oom = true;
    return d;
}

static void cpu_destroy(lt_backend *b) {
    cpu_backend *c = (cpu_backend *)b;
    lt_mem_free(c->cc);
    lt_mem_free(c->cache_dir);
    lt_mem_free(c->extra_flags);
    lt_mem_free(c);
}

static lt_status cpu_create(lt_ctx *ctx, const lt_backend_options *opt, lt_backend **out) {
    cpu_backend *c = lt_calloc(ctx, 1, sizeof *c, "CPU backend");
    if (!c) return LT_ERR_NOMEM;
    c->base.vt = &lt_backend_cpu;
    bool oom = false;
    c->cc = dup_opt(opt->cc, &oom);
    c->cache_dir = dup_opt(opt->cache_dir, &oom);
    c->extra_flags = dup_opt(opt->extra_flags, &oom);
    if (oom) {
        cpu_destroy(&c->base);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CPU backend options)");
    }
    c->opt = (lt_cpu_options){.cc = c->cc, .cache_dir = c->cache_dir, .extra_flags = c->extra_flags,
                              .cc_timeout_s = opt->cc_timeout_s, .whole_module = opt->whole_module};
    c->threads = opt->threads > 0 ? opt->threads : 0;
    *out = &c->base;
    return LT_OK;
}

static lt_status cpu_compile(lt_backend *b, lt_ctx *ctx, const char *source, lt_bmodule **out) {
    cpu_backend *c = (cpu_backend *)b;
    lt_cpu_module *m;
    LT_TRY(lt_cpu_compile(ctx, source, &c->opt, &m));
    lt_cpu_module_set_threads(m, c->threads);
    *out = (lt_bmodule *)m;
    return LT_OK;
}

static void cpu_module_free(lt_backend *b, lt_bmodule *m) { lt_cpu_module_free((lt_cpu_module *)m); }

static lt_status cpu_load(lt_backend *b, lt_ctx *ctx, lt_bmodule *m, const char *name, lt_bkernel **out) {
    const lt_cpu_kernel_desc *d = lt_cpu_module_kernel((lt_cpu_module *)m, name);
    if (!d || !d->fn) return lt_error(ctx, LT_ERR_INVALID, "compiled module has no kernel named %s", name ? name : "(null)");
    *out = (lt_bkernel *)(void *)d;
    return LT_OK;
}

static lt_status cpu_alloc(lt_backend *b, lt_ctx *ctx, size_t bytes, void **out) {
    size_t size = (bytes + 63) & ~(size_t)63;
    if (size < bytes) return lt_error(ctx, LT_ERR_NOMEM, "allocation of %zu bytes overflows", bytes);
    void *p = aligned_alloc(64, size ? size : 64);
    if (!p) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu bytes of CPU buffer)", bytes);
    *out = p;
    return LT_OK;
}

static void cpu_free(lt_backend *b, void *p) { free(p); }

static lt_status cpu_copy(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    if (bytes && (!dst || !src)) return lt_error(ctx, LT_ERR_USAGE, "copy of %zu bytes with a NULL pointer", bytes);
    if (bytes) memmove(dst, src, bytes);
    return LT_OK;
}

static lt_status cpu_launch(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n_args) {
    const lt_cpu_kernel_desc *d = (const lt_cpu_kernel_desc *)(const void *)k;
    if (!d || !d->fn) return lt_error(ctx, LT_ERR_USAGE, "launch of a NULL kernel");
    if (n_args != d->n_args)
        return lt_error(ctx, LT_ERR_USAGE, "kernel %s takes %d buffers, launched with %d", d->name, d->n_args, n_args);
    for (int i = 0; i < n_args - d->n_scalars; i++) /* the scalars after the buffers may be 0 */
        if (!args[i]) return lt_error(ctx, LT_ERR_USAGE, "kernel %s: buffer argument %d is NULL", d->name, i);
    d->fn(args);
    return LT_OK;
}

static lt_status cpu_sync(lt_backend *b, lt_ctx *ctx) { return LT_OK; }

static lt_status cpu_ceilings(lt_backend *b, lt_ctx *ctx, lt_backend_ceilings *out) {
    cpu_backend *c = (cpu_backend *)b;
    if (!c->have_ceilings) {
        lt_ceilings m; /* cached per thread count in the backend's cache directory */
        LT_TRY(lt_ceilings_get(ctx, c->cache_dir, c->threads, false, &m, NULL));
        c->ceil.peak_gflops = m.peak_gflops;
        c->ceil.mem_gbps = m.mem_gbps;
        c->have_ceilings = true;
    }
    *out = c->ceil;
    return LT_OK;
}

/* The host CPU as it is (target.h): every capability on. */
static lt_status cpu_target(lt_ctx *ctx, lt_backend *b, const lt_target_options *opt, lt_target *out) {
    (void)ctx, (void)b;
    lt_target_host(opt, out);
    return LT_OK;
}

static void cpu_module_info(lt_backend *b, const lt_bmodule *m, lt_bmodule_info *out) {
    (void)b;
    const lt_cpu_module_info *mi = lt_cpu_module_get_info((const lt_cpu_module *)m);
    out->cache_hit = mi->cache_hit;
    snprintf(out->key, sizeof out->key, "%s", mi->key);
    snprintf(out->source_path, sizeof out->source_path, "%s", mi->source_path ? mi->source_path : "");
}

static void cpu_module_set_threads(lt_backend *b, lt_bmodule *m, int n) {
    (void)b;
    lt_cpu_module_set_threads((lt_cpu_module *)m, n);
}

static lt_status cpu_module_image(lt_backend *b, lt_ctx *ctx, const lt_bmodule *m, uint8_t **data, size_t *size) {
    (void)b;
    return lt_cpu_module_image(ctx, (const lt_cpu_module *)m, data, size);
}

/* A prebuilt whole module: loaded from memory, no compiler run (the source hash was checked by the
 * compile, which emitted the same source this module was built from). */
static lt_status cpu_load_prebuilt(lt_backend *b, lt_ctx *ctx, const char *source, const char *source_sha256,
                                   const char *image_sha256, const void *bytes, size_t size, lt_bmodule **out) {
    cpu_backend *c = (cpu_backend *)b;
    (void)source, (void)source_sha256;
    lt_cpu_module *m;
    LT_TRY(lt_cpu_module_load_image(ctx, bytes, size, image_sha256, "prebuilt module", &m));
    lt_cpu_module_set_threads(m, c->threads);
    *out = (lt_bmodule *)m;
    return LT_OK;
}

const lt_backend_vtbl lt_backend_cpu = {
    .name = "cpu",
    .lang = &lt_lang_c,
    .host_memory = true,
    .target = cpu_target,
    .module_info = cpu_module_info,
    .module_set_threads = cpu_module_set_threads,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .compile = cpu_compile,
    .module_free = cpu_module_free,
    .load = cpu_load,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .launch = cpu_launch,
    .sync = cpu_sync,
    .ceilings = cpu_ceilings,
    .module_image = cpu_module_image,
    .load_prebuilt = cpu_load_prebuilt,
};
