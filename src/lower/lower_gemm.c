/* lower_gemm.c — GEMM-shaped anchors: MatMul, Gemm (and the 1x1 Conv of lower_nn.c) through
 * lt_lower_gemm, which emits either
 *   - a call of the prelude's packed SGEMM (codegen/prelude/gemm.h), the default on CPU:
 *       for b.. (batch dims beyond the two the call takes):
 *         eval lt_gemm_f32(C, A|Apacked, B|Bpacked, bias, residual, ws, b1, b2, M, N, K, ...)
 *     with the group's epilogue fused into the call when it is [bias add] [residual add]
 *     [activation] [residual add] (what ResNet, MobileNet and transformer blocks have), constant
 *     operands pre-packed once at plan build (lt_lpack: an eval of lt_sgemm_pack_a/_b) and a
 *     scratch buffer for the packing of the other operand (lt_lscratch); any other epilogue runs
 *     as a Loop IR nest over C after the call;
 *   - with opt->gpu, lt_lower_gpu_gemm (lower_gpu_gemm.c): a call of a CUDA prelude tile entry
 *     (cuda_gemm.h, tensor cores or SIMT) bound to GPU blocks and threads, or, when no entry fits
 *     (an operand without a unit stride, an epilogue the entry cannot apply, Gemm's beta*C), the
 *     naive GPU nest of lt_lower_gemm_gpu_loops: one thread per output, float accumulation, the
 *     whole epilogue applied before the store (loops "gblk", "gthr", "gk");
 *   - or, with opt->no_microkernels, the same computation as plain Loop IR:
 *       for b..: for mb: { zero C block; for i: for j: for k: C += A*B; epilogue nest }
 *     the reference form the evaluator runs in tests (and the nest the `microkernel` schedule step
 *     could replace).
 * Loops and their roles (lt_loop_role: what the default schedule goes by): "b0" BATCH_OUTER and
 * "b1".. BATCH, "mb" BLOCK (row blocks), "zi" INIT / "zj" INIT_COLS (zeroing), "i"/"j" OUTPUT and
 * "k" REDUCE (the product), "eb0".., "ei" EPILOGUE / "ej" EPILOGUE_COLS (the epilogue).
 */
#include "lower_gpu.h"
#include "lower_impl.h"

#include "../codegen/prelude/abi.h" /* gemm.h's codes and constants: LT_ACT_*, LT_GEMM_* */

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
static lt_lnode *F(lt_lctx *lc, double v) { return lt_l_float(K_, LT_FLOAT, v); }

/* ---- the generic epilogue: value at (b.., i, j) from the product ---- */

typedef struct epi_flags {
    bool alpha, bias, cmat; /* terms the call did not apply */
} epi_flags;

/* Store the epilogue's result for element (b.., i, j): acc is the value of `from` there (the product,
 * or the value after the part of the epilogue chain the call applied; NULL: the product). */
static lt_status epi_store(lt_lctx *lc, const lt_gemm_desc *g, const epi_flags *f, const lt_value *from,
                           lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j, lt_lnode *acc, lt_lnode **stmt) {
    lt_lnode *v = acc;
    if (f->alpha && g->alpha != 1) v = lt_l_mul(K_, F(lc, g->alpha), v);
    if (f->bias && g->bias) {
        /* a vector bias: [N] per column (mode 1) or [M] per row (mode 2, e.g. a convolution's); or a
         * matrix-shaped one, right-aligned to the output with leading 1s: [.., 1, N] or [.., M, 1] */
        int br;
        int64_t bd[LT_MAX_RANK];
        if (!lt_lower_shape(g->bias, &br, bd) || br < 1)
            return lt_lower_error(lc, g->n, LT_ERR_INTERNAL, "bias '%s' has no static shape", g->bias->name);
        lt_lnode *b, *bidx2[LT_MAX_RANK];
        for (int d = 0; d < br; d++) bidx2[d] = I(lc, 0);
        if (br == 1) bidx2[0] = g->bias_mode == LT_BIAS_ROW ? i : j;
        else if (g->bias_mode == LT_BIAS_ROW) bidx2[br - 2] = i;
        else bidx2[br - 1] = j;
        LT_TRY(lt_lower_value(lc, g->bias, bidx2, &b));
        v = add(lc, v, b);
    }
    if (f->cmat && g->cmat && g->beta != 0) {
        lt_lnode *c, *ij[2] = {i, j};
        int64_t dims[2] = {g->M, g->N};
        LT_TRY(lt_lower_input(lc, g->n, 2, 2, dims, ij, &c));
        if (g->beta != 1) c = lt_l_mul(K_, F(lc, g->beta), c);
        v = add(lc, v, c);
    }
    if (!v) return lt_lower_nomem(lc);
    lt_lnode *idx[LT_MAX_RANK];
    LT_TRY(g->out_index(lc, g, bidx, i, j, idx));
    if (from && from != g->n->out[0]) { /* past a reshape adding or dropping leading 1s */
        int ra, rf;
        int64_t da[LT_MAX_RANK], df[LT_MAX_RANK];
        lt_lnode *fidx[LT_MAX_RANK];
        if (!lt_lower_shape(g->n->out[0], &ra, da) || !lt_lower_shape(from, &rf, df) ||
            !lt_lower_lead_index(lc, ra, da, idx, rf, df, fidx))
            return lt_lower_error(lc, g->n, LT_ERR_INTERNAL, "epilogue value '%s' is not the output reshaped", from->name);
        memcpy(idx, fidx, sizeof(lt_lnode *) * (size_t)rf);
    }
    return lt_lower_store_out(lc, from ? from : g->n->out[0], idx, v, stmt);
}

static bool epi_needed(lt_lctx *lc, const lt_gemm_desc *g, const epi_flags *f) {
    const lt_node *chain[1];
    return (f->alpha && g->alpha != 1) || (f->bias && g->bias) || (f->cmat && g->cmat && g->beta != 0) ||
           lt_lower_epilogue_chain(lc, g->n->out[0], chain, 1) != 0;
}

/* Batch loop variables named prefix0.. and the base offsets they give C, A, B (first `nb` dims). */
static lt_status batch_vars(lt_lctx *lc, const lt_gemm_desc *g, int nb, const char *prefix, lt_lvar **bv,
                            lt_lnode **bidx, lt_lnode **cb, lt_lnode **ab, lt_lnode **bb) {
    *cb = I(lc, 0), *ab = I(lc, 0), *bb = I(lc, 0);
    for (int d = 0; d < nb; d++) {
        char name[16];
        snprintf(name, sizeof name, "%s%d", prefix, d);
        bv[d] = lt_kernel_var(K_, name, LT_INT64);
        if (!(bidx[d] = V(lc, bv[d]))) return lt_lower_nomem(lc);
        *cb = add(lc, *cb, mulc(lc, bidx[d], g->bsc[d]));
        if (g->bsa[d]) *ab = add(lc, *ab, mulc(lc, bidx[d], g->bsa[d]));
        if (g->bsb[d]) *bb = add(lc, *bb, mulc(lc, bidx[d], g->bsb[d]));
    }
    return LT_OK;
}

/* Batch loops around body: roles BATCH_OUTER (dim 0) and BATCH, or all EPILOGUE. */
static lt_lnode *wrap_batch(lt_lctx *lc, const lt_gemm_desc *g, int nb, lt_lvar **bv, bool epilogue, lt_lnode *body) {
    for (int d = nb - 1; d >= 0; d--)
        body = loop(lc, bv[d], epilogue ? LT_ROLE_EPILOGUE : d ? LT_ROLE_BATCH : LT_ROLE_BATCH_OUTER, I(lc, g->bext[d]),
                    body);
    return body;
}

/* Epilogue nest over the whole output: for eb..: for ei: for ej: store. */
static lt_status epi_nest(lt_lctx *lc, const lt_gemm_desc *g, const epi_flags *f, const lt_value *from,
                          lt_lnode **res) {
    lt_lvar *bv[LT_MAX_RANK];
    lt_lnode *bidx[LT_MAX_RANK], *cb, *ab, *bb;
    LT_TRY(batch_vars(lc, g, g->nb, "eb", bv, bidx, &cb, &ab, &bb));
    lt_lvar *ei = lt_kernel_var(K_, "ei", LT_INT64), *ej = lt_kernel_var(K_, "ej", LT_INT64);
    lt_lnode *off = add(lc, add(lc, cb, mulc(lc, V(lc, ei), g->ci)), mulc(lc, V(lc, ej), g->cj)), *st;
    if (g->has_cview) { /* the same expression as the store's offset: one read-modify-write */
        lt_lnode *idx[LT_MAX_RANK];
        LT_TRY(g->out_index(lc, g, bidx, V(lc, ei), V(lc, ej), idx));
        off = lt_lower_strided(lc, &g->cview, idx);
    }
    LT_TRY(epi_store(lc, g, f, from, bidx, V(lc, ei), V(lc, ej), lt_l_load(K_, g->C, off), &st));
    *res = wrap_batch(lc, g, g->nb, bv, true,
                      loop(lc, ei, LT_ROLE_EPILOGUE, I(lc, g->M), loop(lc, ej, LT_ROLE_EPILOGUE_COLS, I(lc, g->N), st)));
    return LT_LNN(lc, *res);
}

/* ---- plain Loop IR ---- */

static int64_t row_block(int64_t M) {
    if (M < 128) return M;
    int64_t nblk = M / 64 < 8 ? M / 64 : 8, mb = (M + nblk - 1) / nblk;
    for (int64_t d = mb; d <= mb + mb / 4; d++) /* a divisor keeps every block full */
        if (M % d == 0) return d;
    return mb;
}

static lt_status gemm_loops(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res) {
    lt_lvar *bv[LT_MAX_RANK];
    lt_lnode *bidx[LT_MAX_RANK], *cb, *ab, *bb;
    LT_TRY(batch_vars(lc, g, g->nb, "b", bv, bidx, &cb, &ab, &bb));
    int64_t MB = row_block(g->M), nblk = (g->M + MB - 1) / MB;
    lt_lvar *mb = nblk > 1 ? lt_kernel_var(K_, "mb", LT_INT64) : NULL;
    lt_lnode *row0 = mb ? mulc(lc, V(lc, mb), MB) : I(lc, 0);
    lt_lnode *rows = I(lc, MB);
    if (mb && g->M % MB)
        rows = lt_l_binary(K_, LT_LOP_MIN, I(lc, MB), add(lc, I(lc, g->M), lt_l_unary(K_, LT_LOP_NEG, row0)));
    lt_lnode *cbase = add(lc, cb, mulc(lc, row0, g->ci)), *abase = add(lc, ab, mulc(lc, row0, g->ai));
    lt_lnode *s[3];
    int ns = 0;
    lt_lvar *zi = lt_kernel_var(K_, "zi", LT_INT64), *zj = lt_kernel_var(K_, "zj", LT_INT64);
    lt_lnode *zoff = add(lc, add(lc, cbase, mulc(lc, V(lc, zi), g->ci)), mulc(lc, V(lc, zj), g->cj));
    s[ns++] = loop(lc, zi, LT_ROLE_INIT, rows, loop(lc, zj, LT_ROLE_INIT_COLS, I(lc, g->N), lt_l_store(K_, g->C, zoff, F(lc, 0))));
    /* C = C + A * B: buffers in the order C, A, B (the microkernel step's convention) */
    lt_lvar *i = lt_kernel_var(K_, "i", LT_INT64), *j = lt_kernel_var(K_, "j", LT_INT64);
    lt_lvar *k = lt_kernel_var(K_, "k", LT_INT64);
    lt_lnode *coff = add(lc, add(lc, cbase, mulc(lc, V(lc, i), g->ci)), mulc(lc, V(lc, j), g->cj));
    lt_lnode *aoff = add(lc, add(lc, abase, mulc(lc, V(lc, i), g->ai)), mulc(lc, V(lc, k), g->ak));
    lt_lnode *boff = add(lc, add(lc, bb, mulc(lc, V(lc, k), g->bk)), mulc(lc, V(lc, j), g->bj));
    lt_lnode *upd = lt_l_store(K_, g->C, coff,
                               lt_l_add(K_, lt_l_load(K_, g->C, coff),
                                        lt_l_mul(K_, lt_l_load(K_, g->A, aoff), lt_l_load(K_, g->B, boff))));
    s[ns++] = loop(lc, i, LT_ROLE_OUTPUT, rows,
                   loop(lc, j, LT_ROLE_OUTPUT, I(lc, g->N), loop(lc, k, LT_ROLE_REDUCE, I(lc, g->K), upd)));
    epi_flags f = {true, true, true};
    if (epi_needed(lc, g, &f)) {
        lt_lvar *ei = lt_kernel_var(K_, "ei", LT_INT64), *ej = lt_kernel_var(K_, "ej", LT_INT64);
        lt_lnode *eoff = add(lc, add(lc, cbase, mulc(lc, V(lc, ei), g->ci)), mulc(lc, V(lc, ej), g->cj)), *st;
        LT_TRY(epi_store(lc, g, &f, NULL, bidx, add(lc, row0, V(lc, ei)), V(lc, ej), lt_l_load(K_, g->C, eoff), &st));
        s[ns++] = loop(lc, ei, LT_ROLE_EPILOGUE, rows, loop(lc, ej, LT_ROLE_EPILOGUE_COLS, I(lc, g->N), st));
    }
    lt_lnode *body = lt_l_seq(K_, ns, s);
    if (mb) body = loop(lc, mb, LT_ROLE_BLOCK, I(lc, nblk), body);
    *res = wrap_batch(lc, g, g->nb, bv, false, body);
    return LT_LNN(lc, *res);
}

/* ---- naive GPU nest: one thread per output ---- */

lt_status lt_lower_gemm_gpu_loops(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res) {
    enum { THREADS = 256 };
    int64_t dims[LT_MAX_RANK + 2], total = g->M * g->N;
    for (int d = 0; d < g->nb; d++) dims[d] = g->bext[d], total *= g->bext[d];
    dims[g->nb] = g->M, dims[g->nb + 1] = g->N;
    int64_t blocks = (total + THREADS - 1) / THREADS;
    if (blocks > 0x7fffffffLL) return lt_lower_error(lc, g->n, LT_ERR_UNSUPPORTED, "%lld outputs are too many for one grid", (long long)total);
    lt_lvar *blk = lt_kernel_var(K_, "gblk", LT_INT64), *thr = lt_kernel_var(K_, "gthr", LT_INT64);
    lt_lvar *k = lt_kernel_var(K_, "gk", LT_INT64), *acc = lt_kernel_var(K_, "acc", LT_FLOAT);
    if (!blk || !thr || !k || !acc) return lt_lower_nomem(lc);
    lt_lnode *flat = add(lc, mulc(lc, V(lc, blk), THREADS), V(lc, thr)), *idx[LT_MAX_RANK + 2];
    LT_TRY(lt_lower_unflat(lc, flat, g->nb + 2, dims, idx));
    lt_lnode *ab = I(lc, 0), *bb = I(lc, 0);
    for (int d = 0; d < g->nb; d++) {
        if (g->bsa[d]) ab = add(lc, ab, mulc(lc, idx[d], g->bsa[d]));
        if (g->bsb[d]) bb = add(lc, bb, mulc(lc, idx[d], g->bsb[d]));
    }
    lt_lnode *i = idx[g->nb], *j = idx[g->nb + 1];
    lt_lnode *aoff = add(lc, add(lc, ab, mulc(lc, i, g->ai)), mulc(lc, V(lc, k), g->ak));
    lt_lnode *boff = add(lc, add(lc, bb, mulc(lc, V(lc, k), g->bk)), mulc(lc, j, g->bj));
    lt_lnode *prod = lt_l_mul(K_, lt_lower_conv(lc, lt_l_load(K_, g->A, aoff), LT_FLOAT),
                              lt_lower_conv(lc, lt_l_load(K_, g->B, boff), LT_FLOAT));
    lt_lnode *s[3], *st;
    s[0] = lt_l_let(K_, acc, F(lc, 0));
    s[1] = loop(lc, k, LT_ROLE_REDUCE, I(lc, g->K), lt_l_assign(K_, acc, lt_l_add(K_, V(lc, acc), prod)));
    epi_flags f = {true, true, true};
    LT_TRY(epi_store(lc, g, &f, NULL, idx, i, j, V(lc, acc), &st));
    s[2] = st;
    lt_lnode *body = lt_l_if(K_, lt_l_binary(K_, LT_LOP_LT, flat, I(lc, total)), lt_l_seq(K_, 3, s), NULL);
    body = lt_l_for(K_, blk, LT_ROLE_OUTPUT, I(lc, 0), I(lc, blocks), LT_LOOP_GPU_BLOCK,
                    lt_l_for(K_, thr, LT_ROLE_OUTPUT, I(lc, 0), I(lc, THREADS), LT_LOOP_GPU_THREAD, body));
    *res = body;
    return LT_LNN(lc, body);
}

/* ---- epilogue matching for the call ---- */

/* v (aligned right to the output) equals the output over dims [a, b) and is 1 elsewhere */
static bool spans(const lt_gemm_desc *g, const lt_value *v, int a, int b) {
    if (a >= b) return false;
    int r, k = 0;
    int64_t d0[LT_MAX_RANK];
    if (!lt_lower_shape(v, &r, d0)) return false;
    /* leading 1s (after a reshape that added them to the output): the same broadcasting */
    while (r - k > g->out_rank && d0[k] == 1) k++;
    const int64_t *d = d0 + k;
    r -= k;
    if (r > g->out_rank) return false;
    for (int q = 0; q < g->out_rank; q++) {
        int64_t dv = q < g->out_rank - r ? 1 : d[q - (g->out_rank - r)];
        if (dv != (q >= a && q < b ? g->out_dims[q] : 1)) return false;
    }
    return true;
}

static bool const_scalar(const lt_node *n, int i, double *out) {
    if (i >= n->n_in || !n->in[i]) return false;
    const lt_tensor *t = lt_lower_const(n->in[i]);
    if (!t || t->numel != 1 || !lt_dtype_is_float(t->dtype)) return false;
    *out = lt_load_f64(t->data, t->dtype, 0);
    return true;
}

static bool match_act(const lt_node *e, lt_call_epi *ce) {
    switch (e->op) {
    case LT_OP_Relu: ce->act = LT_ACT_RELU; return true;
    case LT_OP_Sigmoid: ce->act = LT_ACT_SIGMOID; return true;
    case LT_OP_Tanh: ce->act = LT_ACT_TANH; return true;
    case LT_OP_LeakyRelu: ce->act = LT_ACT_LEAKY_RELU, ce->act_a = lt_attr_float(e, "alpha", 0.01f); return true;
    case LT_OP_HardSigmoid:
        ce->act = LT_ACT_HARD_SIGMOID, ce->act_a = lt_attr_float(e, "alpha", 0.2f), ce->act_b = lt_attr_float(e, "beta", 0.5f);
        return true;
    case LT_OP_Gelu:
        ce->act = strcmp(lt_attr_string(e, "approximate", "none"), "tanh") == 0 ? LT_ACT_GELU_TANH : LT_ACT_GELU;
        return true;
    case LT_OP_HardSwish: ce->act = LT_ACT_HARD_SWISH; return true;
    case LT_OP_Swish: /* x * sigmoid(alpha x): SiLU when alpha is 1 */
        if (lt_attr_float(e, "alpha", 1.0f) != 1.0f) return false;
        ce->act = LT_ACT_SILU;
        return true;
    case LT_OP_Clip: {
        double lo = -3.4028234663852886e38, hi = 3.4028234663852886e38;
        if (e->opset < 11) {
            lo = lt_attr_float(e, "min", (float)lo), hi = lt_attr_float(e, "max", (float)hi);
        } else {
            if (e->n_in > 1 && e->in[1] && !const_scalar(e, 1, &lo)) return false;
            if (e->n_in > 2 && e->in[2] && !const_scalar(e, 2, &hi)) return false;
        }
        ce->act = LT_ACT_CLIP, ce->act_a = lo, ce->act_b = hi;
        return true;
    }
    default: return false;
    }
}

/* The other operand of binary node e (one of whose inputs is cur) as a float scalar constant. */
static bool scalar_operand(const lt_node *e, const lt_value *cur, double *out) {
    if (e->in[0] == e->in[1]) return false;
    return const_scalar(e, e->in[0] == cur ? 1 : 0, out);
}

/* Can the whole epilogue chain run inside the call? (node bias already placed in ce->bias) */
static bool match_chain(lt_lctx *lc, const lt_gemm_desc *g, lt_call_epi *ce) {
    const lt_node *chain[8];
    int c = lt_lower_epilogue_chain(lc, g->n->out[0], chain, 8);
    if (c < 0) return false;
    const lt_value *cur = g->n->out[0];
    for (int q = 0; q < c; q++) {
        const lt_node *e = chain[q];
        if (lt_lower_lead_reshape(e) && e->in[0] == cur) { /* leading 1s: the same bytes and broadcasting */
            for (int o = 0; o < e->n_out; o++)
                if (e->out[o]) cur = e->out[o];
            continue;
        }
        if (lt_lower_is_layout(e)) continue; /* reshapes (a transpose) end the chain: the output's layout */
        double sc;
        if ((e->op == LT_OP_Mul || e->op == LT_OP_Div) && e->n_in == 2 && !ce->bias && !ce->res && !ce->act &&
            !g->no_alpha && (e->in[0] == cur || e->op == LT_OP_Mul) && scalar_operand(e, cur, &sc) && sc != 0) {
            ce->scale = e->op == LT_OP_Mul ? ce->scale * sc : ce->scale / sc; /* before any bias: alpha */
        } else if (e->op == LT_OP_Add && e->n_in == 2) {
            const lt_value *w = e->in[0] == cur ? e->in[1] : e->in[0];
            if (w == cur || (e->in[0] != cur && e->in[1] != cur) || lt_lower_is_imm(w) || !lc->vbuf[w->id] ||
                w->type.dtype != g->C->dtype) /* read as C's type (float32 on the CPU) */
                return false;
            if (!ce->act && !ce->bias && !ce->res && spans(g, w, g->col_dim0, g->out_rank) &&
                !spans(g, w, 0, g->out_rank))
                ce->bias = w, ce->bias_mode = LT_BIAS_COL;
            else if (!ce->act && !ce->bias && !ce->res && g->row_dim1 > g->row_dim0 &&
                     spans(g, w, g->row_dim0, g->row_dim1) && !spans(g, w, 0, g->out_rank))
                ce->bias = w, ce->bias_mode = LT_BIAS_ROW;
            else if (!ce->res && !g->c_strided && spans(g, w, 0, g->out_rank)) /* read with C's strides */
                ce->res = w, ce->res_mode = ce->act ? LT_RES_AFTER_ACT : LT_RES_BEFORE_ACT;
            else
                return false;
        } else if (!ce->act && ce->res_mode != LT_RES_AFTER_ACT && e->n_in >= 1 && e->in[0] == cur && match_act(e, ce)) {
            /* one activation, after the bias and a residual added before it */
        } else {
            return false;
        }
        for (int o = 0; o < e->n_out; o++)
            if (e->out[o]) cur = e->out[o];
        ce->from = cur; /* the call applies the chain up to here */
    }
    return true;
}

bool lt_lower_call_epilogue(lt_lctx *lc, const lt_gemm_desc *g, lt_call_epi *ce) {
    memset(ce, 0, sizeof *ce);
    ce->scale = 1;
    ce->from = g->n->out[0];
    if (g->bias) ce->bias = g->bias, ce->bias_mode = g->bias_mode;
    /* beta*C comes before the chain: then the call applies none of it */
    bool fused = !g->cmat && match_chain(lc, g, ce);
    if (!fused && g->cmat) {
        memset(ce, 0, sizeof *ce);
        ce->scale = 1;
        ce->from = g->n->out[0];
        if (g->bias) ce->bias = g->bias, ce->bias_mode = g->bias_mode;
    }
    /* otherwise the call applies the chain's longest prefix it can (scale, bias, residual,
     * activation) and a Loop IR nest the rest (a mask, an op the call lacks) */
    epi_flags rest = {false, false, true};
    return !fused || (g->cmat && g->beta != 0 && epi_needed(lc, g, &rest));
}

lt_status lt_lower_call_epilogue_nest(lt_lctx *lc, const lt_gemm_desc *g, const lt_call_epi *ce,
                                      lt_lnode **res) {
    epi_flags rest = {false, false, true};
    return epi_nest(lc, g, &rest, ce->from, res);
}

/* ---- the call ---- */

lt_kernel *lt_lower_pack_kernel(lt_lctx *lc, const char *fn, const lt_value *src, int64_t size, int n_ints,
                                const int64_t *ints) {
    return lt_lower_pack_kernel_dt(lc, fn, src, LT_FLOAT, LT_FLOAT, size, n_ints, ints);
}

lt_kernel *lt_lower_pack_kernel_dt(lt_lctx *lc, const char *fn, const lt_value *src, lt_dtype src_dt, lt_dtype dst_dt,
                                   int64_t size, int n_ints, const int64_t *ints) {
    char name[48];
    snprintf(name, sizeof name, "%s_pack%d", lc->k->name, lc->n_packs);
    lt_kernel *pk = lt_kernel_new(lc->arena, name);
    if (!pk || n_ints > 14) return NULL;
    lt_lbuf *dst = lt_kernel_arg(pk, "packed", dst_dt, size);
    lt_lbuf *sb = lt_kernel_arg(pk, "src", src_dt, lt_lower_numel(src));
    if (!dst || !sb) return NULL;
    dst->written = true, sb->read = true; /* accessed through their addresses */
    lt_lnode *args[16] = {lt_l_addr(pk, dst, lt_l_int(pk, 0)), lt_l_addr(pk, sb, lt_l_int(pk, 0))};
    for (int q = 0; q < n_ints; q++) args[2 + q] = lt_l_int(pk, ints[q]);
    pk->body = lt_l_eval(pk, lt_l_call(pk, LT_UNDEFINED, fn, 2 + n_ints, args));
    if (!pk->body) return NULL;
    lt_kernel_cost(pk);
    return pk;
}

int64_t lt_lower_packed_rows(int64_t rows, bool is_a) {
    if (!is_a) return (rows + LT_GEMM_NR_MAX - 1) / LT_GEMM_NR_MAX * LT_GEMM_NR_MAX;
    const int64_t m6 = LT_GEMM_MR_AVX2, m8 = LT_GEMM_MR_AVX512; /* the portable MR is the AVX2 one */
    int64_t r6 = (rows + m6 - 1) / m6 * m6, r8 = (rows + m8 - 1) / m8 * m8;
    return r6 > r8 ? r6 : r8;
}

lt_lbuf *lt_lower_gemm_scratch(lt_lctx *lc, int64_t *floats) {
    *floats = 0;
    if (!lc->opt->scratch) return NULL;
    *floats = LT_GEMM_WS_PER_THREAD * (lc->opt->threads > 0 ? lc->opt->threads : 8);
    return lt_lower_add_scratch(lc, "ws", LT_FLOAT, *floats);
}

static bool constant_2d(const lt_gemm_desc *g, const lt_value *v, const int64_t *bstride) {
    if (!v || !lt_lower_const(v)) return false;
    for (int d = 0; d < g->nb; d++)
        if (bstride[d]) return false;
    return true;
}

static lt_status gemm_call(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res) {
    const lt_lower_options *opt = lc->opt;
    /* operand modes: N (row stride ld, unit column) or T (unit row stride) */
    int a_mode, b_mode;
    int64_t lda, ldb;
    if (g->ak == 1) a_mode = LT_GEMM_N, lda = g->ai;
    else if (g->ai == 1) a_mode = LT_GEMM_T, lda = g->ak;
    else return gemm_loops(lc, g, res);
    if (g->bj == 1) b_mode = LT_GEMM_N, ldb = g->bk;
    else if (g->bk == 1) b_mode = LT_GEMM_T, ldb = g->bj;
    else return gemm_loops(lc, g, res);
    if (g->cj != 1) return gemm_loops(lc, g, res);
    lt_call_epi ce;
    bool need_epi = lt_lower_call_epilogue(lc, g, &ce);
    /* operands: constants packed once */
    lt_lbuf *A = g->A, *B = g->B;
    int64_t pa = a_mode, pb = b_mode;
    if (!opt->no_packing && constant_2d(g, g->Av, g->bsa)) {
        int64_t size = lt_lower_packed_rows(g->M, true) * (g->K > 0 ? g->K : 1);
        int64_t ints[4] = {lda, a_mode, g->M, g->K};
        lt_kernel *pk = lt_lower_pack_kernel(lc, "lt_sgemm_pack_a", g->Av, size, 4, ints);
        if (!pk || !(A = lt_lower_add_pack(lc, g->Av, "Apacked", LT_FLOAT, size, pk))) return lt_lower_nomem(lc);
        pa = LT_GEMM_PACKED;
    }
    if (!opt->no_packing && constant_2d(g, g->Bv, g->bsb)) {
        int64_t size = lt_lower_packed_rows(g->N, false) * (g->K > 0 ? g->K : 1);
        int64_t ints[4] = {ldb, b_mode, g->K, g->N};
        lt_kernel *pk = lt_lower_pack_kernel(lc, "lt_sgemm_pack_b", g->Bv, size, 4, ints);
        if (!pk || !(B = lt_lower_add_pack(lc, g->Bv, "Bpacked", LT_FLOAT, size, pk))) return lt_lower_nomem(lc);
        pb = LT_GEMM_PACKED;
    }
    int64_t ws_floats;
    lt_lbuf *ws = lt_lower_gemm_scratch(lc, &ws_floats);
    if (ws_floats && !ws) return lt_lower_nomem(lc);
    /* the last two batch dims go to the call, outer ones become loops */
    int outer = g->nb > 2 ? g->nb - 2 : 0;
    lt_lvar *bv[LT_MAX_RANK];
    lt_lnode *bidx[LT_MAX_RANK], *cb, *ab, *bb;
    LT_TRY(batch_vars(lc, g, outer, "b", bv, bidx, &cb, &ab, &bb));
    int64_t b1 = 1, b2 = 1, sa1 = 0, sa2 = 0, sb1 = 0, sb2 = 0, sc1 = 0, sc2 = 0;
    if (g->nb - outer == 2) {
        b1 = g->bext[outer], sa1 = g->bsa[outer], sb1 = g->bsb[outer], sc1 = g->bsc[outer];
        b2 = g->bext[outer + 1], sa2 = g->bsa[outer + 1], sb2 = g->bsb[outer + 1], sc2 = g->bsc[outer + 1];
    } else if (g->nb - outer == 1) {
        b1 = g->bext[outer], sa1 = g->bsa[outer], sb1 = g->bsb[outer], sc1 = g->bsc[outer];
    }
    if (pa == LT_GEMM_PACKED) sa1 = sa2 = 0, ab = I(lc, 0);
    if (pb == LT_GEMM_PACKED) sb1 = sb2 = 0, bb = I(lc, 0);
    lt_lnode *cptr = lt_l_addr(K_, g->C, cb);
    lt_lnode *a[33];
    int na = 0;
    a[na++] = cptr;
    a[na++] = lt_l_addr(K_, A, ab);
    a[na++] = lt_l_addr(K_, B, bb);
    a[na++] = ce.bias ? lt_l_addr(K_, lc->vbuf[ce.bias->id], I(lc, 0)) : lt_l_addr(K_, g->C, I(lc, 0));
    a[na++] = ce.res ? lt_l_addr(K_, lc->vbuf[ce.res->id], cb) : lt_l_addr(K_, g->C, I(lc, 0));
    a[na++] = ws ? lt_l_addr(K_, ws, I(lc, 0)) : lt_l_addr(K_, g->C, I(lc, 0));
    int64_t ints1[] = {b1, b2, g->M, g->N, g->K, lda, pa, sa1, sa2, ldb, pb, sb1, sb2, g->ci, sc1, sc2,
                       ce.bias ? ce.bias_mode : LT_BIAS_NONE, ce.res ? ce.res_mode : LT_RES_NONE, g->ci, sc1, sc2, ce.act};
    for (size_t q = 0; q < sizeof ints1 / sizeof *ints1; q++) a[na++] = I(lc, ints1[q]);
    a[na++] = F(lc, ce.act_a);
    a[na++] = F(lc, ce.act_b);
    a[na++] = F(lc, g->alpha * ce.scale);
    a[na++] = F(lc, 0); /* beta: C is write-only */
    a[na++] = I(lc, ws_floats);
    for (int q = 0; q < na; q++)
        if (!a[q]) return lt_lower_nomem(lc);
    lt_lnode *call = lt_l_call(K_, LT_UNDEFINED, "lt_gemm_f32", na, a);
    if (!call) return lt_lower_nomem(lc);
    /* buffers accessed through their addresses: C and ws are written, the rest read */
    for (int q = 0; q < 6; q++) a[q]->buf->read = true;
    g->C->written = true;
    if (ws) ws->written = true;
    int64_t batch = b1 * b2;
    call->fval = 2.0 * (double)g->M * (double)g->N * (double)g->K * (double)batch;
    call->ival = (int64_t)(4 * batch * (g->M * g->K + g->K * g->N + g->M * g->N));
    lt_lnode *body = wrap_batch(lc, g, outer, bv, false, lt_l_eval(K_, call));
    if (need_epi) {
        lt_lnode *two[2] = {body, NULL};
        LT_TRY(lt_lower_call_epilogue_nest(lc, g, &ce, &two[1]));
        body = lt_l_seq(K_, 2, two);
    }
    *res = body;
    return LT_LNN(lc, body);
}

lt_status lt_lower_gemm(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res) {
    if (!g->C || !g->A || !g->B) return lt_lower_error(lc, g->n, LT_ERR_INTERNAL, "operand buffers missing");
    if (lc->opt->gpu) return lt_lower_gpu_gemm(lc, g, res);
    if (lc->opt->no_microkernels || g->C->dtype != LT_FLOAT) return gemm_loops(lc, g, res);
    return gemm_call(lc, g, res);
}

/* ---- MatMul ---- */

/* Operands 0 and 1 as stored values (through reshapes inlined in the group: the same bytes). */
static lt_status operands(lt_lctx *lc, const lt_node *n, lt_gemm_desc *g) {
    g->Av = lt_lower_mem_value(lc, n->in[0]);
    g->Bv = lt_lower_mem_value(lc, n->in[1]);
    if (!g->Av || !g->Bv) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "an operand is not in memory");
    g->A = lc->vbuf[g->Av->id];
    g->B = lc->vbuf[g->Bv->id];
    return LT_OK;
}

typedef struct mm_info {
    bool a_vec, b_vec; /* 1-D operands */
    int folded;        /* batch dims folded into M (fold_batch_into_rows): rows are out_dims[nb..nb+folded] and M */
    int64_t row_dims[LT_MAX_RANK]; /* their extents, the matrix's own M last */
} mm_info;

static lt_status mm_index(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j,
                          lt_lnode **idx) {
    const mm_info *mi = g->user;
    int r = 0;
    for (int d = 0; d < g->nb; d++) idx[r++] = bidx[d];
    if (mi->folded) { /* row i spans the folded batch dims and M */
        LT_TRY(lt_lower_unflat(lc, i, mi->folded + 1, mi->row_dims, idx + r));
        r += mi->folded + 1;
    } else if (!mi->a_vec) {
        idx[r++] = i;
    }
    if (!mi->b_vec) idx[r++] = j;
    return LT_OK;
}

/* Innermost batch dims that B broadcasts over and that lie in A and C as further rows (A [197,1,768]
 * times B [768,2304], what exporters make of a sequence-first Linear): folded into M, so the call is
 * one GEMM that reads B once, instead of one GEMM per batch index each reading all of B. */
static void fold_batch_into_rows(lt_gemm_desc *g, mm_info *mi) {
    if (mi->a_vec) return;
    int64_t rows[LT_MAX_RANK];
    int n = 0;
    while (g->nb > 0) {
        int q = g->nb - 1;
        /* one row (M == 1): its stride is free, so the batch dim's strides become the rows' (an
         * exporter's A [197, 1, 768] is a view whose size-1 dim may carry any stride) */
        bool one_row = g->M == 1 && g->bext[q] != 1 && g->bsa[q] != 0 && g->bsc[q] != 0;
        int64_t ai = one_row ? g->bsa[q] : g->ai, ci = one_row ? g->bsc[q] : g->ci;
        if (g->bext[q] != 1 && (g->bsb[q] != 0 || g->bsa[q] != ai * g->M || g->bsc[q] != ci * g->M)) break;
        g->ai = ai, g->ci = ci;
        rows[n++] = g->bext[q];
        g->M *= g->bext[q];
        g->nb--;
    }
    if (!n) return;
    mi->folded = n;
    for (int k = 0; k < n; k++) mi->row_dims[k] = rows[n - 1 - k];
    mi->row_dims[n] = g->M;
    for (int k = 0; k < n; k++) mi->row_dims[n] /= rows[k];
    g->row_dim0 -= n;
}

/* Batch strides of an operand with view v (its last `mat` dims are the matrix) against the
 * output's nb batch dims, right-aligned; 0 where it broadcasts. */
static void batch_strides(const lt_sview *v, int mat, int nb, int64_t *bs) {
    int vb = v->rank - mat;
    for (int q = 0; q < nb; q++) {
        int vq = q - (nb - vb);
        bs[q] = vq < 0 || v->dims[vq] == 1 ? 0 : v->st[vq];
    }
}

/* Is v computed in the group (a layout node's output the MatMul reads through a view)? */
static bool group_inlined(void *user, const lt_value *v) {
    lt_lctx *lc = user;
    return lc->in_group[v->id] && !lc->vbuf[v->id];
}

/* Operand i of MatMul n as a strided view of the stored value it is computed from (through the
 * reshapes and transposes fusion put in the group). */
static lt_status operand_view(lt_lctx *lc, const lt_node *n, int i, const lt_value **base, lt_lbuf **buf,
                              lt_sview *view) {
    if (!lt_lower_operand_view(n->in[i], group_inlined, lc, base, view) || !(*buf = lc->vbuf[(*base)->id]))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operand %d is not a strided view of a stored value", i);
    return LT_OK;
}

static lt_status l_matmul(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    mm_info mi = {0};
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    lt_gemm_desc g = {.n = n, .alpha = 1, .out_index = mm_index, .user = &mi};
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) ||
        !lt_lower_shape(n->out[0], &g.out_rank, g.out_dims))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "shapes are not static");
    mi.a_vec = ra == 1;
    mi.b_vec = rb == 1;
    g.M = mi.a_vec ? 1 : da[ra - 2];
    g.K = da[ra - 1];
    g.N = mi.b_vec ? 1 : db[rb - 1];
    g.nb = g.out_rank - (mi.a_vec ? 0 : 1) - (mi.b_vec ? 0 : 1);
    /* operands and output as strided views: transposes into and out of the MatMul cost nothing */
    lt_sview va, vb, vc;
    LT_TRY(operand_view(lc, n, 0, &g.Av, &g.A, &va));
    LT_TRY(operand_view(lc, n, 1, &g.Bv, &g.B, &vb));
    const lt_value *fin = NULL;
    g.C = lt_lower_out_buf(lc, n->out[0], &fin);
    lt_sview vf;
    if (!g.C || !fin || !lt_lower_output_view(n->out[0], fin, &vf, NULL) ||
        !lt_lower_view_relead(&vf, g.out_rank, g.out_dims, &vc))
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "the output is not a strided view of its buffer");
    g.c_strided = !lt_lower_view_is_contig(&vc);
    g.has_cview = true;
    g.cview = vc;
    for (int d = 0; d < g.nb; d++) g.bext[d] = g.out_dims[d], g.bsc[d] = vc.st[d];
    if (mi.a_vec) memset(g.bsa, 0, sizeof g.bsa);
    else batch_strides(&va, 2, g.nb, g.bsa);
    if (mi.b_vec) memset(g.bsb, 0, sizeof g.bsb);
    else batch_strides(&vb, 2, g.nb, g.bsb);
    /* matrix strides; a dim of extent 1 takes whatever stride makes the other one a unit stride */
    g.ak = va.st[ra - 1];
    g.ai = mi.a_vec ? g.K : va.st[ra - 2];
    g.bj = mi.b_vec ? 1 : vb.st[rb - 1];
    g.bk = mi.b_vec ? vb.st[0] : vb.st[rb - 2];
    g.cj = mi.b_vec ? 1 : vc.st[g.out_rank - 1];
    g.ci = mi.a_vec ? g.N * g.cj : vc.st[g.out_rank - (mi.b_vec ? 1 : 2)];
    if (g.M == 1 && g.ak != 1) g.ai = 1;
    if (g.K == 1 && g.ai != 1) g.ak = 1;
    if (g.N == 1 && g.bk != 1) g.bj = 1;
    if (g.K == 1 && g.bj != 1) g.bk = 1;
    if (g.N == 1) g.cj = 1;
    g.row_dim0 = mi.a_vec ? 0 : g.out_rank - (mi.b_vec ? 1 : 2);
    g.row_dim1 = mi.a_vec ? 0 : g.row_dim0 + 1;
    g.col_dim0 = mi.b_vec ? g.out_rank : g.out_rank - 1;
    fold_batch_into_rows(&g, &mi);
    return lt_lower_gemm(lc, &g, res);
}

/* float32 operands (a one-element constant operand stays in memory: fusion keeps the operands of
 * GEMM and convolution groups as buffers, see fuse.c) */
bool lt_lower_accept_f32_operands(const lt_node *n, char *why, size_t size) {
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] && n->in[i]->type.dtype != LT_FLOAT) {
            snprintf(why, size, "input %d is %s (float only)", i, lt_dtype_name(n->in[i]->type.dtype));
            return false;
        }
    }
    return true;
}

static bool accept_matmul(const lt_node *n, char *why, size_t size) {
    if (!lt_lower_accept_f32_operands(n, why, size)) return false;
    if (n->in[0]->type.rank < 1 || n->in[1]->type.rank < 1) {
        snprintf(why, size, "scalar operand");
        return false;
    }
    return true;
}

/* ---- Gemm ---- */

static lt_status gemm_index(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode *const *bidx, lt_lnode *i, lt_lnode *j,
                            lt_lnode **idx) {
    (void)lc, (void)g, (void)bidx;
    idx[0] = i, idx[1] = j;
    return LT_OK;
}

static lt_status l_gemm(lt_lctx *lc, const lt_node *n, lt_lnode **res) {
    int ra, rb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &ra, da) || !lt_lower_shape(n->in[1], &rb, db) || ra != 2 || rb != 2)
        return lt_lower_error(lc, n, LT_ERR_INTERNAL, "operands are not static matrices");
    bool ta = lt_attr_int(n, "transA", 0) != 0, tb = lt_attr_int(n, "transB", 0) != 0;
    lt_gemm_desc g = {.n = n, .out_index = gemm_index, .out_rank = 2};
    g.M = ta ? da[1] : da[0], g.K = ta ? da[0] : da[1], g.N = tb ? db[0] : db[1];
    g.out_dims[0] = g.M, g.out_dims[1] = g.N;
    g.alpha = lt_attr_float(n, "alpha", 1.0f);
    g.beta = lt_attr_float(n, "beta", 1.0f);
    g.C = lt_lower_out_buf(lc, n->out[0], NULL);
    LT_TRY(operands(lc, n, &g));
    g.ci = g.N, g.cj = 1;
    g.ai = ta ? 1 : g.K, g.ak = ta ? g.M : 1;
    g.bk = tb ? 1 : g.N, g.bj = tb ? g.K : 1;
    g.row_dim0 = 0, g.row_dim1 = 1, g.col_dim0 = 1;
    const lt_value *c = n->n_in > 2 ? n->in[2] : NULL;
    if (c && g.beta != 0) {
        /* a vector bias (beta 1, in memory) goes to the call's epilogue; anything else is beta*C */
        if (g.beta == 1 && lc->vbuf[c->id] && spans(&g, c, 1, 2)) g.bias = c, g.bias_mode = LT_BIAS_COL;
        else if (g.beta == 1 && lc->vbuf[c->id] && spans(&g, c, 0, 1) && g.M > 1) g.bias = c, g.bias_mode = LT_BIAS_ROW;
        else g.cmat = c;
    }
    return lt_lower_gemm(lc, &g, res);
}

static bool accept_gemm(const lt_node *n, char *why, size_t size) {
    if (!lt_lower_accept_f32_operands(n, why, size)) return false;
    if (n->in[0]->type.rank != 2 || n->in[1]->type.rank != 2) {
        snprintf(why, size, "operands are not matrices");
        return false;
    }
    return true;
}

const lt_lower_reg lt_lower_gemm_ops[] = {
    {LT_OP_MatMul, accept_matmul, NULL, l_matmul, 0, 0, 0},
    {LT_OP_Gemm, accept_gemm, NULL, l_gemm, 0, 0, 0},
    /* the 8-bit integer products (lower_int8.c) */
    {LT_OP_MatMulInteger, lt_lower_accept_matmul_integer, NULL, lt_lower_matmul_integer, 0, 0, 0},
    {LT_OP_ConvInteger, lt_lower_accept_conv_integer, NULL, lt_lower_conv_integer, 0, 0, 0},
    {0},
};
