/* lower_gpu_gemm.c — MatMul / Gemm / pointwise Conv on the GPU: one call of a CUDA prelude GEMM tile
 * entry (cuda_gemm.h lt_cuda_mm_<dt>_<nn|nt>_<tile>) bound to blocks and threads (see lower_gpu.h).
 *
 * The entry takes C = epilogue(alpha * A @ B) over two batch dims (b1 x b2, element strides per
 * operand), A row-major (lda, unit k stride), B as [k, n] (nn, unit n stride) or [n, k] (nt, unit k
 * stride), C with unit column stride; outer batch dims become GPU_BLOCK loops on axes y and z.
 * Configuration: float16 / bfloat16 with k, n, lda, ldb, ldc and every batch stride multiples of 8
 * go to the tensor cores, 128x128 tiles when they give the GPU enough blocks (>= 120) (64x128 when
 * m <= 64), else 64x64;
 * everything else to the SIMT tiles: 128x128, or the sliced-K 64x64 / 32x32 ones when the larger
 * tile leaves the GPU too few blocks (lt_lower_gpu_simt_tile). Whatever the entries cannot take
 * (no unit-stride layout, Gemm's beta*C matrix, an epilogue rest, more than 4 batch dims, mixed dtypes) falls back
 * to lt_lower_gemm_gpu_loops. Also lt_lower_gpu_supported: which nodes compile on the GPU only.
 */
#include "lower_gpu.h"

#include <stdio.h>
#include <string.h>

#define K_ (lc->k)
#define MIN_BLOCKS 120 /* about one block per SM of an H100 (132) */
#define MAX_BLOCKS (1 << 20)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K_, v); }

int lt_lower_gpu_act(int call_act) {
    /* gemm.h: NONE, RELU, CLIP, LEAKY_RELU, SIGMOID, TANH, GELU, GELU_TANH, SILU, HARD_SIGMOID */
    static const int map[] = {0, 1, 7, 6, 4, 5, 2, 3, 9, 8};
    return call_act >= 0 && call_act < (int)(sizeof map / sizeof *map) ? map[call_act] : -1;
}

lt_lnode *lt_lower_gpu_loop(lt_lctx *lc, lt_lvar *v, int64_t extent, lt_loop_kind kind, int axis, lt_lnode *body) {
    lt_lnode *f = v && body ? lt_l_for(K_, v, I(lc, 0), I(lc, extent), kind, body) : NULL;
    if (f) f->ival = axis;
    return f;
}

static const char *dt_name(lt_dtype dt) {
    return dt == LT_FLOAT ? "f32" : dt == LT_FLOAT16 ? "f16" : dt == LT_BFLOAT16 ? "bf16" : NULL;
}

static bool mult8(int64_t v) { return v % 8 == 0; }

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
    if (tc) {
        int64_t big = ((g->M + 127) / 128) * ((g->N + 127) / 128) * b1 * b2 * outer_n;
        tile = big >= MIN_BLOCKS ? 128 : 64, threads = 128;
        tile_m = g->M <= 64 && tile == 128 ? 64 : tile; /* a 128-row tile would be half empty */
        snprintf(fn, sizeof fn, "lt_cuda_mm_%s_%s_%dx%d", dn, bt ? "nt" : "nn", tile_m, tile);
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
                      ce.bias ? ce.bias_mode : 0, ce.res ? ce.res_mode : 0, act};
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
    lt_lnode *body = lt_lower_gpu_loop(lc, thr, threads, LT_LOOP_GPU_THREAD, 0, lt_l_eval(K_, call));
    body = lt_lower_gpu_loop(lc, blk, blocks, LT_LOOP_GPU_BLOCK, 0, body);
    for (int d = outer - 1; d >= 0; d--) body = lt_lower_gpu_loop(lc, bv[d], g->bext[d], LT_LOOP_GPU_BLOCK, 1 + d, body);
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
