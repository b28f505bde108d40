"""test_cuda_compile.py — every kernel the model set generates for the GPU compiles with NVRTC, on a
machine with no GPU (CI): `lathe compile MODEL --target cuda -o DIR` emits the CUDA translation unit
(DIR/model.cu) and builds it with NVRTC (DIR/model.cubin). A broken CUDA emitter, prelude or GPU
lowering fails here. (The conformance suite's kernels are checked the same way by
`lathe conformance --backend cuda --compile-only`, run by scripts/test.sh.)

Models: the 9 light models of the onnx package and the benchmark models (bench/models: ResNet-50,
MobileNetV2, BERT-base and GPT-2 small at sequence 128, built on first use), with the input shapes of
bench/models/zoo.make_inputs. The report must name at least one kernel, and the cubin must be written.
NVRTC: the system's (libnvrtc.so.13 / .12) or $LATHE_NVRTC (scripts/test.sh sets it to pip's wheel).
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
import zoo  # noqa: E402

LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)


def shapes_args(name):
    args = []
    for k, v in zoo.make_inputs(name, seed=0).items():
        args += ["--shapes", "%s:%s" % (k, "x".join(str(d) for d in v.shape))]
    return args


@pytest.mark.parametrize("name", zoo.ALL)
def test_model_cuda_kernels_compile_with_nvrtc(tmp_path, name):
    path = zoo.light_probe(name) if name.startswith("light_") else zoo.ensure_built(name)
    out = tmp_path / "cuda"
    r = subprocess.run([LATHE, "compile", path, "--target", "cuda", "-o", str(out)] + shapes_args(name),
                       capture_output=True, text=True, timeout=1800)
    text = r.stdout + r.stderr
    assert r.returncode == 0, f"lathe compile --target cuda {name} exited {r.returncode}:\n{text[-4000:]}"
    assert "no cubin" not in text, f"NVRTC not found (install it: scripts/setup.sh):\n{text[-2000:]}"
    assert (out / "model.cu").stat().st_size > 0
    assert (out / "model.cubin").stat().st_size > 0, text[-2000:]
    first = text.split("cuda: ", 1)[1].split(" kernels", 1)[0] if "cuda: " in text else "0"
    assert int(first) > 0, f"{name}: no kernel was generated for the GPU:\n{text[-2000:]}"
