/* fuzz_npz.c — libFuzzer target for the .npz decoder (src/io/npz.c: zip directory, zip64 records,
 * stored and deflated members, CRC-32, then the .npy decoder on each member): arbitrary bytes decoded
 * under a 64 MiB limit. An archive that decodes must hold distinct member names and arrays within
 * the limit together, and must survive the writer: written again (stored) and decoded, it gives the
 * same names and tensors. Anything else aborts, which the fuzzer reports; with -malloc_limit_mb=256
 * any allocation the limit should have prevented (an inflated zip bomb) is reported too.
 * Build: scripts/build.sh build-fuzz -DLATHE_FUZZ=ON -DCMAKE_C_COMPILER=clang
 * Run:   build-fuzz/fuzz_npz -max_len=65536 -malloc_limit_mb=256 CORPUS_DIR
 *        (seeds: python3 fuzz/io_seeds.py npz CORPUS_DIR) */
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
    lt_npz *z = NULL;
    lt_io_limits lim = {LIMIT};
    if (lt_npz_decode_limited(&ctx, data, size, "fuzz.npz", &lim, &z) != LT_OK) {
        if (z || !ctx.msg[0]) abort();
        return 0;
    }
    int64_t total = 0;
    for (int i = 0; i < z->n; i++) {
        total += lt_tensor_nbytes(z->tensors[i]);
        if (total > LIMIT || lt_npz_find(z, z->names[i]) != i) abort();
    }
    uint8_t *img = NULL;
    size_t isz = 0;
    lt_ctx c2 = {0};
    if (lt_npz_encode(&c2, z->n, (const char *const *)z->names, (const lt_tensor *const *)z->tensors, &img, &isz, NULL) ==
        LT_OK) {
        lt_npz *back = NULL;
        lt_io_limits big = {LIMIT * 4};
        if (lt_npz_decode_limited(&c2, img, isz, "back.npz", &big, &back) != LT_OK || back->n != z->n) abort();
        for (int i = 0; i < z->n; i++)
            if (strcmp(back->names[i], z->names[i]) != 0 || !same(z->tensors[i], back->tensors[i])) abort();
        lt_npz_free(back);
        lt_mem_free(img);
    }
    lt_npz_free(z);
    return 0;
}
