"""test_decompose_ops.py — ops the interpreter would run as host steps are rewritten by graph passes
into ops lathe compiles, and agree with the interpreter: ConvTranspose with constant weights (the
convt_phases pass: one phase Conv and a depth-to-space), InstanceNormalization and GroupNormalization
(instnorm_layernorm, groupnorm_layernorm: a LayerNormalization over reshaped blocks) and Einsum
(einsum_matmul: Transpose / Reshape / ReduceSum / MatMul).

Every onnx node test of these ops is taken with every input but the first frozen into initializers,
as exporters write them, the first input random; so are hand-made cases with random weights (groups,
strides 2 and 3, kernels smaller than or not a multiple of the stride, output_padding, output_shape,
asymmetric pads, 1-D and 3-D; both GroupNormalization forms; the equations exporters emit). On cpu
and on the bounds-checked loopir backend the output must equal the interpreter's, the compiled plan
must have no host step where a pass applies (what the passes leave to the interpreter: dilated
ConvTranspose, Einsum diagonals), and the CUDA translation unit must build with NVRTC.
"""
import glob
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from frozen_nodes import NODE, frozen, host_steps, outputs_by_backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
NODE_CASES = sorted(os.path.basename(d) for pat in ("convtranspose*", "instancenorm*", "group_normalization*",
                                                    "einsum*")
                    for d in glob.glob(os.path.join(NODE, "test_" + pat)) if os.path.isdir(d))
KEPT = ("convtranspose_dilations", "einsum_batch_diagonal")
RNG = np.random.default_rng(7)


def _w(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _model(node, xshape, inits, opset=19, dtype=TensorProto.FLOAT):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, xshape)],
                          [helper.make_tensor_value_info(node.output[0], dtype, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def convt(xshape, cout_g, kernel, group=1, bias=True, **attrs):
    inits = {"w": _w(xshape[1], cout_g, *kernel)}
    if bias:
        inits["b"] = _w(cout_g * group)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"] if bias else ["x", "w"], ["y"], group=group, **attrs)
    return _model(node, xshape, inits), xshape


def instnorm(xshape, eps=1e-5):
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=eps)
    return _model(node, xshape, {"s": _w(xshape[1]), "b": _w(xshape[1])}), xshape


def groupnorm(xshape, groups, opset, **attrs):
    n = xshape[1] if opset >= 21 else groups
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, **attrs)
    return _model(node, xshape, {"s": _w(n), "b": _w(n)}, opset=opset), xshape


def einsum(eq, xshape, wshape=None):
    inits = {"w": _w(*wshape)} if wshape else {}
    node = helper.make_node("Einsum", ["x", "w"] if wshape else ["x"], ["y"], equation=eq)
    return _model(node, xshape, inits, opset=12), xshape


HAND = {
    "convt_2d": lambda: convt([1, 3, 5, 5], 2, [3, 3]),
    "convt_stride2": lambda: convt([2, 4, 5, 6], 3, [3, 3], strides=[2, 2]),
    "convt_stride3_asym_pads": lambda: convt([1, 2, 4, 5], 2, [3, 4], strides=[3, 3], pads=[1, 0, 2, 1]),
    "convt_kernel_below_stride": lambda: convt([1, 2, 4, 4], 3, [2, 2], strides=[3, 3]),
    "convt_1d_kernel_not_multiple": lambda: convt([1, 2, 5], 2, [5], strides=[2]),
    "convt_1d_output_padding": lambda: convt([2, 3, 7], 2, [4], strides=[3], output_padding=[2]),
    "convt_groups": lambda: convt([1, 4, 5, 5], 3, [3, 3], group=2, strides=[2, 2], pads=[1, 1, 1, 1],
                                  output_padding=[1, 1]),
    "convt_depthwise": lambda: convt([1, 8, 3, 4], 1, [4, 4], group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
    "convt_same_upper": lambda: convt([1, 2, 5, 5], 2, [3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    "convt_same_lower": lambda: convt([1, 2, 5, 5], 2, [4, 4], strides=[2, 2], auto_pad="SAME_LOWER"),
    "convt_output_shape": lambda: convt([1, 2, 3, 3], 2, [3, 3], strides=[3, 2], output_shape=[10, 8]),
    "convt_output_shape_past_extent": lambda: convt([1, 2, 3, 3], 2, [3, 3], strides=[2, 2], output_shape=[12, 13]),
    "convt_3d_no_bias": lambda: convt([1, 2, 3, 4, 3], 2, [2, 3, 2], bias=False, strides=[2, 1, 3],
                                      pads=[0, 1, 1, 1, 0, 0]),
    "convt_stride1_asym": lambda: convt([1, 3, 6, 6], 4, [3, 3], pads=[1, 2, 0, 1]),
    "convt_mixed_strides": lambda: convt([1, 3, 6, 6], 4, [5, 3], strides=[2, 3], pads=[3, 0, 1, 2]),
    "instnorm_4d": lambda: instnorm([2, 3, 5, 6]),
    "instnorm_3d_eps": lambda: instnorm([2, 4, 7], eps=0.3),
    "instnorm_5d": lambda: instnorm([1, 2, 3, 4, 5]),
    "groupnorm_18": lambda: groupnorm([2, 6, 4, 5], 3, 18),
    "groupnorm_21": lambda: groupnorm([2, 6, 4, 5], 3, 21),
    "groupnorm_21_one_group": lambda: groupnorm([2, 6, 4, 5], 1, 21, epsilon=1e-2),
    "groupnorm_21_stash": lambda: groupnorm([2, 4, 3], 2, 21, stash_type=1),
    "einsum_bmm": lambda: einsum("bij,bjk->bik", [2, 3, 4], [2, 4, 5]),
    "einsum_attention": lambda: einsum("bhid,bhjd->bhij", [2, 3, 4, 5], [2, 3, 6, 5]),
    "einsum_implicit": lambda: einsum("ij,jk", [3, 4], [4, 5]),
    "einsum_outer": lambda: einsum("bi,bj->bij", [3, 4], [3, 5]),
    "einsum_ellipsis": lambda: einsum("...ij,...jk->...ik", [2, 3, 3, 4], [1, 3, 4, 5]),
    "einsum_sum_and_permute": lambda: einsum("bkhd,hdc->cbk", [2, 3, 4, 5], [4, 5, 6]),
    "einsum_reduce": lambda: einsum("ijk->ki", [3, 4, 5]),
}


def lathe(*args, cache):
    env = dict(os.environ, LATHE_CACHE_DIR=str(cache))
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("decompose-cache")


def check(model, x, tmp_path, cache, kept=False):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, x.shape).astype(x.dtype)
    outs = outputs_by_backend(lambda *a: lathe(*a, cache=cache), model, x, tmp_path)
    for b in ("cpu", "loopir"):
        assert outs[b].shape == outs["interp"].shape, b
        np.testing.assert_allclose(outs[b].astype(np.float64), outs["interp"].astype(np.float64), rtol=1e-4, atol=1e-4,
                                   err_msg=b)
    steps, plan = host_steps(lambda *a: lathe(*a, cache=cache), model)
    assert kept or steps == 0, plan
    out = tmp_path / "cuda"
    r = lathe("compile", model, "--target", "cuda", "-o", out, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    if "no cubin" in r.stdout + r.stderr:
        pytest.skip("NVRTC not found (scripts/setup.sh installs it)")
    assert (out / "model.cubin").stat().st_size > 0


@pytest.mark.parametrize("case", NODE_CASES)
def test_node_test_with_frozen_params(case, tmp_path, cache):
    model = str(tmp_path / "m.onnx")
    x = frozen(case, model)
    check(model, x, tmp_path, cache, kept=any(k in case for k in KEPT))


@pytest.mark.parametrize("case", sorted(HAND))
def test_hand_made(case, tmp_path, cache):
    m, xshape = HAND[case]()
    model = str(tmp_path / "m.onnx")
    onnx.save(m, model)
    check(model, np.zeros(xshape, np.float32), tmp_path, cache)


def test_computed_norm_parameters(tmp_path, cache):
    """Scale and bias that are computed (not constants) are reshaped in the graph; still compiled."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 3])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])
    nodes = [helper.make_node("Exp", ["s"], ["se"]),
             helper.make_node("InstanceNormalization", ["x", "se", "s"], ["y"], epsilon=1e-3)]
    g = helper.make_graph(nodes, "g", [x, s], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
    np.savez(tmp_path / "in.npz", x=RNG.uniform(-2, 2, (2, 4, 3, 3)).astype(np.float32),
             s=RNG.uniform(-1, 1, 4).astype(np.float32))
    outs = {}
    for b in ("interp", "cpu", "loopir"):
        r = lathe("run", model, "--backend", b, "--input", tmp_path / "in.npz", "--output", tmp_path / f"{b}.npz",
                  cache=cache)
        assert r.returncode == 0, r.stderr[-1500:]
        with np.load(tmp_path / f"{b}.npz") as z:
            outs[b] = z["y"]
    for b in ("cpu", "loopir"):
        np.testing.assert_allclose(outs[b], outs["interp"], rtol=1e-4, atol=1e-4, err_msg=b)
    r = lathe("compile", model, "--print-plan", cache=cache)
    assert " 0 host steps" in r.stdout, r.stdout
