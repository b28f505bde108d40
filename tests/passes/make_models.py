#!/usr/bin/env python3
"""make_models.py — writes the small models (with random weights) that tests/unit/test_passes_models.c
runs through the passes, and their inputs and expected outputs (computed by onnxruntime).

Run from anywhere: `python3 tests/passes/make_models.py` (needs numpy, onnx, onnxruntime). The outputs
are committed under tests/data/passes/, so the C test needs no Python; rerun only to change them.

The graphs copy what exporters emit, so every pass has real work:
  bert_layer   one BERT encoder layer as torch.onnx (opset 13) writes it: symbolic batch/seq, the head
               split through Shape -> Gather -> Unsqueeze -> Concat -> Reshape, attention mask
               arithmetic, Dropout and Identity nodes, decomposed LayerNorm, erf GELU.
  convnet      Conv + BatchNorm + Relu blocks with a residual Add, a Conv with bias, global pooling,
               Flatten, Gemm + BatchNorm, a MatMul + Add + BatchNorm head (opset 13).
  gpt_block    a GPT-2 block (opset 13): fused qkv Split, causal mask built from Shape/Range/Less/Where
               chains, tanh-approximation GELU (not a recognized pattern: must stay correct), Cast
               chains, Transpose pairs, Expand feeding Add.
Each model folder holds model.onnx, input_N.pb, output_N.pb (the onnx test-data layout) and dims.txt
("name=value" lines binding the symbolic dims of the inputs).
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "passes")
rng = np.random.default_rng(1234)


class G:
    """A tiny graph builder: nodes, initializers, unique names."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p):
        self.n += 1
        return f"{p}_{self.n}"

    def w(self, shape, scale=0.2, name="w", dtype=np.float32):
        a = (rng.standard_normal(shape) * scale).astype(dtype)
        nm = self.name(name)
        self.inits.append(numpy_helper.from_array(a, nm))
        return nm

    def c(self, value, name="c", dtype=None):
        a = np.array(value, dtype=dtype)
        nm = self.name(name)
        # torch exports small constants as Constant nodes
        self.nodes.append(helper.make_node("Constant", [], [nm], value=numpy_helper.from_array(a)))
        return nm

    def op(self, op_type, ins, n_out=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, ins, outs, **attrs))
        return outs[0] if n_out == 1 else outs


def layer_norm(g, x, d):
    m = g.op("ReduceMean", [x], axes=[-1])
    s = g.op("Sub", [x, m])
    p = g.op("Pow", [s, g.c(2.0, dtype=np.float32)])
    v = g.op("ReduceMean", [p], axes=[-1])
    e = g.op("Add", [v, g.c(1e-12, dtype=np.float32)])
    r = g.op("Sqrt", [e])
    n = g.op("Div", [s, r])
    y = g.op("Mul", [n, g.w([d], 0.5, "ln_gamma")])
    return g.op("Add", [y, g.w([d], 0.1, "ln_beta")])


def gelu_erf(g, x):
    a = g.op("Div", [x, g.c(1.4142135381698608, dtype=np.float32)])
    e = g.op("Erf", [a])
    p = g.op("Add", [e, g.c(1.0, dtype=np.float32)])
    m = g.op("Mul", [x, p])
    return g.op("Mul", [m, g.c(0.5, dtype=np.float32)])


def linear(g, x, din, dout):
    y = g.op("MatMul", [x, g.w([din, dout], 1.0 / np.sqrt(din), "lin_w")])
    return g.op("Add", [g.w([dout], 0.1, "lin_b"), y])


def shape_dim(g, x, i):
    s = g.op("Shape", [x])
    return g.op("Gather", [s, g.c(i, dtype=np.int64)], axis=0)


def bert_layer():
    g = G()
    D, H = 32, 4
    hd = D // H
    x, mask = "hidden", "attention_mask"
    # mask: [B, S] of 0/1 -> (1 - mask) * -10000, shape [B, 1, 1, S]
    m1 = g.op("Unsqueeze", [mask, g.c([1], dtype=np.int64)])
    m2 = g.op("Unsqueeze", [m1, g.c([2], dtype=np.int64)])
    m3 = g.op("Cast", [m2], to=TensorProto.FLOAT)
    m4 = g.op("Sub", [g.c(1.0, dtype=np.float32), m3])
    madd = g.op("Mul", [m4, g.c(-10000.0, dtype=np.float32)])

    def heads(t):
        b = g.op("Unsqueeze", [shape_dim(g, t, 0), g.c([0], dtype=np.int64)])
        s = g.op("Unsqueeze", [shape_dim(g, t, 1), g.c([0], dtype=np.int64)])
        shp = g.op("Concat", [b, s, g.c([H], dtype=np.int64), g.c([hd], dtype=np.int64)], axis=0)
        r = g.op("Reshape", [t, shp])
        return g.op("Transpose", [r], perm=[0, 2, 1, 3])

    q = heads(linear(g, x, D, D))
    k = heads(linear(g, x, D, D))
    v = heads(linear(g, x, D, D))
    kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    sc = g.op("MatMul", [q, kt])
    sc = g.op("Div", [sc, g.c(np.sqrt(hd), dtype=np.float32)])
    sc = g.op("Add", [sc, madd])
    pr = g.op("Softmax", [sc], axis=-1)
    pr = g.op("Dropout", [pr])
    ctx = g.op("MatMul", [pr, v])
    ctx = g.op("Transpose", [ctx], perm=[0, 2, 1, 3])
    b = g.op("Unsqueeze", [shape_dim(g, ctx, 0), g.c([0], dtype=np.int64)])
    s = g.op("Unsqueeze", [shape_dim(g, ctx, 1), g.c([0], dtype=np.int64)])
    shp = g.op("Concat", [b, s, g.c([D], dtype=np.int64)], axis=0)
    ctx = g.op("Reshape", [ctx, shp])
    att = linear(g, ctx, D, D)
    att = g.op("Identity", [g.op("Dropout", [att])])
    h1 = layer_norm(g, g.op("Add", [att, x]), D)
    ff = gelu_erf(g, linear(g, h1, D, 4 * D))
    ff = linear(g, ff, 4 * D, D)
    out = layer_norm(g, g.op("Add", [ff, h1]), D)
    g.nodes.append(helper.make_node("Identity", [out], ["output"]))
    graph = helper.make_graph(
        g.nodes, "bert_layer",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "seq", D]),
         helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", "seq", D])], g.inits)
    inputs = [rng.standard_normal([2, 5, D]).astype(np.float32),
              np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=np.int64)]
    return graph, inputs, {"batch": 2, "seq": 5}


def bn(g, x, c):
    return g.op("BatchNormalization", [x, scale(g, c), g.w([c], 0.2, "bn_b"), g.w([c], 0.2, "bn_m"), var(g, c)],
                epsilon=1e-5)


def scale(g, c):
    nm = g.name("bn_s")
    g.inits.append(numpy_helper.from_array((1 + 0.3 * rng.standard_normal(c)).astype(np.float32), nm))
    return nm


def var(g, c):
    nm = g.name("bn_v")
    g.inits.append(numpy_helper.from_array((0.5 + rng.random(c)).astype(np.float32), nm))
    return nm


def convnet():
    g = G()
    x = "image"
    c1 = g.op("Conv", [x, g.w([8, 3, 3, 3], 0.3, "conv_w")], pads=[1, 1, 1, 1])
    r1 = g.op("Relu", [bn(g, c1, 8)])
    c2 = g.op("Conv", [r1, g.w([8, 8, 3, 3], 0.2, "conv_w"), g.w([8], 0.1, "conv_b")], pads=[1, 1, 1, 1])
    b2 = bn(g, c2, 8)
    c3 = g.op("Conv", [b2, g.w([8, 2, 1, 1], 0.3, "conv_w")], group=4)  # grouped
    b3 = bn(g, c3, 8)
    r2 = g.op("Relu", [g.op("Add", [b3, r1])])
    p = g.op("GlobalAveragePool", [r2])
    f = g.op("Flatten", [p], axis=1)
    f = g.op("Identity", [f])
    gm = g.op("Gemm", [f, g.w([6, 8], 0.4, "fc_w"), g.w([6], 0.1, "fc_b")], transB=1, alpha=1.0, beta=1.0)
    gb = bn(g, gm, 6)
    mm = g.op("MatMul", [gb, g.w([6, 4], 0.4, "head_w")])
    ad = g.op("Add", [mm, g.w([4], 0.1, "head_b")])
    hb = bn(g, ad, 4)
    g.nodes.append(helper.make_node("Softmax", [hb], ["probs"], axis=1))
    graph = helper.make_graph(g.nodes, "convnet", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 4])], g.inits)
    return graph, [rng.standard_normal([1, 3, 8, 8]).astype(np.float32)], {}


def gpt_block():
    g = G()
    D, H = 16, 2
    hd = D // H
    x = "x"
    h = layer_norm(g, x, D)
    qkv = linear(g, h, D, 3 * D)
    q, k, v = g.op("Split", [qkv, g.c([D, D, D], dtype=np.int64)], n_out=3, axis=2)

    def heads(t):
        b = g.op("Unsqueeze", [shape_dim(g, t, 0), g.c([0], dtype=np.int64)])
        s = g.op("Unsqueeze", [shape_dim(g, t, 1), g.c([0], dtype=np.int64)])
        shp = g.op("Concat", [b, s, g.c([H], dtype=np.int64), g.c([hd], dtype=np.int64)], axis=0)
        return g.op("Transpose", [g.op("Reshape", [t, shp])], perm=[0, 2, 1, 3])

    q, k, v = heads(q), heads(k), heads(v)
    kt = g.op("Transpose", [g.op("Transpose", [k], perm=[0, 2, 1, 3])], perm=[0, 2, 3, 1])  # a Transpose pair
    sc = g.op("Mul", [g.op("MatMul", [q, kt]), g.c(1.0 / np.sqrt(hd), dtype=np.float32)])
    # causal mask: Less(Range(S)[:,None], Range(S)[None,:]) via shape chains, then Where
    S = shape_dim(g, x, 1)
    r = g.op("Range", [g.c(0, dtype=np.int64), S, g.c(1, dtype=np.int64)])
    rc = g.op("Cast", [g.op("Cast", [r], to=TensorProto.INT32)], to=TensorProto.INT64)  # cast chain
    col = g.op("Unsqueeze", [rc, g.c([0], dtype=np.int64)])
    row = g.op("Unsqueeze", [rc, g.c([1], dtype=np.int64)])
    future = g.op("Less", [row, col])
    msh = g.op("Concat", [g.c([1, 1], dtype=np.int64), g.op("Unsqueeze", [S, g.c([0], dtype=np.int64)]),
                          g.op("Unsqueeze", [S, g.c([0], dtype=np.int64)])], axis=0)
    fm = g.op("Expand", [future, msh])
    sc = g.op("Where", [fm, g.c(-1e9, dtype=np.float32), sc])
    always = g.op("Equal", [g.c(1, dtype=np.int64), g.c(1, dtype=np.int64)])  # a constant-true Where
    sc = g.op("Where", [always, sc, g.c(0.0, dtype=np.float32)])
    pr = g.op("Softmax", [sc], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [pr, v])], perm=[0, 2, 1, 3])
    b = g.op("Unsqueeze", [shape_dim(g, ctx, 0), g.c([0], dtype=np.int64)])
    s = g.op("Unsqueeze", [shape_dim(g, ctx, 1), g.c([0], dtype=np.int64)])
    ctx = g.op("Reshape", [ctx, g.op("Concat", [b, s, g.c([D], dtype=np.int64)], axis=0)])
    h1 = g.op("Add", [x, linear(g, ctx, D, D)])
    h2 = layer_norm(g, h1, D)
    f = linear(g, h2, D, 4 * D)
    # tanh GELU: 0.5 * f * (1 + tanh(sqrt(2/pi) * (f + 0.044715 * f^3)))
    f3 = g.op("Pow", [f, g.c(3.0, dtype=np.float32)])
    inner = g.op("Add", [f, g.op("Mul", [g.c(0.044715, dtype=np.float32), f3])])
    t = g.op("Tanh", [g.op("Mul", [g.c(np.sqrt(2 / np.pi), dtype=np.float32), inner])])
    gl = g.op("Mul", [g.op("Mul", [g.c(0.5, dtype=np.float32), f]), g.op("Add", [g.c(1.0, dtype=np.float32), t])])
    out = g.op("Add", [h1, linear(g, gl, 4 * D, D)])
    bias = g.op("Expand", [g.w([D], 0.1, "out_bias"), g.op("Shape", [out])])
    g.nodes.append(helper.make_node("Add", [out, bias], ["y"]))
    graph = helper.make_graph(g.nodes, "gpt_block",
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "seq", D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", D])], g.inits)
    return graph, [rng.standard_normal([1, 6, D]).astype(np.float32)], {"batch": 1, "seq": 6}


def save(name, graph, inputs, dims):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="lathe-tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
    outs = sess.run(None, feeds)
    for k, a in enumerate(inputs):
        with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, graph.input[k].name).SerializeToString())
    for k, a in enumerate(outs):
        with open(os.path.join(d, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, graph.output[k].name).SerializeToString())
    with open(os.path.join(d, "dims.txt"), "w") as f:
        for k, v in dims.items():
            f.write(f"{k}={v}\n")
    print("wrote", d, "nodes", len(graph.node))


if __name__ == "__main__":
    save("bert_layer", *bert_layer())
    save("convnet", *convnet())
    save("gpt_block", *gpt_block())
