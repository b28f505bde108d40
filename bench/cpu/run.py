#!/usr/bin/env python3
"""run.py — lathe against onnxruntime on the CPU, side by side, on the benchmark model set.

usage: bench/cpu/run.py [--models a,b,...] [--zoo ci|full] [--threads 1,2] [--runs 10] [--warmup 3] [--md FILE]
                        [--block 5] [--pause-ms 200] [--no-settle]
                        [--cache-dir DIR] [--ort-opt all|disable] [--no-memory]

For every model (default: resnet50, mobilenetv2, bert_base, gpt2_small and light_resnet50, built by
bench/models/build.py on first use; "zoo:TAG" or "zoo:TAG@full" names an exported zoo snapshot, and
--zoo ci|full adds every one of that configuration) and every thread count T (default 1 and 2):
  - lathe: lathe.compile(model, threads=T) through the Python package (python/lathe over liblathe.so);
    compile time is measured once per model, cold (an empty cache folder) and warm (the same compile
    again: a cache hit);
  - onnxruntime: an InferenceSession with intra_op_num_threads=T, inter_op_num_threads=1, sequential
    execution, all graph optimizations (what a user gets by default);
  - both run on the same inputs (bench/models/zoo.make_inputs), `warmup` untimed runs each, then
    the engines take turns until each has `runs` timed runs: a turn is a pause (--pause-ms), one
    untimed run, then `block` timed runs of one engine. Turns, so load from other processes on the
    machine hits both alike; the pause, because an engine's idle pool threads keep spinning after
    its last run and take the cores from whatever runs next: onnxruntime's spin for tens of ms,
    lathe's sleep at once. Measured on the 2-vCPU machine (MobileNetV2, 2 threads): lathe's first
    runs after five onnxruntime runs took 13.7, 12.3, 12.4, 10.5, 9.1 ms, then 7.0-7.3; after a
    100 ms pause 7.9-8.4 from the first. Strict alternation (--block 1 --pause-ms 0 --no-settle)
    charges onnxruntime's spinning to lathe. The medians are reported;
  - lathe's outputs are checked against onnxruntime's (max |diff| / RMS; "MISMATCH" above 1e-3);
  - peak host memory (unless --no-memory): each engine runs the model again in a process of its own
    (bench/cpu/peak_mem.py: session or compile from the warm cache, three runs, the first thread
    count), which reports its high-water resident set above the baseline of an interpreter that
    imported numpy and the engine.
Prints a markdown table (model, threads, ORT ms, lathe ms, lathe/ORT, compile cold/warm, peak memory
of each engine) with the geometric mean of the ratios per thread count, and writes it to --md (default bench/cpu/results.md)
for docs/PERF.md. The library is found as lathe/_capi.py says (LATHE_LIBRARY, or build/liblathe.so).
Exit status 0 even when lathe is slower (this is a benchmark, not a test); 1 when a model fails.
"""
import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import exported  # noqa: E402
import zoo  # noqa: E402

DEFAULT_MODELS = ["resnet50", "mobilenetv2", "bert_base", "gpt2_small", "light_resnet50"]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ort_session(path, threads, opt):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if opt == "all"
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def max_err(got, want):
    worst = 0.0
    for k, w in want.items():
        g = got[k]
        rms = float(np.sqrt(np.mean(np.square(w, dtype=np.float64)))) or 1.0
        worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w))) / rms)
    return worst


def timed_turns(engines, runs, block, pause_ms, settle):
    """Time each engine (a callable) `runs` times, in turns of `block` timed runs, each turn after a
    pause of pause_ms and one untimed settling run when `settle`; the times in ms, per engine."""
    times = [[] for _ in engines]
    while len(times[0]) < runs:
        for fn, ts in zip(engines, times):
            time.sleep(pause_ms / 1e3)
            if settle:
                fn()
            for _ in range(min(block, runs - len(ts))):
                a = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - a) * 1e3)
    return times


def exported_names(config):
    """The exported zoo (bench/models/exported.py) as benchmark names: "zoo:TAG" for every snapshot of
    the configuration ("ci" or "full"), and for "full" also "zoo:TAG@full" for the CNNs whose one
    graph is benchmarked at 224 x 224."""
    names = []
    for tag, e in sorted(exported.SNAPSHOTS.items()):
        if e.get("derived_from"):  # the float16 / int8 variants: CI size only
            if config == "ci":
                names.append(f"zoo:{tag}")
        elif config == "full" and e.get("image_sizes"):
            names.append(f"zoo:{tag}@full")
        elif tag.endswith(f"_{config}") or f"_{config}." in tag:
            names.append(f"zoo:{tag}")
    return names


def model_and_inputs(name):
    """(model path, {input: array}) of a benchmark name: the built models of bench/models/zoo.py, or
    "zoo:TAG[@full]", an exported snapshot (bench/models/exported.py)."""
    if name.startswith("zoo:"):
        tag, _, size = name[4:].partition("@")
        path = exported.build(tag, size or None)
        return path, exported.make_inputs(tag, seed=0, path=path)
    return zoo.ensure_built(name), zoo.make_inputs(name, seed=0)


def peak_memory(engine, path, feeds, threads, cache):
    """MiB of peak resident memory engine adds to a process running the model (peak_mem.py)."""
    import json
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "in.npz"), **feeds)
        args = [sys.executable, os.path.join(HERE, "peak_mem.py"), engine, path, os.path.join(d, "in.npz"),
                str(threads)] + ([cache] if cache else [])
        r = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"peak_mem.py {engine}: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["engine_mib"]


def bench_model(lathe, name, threads_list, runs, warmup, cache_root, ort_opt, log, block=5, pause_ms=200, settle=True,
                memory=True):
    path, feeds = model_and_inputs(name)
    shapes = {k: v.shape for k, v in feeds.items()}
    cache = tempfile.mkdtemp(prefix=f"{name}-", dir=cache_root)
    t0 = time.perf_counter()
    model = lathe.compile(path, shapes=shapes, threads=threads_list[0], cache_dir=cache)
    cold = time.perf_counter() - t0
    report = model.report
    model.close()
    t0 = time.perf_counter()
    model = lathe.compile(path, shapes=shapes, threads=threads_list[0], cache_dir=cache)
    warm = time.perf_counter() - t0
    log(f"{name}: compile cold {cold:.2f} s, warm {warm:.3f} s")
    for line in report.strip().split("\n"):
        log(f"  | {line}")
    rows = []
    for t in threads_list:
        if t != threads_list[0]:  # a cache hit: each thread count gets its own compile, as a user's would
            model.close()
            model = lathe.compile(path, shapes=shapes, threads=t, cache_dir=cache)
        sess = ort_session(path, t, ort_opt)
        out_names = [o.name for o in sess.get_outputs()]
        for _ in range(warmup):
            want = dict(zip(out_names, sess.run(None, feeds)))
            got = model(feeds)
        err = max_err(got, want)
        tl, to = timed_turns([lambda: model(feeds), lambda: sess.run(None, feeds)], runs, block, pause_ms, settle)
        ml, mo = statistics.median(tl), statistics.median(to)
        rows.append(dict(model=name, threads=t, ort=mo, lathe=ml, ratio=ml / mo, cold=cold, warm=warm, err=err,
                         lathe_min=min(tl), ort_min=min(to)))
        log(f"{name} T={t}: lathe {ml:.2f} ms (min {min(tl):.2f}), onnxruntime {mo:.2f} ms (min {min(to):.2f}), "
            f"ratio {ml / mo:.2f}, max |diff|/RMS {err:.1e}{'  MISMATCH' if err > 1e-3 else ''}")
        del sess
    model.close()
    if memory:
        lm, om = peak_memory("lathe", path, feeds, threads_list[0], cache), peak_memory("ort", path, feeds,
                                                                                       threads_list[0], None)
        log(f"{name}: peak memory above the baseline: lathe {lm:.1f} MiB, onnxruntime {om:.1f} MiB")
        for r in rows:
            r.update(lathe_mib=lm, ort_mib=om)
    return rows


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(rows, threads_list, header):
    out = [header, "",
           "| model | threads | onnxruntime ms | lathe ms | lathe / ORT | lathe compile cold s | warm s "
           "| max diff / RMS | peak MiB ORT | peak MiB lathe |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        mem = (f"{r['ort_mib']:.1f} | {r['lathe_mib']:.1f}" if "ort_mib" in r else "- | -")
        out.append(f"| {r['model']} | {r['threads']} | {r['ort']:.2f} | {r['lathe']:.2f} | **{r['ratio']:.2f}** | "
                   f"{r['cold']:.1f} | {r['warm']:.3f} | {r['err']:.1e}{' MISMATCH' if r['err'] > 1e-3 else ''} | "
                   f"{mem} |")
    out.append("")
    for t in threads_list:
        rs = [r["ratio"] for r in rows if r["threads"] == t]
        out.append(f"- geometric mean of lathe / ORT, {t} thread{'s' if t != 1 else ''}: **{geomean(rs):.2f}** "
                   f"({len(rs)} models)")
    out.append(f"- geometric mean over all rows: **{geomean([r['ratio'] for r in rows]):.2f}**")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated, from: {', '.join(zoo.ALL)}")
    ap.add_argument("--zoo", choices=["ci", "full"], default=None,
                    help="add every exported zoo model of that configuration (zoo:TAG names; --models '' for only them)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per engine (>= 10 for the PERF table)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--block", type=int, default=5, help="timed runs per engine per turn (1: strict alternation)")
    ap.add_argument("--pause-ms", type=float, default=200, help="pause before each turn (idle pool threads park)")
    ap.add_argument("--no-settle", action="store_true", help="no untimed run at the start of each turn")
    ap.add_argument("--md", default=os.path.join(HERE, "results.md"))
    ap.add_argument("--cache-dir", default=None, help="parent of the per-model cold caches (default: a temp dir)")
    ap.add_argument("--ort-opt", choices=["all", "disable"], default="all")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs (one process per engine)")
    a = ap.parse_args()
    names = [n for n in a.models.split(",") if n] + (exported_names(a.zoo) if a.zoo else [])
    threads_list = [int(t) for t in a.threads.split(",")]
    bad = [n for n in names if n not in zoo.ALL and not (n.startswith("zoo:") and n[4:].partition("@")[0] in
                                                        exported.SNAPSHOTS)]
    if bad:
        ap.error(f"unknown model(s) {', '.join(bad)}")
    if a.runs < 1 or a.warmup < 1 or a.block < 1 or a.pause_ms < 0 or min(threads_list) < 1:
        ap.error("--runs, --warmup, --block and --threads must be >= 1")

    # lathe's idle OpenMP threads sleep (docs/PERF.md), as the lathe tool sets it; the library leaves
    # the environment alone, so the benchmark sets it before the first module loads
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    import lathe
    import onnxruntime as ort

    def log(msg):
        print(msg, flush=True)
    try:
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    try:
        cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError:
        cc = "?"
    header = (f"CPU: {cpu_name()} ({os.cpu_count()} logical CPUs; load average at start {load}); "
              f"lathe {lathe.version()} ({cc}), onnxruntime {ort.__version__}; "
              f"median of {a.runs} runs in turns of {a.block} (each after a {a.pause_ms:g} ms pause"
              f"{'' if a.no_settle else ' and a settling run'}), "
              f"after {a.warmup} warm-up runs; "
              f"{datetime.date.today().isoformat()}.")
    log(header)
    rows, failed = [], []
    with tempfile.TemporaryDirectory(dir=a.cache_dir) as cache_root:
        for name in names:
            try:
                rows += bench_model(lathe, name, threads_list, a.runs, a.warmup, cache_root, a.ort_opt, log,
                                    a.block, a.pause_ms, not a.no_settle, not a.no_memory)
            except Exception as e:  # report every model, then fail
                log(f"{name}: FAILED: {e}")
                failed.append(name)
    md = table(rows, threads_list, header)
    if failed:
        md += f"- failed: {', '.join(failed)}\n"
    print()
    print(md)
    with open(a.md, "w") as f:
        f.write(md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
