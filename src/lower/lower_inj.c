/* lower_inj.c — `expr` hooks of the INJECTIVE ops: each maps the output multi-index to the index
 * of the input element it copies (Transpose, Reshape/Flatten/Squeeze/Unsqueeze, Slice, Concat,
 * Split, Gather, GatherElements, Expand, Pad, Tile, DepthToSpace, SpaceToDepth, Trilu).
 *
 * Shapes are static (fusion checked), so index maps are built from the input and output dims; the
 * shape-like inputs (Reshape's shape, Expand's shape, Split's sizes, ...) are not read at all, and
 * the ones that carry more than a shape (Slice's starts and steps, Pad's pads, Trilu's k) must be
 * constants. The Gather family compiles only with checked indices (constant and in range, or a
 * model input the runtime checks before each run; computed ones run on the host, which reports a
 * bad index); their index expressions are still clamped so nothing can read out of bounds; Concat and Pad clamp the index of every branch for the same reason
 * (a vectorized select may evaluate both sides).
 */
#include "lower_impl.h"

#include "../ops/shape/index_rule.h"

#include <stdio.h>
#include <string.h>

#define K (lc->k)

static lt_lnode *I(lt_lctx *lc, int64_t v) { return lt_l_int(K, v); }
static lt_lnode *bin(lt_lctx *lc, lt_lop op, lt_lnode *a, lt_lnode *b) { return lt_l_binary(K, op, a, b); }
static lt_lnode *clampi(lt_lctx *lc, lt_lnode *x, int64_t lo, int64_t hi) {
    return bin(lc, LT_LOP_MIN, bin(lc, LT_LOP_MAX, x, I(lc, lo)), I(lc, hi));
}

static bool shape_of(lt_lctx *lc, const lt_value *v, int *r, int64_t *d) { return lt_lower_vshape(lc, v, r, d); }

static lt_status need_shape(lt_lctx *lc, const lt_node *n, const lt_value *v, int *r, int64_t *d) {
    if (!shape_of(lc, v, r, d)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "'%s' has no static shape", v->name);
    return LT_OK;
}

/* ---- Reshape family: map through segments of equal element count ---- */

static lt_status e_reshape(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int ri, ro;
    int64_t di[LT_MAX_RANK], dout[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &ri, di));
    LT_TRY(need_shape(lc, n, n->out[0], &ro, dout));
    lt_lnode *sub[LT_MAX_RANK] = {0};
    /* walk both shapes, cutting them where the running products agree */
    int a = 0, b = 0;
    while (a < ri || b < ro) {
        int a0 = a, b0 = b;
        int64_t pa = 1, pb = 1;
        /* size-1 dims on either side map trivially */
        if (a < ri && di[a] == 1) { sub[a++] = I(lc, 0); continue; }
        if (b < ro && dout[b] == 1) { b++; continue; }
        if (a < ri) pa *= di[a++];
        if (b < ro) pb *= dout[b++];
        while (pa != pb && (a < ri || b < ro)) {
            if (pa < pb && a < ri) pa *= di[a++];
            else if (b < ro) pb *= dout[b++];
            else pa *= di[a++];
        }
        /* flat index of the output segment, split into the input segment */
        lt_lnode *flat = lt_lower_flat(lc, b - b0, dout + b0, idx + b0);
        if (a - a0 == 1) sub[a0] = flat;
        else LT_TRY(lt_lower_unflat(lc, flat, a - a0, di + a0, sub + a0));
    }
    for (int i = 0; i < ri; i++)
        if (!sub[i]) return lt_lower_nomem(lc);
    return lt_lower_value(lc, n->in[0], sub, r);
}

/* ---- Transpose ---- */

static bool get_perm(const lt_node *n, int rank, int *perm) {
    const int64_t *p;
    int np = lt_attr_ints(n, "perm", &p);
    if (np == 0) {
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        return true;
    }
    if (np != rank) return false;
    for (int i = 0; i < rank; i++) {
        if (p[i] < -rank || p[i] >= rank) return false;
        perm[i] = (int)(p[i] < 0 ? p[i] + rank : p[i]);
    }
    return true;
}

static lt_status e_transpose(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int rank = n->in[0]->type.rank, perm[LT_MAX_RANK];
    if (!get_perm(n, rank, perm)) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad perm");
    lt_lnode *sub[LT_MAX_RANK];
    for (int i = 0; i < rank; i++) sub[perm[i]] = idx[i];
    return lt_lower_value(lc, n->in[0], sub, r);
}

static bool accept_transpose(const lt_node *n, char *why, size_t size) {
    int perm[LT_MAX_RANK];
    if (!get_perm(n, n->in[0]->type.rank, perm)) {
        snprintf(why, size, "bad perm");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* ---- Slice ---- */

typedef struct slice_info {
    int64_t start[LT_MAX_RANK], step[LT_MAX_RANK];
} slice_info;

static bool slice_params(const lt_node *n, slice_info *si) {
    int r;
    int64_t d[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &r, d)) return false;
    for (int i = 0; i < r; i++) si->start[i] = 0, si->step[i] = 1;
    int64_t st[LT_MAX_RANK], en[LT_MAX_RANK], ax[LT_MAX_RANK], sp[LT_MAX_RANK];
    int ns, ne, na, nsp;
    if (n->opset < 10) {
        const int64_t *p;
        ns = lt_attr_ints(n, "starts", &p);
        if (ns > LT_MAX_RANK) return false;
        memcpy(st, p, sizeof(int64_t) * (size_t)ns);
        ne = lt_attr_ints(n, "ends", &p);
        if (ne != ns) return false;
        memcpy(en, p, sizeof(int64_t) * (size_t)ne);
        na = lt_attr_ints(n, "axes", &p);
        if (na > LT_MAX_RANK) return false;
        if (na) memcpy(ax, p, sizeof(int64_t) * (size_t)na);
        nsp = -1;
    } else {
        ns = lt_lower_const_ints(n, 1, st, LT_MAX_RANK);
        ne = lt_lower_const_ints(n, 2, en, LT_MAX_RANK);
        na = n->n_in > 3 && n->in[3] ? lt_lower_const_ints(n, 3, ax, LT_MAX_RANK) : 0;
        nsp = n->n_in > 4 && n->in[4] ? lt_lower_const_ints(n, 4, sp, LT_MAX_RANK) : -1;
        if (ns < 0 || ne != ns || na < 0 || (n->n_in > 4 && n->in[4] && nsp != ns)) return false;
    }
    if (na && na != ns) return false;
    for (int i = 0; i < ns; i++) {
        int64_t a = na ? ax[i] : i;
        if (a < 0) a += r;
        if (a < 0 || a >= r) return false;
        int64_t step = nsp > 0 ? sp[i] : 1, dim = d[a], s = st[i];
        if (step == 0) return false;
        if (s < 0) s += dim;
        if (step > 0) s = s < 0 ? 0 : (s > dim ? dim : s);
        else s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
        si->start[a] = s;
        si->step[a] = step;
    }
    return true;
}

static lt_status e_slice(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    slice_info si;
    if (!slice_params(n, &si)) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad slice parameters");
    int rank = n->in[0]->type.rank;
    lt_lnode *sub[LT_MAX_RANK];
    for (int i = 0; i < rank; i++)
        sub[i] = lt_l_add(K, lt_l_mul(K, idx[i], I(lc, si.step[i])), I(lc, si.start[i]));
    return lt_lower_value(lc, n->in[0], sub, r);
}

static bool accept_slice(const lt_node *n, char *why, size_t size) {
    slice_info si;
    if (!slice_params(n, &si)) {
        snprintf(why, size, "slice parameters are not constants");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* ---- Concat / Split ---- */

static int norm_axis(int64_t a, int rank) { return (int)(a < 0 ? a + rank : a); }

static lt_status e_concat(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int ro;
    int64_t dout[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->out[0], &ro, dout));
    int ax = norm_axis(lt_attr_int(n, "axis", 0), ro);
    /* nested selects from the last input back: idx[ax] < off_i + d_i ? in_i : ... */
    lt_lnode *acc = NULL;
    int64_t offs[64], off = 0;
    for (int i = 0; i < n->n_in && i < 64; i++) {
        offs[i] = off;
        int ri;
        int64_t di[LT_MAX_RANK];
        LT_TRY(need_shape(lc, n, n->in[i], &ri, di));
        off += di[ax];
    }
    for (int i = n->n_in - 1; i >= 0; i--) {
        int ri;
        int64_t di[LT_MAX_RANK];
        LT_TRY(need_shape(lc, n, n->in[i], &ri, di));
        if (di[ax] == 0) continue;
        lt_lnode *sub[LT_MAX_RANK];
        memcpy(sub, idx, sizeof(lt_lnode *) * (size_t)ro);
        sub[ax] = clampi(lc, lt_l_add(K, idx[ax], I(lc, -offs[i])), 0, di[ax] - 1);
        lt_lnode *v;
        LT_TRY(lt_lower_value(lc, n->in[i], sub, &v));
        acc = !acc ? v : lt_l_select(K, bin(lc, LT_LOP_LT, idx[ax], I(lc, offs[i] + di[ax])), v, acc);
        if (!acc) return lt_lower_nomem(lc);
    }
    if (!acc) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "all inputs are empty");
    *r = acc;
    return LT_OK;
}

static bool accept_concat(const lt_node *n, char *why, size_t size) {
    if (n->n_in > 64) {
        snprintf(why, size, "more than 64 inputs");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

static lt_status e_split(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    int ri;
    int64_t di[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &ri, di));
    int ax = norm_axis(lt_attr_int(n, "axis", 0), ri);
    int64_t off = 0;
    for (int j = 0; j < o; j++) {
        int rj;
        int64_t dj[LT_MAX_RANK];
        if (!lt_lower_shape(n->out[j], &rj, dj)) return lt_lower_error(lc, n, LT_ERR_INTERNAL, "output %d has no shape", j);
        off += dj[ax];
    }
    lt_lnode *sub[LT_MAX_RANK];
    memcpy(sub, idx, sizeof(lt_lnode *) * (size_t)ri);
    sub[ax] = lt_l_add(K, idx[ax], I(lc, off));
    return lt_lower_value(lc, n->in[0], sub, r);
}

static bool accept_split(const lt_node *n, char *why, size_t size) {
    for (int i = 0; i < n->n_out; i++)
        if (!n->out[i]) {
            snprintf(why, size, "output %d omitted", i);
            return false;
        }
    return lt_lower_accept_default(n, why, size);
}

/* ---- Gather / GatherElements ---- */

/* An index out of range must be an error, as in the interpreter, never a clamped read. So a
 * Gather- or Scatter-family node compiles only with its indices checked: constants all in range
 * (checked here), a model input (or a view of one), which the plan checks on the host before each
 * run (src/runtime/index_checks.c), or else indices the model computes, which the node's own kernel
 * checks element by element (lt_lower_index_pos), recording a violation in the plan's check word.
 * Constant and model-input indices are clamped all the same, so nothing can read or write out of
 * bounds whatever reaches a kernel. */
static bool index_dtype_ok(const lt_node *n, char *why, size_t size) {
    lt_dtype it = n->in[1]->type.dtype;
    if (it == LT_INT64 || it == LT_INT32) return true;
    snprintf(why, size, "indices of dtype %s", lt_dtype_name(it));
    return false;
}

bool lt_lower_checks_in_kernel(const lt_node *n) { return lt_index_checked_in_kernel(n); }

bool lt_lower_indices_checked(const lt_node *n, char *why, size_t size) {
    if (!index_dtype_ok(n, why, size)) return false;
    lt_index_rule rule;
    if (!lt_index_rule_of(n, &rule)) {
        snprintf(why, size, "indices or data of a shape it cannot index");
        return false;
    }
    const lt_tensor *ind = lt_infer_const(n, 1);
    if (!ind && lt_lower_checks_in_kernel(n) && n->out[0] && lt_lower_numel(n->out[0]) == 0) {
        snprintf(why, size, "an empty output (its kernel would check none of its indices)");
        return false;
    }
    if (!ind) return true; /* a model input: checked by the plan; computed: by the kernel */
    int64_t bad = lt_index_rule_violation(&rule, ind->data, ind->dtype, ind->numel);
    if (bad >= 0) {
        snprintf(why, size, "index %lld out of range (host reports it)", (long long)lt_load_i64(ind->data, ind->dtype, bad));
        return false;
    }
    return true;
}

lt_lnode *lt_lower_index_pos(lt_lctx *lc, const lt_node *n, lt_lnode *iv, int64_t d, lt_lnode *elem) {
    if (!iv) return NULL;
    if (iv->dtype != LT_INT64) iv = lt_l_cast(K, LT_INT64, iv);
    if (!lt_lower_checks_in_kernel(n)) {
        iv = lt_l_select(K, bin(lc, LT_LOP_LT, iv, I(lc, 0)), lt_l_add(K, iv, I(lc, d)), iv);
        return clampi(lc, iv, 0, d - 1);
    }
    if (!lc->status && !(lc->status = lt_kernel_arg(K, "check", LT_INT64, LT_CHECK_WORDS))) return NULL;
    lt_lnode *args[5] = {lt_l_addr(K, lc->status, I(lc, 0)), I(lc, n->index + 1), elem, iv, I(lc, d)};
    for (int i = 0; i < 5; i++)
        if (!args[i]) return NULL;
    return lt_l_call(K, LT_INT64, "lt_check_index", 5, args);
}

static lt_status e_gather(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int rd, rq;
    int64_t dd[LT_MAX_RANK], dq[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &rd, dd));
    LT_TRY(need_shape(lc, n, n->in[1], &rq, dq));
    int ax = norm_axis(lt_attr_int(n, "axis", 0), rd);
    lt_lnode *iv;
    LT_TRY(lt_lower_value(lc, n->in[1], idx + ax, &iv));
    lt_lnode *sub[LT_MAX_RANK];
    for (int i = 0; i < ax; i++) sub[i] = idx[i];
    sub[ax] = lt_lower_index_pos(lc, n, iv, dd[ax], lt_lower_flat(lc, rq, dq, idx + ax));
    for (int i = ax + 1; i < rd; i++) sub[i] = idx[i - 1 + rq];
    if (!sub[ax]) return lt_lower_nomem(lc);
    return lt_lower_value(lc, n->in[0], sub, r);
}

static lt_status e_gather_elements(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int rd, rq;
    int64_t dd[LT_MAX_RANK], dq[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &rd, dd));
    LT_TRY(need_shape(lc, n, n->in[1], &rq, dq));
    int ax = norm_axis(lt_attr_int(n, "axis", 0), rd);
    lt_lnode *iv;
    LT_TRY(lt_lower_value(lc, n->in[1], idx, &iv));
    lt_lnode *sub[LT_MAX_RANK];
    memcpy(sub, idx, sizeof(lt_lnode *) * (size_t)rd);
    sub[ax] = lt_lower_index_pos(lc, n, iv, dd[ax], lt_lower_flat(lc, rq, dq, idx));
    if (!sub[ax]) return lt_lower_nomem(lc);
    return lt_lower_value(lc, n->in[0], sub, r);
}

static bool accept_gather(const lt_node *n, char *why, size_t size) {
    return lt_lower_indices_checked(n, why, size) && lt_lower_accept_default(n, why, size);
}

/* GatherND with indices [.., k] (batch_dims b): output (b.., i.., rest..) reads data at
 * (b.., indices[b.., i.., 0..k-1], rest..); its indices are checked as for Gather. */
static bool accept_gathernd(const lt_node *n, char *why, size_t size) {
    if (n->in[1]->type.rank < 1 || !n->in[1]->type.dims || n->in[1]->type.dims[n->in[1]->type.rank - 1].value < 1) {
        snprintf(why, size, "indices of unknown tuple size");
        return false;
    }
    return lt_lower_indices_checked(n, why, size) && lt_lower_accept_default(n, why, size);
}

static lt_status e_gathernd(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int rd, rq;
    int64_t dd[LT_MAX_RANK], dq[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &rd, dd));
    LT_TRY(need_shape(lc, n, n->in[1], &rq, dq));
    int b = (int)lt_attr_int(n, "batch_dims", 0), k = (int)dq[rq - 1];
    lt_lnode *qi[LT_MAX_RANK], *sub[LT_MAX_RANK];
    for (int i = 0; i < rq - 1; i++) qi[i] = idx[i];
    for (int i = 0; i < b; i++) sub[i] = idx[i];
    for (int j = 0; j < k; j++) {
        lt_lnode *iv;
        qi[rq - 1] = I(lc, j);
        LT_TRY(lt_lower_value(lc, n->in[1], qi, &iv));
        if (!(sub[b + j] = lt_lower_index_pos(lc, n, iv, dd[b + j], lt_lower_flat(lc, rq, dq, qi))))
            return lt_lower_nomem(lc);
    }
    for (int i = b + k; i < rd; i++) sub[i] = idx[rq - 1 + i - (b + k)];
    return lt_lower_value(lc, n->in[0], sub, r);
}

/* ---- Expand, Tile ---- */

static lt_status e_expand(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    return lt_lower_input0(lc, n, 0, idx, r);
}

static lt_status e_tile(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int ri;
    int64_t di[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &ri, di));
    lt_lnode *sub[LT_MAX_RANK];
    for (int i = 0; i < ri; i++) sub[i] = di[i] == 1 ? I(lc, 0) : bin(lc, LT_LOP_MOD, idx[i], I(lc, di[i]));
    return lt_lower_value(lc, n->in[0], sub, r);
}

/* ---- Pad ---- */

typedef struct pad_info {
    int64_t begin[LT_MAX_RANK];
    int mode; /* 0 constant, 1 edge, 2 reflect, 3 wrap */
} pad_info;

static bool pad_params(const lt_node *n, pad_info *pi) {
    int r;
    int64_t d[LT_MAX_RANK], pads[2 * LT_MAX_RANK], axes[LT_MAX_RANK];
    if (!lt_lower_shape(n->in[0], &r, d)) return false;
    int np, na = r;
    if (n->opset < 11) {
        const int64_t *p;
        np = lt_attr_ints(n, "pads", &p);
        if (np > 2 * LT_MAX_RANK) return false;
        memcpy(pads, p, sizeof(int64_t) * (size_t)np);
    } else {
        np = lt_lower_const_ints(n, 1, pads, 2 * LT_MAX_RANK);
    }
    if (n->n_in > 3 && n->in[3]) na = lt_lower_const_ints(n, 3, axes, LT_MAX_RANK);
    else for (int i = 0; i < r; i++) axes[i] = i;
    if (np < 0 || na < 0 || np != 2 * na) return false;
    memset(pi->begin, 0, sizeof pi->begin);
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r) return false;
        pi->begin[a] = pads[i];
    }
    const char *m = lt_attr_string(n, "mode", "constant");
    pi->mode = !strcmp(m, "constant") ? 0 : !strcmp(m, "edge") ? 1 : !strcmp(m, "reflect") ? 2 : !strcmp(m, "wrap") ? 3 : -1;
    return pi->mode >= 0;
}

static lt_status e_pad(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    pad_info pi;
    if (!pad_params(n, &pi)) return lt_lower_error(lc, n, LT_ERR_INVALID, "bad pads");
    int ri;
    int64_t di[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &ri, di));
    int ro;
    int64_t dout[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->out[0], &ro, dout));
    lt_lnode *sub[LT_MAX_RANK], *inside = NULL;
    for (int i = 0; i < ri; i++) {
        lt_lnode *x = lt_l_add(K, idx[i], I(lc, -pi.begin[i]));
        int64_t dim = di[i];
        if (pi.begin[i] == 0 && dout[i] == dim) { /* not padded along this dim */
            sub[i] = idx[i];
            continue;
        }
        switch (pi.mode) {
        case 0: {
            lt_lnode *in = bin(lc, LT_LOP_AND, bin(lc, LT_LOP_GE, x, I(lc, 0)), bin(lc, LT_LOP_LT, x, I(lc, dim)));
            inside = inside ? bin(lc, LT_LOP_AND, inside, in) : in;
            x = clampi(lc, x, 0, dim - 1);
            break;
        }
        case 1: x = clampi(lc, x, 0, dim - 1); break;
        case 2:
            if (pi.begin[i] < 0 || dout[i] - dim - pi.begin[i] < 0) /* reflect about a cropped edge */
                return lt_lower_error(lc, n, LT_ERR_UNSUPPORTED, "reflect padding with negative pads");
            if (dim == 1) x = I(lc, 0);
            else {
                /* reflect once: |x|, then 2(d-1) - x past the end (pads < dim, checked in accept) */
                x = lt_l_select(K, bin(lc, LT_LOP_LT, x, I(lc, 0)), lt_l_unary(K, LT_LOP_NEG, x), x);
                x = lt_l_select(K, bin(lc, LT_LOP_GE, x, I(lc, dim)), lt_l_add(K, I(lc, 2 * (dim - 1)), lt_l_unary(K, LT_LOP_NEG, x)), x);
                x = clampi(lc, x, 0, dim - 1);
            }
            break;
        case 3: { /* wrap: negative pads crop first (as onnxruntime), then ((x % d) + d) % d over the crop */
            int64_t pb = pi.begin[i], pe = dout[i] - dim - pb;
            int64_t cs = pb < 0 ? -pb : 0, dc = dim - cs - (pe < 0 ? -pe : 0);
            if (dc <= 0) return lt_lower_error(lc, n, LT_ERR_UNSUPPORTED, "wrap padding of an empty crop");
            x = lt_l_add(K, idx[i], I(lc, pb > 0 ? -pb : 0));
            x = bin(lc, LT_LOP_MOD, lt_l_add(K, bin(lc, LT_LOP_MOD, x, I(lc, dc)), I(lc, dc)), I(lc, dc));
            x = lt_l_add(K, x, I(lc, cs));
            break;
        }
        }
        sub[i] = x;
        if (!x) return lt_lower_nomem(lc);
    }
    lt_lnode *v;
    LT_TRY(lt_lower_value(lc, n->in[0], sub, &v));
    if (pi.mode == 0 && inside) {
        lt_lnode *cv;
        if (n->opset >= 11 && n->n_in > 2 && n->in[2]) {
            lt_lnode *zero[1] = {I(lc, 0)};
            LT_TRY(lt_lower_value(lc, n->in[2], zero, &cv));
        } else {
            cv = lt_lower_imm(lc, v->dtype, n->opset < 11 ? lt_attr_float(n, "value", 0) : 0);
        }
        v = lt_l_select(K, inside, v, cv);
    }
    *r = v;
    return LT_LNN(lc, v);
}

static bool accept_pad(const lt_node *n, char *why, size_t size) {
    pad_info pi;
    int r;
    int64_t d[LT_MAX_RANK];
    if (!pad_params(n, &pi) || !lt_lower_shape(n->in[0], &r, d)) {
        snprintf(why, size, "pads are not constants");
        return false;
    }
    if (n->opset >= 11 && n->n_in > 2 && n->in[2] && n->in[2]->type.rank > 0 && lt_lower_numel(n->in[2]) != 1) {
        snprintf(why, size, "constant_value is not a scalar");
        return false;
    }
    int ro;
    int64_t dout[LT_MAX_RANK];
    if (!lt_lower_shape(n->out[0], &ro, dout) || ro != r) {
        snprintf(why, size, "output shape unknown");
        return false;
    }
    for (int i = 0; i < r; i++) { /* reflect once, about an uncropped edge: both pads in [0, dim) */
        int64_t end = dout[i] - d[i] - pi.begin[i];
        if (pi.mode == 2 && (pi.begin[i] >= d[i] || pi.begin[i] < 0 || end >= d[i] || end < 0)) {
            snprintf(why, size, "reflect pad wider than the input, or negative");
            return false;
        }
    }
    return lt_lower_accept_default(n, why, size);
}

/* ---- DepthToSpace / SpaceToDepth ---- */

static lt_status e_d2s(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int64_t b = lt_attr_int(n, "blocksize", 1);
    int ro;
    int64_t dout[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->out[0], &ro, dout));
    lt_lnode *hb = bin(lc, LT_LOP_MOD, idx[2], I(lc, b)), *wb = bin(lc, LT_LOP_MOD, idx[3], I(lc, b));
    lt_lnode *sub[4] = {idx[0], NULL, bin(lc, LT_LOP_DIV, idx[2], I(lc, b)), bin(lc, LT_LOP_DIV, idx[3], I(lc, b))};
    lt_lnode *inner = lt_l_add(K, lt_l_mul(K, hb, I(lc, b)), wb);
    if (strcmp(lt_attr_string(n, "mode", "DCR"), "CRD") == 0)
        sub[1] = lt_l_add(K, lt_l_mul(K, idx[1], I(lc, b * b)), inner);
    else
        sub[1] = lt_l_add(K, lt_l_mul(K, inner, I(lc, dout[1])), idx[1]);
    if (!sub[1] || !sub[2] || !sub[3]) return lt_lower_nomem(lc);
    return lt_lower_value(lc, n->in[0], sub, r);
}

static lt_status e_s2d(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int64_t b = lt_attr_int(n, "blocksize", 1);
    int ri;
    int64_t di[LT_MAX_RANK];
    LT_TRY(need_shape(lc, n, n->in[0], &ri, di));
    int64_t C = di[1];
    lt_lnode *c = bin(lc, LT_LOP_MOD, idx[1], I(lc, C));
    lt_lnode *bw = bin(lc, LT_LOP_MOD, bin(lc, LT_LOP_DIV, idx[1], I(lc, C)), I(lc, b));
    lt_lnode *bh = bin(lc, LT_LOP_DIV, idx[1], I(lc, C * b));
    lt_lnode *sub[4] = {idx[0], c, lt_l_add(K, lt_l_mul(K, idx[2], I(lc, b)), bh), lt_l_add(K, lt_l_mul(K, idx[3], I(lc, b)), bw)};
    if (!sub[1] || !sub[2] || !sub[3]) return lt_lower_nomem(lc);
    return lt_lower_value(lc, n->in[0], sub, r);
}

static bool accept_rank4_block(const lt_node *n, char *why, size_t size) {
    if (n->in[0]->type.rank != 4 || lt_attr_int(n, "blocksize", 0) < 1) {
        snprintf(why, size, "needs rank 4 and blocksize >= 1");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

/* ---- Trilu ---- */

static lt_status e_trilu(lt_lctx *lc, const lt_node *n, int o, lt_lnode *const *idx, lt_lnode **r) {
    (void)o;
    int64_t k = 0;
    if (n->n_in > 1 && n->in[1] && lt_lower_const_ints(n, 1, &k, 1) != 1)
        return lt_lower_error(lc, n, LT_ERR_INVALID, "k is not a constant");
    int rank = n->in[0]->type.rank;
    lt_lnode *x;
    LT_TRY(lt_lower_value(lc, n->in[0], idx, &x));
    lt_lnode *diff = lt_l_add(K, idx[rank - 1], lt_l_unary(K, LT_LOP_NEG, idx[rank - 2])); /* j - i */
    bool upper = lt_attr_int(n, "upper", 1) != 0;
    lt_lnode *keep = upper ? bin(lc, LT_LOP_GE, diff, I(lc, k)) : bin(lc, LT_LOP_LE, diff, I(lc, k));
    *r = lt_l_select(K, keep, x, lt_lower_imm(lc, x->dtype, 0));
    return LT_LNN(lc, *r);
}

static bool accept_trilu(const lt_node *n, char *why, size_t size) {
    if (n->in[0]->type.rank < 2) {
        snprintf(why, size, "rank < 2");
        return false;
    }
    return lt_lower_accept_default(n, why, size);
}

const lt_lower_reg lt_lower_injective[] = {
    {LT_OP_Reshape, NULL, e_reshape, NULL, 0, 1u << 1, 0},
    {LT_OP_Flatten, NULL, e_reshape, NULL, 0, 0, 0},
    {LT_OP_Squeeze, NULL, e_reshape, NULL, 0, 1u << 1, 0},
    {LT_OP_Unsqueeze, NULL, e_reshape, NULL, 0, 1u << 1, 0},
    {LT_OP_Transpose, accept_transpose, e_transpose, NULL, 0, 0, 0},
    {LT_OP_Slice, accept_slice, e_slice, NULL, 0x1eu, 0, 0},
    {LT_OP_Concat, accept_concat, e_concat, NULL, 0, 0, 0},
    {LT_OP_Split, accept_split, e_split, NULL, 0, 1u << 1, 0},
    {LT_OP_Gather, accept_gather, e_gather, NULL, 0, 0, 0},
    {LT_OP_GatherElements, accept_gather, e_gather_elements, NULL, 0, 0, 0},
    {LT_OP_GatherND, accept_gathernd, e_gathernd, NULL, 0, 0, 0},
    {LT_OP_Expand, NULL, e_expand, NULL, 0, 1u << 1, 0},
    {LT_OP_Tile, NULL, e_tile, NULL, 0, 1u << 1, 0},
    {LT_OP_Pad, accept_pad, e_pad, NULL, 1u << 1 | 1u << 3, 0, 0},
    {LT_OP_DepthToSpace, accept_rank4_block, e_d2s, NULL, 0, 0, 0},
    {LT_OP_SpaceToDepth, accept_rank4_block, e_s2d, NULL, 0, 0, 0},
    {LT_OP_Trilu, accept_trilu, e_trilu, NULL, 1u << 1, 0, 0},
    {0},
};
