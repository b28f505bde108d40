"""test_cli_symbolic.py — models with symbolic dims on the command line, compiled once for every shape.

`lathe run MODEL --each A.npz --each B.npz ...` runs the model once per file in one process; when the
model keeps symbolic dims it is compiled as a family (src/compile/family.h), so the C compiler runs
only for a shape that needs a new bucket. `lathe compile MODEL` on such a model builds it at probe
shapes and reports the buckets. Checked here:
  - three files of shapes in one bucket of the zoo's bert_ci (batch 4; sequence 33, 41, 57) run with
    the C compiler invoked once (a wrapper script that logs each compile; --no-cache, so every build
    is a real compiler run), each output (one .npz per run in --output DIR, named after the file)
    equal to the reference interpreter's, the packed weights one copy that the later plans took;
  - a shape outside a --dim range is refused with one line naming the file, input and dim (exit 2);
  - `lathe compile` reports the buckets and the shapes each took (--probe, and the default probes of
    a ranged dim), and -o still needs every dim bound;
  - a missing --each file is refused before anything runs (exit 2, naming it, no output written);
  - an input missing from a file is filled when its dims are known, else refused naming it; an
    artifact runs the files of its shapes and refuses the others, naming the file.
The binary comes from $LATHE_BIN (default build/lathe).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import exported  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cc_log import compiles, counting_cc  # noqa: E402


def lathe(*args, timeout=900):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def bert_feeds(batch, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 100, size=(batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - rng.integers(1, 5):] = 0  # padding at the end
    return {"input_ids": ids, "attention_mask": mask}


def read_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def bert():
    return exported.build("bert_ci")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def two_inputs_model(path, y_dims=("N", 3)):
    """Z = relu(X) * 2 and W = relu(Y): X float[N,3], Y float[y_dims]."""
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["r"]), helper.make_node("Mul", ["r", "two"], ["Z"]),
                           helper.make_node("Relu", ["Y"], ["W"])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3]),
                           helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(y_dims))],
                          [helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 3]),
                           helper.make_tensor_value_info("W", TensorProto.FLOAT, list(y_dims))],
                          initializer=[two])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_cli_symbolic")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


def test_each_one_bucket_one_compile(bert, tmp_path):
    cc, log = counting_cc(tmp_path)
    files = []
    for i, seq in enumerate((33, 41, 57)):
        f = tmp_path / f"run{seq}.npz"
        np.savez(f, **bert_feeds(4, seq, i))
        files.append(f)
    out = tmp_path / "out" / "nested"
    args = ["run", bert, "--no-cache", "--cc", cc, "--output", out]
    for f in files:
        args += ["--each", f]
    r = lathe(*args)
    assert r.returncode == 0, r.stderr
    assert compiles(log) == 1, (compiles(log), r.stdout)  # one bucket: one compiler run for three shapes
    for k, (f, seq) in enumerate(zip(files, (33, 41, 57))):
        assert f"run {k + 1} of 3: {f}:" in r.stdout
        assert f"input_ids int64[4,{seq}], attention_mask int64[4,{seq}]" in r.stdout
    assert "buckets: 1" in r.stdout and "bucket 1: made at batch=4, sequence=33" in r.stdout, r.stdout
    assert "its module reused (no compiler run)" in r.stdout
    # the packed GEMM weights: one copy, the two later plans took the first plan's (outputs checked below)
    m = re.search(r"packed weights: (\d+) bytes, one copy for every plan of equal packs \((\d+) taken from an earlier plan\)",
                  r.stdout)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) >= 2 and int(m.group(2)) % 2 == 0, r.stdout
    assert sorted(os.listdir(out)) == ["run33.npz", "run41.npz", "run57.npz"]
    for f in files:
        ref = tmp_path / f"ref_{f.stem}.npz"
        rr = lathe("run", bert, "--backend", "interp", "--input", f, "--output", ref)
        assert rr.returncode == 0, rr.stderr
        want, got = read_npz(ref), read_npz(out / f.name)
        assert sorted(got) == sorted(want)
        for name in want:
            assert got[name].shape == want[name].shape
            np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=f"{f.name} {name}")


def test_each_range_refused(bert, tmp_path):
    ok, far = tmp_path / "ok.npz", tmp_path / "far.npz"
    np.savez(ok, **bert_feeds(2, 16, 1))
    np.savez(far, **bert_feeds(2, 65, 2))
    out = tmp_path / "out"
    r = lathe("run", bert, "--dim", "sequence=1..64", "--each", far, "--each", ok, "--output", out, "--no-cache")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for word in (str(far), "input_ids", "'sequence'", "65", "1..64"):
        assert word in lines[0], lines[0]
    assert not out.exists() or not os.listdir(out)
    # a malformed range is a usage error; a range must name a dim left symbolic
    r = lathe("run", bert, "--dim", "sequence=9..2", "--each", ok)
    assert r.returncode == 1 and "sequence=9..2" in r.stderr
    r = lathe("run", bert, "--dim", "seq=1..9", "--each", ok)
    assert r.returncode == 1 and "'seq'" in r.stderr
    # a single run checks the range too
    r = lathe("run", bert, "--dim", "sequence=1..64", "--input", far, "--backend", "interp")
    assert r.returncode == 2 and "outside its range 1..64" in r.stderr


def test_compile_report(bert, tmp_path):
    r = lathe("compile", bert, "--no-cache", "--probe", "input_ids:4x33", "--probe", "attention_mask:4x41")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "probe 1: batch=4, sequence=33: " in out and "probe 2: batch=4, sequence=41: " in out, out
    assert "bucket 1: made at batch=4, sequence=33" in out
    assert "module 1 (bucket 1) runs: batch=4, sequence=33" in out
    assert "with run-time scalars" in out and "modules built" in out
    # -o and --save still need every dim bound
    r = lathe("compile", bert, "-o", tmp_path / "export")
    assert r.returncode == 1 and "'batch'" in r.stderr and "every dim must be bound" in r.stderr
    assert not (tmp_path / "export").exists()
    r = lathe("compile", bert, "--probe", "input_ids:4x3x3")
    assert r.returncode == 1 and "rank" in r.stderr


def test_compile_report_cuda_without_gpu(bert, tmp_path):
    """--target cuda emits the kernels of every probe shape without a device: shapes whose batch and
    sequence both move share one CUDA source (one NVRTC build on a GPU); a batch of one makes another.
    --dump-code writes the CUDA source (the last shape's: kernels taking their sizes at run time)."""
    probes = []
    for b, s in ((4, 33), (2, 41), (3, 50), (8, 60), (1, 16)):  # the attention's rows: one class (33..64)
        probes += ["--probe", f"input_ids:{b}x{s},attention_mask:{b}x{s}"]
    r = lathe("compile", bert, "--target", "cuda", *probes, "--dump-code", tmp_path / "code")
    assert r.returncode == 0, r.stderr
    cu = (tmp_path / "code" / "model.cu").read_text()
    assert "__global__" in cu and "run-time scalars" in cu, cu[:400]
    assert "kernels emitted, not built" in r.stdout, r.stdout
    assert "module 1 (bucket 1) runs: batch=4, sequence=33; batch=2, sequence=41; batch=3, sequence=50; " \
           "batch=8, sequence=60" in r.stdout, r.stdout
    assert "buckets: 2; modules built: 2, reused: 3" in r.stdout, r.stdout
    r = lathe("compile", bert, "--target", "cuda", "--dim", "batch=2", "--dim", "sequence=8")
    assert r.returncode == 1 and "-o DIR" in r.stderr  # every dim bound: code for one shape needs -o


def test_compile_default_probes(tmp_path, cache):
    m = two_inputs_model(tmp_path / "m.onnx")
    r = lathe("compile", m, "--dim", "N=2..10", "--cache-dir", cache)
    assert r.returncode == 0, r.stderr
    for k, n in enumerate((2, 6, 10)):
        assert f"probe {k + 1}: N={n}: " in r.stdout, r.stdout
    assert "probe 4" not in r.stdout
    assert "bucket 1: made at N=2" in r.stdout and "module 1 (bucket 1) runs: N=2" in r.stdout
    # a model whose dims are all bound prints the compile report as before
    r = lathe("compile", m, "--dim", "N=4", "--cache-dir", cache)
    assert r.returncode == 0 and "probe 1:" not in r.stdout and "bucket 1" not in r.stdout, r.stdout


def test_each_missing_file(tmp_path, cache):
    m = two_inputs_model(tmp_path / "m.onnx")
    rng = np.random.default_rng(5)
    good = tmp_path / "good.npz"
    np.savez(good, X=rng.standard_normal((3, 3)).astype(np.float32), Y=rng.standard_normal((3, 3)).astype(np.float32))
    out = tmp_path / "out"
    r = lathe("run", m, "--each", good, "--each", tmp_path / "missing.npz", "--output", out, "--cache-dir", cache)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "missing.npz" in r.stderr
    assert r.stdout == "" and not out.exists()  # nothing ran, nothing written


def test_each_fill_interp_and_artifact(tmp_path, cache):
    m = two_inputs_model(tmp_path / "m.onnx")
    rng = np.random.default_rng(6)
    x3, x5 = tmp_path / "x3.npz", tmp_path / "x5.npz"
    np.savez(x3, X=rng.standard_normal((3, 3)).astype(np.float32))
    np.savez(x5, X=rng.standard_normal((5, 3)).astype(np.float32))
    # Y is filled, shaped by N from X; the interpreter runs each file
    out = tmp_path / "out"
    r = lathe("run", m, "--backend", "interp", "--each", x3, "--each", x5, "--output", out)
    assert r.returncode == 0, r.stderr
    for f, n in ((x3, 3), (x5, 5)):
        got, x = read_npz(out / f.name), read_npz(f)["X"]
        np.testing.assert_allclose(got["Z"], np.maximum(x, 0) * 2, rtol=1e-6)
        assert got["W"].shape == (n, 3)
    # an input whose dims nothing gives is refused, naming it
    m2 = two_inputs_model(tmp_path / "m2.onnx", y_dims=("M", 3))
    r = lathe("run", m2, "--each", x3, "--cache-dir", cache)
    assert r.returncode != 0 and "'Y'" in r.stderr and "'M'" in r.stderr
    # an artifact is saved for one shape: files of that shape run, others are refused naming the file
    art = tmp_path / "m3.lathe"
    r = lathe("compile", m, "--dim", "N=3", "--save", art)
    assert r.returncode == 0, r.stderr
    r = lathe("run", art, "--each", x3, "--each", x5)
    assert r.returncode == 2 and "x5.npz" in r.stderr and "run 1 of 2" in r.stdout, (r.stdout, r.stderr)


def test_profile_family(tmp_path, cache):
    """profile --family times the plan of a model compiled for every shape at the inputs' shapes; the
    kernels are the static compile's, with run-time sizes (no --dim needed for the symbolic N)."""
    m = two_inputs_model(tmp_path / "m.onnx")
    rng = np.random.default_rng(6)
    np.save(tmp_path / "x.npy", rng.standard_normal((5, 3)).astype(np.float32))
    np.save(tmp_path / "y.npy", rng.standard_normal((5, 3)).astype(np.float32))
    args = ("profile", m, "--input", f"X={tmp_path / 'x.npy'}", "--input", f"Y={tmp_path / 'y.npy'}",
            "--runs", 3, "--threads", 1, "--cache-dir", cache)
    static, fam = lathe(*args), lathe(*args, "--family")
    assert static.returncode == 0 and fam.returncode == 0, static.stderr + fam.stderr
    for r in (static, fam):
        assert "run: median" in r.stdout and r.stdout.count("\nlt_k") == static.stdout.count("\nlt_k") >= 1, r.stdout
    bad = lathe(*args[:-2], "--family", "--dim", "N=1..4")  # the shape is outside the range
    assert bad.returncode != 0 and "N" in bad.stderr, bad.stdout + bad.stderr
