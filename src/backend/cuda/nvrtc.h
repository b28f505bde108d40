/* nvrtc.h — NVRTC (CUDA's runtime compiler) loaded with dlopen, with our own prototypes: lathe
 * builds with no CUDA headers or libraries and runs on machines without CUDA.
 *
 * lt_nvrtc_open tries libnvrtc.so.13, then .12 (through the loader's search, then
 * /usr/local/cuda/lib64); absent, it returns LT_ERR_UNSUPPORTED naming what it tried, so callers
 * (tests, the CUDA backend) can say so and skip. lt_nvrtc_compile turns one CUDA
 * translation unit (as lt_emit_module writes it for lt_lang_cuda) into a cubin ("sm_XX") or PTX
 * ("compute_XX"); a compile error is LT_ERR_INTERNAL naming the program and quoting the first 40
 * lines of NVRTC's log. Handles are independent; NVRTC itself is thread-safe per program.
 * Entry points: lt_nvrtc_open (lt_nvrtc_open_path: a user-given library first), lt_nvrtc_version, lt_nvrtc_compile, lt_nvrtc_output_free, lt_nvrtc_close.
 */
#ifndef LT_BACKEND_NVRTC_H
#define LT_BACKEND_NVRTC_H

#include "../../base/base.h"

typedef struct lt_nvrtc lt_nvrtc;

typedef struct lt_nvrtc_output {
    char *image;   /* cubin (binary) or PTX (NUL-terminated text); lt_mem_* heap */
    size_t size;   /* bytes (PTX: including the NUL) */
    bool is_cubin;
    char *log;     /* NVRTC's log (warnings), may be NULL */
} lt_nvrtc_output;

lt_status lt_nvrtc_open(lt_ctx *ctx, lt_nvrtc **out);
/* The same, trying `path` (a user-given library: --nvrtc, $LATHE_NVRTC) first; NULL or "": none. */
lt_status lt_nvrtc_open_path(lt_ctx *ctx, const char *path, lt_nvrtc **out);
void lt_nvrtc_version(const lt_nvrtc *nv, int *major, int *minor);
const char *lt_nvrtc_path(const lt_nvrtc *nv); /* the library that was loaded */
/* arch: "sm_90" (cubin) or "compute_90" (PTX); NULL = "sm_90". extra: more NVRTC options. */
lt_status lt_nvrtc_compile(lt_ctx *ctx, lt_nvrtc *nv, const char *source, const char *name, const char *arch,
                           const char *const *extra, int n_extra, lt_nvrtc_output *out);
void lt_nvrtc_output_free(lt_nvrtc_output *out);
void lt_nvrtc_close(lt_nvrtc *nv);

#endif
