/* test_ops_recurrent.c — unit tests of the recurrent family (src/ops/recurrent/) for what the ONNX
 * node tests do not reach: bidirectional and reverse RNN/GRU/LSTM with sequence_lens, initial
 * states, peepholes, clip, input_forget, linear_before_reset and non-default activations (expected
 * values from onnxruntime 1.31, see below), layout 1 against layout 0, Attention with
 * GQA + bool mask + causal + past and qk_matmul_output mode 0 under softcap, shape inference,
 * error paths (out-of-range indices, bad shapes) and out-of-memory on every allocation.
 * Nodes are built by hand and run through the hooks in the op table. Exits non-zero on a failure.
 *
 * Inputs are val(shape, seed)[k] = float(sin(0.37 k + seed) * 0.6); the expected arrays were made
 * by running the same nodes in onnxruntime (CPU) on those inputs. */
#include "ops/ops.h"
#include "test_node.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- expected outputs (onnxruntime) ---- */
static const double lstm_bi_y[24] = {-0.135698214, -0.0587673448, -0.11368116, -0.164302602, -0.0826343819, -0.127218425, -0.180413708, -0.272434711, -0.232748315, -0.165636852, 0, 0, -0.211886153, -0.264759302, 0, 0, -0.0418622755, -0.063275151, 0, 0, -0.0263667516, -0.091097109, 0, 0};
static const double lstm_bi_yh[8] = {-0.0418622755, -0.063275151, -0.11368116, -0.164302602, -0.0826343819, -0.127218425, -0.180413708, -0.272434711};
static const double lstm_bi_yc[8] = {-0.0977113321, -0.140701815, -0.166277081, -0.277449548, -0.164208695, -0.248550624, -0.267695129, -0.423815429};
static const double lstm_if_y[12] = {0.144231781, 0.124418154, 0.142016187, 0.124974497, 0.191533819, 0.181909531, 0.172218665, 0.196059853, 0.18546389, 0.244878799, 0.180216953, 0.226968765};
static const double lstm_if_yc[4] = {0.528304577, 0.57852751, 0.529101193, 0.52716887};
static const double gru_rev_y[12] = {-0.183904573, -0.272462308, -0.152040869, -0.315445542, 0.0522191972, -0.116327107, 0.0620923191, -0.266553819, 0, 0, -0.131586522, -0.286604941};
static const double gru_rev_yh[4] = {-0.183904573, -0.272462308, -0.152040869, -0.315445542};
static const double gru_bi_y[24] = {-0.0147417095, -0.0418790579, -0.022548534, -0.146429941, 0.184868127, 0.147995025, 0.325939775, 0.280274361, -0.0292773582, -0.194329321, -0.026116576, -0.231945217, 0.391423106, 0.339931756, 0.287578195, 0.236577958, -0.0139141688, -0.132706895, 0.000232216902, 0.0483981371, 0.0105741415, 0.0179175045, -0.162101924, -0.15121755};
static const double rnn_bi_y[24] = {0.48575139, 0.557832122, 0.50741899, 0.591321111, 0.831369936, 1.92715526, 0.899475276, 1.9630909, 0, 0, 0, 0, 0.782343507, 1.92048669, 0.599458873, 2.07865906, 0, 0, 0, 0, 0.74389869, 1.56343102, 0.679891586, 1.58485866};
static const double rnn_bi_yh[8] = {0, 0, 0, 0, 0.831369936, 1.92715526, 0.899475276, 1.9630909};
static const double att_y[32] = {-0.462364197, -0.294503808, -0.0867837071, 0.13268216, 0.156521559, 0.318506211, 0.437382519, 0.497061223, -0.46004945, -0.291326582, -0.0831740126, 0.136235759, 0.0131780328, 0.180389106, 0.323185354, 0.422239989, 0.0562995449, -0.124285616, -0.288049281, -0.412826836, -0.0761040673, -0.157910153, -0.218343824, -0.249225691, 0.258769214, 0.0891343504, -0.0925644264, -0.261735022, -0.150882512, -0.232552737, -0.282748014, -0.294674665};
static const double att_qk[40] = {0.201033637, -0.289412677, 0.258397937, -0.238304332, -0.301612824, -0.0775145888, 0.447883755, -0.166720361, 0.415391028, 0.242048725, -0.215090409, 0.370633394, -0.288631529, 0.313632697, 0.345506728, 0.0385094024, -0.380671889, 0.114378981, -0.358515859, -0.179393411, -0.301804215, 0.384935528, 0.31009239, 0.434271663, -0.23134017, 0.052811522, -0.291364491, -0.269750923, -0.159756199, 0.240780219, 0.311381251, -0.437772453, -0.359009922, -0.463242382, 0.275004029, 0.00365535659, 0.211977378, 0.20464687, 0.0757503137, -0.190910086};

/* ---- inputs ---- */

/* Append an input filled with val(seed), or with vals when given. */
static lt_tensor *tn_val_input(tnode *t, lt_dtype dt, int rank, const int64_t *dims, double seed, const double *vals) {
    lt_tensor *x = tn_input(t, dt, rank, dims, vals, false);
    for (int64_t k = 0; x && !vals && k < x->numel; k++)
        lt_store_f64(x->data, dt, k, (double)(float)(sin(0.37 * (double)k + seed) * 0.6));
    return x;
}

/* Output i has `n` elements close to want (onnxruntime computes in float32). */
static bool out_near(tnode *t, int i, const double *want, int64_t n) {
    const lt_tensor *o = tn_out(t, i);
    if (!o || o->numel != n) return false;
    for (int64_t k = 0; k < n; k++) {
        double v = lt_load_f64(o->data, o->dtype, k);
        if (!(fabs(v - want[k]) <= 1e-5 + 1e-4 * fabs(want[k]))) {
            fprintf(stderr, "  output %d [%lld]: %.9g, expected %.9g\n", i, (long long)k, v, want[k]);
            return false;
        }
    }
    return true;
}
static bool type_is(const lt_type *ty, lt_dtype dt, int rank, const int64_t *dims) {
    if (ty->dtype != dt || ty->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (ty->dims[d].value != dims[d]) return false;
    return true;
}

/* ---- RNN / GRU / LSTM ---- */

static void build_lstm_bi(tnode *t) {
    tn_init(t, LT_OP_LSTM, "LSTM", 14, 3);
    int64_t xd[3] = {3, 2, 2}, wd[3] = {2, 8, 2}, bd[2] = {2, 16}, pd[2] = {2, 6}, hd[3] = {2, 2, 2}, sd[1] = {2};
    double sl[2] = {3, 1};
    tn_val_input(t, LT_FLOAT, 3, xd, 0.1, NULL);
    tn_val_input(t, LT_FLOAT, 3, wd, 0.2, NULL);
    tn_val_input(t, LT_FLOAT, 3, wd, 0.3, NULL);
    tn_val_input(t, LT_FLOAT, 2, bd, 0.4, NULL);
    tn_val_input(t, LT_INT32, 1, sd, 0, sl);
    tn_val_input(t, LT_FLOAT, 3, hd, 0.6, NULL);
    tn_val_input(t, LT_FLOAT, 3, hd, 0.7, NULL);
    tn_val_input(t, LT_FLOAT, 2, pd, 0.5, NULL);
    tn_int(t, "hidden_size", 2);
    tn_str(t, "direction", "bidirectional");
    tn_float(t, "clip", 0.8f);
}

static void test_lstm(void) {
    tnode t;
    build_lstm_bi(&t);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(out_near(&t, 0, lstm_bi_y, 24));
    CHECK(out_near(&t, 1, lstm_bi_yh, 8));
    CHECK(out_near(&t, 2, lstm_bi_yc, 8));
    int64_t yd[4] = {3, 2, 2, 2}, hd[3] = {2, 2, 2};
    CHECK(tn_infer(&t) == LT_OK);
    CHECK(type_is(&t.vout[0].type, LT_FLOAT, 4, yd) && type_is(&t.vout[2].type, LT_FLOAT, 3, hd));
    tn_free(&t);

    /* input_forget with non-default activations, alphas/betas consumed in order */
    tn_init(&t, LT_OP_LSTM, "LSTM", 14, 3);
    int64_t xd[3] = {3, 2, 2}, wd[3] = {1, 8, 2}, bd[2] = {1, 16};
    tn_val_input(&t, LT_FLOAT, 3, xd, 1.1, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd, 1.2, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd, 1.3, NULL);
    tn_val_input(&t, LT_FLOAT, 2, bd, 1.4, NULL);
    const char *acts[3] = {"HardSigmoid", "Softplus", "ScaledTanh"};
    float al[2] = {0.3f, 1.2f}, be[2] = {0.4f, 0.9f};
    tn_int(&t, "hidden_size", 2);
    tn_int(&t, "input_forget", 1);
    tn_strs(&t, "activations", acts, 3);
    tn_floats(&t, "activation_alpha", al, 2);
    tn_floats(&t, "activation_beta", be, 2);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(out_near(&t, 0, lstm_if_y, 12));
    CHECK(out_near(&t, 2, lstm_if_yc, 4));
    tn_free(&t);
}

static void test_gru(void) {
    tnode t;
    tn_init(&t, LT_OP_GRU, "GRU", 14, 2);
    int64_t xd[3] = {3, 2, 2}, wd[3] = {1, 6, 2}, bd[2] = {1, 12}, hd[3] = {1, 2, 2}, sd[1] = {2};
    double sl[2] = {2, 3};
    tn_val_input(&t, LT_FLOAT, 3, xd, 2.1, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd, 2.2, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd, 2.3, NULL);
    tn_val_input(&t, LT_FLOAT, 2, bd, 2.4, NULL);
    tn_val_input(&t, LT_INT32, 1, sd, 0, sl);
    tn_val_input(&t, LT_FLOAT, 3, hd, 2.5, NULL);
    const char *acts[2] = {"Sigmoid", "Softsign"};
    tn_int(&t, "hidden_size", 2);
    tn_str(&t, "direction", "reverse");
    tn_int(&t, "linear_before_reset", 1);
    tn_strs(&t, "activations", acts, 2);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(out_near(&t, 0, gru_rev_y, 12));
    CHECK(out_near(&t, 1, gru_rev_yh, 4));
    tn_free(&t);

    tn_init(&t, LT_OP_GRU, "GRU", 14, 1);
    int64_t wd2[3] = {2, 6, 2};
    tn_val_input(&t, LT_FLOAT, 3, xd, 3.1, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd2, 3.2, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd2, 3.3, NULL);
    tn_int(&t, "hidden_size", 2);
    tn_str(&t, "direction", "bidirectional");
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(out_near(&t, 0, gru_bi_y, 24));
    tn_free(&t);
}

static void build_rnn_bi(tnode *t, int layout) {
    tn_init(t, LT_OP_RNN, "RNN", 14, 2);
    int64_t xd[3] = {3, 2, 2}, wd[3] = {2, 2, 2}, bd[2] = {2, 4};
    double x[12], b[8];
    for (int k = 0; k < 12; k++) {
        /* layout 1 reads X as (batch, seq, input): transpose val's (seq, batch, input) */
        int s = k / 4, bb = (k / 2) % 2, i = k % 2;
        x[layout ? (bb * 3 + s) * 2 + i : k] = (double)(float)(sin(0.37 * k + 4.1) * 0.6);
    }
    for (int k = 0; k < 8; k++) b[k] = (double)((float)(sin(0.37 * k + 4.4) * 0.6) + 0.5f);
    if (layout) xd[0] = 2, xd[1] = 3;
    tn_val_input(t, LT_FLOAT, 3, xd, 0, x);
    tn_val_input(t, LT_FLOAT, 3, wd, 4.2, NULL);
    tn_val_input(t, LT_FLOAT, 3, wd, 4.3, NULL);
    tn_val_input(t, LT_FLOAT, 2, bd, 0, b);
    static const char *acts[2] = {"Relu", "LeakyRelu"};
    static float al[1] = {0.2f};
    tn_int(t, "hidden_size", 2);
    tn_str(t, "direction", "bidirectional");
    tn_strs(t, "activations", acts, 2);
    tn_floats(t, "activation_alpha", al, 1);
    if (layout) tn_int(t, "layout", 1);
}

static void test_rnn_and_layout(void) {
    tnode t;
    build_rnn_bi(&t, 0);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(out_near(&t, 0, rnn_bi_y, 24));
    CHECK(out_near(&t, 1, rnn_bi_yh, 8));
    tn_free(&t);
    /* layout 1: Y is (batch, seq, dirs, hidden), Y_h (batch, dirs, hidden) */
    build_rnn_bi(&t, 1);
    CHECK(tn_eval(&t) == LT_OK);
    const lt_tensor *y = tn_out(&t, 0), *yh = tn_out(&t, 1);
    CHECK(y && y->dims[0] == 2 && y->dims[1] == 3 && y->dims[2] == 2 && yh && yh->dims[0] == 2 && yh->dims[1] == 2);
    if (y && yh) {
        bool same = true;
        for (int s = 0; s < 3; s++)
            for (int d = 0; d < 2; d++)
                for (int b = 0; b < 2; b++)
                    for (int j = 0; j < 2; j++) {
                        double v = lt_load_f64(y->data, y->dtype, ((b * 3 + s) * 2 + d) * 2 + j);
                        same &= fabs(v - rnn_bi_y[((s * 2 + d) * 2 + b) * 2 + j]) < 1e-5;
                        if (s == 0) {
                            double h = lt_load_f64(yh->data, yh->dtype, (b * 2 + d) * 2 + j);
                            same &= fabs(h - rnn_bi_yh[(d * 2 + b) * 2 + j]) < 1e-5;
                        }
                    }
        CHECK(same);
    }
    int64_t yd[4] = {2, 3, 2, 2};
    CHECK(tn_infer(&t) == LT_OK && type_is(&t.vout[0].type, LT_FLOAT, 4, yd));
    tn_free(&t);

    /* double and float16 run too */
    tn_init(&t, LT_OP_RNN, "RNN", 22, 2);
    int64_t xd[3] = {2, 1, 3}, wd[3] = {1, 4, 3}, rd[3] = {1, 4, 4};
    tn_val_input(&t, LT_FLOAT16, 3, xd, 0.3, NULL);
    tn_val_input(&t, LT_FLOAT16, 3, wd, 0.4, NULL);
    tn_val_input(&t, LT_FLOAT16, 3, rd, 0.5, NULL);
    CHECK(tn_eval(&t) == LT_OK && tn_out(&t, 1)->dtype == LT_FLOAT16 && tn_out(&t, 1)->numel == 4);
    tn_free(&t);
}

static void test_rnn_errors(void) {
    tnode t;
    build_lstm_bi(&t);
    lt_tensor *sl = t.in[4]->tensor;
    ((int32_t *)sl->data)[1] = 4; /* > seq_length */
    CHECK(tn_eval(&t) == LT_ERR_INVALID && strstr(t.ctx.msg, "sequence_lens[1] = 4") != NULL);
    lt_ctx_clear(&t.ctx);
    ((int32_t *)sl->data)[1] = -1;
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    lt_ctx_clear(&t.ctx);
    ((int32_t *)sl->data)[1] = 0; /* an empty sequence: Y zero, Y_h = initial_h */
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(lt_load_f64(tn_out(&t, 1)->data, LT_FLOAT, 2) == (double)(float)(sin(0.37 * 2 + 0.6) * 0.6));
    tn_free(&t);

    tn_init(&t, LT_OP_GRU, "GRU", 14, 2);
    int64_t xd[3] = {3, 2, 2}, wd[3] = {1, 6, 2}, bad[3] = {1, 5, 2};
    tn_val_input(&t, LT_FLOAT, 3, xd, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, bad, 0, NULL); /* R rows are not 3 * hidden */
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init(&t, LT_OP_RNN, "RNN", 14, 2);
    int64_t rd[3] = {1, 2, 2}, w1[3] = {1, 2, 2};
    tn_val_input(&t, LT_FLOAT, 3, xd, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, w1, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, rd, 0, NULL);
    tn_str(&t, "direction", "sideways");
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    lt_ctx_clear(&t.ctx);
    CHECK(tn_infer(&t) == LT_ERR_INVALID);
    tn_free(&t);

    tn_init(&t, LT_OP_RNN, "RNN", 14, 2);
    tn_val_input(&t, LT_FLOAT, 3, xd, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, w1, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, rd, 0, NULL);
    const char *acts[1] = {"Swish"};
    tn_strs(&t, "activations", acts, 1);
    CHECK(tn_eval(&t) == LT_ERR_UNSUPPORTED);
    tn_free(&t);
}

/* ---- Attention ---- */

static void build_attention(tnode *t) {
    tn_init(t, LT_OP_Attention, "Attention", 23, 4);
    int64_t qd[4] = {1, 4, 2, 4}, kd[4] = {1, 2, 3, 4}, pd[4] = {1, 2, 2, 4}, md[2] = {2, 5};
    double mask[10] = {1, 0, 1, 1, 1, 1, 1, 0, 1, 1};
    tn_val_input(t, LT_FLOAT, 4, qd, 5.1, NULL);
    tn_val_input(t, LT_FLOAT, 4, kd, 5.2, NULL);
    tn_val_input(t, LT_FLOAT, 4, kd, 5.3, NULL);
    tn_val_input(t, LT_BOOL, 2, md, 0, mask);
    tn_val_input(t, LT_FLOAT, 4, pd, 5.4, NULL);
    tn_val_input(t, LT_FLOAT, 4, pd, 5.5, NULL);
    tn_int(t, "is_causal", 1);
    tn_float(t, "softcap", 0.9f);
}

static void test_attention(void) {
    tnode t;
    build_attention(&t);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(out_near(&t, 0, att_y, 32));
    CHECK(out_near(&t, 3, att_qk, 40)); /* mode 0: the raw product, before softcap */
    int64_t yd[4] = {1, 4, 2, 4}, pk[4] = {1, 2, 5, 4}, qk[4] = {1, 4, 2, 5};
    CHECK(tn_infer(&t) == LT_OK);
    CHECK(type_is(&t.vout[0].type, LT_FLOAT, 4, yd) && type_is(&t.vout[1].type, LT_FLOAT, 4, pk) &&
          type_is(&t.vout[3].type, LT_FLOAT, 4, qk));
    tn_free(&t);

    /* heads that do not divide */
    tn_init(&t, LT_OP_Attention, "Attention", 23, 1);
    int64_t q3[3] = {1, 2, 12}, k3[3] = {1, 3, 8};
    tn_val_input(&t, LT_FLOAT, 3, q3, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, k3, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, k3, 0, NULL);
    tn_int(&t, "q_num_heads", 3);
    tn_int(&t, "kv_num_heads", 2);
    CHECK(tn_eval(&t) == LT_ERR_INVALID); /* head sizes 4 and 4, but 3 % 2 != 0 */
    tn_free(&t);

    /* mask longer than the total sequence */
    build_attention(&t);
    int64_t md[2] = {2, 6};
    lt_datum_release(t.in[3]);
    t.in[3] = NULL;
    lt_tensor *m;
    CHECK(lt_tensor_new(&t.ctx, LT_BOOL, 2, md, &m) == LT_OK);
    lt_datum_tensor(&t.ctx, m, &t.in[3]);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
}

/* ---- RotaryEmbedding ---- */

static void test_rotary(void) {
    tnode t;
    tn_init(&t, LT_OP_RotaryEmbedding, "RotaryEmbedding", 23, 1);
    int64_t xd[4] = {1, 1, 2, 4}, cd[2] = {3, 2}, pd[2] = {1, 2};
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[6] = {1, 1, 0, 0, 0.5, 0.5}, s[6] = {0, 0, 1, 1, 0.5, 0.5}, pos[2] = {1, -1};
    tn_val_input(&t, LT_FLOAT, 4, xd, 0, x);
    tn_val_input(&t, LT_FLOAT, 2, cd, 0, c);
    tn_val_input(&t, LT_FLOAT, 2, cd, 0, s);
    lt_tensor *p = tn_val_input(&t, LT_INT64, 2, pd, 0, pos);
    CHECK(tn_eval(&t) == LT_OK);
    /* position 1: cos 0, sin 1 -> (x1, x2) becomes (-x2, x1); position -1 = 2: cos = sin = 0.5 */
    double want[8] = {-3, -4, 1, 2, (5 - 7) * 0.5, (6 - 8) * 0.5, (5 + 7) * 0.5, (6 + 8) * 0.5};
    CHECK(out_near(&t, 0, want, 8));
    ((int64_t *)p->data)[1] = 3; /* out of range */
    CHECK(tn_eval(&t) == LT_ERR_INVALID && strstr(t.ctx.msg, "index 3 out of range [-3, 3)") != NULL);
    tn_free(&t);
}

/* ---- zero sizes ---- */

static void test_empty(void) {
    tnode t;
    tn_init(&t, LT_OP_LSTM, "LSTM", 14, 3);
    int64_t xd[3] = {0, 2, 3}, wd[3] = {1, 8, 3}, rd[3] = {1, 8, 2};
    tn_val_input(&t, LT_FLOAT, 3, xd, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, wd, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, rd, 0, NULL);
    CHECK(tn_eval(&t) == LT_OK && tn_out(&t, 0)->numel == 0 && tn_out(&t, 1)->numel == 4);
    tn_free(&t);

    tn_init(&t, LT_OP_CausalConvWithState, "CausalConvWithState", 27, 2);
    int64_t in[3] = {1, 2, 0}, w[3] = {2, 1, 3};
    tn_val_input(&t, LT_FLOAT, 3, in, 0, NULL);
    tn_val_input(&t, LT_FLOAT, 3, w, 0, NULL);
    CHECK(tn_eval(&t) == LT_OK && tn_out(&t, 0)->numel == 0 && tn_out(&t, 1)->numel == 4);
    tn_free(&t);
}

/* ---- out of memory: every allocation of an eval fails in turn ---- */

static void test_oom(void) {
    tnode t;
    build_lstm_bi(&t);
    oom_sweep(&t);
    tn_free(&t);
    build_attention(&t);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_LinearAttention, "LinearAttention", 27, 2);
    int64_t qd[3] = {1, 2, 4}, bd[3] = {1, 2, 2}, sd[4] = {1, 2, 2, 2};
    tn_val_input(&t, LT_FLOAT, 3, qd, 0.1, NULL);
    tn_val_input(&t, LT_FLOAT, 3, qd, 0.2, NULL);
    tn_val_input(&t, LT_FLOAT, 3, qd, 0.3, NULL);
    tn_val_input(&t, LT_FLOAT, 4, sd, 0.4, NULL);
    tn_val_input(&t, LT_FLOAT, 3, qd, 0.5, NULL);
    tn_val_input(&t, LT_FLOAT, 3, bd, 0.6, NULL);
    tn_int(&t, "q_num_heads", 2);
    tn_int(&t, "kv_num_heads", 2);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_FlexAttention, "FlexAttention", 1, 1);
    t.node.domain = "ai.onnx.preview";
    int64_t fd[4] = {1, 2, 3, 4};
    tn_val_input(&t, LT_FLOAT16, 4, fd, 0.1, NULL);
    tn_val_input(&t, LT_FLOAT16, 4, fd, 0.2, NULL);
    tn_val_input(&t, LT_FLOAT16, 4, fd, 0.3, NULL);
    oom_sweep(&t);
    tn_free(&t);
}

int main(void) {
    test_lstm();
    test_gru();
    test_rnn_and_layout();
    test_rnn_errors();
    test_attention();
    test_rotary();
    test_empty();
    test_oom();
    return test_report("test_ops_recurrent");
}
