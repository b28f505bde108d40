/* target.c — the host CPU's part of every target (target.h): SIMD width, caches, memory, thread
 * count and architecture, read once per compile; and the target's one-paragraph description. */
#include "target.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int lt_target_host_lanes(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx2")) return 8;
#endif
    return 4;
}

int lt_target_threads(int threads) {
    if (threads > 0) return threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

static int64_t sys_value(int name) {
    long v = name >= 0 ? sysconf(name) : -1;
    return v > 0 ? (int64_t)v : 0;
}

uint32_t lt_target_lang_dtypes(const lt_lang *lang) {
    uint32_t m = 0;
    for (int d = 1; lang && d < LT_DTYPE_COUNT && d < 32; d++)
        if (lang->type_names[d]) m |= 1u << d;
    return m;
}

bool lt_target_dtype_ok(const lt_target *t, lt_dtype d) { return d > 0 && d < 32 && (t->dtypes >> d & 1u); }

void lt_target_host(const lt_target_options *opt, lt_target *t) {
    lt_target_options none = {0};
    if (!opt) opt = &none;
    memset(t, 0, sizeof *t);
    t->name = "cpu";
    t->lang = &lt_lang_c;
    t->source_ext = "c";
#if defined(__x86_64__)
    snprintf(t->arch, sizeof t->arch, "x86_64");
#elif defined(__aarch64__)
    snprintf(t->arch, sizeof t->arch, "aarch64");
#endif
    t->vector_lanes = opt->vector_lanes > 0 ? opt->vector_lanes : lt_target_host_lanes();
    t->microkernels = !opt->no_microkernels;
    t->dtypes = lt_target_lang_dtypes(t->lang);
    t->threads_requested = opt->threads > 0 ? opt->threads : 0;
    t->threads = lt_target_threads(opt->threads);
#ifdef _SC_LEVEL1_DCACHE_SIZE
    t->cache_l1 = sys_value(_SC_LEVEL1_DCACHE_SIZE);
    t->cache_l2 = sys_value(_SC_LEVEL2_CACHE_SIZE);
    t->cache_l3 = sys_value(_SC_LEVEL3_CACHE_SIZE);
#endif
    t->memory_bytes = sys_value(_SC_PHYS_PAGES) * sys_value(_SC_PAGESIZE);
    t->host_memory = true;
    t->tune_db = true;
    t->layout_nchwc = true;
    t->int8_gemm = true;
}

void lt_target_print(const lt_target *t, lt_strbuf *out) {
    lt_sb_printf(out, "target %s (%s%s%s): %s, %d thread(s)", t->name, t->arch[0] ? t->arch : "?",
                 t->device_name[0] ? ", " : "", t->device_name, t->gpu_blocks ? "GPU blocks" : "parallel loops",
                 t->threads);
    if (t->gpu_blocks)
        lt_sb_printf(out, ", %d SMs, warp %d, <= %d threads/block, %lld B shared/block%s", t->sm_count, t->warp_size,
                     t->max_threads_per_block, (long long)t->shared_mem_per_block, t->wgmma ? ", wgmma" : "");
    else
        lt_sb_printf(out, ", %d f32 lanes, caches %lld/%lld/%lld B", t->vector_lanes, (long long)t->cache_l1,
                     (long long)t->cache_l2, (long long)t->cache_l3);
    lt_sb_printf(out, "%s%s%s%s%s\n", t->microkernels ? ", microkernels" : "", t->runs_loop_ir ? ", runs Loop IR" : "",
                 t->tune_db ? ", tuning database" : "", t->layout_nchwc ? ", NCHWc layout" : "",
                 t->int8_gemm ? ", int8 GEMM" : "");
}
