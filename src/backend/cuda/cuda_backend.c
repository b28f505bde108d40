/* cuda_backend.c — the CUDA backend's vtable (backend.h) over the device layer (cuda.h).
 *
 * create opens the device named by options.device (LT_ERR_UNSUPPORTED with the one-line reason when
 * there is no driver or GPU), with options.cache_dir as the cubin cache and options.arch as an
 * NVRTC target override. compile = NVRTC + cache + load of one emitted translation unit (lt_lang_cuda);
 * load = the kernel by name, with the launch shape and parameter count the emitter wrote in the
 * source; launch = cuLaunchKernel with those dimensions on the n buffer pointers (checked against
 * the parameter count); alloc/free/copy = device memory; sync waits for the stream. Ceilings: the
 * measured copy bandwidth and FP32 rate (cuda_ceil.c), measured once per instance. Device memory is
 * not host memory (host_memory false); the optional calls are all here: copy_async (queued on the
 * stream), graphs (stream capture -> instantiated CUDA graph, replayed with cuGraphLaunch) and
 * events (cuEventRecord / cuEventElapsedTime), so the runtime's plan uploads constants once, keeps
 * its workspace on the device and replays its kernel sequence as CUDA graphs.
 * Offline builds (no device): offline_open opens NVRTC once (options.nvrtc first) for options.arch
 * (default sm_90) and options.cache_dir; build_offline is lt_cuda_build through that cache, its errors
 * prefixed "NVRTC: "; offline_close closes NVRTC.
 * Entry points: lt_backend_cuda, lt_backend_cuda_device.
 */
#include "cuda_impl.h"

#include "../../base/hash.h"

#include <stdio.h>
#include <string.h>

typedef struct cuda_backend {
    lt_backend base;
    lt_cuda *cu;
} cuda_backend;

lt_cuda *lt_backend_cuda_device(lt_backend *b) {
    return b && b->vt == &lt_backend_cuda ? ((cuda_backend *)b)->cu : NULL;
}

static void be_destroy(lt_backend *b) {
    cuda_backend *c = (cuda_backend *)b;
    lt_cuda_close(c->cu);
    lt_mem_free(c);
}

static lt_status be_create(lt_ctx *ctx, const lt_backend_options *opt, lt_backend **out) {
    lt_cuda_options o = {.device = opt->device, .cache_dir = opt->cache_dir, .arch = opt->arch, .nvrtc = opt->nvrtc};
    lt_cuda *cu = NULL;
    LT_TRY(lt_cuda_open(ctx, &o, &cu));
    cuda_backend *c = lt_calloc(ctx, 1, sizeof *c, "CUDA backend");
    if (!c) {
        lt_cuda_close(cu);
        return LT_ERR_NOMEM;
    }
    c->base.vt = &lt_backend_cuda;
    c->cu = cu;
    *out = &c->base;
    return LT_OK;
}

static lt_status be_compile(lt_backend *b, lt_ctx *ctx, const char *source, lt_bmodule **out) {
    lt_cuda_module *m;
    lt_cuda_compile_options o = {.name = LT_CUDA_MODULE_PROGRAM};
    LT_TRY(lt_cuda_module_compile(((cuda_backend *)b)->cu, ctx, source, &o, &m));
    *out = (lt_bmodule *)m;
    return LT_OK;
}

static void be_module_free(lt_backend *b, lt_bmodule *m) { lt_cuda_module_free(((cuda_backend *)b)->cu, (lt_cuda_module *)m); }

static lt_status be_load(lt_backend *b, lt_ctx *ctx, lt_bmodule *m, const char *name, lt_bkernel **out) {
    lt_cuda_func *f;
    LT_TRY(lt_cuda_module_func(((cuda_backend *)b)->cu, ctx, (lt_cuda_module *)m, name, &f));
    if (!lt_cuda_func_shape(f, (unsigned[3]){0}, (unsigned[3]){0}, NULL))
        return lt_error(ctx, LT_ERR_INVALID, "CUDA kernel %s has no launch shape in its source", name);
    *out = (lt_bkernel *)f;
    return LT_OK;
}

static lt_status be_alloc(lt_backend *b, lt_ctx *ctx, size_t bytes, void **out) {
    return lt_cuda_alloc(((cuda_backend *)b)->cu, ctx, bytes, out);
}

static void be_free(lt_backend *b, void *p) { lt_cuda_free(((cuda_backend *)b)->cu, p); }

static lt_status be_copy(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    return lt_cuda_copy(((cuda_backend *)b)->cu, ctx, dst, src, bytes, dir);
}

static lt_status be_launch(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n_args) {
    return lt_cuda_launch_args(((cuda_backend *)b)->cu, ctx, (const lt_cuda_func *)k, args, n_args);
}

static lt_status be_sync(lt_backend *b, lt_ctx *ctx) { return lt_cuda_sync(((cuda_backend *)b)->cu, ctx); }

static lt_status be_copy_async(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    return lt_cuda_copy_async(((cuda_backend *)b)->cu, ctx, dst, src, bytes, dir);
}

static lt_status be_graph_begin(lt_backend *b, lt_ctx *ctx) { return lt_cuda_graph_begin(((cuda_backend *)b)->cu, ctx); }

static lt_status be_graph_end(lt_backend *b, lt_ctx *ctx, bool instantiate, void **graph) {
    lt_cuda_graph *g = NULL;
    LT_TRY(lt_cuda_graph_end(((cuda_backend *)b)->cu, ctx, instantiate, &g));
    *graph = g;
    return LT_OK;
}

static lt_status be_graph_launch(lt_backend *b, lt_ctx *ctx, void *graph) {
    return lt_cuda_graph_launch(((cuda_backend *)b)->cu, ctx, (lt_cuda_graph *)graph);
}

static lt_status be_graph_replay(lt_backend *b, lt_ctx *ctx, void **holder, void *graph, bool load, lt_graph_replay *how) {
    return lt_cuda_graph_replay(((cuda_backend *)b)->cu, ctx, (lt_cuda_graph **)holder, (const lt_cuda_graph *)graph, load,
                                how);
}

static bool be_graph_can_update(lt_backend *b) { return lt_cuda_graph_can_update(((cuda_backend *)b)->cu); }

static void be_graph_free(lt_backend *b, void *graph) { lt_cuda_graph_free(((cuda_backend *)b)->cu, (lt_cuda_graph *)graph); }

static lt_status be_event_new(lt_backend *b, lt_ctx *ctx, void **event) {
    lt_cuda_event *e = NULL;
    LT_TRY(lt_cuda_event_new(((cuda_backend *)b)->cu, ctx, &e));
    *event = e;
    return LT_OK;
}

static lt_status be_event_record(lt_backend *b, lt_ctx *ctx, void *event) {
    return lt_cuda_event_record(((cuda_backend *)b)->cu, ctx, (lt_cuda_event *)event);
}

static lt_status be_event_elapsed(lt_backend *b, lt_ctx *ctx, void *start, void *end, double *seconds) {
    float ms = 0;
    LT_TRY(lt_cuda_event_elapsed(((cuda_backend *)b)->cu, ctx, (lt_cuda_event *)start, (lt_cuda_event *)end, &ms));
    *seconds = (double)ms * 1e-3;
    return LT_OK;
}

static void be_event_free(lt_backend *b, void *event) { lt_cuda_event_free(((cuda_backend *)b)->cu, (lt_cuda_event *)event); }

static lt_status be_ceilings(lt_backend *b, lt_ctx *ctx, lt_backend_ceilings *out) {
    lt_cuda_ceilings c;
    LT_TRY(lt_cuda_ceilings_get(((cuda_backend *)b)->cu, ctx, &c));
    out->peak_gflops = c.fp32_gflops;
    out->mem_gbps = c.copy_gbps;
    out->tc_tflops = c.tc_f16_tflops;
    out->spec_gflops = c.spec_fp32_gflops;
    out->spec_mem_gbps = c.spec_mem_gbps;
    return LT_OK;
}

/* The GPU: from the opened device when there is one (b), else from opt->arch alone (a compile that
 * only emits source); the host's fields (threads, lanes) stay for host steps and scratch sizing. */
static lt_status be_target(lt_ctx *ctx, lt_backend *b, const lt_target_options *opt, lt_target *out) {
    (void)ctx;
    lt_target_host(opt, out);
    out->name = "cuda";
    out->lang = &lt_lang_cuda;
    out->source_ext = "cu";
    out->dtypes = lt_target_lang_dtypes(out->lang);
    out->gpu_blocks = true;
    out->warp_size = 32;
    out->max_threads_per_block = (int)lt_lang_cuda.max_block_threads;
    out->host_memory = false;
    out->tune_db = false;
    out->layout_nchwc = false;
    out->narrow_float_gemm = true;
    out->int8_gemm = false; /* the integer products stay exact float chunks (expand_quant) */
    out->cache_l1 = out->cache_l2 = out->cache_l3 = 0;
    out->memory_bytes = 0;
    out->arch[0] = 0;
    lt_cuda *cu = b ? ((cuda_backend *)b)->cu : NULL;
    if (cu) {
        const lt_cuda_info *in = lt_cuda_get_info(cu);
        snprintf(out->device_name, sizeof out->device_name, "%s", in->name);
        snprintf(out->arch, sizeof out->arch, "%s", in->arch);
        out->sm_count = in->sm_count;
        out->max_threads_per_block = in->max_threads_per_block;
        out->shared_mem_per_block = in->max_smem_per_block;
        out->cache_l2 = in->l2_bytes;
        out->memory_bytes = in->total_mem;
    }
    if (opt->arch) snprintf(out->arch, sizeof out->arch, "%s", opt->arch);
    out->wgmma = strcmp(out->arch, "sm_90a") == 0; /* the Hopper-only wgmma tile entries */
    return LT_OK;
}

/* An artifact's module: the cubin the module was built from (kept by lt_cuda_module_compile). */
static lt_status be_module_image(lt_backend *b, lt_ctx *ctx, const lt_bmodule *m, uint8_t **data, size_t *size) {
    (void)b;
    const lt_cuda_image *img = lt_cuda_module_image((const lt_cuda_module *)m);
    if (!img || !img->data || !img->size || !img->is_cubin)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "CUDA module: no cubin to save (an artifact needs one)");
    uint8_t *copy = lt_mem_alloc(img->size);
    if (!copy) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu bytes of cubin)", img->size);
    memcpy(copy, img->data, img->size);
    *data = copy;
    *size = img->size;
    return LT_OK;
}

/* Can a GPU of compute capability major.minor run a cubin built for arch? sm_XYa: X.Y only; sm_XY and
 * sm_XYf: major X, minor Y or later. -1: arch is not of these forms (the driver decides). */
static int cubin_runs(const char *arch, int major, int minor) {
    if (strncmp(arch, "sm_", 3) != 0) return -1;
    size_t n = strspn(arch + 3, "0123456789");
    if (n < 2 || n > 3) return -1;
    char suffix = arch[3 + n];
    if (suffix && ((suffix != 'a' && suffix != 'f') || arch[4 + n])) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) v = v * 10 + (arch[3 + i] - '0');
    if (suffix == 'a') return major == v / 10 && minor == v % 10;
    return major == v / 10 && minor >= v % 10;
}

/* An artifact's cubin, loaded through the driver: no NVRTC. Its hash is checked again here, on the
 * bytes the driver reads. The backend was opened for the architecture the artifact records (the
 * loader's options.arch), the device's own when it records none; a device that cannot run a cubin
 * of that architecture is refused here, before the driver sees it. */
static lt_status be_load_prebuilt(lt_backend *b, lt_ctx *ctx, const char *source, const char *source_sha256,
                                  const char *image_sha256, const void *bytes, size_t size, lt_bmodule **out) {
    (void)source_sha256;
    char sha[65];
    lt_sha256_hex(bytes, size, sha);
    if (strcmp(sha, image_sha256) != 0)
        return lt_error(ctx, LT_ERR_INVALID, "prebuilt CUDA module: its bytes do not hash to the recorded SHA-256");
    lt_cuda *cu = ((cuda_backend *)b)->cu;
    const lt_cuda_info *in = lt_cuda_get_info(cu);
    char own[16]; /* the device's own architecture, named as lt_cuda_open names it */
    snprintf(own, sizeof own, "sm_%d%d%s", in->cc_major, in->cc_minor, in->cc_major == 9 && in->cc_minor == 0 ? "a" : "");
    if (cubin_runs(in->arch, in->cc_major, in->cc_minor) == 0)
        return lt_error(ctx, LT_ERR_UNSUPPORTED,
                        "the artifact's cubin was built for %s; this GPU (%s, compute capability %d.%d: %s) cannot "
                        "run it: save the artifact again for %s", in->arch, in->name, in->cc_major, in->cc_minor, own, own);
    lt_cuda_module *m = NULL;
    lt_ctx c2 = {0};
    lt_status s = lt_cuda_module_load(cu, &c2, bytes, source, &m);
    if (s != LT_OK)
        return lt_error(ctx, s, "the artifact's cubin (built for %s) does not load on this GPU (%s, %s): %s", in->arch,
                        in->name, own, c2.msg);
    *out = (lt_bmodule *)m;
    return LT_OK;
}

static void be_module_info(lt_backend *b, const lt_bmodule *m, lt_bmodule_info *out) {
    (void)b;
    const lt_cuda_image *img = lt_cuda_module_image((const lt_cuda_module *)m);
    if (!img) return;
    out->cache_hit = img->cache_hit;
    snprintf(out->key, sizeof out->key, "%s", img->key);
}

/* ---- builds with no device ---- */

struct lt_boffline {
    lt_nvrtc *nv;
    char arch[32];
    char *cache_dir; /* NULL: no cache */
};

static void be_offline_close(lt_boffline *h) {
    if (!h) return;
    lt_nvrtc_close(h->nv);
    lt_mem_free(h->cache_dir);
    lt_mem_free(h);
}

static lt_status be_offline_open(lt_ctx *ctx, const lt_backend_options *opt, lt_boffline **out, const char **arch) {
    lt_boffline *h = lt_calloc(ctx, 1, sizeof *h, "CUDA offline build");
    if (!h) return LT_ERR_NOMEM;
    snprintf(h->arch, sizeof h->arch, "%s", opt->arch && opt->arch[0] ? opt->arch : "sm_90");
    if (opt->cache_dir && opt->cache_dir[0] && !(h->cache_dir = lt_mem_strdup(opt->cache_dir))) {
        be_offline_close(h);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (CUDA offline build)");
    }
    lt_status s = lt_nvrtc_open_path(ctx, opt->nvrtc, &h->nv);
    if (s != LT_OK) {
        be_offline_close(h);
        return s;
    }
    *out = h;
    *arch = h->arch;
    return LT_OK;
}

static lt_status be_build_offline(lt_boffline *h, lt_ctx *ctx, const char *source) {
    lt_ctx c2 = {0};
    lt_cuda_image img = {0};
    lt_cuda_compile_options copt = {.name = "model.cu"};
    lt_status s = lt_cuda_build(&c2, h->nv, source, h->arch, h->cache_dir, &copt, &img);
    lt_cuda_image_free(&img);
    if (s != LT_OK) return lt_error(ctx, s, "NVRTC: %s", c2.msg[0] ? c2.msg : lt_status_name(s));
    return LT_OK;
}

const lt_backend_vtbl lt_backend_cuda = {
    .name = "cuda",
    .lang = &lt_lang_cuda,
    .host_memory = false,
    .opens_device = true,
    .output_from_source = true,
    .target = be_target,
    .module_info = be_module_info,
    .module_image = be_module_image,
    .load_prebuilt = be_load_prebuilt,
    .write_output = lt_cuda_write_output,
    .offline_open = be_offline_open,
    .build_offline = be_build_offline,
    .offline_close = be_offline_close,
    .create = be_create,
    .destroy = be_destroy,
    .compile = be_compile,
    .module_free = be_module_free,
    .load = be_load,
    .alloc = be_alloc,
    .free = be_free,
    .copy = be_copy,
    .launch = be_launch,
    .sync = be_sync,
    .ceilings = be_ceilings,
    .copy_async = be_copy_async,
    .graph_begin = be_graph_begin,
    .graph_end = be_graph_end,
    .graph_launch = be_graph_launch,
    .graph_replay = be_graph_replay,
    .graph_can_update = be_graph_can_update,
    .graph_free = be_graph_free,
    .event_new = be_event_new,
    .event_record = be_event_record,
    .event_elapsed = be_event_elapsed,
    .event_free = be_event_free,
};
