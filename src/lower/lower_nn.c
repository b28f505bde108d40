/* lower_nn.c — `lower` hooks of Conv and the pooling anchors (MaxPool, AveragePool,
 * GlobalAveragePool, GlobalMaxPool).
 *
 * A 1x1, stride-1, unpadded, ungrouped Conv is a batched GEMM (W[M,C] x X[n][C,P]) and goes through
 * lt_lower_gemm (lower_gemm.c) with its bias per row; of one position (P = 1, after a global pool)
 * it is one GEMM X[n, C] x W^T with a row per image and its bias per column. Other convolutions are direct loops: output
 * loops "o0" (image), "o1" (channel), "o2".. (positions), reduction loops "r0" (input channel),
 * "r1".. (kernel taps), padding by clamped loads under a select. Pooling has the same shape.
 */
#include "lower_gpu.h"
#include "lower_conv.h"
#include "lower_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define K_ (lc->k)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K_, v); }
static lt_lnode *V(lt_lctx *lc, lt_lvar *v) { return lt_l_var(K_, v); }
static lt_lnode *add(lt_lctx *lc, lt_lnode *a, lt_lnode *b) { return lt_l_add(K_, a, b); }
static lt_lnode *mulc(lt_lctx *lc, lt_lnode *a, int64_t c) { return c == 1 ? a : lt_l_mul(K_, a, I(lc, c)); }
static lt_lnode *loop(lt_lctx *lc, lt_lvar *v, lt_loop_role role, lt_lnode *ext, lt_lnode *body) {
    return lt_l_for(K_, v, role, I(lc, 0), ext, LT_LOOP_SERIAL, body);
}

/* ---------------------------------------------------------------------------------------------
 * Conv
 * ------------------------------------------------------------------------------------------- */

typedef struct conv_info {
    lt_conv_geom c;          /* the geometry (lower_conv.h) */
    bool has_bias;
} conv_info;

bool lt_lower_conv_geom(const lt_node *n, lt_conv_geom *ci, char *why, size_t size) {
    int rx, rw;
    int64_t dx[LT_MAX_RANK], dw[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rx, dx) || !lt_lower_shape(n->in[1], &rw, dw) || rx < 3 || rw != rx) {
        snprintf(why, size, "needs static X and W of rank >= 3");
        return false;
    }
    ci->nsp = rx - 2;
    ci->N = dx[0], ci->C = dx[1], ci->M = dw[0];
    ci->group = lt_attr_int(n, "group", 1);
    if (ci->group < 1 || ci->C % ci->group || ci->M % ci->group || dw[1] != ci->C / ci->group) {
        snprintf(why, size, "bad group");
        return false;
    }
    if (!nn_geom_init(n, ci->nsp, dx + 2, dw + 2, false, &ci->g, why, size)) return false;
    int ry;
    int64_t dy[LT_MAX_RANK];
    if (!lt_lower_shape(n->out[0], &ry, dy) || ry != rx) {
        snprintf(why, size, "output shape");
        return false;
    }
    for (int d = 0; d < ci->nsp; d++)
        if (ci->g.out[d] != dy[2 + d]) {
            snprintf(why, size, "output shape disagrees with the geometry");
            return false;
        }
    return true;
}

static bool conv_geom(const lt_node *n, conv_info *ci, char *why, size_t size) {
    if (!lt_lower_conv_geom(n, &ci->c, why, size)) return false;
    ci->has_bias = n->n_in > 2 && n->in[2];
    return true;
}

static bool conv_is_pointwise(const conv_info *ci) {
    if (ci->c.group != 1) return false;
    for (int d = 0; d < ci->c.nsp; d++)
        if (ci->c.g.k[d] != 1 || ci->c.g.s[d] != 1 || ci->c.g.pb[d] != 0 || ci->c.g.pe[d] != 0) return false;
    return true;
}

static lt_status conv_index(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j,
                             lt_lnode **idx) {
    idx[0] = bidx[0];
    idx[1] = i;
    return lt_lower_unflat(lc, j, g->out_rank - 2, g->out_dims + 2, idx + 2);
}

/* Output index of the one-position form: row i is the image, column j the output channel. */
static lt_status conv_index_1x1(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j,
                                lt_lnode **idx) {
    (void)bidx;
    idx[0] = i;
    idx[1] = j;
    for (int d = 2; d < g->out_rank; d++)
        if (!(idx[d] = lt_l_int(lc->k, 0))) return lt_lower_nomem(lc);
    return LT_OK;
}

static lt_status l_conv_pointwise(lt_lctx *lc, const lt_node *n, const conv_info *ci, lt_lnode **res) {
    int64_t P = 1;
    for (int d = 0; d < ci->c.nsp; d++) P *= ci->c.g.out[d];
    const lt_value *wv = lt_lower_mem_value(lc, n->in[1]), *xv = lt_lower_mem_value(lc, n->in[0]);
    if (!wv || !xv) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "an operand is not in memory");
    /* W [M, C] x X[n][C, P]; of one position (after a global pool: a classifier's or
     * squeeze-and-excite's 1x1 convolution) Y[n, oc] = X[n, :] . W[oc, :] instead, one GEMM with the
     * images as its rows, W read once as B transposed, not a matrix-vector product per image */
    bool one = P == 1;
    lt_gemm_desc g = {.n = n, .M = one ? ci->c.N : ci->c.M, .N = one ? ci->c.M : P, .K = ci->c.C, .alpha = 1,
                      .out_index = one ? conv_index_1x1 : conv_index, .Av = one ? xv : wv, .Bv = one ? wv : xv};
    if (!lt_lower_shape(n->out[0], &g.out_rank, g.out_dims)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output shape");
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    g.A = lc->vbuf[g.Av->id];
    g.B = lc->vbuf[g.Bv->id];
    if (one) {
        g.ai = ci->c.C, g.ak = 1, g.bj = ci->c.C, g.bk = 1, g.ci = ci->c.M, g.cj = 1;
        if (ci->has_bias) g.bias = n->in[2], g.bias_mode = LT_BIAS_COL;
        g.row_dim0 = 0, g.row_dim1 = 1, g.col_dim0 = 1;
    } else {
        g.nb = 1;
        g.bext[0] = ci->c.N, g.bsc[0] = ci->c.M * P, g.bsa[0] = 0, g.bsb[0] = ci->c.C * P;
        g.ci = P, g.cj = 1, g.ai = ci->c.C, g.ak = 1, g.bk = P, g.bj = 1;
        if (ci->has_bias) g.bias = n->in[2], g.bias_mode = LT_BIAS_ROW;
        g.row_dim0 = 1, g.row_dim1 = 2, g.col_dim0 = 2;
    }
    return lt_lower_gemm(lc, &g, res);
}

/* 2-D convolution through the prelude (codegen/prelude/conv.h): weights packed once, the group's
 * epilogue fused into the call when it fits, else applied by a Loop IR nest after it. */
static lt_status l_conv_call(lt_lctx *lc, const lt_node *n, const conv_info *ci, lt_lnode **res) {
    int64_t P = ci->c.g.out[0] * ci->c.g.out[1], G = ci->c.group, OC = ci->c.M, C = ci->c.C;
    int64_t KH = ci->c.g.k[0], KW = ci->c.g.k[1], Kg = C / G * KH * KW;
    lt_gemm_desc g = {.n = n, .M = OC, .N = P, .K = Kg, .alpha = 1, .out_index = conv_index};
    if (!lt_lower_shape(n->out[0], &g.out_rank, g.out_dims)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output shape");
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    const lt_value *xv = lt_lower_mem_value(lc, n->in[0]), *wv = lt_lower_mem_value(lc, n->in[1]);
    lt_lbuf *X = xv ? lc->vbuf[xv->id] : NULL;
    if (!g.C || !X || !wv) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    g.nb = 1;
    g.bext[0] = ci->c.N, g.bsc[0] = OC * P;
    g.ci = P, g.cj = 1;
    if (ci->has_bias) g.bias = n->in[2], g.bias_mode = LT_BIAS_ROW;
    g.row_dim0 = 1, g.row_dim1 = 2, g.col_dim0 = g.out_rank; /* no per-position bias in conv.h */
    g.no_alpha = true;
    lt_call_epi ce;
    bool need_epi = lt_lower_call_epilogue(lc, &g, &ce);
    bool dw = G > 1 && G == C && OC % C == 0;
    int64_t psize = dw ? OC * KH * KW : G * lt_lower_packed_rows(OC / G, true) * Kg;
    int64_t pints[5] = {OC, C, KH, KW, G};
    lt_lbuf *Wp;
    lt_lnode *pack_now = NULL; /* weights that are not constants: packed by the kernel itself */
    if (lt_lower_const(wv)) {
        lt_kernel *pk = lt_lower_pack_kernel(lc, "lt_conv2d_pack", wv, psize, 5, pints);
        Wp = pk ? lt_lower_add_pack(lc, wv, "Wpacked", LT_FLOAT, psize, pk) : NULL;
        if (!Wp) return lt_lower_nomem(lc);
    } else {
        lt_lbuf *W = lc->vbuf[wv->id];
        if (!(Wp = lt_lower_add_scratch(lc, "Wpacked", LT_FLOAT, psize)) || !W) return lt_lower_nomem(lc);
        lt_lnode *pa[7] = {lt_l_addr(K_, Wp, I(lc, 0)), lt_l_addr(K_, W, I(lc, 0))};
        for (int q = 0; q < 5; q++) pa[2 + q] = I(lc, pints[q]);
        pack_now = lt_l_eval(K_, lt_l_call(K_, LT_UNDEFINED, "lt_conv2d_pack", 7, pa));
        if (!pack_now) return lt_lower_nomem(lc);
        Wp->written = W->read = true;
    }
    int64_t ws_floats = 0;
    lt_lbuf *ws = dw ? NULL : lt_lower_gemm_scratch(lc, &ws_floats);
    if (ws_floats && !ws) return lt_lower_nomem(lc);
    lt_lnode *a[28];
    int na = 0;
    lt_lnode *zero = I(lc, 0);
    a[na++] = lt_l_addr(K_, g.C, zero);
    a[na++] = lt_l_addr(K_, X, zero);
    a[na++] = lt_l_addr(K_, Wp, zero);
    a[na++] = lt_l_addr(K_, ce.bias ? lc->vbuf[ce.bias->id] : g.C, zero);
    a[na++] = lt_l_addr(K_, ce.res ? lc->vbuf[ce.res->id] : g.C, zero);
    a[na++] = lt_l_addr(K_, ws ? ws : g.C, zero);
    int64_t ints[] = {ci->c.N, C, ci->c.g.in[0], ci->c.g.in[1], OC, KH, KW, ci->c.g.s[0], ci->c.g.s[1], ci->c.g.pb[0], ci->c.g.pb[1],
                      ci->c.g.pe[0], ci->c.g.pe[1], ci->c.g.d[0], ci->c.g.d[1], G, ce.bias ? 1 : 0, ce.res ? ce.res_mode : LT_RES_NONE,
                      ce.act};
    for (size_t q = 0; q < sizeof ints / sizeof *ints; q++) a[na++] = I(lc, ints[q]);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_a);
    a[na++] = lt_l_float(K_, LT_FLOAT, ce.act_b);
    a[na++] = I(lc, ws_floats);
    for (int q = 0; q < na; q++)
        if (!a[q]) return lt_lower_nomem(lc);
    for (int q = 0; q < 6; q++) a[q]->buf->read = true; /* accessed through their addresses */
    g.C->written = true;
    if (ws) ws->written = true;
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, "lt_conv2d_f32", na, a);
    if (!call) return lt_lower_nomem(lc);
    call->fval = 2.0 * (double)ci->c.N * (double)OC * (double)P * (double)Kg;
    call->ival = 4 * (lt_lower_numel(n->in[0]) + lt_lower_numel(n->in[1]) + ci->c.N * OC * P);
    lt_lnode *s[3];
    int ns = 0;
    if (pack_now) s[ns++] = pack_now;
    s[ns++] = lt_l_eval(K_, call);
    if (need_epi) LT_TRY(lt_lower_call_epilogue_nest(lc, &g, &ce, &s[ns++]));
    *res = ns == 1 ? s[0] : lt_l_seq(K_, ns, s);
    return LT_LNN(lc, *res);
}

/* A 1-D convolution as a 2-D one of height 1 (X [N, C, 1, W], W [M, C/g, 1, k], Y [N, M, 1, OW]: the
 * same memory), so it takes the 2-D microkernel instead of direct loops, whose sum over the window
 * is one dependent add per tap. */
static void as_2d(conv_info *ci) {
    nn_geom *g = &ci->c.g;
    g->in[1] = g->in[0], g->k[1] = g->k[0], g->s[1] = g->s[0], g->d[1] = g->d[0];
    g->pb[1] = g->pb[0], g->pe[1] = g->pe[0], g->out[1] = g->out[0];
    g->in[0] = g->k[0] = g->s[0] = g->d[0] = g->out[0] = 1;
    g->pb[0] = g->pe[0] = 0;
    g->nsp = ci->c.nsp = 2;
}

/* Direct convolution: for n, oc, o..: acc = bias; for ic, k..: acc += x * w; store. */
static lt_status l_conv(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    conv_info ci;
    char why[256];
    if (!conv_geom(n, &ci, why, sizeof why)) return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    if (lc->opt->gpu && ci.c.nsp == 2) { /* a CUDA prelude entry (lower_gpu_conv.c) when one fits */
        bool handled;
        LT_TRY(lt_lower_gpu_conv(lc, n, &handled, res));
        if (handled) return LT_OK;
    }
    if (conv_is_pointwise(&ci)) return l_conv_pointwise(lc, n, &ci, res);
    if ((ci.c.nsp == 2 || ci.c.nsp == 1) && !lc->opt->no_microkernels && !lc->opt->no_packing && !lc->opt->gpu &&
        (lt_lower_const(lt_lower_mem_value(lc, n->in[1])) || lc->opt->scratch)) {
        if (ci.c.nsp == 1) as_2d(&ci);
        return l_conv_call(lc, n, &ci, res);
    }
    int nsp = ci.c.nsp;
    int64_t Cg = ci.c.C / ci.c.group, Mg = ci.c.M / ci.c.group;
    const lt_value *xv = lt_lower_mem_value(lc, n->in[0]), *wv = lt_lower_mem_value(lc, n->in[1]);
    lt_lbuf *X = xv ? lc->vbuf[xv->id] : NULL, *W = wv ? lc->vbuf[wv->id] : NULL;
    if (!X || !W) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    /* outer loops: n "o0", oc "o1", output positions "o2".. */
    lt_lvar *ov[LT_MAX_RANK];
    lt_lnode *oi[LT_MAX_RANK];
    int64_t odims[LT_MAX_RANK] = {ci.c.N, ci.c.M};
    for (int d = 0; d < nsp; d++) odims[2 + d] = ci.c.g.out[d];
    for (int d = 0; d < nsp + 2; d++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", d);
        ov[d] = lt_kernel_var(K_, name, LT_INT64);
        if (!(oi[d] = V(lc, ov[d]))) return lt_lower_nomem(lc);
    }
    lt_lvar *acc = lt_kernel_var(K_, "acc", LT_FLOAT);
    lt_lnode *init;
    if (ci.has_bias) {
        lt_lnode *c1[1] = {oi[1]};
        LT_TRY(lt_lower_value(lc, n->in[2], c1, &init));
    } else {
        init = lt_l_float(K_, LT_FLOAT, 0);
    }
    /* reduction loops: ic "r0", kernel "r1".. */
    lt_lvar *rv[LT_MAX_RANK];
    for (int d = 0; d < nsp + 1; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d);
        rv[d] = lt_kernel_var(K_, name, LT_INT64);
    }
    lt_lnode *grp = ci.c.group > 1 ? lt_l_binary(K_, LT_LOP_DIV, oi[1], I(lc, Mg)) : I(lc, 0);
    lt_lnode *ic = add(lc, mulc(lc, grp, Cg), V(lc, rv[0]));
    /* x offset and in-bounds condition */
    lt_lnode *xoff = add(lc, mulc(lc, oi[0], ci.c.C), ic), *inb = NULL;
    lt_lnode *woff = add(lc, mulc(lc, oi[1], Cg), V(lc, rv[0]));
    for (int d = 0; d < nsp; d++) {
        lt_lnode *pos = add(lc, add(lc, mulc(lc, oi[2 + d], ci.c.g.s[d]), mulc(lc, V(lc, rv[1 + d]), ci.c.g.d[d])),
                            I(lc, -ci.c.g.pb[d]));
        int64_t in = ci.c.g.in[d];
        bool may_out = ci.c.g.pb[d] > 0 || (ci.c.g.out[d] - 1) * ci.c.g.s[d] + (ci.c.g.k[d] - 1) * ci.c.g.d[d] - ci.c.g.pb[d] >= in;
        if (may_out) {
            lt_lnode *c = lt_l_binary(K_, LT_LOP_AND, lt_l_binary(K_, LT_LOP_GE, pos, I(lc, 0)),
                                      lt_l_binary(K_, LT_LOP_LT, pos, I(lc, in)));
            inb = inb ? lt_l_binary(K_, LT_LOP_AND, inb, c) : c;
            pos = lt_l_binary(K_, LT_LOP_MIN, lt_l_binary(K_, LT_LOP_MAX, pos, I(lc, 0)), I(lc, in - 1));
        }
        xoff = add(lc, mulc(lc, xoff, in), pos);
        woff = add(lc, mulc(lc, woff, ci.c.g.k[d]), V(lc, rv[1 + d]));
    }
    lt_lnode *xl = lt_l_load(K_, X, xoff);
    if (inb) xl = lt_l_select(K_, inb, xl, lt_l_float(K_, LT_FLOAT, 0));
    lt_lnode *body = lt_l_assign(K_, acc, lt_l_add(K_, V(lc, acc), lt_l_mul(K_, xl, lt_l_load(K_, W, woff))));
    for (int d = nsp - 1; d >= 0; d--) body = loop(lc, rv[1 + d], LT_ROLE_REDUCE, I(lc, ci.c.g.k[d]), body);
    body = loop(lc, rv[0], LT_ROLE_REDUCE, I(lc, Cg), body);
    lt_lnode *s[3];
    s[0] = lt_l_let(K_, acc, init);
    s[1] = body;
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, V(lc, acc), &s[2]));
    body = lt_l_seq(K_, 3, s);
    for (int d = nsp + 1; d >= 0; d--) body = loop(lc, ov[d], LT_ROLE_KEPT, I(lc, odims[d]), body);
    *res = body;
    return LT_LNN(lc, body);
}

static bool accept_conv(const lt_node *n, char *why, size_t size) {
    if (!lt_lower_accept_f32_operands(n, why, size)) return false;
    conv_info ci;
    if (!conv_geom(n, &ci, why, size)) return false;
    if (ci.has_bias && lt_lower_numel(n->in[2]) != ci.c.M) {
        snprintf(why, size, "bias is not of shape [M]");
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Pooling
 * ------------------------------------------------------------------------------------------- */

typedef struct pool_ctx {
    const lt_node *n;
    nn_geom g;
    int rx, nsp;
    bool is_max, include_pad;
    bool global; /* Global*Pool: the window is the input's spatial size */
    lt_dtype dt;
    lt_lnode *oi[LT_MAX_RANK];
} pool_ctx;

/* The window reduction at output index oi: statements into s (returns their count) and the
 * result. guarded: taps may fall outside the input (select + clamp, counted divisor). */
/* The taps [*lo, *hi) of spatial dim d that some output reads inside the input: tap r reads
 * o*s + r*dil - pb, smallest at o = 0 and largest at the last output. A window wider than the
 * input and its padding (SAME padding around a huge kernel) has taps that only ever read padding;
 * the loops skip them. (in + pb and the last window's end fit int64: nn_geom_init checked.) */
static void pool_useful_taps(const nn_geom *g, int d, int64_t *lo, int64_t *hi) {
    int64_t dil = g->d[d], reach = g->in[d] + g->pb[d], below = g->pb[d] - (g->out[d] - 1) * g->s[d];
    *lo = below > 0 ? (below + dil - 1) / dil : 0;
    *hi = (reach + dil - 1) / dil;
    if (*hi > g->k[d]) *hi = g->k[d];
    if (*lo > *hi) *lo = *hi;
}

/* Whether any spatial dim has taps that no output reads inside the input. */
static bool pool_clips(const nn_geom *g, int nsp) {
    for (int d = 0; d < nsp; d++) {
        int64_t lo, hi;
        pool_useful_taps(g, d, &lo, &hi);
        if (lo > 0 || hi < g->k[d]) return true;
    }
    return false;
}

/* count_include_pad's divisor of a clipped window, without visiting its taps: per dim, the taps
 * r in [0, k) with o*s + r*dil - pb < in + pe, i.e. min(k, ceil((in + pb + pe - o*s) / dil)) (the
 * numerator is positive: every window starts before the end padding ends), multiplied over dims. */
static lt_lnode *pool_padded_count(lt_lctx *lc, const pool_ctx *pc) {
    const nn_geom *g = &pc->g;
    lt_lnode *cnt = NULL;
    for (int d = 0; d < pc->nsp; d++) {
        int64_t dil = g->d[d], end = g->in[d] + g->pb[d] + g->pe[d] + dil - 1;
        lt_lnode *taps = lt_l_binary(K_, LT_LOP_DIV, add(lc, I(lc, end), mulc(lc, pc->oi[2 + d], -g->s[d])), I(lc, dil));
        taps = lt_l_cast(K_, pc->dt, lt_l_binary(K_, LT_LOP_MIN, taps, I(lc, g->k[d])));
        cnt = cnt ? lt_l_binary(K_, LT_LOP_MUL, cnt, taps) : taps; /* in float: may pass int64 */
    }
    return cnt;
}

static lt_status pool_window(lt_lctx *lc, const pool_ctx *pc, bool guarded, lt_lnode **s, int *ns, lt_lnode **val) {
    const nn_geom *g = &pc->g;
    lt_lvar *rv[LT_MAX_RANK];
    lt_lnode *xi[LT_MAX_RANK], *inb = NULL, *inpad = NULL;
    int64_t tap_lo[LT_MAX_RANK], tap_hi[LT_MAX_RANK];
    bool clip = pool_clips(g, pc->nsp);
    xi[0] = pc->oi[0];
    xi[1] = pc->oi[1];
    for (int d = 0; d < pc->nsp; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d);
        rv[d] = lt_kernel_var(K_, name, LT_INT64);
        tap_lo[d] = 0, tap_hi[d] = g->k[d];
        if (clip) pool_useful_taps(g, d, &tap_lo[d], &tap_hi[d]);
        lt_lnode *pos = add(lc, add(lc, mulc(lc, pc->oi[2 + d], g->s[d]), mulc(lc, V(lc, rv[d]), g->d[d])),
                            I(lc, tap_lo[d] * g->d[d] - g->pb[d]));
        int64_t in = g->in[d];
        bool may_out = g->pb[d] > 0 || (g->out[d] - 1) * g->s[d] + (g->k[d] - 1) * g->d[d] - g->pb[d] >= in;
        if (guarded && may_out) {
            lt_lnode *c = lt_l_binary(K_, LT_LOP_AND, lt_l_binary(K_, LT_LOP_GE, pos, I(lc, 0)),
                                      lt_l_binary(K_, LT_LOP_LT, pos, I(lc, in)));
            inb = inb ? lt_l_binary(K_, LT_LOP_AND, inb, c) : c;
            lt_lnode *cp = lt_l_binary(K_, LT_LOP_LT, pos, I(lc, in + g->pe[d]));
            inpad = inpad ? lt_l_binary(K_, LT_LOP_AND, inpad, cp) : cp;
            pos = lt_l_binary(K_, LT_LOP_MIN, lt_l_binary(K_, LT_LOP_MAX, pos, I(lc, 0)), I(lc, in - 1));
        }
        xi[2 + d] = pos;
    }
    /* a global window: one loop over the flat plane, each dim's position from it by division (which
     * the simplifier folds back into the flat offset): a nest of short loops with sizes known only
     * at run time issued its loads a row at a time, each row a trip to memory */
    lt_lvar *flat = NULL;
    int64_t plane = 1; /* a global window is the input's plane (its size fits), other windows any size */
    if (pc->global && pc->nsp >= 2) {
        for (int d = 0; d < pc->nsp; d++) plane *= g->k[d];
        if (!(flat = lt_kernel_var(K_, "rf", LT_INT64))) return lt_lower_nomem(lc);
        LT_TRY(lt_lower_unflat(lc, V(lc, flat), pc->nsp, g->k, xi + 2));
    }
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, pc->n->in[0], xi, &x));
    lt_dtype dt = pc->dt;
    lt_lvar *acc = lt_kernel_var(K_, "acc", dt), *cnt = NULL;
    lt_lnode *upd;
    if (pc->is_max) {
        if (inb) x = lt_l_select(K_, inb, x, lt_lower_lowest(lc, dt));
        upd = lt_l_assign(K_, acc, lt_l_binary(K_, LT_LOP_MAX, V(lc, acc), x));
        s[(*ns)++] = lt_l_let(K_, acc, lt_lower_lowest(lc, dt));
    } else {
        if (inb) x = lt_l_select(K_, inb, x, lt_lower_imm(lc, dt, 0));
        upd = lt_l_assign(K_, acc, lt_l_add(K_, V(lc, acc), x));
        s[(*ns)++] = lt_l_let(K_, acc, lt_lower_imm(lc, dt, 0));
        lt_lnode *counted = pc->include_pad ? inpad : inb;
        if (counted && !(clip && pc->include_pad)) {
            /* the divisor depends on the window's position: count it */
            cnt = lt_kernel_var(K_, "cnt", dt);
            s[(*ns)++] = lt_l_let(K_, cnt, lt_lower_imm(lc, dt, 0));
            lt_lnode *one = lt_lower_imm(lc, dt, 1), *zero = lt_lower_imm(lc, dt, 0);
            lt_lnode *two[2] = {upd, lt_l_assign(K_, cnt, lt_l_add(K_, V(lc, cnt), lt_l_select(K_, counted, one, zero)))};
            upd = lt_l_seq(K_, 2, two);
        }
    }
    if (flat) upd = loop(lc, flat, LT_ROLE_REDUCE, I(lc, plane), upd);
    else
        for (int d = pc->nsp - 1; d >= 0; d--) upd = loop(lc, rv[d], LT_ROLE_REDUCE, I(lc, tap_hi[d] - tap_lo[d]), upd);
    s[(*ns)++] = upd;
    lt_lnode *v = V(lc, acc);
    if (!pc->is_max) {
        lt_lnode *div;
        if (cnt) div = V(lc, cnt);
        else if (clip && pc->include_pad) div = pool_padded_count(lc, pc);
        else { /* an unguarded window lies inside the input: its taps fit in memory, so in int64 */
            int64_t full = 1;
            for (int d = 0; d < pc->nsp; d++) full *= g->k[d];
            div = lt_lower_imm(lc, dt, (double)full);
        }
        v = lt_l_binary(K_, LT_LOP_DIV, v, div);
    }
    *val = v;
    return LT_LNN(lc, v);
}

#define POOL_UNROLL_TAPS 32

/* An unguarded window of at most POOL_UNROLL_TAPS taps as one expression (a balanced max/add
 * tree): no loop or accumulator, so the loop over outputs vectorizes. */
static lt_status pool_window_unrolled(lt_lctx *lc, const pool_ctx *pc, lt_lnode **val) {
    const nn_geom *g = &pc->g;
    lt_lnode *taps[POOL_UNROLL_TAPS];
    int nt = 0;
    int64_t kk[NN_MAX_SP] = {0}, full = 1;
    for (int d = 0; d < pc->nsp; d++) full *= g->k[d];
    for (int64_t t = 0; t < full; t++) {
        lt_lnode *xi[LT_MAX_RANK] = {pc->oi[0], pc->oi[1]};
        for (int d = 0; d < pc->nsp; d++)
            xi[2 + d] = add(lc, mulc(lc, pc->oi[2 + d], g->s[d]), I(lc, kk[d] * g->d[d] - g->pb[d]));
        LT_TRY(lt_lower_value(lc, pc->n->in[0], xi, &taps[nt]));
        nt++;
        for (int d = pc->nsp - 1; d >= 0; d--) { /* next tap */
            if (++kk[d] < g->k[d]) break;
            kk[d] = 0;
        }
    }
    for (int w = nt; w > 1; w = (w + 1) / 2) /* pairwise: a shallow tree */
        for (int i = 0; i < w / 2; i++) {
            lt_lnode *a = taps[2 * i], *b = taps[2 * i + 1];
            taps[i] = pc->is_max ? lt_l_binary(K_, LT_LOP_MAX, a, b) : lt_l_add(K_, a, b);
            if (w % 2 && i == w / 2 - 1) taps[i + 1] = taps[w - 1];
        }
    lt_lnode *v = taps[0];
    if (!pc->is_max) v = lt_l_binary(K_, LT_LOP_DIV, v, lt_lower_imm(lc, pc->dt, (double)full));
    *val = v;
    return LT_LNN(lc, v);
}

/* One output element: the window statements and the store. */
static lt_status pool_elem(lt_lctx *lc, const pool_ctx *pc, bool guarded, lt_lnode **res) {
    lt_lnode *s[5], *v;
    int ns = 0;
    int64_t full = 1; /* taps per window, saturated past the unrolling limit */
    for (int d = 0; d < pc->nsp; d++) {
        if (full > POOL_UNROLL_TAPS || pc->g.k[d] > POOL_UNROLL_TAPS) {
            full = POOL_UNROLL_TAPS + 1;
            break;
        }
        full *= pc->g.k[d];
    }
    /* a global window is the input's size: a shape-generic kernel keeps its loop (one code for every size) */
    bool unroll = !guarded && full <= POOL_UNROLL_TAPS && !(pc->global && lc->opt->shape_generic);
    if (unroll) LT_TRY(pool_window_unrolled(lc, pc, &v));
    else LT_TRY(pool_window(lc, pc, guarded, s, &ns, &v));
    LT_TRY(lt_lower_store_out(lc, pc->n->out[0], pc->oi, v, &s[ns]));
    ns++;
    *res = lt_l_seq(K_, ns, s);
    return LT_LNN(lc, *res);
}

/* A loop over the last output dim in [lo, hi) (named name, of the given role), body = one element. */
static lt_status pool_range(lt_lctx *lc, pool_ctx *pc, const char *name, lt_loop_role role, int64_t lo, int64_t hi,
                            bool guarded, lt_lnode **res) {
    if (hi <= lo) {
        *res = NULL;
        return LT_OK;
    }
    int last = pc->rx - 1;
    lt_lvar *v = lt_kernel_var(K_, name, LT_INT64);
    if (!v || !(pc->oi[last] = V(lc, v))) return lt_lower_nomem(lc);
    lt_lnode *body;
    LT_TRY(pool_elem(lc, pc, guarded, &body));
    *res = lt_l_for(K_, v, role, I(lc, lo), I(lc, hi - lo), LT_LOOP_SERIAL, body);
    return LT_LNN(lc, *res);
}

/* Pooling. Kept loops "o0" (image), "o1" (channel), "o2".. (positions but the last); along the last
 * position dim, the windows that stay inside the input run in a loop "vo" (role LANE_OUTPUT) with no
 * bounds checks (the default schedule vectorizes it: each lane one output), the edges in guarded
 * kept loops; rows whose windows leave the input along an outer dim are all guarded. */
static lt_status l_pool(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    pool_ctx pc = {.n = n};
    int64_t dx[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &pc.rx, dx)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "no static shape");
    pc.nsp = pc.rx - 2;
    pc.is_max = n->op == LT_OP_MaxPool || n->op == LT_OP_GlobalMaxPool;
    bool global = n->op == LT_OP_GlobalAveragePool || n->op == LT_OP_GlobalMaxPool;
    pc.global = global;
    char why[256];
    if (global) {
        memset(&pc.g, 0, sizeof pc.g);
        pc.g.nsp = pc.nsp;
        for (int d = 0; d < pc.nsp; d++)
            pc.g.in[d] = pc.g.k[d] = dx[2 + d], pc.g.s[d] = pc.g.d[d] = 1, pc.g.out[d] = 1;
    } else if (!nn_geom_init(n, pc.nsp, dx + 2, NULL, true, &pc.g, why, sizeof why)) {
        return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    }
    pc.include_pad = lt_attr_int(n, "count_include_pad", 0) != 0;
    pc.dt = lt_lower_cdtype(n->in[0]->type.dtype);
    const nn_geom *g = &pc.g;
    int last = pc.rx - 1;
    lt_lvar *ov[LT_MAX_RANK];
    int64_t odims[LT_MAX_RANK] = {dx[0], dx[1]};
    for (int d = 0; d < pc.nsp; d++) odims[2 + d] = g->out[d];
    for (int d = 0; d < last; d++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", d);
        ov[d] = lt_kernel_var(K_, name, LT_INT64);
        if (!(pc.oi[d] = V(lc, ov[d]))) return lt_lower_nomem(lc);
    }
    /* interior range [lo, hi] of each position dim: o*s - pb >= 0 and o*s - pb + (k-1)*d < in */
    int64_t lo[LT_MAX_RANK], hi[LT_MAX_RANK];
    lt_lnode *outer_in = NULL;
    bool outer_empty = false;
    for (int d = 0; d < pc.nsp; d++) {
        int64_t span = (g->k[d] - 1) * g->d[d], st = g->s[d], top = g->in[d] - 1 - span + g->pb[d];
        lo[d] = (g->pb[d] + st - 1) / st;
        hi[d] = top >= 0 ? top / st : -1;
        if (hi[d] > g->out[d] - 1) hi[d] = g->out[d] - 1;
        bool may_out = lo[d] > 0 || hi[d] < g->out[d] - 1;
        if (d == pc.nsp - 1 || !may_out) continue;
        if (lo[d] > hi[d]) outer_empty = true;
        lt_lnode *c = lt_l_binary(K_, LT_LOP_AND, lt_l_binary(K_, LT_LOP_GE, pc.oi[2 + d], I(lc, lo[d])),
                                  lt_l_binary(K_, LT_LOP_LE, pc.oi[2 + d], I(lc, hi[d])));
        outer_in = outer_in ? lt_l_binary(K_, LT_LOP_AND, outer_in, c) : c;
    }
    int64_t OW = odims[last], L = lo[pc.nsp - 1], H = hi[pc.nsp - 1] + 1;
    if (L > OW) L = OW; /* padding wider than the output row: every column is an edge column */
    if (H < L) H = L;
    lt_lnode *body;
    if (global) {
        LT_TRY(pool_range(lc, &pc, "o", LT_ROLE_KEPT, 0, OW, false, &body));
    } else {
        /* rows inside along the outer dims: guarded edges, unguarded middle */
        lt_lnode *parts[3];
        int np = 0;
        LT_TRY(pool_range(lc, &pc, "oa", LT_ROLE_KEPT, 0, L, true, &parts[np]));
        if (parts[np]) np++;
        LT_TRY(pool_range(lc, &pc, "vo", LT_ROLE_LANE_OUTPUT, L, H, false, &parts[np]));
        if (parts[np]) np++;
        LT_TRY(pool_range(lc, &pc, "ob", LT_ROLE_KEPT, H, OW, true, &parts[np]));
        if (parts[np]) np++;
        body = np == 1 ? parts[0] : lt_l_seq(K_, np, parts);
        if (outer_in || outer_empty) {
            lt_lnode *slow;
            LT_TRY(pool_range(lc, &pc, "oc", LT_ROLE_KEPT, 0, OW, true, &slow));
            body = outer_empty ? slow : lt_l_if(K_, outer_in, body, slow);
        }
    }
    for (int d = last - 1; d >= 0; d--) body = loop(lc, ov[d], LT_ROLE_KEPT, I(lc, odims[d]), body);
    *res = body;
    return LT_LNN(lc, body);
}

static bool accept_pool(const lt_node *n, char *why, size_t size) {
    if (!lt_lower_accept_float(n, why, size)) return false;
    int rx;
    int64_t dx[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rx, dx) || rx < 3) {
        snprintf(why, size, "needs rank >= 3");
        return false;
    }
    if (n->op == LT_OP_MaxPool && n->n_out > 1 && n->out[1]) {
        snprintf(why, size, "Indices output");
        return false;
    }
    if (n->op == LT_OP_GlobalAveragePool || n->op == LT_OP_GlobalMaxPool) return true;
    nn_geom g;
    if (!nn_geom_init(n, rx - 2, dx + 2, NULL, true, &g, why, size)) return false;
    for (int d = 0; d < rx - 2; d++)
        if (g.out[d] < 1 || g.out[d] != n->out[0]->type.dims[2 + d].value) {
            snprintf(why, size, "output shape disagrees with the geometry");
            return false;
        }
    return true;
}

const lt_lower_reg lt_lower_nn[] = {
    {LT_OP_Conv, accept_conv, NULL, l_conv, 0, 0, 0},
    {LT_OP_MaxPool, accept_pool, NULL, l_pool, 0, 0, 0},
    {LT_OP_AveragePool, accept_pool, NULL, l_pool, 0, 0, 0},
    {LT_OP_GlobalAveragePool, accept_pool, NULL, l_pool, 0, 0, 0},
    {LT_OP_GlobalMaxPool, accept_pool, NULL, l_pool, 0, 0, 0},
    {0},
};
