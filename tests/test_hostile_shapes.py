"""test_hostile_shapes.py — models whose shapes or attributes break the spec are refused the same way
on every path: the interpreter, the compiled CPU plan, the bounds-checked Loop IR evaluator backend
(loopir), the standalone C export and CUDA code generation all exit 2 with the same error line, and
nothing reads outside a buffer (the compiled path trusts only shapes that inference verified).

Each case is a tiny model made with onnx.helper: shape-like inputs are initializers, so the compiler
would lower the op that reads them. Data-dependent indices (Gather / GatherElements with indices given
at run time) are checked when the plan runs: a bad index is an error, never a read past the data.
"""
import os
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)


def lathe(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=e)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def f32(name, *shape):
    return numpy_helper.from_array(np.random.default_rng(3).uniform(-1, 1, shape).astype(np.float32), name)


def model(nodes, ins, outs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", ins, outs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


X4 = [vi("x", T.FLOAT, [4])]
Y = [vi("y", T.FLOAT, None)]
AB = [vi("a", T.FLOAT, None), vi("b", T.FLOAT, None)]

# name -> (model, a fragment the error line must contain)
CASES = {
    "reshape_to_more": (model([helper.make_node("Reshape", ["x", "s"], ["y"])], X4, Y, [i64("s", [4000])]),
                        "cannot reshape"),
    "reshape_to_huge": (model([helper.make_node("Reshape", ["x", "s"], ["y"])], X4, Y, [i64("s", [100000000])]),
                        "cannot reshape"),
    "reshape_to_fewer": (model([helper.make_node("Reshape", ["x", "s"], ["y"])], X4, Y, [i64("s", [2])]),
                         "cannot reshape"),
    "split_sum_above_axis": (model([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=0)], X4, AB,
                                   [i64("s", [2, 6])]), "split"),
    "split_sum_below_axis": (model([helper.make_node("Split", ["x", "s"], ["a", "b"], axis=0)], X4, AB,
                                   [i64("s", [1, 1])]), "split"),
    "gather_elements_indices_larger": (
        model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], [vi("x", T.FLOAT, [2, 3])], Y,
              [numpy_helper.from_array(np.zeros((4000, 3), np.int64), "i")]), "indices"),
    "gemm_inner_dims": (model([helper.make_node("Gemm", ["a", "b"], ["y"], transB=1)],
                              [vi("a", T.FLOAT, [2, 3000]), vi("b", T.FLOAT, [5, 3])], Y), "Gemm"),
    "matmul_inner_dims": (model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                [vi("a", T.FLOAT, [2, 30]), vi("b", T.FLOAT, [5, 3])], Y), "MatMul"),
    "conv_kernel_larger_than_input": (
        model([helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [1, 1, 3, 3])], Y,
              [f32("w", 1, 1, 7, 7)]), "Conv"),
    "maxpool_huge_kernel": (model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2**62, 2])],
                                  [vi("x", T.FLOAT, [1, 1, 3, 3])], Y), "MaxPool"),
    "avgpool_pads_not_below_kernel": (
        model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], pads=[2, 2, 2, 2])],
              [vi("x", T.FLOAT, [1, 1, 3, 3])], Y), "AveragePool"),
    "clip_min_not_scalar": (model([helper.make_node("Clip", ["x", "lo"], ["y"])], X4, Y,
                                  [numpy_helper.from_array(np.zeros(3, np.float32), "lo")]), "Clip"),
    "concat_mismatched_dims": (model([helper.make_node("Concat", ["x", "z"], ["y"], axis=0)],
                                     [vi("x", T.FLOAT, [2, 3]), vi("z", T.FLOAT, [2, 4])], Y), "Concat"),
    "transpose_bad_perm": (model([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0])],
                                 [vi("x", T.FLOAT, [2, 3])], Y), "Transpose"),
    "expand_not_broadcastable": (model([helper.make_node("Expand", ["x", "s"], ["y"])], X4, Y,
                                       [i64("s", [3])]), "Expand"),
    "slice_axis_out_of_range": (model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], X4, Y,
                                      [i64("st", [0]), i64("en", [2]), i64("ax", [5])]), "Slice"),
    "add_not_broadcastable": (model([helper.make_node("Add", ["x", "z"], ["y"])],
                                    [vi("x", T.FLOAT, [4]), vi("z", T.FLOAT, [3])], Y), "Add"),
}

PATHS = ["interp", "cpu", "loopir", "export", "cuda"]


def run_path(path, onnx_path, tmp, cache):
    env = {"LATHE_CACHE_DIR": cache}
    if path == "export":
        return lathe("compile", onnx_path, "-o", os.path.join(tmp, "export"), env=env)
    if path == "cuda":
        return lathe("compile", onnx_path, "--target", "cuda", "-o", os.path.join(tmp, "cuda"), env=env)
    return lathe("run", onnx_path, "--backend", path, env=env)


def error_line(r):
    lines = [l for l in r.stderr.splitlines() if "error:" in l]
    return lines[-1].split("error:", 1)[1].strip() if lines else ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_alike_on_every_path(tmp_path, cache, name):
    m, fragment = CASES[name]
    p = str(tmp_path / (name + ".onnx"))
    onnx.save(m, p)
    msgs = {}
    for path in PATHS:
        r = run_path(path, p, str(tmp_path), cache)
        assert r.returncode == 2, f"{name} on {path}: exit {r.returncode}\n{r.stdout[-800:]}\n{r.stderr[-800:]}"
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
        msgs[path] = error_line(r)
    assert fragment.lower() in msgs["interp"].lower(), msgs
    assert len(set(msgs.values())) == 1, f"{name}: different messages per path: {msgs}"
    assert not os.path.exists(tmp_path / "export" / "model.c"), "a refused model left a half-written export"


def gather_model(op, data_shape, idx_shape, axis):
    return model([helper.make_node(op, ["x", "i"], ["y"], axis=axis)],
                 [vi("x", T.FLOAT, data_shape), vi("i", T.INT64, idx_shape)], Y)


@pytest.mark.parametrize("op,data_shape,idx,axis", [
    ("Gather", [5, 3], [[0, 7]], 0),
    ("Gather", [5, 3], [[0, -9]], 0),
    ("GatherElements", [2, 3], [[0, 5, 1]], 1),
    ("GatherElements", [2, 3], [[-7, 0, 1]], 1),
])
@pytest.mark.parametrize("backend", ["interp", "cpu", "loopir"])
def test_run_time_indices_out_of_range_are_errors(tmp_path, cache, op, data_shape, idx, axis, backend):
    p = str(tmp_path / "g.onnx")
    idx = np.array(idx, np.int64)
    onnx.save(gather_model(op, data_shape, list(idx.shape), axis), p)
    np.save(tmp_path / "i.npy", idx)
    r = lathe("run", p, "--backend", backend, "--input", f"i={tmp_path / 'i.npy'}", env={"LATHE_CACHE_DIR": cache})
    assert r.returncode == 2, f"{op} {backend}: exit {r.returncode}\n{r.stdout[-600:]}\n{r.stderr[-600:]}"
    assert "index" in r.stderr.lower() or "indices" in r.stderr.lower(), r.stderr


@pytest.mark.parametrize("backend", ["cpu", "loopir"])
def test_valid_models_still_compile_and_agree(tmp_path, cache, backend):
    """The checks refuse only what is wrong: a Reshape/Split/Gather/Conv/Gemm chain that is valid runs
    compiled (no host step for these ops) and matches the interpreter."""
    nodes = [
        helper.make_node("Reshape", ["x", "s"], ["r"]),
        helper.make_node("Split", ["r", "sp"], ["a", "b"], axis=1),
        helper.make_node("Concat", ["b", "a"], ["c"], axis=1),
        helper.make_node("Gemm", ["c", "w"], ["y"], transB=1),
    ]
    m = model(nodes, [vi("x", T.FLOAT, [2, 3, 4])], [vi("y", T.FLOAT, None)],
              [i64("s", [2, 12]), i64("sp", [5, 7]), f32("w", 6, 12)])
    p = str(tmp_path / "ok.onnx")
    onnx.save(m, p)
    outs = {}
    for b in ["interp", backend]:
        o = tmp_path / f"{b}.npz"
        r = lathe("run", p, "--backend", b, "--seed", 5, "--output", o, env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 0, r.stderr
        outs[b] = np.load(o)["y"]
    np.testing.assert_allclose(outs[backend], outs["interp"], rtol=1e-4, atol=1e-5)
    rep = lathe("compile", p, env={"LATHE_CACHE_DIR": cache})
    assert rep.returncode == 0, rep.stderr
    assert re.search(r"\b0 host steps", rep.stdout + rep.stderr), rep.stdout + rep.stderr


def test_declared_shape_is_not_trusted(tmp_path, cache):
    """An output shape the model declares but inference cannot derive (Reshape to a shape given at run
    time) was never checked: the node runs as a host step, and a bad shape is the interpreter's error."""
    m = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [4]), vi("s", T.INT64, [1])],
              [vi("y", T.FLOAT, [4000])])
    p = str(tmp_path / "declared.onnx")
    onnx.save(m, p)
    np.save(tmp_path / "s.npy", np.array([4000], np.int64))
    rep = lathe("compile", p, env={"LATHE_CACHE_DIR": cache})
    assert rep.returncode == 0, rep.stderr
    assert re.search(r"\b1 host steps?", rep.stdout + rep.stderr), rep.stdout + rep.stderr
    msgs = set()
    for b in ["interp", "cpu", "loopir"]:
        r = lathe("run", p, "--backend", b, "--input", f"s={tmp_path / 's.npy'}", env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 2, f"{b}: {r.returncode} {r.stderr[-500:]}"
        msgs.add(error_line(r))
    assert len(msgs) == 1 and "reshape" in msgs.pop().lower()


@pytest.mark.parametrize("pads", [[0, 0, -1, 1, 0, 0, 1, 1], [0, 0, 1, -2, 0, 0, 1, 1], [0, 0, 1, 1, 0, 0, -3, 1],
                                  [0, 0, 1, 5, 0, 0, 1, 1], [0, 0, 1, 1, 0, 0, 1, 6]])
@pytest.mark.parametrize("mode", ["wrap", "reflect", "edge"])
def test_pad_with_negative_pads_agrees(tmp_path, cache, pads, mode):
    """Negative pads crop before the wrap/reflect/edge padding (as onnxruntime), and an end pad may be
    as wide as the axis: the compiled kernel gives the interpreter's answer (a wrap kernel once wrapped
    over the uncropped axis, a reflect kernel reflected an end pad wider than the axis only once)."""
    m = model([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)], [vi("x", T.INT32, [1, 3, 4, 5])], Y,
              [i64("p", pads)], opset=19)
    m.graph.output[0].type.tensor_type.elem_type = T.INT32
    p = str(tmp_path / "pad.onnx")
    onnx.save(m, p)
    np.save(tmp_path / "x.npy", (np.arange(60, dtype=np.int32) - 30).reshape(1, 3, 4, 5))
    outs = {}
    for b in ["interp", "cpu", "loopir"]:
        o = tmp_path / f"{b}.npz"
        r = lathe("run", p, "--backend", b, "--input", f"x={tmp_path / 'x.npy'}", "--output", o,
                  env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 0, f"{b}: {r.stderr[-500:]}"
        outs[b] = np.load(o)["y"]
    np.testing.assert_array_equal(outs["cpu"], outs["interp"])
    np.testing.assert_array_equal(outs["loopir"], outs["interp"])


def test_reshape_to_scalar_with_run_time_shape(tmp_path, cache):
    """A shape input of length 0 makes a scalar whatever its values: inference knows the output and
    must check the element count (found by fuzz_compile_diff: the compiled plan copied one element)."""
    m = model([helper.make_node("Reshape", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [2, 3, 4]), vi("s", T.INT64, [0])], Y)
    p = str(tmp_path / "rs0.onnx")
    onnx.save(m, p)
    np.save(tmp_path / "s.npy", np.zeros((0,), np.int64))
    msgs = set()
    for b in ["interp", "cpu", "loopir"]:
        r = lathe("run", p, "--backend", b, "--input", f"s={tmp_path / 's.npy'}", env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 2, f"{b}: {r.returncode} {r.stderr[-500:]}"
        msgs.add(error_line(r))
    assert len(msgs) == 1 and "cannot reshape [2,3,4] into []" in msgs.pop()


@pytest.mark.parametrize("backend", ["cpu", "loopir"])
def test_conv_with_one_output_channel_and_bias(tmp_path, cache, backend):
    """A one-element bias is an operand the convolution call reads from memory, not an immediate
    (found by fuzz/fuzz_export.py: the lowering ran out of buffers and the run failed)."""
    m = model([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], [vi("x", T.FLOAT, [1, 1, 4, 4])],
              Y, [f32("w", 1, 1, 3, 3), f32("b", 1)])
    p = str(tmp_path / "conv1.onnx")
    onnx.save(m, p)
    outs = {}
    for b in ["interp", backend]:
        o = tmp_path / f"{b}.npz"
        r = lathe("run", p, "--backend", b, "--seed", 3, "--output", o, env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 0, f"{b}: {r.stderr[-500:]}"
        outs[b] = np.load(o)["y"]
    np.testing.assert_allclose(outs[backend], outs["interp"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", {"kernel_shape": [2**62, 2]}),
    ("MaxPool", {"kernel_shape": [2**63 - 1, 3]}),
    ("AveragePool", {"kernel_shape": [2**40, 3]}),
    ("AveragePool", {"kernel_shape": [2**40, 3], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2**62, 2], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [9, 3], "count_include_pad": 1}),
    ("MaxPool", {"kernel_shape": [9, 3], "strides": [2, 1]}),
])
def test_pool_window_wider_than_its_input(tmp_path, cache, op, attrs):
    """SAME padding around a kernel wider than the input: the taps that only ever read padding are
    skipped and count_include_pad's divisor is computed, so the compiled kernel gives the
    interpreter's answer at once (found by fuzz_compile_diff: a 2^62-tap window overflowed the tap
    count, the lowering crashed, and the window loops would have run over the padding)."""
    m = model([helper.make_node(op, ["x"], ["y"], auto_pad="SAME_UPPER", **attrs)], [vi("x", T.FLOAT, [1, 2, 5, 6])], Y)
    p = str(tmp_path / "pool.onnx")
    onnx.save(m, p)
    outs = {}
    for b in ["interp", "cpu", "loopir"]:
        o = tmp_path / f"{b}.npz"
        r = lathe("run", p, "--backend", b, "--seed", 5, "--output", o, env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 0, f"{b}: {r.stderr[-500:]}"
        outs[b] = np.load(o)["y"]
    assert np.isfinite(outs["interp"]).all() and np.ptp(outs["interp"]) > 0
    np.testing.assert_allclose(outs["cpu"], outs["interp"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs["loopir"], outs["interp"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("narrow", [T.FLOAT16, T.BFLOAT16])
@pytest.mark.parametrize("backend", ["cpu", "loopir"])
def test_cast_down_and_up_keeps_the_rounding(tmp_path, cache, narrow, backend):
    """x - float(narrow(x)) is the rounding error of the narrow type: a fused kernel computes float16
    and bfloat16 in float, but an explicit Cast still rounds (found by fuzz_compile_diff: the compiled
    paths skipped the Cast, giving 0, and the Loop IR evaluator did not round casts to those types)."""
    nodes = [helper.make_node("Cast", ["x"], ["n"], to=narrow), helper.make_node("Cast", ["n"], ["f"], to=T.FLOAT),
             helper.make_node("Sub", ["x", "f"], ["y"])]
    m = model(nodes, [vi("x", T.FLOAT, [64])], [vi("y", T.FLOAT, [64])])
    p = str(tmp_path / "cast.onnx")
    onnx.save(m, p)
    x = np.random.default_rng(7).uniform(-3, 3, 64).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    ref = x - x.astype(np.float16).astype(np.float32) if narrow == T.FLOAT16 else None
    outs = {}
    for b in ["interp", backend]:
        o = tmp_path / f"{b}.npz"
        r = lathe("run", p, "--backend", b, "--input", f"x={tmp_path / 'x.npy'}", "--output", o,
                  env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 0, f"{b}: {r.stderr[-500:]}"
        outs[b] = np.load(o)["y"]
    assert np.count_nonzero(outs["interp"]) > 32
    if ref is not None:
        np.testing.assert_array_equal(outs["interp"], ref)
    np.testing.assert_array_equal(outs[backend], outs["interp"])


@pytest.mark.parametrize("backend", ["interp", "cpu", "loopir"])
def test_prelu_slope_along_the_one_matching_dim(tmp_path, cache, backend):
    """A 1-D slope that is not unidirectionally broadcastable to X but matches exactly one of its
    dims applies along that dim, and Y has X's shape (found by fuzz_compile_diff: the interpreter
    broadcast both ways, X [6,1,1,1] with slope [6] gave [6,1,1,6] where inference said [6,1,1,1])."""
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [6, 1, 1, 1]), vi("s", T.FLOAT, [6])], Y)
    p = str(tmp_path / "prelu.onnx")
    onnx.save(m, p)
    x = -np.arange(1, 7, dtype=np.float32).reshape(6, 1, 1, 1)
    s = np.linspace(0.1, 0.6, 6, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "s.npy", s)
    o = tmp_path / "y.npz"
    r = lathe("run", p, "--backend", backend, "--input", f"x={tmp_path / 'x.npy'}", "--input", f"s={tmp_path / 's.npy'}",
              "--output", o, env={"LATHE_CACHE_DIR": cache})
    assert r.returncode == 0, r.stderr[-500:]
    np.testing.assert_allclose(np.load(o)["y"], x * s.reshape(6, 1, 1, 1), rtol=1e-6)


def test_tfidf_huge_skip_count_ends(tmp_path, cache):
    """A max_skip_count past the row length counts what a skip of the row length counts, at once
    (found by fuzz_compile_diff: a skip count of 2^62 looped for ever)."""
    outs = []
    for skip in [6, 2**62]:
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=2,
                                max_skip_count=skip, ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3, 4, 5, 6],
                                pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])
        m = model([node], [vi("x", T.INT32, [2, 6])], Y, opset=17)
        p = str(tmp_path / f"tfidf{skip}.onnx")
        onnx.save(m, p)
        np.save(tmp_path / "x.npy", np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32))
        o = tmp_path / f"y{skip}.npz"
        r = lathe("run", p, "--backend", "cpu", "--input", f"x={tmp_path / 'x.npy'}", "--output", o,
                  env={"LATHE_CACHE_DIR": cache})
        assert r.returncode == 0, r.stderr[-500:]
        outs.append(np.load(o)["y"])
    assert outs[0].sum() > 0
    np.testing.assert_array_equal(outs[1], outs[0])


def test_roialign_sample_count_is_bounded(tmp_path, cache):
    """A sampling_ratio asking for billions of samples is an error naming the node on every path,
    not hours of work (found by fuzz_compile_diff: sampling_ratio 65536 ran for minutes)."""
    node = helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=5, output_width=5,
                            sampling_ratio=65536)
    m = model([node], [vi("x", T.FLOAT, [1, 1, 10, 10])], Y,
              [numpy_helper.from_array(np.array([[0, 0, 9, 9]], np.float32), "rois"), i64("bi", [0])], opset=16)
    p = str(tmp_path / "roi.onnx")
    onnx.save(m, p)
    msgs = set()
    for b in ["interp", "cpu"]:
        r = lathe("run", p, "--backend", b, env={"LATHE_CACHE_DIR": cache})
        assert r.returncode != 0 and "samples per bin" in r.stderr, f"{b}: {r.returncode} {r.stderr[-300:]}"
        msgs.add(error_line(r))
    assert len(msgs) == 1
