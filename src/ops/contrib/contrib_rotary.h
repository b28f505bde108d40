/* contrib_rotary.h — the geometry of com.microsoft's RotaryEmbedding, shared by the op
 * (contrib_rotary.c) and the expand_contrib pass.
 *
 * input (B, S, N * H) or (B, N, S, H); position_ids (1) [position of token s: p[0] + s] or (B, S);
 * cos_cache and sin_cache (max_positions, R / 2). Without rotary_embedding_dim, R = H = 2 * the caches'
 * second dim (N = hidden / H); with it, num_heads must be given, H = hidden / num_heads and R =
 * rotary_embedding_dim <= H: the dims past R are copied. For each head vector x and its position's
 * cos c and sin s (j < R/2):
 *   halves (interleaved = 0):  y[j] = x[j] c[j] - x[j + R/2] s[j],  y[j + R/2] = x[j + R/2] c[j] + x[j] s[j]
 *   pairs (interleaved = 1):   y[2j] = x[2j] c[j] - x[2j + 1] s[j], y[2j + 1] = x[2j + 1] c[j] + x[2j] s[j]
 * The scale attribute is ignored (as onnxruntime's CPU kernel); is_packed_batching is refused.
 */
#ifndef LT_CONTRIB_ROTARY_H
#define LT_CONTRIB_ROTARY_H

#include "../ops.h"

typedef struct lt_rotary {
    int64_t B, S, N, H, R, max_pos;
    bool bnsh;        /* input is (B, N, S, H) */
    bool per_token;   /* position_ids is (B, S), else (1) */
    bool interleaved;
} lt_rotary;

/* The geometry of RotaryEmbedding node n from its input dims (unknown dims: -1; then the fields derived
 * from them are -1), position_ids' rank and the caches' dims; errors name the node. */
lt_status lt_rotary_geom(lt_ctx *ctx, const lt_node *n, int rank, const int64_t *dims, int pos_rank,
                         const int64_t *pos_dims, const int64_t *cos_dims, const int64_t *sin_dims, lt_rotary *g);

#endif
