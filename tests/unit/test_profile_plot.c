/* test_profile_plot.c — lt_roofline_svg: one circle per record whatever its name, text escaped so the
 * document stays well-formed, records off the log axes in the strip, bad input refused, and the
 * over-ceiling count behind profile's stale-ceilings hint.
 *   - names and kinds with markup characters, control bytes and non-ASCII bytes come out as entities
 *     or '?', never raw (no '<' or '&' starts anything but a tag or an entity);
 *   - n records give n circles of class "kernel", the legend one entry per kind;
 *   - zero ceilings or a negative time are LT_ERR_USAGE naming the record;
 *   - lt_profile_over_ceiling: above the peak or the cache bandwidth by more than 5%, not at 100%.
 */
#include "profile/profile.h"
#include "test_util.h"

static int count(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

/* Every '<' opens a tag or a declaration, every '&' an entity: the text is escaped. */
static bool markup_clean(const char *s) {
    for (const char *p = s; *p; p++) {
        if (*p == '<' && !(p[1] == '/' || p[1] == '?' || (p[1] >= 'a' && p[1] <= 'z'))) return false;
        if (*p == '&' && strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) && strncmp(p, "&gt;", 4) &&
            strncmp(p, "&quot;", 6) && strncmp(p, "&apos;", 6))
            return false;
        if ((unsigned char)*p < 0x20 && *p != '\n') return false;
        if ((unsigned char)*p >= 0x80) return false;
    }
    return true;
}

static lt_ceilings ceilings(void) {
    lt_ceilings c;
    memset(&c, 0, sizeof c);
    c.peak_gflops = 100, c.mem_gbps = 10, c.cache_gbps = 50, c.threads = 2;
    return c;
}

static void test_svg(void) {
    lt_ceilings c = ceilings();
    lt_prof_record r[] = {
        {.name = "lt_k0", .kind = "Conv", .time_s = 2e-3, .flops = 1e8, .bytes = 1e6},
        {.name = "a<b&c\"d'e", .kind = "Mat<Mul>", .time_s = 1e-4, .flops = 1e6, .bytes = 1e6},
        {.name = "\x01\x1b[2J\xff", .kind = "elem&wise", .time_s = 5e-5, .flops = 1e4, .bytes = 4e4},
        {.name = "copy", .kind = "injective", .time_s = 1e-5, .bytes = 4096},  /* no FLOPs: the strip */
        {.name = "host step", .kind = "host", .time_s = 3e-4},                 /* neither: the strip */
        {.name = NULL, .kind = NULL, .time_s = 0, .flops = 1, .bytes = 1},      /* no time: the strip */
    };
    int n = (int)(sizeof r / sizeof *r);
    lt_ctx ctx = {0};
    lt_strbuf b = {0};
    CHECK(lt_roofline_svg(&ctx, &c, r, n, "model <x> & \"y\"", &b) == LT_OK);
    CHECK(b.s && !strncmp(b.s, "<?xml", 5) && strstr(b.s, "</svg>\n"));
    if (b.s) {
        CHECK(count(b.s, "class=\"kernel\"") == n);
        CHECK(markup_clean(b.s));
        CHECK(strstr(b.s, "a&lt;b&amp;c&quot;d&apos;e") && strstr(b.s, "Mat&lt;Mul&gt;"));
        CHECK(strstr(b.s, "??[2J?") != NULL);
        CHECK(strstr(b.s, "not on the chart") && strstr(b.s, "): 3</text>"));
        CHECK(strstr(b.s, "kind (time)") && strstr(b.s, "peak 100.0 GFLOP/s") && strstr(b.s, "DRAM 10.0 GB/s"));
    }
    lt_sb_free(&b);
    /* nothing to plot is still a picture of the ceilings */
    CHECK(lt_roofline_svg(&ctx, &c, NULL, 0, NULL, &b) == LT_OK && b.s && count(b.s, "class=\"kernel\"") == 0);
    lt_sb_free(&b);
    /* refused */
    lt_ceilings z = c;
    z.peak_gflops = 0;
    lt_ctx e = {0};
    CHECK(lt_roofline_svg(&e, &z, r, n, NULL, &b) == LT_ERR_USAGE);
    lt_sb_free(&b);
    lt_prof_record neg = {.name = "late", .time_s = -1};
    e = (lt_ctx){0};
    CHECK(lt_roofline_svg(&e, &c, &neg, 1, NULL, &b) == LT_ERR_USAGE);
    CHECK_MSG(e, "late");
    lt_sb_free(&b);
    e = (lt_ctx){0};
    CHECK(lt_roofline_svg_write(&e, "/nonexistent-dir/x/r.svg", &c, r, n, NULL) != LT_OK);
    CHECK_MSG(e, "r.svg");
}

static void test_over_ceiling(void) {
    lt_ceilings c = ceilings();
    lt_ctx ctx = {0};
    lt_prof_row w;
    lt_prof_record at_peak = {.name = "a", .time_s = 1e-3, .flops = 1e8, .bytes = 1}; /* 100 GFLOP/s */
    CHECK(lt_profile_row(&ctx, &c, &at_peak, &w) == LT_OK && !lt_profile_over_ceiling(&c, &w));
    lt_prof_record above = {.name = "b", .time_s = 1e-3, .flops = 1.2e8, .bytes = 1}; /* 120 GFLOP/s */
    CHECK(lt_profile_row(&ctx, &c, &above, &w) == LT_OK && lt_profile_over_ceiling(&c, &w));
    lt_prof_record cached = {.name = "c", .time_s = 1e-3, .bytes = 4e7}; /* 40 GB/s: above DRAM, in cache */
    CHECK(lt_profile_row(&ctx, &c, &cached, &w) == LT_OK && !lt_profile_over_ceiling(&c, &w));
    lt_prof_record fast = {.name = "d", .time_s = 1e-3, .bytes = 6e7}; /* 60 GB/s: above the cache too */
    CHECK(lt_profile_row(&ctx, &c, &fast, &w) == LT_OK && lt_profile_over_ceiling(&c, &w));
    lt_prof_record all[] = {at_peak, above, cached, fast};
    lt_strbuf b = {0};
    lt_profile_totals t;
    CHECK(lt_profile_report(&ctx, &c, all, 4, NULL, &b, &t) == LT_OK);
    CHECK(t.n_over_ceiling == 2 && t.worst_over >= 1 && t.worst_pct > 100);
    lt_sb_free(&b);
}

int main(void) {
    test_svg();
    test_over_ceiling();
    return test_report("test_profile_plot");
}
