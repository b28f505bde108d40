/* report.c — the roofline report: per-kernel achieved rates against the machine's ceilings.
 *
 * lt_profile_row is the math for one record (see profile.h for the definitions); the bound is
 * computed as a least time, t_bound = max(flops / peak, bytes / bandwidth), so records with FLOPs
 * but no bytes (everything in registers), bytes but no FLOPs (copies, transposes) and neither
 * (host steps) all get a meaningful answer. lt_profile_report formats the table: fixed columns,
 * the kernel column as wide as the longest name (at most 40 characters), "-" where a number does not
 * apply, a totals row over every record even when only the top N rows are shown. Records faster
 * than a ceiling allows (lt_profile_over_ceiling) are counted in the totals, for the caller's hint.
 * Entry points: lt_profile_row, lt_profile_report, lt_profile_median, lt_bound_kind_name,
 * lt_profile_over_ceiling.
 */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_W 40
#define KIND_MAX_W 18

const char *lt_bound_kind_name(lt_bound_kind b) {
    switch (b) {
    case LT_BOUND_COMPUTE: return "compute";
    case LT_BOUND_MEMORY: return "memory";
    default: return "-";
    }
}

static bool bad_number(double v) { return !isfinite(v) || v < 0; }

lt_status lt_profile_row(lt_ctx *ctx, const lt_ceilings *c, const lt_prof_record *r, lt_prof_row *out) {
    if (!c || !(c->peak_gflops > 0) || !(c->mem_gbps > 0) || !isfinite(c->peak_gflops) || !isfinite(c->mem_gbps))
        return lt_error(ctx, LT_ERR_USAGE, "roofline: the ceilings are not positive (peak %g GFLOP/s, bandwidth %g GB/s)",
                        c ? c->peak_gflops : 0.0, c ? c->mem_gbps : 0.0);
    const char *name = r->name ? r->name : "(unnamed)";
    if (bad_number(r->time_s) || bad_number(r->flops) || bad_number(r->bytes))
        return lt_error(ctx, LT_ERR_USAGE, "roofline: record '%s' has a negative or non-finite time %g s, %g FLOPs or %g bytes",
                        name, r->time_s, r->flops, r->bytes);
    lt_prof_row w;
    memset(&w, 0, sizeof w);
    double peak = c->peak_gflops * 1e9, bw = c->mem_gbps * 1e9;
    if (r->time_s > 0) {
        w.gflops = r->flops / r->time_s * 1e-9;
        w.gbps = r->bytes / r->time_s * 1e-9;
    }
    w.intensity = r->bytes > 0 ? r->flops / r->bytes : 0;
    double t_compute = r->flops / peak, t_memory = r->bytes / bw;
    w.bound_s = t_compute > t_memory ? t_compute : t_memory;
    if (r->flops == 0 && r->bytes == 0) w.binds = LT_BOUND_NONE;
    else w.binds = t_compute >= t_memory ? LT_BOUND_COMPUTE : LT_BOUND_MEMORY;
    if (r->flops > 0) w.bound_gflops = r->flops / w.bound_s * 1e-9; /* = min(peak, intensity x bandwidth) */
    if (r->time_s > 0 && w.bound_s > 0) w.pct_of_bound = 100.0 * w.bound_s / r->time_s;
    *out = w;
    return LT_OK;
}

bool lt_profile_over_ceiling(const lt_ceilings *c, const lt_prof_row *w) {
    double bw = c->cache_gbps > c->mem_gbps ? c->cache_gbps : c->mem_gbps;
    return w->gflops > LT_PROFILE_OVER * c->peak_gflops || w->gbps > LT_PROFILE_OVER * bw;
}

double lt_profile_median(double *v, int n) {
    if (n <= 0) return 0;
    /* insertion sort: n is a run count (tens), and it keeps this free of a comparator */
    for (int i = 1; i < n; i++) {
        double x = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > x) v[j + 1] = v[j], j--;
        v[j + 1] = x;
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- formatting ---- */

/* v with at least 3 significant digits, 1 to 6 decimals (0.000155, 0.698, 12.9, 187.2, 2600.1). */
static const char *sig(char *buf, size_t n, double v) {
    int prec = v > 0 ? 2 - (int)floor(log10(v)) : 1;
    prec = prec < 1 ? 1 : prec > 6 ? 6 : prec;
    snprintf(buf, n, "%.*f", prec, v);
    return buf;
}

/* A number in a right-aligned field, or "-" when it does not apply (prec < 0: sig()). */
static void num(lt_strbuf *b, int w, int prec, bool show, double v) {
    char tmp[64];
    if (!show) lt_sb_printf(b, " %*s", w, "-");
    else if (prec < 0) lt_sb_printf(b, " %*s", w, sig(tmp, sizeof tmp, v));
    else lt_sb_printf(b, " %*.*f", w, prec, v);
}

static void pct(lt_strbuf *b, int w, bool show, double v) {
    if (show) lt_sb_printf(b, " %*.1f%%", w - 1, v);
    else lt_sb_printf(b, " %*s", w, "-");
}

/* s truncated to w characters ("..." ending when cut), left-aligned in w. */
static void text(lt_strbuf *b, int w, const char *s) {
    int n = (int)strlen(s);
    if (n <= w) lt_sb_printf(b, "%-*s", w, s);
    else lt_sb_printf(b, "%.*s...", w - 3, s);
}

static int cmp_time_desc(const void *a, const void *b, const lt_prof_record *recs) {
    int i = *(const int *)a, j = *(const int *)b;
    double ti = recs[i].time_s, tj = recs[j].time_s;
    if (ti != tj) return ti > tj ? -1 : 1;
    return i - j; /* stable */
}

/* Sort idx[0..n) by decreasing time (insertion sort into a merge-free stable order). */
static void sort_by_time(int *idx, int n, const lt_prof_record *recs) {
    for (int i = 1; i < n; i++) {
        int x = idx[i], j = i - 1;
        while (j >= 0 && cmp_time_desc(&idx[j], &x, recs) > 0) idx[j + 1] = idx[j], j--;
        idx[j + 1] = x;
    }
}

#define COLS " %9s %6s %9s %9s %9s %9s %7s %11s %8s  %s\n"

lt_status lt_profile_report(lt_ctx *ctx, const lt_ceilings *c, const lt_prof_record *recs, int n,
                            const lt_profile_options *opt, lt_strbuf *out, lt_profile_totals *totals) {
    lt_profile_options o = opt ? *opt : (lt_profile_options){0};
    if (n < 0 || (n > 0 && !recs)) return lt_error(ctx, LT_ERR_USAGE, "roofline report: %d records", n);
    lt_prof_row *rows = n ? lt_calloc(ctx, (size_t)n, sizeof *rows, "roofline rows") : NULL;
    int *idx = n ? lt_calloc(ctx, (size_t)n, sizeof *idx, "roofline rows") : NULL;
    if (n && (!rows || !idx)) {
        lt_mem_free(rows);
        lt_mem_free(idx);
        return LT_ERR_NOMEM;
    }
    lt_status s = LT_OK;
    lt_profile_totals t;
    memset(&t, 0, sizeof t);
    t.n = n;
    t.worst_over = -1;
    int name_w = 6, kind_w = 4;
    for (int i = 0; i < n && s == LT_OK; i++) {
        s = lt_profile_row(ctx, c, &recs[i], &rows[i]);
        idx[i] = i;
        t.time_s += recs[i].time_s;
        t.flops += recs[i].flops;
        t.bytes += recs[i].bytes;
        t.bound_s += rows[i].bound_s;
        if (rows[i].binds == LT_BOUND_COMPUTE) t.compute_bound_s += rows[i].bound_s;
        if (rows[i].binds == LT_BOUND_MEMORY) t.memory_bound_s += rows[i].bound_s;
        if (s == LT_OK && lt_profile_over_ceiling(c, &rows[i])) {
            t.n_over_ceiling++;
            if (t.worst_over < 0 || rows[i].pct_of_bound > t.worst_pct) t.worst_over = i, t.worst_pct = rows[i].pct_of_bound;
        }
        int nl = recs[i].name ? (int)strlen(recs[i].name) : 9, kl = recs[i].kind ? (int)strlen(recs[i].kind) : 1;
        if (nl > name_w) name_w = nl;
        if (kl > kind_w) kind_w = kl;
    }
    if (s == LT_OK && n == 0) {
        lt_prof_record none = {.name = "none"};
        lt_prof_row dummy;
        s = lt_profile_row(ctx, c, &none, &dummy); /* still validates the ceilings */
    }
    if (s != LT_OK) {
        lt_mem_free(rows);
        lt_mem_free(idx);
        return s;
    }
    char label[32];
    snprintf(label, sizeof label, "total (%d)", n);
    if (name_w > NAME_MAX_W) name_w = NAME_MAX_W;
    if (name_w < (int)strlen(label)) name_w = (int)strlen(label);
    if (kind_w > KIND_MAX_W) kind_w = KIND_MAX_W;
    if (t.time_s > 0) {
        t.gflops = t.flops / t.time_s * 1e-9;
        t.gbps = t.bytes / t.time_s * 1e-9;
        t.pct_of_bound = 100.0 * t.bound_s / t.time_s;
    }
    if (o.sort_by_time) sort_by_time(idx, n, recs);
    int shown = o.top > 0 && o.top < n ? o.top : n;

    if (o.title) lt_sb_printf(out, "%s\n", o.title);
    lt_sb_printf(out, "roofline: peak %.1f GFLOP/s (FP32 FMA, %s), memory %.1f GB/s, ridge %.2f FLOP/B; %d thread%s\n",
                 c->peak_gflops, c->isa[0] ? c->isa : "?", c->mem_gbps, c->peak_gflops / c->mem_gbps, c->threads,
                 c->threads == 1 ? "" : "s");
    lt_sb_printf(out, "%-*s %-*s" COLS, name_w, "kernel", kind_w, "kind", "time(ms)", "%time", "GFLOP", "MB", "GFLOP/s",
                 "GB/s", "FLOP/B", "bound GF/s", "%bound", "binds");
    for (int r = 0; r < shown; r++) {
        const lt_prof_record *rec = &recs[idx[r]];
        const lt_prof_row *w = &rows[idx[r]];
        bool timed = rec->time_s > 0, has_f = rec->flops > 0, has_b = rec->bytes > 0;
        text(out, name_w, rec->name ? rec->name : "(unnamed)");
        lt_sb_printf(out, " ");
        text(out, kind_w, rec->kind ? rec->kind : "-");
        num(out, 9, -1, true, rec->time_s * 1e3);
        pct(out, 6, t.time_s > 0, t.time_s > 0 ? 100.0 * rec->time_s / t.time_s : 0);
        num(out, 9, -1, has_f, rec->flops * 1e-9);
        num(out, 9, -1, has_b, rec->bytes * 1e-6);
        num(out, 9, -1, has_f && timed, w->gflops);
        num(out, 9, -1, has_b && timed, w->gbps);
        num(out, 7, -1, has_f && has_b, w->intensity);
        num(out, 11, -1, has_f, w->bound_gflops);
        pct(out, 8, w->pct_of_bound > 0, w->pct_of_bound);
        /* above 100% of a memory bound the data came from cache, not DRAM */
        lt_sb_printf(out, "  %s%s\n", lt_bound_kind_name(w->binds),
                     w->binds == LT_BOUND_MEMORY && w->pct_of_bound > 100 ? " (cache)" : "");
        if (o.show_detail && rec->detail && *rec->detail) lt_sb_printf(out, "%*s%s\n", 4, "", rec->detail);
    }
    if (shown < n) {
        double rest = 0;
        for (int r = shown; r < n; r++) rest += recs[idx[r]].time_s;
        char tmp[64];
        lt_sb_printf(out, "... %d more (%s ms)\n", n - shown, sig(tmp, sizeof tmp, rest * 1e3));
    }
    /* totals */
    text(out, name_w, label);
    lt_sb_printf(out, " ");
    text(out, kind_w, "");
    num(out, 9, -1, true, t.time_s * 1e3);
    pct(out, 6, t.time_s > 0, 100.0);
    num(out, 9, -1, t.flops > 0, t.flops * 1e-9);
    num(out, 9, -1, t.bytes > 0, t.bytes * 1e-6);
    num(out, 9, -1, t.flops > 0 && t.time_s > 0, t.gflops);
    num(out, 9, -1, t.bytes > 0 && t.time_s > 0, t.gbps);
    num(out, 7, -1, t.flops > 0 && t.bytes > 0, t.bytes > 0 ? t.flops / t.bytes : 0);
    num(out, 11, 1, false, 0);
    pct(out, 8, t.pct_of_bound > 0, t.pct_of_bound);
    if (t.bound_s > 0) {
        bool comp = t.compute_bound_s >= t.memory_bound_s;
        lt_sb_printf(out, "  %s %.0f%%\n", comp ? "compute" : "memory",
                     100.0 * (comp ? t.compute_bound_s : t.memory_bound_s) / t.bound_s);
    } else {
        lt_sb_printf(out, "  -\n");
    }
    lt_mem_free(rows);
    lt_mem_free(idx);
    if (out->failed) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (roofline report)");
    if (totals) *totals = t;
    return LT_OK;
}
