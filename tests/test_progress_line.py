"""test_progress_line.py — long commands show one updating progress line on stderr when it is a
terminal, and nothing when it is not.

`lathe conformance` (a few node tests), `lathe tune` and a cold `lathe run` (a tiny model) run twice: with stderr on a
pseudo-terminal, stderr carries carriage-return-redrawn lines ("\\r...ESC[K": the tests done and
failed; the compile's stages and the kernel being searched) and ends with the line erased, while
stdout is unchanged; with stderr a pipe, stderr has no carriage return and no escape sequence at all.
LATHE_NO_PROGRESS=1 turns the line off on a terminal too.
"""
import os
import pty
import subprocess

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)


def run_tty(args, env=None):
    """Run with stderr on a pseudo-terminal; returns (rc, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([LATHE, *map(str, args)], stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                         env=env or dict(os.environ, TERM="xterm"))
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not b:
            break
        chunks.append(b)
    out = p.stdout.read().decode()
    rc = p.wait(timeout=600)
    os.close(master)
    return rc, out, b"".join(chunks).decode(errors="replace")


def run_pipe(args):
    r = subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress")
    nodes = [helper.make_node("Mul", ["x", "x"], ["m"]), helper.make_node("Tanh", ["m"], ["y"])]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(d / "tiny.onnx"))
    return d


def test_conformance_progress(tmp_path):
    args = ["conformance", "--filter", "^test_(relu|abs)$", "--cache-dir", tmp_path / "c"]
    rc, out, term = run_tty(args)
    assert rc == 0, term
    assert "conformance (interp): 2 of 2 tests, 0 failed" in term, repr(term)
    assert "\r" in term and "\x1b[K" in term
    assert term.rstrip("\r\n").endswith("\r\x1b[K"), repr(term[-80:])  # erased at the end
    rc2, out2, err2 = run_pipe(args)
    assert rc2 == 0 and out2 == out
    assert "\r" not in err2 and "\x1b" not in err2 and "conformance (" not in err2, repr(err2)
    rc3, _, term3 = run_tty(args, env=dict(os.environ, TERM="xterm", LATHE_NO_PROGRESS="1"))
    assert rc3 == 0 and "\x1b" not in term3 and "\r" not in term3.replace("\r\n", ""), repr(term3)


def test_tune_progress(tiny):
    d = tiny
    args = ["tune", d / "tiny.onnx", "--db", d / "db.tsv", "--cache-dir", d / "c", "--threads", 1, "--trials", 2,
            "--min-time", 1, "--confirm", 1]
    rc, out, term = run_tty(args)
    assert rc == 0, term
    assert "compiling: passes" in term and "tune (NCHW): searching lt_k" in term, repr(term)
    assert "\r\x1b[K" in term
    os.remove(d / "db.tsv")
    rc2, out2, err2 = run_pipe(args)
    assert rc2 == 0, err2
    assert "\r" not in err2 and "\x1b" not in err2 and "compiling:" not in err2, repr(err2)
    assert "lt_k" in out2  # the kernel rows are on stdout either way


def test_cold_compile_progress(tiny):
    d = tiny
    rc, out, term = run_tty(["run", d / "tiny.onnx", "--cache-dir", d / "cold1"])
    assert rc == 0, term
    assert "compiling: passes" in term and "compiling: building the generated code" in term, repr(term)
    assert term.endswith("\r\x1b[K"), repr(term[-80:])
    rc2, out2, err2 = run_pipe(["run", d / "tiny.onnx", "--cache-dir", d / "cold2"])
    assert rc2 == 0 and "\r" not in err2 and "\x1b" not in err2 and "compiling:" not in err2, repr(err2)
