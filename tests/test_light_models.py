"""test_light_models.py — the 9 "light" models shipped with onnx (onnx/backend/test/data/light: AlexNet,
DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512, with constant
weights) run end to end through `lathe run --fill ramp --output out.npz`; the output must match the
expected light_X_output_0.pb within rtol 1e-3 (DenseNet-121: 2e-3), atol 1e-7.

`--fill ramp` gives arange(n)/n as float32, the input the onnx test runner feeds these models. They are
big for a simple C interpreter: each is its own test item (pytest -n N runs them in parallel) with a
generous subprocess timeout. The binary comes from $LATHE_BIN (default build/lathe).
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
TIMEOUT_S = int(os.environ.get("LATHE_LIGHT_TIMEOUT", "3600"))

MODELS = {
    "bvlc_alexnet": 1e-3,
    "densenet121": 2e-3,
    "inception_v1": 1e-3,
    "inception_v2": 1e-3,
    "resnet50": 1e-3,
    "shufflenet": 1e-3,
    "squeezenet": 1e-3,
    "vgg19": 1e-3,
    "zfnet512": 1e-3,
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_light_model(tmp_path, name):
    model = os.path.join(LIGHT, f"light_{name}.onnx")
    expected = os.path.join(LIGHT, f"light_{name}_output_0.pb")
    assert os.path.exists(model), f"{model} missing: is onnx 1.22.0 installed (scripts/setup.sh)?"
    out = tmp_path / "out.npz"
    r = subprocess.run([LATHE, "run", model, "--fill", "ramp", "--output", str(out)], capture_output=True,
                       text=True, timeout=TIMEOUT_S)
    assert r.returncode == 0, f"lathe run {name} exited {r.returncode}:\n{r.stderr}"
    want = numpy_helper.to_array(onnx.load_tensor(expected))
    graph_out = onnx.load(model, load_external_data=False).graph.output[0].name
    with np.load(out) as z:
        assert graph_out in z.files, f"{graph_out} not in {z.files}"
        got = z[graph_out]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=MODELS[name], atol=1e-7)
