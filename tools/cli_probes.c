/* cli_probes.c — `lathe compile` on a model that keeps symbolic dims (cli_family.h): the model,
 * compiled for every shape, built at each probe shape (--probe NAME:DIMS[,NAME:DIMS], inputs not named
 * taking their dims from those named; by default every combination of each ranged dim's low end,
 * midpoint and high end and of 1 and 8 for the other dims, at most 64), with one line per probe (the
 * bucket it took, whether a module was built), the modules and the shapes each runs, and the family's
 * counts and bucket report.
 */
#include "cli_family.h"

#include <stdlib.h>
#include <string.h>

enum { PSLOT = LT_MAX_RANK + 1, MAX_VARS = 64, MAX_DEFAULT_PROBES = 64 };

/* Shapes of the inputs without an initializer: per probe and input, the rank then the dims. */
typedef struct probes {
    const lt_model *m;
    const cli_dims *dims;
    int n_in;
    int *in_idx;        /* input -> graph input */
    int n;
    int64_t *shape;     /* n * n_in * PSLOT */
    int64_t total;      /* default probes: the combinations before the cap */
} probes;

static int64_t *probe_at(const probes *p, int k, int i) {
    return p->shape + ((size_t)k * (size_t)p->n_in + (size_t)i) * PSLOT;
}
static const lt_type *in_type(const probes *p, int i) { return &p->m->graph->inputs[p->in_idx[i]]->type; }

static int64_t *probes_add(probes *p) {
    size_t per = (size_t)p->n_in * PSLOT;
    int64_t *ns = realloc(p->shape, ((size_t)p->n + 1) * per * sizeof *ns + sizeof *ns);
    if (!ns) return NULL;
    p->shape = ns;
    memset(probe_at(p, p->n, 0), 0, per * sizeof *ns);
    return probe_at(p, p->n++, 0);
}

/* "4x33" (empty: a scalar). */
static bool parse_dims(const char *s, int64_t *d, int *rank) {
    *rank = 0;
    if (!*s) return true;
    for (;;) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || *rank == LT_MAX_RANK || (*end && *end != 'x' && *end != 'X')) return false;
        d[(*rank)++] = v;
        if (!*end) return true;
        s = end + 1;
    }
}

/* The value the probe's named inputs give symbolic dim `param` (false: none names it). */
static bool named_value(const probes *p, const int64_t *sh, const bool *named, const char *param, int64_t *out) {
    for (int j = 0; param && j < p->n_in; j++) {
        const lt_type *t = in_type(p, j);
        for (int b = 0; named[j] && t->kind == LT_TK_TENSOR && b < t->rank && b < sh[j * PSLOT]; b++)
            if (t->dims[b].value < 0 && t->dims[b].param && !strcmp(t->dims[b].param, param)) {
                *out = sh[j * PSLOT + 1 + b];
                return true;
            }
    }
    return false;
}

/* One input's NAME:DIMS of a --probe spec into sh. */
static int probe_item(probes *p, const char *spec, char *tok, int64_t *sh, bool *named) {
    char *colon = strrchr(tok, ':');
    if (!colon || colon == tok)
        return cli_usage("compile", "--probe %s: expected NAME:DIMS[,NAME:DIMS], e.g. --probe input_ids:4x33", spec);
    *colon = 0;
    int k = 0;
    while (k < p->n_in && strcmp(p->m->graph->inputs[p->in_idx[k]]->name, tok)) k++;
    if (k == p->n_in) return cli_usage("compile", "--probe %s: the model has no input '%s' to give", spec, tok);
    if (named[k]) return cli_usage("compile", "--probe %s: input '%s' is given twice", spec, tok);
    int rank;
    int64_t *d = sh + k * PSLOT + 1;
    if (!parse_dims(colon + 1, d, &rank))
        return cli_usage("compile", "--probe %s: '%s' is not sizes joined by x (e.g. 4x33)", spec, colon + 1);
    const lt_type *t = in_type(p, k);
    if (t->kind == LT_TK_TENSOR && t->rank >= 0 && rank != t->rank)
        return cli_usage("compile", "--probe %s: input '%s' has rank %d, not %d", spec, tok, t->rank, rank);
    for (int a = 0; t->kind == LT_TK_TENSOR && a < t->rank; a++)
        if (t->dims[a].value >= 0 && d[a] != t->dims[a].value)
            return cli_usage("compile", "--probe %s: input '%s' axis %d is %lld in the model, not %lld", spec, tok, a,
                             (long long)t->dims[a].value, (long long)d[a]);
    sh[k * PSLOT] = rank;
    named[k] = true;
    return 0;
}

/* The inputs a --probe spec does not name: their dims from the ones it names. */
static int probe_complete(probes *p, const char *spec, int64_t *sh, const bool *named) {
    for (int k = 0; k < p->n_in; k++) {
        const lt_type *t = in_type(p, k);
        const char *name = p->m->graph->inputs[p->in_idx[k]]->name;
        if (named[k]) continue;
        if (t->kind != LT_TK_TENSOR || t->rank < 0)
            return cli_usage("compile", "--probe %s: give the shape of input '%s' too", spec, name);
        sh[k * PSLOT] = t->rank;
        for (int a = 0; a < t->rank; a++) {
            int64_t *d = &sh[k * PSLOT + 1 + a];
            if (t->dims[a].value >= 0) *d = t->dims[a].value;
            else if (!named_value(p, sh, named, t->dims[a].param, d))
                return cli_usage("compile", "--probe %s: input '%s' axis %d (%s) is not given: give that input's shape "
                                 "too", spec, name, a, t->dims[a].param ? t->dims[a].param : "unnamed");
        }
    }
    return 0;
}

static int probe_in_ranges(const probes *p, const char *src, const int64_t *sh) {
    int rc = 0;
    for (int k = 0; k < p->n_in && !rc; k++)
        rc = cli_ranges_check_shape(p->dims, p->m->graph->inputs[p->in_idx[k]], (int)sh[k * PSLOT],
                                    &sh[k * PSLOT + 1], src);
    return rc;
}

static int parse_probe(probes *p, const char *spec) {
    int64_t *sh = probes_add(p);
    bool *named = calloc((size_t)p->n_in + 1, sizeof *named);
    char *copy = cli_copy_str(spec, strlen(spec)), *save = NULL, label[1100];
    int rc = 0;
    if (!sh || !named || !copy) {
        cli_error("out of memory");
        rc = CLI_EXIT_INVALID;
    }
    for (char *tok = rc ? NULL : strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save))
        rc = probe_item(p, spec, tok, sh, named);
    if (!rc) rc = probe_complete(p, spec, sh, named);
    cli_fmt(label, sizeof label, "--probe %s", spec);
    if (!rc) rc = probe_in_ranges(p, label, sh);
    free(copy);
    free(named);
    return rc;
}

/* A symbolic dim of the default probes: a name, or one unnamed axis; the values it takes. */
typedef struct probe_var {
    const char *param;
    int input, axis;
    int64_t v[3];
    int nv;
} probe_var;

static int var_find(const probe_var *vars, int nv, const char *param, int input, int axis) {
    for (int j = 0; j < nv; j++)
        if (param ? vars[j].param && !strcmp(vars[j].param, param)
                  : !vars[j].param && vars[j].input == input && vars[j].axis == axis)
            return j;
    return -1;
}

static void var_values(probe_var *v, const cli_dims *d) {
    const lt_dim_range *r = cli_dims_range(d, v->param);
    int64_t c[3] = {1, 8, 8};
    if (r) c[0] = r->lo, c[1] = r->lo + (r->hi - r->lo) / 2, c[2] = r->hi;
    v->nv = 0;
    for (int k = 0; k < 3; k++)
        if (!v->nv || v->v[v->nv - 1] != c[k]) v->v[v->nv++] = c[k];
}

/* Every combination of the dims' values (the last dim varying fastest), at most MAX_DEFAULT_PROBES. */
static int default_probes(probes *p) {
    probe_var vars[MAX_VARS];
    int nv = 0;
    for (int k = 0; k < p->n_in; k++) {
        const lt_type *t = in_type(p, k);
        for (int a = 0; a < t->rank; a++) {
            if (t->dims[a].value >= 0 || var_find(vars, nv, t->dims[a].param, k, a) >= 0) continue;
            if (nv == MAX_VARS)
                return cli_usage("compile", "more than %d symbolic dims: give the shapes with --probe", MAX_VARS);
            vars[nv] = (probe_var){.param = t->dims[a].param, .input = k, .axis = a};
            var_values(&vars[nv++], p->dims);
        }
    }
    p->total = 1;
    for (int j = 0; j < nv; j++) p->total = p->total > 1000000 ? p->total : p->total * vars[j].nv;
    for (int64_t c = 0; c < p->total && c < MAX_DEFAULT_PROBES; c++) {
        int64_t *sh = probes_add(p), val[MAX_VARS], idx = c;
        if (!sh) {
            cli_error("out of memory");
            return CLI_EXIT_INVALID;
        }
        for (int j = nv - 1; j >= 0; j--) val[j] = vars[j].v[idx % vars[j].nv], idx /= vars[j].nv;
        for (int k = 0; k < p->n_in; k++) {
            const lt_type *t = in_type(p, k);
            sh[k * PSLOT] = t->rank;
            for (int a = 0; a < t->rank; a++)
                sh[k * PSLOT + 1 + a] =
                    t->dims[a].value >= 0 ? t->dims[a].value : val[var_find(vars, nv, t->dims[a].param, k, a)];
        }
    }
    return 0;
}

/* "batch=1, sequence=8" (unnamed dims as input:axis), each name once. */
static void probe_label(const probes *p, int k, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < p->n_in; i++) {
        const lt_type *t = in_type(p, i);
        const int64_t *sh = probe_at(p, k, i);
        for (int a = 0; t->kind == LT_TK_TENSOR && a < t->rank && len + 2 < n; a++) {
            const char *param = t->dims[a].param;
            if (t->dims[a].value >= 0) continue;
            bool seen = false;
            for (int j = 0; param && j <= i && !seen; j++)
                for (int b = 0; b < in_type(p, j)->rank && (j < i || b < a) && !seen; b++)
                    seen = in_type(p, j)->dims[b].param && !strcmp(in_type(p, j)->dims[b].param, param);
            if (seen) continue;
            int w = param ? snprintf(buf + len, n - len, "%s%s=%lld", len ? ", " : "", param, (long long)sh[1 + a])
                          : snprintf(buf + len, n - len, "%s%s:%d=%lld", len ? ", " : "",
                                     p->m->graph->inputs[p->in_idx[i]]->name, a, (long long)sh[1 + a]);
            if (w > 0) len += (size_t)w < n - len ? (size_t)w : n - len - 1;
        }
    }
}

static void print_header(const probes *p, bool given) {
    printf("compiled for every shape at %d probe shape%s (", p->n, p->n == 1 ? "" : "s");
    if (given) printf("--probe");
    else {
        printf("default: each ranged dim at its low end, midpoint and high end, the others at 1 and 8; every "
               "combination");
        if (p->total > p->n) printf(", the first %d of %lld", p->n, (long long)p->total);
    }
    for (int r = 0; r < p->dims->n_ranges; r++)
        printf("%s%s=%lld..%lld", r ? ", " : "; ranges ", cli_esc(p->dims->ranges[r].name),
               (long long)p->dims->ranges[r].lo, (long long)p->dims->ranges[r].hi);
    printf("; default schedules, no tuning database)\n");
}

/* Build every probe; mod_of[k]: the module probe k took (0: none or failed). Exit code of the first failure. */
static int build_probes(cli_family *cf, const probes *p, int *mod_of, bool print_plan) {
    int rc = 0;
    int ranks[64];
    const int64_t *dims[64];
    if (p->n_in > 64) {
        cli_error("a model of more than 64 inputs compiled for every shape");
        return CLI_EXIT_UNSUPPORTED;
    }
    for (int k = 0; k < p->n; k++) {
        char label[512], src[600], step[256];
        for (int i = 0; i < p->n_in; i++) ranks[i] = (int)probe_at(p, k, i)[0], dims[i] = probe_at(p, k, i) + 1;
        probe_label(p, k, label, sizeof label);
        cli_fmt(src, sizeof src, "probe %d (%s)", k + 1, label);
        lt_plan *plan = NULL;
        cli_family_step st;
        int r = cli_family_plan_shapes(cf, src, ranks, dims, &plan, &st);
        if (r) {
            rc = rc ? rc : r;
            continue;
        }
        mod_of[k] = st.module;
        cli_family_step_describe(&st, step, sizeof step);
        printf("probe %d: %s: %s\n", k + 1, cli_esc(label), step);
        if (print_plan && plan) {
            lt_strbuf b = {0};
            lt_plan_print(plan, &b);
            if (b.s) cli_put_text(stdout, b.s);
            lt_sb_free(&b);
        }
    }
    return rc;
}

/* "module 1 (bucket 1): batch=1, sequence=1; batch=1, sequence=8" */
static void print_modules(const cli_family *cf, const probes *p, const int *mod_of) {
    for (int md = 1; md <= cf->n_mods; md++) {
        printf("module %d (bucket %d) runs:", md, cf->mod_bucket[md - 1]);
        int shown = 0;
        for (int k = 0; k < p->n; k++) {
            char label[512];
            if (mod_of[k] != md) continue;
            probe_label(p, k, label, sizeof label);
            printf("%s %s", shown++ ? ";" : "", cli_esc(label));
        }
        printf("\n");
    }
}

int cli_family_report(cli_compile_args *ca, const char *path, int n_shapes, const char *const *shapes,
                      const cli_dims *dims, const lt_model *m, int n_probes, const char *const *specs,
                      bool print_plan) {
    probes p = {.m = m, .dims = dims};
    cli_family cf = {0};
    int *mod_of = NULL, rc = 0;
    p.in_idx = calloc((size_t)m->graph->n_inputs + 1, sizeof *p.in_idx);
    if (!p.in_idx) {
        cli_error("out of memory");
        return CLI_EXIT_INVALID;
    }
    for (int i = 0; i < m->graph->n_inputs; i++)
        if (!m->graph->inputs[i]->init) p.in_idx[p.n_in++] = i;
    for (int k = 0; k < n_probes && !rc; k++) rc = parse_probe(&p, specs[k]);
    if (!rc && !n_probes) rc = default_probes(&p);
    if (!rc && !(mod_of = calloc((size_t)p.n + 1, sizeof *mod_of))) {
        cli_error("out of memory");
        rc = CLI_EXIT_INVALID;
    }
    if (!rc && !(rc = cli_family_open(ca, path, n_shapes, shapes, dims, m, &cf))) {
        printf("model: %s\n", cli_esc(path));
        print_header(&p, n_probes > 0);
        if (ca->o.emit_only)
            printf("--target %s: kernels emitted, not built (no device needed): a module built is a distinct source, "
                   "the builds these shapes need\n", cli_esc(ca->backend));
        rc = build_probes(&cf, &p, mod_of, print_plan);
        print_modules(&cf, &p, mod_of);
        cli_family_print(&cf, stdout);
    }
    cli_family_close(&cf);
    free(mod_of);
    free(p.shape);
    free(p.in_idx);
    return rc;
}
