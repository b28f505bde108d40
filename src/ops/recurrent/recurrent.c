/* recurrent.c — the recurrent family (see ops.def): the family table, the classic recurrent layers
 * RNN, GRU and LSTM (infer + eval), and the helpers shared with recurrent_attention.c (Attention,
 * FlexAttention) and recurrent_seq.c (RotaryEmbedding, LinearAttention, CausalConvWithState).
 *
 * RNN/GRU/LSTM follow the ONNX spec for every opset (1, 3, 7, 14, 22): all activation functions with
 * their alpha/beta lists (consumed in order by the activations that take them), direction
 * forward/reverse/bidirectional, sequence_lens (steps past a batch entry's length leave Y zero and
 * Y_h/Y_c hold the state after its last step), initial_h/initial_c, peepholes, clip (applied to the
 * gates' pre-activations, not to LSTM's cell state before h(), as onnxruntime does), input_forget,
 * linear_before_reset, and layout 0/1 (opset 14+).
 * The state is computed in double and rounded once when stored.
 */
#include "recurrent_impl.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* ======================================================================================== helpers */

double lt_rec_round(lt_dtype dt, double v) {
    switch (dt) {
    case LT_FLOAT: return (double)(float)v;
    case LT_FLOAT16: return (double)lt_f16_to_f32(lt_f64_to_f16(v));
    case LT_BFLOAT16: return (double)lt_bf16_to_f32(lt_f32_to_bf16((float)v));
    default: return v;
    }
}

bool lt_rec_is_float(lt_dtype dt) {
    return dt == LT_FLOAT || dt == LT_DOUBLE || dt == LT_FLOAT16 || dt == LT_BFLOAT16;
}

lt_status lt_rec_check_float(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *name) {
    if (!lt_rec_is_float(t->dtype))
        return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "%s has unsupported type %s (float, double, float16, bfloat16)",
                           name, lt_dtype_name(t->dtype));
    return LT_OK;
}

lt_status lt_rec_check_rank(lt_eval *ev, const lt_node *n, const lt_tensor *t, int rank, const char *name) {
    if (t->rank != rank) {
        char buf[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s must have rank %d, got %s", name, rank,
                           lt_shape_str(t->rank, t->dims, buf, sizeof buf));
    }
    return LT_OK;
}

lt_status lt_rec_alloc(lt_eval *ev, const lt_node *n, int64_t count, double **out) {
    size_t bytes;
    if (count < 0 || !lt_mul_size((size_t)(count ? count : 1), sizeof(double), &bytes) ||
        (int64_t)bytes > LT_TENSOR_MAX_BYTES)
        return lt_op_error(ev, n, LT_ERR_NOMEM, "scratch buffer of %lld elements is too large", (long long)count);
    double *p = lt_mem_calloc(1, bytes);
    if (!p) return lt_op_error(ev, n, LT_ERR_NOMEM, "out of memory (%zu bytes of scratch)", bytes);
    *out = p;
    return LT_OK;
}

lt_status lt_rec_load(lt_eval *ev, const lt_node *n, const lt_tensor *t, double **out) {
    double *p;
    LT_TRY(lt_rec_alloc(ev, n, t->numel, &p));
    for (int64_t i = 0; i < t->numel; i++) p[i] = lt_load_f64(t->data, t->dtype, i);
    *out = p;
    return LT_OK;
}

static const lt_type *in_tensor_type(const lt_node *n, int i) {
    const lt_type *t = lt_infer_in(n, i);
    return (t && t->kind == LT_TK_TENSOR) ? t : NULL;
}

lt_dim lt_rec_dim(const lt_node *n, int i, int k) {
    const lt_type *t = in_tensor_type(n, i);
    if (!t || t->rank < 0 || k < 0 || k >= t->rank || !t->dims) return lt_rec_unknown();
    return t->dims[k];
}

int lt_rec_rank(const lt_node *n, int i) {
    const lt_type *t = in_tensor_type(n, i);
    return t ? t->rank : -1;
}

lt_dtype lt_rec_dtype(const lt_node *n, int i) {
    const lt_type *t = in_tensor_type(n, i);
    return t ? t->dtype : LT_UNDEFINED;
}

lt_dim lt_rec_dim_add(lt_dim a, lt_dim b) {
    int64_t r;
    if (a.value < 0 || b.value < 0 || !lt_add_i64(a.value, b.value, &r)) return lt_rec_unknown();
    return lt_rec_known(r);
}

lt_dim lt_rec_dim_mul(lt_dim a, int64_t m) {
    int64_t r;
    if (m == 1) return a;
    if (a.value < 0 || m < 0 || !lt_mul_i64(a.value, m, &r)) return lt_rec_unknown();
    return lt_rec_known(r);
}

lt_dim lt_rec_dim_div(lt_dim a, int64_t d) {
    if (d == 1) return a;
    if (a.value < 0 || d <= 0 || a.value % d) return lt_rec_unknown();
    return lt_rec_known(a.value / d);
}

/* ======================================================================================== RNN/GRU/LSTM */

typedef enum { RK_RNN, RK_GRU, RK_LSTM } rnn_kind;

enum {
    ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU, ACT_SCALEDTANH,
    ACT_HARDSIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS
};

static const struct {
    const char *name;
    bool uses_alpha, uses_beta;
    double alpha, beta; /* defaults, as the corresponding ONNX operators */
} g_acts[] = {
    [ACT_RELU] = {"Relu", false, false, 0, 0},
    [ACT_TANH] = {"Tanh", false, false, 0, 0},
    [ACT_SIGMOID] = {"Sigmoid", false, false, 0, 0},
    [ACT_AFFINE] = {"Affine", true, true, 1.0, 0.0},
    [ACT_LEAKYRELU] = {"LeakyRelu", true, false, 0.01, 0},
    [ACT_THRESHOLDEDRELU] = {"ThresholdedRelu", true, false, 1.0, 0},
    [ACT_SCALEDTANH] = {"ScaledTanh", true, true, 1.0, 1.0},
    [ACT_HARDSIGMOID] = {"HardSigmoid", true, true, 0.2, 0.5},
    [ACT_ELU] = {"Elu", true, false, 1.0, 0},
    [ACT_SOFTSIGN] = {"Softsign", false, false, 0, 0},
    [ACT_SOFTPLUS] = {"Softplus", false, false, 0, 0},
};

typedef struct rec_act {
    int kind;
    double alpha, beta;
} rec_act;

static double act_apply(const rec_act *a, double x) {
    switch (a->kind) {
    case ACT_RELU: return x > 0 ? x : (x != x ? x : 0.0);
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_LEAKYRELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDEDRELU: return x > a->alpha ? x : 0.0;
    case ACT_SCALEDTANH: return a->alpha * tanh(a->beta * x);
    case ACT_HARDSIGMOID: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0.0 : v > 1 ? 1.0 : v;
    }
    case ACT_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1.0);
    case ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case ACT_SOFTPLUS: return x > 30 ? x + log1p(exp(-x)) : log1p(exp(x));
    default: return x;
    }
}

/* Parse the activations / activation_alpha / activation_beta attributes into acts[dir*nact + k]. */
static lt_status parse_acts(lt_eval *ev, const lt_node *n, int nact, int ndir, const int *defaults,
                            rec_act *acts) {
    const char *const *names = NULL;
    const float *alphas = NULL, *betas = NULL;
    int nn = lt_attr_strings(n, "activations", &names);
    int na = lt_attr_floats(n, "activation_alpha", &alphas);
    int nb = lt_attr_floats(n, "activation_beta", &betas);
    int total = nact * ndir;
    if (nn != 0 && nn != total && !(nn == nact && ndir == 2))
        return lt_op_error(ev, n, LT_ERR_INVALID, "expected %d activations (%d per direction), got %d", total, nact, nn);
    int ia = 0, ib = 0;
    for (int k = 0; k < total; k++) {
        int kind = defaults[k % nact];
        if (nn) {
            const char *s = names[nn == total ? k : k % nact];
            kind = -1;
            for (int a = 0; a < (int)(sizeof g_acts / sizeof *g_acts); a++)
                if (strcasecmp(s, g_acts[a].name) == 0) kind = a;
            if (kind < 0) return lt_op_error(ev, n, LT_ERR_UNSUPPORTED, "unknown activation function '%s'", s);
        }
        acts[k].kind = kind;
        acts[k].alpha = g_acts[kind].alpha;
        acts[k].beta = g_acts[kind].beta;
        /* Alphas/betas are consumed in order by the activations that take them (explicit lists only). */
        if (nn && g_acts[kind].uses_alpha && ia < na) acts[k].alpha = alphas[ia++];
        if (nn && g_acts[kind].uses_beta && ib < nb) acts[k].beta = betas[ib++];
    }
    return LT_OK;
}

typedef struct rnn_spec {
    rnn_kind kind;
    int G, nact;
    int ndir, layout;
    bool reverse_only;
    int64_t seq, batch, isz, H;
} rnn_spec;

static int rnn_gates(rnn_kind k) { return k == RK_RNN ? 1 : k == RK_GRU ? 3 : 4; }

static int rnn_ndir(const char *dir) {
    if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0) return 1;
    if (strcmp(dir, "bidirectional") == 0) return 2;
    return 0;
}

static lt_status check_shape(lt_eval *ev, const lt_node *n, const lt_tensor *t, const char *name, int rank,
                             const int64_t *want) {
    bool ok = t->rank == rank;
    for (int k = 0; ok && k < rank; k++) ok = t->dims[k] == want[k];
    if (!ok) {
        char a[256], b[256];
        return lt_op_error(ev, n, LT_ERR_INVALID, "%s has shape %s, expected %s", name,
                           lt_shape_str(t->rank, t->dims, a, sizeof a), lt_shape_str(rank, want, b, sizeof b));
    }
    return LT_OK;
}

static lt_status rnn_eval(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out, rnn_kind kind) {
    rnn_spec sp = {.kind = kind, .G = rnn_gates(kind), .nact = kind == RK_RNN ? 1 : kind == RK_GRU ? 2 : 3};
    const lt_tensor *X, *W, *R, *B, *SL, *H0, *C0 = NULL, *P = NULL;
    LT_TRY(lt_in_tensor(ev, n, in, 0, &X));
    LT_TRY(lt_in_tensor(ev, n, in, 1, &W));
    LT_TRY(lt_in_tensor(ev, n, in, 2, &R));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 3, &B));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 4, &SL));
    LT_TRY(lt_in_tensor_opt(ev, n, in, 5, &H0));
    if (kind == RK_LSTM) {
        LT_TRY(lt_in_tensor_opt(ev, n, in, 6, &C0));
        LT_TRY(lt_in_tensor_opt(ev, n, in, 7, &P));
    }
    LT_TRY(lt_rec_check_float(ev, n, X, "X"));
    const lt_tensor *same[] = {W, R, B, H0, C0, P};
    const char *same_names[] = {"W", "R", "B", "initial_h", "initial_c", "P"};
    for (int k = 0; k < 6; k++)
        if (same[k] && same[k]->dtype != X->dtype)
            return lt_op_error(ev, n, LT_ERR_INVALID, "%s has type %s, expected %s like X", same_names[k],
                               lt_dtype_name(same[k]->dtype), lt_dtype_name(X->dtype));

    const char *dir = lt_attr_string(n, "direction", "forward");
    sp.ndir = rnn_ndir(dir);
    if (!sp.ndir) return lt_op_error(ev, n, LT_ERR_INVALID, "unknown direction '%s'", dir);
    sp.reverse_only = strcmp(dir, "reverse") == 0;
    int64_t layout = n->opset >= 14 ? lt_attr_int(n, "layout", 0) : 0;
    if (layout != 0 && layout != 1) return lt_op_error(ev, n, LT_ERR_INVALID, "layout must be 0 or 1, got %lld", (long long)layout);
    sp.layout = (int)layout;

    LT_TRY(lt_rec_check_rank(ev, n, X, 3, "X"));
    LT_TRY(lt_rec_check_rank(ev, n, W, 3, "W"));
    LT_TRY(lt_rec_check_rank(ev, n, R, 3, "R"));
    sp.seq = X->dims[sp.layout ? 1 : 0];
    sp.batch = X->dims[sp.layout ? 0 : 1];
    sp.isz = X->dims[2];
    sp.H = R->dims[2];
    const lt_attr *hs = lt_node_attr(n, "hidden_size");
    if (hs && hs->i != sp.H)
        return lt_op_error(ev, n, LT_ERR_INVALID, "hidden_size %lld does not match R's last dim %lld", (long long)hs->i,
                           (long long)sp.H);
    int64_t GH, GH2, H3, work;
    int64_t wdims[4] = {sp.seq, sp.batch, sp.ndir, sp.H};
    if (sp.H < 0 || sp.H > ((int64_t)1 << 40) || !lt_mul_i64(sp.H, sp.G, &GH) || !lt_mul_i64(GH, 2, &GH2) || !lt_mul_i64(sp.H, 3, &H3) ||
        !lt_prod_i64(wdims, 4, &work))
        return lt_op_error(ev, n, LT_ERR_INVALID, "hidden size %lld is too large", (long long)sp.H);
    {
        int64_t wd[3] = {sp.ndir, GH, sp.isz}, rd[3] = {sp.ndir, GH, sp.H};
        LT_TRY(check_shape(ev, n, W, "W", 3, wd));
        LT_TRY(check_shape(ev, n, R, "R", 3, rd));
        int64_t bd[2] = {sp.ndir, GH2}, pd[2] = {sp.ndir, H3};
        if (B) LT_TRY(check_shape(ev, n, B, "B", 2, bd));
        if (P) LT_TRY(check_shape(ev, n, P, "P", 2, pd));
        int64_t hd[3] = {sp.layout ? sp.batch : sp.ndir, sp.layout ? sp.ndir : sp.batch, sp.H};
        if (H0) LT_TRY(check_shape(ev, n, H0, "initial_h", 3, hd));
        if (C0) LT_TRY(check_shape(ev, n, C0, "initial_c", 3, hd));
        int64_t sd[1] = {sp.batch};
        if (SL) {
            if (!lt_dtype_is_int(SL->dtype))
                return lt_op_error(ev, n, LT_ERR_INVALID, "sequence_lens must be an integer tensor, got %s",
                                   lt_dtype_name(SL->dtype));
            LT_TRY(check_shape(ev, n, SL, "sequence_lens", 1, sd));
        }
    }
    double clip = 0;
    const lt_attr *ca = lt_node_attr(n, "clip");
    if (ca) {
        clip = ca->f;
        if (!(clip > 0)) return lt_op_error(ev, n, LT_ERR_INVALID, "clip must be positive, got %g", clip);
    }
    bool input_forget = kind == RK_LSTM && lt_attr_int(n, "input_forget", 0) != 0;
    bool lbr = kind == RK_GRU && lt_attr_int(n, "linear_before_reset", 0) != 0;
    rec_act acts[6];
    static const int def_rnn[] = {ACT_TANH}, def_gru[] = {ACT_SIGMOID, ACT_TANH},
                     def_lstm[] = {ACT_SIGMOID, ACT_TANH, ACT_TANH};
    LT_TRY(parse_acts(ev, n, sp.nact, sp.ndir, kind == RK_RNN ? def_rnn : kind == RK_GRU ? def_gru : def_lstm, acts));

    /* Outputs: Y, Y_h (and Y_c for LSTM). */
    int64_t ydims[4], hdims[3];
    if (sp.layout) {
        ydims[0] = sp.batch, ydims[1] = sp.seq, ydims[2] = sp.ndir, ydims[3] = sp.H;
        hdims[0] = sp.batch, hdims[1] = sp.ndir, hdims[2] = sp.H;
    } else {
        ydims[0] = sp.seq, ydims[1] = sp.ndir, ydims[2] = sp.batch, ydims[3] = sp.H;
        hdims[0] = sp.ndir, hdims[1] = sp.batch, hdims[2] = sp.H;
    }
    if (n->n_out == 0) return LT_OK;
    lt_tensor *Y = NULL, *Yh = NULL, *Yc = NULL;
    int nout = n->n_out < (kind == RK_LSTM ? 3 : 2) ? n->n_out : (kind == RK_LSTM ? 3 : 2);
    if (nout > 0) LT_TRY(lt_out_new(ev, n, out, 0, X->dtype, 4, ydims, &Y));
    if (nout > 1) LT_TRY(lt_out_new(ev, n, out, 1, X->dtype, 3, hdims, &Yh));
    if (nout > 2) LT_TRY(lt_out_new(ev, n, out, 2, X->dtype, 3, hdims, &Yc));

    /* Load everything as double. */
    lt_status s = LT_OK;
    double *x = NULL, *w = NULL, *r = NULL, *b = NULL, *p = NULL, *h0 = NULL, *c0 = NULL, *scratch = NULL;
    if ((s = lt_rec_load(ev, n, X, &x)) || (s = lt_rec_load(ev, n, W, &w)) || (s = lt_rec_load(ev, n, R, &r)) ||
        (B && (s = lt_rec_load(ev, n, B, &b))) || (P && (s = lt_rec_load(ev, n, P, &p))) ||
        (H0 && (s = lt_rec_load(ev, n, H0, &h0))) || (C0 && (s = lt_rec_load(ev, n, C0, &c0))))
        goto done;
    /* scratch: h, c, gx[G*H], gh[G*H], t1[H], t2[H] */
    if ((s = lt_rec_alloc(ev, n, 2 * GH + 4 * sp.H, &scratch))) goto done;
    double *h = scratch, *c = h + sp.H, *gx = c + sp.H, *gh = gx + GH, *t1 = gh + GH, *t2 = t1 + sp.H;

    /* H == 0: every output is empty (and the steps would do nothing). */
    for (int d = 0; sp.H > 0 && d < sp.ndir; d++) {
        bool rev = sp.reverse_only || d == 1;
        const double *Wd = w + (int64_t)d * GH * sp.isz, *Rd = r + (int64_t)d * GH * sp.H;
        const double *Wb = b ? b + (int64_t)d * 2 * GH : NULL, *Rb = b ? Wb + GH : NULL;
        const double *Pd = p ? p + (int64_t)d * 3 * sp.H : NULL;
        const rec_act *A = &acts[d * sp.nact];
        for (int64_t bi = 0; bi < sp.batch; bi++) {
            int64_t len = sp.seq;
            if (SL) {
                len = lt_load_i64(SL->data, SL->dtype, bi);
                if (len < 0 || len > sp.seq) {
                    s = lt_op_error(ev, n, LT_ERR_INVALID, "sequence_lens[%lld] = %lld out of range [0, %lld]",
                                    (long long)bi, (long long)len, (long long)sp.seq);
                    goto done;
                }
            }
            int64_t hoff = sp.layout ? (bi * sp.ndir + d) * sp.H : ((int64_t)d * sp.batch + bi) * sp.H;
            for (int64_t j = 0; j < sp.H; j++) {
                h[j] = h0 ? h0[hoff + j] : 0.0;
                c[j] = c0 ? c0[hoff + j] : 0.0;
            }
            for (int64_t step = 0; step < len; step++) {
                int64_t t = rev ? len - 1 - step : step;
                const double *xt = x + (sp.layout ? bi * sp.seq + t : t * sp.batch + bi) * sp.isz;
                /* gx = W x + Wb ; gh = R h + Rb (GRU's h-gate row handled below) */
                for (int64_t row = 0; row < GH; row++) {
                    const double *wr = Wd + row * sp.isz, *rr = Rd + row * sp.H;
                    double ax = Wb ? Wb[row] : 0.0, ah = Rb ? Rb[row] : 0.0;
                    for (int64_t i = 0; i < sp.isz; i++) ax += wr[i] * xt[i];
                    for (int64_t i = 0; i < sp.H; i++) ah += rr[i] * h[i];
                    gx[row] = ax;
                    gh[row] = ah;
                }
#define CLIPV(v) (clip > 0 ? ((v) < -clip ? -clip : (v) > clip ? clip : (v)) : (v))
                if (kind == RK_RNN) {
                    for (int64_t j = 0; j < sp.H; j++) h[j] = act_apply(&A[0], CLIPV(gx[j] + gh[j]));
                } else if (kind == RK_GRU) {
                    int64_t H = sp.H;
                    for (int64_t j = 0; j < H; j++) {
                        t1[j] = act_apply(&A[0], CLIPV(gx[j] + gh[j]));         /* z */
                        t2[j] = act_apply(&A[0], CLIPV(gx[H + j] + gh[H + j])); /* r */
                    }
                    /* h gate: gh[2H..3H) holds Rh h + Rbh (linear_before_reset form) */
                    for (int64_t j = 0; j < H; j++) {
                        double pre;
                        if (lbr) {
                            pre = gx[2 * H + j] + t2[j] * gh[2 * H + j];
                        } else {
                            const double *rr = Rd + (2 * H + j) * H;
                            double a = Rb ? Rb[2 * H + j] : 0.0;
                            for (int64_t k = 0; k < H; k++) a += rr[k] * (t2[k] * h[k]);
                            pre = gx[2 * H + j] + a;
                        }
                        gx[2 * H + j] = act_apply(&A[1], CLIPV(pre)); /* h~ (row no longer needed) */
                    }
                    for (int64_t j = 0; j < H; j++) h[j] = (1.0 - t1[j]) * gx[2 * H + j] + t1[j] * h[j];
                } else {
                    int64_t H = sp.H;
                    for (int64_t j = 0; j < H; j++) {
                        double gi = gx[j] + gh[j], go = gx[H + j] + gh[H + j], gf = gx[2 * H + j] + gh[2 * H + j],
                               gc = gx[3 * H + j] + gh[3 * H + j];
                        double pi = Pd ? Pd[j] : 0.0, po = Pd ? Pd[H + j] : 0.0, pf = Pd ? Pd[2 * H + j] : 0.0;
                        double it = act_apply(&A[0], CLIPV(gi + pi * c[j]));
                        double ft = input_forget ? 1.0 - it : act_apply(&A[0], CLIPV(gf + pf * c[j]));
                        double ct = act_apply(&A[1], CLIPV(gc));
                        double cn = ft * c[j] + it * ct;
                        double ot = act_apply(&A[0], CLIPV(go + po * cn));
                        c[j] = cn;
                        h[j] = ot * act_apply(&A[2], cn); /* clip applies to the gate inputs only (as onnxruntime) */
                    }
                }
#undef CLIPV
                if (Y) {
                    int64_t yoff = sp.layout ? ((bi * sp.seq + t) * sp.ndir + d) * sp.H
                                             : ((t * sp.ndir + d) * sp.batch + bi) * sp.H;
                    for (int64_t j = 0; j < sp.H; j++) lt_store_f64(Y->data, Y->dtype, yoff + j, h[j]);
                }
            }
            for (int64_t j = 0; j < sp.H; j++) {
                if (Yh) lt_store_f64(Yh->data, Yh->dtype, hoff + j, h[j]);
                if (Yc) lt_store_f64(Yc->data, Yc->dtype, hoff + j, c[j]);
            }
        }
    }
done:
    lt_mem_free(x);
    lt_mem_free(w);
    lt_mem_free(r);
    lt_mem_free(b);
    lt_mem_free(p);
    lt_mem_free(h0);
    lt_mem_free(c0);
    lt_mem_free(scratch);
    return s;
}

static lt_status rnn_eval_rnn(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    return rnn_eval(ev, n, in, out, RK_RNN);
}
static lt_status rnn_eval_gru(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    return rnn_eval(ev, n, in, out, RK_GRU);
}
static lt_status rnn_eval_lstm(lt_eval *ev, const lt_node *n, lt_datum **in, lt_datum **out) {
    return rnn_eval(ev, n, in, out, RK_LSTM);
}

static lt_status rnn_infer(lt_infer *ic, lt_node *n, rnn_kind kind) {
    lt_dtype dt = lt_rec_dtype(n, 0);
    const char *dir = lt_attr_string(n, "direction", "forward");
    int ndir = rnn_ndir(dir);
    if (!ndir) return lt_infer_error(ic, n, "unknown direction '%s'", dir);
    int64_t layout = n->opset >= 14 ? lt_attr_int(n, "layout", 0) : 0;
    if (layout != 0 && layout != 1) return lt_infer_error(ic, n, "layout must be 0 or 1, got %lld", (long long)layout);
    lt_dim seq = lt_rec_unknown(), batch = lt_rec_unknown(), H = lt_rec_unknown();
    if (lt_rec_rank(n, 0) == 3) {
        seq = lt_rec_dim(n, 0, layout ? 1 : 0);
        batch = lt_rec_dim(n, 0, layout ? 0 : 1);
    }
    const lt_attr *hs = lt_node_attr(n, "hidden_size");
    if (hs && hs->i >= 0) H = lt_rec_known(hs->i);
    else if (lt_rec_rank(n, 2) == 3) H = lt_rec_dim(n, 2, 2);
    if (H.value < 0 && lt_rec_rank(n, 1) == 3) H = lt_rec_dim_div(lt_rec_dim(n, 1, 1), rnn_gates(kind));
    lt_dim nd = lt_rec_known(ndir);
    lt_dim y[4], yh[3];
    if (layout) {
        y[0] = batch, y[1] = seq, y[2] = nd, y[3] = H;
        yh[0] = batch, yh[1] = nd, yh[2] = H;
    } else {
        y[0] = seq, y[1] = nd, y[2] = batch, y[3] = H;
        yh[0] = nd, yh[1] = batch, yh[2] = H;
    }
    LT_TRY(lt_infer_set(ic, n, 0, dt, 4, y));
    LT_TRY(lt_infer_set(ic, n, 1, dt, 3, yh));
    if (kind == RK_LSTM) LT_TRY(lt_infer_set(ic, n, 2, dt, 3, yh));
    return LT_OK;
}

static lt_status rnn_infer_rnn(lt_infer *ic, lt_node *n) { return rnn_infer(ic, n, RK_RNN); }
static lt_status rnn_infer_gru(lt_infer *ic, lt_node *n) { return rnn_infer(ic, n, RK_GRU); }
static lt_status rnn_infer_lstm(lt_infer *ic, lt_node *n) { return rnn_infer(ic, n, RK_LSTM); }

/* ======================================================================================== table */

const lt_op_reg lt_ops_recurrent[] = {
    {LT_OP_RNN, rnn_infer_rnn, rnn_eval_rnn},
    {LT_OP_GRU, rnn_infer_gru, rnn_eval_gru},
    {LT_OP_LSTM, rnn_infer_lstm, rnn_eval_lstm},
    {LT_OP_Attention, lt_rec_attention_infer, lt_rec_attention_eval},
    {LT_OP_FlexAttention, lt_rec_flex_infer, lt_rec_flex_eval},
    {LT_OP_RotaryEmbedding, lt_rec_rotary_infer, lt_rec_rotary_eval},
    {LT_OP_LinearAttention, lt_rec_linattn_infer, lt_rec_linattn_eval},
    {LT_OP_CausalConvWithState, lt_rec_cconv_infer, lt_rec_cconv_eval},
    {0, NULL, NULL},
};
