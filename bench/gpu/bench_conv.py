#!/usr/bin/env python3
"""bench_conv.py — lathe's compiled GPU convolutions and GEMMs against PyTorch (cuDNN / cuBLAS).

Runs `test_cuda_call --bench --json` (a unit-test binary of a lathe build: ResNet-50 convolution
shapes at batch 32 with bias + ReLU fused, and GEMM 4096^3, each lowered with lt_lower_options.gpu
to one kernel calling the CUDA prelude's tile entries, timed with CUDA events, 20 launches after 3
warm-ups), then times the same operations in PyTorch on the same GPU (cudnn.benchmark on, TF32 off:
float32 stays float32 as lathe's SIMT kernels) and prints one row per shape and dtype:
    shape  dtype  lathe entry  lathe ms  TFLOP/s  torch ms  TFLOP/s  lathe / torch

Usage: python3 bench/gpu/bench_conv.py [--bin build/test_cuda_call] [--json out.json]
Without PyTorch (or without a GPU for it) the torch columns are left empty.
"""
import argparse
import json
import subprocess
import sys

SHAPES = {  # name -> (n, c, h, w, oc, k, s, p); k == 0: GEMM m = n, k = c, n = oc (same as the C side)
    "gemm 4096^3": (4096, 4096, 0, 0, 4096, 0, 0, 0),
    "bert qkv 1024x768x768": (1024, 768, 0, 0, 768, 0, 0, 0),  # lathe adds the bias (ffn1: and Gelu)
    "bert ffn1 1024x768x3072": (1024, 768, 0, 0, 3072, 0, 0, 0),
    "bert ffn2 1024x3072x768": (1024, 3072, 0, 0, 768, 0, 0, 0),
    "r50 conv1 7x7/2": (32, 3, 224, 224, 64, 7, 2, 3),
    "r50 l1 1x1 64-64": (32, 64, 56, 56, 64, 1, 1, 0),
    "r50 l1 3x3 64": (32, 64, 56, 56, 64, 3, 1, 1),
    "r50 l1 1x1 64-256": (32, 64, 56, 56, 256, 1, 1, 0),
    "r50 l2 3x3 128/2": (32, 128, 56, 56, 128, 3, 2, 1),
    "r50 l2 3x3 128": (32, 128, 28, 28, 128, 3, 1, 1),
    "r50 l3 3x3 256": (32, 256, 14, 14, 256, 3, 1, 1),
    "r50 l3 1x1 256-1024": (32, 256, 14, 14, 1024, 1, 1, 0),
    "r50 l4 3x3 512": (32, 512, 7, 7, 512, 3, 1, 1),
    "r50 l4 1x1 512-2048": (32, 512, 7, 7, 2048, 1, 1, 0),
}


def torch_ms(torch, name, dtype):
    n, c, h, w, oc, k, s, p = SHAPES[name]
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float": torch.float32}[dtype]
    dev = "cuda"
    if k == 0:
        a = torch.randn(n, c, device=dev, dtype=dt)
        b = torch.randn(c, oc, device=dev, dtype=dt)
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    else:
        x = torch.randn(n, c, h, w, device=dev, dtype=dt)
        wt = torch.randn(oc, c, k, k, device=dev, dtype=dt)
        bias = torch.randn(oc, device=dev, dtype=dt)
        fn = lambda: torch.relu(torch.nn.functional.conv2d(x, wt, bias, stride=s, padding=p))  # noqa: E731
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 20


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/test_cuda_call", help="the test_cuda_call binary of a lathe build")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    out = subprocess.run([args.bin, "--bench", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{args.bin} --bench failed ({out.returncode}):\n{out.stderr}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    try:
        import torch

        if not torch.cuda.is_available():
            torch = None
        else:
            torch.backends.cudnn.benchmark = True
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        torch = None
    print(f"{'shape':22} {'dtype':9} {'lathe entry':28} {'ms':>8} {'TFLOP/s':>8} {'torch ms':>9} {'TFLOP/s':>8} {'ratio':>6}")
    for r in rows:
        flops = r["tflops"] * r["ms"] * 1e9
        t_ms = torch_ms(torch, r["name"], r["dtype"]) if torch else None
        r["torch_ms"] = t_ms
        r["torch_tflops"] = flops / (t_ms * 1e9) if t_ms else None
        r["ratio"] = t_ms / r["ms"] if t_ms else None
        tcol = f"{t_ms:9.3f} {r['torch_tflops']:8.2f} {r['ratio']:6.2f}" if t_ms else f"{'':9} {'':8} {'':6}"
        print(f"{r['name']:22} {r['dtype']:9} {r['entry']:28} {r['ms']:8.3f} {r['tflops']:8.2f} {tcol}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
