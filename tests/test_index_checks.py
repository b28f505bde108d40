"""test_index_checks.py — Gathers and Scatters whose indices the model computes compile, and their
kernels check every index they read.

The indices come out of ops (Sub, Cast, Concat) so neither the compile-time check (constants) nor the
plan's host check (a model input) applies: the kernel itself records an index out of range in the
plan's check word, and the run fails naming the node, the element and the value. Checked here:
- in-range random indices (negative ones too): cpu, the bounds-checked loopir backend and the
  standalone C export give the interpreter's output bit for bit, with no host step, and the CUDA
  translation unit builds with NVRTC;
- an index out of range: every backend fails the run (exit 2, as the interpreter) naming the node, even when the consumer reads only part of the Gather's output;
- the word is cleared after a failure: in one process (the Python binding), a bad run, then a good
  run of the same compiled model, gives the right answer.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("index-checks-cache")


def graph_model(nodes, inputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", F, None)],
                          [numpy_helper.from_array(np.array(1, np.int64), "one"), *inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def computed(name="i"):
    """i2 = i + 1 - 1 computed by the model (two kernels' worth of ops: never folded away)."""
    return [helper.make_node("Add", [name, "one"], ["ia"]), helper.make_node("Sub", ["ia", "one"], ["i2"])]


def idx(rng, d, shape):
    return rng.integers(-d, d, shape).astype(np.int64)


# name: (model builder, feeds builder(rng, bad) -> dict, the node that fails)
def gather_axis1(rng, bad):
    i = idx(rng, 6, (2, 3))
    if bad:
        i[1, 2] = 6
    return {"x": rng.standard_normal((4, 6, 3)).astype(np.float32), "i": i}


def gather_elements(rng, bad):
    i = idx(rng, 5, (4, 3))
    if bad:
        i[3, 0] = -6
    return {"x": rng.standard_normal((5, 3)).astype(np.float32), "i": i}


def gather_nd(rng, bad):
    i = np.stack([idx(rng, 3, (4,)), idx(rng, 5, (4,))], axis=-1)
    if bad:
        i[2, 1] = 5
    return {"x": rng.standard_normal((3, 5, 2)).astype(np.float32), "i": i}


def scatter_elements(rng, bad):
    i = idx(rng, 6, (3, 4))
    if bad:
        i[0, 3] = 9
    return {"x": rng.standard_normal((6, 4)).astype(np.float32), "i": i,
            "u": rng.standard_normal((3, 4)).astype(np.float32)}


def scatter_nd(rng, bad):
    i = idx(rng, 5, (4, 1))
    if bad:
        i[3, 0] = -7
    return {"x": rng.standard_normal((5, 3)).astype(np.float32), "i": i,
            "u": rng.standard_normal((4, 3)).astype(np.float32)}


def gather_then_slice(rng, bad):
    i = idx(rng, 5, (4,))
    if bad:
        i[3] = 5  # a row the Slice does not read: the interpreter fails all the same
    return {"x": rng.standard_normal((5, 3)).astype(np.float32), "i": i}


CASES = {
    "gather_axis1": (lambda: graph_model(computed() + [helper.make_node("Gather", ["x", "i2"], ["g"], axis=1, name="n"),
                                                       helper.make_node("Relu", ["g"], ["y"])],
                                         [("x", F, [4, 6, 3]), ("i", I64, [2, 3])]), gather_axis1),
    "gather_elements": (lambda: graph_model(computed() + [helper.make_node("GatherElements", ["x", "i2"], ["y"], axis=0,
                                                                           name="n")],
                                            [("x", F, [5, 3]), ("i", I64, [4, 3])]), gather_elements),
    "gather_nd": (lambda: graph_model(computed() + [helper.make_node("GatherND", ["x", "i2"], ["y"], name="n")],
                                      [("x", F, [3, 5, 2]), ("i", I64, [4, 2])]), gather_nd),
    "scatter_elements_add": (lambda: graph_model(computed() + [helper.make_node("ScatterElements", ["x", "i2", "u"], ["y"],
                                                                                axis=0, reduction="add", name="n")],
                                                 [("x", F, [6, 4]), ("i", I64, [3, 4]), ("u", F, [3, 4])]),
                             scatter_elements),
    "scatter_nd": (lambda: graph_model(computed() + [helper.make_node("ScatterND", ["x", "i2", "u"], ["y"], name="n")],
                                       [("x", F, [5, 3]), ("i", I64, [4, 1]), ("u", F, [4, 3])]), scatter_nd),
    "gather_then_slice": (lambda: graph_model(
        computed() + [helper.make_node("Gather", ["x", "i2"], ["g"], axis=0, name="n"),
                      helper.make_node("Slice", ["g", "s0", "s1"], ["y"])],
        [("x", F, [5, 3]), ("i", I64, [4])],
        [numpy_helper.from_array(np.array([0], np.int64), "s0"), numpy_helper.from_array(np.array([1], np.int64), "s1")]),
        gather_then_slice),
}
BACKENDS = ("cpu", "loopir", "c")


def save_case(case, tmp_path, bad, seed=4):
    build, feeds = CASES[case]
    path = tmp_path / "m.onnx"
    onnx.save(build(), path)
    np.savez(tmp_path / "in.npz", **feeds(np.random.default_rng(seed), bad))
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_computed_indices_match_the_interpreter(case, tmp_path, cache):
    path = save_case(case, tmp_path, bad=False)
    outs = {}
    for b in ("interp",) + BACKENDS:
        r = lathe("run", path, "--backend", b, "--input", tmp_path / "in.npz", "--output", tmp_path / f"{b}.npz",
                  cache=cache)
        assert r.returncode == 0, f"{b}: {r.stderr[-1500:]}"
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = z["y"]
    for b in BACKENDS:
        np.testing.assert_array_equal(outs[b], outs["interp"], err_msg=b)
    r = lathe("compile", path, "--print-plan", cache=cache)
    assert re.search(r" 0 host steps", r.stdout), r.stdout
    assert "word(check)" in r.stdout, r.stdout  # the kernel takes the check word
    r = lathe("compile", path, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    if "no cubin" in r.stdout + r.stderr:
        pytest.skip("NVRTC not found (scripts/setup.sh installs it)")
    assert "lt_check_index(" in (tmp_path / "cuda" / "model.cu").read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_index_out_of_range_fails_the_run(case, tmp_path, cache):
    path = save_case(case, tmp_path, bad=True)
    ref = lathe("run", path, "--backend", "interp", "--input", tmp_path / "in.npz", cache=cache)
    assert ref.returncode == 2 and "'n'" in ref.stderr, ref.stderr
    for b in BACKENDS:
        r = lathe("run", path, "--backend", b, "--input", tmp_path / "in.npz", "--output", tmp_path / "o.npz",
                  cache=cache)
        assert r.returncode == ref.returncode, f"{b}: {r.stdout}{r.stderr}"
        assert "'n'" in r.stderr and "out of range" in r.stderr, f"{b}: {r.stderr}"
        assert not (tmp_path / "o.npz").exists(), b  # no half-written output


def test_word_cleared_after_a_failed_run(tmp_path):
    """One compiled model, one process: a bad run fails, the next good run succeeds and is right."""
    path = save_case("scatter_nd", tmp_path, bad=False)
    good = dict(np.load(tmp_path / "in.npz"))
    bad = dict(good)
    bad["i"] = good["i"].copy()
    bad["i"][0, 0] = 11
    script = f"""
import sys, numpy as np
sys.path.insert(0, {os.path.join(ROOT, 'python')!r})
import lathe
m = lathe.compile({str(path)!r}, cache_dir={str(tmp_path / 'cache')!r})
ref = lathe.compile({str(path)!r}, backend="interp")
good = dict(np.load({str(tmp_path / 'in.npz')!r}))
bad = dict(good); bad["i"] = good["i"].copy(); bad["i"][0, 0] = 11
try:
    m(**bad)
    sys.exit("the bad run passed")
except lathe.LatheError as e:
    assert "'n'" in str(e) and "11" in str(e), str(e)
for _ in range(2):
    np.testing.assert_array_equal(m(**good)["y"], ref(**good)["y"])
print("ok")
"""
    env = dict(os.environ)
    env.setdefault("LATHE_LIBRARY", os.path.join(os.path.dirname(LATHE), "liblathe.so"))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
