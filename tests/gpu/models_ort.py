#!/usr/bin/env python3
"""models_ort.py — whole models on `lathe run --backend cuda` against onnxruntime's CPU outputs, for
tests/gpu/run.sh (a script rather than pytest: the GPU machine may lack pytest).

Models: bench/models/zoo.py's set. "quick" = MobileNetV2 and the 9 light models (shipped in the onnx
package); "zoo" = the exported architectures of bench/models/exported.py in their CI configuration
(graph-only snapshots of torch.onnx's output, refilled); "all" = both, plus ResNet-50, the BERT-base
encoder and GPT-2 small (built on first use with random weights; ~1.2 GB written). Inputs: zoo.make_inputs(seed 0). onnxruntime runs with graph optimizations
off on the CPU. Tolerance as tests/test_models_ort.py: |lathe - ort| <= 1e-4 * RMS(ort) + 1e-4 * |ort| (float16 outputs:
5e-3 * (RMS + |ort|), as tests/test_zoo.py)
elementwise (fp32; no tf32 on the GPU).
If the CLI has no cuda backend (exit 3, "not available"), every model is reported as skipped.
Prints one line per model and appends a summary row to --summary. Exit 0 unless a model fails.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
import zoo  # noqa: E402
import exported  # noqa: E402

RTOL, ATOL_REL = 1e-4, 1e-4
F16_TOL = 5e-3
QUICK = ["mobilenetv2"] + [f"light_{n}" for n in zoo.LIGHT]


def ort_outputs(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return {o.name: v for o, v in zip(sess.get_outputs(), sess.run(None, feeds))}


def lathe_outputs(lathe, tmp, path, feeds, timeout):
    args = [lathe, "run", path, "--backend", "cuda", "--output", os.path.join(tmp, "out.npz")]
    for i, (name, arr) in enumerate(feeds.items()):
        f = os.path.join(tmp, f"in{i}.npy")
        np.save(f, arr)
        args += ["--input", f"{name}={f}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        return None, r.returncode, r.stderr.strip().splitlines()[-1:] or [""]
    with np.load(os.path.join(tmp, "out.npz")) as z:
        return {k: z[k] for k in z.files}, 0, None


def compare(got, want):
    """None if every output matches, else a one-line reason; and the worst max|diff|/RMS."""
    worst = 0.0
    for k, w in want.items():
        if k not in got:
            return f"output {k} missing", worst
        g = got[k]
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"{k}: got {g.dtype}{g.shape}, want {w.dtype}{w.shape}", worst
        rms = float(np.sqrt(np.mean(np.square(w, dtype=np.float64)))) or 1.0
        diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        worst = max(worst, float(diff.max()) / rms)
        if w.dtype == np.float16:  # float16 models: 5e-3 of (RMS + |ort|), as tests/test_zoo.py
            bad = ~(diff <= F16_TOL * (rms + np.abs(w.astype(np.float64))))
        else:
            bad = ~(diff <= ATOL_REL * rms + RTOL * np.abs(w))
        if bad.any():
            return f"{k}: {int(bad.sum())} of {w.size} elements off (max |diff| {diff.max():.3g} = {diff.max() / rms:.3g} x RMS)", worst
    return None, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--set", default="quick", choices=["quick", "zoo", "all"])
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--summary")
    args = ap.parse_args()
    zoo_tags = sorted("zoo:" + t for t in exported.SNAPSHOTS if "_ci" in t)
    names = {"quick": QUICK, "zoo": zoo_tags, "all": QUICK + zoo_tags + ["resnet50", "bert_base", "gpt2_small"]}[args.set]
    passed, failed, skipped, lines = 0, 0, 0, []
    for name in names:
        t0 = time.time()
        try:
            if name.startswith("zoo:"):
                path = exported.build(name[4:])
            else:
                path = zoo.light_probe(name) if name.startswith("light_") else zoo.ensure_built(name)
        except Exception as e:  # noqa: BLE001 (a light model missing from this onnx version)
            print(f"{name:26s} SKIP  {e}")
            skipped += 1
            continue
        feeds = exported.make_inputs(name[4:], seed=0, path=path) if name.startswith("zoo:") else \
            zoo.make_inputs(name, seed=0)
        want = ort_outputs(path, feeds)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                got, rc, err = lathe_outputs(args.lathe, tmp, path, feeds, args.timeout)
            except subprocess.TimeoutExpired:
                got, rc, err = None, -1, [f"timed out after {args.timeout} s"]
        if got is None:
            if rc == 3 and ("not available" in err[0] or "unknown backend" in err[0]):
                print(f"the CLI has no cuda backend: {err[0]}; skipping the model tests")
                skipped += len(names) - passed - failed
                break
            print(f"{name:26s} FAIL  lathe exited {rc}: {err[0][:160]}")
            failed += 1
            continue
        reason, worst = compare(got, want)
        dt = time.time() - t0
        if reason:
            print(f"{name:26s} FAIL  {reason} ({dt:.0f} s)")
            failed += 1
        else:
            print(f"{name:26s} ok    max |diff| / RMS {worst:.2e} ({dt:.0f} s)")
            passed += 1
    status = "ok" if failed == 0 and passed else ("SKIP" if not passed and not failed else "FAILED")
    line = "%-28s %-8s %s\n" % ("models vs onnxruntime", status,
                                f"{passed} passed, {failed} failed, {skipped} skipped ({args.set} set)")
    print(line, end="")
    if args.summary:
        with open(args.summary, "a") as f:
            f.write(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
