"""test_quant_ops.py — the quantization ops compile (the expand_quant pass: exact float and integer
ops) and give the interpreter's results bit for bit.

QuantizeLinear / DequantizeLinear per tensor and per axis, to and from int8, uint8, int16 and uint16;
DynamicQuantizeLinear; MatMulInteger and ConvInteger with dot products longer than the 258 terms
float sums exactly (cut into chunks summed in int32), per-column / per-channel weight zero points,
a depthwise ConvInteger. Random data (never zeros), weights as constants the way quantizers write
them; on cpu and the bounds-checked loopir backend the outputs must equal the interpreter's exactly
(float outputs to 1e-6: a float division may round differently), with no host step.
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
RNG = np.random.default_rng(23)
NP = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.UINT16: np.uint16}


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("quant-cache")


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def ints(dt, shape):
    info = np.iinfo(NP[dt])
    return RNG.integers(info.min, info.max + 1, shape).astype(NP[dt])


def save(path, nodes, inputs, outputs, inits, opset=21):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    onnx.save(m, str(path))
    return str(path)


def check(model, feeds, tmp_path, cache):
    args = []
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    r = lathe("compile", model, cache=cache)
    assert r.returncode == 0 and re.search(r"\b0 host steps", r.stdout), r.stdout + r.stderr
    outs = {}
    for b in ("interp", "cpu", "loopir"):
        r = lathe("run", model, "--backend", b, *args, "--output", tmp_path / f"{b}.npz", cache=cache)
        assert r.returncode == 0, (b, r.stderr[-2000:])
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = {k: z[k] for k in z.files}
    want = outs["interp"]
    for b in ("cpu", "loopir"):
        for k, w in want.items():
            got = outs[b][k]
            assert got.dtype == w.dtype and got.shape == w.shape, (b, k)
            if np.issubdtype(w.dtype, np.integer):
                np.testing.assert_array_equal(got, w, err_msg=f"{b} {k}")
            else:
                np.testing.assert_allclose(got, w, rtol=1e-6, atol=0, err_msg=f"{b} {k}")
    return want


@pytest.mark.parametrize("dt", [T.INT8, T.UINT8, T.INT16, T.UINT16])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_dequantize(tmp_path, cache, dt, per_axis):
    shape, axis = (2, 5, 4, 3), 1
    n = shape[axis] if per_axis else 1
    scale = RNG.uniform(0.01, 0.2, n).astype(np.float32).reshape(n if per_axis else ())
    zp = ints(dt, n).reshape(n if per_axis else ()) // 4
    m = save(tmp_path / "qdq.onnx", [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis),
        helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"], axis=axis)],
        [helper.make_tensor_value_info("x", T.FLOAT, shape)],
        [helper.make_tensor_value_info("q", dt, shape), helper.make_tensor_value_info("y", T.FLOAT, shape),
         helper.make_tensor_value_info("wf", T.FLOAT, shape)],
        [const("s", scale), const("z", zp), const("w", ints(dt, shape))])
    x = (RNG.standard_normal(shape) * 40).astype(np.float32)  # some values saturate
    x.flat[:4] = [0.5 * scale.flat[0], 1.5 * scale.flat[0], 2.5 * scale.flat[0], -0.5 * scale.flat[0]]  # ties
    out = check(m, {"x": x}, tmp_path, cache)
    assert len(np.unique(out["q"])) > 10


def test_dynamic_quantize_linear(tmp_path, cache):
    m = save(tmp_path / "dql.onnx", [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
             [helper.make_tensor_value_info("x", T.FLOAT, [6, 33])],
             [helper.make_tensor_value_info("y", T.UINT8, [6, 33]), helper.make_tensor_value_info("s", T.FLOAT, []),
              helper.make_tensor_value_info("z", T.UINT8, [])], [])
    for x in (RNG.standard_normal((6, 33)), RNG.uniform(0.5, 3, (6, 33)), -RNG.uniform(0.5, 3, (6, 33))):
        out = check(m, {"x": x.astype(np.float32)}, tmp_path, cache)
        assert out["s"] > 0


@pytest.mark.parametrize("k,col_zp", [(40, False), (600, True)])
def test_matmul_integer(tmp_path, cache, k, col_zp):
    n = 24
    bz = ints(T.INT8, n if col_zp else ()) // 8
    m = save(tmp_path / "mmi.onnx", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
             [helper.make_tensor_value_info("a", T.UINT8, [2, 5, k]), helper.make_tensor_value_info("az", T.UINT8, [])],
             [helper.make_tensor_value_info("y", T.INT32, [2, 5, n])],
             [const("b", ints(T.INT8, (k, n))), const("bz", bz)])
    out = check(m, {"a": ints(T.UINT8, (2, 5, k)), "az": np.array(131, np.uint8)}, tmp_path, cache)
    assert np.abs(out["y"]).max() > 1 << 16


@pytest.mark.parametrize("cin,group,kk", [(40, 1, 3), (16, 16, 3), (300, 1, 1)])
def test_conv_integer(tmp_path, cache, cin, group, kk):
    cout = 16
    wz = ints(T.UINT8, cout) // 2
    m = save(tmp_path / "ci.onnx", [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], group=group,
                                                     pads=[1, 1, 1, 1], strides=[1, 2])],
             [helper.make_tensor_value_info("x", T.UINT8, [1, cin, 7, 9])],
             [helper.make_tensor_value_info("y", T.INT32, None)],
             [const("w", ints(T.UINT8, (cout, cin // group, kk, kk))), const("xz", np.array(120, np.uint8)),
              const("wz", wz)])
    out = check(m, {"x": ints(T.UINT8, (1, cin, 7, 9))}, tmp_path, cache)
    assert len(np.unique(out["y"])) > 50


def test_nan_quantizes_to_the_zero_point(tmp_path, cache):
    """A NaN quotient becomes the zero point, and NaN takes no part in DynamicQuantizeLinear's range,
    as in the interpreter."""
    m = save(tmp_path / "nan.onnx", [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yz"])],
        [helper.make_tensor_value_info("x", T.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("q", T.UINT8, [4, 6]), helper.make_tensor_value_info("y", T.UINT8, [4, 6]),
         helper.make_tensor_value_info("ys", T.FLOAT, []), helper.make_tensor_value_info("yz", T.UINT8, [])],
        [const("s", np.float32(0.05)), const("z", np.uint8(128))])
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[1, 2] = x[3, 0] = np.nan
    out = check(m, {"x": x}, tmp_path, cache)
    assert out["q"][1, 2] == 128 and np.isfinite(out["ys"])


@pytest.mark.parametrize("op", ["MatMulInteger", "ConvInteger"])
def test_empty_dot_products_are_left_to_the_interpreter(tmp_path, cache, op):
    if op == "MatMulInteger":
        node = helper.make_node(op, ["a", "b"], ["y"])
        ins, inits, feeds = [helper.make_tensor_value_info("a", T.UINT8, [2, 0])], [const("b", np.zeros((0, 3), np.uint8))], \
            {"a": np.zeros((2, 0), np.uint8)}
    else:
        node = helper.make_node(op, ["a", "b"], ["y"])
        ins, inits, feeds = [helper.make_tensor_value_info("a", T.UINT8, [1, 0, 4, 4])], \
            [const("b", np.zeros((2, 0, 3, 3), np.uint8))], {"a": np.zeros((1, 0, 4, 4), np.uint8)}
    m = save(tmp_path / "empty.onnx", [node], ins, [helper.make_tensor_value_info("y", T.INT32, None)], inits)
    np.save(tmp_path / "a.npy", feeds["a"])
    for b in ("interp", "cpu"):
        r = lathe("run", m, "--backend", b, "--input", f"a={tmp_path / 'a.npy'}", "--output", tmp_path / f"{b}.npz",
                  cache=cache)
        assert r.returncode == 0, (b, r.stderr[-800:])
        with np.load(tmp_path / f"{b}.npz") as z:
            assert (z["y"] == 0).all()
