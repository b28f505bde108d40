"""test_cli_compile.py — the compiled path from the command line: `lathe run --backend cpu` (the
default) gives the interpreter's answers on small hand-made models (elementwise chains with in-place
buffers, a CNN with Conv/BatchNorm/pooling/Gemm/Softmax, LayerNorm + MatMul + GELU, host steps with
data-dependent shapes, control flow reading outer values, sequences, an IR 3 model whose weights are
graph inputs) at every -O level; the pass-manager flags (--verify-each, --dump-after, --time-passes,
--disable-pass, --stop-after); the dumps (--dump-code, --dump-graph as ONNX that onnx.checker accepts
and that runs to the same outputs); --threads and --bench; `lathe compile` and its report (workspace
peak next to the sum of intermediates); a second compile of the same model is a cache hit and fast;
`lathe profile` (roofline table, Chrome trace) and `lathe ceilings`; a missing C compiler; the light
squeezenet compiled with no host step; and `lathe conformance --backend cpu` passing at least as
many tests as the interpreter on a sample of the suite (the whole suite: scripts/conformance_check.sh).

The binary comes from $LATHE_BIN (default build/lathe). Compiled modules are cached in one folder per
test session, so each model is built with the C compiler once.
"""
import json
import os
import re
import subprocess
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
ONNX_DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
RNG = np.random.default_rng(11)


def lathe(*args, timeout=900, env=None):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=full_env)


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def W(name, *shape, scale=0.5):
    return numpy_helper.from_array((RNG.uniform(-scale, scale, shape)).astype(np.float32), name)


def save(path, nodes, inputs, outputs, inits=(), opset=17, ir=8, check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="test_cli_compile")
    m.ir_version = ir
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


# ---- the models ----

def m_ew(d):
    """Elementwise and broadcast chains; `a` has two readers, so it is materialized and reused in place."""
    n = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Mul", ["e", "c"], ["a"]),
         helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Tanh", ["a"], ["t"]),
         helper.make_node("Add", ["s", "t"], ["u"]), helper.make_node("Sub", ["u", "y"], ["v"]),
         helper.make_node("Max", ["v", "x"], ["w"]), helper.make_node("Neg", ["w"], ["z"])]
    return save(d / "ew.onnx", n, [vi("x", TensorProto.FLOAT, [3, 4, 5]), vi("y", TensorProto.FLOAT, [5])],
                [vi("z", TensorProto.FLOAT, [3, 4, 5]), vi("a", TensorProto.FLOAT, [3, 4, 5])], [W("c", 4, 1)])


def m_cnn(d):
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c1", "g", "bb", "mu", "var"], ["bn"]),
         helper.make_node("Relu", ["bn"], ["r1"]),
         helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p1", "w2"], ["c2"]),
         helper.make_node("Add", ["c2", "p1"], ["s2"]), helper.make_node("Relu", ["s2"], ["r2"]),
         helper.make_node("GlobalAveragePool", ["r2"], ["gp"]), helper.make_node("Flatten", ["gp"], ["f"]),
         helper.make_node("Gemm", ["f", "fw", "fb"], ["lg"], transB=1),
         helper.make_node("Softmax", ["lg"], ["y"], axis=1)]
    var = numpy_helper.from_array(RNG.uniform(0.5, 1.5, 8).astype(np.float32), "var")
    return save(d / "cnn.onnx", n, [vi("x", TensorProto.FLOAT, [2, 3, 16, 16])], [vi("y", TensorProto.FLOAT, [2, 10])],
                [W("w1", 8, 3, 3, 3), W("b1", 8), W("g", 8), W("bb", 8), W("mu", 8), var, W("w2", 8, 8, 1, 1),
                 W("fw", 10, 8), W("fb", 10)])


def m_ln(d):
    """Decomposed LayerNorm, MatMul + bias, GELU (erf form), residual."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    eps = numpy_helper.from_array(np.array(1e-5, np.float32), "eps")
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    rs2 = numpy_helper.from_array(np.array(1.4142135, np.float32), "rs2")
    n = [helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]), helper.make_node("Sub", ["x", "mean"], ["xc"]),
         helper.make_node("Pow", ["xc", "two"], ["sq"]), helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
         helper.make_node("Add", ["var", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["sd"]),
         helper.make_node("Div", ["xc", "sd"], ["nx"]), helper.make_node("Mul", ["nx", "gam"], ["ng"]),
         helper.make_node("Add", ["ng", "bet"], ["ln"]), helper.make_node("MatMul", ["ln", "w"], ["h"]),
         helper.make_node("Add", ["h", "b"], ["hb"]), helper.make_node("Div", ["hb", "rs2"], ["hd"]),
         helper.make_node("Erf", ["hd"], ["er"]), helper.make_node("Add", ["er", "one"], ["e1"]),
         helper.make_node("Mul", ["hb", "e1"], ["g1"]), helper.make_node("Mul", ["g1", "half"], ["gl"]),
         helper.make_node("MatMul", ["gl", "w2"], ["o"]), helper.make_node("Add", ["o", "x"], ["y"])]
    return save(d / "ln.onnx", n, [vi("x", TensorProto.FLOAT, [2, 6, 16])], [vi("y", TensorProto.FLOAT, [2, 6, 16])],
                [two, eps, half, one, rs2, W("gam", 16), W("bet", 16), W("w", 16, 32), W("b", 32), W("w2", 32, 16)],
                opset=13)


def m_host(d):
    """NonZero (data-dependent shape) between kernels, a Where, and an If whose branches read outer values."""
    then_g = helper.make_graph([helper.make_node("Add", ["s", "x"], ["o"])], "then", [],
                               [vi("o", TensorProto.FLOAT, [4, 5])])
    else_g = helper.make_graph([helper.make_node("Mul", ["s", "x"], ["o"])], "else", [],
                               [vi("o", TensorProto.FLOAT, [4, 5])])
    n = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Greater", ["s", "half"], ["gt"]),
         helper.make_node("NonZero", ["gt"], ["nz"]), helper.make_node("Where", ["gt", "s", "x"], ["wh"]),
         helper.make_node("ReduceSum", ["x"], ["tot"], keepdims=0),
         helper.make_node("Greater", ["tot", "zero"], ["cond"]),
         helper.make_node("If", ["cond"], ["branch"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Relu", ["branch"], ["rb"]), helper.make_node("Add", ["rb", "wh"], ["y"]),
         helper.make_node("Shape", ["nz"], ["nzs"])]
    return save(d / "host.onnx", n, [vi("x", TensorProto.FLOAT, [4, 5])],
                [vi("y", TensorProto.FLOAT, [4, 5]), vi("nz", TensorProto.INT64, [2, None]),
                 vi("nzs", TensorProto.INT64, [2])],
                [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
                 numpy_helper.from_array(np.array(0.0, np.float32), "zero")])


def m_seq(d):
    n = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Exp", ["x"], ["e"]),
         helper.make_node("SequenceConstruct", ["r", "e", "x"], ["sq"]),
         helper.make_node("SequenceAt", ["sq", "one"], ["at"]), helper.make_node("Mul", ["at", "r"], ["y"]),
         helper.make_node("SequenceLength", ["sq"], ["n"])]
    return save(d / "seq.onnx", n, [vi("x", TensorProto.FLOAT, [3, 4])],
                [vi("y", TensorProto.FLOAT, [3, 4]), vi("n", TensorProto.INT64, [])],
                [numpy_helper.from_array(np.array(1, np.int64), "one")])


def m_ir3(d):
    """IR 3: every initializer is also a graph input (a default the caller may override)."""
    n = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
         helper.make_node("Tanh", ["hb"], ["y"])]
    w, b = W("w", 8, 6), W("b", 6)
    return save(d / "ir3.onnx", n, [vi("x", TensorProto.FLOAT, [4, 8]), vi("w", TensorProto.FLOAT, [8, 6]),
                                    vi("b", TensorProto.FLOAT, [6])],
                [vi("y", TensorProto.FLOAT, [4, 6])], [w, b], ir=3, opset=9, check=False)


MODELS = {"ew": m_ew, "cnn": m_cnn, "ln": m_ln, "host": m_host, "seq": m_seq, "ir3": m_ir3}


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    return {k: f(d) for k, f in MODELS.items()}


def read_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def run_both(model, tmp_path, cache, *extra, seed=3):
    """Outputs of the interpreter and of the compiled path on the same random inputs."""
    a, b = tmp_path / "interp.npz", tmp_path / "cpu.npz"
    r = lathe("run", model, "--backend", "interp", "--seed", seed, "--output", a)
    assert r.returncode == 0, r.stderr
    r = lathe("run", model, "--seed", seed, "--output", b, "--cache-dir", cache, *extra)
    assert r.returncode == 0, r.stderr
    assert "(cpu, first run" in r.stdout
    return read_npz(a), read_npz(b), r


def assert_same(want, got, rtol=1e-4, atol=1e-6):
    assert sorted(want) == sorted(got)
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, (k, got[k].shape, want[k].shape)
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=k)


# ---- answers ----

@pytest.mark.parametrize("name", sorted(MODELS))
def test_cpu_matches_interp(models, tmp_path, cache, name):
    want, got, r = run_both(models[name], tmp_path, cache, "--verbose")
    assert_same(want, got)
    assert "memory: workspace" in r.stdout and "sum of" in r.stdout
    assert "lathe: warning" not in r.stderr, r.stderr  # no group fell back to the interpreter


@pytest.mark.parametrize("level", ["-O0", "-O1", "-O2", "-O3"])
@pytest.mark.parametrize("name", ["cnn", "ew", "host"])
def test_opt_levels(models, tmp_path, cache, name, level):
    want, got, _ = run_both(models[name], tmp_path, cache, level)
    assert_same(want, got)


def test_inplace_and_workspace(models, cache):
    r = lathe("compile", models["ew"], "--cache-dir", cache, "--no-fusion", "--print-plan")
    assert r.returncode == 0, r.stderr
    m = re.search(r"memory: workspace (\S+ \S+) peak vs (\S+ \S+) sum of (\d+) intermediates \((\d+) in place", r.stdout)
    assert m, r.stdout
    assert int(m.group(4)) >= 1, r.stdout  # elementwise kernels took over their dying input


def test_ir3_inputs_frozen_and_overridable(models, tmp_path, cache):
    want, got, r = run_both(models["ir3"], tmp_path, cache, "--verbose")
    assert_same(want, got)
    assert "0 host steps" in r.stdout  # the weights became constants: everything compiled
    # an initialized input given on the command line stays an input and is used
    w = RNG.uniform(-1, 1, (8, 6)).astype(np.float32)
    np.save(tmp_path / "w.npy", w)
    x = RNG.uniform(-1, 1, (4, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outs = []
    for backend in ("interp", "cpu"):
        o = tmp_path / f"{backend}.npz"
        r = lathe("run", models["ir3"], "--backend", backend, "--input", f"w={tmp_path / 'w.npy'}",
                  "--input", f"x={tmp_path / 'x.npy'}", "--output", o, "--cache-dir", cache)
        assert r.returncode == 0, r.stderr
        outs.append(read_npz(o))
    assert_same(outs[0], outs[1])
    b = numpy_helper.to_array(onnx.load(models["ir3"]).graph.initializer[1])
    np.testing.assert_allclose(outs[1]["y"], np.tanh(x @ w + b), rtol=1e-4, atol=1e-6)


# ---- pass manager flags ----

def test_time_passes_and_verify(models, cache):
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--time-passes", "--verify-each")
    assert r.returncode == 0, r.stderr
    assert "fold_constants" in r.stderr and "ms" in r.stderr
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--time-passes", "--disable-pass", "cse",
              "--disable-pass=dce")
    assert r.returncode == 0, r.stderr
    table = [ln.split()[0] for ln in r.stderr.splitlines() if ln.strip()]
    assert "cse" not in table and "dce" not in table and "simplify" in table
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--time-passes", "--stop-after", "2")
    assert r.returncode == 0, r.stderr
    assert "2 pass runs" in r.stderr, r.stderr


STAGES = ["inputs", "passes", "fuse", "lower", "tuned", "schedule", "simplify_loops", "emit", "backend", "plan",
          "memplan"]


def test_compile_stages(models, cache):
    """--time-passes lists every stage of the compile; each one can be dumped, verified and stopped after."""
    r = lathe("compile", models["cnn"], "--cache-dir", cache, "--time-passes", "--verify-each")
    assert r.returncode == 0, r.stderr
    listed = [ln.split()[0] for ln in r.stderr.splitlines() if ln.strip()]
    for s in STAGES:
        assert s in listed, (s, r.stderr)
    for s in STAGES:
        r = lathe("compile", models["cnn"], "--cache-dir", cache, "--stop-after", s, "--dump-after", s, "--verify-each")
        assert r.returncode == 0, (s, r.stderr)
        if s != "tuned":  # runs only with a tuning database
            assert f"; after {s}\n" in r.stdout + r.stderr, (s, r.stdout, r.stderr)
        assert (f"stopped after {s}: no plan" in r.stdout) == (s != "memplan"), (s, r.stdout)
    r = lathe("compile", models["cnn"], "--cache-dir", cache, "--stop-after", "plan", "--dump-after", "plan")
    assert "@?" in r.stderr + r.stdout and "memory: not planned yet" in r.stderr + r.stdout


def test_dump_after(models, cache):
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--dump-after=all")
    assert r.returncode == 0, r.stderr
    assert "; after " in r.stderr  # BatchNorm folds: something changed
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--dump-after", "fold_batchnorm")
    assert r.returncode == 0 and "; after fold_batchnorm" in r.stderr
    r = lathe("run", models["cnn"], "--dump-after", "no_such_pass")
    assert r.returncode == 1 and "no_such_pass" in r.stderr
    r = lathe("run", models["cnn"], "--disable-pass", "no_such_pass")
    assert r.returncode == 1 and "no_such_pass" in r.stderr


def test_dump_code(models, tmp_path, cache):
    d = tmp_path / "code"
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--dump-code", d)
    assert r.returncode == 0, r.stderr
    for f in ("model.c", "kernels.txt", "groups.txt", "plan.txt"):
        assert (d / f).is_file(), f
    src = (d / "model.c").read_text()
    assert "lathe_kernels[]" in src and "void lt_k" in src
    assert "---- scheduled" in (d / "kernels.txt").read_text()
    assert "workspace" in (d / "plan.txt").read_text()


def test_dump_graph(models, tmp_path, cache):
    out = tmp_path / "opt.onnx"
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--dump-graph", out, "--seed", "5", "--output",
              tmp_path / "a.npz")
    assert r.returncode == 0, r.stderr
    m = onnx.load(str(out))
    onnx.checker.check_model(m)
    ops = [n.op_type for n in m.graph.node]
    assert "BatchNormalization" not in ops and len(ops) < 11  # folded into the Conv
    r = lathe("run", out, "--backend", "interp", "--seed", "5", "--output", tmp_path / "b.npz")
    assert r.returncode == 0, r.stderr
    assert_same(read_npz(tmp_path / "a.npz"), read_npz(tmp_path / "b.npz"))


def m_attrs(d):
    """Every attribute kind the writer must carry: ints, floats, strings, tensor, sparse tensor, graph."""
    sp = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "v"),
                                   numpy_helper.from_array(np.array([1, 4], np.int64), "i"), [2, 3])
    body = helper.make_graph([helper.make_node("Add", ["a", "x"], ["o"])], "body", [], [vi("o", TensorProto.FLOAT, [2, 3])])
    other = helper.make_graph([helper.make_node("Sub", ["a", "x"], ["o"])], "other", [],
                              [vi("o", TensorProto.FLOAT, [2, 3])])
    n = [helper.make_node("Constant", [], ["a"], sparse_value=sp),
         helper.make_node("Constant", [], ["fl"], value_floats=[0.25, 0.5, 1.0]),
         helper.make_node("Constant", [], ["st"], value_strings=["a*/b", "c"]),
         helper.make_node("ReduceSum", ["x"], ["tot"], keepdims=0),
         helper.make_node("Greater", ["tot", "zero"], ["cond"]),
         helper.make_node("If", ["cond"], ["br"], then_branch=body, else_branch=other),
         helper.make_node("LeakyRelu", ["br"], ["lr"], alpha=0.3),
         helper.make_node("Mul", ["lr", "fl"], ["y"]),
         helper.make_node("StringConcat", ["st", "st"], ["s2"])]
    return save(d / "attrs.onnx", n, [vi("x", TensorProto.FLOAT, [2, 3])],
                [vi("y", TensorProto.FLOAT, [2, 3]), vi("s2", TensorProto.STRING, [2])],
                [numpy_helper.from_array(np.array(0.0, np.float32), "zero")], opset=20)


@pytest.mark.parametrize("name", ["host", "seq", "attrs"])
def test_dump_graph_keeps_every_attribute(models, tmp_path, cache, name):
    model = models[name] if name in models else m_attrs(tmp_path)
    out = tmp_path / "opt.onnx"
    for level in ("-O0", "-O3"):
        r = lathe("run", model, "--cache-dir", cache, level, "--dump-graph", out, "--seed", "2", "--output",
                  tmp_path / "a.npz")
        assert r.returncode == 0, r.stderr
        onnx.checker.check_model(onnx.load(str(out)))
        r = lathe("run", out, "--backend", "interp", "--seed", "2", "--output", tmp_path / "b.npz")
        assert r.returncode == 0, r.stderr
        a, b = read_npz(tmp_path / "a.npz"), read_npz(tmp_path / "b.npz")
        assert sorted(a) == sorted(b)
        for k in a:
            if a[k].dtype.kind in "US":
                assert (a[k] == b[k]).all()
            else:
                np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6)


def test_threads_and_bench(models, cache):
    r = lathe("run", models["cnn"], "--cache-dir", cache, "--threads", "1", "--bench", "3")
    assert r.returncode == 0, r.stderr
    m = re.search(r"bench: median ([0-9.]+) ms over 3 runs \(min ([0-9.]+), max ([0-9.]+); cpu, 1 thread\)", r.stdout)
    assert m, r.stdout
    assert float(m.group(2)) <= float(m.group(1)) <= float(m.group(3))
    r = lathe("run", models["cnn"], "--backend", "interp", "--bench", "2")
    assert r.returncode == 0 and "bench: median" in r.stdout and "interp" in r.stdout


# ---- compile, cache ----

def test_second_compile_is_a_cache_hit(models, tmp_path):
    cache = tmp_path / "fresh-cache"
    times = []
    for i in range(2):
        t0 = time.monotonic()
        r = lathe("compile", models["cnn"], "--cache-dir", cache)
        times.append(time.monotonic() - t0)
        assert r.returncode == 0, r.stderr
        assert ("cache hit" if i else "cache miss") in r.stdout, r.stdout
    backend_s = float(re.search(r"backend ([0-9.]+)", r.stdout).group(1))
    assert backend_s < 1.0, r.stdout
    assert times[1] < 2.0 and times[1] < times[0], times
    # one module (the backend may keep a shared prelude library beside it: *.prelude.so)
    assert len([f for f in cache.glob("*.so") if not f.name.endswith(".prelude.so")]) == 1


def test_compile_report(models, cache):
    r = lathe("compile", models["cnn"], "--cache-dir", cache, "--print-plan")
    assert r.returncode == 0, r.stderr
    for s in ["compile:", "passes", "fuse", "lower", "schedule", "simplify_loops", "emit", "backend", "plan", "memplan",
              "nodes compiled", "memory: workspace", "kernel lt_k", "steps:"]:
        assert s in r.stdout, s
    r = lathe("compile", models["cnn"], "--cache-dir", cache, "--no-cache")
    assert r.returncode == 0 and "generated:" not in r.stdout


def test_compile_needs_shapes(tmp_path):
    m = save(tmp_path / "sym.onnx", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.FLOAT, ["N", 3])],
             [vi("y", TensorProto.FLOAT, ["N", 3])])
    r = lathe("compile", m, "-o", tmp_path / "out")  # code for one shape: every dim bound
    assert r.returncode == 1 and "'N'" in r.stderr
    r = lathe("compile", m, "--no-cache")  # no -o: the buckets of the probe shapes
    assert r.returncode == 0 and "bucket 1" in r.stdout, r.stdout + r.stderr
    r = lathe("compile", m, "--dim", "N=2", "--no-cache")
    assert r.returncode == 0, r.stderr
    # run binds the symbolic dim from the data
    r = lathe("run", m, "--dim", "N=5", "--no-cache")
    assert r.returncode == 0 and "float[5,3]" in r.stdout


def test_missing_compiler(models, tmp_path):
    r = lathe("run", models["ew"], "--no-cache", "--cc", "/nonexistent/lathe-cc")
    assert r.returncode == 3 and "lathe-cc" in r.stderr, r.stderr
    r = lathe("run", models["ew"], "--no-cache", env={"CC": "/nonexistent/env-cc"})
    assert r.returncode == 3 and "env-cc" in r.stderr, r.stderr
    # the interpreter needs no compiler
    r = lathe("run", models["ew"], "--backend", "interp", env={"CC": "/nonexistent/env-cc"})
    assert r.returncode == 0


def test_cache_dir_from_environment(models, tmp_path):
    xdg = tmp_path / "xdg"
    r = lathe("compile", models["ew"], env={"XDG_CACHE_HOME": str(xdg), "LATHE_CACHE_DIR": ""})
    assert r.returncode == 0, r.stderr
    assert list((xdg / "lathe").glob("*.so")), list(xdg.rglob("*"))


# ---- profile, ceilings ----

def test_profile_and_trace(models, tmp_path, cache):
    trace = tmp_path / "t.json"
    r = lathe("profile", models["cnn"], "--cache-dir", cache, "--runs", "3", "--threads", "1", "--trace", trace)
    assert r.returncode == 0, r.stderr
    for s in ["GFLOP/s", "GB/s", "%bound", "binds", "total", "run: median", "ceilings:"]:
        assert s in r.stdout, s
    assert re.search(r"\bConv\b", r.stdout) and re.search(r"\bGemm\b", r.stdout)
    ev = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in ev if e.get("ph") == "X") >= 5


def test_ceilings(tmp_path):
    d = tmp_path / "c"
    r = lathe("ceilings", "--cache-dir", d, "--threads", "1", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "peak FP32 FMA" in r.stdout and "memory bandwidth" in r.stdout and "measured" in r.stdout
    r = lathe("ceilings", "--cache-dir", d, "--threads", "1")
    assert r.returncode == 0 and "cached in" in r.stdout


# ---- real models and the conformance suite ----

def test_light_squeezenet_fully_compiled(tmp_path, cache):
    model = os.path.join(ONNX_DATA, "light", "light_squeezenet.onnx")
    out = tmp_path / "o.npz"
    r = lathe("run", model, "--fill", "ramp", "--output", out, "--cache-dir", cache, "--verbose")
    assert r.returncode == 0, r.stderr
    assert " 0 host steps" in r.stdout, r.stdout
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(ONNX_DATA, "light", "light_squeezenet_output_0.pb")))
    np.testing.assert_allclose(read_npz(out)["softmaxout_1"], want, rtol=1e-3, atol=1e-7)


SAMPLE = ("^test_(abs|add|add_bcast|averagepool_2d_default|batchnorm_epsilon|cast_FLOAT_to_DOUBLE|clip|concat_2d_axis_0|"
          "conv_with_strides_padding|div|einsum_batch_matmul|exp|gather_0|gemm_default_matrix_bias|"
          "globalaveragepool|if|layer_normalization_2d_axis0|loop11|matmul_2d|maxpool_2d_default|mul_bcast|"
          "nonzero_example|reduce_mean_default_axes_keepdims_example|relu|reshape_reordered_all_dims|"
          "sequence_insert_at_back|sigmoid|slice|softmax_axis_1|split_equal_parts_1d_opset18|sqrt|"
          "string_concat|sum_example|tanh|transpose_default|unsqueeze_axis_0|where_example)$")


def test_conformance_cpu_at_least_interp(tmp_path, cache):
    counts = {}
    for backend in ("interp", "cpu"):
        j = tmp_path / f"{backend}.json"
        r = lathe("conformance", "--backend", backend, "--filter", SAMPLE, "--json", j, "--cache-dir", cache, "-j", "2",
                  timeout=1800)
        assert r.returncode == 0, r.stderr
        data = json.loads(j.read_text())
        assert data["backend"] == backend
        counts[backend] = data["passed"]
        assert data["passed"] + data["failed"] >= 35
    assert counts["cpu"] >= counts["interp"], counts
