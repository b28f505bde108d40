/* test_cuda_gpu.c — the CUDA backend on a real GPU; without one it says so and passes (the no-GPU
 * behaviour is test_cuda_nogpu's, kernel compilation test_cuda_nvrtc's).
 *
 * - The backend vtable end to end: a kernel emitted from Loop IR, compiled (NVRTC + cubin cache),
 *   loaded, launched on device buffers with the shape from its source, copied back and compared;
 *   the same launch captured in a CUDA graph and replayed on new input; events.
 * - The kernels a compiled model gets (cuda_emitted.h: the compiler's lowering + default GPU
 *   schedule + emitter): elementwise chain, row sum, softmax, LayerNorm, RMSNorm in float32 /
 *   float16 / bfloat16, long rows (a block per row), short rows (a warp per row), odd sizes, a
 *   single row, with aligned buffers (16-byte vector path) and buffers one element off (the plain
 *   per-lane path), against the reference interpreter on the same inputs.
 * - The prelude row kernels (softmax, log-softmax, LayerNorm with mean/rstd, RMSNorm, row sum) in
 *   float32/float16/bfloat16, every variant (warp per row, 128..1024 threads per row, any-shape),
 *   rows short and long, aligned and not, against a double-precision reference computed from the same
 *   rounded inputs.
 * - The GEMMs: every tensor-core configuration and the SIMT kernel, B as [k, n] and [n, k], ragged
 *   edges (m, n, k not multiples of the tile), batches (with a shared B), each epilogue (bias per
 *   column / row, relu, gelu erf/tanh, sigmoid, residual before/after, alpha, beta), float32 SIMT,
 *   and 2048^3 sampled at 512 outputs; tolerance = rounding of the output type + 3e-5 of the sum of
 *   |terms|.
 * - The ceilings (copy bandwidth, FP32 and tensor-core rates) are measured and printed.
 * Each failure prints what, where, got and expected. Exits non-zero on failure.
 */
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_kernels.h"
#include "base/dtype.h"
#include "codegen/codegen.h"
#include "interp/interp.h"
#include "loop/loop.h"

#include "cuda_emitted.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#define CHECK_OK(ctx, expr)                                                                        \
    do {                                                                                           \
        lt_status s_ = (expr);                                                                     \
        if (s_ != LT_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, (ctx)->msg);             \
            failures++;                                                                            \
            lt_ctx_clear(ctx);                                                                     \
        }                                                                                          \
    } while (0)

static lt_cuda *cu;
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static size_t esize(lt_dtype t) { return (size_t)lt_dtype_size(t); }
/* Round to the dtype in place (so the reference sees what the GPU sees) and pack into dst. */
static void pack(lt_dtype t, float *v, void *dst, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (t == LT_FLOAT) ((float *)dst)[i] = v[i];
        else if (t == LT_FLOAT16) v[i] = lt_f16_to_f32(((uint16_t *)dst)[i] = lt_f32_to_f16(v[i]));
        else v[i] = lt_bf16_to_f32(((uint16_t *)dst)[i] = lt_f32_to_bf16(v[i]));
    }
}
static float unpack1(lt_dtype t, const void *src, size_t i) {
    return t == LT_FLOAT ? ((const float *)src)[i]
           : t == LT_FLOAT16 ? lt_f16_to_f32(((const uint16_t *)src)[i])
                             : lt_bf16_to_f32(((const uint16_t *)src)[i]);
}
static double out_rel(lt_dtype t) { return t == LT_FLOAT ? 5e-6 : t == LT_FLOAT16 ? 1.0 / 1024 : 1.0 / 128; }

/* device copy of host data (NULL on failure, reported) */
static void *upload(lt_ctx *ctx, const void *host, size_t bytes) {
    void *d = NULL;
    if (lt_cuda_alloc(cu, ctx, bytes, &d) != LT_OK) return NULL;
    if (host && lt_cuda_copy(cu, ctx, d, host, bytes, LT_COPY_HOST_TO_DEVICE) != LT_OK) {
        lt_cuda_free(cu, d);
        return NULL;
    }
    return d;
}

/* ---- the backend vtable, graphs, events ---- */
static void test_backend(void) {
    lt_ctx ctx = {0};
    lt_backend *be = NULL;
    CHECK_OK(&ctx, lt_backend_cuda.create(&ctx, &(lt_backend_options){.cache_dir = getenv("LATHE_CUDA_CACHE")}, &be));
    if (!be) return;
    lt_cuda *dev = lt_backend_cuda_device(be);
    CHECK(dev != NULL);
    enum { N = 1 << 20, T = 256 };
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = lt_kernel_new(&ar, "lt_k0");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, N), *x = lt_kernel_arg(k, "x", LT_FLOAT, N);
    lt_lvar *b = lt_kernel_var(k, "b", LT_INT64), *t = lt_kernel_var(k, "t", LT_INT64);
    lt_lnode *i = lt_l_add(k, lt_l_mul(k, lt_l_var(k, b), lt_l_int(k, T)), lt_l_var(k, t));
    lt_lnode *v = lt_l_binary(k, LT_LOP_ADD, lt_l_binary(k, LT_LOP_MUL, lt_l_load(k, x, i), lt_l_float(k, LT_FLOAT, 2)),
                              lt_l_float(k, LT_FLOAT, 1));
    k->body = lt_l_for(k, b, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, N / T), LT_LOOP_GPU_BLOCK,
                       lt_l_for(k, t, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, T), LT_LOOP_GPU_THREAD, lt_l_store(k, y, i, v)));
    lt_strbuf src = {0};
    lt_emit_kernel ek = {k, "test"};
    CHECK_OK(&ctx, lt_emit_module(&ctx, be->vt->lang, &ek, 1, NULL, &src));
    lt_bmodule *mod = NULL;
    lt_bkernel *bk = NULL;
    void *dx = NULL, *dy = NULL;
    float *hx = malloc(N * sizeof *hx), *hy = malloc(N * sizeof *hy);
    if (!src.s || !hx || !hy) goto out;
    CHECK_OK(&ctx, be->vt->compile(be, &ctx, src.s, &mod));
    if (!mod) goto out;
    CHECK_OK(&ctx, be->vt->load(be, &ctx, mod, "lt_k0", &bk));
    lt_ctx lc = {0};
    lt_bkernel *nb = NULL;
    CHECK(be->vt->load(be, &lc, mod, "lt_nope", &nb) == LT_ERR_INVALID);
    CHECK_OK(&ctx, be->vt->alloc(be, &ctx, N * sizeof(float), &dx));
    CHECK_OK(&ctx, be->vt->alloc(be, &ctx, N * sizeof(float), &dy));
    if (!bk || !dx || !dy) goto out;
    for (int j = 0; j < N; j++) hx[j] = frand();
    CHECK_OK(&ctx, be->vt->copy(be, &ctx, dx, hx, N * sizeof(float), LT_COPY_HOST_TO_DEVICE));
    void *args[2] = {dy, dx};
    CHECK_OK(&ctx, be->vt->launch(be, &ctx, bk, args, 2));
    CHECK_OK(&ctx, be->vt->sync(be, &ctx));
    CHECK_OK(&ctx, be->vt->copy(be, &ctx, hy, dy, N * sizeof(float), LT_COPY_DEVICE_TO_HOST));
    int bad = 0;
    for (int j = 0; j < N; j++) bad += hy[j] != hx[j] * 2 + 1;
    CHECK(bad == 0);
    /* a graph of two launches, replayed on new input */
    lt_cuda_graph *g = NULL;
    void *args2[2] = {dx, dy}; /* x = 2 y + 1 */
    CHECK_OK(&ctx, lt_cuda_graph_begin(dev, &ctx));
    CHECK_OK(&ctx, be->vt->launch(be, &ctx, bk, args, 2));
    CHECK_OK(&ctx, be->vt->launch(be, &ctx, bk, args2, 2));
    CHECK_OK(&ctx, lt_cuda_graph_end(dev, &ctx, true, &g));
    for (int j = 0; j < N; j++) hx[j] = (float)(j % 1000) * 0.25f;
    CHECK_OK(&ctx, be->vt->copy(be, &ctx, dx, hx, N * sizeof(float), LT_COPY_HOST_TO_DEVICE));
    lt_cuda_event *e0 = NULL, *e1 = NULL;
    CHECK_OK(&ctx, lt_cuda_event_new(dev, &ctx, &e0));
    CHECK_OK(&ctx, lt_cuda_event_new(dev, &ctx, &e1));
    if (g && e0 && e1) {
        CHECK_OK(&ctx, lt_cuda_event_record(dev, &ctx, e0));
        CHECK_OK(&ctx, lt_cuda_graph_launch(dev, &ctx, g));
        CHECK_OK(&ctx, lt_cuda_event_record(dev, &ctx, e1));
        float ms = -1;
        CHECK_OK(&ctx, lt_cuda_event_elapsed(dev, &ctx, e0, e1, &ms));
        CHECK(ms >= 0);
        CHECK_OK(&ctx, be->vt->copy(be, &ctx, hy, dx, N * sizeof(float), LT_COPY_DEVICE_TO_HOST));
        bad = 0;
        for (int j = 0; j < N; j++) bad += hy[j] != (hx[j] * 2 + 1) * 2 + 1;
        CHECK(bad == 0);
        printf("test_cuda_gpu: backend vtable + graph replay ok (graph of 2 launches: %.3f ms)\n", ms);
    }
    lt_cuda_event_free(dev, e0);
    lt_cuda_event_free(dev, e1);
    lt_cuda_graph_free(dev, g);
    /* one instantiated graph replaying two templates of the same launch on other buffers: the second
     * is an update in place (the per-bucket graphs of a family's plans) */
    if (lt_cuda_graph_can_update(dev)) {
        lt_cuda_graph *ta = NULL, *tb = NULL, *holder = NULL;
        CHECK_OK(&ctx, lt_cuda_graph_begin(dev, &ctx));
        CHECK_OK(&ctx, be->vt->launch(be, &ctx, bk, args, 2)); /* y = 2 x + 1 */
        CHECK_OK(&ctx, lt_cuda_graph_end(dev, &ctx, false, &ta));
        CHECK_OK(&ctx, lt_cuda_graph_begin(dev, &ctx));
        CHECK_OK(&ctx, be->vt->launch(be, &ctx, bk, args2, 2)); /* x = 2 y + 1 */
        CHECK_OK(&ctx, lt_cuda_graph_end(dev, &ctx, false, &tb));
        lt_graph_replay how[3] = {0};
        for (int j = 0; j < N; j++) hx[j] = (float)(j % 77);
        CHECK_OK(&ctx, be->vt->copy(be, &ctx, dx, hx, N * sizeof(float), LT_COPY_HOST_TO_DEVICE));
        CHECK_OK(&ctx, lt_cuda_graph_replay(dev, &ctx, &holder, ta, true, &how[0]));
        CHECK_OK(&ctx, lt_cuda_graph_replay(dev, &ctx, &holder, tb, true, &how[1]));
        CHECK_OK(&ctx, lt_cuda_graph_replay(dev, &ctx, &holder, tb, false, &how[2]));
        CHECK_OK(&ctx, be->vt->copy(be, &ctx, hy, dx, N * sizeof(float), LT_COPY_DEVICE_TO_HOST));
        bad = 0; /* y = 2x + 1, then x = 2y + 1 (twice, y unchanged) */
        for (int j = 0; j < N; j++) bad += hy[j] != (hx[j] * 2 + 1) * 2 + 1;
        CHECK(bad == 0);
        CHECK(how[0] == LT_GRAPH_INSTANTIATED && how[1] == LT_GRAPH_UPDATED && how[2] == LT_GRAPH_REPLAYED);
        lt_cuda_graph_free(dev, holder);
        lt_cuda_graph_free(dev, ta);
        lt_cuda_graph_free(dev, tb);
        printf("test_cuda_gpu: graph templates replayed through one instantiated graph (instantiate, update, replay)\n");
    }
    lt_backend_ceilings bc = {0};
    CHECK_OK(&ctx, be->vt->ceilings(be, &ctx, &bc));
    CHECK(bc.mem_gbps > 0 && bc.peak_gflops > 0);
out:
    if (dx) be->vt->free(be, dx);
    if (dy) be->vt->free(be, dy);
    if (mod) be->vt->module_free(be, mod);
    lt_backend_destroy(be);
    free(hx);
    free(hy);
    lt_sb_free(&src);
    lt_arena_free(&ar);
}

/* ---- row kernels ---- */
static const char *op_name(lt_cuda_norm_op op) {
    static const char *n[] = {"softmax", "logsoftmax", "layernorm", "rmsnorm", "rowsum"};
    return n[op];
}

static void check_norm(lt_cuda_norm_op op, lt_dtype t, int64_t rows, int cols, int variant, size_t misalign) {
    lt_ctx ctx = {0};
    size_t n = (size_t)rows * cols, es = esize(t), ny = op == LT_CUDA_ROWSUM ? (size_t)rows : n;
    float *x = malloc(n * sizeof *x), *g = malloc(cols * sizeof *g), *bb = malloc(cols * sizeof *bb);
    float *mean = malloc(rows * sizeof *mean), *rstd = malloc(rows * sizeof *rstd);
    char *xp = malloc(n * es + 16), *gp = malloc(cols * es), *bp = malloc(cols * es), *yp = malloc(ny * es + 16);
    void *dx = NULL, *dy = NULL, *dg = NULL, *db = NULL, *dm = NULL, *dr = NULL;
    if (!x || !g || !bb || !mean || !rstd || !xp || !gp || !bp || !yp) goto out;
    float spread = op <= LT_CUDA_LOGSOFTMAX ? 6.0f : 2.0f;
    for (size_t i = 0; i < n; i++) x[i] = frand() * spread + (op == LT_CUDA_LAYERNORM ? 3.0f : 0.0f);
    for (int i = 0; i < cols; i++) g[i] = 1.0f + 0.5f * frand(), bb[i] = frand();
    pack(t, x, xp, n);
    pack(t, g, gp, cols);
    pack(t, bb, bp, cols);
    /* misalign: the data starts `misalign` bytes into the buffer (the any-shape kernel must cope) */
    dx = upload(&ctx, NULL, n * es + 16);
    dy = upload(&ctx, NULL, ny * es + 16);
    dg = upload(&ctx, gp, cols * es);
    db = upload(&ctx, bp, cols * es);
    dm = upload(&ctx, NULL, rows * sizeof(float));
    dr = upload(&ctx, NULL, rows * sizeof(float));
    if (!dx || !dy || !dg || !db || !dm || !dr) {
        fprintf(stderr, "norm buffers: %s\n", ctx.msg);
        failures++;
        goto out;
    }
    CHECK_OK(&ctx, lt_cuda_copy(cu, &ctx, (char *)dx + misalign, xp, n * es, LT_COPY_HOST_TO_DEVICE));
    lt_cuda_norm_args a = {
        .op = op, .dtype = t, .y = (char *)dy + misalign, .x = (char *)dx + misalign, .rows = rows, .cols = cols,
        .eps = 1e-5f, .scale = op == LT_CUDA_ROWSUM ? 0.5f : 0, .variant = variant,
        .gamma = op == LT_CUDA_LAYERNORM || op == LT_CUDA_RMSNORM ? dg : NULL, .beta = op == LT_CUDA_LAYERNORM ? db : NULL,
        .mean = op == LT_CUDA_LAYERNORM ? dm : NULL, .rstd = op >= LT_CUDA_LAYERNORM && op != LT_CUDA_ROWSUM ? dr : NULL,
    };
    const char *kname = "?";
    lt_status s = lt_cuda_norm_prepare(cu, &ctx, &a, &kname);
    if (s == LT_OK) s = lt_cuda_norm(cu, &ctx, &a);
    if (s == LT_OK) s = lt_cuda_sync(cu, &ctx);
    if (s == LT_OK) s = lt_cuda_copy(cu, &ctx, yp, (char *)dy + misalign, ny * es, LT_COPY_DEVICE_TO_HOST);
    if (s == LT_OK && a.mean) s = lt_cuda_copy(cu, &ctx, mean, dm, rows * sizeof(float), LT_COPY_DEVICE_TO_HOST);
    if (s == LT_OK && a.rstd) s = lt_cuda_copy(cu, &ctx, rstd, dr, rows * sizeof(float), LT_COPY_DEVICE_TO_HOST);
    if (s != LT_OK) {
        fprintf(stderr, "%s %s %lldx%d variant %d: %s\n", op_name(op), lt_dtype_name(t), (long long)rows, cols, variant,
                ctx.msg);
        failures++;
        goto out;
    }
    int bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double m = -INFINITY, sum = 0, sq = 0, mu = 0, var = 0, sabs = 0;
        for (int c = 0; c < cols; c++) m = fmax(m, xr[c]), sum += xr[c], sq += (double)xr[c] * xr[c], sabs += fabs(xr[c]);
        mu = sum / cols;
        for (int c = 0; c < cols; c++) var += (xr[c] - mu) * (xr[c] - mu);
        var /= cols;
        double se = 0;
        for (int c = 0; c < cols; c++) se += exp(xr[c] - m);
        double rs = 1 / sqrt(var + 1e-5), rr = 1 / sqrt(sq / cols + 1e-5);
        for (int c = 0; c < (op == LT_CUDA_ROWSUM ? 1 : cols); c++) {
            double ref, atol;
            switch (op) {
            case LT_CUDA_SOFTMAX: ref = exp(xr[c] - m) / se, atol = 1e-7; break;
            case LT_CUDA_LOGSOFTMAX: ref = xr[c] - m - log(se), atol = 2e-5 * (1 + fabs(m)); break;
            case LT_CUDA_LAYERNORM: ref = (xr[c] - mu) * rs * g[c] + bb[c], atol = 2e-5 * (1 + fabs(mu) * rs); break;
            case LT_CUDA_RMSNORM: ref = xr[c] * rr * g[c], atol = 2e-5; break;
            default: ref = 0.5 * sum, atol = 2e-6 * sabs; break;
            }
            double got = unpack1(t, yp, op == LT_CUDA_ROWSUM ? (size_t)r : (size_t)(r * cols + c));
            double err = fabs(got - ref), tol = atol + 2 * out_rel(t) * fabs(ref);
            if (err > worst) worst = err;
            if (!(err <= tol) && bad++ < 3)
                fprintf(stderr, "%s %s %lldx%d (%s): [%lld, %d] = %.8g, want %.8g (tol %.3g)\n", op_name(op),
                        lt_dtype_name(t), (long long)rows, cols, kname, (long long)r, c, got, ref, tol);
        }
        if (a.mean && !(fabs(mean[r] - mu) <= 1e-5 * (1 + fabs(mu))) && bad++ < 3)
            fprintf(stderr, "%s %s: mean[%lld] = %.8g, want %.8g\n", op_name(op), kname, (long long)r, mean[r], mu);
        double rref = op == LT_CUDA_LAYERNORM ? rs : rr;
        if (a.rstd && !(fabs(rstd[r] - rref) <= 1e-5 * rref) && bad++ < 3)
            fprintf(stderr, "%s %s: rstd[%lld] = %.8g, want %.8g\n", op_name(op), kname, (long long)r, rstd[r], rref);
    }
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "  %d mismatches in %s (largest error %.3g)\n", bad, kname, worst);
out:
    lt_cuda_free(cu, dx), lt_cuda_free(cu, dy), lt_cuda_free(cu, dg), lt_cuda_free(cu, db), lt_cuda_free(cu, dm),
        lt_cuda_free(cu, dr);
    free(x), free(g), free(bb), free(mean), free(rstd), free(xp), free(gp), free(bp), free(yp);
}

static void test_norms(void) {
    static const lt_dtype dts[] = {LT_FLOAT, LT_FLOAT16, LT_BFLOAT16};
    static const struct { int64_t rows; int cols; } shapes[] = {
        {37, 4096}, {130, 100}, {9, 1000}, {5, 20000}, {64, 768}, {17, 1}, {3, 129}, {1, 65536},
    };
    int before = failures, runs = 0;
    for (int d = 0; d < 3; d++)
        for (int op = 0; op <= LT_CUDA_ROWSUM; op++) {
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++, runs++)
                check_norm((lt_cuda_norm_op)op, dts[d], shapes[s].rows, shapes[s].cols, 0, 0);
            /* every variant on a row each of them can hold */
            static const int vars[] = {32, 128, 256, 512, 1024, -1};
            for (int v = 0; v < 6; v++, runs++) check_norm((lt_cuda_norm_op)op, dts[d], 19, vars[v] == -1 ? 512 : vars[v] * 2, vars[v], 0);
            /* data one element off 16-byte alignment: the any-shape kernel */
            check_norm((lt_cuda_norm_op)op, dts[d], 11, 256, 0, esize(dts[d])), runs++;
        }
    printf("test_cuda_gpu: row kernels: %d runs, %s\n", runs, failures == before ? "all match" : "MISMATCHES");
}

/* ---- GEMM ---- */
typedef struct gemm_case {
    lt_dtype t;
    bool bt;
    int m, n, k, batch;
    bool shared_b;
    int epi;    /* 0 plain, 1 col bias + relu, 2 col bias + gelu, residual after, alpha/beta, 3 row bias +
                   gelu tanh, residual before, 4 sigmoid */
    int config; /* -1 auto */
    int samples; /* 0: check every output; else this many random outputs */
} gemm_case;

static double act_ref(int epi, double v) {
    switch (epi) {
    case 1: return v < 0 ? 0 : v;
    case 2: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case 3: return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case 4: return 1 / (1 + exp(-v));
    default: return v;
    }
}

static void check_gemm(const gemm_case *gc) {
    lt_ctx ctx = {0};
    const lt_dtype t = gc->t;
    const int m = gc->m, n = gc->n, k = gc->k, nb = gc->batch;
    const size_t es = esize(t), na = (size_t)nb * m * k, nbb = (size_t)(gc->shared_b ? 1 : nb) * k * n, nc = (size_t)nb * m * n;
    const int nbias = gc->epi == 3 ? m : n;
    float *A = malloc(na * 4), *B = malloc(nbb * 4), *R = malloc(nc * 4), *bias = malloc(nbias * 4);
    char *Ap = malloc(na * es), *Bp = malloc(nbb * es), *Rp = malloc(nc * es), *biasp = malloc(nbias * es), *Cp = malloc(nc * es);
    void *dA = NULL, *dB = NULL, *dR = NULL, *dbias = NULL, *dC = NULL;
    if (!A || !B || !R || !bias || !Ap || !Bp || !Rp || !biasp || !Cp) goto out;
    for (size_t i = 0; i < na; i++) A[i] = frand();
    for (size_t i = 0; i < nbb; i++) B[i] = frand();
    for (size_t i = 0; i < nc; i++) R[i] = frand();
    for (int i = 0; i < nbias; i++) bias[i] = frand();
    pack(t, A, Ap, na), pack(t, B, Bp, nbb), pack(t, R, Rp, nc), pack(t, bias, biasp, nbias);
    dA = upload(&ctx, Ap, na * es), dB = upload(&ctx, Bp, nbb * es), dR = upload(&ctx, Rp, nc * es);
    dbias = upload(&ctx, biasp, nbias * es), dC = upload(&ctx, NULL, nc * es);
    if (!dA || !dB || !dR || !dbias || !dC) {
        fprintf(stderr, "gemm buffers: %s\n", ctx.msg);
        failures++;
        goto out;
    }
    const bool has_res = gc->epi == 2 || gc->epi == 3;
    const float alpha = gc->epi == 2 ? 0.5f : 1.0f, beta = gc->epi == 2 ? 2.0f : 1.0f;
    lt_cuda_gemm_args a = {
        .dtype = t, .b_trans = gc->bt, .c = dC, .a = dA, .b = dB, .m = m, .n = n, .k = k, .batch = nb,
        .stride_a = (int64_t)m * k, .stride_b = gc->shared_b ? 0 : (int64_t)k * n, .stride_c = (int64_t)m * n,
        .stride_r = (int64_t)m * n, .bias = gc->epi && gc->epi != 4 ? dbias : NULL,
        .bias_kind = gc->epi == 3 ? 2 : gc->epi && gc->epi != 4 ? 1 : 0, .res = has_res ? dR : NULL,
        .act = gc->epi == 1   ? LT_ACT_RELU
               : gc->epi == 2 ? LT_ACT_GELU
               : gc->epi == 3 ? LT_ACT_GELU_TANH
               : gc->epi == 4 ? LT_ACT_SIGMOID
                              : LT_ACT_NONE,
        .res_after_act = gc->epi == 2, .alpha = alpha, .beta = beta, .config = gc->config,
    };
    const char *kname = "?";
    lt_status s = lt_cuda_gemm_prepare(cu, &ctx, &a, &kname);
    if (s == LT_OK) s = lt_cuda_gemm(cu, &ctx, &a);
    if (s == LT_OK) s = lt_cuda_sync(cu, &ctx);
    if (s == LT_OK) s = lt_cuda_copy(cu, &ctx, Cp, dC, nc * es, LT_COPY_DEVICE_TO_HOST);
    if (s != LT_OK) {
        fprintf(stderr, "gemm %s %s %dx%dx%d batch %d config %d: %s\n", lt_dtype_name(t), gc->bt ? "nt" : "nn", m, n, k,
                nb, gc->config, ctx.msg);
        failures++;
        goto out;
    }
    int bad = 0, checked = 0;
    const size_t total = nc, count = gc->samples ? (size_t)gc->samples : total;
    for (size_t q = 0; q < count; q++) {
        size_t idx = gc->samples ? (size_t)((frand() * 0.5f + 0.5f) * (float)total) % total : q;
        const int z = (int)(idx / ((size_t)m * n)), r = (int)(idx / n % m), c = (int)(idx % n);
        const float *Az = A + (size_t)z * m * k, *Bz = B + (gc->shared_b ? 0 : (size_t)z * k * n);
        double acc = 0, S = 0;
        for (int kk = 0; kk < k; kk++) {
            double bv = gc->bt ? Bz[(size_t)c * k + kk] : Bz[(size_t)kk * n + c];
            acc += (double)Az[(size_t)r * k + kk] * bv;
            S += fabs((double)Az[(size_t)r * k + kk] * bv);
        }
        double v = alpha * acc;
        if (a.bias_kind == 1) v += bias[c];
        if (a.bias_kind == 2) v += bias[r];
        double rv = has_res ? beta * R[idx] : 0;
        if (!a.res_after_act) v += rv;
        v = act_ref(gc->epi, v);
        if (a.res_after_act) v += rv;
        double got = unpack1(t, Cp, idx), tol = 2 * out_rel(t) * fabs(v) + 3e-5 * (alpha * S + 3) + 1e-6;
        checked++;
        if (!(fabs(got - v) <= tol) && bad++ < 3)
            fprintf(stderr, "gemm %s (%s %dx%dx%d, batch %d, epilogue %d): C[%d][%d][%d] = %.7g, want %.7g (tol %.3g)\n",
                    kname, lt_dtype_name(t), m, n, k, nb, gc->epi, z, r, c, got, v, tol);
    }
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "  %d of %d outputs wrong in %s\n", bad, checked, kname);
out:
    lt_cuda_free(cu, dA), lt_cuda_free(cu, dB), lt_cuda_free(cu, dR), lt_cuda_free(cu, dbias), lt_cuda_free(cu, dC);
    free(A), free(B), free(R), free(bias), free(Ap), free(Bp), free(Rp), free(biasp), free(Cp);
}

static void test_gemms(void) {
    int before = failures, runs = 0;
    const int simt = lt_cuda_gemm_n_configs() - 1;
    static const lt_dtype tc[] = {LT_FLOAT16, LT_BFLOAT16};
    for (int d = 0; d < 2; d++)
        for (int bt = 0; bt < 2; bt++) {
            for (int cfg = 0; cfg <= simt; cfg++, runs++) /* ragged edges, batched, every epilogue in turn */
                check_gemm(&(gemm_case){tc[d], bt, 300, 264, 200, 2, false, cfg % 5, cfg, 0});
            check_gemm(&(gemm_case){tc[d], bt, 128, 256, 4096, 1, false, 0, -1, 0}), runs++;
            check_gemm(&(gemm_case){tc[d], bt, 1, 8, 8, 1, false, 1, -1, 0}), runs++;
            check_gemm(&(gemm_case){tc[d], bt, 77, 50, 33, 1, false, 2, -1, 0}), runs++; /* SIMT fallback */
            check_gemm(&(gemm_case){tc[d], bt, 64, 128, 64, 3, true, 3, -1, 0}), runs++; /* shared B */
            check_gemm(&(gemm_case){tc[d], bt, 2048, 2048, 2048, 1, false, 0, 0, 512}), runs++;
            check_gemm(&(gemm_case){tc[d], bt, 2048, 2048, 2048, 1, false, 4, 1, 512}), runs++;
        }
    for (int bt = 0; bt < 2; bt++) {
        check_gemm(&(gemm_case){LT_FLOAT, bt, 300, 264, 200, 2, false, 2, -1, 0}), runs++;
        check_gemm(&(gemm_case){LT_FLOAT, bt, 77, 50, 33, 1, false, 3, -1, 0}), runs++;
        check_gemm(&(gemm_case){LT_FLOAT, bt, 1024, 1024, 1024, 1, false, 1, -1, 256}), runs++;
    }
    lt_ctx ctx = {0};
    lt_cuda_gemm_args bad = {.dtype = LT_FLOAT, .m = 8, .n = 8, .k = 8, .a = (void *)16, .b = (void *)16, .c = (void *)16,
                             .config = 0};
    CHECK(lt_cuda_gemm(cu, &ctx, &bad) == LT_ERR_UNSUPPORTED); /* float32 has no tensor-core config */
    printf("test_cuda_gpu: GEMMs: %d runs, %s\n", runs, failures == before ? "all match" : "MISMATCHES");
}

/* ---- kernels emitted by the compiler (GPU schedules) against the reference interpreter ---- */
/* One kernel, run with buffers aligned (the 16-byte vector path) and one element off (the plain
 * per-lane path); returns the number of mismatching runs. */
static int emitted_case(em_op op, lt_dtype t, int64_t rows, int64_t cols) {
    lt_ctx ctx = {0};
    em_kernel k;
    int bad = 0;
    lt_cuda_module *mod = NULL;
    lt_cuda_func *f = NULL;
    lt_datum *in[3] = {0}, *out[1] = {0};
    void *dev[8] = {0}, *args[8] = {0};
    void *host_y = NULL;
    size_t es = esize(t);
    lt_status s = em_build(&ctx, op, t, rows, cols, &k);
    if (s != LT_OK) goto fail;
    /* random inputs (graph inputs in order: x, gamma, beta) */
    lt_graph *g = k.m->graph;
    for (int i = 0; i < g->n_inputs && i < 3; i++) {
        const lt_value *v = g->inputs[i];
        int64_t dims[2] = {v->type.dims[0].value, v->type.rank > 1 ? v->type.dims[1].value : 1};
        lt_tensor *tt = NULL;
        if ((s = lt_tensor_new(&ctx, t, v->type.rank, dims, &tt)) != LT_OK) goto fail;
        for (int64_t j = 0; j < tt->numel; j++) lt_store_f64(tt->data, t, j, frand() * (i == 0 ? 3.0f : 1.0f));
        if ((s = lt_datum_tensor(&ctx, tt, &in[i])) != LT_OK) goto fail;
    }
    if ((s = lt_interp_run(&ctx, k.m, NULL, in, out)) != LT_OK) goto fail;
    const lt_tensor *ref = out[0]->tensor;
    if ((s = lt_cuda_module_compile(cu, &ctx, k.src.s, NULL, &mod)) != LT_OK ||
        (s = lt_cuda_module_func(cu, &ctx, mod, k.kernel, &f)) != LT_OK)
        goto fail;
    if (!(host_y = malloc((size_t)ref->numel * es))) { bad = 1; goto done; }
    for (size_t misalign = 0; misalign <= es; misalign += es) {
        for (int j = 0; j < k.n_args; j++) {
            const lt_tensor *src = k.role[j] == EM_Y ? ref : k.role[j] == EM_CONST ? k.cval[j] : in[k.role[j] - EM_X]->tensor;
            size_t bytes = (size_t)src->numel * es;
            size_t off = k.role[j] == EM_Y || k.role[j] == EM_X ? misalign : 0;
            if (!dev[j] && !(dev[j] = upload(&ctx, NULL, bytes + 16 + 16))) { s = ctx.status; goto fail; }
            args[j] = (char *)dev[j] + off;
            if (k.role[j] == EM_Y) s = lt_cuda_memset(cu, &ctx, args[j], 0xff, bytes); /* NaN until written */
            else s = lt_cuda_copy(cu, &ctx, args[j], src->data, bytes, LT_COPY_HOST_TO_DEVICE);
            if (s != LT_OK) goto fail;
        }
        if ((s = lt_cuda_launch_args(cu, &ctx, f, args, k.n_args)) != LT_OK || (s = lt_cuda_sync(cu, &ctx)) != LT_OK)
            goto fail;
        for (int j = 0; j < k.n_args; j++)
            if (k.role[j] == EM_Y &&
                (s = lt_cuda_copy(cu, &ctx, host_y, args[j], (size_t)ref->numel * es, LT_COPY_DEVICE_TO_HOST)))
                goto fail;
        double rel = t == LT_FLOAT ? 1e-4 : 2 * out_rel(t), worst = 0;
        int64_t at = 0;
        for (int64_t i = 0; i < ref->numel; i++) {
            double a = unpack1(t, host_y, (size_t)i), b = lt_load_f64(ref->data, t, i);
            double e = fabs(a - b) / (fabs(b) + 1);
            if (!(e <= worst)) worst = e, at = i; /* NaN sticks */
        }
        if (!(worst <= rel)) {
            fprintf(stderr, "emitted %s %s %lldx%lld (misaligned by %zu bytes): worst rel diff %.3g at %lld: gpu %g, "
                    "ref %g\nschedule:\n%s", em_op_names[op], lt_dtype_name(t), (long long)rows, (long long)cols, misalign,
                    worst, (long long)at, unpack1(t, host_y, (size_t)at), lt_load_f64(ref->data, t, at), k.schedule);
            bad++;
        }
    }
    goto done;
fail:
    fprintf(stderr, "emitted %s %s %lldx%lld: %s\n", em_op_names[op], lt_dtype_name(t), (long long)rows, (long long)cols,
            ctx.msg);
    bad++;
done:
    for (int j = 0; j < 8; j++)
        if (dev[j]) lt_cuda_free(cu, dev[j]);
    for (int i = 0; i < 3; i++) lt_datum_release(in[i]);
    lt_datum_release(out[0]);
    lt_cuda_module_free(cu, mod);
    free(host_y);
    em_free(&k);
    return bad;
}

static void test_emitted(void) {
    static const lt_dtype dts[] = {LT_FLOAT, LT_FLOAT16, LT_BFLOAT16};
    /* block per row, warp per row (rows not a multiple of the block's 4), odd sizes (scalar tails), one
     * long row, rows of 32..127 on a warp with narrower vectors, short rows (a thread per output) */
    static const struct { int64_t rows, cols; } shapes[] = {{256, 4096}, {1001, 256}, {33, 1001}, {1, 8192},
                                                           {70, 32},   {37, 64},    {9, 100},   {70, 8}};
    int runs = 0, bad = 0;
    for (int op = 0; op < EM_N_OPS; op++)
        for (int d = 0; d < 3; d++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
                bad += emitted_case((em_op)op, dts[d], shapes[sh].rows, shapes[sh].cols);
                runs += 2;
            }
    failures += bad;
    printf("test_cuda_gpu: emitted kernels (GPU schedules): %d runs, %s\n", runs, bad ? "MISMATCHES" : "all match");
}

int main(void) {
    lt_ctx ctx = {0};
    /* tests may read the environment (the library never does): tests/gpu/run.sh shares a cubin cache */
    lt_cuda_options o = {.cache_dir = getenv("LATHE_CUDA_CACHE")};
    if (lt_cuda_open(&ctx, &o, &cu) != LT_OK) {
        printf("test_cuda_gpu: SKIP (no GPU here): %s\n", ctx.msg);
        return 0;
    }
    const lt_cuda_info *in = lt_cuda_get_info(cu);
    printf("test_cuda_gpu: %s, sm_%d%d (%s), %d SMs, %.1f GiB, driver %d\n", in->name, in->cc_major, in->cc_minor, in->arch,
           in->sm_count, (double)in->total_mem / (1 << 30), in->driver_version);
    test_backend();
    test_emitted();
    test_norms();
    test_gemms();
    lt_cuda_ceilings c;
    if (lt_cuda_ceilings_get(cu, &ctx, &c) == LT_OK) {
        printf("test_cuda_gpu: ceilings: copy %.0f GB/s (spec %.0f), FP32 %.1f TFLOP/s (spec %.1f), mma.sync f16 %.0f "
               "TFLOP/s\n", c.copy_gbps, c.spec_mem_gbps, c.fp32_gflops / 1e3, c.spec_fp32_gflops / 1e3, c.tc_f16_tflops);
        CHECK(c.copy_gbps > 0 && c.fp32_gflops > 0 && c.tc_f16_tflops > 0);
    } else {
        fprintf(stderr, "ceilings: %s\n", ctx.msg);
        failures++;
    }
    lt_cuda_close(cu);
    if (failures) fprintf(stderr, "test_cuda_gpu: %d failure(s)\n", failures);
    else printf("test_cuda_gpu: ok\n");
    return failures ? 1 : 0;
}
