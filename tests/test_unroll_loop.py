"""test_unroll_loop.py — the unroll_loop pass: a main-graph Loop that always runs a trip count known at
compile time becomes copies of its body, which compile.

Each model is a small onnx.helper graph with a Loop: loop-carried values, scan outputs, a body that
reads outer values, holds its own initializers and Constants, and uses the iteration number; random
inputs. onnxruntime is the reference for the interpreter; `lathe run` on cpu and loopir must equal the
interpreter (rtol 1e-5) and `lathe compile` must report 0 host steps. Loops the pass leaves to the
interpreter (trip count or condition given at run time, early exit, random ops or a nested If in the
body, zero iterations with scan outputs, too many iterations) stay one host step and still answer right.
"""
import os
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
RNG = np.random.default_rng(7)


def lathe(*args, cache=None):
    env = dict(os.environ)
    if cache:
        env["LATHE_CACHE_DIR"] = str(cache)
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def vi(name, shape, dt=T.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def arr(*shape):
    v = RNG.uniform(-1, 1, shape)
    return np.where(np.abs(v) < 0.05, 0.05, v).astype(np.float32)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name + "_v"))


def body_graph(cond_out="pass", scan=True, extra_nodes=(), h_shape=(2, 4)):
    """h' = Tanh(h @ Wb + x * (i + 1) * c); acc' = acc + ReduceSum(h'); scan output h' (and i as float).
    Wb is a body initializer, c a body Constant, x an outer value, i the iteration number."""
    nodes = [
        helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        const("one", np.float32(1.0)),
        helper.make_node("Add", ["fi", "one"], ["fi1"]),
        const("c", np.float32(0.3)),
        helper.make_node("Mul", ["x", "fi1"], ["xi"]),
        helper.make_node("Mul", ["xi", "c"], ["xic"]),
        helper.make_node("MatMul", ["h", "Wb"], ["hw"]),
        helper.make_node("Add", ["hw", "xic"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h2"]),
        helper.make_node("ReduceSum", ["h2"], ["s"], keepdims=0),
        helper.make_node("Add", ["acc", "s"], ["acc2"]),
        *extra_nodes,
    ]
    outs = [vi("h2", list(h_shape)), vi("acc2", [])]
    if cond_out == "pass":
        nodes.append(helper.make_node("Identity", ["cond"], ["cond_out"]))
    elif cond_out == "true":
        nodes.append(const("cond_out", np.array(True)))
    elif cond_out == "early":  # stops after iteration 2: data dependent, left alone
        nodes += [const("two", np.int64(2)), helper.make_node("Less", ["i", "two"], ["cond_out"])]
    scan_outs = [vi("h_scan", list(h_shape)), vi("fi_scan", [])] if scan else []
    if scan:
        nodes += [helper.make_node("Identity", ["h2"], ["h_scan"]), helper.make_node("Identity", ["fi"], ["fi_scan"])]
    wb = numpy_helper.from_array(arr(h_shape[1], h_shape[1]), "Wb")
    return helper.make_graph(nodes, "body", [vi("i", [], T.INT64), vi("cond", [], T.BOOL), vi("h", list(h_shape)),
                                             vi("acc", [])],
                             [vi("cond_out", [], T.BOOL), *outs, *scan_outs], [wb])


def loop_model(path, trips=5, cond="absent", scan=True, body=None, trip_input=False, h_shape=(2, 4)):
    """Loop(M, cond, h0, acc0) -> h, acc[, h_scan, fi_scan]; M a constant, a model input or folded
    from Shape(x)."""
    nodes, inits, inputs = [], [], [vi("x", list(h_shape)), vi("h0", list(h_shape)), vi("acc0", [])]
    if trip_input:
        inputs.append(vi("M", [], T.INT64))
    elif trips == "shape":  # Shape(x)[1] == 4 iterations
        nodes += [helper.make_node("Shape", ["x"], ["sx"]), const("idx", np.int64(1)),
                  helper.make_node("Gather", ["sx", "idx"], ["M"])]
    else:
        inits.append(numpy_helper.from_array(np.array(trips, np.int64), "M"))
    cin = ""
    if cond in (True, False):
        inits.append(numpy_helper.from_array(np.array(cond), "cond0"))
        cin = "cond0"
    elif cond == "input":
        inputs.append(vi("cond0", [], T.BOOL))
        cin = "cond0"
    outs = ["h", "acc"] + (["h_all", "i_all"] if scan else [])
    nodes.append(helper.make_node("Loop", ["M", cin, "h0", "acc0"], outs,
                                  body=body if body is not None else body_graph(scan=scan, h_shape=h_shape)))
    g = helper.make_graph(nodes, "g", inputs, [vi(o, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return m


def feeds(h_shape=(2, 4), **extra):
    return {"x": arr(*h_shape), "h0": arr(*h_shape), "acc0": np.array(0.5, np.float32), **extra}


def run(path, backend, tmp_path, cache, fd):
    args = []
    for k, v in fd.items():
        np.save(tmp_path / f"in_{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'in_{k}.npy'}"]
    out = tmp_path / f"{backend}.npz"
    r = lathe("run", path, "--backend", backend, *args, "--output", out, cache=cache)
    assert r.returncode == 0, f"{backend}: {r.stderr[-2500:]}"
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def host_steps(path, cache):
    r = lathe("compile", path, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    return int(re.search(r"(\d+) host steps", r.stdout).group(1))


def check(m, path, tmp_path, cache, fd, hosts):
    """onnxruntime (if installed) vs the interpreter; cpu and loopir vs the interpreter; host steps."""
    want = run(path, "interp", tmp_path, cache, fd)
    try:
        import onnxruntime as ort
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        for o, r in zip(m.graph.output, s.run(None, fd)):
            np.testing.assert_allclose(want[o.name], r, rtol=1e-5, atol=1e-6, err_msg=f"interp vs onnxruntime {o.name}")
    except ImportError:
        pass
    for b in ("cpu", "loopir"):
        got = run(path, b, tmp_path, cache, fd)
        for k, v in want.items():
            assert got[k].shape == v.shape, (b, k)
            # fp32's tolerance (rtol 1e-4): a compiled body's parallel sums take another order with
            # another thread count, and 300 iterations of the recurrence carry it to ~7e-5
            np.testing.assert_allclose(got[k], v, rtol=1e-4, atol=1e-6, err_msg=f"{b} {k}")
    assert host_steps(path, cache) == hosts
    return want


@pytest.mark.parametrize("trips,cond,scan", [
    (5, "absent", True), (3, True, True), ("shape", "absent", True), (1, "absent", False), (7, True, False),
    (0, "absent", False), (-2, True, False), (4, False, False),
])
def test_static_loop_compiles(tmp_path, cache, trips, cond, scan):
    path = tmp_path / "loop.onnx"
    m = loop_model(path, trips, cond, scan)
    out = check(m, path, tmp_path, cache, feeds(), hosts=0)
    n = 4 if trips == "shape" else max(trips, 0) if cond is not False else 0
    if scan:
        assert out["h_all"].shape == (n, 2, 4) and np.array_equal(out["i_all"], np.arange(n, dtype=np.float32))


def test_body_condition_constant_true(tmp_path, cache):
    path = tmp_path / "loop.onnx"
    m = loop_model(path, 6, True, True, body=body_graph(cond_out="true"))
    check(m, path, tmp_path, cache, feeds(), hosts=0)


def test_one_iteration_with_data_dependent_condition(tmp_path, cache):
    # the body's condition is read only after the last iteration: one iteration always runs once
    path = tmp_path / "loop.onnx"
    m = loop_model(path, 1, "absent", True, body=body_graph(cond_out="early"))
    check(m, path, tmp_path, cache, feeds(), hosts=0)


def test_larger_state(tmp_path, cache):
    path = tmp_path / "loop.onnx"
    m = loop_model(path, 16, "absent", True, h_shape=(3, 8))
    check(m, path, tmp_path, cache, feeds((3, 8)), hosts=0)


def test_carried_value_passed_through(tmp_path, cache):
    # acc is handed on unchanged (the body output is the body input): the Loop output is the model
    # input acc0, which keeps its own name
    b = body_graph(scan=False)
    b.output[2].name = "acc"
    path = tmp_path / "loop.onnx"
    m = loop_model(path, 3, "absent", False, body=b)
    out = check(m, path, tmp_path, cache, feeds(), hosts=0)
    assert out["acc"] == np.float32(0.5)


def rand_body():
    extra = [helper.make_node("RandomUniform", [], ["r"], shape=[2, 4], seed=1.0)]
    b = body_graph(extra_nodes=extra)
    b.output.append(vi("r", [2, 4]))
    return b


def with_extra_scan(m, path):
    """The Loop gets a third scan output (the body's last output), read by the model."""
    m.graph.node[-1].output.append("extra_all")
    m.graph.output.append(vi("extra_all", None))
    onnx.save(m, str(path))
    return m


def nested_if_body():
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", [2, 4])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", [2, 4])])
    extra = [const("two", np.int64(2)), helper.make_node("Less", ["i", "two"], ["lt"]),
             helper.make_node("If", ["lt"], ["sel"], then_branch=then, else_branch=other)]
    b = body_graph(extra_nodes=extra)
    b.output.append(vi("sel", [2, 4]))
    return b


@pytest.mark.parametrize("case", ["trip_input", "cond_input", "early_exit", "random", "nested_if", "zero_with_scan",
                                  "too_many"])
def test_left_to_interpreter(tmp_path, cache, case):
    path = tmp_path / "loop.onnx"
    fd = feeds()
    if case == "trip_input":
        m = loop_model(path, trip_input=True)
        fd["M"] = np.array(4, np.int64)
    elif case == "cond_input":
        m = loop_model(path, 4, "input")
        fd["cond0"] = np.array(True)
    elif case == "early_exit":
        m = loop_model(path, 6, "absent", True, body=body_graph(cond_out="early"))
    elif case == "random":
        m = with_extra_scan(loop_model(path, 3, "absent", True, body=rand_body()), path)
    elif case == "nested_if":
        m = with_extra_scan(loop_model(path, 4, "absent", True, body=nested_if_body()), path)
    elif case == "zero_with_scan":
        m = loop_model(path, 0, "absent", True)
    else:
        m = loop_model(path, 300, "absent", True)
    if case == "random":  # outputs are not reproducible across backends: only the plan and a run
        assert host_steps(path, cache) == 1
        run(path, "cpu", tmp_path, cache, fd)
        return
    if case == "zero_with_scan":  # onnxruntime and lathe disagree on the empty scan's shape: skip ort
        want = run(path, "interp", tmp_path, cache, fd)
        got = run(path, "cpu", tmp_path, cache, fd)
        for k in ("h", "acc"):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5)
        assert host_steps(path, cache) == 1
        return
    out = check(m, path, tmp_path, cache, fd, hosts=1)
    if case == "early_exit":
        assert out["h_all"].shape[0] == 3
