/* fuzz_artifact.c — libFuzzer target for the .lathe artifact reader (src/compile/artifact.c):
 * arbitrary bytes parsed as an artifact. A file that parses must be consistent: its model and module
 * lie inside the file, the module's recorded hash is its hash, every recorded shape has a rank the
 * IR allows; its model section then goes through the ONNX importer with the recorded shapes. A
 * rejected file must leave one message naming the file. Nothing is ever loaded or compiled. Any
 * violation aborts, which the fuzzer reports.
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DLATHE_FUZZ=ON && cmake --build build-fuzz
 * Run:   build-fuzz/fuzz_artifact -max_len=65536 CORPUS_DIR   (seeds: lathe compile MODEL --save x.lathe) */
#include "base/hash.h"
#include "compile/artifact.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lt_ctx ctx = {0};
    lt_artifact *a = NULL;
    if (lt_artifact_parse(&ctx, "fuzz.lathe", data, size, &a) != LT_OK) {
        if (ctx.status == LT_OK || strncmp(ctx.msg, "fuzz.lathe", 10) != 0) abort();
        return 0;
    }
    if (!a->model || a->model < a->data || a->model + a->model_size > a->data + a->size) abort();
    if (a->module.image) {
        if (a->module.image < a->data || a->module.image + a->module.image_size > a->data + a->size) abort();
        char sha[65];
        lt_sha256_hex(a->module.image, a->module.image_size, sha);
        if (strcmp(sha, a->module.image_sha256) != 0) abort();
    }
    for (int i = 0; i < a->n_shapes; i++)
        if (a->shapes[i].rank < 0 || a->shapes[i].rank > LT_MAX_RANK) abort();
    lt_model *m = NULL;
    lt_ctx c2 = {0};
    if (lt_artifact_load_model(&c2, a, &m) == LT_OK) lt_model_free(m);
    lt_artifact_free(a);
    return 0;
}
