/* lower_nchwc.c — `lower` hooks of the channel-blocked ops (src/ops/nn/nn_nchwc.c): each is one EVAL
 * CALL of a prelude routine of codegen/prelude/conv_nchwc.h.
 *
 *   NchwcConv        lt_nchwc_conv_f32 on weights packed once ([Mb][Cb][KH][KW][B][B], or
 *                    [Cb][KH][KW][B] depthwise: lt_nchwc_conv_pack) with the group's epilogue fused
 *                    into the call as far as it goes (a residual of the output's shape before or
 *                    after one relu / clip / other activation: lt_lower_call_epilogue), the rest in
 *                    a Loop IR nest after it;
 *   Nchwc*Pool       lt_nchwc_pool_f32;   NchwcReorderIn / Out   lt_nchwc_reorder_{in,out}_f32;
 *                    an epilogue chain fused into these runs as a Loop IR nest over the call's
 *                    output (in place when the chain's output is float32, else from a scratch copy).
 * The calls read their operand from memory: one computed inside the group (a Concat that fusion put
 * before a reorder or a pool) is first written to a scratch buffer by a Loop IR nest (operand_buf).
 * The ops exist only on the CPU path (the layout_nchwc pass), so there is no plain Loop IR form:
 * the calls are used whatever lt_lower_options.no_microkernels says.
 */
#include "lower_impl.h"

#include "../ops/nn/nn_impl.h"

#include <stdio.h>
#include <string.h>

#define K_ (lc->k)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K_, v); }

static lt_lbuf *in_buf(lt_lctx *lc, const lt_value *v) {
    const lt_value *m = lt_lower_mem_value(lc, v);
    return m ? lc->vbuf[m->id] : NULL;
}

/* ---- an operand computed inside the group ---- */

typedef struct fill_user {
    const lt_value *v;
    lt_lbuf *dst;
    int rank;
    int64_t dims[LT_MAX_RANK];
} fill_user;

static lt_status fill_body(lt_lctx *lc, lt_lnode *const *idx, void *user, lt_lnode **body) {
    fill_user *u = user;
    lt_lnode *v = NULL;
    LT_TRY(lt_lower_value(lc, u->v, idx, &v));
    *body = lt_l_store(K_, u->dst, lt_lower_flat(lc, u->rank, u->dims, idx), v);
    return LT_LNN(lc, *body);
}

/* The buffer a call reads operand v from: v's own (or the one it is a view of), else -- v is
 * computed in the group, e.g. a Concat fused before the call -- a scratch buffer that the Loop IR
 * nest *pre fills first (*pre stays NULL when v has a buffer). NULL buffer: out of memory. */
static lt_status operand_buf(lt_lctx *lc, const lt_node *n, const lt_value *v, lt_lbuf **buf, lt_lnode **pre) {
    *pre = NULL;
    if ((*buf = in_buf(lc, v))) return LT_OK;
    fill_user u = {.v = v};
    if (!lt_lower_shape(v, &u.rank, u.dims) || v->type.dtype != LT_FLOAT)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand '%s' has no buffer and no static float32 shape", v->name);
    if (!(u.dst = lt_lower_add_scratch(lc, "nchwc_in", LT_FLOAT, lt_lower_numel(v)))) return lt_lower_nomem(lc);
    u.dst->read = u.dst->written = true;
    LT_TRY(lt_lower_nest(lc, "f", u.rank, u.dims, fill_body, &u, pre));
    *buf = u.dst;
    return LT_OK;
}

/* *res preceded by pre (when not NULL). */
static lt_status after(lt_lctx *lc, lt_lnode *pre, lt_lnode **res) {
    if (!pre) return LT_OK;
    lt_lnode *s[2] = {pre, *res};
    *res = lt_l_seq(K_, 2, s);
    return LT_LNN(lc, *res);
}

/* ---- accept ---- */

static bool accept_blocked(const lt_node *n, char *why, size_t size) {
    int r;
    int64_t d[LT_MAX_RANK];
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] && n->in[i]->type.dtype != LT_FLOAT) {
            snprintf(why, size, "input %d is not float32", i);
            return false;
        }
    if (n->out[0]->type.dtype != LT_FLOAT || !lt_lower_shape(n->out[0], &r, d)) {
        snprintf(why, size, "output is not a static float32 tensor");
        return false;
    }
    if (!lt_lower_shape(n->in[0], &r, d) || (r != 5 && n->op != LT_OP_NchwcReorderIn) ||
        (r != 4 && n->op == LT_OP_NchwcReorderIn)) {
        snprintf(why, size, "input 0 is not a static image of the expected rank");
        return false;
    }
    if (lt_lower_numel(n->in[0]) == 1) {
        snprintf(why, size, "input 0 is a one-element constant");
        return false;
    }
    if (n->op == LT_OP_NchwcConv) {
        if (n->n_in < 2 || !lt_lower_const(n->in[1])) {
            snprintf(why, size, "weights are not a constant");
            return false;
        }
        if (n->n_in > 2 && n->in[2] && !lt_lower_const(n->in[2])) {
            snprintf(why, size, "bias is not a constant");
            return false;
        }
    }
    return true;
}

/* ---- a call followed by the fused epilogue chain ---- */


/* The call `fn(out, x, ints...)` storing n's output, then the group's epilogue chain after n. */
static lt_status call_then_epilogue(lt_lctx *lc, const lt_node *n, const char *fn, lt_lbuf *x, int n_ints,
                                    const int64_t *ints, double flops, lt_lnode **res) {
    const lt_value *fin = NULL;
    lt_lbuf *out = lt_lower_out_buf(lc, n->out[0], &fin);
    if (!out || !x) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    const lt_node *chain[1];
    bool epi = lt_lower_epilogue_chain(lc, n->out[0], chain, 1) != 0;
    lt_lbuf *src = out; /* where the call stores: the output, or scratch the epilogue reads back */
    if (epi && (out->dtype != LT_FLOAT || lt_lower_numel(fin) != lt_lower_numel(n->out[0])))
        if (!(src = lt_lower_add_scratch(lc, "nchwc_out", LT_FLOAT, lt_lower_numel(n->out[0]))))
            return lt_lower_nomem(lc);
    lt_lnode *a[24];
    int na = 0;
    a[na++] = lt_l_addr(K_, src, I(lc, 0));
    a[na++] = lt_l_addr(K_, x, I(lc, 0));
    for (int q = 0; q < n_ints; q++) a[na++] = I(lc, ints[q]);
    for (int q = 0; q < na; q++)
        if (!a[q]) return lt_lower_nomem(lc);
    src->read = src->written = true;
    x->read = true;
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, fn, na, a);
    if (!call) return lt_lower_nomem(lc);
    call->fval = flops;
    call->ival = 4 * (lt_lower_numel(n->in[0]) + lt_lower_numel(n->out[0]));
    lt_lnode *s[2] = {lt_l_eval(K_, call), NULL};
    if (!epi) {
        *res = s[0];
        return LT_LNN(lc, *res);
    }
    LT_TRY(lt_lower_epilogue_from(lc, n, src, "i", &s[1]));
    *res = lt_l_seq(K_, 2, s);
    return LT_LNN(lc, *res);
}

/* ---- reorders ---- */

static lt_status l_reorder(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int r;
    int64_t d[LT_MAX_RANK];
    bool in = n->op == LT_OP_NchwcReorderIn;
    if (!lt_lower_shape(in ? n->out[0] : n->in[0], &r, d) || r != 5)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "blocked shape");
    int64_t C = in ? n->in[0]->type.dims[1].value : lt_attr_int(n, "channels", 0);
    if (C < 1 || d[1] != (C + d[4] - 1) / d[4]) return lt_lower_error(lc, n, LT_ERR_INVALID, "channels disagree with blocks");
    int64_t ints[4] = {d[0], C, d[2] * d[3], d[4]};
    lt_lbuf *x;
    lt_lnode *pre;
    LT_TRY(operand_buf(lc, n, n->in[0], &x, &pre));
    LT_TRY(call_then_epilogue(lc, n, in ? "lt_nchwc_reorder_in_f32" : "lt_nchwc_reorder_out_f32", x, 4, ints, 0, res));
    return after(lc, pre, res);
}

/* ---- pooling ---- */

static lt_status l_pool(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &r, d) || r != 5) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "blocked shape");
    nn_geom g;
    char why[256];
    bool global = n->op == LT_OP_NchwcGlobalAveragePool || n->op == LT_OP_NchwcGlobalMaxPool;
    if (global) {
        memset(&g, 0, sizeof g);
        for (int k = 0; k < 2; k++) g.in[k] = g.k[k] = d[2 + k], g.s[k] = g.d[k] = 1, g.out[k] = 1;
    } else if (!nn_geom_init(n, 2, d + 2, NULL, true, &g, why, sizeof why)) {
        return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    }
    bool is_max = n->op == LT_OP_NchwcMaxPool || n->op == LT_OP_NchwcGlobalMaxPool;
    int64_t ints[18] = {d[0] * d[1], d[2], d[3], g.out[0], g.out[1], g.k[0], g.k[1], g.s[0], g.s[1], g.pb[0], g.pb[1],
                        g.pe[0], g.pe[1], g.d[0], g.d[1], is_max, lt_attr_int(n, "count_include_pad", 0) != 0, d[4]};
    double flops = (double)lt_lower_numel(n->out[0]) * (double)(g.k[0] * g.k[1]);
    lt_lbuf *x;
    lt_lnode *pre;
    LT_TRY(operand_buf(lc, n, n->in[0], &x, &pre));
    LT_TRY(call_then_epilogue(lc, n, "lt_nchwc_pool_f32", x, 18, ints, flops, res));
    return after(lc, pre, res);
}

/* ---- convolution ---- */

static lt_status conv_index(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j,
                             lt_lnode **idx) {
    idx[0] = bidx[0];
    idx[1] = i;
    return lt_lower_unflat(lc, j, 3, g->out_dims + 2, idx + 2);
}

static lt_status l_conv(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int rx, rw;
    int64_t xd[LT_MAX_RANK], wd[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rx, xd) || !lt_lower_shape(n->in[1], &rw, wd) || rx != 5 || rw != 4)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand shapes");
    nn_geom geo;
    char why[256];
    if (!nn_geom_init(n, 2, xd + 2, wd + 2, false, &geo, why, sizeof why))
        return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    int64_t group = lt_attr_int(n, "group", 1), M = wd[0], C = wd[1] * group, B = xd[4];
    int64_t Mb = (M + B - 1) / B, Cb = (C + B - 1) / B, KH = wd[2], KW = wd[3];
    bool dw = group > 1;
    if (xd[1] != Cb || (dw && (group != C || M != C)))
        return lt_lower_error(lc, n, LT_ERR_INVALID, "channels disagree with the blocked input");
    lt_gemm_desc g = {.n = n, .M = Mb, .N = geo.out[0] * geo.out[1] * B, .K = 1, .alpha = 1, .out_index = conv_index};
    if (!lt_lower_shape(n->out[0], &g.out_rank, g.out_dims) || g.out_rank != 5)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output shape");
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    lt_lbuf *X = in_buf(lc, n->in[0]);
    const lt_value *wv = lt_lower_mem_value(lc, n->in[1]);
    if (!g.C || !X || !wv || !lt_lower_const(wv)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    g.nb = 1;
    g.bext[0] = xd[0], g.bsc[0] = Mb * g.N;
    g.ci = g.N, g.cj = 1;
    g.row_dim0 = g.row_dim1 = 1, g.col_dim0 = 5; /* no bias matching: the node's own bias goes to the call */
    g.no_alpha = true;
    lt_call_epi ce;
    bool need_epi = lt_lower_call_epilogue(lc, &g, &ce);
    int64_t psize = dw ? Cb * KH * KW * B : Mb * Cb * KH * KW * B * B;
    int64_t pints[6] = {M, C, KH, KW, dw, B}; /* depthwise: C == M, w [M, 1, KH, KW] */
    lt_kernel *pk = lt_lower_pack_kernel(lc, "lt_nchwc_conv_pack", wv, psize, 6, pints);
    lt_lbuf *Wp = pk ? lt_lower_add_pack(lc, wv, "Wnchwc", LT_FLOAT, psize, pk) : NULL;
    if (!Wp) return lt_lower_nomem(lc);
    const lt_value *bv = n->n_in > 2 && n->in[2] ? lt_lower_mem_value(lc, n->in[2]) : NULL;
    lt_lnode *zero = I(lc, 0), *a[32];
    int na = 0;
    a[na++] = lt_l_addr(K_, g.C, zero);
    a[na++] = lt_l_addr(K_, X, zero);
    a[na++] = lt_l_addr(K_, Wp, zero);
    a[na++] = lt_l_addr(K_, bv ? lc->vbuf[bv->id] : g.C, zero);
    a[na++] = lt_l_addr(K_, ce.res ? lc->vbuf[ce.res->id] : g.C, zero);
    int64_t ints[] = {xd[0], C, xd[2], xd[3], M, KH, KW, geo.s[0], geo.s[1], geo.pb[0], geo.pb[1], geo.d[0], geo.d[1],
                      geo.out[0], geo.out[1], dw, B, bv ? 1 : 0, ce.res ? ce.res_mode : LT_RES_NONE, ce.act};
    for (size_t q = 0; q < sizeof ints / sizeof *ints; q++) a[na++] = I(lc, ints[q]);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_a);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_b);
    for (int q = 0; q < na; q++)
        if (!a[q]) return lt_lower_nomem(lc);
    for (int q = 0; q < 5; q++) a[q]->buf->read = true; /* accessed through their addresses */
    g.C->written = true;
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, "lt_nchwc_conv_f32", na, a);
    if (!call) return lt_lower_nomem(lc);
    double taps = (double)(dw ? 1 : C) * (double)(KH * KW);
    call->fval = 2.0 * (double)xd[0] * (double)M * (double)(geo.out[0] * geo.out[1]) * taps;
    call->ival = 4 * (lt_lower_numel(n->in[0]) + lt_lower_numel(n->in[1]) + lt_lower_numel(n->out[0]));
    lt_lnode *s[2] = {lt_l_eval(K_, call), NULL};
    int ns = 1;
    if (need_epi) LT_TRY(lt_lower_call_epilogue_nest(lc, &g, &ce, &s[ns++]));
    *res = ns == 1 ? s[0] : lt_l_seq(K_, ns, s);
    return LT_LNN(lc, *res);
}

const lt_lower_reg lt_lower_nchwc[] = {
    {LT_OP_NchwcConv, accept_blocked, NULL, l_conv, 0, 0, 0},
    {LT_OP_NchwcReorderIn, accept_blocked, NULL, l_reorder, 0, 0, 0},
    {LT_OP_NchwcReorderOut, accept_blocked, NULL, l_reorder, 0, 0, 0},
    {LT_OP_NchwcMaxPool, accept_blocked, NULL, l_pool, 0, 0, 0},
    {LT_OP_NchwcAveragePool, accept_blocked, NULL, l_pool, 0, 0, 0},
    {LT_OP_NchwcGlobalAveragePool, accept_blocked, NULL, l_pool, 0, 0, 0},
    {LT_OP_NchwcGlobalMaxPool, accept_blocked, NULL, l_pool, 0, 0, 0},
    {0},
};
