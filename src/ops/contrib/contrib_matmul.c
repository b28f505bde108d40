/* contrib_matmul.c — com.microsoft's matrix products:
 *   FusedMatMul(A, B): alpha * A' x B' (numpy matmul broadcasting), where an operand with transBatch
 *     set is first permuted (d1, ..., d[r-2], d0, d[r-1]) (its leading dim moved after the batch dims;
 *     both operands must then have the same rank >= 3) and one with trans set has its last two dims
 *     swapped.
 *   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?): A x W (+ bias), W the [K, N] weight
 *     dequantized from its block-wise packing (contrib_matmul.h); g_idx (deprecated) is refused,
 *     accuracy_level is ignored (the reference computes in double).
 */
#include "contrib_impl.h"
#include "contrib_matmul.h"

#include <math.h>
#include <string.h>

/* ---- FusedMatMul ---- */

void lt_fused_matmul_perm(int r, bool tbatch, bool trans, int *perm) {
    for (int k = 0; k < r; k++) perm[k] = k;
    if (r >= 3 && tbatch) {
        for (int k = 0; k < r - 2; k++) perm[k] = k + 1;
        perm[r - 2] = 0;
    }
    if (r >= 2 && trans) {
        int t = perm[r - 1];
        perm[r - 1] = perm[r - 2];
        perm[r - 2] = t;
    }
}

static void fm_dims(const ct_arg *a, bool tbatch, bool trans, int64_t *d) {
    int perm[LT_MAX_RANK];
    lt_fused_matmul_perm(a->rank, tbatch, trans, perm);
    for (int k = 0; k < a->rank; k++) d[k] = a->d[perm[k]];
}

static lt_status check_fused(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *a = &in[0], *b = &in[1];
    LT_TRY(ct_want_float(ctx, n, a, LT_UNDEFINED, "A"));
    LT_TRY(ct_want_float(ctx, n, b, a->dt, "B"));
    bool tba = lt_attr_int(n, "transBatchA", 0), tbb = lt_attr_int(n, "transBatchB", 0);
    if (!isfinite(lt_attr_float(n, "alpha", 1.0f))) return lt_node_error(ctx, n, LT_ERR_INVALID, "alpha must be finite");
    if (a->rank < 1 || b->rank < 1)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "operands must have rank >= 1 (got %d and %d)", a->rank, b->rank);
    if ((tba || tbb) && (a->rank != b->rank || a->rank < 3))
        return lt_node_error(ctx, n, LT_ERR_INVALID,
                             "transBatchA / transBatchB need operands of the same rank >= 3 (got %d and %d)", a->rank,
                             b->rank);
    int64_t ad[LT_MAX_RANK], bd[LT_MAX_RANK], od[LT_MAX_RANK];
    fm_dims(a, tba, lt_attr_int(n, "transA", 0), ad);
    fm_dims(b, tbb, lt_attr_int(n, "transB", 0), bd);
    int ar = a->rank, br = b->rank;
    LT_TRY(ct_want_dim(ctx, n, br == 1 ? bd[0] : bd[br - 2], ad[ar - 1], "the inner dim of B"));
    int abr = ar > 2 ? ar - 2 : 0, bbr = br > 2 ? br - 2 : 0, r = abr > bbr ? abr : bbr, o = 0;
    for (int k = 0; k < r; k++) {
        int ai = k - (r - abr), bi = k - (r - bbr);
        int64_t av = ai >= 0 ? ad[ai] : 1, bv = bi >= 0 ? bd[bi] : 1;
        if (av >= 0 && bv >= 0 && av != bv && av != 1 && bv != 1)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "batch dims %lld and %lld cannot be broadcast", (long long)av,
                                 (long long)bv);
        od[o++] = av == 1 ? bv : bv == 1 ? av : av >= 0 ? av : bv;
    }
    if (ar > 1) od[o++] = ad[ar - 2];
    if (br > 1) od[o++] = bd[br - 1];
    ct_out_set(&out[0], a->dt, o, od);
    return LT_OK;
}

/* v permuted by perm into a new array (dims d of rank r). */
static double *permuted(const ct_arg *a, const int *perm) {
    double *o = lt_mem_alloc((size_t)(a->numel ? a->numel : 1) * sizeof *o);
    if (!o) return NULL;
    int64_t od[LT_MAX_RANK], st[LT_MAX_RANK], ost[LT_MAX_RANK], idx[LT_MAX_RANK] = {0};
    int64_t s = 1;
    for (int k = a->rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= a->d[k];
    }
    for (int k = 0; k < a->rank; k++) {
        od[k] = a->d[perm[k]];
        ost[k] = st[perm[k]];
    }
    for (int64_t i = 0; i < a->numel; i++) {
        o[i] = a->v[lt_index_offset(a->rank, idx, ost)];
        lt_index_next(a->rank, od, idx);
    }
    return o;
}

/* Batched matmul with numpy broadcasting of A (ad, ar) and B (bd, br) into out (its dims known). */
static void batched_mm(const double *A, int ar, const int64_t *ad, const double *B, int br, const int64_t *bd,
                       const ct_out *y, double alpha) {
    int64_t M = ar > 1 ? ad[ar - 2] : 1, K = ad[ar - 1], N = br > 1 ? bd[br - 1] : 1;
    int abr = ar > 2 ? ar - 2 : 0, bbr = br > 2 ? br - 2 : 0, r = abr > bbr ? abr : bbr;
    int64_t bdims[LT_MAX_RANK], ast[LT_MAX_RANK], bst[LT_MAX_RANK], idx[LT_MAX_RANK] = {0}, as = M * K, bs = K * N;
    int64_t batch = 1;
    for (int k = r - 1; k >= 0; k--) {
        int ai = k - (r - abr), bi = k - (r - bbr);
        int64_t av = ai >= 0 ? ad[ai] : 1, bv = bi >= 0 ? bd[bi] : 1;
        bdims[k] = av == 1 ? bv : av;
        ast[k] = av == 1 ? 0 : as;
        bst[k] = bv == 1 ? 0 : bs;
        as *= av;
        bs *= bv;
        batch *= bdims[k];
    }
    for (int64_t t = 0; t < batch; t++) {
        const double *a = A + lt_index_offset(r, idx, ast), *b = B + lt_index_offset(r, idx, bst);
        double *c = y->v + t * M * N;
        ct_gemm(M, N, K, a, b, c);
        for (int64_t i = 0; i < M * N; i++) c[i] *= alpha;
        lt_index_next(r, bdims, idx);
    }
}

static lt_status compute_fused(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *a = &in[0], *b = &in[1];
    int pa[LT_MAX_RANK], pb[LT_MAX_RANK];
    lt_fused_matmul_perm(a->rank, lt_attr_int(n, "transBatchA", 0), lt_attr_int(n, "transA", 0), pa);
    lt_fused_matmul_perm(b->rank, lt_attr_int(n, "transBatchB", 0), lt_attr_int(n, "transB", 0), pb);
    double *A = permuted(a, pa), *B = permuted(b, pb);
    int64_t ad[LT_MAX_RANK], bd[LT_MAX_RANK];
    for (int k = 0; k < a->rank; k++) ad[k] = a->d[pa[k]];
    for (int k = 0; k < b->rank; k++) bd[k] = b->d[pb[k]];
    if (A && B) batched_mm(A, a->rank, ad, B, b->rank, bd, out, lt_attr_float(n, "alpha", 1.0f));
    lt_mem_free(A);
    lt_mem_free(B);
    return A && B ? LT_OK : lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory");
}

/* ---- MatMulNBits ---- */

lt_status lt_nbits_attrs(lt_ctx *ctx, const lt_node *n, lt_nbits *p) {
    int64_t bits = lt_attr_int(n, "bits", 4), block = lt_attr_int(n, "block_size", 0);
    p->K = lt_attr_int(n, "K", 0);
    p->N = lt_attr_int(n, "N", 0);
    if (p->K < 1 || p->N < 1 || p->K > ((int64_t)1 << 40) || p->N > ((int64_t)1 << 40))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "attributes K and N must be given and >= 1 (K = %lld, N = %lld)",
                             (long long)p->K, (long long)p->N);
    if (bits != 2 && bits != 4 && bits != 8)
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "bits = %lld is not supported (2, 4 or 8)", (long long)bits);
    if (block < 16 || block > (1 << 20) || (block & (block - 1)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "block_size = %lld must be a power of 2 >= 16", (long long)block);
    p->bits = bits;
    p->block = block;
    p->k_blocks = (p->K + block - 1) / block;
    p->blob = block * bits / 8;
    return LT_OK;
}

/* Value j of a packed row (bits per value, low bits first). */
static unsigned unpack(const uint8_t *row, int64_t j, int64_t bits) {
    int64_t bit = j * bits;
    return (unsigned)(row[bit / 8] >> (bit % 8)) & ((1u << bits) - 1u);
}

lt_status lt_nbits_dequant(lt_ctx *ctx, const lt_node *n, const lt_nbits *p, const lt_tensor *B, const lt_tensor *scales,
                           const lt_tensor *zp, double *W) {
    int64_t zp_row = (p->k_blocks * p->bits + 7) / 8;
    bool zp_packed = zp && zp->dtype == LT_UINT8;
    if (B->dtype != LT_UINT8 || B->numel != p->N * p->k_blocks * p->blob || scales->numel != p->N * p->k_blocks ||
        (zp && zp->numel != p->N * (zp_packed ? zp_row : p->k_blocks)))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "B, scales or zero_points do not match K, N, bits and block_size");
    const uint8_t *q = B->data;
    for (int64_t c = 0; c < p->N; c++)
        for (int64_t blk = 0; blk < p->k_blocks; blk++) {
            double s = lt_load_f64(scales->data, scales->dtype, c * p->k_blocks + blk);
            double z = !zp ? (double)(1 << (p->bits - 1))
                       : zp_packed ? unpack((const uint8_t *)zp->data + c * zp_row, blk, p->bits)
                                   : lt_load_f64(zp->data, zp->dtype, c * p->k_blocks + blk);
            const uint8_t *blob = q + (c * p->k_blocks + blk) * p->blob;
            for (int64_t j = 0; j < p->block && blk * p->block + j < p->K; j++)
                W[(blk * p->block + j) * p->N + c] = ((double)unpack(blob, j, p->bits) - z) * s;
        }
    return LT_OK;
}

static lt_status check_nbits(lt_ctx *ctx, const lt_node *n, const ct_arg *in, ct_out *out) {
    const ct_arg *a = &in[0], *b = &in[1], *sc = &in[2], *zp = &in[3];
    lt_nbits p;
    LT_TRY(lt_nbits_attrs(ctx, n, &p));
    LT_TRY(ct_want_float(ctx, n, a, LT_UNDEFINED, "A"));
    if (a->rank < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "A must have rank >= 1");
    LT_TRY(ct_want_dim(ctx, n, a->d[a->rank - 1], p.K, "the last dim of A"));
    if (b->dt != LT_UINT8 && b->dt != LT_UNDEFINED) return lt_node_error(ctx, n, LT_ERR_INVALID, "B must be uint8");
    int64_t want_b = p.N * p.k_blocks * p.blob, nb = ct_numel(b->rank, b->d);
    if (b->rank != 3 && b->rank != 2) return lt_node_error(ctx, n, LT_ERR_INVALID, "B must be (N, k_blocks, blob_size)");
    LT_TRY(ct_want_dim(ctx, n, b->d[0], p.N, "the first dim of B"));
    LT_TRY(ct_want_dim(ctx, n, nb, want_b, "the size of B"));
    LT_TRY(ct_want_float(ctx, n, sc, a->dt, "scales"));
    LT_TRY(ct_want_dim(ctx, n, ct_numel(sc->rank, sc->d), p.N * p.k_blocks, "the size of scales"));
    if (ct_present(zp)) {
        if (zp->dt == LT_UINT8)
            LT_TRY(ct_want_dim(ctx, n, ct_numel(zp->rank, zp->d), p.N * ((p.k_blocks * p.bits + 7) / 8),
                               "the size of the packed zero_points"));
        else {
            LT_TRY(ct_want_float(ctx, n, zp, a->dt, "zero_points"));
            LT_TRY(ct_want_dim(ctx, n, ct_numel(zp->rank, zp->d), p.N * p.k_blocks, "the size of zero_points"));
        }
    }
    if (ct_present(&in[4])) return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "g_idx (deprecated) is not supported");
    if (ct_present(&in[5])) {
        LT_TRY(ct_want_float(ctx, n, &in[5], a->dt, "bias"));
        LT_TRY(ct_want_vec(ctx, n, &in[5], p.N, "bias"));
    }
    int64_t od[LT_MAX_RANK];
    memcpy(od, a->d, sizeof od);
    od[a->rank - 1] = p.N;
    ct_out_set(&out[0], a->dt, a->rank, od);
    return LT_OK;
}

static lt_status compute_nbits(lt_eval *ev, const lt_node *n, const ct_arg *in, ct_out *out) {
    lt_nbits p;
    LT_TRY(lt_nbits_attrs(ev->ctx, n, &p));
    double *W = lt_mem_calloc((size_t)(p.K * p.N), sizeof *W);
    if (!W) return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (the dequantized weight)");
    lt_status s = lt_nbits_dequant(ev->ctx, n, &p, in[1].c, in[2].c, ct_present(&in[3]) ? in[3].c : NULL, W);
    if (!s) {
        int64_t rows = in[0].numel / p.K;
        ct_gemm(rows, p.N, p.K, in[0].v, W, out[0].v);
        if (ct_present(&in[5]))
            for (int64_t i = 0; i < rows * p.N; i++) out[0].v[i] += in[5].v[i % p.N];
    }
    lt_mem_free(W);
    return s;
}

const ct_op ct_ops_matmul[] = {
    {LT_OP_FusedMatMul, 2, 2, check_fused, compute_fused},
    {LT_OP_MatMulNBits, 3, 6, check_nbits, compute_nbits},
    {0, 0, 0, NULL, NULL},
};
