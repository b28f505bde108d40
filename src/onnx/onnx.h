/* onnx.h — loading ONNX models and ONNX test-data files into the graph IR.
 *
 * The decoder is our own bounded protobuf reader (wire.h): every length is checked against the bytes
 * left, nesting is limited, tensor data is referenced in place in the mapped file where alignment
 * allows (zero-copy). External data is resolved relative to the model's folder and must stay inside
 * it; links are refused; offset+length is checked against the file size before mapping.
 * Model-local functions are inlined at import. After import, the graph has been verified and shape
 * inference has run (lt_graph_infer). Unsupported ops do not fail the load (so `inspect` can list
 * them); lt_model_check_supported reports them all at once.
 */
#ifndef LT_ONNX_H
#define LT_ONNX_H

#include "../graph/graph.h"

typedef struct lt_load_options {
    int64_t max_bytes;  /* largest model file / external file accepted; 0 = default (64 GiB) */
    int max_depth;      /* protobuf message nesting limit; 0 = default (64) */
} lt_load_options;

/* Load a model file. Errors name the file, the byte offset and the message/field at fault. */
lt_status lt_onnx_load_file(lt_ctx *ctx, const char *path, const lt_load_options *opt, lt_model **out);
/* Load from memory (data must outlive the model). base_dir: folder for external data, or NULL to
 * refuse external data. */
lt_status lt_onnx_load_memory(lt_ctx *ctx, const void *data, size_t size, const char *base_dir,
                              const lt_load_options *opt, lt_model **out);

/* Decode a serialized TensorProto (e.g. an input_0.pb test file) into a new tensor (owned). */
lt_status lt_onnx_decode_tensor(lt_ctx *ctx, const void *data, size_t size, lt_tensor **out,
                                char **name_out /* heap, may be NULL */);
/* Decode a test-data value whose kind is given by `expected` (tensor: TensorProto; sequence:
 * SequenceProto; optional: OptionalProto; map: MapProto) into a new datum. */
lt_status lt_onnx_decode_datum(lt_ctx *ctx, const void *data, size_t size, const lt_type *expected,
                               lt_datum **out);
/* Read a whole file and decode it as above (errors name the file). */
lt_status lt_onnx_read_datum_file(lt_ctx *ctx, const char *path, const lt_type *expected, lt_datum **out);

/* Serialize a tensor as a TensorProto (raw_data) into a heap buffer (for writing .pb files). */
lt_status lt_onnx_encode_tensor(lt_ctx *ctx, const lt_tensor *t, const char *name, uint8_t **data,
                                size_t *size);

#endif
