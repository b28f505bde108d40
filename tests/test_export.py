"""test_export.py — standalone C export: `lathe compile MODEL -o DIR [--target c]` writes model.c,
model.h, model_main.c (and model.weights when the weights are 1 MiB or more); the files build with
plain `cc -O2 model.c model_main.c -lm` (and with -O3 -march=native -fopenmp), include no lathe header,
and the program's outputs match `lathe run --backend interp` on the same inputs: small hand-made models
(elementwise, a CNN with packed GEMM/conv weights, LayerNorm + MatMul + GELU, an IR 3 model whose
weights are graph inputs, outputs that are an input and a constant) and the light squeezenet (weights
in a separate file) against its expected output. A model with host steps (NonZero) fails to export
with exit 3 naming the node; --name changes the prefix, --embed-limit the weights' placement; a bad
weights file is reported by the exported code.

The binary comes from $LATHE_BIN (default build/lathe); the C compiler from $CC (default cc).
"""
import os
import re
import shutil
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
CC = os.environ.get("CC") or "cc"
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
RNG = np.random.default_rng(5)

pytestmark = pytest.mark.skipif(shutil.which(CC.split()[0]) is None, reason=f"no C compiler '{CC}'")


def lathe(*args, timeout=900):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def W(name, *shape):
    return numpy_helper.from_array(RNG.uniform(-0.5, 0.5, shape).astype(np.float32), name)


def save(path, nodes, inputs, outputs, inits=(), opset=17, ir=8, check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


def m_ew(d):
    n = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Mul", ["e", "c"], ["a"]),
         helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Tanh", ["a"], ["t"]),
         helper.make_node("Add", ["s", "t"], ["u"]), helper.make_node("Sub", ["u", "y"], ["z"]),
         helper.make_node("Cast", ["z"], ["zi"], to=TensorProto.INT32)]
    return save(d / "ew.onnx", n, [vi("x", TensorProto.FLOAT, [3, 4, 5]), vi("y", TensorProto.FLOAT, [5])],
                [vi("z", TensorProto.FLOAT, [3, 4, 5]), vi("zi", TensorProto.INT32, [3, 4, 5]),
                 vi("x", TensorProto.FLOAT, [3, 4, 5]), vi("c", TensorProto.FLOAT, [4, 1])], [W("c", 4, 1)])


def m_cnn(d):
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p1", "w2"], ["c2"]), helper.make_node("Add", ["c2", "p1"], ["s2"]),
         helper.make_node("GlobalAveragePool", ["s2"], ["gp"]), helper.make_node("Flatten", ["gp"], ["f"]),
         helper.make_node("Gemm", ["f", "fw", "fb"], ["lg"], transB=1), helper.make_node("Softmax", ["lg"], ["y"])]
    return save(d / "cnn.onnx", n, [vi("x", TensorProto.FLOAT, [2, 3, 16, 16])], [vi("y", TensorProto.FLOAT, [2, 10])],
                [W("w1", 8, 3, 3, 3), W("b1", 8), W("w2", 8, 8, 1, 1), W("fw", 10, 8), W("fb", 10)])


def m_ln(d):
    n = [helper.make_node("LayerNormalization", ["x", "gam", "bet"], ["ln"], axis=-1),
         helper.make_node("MatMul", ["ln", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
         helper.make_node("Relu", ["hb"], ["g"]), helper.make_node("MatMul", ["g", "w2"], ["o"]),
         helper.make_node("Add", ["o", "x"], ["y"])]
    return save(d / "ln.onnx", n, [vi("x", TensorProto.FLOAT, [2, 6, 16])], [vi("y", TensorProto.FLOAT, [2, 6, 16])],
                [W("gam", 16), W("bet", 16), W("w", 16, 32), W("b", 32), W("w2", 32, 16)])


def m_ir3(d):
    n = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
         helper.make_node("Tanh", ["hb"], ["y"])]
    return save(d / "ir3.onnx", n, [vi("x", TensorProto.FLOAT, [4, 8]), vi("w", TensorProto.FLOAT, [8, 6]),
                                    vi("b", TensorProto.FLOAT, [6])],
                [vi("y", TensorProto.FLOAT, [4, 6])], [W("w", 8, 6), W("b", 6)], ir=3, opset=9, check=False)


def m_idx(d):
    """A Gather whose indices the model computes: its kernel checks them into the check word."""
    n = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Mul", ["a", "three"], ["m"]),
         helper.make_node("Cast", ["m"], ["i"], to=TensorProto.INT64),
         helper.make_node("Gather", ["tab", "i"], ["y"], axis=0)]
    return save(d / "idx.onnx", n, [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, [2, 3, 5])],
                [W("tab", 4, 5), numpy_helper.from_array(np.array(3.0, np.float32), "three")])


MODELS = {"ew": m_ew, "cnn": m_cnn, "ln": m_ln, "ir3": m_ir3, "idx": m_idx}


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    return {k: f(d) for k, f in MODELS.items()}


def export(model, out, cache, *extra):
    r = lathe("compile", model, "-o", out, "--target", "c", "--cache-dir", cache, *extra)
    assert r.returncode == 0, r.stderr
    return r


def build(d, prefix="model", flags=("-O2",)):
    exe = d / "prog"
    r = subprocess.run([*CC.split(), *flags, str(d / f"{prefix}.c"), str(d / f"{prefix}_main.c"), "-lm", "-o", str(exe)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    return exe


def static_inputs(model):
    """The graph inputs the export takes (initialized inputs are frozen), with dtype and shape."""
    m = onnx.load(model)
    inits = {i.name for i in m.graph.initializer}
    res = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        res.append((i.name, onnx.helper.tensor_dtype_to_np_dtype(t.elem_type), [d.dim_value for d in t.shape.dim]))
    return res


def run_export(exe, d, model, n_runs=None, weights=None):
    """Random inputs -> raw files -> the exported program; outputs as arrays, and the reference."""
    ins, args, npys = static_inputs(model), [], []
    for i, (name, dt, shape) in enumerate(ins):
        a = RNG.uniform(-1, 1, shape).astype(dt)
        a.tofile(d / f"in_{i}.bin")
        np.save(d / f"in_{i}.npy", a)
        args.append(str(d / f"in_{i}.bin"))
        npys += ["--input", f"{name}={d / f'in_{i}.npy'}"]
    ref = d / "ref.npz"
    r = lathe("run", model, "--backend", "interp", *npys, "--output", ref)
    assert r.returncode == 0, r.stderr
    with np.load(ref) as z:
        want = {k: z[k] for k in z.files}
    outs = [o.name for o in onnx.load(model).graph.output]
    args += [str(d / f"out_{i}.bin") for i in range(len(outs))]
    cmd = [str(exe), *(["-w", str(weights)] if weights else []), *(["-n", str(n_runs)] if n_runs else []), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=d)
    assert r.returncode == 0, r.stderr
    got = {}
    for i, name in enumerate(outs):
        got[name] = np.fromfile(d / f"out_{i}.bin", dtype=want[name].dtype).reshape(want[name].shape)
    return got, want, r


@pytest.mark.parametrize("name", sorted(MODELS))
def test_export_matches_lathe_run(models, tmp_path, cache, name):
    d = tmp_path / "exp"
    r = export(models[name], d, cache)
    assert "export:" in r.stdout and "wrote" in r.stdout
    files = sorted(os.listdir(d))
    assert files == ["model.c", "model.h", "model_main.c"], files  # small weights are embedded
    src = (d / "model.c").read_text()
    assert re.findall(r'#include "([^"]+)"', src) == ["model.h"]  # no lathe header
    hdr = (d / "model.h").read_text()
    for s in ["model_run", "model_init", "MODEL_WORKSPACE_BYTES", "model_inputs", "model_outputs", "bytes"]:
        assert s in hdr, s
    exe = build(d)
    got, want, _ = run_export(exe, d, models[name])
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_export_native_openmp_and_bench(models, tmp_path, cache):
    d = tmp_path / "exp"
    export(models["cnn"], d, cache)
    exe = build(d, flags=("-O3", "-march=native", "-fopenmp"))
    got, want, r = run_export(exe, d, models["cnn"], n_runs=5)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-6)
    assert re.search(r"median [0-9.]+ ms over 5 runs", r.stdout), r.stdout


def test_weights_file_prefix_and_bad_weights(models, tmp_path, cache):
    d = tmp_path / "exp"
    r = export(models["ln"], d, cache, "--name", "tiny", "--embed-limit", "0")
    assert "separate file" in r.stdout
    assert sorted(os.listdir(d)) == ["tiny.c", "tiny.h", "tiny.weights", "tiny_main.c"]
    assert (d / "tiny.weights").read_bytes()[:8] == b"LATHEWTS"
    assert "tiny_run" in (d / "tiny.h").read_text() and "TINY_WORKSPACE_BYTES" in (d / "tiny.h").read_text()
    exe = build(d, prefix="tiny")
    got, want, _ = run_export(exe, d, models["ln"], weights=d / "tiny.weights")
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-5)
    # a truncated weights file is refused with a message
    bad = d / "bad.weights"
    bad.write_bytes((d / "tiny.weights").read_bytes()[:100])
    x = d / "in_0.bin"
    r = subprocess.run([str(exe), "-w", str(bad), str(x), str(d / "o.bin")], capture_output=True, text=True, cwd=d)
    assert r.returncode != 0 and "bad.weights" in r.stderr, r.stderr
    r = lathe("compile", models["ln"], "-o", d, "--name", "2bad", "--cache-dir", cache)
    assert r.returncode == 1 and "2bad" in r.stderr


def test_export_light_squeezenet(tmp_path, cache):
    model = os.path.join(LIGHT, "light_squeezenet.onnx")
    d = tmp_path / "sq"
    r = export(model, d, cache)
    assert "model.weights" in r.stdout  # 4.8 MB of weights: a separate file
    exe = build(d)
    n = 1 * 3 * 224 * 224
    (np.arange(n, dtype=np.float64) / n).astype(np.float32).tofile(d / "x.bin")  # --fill ramp
    r = subprocess.run([str(exe), str(d / "x.bin"), str(d / "y.bin")], capture_output=True, text=True, cwd=d,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT, "light_squeezenet_output_0.pb")))
    got = np.fromfile(d / "y.bin", np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-7)


def test_export_refuses_host_steps(tmp_path, cache):
    m = save(tmp_path / "nz.onnx", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NonZero", ["r"], ["y"])],
             [vi("x", TensorProto.FLOAT, [4])], [vi("y", TensorProto.INT64, [1, None])])
    r = lathe("compile", m, "-o", tmp_path / "out", "--cache-dir", cache)
    assert r.returncode == 3, r.stderr
    assert "host step" in r.stderr and "NonZero" in r.stderr
    assert not (tmp_path / "out" / "model.c").exists()
    r = lathe("compile", m, "-o", tmp_path / "out", "--target", "llvm")
    assert r.returncode == 1 and "--target" in r.stderr


def m_one_element_operands(d):
    """Conv, MatMul and Gemm whose weight is one element (a 1x1 convolution of one channel): fusion keeps
    such an operand in memory, so they compile instead of becoming host steps the export refuses."""
    n = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Reshape", ["r", "shp"], ["col"]), helper.make_node("MatMul", ["col", "mw"], ["m"]),
         helper.make_node("Gemm", ["m", "gw", "gb"], ["y"], transB=1)]
    inits = [W("cw", 1, 1, 1, 1), W("cb", 1), numpy_helper.from_array(np.array([30, 1], np.int64), "shp"),
             W("mw", 1, 1), W("gw", 1, 1), W("gb", 1)]
    return save(d / "one.onnx", n, [vi("x", TensorProto.FLOAT, [2, 1, 3, 5])], [vi("y", TensorProto.FLOAT, [30, 1])],
                inits)


def test_export_one_element_weights(tmp_path, cache):
    m = m_one_element_operands(tmp_path)
    r = lathe("compile", m, "--cache-dir", cache)
    assert r.returncode == 0 and " 0 host" in r.stdout, r.stdout + r.stderr
    d = tmp_path / "exp"
    export(m, d, cache)
    got, want, _ = run_export(build(d), d, m)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-6)


def test_export_hostile_names(tmp_path, cache):
    """Value names are data: comment ends, quotes, printf directives and keywords make valid C."""
    xin, yout = 'in put*/"%s\\', "int"
    m = save(tmp_path / "w.onnx", [helper.make_node("Sigmoid", [xin], ["t*/x"], name="n*/evil"),
                                   helper.make_node("Neg", ["t*/x"], [yout])],
             [vi(xin, TensorProto.FLOAT, [3])], [vi(yout, TensorProto.FLOAT, [3])])
    d = tmp_path / "exp"
    export(m, d, cache)
    exe = build(d)
    got, want, _ = run_export(exe, d, m)
    np.testing.assert_allclose(got[yout], want[yout], rtol=1e-6)


def interp_outputs(model, npys):
    """`lathe run --backend interp` on .npy inputs {name: path}: the outputs in graph order."""
    ref = os.path.dirname(next(iter(npys.values()))) + "/ref.npz"
    r = lathe("run", model, "--backend", "interp", *[a for k, v in npys.items() for a in ("--input", f"{k}={v}")],
              "--output", ref)
    assert r.returncode == 0, r.stderr
    with np.load(ref) as z:
        return [z[k] for k in z.files]


@pytest.mark.parametrize("name,std", [("cnn", "c99"), ("cnn", "c11"), ("ew", "c99"), ("ew", "c11"), ("idx", "c99")])
def test_export_strict_c_and_npy(models, tmp_path, cache, name, std):
    """model.c and model_main.c build with -std=c99 / c11 -Wall -Werror; the program reads .npy inputs,
    writes .npy outputs (any dtype), finds a separate weights file next to itself, explains itself in
    --help and refuses a .npy of the wrong shape or dtype naming the file."""
    d = tmp_path / "exp"
    export(models[name], d, cache, "--embed-limit", "0")
    assert (d / "model.weights").exists()
    exe = build(d, flags=(f"-std={std}", "-Wall", "-Werror", "-O1"))
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ins = static_inputs(models[name])
    for s in ["usage:", ".npy", "-w WEIGHTS", "model.weights", "program's folder", "inputs:", "outputs:", "-n RUNS"]:
        assert s in r.stdout, s
    for nm, dt, shape in ins:
        assert f"'{nm}': " in r.stdout and "(" + ", ".join(map(str, shape)) in r.stdout, r.stdout
    npys, args = {}, []
    for i, (nm, dt, shape) in enumerate(ins):
        np.save(tmp_path / f"in{i}.npy", RNG.uniform(-1, 1, shape).astype(dt))
        npys[nm] = str(tmp_path / f"in{i}.npy")
        args.append(npys[nm])
    want = interp_outputs(models[name], npys)
    outs = [str(tmp_path / f"out{k}.npy") for k in range(len(want))]
    r = subprocess.run([str(exe), *args, *outs], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr  # run from another folder: the weights are found next to the program
    for k, w in enumerate(want):
        got = np.load(outs[k])
        assert got.dtype == w.dtype and got.shape == w.shape, (k, got.dtype, got.shape)
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5, err_msg=str(k))
    # raw outputs still work when the name does not end in .npy
    r = subprocess.run([str(exe), *args, *[o[:-4] + ".bin" for o in outs]], capture_output=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0
    raw = np.fromfile(tmp_path / "out0.bin", dtype=want[0].dtype).reshape(want[0].shape)
    np.testing.assert_allclose(raw, want[0], rtol=1e-4, atol=1e-5)
    # a wrong shape, a wrong dtype, a Fortran-order array: refused, naming the file
    x = np.load(args[0])
    for bad, why in [(np.zeros((1,) + x.shape, x.dtype), "shape"), (x.astype(np.int8), "dtype"),
                     (np.asfortranarray(np.zeros(x.shape[:1] + (2, 2), x.dtype)) if x.ndim == 1 else
                      np.asfortranarray(x), "fortran_order" if x.ndim > 1 else "shape")]:
        np.save(tmp_path / "bad.npy", bad)
        r = subprocess.run([str(exe), str(tmp_path / "bad.npy"), *args[1:], *outs], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path)
        assert r.returncode != 0 and "bad.npy" in r.stderr and why in r.stderr, r.stderr


def test_export_unrolled_gru_shares_its_packed_weight(tmp_path, cache):
    """An unrolled GRU's steps pack one recurrent weight: the export allocates and packs it once and
    the other steps' packs take that buffer (a copy each would be the weight times the steps); the
    program frees what it allocated (valgrind, when installed) and matches the interpreter."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_recurrent_packs as rnn
    model = str(tmp_path / "gru.onnx")
    rnn.rnn_model(model, "GRU", 12, 16, 32, 1)
    d = tmp_path / "exp"
    export(model, d, cache)
    src = (d / "model.c").read_text()
    shared = re.findall(r"model_pk_\[(\d+)\] = model_pk_\[(\d+)\];", src)
    assert len(shared) >= 11 and len({b for _, b in shared}) == 1, shared
    exe = build(d)
    got, want, _ = run_export(exe, d, model)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    if shutil.which("valgrind"):
        ins = sorted(p for p in os.listdir(d) if p.startswith("in_") and p.endswith(".bin"))
        r = subprocess.run(["valgrind", "--leak-check=full", "--error-exitcode=9", str(exe), *[str(d / i) for i in ins],
                            str(d / "v0.bin"), str(d / "v1.bin")], capture_output=True, text=True, timeout=600, cwd=d)
        assert r.returncode == 0, r.stderr[-3000:]
