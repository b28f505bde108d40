#!/usr/bin/env python3
"""make_models.py — writes the tiny ONNX models the C unit tests load (tests/unit/test_api.c).

Run from anywhere: `python3 tests/data/make_models.py`. The outputs are committed, so the C tests need
no Python; rerun this only to change the models.

  add.onnx       Z = X + Y, X and Y float[2,3]
  sym_add.onnx   Z = X + Y, X and Y float[N,3] (symbolic N), plus C = Identity(I), I int64[2]
  bad_op.onnx    an op lathe does not know (test.lathe.NoSuchOp) feeding Relu
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    onnx.checker.check_model(model)
    path = os.path.join(HERE, name)
    onnx.save(model, path)
    print("wrote", path)


def model(graph, opsets=(("", 17),)):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="lathe-tests")
    m.ir_version = 8
    return m


def main():
    f23 = [2, 3]
    save(model(helper.make_graph(
        [helper.make_node("Add", ["X", "Y"], ["Z"], name="add")], "add",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, f23),
         helper.make_tensor_value_info("Y", TensorProto.FLOAT, f23)],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT, f23)])), "add.onnx")

    save(model(helper.make_graph(
        [helper.make_node("Add", ["X", "Y"], ["Z"], name="add"),
         helper.make_node("Identity", ["I"], ["C"], name="id")], "sym_add",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("I", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("C", TensorProto.INT64, [2])])), "sym_add.onnx")

    m = model(helper.make_graph(
        [helper.make_node("NoSuchOp", ["X"], ["T"], name="mystery", domain="test.lathe"),
         helper.make_node("Relu", ["T"], ["Y"], name="relu")], "bad_op",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])]),
        opsets=(("", 17), ("test.lathe", 1)))
    path = os.path.join(HERE, "bad_op.onnx")
    onnx.save(m, path)  # the checker rejects unknown ops; that is the point
    print("wrote", path)


if __name__ == "__main__":
    main()
