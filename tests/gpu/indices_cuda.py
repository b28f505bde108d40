#!/usr/bin/env python3
"""indices_cuda.py — the compiled Gathers and Scatters on `--backend cuda` against the interpreter, for
tests/gpu/run.sh (a script: the GPU machine may lack pytest).

- every case of tests/test_scatter_ops.py (ScatterElements / ScatterND, every reduction, repeated
  indices, float16, int, bool), indices constant and given as a model input: the outputs must equal
  the interpreter's exactly (each fiber applies its updates in the interpreter's order);
- every case of tests/test_index_checks.py (indices the model computes, checked by the kernels on the
  GPU through the plan's check word in device memory): in range, equal to the interpreter's; out of
  range, the run fails (exit 2) naming the node, and a second, good run of the same process is right.

usage: indices_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a case fails)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import test_index_checks as tic  # noqa: E402  (the CPU tests' model builders)
import test_scatter_ops as tso  # noqa: E402


def same(a, b):
    """Equal dtype, shape and values, NaNs in the same places counting as equal."""
    try:
        np.testing.assert_array_equal(a, b)
        return a.dtype == b.dtype
    except AssertionError:
        return False


def run(lathe, path, inputs, backend, out):
    args = [lathe, "run", path, "--backend", backend, "--input", inputs] + (["--output", out] if out else [])
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def outputs(lathe, path, d, tag):
    got = {}
    for b in ("interp", "cuda"):
        out = os.path.join(d, f"{tag}_{b}.npz")
        r = run(lathe, path, os.path.join(d, "in.npz"), b, out)
        if r.returncode != 0:
            return None, f"{b}: {r.stderr.strip()[-300:]}"
        with np.load(out) as z:
            got[b] = z["y"]
    return got, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    failed, n = [], 0
    with tempfile.TemporaryDirectory() as d:
        for case in sorted(tso.CASES):
            for indices in ("constant", "input"):
                rng = np.random.default_rng(zlib.crc32(case.encode()))
                node, feeds, dt, opset = tso.CASES[case](rng)
                const = ("i",) if indices == "constant" else ()
                path = os.path.join(d, "m.onnx")
                onnx.save(tso.model(node, feeds, dt, opset, const), path)
                np.savez(os.path.join(d, "in.npz"), **{k: v for k, v in feeds.items() if k not in const})
                got, why = outputs(a.lathe, path, d, case)
                n += 1
                if got is None or not same(got["cuda"], got["interp"]):
                    failed.append(f"scatter {case} ({indices}): {why or 'differs from the interpreter'}")
        for case in sorted(tic.CASES):
            build, feeds = tic.CASES[case]
            path = os.path.join(d, f"{case}.onnx")
            onnx.save(build(), path)
            for bad in (False, True):
                np.savez(os.path.join(d, "in.npz"), **feeds(np.random.default_rng(4), bad))
                n += 1
                if not bad:
                    got, why = outputs(a.lathe, path, d, case)
                    if got is None or not same(got["cuda"], got["interp"]):
                        failed.append(f"computed indices {case}: {why or 'differs from the interpreter'}")
                    continue
                r = run(a.lathe, path, os.path.join(d, "in.npz"), "cuda", None)
                if r.returncode != 2 or "'n'" not in r.stderr or "out of range" not in r.stderr:
                    failed.append(f"computed indices {case} out of range: exit {r.returncode}: {r.stderr.strip()[-200:]}")
    for f in failed:
        print("FAILED", f)
    line = f"{'indices (cuda)':<28} {'FAILED' if failed else 'ok':<8} {n - len(failed)}/{n} cases match the interpreter"
    print(line)
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(line + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
