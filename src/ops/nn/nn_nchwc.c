/* nn_nchwc.c — lathe's internal channel-blocked (NCHW{B}c) ops: infer + reference eval.
 *
 * These ops exist only inside lathe (domain "lathe"); the layout_nchwc pass (src/passes/
 * layout_nchwc.c) introduces them on the CPU so that chains of convolutions run in a layout where
 * one SIMD vector holds B channels of one pixel. A blocked tensor of C channels is 5-D:
 *     [N, ceil(C/B), H, W, B], element (n, c, h, w) at [n][c/B][h][w][c%B],
 * and the channels c >= C of the last block ("padding lanes") hold finite values (the reorder and
 * the ops below write zeros there, Relu/Clip/Add keep them finite) that no real channel depends on.
 *
 *   NchwcReorderIn(X) block=B              X [N,C,H,W] -> [N,ceil(C/B),H,W,B], padding lanes 0
 *   NchwcReorderOut(Y) channels=C          [N,Cb,H,W,B] -> [N,C,H,W] (Cb == ceil(C/B))
 *   NchwcConv(X, W[, bias])                X blocked with C = W.dims[1]*group channels, W in ONNX
 *                                          [M, C/group, KH, KW]; Conv's attributes; group 1 or
 *                                          depthwise (group == C == M); out [N,ceil(M/B),OH,OW,B]
 *   NchwcMaxPool / NchwcAveragePool(X)     MaxPool / AveragePool attributes over (H, W)
 *   NchwcGlobalAveragePool / NchwcGlobalMaxPool(X)   -> [N,Cb,1,1,B]
 * Only float32; 2-D images only. The evals are naive loops (the oracle); a padding lane of an
 * output is 0 except for the pools, which pool the input's padding lanes (finite).
 */
#include "nn_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- shared checks ----
 * Each op's rules live in one function over shapes (dims -1 when unknown) that shape inference and
 * eval both call, so a bad node gets the same error on every backend. */

static int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); } /* a >= 0, b >= 1, no overflow */

/* X must be a blocked tensor [N, Cb, H, W, B] (rank xr, dims xd). */
static lt_status blocked_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd) {
    if (xr != 5 || (xd[4] >= 0 && (xd[4] < 1 || xd[4] > 64)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "input must be a blocked tensor [N, Cb, H, W, B], got rank %d", xr);
    return LT_OK;
}

/* Input 0 as a blocked float32 tensor [N, Cb, H, W, B]. */
static lt_status blocked_in(lt_eval *ev, const lt_node *n, lt_datum **in, const lt_tensor **x) {
    LT_TRY(lt_in_tensor(ev, n, in, 0, x));
    if ((*x)->dtype != LT_FLOAT)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s (float32 only)", lt_dtype_name((*x)->dtype));
    return blocked_check(ev->ctx, n, (*x)->rank, (*x)->dims);
}

/* ---- reorders ---- */

/* X [N, C, H, W] and the block attribute. */
static lt_status reorder_in_check(lt_ctx *ctx, const lt_node *n, int xr) {
    int64_t B = lt_attr_int(n, "block", 0);
    if (B < 1 || B > 64) return lt_node_error(ctx, n, LT_ERR_INVALID, "block %lld out of range [1, 64]", (long long)B);
    if (xr != 4) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank 4, got %d", xr);
    return LT_OK;
}

static lt_status infer_ReorderIn(lt_infer *ic, lt_node *n) {
    int64_t B = lt_attr_int(n, "block", 0), d[LT_MAX_RANK];
    int r;
    if (!nn_in_shape(n, 0, &r, d)) {
        LT_TRY(reorder_in_check(ic->ctx, n, 4));
        return lt_infer_set(ic, n, 0, LT_FLOAT, 5, NULL);
    }
    LT_TRY(reorder_in_check(ic->ctx, n, r));
    int64_t od[5] = {d[0], d[1] < 0 ? -1 : cdiv(d[1], B), d[2], d[3], B};
    return lt_infer_set_i64(ic, n, 0, nn_in_dtype(n, 0), 5, od);
}

static lt_status eval_ReorderIn(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t B = lt_attr_int(n, "block", 0);
    if (x->dtype != LT_FLOAT) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(x->dtype));
    LT_TRY(reorder_in_check(ev->ctx, n, x->rank));
    int64_t N = x->dims[0], C = x->dims[1], HW = x->dims[2] * x->dims[3], Cb = cdiv(C, B);
    int64_t od[5] = {N, Cb, x->dims[2], x->dims[3], B};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 5, od, &y));
    const float *xs = x->data;
    float *yd = y->data; /* zeroed: the padding lanes stay 0 */
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) yd[((b * Cb + c / B) * HW + p) * B + c % B] = xs[(b * C + c) * HW + p];
    return LT_OK;
}

/* X [N, Cb, H, W, B] holds the `channels` attribute's C channels: Cb == ceil(C/B). */
static lt_status reorder_out_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd) {
    int64_t C = lt_attr_int(n, "channels", 0);
    if (C < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "channels must be >= 1");
    LT_TRY(blocked_check(ctx, n, xr, xd));
    if (xd[1] >= 0 && xd[4] >= 1 && xd[1] != cdiv(C, xd[4]))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%lld blocks of %lld cannot hold %lld channels", (long long)xd[1],
                             (long long)xd[4], (long long)C);
    return LT_OK;
}

static lt_status infer_ReorderOut(lt_infer *ic, lt_node *n) {
    int64_t C = lt_attr_int(n, "channels", 0), d[LT_MAX_RANK];
    int r;
    if (!nn_in_shape(n, 0, &r, d)) {
        if (C < 1) return lt_infer_error(ic, n, "channels must be >= 1");
        return lt_infer_set(ic, n, 0, LT_FLOAT, 4, NULL);
    }
    LT_TRY(reorder_out_check(ic->ctx, n, r, d));
    int64_t od[4] = {d[0], C, d[2], d[3]};
    return lt_infer_set_i64(ic, n, 0, nn_in_dtype(n, 0), 4, od);
}

static lt_status eval_ReorderOut(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(blocked_in(ev, n, in, &x));
    LT_TRY(reorder_out_check(ev->ctx, n, x->rank, x->dims));
    int64_t C = lt_attr_int(n, "channels", 0), N = x->dims[0], Cb = x->dims[1], B = x->dims[4];
    int64_t HW = x->dims[2] * x->dims[3];
    int64_t od[4] = {N, C, x->dims[2], x->dims[3]};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 4, od, &y));
    const float *xs = x->data;
    float *yd = y->data;
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) yd[(b * C + c) * HW + p] = xs[((b * Cb + c / B) * HW + p) * B + c % B];
    return LT_OK;
}

/* ---- convolution ---- */

/* The rules of NchwcConv on the blocked X (rank xr, dims xd), W (rank wr, dims wd; wr < 0 unknown)
 * and the bias (rank br; br < 0 absent or unknown); the geometry into g, C, M, group. */
static lt_status conv_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int wr, const int64_t *wd,
                            int br, const int64_t *bd, nn_geom *g, int64_t *C, int64_t *M, int64_t *group) {
    LT_TRY(blocked_check(ctx, n, xr, xd));
    int64_t unk[4] = {-1, -1, -1, -1};
    if (wr < 0) wd = unk;
    else if (wr != 4) return lt_node_error(ctx, n, LT_ERR_INVALID, "weights must have rank 4, got %d", wr);
    *group = lt_attr_int(n, "group", 1);
    *M = wd[0];
    if (*group < 1 || wd[1] < 0 || !lt_mul_i64(wd[1], *group, C)) *C = -1;
    if (*group < 1 || (*group != 1 && wd[1] >= 0 && (wd[1] != 1 || (*M >= 0 && *M != *C))))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "group %lld: only 1 or depthwise (group == channels == output channels)",
                             (long long)*group);
    if (*C >= 0 && xd[1] >= 0 && xd[4] >= 1 && xd[1] != cdiv(*C, xd[4]))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "input has %lld blocks of %lld channels, the weights expect %lld channels",
                             (long long)xd[1], (long long)xd[4], (long long)*C);
    char err[256];
    if (!nn_geom_init(n, 2, xd + 2, wd + 2, false, g, err, sizeof err))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s", err);
    if (br >= 0 && (br != 1 || (bd[0] >= 0 && *M >= 0 && bd[0] != *M)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "bias must be 1-D with %lld elements", (long long)*M);
    return LT_OK;
}

static lt_status infer_Conv(lt_infer *ic, lt_node *n) {
    int64_t xd[LT_MAX_RANK], wd[LT_MAX_RANK], bd[LT_MAX_RANK];
    int xr, wr, br;
    if (!nn_in_shape(n, 0, &xr, xd)) return lt_infer_set(ic, n, 0, LT_FLOAT, 5, NULL);
    if (!nn_in_shape(n, 1, &wr, wd)) wr = -1;
    if (!nn_in_shape(n, 2, &br, bd)) br = -1;
    nn_geom g;
    int64_t C, M, group;
    LT_TRY(conv_check(ic->ctx, n, xr, xd, wr, wd, br, bd, &g, &C, &M, &group));
    int64_t od[5] = {xd[0], xd[4] < 1 || M < 0 ? -1 : cdiv(M, xd[4]), g.out[0], g.out[1], xd[4]};
    return lt_infer_set_i64(ic, n, 0, LT_FLOAT, 5, od);
}

static lt_status eval_Conv(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *w, *b;
    LT_TRY(blocked_in(ev, n, in, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &w));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &b));
    if (w->dtype != LT_FLOAT || (b && b->dtype != LT_FLOAT))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "weights and bias must be float32");
    nn_geom g;
    int64_t C, M, group;
    LT_TRY(conv_check(ev->ctx, n, x->rank, x->dims, w->rank, w->dims, b ? b->rank : -1, b ? b->dims : NULL, &g, &C, &M,
                      &group));
    int64_t N = x->dims[0], Cb = x->dims[1], H = x->dims[2], W = x->dims[3], B = x->dims[4], Mb = cdiv(M, B);
    int64_t OH = g.out[0], OW = g.out[1], KH = g.k[0], KW = g.k[1], Cg = C / group;
    int64_t od[5] = {N, Mb, OH, OW, B};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 5, od, &y));
    const float *xs = x->data, *ws = w->data, *bs = b ? b->data : NULL;
    float *yd = y->data; /* zeroed: padding lanes stay 0 */
    for (int64_t bn = 0; bn < N; bn++)
        for (int64_t m = 0; m < M; m++) {
            int64_t c0 = group == 1 ? 0 : m; /* depthwise: channel m only */
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = bs ? bs[m] : 0.0;
                    for (int64_t ci = 0; ci < Cg; ci++) {
                        int64_t c = c0 + ci;
                        for (int64_t kh = 0; kh < KH; kh++) {
                            int64_t ih = oh * g.s[0] - g.pb[0] + kh * g.d[0];
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t iw = ow * g.s[1] - g.pb[1] + kw * g.d[1];
                                if (iw < 0 || iw >= W) continue;
                                double xv = xs[(((bn * Cb + c / B) * H + ih) * W + iw) * B + c % B];
                                acc += xv * ws[((m * Cg + ci) * KH + kh) * KW + kw];
                            }
                        }
                    }
                    yd[(((bn * Mb + m / B) * OH + oh) * OW + ow) * B + m % B] = (float)acc;
                }
        }
    return LT_OK;
}

/* ---- pooling ---- */

static bool is_global(const lt_node *n) { return n->op == LT_OP_NchwcGlobalAveragePool || n->op == LT_OP_NchwcGlobalMaxPool; }
static bool is_max(const lt_node *n) { return n->op == LT_OP_NchwcMaxPool || n->op == LT_OP_NchwcGlobalMaxPool; }

/* The rules of the blocked pools on X (rank xr, dims xd): the geometry into g (MaxPool's and
 * AveragePool's rules: nn_geom_init), storage_order 0. */
static lt_status pool_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, nn_geom *g) {
    LT_TRY(blocked_check(ctx, n, xr, xd));
    if (lt_attr_int(n, "storage_order", 0) != 0) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "storage_order 1");
    if (is_global(n)) {
        memset(g, 0, sizeof *g);
        g->nsp = 2;
        for (int d = 0; d < 2; d++) g->in[d] = g->k[d] = xd[2 + d], g->s[d] = g->d[d] = 1, g->out[d] = 1;
        return LT_OK;
    }
    char err[256];
    if (!nn_geom_init(n, 2, xd + 2, NULL, true, g, err, sizeof err))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s", err);
    return LT_OK;
}

static lt_status infer_Pool(lt_infer *ic, lt_node *n) {
    int64_t xd[LT_MAX_RANK];
    int xr;
    if (!nn_in_shape(n, 0, &xr, xd)) return lt_infer_set(ic, n, 0, LT_FLOAT, 5, NULL);
    nn_geom g;
    LT_TRY(pool_check(ic->ctx, n, xr, xd, &g));
    int64_t od[5] = {xd[0], xd[1], g.out[0], g.out[1], xd[4]};
    return lt_infer_set_i64(ic, n, 0, LT_FLOAT, 5, od);
}

static lt_status eval_Pool(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(blocked_in(ev, n, in, &x));
    nn_geom g;
    LT_TRY(pool_check(ev->ctx, n, x->rank, x->dims, &g));
    bool mx = is_max(n), include_pad = lt_attr_int(n, "count_include_pad", 0) != 0;
    int64_t N = x->dims[0], Cb = x->dims[1], H = x->dims[2], W = x->dims[3], B = x->dims[4];
    int64_t OH = g.out[0], OW = g.out[1];
    int64_t od[5] = {N, Cb, OH, OW, B};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, LT_FLOAT, 5, od, &y));
    const float *xs = x->data;
    float *yd = y->data;
    for (int64_t p = 0; p < N * Cb; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t l = 0; l < B; l++) {
                    double acc = mx ? -INFINITY : 0.0;
                    int64_t cnt = 0;
                    for (int64_t kh = 0; kh < g.k[0]; kh++) {
                        int64_t ih = oh * g.s[0] - g.pb[0] + kh * g.d[0];
                        for (int64_t kw = 0; kw < g.k[1]; kw++) {
                            int64_t iw = ow * g.s[1] - g.pb[1] + kw * g.d[1];
                            bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                            if (include_pad ? (ih < H + g.pe[0] && iw < W + g.pe[1]) : inside) cnt++;
                            if (!inside) continue;
                            double v = xs[((p * H + ih) * W + iw) * B + l];
                            acc = mx ? (v > acc || isnan(v) ? v : acc) : acc + v;
                        }
                    }
                    yd[((p * OH + oh) * OW + ow) * B + l] = (float)(mx ? acc : cnt ? acc / (double)cnt : 0.0);
                }
    return LT_OK;
}

const lt_op_reg lt_ops_nchwc[] = {
    {LT_OP_NchwcReorderIn, infer_ReorderIn, eval_ReorderIn},
    {LT_OP_NchwcReorderOut, infer_ReorderOut, eval_ReorderOut},
    {LT_OP_NchwcConv, infer_Conv, eval_Conv},
    {LT_OP_NchwcMaxPool, infer_Pool, eval_Pool},
    {LT_OP_NchwcAveragePool, infer_Pool, eval_Pool},
    {LT_OP_NchwcGlobalAveragePool, infer_Pool, eval_Pool},
    {LT_OP_NchwcGlobalMaxPool, infer_Pool, eval_Pool},
    {0, NULL, NULL},
};
