"""test_padded_unique.py — UniquePadded compiled as one kernel (src/lower/lower_unique.c).

The split stage (src/compile/split.h) turns a flattened Unique of numbers on a static input into
UniquePadded; its kernel heap-sorts the element indices and scans the groups (with sorted=0 a fourth pass
numbers them in the order of first occurrence; with an axis the items are slices compared element by
element, and Y is copied compact once the count is known). Checked here against the
reference interpreter, bit for bit (floats compared by their bits: -0 against 0, NaN payloads):
  - int8/int32/int64/uint8/uint64/bool/float16/float32/float64 inputs of one element, of a few dims
    (flattened) and long ones: many duplicates, all distinct, all equal, extreme values (uint64 above
    2^63, int64's limits), floats with -0 and 0 in either order, NaNs (with payloads), infinities;
  - the group of -0 and 0 holds whichever came first;
  - a fused elementwise prologue (Unique(Abs(x)), Unique(Neg(x)), Unique(Cast(x)) to float16, bfloat16
    and int32);
  - Unique with only some outputs used (Y alone, Y and counts, inverse_indices alone, indices alone);
  - compiled nodes after it (the rest, compiled at run time for the count);
  - the kernel emitted for CUDA builds with NVRTC (no GPU needed).
The compile report proves the kernel: the padded op counted, and the rest the only host step.
The library comes from $LATHE_LIBRARY (default build/liblathe.so), the binary from $LATHE_BIN.
"""
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("LATHE_LIBRARY", os.path.join(ROOT, "build", "liblathe.so"))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper as h  # noqa: E402

import lathe  # noqa: E402

ONNX_TYPE = {np.int8: T.INT8, np.int32: T.INT32, np.int64: T.INT64, np.uint8: T.UINT8, np.uint64: T.UINT64,
             np.bool_: T.BOOL, np.float16: T.FLOAT16, np.float32: T.FLOAT, np.float64: T.DOUBLE}
OUTS = ["u", "ix", "inv", "cnt"]


def unique_model(path, dtype, shape, outs=OUTS, used=None, before=None, after=(), sorted_=1, axis=None):
    """Unique of x (or of `before`'s output "xp", a node computing it from x) with outputs outs ("" for
    absent ones); the graph returns `used` (default: every output named) and what the `after` nodes make.
    sorted_=0: the groups in the order of first occurrence; axis: of the slices along it."""
    src = "xp" if before is not None else "x"
    attrs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    nodes = ([before] if before is not None else []) + [h.make_node("Unique", [src], list(outs), **attrs)] + list(after)
    used = [o for o in outs if o] if used is None else used
    g = h.make_graph(nodes, "uq", [h.make_tensor_value_info("x", ONNX_TYPE[dtype], list(shape))],
                     [h.make_tensor_value_info(o, T.UNDEFINED, None) for o in used])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    return str(path)


def compile_both(path):
    model, ref = lathe.compile(path, cache_dir=False), lathe.compile(path, backend="interp")
    report = model.report
    assert "(1 compiled with a padded output" in report, report
    m = re.search(r"(\d+) kernels \(\+\d+ weight packing\), (\d+) host steps", report)
    # the one host step is the rest (DataDependentRest); UniquePadded itself runs as a kernel
    assert m and int(m.group(1)) >= 1 and int(m.group(2)) == 1, report
    assert "fallbacks:" not in report, report
    return model, ref


def bits(a):
    """Floats as their bits (so -0 differs from 0 and NaN payloads count); others as they are."""
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def check(model, ref, x, what=""):
    got, want = model.run({"x": x}), ref.run({"x": x})
    assert set(got) == set(want), what
    for name in want:
        assert got[name].dtype == want[name].dtype, f"{what}: {name} {got[name].dtype} vs {want[name].dtype}"
        assert got[name].shape == want[name].shape, f"{what}: {name} {got[name].shape} vs {want[name].shape}"
        np.testing.assert_array_equal(bits(got[name]), bits(want[name]), err_msg=f"{what}: {name} of {x.ravel()[:16]}")
    return got


# ---- inputs ----

def _f16_nan(payload):
    return np.array([0x7c00 | payload], np.uint16).view(np.float16)[0]


def special_floats(dtype, signaling=True):
    """Signed zeros, infinities and NaNs of dtype (quiet, negative, with payloads and, for float32 when
    `signaling`, a signaling one: copied as it is, but quieted where a prologue computes on it, by the
    interpreter and not by the compiled code, a difference of every compiled float op)."""
    nans = [np.nan, -np.nan]
    if dtype == np.float16:
        nans += [_f16_nan(0x201), -_f16_nan(0x3ff)]
    elif dtype == np.float32:
        nans += [np.array([0x7fc00123], np.uint32).view(np.float32)[0]]
        nans += [np.array([0xffa00000], np.uint32).view(np.float32)[0]] if signaling else []
    else:
        nans += [np.array([0x7ff8000000000abc], np.uint64).view(np.float64)[0]]
    return np.array([0.0, -0.0, np.inf, -np.inf, *nans], dtype)


def int_extremes(dtype):
    info = np.iinfo(dtype)
    vals = [info.min, info.max, info.min + 1, info.max - 1, 0, 1]
    if dtype == np.uint64:
        vals += [2**63, 2**63 - 1, 2**63 + 1]
    elif info.min < 0:
        vals += [-1]
    return np.array(vals, dtype)


def inputs(dtype, shape, rng):
    """Named inputs of shape: many duplicates, all distinct (as far as the dtype allows), all equal,
    extremes / special values mixed with duplicates."""
    n = int(np.prod(shape))
    out = {}
    if dtype == np.bool_:
        out["random"] = rng.integers(0, 2, n).astype(np.bool_)
        out["all true"] = np.ones(n, np.bool_)
        out["all false"] = np.zeros(n, np.bool_)
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo = max(info.min, -20)
        out["duplicates"] = rng.integers(lo, 20, n).astype(dtype)
        span = min(int(info.max) - lo + 1, 2**31)
        out["distinct"] = (rng.permutation(n) % span + lo).astype(dtype)
        out["all equal"] = np.full(n, rng.integers(lo, 20), dtype)
        ext = int_extremes(dtype)
        out["extremes"] = np.where(rng.random(n) < 0.5, rng.choice(ext, n), rng.integers(lo, 20, n).astype(dtype)).astype(dtype)
    else:
        dup = rng.integers(-8, 8, n).astype(dtype) / dtype(2)
        out["duplicates"] = dup
        out["distinct"] = rng.permutation(n).astype(dtype) / dtype(4) - dtype(n / 8)
        out["normal"] = rng.standard_normal(n).astype(dtype)
        out["all equal"] = np.full(n, rng.standard_normal(), dtype)
        sp = special_floats(dtype)
        out["specials"] = np.where(rng.random(n) < 0.4, rng.choice(sp, n), dup).astype(dtype)
        out["all nan"] = np.full(n, np.nan, dtype)
        out["zeros"] = rng.choice(np.array([0.0, -0.0], dtype), n)
    return {k: v.reshape(shape) for k, v in out.items()}


DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.bool_, np.float16, np.float32, np.float64]
SHAPES = [(1,), (2, 3, 7), (1500,)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unique_matches_interpreter(dtype, shape, tmp_path):
    model, ref = compile_both(unique_model(tmp_path / "u.onnx", dtype, shape))
    rng = np.random.default_rng(zlib.crc32(f"{np.dtype(dtype).name} {shape}".encode()))
    for what, x in inputs(dtype, shape, rng).items():
        got = check(model, ref, x, f"{np.dtype(dtype).name} {shape} {what}")
        assert got["inv"].shape == (x.size,) and got["cnt"].sum() == x.size


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unsorted_matches_interpreter(dtype, shape, tmp_path):
    """sorted=0: the groups in the order of their first occurrences (a fourth pass numbers them)."""
    model, ref = compile_both(unique_model(tmp_path / "u0.onnx", dtype, shape, sorted_=0))
    rng = np.random.default_rng(zlib.crc32(f"unsorted {np.dtype(dtype).name} {shape}".encode()))
    for what, x in inputs(dtype, shape, rng).items():
        got = check(model, ref, x, f"sorted=0 {np.dtype(dtype).name} {shape} {what}")
        n = got["ix"].size
        assert np.all(np.diff(got["ix"]) > 0) if n > 1 else True  # first occurrences, in order


@pytest.mark.parametrize("use", ["Y and counts (no inverse: a scratch leader buffer)", "inverse alone"])
def test_unsorted_some_outputs(use, tmp_path):
    outs, used = (["u", "", "", "cnt"], ["u", "cnt"]) if use.startswith("Y") else (["u", "", "inv", ""], ["inv"])
    model, ref = compile_both(unique_model(tmp_path / "o0.onnx", np.int64, (4, 30), outs=outs, used=used, sorted_=0))
    rng = np.random.default_rng(11)
    for what, x in inputs(np.int64, (4, 30), rng).items():
        check(model, ref, x, f"sorted=0 {use}: {what}")


def slice_inputs(dtype, shape, axis, rng):
    """Slices along the axis drawn from a few distinct ones (so groups form), plus per dtype: floats
    with -0 against 0 and NaNs inside slices, integers at their extremes."""
    a = axis % len(shape)
    n = shape[a]
    out = {}
    for distinct in (1, 2, 3):
        base = np.moveaxis(rng.integers(-2, 3, (distinct,) + shape[:a] + shape[a + 1:]), 0, a)
        pick = rng.integers(0, distinct, n)
        out[f"{distinct} distinct slices"] = np.take(base, pick, axis=a).astype(dtype)
    out["all distinct"] = rng.integers(-50, 50, shape).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        x = out["2 distinct slices"].copy()
        flat = np.moveaxis(x, a, 0).reshape(n, -1)
        flat[0, 0], flat[-1, 0] = dtype(0.0), dtype(-0.0)
        flat[n // 2, -1] = np.nan
        out["signed zeros and a NaN"] = np.moveaxis(flat.reshape((n,) + shape[:a] + shape[a + 1:]), 0, a)
    elif dtype not in (np.bool_,):
        ext = int_extremes(dtype)
        out["extremes"] = np.take(np.moveaxis(rng.choice(ext, (2,) + shape[:a] + shape[a + 1:]), 0, a),
                                  rng.integers(0, 2, n), axis=a).astype(dtype)
    return out


AXIS_CASES = [((6, 5), 0), ((6, 5), 1), ((3, 7, 2), 1), ((4, 3, 5), -1), ((1, 4), 0)]


AXIS_PARAMS = [(d, c) for d in (np.int8, np.int64, np.uint64, np.float16, np.float32, np.float64) for c in AXIS_CASES] + \
              [(np.bool_, c) for c in AXIS_CASES[:2]]


@pytest.mark.parametrize("sorted_", [1, 0], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("dtype,case", AXIS_PARAMS,
                         ids=[f"{np.dtype(d).name}-{'x'.join(map(str, c[0]))}_axis{c[1]}" for d, c in AXIS_PARAMS])
def test_axis_matches_interpreter(dtype, case, sorted_, tmp_path):
    """Unique of the slices along an axis: compared element by element in the kernel, Y copied compact
    (the axis `count` long) once the count is known."""
    shape, axis = case
    model, ref = compile_both(unique_model(tmp_path / "ax.onnx", dtype, shape, sorted_=sorted_, axis=axis))
    rng = np.random.default_rng(zlib.crc32(f"axis {np.dtype(dtype).name} {case} {sorted_}".encode()))
    for what, x in slice_inputs(dtype, shape, axis, rng).items():
        got = check(model, ref, x, f"axis {axis} sorted={sorted_} {np.dtype(dtype).name} {shape} {what}")
        assert got["cnt"].sum() == shape[axis]


@pytest.mark.parametrize("use", ["Y alone", "no Y (no copy)", "Y and inverse (first slices in scratch)"])
def test_axis_some_outputs(use, tmp_path):
    outs, used = {"Y alone": (["u", "", "", ""], ["u"]), "no Y (no copy)": (["u", "ix", "inv", "cnt"], ["ix", "inv", "cnt"]),
                  "Y and inverse (first slices in scratch)": (["u", "", "inv", ""], ["u", "inv"])}[use]
    for sorted_ in (1, 0):
        model, ref = compile_both(unique_model(tmp_path / f"axo{sorted_}.onnx", np.float32, (3, 8, 2), outs=outs, used=used,
                                               sorted_=sorted_, axis=1))
        rng = np.random.default_rng(13)
        for what, x in slice_inputs(np.float32, (3, 8, 2), 1, rng).items():
            check(model, ref, x, f"axis, {use}, sorted={sorted_}: {what}")


def test_axis_nodes_after_unique(tmp_path):
    """Unique rows (axis 0) summed per row through compiled nodes (the rest, compiled for the count)."""
    axes = h.make_tensor("axes_v", T.INT64, [1], [1])
    after = [h.make_node("Constant", [], ["axes_c"], value=axes), h.make_node("ReduceSum", ["u", "axes_c"], ["y"], keepdims=0)]
    path = unique_model(tmp_path / "axa.onnx", np.float32, (7, 3), used=["y", "cnt"], after=after, axis=0)
    model, ref = compile_both(path)
    rng = np.random.default_rng(17)
    for what, x in slice_inputs(np.float32, (7, 3), 0, rng).items():
        check(model, ref, x, f"rows then ReduceSum: {what}")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_signed_zeros_group_holds_the_first(dtype, tmp_path):
    model, ref = compile_both(unique_model(tmp_path / "z.onnx", dtype, (6,)))
    for first in (0.0, -0.0):
        x = np.array([3.0, first, -first, np.nan, -first, first], dtype)
        got = check(model, ref, x, f"first {first}")
        assert bits(got["u"][0]) == bits(np.array(first, dtype)), got["u"]
        np.testing.assert_array_equal(got["ix"], [1, 0, 3])
        np.testing.assert_array_equal(got["cnt"], [4, 1, 1])


def test_nans_and_infinities_order(tmp_path):
    model, ref = compile_both(unique_model(tmp_path / "n.onnx", np.float32, (9,)))
    x = np.array([np.nan, np.inf, -np.inf, 1.0, np.nan, -np.inf, 0.0, -np.nan, np.inf], np.float32)
    got = check(model, ref, x)
    np.testing.assert_array_equal(got["u"], [-np.inf, 0.0, 1.0, np.inf, np.nan])
    np.testing.assert_array_equal(got["ix"], [2, 6, 3, 1, 0])
    np.testing.assert_array_equal(got["cnt"], [2, 1, 1, 2, 3])
    np.testing.assert_array_equal(got["inv"], [4, 3, 0, 2, 4, 0, 1, 4, 3])


PROLOGUES = {
    "abs": (np.float32, lambda: h.make_node("Abs", ["x"], ["xp"])),
    "neg int": (np.int64, lambda: h.make_node("Neg", ["x"], ["xp"])),
    "cast to float16": (np.float32, lambda: h.make_node("Cast", ["x"], ["xp"], to=T.FLOAT16)),
    "cast to int32": (np.float32, lambda: h.make_node("Cast", ["x"], ["xp"], to=T.INT32)),
}


@pytest.mark.parametrize("name", sorted(PROLOGUES))
def test_fused_prologue(name, tmp_path):
    dtype, node = PROLOGUES[name]
    shape = (4, 50)
    model, ref = compile_both(unique_model(tmp_path / "p.onnx", dtype, shape, before=node()))
    assert re.search(r"\b1 kernels\b", model.report), model.report  # the prologue is in Unique's kernel
    rng = np.random.default_rng(11)
    if dtype == np.int64:
        feeds = [rng.integers(-30, 30, shape), rng.integers(-2**40, 2**40, shape)]
    elif name == "cast to int32":
        feeds = [rng.uniform(-40, 40, shape), rng.integers(-5, 5, shape) / 2]
    else:
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        x.ravel()[::9] = rng.choice(special_floats(np.float32, signaling=False), x.size // 9 + 1)
        feeds = [x, rng.integers(-6, 6, shape) / 2, rng.standard_normal(shape) * 1e-4]  # 1e-4: float16 ties
    for i, x in enumerate(feeds):
        check(model, ref, np.asarray(x).astype(dtype), f"{name} feed {i}")


def test_bfloat16_keys(tmp_path):
    """Unique of a bfloat16 computed in the kernel (a Cast of float32 input), Y read back as float32."""
    before = h.make_node("Cast", ["x"], ["xp"], to=T.BFLOAT16)
    after = [h.make_node("Cast", ["u"], ["uf"], to=T.FLOAT)]
    path = unique_model(tmp_path / "b.onnx", np.float32, (3, 30), before=before, after=after, used=["uf", "ix", "inv", "cnt"])
    model, ref = compile_both(path)
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((3, 30)) * 3).astype(np.float32)
    x.ravel()[::7] = rng.choice(special_floats(np.float32, signaling=False), 13)
    for i, feed in enumerate([x, x + np.float32(1e-3), rng.integers(-4, 4, (3, 30)).astype(np.float32)]):
        check(model, ref, feed, f"feed {i}")


USES = {
    "Y only": (["u"], ["u"]),
    "Y and counts": (["u", "", "", "cnt"], ["u", "cnt"]),
    "inverse only": (OUTS, ["inv"]),
    "inverse, Y absent": (["u", "", "inv"], ["inv"]),
    "indices only": (["u", "ix"], ["ix"]),
}


@pytest.mark.parametrize("use", sorted(USES))
def test_some_outputs_used(use, tmp_path):
    outs, used = USES[use]
    model, ref = compile_both(unique_model(tmp_path / "o.onnx", np.float32, (3, 40), outs=outs, used=used))
    rng = np.random.default_rng(5)
    for what, x in inputs(np.float32, (3, 40), rng).items():
        got = check(model, ref, x, f"{use}: {what}")
        assert sorted(got) == sorted(used)


def test_nodes_after_unique(tmp_path):
    """Y * counts through compiled nodes (the rest, compiled at run time for the count), int32 input."""
    after = [h.make_node("Cast", ["u"], ["uf"], to=T.FLOAT), h.make_node("Cast", ["cnt"], ["cf"], to=T.FLOAT),
             h.make_node("Mul", ["uf", "cf"], ["y"])]
    path = unique_model(tmp_path / "a.onnx", np.int32, (5, 8), used=["y", "inv"], after=after)
    model, ref = compile_both(path)
    rng = np.random.default_rng(9)
    for hi in (4, 4, 9):
        check(model, ref, rng.integers(-hi, hi, (5, 8)).astype(np.int32), f"values below {hi}")


def run_cli(*args):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint64, np.bool_, "int32 sorted=0", "float16 axis 1"],
                         ids=lambda d: d if isinstance(d, str) else np.dtype(d).name)
def test_cuda_kernel_compiles_with_nvrtc(dtype, tmp_path):
    """The kernel emitted for the GPU (one thread; float compares with NaN, raw float16 copies, uint64
    keys, bool; the order of appearance; slices along an axis) builds with NVRTC (no GPU needed)."""
    sorted_ = 0 if dtype == "int32 sorted=0" else 1
    axis = 1 if dtype == "float16 axis 1" else None
    dtype = {"int32 sorted=0": np.int32, "float16 axis 1": np.float16}.get(dtype, dtype) if isinstance(dtype, str) else dtype
    before = h.make_node("Abs", ["x"], ["xp"]) if dtype == np.float32 else None
    path = unique_model(tmp_path / "g.onnx", dtype, (6, 20), before=before, sorted_=sorted_, axis=axis)
    out = tmp_path / "cuda"
    r = run_cli("compile", path, "--target", "cuda", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "model.cubin").stat().st_size > 0, r.stdout + r.stderr
    groups = (out / "groups.txt").read_text()
    assert re.search(r"anchor=\S+ '[^']*' \(UniquePadded\)", groups), groups
    assert "no lowering for UniquePadded" not in groups, groups
