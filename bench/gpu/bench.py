#!/usr/bin/env python3
"""bench.py — lathe's CUDA kernels and PyTorch side by side on the same GPU, in one run.

Runs bench_kernels (the C driver: copy bandwidth, the elementwise chain, row sum, softmax, LayerNorm,
RMSNorm at 32768 x 4096 in fp32/fp16/bf16 -- each row op twice: the hand-written prelude kernel and the
kernel the compiler emits for the ONNX op (variant "emitted ..."), GEMM fp16/bf16 at 4096^3 and 8192^3
against cuBLAS) with --json, then, if PyTorch with CUDA is importable, times the same operations with PyTorch
eager and torch.compile (CUDA-event medians, the same shapes and dtypes), and prints one table:
GB/s and % of the copy bandwidth lathe measured, or TFLOP/s for GEMM, and the ratio lathe/PyTorch.
Without PyTorch the table says "torch: not installed" (the GPU machine may have no internet: nothing
is installed here). Needs only the Python standard library (numpy is not used).

Usage: bench.py --bin PATH/bench_kernels [--rows 32768 --cols 4096 --reps 20 --gemm-sizes 4096,8192]
                [--json-out FILE] [--summary FILE] [--no-torch] [--no-compile]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run_lathe(args):
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    cmd = [args.bin, "--rows", str(args.rows), "--cols", str(args.cols), "--reps", str(args.reps),
           "--gemm-sizes", args.gemm_sizes, "--json", path]
    print("$ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    rows = []
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    finally:
        os.unlink(path)
    return rc, rows


def torch_side(args):
    """{(name, dtype[, size]): {"eager": value, "compile": value}} in GB/s (TFLOP/s for gemm), or a reason."""
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return None, "torch: not installed (%s)" % type(e).__name__
    import torch
    if not torch.cuda.is_available():
        return None, "torch %s: no CUDA device visible" % torch.__version__
    import torch.nn.functional as F
    dev = torch.device("cuda")
    res = {}
    note = "torch %s" % torch.__version__

    def med_ms(fn, n):
        for _ in range(3):
            fn()
        ts = []
        for _ in range(n):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        ts.sort()
        return ts[len(ts) // 2]

    compile_ok = not args.no_compile and hasattr(torch, "compile")
    compile_note = ""
    R, C = args.rows, args.cols
    x32 = torch.randn(R, C, device=dev) * 3
    y32 = torch.empty_like(x32)
    ms = med_ms(lambda: y32.copy_(x32), args.reps)
    res[("copy", "-")] = {"eager": 2 * x32.numel() * 4 / (ms * 1e-3) / 1e9}
    del y32
    eps = 1e-5
    dts = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    for dname, dt in dts.items():
        x = x32.to(dt)
        g = torch.randn(C, device=dev, dtype=dt)
        b = torch.randn(C, device=dev, dtype=dt)
        es = x.element_size()
        n = x.numel()

        def rms(t, g=g):
            if hasattr(F, "rms_norm"):
                return F.rms_norm(t, (C,), g, eps)
            return t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + eps).to(t.dtype) * g

        ops = {
            "ew_chain": (lambda t: torch.relu(t * 1.5 + 0.25) * t, 2 * n * es),
            "rowsum": (lambda t: t.sum(-1), n * es + R * es),
            "softmax": (lambda t: torch.softmax(t, -1), 2 * n * es),
            "layernorm": (lambda t, g=g, b=b: F.layer_norm(t, (C,), g, b, eps), 2 * n * es),
            "rmsnorm": (rms, 2 * n * es),
        }
        for name, (fn, nbytes) in ops.items():
            entry = {}
            with torch.no_grad():
                ms = med_ms(lambda fn=fn: fn(x), args.reps)
                entry["eager"] = nbytes / (ms * 1e-3) / 1e9
                if compile_ok:
                    try:
                        cf = torch.compile(fn)
                        ms = med_ms(lambda cf=cf: cf(x), args.reps)
                        entry["compile"] = nbytes / (ms * 1e-3) / 1e9
                    except Exception as e:  # noqa: BLE001
                        compile_ok = False
                        compile_note = "torch.compile failed: %s" % str(e).splitlines()[0][:120]
            res[(name, dname)] = entry
        del x
    del x32
    torch.cuda.empty_cache()
    for size in [int(s) for s in args.gemm_sizes.split(",") if s]:
        for dname in ("float16", "bfloat16"):
            a = torch.randn(size, size, device=dev, dtype=dts[dname])
            bm = torch.randn(size, size, device=dev, dtype=dts[dname])
            ms = med_ms(lambda: torch.matmul(a, bm), min(args.reps, 10) if size >= 8192 else args.reps)
            res[("gemm", dname, size)] = {"eager": 2 * size ** 3 / (ms * 1e-3) / 1e12}
            del a, bm
    if compile_note:
        note += "; " + compile_note
    elif not compile_ok:
        note += "; torch.compile not run"
    return res, note


def fmt(v, unit=""):
    return "-" if v is None else ("%.0f%s" % (v, unit) if v >= 100 else "%.1f%s" % (v, unit))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=32768)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--gemm-sizes", default="4096,8192")
    ap.add_argument("--json-out")
    ap.add_argument("--summary", help="append the summary lines (for tests/gpu/run.sh)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()

    rc, rows = run_lathe(args)
    if rc != 0 and not rows:
        print("bench.py: bench_kernels exited %d" % rc)
        return rc
    torch_res, torch_note = (None, "torch: skipped (--no-torch)") if args.no_torch else torch_side(args)

    copy = next((r["gbps"] for r in rows if r.get("kind") == "bw" and r["name"] == "copy"), None)
    lines = []
    lines.append("bench/gpu: lathe vs PyTorch, %d x %d, CUDA-event medians; %% = of lathe's copy bandwidth (%s GB/s); %s"
                 % (args.rows, args.cols, fmt(copy), torch_note))
    hdr = "%-10s %-9s %-20s %14s %14s %14s %8s %8s" % ("op", "dtype", "lathe kernel", "lathe", "torch eager",
                                                       "torch.compile", "vs eager", "vs comp.")
    lines.append(hdr)
    bars = []
    for r in rows:
        if r.get("kind") != "bw":
            continue
        key = (r["name"], r["dtype"])
        t = (torch_res or {}).get(key, {})
        e, c = t.get("eager"), t.get("compile")
        pct = lambda v: "%s (%s%%)" % (fmt(v), fmt(100 * v / copy)) if v is not None and copy else "-"  # noqa: E731
        lines.append("%-10s %-9s %-20s %14s %14s %14s %8s %8s" % (
            r["name"], r["dtype"], r["variant"][:20], pct(r["gbps"]), pct(e), pct(c),
            "%.2fx" % (r["gbps"] / e) if e else "-", "%.2fx" % (r["gbps"] / c) if c else "-"))
        if r["name"] != "copy":
            bars.append(r["pct_copy"] >= 85.0)
    gemm_rows = [r for r in rows if r.get("kind") == "gemm"]
    if gemm_rows:
        lines.append("%-10s %-9s %-20s %14s %14s %14s %8s %8s" % ("gemm", "dtype", "lathe kernel", "lathe TF/s",
                                                                 "torch eager", "cuBLAS", "vs eager", "vs cuBLAS"))
    for r in gemm_rows:
        t = (torch_res or {}).get(("gemm", r["dtype"], r["size"]), {})
        e = t.get("eager")
        cub = r.get("cublas_tflops") or 0
        lines.append("%-10s %-9s %-20s %14s %14s %14s %8s %8s" % (
            "%d^3" % r["size"], r["dtype"], r["variant"][:20], fmt(r["tflops"]), fmt(e), fmt(cub) if cub else "-",
            "%.2fx" % (r["tflops"] / e) if e else "-", "%.0f%%" % (100 * r["tflops"] / cub) if cub else "-"))
        if r.get("best_variant") and r["best_variant"] != r["variant"]:
            lines.append("%-10s %-9s %-20s %14s   (best configuration)" % ("", "", r["best_variant"][:20],
                                                                          fmt(r["best_tflops"])))
        if r.get("max_rel_diff_vs_cublas", -1) >= 0:
            lines[-1] += "  max rel diff vs cuBLAS %.2g" % r["max_rel_diff_vs_cublas"]
        if cub:
            bars.append(r["tflops"] >= 0.5 * cub)
    lines.append("bars met (bandwidth >= 85%% of copy, GEMM >= 50%% of cuBLAS): %d of %d" % (sum(bars), len(bars)))
    emitted = [r for r in rows if r.get("kind") == "bw" and r["variant"].startswith("emitted")]
    if emitted:
        lines.append("emitted kernels (what compiled models run) >= 85%% of copy: %d of %d"
                     % (sum(r["pct_copy"] >= 85.0 for r in emitted), len(emitted)))
    print()
    print("\n".join(lines))
    if args.summary:
        with open(args.summary, "a") as f:
            f.write("\n".join(lines) + "\n")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"lathe": rows, "torch": {"|".join(map(str, k)): v for k, v in (torch_res or {}).items()},
                       "torch_note": torch_note}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
