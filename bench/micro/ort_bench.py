#!/usr/bin/env python3
"""ort_bench.py — onnxruntime on the micro-benchmark's cases, as one-node models (the peer a user
would pick instead of lathe's prelude kernels).

Reads the case table from `gemm_bench -l` (one source of truth), builds each case as an ONNX model
in memory — MatMul + Add(bias) with the weight as an initializer (ORT fuses it to Gemm and
pre-packs the weight), batched MatMul of two inputs (attention), Conv with weight and bias
initializers — and prints TSV lines like gemm_bench's (see the columns below). Inputs and outputs are bound once (IOBinding), so the timing is the kernel plus ORT's
per-run dispatch. Each case is timed at graph optimization level ALL (NCHWc convolution kernels)
and EXTENDED (im2col + SGEMM); the faster one is reported.

Given gemm_bench built as a shared library (-DLT_BENCH_LIBRARY), lathe's kernels run through
ctypes in the same process, in turns with ORT's (ORT-ALL, ORT-EXTENDED, lathe, ORT-ALL, ...), so
a machine shared with other work slows all of them alike; each line then adds lathe's median ms
and GFLOP/s; `peak` lines give the FMA peak measured in the same process. Columns: case, threads,
ORT median ms, ORT GFLOP/s at the median, ORT GFLOP/s of the best run[, the same three for lathe].

A second library (--base, e.g. built from an older version of the prelude headers) is timed in
the same turns and adds three more columns: before/after ratios from one process.

Clock (--clock): `cpu` (the default for 1 thread) times the calling thread's CPU time, which on a
machine shared with other work leaves out the time the thread sat descheduled; `wall` is
wall-clock time (always used for more than one thread, whose helpers run on other threads).

Usage: ort_bench.py GEMM_BENCH_BINARY [GEMM_BENCH_LIBRARY] [--base LIBRARY] [-t 1,2] [-r REPS]
                    [-f SUBSTRING] [--clock cpu|wall]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def model_for(c):
    rng = np.random.default_rng(0)
    f = lambda *shape: (rng.random(shape, dtype=np.float32) - 0.5)
    if c["kind"] == 0:
        M, N, K = c["M"], c["N"], c["K"]
        inits = [numpy_helper.from_array(f(K, N), "W"), numpy_helper.from_array(f(N), "bias")]
        nodes = [helper.make_node("MatMul", ["A", "W"], ["T"]), helper.make_node("Add", ["T", "bias"], ["Y"])]
        ins = {"A": f(M, K)}
        outs = [("Y", [M, N])]
    elif c["kind"] == 2:
        b, M, N, K = c["batch"], c["M"], c["N"], c["K"]
        inits = []
        nodes = [helper.make_node("MatMul", ["A", "B"], ["Y"])]
        ins = {"A": f(b, M, K), "B": f(b, K, N)}
        outs = [("Y", [b, M, N])]
    else:
        C, H, W, OC, KH, KW, S, P, G = (c[k] for k in ("C", "H", "W", "OC", "KH", "KW", "S", "P", "G"))
        OH, OW = (H + 2 * P - KH) // S + 1, (W + 2 * P - KW) // S + 1
        inits = [numpy_helper.from_array(f(OC, C // G, KH, KW), "W"), numpy_helper.from_array(f(OC), "bias")]
        nodes = [helper.make_node("Conv", ["X", "W", "bias"], ["Y"], kernel_shape=[KH, KW], strides=[S, S],
                                  pads=[P, P, P, P], group=G)]
        ins = {"X": f(1, C, H, W)}
        outs = [("Y", [1, OC, OH, OW])]
    g = helper.make_graph(nodes, c["name"],
                          [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in ins.items()],
                          [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString(), ins, outs


def ort_session(c, threads, level):
    blob, ins, outs = model_for(c)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
    io = sess.io_binding()
    keep = [sess, io, ins]  # the bound arrays must outlive the binding
    for k, v in ins.items():
        io.bind_cpu_input(k, v)
    for k, shape in outs:
        arr = np.empty(shape, np.float32)
        val = ort.OrtValue.ortvalue_from_numpy(arr)
        keep += [arr, val]
        io.bind_ortvalue_output(k, val)
    return lambda: (keep, sess.run_with_iobinding(io))


def interleaved(fns, reps, clock=time.perf_counter, min_s=0.3, max_reps=400):
    """(median, best) seconds of each callable, run in turns whose order rotates every round
    (a b c, b c a, c a b, ...): on a machine shared with other work a time slice that ends mid-run
    then hits every callable alike. At least reps rounds and min_s seconds. clock: wall time, or
    time.thread_time (the calling thread's CPU time: with one thread both ORT and lathe compute on
    the calling thread, and time spent descheduled by other work on the machine is not counted)."""
    for f in fns:
        f()  # warm-up
    ts = [[] for _ in fns]
    start = time.perf_counter()
    rnd = 0
    while len(ts[0]) < reps or (time.perf_counter() - start < min_s and len(ts[0]) < max_reps):
        for j in range(len(fns)):
            i = (j + rnd) % len(fns)
            t0 = clock()
            fns[i]()
            ts[i].append(clock() - t0)
        rnd += 1
    return [(sorted(t)[len(t) // 2], min(t)) for t in ts]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", help="the gemm_bench binary (for the case table)")
    ap.add_argument("lib", nargs="?", help="gemm_bench built as a shared library: time lathe run for run with ORT")
    ap.add_argument("-t", default="1,2")
    ap.add_argument("-r", type=int, default=20)
    ap.add_argument("-f", default=None)
    ap.add_argument("--base", default=None, help="a second gemm_bench library, timed in the same turns")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    a = ap.parse_args()
    keys = ["name", "kind", "M", "N", "K", "batch", "transb", "C", "H", "W", "OC", "KH", "KW", "S", "P", "G", "flops"]
    cases = []
    out = subprocess.run([a.bench, "-l"], check=True, capture_output=True, text=True).stdout.splitlines()
    for idx, line in enumerate(out):
        v = line.split()
        c = dict(zip(keys, [v[0]] + [int(x) for x in v[1:-1]] + [float(v[-1])]))
        c["index"] = idx
        if a.f is None or a.f in c["name"]:
            cases.append(c)
    def load(path):
        l = ctypes.CDLL(os.path.abspath(path))
        l.lt_bench_prepare.restype = ctypes.c_void_p
        l.lt_bench_prepare.argtypes = [ctypes.c_int, ctypes.c_int]
        l.lt_bench_run.argtypes = [ctypes.c_void_p]
        l.lt_bench_free.argtypes = [ctypes.c_void_p]
        l.lt_bench_peak.restype = ctypes.c_double
        l.lt_bench_peak.argtypes = [ctypes.c_int]
        return l
    lib = load(a.lib) if a.lib else None
    base = load(a.base) if a.base and lib else None
    print(f"# onnxruntime {ort.__version__}" + (", lathe timed in turns in the same process" if lib else "") +
          (", with a baseline library" if base else "") + f", clock {a.clock} for 1 thread, wall otherwise")
    threads = [int(x) for x in a.t.split(",")]
    if lib:
        for th in threads:
            print(f"peak\t{th}\t0\t{lib.lt_bench_peak(th):.1f}", flush=True)
    levels = [ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED]
    for c in cases:
        for th in threads:
            fns = [ort_session(c, th, lv) for lv in levels]
            hs = []
            for l in (lib, base):
                if l:
                    h = l.lt_bench_prepare(c["index"], th)
                    hs.append((l, h))
                    fns.append(lambda l=l, h=h: l.lt_bench_run(h))
            clock = time.thread_time if a.clock == "cpu" and th == 1 else time.perf_counter
            res = interleaved(fns, a.r, clock)
            for l, h in hs:
                l.lt_bench_free(h)
            o = min(range(2), key=lambda i: res[i][0])  # the faster ORT level (by median)
            f = c["flops"]
            line = f"{c['name']}\t{th}\t{res[o][0] * 1e3:.4f}\t{f / res[o][0] / 1e9:.1f}\t{f / res[o][1] / 1e9:.1f}"
            for r in res[2:]:
                line += f"\t{r[0] * 1e3:.4f}\t{f / r[0] / 1e9:.1f}\t{f / r[1] / 1e9:.1f}"
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
