"""test_cli_robustness.py — small things a user of the command line trips on: model names holding
terminal control sequences are printed escaped by inspect, run, compile and in error messages; output
folders (compile -o DIR, --dump-code DIR, --dump-graph FILE) are created with their missing parents,
and a path that cannot be one fails with a clear message; a file that is not an ONNX model says so
first (a truncated model still says where it ends); --input NAME=FILE with names holding '='.
The binary comes from $LATHE_BIN (default build/lathe); models are written into tmp_path.
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)

ESC = "\x1b[31mred\x1b[0m"  # what a hostile model would name things: colours, a title, a bell
TITLE = "t\x1b]0;owned\x07"


def lathe(*args, timeout=300):
    r = subprocess.run([LATHE, *map(str, args)], capture_output=True, timeout=timeout)
    r.stdout, r.stderr = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    return r


def save(path, nodes, inputs, outputs, **kw):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], **kw)
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


@pytest.fixture
def ansi_model(tmp_path):
    return save(tmp_path / "ansi.onnx", [helper.make_node("Relu", [ESC], [TITLE], name="n\x1b[2J")],
                [vi(ESC, TensorProto.FLOAT, ["b\x1b[1m", 3])], [vi(TITLE, TensorProto.FLOAT, ["b\x1b[1m", 3])],
                producer_name="p\x1b[2J\u202e")


def no_controls(text):
    return not any(ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f or c == "\u202e" for c in text)


# ---------------------------------------------------------------- names printed escaped
def test_inspect_escapes_names(ansi_model):
    r = lathe("inspect", ansi_model, "--graph")
    assert r.returncode == 0, r.stderr
    assert no_controls(r.stdout), repr(r.stdout)
    assert "\\x1b[31mred\\x1b[0m: float[b\\x1b[1m,3]" in r.stdout
    assert "t\\x1b]0;owned\\x07" in r.stdout and "producer: p\\x1b[2J\\xe2\\x80\\xae" in r.stdout


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_run_escapes_names(tmp_path, ansi_model, backend):
    r = lathe("run", ansi_model, "--backend", backend, "--dim", "b\x1b[1m=2", "--verbose", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert no_controls(r.stdout) and no_controls(r.stderr), repr(r.stdout + r.stderr)
    assert "output 0 't\\x1b]0;owned\\x07': float[2,3]" in r.stdout


def test_run_escapes_string_values(tmp_path):
    p = save(tmp_path / "s.onnx", [helper.make_node("Identity", ["t"], ["y"])],
             [vi("t", TensorProto.STRING, [2])], [vi("y", TensorProto.STRING, [2])])
    x = tmp_path / "t.npy"
    np.save(x, np.array(["a\x1b[2Jb", "\u00e9\x07"]))
    r = lathe("run", p, "--backend", "interp", "--input", f"t={x}")
    assert r.returncode == 0, r.stderr
    assert no_controls(r.stdout) and '"a\\x1b[2Jb", "\u00e9\\x07"' in r.stdout, r.stdout


def test_errors_escape_names(tmp_path, ansi_model):
    x = tmp_path / "x.npy"
    np.save(x, np.ones((2, 3), np.float32))
    r = lathe("run", ansi_model, "--backend", "interp", "--input", f"nosuch={x}")
    assert r.returncode == 1
    assert no_controls(r.stderr) and "inputs: \\x1b[31mred\\x1b[0m" in r.stderr, r.stderr
    r = lathe("run", ansi_model, "--backend", "interp")  # the unbound dim's name in the library's message
    assert r.returncode == 1 and no_controls(r.stderr) and "b\\x1b[1m" in r.stderr, r.stderr


def test_compile_report_escapes_names(tmp_path, ansi_model):
    r = lathe("compile", ansi_model, "--dim", "b\x1b[1m=2", "--no-cache", "--print-plan")
    assert r.returncode == 0, r.stderr
    assert no_controls(r.stdout) and no_controls(r.stderr), repr(r.stdout)


# ---------------------------------------------------------------- output folders
@pytest.fixture
def relu_model(tmp_path):
    return save(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, [2, 3])],
                [vi("y", TensorProto.FLOAT, [2, 3])])


def test_compile_creates_missing_parents(tmp_path, relu_model):
    out, code, graph = tmp_path / "a" / "b" / "export", tmp_path / "c" / "d" / "code", tmp_path / "e" / "f" / "g.onnx"
    r = lathe("compile", relu_model, "-o", out, "--dump-code", code, "--dump-graph", graph, "--no-cache")
    assert r.returncode == 0, r.stderr
    assert (out / "model.c").is_file() and (code / "model.c").is_file() and graph.is_file()
    assert oct((tmp_path / "a").stat().st_mode & 0o777) == oct(0o777 & ~current_umask())
    r = lathe("run", relu_model, "--dump-code", tmp_path / "r" / "s", "--no-cache")  # every command that compiles
    assert r.returncode == 0 and (tmp_path / "r" / "s" / "model.c").is_file(), r.stderr


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("opt", ["-o", "--dump-code", "--dump-graph"])
def test_output_under_a_file_fails_clearly(tmp_path, relu_model, opt):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    target = blocker / "sub" / ("g.onnx" if opt == "--dump-graph" else "dir")
    r = lathe("compile", relu_model, opt, target, "--no-cache")
    assert r.returncode == 2, r.stderr
    assert f"{opt} {target}: cannot create folder" in r.stderr and f"{blocker} is not a folder" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1  # one line, no traceback of follow-on errors


# ---------------------------------------------------------------- files that are not models
def write(path, data):
    path.write_bytes(data)
    return path


def small_model_bytes():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [vi("x", TensorProto.FLOAT, [2])],
                          [vi("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


@pytest.mark.parametrize("kind", ["text", "npy", "tensor_pb", "zip", "readme"])
def test_not_an_onnx_model(tmp_path, kind):
    data = {
        "text": b"hello, this is not a model\n",
        "npy": None,
        "tensor_pb": numpy_helper.from_array(np.ones((2, 3), np.float32)).SerializeToString(),
        "zip": b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
        "readme": b"# lathe\n\nA deep-learning compiler.\n",
    }[kind]
    p = tmp_path / f"{kind}.onnx"
    if data is None:
        np.save(tmp_path / "a.npy", np.ones(3))
        p = tmp_path / "a.npy"
    else:
        write(p, data)
    for cmd in (["inspect"], ["run", "--backend", "interp"]):
        r = lathe(*cmd, p)
        assert r.returncode == 2, r.stderr
        assert f"lathe: error: {p}: not an ONNX model (byte " in r.stderr, r.stderr


def test_truncated_model_says_where(tmp_path):
    data = small_model_bytes()
    for cut in (len(data) // 2, len(data) - 1):
        p = write(tmp_path / "cut.onnx", data[:cut])
        r = lathe("inspect", p)
        assert r.returncode == 2 and "byte " in r.stderr and "not an ONNX model" not in r.stderr, r.stderr
        assert "exceeds the" in r.stderr or "truncated" in r.stderr, r.stderr


def test_empty_file_is_not_a_model(tmp_path):
    r = lathe("inspect", write(tmp_path / "empty.onnx", b""))
    assert r.returncode == 2 and "not an ONNX model" in r.stderr and "no ir_version" in r.stderr, r.stderr


# ---------------------------------------------------------------- --input names
def test_input_names_holding_equals(tmp_path):
    p = save(tmp_path / "eq.onnx", [helper.make_node("Add", ["a=b", "c"], ["y"])],
             [vi("a=b", TensorProto.FLOAT, [2]), vi("c", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, [2])])
    x = tmp_path / "x.npy"
    np.save(x, np.array([1, 2], np.float32))
    out = tmp_path / "o.npz"
    r = lathe("run", p, "--backend", "interp", "--input", f"a=b={x}", "--input", f"c={x}", "--output", out)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out)["y"], [2, 4])
    r = lathe("run", p, "--backend", "interp", "--input", f"a={x}")
    assert r.returncode == 1 and "no input named 'a'" in r.stderr, r.stderr
