/* widen_gemm.c — float16 / bfloat16 GEMMs and convolutions computed in float32 on targets whose
 * kernels take float32 operands only (the CPU backends; lt_pass_options.narrow_float_gemm false):
 *
 *   Conv / ConvTranspose / Gemm / MatMul (x16, w16, b16) -> Cast(op(Cast(x, f32), Cast(w, f32), ..), x16)
 *
 * A constant weight's Cast folds (the weight is widened once, at compile time); the elementwise
 * ops around stay in their narrow type, which the CPU kernels compute. The result is the float32
 * product rounded once to the narrow type, as the interpreter computes it (it accumulates in wider
 * precision and rounds at the end). On CUDA, whose GEMM and convolution kernels take narrow
 * operands (tensor cores), the pass does nothing.
 * Level -O1; in the simplification group, so the widened weights fold.
 */
#include "util.h"

static bool narrow(const lt_value *v) {
    return v && (v->type.dtype == LT_FLOAT16 || v->type.dtype == LT_BFLOAT16);
}

static bool is_narrow_gemm(const lt_node *n) {
    if (n->op != LT_OP_Conv && n->op != LT_OP_ConvTranspose && n->op != LT_OP_Gemm && n->op != LT_OP_MatMul) return false;
    if (n->n_out != 1 || !narrow(n->out[0])) return false;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] && !narrow(n->in[i])) return false;
    return true;
}

static lt_status widen(lt_ctx *ctx, lt_graph *g, lt_node *n, bool *changed) {
    lt_dtype dt = n->out[0]->type.dtype;
    const char *h = n->out[0]->name;
    lt_value *in[8];
    if (n->n_in > 8) return LT_OK;
    for (int i = 0; i < n->n_in; i++) {
        in[i] = n->in[i];
        if (in[i]) LT_TRY(lt_pu_new_op(ctx, g, "Cast", 1, &in[i], "to", LT_FLOAT, h, n, &in[i]));
    }
    lt_node *w;
    LT_TRY(lt_node_new(ctx, g, n->op_type, "", n->n_in, in, 1, h, n, &w));
    LT_TRY(lt_node_copy_attrs(ctx, w, n));
    LT_TRY(lt_node_infer(ctx, w));
    lt_value *y, *wide = w->out[0];
    LT_TRY(lt_pu_new_op(ctx, g, "Cast", 1, &wide, "to", dt, h, n, &y));
    lt_pu_take_name(g, y, n->out[0]);
    return lt_pu_forward(ctx, g, n, 0, y, changed);
}

static lt_status run(lt_ctx *ctx, lt_model *m, const lt_pass_options *opt, bool *changed) {
    if (opt && opt->narrow_float_gemm) return LT_OK;
    return lt_pu_rewrite_each(ctx, m, is_narrow_gemm, widen, changed);
}

const lt_pass lt_pass_widen_gemm = {.name = "widen_gemm", .min_level = 1, .run = run,
    .summary = "float16 / bfloat16 Conv, Gemm, MatMul -> float32 between Casts (targets without narrow GEMMs)"};
