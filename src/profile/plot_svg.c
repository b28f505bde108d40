/* plot_svg.c — the roofline as a self-contained SVG picture (lathe profile --plot FILE.svg).
 *
 * Log-log axes: arithmetic intensity (FLOP/byte) across, performance (GFLOP/s) up. The ceilings
 * are lines: DRAM bandwidth (y = intensity x GB/s) up to the ridge point, then the FP32 peak flat;
 * the L2 cache bandwidth, when measured, dashed. Every record is one circle (class "kernel") with
 * its area proportional to its time and its colour by its kind (a legend lists the kinds with their
 * summed time); a <title> child gives the name, kind, time, rates and % of bound as a tooltip.
 * Records that cannot sit on log axes (no FLOPs or no bytes: copies, host steps; or no time) are
 * circles in a strip under the chart, in the same colours. The axes span whole decades around the
 * points and the ridge (at most 8 decades up, points below are drawn at the bottom edge).
 * Text is XML-escaped and reduced to printable ASCII, so any name gives a well-formed file. The file
 * is written atomically (temporary file + rename). Entry points: lt_roofline_svg, lt_roofline_svg_write.
 */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/file.h"

#define W 900.0
#define H 560.0
#define PL 80.0  /* plot area: left, right, top, bottom edges */
#define PR 640.0
#define PT 50.0
#define PB 440.0
#define STRIP_Y 528.0
#define MAX_KINDS 10

static const char *const PALETTE[MAX_KINDS] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

/* Text as XML character data: & < > " ' escaped, bytes outside printable ASCII as '?'. */
static void xml_text(lt_strbuf *b, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '&') lt_sb_printf(b, "&amp;");
        else if (c == '<') lt_sb_printf(b, "&lt;");
        else if (c == '>') lt_sb_printf(b, "&gt;");
        else if (c == '"') lt_sb_printf(b, "&quot;");
        else if (c == '\'') lt_sb_printf(b, "&apos;");
        else lt_sb_printf(b, "%c", c >= 0x20 && c < 0x7f ? c : '?');
    }
}

typedef struct axes {
    double x0, x1, y0, y1; /* log10 of the ranges: intensity (FLOP/B) and GFLOP/s */
} axes;

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }
static double px(const axes *a, double intensity) {
    return PL + clamp01((log10(intensity) - a->x0) / (a->x1 - a->x0)) * (PR - PL);
}
static double py(const axes *a, double gflops) { return PB - clamp01((log10(gflops) - a->y0) / (a->y1 - a->y0)) * (PB - PT); }

static bool on_chart(const lt_prof_record *r) { return r->flops > 0 && r->bytes > 0 && r->time_s > 0; }

/* Whole decades around the points, the ridge and the peak. */
static axes make_axes(const lt_ceilings *c, const lt_prof_record *recs, int n) {
    double ridge = c->peak_gflops / c->mem_gbps;
    double xlo = ridge / 10, xhi = ridge * 10, ylo = c->peak_gflops / 100, yhi = c->peak_gflops;
    for (int i = 0; i < n; i++) {
        if (!on_chart(&recs[i])) continue;
        double ai = recs[i].flops / recs[i].bytes, g = recs[i].flops / recs[i].time_s * 1e-9;
        if (ai < xlo) xlo = ai;
        if (ai > xhi) xhi = ai;
        if (g < ylo) ylo = g;
        if (g > yhi) yhi = g;
    }
    axes a = {floor(log10(xlo / 1.5)), ceil(log10(xhi * 1.5)), floor(log10(ylo / 1.5)), ceil(log10(yhi * 1.5))};
    if (a.y1 - a.y0 > 8) a.y0 = a.y1 - 8;
    if (a.x1 - a.x0 > 10) a.x0 = a.x1 - 10;
    if (a.x1 <= a.x0) a.x1 = a.x0 + 1;
    if (a.y1 <= a.y0) a.y1 = a.y0 + 1;
    return a;
}

/* "0.01", "1", "100", "1e+06": a decade's label. */
static void decade(char *buf, size_t n, int e) {
    if (e >= -3 && e <= 5) snprintf(buf, n, "%.*f", e < 0 ? -e : 0, pow(10, e));
    else snprintf(buf, n, "1e%d", e);
}

static void grid_and_axes(lt_strbuf *b, const axes *a) {
    char t[32];
    for (int e = (int)a->x0; e <= (int)a->x1; e++) {
        double x = px(a, pow(10, e));
        decade(t, sizeof t, e);
        lt_sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, PT, x, PB);
        lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, PB + 18, t);
    }
    for (int e = (int)a->y0; e <= (int)a->y1; e++) {
        double y = PB - (e - a->y0) / (a->y1 - a->y0) * (PB - PT);
        decade(t, sizeof t, e);
        lt_sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", PL, y, PR, y);
        lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", PL - 6, y + 4, t);
    }
    lt_sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", PL, PT,
                 PR - PL, PB - PT);
    lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n",
                 (PL + PR) / 2, PB + 38);
    lt_sb_printf(b, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">performance (GFLOP/s)"
                    "</text>\n", PL - 52, (PT + PB) / 2);
}

/* A bandwidth ceiling (GB/s) from the left edge up to the peak, then (solid only) the peak. */
static void ceilings(lt_strbuf *b, const axes *a, const lt_ceilings *c) {
    double xl = pow(10, a->x0), xr = pow(10, a->x1), ridge = c->peak_gflops / c->mem_gbps;
    lt_sb_printf(b, "<g class=\"ceiling\" fill=\"none\" stroke-width=\"2\">\n");
    double cr = c->cache_gbps > 0 ? c->peak_gflops / c->cache_gbps : 0;
    if (c->cache_gbps > c->mem_gbps && cr > xl) {
        lt_sb_printf(b, "<polyline points=\"%.1f,%.1f %.1f,%.1f\" stroke=\"#999\" stroke-dasharray=\"6 4\"/>\n",
                     px(a, xl), py(a, xl * c->cache_gbps), px(a, cr), py(a, c->peak_gflops));
        double xm = sqrt(xl * cr); /* labels at the middle of their line (log scale) */
        lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#777\" stroke=\"none\" text-anchor=\"end\">L2 %.1f GB/s"
                        "</text>\n", px(a, xm) - 8, py(a, xm * c->cache_gbps) - 4, c->cache_gbps);
    }
    lt_sb_printf(b, "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" stroke=\"#000\"/>\n", px(a, xl),
                 py(a, xl * c->mem_gbps), px(a, ridge), py(a, c->peak_gflops), px(a, xr), py(a, c->peak_gflops));
    double xm = sqrt(xl * ridge);
    lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#000\" stroke=\"none\">DRAM %.1f GB/s</text>\n", px(a, xm) + 8,
                 py(a, xm * c->mem_gbps) + 4, c->mem_gbps);
    lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#000\" stroke=\"none\" text-anchor=\"end\">peak %.1f GFLOP/s "
                    "(FP32 FMA, %d thread%s)</text>\n", PR - 6, py(a, c->peak_gflops) - 6, c->peak_gflops, c->threads,
                 c->threads == 1 ? "" : "s");
    lt_sb_printf(b, "</g>\n");
}

/* Kinds in order of first appearance (at most MAX_KINDS - 1 named; the rest share "other"). */
typedef struct kinds {
    int n;
    const char *name[MAX_KINDS];
    double time[MAX_KINDS];
} kinds;

static int kind_of(kinds *k, const char *name) {
    name = name && *name ? name : "-";
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->name[i], name)) return i;
    if (k->n < MAX_KINDS - 1) {
        k->name[k->n] = name;
        return k->n++;
    }
    if (k->n == MAX_KINDS - 1) k->name[k->n++] = "other";
    return MAX_KINDS - 1;
}

static void point(lt_strbuf *b, const lt_ceilings *c, const lt_prof_record *r, double x, double y, double rad,
                  const char *color) {
    lt_sb_printf(b, "<circle class=\"kernel\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.7\" "
                    "stroke=\"#222\" stroke-width=\"0.5\"><title>", x, y, rad, color);
    xml_text(b, r->name ? r->name : "(unnamed)");
    lt_sb_printf(b, " (");
    xml_text(b, r->kind ? r->kind : "-");
    lt_sb_printf(b, "): %.4g ms", r->time_s * 1e3);
    lt_prof_row w;
    lt_ctx tmp = {0};
    if (r->time_s > 0 && lt_profile_row(&tmp, c, r, &w) == LT_OK) {
        if (r->flops > 0) lt_sb_printf(b, ", %.4g GFLOP/s", w.gflops);
        if (r->bytes > 0) lt_sb_printf(b, ", %.4g GB/s", w.gbps);
        if (w.pct_of_bound > 0) lt_sb_printf(b, ", %.1f%% of bound (%s)", w.pct_of_bound, lt_bound_kind_name(w.binds));
    }
    lt_sb_printf(b, "</title></circle>\n");
}

lt_status lt_roofline_svg(lt_ctx *ctx, const lt_ceilings *c, const lt_prof_record *recs, int n, const char *title,
                          lt_strbuf *out) {
    if (n < 0 || (n > 0 && !recs)) return lt_error(ctx, LT_ERR_USAGE, "roofline plot: %d records", n);
    for (int i = 0; i < n; i++) { /* validates the ceilings and every record */
        lt_prof_row w;
        LT_TRY(lt_profile_row(ctx, c, &recs[i], &w));
    }
    if (n == 0) {
        lt_prof_record none = {.name = "none"};
        lt_prof_row w;
        LT_TRY(lt_profile_row(ctx, c, &none, &w));
    }
    axes a = make_axes(c, recs, n);
    double tmax = 0;
    int off = 0;
    kinds k = {0};
    for (int i = 0; i < n; i++) {
        if (recs[i].time_s > tmax) tmax = recs[i].time_s;
        if (!on_chart(&recs[i])) off++;
        k.time[kind_of(&k, recs[i].kind)] += recs[i].time_s;
    }
    lt_strbuf *b = out;
    lt_sb_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    lt_sb_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                    "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    lt_sb_printf(b, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%.1f\" y=\"24\" font-size=\"14\">",
                 PL);
    xml_text(b, title ? title : "roofline");
    lt_sb_printf(b, "</text>\n");
    grid_and_axes(b, &a);
    ceilings(b, &a, c);
    /* points, the largest first so small ones stay visible on top */
    lt_sb_printf(b, "<g class=\"kernels\">\n");
    int strip = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            const lt_prof_record *r = &recs[i];
            double rad = tmax > 0 ? 3 + 17 * sqrt(r->time_s / tmax) : 3; /* area grows with time */
            if ((pass == 0) != (rad > 10)) continue;
            const char *color = PALETTE[kind_of(&k, r->kind)];
            if (on_chart(r)) {
                point(b, c, r, px(&a, r->flops / r->bytes), py(&a, r->flops / r->time_s * 1e-9), rad, color);
            } else {
                double x = PL + 10 + (off > 1 ? (PR - PL - 20) * strip / (off - 1) : 0);
                strip++;
                point(b, c, r, x, STRIP_Y, rad > 10 ? 10 : rad, color);
            }
        }
    lt_sb_printf(b, "</g>\n");
    if (off)
        lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\">not on the chart (no FLOPs or no bytes: copies, host steps): %d</text>\n",
                     PL, STRIP_Y - 20, off);
    /* legend */
    lt_sb_printf(b, "<g class=\"legend\">\n<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">kind (time)</text>\n",
                 PR + 20, PT + 4);
    for (int i = 0; i < k.n; i++) {
        double y = PT + 24 + 20 * i;
        lt_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" fill-opacity=\"0.7\"/>\n", PR + 26, y - 4,
                     PALETTE[i]);
        lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\">", PR + 38, y);
        xml_text(b, k.name[i]);
        lt_sb_printf(b, " (%.3g ms)</text>\n", k.time[i] * 1e3);
    }
    lt_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\">circle area: time</text>\n</g>\n</svg>\n", PR + 20,
                 PT + 24 + 20 * k.n + 10);
    if (out->failed) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (roofline plot of %d records)", n);
    return LT_OK;
}

lt_status lt_roofline_svg_write(lt_ctx *ctx, const char *path, const lt_ceilings *c, const lt_prof_record *recs, int n,
                                const char *title) {
    if (!path || !*path) return lt_error(ctx, LT_ERR_USAGE, "roofline plot: no output path");
    lt_strbuf b = {0};
    lt_status s = lt_roofline_svg(ctx, c, recs, n, title, &b);
    if (s == LT_OK) s = lt_io_write_file_atomic(ctx, path, b.s, b.len);
    lt_sb_free(&b);
    return s;
}
