/* bench_kernels.c — lathe's CUDA kernels on one GPU, measured with CUDA-event medians, against the
 * copy bandwidth measured in the same run (and cuBLAS for GEMM when libcublas is present).
 *
 * Rows (32768 x 4096 by default, float32 / float16 / bfloat16):
 *   copy       device-to-device cuMemcpy of the fp32 tensor's size: the bandwidth ceiling (100%)
 *   ew_chain   y = max(x * 1.5 + 0.25, 0) * x as a compiled model gets it: a small graph through
 *              fusion, lowering, the default GPU schedule and the shared emitter (cuda_emitted.h),
 *              launched through the backend's launch-shape path; variant "emitted vV" (vector lanes)
 *   rowsum, softmax, layernorm, rmsnorm   two rows each: the hand-written prelude row kernel
 *              (cuda_norm.h; the variant lathe picks, and the best of all variants that fit), and the
 *              kernel the compiler emits for the ONNX op (ReduceSum, Softmax, LayerNormalization,
 *              RMSNormalization over the last axis; variant "emitted tT vV": T threads per row)
 *   gemm       float16 / bfloat16 at 4096^3 and 8192^3 (cuda_gemm.h: mma.sync, and wgmma on sm_90a):
 *              every tensor-core configuration, lathe's pick, and cuBLAS (cublasGemmEx, fp32
 *              accumulation) on the same stream; each configuration's output (NaN-poisoned before
 *              it runs) compared with cuBLAS's at 4096 sampled points
 * Bandwidth = bytes a kernel must move (read + write) / median time; % = of the copy's.
 * Output: a table on stdout; with --json FILE, one JSON object per row (bench/gpu/bench.py merges
 * them with PyTorch's numbers). Build: see tests/gpu/run.sh (cc against liblathe.a).
 * Usage: bench_kernels [--rows R] [--cols C] [--reps N] [--gemm-sizes 4096,8192] [--json FILE] [--cache DIR]
 *                      [--no-rows] [--configs NAME,...]
 * (the cubin cache: --cache, else $LATHE_CUDA_CACHE, else none; --no-rows: the GEMMs only; --configs:
 * time only these GEMM configurations, e.g. wg128x256x64,128x256x32)
 */
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_kernels.h"
#include "base/dtype.h"
#include "codegen/codegen.h"
#include "loop/loop.h"

#include "../../tests/unit/cuda_emitted.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lt_cuda *cu;
static int reps = 20;
static FILE *json;
static double copy_gbps;

#define DIE(ctx)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "bench_kernels: %s:%d: %s\n", __FILE__, __LINE__, (ctx)->msg);             \
        exit(1);                                                                                   \
    } while (0)

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of `n` timed runs of fn after 3 warm-ups; -1 when a run fails (message printed). */
typedef lt_status (*run_fn)(lt_ctx *ctx, void *user);
static double time_ms(run_fn fn, void *user, int n) {
    lt_ctx ctx = {0};
    lt_cuda_event *e0, *e1;
    if (lt_cuda_event_new(cu, &ctx, &e0) || lt_cuda_event_new(cu, &ctx, &e1)) DIE(&ctx);
    float t[256];
    if (n > 256) n = 256;
    double r = -1;
    for (int i = 0; i < 3; i++)
        if (fn(&ctx, user) != LT_OK) goto fail;
    for (int i = 0; i < n; i++) {
        if (lt_cuda_event_record(cu, &ctx, e0) || fn(&ctx, user) || lt_cuda_event_record(cu, &ctx, e1) ||
            lt_cuda_event_elapsed(cu, &ctx, e0, e1, &t[i]))
            goto fail;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_float);
    r = t[n / 2];
    goto done;
fail:
    fprintf(stderr, "bench_kernels: %s\n", ctx.msg);
done:
    lt_cuda_event_free(cu, e0);
    lt_cuda_event_free(cu, e1);
    return r;
}

static void row_bw(const char *name, const char *dt, const char *variant, double ms, double bytes, const char *note) {
    double gbps = ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0;
    printf("%-10s %-5s %-22s %9.3f ms %8.0f GB/s %6.1f%%  %s\n", name, dt, variant, ms, gbps,
           copy_gbps > 0 ? 100 * gbps / copy_gbps : 0, note ? note : "");
    if (json)
        fprintf(json, "{\"kind\": \"bw\", \"name\": \"%s\", \"dtype\": \"%s\", \"variant\": \"%s\", \"ms\": %.5f, "
                "\"gbps\": %.1f, \"pct_copy\": %.2f, \"copy_gbps\": %.1f}\n", name, dt, variant, ms, gbps,
                copy_gbps > 0 ? 100 * gbps / copy_gbps : 0, copy_gbps);
}

/* ---- random device data ---- */
static uint64_t rng = 88172645463325252ULL;
static float frand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}
static void *device_random(lt_dtype t, size_t n, float scale) {
    lt_ctx ctx = {0};
    size_t es = (size_t)lt_dtype_size(t), chunk = (size_t)1 << 22;
    void *d = NULL;
    if (lt_cuda_alloc(cu, &ctx, n * es, &d)) DIE(&ctx);
    char *h = malloc(chunk * es);
    if (!h) exit(1);
    for (size_t off = 0; off < n; off += chunk) {
        size_t m = n - off < chunk ? n - off : chunk;
        for (size_t i = 0; i < m; i++) {
            float v = frand() * scale;
            if (t == LT_FLOAT) ((float *)h)[i] = v;
            else if (t == LT_FLOAT16) ((uint16_t *)h)[i] = lt_f32_to_f16(v);
            else ((uint16_t *)h)[i] = lt_f32_to_bf16(v);
        }
        if (lt_cuda_copy(cu, &ctx, (char *)d + off * es, h, m * es, LT_COPY_HOST_TO_DEVICE)) DIE(&ctx);
    }
    free(h);
    return d;
}

/* ---- copy ---- */
typedef struct copy_job {
    void *a, *b;
    size_t bytes;
} copy_job;
static lt_status run_copy(lt_ctx *ctx, void *u) {
    copy_job *j = u;
    return lt_cuda_copy(cu, ctx, j->b, j->a, j->bytes, LT_COPY_DEVICE_TO_DEVICE);
}

/* ---- kernels emitted by the compiler (lowering + default GPU schedule + emitter) ---- */
typedef struct emitted_job {
    lt_cuda_func *f;
    void *args[8];
    int n;
} emitted_job;
static lt_status run_emitted(lt_ctx *ctx, void *u) {
    emitted_job *j = u;
    return lt_cuda_launch_args(cu, ctx, j->f, j->args, j->n);
}
static void bench_emitted(em_op op, lt_dtype t, int64_t rows, int cols, void *y, void *x, void *g, void *bb, double bytes) {
    lt_ctx ctx = {0};
    em_kernel k;
    lt_cuda_module *m = NULL;
    emitted_job j = {0};
    void *consts[8] = {0};
    if (em_build(&ctx, op, t, rows, cols, &k) || lt_cuda_module_compile(cu, &ctx, k.src.s, NULL, &m) ||
        lt_cuda_module_func(cu, &ctx, m, k.kernel, &j.f))
        DIE(&ctx);
    for (int a = 0; a < k.n_args; a++) {
        switch (k.role[a]) {
        case EM_Y: j.args[a] = y; break;
        case EM_X: j.args[a] = x; break;
        case EM_GAMMA: j.args[a] = g; break;
        case EM_BETA: j.args[a] = bb; break;
        default: { /* a constant (float16 scalars stay kernel arguments) */
            size_t nb = (size_t)k.cval[a]->numel * (size_t)lt_dtype_size(k.cval[a]->dtype);
            if (lt_cuda_alloc(cu, &ctx, nb, &consts[a]) ||
                lt_cuda_copy(cu, &ctx, consts[a], k.cval[a]->data, nb, LT_COPY_HOST_TO_DEVICE))
                DIE(&ctx);
            j.args[a] = consts[a];
        }
        }
    }
    j.n = k.n_args;
    /* the variant: what the schedule chose ("emitted t256 v4": threads per row, vector lanes) */
    char variant[64] = "emitted";
    const char *rr = strstr(k.schedule, "rowreduce ");
    long long th = 0, vl = 0;
    if (rr && sscanf(rr, "rowreduce %*s %lld %lld", &th, &vl) == 2)
        snprintf(variant, sizeof variant, "emitted t%lld v%lld", th, vl);
    else if (strstr(k.schedule, "vectorize") && sscanf(k.schedule, "split %*s %lld", &vl) == 1)
        snprintf(variant, sizeof variant, "emitted v%lld", vl);
    row_bw(em_op_names[op], lt_dtype_name(t), variant, time_ms(run_emitted, &j, reps), bytes, NULL);
    for (int a = 0; a < 8; a++)
        if (consts[a]) lt_cuda_free(cu, consts[a]);
    lt_cuda_module_free(cu, m);
    em_free(&k);
}

/* ---- row kernels ---- */
typedef struct norm_job {
    lt_cuda_norm_args a;
} norm_job;
static lt_status run_norm(lt_ctx *ctx, void *u) { return lt_cuda_norm(cu, ctx, &((norm_job *)u)->a); }

static void bench_rows(lt_dtype t, int64_t rows, int cols) {
    lt_ctx ctx = {0};
    const char *dt = lt_dtype_name(t);
    size_t n = (size_t)rows * cols, es = (size_t)lt_dtype_size(t);
    void *x = device_random(t, n, 3.0f), *g = device_random(t, (size_t)cols, 1.0f), *bb = device_random(t, (size_t)cols, 1.0f);
    void *y = NULL;
    if (lt_cuda_alloc(cu, &ctx, n * es, &y)) DIE(&ctx);
    bench_emitted(EM_EW_CHAIN, t, rows, cols, y, x, g, bb, 2.0 * (double)n * es);

    static const lt_cuda_norm_op ops[] = {LT_CUDA_ROWSUM, LT_CUDA_SOFTMAX, LT_CUDA_LAYERNORM, LT_CUDA_RMSNORM};
    static const char *names[] = {"rowsum", "softmax", "layernorm", "rmsnorm"};
    static const int variants[] = {32, 128, 256, 512, 1024, -1};
    for (int o = 0; o < 4; o++) {
        norm_job j = {{.op = ops[o], .dtype = t, .y = y, .x = x, .rows = rows, .cols = cols, .eps = 1e-5f,
                       .gamma = ops[o] == LT_CUDA_LAYERNORM || ops[o] == LT_CUDA_RMSNORM ? g : NULL,
                       .beta = ops[o] == LT_CUDA_LAYERNORM ? bb : NULL}};
        double bytes = (double)n * es + (ops[o] == LT_CUDA_ROWSUM ? (double)rows * es : (double)n * es);
        const char *kname = NULL;
        if (lt_cuda_norm_prepare(cu, &ctx, &j.a, &kname)) DIE(&ctx);
        char auto_name[64];
        snprintf(auto_name, sizeof auto_name, "%s", kname + strlen("lt_cuda_norm_"));
        double ms_auto = time_ms(run_norm, &j, reps), best = ms_auto;
        char best_name[64];
        snprintf(best_name, sizeof best_name, "%s", auto_name);
        for (int v = 0; v < 6; v++) {
            norm_job jv = j;
            jv.a.variant = variants[v];
            lt_ctx vc = {0};
            if (lt_cuda_norm_prepare(cu, &vc, &jv.a, &kname) != LT_OK) continue; /* does not fit */
            if (strcmp(kname + strlen("lt_cuda_norm_"), auto_name) == 0) continue;
            double ms = time_ms(run_norm, &jv, reps);
            if (ms > 0 && ms < best) {
                best = ms;
                snprintf(best_name, sizeof best_name, "%s", kname + strlen("lt_cuda_norm_"));
            }
        }
        char note[96] = "";
        if (best < ms_auto)
            snprintf(note, sizeof note, "best variant %s: %.0f GB/s (%.1f%%)", best_name, bytes / (best * 1e-3) / 1e9,
                     copy_gbps > 0 ? 100 * bytes / (best * 1e-3) / 1e9 / copy_gbps : 0);
        row_bw(names[o], dt, auto_name, ms_auto, bytes, note);
        static const em_op emitted[] = {EM_ROWSUM, EM_SOFTMAX, EM_LAYERNORM, EM_RMSNORM};
        bench_emitted(emitted[o], t, rows, cols, y, x, g, bb, bytes);
    }
    lt_cuda_free(cu, x), lt_cuda_free(cu, g), lt_cuda_free(cu, bb), lt_cuda_free(cu, y);
}

/* ---- cuBLAS (optional, our own prototypes) ---- */
typedef struct cublas {
    void *lib, *h;
    int (*create)(void **);
    int (*destroy)(void *);
    int (*set_stream)(void *, void *);
    int (*gemm_ex)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                   const void *, void *, int, int, int, int);
} cublas;
static cublas cb;
static const char *only_configs; /* --configs: comma-separated configuration names to time; NULL: all */

static bool config_wanted(const char *name) {
    if (!only_configs) return true;
    size_t n = strlen(name);
    for (const char *p = only_configs; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0)) return true;
    return false;
}
static const char *cublas_open(void) {
    static const char *libs[] = {"libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.13",
                                 "/usr/local/cuda/lib64/libcublas.so.12", NULL};
    for (int i = 0; libs[i] && !cb.lib; i++) cb.lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!cb.lib) return "libcublas not found";
    cb.create = dlsym(cb.lib, "cublasCreate_v2");
    cb.destroy = dlsym(cb.lib, "cublasDestroy_v2");
    cb.set_stream = dlsym(cb.lib, "cublasSetStream_v2");
    cb.gemm_ex = dlsym(cb.lib, "cublasGemmEx");
    if (!cb.create || !cb.destroy || !cb.set_stream || !cb.gemm_ex) return "libcublas lacks cublasGemmEx";
    if (cb.create(&cb.h) != 0) return "cublasCreate failed";
    if (cb.set_stream(cb.h, lt_cuda_native_stream(cu)) != 0) return "cublasSetStream failed";
    return NULL;
}

typedef struct gemm_job {
    lt_cuda_gemm_args a;
    void *c_ref;
} gemm_job;
static lt_status run_gemm(lt_ctx *ctx, void *u) { return lt_cuda_gemm(cu, ctx, &((gemm_job *)u)->a); }
static lt_status run_cublas(lt_ctx *ctx, void *u) {
    gemm_job *j = u;
    const lt_cuda_gemm_args *a = &j->a;
    float one = 1, zero = 0;
    int ty = a->dtype == LT_FLOAT16 ? 2 : a->dtype == LT_BFLOAT16 ? 14 : 0;
    /* row-major C = A B is column-major C^T = B^T A^T */
    int r = cb.gemm_ex(cb.h, 0, 0, a->n, a->m, a->k, &one, a->b, ty, a->n, a->a, ty, a->k, &zero, j->c_ref, ty, a->n,
                       68 /* CUBLAS_COMPUTE_32F */, -1 /* CUBLAS_GEMM_DEFAULT */);
    return r == 0 ? LT_OK : lt_error(ctx, LT_ERR_INTERNAL, "cublasGemmEx failed: status %d", r);
}

static double compare_sampled(lt_dtype t, const void *c, const void *ref, size_t n) {
    lt_ctx ctx = {0};
    enum { S = 4096 };
    double worst = 0;
    size_t es = (size_t)lt_dtype_size(t);
    for (int i = 0; i < S; i++) {
        size_t idx = (size_t)((frand() * 0.5 + 0.5) * (double)n) % n;
        uint16_t hc = 0, hr = 0;
        if (lt_cuda_copy(cu, &ctx, &hc, (const char *)c + idx * es, es, LT_COPY_DEVICE_TO_HOST) ||
            lt_cuda_copy(cu, &ctx, &hr, (const char *)ref + idx * es, es, LT_COPY_DEVICE_TO_HOST))
            DIE(&ctx);
        double a = t == LT_FLOAT16 ? lt_f16_to_f32(hc) : lt_bf16_to_f32(hc);
        double b = t == LT_FLOAT16 ? lt_f16_to_f32(hr) : lt_bf16_to_f32(hr);
        double e = fabs(a - b) / (1 + fabs(b));
        if (!(e <= worst)) worst = e; /* NaN sticks */
    }
    return worst;
}

static void bench_gemm(lt_dtype t, int size, const char *cublas_missing) {
    lt_ctx ctx = {0};
    const char *dt = lt_dtype_name(t);
    size_t n2 = (size_t)size * size, es = (size_t)lt_dtype_size(t);
    void *A = device_random(t, n2, 1.0f), *B = device_random(t, n2, 1.0f), *C = NULL, *R = NULL;
    if (lt_cuda_alloc(cu, &ctx, n2 * es, &C) || lt_cuda_alloc(cu, &ctx, n2 * es, &R)) DIE(&ctx);
    double flops = 2.0 * size * (double)size * size;
    int n = size >= 8192 ? (reps < 10 ? reps : 10) : reps;
    gemm_job j = {{.dtype = t, .c = C, .a = A, .b = B, .m = size, .n = size, .k = size, .config = -1}, R};
    /* cuBLAS first: its output R is the reference every configuration is compared with */
    double tf_cublas = 0;
    if (!cublas_missing) {
        double ms = time_ms(run_cublas, &j, n);
        tf_cublas = ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0;
        if (lt_cuda_sync(cu, &ctx)) DIE(&ctx);
    }
    const char *kname = NULL;
    if (lt_cuda_gemm_prepare(cu, &ctx, &j.a, &kname)) DIE(&ctx);
    char auto_name[64];
    snprintf(auto_name, sizeof auto_name, "%s", kname + strlen("lt_cuda_gemm_"));
    double ms_auto = -1, best = -1, err_auto = -1, worst_err = 0;
    char best_name[64] = "", worst_name[64] = "";
    char per[1024] = "";
    for (int c = 0; c + 1 < lt_cuda_gemm_n_configs(); c++) {
        if (!config_wanted(lt_cuda_gemm_config_name(c))) continue;
        gemm_job jc = j;
        jc.a.config = c;
        lt_ctx cc = {0};
        if (lt_cuda_gemm_prepare(cu, &cc, &jc.a, &kname)) { /* not for this device (wgmma needs sm_90a) */
            lt_ctx_clear(&cc);
            continue;
        }
        const char *name = kname + strlen("lt_cuda_gemm_");
        if (lt_cuda_memset(cu, &ctx, C, 0xff, n2 * es)) DIE(&ctx); /* NaN: an output left unwritten shows */
        double ms = time_ms(run_gemm, &jc, n), err = -1;
        if (!cublas_missing) { /* the output of the last timed run against cuBLAS's */
            if (lt_cuda_sync(cu, &ctx)) DIE(&ctx);
            err = compare_sampled(t, C, R, n2);
            if (!(err <= worst_err)) worst_err = err, snprintf(worst_name, sizeof worst_name, "%s", name);
        }
        if (strcmp(name, auto_name) == 0) ms_auto = ms, err_auto = err;
        size_t len = strlen(per);
        snprintf(per + len, sizeof per - len, "%s%s %.0f", len ? ", " : "", lt_cuda_gemm_config_name(c),
                 ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0);
        if (ms > 0 && (best < 0 || ms < best)) best = ms, snprintf(best_name, sizeof best_name, "%s", name);
    }
    double tf_auto = ms_auto > 0 ? flops / (ms_auto * 1e-3) / 1e12 : 0, tf_best = best > 0 ? flops / (best * 1e-3) / 1e12 : 0;
    printf("gemm       %-5s %5d^3 %-18s %8.3f ms %7.1f TFLOP/s", dt, size, auto_name, ms_auto, tf_auto);
    if (tf_cublas > 0)
        printf("  cuBLAS %.1f (lathe %.0f%%), max rel diff %.2g (worst of all configs %.2g%s%s)", tf_cublas,
               100 * tf_auto / tf_cublas, err_auto, worst_err, worst_name[0] ? ": " : "", worst_name);
    else printf("  cuBLAS: %s", cublas_missing);
    printf("\n           configs (TFLOP/s): %s; best %s %.1f\n", per, best_name, tf_best);
    if (json)
        fprintf(json, "{\"kind\": \"gemm\", \"name\": \"gemm\", \"dtype\": \"%s\", \"size\": %d, \"variant\": \"%s\", "
                "\"ms\": %.5f, \"tflops\": %.2f, \"best_variant\": \"%s\", \"best_tflops\": %.2f, \"cublas_tflops\": %.2f, "
                "\"max_rel_diff_vs_cublas\": %.3g, \"worst_config_rel_diff\": %.3g}\n", dt, size, auto_name, ms_auto, tf_auto,
                best_name, tf_best, tf_cublas, err_auto, worst_err);
    lt_cuda_free(cu, A), lt_cuda_free(cu, B), lt_cuda_free(cu, C), lt_cuda_free(cu, R);
}

int main(int argc, char **argv) {
    int64_t rows = 32768;
    int cols = 4096;
    char sizes[128] = "4096,8192";
    const char *json_path = NULL, *cache = NULL;
    bool rows_too = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc) cols = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gemm-sizes") && i + 1 < argc) snprintf(sizes, sizeof sizes, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--cache") && i + 1 < argc) cache = argv[++i];
        else if (!strcmp(argv[i], "--no-rows")) rows_too = false;
        else if (!strcmp(argv[i], "--configs") && i + 1 < argc) only_configs = argv[++i];
        else {
            fprintf(stderr, "usage: bench_kernels [--rows R] [--cols C] [--reps N] [--gemm-sizes 4096,8192] [--json FILE] "
                    "[--cache DIR] [--no-rows] [--configs NAME,...]\n");
            return 1;
        }
    }
    if (rows < 1 || cols < 1 || reps < 1 || ((int64_t)rows * cols) % 1024 != 0) {
        fprintf(stderr, "bench_kernels: rows x cols must be a positive multiple of 1024\n");
        return 1;
    }
    lt_ctx ctx = {0};
    lt_cuda_options o = {.cache_dir = cache ? cache : getenv("LATHE_CUDA_CACHE")};
    if (lt_cuda_open(&ctx, &o, &cu) != LT_OK) {
        printf("bench_kernels: %s\n", ctx.msg);
        return 3;
    }
    if (json_path && !(json = fopen(json_path, "w"))) {
        fprintf(stderr, "bench_kernels: cannot write %s\n", json_path);
        return 1;
    }
    const lt_cuda_info *in = lt_cuda_get_info(cu);
    printf("device: %s (%s, %d SMs, %.0f GiB), driver %d; %lld x %d, median of %d (CUDA events)\n", in->name, in->arch,
           in->sm_count, (double)in->total_mem / (1 << 30), in->driver_version, (long long)rows, cols, reps);
    copy_job cj = {NULL, NULL, (size_t)rows * cols * 4};
    if (lt_cuda_alloc(cu, &ctx, cj.bytes, &cj.a) || lt_cuda_alloc(cu, &ctx, cj.bytes, &cj.b) ||
        lt_cuda_memset(cu, &ctx, cj.a, 1, cj.bytes))
        DIE(&ctx);
    double ms = time_ms(run_copy, &cj, reps);
    copy_gbps = ms > 0 ? 2.0 * (double)cj.bytes / (ms * 1e-3) / 1e9 : 0;
    row_bw("copy", "-", "cuMemcpyDtoD", ms, 2.0 * (double)cj.bytes, NULL);
    lt_cuda_free(cu, cj.a), lt_cuda_free(cu, cj.b);
    lt_cuda_ceilings ce;
    if (lt_cuda_ceilings_get(cu, &ctx, &ce) == LT_OK) {
        printf("ceilings: FP32 FMA %.1f TFLOP/s (spec %.1f), mma.sync f16 %.0f TFLOP/s, memory spec %.0f GB/s\n",
               ce.fp32_gflops / 1e3, ce.spec_fp32_gflops / 1e3, ce.tc_f16_tflops, ce.spec_mem_gbps);
        if (json)
            fprintf(json, "{\"kind\": \"ceilings\", \"copy_gbps\": %.1f, \"fp32_tflops\": %.2f, \"tc_f16_tflops\": %.1f, "
                    "\"device\": \"%s\"}\n", copy_gbps, ce.fp32_gflops / 1e3, ce.tc_f16_tflops, in->name);
    } else {
        printf("ceilings: %s\n", ctx.msg);
        lt_ctx_clear(&ctx);
    }

    static const lt_dtype dts[] = {LT_FLOAT, LT_FLOAT16, LT_BFLOAT16};
    for (int d = 0; d < 3 && rows_too; d++) bench_rows(dts[d], rows, cols);

    const char *missing = cublas_open();
    for (const char *p = sizes; *p;) {
        int size = atoi(p);
        if (size > 0 && size % 8 == 0)
            for (int d = 1; d < 3; d++) bench_gemm(dts[d], size, missing);
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    if (cb.h) cb.destroy(cb.h);
    if (json) fclose(json);
    lt_cuda_close(cu);
    return 0;
}
