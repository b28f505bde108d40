/* kparams.h — run-time extents for kernels lowered at concrete shapes.
 *
 * A kernel lowered for one input shape holds the extents and strides that depend on it as integer
 * immediates (and constants such as 1/N as float immediates). Lowered at two shapes of one bucket,
 * the same group gives two kernels that differ only in some immediates: one code, those immediates
 * being run-time scalars (the kernel ABI's scalar arguments, lt_kernel.scalars). Here:
 *
 *   lt_kparams_scan   a kernel's immediates, each occurrence in one fixed pre-order, with the
 *                     SHA-256 of everything else (kinds, types, loops, buffers, the immediates that
 *                     may not vary): two kernels with one structure hash differ only in immediates;
 *   lt_kparams_diff   scans of one structure at several shapes into a mask: which immediates vary
 *                     (a slot each, immediates equal at every shape sharing one), and for an integer
 *                     slot inside a buffer index the largest power of two (up to the kernel's
 *                     vector width) dividing its
 *                     values (the slot's stride: the scalar is value / divisor, the code multiplies it
 *                     back, so an emitter still sees that an offset is a multiple of the vector
 *                     width); other slots have divisor 1. More shapes make better masks: an
 *                     immediate derived coarsely from a size (a ceil-divided grid extent) may stay
 *                     equal at two near shapes, and a common divisor of two sizes may be chance;
 *   lt_kparams_apply  a kernel (of that structure, at any shape) rewritten with a mask: each masked
 *                     immediate becomes its slot's scalar (times the divisor); the scalar values are
 *                     this kernel's. LT_ERR_UNSUPPORTED (nothing changed) when the kernel does not fit
 *                     the mask: another structure, an immediate not a multiple of its divisor, two
 *                     immediates of one slot that differ here.
 *
 * Correctness does not depend on the mask: whatever it selects, the rewritten kernel computes what
 * the original does for the scalar values it carries. The mask decides only which shapes share one
 * compiled code (the bucket: src/compile/family.c, where the emitted source's hash is the guard).
 * Immediates that an emitter needs as constants never vary: the bounds of vectorized, unrolled and
 * GPU-thread loops, the start of GPU-block loops, and the extent of a GPU-block loop that shares its
 * axis with another (the launch takes one grid extent, which may be a scalar: emit.c, cuda_module.c);
 * only INT64 and float/double immediates of one lane vary.
 */
#ifndef LT_KPARAMS_H
#define LT_KPARAMS_H

#include "loop.h"

typedef struct lt_kscan {
    char hash[65];       /* hex SHA-256 of the kernel's structure, immediates that may vary left out */
    int n;               /* immediates that may vary, in pre-order */
    int64_t *bits;       /* their values (INT64: the value; float: the double's bits) */
    bool *is_float;
    bool *in_index;      /* inside a buffer's index (a load, store or address) */
    int64_t vector_width;/* its widest vector access (>= 1): lanes of a node, or the extent of a
                          * vectorized loop in a GPU kernel (the CUDA emitter's vector loads need
                          * aligned offsets; a CPU vectorized loop is a simd loop of scalars) */
} lt_kscan;

typedef struct lt_kmask {
    char hash[65];       /* the structure the mask is for */
    int n;               /* positions (== lt_kscan.n) */
    int *slot;           /* per position: its scalar, -1 when the immediate stays a constant */
    int n_slots;
    int64_t *divisor;    /* per slot: INT64 slots' common divisor (>= 1); 0 for float slots */
} lt_kmask;

/* Scan k (allocations in `arena`). */
lt_status lt_kparams_scan(lt_ctx *ctx, const lt_kernel *k, lt_arena *arena, lt_kscan *out);
/* The mask of n >= 1 scans of one structure (false when the structures differ: hash or count); the
 * first scan's values are the mask's reference (one scan: every immediate a constant). */
bool lt_kparams_diff(const lt_kscan *const *scans, int n, lt_arena *arena, lt_kmask *out);
/* Does a kernel of scan sc fit mask m: the mask's structure, integers divisible by their slot's
 * divisor, the immediates of each slot equal? (Constants the mask keeps are not compared: the
 * caller holds the scan they came from.) */
bool lt_kparams_fits(const lt_kscan *sc, const lt_kmask *m);
/* Rewrite k's body with mask m, adding its scalars (k must have none yet); sc is k's own scan (the
 * caller has it: a kernel is scanned once). A mask with no slot leaves k as it is (LT_OK). */
lt_status lt_kparams_apply(lt_ctx *ctx, lt_kernel *k, const lt_kscan *sc, const lt_kmask *m);

#endif
