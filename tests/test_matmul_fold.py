"""A MatMul whose A is [batch, 1, K] against a B shared by the batch (a sequence-first Linear, as
torch's exporters emit nn.MultiheadAttention's in-projection: [197, 1, 768] x [768, 2304]) runs as one
GEMM of batch rows (src/lower/lower_gemm.c, fold_batch_into_rows), not a GEMV per batch index that
reads all of B each time. The size-1 dim of such an A is often a view carrying any stride; these
cases build it several ways, with epilogues after, and compare with the interpreter on random data.
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

RNG = np.random.default_rng(21)


def const(name, a):
    return nh.from_array(np.asarray(a), name)


def case_unsqueeze(path):
    """x [50, 64] -> Unsqueeze(1) -> @ W [64, 96] + b -> Relu."""
    nodes = [h.make_node("Unsqueeze", ["x", "ax"], ["u"]), h.make_node("MatMul", ["u", "w"], ["m"]),
             h.make_node("Add", ["m", "b"], ["a"]), h.make_node("Relu", ["a"], ["y"])]
    inits = [const("ax", np.array([1], np.int64)), const("w", RNG.standard_normal((64, 96)).astype(np.float32)),
             const("b", RNG.standard_normal(96).astype(np.float32))]
    return nodes, {"x": [50, 64]}, inits, 50


def case_input(path):
    """x [37, 1, 24] @ W [24, 40] (B broadcast over the batch)."""
    nodes = [h.make_node("MatMul", ["x", "w"], ["y"])]
    return nodes, {"x": [37, 1, 24]}, [const("w", RNG.standard_normal((24, 40)).astype(np.float32))], 37


def case_transposed(path):
    """x [24, 30] -> Transpose -> [30, 24] -> Unsqueeze(1) -> @ W [24, 16]: A's K stride is not 1."""
    nodes = [h.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), h.make_node("Unsqueeze", ["t", "ax"], ["u"]),
             h.make_node("MatMul", ["u", "w"], ["m"]), h.make_node("Mul", ["m", "s"], ["y"])]
    inits = [const("ax", np.array([1], np.int64)), const("w", RNG.standard_normal((24, 16)).astype(np.float32)),
             const("s", np.array(0.5, np.float32))]
    return nodes, {"x": [24, 30]}, inits, 30


def case_two_batch_dims(path):
    """x [3, 11, 1, 20] @ W [1, 20, 8]: two batch dims folded, B's own batch dim broadcast."""
    nodes = [h.make_node("MatMul", ["x", "w"], ["y"])]
    return nodes, {"x": [3, 11, 1, 20]}, [const("w", RNG.standard_normal((1, 20, 8)).astype(np.float32))], 33


CASES = {f.__name__[5:]: f for f in (case_unsqueeze, case_input, case_transposed, case_two_batch_dims)}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_batch_of_single_rows_matches_interpreter(name, tmp_path, cache):
    path = str(tmp_path / "m.onnx")
    nodes, shapes, inits, rows = CASES[name](path)
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(k, T.FLOAT, s) for k, s in shapes.items()],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    model = lathe.compile(path, cache_dir=cache, threads=2, dump_code_dir=str(tmp_path / "code"))
    got = model.run(feeds)["y"]
    want = lathe.compile(path, backend="interp").run(feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    src = (tmp_path / "code" / "model.c").read_text()
    calls = [c for c in src.split("lt_gemm_f32(")[1:] if c.startswith("a")]
    assert calls, "no GEMM call"
    # one GEMM of all the rows: the batch extents b1, b2 are 1 and M is the product of the batch dims
    b1, b2, m = (int(v) for v in calls[0].split(",")[6:9])
    assert (b1, b2, m) == (1, 1, rows), calls[0][:200]
