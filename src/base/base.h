/* base.h — status codes and diagnostics, the allocator hook, arenas, checked int64 arithmetic.
 *
 * Every fallible function in lathe returns an lt_status and reports its message on an lt_ctx with
 * lt_error(): the first error wins, later ones are ignored, so the message names the root cause.
 * All heap memory goes through lt_mem_alloc/lt_mem_realloc/lt_mem_free, which call one process-wide
 * allocator hook (lt_set_allocator); tests install a hook that fails on demand.
 * Arenas hand out memory that lives until lt_arena_free (model, compilation and scratch lifetimes).
 */
#ifndef LT_BASE_H
#define LT_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Status codes double as the CLI's exit codes for the first three. */
typedef enum lt_status {
    LT_OK = 0,
    LT_ERR_USAGE = 1,       /* the caller or the command line used lathe wrongly */
    LT_ERR_INVALID = 2,     /* bad model, bad input data, bad file */
    LT_ERR_UNSUPPORTED = 3, /* valid but not supported by lathe (unknown op, dtype, backend) */
    LT_ERR_NOMEM = 4,       /* allocation failed or a size limit was exceeded */
    LT_ERR_IO = 5,          /* the operating system refused a read/write/map */
    LT_ERR_INTERNAL = 6     /* a bug in lathe */
} lt_status;

const char *lt_status_name(lt_status s);
/* Exit code the CLI uses for a status: 0 ok, 1 usage, 3 unsupported, 2 everything else. */
int lt_status_exit_code(lt_status s);

#define LT_MSG_MAX 2048

/* Diagnostics context: holds the first error. Zero-initialize (lt_ctx c = {0};) to use. */
typedef struct lt_ctx {
    lt_status status;
    char msg[LT_MSG_MAX];
} lt_ctx;

/* Record an error (printf format) unless one is already recorded; returns `s` for `return lt_error(...)`. */
lt_status lt_error(lt_ctx *ctx, lt_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
lt_status lt_verror(lt_ctx *ctx, lt_status s, const char *fmt, va_list ap);
/* Clear the recorded error (used by tools that try several things in a row). */
void lt_ctx_clear(lt_ctx *ctx);

#define LT_TRY(expr)                                                                               \
    do {                                                                                           \
        lt_status lt_try_s_ = (expr);                                                              \
        if (lt_try_s_ != LT_OK) return lt_try_s_;                                                  \
    } while (0)

/* ---- allocator hook ---- */
typedef struct lt_allocator {
    void *(*alloc)(void *user, size_t size);               /* NULL on failure */
    void *(*realloc)(void *user, void *p, size_t size);    /* NULL on failure, p untouched */
    void (*free)(void *user, void *p);
    void *user;
} lt_allocator;

/* Install an allocator (NULL restores malloc/realloc/free). Not thread-safe: call at start-up. */
void lt_set_allocator(const lt_allocator *a);
void *lt_mem_alloc(size_t size);              /* uninitialized; NULL on failure */
void *lt_mem_calloc(size_t n, size_t size);   /* zeroed; NULL on failure or overflow */
void *lt_mem_realloc(void *p, size_t size);
void lt_mem_free(void *p);
char *lt_mem_strdup(const char *s);
/* Same, reporting "out of memory (N bytes for WHAT)" on ctx when it fails. */
void *lt_alloc(lt_ctx *ctx, size_t size, const char *what);
void *lt_calloc(lt_ctx *ctx, size_t n, size_t size, const char *what);

/* ---- arenas ---- */
typedef struct lt_arena_chunk lt_arena_chunk;
typedef struct lt_arena {
    lt_arena_chunk *head;
    size_t used_bytes; /* total handed out, for reports */
} lt_arena;

void lt_arena_init(lt_arena *a);
/* 16-byte aligned, zeroed memory; NULL on failure. */
void *lt_arena_alloc(lt_arena *a, size_t size);
char *lt_arena_strndup(lt_arena *a, const char *s, size_t n);
char *lt_arena_strdup(lt_arena *a, const char *s);
void lt_arena_free(lt_arena *a);

/* ---- checked arithmetic: return false on overflow, *out untouched ---- */
bool lt_add_i64(int64_t a, int64_t b, int64_t *out);
bool lt_mul_i64(int64_t a, int64_t b, int64_t *out);
bool lt_mul_size(size_t a, size_t b, size_t *out);
/* Product of dims (all >= 0); false on overflow or a negative dim. */
bool lt_prod_i64(const int64_t *dims, int n, int64_t *out);

/* ---- growable pointer vector (heap) ---- */
typedef struct lt_vec {
    void **items;
    int n, cap;
} lt_vec;
bool lt_vec_push(lt_vec *v, void *item); /* false on OOM */
void lt_vec_free(lt_vec *v);

/* ---- string builder (heap) ---- */
typedef struct lt_strbuf {
    char *s;
    size_t len, cap;
    bool failed; /* an append ran out of memory */
} lt_strbuf;
void lt_sb_printf(lt_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lt_sb_free(lt_strbuf *b);

#endif
