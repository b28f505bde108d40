/* test_ops_nn.c — unit tests of the nn family (src/ops/nn/) for what the ONNX node tests do not
 * reach: the blocked GEMM and convolution kernels on sizes that cross every block and tile edge
 * (checked against naive loops, float within tolerance, double and integers exactly), exact int64
 * products beyond 2^53, old-opset attribute forms, error paths (bad indices, bad shapes, bad
 * equations) and out-of-memory on every allocation. Exits non-zero on any failure. */
#include "ops/nn/nn_impl.h"
#include "test_node.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 12345;
static int64_t rnd_int(int64_t lo, int64_t hi) { /* [lo, hi] */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int64_t)((g_rng >> 33) % (uint64_t)(hi - lo + 1));
}

/* ---- kernels against naive loops ---- */

static void test_gemm_kernels(void) {
    for (int it = 0; it < 40; it++) {
        int64_t M = rnd_int(1, it < 10 ? 9 : 150), N = rnd_int(1, it < 10 ? 11 : 70), K = rnd_int(0, it < 20 ? 12 : 600);
        bool ta = rnd_int(0, 1), acc = rnd_int(0, 1);
        int64_t ars = ta ? 1 : K, acs = ta ? M : 1, ldb = N + rnd_int(0, 3), ldc = N + rnd_int(0, 3);
        int64_t na = M * K + 1, nb = K * ldb + 1, nc = M * ldc + 1;
        float *af = malloc(sizeof(float) * (size_t)na), *bf = malloc(sizeof(float) * (size_t)nb);
        float *cf = malloc(sizeof(float) * (size_t)nc);
        double *ad = malloc(sizeof(double) * (size_t)na), *bd = malloc(sizeof(double) * (size_t)nb);
        double *cd = malloc(sizeof(double) * (size_t)nc), *ref = malloc(sizeof(double) * (size_t)nc);
        uint64_t *au = malloc(sizeof(uint64_t) * (size_t)na), *bu = malloc(sizeof(uint64_t) * (size_t)nb);
        uint64_t *cu = malloc(sizeof(uint64_t) * (size_t)nc);
        for (int64_t i = 0; i < na; i++) au[i] = (uint64_t)rnd_int(-9, 9), ad[i] = (double)(int64_t)au[i], af[i] = (float)ad[i];
        for (int64_t i = 0; i < nb; i++) bu[i] = (uint64_t)rnd_int(-9, 9), bd[i] = (double)(int64_t)bu[i], bf[i] = (float)bd[i];
        for (int64_t i = 0; i < nc; i++) cu[i] = (uint64_t)rnd_int(-9, 9), cd[i] = (double)(int64_t)cu[i], cf[i] = (float)cd[i];
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = acc ? cd[i * ldc + j] : 0;
                for (int64_t k = 0; k < K; k++) s += ad[i * ars + k * acs] * bd[k * ldb + j];
                ref[i * ldc + j] = s;
            }
        nn_gemm_f32(M, N, K, af, ars, acs, bf, ldb, cf, ldc, acc);
        nn_gemm_f64(M, N, K, ad, ars, acs, bd, ldb, cd, ldc, acc);
        nn_gemm_u64(M, N, K, au, ars, acs, bu, ldb, cu, ldc, acc);
        int bad = 0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t o = i * ldc + j;
                if (cd[o] != ref[o] || (int64_t)cu[o] != (int64_t)ref[o] || cf[o] != (float)ref[o]) bad++;
            }
        CHECK(bad == 0);
        /* the padding between rows (ldc > N) is never written */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = N; j < ldc; j++) CHECK(cd[i * ldc + j] == (double)(int64_t)cu[i * ldc + j]);
        free(af), free(bf), free(cf), free(ad), free(bd), free(cd), free(ref), free(au), free(bu), free(cu);
    }
}

/* naive y[N,M,out] = conv(x, w) + bias, geometry g */
static void naive_conv(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const double *x,
                       const double *w, const double *b, double *y) {
    int nsp = g->nsp;
    int64_t P = 1, Pin = 1, K = 1;
    for (int d = 0; d < nsp; d++) P *= g->out[d], Pin *= g->in[d], K *= g->k[d];
    int64_t Cg = C / group, Mg = M / group;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t p = 0; p < P; p++) {
                int64_t o[NN_MAX_SP], r = p;
                for (int d = nsp - 1; d >= 0; d--) o[d] = r % g->out[d], r /= g->out[d];
                double s = b ? b[m] : 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t kk = 0; kk < K; kk++) {
                        int64_t kr = kk, off = 0, st = 1;
                        bool ok = true;
                        int64_t kid[NN_MAX_SP];
                        for (int d = nsp - 1; d >= 0; d--) kid[d] = kr % g->k[d], kr /= g->k[d];
                        for (int d = nsp - 1; d >= 0; d--) {
                            int64_t ii = o[d] * g->s[d] - g->pb[d] + kid[d] * g->d[d];
                            if (ii < 0 || ii >= g->in[d]) ok = false;
                            off += ii * st;
                            st *= g->in[d];
                        }
                        if (!ok) continue;
                        int64_t ci = (m / Mg) * Cg + c;
                        s += x[(n * C + ci) * Pin + off] * w[(m * Cg + c) * K + kk];
                    }
                y[(n * M + m) * P + p] = s;
            }
}

/* naive transposed convolution: y[N,M,out] += x[n,c,i] w[c, m%Mg, kk] at o = i*s - pb + kk*d */
static void naive_convt(const nn_geom *g, int64_t N, int64_t C, int64_t M, int64_t group, const double *x,
                        const double *w, double *y) {
    int nsp = g->nsp;
    int64_t P = 1, Pin = 1, K = 1;
    for (int d = 0; d < nsp; d++) P *= g->out[d], Pin *= g->in[d], K *= g->k[d];
    int64_t Cg = C / group, Mg = M / group;
    memset(y, 0, sizeof(double) * (size_t)(N * M * P));
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < Pin; p++)
                for (int64_t mg = 0; mg < Mg; mg++)
                    for (int64_t kk = 0; kk < K; kk++) {
                        int64_t i[NN_MAX_SP], kid[NN_MAX_SP], r = p, kr = kk, off = 0, st = 1;
                        bool ok = true;
                        for (int d = nsp - 1; d >= 0; d--) i[d] = r % g->in[d], r /= g->in[d];
                        for (int d = nsp - 1; d >= 0; d--) kid[d] = kr % g->k[d], kr /= g->k[d];
                        for (int d = nsp - 1; d >= 0; d--) {
                            int64_t o = i[d] * g->s[d] - g->pb[d] + kid[d] * g->d[d];
                            if (o < 0 || o >= g->out[d]) ok = false;
                            off += o * st;
                            st *= g->out[d];
                        }
                        if (!ok) continue;
                        int64_t m = (c / Cg) * Mg + mg;
                        y[(n * M + m) * P + off] += x[(n * C + c) * Pin + p] * w[(c * Mg + mg) * K + kk];
                    }
}

static void test_conv_kernels(void) {
    for (int it = 0; it < 60; it++) {
        nn_geom g;
        memset(&g, 0, sizeof g);
        g.nsp = (int)rnd_int(1, 3);
        int64_t group = rnd_int(1, 3), N = rnd_int(1, 2), C = group * rnd_int(1, 3), M = group * rnd_int(1, 3);
        int64_t P = 1, Pin = 1, K = 1;
        bool one = it % 7 == 0; /* the 1x1 GEMM-only path */
        for (int d = 0; d < g.nsp; d++) {
            g.in[d] = rnd_int(1, 9);
            g.k[d] = one ? 1 : rnd_int(1, 3);
            g.s[d] = one ? 1 : rnd_int(1, 3);
            g.d[d] = rnd_int(1, 2);
            g.pb[d] = one ? 0 : rnd_int(0, 2);
            g.pe[d] = one ? 0 : rnd_int(0, 2);
            int64_t num = g.in[d] + g.pb[d] + g.pe[d] - ((g.k[d] - 1) * g.d[d] + 1);
            if (num < 0) g.pe[d] -= num, num = 0;
            g.out[d] = num / g.s[d] + 1;
            P *= g.out[d], Pin *= g.in[d], K *= g.k[d];
        }
        int64_t nx = N * C * Pin, nw = M * (C / group) * K, ny = N * M * P;
        double *x = malloc(sizeof(double) * (size_t)nx), *w = malloc(sizeof(double) * (size_t)nw);
        double *b = malloc(sizeof(double) * (size_t)M), *y = malloc(sizeof(double) * (size_t)ny);
        double *ref = malloc(sizeof(double) * (size_t)ny);
        float *xf = malloc(sizeof(float) * (size_t)nx), *wf = malloc(sizeof(float) * (size_t)nw);
        float *bf = malloc(sizeof(float) * (size_t)M), *yf = malloc(sizeof(float) * (size_t)ny);
        uint64_t *xu = malloc(sizeof(uint64_t) * (size_t)nx), *wu = malloc(sizeof(uint64_t) * (size_t)nw);
        uint64_t *yu = malloc(sizeof(uint64_t) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++) x[i] = (double)rnd_int(-5, 5), xf[i] = (float)x[i], xu[i] = (uint64_t)(int64_t)x[i];
        for (int64_t i = 0; i < nw; i++) w[i] = (double)rnd_int(-5, 5), wf[i] = (float)w[i], wu[i] = (uint64_t)(int64_t)w[i];
        for (int64_t i = 0; i < M; i++) b[i] = (double)rnd_int(-5, 5), bf[i] = (float)b[i];
        naive_conv(&g, N, C, M, group, x, w, b, ref);
        CHECK(nn_conv_f64(&g, N, C, M, group, x, w, b, y));
        CHECK(nn_conv_f32(&g, N, C, M, group, xf, wf, bf, yf));
        CHECK(nn_conv_u64(&g, N, C, M, group, xu, wu, NULL, yu));
        int bad = 0;
        for (int64_t i = 0; i < ny; i++) {
            double nb = ref[i] - b[(i / P) % M];
            if (y[i] != ref[i] || yf[i] != (float)ref[i] || (int64_t)yu[i] != (int64_t)nb) bad++;
        }
        CHECK(bad == 0);
        free(x), free(w), free(b), free(y), free(ref), free(xf), free(wf), free(bf), free(yf), free(xu), free(wu),
            free(yu);
    }
    /* transposed: g.in = x spatial, g.out = y spatial */
    for (int it = 0; it < 40; it++) {
        nn_geom g;
        memset(&g, 0, sizeof g);
        g.nsp = (int)rnd_int(1, 3);
        int64_t group = rnd_int(1, 2), N = rnd_int(1, 2), C = group * rnd_int(1, 3), M = group * rnd_int(1, 3);
        int64_t P = 1, Pin = 1, K = 1;
        for (int d = 0; d < g.nsp; d++) {
            g.in[d] = rnd_int(1, 5);
            g.k[d] = rnd_int(1, 3);
            g.s[d] = rnd_int(1, 3);
            g.d[d] = rnd_int(1, 2);
            g.pb[d] = rnd_int(-1, 1);
            g.pe[d] = rnd_int(0, 1);
            g.out[d] = g.s[d] * (g.in[d] - 1) + (g.k[d] - 1) * g.d[d] + 1 - g.pb[d] - g.pe[d];
            if (g.out[d] < 1) g.pe[d] -= 1 - g.out[d], g.out[d] = 1;
            P *= g.out[d], Pin *= g.in[d], K *= g.k[d];
        }
        int64_t nx = N * C * Pin, nw = C * (M / group) * K, ny = N * M * P;
        double *x = malloc(sizeof(double) * (size_t)nx), *w = malloc(sizeof(double) * (size_t)nw);
        double *y = malloc(sizeof(double) * (size_t)ny), *ref = malloc(sizeof(double) * (size_t)ny);
        for (int64_t i = 0; i < nx; i++) x[i] = (double)rnd_int(-5, 5);
        for (int64_t i = 0; i < nw; i++) w[i] = (double)rnd_int(-5, 5);
        naive_convt(&g, N, C, M, group, x, w, ref);
        CHECK(nn_convt_f64(&g, N, C, M, group, x, w, NULL, y));
        int bad = 0;
        for (int64_t i = 0; i < ny; i++) bad += y[i] != ref[i];
        CHECK(bad == 0);
        free(x), free(w), free(y), free(ref);
    }
}

/* ---- hook tests ---- */

static void test_int64_exact(void) {
    tnode t;
    tn_init(&t, LT_OP_MatMul, "MatMul", 13, 1);
    int64_t da[2] = {1, 2}, db[2] = {2, 1};
    lt_tensor *a = tn_input(&t, LT_INT64, 2, da, NULL, false), *b = tn_input(&t, LT_INT64, 2, db, NULL, false);
    int64_t *ad = a->data, *bd = b->data;
    ad[0] = ((int64_t)1 << 60) + 1, ad[1] = 3, bd[0] = 1, bd[1] = -((int64_t)1 << 40) - 1;
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(outi(&t, 0, 0) == ((int64_t)1 << 60) + 1 - 3 * (((int64_t)1 << 40) + 1));
    tn_free(&t);

    tn_init(&t, LT_OP_Gemm, "Gemm", 13, 1);
    a = tn_input(&t, LT_INT64, 2, da, NULL, false);
    b = tn_input(&t, LT_INT64, 2, db, NULL, false);
    int64_t dc[1] = {1};
    lt_tensor *c = tn_input(&t, LT_INT64, 1, dc, NULL, false);
    ad = a->data, bd = b->data;
    ad[0] = ((int64_t)1 << 60) + 1, ad[1] = 0, bd[0] = 1, bd[1] = 5;
    ((int64_t *)c->data)[0] = 2;
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(outi(&t, 0, 0) == ((int64_t)1 << 60) + 3);
    tn_free(&t);
}

static void test_pool_details(void) {
    /* MaxPool Indices, column-major storage order, ties keep the first maximum */
    tnode t;
    tn_init(&t, LT_OP_MaxPool, "MaxPool", 12, 2);
    int64_t dx[4] = {1, 1, 2, 3};
    double v[6] = {1, 7, 7, 2, 0, 7};
    tn_input(&t, LT_FLOAT, 4, dx, v, false);
    int64_t ks[2] = {2, 2};
    tn_ints(&t, "kernel_shape", ks, 2);
    tn_int(&t, "storage_order", 1);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->numel == 2 && outf(&t, 0, 0) == 7 && outf(&t, 0, 1) == 7);
    /* both windows find their first maximum at (h=0, w=1): 0 + 1*H = 2 */
    CHECK(outi(&t, 1, 0) == 2 && outi(&t, 1, 1) == 2);
    CHECK(tn_infer(&t) == LT_OK);
    CHECK(t.vout[1].type.dtype == LT_INT64 && t.vout[1].type.rank == 4 && t.vout[1].type.dims[3].value == 2);
    tn_free(&t);

    /* LpPool opset 1: p is a float attribute */
    tn_init(&t, LT_OP_LpPool, "LpPool", 1, 1);
    int64_t d1[3] = {1, 1, 2};
    double w[2] = {3, -4};
    tn_input(&t, LT_FLOAT, 3, d1, w, false);
    int64_t k2[1] = {2};
    tn_ints(&t, "kernel_shape", k2, 1);
    tn_float(&t, "p", 2.0f);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->numel == 1 && fabs(outf(&t, 0, 0) - 5.0) < 1e-6);
    tn_free(&t);

    /* AveragePool with ceil_mode: the partial last window divides by its in-bounds count */
    tn_init(&t, LT_OP_AveragePool, "AveragePool", 19, 1);
    int64_t d5[3] = {1, 1, 5};
    double u[5] = {1, 2, 3, 4, 10};
    tn_input(&t, LT_FLOAT, 3, d5, u, false);
    tn_ints(&t, "kernel_shape", k2, 1);
    tn_ints(&t, "strides", k2, 1);
    tn_int(&t, "ceil_mode", 1);
    tn_int(&t, "count_include_pad", 1);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->numel == 3 && outf(&t, 0, 0) == 1.5 && outf(&t, 0, 2) == 10);
    tn_free(&t);
}

static void test_quant_rounding(void) {
    tnode t;
    tn_init(&t, LT_OP_QuantizeLinear, "QuantizeLinear", 21, 1);
    int64_t d[1] = {6}, one[1] = {1};
    double x[6] = {0.5, 1.5, 2.5, -0.5, -1.5, 1000};
    double s[1] = {1}, z[1] = {0};
    tn_input(&t, LT_FLOAT, 1, d, x, false);
    tn_input(&t, LT_FLOAT, 1, one, s, false);
    tn_input(&t, LT_INT8, 1, one, z, false);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->dtype == LT_INT8);
    CHECK(outi(&t, 0, 0) == 0 && outi(&t, 0, 1) == 2 && outi(&t, 0, 2) == 2 && outi(&t, 0, 3) == 0 &&
          outi(&t, 0, 4) == -2 && outi(&t, 0, 5) == 127);
    tn_free(&t);
    /* opset 10: no zero point -> uint8 */
    tn_init(&t, LT_OP_QuantizeLinear, "QuantizeLinear", 10, 1);
    tn_input(&t, LT_FLOAT, 1, d, x, false);
    tn_input(&t, LT_FLOAT, 0, NULL, s, false);
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->dtype == LT_UINT8 && outi(&t, 0, 3) == 0 && outi(&t, 0, 5) == 255);
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.dtype == LT_UINT8);
    tn_free(&t);
}

static void test_einsum(void) {
    tnode t;
    tn_init(&t, LT_OP_Einsum, "Einsum", 12, 1);
    int64_t d[3] = {2, 2, 3};
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    tn_input(&t, LT_INT64, 3, d, v, false);
    tn_str(&t, "equation", "iij"); /* implicit output "j": sum of the diagonal over i */
    CHECK(tn_eval(&t) == LT_OK);
    CHECK(tn_out(&t, 0)->rank == 1 && tn_out(&t, 0)->dims[0] == 3);
    CHECK(outi(&t, 0, 0) == 0 + 9 && outi(&t, 0, 2) == 2 + 11);
    CHECK(tn_infer(&t) == LT_OK && t.vout[0].type.rank == 1 && t.vout[0].type.dims[0].value == 3);
    tn_free(&t);
    const char *bad[] = {"ij", "i..jk", "ijk->l", "ijk->jj", "i#k", "...->", "ijk,ijk", "ij-k"};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        tn_init(&t, LT_OP_Einsum, "Einsum", 12, 1);
        tn_input(&t, LT_INT64, 3, d, v, false);
        tn_str(&t, "equation", bad[b]);
        CHECK(tn_eval(&t) == LT_ERR_INVALID);
        tn_free(&t);
    }
}

static void test_errors(void) {
    tnode t;
    /* MaxUnpool: an index outside the unpooled tensor */
    tn_init(&t, LT_OP_MaxUnpool, "MaxUnpool", 11, 1);
    int64_t dx[4] = {1, 1, 1, 2}, ks[2] = {2, 2};
    double xv[2] = {1, 2}, iv[2] = {3, 8};
    tn_input(&t, LT_FLOAT, 4, dx, xv, false);
    tn_input(&t, LT_INT64, 4, dx, iv, false);
    tn_ints(&t, "kernel_shape", ks, 2);
    tn_ints(&t, "strides", ks, 2);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    CHECK(strstr(t.ctx.msg, "index 8 out of range") != NULL);
    tn_free(&t);
    /* Conv: channels do not match the group */
    tn_init(&t, LT_OP_Conv, "Conv", 11, 1);
    int64_t dxc[4] = {1, 3, 4, 4}, dw[4] = {2, 2, 1, 1};
    tn_input(&t, LT_FLOAT, 4, dxc, NULL, false);
    tn_input(&t, LT_FLOAT, 4, dw, NULL, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
    /* Gemm: C cannot broadcast */
    tn_init(&t, LT_OP_Gemm, "Gemm", 13, 1);
    int64_t da[2] = {2, 3}, db[2] = {3, 4}, dcc[1] = {3};
    tn_input(&t, LT_FLOAT, 2, da, NULL, false);
    tn_input(&t, LT_FLOAT, 2, db, NULL, false);
    tn_input(&t, LT_FLOAT, 1, dcc, NULL, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
    /* Pool without kernel_shape; bad strides */
    tn_init(&t, LT_OP_AveragePool, "AveragePool", 11, 1);
    tn_input(&t, LT_FLOAT, 4, dxc, NULL, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
    tn_init(&t, LT_OP_MaxPool, "MaxPool", 11, 1);
    tn_input(&t, LT_FLOAT, 4, dxc, NULL, false);
    int64_t k1[2] = {1, 1}, s0[2] = {0, 1};
    tn_ints(&t, "kernel_shape", k1, 2);
    tn_ints(&t, "strides", s0, 2);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
    /* QuantizeLinear: per-axis scale of the wrong length */
    tn_init(&t, LT_OP_QuantizeLinear, "QuantizeLinear", 13, 1);
    int64_t d2[1] = {2};
    tn_input(&t, LT_FLOAT, 2, da, NULL, false);
    tn_input(&t, LT_FLOAT, 1, d2, NULL, false);
    CHECK(tn_eval(&t) == LT_ERR_INVALID);
    tn_free(&t);
}

/* Every allocation of an eval fails in turn: the op reports NOMEM (never crashes or leaks). */
static void test_oom(void) {
    double v[96];
    for (int i = 0; i < 96; i++) v[i] = (i * 7) % 11 - 5;
    tnode t;
    int64_t dx[4] = {1, 2, 4, 4}, dw[4] = {3, 2, 3, 3}, db[1] = {3}, pads[4] = {1, 1, 1, 1};
    tn_init(&t, LT_OP_Conv, "Conv", 11, 1);
    tn_input(&t, LT_FLOAT16, 4, dx, v, false);
    tn_input(&t, LT_FLOAT16, 4, dw, v, false);
    tn_input(&t, LT_FLOAT16, 1, db, v, false);
    tn_ints(&t, "pads", pads, 4);
    oom_sweep(&t);
    tn_free(&t);

    int64_t dwt[4] = {2, 3, 3, 3};
    tn_init(&t, LT_OP_ConvTranspose, "ConvTranspose", 11, 1);
    tn_input(&t, LT_FLOAT, 4, dx, v, false);
    tn_input(&t, LT_FLOAT, 4, dwt, v, false);
    oom_sweep(&t);
    tn_free(&t);

    int64_t dq[4] = {1, 1, 3, 3}, dqw[4] = {2, 1, 2, 2}, one[1] = {1}, two[1] = {2};
    tn_init(&t, LT_OP_QLinearConv, "QLinearConv", 10, 1);
    tn_input(&t, LT_UINT8, 4, dq, v + 10, false);
    tn_input(&t, LT_FLOAT, 0, one, v + 9, false);
    tn_input(&t, LT_UINT8, 0, one, v + 9, false);
    tn_input(&t, LT_UINT8, 4, dqw, v + 10, false);
    tn_input(&t, LT_FLOAT, 1, two, v + 9, false);
    tn_input(&t, LT_UINT8, 1, two, v + 9, false);
    tn_input(&t, LT_FLOAT, 0, one, v + 9, false);
    tn_input(&t, LT_UINT8, 0, one, v + 9, false);
    tn_input(&t, LT_INT32, 1, two, v, false);
    oom_sweep(&t);
    tn_free(&t);

    int64_t dm[3] = {2, 3, 4}, dn[2] = {4, 5};
    tn_init(&t, LT_OP_MatMul, "MatMul", 13, 1);
    tn_input(&t, LT_BFLOAT16, 3, dm, v, false);
    tn_input(&t, LT_BFLOAT16, 2, dn, v, false);
    oom_sweep(&t);
    tn_free(&t);

    int64_t ga[2] = {12, 4}, gb[2] = {5, 4};
    tn_init(&t, LT_OP_Gemm, "Gemm", 13, 1);
    tn_input(&t, LT_FLOAT16, 2, ga, v, false);
    tn_input(&t, LT_FLOAT16, 2, gb, v, false);
    tn_int(&t, "transB", 1);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_MatMulInteger, "MatMulInteger", 10, 1);
    tn_input(&t, LT_UINT8, 3, dm, v + 10, false);
    tn_input(&t, LT_UINT8, 2, dn, v + 10, false);
    tn_input(&t, LT_UINT8, 1, one, v + 9, false);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_Einsum, "Einsum", 12, 1);
    tn_input(&t, LT_FLOAT, 3, dm, v, false);
    tn_input(&t, LT_FLOAT, 2, dn, v, false);
    tn_str(&t, "equation", "bij,jk->bik");
    oom_sweep(&t);
    tn_free(&t);

    int64_t ks[2] = {2, 2};
    tn_init(&t, LT_OP_MaxPool, "MaxPool", 12, 2);
    tn_input(&t, LT_FLOAT, 4, dx, v, false);
    tn_ints(&t, "kernel_shape", ks, 2);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_GlobalLpPool, "GlobalLpPool", 2, 1);
    tn_input(&t, LT_FLOAT, 4, dx, v, false);
    oom_sweep(&t);
    tn_free(&t);

    int64_t dd[4] = {1, 2, 3, 3}, dwd[4] = {1, 2, 2, 2}, doff[4] = {1, 8, 2, 2}, dmask[4] = {1, 4, 2, 2};
    tn_init(&t, LT_OP_DeformConv, "DeformConv", 19, 1);
    tn_input(&t, LT_FLOAT, 4, dd, v, false);
    tn_input(&t, LT_FLOAT, 4, dwd, v, false);
    tn_input(&t, LT_FLOAT, 4, doff, v, false);
    tn_skip_input(&t);
    tn_input(&t, LT_FLOAT, 4, dmask, v, false);
    oom_sweep(&t);
    tn_free(&t);

    int64_t dc[3] = {1, 4, 4}, i2[1] = {2};
    double img[2] = {3, 3}, blk[2] = {2, 2};
    tn_init(&t, LT_OP_Col2Im, "Col2Im", 18, 1);
    tn_input(&t, LT_FLOAT, 3, dc, v, false);
    tn_input(&t, LT_INT64, 1, i2, img, false);
    tn_input(&t, LT_INT64, 1, i2, blk, false);
    oom_sweep(&t);
    tn_free(&t);

    tn_init(&t, LT_OP_Det, "Det", 11, 1);
    int64_t ddet[3] = {2, 3, 3};
    tn_input(&t, LT_DOUBLE, 3, ddet, v, false);
    oom_sweep(&t);
    tn_free(&t);
}

int main(void) {
    test_gemm_kernels();
    test_conv_kernels();
    test_int64_exact();
    test_pool_details();
    test_quant_rounding();
    test_einsum();
    test_errors();
    test_oom();
    return test_report("test_ops_nn");
}
