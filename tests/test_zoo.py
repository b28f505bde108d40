"""test_zoo.py — the zoo of exported architectures (bench/models/exported.py, docs/ZOO.md) against
onnxruntime, in the reduced ("ci") configuration of each.

For every snapshot: the model is refilled (seeded, the framework's init statistics), its reference is
checked not to be degenerate (finite, not constant: a classifier's logits not all tied), then `lathe
run` on the interpreter and on the compiled CPU backend must match onnxruntime's CPU output within
|lathe - ort| <= tol * (RMS(ort) + |ort|), tol 1e-4 (fp32 and int8 models), 5e-3 (float16 models);
a model with one output value (a VAD's score) must give another for other inputs. The host steps `lathe compile` reports on cpu
and for `--target cuda` may not exceed the model's entry in HOST_STEPS, each one named in docs/ZOO.md
with why (so a new host step is a failure, and one that goes away is noticed: the count must then be
lowered here).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
import exported  # noqa: E402

LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)

TAGS = sorted(t for t in exported.SNAPSHOTS if "_ci" in t)
# Host steps per model on (cpu, cuda); docs/ZOO.md says what each one is.
HOST_STEPS = {}


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=1800, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("zoo-cache")


def reference(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def not_degenerate(ref, tag, path):
    assert np.isfinite(ref).all(), "the reference holds NaN or infinity"
    if ref.size < 4:  # one score (a VAD's speech probability): it must follow the input
        other = reference(path, exported.make_inputs(tag, seed=1, path=path))
        assert not np.array_equal(other, ref), "the reference does not depend on the input"
        return
    spread = float(np.std(ref.astype(np.float64)))
    assert spread > 1e-6 * max(1e-30, float(np.max(np.abs(ref)))), f"the reference is constant (std {spread:g})"


def tolerance(ref):
    """fp32 (and int8 models, whose integer parts are exact): 1e-4; float16 outputs: 5e-3, a few of
    fp16's roundings (1e-3 per op) apart after a whole network computed in float16."""
    return 5e-3 if ref.dtype == np.float16 else 1e-4


@pytest.mark.parametrize("tag", TAGS)
def test_zoo_model(tag, tmp_path, cache):
    path = exported.build(tag)
    feeds = exported.make_inputs(tag, seed=0, path=path)
    ref = reference(path, feeds)
    not_degenerate(ref, tag, path)
    args = []
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    rms = float(np.sqrt(np.mean(ref.astype(np.float64) ** 2)))
    for backend in ("interp", "cpu"):
        out = tmp_path / f"{backend}.npz"
        r = lathe("run", path, "--backend", backend, *args, "--output", out, cache=cache)
        assert r.returncode == 0, f"{backend}: {r.stderr[-2000:]}"
        with np.load(out) as z:
            got = z[z.files[0]]
        assert got.shape == ref.shape, (backend, got.shape, ref.shape)
        err = np.abs(got.astype(np.float64) - ref)
        bound = tolerance(ref) * (rms + np.abs(ref.astype(np.float64)))
        assert (err <= bound).all(), f"{backend}: max |diff| {err.max():.3g} (RMS {rms:.3g})"
    dims = [a for k, v in exported.bind_dims(tag, path).items() for a in ("--dim", f"{k}={v}")]
    want = HOST_STEPS.get(tag, (0, 0))
    r = lathe("compile", path, *dims, cache=cache)
    assert r.returncode == 0, r.stderr[-2000:]
    n_cpu = int(re.search(r"(\d+) host steps", r.stdout).group(1))
    r = lathe("compile", path, *dims, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert r.returncode == 0, r.stderr[-2000:]
    n_cuda = int(re.search(r"(\d+) host groups", r.stdout).group(1))
    assert (n_cpu, n_cuda) == want, f"host steps (cpu, cuda) {(n_cpu, n_cuda)}, docs/ZOO.md and HOST_STEPS say {want}"
