/* nn_conv.c — convolutions: Conv, ConvInteger, QLinearConv, ConvTranspose, DeformConv, Col2Im.
 *
 * Shapes: X [N, C, in...], W [M, C/group, k...] (ConvTranspose: W [C, M/group, k...]). The window
 * geometry (kernel, strides, dilations, pads, auto_pad) comes from nn_geom_init; every shape is
 * checked before the kernels in nn_kernels.c run. Float convolutions run in float32 (float, float16,
 * bfloat16) or float64 (double); the integer ones in exact wrapping 64-bit arithmetic. */
#include "nn_impl.h"
#include "nn_convt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GEOM_ERR(ev, n, err) lt_op_error(ev, n, LT_ERR_INVALID, "%s", err)

static int64_t floordiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* The rules of the convolutions on X [N, C, in...] and W [M, C/group, k...]: ranks, channels, group,
 * then the window geometry (nn_geom_init). Ranks and dims may be unknown (shape inference: dim -1,
 * wr < 0 for an unknown W); every rule whose operands are known is checked. Shape inference and
 * eval both call it, so every backend reports the same error. */
static lt_status conv_check(lt_ctx *ctx, const lt_node *n, int xr, const int64_t *xd, int wr, const int64_t *wd,
                            nn_geom *g) {
    char err[256];
    if (xr < 3) return lt_node_error(ctx, n, LT_ERR_INVALID, "input X must have rank >= 3, got %d", xr);
    if (wr >= 0 && wr != xr)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "weight rank %d differs from input rank %d", wr, xr);
    int64_t group = lt_attr_int(n, "group", 1), cg;
    if (group < 1) return lt_node_error(ctx, n, LT_ERR_INVALID, "group %lld must be >= 1", (long long)group);
    if (wr >= 0 && wd[1] >= 0 && xd[1] >= 0 && (!lt_mul_i64(wd[1], group, &cg) || cg != xd[1]))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "input has %lld channels but weight expects %lld x group %lld",
                             (long long)xd[1], (long long)wd[1], (long long)group);
    if (wr >= 0 && wd[0] >= 0 && wd[0] % group != 0)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%lld output channels are not divisible by group %lld",
                             (long long)wd[0], (long long)group);
    int64_t kern[LT_MAX_RANK];
    for (int i = 0; i < xr - 2; i++) kern[i] = wr >= 0 ? wd[2 + i] : -1;
    if (!nn_geom_init(n, xr - 2, xd + 2, kern, false, g, err, sizeof err))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s", err);
    return LT_OK;
}

/* Bias of rank br, dims bd (br < 0: unknown shape; M < 0: unknown count): 1-D with M elements. */
static lt_status bias_check(lt_ctx *ctx, const lt_node *n, int br, const int64_t *bd, int64_t M) {
    if (br < 0) return LT_OK;
    if (br != 1 || (M >= 0 && bd[0] >= 0 && bd[0] != M))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "bias must be 1-D with %lld elements", (long long)M);
    return LT_OK;
}

/* X [N,C,in...] and W [M, C/group, k...]: check and compute the geometry. */
static lt_status conv_setup(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *w, nn_geom *g) {
    return conv_check(ev->ctx, n, x->rank, x->dims, w->rank, w->dims, g);
}

static lt_status check_bias(lt_eval *ev, const lt_node *n, const lt_tensor *b, int64_t M, lt_dtype dt) {
    if (!b) return LT_OK;
    LT_TRY(bias_check(ev->ctx, n, b->rank, b->dims, M));
    if (dt != LT_UNDEFINED && b->dtype != dt)
        return lt_op_error(ev, n, LT_ERR_INVALID, "bias dtype %s differs from %s", lt_dtype_name(b->dtype),
                           lt_dtype_name(dt));
    return LT_OK;
}

/* Run the float convolution kernel (transposed or not) on float-class tensors into y. */
static lt_status run_float(lt_eval *ev, const lt_node *n, const nn_geom *g, bool transposed, const lt_tensor *x,
                           const lt_tensor *w, const lt_tensor *b, int64_t M, int64_t group, lt_tensor *y) {
    int64_t N = x->dims[0], C = x->dims[1];
    bool ok;
    if (x->dtype == LT_DOUBLE) {
        const double *bd = b ? b->data : NULL;
        ok = transposed ? nn_convt_f64(g, N, C, M, group, x->data, w->data, bd, y->data)
                        : nn_conv_f64(g, N, C, M, group, x->data, w->data, bd, y->data);
    } else {
        const float *xf, *wf, *bf = NULL;
        float *xo = NULL, *wo = NULL, *bo = NULL, *yo = NULL;
        lt_status s = nn_f32_view(ev, n, x, &xf, &xo);
        if (!s) s = nn_f32_view(ev, n, w, &wf, &wo);
        if (!s && b) s = nn_f32_view(ev, n, b, &bf, &bo);
        float *yf = y->data;
        if (!s && y->dtype != LT_FLOAT) {
            yf = yo = nn_alloc(ev, n, y->numel, sizeof(float), "the float32 output");
            if (!yo) s = LT_ERR_NOMEM;
        }
        ok = true;
        if (!s) {
            ok = transposed ? nn_convt_f32(g, N, C, M, group, xf, wf, bf, yf)
                            : nn_conv_f32(g, N, C, M, group, xf, wf, bf, yf);
            if (ok && yo) nn_store_f32(y, yo);
        }
        lt_mem_free(xo);
        lt_mem_free(wo);
        lt_mem_free(bo);
        lt_mem_free(yo);
        if (s) return s;
    }
    if (!ok) return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (convolution scratch)");
    return LT_OK;
}

static lt_status new_output(lt_eval *ev, const lt_node *n, lt_datum **out, lt_dtype dt, int64_t N, int64_t M,
                            const nn_geom *g, lt_tensor **y) {
    int64_t dims[LT_MAX_RANK];
    dims[0] = N;
    dims[1] = M;
    for (int i = 0; i < g->nsp; i++) dims[2 + i] = g->out[i];
    return lt_out_new(ev, n, out, 0, dt, g->nsp + 2, dims, y);
}

/* ---- Conv ---- */

lt_status nn_eval_Conv(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *w, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &w));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &b));
    if (!nn_is_float(x->dtype) || w->dtype != x->dtype)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes %s, %s", lt_dtype_name(x->dtype),
                           lt_dtype_name(w->dtype));
    int64_t group = lt_attr_int(n, "group", 1);
    nn_geom g;
    LT_TRY(conv_setup(ev, n, x, w, &g));
    int64_t M = w->dims[0];
    LT_TRY(check_bias(ev, n, b, M, x->dtype));
    lt_tensor *y;
    LT_TRY(new_output(ev, n, out, x->dtype, x->dims[0], M, &g, &y));
    return run_float(ev, n, &g, false, x, w, b, M, group, y);
}

/* Output [N, M, out...] from input types (conv_check's rules, bias input bi when >= 0); dt the output
 * dtype. */
static lt_status infer_conv_like(lt_infer *ic, lt_node *n, int xi, int wi, int bi, lt_dtype dt) {
    int xr, wr, br;
    int64_t xd[LT_MAX_RANK], wd[LT_MAX_RANK], bd[LT_MAX_RANK];
    if (!nn_in_shape(n, xi, &xr, xd)) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    if (!nn_in_shape(n, wi, &wr, wd)) wr = -1;
    nn_geom g;
    LT_TRY(conv_check(ic->ctx, n, xr, xd, wr, wd, &g));
    int64_t M = wr >= 0 ? wd[0] : -1;
    if (bi >= 0 && nn_in_shape(n, bi, &br, bd)) LT_TRY(bias_check(ic->ctx, n, br, bd, M));
    int64_t od[LT_MAX_RANK];
    od[0] = xd[0];
    od[1] = M;
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[i];
    return nn_infer_out(ic, n, 0, dt, xr, od, nn_in_dim(n, xi, 0), nn_in_dim(n, wi, 0));
}

lt_status nn_infer_Conv(lt_infer *ic, lt_node *n) { return infer_conv_like(ic, n, 0, 1, 2, nn_in_dtype(n, 0)); }

/* ---- ConvInteger / QLinearConv ---- */

static bool is_q8(lt_dtype dt) { return dt == LT_UINT8 || dt == LT_INT8; }

/* The rules of the integer convolutions' operands, shared by eval and shape inference: 8-bit x and
 * w (LT_UNDEFINED: unknown), and each zero point (dtype zdt, znumel elements, -1 unknown) an integer
 * tensor of one element or `count` (-1 unknown). */
static lt_status q8_dtypes_check(lt_ctx *ctx, const lt_node *n, lt_dtype xdt, lt_dtype wdt) {
    if ((xdt != LT_UNDEFINED && !is_q8(xdt)) || (wdt != LT_UNDEFINED && !is_q8(wdt)))
        return lt_node_error(ctx, n, LT_ERR_UNSUPPORTED, "unsupported dtypes %s, %s", lt_dtype_name(xdt),
                             lt_dtype_name(wdt));
    return LT_OK;
}
static lt_status zp_rule(lt_ctx *ctx, const lt_node *n, lt_dtype zdt, int64_t znumel, int64_t count, const char *what) {
    if (znumel >= 0 && count >= 0 && znumel != 1 && znumel != count)
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must have 1 or %lld elements, got %lld", what, (long long)count,
                             (long long)znumel);
    if (zdt != LT_UNDEFINED && !lt_dtype_is_int(zdt))
        return lt_node_error(ctx, n, LT_ERR_INVALID, "%s must be an integer tensor", what);
    return LT_OK;
}
/* Zero point value for channel m: zp may be NULL (0), one element, or `count` elements. */
static lt_status zp_check(lt_eval *ev, const lt_node *n, const lt_tensor *zp, int64_t count, const char *what) {
    if (!zp) return LT_OK;
    return zp_rule(ev->ctx, n, zp->dtype, zp->numel, count, what);
}
static int64_t zp_at(const lt_tensor *zp, int64_t i) {
    if (!zp) return 0;
    return lt_load_i64(zp->data, zp->dtype, zp->numel == 1 ? 0 : i);
}

/* The integer convolution acc[N, M, out] = sum (x - xzp)(w - wzp[m]) (+ bias), exact mod 2^64. */
static lt_status int_conv(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *xzp,
                          const lt_tensor *w, const lt_tensor *wzp, const lt_tensor *b, nn_geom *g,
                          int64_t *M_out, uint64_t **acc_out, int64_t *count) {
    LT_TRY(q8_dtypes_check(ev->ctx, n, x->dtype, w->dtype));
    int64_t group = lt_attr_int(n, "group", 1);
    LT_TRY(conv_setup(ev, n, x, w, g));
    int64_t M = w->dims[0];
    LT_TRY(zp_check(ev, n, xzp, 1, "x_zero_point"));
    LT_TRY(zp_check(ev, n, wzp, M, "w_zero_point"));
    if (b && (b->rank != 1 || b->numel != M || !lt_dtype_is_int(b->dtype)))
        return lt_op_error(ev, n, LT_ERR_INVALID, "bias must be a 1-D integer tensor with %lld elements", (long long)M);
    int64_t P = 1, total;
    for (int i = 0; i < g->nsp; i++) P *= g->out[i];
    if (!lt_mul_i64(x->dims[0] * M, P, &total))
        return lt_op_error(ev, n, LT_ERR_NOMEM, "output too large");
    uint64_t *xb = NULL, *wb = NULL, *bb = NULL, *acc = NULL;
    lt_status s = nn_u64_copy(ev, n, x, &xb);
    if (!s) s = nn_u64_copy(ev, n, w, &wb);
    if (!s && b) s = nn_u64_copy(ev, n, b, &bb);
    if (!s && !(acc = nn_alloc(ev, n, total, sizeof(uint64_t), "the accumulator"))) s = LT_ERR_NOMEM;
    if (!s) {
        uint64_t xz = (uint64_t)zp_at(xzp, 0);
        for (int64_t i = 0; i < x->numel; i++) xb[i] -= xz;
        int64_t per = M ? w->numel / M : 0;
        for (int64_t m = 0; m < M; m++) {
            uint64_t wz = (uint64_t)zp_at(wzp, m);
            for (int64_t i = 0; i < per; i++) wb[m * per + i] -= wz;
        }
        if (!nn_conv_u64(g, x->dims[0], x->dims[1], M, group, xb, wb, bb, acc))
            s = lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (convolution scratch)");
    }
    lt_mem_free(xb);
    lt_mem_free(wb);
    lt_mem_free(bb);
    if (s) {
        lt_mem_free(acc);
        return s;
    }
    *M_out = M;
    *acc_out = acc;
    *count = total;
    return LT_OK;
}

lt_status nn_eval_ConvInteger(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *w, *xzp, *wzp;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &w));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &xzp));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &wzp));
    nn_geom g;
    int64_t M, count;
    uint64_t *acc;
    LT_TRY(int_conv(ev, n, x, xzp, w, wzp, NULL, &g, &M, &acc, &count));
    lt_tensor *y;
    lt_status s = new_output(ev, n, out, LT_INT32, x->dims[0], M, &g, &y);
    if (!s) {
        int32_t *yd = y->data;
        for (int64_t i = 0; i < count; i++) yd[i] = (int32_t)(uint32_t)acc[i];
    }
    lt_mem_free(acc);
    return s;
}

/* The eval hook's rules: 8-bit operands, the convolution's shapes, zero points (x: one value; w:
 * one, or one per output channel). */
lt_status nn_infer_ConvInteger(lt_infer *ic, lt_node *n) {
    lt_dtype xdt = lt_infer_in(n, 0) ? nn_in_dtype(n, 0) : LT_UNDEFINED;
    lt_dtype wdt = lt_infer_in(n, 1) ? nn_in_dtype(n, 1) : LT_UNDEFINED;
    LT_TRY(q8_dtypes_check(ic->ctx, n, xdt, wdt));
    LT_TRY(infer_conv_like(ic, n, 0, 1, -1, LT_INT32));
    int wr;
    int64_t wd[LT_MAX_RANK];
    int64_t M = nn_in_shape(n, 1, &wr, wd) && wr >= 1 ? wd[0] : -1;
    for (int i = 2; i < 4 && i < n->n_in; i++) {
        if (!n->in[i]) continue;
        int r;
        int64_t d[LT_MAX_RANK], numel = -1;
        if (nn_in_shape(n, i, &r, d)) {
            numel = 1;
            for (int k = 0; k < r && numel >= 0; k++) numel = d[k] < 0 ? -1 : numel * d[k];
        }
        LT_TRY(zp_rule(ic->ctx, n, nn_in_dtype(n, i), numel, i == 2 ? 1 : M, i == 2 ? "x_zero_point" : "w_zero_point"));
    }
    return LT_OK;
}

lt_status nn_eval_QLinearConv(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *xs, *xzp, *w, *ws, *wzp, *ys, *yzp, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &xs));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &xzp));
    LT_TRY(lt_in_tensor(ev, n, in, 3, &w));
    LT_TRY(lt_in_tensor(ev, n, in, 4, &ws));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 5, &wzp));
    LT_TRY(lt_in_tensor(ev, n, in, 6, &ys));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 7, &yzp));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 8, &b));
    if (!nn_is_float(xs->dtype) || !nn_is_float(ws->dtype) || !nn_is_float(ys->dtype))
        return lt_op_error(ev, n, LT_ERR_INVALID, "scales must be floating point");
    if (xs->numel != 1 || ys->numel != 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "x_scale and y_scale must be scalars");
    lt_dtype ydt = yzp ? yzp->dtype : x->dtype;
    if (!is_q8(ydt)) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported output dtype %s", lt_dtype_name(ydt));
    if (yzp && yzp->numel != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "y_zero_point must be a scalar");
    nn_geom g;
    int64_t M, count;
    uint64_t *acc;
    LT_TRY(int_conv(ev, n, x, xzp, w, wzp, b, &g, &M, &acc, &count));
    lt_status s = LT_OK;
    if (ws->numel != 1 && ws->numel != M)
        s = lt_op_error(ev, n, LT_ERR_INVALID, "w_scale must have 1 or %lld elements", (long long)M);
    lt_tensor *y;
    if (!s) s = new_output(ev, n, out, ydt, x->dims[0], M, &g, &y);
    if (!s) {
        int64_t P = M && x->dims[0] ? count / (x->dims[0] * M) : 0;
        double xsv = lt_load_f64(xs->data, xs->dtype, 0), ysv = lt_load_f64(ys->data, ys->dtype, 0);
        double zp = yzp ? (double)lt_load_i64(yzp->data, yzp->dtype, 0) : 0;
        double lo = ydt == LT_INT8 ? -128 : 0, hi = ydt == LT_INT8 ? 127 : 255;
        for (int64_t nm = 0; nm < x->dims[0] * M; nm++) {
            int64_t m = nm % M;
            double wsv = lt_load_f64(ws->data, ws->dtype, ws->numel == 1 ? 0 : m);
            /* the scales combine in their own precision (float32 for float scales) */
            double mult = nn_round_to(ws->dtype, nn_round_to(ws->dtype, xsv * wsv) / ysv);
            for (int64_t p = 0; p < P; p++) {
                int64_t i = nm * P + p;
                double r = (double)(int32_t)(uint32_t)acc[i] * mult + zp;
                r = r < lo ? lo : r > hi ? hi : r;
                if (r != r) r = lo;
                lt_store_i64(y->data, ydt, i, (int64_t)rint(r));
            }
        }
    }
    lt_mem_free(acc);
    return s;
}

lt_status nn_infer_QLinearConv(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 7);
    if (dt == LT_UNDEFINED) dt = nn_in_dtype(n, 0);
    return infer_conv_like(ic, n, 0, 3, 8, dt);
}

/* ---- ConvTranspose ---- */

/* Geometry of a transposed convolution: g->in = X spatial, g->out = Y spatial. */
static bool convt_geom(const lt_node *n, int nsp, const int64_t *in, const int64_t *kernel, nn_geom *g, char *err,
                       size_t errn) {
    if (!nn_geom_attrs(n, nsp, g, err, errn)) return false;
    nn_autopad ap;
    if (!nn_parse_autopad(n, &ap, err, errn)) return false;
    const int64_t *ks, *op, *os;
    int kc = lt_attr_ints(n, "kernel_shape", &ks);
    if (ks && kc != nsp) {
        snprintf(err, errn, "kernel_shape has %d entries, expected %d", kc, nsp);
        return false;
    }
    int opc = lt_attr_ints(n, "output_padding", &op);
    if (op && opc != nsp && opc != 2 * nsp) {
        snprintf(err, errn, "output_padding has %d entries, expected %d", opc, nsp);
        return false;
    }
    int osc = lt_attr_ints(n, "output_shape", &os);
    if (os && osc != nsp && osc != nsp + 2) {
        snprintf(err, errn, "output_shape has %d entries, expected %d", osc, nsp);
        return false;
    }
    if (os && osc == nsp + 2) os += 2;
    for (int i = 0; i < nsp; i++) {
        int64_t k = ks ? ks[i] : kernel[i];
        if (ks && kernel[i] >= 0 && ks[i] != kernel[i]) {
            snprintf(err, errn, "kernel_shape[%d] = %lld disagrees with the weight's %lld", i, (long long)ks[i],
                     (long long)kernel[i]);
            return false;
        }
        g->k[i] = k;
        g->in[i] = in[i];
        g->out[i] = -1;
        int64_t opad = op ? op[i] : 0, span, t;
        if (opad < 0) {
            snprintf(err, errn, "output_padding must be non-negative");
            return false;
        }
        if (k < 0 || in[i] < 0) {
            if (os) g->out[i] = os[i];
            else if ((ap == NN_PAD_SAME_UPPER || ap == NN_PAD_SAME_LOWER) && in[i] >= 0) g->out[i] = in[i] * g->s[i];
            continue;
        }
        if (k < 1 || !nn_span(k, g->d[i], &span) || in[i] < 1 || !lt_mul_i64(g->s[i], in[i] - 1, &t) ||
            !lt_add_i64(t, opad + span, &t)) {
            snprintf(err, errn, "invalid window geometry in spatial dim %d", i);
            return false;
        }
        /* t = the full (unpadded) output extent */
        if (ap == NN_PAD_VALID) g->pb[i] = g->pe[i] = 0;
        if (os || ap == NN_PAD_SAME_UPPER || ap == NN_PAD_SAME_LOWER) {
            int64_t o;
            if (os) o = os[i];
            else if (!lt_mul_i64(in[i], g->s[i], &o)) o = -1;
            if (o < 0) {
                snprintf(err, errn, "invalid output_shape[%d]", i);
                return false;
            }
            int64_t total = t - o, half = floordiv2(total);
            if (ap == NN_PAD_SAME_UPPER) {
                g->pb[i] = half;
                g->pe[i] = total - half;
            } else {
                g->pb[i] = total - half;
                g->pe[i] = half;
            }
            g->out[i] = o;
        } else {
            int64_t o = t - g->pb[i] - g->pe[i];
            if (o < 0) {
                snprintf(err, errn, "pads exceed the output extent in spatial dim %d", i);
                return false;
            }
            g->out[i] = o;
        }
    }
    return true;
}

bool lt_convt_geometry(const lt_node *n, int nsp, const int64_t *in, const int64_t *kernel, lt_convt_geom *g,
                       char *err, size_t errn) {
    nn_geom ng;
    if (nsp < 1 || nsp > NN_MAX_SP) {
        snprintf(err, errn, "%d spatial dims", nsp);
        return false;
    }
    if (!convt_geom(n, nsp, in, kernel, &ng, err, errn)) return false;
    g->nsp = nsp;
    for (int i = 0; i < nsp; i++) {
        g->in[i] = ng.in[i];
        g->k[i] = ng.k[i];
        g->s[i] = ng.s[i];
        g->d[i] = ng.d[i];
        g->pad_begin[i] = ng.pb[i];
        g->pad_end[i] = ng.pe[i];
        g->out[i] = ng.out[i];
    }
    return true;
}

lt_status nn_eval_ConvTranspose(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *w, *b;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &w));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &b));
    if (!nn_is_float(x->dtype) || w->dtype != x->dtype)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes %s, %s", lt_dtype_name(x->dtype),
                           lt_dtype_name(w->dtype));
    if (x->rank < 3 || w->rank != x->rank)
        return lt_op_error(ev, n, LT_ERR_INVALID, "input rank %d and weight rank %d must be equal and >= 3", x->rank,
                           w->rank);
    int64_t group = lt_attr_int(n, "group", 1), M;
    if (group < 1 || x->dims[1] % group != 0 || w->dims[0] != x->dims[1] || !lt_mul_i64(w->dims[1], group, &M))
        return lt_op_error(ev, n, LT_ERR_INVALID, "weight [%lld, %lld, ...] does not fit %lld input channels, group %lld",
                           (long long)w->dims[0], (long long)w->dims[1], (long long)x->dims[1], (long long)group);
    nn_geom g;
    char err[256];
    if (!convt_geom(n, x->rank - 2, x->dims + 2, w->dims + 2, &g, err, sizeof err)) return GEOM_ERR(ev, n, err);
    LT_TRY(check_bias(ev, n, b, M, x->dtype));
    lt_tensor *y;
    LT_TRY(new_output(ev, n, out, x->dtype, x->dims[0], M, &g, &y));
    for (int i = 0; i < g.nsp; i++)
        if (g.in[i] == 0) return LT_OK;
    return run_float(ev, n, &g, true, x, w, b, M, group, y);
}

lt_status nn_infer_ConvTranspose(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    int xr, wr;
    int64_t xd[LT_MAX_RANK], wd[LT_MAX_RANK], kern[LT_MAX_RANK], M = -1;
    if (!nn_in_shape(n, 0, &xr, xd) || xr < 3) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    for (int i = 0; i < xr - 2; i++) kern[i] = -1;
    if (nn_in_shape(n, 1, &wr, wd) && wr == xr) {
        int64_t group = lt_attr_int(n, "group", 1);
        if (wd[1] >= 0 && group >= 1 && !lt_mul_i64(wd[1], group, &M)) M = -1;
        for (int i = 0; i < xr - 2; i++) kern[i] = wd[2 + i];
    }
    nn_geom g;
    char err[256];
    if (!convt_geom(n, xr - 2, xd + 2, kern, &g, err, sizeof err)) return lt_infer_error(ic, n, "%s", err);
    int64_t od[LT_MAX_RANK];
    od[0] = xd[0];
    od[1] = M;
    for (int i = 0; i < g.nsp; i++) od[2 + i] = g.out[i];
    return nn_infer_out(ic, n, 0, dt, xr, od, nn_in_dim(n, 0, 0), (lt_dim){-1, NULL});
}

/* ---- DeformConv (2-D) ---- */

/* Bilinear sample of plane p [H, W] at (h, w); zero outside (GridSample, align_corners). */
static double bilinear(const double *p, int64_t H, int64_t W, double h, double w) {
    if (!(h > -1.0 && h < (double)H && w > -1.0 && w < (double)W)) return 0.0;
    double hf = floor(h), wf = floor(w);
    int64_t h0 = (int64_t)hf, w0 = (int64_t)wf;
    double dh = h - hf, dw = w - wf, v = 0;
    for (int a = 0; a < 2; a++)
        for (int c = 0; c < 2; c++) {
            int64_t hh = h0 + a, ww = w0 + c;
            if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
            double wt = (a ? dh : 1 - dh) * (c ? dw : 1 - dw);
            v += wt * p[hh * W + ww];
        }
    return v;
}

lt_status nn_eval_DeformConv(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *w, *off, *b, *mask;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &w));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &off));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &b));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 4, &mask));
    if (!nn_is_float(x->dtype) || w->dtype != x->dtype || off->dtype != x->dtype || (mask && mask->dtype != x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtypes (all inputs must share a float dtype)");
    if (x->rank != 4)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "only 2-D deformable convolution is supported (input rank %d)",
                           x->rank);
    int64_t group = lt_attr_int(n, "group", 1), og = lt_attr_int(n, "offset_group", 1);
    nn_geom g;
    LT_TRY(conv_setup(ev, n, x, w, &g));
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], H = x->dims[2], W = x->dims[3];
    int64_t kh = g.k[0], kw = g.k[1], oh = g.out[0], ow = g.out[1], kk = kh * kw;
    LT_TRY(check_bias(ev, n, b, M, x->dtype));
    if (og < 1 || C % og != 0)
        return lt_op_error(ev, n, LT_ERR_INVALID, "offset_group %lld must divide %lld channels", (long long)og,
                           (long long)C);
    if (off->rank != 4 || off->dims[0] != N || off->dims[1] != og * kk * 2 || off->dims[2] != oh || off->dims[3] != ow)
        return lt_op_error(ev, n, LT_ERR_INVALID, "offset must have shape [%lld, %lld, %lld, %lld]", (long long)N,
                           (long long)(og * kk * 2), (long long)oh, (long long)ow);
    if (mask && (mask->rank != 4 || mask->dims[0] != N || mask->dims[1] != og * kk || mask->dims[2] != oh ||
                 mask->dims[3] != ow))
        return lt_op_error(ev, n, LT_ERR_INVALID, "mask must have shape [%lld, %lld, %lld, %lld]", (long long)N,
                           (long long)(og * kk), (long long)oh, (long long)ow);
    lt_tensor *y;
    LT_TRY(new_output(ev, n, out, x->dtype, N, M, &g, &y));
    double *xd = NULL, *wd = NULL, *od = NULL, *md = NULL, *bd = NULL, *yd = NULL;
    lt_status s = nn_f64_copy(ev, n, x, &xd);
    if (!s) s = nn_f64_copy(ev, n, w, &wd);
    if (!s) s = nn_f64_copy(ev, n, off, &od);
    if (!s && mask) s = nn_f64_copy(ev, n, mask, &md);
    if (!s && b) s = nn_f64_copy(ev, n, b, &bd);
    if (!s && !(yd = nn_alloc(ev, n, y->numel, sizeof(double), "the output"))) s = LT_ERR_NOMEM;
    if (!s) {
        int64_t Cg = C / group, Mg = M / group, cpo = C / og, P = oh * ow;
        double *samp = NULL; /* sampled input values for one (n, c): [kk, P] */
        if (!(samp = nn_alloc(ev, n, kk * P, sizeof(double), "samples"))) s = LT_ERR_NOMEM;
        for (int64_t i = 0; i < y->numel && !s; i++) yd[i] = b ? bd[(i / P) % M] : 0.0;
        for (int64_t bn = 0; bn < N && !s; bn++)
            for (int64_t c = 0; c < C; c++) {
                int64_t ogi = c / cpo, gi = c / Cg;
                const double *plane = xd + (bn * C + c) * H * W;
                for (int64_t a = 0; a < kh; a++)
                    for (int64_t e = 0; e < kw; e++) {
                        int64_t kidx = a * kw + e;
                        const double *offh = od + ((bn * og + ogi) * kk * 2 + kidx * 2) * P, *offw = offh + P;
                        const double *mk = md ? md + ((bn * og + ogi) * kk + kidx) * P : NULL;
                        for (int64_t i = 0; i < oh; i++)
                            for (int64_t j = 0; j < ow; j++) {
                                int64_t p = i * ow + j;
                                double hh = (double)(i * g.s[0] - g.pb[0] + a * g.d[0]) + offh[p];
                                double ww = (double)(j * g.s[1] - g.pb[1] + e * g.d[1]) + offw[p];
                                double v = bilinear(plane, H, W, hh, ww);
                                samp[kidx * P + p] = mk ? v * mk[p] : v;
                            }
                    }
                for (int64_t m = gi * Mg; m < (gi + 1) * Mg; m++) {
                    double *yo = yd + (bn * M + m) * P;
                    const double *wk = wd + (m * Cg + c % Cg) * kk;
                    for (int64_t kidx = 0; kidx < kk; kidx++)
                        for (int64_t p = 0; p < P; p++) yo[p] += wk[kidx] * samp[kidx * P + p];
                }
            }
        lt_mem_free(samp);
        if (!s) nn_store_f64(y, yd);
    }
    lt_mem_free(xd);
    lt_mem_free(wd);
    lt_mem_free(od);
    lt_mem_free(md);
    lt_mem_free(bd);
    lt_mem_free(yd);
    return s;
}

lt_status nn_infer_DeformConv(lt_infer *ic, lt_node *n) { return infer_conv_like(ic, n, 0, 1, 3, nn_in_dtype(n, 0)); }

/* ---- Col2Im ---- */

/* Geometry from image_shape and block_shape values; g->in = block grid, g->out = image. */
static bool col2im_geom(const lt_node *n, int nsp, const int64_t *image, const int64_t *block, nn_geom *g, char *err,
                        size_t errn) {
    if (!nn_geom_attrs(n, nsp, g, err, errn)) return false;
    for (int i = 0; i < nsp; i++) {
        int64_t span, t;
        if (block[i] < 1 || image[i] < 0 || !nn_span(block[i], g->d[i], &span) ||
            !lt_add_i64(image[i], g->pb[i] + g->pe[i], &t)) {
            snprintf(err, errn, "invalid image_shape/block_shape in dim %d", i);
            return false;
        }
        if (t - span < 0) {
            snprintf(err, errn, "block extent %lld exceeds the padded image size %lld (dim %d)", (long long)span,
                     (long long)t, i);
            return false;
        }
        g->k[i] = block[i];
        g->out[i] = image[i];
        g->in[i] = (t - span) / g->s[i] + 1;
    }
    return true;
}

lt_status nn_eval_Col2Im(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *ti, *tb;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &ti));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &tb));
    int64_t image[NN_MAX_SP], block[NN_MAX_SP];
    int ni, nb;
    LT_TRY(lt_tensor_ints(ev, n, ti, image, NN_MAX_SP, &ni));
    LT_TRY(lt_tensor_ints(ev, n, tb, block, NN_MAX_SP, &nb));
    if (ni != nb || ni < 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "image_shape (%d) and block_shape (%d) must have the same length >= 1",
                           ni, nb);
    if (x->rank != 3) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank 3, got %d", x->rank);
    if (x->dtype == LT_STRING || x->dtype == LT_BOOL || lt_dtype_get(x->dtype)->cls == LT_DC_COMPLEX)
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unsupported dtype %s", lt_dtype_name(x->dtype));
    nn_geom g;
    char err[256];
    if (!col2im_geom(n, ni, image, block, &g, err, sizeof err)) return GEOM_ERR(ev, n, err);
    int64_t K = 1, L = 1;
    for (int i = 0; i < ni; i++) {
        if (!lt_mul_i64(K, block[i], &K) || !lt_mul_i64(L, g.in[i], &L))
            return lt_op_error(ev, n, LT_ERR_INVALID, "block geometry overflows");
    }
    if (x->dims[1] % K != 0 || x->dims[2] != L)
        return lt_op_error(ev, n, LT_ERR_INVALID,
                           "input [%lld, %lld, %lld] does not match %lld-element blocks over %lld positions",
                           (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)K,
                           (long long)L);
    int64_t N = x->dims[0], C = x->dims[1] / K, dims[LT_MAX_RANK];
    dims[0] = N;
    dims[1] = C;
    for (int i = 0; i < ni; i++) dims[2 + i] = image[i];
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, ni + 2, dims, &y));
    if (y->numel == 0 || x->numel == 0) return LT_OK;
    bool isint = lt_dtype_is_int(x->dtype);
    lt_status s = LT_OK;
    if (isint) {
        uint64_t *xb = NULL, *yb = NULL;
        s = nn_u64_copy(ev, n, x, &xb);
        if (!s && !(yb = nn_alloc(ev, n, y->numel, sizeof(uint64_t), "the output"))) s = LT_ERR_NOMEM;
        if (!s) {
            memset(yb, 0, (size_t)y->numel * sizeof(uint64_t));
            nn_col2im_u64(&g, N * C, xb, yb);
            for (int64_t i = 0; i < y->numel; i++) lt_store_i64(y->data, y->dtype, i, (int64_t)yb[i]);
        }
        lt_mem_free(xb);
        lt_mem_free(yb);
    } else {
        double *xb = NULL, *yb = NULL;
        s = nn_f64_copy(ev, n, x, &xb);
        if (!s && !(yb = nn_alloc(ev, n, y->numel, sizeof(double), "the output"))) s = LT_ERR_NOMEM;
        if (!s) {
            memset(yb, 0, (size_t)y->numel * sizeof(double));
            nn_col2im_f64(&g, N * C, xb, yb);
            nn_store_f64(y, yb);
        }
        lt_mem_free(xb);
        lt_mem_free(yb);
    }
    return s;
}

lt_status nn_infer_Col2Im(lt_infer *ic, lt_node *n) {
    lt_dtype dt = nn_in_dtype(n, 0);
    int64_t image[NN_MAX_SP], block[NN_MAX_SP], xd[LT_MAX_RANK], od[LT_MAX_RANK];
    int ni, nb, xr;
    if (nn_const_ints(n, 1, image, NN_MAX_SP, &ni)) {
        od[0] = od[1] = -1;
        if (nn_in_shape(n, 0, &xr, xd) && xr == 3) {
            od[0] = xd[0];
            if (nn_const_ints(n, 2, block, NN_MAX_SP, &nb) && nb == ni && xd[1] >= 0) {
                int64_t K = 1;
                for (int i = 0; i < nb; i++)
                    if (block[i] < 1 || !lt_mul_i64(K, block[i], &K)) K = -1;
                if (K > 0) od[1] = xd[1] / K;
            }
        }
        for (int i = 0; i < ni; i++) od[2 + i] = image[i];
        return nn_infer_out(ic, n, 0, dt, ni + 2, od, nn_in_dim(n, 0, 0), (lt_dim){-1, NULL});
    }
    int r;
    if (nn_in_shape(n, 1, &r, xd) && r == 1 && xd[0] >= 0 && xd[0] <= NN_MAX_SP)
        return lt_infer_set(ic, n, 0, dt, (int)xd[0] + 2, NULL);
    return lt_infer_set(ic, n, 0, dt, -1, NULL);
}
