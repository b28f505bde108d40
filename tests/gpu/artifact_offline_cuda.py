#!/usr/bin/env python3
"""artifact_offline_cuda.py — CUDA .lathe artifacts saved with no GPU, run on the GPU, for tests/gpu/run.sh
(a script: the GPU machine may lack pytest).

For a small CNN and the zoo's bert_ci (batch 2, sequence 16):
  1. saved on the GPU (`lathe compile MODEL --target cuda --save`, no --arch): the device's architecture,
     read back from the artifact's meta (`arch=`);
  2. saved offline-style: `--arch` that architecture with every device hidden (CUDA_VISIBLE_DEVICES=""),
     so the compile only lowers and emits, and NVRTC builds the cubin with no device;
  3. the two files must be byte for byte the same;
  4. the offline artifact runs with NVRTC hidden (LATHE_NVRTC pointing nowhere, an empty cubin cache that
     must stay empty, no compiler on PATH) and its outputs must equal `lathe run MODEL --backend cuda`'s
     exactly;
  5. (the CNN) an artifact saved offline for an architecture this GPU cannot run (sm_80 on Hopper, sm_90a
     elsewhere) is refused with exit 3 and one line naming both architectures.

usage: artifact_offline_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a check fails)
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_common import cnn, report  # noqa: E402


def sections(data):
    """{tag: bytes} of a .lathe file."""
    _, n = struct.unpack_from("<II", data, 8)
    off, out = 16, {}
    for _ in range(n):
        tag = data[off:off + 8].rstrip(b"\0").decode()
        (length,) = struct.unpack_from("<Q", data, off + 8)
        out[tag] = data[off + 48:off + 48 + length]
        off += 48 + length
    return out


def lathe_run(lathe, args, env=None):
    return subprocess.run([lathe, *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


def hidden_env(d):
    """NVRTC, the C compiler and the cubin cache out of reach (as artifact_cuda.py)."""
    cache = os.path.join(d, "empty-cache")
    os.makedirs(cache, exist_ok=True)
    return dict(os.environ, LATHE_NVRTC="/nonexistent/libnvrtc.so", LATHE_CUDA_CACHE=cache, CC="/nonexistent/cc",
                PATH=os.path.join(d, "no-bin"), XDG_CACHE_HOME=cache), cache


def check_model(lathe, d, name, model, bind, inputs, failed, notes):
    """Steps 1-4 for one model; returns the device's architecture (None when the GPU save failed)."""
    on_gpu, offline = os.path.join(d, f"{name}.gpu.lathe"), os.path.join(d, f"{name}.offline.lathe")
    r = lathe_run(lathe, ["compile", model, *bind, "--target", "cuda", "--save", on_gpu])
    if r.returncode != 0:
        failed.append(f"{name}: save on the GPU: {r.stderr.strip()[-300:]}")
        return None
    m = re.search(rb"^arch=(\S+)$", sections(open(on_gpu, "rb").read())["meta"], re.M)
    if not m:
        failed.append(f"{name}: the GPU-saved artifact records no arch")
        return None
    arch = m.group(1).decode()
    r = lathe_run(lathe, ["compile", model, *bind, "--target", "cuda", "--save", offline, "--arch", arch],
                  env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    if r.returncode != 0 or "with no device" not in r.stdout:
        failed.append(f"{name}: offline save for {arch}: {r.stderr.strip()[-300:]} {r.stdout.strip()[-200:]}")
        return arch
    a, b = open(on_gpu, "rb").read(), open(offline, "rb").read()
    if a != b:
        sa, sb = sections(a), sections(b)
        diff = [t for t in sorted(set(sa) | set(sb)) if sa.get(t) != sb.get(t)]
        failed.append(f"{name}: saved offline differs from saved on the GPU in {', '.join(diff)}")
    feeds = os.path.join(d, f"{name}.in.npz")
    np.savez(feeds, **inputs)
    ref, got = os.path.join(d, f"{name}.ref.npz"), os.path.join(d, f"{name}.got.npz")
    r0 = lathe_run(lathe, ["run", model, *bind, "--backend", "cuda", "--input", feeds, "--output", ref])
    env, cache = hidden_env(d)
    r1 = lathe_run(lathe, ["run", offline, "--input", feeds, "--output", got], env=env)
    if r0.returncode != 0 or r1.returncode != 0:
        failed.append(f"{name}: run: {r0.stderr.strip()[-200:]} {r1.stderr.strip()[-300:]}")
        return arch
    x, y = np.load(ref), np.load(got)
    for k in x.files:
        if k not in y.files or x[k].shape != y[k].shape or not np.array_equal(x[k], y[k]):
            err = np.max(np.abs(x[k].astype(np.float64) - y[k])) if k in y.files and x[k].shape == y[k].shape else "shape"
            failed.append(f"{name}: output {k} differs from --backend cuda (max |diff| {err})")
    if os.listdir(cache):
        failed.append(f"{name}: something was built: {os.listdir(cache)}")
    notes.append(f"{name} {arch}")
    return arch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    lathe = os.path.abspath(a.lathe)
    failed, notes = [], []
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "cnn.onnx")
        cnn(model)
        x = np.random.default_rng(5).standard_normal((2, 3, 16, 16)).astype(np.float32)
        arch = check_model(lathe, d, "cnn", model, [], {"x": x}, failed, notes)
        try:
            import exported
            bert = exported.build("bert_ci")
        except Exception as e:  # noqa: BLE001 - the zoo needs its snapshots; say why and go on
            failed.append(f"bert_ci: cannot build the zoo model: {e}")
            bert = None
        if bert:
            rng = np.random.default_rng(7)
            mask = np.ones((2, 16), np.int64)
            mask[:, 12:] = 0
            feeds = {"input_ids": rng.integers(0, 100, size=(2, 16)).astype(np.int64), "attention_mask": mask}
            names = [i.name for i in onnx.load(bert, load_external_data=False).graph.input]
            feeds = {k: v for k, v in feeds.items() if k in names}
            check_model(lathe, d, "bert_ci", bert, ["--dim", "batch=2", "--dim", "sequence=16"], feeds, failed, notes)
        if arch:  # an architecture this GPU cannot run: refused before any launch, naming both
            other = "sm_90a" if not arch.startswith("sm_9") else "sm_80"
            art = os.path.join(d, "cnn.other.lathe")
            r = lathe_run(lathe, ["compile", model, "--target", "cuda", "--save", art, "--arch", other],
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
            if r.returncode != 0:
                failed.append(f"offline save for {other}: {r.stderr.strip()[-300:]}")
            else:
                env, _ = hidden_env(d)
                r = lathe_run(lathe, ["run", art], env=env)
                lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
                if r.returncode != 3 or len(lines) != 1 or f"built for {other}" not in lines[0] or \
                        "cannot run it" not in lines[0]:
                    failed.append(f"{other} artifact on this GPU: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                else:
                    notes.append(f"{other} refused")
    return report('artifact offline (cuda)', failed, f"saved with no GPU = saved on it (bytes); run with no NVRTC = --backend cuda: {'; '.join(notes)}", a.summary)


if __name__ == "__main__":
    sys.exit(main())
