#!/usr/bin/env python3
"""build.py — build the benchmark models (random weights, fixed seeds, fp32) into bench/models/out/:

  resnet50.onnx     ResNet-50 v1.5, [1,3,224,224] -> logits [1,1000]         (~100 MB)
  mobilenetv2.onnx  MobileNetV2 1.0, [1,3,224,224] -> logits [1,1000]        (~14 MB)
  bert_base.onnx    BERT-base encoder, int64 [batch,sequence] x3 -> hidden + pooled  (~440 MB)
  gpt2_small.onnx   GPT-2 small forward, int64 [batch,sequence] -> logits    (~650 MB)

usage: bench/models/build.py [--check] [--force] [NAME...]     (default: all four)

Models already built are kept unless --force. --check runs each model once on onnxruntime with the
inputs of zoo.make_inputs (sequence 128 for the transformers) and prints the output shapes and value
ranges; a model onnxruntime cannot load or run is an error (exit 1). The graphs are described in
cnn_models.py and transformer_models.py (written with graph_builder.py); zoo.py is the registry the
benchmark and the tests share.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402


def check(name, path):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = zoo.make_inputs(name)
    t0 = time.perf_counter()
    outs = sess.run(None, feeds)
    ms = (time.perf_counter() - t0) * 1e3
    for o, v in zip(sess.get_outputs(), outs):
        print(f"  {o.name}: {v.dtype}{list(v.shape)}  min {v.min():.4g}  max {v.max():.4g}  "
              f"rms {np.sqrt(np.mean(np.square(v, dtype=np.float64))):.4g}  finite {bool(np.isfinite(v).all())}")
        if not np.isfinite(v).all():
            raise RuntimeError(f"{name}: output {o.name} has non-finite values")
    print(f"  onnxruntime: {ms:.1f} ms (first run, 2 threads)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help=f"models to build (default all: {', '.join(zoo.BENCH)})")
    ap.add_argument("--check", action="store_true", help="run each model once on onnxruntime")
    ap.add_argument("--force", action="store_true", help="rebuild models that exist")
    a = ap.parse_args()
    names = a.names or list(zoo.BENCH)
    bad = [n for n in names if n not in zoo.BENCH]
    if bad:
        ap.error(f"unknown model(s) {', '.join(bad)} (models: {', '.join(zoo.BENCH)})")
    rc = 0
    for name in names:
        path = zoo.model_path(name)
        if a.force or not os.path.exists(path):
            t0 = time.perf_counter()
            zoo.build(name, path)
            print(f"{name}: built {path} ({os.path.getsize(path) / 2**20:.1f} MiB, {time.perf_counter() - t0:.1f} s)")
        else:
            print(f"{name}: {path} exists ({os.path.getsize(path) / 2**20:.1f} MiB; --force rebuilds)")
        if a.check:
            try:
                check(name, path)
            except Exception as e:  # report every model, then fail
                print(f"  onnxruntime FAILED: {e}")
                rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
