/* family.c — one compiled model for every input shape (family.h): a plan per shape from the host
 * pipeline, buckets of shapes that share one built module through kernels with run-time scalars.
 *
 * The compile of a shape runs with three hooks of the compile options: kernels_hook (here `hook`)
 * after the loop passes picks the bucket whose structure and constants the kernels have and rewrites
 * them with its masks, or makes a new bucket from a probe compile; module_lookup finds the module
 * built from the emitted source; module_built keeps a new one.
 */
#include "family.h"
#include "split.h"

#include <stdio.h>
#include <string.h>

#include "../base/hash.h"
#include "../loop/kparams.h"
#include "../ops/infer.h"

/* Probes: the model lowered again at other sizes, each kernel's immediates compared with the
 * shape's. Four of them (those equal to an earlier one are skipped): every symbolic dim moved to a
 * prime just above it, and to a prime above twice it (a kernel that does not care about
 * divisibility varies with any size; primes keep chance common divisors out of the scalars' strides,
 * and the far probe moves what a size decides only coarsely, such as a grid extent of ceil(n/256));
 * the same two with the dims that are multiples of 8 moved by multiples of 8 instead (a kernel whose
 * vector tails or blocking depend on the size's residue varies with sizes of the same residue).
 * Each kernel is compared with every probe of its structure. */
enum { N_PROBES = 4 };

static bool is_prime(int64_t v) {
    if (v < 2) return false;
    for (int64_t d = 2; d <= v / d; d++)
        if (v % d == 0) return false;
    return true;
}

/* Candidate c of probe q for a dim of size v (c = 0, 1, ...; 0 when there are no more). */
static int64_t probe_candidate(int q, int64_t v, int c) {
    if (q % 2 == 1 && v % 8 == 0) { /* the residue probes */
        static const int64_t near[6] = {8, -8, 16, -16, 24, -24};
        if (q == 1) return c < 6 ? v + near[c] : 0;
        return c == 0 ? 2 * v : c <= 6 ? 2 * v + near[c - 1] : 0; /* 2v, 2v+8, 2v-8, ... */
    }
    /* a prime a quarter above v (so floor(v / 8) moves too, for v >= 32) or above 2v; else below v */
    int64_t from = q < 2 ? v + (v / 4 > 1 ? v / 4 : 1) : 2 * v + 1;
    int seen = 0;
    for (int64_t x = from; x < from + 2000; x++)
        if (is_prime(x) && seen++ == c) return x;
    for (int64_t x = v - 1; x >= 2; x--)
        if (is_prime(x) && seen++ == c) return x;
    return 0;
}

typedef struct kref {   /* one group of a bucket */
    bool has_kernel;
    lt_kscan scan;      /* its kernel at the shape the bucket was made at */
    lt_kmask mask;      /* which immediates are scalars */
} kref;

typedef struct bucket {
    int n_groups;
    kref *k;
    char made_at[256];  /* "batch=2, sequence=16" */
    int shapes;         /* plans that used it */
    int n_kernels, n_scalar_kernels, n_scalars;
} bucket;

typedef struct module_entry {
    char sha[65];
    lt_bmodule *m;
} module_entry;

typedef struct graph_slot_ref { /* the shared graph of a bucket's segment */
    int bucket, segment;
    lt_plan_graph_slot *slot;       /* in the family's arena: outlives the plans */
} graph_slot_ref;

typedef struct dev_const {      /* a backend buffer of constant bytes that plans share */
    char *name;                 /* the constant (or "packed <constant>") it was made for (lt_mem) */
    int64_t bytes;
    void *dptr;
    int refs;                   /* plans holding it; freed at 0 */
    bool packed;                /* a packed weight (pack_adopt), else a device constant (const_acquire) */
} dev_const;

typedef struct cached_plan {
    int64_t *key;       /* ranks and dims of the inputs */
    int key_len;
    lt_model *m;
    lt_plan *p;
    uint64_t used;      /* the clock of its last use */
} cached_plan;

struct lt_family {
    lt_family_options o;
    const lt_model *model; /* as loaded, symbolic dims (the caller's: options.model) */
    int n_in;
    int *in_idx;        /* public input -> graph input */
    const char **given; /* NULL-terminated: the public inputs' names, given at run time */
    lt_arena arena;     /* buckets */
    lt_backend *backend;/* shared by every plan; NULL: a backend that compiles nothing (loopir) */
    bucket *buckets;
    int n_buckets;
    module_entry *mods;
    int n_mods;
    cached_plan *plans;
    int n_plans;
    int last_module;    /* 1-based: the module the last compiled plan took (0: none) */
    void *ws;           /* the workspace every plan runs in (plans run one at a time), ws_bytes big */
    int64_t ws_bytes;
    uint64_t clock;
    lt_family_stats stats;
    /* the compile in flight */
    bool probing;
    int cur_probe;      /* the probe compile running (index into the next three) */
    int probe_n[N_PROBES]; /* groups of each probe compile (-1: none) */
    lt_kscan *probe[N_PROBES]; /* their kernels' scans (probe_has: which groups have one) */
    bool *probe_has[N_PROBES];
    lt_arena probe_arena;
    const int *cur_ranks;
    const int64_t *const *cur_dims;
    int cur_bucket;
    lt_rest_cache *rests; /* the rest models its plans split off (src/compile/split.h), shared */
    graph_slot_ref *gslots; /* device plans: a few instantiated graphs per bucket and segment */
    int n_gslots;
    dev_const *consts;  /* device plans: the constants' buffers, shared by plans of equal bytes */
    int n_consts;
};

const lt_model *lt_family_model(const lt_family *f) { return f->model; }
int lt_family_last_module(const lt_family *f) { return f->last_module; }
void lt_family_get_stats(const lt_family *f, lt_family_stats *out) {
    *out = f->stats;
    for (int i = 0; i < f->n_gslots; i++) {
        for (int k = 0; k < LT_GRAPH_SLOT_MAX; k++) out->graphs += f->gslots[i].slot->loaded[k] != 0;
        out->graphs_instantiated += f->gslots[i].slot->instantiated;
        out->graphs_updated += f->gslots[i].slot->updated;
    }
}

/* ---- shapes ---- */

/* The declared dim of public input i, axis a (value -1: symbolic; also when the rank is unknown). */
static lt_dim declared(const lt_family *f, int i, int a) {
    const lt_type *t = &f->model->graph->inputs[f->in_idx[i]]->type;
    if (t->kind != LT_TK_TENSOR || t->rank < 0 || a >= t->rank) return (lt_dim){-1, NULL};
    return t->dims[a];
}

static const lt_dim_range *range_of(const lt_family *f, const char *param) {
    for (int r = 0; param && r < f->o.n_ranges; r++)
        if (!strcmp(f->o.ranges[r].name, param)) return &f->o.ranges[r];
    return NULL;
}

/* The first place (*j, *b) before input i, axis a where symbolic dim `param` is declared too. */
static bool named_earlier(const lt_family *f, const int *ranks, const char *param, int i, int a, int *j, int *b) {
    for (*j = 0; param && *j <= i; (*j)++)
        for (*b = 0; *b < ranks[*j] && (*j < i || *b < a); (*b)++) {
            lt_dim e = declared(f, *j, *b);
            if (e.value < 0 && e.param && !strcmp(e.param, param)) return true;
        }
    return false;
}

/* Check the shapes against the declared types and ranges; the same named dim must agree. */
static lt_status check_shapes(lt_ctx *ctx, const lt_family *f, const int *ranks, const int64_t *const *dims) {
    for (int i = 0; i < f->n_in; i++) {
        const lt_value *v = f->model->graph->inputs[f->in_idx[i]];
        if (v->type.kind == LT_TK_TENSOR && v->type.rank >= 0 && ranks[i] != v->type.rank)
            return lt_error(ctx, LT_ERR_USAGE, "input '%s' has rank %d, the model's has %d", v->name, ranks[i], v->type.rank);
        for (int a = 0; a < ranks[i]; a++) {
            lt_dim d = declared(f, i, a);
            if (d.value >= 0 && dims[i][a] != d.value)
                return lt_error(ctx, LT_ERR_USAGE, "input '%s' axis %d is %lld, the model's is %lld", v->name, a,
                                (long long)dims[i][a], (long long)d.value);
            if (dims[i][a] < 0) return lt_error(ctx, LT_ERR_USAGE, "input '%s' axis %d is negative", v->name, a);
            const lt_dim_range *r = range_of(f, d.param);
            if (r && (dims[i][a] < r->lo || dims[i][a] > r->hi))
                return lt_error(ctx, LT_ERR_USAGE, "input '%s' dim '%s' (axis %d) is %lld, outside its range %lld..%lld",
                                v->name, d.param, a, (long long)dims[i][a], (long long)r->lo, (long long)r->hi);
            int j, b; /* the same name, the same size */
            if (named_earlier(f, ranks, d.param, i, a, &j, &b) && dims[j][b] != dims[i][a])
                return lt_error(ctx, LT_ERR_USAGE, "dim '%s' is %lld in input '%s' (axis %d) but %lld in '%s' (axis %d)",
                                d.param, (long long)dims[j][b], f->model->graph->inputs[f->in_idx[j]]->name, b,
                                (long long)dims[i][a], v->name, a);
        }
    }
    return LT_OK;
}

/* A probe's shapes: each symbolic dim (a named one everywhere alike; unnamed ones by their size)
 * moved to the first of the probe's candidates that is >= 2, in its range and apart from the other
 * symbols' probes; a dim of 1 stays 1 (a batch of one is its own bucket). */
static void probe_shapes(const lt_family *f, const int *ranks, const int64_t *const *dims, int probe, int64_t **out) {
    enum { MAXK = 64 };
    const char *kname[MAXK];
    int64_t kval[MAXK], kprobe[MAXK];
    int nk = 0;
    for (int i = 0; i < f->n_in; i++)
        for (int a = 0; a < ranks[i]; a++) {
            lt_dim d = declared(f, i, a);
            int64_t v = dims[i][a];
            out[i][a] = v;
            if (d.value >= 0 || v <= 1) continue;
            int k = 0;
            while (k < nk && !(d.param ? kname[k] && !strcmp(kname[k], d.param) : !kname[k] && kval[k] == v)) k++;
            if (k == nk) {
                if (nk == MAXK) continue;
                const lt_dim_range *r = range_of(f, d.param);
                int64_t lo = r && r->lo > 2 ? r->lo : 2, hi = r ? r->hi : INT64_MAX / 4, p = v;
                for (int st = 0; st < 64 && p == v; st++) {
                    int64_t c = probe_candidate(probe, v, st);
                    if (!c) break;
                    bool taken = false;
                    for (int j = 0; j < nk; j++) taken |= kprobe[j] == c;
                    if (c >= lo && c <= hi && !taken) p = c;
                }
                kname[nk] = d.param, kval[nk] = v, kprobe[nk] = p;
                nk++;
            }
            out[i][a] = kprobe[k];
        }
}

/* "batch=2, sequence=16" (unnamed dims as input:axis). */
static void describe(const lt_family *f, const int *ranks, const int64_t *const *dims, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < f->n_in; i++)
        for (int a = 0; a < ranks[i]; a++) {
            lt_dim d = declared(f, i, a);
            if (d.value >= 0) continue;
            int j, b;
            if (named_earlier(f, ranks, d.param, i, a, &j, &b) || len + 2 >= n) continue;
            int w = d.param ? snprintf(buf + len, n - len, "%s%s=%lld", len ? ", " : "", d.param, (long long)dims[i][a])
                            : snprintf(buf + len, n - len, "%s%s:%d=%lld", len ? ", " : "",
                                       f->model->graph->inputs[f->in_idx[i]]->name, a, (long long)dims[i][a]);
            if (w > 0) len += (size_t)w < n - len ? (size_t)w : n - len - 1;
        }
}

/* ---- the compile hooks ---- */

static int module_index(const lt_family *f, const char *sha) { /* -1: none built from this source */
    for (int i = 0; i < f->n_mods; i++)
        if (!strcmp(f->mods[i].sha, sha)) return i;
    return -1;
}

static lt_bmodule *module_lookup(void *user, const char *sha) {
    lt_family *f = user;
    int i = module_index(f, sha);
    if (i >= 0) f->last_module = i + 1;
    return i < 0 ? NULL : f->mods[i].m;
}

static void module_built(void *user, lt_bmodule *m, const char *sha) {
    lt_family *f = user;
    module_entry *nm = lt_mem_realloc(f->mods, (size_t)(f->n_mods + 1) * sizeof *nm);
    if (!nm) return; /* out of memory: the module is not found again (and not freed: a plan may hold it) */
    f->mods = nm;
    snprintf(f->mods[f->n_mods].sha, sizeof f->mods[f->n_mods].sha, "%s", sha);
    f->mods[f->n_mods++].m = m;
    f->last_module = f->n_mods;
    f->stats.modules_built++;
}

/* Does bucket b take these kernels (scans sc, has: which groups have a kernel)? */
static bool bucket_takes(const bucket *b, const lt_kscan *sc, const lt_lowered *lw, int n) {
    if (b->n_groups != n) return false;
    for (int i = 0; i < n; i++) {
        const kref *r = &b->k[i];
        if (r->has_kernel != (lw[i].kernel != NULL)) return false;
        if (!r->has_kernel) continue;
        if (!lt_kparams_fits(&sc[i], &r->mask)) return false;
        for (int p = 0; p < sc[i].n; p++) /* constants stay the bucket's */
            if (r->mask.slot[p] < 0 && sc[i].bits[p] != r->scan.bits[p]) return false;
    }
    return true;
}

static lt_status compile_at(lt_ctx *ctx, lt_family *f, const int *ranks, const int64_t *const *dims, bool probe,
                            lt_model **m_out, lt_plan **p_out);
static lt_status workspace(void *user, lt_ctx *ctx, int64_t bytes, void **out);

/* A new bucket from these kernels and a probe compile's. */
static lt_status new_bucket(lt_ctx *ctx, lt_family *f, const lt_kscan *sc, const lt_lowered *lw, int n) {
    int64_t *pd[64];
    int64_t store[64][LT_MAX_RANK], earlier[N_PROBES][64][LT_MAX_RANK];
    if (f->n_in > 64) return lt_error(ctx, LT_ERR_UNSUPPORTED, "a model of more than 64 inputs");
    for (int i = 0; i < f->n_in; i++) pd[i] = store[i];
    /* the probes: lowered at other sizes, stopped before emitting (a failure only costs sharing) */
    for (int q = 0; q < N_PROBES; q++) {
        f->probe_n[q] = -1;
        probe_shapes(f, f->cur_ranks, f->cur_dims, q, pd);
        bool same = true; /* as the shape itself, or as an earlier probe: nothing new to learn */
        for (int i = 0; i < f->n_in; i++)
            for (int a = 0; a < f->cur_ranks[i]; a++) same &= pd[i][a] == f->cur_dims[i][a];
        for (int e = 0; e < q && !same; e++) {
            bool eq = true;
            for (int i = 0; i < f->n_in; i++)
                for (int a = 0; a < f->cur_ranks[i]; a++) eq &= pd[i][a] == earlier[e][i][a];
            same = eq;
        }
        for (int i = 0; i < f->n_in; i++)
            for (int a = 0; a < f->cur_ranks[i]; a++) earlier[q][i][a] = pd[i][a];
        if (same) continue;
        lt_ctx c2 = {0};
        f->probing = true, f->cur_probe = q;
        lt_status ps = compile_at(&c2, f, f->cur_ranks, (const int64_t *const *)pd, true, NULL, NULL);
        f->probing = false;
        if (ps == LT_ERR_NOMEM) return lt_error(ctx, ps, "out of memory (probe compile)");
        if (ps != LT_OK) f->probe_n[q] = -1;
    }
    bucket *nb = lt_mem_realloc(f->buckets, (size_t)(f->n_buckets + 1) * sizeof *nb);
    if (!nb) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (buckets)");
    f->buckets = nb;
    bucket *b = &f->buckets[f->n_buckets];
    memset(b, 0, sizeof *b);
    b->n_groups = n;
    b->k = lt_arena_alloc(&f->arena, ((size_t)n + 1) * sizeof *b->k);
    if (!b->k) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (buckets)");
    memset(b->k, 0, ((size_t)n + 1) * sizeof *b->k);
    describe(f, f->cur_ranks, f->cur_dims, b->made_at, sizeof b->made_at);
    for (int i = 0; i < n; i++) {
        kref *r = &b->k[i];
        if (!(r->has_kernel = lw[i].kernel != NULL)) continue;
        r->scan = sc[i]; /* copied into the family's arena */
        r->scan.bits = lt_arena_alloc(&f->arena, ((size_t)sc[i].n + 1) * sizeof *r->scan.bits);
        r->scan.is_float = lt_arena_alloc(&f->arena, ((size_t)sc[i].n + 1) * sizeof *r->scan.is_float);
        r->scan.in_index = lt_arena_alloc(&f->arena, ((size_t)sc[i].n + 1) * sizeof *r->scan.in_index);
        if (!r->scan.bits || !r->scan.is_float || !r->scan.in_index)
            return lt_error(ctx, LT_ERR_NOMEM, "out of memory (buckets)");
        if (sc[i].n) {
            memcpy(r->scan.bits, sc[i].bits, (size_t)sc[i].n * sizeof *sc[i].bits);
            memcpy(r->scan.is_float, sc[i].is_float, (size_t)sc[i].n * sizeof *sc[i].is_float);
            memcpy(r->scan.in_index, sc[i].in_index, (size_t)sc[i].n * sizeof *sc[i].in_index);
        }
        const lt_kscan *same[N_PROBES + 1] = {&sc[i]}; /* this kernel at every probe of its structure */
        int n_same = 1;
        for (int q = 0; q < N_PROBES; q++)
            if (f->probe_n[q] == n && f->probe_has[q][i] && !strcmp(f->probe[q][i].hash, sc[i].hash) &&
                f->probe[q][i].n == sc[i].n)
                same[n_same++] = &f->probe[q][i];
        if (!lt_kparams_diff(same, n_same, &f->arena, &r->mask)) /* no probe of its structure: all constants */
            return lt_error(ctx, LT_ERR_NOMEM, "out of memory (buckets)");
        b->n_kernels++;
        b->n_scalar_kernels += r->mask.n_slots > 0;
        b->n_scalars += r->mask.n_slots;
    }
    f->n_buckets++;
    f->stats.buckets = f->n_buckets;
    return LT_OK;
}

static lt_status hook(void *user, lt_ctx *ctx, const lt_target *t, lt_lowered *lw, int n) {
    (void)t;
    lt_family *f = user;
    if (f->probing) { /* record the probe's kernels */
        int q = f->cur_probe;
        f->probe_n[q] = n;
        f->probe[q] = lt_arena_alloc(&f->probe_arena, ((size_t)n + 1) * sizeof *f->probe[q]);
        f->probe_has[q] = lt_arena_alloc(&f->probe_arena, ((size_t)n + 1) * sizeof *f->probe_has[q]);
        if (!f->probe[q] || !f->probe_has[q]) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (probe)");
        for (int i = 0; i < n; i++) {
            f->probe_has[q][i] = lw[i].kernel != NULL;
            if (f->probe_has[q][i]) LT_TRY(lt_kparams_scan(ctx, lw[i].kernel, &f->probe_arena, &f->probe[q][i]));
        }
        return LT_OK;
    }
    lt_arena tmp;
    lt_arena_init(&tmp);
    lt_status s = LT_OK;
    lt_kscan *sc = lt_arena_alloc(&tmp, ((size_t)n + 1) * sizeof *sc);
    if (!sc) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel scans)");
    for (int i = 0; s == LT_OK && i < n; i++)
        if (lw[i].kernel) s = lt_kparams_scan(ctx, lw[i].kernel, &tmp, &sc[i]);
    int b = -1;
    for (int i = f->n_buckets - 1; s == LT_OK && i >= 0 && b < 0; i--)
        if (bucket_takes(&f->buckets[i], sc, lw, n)) b = i;
    if (s == LT_OK && b < 0 && (s = new_bucket(ctx, f, sc, lw, n)) == LT_OK) b = f->n_buckets - 1;
    for (int i = 0; s == LT_OK && i < n; i++)
        if (lw[i].kernel) s = lt_kparams_apply(ctx, lw[i].kernel, &sc[i], &f->buckets[b].k[i].mask);
    if (s == LT_OK) {
        f->cur_bucket = b;
        f->buckets[b].shapes++;
        f->stats.kernels = f->buckets[b].n_kernels;
        f->stats.kernels_scalar = f->buckets[b].n_scalar_kernels;
    }
    lt_arena_free(&tmp);
    lt_arena_free(&f->probe_arena);
    lt_arena_init(&f->probe_arena);
    for (int q = 0; q < N_PROBES; q++) f->probe_n[q] = -1;
    return s;
}

/* ---- compiles ---- */

/* The plan being built asks for a device buffer holding constant `name`'s bytes
 * (lt_plan_device_share.const_acquire): one that an earlier plan uploaded for a constant of that name
 * and size when its device bytes equal these (compared exactly: downloaded, then memcmp), else a new
 * upload. Every shape's plan holds the model's weights, so without this each cached plan had a copy
 * on the device. */
static lt_status const_acquire(void *user, lt_ctx *ctx, const char *name, const void *host, int64_t bytes, void **out) {
    lt_family *f = user;
    const lt_backend_vtbl *vt = f->backend->vt;
    void *tmp = NULL;
    for (int i = 0; i < f->n_consts; i++) {
        dev_const *c = &f->consts[i];
        if (c->packed || c->bytes != bytes || strcmp(c->name, name) != 0) continue;
        if (bytes > 0) {
            if (!tmp && !(tmp = lt_mem_alloc((size_t)bytes)))
                return lt_error(ctx, LT_ERR_NOMEM, "out of memory (comparing constant '%s')", name);
            lt_status s = vt->copy(f->backend, ctx, tmp, c->dptr, (size_t)bytes, LT_COPY_DEVICE_TO_HOST);
            if (s != LT_OK) {
                lt_mem_free(tmp);
                return s;
            }
            if (memcmp(tmp, host, (size_t)bytes) != 0) continue;
        }
        lt_mem_free(tmp);
        c->refs++;
        f->stats.consts_shared++;
        *out = c->dptr;
        return LT_OK;
    }
    lt_mem_free(tmp);
    dev_const *nc = lt_mem_realloc(f->consts, (size_t)(f->n_consts + 1) * sizeof *nc);
    if (!nc) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (device constants)");
    f->consts = nc;
    dev_const c = {.name = lt_mem_strdup(name), .bytes = bytes, .refs = 1};
    if (!c.name) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (device constants)");
    lt_status s = vt->alloc(f->backend, ctx, (size_t)(bytes > 0 ? bytes : 1), &c.dptr);
    if (s == LT_OK && bytes > 0) s = vt->copy(f->backend, ctx, c.dptr, host, (size_t)bytes, LT_COPY_HOST_TO_DEVICE);
    if (s != LT_OK) {
        if (c.dptr) vt->free(f->backend, c.dptr);
        lt_mem_free(c.name);
        return s;
    }
    f->consts[f->n_consts++] = c;
    f->stats.const_bytes += bytes;
    *out = c.dptr;
    return LT_OK;
}

/* Are the n bytes of backend buffers a and b equal? (Device buffers are downloaded first.) */
static lt_status same_bytes(lt_family *f, lt_ctx *ctx, const void *a, const void *b, int64_t n, bool *same) {
    const lt_backend_vtbl *vt = f->backend->vt;
    if (vt->host_memory || n == 0) {
        *same = n == 0 || memcmp(a, b, (size_t)n) == 0;
        return LT_OK;
    }
    char *ha = lt_mem_alloc((size_t)n), *hb = lt_mem_alloc((size_t)n);
    lt_status s = ha && hb ? LT_OK : lt_error(ctx, LT_ERR_NOMEM, "out of memory (comparing packed weights)");
    if (s == LT_OK) s = vt->copy(f->backend, ctx, ha, a, (size_t)n, LT_COPY_DEVICE_TO_HOST);
    if (s == LT_OK) s = vt->copy(f->backend, ctx, hb, b, (size_t)n, LT_COPY_DEVICE_TO_HOST);
    *same = s == LT_OK && memcmp(ha, hb, (size_t)n) == 0;
    lt_mem_free(ha);
    lt_mem_free(hb);
    return s;
}

/* A plan's packed weight, just filled (lt_plan_device_share.pack_adopt): an earlier plan's buffer
 * of the same name and bytes replaces it (freed), else the family keeps it for the next plans. A pack
 * is a function of the constant and the packing, which buckets may choose differently: the bytes
 * decide. Packing costs each plan its pack kernels still; the memory is one copy. */
static lt_status pack_adopt(void *user, lt_ctx *ctx, const char *name, int64_t bytes, void **buf) {
    lt_family *f = user;
    for (int i = 0; i < f->n_consts; i++) {
        dev_const *c = &f->consts[i];
        if (!c->packed || c->bytes != bytes || strcmp(c->name, name) != 0) continue;
        bool same = false;
        LT_TRY(same_bytes(f, ctx, c->dptr, *buf, bytes, &same));
        if (!same) continue;
        f->backend->vt->free(f->backend, *buf);
        *buf = c->dptr;
        c->refs++;
        f->stats.packs_shared++;
        return LT_OK;
    }
    dev_const *nc = lt_mem_realloc(f->consts, (size_t)(f->n_consts + 1) * sizeof *nc);
    if (!nc) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (packed weights)");
    f->consts = nc;
    dev_const c = {.name = lt_mem_strdup(name), .bytes = bytes, .dptr = *buf, .refs = 1, .packed = true};
    if (!c.name) return lt_error(ctx, LT_ERR_NOMEM, "out of memory (packed weights)");
    f->consts[f->n_consts++] = c;
    f->stats.pack_bytes += bytes;
    return LT_OK;
}

static void const_release(void *user, void *dptr) {
    lt_family *f = user;
    for (int i = 0; i < f->n_consts; i++) {
        dev_const *c = &f->consts[i];
        if (c->dptr != dptr || --c->refs > 0) continue;
        f->backend->vt->free(f->backend, c->dptr);
        if (c->packed) f->stats.pack_bytes -= c->bytes;
        else f->stats.const_bytes -= c->bytes;
        lt_mem_free(c->name);
        f->consts[i] = f->consts[--f->n_consts];
        return;
    }
}

/* The plan being built asks for the shared graphs of its segment k (lt_plan_device_share.graph_slot):
 * plans of one bucket launch the same kernels, so a few instantiated graphs per segment serve them
 * all, one updated in place to a plan none holds. Four: shapes that come in turn (a server's
 * requests) replay without updates (updating pplcnet_ci's 49-kernel graph added ~40 us to a 0.19 ms
 * run on an H200), while a bucket's graphs stay bounded. */
enum { GRAPHS_PER_SLOT = 4 };
static lt_plan_graph_slot *graph_slot(void *user, int segment) {
    lt_family *f = user;
    if (f->cur_bucket < 0) return NULL;
    for (int i = 0; i < f->n_gslots; i++)
        if (f->gslots[i].bucket == f->cur_bucket && f->gslots[i].segment == segment) return f->gslots[i].slot;
    graph_slot_ref *ng = lt_mem_realloc(f->gslots, (size_t)(f->n_gslots + 1) * sizeof *ng);
    if (!ng) return NULL; /* the plan instantiates its own */
    f->gslots = ng;
    lt_plan_graph_slot *slot = lt_arena_alloc(&f->arena, sizeof *slot);
    if (!slot) return NULL;
    memset(slot, 0, sizeof *slot);
    slot->capacity = GRAPHS_PER_SLOT;
    f->gslots[f->n_gslots++] = (graph_slot_ref){f->cur_bucket, segment, slot};
    return slot;
}

/* The model bound at these shapes, compiled (probe: only up to the loop passes, for hook). */
static lt_status compile_at(lt_ctx *ctx, lt_family *f, const int *ranks, const int64_t *const *dims, bool probe,
                            lt_model **m_out, lt_plan **p_out) {
    lt_model *m = NULL;
    LT_TRY(f->o.load(f->o.load_user, ctx, &m));
    lt_status s = LT_OK;
    for (int i = 0; s == LT_OK && i < f->n_in; i++)
        s = lt_model_bind_shape(ctx, m, f->model->graph->inputs[f->in_idx[i]]->name, ranks[i], dims[i]);
    lt_compile_options co = f->o.compile;
    co.given_inputs = f->given;
    co.shape_generic = true;
    co.rest_cache = f->rests;
    int64_t sizes[64];
    co.symbolic_sizes = sizes, co.n_symbolic_sizes = 0;
    for (int i = 0; i < f->n_in; i++)
        for (int a = 0; a < ranks[i] && co.n_symbolic_sizes < 64; a++)
            if (declared(f, i, a).value < 0) sizes[co.n_symbolic_sizes++] = dims[i][a];
    lt_strbuf src = {0};
    bool count_source = f->o.compile.emit_only && !probe; /* its hash stands for the module */
    co.emit_source = count_source ? &src : NULL;
    if (f->backend || f->o.compile.emit_only) {
        co.shared_backend = f->backend;
        co.kernels_hook = hook;
        co.module_lookup = module_lookup;
        co.module_built = module_built;
        co.share_user = f;
        if (f->backend) co.workspace = workspace, co.workspace_user = f;
    }
    /* the plan copies it at build, within lt_compile below */
    lt_plan_device_share share = {.graph_slot = graph_slot, .pack_adopt = pack_adopt, .const_release = const_release,
                                  .user = f};
    if (f->backend && !f->backend->vt->host_memory) share.const_acquire = const_acquire;
    if (f->backend) co.device_share = &share;
    if (probe) {
        co.stop_after_stage = lt_compile_stage_name(LT_STAGE_SIMPLIFY);
        co.dump_code_dir = NULL, co.dump_graph = NULL, co.dump_after = NULL, co.progress = NULL;
    }
    lt_plan *p = NULL;
    lt_compile_report rep = {0};
    if (s == LT_OK) s = lt_compile(ctx, m, &co, &p, &rep);
    lt_compile_report_free(&rep);
    if (s == LT_OK && count_source) { /* emit only: a module per distinct source, none built */
        char sha[65];
        lt_sha256_hex(src.s ? src.s : "", src.len, sha);
        int i = module_index(f, sha);
        if (i < 0) module_built(f, NULL, sha);
        else f->last_module = i + 1;
    }
    lt_sb_free(&src);
    if (s != LT_OK || probe) {
        lt_plan_free(p);
        lt_model_free(m);
        return s;
    }
    *m_out = m;
    *p_out = p;
    return LT_OK;
}

lt_status lt_family_new(lt_ctx *ctx, const lt_family_options *o, lt_family **out) {
    if (!o || !o->load || !o->model || !out)
        return lt_error(ctx, LT_ERR_USAGE, "lt_family_new: options with a model and a loader, and out");
    if (o->compile.save_prebuilt || o->compile.prebuilt || o->compile.shared_backend || o->compile.kernels_hook)
        return lt_error(ctx, LT_ERR_USAGE, "a model compiled for every shape cannot be saved or loaded as an artifact");
    lt_family *f = lt_calloc(ctx, 1, sizeof *f, "model family");
    if (!f) return LT_ERR_NOMEM;
    f->o = *o;
    if (f->o.max_plans <= 0) f->o.max_plans = 8;
    lt_arena_init(&f->arena);
    lt_arena_init(&f->probe_arena);
    for (int q = 0; q < N_PROBES; q++) f->probe_n[q] = -1;
    f->model = o->model;
    lt_status s = (f->rests = lt_rest_cache_new()) ? LT_OK : lt_error(ctx, LT_ERR_NOMEM, "out of memory (model family)");
    const lt_graph *g = f->model->graph;
    if (s == LT_OK) {
        f->in_idx = lt_calloc(ctx, (size_t)g->n_inputs + 1, sizeof *f->in_idx, "model family");
        f->given = lt_calloc(ctx, (size_t)g->n_inputs + 1, sizeof *f->given, "model family");
        if (!f->in_idx || !f->given) s = LT_ERR_NOMEM;
    }
    for (int i = 0; s == LT_OK && i < g->n_inputs; i++)
        if (!g->inputs[i]->init) {
            f->given[f->n_in] = g->inputs[i]->name;
            f->in_idx[f->n_in++] = i;
        }
    for (int r = 0; s == LT_OK && r < o->n_ranges; r++) {
        const lt_dim_range *dr = &o->ranges[r];
        if (dr->lo < 1 || dr->hi < dr->lo)
            s = lt_error(ctx, LT_ERR_USAGE, "dim '%s': range %lld..%lld is empty or below 1", dr->name, (long long)dr->lo,
                         (long long)dr->hi);
    }
    if (s == LT_OK && !o->compile.emit_only) { /* one backend instance for every plan, unless this backend builds nothing */
        const lt_backend_vtbl *vt = lt_backend_find(o->compile.backend ? o->compile.backend : "cpu");
        if (!vt) s = lt_error(ctx, LT_ERR_UNSUPPORTED, "backend '%s' is not available", o->compile.backend);
        else if (!vt->compile_ir) {
            lt_backend_options bo = {.cc = o->compile.cc, .cache_dir = o->compile.cache_dir,
                                     .extra_flags = o->compile.extra_cflags, .cc_timeout_s = o->compile.cc_timeout_s,
                                     .threads = o->compile.threads, .device = o->compile.device,
                                     .nvrtc = o->compile.nvrtc, .arch = o->compile.arch};
            s = lt_backend_create(ctx, vt->name, &bo, &f->backend);
        }
    }
    if (s != LT_OK) {
        lt_family_free(f);
        return s;
    }
    *out = f;
    return LT_OK;
}

static void drop_plan(cached_plan *c) {
    lt_plan_free(c->p);
    lt_model_free(c->m);
    lt_mem_free(c->key);
}

static void drop_plans(lt_family *f) {
    for (int i = 0; i < f->n_plans; i++) drop_plan(&f->plans[i]);
    f->n_plans = 0;
}

/* Every plan's workspace, one allocation: a shape needing more than it holds grows it to the next
 * power of two, after dropping the cached plans (they point into the old one; rebuilding one costs
 * the host pipeline, never a compiler). The memory a family holds is then its largest shape's
 * workspace (at most twice it), not one per cached plan. */
static lt_status workspace(void *user, lt_ctx *ctx, int64_t bytes, void **out) {
    lt_family *f = user;
    if (bytes > f->ws_bytes) {
        int64_t size = 4096;
        while (size < bytes && size < INT64_MAX / 2) size *= 2;
        if (size < bytes) size = bytes;
        drop_plans(f);
        if (f->ws) f->backend->vt->free(f->backend, f->ws);
        f->ws = NULL, f->ws_bytes = 0, f->stats.workspace_bytes = 0;
        LT_TRY(f->backend->vt->alloc(f->backend, ctx, (size_t)size, &f->ws));
        f->ws_bytes = f->stats.workspace_bytes = size;
        f->stats.workspace_grown++;
    }
    *out = f->ws;
    return LT_OK;
}

void lt_family_free(lt_family *f) {
    if (!f) return;
    drop_plans(f);
    lt_rest_cache_free(f->rests); /* after the plans that hold its rests */
    for (int i = 0; i < f->n_gslots; i++) /* after the plans whose templates they ran */
        for (int k = 0; k < LT_GRAPH_SLOT_MAX; k++)
            if (f->gslots[i].slot->exec[k]) f->backend->vt->graph_free(f->backend, f->gslots[i].slot->exec[k]);
    lt_mem_free(f->gslots);
    lt_mem_free(f->consts); /* empty: the last plan holding each constant released it */
    if (f->ws) f->backend->vt->free(f->backend, f->ws);
    lt_mem_free(f->plans);
    for (int i = 0; i < f->n_mods; i++)
        if (f->mods[i].m) f->backend->vt->module_free(f->backend, f->mods[i].m);
    lt_mem_free(f->mods);
    lt_backend_destroy(f->backend);
    lt_mem_free(f->buckets);
    lt_arena_free(&f->arena);
    lt_arena_free(&f->probe_arena);
    lt_mem_free(f->in_idx);
    lt_mem_free(f->given);
    lt_mem_free(f);
}

lt_status lt_family_plan(lt_ctx *ctx, lt_family *f, int n, const int *ranks, const int64_t *const *dims, lt_plan **out) {
    if (n != f->n_in) return lt_error(ctx, LT_ERR_USAGE, "the model takes %d inputs, given %d shapes", f->n_in, n);
    int key_len = n;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] > LT_MAX_RANK) return lt_error(ctx, LT_ERR_USAGE, "input %d: rank %d", i, ranks[i]);
        key_len += ranks[i];
    }
    int64_t *key = lt_calloc(ctx, (size_t)key_len + 1, sizeof *key, "plan key");
    if (!key) return LT_ERR_NOMEM;
    for (int i = 0, k = n; i < n; i++) {
        key[i] = ranks[i];
        for (int a = 0; a < ranks[i]; a++) key[k++] = dims[i][a];
    }
    f->clock++;
    for (int i = 0; i < f->n_plans; i++)
        if (f->plans[i].key_len == key_len && !memcmp(f->plans[i].key, key, (size_t)key_len * sizeof *key)) {
            lt_mem_free(key);
            f->plans[i].used = f->clock;
            f->stats.plan_hits++;
            *out = f->plans[i].p;
            return LT_OK;
        }
    lt_status s = check_shapes(ctx, f, ranks, dims);
    cached_plan c = {.key = key, .key_len = key_len, .used = f->clock};
    int built_before = f->stats.modules_built;
    f->cur_ranks = ranks, f->cur_dims = dims, f->cur_bucket = -1, f->last_module = 0;
    if (s == LT_OK) s = compile_at(ctx, f, ranks, dims, false, &c.m, &c.p);
    f->cur_ranks = NULL, f->cur_dims = NULL;
    if (s != LT_OK) {
        lt_mem_free(key);
        return s;
    }
    f->stats.plans_built++;
    if (f->stats.modules_built == built_before && (f->backend || f->o.compile.emit_only)) f->stats.modules_reused++;
    if (f->n_plans == f->o.max_plans) { /* the least recently used goes */
        int old = 0;
        for (int i = 1; i < f->n_plans; i++)
            if (f->plans[i].used < f->plans[old].used) old = i;
        drop_plan(&f->plans[old]);
        f->plans[old] = f->plans[--f->n_plans];
    }
    cached_plan *np = lt_mem_realloc(f->plans, (size_t)(f->n_plans + 1) * sizeof *np);
    if (!np) {
        drop_plan(&c);
        return lt_error(ctx, LT_ERR_NOMEM, "out of memory (plan cache)");
    }
    f->plans = np;
    f->plans[f->n_plans++] = c;
    *out = c.p;
    return LT_OK;
}

void lt_family_print(const lt_family *f, lt_strbuf *out) {
    const lt_family_stats *s = &f->stats;
    lt_sb_printf(out, "shapes: %d compiled by the host pipeline (%d runs found theirs cached); buckets: %d; "
                      "modules built: %d, reused: %d\n",
                 s->plans_built, s->plan_hits, s->buckets, s->modules_built, s->modules_reused);
    if (s->workspace_bytes)
        lt_sb_printf(out, "workspace: %lld bytes, one for every plan (grown %d times)\n", (long long)s->workspace_bytes,
                     s->workspace_grown);
    if (s->const_bytes || s->consts_shared)
        lt_sb_printf(out, "device constants: %lld bytes, one copy for every plan (%d taken from an earlier plan)\n",
                     (long long)s->const_bytes, s->consts_shared);
    if (s->pack_bytes || s->packs_shared)
        lt_sb_printf(out, "packed weights: %lld bytes, one copy for every plan of equal packs (%d taken from an "
                          "earlier plan)\n",
                     (long long)s->pack_bytes, s->packs_shared);
    lt_family_stats g;
    lt_family_get_stats(f, &g);
    if (g.graphs)
        lt_sb_printf(out, "device graphs: %d (at most %d per bucket and segment), instantiated %d times, updated in "
                          "place %d times\n", g.graphs, GRAPHS_PER_SLOT, g.graphs_instantiated, g.graphs_updated);
    for (int i = 0; i < f->n_buckets; i++) {
        const bucket *b = &f->buckets[i];
        lt_sb_printf(out, "bucket %d: made at %s; %d kernels, %d with run-time scalars (%d scalars); %d shape%s\n", i + 1,
                     b->made_at[0] ? b->made_at : "the declared shapes", b->n_kernels, b->n_scalar_kernels, b->n_scalars,
                     b->shapes, b->shapes == 1 ? "" : "s");
    }
}
