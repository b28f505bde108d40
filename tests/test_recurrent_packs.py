"""Unrolled recurrent nets share one packed copy of each recurrent weight.

A GRU or LSTM over a static sequence is unrolled into a MatMul per step (src/passes/unroll_rnn.c), all
reading the same recurrent weight; each MatMul's kernel packs its constant operand. The plan keeps one
buffer for packs of the same constant with the same packing (src/runtime/plan.c, find_repeated_packs),
so the steps read one copy from the cache instead of a copy each from memory. These tests check the
weights the compile report counts and the results against the interpreter, on random data.
"""
import os
import re
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

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "B": 1}


def report_weight_bytes(report):
    m = re.search(r"weights ([0-9.]+) (B|KiB|MiB)", report)
    assert m, report
    return float(m.group(1)) * UNITS[m.group(2)]


def rnn_model(path, op, steps, inputs, hidden, directions):
    gates = {"GRU": 3, "LSTM": 4}[op]
    rng = np.random.default_rng(3)
    w = rng.standard_normal((directions, gates * hidden, inputs)).astype(np.float32) * 0.3
    r = rng.standard_normal((directions, gates * hidden, hidden)).astype(np.float32) * 0.3
    b = rng.standard_normal((directions, 2 * gates * hidden)).astype(np.float32) * 0.1
    direction = "bidirectional" if directions == 2 else "forward"
    node = h.make_node(op, ["x", "W", "R", "B"], ["y", "yh"], hidden_size=hidden, direction=direction,
                       **({"linear_before_reset": 1} if op == "GRU" else {}))
    g = h.make_graph([node], "rnn", [h.make_tensor_value_info("x", T.FLOAT, [steps, 1, inputs])],
                     [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("yh", T.FLOAT, None)],
                     [nh.from_array(w, "W"), nh.from_array(r, "R"), nh.from_array(b, "B")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    return w.nbytes + r.nbytes + b.nbytes


@pytest.mark.parametrize("op,directions", [("GRU", 1), ("LSTM", 2)])
def test_unrolled_steps_share_the_packed_weight(op, directions, tmp_path):
    steps = 16
    path = str(tmp_path / "rnn.onnx")
    param_bytes = rnn_model(path, op, steps, 16, 48, directions)
    model = lathe.compile(path, cache_dir=str(tmp_path / "cache"), threads=1)
    weights = report_weight_bytes(model.report)
    # a copy of each weight, packed and not, and the transposed copies the unrolling makes: a few times
    # the parameters, never one copy per step (16 here)
    assert weights < 6 * param_bytes, (weights, param_bytes, model.report)
    ref = lathe.compile(path, backend="interp")
    x = np.random.default_rng(5).standard_normal((steps, 1, 16)).astype(np.float32)
    got, want = model.run({"x": x}), ref.run({"x": x})
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
