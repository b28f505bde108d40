"""When the onnx package ships no node-test files (onnx >= 1.23 builds them in memory), `lathe
conformance` generates them with the package's own generator into lathe's cache folder and runs them.
A stand-in Python reports an onnx folder without test data and forwards everything else."""
import os
import stat
import subprocess
import sys

LATHE = os.environ.get("LATHE_BIN", "build/lathe")


def test_suite_is_generated_when_the_package_has_no_files(tmp_path):
    fake_pkg = tmp_path / "onnx_without_data"
    fake_pkg.mkdir()
    py = tmp_path / "python"
    py.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then echo {fake_pkg}; exit 0; fi\nexec {sys.executable} "$@"\n')
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, LATHE_PYTHON=str(py), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("LATHE_ONNX_SUITE", None)
    r = subprocess.run([LATHE, "conformance", "--backend", "interp", "-j", "2", "--filter", "^test_add$"],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "generating them into" in r.stderr
    assert r.stdout.strip().splitlines()[-1] == "1 passed, 0 failed, 0 skipped", r.stdout
    node = tmp_path / "cache" / "lathe" / "onnx-suite" / "node"
    assert len(os.listdir(node)) > 1000  # the whole suite, generated once
