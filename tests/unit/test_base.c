/* test_base.c — unit tests of src/base: checked arithmetic, arenas, the allocator hook (failing on
 * purpose), dtype conversions, tensor/datum lifetimes and the hashes (SHA-256 and FNV-1a against
 * published test vectors), the allocator's cache of large blocks (reuse, and fork while another thread
 * allocates). Exits non-zero on the first failure. */
#include "base/base.h"
#include "base/dtype.h"
#include "base/hash.h"
#include "base/tensor.h"
#include "test_util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_checked(void) {
    int64_t r;
    CHECK(lt_add_i64(1, 2, &r) && r == 3);
    CHECK(!lt_add_i64(INT64_MAX, 1, &r));
    CHECK(!lt_mul_i64(INT64_MAX / 2 + 1, 2, &r));
    CHECK(lt_mul_i64(-4, 5, &r) && r == -20);
    int64_t dims[3] = {1 << 20, 1 << 20, 1 << 20};
    CHECK(lt_prod_i64(dims, 2, &r) && r == (int64_t)1 << 40);
    int64_t big[4] = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
    CHECK(!lt_prod_i64(big, 4, &r));
    int64_t neg[2] = {3, -1};
    CHECK(!lt_prod_i64(neg, 2, &r));
}

static void test_arena(void) {
    lt_arena a;
    lt_arena_init(&a);
    char *s = lt_arena_strdup(&a, "hello");
    CHECK(s && strcmp(s, "hello") == 0);
    void *big = lt_arena_alloc(&a, 1 << 20);
    CHECK(big != NULL && ((uintptr_t)big % 16) == 0);
    for (int i = 0; i < 1000; i++) CHECK(lt_arena_alloc(&a, 100) != NULL);
    CHECK(lt_arena_alloc(&a, SIZE_MAX) == NULL);
    lt_arena_free(&a);
}

static void test_ctx(void) {
    lt_ctx c = {0};
    CHECK(lt_error(&c, LT_ERR_INVALID, "first %d", 1) == LT_ERR_INVALID);
    lt_error(&c, LT_ERR_NOMEM, "second");
    CHECK(c.status == LT_ERR_INVALID && strcmp(c.msg, "first 1") == 0);
    CHECK(lt_status_exit_code(LT_ERR_UNSUPPORTED) == 3 && lt_status_exit_code(LT_ERR_NOMEM) == 2);
}

static void test_dtypes(void) {
    /* float16: exact values, rounding to nearest even, overflow, subnormals, NaN */
    CHECK(lt_f32_to_f16(1.0f) == 0x3c00);
    CHECK(lt_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(lt_f32_to_f16(65520.0f) == 0x7c00);            /* rounds up to inf */
    CHECK(lt_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(lt_f32_to_f16(-0.0f) == 0x8000);
    CHECK(lt_f32_to_f16(5.9604645e-08f) == 0x0001);      /* smallest subnormal */
    CHECK(lt_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);  /* tie -> even */
    CHECK(lt_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);  /* tie -> even (up) */
    CHECK((lt_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (lt_f32_to_f16(NAN) & 0x3ff));
    for (uint32_t h = 0; h < 0x10000; h++) {             /* every finite half round-trips */
        if ((h & 0x7c00) == 0x7c00) continue;
        CHECK(lt_f32_to_f16(lt_f16_to_f32((uint16_t)h)) == h);
    }
    /* bfloat16 */
    CHECK(lt_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(lt_bf16_to_f32(0x3f80) == 1.0f);
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7f80) == 0x7f80) continue;
        CHECK(lt_f32_to_bf16(lt_bf16_to_f32((uint16_t)h)) == h);
    }
    /* float8 round trips of every finite encoding */
    lt_dtype f8[4] = {LT_FLOAT8E4M3FN, LT_FLOAT8E4M3FNUZ, LT_FLOAT8E5M2, LT_FLOAT8E5M2FNUZ};
    for (int k = 0; k < 4; k++)
        for (int v = 0; v < 256; v++) {
            float f = lt_f8_to_f32((uint8_t)v, f8[k]);
            if (isnan(f) || isinf(f)) continue;
            if (f == 0 && v == 0x80) continue; /* -0 */
            CHECK(lt_f32_to_f8(f, f8[k], true) == v);
        }
    CHECK(lt_f8_to_f32(0x7e, LT_FLOAT8E4M3FN) == 448.0f);
    CHECK(lt_f32_to_f8(1e6f, LT_FLOAT8E4M3FN, true) == 0x7e);
    /* integers through the generic paths */
    int64_t big = INT64_MAX - 3;
    int64_t buf[1];
    lt_store_i64(buf, LT_INT64, 0, big);
    CHECK(lt_load_i64(buf, LT_INT64, 0) == big);
    int8_t i4[1];
    lt_store_i64(i4, LT_INT4, 0, 9); /* wraps to -7 in 4 bits */
    CHECK(i4[0] == -7);
    uint8_t u8[1];
    lt_store_f64(u8, LT_UINT8, 0, 300.0); /* out of range: defined (wraps or saturates), never UB */
    CHECK(u8[0] == 44 || u8[0] == 255);
    int32_t i32[1];
    lt_store_f64(i32, LT_INT32, 0, NAN);
    CHECK(i32[0] == 0);
    CHECK(lt_dtype_from_name("bfloat16") == LT_BFLOAT16 && lt_dtype_size(LT_INT4) == 1);
}

static void test_tensors_under_failing_allocator(void) {
    lt_set_allocator(&g_test_alloc);
    int64_t dims[2] = {3, 4};
    for (long n = 0; n < 20; n++) {
        lt_ctx c = {0};
        g_countdown = n;
        lt_tensor *t = NULL;
        lt_status s = lt_tensor_new(&c, LT_STRING, 2, dims, &t);
        if (s == LT_OK) {
            lt_datum *d = NULL;
            lt_status s2 = lt_datum_tensor(&c, t, &d); /* takes t, releases it on failure */
            if (s2 == LT_OK) lt_datum_release(d);
            else CHECK(c.status == LT_ERR_NOMEM);
        } else {
            CHECK(s == LT_ERR_NOMEM && c.status == LT_ERR_NOMEM && strstr(c.msg, "out of memory"));
        }
    }
    g_countdown = -1;
    lt_set_allocator(NULL);
    lt_ctx c = {0};
    int64_t huge[3] = {1 << 20, 1 << 20, 1 << 20};
    lt_tensor *t;
    CHECK(lt_tensor_new(&c, LT_FLOAT, 3, huge, &t) == LT_ERR_NOMEM && strstr(c.msg, "too large"));
}

/* FIPS 180-4's "abc" example, and FNV-1a 64 as its authors publish it (offset basis
 * 14695981039346656037): "" is the basis itself. */
static void test_hashes(void) {
    char hex[65];
    lt_sha256_hex("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    CHECK(lt_fnv1a("", 0) == 0xcbf29ce484222325ull && lt_fnv1a_str("") == 0xcbf29ce484222325ull);
    CHECK(lt_fnv1a("a", 1) == 0xaf63dc4c8601ec8cull && lt_fnv1a_str("a") == 0xaf63dc4c8601ec8cull);
    CHECK(lt_fnv1a("foobar", 6) == 0x85944171f73967e8ull && lt_fnv1a_str("foobar") == 0x85944171f73967e8ull);
    CHECK(lt_fnv1a_more(lt_fnv1a("foo", 3), "bar", 3) == lt_fnv1a("foobar", 6));
}

/* Large blocks freed and taken again come back from the allocator's cache (the same block for the
 * same size), hold what is written to them, and a fork while another thread allocates and frees
 * large blocks leaves the child able to allocate (the cache's lock is held across fork). */
static void *churn(void *stop) {
    while (!__atomic_load_n((int *)stop, __ATOMIC_RELAXED)) {
        void *p = lt_mem_alloc((size_t)1 << 20);
        lt_mem_free(p);
    }
    return NULL;
}

static void test_big_block_cache(void) {
    size_t n = (size_t)3 << 20;
    char *a = lt_mem_alloc(n);
    CHECK(a != NULL);
    if (!a) return;
    memset(a, 7, n);
    lt_mem_free(a);
    char *b = lt_mem_alloc(n - 100);
    CHECK(b == a); /* the cached block */
    char *c = lt_mem_alloc(n);
    CHECK(c != NULL && c != b);
    if (c) memset(c, 1, n);
    if (b) memset(b, 2, n - 100);
    CHECK(c && b && c[n - 1] == 1 && b[0] == 2);
    lt_mem_free(b);
    lt_mem_free(c);
    int stop = 0;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, churn, &stop) == 0);
    for (int i = 0; i < 40; i++) {
        pid_t pid = fork();
        if (pid == 0) { /* the child: a big allocation and free must not hang */
            alarm(10);
            void *p = lt_mem_alloc((size_t)1 << 20);
            lt_mem_free(p);
            _exit(p ? 0 : 3);
        }
        int st = 0;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
}

int main(void) {
    test_checked();
    test_arena();
    test_ctx();
    test_dtypes();
    test_tensors_under_failing_allocator();
    test_hashes();
    test_big_block_cache();
    return test_report("test_base");
}
