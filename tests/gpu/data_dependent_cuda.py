#!/usr/bin/env python3
"""data_dependent_cuda.py — models whose sizes depend on the data, split and compiled on the GPU, for
tests/gpu/run.sh (a script: the GPU machine may lack pytest).

The models of tests/data_dependent_models.py (NonZero, NonMaxSuppression, Unique, TopK with a run-time
k, Compress, a Loop's scan output, each followed by compilable nodes) are compiled with backend "cuda"
and no cache folder: the graph is split at the data-dependent op (src/compile/split.h), NonZero runs as
a CUDA kernel with a padded output, and the nodes after it are compiled as a family keyed by the sizes
the data gives. Each runs ten times on random data whose sizes vary; every output must equal the
reference interpreter's (rtol 1e-3), with its shape, the report must name the split, and the last six
runs must build no NVRTC module (the rest's "modules built" in the model's report). The Loops must be
run by the plan (their body's plan on device memory, src/compile/loop_run.c) all ten times. Then a
sweep of Unique and NonMaxSuppression over sizes, dtypes and attributes (sweep_cases) must equal the
interpreter bit for bit.

usage: data_dependent_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a check fails)
"""
import argparse
import os
import re
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_common import report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    os.environ.setdefault("LATHE_LIBRARY", os.path.join(os.path.dirname(os.path.abspath(a.lathe)), "liblathe.so"))
    import onnx
    import lathe
    import data_dependent_models as ddm
    failed, rows = [], []
    tmp = tempfile.mkdtemp()
    for name, (build, make_feeds) in sorted(ddm.MODELS.items()):
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(build(), path)
        try:
            model = lathe.compile(path, backend="cuda", cache_dir=False)
            ref = lathe.compile(path, backend="interp")
            rng = np.random.default_rng(7)
            built = []
            for i in range(10):
                f = make_feeds(rng)
                got = model.run(f)
                m = re.search(r"modules built: (\d+)", model.report)
                built.append(int(m.group(1)) if m else -1)
                want = ref.run(f)
                for k in want:
                    if got[k].shape != want[k].shape or not np.allclose(got[k], want[k], rtol=1e-3, atol=1e-4):
                        failed.append(f"{name} run {i}: output {k} {got[k].shape} differs from the interpreter's {want[k].shape}")
            if "data-dependent sizes: split after 1 op(s)" not in model.report:
                failed.append(f"{name}: no split in the report")
            if name.startswith("loop") and "the Loop run by the plan 10 times" not in model.report:
                failed.append(f"{name}: the Loop was not run by the plan ten times:\n{model.report}")
            if built[-1] != built[3]:
                failed.append(f"{name}: NVRTC modules built after the warm-up runs: {built}")
            rows.append(f"{name} {built[-1]} NVRTC module(s) for 10 runs")
            print(rows[-1])
        except lathe.LatheError as e:
            failed.append(f"{name}: {e}")
    n_sweep = sweep(lathe, onnx, tmp, failed)
    return report("data-dependent sizes (cuda)", failed, f"{len(ddm.MODELS)} models and {n_sweep} sweep cases equal to the "
                  "interpreter; " + "; ".join(rows[:2]), a.summary)


def sweep_cases(rng):
    """(name, nodes, inputs, outputs, initializers, feeds): Unique of 1 to 70000 items (int64, and float
    with NaNs and -0; sorted and not; along an axis) and NonMaxSuppression of 1 to 1200 classes (corner
    and center boxes): the block sort, the group scan and the pair-per-thread selection at sizes around
    their thread counts."""
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    V = h.make_tensor_value_info
    outs = ["y", "ix", "inv", "cnt"]
    for n in [1, 2, 3, 5, 17, 64, 1000, 1025, 20000, 70000]:
        ints = rng.integers(-50, 50, n).astype(np.int64)
        floats = (np.where(rng.random(n) < 0.1, np.nan, np.round(rng.standard_normal(n), 1)) *
                  np.where(rng.random(n) < 0.5, -1, 1)).astype(np.float32)
        for dt, x in [(T.INT64, ints), (T.FLOAT, floats)]:
            for srt in (1, 0):
                yield (f"unique n={n} {x.dtype} sorted={srt}", [h.make_node("Unique", ["x"], outs, sorted=srt)],
                       [V("x", dt, [n])], [V(o, T.INT64 if o != "y" else dt, None) for o in outs], [], {"x": x})
    for shape, axis in [((6, 4), 0), ((5, 3, 2), 1), ((300, 3), 0)]:
        yield (f"unique {shape} axis={axis}", [h.make_node("Unique", ["x"], outs, sorted=1, axis=axis)],
               [V("x", T.INT64, list(shape))], [V(o, T.INT64, None) for o in outs], [],
               {"x": rng.integers(0, 3, shape).astype(np.int64)})
    for B, C, N, mo, cpb in [(1, 1, 1, 5, 0), (2, 3, 50, 10, 0), (3, 7, 200, 1000, 1), (1, 90, 300, 20, 0),
                             (2, 600, 40, 3, 0), (1, 1200, 8, 2, 1)]:
        xy = rng.uniform(0, 50, (B, N, 2)).astype(np.float32)
        boxes = np.concatenate([xy, xy + rng.uniform(1, 20, (B, N, 2)).astype(np.float32)], axis=2)
        inits = [nh.from_array(np.array([mo], np.int64), "mo"), nh.from_array(np.array([0.4], np.float32), "iou"),
                 nh.from_array(np.array([0.2], np.float32), "st")]
        yield (f"nms B={B} C={C} N={N}", [h.make_node("NonMaxSuppression", ["b", "s", "mo", "iou", "st"], ["sel"],
                                                      center_point_box=cpb)],
               [V("b", T.FLOAT, [B, N, 4]), V("s", T.FLOAT, [B, C, N])], [V("sel", T.INT64, None)], inits,
               {"b": boxes, "s": rng.uniform(0, 1, (B, C, N)).astype(np.float32)})


def sweep(lathe, onnx, tmp, failed):
    """Each sweep case compiled for cuda against the interpreter, bit for bit; the number of cases."""
    from onnx import helper as h
    n = 0
    for name, nodes, inputs, outputs, inits, feeds in sweep_cases(np.random.default_rng(0)):
        path = os.path.join(tmp, "sweep.onnx")
        onnx.save(h.make_model(h.make_graph(nodes, "g", inputs, outputs, inits), opset_imports=[h.make_opsetid("", 17)]), path)
        n += 1
        try:
            got = lathe.compile(path, backend="cuda", cache_dir=False).run(feeds)
            want = lathe.compile(path, backend="interp").run(feeds)
        except lathe.LatheError as e:
            failed.append(f"{name}: {e}")
            continue
        for k in want:
            if got[k].shape != want[k].shape or not np.array_equal(got[k], want[k], equal_nan=True):
                failed.append(f"{name}: output {k} {got[k].shape} differs from the interpreter's {want[k].shape}")
                break
    return n


if __name__ == "__main__":
    sys.exit(main())
