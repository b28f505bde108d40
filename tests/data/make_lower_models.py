#!/usr/bin/env python3
"""make_lower_models.py — writes the small ONNX models the fusion/lowering tests load
(tests/unit/test_lower.c, tests/unit/test_fuse.c). Outputs are committed; rerun only to change them:
`python3 tests/data/make_lower_models.py`.

Each model exercises one family of groups, with random weights (fixed seed):
  lower_ew.onnx        an elementwise/broadcast chain with a [C] bias and a second input
  lower_ln.onnx        decomposed LayerNorm (ReduceMean/Sub/Pow/Sqrt/Div, GPT-2 style) and the op
  lower_attn.onnx      attention: MatMul + scale + mask epilogue, Softmax, Transpose/Reshape views
  lower_attn2.onnx     GPT-2 style attention: Split, strided head views, Div scale, Where mask,
                       residual before the merging Transpose, a transpose that is not a view, a
                       Sub moved from a MatMul's epilogue into a Softmax's prologue
  lower_proj.onnx      Gemm/MatMul -> Reshape adding a leading 1 -> residual add (and a mask), and
                       a written-out tanh GELU after a Gemm
  lower_mlp.onnx       MatMul + bias + Gelu(erf form) + MatMul + residual add, Gemm with alpha/beta
  lower_conv.onnx      Conv 3x3 pad 1 + Relu, MaxPool, 1x1 Conv + residual + Clip, GAP, Flatten, Gemm,
                       and a Conv whose weights are an input
  lower_inj.onnx       Gather (embedding), Slice, Concat, Split, Pad, Expand, Tile, Where, Squeeze
  lower_red.onnx       ReduceSum/Max/Min/Prod/L1/L2/SumSquare/LogSumExp, ArgMax, LogSoftmax
  lower_bcast.onnx     broadcasting across size-1 dims (the coalesced view's merge rule)
  lower_host.onnx      NonZero (data-dependent shape) between compiled nodes
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def W(name, *shape):
    return nh.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)


def I64(name, vals):
    return nh.from_array(np.array(vals, dtype=np.int64), name)


def F(name, vals):
    return nh.from_array(np.array(vals, dtype=np.float32), name)


def vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def save(name, nodes, inputs, outputs, inits, opset=17):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="lathe-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name + ".onnx"))
    print("wrote", name)


def N(op, ins, outs, name=None, **kw):
    return h.make_node(op, ins, outs, name=name or outs[0], **kw)


def main():
    # elementwise chain: y = exp(relu(x) * c + z) ; also a separately stored sigmoid(x) (x has 2 uses)
    save("lower_ew", [
        N("Relu", ["x"], ["r"]),
        N("Mul", ["r", "c"], ["m"]),
        N("Add", ["m", "z"], ["a"]),
        N("Exp", ["a"], ["y"]),
        N("Sigmoid", ["x"], ["s"]),
        N("Neg", ["s"], ["y2"]),
    ], [vi("x", [2, 3, 4]), vi("z", [2, 3, 4])], [vi("y", [2, 3, 4]), vi("y2", [2, 3, 4])],
        [W("c", 4)])

    # decomposed LayerNorm (as exported GPT-2 has it) and LayerNormalization
    save("lower_ln", [
        N("ReduceMean", ["x"], ["mu"], axes=[-1]),
        N("Sub", ["x", "mu"], ["d"]),
        N("Pow", ["d", "two"], ["d2"]),
        N("ReduceMean", ["d2"], ["var"], axes=[-1]),
        N("Add", ["var", "eps"], ["ve"]),
        N("Sqrt", ["ve"], ["sd"]),
        N("Div", ["d", "sd"], ["nrm"]),
        N("Mul", ["nrm", "g"], ["sc"]),
        N("Add", ["sc", "b"], ["y"]),
        N("LayerNormalization", ["x", "g", "b"], ["y2"], axis=-1, epsilon=1e-5),
    ], [vi("x", [2, 8, 16])], [vi("y", [2, 8, 16]), vi("y2", [2, 8, 16])],
        [F("two", 2.0), F("eps", 1e-5), W("g", 16), W("b", 16)])

    # attention core: softmax(q k^T * s + mask) v, heads split with Reshape/Transpose
    save("lower_attn", [
        N("Reshape", ["q", "shp"], ["q4"]),
        N("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        N("Reshape", ["k", "shp"], ["k4"]),
        N("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        N("MatMul", ["qh", "kt"], ["sc"]),
        N("Mul", ["sc", "scale"], ["scs"]),
        N("Add", ["scs", "mask"], ["scm"]),
        N("Softmax", ["scm"], ["p"], axis=-1),
        N("Reshape", ["v", "shp"], ["v4"]),
        N("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        N("MatMul", ["p", "vh"], ["o"]),
        N("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "shp2"], ["y"]),
    ], [vi("q", [2, 8, 16]), vi("k", [2, 8, 16]), vi("v", [2, 8, 16]), vi("mask", [2, 1, 1, 8])],
        [vi("y", [2, 8, 16])],
        [I64("shp", [2, 8, 4, 4]), I64("shp2", [2, 8, 16]), F("scale", 0.5)])

    # MLP block: gelu(x W1 + b1) W2 + b2 + x ; Gemm with alpha/beta and transB
    save("lower_mlp", [
        N("MatMul", ["x", "w1"], ["h"]),
        N("Add", ["h", "b1"], ["hb"]),
        N("Div", ["hb", "sqrt2"], ["hd"]),
        N("Erf", ["hd"], ["he"]),
        N("Add", ["he", "one"], ["h1"]),
        N("Mul", ["hb", "h1"], ["hm"]),
        N("Mul", ["hm", "half"], ["g"]),
        N("MatMul", ["g", "w2"], ["o"]),
        N("Add", ["o", "b2"], ["ob"]),
        N("Add", ["ob", "x"], ["y"]),
        N("Gemm", ["x2", "w3", "b3"], ["y2"], alpha=0.5, beta=2.0, transB=1),
        N("Tanh", ["y2"], ["y3"]),
    ], [vi("x", [70, 16]), vi("x2", [3, 16])], [vi("y", [70, 16]), vi("y3", [3, 5])],
        [W("w1", 16, 32), W("b1", 32), W("w2", 32, 16), W("b2", 16), F("sqrt2", 1.4142135), F("one", 1.0),
         F("half", 0.5), W("w3", 5, 16), W("b3", 5)])

    # small CNN: conv3x3+relu, maxpool, pointwise conv + residual + clip, GAP, flatten, gemm, softmax
    save("lower_conv", [
        N("Conv", ["x", "cw1", "cb1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        N("Relu", ["c1"], ["r1"]),
        N("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        N("Conv", ["p1", "cw2", "cb2"], ["c2"], kernel_shape=[1, 1]),
        N("Add", ["c2", "p1"], ["s2"]),
        N("Clip", ["s2", "lo", "hi"], ["k2"]),
        N("Conv", ["k2", "cw3"], ["c3"], kernel_shape=[3, 3], strides=[2, 2], group=2, auto_pad="SAME_UPPER"),
        N("AveragePool", ["c3"], ["ap"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        N("GlobalAveragePool", ["ap"], ["gp"]),
        N("Flatten", ["gp"], ["fl"]),
        N("Gemm", ["fl", "fw", "fb"], ["lg"], transB=1),
        N("Softmax", ["lg"], ["y"], axis=1),
        N("Conv", ["x", "wx"], ["y2"], kernel_shape=[3, 3], strides=[2, 1]),  # weights not constant
    ], [vi("x", [2, 3, 10, 10]), vi("wx", [2, 3, 3, 3])], [vi("y", [2, 5]), vi("y2", [2, 2, 4, 8])],
        [W("cw1", 4, 3, 3, 3), W("cb1", 4), W("cw2", 4, 4, 1, 1), W("cb2", 4), F("lo", 0.0), F("hi", 0.6),
         W("cw3", 6, 2, 3, 3), W("fw", 5, 6), W("fb", 5)])

    # injective ops
    save("lower_inj", [
        N("Gather", ["emb", "ids"], ["e"]),              # [2,5,6]
        N("Slice", ["e", "st", "en", "ax", "sp"], ["sl"]),  # [2,3,6] from seq 4..0 step -1? (below)
        N("Concat", ["sl", "sl2"], ["cc"], axis=1),      # [2,5,6]
        N("Split", ["cc", "spl"], ["s1", "s2"], axis=2),  # [2,5,2], [2,5,4]
        N("Pad", ["s1", "pads", "pv"], ["pd"], mode="constant"),  # [2,5,5]
        N("Pad", ["s2", "pads2"], ["pr"], mode="reflect"),        # [2,5,6]
        N("Expand", ["bias", "eshape"], ["ex"]),          # [2,5,6]
        N("Add", ["pr", "ex"], ["t1"]),
        N("Where", ["cond", "t1", "zero"], ["w"]),
        N("Unsqueeze", ["w", "uax"], ["u"]),              # [2,1,5,6]
        N("Tile", ["u", "reps"], ["tl"]),                 # [2,2,5,6]
        N("Identity", ["pd"], ["sq"]),
    ], [vi("ids", [2, 5], TP.INT64), vi("sl2", [2, 2, 6]), vi("cond", [5, 6], TP.BOOL)],
        [vi("tl", [2, 2, 5, 6]), vi("sq", [2, 5, 5])],
        [W("emb", 10, 6), I64("st", [4]), I64("en", [1]), I64("ax", [1]), I64("sp", [-1]), I64("spl", [2, 4]),
         I64("pads", [0, 0, 1, 0, 0, 2]), F("pv", 3.0), I64("pads2", [0, 0, 1, 0, 0, 1]), W("bias", 5, 1),
         I64("eshape", [2, 5, 6]), F("zero", 0.0), I64("uax", [1]), I64("reps", [1, 2, 1, 1])])

    # reductions
    red = []
    outs = []
    for i, (op, kw) in enumerate([("ReduceSum", {}), ("ReduceMax", {"axes": [1]}), ("ReduceMin", {"axes": [0, 2]}),
                                  ("ReduceProd", {"axes": [2], "keepdims": 0}), ("ReduceL1", {"axes": [1]}),
                                  ("ReduceL2", {"axes": [-1]}), ("ReduceSumSquare", {"axes": [0]}),
                                  ("ReduceLogSumExp", {"axes": [2]})]):
        ins = ["x"]
        if op == "ReduceSum":
            ins = ["x", "rax"]
        red.append(N(op, ins, ["r%d" % i], **kw))
        outs.append("r%d" % i)
    red.append(N("ArgMax", ["x"], ["am"], axis=1, keepdims=0))
    red.append(N("LogSoftmax", ["x"], ["ls"], axis=1))
    red.append(N("Exp", ["ls"], ["lse"]))
    shapes = {"r0": [3, 1, 5], "r1": [3, 1, 5], "r2": [1, 4, 1], "r3": [3, 4], "r4": [3, 1, 5], "r5": [3, 4, 1],
              "r6": [1, 4, 5], "r7": [3, 4, 1]}
    save("lower_red", red, [vi("x", [3, 4, 5])],
         [vi(o, shapes[o]) for o in outs] + [vi("am", [3, 5], TP.INT64), vi("lse", [3, 4, 5])],
         [I64("rax", [1])])

    # broadcasting across a size-1 dim: [2,1,4,6] + [4,6], then * [2,1,1,1] (the coalesced view must
    # not merge dims 0..2 for the [4,6] operand)
    save("lower_bcast", [
        N("Add", ["a", "m"], ["s"]),
        N("Mul", ["s", "k"], ["y"]),
    ], [vi("a", [2, 1, 4, 6]), vi("k", [2, 1, 1, 1])], [vi("y", [2, 1, 4, 6])], [W("m", 4, 6)])

    # a host node between compiled ones
    save("lower_host", [
        N("Relu", ["x"], ["r"]),
        N("NonZero", ["r"], ["nz"]),
        N("Cast", ["nz"], ["nzf"], to=TP.FLOAT),
        N("Exp", ["x"], ["y"]),
    ], [vi("x", [2, 3])], [vi("nzf", [2, None]), vi("y", [2, 3])], [])

    # GPT-2 style attention: q, k, v split from one projection, heads by Reshape/Transpose (read by the
    # MatMuls as strided views), scale by Div (the call's alpha), causal mask by Where (the GEMM's
    # epilogue: a bool mask), heads merged by Transpose/Reshape (the MatMul's store) after a residual
    # add (which a transposed output cannot take in the call); a transpose whose reshape merges
    # non-adjacent dims (not a view: stays a copy); a Sub the GEMM call cannot apply, moved into the
    # following softmax as its prologue
    save("lower_attn2", [
        N("Split", ["x"], ["q", "k", "v"], axis=2, num_outputs=3),
        N("Reshape", ["q", "shp"], ["q4"]),
        N("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        N("Reshape", ["k", "shp"], ["k4"]),
        N("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        N("Reshape", ["v", "shp"], ["v4"]),
        N("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        N("MatMul", ["qh", "kt"], ["s"]),
        N("Div", ["s", "c2"], ["sd"]),
        N("Where", ["mask", "sd", "neg"], ["sw"]),
        N("Softmax", ["sw"], ["p"], axis=-1),
        N("MatMul", ["p", "vh"], ["o"]),
        N("Add", ["o", "r"], ["orr"]),
        N("Transpose", ["orr"], ["ot"], perm=[0, 2, 1, 3]),
        N("Reshape", ["ot", "shp2"], ["y"]),
        N("Transpose", ["q4"], ["qh2"], perm=[0, 2, 1, 3]),
        N("Reshape", ["qh2", "shp3"], ["q3"]),
        N("MatMul", ["q3", "w"], ["z"]),
        N("MatMul", ["a", "w2"], ["s2"]),
        N("Sub", ["s2", "fm"], ["sb"]),
        N("Softmax", ["sb"], ["sm"], axis=-1),
    ], [vi("x", [2, 8, 24]), vi("mask", [1, 1, 8, 8], TP.BOOL), vi("r", [2, 2, 8, 4]), vi("a", [4, 8])],
        [vi("y", [2, 8, 8]), vi("z", [4, 8, 3]), vi("sm", [4, 5])],
        [I64("shp", [2, 8, 2, 4]), I64("shp2", [2, 8, 8]), I64("shp3", [4, 8, 4]), F("c2", 2.0),
         F("neg", -3.4028234663852886e38), W("w", 4, 3), W("w2", 8, 5), W("fm", 5)], opset=18)

    # GPT-2 style projections: Gemm [T, D] reshaped to [1, T, D] (leading 1 added) then the residual
    # add, fused into the call across the reshape; a MatMul whose residual is fused and whose mask
    # (bool Where) runs in the epilogue nest after the reshape; a tanh-GELU written out (a DAG)
    save("lower_proj", [
        N("Gemm", ["x", "w", "b"], ["p"]),
        N("Reshape", ["p", "s3"], ["pr"]),
        N("Add", ["pr", "xr"], ["y"]),
        N("MatMul", ["x", "w2"], ["m"]),
        N("Reshape", ["m", "s3"], ["mr"]),
        N("Add", ["xr", "mr"], ["ma"]),
        N("Where", ["cond", "ma", "zero"], ["y2"]),
        N("Gemm", ["x", "w3", "b3"], ["h"]),
        N("Reshape", ["h", "s4"], ["hr"]),
        N("Mul", ["hr", "half"], ["g1"]),
        N("Pow", ["hr", "three"], ["g2"]),
        N("Mul", ["g2", "c044"], ["g3"]),
        N("Add", ["hr", "g3"], ["g4"]),
        N("Mul", ["g4", "s2pi"], ["g5"]),
        N("Tanh", ["g5"], ["g6"]),
        N("Add", ["g6", "one"], ["g7"]),
        N("Mul", ["g1", "g7"], ["y3"]),
    ], [vi("x", [4, 8]), vi("xr", [1, 4, 8]), vi("cond", [1, 4, 8], TP.BOOL)],
        [vi("y", [1, 4, 8]), vi("y2", [1, 4, 8]), vi("y3", [1, 4, 16])],
        [W("w", 8, 8), W("b", 8), I64("s3", [1, 4, 8]), W("w2", 8, 8), F("zero", 0.0), W("w3", 8, 16), W("b3", 16),
         I64("s4", [1, 4, 16]), F("half", 0.5), F("three", 3.0), F("c044", 0.044715), F("s2pi", 0.7978845608),
         F("one", 1.0)])


if __name__ == "__main__":
    main()
