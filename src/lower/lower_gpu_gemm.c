/* lower_gpu_gemm.c — MatMul / Gemm / pointwise Conv on the GPU: one call of a CUDA prelude GEMM tile
 * entry (cuda_gemm.h lt_cuda_mm_<dt>_<nn|nt>_<tile>) bound to blocks and threads (see lower_gpu.h).
 *
 * The entry takes C = epilogue(alpha * A @ B) over two batch dims (b1 x b2, element strides per
 * operand), A row-major (lda, unit k stride), B as [k, n] (nn, unit n stride) or [n, k] (nt, unit k
 * stride), C with unit column stride; outer batch dims become GPU_BLOCK loops on axes y and z.
 * Configuration: float16 / bfloat16 with k, n, lda, ldb, ldc and every batch stride multiples of 8
 * go to the tensor cores (tc_choose): on sm_90a whichever of the wgmma tiles (128x256, 128x128,
 * 64x128, in dynamic shared memory, whose size the kernel records in lt_kernel.dyn_shared) and the
 * mma.sync ones (128x256 dynamic; 128x128, 64x128, 64x64 static) an estimate from measured rates
 * finds fastest; elsewhere mma.sync 128x256 or 128x128 when they give the GPU enough blocks (>= 120)
 * (64x128 when m <= 64), else 64x64;
 * everything else to the SIMT tiles: 128x128, or the sliced-K 64x64 / 32x32 ones when the larger
 * tile leaves the GPU too few blocks (lt_lower_gpu_simt_tile). Before both: at most LT_SKINNY_MR
 * rows and a long K (abi.h) go to the skinny tile, at most LT_SKINNY_MR columns to the tall one, any
 * dtype: matrix-vector products, bound by reading the big operand. Whatever the entries cannot take
 * (no unit-stride layout, Gemm's beta*C matrix, an epilogue rest, more than 4 batch dims, mixed dtypes) falls back
 * to lt_lower_gemm_gpu_loops. Also lt_lower_gpu_supported: which nodes compile on the GPU only.
 */
#include "lower_gpu.h"

#include "../codegen/prelude/abi.h" /* LT_ACT_*, LT_MM_DYN_SMEM_*, LT_SKINNY_* */

#include <stdio.h>
#include <string.h>

#define K_ (lc->k)
#define MIN_BLOCKS 120 /* about one block per SM of an H100 (132) */
#define MAX_BLOCKS (1 << 20)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K_, v); }

int lt_lower_gpu_act(int call_act) {
    return call_act >= LT_ACT_NONE && call_act < LT_ACT_COUNT ? call_act : -1; /* one numbering: abi.h */
}

lt_lnode *lt_lower_gpu_loop(lt_lctx *lc, lt_lvar *v, lt_loop_role role, int64_t extent, lt_loop_kind kind, int axis,
                            lt_lnode *body) {
    lt_lnode *f = v && body ? lt_l_for(K_, v, role, I(lc, 0), I(lc, extent), kind, body) : NULL;
    if (f) f->ival = axis;
    return f;
}

static const char *dt_name(lt_dtype dt) {
    return dt == LT_FLOAT ? "f32" : dt == LT_FLOAT16 ? "f16" : dt == LT_BFLOAT16 ? "bf16" : NULL;
}

static bool mult8(int64_t v) { return v % 8 == 0; }

bool lt_lower_gpu_wgmma(const lt_lctx *lc) {
    return lc->opt && lc->opt->wgmma;
}

/* The tensor-core tile entries (cuda_gemm.h lt_cuda_mm_<dt>_<nn|nt>_<name>): tile and k step, threads,
 * dynamic shared memory (0: static; the sizes of LT_MM_DYN_SMEM_WG / _TC), the blocks an SM holds,
 * and the TFLOP/s an SM gives one block alone (r1) and when full (cap). The rates were measured on an
 * H200 (test_cuda_call --bench --sweep: each tile forced on 4096^3, where every SM is full, and on
 * BERT-base's 1024 x 768 x 768 / x 3072 GEMMs, one block or less an SM, the k loop's time as the
 * difference of the two k). */
typedef struct tc_tile {
    const char *name;
    int bm, bn, bk, threads, smem, per_sm;
    double r1, cap;
} tc_tile;
enum { TC_WG128x256, TC_WG128x128, TC_WG64x128, TC_128x256, TC_128x128, TC_64x128, TC_64x64, TC_N };
static const tc_tile tc_tiles[TC_N] = {
    [TC_WG128x256] = {"wg128x256", 128, 256, 64, 256, LT_MM_DYN_SMEM_WG(128, 256, 4), 1, 3.8, 3.8},
    [TC_WG128x128] = {"wg128x128", 128, 128, 64, 256, LT_MM_DYN_SMEM_WG(128, 128, 3), 2, 3.5, 3.54},
    [TC_WG64x128] = {"wg64x128", 64, 128, 64, 128, LT_MM_DYN_SMEM_WG(64, 128, 4), 2, 1.87, 2.68},
    [TC_128x256] = {"128x256", 128, 256, 32, 256, LT_MM_DYN_SMEM_TC(128, 256, 4), 1, 3.34, 3.34},
    [TC_128x128] = {"128x128", 128, 128, 32, 128, 0, 2, 2.7, 3.13},
    [TC_64x128] = {"64x128", 64, 128, 32, 128, 0, 6, 2.33, 2.79},
    [TC_64x64] = {"64x64", 64, 64, 32, 128, 0, 8, 1.2, 2.23},
};

/* Estimated microseconds of an m x n x k GEMM over `batch` entries in tiles t on a 132-SM GPU: the
 * blocks spread over the SMs (c an SM, at most per_sm at once, in waves), each wave as long as one
 * block's work at the rate its SM gives it, plus a fixed cost a block (the pipeline's fill and the
 * epilogue's stores, which grow with the outputs a thread holds). */
static double tc_cost(const tc_tile *t, int64_t m, int64_t n, int64_t k, int64_t batch) {
    const int64_t sms = 132, blocks = ((m + t->bm - 1) / t->bm) * ((n + t->bn - 1) / t->bn) * batch;
    const int64_t c = (blocks + sms - 1) / sms, together = c < t->per_sm ? c : t->per_sm;
    const int64_t waves = (c + t->per_sm - 1) / t->per_sm;
    const double rate = (t->r1 < t->cap / (double)together ? t->r1 : t->cap / (double)together) * 1e6; /* FLOP/us */
    const double fixed = 1.5 + 0.02 * t->bm * t->bn / t->threads;
    const double work = 2.0 * t->bm * t->bn * (double)((k + t->bk - 1) / t->bk * t->bk);
    return (double)waves * (fixed + work / rate);
}

/* The tile of a tensor-core GEMM. sm_90a: the cheapest of all by tc_cost (wgmma pays on big GEMMs
 * only; BERT-base's GEMMs and ResNet-50's early 1x1 convolutions get the small mma.sync tiles, whose
 * many blocks an SM hide the latencies). Elsewhere: mma.sync 128x256 or 128x128 when that tile still gives the GPU
 * enough blocks (>= MIN_BLOCKS; 64x128 when m <= 64, a 128-row tile would be half empty), else 64x64. */
static const tc_tile *tc_choose(int64_t m, int64_t n, int64_t k, int64_t batch, bool wgmma) {
    if (wgmma) {
        const tc_tile *best = NULL;
        double best_cost = 0;
        for (int i = 0; i < TC_N; i++) {
            double c = tc_cost(&tc_tiles[i], m, n, k, batch);
            if (!best || c < best_cost) best = &tc_tiles[i], best_cost = c;
        }
        return best;
    }
    if (((m + 127) / 128) * ((n + 255) / 256) * batch >= MIN_BLOCKS && m > 64) return &tc_tiles[TC_128x256];
    if (((m + 127) / 128) * ((n + 127) / 128) * batch >= MIN_BLOCKS) return &tc_tiles[m <= 64 ? TC_64x128 : TC_128x128];
    return &tc_tiles[TC_64x64];
}

int lt_lower_gpu_simt_tile(int64_t m, int64_t n, int64_t batch) {
    static const int tiles[] = {128, 64};
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
        int64_t t = tiles[i];
        if (((m + t - 1) / t) * ((n + t - 1) / t) * batch >= MIN_BLOCKS) return (int)t;
    }
    return 32;
}

lt_status lt_lower_gpu_gemm(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res) {
    lt_dtype dt = g->C->dtype;
    const char *dn = dt_name(dt);
    if (!dn || g->A->dtype != dt || g->B->dtype != dt || g->cmat || g->nb > 4) return lt_lower_gemm_gpu_loops(lc, g, res);
    /* layouts */
    if (g->ak != 1 || g->cj != 1) return lt_lower_gemm_gpu_loops(lc, g, res);
    int64_t lda = g->ai, ldb, ldc = g->ci;
    bool bt;
    if (g->bj == 1) bt = false, ldb = g->bk;
    else if (g->bk == 1) bt = true, ldb = g->bj;
    else return lt_lower_gemm_gpu_loops(lc, g, res);
    if (g->M > 0x7fffffff || g->N > 0x7fffffff || g->K > 0x7fffffff || lda > 0x7fffffff || ldb > 0x7fffffff ||
        ldc > 0x7fffffff)
        return lt_lower_gemm_gpu_loops(lc, g, res);
    lt_call_epi ce;
    if (lt_lower_call_epilogue(lc, g, &ce)) return lt_lower_gemm_gpu_loops(lc, g, res);
    int act = lt_lower_gpu_act(ce.act);
    if (act < 0 || (ce.bias && ce.bias->type.dtype != dt) || (ce.res && ce.res->type.dtype != dt))
        return lt_lower_gemm_gpu_loops(lc, g, res);
    /* batch: the last two dims go to the entry, outer ones to blockIdx.y / .z */
    int outer = g->nb > 2 ? g->nb - 2 : 0;
    int64_t b1 = 1, b2 = 1, sa1 = 0, sa2 = 0, sb1 = 0, sb2 = 0, sc1 = 0, sc2 = 0, outer_n = 1;
    if (g->nb - outer >= 1) b1 = g->bext[outer], sa1 = g->bsa[outer], sb1 = g->bsb[outer], sc1 = g->bsc[outer];
    if (g->nb - outer == 2)
        b2 = g->bext[outer + 1], sa2 = g->bsa[outer + 1], sb2 = g->bsb[outer + 1], sc2 = g->bsc[outer + 1];
    for (int d = 0; d < outer; d++) {
        if (g->bext[d] > 65535) return lt_lower_gemm_gpu_loops(lc, g, res);
        outer_n *= g->bext[d];
    }
    /* configuration */
    bool tc = dt != LT_FLOAT && mult8(g->K) && mult8(g->N) && mult8(lda) && mult8(ldb) && mult8(ldc);
    for (int d = 0; d < g->nb && tc; d++) tc = mult8(g->bsa[d]) && mult8(g->bsb[d]) && mult8(g->bsc[d]);
    int tile = 128, tile_m = 0, threads = 256; /* tile_m: rows of the tile when not `tile` */
    char fn[64];
    if (g->M <= LT_SKINNY_MR && g->K >= LT_SKINNY_MIN_K) {
        /* a few rows: bound by reading B; the tiles below would give it few blocks walking all of K */
        tile_m = LT_SKINNY_MR, tile = LT_SKINNY_BN;
        snprintf(fn, sizeof fn, "lt_cuda_mm_%s_%s_skinny", dn, bt ? "nt" : "nn");
    } else if (g->N <= LT_SKINNY_MR && g->M > LT_SKINNY_MR && g->K >= LT_TALL_MIN_K) {
        /* a few columns (a 1x1 convolution of a tiny image, a squeeze-and-excite product): bound by
         * reading A; tiles of LT_SKINNY_BN rows x LT_SKINNY_MR columns (their count is the same) */
        tile_m = LT_SKINNY_BN, tile = LT_SKINNY_MR;
        snprintf(fn, sizeof fn, "lt_cuda_mm_%s_%s_tall", dn, bt ? "nt" : "nn");
    } else if (tc) {
        const tc_tile *t = tc_choose(g->M, g->N, g->K, b1 * b2 * outer_n, lt_lower_gpu_wgmma(lc));
        for (int i = 0; lc->opt->gpu_tile && i < TC_N; i++)
            if (strcmp(tc_tiles[i].name, lc->opt->gpu_tile) == 0 && (tc_tiles[i].name[0] != 'w' || lt_lower_gpu_wgmma(lc)))
                t = &tc_tiles[i];
        tile_m = t->bm, tile = t->bn, threads = t->threads;
        if (t->smem > K_->dyn_shared) K_->dyn_shared = t->smem;
        snprintf(fn, sizeof fn, "lt_cuda_mm_%s_%s_%s", dn, bt ? "nt" : "nn", t->name);
    } else {
        tile = lt_lower_gpu_simt_tile(g->M, g->N, b1 * b2 * outer_n);
        if (tile == 128) snprintf(fn, sizeof fn, "lt_cuda_mm_%s_%s_simt", dn, bt ? "nt" : "nn");
        else snprintf(fn, sizeof fn, "lt_cuda_mm_%s_%s_simt%d", dn, bt ? "nt" : "nn", tile);
    }
    if (!tile_m) tile_m = tile;
    int64_t blocks = ((g->M + tile_m - 1) / tile_m) * ((g->N + tile - 1) / tile) * b1 * b2;
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS; /* the entry loops over the rest */
    if (blocks < 1) blocks = 1;
    /* outer batch offsets */
    lt_lvar *bv[2] = {NULL, NULL};
    lt_lnode *cb = I(lc, 0), *ab = I(lc, 0), *bb = I(lc, 0);
    for (int d = 0; d < outer; d++) {
        char name[8];
        snprintf(name, sizeof name, "gb%d", d);
        if (!(bv[d] = lt_kernel_var(K_, name, LT_INT64))) return lt_lower_nomem(lc);
        lt_lnode *v = lt_l_var(K_, bv[d]);
        cb = lt_l_add(K_, cb, lt_l_mul(K_, v, I(lc, g->bsc[d])));
        ab = lt_l_add(K_, ab, lt_l_mul(K_, v, I(lc, g->bsa[d])));
        bb = lt_l_add(K_, bb, lt_l_mul(K_, v, I(lc, g->bsb[d])));
    }
    lt_lvar *blk = lt_kernel_var(K_, "gblk", LT_INT64), *thr = lt_kernel_var(K_, "gthr", LT_INT64);
    if (!blk || !thr) return lt_lower_nomem(lc);
    lt_lnode *a[28];
    int na = 0;
    a[na++] = lt_l_addr(K_, g->C, cb);
    a[na++] = lt_l_addr(K_, g->A, ab);
    a[na++] = lt_l_addr(K_, g->B, bb);
    a[na++] = lt_l_addr(K_, ce.bias ? lc->vbuf[ce.bias->id] : g->C, I(lc, 0));
    a[na++] = ce.res ? lt_l_addr(K_, lc->vbuf[ce.res->id], cb) : lt_l_addr(K_, g->C, I(lc, 0));
    int64_t ints[] = {b1, b2, g->M, g->N, g->K, lda, sa1, sa2, ldb, sb1, sb2, ldc, sc1, sc2,
                      ce.bias ? ce.bias_mode : LT_BIAS_NONE, ce.res ? ce.res_mode : LT_RES_NONE, act};
    for (size_t q = 0; q < sizeof ints / sizeof *ints; q++) a[na++] = I(lc, ints[q]);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_a);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_b);
    a[na++] = lt_l_float(K_, LT_FLOAT, g->alpha * ce.scale);
    a[na++] = lt_l_var(K_, blk);
    a[na++] = I(lc, blocks);
    a[na++] = lt_l_var(K_, thr);
    for (int q = 0; q < na; q++)
        if (!a[q]) return lt_lower_nomem(lc);
    for (int q = 0; q < 5; q++) a[q]->buf->read = true; /* accessed through their addresses */
    g->C->written = true;
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, fn, na, a);
    if (!call) return lt_lower_nomem(lc);
    double batch = (double)(b1 * b2 * outer_n), es = (double)lt_dtype_size(dt);
    call->fval = 2.0 * (double)g->M * (double)g->N * (double)g->K * batch;
    call->ival = (int64_t)(es * batch * (double)(g->M * g->K + g->K * g->N + g->M * g->N));
    lt_lnode *body = lt_lower_gpu_loop(lc, thr, LT_ROLE_OUTPUT, threads, LT_LOOP_GPU_THREAD, 0, lt_l_eval(K_, call));
    body = lt_lower_gpu_loop(lc, blk, LT_ROLE_OUTPUT, blocks, LT_LOOP_GPU_BLOCK, 0, body);
    for (int d = outer - 1; d >= 0; d--)
        body = lt_lower_gpu_loop(lc, bv[d], d ? LT_ROLE_BATCH : LT_ROLE_BATCH_OUTER, g->bext[d], LT_LOOP_GPU_BLOCK, 1 + d,
                                 body);
    *res = body;
    return LT_LNN(lc, body);
}

/* ---- what compiles on the GPU only ---- */

static bool narrow_float(lt_dtype dt) { return dt == LT_FLOAT16 || dt == LT_BFLOAT16; }

bool lt_lower_gpu_supported(const lt_node *n, char *why, size_t why_size) {
    if (n->op != LT_OP_MatMul && n->op != LT_OP_Gemm && n->op != LT_OP_Conv) return false;
    if (n->n_in < 2 || !n->in[0] || !n->in[1] || !n->n_out || !n->out[0]) return false;
    lt_dtype dt = n->in[0]->type.dtype;
    if (!narrow_float(dt)) return false;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] && n->in[i]->type.dtype != dt) {
            snprintf(why, why_size, "input %d is %s, input 0 %s", i, lt_dtype_name(n->in[i]->type.dtype), lt_dtype_name(dt));
            return false;
        }
    if (n->op == LT_OP_Conv && n->in[0]->type.rank != 4) {
        snprintf(why, why_size, "%s Conv on the GPU is 2-D only", lt_dtype_name(dt));
        return false;
    }
    /* the float32 rules (shapes, attributes, static sizes) on the same node with float32 types */
    lt_node copy = *n;
    lt_value ins[8], outs[1];
    lt_value *inp[8];
    lt_value *outp[1];
    if (n->n_in > 8) return false;
    for (int i = 0; i < n->n_in; i++) {
        inp[i] = NULL;
        if (!n->in[i]) continue;
        ins[i] = *n->in[i];
        ins[i].type.dtype = LT_FLOAT;
        inp[i] = &ins[i];
    }
    outs[0] = *n->out[0];
    outs[0].type.dtype = LT_FLOAT;
    outp[0] = &outs[0];
    copy.in = inp, copy.out = outp, copy.n_out = 1;
    return lt_lower_supported(&copy, why, why_size);
}
