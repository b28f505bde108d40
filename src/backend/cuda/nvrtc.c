/* nvrtc.c — dlopen'ed NVRTC with hand-written prototypes (see nvrtc.h). The prototypes follow
 * nvrtc.h of CUDA 12/13 (the C API has been stable since CUDA 7): results are ints (0 = success),
 * programs opaque pointers. */
#include "nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef struct nvrtc_prog_ *nvrtc_prog;

struct lt_nvrtc {
    void *lib;
    char path[256];
    int major, minor;
    const char *(*get_error_string)(int);
    int (*version)(int *, int *);
    int (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *);
    int (*destroy)(nvrtc_prog *);
    int (*compile)(nvrtc_prog, int, const char *const *);
    int (*ptx_size)(nvrtc_prog, size_t *);
    int (*ptx)(nvrtc_prog, char *);
    int (*cubin_size)(nvrtc_prog, size_t *);
    int (*cubin)(nvrtc_prog, char *);
    int (*log_size)(nvrtc_prog, size_t *);
    int (*log)(nvrtc_prog, char *);
};

static const char *const candidates[] = {
    "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.13",
    "/usr/local/cuda/lib64/libnvrtc.so.12", NULL,
};

lt_status lt_nvrtc_open(lt_ctx *ctx, lt_nvrtc **out) { return lt_nvrtc_open_path(ctx, NULL, out); }

lt_status lt_nvrtc_open_path(lt_ctx *ctx, const char *path, lt_nvrtc **out) {
    lt_nvrtc *nv = lt_calloc(ctx, 1, sizeof *nv, "NVRTC handle");
    if (!nv) return LT_ERR_NOMEM;
    if (path && *path) {
        nv->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (nv->lib) snprintf(nv->path, sizeof nv->path, "%s", path);
    }
    for (int i = 0; candidates[i] && !nv->lib; i++) {
        /* NODELETE: NVRTC (and the C++ runtime it brings) stays mapped after lt_nvrtc_close: loading
         * it again is costly, and its runtime keeps allocations that are only reachable while mapped */
        nv->lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (nv->lib) snprintf(nv->path, sizeof nv->path, "%s", candidates[i]);
    }
    if (!nv->lib) {
        lt_mem_free(nv);
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "NVRTC not found (tried %s%s%slibnvrtc.so.13, libnvrtc.so.12 and "
                        "/usr/local/cuda/lib64)", path && *path ? "the given " : "", path && *path ? path : "",
                        path && *path ? ", " : "");
    }
    struct { void **slot; const char *name; } syms[] = {
        {(void **)&nv->get_error_string, "nvrtcGetErrorString"}, {(void **)&nv->version, "nvrtcVersion"},
        {(void **)&nv->create, "nvrtcCreateProgram"}, {(void **)&nv->destroy, "nvrtcDestroyProgram"},
        {(void **)&nv->compile, "nvrtcCompileProgram"}, {(void **)&nv->ptx_size, "nvrtcGetPTXSize"},
        {(void **)&nv->ptx, "nvrtcGetPTX"}, {(void **)&nv->cubin_size, "nvrtcGetCUBINSize"},
        {(void **)&nv->cubin, "nvrtcGetCUBIN"}, {(void **)&nv->log_size, "nvrtcGetProgramLogSize"},
        {(void **)&nv->log, "nvrtcGetProgramLog"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(nv->lib, syms[i].name);
        if (!*syms[i].slot) {
            lt_status s = lt_error(ctx, LT_ERR_UNSUPPORTED, "%s lacks %s", nv->path, syms[i].name);
            dlclose(nv->lib);
            lt_mem_free(nv);
            return s;
        }
    }
    nv->version(&nv->major, &nv->minor);
    *out = nv;
    return LT_OK;
}

void lt_nvrtc_version(const lt_nvrtc *nv, int *major, int *minor) {
    *major = nv ? nv->major : 0;
    *minor = nv ? nv->minor : 0;
}
const char *lt_nvrtc_path(const lt_nvrtc *nv) { return nv ? nv->path : NULL; }

static char *read_log(lt_nvrtc *nv, nvrtc_prog p) {
    size_t n = 0;
    if (nv->log_size(p, &n) != 0 || n <= 1) return NULL;
    char *s = lt_mem_alloc(n);
    if (s && nv->log(p, s) != 0) {
        lt_mem_free(s);
        s = NULL;
    }
    return s;
}

lt_status lt_nvrtc_compile(lt_ctx *ctx, lt_nvrtc *nv, const char *source, const char *name, const char *arch,
                           const char *const *extra, int n_extra, lt_nvrtc_output *out) {
    if (!nv || !source || !out || n_extra < 0 || n_extra > 30)
        return lt_error(ctx, LT_ERR_USAGE, "lt_nvrtc_compile: bad arguments");
    name = name ? name : "lathe.cu";
    arch = arch ? arch : "sm_90";
    bool cubin = strncmp(arch, "sm_", 3) == 0;
    if (!cubin && strncmp(arch, "compute_", 8) != 0)
        return lt_error(ctx, LT_ERR_USAGE, "NVRTC target '%s' is neither sm_XX nor compute_XX", arch);
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    const char *opts[32] = {arch_opt, "--std=c++17"};
    int nopts = 2;
    for (int i = 0; i < n_extra; i++) opts[nopts++] = extra[i];

    nvrtc_prog p = NULL;
    int r = nv->create(&p, source, name, 0, NULL, NULL);
    if (r != 0) return lt_error(ctx, LT_ERR_INTERNAL, "NVRTC cannot create program %s: %s", name, nv->get_error_string(r));
    lt_status s = LT_OK;
    r = nv->compile(p, nopts, opts);
    char *log = read_log(nv, p);
    if (r != 0) {
        /* the first 40 lines of the log */
        const char *q = log ? log : "";
        for (int lines = 0; *q && lines < 40; lines++) {
            const char *e = strchr(q, '\n');
            q = e ? e + 1 : q + strlen(q);
        }
        s = lt_error(ctx, LT_ERR_INTERNAL, "NVRTC failed to compile %s for %s (%s):\n%.*s%s", name, arch,
                     nv->get_error_string(r), (int)(q - (log ? log : "")), log ? log : "", *q ? "[...]\n" : "");
        lt_mem_free(log);
    } else {
        size_t n = 0;
        r = cubin ? nv->cubin_size(p, &n) : nv->ptx_size(p, &n);
        char *img = r == 0 && n ? lt_mem_alloc(n) : NULL;
        if (img) r = cubin ? nv->cubin(p, img) : nv->ptx(p, img);
        if (!img || r != 0) {
            lt_mem_free(img);
            lt_mem_free(log);
            s = img ? lt_error(ctx, LT_ERR_INTERNAL, "NVRTC: cannot read the compiled %s of %s", cubin ? "cubin" : "PTX", name)
                    : lt_error(ctx, LT_ERR_NOMEM, "out of memory for the compiled %s", name);
        } else {
            out->image = img;
            out->size = n;
            out->is_cubin = cubin;
            out->log = log;
        }
    }
    nv->destroy(&p);
    return s;
}

void lt_nvrtc_output_free(lt_nvrtc_output *out) {
    if (!out) return;
    lt_mem_free(out->image);
    lt_mem_free(out->log);
    memset(out, 0, sizeof *out);
}

void lt_nvrtc_close(lt_nvrtc *nv) {
    if (!nv) return;
    dlclose(nv->lib);
    lt_mem_free(nv);
}
