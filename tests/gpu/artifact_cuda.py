#!/usr/bin/env python3
"""artifact_cuda.py — a CUDA .lathe artifact on the GPU, for tests/gpu/run.sh (a script: the GPU machine
may lack pytest).

Saves a small CNN (Conv, Relu, GlobalAveragePool, Gemm, Softmax) with `lathe compile --target cuda
--save`, then runs the artifact with NVRTC hidden (LATHE_NVRTC pointing nowhere, an empty cubin cache
that must stay empty, no compiler on PATH) and compares its output with `lathe run MODEL --backend cuda`
exactly. A changed byte in the module section must be refused naming the section.

usage: artifact_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a check fails)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_common import cnn, report  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    failed = []
    with tempfile.TemporaryDirectory() as d:
        model, art = os.path.join(d, "cnn.onnx"), os.path.join(d, "cnn.lathe")
        cnn(model)
        np.savez(os.path.join(d, "in.npz"), x=np.random.default_rng(5).standard_normal((2, 3, 16, 16)).astype(np.float32))
        r = subprocess.run([a.lathe, "compile", model, "--target", "cuda", "--save", art], capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(f"save: {r.stderr.strip()[-300:]}")
        else:
            ref = subprocess.run([a.lathe, "run", model, "--backend", "cuda", "--input", os.path.join(d, "in.npz"),
                                  "--output", os.path.join(d, "ref.npz")], capture_output=True, text=True)
            cache = os.path.join(d, "empty-cache")
            os.makedirs(cache)
            env = dict(os.environ, LATHE_NVRTC="/nonexistent/libnvrtc.so", LATHE_CUDA_CACHE=cache, CC="/nonexistent/cc",
                       PATH=os.path.join(d, "no-bin"), XDG_CACHE_HOME=cache)
            got = subprocess.run([a.lathe, "run", art, "--input", os.path.join(d, "in.npz"), "--output",
                                  os.path.join(d, "got.npz")], capture_output=True, text=True, env=env)
            if ref.returncode != 0 or got.returncode != 0:
                failed.append(f"run: {ref.stderr.strip()[-200:]} {got.stderr.strip()[-300:]}")
            else:
                y0, y1 = np.load(os.path.join(d, "ref.npz"))["y"], np.load(os.path.join(d, "got.npz"))["y"]
                if not np.array_equal(y0, y1):
                    failed.append(f"the artifact's output differs (max |diff| {np.max(np.abs(y0 - y1)):.3g})")
                if os.listdir(cache):
                    failed.append(f"something was built: {os.listdir(cache)}")
            data = bytearray(open(art, "rb").read())
            data[-5] ^= 0x40  # the module is the last section
            open(art, "wb").write(bytes(data))
            bad = subprocess.run([a.lathe, "run", art], capture_output=True, text=True)
            if bad.returncode != 2 or "module" not in bad.stderr:
                failed.append(f"tampered module: exit {bad.returncode}: {bad.stderr.strip()[-200:]}")
    return report("artifact (cuda)", failed, "saved, run with no NVRTC: equal to --backend cuda; tampering refused",
                  a.summary)


if __name__ == "__main__":
    sys.exit(main())
