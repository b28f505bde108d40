"""test_scan_ops.py — CumSum / CumProd and TopK are compiled (src/lower/lower_scan.c), not run as host
steps, and give the interpreter's results bit for bit.

Hand-made models with random data (never only zeros): CumSum over the first, the last and a middle axis,
exclusive and reverse, float32/64, float16 and bfloat16 (through Casts fused into its kernel), int32
(wrapping) and int64 (position ids as exporters compute them: CumSum(attention_mask) - 1, masked), an
epilogue and a prologue fused into it; CumProd; TopK over a GPT-2 vocabulary (50257 logits, k from 1 to
50), odd shapes, every axis, k equal to the axis, smallest, sorted=0, ties (kept in index order), NaN,
infinities and signed zeros, integer types, float16, opset 9's `k` attribute, a prologue. Each runs on
cpu and on the bounds-checked loopir backend against the interpreter (and on cuda when a GPU is
present), `lathe compile` must report no host step, and the CUDA translation unit must build with
NVRTC. The onnx node tests of both ops are also taken with their axis / K frozen into initializers
(tests/frozen_nodes.py). Bad models (axis out of range, K negative or past the axis) are refused at
shape inference naming the node; a K or axis known only at run time leaves a host step.
"""
import glob
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

from frozen_nodes import NODE, frozen, host_steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
NODE_CASES = sorted(os.path.basename(d) for pat in ("cumsum*", "top_k*")
                    for d in glob.glob(os.path.join(NODE, "test_" + pat)) if os.path.isdir(d))


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("scan-cache")


@pytest.fixture(scope="module")
def gpu(cache):
    return lathe("ceilings", "--backend", "cuda", cache=cache).returncode == 0


def vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "g", inputs, outputs, [nh.from_array(v, k) for k, v in inits])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


NP = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.INT32: np.int32,
      TP.INT64: np.int64, TP.UINT8: np.uint8}


def cumsum(shape, axis, dt=TP.FLOAT, op="CumSum", **attrs):
    return model([h.make_node(op, ["x", "ax"], ["y"], name="scan", **attrs)], [vi("x", dt, shape)],
                 [vi("y", dt, None)], [("ax", np.array(axis, np.int64))])


def cumsum_narrow(shape, axis, dt, **attrs):
    """float32 in and out, CumSum in float16 / bfloat16 between two Casts (both fused into its kernel)."""
    nodes = [h.make_node("Cast", ["x"], ["xn"], to=dt), h.make_node("CumSum", ["xn", "ax"], ["yn"], name="scan", **attrs),
             h.make_node("Cast", ["yn"], ["y"], to=TP.FLOAT)]
    return model(nodes, [vi("x", TP.FLOAT, shape)], [vi("y", TP.FLOAT, None)], [("ax", np.array(axis, np.int32))])


def position_ids(shape):
    """position_ids = CumSum(attention_mask, -1) - 1, set to 1 where the mask is 0 (Hugging Face)."""
    nodes = [h.make_node("CumSum", ["mask", "ax"], ["cs"], name="scan"), h.make_node("Sub", ["cs", "one"], ["p"]),
             h.make_node("Equal", ["mask", "zero"], ["pad"]), h.make_node("Where", ["pad", "one", "p"], ["pos"])]
    return model(nodes, [vi("mask", TP.INT64, shape)], [vi("pos", TP.INT64, None)],
                 [("ax", np.array(-1, np.int64)), ("one", np.array(1, np.int64)), ("zero", np.array(0, np.int64))])


def cumsum_fused(shape):
    """A scaling before (a prologue) and a ReLU of the sum minus a constant after (an epilogue): one kernel."""
    nodes = [h.make_node("Mul", ["x", "s"], ["e"]), h.make_node("CumSum", ["e", "ax"], ["c"], name="scan", reverse=1),
             h.make_node("Sub", ["c", "m"], ["d"]), h.make_node("Relu", ["d"], ["y"])]
    return model(nodes, [vi("x", TP.FLOAT, shape)], [vi("y", TP.FLOAT, None)],
                 [("ax", np.array(1, np.int64)), ("s", np.array(3.1, np.float32)), ("m", np.array(0.5, np.float32))])


def topk(shape, k, dt=TP.FLOAT, opset=17, **attrs):
    if opset < 10:
        node = h.make_node("TopK", ["x"], ["v", "i"], name="topk", k=k, **attrs)
        inits = []
    else:
        node = h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", **attrs)
        inits = [("k", np.array([k], np.int64))]
    return model([node], [vi("x", dt, shape)], [vi("v", dt, None), vi("i", TP.INT64, None)], inits, opset)


def topk_scaled(shape, k):
    """Logits divided by a temperature (fused into the TopK kernel), the values then a Softmax (p: its
    exp is the compiled kernel's, compared within 1e-6)."""
    nodes = [h.make_node("Div", ["x", "t"], ["s"]), h.make_node("TopK", ["s", "k"], ["v", "i"], name="topk"),
             h.make_node("Softmax", ["v"], ["p"])]
    return model(nodes, [vi("x", TP.FLOAT, shape)],
                 [vi("v", TP.FLOAT, None), vi("i", TP.INT64, None), vi("p", TP.FLOAT, None)],
                 [("t", np.array(0.7, np.float32)), ("k", np.array([k], np.int64))])


def data(shape, dt, kind, rng):
    """Random data of numpy dtype dt: 'normal', 'ties' (a few integer values), 'special' (NaN, +-inf,
    +-0 among normals and ties), 'mask' (0/1), 'big' (int32 sums that wrap), 'near1' (products)."""
    if kind == "mask":
        x = (rng.uniform(size=shape) < 0.8).astype(dt)
        x[..., 0] = 1
        return x
    if kind == "big":
        return rng.integers(2 ** 29, 2 ** 31 - 1, shape).astype(dt)
    if kind == "near1":
        return rng.uniform(0.5, 1.5, shape).astype(dt)
    if np.issubdtype(dt, np.integer):
        lo, hi = (0, 250) if dt == np.uint8 else (-6, 6) if kind == "ties" else (-10 ** 6, 10 ** 6)
        return rng.integers(lo, hi, shape).astype(dt)
    if kind == "ties":
        return rng.integers(-3, 4, shape).astype(dt)
    x = rng.standard_normal(shape).astype(dt)
    if kind == "special":
        u = rng.uniform(size=shape)
        x[u < 0.3] = np.round(x[u < 0.3])
        x[u < 0.12] = np.nan
        x[(u >= 0.12) & (u < 0.15)] = np.inf
        x[(u >= 0.15) & (u < 0.18)] = -np.inf
        x[(u >= 0.18) & (u < 0.21)] = -0.0
    return x


def outputs(m, feeds, backends, tmp_path, cache):
    """{backend: {output name: array}} of `lathe run` on each backend with the given inputs."""
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    np.savez(tmp_path / "in.npz", **feeds)
    res = {}
    for b in backends:
        r = lathe("run", path, "--backend", b, "--input", tmp_path / "in.npz", "--output", tmp_path / f"{b}.npz",
                  cache=cache)
        assert r.returncode == 0, f"{b}: {r.stderr[-2000:]}"
        with np.load(tmp_path / f"{b}.npz") as z:
            res[b] = {k: z[k] for k in z.files}
    return res


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check(m, feeds, tmp_path, cache, gpu, host=0, close=()):
    backends = ("interp", "cpu", "loopir") + (("cuda",) if gpu else ())
    outs = outputs(m, feeds, backends, tmp_path, cache)
    ref = outs["interp"]
    for b in backends[1:]:
        assert sorted(outs[b]) == sorted(ref), b
        for k in ref:
            if k in close:
                np.testing.assert_allclose(outs[b][k], ref[k], rtol=1e-6, atol=1e-7, err_msg=f"{b} '{k}'")
            else:
                assert same_bits(outs[b][k], ref[k]), f"{b} '{k}':\n{outs[b][k]}\n!=\n{ref[k]}"
    steps, plan = host_steps(lambda *a: lathe(*a, cache=cache), tmp_path / "m.onnx")
    assert steps == host, plan
    if host:
        return ref
    out = tmp_path / "cuda"
    r = lathe("compile", tmp_path / "m.onnx", "--target", "cuda", "-o", out, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    if "no cubin" not in r.stdout + r.stderr:  # NVRTC present
        assert (out / "model.cubin").stat().st_size > 0
    return ref


# name: (model, {input: (shape, numpy dtype, data kind)})
CUMSUM = {
    "1d": (cumsum([37], 0), {"x": ([37], np.float32, "normal")}),
    "2d_axis0": (cumsum([33, 4], 0), {"x": ([33, 4], np.float32, "normal")}),
    "2d_last": (cumsum([4, 33], -1), {"x": ([4, 33], np.float32, "normal")}),
    "3d_middle": (cumsum([3, 7, 5], 1), {"x": ([3, 7, 5], np.float32, "normal")}),
    "3d_middle_exclusive": (cumsum([3, 7, 5], 1, exclusive=1), {"x": ([3, 7, 5], np.float32, "normal")}),
    "3d_middle_reverse": (cumsum([3, 7, 5], -2, reverse=1), {"x": ([3, 7, 5], np.float32, "normal")}),
    "3d_first_exclusive_reverse": (cumsum([9, 2, 3], -3, exclusive=1, reverse=1),
                                   {"x": ([9, 2, 3], np.float32, "normal")}),
    "long_rows": (cumsum([3, 5001], 1), {"x": ([3, 5001], np.float32, "normal")}),
    "many_rows": (cumsum([301, 67], 1), {"x": ([301, 67], np.float32, "normal")}),
    "float64": (cumsum([5, 11], 1, TP.DOUBLE, reverse=1), {"x": ([5, 11], np.float64, "normal")}),
    "float16": (cumsum([6, 130], 1, TP.FLOAT16, exclusive=1), {"x": ([6, 130], np.float16, "normal")}),
    "float16_casts": (cumsum_narrow([4, 300], 1, TP.FLOAT16), {"x": ([4, 300], np.float32, "normal")}),
    "bfloat16_casts": (cumsum_narrow([4, 300], 0, TP.BFLOAT16, reverse=1), {"x": ([4, 300], np.float32, "normal")}),
    "int32": (cumsum([5, 9], 1, TP.INT32), {"x": ([5, 9], np.int32, "normal")}),
    "int32_wraps": (cumsum([3, 40], 1, TP.INT32, exclusive=1), {"x": ([3, 40], np.int32, "big")}),
    "int64_axis0": (cumsum([17, 3], 0, TP.INT64, reverse=1), {"x": ([17, 3], np.int64, "normal")}),
    "position_ids": (position_ids([3, 57]), {"mask": ([3, 57], np.int64, "mask")}),
    "fused": (cumsum_fused([4, 19, 3]), {"x": ([4, 19, 3], np.float32, "normal")}),
    "cumprod": (cumsum([4, 23], 1, TP.DOUBLE, op="CumProd"), {"x": ([4, 23], np.float64, "near1")}),
    "cumprod_int64_exclusive": (cumsum([5, 6], 0, TP.INT64, op="CumProd", exclusive=1),
                                {"x": ([5, 6], np.int64, "ties")}),
}

TOPK = {
    "vocab_k1": (topk([1, 50257], 1), {"x": ([1, 50257], np.float32, "normal")}),
    "vocab_k5": (topk([1, 50257], 5), {"x": ([1, 50257], np.float32, "normal")}),
    "vocab_k50": (topk([2, 50257], 50), {"x": ([2, 50257], np.float32, "normal")}),
    "vocab_k50_ties": (topk([1, 50257], 50), {"x": ([1, 50257], np.float32, "ties")}),
    "vocab_k17_smallest_special": (topk([1, 50257], 17, largest=0), {"x": ([1, 50257], np.float32, "special")}),
    "1d_k_all": (topk([13], 13), {"x": ([13], np.float32, "normal")}),
    "odd_axis0": (topk([7, 5, 3], 4, axis=0), {"x": ([7, 5, 3], np.float32, "normal")}),
    "odd_middle": (topk([3, 11, 5], 6, axis=1), {"x": ([3, 11, 5], np.float32, "normal")}),
    "odd_middle_negative": (topk([3, 11, 5], 11, axis=-2, largest=0), {"x": ([3, 11, 5], np.float32, "ties")}),
    "odd_last_sorted0": (topk([5, 3, 9], 3, sorted=0), {"x": ([5, 3, 9], np.float32, "normal")}),
    "ties_largest": (topk([6, 40], 9), {"x": ([6, 40], np.float32, "ties")}),
    "ties_smallest": (topk([6, 40], 9, largest=0), {"x": ([6, 40], np.float32, "ties")}),
    "nan_largest": (topk([8, 31], 12), {"x": ([8, 31], np.float32, "special")}),
    "nan_smallest": (topk([8, 31], 31, largest=0), {"x": ([8, 31], np.float32, "special")}),
    "many_rows": (topk([300, 20], 3), {"x": ([300, 20], np.float32, "special")}),
    "float16_nan": (topk([4, 77], 10, TP.FLOAT16), {"x": ([4, 77], np.float16, "special")}),
    "float64_axis0": (topk([29, 3], 8, TP.DOUBLE, axis=0, largest=0), {"x": ([29, 3], np.float64, "special")}),
    "int32_ties": (topk([5, 30], 7, TP.INT32), {"x": ([5, 30], np.int32, "ties")}),
    "int64_smallest": (topk([5, 30], 7, TP.INT64, largest=0), {"x": ([5, 30], np.int64, "ties")}),
    "uint8": (topk([3, 64], 5, TP.UINT8), {"x": ([3, 64], np.uint8, "normal")}),
    "opset9_attribute": (topk([4, 21], 6, opset=9), {"x": ([4, 21], np.float32, "ties")}),
    "opset10": (topk([4, 21], 3, opset=10, axis=0), {"x": ([4, 21], np.float32, "normal")}),
    "prologue": (topk_scaled([2, 1000], 40), {"x": ([2, 1000], np.float32, "normal")}),
    # float32 with k > 16: the heap of integer keys (NaN, +-inf and +-0 among ties)
    "key_special_largest": (topk([6, 200], 40), {"x": ([6, 200], np.float32, "special")}),
    "key_special_smallest": (topk([5, 300], 25, largest=0), {"x": ([5, 300], np.float32, "special")}),
    "key_ties_axis0": (topk([90, 3], 20, axis=0), {"x": ([90, 3], np.float32, "ties")}),
}


def feeds_of(spec, seed):
    rng = np.random.default_rng(seed)
    return {name: data(shape, dt, kind, rng) for name, (shape, dt, kind) in spec.items()}


@pytest.mark.parametrize("case", sorted(CUMSUM))
def test_cumsum(case, tmp_path, cache, gpu):
    m, spec = CUMSUM[case]
    feeds = feeds_of(spec, 11)
    assert all(np.any(v != 0) for v in feeds.values())
    check(m, feeds, tmp_path, cache, gpu)


@pytest.mark.parametrize("case", sorted(TOPK))
def test_topk(case, tmp_path, cache, gpu):
    m, spec = TOPK[case]
    feeds = feeds_of(spec, 5)
    ref = check(m, feeds, tmp_path, cache, gpu, close=("p",))
    node = next(n for n in m.graph.node if n.op_type == "TopK")
    if node.input[0] == "x":  # the interpreter's answer: a stable sort, NaN above every number
        attrs = {a.name: h.get_attribute_value(a) for a in node.attribute}
        axis, largest = attrs.get("axis", -1), attrs.get("largest", 1)
        x = np.moveaxis(feeds["x"], axis, -1)
        rows = x.reshape(-1, x.shape[-1])
        k = ref["i"].shape[axis]
        want = np.empty((rows.shape[0], k), np.int64)
        for r, row in enumerate(rows):
            vals = [float(v) if row.dtype.kind == "f" else int(v) for v in row]
            if largest:
                key = [(0, 0) if v != v else (1, -v) for v in vals]
            else:
                key = [(1, 0) if v != v else (0, v) for v in vals]
            want[r] = sorted(range(len(vals)), key=key.__getitem__)[:k]
        want = np.moveaxis(want.reshape(x.shape[:-1] + (k,)), -1, axis)
        np.testing.assert_array_equal(ref["i"], want)


@pytest.mark.parametrize("case", NODE_CASES)
def test_node_test_frozen(case, tmp_path, cache, gpu):
    """The node test with its axis / K an initializer: compiled, the interpreter's output."""
    path = tmp_path / "frozen.onnx"
    x = frozen(case, str(path))
    rng = np.random.default_rng(3)
    if x.dtype.kind == "f":
        x = rng.uniform(-4, 4, x.shape).round(1).astype(x.dtype)  # ties too
    else:
        x = rng.integers(0 if x.dtype.kind == "u" else -9, 9, x.shape).astype(x.dtype)
    check(onnx.load(path), {onnx.load(path).graph.input[0].name: x}, tmp_path, cache, gpu)


@pytest.mark.parametrize("m,msg", [
    (cumsum([4, 5], 2), "axis 2 is out of range for rank 2"),
    (cumsum([4, 5], -3), "axis -3 is out of range for rank 2"),
    (model([h.make_node("CumSum", ["x", "ax"], ["y"], name="scan")], [vi("x", TP.FLOAT, [4, 5])],
           [vi("y", TP.FLOAT, None)], [("ax", np.array([0, 1], np.int64))]), "axis must be a scalar"),
    (model([h.make_node("CumSum", ["x", "ax"], ["y"], name="scan")], [vi("x", TP.FLOAT, [4, 5])],
           [vi("y", TP.FLOAT, None)], [("ax", np.array(1.0, np.float32))]), "axis must be int32 or int64"),
    (topk([4, 50], 51), "K 51 out of range [0, 50] for axis 1"),
    (topk([4, 50], -1), "K -1 out of range [0, 50] for axis 1"),
    (topk([4, 50], 3, axis=2), "axis 2 is out of range for rank 2"),
    (topk([4, 50], 60, opset=9, axis=0), "K 60 out of range [0, 4] for axis 0"),
    (model([h.make_node("TopK", ["x"], ["v", "i"], name="topk")], [vi("x", TP.FLOAT, [4, 5])],
           [vi("v", TP.FLOAT, None), vi("i", TP.INT64, None)], opset=9), "attribute k is missing"),
    (model([h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")], [vi("x", TP.FLOAT, [4, 5])],
           [vi("v", TP.FLOAT, None), vi("i", TP.INT64, None)], [("k", np.array([1, 2], np.int64))]),
     "K must be a one-element integer tensor"),
])
def test_bad_model_refused(m, msg, tmp_path, cache):
    path = tmp_path / "bad.onnx"
    onnx.save(m, path)
    name = m.graph.node[0].name
    for cmd in (["compile", path], ["run", path, "--backend", "interp"]):
        r = lathe(*cmd, cache=cache)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"'{name}'" in r.stderr and msg in r.stderr, r.stderr


def test_runtime_k_compiles_runtime_axis_stays_host_step(tmp_path, cache, gpu):
    """K given at run time: TopK compiles with padded outputs (the graph split after it, src/compile/split.h);
    the CumSum after it, whose axis is given at run time, is the rest's host step (the interpreter checks
    it): one host step here, the same results, and a K out of range refused naming the node."""
    m = model([h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk"),
               h.make_node("CumSum", ["v", "ax"], ["c"], name="scan")],
              [vi("x", TP.FLOAT, [3, 40]), vi("k", TP.INT64, [1]), vi("ax", TP.INT64, [])],
              [vi("c", TP.FLOAT, None), vi("i", TP.INT64, None)])
    feeds = {"x": data([3, 40], np.float32, "special", np.random.default_rng(2)), "k": np.array([7], np.int64),
             "ax": np.array(1, np.int64)}
    check(m, feeds, tmp_path, cache, gpu, host=1)
    feeds["k"] = np.array([41], np.int64)
    np.savez(tmp_path / "in.npz", **feeds)
    r = lathe("run", tmp_path / "m.onnx", "--backend", "cpu", "--input", tmp_path / "in.npz", cache=cache)
    assert r.returncode == 2 and "'topk'" in r.stderr and "K 41 out of range [0, 40]" in r.stderr, r.stderr


@pytest.mark.parametrize("largest", [1, 0])
def test_runtime_k_key_heap(largest, tmp_path, cache, gpu):
    """K given at run time over rows of 150 float32 (the heap of integer keys, k unknown when compiled):
    NaN, +-inf and +-0 among ties, k from 1 to the whole row, bit for bit against the interpreter."""
    m = model([h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", largest=largest)],
              [vi("x", TP.FLOAT, [4, 150]), vi("k", TP.INT64, [1])], [vi("v", TP.FLOAT, None), vi("i", TP.INT64, None)])
    x = data([4, 150], np.float32, "special", np.random.default_rng(9))
    x[1] = np.round(x[1] * 2) / 2  # more ties
    for k in (1, 17, 64, 150):
        check(m, {"x": x, "k": np.array([k], np.int64)}, tmp_path, cache, gpu, host=1)
