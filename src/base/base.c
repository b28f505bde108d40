/* base.c — diagnostics (first error wins), the allocator hook, arenas, checked arithmetic,
 * the pointer vector and the string builder declared in base.h. */
#include "base.h"

#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lt_status_name(lt_status s) {
    switch (s) {
    case LT_OK: return "ok";
    case LT_ERR_USAGE: return "usage error";
    case LT_ERR_INVALID: return "invalid input";
    case LT_ERR_UNSUPPORTED: return "unsupported";
    case LT_ERR_NOMEM: return "out of memory";
    case LT_ERR_IO: return "I/O error";
    case LT_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

int lt_status_exit_code(lt_status s) {
    switch (s) {
    case LT_OK: return 0;
    case LT_ERR_USAGE: return 1;
    case LT_ERR_UNSUPPORTED: return 3;
    default: return 2;
    }
}

lt_status lt_verror(lt_ctx *ctx, lt_status s, const char *fmt, va_list ap) {
    if (ctx && ctx->status == LT_OK && s != LT_OK) {
        ctx->status = s;
        vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    }
    return s;
}

lt_status lt_error(lt_ctx *ctx, lt_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    lt_verror(ctx, s, fmt, ap);
    va_end(ap);
    return s;
}

void lt_ctx_clear(lt_ctx *ctx) {
    ctx->status = LT_OK;
    ctx->msg[0] = 0;
}

/* ---- allocator ----
 * The default allocator is malloc, with large freed blocks kept for reuse. A run that makes a large
 * tensor (a dynamically shaped output, a host step's result, an input copy) frees it before the next
 * run makes one of the same size; glibc hands such blocks back to the system on free (unmapped, or the
 * heap trimmed) and the next run takes fresh pages: a page fault and the kernel's zeroing per 4 KiB,
 * every run (2 MiB of output cost about a millisecond). So freed blocks of at least BIG_BLOCK_MIN bytes
 * wait in a small cache (at most BIG_SLOTS blocks, BIG_BYTES in all; the oldest goes back to malloc
 * when a new one needs the room), and an allocation takes the smallest cached block that holds it
 * without wasting more than half of it. The cache is shared by every thread (a mutex, held across
 * fork) and emptied at exit. Blocks are plain malloc blocks: realloc and free treat them as any other. */
#define BIG_BLOCK_MIN ((size_t)256 << 10)
#define BIG_SLOTS 16
#define BIG_BYTES ((size_t)256 << 20)
static struct {
    pthread_mutex_t mu;
    void *block[BIG_SLOTS];
    size_t size[BIG_SLOTS]; /* malloc_usable_size of each block (0: slot empty) */
    size_t bytes;           /* held in all */
    int next;               /* the oldest slot, evicted first */
} g_big = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *big_take(size_t n) {
    void *p = NULL;
    pthread_mutex_lock(&g_big.mu);
    int best = -1;
    for (int i = 0; i < BIG_SLOTS; i++)
        if (g_big.size[i] >= n && g_big.size[i] / 2 <= n && (best < 0 || g_big.size[i] < g_big.size[best])) best = i;
    if (best >= 0) {
        p = g_big.block[best];
        g_big.bytes -= g_big.size[best];
        g_big.block[best] = NULL, g_big.size[best] = 0;
    }
    pthread_mutex_unlock(&g_big.mu);
    return p;
}

/* Keep p (usable size n) for reuse; false when it cannot be kept (the caller frees it). */
static bool big_keep(void *p, size_t n) {
    if (n < BIG_BLOCK_MIN || n > BIG_BYTES) return false;
    void *evicted[BIG_SLOTS];
    int n_evicted = 0;
    pthread_mutex_lock(&g_big.mu);
    int slot = -1;
    for (int i = 0; i < BIG_SLOTS && slot < 0; i++)
        if (!g_big.block[i]) slot = i;
    /* room: oldest first, until the block fits the byte budget and a slot is free */
    for (int k = 0; k < BIG_SLOTS && (slot < 0 || g_big.bytes + n > BIG_BYTES); k++) {
        int i = (g_big.next + k) % BIG_SLOTS;
        if (!g_big.block[i]) continue;
        evicted[n_evicted++] = g_big.block[i];
        g_big.bytes -= g_big.size[i];
        g_big.block[i] = NULL, g_big.size[i] = 0;
        if (slot < 0) slot = i;
    }
    g_big.block[slot] = p, g_big.size[slot] = n;
    g_big.bytes += n;
    g_big.next = (slot + 1) % BIG_SLOTS;
    pthread_mutex_unlock(&g_big.mu);
    for (int i = 0; i < n_evicted; i++) free(evicted[i]);
    return true;
}

/* fork: the cache's mutex is taken around it, so a child never starts with it held by a thread that
 * does not exist there (Python's multiprocessing forks processes that go on allocating) */
static void big_lock(void) { pthread_mutex_lock(&g_big.mu); }
static void big_unlock(void) { pthread_mutex_unlock(&g_big.mu); }
__attribute__((constructor)) static void big_at_fork(void) { pthread_atfork(big_lock, big_unlock, big_unlock); }

__attribute__((destructor)) static void big_release(void) {
    pthread_mutex_lock(&g_big.mu);
    for (int i = 0; i < BIG_SLOTS; i++) {
        free(g_big.block[i]);
        g_big.block[i] = NULL, g_big.size[i] = 0;
    }
    g_big.bytes = 0;
    pthread_mutex_unlock(&g_big.mu);
}

static void *default_alloc(void *u, size_t n) {
    (void)u;
    void *p = n >= BIG_BLOCK_MIN ? big_take(n) : NULL;
    return p ? p : malloc(n ? n : 1);
}
static void *default_realloc(void *u, void *p, size_t n) { (void)u; return realloc(p, n ? n : 1); }
static void default_free(void *u, void *p) {
    (void)u;
    if (p && !big_keep(p, malloc_usable_size(p))) free(p);
}
static lt_allocator g_alloc = {default_alloc, default_realloc, default_free, NULL};

void lt_set_allocator(const lt_allocator *a) {
    if (a) g_alloc = *a;
    else g_alloc = (lt_allocator){default_alloc, default_realloc, default_free, NULL};
}
void *lt_mem_alloc(size_t size) { return g_alloc.alloc(g_alloc.user, size); }
void *lt_mem_calloc(size_t n, size_t size) {
    size_t total;
    if (!lt_mul_size(n, size, &total)) return NULL;
    void *p = lt_mem_alloc(total);
    if (p) memset(p, 0, total);
    return p;
}
void *lt_mem_realloc(void *p, size_t size) { return g_alloc.realloc(g_alloc.user, p, size); }
void lt_mem_free(void *p) {
    if (p) g_alloc.free(g_alloc.user, p);
}
char *lt_mem_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = lt_mem_alloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
void *lt_alloc(lt_ctx *ctx, size_t size, const char *what) {
    void *p = lt_mem_alloc(size);
    if (!p) lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu bytes for %s)", size, what);
    return p;
}
void *lt_calloc(lt_ctx *ctx, size_t n, size_t size, const char *what) {
    void *p = lt_mem_calloc(n, size);
    if (!p) lt_error(ctx, LT_ERR_NOMEM, "out of memory (%zu x %zu bytes for %s)", n, size, what);
    return p;
}

/* ---- arenas ---- */
struct lt_arena_chunk {
    lt_arena_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void lt_arena_init(lt_arena *a) { memset(a, 0, sizeof *a); }

void *lt_arena_alloc(lt_arena *a, size_t size) {
    if (size > SIZE_MAX - 64) return NULL;
    size = (size + 15) & ~(size_t)15;
    lt_arena_chunk *c = a->head;
    if (!c || c->size - c->used < size) {
        size_t cap = size > 65536 - sizeof *c ? size : 65536 - sizeof *c;
        c = lt_mem_alloc(sizeof *c + cap);
        if (!c) return NULL;
        c->size = cap;
        c->used = 0;
        /* A big one-off block goes behind the current chunk so the current one keeps filling. */
        if (a->head && size > 16384) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += size;
    a->used_bytes += size;
    memset(p, 0, size);
    return p;
}

char *lt_arena_strndup(lt_arena *a, const char *s, size_t n) {
    char *d = lt_arena_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}
char *lt_arena_strdup(lt_arena *a, const char *s) { return lt_arena_strndup(a, s, strlen(s)); }

void lt_arena_free(lt_arena *a) {
    lt_arena_chunk *c = a->head;
    while (c) {
        lt_arena_chunk *n = c->next;
        lt_mem_free(c);
        c = n;
    }
    memset(a, 0, sizeof *a);
}

/* ---- checked arithmetic ---- */
bool lt_add_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
bool lt_mul_i64(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
bool lt_mul_size(size_t a, size_t b, size_t *out) {
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
bool lt_prod_i64(const int64_t *dims, int n, int64_t *out) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || !lt_mul_i64(p, dims[i], &p)) return false;
    }
    *out = p;
    return true;
}

/* ---- vector ---- */
bool lt_vec_push(lt_vec *v, void *item) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = lt_mem_realloc(v->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = item;
    return true;
}
void lt_vec_free(lt_vec *v) {
    lt_mem_free(v->items);
    memset(v, 0, sizeof *v);
}

/* ---- string builder ---- */
void lt_sb_printf(lt_strbuf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = true; return; }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *s = lt_mem_realloc(b->s, cap);
        if (!s) { b->failed = true; return; }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
void lt_sb_free(lt_strbuf *b) {
    lt_mem_free(b->s);
    memset(b, 0, sizeof *b);
}
