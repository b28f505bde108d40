/* manager.c — the pass manager: runs the pipeline (pipeline.c) at an -O level, iterates the
 * simplification group to a fixed point, and after each pass run: drops dead values and re-infers
 * types when it changed, verifies (verify_each), dumps the graph (dump_after, only if it changed),
 * records the run (time_passes) and counts toward stop_after.
 *
 * Errors: a pass's own error is re-reported as "pass 'NAME': <its message>"; a verification failure
 * as "after pass 'NAME' (round R): <verifier message>". The library never prints: dumps go to the
 * caller's callback or string buffer.
 */
#include "pass.h"

#include "../ops/infer.h"
#include "mutate.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Is `name` one of the comma-separated names in list? */
static bool in_list(const char *list, const char *name) {
    if (!list) return false;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        if ((size_t)(e - p) == len && strncmp(p, name, len) == 0) return true;
        p = e;
    }
    return false;
}

bool lt_pass_is_enabled(const lt_pass_options *opt, const lt_pass *p) {
    if (!opt || opt->level < 1 || in_list(opt->disable, p->name)) return false;
    bool on = in_list(opt->enable, p->name) || (opt->level >= p->min_level && !lt_pass_off_by_default(p));
    return on && (!p->enabled || p->enabled(opt));
}

bool lt_pass_target_nchwc(const lt_pass_options *opt) { return opt && !opt->no_nchwc_layout; }

/* Every name of the comma-separated list names a pass (and none is in `other`, the disable list). */
static lt_status check_names(lt_ctx *ctx, const char *list, const char *what, const char *other) {
    for (const char *p = list; p && *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        if (e > p) {
            char name[128];
            size_t len = (size_t)(e - p) < sizeof name - 1 ? (size_t)(e - p) : sizeof name - 1;
            memcpy(name, p, len);
            name[len] = 0;
            if (!lt_pass_find(name)) {
                char known[1024];
                lt_pass_names(known, sizeof known);
                return lt_error(ctx, LT_ERR_USAGE, "%s pass '%s': no pass has that name (passes: %s)", what, name, known);
            }
            if (in_list(other, name))
                return lt_error(ctx, LT_ERR_USAGE, "pass '%s' is both disabled and enabled", name);
        }
        p = e;
    }
    return LT_OK;
}

lt_status lt_pass_options_check(lt_ctx *ctx, const lt_pass_options *opt) {
    if (opt->level < 0 || opt->level > 3)
        return lt_error(ctx, LT_ERR_USAGE, "optimization level %d: expected 0 to 3", opt->level);
    if (opt->stop_after < 0) return lt_error(ctx, LT_ERR_USAGE, "stop-after %d: expected a count >= 0", opt->stop_after);
    if (opt->max_rounds < 0) return lt_error(ctx, LT_ERR_USAGE, "max rounds %d: expected >= 0", opt->max_rounds);
    if (opt->fold_max_bytes < 0) return lt_error(ctx, LT_ERR_USAGE, "fold limit: expected >= 0 bytes");
    if (opt->dump_after && strcmp(opt->dump_after, "all") != 0 && !lt_pass_find(opt->dump_after))
        return lt_error(ctx, LT_ERR_USAGE, "--dump-after=%s: no pass has that name (try 'all' or one of the passes)",
                        opt->dump_after);
    LT_TRY(check_names(ctx, opt->disable, "disabled", NULL));
    LT_TRY(check_names(ctx, opt->enable, "enabled", opt->disable));
    return LT_OK;
}

typedef struct run_state {
    lt_ctx *ctx;
    lt_model *m;
    const lt_pass_options *opt;
    lt_pass_report *rep;
    int executed; /* pass runs so far, for stop_after */
    bool stop;
} run_state;

static lt_status record(run_state *st, const lt_pass_record *r) {
    lt_pass_report *rep = st->rep;
    if (!rep) return LT_OK;
    if (rep->n == rep->cap) {
        int cap = rep->cap ? rep->cap * 2 : 16;
        lt_pass_record *p = lt_mem_realloc(rep->runs, (size_t)cap * sizeof *p);
        if (!p) return lt_error(st->ctx, LT_ERR_NOMEM, "out of memory (pass report)");
        rep->runs = p;
        rep->cap = cap;
    }
    rep->runs[rep->n++] = *r;
    return LT_OK;
}

static void dump(run_state *st, const lt_pass *p, int round) {
    const lt_pass_options *opt = st->opt;
    if (!opt->dump_after || (strcmp(opt->dump_after, "all") != 0 && strcmp(opt->dump_after, p->name) != 0)) return;
    if (opt->dump_cb) {
        lt_strbuf b = {0};
        lt_graph_print(st->m->graph, &b);
        opt->dump_cb(opt->dump_user, p->name, round, b.s ? b.s : "");
        lt_sb_free(&b);
    } else if (opt->dump) {
        if (round) lt_sb_printf(opt->dump, "; after %s (round %d)\n", p->name, round);
        else lt_sb_printf(opt->dump, "; after %s\n", p->name);
        lt_graph_print(st->m->graph, opt->dump);
    }
}

/* Run one pass (if enabled at this level); *changed tells whether it changed the graph. */
static lt_status run_one(run_state *st, const lt_pass *p, int round, bool *changed) {
    const lt_pass_options *opt = st->opt;
    *changed = false;
    if (!lt_pass_is_enabled(opt, p)) return LT_OK;
    if (opt->stop_after > 0 && st->executed >= opt->stop_after) {
        st->stop = true;
        if (st->rep) st->rep->stopped = true;
        return LT_OK;
    }
    st->executed++;
    lt_pass_record r = {p->name, round, false, 0, st->m->graph->n_nodes, 0};
    double t0 = opt->time_passes ? now_s() : 0;
    lt_ctx pc = {0};
    lt_status s = p->run(&pc, st->m, opt, &r.changed);
    if (s == LT_OK && pc.status) s = pc.status;
    if (s) return lt_error(st->ctx, s, "pass '%s': %s", p->name, pc.msg[0] ? pc.msg : lt_status_name(s));
    if (r.changed) {
        s = lt_graph_compact(&pc, st->m->graph);
        if (!s) s = lt_graph_infer(&pc, st->m);
        if (s) return lt_error(st->ctx, s, "after pass '%s' (round %d): %s", p->name, round, pc.msg);
    }
    if (opt->time_passes) r.seconds = now_s() - t0;
    if (opt->verify_each && (s = lt_graph_verify(&pc, st->m->graph)))
        return lt_error(st->ctx, s, "after pass '%s' (round %d): invalid graph: %s", p->name, round, pc.msg);
    r.nodes_after = st->m->graph->n_nodes;
    LT_TRY(record(st, &r));
    if (r.changed) dump(st, p, round);
    *changed = r.changed;
    return LT_OK;
}

lt_status lt_passes_run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, lt_pass_report *report) {
    lt_pass_options dflt = {0};
    if (!opt) opt = &dflt;
    LT_TRY(lt_pass_options_check(ctx, opt));
    run_state st = {ctx, m, opt, report, 0, false};
    double t0 = now_s();
    if (report) report->nodes_before = m->graph->n_nodes;
    lt_status s = LT_OK;
    if (opt->verify_each && (s = lt_graph_verify(ctx, m->graph))) return s;
    int max_rounds = opt->max_rounds > 0 ? opt->max_rounds : LT_PASS_DEFAULT_ROUNDS;
    int n = opt->level > 0 ? lt_pipeline_size() : 0;
    for (int i = 0; i < n && !s && !st.stop;) {
        const lt_pipeline_entry *e = lt_pipeline_get(i);
        if (e->group != LT_PIPE_FIXPOINT) {
            bool ch;
            s = run_one(&st, e->pass, 0, &ch);
            i++;
            continue;
        }
        int j = i;
        while (j < n && lt_pipeline_get(j)->group == LT_PIPE_FIXPOINT) j++;
        bool converged = false;
        int rounds_run = 0;
        for (int round = 1; round <= max_rounds && !s && !st.stop; round++) {
            bool any = false;
            rounds_run = round;
            for (int k = i; k < j && !s && !st.stop; k++) {
                bool ch;
                s = run_one(&st, lt_pipeline_get(k)->pass, round, &ch);
                any |= ch;
            }
            if (!s && !st.stop && !any) {
                converged = true;
                break;
            }
        }
        if (report) {
            report->rounds += rounds_run;
            report->converged = converged;
        }
        i = j;
    }
    if (report) {
        report->nodes_after = m->graph->n_nodes;
        if (opt->time_passes) report->total_seconds = now_s() - t0;
    }
    return s;
}

void lt_pass_report_free(lt_pass_report *r) {
    if (!r) return;
    lt_mem_free(r->runs);
    memset(r, 0, sizeof *r);
}

void lt_pass_report_print(const lt_pass_report *r, lt_strbuf *out) {
    lt_sb_printf(out, "%-16s %5s %7s %13s %10s\n", "pass", "round", "changed", "nodes", "ms");
    double sum = 0;
    for (int i = 0; i < r->n; i++) {
        const lt_pass_record *p = &r->runs[i];
        char nodes[32];
        snprintf(nodes, sizeof nodes, "%d->%d", p->nodes_before, p->nodes_after);
        lt_sb_printf(out, "%-16s %5d %7s %13s %10.3f\n", p->name, p->round, p->changed ? "yes" : "no", nodes,
                     p->seconds * 1e3);
        sum += p->seconds;
    }
    lt_sb_printf(out, "%d pass runs, %d round%s%s%s, nodes %d -> %d, passes %.3f ms, total %.3f ms\n", r->n, r->rounds,
                 r->rounds == 1 ? "" : "s", r->n && !r->converged && !r->stopped ? " (no fixed point)" : "",
                 r->stopped ? " (stopped early)" : "", r->nodes_before, r->nodes_after, sum * 1e3, r->total_seconds * 1e3);
}
