#!/usr/bin/env python3
"""make_corpus.py — write a small seed corpus for fuzz/fuzz_import.c into the folder given as argument.

Models cover: plain ops with attributes of each kind, initializers (raw and typed fields, int4,
float16, strings), symbolic dims, sequence/optional types, If/Loop subgraphs with outer-scope
references, a sparse initializer, a model-local function with attribute references, and a copy of a
few of onnx's own node-test models when the onnx package has them.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(folder, name, model):
    with open(os.path.join(folder, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def mk(nodes, inputs, outputs, inits=(), opset=17, functions=(), sparse=(), ir=8, extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits), sparse_initializer=list(sparse))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(g, opset_imports=ops, functions=list(functions), ir_version=ir)


def main():
    if len(sys.argv) != 2:
        print("usage: make_corpus.py FOLDER", file=sys.stderr)
        return 1
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])

    save(out, "relu", mk([helper.make_node("Relu", ["x"], ["y"], name="r")], [X], [Y]))

    w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "w")
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], [1, 2, 3, 4])  # float_data
    save(out, "gemm", mk([helper.make_node("Gemm", ["x", "w", "b"], ["y"], alpha=0.5, transB=1)], [X], [Y], [w, b]))

    i4 = helper.make_tensor("q", TensorProto.INT4, [5], [1, -2, 3, -8, 7])
    f16 = helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([1.5, -2], dtype=np.float16))
    s = helper.make_tensor("s", TensorProto.STRING, [2], [b"ab", b"c"])
    i64 = helper.make_tensor("i", TensorProto.INT64, [3], [1, -1, 1 << 40])
    Q = helper.make_tensor_value_info("qo", TensorProto.INT4, [5])
    save(out, "dtypes", mk([helper.make_node("Identity", ["q"], ["qo"]),
                            helper.make_node("Identity", ["h"], ["ho"]),
                            helper.make_node("Identity", ["s"], ["so"]),
                            helper.make_node("Identity", ["i"], ["io"])],
                           [], [Q, helper.make_tensor_value_info("ho", TensorProto.FLOAT16, [2]),
                                helper.make_tensor_value_info("so", TensorProto.STRING, [2]),
                                helper.make_tensor_value_info("io", TensorProto.INT64, [3])],
                           [i4, f16, s, i64], opset=21, ir=10))

    attrs = helper.make_node("Custom", ["x"], ["y"], domain="my.domain", f=1.5, i=3, s="str", t=w,
                             fs=[1.0, 2.0], is_=[1, 2], ss=["a", "b"], ts=[w, b],
                             tp=helper.make_tensor_type_proto(TensorProto.FLOAT, [1, "M"]))
    save(out, "attrs", mk([attrs], [X], [Y], extra_opsets=[("my.domain", 1)]))

    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    C = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    save(out, "if", mk([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)], [C, X], [Y]))

    body = helper.make_graph(
        [helper.make_node("Add", ["v", "x"], ["v2"]), helper.make_node("Identity", ["cond"], ["cond2"])], "body",
        [helper.make_tensor_value_info("it", TensorProto.INT64, []), helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond2", TensorProto.BOOL, []), helper.make_tensor_value_info("v2", TensorProto.FLOAT, None)])
    T = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    save(out, "loop", mk([helper.make_node("Loop", ["n", "c", "x"], ["y"], body=body)], [T, C, X], [Y]))

    seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
    save(out, "seq", mk([helper.make_node("SequenceConstruct", ["x", "x"], ["seq"]),
                         helper.make_node("Optional", ["x"], ["o"])], [X], [seq, opt]))

    sp = helper.make_sparse_tensor(helper.make_tensor("sv", TensorProto.FLOAT, [2], [1, 2]),
                                   helper.make_tensor("si", TensorProto.INT64, [2], [1, 5]), [2, 4])
    save(out, "sparse", mk([helper.make_node("Add", ["x", "sv"], ["y"])], [X], [Y], sparse=[sp]))

    leaky = helper.make_node("LeakyRelu", ["m"], ["b"])
    leaky.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    fn = helper.make_function("local", "Scale", ["a"], ["b"],
                              [helper.make_node("Constant", [], ["k"], value_float=2.0),
                               helper.make_node("Mul", ["a", "k"], ["m"]), leaky],
                              [helper.make_opsetid("", 17)], attributes=["alpha"])
    save(out, "function", mk([helper.make_node("Scale", ["x"], ["y"], domain="local", alpha=0.1)], [X], [Y],
                             functions=[fn], extra_opsets=[("local", 1)]))

    node_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    for t in ["test_add", "test_if_seq", "test_loop11", "test_scan9_sum", "test_cast_FLOAT_to_INT4",
              "test_optional_get_element_sequence", "test_constant", "test_gather_0"]:
        p = os.path.join(node_dir, t, "model.onnx")
        if os.path.exists(p):
            with open(p, "rb") as f, open(os.path.join(out, t + ".onnx"), "wb") as g:
                g.write(f.read())
    # test-data values (the target decodes its input as these too)
    for t in ["test_if_seq", "test_optional_get_element_sequence", "test_cast_FLOAT_to_INT4",
              "test_optional_has_element_empty_optional_input", "test_sequence_insert_at_back", "test_strnormalizer_export_monday_casesensintive_lower"]:
        d = os.path.join(node_dir, t, "test_data_set_0")
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                with open(os.path.join(d, name), "rb") as f, open(os.path.join(out, f"{t}_{name}"), "wb") as g:
                    g.write(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
