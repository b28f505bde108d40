/* contrib_matmul.h — what the matmul family of com.microsoft ops (contrib_matmul.c) shares with the
 * expand_contrib pass, so both read the ops the same way: FusedMatMul's operand permutation, and
 * MatMulNBits' weight format (the pass dequantizes constant weights at compile time with the op's
 * own function).
 *
 * MatMulNBits:
 * B is uint8 (N, k_blocks, blob_size), k_blocks = ceil(K / block_size), blob_size = block_size * bits /
 * 8: column n of the [K, N] weight, block after block along K, `bits` bits per value, low bits first
 * (for 4 bits: the low nibble of a byte, then the high one). scales: N * k_blocks values of A's dtype.
 * zero_points: uint8 packed the same way, (N, ceil(k_blocks * bits / 8)), or unpacked of A's dtype
 * (N, k_blocks); absent: 2^(bits - 1). W[k][n] = (q - zero_point) * scale of block k / block_size.
 * Supported bits: 2, 4 and 8.
 */
#ifndef LT_CONTRIB_MATMUL_H
#define LT_CONTRIB_MATMUL_H

#include "../ops.h"

/* FusedMatMul: the permutation (perm[r]) that puts an operand of rank r in MatMul order:
 * transBatch (the first dim moved behind the other batch dims), then trans (the last two swapped). */
void lt_fused_matmul_perm(int r, bool trans_batch, bool trans, int *perm);

typedef struct lt_nbits {
    int64_t K, N, bits, block, k_blocks, blob;
} lt_nbits;

/* The attributes K, N, bits, block_size of MatMulNBits node n, checked; errors name the node. */
lt_status lt_nbits_attrs(lt_ctx *ctx, const lt_node *n, lt_nbits *p);
/* The dequantized weight W (K * N doubles, row-major [K, N]) from B, scales and zero_points (NULL when
 * absent), whose sizes are checked against p; errors name the node. */
lt_status lt_nbits_dequant(lt_ctx *ctx, const lt_node *n, const lt_nbits *p, const lt_tensor *B, const lt_tensor *scales,
                           const lt_tensor *zero_points, double *W);

#endif
