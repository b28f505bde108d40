/* test_api_compile.c — the public C API of compiled models, using nothing but include/lathe.h:
 * lathe_compile on the tiny models of tests/data (the test runs from the source root), outputs equal
 * to lathe_run's (the interpreter), lathe_compiled_run_buffers on caller memory, the getters, host
 * steps inside a compiled model (NonZero), symbolic dims bound through the load options, and the error
 * paths: unbound dims, wrong input shape / count, a missing compiler, an unknown backend.
 * Needs a C compiler (cc) on the PATH, as the CPU backend does. Exits non-zero on a failure. */
#include <lathe.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static lathe_tensor *make_f32(int rank, const int64_t *dims, float start, float step) {
    lathe_tensor *t = NULL;
    if (lathe_tensor_create(LATHE_FLOAT, rank, dims, &t) != LATHE_OK) return NULL;
    float *p = lathe_tensor_data(t);
    for (int64_t i = 0; i < lathe_tensor_numel(t); i++) p[i] = start + step * (float)i;
    return t;
}

static bool same_tensor(lathe_tensor *a, lathe_tensor *b, double tol) {
    if (!a || !b || lathe_tensor_dtype(a) != lathe_tensor_dtype(b) || lathe_tensor_rank(a) != lathe_tensor_rank(b))
        return false;
    for (int k = 0; k < lathe_tensor_rank(a); k++)
        if (lathe_tensor_shape(a)[k] != lathe_tensor_shape(b)[k]) return false;
    if (lathe_tensor_dtype(a) == LATHE_FLOAT) {
        const float *x = lathe_tensor_data(a), *y = lathe_tensor_data(b);
        for (int64_t i = 0; i < lathe_tensor_numel(a); i++)
            if (fabs((double)x[i] - (double)y[i]) > tol * (1 + fabs((double)y[i]))) return false;
        return true;
    }
    return memcmp(lathe_tensor_data(a), lathe_tensor_data(b), lathe_tensor_nbytes(a)) == 0;
}

static void test_add(void) {
    char err[1024] = "";
    lathe_compiled *c = NULL;
    lathe_compile_options co = {0};
    co.threads = 1;
    CHECK(lathe_compile("tests/data/add.onnx", NULL, &co, &c, err, sizeof err) == LATHE_OK);
    if (!c) {
        fprintf(stderr, "compile failed: %s\n", err);
        failures++;
        return;
    }
    CHECK(lathe_compiled_num_inputs(c) == 2 && lathe_compiled_num_outputs(c) == 1);
    CHECK(strcmp(lathe_compiled_input_name(c, 1), "Y") == 0 && strcmp(lathe_compiled_output_name(c, 0), "Z") == 0);
    CHECK(lathe_compiled_input_name(c, 2) == NULL && lathe_compiled_input_dtype(c, 0) == LATHE_FLOAT);
    int64_t d[4] = {0};
    CHECK(lathe_compiled_input_shape(c, 0, d, 4) == 2 && d[0] == 2 && d[1] == 3);
    CHECK(lathe_compiled_output_shape(c, 0, d, 4) == 2 && d[0] == 2 && d[1] == 3);
    CHECK(lathe_compiled_output_bytes(c, 0) == 24 && lathe_compiled_output_bytes(c, 1) == 0);
    CHECK(strstr(lathe_compiled_report(c), "kernels") != NULL);

    int64_t dims[2] = {2, 3};
    lathe_tensor *x = make_f32(2, dims, 0.5f, 1.25f), *y = make_f32(2, dims, -3.0f, 0.75f), *z = NULL;
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x, y}, 2, &z, 1) == LATHE_OK);
    const float *px = lathe_tensor_data(x), *py = lathe_tensor_data(y);
    CHECK(z && lathe_tensor_numel(z) == 6);
    for (int i = 0; z && i < 6; i++) CHECK(((const float *)lathe_tensor_data(z))[i] == px[i] + py[i]);
    /* caller memory, twice (the plan is reused) */
    float out[6] = {0};
    for (int r = 0; r < 2; r++) {
        CHECK(lathe_compiled_run_buffers(c, (const void *const[]){px, py}, 2, (void *const[]){out}, 1) == LATHE_OK);
        for (int i = 0; i < 6; i++) CHECK(out[i] == px[i] + py[i]);
    }
    lathe_compiled_set_threads(c, 2);
    /* errors */
    int64_t bad[2] = {3, 2};
    lathe_tensor *w = make_f32(2, bad, 0, 1), *z2 = NULL;
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x, w}, 2, &z2, 1) == LATHE_ERR_INVALID);
    CHECK(z2 == NULL && strstr(lathe_compiled_error(c), "'Y'") != NULL);
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x}, 1, &z2, 1) == LATHE_ERR_USAGE);
    CHECK(strstr(lathe_compiled_error(c), "takes 2 inputs") != NULL);
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x, NULL}, 2, &z2, 1) == LATHE_ERR_USAGE);
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x, y}, 2, &z2, 1) == LATHE_OK);
    CHECK(lathe_compiled_error(c)[0] == 0);
    lathe_tensor_free(z2);
    lathe_tensor_free(w);
    lathe_tensor_free(x);
    lathe_tensor_free(y);
    lathe_tensor_free(z);
    lathe_compiled_free(c);
}

/* compiled == interpreted on a model with a host step (NonZero) between kernels */
static void test_host_model(void) {
    char err[1024] = "";
    lathe_model *m = NULL;
    lathe_compiled *c = NULL;
    CHECK(lathe_model_load("tests/data/lower_host.onnx", NULL, &m, err, sizeof err) == LATHE_OK);
    CHECK(lathe_compile("tests/data/lower_host.onnx", NULL, NULL, &c, err, sizeof err) == LATHE_OK);
    if (!m || !c) {
        fprintf(stderr, "load/compile failed: %s\n", err);
        failures++;
        lathe_model_free(m);
        lathe_compiled_free(c);
        return;
    }
    CHECK(lathe_compiled_num_outputs(c) == lathe_model_num_outputs(m));
    int64_t dims[8];
    int rank = lathe_compiled_input_shape(c, 0, dims, 8);
    CHECK(rank >= 1);
    lathe_tensor *x = make_f32(rank, dims, -1.0f, 0.37f);
    int no = lathe_model_num_outputs(m);
    lathe_tensor *a[8] = {0}, *b[8] = {0};
    CHECK(no <= 8);
    CHECK(lathe_run(m, (const lathe_tensor *const[]){x}, 1, a, no) == LATHE_OK);
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x}, 1, b, no) == LATHE_OK);
    for (int k = 0; k < no; k++) CHECK(same_tensor(b[k], a[k], 1e-5));
    /* an output with a data-dependent shape cannot go to caller memory */
    bool dynamic = false;
    for (int k = 0; k < no; k++) dynamic |= lathe_compiled_output_bytes(c, k) == 0;
    if (dynamic) {
        void *outs[8] = {0};
        CHECK(lathe_compiled_run_buffers(c, (const void *const[]){lathe_tensor_data(x)}, 1, outs, no) != LATHE_OK);
    }
    for (int k = 0; k < no; k++) {
        lathe_tensor_free(a[k]);
        lathe_tensor_free(b[k]);
    }
    lathe_tensor_free(x);
    lathe_compiled_free(c);
    lathe_model_free(m);
}

static void test_symbolic(void) {
    char err[1024] = "";
    lathe_compiled *c = NULL;
    /* N unbound: compiled for every N, each shape when it is first run */
    CHECK(lathe_compile("tests/data/sym_add.onnx", NULL, NULL, &c, err, sizeof err) == LATHE_OK);
    if (c) {
        int64_t sd[2] = {0, 0};
        CHECK(lathe_compiled_input_shape(c, 0, sd, 2) == 2 && sd[0] == -1 && sd[1] == 3);
        for (int64_t n = 4; n <= 6; n++) {
            int64_t dn[2] = {n, 3}, d1[1] = {2}, v[2] = {7, -9};
            lathe_tensor *a = make_f32(2, dn, 1, 1), *b = make_f32(2, dn, 2, -1), *ix = NULL, *out[2] = {0};
            CHECK(lathe_tensor_create_copy(LATHE_INT64, 1, d1, v, &ix) == LATHE_OK);
            CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){a, b, ix}, 3, out, 2) == LATHE_OK);
            int64_t last = n * 3 - 1;
            CHECK(out[0] && lathe_tensor_numel(out[0]) == n * 3 &&
                  ((float *)lathe_tensor_data(out[0]))[last] == (float)(last + 1) + (2.0f - (float)last));
            for (int k = 0; k < 2; k++) lathe_tensor_free(out[k]);
            lathe_tensor_free(a), lathe_tensor_free(b), lathe_tensor_free(ix);
        }
        /* buffers say no shapes: select them, then run on the caller's memory */
        int ranks[3] = {2, 2, 1};
        int64_t s5[2] = {5, 3}, s1[1] = {2}, s7[3] = {5, 3, 1}, od[2] = {0, 0};
        CHECK(lathe_compiled_select_shapes(c, 3, ranks, (const int64_t *const[]){s5, s5, s1}) == LATHE_OK);
        CHECK(lathe_compiled_output_shape(c, 0, od, 2) == 2 && od[0] == 5 && od[1] == 3);
        CHECK(lathe_compiled_output_bytes(c, 0) == 15 * sizeof(float) && lathe_compiled_output_bytes(c, 1) == 16);
        float av[15], bv[15], ov[15] = {0};
        int64_t iv2[2] = {7, -9}, io[2] = {0, 0};
        for (int i = 0; i < 15; i++) av[i] = (float)i + 1.0f, bv[i] = 2.0f - (float)i;
        CHECK(lathe_compiled_run_buffers(c, (const void *const[]){av, bv, iv2}, 3, (void *const[]){ov, io}, 2) == LATHE_OK);
        CHECK(ov[0] == 3.0f && ov[14] == 3.0f && io[0] == 7 && io[1] == -9);
        int bad[3] = {3, 2, 1}; /* a rank the model does not have: refused, naming the input */
        CHECK(lathe_compiled_select_shapes(c, 3, bad, (const int64_t *const[]){s7, s5, s1}) != LATHE_OK &&
              strstr(lathe_compiled_error(c), "rank"));
        CHECK(lathe_compiled_select_shapes(c, 2, ranks, (const int64_t *const[]){s5, s5}) == LATHE_ERR_USAGE);
        CHECK(strstr(lathe_compiled_report(c), "bucket 1: made at N=4"));
        lathe_compiled_free(c);
        c = NULL;
    }
    lathe_load_options lo = {0};
    lo.dims = "N=4";
    CHECK(lathe_compile("tests/data/sym_add.onnx", &lo, NULL, &c, err, sizeof err) == LATHE_OK);
    if (!c) return;
    int64_t d[2];
    CHECK(lathe_compiled_input_shape(c, 0, d, 2) == 2 && d[0] == 4 && d[1] == 3);
    { /* compiled for fixed shapes: selecting them is fine, others are refused */
        int ranks[3] = {2, 2, 1};
        int64_t s4[2] = {4, 3}, s5[2] = {5, 3}, s1[1] = {2};
        CHECK(lathe_compiled_select_shapes(c, 3, ranks, (const int64_t *const[]){s4, s4, s1}) == LATHE_OK);
        CHECK(lathe_compiled_select_shapes(c, 3, ranks, (const int64_t *const[]){s5, s4, s1}) == LATHE_ERR_INVALID);
    }
    int64_t dims[2] = {4, 3}, idims[1] = {2};
    lathe_tensor *x = make_f32(2, dims, 1, 1), *y = make_f32(2, dims, 2, -1), *i = NULL, *o[2] = {0};
    int64_t iv[2] = {7, -9};
    CHECK(lathe_tensor_create_copy(LATHE_INT64, 1, idims, iv, &i) == LATHE_OK);
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x, y, i}, 3, o, 2) == LATHE_OK);
    CHECK(o[0] && ((float *)lathe_tensor_data(o[0]))[11] == 12.0f + (2.0f - 11.0f));
    CHECK(o[1] && ((int64_t *)lathe_tensor_data(o[1]))[1] == -9);
    /* the output is the caller's: writing it leaves the next run's output alone */
    if (o[1]) ((int64_t *)lathe_tensor_data(o[1]))[0] = 0;
    lathe_tensor *o2[2] = {0};
    CHECK(lathe_compiled_run(c, (const lathe_tensor *const[]){x, y, i}, 3, o2, 2) == LATHE_OK);
    CHECK(o2[1] && ((int64_t *)lathe_tensor_data(o2[1]))[0] == 7);
    for (int k = 0; k < 2; k++) {
        lathe_tensor_free(o[k]);
        lathe_tensor_free(o2[k]);
    }
    lathe_tensor_free(x);
    lathe_tensor_free(y);
    lathe_tensor_free(i);
    lathe_compiled_free(c);
}

static void test_errors(void) {
    char err[1024] = "";
    lathe_compiled *c = NULL;
    lathe_compile_options co = {0};
    co.backend = "tpu";
    CHECK(lathe_compile("tests/data/add.onnx", NULL, &co, &c, err, sizeof err) == LATHE_ERR_UNSUPPORTED);
    CHECK(c == NULL && strstr(err, "tpu") && strstr(err, "cpu"));
    co.backend = NULL;
    co.cc = "/nonexistent/lathe-test-cc";
    CHECK(lathe_compile("tests/data/add.onnx", NULL, &co, &c, err, sizeof err) != LATHE_OK);
    CHECK(c == NULL && strstr(err, "lathe-test-cc") != NULL);
    co.cc = NULL;
    co.opt_level = 7;
    CHECK(lathe_compile("tests/data/add.onnx", NULL, &co, &c, err, sizeof err) == LATHE_ERR_USAGE);
    CHECK(lathe_compile("tests/data/missing.onnx", NULL, NULL, &c, err, sizeof err) != LATHE_OK && c == NULL);
    CHECK(lathe_compile(NULL, NULL, NULL, &c, err, sizeof err) == LATHE_ERR_USAGE);
    CHECK(lathe_compile("tests/data/bad_op.onnx", NULL, NULL, &c, err, sizeof err) == LATHE_ERR_UNSUPPORTED);
    CHECK(strstr(err, "NoSuchOp") != NULL);
    /* NULL handles */
    CHECK(lathe_compiled_num_inputs(NULL) == 0 && lathe_compiled_input_name(NULL, 0) == NULL);
    CHECK(lathe_compiled_run(NULL, NULL, 0, NULL, 0) == LATHE_ERR_USAGE);
    CHECK(strcmp(lathe_compiled_error(NULL), "") == 0);
    lathe_compiled_free(NULL);
}

int main(void) {
    test_add();
    test_host_model();
    test_symbolic();
    test_errors();
    if (failures) {
        fprintf(stderr, "test_api_compile: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_api_compile: ok\n");
    return 0;
}
