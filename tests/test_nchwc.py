"""test_nchwc.py — the layout_nchwc pass (off by default) turned on by name, on whole models, against
onnxruntime: light_resnet50 (the onnx package's light model, logits exposed by zoo.light_probe) and
MobileNetV2 (bench/models, built on first use by zoo.ensure_built) compiled with
`lathe run --enable-pass layout_nchwc` and through the Python binding's enable_passes, compared at
rtol 1e-4 (atol 1e-4 x the output's RMS, as tests/test_models_ort.py). The pass must have run (its
--time-passes row says "changed yes") whenever the host has AVX2 or AVX-512 (the pass's block sizes);
elsewhere it changes nothing and the answers are still compared. Also: an unknown pass name is a
usage error (exit 2) naming the pass and listing the known ones, on the CLI and in Python, and naming
one pass in both --disable-pass and --enable-pass is a usage error.

The binary is $LATHE_BIN (default build/lathe); the library $LATHE_LIBRARY, default the liblathe.so
next to it.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import zoo  # noqa: E402
from test_models_ort import compare, ort_outputs  # noqa: E402

ort = pytest.importorskip("onnxruntime")

LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
os.environ.setdefault("LATHE_LIBRARY", os.path.join(os.path.dirname(LATHE), "liblathe.so"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import lathe  # noqa: E402

MODELS = ["light_resnet50", "mobilenetv2"]


def _blocked_host():
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx2" in flags or " avx512f" in flags


def _model(name):
    return zoo.light_probe(name) if name.startswith("light_") else zoo.ensure_built(name)


def _run_cli(tmp_path, path, feeds, extra):
    args = [LATHE, "run", path, "--backend", "cpu", "--time-passes", "--output", str(tmp_path / "out.npz")] + extra
    for i, (name, arr) in enumerate(feeds.items()):
        f = tmp_path / f"in{i}.npy"
        np.save(f, arr)
        args += ["--input", f"{name}={f}"]
    return subprocess.run(args, capture_output=True, text=True, timeout=1800)


def _pass_changed(stderr, name):
    """The --time-passes row of pass `name`: True if it changed the graph, False if not, None if absent."""
    for line in stderr.splitlines():
        w = line.split()
        if len(w) >= 3 and w[0] == name:
            return w[2] == "yes"
    return None


@pytest.mark.parametrize("name", MODELS)
def test_cli_enable_pass_vs_onnxruntime(tmp_path, name):
    path = _model(name)
    feeds = zoo.make_inputs(name, seed=0)
    r = _run_cli(tmp_path, path, feeds, ["--enable-pass", "layout_nchwc"])
    assert r.returncode == 0, f"lathe run --enable-pass layout_nchwc {path} exited {r.returncode}:\n{r.stderr[-4000:]}"
    ran = _pass_changed(r.stderr, "layout_nchwc")
    assert ran is not None, f"layout_nchwc did not run:\n{r.stderr[-2000:]}"
    if _blocked_host():
        assert ran, f"layout_nchwc ran but changed nothing on {name}:\n{r.stderr[-2000:]}"
    with np.load(tmp_path / "out.npz") as z:
        got = {k: z[k] for k in z.files}
    errs = compare(name, got, ort_outputs(path, feeds))
    print(f"{name} [layout_nchwc] max |diff| / RMS: " + ", ".join(f"{k} {v:.2e}" for k, v in errs.items()))


def test_cli_pass_is_off_by_default(tmp_path):
    path = _model("light_resnet50")
    r = _run_cli(tmp_path, path, zoo.make_inputs("light_resnet50", seed=0), [])
    assert r.returncode == 0, r.stderr[-4000:]
    assert _pass_changed(r.stderr, "layout_nchwc") is None, r.stderr[-2000:]


def test_python_enable_passes_vs_onnxruntime(tmp_path):
    name = "light_resnet50"
    path = _model(name)
    feeds = zoo.make_inputs(name, seed=0)
    m = lathe.compile(path, enable_passes=["layout_nchwc"], cache_dir=str(tmp_path / "cache"))
    try:
        got = m.run(feeds)
    finally:
        m.close()
    compare(name, got, ort_outputs(path, feeds))


def test_cli_unknown_pass_is_a_usage_error(tmp_path):
    path = _model("light_resnet50")
    r = _run_cli(tmp_path, path, zoo.make_inputs("light_resnet50", seed=0), ["--enable-pass", "no_such_pass"])
    assert r.returncode == 1, f"exit {r.returncode}:\n{r.stderr}"
    assert "no_such_pass" in r.stderr and "layout_nchwc" in r.stderr and "simplify" in r.stderr, r.stderr
    r = _run_cli(tmp_path, path, zoo.make_inputs("light_resnet50", seed=0),
                 ["--enable-pass", "layout_nchwc", "--disable-pass", "layout_nchwc"])
    assert r.returncode == 1 and "both disabled and enabled" in r.stderr, f"exit {r.returncode}:\n{r.stderr}"


def test_python_unknown_pass_is_a_usage_error(tmp_path):
    with pytest.raises(lathe.LatheError) as e:
        lathe.compile(_model("light_resnet50"), enable_passes=["no_such_pass"], cache_dir=False)
    assert e.value.status == "usage" and "no_such_pass" in str(e.value) and "layout_nchwc" in str(e.value)
    with pytest.raises(ValueError):
        lathe.compile(_model("light_resnet50"), enable_passes=["a,b"], cache_dir=False)
