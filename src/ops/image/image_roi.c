/* image_roi.c — region ops: RoiAlign (opsets 10, 16, 22), MaxRoiPool (opset 1) and
 * NonMaxSuppression (opsets 10, 11): infer and eval.
 *
 * RoiAlign follows onnx's reference (op_roi_align.py, from onnxruntime): per ROI a bin grid of
 * bilinear samples (sampling_ratio, or ceil(roi size / output size) when 0), averaged ("avg") or, for
 * "max", the largest weighted corner value of each sample; opset < 16 has no
 * coordinate_transformation_mode and behaves as "output_half_pixel" (no half-pixel shift, malformed
 * ROIs forced to 1x1). MaxRoiPool is Caffe's ROI pooling: ROI corners rounded after scaling, bins
 * floor/ceil-split, max over each bin, 0 for an empty bin. NonMaxSuppression is the greedy per
 * (batch, class) selection of onnx's reference, in float32 arithmetic so IoU ties at the threshold
 * decide as there; candidates are taken by score, ties by box index (from a heap: the greedy pass
 * stops at max_output_boxes_per_class, usually long before every candidate would be sorted).
 * Every batch index read from a tensor is range-checked.
 */
#include "image_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- RoiAlign ---- */

lt_status lt_img_roialign_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *rois, *bi;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &rois));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &bi));
    const char *mode = lt_attr_string(n, "mode", "avg");
    const char *ctm = lt_attr_string(n, "coordinate_transformation_mode",
                                     n->opset >= 16 ? "half_pixel" : "output_half_pixel");
    bool is_max;
    if (strcmp(mode, "avg") == 0) is_max = false;
    else if (strcmp(mode, "max") == 0) is_max = true;
    else return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported mode '%s'", mode);
    bool half_pixel;
    if (strcmp(ctm, "half_pixel") == 0) half_pixel = true;
    else if (strcmp(ctm, "output_half_pixel") == 0) half_pixel = false;
    else return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported coordinate_transformation_mode '%s'", ctm);
    int64_t oh = lt_attr_int(n, "output_height", 1), ow = lt_attr_int(n, "output_width", 1);
    int64_t sr = lt_attr_int(n, "sampling_ratio", 0);
    double scale = lt_attr_float(n, "spatial_scale", 1.0f);
    if (oh < 1 || ow < 1 || sr < 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "output_height/output_width must be >= 1 and sampling_ratio >= 0");
    if (x->rank != 4) return lt_op_error(ev, n, LT_ERR_INVALID, "X must be 4-D, got rank %d", x->rank);
    if (rois->rank != 2 || rois->dims[1] != 4)
        return lt_op_error(ev, n, LT_ERR_INVALID, "rois must be [num_rois, 4]");
    if (bi->rank != 1 || bi->dims[0] != rois->dims[0])
        return lt_op_error(ev, n, LT_ERR_INVALID, "batch_indices must be [num_rois] with num_rois = %lld",
                           (long long)rois->dims[0]);
    if (!lt_dtype_is_float(x->dtype) || !lt_dtype_is_float(rois->dtype) || !lt_dtype_is_int(bi->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes");
    int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t od[4] = {R, C, oh, ow};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, 4, od, &y));
    if (y->numel == 0) return LT_OK;
    for (int64_t r = 0; r < R; r++) {
        int64_t b = lt_load_i64(bi->data, bi->dtype, r);
        if (b < 0 || b >= N)
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %lld out of range [0, %lld) at batch_indices[%lld]",
                               (long long)b, (long long)N, (long long)r);
    }
    if (H == 0 || W == 0) return lt_op_error(ev, n, LT_ERR_INVALID, "X has an empty spatial axis");
    for (int64_t r = 0; r < R; r++) {
        int64_t b = lt_load_i64(bi->data, bi->dtype, r);
        double off = half_pixel ? 0.5 : 0.0;
        double sw = lt_load_f64(rois->data, rois->dtype, r * 4 + 0) * scale - off;
        double sh = lt_load_f64(rois->data, rois->dtype, r * 4 + 1) * scale - off;
        double ew = lt_load_f64(rois->data, rois->dtype, r * 4 + 2) * scale - off;
        double eh = lt_load_f64(rois->data, rois->dtype, r * 4 + 3) * scale - off;
        double rw = ew - sw, rh = eh - sh;
        if (!half_pixel) {
            if (rw < 1) rw = 1;
            if (rh < 1) rh = 1;
        }
        if (!isfinite(rw) || !isfinite(rh) || !isfinite(sw) || !isfinite(sh))
            return lt_op_error(ev, n, LT_ERR_INVALID, "roi %lld is not finite", (long long)r);
        double bh = rh / (double)oh, bw = rw / (double)ow;
        double gh_d = sr > 0 ? (double)sr : ceil(rh / (double)oh), gw_d = sr > 0 ? (double)sr : ceil(rw / (double)ow);
        /* the samples of one roi over all channels and bins: a huge sampling_ratio or roi would take
         * hours (as it would in onnxruntime), so past 2^31 it is an error */
        if (gh_d > 1e6 || gw_d > 1e6 || gh_d * gw_d * (double)C * (double)oh * (double)ow > 2147483648.0)
            return lt_op_error(ev, n, LT_ERR_UNSUPPORTED,
                               "roi %lld needs %.0f x %.0f samples per bin over %lld channels and %lld x %lld bins, "
                               "more than 2^31 in all", (long long)r, gh_d, gw_d, (long long)C, (long long)oh, (long long)ow);
        int64_t gh = gh_d > 0 ? (int64_t)gh_d : 0, gw = gw_d > 0 ? (int64_t)gw_d : 0;
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (b * C + c) * H * W;
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++) {
                    double acc = 0;
                    bool first = true;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            double v1 = 0, v2 = 0, v3 = 0, v4 = 0;
                            if (!(yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)) {
                                double yv = yy < 0 ? 0 : yy, xv = xx < 0 ? 0 : xx;
                                int64_t yl = (int64_t)yv, xl = (int64_t)xv, yh, xh;
                                if (yl >= H - 1) yh = yl = H - 1, yv = (double)yl;
                                else yh = yl + 1;
                                if (xl >= W - 1) xh = xl = W - 1, xv = (double)xl;
                                else xh = xl + 1;
                                double ly = yv - (double)yl, lx = xv - (double)xl, hy = 1 - ly, hx = 1 - lx;
                                const void *d = x->data;
                                v1 = hy * hx * lt_load_f64(d, x->dtype, base + yl * W + xl);
                                v2 = hy * lx * lt_load_f64(d, x->dtype, base + yl * W + xh);
                                v3 = ly * hx * lt_load_f64(d, x->dtype, base + yh * W + xl);
                                v4 = ly * lx * lt_load_f64(d, x->dtype, base + yh * W + xh);
                            }
                            if (!is_max) {
                                acc += v1 + v2 + v3 + v4;
                            } else {
                                double m = fmax(fmax(v1, v2), fmax(v3, v4));
                                if (first || m > acc) acc = m;
                                first = false;
                            }
                        }
                    }
                    if (!is_max) acc /= count;
                    lt_store_f64(y->data, y->dtype, ((r * C + c) * oh + ph) * ow + pw, acc);
                }
        }
    }
    return LT_OK;
}

lt_status lt_img_roialign_infer(lt_infer *ic, lt_node *n) {
    const lt_type *xt = lt_infer_in(n, 0);
    lt_dtype dt = xt ? xt->dtype : LT_UNDEFINED;
    const lt_type *x = lt_img_ranked(n, 0), *rois = lt_img_ranked(n, 1), *bi = lt_img_ranked(n, 2);
    if (x && x->rank != 4) return lt_infer_error(ic, n, "X must be 4-D, got rank %d", x->rank);
    lt_dim od[4] = {{-1, NULL}, {-1, NULL}, {lt_attr_int(n, "output_height", 1), NULL},
                    {lt_attr_int(n, "output_width", 1), NULL}};
    if (rois && rois->rank == 2) od[0] = rois->dims[0];
    else if (bi && bi->rank == 1) od[0] = bi->dims[0];
    if (x) od[1] = x->dims[1];
    return lt_infer_set(ic, n, 0, dt, 4, od);
}

/* ---- MaxRoiPool ---- */

lt_status lt_img_maxroipool_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *rois;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &rois));
    const int64_t *ps;
    if (lt_attr_ints(n, "pooled_shape", &ps) != 2)
        return lt_op_error(ev, n, LT_ERR_INVALID, "pooled_shape must have 2 entries");
    int64_t PH = ps[0], PW = ps[1];
    if (PH < 1 || PW < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "pooled_shape entries must be >= 1");
    double scale = lt_attr_float(n, "spatial_scale", 1.0f);
    if (x->rank != 4) return lt_op_error(ev, n, LT_ERR_INVALID, "X must be 4-D, got rank %d", x->rank);
    if (rois->rank != 2 || rois->dims[1] != 5)
        return lt_op_error(ev, n, LT_ERR_INVALID, "rois must be [num_rois, 5]");
    if (!lt_img_numeric(x->dtype) || !lt_img_numeric(rois->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes");
    int64_t R = rois->dims[0], N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t od[4] = {R, C, PH, PW};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, 4, od, &y));
    if (y->numel == 0) return LT_OK;
    for (int64_t r = 0; r < R; r++) {
        double bv = lt_load_f64(rois->data, rois->dtype, r * 5);
        if (!(bv >= 0 && bv < (double)N))
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %g out of range [0, %lld) at rois[%lld, 0]", bv,
                               (long long)N, (long long)r);
        int64_t b = (int64_t)bv;
        double cr[4];
        for (int k = 0; k < 4; k++) {
            double v = round(lt_load_f64(rois->data, rois->dtype, r * 5 + 1 + k) * scale);
            if (!isfinite(v) || fabs(v) > 1e15)
                return lt_op_error(ev, n, LT_ERR_INVALID, "roi %lld coordinate out of range", (long long)r);
            cr[k] = v;
        }
        int64_t sw = (int64_t)cr[0], sh = (int64_t)cr[1], ew = (int64_t)cr[2], eh = (int64_t)cr[3];
        int64_t rh = eh - sh + 1 > 1 ? eh - sh + 1 : 1, rw = ew - sw + 1 > 1 ? ew - sw + 1 : 1;
        double bh = (double)rh / (double)PH, bw = (double)rw / (double)PW;
        for (int64_t c = 0; c < C; c++) {
            int64_t base = (b * C + c) * H * W;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t hs = (int64_t)floor((double)ph * bh) + sh, he = (int64_t)ceil((double)(ph + 1) * bh) + sh;
                    int64_t ws = (int64_t)floor((double)pw * bw) + sw, we = (int64_t)ceil((double)(pw + 1) * bw) + sw;
                    hs = hs < 0 ? 0 : hs > H ? H : hs;
                    he = he < 0 ? 0 : he > H ? H : he;
                    ws = ws < 0 ? 0 : ws > W ? W : ws;
                    we = we < 0 ? 0 : we > W ? W : we;
                    double m = 0;
                    if (he > hs && we > ws) {
                        m = -INFINITY;
                        for (int64_t h = hs; h < he; h++)
                            for (int64_t w = ws; w < we; w++) {
                                double v = lt_load_f64(x->data, x->dtype, base + h * W + w);
                                if (v > m || isnan(v)) m = v;
                            }
                    }
                    lt_store_f64(y->data, y->dtype, ((r * C + c) * PH + ph) * PW + pw, m);
                }
        }
    }
    return LT_OK;
}

lt_status lt_img_maxroipool_infer(lt_infer *ic, lt_node *n) {
    const lt_type *xt = lt_infer_in(n, 0);
    lt_dtype dt = xt ? xt->dtype : LT_UNDEFINED;
    const lt_type *x = lt_img_ranked(n, 0), *rois = lt_img_ranked(n, 1);
    const int64_t *ps;
    if (lt_attr_ints(n, "pooled_shape", &ps) != 2) return lt_infer_error(ic, n, "pooled_shape must have 2 entries");
    if (x && x->rank != 4) return lt_infer_error(ic, n, "X must be 4-D, got rank %d", x->rank);
    lt_dim od[4] = {{-1, NULL}, {-1, NULL}, {ps[0], NULL}, {ps[1], NULL}};
    if (rois && rois->rank == 2) od[0] = rois->dims[0];
    if (x) od[1] = x->dims[1];
    return lt_infer_set(ic, n, 0, dt, 4, od);
}

/* ---- NonMaxSuppression ---- */

typedef struct nms_cand {
    float score;
    int64_t idx;
} nms_cand;

static int nms_cmp(const void *a, const void *b) {
    const nms_cand *x = a, *y = b;
    bool xn = isnan(x->score), yn = isnan(y->score);
    if (xn != yn) return xn ? 1 : -1; /* NaN last */
    if (!xn && x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx ? 1 : 0;
}

/* The candidates in nms_cmp order, taken one at a time from a binary heap (the greedy pass stops at
 * max_output_boxes_per_class, usually long before every candidate is sorted): heap[0] comes first. */
static void nms_sift(nms_cand *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, m = i;
        if (l < n && nms_cmp(&h[l], &h[m]) < 0) m = l;
        if (l + 1 < n && nms_cmp(&h[l + 1], &h[m]) < 0) m = l + 1;
        if (m == i) return;
        nms_cand t = h[i];
        h[i] = h[m], h[m] = t;
        i = m;
    }
}

static void nms_heapify(nms_cand *h, int64_t n) {
    for (int64_t i = n / 2 - 1; i >= 0; i--) nms_sift(h, n, i);
}

static nms_cand nms_pop(nms_cand *h, int64_t *n) {
    nms_cand top = h[0];
    h[0] = h[--*n];
    nms_sift(h, *n, 0);
    return top;
}

static void minmax(float a, float b, float *lo, float *hi) {
    if (a >= b) *lo = b, *hi = a;
    else *lo = a, *hi = b;
}

/* A box's edges and area in float32, as the reference's suppress_by_iou computes them (corners in
 * either order, or center and size); computed once per box, not per pair. */
typedef struct nms_box {
    float xlo, xhi, ylo, yhi, area;
} nms_box;

static nms_box nms_geometry(const float *b, bool center) {
    nms_box g;
    if (!center) {
        minmax(b[1], b[3], &g.xlo, &g.xhi);
        minmax(b[0], b[2], &g.ylo, &g.yhi);
    } else {
        float w = b[2] / 2, hh = b[3] / 2;
        g.xlo = b[0] - w, g.xhi = b[0] + w, g.ylo = b[1] - hh, g.yhi = b[1] + hh;
    }
    g.area = (g.xhi - g.xlo) * (g.yhi - g.ylo);
    return g;
}

/* Reference suppress_by_iou, in float32. */
static bool nms_suppress(const nms_box *b1, const nms_box *b2, float thr) {
    float ixlo = fmaxf(b1->xlo, b2->xlo), ixhi = fminf(b1->xhi, b2->xhi);
    if (!(ixhi > ixlo)) return false;
    float iylo = fmaxf(b1->ylo, b2->ylo), iyhi = fminf(b1->yhi, b2->yhi);
    if (!(iyhi > iylo)) return false;
    float inter = (ixhi - ixlo) * (iyhi - iylo);
    if (!(inter > 0)) return false;
    float uni = b1->area + b2->area - inter;
    if (!(b1->area > 0) || !(b2->area > 0) || !(uni > 0)) return false;
    return inter / uni > thr;
}

lt_status lt_img_nms_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *boxes, *scores, *mo = NULL, *iou = NULL, *st = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &boxes));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &scores));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &mo));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &iou));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 4, &st));
    int64_t cpb = lt_attr_int(n, "center_point_box", 0);
    if (cpb != 0 && cpb != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "center_point_box must be 0 or 1");
    if (boxes->rank != 3 || boxes->dims[2] != 4)
        return lt_op_error(ev, n, LT_ERR_INVALID, "boxes must be [num_batches, num_boxes, 4]");
    if (scores->rank != 3 || scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return lt_op_error(ev, n, LT_ERR_INVALID, "scores must be [num_batches, num_classes, num_boxes] matching boxes");
    if (!lt_dtype_is_float(boxes->dtype) || !lt_dtype_is_float(scores->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "boxes and scores must be float tensors");
    int64_t max_out = 0;
    float iou_thr = 0, score_thr = 0;
    bool use_score = false;
    if (mo && mo->numel > 0) {
        if (!lt_dtype_is_int(mo->dtype))
            return lt_op_error(ev, n, LT_ERR_INVALID, "max_output_boxes_per_class must be an integer tensor");
        max_out = lt_load_i64(mo->data, mo->dtype, 0);
        if (max_out < 0) max_out = 0;
    }
    if (iou && iou->numel > 0) {
        if (!lt_img_numeric(iou->dtype)) return lt_op_error(ev, n, LT_ERR_INVALID, "iou_threshold must be numeric");
        iou_thr = (float)lt_load_f64(iou->data, iou->dtype, 0);
    }
    if (st && st->numel > 0) {
        if (!lt_img_numeric(st->dtype)) return lt_op_error(ev, n, LT_ERR_INVALID, "score_threshold must be numeric");
        score_thr = (float)lt_load_f64(st->data, st->dtype, 0);
        use_score = true;
    }
    int64_t B = boxes->dims[0], K = scores->dims[1], M = boxes->dims[1];
    if (max_out > M) max_out = M;
    nms_cand *cand = NULL;
    int64_t *sel = NULL, *res = NULL, n_res = 0, cap_res = 0;
    nms_box *bx = NULL;
    lt_status s = LT_OK;
    if (B > 0 && K > 0 && M > 0 && max_out > 0) {
        size_t mb;
        if (!lt_mul_size((size_t)M, sizeof(nms_box), &mb))
            return lt_op_error(ev, n, LT_ERR_NOMEM, "too many boxes");
        cand = lt_alloc(ev->ctx, (size_t)M * sizeof *cand, "nms candidates");
        sel = lt_alloc(ev->ctx, (size_t)M * sizeof *sel, "nms selection");
        bx = lt_alloc(ev->ctx, mb, "nms boxes");
        if (!cand || !sel || !bx) s = LT_ERR_NOMEM;
    }
    for (int64_t b = 0; s == LT_OK && cand && b < B; b++) {
        for (int64_t i = 0; i < M; i++) {
            float c[4];
            for (int e = 0; e < 4; e++) c[e] = (float)lt_load_f64(boxes->data, boxes->dtype, (b * M + i) * 4 + e);
            bx[i] = nms_geometry(c, cpb == 1);
        }
        for (int64_t k = 0; s == LT_OK && k < K; k++) {
            int64_t nc = 0, ns = 0;
            for (int64_t i = 0; i < M; i++) {
                float sc = (float)lt_load_f64(scores->data, scores->dtype, (b * K + k) * M + i);
                if (use_score && !(sc > score_thr)) continue;
                cand[nc++] = (nms_cand){sc, i};
            }
            nms_heapify(cand, nc);
            while (nc > 0 && ns < max_out) {
                nms_cand cd = nms_pop(cand, &nc);
                bool keep = true;
                for (int64_t j = 0; j < ns && keep; j++)
                    if (nms_suppress(&bx[cd.idx], &bx[sel[j]], iou_thr)) keep = false;
                if (!keep) continue;
                sel[ns++] = cd.idx;
                if (n_res == cap_res) {
                    int64_t nc2 = cap_res ? cap_res * 2 : 64;
                    int64_t *nr = lt_mem_realloc(res, (size_t)nc2 * 3 * sizeof *nr);
                    if (!nr) {
                        s = lt_error(ev->ctx, LT_ERR_NOMEM, "out of memory (nms output)");
                        break;
                    }
                    res = nr;
                    cap_res = nc2;
                }
                res[n_res * 3] = b, res[n_res * 3 + 1] = k, res[n_res * 3 + 2] = cd.idx;
                n_res++;
            }
        }
    }
    if (s == LT_OK) {
        int64_t od[2] = {n_res, 3};
        lt_tensor *y;
        s = lt_out_new(ev, n, out, 0, LT_INT64, 2, od, &y);
        if (s == LT_OK && n_res) memcpy(y->data, res, (size_t)n_res * 3 * sizeof(int64_t));
    }
    lt_mem_free(cand);
    lt_mem_free(sel);
    lt_mem_free(bx);
    lt_mem_free(res);
    return s;
}

lt_status lt_img_nms_infer(lt_infer *ic, lt_node *n) {
    int64_t od[2] = {-1, 3};
    return lt_infer_set_i64(ic, n, 0, LT_INT64, 2, od);
}
