/* test_api.c — tests of the public C API using nothing but include/lathe.h: loading the tiny models in
 * tests/data (made by tests/data/make_models.py; the test runs from the source root), the input and
 * output getters, tensors, lathe_run, and every error path (bad file, bad bytes, wrong input count,
 * dtype and shape, inconsistent symbolic dims, unsupported ops). Exits non-zero on a failure. */
#include <lathe.h>

#include <stdio.h>
#include <string.h>

#include "test_util.h"

static lathe_tensor *make_f32(int rank, const int64_t *dims, float start) {
    lathe_tensor *t = NULL;
    if (lathe_tensor_create(LATHE_FLOAT, rank, dims, &t) != LATHE_OK) return NULL;
    float *p = lathe_tensor_data(t);
    for (int64_t i = 0; i < lathe_tensor_numel(t); i++) p[i] = start + (float)i;
    return t;
}

static void test_basics(void) {
    CHECK(lathe_version() && strchr(lathe_version(), '.'));
    CHECK(strcmp(lathe_dtype_name(LATHE_FLOAT), "float") == 0);
    CHECK(strcmp(lathe_dtype_name((lathe_dtype)999), "undefined") == 0);
    CHECK(lathe_dtype_size(LATHE_INT64) == 8 && lathe_dtype_size(LATHE_DTYPE_UNDEFINED) == 0);
    CHECK(lathe_status_name(LATHE_ERR_INVALID) != NULL);

    int64_t dims[2] = {2, 3};
    lathe_tensor *t = NULL;
    CHECK(lathe_tensor_create(LATHE_INT32, 2, dims, &t) == LATHE_OK);
    CHECK(lathe_tensor_rank(t) == 2 && lathe_tensor_shape(t)[1] == 3 && lathe_tensor_numel(t) == 6);
    CHECK(lathe_tensor_nbytes(t) == 24 && lathe_tensor_dtype(t) == LATHE_INT32);
    CHECK(((int32_t *)lathe_tensor_data(t))[5] == 0);
    lathe_tensor_free(t);
    int32_t src[6] = {1, 2, 3, 4, 5, 6};
    t = NULL;
    CHECK(lathe_tensor_create_copy(LATHE_INT32, 2, dims, src, &t) == LATHE_OK);
    CHECK(t && ((int32_t *)lathe_tensor_data(t))[5] == 6);
    lathe_tensor_free(t);
    /* scalar, empty, strings */
    t = NULL;
    CHECK(lathe_tensor_create(LATHE_DOUBLE, 0, NULL, &t) == LATHE_OK && lathe_tensor_numel(t) == 1);
    lathe_tensor_free(t);
    int64_t zero[1] = {0};
    t = NULL;
    CHECK(lathe_tensor_create(LATHE_FLOAT, 1, zero, &t) == LATHE_OK && lathe_tensor_data(t) != NULL);
    lathe_tensor_free(t);
    t = NULL;
    CHECK(lathe_tensor_create(LATHE_STRING, 1, dims, &t) == LATHE_OK);
    CHECK(lathe_tensor_set_string(t, 1, "hi", 2) == LATHE_OK);
    CHECK(strcmp(((char **)lathe_tensor_data(t))[1], "hi") == 0 && strcmp(((char **)lathe_tensor_data(t))[0], "") == 0);
    CHECK(lathe_tensor_set_string(t, 2, "x", 1) == LATHE_ERR_USAGE);
    lathe_tensor_free(t);
    /* bad arguments */
    lathe_tensor *u = NULL;
    int64_t neg[1] = {-1}, huge[3] = {1 << 20, 1 << 20, 1 << 20};
    CHECK(lathe_tensor_create(LATHE_FLOAT, 1, neg, &u) == LATHE_ERR_USAGE && !u);
    CHECK(lathe_tensor_create((lathe_dtype)0, 1, dims, &u) == LATHE_ERR_USAGE && !u);
    CHECK(lathe_tensor_create(LATHE_FLOAT, 17, dims, &u) == LATHE_ERR_USAGE && !u);
    CHECK(lathe_tensor_create(LATHE_FLOAT, 3, huge, &u) == LATHE_ERR_NOMEM && !u);
    CHECK(lathe_tensor_create_copy(LATHE_STRING, 1, dims, src, &u) == LATHE_ERR_USAGE && !u);
    lathe_tensor_free(NULL);
    lathe_model_free(NULL);
}

static void test_load_errors(void) {
    char err[512] = "";
    lathe_model *m = NULL;
    CHECK(lathe_model_load("tests/data/no_such_model.onnx", NULL, &m, err, sizeof err) != LATHE_OK);
    CHECK(!m && strstr(err, "no_such_model.onnx"));
    static const unsigned char junk[] = {0x08, 0x07, 0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
    err[0] = 0;
    CHECK(lathe_model_load_memory(junk, sizeof junk, NULL, &m, err, sizeof err) == LATHE_ERR_INVALID);
    CHECK(!m && err[0]);
    /* a tiny errbuf is truncated, never overrun */
    char tiny[4] = "zzz";
    CHECK(lathe_model_load("tests/data/no_such_model.onnx", NULL, &m, tiny, sizeof tiny) != LATHE_OK);
    CHECK(strlen(tiny) <= 3);
    CHECK(lathe_model_load(NULL, NULL, &m, NULL, 0) == LATHE_ERR_USAGE);
}

static void test_add(void) {
    char err[1024] = "";
    lathe_model *m = NULL;
    if (lathe_model_load("tests/data/add.onnx", NULL, &m, err, sizeof err) != LATHE_OK) {
        fprintf(stderr, "load add.onnx: %s\n", err);
        failures++;
        return;
    }
    CHECK(lathe_model_num_inputs(m) == 2 && lathe_model_num_outputs(m) == 1);
    CHECK(strcmp(lathe_model_input_name(m, 0), "X") == 0 && strcmp(lathe_model_input_name(m, 1), "Y") == 0);
    CHECK(strcmp(lathe_model_output_name(m, 0), "Z") == 0);
    CHECK(lathe_model_input_name(m, 2) == NULL && lathe_model_output_name(m, -1) == NULL);
    CHECK(lathe_model_input_dtype(m, 0) == LATHE_FLOAT && lathe_model_output_dtype(m, 0) == LATHE_FLOAT);
    int64_t d[4] = {0};
    CHECK(lathe_model_input_shape(m, 1, d, 4) == 2 && d[0] == 2 && d[1] == 3);
    CHECK(lathe_model_input_shape(m, 5, d, 4) == -1);
    CHECK(lathe_model_input_dim_name(m, 0, 0) == NULL);

    int64_t dims[2] = {2, 3};
    lathe_tensor *x = make_f32(2, dims, 1), *y = make_f32(2, dims, 10), *z = NULL;
    const lathe_tensor *in[2] = {x, y};
    lathe_status s = lathe_run(m, in, 2, &z, 1);
    CHECK(s == LATHE_OK);
    if (s != LATHE_OK) fprintf(stderr, "run: %s\n", lathe_model_error(m));
    if (z) {
        CHECK(lathe_tensor_rank(z) == 2 && lathe_tensor_shape(z)[0] == 2 && lathe_tensor_shape(z)[1] == 3);
        const float *pz = lathe_tensor_data(z);
        for (int i = 0; i < 6; i++) CHECK(pz[i] == 11.0f + 2.0f * (float)i);
        CHECK(lathe_model_error(m)[0] == 0);
    }
    /* wrong count */
    lathe_tensor *z2 = NULL;
    CHECK(lathe_run(m, in, 1, &z2, 1) == LATHE_ERR_USAGE && !z2 && lathe_model_error(m)[0]);
    /* wrong shape */
    int64_t bad[2] = {3, 2};
    lathe_tensor *wrong = make_f32(2, bad, 0);
    const lathe_tensor *in2[2] = {x, wrong};
    CHECK(lathe_run(m, in2, 2, &z2, 1) == LATHE_ERR_INVALID && !z2);
    CHECK(strstr(lathe_model_error(m), "'Y'") != NULL);
    lathe_tensor_free(wrong);
    /* wrong dtype */
    lathe_tensor *ints = NULL;
    CHECK(lathe_tensor_create(LATHE_INT32, 2, dims, &ints) == LATHE_OK);
    const lathe_tensor *in3[2] = {ints, y};
    CHECK(lathe_run(m, in3, 2, &z2, 1) == LATHE_ERR_INVALID && !z2);
    CHECK(strstr(lathe_model_error(m), "'X'") != NULL);
    lathe_tensor_free(ints);
    /* NULL input */
    const lathe_tensor *in4[2] = {x, NULL};
    CHECK(lathe_run(m, in4, 2, &z2, 1) == LATHE_ERR_USAGE && !z2);
    lathe_tensor_free(x);
    lathe_tensor_free(y);
    lathe_model_free(m);
    lathe_tensor_free(z); /* outputs outlive the model */
}

static void test_symbolic(void) {
    char err[1024] = "";
    lathe_model *m = NULL;
    if (lathe_model_load("tests/data/sym_add.onnx", NULL, &m, err, sizeof err) != LATHE_OK) {
        fprintf(stderr, "load sym_add.onnx: %s\n", err);
        failures++;
        return;
    }
    int64_t d[2];
    CHECK(lathe_model_input_shape(m, 0, d, 2) == 2 && d[0] == -1 && d[1] == 3);
    CHECK(lathe_model_input_dim_name(m, 0, 0) && strcmp(lathe_model_input_dim_name(m, 0, 0), "N") == 0);
    CHECK(lathe_model_input_dim_name(m, 0, 1) == NULL && lathe_model_input_dim_name(m, 0, 9) == NULL);
    CHECK(lathe_model_input_dtype(m, 2) == LATHE_INT64);
    int64_t d43[2] = {4, 3}, d53[2] = {5, 3}, d2[1] = {2};
    lathe_tensor *x = make_f32(2, d43, 0), *y = make_f32(2, d43, 1), *y5 = make_f32(2, d53, 1), *i = NULL;
    int64_t iv[2] = {7, -8};
    CHECK(lathe_tensor_create_copy(LATHE_INT64, 1, d2, iv, &i) == LATHE_OK);
    lathe_tensor *out[2] = {NULL, NULL};
    const lathe_tensor *in[3] = {x, y, i};
    lathe_status s = lathe_run(m, in, 3, out, 2);
    CHECK(s == LATHE_OK);
    if (s != LATHE_OK) fprintf(stderr, "run: %s\n", lathe_model_error(m));
    if (s == LATHE_OK) {
        CHECK(lathe_tensor_shape(out[0])[0] == 4 && ((float *)lathe_tensor_data(out[0]))[11] == 23.0f);
        const int64_t *pc = lathe_tensor_data(out[1]);
        CHECK(pc[0] == 7 && pc[1] == -8);
        /* the output is the caller's own copy: writing it leaves the input alone */
        ((int64_t *)lathe_tensor_data(out[1]))[0] = 0;
        CHECK(((int64_t *)lathe_tensor_data(i))[0] == 7);
    }
    lathe_tensor_free(out[0]);
    lathe_tensor_free(out[1]);
    /* N = 4 from X but 5 from Y */
    const lathe_tensor *bad[3] = {x, y5, i};
    out[0] = out[1] = NULL;
    CHECK(lathe_run(m, bad, 3, out, 2) == LATHE_ERR_INVALID && !out[0] && !out[1]);
    CHECK(strstr(lathe_model_error(m), "'N'") != NULL);
    lathe_model_free(m);

    /* binding N at load: then 4 rows are wrong */
    lathe_load_options opts = {0};
    opts.dims = "N=5";
    m = NULL;
    CHECK(lathe_model_load("tests/data/sym_add.onnx", &opts, &m, err, sizeof err) == LATHE_OK);
    if (m) {
        CHECK(lathe_model_input_shape(m, 0, d, 2) == 2 && d[0] == 5);
        CHECK(lathe_run(m, in, 3, out, 2) == LATHE_ERR_INVALID);
        lathe_model_free(m);
    }
    opts.dims = "nosuchdim=5";
    m = NULL;
    CHECK(lathe_model_load("tests/data/sym_add.onnx", &opts, &m, err, sizeof err) != LATHE_OK && !m && err[0]);
    lathe_tensor_free(x);
    lathe_tensor_free(y);
    lathe_tensor_free(y5);
    lathe_tensor_free(i);
}

static void test_unsupported(void) {
    char err[1024] = "";
    lathe_model *m = NULL;
    CHECK(lathe_model_load("tests/data/bad_op.onnx", NULL, &m, err, sizeof err) == LATHE_OK);
    if (!m) return;
    int64_t d[1] = {2};
    lathe_tensor *x = make_f32(1, d, 0), *y = NULL;
    const lathe_tensor *in[1] = {x};
    CHECK(lathe_run(m, in, 1, &y, 1) == LATHE_ERR_UNSUPPORTED && !y);
    CHECK(strstr(lathe_model_error(m), "NoSuchOp") != NULL);
    lathe_tensor_free(x);
    lathe_model_free(m);
}

int main(void) {
    test_basics();
    test_load_errors();
    test_add();
    test_symbolic();
    test_unsupported();
    if (failures) {
        fprintf(stderr, "test_api: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_api: ok\n");
    return 0;
}
