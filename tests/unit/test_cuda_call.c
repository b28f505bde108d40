/* test_cuda_call.c — MatMul / Gemm / Conv groups lowered for the GPU (lt_lower_options.gpu) call the
 * CUDA prelude's tile entries (cuda_gemm.h lt_cuda_mm_*, cuda_conv.h lt_cuda_conv_*) from the
 * emitted translation unit.
 *
 * Each case is a small model (built with the mutation API) that fuses, with lt_fuse_options.gpu,
 * into compiled groups only; it is lowered and scheduled by default and emitted with lt_lang_cuda:
 *   - the kernel calls the expected entry (tensor cores, SIMT, direct, or the naive nest), with the
 *     epilogue (bias per column / row / channel, residual before / after, activations, alpha) fused;
 *     cases lowered for sm_90a (lt_lower_options.wgmma) get the wgmma tiles (the cost model's
 *     pick, or one forced with lt_lower_options.gpu_tile); the big tiles' dynamic shared memory is
 *     recorded on the kernel and written beside its launch shape;
 *   - the module compiles with NVRTC for sm_90a (skipped, with a message, without NVRTC);
 *   - on a GPU (skipped with a message without one; a case lowered for sm_90a only on an sm_90a
 *     device) the kernels run on random inputs and every
 *     output matches the reference interpreter: float32 within 1e-4 relative (+1e-4), float16
 *     within 1e-2 (+5e-2), bfloat16 within 2e-2 (+0.1) — what rounding the output allows, far below
 *     what a wrong index or a missed epilogue term gives.
 * `test_cuda_call --bench [--json]` instead times ResNet-50 convolution shapes (batch 32, float16
 * and float32), GEMM 4096^3 and BERT-base's GEMMs (float16, bfloat16, float32) through the same path
 * (bench/gpu/bench_conv.py compares them with PyTorch); `--bench --sweep` also times each float16
 * GEMM with every tensor-core tile forced (lt_lower_options.gpu_tile). Exits non-zero on failure.
 */
#include "test_passes_util.h"

#include "backend/cuda/cuda.h"
#include "codegen/codegen.h"
#include "lower/lower.h"

static lt_dtype tol_dt;
static bool close_enough(double got, double want) {
    double rel = tol_dt == LT_FLOAT ? 1e-4 : tol_dt == LT_FLOAT16 ? 1e-2 : 2e-2;
    double abs_ = tol_dt == LT_FLOAT ? 1e-4 : tol_dt == LT_FLOAT16 ? 5e-2 : 0.1;
    return fabs(got - want) <= abs_ + rel * fabs(want);
}

/* ---- cases ---- */
typedef struct tcase {
    const char *name;
    const char *expect; /* a call the emitted module must contain ("lt_cuda_mm_f16_nn_64x64(") */
    lt_dtype dt;
    const char *arch;   /* the target (lt_lower_options.wgmma for sm_90a; NULL: any target); run on a GPU of that target only */
    int64_t dyn_shared; /* the dynamic shared memory the kernel must record (0: none) */
    const char *tile;   /* lt_lower_options.gpu_tile: the tensor-core tile forced (NULL: the lowering's choice) */
} tcase;

static lt_value *in4(tb *b, const char *name, lt_dtype dt, int64_t a, int64_t c, int64_t h, int64_t w) {
    int64_t d[4] = {a, c, h, w};
    return tb_input(b, name, dt, 4, d);
}
static lt_value *in1(tb *b, const char *name, lt_dtype dt, int64_t a) { return tb_input(b, name, dt, 1, &a); }

/* Gemm(a [m, k], w [n, k], bias [n] when with_bias) with transB, its output named out. */
static lt_node *gemm_nt(tb *b, lt_dtype dt, int64_t m, int64_t n, int64_t k, bool with_bias, const char *out) {
    int64_t da[2] = {m, k}, db[2] = {n, k};
    lt_value *a = tb_input(b, "a", dt, 2, da), *w = tb_input(b, "w", dt, 2, db);
    lt_node *g = with_bias ? tb_node(b, "Gemm", out, 3, a, w, in1(b, "bias", dt, n)) : tb_node(b, "Gemm", out, 2, a, w);
    lt_node_set_attr_int(&b->ctx, g, "transB", 1);
    return g;
}

static lt_node *conv(tb *b, lt_value *x, lt_value *w, lt_value *bias, int64_t k, int64_t s, int64_t p, int64_t d,
                     int64_t g) {
    lt_node *n = bias ? tb_node(b, "Conv", "y", 3, x, w, bias) : tb_node(b, "Conv", "y", 2, x, w);
    int64_t ks[2] = {k, k}, ss[2] = {s, s}, ps[4] = {p, p, p, p}, ds[2] = {d, d};
    lt_node_set_attr_ints(&b->ctx, n, "kernel_shape", 2, ks);
    lt_node_set_attr_ints(&b->ctx, n, "strides", 2, ss);
    lt_node_set_attr_ints(&b->ctx, n, "pads", 4, ps);
    lt_node_set_attr_ints(&b->ctx, n, "dilations", 2, ds);
    lt_node_set_attr_int(&b->ctx, n, "group", g);
    return n;
}

/* Build case i into b (opset 17); false past the last case. */
static bool make_case(int i, tb *b, tcase *c) {
    tb_init(b, 17);
    lt_value *y = NULL;
    switch (i) {
    case 0: { /* batched MatMul + bias per column + Relu, float16 on tensor cores */
        *c = (tcase){"matmul f16 bias relu", "lt_cuda_mm_f16_nn_64x64(", LT_FLOAT16, NULL, 0, NULL};
        int64_t da[3] = {2, 96, 64}, db[2] = {64, 72};
        lt_value *a = tb_input(b, "a", c->dt, 3, da), *w = tb_input(b, "w", c->dt, 2, db), *bias = in1(b, "bias", c->dt, 72);
        lt_value *m = tb_node(b, "MatMul", "m", 2, a, w)->out[0];
        lt_value *s = tb_node(b, "Add", "s", 2, m, bias)->out[0];
        y = tb_node(b, "Relu", "y", 1, s)->out[0];
        break;
    }
    case 1: { /* Gemm transB + row-vector bias + Sigmoid, bfloat16 nt */
        *c = (tcase){"gemm bf16 transB sigmoid", "lt_cuda_mm_bf16_nt_64x64(", LT_BFLOAT16, NULL, 0, NULL};
        lt_node *g = gemm_nt(b, c->dt, 100, 40, 48, true, "m");
        y = tb_node(b, "Sigmoid", "y", 1, g->out[0])->out[0];
        break;
    }
    case 2: { /* float32 MatMul + residual before Gelu, SIMT 32x32 sliced-K tiles (6 blocks at 128x128); 4-D batch (outer dim on blockIdx.y) */
        *c = (tcase){"matmul f32 residual gelu", "lt_cuda_mm_f32_nn_simt32(", LT_FLOAT, NULL, 0, NULL};
        int64_t da[4] = {2, 3, 70, 33}, db[2] = {33, 50}, dr[4] = {2, 3, 70, 50};
        lt_value *a = tb_input(b, "a", c->dt, 4, da), *w = tb_input(b, "w", c->dt, 2, db), *r = tb_input(b, "r", c->dt, 4, dr);
        lt_value *m = tb_node(b, "MatMul", "m", 2, a, w)->out[0];
        lt_value *s = tb_node(b, "Add", "s", 2, m, r)->out[0];
        y = tb_node(b, "Gelu", "y", 1, s)->out[0];
        break;
    }
    case 3: { /* Gemm transA, alpha: no entry takes a transposed A: the naive nest */
        *c = (tcase){"gemm f32 transA alpha (naive)", "gk", LT_FLOAT, NULL, 0, NULL};
        int64_t da[2] = {30, 20}, db[2] = {30, 25};
        lt_value *a = tb_input(b, "a", c->dt, 2, da), *w = tb_input(b, "w", c->dt, 2, db), *bias = in1(b, "bias", c->dt, 25);
        lt_node *g = tb_node(b, "Gemm", "y", 3, a, w, bias);
        lt_node_set_attr_int(&b->ctx, g, "transA", 1);
        lt_node_set_attr_float(&b->ctx, g, "alpha", 0.5f);
        y = g->out[0];
        break;
    }
    case 4: { /* 3x3 conv + bias + Relu + residual after: float16 implicit GEMM, tensor cores */
        *c = (tcase){"conv f16 3x3 bias relu residual", "lt_cuda_conv_f16_tc64x64(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 16, 12, 12), *w = in4(b, "w", c->dt, 32, 16, 3, 3), *bias = in1(b, "bias", c->dt, 32);
        lt_value *r = in4(b, "r", c->dt, 2, 32, 12, 12);
        lt_value *cv = conv(b, x, w, bias, 3, 1, 1, 1, 1)->out[0];
        lt_value *a = tb_node(b, "Relu", "a", 1, cv)->out[0];
        y = tb_node(b, "Add", "y", 2, a, r)->out[0];
        break;
    }
    case 5: { /* strided, dilated conv, bfloat16 tensor cores, odd output size (single stores) */
        *c = (tcase){"conv bf16 stride 2 dilation 2", "lt_cuda_conv_bf16_tc64x64(", LT_BFLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 1, 8, 15, 15), *w = in4(b, "w", c->dt, 24, 8, 3, 3);
        y = conv(b, x, w, NULL, 3, 2, 2, 2, 1)->out[0];
        break;
    }
    case 6: { /* 7x7 stride 2 stem, float32 SIMT (32x32 sliced-K tiles), Clip (an activation with parameters) */
        *c = (tcase){"conv f32 7x7 stem clip", "lt_cuda_conv_f32_simt32(", LT_FLOAT, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 3, 20, 20), *w = in4(b, "w", c->dt, 16, 3, 7, 7), *bias = in1(b, "bias", c->dt, 16);
        lt_value *cv = conv(b, x, w, bias, 7, 2, 3, 1, 1)->out[0];
        lt_node *cl = tb_node(b, "Clip", "y", 1, cv);
        lt_node_set_attr_float(&b->ctx, cl, "min", -0.5f); /* opset 17: min/max are inputs; see below */
        y = cl->out[0];
        break;
    }
    case 7: { /* depthwise 3x3 + bias + Relu, float16 direct */
        *c = (tcase){"conv f16 depthwise", "lt_cuda_conv_f16_direct(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 16, 10, 9), *w = in4(b, "w", c->dt, 16, 1, 3, 3), *bias = in1(b, "bias", c->dt, 16);
        lt_value *cv = conv(b, x, w, bias, 3, 1, 1, 1, 16)->out[0];
        y = tb_node(b, "Relu", "y", 1, cv)->out[0];
        break;
    }
    case 8: { /* pointwise conv with 7x7 positions (n % 8 != 0): the conv entry's gather */
        *c = (tcase){"conv f16 1x1 7x7", "lt_cuda_conv_f16_tc64x64(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 32, 7, 7), *w = in4(b, "w", c->dt, 48, 32, 1, 1), *bias = in1(b, "bias", c->dt, 48);
        y = conv(b, x, w, bias, 1, 1, 0, 1, 1)->out[0];
        break;
    }
    case 9: { /* pointwise conv with 8x8 positions: the GEMM entry (bias per row) */
        *c = (tcase){"conv f16 1x1 8x8 (gemm)", "lt_cuda_mm_f16_nn_64x64(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 32, 8, 8), *w = in4(b, "w", c->dt, 48, 32, 1, 1), *bias = in1(b, "bias", c->dt, 48);
        lt_value *cv = conv(b, x, w, bias, 1, 1, 0, 1, 1)->out[0];
        y = tb_node(b, "Relu", "y", 1, cv)->out[0];
        break;
    }
    case 10: { /* grouped conv (2 groups of 32 channels), float16 tensor cores */
        *c = (tcase){"conv f16 groups 2", "lt_cuda_conv_f16_tc64x64(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 32, 9, 9), *w = in4(b, "w", c->dt, 64, 16, 3, 3);
        y = conv(b, x, w, NULL, 3, 1, 1, 1, 2)->out[0];
        break;
    }
    case 11: { /* k = 3*3*3 = 27 (not a multiple of 8): float16 on SIMT (32x32 sliced-K tiles) */
        *c = (tcase){"conv f16 k27 simt", "lt_cuda_conv_f16_simt32(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 3, 11, 11), *w = in4(b, "w", c->dt, 16, 3, 3, 3);
        lt_value *cv = conv(b, x, w, NULL, 3, 1, 0, 1, 1)->out[0];
        y = tb_node(b, "Tanh", "y", 1, cv)->out[0];
        break;
    }
    case 12: { /* a big-enough float16 GEMM for the 128x128 tiles, scalar scale folded as alpha */
        *c = (tcase){"matmul f16 128x128 tiles", "lt_cuda_mm_f16_nn_128x128(", LT_FLOAT16, NULL, 0, NULL};
        int64_t da[2] = {2048, 256}, db[2] = {256, 1536};
        lt_value *a = tb_input(b, "a", c->dt, 2, da), *w = tb_input(b, "w", c->dt, 2, db);
        lt_value *m = tb_node(b, "MatMul", "m", 2, a, w)->out[0];
        y = tb_node(b, "Mul", "y", 2, m, tb_scalar(b, "half", c->dt, 0.5))->out[0];
        break;
    }
    case 13: { /* float32 with enough blocks (120) for the 128x128 SIMT tile; k = 40: a partial k step */
        *c = (tcase){"matmul f32 simt 128x128", "lt_cuda_mm_f32_nn_simt(", LT_FLOAT, NULL, 0, NULL};
        int64_t da[2] = {1536, 40}, db[2] = {40, 1280};
        lt_value *a = tb_input(b, "a", c->dt, 2, da), *w = tb_input(b, "w", c->dt, 2, db);
        y = tb_node(b, "MatMul", "y", 2, a, w)->out[0];
        break;
    }
    case 14: { /* float32 Gemm transB + bias + Relu: 30 blocks at 128x128, 120 at 64x64 (sliced K, nt) */
        *c = (tcase){"gemm f32 transB simt64", "lt_cuda_mm_f32_nt_simt64(", LT_FLOAT, NULL, 0, NULL};
        lt_node *g = gemm_nt(b, c->dt, 768, 640, 100, true, "m");
        y = tb_node(b, "Relu", "y", 1, g->out[0])->out[0];
        break;
    }
    case 15: { /* small float32 Gemm transB with a long k (the BERT b1 shape, scaled down): 32x32 nt */
        *c = (tcase){"gemm f32 transB simt32 long k", "lt_cuda_mm_f32_nt_simt32(", LT_FLOAT, NULL, 0, NULL};
        lt_node *g = gemm_nt(b, c->dt, 100, 40, 300, true, "y");
        y = g->out[0];
        break;
    }
    case 16: { /* float32 3x3 conv + bias + Relu, 28x28: 42 blocks at 128x128, 130 at 64x64 (sliced K) */
        *c = (tcase){"conv f32 3x3 simt64", "lt_cuda_conv_f32_simt64(", LT_FLOAT, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 8, 28, 28), *w = in4(b, "w", c->dt, 320, 8, 3, 3), *bias = in1(b, "bias", c->dt, 320);
        lt_value *cv = conv(b, x, w, bias, 3, 1, 1, 1, 1)->out[0];
        y = tb_node(b, "Relu", "y", 1, cv)->out[0];
        break;
    }
    case 17: { /* pointwise conv of 64 output channels over 32 images: the GEMM entry's 64x128 tile */
        *c = (tcase){"conv f16 1x1 64 channels (64x128)", "lt_cuda_mm_f16_nn_64x128(", LT_FLOAT16, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 32, 16, 32, 32), *w = in4(b, "w", c->dt, 64, 16, 1, 1), *bias = in1(b, "bias", c->dt, 64);
        lt_value *cv = conv(b, x, w, bias, 1, 1, 0, 1, 1)->out[0];
        y = tb_node(b, "Relu", "y", 1, cv)->out[0];
        break;
    }
    case 18: { /* bfloat16 Gemm transB, m = 40 <= 64, 120 column tiles: 64x128 nt */
        *c = (tcase){"gemm bf16 transB 64x128", "lt_cuda_mm_bf16_nt_64x128(", LT_BFLOAT16, NULL, 0, NULL};
        lt_node *g = gemm_nt(b, c->dt, 40, 15360, 32, true, "y");
        y = g->out[0];
        break;
    }
    case 19: { /* sm_90a, a float16 GEMM + bias + Relu: the cost model's pick, wgmma 128x128 (dynamic shared memory) */
        *c = (tcase){"matmul f16 sm_90a wgmma 128x128", "lt_cuda_mm_f16_nn_wg128x128(", LT_FLOAT16, "sm_90a",
                     3 * (128 + 128) * 128 + 1024, NULL};
        int64_t da[2] = {2048, 256}, db[2] = {256, 2048};
        lt_value *a = tb_input(b, "a", c->dt, 2, da), *w = tb_input(b, "w", c->dt, 2, db), *bias = in1(b, "bias", c->dt, 2048);
        lt_value *m = tb_node(b, "MatMul", "m", 2, a, w)->out[0];
        lt_value *s = tb_node(b, "Add", "s", 2, m, bias)->out[0];
        y = tb_node(b, "Relu", "y", 1, s)->out[0];
        break;
    }
    case 20: { /* sm_90a, bfloat16 Gemm transB with ragged m and k (k = 136: a partial k tile), wgmma 128x256 forced */
        *c = (tcase){"gemm bf16 transB wgmma 128x256", "lt_cuda_mm_bf16_nt_wg128x256(", LT_BFLOAT16, "sm_90a",
                     4 * (128 + 256) * 128 + 1024, "wg128x256"};
        lt_node *g = gemm_nt(b, c->dt, 1000, 1528, 136, true, "y");
        y = g->out[0];
        break;
    }
    case 21: { /* sm_90a, batched float16 MatMul with m = 40 and a residual, wgmma 64x128 forced */
        *c = (tcase){"matmul f16 batched wgmma 64x128", "lt_cuda_mm_f16_nn_wg64x128(", LT_FLOAT16, "sm_90a",
                     4 * (64 + 128) * 128 + 1024, "wg64x128"};
        int64_t da[3] = {12, 40, 64}, db[3] = {12, 64, 2048}, dr[3] = {12, 40, 2048};
        lt_value *a = tb_input(b, "a", c->dt, 3, da), *w = tb_input(b, "w", c->dt, 3, db), *r = tb_input(b, "r", c->dt, 3, dr);
        lt_value *m = tb_node(b, "MatMul", "m", 2, a, w)->out[0];
        y = tb_node(b, "Add", "y", 2, m, r)->out[0];
        break;
    }
    case 22: { /* any target, a big bfloat16 Gemm transB: mma.sync 128x256 (dynamic shared memory) */
        *c = (tcase){"gemm bf16 transB mma.sync 128x256", "lt_cuda_mm_bf16_nt_128x256(", LT_BFLOAT16, NULL,
                     4 * (128 + 256) * 64, NULL};
        lt_node *g = gemm_nt(b, c->dt, 2040, 2048, 264, false, "m");
        y = tb_node(b, "Tanh", "y", 1, g->out[0])->out[0];
        break;
    }
    case 23: { /* a wide 3x3 conv (256 output channels) over 8 images, ragged k and positions: the 256x128 tile */
        *c = (tcase){"conv f16 3x3 256 channels (256x128)", "lt_cuda_conv_f16_tc256x128(", LT_FLOAT16, NULL,
                     3 * (256 + 128) * 64, NULL};
        lt_value *x = in4(b, "x", c->dt, 8, 16, 30, 30), *w = in4(b, "w", c->dt, 256, 16, 3, 3), *bias = in1(b, "bias", c->dt, 256);
        lt_value *cv = conv(b, x, w, bias, 3, 1, 1, 1, 1)->out[0];
        y = tb_node(b, "Relu", "y", 1, cv)->out[0];
        break;
    }
    case 24: { /* a classifier head: 3 rows, k = 1000 (not a multiple of the 256-wide k pass), + bias: skinny nn */
        *c = (tcase){"matmul f32 skinny rows", "lt_cuda_mm_f32_nn_skinny(", LT_FLOAT, NULL, 0, NULL};
        int64_t da[2] = {3, 1000}, db[2] = {1000, 70};
        lt_value *a = tb_input(b, "a", c->dt, 2, da), *w = tb_input(b, "w", c->dt, 2, db), *bias = in1(b, "bias", c->dt, 70);
        lt_value *m = tb_node(b, "MatMul", "m", 2, a, w)->out[0];
        y = tb_node(b, "Add", "y", 2, m, bias)->out[0];
        break;
    }
    case 25: { /* float16 Gemm transB with 5 rows, a ragged n and k, + bias + Relu: skinny nt, not the tensor cores */
        *c = (tcase){"gemm f16 transB skinny", "lt_cuda_mm_f16_nt_skinny(", LT_FLOAT16, NULL, 0, NULL};
        lt_node *g = gemm_nt(b, c->dt, 5, 300, 520, true, "m");
        y = tb_node(b, "Relu", "y", 1, g->out[0])->out[0];
        break;
    }
    case 26: { /* batched bfloat16 MatMul of one row each (attention at decode, scaled down), 12 rows in all */
        *c = (tcase){"matmul bf16 batched skinny", "lt_cuda_mm_bf16_nn_skinny(", LT_BFLOAT16, NULL, 0, NULL};
        int64_t da[3] = {12, 1, 264}, db[3] = {12, 264, 40};
        lt_value *a = tb_input(b, "a", c->dt, 3, da), *w = tb_input(b, "w", c->dt, 3, db);
        y = tb_node(b, "MatMul", "y", 2, a, w)->out[0];
        break;
    }
    case 27: { /* a 1x1 conv of a 2x2 image (n = 4 positions), 96 channels, + bias + Relu: tall nn */
        *c = (tcase){"conv f32 1x1 tiny image (tall)", "lt_cuda_mm_f32_nn_tall(", LT_FLOAT, NULL, 0, NULL};
        lt_value *x = in4(b, "x", c->dt, 2, 64, 2, 2), *w = in4(b, "w", c->dt, 96, 64, 1, 1), *bias = in1(b, "bias", c->dt, 96);
        lt_value *cv = conv(b, x, w, bias, 1, 1, 0, 1, 1)->out[0];
        y = tb_node(b, "Relu", "y", 1, cv)->out[0];
        break;
    }
    case 28: { /* float16 Gemm transB with 3 columns and a ragged k, + bias: tall nt */
        *c = (tcase){"gemm f16 transB tall", "lt_cuda_mm_f16_nt_tall(", LT_FLOAT16, NULL, 0, NULL};
        y = gemm_nt(b, c->dt, 300, 3, 200, true, "y")->out[0];
        break;
    }
    default: tb_free(b); return false;
    }
    if (i == 6) { /* Clip at opset 17 takes min / max as inputs */
        lt_node *cl = y->producer;
        lt_node_del_attr(cl, "min");
        lt_value *lo = tb_scalar(b, "lo", c->dt, -0.5), *hi = tb_scalar(b, "hi", c->dt, 0.75);
        lt_node_set_n_inputs(&b->ctx, cl, 3);
        cl->in[1] = lo, cl->in[2] = hi;
    }
    tb_output(b, y);
    tb_infer(b);
    return true;
}

/* ---- lowering and emission ---- */
typedef struct lowered {
    lt_arena arena;
    lt_groups gs;
    lt_lowered lw[16];
    lt_emit_kernel ek[16];
    int nk;
    lt_strbuf src;
} lowered;

static bool lower_model(tb *b, lowered *L, const char *name, const char *arch, const char *tile) {
    memset(L, 0, sizeof *L);
    lt_arena_init(&L->arena);
    lt_ctx ctx = {0};
    lt_fuse_options fo = {.gpu = true};
    lt_lower_options lo = {.vector_lanes = 1, .gpu = true, .wgmma = arch && strcmp(arch, "sm_90a") == 0, .gpu_tile = tile};
    if (lt_fuse(&ctx, b->m, &L->arena, &fo, &L->gs) != LT_OK) {
        fprintf(stderr, "%s: fuse: %s\n", name, ctx.msg);
        failures++;
        return false;
    }
    for (int i = 0; i < L->gs.n; i++) {
        const lt_group *g = &L->gs.groups[i];
        if (g->host) {
            fprintf(stderr, "%s: group %d is a host group: %s\n", name, i, g->reason);
            failures++;
            return false;
        }
        if (L->nk >= 16) return false;
        lt_lowered *lw = &L->lw[L->nk];
        if (lt_lower_group(&ctx, &L->gs, g, &L->arena, &lo, lw) != LT_OK || lt_lower_apply_schedule(&ctx, lw) != LT_OK ||
            lt_lower_simplify(&ctx, lw) != LT_OK) {
            fprintf(stderr, "%s: lowering group %d: %s\n", name, i, ctx.msg);
            failures++;
            return false;
        }
        CHECK(lw->n_packs == 0 && lw->n_scratch == 0);
        L->ek[L->nk] = (lt_emit_kernel){lw->kernel, name};
        L->nk++;
    }
    if (getenv("TEST_CUDA_CALL_LOG")) {
        lt_strbuf gp = {0};
        lt_groups_print(&L->gs, &gp);
        printf("%s", gp.s ? gp.s : "");
        lt_sb_free(&gp);
    }
    if (lt_emit_module(&ctx, &lt_lang_cuda, L->ek, L->nk, NULL, &L->src) != LT_OK) {
        fprintf(stderr, "%s: emit: %s\n", name, ctx.msg);
        failures++;
        return false;
    }
    return true;
}

static void lowered_free(lowered *L) {
    lt_sb_free(&L->src);
    lt_arena_free(&L->arena);
}

/* ---- running on the GPU ---- */
static lt_cuda *cu;

static size_t tbytes(const lt_value *v) {
    int64_t n = 1;
    for (int d = 0; d < v->type.rank; d++) n *= v->type.dims[d].value;
    return (size_t)n * (size_t)lt_dtype_size(v->type.dtype);
}

/* Device buffers of every value a kernel touches (inputs uploaded from `in`, constants from their
 * tensors), indexed by value id. */
typedef struct devvals {
    void **ptr;
    int n;
} devvals;

static bool dev_value(lt_ctx *ctx, tb *b, devvals *dv, const lt_value *v, lt_datum **in) {
    if (dv->ptr[v->id]) return true;
    size_t bytes = tbytes(v);
    if (lt_cuda_alloc(cu, ctx, bytes ? bytes : 1, &dv->ptr[v->id]) != LT_OK) return false;
    const void *host = NULL;
    for (int i = 0; i < b->g->n_inputs; i++)
        if (b->g->inputs[i] == v) host = in[i]->tensor->data;
    const lt_tensor *t = v->producer ? NULL : v->init;
    if (!host && t) host = t->data;
    if (host) return lt_cuda_copy(cu, ctx, dv->ptr[v->id], host, bytes, LT_COPY_HOST_TO_DEVICE) == LT_OK;
    return lt_cuda_memset(cu, ctx, dv->ptr[v->id], 0xff, bytes) == LT_OK; /* outputs: NaN until written */
}

static void run_case(tb *b, lowered *L, const tcase *c) {
    lt_ctx ctx = {0};
    tb_snap snap;
    tb_snapshot(b, &snap); /* reference outputs and the random inputs */
    if (!snap.n) return;
    lt_cuda_module *mod = NULL;
    devvals dv = {calloc((size_t)b->g->n_values + 1, sizeof(void *)), b->g->n_values};
    bool ok = lt_cuda_module_compile(cu, &ctx, L->src.s, NULL, &mod) == LT_OK;
    for (int k = 0; k < L->nk && ok; k++) {
        lt_lowered *lw = &L->lw[k];
        void *args[64];
        for (int i = 0; i < lw->n_args && ok; i++) {
            ok = lw->arg_values[i] && dev_value(&ctx, b, &dv, lw->arg_values[i], snap.in);
            if (ok) args[i] = dv.ptr[lw->arg_values[i]->id];
        }
        lt_cuda_func *f = NULL;
        ok = ok && lt_cuda_module_func(cu, &ctx, mod, lw->kernel->name, &f) == LT_OK &&
             lt_cuda_launch_args(cu, &ctx, f, args, lw->n_args) == LT_OK;
    }
    ok = ok && lt_cuda_sync(cu, &ctx) == LT_OK;
    if (!ok) {
        fprintf(stderr, "%s: GPU run: %s\n", c->name, ctx.msg);
        failures++;
    }
    for (int o = 0; o < b->g->n_outputs && ok; o++) {
        const lt_value *v = b->g->outputs[o];
        const lt_tensor *want = snap.out[o]->tensor;
        void *got = malloc(tbytes(v));
        if (!dv.ptr[v->id] || lt_cuda_copy(cu, &ctx, got, dv.ptr[v->id], tbytes(v), LT_COPY_DEVICE_TO_HOST) != LT_OK) {
            fprintf(stderr, "%s: output '%s' not computed: %s\n", c->name, v->name, ctx.msg);
            failures++;
            free(got);
            continue;
        }
        tol_dt = c->dt;
        int64_t bad = 0, first = -1;
        double gv = 0, wv = 0;
        for (int64_t i = 0; i < want->numel; i++) {
            double g = lt_load_f64(got, v->type.dtype, i), w = lt_load_f64(want->data, want->dtype, i);
            if (!close_enough(g, w)) {
                if (first < 0) first = i, gv = g, wv = w;
                bad++;
            }
        }
        if (bad) {
            fprintf(stderr, "%s: %lld of %lld outputs differ; first at %lld: got %g, want %g\n", c->name, (long long)bad,
                    (long long)want->numel, (long long)first, gv, wv);
            failures++;
        }
        free(got);
    }
    printf("test_cuda_call: %-34s ran on the GPU: %s\n", c->name, ok ? "match" : "FAILED");
    for (int i = 0; i < dv.n; i++) lt_cuda_free(cu, dv.ptr[i]);
    free(dv.ptr);
    lt_cuda_module_free(cu, mod);
    for (int i = 0; i < 8; i++) {
        lt_datum_release(snap.in[i]);
        lt_datum_release(snap.out[i]);
    }
}

/* ---- benchmark ---- */
typedef struct bshape {
    const char *name;
    int64_t n, c, h, w, oc, k, s, p; /* conv; k == 0: GEMM m = n, k = c, n = oc */
    int epi;                         /* GEMM: 0 none, 1 + bias per column, 2 + bias, then Gelu */
} bshape;

static const bshape bench_shapes[] = {
    {"gemm 4096^3", 4096, 4096, 0, 0, 4096, 0, 0, 0, 0},
    {"bert qkv 1024x768x768", 1024, 768, 0, 0, 768, 0, 0, 0, 1},
    {"bert ffn1 1024x768x3072", 1024, 768, 0, 0, 3072, 0, 0, 0, 2},
    {"bert ffn2 1024x3072x768", 1024, 3072, 0, 0, 768, 0, 0, 0, 1},
    {"r50 conv1 7x7/2", 32, 3, 224, 224, 64, 7, 2, 3, 0},
    {"r50 l1 1x1 64-64", 32, 64, 56, 56, 64, 1, 1, 0, 0},
    {"r50 l1 3x3 64", 32, 64, 56, 56, 64, 3, 1, 1, 0},
    {"r50 l1 1x1 64-256", 32, 64, 56, 56, 256, 1, 1, 0, 0},
    {"r50 l2 3x3 128/2", 32, 128, 56, 56, 128, 3, 2, 1, 0},
    {"r50 l2 3x3 128", 32, 128, 28, 28, 128, 3, 1, 1, 0},
    {"r50 l3 3x3 256", 32, 256, 14, 14, 256, 3, 1, 1, 0},
    {"r50 l3 1x1 256-1024", 32, 256, 14, 14, 1024, 1, 1, 0, 0},
    {"r50 l4 3x3 512", 32, 512, 7, 7, 512, 3, 1, 1, 0},
    {"r50 l4 1x1 512-2048", 32, 512, 7, 7, 2048, 1, 1, 0, 0},
};

/* The kernel of L (one) timed on the GPU: CUDA-event mean of 20 launches after 3 warm-ups; < 0 on failure. */
static double time_kernel(lowered *L, const char *name) {
    lt_ctx ctx = {0};
    lt_lowered *lw = &L->lw[0];
    lt_cuda_module *mod = NULL;
    lt_cuda_func *f = NULL;
    void *args[16] = {0};
    lt_cuda_event *e0 = NULL, *e1 = NULL;
    bool ok = lt_cuda_module_compile(cu, &ctx, L->src.s, NULL, &mod) == LT_OK &&
              lt_cuda_module_func(cu, &ctx, mod, lw->kernel->name, &f) == LT_OK && lw->n_args <= 16;
    for (int i = 0; i < lw->n_args && ok; i++) {
        size_t bytes = tbytes(lw->arg_values[i]);
        ok = lt_cuda_alloc(cu, &ctx, bytes, &args[i]) == LT_OK && lt_cuda_memset(cu, &ctx, args[i], 0x3c, bytes) == LT_OK;
    }
    ok = ok && lt_cuda_event_new(cu, &ctx, &e0) == LT_OK && lt_cuda_event_new(cu, &ctx, &e1) == LT_OK;
    float ms = 0;
    int reps = 20;
    for (int w = 0; w < 3 && ok; w++) ok = lt_cuda_launch_args(cu, &ctx, f, args, lw->n_args) == LT_OK;
    ok = ok && lt_cuda_event_record(cu, &ctx, e0) == LT_OK;
    for (int r = 0; r < reps && ok; r++) ok = lt_cuda_launch_args(cu, &ctx, f, args, lw->n_args) == LT_OK;
    ok = ok && lt_cuda_event_record(cu, &ctx, e1) == LT_OK && lt_cuda_event_elapsed(cu, &ctx, e0, e1, &ms) == LT_OK;
    if (!ok) {
        fprintf(stderr, "bench %s: %s\n", name, ctx.msg);
        failures++;
    }
    lt_cuda_event_free(cu, e0);
    lt_cuda_event_free(cu, e1);
    for (int i = 0; i < lw->n_args; i++) lt_cuda_free(cu, args[i]);
    lt_cuda_module_free(cu, mod);
    return ok ? ms / reps : -1;
}

/* Each shape in each dtype lowered as a compiled model would be (for this GPU's target) and timed.
 * With sweep, the float16 GEMMs also with every tensor-core tile forced (lt_lower_options.gpu_tile):
 * the numbers behind lower_gpu_gemm.c's choice. */
static void bench(bool json, bool sweep) {
    static const char *const tiles[] = {NULL, "wg128x256", "wg128x128", "wg64x128", "128x256", "128x128", "64x128", "64x64"};
    lt_dtype dts[3] = {LT_FLOAT16, LT_BFLOAT16, LT_FLOAT};
    for (size_t si = 0; si < sizeof bench_shapes / sizeof *bench_shapes; si++)
        for (int di = 0; di < 3; di++) {
            const bshape *sh = &bench_shapes[si];
            lt_dtype dt = dts[di];
            if (dt == LT_BFLOAT16 && sh->k) continue; /* conv: float16 and float32 */
            tb b;
            tb_init(&b, 17);
            double flops;
            if (!sh->k) {
                int64_t da[2] = {sh->n, sh->c}, db[2] = {sh->c, sh->oc};
                lt_value *a = tb_input(&b, "a", dt, 2, da), *w = tb_input(&b, "w", dt, 2, db);
                lt_value *y = tb_node(&b, "MatMul", "m", 2, a, w)->out[0];
                if (sh->epi) y = tb_node(&b, "Add", "s", 2, y, in1(&b, "bias", dt, sh->oc))->out[0];
                if (sh->epi == 2) y = tb_node(&b, "Gelu", "g", 1, y)->out[0];
                tb_output(&b, y);
                flops = 2.0 * sh->n * sh->c * sh->oc;
            } else {
                lt_value *x = in4(&b, "x", dt, sh->n, sh->c, sh->h, sh->w), *w = in4(&b, "w", dt, sh->oc, sh->c, sh->k, sh->k);
                lt_value *bias = in1(&b, "bias", dt, sh->oc);
                lt_value *cv = conv(&b, x, w, bias, sh->k, sh->s, sh->p, 1, 1)->out[0];
                tb_output(&b, tb_node(&b, "Relu", "y", 1, cv)->out[0]);
                int64_t oh = (sh->h + 2 * sh->p - sh->k) / sh->s + 1, ow = (sh->w + 2 * sh->p - sh->k) / sh->s + 1;
                flops = 2.0 * sh->n * sh->oc * oh * ow * sh->c * sh->k * sh->k;
            }
            tb_infer(&b);
            int n_tiles = sweep && dt == LT_FLOAT16 ? (int)(sizeof tiles / sizeof *tiles) : 1;
            for (int ti = 0; ti < n_tiles; ti++) {
                lowered L;
                if (!lower_model(&b, &L, sh->name, lt_cuda_get_info(cu)->arch, tiles[ti]) || L.nk != 1) {
                    lowered_free(&L);
                    break;
                }
                const char *marker = strstr(L.src.s, "lathe: end of prelude");
                const char *call = strstr(marker ? marker : L.src.s, "lt_cuda_");
                char entry[64] = "loops";
                if (call) sscanf(call, "%63[a-z0-9_]", entry);
                size_t el = strlen(entry), tl = tiles[ti] ? strlen(tiles[ti]) : 0;
                if (ti > 0 && (el < tl || strcmp(entry + el - tl, tiles[ti]) != 0)) { /* no tensor-core GEMM here */
                    lowered_free(&L);
                    break;
                }
                double t = time_kernel(&L, sh->name);
                if (t > 0 && json)
                    printf("{\"name\": \"%s\", \"dtype\": \"%s\", \"entry\": \"%s\", \"ms\": %.5f, \"tflops\": %.3f}\n", sh->name,
                           lt_dtype_name(dt), entry, t, flops / (t * 1e-3) / 1e12);
                else if (t > 0)
                    printf("bench %-24s %-8s %-30s %8.4f ms %8.2f TFLOP/s%s\n", sh->name, lt_dtype_name(dt), entry, t,
                           flops / (t * 1e-3) / 1e12, ti ? " (forced)" : "");
                lowered_free(&L);
            }
            tb_free(&b);
        }
}

int main(int argc, char **argv) {
    bool want_bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
    bool json = argc > 2 && strcmp(argv[2], "--json") == 0, sweep = argc > 2 && strcmp(argv[2], "--sweep") == 0;
    lt_ctx ctx = {0};
    lt_cuda_options co = {.cache_dir = getenv("LATHE_CUDA_CACHE")}; /* tests may read the environment */
    if (lt_cuda_open(&ctx, &co, &cu) != LT_OK) {
        cu = NULL;
        if (want_bench) {
            fprintf(stderr, "test_cuda_call --bench: no GPU: %s\n", ctx.msg);
            return 1;
        }
        printf("test_cuda_call: no GPU here (%s): lowering and NVRTC only\n", ctx.msg);
        lt_ctx_clear(&ctx);
    }
    if (want_bench) {
        bench(json, sweep);
        lt_cuda_close(cu);
        return failures ? 1 : 0;
    }
    lt_nvrtc *nv = NULL;
    if (lt_nvrtc_open(&ctx, &nv) != LT_OK) {
        printf("test_cuda_call: no NVRTC (%s): emitted modules are not compiled\n", ctx.msg);
        nv = NULL;
    }
    tb b;
    tcase c;
    for (int i = 0; make_case(i, &b, &c); i++) {
        lowered L;
        if (lower_model(&b, &L, c.name, c.arch, c.tile)) {
            const char *kernels = strstr(L.src.s, "lathe: end of prelude");
            if (!kernels || !strstr(kernels, c.expect)) {
                fprintf(stderr, "%s: the module does not call %s:\n%s\n", c.name, c.expect,
                        strstr(L.src.s, "end of prelude") ? strstr(L.src.s, "end of prelude") : L.src.s);
                failures++;
            }
            /* the kernel records the entry's dynamic shared memory and the emitter writes it beside the launch shape */
            char line[64];
            snprintf(line, sizeof line, ", dynamic shared %lld */", (long long)c.dyn_shared);
            CHECK(L.lw[0].kernel->dyn_shared == c.dyn_shared);
            CHECK(c.dyn_shared ? kernels && strstr(kernels, line) != NULL : !kernels || !strstr(kernels, ", dynamic shared"));
            if (nv) {
                lt_cuda_image img = {0};
                lt_ctx bc = {0};
                static const char *const verbose[] = {"--ptxas-options=-v"};
                lt_cuda_compile_options o = {.name = c.name, .extra = verbose, .n_extra = 1};
                if (lt_cuda_build(&bc, nv, L.src.s, "sm_90a", NULL, &o, &img) != LT_OK) {
                    fprintf(stderr, "%s: NVRTC: %s\n", c.name, bc.msg);
                    failures++;
                } else {
                    int regs = 0, spill = 0; /* the most of any function in the module */
                    for (const char *r = img.log ? strstr(img.log, "Used ") : NULL; r; r = strstr(r + 1, "Used ")) {
                        int v = 0;
                        if (sscanf(r, "Used %d registers", &v) == 1 && v > regs) regs = v;
                    }
                    for (const char *e = img.log ? strstr(img.log, " bytes spill stores") : NULL; e;
                         e = strstr(e + 1, " bytes spill stores")) {
                        const char *q = e;
                        while (q > img.log && q[-1] >= '0' && q[-1] <= '9') q--;
                        if (atoi(q) > spill) spill = atoi(q);
                    }
                    printf("test_cuda_call: %-34s -> %s, cubin %zu bytes, %d registers, %d bytes spilled (%.1f s)\n", c.name,
                           c.expect, img.size, regs, spill, img.seconds);
                    CHECK(spill == 0); /* the tile entries keep their accumulators in registers */
                    if (getenv("TEST_CUDA_CALL_LOG")) printf("%s\n", img.log ? img.log : "");
                }
                lt_cuda_image_free(&img);
            }
            if (cu && (!c.arch || strcmp(c.arch, lt_cuda_get_info(cu)->arch) == 0)) run_case(&b, &L, &c);
            else if (cu) printf("test_cuda_call: %-34s not run: lowered for %s, the GPU is %s\n", c.name, c.arch,
                                lt_cuda_get_info(cu)->arch);
        }
        lowered_free(&L);
        tb_free(&b);
    }
    if (nv) lt_nvrtc_close(nv);
    lt_cuda_close(cu);
    if (failures) fprintf(stderr, "test_cuda_call: %d failure(s)\n", failures);
    else printf("test_cuda_call: ok\n");
    return failures ? 1 : 0;
}
