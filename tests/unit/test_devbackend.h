/* test_devbackend.h — the core of "testdev", a test backend that wraps the CPU one (the same C kernels)
 * but declares its memory not host memory: allocations are mmap'ed PROT_NONE and opened (open_all)
 * only inside the including test's copy and launch functions, so any host access of device memory
 * crashes the test. Shared by test_plan_device.c and test_run_device.c, which add copy, launch, sync
 * (and graphs, events) and define `tdev_vt`. Define TD_ON_ALLOC() before including to count
 * allocations. Header-only: every function is static. */
#ifndef LT_TEST_DEVBACKEND_H
#define LT_TEST_DEVBACKEND_H

#include "backend/backend.h"

#include <stdlib.h>
#include <sys/mman.h>

#ifndef TD_ON_ALLOC
#define TD_ON_ALLOC() ((void)0)
#endif

enum { TD_MAX_ALLOCS = 512 };
static struct { void *p; size_t n; } allocs[TD_MAX_ALLOCS];
static size_t page; /* set by the test's main: sysconf(_SC_PAGESIZE) */

typedef struct tdev {
    lt_backend base;
    lt_backend *cpu;
} tdev;
static const lt_backend_vtbl tdev_vt;

static void open_all(int prot) {
    for (int i = 0; i < TD_MAX_ALLOCS; i++)
        if (allocs[i].p && mprotect(allocs[i].p, allocs[i].n, prot) != 0) abort();
}

static lt_status td_create(lt_ctx *ctx, const lt_backend_options *opt, lt_backend **out) {
    tdev *t = calloc(1, sizeof *t);
    if (!t) return lt_error(ctx, LT_ERR_NOMEM, "testdev");
    if (lt_backend_cpu.create(ctx, opt, &t->cpu) != LT_OK) {
        free(t);
        return ctx->status;
    }
    t->base.vt = &tdev_vt;
    *out = &t->base;
    return LT_OK;
}
static void td_destroy(lt_backend *b) {
    tdev *t = (tdev *)b;
    lt_backend_destroy(t->cpu);
    free(t);
}
static lt_backend *cpu_of(lt_backend *b) { return ((tdev *)b)->cpu; }
static lt_status td_compile(lt_backend *b, lt_ctx *ctx, const char *src, lt_bmodule **out) {
    return lt_backend_cpu.compile(cpu_of(b), ctx, src, out);
}
static void td_module_free(lt_backend *b, lt_bmodule *m) { lt_backend_cpu.module_free(cpu_of(b), m); }
static lt_status td_load(lt_backend *b, lt_ctx *ctx, lt_bmodule *m, const char *name, lt_bkernel **out) {
    return lt_backend_cpu.load(cpu_of(b), ctx, m, name, out);
}
static lt_status td_alloc(lt_backend *b, lt_ctx *ctx, size_t bytes, void **out) {
    (void)b;
    size_t n = (bytes + page - 1) / page * page;
    if (!n) n = page;
    void *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return lt_error(ctx, LT_ERR_NOMEM, "testdev: mmap of %zu bytes", n);
    for (int i = 0; i < TD_MAX_ALLOCS; i++)
        if (!allocs[i].p) {
            allocs[i].p = p;
            allocs[i].n = n;
            TD_ON_ALLOC();
            *out = p;
            return LT_OK;
        }
    munmap(p, n);
    return lt_error(ctx, LT_ERR_NOMEM, "testdev: too many allocations");
}
static void td_free(lt_backend *b, void *p) {
    (void)b;
    for (int i = 0; p && i < TD_MAX_ALLOCS; i++)
        if (allocs[i].p == p) {
            munmap(p, allocs[i].n);
            allocs[i].p = NULL;
        }
}

#endif
