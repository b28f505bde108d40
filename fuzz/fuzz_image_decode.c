/* fuzz_image_decode.c — libFuzzer target for ImageDecoder (src/ops/image/image_decode*.c): the
 * input's first byte picks the pixel_format (RGB, BGR, Grayscale), the rest is the encoded image,
 * run through the op's eval hook on a hand-built node. Every format the build has is reached (PNG,
 * JPEG, WebP, JPEG 2000, TIFF through their libraries; BMP and PNM hand-written). A decode must
 * either give a uint8 [H, W, C] tensor of the requested channel count within the size limit, or fail
 * with a message; anything else aborts, which the fuzzer reports.
 * Build: cmake -S . -B build-fuzz -DLATHE_FUZZ=ON -DCMAKE_C_COMPILER=clang && cmake --build build-fuzz
 * Run:   build-fuzz/fuzz_image_decode -max_len=65536 -rss_limit_mb=4096 CORPUS_DIR
 *        (seeds: any small images, each with one byte put in front; the onnx package's
 *        test_image_decoder_* inputs are a start) */
#include "../tests/unit/test_node.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *formats[3] = {"RGB", "BGR", "Grayscale"};
    if (size < 1) return 0;
    int fmt = data[0] % 3;
    tnode t;
    tn_init(&t, LT_OP_ImageDecoder, "ImageDecoder", 20, 1);
    tn_bytes(&t, data + 1, size - 1);
    tn_str(&t, "pixel_format", formats[fmt]);
    lt_status s = tn_eval(&t);
    const lt_tensor *y = tn_out(&t, 0);
    if (s == LT_OK) {
        if (!y || y->dtype != LT_UINT8 || y->rank != 3 || y->dims[2] != (fmt == 2 ? 1 : 3) || y->dims[0] < 1 ||
            y->dims[1] < 1 || y->dims[0] * y->dims[1] > ((int64_t)1 << 28))
            abort();
    } else if (!t.ctx.msg[0]) {
        abort(); /* an error says why */
    }
    tn_free(&t);
    return 0;
}
