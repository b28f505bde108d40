/* image_signal.c — signal ops: DFT (opsets 17, 20), STFT (17), HannWindow, HammingWindow,
 * BlackmanWindow (17) and MelWeightMatrix (17): infer and eval.
 *
 * The transforms run in double on complex lines through a mixed-radix FFT (any length; prime factors
 * by direct summation), so results match numpy.fft to rounding. Layout: the last axis of a signal
 * is 1 (real) or 2 (real, imaginary). DFT semantics follow onnx's reference (op_dft.py): the line is
 * zero-padded or truncated to dft_length; onesided keeps the first n/2+1 bins; inverse divides by n;
 * inverse + onesided is an inverse real FFT (Hermitian half spectrum in, real signal of dft_length
 * out; default length 2 * (bins - 1)). Opset 17 takes axis as an attribute (default 1), opset 20 as
 * an optional input (default -2). STFT frames the signal (frame_step, window length or
 * frame_length), weights each frame by the window and transforms it with frame_length points.
 * The window functions and MelWeightMatrix reproduce the reference formulas (including the mel
 * bins' numpy floor division), stored in output_datatype.
 */
#include "image_impl.h"

#include <math.h>
#include <string.h>

#define SIG_PI 3.14159265358979323846

typedef struct cplx {
    double re, im;
} cplx;

/* ---- FFT ---- */

typedef struct fft_plan {
    int64_t n;
    cplx *tw;      /* tw[j] = exp(sign * 2 pi i j / n) */
    cplx *scratch; /* n entries */
    cplx *buf;     /* n entries: input line */
    cplx *out;     /* n entries */
} fft_plan;

static void fft_free(fft_plan *p) {
    lt_mem_free(p->tw);
    lt_mem_free(p->scratch);
    lt_mem_free(p->buf);
    lt_mem_free(p->out);
    memset(p, 0, sizeof *p);
}

static lt_status fft_init(lt_eval *ev, const lt_node *n, fft_plan *p, int64_t len, bool inverse) {
    memset(p, 0, sizeof *p);
    if (len < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "transform length %lld must be >= 1", (long long)len);
    if (len > ((int64_t)1 << 32)) return lt_op_error(ev, n, LT_ERR_NOMEM, "transform length %lld too large", (long long)len);
    p->n = len;
    size_t sz = (size_t)len * sizeof(cplx);
    p->tw = lt_alloc(ev->ctx, sz, "fft twiddles");
    p->scratch = p->tw ? lt_alloc(ev->ctx, sz, "fft scratch") : NULL;
    p->buf = p->scratch ? lt_alloc(ev->ctx, sz, "fft buffer") : NULL;
    p->out = p->buf ? lt_alloc(ev->ctx, sz, "fft buffer") : NULL;
    if (!p->out) {
        fft_free(p);
        return LT_ERR_NOMEM;
    }
    double sign = inverse ? 1.0 : -1.0;
    for (int64_t j = 0; j < len; j++) {
        double a = 2.0 * SIG_PI * (double)j / (double)len;
        p->tw[j] = (cplx){cos(a), sign * sin(a)};
    }
    return LT_OK;
}

static int64_t smallest_factor(int64_t n) {
    if (n % 2 == 0) return 2;
    for (int64_t f = 3; f * f <= n; f += 2)
        if (n % f == 0) return f;
    return n;
}

/* out[k] = sum_j in[j*stride] * w_n^(j*k), w_n = tw[step] (n = N / step). */
static void fft_rec(const fft_plan *p, const cplx *in, int64_t stride, cplx *out, int64_t n, int64_t step) {
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int64_t f = smallest_factor(n);
    if (f == n) { /* prime: direct summation */
        for (int64_t k = 0; k < n; k++) {
            double re = 0, im = 0;
            int64_t e = 0;
            for (int64_t j = 0; j < n; j++) {
                const cplx a = in[j * stride], w = p->tw[e * step];
                re += a.re * w.re - a.im * w.im;
                im += a.re * w.im + a.im * w.re;
                e += k;
                if (e >= n) e -= n;
            }
            out[k] = (cplx){re, im};
        }
        return;
    }
    int64_t m = n / f;
    for (int64_t r = 0; r < f; r++) fft_rec(p, in + r * stride, stride * f, out + r * m, m, step * f);
    cplx *t = p->scratch;
    for (int64_t k = 0; k < m; k++) {
        for (int64_t r = 0; r < f; r++) t[r] = out[r * m + k];
        for (int64_t q = 0; q < f; q++) {
            int64_t kk = k + q * m;
            double re = 0, im = 0;
            for (int64_t r = 0; r < f; r++) {
                int64_t e = (r * kk) % n;
                const cplx w = p->tw[e * step];
                re += t[r].re * w.re - t[r].im * w.im;
                im += t[r].re * w.im + t[r].im * w.re;
            }
            out[kk] = (cplx){re, im};
        }
    }
}

/* Transform p->buf into p->out. */
static void fft_run(fft_plan *p) { fft_rec(p, p->buf, 1, p->out, p->n, 1); }

/* ---- DFT ---- */

typedef struct dft_cfg {
    int axis;
    int64_t len;      /* transform length n */
    int64_t out_axis; /* output size along axis */
    int out_last;     /* 1 or 2 */
    bool inverse, onesided;
} dft_cfg;

static lt_status dft_config(lt_eval *ev, const lt_node *n, const lt_tensor *x, const lt_tensor *lt,
                            int64_t axis, dft_cfg *c) {
    if (x->rank < 2) return lt_op_error(ev, n, LT_ERR_INVALID, "input must have rank >= 2");
    int64_t last = x->dims[x->rank - 1];
    if (last != 1 && last != 2)
        return lt_op_error(ev, n, LT_ERR_INVALID, "last dimension must be 1 (real) or 2 (complex), got %lld",
                           (long long)last);
    int64_t a = axis < 0 ? axis + x->rank : axis;
    if (a < 0 || a >= x->rank - 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "axis %lld out of range [-%d, %d) (the last axis holds re/im)",
                           (long long)axis, x->rank, x->rank - 1);
    c->axis = (int)a;
    c->inverse = lt_attr_int(n, "inverse", 0) != 0;
    c->onesided = lt_attr_int(n, "onesided", 0) != 0;
    int64_t L = x->dims[a];
    if (lt) {
        LT_TRY(lt_img_scalar_i64(ev, n, lt, "dft_length", &c->len));
        if (c->len < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "dft_length %lld must be >= 1", (long long)c->len);
    } else {
        c->len = c->inverse && c->onesided ? 2 * (L - 1) : L;
        if (c->len < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "empty signal axis");
    }
    if (c->inverse && c->onesided) {
        c->out_axis = c->len;
        c->out_last = 1;
    } else {
        c->out_axis = c->onesided ? c->len / 2 + 1 : c->len;
        c->out_last = 2;
    }
    return LT_OK;
}

lt_status lt_img_dft_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *lt = NULL, *at = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 1, &lt));
    if (lt && lt->numel == 0) lt = NULL;
    int64_t axis;
    if (n->opset >= 20) {
        axis = -2;
        LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &at));
        if (at && at->numel > 0) LT_TRY(lt_img_scalar_i64(ev, n, at, "axis", &axis));
    } else {
        axis = lt_attr_int(n, "axis", 1);
    }
    if (!lt_dtype_is_float(x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "input must be a float tensor, got %s", lt_dtype_name(x->dtype));
    dft_cfg c;
    LT_TRY(dft_config(ev, n, x, lt, axis, &c));
    int r = x->rank;
    int64_t od[LT_MAX_RANK];
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)r);
    od[c.axis] = c.out_axis;
    od[r - 1] = c.out_last;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, r, od, &y));
    if (y->numel == 0) return LT_OK;
    int64_t outer = 1, inner = 1, L = x->dims[c.axis], C = x->dims[r - 1];
    for (int d = 0; d < c.axis; d++) outer *= x->dims[d];
    for (int d = c.axis + 1; d < r - 1; d++) inner *= x->dims[d];
    fft_plan p;
    LT_TRY(fft_init(ev, n, &p, c.len, c.inverse));
    int64_t nl = c.len;
    bool irfft = c.inverse && c.onesided;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t j = 0; j < nl; j++) p.buf[j] = (cplx){0, 0};
            if (!irfft) {
                for (int64_t j = 0; j < nl && j < L; j++) {
                    int64_t xi = ((o * L + j) * inner + i) * C;
                    p.buf[j].re = lt_load_f64(x->data, x->dtype, xi);
                    p.buf[j].im = C == 2 ? lt_load_f64(x->data, x->dtype, xi + 1) : 0;
                }
            } else {
                /* Hermitian extension of the first n/2+1 bins. */
                int64_t half = nl / 2 + 1;
                for (int64_t j = 0; j < half && j < L; j++) {
                    int64_t xi = ((o * L + j) * inner + i) * C;
                    cplx v = {lt_load_f64(x->data, x->dtype, xi), C == 2 ? lt_load_f64(x->data, x->dtype, xi + 1) : 0};
                    p.buf[j] = v;
                    if (j > 0 && nl - j != j && nl - j < nl) p.buf[nl - j] = (cplx){v.re, -v.im};
                }
            }
            fft_run(&p);
            double scale = c.inverse ? 1.0 / (double)nl : 1.0;
            for (int64_t k = 0; k < c.out_axis; k++) {
                int64_t yi = ((o * c.out_axis + k) * inner + i) * c.out_last;
                lt_store_f64(y->data, y->dtype, yi, p.out[k].re * scale);
                if (c.out_last == 2) lt_store_f64(y->data, y->dtype, yi + 1, p.out[k].im * scale);
            }
        }
    fft_free(&p);
    return LT_OK;
}

lt_status lt_img_dft_infer(lt_infer *ic, lt_node *n) {
    const lt_type *xt = lt_infer_in(n, 0);
    lt_dtype dt = xt ? xt->dtype : LT_UNDEFINED;
    const lt_type *x = lt_img_ranked(n, 0);
    if (!x) return lt_infer_set(ic, n, 0, dt, -1, NULL);
    int r = x->rank;
    if (r < 2) return lt_infer_error(ic, n, "input must have rank >= 2");
    bool inverse = lt_attr_int(n, "inverse", 0) != 0, onesided = lt_attr_int(n, "onesided", 0) != 0;
    lt_dim od[LT_MAX_RANK];
    memcpy(od, x->dims, sizeof(lt_dim) * (size_t)r);
    od[r - 1] = (lt_dim){inverse && onesided ? 1 : 2, NULL};
    int64_t axis = n->opset >= 20 ? -2 : lt_attr_int(n, "axis", 1);
    bool axis_known = true;
    if (n->opset >= 20 && n->n_in > 2 && n->in[2]) axis_known = lt_img_const_i64(n, 2, &axis);
    if (!axis_known) {
        for (int d = 0; d < r - 1; d++) od[d] = (lt_dim){-1, NULL};
        return lt_infer_set(ic, n, 0, dt, r, od);
    }
    int64_t a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r - 1) return lt_infer_error(ic, n, "axis %lld out of range for rank %d", (long long)axis, r);
    int64_t len = -1, L = x->dims[a].value;
    if (n->n_in > 1 && n->in[1]) {
        if (!lt_img_const_i64(n, 1, &len)) len = -1;
    } else if (L >= 0) {
        len = inverse && onesided ? 2 * (L - 1) : L;
    }
    int64_t oa = len < 0 ? -1 : (inverse && onesided) ? len : onesided ? len / 2 + 1 : len;
    od[a] = (lt_dim){oa, NULL};
    return lt_infer_set(ic, n, 0, dt, r, od);
}

/* ---- STFT ---- */

lt_status lt_img_stft_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *x, *fs, *win = NULL, *flt = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &x));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &fs));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 2, &win));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &flt));
    bool onesided = lt_attr_int(n, "onesided", 1) != 0;
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return lt_op_error(ev, n, LT_ERR_INVALID, "signal must be [batch, length, 1 or 2]");
    if (!lt_dtype_is_float(x->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "signal must be a float tensor, got %s", lt_dtype_name(x->dtype));
    int64_t step, flen, wlen;
    LT_TRY(lt_img_scalar_i64(ev, n, fs, "frame_step", &step));
    if (step < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "frame_step %lld must be >= 1", (long long)step);
    if (win) {
        if (win->rank != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "window must be 1-D");
        if (!lt_img_numeric(win->dtype)) return lt_op_error(ev, n, LT_ERR_INVALID, "window must be numeric");
    }
    if (flt) LT_TRY(lt_img_scalar_i64(ev, n, flt, "frame_length", &flen));
    else flen = win ? win->dims[0] : x->dims[1];
    wlen = win ? win->dims[0] : flen;
    if (flen < 1) return lt_op_error(ev, n, LT_ERR_INVALID, "frame_length %lld must be >= 1", (long long)flen);
    int64_t B = x->dims[0], L = x->dims[1], C = x->dims[2];
    if (L < flen)
        return lt_op_error(ev, n, LT_ERR_INVALID, "signal length %lld is shorter than frame_length %lld",
                           (long long)L, (long long)flen);
    int64_t frames = 1 + (L - flen) / step, bins = onesided ? flen / 2 + 1 : flen;
    int64_t od[4] = {B, frames, bins, 2};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, x->dtype, 4, od, &y));
    if (y->numel == 0) return LT_OK;
    fft_plan p;
    LT_TRY(fft_init(ev, n, &p, flen, false));
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t j = 0; j < flen; j++) p.buf[j] = (cplx){0, 0};
            for (int64_t j = 0; j < wlen && j < flen; j++) {
                int64_t t = f * step + j;
                if (t >= L) break;
                double w = win ? lt_load_f64(win->data, win->dtype, j) : 1.0;
                int64_t xi = (b * L + t) * C;
                p.buf[j].re = lt_load_f64(x->data, x->dtype, xi) * w;
                p.buf[j].im = C == 2 ? lt_load_f64(x->data, x->dtype, xi + 1) * w : 0;
            }
            fft_run(&p);
            for (int64_t k = 0; k < bins; k++) {
                int64_t yi = ((b * frames + f) * bins + k) * 2;
                lt_store_f64(y->data, y->dtype, yi, p.out[k].re);
                lt_store_f64(y->data, y->dtype, yi + 1, p.out[k].im);
            }
        }
    fft_free(&p);
    return LT_OK;
}

lt_status lt_img_stft_infer(lt_infer *ic, lt_node *n) {
    const lt_type *xt = lt_infer_in(n, 0);
    lt_dtype dt = xt ? xt->dtype : LT_UNDEFINED;
    const lt_type *x = lt_img_ranked(n, 0), *w = lt_img_ranked(n, 2);
    bool onesided = lt_attr_int(n, "onesided", 1) != 0;
    int64_t od[4] = {-1, -1, -1, 2};
    if (x && x->rank != 3) return lt_infer_error(ic, n, "signal must be 3-D, got rank %d", x->rank);
    int64_t L = x ? x->dims[1].value : -1, step = -1, flen = -1;
    if (x) od[0] = x->dims[0].value;
    if (!lt_img_const_i64(n, 1, &step)) step = -1;
    if (n->n_in > 3 && n->in[3]) {
        if (!lt_img_const_i64(n, 3, &flen)) flen = -1;
    } else if (n->n_in > 2 && n->in[2]) {
        flen = w && w->rank == 1 ? w->dims[0].value : -1;
    } else {
        flen = L;
    }
    if (flen >= 1) od[2] = onesided ? flen / 2 + 1 : flen;
    if (flen >= 1 && L >= flen && step >= 1) od[1] = 1 + (L - flen) / step;
    return lt_infer_set_i64(ic, n, 0, dt, 4, od);
}

/* ---- window functions ---- */

static bool valid_out_dtype(int64_t dt) {
    return dt > 0 && dt < LT_DTYPE_COUNT && lt_img_numeric((lt_dtype)dt);
}

/* Round v to the precision the reference's first window products run in for output type dt (its
 * arange has that dtype): float32 / float16 / bfloat16, double otherwise. */
static double wr(lt_dtype dt, double v) {
    switch (dt) {
    case LT_FLOAT: return (float)v;
    case LT_FLOAT16: return lt_f16_to_f32(lt_f64_to_f16(v));
    case LT_BFLOAT16: return lt_bf16_to_f32(lt_f32_to_bf16((float)v));
    default: return v;
    }
}

lt_status lt_img_window_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *st;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &st));
    int64_t size, odt = lt_attr_int(n, "output_datatype", LT_FLOAT);
    LT_TRY(lt_img_scalar_i64(ev, n, st, "size", &size));
    if (size < 0) return lt_op_error(ev, n, LT_ERR_INVALID, "size %lld must be >= 0", (long long)size);
    if (!valid_out_dtype(odt)) return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported output_datatype %lld", (long long)odt);
    bool periodic = lt_attr_int(n, "periodic", 1) != 0;
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, (lt_dtype)odt, 1, &size, &y));
    lt_dtype w = (lt_dtype)odt;
    /* The reference divides by the size input (an int64 array): from there on it is double. */
    double N1 = (double)(periodic ? size : size - 1), pi = wr(w, SIG_PI);
    for (int64_t i = 0; i < size; i++) {
        double v;
        if (N1 == 0) v = 1.0; /* a one-point symmetric window */
        else if (n->op == LT_OP_HannWindow) {
            double s = sin(wr(w, wr(w, (double)i) * pi) / N1);
            v = s * s;
        } else if (n->op == LT_OP_HammingWindow) {
            double alpha = 25.0 / 46.0, beta = 1 - alpha;
            v = alpha - cos(wr(w, wr(w, wr(w, (double)i) * pi) * 2) / N1) * beta;
        } else { /* Blackman: the reference's arange is int64, so double throughout */
            double k = (double)i;
            v = cos((k * (SIG_PI * 2)) / N1) * -0.5;
            v += cos((k * (SIG_PI * 4)) / N1) * 0.08;
            v += 0.42;
        }
        lt_store_f64(y->data, y->dtype, i, v);
    }
    return LT_OK;
}

lt_status lt_img_window_infer(lt_infer *ic, lt_node *n) {
    int64_t odt = lt_attr_int(n, "output_datatype", LT_FLOAT), size = -1;
    if (!valid_out_dtype(odt)) return lt_infer_error(ic, n, "unsupported output_datatype %lld", (long long)odt);
    if (!lt_img_const_i64(n, 0, &size) || size < 0) size = -1;
    return lt_infer_set_i64(ic, n, 0, (lt_dtype)odt, 1, &size);
}

/* ---- MelWeightMatrix ---- */

/* numpy's float floor division (npy_divmod). */
static double np_floordiv(double a, double b) {
    double mod = fmod(a, b);
    if (b == 0) return a / b;
    double div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
    double fl;
    if (div != 0) {
        fl = floor(div);
        if (div - fl > 0.5) fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    return fl;
}

lt_status lt_img_mel_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    const lt_tensor *t[5];
    for (int i = 0; i < 5; i++) LT_TRY(lt_in_tensor(ev, n, in, i, &t[i]));
    int64_t bins_n, dft_len, rate, odt = lt_attr_int(n, "output_datatype", LT_FLOAT);
    double lo, hi;
    LT_TRY(lt_img_scalar_i64(ev, n, t[0], "num_mel_bins", &bins_n));
    LT_TRY(lt_img_scalar_i64(ev, n, t[1], "dft_length", &dft_len));
    LT_TRY(lt_img_scalar_i64(ev, n, t[2], "sample_rate", &rate));
    LT_TRY(lt_img_scalar_f64(ev, n, t[3], "lower_edge_hertz", &lo));
    LT_TRY(lt_img_scalar_f64(ev, n, t[4], "upper_edge_hertz", &hi));
    if (!valid_out_dtype(odt)) return lt_op_error(ev, n, LT_ERR_INVALID, "unsupported output_datatype %lld", (long long)odt);
    if (bins_n < 1 || dft_len < 1 || rate < 1)
        return lt_op_error(ev, n, LT_ERR_INVALID, "num_mel_bins, dft_length and sample_rate must be >= 1");
    if (bins_n > ((int64_t)1 << 24) || dft_len > ((int64_t)1 << 30))
        return lt_op_error(ev, n, LT_ERR_NOMEM, "mel weight matrix too large");
    int64_t spec = dft_len / 2 + 1, od[2] = {spec, bins_n};
    lt_tensor *y;
    LT_TRY(lt_out_new(ev, n, out, 0, (lt_dtype)odt, 2, od, &y));
    /* The edges in the reference's precision (float32 for float32 inputs), the rest in double. */
    double lmel, hmel, step;
    if (t[3]->dtype == LT_FLOAT && t[4]->dtype == LT_FLOAT) {
        float l = 2595.0f * log10f(1.0f + (float)lo / 700.0f), h = 2595.0f * log10f(1.0f + (float)hi / 700.0f);
        lmel = l, hmel = h, step = (double)((h - l) / (float)(bins_n + 2));
    } else {
        lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);
        step = (hmel - lmel) / (double)(bins_n + 2);
    }
    int64_t *fb = lt_alloc(ev->ctx, (size_t)(bins_n + 2) * sizeof *fb, "mel bins");
    if (!fb) return LT_ERR_NOMEM;
    for (int64_t i = 0; i < bins_n + 2; i++) {
        double f = (double)i * step + lmel;
        f = 700.0 * (pow(10.0, f / 2595.0) - 1);
        f = np_floordiv((double)(dft_len + 1) * f, (double)rate);
        /* Edges 0..bins are written as indices; the last is only an exclusive bound. */
        if (!(f >= 0 && (i <= bins_n ? f < (double)spec : f <= (double)spec))) {
            lt_mem_free(fb);
            return lt_op_error(ev, n, LT_ERR_INVALID, "index %g out of range [0, %lld) at mel band edge %lld", f,
                               (long long)spec, (long long)i);
        }
        fb[i] = (int64_t)f;
    }
    double *m = lt_calloc(ev->ctx, (size_t)(spec * bins_n), sizeof *m, "mel matrix");
    if (!m) {
        lt_mem_free(fb);
        return LT_ERR_NOMEM;
    }
    for (int64_t i = 0; i < bins_n; i++) {
        int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
        if (c == l) m[c * bins_n + i] = 1;
        else
            for (int64_t j = l; j <= c; j++) m[j * bins_n + i] = (double)(j - l) / (double)(c - l);
        if (h > c)
            for (int64_t j = c; j < h; j++) m[j * bins_n + i] = (double)(h - j) / (double)(h - c);
    }
    for (int64_t i = 0; i < spec * bins_n; i++) lt_store_f64(y->data, y->dtype, i, m[i]);
    lt_mem_free(m);
    lt_mem_free(fb);
    return LT_OK;
}

lt_status lt_img_mel_infer(lt_infer *ic, lt_node *n) {
    int64_t odt = lt_attr_int(n, "output_datatype", LT_FLOAT), od[2] = {-1, -1}, v;
    if (!valid_out_dtype(odt)) return lt_infer_error(ic, n, "unsupported output_datatype %lld", (long long)odt);
    if (lt_img_const_i64(n, 1, &v) && v >= 1) od[0] = v / 2 + 1;
    if (lt_img_const_i64(n, 0, &v) && v >= 1) od[1] = v;
    return lt_infer_set_i64(ic, n, 0, (lt_dtype)odt, 2, od);
}
