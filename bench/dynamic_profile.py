#!/usr/bin/env python3
"""dynamic_profile.py — where a model compiled for every shape loses time against a static compile,
kernel by kernel: `lathe profile` at one shape, once static and once with --family (kernels taking
their sizes at run time), the two tables joined by kernel name.

usage: bench/dynamic_profile.py --lathe BUILD/lathe [--model bert_ci] [--shape 2x32] [--backend cpu|cuda]
                                [--runs 200] [--threads 1] [--top 12]

The zoo model (bench/models/exported.py; bert_ci takes input_ids and attention_mask [batch, sequence])
gets inputs of that shape (written to a temporary folder). Prints, per kernel, the static and the
family median times (microseconds) and the difference, the kernels that lose most first; then both
runs' sums of kernel medians and whole-run medians: what the kernels add, and what the run adds
around them (selecting the plan, arguments, launches). A diagnostic, not a test: exit 0 unless a
profile fails.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))


def inputs(model, shape, d):
    b, s = shape
    rng = np.random.default_rng(0)
    mask = np.ones((b, s), np.int64)
    mask[:, max(1, s - 3):] = 0
    arrays = {"input_ids": rng.integers(0, 100, (b, s)).astype(np.int64), "attention_mask": mask}
    if model.startswith("pplcnet"):
        arrays = {"x": rng.standard_normal((b, 3, s, s)).astype(np.float32)}
    args = []
    for name, a in arrays.items():
        path = os.path.join(d, f"{name}.npy")
        np.save(path, a)
        args += ["--input", f"{name}={path}"]
    return args


def profile(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    rows, run = {}, None
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0].startswith("lt_k") and len(f) > 2:
            rows[f[0]] = (f[1], float(f[2]) * 1e3)  # ms -> us
        elif line.startswith("run: median"):
            run = line
    return rows, run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--model", default="bert_ci")
    ap.add_argument("--shape", default="2x32")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    import exported
    path = exported.build(a.model)
    shape = tuple(int(v) for v in a.shape.lower().split("x"))
    with tempfile.TemporaryDirectory() as d:
        base = [a.lathe, "profile", path, "--backend", a.backend, "--runs", str(a.runs), "--threads", str(a.threads),
                "--no-cache"] + inputs(a.model, shape, d)
        static, run_s = profile(base)
        family, run_f = profile(base + ["--family"])
    print(f"{a.model} {a.shape} on {a.backend}: {len(static)} kernels static, {len(family)} with --family")
    rows = []
    for name in sorted(set(static) | set(family)):
        ks, ts = static.get(name, ("-", 0.0))
        kf, tf = family.get(name, ("-", 0.0))
        rows.append((tf - ts, name, ks if ks == kf else f"{ks}/{kf}", ts, tf))
    rows.sort(reverse=True)
    print(f"{'kernel':<10} {'kind':<22} {'static us':>10} {'family us':>10} {'diff us':>9}")
    for diff, name, kind, ts, tf in rows[:a.top]:
        print(f"{name:<10} {kind:<22} {ts:>10.2f} {tf:>10.2f} {diff:>+9.2f}")
    ss, sf = sum(t for _, t in static.values()), sum(t for _, t in family.values())
    print(f"sum of kernel medians: static {ss:.1f} us, family {sf:.1f} us ({sf - ss:+.1f} us)")
    print(f"static: {run_s}\nfamily: {run_f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
