#!/usr/bin/env python3
"""image_seeds.py — seeds for fuzz/fuzz_image_decode.c: the encoded images of the onnx package's
ImageDecoder node tests (PNG, JPEG, WebP, JPEG 2000, TIFF, BMP, PNM), each written three times with
the pixel_format byte (0 RGB, 1 BGR, 2 Grayscale) in front.

    python3 fuzz/image_seeds.py CORPUS_DIR
"""
import glob
import os
import sys

import onnx
from onnx import numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    node = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    n = 0
    for pb in sorted(glob.glob(os.path.join(node, "test_image_decoder_*", "test_data_set_0", "input_0.pb"))):
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        data = numpy_helper.to_array(t).tobytes()
        name = os.path.basename(os.path.dirname(os.path.dirname(pb)))
        for fmt in range(3):
            with open(os.path.join(out, f"{name}_{fmt}"), "wb") as f:
                f.write(bytes([fmt]) + data)
            n += 1
    print(f"image_seeds: wrote {n} seeds to {out}")


if __name__ == "__main__":
    main()
