"""test_infer_checks_nn.py — shape inference enforces the shape and attribute rules of the nn, nchwc
and reduce ops (Conv, the pools, Gemm, MatMul, the Reduce* ops, ArgMax/ArgMin, Softmax/LogSoftmax,
the normalizations, Dropout, lathe's blocked Nchwc ops): the rules the interpreter enforces, from one
function both the infer and the eval hook call. The compiled path trusts inferred shapes, so it must
never run a node the interpreter would refuse, nor turn a bad node into an empty or NaN output.

Each hostile model breaks one rule with its weights and shape-like inputs as initializers (so the
compiler would lower the node): `lathe run --backend interp` and `--backend cpu` both exit 2 with the
same error line, and `lathe compile --target cuda` and `lathe compile` (the standalone C export) exit
2 with it too. Valid edge cases still run, every node of them compiled (inference verified it: no
host step), and the interpreter and the compiled code agree on random inputs.

The binary comes from $LATHE_BIN (default build/lathe).
"""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def lathe(*args, cache=None):
    env = dict(os.environ)
    if cache:
        env["LATHE_CACHE_DIR"] = cache
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def ints(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def floats(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.float32), name)


def zeros(name, *shape):
    return floats(name, np.zeros(shape))


def model(path, node, inputs, outputs, inits=(), opset=17):
    nodes = [node] if not isinstance(node, list) else node
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset)]
    if any(n.domain == "lathe" for n in nodes):
        imports.append(helper.make_opsetid("lathe", 1))
    m = helper.make_model(g, opset_imports=imports, producer_name="test_infer_checks_nn")
    m.ir_version = 10 if opset > 21 else 8
    onnx.save(m, str(path))
    return str(path)


def N(op, ins, outs=("y",), domain="", **attrs):
    return helper.make_node(op, list(ins), list(outs), name="n", domain=domain, **attrs)


X = lambda *shape: vi("x", F, list(shape))  # noqa: E731
Y = vi("y", F, None)
YI = vi("y", I64, None)
BIG = 1 << 62
REDUCE_OPS = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
              "ReduceProd", "ReduceSum", "ReduceSumSquare"]
NOT_FIT = "(output size < 1)"

# name: (node, inputs, outputs, initializers, opset, expected message part)
HOSTILE = {
    # ---- Conv
    "conv_kernel_larger_than_input": (N("Conv", ["x", "w"]), [X(1, 1, 3, 3)], [Y], [zeros("w", 1, 1, 7, 7)], 17,
                                      NOT_FIT),
    "conv_channels": (N("Conv", ["x", "w"]), [X(1, 3, 5, 5)], [Y], [zeros("w", 2, 2, 3, 3)], 17,
                      "input has 3 channels but weight expects 2 x group 1"),
    "conv_group_channels": (N("Conv", ["x", "w"], group=2), [X(1, 4, 5, 5)], [Y], [zeros("w", 4, 4, 3, 3)], 17,
                            "input has 4 channels but weight expects 4 x group 2"),
    "conv_group_outputs": (N("Conv", ["x", "w"], group=2), [X(1, 4, 5, 5)], [Y], [zeros("w", 3, 2, 3, 3)], 17,
                           "3 output channels are not divisible by group 2"),
    "conv_group_zero": (N("Conv", ["x", "w"], group=0), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)], 17,
                        "group 0 must be >= 1"),
    "conv_bias_length": (N("Conv", ["x", "w", "b"]), [X(1, 1, 5, 5)], [Y], [zeros("w", 2, 1, 3, 3), zeros("b", 3)],
                         17, "bias must be 1-D with 2 elements"),
    "conv_bias_rank": (N("Conv", ["x", "w", "b"]), [X(1, 1, 5, 5)], [Y], [zeros("w", 2, 1, 3, 3), zeros("b", 1, 2)],
                       17, "bias must be 1-D with 2 elements"),
    "conv_kernel_shape": (N("Conv", ["x", "w"], kernel_shape=[2, 2]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)],
                          17, "kernel_shape[0] = 2 disagrees with the weight's 3"),
    "conv_stride_zero": (N("Conv", ["x", "w"], strides=[0, 1]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)], 17,
                         "attribute strides[0] = 0 must be >= 1"),
    "conv_dilation_zero": (N("Conv", ["x", "w"], dilations=[1, 0]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)],
                           17, "attribute dilations[1] = 0 must be >= 1"),
    "conv_pads_negative": (N("Conv", ["x", "w"], pads=[-1, 0, 0, 0]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)],
                           17, "attribute pads[0] = -1 must be >= 0"),
    "conv_pads_length": (N("Conv", ["x", "w"], pads=[1, 1]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)], 17,
                         "attribute pads has 2 entries, expected 4"),
    "conv_input_rank": (N("Conv", ["x", "w"]), [X(1, 3)], [Y], [zeros("w", 1, 3)], 17,
                        "input X must have rank >= 3, got 2"),
    "conv_weight_rank": (N("Conv", ["x", "w"]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3)], 17,
                         "weight rank 3 differs from input rank 4"),
    "conv_huge_dilation": (N("Conv", ["x", "w"], dilations=[BIG, 1]), [X(1, 1, 5, 5)], [Y], [zeros("w", 1, 1, 3, 3)],
                           17, "is invalid"),
    # ---- MaxPool / AveragePool
    "maxpool_huge_kernel": (N("MaxPool", ["x"], kernel_shape=[BIG]), [X(1, 1, 4)], [Y], [], 17, NOT_FIT),
    "maxpool_kernel_larger_than_input": (N("MaxPool", ["x"], kernel_shape=[5, 5]), [X(1, 1, 3, 3)], [Y], [], 17,
                                         NOT_FIT),
    "maxpool_no_kernel": (N("MaxPool", ["x"]), [X(1, 1, 4)], [Y], [], 17, "attribute kernel_shape is required"),
    "maxpool_kernel_zero": (N("MaxPool", ["x"], kernel_shape=[0]), [X(1, 1, 4)], [Y], [], 17,
                            "kernel_shape[0] = 0 must be >= 1"),
    "maxpool_kernel_length": (N("MaxPool", ["x"], kernel_shape=[2, 2]), [X(1, 1, 4)], [Y], [], 17,
                              "kernel_shape has 2 entries, expected 1"),
    "maxpool_stride_zero": (N("MaxPool", ["x"], kernel_shape=[2], strides=[0]), [X(1, 1, 4)], [Y], [], 17,
                            "attribute strides[0] = 0 must be >= 1"),
    "maxpool_pads_ge_kernel": (N("MaxPool", ["x"], kernel_shape=[2], pads=[0, 2]), [X(1, 1, 4)], [Y], [], 17,
                               "pads 0 and 2 of spatial dim 0 must be smaller than the kernel size 2"),
    "maxpool_storage_order": (N("MaxPool", ["x"], kernel_shape=[2], storage_order=2), [X(1, 1, 4)], [Y], [], 17,
                              "storage_order must be 0 or 1"),
    "maxpool_rank": (N("MaxPool", ["x"], kernel_shape=[2]), [X(1, 4)], [Y], [], 17,
                     "input must have rank >= 3, got 2"),
    "avgpool_pads_ge_kernel": (N("AveragePool", ["x"], kernel_shape=[2, 2], pads=[2, 2, 2, 2]), [X(1, 1, 4, 4)],
                               [Y], [], 17, "pads 2 and 2 of spatial dim 0 must be smaller than the kernel size 2"),
    "avgpool_huge_kernel": (N("AveragePool", ["x"], kernel_shape=[BIG, 1]), [X(1, 1, 4, 4)], [Y], [], 17, NOT_FIT),
    "avgpool_pads_negative": (N("AveragePool", ["x"], kernel_shape=[2], pads=[-1, 0]), [X(1, 1, 4)], [Y], [], 17,
                              "attribute pads[0] = -1 must be >= 0"),
    "avgpool_rank": (N("AveragePool", ["x"], kernel_shape=[2]), [X(4)], [Y], [], 17,
                     "input must have rank >= 3, got 1"),
    "globalavgpool_rank": (N("GlobalAveragePool", ["x"]), [X(4)], [Y], [], 17, "input must have rank >= 2, got 1"),
    "globalmaxpool_rank": (N("GlobalMaxPool", ["x"]), [X(4)], [Y], [], 17, "input must have rank >= 2, got 1"),
    # ---- Gemm / MatMul
    "gemm_inner_transb": (N("Gemm", ["x", "b"], transB=1), [X(2, 3000000)], [Y], [zeros("b", 5, 3)], 17,
                          "inner dimensions 3000000 and 3 differ"),
    "gemm_inner_transa": (N("Gemm", ["x", "b"], transA=1), [X(3, 2)], [Y], [zeros("b", 2, 4)], 17,
                          "inner dimensions 3 and 2 differ"),
    "gemm_rank": (N("Gemm", ["x", "b"]), [X(2, 3, 4)], [Y], [zeros("b", 4, 5)], 17,
                  "A and B must be 2-D (got rank 3 and 2)"),
    "gemm_c_shape": (N("Gemm", ["x", "b", "c"]), [X(2, 3)], [Y], [zeros("b", 3, 5), zeros("c", 3)], 17,
                     "C [1, 3] cannot be broadcast to [2, 5]"),
    "gemm_c_rows": (N("Gemm", ["x", "b", "c"]), [X(2, 3)], [Y], [zeros("b", 3, 5), zeros("c", 4, 5)], 17,
                    "C [4, 5] cannot be broadcast to [2, 5]"),
    "gemm_c_rank": (N("Gemm", ["x", "b", "c"]), [X(2, 3)], [Y], [zeros("b", 3, 5), zeros("c", 1, 2, 5)], 17,
                    "C must have rank <= 2"),
    "gemm_c_shape_beta_zero": (N("Gemm", ["x", "b", "c"], beta=0.0), [X(2, 3)], [Y],
                               [zeros("b", 3, 5), zeros("c", 7)], 17, "C [1, 7] cannot be broadcast to [2, 5]"),
    "matmul_inner": (N("MatMul", ["x", "b"]), [X(2, 3)], [Y], [zeros("b", 4, 5)], 17,
                     "shapes [2,3] and [4,5] are not aligned for matmul"),
    "matmul_vector": (N("MatMul", ["x", "b"]), [X(3)], [Y], [zeros("b", 4)], 17,
                      "shapes [3] and [4] are not aligned for matmul"),
    "matmul_batch": (N("MatMul", ["x", "b"]), [X(2, 2, 3)], [Y], [zeros("b", 3, 3, 4)], 17,
                     "shapes [2,2,3] and [3,3,4] are not aligned for matmul"),
    "matmul_scalar": (N("MatMul", ["x", "b"]), [X()], [Y], [zeros("b", 2, 2)], 17,
                      "operands must have rank >= 1 (got 0 and 2)"),
    # ---- Reduce*, ArgMax / ArgMin
    **{f"{op.lower()}_axis_range": (N(op, ["x", "a"]), [X(2, 3)], [Y], [ints("a", [2])], 18,
                                    "axis 2 out of range [-2, 2)") for op in REDUCE_OPS},
    **{f"{op.lower()}_axis_repeated": (N(op, ["x", "a"]), [X(2, 3)], [Y], [ints("a", [0, -2])], 18,
                                       "axis -2 is repeated") for op in REDUCE_OPS},
    "reducemean_attr_axis_range": (N("ReduceMean", ["x"], axes=[-3]), [X(2, 3)], [Y], [], 13,
                                   "axis -3 out of range [-2, 2)"),
    "reducesum_opset13_axis_range": (N("ReduceSum", ["x", "a"]), [X(2, 3)], [Y], [ints("a", [5])], 13,
                                     "axis 5 out of range [-2, 2)"),
    "argmax_axis": (N("ArgMax", ["x"], axis=2), [X(2, 3)], [YI], [], 17, "axis 2 is out of range for rank 2"),
    "argmin_axis": (N("ArgMin", ["x"], axis=-3), [X(2, 3)], [YI], [], 17, "axis -3 is out of range for rank 2"),
    "argmin_empty_axis": (N("ArgMin", ["x"], axis=1), [X(2, 0)], [YI], [], 17,
                          "cannot take ArgMin over axis 1 of size 0"),
    "argmax_empty_axis": (N("ArgMax", ["x"], axis=0), [X(0, 2)], [YI], [], 17,
                          "cannot take ArgMax over axis 0 of size 0"),
    # ---- Softmax / LogSoftmax
    "softmax_axis": (N("Softmax", ["x"], axis=2), [X(2, 3)], [Y], [], 17, "axis 2 is out of range for rank 2"),
    "logsoftmax_axis": (N("LogSoftmax", ["x"], axis=-3), [X(2, 3)], [Y], [], 17,
                        "axis -3 is out of range for rank 2"),
    "softmax_axis_opset11": (N("Softmax", ["x"], axis=3), [X(2, 3)], [Y], [], 11, "axis 3 out of range [-2, 2]"),
    "softmax_scalar_axis": (N("Softmax", ["x"], axis=1), [X()], [Y], [], 17, "axis 1 out of range for a scalar"),
    # ---- LayerNormalization / RMSNormalization / BatchNormalization
    "layernorm_axis": (N("LayerNormalization", ["x", "s"], axis=2), [X(2, 4)], [Y], [zeros("s", 4)], 17,
                       "axis 2 is out of range for rank 2"),
    "layernorm_scale": (N("LayerNormalization", ["x", "s"]), [X(2, 4)], [Y], [zeros("s", 3)], 17,
                        "Scale of shape [3] cannot be broadcast to the input's shape [2,4]"),
    "layernorm_scale_rank": (N("LayerNormalization", ["x", "s"]), [X(2, 4)], [Y], [zeros("s", 1, 2, 4)], 17,
                             "Scale of shape [1,2,4] cannot be broadcast to the input's shape [2,4]"),
    "layernorm_bias": (N("LayerNormalization", ["x", "s", "b"]), [X(2, 4)], [Y], [zeros("s", 4), zeros("b", 2)], 17,
                       "B of shape [2] cannot be broadcast to the input's shape [2,4]"),
    "layernorm_stash_type": (N("LayerNormalization", ["x", "s"], stash_type=7), [X(2, 4)], [Y], [zeros("s", 4)], 17,
                             "stash_type 7 is not a float type"),
    "layernorm_scalar": (N("LayerNormalization", ["x", "s"]), [X()], [Y], [zeros("s")], 17,
                         "input must have rank >= 1"),
    "rmsnorm_scale": (N("RMSNormalization", ["x", "s"]), [X(2, 4)], [Y], [zeros("s", 5)], 23,
                      "scale of shape [5] cannot be broadcast to the input's shape [2,4]"),
    "rmsnorm_axis": (N("RMSNormalization", ["x", "s"], axis=-3), [X(2, 4)], [Y], [zeros("s", 4)], 23,
                     "axis -3 is out of range for rank 2"),
    "batchnorm_scale_length": (N("BatchNormalization", ["x", "s", "b", "m", "v"]), [X(1, 2, 3)], [Y],
                               [zeros("s", 3), zeros("b", 2), zeros("m", 2), zeros("v", 2)], 15,
                               "scale must have 2 elements, got 3"),
    "batchnorm_var_length": (N("BatchNormalization", ["x", "s", "b", "m", "v"]), [X(1, 2, 3)], [Y],
                             [zeros("s", 2), zeros("b", 2), zeros("m", 2), zeros("v", 1)], 15,
                             "input_var must have 2 elements, got 1"),
    "batchnorm_param_rank": (N("BatchNormalization", ["x", "s", "b", "m", "v"]), [X(1, 2, 3)], [Y],
                             [zeros("s", 2), zeros("b", 2, 1), zeros("m", 2), zeros("v", 2)], 15,
                             "B must have shape [C], got rank 2"),
    "batchnorm_rank": (N("BatchNormalization", ["x", "s", "b", "m", "v"]), [X(2)], [Y],
                       [zeros("s", 2), zeros("b", 2), zeros("m", 2), zeros("v", 2)], 15,
                       "input must have rank >= 2 (N, C, ...), got 1"),
    # ---- Dropout
    "dropout_ratio_not_scalar": (N("Dropout", ["x", "r"]), [X(2, 3)], [Y], [floats("r", [0.5, 0.5])], 17,
                                 "ratio must be a float scalar"),
    "dropout_training_mode_not_scalar": (N("Dropout", ["x", "r", "t"]), [X(2, 3)], [Y],
                                         [floats("r", 0.5), numpy_helper.from_array(np.array([False, False]), "t")],
                                         17, "training_mode must be a bool scalar"),
    "dropout_training_ratio_one": (N("Dropout", ["x", "r", "t"]), [X(2, 3)], [Y],
                                   [floats("r", 1.0), numpy_helper.from_array(np.array(True), "t")], 17,
                                   "ratio 1 is not in [0, 1)"),
    # ---- lathe's blocked (NCHWc) ops
    "nchwc_reorder_in_block": (N("NchwcReorderIn", ["x"], domain="lathe", block=0), [X(1, 8, 4, 4)], [Y], [], 17,
                               "block 0 out of range [1, 64]"),
    "nchwc_reorder_in_rank": (N("NchwcReorderIn", ["x"], domain="lathe", block=8), [X(8, 4, 4)], [Y], [], 17,
                              "input must have rank 4, got 3"),
    "nchwc_reorder_out_channels": (N("NchwcReorderOut", ["x"], domain="lathe", channels=20), [X(1, 2, 4, 4, 8)], [Y],
                                   [], 17, "2 blocks of 8 cannot hold 20 channels"),
    "nchwc_reorder_out_rank": (N("NchwcReorderOut", ["x"], domain="lathe", channels=8), [X(1, 8, 4, 4)], [Y], [], 17,
                               "input must be a blocked tensor [N, Cb, H, W, B], got rank 4"),
    "nchwc_conv_channels": (N("NchwcConv", ["x", "w"], domain="lathe"), [X(1, 2, 5, 5, 8)], [Y],
                            [zeros("w", 8, 8, 3, 3)], 17,
                            "input has 2 blocks of 8 channels, the weights expect 8 channels"),
    "nchwc_conv_kernel_larger_than_input": (N("NchwcConv", ["x", "w"], domain="lathe"), [X(1, 1, 3, 3, 8)], [Y],
                                            [zeros("w", 8, 8, 7, 7)], 17, NOT_FIT),
    "nchwc_conv_bias": (N("NchwcConv", ["x", "w", "b"], domain="lathe"), [X(1, 1, 5, 5, 8)], [Y],
                        [zeros("w", 8, 8, 3, 3), zeros("b", 9)], 17, "bias must be 1-D with 8 elements"),
    "nchwc_conv_group": (N("NchwcConv", ["x", "w"], domain="lathe", group=2), [X(1, 1, 5, 5, 8)], [Y],
                         [zeros("w", 8, 4, 3, 3)], 17, "only 1 or depthwise"),
    "nchwc_maxpool_huge_kernel": (N("NchwcMaxPool", ["x"], domain="lathe", kernel_shape=[BIG, 1]),
                                  [X(1, 1, 4, 4, 8)], [Y], [], 17, NOT_FIT),
    "nchwc_avgpool_pads_ge_kernel": (N("NchwcAveragePool", ["x"], domain="lathe", kernel_shape=[2, 2],
                                       pads=[2, 0, 0, 0]), [X(1, 1, 4, 4, 8)], [Y], [], 17,
                                     "must be smaller than the kernel size 2"),
    "nchwc_globalpool_rank": (N("NchwcGlobalAveragePool", ["x"], domain="lathe"), [X(1, 8, 4, 4)], [Y], [], 17,
                              "input must be a blocked tensor"),
    "nchwc_globalmaxpool_block": (N("NchwcGlobalMaxPool", ["x"], domain="lathe"), [X(1, 1, 4, 4, 0)], [Y], [], 17,
                                  "input must be a blocked tensor"),
}


def error_line(proc, part):
    lines = [ln for ln in proc.stderr.splitlines() if part in ln]
    assert lines, f"expected '{part}' in stderr:\n{proc.stderr}"
    return lines[0]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_model_rejected_everywhere(name, tmp_path, cache):
    node, inputs, outputs, inits, opset, part = HOSTILE[name]
    path = model(tmp_path / f"{name}.onnx", node, inputs, outputs, inits, opset)
    interp = lathe("run", path, "--backend", "interp", cache=cache)
    cpu = lathe("run", path, "--backend", "cpu", cache=cache)
    assert interp.returncode == 2, interp.stdout + interp.stderr
    assert cpu.returncode == 2, cpu.stdout + cpu.stderr
    assert error_line(interp, part) == error_line(cpu, part)
    assert "'n'" in error_line(interp, part)  # names the node
    cuda = lathe("compile", path, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert cuda.returncode == 2, cuda.stdout + cuda.stderr
    assert error_line(cuda, part) == error_line(interp, part)
    export = lathe("compile", path, "-o", tmp_path / "c", cache=cache)
    assert export.returncode == 2, export.stdout + export.stderr
    assert error_line(export, part) == error_line(interp, part)


# name: (nodes, inputs, outputs, initializers, opset)
VALID = {
    "conv_padded_strided": (N("Conv", ["x", "w", "b"], pads=[1, 2, 1, 0], strides=[2, 1]), [X(1, 2, 5, 6)], [Y],
                            [floats("w", np.linspace(-1, 1, 3 * 2 * 3 * 3).reshape(3, 2, 3, 3)),
                             floats("b", [0.5, -1, 2])], 17),
    "conv_grouped_dilated": (N("Conv", ["x", "w"], group=2, dilations=[2, 1]), [X(1, 4, 7, 5)], [Y],
                             [floats("w", np.linspace(-1, 1, 4 * 2 * 2 * 3).reshape(4, 2, 2, 3))], 17),
    "conv_same_upper": (N("Conv", ["x", "w"], auto_pad="SAME_UPPER", strides=[2, 2]), [X(1, 1, 5, 5)], [Y],
                        [floats("w", np.ones((2, 1, 4, 4)))], 17),
    "conv_kernel_equals_input": (N("Conv", ["x", "w"]), [X(1, 1, 3, 3)], [Y], [floats("w", np.ones((1, 1, 3, 3)))],
                                 17),
    "maxpool_ceil_mode": (N("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), [X(1, 2, 6, 6)],
                          [Y], [], 17),
    "maxpool_pads_below_kernel": (N("MaxPool", ["x"], kernel_shape=[3], pads=[2, 2]), [X(1, 1, 4)], [Y], [], 17),
    "avgpool_count_include_pad": (N("AveragePool", ["x"], kernel_shape=[3, 2], pads=[2, 1, 2, 1],
                                    count_include_pad=1), [X(1, 1, 4, 4)], [Y], [], 17),
    "avgpool_padding_wider_than_row": (N("AveragePool", ["x"], kernel_shape=[5, 5], pads=[2, 2, 2, 2],
                                         count_include_pad=1), [X(7, 7, 7, 1)], [Y], [], 17),
    "maxpool_padding_wider_than_row": (N("MaxPool", ["x"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]), [X(2, 3, 7, 1)],
                                       [Y], [], 17),
    "globalpools": ([N("GlobalAveragePool", ["x"], ["a"]), N("GlobalMaxPool", ["x"], ["b"])], [X(2, 3, 4, 5)],
                    [vi("a", F, None), vi("b", F, None)], [], 17),
    "gemm_transposed_c_broadcast": (N("Gemm", ["x", "b", "c"], transA=1, transB=1, alpha=0.5, beta=2.0),
                                    [X(3, 2)], [Y], [floats("b", np.ones((4, 3))), floats("c", [1, 2, 3, 4])], 17),
    "gemm_c_column": (N("Gemm", ["x", "b", "c"]), [X(2, 3)], [Y], [floats("b", np.ones((3, 4))),
                                                                  floats("c", [[1], [2]])], 17),
    "matmul_batch_broadcast": (N("MatMul", ["x", "b"]), [X(2, 1, 3, 4)], [Y],
                               [floats("b", np.linspace(0, 1, 3 * 4 * 5).reshape(3, 4, 5))], 17),
    "matmul_vector_matrix": (N("MatMul", ["x", "b"]), [X(4)], [Y], [floats("b", np.ones((2, 4, 3)))], 17),
    "reduce_noop_empty_axes": (N("ReduceSum", ["x", "a"], noop_with_empty_axes=1), [X(2, 3)], [Y],
                               [ints("a", np.zeros(0))], 18),
    "reduce_negative_axes": (N("ReduceMax", ["x", "a"], keepdims=0), [X(2, 3, 4)], [Y], [ints("a", [-1, 0])], 18),
    "reduce_all": (N("ReduceLogSumExp", ["x"]), [X(2, 3)], [Y], [], 18),
    "argmax_last": (N("ArgMax", ["x"], axis=-1, select_last_index=1, keepdims=0), [X(3, 4)], [YI], [], 17),
    "softmax_axis0": (N("Softmax", ["x"], axis=0), [X(3, 4)], [Y], [], 17),
    "logsoftmax_opset11_coerced": (N("LogSoftmax", ["x"], axis=1), [X(2, 3, 4)], [Y], [], 11),
    "layernorm_broadcast_scale": (N("LayerNormalization", ["x", "s", "b"], axis=1), [X(2, 3, 4)], [Y],
                                  [floats("s", np.linspace(0.5, 1.5, 4)), floats("b", [[0.1], [0.2], [0.3]])], 17),
    "rmsnorm": (N("RMSNormalization", ["x", "s"]), [X(2, 4)], [Y], [floats("s", [1, 2, 3, 4])], 23),
    "batchnorm": (N("BatchNormalization", ["x", "s", "b", "m", "v"]), [X(2, 3, 4)], [Y],
                  [floats("s", [1, 2, 3]), floats("b", [0, 1, 2]), floats("m", [0.5, 0, -0.5]), floats("v", [1, 2, 3])],
                  15),
    "dropout_inference": (N("Dropout", ["x", "r"]), [X(2, 3)], [Y], [floats("r", 0.25)], 17),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_edge_case_agrees(name, tmp_path, cache):
    node, inputs, outputs, inits, opset = VALID[name]
    path = model(tmp_path / f"{name}.onnx", node, inputs, outputs, inits, opset)
    outs = {}
    for backend in ("interp", "cpu"):
        out = tmp_path / f"{backend}.npz"
        p = lathe("run", path, "--backend", backend, "--fill", "random", "--seed", "3", "--output", out, "--verbose",
                  cache=cache)
        assert p.returncode == 0, p.stdout + p.stderr
        if backend == "cpu":  # inference verified every node: all are compiled, none is a host step
            assert " 0 host steps" in p.stdout + p.stderr, p.stdout + p.stderr
        outs[backend] = dict(np.load(out))
    assert outs["interp"].keys() == outs["cpu"].keys()
    for k in outs["interp"]:
        a, b = outs["interp"][k], outs["cpu"][k]
        assert a.shape == b.shape and a.dtype == b.dtype, k
        assert a.size > 0, k
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=k)


# Shapes inference cannot see: symbolic input dims fixed only at run time (--shapes), weights fed as
# graph inputs. name: (node, inputs, outputs, initializers, opset, --shapes, expected message part)
RUNTIME = {
    "conv_channels": (N("Conv", ["x", "w"]), [vi("x", F, ["n", "c", "h", "w"]), vi("w", F, ["m", "k", 3, 3])], [Y],
                      [], 17, "x:1x3x5x5,w:2x2x3x3", "input has 3 channels but weight expects 2 x group 1"),
    "conv_kernel_larger_than_input": (N("Conv", ["x", "w"]), [vi("x", F, ["n", 1, "h", "w"])], [Y],
                                      [zeros("w", 1, 1, 7, 7)], 17, "x:1x1x3x3", NOT_FIT),
    "maxpool_huge_kernel": (N("MaxPool", ["x"], kernel_shape=[BIG]), [vi("x", F, ["n", "c", "l"])], [Y], [], 17,
                            "x:1x1x4", NOT_FIT),
    "gemm_inner": (N("Gemm", ["x", "b"], transB=1), [vi("x", F, ["m", "k"]), vi("b", F, ["n", "k2"])], [Y], [], 17,
                   "x:2x7,b:5x3", "inner dimensions 7 and 3 differ"),
    "matmul_batch": (N("MatMul", ["x", "b"]), [vi("x", F, ["a", 2, 3]), vi("b", F, ["c", 3, 4])], [Y], [], 17,
                     "x:2x2x3,b:3x3x4", "not aligned for matmul"),
    "layernorm_scale": (N("LayerNormalization", ["x", "s"]), [vi("x", F, ["n", "d"]), vi("s", F, ["e"])], [Y], [],
                        17, "x:2x4,s:3", "Scale of shape [3] cannot be broadcast to the input's shape [2,4]"),
    "argmax_empty_axis": (N("ArgMax", ["x"], axis=1), [vi("x", F, ["n", "d"])], [YI], [], 17, "x:2x0",
                          "cannot take ArgMax over axis 1 of size 0"),
}


@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_shapes_known_at_run_time_rejected_alike(name, tmp_path, cache):
    node, inputs, outputs, inits, opset, shapes, part = RUNTIME[name]
    path = model(tmp_path / f"{name}.onnx", node, inputs, outputs, inits, opset)
    interp = lathe("run", path, "--backend", "interp", "--shapes", shapes, cache=cache)
    cpu = lathe("run", path, "--backend", "cpu", "--shapes", shapes, cache=cache)
    assert interp.returncode == 2, interp.stdout + interp.stderr
    assert cpu.returncode == 2, cpu.stdout + cpu.stderr
    assert error_line(interp, part) == error_line(cpu, part)


def test_blocked_layout_compiles_every_node(tmp_path, cache):
    """The layout_nchwc pass rewrites convs and pools into the blocked Nchwc ops: inference verifies
    each of them, so nothing becomes a host step, and the result matches the interpreter."""
    rng = np.random.default_rng(0)
    w = lambda name, *s: floats(name, rng.standard_normal(s))  # noqa: E731
    nodes = [N("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]), N("Relu", ["c0"], ["r0"]),
             N("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), N("Add", ["c1", "r0"], ["a1"]),
             N("MaxPool", ["a1"], ["mp"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             N("AveragePool", ["mp"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             N("GlobalAveragePool", ["ap"], ["y"]), N("GlobalMaxPool", ["ap"], ["z"])]
    for i, nd in enumerate(nodes):
        nd.name = f"n{i}"
    path = model(tmp_path / "blocked.onnx", nodes, [X(1, 16, 12, 12)], [Y, vi("z", F, None)],
                 [w("w0", 16, 16, 3, 3), w("b0", 16), w("w1", 16, 16, 3, 3), w("b1", 16)])
    outs = {}
    for backend in ("interp", "cpu"):
        out = tmp_path / f"{backend}.npz"
        p = lathe("run", path, "--backend", backend, "--enable-pass", "layout_nchwc", "--verbose", "--output", out,
                  cache=cache)
        assert p.returncode == 0, p.stdout + p.stderr
        if backend == "cpu":
            assert " 0 host steps" in p.stdout + p.stderr, p.stdout + p.stderr
        outs[backend] = dict(np.load(out))
    for k in outs["interp"]:
        np.testing.assert_allclose(outs["interp"][k], outs["cpu"][k], rtol=1e-4, atol=1e-4, err_msg=k)
