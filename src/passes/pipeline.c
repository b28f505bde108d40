/* pipeline.c — THE pipeline: the one list of graph passes in the order they run.
 *
 * Consecutive LT_PIPE_FIXPOINT entries form the simplification group, repeated until a whole round
 * changes nothing (lt_pass_options.max_rounds bounds it). A pass runs when the -O level is at least
 * its min_level (see each pass file). An entry marked LT_PIPE_OFF is off by default: it runs, at its
 * position here, only when named in lt_pass_options.enable (the CLI's --enable-pass). Adding a pass:
 * one file exporting `const lt_pass lt_pass_X`, its declaration in pass.h, one line here.
 */
#include "pass.h"

#include <stdio.h>
#include <string.h>

static const lt_pipeline_entry pipeline[] = {
    {&lt_pass_freeze_inputs, LT_PIPE_ONCE, LT_PIPE_ON},      /* opt-in: weights listed as inputs -> constants (-O1) */
    /* simplification group: each pass exposes work for the others */
    {&lt_pass_fold_shapes, LT_PIPE_FIXPOINT, LT_PIPE_ON},    /* Shape/Size of static shapes -> constants     (-O1) */
    /* before fold_constants: a QDQ weight's DequantizeLinear is still there to become an int8 product */
    {&lt_pass_expand_quant, LT_PIPE_FIXPOINT, LT_PIPE_ON},   /* (De)QuantizeLinear -> exact float ops; *Integer,
                                                              * QDQ products -> int8 kernels (CPU)         (-O1) */
    {&lt_pass_fold_constants, LT_PIPE_FIXPOINT, LT_PIPE_ON}, /* nodes of constants -> initializers (eval)    (-O1) */
    {&lt_pass_widen_gemm, LT_PIPE_FIXPOINT, LT_PIPE_ON},     /* f16/bf16 GEMM, conv -> f32 on CPU targets    (-O1) */
    {&lt_pass_inline_if, LT_PIPE_FIXPOINT, LT_PIPE_ON},      /* If -> taken branch, or both + Where          (-O1) */
    {&lt_pass_unroll_loop, LT_PIPE_FIXPOINT, LT_PIPE_ON},    /* Loop with a static trip count -> body copies (-O1) */
    {&lt_pass_simplify, LT_PIPE_FIXPOINT, LT_PIPE_ON},       /* identities, chains, constant Where           (-O2) */
    {&lt_pass_fold_batchnorm, LT_PIPE_FIXPOINT, LT_PIPE_ON}, /* Conv/Gemm/MatMul(+Add) + BatchNorm -> weights (-O2) */
    {&lt_pass_patterns, LT_PIPE_FIXPOINT, LT_PIPE_ON},       /* decomposed LayerNorm / GELU -> one op         (-O3) */
    {&lt_pass_fold_scale, LT_PIPE_FIXPOINT, LT_PIPE_ON},     /* x * c -> MatMul/Conv weights (after GELU: 0.5) (-O2) */
    {&lt_pass_cse, LT_PIPE_FIXPOINT, LT_PIPE_ON},            /* identical nodes and small constants merge     (-O2) */
    {&lt_pass_dce, LT_PIPE_FIXPOINT, LT_PIPE_ON},            /* unused nodes and initializers go              (-O1) */
    {&lt_pass_expand_contrib, LT_PIPE_FIXPOINT, LT_PIPE_ON}, /* com.microsoft ops -> standard ops             (-O1) */
    /* after simplification (static shapes known): ops the interpreter would run -> compiled ops */
    {&lt_pass_resize_gather, LT_PIPE_ONCE, LT_PIPE_ON},      /* constant-parameter Resize -> Gathers, sums   (-O1) */
    {&lt_pass_unroll_rnn, LT_PIPE_ONCE, LT_PIPE_ON},         /* LSTM / GRU / RNN -> one GEMM + unrolled steps (-O1) */
    {&lt_pass_convt_phases, LT_PIPE_ONCE, LT_PIPE_ON},       /* ConvTranspose -> phase Conv + depth-to-space (-O1) */
    {&lt_pass_instnorm_layernorm, LT_PIPE_ONCE, LT_PIPE_ON}, /* InstanceNormalization -> LayerNormalization (-O1) */
    {&lt_pass_groupnorm_layernorm, LT_PIPE_ONCE, LT_PIPE_ON}, /* GroupNormalization -> LayerNormalization  (-O1) */
    {&lt_pass_einsum_matmul, LT_PIPE_ONCE, LT_PIPE_ON},      /* Einsum -> Transpose / Reshape / MatMul     (-O1) */
    /* after simplification: convolution chains in NCHW{B}c (CPU); off by default, see layout_nchwc.c */
    {&lt_pass_layout_nchwc, LT_PIPE_ONCE, LT_PIPE_OFF},                                            /* (-O3) */
};

int lt_pipeline_size(void) { return (int)(sizeof pipeline / sizeof *pipeline); }

const lt_pipeline_entry *lt_pipeline_get(int i) { return i >= 0 && i < lt_pipeline_size() ? &pipeline[i] : NULL; }

const lt_pass *lt_pass_find(const char *name) {
    for (int i = 0; i < lt_pipeline_size(); i++)
        if (strcmp(pipeline[i].pass->name, name) == 0) return pipeline[i].pass;
    return NULL;
}

bool lt_pass_off_by_default(const lt_pass *p) {
    for (int i = 0; i < lt_pipeline_size(); i++)
        if (pipeline[i].pass == p) return pipeline[i].state == LT_PIPE_OFF;
    return false;
}

void lt_pass_names(char *buf, size_t size) {
    size_t len = 0;
    if (!size) return;
    buf[0] = 0;
    for (int i = 0; i < lt_pipeline_size(); i++) {
        int k = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", pipeline[i].pass->name);
        if (k < 0 || (size_t)k >= size - len) break;
        len += (size_t)k;
    }
}
