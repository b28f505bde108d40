/* io.h — reading and writing tensor files: numpy .npy and .npz, and binding user data to model inputs
 * (checks against the declared type, fills). Whole-file reads and atomic writes are src/base/file.h's
 * (included here).
 *
 * Every reader is bounded: header lengths, shapes, zip directory entries and inflated sizes are
 * checked against the bytes actually present before anything is read or allocated, so a truncated or
 * hostile file is an LT_ERR_INVALID naming the file (and the array / byte offset), never a crash.
 * Memory is bounded too (lt_io_limits): a decoded file may take at most max_bytes (default 4 GiB)
 * for its arrays, counted before anything is inflated or allocated; .npz members whose data
 * overlap (one deflate stream shared by many directory entries: a zip bomb) are refused, as is a
 * member that inflates to more than its directory entry claims.
 * Writers never leave a partial file: they write a temporary file in the destination folder and
 * rename it into place only when everything succeeded.
 *
 * npy: format versions 1.0, 2.0 and 3.0; dtypes b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16 (either
 * byte order) and the fixed-width strings S<n> / U<n> (read into STRING tensors); C or Fortran order.
 * npz: a zip archive of .npy members, stored or deflated (zlib), zip64 extras understood; CRCs checked.
 */
#ifndef LT_IO_H
#define LT_IO_H

#include "../base/file.h" /* lt_io_read_file, lt_io_write_file_atomic */
#include "../graph/graph.h"

/* Limits of the decoders; a zero field takes its default. */
typedef struct lt_io_limits {
    /* Most bytes the arrays decoded from one file may take (all members of an .npz together;
     * strings count their pointers and characters). 0: LT_IO_DEFAULT_MAX_BYTES. */
    int64_t max_bytes;
} lt_io_limits;
#define LT_IO_DEFAULT_MAX_BYTES ((int64_t)4 << 30)
/* Largest .npy item (one element of a string dtype), bytes. */
#define LT_NPY_MAX_ITEMSIZE ((int64_t)1 << 30)

/* ---- npy ---- */
/* Decode a .npy image; `what` names it in messages (a path, or "a.npz:x.npy"). */
lt_status lt_npy_decode(lt_ctx *ctx, const void *data, size_t size, const char *what, lt_tensor **out);
lt_status lt_npy_read_file(lt_ctx *ctx, const char *path, lt_tensor **out);
/* The same under explicit limits (lim may be NULL: the defaults). */
lt_status lt_npy_decode_limited(lt_ctx *ctx, const void *data, size_t size, const char *what,
                                const lt_io_limits *lim, lt_tensor **out);
lt_status lt_npy_read_file_limited(lt_ctx *ctx, const char *path, const lt_io_limits *lim, lt_tensor **out);
/* Encode a tensor as .npy (version 1.0, or 2.0 when the header needs it) into a heap buffer.
 * Types numpy lacks are widened: bfloat16/float8/float4 -> float32, int4/int2 -> int8,
 * uint4/uint2 -> uint8 (*widened set to true when that happened). Strings -> U<maxlen>. */
lt_status lt_npy_encode(lt_ctx *ctx, const lt_tensor *t, uint8_t **data, size_t *size, bool *widened);

/* ---- npz ---- */
typedef struct lt_npz {
    int n;
    char **names;        /* member name without ".npy" (heap) */
    lt_tensor **tensors; /* owned */
} lt_npz;

lt_status lt_npz_decode(lt_ctx *ctx, const void *data, size_t size, const char *what, lt_npz **out);
lt_status lt_npz_read_file(lt_ctx *ctx, const char *path, lt_npz **out);
/* The same under explicit limits (lim may be NULL: the defaults). */
lt_status lt_npz_decode_limited(lt_ctx *ctx, const void *data, size_t size, const char *what,
                                const lt_io_limits *lim, lt_npz **out);
lt_status lt_npz_read_file_limited(lt_ctx *ctx, const char *path, const lt_io_limits *lim, lt_npz **out);
void lt_npz_free(lt_npz *z);
/* Index of the member named `name`, or -1. */
int lt_npz_find(const lt_npz *z, const char *name);
/* Encode arrays as a stored (uncompressed) zip, each member "<name>.npy". widened as above (any). */
lt_status lt_npz_encode(lt_ctx *ctx, int n, const char *const *names, const lt_tensor *const *ts,
                        uint8_t **data, size_t *size, bool *widened);
/* Encode and write atomically. */
lt_status lt_npz_write_file(lt_ctx *ctx, const char *path, int n, const char *const *names,
                            const lt_tensor *const *ts, bool *widened);

/* ---- any tensor file ---- */
/* Read a tensor from .npy, .pb (TensorProto) or a one-member .npz, chosen by the file's extension
 * (and for unknown extensions by its first bytes). */
lt_status lt_io_read_tensor_file(lt_ctx *ctx, const char *path, lt_tensor **out);
lt_status lt_io_read_tensor_file_limited(lt_ctx *ctx, const char *path, const lt_io_limits *lim,
                                         lt_tensor **out);
/* max_bytes of lim, or the default (never <= 0). */
int64_t lt_io_max_bytes(const lt_io_limits *lim);

/* ---- binding data to model inputs ---- */
/* Symbolic dims bound so far while checking several inputs (name -> value). */
typedef struct lt_dim_binding {
    int n;
    const char *names[64];
    int64_t values[64];
} lt_dim_binding;

/* Check tensor t against graph input v's declared type: dtype, rank, known dims; symbolic dims bind
 * in `b` (may be NULL) and must agree across inputs. LT_ERR_INVALID naming the input, the expected
 * type and what was given. */
lt_status lt_io_check_input(lt_ctx *ctx, const lt_value *v, const lt_tensor *t, lt_dim_binding *b);
/* Concrete shape for input v (declared dims, symbolic dims from `b`); LT_ERR_USAGE naming the input
 * and the unbound dim when one is unknown. */
lt_status lt_io_input_shape(lt_ctx *ctx, const lt_value *v, const lt_dim_binding *b, int *rank,
                            int64_t *dims);

typedef enum lt_fill_kind { LT_FILL_RANDOM, LT_FILL_ZEROS, LT_FILL_ONES, LT_FILL_RAMP } lt_fill_kind;
/* Parse "random" / "zeros" / "ones" / "ramp"; false if unknown. */
bool lt_fill_parse(const char *s, lt_fill_kind *out);
/* New tensor filled: random = uniform [0,1) floats, ints in [0,10), random bools (deterministic per
 * *rng state, which advances); ramp = arange(n)/n computed in double, then stored (the onnx "light"
 * model inputs); strings: random/ramp give the element index as text, zeros "" and ones "1". */
lt_status lt_io_fill_tensor(lt_ctx *ctx, lt_dtype dt, int rank, const int64_t *dims, lt_fill_kind k,
                            uint64_t *rng, lt_tensor **out);

#endif
