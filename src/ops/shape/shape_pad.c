/* shape_pad.c — the shape family's window and block ops: Pad, CenterCropPad, Slice, DepthToSpace,
 * SpaceToDepth, ReverseSequence (hooks registered by shape.c through shape_impl.h).
 *
 * Pad maps each output coordinate, axis by axis, to a source coordinate (or to the constant): a
 * negative pad first crops that side, then the modes reflect / edge / wrap read inside the cropped
 * window. Slice clamps starts and ends exactly as the ONNX spec says and then is one strided copy;
 * DepthToSpace / SpaceToDepth are a rank-6 strided copy (a transpose of a reshape).
 */
#include "shape_impl.h"

#include <string.h>

/* ======================================================================== Pad */
typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

/* Pads per axis (begin[], end[]) from the pads tensor pt (input 1 from opset 11; attribute before)
 * and the axes tensor at (input 3 from opset 18; NULL: omitted). */
static lt_status pad_amounts(lt_ctx *ctx, const lt_node *n, const lt_tensor *pt, const lt_tensor *at, int rank,
                             int64_t *pb, int64_t *pe) {
    int64_t pads[2 * LT_MAX_RANK], axes[LT_MAX_RANK];
    int np, na;
    bool present;
    if (n->opset >= 11) {
        LT_TRY(lt_shp_list(ctx, n, pt, 1, NULL, pads, 2 * LT_MAX_RANK, &np, &present));
    } else {
        LT_TRY(lt_shp_list(ctx, n, NULL, -1, n->opset < 2 ? "paddings" : "pads", pads, 2 * LT_MAX_RANK, &np, &present));
    }
    if (!present) return lt_node_error(ctx, n, LT_ERR_INVALID, "Pad needs pads");
    LT_TRY(lt_shp_list(ctx, n, n->opset >= 18 ? at : NULL, n->opset >= 18 ? 3 : -1, NULL, axes, LT_MAX_RANK, &na,
                       &present));
    if (present) {
        LT_TRY(lt_shp_axes(ctx, n, axes, na, rank));
    } else {
        na = rank;
        for (int i = 0; i < rank; i++) axes[i] = i;
    }
    if (np != 2 * na) return lt_node_error(ctx, n, LT_ERR_INVALID, "pads has %d entries, expected %d", np, 2 * na);
    for (int i = 0; i < rank; i++) pb[i] = pe[i] = 0;
    for (int i = 0; i < na; i++) {
        pb[axes[i]] = pads[i];
        pe[axes[i]] = pads[na + i];
    }
    return LT_OK;
}

static lt_status pad_mode_of(lt_ctx *ctx, const lt_node *n, pad_mode *m) {
    const char *s = lt_attr_string(n, "mode", "constant");
    if (strcmp(s, "constant") == 0) *m = PAD_CONSTANT;
    else if (strcmp(s, "reflect") == 0) *m = PAD_REFLECT;
    else if (strcmp(s, "edge") == 0) *m = PAD_EDGE;
    else if (strcmp(s, "wrap") == 0 && n->opset >= 19) *m = PAD_WRAP;
    else return lt_node_error(ctx, n, LT_ERR_INVALID, "unknown pad mode '%s'", s);
    return LT_OK;
}

/* Output dims of Pad and the window of each input axis that survives cropping (lo, w; before =
 * elements padded in front): the rules of both hooks. xd < 0 is unknown (infer): d is -1 there. */
static lt_status pad_dims(lt_ctx *ctx, const lt_node *n, const lt_tensor *pt, const lt_tensor *at, int r,
                          const int64_t *xd, pad_mode *mode, int64_t *d, int64_t *lo, int64_t *w, int64_t *before) {
    int64_t pb[LT_MAX_RANK], pe[LT_MAX_RANK];
    LT_TRY(pad_amounts(ctx, n, pt, at, r, pb, pe));
    LT_TRY(pad_mode_of(ctx, n, mode));
    bool known = true;
    for (int i = 0; i < r; i++) {
        if (pb[i] == INT64_MIN || pe[i] == INT64_MIN)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "invalid pad on axis %d", i);
        int64_t cb = pb[i] < 0 ? -pb[i] : 0, ce = pe[i] < 0 ? -pe[i] : 0;
        before[i] = pb[i] > 0 ? pb[i] : 0;
        lo[i] = cb;
        if (xd[i] < 0) {
            d[i] = w[i] = -1;
            known = false;
            continue;
        }
        if (cb > xd[i] || ce > xd[i] - cb)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "negative pads remove more than axis %d holds", i);
        w[i] = xd[i] - cb - ce;
        int64_t after = pe[i] > 0 ? pe[i] : 0;
        if (!lt_add_i64(w[i], before[i], &d[i]) || !lt_add_i64(d[i], after, &d[i]))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "padded size overflows on axis %d", i);
        if (*mode != PAD_CONSTANT && w[i] == 0 && d[i] > 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "cannot pad an empty axis %d in this mode", i);
    }
    int64_t numel;
    return known ? lt_shp_numel(ctx, n, "output", r, d, &numel) : LT_OK;
}

/* The constant_value input (opset >= 11; vr < 0: omitted): one element (an empty one counts as
 * omitted) of the data's dtype (UNDEFINED: unknown). */
static lt_status pad_value_check(lt_ctx *ctx, const lt_node *n, int vr, const int64_t *vd, lt_dtype vdt,
                                 lt_dtype xdt) {
    if (vr < 0) return LT_OK;
    int64_t numel = 1;
    for (int i = 0; i < vr; i++)
        if (!lt_mul_i64(numel, vd[i], &numel)) numel = INT64_MAX;
    if (numel == 0) return LT_OK;
    if (numel != 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "constant_value must be a scalar");
    if (vdt != LT_UNDEFINED && xdt != LT_UNDEFINED && vdt != xdt)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "constant_value is %s, data is %s", lt_dtype_name(vdt),
                             lt_dtype_name(xdt));
    return LT_OK;
}

/* Map output coordinate o to the source (-1: constant). The window [lo, lo+w) of the source axis
 * survives cropping; `before` elements are padded in front of it. */
static int64_t pad_map(pad_mode m, int64_t o, int64_t before, int64_t lo, int64_t w) {
    int64_t i = o - before;
    if (i >= 0 && i < w) return lo + i;
    switch (m) {
    case PAD_CONSTANT: return -1;
    case PAD_EDGE: return lo + (i < 0 ? 0 : w - 1);
    case PAD_WRAP: {
        int64_t r = i % w;
        return lo + (r < 0 ? r + w : r);
    }
    case PAD_REFLECT: {
        if (w == 1) return lo;
        int64_t period = 2 * (w - 1), r = i % period;
        if (r < 0) r += period;
        return lo + (r < w ? r : period - r);
    }
    }
    return -1;
}

lt_status lt_shp_eval_Pad(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *cv = NULL, *pt = NULL, *at = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (n->opset >= 11) LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &pt));
    if (n->opset >= 18) LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &at));
    int r = x->rank;
    int64_t d[LT_MAX_RANK], lo[LT_MAX_RANK], w[LT_MAX_RANK], before[LT_MAX_RANK];
    pad_mode mode = PAD_CONSTANT;
    LT_TRY(pad_dims(ev->ctx, n, pt, at, r, x->dims, &mode, d, lo, w, before));
    /* The constant: input (opset >= 11) or float attribute 'value'. */
    lt_tensor *tmp = NULL;
    if (n->opset >= 11) {
        LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &cv));
        if (cv) LT_TRY(pad_value_check(ev->ctx, n, cv->rank, cv->dims, cv->dtype, x->dtype));
        if (cv && cv->numel == 0) cv = NULL;
    } else if (x->dtype != LT_STRING) {
        float v = lt_attr_float(n, "value", 0.0f);
        if (v != 0) {
            LT_TRY(lt_tensor_scalar_f64(ev->ctx, x->dtype, v, &tmp));
            cv = tmp;
        }
    }
    lt_tensor *y;
    lt_status s = lt_out_new(ev, n, out, 0, x->dtype, r, d, &y);
    if (s == LT_OK && cv && mode == PAD_CONSTANT) s = lt_shp_fill(ev->ctx, y, 0, y->numel, cv, 0);
    lt_tensor_release(tmp);
    LT_TRY(s);
    if (y->numel == 0) return LT_OK;
    if (r == 0) return lt_shp_copy(ev->ctx, y, 0, x, 0, 1);
    /* Per-axis maps from output to source coordinates. */
    int64_t total = 0, xs[LT_MAX_RANK];
    for (int i = 0; i < r; i++) total += d[i];
    int64_t *map = lt_alloc(ev->ctx, (size_t)total * sizeof *map, "pad maps");
    if (!map) return LT_ERR_NOMEM;
    int64_t *mp[LT_MAX_RANK], *cur = map;
    for (int i = 0; i < r; i++) {
        mp[i] = cur;
        cur += d[i];
        for (int64_t o = 0; o < d[i]; o++) mp[i][o] = pad_map(mode, o, before[i], lo[i], w[i]);
    }
    lt_shp_strides(r, x->dims, xs);
    int64_t idx[LT_MAX_RANK] = {0}, last = d[r - 1], row = 0;
    do {
        int64_t base = 0;
        bool constant = false;
        for (int i = 0; i < r - 1 && !constant; i++) {
            if (mp[i][idx[i]] < 0) constant = true;
            else base += mp[i][idx[i]] * xs[i];
        }
        if (!constant)
            for (int64_t j = 0; j < last && s == LT_OK; j++)
                if (mp[r - 1][j] >= 0) s = lt_shp_copy(ev->ctx, y, row * last + j, x, base + mp[r - 1][j], 1);
        row++;
    } while (s == LT_OK && lt_index_next(r - 1, d, idx));
    lt_mem_free(map);
    return s;
}

lt_status lt_shp_infer_Pad(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    const lt_tensor *pt = NULL, *at = NULL;
    int vr = -1;
    int64_t vd[LT_MAX_RANK];
    if (n->opset >= 11 && n->n_in > 2 && n->in[2]) {
        if (!lt_shp_infer_static(n, 2, &vr, vd)) return lt_infer_set(ic, n, 0, dt, t->rank, NULL);
        LT_TRY(pad_value_check(ic->ctx, n, vr, vd, lt_shp_infer_dtype(n, 2), dt));
    }
    bool known = (n->opset < 11 || lt_shp_infer_const_opt(n, 1, &pt)) && (n->opset < 18 || lt_shp_infer_const_opt(n, 3, &at));
    if (!known) return lt_infer_set(ic, n, 0, dt, t->rank, NULL);
    int64_t xd[LT_MAX_RANK], d[LT_MAX_RANK], lo[LT_MAX_RANK], w[LT_MAX_RANK], before[LT_MAX_RANK];
    int64_t pb[LT_MAX_RANK], pe[LT_MAX_RANK];
    pad_mode mode;
    for (int i = 0; i < t->rank; i++) xd[i] = lt_shp_dim(t, i).value;
    LT_TRY(pad_dims(ic->ctx, n, pt, at, t->rank, xd, &mode, d, lo, w, before));
    LT_TRY(pad_amounts(ic->ctx, n, pt, at, t->rank, pb, pe));
    lt_dim od[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) /* an axis with no pads keeps its dim, symbolic or not */
        od[i] = pb[i] == 0 && pe[i] == 0 ? lt_shp_dim(t, i) : (lt_dim){d[i], NULL};
    return lt_infer_set(ic, n, 0, dt, t->rank, od);
}

/* ======================================================================== CenterCropPad */
static lt_status ccp_targets(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *st, int64_t *tgt) {
    int64_t sh[LT_MAX_RANK], axes[LT_MAX_RANK];
    int ns, na = x->rank;
    if (st->rank != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "shape must be 1-D");
    LT_TRY(lt_tensor_ints(ev, n, st, sh, LT_MAX_RANK, &ns));
    const int64_t *aa;
    int naa = lt_attr_ints(n, "axes", &aa);
    if (aa) {
        if (naa > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_INVALID, "too many axes");
        na = naa;
        memcpy(axes, aa, (size_t)na * sizeof *axes);
        LT_TRY(lt_shp_norm_axes(ev, n, axes, na, x->rank));
    } else {
        for (int i = 0; i < na; i++) axes[i] = i;
    }
    if (ns != na) return lt_op_error(ev, n, LT_ERR_INVALID, "shape has %d entries for %d axes", ns, na);
    memcpy(tgt, x->dims, sizeof(int64_t) * (size_t)x->rank);
    for (int i = 0; i < na; i++) {
        if (sh[i] < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "negative target size %lld", (long long)sh[i]);
        tgt[axes[i]] = sh[i];
    }
    return LT_OK;
}

lt_status lt_shp_eval_CenterCropPad(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *st;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &st));
    int r = x->rank;
    int64_t d[LT_MAX_RANK], xs[LT_MAX_RANK], ys[LT_MAX_RANK], reg[LT_MAX_RANK], soff = 0, doff = 0;
    LT_TRY(ccp_targets(ev, n, x, st, d));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    lt_shp_strides(r, x->dims, xs);
    lt_shp_strides(r, d, ys);
    for (int i = 0; i < r; i++) {
        if (d[i] <= x->dims[i]) { /* crop: window starts at floor((dim - target) / 2) */
            reg[i] = d[i];
            soff += (x->dims[i] - d[i]) / 2 * xs[i];
        } else { /* pad: the extra odd element goes to the end */
            reg[i] = x->dims[i];
            doff += (d[i] - x->dims[i]) / 2 * ys[i];
        }
    }
    return lt_shp_strided_copy(ev->ctx, y, doff, ys, x, soff, xs, r, reg);
}

lt_status lt_shp_infer_CenterCropPad(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int64_t sh[LT_MAX_RANK];
    int ns;
    const int64_t *aa;
    int na = lt_attr_ints(n, "axes", &aa);
    if (!aa) na = t->rank;
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, i);
    bool known = lt_shp_infer_ints(n, 1, NULL, sh, LT_MAX_RANK, &ns) && ns == na;
    for (int i = 0; i < na; i++) {
        int64_t a = aa ? (aa[i] < 0 ? aa[i] + t->rank : aa[i]) : i;
        if (a < 0 || a >= t->rank) return lt_infer_error(ic, n, "axis %lld is out of range", (long long)a);
        d[a] = (lt_dim){known && sh[i] >= 0 ? sh[i] : -1, NULL};
    }
    return lt_infer_set(ic, n, 0, dt, t->rank, d);
}

/* ======================================================================== Slice */
/* Clamp one axis's start/end/step per the spec; *count elements, first at *start. */
static void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first, int64_t *count) {
    if (step == INT64_MIN) step = -INT64_MAX;
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    *first = 0;
    *count = 0;
    if (dim == 0) return;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        if (end > start) *count = (end - start - 1) / step + 1;
    } else {
        start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        if (start > end) *count = (start - end - 1) / -step + 1;
    }
    *first = start;
}

typedef struct slice_args {
    int64_t starts[LT_MAX_RANK], ends[LT_MAX_RANK], axes[LT_MAX_RANK], steps[LT_MAX_RANK];
    int n;
} slice_args;

/* Slice's starts, ends, axes, steps from the tensors t[0..4) (inputs 1..4 from opset 10; NULL:
 * omitted) or the attributes (before): the rules of both hooks. */
static lt_status slice_read(lt_ctx *ctx, const lt_node *n, const lt_tensor *const *t, int rank, slice_args *a) {
    bool p1, p2, p3, p4 = false;
    int c1, c2, c3 = 0, c4 = 0;
    bool old = n->opset < 10;
    LT_TRY(lt_shp_list(ctx, n, old ? NULL : t[0], old ? -1 : 1, old ? "starts" : NULL, a->starts, LT_MAX_RANK, &c1, &p1));
    LT_TRY(lt_shp_list(ctx, n, old ? NULL : t[1], old ? -1 : 2, old ? "ends" : NULL, a->ends, LT_MAX_RANK, &c2, &p2));
    LT_TRY(lt_shp_list(ctx, n, old ? NULL : t[2], old ? -1 : 3, old ? "axes" : NULL, a->axes, LT_MAX_RANK, &c3, &p3));
    if (!old) LT_TRY(lt_shp_list(ctx, n, t[3], 4, NULL, a->steps, LT_MAX_RANK, &c4, &p4));
    if (!p1 || !p2) return lt_node_error(ctx, n, LT_ERR_INVALID, "Slice needs starts and ends");
    if (c1 != c2) return lt_node_error(ctx, n, LT_ERR_INVALID, "starts has %d entries, ends %d", c1, c2);
    if (p3 && c3 != c1) return lt_node_error(ctx, n, LT_ERR_INVALID, "axes has %d entries, starts %d", c3, c1);
    if (p4 && c4 != c1) return lt_node_error(ctx, n, LT_ERR_INVALID, "steps has %d entries, starts %d", c4, c1);
    a->n = c1;
    for (int i = 0; i < c1; i++) {
        if (!p3) a->axes[i] = i;
        if (!p4) a->steps[i] = 1;
        if (a->steps[i] == 0) return lt_node_error(ctx, n, LT_ERR_INVALID, "step on axis %d is zero", i);
    }
    return lt_shp_axes(ctx, n, a->axes, c1, rank);
}

lt_status lt_shp_eval_Slice(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *t[4] = {NULL, NULL, NULL, NULL};
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (n->opset >= 10)
        for (int i = 0; i < 4; i++) LT_TRY(lt_in_tensor_opt(ev, n, in, i + 1, &t[i]));
    slice_args a;
    LT_TRY(slice_read(ev->ctx, n, t, x->rank, &a));
    int r = x->rank;
    int64_t d[LT_MAX_RANK], xs[LT_MAX_RANK], ss[LT_MAX_RANK], ds[LT_MAX_RANK], soff = 0;
    lt_shp_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        d[i] = x->dims[i];
        ss[i] = xs[i];
    }
    for (int k = 0; k < a.n; k++) {
        int ax = (int)a.axes[k];
        int64_t first, cnt;
        slice_axis(x->dims[ax], a.starts[k], a.ends[k], a.steps[k], &first, &cnt);
        d[ax] = cnt;
        soff += first * xs[ax];
        ss[ax] = cnt > 1 ? a.steps[k] * xs[ax] : xs[ax]; /* |step| < dim when cnt > 1 */
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, d, &y));
    if (y->numel == 0) return LT_OK;
    lt_shp_strides(r, d, ds);
    return lt_shp_strided_copy(ev->ctx, y, 0, ds, x, soff, ss, r, d);
}

lt_status lt_shp_infer_Slice(lt_infer *ic, lt_node *n) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    bool old = n->opset < 10;
    const lt_tensor *ct[4] = {NULL, NULL, NULL, NULL};
    bool known = true;
    if (!old)
        for (int i = 0; i < 4; i++) known = lt_shp_infer_const_opt(n, i + 1, &ct[i]) && known;
    lt_dim d[LT_MAX_RANK];
    for (int i = 0; i < t->rank; i++) d[i] = lt_shp_dim(t, i);
    if (!known) {
        /* Axes known but not the bounds: those axes become unknown. */
        int64_t ax[LT_MAX_RANK];
        int c3;
        if (n->n_in > 3 && n->in[3] && lt_shp_infer_ints(n, 3, NULL, ax, LT_MAX_RANK, &c3)) {
            for (int i = 0; i < c3; i++) {
                int64_t a = ax[i] < 0 ? ax[i] + t->rank : ax[i];
                if (a >= 0 && a < t->rank) d[a] = (lt_dim){-1, NULL};
            }
            return lt_infer_set(ic, n, 0, dt, t->rank, d);
        }
        return lt_infer_set(ic, n, 0, dt, t->rank, NULL);
    }
    slice_args a;
    LT_TRY(slice_read(ic->ctx, n, ct, t->rank, &a));
    for (int k = 0; k < a.n; k++) {
        int ax = (int)a.axes[k];
        if (d[ax].value < 0) {
            d[ax] = (lt_dim){-1, NULL};
            continue;
        }
        int64_t first, cnt;
        slice_axis(d[ax].value, a.starts[k], a.ends[k], a.steps[k], &first, &cnt);
        d[ax] = (lt_dim){cnt, NULL};
    }
    return lt_infer_set(ic, n, 0, dt, t->rank, d);
}

/* ======================================================================== DepthToSpace, SpaceToDepth */
/* Output dims of DepthToSpace (to_space) / SpaceToDepth: the rules of both hooks. xd < 0 is
 * unknown (infer): d is -1 there. */
static lt_status block_dims(lt_ctx *ctx, const lt_node *n, bool to_space, int rank, const int64_t *xd, int64_t *b,
                            bool *crd, int64_t *d) {
    if (rank != 4) return lt_node_error(ctx, n, LT_ERR_INVALID, "input must be 4-D, got rank %d", rank);
    *b = lt_attr_int(n, "blocksize", 0);
    if (*b <= 0 || *b > (int64_t)1 << 20)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "invalid blocksize %lld", (long long)*b);
    int64_t bb = *b * *b;
    *crd = false;
    if (to_space) {
        const char *mode = lt_attr_string(n, "mode", "DCR");
        *crd = strcmp(mode, "CRD") == 0;
        if (!*crd && strcmp(mode, "DCR") != 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "unknown mode '%s'", mode);
    }
    d[0] = xd[0];
    if (to_space) {
        if (xd[1] >= 0 && xd[1] % bb != 0)
            return lt_node_error(ctx, n, LT_ERR_INVALID, "channels %lld not divisible by blocksize^2 %lld",
                                 (long long)xd[1], (long long)bb);
        d[1] = xd[1] >= 0 ? xd[1] / bb : -1;
        for (int i = 2; i < 4; i++)
            if (xd[i] < 0) d[i] = -1;
            else if (!lt_mul_i64(xd[i], *b, &d[i]))
                return lt_node_error(ctx, n, LT_ERR_INVALID, "output size overflows");
    } else {
        if (xd[2] >= 0 && xd[3] >= 0 && (xd[2] % *b != 0 || xd[3] % *b != 0))
            return lt_node_error(ctx, n, LT_ERR_INVALID, "spatial size %lldx%lld not divisible by blocksize %lld",
                                 (long long)xd[2], (long long)xd[3], (long long)*b);
        for (int i = 2; i < 4; i++) {
            if (xd[i] >= 0 && xd[i] % *b != 0)
                return lt_node_error(ctx, n, LT_ERR_INVALID, "spatial size %lld not divisible by blocksize %lld",
                                     (long long)xd[i], (long long)*b);
            d[i] = xd[i] >= 0 ? xd[i] / *b : -1;
        }
        if (xd[1] < 0) d[1] = -1;
        else if (!lt_mul_i64(xd[1], bb, &d[1])) return lt_node_error(ctx, n, LT_ERR_INVALID, "output channels overflow");
    }
    return LT_OK;
}

lt_status lt_shp_eval_DepthToSpace(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t b, d[4];
    bool crd;
    LT_TRY(block_dims(ev->ctx, n, true, x->rank, x->dims, &b, &crd, d));
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Co = d[1];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, 4, d, &y));
    /* Output viewed as [N, Co, H, b(i), W, b(j)], read from input channel
     * DCR: (i*b + j)*Co + c;  CRD: c*b*b + i*b + j. */
    int64_t HW = H * W;
    int64_t vd[6] = {N, Co, H, b, W, b}, vds[6], vss[6];
    lt_shp_strides(6, vd, vds);
    vss[0] = C * HW;
    vss[1] = crd ? b * b * HW : HW;
    vss[2] = W;
    vss[3] = crd ? b * HW : b * Co * HW;
    vss[4] = 1;
    vss[5] = crd ? HW : Co * HW;
    return lt_shp_strided_copy(ev->ctx, y, 0, vds, x, 0, vss, 6, vd);
}

lt_status lt_shp_eval_SpaceToDepth(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    int64_t b, d[4];
    bool crd;
    LT_TRY(block_dims(ev->ctx, n, false, x->rank, x->dims, &b, &crd, d));
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Ho = d[2], Wo = d[3];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, 4, d, &y));
    /* Output viewed as [N, b(i), b(j), C, Ho, Wo] reads x[n, c, h*b + i, w*b + j]. */
    int64_t vd[6] = {N, b, b, C, Ho, Wo}, vds[6], vss[6] = {C * H * W, W, 1, H * W, b * W, b};
    lt_shp_strides(6, vd, vds);
    return lt_shp_strided_copy(ev->ctx, y, 0, vds, x, 0, vss, 6, vd);
}

static lt_status infer_block(lt_infer *ic, lt_node *n, bool to_space) {
    lt_dtype dt = lt_shp_infer_dtype(n, 0);
    const lt_type *t = lt_shp_infer_ranked(n, 0);
    if (!t) return lt_infer_set(ic, n, 0, dt, 4, NULL);
    int64_t xd[LT_MAX_RANK], d[4], b;
    bool crd;
    for (int i = 0; i < t->rank; i++) xd[i] = lt_shp_dim(t, i).value;
    LT_TRY(block_dims(ic->ctx, n, to_space, t->rank, xd, &b, &crd, d));
    lt_dim dd[4];
    dd[0] = lt_shp_dim(t, 0);
    for (int i = 1; i < 4; i++) dd[i] = (lt_dim){d[i], NULL};
    return lt_infer_set(ic, n, 0, dt, 4, dd);
}
lt_status lt_shp_infer_DepthToSpace(lt_infer *ic, lt_node *n) { return infer_block(ic, n, true); }
lt_status lt_shp_infer_SpaceToDepth(lt_infer *ic, lt_node *n) { return infer_block(ic, n, false); }

/* ======================================================================== ReverseSequence */
lt_status lt_shp_eval_ReverseSequence(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *sl;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &sl));
    if (x->rank < 2) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 2, got %d", x->rank);
    int64_t ta = lt_attr_int(n, "time_axis", 0), ba = lt_attr_int(n, "batch_axis", 1);
    if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
        return lt_op_error(ev, n, LT_ERR_INVALID, "time_axis and batch_axis must be 0 and 1 in some order");
    int64_t T = x->dims[ta], B = x->dims[ba], inner = 1;
    for (int i = 2; i < x->rank; i++) inner *= x->dims[i];
    if (!lt_dtype_is_int(sl->dtype) || sl->rank != 1 || sl->dims[0] != B)
        return lt_op_error(ev, n, LT_ERR_INVALID, "sequence_lens must be an integer tensor of shape [%lld]",
                           (long long)B);
    for (int64_t b = 0; b < B; b++) {
        int64_t len = lt_load_i64(sl->data, sl->dtype, b);
        if (len < 0 || len > T)
            return lt_op_error(ev, n, LT_ERR_INVALID, "sequence length %lld out of range [0, %lld] at sequence_lens[%lld]",
                               (long long)len, (long long)T, (long long)b);
    }
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, x->dims, &y));
    LT_TRY(lt_shp_copy(ev->ctx, y, 0, x, 0, x->numel));
    for (int64_t b = 0; b < B; b++) {
        int64_t len = lt_load_i64(sl->data, sl->dtype, b);
        for (int64_t t = 0; t < len; t++) {
            int64_t src = len - 1 - t;
            int64_t yo = (ta == 0 ? t * B + b : b * T + t) * inner, xo = (ta == 0 ? src * B + b : b * T + src) * inner;
            LT_TRY(lt_shp_copy(ev->ctx, y, yo, x, xo, inner));
        }
    }
    return LT_OK;
}

lt_status lt_shp_infer_ReverseSequence(lt_infer *ic, lt_node *n) { return lt_infer_copy(ic, n, 0, 0); }
