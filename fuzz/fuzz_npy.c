/* fuzz_npy.c — libFuzzer target for the .npy decoder (src/io/npy.c): arbitrary bytes decoded under a
 * 64 MiB limit. A file that decodes must give a tensor within the limit whose shape holds its element
 * count, and the tensor must survive the encoder: encoded and decoded again it is the same tensor
 * (strings by content, numbers by their bytes). Anything else aborts, which the fuzzer reports;
 * running with -malloc_limit_mb=256 reports any allocation the limit should have prevented.
 * Build: scripts/build.sh build-fuzz -DLATHE_FUZZ=ON -DCMAKE_C_COMPILER=clang
 * Run:   build-fuzz/fuzz_npy -max_len=4096 -malloc_limit_mb=256 CORPUS_DIR
 *        (seeds: python3 fuzz/io_seeds.py npy CORPUS_DIR) */
#include "io/io.h"
#include "io_roundtrip.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LIMIT ((int64_t)64 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lt_ctx ctx = {0};
    lt_tensor *t = NULL;
    lt_io_limits lim = {LIMIT};
    if (lt_npy_decode_limited(&ctx, data, size, "fuzz.npy", &lim, &t) != LT_OK) {
        if (t || !ctx.msg[0]) abort(); /* an error leaves no tensor and says why */
        return 0;
    }
    int64_t n = 1;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k] < 0 || !lt_mul_i64(n, t->dims[k], &n)) abort();
    if (n != t->numel || lt_tensor_nbytes(t) > LIMIT) abort();
    uint8_t *img = NULL;
    size_t isz = 0;
    lt_ctx c2 = {0};
    if (lt_npy_encode(&c2, t, &img, &isz, NULL) == LT_OK) {
        lt_tensor *back = NULL;
        lt_io_limits big = {LIMIT * 4};
        /* strings may come back wider (U<max chars>), within 4x the limit */
        if (lt_npy_decode_limited(&c2, img, isz, "back.npy", &big, &back) != LT_OK || !same(t, back)) abort();
        lt_tensor_release(back);
        lt_mem_free(img);
    }
    lt_tensor_release(t);
    return 0;
}
