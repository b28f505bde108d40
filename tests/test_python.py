"""test_python.py — the Python package (python/lathe) as a user meets it: lathe.compile on both backends,
calling a model with keywords / a dict / positional arrays, input and output metadata (symbolic dims by
name), dtypes (float, int64, bool, strings), the errors a caller can make (wrong dtype, wrong shape,
missing or unknown input, a missing file, unbound dims), threads, closing, use from several threads,
the answers against numpy and onnxruntime, and `pip install ./python` producing a package that finds
its own liblathe.so.

The library under test is $LATHE_LIBRARY, default the liblathe.so next to $LATHE_BIN (build/lathe), and
the package is imported from python/ of this checkout. Models are written into tmp_path with
onnx.helper; compiled code goes to a per-module cache folder (no writes to ~/.cache).
"""
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE_BIN = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE_BIN):
    LATHE_BIN = os.path.join(ROOT, LATHE_BIN)
LIB = os.environ.get("LATHE_LIBRARY") or os.path.join(os.path.dirname(LATHE_BIN), "liblathe.so")
os.environ["LATHE_LIBRARY"] = LIB
sys.path.insert(0, os.path.join(ROOT, "python"))
import lathe  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def save_model(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_python")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


@pytest.fixture
def mlp(tmp_path):
    """y = relu(x @ W + b) * 2, z = argmax(y, axis=1) (int64), x: float[N, 8] with N symbolic."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("Mul", ["r", "two"], ["y"]),
             helper.make_node("ArgMax", ["y"], ["z"], axis=1, keepdims=0)]
    inits = [onnx.numpy_helper.from_array(w, "W"), onnx.numpy_helper.from_array(b, "b"),
             onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    path = save_model(tmp_path / "mlp.onnx", nodes, [vi("x", TensorProto.FLOAT, ["N", 8])],
                      [vi("y", TensorProto.FLOAT, ["N", 16]), vi("z", TensorProto.INT64, ["N"])], inits)

    def ref(x):
        y = np.maximum(x @ w + b, 0) * 2
        return y, y.argmax(axis=1)
    return path, ref


def test_library_and_version():
    assert lathe.library_path() == os.path.realpath(LIB) or lathe.library_path() == LIB
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        assert f"VERSION {lathe.version()}" in f.read()
    assert lathe.__version__ == lathe.version()
    assert lathe.backends() == ["cpu", "interp"]


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_mlp_call_forms_and_metadata(mlp, cache, backend):
    path, ref = mlp
    kw = {"cache_dir": cache} if backend == "cpu" else {}
    m = lathe.compile(path, shapes={"x": (4, 8)} if backend == "cpu" else None, backend=backend, **kw)
    assert [t.name for t in m.inputs] == ["x"] and m.inputs[0].dtype == np.float32
    assert [(t.name, t.dtype) for t in m.outputs] == [("y", np.float32), ("z", np.int64)]
    if backend == "cpu":
        assert m.inputs[0].shape == (4, 8) and m.outputs[0].shape == (4, 16) and m.outputs[1].shape == (4,)
        assert "compile" in m.report
    else:
        assert m.inputs[0].shape == ("N", 8) and m.outputs[0].shape == ("N", 16)
        assert m.report == ""
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    want_y, want_z = ref(x)
    for out in (m(x=x), m({"x": x}), m(x), m.run({"x": x}), m.run(x=x)):
        assert list(out) == ["y", "z"]
        np.testing.assert_allclose(out["y"], want_y, rtol=1e-5, atol=1e-5)
        assert out["z"].dtype == np.int64 and np.array_equal(out["z"], want_z)
    # outputs are fresh arrays the caller owns
    a, b = m(x=x), m(x=x)
    a["y"][:] = 0
    assert np.abs(b["y"]).sum() > 0
    # non-contiguous input is accepted (copied)
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(m(x=xt)["y"], want_y, rtol=1e-5, atol=1e-5)
    if backend == "interp":  # symbolic N binds to the data
        x7 = np.ones((7, 8), np.float32)
        assert m(x=x7)["y"].shape == (7, 16)
    m.close()
    with pytest.raises(lathe.LatheError, match="closed"):
        m(x=x)
    m.close()  # twice is fine


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_caller_errors(mlp, cache, backend):
    path, _ = mlp
    kw = {"cache_dir": cache} if backend == "cpu" else {}
    m = lathe.compile(path, shapes="x:4x8", backend=backend, **kw)
    x = np.zeros((4, 8), np.float32)
    with pytest.raises(TypeError, match="expected dtype float32, got float64"):
        m(x=x.astype(np.float64))
    with pytest.raises(TypeError, match="missing input"):
        m()
    with pytest.raises(TypeError, match="unknown input.*'q'"):
        m(x=x, q=x)
    with pytest.raises(TypeError, match="given twice"):
        m(x, x=x)
    with pytest.raises(lathe.LatheError, match="'x'") as e:
        m(x=np.zeros((4, 9), np.float32))
    assert e.value.status == "invalid"
    # a list is converted to the declared dtype
    assert m(x=[[0.0] * 8] * 4)["y"].shape == (4, 16)


def test_compile_errors(tmp_path, mlp, cache):
    with pytest.raises(lathe.LatheError, match="nope.onnx") as e:
        lathe.compile(str(tmp_path / "nope.onnx"), backend="interp")
    assert e.value.status in ("io", "invalid")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    with pytest.raises(lathe.LatheError, match="bad.onnx"):
        lathe.compile(str(bad), backend="cpu", cache_dir=cache)
    path, _ = mlp
    m = lathe.compile(path, backend="cpu", cache_dir=cache)  # N left symbolic: compiled for every N
    assert "buckets" in m.report or "none yet" in m.report, m.report
    with pytest.raises(lathe.LatheError, match="backend 'gpu'"):
        lathe.compile(path, backend="gpu")
    with pytest.raises(ValueError, match="non-negative"):
        lathe.compile(path, shapes={"x": (4, -1)})
    with pytest.raises(ValueError, match="opt_level"):
        lathe.compile(path, shapes={"x": (4, 8)}, opt_level=7)
    with pytest.raises(lathe.LatheError, match="one thread"):
        lathe.compile(path, backend="interp", threads=4)


def test_dims_opt_levels_threads(mlp, cache):
    path, ref = mlp
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    want, _ = ref(x)
    for level in (0, 1, 2, 3):
        m = lathe.compile(path, dims={"N": 3}, opt_level=level, threads=1, cache_dir=cache)
        assert m.inputs[0].shape == (3, 8) and m.threads == 1
        np.testing.assert_allclose(m(x=x)["y"], want, rtol=1e-5, atol=1e-5)
        m.threads = 2
        assert m.threads == 2
        np.testing.assert_allclose(m(x=x)["y"], want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        m.threads = -1


def test_last_run_copies_and_device_run_refused_on_cpu(mlp, cache):
    """A model compiled for the CPU copies nothing between host and device, and refuses device pointers
    (lathe_compiled_run_device) naming its backend."""
    import ctypes
    from lathe import _capi
    path, ref = mlp
    m = lathe.compile(path, dims={"N": 2}, threads=1, cache_dir=cache)
    assert m.last_run_copies == {k: 0 for k in ("host_to_device", "device_to_host", "device_to_device",
                                                "host_to_device_bytes", "device_to_host_bytes",
                                                "device_to_device_bytes")}
    m(x=np.zeros((2, 8), np.float32))
    assert m.last_run_copies["host_to_device"] == 0
    assert lathe.compile(path, backend="interp").last_run_copies is None
    lib = _capi.load()
    x, y, z = np.zeros((2, 8), np.float32), np.zeros((2, 16), np.float32), np.zeros(2, np.int64)
    ins = (ctypes.c_void_p * 1)(x.ctypes.data)
    outs = (ctypes.c_void_p * 2)(y.ctypes.data, z.ctypes.data)
    assert lib.lathe_compiled_run_device(m._h, ins, 1, outs, 2, None) == 3  # unsupported
    assert b"compiled for the cpu backend, which runs on host memory" in lib.lathe_compiled_error(m._h)
    assert lib.lathe_compiled_run_device(m._h, ins, 2, outs, 2, None) == 1  # usage: the counts
    assert lib.lathe_compiled_run_device(None, ins, 1, outs, 2, None) == 1
    fam = lathe.compile(path, threads=1, cache_dir=cache)  # N unbound: one model for every shape
    assert lib.lathe_compiled_run_device(fam._h, ins, 1, outs, 2, None) == 3
    assert b"compiled for every shape" in lib.lathe_compiled_error(fam._h)
    err = ctypes.create_string_buffer(512)
    h = ctypes.c_void_p()
    assert lib.lathe_device_open(b"cpu", 0, ctypes.byref(h), err, len(err)) == 3 and h.value is None
    assert b"runs on host memory" in err.value


def test_strings_and_bools_on_interp(tmp_path):
    path = save_model(tmp_path / "s.onnx",
                      [helper.make_node("Identity", ["s"], ["s_out"]), helper.make_node("Not", ["b"], ["nb"])],
                      [vi("s", TensorProto.STRING, [3]), vi("b", TensorProto.BOOL, [2, 2])],
                      [vi("s_out", TensorProto.STRING, [3]), vi("nb", TensorProto.BOOL, [2, 2])])
    m = lathe.compile(path, backend="interp")
    assert m.inputs[0].dtype == np.object_ and m.inputs[1].dtype == np.bool_
    out = m(s=np.array(["a", "héllo", ""]), b=np.array([[True, False], [False, True]]))
    assert list(out["s_out"]) == ["a", "héllo", ""]
    assert out["nb"].dtype == np.bool_ and out["nb"].tolist() == [[False, True], [True, False]]


def test_threads_share_a_model(mlp, cache):
    path, ref = mlp
    m = lathe.compile(path, shapes={"x": (4, 8)}, cache_dir=cache)
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(8)]
    errors = []

    def work(x):
        for _ in range(20):
            if not np.allclose(m(x=x)["y"], ref(x)[0], rtol=1e-5, atol=1e-5):
                errors.append("mismatch")
    ts = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_light_model_matches_onnxruntime(cache):
    ort = pytest.importorskip("onnxruntime")
    path = os.path.join(LIGHT, "light_squeezenet.onnx")
    x = np.random.default_rng(5).standard_normal((1, 3, 224, 224)).astype(np.float32)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"data_0": x})[0]
    m = lathe.compile(path, threads=2, cache_dir=cache)
    got = m(data_0=x)["softmaxout_1"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


def _run_py(code, env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600,
                          cwd="/")


def test_pip_install_ships_the_library(tmp_path):
    """`pip install ./python` (offline, with the library already built) gives a package that loads the
    liblathe.so inside it, with no LATHE_LIBRARY and no source tree on the path."""
    target = tmp_path / "site"
    env = dict(os.environ, LATHE_LIBRARY=LIB)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                        str(target), os.path.join(ROOT, "python")], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    shipped = target / "lathe" / "liblathe.so"
    assert shipped.is_file() and shipped.stat().st_size == os.path.getsize(LIB)
    env = {k: v for k, v in os.environ.items() if k not in ("LATHE_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    model = save_model(tmp_path / "add.onnx", [helper.make_node("Add", ["a", "b"], ["c"])],
                       [vi("a", TensorProto.FLOAT, [2]), vi("b", TensorProto.FLOAT, [2])],
                       [vi("c", TensorProto.FLOAT, [2])])
    r = _run_py("import lathe, numpy as np\n"
                "print(lathe.library_path())\n"
                f"m = lathe.compile({model!r}, backend='interp')\n"
                "print(m(a=np.array([1, 2], np.float32), b=np.array([3, 4], np.float32))['c'].tolist())\n", env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == str(shipped) and lines[1] == "[4.0, 6.0]"
    # an explicit LATHE_LIBRARY that does not exist is an error, not a silent fallback
    env["LATHE_LIBRARY"] = str(tmp_path / "missing.so")
    r = _run_py("import lathe\nlathe.version()\n", env)
    assert r.returncode != 0 and "missing.so: no such file" in r.stderr


# ---------------------------------------------------------------- arguments a caller gets wrong (or right)
@pytest.fixture
def scaled(tmp_path):
    """y = x * s with x: float[N, 3] and s a 0-d (scalar) input."""
    return save_model(tmp_path / "scaled.onnx", [helper.make_node("Mul", ["x", "s"], ["y"])],
                      [vi("x", TensorProto.FLOAT, ["N", 3]), vi("s", TensorProto.FLOAT, [])],
                      [vi("y", TensorProto.FLOAT, ["N", 3])])


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_scalar_inputs(scaled, cache, backend):
    m = lathe.compile(scaled, backend=backend, dims={"N": 2} if backend == "cpu" else None, cache_dir=cache)
    assert m.inputs[1].shape == ()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for s in (np.float32(2), np.array(2, np.float32), 2.0, np.array(2, ">f4")):
        np.testing.assert_array_equal(m(x=x, s=s)["y"], x * 2)


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_any_memory_layout_and_byte_order(scaled, cache, backend):
    m = lathe.compile(scaled, backend=backend, dims={"N": 2} if backend == "cpu" else None, cache_dir=cache)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]  # not contiguous
    for arg in (x, np.asfortranarray(x), x.astype(">f4"), x.copy().view(x.dtype)):
        np.testing.assert_array_equal(m(x=arg, s=np.float32(3))["y"], x * 3)
    with pytest.raises(TypeError, match="expected dtype float32, got >f8"):
        m(x=x.astype(">f8"), s=np.float32(1))


def test_errors_name_the_python_arguments(scaled, cache):
    for kw, words in [({"shapes": {"q": (1,)}}, "shapes: the model has no input named 'q'"),
                      ({"dims": {"M": 3}}, "dims: the model has no dimension named 'M'"),
                      ({"shapes": "x:2y3"}, "shapes: bad separator in 'x:2y3'"),
                      ({"dims": "N=5..2"}, "dim 'N': range 5..2 is empty")]:
        with pytest.raises(lathe.LatheError) as e:
            lathe.compile(scaled, cache_dir=cache, **kw)
        assert words in str(e.value) and "--" not in str(e.value), str(e.value)


def test_arguments_checked_before_the_library(tmp_path, scaled, cache):
    bad = [({"threads": 2 ** 40}, ValueError, "threads must be between 0 and"),  # a C int would wrap to 0
           ({"threads": 1.5}, TypeError, "threads must be an integer"),
           ({"seed": 2 ** 64}, ValueError, "seed must be between 0 and"),
           ({"seed": -1}, ValueError, "seed"),
           ({"opt_level": True}, ValueError, "opt_level"),
           ({"shapes": {"x": (2 ** 63, 3)}}, ValueError, "below 2\\*\\*63"),
           ({"shapes": {"x": [1] * 17}}, ValueError, "rank 17 exceeds 16"),
           ({"shapes": {"x\0": (2, 3)}}, ValueError, "NUL"),
           ({"shapes": 5}, TypeError, "shapes must be a dict or a string"),
           ({"dims": {"N": 2 ** 64}}, ValueError, "below 2\\*\\*63"),
           ({"cache_dir": scaled + "\0x"}, ValueError, "cache_dir: embedded NUL"),
           ({"enable_passes": 5}, TypeError, "enable_passes")]
    for kw, exc, words in bad:
        with pytest.raises(exc, match=words):
            lathe.compile(scaled, **{"dims": {"N": 2}, "cache_dir": cache, **kw})
    with pytest.raises(ValueError, match="path: embedded NUL"):  # would open scaled.onnx, not this path
        lathe.compile(scaled + "\0.txt", backend="interp")
    with pytest.raises(ValueError, match="path is empty"):
        lathe.compile("", backend="interp")
    with pytest.raises(TypeError, match="path must be a string or a path"):
        lathe.compile(5)
    m = lathe.compile(scaled, backend="interp")
    with pytest.raises(TypeError, match="element 0 is int"):
        lathe.compile(_strings_model(tmp_path), backend="interp")(t=np.array([1, "a"], dtype=object))
    with pytest.raises(ValueError, match="rank 17 exceeds 16"):
        m(x=np.zeros((1,) * 17, np.float32), s=np.float32(1))
    with pytest.raises(ValueError, match="input 'x': cannot make an array"):
        m(x=[[1.0], [1.0, 2.0]], s=1.0)


def _strings_model(tmp_path):
    return save_model(tmp_path / "strings.onnx", [helper.make_node("Identity", ["t"], ["y"])],
                      [vi("t", TensorProto.STRING, [2])], [vi("y", TensorProto.STRING, [2])])


def test_dump_code_dir_gets_its_parents(tmp_path, scaled, cache):
    d = tmp_path / "a" / "b" / "code"
    lathe.compile(scaled, dims={"N": 2}, cache_dir=cache, dump_code_dir=d)
    assert (d / "model.c").is_file()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError, match="dump_code_dir: cannot create folder"):
        lathe.compile(scaled, dims={"N": 2}, cache_dir=cache, dump_code_dir=tmp_path / "file" / "sub")


def test_random_arguments_never_crash():
    """A bounded run of tests/fuzz_python_args.py: every case works or raises a caller's exception."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fuzz_python_args.py"), "--cases", "60",
                        "--seed", "7", "--batch", "30"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, LATHE_LIBRARY=LIB))
    assert r.returncode == 0, r.stdout + r.stderr


def test_seed_reaches_compiled_runs(tmp_path):
    """compile(seed=) seeds the random operators of a compiled model as it does the interpreter's."""
    p = save_model(tmp_path / "rn.onnx", [helper.make_node("RandomNormalLike", ["x"], ["r"]),
                                           helper.make_node("Add", ["r", "x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    x = np.zeros(4, np.float32)
    ref = lathe.compile(p, backend="interp", seed=5)(x)["y"]
    for backend in ("interp", "cpu"):
        np.testing.assert_array_equal(lathe.compile(p, backend=backend, seed=5, cache_dir=str(tmp_path / "c"))(x)["y"], ref)
    other = lathe.compile(p, backend="cpu", seed=6, cache_dir=str(tmp_path / "c"))(x)["y"]
    assert not np.array_equal(other, ref)
