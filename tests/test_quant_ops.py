"""test_quant_ops.py — the quantization ops compile (the expand_quant pass: exact float and integer
ops) and give the interpreter's results bit for bit.

QuantizeLinear / DequantizeLinear per tensor and per axis, to and from int8, uint8, int16 and uint16;
DynamicQuantizeLinear; MatMulInteger and ConvInteger with dot products longer than the 258 terms
float sums exactly (cut into chunks summed in int32), per-column / per-channel weight zero points,
a depthwise ConvInteger. Random data (never zeros), weights as constants the way quantizers write
them; on cpu and the bounds-checked loopir backend the outputs must equal the interpreter's exactly
(float outputs to 1e-6: a float division may round differently), with no host step.

On the CPU the integer products run on the int8 kernels (codegen/prelude/gemm_i8.h; loopir runs the
same integer Loop IR nests): MatMulInteger with uint8 and int8 on either side, M = 1, K not a
multiple of any vector width, K = 3072 at the extreme zero points (0 / 255, -128 / 127) where int16
pair sums would saturate, K past 33025 where the int32 sums wrap, zero points given at run time,
batched and run-time B; ConvInteger with fewer output pixels than a vector, groups, a depthwise
multiplier; the QDQ MatMul / Gemm / Conv that expand_quant turns into them (scaled once: float32
rounding apart from the float product, so compared to 1e-5 of the output's range).
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


def kernels_of(model, tmp_path, cache):
    """The compiled kernels' Loop IR (lathe compile --dump-code)."""
    r = lathe("compile", model, "--dump-code", tmp_path / "code", cache=cache)
    assert r.returncode == 0, r.stderr[-2000:]
    return (tmp_path / "code" / "kernels.txt").read_text()


def extreme(dt, hi):
    info = np.iinfo(NP[dt])
    return NP[dt](info.max if hi else info.min)


@pytest.mark.parametrize("adt,bdt", [(T.UINT8, T.INT8), (T.UINT8, T.UINT8), (T.INT8, T.INT8), (T.INT8, T.UINT8)])
@pytest.mark.parametrize("m,k,n,zb_kind", [(1, 7, 5, "col"), (6, 33, 17, "scalar"), (5, 100, 40, "none"),
                                           (3, 3072, 24, "extreme"), (2, 40000, 9, "extreme")])
def test_matmul_integer_kernels(tmp_path, cache, adt, bdt, m, k, n, zb_kind):
    """Bit for bit against the interpreter, the zero points at their extremes for the long sums."""
    a = ints(adt, (m, k))
    b = ints(bdt, (k, n))
    az = extreme(adt, False) if zb_kind == "extreme" else ints(adt, ())
    if zb_kind == "extreme":  # operands at the other extreme: every product |255 * 255|
        a[:] = extreme(adt, True)
        b[:, ::2] = extreme(bdt, True)
        bz = np.array([extreme(bdt, j % 2 == 0) for j in range(n)], NP[bdt])
    else:
        bz = ints(bdt, (n,) if zb_kind == "col" else ())
    inits = [const("b", b)] + ([const("bz", bz)] if zb_kind != "none" else [])
    node = helper.make_node("MatMulInteger", ["a", "b", "az"] + (["bz"] if zb_kind != "none" else []), ["y"])
    mdl = save(tmp_path / "mmi.onnx", [node],
               [helper.make_tensor_value_info("a", adt, [m, k]), helper.make_tensor_value_info("az", adt, [])],
               [helper.make_tensor_value_info("y", T.INT32, [m, n])], inits)
    out = check(mdl, {"a": a, "az": np.array(az, NP[adt])}, tmp_path, cache)
    assert "lt_gemm_i8" in kernels_of(mdl, tmp_path, cache)
    if zb_kind == "extreme":
        assert np.abs(out["y"].astype(np.int64)).max() >= 65025 * 1000


def test_matmul_integer_batched_and_runtime_b(tmp_path, cache):
    """A [2, 3, 4, K] against a constant B (folded into one call's rows) and against a run-time B
    [3, K, N] that broadcasts over A's first dim (a call per batch, B packed per call)."""
    k, n = 45, 19
    nodes = [helper.make_node("MatMulInteger", ["a", "w", "az", "wz"], ["y"]),
             helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["z"])]
    mdl = save(tmp_path / "mmib.onnx", nodes,
               [helper.make_tensor_value_info("a", T.UINT8, [2, 3, 4, k]), helper.make_tensor_value_info("az", T.UINT8, []),
                helper.make_tensor_value_info("b", T.INT8, [3, k, n]), helper.make_tensor_value_info("bz", T.INT8, [n])],
               [helper.make_tensor_value_info("y", T.INT32, [2, 3, 4, n]), helper.make_tensor_value_info("z", T.INT32, [2, 3, 4, n])],
               [const("w", ints(T.INT8, (k, n))), const("wz", ints(T.INT8, (n,)))])
    check(mdl, {"a": ints(T.UINT8, (2, 3, 4, k)), "az": np.array(7, np.uint8), "b": ints(T.INT8, (3, k, n)),
                "bz": ints(T.INT8, (n,))}, tmp_path, cache)
    assert kernels_of(mdl, tmp_path, cache).count("eval lt_gemm_i8") >= 2


@pytest.mark.parametrize("xdt,wdt,shape,cout,group,kk,stride,wz_kind", [
    (T.UINT8, T.INT8, (1, 64, 4, 4), 40, 1, 3, 2, "col"),     # 4 output pixels: pixels as the GEMM's rows
    (T.INT8, T.UINT8, (2, 24, 9, 8), 36, 3, 3, 1, "scalar"),  # groups
    (T.UINT8, T.UINT8, (1, 8, 10, 10), 16, 8, 3, 1, "col"),   # depthwise, multiplier 2
    (T.UINT8, T.INT8, (1, 300, 6, 6), 20, 1, 1, 1, "none"),   # 1x1, K past one block
])
def test_conv_integer_kernels(tmp_path, cache, xdt, wdt, shape, cout, group, kk, stride, wz_kind):
    inputs = ["x", "w", "xz"] + (["wz"] if wz_kind != "none" else [])
    inits = [const("w", ints(wdt, (cout, shape[1] // group, kk, kk))), const("xz", ints(xdt, ()))]
    if wz_kind != "none":
        inits.append(const("wz", ints(wdt, (cout,) if wz_kind == "col" else ())))
    mdl = save(tmp_path / "cik.onnx", [helper.make_node("ConvInteger", inputs, ["y"], group=group,
                                                       pads=[1, 0, 1, 1] if kk == 3 else [0, 0, 0, 0],
                                                       strides=[stride, stride])],
               [helper.make_tensor_value_info("x", xdt, list(shape))],
               [helper.make_tensor_value_info("y", T.INT32, None)], inits)
    out = check(mdl, {"x": ints(xdt, shape)}, tmp_path, cache)
    assert "lt_conv2d_i8" in kernels_of(mdl, tmp_path, cache)
    assert len(np.unique(out["y"])) > 20


def qdq_check(model, feeds, tmp_path, cache, op):
    """cpu against the interpreter for a QDQ product computed as an integer one: to 1e-5 of the
    output's largest magnitude (float32 roundings of the scaling and the float sums)."""
    args = []
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    outs = {}
    for b in ("interp", "cpu"):
        r = lathe("run", model, "--backend", b, *args, "--output", tmp_path / f"{b}.npz", cache=cache)
        assert r.returncode == 0, (b, r.stderr[-2000:])
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = z[z.files[0]].astype(np.float64)
    want, got = outs["interp"], outs["cpu"]
    assert np.abs(want).max() > 0 and len(np.unique(want)) > 20
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    code = kernels_of(model, tmp_path, cache)
    assert op in code and "0 host steps" in lathe("compile", model, cache=cache).stdout


def dq(name, q, scale, zp, axis=None):
    kw = {} if axis is None else {"axis": axis}
    return helper.make_node("DequantizeLinear", [q, scale, zp], [name], **kw)


@pytest.mark.parametrize("op", ["MatMul", "Gemm", "GemmT", "Conv"])
def test_qdq_products_run_on_int8_kernels(tmp_path, cache, op):
    """QuantizeLinear -> DequantizeLinear of the data, DequantizeLinear of an int8 weight per output
    channel, into MatMul / Gemm (transB, alpha, beta * C) / Conv (bias): the product is integer."""
    rng = np.random.default_rng(5)
    sx, zx = np.float32(0.02), np.uint8(117)
    inits = [const("sx", sx), const("zx", zx)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["qx"]), dq("dx", "qx", "sx", "zx")]
    if op == "Conv":
        xs, cout = [1, 16, 9, 9], 24
        w = ints(T.INT8, (cout, 16, 3, 3))
        inits += [const("w", w), const("sw", rng.uniform(0.001, 0.01, cout).astype(np.float32)),
                  const("zw", np.zeros(cout, np.int8)), const("bias", rng.standard_normal(cout).astype(np.float32))]
        nodes += [dq("dw", "w", "sw", "zw", axis=0), helper.make_node("Conv", ["dx", "dw", "bias"], ["y"], pads=[1, 1, 1, 1])]
        integer = "lt_conv2d_i8"
    else:
        k, n = 300, 40
        xs = [7, k] if op != "MatMul" else [2, 7, k]
        trans = op == "GemmT"
        w = ints(T.INT8, (n, k) if trans else (k, n))
        inits += [const("w", w), const("sw", rng.uniform(0.001, 0.01, n).astype(np.float32)),
                  const("zw", ints(T.INT8, (n,)) // 16)]
        nodes.append(dq("dw", "w", "sw", "zw", axis=0 if trans else 1))
        if op == "MatMul":
            nodes.append(helper.make_node("MatMul", ["dx", "dw"], ["y"]))
        else:
            inits.append(const("c", rng.standard_normal(n).astype(np.float32)))
            nodes.append(helper.make_node("Gemm", ["dx", "dw", "c"], ["y"], transB=int(trans), alpha=0.75, beta=1.5))
        integer = "lt_gemm_i8"
    mdl = save(tmp_path / "qdq.onnx", nodes, [helper.make_tensor_value_info("x", T.FLOAT, xs)],
               [helper.make_tensor_value_info("y", T.FLOAT, None)], inits)
    qdq_check(mdl, {"x": rng.standard_normal(xs).astype(np.float32)}, tmp_path, cache, integer)


@pytest.mark.parametrize("op", ["MatMulInteger", "ConvInteger"])
def test_bad_zero_points_are_refused_alike(tmp_path, cache, op):
    """The integer products compile (their inference checks every rule of the eval hook): a zero
    point of the wrong size is refused at shape inference with one message on every backend."""
    if op == "MatMulInteger":
        ins = [helper.make_tensor_value_info("a", T.UINT8, [3, 4])]
        inits = [const("b", ints(T.INT8, (4, 5))), const("az", np.array([1, 2], np.uint8)),
                 const("bz", np.zeros(5, np.int8))]
        node = helper.make_node(op, ["a", "b", "az", "bz"], ["y"])
    else:
        ins = [helper.make_tensor_value_info("a", T.UINT8, [1, 2, 5, 5])]
        inits = [const("b", ints(T.INT8, (3, 2, 3, 3))), const("az", np.uint8(1)), const("bz", np.zeros(2, np.int8))]
        node = helper.make_node(op, ["a", "b", "az", "bz"], ["y"])
    m = save(tmp_path / "bad.onnx", [node], ins, [helper.make_tensor_value_info("y", T.INT32, None)], inits)
    errs = set()
    for b in ("interp", "cpu", "loopir"):
        r = lathe("run", m, "--backend", b, cache=cache)
        assert r.returncode == 2, (b, r.stderr[-800:])
        errs.add(r.stderr.strip().splitlines()[-1])
    assert len(errs) == 1 and "zero_point" in errs.pop()
