/* cuda_ceil.c — the device's ceilings, measured once per lt_cuda (see cuda.h, lt_cuda_ceilings):
 * the copy bandwidth (device-to-device cuMemcpy of up to 256 MiB, read + write bytes over the median
 * time of 10), the FP32 FMA rate and the mma.sync f16 tensor-core rate (the register-only probes
 * lt_cuda_peak_fma / lt_cuda_peak_mma_f16 of cuda_gemm.h, median of 5), and the datasheet-style
 * numbers the attributes give (SMs x 128 FP32 lanes x 2 x clock; 2 x memory clock x bus width).
 * All timings are CUDA events on the device's stream.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "cuda_kernels.h"

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median milliseconds of `reps` runs of fn (after one warm-up run). */
typedef lt_status (*run_fn)(lt_cuda *cu, lt_ctx *ctx, void *user);
static lt_status time_median(lt_cuda *cu, lt_ctx *ctx, run_fn fn, void *user, int reps, float *ms) {
    lt_cuda_event *e0 = NULL, *e1 = NULL;
    float t[32];
    if (reps > 32) reps = 32;
    lt_status s = lt_cuda_event_new(cu, ctx, &e0);
    if (s == LT_OK) s = lt_cuda_event_new(cu, ctx, &e1);
    if (s == LT_OK) s = fn(cu, ctx, user);
    for (int i = 0; i < reps && s == LT_OK; i++) {
        s = lt_cuda_event_record(cu, ctx, e0);
        if (s == LT_OK) s = fn(cu, ctx, user);
        if (s == LT_OK) s = lt_cuda_event_record(cu, ctx, e1);
        if (s == LT_OK) s = lt_cuda_event_elapsed(cu, ctx, e0, e1, &t[i]);
    }
    lt_cuda_event_free(cu, e0);
    lt_cuda_event_free(cu, e1);
    if (s != LT_OK) return s;
    qsort(t, (size_t)reps, sizeof t[0], cmp_float);
    *ms = t[reps / 2];
    return LT_OK;
}

typedef struct copy_job {
    void *a, *b;
    size_t bytes;
} copy_job;
static lt_status run_copy(lt_cuda *cu, lt_ctx *ctx, void *user) {
    copy_job *j = user;
    return lt_cuda_copy(cu, ctx, j->b, j->a, j->bytes, LT_COPY_DEVICE_TO_DEVICE);
}

lt_status lt_cuda_measure_copy(lt_cuda *cu, lt_ctx *ctx, size_t bytes, int reps, double *gbps) {
    copy_job j = {NULL, NULL, bytes};
    lt_status s = lt_cuda_alloc(cu, ctx, bytes, &j.a);
    if (s == LT_OK) s = lt_cuda_alloc(cu, ctx, bytes, &j.b);
    if (s == LT_OK) s = lt_cuda_memset(cu, ctx, j.a, 1, bytes);
    float ms = 0;
    if (s == LT_OK) s = time_median(cu, ctx, run_copy, &j, reps, &ms);
    lt_cuda_free(cu, j.a);
    lt_cuda_free(cu, j.b);
    if (s != LT_OK) return s;
    *gbps = ms > 0 ? 2.0 * (double)bytes / (ms * 1e-3) / 1e9 : 0;
    return LT_OK;
}

typedef struct probe_job {
    lt_cuda_func *f;
    unsigned blocks;
    void *out;
    int iters;
} probe_job;
static lt_status run_probe(lt_cuda *cu, lt_ctx *ctx, void *user) {
    probe_job *j = user;
    void *params[] = {&j->out, &j->iters};
    unsigned grid[3] = {j->blocks, 1, 1}, block[3] = {256, 1, 1};
    return lt_cuda_launch(cu, ctx, j->f, grid, block, 0, params);
}

lt_status lt_cuda_ceilings_get(lt_cuda *cu, lt_ctx *ctx, lt_cuda_ceilings *out) {
    if (cu->have_ceilings) {
        *out = cu->ceil;
        return LT_OK;
    }
    lt_cuda_ceilings c = {0};
    const lt_cuda_info *in = &cu->info;
    if (in->clock_khz > 0) c.spec_fp32_gflops = (double)in->sm_count * 128 * 2 * in->clock_khz * 1e-6;
    if (in->mem_clock_khz > 0 && in->bus_width_bits > 0)
        c.spec_mem_gbps = 2.0 * in->mem_clock_khz * 1e3 * (in->bus_width_bits / 8.0) / 1e9;

    size_t free_b = 0, total_b = 0;
    LT_TRY(lt_cuda_mem_info(cu, ctx, &free_b, &total_b));
    size_t bytes = (size_t)256 << 20;
    while (bytes > ((size_t)1 << 20) && bytes * 4 > free_b) bytes /= 2;
    LT_TRY(lt_cuda_measure_copy(cu, ctx, bytes, 10, &c.copy_gbps));

    /* the probes: a module of their own */
    char *src = NULL;
    LT_TRY(lt_cuda_kernel_source(ctx, "", &src));
    static const char *const defs[] = {"-DLT_CUDA_ENTRY_PEAK=1"};
    lt_cuda_compile_options o = {.name = "lathe_peak.cu", .extra = defs, .n_extra = 1};
    lt_cuda_module *m = NULL;
    lt_status s = lt_cuda_module_compile(cu, ctx, src, &o, &m);
    lt_mem_free(src);
    probe_job j = {NULL, (unsigned)(in->sm_count > 0 ? in->sm_count : 1) * 8, NULL, 2048};
    if (s == LT_OK) s = lt_cuda_alloc(cu, ctx, (size_t)j.blocks * 256 * sizeof(float), &j.out);
    float ms = 0;
    if (s == LT_OK) s = lt_cuda_module_func(cu, ctx, m, "lt_cuda_peak_fma", &j.f);
    if (s == LT_OK) s = time_median(cu, ctx, run_probe, &j, 5, &ms);
    if (s == LT_OK && ms > 0) c.fp32_gflops = (double)j.blocks * 256 * j.iters * 256 / (ms * 1e-3) / 1e9;
    j.iters = 512; /* 64x the work per iteration: a similar run time */
    if (s == LT_OK) s = lt_cuda_module_func(cu, ctx, m, "lt_cuda_peak_mma_f16", &j.f);
    if (s == LT_OK) s = time_median(cu, ctx, run_probe, &j, 5, &ms);
    if (s == LT_OK && ms > 0) c.tc_f16_tflops = (double)j.blocks * 8 * j.iters * 8 * 4096 / (ms * 1e-3) / 1e12;
    lt_cuda_free(cu, j.out);
    lt_cuda_module_free(cu, m);
    if (s != LT_OK) return s;
    cu->ceil = c;
    cu->have_ceilings = true;
    *out = c;
    return LT_OK;
}
