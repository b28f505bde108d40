#!/usr/bin/env python3
"""peak_mem.py — the peak host memory of one engine running one model, measured in a process of its
own (bench/cpu/run.py starts one per engine, so neither engine's memory is counted in the other's).

usage: peak_mem.py lathe|onnxruntime MODEL INPUTS.npz THREADS [CACHE_DIR]

Imports numpy and the engine, records the resident set size (VmHWM, /proc/self/status) as the
baseline, then creates the session (lathe: lathe.compile, a warm cache when CACHE_DIR holds the
model's module; onnxruntime: an InferenceSession with all graph optimizations), runs it three times
on the inputs and prints one line of JSON: {"baseline_mib": .., "peak_mib": .., "engine_mib": peak -
baseline}. The peak is the process's high-water resident set: load, optimize / compile and the runs.
"""
import json
import os
import sys

import numpy as np


def hwm_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def main():
    engine, model, inputs, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cache = sys.argv[5] if len(sys.argv) > 5 else None
    feeds = dict(np.load(inputs))
    if engine == "lathe":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                        "python"))
        import lathe
        base = hwm_mib()
        m = lathe.compile(model, shapes={k: v.shape for k, v in feeds.items()}, threads=threads, cache_dir=cache)
        run = lambda: m(feeds)  # noqa: E731
    else:
        import onnxruntime as ort
        base = hwm_mib()
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        run = lambda: s.run(None, feeds)  # noqa: E731
    for _ in range(3):
        run()
    peak = hwm_mib()
    print(json.dumps({"baseline_mib": round(base, 1), "peak_mib": round(peak, 1), "engine_mib": round(peak - base, 1)}))


if __name__ == "__main__":
    main()
