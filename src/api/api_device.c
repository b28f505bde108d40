/* api_device.c — the public C API of device memory (include/lathe.h, "device memory"): a
 * lathe_device is one instance of a device backend (backend.h), whose alloc, free and copy calls it
 * hands out. On "cuda" the instance retains the device's primary context, so its memory is usable by
 * every compiled model (each retains the same context) and by the CUDA runtime, PyTorch and CuPy in
 * the process; device pointers given to a copy are checked as lathe_compiled_run_device checks them.
 */
#include "api_impl.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda.h"

_Static_assert((int)LATHE_COPY_HOST_TO_DEVICE == (int)LT_COPY_HOST_TO_DEVICE &&
                   (int)LATHE_COPY_DEVICE_TO_HOST == (int)LT_COPY_DEVICE_TO_HOST &&
                   (int)LATHE_COPY_DEVICE_TO_DEVICE == (int)LT_COPY_DEVICE_TO_DEVICE,
               "lathe_copy_kind mirrors lt_copy_dir");

struct lathe_device {
    lt_backend *b;
    lt_cuda *cu; /* the CUDA device behind b (NULL for another device backend) */
    char err[LT_MSG_MAX];
};

lathe_status lathe_device_open(const char *backend, int ordinal, lathe_device **out, char *errbuf,
                               size_t errbuf_size) {
    lt_ctx ctx = {0};
    lt_backend *b = NULL;
    lathe_device *d = NULL;
    if (!backend || !out) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_device_open: backend and out must not be NULL");
        goto fail;
    }
    if (ordinal < 0) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_device_open: device %d does not exist (ordinals start at 0)", ordinal);
        goto fail;
    }
    const lt_backend_vtbl *vt = lt_backend_find(backend);
    if (vt && vt->host_memory) {
        lt_error(&ctx, LT_ERR_UNSUPPORTED, "lathe_device_open: the %s backend runs on host memory: it has no device "
                 "memory to allocate (use host memory, e.g. malloc)", vt->name);
        goto fail;
    }
    lt_backend_options o = {.device = ordinal};
    if (lt_backend_create(&ctx, backend, &o, &b) != LT_OK) goto fail;
    d = lt_calloc(&ctx, 1, sizeof *d, "device handle");
    if (!d) goto fail;
    d->b = b;
    d->cu = lt_backend_cuda_device(b);
    *out = d;
    return LATHE_OK;
fail:
    lt_backend_destroy(b);
    lt_api_copy_err(&ctx, errbuf, errbuf_size);
    return (lathe_status)(ctx.status ? ctx.status : LT_ERR_INTERNAL);
}

void lathe_device_close(lathe_device *d) {
    if (!d) return;
    lt_backend_destroy(d->b);
    lt_mem_free(d);
}

const char *lathe_device_error(const lathe_device *d) { return d ? d->err : ""; }

static lathe_status finish(lathe_device *d, const lt_ctx *ctx) {
    if (ctx->status == LT_OK) return LATHE_OK;
    snprintf(d->err, sizeof d->err, "%s", ctx->msg);
    return (lathe_status)ctx->status;
}

lathe_status lathe_device_alloc(lathe_device *d, size_t bytes, void **out) {
    if (!d) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    d->err[0] = 0;
    void *p = NULL;
    if (!out) lt_error(&ctx, LT_ERR_USAGE, "lathe_device_alloc: out must not be NULL");
    else if (bytes > ((size_t)1 << 48)) lt_error(&ctx, LT_ERR_NOMEM, "lathe_device_alloc: %zu bytes is too large", bytes);
    else if (d->b->vt->alloc(d->b, &ctx, bytes, &p) == LT_OK) *out = p;
    return finish(d, &ctx);
}

void lathe_device_free(lathe_device *d, void *ptr) {
    if (d && ptr) d->b->vt->free(d->b, ptr);
}

lathe_status lathe_device_copy(lathe_device *d, void *dst, const void *src, size_t bytes, lathe_copy_kind kind) {
    if (!d) return LATHE_ERR_USAGE;
    lt_ctx ctx = {0};
    d->err[0] = 0;
    if (kind != LATHE_COPY_HOST_TO_DEVICE && kind != LATHE_COPY_DEVICE_TO_HOST && kind != LATHE_COPY_DEVICE_TO_DEVICE) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_device_copy: unknown copy kind %d", (int)kind);
        return finish(d, &ctx);
    }
    if (!bytes) return LATHE_OK;
    if (!dst || !src) {
        lt_error(&ctx, LT_ERR_USAGE, "lathe_device_copy: the %s is NULL", !src ? "source" : "destination");
        return finish(d, &ctx);
    }
    bool dst_dev = kind != LATHE_COPY_DEVICE_TO_HOST, src_dev = kind != LATHE_COPY_HOST_TO_DEVICE;
    if (d->cu && src_dev && lt_cuda_check_ptr(d->cu, &ctx, src, bytes, "lathe_device_copy: the source") != LT_OK)
        return finish(d, &ctx);
    if (d->cu && dst_dev && lt_cuda_check_ptr(d->cu, &ctx, dst, bytes, "lathe_device_copy: the destination") != LT_OK)
        return finish(d, &ctx);
    const lt_backend_vtbl *vt = d->b->vt;
    if (vt->copy(d->b, &ctx, dst, src, bytes, (lt_copy_dir)kind) == LT_OK) vt->sync(d->b, &ctx); /* device copies are queued */
    return finish(d, &ctx);
}
