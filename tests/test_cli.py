"""test_cli.py — the `lathe` command line as a user meets it: help and version, exit codes (0 ok,
1 usage, 2 bad model or input, 3 unsupported), input files (.npy v1/v2/v3, .npz stored and deflated,
.pb), wrong inputs leaving no output file, the .npz output read back by numpy, symbolic dims bound
with --shapes / --dim, fills, inspect, and the conformance runner on a small hand-made suite.

The binary comes from $LATHE_BIN (default build/lathe). Models are written into each test's tmp_path
with onnx.helper, so the tests can run in parallel (pytest -n N).
"""
import json
import os
import shutil
import subprocess
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
NODE_SUITE = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def lathe(*args, timeout=300, env=None):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=full_env)


def save_model(path, nodes, inputs, outputs, opsets=(("", 17),), check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="test_cli")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


@pytest.fixture
def add_model(tmp_path):
    return save_model(tmp_path / "add.onnx", [helper.make_node("Add", ["X", "Y"], ["Z"])],
                      [vi("X", TensorProto.FLOAT, [2, 3]), vi("Y", TensorProto.FLOAT, [2, 3])],
                      [vi("Z", TensorProto.FLOAT, [2, 3])])


@pytest.fixture
def sym_model(tmp_path):
    return save_model(tmp_path / "sym.onnx", [helper.make_node("Add", ["X", "Y"], ["Z"])],
                      [vi("X", TensorProto.FLOAT, ["N", 3]), vi("Y", TensorProto.FLOAT, ["N", 3])],
                      [vi("Z", TensorProto.FLOAT, ["N", 3])])


def write_npy(path, arr, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version)
    return str(path)


def read_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


# ---- help, version, usage ----

def test_version():
    r = lathe("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("lathe ") and r.stdout.strip().split()[1].count(".") == 2


@pytest.mark.parametrize("args", [["--help"], ["help"], ["-h"], ["help", "run"], ["help", "inspect"],
                                  ["help", "conformance"], ["run", "--help"], ["inspect", "--help"],
                                  ["conformance", "--help"], ["run", "-h"], ["compile", "--help"],
                                  ["profile", "--help"], ["ceilings", "--help"], ["help", "compile"]])
def test_help(args):
    r = lathe(*args)
    assert r.returncode == 0, r.stderr
    assert "usage: lathe" in r.stdout


def test_every_command_documents_its_flags():
    run = lathe("run", "--help").stdout
    for flag in ["--input", "--shapes", "--dim", "--output", "--fill", "--seed", "--backend", "--bench",
                 "--threads", "-O0", "--verify-each", "--dump-after", "--time-passes", "--disable-pass",
                 "--stop-after", "--dump-code", "--dump-graph", "--cache-dir", "--verbose"]:
        assert flag in run
    comp = lathe("compile", "--help").stdout
    for flag in ["-o", "--target", "--shapes", "--dim", "--print-plan", "--embed-limit", "--name"]:
        assert flag in comp
    prof = lathe("profile", "--help").stdout
    for flag in ["--trace", "--runs", "--top", "--threads"]:
        assert flag in prof
    conf = lathe("conformance", "--help").stdout
    for flag in ["--backend", "--suite", "--json", "--filter", "-j", "--timeout", "--verbose"]:
        assert flag in conf
    insp = lathe("inspect", "--help").stdout
    for flag in ["--shapes", "--dim"]:
        assert flag in insp


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["run"], ["inspect"], ["run", "--bogus", "m.onnx"],
                                  ["inspect", "a.onnx", "b.onnx"], ["run", "m.onnx", "--fill", "pink"],
                                  ["run", "m.onnx", "--seed"], ["conformance", "--filter", "("],
                                  ["conformance", "-j", "0"], ["help", "nope"], ["run", "m.onnx", "-O7"],
                                  ["run", "m.onnx", "--threads", "x"], ["run", "m.onnx", "--bench", "0"],
                                  ["run", "m.onnx", "--stop-after", "-1"], ["compile"],
                                  ["compile", "m.onnx", "--target", "wasm"], ["profile"],
                                  ["profile", "m.onnx", "--runs", "0"], ["ceilings", "--bogus"]])
def test_usage_errors(args):
    r = lathe(*args)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "lathe: error:" in r.stderr or "usage:" in r.stderr


def test_bad_model_exit_2(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07\x3a\xff\xff\xff\xff\x0f not a model")
    for cmd in ("run", "inspect"):
        r = lathe(cmd, bad)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("lathe: error: ")
    r = lathe("run", tmp_path / "missing.onnx")
    assert r.returncode == 2 and "missing.onnx" in r.stderr


def test_backend_not_available(add_model):
    r = lathe("run", add_model, "--backend", "tpu")
    assert r.returncode == 3
    assert "backend 'tpu' is not available (backends: cpu, " in r.stderr and "interp)" in r.stderr


def test_unsupported_ops_exit_3(tmp_path):
    m = save_model(tmp_path / "u.onnx",
                   [helper.make_node("NoSuchOp", ["X"], ["T"], domain="test.lathe"),
                    helper.make_node("AlsoMissing", ["T"], ["Y"], domain="test.lathe")],
                   [vi("X", TensorProto.FLOAT, [2])], [vi("Y", TensorProto.FLOAT, [2])],
                   opsets=(("", 17), ("test.lathe", 1)), check=False)
    r = lathe("run", m, "--output", tmp_path / "o.npz")
    assert r.returncode == 3
    assert "NoSuchOp" in r.stderr and "AlsoMissing" in r.stderr  # all of them at once
    assert not (tmp_path / "o.npz").exists()
    r = lathe("inspect", m)
    assert r.returncode == 0
    assert "NoSuchOp" in r.stdout and "AlsoMissing" in r.stdout


# ---- inspect ----

def test_inspect(add_model, sym_model):
    r = lathe("inspect", add_model)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for s in ["ir_version: 8", "producer: test_cli", "ai.onnx 17", "X: float[2,3]", "Z: float[2,3]",
              "nodes: 1", "Add", "initializers: 0", "unsupported ops: none"]:
        assert s in out, s
    r = lathe("inspect", sym_model)
    assert "X: float[N,3]" in r.stdout
    r = lathe("inspect", sym_model, "--dim", "N=7")
    assert r.returncode == 0 and "X: float[7,3]" in r.stdout
    r = lathe("inspect", sym_model, "--shapes", "X:2x3")
    assert r.returncode == 0 and "X: float[2,3]" in r.stdout


# ---- run: inputs ----

@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_versions(tmp_path, add_model, version):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    fx = write_npy(tmp_path / "x.npy", x, version)
    fy = write_npy(tmp_path / "y.npy", y, version)
    out = tmp_path / "out.npz"
    r = lathe("run", add_model, "--input", f"X={fx}", "--input", f"Y={fy}", "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(read_npz(out)["Z"], x + y)
    assert "output 0 'Z': float[2,3]" in r.stdout


def test_fortran_and_big_endian_npy(tmp_path, add_model):
    x = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = np.arange(6, dtype=">f4").reshape(2, 3)
    out = tmp_path / "out.npz"
    r = lathe("run", add_model, "--input", f"X={write_npy(tmp_path / 'x.npy', x)}",
              "--input", f"Y={write_npy(tmp_path / 'y.npy', y)}", "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(read_npz(out)["Z"], x + y.astype(np.float32))


@pytest.mark.parametrize("saver", [np.savez, np.savez_compressed])
def test_npz_inputs(tmp_path, add_model, saver):
    x = np.random.default_rng(1).random((2, 3), dtype=np.float32)
    y = np.random.default_rng(2).random((2, 3), dtype=np.float32)
    saver(tmp_path / "in.npz", X=x, Y=y)
    with zipfile.ZipFile(tmp_path / "in.npz") as z:
        want = zipfile.ZIP_STORED if saver is np.savez else zipfile.ZIP_DEFLATED
        assert all(i.compress_type == want for i in z.infolist())
    out = tmp_path / "out.npz"
    # every array bound by name
    r = lathe("run", add_model, "--input", tmp_path / "in.npz", "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(read_npz(out)["Z"], x + y, rtol=1e-6)
    # one array picked by name
    saver(tmp_path / "one.npz", a=y)
    r = lathe("run", add_model, "--input", f"X={tmp_path / 'in.npz'}", "--input", f"Y={tmp_path / 'one.npz'}",
              "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(read_npz(out)["Z"], x + y, rtol=1e-6)


def test_pb_inputs(tmp_path, add_model):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(x, "X").SerializeToString())
    (tmp_path / "y.pb").write_bytes(numpy_helper.from_array(x * 2, "Y").SerializeToString())
    out = tmp_path / "out.npz"
    r = lathe("run", add_model, "--input", f"X={tmp_path / 'x.pb'}", "--input", f"Y={tmp_path / 'y.pb'}",
              "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(read_npz(out)["Z"], x * 3)


@pytest.mark.parametrize("dt", ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"])
def test_dtypes_round_trip(tmp_path, dt):
    npdt = np.dtype(dt)
    onnx_dt = helper.np_dtype_to_tensor_dtype(npdt)
    m = save_model(tmp_path / "id.onnx", [helper.make_node("Identity", ["X"], ["Y"])],
                   [vi("X", onnx_dt, [3, 2])], [vi("Y", onnx_dt, [3, 2])])
    rng = np.random.default_rng(0)
    if npdt.kind == "b":
        x = rng.random((3, 2)) > 0.5
    elif npdt.kind == "f":
        x = (rng.random((3, 2)) * 100 - 50).astype(npdt)
    else:
        info = np.iinfo(npdt)
        x = rng.integers(info.min, info.max, (3, 2), dtype=npdt, endpoint=True)
    out = tmp_path / "out.npz"
    r = lathe("run", m, "--input", write_npy(tmp_path / "x.npy", x), "--output", out)
    assert r.returncode == 0, r.stderr
    y = read_npz(out)["Y"]
    assert y.dtype == npdt and y.shape == (3, 2)
    np.testing.assert_array_equal(y, x)


def test_wrong_shape_and_dtype_exit_2(tmp_path, add_model):
    out = tmp_path / "out.npz"
    good = write_npy(tmp_path / "good.npy", np.zeros((2, 3), np.float32))
    cases = {
        "shape": write_npy(tmp_path / "shape.npy", np.zeros((3, 2), np.float32)),
        "rank": write_npy(tmp_path / "rank.npy", np.zeros((6,), np.float32)),
        "dtype": write_npy(tmp_path / "dtype.npy", np.zeros((2, 3), np.float64)),
    }
    for what, f in cases.items():
        r = lathe("run", add_model, "--input", f"X={good}", "--input", f"Y={f}", "--output", out)
        assert r.returncode == 2, (what, r.stderr)
        assert "'Y'" in r.stderr and "float[2,3]" in r.stderr, r.stderr  # names input, expected and got
        assert not out.exists()
        assert not [p for p in os.listdir(tmp_path) if p.startswith("out.npz")]  # no temp file either
    # corrupt files
    (tmp_path / "trunc.npy").write_bytes(open(good, "rb").read()[:-3])
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 this is not a zip")
    for f in ("trunc.npy", "junk.npz"):
        r = lathe("run", add_model, "--input", f"X={good}", "--input", f"Y={tmp_path / f}", "--output", out)
        assert r.returncode == 2, r.stderr
        assert f in r.stderr
        assert not out.exists()
    r = lathe("run", add_model, "--input", f"X={tmp_path / 'nope.npy'}")
    assert r.returncode == 2 and "nope.npy" in r.stderr


def test_input_binding_errors(tmp_path, add_model):
    x = write_npy(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    r = lathe("run", add_model, "--input", x)  # two inputs: which one?
    assert r.returncode == 1 and "NAME=FILE" in r.stderr
    r = lathe("run", add_model, "--input", f"Q={x}")
    assert r.returncode == 1 and "'Q'" in r.stderr
    r = lathe("run", add_model, "--input", f"X={x}", "--input", f"X={x}")
    assert r.returncode == 1 and "twice" in r.stderr
    np.savez(tmp_path / "extra.npz", X=np.zeros((2, 3), np.float32), W=np.zeros(1, np.float32))
    r = lathe("run", add_model, "--input", tmp_path / "extra.npz")
    assert r.returncode == 2 and "'W'" in r.stderr


def test_output_overwrite_is_atomic(tmp_path, add_model):
    out = tmp_path / "out.npz"
    out.write_bytes(b"old")
    bad = write_npy(tmp_path / "bad.npy", np.zeros((1,), np.float32))
    r = lathe("run", add_model, "--input", f"X={bad}", "--output", out)
    assert r.returncode == 2
    assert out.read_bytes() == b"old"
    r = lathe("run", add_model, "--output", out)
    assert r.returncode == 0, r.stderr
    assert read_npz(out)["Z"].shape == (2, 3)


# ---- run: fills, seeds, symbolic dims ----

def test_fills(tmp_path, add_model):
    out = tmp_path / "o.npz"
    expect = {"zeros": 0.0, "ones": 2.0}
    for kind, v in expect.items():
        r = lathe("run", add_model, "--fill", kind, "--output", out)
        assert r.returncode == 0, r.stderr
        np.testing.assert_array_equal(read_npz(out)["Z"], np.full((2, 3), v, np.float32))
    r = lathe("run", add_model, "--fill", "ramp", "--output", out)
    ramp = (np.arange(6).reshape(2, 3) / 6).astype(np.float32)
    np.testing.assert_array_equal(read_npz(out)["Z"], ramp + ramp)

    def seeded(seed):
        assert lathe("run", add_model, "--seed", seed, "--output", out).returncode == 0
        return read_npz(out)["Z"]

    a, b, c = seeded(1), seeded(1), seeded(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert ((a >= 0) & (a < 2)).all()


def test_symbolic_dims(tmp_path, sym_model):
    out = tmp_path / "o.npz"
    r = lathe("run", sym_model)
    assert r.returncode == 1
    assert "'N'" in r.stderr and "--dim" in r.stderr
    r = lathe("run", sym_model, "--dim", "N=4", "--output", out)
    assert r.returncode == 0, r.stderr
    assert read_npz(out)["Z"].shape == (4, 3)
    r = lathe("run", sym_model, "--shapes", "X:5x3,Y:5x3", "--output", out)
    assert r.returncode == 0, r.stderr
    assert read_npz(out)["Z"].shape == (5, 3)
    # N bound by the data of X, Y filled to match
    x = write_npy(tmp_path / "x.npy", np.ones((7, 3), np.float32))
    r = lathe("run", sym_model, "--input", f"X={x}", "--fill", "ones", "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(read_npz(out)["Z"], np.full((7, 3), 2, np.float32))
    # inconsistent N
    y = write_npy(tmp_path / "y.npy", np.ones((6, 3), np.float32))
    r = lathe("run", sym_model, "--input", f"X={x}", "--input", f"Y={y}", "--output", out)
    assert r.returncode == 2 and "'N'" in r.stderr
    r = lathe("run", sym_model, "--dim", "nosuch=3")
    assert r.returncode in (1, 2) and "nosuch" in r.stderr


def test_summary_output(tmp_path, add_model):
    r = lathe("run", add_model, "--fill", "ramp")
    assert r.returncode == 0, r.stderr
    assert "output 0 'Z': float[2,3]" in r.stdout
    assert "min 0" in r.stdout and "max 1.66667" in r.stdout and "mean" in r.stdout
    assert "[0, 0.333333, 0.666667, 1, 1.33333, 1.66667]" in r.stdout


def test_output_npz_is_valid_zip(tmp_path):
    m = save_model(tmp_path / "two.onnx",
                   [helper.make_node("Identity", ["X"], ["A"]), helper.make_node("Not", ["B"], ["C"])],
                   [vi("X", TensorProto.DOUBLE, [0, 4]), vi("B", TensorProto.BOOL, [3])],
                   [vi("A", TensorProto.DOUBLE, [0, 4]), vi("C", TensorProto.BOOL, [3])])
    out = tmp_path / "o.npz"
    r = lathe("run", m, "--fill", "zeros", "--output", out)
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(out) as z:
        assert z.testzip() is None
        assert sorted(z.namelist()) == ["A.npy", "C.npy"]
    d = read_npz(out)
    assert d["A"].shape == (0, 4) and d["A"].dtype == np.float64
    np.testing.assert_array_equal(d["C"], np.ones(3, bool))


# ---- conformance ----

def make_suite(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for t in ("test_abs", "test_add"):
        shutil.copytree(os.path.join(NODE_SUITE, t), suite / t)
    # a wrong expected output: must fail with the first mismatching index
    shutil.copytree(os.path.join(NODE_SUITE, "test_abs"), suite / "test_abs_wrong")
    p = suite / "test_abs_wrong" / "test_data_set_0" / "output_0.pb"
    t = onnx.load_tensor(str(p))
    a = numpy_helper.to_array(t).copy()
    a.flat[5] += 1
    p.write_bytes(numpy_helper.from_array(a, t.name).SerializeToString())
    # no data set: skipped
    (suite / "test_nodata").mkdir()
    shutil.copy(os.path.join(NODE_SUITE, "test_abs", "model.onnx"), suite / "test_nodata")
    # an unloadable model: a failure, not a crash of the runner
    (suite / "test_garbage").mkdir()
    (suite / "test_garbage" / "model.onnx").write_bytes(b"\xff" * 64)
    (suite / "test_garbage" / "test_data_set_0").mkdir()
    return suite


def test_conformance_runner(tmp_path):
    suite = make_suite(tmp_path)
    js = tmp_path / "r.json"
    r = lathe("conformance", "--suite", suite, "-j", "2", "--json", js)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "2 passed, 2 failed, 1 skipped", r.stdout
    assert any(l.startswith("FAIL test_abs_wrong: ") and "index 5" in l for l in lines), r.stdout
    assert any(l.startswith("FAIL test_garbage: ") for l in lines)
    data = json.loads(js.read_text())
    by = {t["name"]: t for t in data["tests"]}
    assert by["test_nodata"]["status"] == "skip"
    assert by["test_abs_wrong"]["status"] == "fail"
    assert by["test_abs_wrong"]["ops"] == ["Abs"]
    assert set(by) == {"test_abs", "test_add", "test_abs_wrong", "test_nodata", "test_garbage"}
    assert data["passed"] + data["failed"] + data["skipped"] == 5
    # filter and verbose
    r = lathe("conformance", "--suite", suite, "--filter", "^test_abs$", "--verbose", "-j1")
    assert r.returncode == 0
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("PASS test_abs (") and lines[1] == "1 passed, 0 failed, 0 skipped"
    r = lathe("conformance", "--suite", suite, "--filter", "zzz")
    assert r.stdout.strip() == "0 passed, 0 failed, 0 skipped"


def test_conformance_timeout(tmp_path):
    """A test that never ends is killed after --timeout and reported; the run goes on."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Identity", ["x_in"], ["x_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("x_in", TensorProto.FLOAT, [1])],
        [vi("c_out", TensorProto.BOOL, []), vi("x_out", TensorProto.FLOAT, [1])])
    suite = tmp_path / "suite"
    d = suite / "test_hang" / "test_data_set_0"
    d.mkdir(parents=True)
    save_model(suite / "test_hang" / "model.onnx", [helper.make_node("Loop", ["M", "C", "X"], ["Y"], body=body)],
               [vi("M", TensorProto.INT64, []), vi("C", TensorProto.BOOL, []), vi("X", TensorProto.FLOAT, [1])],
               [vi("Y", TensorProto.FLOAT, [1])])
    for i, a in enumerate([np.array(10**15, np.int64), np.array(True), np.array([1], np.float32)]):
        (d / f"input_{i}.pb").write_bytes(numpy_helper.from_array(a).SerializeToString())
    (d / "output_0.pb").write_bytes(numpy_helper.from_array(np.array([1], np.float32)).SerializeToString())
    shutil.copytree(os.path.join(NODE_SUITE, "test_abs"), suite / "test_abs")
    r = lathe("conformance", "--suite", suite, "--timeout", "1", "-j", "2", timeout=120)
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["FAIL test_hang: timed out after 1 s", "1 passed, 1 failed, 0 skipped"]


def test_conformance_missing_suite(tmp_path):
    r = lathe("conformance", "--suite", tmp_path / "nope")
    assert r.returncode == 2 and "nope" in r.stderr
    r = lathe("conformance", env={"LATHE_ONNX_SUITE": "", "LATHE_PYTHON": str(tmp_path / "no-python")})
    assert r.returncode == 2 and "setup" in r.stderr
    r = lathe("conformance", "--backend", "tpu")
    assert r.returncode == 3 and "backend 'tpu' is not available" in r.stderr
    (tmp_path / "empty").mkdir()  # a suite folder with no tests (a failed generation) is an error, not "0 passed"
    r = lathe("conformance", "--suite", tmp_path / "empty")
    assert r.returncode == 2 and "holds no test folders" in r.stderr and r.stdout == ""
