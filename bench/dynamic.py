#!/usr/bin/env python3
"""dynamic.py — a model compiled once for every shape against static compiles and onnxruntime.

usage: bench/dynamic.py [--model bert_ci] [--shapes 4x33,2x41,3x50,8x97,16x64] [--backend cpu|cuda]
                        [--threads 1] [--runs 40] [--cache-dir DIR] [--no-ort] [--md FILE] [--lathe BIN]

The zoo model (bench/models/exported.py: bert_ci takes input_ids and attention_mask [batch, sequence];
pplcnet_ci takes x [batch, 3, height, width], shapes then written BxHxW) is compiled three ways:
  - dynamic: lathe.compile(model) with its symbolic dims unbound, one compiled model for every shape
    (src/compile/family.h): each new shape runs the host pipeline and takes a bucket's module;
  - static: lathe.compile(model, dims=...) at each shape;
  - onnxruntime: one InferenceSession (it takes every shape), intra_op_num_threads = --threads; with
    --backend cuda its CUDAExecutionProvider when onnxruntime has one (else the row has no ORT time).
Inputs are numpy arrays on the host for all three (so with --backend cuda each run includes the
copies to and from the GPU, alike for lathe's two and onnxruntime's).
At each shape the three take turns, one run each per round, for --runs rounds (so load from other
processes hits them alike); the medians are reported, with the first run of the shape on the dynamic
model (a new bucket compiles; a shape of an existing bucket costs the host pipeline only) and the
bucket count after it. The outputs of dynamic and static are checked against each other (and against
onnxruntime's: max |diff|). Prints a markdown table with dynamic/static and dynamic/ORT per shape and
their geometric means and worst cases, and writes it to --md when given. Then the dynamic model runs
the shapes in turn (each run another shape than the last, as a server's requests come) and the line
after the table compares those medians with the same-shape ones: what switching costs. With --backend
cuda and --lathe BIN, a second table compares the device time alone (`lathe run --bench`: CUDA events
around the replayed steps), the kernels without the copies and the host side of a run.
Exit status 0 even when slower (a benchmark); 1 when outputs disagree or a compile fails.
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))

import lathe  # noqa: E402
import exported  # noqa: E402


def parse_shape(model, text):
    nums = [int(v) for v in text.lower().split("x")]
    if model.startswith("pplcnet"):
        b, h, w = nums
        return {"DynamicDimension.0": b, "DynamicDimension.1": h, "DynamicDimension.2": w}, (b, 3, h, w)
    b, s = nums
    return {"batch": b, "sequence": s}, (b, s)


def feeds_for(model, shape, seed):
    rng = np.random.default_rng(seed)
    if model.startswith("pplcnet"):
        return {"x": rng.standard_normal(shape).astype(np.float32)}
    b, s = shape
    mask = np.ones((b, s), np.int64)
    mask[:, max(1, s - 3):] = 0
    return {"input_ids": rng.integers(0, 100, size=(b, s)).astype(np.int64), "attention_mask": mask}


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1e3, out


def max_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(a[k], np.float64) - np.asarray(b[k], np.float64)))) for k in a)


def device_ms(lathe_bin, path, feeds, runs, dims=None):
    """`lathe run --bench` on the GPU at these feeds: the median device time of the replayed plan (CUDA
    events around the steps, the copies excluded), compiled for every shape (dims None) or with dims bound."""
    with tempfile.TemporaryDirectory() as d:
        npz = os.path.join(d, "feeds.npz")
        np.savez(npz, **feeds)
        cmd = [lathe_bin, "run", path, "--backend", "cuda", "--each", npz, "--bench", str(runs)]
        for k, v in (dims or {}).items():
            cmd += ["--dim", f"{k}={v}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        m = re.search(r"bench: device median ([0-9.]+) ms", r.stdout)
        if r.returncode != 0 or not m:
            sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        return float(m.group(1))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bert_ci")
    ap.add_argument("--shapes", default=None)
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--md", default=None)
    ap.add_argument("--lathe", default=None, help="with --backend cuda: the lathe binary, for the device-time table")
    a = ap.parse_args()
    shapes = a.shapes or ("2x64x64,3x48x40,2x33x45,4x96x80" if a.model.startswith("pplcnet") else "4x33,2x41,3x50,8x97,16x64")
    path = exported.build(a.model)
    kw = {"threads": a.threads, "backend": a.backend}
    if a.cache_dir:
        kw["cache_dir"] = a.cache_dir
    dyn = lathe.compile(path, **kw)
    ort = None
    if not a.no_ort:
        import onnxruntime as rt
        so = rt.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
        want = "CUDAExecutionProvider" if a.backend == "cuda" else "CPUExecutionProvider"
        if want in rt.get_available_providers():
            ort = rt.InferenceSession(path, so, providers=[want])
    rows, bad, all_feeds = [], False, []
    for i, text in enumerate(shapes.split(",")):
        dims, shape = parse_shape(a.model, text)
        feeds = feeds_for(a.model, shape, i)
        all_feeds.append(feeds)
        first_ms, got = timed(lambda: dyn.run(feeds))
        buckets = dyn.report.split("buckets: ")[1].split(";")[0] if "buckets: " in dyn.report else "?"
        static = lathe.compile(path, dims=dims, **kw)
        ref = static.run(feeds)
        diff = max_diff(ref, got)
        ort_diff = max_diff({k: v for k, v in zip([o.name for o in ort.get_outputs()], ort.run(None, feeds))}, got) if ort else 0.0
        if diff > (1e-4 if a.backend == "cpu" else 1e-3) or ort_diff > 1e-3:
            bad = True
        engines = [("dynamic", lambda: dyn.run(feeds)), ("static", lambda: static.run(feeds))]
        if ort:
            engines.append(("ort", lambda: ort.run(None, feeds)))
        times = {name: [] for name, _ in engines}
        for _ in range(3):
            for _, fn in engines:
                fn()
        for _ in range(a.runs):
            for name, fn in engines:
                times[name].append(timed(fn)[0])
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((text, first_ms, buckets, med, diff, ort_diff))
        static.close()
    lines = [f"model {a.model}, backend {a.backend}, {a.threads} thread(s), medians of {a.runs} alternating runs",
             "", "| shape | first run | buckets | dynamic ms | static ms | ORT ms | dynamic/static | dynamic/ORT | max diff |",
             "|---|---|---|---|---|---|---|---|---|"]
    ds, do = [], []
    for text, first_ms, buckets, med, diff, ort_diff in rows:
        r1 = med["dynamic"] / med["static"]
        ds.append(r1)
        r2 = med["dynamic"] / med["ort"] if "ort" in med else float("nan")
        if "ort" in med:
            do.append(r2)
        lines.append(f"| {text} | {first_ms:.1f} ms | {buckets} | {med['dynamic']:.3f} | {med['static']:.3f} | "
                     f"{med.get('ort', float('nan')):.3f} | {r1:.2f} | {r2:.2f} | {max(diff, ort_diff):.1e} |")
    # the shapes in turn, each run another shape than the last: what a switch costs (on the GPU, the
    # bucket's graph updated in place to the shape's plan) against the same shape run after run
    turns = [[] for _ in all_feeds]
    for _ in range(a.runs):
        for i, f in enumerate(all_feeds):
            turns[i].append(timed(lambda: dyn.run(f))[0])
    switch = [statistics.median(t) / row[3]["dynamic"] for t, row in zip(turns, rows)]
    lines += ["", f"dynamic/static: geomean {geomean(ds):.2f}, worst {max(ds):.2f}"]
    lines.append(f"dynamic with the shapes in turn (each run another shape) / dynamic at one shape: geomean "
                 f"{geomean(switch):.2f}, worst {max(switch):.2f} (" +
                 ", ".join(f"{row[0]} {statistics.median(t):.3f} ms" for t, row in zip(turns, rows)) + ")")
    if do:
        lines.append(f"dynamic/ORT: geomean {geomean(do):.2f}, worst {max(do):.2f}")
    if a.backend == "cuda" and a.lathe:  # the kernels alone: device time of the replayed plans
        lines += ["", "device time (`lathe run --bench`: CUDA events around the replayed steps, copies and the host "
                      "side excluded):", "", "| shape | dynamic ms | static ms | dynamic/static |", "|---|---|---|---|"]
        dr = []
        for text, feeds in zip(shapes.split(","), all_feeds):
            dims, _ = parse_shape(a.model, text)
            dd, st = device_ms(a.lathe, path, feeds, a.runs), device_ms(a.lathe, path, feeds, a.runs, dims)
            dr.append(dd / st)
            lines.append(f"| {text} | {dd:.4f} | {st:.4f} | {dd / st:.2f} |")
        lines += ["", f"device time dynamic/static: geomean {geomean(dr):.2f}, worst {max(dr):.2f}"]
    lines += ["", "report of the dynamic model:", "", "```", dyn.report.strip(), "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    if bad:
        print("MISMATCH: dynamic outputs differ from static or onnxruntime", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
