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
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
NODE = os.environ.get("LATHE_ONNX_SUITE") or os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data",
                                                           "node")
CASES = sorted(os.path.basename(d) for pat in ("resize_*", "upsample_*", "lstm_*", "gru_*", "rnn_*", "simple_rnn_*")
               for d in glob.glob(os.path.join(NODE, "test_" + pat)) if os.path.isdir(d))
KEPT = ("tf_crop_and_resize", "peepholes", "batchwise", "seq_length")


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("frozen-cache")


def frozen(case, path):
    """The test's model with every input but the first made an initializer holding the test's value."""
    d = os.path.join(NODE, case)
    m = onnx.load(os.path.join(d, "model.onnx"))
    inputs = list(m.graph.input)
    for i, vi in enumerate(inputs[1:], start=1):
        t = onnx.TensorProto()
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        t.name = vi.name
        m.graph.initializer.append(t)
        m.graph.input.remove(vi)
    x = numpy_helper.to_array(_read(os.path.join(d, "test_data_set_0", "input_0.pb")))
    onnx.save(m, path)
    return x


def _read(p):
    t = onnx.TensorProto()
    with open(p, "rb") as f:
        t.ParseFromString(f.read())
    return t


@pytest.mark.parametrize("case", CASES)
def test_compiled_with_frozen_params(case, tmp_path, cache):
    model = str(tmp_path / "m.onnx")
    x = frozen(case, model)
    rng = np.random.default_rng(3)
    if np.issubdtype(x.dtype, np.floating):
        x = rng.uniform(-2, 2, x.shape).astype(x.dtype)
    np.save(tmp_path / "x.npy", x)
    name = onnx.load(model).graph.input[0].name
    outs = {}
    for b in ("interp", "cpu", "loopir"):
        r = lathe("run", model, "--backend", b, "--input", f"{name}={tmp_path / 'x.npy'}", "--output",
                  tmp_path / f"{b}.npz", cache=cache)
        assert r.returncode == 0, f"{b}: {r.stderr[-1500:]}"
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = z[z.files[0]]
    for b in ("cpu", "loopir"):
        assert outs[b].shape == outs["interp"].shape
        np.testing.assert_allclose(outs[b].astype(np.float64), outs["interp"].astype(np.float64), rtol=1e-5, atol=1e-5,
                                   err_msg=b)
    r = lathe("compile", model, "--print-plan", cache=cache)
    steps = int(re.search(r"(\d+) host steps", r.stdout).group(1))
    kept = any(k in case for k in KEPT) or ("nearest" in case and "exclude_outside" in case) or \
        x.dtype.kind in "iu" and "nearest" not in case
    assert steps == (steps if kept else 0), r.stdout


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
