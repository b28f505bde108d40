#!/usr/bin/env python3
"""bench_models.py — whole models on the GPU: lathe against PyTorch eager and torch.compile, one run.

Models (the GPU goals' set): ResNet-50 (torchvision architecture, random weights) at batch 1 and 32 in
fp32 and fp16, and the BERT-base encoder (transformers BertModel, BertConfig() defaults, eager
attention, random weights) at sequence 128, batch 1 and 8 in fp32, and batch 8 in fp16 (where the
GEMMs run on tensor cores). Each is built in PyTorch, exported
once to ONNX (torch.onnx.export, TorchScript exporter, opset 17; fp16 models are exported after
.half()), so both sides run the SAME weights and graph.
  - PyTorch: eager and torch.compile (default mode), under torch.inference_mode(), inputs already on
    the GPU; `warmup` runs, then `reps` runs each timed with CUDA events; the median is reported.
  - lathe: `lathe run MODEL --backend cuda --bench reps --input ...` (the compiled plan, replayed as a
    CUDA graph); the device median (CUDA events around the steps, input/output copies excluded) is the
    number compared; the wall median (copies included) is printed beside it. Compile time is the
    first `lathe run`'s (a cold cubin cache unless LATHE_CUDA_CACHE holds it).
  - Outputs: lathe's outputs (--output .npz) against PyTorch eager's: max |diff| / RMS.
  - --baseline LATHE: a second lathe CLI (a build of an earlier commit) run the same way on the same
    model and inputs, for before/after numbers in one run: printed as "base ms" and lathe / base.
Prints one table (ms, lathe/eager, lathe/compile; <1 means lathe is faster) and appends summary rows
to --summary (tests/gpu/run.sh). Models that fail on either side are reported, never fatal.

Usage: bench_models.py --lathe build-gpu/lathe [--models resnet50_b1_fp32,...] [--reps 30]
                       [--warmup 5] [--workdir DIR] [--no-compile] [--summary FILE] [--baseline LATHE]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ALL = ["resnet50_b1_fp32", "resnet50_b32_fp32", "resnet50_b1_fp16", "resnet50_b32_fp16",
       "bert_b1_fp32", "bert_b8_fp32", "bert_b8_fp16"]


def parse_name(name):
    m = re.fullmatch(r"(resnet50|bert)_b(\d+)_(fp32|fp16)", name)
    if not m:
        raise SystemExit("bench_models.py: unknown model '%s' (known: %s)" % (name, ", ".join(ALL)))
    return m.group(1), int(m.group(2)), m.group(3)


def build_torch(arch, batch, dtype, torch):
    """(module on cuda, eval), list of input tensors on cuda, input names, output names."""
    torch.manual_seed(0)
    if arch == "resnet50":
        import torchvision
        model = torchvision.models.resnet50(weights=None)
        x = torch.rand(batch, 3, 224, 224)
        inputs, in_names, out_names = [x], ["data"], ["logits"]
    else:
        import transformers
        cfg = transformers.BertConfig()
        cfg.attn_implementation = "eager"
        try:
            model = transformers.BertModel(cfg, add_pooling_layer=False)
        except TypeError:
            model = transformers.BertModel(cfg)
        model.config._attn_implementation = "eager"
        ids = torch.randint(0, cfg.vocab_size, (batch, 128), dtype=torch.int64)
        mask = torch.ones(batch, 128, dtype=torch.int64)
        inputs, in_names, out_names = [ids, mask], ["input_ids", "attention_mask"], ["hidden"]

        class Encoder(torch.nn.Module):  # the last hidden state only: one output on both sides
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, ids, mask):
                return self.m(input_ids=ids, attention_mask=mask).last_hidden_state
        model = Encoder(model)
    model.eval()
    if dtype == "fp16":
        model = model.half()
        inputs = [t.half() if t.is_floating_point() else t for t in inputs]
    return model, inputs, in_names, out_names


def export(model, inputs, in_names, out_names, path, torch):
    if os.path.exists(path):
        return
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs), tmp, input_names=in_names, output_names=out_names,
                          opset_version=17, dynamo=False)
    os.replace(tmp, path)


def time_torch(fn, inputs, warmup, reps, torch):
    with torch.inference_mode():
        for _ in range(warmup):
            out = fn(*inputs)
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            out = fn(*inputs)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
    return statistics.median(ts), out


def run_lathe(lathe, args, onnx_path, npy_inputs, out_npz):
    cmd = [lathe, "run", onnx_path, "--backend", "cuda", "--bench", str(args.reps), "--values", "0",
           "--output", out_npz]
    for name, path in npy_inputs:
        cmd += ["--input", "%s=%s" % (name, path)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    text = p.stdout + p.stderr
    if p.returncode != 0:
        last = [l for l in text.strip().splitlines() if l.strip()]
        return None, (last[-1] if last else "exit %d" % p.returncode)
    res = {"total_s": wall}
    m = re.search(r"bench: median ([0-9.]+) ms", text)
    if m:
        res["wall_ms"] = float(m.group(1))
    m = re.search(r"bench: device median ([0-9.]+) ms", text)
    if m:
        res["device_ms"] = float(m.group(1))
    m = re.search(r"compile ([0-9.]+) s", text)
    if m:
        res["compile_s"] = float(m.group(1))
    if "device_ms" not in res and "wall_ms" not in res:
        return None, "no bench line in lathe's output"
    return res, None


def rel_err(a, b, np):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    rms = float(np.sqrt(np.mean(b * b))) or 1.0
    return float(np.max(np.abs(a - b))) / rms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lathe", required=True, help="the lathe CLI built with the CUDA backend")
    ap.add_argument("--models", default=",".join(ALL))
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "lathe_bench_models"))
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--summary", help="append summary rows to this file")
    ap.add_argument("--baseline", help="another lathe CLI (an earlier build) timed the same way: 'base ms'")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    for m in models:
        parse_name(m)
    try:
        import numpy as np
        import torch
    except Exception as e:  # noqa: BLE001
        print("bench_models.py: needs numpy and torch (%s)" % e)
        return 0
    if not torch.cuda.is_available():
        print("bench_models.py: torch sees no CUDA device")
        return 0
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    for name in models:
        arch, batch, dtype = parse_name(name)
        print("== %s" % name, flush=True)
        row = {"name": name}
        try:
            model, inputs, in_names, out_names = build_torch(arch, batch, dtype, torch)
            onnx_path = os.path.join(args.workdir, name + ".onnx")
            export(model, inputs, in_names, out_names, onnx_path, torch)
            npy = []
            for n, t in zip(in_names, inputs):
                p = os.path.join(args.workdir, "%s.%s.npy" % (name, n))
                np.save(p, t.numpy())
                npy.append((n, p))
            model = model.cuda()
            dev_inputs = [t.cuda() for t in inputs]
            row["eager"], ref = time_torch(model, dev_inputs, args.warmup, args.reps, torch)
            ref = ref.float().cpu().numpy()
            if not args.no_compile:
                try:
                    cm = torch.compile(model)
                    t0 = time.time()
                    with torch.inference_mode():
                        cm(*dev_inputs)
                    torch.cuda.synchronize()
                    row["compile_build_s"] = time.time() - t0
                    row["compile"], _ = time_torch(cm, dev_inputs, args.warmup, args.reps, torch)
                except Exception as e:  # noqa: BLE001
                    row["compile_err"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:80] if str(e) else "")
            del model
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001
            row["err"] = "torch side: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:100] if str(e) else "")
            print(row["err"], flush=True)
            rows.append(row)
            continue
        out_npz = os.path.join(args.workdir, name + ".lathe.npz")
        if args.baseline:
            res, err = run_lathe(args.baseline, args, onnx_path, npy, out_npz)
            if res:
                row["base_ms"] = res.get("device_ms", res.get("wall_ms"))
            else:
                row["base_err"] = err
        res, err = run_lathe(args.lathe, args, onnx_path, npy, out_npz)
        if err:
            row["err"] = "lathe: " + err
        else:
            row.update({"lathe_" + k: v for k, v in res.items()})
            try:
                got = np.load(out_npz)
                row["err_rel"] = rel_err(got[got.files[0]], ref, np)
            except Exception as e:  # noqa: BLE001
                row["err_rel_note"] = str(e)[:60]
        print(row, flush=True)
        rows.append(row)

    def f(v, fmt="%.3f"):
        return fmt % v if isinstance(v, (int, float)) else "-"
    base = " %10s %7s" % ("base ms", "l/base") if args.baseline else ""
    hdr = "%-18s %10s %10s %10s %10s %9s %9s %10s %9s" % ("model", "eager ms", "compile ms", "lathe ms",
                                                          "wall ms", "l/eager", "l/compile", "max|d|/rms",
                                                          "lathe cc s") + base
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        if "err" in r and "lathe_device_ms" not in r and "lathe_wall_ms" not in r:
            lines.append("%-18s %s" % (r["name"], r["err"]))
            continue
        lat = r.get("lathe_device_ms", r.get("lathe_wall_ms"))
        le = lat / r["eager"] if lat and r.get("eager") else None
        lc = lat / r["compile"] if lat and r.get("compile") else None
        lb = lat / r["base_ms"] if lat and r.get("base_ms") else None
        lines.append("%-18s %10s %10s %10s %10s %9s %9s %10s %9s" % (
            r["name"], f(r.get("eager")), f(r.get("compile")), f(lat), f(r.get("lathe_wall_ms")),
            f(le, "%.2f"), f(lc, "%.2f"), f(r.get("err_rel"), "%.1e"), f(r.get("lathe_compile_s"), "%.1f")) +
            (" %10s %7s" % (f(r.get("base_ms")), f(lb, "%.2f")) if args.baseline else ""))
        if "compile_err" in r:
            lines.append("%-18s torch.compile failed: %s" % ("", r["compile_err"]))
        if "base_err" in r:
            lines.append("%-18s baseline failed: %s" % ("", r["base_err"]))
    print("\n".join(lines))
    if args.summary:
        with open(args.summary, "a") as fh:
            for r in rows:
                lat = r.get("lathe_device_ms", r.get("lathe_wall_ms"))
                if lat is None:
                    fh.write("%-28s %-8s %s\n" % ("model " + r["name"], "FAILED", r.get("err", "?")[:90]))
                    continue
                fh.write("%-28s %-8s lathe %.3f ms, eager %s, compile %s (lathe/eager %s, /compile %s)%s\n" % (
                    "model " + r["name"], "ran", lat, f(r.get("eager")), f(r.get("compile")),
                    f(lat / r["eager"] if r.get("eager") else None, "%.2f"),
                    f(lat / r["compile"] if r.get("compile") else None, "%.2f"),
                    ", baseline %s ms" % f(r.get("base_ms")) if args.baseline else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
