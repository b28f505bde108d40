#!/usr/bin/env python3
"""data_dependent.py — models whose sizes depend on the data: lathe split and compiled, lathe with every
data-dependent op and what follows on the host (no_split), and onnxruntime, side by side.

usage: bench/data_dependent.py [--threads 1] [--runs 30] [--models nonzero,compress,...] [--md FILE]

Each model has one op whose output size the values decide, at a size where the work matters, and
compilable nodes after it:
  nonzero   x [512, 512] -> NonZero(x > 0.5) -> GatherND(x, nz^T) -> x*x -> Sqrt   (~80k elements kept)
  compress  x [4096, 64] -> Compress rows whose first column is > 0 -> @ W [64, 256] -> Tanh -> @ W2 [256, 64]
  topk      x [64, 1000], k [1] (given: 100) -> TopK -> Softmax over the k values + indices
  nms       2000 boxes, 10 classes, at most 100 per class -> the selected boxes gathered -> @ W [4, 64] -> Relu
  nms80     the same with 1000 boxes and 80 classes (COCO's)
  unique    20000 integers in [0, 500) -> Unique (sorted) -> values * counts -> CumSum
  loop      a Loop of max(n) = 100 steps, s = Tanh(s @ W [128, 128] + x) on s [8, 128], each step's
            pre-activation a scan output -> Relu (the body compiled at run time, or interpreted)
  loop_small  the same Loop over 1000 steps on s [1, 8]: what each iteration costs beyond its work
Three runners take turns, one run each per round, for --runs rounds (load from other processes hits
them alike); the medians are printed with split/no_split and split/onnxruntime ratios and their
geometric means, as a markdown table (also written to --md). Inputs are fixed per model (seed 0), so
every run sees the same sizes. Outputs of the three are checked against each other (exit 1 if they
differ); otherwise exit 0 (a benchmark, not a test).
"""
import argparse
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import lathe  # noqa: E402


def _model(nodes, inputs, outputs, inits=()):
    m = h.make_model(h.make_graph(nodes, "bench", inputs, outputs, list(inits)), opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8  # what onnxruntime reads
    return m


def _w(name, shape, rng):
    return nh.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)


def _c(name, value, dtype):
    return nh.from_array(np.array(value, dtype), name)


def build(name, rng):
    vi = h.make_tensor_value_info
    if name == "nonzero":
        nodes = [h.make_node("Greater", ["x", "t"], ["gt"]), h.make_node("NonZero", ["gt"], ["nz"]),
                 h.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]), h.make_node("GatherND", ["x", "idx"], ["g"]),
                 h.make_node("Mul", ["g", "g"], ["sq"]), h.make_node("Sqrt", ["sq"], ["y"])]
        return (_model(nodes, [vi("x", T.FLOAT, [512, 512])], [vi("y", T.FLOAT, None)], [_c("t", 0.5, np.float32)]),
                {"x": rng.standard_normal((512, 512)).astype(np.float32)})
    if name == "compress":
        nodes = [h.make_node("Slice", ["x", "s0", "s1", "s2"], ["col"]), h.make_node("Reshape", ["col", "flat"], ["c1"]),
                 h.make_node("Greater", ["c1", "zf"], ["cond"]), h.make_node("Compress", ["x", "cond"], ["cx"], axis=0),
                 h.make_node("MatMul", ["cx", "w"], ["mm"]), h.make_node("Tanh", ["mm"], ["t"]),
                 h.make_node("MatMul", ["t", "w2"], ["y"])]
        inits = [_c("s0", [0], np.int64), _c("s1", [1], np.int64), _c("s2", [1], np.int64), _c("flat", [-1], np.int64),
                 _c("zf", 0, np.float32), _w("w", (64, 256), rng), _w("w2", (256, 64), rng)]
        return (_model(nodes, [vi("x", T.FLOAT, [4096, 64])], [vi("y", T.FLOAT, None)], inits),
                {"x": rng.standard_normal((4096, 64)).astype(np.float32)})
    if name == "topk":
        nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1), h.make_node("Softmax", ["v"], ["sm"], axis=1),
                 h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT), h.make_node("Add", ["sm", "fi"], ["y"])]
        return (_model(nodes, [vi("x", T.FLOAT, [64, 1000]), vi("k", T.INT64, [1])], [vi("y", T.FLOAT, None)]),
                {"x": rng.standard_normal((64, 1000)).astype(np.float32), "k": np.array([100], np.int64)})
    if name in ("nms", "nms80"):
        nb, nc = (2000, 10) if name == "nms" else (1000, 80)
        nodes = [h.make_node("NonMaxSuppression", ["boxes", "scores", "maxo", "iou", "sth"], ["sel"]),
                 h.make_node("Gather", ["sel", "two"], ["bi"], axis=1), h.make_node("Squeeze", ["boxes", "zero"], ["b0"]),
                 h.make_node("Gather", ["b0", "bi"], ["picked"], axis=0), h.make_node("MatMul", ["picked", "w"], ["mm"]),
                 h.make_node("Relu", ["mm"], ["y"])]
        inits = [_c("maxo", [100], np.int64), _c("iou", [0.5], np.float32), _c("sth", [0.1], np.float32),
                 _c("two", 2, np.int64), _c("zero", [0], np.int64), _w("w", (4, 64), rng)]
        xy = rng.uniform(0, 300, (1, nb, 2)).astype(np.float32)
        boxes = np.concatenate([xy, xy + rng.uniform(5, 40, (1, nb, 2)).astype(np.float32)], axis=2)
        return (_model(nodes, [vi("boxes", T.FLOAT, [1, nb, 4]), vi("scores", T.FLOAT, [1, nc, nb])],
                       [vi("y", T.FLOAT, None)], inits),
                {"boxes": boxes, "scores": rng.uniform(0, 1, (1, nc, nb)).astype(np.float32)})
    if name == "unique":
        nodes = [h.make_node("Unique", ["x"], ["u", "ix", "inv", "cnt"], sorted=1), h.make_node("Cast", ["u"], ["uf"], to=T.FLOAT),
                 h.make_node("Cast", ["cnt"], ["cf"], to=T.FLOAT), h.make_node("Mul", ["uf", "cf"], ["p"]),
                 h.make_node("CumSum", ["p", "ax"], ["y"])]
        return (_model(nodes, [vi("x", T.INT64, [20000])], [vi("y", T.FLOAT, None)], [_c("ax", 0, np.int64)]),
                {"x": rng.integers(0, 500, 20000).astype(np.int64)})
    if name in ("loop", "loop_small"):
        steps, rows, d = (100, 8, 128) if name == "loop" else (1000, 1, 8)
        body = h.make_graph([h.make_node("MatMul", ["s", "w"], ["m"]), h.make_node("Add", ["m", "x"], ["a"]),
                             h.make_node("Tanh", ["a"], ["s2"]), h.make_node("Identity", ["cond"], ["c2"])], "body",
                            [vi("it", T.INT64, []), vi("cond", T.BOOL, []), vi("s", T.FLOAT, [rows, d])],
                            [vi("c2", T.BOOL, []), vi("s2", T.FLOAT, [rows, d]), vi("a", T.FLOAT, [rows, d])])
        nodes = [h.make_node("ReduceMax", ["n"], ["nm"], keepdims=0),
                 h.make_node("Loop", ["nm", "", "s0"], ["sf", "all"], body=body), h.make_node("Relu", ["all"], ["y"])]
        scale = 0.05 if d > 8 else 0.3
        return (_model(nodes, [vi("n", T.INT64, [2]), vi("s0", T.FLOAT, [rows, d]), vi("x", T.FLOAT, [rows, d])],
                       [vi("y", T.FLOAT, None)],  # a contracting recurrence: rounding differences fade
                       [nh.from_array((rng.standard_normal((d, d)) * scale).astype(np.float32), "w")]),
                {"n": np.array([steps, 7], np.int64), "s0": rng.standard_normal((rows, d)).astype(np.float32),
                 "x": rng.standard_normal((rows, d)).astype(np.float32)})
    raise SystemExit(f"unknown model {name}")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--models", default="nonzero,compress,topk,nms,nms80,unique,loop,loop_small")
    ap.add_argument("--md", default=None)
    a = ap.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    tmp = tempfile.mkdtemp()
    rows, bad = [], False
    for name in a.models.split(","):
        model, feeds = build(name, np.random.default_rng(0))
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(model, path)
        runners = {"split": lathe.compile(path, threads=a.threads), "no_split": lathe.compile(path, threads=a.threads, no_split=True)}
        if ort:
            so = ort.SessionOptions()
            so.intra_op_num_threads = a.threads
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            runners["onnxruntime"] = sess
        call = {"split": lambda: runners["split"].run(feeds), "no_split": lambda: runners["no_split"].run(feeds),
                "onnxruntime": lambda: dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))}
        times = {k: [] for k in runners}
        outs = {k: call[k]() for k in runners}  # warm-up: the rest compiles on the first run
        for k in runners:
            if outs[k]["y"].shape != outs["split"]["y"].shape or not np.allclose(outs[k]["y"], outs["split"]["y"], rtol=1e-4, atol=1e-4):
                print(f"{name}: {k}'s output differs from split's", file=sys.stderr)
                bad = True
        for _ in range(a.runs):
            for k in runners:
                times[k].append(timed(call[k])[0])
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        rows.append((name, outs["split"]["y"].shape, med))
    lines = [f"| model | output | split ms | no_split ms | onnxruntime ms | no_split / split | onnxruntime / split |",
             "|---|---|---|---|---|---|---|"]
    r_host, r_ort = [], []
    for name, shape, med in rows:
        ort_ms = med.get("onnxruntime")
        r_host.append(med["no_split"] / med["split"])
        if ort_ms:
            r_ort.append(ort_ms / med["split"])
        lines.append(f"| {name} | {'x'.join(map(str, shape))} | {med['split']:.3f} | {med['no_split']:.3f} | "
                     f"{ort_ms:.3f} | {med['no_split'] / med['split']:.2f} | {ort_ms / med['split']:.2f} |" if ort_ms else
                     f"| {name} | {'x'.join(map(str, shape))} | {med['split']:.3f} | {med['no_split']:.3f} | - | "
                     f"{med['no_split'] / med['split']:.2f} | - |")
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")  # noqa: E731
    lines.append(f"| geomean | | | | | {gm(r_host):.2f} | {gm(r_ort):.2f} |")
    text = "\n".join(lines)
    print(f"threads {a.threads}, {a.runs} rounds, medians (ratios > 1: split is faster)\n{text}")
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
