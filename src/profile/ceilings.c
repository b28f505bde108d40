/* ceilings.c — measuring this machine's peak FP32 FMA rate and memory bandwidth (profile.h).
 *
 * A "team" runs one body on T threads (T-1 pthreads plus the caller as thread 0) between
 * barriers: calibrate the repetition count until one trial lasts min_seconds, then time `trials`
 * trials and keep the fastest (interference from other processes only slows a trial down).
 *   FMA: every thread runs 12 independent chains of vector FMAs (acc += x*y) in inline assembly, so
 *        the measured loop is exactly what we mean whatever the library's optimization level: 12
 *        chains cover FMA latency x throughput (4 cycles x 2 ports) on current x86 cores. AVX-512
 *        and AVX2+FMA variants are picked with __builtin_cpu_supports; both are timed where both
 *        exist (some cores run 512-bit FMAs on one port only) and the faster wins. Portable C
 *        elsewhere. The rate is the sum over threads of each thread's own fastest trial (timed by
 *        the thread itself while all run together): FMA units belong to a core, so on a busy
 *        machine a thread descheduled in one trial still shows its core's rate in another.
 *   Memory: copy a[i] = b[i] and triad a[i] = b[i] + s*c[i] on float arrays much larger than the
 *        last-level cache, each thread on its own contiguous part, which it touched first (so pages
 *        land on its NUMA node). Bytes are counted as STREAM does: 8 per copied element, 12 per
 *        triad element. The loops use the widest vectors the CPU has (GCC vector extensions in
 *        functions compiled with target attributes). The cache ceiling runs the same triad on small
 *        per-thread arrays.
 * Invariants: nothing here prints or reads the environment; every thread started is joined; a
 * failure to start threads is LT_ERR_INTERNAL after joining those that did start.
 */
#define _GNU_SOURCE
#include "profile.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/private_file.h"

#if defined(__x86_64__)
#define LT_X86 1
#include <cpuid.h>
#else
#define LT_X86 0
#endif

#define MIB ((int64_t)1 << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------
 * CPU identification
 * ------------------------------------------------------------------------------------------- */

void lt_cpu_model_name(char *buf, size_t n) {
    if (!n) return;
    snprintf(buf, n, "unknown");
#if LT_X86
    unsigned int r[12], a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000004u) return;
    for (unsigned i = 0; i < 3; i++) {
        __get_cpuid(0x80000002u + i, &a, &b, &c, &d);
        r[i * 4 + 0] = a, r[i * 4 + 1] = b, r[i * 4 + 2] = c, r[i * 4 + 3] = d;
    }
    char raw[49];
    memcpy(raw, r, 48);
    raw[48] = 0;
    /* trim, collapse runs of blanks */
    size_t o = 0;
    bool space = true;
    for (const char *p = raw; *p && o + 1 < n; p++) {
        bool sp = *p == ' ' || *p == '\t';
        if (sp && space) continue;
        buf[o++] = sp ? ' ' : *p;
        space = sp;
    }
    while (o && buf[o - 1] == ' ') o--;
    if (o) buf[o] = 0;
    else snprintf(buf, n, "unknown");
#endif
}

int lt_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0) return c;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

static bool have_avx512(void) {
#if LT_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

static bool have_avx2_fma(void) {
#if LT_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

const char *lt_ceilings_isa(void) { return have_avx512() ? "avx512f" : have_avx2_fma() ? "avx2" : "portable"; }

static int64_t llc_bytes(void) {
    long v = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v <= 0) v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return v > 0 ? (int64_t)v : 0;
}

/* ---------------------------------------------------------------------------------------------
 * FMA kernels: `iters` iterations of 12 independent vector FMAs; return FLOPs per iteration.
 * ------------------------------------------------------------------------------------------- */

enum { FMA_AVX512, FMA_AVX2, FMA_PORTABLE };

#if LT_X86
#define FMA12(R)                                                                                   \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "0\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "1\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "2\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "3\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "4\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "5\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "6\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "7\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "8\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "9\n\t"                                               \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "10\n\t"                                              \
    "vfmadd231ps %%" R "13, %%" R "12, %%" R "11\n\t"
#define FMA_CLOBBERS                                                                               \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
        "xmm12", "xmm13", "cc", "memory"

__attribute__((target("avx512f"))) static void fma_avx512(int64_t iters, float *sink) {
    static const float xy = 1e-3f;
    float out = 0;
    __asm__ volatile("vbroadcastss %[c], %%zmm12\n\t"
                     "vbroadcastss %[c], %%zmm13\n\t"
                     "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
                     "vmovaps %%zmm0, %%zmm1\n\t"
                     "vmovaps %%zmm0, %%zmm2\n\t"
                     "vmovaps %%zmm0, %%zmm3\n\t"
                     "vmovaps %%zmm0, %%zmm4\n\t"
                     "vmovaps %%zmm0, %%zmm5\n\t"
                     "vmovaps %%zmm0, %%zmm6\n\t"
                     "vmovaps %%zmm0, %%zmm7\n\t"
                     "vmovaps %%zmm0, %%zmm8\n\t"
                     "vmovaps %%zmm0, %%zmm9\n\t"
                     "vmovaps %%zmm0, %%zmm10\n\t"
                     "vmovaps %%zmm0, %%zmm11\n\t"
                     ".p2align 4\n\t"
                     "1:\n\t" FMA12("zmm") "dec %[n]\n\t"
                     "jnz 1b\n\t"
                     "vaddps %%zmm1, %%zmm0, %%zmm0\n\t"
                     "vmovss %%xmm0, %[out]\n\t"
                     "vzeroupper\n\t"
                     : [n] "+r"(iters), [out] "=m"(out)
                     : [c] "m"(xy)
                     : FMA_CLOBBERS);
    *sink += out;
}

__attribute__((target("avx2,fma"))) static void fma_avx2(int64_t iters, float *sink) {
    static const float xy = 1e-3f;
    float out = 0;
    __asm__ volatile("vbroadcastss %[c], %%ymm12\n\t"
                     "vbroadcastss %[c], %%ymm13\n\t"
                     "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
                     "vmovaps %%ymm0, %%ymm1\n\t"
                     "vmovaps %%ymm0, %%ymm2\n\t"
                     "vmovaps %%ymm0, %%ymm3\n\t"
                     "vmovaps %%ymm0, %%ymm4\n\t"
                     "vmovaps %%ymm0, %%ymm5\n\t"
                     "vmovaps %%ymm0, %%ymm6\n\t"
                     "vmovaps %%ymm0, %%ymm7\n\t"
                     "vmovaps %%ymm0, %%ymm8\n\t"
                     "vmovaps %%ymm0, %%ymm9\n\t"
                     "vmovaps %%ymm0, %%ymm10\n\t"
                     "vmovaps %%ymm0, %%ymm11\n\t"
                     ".p2align 4\n\t"
                     "1:\n\t" FMA12("ymm") "dec %[n]\n\t"
                     "jnz 1b\n\t"
                     "vaddps %%ymm1, %%ymm0, %%ymm0\n\t"
                     "vmovss %%xmm0, %[out]\n\t"
                     "vzeroupper\n\t"
                     : [n] "+r"(iters), [out] "=m"(out)
                     : [c] "m"(xy)
                     : FMA_CLOBBERS);
    *sink += out;
}
#endif

/* 8 chains of 4-lane multiply-adds in plain C (the compiler may or may not fuse them). Each chain is
 * a floating-point recurrence, which no compiler may shortcut without -ffast-math, and the result
 * is stored, so every iteration runs. */
static void fma_portable(int64_t iters, float *sink) {
    typedef float v4 __attribute__((vector_size(16)));
    v4 acc[8] = {{0}}, x = {1e-3f, 1e-3f, 1e-3f, 1e-3f};
    for (int64_t it = 0; it < iters; it++)
        for (int j = 0; j < 8; j++) acc[j] = acc[j] * x + x;
    v4 sum = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
    *sink += sum[0] + sum[3];
}

static double fma_flops_per_iter(int isa) {
    switch (isa) {
    case FMA_AVX512: return 12.0 * 16 * 2;
    case FMA_AVX2: return 12.0 * 8 * 2;
    default: return 8.0 * 4 * 2;
    }
}

static void fma_run(int isa, int64_t iters, float *sink) {
#if LT_X86
    if (isa == FMA_AVX512) { fma_avx512(iters, sink); return; }
    if (isa == FMA_AVX2) { fma_avx2(iters, sink); return; }
#endif
    fma_portable(iters, sink);
}

/* ---------------------------------------------------------------------------------------------
 * Streaming kernels over [0, n) floats; n is a multiple of STREAM_BLOCK, pointers 64-byte aligned.
 * ------------------------------------------------------------------------------------------- */

#define STREAM_BLOCK 256 /* floats per chunk unit (1 KiB): a multiple of 4 vectors of every width */

/* The timed loops measure the hardware, so sanitizer builds leave them uninstrumented (each thread
 * touches only its own part of arrays this file allocated; nothing is shared while they run). */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
#define LT_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread")))
#endif
#endif
#ifndef LT_UNINSTRUMENTED
#define LT_UNINSTRUMENTED
#endif

#define LT_STREAM_FNS(SUF, ATTR, VBYTES)                                                           \
    ATTR static void copy_##SUF(float *restrict a, const float *restrict b, int64_t n) {           \
        typedef float vt __attribute__((vector_size(VBYTES), may_alias));                          \
        const int64_t w = VBYTES / 4;                                                              \
        for (int64_t i = 0; i < n; i += 4 * w) {                                                   \
            vt x0 = *(const vt *)(b + i), x1 = *(const vt *)(b + i + w);                          \
            vt x2 = *(const vt *)(b + i + 2 * w), x3 = *(const vt *)(b + i + 3 * w);              \
            *(vt *)(a + i) = x0, *(vt *)(a + i + w) = x1;                                          \
            *(vt *)(a + i + 2 * w) = x2, *(vt *)(a + i + 3 * w) = x3;                              \
        }                                                                                          \
    }                                                                                              \
    ATTR static void triad_##SUF(float *restrict a, const float *restrict b, const float *restrict c, \
                                 float s, int64_t n) {                                             \
        typedef float vt __attribute__((vector_size(VBYTES), may_alias));                          \
        const int64_t w = VBYTES / 4;                                                              \
        vt sv = {0};                                                                               \
        sv += s;                                                                                   \
        for (int64_t i = 0; i < n; i += 4 * w) {                                                   \
            vt x0 = *(const vt *)(b + i) + sv * *(const vt *)(c + i);                              \
            vt x1 = *(const vt *)(b + i + w) + sv * *(const vt *)(c + i + w);                      \
            vt x2 = *(const vt *)(b + i + 2 * w) + sv * *(const vt *)(c + i + 2 * w);              \
            vt x3 = *(const vt *)(b + i + 3 * w) + sv * *(const vt *)(c + i + 3 * w);              \
            *(vt *)(a + i) = x0, *(vt *)(a + i + w) = x1;                                          \
            *(vt *)(a + i + 2 * w) = x2, *(vt *)(a + i + 3 * w) = x3;                              \
        }                                                                                          \
    }

LT_STREAM_FNS(v16, LT_UNINSTRUMENTED, 16)
#if LT_X86
LT_STREAM_FNS(avx512, LT_UNINSTRUMENTED __attribute__((target("avx512f"))), 64)
LT_STREAM_FNS(avx2, LT_UNINSTRUMENTED __attribute__((target("avx2"))), 32)
#endif

static void stream_copy(int isa, float *a, const float *b, int64_t n) {
#if LT_X86
    if (isa == FMA_AVX512) { copy_avx512(a, b, n); return; }
    if (isa == FMA_AVX2) { copy_avx2(a, b, n); return; }
#endif
    copy_v16(a, b, n);
}

static void stream_triad(int isa, float *a, const float *b, const float *c, int64_t n) {
#if LT_X86
    if (isa == FMA_AVX512) { triad_avx512(a, b, c, 0.5f, n); return; }
    if (isa == FMA_AVX2) { triad_avx2(a, b, c, 0.5f, n); return; }
#endif
    triad_v16(a, b, c, 0.5f, n);
}

/* ---------------------------------------------------------------------------------------------
 * The team: run jobs on T threads between barriers, calibrate, keep the fastest trial.
 * ------------------------------------------------------------------------------------------- */

typedef enum { JOB_FMA, JOB_COPY, JOB_TRIAD } job_kind;

#define FMA_ITERS_PER_REP (1 << 14)

typedef struct team team;
typedef struct member {
    team *t;
    int tid;
    float *a, *b, *c; /* this thread's part of the arrays (memory jobs), n floats each */
    int64_t n;
    float sink;       /* FMA results land here so nothing is dead code */
    double own_sec_per_rep[2]; /* out: this thread's own fastest counted round, per job */
} member;

struct team {
    int threads, trials, isa;
    double min_s;
    int n_jobs;
    job_kind jobs[2];
    double sec_per_rep[2]; /* out: the fastest trial's seconds per repetition, per job */
    member *m;
    pthread_barrier_t bar;
    /* start gate: members wait until every thread exists (or the start is abandoned) */
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    int gate;              /* 0 waiting, 1 go, -1 abandon */
    /* the round in progress: written by thread 0 between barriers, read by all after them */
    int64_t reps;
    bool counted; /* the round just run was a timed trial (not calibration) */
    bool done;
};

static void run_body(member *me, job_kind job, int64_t reps) {
    team *t = me->t;
    for (int64_t r = 0; r < reps; r++) {
        switch (job) {
        case JOB_FMA: fma_run(t->isa, FMA_ITERS_PER_REP, &me->sink); break;
        case JOB_COPY: stream_copy(t->isa, me->a, me->b, me->n); break;
        case JOB_TRIAD: stream_triad(t->isa, me->a, me->b, me->c, me->n); break;
        }
    }
}

static void barrier(team *t) {
    if (t->threads > 1) pthread_barrier_wait(&t->bar);
}

static void member_work(member *me) {
    team *t = me->t;
    for (int64_t i = 0; i < me->n; i++) me->a[i] = 0.0f, me->b[i] = 1.0f, me->c[i] = 2.0f; /* first touch */
    for (int j = 0; j < t->n_jobs; j++) {
        bool calibrating = true;
        int trial = 0;
        double best = INFINITY;
        if (me->tid == 0) t->reps = 1, t->done = false;
        barrier(t);
        double own_best = INFINITY;
        for (;;) {
            double t0 = now_s();
            run_body(me, t->jobs[j], t->reps);
            double own = now_s() - t0;
            barrier(t); /* every thread finished this round */
            if (me->tid == 0) {
                double dt = now_s() - t0;
                t->counted = !(calibrating && dt < t->min_s);
                if (!t->counted) {
                    double scale = dt > 0 ? 1.25 * t->min_s / dt : 1000;
                    scale = scale < 2 ? 2 : scale > 1000 ? 1000 : scale;
                    t->reps = (int64_t)((double)t->reps * scale);
                } else {
                    calibrating = false;
                    if (dt < best) best = dt;
                    t->done = ++trial >= t->trials;
                }
            }
            barrier(t); /* thread 0's decision is visible */
            if (t->counted && own < own_best) own_best = own;
            if (t->done) break;
        }
        me->own_sec_per_rep[j] = own_best / (double)t->reps;
        barrier(t); /* everyone has read `done` before thread 0 resets it for the next job */
        if (me->tid == 0) t->sec_per_rep[j] = best / (double)t->reps;
    }
}

static void *member_main(void *arg) {
    member *me = arg;
    team *t = me->t;
    pthread_mutex_lock(&t->gate_mu);
    while (t->gate == 0) pthread_cond_wait(&t->gate_cv, &t->gate_mu);
    int gate = t->gate;
    pthread_mutex_unlock(&t->gate_mu);
    if (gate > 0) member_work(me);
    return NULL;
}

static void open_gate(team *t, int value) {
    pthread_mutex_lock(&t->gate_mu);
    t->gate = value;
    pthread_cond_broadcast(&t->gate_cv);
    pthread_mutex_unlock(&t->gate_mu);
}

/* Run t->jobs on t->threads threads (members already set up). */
static lt_status team_run(lt_ctx *ctx, team *t) {
    pthread_t *th = lt_calloc(ctx, (size_t)t->threads, sizeof *th, "ceilings threads");
    if (!th) return LT_ERR_NOMEM;
    if (t->threads > 1 && pthread_barrier_init(&t->bar, NULL, (unsigned)t->threads) != 0) {
        lt_mem_free(th);
        return lt_error(ctx, LT_ERR_INTERNAL, "ceilings: cannot create a barrier for %d threads", t->threads);
    }
    pthread_mutex_init(&t->gate_mu, NULL);
    pthread_cond_init(&t->gate_cv, NULL);
    t->gate = 0;
    int started = 1, err = 0;
    for (int i = 1; i < t->threads && !err; i++)
        if (!(err = pthread_create(&th[i], NULL, member_main, &t->m[i]))) started++;
    open_gate(t, err ? -1 : 1);
    if (!err) member_work(&t->m[0]);
    for (int i = 1; i < started; i++) pthread_join(th[i], NULL);
    lt_mem_free(th);
    pthread_cond_destroy(&t->gate_cv);
    pthread_mutex_destroy(&t->gate_mu);
    if (t->threads > 1) pthread_barrier_destroy(&t->bar);
    if (err)
        return lt_error(ctx, LT_ERR_INTERNAL, "ceilings: cannot start thread %d of %d: %s", started, t->threads,
                        strerror(err));
    return LT_OK;
}

/* FMA peak of `isa` on `threads` threads, GFLOP/s. */
static lt_status measure_fma(lt_ctx *ctx, int isa, int threads, const lt_ceilings_options *o, double *gflops) {
    member *m = lt_calloc(ctx, (size_t)threads, sizeof *m, "ceilings threads");
    if (!m) return LT_ERR_NOMEM;
    team t = {.threads = threads, .trials = o->trials, .isa = isa, .min_s = o->min_seconds, .n_jobs = 1,
              .jobs = {JOB_FMA}, .m = m};
    for (int i = 0; i < threads; i++) m[i].t = &t, m[i].tid = i;
    lt_status s = team_run(ctx, &t);
    if (s != LT_OK) {
        lt_mem_free(m);
        return s;
    }
    /* The sum of each thread's own best rate: FMA units are per core, so a thread that was
     * descheduled in some trials (a busy machine) still shows what its core can do in another. */
    double flops = FMA_ITERS_PER_REP * fma_flops_per_iter(isa), sum = 0;
    for (int i = 0; i < threads; i++)
        if (m[i].own_sec_per_rep[0] > 0 && isfinite(m[i].own_sec_per_rep[0])) sum += flops / m[i].own_sec_per_rep[0];
    *gflops = sum * 1e-9;
    lt_mem_free(m);
    return LT_OK;
}

/* Copy and triad bandwidth (GB/s) over `total_bytes` of arrays split across the threads. */
static lt_status measure_stream(lt_ctx *ctx, int isa, int threads, int64_t total_bytes, bool triad_only,
                                const lt_ceilings_options *o, double *copy_gbps, double *triad_gbps,
                                int64_t *used_bytes) {
    int64_t part = total_bytes / 3 / (int64_t)sizeof(float) / threads / STREAM_BLOCK * STREAM_BLOCK;
    if (part < STREAM_BLOCK) part = STREAM_BLOCK;
    int64_t per_array = part * threads; /* floats */
    size_t bytes = (size_t)per_array * sizeof(float);
    uint8_t *block = lt_mem_alloc(3 * bytes + 64);
    if (!block)
        return lt_error(ctx, LT_ERR_NOMEM, "ceilings: out of memory (%lld MiB of bandwidth arrays)",
                        (long long)((3 * (int64_t)bytes) >> 20));
    float *base = (float *)(void *)(((uintptr_t)block + 63) & ~(uintptr_t)63);
    member *m = lt_calloc(ctx, (size_t)threads, sizeof *m, "ceilings threads");
    if (!m) {
        lt_mem_free(block);
        return LT_ERR_NOMEM;
    }
    team t = {.threads = threads, .trials = o->trials, .isa = isa, .min_s = o->min_seconds, .m = m};
    if (!triad_only) t.jobs[t.n_jobs++] = JOB_COPY;
    t.jobs[t.n_jobs++] = JOB_TRIAD;
    for (int i = 0; i < threads; i++) {
        m[i].t = &t, m[i].tid = i, m[i].n = part;
        m[i].a = base + (int64_t)i * part;
        m[i].b = base + per_array + (int64_t)i * part;
        m[i].c = base + 2 * per_array + (int64_t)i * part;
    }
    lt_status s = team_run(ctx, &t);
    lt_mem_free(m);
    lt_mem_free(block);
    if (s != LT_OK) return s;
    int j = 0;
    if (!triad_only) {
        *copy_gbps = t.sec_per_rep[j] > 0 ? 8.0 * (double)per_array / t.sec_per_rep[j] * 1e-9 : 0;
        j++;
    }
    *triad_gbps = t.sec_per_rep[j] > 0 ? 12.0 * (double)per_array / t.sec_per_rep[j] * 1e-9 : 0;
    *used_bytes = 3 * (int64_t)bytes;
    return LT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------------------------- */

lt_status lt_ceilings_measure_opt(lt_ctx *ctx, const lt_ceilings_options *opt, lt_ceilings *out) {
    lt_ceilings_options o = opt ? *opt : (lt_ceilings_options){0};
    if (o.threads < 0 || o.mem_bytes < 0 || o.trials < 0 || !(o.min_seconds >= 0) || o.min_seconds > 60)
        return lt_error(ctx, LT_ERR_USAGE, "ceilings: bad options (threads %d, mem_bytes %lld, trials %d, min_seconds %g)",
                        o.threads, (long long)o.mem_bytes, o.trials, o.min_seconds);
    if (o.threads > 1024) return lt_error(ctx, LT_ERR_USAGE, "ceilings: %d threads is too many", o.threads);
    if (o.mem_bytes > ((int64_t)1 << 36))
        return lt_error(ctx, LT_ERR_USAGE, "ceilings: %lld bytes of bandwidth arrays is more than 64 GiB", (long long)o.mem_bytes);
    if (!o.threads) o.threads = lt_cpu_count();
    if (!o.trials) o.trials = 8;
    if (o.min_seconds == 0) o.min_seconds = 0.02;
    int64_t llc = llc_bytes();
    if (!o.mem_bytes) {
        o.mem_bytes = 4 * llc > 256 * MIB ? 4 * llc : 256 * MIB;
        if (o.mem_bytes > 1024 * MIB) o.mem_bytes = 1024 * MIB;
    }

    lt_ceilings c;
    memset(&c, 0, sizeof c);
    c.threads = o.threads;
    c.llc_bytes = llc;
    lt_cpu_model_name(c.cpu, sizeof c.cpu);

    /* FMA: every ISA this CPU has (the widest is not always the fastest), best wins. */
    int isas[3], n_isa = 0;
    if (have_avx512()) isas[n_isa++] = FMA_AVX512;
    if (have_avx2_fma()) isas[n_isa++] = FMA_AVX2;
    if (!n_isa) isas[n_isa++] = FMA_PORTABLE;
    static const char *const isa_names[] = {"avx512f", "avx2", "portable"};
    int best_isa = isas[0];
    for (int i = 0; i < n_isa; i++) {
        double g;
        LT_TRY(measure_fma(ctx, isas[i], o.threads, &o, &g));
        if (g > c.peak_gflops) c.peak_gflops = g, best_isa = isas[i];
    }
    snprintf(c.isa, sizeof c.isa, "%s", isa_names[best_isa]);
    if (o.threads == 1) c.peak_gflops_1t = c.peak_gflops;
    else LT_TRY(measure_fma(ctx, best_isa, 1, &o, &c.peak_gflops_1t));
    /* T threads can always do what one does: a lower team number only means a busy machine */
    if (c.peak_gflops < c.peak_gflops_1t) c.peak_gflops = c.peak_gflops_1t;

    /* Memory: the widest vectors for the loads and stores. */
    int mem_isa = isas[0];
    LT_TRY(measure_stream(ctx, mem_isa, o.threads, o.mem_bytes, false, &o, &c.copy_gbps, &c.triad_gbps, &c.mem_bytes));
    c.mem_gbps = c.copy_gbps > c.triad_gbps ? c.copy_gbps : c.triad_gbps;
    /* Cache: 3 x 128 KiB per thread, inside any recent core's L2. */
    double unused;
    int64_t cache_used;
    LT_TRY(measure_stream(ctx, mem_isa, o.threads, (int64_t)o.threads * 384 * 1024, true, &o, &unused, &c.cache_gbps,
                          &cache_used));

    if (!(c.peak_gflops > 0) || !(c.mem_gbps > 0) || !isfinite(c.peak_gflops) || !isfinite(c.mem_gbps))
        return lt_error(ctx, LT_ERR_INTERNAL, "ceilings: measurement gave no usable numbers (peak %g GFLOP/s, %g GB/s)",
                        c.peak_gflops, c.mem_gbps);
    c.measured_at = time(NULL);
    *out = c;
    return LT_OK;
}

lt_status lt_ceilings_measure(lt_ctx *ctx, int threads, lt_ceilings *out) {
    lt_ceilings_options o = {.threads = threads};
    if (threads < 0) return lt_error(ctx, LT_ERR_USAGE, "ceilings: thread count %d is negative", threads);
    return lt_ceilings_measure_opt(ctx, &o, out);
}

/* ---------------------------------------------------------------------------------------------
 * The cache file: "key = value" lines, '#' comments.
 * ------------------------------------------------------------------------------------------- */

void lt_ceilings_path(const char *dir, int threads, char *buf, size_t n) {
    if (threads <= 0) threads = lt_cpu_count();
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    snprintf(buf, n, "%.*s/ceilings-%dt.txt", (int)dl, dir, threads);
}

lt_status lt_ceilings_save(lt_ctx *ctx, const char *dir, const lt_ceilings *c) {
    if (!dir || !*dir) return lt_error(ctx, LT_ERR_USAGE, "ceilings: no cache directory given");
    if (c->threads < 1) return lt_error(ctx, LT_ERR_USAGE, "ceilings: thread count %d is not >= 1", c->threads);
    LT_TRY(lt_private_dir_prepare(ctx, dir, "cache folder"));
    char path[4200];
    lt_ceilings_path(dir, c->threads, path, sizeof path);
    lt_strbuf b = {0};
    lt_sb_printf(&b,
                 "# lathe machine ceilings (lathe ceilings); delete this file to measure again\n"
                 "version = 1\ncpu = %s\nthreads = %d\nisa = %s\n"
                 "peak_gflops = %.6g\npeak_gflops_1t = %.6g\nmem_gbps = %.6g\ncopy_gbps = %.6g\n"
                 "triad_gbps = %.6g\ncache_gbps = %.6g\nllc_bytes = %lld\nmem_bytes = %lld\nmeasured_at = %lld\n",
                 c->cpu, c->threads, c->isa, c->peak_gflops, c->peak_gflops_1t, c->mem_gbps, c->copy_gbps,
                 c->triad_gbps, c->cache_gbps, (long long)c->llc_bytes, (long long)c->mem_bytes,
                 (long long)c->measured_at);
    if (b.failed) {
        lt_sb_free(&b);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (formatting %s)", path);
    }
    lt_status s = lt_private_write_atomic(ctx, path, b.s, b.len);
    lt_sb_free(&b);
    return s;
}

static bool parse_double(const char *v, double *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(d)) return false;
    *out = d;
    return true;
}

static bool parse_ll(const char *v, long long *out) {
    char *end;
    errno = 0;
    long long d = strtoll(v, &end, 10);
    if (end == v || *end || errno) return false;
    *out = d;
    return true;
}

lt_status lt_ceilings_load(lt_ctx *ctx, const char *dir, int threads, lt_ceilings *out, bool *found) {
    if (!dir || !*dir) return lt_error(ctx, LT_ERR_USAGE, "ceilings: no cache directory given");
    char path[4200];
    lt_ceilings_path(dir, threads, path, sizeof path);
    if (threads <= 0) threads = lt_cpu_count();
    *found = false;
    if (access(path, F_OK) != 0) return LT_OK;
    uint8_t *raw; /* NUL-terminated: lines are cut in place */
    size_t size;
    LT_TRY(lt_private_read(ctx, path, "ceilings file", (int64_t)1 << 20, &raw, &size));
    char *data = (char *)raw;
    lt_ceilings c;
    memset(&c, 0, sizeof c);
    bool have_peak = false, have_bw = false, have_threads = false, have_cpu = false;
    lt_status s = LT_OK;
    int line_no = 0;
    char *p = data, *end = data + size;
    while (p < end && s == LT_OK) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *line = p, *le = nl ? nl : end;
        p = nl ? nl + 1 : end;
        line_no++;
        *le = 0;
        while (*line == ' ' || *line == '\t') line++;
        size_t ll = strlen(line);
        while (ll && (line[ll - 1] == ' ' || line[ll - 1] == '\t' || line[ll - 1] == '\r')) line[--ll] = 0;
        if (!*line || *line == '#') continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            s = lt_error(ctx, LT_ERR_INVALID, "%s:%d: expected 'key = value'", path, line_no);
            break;
        }
        char *key = line, *val = eq + 1;
        char *ke = eq;
        while (ke > key && (ke[-1] == ' ' || ke[-1] == '\t')) ke--;
        *ke = 0;
        while (*val == ' ' || *val == '\t') val++;
        double d = 0;
        long long i = 0;
        bool ok = true;
        if (!strcmp(key, "cpu")) snprintf(c.cpu, sizeof c.cpu, "%s", val), have_cpu = true;
        else if (!strcmp(key, "isa")) snprintf(c.isa, sizeof c.isa, "%s", val);
        else if (!strcmp(key, "version")) ok = parse_ll(val, &i) && i == 1;
        else if (!strcmp(key, "threads")) ok = parse_ll(val, &i) && i >= 1 && i <= 1024, c.threads = (int)i, have_threads = ok;
        else if (!strcmp(key, "peak_gflops")) ok = parse_double(val, &d) && d > 0, c.peak_gflops = d, have_peak = ok;
        else if (!strcmp(key, "mem_gbps")) ok = parse_double(val, &d) && d > 0, c.mem_gbps = d, have_bw = ok;
        else if (!strcmp(key, "peak_gflops_1t")) ok = parse_double(val, &d) && d >= 0, c.peak_gflops_1t = d;
        else if (!strcmp(key, "copy_gbps")) ok = parse_double(val, &d) && d >= 0, c.copy_gbps = d;
        else if (!strcmp(key, "triad_gbps")) ok = parse_double(val, &d) && d >= 0, c.triad_gbps = d;
        else if (!strcmp(key, "cache_gbps")) ok = parse_double(val, &d) && d >= 0, c.cache_gbps = d;
        else if (!strcmp(key, "llc_bytes")) ok = parse_ll(val, &i) && i >= 0, c.llc_bytes = i;
        else if (!strcmp(key, "mem_bytes")) ok = parse_ll(val, &i) && i >= 0, c.mem_bytes = i;
        else if (!strcmp(key, "measured_at")) ok = parse_ll(val, &i), c.measured_at = (time_t)i;
        /* unknown keys: written by a newer lathe; ignored */
        if (!ok) s = lt_error(ctx, LT_ERR_INVALID, "%s:%d: bad value '%.80s' for %s", path, line_no, val, key);
    }
    lt_mem_free(data);
    if (s != LT_OK) return s;
    if (!have_peak || !have_bw || !have_threads || !have_cpu)
        return lt_error(ctx, LT_ERR_INVALID, "%s: missing %s", path,
                        !have_peak ? "peak_gflops" : !have_bw ? "mem_gbps" : !have_threads ? "threads" : "cpu");
    char here[96];
    lt_cpu_model_name(here, sizeof here);
    if (strcmp(here, c.cpu) != 0 || c.threads != threads) return LT_OK; /* another machine: stale */
    *out = c;
    *found = true;
    return LT_OK;
}

lt_status lt_ceilings_get(lt_ctx *ctx, const char *dir, int threads, bool remeasure, lt_ceilings *out,
                          bool *cached) {
    bool found = false;
    if (cached) *cached = false;
    if (dir && !remeasure) LT_TRY(lt_ceilings_load(ctx, dir, threads, out, &found));
    if (found) {
        if (cached) *cached = true;
        return LT_OK;
    }
    lt_ceilings c;
    LT_TRY(lt_ceilings_measure(ctx, threads, &c));
    if (dir) LT_TRY(lt_ceilings_save(ctx, dir, &c));
    *out = c;
    return LT_OK;
}

void lt_ceilings_format(const lt_ceilings *c, lt_strbuf *out) {
    char when[64] = "unknown";
    struct tm tm;
    if (c->measured_at && localtime_r(&c->measured_at, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    lt_sb_printf(out, "cpu              %s (%d thread%s)\n", c->cpu, c->threads, c->threads == 1 ? "" : "s");
    lt_sb_printf(out, "peak FP32 FMA    %.1f GFLOP/s (%s; 1 thread: %.1f)\n", c->peak_gflops, c->isa, c->peak_gflops_1t);
    lt_sb_printf(out, "memory bandwidth %.1f GB/s (copy %.1f, triad %.1f; over %.0f MiB)\n", c->mem_gbps, c->copy_gbps,
                 c->triad_gbps, (double)c->mem_bytes / (double)MIB);
    lt_sb_printf(out, "cache bandwidth  %.1f GB/s (triad in L2)\n", c->cache_gbps);
    if (c->mem_gbps > 0) lt_sb_printf(out, "ridge point      %.1f FLOP/byte\n", c->peak_gflops / c->mem_gbps);
    lt_sb_printf(out, "measured         %s\n", when);
}
