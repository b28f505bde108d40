"""test_scatter_ops.py — ScatterElements (and opset 9's Scatter) and ScatterND compile, and agree with
the interpreter bit for bit.

Random data, random indices in the valid range (negative ones too, repeats included, so updates to one
element combine in order), every reduction (none, add, mul, max, min; NaNs for max and min), float32,
float16, int32, int64 (wrapping) and bool, indices smaller than data on other axes, index tuples of
every length (a slice, or single elements). On cpu and on the bounds-checked loopir backend the outputs
must equal the interpreter's exactly and the plan must have no host step when the indices are
constants or a model input; the CUDA translation unit must build with NVRTC. A model input index out
of range fails the run naming the node (indices the model computes: tests/test_index_checks.py).
"""
import os
import re
import subprocess
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
NP = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.INT32: np.int32,
      TensorProto.INT64: np.int64, TensorProto.BOOL: np.bool_}


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("scatter-cache")


def values(rng, shape, dt, nans=False):
    t = NP[dt]
    if t is np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(t, np.integer):
        lim = 1 << 30 if t is np.int64 else 1 << 20  # products and sums wrap
        return rng.integers(-lim, lim, shape).astype(t)
    v = rng.uniform(-3, 3, shape).astype(t)
    if nans:
        v.flat[rng.choice(v.size, max(1, v.size // 8), replace=False)] = np.nan
    return v


def elements_case(rng, data, ind, axis, red="none", dt=TensorProto.FLOAT, op="ScatterElements", opset=18):
    d = data[axis]
    idx = rng.integers(-d, d, ind).astype(np.int64)
    attrs = {"axis": axis}
    if red != "none":
        attrs["reduction"] = red
    node = helper.make_node(op, ["x", "i", "u"], ["y"], **attrs)
    return node, {"x": values(rng, data, dt, red in ("max", "min")), "i": idx,
                  "u": values(rng, ind, dt, red in ("max", "min"))}, dt, opset


def nd_case(rng, data, ind, red="none", dt=TensorProto.FLOAT, opset=18):
    k = ind[-1]
    idx = np.stack([rng.integers(-data[c], data[c], ind[:-1]) for c in range(k)], axis=-1).astype(np.int64)
    attrs = {} if red == "none" else {"reduction": red}
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], **attrs)
    ushape = list(ind[:-1]) + list(data[k:])
    return node, {"x": values(rng, data, dt, red in ("max", "min")), "i": idx,
                  "u": values(rng, ushape, dt, red in ("max", "min"))}, dt, opset


def model(node, feeds, dt, opset, const=("i",)):
    """The node with the inputs named in `const` as initializers, the rest graph inputs."""
    ins = [helper.make_tensor_value_info(k, TensorProto.INT64 if k == "i" else dt, list(v.shape))
           for k, v in feeds.items() if k not in const]
    inits = [numpy_helper.from_array(v, k) for k, v in feeds.items() if k in const]
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", dt, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


CASES = {
    "elements_axis0": lambda r: elements_case(r, [6, 5], [4, 5], 0),
    "elements_axis1_smaller": lambda r: elements_case(r, [4, 7, 3], [3, 5, 2], 1),
    "elements_last_axis_add": lambda r: elements_case(r, [3, 4, 9], [3, 4, 12], -1, "add"),
    "elements_mul": lambda r: elements_case(r, [5, 6], [5, 9], 1, "mul"),
    "elements_max_nan": lambda r: elements_case(r, [8, 6], [10, 6], 0, "max"),
    "elements_min_nan": lambda r: elements_case(r, [8, 6], [10, 3], 0, "min"),
    "elements_f16_add": lambda r: elements_case(r, [7, 8], [7, 11], 1, "add", TensorProto.FLOAT16),
    "elements_int32_mul_wraps": lambda r: elements_case(r, [4, 5], [9, 5], 0, "mul", TensorProto.INT32),
    "elements_int64_add": lambda r: elements_case(r, [4, 5], [4, 13], 1, "add", TensorProto.INT64),
    "elements_bool_add": lambda r: elements_case(r, [6, 4], [9, 4], 0, "add", TensorProto.BOOL),
    "elements_bool_mul": lambda r: elements_case(r, [6, 4], [9, 4], 0, "mul", TensorProto.BOOL),
    "elements_1d": lambda r: elements_case(r, [17], [30], 0, "add"),
    "scatter_opset9": lambda r: elements_case(r, [5, 4], [3, 4], 0, op="Scatter", opset=9),
    "nd_slices": lambda r: nd_case(r, [5, 4, 6], [3, 1]),
    "nd_slices_add": lambda r: nd_case(r, [5, 4, 6], [7, 1], "add"),
    "nd_pairs_mul": lambda r: nd_case(r, [3, 4, 6], [2, 3, 2], "mul"),
    "nd_elements_full_rank": lambda r: nd_case(r, [4, 5, 3], [9, 3], "add"),
    "nd_max_nan": lambda r: nd_case(r, [4, 6, 5], [6, 2], "max"),
    "nd_min_nan": lambda r: nd_case(r, [4, 6, 5], [6, 1], "min"),
    "nd_f16": lambda r: nd_case(r, [6, 8], [4, 1], "add", TensorProto.FLOAT16),
    "nd_int64_kv_cache": lambda r: nd_case(r, [2, 16, 4, 8], [2, 3, 2], "none", TensorProto.INT64),
    "nd_bool_max": lambda r: nd_case(r, [6, 5], [8, 1], "max", TensorProto.BOOL),
}


def run_all(path, feeds, tmp_path, cache, backends=("interp", "cpu", "loopir")):
    np.savez(tmp_path / "in.npz", **feeds)
    outs = {}
    for b in backends:
        r = lathe("run", path, "--backend", b, "--input", tmp_path / "in.npz", "--output", tmp_path / f"{b}.npz",
                  cache=cache)
        assert r.returncode == 0, f"{b}: {r.stderr[-1500:]}"
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = z["y"]
    return outs


def host_steps(path, cache):
    r = lathe("compile", path, "--print-plan", cache=cache)
    assert r.returncode == 0, r.stderr[-1500:]
    return int(re.search(r"(\d+) host steps", r.stdout).group(1)), r.stdout


@pytest.mark.parametrize("indices", ["constant", "input"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_scatter_matches_interpreter(case, indices, tmp_path, cache):
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    node, feeds, dt, opset = CASES[case](rng)
    const = ("i",) if indices == "constant" else ()
    path = tmp_path / "m.onnx"
    onnx.save(model(node, feeds, dt, opset, const), path)
    outs = run_all(path, {k: v for k, v in feeds.items() if k not in const}, tmp_path, cache)
    ref = outs["interp"]
    assert not np.array_equal(ref, feeds["x"]), "the scatter changed nothing: the test would prove nothing"
    for b in ("cpu", "loopir"):
        assert outs[b].dtype == ref.dtype and outs[b].shape == ref.shape, b
        np.testing.assert_array_equal(outs[b], ref, err_msg=b)
    steps, plan = host_steps(path, cache)
    assert steps == 0, plan
    if indices == "constant":
        out = tmp_path / "cuda"
        r = lathe("compile", path, "--target", "cuda", "-o", out, cache=cache)
        assert r.returncode == 0, r.stdout + r.stderr[-2000:]
        if "no cubin" in r.stdout + r.stderr:
            pytest.skip("NVRTC not found (scripts/setup.sh installs it)")
        assert (out / "model.cubin").stat().st_size > 0


def test_bad_input_index_fails_the_run(tmp_path, cache):
    """An index out of range in a model input: a clear error naming the node and the element, exit 1."""
    rng = np.random.default_rng(5)
    node, feeds, dt, opset = nd_case(rng, [5, 4], [3, 1], "add")
    node.name = "upd"
    path = tmp_path / "m.onnx"
    onnx.save(model(node, feeds, dt, opset, const=()), path)
    feeds["i"][2, 0] = 5
    np.savez(tmp_path / "in.npz", **feeds)
    for b in ("cpu", "interp"):
        r = lathe("run", path, "--backend", b, "--input", tmp_path / "in.npz", cache=cache)
        assert r.returncode != 0, b
        assert "upd" in r.stderr and "5" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "Sanitizer" not in r.stderr


def test_bad_constant_index_stays_an_error(tmp_path, cache):
    """A constant index out of range is not compiled: the run fails as the interpreter's does."""
    rng = np.random.default_rng(6)
    node, feeds, dt, opset = elements_case(rng, [4, 3], [2, 3], 0)
    feeds["i"][1, 2] = -5
    path = tmp_path / "m.onnx"
    onnx.save(model(node, feeds, dt, opset), path)
    np.savez(tmp_path / "in.npz", x=feeds["x"], u=feeds["u"])
    r = lathe("run", path, "--backend", "cpu", "--input", tmp_path / "in.npz", cache=cache)
    assert r.returncode != 0 and "-5" in r.stderr, r.stderr


def test_scatter_output_takes_no_epilogue(tmp_path, cache):
    """An elementwise op after a scatter is not fused into it (the scatter writes its output twice)."""
    rng = np.random.default_rng(9)
    node, feeds, dt, opset = nd_case(rng, [6, 7], [5, 1], "add")
    node.output[0] = "s"
    g = helper.make_graph([node, helper.make_node("Relu", ["s"], ["y"])], "g",
                          [helper.make_tensor_value_info(k, dt, list(v.shape)) for k, v in feeds.items() if k != "i"],
                          [helper.make_tensor_value_info("y", dt, None)], [numpy_helper.from_array(feeds["i"], "i")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    outs = run_all(path, {k: v for k, v in feeds.items() if k != "i"}, tmp_path, cache)
    for b in ("cpu", "loopir"):
        np.testing.assert_array_equal(outs[b], outs["interp"], err_msg=b)
