"""test_infer_checks_shape.py — shape inference enforces the shape and attribute rules of the shape
and elementwise ops (the rules the interpreter enforces, from one function both hooks call), so the
compiled path, which trusts inferred shapes, never runs a node the interpreter would refuse.

Each hostile model breaks one rule with its shape-like inputs as initializers (so the compiler would
lower them): `lathe run --backend interp` and `--backend cpu` both exit 2 with the same error line,
and `lathe compile --target cuda` and `lathe compile` (the standalone C export) exit 2 too. Valid edge
cases still run, and the interpreter and the compiled code agree on random inputs.

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

F, D, I64, B = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL


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


def floats(name, vals, dt=np.float32):
    return numpy_helper.from_array(np.array(vals, dtype=dt), name)


def model(path, node, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph([node] if not isinstance(node, list) else node, "g", inputs, outputs,
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="test_infer_checks")
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def N(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), name="n", **attrs)


X = lambda *shape: vi("x", F, list(shape))  # noqa: E731
Y = vi("y", F, None)

def branch(name, value):
    """A subgraph with no input whose one output is the constant `value`."""
    return helper.make_graph([helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))],
                             name, [], [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                                                      list(value.shape))])


# name: (node, inputs, outputs, initializers, opset, expected message part)
HOSTILE = {
    "reshape_more": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [4000])], 17, "cannot reshape [4] into [4000]"),
    "reshape_huge": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [100000000])], 17, "cannot reshape [4]"),
    "reshape_fewer": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [2])], 17, "cannot reshape [4] into [2]"),
    "reshape_two_minus_one": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [-1, -1])], 17, "more than one -1"),
    "reshape_minus_one_rest": (N("Reshape", ["x", "s"]), [X(6)], [Y], [ints("s", [4, -1])], 17, "(with -1)"),
    "reshape_zero_missing_dim": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [2, 0])], 17, "input lacks"),
    "reshape_allowzero_and_minus_one": (N("Reshape", ["x", "s"], allowzero=1), [X(0, 4)], [Y],
                                        [ints("s", [0, -1])], 17, "both 0 and -1"),
    "reshape_negative": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [-2, -2])], 17, "invalid dimension -2"),
    "reshape_overflow": (N("Reshape", ["x", "s"]), [X(4)], [Y], [ints("s", [1 << 62, 8])], 17, "overflows"),
    "split_above": (N("Split", ["x", "s"], ["a", "b"]), [X(4)], [vi("a", F, None), vi("b", F, None)],
                    [ints("s", [2, 6])], 17, "split sizes sum to 8, the axis has 4"),
    "split_below": (N("Split", ["x", "s"], ["a", "b"]), [X(4)], [vi("a", F, None), vi("b", F, None)],
                    [ints("s", [1, 1])], 17, "split sizes sum to 2, the axis has 4"),
    "split_negative": (N("Split", ["x", "s"], ["a", "b"]), [X(4)], [vi("a", F, None), vi("b", F, None)],
                       [ints("s", [-2, 6])], 17, "invalid split size -2"),
    "split_count": (N("Split", ["x", "s"], ["a", "b"]), [X(4)], [vi("a", F, None), vi("b", F, None)],
                    [ints("s", [1, 1, 2])], 17, "split has 3 entries for 2 outputs"),
    "split_axis": (N("Split", ["x"], ["a", "b"], axis=3), [X(4)], [vi("a", F, None), vi("b", F, None)], [], 17,
                   "axis 3 is out of range for rank 1"),
    "split_num_outputs": (N("Split", ["x"], ["a", "b"], num_outputs=3), [X(6)], [vi("a", F, None), vi("b", F, None)],
                          [], 18, "num_outputs 3 but the node has 2 outputs"),
    "split_uneven_old": (N("Split", ["x"], ["a", "b"]), [X(5)], [vi("a", F, None), vi("b", F, None)], [], 13,
                         "cannot be split evenly"),
    "concat_rank": (N("Concat", ["x", "c"], axis=0), [X(2, 3)], [Y], [floats("c", [1, 2])], 17, "does not match"),
    "concat_dim": (N("Concat", ["x", "c"], axis=1), [X(2, 3)], [Y], [floats("c", np.zeros((3, 3)))], 17,
                   "input 1 of shape [3,3] does not match input 0 of shape [2,3]"),
    "concat_axis": (N("Concat", ["x", "x"], axis=5), [X(2, 3)], [Y], [], 17, "axis 5 is out of range for rank 2"),
    "concat_dtype": (N("Concat", ["x", "c"], axis=0), [X(2)], [Y], [floats("c", [1.0, 2.0], np.float64)], 17,
                     "input 1 is double, input 0 is float"),
    "slice_lengths": (N("Slice", ["x", "st", "en"]), [X(4, 4)], [Y], [ints("st", [0]), ints("en", [1, 2])], 17,
                      "starts has 1 entries, ends 2"),
    "slice_axes_repeated": (N("Slice", ["x", "st", "en", "ax"]), [X(4, 4)], [Y],
                            [ints("st", [0, 0]), ints("en", [1, 1]), ints("ax", [0, 0])], 17, "axis 0 is repeated"),
    "slice_axis_range": (N("Slice", ["x", "st", "en", "ax"]), [X(4, 4)], [Y],
                         [ints("st", [0]), ints("en", [1]), ints("ax", [3])], 17, "axis 3 is out of range"),
    "slice_step_zero": (N("Slice", ["x", "st", "en", "ax", "sp"]), [X(4, 4)], [Y],
                        [ints("st", [0]), ints("en", [1]), ints("ax", [0]), ints("sp", [0])], 17, "step on axis 0 is zero"),
    "gather_axis": (N("Gather", ["x", "i"], axis=2), [X(2, 3)], [Y], [ints("i", [0])], 17,
                    "axis 2 is out of range for rank 2"),
    "gather_scalar": (N("Gather", ["x", "i"]), [X()], [Y], [ints("i", [0])], 17, "cannot gather from a scalar"),
    "gather_elements_off_axis": (N("GatherElements", ["x", "i"], axis=1), [X(2, 3)], [Y],
                                 [ints("i", np.zeros((5, 3)))], 17, "indices dimension 0 (5) exceeds data's (2)"),
    "gather_elements_huge": (N("GatherElements", ["x", "i"], axis=1), [X(2, 3), vi("i", I64, [4000000, 3])], [Y],
                             [], 17, "indices dimension 0 (4000000) exceeds data's (2)"),
    "gather_elements_rank": (N("GatherElements", ["x", "i"]), [X(2, 3)], [Y], [ints("i", [0])], 17,
                             "indices have rank 1, data has rank 2"),
    "gather_elements_axis": (N("GatherElements", ["x", "i"], axis=-3), [X(2, 3)], [Y], [ints("i", [[0]])], 17,
                             "axis -3 is out of range for rank 2"),
    "expand": (N("Expand", ["x", "s"]), [X(3)], [Y], [ints("s", [4])], 17, "input shape [3] cannot be expanded to [4]"),
    "expand_negative": (N("Expand", ["x", "s"]), [X(3)], [Y], [ints("s", [-3])], 17, "negative dimension -3"),
    "expand_overflow": (N("Expand", ["x", "s"]), [X(4)], [Y], [ints("s", [1 << 62, 4])], 17, "64 bits"),
    "tile_length": (N("Tile", ["x", "r"]), [X(2, 2)], [Y], [ints("r", [2])], 17,
                    "repeats has 1 entries for an input of rank 2"),
    "tile_negative": (N("Tile", ["x", "r"]), [X(2, 2)], [Y], [ints("r", [-1, 1])], 17, "negative repeat -1"),
    "tile_overflow": (N("Tile", ["x", "r"]), [X(2, 2)], [Y], [ints("r", [1 << 62, 1])], 17, "overflows"),
    "transpose_perm": (N("Transpose", ["x"], perm=[0, 0]), [X(2, 3)], [Y], [], 17, "perm is not a permutation of 2 axes"),
    "transpose_perm_length": (N("Transpose", ["x"], perm=[0]), [X(2, 3)], [Y], [], 17, "not a permutation"),
    "squeeze_not_one": (N("Squeeze", ["x", "a"]), [X(2, 3)], [Y], [ints("a", [0])], 17, "cannot squeeze axis 0 of size 2"),
    "squeeze_axis_range": (N("Squeeze", ["x", "a"]), [X(1, 3)], [Y], [ints("a", [5])], 17,
                           "axis 5 is out of range for rank 2"),
    "unsqueeze_repeated": (N("Unsqueeze", ["x", "a"]), [X(3)], [Y], [ints("a", [0, 0])], 17, "axis 0 is repeated"),
    "unsqueeze_axis_range": (N("Unsqueeze", ["x", "a"]), [X(3)], [Y], [ints("a", [2])], 17,
                             "axis 2 is out of range for output rank 2"),
    "flatten_axis": (N("Flatten", ["x"], axis=3), [X(2, 3)], [Y], [], 17, "axis 3 is out of range for rank 2"),
    "pad_length": (N("Pad", ["x", "p"]), [X(2, 3)], [Y], [ints("p", [1, 1])], 17, "pads has 2 entries, expected 4"),
    "pad_negative": (N("Pad", ["x", "p"]), [X(2, 3)], [Y], [ints("p", [0, -5, 0, 0])], 17,
                     "negative pads remove more than axis 1 holds"),
    "pad_value_not_scalar": (N("Pad", ["x", "p", "v"]), [X(2, 3)], [Y], [ints("p", [0, 1, 0, 1]), floats("v", [1, 2])],
                             17, "constant_value must be a scalar"),
    "pad_axes_range": (N("Pad", ["x", "p", "", "a"]), [X(2, 3)], [Y], [ints("p", [1, 1]), ints("a", [4])], 18,
                       "axis 4 is out of range for rank 2"),
    "pad_mode": (N("Pad", ["x", "p"], mode="mirror"), [X(2, 3)], [Y], [ints("p", [0, 1, 0, 1])], 17,
                 "unknown pad mode 'mirror'"),
    "depth_to_space_channels": (N("DepthToSpace", ["x"], blocksize=2), [X(1, 3, 2, 2)], [Y], [], 17,
                                "channels 3 not divisible by blocksize^2 4"),
    "depth_to_space_blocksize": (N("DepthToSpace", ["x"], blocksize=0), [X(1, 4, 2, 2)], [Y], [], 17,
                                 "invalid blocksize 0"),
    "space_to_depth_spatial": (N("SpaceToDepth", ["x"], blocksize=2), [X(1, 1, 3, 4)], [Y], [], 17,
                               "not divisible by blocksize 2"),
    "space_to_depth_rank": (N("SpaceToDepth", ["x"], blocksize=2), [X(4, 4)], [Y], [], 17, "input must be 4-D"),
    "trilu_rank": (N("Trilu", ["x"]), [X(4)], [Y], [], 17, "Trilu needs rank >= 2, got 1"),
    "trilu_k_not_scalar": (N("Trilu", ["x", "k"]), [X(3, 3)], [Y], [ints("k", [1, 2])], 17,
                           "k must hold exactly one value, got 2"),
    "clip_min_not_scalar": (N("Clip", ["x", "lo"]), [X(2, 3)], [Y], [floats("lo", [0, 0, 0])], 17,
                            "min must be a scalar (has 3 elements)"),
    "clip_max_dtype": (N("Clip", ["x", "", "hi"]), [X(2, 3)], [Y], [floats("hi", 1.0, np.float64)], 17,
                       "max has type double, input has float"),
    "prelu_slope": (N("PRelu", ["x", "s"]), [X(2, 3)], [Y], [floats("s", [1, 2, 3, 4])], 17,
                    "slope of shape [4] cannot be broadcast to X of shape [2,3]"),
    "prelu_slope_bigger": (N("PRelu", ["x", "s"]), [X(3)], [Y], [floats("s", np.ones((2, 3)))], 17,
                           "cannot be broadcast to X"),
    "where_broadcast": (N("Where", ["c", "x", "x"]), [vi("c", B, [2]), X(3)], [Y], [], 17,
                        "shapes [2] and [3] cannot be broadcast"),
    "where_dtypes": (N("Where", ["c", "x", "d"]), [vi("c", B, [3]), X(3)], [Y], [floats("d", [1, 2, 3], np.float64)],
                     17, "X and Y have different types float and double"),
    "add_broadcast": (N("Add", ["x", "b"]), [X(2, 3)], [Y], [floats("b", [1, 2, 3, 4])], 17,
                      "shapes [2,3] and [4] cannot be broadcast"),
    "add_overflow": (N("Add", ["x", "b"]), [X(1 << 62, 1)], [Y], [floats("b", [1, 2, 3, 4])], 17, "64 bits"),
    "gather_overflow": (N("Gather", ["x", "i"]), [X(3, 1 << 40), vi("i", I64, [1 << 40])], [Y], [], 17, "64 bits"),
    "add_dtypes": (N("Add", ["x", "b"]), [X(3)], [Y], [floats("b", [1, 2, 3], np.float64)], 17,
                   "inputs have different types float and double"),
    "add_legacy_broadcast": (N("Add", ["x", "b"], broadcast=1, axis=0), [X(2, 3)], [Y], [floats("b", [1, 2, 3])], 6,
                             "legacy broadcast: B dim 0 (3) does not match A dim 0 (2)"),
    "sum_broadcast": (N("Sum", ["x", "x", "b"]), [X(2, 3)], [Y], [floats("b", [1, 2])], 17, "cannot be broadcast"),
    "max_dtypes": (N("Max", ["x", "b"]), [X(3)], [Y], [floats("b", [1, 2, 3], np.float64)], 17,
                   "input 1 has type double, input 0 has float"),
    "bitshift_direction": (N("BitShift", ["u", "v"], direction="UP"), [vi("u", TensorProto.UINT8, [3])], [Y],
                           [numpy_helper.from_array(np.array([1, 2, 3], np.uint8), "v")], 17,
                           "direction must be LEFT or RIGHT, got 'UP'"),
    "mod_float_fmod": (N("Mod", ["x", "b"]), [X(3)], [Y], [floats("b", [1, 2, 3])], 17, "fmod must be 1 for float"),
    "gelu_mode": (N("Gelu", ["x"], approximate="fast"), [X(3)], [Y], [], 20, "unknown approximate mode 'fast'"),
    "celu_alpha": (N("Celu", ["x"], alpha=0.0), [X(3)], [Y], [], 17, "alpha must not be 0"),
    "cast_to": (N("Cast", ["x"], to=1000), [X(3)], [Y], [], 17, "invalid 'to' attribute"),
    "cast_round_mode": (N("Cast", ["x"], to=TensorProto.FLOAT8E4M3FN, round_mode="sideways"), [X(3)], [Y], [], 21,
                        "unknown round_mode 'sideways'"),
    "if_branch_dtypes": (N("If", ["x"], then_branch=branch("a", np.ones(3, np.float32)),
                           else_branch=branch("b", np.arange(3))), [vi("x", B, [])], [Y], [], 17,
                         "output 0 is float in then_branch and int64 in else_branch"),
    "scatter_elements_updates_shape": (N("ScatterElements", ["x", "i", "u"], axis=1), [X(3, 3)], [Y],
                                       [ints("i", [[0]]), floats("u", [[1, 2]])], 18,
                                       "updates and indices must have the same shape"),
    "scatter_elements_off_axis": (N("ScatterElements", ["x", "i", "u"], axis=1), [X(2, 3)], [Y],
                                  [ints("i", [[0], [1], [2]]), floats("u", [[1], [2], [3]])], 18,
                                  "indices dimension 0 (3) exceeds data's (2)"),
    "scatter_nd_tuple": (N("ScatterND", ["x", "i", "u"]), [X(3, 3)], [Y], [ints("i", [[0, 1, 2]]), floats("u", [1])],
                         18, "index tuples of length 3 for data of rank 2"),
    "scatter_nd_updates_shape": (N("ScatterND", ["x", "i", "u"]), [X(3, 3)], [Y],
                                 [ints("i", [[0], [1]]), floats("u", np.zeros((2, 4)))], 18,
                                 "do not match indices and data"),
    "scatter_reduction": (N("ScatterND", ["x", "i", "u"], reduction="avg"), [X(3)], [Y],
                          [ints("i", [[0]]), floats("u", [1])], 18, "unknown reduction 'avg'"),
    "scatter_updates_dtype": (N("ScatterElements", ["x", "i", "u"]), [X(3)], [Y],
                              [ints("i", [0]), floats("u", [1.0], np.float64)], 18, "updates are double, data is float"),
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
    assert "(" in error_line(interp, part) and "'n'" in error_line(interp, part)  # names the node
    cuda = lathe("compile", path, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert cuda.returncode == 2, cuda.stdout + cuda.stderr
    error_line(cuda, part)
    export = lathe("compile", path, "-o", tmp_path / "c", cache=cache)
    assert export.returncode == 2, export.stdout + export.stderr
    error_line(export, part)


def test_gather_index_out_of_range_is_a_run_time_error_on_both_backends(tmp_path, cache):
    """Indices are data: a constant index out of range compiles to a host step that checks it."""
    path = model(tmp_path / "g.onnx", N("Gather", ["x", "i"]), [X(3, 2)], [Y], [ints("i", [0, 5])])
    interp = lathe("run", path, "--backend", "interp", cache=cache)
    cpu = lathe("run", path, "--backend", "cpu", cache=cache)
    assert interp.returncode == 2 and cpu.returncode == 2, interp.stderr + cpu.stderr
    part = "index 5 out of range [-3, 3)"
    assert error_line(interp, part) == error_line(cpu, part)


# name: (nodes, inputs, outputs, initializers, opset)
VALID = {
    "reshape_zero_and_minus_one": (N("Reshape", ["x", "s"]), [X(2, 3, 4)], [Y], [ints("s", [0, -1])], 17),
    "reshape_allowzero_empty": (N("Reshape", ["x", "s"], allowzero=1), [X(0, 4)], [Y], [ints("s", [4, 0])], 17),
    "reshape_to_scalar": (N("Reshape", ["x", "s"]), [X(1, 1)], [Y], [ints("s", [])], 17),
    "split_sizes": (N("Split", ["x", "s"], ["a", "b"], axis=-1), [X(2, 5)], [vi("a", F, None), vi("b", F, None)],
                    [ints("s", [2, 3])], 17),
    "split_uneven_18": (N("Split", ["x"], ["a", "b", "c"], num_outputs=3), [X(7)],
                        [vi("a", F, None), vi("b", F, None), vi("c", F, None)], [], 18),
    "split_zero_size": (N("Split", ["x", "s"], ["a", "b"]), [X(4)], [vi("a", F, None), vi("b", F, None)],
                        [ints("s", [0, 4])], 17),
    "concat_empty_part": (N("Concat", ["x", "c"], axis=0), [X(2, 3)], [Y], [floats("c", np.zeros((0, 3)))], 17),
    "slice_negative_step": (N("Slice", ["x", "st", "en", "ax", "sp"]), [X(5, 4)], [Y],
                            [ints("st", [-1]), ints("en", [-100]), ints("ax", [0]), ints("sp", [-2])], 17),
    "slice_clamped": (N("Slice", ["x", "st", "en"]), [X(5, 4)], [Y], [ints("st", [1, -100]), ints("en", [100, 3])], 17),
    "gather_negative_index": (N("Gather", ["x", "i"], axis=1), [X(3, 4)], [Y], [ints("i", [[-1, 0], [2, -4]])], 17),
    "gather_elements": (N("GatherElements", ["x", "i"], axis=1), [X(3, 4)], [Y], [ints("i", [[0, 3], [-1, 1]])], 17),
    "expand_both_ways": (N("Expand", ["x", "s"]), [X(3, 1)], [Y], [ints("s", [2, 1, 4])], 17),
    "tile_zero": (N("Tile", ["x", "r"]), [X(2, 3)], [Y], [ints("r", [0, 2])], 17),
    "tile": (N("Tile", ["x", "r"]), [X(2, 3)], [Y], [ints("r", [2, 3])], 17),
    "transpose_negative_perm": (N("Transpose", ["x"], perm=[-1, 0, 1]), [X(2, 3, 4)], [Y], [], 17),
    "squeeze_all": (N("Squeeze", ["x"]), [X(1, 3, 1)], [Y], [], 17),
    "unsqueeze_negative": (N("Unsqueeze", ["x", "a"]), [X(3)], [Y], [ints("a", [-1, 0])], 17),
    "flatten_rank": (N("Flatten", ["x"], axis=2), [X(2, 3)], [Y], [], 17),
    "pad_crop_and_pad": (N("Pad", ["x", "p", "v"]), [X(3, 4)], [Y],
                         [ints("p", [1, -1, -2, 2]), floats("v", 0.5)], 17),
    "pad_reflect": (N("Pad", ["x", "p"], mode="reflect"), [X(3, 4)], [Y], [ints("p", [0, 2, 0, 1])], 17),
    "depth_to_space_crd": (N("DepthToSpace", ["x"], blocksize=2, mode="CRD"), [X(1, 8, 2, 3)], [Y], [], 17),
    "space_to_depth": (N("SpaceToDepth", ["x"], blocksize=2), [X(1, 2, 4, 6)], [Y], [], 17),
    "trilu_k": (N("Trilu", ["x", "k"], upper=0), [X(2, 3, 4)], [Y], [ints("k", 1)], 17),
    "clip_scalars": (N("Clip", ["x", "lo", "hi"]), [X(2, 3)], [Y], [floats("lo", 0.2), floats("hi", [0.7])], 17),
    "prelu_channel": (N("PRelu", ["x", "s"]), [X(2, 3, 4)], [Y], [floats("s", np.full((3, 1), 0.25))], 17),
    "where_broadcast": (N("Where", ["c", "x", "z"]), [vi("c", B, [3, 1]), X(4)], [Y], [floats("z", [[0.5]])], 17),
    "add_broadcast": (N("Add", ["x", "b"]), [X(2, 1, 3)], [Y], [floats("b", np.ones((4, 1)))], 17),
    "sum_three": (N("Sum", ["x", "b", "x"]), [X(2, 3)], [Y], [floats("b", [1, 2, 3])], 17),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_edge_case_agrees(name, tmp_path, cache):
    node, inputs, outputs, inits, opset = VALID[name]
    path = model(tmp_path / f"{name}.onnx", node, inputs, outputs, inits, opset)
    outs = {}
    for backend in ("interp", "cpu"):
        out = tmp_path / f"{backend}.npz"
        p = lathe("run", path, "--backend", backend, "--fill", "random", "--seed", "3", "--output", out, cache=cache)
        assert p.returncode == 0, p.stdout + p.stderr
        outs[backend] = dict(np.load(out))
    assert outs["interp"].keys() == outs["cpu"].keys()
    for k in outs["interp"]:
        a, b = outs["interp"][k], outs["cpu"][k]
        assert a.shape == b.shape and a.dtype == b.dtype, k
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=k)


# Hostile cases whose shape-like input becomes a graph input fed at run time: inference cannot see
# the value, so the interpreter's eval hook (and on cpu the host step running it) finds the error,
# and says exactly what inference says when the value is a constant (one rule, one message).
RUNTIME = ["reshape_more", "reshape_fewer", "split_above", "split_below", "expand", "tile_negative",
           "slice_step_zero", "squeeze_not_one", "unsqueeze_repeated", "pad_negative", "trilu_k_not_scalar",
           "clip_min_not_scalar", "prelu_slope"]


def node_message(proc):
    lines = [ln for ln in proc.stderr.splitlines() if "node 0 'n'" in ln]
    assert lines, proc.stderr
    return lines[0][lines[0].index("node 0 'n'"):]


@pytest.mark.parametrize("name", RUNTIME)
def test_run_time_error_matches_inference(name, tmp_path, cache):
    node, inputs, outputs, inits, opset, part = HOSTILE[name]
    const = lathe("run", model(tmp_path / "const.onnx", node, inputs, outputs, inits, opset), "--backend", "interp",
                  cache=cache)
    assert const.returncode == 2 and "shape inference" in const.stderr, const.stderr
    fed = inits[-1]
    arr = numpy_helper.to_array(fed)
    np.save(tmp_path / "v.npy", arr)
    dims = [f"d{i}" for i in range(arr.ndim)]  # symbolic: inference knows neither value nor shape
    dyn_inputs = inputs + [helper.make_tensor_value_info(fed.name, fed.data_type, dims)]
    path = model(tmp_path / "dyn.onnx", node, dyn_inputs, outputs, inits[:-1], opset)
    for backend in ("interp", "cpu"):
        p = lathe("run", path, "--backend", backend, "--input", f"{fed.name}={tmp_path / 'v.npy'}", cache=cache)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "shape inference" not in p.stderr, p.stderr
        assert node_message(p) == node_message(const)
