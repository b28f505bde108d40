#!/usr/bin/env python3
"""hostile_cuda.py — the hostile-shape models of tests/test_hostile_shapes.py on the GPU, under
compute-sanitizer (memcheck) when it is installed: every refused model exits 2 with the interpreter's
error line on `--backend cuda`, run-time gather indices out of range are errors, a valid model agrees
with the interpreter, and memcheck reports no invalid access in any of them.

usage: hostile_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a case fails)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import test_hostile_shapes as hs  # noqa: E402  (the cases live with the CPU test)


def sanitizer():
    for p in [shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer"]:
        if p and os.path.exists(p):
            return p
    return None


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    cs = sanitizer()
    wrap = [cs, "--tool", "memcheck", "--error-exitcode", "99"] if cs else []
    fails, n = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (m, _) in sorted(hs.CASES.items()):
            p = os.path.join(tmp, name + ".onnx")
            onnx.save(m, p)
            ref = run([a.lathe, "run", p, "--backend", "interp"])
            r = run(wrap + [a.lathe, "run", p, "--backend", "cuda"])
            n += 1
            if r.returncode != 2 or hs.error_line(r) != hs.error_line(ref):
                fails.append(f"{name}: exit {r.returncode}, '{hs.error_line(r)}' vs interp '{hs.error_line(ref)}'")
        for op, shape, idx, axis in [("Gather", [5, 3], [[0, 7]], 0), ("GatherElements", [2, 3], [[0, 5, 1]], 1)]:
            p = os.path.join(tmp, op + ".onnx")
            idx = np.array(idx, np.int64)
            onnx.save(hs.gather_model(op, shape, list(idx.shape), axis), p)
            np.save(os.path.join(tmp, "i.npy"), idx)
            r = run(wrap + [a.lathe, "run", p, "--backend", "cuda", "--input", f"i={tmp}/i.npy"])
            n += 1
            if r.returncode != 2:
                fails.append(f"{op} index out of range: exit {r.returncode}: {r.stderr[-300:]}")
    line = f"{'hostile shapes (cuda)':<28} {'ok' if not fails else 'FAILED':<8} {n - len(fails)}/{n} refused alike" \
           f"{', memcheck clean' if cs and not fails else '' if cs else ', no compute-sanitizer'}"
    print(line)
    for f in fails:
        print("  " + f)
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(line + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
