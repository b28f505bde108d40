"""frozen_nodes.py — shared by the tests that take onnx node tests with every input but the first
frozen into initializers, as exporters write parameters (tests/test_frozen_params.py,
tests/test_decompose_ops.py): the node-test folder, the freezing, one run per backend, and the
host-step count of the compiled plan.
"""
import os
import re

import numpy as np
import onnx
from onnx import numpy_helper

NODE = os.environ.get("LATHE_ONNX_SUITE") or os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data",
                                                           "node")
BACKENDS = ("interp", "cpu", "loopir")


def read_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def frozen(case, path):
    """Node test `case`'s model with every input but the first an initializer holding the test's value,
    saved to path; returns the test's first input."""
    d = os.path.join(NODE, case)
    m = onnx.load(os.path.join(d, "model.onnx"))
    for i, vi in enumerate(list(m.graph.input)[1:], start=1):
        t = read_tensor(os.path.join(d, "test_data_set_0", f"input_{i}.pb"))
        t.name = vi.name
        m.graph.initializer.append(t)
        m.graph.input.remove(vi)
    onnx.save(m, path)
    return numpy_helper.to_array(read_tensor(os.path.join(d, "test_data_set_0", "input_0.pb")))


def outputs_by_backend(lathe, model, x, tmp_path):
    """{backend: first output} of `lathe run` on each backend, with x as the model's one input.
    lathe(*args) runs the CLI (the calling test's wrapper, with its cache)."""
    np.save(tmp_path / "x.npy", x)
    name = onnx.load(model).graph.input[0].name
    outs = {}
    for b in BACKENDS:
        r = lathe("run", model, "--backend", b, "--input", f"{name}={tmp_path / 'x.npy'}", "--output",
                  tmp_path / f"{b}.npz")
        assert r.returncode == 0, f"{b}: {r.stderr[-1500:]}"
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = z[z.files[0]]
    return outs


def host_steps(lathe, model):
    r = lathe("compile", model, "--print-plan")
    return int(re.search(r"(\d+) host steps", r.stdout).group(1)), r.stdout
