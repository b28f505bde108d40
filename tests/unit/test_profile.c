/* test_profile.c — unit tests of src/profile (ceilings, roofline report, Chrome trace) and src/tune
 * (tuning database, beam search).
 *   ceilings: a short measurement gives plausible numbers (> 1 GFLOP/s, > 1 GB/s, below absurd
 *     upper limits) on 1 and 2 threads; save/load round-trip through a nested new directory; a
 *     missing file, another CPU's file and a malformed file (error names file:line).
 *   report: the roofline math on synthetic records with known answers (compute- and memory-bound,
 *     exactly at the ridge, no FLOPs, host steps), totals, sorting / top-N, bad input errors, median.
 *   trace: the written file is parsed by a small JSON parser here and its structure checked (the
 *     metadata events, one "X" event per record with ts/dur/args, string escapes round-trip).
 *   tune: key hashing, schedule text round-trip, insert-keeps-the-faster, save/load round-trip of
 *     1000 entries (sorted file), malformed lines, steps that would not read back; the beam search on
 *     a hand-built kernel with a fake measure function whose optimum is known, budget, rejection,
 *     error propagation, the kernel left unchanged, lt_tune_kernel's database hit; every candidate
 *     run through the Loop IR interpreter against the unscheduled result; on a reduction kernel,
 *     "parallel" never lands on the reduction loop.
 *   out of memory: each allocation failing in turn gives LT_ERR_NOMEM (never a crash or leak).
 * Exits non-zero on the first failure. */
#include "profile/profile.h"
#include "loop/leval.h"
#include "tune/tune.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        lt_status s_ = (expr);                                                                     \
        if (s_ != LT_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, lt_status_name(s_)); \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define NEAR(a, b) near_((double)(a), (double)(b))
static bool near_(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b)) + 1e-12; }

static char tmpdir[256];

static void rm_rf(const char *path) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", path);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* ============================================================================================= */
/* ceilings                                                                                      */
/* ============================================================================================= */

static void check_plausible(const lt_ceilings *c, int threads) {
    CHECK(c->threads == threads);
    CHECK(c->peak_gflops > 1.0 && c->peak_gflops < 1e5 * threads);
    CHECK(c->peak_gflops_1t > 1.0 && c->peak_gflops_1t <= c->peak_gflops * 1.5);
    CHECK(c->mem_gbps > 1.0 && c->mem_gbps < 1e5);
    CHECK(c->copy_gbps > 0 && c->triad_gbps > 0 && c->cache_gbps > 1.0);
    CHECK(c->mem_gbps == (c->copy_gbps > c->triad_gbps ? c->copy_gbps : c->triad_gbps));
    CHECK(!strcmp(c->isa, "avx512f") || !strcmp(c->isa, "avx2") || !strcmp(c->isa, "portable"));
    CHECK(c->cpu[0] != 0);
    CHECK(c->measured_at > 0);
    CHECK(c->mem_bytes > 0);
}

static void test_ceilings(void) {
    lt_ctx ctx = {0};
    lt_ceilings c1, c2;
    /* small arrays and short trials: this is a plausibility test, not a benchmark */
    lt_ceilings_options o = {.threads = 1, .mem_bytes = 48 << 20, .min_seconds = 0.01, .trials = 4};
    CHECK_OK(lt_ceilings_measure_opt(&ctx, &o, &c1));
    check_plausible(&c1, 1);
    o.threads = 2;
    CHECK_OK(lt_ceilings_measure_opt(&ctx, &o, &c2));
    check_plausible(&c2, 2);
    fprintf(stderr, "ceilings (1 thread): %.1f GFLOP/s (%s), %.1f GB/s (cache %.1f); 2 threads: %.1f GFLOP/s, %.1f GB/s\n",
            c1.peak_gflops, c1.isa, c1.mem_gbps, c1.cache_gbps, c2.peak_gflops, c2.mem_gbps);

    lt_ceilings_options bad = {.threads = -1};
    lt_ctx e = {0};
    CHECK(lt_ceilings_measure_opt(&e, &bad, &c1) == LT_ERR_USAGE && strstr(e.msg, "threads"));

    char name[96];
    lt_cpu_model_name(name, sizeof name);
    CHECK(!strcmp(name, c1.cpu));
    CHECK(lt_cpu_count() >= 1);

    /* save / load */
    char dir[400], path[600];
    snprintf(dir, sizeof dir, "%s/cache/nested", tmpdir);
    bool found = true;
    CHECK_OK(lt_ceilings_load(&ctx, dir, 2, &c1, &found));
    CHECK(!found);
    CHECK_OK(lt_ceilings_save(&ctx, dir, &c2));
    lt_ceilings_path(dir, 2, path, sizeof path);
    CHECK(strstr(path, "ceilings-2t.txt") != NULL);
    CHECK(access(path, R_OK) == 0);
    lt_ceilings back;
    memset(&back, 0, sizeof back);
    CHECK_OK(lt_ceilings_load(&ctx, dir, 2, &back, &found));
    CHECK(found);
    CHECK(fabs(back.peak_gflops - c2.peak_gflops) <= 1e-5 * c2.peak_gflops);
    CHECK(fabs(back.mem_gbps - c2.mem_gbps) <= 1e-5 * c2.mem_gbps);
    CHECK(back.threads == 2 && !strcmp(back.cpu, c2.cpu) && !strcmp(back.isa, c2.isa));
    CHECK(back.measured_at == c2.measured_at && back.llc_bytes == c2.llc_bytes);
    /* another thread count: absent */
    CHECK_OK(lt_ceilings_load(&ctx, dir, 3, &back, &found));
    CHECK(!found);
    /* lt_ceilings_get takes the cached numbers */
    bool cached = false;
    lt_ceilings got;
    CHECK_OK(lt_ceilings_get(&ctx, dir, 2, false, &got, &cached));
    CHECK(cached && got.peak_gflops == back.peak_gflops);

    /* another CPU: stale, treated as absent */
    char text[1024];
    snprintf(text, sizeof text, "version = 1\ncpu = Some Other CPU 9000\nthreads = 2\npeak_gflops = 10\nmem_gbps = 5\n");
    write_text(path, text);
    CHECK_OK(lt_ceilings_load(&ctx, dir, 2, &back, &found));
    CHECK(!found);
    /* malformed: error names the file and line */
    snprintf(text, sizeof text, "# c\nversion = 1\ncpu = %s\nthreads = 2\npeak_gflops = fast\nmem_gbps = 5\n", c2.cpu);
    write_text(path, text);
    e = (lt_ctx){0};
    CHECK(lt_ceilings_load(&e, dir, 2, &back, &found) == LT_ERR_INVALID);
    CHECK(strstr(e.msg, "ceilings-2t.txt:5") != NULL);
    snprintf(text, sizeof text, "cpu = %s\nthreads = 2\nmem_gbps = 5\n", c2.cpu);
    write_text(path, text);
    e = (lt_ctx){0};
    CHECK(lt_ceilings_load(&e, dir, 2, &back, &found) == LT_ERR_INVALID && strstr(e.msg, "peak_gflops"));
    snprintf(text, sizeof text, "cpu = %s\nthreads\n", c2.cpu);
    write_text(path, text);
    e = (lt_ctx){0};
    CHECK(lt_ceilings_load(&e, dir, 2, &back, &found) == LT_ERR_INVALID && strstr(e.msg, ":2:"));
    /* a valid hand-written file (unknown keys ignored, no trailing newline) */
    snprintf(text, sizeof text, "cpu = %s\nthreads = 2\npeak_gflops = 123.5\nmem_gbps = 7.25\nfuture_key = x", c2.cpu);
    write_text(path, text);
    CHECK_OK(lt_ceilings_load(&ctx, dir, 2, &back, &found));
    CHECK(found && back.peak_gflops == 123.5 && back.mem_gbps == 7.25);
    /* a file where the directory should be */
    char fdir[500];
    snprintf(fdir, sizeof fdir, "%s/plainfile", tmpdir);
    write_text(fdir, "x");
    e = (lt_ctx){0};
    CHECK(lt_ceilings_save(&e, fdir, &c2) == LT_ERR_IO && strstr(e.msg, "plainfile"));

    lt_strbuf sb = {0};
    lt_ceilings_format(&c2, &sb);
    CHECK(sb.s && strstr(sb.s, "GFLOP/s") && strstr(sb.s, "GB/s") && strstr(sb.s, "ridge point"));
    lt_sb_free(&sb);
}

/* ============================================================================================= */
/* report                                                                                        */
/* ============================================================================================= */

static void test_report(void) {
    lt_ctx ctx = {0};
    lt_ceilings c;
    memset(&c, 0, sizeof c);
    c.peak_gflops = 100, c.mem_gbps = 10, c.threads = 2; /* ridge point: 10 FLOP/byte */
    snprintf(c.isa, sizeof c.isa, "avx512f");
    lt_prof_record r[] = {
        {.name = "lt_k0", .kind = "gemm", .time_s = 0.04, .flops = 2e9, .bytes = 1e8},       /* I = 20 */
        {.name = "lt_k1", .kind = "elemwise", .time_s = 0.05, .flops = 1e7, .bytes = 4e8},   /* I = 0.025 */
        {.name = "lt_k2", .kind = "injective", .time_s = 0.01, .flops = 0, .bytes = 2e8},    /* copy */
        {.name = "NonZero", .kind = "host", .time_s = 0.001},                                /* no cost */
        {.name = "lt_k4", .kind = "reduce", .time_s = 0.02, .flops = 1e9, .bytes = 1e8,
         .detail = "'ln' (LayerNormalization)"},                                             /* at the ridge */
    };
    lt_prof_row w;
    CHECK_OK(lt_profile_row(&ctx, &c, &r[0], &w));
    CHECK(NEAR(w.gflops, 50) && NEAR(w.gbps, 2.5) && NEAR(w.intensity, 20));
    CHECK(NEAR(w.bound_gflops, 100) && NEAR(w.bound_s, 0.02) && NEAR(w.pct_of_bound, 50));
    CHECK(w.binds == LT_BOUND_COMPUTE);
    CHECK_OK(lt_profile_row(&ctx, &c, &r[1], &w));
    CHECK(NEAR(w.gbps, 8) && NEAR(w.gflops, 0.2) && NEAR(w.intensity, 0.025));
    CHECK(NEAR(w.bound_gflops, 0.25) && NEAR(w.bound_s, 0.04) && NEAR(w.pct_of_bound, 80));
    CHECK(w.binds == LT_BOUND_MEMORY);
    CHECK_OK(lt_profile_row(&ctx, &c, &r[2], &w));
    CHECK(w.binds == LT_BOUND_MEMORY && w.bound_gflops == 0 && NEAR(w.bound_s, 0.02) && NEAR(w.pct_of_bound, 200));
    CHECK(w.gflops == 0 && NEAR(w.gbps, 20));
    CHECK_OK(lt_profile_row(&ctx, &c, &r[3], &w));
    CHECK(w.binds == LT_BOUND_NONE && w.pct_of_bound == 0 && w.bound_s == 0);
    CHECK_OK(lt_profile_row(&ctx, &c, &r[4], &w));
    CHECK(w.binds == LT_BOUND_COMPUTE && NEAR(w.bound_gflops, 100) && NEAR(w.pct_of_bound, 50));
    /* FLOPs and no bytes: compute bound at the peak */
    lt_prof_record regs = {.name = "regs", .time_s = 1e-3, .flops = 5e7};
    CHECK_OK(lt_profile_row(&ctx, &c, &regs, &w));
    CHECK(w.binds == LT_BOUND_COMPUTE && NEAR(w.bound_gflops, 100) && w.intensity == 0 && NEAR(w.pct_of_bound, 50));
    /* no time: rates and percentages 0, the bound still computed */
    lt_prof_record untimed = {.name = "untimed", .flops = 1e9, .bytes = 1e9};
    CHECK_OK(lt_profile_row(&ctx, &c, &untimed, &w));
    CHECK(w.gflops == 0 && w.pct_of_bound == 0 && NEAR(w.bound_s, 0.1) && w.binds == LT_BOUND_MEMORY);

    /* the table */
    lt_strbuf sb = {0};
    lt_profile_totals t;
    lt_profile_options po = {.show_detail = true, .title = "profile of test"};
    CHECK_OK(lt_profile_report(&ctx, &c, r, 5, &po, &sb, &t));
    CHECK(t.n == 5 && NEAR(t.time_s, 0.121) && NEAR(t.flops, 3.01e9) && NEAR(t.bytes, 8e8));
    CHECK(NEAR(t.bound_s, 0.09) && NEAR(t.pct_of_bound, 100 * 0.09 / 0.121));
    CHECK(NEAR(t.compute_bound_s, 0.03) && NEAR(t.memory_bound_s, 0.06));
    CHECK(NEAR(t.gflops, 3.01e9 / 0.121 * 1e-9));
    const char *s = sb.s ? sb.s : "";
    CHECK(!strncmp(s, "profile of test\nroofline: peak 100.0 GFLOP/s (FP32 FMA, avx512f), memory 10.0 GB/s, ridge 10.00 FLOP/B; 2 threads\n",
                   strlen("profile of test\nroofline: peak 100.0 GFLOP/s (FP32 FMA, avx512f), memory 10.0 GB/s, ridge 10.00 FLOP/B; 2 threads\n")));
    /* the memory-bound row's bound: 0.025 FLOP/B x 10 GB/s = 0.25 GFLOP/s */
    CHECK(strstr(s, "0.250    80.0%  memory\n"));
    CHECK(strstr(s, "kernel") && strstr(s, "%bound") && strstr(s, "binds"));
    CHECK(strstr(s, "50.0%") && strstr(s, "80.0%") && strstr(s, "200.0%  memory (cache)\n") && strstr(s, "74.4%"));
    CHECK(strstr(s, "total (5)") && strstr(s, "memory 67%"));
    CHECK(strstr(s, "    'ln' (LayerNormalization)\n"));
    /* rows in the given order: lt_k0 before lt_k1 */
    CHECK(strstr(s, "lt_k0") && strstr(s, "lt_k1") && strstr(s, "lt_k0") < strstr(s, "lt_k1"));
    /* the host row: "-" for rates, binds "-" */
    const char *host = strstr(s, "NonZero");
    CHECK(host && strstr(host, "host"));
    if (host) {
        const char *eol = strchr(host, '\n');
        CHECK(eol && eol[-1] == '-');
    }
    lt_sb_free(&sb);

    /* sorted, top 2 */
    sb = (lt_strbuf){0};
    po = (lt_profile_options){.sort_by_time = true, .top = 2};
    CHECK_OK(lt_profile_report(&ctx, &c, r, 5, &po, &sb, NULL));
    s = sb.s ? sb.s : "";
    const char *k1 = strstr(s, "lt_k1"), *k0 = strstr(s, "lt_k0");
    CHECK(k1 && k0 && k1 < k0);
    CHECK(!strstr(s, "lt_k2") && !strstr(s, "NonZero"));
    CHECK(strstr(s, "... 3 more (31.0 ms)") && strstr(s, "total (5)"));
    lt_sb_free(&sb);

    /* long names are cut */
    lt_prof_record longname = {.name = "a_kernel_with_a_really_long_name_that_goes_on_and_on", .kind = "x", .time_s = 1};
    sb = (lt_strbuf){0};
    CHECK_OK(lt_profile_report(&ctx, &c, &longname, 1, NULL, &sb, NULL));
    CHECK(sb.s && strstr(sb.s, "a_kernel_with_a_really_long_name_that...") && !strstr(sb.s, "and_on"));
    lt_sb_free(&sb);

    /* empty report still validates ceilings and prints a totals row */
    sb = (lt_strbuf){0};
    CHECK_OK(lt_profile_report(&ctx, &c, NULL, 0, NULL, &sb, &t));
    CHECK(t.n == 0 && sb.s && strstr(sb.s, "total (0)"));
    lt_sb_free(&sb);

    /* errors */
    lt_ctx e = {0};
    lt_prof_record neg = {.name = "bad_kernel", .time_s = -1};
    sb = (lt_strbuf){0};
    CHECK(lt_profile_report(&e, &c, &neg, 1, NULL, &sb, NULL) == LT_ERR_USAGE && strstr(e.msg, "bad_kernel"));
    lt_sb_free(&sb);
    e = (lt_ctx){0};
    lt_prof_record nan_rec = {.name = "nan_kernel", .time_s = 1, .flops = NAN};
    CHECK(lt_profile_row(&e, &c, &nan_rec, &w) == LT_ERR_USAGE && strstr(e.msg, "nan_kernel"));
    lt_ceilings zero = c;
    zero.mem_gbps = 0;
    e = (lt_ctx){0};
    CHECK(lt_profile_row(&e, &zero, &r[0], &w) == LT_ERR_USAGE && strstr(e.msg, "ceilings"));
    e = (lt_ctx){0};
    sb = (lt_strbuf){0};
    CHECK(lt_profile_report(&e, &zero, NULL, 0, NULL, &sb, NULL) == LT_ERR_USAGE);
    lt_sb_free(&sb);

    /* median */
    double v1[] = {3, 1, 2}, v2[] = {4, 1, 3, 2}, v3[] = {7};
    CHECK(lt_profile_median(v1, 3) == 2 && lt_profile_median(v2, 4) == 2.5 && lt_profile_median(v3, 1) == 7);
    CHECK(lt_profile_median(NULL, 0) == 0);
    CHECK(v1[0] == 1 && v1[2] == 3);
}

/* ============================================================================================= */
/* a small JSON parser (for checking the trace)                                                  */
/* ============================================================================================= */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;
typedef struct jval {
    jtype t;
    double num;
    char *str;            /* J_STR (decoded) */
    int n;
    struct jval **items;  /* J_ARR / J_OBJ values */
    char **keys;          /* J_OBJ */
} jval;

typedef struct jp {
    const char *p;
    bool err;
} jp;

static void jws(jp *j) {
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r') j->p++;
}

static jval *jnew(jtype t) {
    jval *v = calloc(1, sizeof *v);
    v->t = t;
    return v;
}

static void jpush(jval *v, char *key, jval *item) {
    v->items = realloc(v->items, (size_t)(v->n + 1) * sizeof *v->items);
    v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *v->keys);
    v->items[v->n] = item;
    v->keys[v->n] = key;
    v->n++;
}

static char *jstring(jp *j) {
    if (*j->p != '"') return j->err = true, NULL;
    j->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    for (;;) {
        unsigned char c = (unsigned char)*j->p++;
        if (c == 0 || c < 0x20) { j->err = true; break; } /* raw control characters are invalid JSON */
        if (c == '"') break;
        if (c == '\\') {
            char e = *j->p++;
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == 'r') c = '\r';
            else if (e == 'b') c = '\b';
            else if (e == 'f') c = '\f';
            else if (e == '"' || e == '\\' || e == '/') c = (unsigned char)e;
            else if (e == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *j->p++;
                    if (!isxdigit((unsigned char)h)) { j->err = true; break; }
                    v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower(h) - 'a' + 10));
                }
                if (v >= 0x80) j->err = true; /* only what our writer emits */
                c = (unsigned char)v;
            } else {
                j->err = true;
                break;
            }
        }
        if (n + 2 > cap) s = realloc(s, cap *= 2);
        s[n++] = (char)c;
    }
    s[n] = 0;
    return s;
}

static jval *jparse(jp *j) {
    jws(j);
    jval *v = NULL;
    char c = *j->p;
    if (c == '{' || c == '[') {
        v = jnew(c == '{' ? J_OBJ : J_ARR);
        j->p++;
        jws(j);
        if (*j->p == (c == '{' ? '}' : ']')) { j->p++; return v; }
        for (;;) {
            char *key = NULL;
            jws(j);
            if (c == '{') {
                key = jstring(j);
                jws(j);
                if (*j->p++ != ':') {
                    free(key);
                    j->err = true;
                    return v;
                }
            }
            jpush(v, key, jparse(j));
            if (j->err) return v;
            jws(j);
            if (*j->p == ',') { j->p++; continue; }
            if (*j->p == (c == '{' ? '}' : ']')) { j->p++; return v; }
            j->err = true;
            return v;
        }
    }
    if (c == '"') {
        v = jnew(J_STR);
        v->str = jstring(j);
        return v;
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        v = jnew(J_NUM);
        v->num = strtod(j->p, &end);
        if (end == j->p) j->err = true;
        j->p = end;
        return v;
    }
    if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
        v = jnew(J_BOOL);
        v->num = *j->p == 't';
        j->p += *j->p == 't' ? 4 : 5;
        return v;
    }
    if (!strncmp(j->p, "null", 4)) {
        j->p += 4;
        return jnew(J_NULL);
    }
    j->err = true;
    return jnew(J_NULL);
}

static void jfree(jval *v) {
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        jfree(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static jval *jget(const jval *o, const char *key) {
    if (!o || o->t != J_OBJ) return NULL;
    for (int i = 0; i < o->n; i++)
        if (o->keys[i] && !strcmp(o->keys[i], key)) return o->items[i];
    return NULL;
}

static const char *jstr(const jval *o, const char *key) {
    jval *v = jget(o, key);
    return v && v->t == J_STR ? v->str : NULL;
}

static bool jnum(const jval *o, const char *key, double *out) {
    jval *v = jget(o, key);
    if (!v || v->t != J_NUM) return false;
    *out = v->num;
    return true;
}

static void test_json_parser(void) {
    /* the checker itself must reject bad JSON, or the trace test could not fail */
    const char *bad[] = {"{\"a\":1", "{\"a\" 1}", "[1,]x", "{\"a\":\"x\ny\"}", "[tru]", "{\"a\":1,}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jp j = {bad[i], false};
        jval *v = jparse(&j);
        jws(&j);
        CHECK(j.err || *j.p != 0);
        jfree(v);
    }
    jp j = {"{\"a\":[1,2.5,\"x\\\"y\"],\"b\":{\"c\":null,\"d\":true}}", false};
    jval *v = jparse(&j);
    CHECK(!j.err && v->t == J_OBJ && jget(v, "a")->n == 3 && !strcmp(jget(v, "a")->items[2]->str, "x\"y"));
    jfree(v);
}

/* ============================================================================================= */
/* trace                                                                                         */
/* ============================================================================================= */

static void test_trace(void) {
    lt_ctx ctx = {0};
    const char *weird = "k\"q\\b\nl\x01z";
    lt_trace_event ev[] = {
        {.name = "lt_k0", .cat = "gemm", .ts_us = 0, .dur_us = 12.5, .flops = 2e9, .bytes = 1e8,
         .detail = "'fc' (Gemm)"},
        {.name = "lt_k1", .ts_us = 12.5, .dur_us = 3.25, .flops = 0, .bytes = 4096},
        {.name = weird, .cat = "host", .ts_us = 15.75, .dur_us = 1, .tid = 2},
        {.name = "run 1", .cat = "run", .ts_us = 0, .dur_us = 16.75, .tid = 1},
    };
    int n = 4;
    char path[400];
    snprintf(path, sizeof path, "%s/trace.json", tmpdir);
    CHECK_OK(lt_trace_write_chrome(&ctx, path, ev, n, "model.onnx"));
    char *text = read_text(path);
    CHECK(text != NULL);
    if (!text) return;
    jp j = {text, false};
    jval *root = jparse(&j);
    jws(&j);
    CHECK(!j.err && *j.p == 0);
    CHECK(root->t == J_OBJ);
    jval *te = jget(root, "traceEvents");
    CHECK(te && te->t == J_ARR);
    CHECK(jstr(root, "displayTimeUnit") && !strcmp(jstr(root, "displayTimeUnit"), "ms"));
    int n_x = 0, n_thread_names = 0;
    bool process_named = false;
    for (int i = 0; te && i < te->n; i++) {
        jval *e = te->items[i];
        const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
        double pid, tid, ts, dur;
        CHECK(e->t == J_OBJ && ph && name && jnum(e, "pid", &pid) && jnum(e, "tid", &tid) && pid == 1);
        if (!ph || !name) continue;
        if (!strcmp(ph, "M")) {
            jval *args = jget(e, "args");
            const char *an = jstr(args, "name");
            CHECK(an != NULL);
            if (!strcmp(name, "process_name")) process_named = an && !strcmp(an, "model.onnx");
            if (!strcmp(name, "thread_name")) {
                n_thread_names++;
                if (tid == 0) CHECK(an && !strcmp(an, "main"));
                if (tid == 2) CHECK(an && !strcmp(an, "lane 2"));
            }
            continue;
        }
        CHECK(!strcmp(ph, "X"));
        CHECK(n_x < n);
        if (n_x >= n) break;
        const lt_trace_event *want = &ev[n_x];
        CHECK(!strcmp(name, want->name));
        CHECK(!strcmp(jstr(e, "cat") ? jstr(e, "cat") : "", want->cat ? want->cat : "kernel"));
        CHECK(jnum(e, "ts", &ts) && fabs(ts - want->ts_us) < 1e-3);
        CHECK(jnum(e, "dur", &dur) && fabs(dur - want->dur_us) < 1e-3);
        CHECK(tid == want->tid);
        jval *args = jget(e, "args");
        double f, b;
        if (want->flops > 0 || want->bytes > 0) {
            CHECK(args && jnum(args, "flops", &f) && jnum(args, "bytes", &b) && f == want->flops && b == want->bytes);
        } else {
            CHECK(!args || !jget(args, "flops"));
        }
        if (want->detail) CHECK(jstr(args, "origin") && !strcmp(jstr(args, "origin"), want->detail));
        n_x++;
    }
    CHECK(n_x == n);
    CHECK(process_named);
    CHECK(n_thread_names == 3); /* lanes 0, 2, 1 */
    jfree(root);
    free(text);

    /* errors */
    lt_ctx e = {0};
    lt_trace_event badev = {.name = "neg", .ts_us = 1, .dur_us = -2};
    CHECK(lt_trace_write_chrome(&e, path, &badev, 1, NULL) == LT_ERR_USAGE && strstr(e.msg, "neg"));
    e = (lt_ctx){0};
    char nodir[500];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/t.json", tmpdir);
    CHECK(lt_trace_write_chrome(&e, nodir, ev, n, NULL) == LT_ERR_IO && strstr(e.msg, "t.json"));
    /* an empty trace is valid JSON too */
    lt_strbuf sb = {0};
    CHECK_OK(lt_trace_format_chrome(&ctx, NULL, 0, NULL, &sb));
    j = (jp){sb.s, false};
    root = jparse(&j);
    CHECK(!j.err && jget(root, "traceEvents") && jget(root, "traceEvents")->n == 2);
    jfree(root);
    lt_sb_free(&sb);
}

/* ============================================================================================= */
/* tune: database                                                                                */
/* ============================================================================================= */

static lt_schedule parse_sched(const char *text) {
    lt_schedule s;
    lt_ctx ctx = {0};
    s.n = 0;
    if (lt_tune_schedule_parse(&ctx, text, &s) != LT_OK) {
        fprintf(stderr, "schedule '%s': %s\n", text, ctx.msg);
        failures++;
    }
    return s;
}

static char *sched_str(const lt_schedule *s) {
    static char buf[4096];
    lt_strbuf sb = {0};
    lt_tune_schedule_format(s, &sb);
    snprintf(buf, sizeof buf, "%s", sb.s ? sb.s : "");
    lt_sb_free(&sb);
    return buf;
}

static void test_tune_db(void) {
    lt_ctx ctx = {0};
    /* schedule text */
    lt_schedule s = parse_sched("split j 16; vectorize j.i;parallel i");
    CHECK(s.n == 3 && s.steps[0].kind == LT_S_SPLIT && s.steps[0].factor == 16 && !strcmp(s.steps[1].loop, "j.i"));
    CHECK(!strcmp(sched_str(&s), "split j 16; vectorize j.i; parallel i"));
    lt_schedule empty = parse_sched("-");
    CHECK(empty.n == 0 && !strcmp(sched_str(&empty), "-"));
    lt_ctx e = {0};
    CHECK(lt_tune_schedule_parse(&e, "split j 16; frobnicate i", &s) == LT_ERR_INVALID && strstr(e.msg, "frobnicate"));
    s = parse_sched("split j 16; vectorize j.i; parallel i");

    /* keys */
    lt_tune_key k1, k2, k3;
    CHECK_OK(lt_tune_key_make(&ctx, "kernel one", 10, "cpu-avx512f", "64x256", &k1));
    CHECK_OK(lt_tune_key_make(&ctx, "kernel one", 10, "cpu-avx2", "64x256", &k2));
    CHECK_OK(lt_tune_key_make(&ctx, "kernel two", 10, "cpu-avx512f", NULL, &k3));
    CHECK(strlen(k1.hash) == 64 && !strcmp(k1.hash, k2.hash) && strcmp(k1.hash, k3.hash));
    e = (lt_ctx){0};
    CHECK(lt_tune_key_make(&e, "x", 1, "cpu\tbad", NULL, &k3) == LT_ERR_USAGE);
    e = (lt_ctx){0};
    CHECK(lt_tune_key_make(&e, "x", 1, "", NULL, &k3) == LT_ERR_USAGE);
    CHECK_OK(lt_tune_key_make(&ctx, "kernel two", 10, "cpu-avx512f", NULL, &k3));
    char target[64];
    lt_tune_target_cpu(target, sizeof target);
    CHECK(!strncmp(target, "cpu-", 4));

    lt_tune_db *db = NULL;
    CHECK_OK(lt_tune_db_new(&ctx, &db));
    if (!db) return;
    bool stored = false;
    CHECK_OK(lt_tune_db_insert(&ctx, db, &k1, &s, 2e-5, &stored));
    CHECK(stored);
    lt_schedule s2 = parse_sched("parallel i");
    CHECK_OK(lt_tune_db_insert(&ctx, db, &k2, &s2, 3e-5, &stored));
    CHECK_OK(lt_tune_db_insert(&ctx, db, &k3, &empty, 1e-3, &stored));
    CHECK(lt_tune_db_count(db) == 3);
    /* slower: kept out; faster: replaces */
    CHECK_OK(lt_tune_db_insert(&ctx, db, &k1, &s2, 5e-5, &stored));
    CHECK(!stored && lt_tune_db_lookup(db, &k1)->n_steps == 3);
    lt_schedule s3 = parse_sched("split j 8; vectorize j.i; parallel i; unroll j.o 2");
    CHECK_OK(lt_tune_db_insert(&ctx, db, &k1, &s3, 1e-5, &stored));
    CHECK(stored && lt_tune_db_count(db) == 3);
    const lt_tune_entry *en = lt_tune_db_lookup(db, &k1);
    CHECK(en && en->n_steps == 4 && en->time_s == 1e-5);
    lt_tune_key missing = k1;
    snprintf(missing.shapes, sizeof missing.shapes, "1x1");
    CHECK(lt_tune_db_lookup(db, &missing) == NULL);
    e = (lt_ctx){0};
    CHECK(lt_tune_db_insert(&e, db, &missing, &s, 0, NULL) == LT_ERR_USAGE);
    lt_schedule unreadable = parse_sched("split j 16");
    unreadable.steps[0].loop[0] = 0; /* "split  16" would not parse back */
    e = (lt_ctx){0};
    CHECK(lt_tune_db_insert(&e, db, &missing, &unreadable, 1, NULL) == LT_ERR_USAGE && strstr(e.msg, "read back"));
    snprintf(unreadable.steps[0].loop, sizeof unreadable.steps[0].loop, "j;k");
    e = (lt_ctx){0};
    CHECK(lt_tune_db_insert(&e, db, &missing, &unreadable, 1, NULL) == LT_ERR_USAGE);
    lt_tune_key badhash = k1;
    badhash.hash[3] = 'Z';
    e = (lt_ctx){0};
    CHECK(lt_tune_db_insert(&e, db, &badhash, &s, 1, NULL) == LT_ERR_USAGE && strstr(e.msg, "hex"));

    /* many entries: index growth, sorted file */
    for (int i = 0; i < 1000; i++) {
        char text[32];
        lt_tune_key k;
        snprintf(text, sizeof text, "kernel %d", i);
        CHECK_OK(lt_tune_key_make(&ctx, text, strlen(text), "cpu-avx512f", i % 3 ? "8x8" : NULL, &k));
        CHECK_OK(lt_tune_db_insert(&ctx, db, &k, i % 2 ? &s : &s2, 1e-6 * (i + 1), NULL));
    }
    CHECK(lt_tune_db_count(db) == 1003);

    char path[400];
    snprintf(path, sizeof path, "%s/tune.tsv", tmpdir);
    CHECK_OK(lt_tune_db_save(&ctx, db, path));
    lt_tune_db *db2 = NULL;
    CHECK_OK(lt_tune_db_new(&ctx, &db2));
    CHECK_OK(lt_tune_db_load(&ctx, db2, path));
    CHECK(lt_tune_db_count(db2) == 1003);
    for (int i = 0; i < lt_tune_db_count(db); i++) {
        const lt_tune_entry *a = lt_tune_db_get(db, i), *b = lt_tune_db_lookup(db2, &a->key);
        CHECK(b != NULL);
        if (!b) continue;
        CHECK(fabs(a->time_s - b->time_s) <= 1e-5 * a->time_s);
        lt_schedule sa, sb2;
        lt_tune_entry_schedule(a, &sa);
        lt_tune_entry_schedule(b, &sb2);
        char ta[4096];
        snprintf(ta, sizeof ta, "%s", sched_str(&sa));
        CHECK(!strcmp(ta, sched_str(&sb2)));
    }
    /* the file: header, then lines sorted by hash */
    char *text = read_text(path);
    CHECK(text && !strncmp(text, "# lathe tuning database v1\n", 27));
    if (text) {
        char prev[65] = "";
        int lines = 0;
        bool sorted = true;
        for (char *p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
            if (*p == '#') continue;
            lines++;
            if (strncmp(prev, p, 64) > 0) sorted = false;
            memcpy(prev, p, 64);
            prev[64] = 0;
        }
        CHECK(lines == 1003 && sorted);
        free(text);
    }
    /* loading merges: the same file again changes nothing */
    CHECK_OK(lt_tune_db_load(&ctx, db2, path));
    CHECK(lt_tune_db_count(db2) == 1003);
    /* a missing file is an empty database */
    char nofile[500];
    snprintf(nofile, sizeof nofile, "%s/absent.tsv", tmpdir);
    CHECK_OK(lt_tune_db_load(&ctx, db2, nofile));
    lt_tune_db_free(db2);

    /* malformed lines name file:line */
    char bad[400];
    snprintf(bad, sizeof bad, "%s/bad.tsv", tmpdir);
    char line[1024];
    const char *cases[][2] = {
        {"%s\tcpu\t-\t1e-5\tsplit j 16; nonsense\n", "nonsense"},
        {"%s\tcpu\t-\tfast\tsplit j 16\n", "time"},
        {"%s\tcpu\t-\t1e-5\n", "5 tab-separated"},
        {"abc\tcpu\t-\t1e-5\t-\n", "64 hex"},
        {"%s\tcpu\t-\t-1\t-\n", "positive"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[600];
        snprintf(body, sizeof body, cases[i][0], k1.hash);
        snprintf(line, sizeof line, "# header\n\n%s", body);
        write_text(bad, line);
        lt_tune_db *db3 = NULL;
        CHECK_OK(lt_tune_db_new(&ctx, &db3));
        e = (lt_ctx){0};
        CHECK(lt_tune_db_load(&e, db3, bad) == LT_ERR_INVALID && strstr(e.msg, "bad.tsv:3") && strstr(e.msg, cases[i][1]));
        lt_tune_db_free(db3);
    }
    lt_tune_db_free(db);
}

/* ============================================================================================= */
/* tune: search                                                                                  */
/* ============================================================================================= */

/* C[i*256 + j] = A[i*256 + j] + B[i*256 + j], i < 64, j < 256 */
static lt_kernel *build_add(lt_arena *a) {
    lt_kernel *k = lt_kernel_new(a, "add");
    lt_lbuf *C = lt_kernel_arg(k, "C", LT_FLOAT, 64 * 256), *A = lt_kernel_arg(k, "A", LT_FLOAT, 64 * 256),
            *B = lt_kernel_arg(k, "B", LT_FLOAT, 64 * 256);
    lt_lvar *i = lt_kernel_var(k, "i", LT_INT64), *j = lt_kernel_var(k, "j", LT_INT64);
    lt_lnode *idx = lt_l_add(k, lt_l_mul(k, lt_l_var(k, i), lt_l_int(k, 256)), lt_l_var(k, j));
    lt_lnode *st = lt_l_store(k, C, idx, lt_l_binary(k, LT_LOP_ADD, lt_l_load(k, A, idx), lt_l_load(k, B, idx)));
    lt_lnode *body = lt_l_for(k, i, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 64), LT_LOOP_SERIAL,
                              lt_l_for(k, j, LT_ROLE_NONE, lt_l_int(k, 0), lt_l_int(k, 256), LT_LOOP_SERIAL, st));
    if (!body) return NULL;
    k->body = body;
    return k;
}

/* The kernel key leaves names out: the same loops under other kernel and buffer names share a
 * key (a model's identical layers), other loops do not, and the names are left as they were. */
static void test_tune_key_names(void) {
    lt_arena a1, a2;
    lt_arena_init(&a1);
    lt_arena_init(&a2);
    lt_ctx ctx = {0};
    lt_kernel *k1 = build_add(&a1), *k2 = build_add(&a2);
    CHECK(k1 && k2);
    if (k1 && k2) {
        k2->name = "lt_k17";
        k2->args[0]->name = "layer_7_output";
        lt_tune_key x, y, z;
        CHECK_OK(lt_tune_key_kernel(&ctx, k1, "cpu-avx512f", "threads=2", &x));
        CHECK_OK(lt_tune_key_kernel(&ctx, k2, "cpu-avx512f", "threads=2", &y));
        CHECK(strcmp(x.hash, y.hash) == 0);
        CHECK(strcmp(k2->name, "lt_k17") == 0 && strcmp(k2->args[0]->name, "layer_7_output") == 0);
        CHECK(strcmp(k1->args[1]->name, "A") == 0);
        k2->args[0]->size = 1; /* other loops (a declared size differs): another key */
        CHECK_OK(lt_tune_key_kernel(&ctx, k2, "cpu-avx512f", "threads=2", &z));
        CHECK(strcmp(x.hash, z.hash) != 0);
    }
    lt_arena_free(&a1);
    lt_arena_free(&a2);
}

typedef struct model_stats {
    int vec_width;      /* of the innermost vectorized loop */
    int par_depth;      /* depth of the parallel loop, -1 none */
    bool unrolled, guarded;
} model_stats;

static void model_walk(const lt_lnode *n, int depth, model_stats *m) {
    if (!n) return;
    if (n->kind == LT_L_FOR) {
        int64_t e = 0;
        if (n->op == LT_LOOP_VECTORIZED && lt_lis_int(n->kids[1], &e)) m->vec_width = (int)e;
        if (n->op == LT_LOOP_PARALLEL) m->par_depth = depth;
        if (n->op == LT_LOOP_UNROLLED) m->unrolled = true;
        model_walk(n->kids[2], depth + 1, m);
        return;
    }
    if (n->kind == LT_L_IF) m->guarded = true;
    if (!lt_lnode_info_get(n->kind)->is_stmt) return;
    for (int i = 0; i < n->n; i++) model_walk(n->kids[i], depth, m);
}

typedef struct fake {
    int calls, fail_at;  /* fail_at > 0: return LT_ERR_IO on that call */
    bool reject8;        /* reject vector width 8 */
    const lt_kernel *expect_kernel;
    double expect_flops, expect_bytes; /* 0: the add kernel's */
    /* with `args` set: run every candidate through the Loop IR interpreter and compare output 0
     * (n_out floats, zeroed first) with `want` -- each schedule must compute what the original does */
    void **args;
    const float *want;
    int n_out, wrong, par_reduction;
} fake;

typedef struct par_names {
    int bad;
} par_names;

static bool find_par_r(const lt_lnode *n, void *user) {
    if (n->kind == LT_L_FOR && n->op == LT_LOOP_PARALLEL && n->var->name[0] == 'r') ((par_names *)user)->bad++;
    return true;
}

/* A cost model: 1 ms, divided by the vector width and by 2 for an outermost parallel loop (1.5 one
 * level down), x0.95 unrolled, x1.5 with a tail guard, + 1 us per step (fewer steps win ties). */
static lt_status fake_measure(void *user, lt_ctx *ctx, const lt_kernel *k, const lt_schedule *s, double *seconds) {
    fake *f = user;
    f->calls++;
    if (f->fail_at && f->calls == f->fail_at) return lt_error(ctx, LT_ERR_IO, "fake measure failed");
    double ef = f->expect_flops ? f->expect_flops : 64 * 256, eb = f->expect_bytes ? f->expect_bytes : 3 * 64 * 256 * 4;
    if (k != f->expect_kernel || k->flops != ef || k->bytes != eb) {
        failures++;
        fprintf(stderr, "measure got a kernel without its cost (flops %g, bytes %g)\n", k->flops, k->bytes);
    }
    if (f->args) {
        memset(f->args[0], 0, (size_t)f->n_out * sizeof(float));
        lt_ctx e = {0};
        if (lt_leval(&e, k, f->args, NULL, NULL) != LT_OK || memcmp(f->args[0], f->want, (size_t)f->n_out * sizeof(float))) {
            f->wrong++;
            fprintf(stderr, "schedule '%s' computes something else %s\n", sched_str(s), e.msg);
        }
        par_names pn = {0};
        lt_lwalk(k->body, find_par_r, &pn);
        f->par_reduction += pn.bad;
    }
    model_stats m = {1, -1, false, false};
    model_walk(k->body, 0, &m);
    if (f->reject8 && m.vec_width == 8) {
        *seconds = INFINITY;
        return LT_OK;
    }
    double t = 1e-3 / m.vec_width;
    if (m.par_depth == 0) t /= 2;
    else if (m.par_depth == 1) t /= 1.5;
    if (m.unrolled) t *= 0.95;
    if (m.guarded) t *= 1.5;
    *seconds = t + 1e-6 * s->n;
    return LT_OK;
}

static bool has_step(const lt_schedule *s, const char *text) {
    for (int i = 0; i < s->n; i++) {
        char line[256];
        lt_sstep_format(&s->steps[i], line, sizeof line);
        if (!strcmp(line, text)) return true;
    }
    return false;
}

static void test_tune_search(void) {
    lt_ctx ctx = {0};
    lt_arena a;
    lt_arena_init(&a);
    lt_kernel *k = build_add(&a);
    CHECK(k != NULL);
    if (!k) return;
    lt_kernel_cost(k);
    lt_lnode *body0 = k->body;
    int nv = k->n_vars, nbuf = k->n_bufs;

    fake f = {.reject8 = true, .expect_kernel = k};
    lt_tune_result r;
    memset(&r, 0, sizeof r);
    CHECK_OK(lt_tune_search(&ctx, k, NULL, fake_measure, &f, &r));
    double want = 1e-3 / 16 / 2 + 3e-6;
    fprintf(stderr, "tune: best %s (%.3g s, base %.3g s) after %d trials, %d rejected, %d rounds\n", sched_str(&r.best),
            r.best_s, r.base_s, r.trials, r.rejected, r.rounds);
    CHECK(NEAR(r.best_s, want));
    CHECK(NEAR(r.base_s, 1e-3));
    CHECK(r.best.n == 3 && has_step(&r.best, "split j 16") && has_step(&r.best, "vectorize j.i") &&
          has_step(&r.best, "parallel i"));
    CHECK(r.trials == f.calls && r.trials > 10 && r.rejected > 0);
    CHECK(r.rounds >= 2);
    /* the kernel is as it came */
    CHECK(k->body == body0 && k->n_vars == nv && k->n_bufs == nbuf);
    /* the best schedule replays on it, with the names the search used */
    CHECK_OK(lt_sched_apply_all(&ctx, k, &r.best));
    model_stats m = {1, -1, false, false};
    model_walk(k->body, 0, &m);
    CHECK(m.vec_width == 16 && m.par_depth == 0 && !m.guarded);
    CHECK(lt_kernel_find_var(k, "j.i") && !lt_kernel_find_var(k, "j.i_1"));
    k->body = body0, k->n_vars = nv, k->n_bufs = nbuf;

    /* a budget */
    fake f2 = {.expect_kernel = k};
    lt_tune_options o = {.max_trials = 5};
    CHECK_OK(lt_tune_search(&ctx, k, &o, fake_measure, &f2, &r));
    CHECK(r.trials == 5 && f2.calls == 5 && r.best_s < r.base_s);

    /* depth 1, beam 1, a restricted space: only parallel and vectorize-by-8 */
    static const int64_t w8[] = {8};
    fake f3 = {.expect_kernel = k};
    o = (lt_tune_options){.beam = 1, .depth = 1};
    o.space.vector_widths = w8, o.space.n_vector = 1, o.space.n_split = -1, o.space.n_unroll = -1;
    o.space.split_factors = NULL;
    CHECK_OK(lt_tune_search(&ctx, k, &o, fake_measure, &f3, &r));
    CHECK(r.rounds == 1 && r.best.n == 2 && has_step(&r.best, "split j 8") && NEAR(r.best_s, 1e-3 / 8 + 2e-6));
    /* candidates: parallel i, parallel j, split+vectorize j -- and the base */
    CHECK(r.trials == 4);

    /* starting from a base schedule */
    lt_schedule base = parse_sched("parallel i");
    fake f4 = {.expect_kernel = k};
    o = (lt_tune_options){.base = &base};
    CHECK_OK(lt_tune_search(&ctx, k, &o, fake_measure, &f4, &r));
    CHECK(NEAR(r.base_s, 1e-3 / 2 + 1e-6) && NEAR(r.best_s, want) && !strncmp(sched_str(&r.best), "parallel i; ", 12));

    /* errors: a base that does not apply; a measure failure (kernel still restored) */
    lt_schedule nosuch = parse_sched("split nosuch 4");
    o = (lt_tune_options){.base = &nosuch};
    lt_ctx e = {0};
    fake f5 = {.expect_kernel = k};
    CHECK(lt_tune_search(&e, k, &o, fake_measure, &f5, &r) == LT_ERR_INVALID && strstr(e.msg, "split nosuch 4"));
    e = (lt_ctx){0};
    fake f6 = {.fail_at = 3, .expect_kernel = k};
    CHECK(lt_tune_search(&e, k, NULL, fake_measure, &f6, &r) == LT_ERR_IO && strstr(e.msg, "fake measure"));
    CHECK(k->body == body0 && k->n_vars == nv && k->n_bufs == nbuf);
    e = (lt_ctx){0};
    CHECK(lt_tune_search(&e, k, NULL, NULL, NULL, &r) == LT_ERR_USAGE);

    /* with the database: a miss searches and stores, a hit measures nothing */
    lt_tune_db *db = NULL;
    CHECK_OK(lt_tune_db_new(&ctx, &db));
    lt_tune_key key;
    CHECK_OK(lt_tune_key_kernel(&ctx, k, "cpu-test", "64x256", &key));
    bool hit = true;
    fake f7 = {.expect_kernel = k};
    CHECK_OK(lt_tune_kernel(&ctx, db, &key, k, NULL, fake_measure, &f7, &r, &hit));
    CHECK(!hit && f7.calls > 0 && lt_tune_db_count(db) == 1);
    char first[4096];
    snprintf(first, sizeof first, "%s", sched_str(&r.best));
    fake f8 = {.expect_kernel = k};
    CHECK_OK(lt_tune_kernel(&ctx, db, &key, k, NULL, fake_measure, &f8, &r, &hit));
    CHECK(hit && f8.calls == 0 && r.trials == 0 && !strcmp(first, sched_str(&r.best)) && NEAR(r.best_s, want));
    /* the key is that of the unscheduled kernel: same text, same key */
    lt_tune_key again;
    CHECK_OK(lt_tune_key_kernel(&ctx, k, "cpu-test", "64x256", &again));
    CHECK(!strcmp(again.hash, key.hash));
    lt_tune_db_free(db);

    /* every candidate computes what the original does (Loop IR interpreter) */
    static float A[64 * 256], B[64 * 256], C[64 * 256], ref[64 * 256];
    for (int i = 0; i < 64 * 256; i++) A[i] = (float)(i % 97) * 0.25f - 3.0f, B[i] = (float)(i % 13) * 1.5f;
    void *args[3] = {C, A, B};
    CHECK_OK(lt_leval(&ctx, k, args, NULL, NULL));
    memcpy(ref, C, sizeof ref);
    CHECK(ref[5] == A[5] + B[5]);
    fake f9 = {.expect_kernel = k, .args = args, .want = ref, .n_out = 64 * 256};
    CHECK_OK(lt_tune_search(&ctx, k, NULL, fake_measure, &f9, &r));
    CHECK(f9.calls > 10 && f9.wrong == 0);
    lt_arena_free(&a);

    /* a reduction: C[i] += A[i*64 + r]. Parallel is offered for i (and its splits), never for r. */
    lt_arena_init(&a);
    lt_kernel *red = lt_kernel_new(&a, "rowsum");
    lt_lbuf *Cb = lt_kernel_arg(red, "C", LT_FLOAT, 32), *Ab = lt_kernel_arg(red, "A", LT_FLOAT, 32 * 64);
    lt_lvar *vi = lt_kernel_var(red, "i", LT_INT64), *vr = lt_kernel_var(red, "r", LT_INT64);
    lt_lnode *ci = lt_l_var(red, vi);
    lt_lnode *acc = lt_l_store(red, Cb, ci,
                               lt_l_binary(red, LT_LOP_ADD, lt_l_load(red, Cb, ci),
                                           lt_l_load(red, Ab, lt_l_add(red, lt_l_mul(red, ci, lt_l_int(red, 64)),
                                                                       lt_l_var(red, vr)))));
    red->body = lt_l_for(red, vi, LT_ROLE_NONE, lt_l_int(red, 0), lt_l_int(red, 32), LT_LOOP_SERIAL,
                         lt_l_for(red, vr, LT_ROLE_NONE, lt_l_int(red, 0), lt_l_int(red, 64), LT_LOOP_SERIAL, acc));
    CHECK(red->body != NULL);
    if (red->body) {
        lt_kernel_cost(red);
        static float RC[32], RW[32];
        void *rargs[2] = {RC, A};
        CHECK_OK(lt_leval(&ctx, red, rargs, NULL, NULL));
        memcpy(RW, RC, sizeof RW);
        fake f10 = {.expect_kernel = red, .expect_flops = red->flops, .expect_bytes = red->bytes, .args = rargs,
                    .want = RW, .n_out = 32};
        o = (lt_tune_options){.depth = 3, .beam = 6};
        CHECK_OK(lt_tune_search(&ctx, red, &o, fake_measure, &f10, &r));
        CHECK(f10.calls > 10 && f10.wrong == 0 && f10.par_reduction == 0);
        CHECK(has_step(&r.best, "parallel i") || has_step(&r.best, "parallel i.o"));
        fprintf(stderr, "tune (reduction): best %s after %d trials\n", sched_str(&r.best), r.trials);
    }
    lt_arena_free(&a);
}

/* ============================================================================================= */
/* out of memory: every allocation failing in turn gives LT_ERR_NOMEM, never a crash or a leak    */
/* ============================================================================================= */

static long oom_countdown = -1; /* < 0: never fail */
static bool oom_hit;

static void *oom_alloc(void *u, size_t n) {
    (void)u;
    if (oom_countdown >= 0 && oom_countdown-- == 0) return oom_hit = true, NULL;
    return malloc(n ? n : 1);
}
static void *oom_realloc(void *u, void *p, size_t n) {
    (void)u;
    if (oom_countdown >= 0 && oom_countdown-- == 0) return oom_hit = true, NULL;
    return realloc(p, n ? n : 1);
}
static void oom_free(void *u, void *p) {
    (void)u;
    free(p);
}

/* One pass over the allocating entry points; returns the first failing status (or LT_OK). */
static lt_status oom_scenario(const char *dir) {
    lt_ctx ctx = {0};
    lt_status st = LT_OK;
    lt_ceilings c;
    memset(&c, 0, sizeof c);
    c.peak_gflops = 100, c.mem_gbps = 10, c.threads = 1;
    lt_prof_record r[3] = {{.name = "a", .time_s = 1, .flops = 1, .bytes = 1},
                           {.name = "b", .time_s = 2, .flops = 5, .bytes = 1},
                           {.name = "c", .time_s = 3}};
    lt_strbuf sb = {0};
    lt_profile_options po = {.sort_by_time = true};
    st = lt_profile_report(&ctx, &c, r, 3, &po, &sb, NULL);
    lt_sb_free(&sb);
    if (st != LT_OK) return st;
    lt_trace_event ev[2] = {{.name = "a", .dur_us = 1}, {.name = "b\"", .ts_us = 1, .dur_us = 2, .tid = 1}};
    char path[600];
    snprintf(path, sizeof path, "%s/oom.json", dir);
    if ((st = lt_trace_write_chrome(&ctx, path, ev, 2, NULL)) != LT_OK) return st;
    snprintf(path, sizeof path, "%s/oom_ceil", dir);
    if ((st = lt_ceilings_save(&ctx, path, &c)) != LT_OK) return st;

    lt_tune_db *db = NULL;
    if ((st = lt_tune_db_new(&ctx, &db)) != LT_OK) return st;
    lt_tune_key k;
    lt_schedule sched = parse_sched("split i 4; parallel i.o; vectorize j");
    for (int i = 0; i < 40 && st == LT_OK; i++) {
        char text[16];
        snprintf(text, sizeof text, "k%d", i);
        st = lt_tune_key_make(&ctx, text, strlen(text), "cpu", NULL, &k);
        sched.n = i % 3;
        if (st == LT_OK) st = lt_tune_db_insert(&ctx, db, &k, &sched, 1.0 + i, NULL);
    }
    snprintf(path, sizeof path, "%s/oom.tsv", dir);
    if (st == LT_OK) st = lt_tune_db_save(&ctx, db, path);
    if (st == LT_OK) st = lt_tune_db_load(&ctx, db, path);
    lt_tune_db_free(db);
    if (st != LT_OK) return st;

    lt_arena a;
    lt_arena_init(&a);
    long saved = oom_countdown;
    oom_countdown = -1; /* the kernel itself is built normally */
    lt_kernel *kern = build_add(&a);
    if (kern) lt_kernel_cost(kern);
    oom_countdown = saved;
    if (!kern) {
        lt_arena_free(&a);
        return LT_ERR_NOMEM;
    }
    fake f = {.expect_kernel = kern};
    lt_tune_result res;
    lt_tune_options o = {.max_trials = 12};
    st = lt_tune_search(&ctx, kern, &o, fake_measure, &f, &res);
    lt_arena_free(&a);
    return st;
}

static void test_oom(void) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/oom", tmpdir);
    mkdir(dir, 0700);
    lt_allocator al = {oom_alloc, oom_realloc, oom_free, NULL};
    lt_set_allocator(&al);
    int passes = 0, nomem = 0;
    bool finished = false;
    for (long n = 0; n < 100000; n++) {
        oom_countdown = n;
        oom_hit = false;
        lt_status st = oom_scenario(dir);
        passes++;
        if (!oom_hit) {
            if (st != LT_OK) fprintf(stderr, "oom scenario without a failure gave %s\n", lt_status_name(st));
            CHECK(st == LT_OK);
            finished = true;
            break;
        }
        /* LT_OK is allowed: lt_kernel_cost degrades to no variable bounds when its scratch fails,
         * which for this kernel (constant extents) computes the same cost */
        if (st == LT_ERR_NOMEM) nomem++;
        else if (st != LT_OK) {
            fprintf(stderr, "allocation %ld failing gave %s, not NOMEM\n", n, lt_status_name(st));
            failures++;
            break;
        }
    }
    oom_countdown = -1;
    lt_set_allocator(NULL);
    CHECK(finished && nomem > 20);
    fprintf(stderr, "oom: %d passes, %d out of memory\n", passes, nomem);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/lathe_test_profile_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_report();
    test_json_parser();
    test_trace();
    test_tune_db();
    test_tune_search();
    test_tune_key_names();
    test_oom();
    test_ceilings();
    rm_rf(tmpdir);
    if (failures) {
        fprintf(stderr, "test_profile: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_profile: all passed\n");
    return 0;
}
