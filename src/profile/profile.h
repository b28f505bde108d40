/* profile.h — machine ceilings, the roofline report and Chrome/Perfetto trace export.
 *
 * Ceilings (ceilings.c). lt_ceilings_measure times this machine's peak FP32 FMA rate (independent
 * chains of FMAs in AVX-512, AVX2+FMA or portable C, picked at run time with cpuid; one chain set
 * per thread, pthreads) and its sustained memory bandwidth (STREAM-like copy and triad over arrays
 * several times the last-level cache, split across the threads, each thread touching its own part
 * first). The best of a few timed trials is kept, because on a shared machine interference only
 * ever makes a run slower. lt_ceilings_save / lt_ceilings_load keep the numbers in a small text
 * file in a cache directory the CALLER names (the library never reads the environment; the CLI
 * picks the default directory), one file per thread count; a file written on another CPU model is
 * treated as absent. lt_ceilings_get = load, or measure and save.
 *
 * Roofline report (report.c). Given per-kernel records {name, kind, time (median), FLOPs, bytes}
 * (FLOPs and bytes are the static costs of the kernel's Loop IR, lt_kernel_cost), lt_profile_row
 * computes:
 *     achieved   GFLOP/s = flops / time,  GB/s = bytes / time
 *     intensity  flops / bytes (FLOP per byte)
 *     bound      the roofline: min(peak, intensity x bandwidth) GFLOP/s; equivalently the least
 *                time the kernel can take, t_bound = max(flops / peak, bytes / bandwidth)
 *     % of bound t_bound / time x 100 (= achieved / bound for kernels that compute; a kernel with
 *                no FLOPs, such as a transpose, is measured against bandwidth alone)
 *     binds      COMPUTE when flops / peak >= bytes / bandwidth, else MEMORY; NONE for a record
 *                with neither FLOPs nor bytes (host steps run through the interpreter).
 * lt_profile_report formats the table (one row per record, optionally sorted by time and cut to
 * the top N) and a totals row: summed time, FLOPs and bytes, and % of bound = the sum of the
 * rows' t_bound over the summed time (how close the whole model runs to its roofline).
 * More than 100% of bound is possible and meaningful: the bandwidth ceiling is DRAM's, and a
 * kernel whose data sits in cache can beat it.
 *
 * A ceiling no kernel can beat: the FP32 peak, and the L2 cache bandwidth (or DRAM's when larger).
 * A record above one of them by more than 5% (LT_PROFILE_OVER) is counted in the totals
 * (n_over_ceiling, the worst one's index): the ceilings it was compared with are wrong -- cached
 * from an earlier measurement on a busier machine, or taken under load -- and should be measured
 * again.
 *
 * Roofline plot (plot_svg.c). lt_roofline_svg draws the same records as an SVG picture: log-log
 * axes (FLOP/byte across, GFLOP/s up), the DRAM and L2 bandwidth and peak ceilings as lines, each
 * record a circle (class "kernel") with its area by time and its colour by kind, a legend, and a
 * strip under the chart for records with no FLOPs or no bytes. Self-contained (no scripts, no
 * external references); lt_roofline_svg_write writes it atomically.
 *
 * Trace (trace.c). lt_trace_write_chrome writes the Chrome trace-event JSON format
 * ({"traceEvents": [...]}), which chrome://tracing and ui.perfetto.dev open: one complete event
 * (ph "X") per record with ts / dur in microseconds and args {flops, bytes, ...}, plus metadata
 * events naming the process and threads. The file is written atomically (temp file + rename).
 *
 * Errors: statuses with the message on ctx naming the file (and line) or the record at fault.
 * Nothing prints. Entry points: lt_ceilings_measure[_opt], lt_ceilings_load/save/get,
 * lt_ceilings_format, lt_profile_row, lt_profile_report, lt_profile_median, lt_roofline_svg[_write],
 * lt_trace_write_chrome, lt_trace_format_chrome.
 */
#ifndef LT_PROFILE_H
#define LT_PROFILE_H

#include <stdint.h>
#include <time.h>

#include "../base/base.h"

/* ---------------------------------------------------------------------------------------------
 * Machine ceilings (ceilings.c)
 * ------------------------------------------------------------------------------------------- */

typedef struct lt_ceilings {
    double peak_gflops;   /* FP32 FMA peak over `threads` threads, GFLOP/s (an FMA is 2 FLOPs) */
    double mem_gbps;      /* sustained DRAM bandwidth over `threads` threads, GB/s (1e9 bytes/s):
                           * the better of copy and triad, bytes counted as STREAM does (read +
                           * written, no write-allocate traffic) -- the way lt_kernel_cost counts */
    double copy_gbps;     /* a[i] = b[i] */
    double triad_gbps;    /* a[i] = b[i] + s * c[i] */
    double cache_gbps;    /* triad over arrays that fit the per-core L2: the cache ceiling (info) */
    double peak_gflops_1t;/* single-thread FMA peak (info) */
    int threads;          /* threads the numbers are for (>= 1) */
    char isa[16];         /* the FMA kernel that gave the peak: "avx512f", "avx2", "portable" */
    char cpu[96];         /* CPU model ("Intel(R) Xeon(R) ..."), from cpuid (or "unknown") */
    int64_t llc_bytes;    /* last-level cache size used to size the arrays (0: unknown) */
    int64_t mem_bytes;    /* total bytes of the arrays the bandwidth was measured over */
    time_t measured_at;   /* when (seconds since the epoch) */
} lt_ceilings;

/* Measurement knobs; zero fields take the defaults. */
typedef struct lt_ceilings_options {
    int threads;          /* 0: every CPU this process may run on */
    int64_t mem_bytes;    /* total bytes of the three arrays; 0: max(4 x LLC, 256 MiB), capped
                           * at 1 GiB (smaller values measure caches, not DRAM) */
    double min_seconds;   /* length of each timed trial; 0: 0.02 s */
    int trials;           /* timed trials per measurement (the best is kept); 0: 8 */
} lt_ceilings_options;

/* Measure with the defaults (threads 0 = all CPUs this process may use). Takes about a second.
 * Errors: LT_ERR_NOMEM (arrays), LT_ERR_INTERNAL (threads could not be started). */
lt_status lt_ceilings_measure(lt_ctx *ctx, int threads, lt_ceilings *out);
lt_status lt_ceilings_measure_opt(lt_ctx *ctx, const lt_ceilings_options *opt, lt_ceilings *out);

/* This machine's CPU model name (cpuid brand string, trimmed) into buf; "unknown" elsewhere. */
void lt_cpu_model_name(char *buf, size_t n);
/* The FMA kernel lt_ceilings_measure would use here: "avx512f", "avx2" or "portable". */
const char *lt_ceilings_isa(void);
/* CPUs this process may run on (sched_getaffinity), at least 1. */
int lt_cpu_count(void);

/* "<dir>/ceilings-<threads>t.txt" into buf (threads 0 is resolved to lt_cpu_count()). */
void lt_ceilings_path(const char *dir, int threads, char *buf, size_t n);
/* Write c to lt_ceilings_path(dir, c->threads), creating dir (mode 0700) if needed; atomic. */
lt_status lt_ceilings_save(lt_ctx *ctx, const char *dir, const lt_ceilings *c);
/* Read the cached ceilings for `threads`. *found = false (and LT_OK) when the file is absent or
 * was measured on another CPU model; LT_ERR_INVALID naming the file and line when it is malformed. */
lt_status lt_ceilings_load(lt_ctx *ctx, const char *dir, int threads, lt_ceilings *out, bool *found);
/* Load from dir (unless remeasure or dir is NULL), else measure and, with a dir, save.
 * *cached (may be NULL) says whether the numbers came from the file. */
lt_status lt_ceilings_get(lt_ctx *ctx, const char *dir, int threads, bool remeasure, lt_ceilings *out,
                          bool *cached);
/* Human-readable summary, several lines ("peak FP32 FMA  150.2 GFLOP/s (avx512f, 2 threads)" ...). */
void lt_ceilings_format(const lt_ceilings *c, lt_strbuf *out);

/* ---------------------------------------------------------------------------------------------
 * Roofline report (report.c)
 * ------------------------------------------------------------------------------------------- */

/* One kernel (or host step) to report. */
typedef struct lt_prof_record {
    const char *name;     /* "lt_k3", or the op type of a host step */
    const char *kind;     /* a short class shown in the table: "elemwise", "reduce", "gemm", "host" */
    const char *detail;   /* optional (NULL): what it runs, e.g. "'conv1' (Conv), 'relu1' (Relu)" */
    double time_s;        /* median wall time of one run, seconds (> 0 to compute rates) */
    double flops;         /* static FLOPs per run */
    double bytes;         /* static bytes moved per run (global loads + stores) */
    int calls;            /* runs of it the time is a median over (info; 0 = not shown) */
} lt_prof_record;

typedef enum lt_bound_kind { LT_BOUND_NONE, LT_BOUND_COMPUTE, LT_BOUND_MEMORY } lt_bound_kind;
const char *lt_bound_kind_name(lt_bound_kind b); /* "-", "compute", "memory" */

/* What the roofline says about one record. */
typedef struct lt_prof_row {
    double gflops;        /* achieved GFLOP/s (0 if no time) */
    double gbps;          /* achieved GB/s */
    double intensity;     /* FLOP/byte; 0 when bytes == 0 */
    double bound_gflops;  /* min(peak, intensity x bandwidth); peak when bytes == 0 and flops > 0;
                           * 0 when flops == 0 */
    double bound_s;       /* t_bound = max(flops / peak, bytes / bandwidth) */
    double pct_of_bound;  /* 100 x bound_s / time_s; 0 when there is no time or no bound */
    lt_bound_kind binds;
} lt_prof_row;

/* Roofline math for one record. LT_ERR_USAGE when the ceilings are not positive or the record has
 * a negative or non-finite time / FLOPs / bytes (the message names the record). */
lt_status lt_profile_row(lt_ctx *ctx, const lt_ceilings *c, const lt_prof_record *r, lt_prof_row *out);

typedef struct lt_profile_options {
    bool sort_by_time;    /* rows by decreasing time (default: the given order) */
    int top;              /* show at most this many rows (0: all); the totals cover every record */
    bool show_detail;     /* print each record's detail under its row */
    const char *title;    /* first line (NULL: none) */
} lt_profile_options;

/* Totals over all records (what the table's last row shows). */
typedef struct lt_profile_totals {
    int n;
    double time_s, flops, bytes, bound_s;
    double gflops, gbps, pct_of_bound;
    double compute_bound_s, memory_bound_s; /* sum of bound_s over rows of each binding kind */
    int n_over_ceiling;   /* records faster than the peak or the cache bandwidth allow (stale ceilings) */
    int worst_over;       /* the record furthest above its bound among those (-1: none) */
    double worst_pct;     /* its % of bound */
} lt_profile_totals;

/* A record runs above a ceiling when its GFLOP/s or GB/s exceed the peak or the cache bandwidth
 * (DRAM's if larger) by this factor. */
#define LT_PROFILE_OVER 1.05
bool lt_profile_over_ceiling(const lt_ceilings *c, const lt_prof_row *w);

/* Append the table to out: a header with the ceilings and the ridge point (peak / bandwidth, in
 * FLOP/byte), one row per record
 *   kernel kind time(ms) %time GFLOP MB GFLOP/s GB/s FLOP/B bound(GFLOP/s) %bound binds
 * and a totals row. opt and totals may be NULL. Errors as lt_profile_row. */
lt_status lt_profile_report(lt_ctx *ctx, const lt_ceilings *c, const lt_prof_record *recs, int n,
                            const lt_profile_options *opt, lt_strbuf *out, lt_profile_totals *totals);

/* Median of v[0..n) (sorts v in place); 0 for n <= 0. The mean of the two middle values for even n. */
double lt_profile_median(double *v, int n);

/* ---------------------------------------------------------------------------------------------
 * Roofline plot (plot_svg.c)
 * ------------------------------------------------------------------------------------------- */

/* Append the SVG document to out; title (NULL: "roofline") is its first line. Errors as
 * lt_profile_row (bad ceilings or records), LT_ERR_NOMEM. */
lt_status lt_roofline_svg(lt_ctx *ctx, const lt_ceilings *c, const lt_prof_record *recs, int n, const char *title,
                          lt_strbuf *out);
/* The same written atomically to path (LT_ERR_IO naming it). */
lt_status lt_roofline_svg_write(lt_ctx *ctx, const char *path, const lt_ceilings *c, const lt_prof_record *recs, int n,
                                const char *title);

/* ---------------------------------------------------------------------------------------------
 * Trace export (trace.c)
 * ------------------------------------------------------------------------------------------- */

typedef struct lt_trace_event {
    const char *name;     /* kernel name */
    const char *cat;      /* category (NULL: "kernel"): the pattern kind, "host", "run" ... */
    double ts_us;         /* start, microseconds from any fixed origin (>= 0) */
    double dur_us;        /* duration, microseconds (>= 0) */
    int tid;              /* lane of the timeline (0: main) */
    double flops, bytes;  /* static cost, written into args (omitted when both are 0) */
    const char *detail;   /* optional: args.origin */
} lt_trace_event;

/* Format events as Chrome trace JSON into out. process_name (NULL: "lathe") names the process row. */
lt_status lt_trace_format_chrome(lt_ctx *ctx, const lt_trace_event *ev, int n, const char *process_name,
                                 lt_strbuf *out);
/* Format and write atomically to path. Errors name the file (LT_ERR_IO) or the event (LT_ERR_USAGE:
 * negative or non-finite times). */
lt_status lt_trace_write_chrome(lt_ctx *ctx, const char *path, const lt_trace_event *ev, int n,
                                const char *process_name);

#endif
