/* cuda_impl.h — internals shared by the CUDA backend's files: our declarations of the driver API
 * types and functions (the subset lathe uses; signatures as in cuda.h of CUDA 12/13, where every
 * function returns a CUresult, 0 = CUDA_SUCCESS), the lt_cuda struct, and the error helper.
 * Not a public header: callers use cuda.h.
 */
#ifndef LT_BACKEND_CUDA_IMPL_H
#define LT_BACKEND_CUDA_IMPL_H

#include "cuda.h"

typedef int cu_result;
typedef int cu_device;
typedef unsigned long long cu_ptr;
typedef struct cu_ctx_ *cu_context;
typedef struct cu_mod_ *cu_module;
typedef struct cu_func_ *cu_function;
typedef struct cu_stream_ *cu_stream;
typedef struct cu_event_ *cu_event;
typedef struct cu_graph_ *cu_graph;
typedef struct cu_graph_exec_ *cu_graph_exec;

/* enum values from cuda.h */
enum {
    CU_SUCCESS = 0,
    CU_ERROR_OUT_OF_MEMORY = 2,
    CU_ERROR_NOT_INITIALIZED = 3,
    CU_ERROR_NO_DEVICE = 100,
    CU_ERROR_INVALID_DEVICE = 101,
    CU_ERROR_NOT_FOUND = 500,
    CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    CU_ATTR_CLOCK_RATE = 13,
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_MEMORY_CLOCK_RATE = 36,
    CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_ATTR_L2_CACHE_SIZE = 38,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    CU_ATTR_MAX_SMEM_PER_BLOCK_OPTIN = 97,
    CU_FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTR_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTR_LOCAL_SIZE_BYTES = 3,
    CU_FUNC_ATTR_NUM_REGS = 4,
    CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_STREAM_NON_BLOCKING = 1,
    CU_EVENT_DEFAULT = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_EVENT_DISABLE_TIMING = 2,
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_MEMORYTYPE_HOST = 1,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_MEMORYTYPE_ARRAY = 3,
    CU_MEMORYTYPE_UNIFIED = 4,
};

/* The driver entry points lathe uses (our own prototypes). */
typedef struct cu_api {
    cu_result (*init)(unsigned flags);
    cu_result (*driver_version)(int *v);
    cu_result (*get_error_name)(cu_result r, const char **s);
    cu_result (*get_error_string)(cu_result r, const char **s);
    cu_result (*device_count)(int *n);
    cu_result (*device_get)(cu_device *d, int ordinal);
    cu_result (*device_attr)(int *v, int attr, cu_device d);
    cu_result (*device_name)(char *name, int len, cu_device d);
    cu_result (*device_total_mem)(size_t *bytes, cu_device d);
    cu_result (*primary_retain)(cu_context *c, cu_device d);
    cu_result (*primary_release)(cu_device d);
    cu_result (*ctx_set_current)(cu_context c);
    cu_result (*mem_alloc)(cu_ptr *p, size_t bytes);
    cu_result (*mem_free)(cu_ptr p);
    cu_result (*mem_get_info)(size_t *free_bytes, size_t *total);
    cu_result (*memcpy_htod_async)(cu_ptr dst, const void *src, size_t bytes, cu_stream s);
    cu_result (*memcpy_dtoh_async)(void *dst, cu_ptr src, size_t bytes, cu_stream s);
    cu_result (*memcpy_dtod_async)(cu_ptr dst, cu_ptr src, size_t bytes, cu_stream s);
    cu_result (*memset_d8_async)(cu_ptr dst, unsigned char v, size_t n, cu_stream s);
    cu_result (*module_load_data)(cu_module *m, const void *image);
    cu_result (*module_unload)(cu_module m);
    cu_result (*module_get_function)(cu_function *f, cu_module m, const char *name);
    cu_result (*func_get_attr)(int *v, int attr, cu_function f);
    cu_result (*func_set_attr)(cu_function f, int attr, int v);
    cu_result (*launch_kernel)(cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, cu_stream s, void **params, void **extra);
    cu_result (*stream_create)(cu_stream *s, unsigned flags);
    cu_result (*stream_destroy)(cu_stream s);
    cu_result (*stream_sync)(cu_stream s);
    cu_result (*event_create)(cu_event *e, unsigned flags);
    cu_result (*event_destroy)(cu_event e);
    cu_result (*event_record)(cu_event e, cu_stream s);
    cu_result (*event_sync)(cu_event e);
    cu_result (*event_elapsed)(float *ms, cu_event a, cu_event b);
    cu_result (*begin_capture)(cu_stream s, int mode);
    cu_result (*end_capture)(cu_stream s, cu_graph *g);
    cu_result (*graph_instantiate)(cu_graph_exec *ge, cu_graph g, unsigned long long flags);
    cu_result (*graph_launch)(cu_graph_exec ge, cu_stream s);
    cu_result (*graph_exec_destroy)(cu_graph_exec ge);
    cu_result (*graph_destroy)(cu_graph g);
    /* optional (NULL when the driver lacks them): an instantiated graph updated in place (CUDA 12's
     * cuGraphExecUpdate, result info: an update result and two nodes) */
    cu_result (*graph_exec_update)(cu_graph_exec ge, cu_graph g, void *result_info);
    /* optional: runs on the caller's device memory */
    cu_result (*pointer_get_attributes)(unsigned n, int *attrs, void **data, cu_ptr p);
    cu_result (*ctx_synchronize)(void);
    cu_result (*stream_wait_event)(cu_stream s, cu_event e, unsigned flags);
} cu_api;

struct lt_cuda {
    void *lib;
    cu_api api;
    cu_device dev;
    cu_context context;
    cu_stream stream;
    lt_cuda_info info;
    char *cache_dir;
    lt_nvrtc *nv;        /* opened on first compile */
    char *nvrtc_path;    /* user-given NVRTC library tried first (lt_cuda_options.nvrtc), or NULL */
    bool capturing;
    bool have_ceilings;
    lt_cuda_ceilings ceil;
    cu_event wait_event; /* lt_cuda_wait_stream's event (made on first use), or NULL */
    void *kernels;       /* prelude-kernel modules and their state (cuda_kernels.c), freed at close */
    void (*kernels_free)(lt_cuda *cu);
};

struct lt_cuda_func {
    cu_function fn;
    const char *name;    /* in the module's storage */
    bool has_shape;
    unsigned grid[3], block[3];
    int n_params;        /* -1: unknown (not parsed from an emitted kernel) */
    int n_scalars;       /* the last n_scalars parameters are run-time scalars (values, may be 0) */
    int grid_scalar[3];  /* -1, or the run-time scalar grid axis a is: then grid[a] is its multiplier */
    int dyn_shared;      /* dynamic shared memory bytes of each launch of an emitted kernel */
    int max_dyn_shared;  /* set through lt_cuda_func_set_shared */
};

/* Report a failed driver call: "CUDA: <call> (<what>) failed: CUDA_ERROR_X: <text>". Returns the
 * lathe status for r (NOMEM for out of memory, UNSUPPORTED for no device, else INTERNAL). */
lt_status lt_cuda_fail_(lt_cuda *cu, lt_ctx *ctx, cu_result r, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Make the device's context current on the calling thread. */
lt_status lt_cuda_bind_(lt_cuda *cu, lt_ctx *ctx);

#define CU_CALL(cu, ctx, expr, call, ...)                                                          \
    do {                                                                                           \
        cu_result cu_r_ = (expr);                                                                  \
        if (cu_r_ != CU_SUCCESS) return lt_cuda_fail_((cu), (ctx), cu_r_, (call), __VA_ARGS__);    \
    } while (0)

/* cuda_output.c: `lathe compile --target cuda -o DIR` (the backend's write_output): the emitted
 * translation unit is already DIR/model.cu; build it to DIR/model.cubin when NVRTC is here. */
lt_status lt_cuda_write_output(lt_ctx *ctx, const lt_target *t, const lt_output_request *req, lt_strbuf *log);

#endif
