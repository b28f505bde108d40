/* image_sample.c — GridSample (opsets 16, 20, 22) and AffineGrid (opset 20): infer and eval.
 *
 * GridSample samples X[N, C, D1..Dr] at the normalized coordinates grid[N, O1..Or, r] (last axis in
 * reversed order: x = width first), giving Y[N, C, O1..Or]. Semantics follow onnx's reference
 * (op_grid_sample.py, itself PyTorch's): coordinates are denormalized in float32, nearest rounds half
 * to even, border/reflection padding first moves the coordinate into range, then every tap index
 * outside the input is resolved by the padding mode (zeros: contributes 0). linear and cubic
 * (Keys, a = -0.75) are tensor products over the r spatial axes; the mode names of opset 16
 * (bilinear, bicubic) are accepted in every version.
 * AffineGrid builds the normalized base grid (numpy arange values, align_corners or not) and maps
 * each point through theta[N, r, r+1], in double.
 */
#include "image_impl.h"

#include <math.h>
#include <string.h>

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

#define GS_MAX_SPATIAL 8

/* Reflect x into [lo, hi] by the near border until it lies within (reference _gs_reflect). */
static double gs_reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (!(rng > 0)) return lo;
    if (x < lo) {
        double dx = lo - x, k = trunc(dx / rng), r = dx - k * rng;
        return fmod(k, 2.0) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi, k = trunc(dx / rng), r = dx - k * rng;
        return fmod(k, 2.0) == 0 ? hi - r : lo + r;
    }
    return x;
}

/* Resolve tap index i on an axis of size d: -1 when it contributes zero. */
static int64_t gs_index(int64_t i, int64_t d, int pad, double lo, double hi) {
    if (pad == GS_ZEROS) return (i >= 0 && i < d) ? i : -1;
    if (pad == GS_BORDER) return i < 0 ? 0 : i > d - 1 ? d - 1 : i;
    double f = gs_reflect((double)i, lo, hi);
    int64_t k = (int64_t)f; /* truncation, as int() */
    return k < 0 ? 0 : k > d - 1 ? d - 1 : k;
}

static void gs_cubic(double x, double *c) {
    const double A = -0.75;
    x = fabs(x);
    double x1 = x + 1, y = 1 - x, y1 = 2 - x;
    c[0] = ((A * x1 - 5 * A) * x1 + 8 * A) * x1 - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * y - (A + 3)) * y * y + 1;
    c[3] = ((A * y1 - 5 * A) * y1 + 8 * A) * y1 - 4 * A;
}

static bool gs_parse(const lt_node *n, int *mode, int *pad) {
    const char *m = lt_attr_string(n, "mode", n->opset >= 20 ? "linear" : "bilinear");
    const char *p = lt_attr_string(n, "padding_mode", "zeros");
    if (strcmp(m, "nearest") == 0) *mode = GS_NEAREST;
    else if (strcmp(m, "linear") == 0 || strcmp(m, "bilinear") == 0) *mode = GS_LINEAR;
    else if (strcmp(m, "cubic") == 0 || strcmp(m, "bicubic") == 0) *mode = GS_CUBIC;
    else return false;
    if (strcmp(p, "zeros") == 0) *pad = GS_ZEROS;
    else if (strcmp(p, "border") == 0) *pad = GS_BORDER;
    else if (strcmp(p, "reflection") == 0) *pad = GS_REFLECTION;
    else return false;
    return true;
}

lt_status lt_img_gridsample_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    int mode, pad;
    if (!gs_parse(n, &mode, &pad))
        return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported mode '%s' or padding_mode '%s'",
                           lt_attr_string(n, "mode", ""), lt_attr_string(n, "padding_mode", ""));
    bool align = lt_attr_int(n, "align_corners", 0) != 0;
    const lt_tensor *x, *g;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &g));
    int r = x->rank - 2;
    if (r < 1 || r > GS_MAX_SPATIAL)
        return lt_op_error(ev, n, LT_ERR_INVALID, "X must have rank 3 to %d, got %d", GS_MAX_SPATIAL + 2, x->rank);
    if (g->rank != x->rank || g->dims[0] != x->dims[0] || g->dims[g->rank - 1] != r) {
        char a[128], b[128];
        return lt_op_error(ev, n, LT_ERR_INVALID, "grid %s does not match X %s (expected [N, ..., %d])",
                           lt_shape_str(g->rank, g->dims, b, sizeof b), lt_shape_str(x->rank, x->dims, a, sizeof a), r);
    }
    if (!lt_img_numeric(x->dtype) || !lt_dtype_is_float(g->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes X %s, grid %s",
                           lt_dtype_name(x->dtype), lt_dtype_name(g->dtype));
    int64_t od[LT_MAX_RANK];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 0; i < r; i++) od[2 + i] = g->dims[1 + i];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, x->rank, od, &y));
    if (y->numel == 0) return LT_OK;
    const int64_t *dims = x->dims + 2;
    int64_t spatial = 1, points = 1;
    for (int i = 0; i < r; i++) {
        if (dims[i] == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "X has an empty spatial axis");
        spatial *= dims[i];
        points *= g->dims[1 + i];
    }
    int64_t xstr[GS_MAX_SPATIAL];
    xstr[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--) xstr[i] = xstr[i + 1] * dims[i + 1];
    double lo[GS_MAX_SPATIAL], hi[GS_MAX_SPATIAL];
    for (int i = 0; i < r; i++) {
        lo[i] = align ? 0.0 : -0.5;
        hi[i] = align ? (double)dims[i] - 1 : (double)dims[i] - 0.5;
    }
    int taps = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2 : 4;
    int64_t N = x->dims[0], C = x->dims[1];
    for (int64_t b = 0; b < N; b++)
        for (int64_t p = 0; p < points; p++) {
            /* Denormalized coordinate per spatial axis, float32 as the reference. */
            float c[GS_MAX_SPATIAL];
            int64_t ti[GS_MAX_SPATIAL][4];
            double tw[GS_MAX_SPATIAL][4];
            const int64_t gbase = (b * points + p) * r;
            for (int i = 0; i < r; i++) {
                float nv = (float)lt_load_f64(g->data, g->dtype, gbase + (r - 1 - i));
                float len = (float)dims[i];
                float v = align ? (nv + 1) / 2.0f * (len - 1) : ((nv + 1) * len - 1) / 2.0f;
                if (mode == GS_NEAREST) v = rintf(v);
                if (v < lo[i] || v > hi[i]) {
                    if (pad == GS_BORDER) v = v < 0 ? 0.0f : v > len - 1 ? len - 1 : v;
                    else if (pad == GS_REFLECTION) v = (float)gs_reflect(v, lo[i], hi[i]);
                }
                c[i] = v;
            }
            for (int i = 0; i < r; i++) {
                double v = c[i];
                if (!isfinite(v)) v = v > 0 ? 1e15 : -1e15; /* NaN / inf: every tap is outside */
                if (v > 1e15) v = 1e15;
                if (v < -1e15) v = -1e15;
                if (mode == GS_NEAREST) {
                    ti[i][0] = gs_index((int64_t)v, dims[i], pad, lo[i], hi[i]);
                    tw[i][0] = 1;
                    continue;
                }
                double f = floor(v);
                int64_t i0 = (int64_t)f;
                if (mode == GS_LINEAR) {
                    double t = fabs(v - f);
                    tw[i][0] = 1 - t;
                    tw[i][1] = t;
                    for (int k = 0; k < 2; k++) ti[i][k] = gs_index(i0 + k, dims[i], pad, lo[i], hi[i]);
                } else {
                    gs_cubic(v - f, tw[i]);
                    for (int k = 0; k < 4; k++) ti[i][k] = gs_index(i0 - 1 + k, dims[i], pad, lo[i], hi[i]);
                }
            }
            for (int64_t ch = 0; ch < C; ch++) {
                int64_t xbase = (b * C + ch) * spatial;
                double acc = 0;
                int k[GS_MAX_SPATIAL] = {0};
                for (;;) {
                    double w = 1;
                    int64_t off = 0;
                    bool zero = false;
                    for (int i = 0; i < r; i++) {
                        int64_t idx = ti[i][k[i]];
                        if (idx < 0) {
                            zero = true;
                            break;
                        }
                        w *= tw[i][k[i]];
                        off += idx * xstr[i];
                    }
                    if (!zero) acc += w * lt_load_f64(x->data, x->dtype, xbase + off);
                    int i = r - 1;
                    while (i >= 0 && ++k[i] == taps) k[i--] = 0;
                    if (i < 0) break;
                }
                lt_img_store_sat(y->data, y->dtype, (b * C + ch) * points + p, acc);
            }
        }
    return LT_OK;
}

lt_status lt_img_gridsample_infer(lt_infer *ic, lt_node *n) {
    const lt_type *xt = lt_infer_in(n, 0);
    lt_dtype dt = xt ? xt->dtype : LT_UNDEFINED;
    const lt_type *x = lt_img_ranked(n, 0), *g = lt_img_ranked(n, 1);
    int rank = x ? x->rank : g ? g->rank : -1;
    if (rank < 0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (x && g && x->rank != g->rank)
        return lt_infer_error(ic, n, "X has rank %d but grid has rank %d", x->rank, g->rank);
    if (rank < 3) return lt_infer_error(ic, n, "X must have rank >= 3");
    lt_dim od[LT_MAX_RANK];
    for (int d = 0; d < rank; d++) od[d] = (lt_dim){-1, NULL};
    if (x) od[0] = x->dims[0], od[1] = x->dims[1];
    else if (g) od[0] = g->dims[0];
    if (g)
        for (int d = 2; d < rank; d++) od[d] = g->dims[d - 1];
    return lt_infer_set(ic, n, 0, dt, rank, od);
}

/* ---- AffineGrid ---- */

/* Base grid coordinates along an axis of size s (numpy arange: start + k * ((start+step) - start)).
 * A one-point axis with align_corners is -1 (the reference's arange(-1, 1.0001, inf)). */
static double ag_coord(int64_t k, int64_t s, bool align) {
    if (align && s <= 1) return -1.0;
    double step = align ? 2.0 / (double)(s - 1) : 2.0 / (double)s;
    double start = align ? -1.0 : -1.0 + step / 2;
    double delta = (start + step) - start;
    return k == 0 ? start : k == 1 ? start + step : start + (double)k * delta;
}

lt_status lt_img_affinegrid_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    bool align = lt_attr_int(n, "align_corners", 0) != 0;
    const lt_tensor *th, *st;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &th));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &st));
    int64_t size[5];
    int cnt;
    LT_TRY(lt_tensor_ints(ev, n, st, size, 5, &cnt));
    if (cnt != 4 && cnt != 5)
        return lt_op_error(ev, n, LT_ERR_INVALID, "size must have 4 or 5 entries, got %d", cnt);
    int r = cnt - 2; /* spatial rank: 2 or 3 */
    if (th->rank != 3 || th->dims[1] != r || th->dims[2] != r + 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "theta must be [N, %d, %d] for a %d-D grid", r, r + 1, r);
    if (!lt_dtype_is_float(th->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "theta must be a float tensor, got %s", lt_dtype_name(th->dtype));
    int64_t N = th->dims[0];
    if (size[0] != N)
        return lt_op_error(ev, n, LT_ERR_INVALID, "size[0] = %lld does not match theta's batch %lld",
                           (long long)size[0], (long long)N);
    int64_t od[5];
    od[0] = N;
    for (int i = 0; i < r; i++) {
        if (size[2 + i] < 0)
            return lt_op_error(ev, n, LT_ERR_INVALID, "negative size %lld", (long long)size[2 + i]);
        od[1 + i] = size[2 + i];
    }
    od[1 + r] = r;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, th->dtype, r + 2, od, &y));
    if (y->numel == 0) return LT_OK;
    int64_t D = r == 3 ? od[1] : 1, H = od[r - 1], W = od[r];
    int64_t o = 0;
    for (int64_t b = 0; b < N; b++) {
        double t[12];
        for (int i = 0; i < r * (r + 1); i++) t[i] = lt_load_f64(th->data, th->dtype, b * r * (r + 1) + i);
        for (int64_t d = 0; d < D; d++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    double base[4] = {ag_coord(w, W, align), ag_coord(h, H, align), 0, 1};
                    if (r == 3) base[2] = ag_coord(d, D, align);
                    else base[2] = 1;
                    for (int i = 0; i < r; i++) {
                        double s = 0;
                        for (int j = 0; j <= r; j++) s += t[i * (r + 1) + j] * base[j];
                        lt_store_f64(y->data, y->dtype, o++, s);
                    }
                }
    }
    return LT_OK;
}

lt_status lt_img_affinegrid_infer(lt_infer *ic, lt_node *n) {
    const lt_type *tt = lt_infer_in(n, 0);
    lt_dtype dt = tt ? tt->dtype : LT_UNDEFINED;
    const lt_type *th = lt_img_ranked(n, 0), *st = lt_img_ranked(n, 1);
    lt_dim batch = th && th->rank == 3 ? th->dims[0] : (lt_dim){-1, NULL};
    const lt_tensor *sz = lt_infer_const(n, 1);
    if (sz && lt_dtype_is_int(sz->dtype) && (sz->numel == 4 || sz->numel == 5)) {
        int r = (int)sz->numel - 2;
        int64_t od[5];
        od[0] = batch.value;
        for (int i = 0; i < r; i++) od[1 + i] = lt_load_i64(sz->data, sz->dtype, 2 + i);
        od[1 + r] = r;
        return lt_infer_set_i64(ic, n, 0, dt, r + 2, od);
    }
    int r = -1;
    if (st && st->rank == 1 && st->dims[0].value >= 4 && st->dims[0].value <= 5) r = (int)st->dims[0].value - 2;
    else if (th && th->rank == 3 && th->dims[1].value >= 2 && th->dims[1].value <= 3) r = (int)th->dims[1].value;
    if (r < 0) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    lt_dim od[5];
    for (int i = 0; i < 5; i++) od[i] = (lt_dim){-1, NULL};
    od[0] = batch;
    od[1 + r] = (lt_dim){r, NULL};
    return lt_infer_set(ic, n, 0, dt, r + 2, od);
}
