"""data_dependent_models.py — small models whose sizes depend on the data, for test_data_dependent.py and
tests/gpu/data_dependent_cuda.py: each has one op whose output size the values decide (NonZero,
NonMaxSuppression, Unique of elements and of rows in the order of appearance, TopK with a k given at run
time, Compress, a Loop's scan output) and compilable nodes after it, so the compiler splits the graph
there (src/compile/split.h).

MODELS maps a name to (build, feeds): build() returns the onnx ModelProto; feeds(rng) random inputs for
which the data-dependent sizes vary between calls and stay >= 2 (the sizes 0 and 1 make buckets of their
own). nonzero_feeds(rng, none=True) gives NonZero an input with no element above its threshold.
"""
import numpy as np
from onnx import TensorProto as T, helper as h, numpy_helper as nh


def _model(nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, "m", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def _c(name, value, dtype):
    return nh.from_array(np.array(value, dtype), name)


def _w(name, shape, seed):
    return nh.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def nonzero(batch=5):
    """x [batch, 6] -> NonZero(x > 0.3) -> GatherND(x, nz^T) * 2 -> Exp; returns y, ReduceSum and nz."""
    nodes = [h.make_node("Greater", ["x", "t"], ["gt"]), h.make_node("NonZero", ["gt"], ["nz"]),
             h.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]), h.make_node("GatherND", ["x", "idx"], ["g"]),
             h.make_node("Mul", ["g", "two"], ["m"]), h.make_node("ReduceSum", ["m"], ["s"], keepdims=1),
             h.make_node("Exp", ["m"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [batch, 6])],
                  [h.make_tensor_value_info(n, t, None) for n, t in (("y", T.FLOAT), ("s", T.FLOAT), ("nz", T.INT64))],
                  [_c("two", 2.0, np.float32), _c("t", 0.3, np.float32)])


def nonzero_feeds(rng, none=False, batch=5):
    x = rng.standard_normal((batch, 6)).astype(np.float32)
    return {"x": np.minimum(x, 0.2) if none else x}


def nms():
    """NonMaxSuppression over 40 boxes -> the selected boxes (Gather) @ W -> Relu."""
    nodes = [h.make_node("NonMaxSuppression", ["boxes", "scores", "maxo", "iou", "sth"], ["sel"]),
             h.make_node("Gather", ["sel", "two"], ["bi"], axis=1), h.make_node("Squeeze", ["boxes", "zero"], ["b0"]),
             h.make_node("Gather", ["b0", "bi"], ["picked"], axis=0), h.make_node("MatMul", ["picked", "w"], ["mm"]),
             h.make_node("Relu", ["mm"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("boxes", T.FLOAT, [1, 40, 4]),
                          h.make_tensor_value_info("scores", T.FLOAT, [1, 1, 40])],
                  [h.make_tensor_value_info("y", T.FLOAT, None)],
                  [_c("maxo", [20], np.int64), _c("iou", [0.5], np.float32), _c("sth", [0.2], np.float32),
                   _c("two", 2, np.int64), _c("zero", [0], np.int64), _w("w", (4, 8), 0)])


def nms_feeds(rng):
    xy = rng.uniform(0, 10, (1, 40, 2)).astype(np.float32)
    wh = rng.uniform(1, 4, (1, 40, 2)).astype(np.float32)
    return {"boxes": np.concatenate([xy, xy + wh], axis=2), "scores": rng.uniform(0, 1, (1, 1, 40)).astype(np.float32)}


def unique():
    """Unique (sorted) of 30 integers -> values * counts -> CumSum; returns it and the inverse indices."""
    nodes = [h.make_node("Unique", ["x"], ["u", "ix", "inv", "cnt"], sorted=1), h.make_node("Cast", ["u"], ["uf"], to=T.FLOAT),
             h.make_node("Cast", ["cnt"], ["cf"], to=T.FLOAT), h.make_node("Mul", ["uf", "cf"], ["p"]),
             h.make_node("CumSum", ["p", "ax"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("x", T.INT64, [30])],
                  [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("inv", T.INT64, None)],
                  [_c("ax", 0, np.int64)])


def unique_feeds(rng):
    return {"x": rng.integers(0, rng.integers(3, 20), 30).astype(np.int64)}


def unique_rows():
    """Unique rows (axis 0, in the order of appearance) of a [24, 3] float matrix -> each row's sum times
    its count; returns it and the inverse indices."""
    nodes = [h.make_node("Unique", ["x"], ["u", "ix", "inv", "cnt"], sorted=0, axis=0),
             h.make_node("ReduceSum", ["u", "ax1"], ["s"], keepdims=0), h.make_node("Cast", ["cnt"], ["cf"], to=T.FLOAT),
             h.make_node("Mul", ["s", "cf"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [24, 3])],
                  [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("inv", T.INT64, None)],
                  [_c("ax1", [1], np.int64)])


def unique_rows_feeds(rng):
    rows = rng.integers(-3, 4, (rng.integers(2, 9), 3)).astype(np.float32)
    return {"x": rows[rng.integers(0, len(rows), 24)]}


def topk():
    """TopK with k a model input -> Softmax over the k values + the indices."""
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1), h.make_node("Softmax", ["v"], ["sm"], axis=1),
             h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT), h.make_node("Add", ["sm", "fi"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [3, 50]), h.make_tensor_value_info("k", T.INT64, [1])],
                  [h.make_tensor_value_info("y", T.FLOAT, None)])


def topk_feeds(rng):
    return {"x": rng.standard_normal((3, 50)).astype(np.float32), "k": np.array([rng.integers(2, 40)], np.int64)}


def compress():
    """Compress the rows of x [64, 4] whose first column is > 0 -> @ W -> Tanh."""
    nodes = [h.make_node("Slice", ["x", "s0", "s1", "s2"], ["col"]), h.make_node("Reshape", ["col", "flat"], ["c1"]),
             h.make_node("Greater", ["c1", "zf"], ["cond"]), h.make_node("Compress", ["x", "cond"], ["cx"], axis=0),
             h.make_node("MatMul", ["cx", "w"], ["mm"]), h.make_node("Tanh", ["mm"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [64, 4])], [h.make_tensor_value_info("y", T.FLOAT, None)],
                  [_c("s0", [0], np.int64), _c("s1", [1], np.int64), _c("s2", [1], np.int64), _c("flat", [-1], np.int64),
                   _c("zf", 0, np.float32), _w("w", (4, 8), 1)])


def compress_feeds(rng):
    return {"x": rng.standard_normal((64, 4)).astype(np.float32)}


def loop_scan():
    """A Loop of max(n) iterations whose scan output (one row of 4 per iteration) goes through Sigmoid."""
    body = h.make_graph([h.make_node("Add", ["acc", "one"], ["acc2"]), h.make_node("Mul", ["acc2", "base"], ["row"]),
                         h.make_node("Identity", ["cond"], ["cond2"])], "body",
                        [h.make_tensor_value_info("it", T.INT64, []), h.make_tensor_value_info("cond", T.BOOL, []),
                         h.make_tensor_value_info("acc", T.FLOAT, [4])],
                        [h.make_tensor_value_info("cond2", T.BOOL, []), h.make_tensor_value_info("acc2", T.FLOAT, [4]),
                         h.make_tensor_value_info("row", T.FLOAT, [4])],
                        [_c("one", 1.0, np.float32)])
    nodes = [h.make_node("ReduceMax", ["n"], ["nmax"], keepdims=0),
             h.make_node("Loop", ["nmax", "", "a0"], ["accf", "rows"], body=body), h.make_node("Sigmoid", ["rows"], ["y"])]
    return _model(nodes, [h.make_tensor_value_info("n", T.INT64, [2]), h.make_tensor_value_info("a0", T.FLOAT, [4]),
                          h.make_tensor_value_info("base", T.FLOAT, [4])],
                  [h.make_tensor_value_info("y", T.FLOAT, None)])


def loop_scan_feeds(rng):
    # at least 5 rows (20 floats): fewer fit in one AVX-512 vector, a kernel of another shape (a bucket of its own)
    return {"n": rng.integers(5, 12, 2).astype(np.int64), "a0": rng.standard_normal(4).astype(np.float32),
            "base": rng.standard_normal(4).astype(np.float32)}


def loop_exit():
    """A Loop that stops when its body says so (it < k, k an outer input) or at its trip count m:
    a float state, an int64 counter, and two scan outputs (the state, and the iteration number passed
    straight through) that go through Sigmoid and Cast -> Mul. A trip count of 2**40 leaves the scan
    outputs' size to the condition (grown as they fill)."""
    V = h.make_tensor_value_info
    body = h.make_graph([h.make_node("Cast", ["it"], ["itf"], to=T.FLOAT), h.make_node("Mul", ["s", "half"], ["sh"]),
                         h.make_node("Add", ["sh", "itf"], ["s2"]), h.make_node("Add", ["cnt", "one"], ["cnt2"]),
                         h.make_node("Less", ["it", "k"], ["c2"])], "body",
                        [V("it", T.INT64, []), V("cond", T.BOOL, []), V("s", T.FLOAT, [3]), V("cnt", T.INT64, [1])],
                        [V("c2", T.BOOL, []), V("s2", T.FLOAT, [3]), V("cnt2", T.INT64, [1]), V("s2", T.FLOAT, [3]),
                         V("it", T.INT64, [])],
                        [_c("half", 0.5, np.float32), _c("one", [1], np.int64)])
    nodes = [h.make_node("Loop", ["m", "go", "s0", "c0"], ["sf", "cntf", "states", "its"], body=body),
             h.make_node("Sigmoid", ["states"], ["y"]), h.make_node("Cast", ["its"], ["itsf"], to=T.FLOAT),
             h.make_node("Mul", ["itsf", "itsf"], ["z"])]
    return _model(nodes, [V("m", T.INT64, []), V("go", T.BOOL, []), V("s0", T.FLOAT, [3]), V("c0", T.INT64, [1]),
                          V("k", T.INT64, [])],
                  [V("y", T.FLOAT, None), V("z", T.FLOAT, None), V("sf", T.FLOAT, [3]), V("cntf", T.INT64, [1])])


def loop_exit_feeds(rng):
    # at least 5 iterations (see loop_scan_feeds); k past 16 and 32: the scan outputs grow
    return {"m": np.array(rng.choice([12, 1 << 40]), np.int64), "go": np.array(True), "s0": rng.standard_normal(3).astype(np.float32),
            "c0": rng.integers(-5, 5, 1).astype(np.int64), "k": np.array(rng.integers(4, 70), np.int64)}


MODELS = {"nonzero": (nonzero, nonzero_feeds), "nms": (nms, nms_feeds), "unique": (unique, unique_feeds),
          "unique_rows": (unique_rows, unique_rows_feeds),
          "topk": (topk, topk_feeds), "compress": (compress, compress_feeds), "loop_scan": (loop_scan, loop_scan_feeds),
          "loop_exit": (loop_exit, loop_exit_feeds)}
