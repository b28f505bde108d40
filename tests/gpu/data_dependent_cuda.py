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
run by the plan (their body's plan on device memory, src/compile/loop_run.c) all ten times.

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
    return report("data-dependent sizes (cuda)", failed, f"{len(ddm.MODELS)} models equal to the interpreter; " + "; ".join(rows[:2]),
                  a.summary)


if __name__ == "__main__":
    sys.exit(main())
