/* contrib_attention.h — the geometry of com.microsoft's Attention, MultiHeadAttention and
 * GroupQueryAttention (semantics: contrib_attention.c), shared by the ops and the expand_contrib
 * pass so both read the attributes and shapes the same way. Dims are static here; errors name the node. */
#ifndef LT_CONTRIB_ATTENTION_H
#define LT_CONTRIB_ATTENTION_H

#include "../ops.h"

typedef struct lt_attention {
    int64_t B, S, N, H, Hv, P, T; /* batch, sequence, heads, head sizes, past and total lengths */
    int64_t Dq, Dk, Dv;           /* the weights' Q, K, V column blocks */
} lt_attention;
/* input (B, S, Din) dims xd, weights (Din, Dq + Dk + Dv) dims wd, past (2, B, N, P, H) (past_rank -1: none). */
lt_status lt_attention_geom(lt_ctx *ctx, const lt_node *n, const int64_t *xd, const int64_t *wd, int past_rank,
                            const int64_t *pd, lt_attention *g);

typedef enum { LT_MHA_BSD, LT_MHA_BNSH, LT_MHA_PACKED_QKV, LT_MHA_PACKED_KV } lt_mha_form;
typedef struct lt_mha {
    lt_mha_form form;
    int64_t B, S, L, N, H, Hv, P, T; /* L: new key length; T = P + L */
} lt_mha;
/* query, key, value, past_key ranks (-1: absent) and dims. */
lt_status lt_mha_geom(lt_ctx *ctx, const lt_node *n, int qr, const int64_t *qd, int kr, const int64_t *kd, int vr,
                      const int64_t *vd, int pr, const int64_t *pd, lt_mha *g);

typedef struct lt_gqa {
    int64_t B, S, N, Nkv, H, P, T, window;
    double softcap;
    bool do_rotary, interleaved;
} lt_gqa;
/* query (B, S, d) dims qd, packed (key omitted) or key dims kd, past_key rank (-1: none) and dims. */
lt_status lt_gqa_geom(lt_ctx *ctx, const lt_node *n, const int64_t *qd, bool packed, const int64_t *kd, int pr,
                      const int64_t *pd, lt_gqa *g);

#endif
