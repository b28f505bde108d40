/* test_run_device.c — runs on the caller's device memory (lathe_compiled_run_device, lt_plan_run_device)
 * and device memory handles (lathe_device_*), with no GPU.
 *
 * 1. A test backend "testdev" wraps the CPU backend (same C kernels) but declares that its memory is
 *    not host memory, as test_plan_device.c does: allocations are mmap'ed PROT_NONE and opened only
 *    inside its copy and launch calls, so any host access of device memory (the caller's included)
 *    crashes the test. It counts copies per direction. Through the public API (lathe_compile with
 *    backend "testdev", lathe_device_open("testdev")): per model (no host step; host steps between
 *    kernels; a Gather whose indices are an input; a pass-through output), lathe_compiled_run_device
 *    on device memory gives the bytes lathe_compiled_run_buffers gives on host memory, over several
 *    runs; a model with no host step and no checked index input makes device-to-device copies only,
 *    one per input and output; lathe_compiled_last_run_copies says what the backend saw; an index out
 *    of range fails the run naming the node before any kernel runs. Two Loops the plan runs with their
 *    bodies compiled for testdev give the CPU's outputs, and the one that never stops early queues its
 *    iterations.
 * 2. The refusals: a NULL handle, wrong counts, NULL inputs and outputs, a model compiled for the CPU,
 *    one compiled for every shape, an output whose shape is known only at run time; lathe_device_open
 *    of "cpu", of an unknown backend, of "cuda" here (the one-line reason, or a device on a GPU
 *    machine), bad arguments to lathe_device_alloc / _copy.
 * 3. A fake CUDA driver (a small C library built here with `cc`; skipped without one): the pointer
 *    checks of lt_cuda_check_ptr (device memory of this device and context, inside its allocation;
 *    host memory, page-locked host memory, another device, another context and a range past the end
 *    refused with the reason) and lt_cuda_wait_stream (NULL: cuCtxSynchronize; a stream: an event
 *    recorded on it and waited for on ours; our own stream: nothing).
 * Runs from the source root (tests/data). Exits non-zero on failure. */
#include "lathe.h"

#include "backend/backend.h"
#include "backend/cuda/cuda.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_util.h"

/* ---- the test backend ---- */

typedef struct counts {
    int64_t bytes[3];
    int n[3];
} counts;
static counts C;


#include "test_devbackend.h"

static lt_status td_copy(lt_backend *b, lt_ctx *ctx, void *dst, const void *src, size_t bytes, lt_copy_dir dir) {
    (void)b;
    (void)ctx;
    open_all(PROT_READ | PROT_WRITE);
    memmove(dst, src, bytes);
    open_all(PROT_NONE);
    C.n[dir]++;
    C.bytes[dir] += (int64_t)bytes;
    return LT_OK;
}
static lt_status td_launch(lt_backend *b, lt_ctx *ctx, const lt_bkernel *k, void *const *args, int n) {
    open_all(PROT_READ | PROT_WRITE);
    lt_status s = lt_backend_cpu.launch(cpu_of(b), ctx, k, args, n);
    open_all(PROT_NONE);
    return s;
}
static int syncs; /* td_sync calls */
static lt_status td_sync(lt_backend *b, lt_ctx *ctx) {
    (void)b;
    (void)ctx;
    syncs++;
    return LT_OK;
}
static lt_status td_ceilings(lt_backend *b, lt_ctx *ctx, lt_backend_ceilings *out) {
    return lt_backend_cpu.ceilings(cpu_of(b), ctx, out);
}

static const lt_backend_vtbl tdev_vt = {
    .name = "testdev", .lang = &lt_lang_c, .host_memory = false,
    .create = td_create, .destroy = td_destroy, .compile = td_compile, .module_free = td_module_free,
    .load = td_load, .alloc = td_alloc, .free = td_free, .copy = td_copy, .launch = td_launch,
    .sync = td_sync, .ceilings = td_ceilings, .copy_async = td_copy,
};

/* ---- models through the public API ---- */

static char cache[512];

static lathe_compiled *compile_on(const char *path, const char *backend, const char *dims) {
    lathe_compile_options co = {0};
    co.backend = backend;
    co.cache_dir = cache;
    co.threads = 1;
    lathe_load_options lo = {0};
    lo.dims = dims;
    char err[1024];
    lathe_compiled *c = NULL;
    if (lathe_compile(path, dims ? &lo : NULL, &co, &c, err, sizeof err) != LATHE_OK) {
        fprintf(stderr, "%s on %s: %s\n", path, backend, err);
        failures++;
        return NULL;
    }
    return c;
}

static size_t input_bytes(const lathe_compiled *c, int i) {
    int64_t dims[LATHE_MAX_RANK];
    int rank = lathe_compiled_input_shape(c, i, dims, LATHE_MAX_RANK);
    size_t n = lathe_dtype_size(lathe_compiled_input_dtype(c, i));
    for (int k = 0; k < rank; k++) n *= (size_t)dims[k];
    return n;
}

/* Deterministic data for input i at run r: small floats, 0/1 booleans, indices 0 or 1. */
static void fill(void *buf, lathe_dtype dt, size_t bytes, int i, int r) {
    size_t es = lathe_dtype_size(dt), n = es ? bytes / es : 0;
    for (size_t j = 0; j < n; j++) {
        double v = sin(0.37 * (double)j + 1.3 * i + 0.71 * r);
        switch (dt) {
        case LATHE_FLOAT: ((float *)buf)[j] = (float)v; break;
        case LATHE_INT64: ((int64_t *)buf)[j] = (int64_t)((j + (size_t)r) % 2); break;
        case LATHE_BOOL: ((uint8_t *)buf)[j] = (uint8_t)(v > 0); break;
        default: memset(buf, 0, bytes); return;
        }
    }
}

typedef struct expect {
    bool device_only; /* no host step, no checked index input: device-to-device copies only */
    int dtod;         /* with device_only: the copies (inputs and outputs); -1: not checked */
    int d2h;          /* -1: not checked */
} expect;

static void check_model(lathe_device *dev, const char *path, const char *dims, expect e) {
    lathe_compiled *c = compile_on(path, "testdev", dims);
    if (!c) return;
    int ni = lathe_compiled_num_inputs(c), no = lathe_compiled_num_outputs(c);
    void **hin = calloc((size_t)ni + 1, sizeof *hin), **din = calloc((size_t)ni + 1, sizeof *din);
    void **hout = calloc((size_t)no + 1, sizeof *hout), **dout = calloc((size_t)no + 1, sizeof *dout);
    void **back = calloc((size_t)no + 1, sizeof *back);
    size_t *ib = calloc((size_t)ni + 1, sizeof *ib), *ob = calloc((size_t)no + 1, sizeof *ob);
    for (int i = 0; i < ni; i++) {
        ib[i] = input_bytes(c, i);
        hin[i] = calloc(1, ib[i] + 1);
        CHECK(lathe_device_alloc(dev, ib[i], &din[i]) == LATHE_OK);
    }
    for (int k = 0; k < no; k++) {
        ob[k] = lathe_compiled_output_bytes(c, k);
        hout[k] = calloc(1, ob[k] + 1);
        back[k] = calloc(1, ob[k] + 1);
        CHECK(lathe_device_alloc(dev, ob[k], &dout[k]) == LATHE_OK);
    }
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < ni; i++) {
            fill(hin[i], lathe_compiled_input_dtype(c, i), ib[i], i, r);
            CHECK(lathe_device_copy(dev, din[i], hin[i], ib[i], LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
        }
        if (lathe_compiled_run_buffers(c, (const void *const *)hin, ni, hout, no) != LATHE_OK) {
            fprintf(stderr, "%s: buffers: %s\n", path, lathe_compiled_error(c));
            failures++;
            break;
        }
        lathe_run_copies hc;
        CHECK(lathe_compiled_last_run_copies(c, &hc) == LATHE_OK && hc.host_to_device + hc.device_to_host > 0);
        memset(&C, 0, sizeof C);
        if (lathe_compiled_run_device(c, (const void *const *)din, ni, dout, no, NULL) != LATHE_OK) {
            fprintf(stderr, "%s: device run: %s\n", path, lathe_compiled_error(c));
            failures++;
            break;
        }
        counts seen = C;
        lathe_run_copies dc;
        CHECK(lathe_compiled_last_run_copies(c, &dc) == LATHE_OK);
        CHECK(dc.host_to_device == seen.n[0] && dc.device_to_host == seen.n[1] && dc.device_to_device == seen.n[2]);
        CHECK(dc.host_to_device_bytes == seen.bytes[0] && dc.device_to_host_bytes == seen.bytes[1] &&
              dc.device_to_device_bytes == seen.bytes[2]);
        /* fewer bytes through the host than the host-memory run: the inputs and outputs stay on the device */
        CHECK(dc.host_to_device_bytes + dc.device_to_host_bytes < hc.host_to_device_bytes + hc.device_to_host_bytes);
        if (e.device_only) CHECK(dc.host_to_device == 0 && dc.device_to_host == 0);
        if (e.dtod >= 0) CHECK(dc.device_to_device == e.dtod);
        if (e.d2h >= 0) CHECK(dc.device_to_host == e.d2h);
        if (r == 0)
            printf("%s: device run: %d+%d host copies (%lld+%lld bytes), %d device copies (%lld bytes); host-memory "
                   "run: %d+%d (%lld+%lld bytes)\n", path, dc.host_to_device, dc.device_to_host,
                   (long long)dc.host_to_device_bytes, (long long)dc.device_to_host_bytes, dc.device_to_device,
                   (long long)dc.device_to_device_bytes, hc.host_to_device, hc.device_to_host,
                   (long long)hc.host_to_device_bytes, (long long)hc.device_to_host_bytes);
        for (int k = 0; k < no; k++) {
            memset(back[k], 0xAB, ob[k]);
            CHECK(lathe_device_copy(dev, back[k], dout[k], ob[k], LATHE_COPY_DEVICE_TO_HOST) == LATHE_OK);
            if (memcmp(back[k], hout[k], ob[k]) != 0) {
                fprintf(stderr, "%s: run %d: output %d '%s' differs between the device run and the host-memory run\n",
                        path, r, k, lathe_compiled_output_name(c, k));
                failures++;
            }
        }
    }
    for (int i = 0; i < ni; i++) {
        lathe_device_free(dev, din[i]);
        free(hin[i]);
    }
    for (int k = 0; k < no; k++) {
        lathe_device_free(dev, dout[k]);
        free(hout[k]);
        free(back[k]);
    }
    free(hin), free(din), free(hout), free(dout), free(back), free(ib), free(ob);
    lathe_compiled_free(c);
}

/* Two Loops the plan runs with bodies compiled for the device (src/compile/loop_run.c): the same
 * outputs as the CPU's, on host and device memory, over trip counts and stopping points; the Loop that
 * hands its condition on queues its iterations (fewer syncs than iterations); the report says the
 * plan ran both. */
static void check_device_loops(lathe_device *dev) {
    const char *path = "tests/data/dev_while.onnx";
    lathe_compiled *d = compile_on(path, "testdev", NULL), *c = compile_on(path, "cpu", NULL);
    if (!d || !c) goto done;
    float x[12], want[3][12], got[3][12], back[3][12];
    void *dx = NULL, *dn = NULL, *dk = NULL, *dy[3] = {0};
    CHECK(lathe_device_alloc(dev, sizeof x, &dx) == LATHE_OK && lathe_device_alloc(dev, 8, &dn) == LATHE_OK &&
          lathe_device_alloc(dev, 8, &dk) == LATHE_OK);
    for (int k = 0; k < 3; k++) CHECK(lathe_device_alloc(dev, sizeof got[k], &dy[k]) == LATHE_OK);
    const int64_t trips[][2] = {{40, 17}, {3, 999}, {200, 0}, {1, 2000}};
    for (int r = 0; r < 4 && failures == 0; r++) {
        fill(x, LATHE_FLOAT, sizeof x, 0, r);
        const void *in[3] = {x, &trips[r][0], &trips[r][1]};
        void *wo[3] = {want[0], want[1], want[2]}, *go[3] = {got[0], got[1], got[2]};
        CHECK(lathe_compiled_run_buffers(c, in, 3, wo, 3) == LATHE_OK);
        syncs = 0;
        if (lathe_compiled_run_buffers(d, in, 3, go, 3) != LATHE_OK) {
            fprintf(stderr, "%s: %s\n", path, lathe_compiled_error(d));
            failures++;
            break;
        }
        /* the first Loop's iterations queue: a few syncs per run, not one per iteration */
        if (trips[r][0] >= 40) CHECK(syncs < trips[r][0] / 2);
        CHECK(lathe_device_copy(dev, dx, x, sizeof x, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
        CHECK(lathe_device_copy(dev, dn, &trips[r][0], 8, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
        CHECK(lathe_device_copy(dev, dk, &trips[r][1], 8, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
        const void *din[3] = {dx, dn, dk};
        CHECK(lathe_compiled_run_device(d, din, 3, dy, 3, NULL) == LATHE_OK);
        for (int k = 0; k < 3; k++) {
            CHECK(lathe_device_copy(dev, back[k], dy[k], sizeof back[k], LATHE_COPY_DEVICE_TO_HOST) == LATHE_OK);
            for (int j = 0; j < 12; j++)
                if (fabsf(got[k][j] - want[k][j]) > 1e-5f * (1 + fabsf(want[k][j])) || back[k][j] != got[k][j]) {
                    fprintf(stderr, "%s: n=%lld k=%lld: output %d [%d] %g (device memory %g), the CPU's %g\n", path,
                            (long long)trips[r][0], (long long)trips[r][1], k, j, got[k][j], back[k][j], want[k][j]);
                    failures++;
                    break;
                }
        }
    }
    const char *rep = lathe_compiled_report(d);
    /* iterations: 40 + 3 + 200 + 1, and min(1000, k + 1), twice (host and device memory) */
    bool said = rep && strstr(rep, "'loop_n' (Loop): compiled at run time, 488 calls, the Loop run by the plan 8 times") &&
                strstr(rep, "'loop_k' (Loop): compiled at run time, 4038 calls, the Loop run by the plan 8 times");
    CHECK(said);
    if (!said && rep) fprintf(stderr, "%s", rep);
    lathe_device_free(dev, dx), lathe_device_free(dev, dn), lathe_device_free(dev, dk);
    for (int k = 0; k < 3; k++) lathe_device_free(dev, dy[k]);
done:
    lathe_compiled_free(d);
    lathe_compiled_free(c);
}

/* An index out of range in an input a compiled Gather reads: the run fails naming the node and the
 * element, before any kernel reads it. */
static void check_bad_index(lathe_device *dev) {
    lathe_compiled *c = compile_on("tests/data/lower_inj.onnx", "testdev", NULL);
    if (!c) return;
    int ni = lathe_compiled_num_inputs(c), no = lathe_compiled_num_outputs(c);
    void *din[8] = {0}, *dout[8] = {0};
    CHECK(ni <= 8 && no <= 8);
    for (int i = 0; i < ni && i < 8; i++) {
        size_t b = input_bytes(c, i);
        void *h = calloc(1, b + 1);
        fill(h, lathe_compiled_input_dtype(c, i), b, i, 0);
        if (strcmp(lathe_compiled_input_name(c, i), "ids") == 0) ((int64_t *)h)[3] = 1000;
        CHECK(lathe_device_alloc(dev, b, &din[i]) == LATHE_OK);
        CHECK(lathe_device_copy(dev, din[i], h, b, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
        free(h);
    }
    for (int k = 0; k < no && k < 8; k++) CHECK(lathe_device_alloc(dev, lathe_compiled_output_bytes(c, k), &dout[k]) == LATHE_OK);
    memset(&C, 0, sizeof C);
    CHECK(lathe_compiled_run_device(c, (const void *const *)din, ni, dout, no, NULL) == LATHE_ERR_INVALID);
    CHECK(strstr(lathe_compiled_error(c), "Gather") && strstr(lathe_compiled_error(c), "index 1000") &&
          strstr(lathe_compiled_error(c), "'ids'"));
    CHECK(C.n[LT_COPY_DEVICE_TO_DEVICE] == 0); /* refused before the inputs went to the kernels */
    for (int i = 0; i < 8; i++) lathe_device_free(dev, din[i]);
    for (int k = 0; k < 8; k++) lathe_device_free(dev, dout[k]);
    lathe_compiled_free(c);
}

static void check_refusals(lathe_device *dev) {
    float host[6] = {1, 2, 3, 4, 5, 6};
    void *x = NULL, *y = NULL, *z = NULL;
    CHECK(lathe_device_alloc(dev, sizeof host, &x) == LATHE_OK && lathe_device_alloc(dev, sizeof host, &y) == LATHE_OK &&
          lathe_device_alloc(dev, sizeof host, &z) == LATHE_OK);
    CHECK(lathe_device_copy(dev, x, host, sizeof host, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
    CHECK(lathe_device_copy(dev, y, x, sizeof host, LATHE_COPY_DEVICE_TO_DEVICE) == LATHE_OK);
    const void *in[2] = {x, y};
    void *out[1] = {z};
    CHECK(lathe_compiled_run_device(NULL, in, 2, out, 1, NULL) == LATHE_ERR_USAGE);
    lathe_compiled *c = compile_on("tests/data/add.onnx", "testdev", NULL);
    if (c) {
        CHECK(lathe_compiled_run_device(c, in, 1, out, 1, NULL) == LATHE_ERR_USAGE);
        CHECK(strstr(lathe_compiled_error(c), "takes 2 inputs and gives 1 outputs (called with 1 and 1)"));
        CHECK(lathe_compiled_run_device(c, NULL, 2, out, 1, NULL) == LATHE_ERR_USAGE);
        CHECK(lathe_compiled_run_device(c, in, 2, NULL, 1, NULL) == LATHE_ERR_USAGE);
        const void *in_null[2] = {x, NULL};
        CHECK(lathe_compiled_run_device(c, in_null, 2, out, 1, NULL) == LATHE_ERR_USAGE);
        CHECK(strstr(lathe_compiled_error(c), "input 1 'Y' is NULL"));
        void *out_null[1] = {NULL};
        CHECK(lathe_compiled_run_device(c, in, 2, out_null, 1, NULL) == LATHE_ERR_USAGE);
        CHECK(strstr(lathe_compiled_error(c), "output 0 'Z' is NULL"));
        CHECK(lathe_compiled_run_device(c, in, 2, out, 1, NULL) == LATHE_OK);
        CHECK(lathe_compiled_error(c)[0] == 0);
        float back[6];
        CHECK(lathe_device_copy(dev, back, z, sizeof back, LATHE_COPY_DEVICE_TO_HOST) == LATHE_OK);
        for (int i = 0; i < 6; i++) CHECK(back[i] == 2 * host[i]);
        lathe_run_copies rc;
        CHECK(lathe_compiled_last_run_copies(c, &rc) == LATHE_OK && rc.device_to_device == 3 && rc.host_to_device == 0 &&
              rc.device_to_host == 0 && rc.device_to_device_bytes == 3 * (int64_t)sizeof host);
        CHECK(lathe_compiled_last_run_copies(c, NULL) == LATHE_ERR_USAGE);
        CHECK(lathe_compiled_last_run_copies(NULL, &rc) == LATHE_ERR_USAGE);
        /* the same buffers as input and output: inputs are read before outputs are written */
        void *same[1] = {x};
        CHECK(lathe_compiled_run_device(c, in, 2, same, 1, NULL) == LATHE_OK);
        CHECK(lathe_device_copy(dev, back, x, sizeof back, LATHE_COPY_DEVICE_TO_HOST) == LATHE_OK);
        for (int i = 0; i < 6; i++) CHECK(back[i] == 2 * host[i]);
        lathe_compiled_free(c);
    }
    /* a model compiled for the CPU: its memory is host memory */
    lathe_compiled *cpu = compile_on("tests/data/add.onnx", "cpu", NULL);
    if (cpu) {
        CHECK(lathe_compiled_run_device(cpu, in, 2, out, 1, NULL) == LATHE_ERR_UNSUPPORTED);
        CHECK(strstr(lathe_compiled_error(cpu), "compiled for the cpu backend, which runs on host memory"));
        lathe_run_copies rc;
        float a[6] = {0}, b[6] = {0}, s[6];
        const void *hin[2] = {a, b};
        void *hout[1] = {s};
        CHECK(lathe_compiled_run_buffers(cpu, hin, 2, hout, 1) == LATHE_OK);
        CHECK(lathe_compiled_last_run_copies(cpu, &rc) == LATHE_OK && rc.host_to_device == 0 && rc.device_to_host == 0 &&
              rc.device_to_device == 0);
        lathe_compiled_free(cpu);
    }
    /* compiled for every shape: pointers do not say the shapes */
    lathe_compiled *fam = compile_on("tests/data/sym_add.onnx", "testdev", NULL);
    if (fam) {
        const void *in3[3] = {x, y, x};
        void *out2[2] = {z, z};
        CHECK(lathe_compiled_run_device(fam, in3, 3, out2, 2, NULL) == LATHE_ERR_UNSUPPORTED);
        CHECK(strstr(lathe_compiled_error(fam), "compiled for every shape"));
        lathe_compiled_free(fam);
    }
    /* an output whose shape is known only at run time */
    lathe_compiled *dyn = compile_on("tests/data/lower_host.onnx", "testdev", NULL);
    if (dyn) {
        void *out2[2] = {z, y};
        CHECK(lathe_compiled_run_device(dyn, in, 1, out2, 2, NULL) == LATHE_ERR_UNSUPPORTED);
        CHECK(strstr(lathe_compiled_error(dyn), "output 0 'nzf' has no static shape"));
        lathe_compiled_free(dyn);
    }
    lathe_device_free(dev, x);
    lathe_device_free(dev, y);
    lathe_device_free(dev, z);
}

static void check_device_api(lathe_device *dev) {
    char err[512];
    lathe_device *d = (lathe_device *)0x1;
    CHECK(lathe_device_open("cpu", 0, &d, err, sizeof err) == LATHE_ERR_UNSUPPORTED && d == (lathe_device *)0x1);
    CHECK(strstr(err, "the cpu backend runs on host memory"));
    CHECK(lathe_device_open("nope", 0, &d, err, sizeof err) == LATHE_ERR_UNSUPPORTED && strstr(err, "nope"));
    CHECK(lathe_device_open(NULL, 0, &d, err, sizeof err) == LATHE_ERR_USAGE);
    CHECK(lathe_device_open("testdev", -1, &d, err, sizeof err) == LATHE_ERR_USAGE && strstr(err, "device -1"));
    CHECK(lathe_device_open("testdev", 0, NULL, NULL, 0) == LATHE_ERR_USAGE);
    lathe_status s = lathe_device_open("cuda", 0, &d, err, sizeof err);
    if (s == LATHE_OK) {
        printf("test_run_device: a CUDA device is present\n");
        lathe_device_close(d);
    } else {
        CHECK(s == LATHE_ERR_UNSUPPORTED && strncmp(err, "CUDA backend unavailable: ", 26) == 0 && !strchr(err, '\n'));
        printf("test_run_device: cuda: %s\n", err);
    }
    lathe_device_close(NULL);
    CHECK(lathe_device_error(NULL)[0] == 0);
    void *p = NULL, *q = NULL;
    CHECK(lathe_device_alloc(NULL, 4, &p) == LATHE_ERR_USAGE);
    CHECK(lathe_device_alloc(dev, 4, NULL) == LATHE_ERR_USAGE && strstr(lathe_device_error(dev), "out"));
    CHECK(lathe_device_alloc(dev, 0, &p) == LATHE_OK && p != NULL); /* a valid address for 0 bytes */
    CHECK(lathe_device_alloc(dev, 100, &q) == LATHE_OK && q != NULL && lathe_device_error(dev)[0] == 0);
    char h[100] = "abc";
    CHECK(lathe_device_copy(dev, q, h, 0, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
    CHECK(lathe_device_copy(dev, q, NULL, 4, LATHE_COPY_HOST_TO_DEVICE) == LATHE_ERR_USAGE &&
          strstr(lathe_device_error(dev), "source is NULL"));
    CHECK(lathe_device_copy(dev, NULL, h, 4, LATHE_COPY_HOST_TO_DEVICE) == LATHE_ERR_USAGE &&
          strstr(lathe_device_error(dev), "destination is NULL"));
    CHECK(lathe_device_copy(dev, q, h, 4, (lathe_copy_kind)7) == LATHE_ERR_USAGE && strstr(lathe_device_error(dev), "kind 7"));
    CHECK(lathe_device_copy(NULL, q, h, 4, LATHE_COPY_HOST_TO_DEVICE) == LATHE_ERR_USAGE);
    CHECK(lathe_device_copy(dev, q, h, 4, LATHE_COPY_HOST_TO_DEVICE) == LATHE_OK);
    char g[4] = {0};
    CHECK(lathe_device_copy(dev, g, q, 4, LATHE_COPY_DEVICE_TO_HOST) == LATHE_OK && memcmp(g, "abc", 4) == 0);
    lathe_device_free(dev, p);
    lathe_device_free(dev, q);
    lathe_device_free(dev, NULL);
    lathe_device_free(NULL, NULL);
}

/* ---- 3. a fake CUDA driver: pointer checks and stream ordering ---- */

static const char fake_src[] =
    "#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n"
    "typedef unsigned long long P;\n"
    "#define CTX ((void *)0x1234)\n#define STREAM ((void *)0x5)\n"
    "int fake_ctx_syncs, fake_waits; void *fake_recorded_on, *fake_waited_on;\n"
    "static struct { P p; size_t n; } al[64];\n"
    "int cuInit(unsigned f) { return 0; }\n"
    "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n"
    "int cuGetErrorName(int r, const char **s) { *s = \"CUDA_ERROR_FAKE\"; return 0; }\n"
    "int cuGetErrorString(int r, const char **s) { *s = \"fake error\"; return 0; }\n"
    "int cuDeviceGetCount(int *n) { *n = 2; return 0; }\n"
    "int cuDeviceGet(int *d, int o) { *d = o; return 0; }\n"
    "int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : a == 76 ? 0 : 128; return 0; }\n"
    "int cuDeviceGetName(char *n, int len, int d) { snprintf(n, (size_t)len, \"Fake\"); return 0; }\n"
    "int cuDeviceTotalMem_v2(size_t *b, int d) { *b = (size_t)1 << 30; return 0; }\n"
    "int cuDevicePrimaryCtxRetain(void **c, int d) { *c = CTX; return 0; }\n"
    "int cuDevicePrimaryCtxRelease_v2(int d) { return 0; }\n"
    "int cuCtxSetCurrent(void *c) { return c == CTX ? 0 : 201; }\n"
    "int cuCtxSynchronize(void) { fake_ctx_syncs++; return 0; }\n"
    "int cuMemAlloc_v2(P *p, size_t n) { *p = (P)malloc(n); for (int i = 0; i < 64; i++) if (!al[i].p) {\n"
    "  al[i].p = *p; al[i].n = n; break; } return 0; }\n"
    "int cuMemFree_v2(P p) { for (int i = 0; i < 64; i++) if (al[i].p == p) al[i].p = 0; free((void *)p); return 0; }\n"
    "int cuMemGetInfo_v2(size_t *f, size_t *t) { *f = *t = (size_t)1 << 30; return 0; }\n"
    "int cuMemcpyHtoDAsync_v2(P d, const void *s, size_t n, void *st) { memcpy((void *)d, s, n); return 0; }\n"
    "int cuMemcpyDtoHAsync_v2(void *d, P s, size_t n, void *st) { memcpy(d, (void *)s, n); return 0; }\n"
    "int cuMemcpyDtoDAsync_v2(P d, P s, size_t n, void *st) { memmove((void *)d, (void *)s, n); return 0; }\n"
    "int cuMemsetD8Async(P d, unsigned char v, size_t n, void *st) { memset((void *)d, v, n); return 0; }\n"
    "int cuModuleLoadData(void **m, const void *img) { return 1; }\n"
    "int cuModuleUnload(void *m) { return 0; }\n"
    "int cuModuleGetFunction(void **f, void *m, const char *name) { return 500; }\n"
    "int cuFuncGetAttribute(int *v, int a, void *f) { *v = 0; return 0; }\n"
    "int cuFuncSetAttribute(void *f, int a, int v) { return 0; }\n"
    "int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,\n"
    "  unsigned sh, void *st, void **params, void **extra) { return 0; }\n"
    "int cuStreamCreate(void **s, unsigned f) { *s = STREAM; return 0; }\n"
    "int cuStreamDestroy_v2(void *s) { return 0; }\n"
    "int cuStreamSynchronize(void *s) { return 0; }\n"
    "int cuStreamWaitEvent(void *s, void *e, unsigned f) { fake_waits++; fake_waited_on = s; return 0; }\n"
    "int cuEventCreate(void **e, unsigned f) { *e = malloc(8); return 0; }\n"
    "int cuEventDestroy_v2(void *e) { free(e); return 0; }\n"
    "int cuEventRecord(void *e, void *s) { fake_recorded_on = s; return 0; }\n"
    "int cuEventSynchronize(void *e) { return 0; }\n"
    "int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0; return 0; }\n"
    "int cuStreamBeginCapture_v2(void *s, int mode) { return 0; }\n"
    "int cuStreamEndCapture(void *s, void **g) { *g = 0; return 0; }\n"
    "int cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { return 0; }\n"
    "int cuGraphLaunch(void *e, void *s) { return 0; }\n"
    "int cuGraphExecDestroy(void *e) { return 0; }\n"
    "int cuGraphDestroy(void *g) { return 0; }\n"
    /* attributes: our allocations are device memory of device 0 in CTX; 0x1000 page-locked host memory;
     * [0x2000, 0x3000) memory of device 1; [0x4000, 0x5000) memory of another context; else unknown */
    "int cuPointerGetAttributes(unsigned n, int *attrs, void **data, P p) {\n"
    "  unsigned type = 0; int ord = -2; void *ctx = 0; P start = 0; size_t size = 0;\n"
    "  for (int i = 0; i < 64; i++) if (al[i].p && p >= al[i].p && p < al[i].p + al[i].n) {\n"
    "    type = 2; ord = 0; ctx = CTX; start = al[i].p; size = al[i].n; }\n"
    "  if (p == 0x1000) { type = 1; ord = 0; ctx = CTX; start = p; size = 4096; }\n"
    "  if (p >= 0x2000 && p < 0x3000) { type = 2; ord = 1; ctx = (void *)0x777; start = 0x2000; size = 4096; }\n"
    "  if (p >= 0x4000 && p < 0x5000) { type = 2; ord = 0; ctx = (void *)0x999; start = 0x4000; size = 4096; }\n"
    "  for (unsigned i = 0; i < n; i++) switch (attrs[i]) {\n"
    "    case 2: *(unsigned *)data[i] = type; break;\n"
    "    case 9: *(int *)data[i] = ord; break;\n"
    "    case 1: *(void **)data[i] = ctx; break;\n"
    "    case 11: *(P *)data[i] = start; break;\n"
    "    case 12: *(size_t *)data[i] = size; break;\n"
    "    default: return 1; }\n"
    "  return 0; }\n";

static void check_fake_cuda(void) {
    char dir[256], src[512], lib[512], cmd[2048];
    snprintf(dir, sizeof dir, "%s/lathe-test-run-device-%d", P_tmpdir, (int)getpid());
    snprintf(src, sizeof src, "%s/fake_cuda.c", dir);
    snprintf(lib, sizeof lib, "%s/libcuda_fake.so", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) {
        printf("test_run_device: SKIP the fake driver (no folder)\n");
        return;
    }
    FILE *f = fopen(src, "w");
    if (!f) return;
    fputs(fake_src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O0 -o '%s' '%s' 2>&1", lib, src);
    if (system(cmd) != 0) {
        printf("test_run_device: SKIP the fake driver (it does not build)\n");
        return;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    int *ctx_syncs = h ? dlsym(h, "fake_ctx_syncs") : NULL, *waits = h ? dlsym(h, "fake_waits") : NULL;
    void **recorded_on = h ? dlsym(h, "fake_recorded_on") : NULL, **waited_on = h ? dlsym(h, "fake_waited_on") : NULL;
    CHECK(ctx_syncs && waits && recorded_on && waited_on);
    lt_ctx ctx = {0};
    lt_cuda *cu = NULL;
    CHECK(lt_cuda_open(&ctx, &(lt_cuda_options){.libcuda = lib}, &cu) == LT_OK);
    if (!cu || !ctx_syncs || !waits || !recorded_on || !waited_on) {
        fprintf(stderr, "fake driver: %s\n", ctx.msg);
        lt_cuda_close(cu);
        return;
    }
    void *p = NULL;
    CHECK(lt_cuda_alloc(cu, &ctx, 1000, &p) == LT_OK && p);
    CHECK(lt_cuda_check_ptr(cu, &ctx, p, 1000, "input 0 'x'") == LT_OK);
    CHECK(lt_cuda_check_ptr(cu, &ctx, (char *)p + 500, 500, "input 0 'x'") == LT_OK);
    CHECK(lt_cuda_check_ptr(cu, &ctx, NULL, 0, "input 0 'x'") == LT_OK); /* nothing to read */
    struct { lt_status want; const void *ptr; size_t bytes; const char *msg; } bad[] = {
        {LT_ERR_USAGE, NULL, 4, "input 0 'x' is NULL"},
        {LT_ERR_USAGE, p, 1001, "input 0 'x': 1001 bytes at"},
        {LT_ERR_USAGE, (char *)p + 500, 501, "run past the end of its allocation (1000 bytes"},
        {LT_ERR_USAGE, &ctx, 4, "is not CUDA device memory (host memory?"},
        {LT_ERR_USAGE, (void *)0x1000, 4, "is page-locked host memory"},
        {LT_ERR_USAGE, (void *)0x2000, 4, "is memory of CUDA device 1; the model runs on device 0"},
        {LT_ERR_USAGE, (void *)0x4000, 4, "belongs to another CUDA context"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lt_ctx bc = {0};
        CHECK(lt_cuda_check_ptr(cu, &bc, bad[i].ptr, bad[i].bytes, "input 0 'x'") == bad[i].want);
        CHECK_MSG(bc, bad[i].msg);
        CHECK(!strchr(bc.msg, '\n'));
    }
    /* ordering: NULL waits for the whole device; a stream through an event; our own: nothing */
    CHECK(lt_cuda_wait_stream(cu, &ctx, NULL) == LT_OK && *ctx_syncs == 1 && *waits == 0);
    CHECK(lt_cuda_wait_stream(cu, &ctx, (void *)0x77) == LT_OK && *ctx_syncs == 1 && *waits == 1);
    CHECK(*recorded_on == (void *)0x77 && *waited_on == lt_cuda_native_stream(cu));
    CHECK(lt_cuda_wait_stream(cu, &ctx, (void *)0x78) == LT_OK && *waits == 2 && *recorded_on == (void *)0x78);
    CHECK(lt_cuda_wait_stream(cu, &ctx, lt_cuda_native_stream(cu)) == LT_OK && *waits == 2 && *ctx_syncs == 1);
    lt_cuda_free(cu, p);
    lt_cuda_close(cu);
    dlclose(h);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_run_device: could not remove %s\n", dir);
}

int main(void) {
    if (system("cc --version >/dev/null 2>&1") != 0) {
        printf("test_run_device: SKIP (no C compiler for the CPU kernels)\n");
        return 0;
    }
    page = (size_t)sysconf(_SC_PAGESIZE);
    lt_ctx ctx = {0};
    CHECK(lt_backend_register(&ctx, &tdev_vt) == LT_OK);
    snprintf(cache, sizeof cache, "%s/lathe-test-run-device-cache-%d", P_tmpdir, (int)getuid());
    char err[512];
    lathe_device *dev = NULL;
    CHECK(lathe_device_open("testdev", 0, &dev, err, sizeof err) == LATHE_OK);
    if (!dev) {
        fprintf(stderr, "testdev: %s\n", err);
        return test_report("test_run_device");
    }
    check_device_api(dev);
    check_refusals(dev);
    /* no host step, no checked index input: one device copy per input and output */
    check_model(dev, "tests/data/add.onnx", NULL, (expect){true, 3, 0});
    check_model(dev, "tests/data/lower_mlp.onnx", NULL, (expect){true, 4, 0});
    check_model(dev, "tests/data/lower_conv.onnx", NULL, (expect){true, 4, 0});
    check_model(dev, "tests/data/lower_attn.onnx", NULL, (expect){true, 5, 0});
    /* the token ids go to the host too, to be checked */
    check_model(dev, "tests/data/lower_inj.onnx", NULL, (expect){false, -1, 1});
    /* host steps in the middle; a Loop reading a kernel output */
    check_model(dev, "tests/data/dev_mix.onnx", NULL, (expect){false, -1, -1});
    check_model(dev, "tests/data/dev_loop.onnx", NULL, (expect){false, -1, -1});
    /* dims bound: static; an output passed through from an input */
    check_model(dev, "tests/data/sym_add.onnx", "N=2", (expect){false, -1, -1});
    check_bad_index(dev);
    check_device_loops(dev);
    lathe_device_close(dev);
    check_fake_cuda();
    return test_report("test_run_device");
}
