/* kparams.c — run-time extents for kernels lowered at concrete shapes: scan a kernel's immediates,
 * diff two scans into a mask, rewrite a kernel with a mask (kparams.h says what and why).
 *
 * One walker does the scan and the rewrite, so both see the immediates in the same order: a
 * pre-order over the body, every occurrence of a shared subtree counted again.
 */
#include "kparams.h"

#include <stdio.h>
#include <string.h>

#include "../base/hash.h"

typedef struct kwalk {
    lt_ctx *ctx;
    lt_kernel *k;          /* rewrite: the kernel whose nodes are built */
    lt_sha256 sh;          /* scan: the structure hash */
    bool rewrite;
    int pos;               /* the next immediate's position */
    /* scan */
    int n, cap;
    int64_t *bits;
    bool *is_float;
    bool *in_index;
    int index_depth;       /* > 0: inside a buffer index */
    int64_t vector_width;  /* the widest vector access: node lanes (and vectorized loops: gpu_width) */
    int64_t gpu_width;     /* the widest vectorized loop of a kernel with GPU loops (emitted as vector
                            * loads, where alignment matters; a CPU one is a simd loop of scalars) */
    bool gpu;
    /* rewrite */
    const lt_kmask *m;
    lt_lvar **slot_var;
    const int64_t *val;    /* each slot's value in this kernel */
    int block_loops[3];    /* loops bound to each GPU block axis */
    lt_status st;
} kwalk;

/* May this immediate become a scalar? One lane of INT64, float or double. */
static bool may_vary(const lt_lnode *n) {
    if (n->lanes > 1) return false;
    if (n->kind == LT_L_INT) return n->dtype == LT_INT64;
    return n->kind == LT_L_FLOAT && (n->dtype == LT_FLOAT || n->dtype == LT_DOUBLE);
}

/* Is child i of n (a loop's min 0 or extent 1) a bound an emitter needs as a constant? Vector and
 * unroll factors and thread-block shapes are; a grid extent may be a scalar (the launch reads it) when
 * its loop is the only one on its block axis, its start stays constant. */
static bool fixed_bound(const kwalk *w, const lt_lnode *n, int i) {
    if (n->kind != LT_L_FOR || i > 1) return false;
    if (n->op == LT_LOOP_GPU_BLOCK) return i == 0 || n->ival < 0 || n->ival > 2 || w->block_loops[n->ival] != 1;
    return n->op == LT_LOOP_VECTORIZED || n->op == LT_LOOP_UNROLLED || n->op == LT_LOOP_GPU_THREAD;
}

static void count_block_loops(const lt_lnode *n, int *count) {
    if (!n) return;
    if (n->kind == LT_L_FOR && n->op == LT_LOOP_GPU_BLOCK && n->ival >= 0 && n->ival <= 2) count[n->ival]++;
    for (int i = 0; i < n->n; i++) count_block_loops(n->kids[i], count);
}

static int64_t imm_bits(const lt_lnode *n) {
    if (n->kind == LT_L_INT) return n->ival;
    int64_t b;
    memcpy(&b, &n->fval, sizeof b);
    return b;
}

static void hash_i64(kwalk *w, int64_t v) { lt_sha256_update(&w->sh, &v, sizeof v); }
static void hash_str(kwalk *w, const char *s) {
    if (s) lt_sha256_update(&w->sh, s, strlen(s) + 1);
    else hash_i64(w, -1);
}

static bool record(kwalk *w, const lt_lnode *n) {
    if (w->n == w->cap) {
        int nc = w->cap ? 2 * w->cap : 64;
        int64_t *b = lt_mem_realloc(w->bits, (size_t)nc * sizeof *b);
        if (b) w->bits = b;
        bool *f = lt_mem_realloc(w->is_float, (size_t)nc * sizeof *f);
        if (f) w->is_float = f;
        bool *x = lt_mem_realloc(w->in_index, (size_t)nc * sizeof *x);
        if (x) w->in_index = x;
        if (!b || !f || !x) return false;
        w->cap = nc;
    }
    w->bits[w->n] = imm_bits(n);
    w->is_float[w->n] = n->kind == LT_L_FLOAT;
    w->in_index[w->n] = w->index_depth > 0;
    w->n++;
    return true;
}

/* The slot of a divisor the rewrite made (scalar_node's forms: the slot's var, or it times the
 * slot's divisor), or -1. */
static int divisor_slot(const kwalk *w, const lt_lnode *b) {
    int64_t g;
    const lt_lvar *v = lt_lvar_scaled(b, &g);
    for (int i = 0; v && i < w->m->n_slots; i++)
        if (w->slot_var[i] == v && w->m->divisor[i] == g) return i;
    return -1;
}

/* An integer division or remainder by a slot's scalar: that scalar gets its multiplier (another
 * scalar, made once, whose value is this kernel's: lt_div_magic). Which divisions get one depends
 * only on the structure and the mask, so every shape of the bucket emits the same code. */
static void add_div_magic(kwalk *w, const lt_lnode *n, const lt_lnode *b) {
    bool div = n->op == LT_LOP_DIV || n->op == LT_LOP_MOD || n->op == LT_LOP_FMOD;
    if (n->kind != LT_L_BINARY || !div || n->dtype != LT_INT64) return;
    int s = divisor_slot(w, b);
    if (s < 0 || w->slot_var[s]->div_magic) return;
    int64_t d = w->val[s] * w->m->divisor[s];
    lt_lvar *mv = lt_kernel_scalar(w->k, "mag", LT_INT64, (int64_t)lt_div_magic(d));
    if (!mv) {
        w->st = lt_error(w->ctx, LT_ERR_NOMEM, "out of memory (kernel rewrite)");
        return;
    }
    w->slot_var[s]->div_magic = mv;
    w->slot_var[s]->div_magic_mul = w->m->divisor[s];
}

/* The node a masked immediate becomes: its slot's scalar, times the divisor (integers), cast to the
 * immediate's type (floats). */
static lt_lnode *scalar_node(kwalk *w, const lt_lnode *n, int slot) {
    lt_lnode *v = lt_l_var(w->k, w->slot_var[slot]);
    if (n->kind == LT_L_FLOAT) return n->dtype == LT_DOUBLE ? v : lt_l_cast(w->k, n->dtype, v);
    int64_t g = w->m->divisor[slot];
    return g == 1 ? v : lt_l_mul(w->k, v, lt_l_int(w->k, g));
}

/* Scan (hash and record) or rewrite n; returns the node to use (n itself when scanning). */
static lt_lnode *walk(kwalk *w, const lt_lnode *n, bool fixed) {
    if (!n || w->st != LT_OK) return (lt_lnode *)n;
    if (!fixed && may_vary(n)) {
        int p = w->pos++;
        if (w->rewrite) {
            int slot = w->m->slot[p];
            return slot < 0 ? (lt_lnode *)n : scalar_node(w, n, slot);
        }
        hash_i64(w, -1000 - n->kind);
        hash_i64(w, n->dtype);
        if (!record(w, n)) w->st = lt_error(w->ctx, LT_ERR_NOMEM, "out of memory (kernel scan)");
        return (lt_lnode *)n;
    }
    if (!w->rewrite) {
        int64_t e;
        if (n->lanes > w->vector_width) w->vector_width = n->lanes;
        if (n->kind == LT_L_FOR && n->op == LT_LOOP_VECTORIZED && lt_lis_int(lt_lfor_extent(n), &e) && e > w->gpu_width)
            w->gpu_width = e;
        w->gpu |= n->kind == LT_L_FOR && (n->op == LT_LOOP_GPU_BLOCK || n->op == LT_LOOP_GPU_THREAD);
        int64_t fb;
        memcpy(&fb, &n->fval, sizeof fb);
        bool cost = n->kind == LT_L_CALL; /* a call's ival / fval: the operation's cost, not code */
        int64_t head[9] = {n->kind, n->dtype, n->op, n->role, n->lanes, cost ? 0 : n->ival, cost ? 0 : fb,
                           n->var ? n->var->id : -1, n->buf ? n->buf->id : -1};
        lt_sha256_update(&w->sh, head, sizeof head);
        hash_i64(w, n->n);
        hash_str(w, n->name);
    }
    lt_lnode *kids_local[8], **kids = n->n <= 8 ? kids_local : lt_mem_alloc((size_t)n->n * sizeof *kids);
    if (!kids) {
        w->st = lt_error(w->ctx, LT_ERR_NOMEM, "out of memory (kernel scan)");
        return (lt_lnode *)n;
    }
    bool changed = false;
    for (int i = 0; i < n->n; i++) {
        bool index = i == 0 && (n->kind == LT_L_LOAD || n->kind == LT_L_STORE || n->kind == LT_L_ADDR);
        w->index_depth += index;
        kids[i] = walk(w, n->kids[i], fixed || fixed_bound(w, n, i));
        w->index_depth -= index;
        changed |= kids[i] != n->kids[i];
    }
    lt_lnode *r = (lt_lnode *)n;
    if (w->rewrite && changed && n->n == 2) add_div_magic(w, n, kids[1]);
    if (w->rewrite && changed && w->st == LT_OK && !(r = lt_l_with_kids(w->k, n, kids)))
        w->st = lt_error(w->ctx, LT_ERR_NOMEM, "out of memory (kernel rewrite)");
    if (kids != kids_local) lt_mem_free(kids);
    return r;
}

/* The kernel-level facts the structure includes: name, argument types, local buffers, shared memory. */
static void hash_kernel(kwalk *w, const lt_kernel *k) {
    hash_str(w, k->name);
    hash_i64(w, k->n_args);
    for (int i = 0; i < k->n_args; i++) hash_i64(w, k->args[i]->dtype);
    for (int i = 0; i < k->n_bufs; i++) {
        const lt_lbuf *b = k->bufs[i];
        if (b->arg >= 0) continue;
        int64_t f[4] = {b->id, b->dtype, b->size, b->scope};
        lt_sha256_update(&w->sh, f, sizeof f);
    }
    hash_i64(w, k->dyn_shared);
    hash_i64(w, k->n_scalars);
}

lt_status lt_kparams_scan(lt_ctx *ctx, const lt_kernel *k, lt_arena *arena, lt_kscan *out) {
    kwalk w = {.ctx = ctx};
    count_block_loops(k->body, w.block_loops);
    lt_sha256_init(&w.sh);
    hash_kernel(&w, k);
    walk(&w, k->body, false);
    lt_status s = w.st;
    if (s == LT_OK) {
        uint8_t d[32];
        lt_sha256_final(&w.sh, d);
        for (int i = 0; i < 32; i++) snprintf(out->hash + 2 * i, 3, "%02x", d[i]);
        out->n = w.n;
        if (w.gpu && w.gpu_width > w.vector_width) w.vector_width = w.gpu_width;
        out->vector_width = w.vector_width > 0 ? w.vector_width : 1;
        out->bits = lt_arena_alloc(arena, ((size_t)w.n + 1) * sizeof *out->bits);
        out->is_float = lt_arena_alloc(arena, ((size_t)w.n + 1) * sizeof *out->is_float);
        out->in_index = lt_arena_alloc(arena, ((size_t)w.n + 1) * sizeof *out->in_index);
        if (!out->bits || !out->is_float || !out->in_index) s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel scan)");
        else if (w.n) {
            memcpy(out->bits, w.bits, (size_t)w.n * sizeof *w.bits);
            memcpy(out->is_float, w.is_float, (size_t)w.n * sizeof *w.is_float);
            memcpy(out->in_index, w.in_index, (size_t)w.n * sizeof *w.in_index);
        }
    }
    lt_mem_free(w.bits);
    lt_mem_free(w.is_float);
    lt_mem_free(w.in_index);
    return s;
}

static int64_t gcd64(int64_t a, int64_t b) {
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    while (y) {
        uint64_t t = x % y;
        x = y, y = t;
    }
    return x > (uint64_t)INT64_MAX ? 1 : (int64_t)x;
}

/* The divisor of an index immediate varying across the scans: the largest power of two dividing
 * all its values, up to the kernel's vector width. Only the alignment of an offset matters to an
 * emitter (a multiple of the vector width), and other common factors of a few sizes are mostly
 * chance, which would keep later sizes out of the bucket. */
static int64_t index_divisor(const lt_kscan *const *scans, int n, int p) {
    int64_t g = 0;
    for (int q = 0; q < n; q++) g = gcd64(g, scans[q]->bits[p]);
    int64_t d = 1;
    while (d < scans[0]->vector_width && g > 0 && g % (2 * d) == 0) d *= 2;
    return d;
}

bool lt_kparams_diff(const lt_kscan *const *scans, int n, lt_arena *arena, lt_kmask *out) {
    if (n < 1) return false;
    const lt_kscan *a = scans[0];
    for (int q = 1; q < n; q++)
        if (strcmp(a->hash, scans[q]->hash) != 0 || a->n != scans[q]->n) return false;
    memset(out, 0, sizeof *out);
    memcpy(out->hash, a->hash, sizeof out->hash);
    out->n = a->n;
    out->slot = lt_arena_alloc(arena, ((size_t)a->n + 1) * sizeof *out->slot);
    out->divisor = lt_arena_alloc(arena, ((size_t)a->n + 1) * sizeof *out->divisor);
    int *first = lt_mem_alloc(((size_t)a->n + 1) * sizeof *first); /* each slot's first position */
    bool ok = out->slot && out->divisor && first;
    for (int p = 0; ok && p < a->n; p++) {
        out->slot[p] = -1;
        bool varies = false;
        for (int q = 1; q < n; q++) varies |= scans[q]->bits[p] != a->bits[p];
        if (!varies) continue;
        int s = 0; /* immediates with the same values in every scan share a slot */
        for (; s < out->n_slots; s++) {
            bool same = (out->divisor[s] == 0) == a->is_float[p];
            for (int q = 0; q < n && same; q++) same = scans[q]->bits[p] == scans[q]->bits[first[s]];
            if (same) break;
        }
        if (s == out->n_slots) {
            first[s] = p;
            out->divisor[s] = a->is_float[p] ? 0 : 1;
            out->n_slots++;
        }
        out->slot[p] = s;
        if (a->in_index[p] && out->divisor[s] == 1) /* an index term: keep its alignment */
            out->divisor[s] = index_divisor(scans, n, p);
    }
    lt_mem_free(first);
    return ok;
}

/* Each slot's value in scan sc (val/set: n_slots entries): false when sc does not fit m. */
static bool slot_values(const lt_kscan *sc, const lt_kmask *m, int64_t *val, bool *set) {
    if (strcmp(sc->hash, m->hash) != 0 || sc->n != m->n) return false;
    for (int p = 0; p < sc->n; p++) {
        int slot = m->slot[p];
        if (slot < 0) continue;
        int64_t v = sc->bits[p], g = m->divisor[slot];
        if ((g == 0) != sc->is_float[p] || (g > 0 && v % g != 0)) return false;
        if (g > 0) v /= g;
        if (set[slot] && val[slot] != v) return false;
        val[slot] = v, set[slot] = true;
    }
    return true;
}

bool lt_kparams_fits(const lt_kscan *sc, const lt_kmask *m) {
    int64_t *val = lt_mem_calloc((size_t)m->n_slots + 1, sizeof *val);
    bool *set = lt_mem_calloc((size_t)m->n_slots + 1, sizeof *set);
    bool ok = val && set && slot_values(sc, m, val, set);
    lt_mem_free(val);
    lt_mem_free(set);
    return ok;
}

lt_status lt_kparams_apply(lt_ctx *ctx, lt_kernel *k, const lt_kscan *sc, const lt_kmask *m) {
    if (k->n_scalars) return lt_error(ctx, LT_ERR_INTERNAL, "kernel %s already has run-time scalars", k->name);
    lt_status s = LT_OK;
    int64_t *val = lt_mem_calloc((size_t)m->n_slots + 1, sizeof *val);
    bool *set = lt_mem_calloc((size_t)m->n_slots + 1, sizeof *set);
    if (!val || !set) {
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel rewrite)");
        goto done;
    }
    if (!slot_values(sc, m, val, set)) { /* the mask's structure, and each slot's value here */
        s = lt_error(ctx, LT_ERR_UNSUPPORTED, "kernel %s does not fit the mask of run-time scalars", k->name);
        goto done;
    }
    if (!m->n_slots) goto done;
    kwalk w = {.ctx = ctx, .k = k, .rewrite = true, .m = m, .val = val};
    count_block_loops(k->body, w.block_loops);
    w.slot_var = lt_arena_alloc(k->arena, (size_t)m->n_slots * sizeof *w.slot_var);
    if (!w.slot_var) {
        s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel rewrite)");
        goto done;
    }
    for (int i = 0; i < m->n_slots; i++) {
        bool fl = m->divisor[i] == 0;
        if (!(w.slot_var[i] = lt_kernel_scalar(k, fl ? "cst" : "ext", fl ? LT_DOUBLE : LT_INT64, val[i]))) {
            s = lt_error(ctx, LT_ERR_NOMEM, "out of memory (kernel rewrite)");
            goto done;
        }
    }
    lt_lnode *body = walk(&w, k->body, false);
    if ((s = w.st) == LT_OK) k->body = body;
done:
    lt_mem_free(val);
    lt_mem_free(set);
    return s;
}
