/* lower_int8.c — the 8-bit integer products, MatMulInteger and ConvInteger (what expand_quant keeps,
 * and makes of QDQ MatMul / Gemm / Conv, on targets with int8 kernels), int32 results exact:
 *   - on the CPU, a call of the prelude's integer GEMM / convolution (codegen/prelude/gemm_i8.h):
 *       [for b..: (batch dims the call does not fold into its rows)]
 *         eval lt_gemm_i8(C, A, B|Bpacked, za, zb, ws, M, N, K, ...)
 *         eval lt_conv2d_i8(y, x, Wpacked, zx, zw, ws, N, C, H, W, OC, KH, KW, ...)
 *     a constant B / weight packed once at plan build (lt_lpack: its raw bytes in the kernel's
 *     panels), the packing scratch an int16 lt_lscratch; the call writes the group's output (through
 *     reshapes: the same bytes), or, when the group has other epilogue nodes (int32 ones: fusion keeps
 *     a dtype change out of an OUT_EW_FUSABLE chain), an int32 scratch that a Loop IR nest then
 *     carries through the epilogue;
 *   - otherwise (no microkernels, the Loop IR evaluator, GPU blocks, a non-constant convolution
 *     weight) plain Loop IR: KEPT loops "o0".. over the output, acc = 0, REDUCE loops over the dot
 *     product (k, or input channel and taps with padding as 0), acc += (a - za) * (b - zb) in int32
 *     (wrapping, as the reference's int32 result), stored through the epilogue.
 * Accepted: 8-bit operands (uint8 / int8), zero points of the operand's dtype: A's and x's one value;
 * B's one value or one per column (1-D [N]); w's one value or one per output channel (1-D [M]);
 * MatMulInteger operands of rank >= 2; ConvInteger of rank >= 3 (the call: 2-D with a constant
 * weight). Per-row zero points of A stay with the interpreter (a host step).
 */
#include "lower_conv.h"
#include "lower_impl.h"

#include <stdio.h>
#include <string.h>

#define K_ (lc->k)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K_, v); }
static lt_lnode *V(lt_lctx *lc, lt_lvar *v) { return lt_l_var(K_, v); }
static lt_lnode *add(lt_lctx *lc, lt_lnode *a, lt_lnode *b) { return lt_l_add(K_, a, b); }
static lt_lnode *mulc(lt_lctx *lc, lt_lnode *a, int64_t c) { return c == 1 ? a : lt_l_mul(K_, a, I(lc, c)); }
static lt_lnode *loop(lt_lctx *lc, lt_lvar *v, lt_loop_role role, int64_t ext, lt_lnode *body) {
    return lt_l_for(K_, v, role, I(lc, 0), I(lc, ext), LT_LOOP_SERIAL, body);
}

static bool is_q8(lt_dtype dt) { return dt == LT_UINT8 || dt == LT_INT8; }
static int64_t type_code(lt_dtype dt) { return dt == LT_INT8 ? LT_I8_S8 : LT_I8_U8; }

/* Zero point input i of n: absent, or of `dt` with one element, or (per > 0) 1-D with `per`. */
static bool zp_ok(const lt_node *n, int i, lt_dtype dt, int64_t per, const char *what, char *why, size_t size) {
    const lt_value *z = i < n->n_in ? n->in[i] : NULL;
    if (!z) return true;
    int r;
    int64_t d[LT_MAX_RANK];
    if (z->type.dtype != dt || !lt_lower_shape(z, &r, d)) {
        snprintf(why, size, "%s is not a static %s tensor", what, lt_dtype_name(dt));
        return false;
    }
    if (lt_lower_numel(z) == 1 || (per > 0 && r == 1 && d[0] == per)) return true;
    snprintf(why, size, "%s is neither one value nor %s", what, per > 0 ? "one per column / channel" : "allowed per row");
    return false;
}

/* LT_ZP_* of zero point input i (absent: none). */
static int64_t zp_mode(const lt_node *n, int i) {
    const lt_value *z = i < n->n_in ? n->in[i] : NULL;
    return !z ? LT_ZP_NONE : lt_lower_numel(z) == 1 ? LT_ZP_SCALAR : LT_ZP_VECTOR;
}

/* The kernel buffer zero point input i is read from (through inlined reshapes), or NULL if absent. */
static lt_status zp_buf(lt_lctx *lc, const lt_node *n, int i, lt_lbuf **out) {
    *out = NULL;
    if (i >= n->n_in || !n->in[i]) return LT_OK;
    const lt_value *v = lt_lower_mem_value(lc, n->in[i]);
    if (!v || !(*out = lc->vbuf[v->id])) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "zero point %d is not in memory", i);
    return LT_OK;
}

/* The value of zero point input i as int32 at index j of its one dim (per column / channel), or 0. */
static lt_status zp_value(lt_lctx *lc, const lt_node *n, int i, lt_lnode *j, lt_lnode **out) {
    const lt_value *z = i < n->n_in ? n->in[i] : NULL;
    if (!z) {
        *out = lt_lower_imm(lc, LT_INT32, 0);
        return LT_LNN(lc, *out);
    }
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_shape(z, &r, d)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "zero point shape");
    lt_lnode *idx[LT_MAX_RANK];
    bool one = lt_lower_numel(z) == 1;
    for (int k = 0; k < r; k++) idx[k] = one || !j ? I(lc, 0) : j;
    LT_TRY(lt_lower_value(lc, z, idx, out));
    *out = lt_lower_conv(lc, *out, LT_INT32);
    return LT_LNN(lc, *out);
}

/* (int32(v) - zp) */
static lt_lnode *centred(lt_lctx *lc, lt_lnode *v, lt_lnode *zp) {
    return lt_l_binary(K_, LT_LOP_SUB, lt_lower_conv(lc, v, LT_INT32), zp);
}

/* Where the call stores: the group's output buffer when the epilogue chain is only reshapes (the
 * same bytes), else (*scratch) a new int32 scratch of the product's size that epi_from_scratch then
 * carries through the chain. */
static lt_status out_target(lt_lctx *lc, const lt_node *n, lt_lbuf **C, bool *scratch) {
    const lt_node *chain[16];
    int c = lt_lower_epilogue_chain(lc, n->out[0], chain, 16);
    bool views = c >= 0;
    for (int i = 0; i < c && views; i++) views = lt_lower_is_view(chain[i]);
    *scratch = !views;
    if (views) *C = lt_lower_out_buf(lc, n->out[0], NULL);
    else *C = lt_lower_add_scratch(lc, "acc", LT_INT32, lt_lower_numel(n->out[0]));
    if (!*C) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "no output buffer");
    return LT_OK;
}

/* The EVAL of prelude entry fn on its na arguments (the first six addresses of buffers it reads,
 * out and ws written), with the whole operation's cost on the call; NULL on out-of-memory. */
static lt_lnode *eval_call(lt_lctx *lc, const char *fn, lt_lnode **a, int na, lt_lbuf *out, lt_lbuf *ws, double flops,
                           int64_t bytes) {
    for (int q = 0; q < na; q++)
        if (!a[q]) return NULL;
    for (int q = 0; q < 6; q++) a[q]->buf->read = true; /* accessed through their addresses */
    out->written = true;
    if (ws) ws->written = true;
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, fn, na, a);
    if (!call) return NULL;
    call->fval = flops;
    call->ival = bytes;
    return lt_l_eval(K_, call);
}

/* The kernel body: the call's nest, then (the product in an int32 scratch) the epilogue reading it back. */
static lt_status finish_call(lt_lctx *lc, const lt_node *n, lt_lbuf *out, bool scratch, lt_lnode *body, lt_lnode **res) {
    if (scratch) {
        lt_lnode *two[2] = {body, NULL};
        LT_TRY(lt_lower_epilogue_from(lc, n, out, "e", &two[1]));
        body = lt_l_seq(K_, 2, two);
    }
    *res = body;
    return LT_LNN(lc, body);
}

/* The int16 packing scratch of `per` elements per thread (NULL with *size 0 unless opt->scratch). */
static lt_lbuf *ws_scratch(lt_lctx *lc, int64_t per, int64_t *size) {
    *size = 0;
    if (!lc->opt->scratch) return NULL;
    *size = per * (lc->opt->threads > 0 ? lc->opt->threads : 8);
    return lt_lower_add_scratch(lc, "ws", LT_INT16, *size);
}

/* ---------------------------------------------------------------------------------------------
 * MatMulInteger
 * ------------------------------------------------------------------------------------------- */

bool lt_lower_accept_matmul_integer(const lt_node *n, char *why, size_t size) {
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (n->n_in < 2 || !n->in[0] || !n->in[1] || !is_q8(n->in[0]->type.dtype) || !is_q8(n->in[1]->type.dtype)) {
        snprintf(why, size, "operands are not uint8 / int8");
        return false;
    }
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) || ra < 2 || rb < 2) {
        snprintf(why, size, "operands are not static matrices");
        return false;
    }
    return zp_ok(n, 2, n->in[0]->type.dtype, 0, "a_zero_point", why, size) &&
           zp_ok(n, 3, n->in[1]->type.dtype, db[rb - 1], "b_zero_point", why, size);
}

/* Plain loops: for o..: acc = 0; for k: acc += (A - za) * (B - zb[j]); store. */
static lt_status mmi_loops(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int ra, rb, ro;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK], dout[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) ||
        !lt_lower_shape(n->out[0], &ro, dout))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "shapes are not static");
    int64_t K = da[ra - 1];
    lt_lvar *ov[LT_MAX_RANK], *k = lt_kernel_var(K_, "k", LT_INT64), *acc = lt_kernel_var(K_, "acc", LT_INT32);
    lt_lnode *oi[LT_MAX_RANK], *ai[LT_MAX_RANK], *bi[LT_MAX_RANK];
    for (int d = 0; d < ro; d++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", d);
        ov[d] = lt_kernel_var(K_, name, LT_INT64);
        if (!(oi[d] = V(lc, ov[d]))) return lt_lower_nomem(lc);
    }
    /* operand indices: batch dims right-aligned (0 where an operand broadcasts), then the matrix */
    for (int d = 0; d < ra - 2; d++) ai[d] = da[d] == 1 ? I(lc, 0) : oi[d + (ro - ra)];
    for (int d = 0; d < rb - 2; d++) bi[d] = db[d] == 1 ? I(lc, 0) : oi[d + (ro - rb)];
    ai[ra - 2] = oi[ro - 2], ai[ra - 1] = V(lc, k);
    bi[rb - 2] = V(lc, k), bi[rb - 1] = oi[ro - 1];
    lt_lnode *a, *b, *za, *zb;
    LT_TRY(lt_lower_value(lc, n->in[0], ai, &a));
    LT_TRY(lt_lower_value(lc, n->in[1], bi, &b));
    LT_TRY(zp_value(lc, n, 2, NULL, &za));
    LT_TRY(zp_value(lc, n, 3, oi[ro - 1], &zb));
    lt_lnode *prod = lt_l_binary(K_, LT_LOP_MUL, centred(lc, a, za), centred(lc, b, zb));
    lt_lnode *s[3];
    s[0] = lt_l_let(K_, acc, lt_lower_imm(lc, LT_INT32, 0));
    s[1] = loop(lc, k, LT_ROLE_REDUCE, K, lt_l_assign(K_, acc, lt_l_binary(K_, LT_LOP_ADD, V(lc, acc), prod)));
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, V(lc, acc), &s[2]));
    lt_lnode *body = lt_l_seq(K_, 3, s);
    for (int d = ro - 1; d >= 0; d--) body = loop(lc, ov[d], LT_ROLE_KEPT, dout[d], body);
    *res = body;
    return LT_LNN(lc, body);
}

/* Row-major strides of a shape's first `nb` dims (0 where the dim is 1: broadcast), right-aligned to
 * the output's nbo batch dims. */
static void batch_strides(int r, const int64_t *d, int nbo, int64_t *bs) {
    int64_t st = 1, str[LT_MAX_RANK];
    for (int q = r - 1; q >= 0; q--) str[q] = st, st *= d[q];
    int nb = r - 2;
    for (int q = 0; q < nbo; q++) {
        int vq = q - (nbo - nb);
        bs[q] = vq < 0 || d[vq] == 1 ? 0 : str[vq];
    }
}

static lt_status mmi_call(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int ra, rb, ro;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK], dout[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) ||
        !lt_lower_shape(n->out[0], &ro, dout))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "shapes are not static");
    int64_t M = da[ra - 2], K = da[ra - 1], N = db[rb - 1];
    const lt_value *Av = lt_lower_mem_value(lc, n->in[0]), *Bv = lt_lower_mem_value(lc, n->in[1]);
    lt_lbuf *A = Av ? lc->vbuf[Av->id] : NULL, *B = Bv ? lc->vbuf[Bv->id] : NULL, *za, *zb, *C;
    if (!A || !B) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "an operand is not in memory");
    LT_TRY(zp_buf(lc, n, 2, &za));
    LT_TRY(zp_buf(lc, n, 3, &zb));
    bool scratch;
    LT_TRY(out_target(lc, n, &C, &scratch));
    /* batch dims: folded into the rows when B is one matrix for all and A covers the output's */
    int nb = ro - 2;
    int64_t bsa[LT_MAX_RANK], bsb[LT_MAX_RANK], bsc[LT_MAX_RANK], batch = 1;
    batch_strides(ra, da, nb, bsa);
    batch_strides(rb, db, nb, bsb);
    batch_strides(ro, dout, nb, bsc);
    bool b_shared = true, a_full = ra == ro;
    for (int q = 0; q < nb; q++) {
        batch *= dout[q];
        if (bsb[q]) b_shared = false;
        if (a_full && da[q] != dout[q]) a_full = false;
    }
    bool fold = b_shared && a_full;
    int loops = fold ? 0 : nb;
    int64_t rows = fold ? M * batch : M;
    /* a constant B shared by every batch: packed once */
    lt_lbuf *Bp = B;
    int64_t packed = 0;
    if (!lc->opt->no_packing && b_shared && lt_lower_const(Bv)) {
        int64_t Kp = (K + 1) & ~(int64_t)1, size = (N + LT_GEMM_I8_NR - 1) / LT_GEMM_I8_NR * LT_GEMM_I8_NR * Kp;
        int64_t ints[3] = {K, N, N};
        lt_kernel *pk = lt_lower_pack_kernel_dt(lc, "lt_gemm_i8_pack_b", Bv, Bv->type.dtype, LT_INT8, size, 3, ints);
        if (!pk || !(Bp = lt_lower_add_pack(lc, Bv, "Bpacked", LT_INT8, size, pk))) return lt_lower_nomem(lc);
        packed = 1;
    }
    int64_t ws_size;
    lt_lbuf *ws = ws_scratch(lc, LT_GEMM_I8_WS_PER_THREAD, &ws_size);
    if (ws_size && !ws) return lt_lower_nomem(lc);
    lt_lvar *bv[LT_MAX_RANK];
    lt_lnode *ao = I(lc, 0), *bo = I(lc, 0), *co = I(lc, 0);
    for (int q = 0; q < loops; q++) {
        char name[16];
        snprintf(name, sizeof name, "b%d", q);
        bv[q] = lt_kernel_var(K_, name, LT_INT64);
        ao = add(lc, ao, mulc(lc, V(lc, bv[q]), bsa[q]));
        if (!packed) bo = add(lc, bo, mulc(lc, V(lc, bv[q]), bsb[q]));
        co = add(lc, co, mulc(lc, V(lc, bv[q]), bsc[q]));
    }
    lt_lnode *a[18];
    int na = 0;
    a[na++] = lt_l_addr(K_, C, co);
    a[na++] = lt_l_addr(K_, A, ao);
    a[na++] = lt_l_addr(K_, Bp, bo);
    a[na++] = lt_l_addr(K_, za ? za : C, I(lc, 0));
    a[na++] = lt_l_addr(K_, zb ? zb : C, I(lc, 0));
    a[na++] = lt_l_addr(K_, ws ? ws : C, I(lc, 0));
    int64_t ints[] = {rows, N, K, K, type_code(n->in[0]->type.dtype), zp_mode(n, 2), N, type_code(n->in[1]->type.dtype),
                      zp_mode(n, 3), packed, N, ws_size};
    for (size_t q = 0; q < sizeof ints / sizeof *ints; q++) a[na++] = I(lc, ints[q]);
    lt_lnode *body = eval_call(lc, "lt_gemm_i8", a, na, C, ws, 2.0 * (double)M * (double)N * (double)K * (double)batch,
                               batch * (M * K + K * N + 4 * M * N));
    if (!body) return lt_lower_nomem(lc);
    for (int q = loops - 1; q >= 0; q--) body = loop(lc, bv[q], q ? LT_ROLE_BATCH : LT_ROLE_BATCH_OUTER, dout[q], body);
    return finish_call(lc, n, C, scratch, body, res);
}

lt_status lt_lower_matmul_integer(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    if (lc->opt->gpu || lc->opt->no_microkernels) return mmi_loops(lc, n, res);
    return mmi_call(lc, n, res);
}

/* ---------------------------------------------------------------------------------------------
 * ConvInteger
 * ------------------------------------------------------------------------------------------- */

bool lt_lower_accept_conv_integer(const lt_node *n, char *why, size_t size) {
    if (n->n_in < 2 || !n->in[0] || !n->in[1] || !is_q8(n->in[0]->type.dtype) || !is_q8(n->in[1]->type.dtype)) {
        snprintf(why, size, "operands are not uint8 / int8");
        return false;
    }
    lt_conv_geom ci;
    if (!lt_lower_conv_geom(n, &ci, why, size)) return false;
    return zp_ok(n, 2, n->in[0]->type.dtype, 0, "x_zero_point", why, size) &&
           zp_ok(n, 3, n->in[1]->type.dtype, ci.M, "w_zero_point", why, size);
}

/* Direct loops: for n, oc, o..: acc = 0; for ic, k..: acc += (x - zx) * (w - zw[oc]) inside the image
 * (padding: 0); store. */
static lt_status ci_loops(lt_lctx *lc, const lt_node *n, const lt_conv_geom *ci, lt_lnode **res) {
    int nsp = ci->nsp;
    int64_t Cg = ci->C / ci->group, Mg = ci->M / ci->group;
    const lt_value *xv = lt_lower_mem_value(lc, n->in[0]), *wv = lt_lower_mem_value(lc, n->in[1]);
    lt_lbuf *X = xv ? lc->vbuf[xv->id] : NULL, *W = wv ? lc->vbuf[wv->id] : NULL;
    if (!X || !W) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    lt_lvar *ov[LT_MAX_RANK], *rv[LT_MAX_RANK], *acc = lt_kernel_var(K_, "acc", LT_INT32);
    lt_lnode *oi[LT_MAX_RANK];
    int64_t odims[LT_MAX_RANK] = {ci->N, ci->M};
    for (int d = 0; d < nsp; d++) odims[2 + d] = ci->g.out[d];
    for (int d = 0; d < nsp + 2; d++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", d);
        ov[d] = lt_kernel_var(K_, name, LT_INT64);
        if (!(oi[d] = V(lc, ov[d]))) return lt_lower_nomem(lc);
    }
    for (int d = 0; d < nsp + 1; d++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", d);
        rv[d] = lt_kernel_var(K_, name, LT_INT64);
    }
    lt_lnode *grp = ci->group > 1 ? lt_l_binary(K_, LT_LOP_DIV, oi[1], I(lc, Mg)) : I(lc, 0);
    lt_lnode *ic = add(lc, mulc(lc, grp, Cg), V(lc, rv[0]));
    lt_lnode *xoff = add(lc, mulc(lc, oi[0], ci->C), ic), *inb = NULL;
    lt_lnode *woff = add(lc, mulc(lc, oi[1], Cg), V(lc, rv[0]));
    for (int d = 0; d < nsp; d++) {
        lt_lnode *pos = add(lc, add(lc, mulc(lc, oi[2 + d], ci->g.s[d]), mulc(lc, V(lc, rv[1 + d]), ci->g.d[d])),
                            I(lc, -ci->g.pb[d]));
        int64_t in = ci->g.in[d];
        bool may_out = ci->g.pb[d] > 0 || (ci->g.out[d] - 1) * ci->g.s[d] + (ci->g.k[d] - 1) * ci->g.d[d] - ci->g.pb[d] >= in;
        if (may_out) {
            lt_lnode *c = lt_l_binary(K_, LT_LOP_AND, lt_l_binary(K_, LT_LOP_GE, pos, I(lc, 0)),
                                      lt_l_binary(K_, LT_LOP_LT, pos, I(lc, in)));
            inb = inb ? lt_l_binary(K_, LT_LOP_AND, inb, c) : c;
            pos = lt_l_binary(K_, LT_LOP_MIN, lt_l_binary(K_, LT_LOP_MAX, pos, I(lc, 0)), I(lc, in - 1));
        }
        xoff = add(lc, mulc(lc, xoff, in), pos);
        woff = add(lc, mulc(lc, woff, ci->g.k[d]), V(lc, rv[1 + d]));
    }
    lt_lnode *zx, *zw;
    LT_TRY(zp_value(lc, n, 2, NULL, &zx));
    LT_TRY(zp_value(lc, n, 3, oi[1], &zw));
    lt_lnode *xl = centred(lc, lt_l_load(K_, X, xoff), zx);
    if (inb) xl = lt_l_select(K_, inb, xl, lt_lower_imm(lc, LT_INT32, 0));
    lt_lnode *prod = lt_l_binary(K_, LT_LOP_MUL, xl, centred(lc, lt_l_load(K_, W, woff), zw));
    lt_lnode *body = lt_l_assign(K_, acc, lt_l_binary(K_, LT_LOP_ADD, V(lc, acc), prod));
    for (int d = nsp - 1; d >= 0; d--) body = loop(lc, rv[1 + d], LT_ROLE_REDUCE, ci->g.k[d], body);
    body = loop(lc, rv[0], LT_ROLE_REDUCE, Cg, body);
    lt_lnode *s[3];
    s[0] = lt_l_let(K_, acc, lt_lower_imm(lc, LT_INT32, 0));
    s[1] = body;
    LT_TRY(lt_lower_store_out(lc, n->out[0], oi, V(lc, acc), &s[2]));
    body = lt_l_seq(K_, 3, s);
    for (int d = nsp + 1; d >= 0; d--) body = loop(lc, ov[d], LT_ROLE_KEPT, odims[d], body);
    *res = body;
    return LT_LNN(lc, body);
}

static lt_status ci_call(lt_lctx *lc, const lt_node *n, const lt_conv_geom *ci, lt_lnode **res) {
    int64_t G = ci->group, OC = ci->M, C = ci->C, KH = ci->g.k[0], KW = ci->g.k[1];
    int64_t OH = ci->g.out[0], OW = ci->g.out[1], P = OH * OW, Kg = C / G * KH * KW, Kp = (Kg + 1) & ~(int64_t)1;
    const lt_value *xv = lt_lower_mem_value(lc, n->in[0]), *wv = lt_lower_mem_value(lc, n->in[1]);
    lt_lbuf *X = xv ? lc->vbuf[xv->id] : NULL, *zx, *zw, *Y;
    if (!X || !wv) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand buffers missing");
    LT_TRY(zp_buf(lc, n, 2, &zx));
    LT_TRY(zp_buf(lc, n, 3, &zw));
    bool scratch;
    LT_TRY(out_target(lc, n, &Y, &scratch));
    bool dw = G > 1 && G == C && OC % C == 0;
    int64_t W8 = LT_CONV_I8_PIXEL_ROWS(P) ? LT_GEMM_I8_NR : LT_GEMM_I8_MR;
    int64_t psize = dw ? OC * KH * KW : G * ((OC / G + W8 - 1) / W8) * W8 * Kp;
    int64_t pints[6] = {OC, C, KH, KW, G, P};
    lt_kernel *pk = lt_lower_pack_kernel_dt(lc, "lt_conv2d_i8_pack", wv, wv->type.dtype, LT_INT8, psize, 6, pints);
    lt_lbuf *Wp = pk ? lt_lower_add_pack(lc, wv, "Wpacked", LT_INT8, psize, pk) : NULL;
    if (!Wp) return lt_lower_nomem(lc);
    int64_t per = dw ? LT_CONV_I8_DW_WS_PER_THREAD(ci->g.in[0] + ci->g.pb[0] + ci->g.pe[0],
                                                   ci->g.in[1] + ci->g.pb[1] + ci->g.pe[1], OW)
                     : LT_GEMM_I8_WS_PER_THREAD;
    int64_t ws_size;
    lt_lbuf *ws = ws_scratch(lc, per, &ws_size);
    if (ws_size && !ws) return lt_lower_nomem(lc);
    lt_lnode *a[32], *zero = I(lc, 0);
    int na = 0;
    a[na++] = lt_l_addr(K_, Y, zero);
    a[na++] = lt_l_addr(K_, X, zero);
    a[na++] = lt_l_addr(K_, Wp, zero);
    a[na++] = lt_l_addr(K_, zx ? zx : Y, zero);
    a[na++] = lt_l_addr(K_, zw ? zw : Y, zero);
    a[na++] = lt_l_addr(K_, ws ? ws : Y, zero);
    int64_t ints[] = {ci->N, C, ci->g.in[0], ci->g.in[1], OC, KH, KW, ci->g.s[0], ci->g.s[1], ci->g.pb[0], ci->g.pb[1],
                      ci->g.pe[0], ci->g.pe[1], ci->g.d[0], ci->g.d[1], G, type_code(n->in[0]->type.dtype),
                      type_code(n->in[1]->type.dtype), zp_mode(n, 2), zp_mode(n, 3), ws_size};
    for (size_t q = 0; q < sizeof ints / sizeof *ints; q++) a[na++] = I(lc, ints[q]);
    lt_lnode *body = eval_call(lc, "lt_conv2d_i8", a, na, Y, ws, 2.0 * (double)ci->N * (double)OC * (double)P * (double)Kg,
                               lt_lower_numel(n->in[0]) + lt_lower_numel(n->in[1]) + 4 * ci->N * OC * P);
    if (!body) return lt_lower_nomem(lc);
    return finish_call(lc, n, Y, scratch, body, res);
}

lt_status lt_lower_conv_integer(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    lt_conv_geom ci;
    char why[256];
    if (!lt_lower_conv_geom(n, &ci, why, sizeof why)) return lt_lower_error(lc, n, LT_ERR_INVALID, "%s", why);
    const lt_value *wv = lt_lower_mem_value(lc, n->in[1]);
    if (ci.nsp == 2 && !lc->opt->gpu && !lc->opt->no_microkernels && !lc->opt->no_packing && wv && lt_lower_const(wv))
        return ci_call(lc, n, &ci, res);
    return ci_loops(lc, n, &ci, res);
}
