/* contrib_qlstm.h — DynamicQuantizeLSTM's weights (com.microsoft), shared by the op's reference
 * implementation (contrib_qlstm.c) and the expand_contrib pass, which dequantizes constant weights at
 * compile time with this same function.
 *
 * W is int8 or uint8 [num_directions, input_size, 4*hidden_size] and R [num_directions, hidden_size,
 * 4*hidden_size]: ONNX LSTM's W and R transposed per direction (gate columns i o f c, as ONNX). Scale
 * (float) and zero point (W's dtype) are [num_directions] (one per direction) or [num_directions,
 * 4*hidden_size] (one per gate column). W'[d][j][k] = (W[d][k][j] - zp[d][j]) * scale[d][j].
 */
#ifndef LT_CONTRIB_QLSTM_H
#define LT_CONTRIB_QLSTM_H

#include "../ops.h"

/* Checks the quantized weight q (named `what`: "W" or "R") with its scale and zero point against the
 * direction count D and 4*hidden_size GH (its middle dim must be K, or any when K < 0); errors name
 * the node. */
lt_status lt_qlstm_check(lt_ctx *ctx, const lt_node *n, const char *what, const lt_tensor *q, const lt_tensor *scale,
                         const lt_tensor *zp, int64_t D, int64_t GH, int64_t K);
/* The dequantized weight in ONNX LSTM's layout, a new tensor of dtype dt [D, GH, K] (checked first). */
lt_status lt_qlstm_dequant(lt_ctx *ctx, const lt_node *n, const char *what, const lt_tensor *q, const lt_tensor *scale,
                           const lt_tensor *zp, int64_t D, int64_t GH, lt_dtype dt, lt_tensor **out);
/* D (1 or 2, from the direction attribute) and GH = 4 * hidden_size (the attribute, required > 0). */
lt_status lt_qlstm_attrs(lt_ctx *ctx, const lt_node *n, int64_t *D, int64_t *GH);

#endif
