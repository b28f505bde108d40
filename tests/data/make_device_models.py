#!/usr/bin/env python3
"""make_device_models.py — writes the small ONNX models tests/unit/test_plan_device.c loads: plans whose
kernels and host steps hand values back and forth (the copies a device plan makes). Outputs are
committed; rerun only to change them: `python3 tests/data/make_device_models.py`.

  dev_mix.onnx   Relu (kernel) -> Hardmax (host: reads a kernel output, writes a static value a kernel
                 reads) -> Mul (kernel) -> NonZero / Cast / ReduceSum (host, data-dependent shapes) ->
                 Add (kernel reads the host scalar); outputs: a kernel output a host step also reads,
                 a host-written output a kernel also reads, and the last kernel's output
  dev_loop.onnx  Tanh (kernel) -> Loop (host; its body reads the kernel output from the outer scope)
                 -> Mul (kernel) on the loop's result
  dev_while.onnx Tanh (kernel) -> two Loops the plan runs (bodies compiled for the device, reading the
                 Tanh from the outer scope): one of n iterations (an input) that hands its condition
                 on and has a scan output (-> ReduceSum over the iterations, in the rest after the
                 split), one of at most 1000 that stops when its body says (iteration < k, an input)
  dev_sym.onnx   x [batch, 16] -> MatMul, Add, Relu, MatMul -> y [batch, 8]: a symbolic batch and three
                 weights, for a model compiled for every shape on the test device (shared constants
                 and graphs across its plans)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)


def vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def save(name, graph, opset=17):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="lathe-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))
    print("wrote", name)


def main():
    w = nh.from_array(rng.uniform(-1, 1, (6,)).astype(np.float32), "w")
    save("dev_mix", h.make_graph([
        h.make_node("Relu", ["x"], ["a"], name="relu"),
        h.make_node("Hardmax", ["a"], ["c"], name="hardmax", axis=1),
        h.make_node("Mul", ["c", "w"], ["d"], name="mul"),
        h.make_node("NonZero", ["d"], ["nz"], name="nonzero"),
        h.make_node("Cast", ["nz"], ["nzf"], name="cast", to=TP.FLOAT),
        h.make_node("ReduceSum", ["nzf"], ["s"], name="rsum", keepdims=0),
        h.make_node("Add", ["d", "s"], ["y"], name="add"),
        h.make_node("Sigmoid", ["c"], ["cs"], name="sig"),
    ], "dev_mix", [vi("x", [4, 6])], [vi("a", [4, 6]), vi("c", [4, 6]), vi("y", [4, 6]), vi("cs", [4, 6])],
        [w]))

    body = h.make_graph([
        h.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        h.make_node("Add", ["v", "e"], ["v2"], name="body_add"),
        h.make_node("Mul", ["v2", "half"], ["v3"], name="body_mul"),
    ], "body", [vi("iter", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("v", [3, 4])],
        [vi("cond_out", [], TP.BOOL), vi("v3", [3, 4])],
        [nh.from_array(np.array(0.5, dtype=np.float32), "half")])
    save("dev_loop", h.make_graph([
        h.make_node("Tanh", ["x"], ["e"], name="tanh"),
        h.make_node("Loop", ["trips", "", "e"], ["l"], name="loop", body=body),
        h.make_node("Mul", ["l", "two"], ["y"], name="mul2"),
    ], "dev_loop", [vi("x", [3, 4])], [vi("y", [3, 4])],
        [nh.from_array(np.array(3, dtype=np.int64), "trips"), nh.from_array(np.array(2.0, dtype=np.float32), "two")]))

    body1 = h.make_graph([
        h.make_node("Identity", ["cond_in"], ["cond_out"], name="cond1"),
        h.make_node("Add", ["v", "e"], ["v2"], name="add1"),
        h.make_node("Mul", ["v2", "half"], ["v3"], name="mul1"),
    ], "body1", [vi("iter", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("v", [3, 4])],
        [vi("cond_out", [], TP.BOOL), vi("v3", [3, 4]), vi("v2", [3, 4])],
        [nh.from_array(np.array(0.5, dtype=np.float32), "half")])
    body2 = h.make_graph([
        h.make_node("Less", ["iter", "k"], ["cond_out"], name="less"),
        h.make_node("Mul", ["u", "decay"], ["ud"], name="mul2"),
        h.make_node("Add", ["ud", "e"], ["u2"], name="add2"),
    ], "body2", [vi("iter", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("u", [3, 4])],
        [vi("cond_out", [], TP.BOOL), vi("u2", [3, 4])],
        [nh.from_array(np.array(0.9, dtype=np.float32), "decay")])
    save("dev_while", h.make_graph([
        h.make_node("Tanh", ["x"], ["e"], name="tanh"),
        h.make_node("Loop", ["n", "", "e"], ["l1", "s1"], name="loop_n", body=body1),
        h.make_node("Mul", ["l1", "two"], ["y1"], name="y1"),
        h.make_node("ReduceSum", ["s1", "ax0"], ["ys"], name="sum_iters", keepdims=0),
        h.make_node("Loop", ["big", "", "e"], ["l2"], name="loop_k", body=body2),
        h.make_node("Mul", ["l2", "two"], ["y2"], name="y2"),
    ], "dev_while", [vi("x", [3, 4]), vi("n", [], TP.INT64), vi("k", [], TP.INT64)],
        [vi("y1", [3, 4]), vi("ys", [3, 4]), vi("y2", [3, 4])],
        [nh.from_array(np.array(1000, dtype=np.int64), "big"), nh.from_array(np.array(2.0, dtype=np.float32), "two"),
         nh.from_array(np.array([0], dtype=np.int64), "ax0")]))

    r2 = np.random.default_rng(12)
    save("dev_sym", h.make_graph([
        h.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
        h.make_node("Add", ["a", "b1"], ["b"], name="bias"),
        h.make_node("Relu", ["b"], ["c"], name="relu"),
        h.make_node("MatMul", ["c", "w2"], ["y"], name="mm2"),
    ], "dev_sym", [vi("x", ["batch", 16])], [vi("y", ["batch", 8])],
        [nh.from_array(r2.uniform(-1, 1, (16, 32)).astype(np.float32), "w1"),
         nh.from_array(r2.uniform(-1, 1, (32,)).astype(np.float32), "b1"),
         nh.from_array(r2.uniform(-1, 1, (32, 8)).astype(np.float32), "w2")]))


if __name__ == "__main__":
    main()
