/* test_cuda_nvrtc.c — every CUDA prelude kernel compiles with NVRTC, on a machine with no GPU: this
 * is how CI catches a broken CUDA kernel.
 *
 * - The whole CUDA prelude (cuda_core.h, common.h, cuda_norm.h, cuda_gemm.h) with every entry point
 *   instantiated (LT_CUDA_ENTRY_NORM / _GEMM / _PEAK) compiles to an sm_90a cubin (Hopper, what
 *   lathe uses on an H100) holding each kernel the host launchers ask for by name, and the
 *   tensor-core GEMMs do not spill (ptxas -v); the same source compiles to compute_90 PTX (sm_90
 *   front end) with every .entry.
 * - The per-kernel modules the launchers build (instantiation lines after the prelude) compile.
 * - A module emitted from Loop IR by the shared emitter compiles through lt_cuda_build.
 * - The kernels a compiled model gets (cuda_emitted.h: elementwise chain, row sum, softmax,
 *   LayerNorm, RMSNorm; float32/float16/bfloat16; long rows, short rows, odd sizes) carry the GPU
 *   schedule (vector lanes, rowreduce), use 16-byte accesses where the shape allows, and compile for
 *   sm_90a with no stack frame (the vector register arrays live in registers).
 * - The cubin cache: a miss, then a hit with the same key and bytes; other options, another key;
 *   the source is kept next to the cubin; an NVRTC error names the program; a changed,
 *   unmanifested, group-writable, symlinked or foreign image is rebuilt, never loaded, and a cache
 *   folder others can write is refused.
 * - The rowreduce schedule step (sched_rows.c) as data: text form, the nest it builds, its errors
 *   (checked with or without NVRTC).
 * Without NVRTC the test says so and passes (nothing to compile). Exits non-zero on failure.
 */
#include "backend/cuda/cuda.h"
#include "backend/cuda/cuda_kernels.h"
#include "codegen/codegen.h"
#include "loop/loop.h"

#include "cuda_emitted.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

static bool has_bytes(const void *hay, size_t n, const char *needle) {
    size_t m = strlen(needle);
    const char *h = hay;
    for (size_t i = 0; i + m <= n; i++)
        if (h[i] == needle[0] && memcmp(h + i, needle, m) == 0 && (i + m == n || h[i + m] == 0)) return true;
    return false;
}

/* every kernel name the host launchers (cuda_kernels.c, cuda_ceil.c) may ask for */
static int expected_names(char names[][64], int max) {
    int n = 0;
    const char *dts[] = {"f32", "f16", "bf16"};
    const char *tprs[] = {"t32", "t128", "t256", "t512", "t1024", "any"};
    for (int d = 0; d < 3; d++)
        for (int t = 0; t < 6 && n < max; t++) snprintf(names[n++], 64, "lt_cuda_norm_%s_%s", dts[d], tprs[t]);
    for (int d = 0; d < 3; d++)
        for (int l = 0; l < 2; l++)
            for (int c = 0; c < lt_cuda_gemm_n_configs() && n < max; c++) {
                if (d == 0 && c + 1 < lt_cuda_gemm_n_configs()) continue; /* float32: SIMT only */
                snprintf(names[n++], 64, "lt_cuda_gemm_%s_%s_%s", dts[d], l ? "nt" : "nn", lt_cuda_gemm_config_name(c));
            }
    if (n < max) snprintf(names[n++], 64, "lt_cuda_peak_fma");
    if (n < max) snprintf(names[n++], 64, "lt_cuda_peak_mma_f16");
    return n;
}

/* ptxas -v lines: "Function properties for NAME" ... "N bytes spill stores"; count spilling GEMMs */
static int tc_spills(const char *log) {
    int bad = 0;
    char cur[128] = "";
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *fp = strstr(p, "Function properties for ");
        if (fp && fp < p + len) {
            size_t l = len - (size_t)(fp + 24 - p);
            snprintf(cur, sizeof cur, "%.*s", (int)(l < 127 ? l : 127), fp + 24);
        }
        const char *sp = strstr(p, "bytes spill stores");
        if (sp && sp < p + len && strncmp(cur, "lt_cuda_gemm_", 13) == 0 && !strstr(cur, "simt")) {
            const char *q = sp;
            while (q > p && q[-1] == ' ') q--;
            while (q > p && q[-1] >= '0' && q[-1] <= '9') q--;
            if (atoi(q) != 0) {
                fprintf(stderr, "%s spills: %.*s\n", cur, (int)len, p);
                bad++;
            }
        }
        p = e ? e + 1 : p + len;
    }
    return bad;
}

static void test_prelude(lt_nvrtc *nv) {
    lt_ctx ctx = {0};
    char *src = NULL;
    CHECK(lt_cuda_kernel_source(&ctx, "", &src) == LT_OK && src);
    if (!src) return;
    CHECK(strstr(src, "---- prelude: cuda_norm.h ----") && strstr(src, "---- prelude: cuda_gemm.h ----"));
    CHECK(strstr(src, "---- prelude: common.h ----") && !strstr(src, "#include"));
    static const char *const all[] = {"-DLT_CUDA_ENTRY_NORM=1", "-DLT_CUDA_ENTRY_GEMM=1", "-DLT_CUDA_ENTRY_PEAK=1",
                                      "--ptxas-options=-v"};
    char names[128][64];
    int nn = expected_names(names, 128);

    lt_cuda_image img = {0};
    lt_cuda_compile_options o = {.name = "lathe_prelude_all.cu", .extra = all, .n_extra = 4};
    lt_status s = lt_cuda_build(&ctx, nv, src, "sm_90a", NULL, &o, &img);
    if (s != LT_OK) fprintf(stderr, "%s\n", ctx.msg);
    CHECK(s == LT_OK && img.is_cubin && !img.cache_hit);
    if (s == LT_OK) {
        int missing = 0;
        for (int i = 0; i < nn; i++)
            if (!has_bytes(img.data, img.size, names[i])) {
                fprintf(stderr, "sm_90a cubin lacks %s\n", names[i]);
                missing++;
            }
        CHECK(missing == 0);
        CHECK(img.log && strstr(img.log, "lt_cuda_gemm_f16_nn_128x256x32"));
        CHECK(tc_spills(img.log) == 0);
        printf("test_cuda_nvrtc: %d prelude kernels -> %zu-byte sm_90a cubin in %.1f s\n", nn, img.size, img.seconds);
    }
    lt_cuda_image_free(&img);

    lt_cuda_compile_options op = {.name = "lathe_prelude_all.cu", .extra = all, .n_extra = 3};
    s = lt_cuda_build(&ctx, nv, src, "compute_90", NULL, &op, &img);
    if (s != LT_OK) fprintf(stderr, "%s\n", ctx.msg);
    CHECK(s == LT_OK && !img.is_cubin && img.data);
    if (s == LT_OK) {
        int missing = 0;
        for (int i = 0; i < nn; i++) {
            char entry[128];
            snprintf(entry, sizeof entry, ".entry %.64s(", names[i]);
            if (!strstr(img.data, entry)) {
                fprintf(stderr, "compute_90 PTX lacks %s\n", entry);
                missing++;
            }
        }
        CHECK(missing == 0);
        printf("test_cuda_nvrtc: the same kernels -> compute_90 PTX in %.1f s\n", img.seconds);
    }
    lt_cuda_image_free(&img);
    lt_mem_free(src);

    /* the per-kernel modules of the launchers (a sample; the full set is compiled above) */
    static const char *const inst[][2] = {
        {"LT_NORM_KERNELS(bf16)", "lt_cuda_norm_bf16_t128"},
        {"LT_GEMM_TC(f16, nt, true, 64, 64, 32, 32, 32, 3, 4)", "lt_cuda_gemm_f16_nt_64x64x32"},
        {"LT_GEMM_SIMT(f32, nn, false)", "lt_cuda_gemm_f32_nn_simt"},
    };
    for (size_t i = 0; i < sizeof inst / sizeof inst[0]; i++) {
        char *ks = NULL;
        CHECK(lt_cuda_kernel_source(&ctx, inst[i][0], &ks) == LT_OK);
        if (!ks) continue;
        s = lt_cuda_build(&ctx, nv, ks, "sm_90", NULL, NULL, &img);
        if (s != LT_OK) fprintf(stderr, "%s\n", ctx.msg);
        CHECK(s == LT_OK && has_bytes(img.data, img.size, inst[i][1]));
        lt_cuda_image_free(&img);
        lt_mem_free(ks);
    }
}

/* Build src again and say whether it was a cache hit; a rebuild must leave the image and its manifest
 * such that the next build hits, with the same bytes as `want`. */
static bool hit_again(lt_nvrtc *nv, const char *src, const char *cache, const lt_cuda_image *want) {
    lt_ctx ctx = {0};
    lt_cuda_image r = {0};
    CHECK(lt_cuda_build(&ctx, nv, src, "sm_90a", cache, NULL, &r) == LT_OK);
    bool hit = r.cache_hit;
    CHECK(r.size == want->size && r.data && memcmp(r.data, want->data, r.size) == 0);
    lt_cuda_image_free(&r);
    return hit;
}

/* The cubin cache trusts only what it wrote (base/private_file.h): a changed, unmanifested,
 * group-writable, symlinked or foreign-owned image is rebuilt and replaced, never loaded; a cache
 * folder others can write is refused. */
static void test_cache_trust(lt_nvrtc *nv, const char *src, const char *cache, const lt_cuda_image *a) {
    char img[800], man[820], copy[820];
    snprintf(img, sizeof img, "%s/%s.cubin", cache, a->key);
    snprintf(man, sizeof man, "%s.sha256", img);
    snprintf(copy, sizeof copy, "%s.copy", img);
    struct stat st;
    CHECK(stat(man, &st) == 0 && (st.st_mode & 077) == 0 && stat(img, &st) == 0 && (st.st_mode & 077) == 0);
    CHECK(hit_again(nv, src, cache, a));
    FILE *f = fopen(img, "r+b"); /* one byte changed: the manifest no longer matches */
    if (f) {
        int c = fgetc(f);
        fseek(f, 0, SEEK_SET);
        fputc(c ^ 0x5a, f);
        fclose(f);
    }
    CHECK(!hit_again(nv, src, cache, a) && hit_again(nv, src, cache, a));
    CHECK(unlink(man) == 0 && !hit_again(nv, src, cache, a) && hit_again(nv, src, cache, a));
    CHECK(chmod(img, 0664) == 0 && !hit_again(nv, src, cache, a));
    CHECK(stat(img, &st) == 0 && (st.st_mode & 077) == 0 && hit_again(nv, src, cache, a));
    CHECK(rename(img, copy) == 0 && symlink(copy, img) == 0 && !hit_again(nv, src, cache, a));
    CHECK(lstat(img, &st) == 0 && S_ISREG(st.st_mode) && hit_again(nv, src, cache, a));
    unlink(copy);
    if (geteuid() == 0) { /* root can give the image to another user */
        CHECK(chown(img, 54321, 54321) == 0 && !hit_again(nv, src, cache, a));
        CHECK(stat(img, &st) == 0 && st.st_uid == 0 && hit_again(nv, src, cache, a));
    }
    CHECK(chmod(cache, 0770) == 0);
    lt_ctx ctx = {0};
    lt_cuda_image r = {0};
    CHECK(lt_cuda_build(&ctx, nv, src, "sm_90a", cache, NULL, &r) == LT_ERR_IO && strstr(ctx.msg, "chmod go-w"));
    lt_cuda_image_free(&r);
    CHECK(chmod(cache, 0700) == 0);
}

/* y[i] = x[i] * 2 + 1 over 4096 floats, bound to 16 blocks of 256 threads, emitted by the shared
 * emitter: the kind of module the CUDA backend compiles for a model */
static void test_emitted(lt_nvrtc *nv, const char *cache) {
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = lt_kernel_new(&ar, "lt_k0");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT16, 4096);
    lt_lbuf *x = lt_kernel_arg(k, "x", LT_FLOAT16, 4096);
    lt_lvar *b = lt_kernel_var(k, "b", LT_INT64), *t = lt_kernel_var(k, "t", LT_INT64);
    lt_lnode *i = lt_l_add(k, lt_l_mul(k, lt_l_var(k, b), lt_l_int(k, 256)), lt_l_var(k, t));
    lt_lnode *v = lt_l_binary(k, LT_LOP_ADD,
                              lt_l_binary(k, LT_LOP_MUL, lt_l_cast(k, LT_FLOAT, lt_l_load(k, x, i)), lt_l_float(k, LT_FLOAT, 2)),
                              lt_l_float(k, LT_FLOAT, 1));
    k->body = lt_l_for(k, b, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 16), LT_LOOP_GPU_BLOCK,
                       lt_l_for(k, t, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 256), LT_LOOP_GPU_THREAD,
                                lt_l_store(k, y, i, lt_l_cast(k, LT_FLOAT16, v))));
    lt_ctx ctx = {0};
    lt_strbuf src = {0};
    lt_emit_kernel ek = {k, "Mul_1 (Mul), Add_2 (Add)"};
    CHECK(lt_emit_module(&ctx, &lt_lang_cuda, &ek, 1, NULL, &src) == LT_OK && src.s);
    CHECK(src.s && strstr(src.s, "launch: grid (16, 1, 1), block (256, 1, 1)"));
    lt_cuda_image a = {0}, b2 = {0}, c = {0};
    lt_status s = lt_cuda_build(&ctx, nv, src.s, "sm_90a", cache, NULL, &a);
    if (s != LT_OK) fprintf(stderr, "%s\n", ctx.msg);
    CHECK(s == LT_OK && !a.cache_hit && has_bytes(a.data, a.size, "lt_k0"));
    /* the cache: a hit with the same key and bytes */
    CHECK(lt_cuda_build(&ctx, nv, src.s, "sm_90a", cache, NULL, &b2) == LT_OK);
    CHECK(b2.cache_hit && strcmp(a.key, b2.key) == 0 && a.size == b2.size && b2.data && a.data &&
          memcmp(a.data, b2.data, a.size) == 0);
    /* other options or target: another key */
    static const char *const fast[] = {"--use_fast_math"};
    lt_cuda_compile_options of = {.extra = fast, .n_extra = 1};
    CHECK(lt_cuda_build(&ctx, nv, src.s, "sm_90a", cache, &of, &c) == LT_OK && !c.cache_hit && strcmp(c.key, a.key) != 0);
    lt_cuda_image_free(&c);
    CHECK(lt_cuda_build(&ctx, nv, src.s, "sm_90", cache, NULL, &c) == LT_OK && !c.cache_hit && strcmp(c.key, a.key) != 0);
    lt_cuda_image_free(&c);
    char path[800];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s.cu", cache, a.key);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == src.len);
    snprintf(path, sizeof path, "%s/%s.cubin", cache, a.key);
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == a.size);
    test_cache_trust(nv, src.s, cache, &a);
    printf("test_cuda_nvrtc: emitted module %zu bytes -> cubin %zu bytes (%.2f s), cache hit %.3f s\n", src.len, a.size,
           a.seconds, b2.seconds);
    lt_cuda_image_free(&a);
    lt_cuda_image_free(&b2);
    lt_sb_free(&src);
    lt_arena_free(&ar);

    /* errors */
    lt_ctx ec = {0};
    lt_cuda_compile_options on = {.name = "broken_kernel.cu"};
    CHECK(lt_cuda_build(&ec, nv, "extern \"C\" __global__ void f() { undeclared_y = 1; }", "sm_90a", NULL, &on, &c) ==
          LT_ERR_INTERNAL);
    CHECK(strstr(ec.msg, "broken_kernel.cu") && strstr(ec.msg, "undeclared_y") && c.data == NULL);
    lt_ctx uc = {0};
    CHECK(lt_cuda_build(&uc, NULL, "x", "sm_90", NULL, NULL, &c) == LT_ERR_USAGE);
}

/* Does the ptxas -v log say kernel `name` uses no stack frame? */
static bool no_stack(const char *log, const char *name) {
    char want[96];
    snprintf(want, sizeof want, "Function properties for %s", name);
    const char *p = log ? strstr(log, want) : NULL;
    const char *sf = p ? strstr(p, "bytes stack frame") : NULL;
    if (!sf) return false;
    while (sf > p && sf[-1] == ' ') sf--;
    while (sf > p && sf[-1] >= '0' && sf[-1] <= '9') sf--;
    return atoi(sf) == 0;
}

static void test_emitted_rows(lt_nvrtc *nv) {
    static const lt_dtype dts[] = {LT_FLOAT, LT_FLOAT16, LT_BFLOAT16};
    static const struct { int64_t rows, cols; bool aligned; } shapes[] = {{64, 4096, true}, {1001, 256, true}, {33, 1001, false}};
    static const char *const verbose[] = {"--ptxas-options=-v"};
    int n = 0;
    double secs = 0;
    for (int op = 0; op < EM_N_OPS; op++)
        for (int d = 0; d < 3; d++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
                lt_ctx ctx = {0};
                em_kernel k;
                lt_status s = em_build(&ctx, (em_op)op, dts[d], shapes[sh].rows, shapes[sh].cols, &k);
                if (s != LT_OK) fprintf(stderr, "%s %s: %s\n", em_op_names[op], lt_dtype_name(dts[d]), ctx.msg);
                CHECK(s == LT_OK && k.src.s);
                if (s != LT_OK || !k.src.s) { em_free(&k); continue; }
                bool rows = op != EM_EW_CHAIN;
                CHECK(strstr(k.schedule, rows ? "rowreduce" : "vectorize") != NULL);
                if (shapes[sh].aligned) CHECK(strstr(k.src.s, "LT_COPY16(") != NULL);
                lt_cuda_image img = {0};
                lt_cuda_compile_options o = {.name = "lathe_emitted_rows.cu", .extra = verbose, .n_extra = 1};
                s = lt_cuda_build(&ctx, nv, k.src.s, "sm_90a", NULL, &o, &img);
                if (s != LT_OK) fprintf(stderr, "%s %s %lldx%lld:\n%s\n", em_op_names[op], lt_dtype_name(dts[d]),
                                        (long long)shapes[sh].rows, (long long)shapes[sh].cols, ctx.msg);
                CHECK(s == LT_OK && has_bytes(img.data, img.size, k.kernel));
                if (s == LT_OK && !no_stack(img.log, k.kernel)) {
                    const char *launch = strstr(k.src.s, "launch: ");
                    fprintf(stderr, "%s %s %lldx%lld: kernel %s (%.60s) has a stack frame:\n%s\n", em_op_names[op],
                            lt_dtype_name(dts[d]), (long long)shapes[sh].rows, (long long)shapes[sh].cols, k.kernel,
                            launch ? launch : "?", img.log ? img.log : "(no log)");
                    failures++;
                }
                secs += img.seconds;
                n++;
                lt_cuda_image_free(&img);
                em_free(&k);
            }
    printf("test_cuda_nvrtc: %d emitted row/elementwise kernels (GPU schedules) -> sm_90a in %.1f s\n", n, secs);
}

/* The rowreduce step as data (no NVRTC needed): text round trip, what it builds, and its errors. */
static void test_rowreduce_step(void) {
    lt_ctx ctx = {0};
    lt_sstep st;
    char text[128];
    CHECK(lt_sstep_parse(&ctx, "rowreduce o0 256 4", &st) == LT_OK && st.kind == LT_S_ROWREDUCE && st.factor == 256 &&
          st.factor2 == 4);
    lt_sstep_format(&st, text, sizeof text);
    CHECK(strcmp(text, "rowreduce o0 256 4") == 0);
    CHECK(lt_sstep_parse(&ctx, "rowreduce o0 256", &st) == LT_ERR_INVALID);
    lt_ctx_clear(&ctx);
    /* y[o] = sum_r x[o*100 + r]: a block of 64 threads per row, 4 lanes, guarded tail (100 % 256) */
    lt_arena ar;
    lt_arena_init(&ar);
    lt_kernel *k = lt_kernel_new(&ar, "lt_k0");
    lt_lbuf *y = lt_kernel_arg(k, "y", LT_FLOAT, 8), *x = lt_kernel_arg(k, "x", LT_FLOAT, 800);
    lt_lvar *o = lt_kernel_var(k, "o0", LT_INT64), *r = lt_kernel_var(k, "r0", LT_INT64), *acc = lt_kernel_var(k, "acc", LT_FLOAT);
    lt_lnode *ld = lt_l_load(k, x, lt_l_add(k, lt_l_mul(k, lt_l_var(k, o), lt_l_int(k, 100)), lt_l_var(k, r)));
    lt_lnode *s3[3] = {lt_l_let(k, acc, lt_l_float(k, LT_FLOAT, 0)),
                       lt_l_for(k, r, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 100), LT_LOOP_SERIAL,
                                lt_l_assign(k, acc, lt_l_add(k, lt_l_var(k, acc), ld))),
                       lt_l_store(k, y, lt_l_var(k, o), lt_l_var(k, acc))};
    k->body = lt_l_for(k, o, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 8), LT_LOOP_SERIAL, lt_l_seq(k, 3, s3));
    CHECK(lt_sched_rowreduce_check(k, "o0", 64, 4, NULL, 0));
    char why[200] = "";
    CHECK(!lt_sched_rowreduce_check(k, "o0", 48, 4, why, sizeof why) && strstr(why, "48"));
    CHECK(lt_sstep_parse(&ctx, "bind o0 block x", &st) == LT_OK && lt_sched_apply(&ctx, k, &st) == LT_OK);
    CHECK(lt_sstep_parse(&ctx, "rowreduce o0 64 4", &st) == LT_OK && lt_sched_apply(&ctx, k, &st) == LT_OK);
    CHECK(lt_kernel_verify(&ctx, k) == LT_OK);
    lt_strbuf p = {0};
    lt_kernel_print(k, &p);
    CHECK(p.s && strstr(p.s, "lt_block_sum_f32(acc_part, 64)") && strstr(p.s, "vectorized(4) for r0.v") &&
          strstr(p.s, "< 100"));
    if (failures && p.s) fprintf(stderr, "%s\n", p.s);
    lt_sb_free(&p);
    /* a loop with something other than an accumulation in its nests: an error naming the variable */
    lt_kernel *k2 = lt_kernel_new(&ar, "lt_k1");
    lt_lbuf *y2 = lt_kernel_arg(k2, "y", LT_FLOAT, 8), *x2 = lt_kernel_arg(k2, "x", LT_FLOAT, 800);
    lt_lvar *o2 = lt_kernel_var(k2, "o0", LT_INT64), *r2 = lt_kernel_var(k2, "r0", LT_INT64), *b2 = lt_kernel_var(k2, "best", LT_FLOAT);
    lt_lnode *ld2 = lt_l_load(k2, x2, lt_l_add(k2, lt_l_mul(k2, lt_l_var(k2, o2), lt_l_int(k2, 100)), lt_l_var(k2, r2)));
    lt_lnode *t3[3] = {lt_l_let(k2, b2, lt_l_float(k2, LT_FLOAT, 0)),
                       lt_l_for(k2, r2, LT_ROLE_NONE, lt_l_int(k2, 0), lt_l_int(k2, 100), LT_LOOP_SERIAL, lt_l_assign(k2, b2, ld2)),
                       lt_l_store(k2, y2, lt_l_var(k2, o2), lt_l_var(k2, b2))};
    k2->body = lt_l_for(k2, o2, LT_ROLE_NONE, lt_l_int(k2, 0), lt_l_int(k2, 8), LT_LOOP_SERIAL, lt_l_seq(k2, 3, t3));
    lt_ctx ec = {0};
    CHECK(lt_sched_apply(&ec, k2, &st) == LT_ERR_INVALID && strstr(ec.msg, "rowreduce o0 64 4") && strstr(ec.msg, "best"));
    lt_arena_free(&ar);
    printf("test_cuda_nvrtc: rowreduce step ok\n");
}

static void rm_rf(const char *dir) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void) {
    lt_ctx ctx = {0};
    lt_nvrtc *nv = NULL;
    test_rowreduce_step();
    if (lt_nvrtc_open(&ctx, &nv) != LT_OK) {
        printf("test_cuda_nvrtc: SKIP (nothing compiled): %s\n", ctx.msg);
        return 0;
    }
    int ma, mi;
    lt_nvrtc_version(nv, &ma, &mi);
    printf("test_cuda_nvrtc: NVRTC %d.%d (%s)\n", ma, mi, lt_nvrtc_path(nv));
    char dir[] = "/tmp/lathe-cuda-nvrtc-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 1;
    }
    char cache[600];
    snprintf(cache, sizeof cache, "%s/cache/sub", dir); /* created on demand, with its parents */
    test_emitted(nv, cache);
    test_emitted_rows(nv);
    test_prelude(nv);
    rm_rf(dir);
    lt_nvrtc_close(nv);
    if (failures) fprintf(stderr, "test_cuda_nvrtc: %d failure(s)\n", failures);
    else printf("test_cuda_nvrtc: ok\n");
    return failures ? 1 : 0;
}
