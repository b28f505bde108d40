"""The subgraphs of host steps (a Loop's body, an If's branches) compiled at run time.

A host step that runs a subgraph runs it through a compiled family of the subgraph's own model
(src/compile/split_body.c): each call picks the plan of its shapes, with no C compiler run for shapes
whose bucket exists. A Loop whose body's plan keeps its loop-carried shapes is run by the plan itself
(src/compile/loop_run.c): the body's plan per iteration on buffers bound once, scan slices written in
place. These tests compare every result with the interpreter, count the compiler runs, and check what
the report says (compiled, the Loop run by the plan, or interpreted and why).
"""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("LATHE_LIBRARY", os.path.join(ROOT, "build", "liblathe.so"))
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

import data_dependent_models as ddm  # noqa: E402
import lathe  # noqa: E402
from cc_log import compiles, counting_cc  # noqa: E402

V = h.make_tensor_value_info


def _save(graph, path):
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
    return str(path)


def rnn_loop(path, d=16):
    """Loop of max(n) steps: s = Tanh(s @ W + x), each step's pre-activation a scan output -> Relu.
    The body reads W (an initializer of the main graph) and x (a graph input) from the outer scope."""
    w = nh.from_array(np.random.default_rng(0).standard_normal((d, d)).astype(np.float32) * 0.3, "W")
    body = h.make_graph([h.make_node("MatMul", ["s", "W"], ["m"]), h.make_node("Add", ["m", "x"], ["a"]),
                         h.make_node("Tanh", ["a"], ["s2"]), h.make_node("Identity", ["cond"], ["c2"])], "body",
                        [V("it", T.INT64, []), V("cond", T.BOOL, []), V("s", T.FLOAT, [3, d])],
                        [V("c2", T.BOOL, []), V("s2", T.FLOAT, [3, d]), V("a", T.FLOAT, [3, d])])
    g = h.make_graph([h.make_node("ReduceMax", ["n"], ["nm"], keepdims=0),
                      h.make_node("Loop", ["nm", "", "s0"], ["sf", "all"], body=body), h.make_node("Relu", ["all"], ["y"])],
                     "g", [V("n", T.INT64, [2]), V("s0", T.FLOAT, [3, d]), V("x", T.FLOAT, [3, d])],
                     [V("y", T.FLOAT, None), V("sf", T.FLOAT, None)], [w])
    return _save(g, path)


def rnn_feeds(rng, d=16):
    return {"n": rng.integers(1, 12, 2).astype(np.int64), "s0": rng.standard_normal((3, d)).astype(np.float32),
            "x": rng.standard_normal((3, d)).astype(np.float32)}


def check(got, want, what):
    assert set(got) == set(want), what
    for k in want:
        assert got[k].shape == want[k].shape, f"{what}: {k}"
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=f"{what}: {k}")


def subgraph_lines(report):
    return [line for line in report.splitlines() if line.startswith("subgraph '")]


def test_loop_body_compiled_once(tmp_path):
    path = rnn_loop(tmp_path / "rnn.onnx")
    cc, log = counting_cc(tmp_path)
    model = lathe.compile(path, cache_dir=False, cc=cc)
    ref = lathe.compile(path, backend="interp")
    rng = np.random.default_rng(3)
    after = []
    for i in range(6):
        f = rnn_feeds(rng)
        check(model.run(f), ref.run(f), f"run {i}")
        after.append(compiles(log))
    assert after[-1] == after[0], f"the C compiler ran after the first run: {after}"
    lines = subgraph_lines(model.report)
    assert len(lines) == 1 and "(Loop): compiled at run time" in lines[0], model.report
    assert "buckets: 1" in lines[0] and "the Loop run by the plan 6 times" in lines[0], model.report


def test_loop_run_by_the_plan_stops_where_the_body_says(tmp_path):
    """The body's condition ends the loop (it < k) before the trip count, or the trip count does, or no
    iteration runs (m = 0, go false: the interpreter's); with a trip count of 2**40 the scan outputs
    grow as they fill (past 16, 32, 64 iterations). A scan output passes the iteration number
    straight through; an int64 counter is carried."""
    path = str(tmp_path / "exit.onnx")
    onnx.save(ddm.loop_exit(), path)
    model, ref = lathe.compile(path, cache_dir=False), lathe.compile(path, backend="interp")
    rng = np.random.default_rng(8)
    ran = 0
    for m, go, k in [(1 << 40, True, 0), (1 << 40, True, 15), (1 << 40, True, 16), (1 << 40, True, 17),
                     (1 << 40, True, 70), (1 << 40, True, 300), (3, True, 300), (1, True, 5), (0, True, 5),
                     (12, False, 5), (12, True, 40)]:
        f = {"m": np.array(m, np.int64), "go": np.array(go), "s0": rng.standard_normal(3).astype(np.float32),
             "c0": rng.integers(-5, 5, 1).astype(np.int64), "k": np.array(k, np.int64)}
        got, want = model.run(f), ref.run(f)
        check(got, want, f"m={m} go={go} k={k}")
        assert got["z"].shape == ((min(m, k + 1) if go else 0),), (m, go, k)
        ran += m > 0 and go
    lines = subgraph_lines(model.report)
    assert len(lines) == 1 and f"the Loop run by the plan {ran} times" in lines[0], model.report


def test_loop_with_random_body_is_interpreted(tmp_path):
    """A body that draws random numbers: the interpreter runs the Loop (one stream across iterations),
    and says why; the body itself is still compiled."""
    body = h.make_graph([h.make_node("RandomUniformLike", ["s"], ["r"], seed=3.0), h.make_node("Add", ["s", "r"], ["s2"]),
                         h.make_node("Identity", ["cond"], ["c2"])], "rbody",
                        [V("it", T.INT64, []), V("cond", T.BOOL, []), V("s", T.FLOAT, [4])],
                        [V("c2", T.BOOL, []), V("s2", T.FLOAT, [4])])
    g = h.make_graph([h.make_node("Loop", ["n", "", "s0"], ["sf"], body=body), h.make_node("Neg", ["sf"], ["y"])], "g",
                     [V("n", T.INT64, []), V("s0", T.FLOAT, [4])], [V("y", T.FLOAT, [4])])
    model = lathe.compile(_save(g, tmp_path / "rand.onnx"), cache_dir=False)
    y = model.run({"n": np.array(6, np.int64), "s0": np.zeros(4, np.float32)})["y"]
    assert y.shape == (4,) and np.all(y <= 0) and np.all(y >= -6), y
    lines = subgraph_lines(model.report)
    assert len(lines) == 1 and "the Loop interpreted (its body has random ops)" in lines[0], model.report


def test_loop_body_no_split_interprets(tmp_path):
    path = rnn_loop(tmp_path / "rnn.onnx")
    model = lathe.compile(path, cache_dir=False, no_split=True)
    f = rnn_feeds(np.random.default_rng(4))
    check(model.run(f), lathe.compile(path, backend="interp").run(f), "no_split")
    assert not subgraph_lines(model.report), model.report


def test_growing_state_goes_back_to_the_interpreter(tmp_path):
    """A state that grows every iteration would need a plan per iteration: interpreted after a few."""
    body = h.make_graph([h.make_node("Concat", ["s", "one"], ["s2"], axis=0), h.make_node("Identity", ["cond"], ["c2"])],
                        "grow", [V("it", T.INT64, []), V("cond", T.BOOL, []), V("s", T.FLOAT, [None])],
                        [V("c2", T.BOOL, []), V("s2", T.FLOAT, [None])],
                        [nh.from_array(np.array([1.5], np.float32), "one")])
    g = h.make_graph([h.make_node("Loop", ["n", "", "s0"], ["sf"], body=body), h.make_node("Exp", ["sf"], ["y"])], "g",
                     [V("n", T.INT64, []), V("s0", T.FLOAT, [2])], [V("y", T.FLOAT, None)])
    path = _save(g, tmp_path / "grow.onnx")
    model, ref = lathe.compile(path, cache_dir=False), lathe.compile(path, backend="interp")
    for n in (9, 3, 12):
        f = {"n": np.array(n, np.int64), "s0": np.array([0.25, -1.0], np.float32)}
        check(model.run(f), ref.run(f), f"n={n}")
    lines = subgraph_lines(model.report)
    assert len(lines) == 1 and "interpreted: its shapes change from call to call" in lines[0], model.report
    assert "the Loop interpreted (a loop-carried value changes dtype or shape)" in lines[0], model.report


def test_if_branches_compiled(tmp_path):
    """If on a run-time condition whose branches give different shapes (a host step): each branch
    compiled at its first call; the branches read outer values."""
    then_g = h.make_graph([h.make_node("Mul", ["x", "x"], ["t"]), h.make_node("Add", ["t", "b"], ["o"])], "then", [],
                          [V("o", T.FLOAT, [4, 5])])
    else_g = h.make_graph([h.make_node("Sigmoid", ["x"], ["sg"]),
                           h.make_node("Constant", [], ["st"], value=nh.from_array(np.array([1], np.int64))),
                           h.make_node("Constant", [], ["en"], value=nh.from_array(np.array([3], np.int64))),
                           h.make_node("Slice", ["sg", "st", "en"], ["o2"])], "else", [], [V("o2", T.FLOAT, [2, 5])])
    g = h.make_graph([h.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
                      h.make_node("Greater", ["sum", "zero"], ["c"]),
                      h.make_node("If", ["c"], ["r"], then_branch=then_g, else_branch=else_g),
                      h.make_node("Neg", ["r"], ["y"])], "g",
                     [V("x", T.FLOAT, [4, 5]), V("b", T.FLOAT, [4, 5])], [V("y", T.FLOAT, None)],
                     [nh.from_array(np.array(0, np.float32), "zero")])
    path = _save(g, tmp_path / "if.onnx")
    cc, log = counting_cc(tmp_path)
    model, ref = lathe.compile(path, cache_dir=False, cc=cc), lathe.compile(path, backend="interp")
    rng = np.random.default_rng(5)
    seen = set()
    for i in range(8):
        x = rng.standard_normal((4, 5)).astype(np.float32) + (1 if i % 2 else -1)
        f = {"x": x, "b": rng.standard_normal((4, 5)).astype(np.float32)}
        check(model.run(f), ref.run(f), f"run {i}")
        seen.add(bool(x.sum() > 0))
    assert seen == {True, False}
    report = model.report
    lines = subgraph_lines(report)
    assert len(lines) == 2 and all("(If): compiled at run time" in line for line in lines), report
    first = compiles(log)
    model.run(f)
    assert compiles(log) == first


def test_sequence_body_is_interpreted(tmp_path):
    """A body whose state is a sequence cannot be written as a model of tensors: interpreted, said why."""
    body = h.make_graph([h.make_node("SequenceInsert", ["seq", "v"], ["seq2"]), h.make_node("Identity", ["cond"], ["c2"])],
                        "seqbody", [V("it", T.INT64, []), V("cond", T.BOOL, []),
                                    h.make_tensor_sequence_value_info("seq", T.FLOAT, [2])],
                        [V("c2", T.BOOL, []), h.make_tensor_sequence_value_info("seq2", T.FLOAT, [2])])
    g = h.make_graph([h.make_node("SequenceEmpty", [], ["e"], dtype=T.FLOAT),
                      h.make_node("Loop", ["n", "", "e"], ["sq"], body=body),
                      h.make_node("ConcatFromSequence", ["sq"], ["cat"], axis=0), h.make_node("Abs", ["cat"], ["y"])], "g",
                     [V("n", T.INT64, []), V("v", T.FLOAT, [2])], [V("y", T.FLOAT, None)])
    path = _save(g, tmp_path / "seq.onnx")
    model, ref = lathe.compile(path, cache_dir=False), lathe.compile(path, backend="interp")
    f = {"n": np.array(4, np.int64), "v": np.array([1.0, -2.0], np.float32)}
    check(model.run(f), ref.run(f), "sequence")
    lines = subgraph_lines(model.report)
    assert lines and all("interpreted:" in line for line in lines), model.report


def test_body_error_names_the_node(tmp_path):
    """An index out of range inside a compiled body fails with the node named, not a crash."""
    body = h.make_graph([h.make_node("Gather", ["tab", "ix"], ["gv"], axis=0), h.make_node("Add", ["s", "gv"], ["s2"]),
                         h.make_node("Identity", ["cond"], ["c2"])], "gbody",
                        [V("it", T.INT64, []), V("cond", T.BOOL, []), V("s", T.FLOAT, [3])],
                        [V("c2", T.BOOL, []), V("s2", T.FLOAT, [3])])
    g = h.make_graph([h.make_node("Loop", ["n", "", "s0"], ["sf"], body=body), h.make_node("Exp", ["sf"], ["y"])], "g",
                     [V("n", T.INT64, []), V("s0", T.FLOAT, [3]), V("tab", T.FLOAT, [4, 3]), V("ix", T.INT64, [])],
                     [V("y", T.FLOAT, [3])])
    path = _save(g, tmp_path / "gather.onnx")
    model, ref = lathe.compile(path, cache_dir=False), lathe.compile(path, backend="interp")
    rng = np.random.default_rng(6)
    f = {"n": np.array(5, np.int64), "s0": rng.standard_normal(3).astype(np.float32),
         "tab": rng.standard_normal((4, 3)).astype(np.float32), "ix": np.array(2, np.int64)}
    check(model.run(f), ref.run(f), "in range")
    f["ix"] = np.array(9, np.int64)
    with pytest.raises(lathe.LatheError) as e:
        model.run(f)
    assert "Gather" in str(e.value), str(e.value)


@pytest.mark.parametrize("inputs,outputs", [(["n", "", "a", "b"], ["af"]),          # more carried values than outputs
                                            (["n", "", "a"], ["af", "z"])])         # a body without a loop-carried input
def test_loop_with_mismatched_body_is_refused_at_load(tmp_path, inputs, outputs):
    """A Loop whose body's inputs or outputs do not match its own carried values: loading names the
    node and the mismatch (shape inference used to read past the body's output list)."""
    body = h.make_graph([h.make_node("Neg", ["a_in"], ["a_out"]), h.make_node("Identity", ["cond"], ["c2"]),
                         h.make_node("Identity", ["a_in"], ["z_out"])], "mbody",
                        [V("it", T.INT64, []), V("cond", T.BOOL, []), V("a_in", T.FLOAT, [2])],
                        [V("c2", T.BOOL, []), V("a_out", T.FLOAT, [2])] +
                        ([V("z_out", T.FLOAT, [2])] if len(outputs) == 2 else []))
    if len(outputs) == 2:  # the body takes a carried value the node does not pass
        body.input.append(V("extra", T.FLOAT, [2]))
    g = h.make_graph([h.make_node("Loop", inputs, outputs, body=body, name="loop")], "g",
                     [V("n", T.INT64, []), V("a", T.FLOAT, [2]), V("b", T.FLOAT, [2])],
                     [V(o, T.FLOAT, None) for o in outputs])
    with pytest.raises(lathe.LatheError) as e:
        lathe.compile(_save(g, tmp_path / "bad.onnx"), backend="interp")
    assert "loop" in str(e.value) and "body" in str(e.value), str(e.value)
