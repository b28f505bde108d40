/* test_io_limits.c — bounded memory and arithmetic on hostile inputs, at the library level:
 * - .npy: a string dtype whose item size is absurd (<U4000000000, shape (0,)) is refused before any
 *   allocation; a Fortran-order header of shape (0, 2^62, 4, 2) decodes (empty) with no overflow
 *   (UBSan checks that in a -DLATHE_SANITIZE=ON build); lt_io_limits.max_bytes bounds the decoded
 *   size, strings counted with their pointers;
 * - .npz: members whose bytes overlap (many directory entries at one member: the zip bomb) are
 *   refused; the sizes members claim are bounded by max_bytes, which a caller can raise;
 * - schedule steps: an integer that does not fit int64 is not parsed (never clamped to INT64_MAX); a
 *   split factor past both the loop's extent and LT_SCHED_MAX_FACTOR is refused, naming the step;
 * - the interpreter: a Loop whose trip count is INT64_MAX fails at lt_interp_options.max_loop_bytes
 *   with an error naming the node, and a raised limit lets a bounded loop through.
 * Exits non-zero if a check fails. */
#include "ops/infer.h"
#include "interp/interp.h"
#include "io/io.h"
#include "loop/schedule.h"
#include "onnx/onnx.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A .npy v1.0 image: header dict (padded) and data. */
static uint8_t *make_npy(const char *dict, const void *data, size_t dlen, size_t *size) {
    size_t dl = strlen(dict), hl = (10 + dl + 1 + 15) / 16 * 16 - 10;
    uint8_t *b = calloc(1, 10 + hl + dlen + 1);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(hl & 0xFF);
    b[9] = (uint8_t)(hl >> 8);
    memset(b + 10, ' ', hl);
    memcpy(b + 10, dict, dl);
    b[10 + hl - 1] = '\n';
    if (dlen) memcpy(b + 10 + hl, data, dlen);
    *size = 10 + hl + dlen;
    return b;
}

static void test_npy(void) {
    size_t n;
    lt_tensor *t = NULL;
    /* 16 GB item size, no elements: refused by the item size, nothing allocated */
    uint8_t *b = make_npy("{'descr': '<U4000000000', 'fortran_order': False, 'shape': (0,), }", NULL, 0, &n);
    lt_ctx c = {0};
    CHECK(n < 100);
    CHECK(lt_npy_decode(&c, b, n, "u.npy", &t) == LT_ERR_INVALID && !t);
    CHECK_MSG(c, "item size 16000000000 bytes exceeds");
    free(b);
    /* a sane string dtype with no elements is fine */
    b = make_npy("{'descr': '<U10', 'fortran_order': False, 'shape': (0, 3), }", NULL, 0, &n);
    c = (lt_ctx){0};
    CHECK(lt_npy_decode(&c, b, n, "u0.npy", &t) == LT_OK && t && t->numel == 0 && t->dtype == LT_STRING);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    /* Fortran order, an empty array with huge dims: no stride overflow */
    b = make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (0, 4611686018427387904, 4, 2), }", NULL, 0, &n);
    c = (lt_ctx){0};
    CHECK(lt_npy_decode(&c, b, n, "f.npy", &t) == LT_OK && t && t->numel == 0 && t->rank == 4);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    /* Fortran order still transposes a real array */
    float fd[6] = {0, 3, 1, 4, 2, 5};
    b = make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", fd, sizeof fd, &n);
    c = (lt_ctx){0};
    CHECK(lt_npy_decode(&c, b, n, "f23.npy", &t) == LT_OK && t && ((float *)t->data)[1] == 1 && ((float *)t->data)[3] == 3);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    /* max_bytes: numbers by their data, strings with their pointers */
    float d[256] = {0};
    b = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (256,), }", d, sizeof d, &n);
    lt_io_limits lim = {1000};
    c = (lt_ctx){0};
    CHECK(lt_npy_decode_limited(&c, b, n, "lim.npy", &lim, &t) == LT_ERR_INVALID && !t);
    CHECK_MSG(c, "limit of 1000 bytes");
    lim.max_bytes = 1024;
    c = (lt_ctx){0};
    CHECK(lt_npy_decode_limited(&c, b, n, "lim.npy", &lim, &t) == LT_OK && t);
    lt_tensor_release(t);
    t = NULL;
    free(b);
    uint8_t s1[1000] = {0};
    b = make_npy("{'descr': '|S1', 'fortran_order': False, 'shape': (1000,), }", s1, sizeof s1, &n);
    lim.max_bytes = 20000; /* 1000 bytes of file, but 1000 pointers and allocations */
    c = (lt_ctx){0};
    CHECK(lt_npy_decode_limited(&c, b, n, "s.npy", &lim, &t) == LT_ERR_INVALID && !t);
    lim.max_bytes = 100000;
    c = (lt_ctx){0};
    CHECK(lt_npy_decode_limited(&c, b, n, "s.npy", &lim, &t) == LT_OK && t && t->numel == 1000);
    lt_tensor_release(t);
    free(b);
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void wr16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

/* An archive of one stored member "x.npy" whose central directory entry is repeated `copies` times
 * (renamed x.npy, a1.npy, a2.npy, ...), every copy at the member's offset. */
static uint8_t *bomb(const uint8_t *zip, size_t zn, int copies, size_t *size) {
    size_t eocd = zn - 22, cd_off = rd32(zip + eocd + 16), cd_size = rd32(zip + eocd + 12);
    const uint8_t *e = zip + cd_off;
    size_t nlen = rd16(e + 28), rest = cd_size - 46 - nlen;
    uint8_t *b = malloc(cd_off + (size_t)copies * (cd_size + 8) + 22), *p = b + cd_off;
    memcpy(b, zip, cd_off);
    for (int i = 0; i < copies; i++) {
        char name[16];
        int l = i ? snprintf(name, sizeof name, "a%d.npy", i) : snprintf(name, sizeof name, "x.npy");
        memcpy(p, e, 46);
        wr16(p + 28, (unsigned)l);
        memcpy(p + 46, name, (size_t)l);
        memcpy(p + 46 + l, e + 46 + nlen, rest);
        p += 46 + (size_t)l + rest;
    }
    memcpy(p, zip + eocd, 22);
    wr16(p + 8, (unsigned)copies);
    wr16(p + 10, (unsigned)copies);
    wr32(p + 12, (uint32_t)(p - b - cd_off));
    *size = (size_t)(p - b) + 22;
    return b;
}

static void test_npz(void) {
    lt_ctx c = {0};
    int64_t dims[1] = {1024};
    lt_tensor *x = NULL;
    CHECK(lt_tensor_new(&c, LT_FLOAT, 1, dims, &x) == LT_OK);
    const char *names[1] = {"x"};
    const lt_tensor *ts[1] = {x};
    uint8_t *zip = NULL;
    size_t zn = 0;
    CHECK(lt_npz_encode(&c, 1, names, ts, &zip, &zn, NULL) == LT_OK);
    lt_npz *z = NULL;
    /* overlapping members */
    size_t bn;
    uint8_t *b = bomb(zip, zn, 40, &bn);
    CHECK(lt_npz_decode(&c, b, bn, "bomb.npz", &z) == LT_ERR_INVALID && !z);
    CHECK_MSG(c, "overlap");
    CHECK_MSG(c, "zip bomb");
    free(b);
    /* the same builder with one entry makes a valid archive */
    b = bomb(zip, zn, 1, &bn);
    c = (lt_ctx){0};
    CHECK(lt_npz_decode(&c, b, bn, "one.npz", &z) == LT_OK && z && z->n == 1);
    lt_npz_free(z);
    z = NULL;
    free(b);
    /* the claimed sizes against max_bytes */
    lt_io_limits lim = {4096};
    c = (lt_ctx){0};
    CHECK(lt_npz_decode_limited(&c, zip, zn, "lim.npz", &lim, &z) == LT_ERR_INVALID && !z);
    CHECK_MSG(c, "limit of 4096 bytes");
    lim.max_bytes = 8192;
    c = (lt_ctx){0};
    CHECK(lt_npz_decode_limited(&c, zip, zn, "lim.npz", &lim, &z) == LT_OK && z && z->n == 1);
    lt_npz_free(z);
    lt_mem_free(zip);
    lt_tensor_release(x);
}

/* for i in [0, n): C[i] = A[i] + 1 */
static lt_kernel *build_inc(lt_arena *a, int64_t n) {
    lt_kernel *k = lt_kernel_new(a, "inc");
    lt_lbuf *C = lt_kernel_arg(k, "C", LT_FLOAT, n), *A = lt_kernel_arg(k, "A", LT_FLOAT, n);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64);
    lt_lnode *st = lt_l_store(k, C, lt_l_var(k, i), lt_l_add(k, lt_l_load(k, A, lt_l_var(k, i)), lt_l_float(k, LT_FLOAT, 1)));
    k->body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, n), LT_LOOP_SERIAL, st);
    return k->body ? k : NULL;
}

/* Apply `text` to a fresh kernel of extent n; the status. */
static lt_status apply_step(lt_ctx *c, int64_t n, const char *text) {
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_inc(&a, n);
    lt_sstep s;
    lt_status st = !k ? LT_ERR_NOMEM : lt_sstep_parse(c, text, &s);
    if (st == LT_OK) {
        const lt_lnode *before = k->body;
        st = lt_sched_apply(c, k, &s);
        if (st != LT_OK) CHECK(k->body == before); /* a refused step leaves the kernel alone */
    }
    lt_arena_free(&a);
    return st;
}

static void test_schedule_factors(void) {
    lt_ctx c = {0};
    CHECK(apply_step(&c, 100, "split i 9223372036854775807") == LT_ERR_INVALID);
    CHECK_MSG(c, "schedule step 'split i 9223372036854775807'");
    CHECK_MSG(c, "exceeds both its extent 100 and the limit 1024");
    c = (lt_ctx){0};
    CHECK(apply_step(&c, 100, "tile i i 9223372036854775807 2") == LT_ERR_INVALID);
    c = (lt_ctx){0};
    CHECK(apply_step(&c, 100, "split i 1025") == LT_ERR_INVALID);
    c = (lt_ctx){0};
    CHECK(apply_step(&c, 100, "split i 1024") == LT_OK); /* a GPU block of threads over a short loop */
    c = (lt_ctx){0};
    CHECK(apply_step(&c, 5000, "split i 4096") == LT_OK); /* within the extent */
    c = (lt_ctx){0};
    CHECK(apply_step(&c, 5000, "split i 5000") == LT_OK);
    c = (lt_ctx){0};
    CHECK(apply_step(&c, 5000, "split i 5001") == LT_ERR_INVALID);
}

static void test_schedule_ints(void) {
    lt_ctx c = {0};
    lt_sstep s;
    CHECK(lt_sstep_parse(&c, "split i1 9223372036854775807", &s) == LT_OK && s.factor == INT64_MAX);
    c = (lt_ctx){0};
    CHECK(lt_sstep_parse(&c, "split i1 99999999999999999999", &s) == LT_ERR_INVALID);
    CHECK_MSG(c, "split i1 99999999999999999999");
    c = (lt_ctx){0};
    CHECK(lt_sstep_parse(&c, "tile i j -99999999999999999999 4", &s) == LT_ERR_INVALID);
}

/* graph(M: int64 scalar) -> ys = Loop(M, cond=true) { scan output: a float[16] constant },
 * the Loop named "scan_loop" (made with onnx.helper). */
static const uint8_t loop_model[] = {
    0x08, 0x08, 0x3a, 0xa7, 0x02, 0x0a, 0xa8, 0x01, 0x0a, 0x01, 0x4d, 0x0a, 0x04, 0x63, 0x6f, 0x6e, 0x64, 0x12, 0x02, 0x79,
    0x73, 0x1a, 0x09, 0x73, 0x63, 0x61, 0x6e, 0x5f, 0x6c, 0x6f, 0x6f, 0x70, 0x22, 0x04, 0x4c, 0x6f, 0x6f, 0x70, 0x2a, 0x87,
    0x01, 0x0a, 0x04, 0x62, 0x6f, 0x64, 0x79, 0x32, 0x7c, 0x0a, 0x1d, 0x0a, 0x07, 0x63, 0x6f, 0x6e, 0x64, 0x5f, 0x69, 0x6e,
    0x12, 0x08, 0x63, 0x6f, 0x6e, 0x64, 0x5f, 0x6f, 0x75, 0x74, 0x22, 0x08, 0x49, 0x64, 0x65, 0x6e, 0x74, 0x69, 0x74, 0x79,
    0x0a, 0x10, 0x0a, 0x01, 0x63, 0x12, 0x01, 0x6b, 0x22, 0x08, 0x49, 0x64, 0x65, 0x6e, 0x74, 0x69, 0x74, 0x79, 0x12, 0x04,
    0x62, 0x6f, 0x64, 0x79, 0x5a, 0x0b, 0x0a, 0x01, 0x69, 0x12, 0x06, 0x0a, 0x04, 0x08, 0x07, 0x12, 0x00, 0x5a, 0x11, 0x0a,
    0x07, 0x63, 0x6f, 0x6e, 0x64, 0x5f, 0x69, 0x6e, 0x12, 0x06, 0x0a, 0x04, 0x08, 0x09, 0x12, 0x00, 0x62, 0x12, 0x0a, 0x08,
    0x63, 0x6f, 0x6e, 0x64, 0x5f, 0x6f, 0x75, 0x74, 0x12, 0x06, 0x0a, 0x04, 0x08, 0x09, 0x12, 0x00, 0x62, 0x0f, 0x0a, 0x01,
    0x6b, 0x12, 0x0a, 0x0a, 0x08, 0x08, 0x01, 0x12, 0x04, 0x0a, 0x02, 0x08, 0x10, 0xa0, 0x01, 0x05, 0x12, 0x01, 0x67, 0x2a,
    0x49, 0x08, 0x10, 0x10, 0x01, 0x42, 0x01, 0x63, 0x4a, 0x40, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00,
    0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00,
    0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00,
    0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0x3f, 0x2a, 0x0b, 0x10, 0x09, 0x42, 0x04,
    0x63, 0x6f, 0x6e, 0x64, 0x4a, 0x01, 0x01, 0x5a, 0x0b, 0x0a, 0x01, 0x4d, 0x12, 0x06, 0x0a, 0x04, 0x08, 0x07, 0x12, 0x00,
    0x62, 0x12, 0x0a, 0x02, 0x79, 0x73, 0x12, 0x0c, 0x0a, 0x0a, 0x08, 0x01, 0x12, 0x06, 0x0a, 0x00, 0x0a, 0x02, 0x08, 0x10,
    0x42, 0x04, 0x0a, 0x00, 0x10, 0x11,
};

static lt_status run_loop(lt_ctx *c, const lt_model *m, int64_t trips, int64_t max_loop_bytes, lt_datum **y) {
    lt_tensor *t = NULL;
    lt_datum *in = NULL;
    LT_TRY(lt_tensor_scalar_i64(c, LT_INT64, trips, &t));
    LT_TRY(lt_datum_tensor(c, t, &in));
    lt_interp_options o = {.seed = 0, .max_loop_bytes = max_loop_bytes};
    lt_status s = lt_interp_run(c, m, &o, &in, y);
    lt_datum_release(in);
    return s;
}

static void test_loop_limit(void) {
    lt_ctx c = {0};
    lt_model *m = NULL;
    CHECK(lt_onnx_load_memory(&c, loop_model, sizeof loop_model, NULL, NULL, &m) == LT_OK && m);
    if (!m) return;
    CHECK(lt_graph_infer(&c, m) == LT_OK);
    lt_datum *y = NULL;
    /* INT64_MAX trips: stops at the limit, naming the node */
    c = (lt_ctx){0};
    CHECK(run_loop(&c, m, INT64_MAX, 64 << 10, &y) == LT_ERR_NOMEM && !y);
    CHECK_MSG(c, "scan_loop");
    CHECK_MSG(c, "limit of 65536 bytes");
    /* 1000 trips: over a small limit, through a raised one */
    c = (lt_ctx){0};
    CHECK(run_loop(&c, m, 1000, 64 << 10, &y) == LT_ERR_NOMEM && !y);
    c = (lt_ctx){0};
    CHECK(run_loop(&c, m, 1000, 1 << 20, &y) == LT_OK && y && y->kind == LT_DK_TENSOR && y->tensor->dims[0] == 1000);
    lt_datum_release(y);
    lt_model_free(m);
}

int main(void) {
    test_npy();
    test_npz();
    test_schedule_ints();
    test_schedule_factors();
    test_loop_limit();
    return test_report("test_io_limits");
}
