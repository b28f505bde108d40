"""test_profile_plot.py — `lathe profile --plot FILE.svg` and the stale-ceilings hint.

The plot: a small model (a convolution, a MatMul chain, a softmax, a transpose that moves data
without FLOPs) is profiled with --plot; the file is well-formed XML (xml.etree) with an <svg> root,
exactly one circle of class "kernel" per profiled step (the report's "N steps"), a tooltip naming
each, the ceilings drawn, a legend of the kinds, and no temporary file left beside it. A folder that
does not exist is an error naming the file (exit 2), with nothing written.

The hint: the ceilings cache is written by `lathe ceilings`, then edited. Ceilings far below what
the kernels reach (a stale file, or one measured on a busy machine) make `profile` print one "hint:"
line naming the worst kernel, when the numbers were measured and --remeasure; ceilings far above
them print no hint.
"""
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
SVG = "{http://www.w3.org/2000/svg}"


def lathe(*args):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("plot")
    rng = np.random.default_rng(3)
    f = lambda name, *shape: numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "m"], ["h"]),
             helper.make_node("Softmax", ["h"], ["p"], axis=-1),
             helper.make_node("Transpose", ["p"], ["y"], perm=[1, 0])]
    graph = helper.make_graph(
        nodes, "plot", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 64])],
        initializer=[f("w", 8, 8, 3, 3), f("b", 8), f("m", 32, 32),
                     numpy_helper.from_array(np.array([64, 32], np.int64), "shape")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(d / "plot.onnx"))
    return d


def test_plot_is_wellformed_with_one_point_per_kernel(model):
    d = model
    svg = d / "out" / "roofline.svg"
    os.makedirs(d / "out")
    r = lathe("profile", d / "plot.onnx", "--cache-dir", d / "c", "--threads", 1, "--runs", 3, "--plot", svg)
    assert r.returncode == 0, r.stderr
    steps = int(re.search(r"profile of .*?: (\d+) steps", r.stdout).group(1))
    assert f"plot: {svg}" in r.stdout
    root = ET.parse(svg).getroot()
    assert root.tag == SVG + "svg"
    points = [c for c in root.iter(SVG + "circle") if c.get("class") == "kernel"]
    assert len(points) == steps and steps >= 3, (len(points), steps)
    for c in points:
        assert float(c.get("r")) > 0 and c.find(SVG + "title").text.startswith(("lt_k", "host", "Transpose"))
    texts = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    assert "GB/s" in texts and "GFLOP/s" in texts and "arithmetic intensity" in texts and "kind (time)" in texts
    assert os.listdir(d / "out") == ["roofline.svg"]  # written atomically: no temporary left
    bad = lathe("profile", d / "plot.onnx", "--cache-dir", d / "c", "--threads", 1, "--runs", 1, "--plot",
                d / "missing" / "r.svg")
    assert bad.returncode == 2 and "r.svg" in bad.stderr, bad.stderr
    assert not (d / "missing").exists()


def set_ceilings(path, scale):
    lines = []
    for line in open(path).read().splitlines():
        k, _, v = line.partition(" = ")
        if k in ("peak_gflops", "peak_gflops_1t", "mem_gbps", "copy_gbps", "triad_gbps", "cache_gbps"):
            line = f"{k} = {float(v) * scale:.6g}"
        lines.append(line)
    open(path, "w").write("\n".join(lines) + "\n")


def test_stale_ceilings_hint(model):
    d = model
    cache = d / "c"  # the plot test's: its compiled module is reused here
    r = lathe("ceilings", "--cache-dir", cache, "--threads", 1)
    assert r.returncode == 0, r.stderr
    path = cache / "ceilings-1t.txt"
    base = path.read_text()
    set_ceilings(path, 1e-3)  # stale: a thousand times too low
    r = lathe("profile", d / "plot.onnx", "--cache-dir", cache, "--threads", 1, "--runs", 2)
    assert r.returncode == 0, r.stderr
    hints = [line for line in r.stdout.splitlines() if line.startswith("hint:")]
    assert len(hints) == 1, r.stdout
    assert "the cached ceilings (measured" in hints[0] and "--remeasure" in hints[0] and "lt_k" in hints[0], hints[0]
    path.write_text(base)
    set_ceilings(path, 1e3)  # far above anything measured: no hint
    r = lathe("profile", d / "plot.onnx", "--cache-dir", cache, "--threads", 1, "--runs", 2)
    path.write_text(base)
    assert r.returncode == 0, r.stderr
    assert "hint:" not in r.stdout, r.stdout
