/* lower_nn.c — `lower` hooks of the neural-network anchors: MatMul, Gemm, Conv, MaxPool,
 * AveragePool, GlobalAveragePool, GlobalMaxPool.
 *
 * GEMM-shaped work (MatMul, Gemm, 1x1 stride-1 unpadded Conv) is lowered to the canonical nest the
 * `microkernel` schedule step recognizes (schedule.h), inside an optional parallel row-block loop:
 *     for b..:                      batch dims ("b0", ...)
 *       for mb:                     row blocks of MB rows ("mb"; absent when there is one block)
 *         for zi: for zj: C = 0                                  (init)
 *         for i: for j: for k: C[..] = C[..] + A[..] * B[..]     ("microkernel i lt_sgemm")
 *         for ei: for ej: C[..] = epilogue(C[..])               (alpha, bias, fused epilogue)
 * C is the group's output buffer (fusion keeps the epilogue's shape and dtype), so the epilogue
 * runs in place while the block is hot in cache. Without the microkernel the same nest is plain
 * Loop IR (the reference for tests).
 * Other convolutions are direct loops (padding by clamped loads and selects); pooling likewise.
 */
#include "lower_impl.h"

#include "../ops/nn_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define K (lc->k)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K, v); }
static lt_lnode *V(lt_lctx *lc, lt_lvar *v) { return lt_l_var(K, v); }
static lt_lnode *add(lt_lctx *lc, lt_lnode *a, lt_lnode *b) { return lt_l_add(K, a, b); }
static lt_lnode *mulc(lt_lctx *lc, lt_lnode *a, int64_t c) { return c == 1 ? a : lt_l_mul(K, a, I(lc, c)); }
static lt_lnode *loop(lt_lctx *lc, lt_lvar *v, lt_lnode *ext, lt_lnode *body) {
    return lt_l_for(K, v, I(lc, 0), ext, LT_LOOP_SERIAL, body);
}

/* ---------------------------------------------------------------------------------------------
 * GEMM nest
 * ------------------------------------------------------------------------------------------- */

typedef struct gemm_desc {
    const lt_node *n;
    int64_t M, N, Kd;
    lt_lbuf *C, *A, *B;
    lt_lnode *cb, *ab, *bb;           /* base offsets (may use outer variables) */
    int64_t ci, cj, ai, ak, bk, bj;   /* strides */
    /* epilogue: value at (i, j) from the accumulated C (NULL: none) */
    lt_status (*epi)(lt_lctx *lc, const struct gemm_desc *g, lt_lnode *i, lt_lnode *j, lt_lnode *acc,
                     lt_lnode **stmt);
    void *user;
} gemm_desc;

static int64_t row_block(int64_t M) {
    if (M < 64) return M;
    /* about 8 blocks, a multiple of 8 rows, dividing M when a nearby divisor exists */
    int64_t mb = (M + 7) / 8;
    mb = (mb + 7) / 8 * 8;
    for (int64_t d = mb; d <= mb + mb / 2; d += 8)
        if (M % d == 0) return d;
    return mb;
}

static lt_status build_gemm(lt_lctx *lc, gemm_desc *g, lt_lnode **res) {
    int64_t MB = row_block(g->M), nblk = (g->M + MB - 1) / MB;
    lt_lvar *mb = nblk > 1 ? lt_kernel_var(K, "mb", LT_INT64) : NULL;
    lt_lnode *row0 = mb ? mulc(lc, V(lc, mb), MB) : I(lc, 0);
    lt_lnode *rows = I(lc, MB);
    if (mb && g->M % MB)
        rows = lt_l_binary(K, LT_LOP_MIN, I(lc, MB), add(lc, I(lc, g->M), lt_l_unary(K, LT_LOP_NEG, row0)));
    lt_lnode *cbase = add(lc, g->cb, mulc(lc, row0, g->ci)), *abase = add(lc, g->ab, mulc(lc, row0, g->ai));
    lt_lnode *s[3];
    int ns = 0;
    /* init */
    lt_lvar *zi = lt_kernel_var(K, "zi", LT_INT64), *zj = lt_kernel_var(K, "zj", LT_INT64);
    lt_lnode *zoff = add(lc, add(lc, cbase, mulc(lc, V(lc, zi), g->ci)), mulc(lc, V(lc, zj), g->cj));
    s[ns++] = loop(lc, zi, rows, loop(lc, zj, I(lc, g->N), lt_l_store(K, g->C, zoff, lt_l_float(K, g->C->dtype, 0))));
    /* accumulate: C = C + A * B, buffers in the order C, A, B */
    lt_lvar *i = lt_kernel_var(K, "i", LT_INT64), *j = lt_kernel_var(K, "j", LT_INT64), *k = lt_kernel_var(K, "k", LT_INT64);
    lt_lnode *coff = add(lc, add(lc, cbase, mulc(lc, V(lc, i), g->ci)), mulc(lc, V(lc, j), g->cj));
    lt_lnode *aoff = add(lc, add(lc, abase, mulc(lc, V(lc, i), g->ai)), mulc(lc, V(lc, k), g->ak));
    lt_lnode *boff = add(lc, add(lc, g->bb, mulc(lc, V(lc, k), g->bk)), mulc(lc, V(lc, j), g->bj));
    lt_lnode *upd = lt_l_store(K, g->C, coff,
                               lt_l_add(K, lt_l_load(K, g->C, coff),
                                        lt_l_mul(K, lt_l_load(K, g->A, aoff), lt_l_load(K, g->B, boff))));
    s[ns++] = loop(lc, i, rows, loop(lc, j, I(lc, g->N), loop(lc, k, I(lc, g->Kd), upd)));
    /* epilogue */
    if (g->epi) {
        lt_lvar *ei = lt_kernel_var(K, "ei", LT_INT64), *ej = lt_kernel_var(K, "ej", LT_INT64);
        lt_lnode *eoff = add(lc, add(lc, cbase, mulc(lc, V(lc, ei), g->ci)), mulc(lc, V(lc, ej), g->cj));
        lt_lnode *st = NULL;
        LT_TRY(g->epi(lc, g, add(lc, row0, V(lc, ei)), V(lc, ej), lt_l_load(K, g->C, eoff), &st));
        s[ns++] = loop(lc, ei, rows, loop(lc, ej, I(lc, g->N), st));
    }
    lt_lnode *body = lt_l_seq(K, ns, s);
    if (mb) body = loop(lc, mb, I(lc, nblk), body);
    *res = body;
    return LT_LNN(lc, body);
}

/* ---- MatMul ---- */

typedef struct mm_info {
    int ry;                       /* output rank */
    int64_t ydims[LT_MAX_RANK];
    int nbatch;                   /* batch dims of the output */
    bool a_vec, b_vec;            /* 1-D operands */
    lt_lnode *bidx[LT_MAX_RANK];  /* batch loop variables */
} mm_info;

static lt_status mm_epi(lt_lctx *lc, const gemm_desc *g, lt_lnode *i, lt_lnode *j, lt_lnode *acc, lt_lnode **stmt) {
    const mm_info *mi = g->user;
    lt_lnode *yi[LT_MAX_RANK];
    int r = 0;
    for (int d = 0; d < mi->nbatch; d++) yi[r++] = mi->bidx[d];
    if (!mi->a_vec) yi[r++] = i;
    if (!mi->b_vec) yi[r++] = j;
    return lt_lower_store_out(lc, g->n->out[0], yi, acc, stmt);
}

/* Base offset of a batched operand: its batch dims broadcast against the output's. */
static lt_lnode *batch_base(lt_lctx *lc, const lt_value *v, int mat_dims, const mm_info *mi) {
    int r;
    int64_t d[LT_MAX_RANK];
    lt_lower_shape(v, &r, d);
    int nb = r - mat_dims;
    int64_t stride = 1;
    for (int q = r - 1; q >= nb; q--) stride *= d[q];
    lt_lnode *off = I(lc, 0);
    for (int q = nb - 1; q >= 0; q--) {
        int od = q + mi->nbatch - nb;
        if (d[q] != 1) off = add(lc, off, mulc(lc, mi->bidx[od], stride));
        stride *= d[q];
    }
    return off;
}

static bool has_epilogue(lt_lctx *lc, const lt_value *v) {
    const lt_value *fin = NULL;
    lt_lower_out_buf(lc, v, &fin);
    return fin != v;
}

static lt_status l_matmul(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    mm_info mi = {0};
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) ||
        !lt_lower_shape(n->out[0], &mi.ry, mi.ydims))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "shapes are not static");
    mi.a_vec = ra == 1;
    mi.b_vec = rb == 1;
    int64_t M = mi.a_vec ? 1 : da[ra - 2], Kd = da[ra - 1], N = mi.b_vec ? 1 : db[rb - 1];
    mi.nbatch = mi.ry - (mi.a_vec ? 0 : 1) - (mi.b_vec ? 0 : 1);
    lt_lvar *bv[LT_MAX_RANK];
    for (int d = 0; d < mi.nbatch; d++) {
        char name[16];
        snprintf(name, sizeof name, "b%d", d);
        bv[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(mi.bidx[d] = V(lc, bv[d]))) return lt_lower_nomem(lc);
    }
    const lt_value *fin = NULL;
    gemm_desc g = {.n = n, .M = M, .N = N, .Kd = Kd, .user = &mi};
    g.C = lt_lower_out_buf(lc, n->out[0], &fin);
    g.A = lc->vbuf[n->in[0]->id];
    g.B = lc->vbuf[n->in[1]->id];
    if (!g.C || !g.A || !g.B) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    /* output batch base: row-major over the batch dims of Y */
    lt_lnode *cb = I(lc, 0);
    int64_t stride = M * N;
    for (int d = mi.nbatch - 1; d >= 0; d--) {
        cb = add(lc, cb, mulc(lc, mi.bidx[d], stride));
        stride *= mi.ydims[d];
    }
    g.cb = cb;
    g.ci = N, g.cj = 1;
    g.ab = mi.a_vec ? I(lc, 0) : batch_base(lc, n->in[0], 2, &mi);
    g.ai = Kd, g.ak = 1;
    g.bb = mi.b_vec ? I(lc, 0) : batch_base(lc, n->in[1], 2, &mi);
    g.bk = N, g.bj = 1;
    if (has_epilogue(lc, n->out[0])) g.epi = mm_epi;
    lt_lnode *body;
    LT_TRY(build_gemm(lc, &g, &body));
    for (int d = mi.nbatch - 1; d >= 0; d--) body = loop(lc, bv[d], I(lc, mi.ydims[d]), body);
    *res = body;
    return LT_LNN(lc, body);
}

/* float32 operands that live in memory (a one-element constant would be folded to an immediate,
 * leaving the microkernel nest without a buffer) */
static bool accept_f32_only(const lt_node *n, char *why, size_t size) {
    for (int i = 0; i < n->n_in; i++) {
        if (!n->in[i]) continue;
        if (n->in[i]->type.dtype != LT_FLOAT) {
            snprintf(why, size, "input %d is %s (float only)", i, lt_dtype_name(n->in[i]->type.dtype));
            return false;
        }
        if (i < 2 && lt_lower_is_imm(n->in[i])) {
            snprintf(why, size, "input %d is a one-element constant", i);
            return false;
        }
    }
    return true;
}

static bool accept_matmul(const lt_node *n, char *why, size_t size) {
    if (!accept_f32_only(n, why, size)) return false;
    if (n->in[0]->type.rank < 1 || n->in[1]->type.rank < 1) {
        snprintf(why, size, "scalar operand");
        return false;
    }
    return true;
}

/* ---- Gemm ---- */

typedef struct gemm_info {
    double alpha, beta;
    bool has_c;
} gemm_info;

static lt_status gemm_epi(lt_lctx *lc, const gemm_desc *g, lt_lnode *i, lt_lnode *j, lt_lnode *acc, lt_lnode **stmt) {
    const gemm_info *gi = g->user;
    const lt_node *n = g->n;
    lt_lnode *v = acc;
    if (gi->alpha != 1) v = lt_l_mul(K, lt_l_float(K, LT_FLOAT, gi->alpha), v);
    if (gi->has_c && gi->beta != 0) {
        lt_lnode *ij[2] = {i, j}, *c;
        int64_t dims[2] = {g->M, g->N};
        LT_TRY(lt_lower_input(lc, n, 2, 2, dims, ij, &c));
        if (gi->beta != 1) c = lt_l_mul(K, lt_l_float(K, LT_FLOAT, gi->beta), c);
        v = lt_l_add(K, v, c);
    }
    lt_lnode *ij[2] = {i, j};
    if (!v) return lt_lower_nomem(lc);
    return lt_lower_store_out(lc, n->out[0], ij, v, stmt);
}

static lt_status l_gemm(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) || ra != 2 || rb != 2)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operands are not static matrices");
    bool ta = lt_attr_int(n, "transA", 0) != 0, tb = lt_attr_int(n, "transB", 0) != 0;
    int64_t M = ta ? da[1] : da[0], Kd = ta ? da[0] : da[1], N = tb ? db[0] : db[1];
    gemm_info gi = {lt_attr_float(n, "alpha", 1.0f), lt_attr_float(n, "beta", 1.0f), n->n_in > 2 && n->in[2]};
    gemm_desc g = {.n = n, .M = M, .N = N, .Kd = Kd, .user = &gi};
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    g.A = lc->vbuf[n->in[0]->id];
    g.B = lc->vbuf[n->in[1]->id];
    if (!g.C || !g.A || !g.B) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    g.cb = I(lc, 0), g.ab = I(lc, 0), g.bb = I(lc, 0);
    g.ci = N, g.cj = 1;
    g.ai = ta ? 1 : Kd, g.ak = ta ? M : 1;
    g.bk = tb ? 1 : N, g.bj = tb ? Kd : 1;
    if (gi.alpha != 1 || (gi.has_c && gi.beta != 0) || has_epilogue(lc, n->out[0])) g.epi = gemm_epi;
    return build_gemm(lc, &g, res);
}

static bool accept_gemm(const lt_node *n, char *why, size_t size) {
    if (!accept_f32_only(n, why, size)) return false;
    if (n->in[0]->type.rank != 2 || n->in[1]->type.rank != 2) {
        snprintf(why, size, "operands are not matrices");
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Conv
 * ------------------------------------------------------------------------------------------- */

typedef struct conv_info {
    nn_geom g;
    int nsp;
    int64_t N, C, M, group;
    bool has_bias;
} conv_info;

static bool conv_geom(const lt_node *n, conv_info *ci, char *why, size_t size) {
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
    ci->has_bias = n->n_in > 2 && n->in[2];
    return true;
}

static bool conv_is_pointwise(const conv_info *ci) {
    if (ci->group != 1) return false;
    for (int d = 0; d < ci->nsp; d++)
        if (ci->g.k[d] != 1 || ci->g.s[d] != 1 || ci->g.pb[d] != 0 || ci->g.pe[d] != 0) return false;
    return true;
}

typedef struct conv_epi_info {
    const conv_info *ci;
    lt_lnode *nvar;
    int64_t P; /* output positions per image */
} conv_epi_info;

/* Y[n, i=oc, j=position]: bias add and the fused epilogue */
static lt_status conv_gemm_epi(lt_lctx *lc, const gemm_desc *g, lt_lnode *i, lt_lnode *j, lt_lnode *acc,
                               lt_lnode **stmt) {
    const conv_epi_info *ce = g->user;
    const lt_node *n = g->n;
    lt_lnode *v = acc;
    if (ce->ci->has_bias) {
        lt_lnode *b, *ci1[1] = {i};
        LT_TRY(lt_lower_value(lc, n->in[2], ci1, &b));
        v = lt_l_add(K, v, b);
    }
    int ry;
    int64_t dy[LT_MAX_RANK];
    lt_lower_shape(n->out[0], &ry, dy);
    lt_lnode *yi[LT_MAX_RANK];
    yi[0] = ce->nvar;
    yi[1] = i;
    LT_TRY(lt_lower_unflat(lc, j, ry - 2, dy + 2, yi + 2));
    if (!v) return lt_lower_nomem(lc);
    return lt_lower_store_out(lc, n->out[0], yi, v, stmt);
}

static lt_status l_conv_pointwise(lt_lctx *lc, const lt_node *n, const conv_info *ci, lt_lnode **res) {
    int64_t P = 1;
    for (int d = 0; d < ci->nsp; d++) P *= ci->g.out[d];
    lt_lvar *nv = lt_kernel_var(K, "b0", LT_INT64);
    conv_epi_info ce = {ci, V(lc, nv), P};
    gemm_desc g = {.n = n, .M = ci->M, .N = P, .Kd = ci->C, .user = &ce};
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    g.A = lc->vbuf[n->in[1]->id]; /* W [M, C] */
    g.B = lc->vbuf[n->in[0]->id]; /* X [N, C, P] */
    if (!g.C || !g.A || !g.B) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    g.cb = mulc(lc, V(lc, nv), ci->M * P);
    g.ci = P, g.cj = 1;
    g.ab = I(lc, 0);
    g.ai = ci->C, g.ak = 1;
    g.bb = mulc(lc, V(lc, nv), ci->C * P);
    g.bk = P, g.bj = 1;
    if (ci->has_bias || has_epilogue(lc, n->out[0])) g.epi = conv_gemm_epi;
    lt_lnode *body;
    LT_TRY(build_gemm(lc, &g, &body));
    *res = loop(lc, nv, I(lc, ci->N), body);
    return LT_LNN(lc, *res);
}

/* Direct convolution: for n, oc, o..: acc = bias; for ic, k..: acc += x * w; store. */
static lt_status l_conv(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    conv_info ci;
    char why[256];
    if (!conv_geom(n, &ci, why, sizeof why)) return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    if (conv_is_pointwise(&ci)) return l_conv_pointwise(lc, n, &ci, res);
    int nsp = ci.nsp;
    int64_t Cg = ci.C / ci.group, Mg = ci.M / ci.group;
    lt_lbuf *X = lc->vbuf[n->in[0]->id], *W = lc->vbuf[n->in[1]->id];
    if (!X || !W) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    /* outer loops: n "o0", oc "o1", output positions "o2".. */
    lt_lvar *ov[LT_MAX_RANK];
    lt_lnode *oi[LT_MAX_RANK];
    int64_t odims[LT_MAX_RANK] = {ci.N, ci.M};
    for (int d = 0; d < nsp; d++) odims[2 + d] = ci.g.out[d];
    for (int d = 0; d < nsp + 2; d++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", d);
        ov[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(oi[d] = V(lc, ov[d]))) return lt_lower_nomem(lc);
    }
    lt_lvar *acc = lt_kernel_var(K, "acc", LT_FLOAT);
    lt_lnode *init;
    if (ci.has_bias) {
        lt_lnode *c1[1] = {oi[1]};
        LT_TRY(lt_lower_value(lc, n->in[2], c1, &init));
    } else {
        init = lt_l_float(K, LT_FLOAT, 0);
    }
    /* reduction loops: ic "r0", kernel "r1".. */
    lt_lvar *rv[LT_MAX_RANK];
    for (int d = 0; d < nsp + 1; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d);
        rv[d] = lt_kernel_var(K, name, LT_INT64);
    }
    lt_lnode *grp = ci.group > 1 ? lt_l_binary(K, LT_LOP_DIV, oi[1], I(lc, Mg)) : I(lc, 0);
    lt_lnode *ic = add(lc, mulc(lc, grp, Cg), V(lc, rv[0]));
    /* x offset and in-bounds condition */
    lt_lnode *xoff = add(lc, mulc(lc, oi[0], ci.C), ic), *inb = NULL;
    lt_lnode *woff = add(lc, mulc(lc, oi[1], Cg), V(lc, rv[0]));
    for (int d = 0; d < nsp; d++) {
        lt_lnode *pos = add(lc, add(lc, mulc(lc, oi[2 + d], ci.g.s[d]), mulc(lc, V(lc, rv[1 + d]), ci.g.d[d])),
                            I(lc, -ci.g.pb[d]));
        int64_t in = ci.g.in[d];
        bool may_out = ci.g.pb[d] > 0 || (ci.g.out[d] - 1) * ci.g.s[d] + (ci.g.k[d] - 1) * ci.g.d[d] - ci.g.pb[d] >= in;
        if (may_out) {
            lt_lnode *c = lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_GE, pos, I(lc, 0)),
                                      lt_l_binary(K, LT_LOP_LT, pos, I(lc, in)));
            inb = inb ? lt_l_binary(K, LT_LOP_AND, inb, c) : c;
            pos = lt_l_binary(K, LT_LOP_MIN, lt_l_binary(K, LT_LOP_MAX, pos, I(lc, 0)), I(lc, in - 1));
        }
        xoff = add(lc, mulc(lc, xoff, in), pos);
        woff = add(lc, mulc(lc, woff, ci.g.k[d]), V(lc, rv[1 + d]));
    }
    lt_lnode *xv = lt_l_load(K, X, xoff);
    if (inb) xv = lt_l_select(K, inb, xv, lt_l_float(K, LT_FLOAT, 0));
    lt_lnode *body = lt_l_assign(K, acc, lt_l_add(K, V(lc, acc), lt_l_mul(K, xv, lt_l_load(K, W, woff))));
    for (int d = nsp - 1; d >= 0; d--) body = loop(lc, rv[1 + d], I(lc, ci.g.k[d]), body);
    body = loop(lc, rv[0], I(lc, Cg), body);
    lt_lnode *s[3];
    s[0] = lt_l_let(K, acc, init);
    s[1] = body;
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, V(lc, acc), &s[2]));
    body = lt_l_seq(K, 3, s);
    for (int d = nsp + 1; d >= 0; d--) body = loop(lc, ov[d], I(lc, odims[d]), body);
    *res = body;
    return LT_LNN(lc, body);
}

static bool accept_conv(const lt_node *n, char *why, size_t size) {
    if (!accept_f32_only(n, why, size)) return false;
    conv_info ci;
    if (!conv_geom(n, &ci, why, size)) return false;
    if (ci.has_bias && lt_lower_numel(n->in[2]) != ci.M) {
        snprintf(why, size, "bias is not of shape [M]");
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Pooling
 * ------------------------------------------------------------------------------------------- */

static lt_status l_pool(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int rx;
    int64_t dx[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &rx, dx)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "no static shape");
    int nsp = rx - 2;
    bool is_max = n->op == LT_OP_MaxPool || n->op == LT_OP_GlobalMaxPool;
    bool global = n->op == LT_OP_GlobalAveragePool || n->op == LT_OP_GlobalMaxPool;
    nn_geom g;
    char why[256];
    if (global) {
        memset(&g, 0, sizeof g);
        g.nsp = nsp;
        for (int d = 0; d < nsp; d++) g.in[d] = g.k[d] = dx[2 + d], g.s[d] = g.d[d] = 1, g.out[d] = 1;
    } else if (!nn_geom_init(n, nsp, dx + 2, NULL, true, &g, why, sizeof why)) {
        return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    }
    bool include_pad = lt_attr_int(n, "count_include_pad", 0) != 0;
    lt_dtype dt = lt_lower_cdtype(n->in[0]->type.dtype);
    lt_lvar *ov[LT_MAX_RANK], *rv[LT_MAX_RANK];
    lt_lnode *oi[LT_MAX_RANK], *xi[LT_MAX_RANK];
    int64_t odims[LT_MAX_RANK] = {dx[0], dx[1]};
    for (int d = 0; d < nsp; d++) odims[2 + d] = g.out[d];
    for (int d = 0; d < rx; d++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", d);
        ov[d] = lt_kernel_var(K, name, LT_INT64);
        if (!(oi[d] = V(lc, ov[d]))) return lt_lower_nomem(lc);
    }
    xi[0] = oi[0];
    xi[1] = oi[1];
    lt_lnode *inb = NULL, *inpad = NULL;
    for (int d = 0; d < nsp; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d);
        rv[d] = lt_kernel_var(K, name, LT_INT64);
        lt_lnode *pos = add(lc, add(lc, mulc(lc, oi[2 + d], g.s[d]), mulc(lc, V(lc, rv[d]), g.d[d])), I(lc, -g.pb[d]));
        int64_t in = g.in[d];
        bool may_out = g.pb[d] > 0 || (g.out[d] - 1) * g.s[d] + (g.k[d] - 1) * g.d[d] - g.pb[d] >= in;
        if (may_out) {
            lt_lnode *c = lt_l_binary(K, LT_LOP_AND, lt_l_binary(K, LT_LOP_GE, pos, I(lc, 0)),
                                      lt_l_binary(K, LT_LOP_LT, pos, I(lc, in)));
            inb = inb ? lt_l_binary(K, LT_LOP_AND, inb, c) : c;
            lt_lnode *cp = lt_l_binary(K, LT_LOP_LT, pos, I(lc, in + g.pe[d]));
            inpad = inpad ? lt_l_binary(K, LT_LOP_AND, inpad, cp) : cp;
            pos = lt_l_binary(K, LT_LOP_MIN, lt_l_binary(K, LT_LOP_MAX, pos, I(lc, 0)), I(lc, in - 1));
        }
        xi[2 + d] = pos;
    }
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, n->in[0], xi, &x));
    lt_lvar *acc = lt_kernel_var(K, "acc", dt), *cnt = NULL;
    lt_lnode *s[4], *upd;
    int ns = 0;
    if (is_max) {
        if (inb) x = lt_l_select(K, inb, x, lt_lower_lowest(lc, dt));
        upd = lt_l_assign(K, acc, lt_l_binary(K, LT_LOP_MAX, V(lc, acc), x));
        s[ns++] = lt_l_let(K, acc, lt_lower_lowest(lc, dt));
    } else {
        if (inb) x = lt_l_select(K, inb, x, lt_lower_imm(lc, dt, 0));
        upd = lt_l_assign(K, acc, lt_l_add(K, V(lc, acc), x));
        s[ns++] = lt_l_let(K, acc, lt_lower_imm(lc, dt, 0));
        lt_lnode *counted = include_pad ? inpad : inb;
        if (counted) {
            /* the divisor depends on the window's position: count it */
            cnt = lt_kernel_var(K, "cnt", dt);
            s[ns++] = lt_l_let(K, cnt, lt_lower_imm(lc, dt, 0));
            lt_lnode *two[2] = {upd, lt_l_assign(K, cnt, lt_l_add(K, V(lc, cnt), lt_l_select(K, counted, lt_lower_imm(lc, dt, 1), lt_lower_imm(lc, dt, 0))))};
            upd = lt_l_seq(K, 2, two);
        }
    }
    for (int d = nsp - 1; d >= 0; d--) upd = loop(lc, rv[d], I(lc, g.k[d]), upd);
    s[ns++] = upd;
    lt_lnode *v = V(lc, acc);
    if (!is_max) {
        int64_t full = 1;
        for (int d = 0; d < nsp; d++) full *= g.k[d];
        v = lt_l_binary(K, LT_LOP_DIV, v, cnt ? V(lc, cnt) : lt_lower_imm(lc, dt, (double)full));
    }
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, v, &s[ns]));
    ns++;
    lt_lnode *body = lt_l_seq(K, ns, s);
    for (int d = rx - 1; d >= 0; d--) body = loop(lc, ov[d], I(lc, odims[d]), body);
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
    {LT_OP_MatMul, accept_matmul, NULL, l_matmul, 0, 0, 0},
    {LT_OP_Gemm, accept_gemm, NULL, l_gemm, 0, 0, 0},
    {LT_OP_Conv, accept_conv, NULL, l_conv, 0, 0, 0},
    {LT_OP_MaxPool, accept_pool, NULL, l_pool, 0, 0, 0},
    {LT_OP_AveragePool, accept_pool, NULL, l_pool, 0, 0, 0},
    {LT_OP_GlobalAveragePool, accept_pool, NULL, l_pool, 0, 0, 0},
    {LT_OP_GlobalMaxPool, accept_pool, NULL, l_pool, 0, 0, 0},
    {0},
};
