/* cuda.c — the driver API loaded with dlopen (see cuda.h): opening a device, memory, the
 * stream, launches, events and graph capture.
 *
 * Symbols are looked up by their versioned names (cuMemAlloc_v2, cuStreamBeginCapture_v2, ...), the
 * ABI a driver keeps forever; where a newer name exists (cuEventElapsedTime_v2 in CUDA 12.8+) the
 * older one is the fallback. A missing required symbol means a driver too old for lathe and is
 * reported as unavailable, like a missing library. The library is opened RTLD_NODELETE: other users
 * of the primary context (cuBLAS, PyTorch) may still hold the driver when lathe closes its handle.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_impl.h"

#define UNAVAILABLE "CUDA backend unavailable: "

lt_status lt_cuda_fail_(lt_cuda *cu, lt_ctx *ctx, cu_result r, const char *call, const char *fmt, ...) {
    const char *name = NULL, *text = NULL;
    if (cu && cu->api.get_error_name) cu->api.get_error_name(r, &name);
    if (cu && cu->api.get_error_string) cu->api.get_error_string(r, &text);
    char what[512] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    lt_status s = r == CU_ERROR_OUT_OF_MEMORY ? LT_ERR_NOMEM
                  : r == CU_ERROR_NO_DEVICE   ? LT_ERR_UNSUPPORTED
                                              : LT_ERR_INTERNAL;
    char num[32];
    snprintf(num, sizeof num, "CUDA error %d", r);
    return lt_error(ctx, s, "CUDA: %s%s%s%s failed: %s%s%s", call, what[0] ? " (" : "", what, what[0] ? ")" : "",
                    name ? name : num, text ? ": " : "", text ? text : "");
}

lt_status lt_cuda_bind_(lt_cuda *cu, lt_ctx *ctx) {
    if (!cu) return lt_error(ctx, LT_ERR_USAGE, "CUDA: no device (NULL lt_cuda)");
    CU_CALL(cu, ctx, cu->api.ctx_set_current(cu->context), "cuCtxSetCurrent", "device %d", cu->info.ordinal);
    return LT_OK;
}

/* ---- opening ---- */
typedef struct sym {
    void **slot;
    const char *names[3]; /* tried in order */
} sym;

static bool load_symbols(lt_cuda *cu, const char **missing) {
    cu_api *a = &cu->api;
    sym syms[] = {
        {(void **)&a->init, {"cuInit"}},
        {(void **)&a->driver_version, {"cuDriverGetVersion"}},
        {(void **)&a->get_error_name, {"cuGetErrorName"}},
        {(void **)&a->get_error_string, {"cuGetErrorString"}},
        {(void **)&a->device_count, {"cuDeviceGetCount"}},
        {(void **)&a->device_get, {"cuDeviceGet"}},
        {(void **)&a->device_attr, {"cuDeviceGetAttribute"}},
        {(void **)&a->device_name, {"cuDeviceGetName"}},
        {(void **)&a->device_total_mem, {"cuDeviceTotalMem_v2"}},
        {(void **)&a->primary_retain, {"cuDevicePrimaryCtxRetain"}},
        {(void **)&a->primary_release, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
        {(void **)&a->ctx_set_current, {"cuCtxSetCurrent"}},
        {(void **)&a->mem_alloc, {"cuMemAlloc_v2"}},
        {(void **)&a->mem_free, {"cuMemFree_v2"}},
        {(void **)&a->mem_get_info, {"cuMemGetInfo_v2"}},
        {(void **)&a->memcpy_htod_async, {"cuMemcpyHtoDAsync_v2"}},
        {(void **)&a->memcpy_dtoh_async, {"cuMemcpyDtoHAsync_v2"}},
        {(void **)&a->memcpy_dtod_async, {"cuMemcpyDtoDAsync_v2"}},
        {(void **)&a->memset_d8_async, {"cuMemsetD8Async"}},
        {(void **)&a->module_load_data, {"cuModuleLoadData"}},
        {(void **)&a->module_unload, {"cuModuleUnload"}},
        {(void **)&a->module_get_function, {"cuModuleGetFunction"}},
        {(void **)&a->func_get_attr, {"cuFuncGetAttribute"}},
        {(void **)&a->func_set_attr, {"cuFuncSetAttribute"}},
        {(void **)&a->launch_kernel, {"cuLaunchKernel"}},
        {(void **)&a->stream_create, {"cuStreamCreate"}},
        {(void **)&a->stream_destroy, {"cuStreamDestroy_v2"}},
        {(void **)&a->stream_sync, {"cuStreamSynchronize"}},
        {(void **)&a->event_create, {"cuEventCreate"}},
        {(void **)&a->event_destroy, {"cuEventDestroy_v2"}},
        {(void **)&a->event_record, {"cuEventRecord"}},
        {(void **)&a->event_sync, {"cuEventSynchronize"}},
        {(void **)&a->event_elapsed, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
        {(void **)&a->begin_capture, {"cuStreamBeginCapture_v2"}},
        {(void **)&a->end_capture, {"cuStreamEndCapture"}},
        {(void **)&a->graph_instantiate, {"cuGraphInstantiateWithFlags"}},
        {(void **)&a->graph_launch, {"cuGraphLaunch"}},
        {(void **)&a->graph_exec_destroy, {"cuGraphExecDestroy"}},
        {(void **)&a->graph_destroy, {"cuGraphDestroy"}},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        for (int j = 0; j < 3 && syms[i].names[j] && !*syms[i].slot; j++) *syms[i].slot = dlsym(cu->lib, syms[i].names[j]);
        if (!*syms[i].slot) {
            *missing = syms[i].names[0];
            return false;
        }
    }
    /* optional: checking and ordering runs on the caller's device memory (lt_cuda_check_ptr,
     * lt_cuda_wait_stream say what they skip without them) */
    a->pointer_get_attributes = (cu_result(*)(unsigned, int *, void **, cu_ptr))dlsym(cu->lib, "cuPointerGetAttributes");
    a->ctx_synchronize = (cu_result(*)(void))dlsym(cu->lib, "cuCtxSynchronize");
    a->stream_wait_event = (cu_result(*)(cu_stream, cu_event, unsigned))dlsym(cu->lib, "cuStreamWaitEvent");
    a->graph_exec_update = (cu_result(*)(cu_graph_exec, cu_graph, void *))dlsym(cu->lib, "cuGraphExecUpdate_v2");
    return true;
}

static void close_partial(lt_cuda *cu) {
    if (cu->wait_event) cu->api.event_destroy(cu->wait_event);
    if (cu->stream) cu->api.stream_destroy(cu->stream);
    if (cu->context) cu->api.primary_release(cu->dev);
    if (cu->lib) dlclose(cu->lib);
    lt_mem_free(cu->cache_dir);
    lt_mem_free(cu->nvrtc_path);
    lt_mem_free(cu);
}

lt_status lt_cuda_open(lt_ctx *ctx, const lt_cuda_options *opt, lt_cuda **out) {
    lt_cuda_options none = {0};
    if (!opt) opt = &none;
    if (!out) return lt_error(ctx, LT_ERR_USAGE, "lt_cuda_open: no output");
    const char *libname = opt->libcuda ? opt->libcuda : "libcuda.so.1";
    /* look before allocating: the common no-GPU case keeps nothing */
    void *lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) return lt_error(ctx, LT_ERR_UNSUPPORTED, UNAVAILABLE "%s not found", libname);
    lt_cuda *cu = lt_mem_calloc(1, sizeof *cu);
    if (!cu) {
        dlclose(lib);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA device handle)");
    }
    cu->lib = lib;
    const char *missing = NULL;
    if (!load_symbols(cu, &missing)) {
        lt_status s = lt_error(ctx, LT_ERR_UNSUPPORTED, UNAVAILABLE "%s lacks %s (driver too old)", libname, missing);
        close_partial(cu);
        return s;
    }
    cu_api *a = &cu->api;
    cu_result r = a->init(0);
    int count = 0;
    if (r == CU_SUCCESS) r = a->device_count(&count);
    if (r == CU_ERROR_NO_DEVICE || (r == CU_SUCCESS && count == 0)) {
        close_partial(cu);
        return lt_error(ctx, LT_ERR_UNSUPPORTED, UNAVAILABLE "no CUDA device");
    }
    if (r != CU_SUCCESS) {
        const char *name = NULL, *text = NULL;
        a->get_error_name(r, &name);
        a->get_error_string(r, &text);
        lt_status s = lt_error(ctx, LT_ERR_UNSUPPORTED, UNAVAILABLE "cuInit failed: %s%s%s", name ? name : "unknown error",
                               text ? ": " : "", text ? text : "");
        close_partial(cu);
        return s;
    }
    if (opt->device < 0 || opt->device >= count) {
        close_partial(cu);
        return lt_error(ctx, LT_ERR_USAGE, "CUDA device %d does not exist (%d device%s)", opt->device, count,
                        count == 1 ? "" : "s");
    }
    lt_cuda_info *in = &cu->info;
    in->ordinal = opt->device;
    lt_status s = LT_OK;
#define STEP(expr, call)                                                                           \
    if (s == LT_OK && (r = (expr)) != CU_SUCCESS) s = lt_cuda_fail_(cu, ctx, r, call, "device %d", opt->device)
    STEP(a->device_get(&cu->dev, opt->device), "cuDeviceGet");
    STEP(a->device_name(in->name, (int)sizeof in->name - 1, cu->dev), "cuDeviceGetName");
    size_t total = 0;
    STEP(a->device_total_mem(&total, cu->dev), "cuDeviceTotalMem");
    in->total_mem = (int64_t)total;
    struct { int *v; int attr; } attrs[] = {
        {&in->cc_major, CU_ATTR_CC_MAJOR}, {&in->cc_minor, CU_ATTR_CC_MINOR},
        {&in->sm_count, CU_ATTR_MULTIPROCESSOR_COUNT}, {&in->max_threads_per_block, CU_ATTR_MAX_THREADS_PER_BLOCK},
        {&in->max_smem_per_block, CU_ATTR_MAX_SMEM_PER_BLOCK_OPTIN}, {&in->l2_bytes, CU_ATTR_L2_CACHE_SIZE},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) STEP(a->device_attr(attrs[i].v, attrs[i].attr, cu->dev), "cuDeviceGetAttribute");
    /* informative only: some drivers no longer report clocks */
    if (s == LT_OK) {
        if (a->device_attr(&in->clock_khz, CU_ATTR_CLOCK_RATE, cu->dev) != CU_SUCCESS) in->clock_khz = 0;
        if (a->device_attr(&in->mem_clock_khz, CU_ATTR_MEMORY_CLOCK_RATE, cu->dev) != CU_SUCCESS) in->mem_clock_khz = 0;
        if (a->device_attr(&in->bus_width_bits, CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH, cu->dev) != CU_SUCCESS) in->bus_width_bits = 0;
        if (a->driver_version(&in->driver_version) != CU_SUCCESS) in->driver_version = 0;
    }
    STEP(a->primary_retain(&cu->context, cu->dev), "cuDevicePrimaryCtxRetain");
    STEP(a->ctx_set_current(cu->context), "cuCtxSetCurrent");
    STEP(a->stream_create(&cu->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
#undef STEP
    if (s == LT_OK) {
        if (opt->arch && *opt->arch)
            snprintf(in->arch, sizeof in->arch, "%s", opt->arch);
        else /* Hopper's own target with its architecture-specific instructions (wgmma, setmaxnreg) */
            snprintf(in->arch, sizeof in->arch, "sm_%d%d%s", in->cc_major, in->cc_minor,
                     in->cc_major == 9 && in->cc_minor == 0 ? "a" : "");
        if (opt->cache_dir && !(cu->cache_dir = lt_mem_strdup(opt->cache_dir)))
            s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA cache directory name)");
        if (s == LT_OK && opt->nvrtc && *opt->nvrtc && !(cu->nvrtc_path = lt_mem_strdup(opt->nvrtc)))
            s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (NVRTC library name)");
    }
    if (s != LT_OK) {
        close_partial(cu);
        return s;
    }
    *out = cu;
    return LT_OK;
}

void lt_cuda_close(lt_cuda *cu) {
    if (!cu) return;
    if (cu->api.ctx_set_current(cu->context) == CU_SUCCESS) cu->api.stream_sync(cu->stream);
    if (cu->kernels_free) cu->kernels_free(cu);
    lt_nvrtc_close(cu->nv);
    close_partial(cu);
}

const lt_cuda_info *lt_cuda_get_info(const lt_cuda *cu) { return cu ? &cu->info : NULL; }
void *lt_cuda_native_stream(const lt_cuda *cu) { return cu ? (void *)cu->stream : NULL; }

lt_status lt_cuda_nvrtc(lt_cuda *cu, lt_ctx *ctx, lt_nvrtc **out) {
    if (!cu->nv) LT_TRY(lt_nvrtc_open_path(ctx, cu->nvrtc_path, &cu->nv));
    *out = cu->nv;
    return LT_OK;
}

/* ---- memory ---- */
static cu_ptr dptr(const void *p) { return (cu_ptr)(uintptr_t)p; }

lt_status lt_cuda_alloc(lt_cuda *cu, lt_ctx *ctx, size_t bytes, void **out) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    cu_ptr p = 0;
    CU_CALL(cu, ctx, cu->api.mem_alloc(&p, bytes ? bytes : 1), "cuMemAlloc", "%zu bytes", bytes);
    *out = (void *)(uintptr_t)p;
    return LT_OK;
}

void lt_cuda_free(lt_cuda *cu, void *p) {
    if (!cu || !p) return;
    if (cu->api.ctx_set_current(cu->context) == CU_SUCCESS) cu->api.mem_free(dptr(p));
}

lt_status lt_cuda_copy(lt_cuda *cu, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    if (!bytes) return LT_OK;
    if (!dst || !src) return lt_error(ctx, LT_ERR_USAGE, "CUDA copy of %zu bytes with a NULL pointer", bytes);
    LT_TRY(lt_cuda_bind_(cu, ctx));
    const cu_api *a = &cu->api;
    switch (dir) {
    case LT_COPY_HOST_TO_DEVICE:
        CU_CALL(cu, ctx, a->memcpy_htod_async(dptr(dst), src, bytes, cu->stream), "cuMemcpyHtoDAsync", "%zu bytes", bytes);
        CU_CALL(cu, ctx, a->stream_sync(cu->stream), "cuStreamSynchronize", "after a %zu-byte upload", bytes);
        return LT_OK;
    case LT_COPY_DEVICE_TO_HOST:
        CU_CALL(cu, ctx, a->memcpy_dtoh_async(dst, dptr(src), bytes, cu->stream), "cuMemcpyDtoHAsync", "%zu bytes", bytes);
        CU_CALL(cu, ctx, a->stream_sync(cu->stream), "cuStreamSynchronize", "after a %zu-byte download", bytes);
        return LT_OK;
    case LT_COPY_DEVICE_TO_DEVICE:
        CU_CALL(cu, ctx, a->memcpy_dtod_async(dptr(dst), dptr(src), bytes, cu->stream), "cuMemcpyDtoDAsync", "%zu bytes", bytes);
        return LT_OK;
    }
    return lt_error(ctx, LT_ERR_USAGE, "CUDA copy: unknown direction %d", (int)dir);
}

lt_status lt_cuda_copy_async(lt_cuda *cu, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    if (!bytes) return LT_OK;
    if (!dst || !src) return lt_error(ctx, LT_ERR_USAGE, "CUDA copy of %zu bytes with a NULL pointer", bytes);
    LT_TRY(lt_cuda_bind_(cu, ctx));
    const cu_api *a = &cu->api;
    switch (dir) {
    case LT_COPY_HOST_TO_DEVICE:
        CU_CALL(cu, ctx, a->memcpy_htod_async(dptr(dst), src, bytes, cu->stream), "cuMemcpyHtoDAsync", "%zu bytes", bytes);
        return LT_OK;
    case LT_COPY_DEVICE_TO_HOST:
        CU_CALL(cu, ctx, a->memcpy_dtoh_async(dst, dptr(src), bytes, cu->stream), "cuMemcpyDtoHAsync", "%zu bytes", bytes);
        return LT_OK;
    case LT_COPY_DEVICE_TO_DEVICE:
        CU_CALL(cu, ctx, a->memcpy_dtod_async(dptr(dst), dptr(src), bytes, cu->stream), "cuMemcpyDtoDAsync", "%zu bytes", bytes);
        return LT_OK;
    }
    return lt_error(ctx, LT_ERR_USAGE, "CUDA copy: unknown direction %d", (int)dir);
}

lt_status lt_cuda_memset(lt_cuda *cu, lt_ctx *ctx, void *p, unsigned char byte, size_t bytes) {
    if (!bytes) return LT_OK;
    if (!p) return lt_error(ctx, LT_ERR_USAGE, "CUDA memset of %zu bytes at NULL", bytes);
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.memset_d8_async(dptr(p), byte, bytes, cu->stream), "cuMemsetD8Async", "%zu bytes", bytes);
    return LT_OK;
}

lt_status lt_cuda_mem_info(lt_cuda *cu, lt_ctx *ctx, size_t *free_bytes, size_t *total_bytes) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    size_t f = 0, t = 0;
    CU_CALL(cu, ctx, cu->api.mem_get_info(&f, &t), "cuMemGetInfo", "device %d", cu->info.ordinal);
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return LT_OK;
}

lt_status lt_cuda_check_ptr(lt_cuda *cu, lt_ctx *ctx, const void *p, size_t bytes, const char *what) {
    if (!bytes) return LT_OK;
    if (!p) return lt_error(ctx, LT_ERR_USAGE, "%s is NULL", what);
    if (!cu || !cu->api.pointer_get_attributes) return LT_OK; /* an old driver: not checked */
    LT_TRY(lt_cuda_bind_(cu, ctx));
    int attrs[5] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_CONTEXT,
                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    /* unsigned int, int, CUcontext, CUdeviceptr, size_t: each written at the start of its 8 bytes */
    union { unsigned u; int i; void *p; unsigned long long ull; size_t z; } v[5];
    memset(v, 0, sizeof v);
    void *data[5] = {&v[0], &v[1], &v[2], &v[3], &v[4]};
    v[1].i = -1;
    /* a pointer the driver does not know is no error here: its attributes stay 0 */
    CU_CALL(cu, ctx, cu->api.pointer_get_attributes(5, attrs, data, dptr(p)), "cuPointerGetAttributes", "%s at %p", what, p);
    unsigned type = v[0].u;
    if (type == 0)
        return lt_error(ctx, LT_ERR_USAGE, "%s (%p) is not CUDA device memory (host memory? CUDA does not know the "
                        "address)", what, p);
    if (type == CU_MEMORYTYPE_HOST)
        return lt_error(ctx, LT_ERR_USAGE, "%s (%p) is page-locked host memory, not CUDA device memory", what, p);
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return lt_error(ctx, LT_ERR_USAGE, "%s (%p) is not CUDA device memory (memory type %u)", what, p, type);
    if (v[1].i >= 0 && v[1].i != cu->info.ordinal)
        return lt_error(ctx, LT_ERR_USAGE, "%s (%p) is memory of CUDA device %d; the model runs on device %d", what, p,
                        v[1].i, cu->info.ordinal);
    if (v[2].p && v[2].p != (void *)cu->context)
        return lt_error(ctx, LT_ERR_USAGE, "%s (%p) belongs to another CUDA context than the device's primary context "
                        "(the one lathe, PyTorch and CuPy share)", what, p);
    unsigned long long start = v[3].ull, size = v[4].z, at = (unsigned long long)(uintptr_t)p;
    if (start && size && (at < start || bytes > size - (at - start)))
        return lt_error(ctx, LT_ERR_USAGE, "%s: %zu bytes at %p run past the end of its allocation (%llu bytes at 0x%llx)",
                        what, bytes, p, size, start);
    return LT_OK;
}

lt_status lt_cuda_wait_stream(lt_cuda *cu, lt_ctx *ctx, void *stream) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    const cu_api *a = &cu->api;
    if (!stream) {
        if (!a->ctx_synchronize)
            return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA: the driver lacks cuCtxSynchronize: pass the stream that "
                            "wrote the inputs");
        CU_CALL(cu, ctx, a->ctx_synchronize(), "cuCtxSynchronize", "%s", "before reading the caller's device memory");
        return LT_OK;
    }
    if ((cu_stream)stream == cu->stream) return LT_OK; /* ours: already in order */
    if (!a->stream_wait_event) {
        CU_CALL(cu, ctx, a->stream_sync((cu_stream)stream), "cuStreamSynchronize", "%s", "the caller's stream");
        return LT_OK;
    }
    if (!cu->wait_event)
        CU_CALL(cu, ctx, a->event_create(&cu->wait_event, CU_EVENT_DISABLE_TIMING), "cuEventCreate", "%s",
                "ordering after the caller's stream");
    CU_CALL(cu, ctx, a->event_record(cu->wait_event, (cu_stream)stream), "cuEventRecord", "%s", "on the caller's stream");
    CU_CALL(cu, ctx, a->stream_wait_event(cu->stream, cu->wait_event, 0), "cuStreamWaitEvent", "%s", "the caller's stream");
    return LT_OK;
}

lt_status lt_cuda_sync(lt_cuda *cu, lt_ctx *ctx) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.stream_sync(cu->stream), "cuStreamSynchronize",
            "a kernel or copy queued before this point failed");
    return LT_OK;
}

/* ---- launches ---- */
const char *lt_cuda_func_name(const lt_cuda_func *f) { return f ? f->name : NULL; }

bool lt_cuda_func_shape(const lt_cuda_func *f, unsigned grid[3], unsigned block[3], int *n_params) {
    if (!f || !f->has_shape) return false;
    for (int i = 0; i < 3; i++) grid[i] = f->grid[i], block[i] = f->block[i];
    if (n_params) *n_params = f->n_params;
    return true;
}

lt_status lt_cuda_func_get_attrs(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_func *f, lt_cuda_func_attrs *out) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    lt_cuda_func_attrs a = {0};
    struct { int *v; int attr; } q[] = {
        {&a.regs, CU_FUNC_ATTR_NUM_REGS}, {&a.static_smem, CU_FUNC_ATTR_SHARED_SIZE_BYTES},
        {&a.local_bytes, CU_FUNC_ATTR_LOCAL_SIZE_BYTES}, {&a.max_threads, CU_FUNC_ATTR_MAX_THREADS_PER_BLOCK},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        CU_CALL(cu, ctx, cu->api.func_get_attr(q[i].v, q[i].attr, f->fn), "cuFuncGetAttribute", "kernel %s", f->name);
    *out = a;
    return LT_OK;
}

lt_status lt_cuda_func_set_shared(lt_cuda *cu, lt_ctx *ctx, lt_cuda_func *f, int bytes) {
    if (bytes <= f->max_dyn_shared) return LT_OK;
    if (bytes > cu->info.max_smem_per_block)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "kernel %s needs %d bytes of shared memory; %s allows %d per block",
                        f->name, bytes, cu->info.name, cu->info.max_smem_per_block);
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.func_set_attr(f->fn, CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes), "cuFuncSetAttribute",
            "kernel %s, %d bytes of dynamic shared memory", f->name, bytes);
    f->max_dyn_shared = bytes;
    return LT_OK;
}

lt_status lt_cuda_launch(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_func *f, const unsigned grid[3], const unsigned block[3],
                         unsigned shared_bytes, void **params) {
    if (!f) return lt_error(ctx, LT_ERR_USAGE, "CUDA launch of a NULL kernel");
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2]) /* an empty tensor: nothing to do */
        return LT_OK;
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx,
            cu->api.launch_kernel(f->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, cu->stream,
                                  params, NULL),
            "cuLaunchKernel", "kernel %s, grid (%u, %u, %u), block (%u, %u, %u), %u bytes of shared memory", f->name, grid[0],
            grid[1], grid[2], block[0], block[1], block[2], shared_bytes);
    return LT_OK;
}

lt_status lt_cuda_launch_args(lt_cuda *cu, lt_ctx *ctx, const lt_cuda_func *f, void *const *bufs, int n) {
    if (!f) return lt_error(ctx, LT_ERR_USAGE, "CUDA launch of a NULL kernel");
    if (!f->has_shape)
        return lt_error(ctx, LT_ERR_USAGE, "kernel %s has no launch shape in its module's source (emitted kernels "
                        "carry one in their header comment; launch others with lt_cuda_launch)", f->name);
    if (n != f->n_params)
        return lt_error(ctx, LT_ERR_USAGE, "kernel %s takes %d buffers, launched with %d", f->name, f->n_params, n);
    enum { MAXP = 512 };
    if (n > MAXP) return lt_error(ctx, LT_ERR_UNSUPPORTED, "kernel %s: %d parameters (at most %d)", f->name, n, MAXP);
    void *params[MAXP];
    for (int i = 0; i < n; i++) {
        if (!bufs[i] && i < n - f->n_scalars) /* a run-time scalar after the buffers may be 0 */
            return lt_error(ctx, LT_ERR_USAGE, "kernel %s: buffer argument %d is NULL", f->name, i);
        params[i] = (void *)&bufs[i];
    }
    unsigned grid[3]; /* a grid axis that is a run-time scalar: its value (in the slot after the buffers) times grid[a] */
    for (int a = 0; a < 3; a++) {
        grid[a] = f->grid[a];
        if (f->grid_scalar[a] < 0) continue;
        long long v = (long long)(intptr_t)bufs[n - f->n_scalars + f->grid_scalar[a]] * (long long)f->grid[a];
        if (v < 0 || v > 0x7fffffffLL)
            return lt_error(ctx, LT_ERR_INVALID, "kernel %s: grid axis %c of %lld blocks", f->name, "xyz"[a], v);
        grid[a] = (unsigned)v;
    }
    return lt_cuda_launch(cu, ctx, f, grid, f->block, (unsigned)f->dyn_shared, params);
}

/* ---- events ---- */
struct lt_cuda_event {
    cu_event ev;
};

lt_status lt_cuda_event_new(lt_cuda *cu, lt_ctx *ctx, lt_cuda_event **out) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    lt_cuda_event *e = lt_calloc(ctx, 1, sizeof *e, "CUDA event");
    if (!e) return LT_ERR_NOMEM;
    cu_result r = cu->api.event_create(&e->ev, CU_EVENT_DEFAULT);
    if (r != CU_SUCCESS) {
        lt_mem_free(e);
        return lt_cuda_fail_(cu, ctx, r, "cuEventCreate", "%s", "");
    }
    *out = e;
    return LT_OK;
}

lt_status lt_cuda_event_record(lt_cuda *cu, lt_ctx *ctx, lt_cuda_event *e) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.event_record(e->ev, cu->stream), "cuEventRecord", "%s", "");
    return LT_OK;
}

lt_status lt_cuda_event_elapsed(lt_cuda *cu, lt_ctx *ctx, lt_cuda_event *start, lt_cuda_event *end, float *ms) {
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.event_sync(end->ev), "cuEventSynchronize", "%s", "work before the event failed");
    float t = 0;
    CU_CALL(cu, ctx, cu->api.event_elapsed(&t, start->ev, end->ev), "cuEventElapsedTime", "%s", "");
    *ms = t;
    return LT_OK;
}

void lt_cuda_event_free(lt_cuda *cu, lt_cuda_event *e) {
    if (!cu || !e) return;
    if (cu->api.ctx_set_current(cu->context) == CU_SUCCESS) cu->api.event_destroy(e->ev);
    lt_mem_free(e);
}

/* ---- graphs ---- */
struct lt_cuda_graph {
    cu_graph graph;     /* the captured graph (NULL in a holder that only replays) */
    cu_graph_exec exec; /* its instantiation (NULL in a template) */
};

lt_status lt_cuda_graph_begin(lt_cuda *cu, lt_ctx *ctx) {
    if (cu->capturing) return lt_error(ctx, LT_ERR_USAGE, "CUDA graph capture already in progress");
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.begin_capture(cu->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture", "%s", "");
    cu->capturing = true;
    return LT_OK;
}

lt_status lt_cuda_graph_end(lt_cuda *cu, lt_ctx *ctx, bool instantiate, lt_cuda_graph **out) {
    if (!cu->capturing) return lt_error(ctx, LT_ERR_USAGE, "lt_cuda_graph_end without lt_cuda_graph_begin");
    LT_TRY(lt_cuda_bind_(cu, ctx));
    cu->capturing = false;
    cu_graph g = NULL;
    cu_result r = cu->api.end_capture(cu->stream, &g);
    if (r != CU_SUCCESS) {
        if (g) cu->api.graph_destroy(g);
        return lt_cuda_fail_(cu, ctx, r, "cuStreamEndCapture", "%s",
                             "something enqueued during the capture was not capturable, or failed");
    }
    lt_cuda_graph *lg = lt_calloc(ctx, 1, sizeof *lg, "CUDA graph");
    if (!lg) {
        cu->api.graph_destroy(g);
        return LT_ERR_NOMEM;
    }
    lg->graph = g;
    r = instantiate ? cu->api.graph_instantiate(&lg->exec, g, 0) : CU_SUCCESS;
    if (r != CU_SUCCESS) {
        cu->api.graph_destroy(g);
        lt_mem_free(lg);
        return lt_cuda_fail_(cu, ctx, r, "cuGraphInstantiate", "%s", "");
    }
    *out = lg;
    return LT_OK;
}

lt_status lt_cuda_graph_launch(lt_cuda *cu, lt_ctx *ctx, lt_cuda_graph *g) {
    if (!g || !g->exec) return lt_error(ctx, LT_ERR_USAGE, "launch of a CUDA graph that is not instantiated");
    LT_TRY(lt_cuda_bind_(cu, ctx));
    CU_CALL(cu, ctx, cu->api.graph_launch(g->exec, cu->stream), "cuGraphLaunch", "%s", "");
    return LT_OK;
}

bool lt_cuda_graph_can_update(const lt_cuda *cu) { return cu->api.graph_exec_update != NULL; }

lt_status lt_cuda_graph_replay(lt_cuda *cu, lt_ctx *ctx, lt_cuda_graph **holder, const lt_cuda_graph *g, bool load,
                               lt_graph_replay *how) {
    *how = LT_GRAPH_REPLAYED;
    if (!g || !g->graph) return lt_error(ctx, LT_ERR_USAGE, "replay of a CUDA graph with no captured graph");
    LT_TRY(lt_cuda_bind_(cu, ctx));
    lt_cuda_graph *h = *holder;
    if (!h) {
        h = lt_calloc(ctx, 1, sizeof *h, "CUDA graph");
        if (!h) return LT_ERR_NOMEM;
        *holder = h;
    }
    if (h->exec && load) {
        struct { int result; void *error_node, *error_from_node; } info = {0};
        if (cu->api.graph_exec_update && cu->api.graph_exec_update(h->exec, g->graph, &info) == CU_SUCCESS) {
            *how = LT_GRAPH_UPDATED;
        } else { /* another topology (or no update in this driver): a new instantiation */
            cu->api.graph_exec_destroy(h->exec);
            h->exec = NULL;
        }
    }
    if (!h->exec) {
        cu_graph_exec e = NULL;
        cu_result r = cu->api.graph_instantiate(&e, g->graph, 0);
        if (r != CU_SUCCESS) return lt_cuda_fail_(cu, ctx, r, "cuGraphInstantiate", "%s", ""); /* h stays empty */
        h->exec = e;
        *how = LT_GRAPH_INSTANTIATED;
    }
    CU_CALL(cu, ctx, cu->api.graph_launch(h->exec, cu->stream), "cuGraphLaunch", "%s", "");
    return LT_OK;
}

void lt_cuda_graph_free(lt_cuda *cu, lt_cuda_graph *g) {
    if (!cu || !g) return;
    if (cu->api.ctx_set_current(cu->context) == CU_SUCCESS) {
        if (g->exec) cu->api.graph_exec_destroy(g->exec);
        if (g->graph) cu->api.graph_destroy(g->graph);
    }
    lt_mem_free(g);
}
