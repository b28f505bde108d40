/* image_resize.c — Resize (opsets 10, 11, 13, 18, 19) and Upsample (opsets 1, 7, 9): infer and eval.
 *
 * Semantics follow onnx's reference (onnx/reference/ops/op_resize.py): the output shape comes from
 * `sizes` (optionally with keep_aspect_ratio_policy) or from floor(scale * input); interpolation is
 * separable, one resized axis at a time, in double precision, and the result is saturate-cast back
 * to the input type (integers round half to even). Each output coordinate is mapped back to an input
 * coordinate x by the coordinate_transformation_mode; its taps are the n input indices nearest to x
 * (ties to the smaller index, clamped to the edge) weighted by the mode's kernel (nearest, linear,
 * cubic, with antialias widening the kernel by 1/scale when downsampling).
 * `nearest` is a pure gather (any dtype, exact, strings included); linear and cubic need a numeric
 * type. Resize-10 and Upsample use the old rules: asymmetric coordinates, and for nearest the index
 * floor(x) when upsampling, ceil(x) when downsampling (what onnxruntime does for those opsets).
 * Axes whose scale is 1 and whose size does not change are left untouched, as the reference does.
 */
#include "image_impl.h"
#include "image_resize.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_CROP, CT_TF_HALF_NN };
enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { NM_RPF, NM_RPC, NM_FLOOR, NM_CEIL, NM_SIMPLE };
enum { KP_STRETCH, KP_NOT_LARGER, KP_NOT_SMALLER };

enum { RS_EXTRAP = 1, RS_ZERO = 2 };

#define RS_MAX_TAPS (1 << 20) /* antialias kernel width limit (scale down by ~500000) */

typedef struct rs_params {
    int mode, ct, nm, policy;
    double cubic_a, extrap;
    bool exclude_outside, antialias;
    int n_axes; /* 0: all axes */
    int64_t axes[LT_MAX_RANK];
} rs_params;

/* One resized axis: for each output position, n taps (clamped input index, weight). */
typedef struct rs_axis {
    int64_t in, out;
    int n;            /* taps per output position (1 for nearest) */
    int64_t *idx;     /* out * n */
    double *w;        /* out * n (NULL for nearest) */
    uint8_t *extrap;  /* out flags: RS_EXTRAP (tf_crop_and_resize outside the input), RS_ZERO */
} rs_axis;

static void rs_axis_free(rs_axis *a) {
    lt_mem_free(a->idx);
    lt_mem_free(a->w);
    lt_mem_free(a->extrap);
    memset(a, 0, sizeof *a);
}

/* ---- attributes ---- */

/* Parse the attributes; returns false with a message in err. `legacy`: Upsample and Resize-10. */
static bool rs_parse(const lt_node *n, bool legacy, rs_params *p, char *err, size_t errn) {
    memset(p, 0, sizeof *p);
    const char *mode = lt_attr_string(n, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0) p->mode = M_NEAREST;
    else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0) p->mode = M_LINEAR;
    else if (strcmp(mode, "cubic") == 0 && !legacy) p->mode = M_CUBIC;
    else {
        snprintf(err, errn, "unsupported mode '%s'", mode);
        return false;
    }
    p->cubic_a = -0.75;
    if (legacy) {
        p->ct = CT_ASYM;
        p->nm = NM_SIMPLE;
        return true;
    }
    const char *ct = lt_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    static const char *const cts[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                      "align_corners", "asymmetric", "tf_crop_and_resize",
                                      "tf_half_pixel_for_nn"};
    p->ct = -1;
    for (int i = 0; i < 7; i++)
        if (strcmp(ct, cts[i]) == 0) p->ct = i;
    if (p->ct < 0) {
        snprintf(err, errn, "unsupported coordinate_transformation_mode '%s'", ct);
        return false;
    }
    const char *nm = lt_attr_string(n, "nearest_mode", "round_prefer_floor");
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    p->nm = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(nm, nms[i]) == 0) p->nm = i;
    if (p->nm < 0) {
        snprintf(err, errn, "unsupported nearest_mode '%s'", nm);
        return false;
    }
    const char *kp = lt_attr_string(n, "keep_aspect_ratio_policy", "stretch");
    if (strcmp(kp, "stretch") == 0) p->policy = KP_STRETCH;
    else if (strcmp(kp, "not_larger") == 0) p->policy = KP_NOT_LARGER;
    else if (strcmp(kp, "not_smaller") == 0) p->policy = KP_NOT_SMALLER;
    else {
        snprintf(err, errn, "unsupported keep_aspect_ratio_policy '%s'", kp);
        return false;
    }
    p->cubic_a = lt_attr_float(n, "cubic_coeff_a", -0.75f);
    p->extrap = lt_attr_float(n, "extrapolation_value", 0.0f);
    p->exclude_outside = lt_attr_int(n, "exclude_outside", 0) != 0;
    p->antialias = lt_attr_int(n, "antialias", 0) != 0;
    if (p->antialias && p->mode == M_NEAREST) {
        snprintf(err, errn, "antialias is not supported with mode 'nearest'");
        return false;
    }
    const int64_t *axes;
    int na = lt_attr_ints(n, "axes", &axes);
    if (na > LT_MAX_RANK) {
        snprintf(err, errn, "%d axes exceed the maximum rank %d", na, LT_MAX_RANK);
        return false;
    }
    p->n_axes = na;
    for (int i = 0; i < na; i++) p->axes[i] = axes[i];
    return true;
}

/* ---- output shape ---- */

/* Resolve the axes list against the rank (normalized, no repeats). */
static bool rs_axes(const rs_params *p, int rank, int *axes, int *n_axes, char *err, size_t errn) {
    if (p->n_axes == 0) {
        for (int d = 0; d < rank; d++) axes[d] = d;
        *n_axes = rank;
        return true;
    }
    bool seen[LT_MAX_RANK] = {0};
    for (int i = 0; i < p->n_axes; i++) {
        int64_t a = p->axes[i] < 0 ? p->axes[i] + rank : p->axes[i];
        if (a < 0 || a >= rank) {
            snprintf(err, errn, "axis %lld out of range [-%d, %d)", (long long)p->axes[i], rank, rank);
            return false;
        }
        if (seen[a]) {
            snprintf(err, errn, "axis %lld repeated in axes", (long long)p->axes[i]);
            return false;
        }
        seen[a] = true;
        axes[i] = (int)a;
    }
    *n_axes = p->n_axes;
    return true;
}

/* Output dims and per-axis scales from scales (cnt doubles) or sizes (cnt int64s), one per entry of
 * axes. in[d] == -1 (infer only) gives out[d] == -1. */
static bool rs_shape(const rs_params *p, int rank, const int64_t *in, const int *axes, int n_axes,
                     const double *scales, const int64_t *sizes, int cnt, int64_t *out, double *sc,
                     char *err, size_t errn) {
    if (cnt != n_axes) {
        snprintf(err, errn, "%s has %d entries, expected %d (one per resized axis)",
                 scales ? "scales" : "sizes", cnt, n_axes);
        return false;
    }
    for (int d = 0; d < rank; d++) {
        out[d] = in[d];
        sc[d] = 1.0;
    }
    if (scales) {
        for (int i = 0; i < cnt; i++) {
            int a = axes[i];
            double s = scales[i];
            if (!(s > 0) || !isfinite(s)) {
                snprintf(err, errn, "scale %g for axis %d must be positive and finite", s, a);
                return false;
            }
            sc[a] = s;
            if (in[a] < 0) continue;
            double o = s * (double)in[a];
            if (o >= 9.0e18) {
                snprintf(err, errn, "scale %g for axis %d gives an output too large", s, a);
                return false;
            }
            out[a] = (int64_t)o;
        }
        return true;
    }
    bool unknown = false;
    for (int i = 0; i < cnt; i++) {
        int a = axes[i];
        if (sizes[i] < 0) {
            snprintf(err, errn, "size %lld for axis %d is negative", (long long)sizes[i], a);
            return false;
        }
        out[a] = sizes[i];
        if (in[a] < 0) {
            unknown = true;
            continue;
        }
        if (in[a] == 0) {
            if (sizes[i] != 0) {
                snprintf(err, errn, "cannot resize axis %d of size 0 to %lld", a, (long long)sizes[i]);
                return false;
            }
            sc[a] = 1.0;
        } else {
            sc[a] = (double)sizes[i] / (double)in[a];
        }
    }
    if (p->policy == KP_STRETCH) return true;
    if (unknown) {
        for (int i = 0; i < cnt; i++) out[axes[i]] = -1;
        return true;
    }
    double s = sc[axes[0]];
    for (int i = 1; i < cnt; i++) {
        double v = sc[axes[i]];
        if (p->policy == KP_NOT_LARGER ? v < s : v > s) s = v;
    }
    for (int i = 0; i < cnt; i++) {
        int a = axes[i];
        sc[a] = s;
        double o = s * (double)in[a] + 0.5;
        if (o >= 9.0e18) {
            snprintf(err, errn, "keep_aspect_ratio_policy gives an output too large on axis %d", a);
            return false;
        }
        out[a] = (int64_t)o;
    }
    return true;
}

/* ---- coordinates and kernels ---- */

static bool is_close(double a, double b) {
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= 1e-9 * m;
}

/* Input coordinate of output index y (reference _compute_x_ori). roi_f32: roi arithmetic in float32
 * as numpy does for a float32 roi tensor. */
static double rs_coord(const rs_params *p, int64_t yi, double scale, int64_t in, int64_t out_int,
                       double r0, double r1, bool roi_f32, bool *extrap) {
    double y = (double)yi, ow = scale * (double)in, x;
    *extrap = false;
    switch (p->ct) {
    case CT_ALIGN: x = ow == 1 ? 0.0 : y * (double)(in - 1) / (ow - 1); break;
    case CT_ASYM: x = y / scale; break;
    case CT_TF_CROP:
        if (roi_f32) {
            float d = (float)r1 - (float)r0, inm1 = (float)(in - 1);
            x = ow == 1 ? (double)(d * inm1 / 2.0f) : y * (double)d * (double)(in - 1) / (ow - 1);
            x += (double)((float)r0 * inm1);
        } else {
            x = ow == 1 ? (r1 - r0) * (double)(in - 1) / 2 : y * (r1 - r0) * (double)(in - 1) / (ow - 1);
            x += r0 * (double)(in - 1);
        }
        *extrap = x < 0 || x > (double)(in - 1);
        break;
    case CT_PYTORCH: x = ow == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
    case CT_HALF_PIXEL_SYM: {
        double adj = (double)out_int / ow, center = (double)in / 2, off = center * (1 - adj);
        x = off + (y + 0.5) / scale - 0.5;
        break;
    }
    case CT_TF_HALF_NN: x = (y + 0.5) / scale; break;
    default: x = (y + 0.5) / scale - 0.5; break;
    }
    return x;
}

/* Taps per output position for this axis. */
static int64_t rs_ntaps(const rs_params *p, double scale) {
    if (p->mode == M_NEAREST) return 2;
    if (!p->antialias) return p->mode == M_LINEAR ? 2 : 4;
    double s = scale < 1 ? scale : 1.0;
    double st = floor((p->mode == M_LINEAR ? -1.0 : -2.0) / s) + 1;
    if (!(st > -(double)RS_MAX_TAPS)) return -1;
    return 2 - 2 * (int64_t)st;
}

/* Kernel coefficients for a ratio in (0, 1] (reference _*_coeffs). The reference's cubic_coeff_a is
 * a numpy float32, so its cubic kernels are evaluated in float32 (Python floats convert to float32
 * where they meet it); the rest is double. */
static void rs_coeffs(const rs_params *p, double ratio, double scale, int n, double *c) {
    if (p->mode == M_LINEAR && !p->antialias) {
        c[0] = 1 - ratio;
        c[1] = ratio;
        return;
    }
    float A = (float)p->cubic_a;
    if (p->mode == M_CUBIC && !p->antialias) {
        float r = (float)ratio, t1 = (float)(ratio + 1), u = (float)(1 - ratio), u1 = (float)((1 - ratio) + 1);
        c[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
        c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        c[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
        c[3] = ((A * u1 - 5 * A) * u1 + 8 * A) * u1 - 4 * A;
        return;
    }
    double s = scale < 1 ? scale : 1.0;
    int64_t start = (int64_t)(floor((p->mode == M_LINEAR ? -1.0 : -2.0) / s) + 1);
    if (p->mode == M_LINEAR) {
        double sum = 0;
        for (int k = 0; k < n; k++) {
            double v = 1 - fabs(((double)(start + k) - ratio) * s);
            c[k] = v < 0 ? 0 : v > 1 ? 1 : v;
            sum += c[k];
        }
        for (int k = 0; k < n; k++) c[k] /= sum;
        return;
    }
    /* Cubic antialias: float32 kernel values (exact 0.0 outside |x| < 2), float32 sum; the division
     * is float32 unless some value is that 0.0 (then the array is float64). */
    float sum = 0;
    bool any_zero = false;
    for (int k = 0; k < n; k++) {
        double x = fabs(((double)(start + k) - ratio) * s), x2 = x * x, x3 = x * x2;
        float v;
        if (x <= 1) v = (A + 2) * (float)x3 - (A + 3) * (float)x2 + 1;
        else if (x < 2) v = A * (float)x3 - 5 * A * (float)x2 + 8 * A * (float)x - 4 * A;
        else v = 0, any_zero = true;
        c[k] = v;
        sum += v;
    }
    if (sum == 0) sum = 1;
    for (int k = 0; k < n; k++) c[k] = any_zero ? c[k] / (double)sum : (double)((float)c[k] / sum);
}

/* Build the taps of one axis. */
static lt_status rs_plan(lt_eval *ev, const lt_node *n, const rs_params *p, rs_axis *ax, double scale,
                         double r0, double r1, bool roi_f32) {
    int64_t nt = rs_ntaps(p, scale);
    if (nt < 1 || nt > RS_MAX_TAPS)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "antialias kernel for scale %g is too wide", scale);
    int taps = (int)nt;
    bool nearest = p->mode == M_NEAREST;
    ax->n = nearest ? 1 : taps;
    size_t cnt;
    if (!lt_mul_size((size_t)ax->out, (size_t)ax->n, &cnt) || cnt > ((size_t)1 << 40))
        return lt_op_error(ev, n, LT_ERR_NOMEM, "resize tap table too large");
    ax->idx = lt_alloc(ev->ctx, cnt * sizeof *ax->idx, "resize taps");
    if (!ax->idx) return LT_ERR_NOMEM;
    if (!nearest) {
        ax->w = lt_alloc(ev->ctx, cnt * sizeof *ax->w, "resize weights");
        if (!ax->w) return LT_ERR_NOMEM;
    }
    if (p->ct == CT_TF_CROP || (nearest && p->exclude_outside)) {
        ax->extrap = lt_calloc(ev->ctx, (size_t)ax->out, 1, "resize flags");
        if (!ax->extrap) return LT_ERR_NOMEM;
    }
    double cbuf[16], *c = taps <= 16 ? cbuf : lt_alloc(ev->ctx, (size_t)taps * sizeof *c, "resize kernel");
    if (!c) return LT_ERR_NOMEM;
    int64_t pad = (taps + 1) / 2, last = ax->in - 1;
    for (int64_t y = 0; y < ax->out; y++) {
        bool ex;
        double x = rs_coord(p, y, scale, ax->in, ax->out, r0, r1, roi_f32, &ex);
        if (ax->extrap) ax->extrap[y] = ex ? RS_EXTRAP : 0;
        if (!isfinite(x)) {
            if (c != cbuf) lt_mem_free(c);
            return lt_op_error(ev, n, LT_ERR_INVALID, "output index %lld maps to a non-finite input coordinate",
                               (long long)y);
        }
        /* Far outside the input every tap clamps to an edge: keep the arithmetic in range. */
        if (x > 1e15) x = 1e15;
        if (x < -1e15) x = -1e15;
        if (p->nm == NM_SIMPLE && nearest) {
            double r = scale < 1 ? ceil(x) : floor(x);
            int64_t i = (int64_t)r;
            ax->idx[y] = i < 0 ? 0 : i > last ? last : i;
            continue;
        }
        double xi = floor(x), ratio = x == xi ? 1.0 : x - xi;
        /* The n nearest indices to x, ties to the smaller one (reference _get_neighbor). */
        double xp = x + (double)pad, pf = floor(xp), frac = xp - pf;
        int64_t off;
        if (taps % 2 == 0) off = frac == 0 ? -(taps / 2) : -(taps / 2) + 1;
        else off = frac <= 0.5 ? -((taps - 1) / 2) : -((taps - 1) / 2) + 1;
        int64_t start = (int64_t)pf + off - pad;
        if (nearest) {
            bool hi;
            if (ratio == 1.0) hi = true;
            else if (p->nm == NM_RPF) hi = ratio > 0.5;
            else if (p->nm == NM_RPC) hi = ratio >= 0.5;
            else hi = p->nm == NM_CEIL;
            int64_t i = start + (hi ? 1 : 0);
            ax->idx[y] = i < 0 ? 0 : i > last ? last : i;
            /* The reference renormalizes the one-hot weights too: an excluded pick gives 0. */
            if (p->exclude_outside && !ex && (i < 0 || i > last)) ax->extrap[y] = RS_ZERO;
            continue;
        }
        rs_coeffs(p, ratio, scale, taps, c);
        if (p->exclude_outside) {
            double sum = 0;
            for (int k = 0; k < taps; k++) {
                int64_t i = start + k;
                if (i < 0 || i > last) c[k] = 0;
                sum += c[k];
            }
            if (sum == 0) sum = 1;
            for (int k = 0; k < taps; k++) c[k] /= sum;
        }
        for (int k = 0; k < taps; k++) {
            int64_t i = start + k;
            ax->idx[y * taps + k] = i < 0 ? 0 : i > last ? last : i;
            ax->w[y * taps + k] = c[k];
        }
    }
    if (c != cbuf) lt_mem_free(c);
    return LT_OK;
}

/* ---- execution ---- */

static lt_status rs_copy_elem(lt_eval *ev, const lt_tensor *x, int64_t si, lt_tensor *y, int64_t di) {
    if (x->dtype == LT_STRING) {
        const char *s = ((char *const *)x->data)[si];
        return lt_tensor_set_string(ev->ctx, y, di, s, strlen(s));
    }
    size_t es = (size_t)lt_dtype_size(x->dtype);
    memcpy((char *)y->data + (size_t)di * es, (const char *)x->data + (size_t)si * es, es);
    return LT_OK;
}

/* Nearest: every output element copies one input element (or takes the extrapolation value). */
static lt_status rs_gather(lt_eval *ev, const lt_node *n, const rs_params *p, const lt_tensor *x,
                           lt_tensor *y, rs_axis *ax) {
    int r = x->rank;
    int64_t xs[LT_MAX_RANK], idx[LT_MAX_RANK] = {0};
    lt_tensor_strides(x, xs);
    for (int64_t o = 0; o < y->numel; o++) {
        int64_t src = 0;
        int flag = 0;
        for (int d = 0; d < r; d++) {
            int64_t i = idx[d];
            if (ax[d].idx) {
                if (ax[d].extrap && ax[d].extrap[i]) flag = ax[d].extrap[i]; /* the later axis wins */
                i = ax[d].idx[i];
            }
            src += i * xs[d];
        }
        if (!flag) LT_TRY(rs_copy_elem(ev, x, src, y, o));
        else if (y->dtype == LT_STRING)
            return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "extrapolation into a string tensor");
        else lt_img_store_sat(y->data, y->dtype, o, flag == RS_EXTRAP ? p->extrap : 0.0);
        lt_index_next(r, y->dims, idx);
    }
    return LT_OK;
}

/* Linear / cubic: separable weighted sums in double, one planned axis at a time. */
static lt_status rs_weighted(lt_eval *ev, const lt_node *n, const rs_params *p, const lt_tensor *x,
                             lt_tensor *y, rs_axis *ax, const int *order, int n_order) {
    int r = x->rank;
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    double *cur = lt_alloc(ev->ctx, (size_t)(x->numel ? x->numel : 1) * sizeof *cur, "resize buffer");
    if (!cur) return LT_ERR_NOMEM;
    for (int64_t i = 0; i < x->numel; i++) cur[i] = lt_load_f64(x->data, x->dtype, i);
    for (int oi = 0; oi < n_order; oi++) {
        int a = order[oi];
        if (!ax[a].idx) continue;
        int64_t outer = 1, inner = 1, total;
        for (int d = 0; d < a; d++) outer *= dims[d];
        for (int d = a + 1; d < r; d++) inner *= dims[d];
        int64_t nd[LT_MAX_RANK];
        memcpy(nd, dims, sizeof(int64_t) * (size_t)r);
        nd[a] = ax[a].out;
        if (!lt_prod_i64(nd, r, &total) || total > ((int64_t)1 << 37)) {
            lt_mem_free(cur);
            return lt_op_error(ev, n, LT_ERR_NOMEM, "resize intermediate too large");
        }
        double *nx = lt_alloc(ev->ctx, (size_t)(total ? total : 1) * sizeof *nx, "resize buffer");
        if (!nx) {
            lt_mem_free(cur);
            return LT_ERR_NOMEM;
        }
        int64_t in_n = dims[a], out_n = ax[a].out;
        int nt = ax[a].n;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < out_n; j++) {
                double *dst = nx + (o * out_n + j) * inner;
                if (ax[a].extrap && ax[a].extrap[j] == RS_EXTRAP) {
                    for (int64_t i = 0; i < inner; i++) dst[i] = p->extrap;
                    continue;
                }
                const int64_t *ti = ax[a].idx + j * nt;
                const double *tw = ax[a].w + j * nt;
                for (int64_t i = 0; i < inner; i++) {
                    double s = 0;
                    for (int k = 0; k < nt; k++) s += cur[(o * in_n + ti[k]) * inner + i] * tw[k];
                    dst[i] = s;
                }
            }
        lt_mem_free(cur);
        cur = nx;
        dims[a] = out_n;
    }
    for (int64_t i = 0; i < y->numel; i++) lt_img_store_sat(y->data, y->dtype, i, cur[i]);
    lt_mem_free(cur);
    return LT_OK;
}

/* Shared body: x resized with scales (double[cnt]) or sizes (int64[cnt]); roi (2*cnt) or NULL. */
static lt_status rs_run(lt_eval *ev, const lt_node *n, const rs_params *p, const lt_tensor *x,
                        const double *scales, const int64_t *sizes, int cnt, const double *roi,
                        bool roi_f32, lt_datum **out) {
    char err[256];
    int r = x->rank, axes[LT_MAX_RANK], n_axes;
    int64_t od[LT_MAX_RANK];
    double sc[LT_MAX_RANK];
    if (r == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 1");
    if (!rs_axes(p, r, axes, &n_axes, err, sizeof err) ||
        !rs_shape(p, r, x->dims, axes, n_axes, scales, sizes, cnt, od, sc, err, sizeof err))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s", err);
    if (p->mode != M_NEAREST && !lt_img_numeric(x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "%s interpolation of a %s tensor",
                           p->mode == M_LINEAR ? "linear" : "cubic", lt_dtype_name(x->dtype));
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, od, &y));
    if (y->numel == 0) return LT_OK;
    for (int d = 0; d < r; d++)
        if (x->dims[d] == 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "cannot resize axis %d of size 0 to %lld", d,
                               (long long)od[d]);
    if (p->ct == CT_TF_CROP && !roi)
        return lt_op_error(ev, n, LT_ERR_INVALID, "coordinate_transformation_mode tf_crop_and_resize needs roi");
    rs_axis ax[LT_MAX_RANK];
    memset(ax, 0, sizeof ax);
    for (int d = 0; d < r; d++) {
        ax[d].in = x->dims[d];
        ax[d].out = od[d];
    }
    lt_status s = LT_OK;
    for (int i = 0; i < n_axes && s == LT_OK; i++) {
        int a = axes[i];
        double r0 = roi ? roi[i] : 0.0, r1 = roi ? roi[cnt + i] : 1.0;
        bool roi_trivial = p->ct != CT_TF_CROP || (r0 == 0 && r1 == 1.0);
        if (is_close(sc[a], 1.0) && od[a] == x->dims[a] && roi_trivial) continue;
        s = rs_plan(ev, n, p, &ax[a], sc[a], r0, r1, roi_f32);
    }
    if (s == LT_OK) {
        if (p->mode == M_NEAREST) s = rs_gather(ev, n, p, x, y, ax);
        else s = rs_weighted(ev, n, p, x, y, ax, axes, n_axes);
    }
    for (int d = 0; d < r; d++) rs_axis_free(&ax[d]);
    return s;
}

/* Read a float tensor (scales, roi) into doubles. */
static lt_status read_f64s(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *what,
                           double *buf, int max, int *cnt) {
    if (!lt_dtype_is_float(t->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must be a float tensor, got %s", what,
                           lt_dtype_name(t->dtype));
    if (t->numel > max)
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s has %lld entries, more than %d", what,
                           (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++) buf[i] = lt_load_f64(t->data, t->dtype, i);
    *cnt = (int)t->numel;
    return LT_OK;
}

lt_status lt_img_resize_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    char err[256];
    rs_params p;
    bool legacy = n->opset > 0 && n->opset < 11;
    if (!rs_parse(n, legacy, &p, err, sizeof err)) return lt_op_error(ev, n, LT_ERR_INVALID, "%s", err);
    const lt_tensor *x, *roi_t = NULL, *sc_t = NULL, *sz_t = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    if (legacy) {
        LT_TRY(lt_in_tensor(ev, n, in, 1, &sc_t));
    } else {
        LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &roi_t));
        LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &sc_t));
        LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &sz_t));
    }
    if (roi_t && roi_t->numel == 0) roi_t = NULL;
    if (sc_t && sc_t->numel == 0) sc_t = NULL;
    if (sz_t && sz_t->numel == 0) sz_t = NULL;
    if (sc_t && sz_t) return lt_op_error(ev, n, LT_ERR_INVALID, "only one of scales and sizes may be given");
    if (!sc_t && !sz_t) return lt_op_error(ev, n, LT_ERR_INVALID, "one of scales and sizes must be given");
    double scales[LT_MAX_RANK], roi[2 * LT_MAX_RANK];
    int64_t sizes[LT_MAX_RANK];
    int cnt = 0, rcnt = 0;
    if (sc_t) LT_TRY(read_f64s(ev, n, sc_t, "scales", scales, LT_MAX_RANK, &cnt));
    else LT_TRY(lt_tensor_ints(ev, n, sz_t, sizes, LT_MAX_RANK, &cnt));
    if (roi_t) {
        LT_TRY(read_f64s(ev, n, roi_t, "roi", roi, 2 * LT_MAX_RANK, &rcnt));
        if (rcnt != 2 * cnt) {
            if (p.ct == CT_TF_CROP)
                return lt_op_error(ev, n, LT_ERR_INVALID, "roi has %d entries, expected %d", rcnt, 2 * cnt);
            roi_t = NULL; /* only tf_crop_and_resize reads it */
        }
    }
    return rs_run(ev, n, &p, x, sc_t ? scales : NULL, sc_t ? NULL : sizes, cnt, roi_t ? roi : NULL,
                  roi_t && roi_t->dtype != LT_DOUBLE, out);
}

lt_status lt_img_upsample_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    char err[256];
    rs_params p;
    if (!rs_parse(n, true, &p, err, sizeof err)) return lt_op_error(ev, n, LT_ERR_INVALID, "%s", err);
    const lt_tensor *x;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    double scales[LT_MAX_RANK];
    int cnt = 0;
    if (n->opset >= 9) {
        const lt_tensor *st;
        LT_TRY(lt_in_tensor(ev, n, in, 1, &st));
        LT_TRY(read_f64s(ev, n, st, "scales", scales, LT_MAX_RANK, &cnt));
    } else {
        const float *f;
        int nf = lt_attr_floats(n, "scales", &f);
        if (nf > 0) {
            if (nf > LT_MAX_RANK) return lt_op_error(ev, n, LT_ERR_INVALID, "too many scales");
            for (int i = 0; i < nf; i++) scales[i] = f[i];
            cnt = nf;
        } else {
            /* Upsample-1: height_scale / width_scale on a 4-D input. */
            if (x->rank != 4) return lt_op_error(ev, n, LT_ERR_INVALID, "Upsample-1 needs a 4-D input");
            scales[0] = scales[1] = 1.0;
            scales[2] = lt_attr_float(n, "height_scale", 1.0f);
            scales[3] = lt_attr_float(n, "width_scale", 1.0f);
            cnt = 4;
        }
    }
    return rs_run(ev, n, &p, x, scales, NULL, cnt, NULL, false, out);
}

/* ---- tap tables for compiled rewrites (image_resize.h) ---- */

static bool const_f64s(const lt_node *n, int i, double *buf, int *cnt);
static bool const_i64s(const lt_node *n, int i, int64_t *buf, int *cnt);

void lt_resize_taps_free(lt_resize_taps *axes, int rank) {
    for (int d = 0; d < rank; d++) {
        lt_mem_free(axes[d].idx);
        lt_mem_free(axes[d].w);
        memset(&axes[d], 0, sizeof axes[d]);
    }
}

lt_status lt_resize_taps_build(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *in_dims, lt_dtype dtype,
                               lt_resize_taps *axes, bool *nearest) {
    lt_eval ev = {.ctx = ctx};
    char err[256];
    rs_params p;
    bool legacy = n->op == LT_OP_Upsample || (n->opset > 0 && n->opset < 11);
    memset(axes, 0, sizeof *axes * (size_t)(rank > 0 ? rank : 1));
    if (!rs_parse(n, legacy, &p, err, sizeof err)) return lt_op_error(&ev, n, LT_ERR_INVALID, "%s", err);
    if (p.ct == CT_TF_CROP || (p.mode == M_NEAREST && p.exclude_outside))
        return lt_op_error(&ev, n, LT_ERR_UNSUPPORTED, "tf_crop_and_resize / exclude_outside on nearest");
    if (p.mode != M_NEAREST && !lt_dtype_is_float(dtype))
        return lt_op_error(&ev, n, LT_ERR_UNSUPPORTED, "weighted resize of a %s tensor", lt_dtype_name(dtype));
    double scales[LT_MAX_RANK];
    int64_t sizes[LT_MAX_RANK];
    int cnt = 0, si = legacy ? 1 : 2, zi = 3;
    bool by_sizes = !legacy && n->n_in > zi && n->in[zi] && const_i64s(n, zi, sizes, &cnt) && cnt > 0;
    if (!by_sizes && !(n->n_in > si && n->in[si] && const_f64s(n, si, scales, &cnt) && cnt > 0))
        return lt_op_error(&ev, n, LT_ERR_UNSUPPORTED, "scales or sizes not a constant");
    int axl[LT_MAX_RANK], n_axes;
    int64_t od[LT_MAX_RANK];
    double sc[LT_MAX_RANK];
    if (rank < 1 || rank > LT_MAX_RANK || !rs_axes(&p, rank, axl, &n_axes, err, sizeof err) ||
        !rs_shape(&p, rank, in_dims, axl, n_axes, by_sizes ? NULL : scales, by_sizes ? sizes : NULL, cnt, od, sc, err,
                  sizeof err))
        return lt_op_error(&ev, n, LT_ERR_INVALID, "%s", rank < 1 ? "input must have rank >= 1" : err);
    *nearest = p.mode == M_NEAREST;
    lt_status s = LT_OK;
    for (int i = 0; i < n_axes && s == LT_OK; i++) {
        int a = axl[i];
        if (in_dims[a] < 1) s = lt_op_error(&ev, n, LT_ERR_INVALID, "cannot resize axis %d of size %lld", a,
                                            (long long)in_dims[a]);
        if (s != LT_OK || (is_close(sc[a], 1.0) && od[a] == in_dims[a])) continue;
        rs_axis ax = {.in = in_dims[a], .out = od[a]};
        s = rs_plan(&ev, n, &p, &ax, sc[a], 0.0, 1.0, false);
        if (s == LT_OK && ax.extrap) s = lt_op_error(&ev, n, LT_ERR_UNSUPPORTED, "extrapolated positions");
        if (s == LT_OK) {
            axes[a] = (lt_resize_taps){.in = ax.in, .out = ax.out, .n = ax.n, .idx = ax.idx, .w = ax.w};
            ax.idx = NULL, ax.w = NULL;
        }
        rs_axis_free(&ax);
    }
    for (int d = 0; d < rank; d++)
        if (!axes[d].n) axes[d].in = axes[d].out = in_dims[d];
    if (s != LT_OK) lt_resize_taps_free(axes, rank);
    return s;
}

/* ---- inference ---- */

/* Output type from the input type and constant scales/sizes where known. */
static lt_status rs_infer_common(lt_infer *ic, lt_node *n, const rs_params *p, const double *scales,
                                 const int64_t *sizes, int cnt, bool known) {
    const lt_type *xt = lt_infer_in(n, 0);
    lt_dtype dt = xt ? xt->dtype : LT_UNDEFINED;
    const lt_type *rt = lt_img_ranked(n, 0);
    if (!rt) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int r = rt->rank, axes[LT_MAX_RANK], n_axes;
    char err[256];
    if (r == 0) return lt_infer_error(ic, n, "input must have rank >= 1");
    if (!rs_axes(p, r, axes, &n_axes, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    lt_dim od[LT_MAX_RANK];
    for (int d = 0; d < r; d++) od[d] = rt->dims[d];
    if (!known) {
        for (int i = 0; i < n_axes; i++) od[axes[i]] = (lt_dim){-1, NULL};
        return lt_infer_set(ic, n, 0, dt, r, od);
    }
    int64_t ind[LT_MAX_RANK], o[LT_MAX_RANK];
    double sc[LT_MAX_RANK];
    for (int d = 0; d < r; d++) ind[d] = rt->dims[d].value >= 0 ? rt->dims[d].value : -1;
    if (!rs_shape(p, r, ind, axes, n_axes, scales, sizes, cnt, o, sc, err, sizeof err))
        return lt_infer_error(ic, n, "%s", err);
    for (int i = 0; i < n_axes; i++) {
        int a = axes[i];
        if (o[a] != ind[a] || o[a] < 0) od[a] = (lt_dim){o[a] >= 0 ? o[a] : -1, NULL};
    }
    return lt_infer_set(ic, n, 0, dt, r, od);
}

/* Constant float list of input i (false if not constant); empty counts as absent via *cnt == 0. */
static bool const_f64s(const lt_node *n, int i, double *buf, int *cnt) {
    const lt_tensor *t = lt_infer_const(n, i);
    if (!t || !lt_dtype_is_float(t->dtype) || t->numel > LT_MAX_RANK) return false;
    for (int64_t k = 0; k < t->numel; k++) buf[k] = lt_load_f64(t->data, t->dtype, k);
    *cnt = (int)t->numel;
    return true;
}

static bool const_i64s(const lt_node *n, int i, int64_t *buf, int *cnt) {
    const lt_tensor *t = lt_infer_const(n, i);
    if (!t || !lt_dtype_is_int(t->dtype) || t->numel > LT_MAX_RANK) return false;
    for (int64_t k = 0; k < t->numel; k++) buf[k] = lt_load_i64(t->data, t->dtype, k);
    *cnt = (int)t->numel;
    return true;
}

lt_status lt_img_resize_infer(lt_infer *ic, lt_node *n) {
    char err[256];
    rs_params p;
    bool legacy = n->opset > 0 && n->opset < 11;
    if (!rs_parse(n, legacy, &p, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    double scales[LT_MAX_RANK];
    int64_t sizes[LT_MAX_RANK];
    int cnt = 0;
    int si = legacy ? 1 : 2, zi = 3;
    bool have_sizes_input = !legacy && n->n_in > zi && n->in[zi];
    if (have_sizes_input) {
        if (const_i64s(n, zi, sizes, &cnt) && cnt > 0)
            return rs_infer_common(ic, n, &p, NULL, sizes, cnt, true);
        /* sizes given but not constant (or empty: then scales are used) */
        if (!(lt_infer_const(n, zi) && lt_infer_const(n, zi)->numel == 0))
            return rs_infer_common(ic, n, &p, NULL, NULL, 0, false);
    }
    if (const_f64s(n, si, scales, &cnt) && cnt > 0)
        return rs_infer_common(ic, n, &p, scales, NULL, cnt, true);
    return rs_infer_common(ic, n, &p, NULL, NULL, 0, false);
}

lt_status lt_img_upsample_infer(lt_infer *ic, lt_node *n) {
    char err[256];
    rs_params p;
    if (!rs_parse(n, true, &p, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    double scales[LT_MAX_RANK];
    int cnt = 0;
    if (n->opset >= 9) {
        if (const_f64s(n, 1, scales, &cnt) && cnt > 0)
            return rs_infer_common(ic, n, &p, scales, NULL, cnt, true);
        return rs_infer_common(ic, n, &p, NULL, NULL, 0, false);
    }
    const float *f;
    int nf = lt_attr_floats(n, "scales", &f);
    if (nf > 0 && nf <= LT_MAX_RANK) {
        for (int i = 0; i < nf; i++) scales[i] = f[i];
        return rs_infer_common(ic, n, &p, scales, NULL, nf, true);
    }
    if (nf == 0) {
        scales[0] = scales[1] = 1.0;
        scales[2] = lt_attr_float(n, "height_scale", 1.0f);
        scales[3] = lt_attr_float(n, "width_scale", 1.0f);
        return rs_infer_common(ic, n, &p, scales, NULL, 4, true);
    }
    return rs_infer_common(ic, n, &p, NULL, NULL, 0, false);
}
