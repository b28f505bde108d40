"""1-D convolutions on the CPU go through the 2-D convolution microkernel as convolutions of height 1
(src/lower/lower_nn.c, as_2d): kernel sizes, strides, dilations, pads, groups (depthwise too), bias,
a fused activation after, and a long kernel with a large stride (an STFT front end), each against the
interpreter on random data.
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

# (N, C, W, M, k, stride, dilation, pads, group, bias, activation)
CASES = {
    "k3_same": (1, 8, 40, 16, 3, 1, 1, (1, 1), 1, True, None),
    "k5_stride2": (2, 6, 33, 10, 5, 2, 1, (2, 1), 1, False, "Relu"),
    "dilated": (1, 4, 50, 7, 3, 1, 3, (0, 0), 1, True, None),
    "groups": (1, 12, 29, 18, 3, 1, 1, (1, 1), 3, True, "Relu"),
    "depthwise": (3, 16, 64, 16, 7, 1, 1, (3, 3), 16, True, None),
    "depthwise_x2": (1, 8, 31, 16, 3, 2, 1, (1, 0), 8, False, None),
    "stft": (1, 1, 512, 258, 256, 128, 1, (0, 0), 1, False, None),
    "k1_strided": (1, 5, 20, 9, 1, 3, 1, (0, 0), 1, True, None),
}


def conv_model(path, N, C, W, M, k, stride, dil, pads, group, bias, activation):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((M, C // group, k)).astype(np.float32) * 0.2
    inits = [nh.from_array(w, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(nh.from_array(rng.standard_normal(M).astype(np.float32), "b"))
        ins.append("b")
    nodes = [h.make_node("Conv", ins, ["c" if activation else "y"], kernel_shape=[k], strides=[stride],
                         dilations=[dil], pads=list(pads), group=group)]
    if activation:
        nodes.append(h.make_node(activation, ["c"], ["y"]))
    g = h.make_graph(nodes, "conv1d", [h.make_tensor_value_info("x", T.FLOAT, [N, C, W])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv1d_matches_interpreter(case, tmp_path, cache):
    spec = CASES[case]
    path = str(tmp_path / "c.onnx")
    conv_model(path, *spec)
    N, C, W = spec[:3]
    x = np.random.default_rng(8).standard_normal((N, C, W)).astype(np.float32)
    got = lathe.compile(path, cache_dir=cache, threads=2).run({"x": x})["y"]
    want = lathe.compile(path, backend="interp").run({"x": x})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
