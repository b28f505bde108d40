"""test_names.py — generated code cannot be steered by names: every tensor, node and graph name of a
model is data, never C/CUDA syntax.

The hostile names of tests/hostile_names.py (C/C++/CUDA keywords, macros of the standard headers and
omp.h, CUDA vector types, lathe's own identifiers, comment and string syntax, trigraphs, format
directives, control bytes, non-ASCII and invalid UTF-8, very long names, names a naive mangler maps
to one identifier) are batched into a few small models (Relu, Add, Conv, Reshape, MatMul, Softmax,
elementwise chains; each name an input, output, initializer, intermediate, node or graph name).
For each model:
- `lathe run --backend cpu` gives the outputs of `--backend interp`;
- the standalone export (`lathe compile -o DIR`) builds with cc -std=c11, -std=c99 and -std=gnu17,
  -Wall -Werror, and its program gives the same outputs from .npy inputs; the names tables
  (model_input_names, model_output_names) hold every name byte for byte;
- `lathe compile --target cuda -o DIR` compiles with NVRTC (skipped only when NVRTC is absent);
- every generated file (past the prelude) is printable ASCII with no "??" (no trigraph) at all.
A name crafted to close the string literal through the trigraph ??/ and call system() cannot: the
export built with -std=c11 -trigraphs and run on its error path creates no file and reports the
name intact.

The binary comes from $LATHE_BIN (default build/lathe); the C compiler from $CC (default cc).
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_names as hn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
CC = os.environ.get("CC") or "cc"
HAVE_CC = shutil.which(CC.split()[0]) is not None
PER_MODEL = 143  # names a chain model of 60 steps uses
BATCHES = [hn.NAMES[i:i + PER_MODEL] for i in range(0, len(hn.NAMES), PER_MODEL)]
if len(BATCHES) > 1 and len(BATCHES[-1]) < PER_MODEL:  # the last batch reuses earlier names to fill up
    BATCHES[-1] = (BATCHES[-1] + hn.NAMES)[:PER_MODEL]

# reads the names tables of an export, one hex line per name
NAMES_DRIVER = r"""
#include <stdio.h>
#include "model.h"
static void hex(const char *s) { for (; *s; s++) printf("%02x", (unsigned char)*s); printf("\n"); }
int main(void) {
    for (int i = 0; model_input_names[i]; i++) hex(model_input_names[i]);
    printf("--\n");
    for (int i = 0; model_output_names[i]; i++) hex(model_output_names[i]);
    return 0;
}
"""


def lathe(*args, timeout=600, cwd=None):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def test_hostile_name_list():
    assert len(hn.NAMES) >= 150
    for must in ["INFINITY", "NAN", "HUGE_VAL", "M_PI", "INT64_MAX", "SIZE_MAX", "_Pragma", "_Generic", "_Atomic",
                 "typeof", "unix", "linux", "_OPENMP", "EOF", "asm", "__LINE__", "__FILE__", "__attribute__",
                 "__int128", "uint4", "int", "main", "*/", "??/"]:
        assert must in hn.NAMES, must
    assert any(b"\xff" in hn.raw(n) for n in hn.NAMES)
    assert sum(len(b) for b in BATCHES) >= len(hn.NAMES)


def ramp(shape):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(shape)


def npz_in_order(path):
    with np.load(path) as z:
        return [z[k] for k in z.files]


def ascii_only(path):
    """Generated text is printable ASCII (lathe's own prelude, pasted first, may hold UTF-8 in comments)."""
    data = open(path, "rb").read()
    mark = b"/* ---- lathe: end of prelude ---- */"
    if mark in data:
        data = data[data.index(mark):]
    bad = [i for i, c in enumerate(data) if (c < 0x20 and c not in (9, 10)) or c >= 0x7f]
    assert not bad, f"{path}: byte {data[bad[0]]:#x} at {bad[0]}"
    assert b"??" not in data, f"{path}: a '??' sequence (trigraph) at {data.index(b'??')}"


@pytest.fixture(scope="module", params=range(len(BATCHES)), ids=lambda i: f"batch{i}")
def model(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"names{request.param}")
    m, namer, outs, ins = hn.chain_model(BATCHES[request.param], steps=60, seed=request.param)
    path = hn.save_model(m, d / "m.onnx", namer)
    return {"dir": d, "path": path, "outs": outs, "ins": ins}


def test_cpu_matches_interp(model, cache):
    d = model["dir"]
    for be in ("interp", "cpu"):
        r = lathe("run", model["path"], "--backend", be, "--fill", "ramp", "--output", d / f"{be}.npz",
                  "--cache-dir", cache, "--values", "0")
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
    want, got = npz_in_order(d / "interp.npz"), npz_in_order(d / "cpu.npz")
    assert len(want) == len(got) == len(model["outs"])
    for i, (w, g) in enumerate(zip(want, got)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"output {i}")


@pytest.mark.skipif(not HAVE_CC, reason=f"no C compiler '{CC}'")
def test_export_builds_and_runs(model, cache):
    d = model["dir"]
    exp = d / "exp"
    r = lathe("compile", model["path"], "-o", exp, "--cache-dir", cache, "--dump-code", d / "dump")
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
    for f in ("model.c", "model.h", "model_main.c"):
        ascii_only(exp / f)
    ascii_only(d / "dump" / "model.c")
    args = []
    for i, (_, shape) in enumerate(model["ins"]):
        np.save(d / f"in{i}.npy", ramp(shape))
        args.append(str(d / f"in{i}.npy"))
    if not (d / "interp.npz").exists():
        r = lathe("run", model["path"], "--backend", "interp", "--fill", "ramp", "--output", d / "interp.npz")
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
    want = npz_in_order(d / "interp.npz")
    for std in ("c11", "c99", "gnu17"):
        exe = d / f"prog_{std}"
        r = subprocess.run([*CC.split(), f"-std={std}", "-Wall", "-Werror", "-O0", str(exp / "model.c"),
                            str(exp / "model_main.c"), "-lm", "-o", str(exe)], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, f"-std={std}:\n{r.stderr[-4000:]}"
        outs = [str(d / f"{std}_out{k}.npy") for k in range(len(model["outs"]))]
        r = subprocess.run([str(exe), *args, *outs], capture_output=True, timeout=300, cwd=d)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
        for k, w in enumerate(want):
            np.testing.assert_allclose(np.load(outs[k]), w, rtol=1e-4, atol=1e-5, err_msg=f"{std} output {k}")
    # the names tables hold every name byte for byte
    (d / "names.c").write_text(NAMES_DRIVER)
    r = subprocess.run([*CC.split(), "-std=c11", "-Wall", "-Werror", "-I", str(exp), str(exp / "model.c"),
                        str(d / "names.c"), "-lm", "-o", str(d / "names")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(d / "names")], capture_output=True, text=True, timeout=60)
    ins_hex, outs_hex = r.stdout.split("--\n")
    assert ins_hex.split() == [n.hex() for n, _ in model["ins"]]
    assert outs_hex.split() == [n.hex() for n in model["outs"]]
    # --help lists every input and output (names printable whatever their bytes)
    r = subprocess.run([str(d / "prog_c11"), "--help"], capture_output=True, timeout=60)
    assert r.returncode == 0 and b"inputs:" in r.stdout and b"outputs:" in r.stdout
    assert all(32 <= c < 127 or c == 10 for c in r.stdout)


def test_cuda_source_compiles_with_nvrtc(model, cache):
    d = model["dir"]
    r = lathe("compile", model["path"], "--target", "cuda", "-o", d / "cuda", "--cache-dir", cache)
    text = (r.stdout + r.stderr).decode(errors="replace")
    assert r.returncode == 0, text[-4000:]
    ascii_only(d / "cuda" / "model.cu")
    if "no cubin" in text:
        pytest.skip("NVRTC not found (scripts/setup.sh installs it)")
    assert (d / "cuda" / "model.cubin").stat().st_size > 0, text[-2000:]


@pytest.mark.skipif(not HAVE_CC, reason=f"no C compiler '{CC}'")
def test_trigraph_injection_is_inert(tmp_path, cache):
    """The name closes the literal of the old `"input '%s' is NULL"` message through ??/ and calls
    system(): built with -std=c11 -trigraphs and run with the input missing, it must only report."""
    evil = hn.TRIGRAPH_INJECTION
    m, namer, outs, ins = hn.chain_model([evil] + [f"n{i}" for i in range(200)], steps=2)
    path = hn.save_model(m, tmp_path / "evil.onnx", namer)
    exp = tmp_path / "exp"
    r = lathe("compile", path, "-o", exp, "--cache-dir", cache)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
    (tmp_path / "drv.c").write_text(
        '#include <stdio.h>\n#include <string.h>\n#include "model.h"\n'
        "int main(void) {\n    model_inputs in;\n    model_outputs out;\n    memset(&in, 0, sizeof in);\n"
        "    memset(&out, 0, sizeof out);\n    if (model_init(NULL) != 0) return 3;\n"
        '    int rc = model_run(&in, &out, NULL);\n    printf("%d|%s", rc, model_error());\n    return 0;\n}\n')
    for flags in (["-std=c11", "-trigraphs"], ["-std=c99"]):
        exe = tmp_path / "drv"
        r = subprocess.run([*CC.split(), *flags, "-I", str(exp), str(exp / "model.c"), str(tmp_path / "drv.c"), "-lm",
                            "-o", str(exe)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-4000:]
        r = subprocess.run([str(exe)], capture_output=True, timeout=60, cwd=tmp_path)
        assert not (tmp_path / "PWNED").exists(), "the name ran code"
        assert r.returncode == 0
        assert r.stdout == b"-1|input '" + evil.encode() + b"' is NULL", r.stdout
