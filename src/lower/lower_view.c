/* lower_view.c — strided views: a value computed from a stored buffer by layout ops only (Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose) is that buffer read with other strides, so a GEMM call
 * can read it (an attention operand: Q/K/V split into heads and transposed) or write it (the heads
 * merged back) in place, with no copy kernel.
 *
 *   lt_lower_view_step      one layout node applied to a view, forward (input view -> output view)
 *                           or backward (output view -> input view); false when a reshape cannot
 *                           be expressed by strides (it would merge dims that are not contiguous
 *                           with each other);
 *   lt_lower_operand_view   the view of value v on the stored value it is computed from, through
 *                           the layout nodes a predicate says are inlined (fusion asks with its
 *                           use counts, lowering with the group's membership);
 *   lt_lower_output_view    the view of an anchor's output value inside the group output buffer it
 *                           is stored to through a chain of layout nodes (the buffer is contiguous);
 *   lt_lower_lead_reshape   a reshape that only adds or drops leading 1s (Gemm [T, D] -> [1, T, D]):
 *                           an epilogue continues through it, its index maps by lt_lower_lead_index.
 *
 * Invariants: views describe element offsets (not bytes) of the stored buffer; dims of extent 1 may
 * carry any stride; everything is a pure function of the graph (no allocation, no context).
 */
#include "lower_impl.h"

#include <string.h>

bool lt_lower_is_layout(const lt_node *n) { return lt_lower_is_view(n) || n->op == LT_OP_Transpose; }

/* dims without their leading 1s */
static int strip_lead(int r, const int64_t *d, const int64_t **out) {
    int k = 0;
    while (k < r && d[k] == 1) k++;
    *out = d + k;
    return r - k;
}

bool lt_lower_same_but_lead(int ra, const int64_t *da, int rb, const int64_t *db) {
    const int64_t *a, *b;
    int na = strip_lead(ra, da, &a), nb = strip_lead(rb, db, &b);
    return na == nb && memcmp(a, b, sizeof(int64_t) * (size_t)na) == 0;
}

bool lt_lower_lead_reshape(const lt_node *n) {
    if (!lt_lower_is_view(n) || !n->in[0]) return false;
    const lt_value *o = NULL;
    for (int j = 0; j < n->n_out; j++)
        if (n->out[j]) o = n->out[j];
    int ri, ro;
    int64_t di[LT_MAX_RANK], dq[LT_MAX_RANK];
    return o && lt_lower_shape(n->in[0], &ri, di) && lt_lower_shape(o, &ro, dq) && lt_lower_same_but_lead(ri, di, ro, dq);
}

bool lt_lower_view_relead(const lt_sview *in, int rank, const int64_t *dims, lt_sview *out) {
    if (!lt_lower_same_but_lead(in->rank, in->dims, rank, dims)) return false;
    out->rank = rank;
    for (int q = 0; q < rank; q++) {
        int qi = q - (rank - in->rank); /* right-aligned; extra leading dims have extent 1 */
        out->dims[q] = dims[q];
        out->st[q] = qi >= 0 ? in->st[qi] : 0;
    }
    return true;
}

bool lt_lower_lead_index(lt_lctx *lc, int ra, const int64_t *da, lt_lnode *const *ia, int rb, const int64_t *db,
                         lt_lnode **ib) {
    if (!lt_lower_same_but_lead(ra, da, rb, db)) return false;
    for (int q = 0; q < rb; q++) {
        int qa = q - (rb - ra); /* right-aligned */
        ib[q] = qa >= 0 ? ia[qa] : lt_l_int(lc->k, 0);
        if (!ib[q]) return false;
    }
    return true;
}

void lt_lower_view_contig(int rank, const int64_t *dims, lt_sview *out) {
    out->rank = rank;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        out->dims[d] = dims[d];
        out->st[d] = s;
        s *= dims[d];
    }
}

bool lt_lower_view_is_contig(const lt_sview *v) {
    int64_t s = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->dims[d] != 1 && v->st[d] != s) return false;
        s *= v->dims[d];
    }
    return true;
}

/* The same elements (row-major order) under another shape: the strides of `out` from `in`
 * (numpy's no-copy reshape rule). Dims of extent 1 are dropped first and get any stride. */
static bool view_reshape(const lt_sview *in, int rank, const int64_t *dims, lt_sview *out) {
    int64_t od[LT_MAX_RANK], os[LT_MAX_RANK];
    int on = 0;
    int64_t n_in = 1, n_out = 1;
    for (int d = 0; d < in->rank; d++) {
        n_in *= in->dims[d];
        if (in->dims[d] != 1) od[on] = in->dims[d], os[on] = in->st[d], on++;
    }
    for (int d = 0; d < rank; d++) n_out *= dims[d];
    if (n_in != n_out || rank > LT_MAX_RANK) return false;
    out->rank = rank;
    for (int d = 0; d < rank; d++) out->dims[d] = dims[d], out->st[d] = 1;
    /* non-1 dims of the output */
    int nd[LT_MAX_RANK], nn = 0;
    for (int d = 0; d < rank; d++)
        if (dims[d] != 1) nd[nn++] = d;
    int oi = 0, ni = 0;
    while (oi < on && ni < nn) {
        int oj = oi + 1, nj = ni + 1;
        int64_t op = od[oi], np = dims[nd[ni]];
        while (op != np) {
            if (np < op) {
                if (nj >= nn) return false;
                np *= dims[nd[nj++]];
            } else {
                if (oj >= on) return false;
                op *= od[oj++];
            }
        }
        /* the input dims [oi, oj) must be contiguous with each other */
        for (int k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1]) return false;
        /* the output dims [ni, nj) split the block with the innermost input stride */
        int64_t s = os[oj - 1];
        for (int k = nj - 1; k >= ni; k--) {
            out->st[nd[k]] = s;
            s *= dims[nd[k]];
        }
        oi = oj, ni = nj;
    }
    return oi == on && ni == nn;
}

static bool node_perm(const lt_node *n, int rank, int *perm) {
    const int64_t *p;
    int np = lt_attr_ints(n, "perm", &p);
    if (np == 0) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return true;
    }
    if (np != rank) return false;
    bool seen[LT_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        int64_t a = p[i] < 0 ? p[i] + rank : p[i];
        if (a < 0 || a >= rank || seen[a]) return false;
        seen[a] = true;
        perm[i] = (int)a;
    }
    return true;
}

bool lt_lower_view_step(const lt_node *n, bool forward, const lt_sview *in, lt_sview *out) {
    const lt_value *src = n->in[0], *dst = NULL;
    for (int j = 0; j < n->n_out; j++)
        if (n->out[j]) dst = n->out[j];
    int rs, rd;
    int64_t ds[LT_MAX_RANK], dd[LT_MAX_RANK];
    if (!dst || !lt_lower_shape(src, &rs, ds) || !lt_lower_shape(dst, &rd, dd)) return false;
    if (lt_lower_is_view(n)) return forward ? view_reshape(in, rd, dd, out) : view_reshape(in, rs, ds, out);
    if (n->op != LT_OP_Transpose || rs != rd || in->rank != rs) return false;
    int perm[LT_MAX_RANK];
    if (!node_perm(n, rs, perm)) return false;
    out->rank = rs;
    for (int i = 0; i < rs; i++) {
        if (forward) out->dims[i] = in->dims[perm[i]], out->st[i] = in->st[perm[i]];
        else out->dims[perm[i]] = in->dims[i], out->st[perm[i]] = in->st[i];
    }
    return true;
}

bool lt_lower_operand_view(const lt_value *v, lt_lower_inlined_fn inlined, void *user, const lt_value **base,
                           lt_sview *out) {
    const lt_node *chain[16];
    int nc = 0;
    const lt_value *cur = v;
    while (cur->producer && lt_lower_is_layout(cur->producer) && inlined(user, cur)) {
        if (nc == 16) return false;
        chain[nc++] = cur->producer;
        cur = cur->producer->in[0];
        if (!cur) return false;
    }
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_shape(cur, &r, d)) return false;
    lt_sview a;
    lt_lower_view_contig(r, d, &a);
    for (int i = nc - 1; i >= 0; i--) {
        lt_sview b;
        if (!lt_lower_view_step(chain[i], true, &a, &b)) return false;
        a = b;
    }
    *base = cur;
    *out = a;
    return true;
}

bool lt_lower_output_view(const lt_value *v, const lt_value *final, lt_sview *out, const lt_value **before) {
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_shape(final, &r, d)) return false;
    lt_sview a;
    lt_lower_view_contig(r, d, &a);
    const lt_value *cur = final;
    for (int guard = 0; cur != v && guard < 16; guard++) {
        const lt_node *p = cur->producer;
        if (!p || !lt_lower_is_layout(p) || !p->in[0]) break;
        lt_sview b;
        if (!lt_lower_view_step(p, false, &a, &b)) return false;
        a = b;
        cur = p->in[0];
    }
    *out = a;
    if (before) *before = cur;
    return true;
}
