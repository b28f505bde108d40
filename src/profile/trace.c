/* trace.c — Chrome / Perfetto trace export (the trace-event JSON format).
 *
 * Output: {"traceEvents":[...], "displayTimeUnit":"ms", "otherData":{"generator":"lathe"}} with
 *   metadata events (ph "M") naming the process ("process_name") and the timeline lanes
 *   ("thread_name": lane 0 is "main", always named; the others used are "lane N"), then one complete event per record:
 *   {"name", "cat", "ph":"X", "ts", "dur" (microseconds, 3 decimals = ns), "pid":1, "tid",
 *    "args":{"flops", "bytes", "origin"}} (flops/bytes omitted when both are 0, origin when NULL).
 * Strings are escaped per RFC 8259 (quote, backslash, control characters as \u00XX); other bytes
 * pass through (names are UTF-8). The file is written to a temporary name and renamed.
 * Entry points: lt_trace_format_chrome, lt_trace_write_chrome.
 */
#include "profile.h"

#include <math.h>
#include <string.h>

#include "../base/file.h"

static void json_str(lt_strbuf *b, const char *s) {
    lt_sb_printf(b, "\"");
    const char *run = s;
    for (const char *p = s;; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch && ch >= 0x20 && ch != '"' && ch != '\\') continue;
        if (p > run) lt_sb_printf(b, "%.*s", (int)(p - run), run);
        if (!ch) break;
        if (ch == '"' || ch == '\\') lt_sb_printf(b, "\\%c", ch);
        else if (ch == '\n') lt_sb_printf(b, "\\n");
        else if (ch == '\t') lt_sb_printf(b, "\\t");
        else lt_sb_printf(b, "\\u%04x", ch);
        run = p + 1;
    }
    lt_sb_printf(b, "\"");
}

static bool bad(double v) { return !isfinite(v) || v < 0; }

lt_status lt_trace_format_chrome(lt_ctx *ctx, const lt_trace_event *ev, int n, const char *process_name,
                                 lt_strbuf *out) {
    if (n < 0 || (n > 0 && !ev)) return lt_error(ctx, LT_ERR_USAGE, "trace: %d events", n);
    for (int i = 0; i < n; i++) {
        const lt_trace_event *e = &ev[i];
        if (bad(e->ts_us) || bad(e->dur_us) || bad(e->flops) || bad(e->bytes) || e->tid < 0)
            return lt_error(ctx, LT_ERR_USAGE,
                            "trace: event %d ('%s') has a negative or non-finite time (ts %g us, dur %g us), cost or lane",
                            i, e->name ? e->name : "(unnamed)", e->ts_us, e->dur_us);
    }
    lt_sb_printf(out, "{\"traceEvents\":[\n");
    lt_sb_printf(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":");
    json_str(out, process_name ? process_name : "lathe");
    lt_sb_printf(out, "}}");
    lt_sb_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"main\"}}");
    /* name each other lane once (lanes are few: a linear scan of the ones already named is enough) */
    for (int i = 0; i < n; i++) {
        bool seen = ev[i].tid == 0;
        for (int j = 0; j < i && !seen; j++) seen = ev[j].tid == ev[i].tid;
        if (!seen)
            lt_sb_printf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"lane %d\"}}",
                         ev[i].tid, ev[i].tid);
    }
    for (int i = 0; i < n; i++) {
        const lt_trace_event *e = &ev[i];
        lt_sb_printf(out, ",\n{\"name\":");
        json_str(out, e->name ? e->name : "(unnamed)");
        lt_sb_printf(out, ",\"cat\":");
        json_str(out, e->cat ? e->cat : "kernel");
        lt_sb_printf(out, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d", e->ts_us, e->dur_us, e->tid);
        bool cost = e->flops > 0 || e->bytes > 0;
        if (cost || e->detail) {
            lt_sb_printf(out, ",\"args\":{");
            if (cost) lt_sb_printf(out, "\"flops\":%.0f,\"bytes\":%.0f", e->flops, e->bytes);
            if (e->detail) {
                lt_sb_printf(out, "%s\"origin\":", cost ? "," : "");
                json_str(out, e->detail);
            }
            lt_sb_printf(out, "}");
        }
        lt_sb_printf(out, "}");
    }
    lt_sb_printf(out, "\n],\n\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"lathe\"}}\n");
    if (out->failed) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (formatting a trace of %d events)", n);
    return LT_OK;
}

lt_status lt_trace_write_chrome(lt_ctx *ctx, const char *path, const lt_trace_event *ev, int n,
                                const char *process_name) {
    if (!path || !*path) return lt_error(ctx, LT_ERR_USAGE, "trace: no output path");
    lt_strbuf b = {0};
    lt_status s = lt_trace_format_chrome(ctx, ev, n, process_name, &b);
    if (s == LT_OK) s = lt_io_write_file_atomic(ctx, path, b.s, b.len);
    lt_sb_free(&b);
    return s;
}
