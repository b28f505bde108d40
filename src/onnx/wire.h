/* wire.h — a bounded protobuf wire-format reader (private to src/onnx/).
 *
 * A reader walks one message: lt_wire_next() reads the next field key, then the caller takes the
 * value with one of the typed getters (or ignores it: the next lt_wire_next() skips it). Every length
 * is checked against the bytes left in the enclosing message, varints longer than 64 bits are
 * refused, and entering a sub-message (lt_wire_msg) counts nesting depth against a limit.
 * Errors are sticky: the first one is recorded on the source's ctx with the file, the absolute byte
 * offset and the message/field being read ("model.onnx: byte 1234: NodeProto.attribute: length 999
 * exceeds the 12 bytes left"), after which every call fails. Callers check lt_wire_failed() (or the
 * return values) after their loops.
 * Repeated numeric fields are accepted packed or unpacked (both, mixed, several runs): the
 * lt_wire_rep_* helpers count (dst NULL) or decode one occurrence of the field.
 */
#ifndef LT_ONNX_WIRE_H
#define LT_ONNX_WIRE_H

#include "../base/base.h"

enum { LT_WT_VARINT = 0, LT_WT_I64 = 1, LT_WT_LEN = 2, LT_WT_SGROUP = 3, LT_WT_EGROUP = 4, LT_WT_I32 = 5 };

/* What all readers over one buffer share. */
typedef struct lt_wire_src {
    lt_ctx *ctx;
    const uint8_t *base; /* start of the buffer: offsets in messages count from here */
    size_t size;
    const char *file;    /* name used in messages ("<memory>" when none) */
    int max_depth;
    bool failed;         /* sticky: an error was reported */
    lt_status status;    /* the status of that error */
    bool truncated;      /* that error was a value running past the end of its message */
} lt_wire_src;

typedef struct lt_wire {
    lt_wire_src *src;
    const uint8_t *p, *end;
    const uint8_t *start; /* first byte of this message */
    int depth;
    const char *msg;      /* message type name, e.g. "NodeProto" */
    /* The field just read by lt_wire_next. */
    uint32_t field;
    int wt;
    const uint8_t *key_at; /* offset of the key (for messages) */
    bool pending;          /* its value has not been consumed yet */
} lt_wire;

void lt_wire_src_init(lt_wire_src *s, lt_ctx *ctx, const void *data, size_t size, const char *file, int max_depth);
/* A reader over the whole buffer (depth 0). */
void lt_wire_root(lt_wire *w, lt_wire_src *s, const char *msg);
/* A reader over bytes [p, p+n) inside the source buffer, at the given depth. */
void lt_wire_sub_at(lt_wire *w, lt_wire_src *s, const uint8_t *p, size_t n, int depth, const char *msg);

static inline bool lt_wire_failed(const lt_wire *w) { return w->src->failed; }
/* Byte offset of p in the source buffer. */
static inline size_t lt_wire_off(const lt_wire *w, const uint8_t *p) { return (size_t)(p - w->src->base); }

/* Next field key; false at the end of the message or on error (check lt_wire_failed). */
bool lt_wire_next(lt_wire *w);
/* Typed getters for the current field's value; on a wire-type mismatch or truncation they report an
 * error and return false. */
bool lt_wire_u64(lt_wire *w, uint64_t *v);   /* VARINT */
bool lt_wire_i64(lt_wire *w, int64_t *v);    /* VARINT as two's complement */
bool lt_wire_i32(lt_wire *w, int32_t *v);    /* VARINT truncated to 32 bits (protobuf int32/enum) */
bool lt_wire_f32(lt_wire *w, float *v);      /* I32 */
bool lt_wire_f64(lt_wire *w, double *v);     /* I64 */
bool lt_wire_bytes(lt_wire *w, const uint8_t **p, size_t *n); /* LEN */
/* LEN as an embedded message: *sub reads it, one level deeper (error past max_depth). */
bool lt_wire_msg(lt_wire *w, lt_wire *sub, const char *msg);
/* Skip the current value (lt_wire_next does this for unconsumed values). */
bool lt_wire_skip(lt_wire *w);

/* Repeated numerics: one occurrence of the current field (packed LEN or a single unpacked value).
 * dst NULL: only count. Otherwise writes at dst[*n], never past dst[cap-1] (error if it would).
 * *n is increased by the number of elements. */
bool lt_wire_rep_varint(lt_wire *w, uint64_t *dst, int64_t cap, int64_t *n);
bool lt_wire_rep_fixed32(lt_wire *w, uint32_t *dst, int64_t cap, int64_t *n);
bool lt_wire_rep_fixed64(lt_wire *w, uint64_t *dst, int64_t cap, int64_t *n);

/* Report an error at byte `at` in the current message (first error wins). Returns LT_ERR_INVALID
 * (or `s`). The message is prefixed with "FILE: byte OFF: MSG.FIELD: ". */
lt_status lt_wire_error(lt_wire *w, const uint8_t *at, lt_status s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Name of a field of a known ONNX message ("attribute"), or NULL. */
const char *lt_wire_field_name(const char *msg, uint32_t field);

#endif
