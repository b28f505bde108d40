/* tune_search.c — beam search over schedules through a caller-given measure callback (tune.h).
 *
 * A state is a schedule (the base plus the actions chosen so far). To expand it, its steps are
 * applied to the kernel and the resulting loop nest is inspected: every FOR with its kind, constant
 * extent (or unknown), depth, whether it is innermost and whether a parallel loop encloses or sits
 * inside it. Actions are derived from that (tune.h lists them); a compound action (split by a vector
 * width + vectorize the inner loop) counts as one, so the search never has to keep a slower
 * intermediate to reach a faster schedule. Each candidate is applied on the kernel, simplified,
 * verified and costed, handed to measure, and the kernel is restored: body, flops/bytes and the
 * variable and buffer counts (the tables only grow at their ends, so truncating them forgets the
 * names a candidate created and the next candidate's "split i 16" makes "i.o" again).
 * "parallel" is only offered for loops whose iterations write disjoint locations (parallel_safe)
 * and whose role is not REDUCE (lt_loop_role: the tuner goes by roles, never by loop names): the
 * schedule step checks nesting only, and parallelizing a reduction loop would race.
 * Candidates whose steps fail their preconditions (LT_ERR_INVALID from lt_sched_apply) are
 * rejected quietly; any other failure stops the search. Schedules already tried are skipped (a set
 * of their text). Order is deterministic: loops in pre-order, actions in the order listed, ties
 * in time keep the earlier candidate.
 * Confirmation (options.confirm): the beam keeps the lowest of many noisy times, so the winner's
 * time is biased low and the base's was taken once, first (cold). The base and the winner are
 * therefore timed again in turns (base, best, base, best, ...) and compared by their medians; the
 * winner stays only if its median is at least 2% lower (less is noise on a shared machine), and
 * those medians are the times reported and stored.
 */
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/strmap.h"
#include "../profile/profile.h"

#define LT_TUNE_CONFIRM_GAIN 0.98 /* a confirmed winner's median is at most this times the base's */
#define MAX_STEPS ((int)(sizeof(((lt_schedule *)0)->steps) / sizeof(((lt_schedule *)0)->steps[0])))

static const int64_t default_split[] = {2, 4, 8, 16, 32, 64};
static const int64_t default_vector[] = {4, 8, 16};
static const int64_t default_unroll[] = {2, 4, 8};

/* ---- kernel state: apply a schedule, restore ---- */

typedef struct snapshot {
    lt_lnode *body;
    int n_vars, n_bufs;
    double flops, bytes;
} snapshot;

static void snap(const lt_kernel *k, snapshot *s) { *s = (snapshot){k->body, k->n_vars, k->n_bufs, k->flops, k->bytes}; }

static void restore(lt_kernel *k, const snapshot *s) {
    k->body = s->body;
    k->n_vars = s->n_vars;
    k->n_bufs = s->n_bufs;
    k->flops = s->flops;
    k->bytes = s->bytes;
}

/* Apply s on top of the snapshot's body. *ok = false when a step's precondition fails. */
static lt_status apply(lt_ctx *ctx, lt_kernel *k, const snapshot *base, const lt_schedule *s, bool *ok) {
    restore(k, base);
    *ok = false;
    lt_ctx tmp = {0};
    lt_status st = lt_sched_apply_all(&tmp, k, s);
    if (st == LT_ERR_INVALID) return LT_OK;
    if (st != LT_OK) return lt_error(ctx, st, "tuning %s: %s", k->name, tmp.msg);
    lt_lnode *b = lt_lsimplify(k, k->body);
    if (!b) return lt_error(ctx, LT_ERR_NOMEM, "tuning %s: out of memory", k->name);
    k->body = b;
    if ((st = lt_kernel_verify(&tmp, k)) != LT_OK) {
        if (st == LT_ERR_NOMEM) return lt_error(ctx, st, "tuning %s: %s", k->name, tmp.msg);
        lt_strbuf t = {0};
        lt_tune_schedule_format(s, &t);
        lt_status e = lt_error(ctx, LT_ERR_INTERNAL, "tuning %s: schedule '%s' gave an invalid kernel: %s", k->name,
                               t.s ? t.s : "?", tmp.msg);
        lt_sb_free(&t);
        return e;
    }
    lt_kernel_cost(k);
    *ok = true;
    return LT_OK;
}

/* ---- the loops of a scheduled kernel ---- */

typedef struct loop_info {
    const lt_lnode *node;
    const char *name;
    lt_loop_kind kind;
    int64_t extent; /* -1: not a constant */
    int depth;
    bool innermost, in_par, has_par;
} loop_info;

typedef struct loops {
    int n, cap;
    loop_info *l; /* grows: every loop of the kernel is listed */
    bool oom;
} loops;

static int add_loop(loops *L) {
    if (L->n == L->cap) {
        int cap = L->cap ? L->cap * 2 : 64;
        loop_info *nl = lt_mem_realloc(L->l, (size_t)cap * sizeof *nl);
        if (!nl) {
            L->oom = true;
            return -1;
        }
        L->l = nl;
        L->cap = cap;
    }
    return L->n++;
}

/* Walk statements; *has_for / *has_par: the subtree holds a FOR / a parallel FOR. */
static void walk(const lt_lnode *n, int depth, bool in_par, loops *L, bool *has_for, bool *has_par) {
    if (!n) return;
    if (n->kind == LT_L_FOR) {
        int me = add_loop(L);
        bool par = n->op == LT_LOOP_PARALLEL, f = false, p = false;
        if (me >= 0) {
            int64_t e;
            L->l[me] = (loop_info){n, n->var->name, (lt_loop_kind)n->op, lt_lis_int(lt_lfor_extent(n), &e) ? e : -1, depth,
                                   false, in_par, false};
        }
        walk(lt_lfor_body(n), depth + 1, in_par || par, L, &f, &p);
        if (me >= 0) L->l[me].innermost = !f, L->l[me].has_par = p;
        *has_for = true;
        *has_par = *has_par || p || par;
        return;
    }
    if (!lt_lnode_info_get(n->kind)->is_stmt) return;
    for (int i = 0; i < n->n; i++)
        if (n->kids[i] && lt_lnode_info_get(n->kids[i]->kind)->is_stmt) walk(n->kids[i], depth, in_par, L, has_for, has_par);
}

/* ---- may a loop run its iterations on different threads? ---- */

#define SAFE_MAX 256

typedef struct par_scan {
    const lt_lvar *var;          /* the loop's variable */
    int n_lets, n_allocs;
    const lt_lvar *lets[SAFE_MAX];   /* scalars declared inside the loop (private per iteration) */
    const lt_lbuf *allocs[SAFE_MAX]; /* buffers allocated inside the loop (private per iteration) */
    bool safe;
} par_scan;

static bool collect_private(const lt_lnode *n, void *user) {
    par_scan *p = user;
    if (n->kind == LT_L_LET) {
        if (p->n_lets == SAFE_MAX) p->safe = false;
        else p->lets[p->n_lets++] = n->var;
    } else if (n->kind == LT_L_ALLOC) {
        if (p->n_allocs == SAFE_MAX) p->safe = false;
        else p->allocs[p->n_allocs++] = n->buf;
    }
    return p->safe;
}

static bool check_writes(const lt_lnode *n, void *user) {
    par_scan *p = user;
    if (n->kind == LT_L_STORE) {
        bool private_buf = false;
        for (int i = 0; i < p->n_allocs && !private_buf; i++) private_buf = p->allocs[i] == n->buf;
        /* a shared buffer must be written at an index that moves with the loop variable */
        if (!private_buf && !lt_luses_var(lt_lstore_index(n), p->var)) p->safe = false;
    } else if (n->kind == LT_L_ASSIGN) {
        bool private_var = false;
        for (int i = 0; i < p->n_lets && !private_var; i++) private_var = p->lets[i] == n->var;
        if (!private_var) p->safe = false; /* an accumulator carried across iterations */
    } else if (n->kind == LT_L_EVAL || n->kind == LT_L_BARRIER) {
        p->safe = false; /* what a microkernel writes is not visible here: leave it to the default */
    }
    return p->safe;
}

/* Every iteration writes its own locations: stores to shared buffers are indexed by the loop
 * variable, assigned scalars are declared inside, no calls. (A heuristic, not a proof: an index
 * such as i % 2 would pass; the lowering never produces one.) */
static bool parallel_safe(const lt_lnode *loop) {
    par_scan p; /* 4 KiB on the stack */
    p.var = loop->var;
    p.n_lets = p.n_allocs = 0;
    p.safe = true;
    lt_lwalk(lt_lfor_body(loop), collect_private, &p);
    if (p.safe) lt_lwalk(lt_lfor_body(loop), check_writes, &p);
    return p.safe;
}

/* ---- actions ---- */

typedef struct action {
    int n;
    lt_sstep st[2];
} action;

typedef struct actions {
    int n, cap;
    action *a;
} actions;

static bool push_action(actions *A, const action *x) {
    if (A->n == A->cap) {
        int cap = A->cap ? A->cap * 2 : 64;
        action *na = lt_mem_realloc(A->a, (size_t)cap * sizeof *na);
        if (!na) return false;
        A->a = na;
        A->cap = cap;
    }
    A->a[A->n++] = *x;
    return true;
}

static lt_sstep mkstep(lt_sstep_kind kind, const char *loop, int64_t f) {
    lt_sstep s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    size_t n = strlen(loop);
    if (n >= sizeof s.loop) n = sizeof s.loop - 1; /* callers pass names < 64 characters */
    memcpy(s.loop, loop, n);
    s.factor = f;
    return s;
}

typedef struct space {
    const int64_t *split, *vec, *unroll;
    int n_split, n_vec, n_unroll;
    bool parallel;
    int par_depth;
} space;

static void list(const int64_t *given, int n_given, const int64_t *def, int n_def, const int64_t **out, int *n) {
    if (n_given < 0) *out = NULL, *n = 0;
    else if (!given) *out = def, *n = n_def;
    else *out = given, *n = n_given;
}

static space make_space(const lt_tune_space *s) {
    space sp;
    list(s->split_factors, s->n_split, default_split, 6, &sp.split, &sp.n_split);
    list(s->vector_widths, s->n_vector, default_vector, 3, &sp.vec, &sp.n_vec);
    list(s->unroll_factors, s->n_unroll, default_unroll, 3, &sp.unroll, &sp.n_unroll);
    sp.parallel = !s->no_parallel;
    sp.par_depth = s->parallel_max_depth > 0 ? s->parallel_max_depth : 2;
    return sp;
}

/* Names of the loops a split of `name` creates, if they are free in k (else the step would rename). */
static bool split_names_free(const lt_kernel *k, const char *name, char *inner, size_t n) {
    char outer[80];
    if (strlen(name) + 3 > 63) return false; /* "name.o" must fit a step's 64-byte loop field */
    snprintf(outer, sizeof outer, "%s.o", name);
    snprintf(inner, n, "%s.i", name);
    return !lt_kernel_find_var(k, outer) && !lt_kernel_find_var(k, inner) && !lt_kernel_find_buf(k, outer) &&
           !lt_kernel_find_buf(k, inner);
}

static bool enumerate_loops(const lt_kernel *k, const space *sp, const loops *L, actions *A);

static bool enumerate(const lt_kernel *k, const space *sp, actions *A) {
    loops L = {0};
    bool f = false, p = false;
    walk(k->body, 0, false, &L, &f, &p);
    bool ok = !L.oom && enumerate_loops(k, sp, &L, A);
    lt_mem_free(L.l);
    return ok;
}

static bool enumerate_loops(const lt_kernel *k, const space *sp, const loops *LL, actions *A) {
    const loops L = *LL;
    for (int i = 0; i < L.n; i++) {
        const loop_info *l = &L.l[i];
        if (l->kind != LT_LOOP_SERIAL || strlen(l->name) >= 64) continue;
        action a;
        char inner[80];
        bool names_free = split_names_free(k, l->name, inner, sizeof inner);
        /* a REDUCE loop carries its accumulator: never parallel, whatever the heuristic says */
        if (sp->parallel && !l->in_par && !l->has_par && l->depth < sp->par_depth && l->node->role != LT_ROLE_REDUCE &&
            parallel_safe(l->node)) {
            a = (action){1, {mkstep(LT_S_PARALLEL, l->name, 0)}};
            if (!push_action(A, &a)) return false;
        }
        for (int j = 0; j < sp->n_vec && l->innermost; j++) {
            int64_t w = sp->vec[j];
            if (w < 1 || w > 64) continue;
            if (l->extent == w) {
                a = (action){1, {mkstep(LT_S_VECTORIZE, l->name, 0)}};
                if (!push_action(A, &a)) return false;
            } else if (l->extent > w && l->extent % w == 0 && names_free) {
                a = (action){2, {mkstep(LT_S_SPLIT, l->name, w), mkstep(LT_S_VECTORIZE, inner, 0)}};
                if (!push_action(A, &a)) return false;
            }
        }
        for (int j = 0; j < sp->n_split && names_free; j++) {
            int64_t s = sp->split[j];
            if (s < 2 || (l->extent >= 0 && s >= l->extent)) continue;
            a = (action){1, {mkstep(LT_S_SPLIT, l->name, s)}};
            if (!push_action(A, &a)) return false;
        }
        for (int j = 0; j < sp->n_unroll && l->innermost && l->extent > 0; j++) {
            int64_t u = sp->unroll[j];
            if (u < 2 || u > l->extent || l->extent % u) continue;
            a = (action){1, {mkstep(LT_S_UNROLL, l->name, u == l->extent ? 0 : u)}};
            if (!push_action(A, &a)) return false;
        }
    }
    return true;
}

/* ---- the set of schedules tried (their text) ---- */

typedef struct seen_set {
    lt_arena arena; /* the texts */
    lt_strmap set;  /* base/strmap.h: each text its own value */
} seen_set;

/* Insert text; *fresh = it was not there. false on out-of-memory. */
static bool seen_add(seen_set *S, const char *text, bool *fresh) {
    *fresh = lt_strmap_get(&S->set, text, strlen(text)) == NULL;
    if (!*fresh) return true;
    const char *c = lt_arena_strdup(&S->arena, text);
    return c && lt_strmap_put(&S->set, c, (void *)c);
}

/* ---- the search ---- */

typedef struct cand {
    int parent; /* beam index */
    action act;
    double t;
} cand;

typedef struct search {
    lt_ctx *ctx;
    lt_kernel *k;
    snapshot root;
    lt_tune_measure_fn measure;
    void *user;
    int max_trials;
    lt_tune_result *res;
    seen_set seen;
    lt_strbuf text;
} search;

static const char *sched_text(search *S, const lt_schedule *s) {
    S->text.len = 0;
    if (S->text.s) S->text.s[0] = 0;
    lt_tune_schedule_format(s, &S->text);
    return S->text.failed ? NULL : S->text.s;
}

/* Apply + measure one schedule. *t = INFINITY when rejected (steps do not apply, or measure said so). */
static lt_status try_schedule(search *S, const lt_schedule *s, double *t) {
    bool ok;
    *t = INFINITY;
    lt_status st = apply(S->ctx, S->k, &S->root, s, &ok);
    if (st == LT_OK && ok) {
        double sec = INFINITY;
        st = S->measure(S->user, S->ctx, S->k, s, &sec);
        S->res->trials++;
        if (st == LT_OK && isfinite(sec) && sec > 0) *t = sec;
    }
    restore(S->k, &S->root);
    if (st == LT_OK && !isfinite(*t)) S->res->rejected++;
    return st;
}

static bool extend(const lt_schedule *base, const action *a, lt_schedule *out) {
    if (base->n + a->n > MAX_STEPS) return false;
    out->n = base->n;
    memcpy(out->steps, base->steps, (size_t)base->n * sizeof base->steps[0]);
    for (int i = 0; i < a->n; i++) out->steps[out->n++] = a->st[i];
    return true;
}

typedef struct beam_entry {
    lt_schedule s;
    double t;
} beam_entry;

/* Time base and best `n` times each in turns; *base_s / *best_s = the medians (a run that measure
 * rejects, of a schedule that measured before, counts as infinitely slow). */
static lt_status confirm(search *S, const lt_schedule *base, const lt_schedule *best, int n, double *base_s,
                         double *best_s) {
    double *t = lt_calloc(S->ctx, (size_t)n * 2, sizeof *t, "tuning confirmation");
    if (!t) return LT_ERR_NOMEM;
    lt_status st = LT_OK;
    int trials = S->res->trials, rejected = S->res->rejected;
    for (int i = 0; i < n && st == LT_OK; i++) {
        st = try_schedule(S, base, &t[i]);
        if (st == LT_OK) st = try_schedule(S, best, &t[n + i]);
    }
    S->res->trials = trials, S->res->rejected = rejected; /* these are not search trials */
    if (st == LT_OK) {
        *base_s = lt_profile_median(t, n); /* INFINITY sorts last: a rejected run counts as slow */
        *best_s = lt_profile_median(t + n, n);
    }
    lt_mem_free(t);
    return st;
}

lt_status lt_tune_search(lt_ctx *ctx, lt_kernel *k, const lt_tune_options *opt, lt_tune_measure_fn measure,
                         void *user, lt_tune_result *out) {
    lt_tune_options o = opt ? *opt : (lt_tune_options){0};
    if (!k || !k->body) return lt_error(ctx, LT_ERR_USAGE, "tuning: no kernel body to schedule");
    if (!measure) return lt_error(ctx, LT_ERR_USAGE, "tuning %s: no measure callback", k->name);
    if (o.beam < 0 || o.depth < 0 || o.max_trials < 0)
        return lt_error(ctx, LT_ERR_USAGE, "tuning %s: negative beam %d, depth %d or max_trials %d", k->name, o.beam,
                        o.depth, o.max_trials);
    if (o.base && (o.base->n < 0 || o.base->n > MAX_STEPS))
        return lt_error(ctx, LT_ERR_USAGE, "tuning %s: base schedule of %d steps", k->name, o.base->n);
    int B = o.beam ? o.beam : 4, depth = o.depth ? o.depth : 4;
    space sp = make_space(&o.space);

    /* heap state: the result and the beams are large (a schedule is ~14 KB) */
    lt_tune_result *res = lt_calloc(ctx, 1, sizeof *res, "tuning result");
    beam_entry *beam = lt_calloc(ctx, (size_t)B, sizeof *beam, "tuning beam");
    beam_entry *next = lt_calloc(ctx, (size_t)B, sizeof *next, "tuning beam");
    lt_schedule *tmp = lt_calloc(ctx, 1, sizeof *tmp, "tuning schedule");
    if (!res || !beam || !next || !tmp) {
        lt_mem_free(res), lt_mem_free(beam), lt_mem_free(next), lt_mem_free(tmp);
        return LT_ERR_NOMEM;
    }
    search S;
    memset(&S, 0, sizeof S);
    S.ctx = ctx, S.k = k, S.measure = measure, S.user = user, S.res = res;
    S.max_trials = o.max_trials ? o.max_trials : 256;
    snap(k, &S.root);
    lt_arena_init(&S.seen.arena);
    actions A = {0};
    cand *cands = NULL;
    int n_cands = 0, cap_cands = 0;
    lt_status st = LT_OK;
    int nb = 1;

    /* the base */
    if (o.base) beam[0].s = *o.base;
    bool fresh;
    const char *txt = sched_text(&S, &beam[0].s);
    if (!txt || !seen_add(&S.seen, txt, &fresh)) st = lt_error(ctx, LT_ERR_NOMEM, "tuning %s: out of memory", k->name);
    if (st == LT_OK) st = try_schedule(&S, &beam[0].s, &beam[0].t);
    if (st == LT_OK && !isfinite(beam[0].t))
        st = lt_error(ctx, LT_ERR_INVALID, "tuning %s: the base schedule '%s' does not apply or was rejected by measure",
                      k->name, txt ? txt : "?");
    res->base_s = beam[0].t;

    for (int round = 0; st == LT_OK && round < depth && res->trials < S.max_trials; round++) {
        res->rounds++;
        n_cands = 0;
        /* expand every beam entry */
        for (int b = 0; b < nb && st == LT_OK; b++) {
            bool ok;
            A.n = 0;
            st = apply(ctx, k, &S.root, &beam[b].s, &ok);
            if (st == LT_OK && ok && !enumerate(k, &sp, &A)) st = lt_error(ctx, LT_ERR_NOMEM, "tuning %s: out of memory", k->name);
            restore(k, &S.root);
            for (int a = 0; st == LT_OK && a < A.n; a++) {
                if (!extend(&beam[b].s, &A.a[a], tmp)) continue;
                const char *t = sched_text(&S, tmp);
                if (!t || !seen_add(&S.seen, t, &fresh)) {
                    st = lt_error(ctx, LT_ERR_NOMEM, "tuning %s: out of memory", k->name);
                    break;
                }
                if (!fresh) continue;
                if (n_cands == cap_cands) {
                    int cap = cap_cands ? cap_cands * 2 : 64;
                    cand *nc = lt_mem_realloc(cands, (size_t)cap * sizeof *nc);
                    if (!nc) {
                        st = lt_error(ctx, LT_ERR_NOMEM, "tuning %s: out of memory", k->name);
                        break;
                    }
                    cands = nc, cap_cands = cap;
                }
                cands[n_cands++] = (cand){b, A.a[a], INFINITY};
            }
        }
        /* measure them (within the trial budget) */
        for (int c = 0; st == LT_OK && c < n_cands && res->trials < S.max_trials; c++) {
            extend(&beam[cands[c].parent].s, &cands[c].act, tmp);
            st = try_schedule(&S, tmp, &cands[c].t);
        }
        if (st != LT_OK) break;
        /* next beam: the B fastest of the old beam and the measured candidates (old first on ties) */
        int nn = 0;
        bool changed = false;
        for (int pick = 0; pick < B; pick++) {
            double bt = INFINITY;
            int bi = -1; /* >= 0: beam index; <= -2: candidate -(bi+2) */
            for (int b = 0; b < nb; b++)
                if (beam[b].t < bt && !isinf(beam[b].t)) bt = beam[b].t, bi = b;
            for (int c = 0; c < n_cands; c++)
                if (cands[c].t < bt) bt = cands[c].t, bi = -2 - c;
            if (bi == -1) break;
            if (bi >= 0) {
                next[nn++] = beam[bi];
                beam[bi].t = INFINITY; /* taken */
            } else {
                cand *c = &cands[-2 - bi];
                extend(&beam[c->parent].s, &c->act, &next[nn].s);
                next[nn++].t = c->t;
                c->t = INFINITY;
                changed = true;
            }
        }
        memcpy(beam, next, (size_t)nn * sizeof *beam);
        nb = nn;
        if (!changed) break;
    }
    restore(k, &S.root);
    if (st == LT_OK) {
        res->best = beam[0].s; /* the beam is sorted: entry 0 is the fastest */
        res->best_s = beam[0].t;
        const lt_schedule *base = o.base ? o.base : &tmp[0];
        if (!o.base) memset(tmp, 0, sizeof *tmp);
        if (o.confirm > 0 && res->best_s < res->base_s) {
            double tb, tw;
            st = confirm(&S, base, &res->best, o.confirm, &tb, &tw);
            if (st == LT_OK && isfinite(tb)) {
                res->confirmed = o.confirm;
                res->base_s = tb;
                res->best_s = tw;
                if (!(tw < LT_TUNE_CONFIRM_GAIN * tb)) res->best = *base, res->best_s = tb; /* not faster after all */
            } else if (st == LT_OK) { /* the base failed a run: nothing to compare with, keep it */
                res->best = *base, res->best_s = res->base_s;
            }
        }
        if (st == LT_OK) *out = *res;
    }
    lt_mem_free(A.a);
    lt_mem_free(cands);
    lt_strmap_free(&S.seen.set);
    lt_arena_free(&S.seen.arena);
    lt_sb_free(&S.text);
    lt_mem_free(res), lt_mem_free(beam), lt_mem_free(next), lt_mem_free(tmp);
    return st;
}

lt_status lt_tune_kernel(lt_ctx *ctx, lt_tune_db *db, const lt_tune_key *key, lt_kernel *k,
                         const lt_tune_options *opt, lt_tune_measure_fn measure, void *user,
                         lt_tune_result *out, bool *hit) {
    if (hit) *hit = false;
    const lt_tune_entry *e = db ? lt_tune_db_lookup(db, key) : NULL;
    if (e) {
        lt_tune_result *r = lt_calloc(ctx, 1, sizeof *r, "tuning result");
        if (!r) return LT_ERR_NOMEM;
        lt_tune_entry_schedule(e, &r->best);
        r->best_s = r->base_s = e->time_s;
        *out = *r;
        lt_mem_free(r);
        if (hit) *hit = true;
        return LT_OK;
    }
    LT_TRY(lt_tune_search(ctx, k, opt, measure, user, out));
    if (db) LT_TRY(lt_tune_db_insert(ctx, db, key, &out->best, out->best_s, NULL));
    return LT_OK;
}
