"""test_padded_nms.py — NonMaxSuppression compiled as one kernel (NonMaxSuppressionPadded, src/lower/lower_nms.c).

The split stage (src/compile/split.h) turns a NonMaxSuppression on static boxes and scores into
NonMaxSuppressionPadded, whose kernel selects into an int64 [B * C * N, 3] buffer plus a count. Checked here,
always bit for bit against the reference interpreter (np.testing.assert_array_equal):
  - random boxes and scores over several B, C, N (N = 1, many overlapping boxes), max_output smaller and larger
    than N, negative, absent; iou and score thresholds absent; center_point_box = 1; NaN scores, equal scores
    (ties by index), zero-area boxes, corners in either order; the report shows the kernel compiled (the only
    host step left is the rest after the split);
  - max_output and the thresholds as graph inputs of several dtypes, given at run time (0, negative, above N,
    NaN thresholds);
  - float16 and float64 boxes and scores; float16 boxes computed by a Mul fused into the kernel;
  - degenerate data: identical boxes, NaN and infinite coordinates, every score NaN, and center-format boxes of
    subnormal size, where a product contracted into an add (an FMA) would select differently;
  - nodes after the split (the rest compiled at run time) see the same selection;
  - the bounds-checked Loop IR backend (`lathe run --backend loopir`) runs the kernel: the candidate heap kept in
    the output buffer stays inside it;
  - an empty max_output input (which the kernel does not take) runs on the host with the same result;
  - the kernel emitted for the GPU builds with NVRTC (no GPU needed).
The library comes from $LATHE_LIBRARY (default build/liblathe.so), the binary from $LATHE_BIN.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("LATHE_LIBRARY", os.path.join(ROOT, "build", "liblathe.so"))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper as h, numpy_helper as nh  # noqa: E402

import lathe  # noqa: E402

ONNX_TYPE = {np.float32: T.FLOAT, np.float16: T.FLOAT16, np.float64: T.DOUBLE, np.int64: T.INT64, np.int32: T.INT32}
OPTIONAL = ("max_output", "iou", "score_threshold")


def nms_model(B, C, N, mo=10, iou=0.5, sth=0.2, cpb=0, dtype=np.float32, runtime=None, after=False):
    """boxes [B, N, 4] and scores [B, C, N] (graph inputs of `dtype`) -> NonMaxSuppression -> `sel`. The optional
    inputs: None absent, a number a constant [1] (int64 / float32), or (when named in `runtime`: name -> (dtype,
    shape)) a graph input. after: nodes after the selection too (its box indices as float + 0.5: `y`)."""
    runtime = runtime or {}
    inputs = [h.make_tensor_value_info("boxes", ONNX_TYPE[dtype], [B, N, 4]),
              h.make_tensor_value_info("scores", ONNX_TYPE[dtype], [B, C, N])]
    inits, names = [], ["boxes", "scores"]
    for name, value, const_dtype in zip(OPTIONAL, (mo, iou, sth), (np.int64, np.float32, np.float32)):
        if name in runtime:
            inputs.append(h.make_tensor_value_info(name, ONNX_TYPE[runtime[name][0]], list(runtime[name][1])))
        elif value is not None:
            inits.append(nh.from_array(np.asarray(value, const_dtype).reshape(-1), name))
        else:
            name = ""
        names.append(name)
    while names[-1] == "":
        names.pop()
    nodes = [h.make_node("NonMaxSuppression", names, ["sel"], center_point_box=cpb)]
    outputs = [h.make_tensor_value_info("sel", T.INT64, None)]
    if after:
        inits += [nh.from_array(np.array(2, np.int64), "two"), nh.from_array(np.array(0.5, np.float32), "half")]
        nodes += [h.make_node("Gather", ["sel", "two"], ["bi"], axis=1), h.make_node("Cast", ["bi"], ["bf"], to=T.FLOAT),
                  h.make_node("Add", ["bf", "half"], ["y"])]
        outputs.append(h.make_tensor_value_info("y", T.FLOAT, None))
    g = h.make_graph(nodes, "nms", inputs, outputs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def random_feeds(rng, B, C, N, cpb=0, dtype=np.float32):
    """Boxes crowded into a small area (many overlaps), some of zero area, corners in either order (center
    format: some widths or heights 0 or negative); scores continuous, on a grid of eighths (ties), with NaNs
    and negatives, as the draw decides."""
    if cpb == 0:
        y1x1 = rng.uniform(0, 6, (B, N, 2))
        y2x2 = y1x1 + rng.uniform(0, 4, (B, N, 2))
        swap = rng.random((B, N, 2)) < 0.3  # corners in either order
        a, b = np.where(swap, y2x2, y1x1), np.where(swap, y1x1, y2x2)
        boxes = np.concatenate([a, b], axis=2)
        flat = rng.random((B, N)) < 0.1  # zero height
        boxes[..., 2] = np.where(flat, boxes[..., 0], boxes[..., 2])
    else:
        centers = rng.uniform(0, 6, (B, N, 2))
        sizes = rng.uniform(-0.5, 4, (B, N, 2))
        sizes[rng.random((B, N, 2)) < 0.1] = 0
        boxes = np.concatenate([centers, sizes], axis=2)
    kind = rng.integers(0, 3)
    if kind == 0:
        scores = rng.uniform(-0.2, 1, (B, C, N))
    else:
        scores = rng.integers(-1, 8, (B, C, N)) / 8  # many ties
        scores[(scores == 0) & (rng.random((B, C, N)) < 0.5)] = -0.0  # ranks as +0 (ties by index)
    if kind == 2:
        scores[rng.random((B, C, N)) < 0.15] = np.nan
    return {"boxes": boxes.astype(dtype), "scores": scores.astype(dtype)}


def save(tmp_path, model, name="nms.onnx"):
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def compile_pair(path):
    return lathe.compile(path, cache_dir=False), lathe.compile(path, backend="interp")


def assert_compiled(model):
    """The NonMaxSuppressionPadded kernel compiled: the one host step left is the rest after the split."""
    report = model.report
    assert "(1 compiled with a padded output" in report, report
    assert re.search(r"\d+ kernels .*, 1 host steps;", report) and "fallbacks" not in report, report


def assert_same(got, want, what):
    assert set(got) == set(want), what
    for name in want:
        assert got[name].dtype == want[name].dtype, f"{what}: {name}"
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{what}: {name}")


CASES = [  # B, C, N, max_output, iou, score_threshold, center_point_box
    (1, 1, 1, 5, 0.5, 0.1, 0),
    (2, 3, 40, 10, 0.5, 0.2, 0),
    (3, 2, 64, 100, 0.3, None, 0),   # max_output above N, no score threshold
    (2, 2, 50, 5, None, 0.1, 0),     # no iou threshold (0: any overlap suppresses)
    (2, 3, 45, 20, 0.45, 0.25, 1),   # center_point_box
    (1, 3, 300, 40, 0.6, 0.0, 0),    # a deep heap
    (2, 2, 30, None, 0.5, 0.1, 0),   # no max_output: nothing selected
    (1, 2, 17, -3, 0.5, None, 1),    # negative max_output: nothing selected
    (2, 1, 33, 33, 0.0, None, 0),    # max_output = N
]


@pytest.mark.parametrize("B,C,N,mo,iou,sth,cpb", CASES)
def test_random_boxes(B, C, N, mo, iou, sth, cpb, tmp_path):
    model, ref = compile_pair(save(tmp_path, nms_model(B, C, N, mo, iou, sth, cpb)))
    assert_compiled(model)
    rng = np.random.default_rng(B * 1000 + C * 100 + N)
    for i in range(5):
        f = random_feeds(rng, B, C, N, cpb)
        assert_same(model.run(f), ref.run(f), f"run {i}")


RUNTIME_DTYPES = [
    {"max_output": (np.int64, [1]), "iou": (np.float32, []), "score_threshold": (np.float32, [1])},
    {"max_output": (np.int32, []), "iou": (np.float64, [1]), "score_threshold": (np.int64, [1])},
]


@pytest.mark.parametrize("dtypes", RUNTIME_DTYPES, ids=["i64-f32-f32", "i32-f64-i64"])
def test_runtime_inputs(dtypes, tmp_path):
    """max_output and the thresholds given at run time, in several dtypes (an integer threshold goes through
    double, as the reference loads it)."""
    B, C, N = 2, 3, 40
    model, ref = compile_pair(save(tmp_path, nms_model(B, C, N, runtime=dtypes)))
    assert_compiled(model)
    rng = np.random.default_rng(21)
    values = [(5, 0.5, 0.2), (0, 0.5, 0.2), (-2, 0.5, 0.0), (1000, 0.3, -1.0), (3, np.nan, 0.0), (10, 0.5, np.nan),
              (7, 1.0, 0.0), (7, -0.5, 0.5), (40, 0.0, 0.0), (1, 0.7, -0.1)]
    for mo, iou, sth in values:
        f = random_feeds(rng, B, C, N)
        for name, v in zip(OPTIONAL, (mo, iou, sth)):
            dt, shape = dtypes[name]
            if np.issubdtype(dt, np.integer) and not np.isfinite(v):
                v = 0
            f[name] = np.full(shape, v if np.issubdtype(dt, np.floating) else np.floor(v), dt)
        assert_same(model.run(f), ref.run(f), f"max_output {mo}, iou {iou}, score threshold {sth}")


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_float16_and_float64(dtype, tmp_path):
    """Boxes and scores of float16 (widened exactly) and float64 (rounded to float as the reference does), a
    score threshold of the same dtype given at run time."""
    B, C, N = 2, 2, 48
    runtime = {"score_threshold": (dtype, [1])}
    model, ref = compile_pair(save(tmp_path, nms_model(B, C, N, 12, 0.4, None, dtype=dtype, runtime=runtime)))
    assert_compiled(model)
    rng = np.random.default_rng(5)
    for i, sth in enumerate((0.25, 0.0, -1.0, 0.6)):
        f = random_feeds(rng, B, C, N, dtype=dtype)
        f["score_threshold"] = np.array([sth], dtype)
        assert_same(model.run(f), ref.run(f), f"{dtype.__name__} run {i}")


def test_fused_prologue(tmp_path):
    """Boxes computed by a float16 Mul that fuses into the kernel (one class: the boxes are not smaller than
    the selected output), read at every comparison as the interpreter holds them: rounded to float16."""
    model = nms_model(2, 1, 30, 8, 0.5, 0.1, dtype=np.float16)
    model.graph.input[0].name = "boxes_in"
    model.graph.node.insert(0, h.make_node("Mul", ["boxes_in", "scale"], ["boxes"]))
    model.graph.initializer.append(nh.from_array(np.array(1.7, np.float16), "scale"))
    model, ref = compile_pair(save(tmp_path, model))
    assert_compiled(model)
    assert ", 1 kernels " in model.report, model.report  # the Mul inside the NonMaxSuppressionPadded kernel
    rng = np.random.default_rng(13)
    for i in range(4):
        f = random_feeds(rng, 2, 1, 30, dtype=np.float16)
        f["boxes_in"] = f.pop("boxes")
        assert_same(model.run(f), ref.run(f), f"run {i}")


def degenerate_feeds(cpb):
    N = 6
    out = []
    same = np.tile(np.array([1, 1, 3, 4], np.float32), (1, N, 1))
    scores = np.linspace(0.9, 0.4, N, dtype=np.float32).reshape(1, 1, N)
    out.append((same, scores))                                   # identical boxes
    out.append((same, np.full((1, 1, N), 0.5, np.float32)))      # and equal scores: by index
    out.append((same, np.full((1, 1, N), np.nan, np.float32)))   # every score NaN
    flat = np.zeros((1, N, 4), np.float32)
    flat[..., 2] = 2
    out.append((flat, scores))                                   # zero area (no width or no height)
    odd = np.tile(np.array([0, 0, 2, 2], np.float32), (1, N, 1))
    odd[0, 1] = [np.nan, 0, 2, 2]
    odd[0, 2] = [0, np.inf, 2, 2]
    odd[0, 3] = [-np.inf, -np.inf, np.inf, np.inf]
    odd[0, 4] = [3e38, 3e38, -3e38, -3e38]                      # the area overflows to inf
    out.append((odd, scores))
    # centers and sizes a few subnormals wide: x +- w/2 rounds w/2 first (to 0 here: zero area, nothing
    # suppressed); a product fused into the add would round once and give the boxes an area
    tiny = np.float32(2.0 ** -149)
    sub = np.tile(np.array([3 * tiny, 0, tiny, 1], np.float32), (1, N, 1))
    sub[0, 3] = [5 * tiny, 0, 3 * tiny, 1]
    out.append((sub, scores))
    if cpb == 0:
        sub = np.tile(np.array([0, 0, 1, 3 * tiny], np.float32), (1, N, 1))
        out.append((sub, scores))
    return out


@pytest.mark.parametrize("cpb", [0, 1])
def test_degenerate_boxes(cpb, tmp_path):
    model, ref = compile_pair(save(tmp_path, nms_model(1, 1, 6, 6, 0.5, None, cpb)))
    assert_compiled(model)
    for i, (boxes, scores) in enumerate(degenerate_feeds(cpb)):
        f = {"boxes": boxes, "scores": scores}
        assert_same(model.run(f), ref.run(f), f"case {i}")


def test_nodes_after_the_split(tmp_path):
    """The rest after the split (compiled at run time for the count the data gives) reads the selection."""
    B, C, N = 2, 2, 36
    model, ref = compile_pair(save(tmp_path, nms_model(B, C, N, 8, 0.5, 0.3, after=True)))
    assert_compiled(model)
    rng = np.random.default_rng(3)
    for i in range(6):
        f = random_feeds(rng, B, C, N)
        assert_same(model.run(f), ref.run(f), f"run {i}")


def run_cli(*args):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600)


def test_loopir_backend(tmp_path):
    """The bounds-checked Loop IR evaluator runs the kernel: every load and store inside its buffer (the
    candidate heap lives at the end of the selected output), the same selection."""
    B, C, N = 2, 3, 25
    runtime = {"max_output": (np.int64, [1]), "iou": (np.float32, [1])}
    path = save(tmp_path, nms_model(B, C, N, sth=0.1, cpb=1, runtime=runtime))
    ref = lathe.compile(path, backend="interp")
    rng = np.random.default_rng(17)
    for i, mo in enumerate((N, 4)):
        f = random_feeds(rng, B, C, N, cpb=1)
        f["max_output"], f["iou"] = np.array([mo], np.int64), np.array([0.35], np.float32)
        inp, out = tmp_path / f"in{i}.npz", tmp_path / f"out{i}.npz"
        np.savez(inp, **f)
        r = run_cli("run", path, "--input", inp, "--output", out, "--backend", "loopir")
        assert r.returncode == 0, r.stdout + r.stderr
        with np.load(out) as z:
            assert_same({k: z[k] for k in z.files}, ref.run(f), f"loopir, max_output {mo}")


def test_empty_max_output_runs_on_the_host(tmp_path):
    """An empty max_output (the reference reads it as absent: nothing selected) is no input a kernel can load:
    the node runs on the host, with the reference's result."""
    model = nms_model(1, 2, 10, None, 0.5, 0.1)
    model.graph.initializer.append(nh.from_array(np.zeros(0, np.int64), "mo_empty"))
    model.graph.node[0].input.insert(2, "mo_empty")
    model, ref = compile_pair(save(tmp_path, model))
    assert ", 2 host steps;" in model.report, model.report
    f = random_feeds(np.random.default_rng(2), 1, 2, 10)
    got = model.run(f)
    assert_same(got, ref.run(f), "empty max_output")
    assert got["sel"].shape == (0, 3)


@pytest.mark.parametrize("cpb", [0, 1])
def test_cuda_kernel_compiles_with_nvrtc(cpb, tmp_path):
    """The kernel emitted for the GPU (one thread; products as __fmul_rn, never contracted) builds with NVRTC."""
    runtime = {"iou": (np.float32, [1]), "score_threshold": (np.float16, [])}
    path = save(tmp_path, nms_model(2, 3, 40, 10, cpb=cpb, dtype=np.float16, runtime=runtime))
    out = tmp_path / "cuda"
    r = run_cli("compile", path, "--target", "cuda", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "model.cubin").stat().st_size > 0, r.stdout + r.stderr
    groups = (out / "groups.txt").read_text()
    assert re.search(r"anchor=n\d+ .*\(NonMaxSuppressionPadded\)", groups), groups
    assert "__fmul_rn(" in (out / "model.cu").read_text()
