/* onnx_writer.h — serialize a model's (possibly optimized) graph as an ONNX ModelProto that
 * onnx.load and Netron read: nodes with every attribute kind (subgraphs included), initializers
 * (tensors through lt_onnx_encode_tensor: raw_data, sub-byte types packed, strings as string_data),
 * graph inputs / outputs and value_info with their types (symbolic dims by name), opset imports.
 * Used by `lathe run/compile --dump-graph OUT.onnx`. The ir_version is raised to at least 4 (passes
 * create initializers that are not graph inputs).
 * Entry points: lt_onnx_write_model (heap buffer), lt_onnx_write_model_file (atomic write).
 */
#ifndef LT_ONNX_WRITER_H
#define LT_ONNX_WRITER_H

#include "../graph/graph.h"

/* *data is heap (lt_mem_free). */
lt_status lt_onnx_write_model(lt_ctx *ctx, const lt_model *m, uint8_t **data, size_t *size);
lt_status lt_onnx_write_model_file(lt_ctx *ctx, const lt_model *m, const char *path);

#endif
