"""test_cli_cuda.py — the CLI's CUDA backend as CI sees it (no GPU): every GPU command fails cleanly with
exit 3 and the one-line reason, fork-based commands probe the device in a child, and the CUDA source of
a model is written with no GPU (`lathe compile --target cuda`). On a machine with a GPU the same tests
instead check `lathe run --backend cuda` against the CPU backend on random data.
The device-aware plan logic itself is tested on the CPU by tests/unit/test_plan_device.c.
"""
import os
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
DATA = os.path.join(ROOT, "tests", "data")


def lathe(*args, timeout=600):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def have_gpu():
    return lathe("ceilings", "--backend", "cuda").returncode == 0


GPU = have_gpu()
nogpu = pytest.mark.skipif(GPU, reason="a CUDA GPU is present: the no-GPU behaviour does not apply")


@nogpu
@pytest.mark.parametrize("cmd", [
    ["run", os.path.join(DATA, "add.onnx"), "--backend", "cuda"],
    ["run", os.path.join(DATA, "add.onnx"), "--backend", "cuda", "--no-graphs", "--nvrtc", "/nonexistent/libnvrtc.so",
     "--bench", "3"],
    ["profile", os.path.join(DATA, "add.onnx"), "--backend", "cuda"],
    ["ceilings", "--backend", "cuda"],
    ["conformance", "--backend", "cuda", "--filter", "^test_abs$"],
])
def test_no_gpu_exit_3(cmd):
    r = lathe(*cmd)
    assert r.returncode == 3, r.stderr
    assert "CUDA backend unavailable" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # one line, no crash report


def test_compile_target_cuda_needs_no_gpu(tmp_path):
    out = tmp_path / "cu"
    r = lathe("compile", os.path.join(DATA, "dev_mix.onnx"), "--target", "cuda", "-o", out, "--no-cache")
    assert r.returncode == 0, r.stderr
    src = (out / "model.cu").read_text()
    assert src.count("__global__") >= 4 and "launch: grid" in src
    assert (out / "kernels.txt").exists() and (out / "groups.txt").exists()
    if "no cubin" not in r.stderr:  # NVRTC present: the cubin too
        assert (out / "model.cubin").stat().st_size > 0


def test_target_usage():
    r = lathe("compile", os.path.join(DATA, "add.onnx"), "--target", "cuda")
    assert r.returncode == 1 and "needs -o DIR" in r.stderr
    r = lathe("compile", os.path.join(DATA, "add.onnx"), "--target", "metal", "-o", "/tmp/x")
    assert r.returncode == 1 and "--target must be c or cuda" in r.stderr


@pytest.mark.skipif(not GPU, reason="no CUDA GPU here")
@pytest.mark.parametrize("model", ["dev_mix", "dev_loop", "lower_mlp", "lower_conv", "lower_attn2", "lower_red"])
@pytest.mark.parametrize("graphs", [True, False])
def test_gpu_matches_cpu(model, graphs, tmp_path):
    outs = {}
    for be in ("cpu", "cuda"):
        extra = [] if graphs or be == "cpu" else ["--no-graphs"]
        r = lathe("run", os.path.join(DATA, model + ".onnx"), "--backend", be, "--seed", 5, "--output",
                  tmp_path / f"{be}.npz", "--bench", 3, *extra)
        assert r.returncode == 0, r.stderr
        if be == "cuda":
            assert "device median" in r.stdout
        outs[be] = np.load(tmp_path / f"{be}.npz")
    for k in outs["cpu"].files:
        want, got = outs["cpu"][k].astype(np.float64), outs["cuda"][k].astype(np.float64)
        rms = float(np.sqrt(np.mean(want * want))) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * rms + 1e-7, err_msg=k)
