"""test_frozen_params.py — ops whose parameters exporters write as constants are compiled, and agree
with the interpreter: Resize and Upsample (the resize_gather pass: Gathers and weighted sums) and
LSTM, GRU and RNN (the unroll_rnn pass: one input GEMM and unrolled steps).

Every onnx node test of these ops is taken with every input but the first (scales, sizes, roi;
weights, biases, initial states, sequence lengths) frozen into initializers, as exporters write
them, the first input random: on cpu and on the bounds-checked loopir backend the output must equal
the interpreter's, and the compiled plan must have no host step where a pass applies (what the
passes leave to the interpreter: tf_crop_and_resize, nearest with exclude_outside, weighted modes
over integers; peepholes, batch-first layout, sequence lengths shorter than the sequence).
"""
import glob
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from frozen_nodes import NODE, frozen, host_steps, outputs_by_backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
CASES = sorted(os.path.basename(d) for pat in ("resize_*", "upsample_*", "lstm_*", "gru_*", "rnn_*", "simple_rnn_*")
               for d in glob.glob(os.path.join(NODE, "test_" + pat)) if os.path.isdir(d))
KEPT = ("tf_crop_and_resize", "peepholes", "batchwise", "seq_length")


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("frozen-cache")


@pytest.mark.parametrize("case", CASES)
def test_compiled_with_frozen_params(case, tmp_path, cache):
    model = str(tmp_path / "m.onnx")
    x = frozen(case, model)
    rng = np.random.default_rng(3)
    if np.issubdtype(x.dtype, np.floating):
        x = rng.uniform(-2, 2, x.shape).astype(x.dtype)
    outs = outputs_by_backend(lambda *a: lathe(*a, cache=cache), model, x, tmp_path)
    for b in ("cpu", "loopir"):
        assert outs[b].shape == outs["interp"].shape
        np.testing.assert_allclose(outs[b].astype(np.float64), outs["interp"].astype(np.float64), rtol=1e-5, atol=1e-5,
                                   err_msg=b)
    steps, plan = host_steps(lambda *a: lathe(*a, cache=cache), model)
    kept = any(k in case for k in KEPT) or ("nearest" in case and "exclude_outside" in case) or \
        x.dtype.kind in "iu" and "nearest" not in case
    assert steps == (steps if kept else 0), plan


def test_resize_to_an_empty_axis_matches_the_interpreter(tmp_path, cache):
    """Sizes with a 0 (found by fuzz_compile_diff): the rewrite leaves the op alone, both paths agree."""
    from onnx import TensorProto, helper
    sizes = numpy_helper.from_array(np.array([1, 1, 0, 4], np.int64), "sizes")
    g = helper.make_graph([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [sizes])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    onnx.save(m, tmp_path / "e.onnx")
    res = [lathe("run", tmp_path / "e.onnx", "--backend", b, cache=cache) for b in ("interp", "cpu", "loopir")]
    assert len({r.returncode for r in res}) == 1, [(r.returncode, r.stderr) for r in res]
    assert all("float[1,1,0,4]" in r.stdout for r in res) or res[0].returncode != 0, [r.stdout for r in res]
