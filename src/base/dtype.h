/* dtype.h — the element types of ONNX tensors and exact conversions between them.
 *
 * lt_dtype values are ONNX TensorProto.DataType numbers. In memory (lt_tensor data) every element is
 * stored at a whole-byte size: the 4-bit and 2-bit types (INT4, UINT4, FLOAT4E2M1, INT2, UINT2) take
 * one byte each, holding the value's bits in the low bits (INT4/INT2 sign-extended into an int8);
 * they are packed only on the wire. float16, bfloat16 and the float8 types are stored as raw bits
 * (uint16_t / uint8_t). BOOL is one byte 0/1. STRING elements are `char *` (NUL-terminated, heap,
 * owned by the tensor). COMPLEX64/128 are interleaved (re, im) float/double pairs.
 *
 * The generic loads and stores below are the reference interpreter's workhorse: load any element as
 * double / int64 / uint64, store one back with the rounding the ONNX spec gives for Cast (floats to
 * narrower floats round to nearest even; floats to integers truncate toward zero, NaN -> 0, values
 * beyond int64 saturate and the result wraps to the target width (numpy's float32(300) -> int8 44,
 * -9.0 -> int4 7) so no UB is possible; float8 saturates unless told otherwise).
 */
#ifndef LT_DTYPE_H
#define LT_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum lt_dtype {
    LT_UNDEFINED = 0,
    LT_FLOAT = 1,
    LT_UINT8 = 2,
    LT_INT8 = 3,
    LT_UINT16 = 4,
    LT_INT16 = 5,
    LT_INT32 = 6,
    LT_INT64 = 7,
    LT_STRING = 8,
    LT_BOOL = 9,
    LT_FLOAT16 = 10,
    LT_DOUBLE = 11,
    LT_UINT32 = 12,
    LT_UINT64 = 13,
    LT_COMPLEX64 = 14,
    LT_COMPLEX128 = 15,
    LT_BFLOAT16 = 16,
    LT_FLOAT8E4M3FN = 17,
    LT_FLOAT8E4M3FNUZ = 18,
    LT_FLOAT8E5M2 = 19,
    LT_FLOAT8E5M2FNUZ = 20,
    LT_UINT4 = 21,
    LT_INT4 = 22,
    LT_FLOAT4E2M1 = 23,
    LT_FLOAT8E8M0 = 24,
    LT_UINT2 = 25,
    LT_INT2 = 26,
    LT_DTYPE_COUNT
} lt_dtype;

/* What kind of number an element is: decides which load/store path an op takes. */
typedef enum lt_dclass {
    LT_DC_NONE,    /* UNDEFINED */
    LT_DC_FLOAT,   /* float, double, float16, bfloat16, float8*, float4 */
    LT_DC_SINT,    /* int8..int64, int4, int2 */
    LT_DC_UINT,    /* uint8..uint64, uint4, uint2 */
    LT_DC_BOOL,
    LT_DC_STRING,
    LT_DC_COMPLEX
} lt_dclass;

typedef struct lt_dtype_info {
    const char *name;  /* ONNX spelling: "float", "float16", "int4", ... */
    int size;          /* bytes per element in memory (sub-byte types: 1) */
    int wire_bits;     /* bits per element on the wire (4 and 2 for the packed types) */
    lt_dclass cls;
    const char *numpy; /* numpy dtype string ("<f4", "|b1", ...) or NULL where numpy has none */
} lt_dtype_info;

bool lt_dtype_valid(int dt); /* 1..26 */
const lt_dtype_info *lt_dtype_get(lt_dtype dt); /* any value; UNDEFINED's entry for invalid ones */
static inline int lt_dtype_size(lt_dtype dt) { return lt_dtype_get(dt)->size; }
static inline const char *lt_dtype_name(lt_dtype dt) { return lt_dtype_get(dt)->name; }
static inline bool lt_dtype_is_float(lt_dtype dt) { return lt_dtype_get(dt)->cls == LT_DC_FLOAT; }
static inline bool lt_dtype_is_int(lt_dtype dt) {
    lt_dclass c = lt_dtype_get(dt)->cls;
    return c == LT_DC_SINT || c == LT_DC_UINT;
}
/* Parse an ONNX type name ("float", "tensor(float)" is not accepted); UNDEFINED if unknown. */
lt_dtype lt_dtype_from_name(const char *name);

/* ---- scalar conversions between float32/64 and the narrow float formats ---- */
float lt_f16_to_f32(uint16_t h);
uint16_t lt_f32_to_f16(float f);         /* round to nearest even */
uint16_t lt_f64_to_f16(double d);        /* directly from double: no double rounding */
float lt_bf16_to_f32(uint16_t h);
uint16_t lt_f32_to_bf16(float f);        /* round to nearest even, NaN stays NaN */
/* float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ): saturate=true clamps finite overflow to the largest
 * finite value (the ONNX default); false gives inf (E5M2) or NaN (the others). */
float lt_f8_to_f32(uint8_t v, lt_dtype dt);
uint8_t lt_f32_to_f8(float f, lt_dtype dt, bool saturate);
float lt_f4e2m1_to_f32(uint8_t v);      /* low 4 bits */
uint8_t lt_f32_to_f4e2m1(float f);      /* round to nearest even, saturating */
float lt_e8m0_to_f32(uint8_t v);
/* Rounding modes of Cast to float8e8m0 (the round_mode attribute). */
enum { LT_ROUND_UP = 0, LT_ROUND_DOWN = 1, LT_ROUND_NEAREST = 2 };
uint8_t lt_f32_to_e8m0(float f, bool saturate); /* ONNX default rounding: up */
uint8_t lt_f32_to_e8m0_rm(float f, bool saturate, int round_mode);

/* ---- generic element access (index i counts elements) ---- */
double lt_load_f64(const void *data, lt_dtype dt, int64_t i);   /* complex: the real part */
int64_t lt_load_i64(const void *data, lt_dtype dt, int64_t i);  /* floats truncate, saturating */
uint64_t lt_load_u64(const void *data, lt_dtype dt, int64_t i);
void lt_store_f64(void *data, lt_dtype dt, int64_t i, double v);  /* float8: saturating */
void lt_store_f64_sat(void *data, lt_dtype dt, int64_t i, double v, bool saturate);
void lt_store_i64(void *data, lt_dtype dt, int64_t i, int64_t v); /* integers wrap (two's complement) */
void lt_store_u64(void *data, lt_dtype dt, int64_t i, uint64_t v);
/* Convert element i of src (type sdt) into element j of dst (type ddt) as ONNX Cast does,
 * choosing the exact path (int64->int64 without going through double). Strings not handled. */
void lt_convert_elem(const void *src, lt_dtype sdt, int64_t i, void *dst, lt_dtype ddt, int64_t j,
                     bool saturate);
/* Same with Cast's round_mode (LT_ROUND_*) for float8e8m0 targets. */
void lt_convert_elem_rm(const void *src, lt_dtype sdt, int64_t i, void *dst, lt_dtype ddt, int64_t j,
                        bool saturate, int round_mode);

#endif
