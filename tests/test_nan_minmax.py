"""NaN propagates through the compiled min and max as through the interpreter: Max, Min (two inputs,
broadcast, three inputs), MaxPool (2 x 2 stride 2, 3 x 3 padded) and Clip, with NaN in either operand
and +-0 and infinities among the values. The C prelude's lt_max_f32 / lt_min_f32 are written so GCC
vectorizes them (codegen/prelude/common.h); these check that form keeps the semantics, element for
element.
"""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("LATHE_LIBRARY", os.path.join(ROOT, "build", "liblathe.so"))
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

import lathe  # noqa: E402


def special(shape, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    u = rng.uniform(size=shape)
    x[u < 0.15] = np.nan
    x[(u >= 0.15) & (u < 0.2)] = np.inf
    x[(u >= 0.2) & (u < 0.25)] = -np.inf
    x[(u >= 0.25) & (u < 0.3)] = -0.0
    x[(u >= 0.3) & (u < 0.35)] = 0.0
    return x


def vi(name, shape):
    return h.make_tensor_value_info(name, T.FLOAT, shape)


CASES = {
    "max": ([h.make_node("Max", ["a", "b"], ["y"])], {"a": [4, 37], "b": [4, 37]}, []),
    "min_broadcast": ([h.make_node("Min", ["a", "b"], ["y"])], {"a": [5, 3, 33], "b": [3, 1]}, []),
    "max3": ([h.make_node("Max", ["a", "b", "c"], ["y"])], {"a": [70], "b": [70], "c": [1]}, []),
    "maxpool2": ([h.make_node("MaxPool", ["a"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], {"a": [1, 3, 16, 34]}, []),
    "maxpool3_pad": ([h.make_node("MaxPool", ["a"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                     {"a": [2, 4, 9, 20]}, []),
    "clip": ([h.make_node("Clip", ["a", "lo", "hi"], ["y"])], {"a": [3, 50]},
             [nh.from_array(np.array(-0.5, np.float32), "lo"), nh.from_array(np.array(0.7, np.float32), "hi")]),
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_nan_propagates_as_in_the_interpreter(case, tmp_path, cache):
    nodes, shapes, inits = CASES[case]
    g = h.make_graph(nodes, case, [vi(k, s) for k, s in shapes.items()], [vi("y", None)], inits)
    path = str(tmp_path / "m.onnx")
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    rng = np.random.default_rng(12)
    feeds = {k: special(s, rng) for k, s in shapes.items()}
    got = lathe.compile(path, cache_dir=cache, threads=2).run(feeds)["y"]
    want = lathe.compile(path, backend="interp").run(feeds)["y"]
    assert np.isnan(want).any() and not np.isnan(want).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got, want)
