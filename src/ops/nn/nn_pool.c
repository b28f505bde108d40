/* nn_pool.c — pooling: AveragePool, MaxPool (values and Indices), LpPool, GlobalAveragePool,
 * GlobalMaxPool, GlobalLpPool, MaxUnpool.
 *
 * Windows follow nn_geom (i = o*s - pb + kk*d). Per output position the valid kernel range of each
 * dim is computed once, so the window loop touches only in-bounds elements. AveragePool divides by the
 * in-bounds count, or with count_include_pad by the count inside the explicitly padded input (never
 * the extra ceil_mode region). LpPool treats padding as zeros. MaxPool's Indices are flat offsets into
 * X (row-major spatial, or column-major with storage_order=1); ties keep the first maximum. Values are
 * computed in double and rounded once to the output dtype. */
#include "nn_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum pool_kind { POOL_AVG, POOL_MAX, POOL_LP } pool_kind;

static bool pool_dtype_ok(pool_kind k, lt_dtype dt) {
    if (nn_is_float(dt)) return true;
    return k == POOL_MAX && (dt == LT_INT8 || dt == LT_UINT8);
}

/* p attribute: a float in opset-1 LpPool/GlobalLpPool, an int later. */
static double attr_p(const lt_node *n) {
    const lt_attr *a = lt_node_attr(n, "p");
    if (!a) return 2.0;
    return a->type == LT_AT_FLOAT ? (double)a->f : (double)a->i;
}

static lt_status pool_compute(lt_eval *ev, const lt_node *n, const lt_tensor *x, pool_kind kind, const nn_geom *g,
                              bool include_pad, double p, bool col_major, lt_tensor *y, lt_tensor *ind) {
    int nsp = g->nsp;
    /* rst: row-major strides for reading x; ist: the strides Indices report (column-major with
     * storage_order 1) */
    int64_t planes = x->dims[0] * x->dims[1], Pin = 1, P = 1, rst[NN_MAX_SP], ist[NN_MAX_SP];
    for (int d = nsp - 1; d >= 0; d--) {
        rst[d] = Pin;
        Pin *= g->in[d];
        P *= g->out[d];
    }
    int64_t cs = 1;
    for (int d = 0; d < nsp; d++) {
        ist[d] = col_major ? cs : rst[d];
        cs *= g->in[d];
    }
    double *xd = NULL, *yd = NULL;
    LT_TRY(nn_f64_copy(ev, n, x, &xd));
    if (!(yd = nn_alloc(ev, n, y->numel, sizeof(double), "the output"))) {
        lt_mem_free(xd);
        return LT_ERR_NOMEM;
    }
    int64_t *idx = ind ? ind->data : NULL;
    for (int64_t pl = 0; pl < planes; pl++) {
        const double *xp = xd + pl * Pin;
        int64_t o[NN_MAX_SP] = {0};
        for (int64_t op = 0; op < P; op++) {
            int64_t lo[NN_MAX_SP], hi[NN_MAX_SP], base[NN_MAX_SP], kk[NN_MAX_SP], nvalid = 1;
            double npad = 1; /* the window inside the padding: may pass int64 (a 2^62 kernel) */
            for (int d = 0; d < nsp; d++) {
                int64_t b = o[d] * g->s[d] - g->pb[d], dd = g->d[d];
                int64_t l = b >= 0 ? 0 : (-b + dd - 1) / dd;
                int64_t h = g->in[d] - 1 - b >= 0 ? (g->in[d] - 1 - b) / dd + 1 : 0;
                /* taps from the window's start to the end of the padding, in + pe - b: past int64
                 * (a kernel near 2^63 and its SAME padding) it is more than any kernel's taps */
                int64_t rem, ph = g->k[d];
                if (lt_add_i64(g->in[d], g->pe[d], &rem) && lt_add_i64(rem, -b, &rem)) ph = rem > 0 ? (rem - 1) / dd + 1 : 0;
                if (h > g->k[d]) h = g->k[d];
                if (ph > g->k[d]) ph = g->k[d];
                if (l > h) l = h;
                lo[d] = l;
                hi[d] = h;
                base[d] = b;
                kk[d] = l;
                nvalid *= h - l;
                npad *= (double)ph;
            }
            double acc = kind == POOL_MAX ? -INFINITY : 0.0;
            int64_t best = -1;
            if (nvalid > 0) {
                for (;;) {
                    int64_t off = 0, sto = 0;
                    for (int d = 0; d < nsp; d++) {
                        int64_t ii = base[d] + kk[d] * g->d[d];
                        off += ii * rst[d];
                        sto += ii * ist[d];
                    }
                    double v = xp[off];
                    if (kind == POOL_MAX) { /* a NaN in the window is the max (the first one), as in max() */
                        if (best < 0 || v > acc || (v != v && acc == acc)) {
                            acc = v;
                            best = sto;
                        }
                    } else if (kind == POOL_AVG) {
                        acc += v;
                    } else {
                        acc += pow(fabs(v), p);
                    }
                    int d = nsp - 1;
                    for (; d >= 0; d--) {
                        if (++kk[d] < hi[d]) break;
                        kk[d] = lo[d];
                    }
                    if (d < 0) break;
                }
            }
            double r = acc;
            if (kind == POOL_AVG) r = acc / (include_pad ? npad : (double)nvalid);
            else if (kind == POOL_LP) r = pow(acc, 1.0 / p);
            yd[pl * P + op] = r;
            if (idx) idx[pl * P + op] = best >= 0 ? pl * Pin + best : -1;
            for (int d = nsp - 1; d >= 0; d--) {
                if (++o[d] < g->out[d]) break;
                o[d] = 0;
            }
        }
    }
    nn_store_f64(y, yd);
    lt_mem_free(xd);
    lt_mem_free(yd);
    return LT_OK;
}

/* The rules of the windowed pools on X [N, C, in...] (rank xr, dims -1 when unknown): rank, window
 * geometry (nn_geom_init: kernel_shape required, pads smaller than the kernel, output sizes >= 1),
 * storage_order, p. Shape inference and eval both call it, so every backend reports the same error. */
static lt_status pool_check(lt_ctx *ctx, const lt_node *n, pool_kind kind, int xr, const int64_t *xd, nn_geom *g) {
    if (xr < 3) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 3, got %d", xr);
    char err[256];
    if (!nn_geom_init(n, xr - 2, xd + 2, NULL, true, g, err, sizeof err))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s", err);
    int64_t so = lt_attr_int(n, "storage_order", 0);
    if (so != 0 && so != 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "storage_order must be 0 or 1");
    if (kind == POOL_LP && !(attr_p(n) > 0)) return lt_node_error(ctx, n, LT_ERR_INVALID, "p must be positive");
    return LT_OK;
}

static lt_status pool_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out, pool_kind kind) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (!pool_dtype_ok(kind, x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(x->dtype));
    nn_geom g;
    LT_TRY(pool_check(ev->ctx, n, kind, x->rank, x->dims, &g));
    int64_t dims[LT_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int i = 0; i < g.nsp; i++) dims[2 + i] = g.out[i];
    lt_tensor *y, *ind = NULL;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, dims, &y));
    if (kind == POOL_MAX && n->n_out > 1) {
        LT_TRY(lt_out_new(ev, n, out, 1, LT_INT64, x->rank, dims, &ind));
    }
    bool col_major = lt_attr_int(n, "storage_order", 0) == 1;
    bool include_pad = lt_attr_int(n, "count_include_pad", 0) != 0;
    return pool_compute(ev, n, x, kind, &g, include_pad, attr_p(n), col_major, y, ind);
}

static lt_status pool_infer(lt_infer *ic, lt_node *n, pool_kind kind) {
    lt_dtype dt = nn_in_dtype(n, 0);
    bool indices = kind == POOL_MAX;
    int xr;
    int64_t xd[LT_MAX_RANK];
    if (!nn_in_shape(n, 0, &xr, xd)) {
        LT_TRY(lt_infer_set(ic, n, 0, dt, -1, NULL));
        return indices ? lt_infer_set(ic, n, 1, LT_INT64, -1, NULL) : LT_OK;
    }
    nn_geom g;
    LT_TRY(pool_check(ic->ctx, n, kind, xr, xd, &g));
    int64_t od[LT_MAX_RANK];
    od[0] = xd[0];
    od[1] = xd[1];
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[i];
    lt_dim s0 = nn_in_dim(n, 0, 0), s1 = nn_in_dim(n, 0, 1);
    LT_TRY(nn_infer_out(ic, n, 0, dt, xr, od, s0, s1));
    return indices ? nn_infer_out(ic, n, 1, LT_INT64, xr, od, s0, s1) : LT_OK;
}

lt_status nn_eval_AveragePool(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    return pool_eval(ev, n, in, out, POOL_AVG);
}
lt_status nn_eval_MaxPool(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    return pool_eval(ev, n, in, out, POOL_MAX);
}
lt_status nn_eval_LpPool(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    return pool_eval(ev, n, in, out, POOL_LP);
}
lt_status nn_infer_AveragePool(lt_infer *ic, lt_node *n) { return pool_infer(ic, n, POOL_AVG); }
lt_status nn_infer_MaxPool(lt_infer *ic, lt_node *n) { return pool_infer(ic, n, POOL_MAX); }
lt_status nn_infer_LpPool(lt_infer *ic, lt_node *n) { return pool_infer(ic, n, POOL_LP); }

/* ---- global pools ---- */

static pool_kind global_kind(const lt_node *n) {
    return n->op == LT_OP_GlobalMaxPool ? POOL_MAX : n->op == LT_OP_GlobalLpPool ? POOL_LP : POOL_AVG;
}

/* The rules of the global pools on X [N, C, ...] (rank xr): shared by shape inference and eval. */
static lt_status global_check(lt_ctx *ctx, const lt_node *n, int xr) {
    if (xr < 2) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must have rank >= 2, got %d", xr);
    if (global_kind(n) == POOL_LP && !(attr_p(n) > 0)) return lt_node_error(ctx, n, LT_ERR_INVALID, "p must be positive");
    return LT_OK;
}

lt_status nn_eval_GlobalPool(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (!nn_is_float(x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(x->dtype));
    LT_TRY(global_check(ev->ctx, n, x->rank));
    pool_kind kind = global_kind(n);
    double p = attr_p(n);
    int64_t dims[LT_MAX_RANK], P = 1, planes = x->dims[0] * x->dims[1];
    for (int i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
        if (i >= 2) P *= x->dims[i];
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, dims, &y));
    double *xd, *yd;
    LT_TRY(nn_f64_copy(ev, n, x, &xd));
    if (!(yd = nn_alloc(ev, n, planes, sizeof(double), "the output"))) {
        lt_mem_free(xd);
        return LT_ERR_NOMEM;
    }
    for (int64_t pl = 0; pl < planes; pl++) {
        const double *v = xd + pl * P;
        double acc = kind == POOL_MAX ? -INFINITY : 0.0;
        for (int64_t i = 0; i < P; i++) {
            if (kind == POOL_MAX) {
                if (i == 0 || v[i] > acc) acc = v[i];
            } else if (kind == POOL_AVG) {
                acc += v[i];
            } else {
                acc += pow(fabs(v[i]), p);
            }
        }
        yd[pl] = kind == POOL_AVG ? acc / (double)P : kind == POOL_LP ? pow(acc, 1.0 / p) : acc;
    }
    nn_store_f64(y, yd);
    lt_mem_free(xd);
    lt_mem_free(yd);
    return LT_OK;
}

lt_status nn_infer_GlobalPool(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    int xr;
    int64_t xd[LT_MAX_RANK];
    if (!nn_in_shape(n, 0, &xr, xd)) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    LT_TRY(global_check(ic->ctx, n, xr));
    for (int i = 2; i < xr; i++) xd[i] = 1;
    return nn_infer_out(ic, n, 0, dt, xr, xd, nn_in_dim(n, 0, 0), nn_in_dim(n, 0, 1));
}

/* ---- MaxUnpool ---- */

/* The unpooled shape from X's shape and the attributes (dims -1 where unknown). */
static bool unpool_shape(const lt_node *n, int rank, const int64_t *xd, int64_t *od, char *err, size_t errn) {
    nn_geom g;
    int nsp = rank - 2;
    if (!nn_geom_attrs(n, nsp, &g, err, errn)) return false;
    const int64_t *ks;
    int kc = lt_attr_ints(n, "kernel_shape", &ks);
    if (!ks || kc != nsp) {
        snprintf(err, errn, "kernel_shape must have %d entries", nsp);
        return false;
    }
    od[0] = xd[0];
    od[1] = xd[1];
    for (int i = 0; i < nsp; i++) {
        int64_t v;
        if (ks[i] < 1) {
            snprintf(err, errn, "kernel_shape[%d] must be >= 1", i);
            return false;
        }
        if (xd[2 + i] < 0) {
            od[2 + i] = -1;
            continue;
        }
        if (xd[2 + i] < 1 || !lt_mul_i64(xd[2 + i] - 1, g.s[i], &v) || !lt_add_i64(v, ks[i] - g.pb[i] - g.pe[i], &v) ||
            v < 0) {
            snprintf(err, errn, "invalid unpooled size in spatial dim %d", i);
            return false;
        }
        od[2 + i] = v;
    }
    return true;
}

lt_status nn_eval_MaxUnpool(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ix, *os;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ix));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &os));
    if (x->rank < 3 || x->rank - 2 > NN_MAX_SP)
        return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 3, got %d", x->rank);
    if (x->dtype == LT_STRING) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype string");
    if (ix->numel != x->numel || !lt_dtype_is_int(ix->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "indices must be an integer tensor shaped like X");
    int64_t inf[LT_MAX_RANK], od[LT_MAX_RANK];
    char err[256];
    if (!unpool_shape(n, x->rank, x->dims, inf, err, sizeof err)) return lt_op_error(ev, n, LT_ERR_INVALID, "%s", err);
    memcpy(od, inf, sizeof(int64_t) * (size_t)x->rank);
    if (os) {
        int cnt;
        LT_TRY(lt_tensor_ints(ev, n, os, od, LT_MAX_RANK, &cnt));
        if (cnt != x->rank)
            return lt_op_error(ev, n, LT_ERR_INVALID, "output_shape has %d entries, expected %d", cnt, x->rank);
        for (int i = 0; i < cnt; i++)
            if (od[i] < inf[i])
                return lt_op_error(ev, n, LT_ERR_INVALID, "output_shape[%d] = %lld is smaller than the unpooled size %lld",
                                   i, (long long)od[i], (long long)inf[i]);
    }
    int64_t total;
    if (!lt_prod_i64(inf, x->rank, &total)) return lt_op_error(ev, n, LT_ERR_INVALID, "unpooled shape overflows");
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, od, &y));
    size_t es = (size_t)lt_dtype_size(x->dtype);
    /* scatter into the unpooled shape (inf), then place it at the origin of the output shape */
    int64_t ost[LT_MAX_RANK], ist[LT_MAX_RANK];
    {
        int64_t a = 1, b = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            ost[d] = a;
            ist[d] = b;
            a *= od[d];
            b *= inf[d];
        }
    }
    for (int64_t e = 0; e < x->numel; e++) {
        int64_t k = lt_load_i64(ix->data, ix->dtype, e);
        if (k < 0 || k >= total)
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at element %lld", (long long)k,
                               (long long)total, (long long)e);
        int64_t off = 0, rem = k;
        for (int d = 0; d < x->rank; d++) {
            off += (rem / ist[d]) * ost[d];
            rem %= ist[d];
        }
        memcpy((char *)y->data + (size_t)off * es, (const char *)x->data + (size_t)e * es, es);
    }
    return LT_OK;
}

lt_status nn_infer_MaxUnpool(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    int64_t od[LT_MAX_RANK], xd[LT_MAX_RANK];
    int cnt, xr;
    if (n->n_in > 2 && n->in[2]) {
        if (nn_const_ints(n, 2, od, LT_MAX_RANK, &cnt)) return lt_infer_set_i64(ic, n, 0, dt, cnt, od);
        if (nn_in_shape(n, 0, &xr, xd)) return lt_infer_set(ic, n, 0, dt, xr, NULL);
        return lt_infer_set(ic, n, 0, dt, -1, NULL);
    }
    if (!nn_in_shape(n, 0, &xr, xd) || xr < 3) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    char err[256];
    if (!unpool_shape(n, xr, xd, od, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    return nn_infer_out(ic, n, 0, dt, xr, od, nn_in_dim(n, 0, 0), nn_in_dim(n, 0, 1));
}
