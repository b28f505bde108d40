/* test_pb.h — a tiny protobuf writer for the unit tests that build ONNX bytes by hand
 * (test_wire.c, test_load_limits.c): a growable byte buffer and field writers for varints,
 * length-delimited bytes/strings/sub-messages and 32-bit floats. It uses plain malloc (not the
 * library's allocator hook, so a failing hook never touches it) and aborts on its own OOM.
 * Header-only (static functions): each test program includes it once. */
#ifndef TEST_PB_H
#define TEST_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
    uint8_t *p;
    size_t n, cap;
} pb;

/* Append n raw bytes. */
static inline void put(pb *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void varint(pb *b, uint64_t v) {
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) c |= 0x80;
        put(b, &c, 1);
    } while (v);
}
/* Field key: number f, wire type wt (0 varint, 2 length-delimited, 5 fixed32). */
static inline void key(pb *b, int f, int wt) { varint(b, (uint64_t)f << 3 | (uint64_t)wt); }
static inline void fv(pb *b, int f, uint64_t v) { key(b, f, 0); varint(b, v); }
static inline void fbytes(pb *b, int f, const void *d, size_t n) { key(b, f, 2); varint(b, n); put(b, d, n); }
static inline void fs(pb *b, int f, const char *s) { fbytes(b, f, s, strlen(s)); }
static inline void ff32(pb *b, int f, float x) { key(b, f, 5); put(b, &x, 4); }
static inline void pfree(pb *b) { free(b->p); memset(b, 0, sizeof *b); }
/* Sub-message m as field f; consumes (frees and empties) m. */
static inline void fmsg(pb *b, int f, pb *m) {
    fbytes(b, f, m->p, m->n);
    pfree(m);
}

#endif
