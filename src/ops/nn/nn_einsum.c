/* nn_einsum.c — Einsum: a general equation parser and a direct summation over all labels.
 *
 * Equation grammar (spaces ignored): term {',' term} ['->' term]; a term is letters with at most one
 * '...'. Labels: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (so id order is numpy's alphabetical order),
 * ellipsis dims -> 52.. (right-aligned and broadcast across inputs). A label repeated within a term
 * takes the diagonal; size-1 dims broadcast. Implicit output: the ellipsis dims, then the letters that
 * occur exactly once, in order. Every output element sums, over the labels not in the output, the
 * product of the inputs; floats accumulate in double, integers in wrapping 64-bit arithmetic. */
#include "nn_impl.h"
#include "nn_einsum.h"

#include <stdio.h>
#include <string.h>

#define EIN_MAX_IN LT_EINSUM_MAX_IN
#define EIN_LETTERS LT_EINSUM_LETTERS
#define EIN_MAX_LAB LT_EINSUM_MAX_LAB

typedef lt_einsum ein; /* nn_einsum.h */

static int letter_id(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

/* Parse one term: letter ids in order, with the ellipsis position (-1 if none). */
static bool parse_term(const char *s, size_t len, int *ids, int *nids, int *ellpos, char *err, size_t errn) {
    *nids = 0;
    *ellpos = -1;
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.' || *ellpos >= 0) {
                snprintf(err, errn, "malformed ellipsis in equation");
                return false;
            }
            *ellpos = *nids;
            i += 3;
            continue;
        }
        int id = letter_id(s[i]);
        if (id < 0) {
            snprintf(err, errn, "invalid character '%c' in equation", s[i]);
            return false;
        }
        if (*nids >= EIN_MAX_LAB) {
            snprintf(err, errn, "equation term too long");
            return false;
        }
        ids[(*nids)++] = id;
        i++;
    }
    return true;
}

/* Parse the equation for inputs of the given ranks. */
static bool ein_parse(const char *eq, int nin, const int *ranks, ein *e, char *err, size_t errn) {
    char buf[1024];
    size_t L = 0;
    for (const char *p = eq; *p; p++) {
        if (*p == ' ' || *p == '\t' || *p == '\n') continue;
        if (L + 1 >= sizeof buf) {
            snprintf(err, errn, "equation too long");
            return false;
        }
        buf[L++] = *p;
    }
    buf[L] = 0;
    memset(e, 0, sizeof *e);
    if (nin < 1 || nin > EIN_MAX_IN) {
        snprintf(err, errn, "%d inputs are not supported (1..%d)", nin, EIN_MAX_IN);
        return false;
    }
    e->nin = nin;
    for (int k = 0; k < nin; k++)
        if (ranks[k] < 0 || ranks[k] > LT_MAX_RANK) {
            snprintf(err, errn, "input %d has rank %d (at most %d)", k, ranks[k], LT_MAX_RANK);
            return false;
        }
    char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : L;
    int ids[EIN_MAX_IN][EIN_MAX_LAB], nids[EIN_MAX_IN], ellpos[EIN_MAX_IN];
    size_t start = 0;
    int t = 0;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && buf[i] != ',') continue;
        if (t >= nin) {
            snprintf(err, errn, "equation has more terms than the %d inputs", nin);
            return false;
        }
        if (!parse_term(buf + start, i - start, ids[t], &nids[t], &ellpos[t], err, errn)) return false;
        t++;
        start = i + 1;
    }
    if (t != nin) {
        snprintf(err, errn, "equation has %d terms for %d inputs", t, nin);
        return false;
    }
    int count[EIN_LETTERS] = {0};
    for (int k = 0; k < nin; k++) {
        int r = ranks[k];
        if (ellpos[k] < 0 ? nids[k] != r : nids[k] > r) {
            snprintf(err, errn, "term %d has %d labels for an input of rank %d", k, nids[k], r);
            return false;
        }
        int ne = r - nids[k];
        if (ne > e->ell) e->ell = ne;
        for (int j = 0; j < nids[k]; j++) count[ids[k][j]]++;
    }
    for (int k = 0; k < nin; k++) {
        int r = ranks[k], ne = r - nids[k], a = 0;
        e->rank[k] = r;
        for (int j = 0; j <= nids[k]; j++) {
            if (j == ellpos[k])
                for (int q = 0; q < ne; q++) e->lab[k][a++] = EIN_LETTERS + (e->ell - ne) + q;
            if (j < nids[k]) e->lab[k][a++] = ids[k][j];
        }
        for (int j = 0; j < r; j++) e->used[e->lab[k][j]] = true;
    }
    if (arrow) {
        int oids[EIN_MAX_LAB], no, oe;
        if (!parse_term(arrow + 2, strlen(arrow + 2), oids, &no, &oe, err, errn)) return false;
        if (oe < 0 && e->ell > 0) {
            snprintf(err, errn, "output has no '...' for the inputs' ellipsis dimensions");
            return false;
        }
        bool seen[EIN_LETTERS] = {false};
        for (int j = 0; j <= no; j++) {
            if (j == oe)
                for (int q = 0; q < e->ell; q++) e->out_lab[e->out_rank++] = EIN_LETTERS + q;
            if (j == no) break;
            int id = oids[j];
            if (!count[id] || seen[id]) {
                snprintf(err, errn, "output label '%c' %s", id < 26 ? 'A' + id : 'a' + id - 26,
                         seen[id] ? "is repeated" : "does not occur in the inputs");
                return false;
            }
            seen[id] = true;
            e->out_lab[e->out_rank++] = id;
        }
    } else {
        for (int q = 0; q < e->ell; q++) e->out_lab[e->out_rank++] = EIN_LETTERS + q;
        for (int id = 0; id < EIN_LETTERS; id++)
            if (count[id] == 1) e->out_lab[e->out_rank++] = id;
    }
    if (e->out_rank > LT_MAX_RANK) {
        snprintf(err, errn, "output rank %d exceeds %d", e->out_rank, LT_MAX_RANK);
        return false;
    }
    return true;
}

bool lt_einsum_parse(const char *eq, int nin, const int *ranks, lt_einsum *e, char *err, size_t errn) {
    return ein_parse(eq, nin, ranks, e, err, errn);
}

lt_status nn_eval_Einsum(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const char *eq = lt_attr_string(n, "equation", NULL);
    if (!eq) return lt_op_error(ev, n, LT_ERR_INVALID, "attribute equation is required");
    int nin = n->n_in, ranks[EIN_MAX_IN];
    if (nin < 1 || nin > EIN_MAX_IN)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "%d inputs are not supported (1..%d)", nin, EIN_MAX_IN);
    const lt_tensor *ts[EIN_MAX_IN];
    for (int k = 0; k < nin; k++) {
        LT_TRY(lt_in_tensor(ev, n, in, k, &ts[k]));
        ranks[k] = ts[k]->rank;
        if (ts[k]->dtype != ts[0]->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "input %d dtype %s differs from %s", k,
                               lt_dtype_name(ts[k]->dtype), lt_dtype_name(ts[0]->dtype));
    }
    lt_dtype dt = ts[0]->dtype;
    bool isint = lt_dtype_is_int(dt);
    if (!isint && !nn_is_float(dt))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(dt));
    ein e;
    char err[256];
    if (!ein_parse(eq, nin, ranks, &e, err, sizeof err)) return lt_op_error(ev, n, LT_ERR_INVALID, "%s", err);
    /* label sizes */
    int64_t size[EIN_MAX_LAB];
    for (int l = 0; l < EIN_MAX_LAB; l++) size[l] = 1;
    for (int k = 0; k < nin; k++)
        for (int a = 0; a < e.rank[k]; a++) {
            int l = e.lab[k][a];
            int64_t d = ts[k]->dims[a];
            if (d == size[l] || d == 1) continue;
            if (size[l] == 1) size[l] = d;
            else
                return lt_op_error(ev, n, LT_ERR_INVALID, "label dimension mismatch: %lld vs %lld (input %d axis %d)",
                                   (long long)d, (long long)size[l], k, a);
        }
    /* loop order: output labels, then the summed ones */
    int order[EIN_MAX_LAB], nall = 0;
    bool in_out[EIN_MAX_LAB] = {false};
    for (int j = 0; j < e.out_rank; j++) {
        order[nall++] = e.out_lab[j];
        in_out[e.out_lab[j]] = true;
    }
    for (int l = 0; l < EIN_MAX_LAB; l++)
        if (e.used[l] && !in_out[l]) order[nall++] = l;
    int64_t odims[LT_MAX_RANK], adims[EIN_MAX_LAB];
    for (int j = 0; j < e.out_rank; j++) odims[j] = size[e.out_lab[j]];
    for (int j = 0; j < nall; j++) adims[j] = size[order[j]];
    /* strides[k][j]: stride of input k along loop label j (repeated axes add up, broadcast axes 0) */
    int64_t (*strides)[EIN_MAX_LAB] = nn_alloc(ev, n, nin, sizeof *strides, "einsum strides");
    if (!strides) return LT_ERR_NOMEM;
    for (int k = 0; k < nin; k++) {
        int64_t st[LT_MAX_RANK];
        lt_tensor_strides(ts[k], st);
        for (int j = 0; j < nall; j++) {
            strides[k][j] = 0;
            for (int a = 0; a < e.rank[k]; a++)
                if (e.lab[k][a] == order[j] && ts[k]->dims[a] != 1) strides[k][j] += st[a];
        }
    }
    lt_tensor *y;
    lt_status s = lt_out_new(ev, n, out, 0, dt, e.out_rank, odims, &y);
    int64_t inner = 1;
    for (int j = e.out_rank; j < nall && !s; j++)
        if (!lt_mul_i64(inner, adims[j], &inner)) s = lt_op_error(ev, n, LT_ERR_INVALID, "summation too large");
    void *bufs[EIN_MAX_IN] = {NULL};
    for (int k = 0; k < nin && !s; k++)
        s = isint ? nn_u64_copy(ev, n, ts[k], (uint64_t **)&bufs[k]) : nn_f64_copy(ev, n, ts[k], (double **)&bufs[k]);
    if (!s && y->numel > 0 && inner > 0) {
        /* one odometer over all loop labels (summed ones fastest) with incremental offsets; an
         * output element is complete whenever the carry reaches the output labels */
        int64_t idx[EIN_MAX_LAB] = {0}, off[EIN_MAX_IN] = {0}, o = 0;
        double facc = 0;
        uint64_t iacc = 0;
        for (;;) {
            if (isint) {
                uint64_t p = 1;
                for (int k = 0; k < nin; k++) p *= ((const uint64_t *)bufs[k])[off[k]];
                iacc += p;
            } else {
                double p = 1;
                for (int k = 0; k < nin; k++) p *= ((const double *)bufs[k])[off[k]];
                facc += p;
            }
            int d = nall - 1;
            for (; d >= 0; d--) {
                for (int k = 0; k < nin; k++) off[k] += strides[k][d];
                if (++idx[d] < adims[d]) break;
                for (int k = 0; k < nin; k++) off[k] -= adims[d] * strides[k][d];
                idx[d] = 0;
            }
            if (d < e.out_rank) {
                if (isint) lt_store_u64(y->data, dt, o, iacc);
                else lt_store_f64(y->data, dt, o, facc);
                facc = 0;
                iacc = 0;
                if (++o >= y->numel || d < 0) break;
            }
        }
    }
    for (int k = 0; k < nin; k++) lt_mem_free(bufs[k]);
    lt_mem_free(strides);
    return s;
}

lt_status nn_infer_Einsum(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    const char *eq = lt_attr_string(n, "equation", NULL);
    int nin = n->n_in, ranks[EIN_MAX_IN];
    if (!eq || nin < 1 || nin > EIN_MAX_IN) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    const lt_type *tt[EIN_MAX_IN];
    for (int k = 0; k < nin; k++) {
        tt[k] = lt_infer_in(n, k);
        if (!tt[k] || tt[k]->kind != LT_TK_TENSOR || tt[k]->rank < 0 || (!tt[k]->dims && tt[k]->rank > 0))
            return lt_infer_set(ic, n, 0, dt, -1, NULL);
        ranks[k] = tt[k]->rank;
    }
    ein e;
    char err[256];
    if (!ein_parse(eq, nin, ranks, &e, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    lt_dim od[LT_MAX_RANK];
    for (int j = 0; j < e.out_rank; j++) {
        lt_dim v = {1, NULL}; /* a known size > 1 wins, else a symbolic one, else 1 */
        for (int k = 0; k < nin; k++)
            for (int a = 0; a < e.rank[k]; a++) {
                if (e.lab[k][a] != e.out_lab[j]) continue;
                lt_dim d = tt[k]->dims[a];
                if (d.value > 1 || (d.value < 0 && v.value == 1)) v = d;
            }
        od[j] = v;
    }
    return lt_infer_set(ic, n, 0, dt, e.out_rank, od);
}
