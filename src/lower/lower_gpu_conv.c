/* lower_gpu_conv.c — 2-D Conv (NCHW, any stride / padding / dilation / group) on the GPU: one call
 * of a CUDA prelude convolution entry (cuda_conv.h lt_cuda_conv_<dt>_<kind>) bound to blocks and
 * threads (see lower_gpu.h), with the group's epilogue (bias, residual, one activation) fused.
 *
 * Kind, from static shapes: fewer than 16 output channels a group (depthwise) -> `direct`, one output
 * per thread; float16 / bfloat16 with Cg*KH*KW % 8 == 0 -> implicit GEMM on tensor cores: 256x128
 * tiles in dynamic shared memory (recorded in lt_kernel.dyn_shared) for groups of at least 256 output
 * channels when they still give the GPU ~60 blocks, else 128x128 tiles (64x128 when a group has at
 * most 64 output channels; 64x64 when that gives the GPU fewer than 120 blocks); otherwise the SIMT
 * implicit GEMM (128x128 tiles, or sliced-K 64x64 / 32x32 ones for
 * small grids: lt_lower_gpu_simt_tile). A pointwise conv whose GEMM (k = C, n = OH*OW)
 * the GEMM entries take as it is (float32, or both multiples of 8) is left to lower_nn.c's GEMM
 * path (*handled false), as is a conv whose epilogue the entries cannot apply.
 */
#include "lower_gpu.h"

#include "../codegen/prelude/abi.h" /* LT_CONV_DYN_SMEM */
#include "../ops/nn/nn_impl.h"

#include <stdio.h>
#include <string.h>

#define K_ (lc->k)
#define MIN_BLOCKS 120
#define MAX_BLOCKS (1 << 20)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K_, v); }

static lt_status conv_index(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j,
                            lt_lnode **idx) {
    idx[0] = bidx[0];
    idx[1] = i;
    return lt_lower_unflat(lc, j, g->out_rank - 2, g->out_dims + 2, idx + 2);
}

static bool fits_int(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

lt_status lt_lower_gpu_conv(lt_lctx *lc, const lt_node *n, bool *handled, lt_lnode **res) {
    *handled = false;
    int rx, rw;
    int64_t dx[LT_MAX_RANK], dw[LT_MAX_RANK];
    char why[256];
    if (!lt_lower_shape(n->in[0], &rx, dx) || !lt_lower_shape(n->in[1], &rw, dw) || rx != 4 || rw != 4)
        return LT_OK;
    nn_geom geo;
    if (!nn_geom_init(n, 2, dx + 2, dw + 2, false, &geo, why, sizeof why))
        return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    int64_t N = dx[0], C = dx[1], H = dx[2], W = dx[3], OC = dw[0], KH = dw[2], KW = dw[3];
    int64_t G = lt_attr_int(n, "group", 1), OH = geo.out[0], OW = geo.out[1], P = OH * OW;
    if (G < 1 || C % G || OC % G) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad group %lld", (long long)G);
    int64_t Cg = C / G, OCg = OC / G, Kg = Cg * KH * KW;
    const lt_value *xv = lt_lower_mem_value(lc, n->in[0]), *wv = lt_lower_mem_value(lc, n->in[1]);
    lt_lbuf *X = xv ? lc->vbuf[xv->id] : NULL, *Wb = wv ? lc->vbuf[wv->id] : NULL;
    lt_dtype dt = X ? X->dtype : LT_UNDEFINED;
    const char *dn = dt == LT_FLOAT ? "f32" : dt == LT_FLOAT16 ? "f16" : dt == LT_BFLOAT16 ? "bf16" : NULL;
    if (!X || !Wb || !dn || Wb->dtype != dt) return LT_OK;
    int64_t sizes[] = {N, C, H, W, OC, KH, KW, OH, OW, P, Kg, N * OC * P / 256 + 1};
    for (size_t q = 0; q < sizeof sizes / sizeof *sizes; q++)
        if (!fits_int(sizes[q])) return LT_OK;
    bool pointwise = G == 1 && KH == 1 && KW == 1 && geo.s[0] == 1 && geo.s[1] == 1 && geo.pb[0] == 0 &&
                     geo.pb[1] == 0 && geo.pe[0] == 0 && geo.pe[1] == 0;
    if (pointwise && (dt == LT_FLOAT || (C % 8 == 0 && P % 8 == 0))) return LT_OK;
    /* the epilogue the entry applies: the CPU call's rules (bias per output channel, no alpha) */
    lt_gemm_desc g = {.n = n, .M = OC, .N = P, .K = Kg, .alpha = 1, .out_index = conv_index};
    if (!lt_lower_shape(n->out[0], &g.out_rank, g.out_dims)) return LT_OK;
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    if (!g.C || g.C->dtype != dt) return LT_OK;
    g.nb = 1, g.bext[0] = N, g.bsc[0] = OC * P, g.ci = P, g.cj = 1;
    if (n->n_in > 2 && n->in[2]) g.bias = n->in[2], g.bias_mode = LT_BIAS_ROW;
    g.row_dim0 = 1, g.row_dim1 = 2, g.col_dim0 = g.out_rank;
    g.no_alpha = true;
    lt_call_epi ce;
    if (lt_lower_call_epilogue(lc, &g, &ce)) return LT_OK;
    int act = lt_lower_gpu_act(ce.act);
    if (act < 0 || (ce.bias && (ce.bias->type.dtype != dt || !lc->vbuf[ce.bias->id])) ||
        (ce.res && ce.res->type.dtype != dt))
        return LT_OK;
    /* kind */
    char fn[64];
    int threads = 256;
    int64_t blocks;
    if (OCg < 16) {
        snprintf(fn, sizeof fn, "lt_cuda_conv_%s_direct", dn);
        blocks = (N * OC * P + 255) / 256;
    } else if (dt != LT_FLOAT && Kg % 8 == 0) {
        int bm = OCg <= 64 ? 64 : 128, bn = 128;
        threads = 128;
        if (OCg >= 256 && ((OCg + 255) / 256) * ((P + 127) / 128) * N * G >= MIN_BLOCKS / 2) {
            /* wide layers: the 256-row tile in dynamic shared memory (cuda_conv.h, 3 stages),
             * half the im2col gathers per MMA of the 128-row tile, worth a grid of half as many blocks */
            bm = 256, threads = 256;
            K_->dyn_shared = K_->dyn_shared > LT_CONV_DYN_SMEM(256, 128, 3) ? K_->dyn_shared : LT_CONV_DYN_SMEM(256, 128, 3);
        } else if (((OCg + bm - 1) / bm) * ((P + bn - 1) / bn) * N * G < MIN_BLOCKS) {
            bm = 64, bn = 64;
        }
        snprintf(fn, sizeof fn, "lt_cuda_conv_%s_tc%dx%d", dn, bm, bn);
        blocks = ((OCg + bm - 1) / bm) * ((P + bn - 1) / bn) * N * G;
    } else {
        int t = lt_lower_gpu_simt_tile(OCg, P, N * G);
        if (t == 128) snprintf(fn, sizeof fn, "lt_cuda_conv_%s_simt", dn);
        else snprintf(fn, sizeof fn, "lt_cuda_conv_%s_simt%d", dn, t);
        blocks = ((OCg + t - 1) / t) * ((P + t - 1) / t) * N * G;
    }
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS; /* the entry loops over the rest */
    lt_lvar *blk = lt_kernel_var(K_, "gblk", LT_INT64), *thr = lt_kernel_var(K_, "gthr", LT_INT64);
    if (!blk || !thr) return lt_lower_nomem(lc);
    lt_lnode *a[40], *zero = I(lc, 0);
    int na = 0;
    a[na++] = lt_l_addr(K_, g.C, zero);
    a[na++] = lt_l_addr(K_, X, zero);
    a[na++] = lt_l_addr(K_, Wb, zero);
    a[na++] = lt_l_addr(K_, ce.bias ? lc->vbuf[ce.bias->id] : g.C, zero);
    a[na++] = lt_l_addr(K_, ce.res ? lc->vbuf[ce.res->id] : g.C, zero);
    int64_t ints[] = {N, C, H, W, OC, KH, KW, geo.s[0], geo.s[1], geo.pb[0], geo.pb[1], geo.d[0], geo.d[1], G, OH, OW,
                      ce.bias ? 1 : 0, ce.res ? ce.res_mode : LT_RES_NONE, act};
    for (size_t q = 0; q < sizeof ints / sizeof *ints; q++) a[na++] = I(lc, ints[q]);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_a);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_b);
    a[na++] = lt_l_var(K_, blk);
    a[na++] = I(lc, blocks);
    a[na++] = lt_l_var(K_, thr);
    if (OCg < 16) {
        /* direct: its index mode (cuda_conv.h lt_conv_direct: 32-bit offsets, and one output a thread
         * when the grid was not capped) and its index divisions' multipliers (run-time scalars where
         * the sizes are) */
        bool fits31 = N * OC * P < ((int64_t)1 << 31) &&
                      N * C * (H + KH * geo.d[0]) * (W + KW * geo.d[1]) < ((int64_t)1 << 31);
        int mode = !fits31 ? 0 : blocks * 256 >= N * OC * P ? 2 : 1;
        a[na++] = I(lc, mode);
        int64_t divisors[] = {P, OC, OW, OCg};
        for (size_t q = 0; q < sizeof divisors / sizeof *divisors; q++)
            a[na++] = I(lc, mode ? (int64_t)lt_div_magic31(divisors[q]) : 0);
    }
    for (int q = 0; q < na; q++)
        if (!a[q]) return lt_lower_nomem(lc);
    for (int q = 0; q < 5; q++) a[q]->buf->read = true; /* accessed through their addresses */
    g.C->written = true;
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, fn, na, a);
    if (!call) return lt_lower_nomem(lc);
    call->fval = 2.0 * (double)N * (double)OC * (double)P * (double)Kg;
    call->ival = lt_dtype_size(dt) * (lt_lower_numel(n->in[0]) + lt_lower_numel(n->in[1]) + N * OC * P);
    lt_lnode *body = lt_lower_gpu_loop(lc, thr, LT_ROLE_OUTPUT, threads, LT_LOOP_GPU_THREAD, 0, lt_l_eval(K_, call));
    body = lt_lower_gpu_loop(lc, blk, LT_ROLE_OUTPUT, blocks, LT_LOOP_GPU_BLOCK, 0, body);
    if (!body) return lt_lower_nomem(lc);
    *res = body;
    *handled = true;
    return LT_OK;
}
