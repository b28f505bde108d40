#!/usr/bin/env python3
"""idioms_cuda.py — what real exported models hit, on `--backend cuda` against the interpreter, for
tests/gpu/run.sh (a script: the GPU machine may lack pytest).

- Softmax and LayerNormalization over vocabulary-wide rows (32000, 50257 columns; float32 and
  float16), which once failed to launch for want of registers;
- the MatMul forms of tests/test_exporter_idioms.py whose batch dims fold into one GEMM's rows
  (sequence-first Linear, batched with a 2-D weight), with their epilogues;
- a Conv with one output channel and a bias, GatherND with constant indices;
- hardswish and SiLU fused into a conv, depthwise conv or Gemm epilogue; a 1x1 conv of 1x1 images
  (the skinny GEMM tile) with hardswish or a residual; a scale after the activation (a kernel of
  its own) and scales folded into the next product's weights; MatMuls of at most 8 rows (skinny) or 8
  columns (tall) with a bias or a residual;
- NonZero and Compress of computed conditions (one block of threads, the input in tiles): flat, along
  the first axis and along a middle one, one to several tiles.
Inputs are seeded uniform(-1, 1); tolerance |cuda - interp| <= rtol * |interp| + atol * RMS with
(rtol, atol) = (1e-4, 1e-4) for float32 and (1e-2, 1e-2) for float16 (both sides round to half).

usage: idioms_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a case fails)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import test_exporter_idioms as ti  # noqa: E402  (the CPU test's model builders)


def wide_rows(d):
    cases = []
    for op, dt, rows, cols in [("Softmax", T.FLOAT, 512, 32000), ("Softmax", T.FLOAT16, 64, 50257),
                               ("LayerNormalization", T.FLOAT16, 64, 50257), ("LayerNormalization", T.FLOAT, 16, 32000)]:
        npdt = np.float16 if dt == T.FLOAT16 else np.float32
        inits, ins = [], ["x"]
        if op == "LayerNormalization":
            inits = [numpy_helper.from_array(np.ones(cols, npdt), "g"), numpy_helper.from_array(np.zeros(cols, npdt), "b")]
            ins += ["g", "b"]
        g = helper.make_graph([helper.make_node(op, ins, ["y"], axis=-1)], "g",
                              [helper.make_tensor_value_info("x", dt, [rows, cols])],
                              [helper.make_tensor_value_info("y", dt, [rows, cols])], inits)
        path = os.path.join(d, f"{op}_{cols}_{npdt.__name__}.onnx")
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, path)
        cases.append((os.path.basename(path)[:-5], path))
    return cases


def idiom_models(d):
    from pathlib import Path
    p = Path(d)
    cases = []
    for k, (sa, sb) in enumerate(ti.MATMULS):
        for epi in ("none", "bias_gelu", "row_bias", "residual"):
            path, _ = ti.matmul_model(p / f"mm{k}_{epi}.onnx", sa, sb, epi)
            cases.append((f"matmul {sa}x{sb} {epi}", path))
    big, _ = ti.matmul_model(p / "vit_proj.onnx", [197, 1, 768], [768, 2304], "bias")
    cases.append(("matmul [197,1,768]x[768,2304] bias", big))
    conv = ti.save(p / "conv1.onnx", [helper.make_node("Conv", ["x", "w", "b"], ["y"])], [ti.vi("x", [2, 3, 9, 9])],
                   [ti.vi("y", [2, 1, 7, 7])], [ti.w("w", [1, 3, 3, 3]), ti.w("b", [1])])
    cases.append(("conv one channel + bias", conv))
    ind = numpy_helper.from_array(np.array([[1], [-1], [0]], np.int64), "i")
    gnd = ti.save(p / "gnd.onnx", [helper.make_node("GatherND", ["x", "i"], ["y"])], [ti.vi("x", [4, 5, 6])],
                  [ti.vi("y", [3, 5, 6])], [ind])
    cases.append(("gathernd constant indices", gnd))
    for anchor in ("conv3x3", "depthwise", "gemm"):
        for kind in ("hardswish", "silu"):
            cases.append((f"{anchor} + {kind} in the epilogue", ti.gated_model(p / f"g_{anchor}_{kind}.onnx", anchor, kind)))
    for anchor in ("conv3x3", "depthwise", "gemm"):
        cases.append((f"{anchor} + hardswish, then x 0.8", ti.scale_after_activation_model(p / f"sa_{anchor}.onnx", anchor)))
    for case in ("mul_reshape_matmul", "div_conv", "scalar_first_flatten_gemm"):
        cases.append((f"scale folded into weights: {case}", ti.scaled_product_model(p / f"sc_{case}.onnx", case)))
    for shape in ([3, 700], [2, 33, 40], [5000], [3, 4000], [70000]):  # more elements than threads; 1, 2 and 9 tiles
        nodes = [helper.make_node("Greater", ["x", "t"], ["gt"]), helper.make_node("NonZero", ["gt"], ["y"])]
        t = numpy_helper.from_array(np.array(0.6, np.float32), "t")
        path = ti.save(p / f"nz_{len(shape)}_{shape[0]}.onnx", nodes, [ti.vi("x", shape)], [ti.vi("y", None, T.INT64)], [t])
        cases.append((f"nonzero of {shape} (a block of 1024 threads)", path))
    # Compress by a computed condition: flat (no axis), along the first axis, along a middle axis (dims
    # before and after it); conditions of 1, 2 and 3 tiles of 4096 entries
    for shape, axis in (([3, 700], None), ([5000, 3], 0), ([3, 9000, 2], 1), ([2, 4100], 1), ([40], 0)):
        n_cond = int(np.prod(shape)) if axis is None else shape[axis]
        nodes = [helper.make_node("Greater", ["c", "t"], ["gt"]),
                 helper.make_node("Compress", ["x", "gt"], ["y"], **({} if axis is None else {"axis": axis}))]
        t = numpy_helper.from_array(np.array(0.4, np.float32), "t")
        path = ti.save(p / f"cp_{len(shape)}_{shape[0]}_{axis}.onnx", nodes, [ti.vi("x", shape), ti.vi("c", [n_cond])],
                       [ti.vi("y", None)], [t])
        cases.append((f"compress of {shape} axis {axis} (a block of threads)", path))
    for batch in (1, 3):
        for epi in ("bias_hardswish", "residual"):
            path = ti.pointwise_one_position_model(p / f"pw{batch}_{epi}.onnx", batch, epi)
            cases.append((f"1x1 conv of 1x1 images b{batch} {epi}", path))
    for sa, sb in (([4, 512], [512, 96]), ([2, 3, 300], [300, 40]), ([300, 64], [64, 6]), ([2, 100, 48], [48, 8])):
        for epi in ("bias", "residual"):
            path, _ = ti.matmul_model(p / f"thin_{len(cases)}.onnx", sa, sb, epi)
            cases.append((f"matmul {sa}x{sb} {epi} (skinny/tall)", path))
    return cases


def run(lathe, path, backend, d):
    out = os.path.join(d, f"{backend}.npz")
    r = subprocess.run([lathe, "run", path, "--backend", backend, "--fill", "random", "--seed", "7", "--output", out],
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    with np.load(out) as z:
        return {k: z[k] for k in z.files}, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary")
    a = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, path in wide_rows(d) + idiom_models(d):
            want, err = run(a.lathe, path, "interp", d)
            got, err2 = run(a.lathe, path, "cuda", d) if want else (None, None)
            reason = err and f"interp: {err}" or err2 and f"cuda: {err2}"
            for k in (want or {}) if not reason else ():
                w, g = want[k].astype(np.float64), got[k].astype(np.float64)
                half = want[k].dtype == np.float16
                rtol, atol = (1e-2, 1e-2) if half else (1e-4, 1e-4)
                rms = float(np.sqrt(np.mean(w * w))) or 1.0
                if g.shape != w.shape or not (np.abs(g - w) <= rtol * np.abs(w) + atol * rms).all():
                    reason = f"{k}: max |diff| {np.abs(g - w).max():.3g} (RMS {rms:.3g})"
            print(f"{name:44s} {'FAIL ' + reason if reason else 'ok'}", flush=True)
            passed += not reason
            failed += bool(reason)
    line = "%-28s %-8s %s\n" % ("exporter idioms (cuda)", "ok" if not failed else "FAILED",
                                f"{passed} passed, {failed} failed")
    print(line, end="")
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
