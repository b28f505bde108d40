/* lower_gpu.h — GPU lowering of the GEMM-shaped anchors (lower_gpu_gemm.c: MatMul, Gemm, pointwise
 * Conv) and of 2-D convolution (lower_gpu_conv.c) to calls of the CUDA prelude's tile entry points
 * (codegen/prelude/cuda_gemm.h, cuda_conv.h), used with lt_lower_options.gpu.
 *
 * A lowered kernel is
 *     for GPU_BLOCK gb1 (axis z), gb0 (axis y): batch dims beyond the two the entry takes, if any
 *       for GPU_BLOCK gblk in [0, blocks) (axis x):
 *         for GPU_THREAD gthr in [0, threads):
 *           eval lt_cuda_mm_<dt>_<nn|nt>_<tile>(...) / lt_cuda_conv_<dt>_<kind>(...)
 * with the group's epilogue fused into the entry (scale, bias, residual, one activation). The
 * configuration is chosen here from static shapes, dtypes, strides and the target
 * (lt_lower_options.wgmma: wgmma on sm_90a only): tensor cores for float16 / bfloat16 when k, n,
 * the leading dimensions and batch strides are multiples of 8 (buffers are 64-byte aligned by the
 * plan), else SIMT (float32 always: no tf32). An entry that uses dynamic shared memory sets
 * lt_kernel.dyn_shared to its bytes (the emitter writes them beside the launch shape). Its loops are bound to
 * blocks and threads already, so the default schedule leaves the kernel as lowered.
 * When no entry fits (see lower_gemm.c) the GEMM falls back to lt_lower_gemm_gpu_loops and the
 * convolution to lower_nn.c's direct loops (lt_lower_gpu_conv leaves *handled false).
 */
#ifndef LT_LOWER_GPU_H
#define LT_LOWER_GPU_H

#include "lower_impl.h"

lt_status lt_lower_gpu_gemm(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res);
/* The naive GPU GEMM nest (lower_gemm.c): any strides, dtypes and epilogue. */
lt_status lt_lower_gemm_gpu_loops(lt_lctx *lc, const lt_gemm_desc *g, lt_lnode **res);
/* 2-D Conv n on the GPU; *handled false: lower it otherwise (a pointwise conv the GEMM entries
 * take as it is, or an epilogue the entries cannot apply). */
lt_status lt_lower_gpu_conv(lt_lctx *lc, const lt_node *n, bool *handled, lt_lnode **res);
/* GPU activation code of a call epilogue's activation (lt_call_epi.act): the same LT_ACT_* code
 * (codegen/prelude/abi.h, one numbering for both targets); -1 when it is none. */
int lt_lower_gpu_act(int call_act);
/* Edge of the SIMT GEMM tile (128, 64 or 32: cuda_gemm.h lt_cuda_mm_*_simt, _simt64, _simt32) for an
 * m x n output over `batch` entries: the largest giving at least ~one block per SM, else 32. */
int lt_lower_gpu_simt_tile(int64_t m, int64_t n, int64_t batch);
/* Do the kernels target sm_90a (lt_lower_options.wgmma), so the wgmma tile entries may be used? */
bool lt_lower_gpu_wgmma(const lt_lctx *lc);
/* Statements appended to body (the count returned, at most 4 log2 T): part[t] = part[0] + .. + part[t]
 * over a block's T threads (thread variable thr; part shared, T entries, each thread's value stored
 * and a barrier passed before), by log2 T steps of adding the value s threads back between barriers;
 * v is an INT64 variable the caller declared, the statements assign (lower_select.c). */
int lt_lower_gpu_block_scan(lt_lctx *lc, lt_lbuf *part, lt_lvar *thr, lt_lvar *v, int64_t T, lt_lnode **body);
/* A fresh GPU_BLOCK / GPU_THREAD loop of the given role, bound to axis 0..2. */
lt_lnode *lt_lower_gpu_loop(lt_lctx *lc, lt_lvar *v, lt_loop_role role, int64_t extent, lt_loop_kind kind, int axis,
                            lt_lnode *body);

#endif
