#!/usr/bin/env python3
"""symbolic_cuda.py — a model with symbolic dims compiled once on the GPU, for tests/gpu/run.sh (a script:
the GPU machine may lack pytest).

lathe.compile on the zoo's bert_ci (batch and sequence symbolic) with backend "cuda" and no cache folder
gives one model for every shape (src/compile/family.h). It runs at shapes of one bucket and at others;
each output must equal the reference interpreter's (rtol 1e-3: the GPU's float order differs), and the
report says how many buckets and NVRTC module builds the shapes took, printed as the summary line.

usage: symbolic_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a check fails)
"""
import argparse
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))


def feeds(batch, seq, seed):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - 3:] = 0
    return {"input_ids": rng.integers(0, 100, size=(batch, seq)).astype(np.int64), "attention_mask": mask}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    os.environ.setdefault("LATHE_LIBRARY", os.path.join(os.path.dirname(os.path.abspath(a.lathe)), "liblathe.so"))
    import lathe
    import exported
    path = exported.build("bert_ci")
    model = lathe.compile(path, backend="cuda", cache_dir=False)
    ref = lathe.compile(path, backend="interp")
    failed = []
    shapes = ((4, 33), (4, 57), (4, 41), (1, 16), (16, 64), (16, 96), (16, 80), (16, 65), (16, 97), (4, 33))
    built = 0
    for batch, seq in shapes:
        f = feeds(batch, seq, seq)
        got, want = model.run(f), ref.run(f)
        now = re.search(r"modules built: (\d+)", model.report)
        now = int(now.group(1)) if now else built
        print(f"{batch}x{seq}: {'new bucket (NVRTC)' if now > built else 'no NVRTC'}")
        built = now
        for name in want:
            if got[name].shape != want[name].shape or not np.allclose(got[name], want[name], rtol=1e-3, atol=1e-4):
                err = float(np.abs(got[name].astype(np.float64) - want[name]).max()) if got[name].shape == want[name].shape \
                    else "shape"
                failed.append(f"{name} at {batch}x{seq}: max error {err}")
    report = model.report
    print(report)
    m = re.search(r"buckets: (\d+); modules built: (\d+), reused: (\d+)", report)
    what = f"{len(shapes)} runs, {len(set(shapes))} shapes: {m.group(1)} buckets, {m.group(2)} NVRTC builds, {m.group(3)} reused" if m else "no report"
    for f in failed:
        print("FAILED", f)
    line = f"{'symbolic dims (cuda)':<28} {'FAILED' if failed else 'ok':<8} " + \
           (f"equal to the interpreter; {what}" if not failed else failed[0][:90])
    print(line)
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(line + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
