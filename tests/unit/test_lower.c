/* test_lower.c — end-to-end tests of fusion + lowering without a C compiler: every model of
 * tests/data/lower_*.onnx is fused, each compiled group is lowered to Loop IR and run by the Loop
 * IR evaluator (src/loop/leval.c), host groups run through the ops' eval hooks, and the graph
 * outputs must match the reference interpreter on random inputs (rtol 1e-4). Each model runs six
 * ways: plain loops unscheduled and scheduled, microkernel calls (the evaluator implements
 * lt_gemm_f32 and the packing calls by gemm.h's documented semantics) with packing and scratch,
 * without packing, without scratch, and unfused. Also checks
 * the printed Loop IR of a small elementwise group and of a reduction. Exits non-zero on failure. */
#include "codegen/prelude/abi.h"
#include "interp/interp.h"
#include "loop/leval.h"
#include "lower/lower.h"
#include "onnx/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#define CHECK_OK(ctx, expr)                                                                        \
    do {                                                                                           \
        if ((expr) != LT_OK) {                                                                     \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, (ctx)->msg);      \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static uint64_t rng = 99;
static double urand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* The prelude calls, by their documented semantics (codegen/prelude/gemm.h; codes of abi.h). Packing copies the
 * operand into a plain row-major [rows, K] (A) or [K, N] (B) layout, which "packed" mode then reads. */
static float act_f(float v, int64_t act, float a, float b) {
    switch (act) {
    case LT_ACT_NONE: return v;
    case LT_ACT_RELU: return v < 0 ? 0 : v;
    case LT_ACT_CLIP: return v < a ? a : (v > b ? b : v);
    case LT_ACT_LEAKY_RELU: return v > 0 ? v : a * v;
    case LT_ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
    case LT_ACT_TANH: return tanhf(v);
    case LT_ACT_GELU: return 0.5f * v * (1.0f + erff(v / sqrtf(2.0f)));
    case LT_ACT_GELU_TANH: return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    case LT_ACT_SILU: return v / (1.0f + expf(-v));
    case LT_ACT_HARD_SIGMOID: { float h = a * v + b; return h < 0 ? 0 : (h > 1 ? 1 : h); }
    default: return NAN;
    }
}

typedef struct call_stats {
    int gemm, pack;
} call_stats;

static lt_status call_fn(lt_ctx *ctx, const char *name, int n, const lt_leval_arg *a, lt_leval_arg *res, void *user) {
    (void)res;
    call_stats *cs = user;
    if ((!strcmp(name, "lt_sgemm_pack_a") || !strcmp(name, "lt_sgemm_pack_b")) && n == 6) {
        bool is_a = name[14] == 'a';
        float *dst = a[0].ptr;
        const float *src = a[1].ptr;
        int64_t ld = a[2].i, mode = a[3].i, R = a[4].i, C = a[5].i; /* A: M x K; B: K x N */
        if (R * C > a[0].avail) return lt_error(ctx, LT_ERR_INVALID, "%s: packed buffer too small", name);
        for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++) {
                /* A (M x K): N mode A[i*lda + k]; B (K x N): N mode B[k*ldb + j]; T the transpose */
                int64_t o = mode == 0 ? r * ld + c : c * ld + r;
                if (o >= a[1].avail) return lt_error(ctx, LT_ERR_INVALID, "%s: source out of range", name);
                dst[r * C + c] = src[o];
            }
        (void)is_a;
        cs->pack++;
        return LT_OK;
    }
    if (!strcmp(name, "lt_conv2d_pack") && n == 7) { /* emulated layout: the weights as they are */
        int64_t cnt = a[2].i * (a[3].i / a[6].i) * a[4].i * a[5].i;
        if (cnt > a[0].avail || cnt > a[1].avail) return lt_error(ctx, LT_ERR_INVALID, "lt_conv2d_pack: sizes");
        memcpy(a[0].ptr, a[1].ptr, sizeof(float) * (size_t)cnt);
        cs->pack++;
        return LT_OK;
    }
    if (!strcmp(name, "lt_conv2d_f32") && n == 28) {
        float *y = a[0].ptr;
        const float *x = a[1].ptr, *w = a[2].ptr, *bias = a[3].ptr, *resid = a[4].ptr;
        int64_t N = a[6].i, C = a[7].i, H = a[8].i, Wd = a[9].i, OC = a[10].i, KH = a[11].i, KW = a[12].i;
        int64_t SH = a[13].i, SW = a[14].i, PH0 = a[15].i, PW0 = a[16].i, PH1 = a[17].i, PW1 = a[18].i;
        int64_t DH = a[19].i, DW = a[20].i, G = a[21].i, bias_mode = a[22].i, res_mode = a[23].i, act = a[24].i;
        float act_a = (float)a[25].f, act_b = (float)a[26].f;
        int64_t OH = (H + PH0 + PH1 - DH * (KH - 1) - 1) / SH + 1, OW = (Wd + PW0 + PW1 - DW * (KW - 1) - 1) / SW + 1;
        int64_t Cg = C / G, OCg = OC / G;
        if (N * OC * OH * OW > a[0].avail) return lt_error(ctx, LT_ERR_INVALID, "lt_conv2d_f32: y too small");
        for (int64_t b = 0; b < N; b++)
            for (int64_t oc = 0; oc < OC; oc++)
                for (int64_t oh = 0; oh < OH; oh++)
                    for (int64_t ow = 0; ow < OW; ow++) {
                        double s2 = 0;
                        int64_t grp = oc / OCg;
                        for (int64_t c = 0; c < Cg; c++)
                            for (int64_t kh = 0; kh < KH; kh++)
                                for (int64_t kw = 0; kw < KW; kw++) {
                                    int64_t ih = oh * SH - PH0 + kh * DH, iw = ow * SW - PW0 + kw * DW;
                                    if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                                    s2 += (double)x[((b * C + grp * Cg + c) * H + ih) * Wd + iw] *
                                          w[((oc * Cg + c) * KH + kh) * KW + kw];
                                }
                        int64_t o = ((b * OC + oc) * OH + oh) * OW + ow;
                        float v = (float)s2 + (bias_mode ? bias[oc] : 0);
                        if (res_mode == 1) v += resid[o];
                        v = act_f(v, act, act_a, act_b);
                        if (res_mode == 2) v += resid[o];
                        y[o] = v;
                    }
        cs->gemm++;
        return LT_OK;
    }
    if (strcmp(name, "lt_gemm_f32") != 0 || n != 33)
        return lt_error(ctx, LT_ERR_UNSUPPORTED, "test evaluator: unknown call %s/%d", name, n);
    float *C = a[0].ptr;
    const float *A = a[1].ptr, *B = a[2].ptr, *bias = a[3].ptr, *resid = a[4].ptr;
    int64_t b1 = a[6].i, b2 = a[7].i, M = a[8].i, N = a[9].i, K = a[10].i, lda = a[11].i, am = a[12].i;
    int64_t sa1 = a[13].i, sa2 = a[14].i, ldb = a[15].i, bm = a[16].i, sb1 = a[17].i, sb2 = a[18].i;
    int64_t ldc = a[19].i, sc1 = a[20].i, sc2 = a[21].i, bias_mode = a[22].i, res_mode = a[23].i;
    int64_t ldr = a[24].i, sr1 = a[25].i, sr2 = a[26].i, act = a[27].i;
    float act_a = (float)a[28].f, act_b = (float)a[29].f, alpha = (float)a[30].f, beta = (float)a[31].f;
    for (int64_t x1 = 0; x1 < b1; x1++)
        for (int64_t x2 = 0; x2 < b2; x2++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t k = 0; k < K; k++) {
                        int64_t ao = am == 2 ? i * K + k : x1 * sa1 + x2 * sa2 + (am == 0 ? i * lda + k : k * lda + i);
                        int64_t bo = bm == 2 ? k * N + j : x1 * sb1 + x2 * sb2 + (bm == 0 ? k * ldb + j : j * ldb + k);
                        if (ao < 0 || ao >= a[1].avail || bo < 0 || bo >= a[2].avail)
                            return lt_error(ctx, LT_ERR_INVALID, "lt_gemm_f32: operand out of range");
                        s += (double)A[ao] * B[bo];
                    }
                    int64_t co = x1 * sc1 + x2 * sc2 + i * ldc + j, ro = x1 * sr1 + x2 * sr2 + i * ldr + j;
                    if (co < 0 || co >= a[0].avail) return lt_error(ctx, LT_ERR_INVALID, "lt_gemm_f32: C out of range");
                    float v = alpha * (float)s + (beta != 0 ? beta * C[co] : 0);
                    if (bias_mode) v += bias[bias_mode == 2 ? i : j];
                    if (res_mode == 1) v += resid[ro];
                    v = act_f(v, act, act_a, act_b);
                    if (res_mode == 2) v += resid[ro];
                    C[co] = v;
                }
    cs->gemm++;
    return LT_OK;
}

static lt_tensor *random_tensor(const lt_value *v) {
    lt_ctx c = {0};
    int64_t dims[LT_MAX_RANK];
    for (int i = 0; i < v->type.rank; i++) dims[i] = v->type.dims[i].value;
    lt_tensor *t = NULL;
    if (lt_tensor_new(&c, v->type.dtype, v->type.rank, dims, &t) != LT_OK) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
        switch (t->dtype) {
        case LT_FLOAT: ((float *)t->data)[i] = (float)(urand() * 2 - 1); break;
        case LT_INT64: ((int64_t *)t->data)[i] = (int64_t)(urand() * 10); break; /* ids < 10 */
        case LT_BOOL: ((uint8_t *)t->data)[i] = urand() < 0.5; break;
        default: break;
        }
    }
    return t;
}

typedef struct run_opts {
    bool schedule, no_microkernels, no_packing, scratch;
    lt_fuse_options fuse;
} run_opts;

/* Run the groups in order; outputs[i] gets graph output i (new references). */
static lt_status run_groups(lt_ctx *ctx, const lt_model *m, lt_datum **vals, const run_opts *ro, call_stats *cs,
                            int *kernels, void **bufs, int *nbufs) {
    const lt_graph *g = m->graph;
    lt_arena arena;
    lt_arena_init(&arena);
    lt_groups gs;
    lt_status s = lt_fuse(ctx, m, &arena, &ro->fuse, &gs);
    lt_lower_options lo = {.vector_lanes = 4, .no_microkernels = ro->no_microkernels, .no_packing = ro->no_packing,
                           .scratch = ro->scratch, .threads = 2};
    for (int gi = 0; s == LT_OK && gi < gs.n; gi++) {
        const lt_group *gr = &gs.groups[gi];
        if (gr->host) {
            const lt_node *n = gr->nodes[0];
            lt_datum *in[16] = {0}, *out[16] = {0};
            for (int i = 0; i < n->n_in; i++) in[i] = n->in[i] ? vals[n->in[i]->id] : NULL;
            lt_eval ev = {.ctx = ctx, .model = m, .run_subgraph = lt_interp_subgraph};
            s = lt_op_hooks_get(n->op)->eval(&ev, n, in, out);
            for (int i = 0; i < n->n_out; i++)
                if (n->out[i]) vals[n->out[i]->id] = out[i];
                else lt_datum_release(out[i]);
            continue;
        }
        lt_lowered lw;
        s = lt_lower_group(ctx, &gs, gr, &arena, &lo, &lw);
        if (s == LT_OK && ro->schedule) s = lt_lower_apply_schedule(ctx, &lw);
        if (s == LT_OK && ro->schedule) s = lt_lower_simplify(ctx, &lw);
        if (s != LT_OK) break;
        (*kernels)++;
        void *args[64] = {0};
        /* packed weights: run their pack kernels; scratch: fresh memory */
        for (int p = 0; p < lw.n_packs && s == LT_OK; p++) {
            const lt_lpack *pk = &lw.packs[p];
            float *buf = calloc((size_t)pk->size, sizeof(float));
            void *pargs[2] = {buf, vals[pk->src->id]->tensor->data};
            s = lt_leval(ctx, pk->kernel, pargs, call_fn, cs);
            args[pk->arg] = buf;
            if (*nbufs < 64) bufs[(*nbufs)++] = buf;
        }
        for (int q = 0; q < lw.n_scratch && s == LT_OK; q++) {
            float *buf = malloc(sizeof(float) * (size_t)lw.scratch[q].size);
            args[lw.scratch[q].arg] = buf;
            if (*nbufs < 64) bufs[(*nbufs)++] = buf;
        }
        for (int i = 0; i < lw.n_args && s == LT_OK; i++) {
            const lt_value *v = lw.arg_values[i];
            if (args[i]) continue;
            if (!v) {
                s = lt_error(ctx, LT_ERR_INTERNAL, "test: argument %d has no value", i);
                break;
            }
            if (i < gr->n_outputs) {
                int64_t dims[LT_MAX_RANK];
                for (int d = 0; d < v->type.rank; d++) dims[d] = v->type.dims[d].value;
                lt_tensor *t;
                s = lt_tensor_new(ctx, v->type.dtype, v->type.rank, dims, &t);
                if (s == LT_OK) s = lt_datum_tensor(ctx, t, &vals[v->id]);
            }
            if (s == LT_OK && !vals[v->id]) s = lt_error(ctx, LT_ERR_INTERNAL, "test: no value for '%s'", v->name);
            if (s == LT_OK) args[i] = vals[v->id]->tensor->data;
        }
        if (s == LT_OK) s = lt_leval(ctx, lw.kernel, args, call_fn, cs);
    }
    lt_arena_free(&arena);
    (void)g;
    return s;
}

static void run_model(const char *path, const run_opts *ro, int expect_kernels_min) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) {
        fprintf(stderr, "load %s: %s\n", path, ctx.msg);
        failures++;
        return;
    }
    const lt_graph *g = m->graph;
    lt_datum **inputs = calloc((size_t)g->n_inputs, sizeof *inputs);
    lt_datum **ref = calloc((size_t)g->n_outputs, sizeof *ref);
    lt_datum **vals = calloc((size_t)g->n_values, sizeof *vals);
    rng = 99;
    for (int i = 0; i < g->n_inputs; i++) {
        lt_tensor *t = random_tensor(g->inputs[i]);
        CHECK(t && lt_datum_tensor(&ctx, t, &inputs[i]) == LT_OK);
        vals[g->inputs[i]->id] = lt_datum_retain(inputs[i]);
    }
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->init && !vals[i]) {
            lt_tensor_retain(g->values[i]->init);
            CHECK(lt_datum_tensor(&ctx, g->values[i]->init, &vals[i]) == LT_OK);
        }
    CHECK_OK(&ctx, lt_interp_run(&ctx, m, NULL, inputs, ref));
    call_stats cs = {0};
    int kernels = 0, nbufs = 0;
    void *bufs[64];
    lt_status s = run_groups(&ctx, m, vals, ro, &cs, &kernels, bufs, &nbufs);
    if (s != LT_OK) {
        fprintf(stderr, "%s (schedule %d, no_mk %d): %s\n", path, ro->schedule, ro->no_microkernels, ctx.msg);
        failures++;
    }
    CHECK(kernels >= expect_kernels_min);
    if (!ro->no_microkernels && (strstr(path, "mlp") || strstr(path, "attn") || strstr(path, "conv")))
        CHECK(cs.gemm > 0);
    if (!ro->no_microkernels && !ro->no_packing && (strstr(path, "mlp") || strstr(path, "conv"))) CHECK(cs.pack > 0);
    if (ro->no_packing) CHECK(cs.pack == 0);
    if (ro->no_microkernels) CHECK(cs.gemm == 0 && cs.pack == 0);
    for (int i = 0; s == LT_OK && i < g->n_outputs; i++) {
        const lt_datum *a = ref[i], *b = vals[g->outputs[i]->id];
        CHECK(a && b && a->tensor && b->tensor);
        if (!a || !b || !a->tensor || !b->tensor) continue;
        const lt_tensor *ta = a->tensor, *tb = b->tensor;
        CHECK(ta->numel == tb->numel && ta->dtype == tb->dtype);
        if (ta->numel != tb->numel || ta->dtype != tb->dtype) continue;
        int bad = 0;
        for (int64_t j = 0; j < ta->numel; j++) {
            double x, y;
            if (ta->dtype == LT_FLOAT) x = ((float *)ta->data)[j], y = ((float *)tb->data)[j];
            else if (ta->dtype == LT_INT64) x = (double)((int64_t *)ta->data)[j], y = (double)((int64_t *)tb->data)[j];
            else continue;
            if (!(fabs(x - y) <= 1e-5 + 1e-4 * fabs(x))) {
                if (bad++ < 3)
                    fprintf(stderr, "%s output %s[%lld]: ref %g got %g (schedule %d)\n", path, g->outputs[i]->name,
                            (long long)j, x, y, ro->schedule);
            }
        }
        CHECK(bad == 0);
    }
    for (int i = 0; i < g->n_inputs; i++) lt_datum_release(inputs[i]);
    for (int i = 0; i < g->n_outputs; i++) lt_datum_release(ref[i]);
    for (int i = 0; i < g->n_values; i++) lt_datum_release(vals[i]);
    for (int i = 0; i < nbufs; i++) free(bufs[i]);
    free(inputs), free(ref), free(vals);
    lt_model_free(m);
}

static const struct {
    const char *path;
    int min_kernels;
} models[] = {
    {"tests/data/lower_ew.onnx", 2},   {"tests/data/lower_ln.onnx", 3},  {"tests/data/lower_attn.onnx", 3},
    {"tests/data/lower_attn2.onnx", 5},   {"tests/data/lower_proj.onnx", 3},
    {"tests/data/lower_mlp.onnx", 3},  {"tests/data/lower_conv.onnx", 6}, {"tests/data/lower_inj.onnx", 3},
    {"tests/data/lower_red.onnx", 10}, {"tests/data/lower_host.onnx", 2}, {"tests/data/lower_bcast.onnx", 1},
};

/* The printed Loop IR of one lowered group. */
static char *lowered_text(const char *path, int group, bool schedule) {
    lt_ctx ctx = {0};
    lt_model *m = NULL;
    if (lt_onnx_load_file(&ctx, path, NULL, &m) != LT_OK) return NULL;
    lt_arena arena;
    lt_arena_init(&arena);
    lt_groups gs;
    lt_lowered lw;
    lt_lower_options lo = {.vector_lanes = 4};
    char *res = NULL;
    if (lt_fuse(&ctx, m, &arena, NULL, &gs) == LT_OK && group < gs.n &&
        lt_lower_group(&ctx, &gs, &gs.groups[group], &arena, &lo, &lw) == LT_OK &&
        (!schedule || (lt_lower_apply_schedule(&ctx, &lw) == LT_OK && lt_lower_simplify(&ctx, &lw) == LT_OK))) {
        lt_strbuf sb = {0};
        lt_kernel_print(lw.kernel, &sb);
        res = strdup(sb.s ? sb.s : "");
        lt_sb_free(&sb);
    } else {
        fprintf(stderr, "lowered_text %s g%d: %s\n", path, group, ctx.msg);
    }
    lt_arena_free(&arena);
    lt_model_free(m);
    return res;
}

static void test_printed_ir(void) {
    /* y = exp(relu(x) * c + z) over [2,3,4] with c[4]: the coalesced view is [6, 4] */
    char *t = lowered_text("tests/data/lower_ew.onnx", 0, false);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "for i0 in [0, 6)") || !strstr(t, "for i1 in [0, 4)") || !strstr(t, "exp(") ||
            !strstr(t, "c[i1]"))
            fprintf(stderr, "unexpected Loop IR for lower_ew g0:\n%s\n", t), failures++;
        free(t);
    }
    /* the second group: y2 = -sigmoid(x), one flat loop of 24 */
    t = lowered_text("tests/data/lower_ew.onnx", 1, true);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "[0, 24)") && !strstr(t, "vectorized")) fprintf(stderr, "lower_ew g1:\n%s\n", t), failures++;
        free(t);
    }
}

/* GPT-2 style attention (lower_attn2): the heads are strided views the GEMM call reads in place
 * (Q's rows 8 floats apart in q4, heads 4 apart; K^T in T mode), the Div is the call's alpha, only
 * the mask is a Loop IR nest; the second MatMul writes the merged heads transposed (rows 8 apart,
 * heads 4 apart) and adds the residual in a nest (a transposed C takes no residual in the call). */
static void test_attention_views(void) {
    char *t = lowered_text("tests/data/lower_attn2.onnx", 2, false);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "eval lt_gemm_f32(&sw[0], &q4[0], &k[0]") ||
            !strstr(t, ", 2, 2, 8, 8, 4, 8, 0, 64, 4, 8, 1, 64, 4, 8, 128, 64,") || !strstr(t, "0.5f, 0.0f") ||
            !strstr(t, "mask[") || strstr(t, "/2.0f"))
            fprintf(stderr, "unexpected Loop IR for lower_attn2 g2:\n%s\n", t), failures++;
        free(t);
    }
    t = lowered_text("tests/data/lower_attn2.onnx", 4, false);
    CHECK(t != NULL);
    if (t) {
        /* C: ldc 8 (a row of the merged [2,8,8] output), heads 4 apart, images 64 apart */
        if (!strstr(t, "eval lt_gemm_f32(&y[0], &p[0], &v[0]") || !strstr(t, ", 8, 64, 4, 0, 0,") ||
            !strstr(t, "y[ej + ei*8 + eb1*4 + eb0*64] = y[ej + ei*8 + eb1*4 + eb0*64] + r["))
            fprintf(stderr, "unexpected Loop IR for lower_attn2 g4:\n%s\n", t), failures++;
        free(t);
    }
}

/* lower_proj: the residual after a reshape adding a leading 1 is added by the GEMM call itself
 * (res_mode 1); with a mask after it, the call still adds the residual and a nest applies the
 * mask only. */
static void test_projection_epilogues(void) {
    char *t = lowered_text("tests/data/lower_proj.onnx", 0, false);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "eval lt_gemm_f32(&y[0], &x[0], &Bpacked[0], &b[0], &xr[0]") || strstr(t, "for "))
            fprintf(stderr, "unexpected Loop IR for lower_proj g0:\n%s\n", t), failures++;
        free(t);
    }
    t = lowered_text("tests/data/lower_proj.onnx", 1, false);
    CHECK(t != NULL);
    if (t) {
        if (!strstr(t, "eval lt_gemm_f32(&y2[0], &x[0], &Bpacked[0], &y2[0], &xr[0]") ||
            !strstr(t, "= cond[ej + ei*8] ? t : 0.0f") || strstr(t, "xr[e"))
            fprintf(stderr, "unexpected Loop IR for lower_proj g1:\n%s\n", t), failures++;
        free(t);
    }
}

int main(void) {
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        for (int v = 0; v < 5; v++) {
            /* plain loops unscheduled and scheduled; microkernel calls with packing and scratch,
             * then without packing, then without scratch */
            run_opts ro = {.schedule = v != 0, .no_microkernels = v <= 1, .no_packing = v == 3, .scratch = v != 4};
            run_model(models[i].path, &ro, models[i].min_kernels);
        }
        run_opts nofuse = {.schedule = true, .fuse = {.no_fusion = true}};
        run_model(models[i].path, &nofuse, models[i].min_kernels);
    }
    test_printed_ir();
    test_attention_views();
    test_projection_epilogues();
    if (failures) fprintf(stderr, "test_lower: %d failure(s)\n", failures);
    return failures != 0;
}
