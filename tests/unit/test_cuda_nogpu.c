/* test_cuda_nogpu.c — the CUDA backend without a GPU.
 *
 * 1. Without libcuda.so.1 (this CI machine; forced everywhere with a path that does not exist):
 *    lt_cuda_open and the backend's create return LT_ERR_UNSUPPORTED with the one line "CUDA backend
 *    unavailable: ... not found", allocate nothing (a counting allocator checks) and do not crash.
 *    The default library: either the same kind of one line, or (on a GPU machine) a working device.
 * 2. A fake driver (a small C library built here with `cc`, exporting the driver entry points
 *    lathe looks up; skipped with a message when no compiler works): cuInit reporting no device
 *    gives "CUDA backend unavailable: no CUDA device"; a missing entry point is named; then a fake
 *    Hopper with host memory as device memory checks the plumbing: device info and arch (sm_90a),
 *    allocation (and an out-of-memory status), copies both ways, launch parameter passing (the fake
 *    "runs" kernel lt_fake_scale: y = 2 x), launch shapes, dynamic shared memory and parameter
 *    counts read from an emitted module's source, argument-count and NULL checks, events, graph capture and replay, kernel
 *    attributes, the backend vtable, and that close releases the context and every allocation.
 * Exits non-zero on failure.
 */
#include "backend/cuda/cuda.h"
#include "base/base.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* ---- an allocator that counts live blocks ---- */
static long g_live;
static void *c_alloc(void *u, size_t n) {
    (void)u;
    void *p = malloc(n ? n : 1);
    if (p) g_live++;
    return p;
}
static void *c_realloc(void *u, void *p, size_t n) {
    (void)u;
    void *q = realloc(p, n ? n : 1);
    if (q && !p) g_live++;
    return q;
}
static void c_free(void *u, void *p) {
    (void)u;
    if (p) g_live--;
    free(p);
}
static const lt_allocator counting = {c_alloc, c_realloc, c_free, NULL};

static bool one_line(const char *s) { return s && *s && !strchr(s, '\n'); }

/* ---- 1. no driver ---- */
static void test_no_driver(void) {
    lt_ctx ctx = {0};
    lt_cuda *cu = (lt_cuda *)0x1;
    lt_cuda_options o = {.libcuda = "/nonexistent/lathe-test/libcuda.so.1"};
    long live0 = g_live;
    CHECK(lt_cuda_open(&ctx, &o, &cu) == LT_ERR_UNSUPPORTED);
    CHECK(cu == (lt_cuda *)0x1); /* untouched on failure */
    CHECK(strcmp(ctx.msg, "CUDA backend unavailable: /nonexistent/lathe-test/libcuda.so.1 not found") == 0);
    CHECK(g_live == live0);

    /* the real default: one line either way, or a device */
    lt_ctx dc = {0};
    lt_cuda *real = NULL;
    lt_status s = lt_cuda_open(&dc, NULL, &real);
    if (s == LT_OK) {
        const lt_cuda_info *in = lt_cuda_get_info(real);
        printf("test_cuda_nogpu: a CUDA device is present: %s (%s, %d SMs)\n", in->name, in->arch, in->sm_count);
        CHECK(in->sm_count > 0 && in->total_mem > 0 && strncmp(in->arch, "sm_", 3) == 0);
        lt_cuda_close(real);
    } else {
        CHECK(s == LT_ERR_UNSUPPORTED && one_line(dc.msg));
        CHECK(strcmp(dc.msg, "CUDA backend unavailable: libcuda.so.1 not found") == 0 ||
              strcmp(dc.msg, "CUDA backend unavailable: no CUDA device") == 0 ||
              strncmp(dc.msg, "CUDA backend unavailable: ", 26) == 0);
        printf("test_cuda_nogpu: default driver: %s\n", dc.msg);
        CHECK(g_live == live0);
        /* the backend vtable says the same */
        lt_ctx bc = {0};
        lt_backend *b = NULL;
        CHECK(lt_backend_cuda.create(&bc, &(lt_backend_options){0}, &b) == LT_ERR_UNSUPPORTED && b == NULL);
        CHECK(strcmp(bc.msg, dc.msg) == 0);
        CHECK(g_live == live0);
    }
    CHECK(strcmp(lt_backend_cuda.name, "cuda") == 0 && lt_backend_cuda.lang == &lt_lang_cuda);
    CHECK(lt_backend_cuda_device(NULL) == NULL);
}

/* ---- 2. a fake driver ---- */
static const char fake_src[] =
    "#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n"
    "typedef unsigned long long P;\n"
    "int fake_mode, fake_live, fake_retained, fake_launches, fake_modules, fake_execs;\n"
    "long long fake_limit = 1LL << 30;\n"
    "unsigned fake_grid[3], fake_block[3], fake_shared;\n"
    "static int capturing, recorded; static float clock_ms;\n"
    "typedef struct { void *f; unsigned n; P y, x; } rec; static rec graph_recs[16];\n"
    "#define CTX ((void *)0x1234)\n"
    "int cuInit(unsigned f) { return fake_mode == 1 ? 100 : 0; }\n"
    "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n"
    "int cuGetErrorName(int r, const char **s) { *s = r == 2 ? \"CUDA_ERROR_OUT_OF_MEMORY\" : r == 100 ? "
    "\"CUDA_ERROR_NO_DEVICE\" : r == 500 ? \"CUDA_ERROR_NOT_FOUND\" : r == 900 ? \"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED\" "
    ": \"CUDA_ERROR_UNKNOWN\"; return 0; }\n"
    "int cuGetErrorString(int r, const char **s) { *s = r == 2 ? \"out of memory\" : \"fake error\"; return 0; }\n"
    "int cuDeviceGetCount(int *n) { *n = 1; return 0; }\n"
    "int cuDeviceGet(int *d, int o) { *d = o; return 0; }\n"
    "int cuDeviceGetAttribute(int *v, int a, int d) { switch (a) { case 75: *v = 9; break; case 76: *v = 0; break;\n"
    "  case 16: *v = 132; break; case 1: *v = 1024; break; case 97: *v = 232448; break; case 38: *v = 52428800; break;\n"
    "  case 13: *v = 1980000; break; case 36: *v = 2619000; break; case 37: *v = 5120; break; default: return 1; }\n"
    "  return 0; }\n"
    "int cuDeviceGetName(char *n, int len, int d) { snprintf(n, (size_t)len, \"Fake H100\"); return 0; }\n"
    "int cuDeviceTotalMem_v2(size_t *b, int d) { *b = (size_t)80 << 30; return 0; }\n"
    "int cuDevicePrimaryCtxRetain(void **c, int d) { *c = CTX; fake_retained++; return 0; }\n"
    "int cuDevicePrimaryCtxRelease_v2(int d) { fake_retained--; return 0; }\n"
    "int cuCtxSetCurrent(void *c) { return c == CTX ? 0 : 201; }\n"
    "int cuMemAlloc_v2(P *p, size_t n) { if ((long long)n > fake_limit) return 2; *p = (P)malloc(n); fake_live++; return 0; }\n"
    "int cuMemFree_v2(P p) { free((void *)p); fake_live--; return 0; }\n"
    "int cuMemGetInfo_v2(size_t *f, size_t *t) { *f = (size_t)70 << 30; *t = (size_t)80 << 30; return 0; }\n"
    "int cuMemcpyHtoDAsync_v2(P d, const void *s, size_t n, void *st) { memcpy((void *)d, s, n); return 0; }\n"
    "int cuMemcpyDtoHAsync_v2(void *d, P s, size_t n, void *st) { memcpy(d, (void *)s, n); return 0; }\n"
    "int cuMemcpyDtoDAsync_v2(P d, P s, size_t n, void *st) { memmove((void *)d, (void *)s, n); return 0; }\n"
    "int cuMemsetD8Async(P d, unsigned char v, size_t n, void *st) { memset((void *)d, v, n); return 0; }\n"
    "int cuModuleLoadData(void **m, const void *img) { if (!img) return 1; *m = malloc(1); fake_modules++; return 0; }\n"
    "int cuModuleUnload(void *m) { free(m); fake_modules--; return 0; }\n"
    "static char names[16][64]; static int n_names;\n"
    "int cuModuleGetFunction(void **f, void *m, const char *name) { if (strstr(name, \"missing\")) return 500;\n"
    "  for (int i = 0; i < n_names; i++) if (!strcmp(names[i], name)) { *f = names[i]; return 0; }\n"
    "  if (n_names == 16) return 1; snprintf(names[n_names], 64, \"%s\", name); *f = names[n_names++]; return 0; }\n"
    "int cuFuncGetAttribute(int *v, int a, void *f) { *v = a == 4 ? 40 : a == 0 ? 1024 : 0; return 0; }\n"
    "int cuFuncSetAttribute(void *f, int a, int v) { return a == 8 && v <= 232448 ? 0 : 1; }\n"
    "static void run(void *f, unsigned n, P y, P x) { if (!strcmp((char *)f, \"lt_fake_scale\"))\n"
    "  for (unsigned i = 0; i < n; i++) ((float *)y)[i] = 2 * ((float *)x)[i]; }\n"
    "int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,\n"
    "  unsigned sh, void *st, void **params, void **extra) {\n"
    "  fake_grid[0] = gx, fake_grid[1] = gy, fake_grid[2] = gz, fake_block[0] = bx, fake_block[1] = by, fake_block[2] = bz;\n"
    "  fake_shared = sh; fake_launches++; unsigned n = gx * gy * gz * bx * by * bz;\n"
    "  P y = params ? *(P *)params[0] : 0, x = params ? *(P *)params[1] : 0;\n"
    "  if (capturing) { if (recorded == 16) return 1; graph_recs[recorded++] = (rec){f, n, y, x}; return 0; }\n"
    "  run(f, n, y, x); return 0; }\n"
    "int cuStreamCreate(void **s, unsigned f) { *s = (void *)0x5; return 0; }\n"
    "int cuStreamDestroy_v2(void *s) { return 0; }\n"
    "int cuStreamSynchronize(void *s) { return 0; }\n"
    "int cuEventCreate(void **e, unsigned f) { *e = malloc(sizeof(float)); return 0; }\n"
    "int cuEventDestroy_v2(void *e) { free(e); return 0; }\n"
    "int cuEventRecord(void *e, void *s) { clock_ms += 1.5f; *(float *)e = clock_ms; return 0; }\n"
    "int cuEventSynchronize(void *e) { return 0; }\n"
    "int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = *(float *)b - *(float *)a; return 0; }\n"
    "int cuStreamBeginCapture_v2(void *s, int mode) { capturing = 1; recorded = 0; return 0; }\n"
    "int cuStreamEndCapture(void *s, void **g) { capturing = 0; if (fake_mode == 3) { *g = 0; return 900; }\n"
    "  rec *r = malloc(sizeof graph_recs + sizeof(int)); memcpy(r, graph_recs, sizeof graph_recs);\n"
    "  *(int *)(r + 16) = recorded; *g = r; return 0; }\n"
    "static size_t graph_bytes = sizeof graph_recs + sizeof(int);\n"
    "int cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { *e = malloc(graph_bytes);\n"
    "  memcpy(*e, g, graph_bytes); fake_execs++; return 0; }\n"
    "int cuGraphExecUpdate_v2(void *e, void *g, void *info) { rec *a = e, *b = g;\n"
    "  if (*(int *)(a + 16) != *(int *)(b + 16)) return 910; memcpy(e, g, graph_bytes); return 0; }\n"
    "int cuGraphLaunch(void *e, void *s) { rec *r = e; int n = *(int *)(r + 16);\n"
    "  for (int i = 0; i < n; i++) run(r[i].f, r[i].n, r[i].y, r[i].x); return 0; }\n"
    "int cuGraphExecDestroy(void *e) { free(e); fake_execs--; return 0; }\n"
    "int cuGraphDestroy(void *g) { free(g); return 0; }\n";

/* A module as lt_emit_module writes it for CUDA: prelude, the end-of-prelude marker, then kernels
 * with their launch comments (the real emitter's output is checked in test_codegen / test_cuda_nvrtc). */
static const char emitted_src[] =
    "/* prelude */\nextern \"C\" __global__ void lt_cuda_norm_f32_t32(int p) {}\n"
    "\n/* ---- lathe: end of prelude ---- */\n"
    "\n/* lt_fake_scale: Mul_1 (Mul)\n * static cost: 64 FLOP, 512 B moved\n"
    " * launch: grid (2, 1, 1), block (32, 1, 1) */\n"
    "extern \"C\" __global__ void lt_fake_scale(float *y, const float *x) {\n    y[0] = x[0];\n}\n"
    "\n/* lt_k2\n * static cost: 0 FLOP, 0 B moved\n * launch: grid (4, 3, 2), block (8, 4, 1) */\n"
    "extern \"C\" __global__ void lt_k2(float *a, const float *b, const int64_t *c) {\n}\n"
    "\n/* lt_k3: no launch line */\nextern \"C\" __global__ void lt_k3() {\n}\n"
    "\n/* lt_k4\n * launch: grid (7, 1, 1), block (64, 1, 1) */\n"
    "extern \"C\" __global__ void __launch_bounds__(64) lt_k4(float *a) {\n}\n"
    "\n/* lt_k5\n * launch: grid (3, 1, 1), block (256, 1, 1), dynamic shared 100000 */\n"
    "extern \"C\" __global__ void lt_k5(float *y, const float *x) {\n}\n"
    "\n/* lt_k6\n * launch: grid (3, 1, 1), block (256, 1, 1), dynamic shared 300000 */\n"
    "extern \"C\" __global__ void lt_k6(float *a) {\n}\n"
    "\n/* lt_k7\n * run-time scalars: 2 (extents and constants of the shape it runs at)\n"
    " * launch: grid (s1*4, 2, 1), block (128, 1, 1) */\n"
    "extern \"C\" __global__ void lt_k7(float *a, long long ext, long long ext_1) {\n}\n";

typedef struct fake {
    void *h;
    int *mode, *live, *retained, *launches, *modules, *execs;
    long long *limit;
    unsigned *grid, *block, *shared;
} fake;

static bool build_fake(const char *dir, char *lib, size_t n, fake *fk) {
    char src[512], cmd[2048];
    snprintf(src, sizeof src, "%s/fake_cuda.c", dir);
    snprintf(lib, n, "%s/libcuda_fake.so", dir);
    FILE *f = fopen(src, "w");
    if (!f) return false;
    fputs(fake_src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O0 -o '%s' '%s' 2>&1", lib, src);
    if (system(cmd) != 0) return false;
    fk->h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!fk->h) return false;
    fk->mode = dlsym(fk->h, "fake_mode");
    fk->live = dlsym(fk->h, "fake_live");
    fk->retained = dlsym(fk->h, "fake_retained");
    fk->launches = dlsym(fk->h, "fake_launches");
    fk->modules = dlsym(fk->h, "fake_modules");
    fk->execs = dlsym(fk->h, "fake_execs");
    fk->limit = dlsym(fk->h, "fake_limit");
    fk->grid = dlsym(fk->h, "fake_grid");
    fk->shared = dlsym(fk->h, "fake_shared");
    fk->block = dlsym(fk->h, "fake_block");
    return fk->mode && fk->live && fk->retained && fk->launches && fk->modules && fk->execs && fk->limit && fk->grid && fk->block && fk->shared;
}

static void test_fake_no_device(const char *lib, fake *fk) {
    *fk->mode = 1;
    lt_ctx ctx = {0};
    lt_cuda *cu = NULL;
    long live0 = g_live;
    CHECK(lt_cuda_open(&ctx, &(lt_cuda_options){.libcuda = lib}, &cu) == LT_ERR_UNSUPPORTED && cu == NULL);
    CHECK(strcmp(ctx.msg, "CUDA backend unavailable: no CUDA device") == 0);
    CHECK(g_live == live0 && *fk->retained == 0);
    *fk->mode = 0;
    /* a device that does not exist */
    lt_ctx uc = {0};
    CHECK(lt_cuda_open(&uc, &(lt_cuda_options){.libcuda = lib, .device = 3}, &cu) == LT_ERR_USAGE);
    CHECK(strstr(uc.msg, "CUDA device 3 does not exist (1 device)") != NULL);
    CHECK(g_live == live0 && *fk->retained == 0);
    /* a library that is not a driver: the missing entry point is named */
    lt_ctx mc = {0};
    CHECK(lt_cuda_open(&mc, &(lt_cuda_options){.libcuda = "libm.so.6"}, &cu) == LT_ERR_UNSUPPORTED);
    CHECK(one_line(mc.msg) && strstr(mc.msg, "CUDA backend unavailable: libm.so.6 lacks cuInit"));
    CHECK(g_live == live0);
}

static void test_fake_device(const char *lib, fake *fk) {
    long live0 = g_live;
    lt_ctx ctx = {0};
    lt_cuda *cu = NULL;
    CHECK(lt_cuda_open(&ctx, &(lt_cuda_options){.libcuda = lib}, &cu) == LT_OK);
    if (!cu) {
        fprintf(stderr, "fake device: %s\n", ctx.msg);
        return;
    }
    const lt_cuda_info *in = lt_cuda_get_info(cu);
    CHECK(strcmp(in->name, "Fake H100") == 0 && in->cc_major == 9 && in->cc_minor == 0 && in->sm_count == 132);
    CHECK(strcmp(in->arch, "sm_90a") == 0 && in->driver_version == 12080 && in->total_mem == (int64_t)80 << 30);
    CHECK(in->max_smem_per_block == 232448 && in->clock_khz == 1980000 && *fk->retained == 1);

    /* memory */
    float host[64], back[64];
    for (int i = 0; i < 64; i++) host[i] = (float)i - 20.5f;
    void *x = NULL, *y = NULL, *big = NULL;
    CHECK(lt_cuda_alloc(cu, &ctx, sizeof host, &x) == LT_OK && lt_cuda_alloc(cu, &ctx, sizeof host, &y) == LT_OK);
    CHECK(lt_cuda_copy(cu, &ctx, x, host, sizeof host, LT_COPY_HOST_TO_DEVICE) == LT_OK);
    CHECK(lt_cuda_copy(cu, &ctx, y, x, sizeof host, LT_COPY_DEVICE_TO_DEVICE) == LT_OK);
    CHECK(lt_cuda_copy(cu, &ctx, back, y, sizeof host, LT_COPY_DEVICE_TO_HOST) == LT_OK);
    CHECK(memcmp(host, back, sizeof host) == 0);
    CHECK(lt_cuda_memset(cu, &ctx, y, 0, sizeof host) == LT_OK);
    lt_ctx uc = {0};
    CHECK(lt_cuda_copy(cu, &uc, NULL, host, 4, LT_COPY_HOST_TO_DEVICE) == LT_ERR_USAGE && strstr(uc.msg, "NULL"));
    lt_ctx oc = {0};
    *fk->limit = 1000;
    CHECK(lt_cuda_alloc(cu, &oc, 5000, &big) == LT_ERR_NOMEM && big == NULL);
    CHECK(strstr(oc.msg, "cuMemAlloc") && strstr(oc.msg, "5000 bytes") && strstr(oc.msg, "CUDA_ERROR_OUT_OF_MEMORY"));
    *fk->limit = 1LL << 30;
    size_t fb = 0, tb = 0;
    CHECK(lt_cuda_mem_info(cu, &ctx, &fb, &tb) == LT_OK && tb == (size_t)80 << 30 && fb < tb);

    /* an emitted module: shapes and parameter counts from the source */
    lt_cuda_module *m = NULL;
    CHECK(lt_cuda_module_load(cu, &ctx, "not really a cubin", emitted_src, &m) == LT_OK && *fk->modules == 1);
    lt_cuda_func *fs = NULL, *f2 = NULL, *f3 = NULL, *fp = NULL, *again = NULL;
    unsigned g[3], b[3];
    int np = 0;
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_fake_scale", &fs) == LT_OK);
    CHECK(fs && lt_cuda_func_shape(fs, g, b, &np) && g[0] == 2 && g[1] == 1 && b[0] == 32 && np == 2);
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_fake_scale", &again) == LT_OK && again == fs);
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_k2", &f2) == LT_OK);
    CHECK(f2 && lt_cuda_func_shape(f2, g, b, &np) && g[0] == 4 && g[1] == 3 && g[2] == 2 && b[0] == 8 && b[1] == 4 &&
          b[2] == 1 && np == 3);
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_k3", &f3) == LT_OK && f3 && !lt_cuda_func_shape(f3, g, b, &np));
    lt_cuda_func *f4 = NULL; /* launch bounds between the qualifiers and the name */
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_k4", &f4) == LT_OK);
    CHECK(f4 && lt_cuda_func_shape(f4, g, b, &np) && g[0] == 7 && b[0] == 64 && np == 1);
    /* dynamic shared memory beside the launch shape: allowed when the kernel is looked up, passed at
     * each launch; more than the device allows fails the lookup */
    lt_cuda_func *f5 = NULL;
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_k5", &f5) == LT_OK && f5);
    void *a5[2] = {y, x};
    CHECK(f5 && lt_cuda_launch_args(cu, &ctx, f5, a5, 2) == LT_OK && *fk->shared == 100000 && fk->block[0] == 256);
    /* run-time scalars: a grid axis that is one (times 4), a scalar slot of 0 that is no NULL buffer */
    lt_cuda_func *f7 = NULL;
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_k7", &f7) == LT_OK && f7);
    void *a7[3] = {y, (void *)(intptr_t)0, (void *)(intptr_t)5};
    CHECK(f7 && lt_cuda_launch_args(cu, &ctx, f7, a7, 3) == LT_OK && fk->grid[0] == 20 && fk->grid[1] == 2 &&
          fk->block[0] == 128);
    void *a7n[3] = {NULL, (void *)(intptr_t)0, (void *)(intptr_t)5};
    lt_ctx n7 = {0};
    CHECK(f7 && lt_cuda_launch_args(cu, &n7, f7, a7n, 3) == LT_ERR_USAGE && strstr(n7.msg, "buffer argument 0"));
    lt_ctx dc = {0};
    lt_cuda_func *f6 = NULL;
    CHECK(m && lt_cuda_module_func(cu, &dc, m, "lt_k6", &f6) == LT_ERR_UNSUPPORTED && strstr(dc.msg, "300000"));
    /* a prelude kernel is not parsed: launched with an explicit shape */
    CHECK(m && lt_cuda_module_func(cu, &ctx, m, "lt_cuda_norm_f32_t32", &fp) == LT_OK && fp &&
          !lt_cuda_func_shape(fp, g, b, &np));
    lt_ctx nf = {0};
    lt_cuda_func *none = NULL;
    CHECK(lt_cuda_module_func(cu, &nf, m, "lt_missing", &none) == LT_ERR_INVALID && strstr(nf.msg, "lt_missing"));

    /* launches: parameters reach the kernel (the fake runs y = 2 x on host memory) */
    CHECK(lt_cuda_copy(cu, &ctx, x, host, sizeof host, LT_COPY_HOST_TO_DEVICE) == LT_OK);
    void *args[2] = {y, x};
    CHECK(lt_cuda_launch_args(cu, &ctx, fs, args, 2) == LT_OK);
    CHECK(fk->grid[0] == 2 && fk->block[0] == 32 && *fk->shared == 0);
    CHECK(lt_cuda_sync(cu, &ctx) == LT_OK);
    CHECK(lt_cuda_copy(cu, &ctx, back, y, sizeof back, LT_COPY_DEVICE_TO_HOST) == LT_OK);
    int bad = 0;
    for (int i = 0; i < 64; i++) bad += back[i] != 2 * host[i];
    CHECK(bad == 0);
    lt_ctx ac = {0};
    CHECK(lt_cuda_launch_args(cu, &ac, fs, args, 3) == LT_ERR_USAGE && strstr(ac.msg, "lt_fake_scale takes 2 buffers"));
    lt_ctx nc = {0};
    void *nullargs[2] = {y, NULL};
    CHECK(lt_cuda_launch_args(cu, &nc, fs, nullargs, 2) == LT_ERR_USAGE && strstr(nc.msg, "argument 1 is NULL"));
    lt_ctx sc = {0};
    CHECK(lt_cuda_launch_args(cu, &sc, f3, NULL, 0) == LT_ERR_USAGE && strstr(sc.msg, "lt_k3 has no launch shape"));
    int launches = *fk->launches;
    unsigned eg[3] = {0, 1, 1}, eb[3] = {32, 1, 1};
    CHECK(lt_cuda_launch(cu, &ctx, fs, eg, eb, 0, NULL) == LT_OK && *fk->launches == launches); /* empty grid */
    lt_cuda_func_attrs fa;
    CHECK(lt_cuda_func_get_attrs(cu, &ctx, fs, &fa) == LT_OK && fa.regs == 40 && fa.max_threads == 1024);
    CHECK(lt_cuda_func_set_shared(cu, &ctx, fp, 100000) == LT_OK);
    lt_ctx shc = {0};
    CHECK(lt_cuda_func_set_shared(cu, &shc, fp, 300000) == LT_ERR_UNSUPPORTED && strstr(shc.msg, "300000"));

    /* events */
    lt_cuda_event *e0 = NULL, *e1 = NULL;
    float ms = 0;
    CHECK(lt_cuda_event_new(cu, &ctx, &e0) == LT_OK && lt_cuda_event_new(cu, &ctx, &e1) == LT_OK);
    CHECK(lt_cuda_event_record(cu, &ctx, e0) == LT_OK && lt_cuda_event_record(cu, &ctx, e1) == LT_OK);
    CHECK(lt_cuda_event_elapsed(cu, &ctx, e0, e1, &ms) == LT_OK && ms == 1.5f);
    lt_cuda_event_free(cu, e0);
    lt_cuda_event_free(cu, e1);

    /* graphs: captured launches do not run until the graph is launched, then run each replay */
    lt_cuda_graph *gr = NULL;
    CHECK(lt_cuda_memset(cu, &ctx, y, 0, sizeof host) == LT_OK);
    CHECK(lt_cuda_graph_begin(cu, &ctx) == LT_OK);
    lt_ctx twice = {0};
    CHECK(lt_cuda_graph_begin(cu, &twice) == LT_ERR_USAGE);
    CHECK(lt_cuda_launch_args(cu, &ctx, fs, args, 2) == LT_OK);
    CHECK(lt_cuda_graph_end(cu, &ctx, true, &gr) == LT_OK && gr);
    CHECK(lt_cuda_copy(cu, &ctx, back, y, sizeof back, LT_COPY_DEVICE_TO_HOST) == LT_OK && back[5] == 0);
    for (int rep = 0; rep < 2; rep++) {
        CHECK(lt_cuda_memset(cu, &ctx, y, 0, sizeof host) == LT_OK);
        CHECK(lt_cuda_graph_launch(cu, &ctx, gr) == LT_OK);
        CHECK(lt_cuda_copy(cu, &ctx, back, y, sizeof back, LT_COPY_DEVICE_TO_HOST) == LT_OK && back[5] == 2 * host[5]);
    }
    lt_cuda_graph_free(cu, gr);
    lt_ctx ge = {0};
    lt_cuda_graph *none_g = NULL;
    CHECK(lt_cuda_graph_end(cu, &ge, true, &none_g) == LT_ERR_USAGE); /* no capture in progress */
    *fk->mode = 3;                                               /* the capture fails: named, stream usable */
    lt_ctx cf = {0};
    CHECK(lt_cuda_graph_begin(cu, &ctx) == LT_OK);
    CHECK(lt_cuda_graph_end(cu, &cf, true, &none_g) == LT_ERR_INTERNAL && none_g == NULL);
    CHECK(strstr(cf.msg, "cuStreamEndCapture") && strstr(cf.msg, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"));
    *fk->mode = 0;
    CHECK(lt_cuda_graph_begin(cu, &ctx) == LT_OK && lt_cuda_graph_end(cu, &ctx, true, &gr) == LT_OK);
    lt_cuda_graph_free(cu, gr);
    /* templates replayed through one instantiated graph: instantiated on first use, updated in place
     * for another template of the same shape, instantiated again for one the update refuses */
    {
        lt_cuda_graph *ta = NULL, *tb = NULL, *tc = NULL, *holder = NULL;
        void *args_b[2] = {x, y}; /* x = 2 y */
        CHECK(lt_cuda_graph_begin(cu, &ctx) == LT_OK && lt_cuda_launch_args(cu, &ctx, fs, args, 2) == LT_OK);
        CHECK(lt_cuda_graph_end(cu, &ctx, false, &ta) == LT_OK);
        CHECK(lt_cuda_graph_begin(cu, &ctx) == LT_OK && lt_cuda_launch_args(cu, &ctx, fs, args_b, 2) == LT_OK);
        CHECK(lt_cuda_graph_end(cu, &ctx, false, &tb) == LT_OK);
        CHECK(lt_cuda_graph_begin(cu, &ctx) == LT_OK && lt_cuda_launch_args(cu, &ctx, fs, args, 2) == LT_OK &&
              lt_cuda_launch_args(cu, &ctx, fs, args, 2) == LT_OK);
        CHECK(lt_cuda_graph_end(cu, &ctx, false, &tc) == LT_OK);
        lt_ctx tl = {0};
        CHECK(lt_cuda_graph_launch(cu, &tl, ta) == LT_ERR_USAGE); /* a template is not instantiated */
        CHECK(lt_cuda_graph_can_update(cu));
        lt_graph_replay how = LT_GRAPH_REPLAYED;
        CHECK(lt_cuda_copy(cu, &ctx, x, host, sizeof host, LT_COPY_HOST_TO_DEVICE) == LT_OK);
        CHECK(lt_cuda_graph_replay(cu, &ctx, &holder, ta, true, &how) == LT_OK && how == LT_GRAPH_INSTANTIATED);
        CHECK(lt_cuda_copy(cu, &ctx, back, y, sizeof back, LT_COPY_DEVICE_TO_HOST) == LT_OK && back[5] == 2 * host[5]);
        CHECK(lt_cuda_graph_replay(cu, &ctx, &holder, tb, true, &how) == LT_OK && how == LT_GRAPH_UPDATED);
        CHECK(lt_cuda_copy(cu, &ctx, back, x, sizeof back, LT_COPY_DEVICE_TO_HOST) == LT_OK && back[5] == 4 * host[5]);
        CHECK(lt_cuda_graph_replay(cu, &ctx, &holder, tb, false, &how) == LT_OK && how == LT_GRAPH_REPLAYED);
        CHECK(lt_cuda_copy(cu, &ctx, back, x, sizeof back, LT_COPY_DEVICE_TO_HOST) == LT_OK && back[5] == 4 * host[5]);
        CHECK(lt_cuda_graph_replay(cu, &ctx, &holder, tc, true, &how) == LT_OK && how == LT_GRAPH_INSTANTIATED);
        CHECK(*fk->execs == 1); /* the refused update's exec was destroyed */
        lt_cuda_graph_free(cu, holder);
        lt_cuda_graph_free(cu, ta);
        lt_cuda_graph_free(cu, tb);
        lt_cuda_graph_free(cu, tc);
        CHECK(*fk->execs == 0);
    }

    lt_cuda_module_free(cu, m);
    CHECK(*fk->modules == 0);
    lt_cuda_free(cu, x);
    lt_cuda_free(cu, y);
    CHECK(*fk->live == 0);
    lt_cuda_close(cu);
    CHECK(*fk->retained == 0);
    if (ctx.status != LT_OK) fprintf(stderr, "unexpected error: %s\n", ctx.msg);
    CHECK(ctx.status == LT_OK);
    CHECK(g_live == live0);

    /* the backend vtable over the fake device (through lt_cuda_open's library option: the vtable
     * itself takes lt_backend_options, which name no library; create via the default path is
     * covered by test_no_driver) */
    lt_backend *be = NULL;
    lt_ctx bc = {0};
    lt_status s = lt_backend_cuda.create(&bc, &(lt_backend_options){0}, &be);
    if (s == LT_OK) lt_backend_destroy(be);
    else CHECK(s == LT_ERR_UNSUPPORTED && one_line(bc.msg));
}

int main(void) {
    lt_set_allocator(&counting);
    test_no_driver();
    char dir[] = "/tmp/lathe-cuda-nogpu-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 1;
    }
    char lib[600];
    fake fk = {0};
    if (!build_fake(dir, lib, sizeof lib, &fk)) {
        printf("test_cuda_nogpu: SKIP the fake-driver checks: cannot build a shared library with cc\n");
    } else {
        test_fake_no_device(lib, &fk);
        test_fake_device(lib, &fk);
        printf("test_cuda_nogpu: fake driver checks done\n");
    }
    if (fk.h) dlclose(fk.h);
    char path[700];
    snprintf(path, sizeof path, "%s/fake_cuda.c", dir);
    unlink(path);
    unlink(lib);
    rmdir(dir);
    lt_set_allocator(NULL);
    if (failures) fprintf(stderr, "test_cuda_nogpu: %d failure(s)\n", failures);
    else printf("test_cuda_nogpu: ok\n");
    return failures ? 1 : 0;
}
