/* fuzz_import.c — libFuzzer target for the ONNX importer: decode arbitrary bytes as a model
 * (no external data: base_dir NULL), run shape inference on success, free everything. The same bytes
 * are also decoded as test data (TensorProto, SequenceProto, OptionalProto, MapProto).
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DLATHE_FUZZ=ON && cmake --build build-fuzz
 * Run:   build-fuzz/fuzz_import -max_len=65536 CORPUS_DIR   (seeds: python3 fuzz/make_corpus.py DIR)
 * A 16 MiB byte cap keeps densified sparse tensors and the like small enough for the fuzzer. */
#include "ops/infer.h"
#include "onnx/onnx.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lt_ctx ctx = {0};
    lt_load_options opt = {.max_bytes = (int64_t)16 << 20, .max_depth = 0};
    lt_model *m = NULL;
    if (lt_onnx_load_memory(&ctx, data, size, NULL, &opt, &m) == LT_OK) {
        lt_ctx c2 = {0};
        (void)lt_graph_infer(&c2, m); /* a second run must be safe too */
        lt_ctx c3 = {0};
        (void)lt_model_check_supported(&c3, m);
        lt_model_free(m);
    }
    static const lt_type tens = {.kind = LT_TK_TENSOR, .dtype = LT_FLOAT, .rank = -1};
    static const lt_type kinds[] = {
        {.kind = LT_TK_TENSOR, .rank = -1},
        {.kind = LT_TK_SEQUENCE, .rank = -1, .elem = (lt_type *)&tens},
        {.kind = LT_TK_OPTIONAL, .rank = -1, .elem = (lt_type *)&tens},
        {.kind = LT_TK_MAP, .dtype = LT_INT64, .rank = -1, .elem = (lt_type *)&tens},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        lt_ctx c = {0};
        lt_datum *d = NULL;
        if (lt_onnx_decode_datum(&c, data, size, &kinds[k], &d) == LT_OK) lt_datum_release(d);
    }
    return 0;
}
