"""test_exporter_idioms.py — what real exported models hit, each as a tiny onnx.helper model.

- A Conv with one output channel and a bias (1x1 over 1-D, 1x1 and 3x3 over 2-D): compiled on cpu,
  equal to the interpreter, and emitted for CUDA (NVRTC compiles it where NVRTC is installed).
- An If whose branches give [1,128] while the If output is undeclared (constant condition and one
  given at run time): the compiled plan has the branch's shape.
- dim_param "?" (paddle2onnx's `float[?,3,?,?]`): each "?" is its own unknown dim, as an empty one
  is and as onnxruntime reads it, so a non-square image runs; `inspect` still prints "?".
- A MatMul whose A has batch dims that B broadcasts over (A [S,1,K] x B [K,N], a sequence-first
  Linear; [B,S,K] x [K,N]) is one GEMM over all rows, B read once (the call's batch extent is 1
  and its M counts every row), and equals the interpreter with every epilogue fusion may attach.
- Gather, GatherElements and GatherND whose indices are the model's input (the embedding lookup)
  compile, and a bad index still fails the run, naming it, on every backend and in the C export.
- If compiles: a condition folded from shapes inlines the taken branch, a run-time one both branches
  and a Where per output; branches of different output shapes stay a host step.
- float16 / bfloat16 Conv, ConvTranspose, Gemm and MatMul compile on the CPU (computed in float32
  between Casts).
- hardswish written as x * HardSigmoid(x) (alpha 1/6, beta 1/2: paddle2onnx) and SiLU as x * Sigmoid(x)
  after a Conv (dense, depthwise) or a Gemm: one kernel with the activation in the call's epilogue,
  on the CPU and in the CUDA source, equal to the interpreter; another slope stays two ops.
- Depthwise convolutions of tiny planes (4x4, 2x2: a mobile network's last layers) of any kernel,
  stride, padding and dilation, and "same"-padded stride-1 ones of 5x5 / 7x7 / dilated kernels, with
  fused epilogues, equal to the interpreter.
- A 1x1 convolution of a 1x1 image is one GEMM with a row per image (the weights read once).
"""
import os
import re
import subprocess

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto as T, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
RNG = np.random.default_rng(11)


def lathe(*args, cache=None):
    env = dict(os.environ)
    if cache:
        env["LATHE_CACHE_DIR"] = str(cache)
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


def vi(name, shape, dt=T.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def w(name, shape):
    return numpy_helper.from_array(RNG.uniform(-0.5, 0.5, shape).astype(np.float32), name)


def save(path, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def outputs_of(model, backend, tmp_path, cache, *extra):
    out = tmp_path / f"{backend}.npz"
    r = lathe("run", model, "--backend", backend, "--fill", "random", "--seed", 5, "--output", out, *extra, cache=cache)
    assert r.returncode == 0, f"{backend}: {r.stderr[-1500:]}"
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def same_as_interp(model, tmp_path, cache, *extra, backends=("cpu", "loopir")):
    want = outputs_of(model, "interp", tmp_path, cache, *extra)
    for b in backends:
        got = outputs_of(model, b, tmp_path, cache, *extra)
        assert got.keys() == want.keys()
        for k in want:
            assert got[k].shape == want[k].shape, (b, k, got[k].shape, want[k].shape)
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=f"{b} {k}")


@pytest.mark.parametrize("spatial,k", [([9], 1), ([6, 7], 1), ([6, 7], 3)])
def test_conv_one_output_channel_with_bias(tmp_path, cache, spatial, k):
    out = [s - k + 1 for s in spatial]
    m = save(tmp_path / "conv.onnx", [helper.make_node("Conv", ["x", "w", "b"], ["y"])], [vi("x", [2, 3, *spatial])],
             [vi("y", [2, 1, *out])], [w("w", [1, 3, *([k] * len(spatial))]), w("b", [1])])
    same_as_interp(m, tmp_path, cache)
    r = lathe("compile", m, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert r.returncode == 0 and "0 host groups" in r.stdout, r.stdout + r.stderr


def gated(nodes, x, kind, alpha=1 / 6):
    """x * gate(x) appended to nodes, as exporters write hardswish (HardSigmoid 1/6, 1/2) and SiLU."""
    if kind == "hardswish":
        nodes.append(helper.make_node("HardSigmoid", [x], ["gate"], alpha=alpha, beta=0.5))
    else:
        nodes.append(helper.make_node("Sigmoid", [x], ["gate"]))
    nodes.append(helper.make_node("Mul", [x, "gate"] if kind != "silu_swapped" else ["gate", x], ["y"]))
    return nodes


def gated_model(path, anchor, kind):
    """A conv3x3, depthwise 3x3 or Gemm (with bias) followed by x * gate(x) of the given kind."""
    if anchor == "gemm":
        nodes, inputs, inits, out = [helper.make_node("Gemm", ["x", "w", "b"], ["c"], transB=1)], [vi("x", [6, 40])], \
            [w("w", [24, 40]), w("b", [24])], [6, 24]
    else:
        c = 8 if anchor == "depthwise" else 4
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], group=c if anchor == "depthwise" else 1)]
        inputs, out = [vi("x", [2, c, 9, 10])], [2, 8, 9, 10]
        inits = [w("w", [8, 1 if anchor == "depthwise" else c, 3, 3]), w("b", [8])]
    return save(path, gated(nodes, "c", kind), inputs, [vi("y", out)], inits)


@pytest.mark.parametrize("anchor", ["conv3x3", "depthwise", "gemm"])
@pytest.mark.parametrize("kind", ["hardswish", "silu", "silu_swapped"])
def test_gated_activation_fused_into_the_call(tmp_path, cache, anchor, kind):
    """Mul(x, HardSigmoid(x)) becomes HardSwish and Mul(x, Sigmoid(x)) SiLU (the patterns pass), which
    the convolution or GEMM applies in its epilogue: one kernel, on the CPU and in the CUDA source
    (activation code 10 or 8 in the entry's call), equal to the interpreter."""
    m = gated_model(tmp_path / "g.onnx", anchor, kind)
    same_as_interp(m, tmp_path, cache, backends=("cpu",))
    r = lathe("compile", m, cache=cache)
    assert r.returncode == 0 and re.search(r"\b1 groups, 1 kernels", r.stdout), r.stdout + r.stderr
    r = lathe("compile", m, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert r.returncode == 0 and "1 kernels" in r.stdout, r.stdout + r.stderr
    code = 10 if kind == "hardswish" else 8  # abi.h LT_ACT_HARD_SWISH, LT_ACT_SILU
    src = (tmp_path / "cuda" / "model.cu").read_text()
    call = re.search(r"lt_cuda_(?:mm|conv)_f32_\w+\(a0,[^;]*;", src)
    assert call and f", {code}, " in call.group(0), call.group(0) if call else src[-2000:]


@pytest.mark.parametrize("hw,k,stride,pad,dil", [
    ((1, 1), 3, 1, 1, 1), ((2, 2), 5, 1, 2, 1), ((4, 4), 5, 1, 2, 1), ((4, 4), 3, 2, 1, 1), ((3, 5), 3, 1, 1, 1),
    ((5, 6), 7, 2, 3, 1), ((4, 8), 3, 2, 1, 2), ((8, 4), 5, 2, 2, 1), ((6, 6), 3, 1, 1, 1),
    ((8, 8), 5, 1, 2, 1), ((10, 9), 7, 1, 3, 1), ((12, 12), 3, 1, 2, 2), ((20, 17), 5, 1, 2, 1), ((9, 9), 5, 1, 1, 1),
    ((8, 8), 5, 2, 2, 1), ((16, 16), 5, 2, 2, 1), ((15, 13), 7, 2, 3, 1), ((12, 14), 3, 1, 1, 2), ((9, 29), 3, 3, 1, 1),
    ((9, 31), 3, 3, 1, 1), ((8, 8), 5, 1, 1, 1), ((7, 7), 3, 2, 1, 2), ((9, 8), 3, 1, 0, 1)])
@pytest.mark.parametrize("epilogue", ["bias_relu", "residual_hardswish"])
def test_depthwise_tiny_planes(tmp_path, cache, hw, k, stride, pad, dil, epilogue):
    """Depthwise convolutions of planes of at most 32 input and 16 output elements (a whole plane in
    one AVX-512 vector; 6x6 at stride 1 is past it), at stride 1 with the output the input's size
    (5x5, 7x7, dilated 3x3: 16 outputs a masked load per tap; a ragged last vector; 9x9 with pad 1 is
    not "same"), and output rows of at most 16 columns reading at most 32 input columns (5x5 and 7x7
    at stride 2, dilated 3x3, 3x3 at stride 3; a 9x31 plane at stride 3 spans 33 and takes the row
    path; rows of at most 8 outputs spanning at most 16 columns two to a vector, an odd last row
    alone), channel multiplier 2, with a fused epilogue: equal to the interpreter."""
    c, (h, wd) = 6, hw
    oh, ow = [(d + 2 * pad - dil * (k - 1) - 1) // stride + 1 for d in hw]
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], group=c, kernel_shape=[k, k], strides=[stride, stride],
                            pads=[pad] * 4, dilations=[dil, dil])
    nodes, inputs = [conv], [vi("x", [2, c, h, wd])]
    if epilogue == "bias_relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    else:
        nodes += [helper.make_node("Add", ["c", "r"], ["s"])]
        nodes = gated(nodes, "s", "hardswish")
        inputs.append(vi("r", [2, 2 * c, oh, ow]))
    m = save(tmp_path / "dw.onnx", nodes, inputs, [vi("y", [2, 2 * c, oh, ow])], [w("w", [2 * c, 1, k, k]), w("b", [2 * c])])
    same_as_interp(m, tmp_path, cache, backends=("cpu",))


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("epilogue", ["bias", "bias_hardswish", "residual"])
def test_pointwise_conv_of_one_position_is_one_gemm(tmp_path, cache, batch, epilogue):
    """A 1x1 convolution of a 1x1 image (after a global pool: a classifier or squeeze-and-excite) is
    one GEMM with the images as its rows, the weights read once (B transposed), not a matrix-vector
    product per image; with each epilogue equal to the interpreter, and on the GPU the skinny tile."""
    m = pointwise_one_position_model(tmp_path / "pw.onnx", batch, epilogue)
    same_as_interp(m, tmp_path, cache, backends=("cpu",))
    assert gemm_calls(m, tmp_path, cache) == [(1, batch)]  # one batch entry, a row per image
    r = lathe("compile", m, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "lt_cuda_mm_f32_nt_skinny(" in (tmp_path / "cuda" / "model.cu").read_text()


def pointwise_one_position_model(path, batch, epilogue):
    """GlobalAveragePool of [batch, 272, 3, 3] then a 1x1 Conv to 40 channels with bias and an epilogue
    (bias alone, hardswish after it, or a residual input added)."""
    c, oc = 272, 40
    pool = helper.make_node("GlobalAveragePool", ["x"], ["p"])
    nodes, inputs = [pool, helper.make_node("Conv", ["p", "w", "b"], ["c"])], [vi("x", [batch, c, 3, 3])]
    if epilogue == "bias":
        nodes[-1].output[0] = "y"
    elif epilogue == "bias_hardswish":
        nodes = gated(nodes, "c", "hardswish")
    else:
        nodes.append(helper.make_node("Add", ["c", "r"], ["y"]))
        inputs.append(vi("r", [batch, oc, 1, 1]))
    return save(path, nodes, inputs, [vi("y", [batch, oc, 1, 1])], [w("w", [oc, c, 1, 1]), w("b", [oc])])


def scaled_product_model(path, case):
    """A scalar multiply (or divide) before a product with constant weights, as exporters write an
    inference-mode dropout (x * (1 - p)) or a 1/sqrt(d) scale; the cases that must stay as written
    read the scaled value twice or multiply two activations."""
    relu = helper.make_node("Relu", ["x"], ["h"])
    c = numpy_helper.from_array(np.array(0.8, np.float32), "c")
    if case == "mul_reshape_matmul":
        nodes = [relu, helper.make_node("Mul", ["h", "c"], ["s"]),
                 helper.make_node("Reshape", ["s", "shape"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["y"])]
        inits = [c, numpy_helper.from_array(np.array([2, 12], np.int64), "shape"), w("w", [12, 5])]
        return save(path, nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 5])], inits)
    if case == "div_conv":
        c4 = numpy_helper.from_array(np.array(4.0, np.float32), "c4")
        nodes = [relu, helper.make_node("Div", ["h", "c4"], ["s"]),
                 helper.make_node("Conv", ["s", "w", "b"], ["y"], pads=[1, 1, 1, 1])]
        return save(path, nodes, [vi("x", [2, 3, 6, 6])], [vi("y", [2, 4, 6, 6])], [c4, w("w", [4, 3, 3, 3]), w("b", [4])])
    if case == "scalar_first_flatten_gemm":
        nodes = [relu, helper.make_node("Mul", ["c", "h"], ["s"]), helper.make_node("Flatten", ["s"], ["f"]),
                 helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1, alpha=0.5)]
        return save(path, nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 7])], [c, w("w", [7, 12]), w("b", [7])])
    if case == "read_twice":
        nodes = [relu, helper.make_node("Mul", ["h", "c"], ["s"]), helper.make_node("MatMul", ["s", "w"], ["y"]),
                 helper.make_node("Add", ["s", "s"], ["z"])]
        return save(path, nodes, [vi("x", [3, 6])], [vi("y", [3, 5]), vi("z", [3, 6])], [c, w("w", [6, 5])])
    assert case == "two_activations"
    nodes = [relu, helper.make_node("Mul", ["h", "c"], ["s"]), helper.make_node("MatMul", ["s", "v"], ["y"])]
    return save(path, nodes, [vi("x", [3, 6]), vi("v", [6, 5])], [vi("y", [3, 5])], [c])


@pytest.mark.parametrize("case,folds", [("mul_reshape_matmul", True), ("div_conv", True),
                                        ("scalar_first_flatten_gemm", True), ("read_twice", False),
                                        ("two_activations", False)])
def test_scalar_scale_folds_into_the_weights(tmp_path, cache, case, folds):
    """fold_scale: x * c (or x / c) read by a MatMul or Conv with constant weights, through views,
    becomes c * W (a Gemm's alpha); no multiply is left in the compiled groups, and the outputs equal
    the interpreter's (which runs the graph as written: -O0). A scaled value read twice, or a product
    of two activations, keeps its multiply."""
    m = scaled_product_model(tmp_path / "s.onnx", case)
    want = outputs_of(m, "interp", tmp_path, cache, "-O0")
    got = outputs_of(m, "cpu", tmp_path, cache)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    d = tmp_path / "code"
    r = lathe("compile", m, "--dump-code", d, cache=cache)
    assert r.returncode == 0, r.stderr
    groups = (d / "groups.txt").read_text()
    assert (re.search(r"\bn\d+ (Mul|Div)\b", groups) is None) == folds, groups


def scale_after_activation_model(path, anchor):
    """A conv (dense 3x3 or depthwise) or Gemm, hardswish, then x 0.8 as the graph's output (nothing
    to fold the scale into)."""
    m = gated_model(path, anchor, "hardswish")
    model = onnx.load(m)
    model.graph.node[-1].output[0] = "g"
    model.graph.node.append(helper.make_node("Mul", ["g", "c08"], ["y"]))
    model.graph.initializer.append(numpy_helper.from_array(np.array(0.8, np.float32), "c08"))
    onnx.save(model, m)
    return m


@pytest.mark.parametrize("anchor", ["conv3x3", "depthwise", "gemm"])
def test_scale_after_activation_leaves_the_call_whole(tmp_path, cache, anchor):
    """On the GPU a call's epilogue is scale, bias/residual, one activation, one add: a scale after
    the activation is a kernel of its own, and the conv or GEMM stays a call of its entry (not a plain
    loop nest of the whole group); on the CPU, one kernel. Equal to the interpreter."""
    m = scale_after_activation_model(tmp_path / "sa.onnx", anchor)
    same_as_interp(m, tmp_path, cache, backends=("cpu",))
    r = lathe("compile", m, "--target", "cuda", "-o", tmp_path / "cuda", cache=cache)
    assert r.returncode == 0 and "2 kernels" in r.stdout, r.stdout + r.stderr
    src = (tmp_path / "cuda" / "model.cu").read_text()
    call = re.search(r"lt_cuda_(?:mm|conv)_f32_\w+\(a0,[^;]*;", src)
    assert call and ", 10, " in call.group(0), src[-3000:]  # hardswish applied by the entry


def test_hardsigmoid_of_other_slope_is_not_hardswish(tmp_path, cache):
    """x * HardSigmoid(x, alpha 0.2) is not hardswish: it stays two ops, computed as written."""
    nodes = gated([helper.make_node("Conv", ["x", "w"], ["c"])], "c", "hardswish", alpha=0.2)
    m = save(tmp_path / "h.onnx", nodes, [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 4, 4])], [w("w", [4, 3, 3, 3])])
    same_as_interp(m, tmp_path, cache, backends=("cpu",))
    d = tmp_path / "code"
    r = lathe("compile", m, "--dump-code", d, cache=cache)
    assert r.returncode == 0, r.stderr
    assert "HardSwish" not in (d / "groups.txt").read_text()


@pytest.mark.parametrize("cond_given", [False, True])
def test_if_with_undeclared_output_shape(tmp_path, cache, cond_given):
    ax = numpy_helper.from_array(np.array([0], np.int64), "ax")
    then = helper.make_graph([helper.make_node("Unsqueeze", ["x", "ax"], ["t"])], "then", [], [vi("t", None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e0"]), helper.make_node("Unsqueeze", ["e0", "ax"], ["e"])],
                              "else", [], [vi("e", None)])
    nodes = [helper.make_node("If", ["c"], ["branch"], then_branch=then, else_branch=other),
             helper.make_node("MatMul", ["branch", "w"], ["y"])]
    inputs, inits = [vi("x", [128])], [ax, w("w", [128, 4])]
    extra = []
    if cond_given:
        inputs.append(vi("c", [], T.BOOL))
        np.save(tmp_path / "c.npy", np.array(False))
        extra = ["--input", f"c={tmp_path / 'c.npy'}", "--input", f"x={tmp_path / 'x.npy'}"]
        np.save(tmp_path / "x.npy", RNG.uniform(-1, 1, 128).astype(np.float32))
    else:
        inits.append(numpy_helper.from_array(np.array(True), "c"))
    m = save(tmp_path / "if.onnx", nodes, inputs, [vi("y", None)], inits)
    same_as_interp(m, tmp_path, cache, *extra)
    assert outputs_of(m, "cpu", tmp_path, cache, *extra)["y"].shape == (1, 4)


def test_question_mark_dims_are_each_unknown(tmp_path, cache):
    m = save(tmp_path / "paddle.onnx", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["?", 3, "?", "?"])],
             [vi("y", ["?", 3, "?", "?"])])
    np.save(tmp_path / "x.npy", RNG.uniform(-1, 1, (2, 3, 20, 30)).astype(np.float32))
    for b in ("interp", "cpu"):
        r = lathe("run", m, "--backend", b, "--input", f"x={tmp_path / 'x.npy'}", cache=cache)
        assert r.returncode == 0 and "float[2,3,20,30]" in r.stdout, (b, r.stdout + r.stderr)
    r = lathe("inspect", m)
    assert r.returncode == 0 and "float[?,3,?,?]" in r.stdout, r.stdout


MATMULS = [([7, 1, 8], [8, 6]), ([1, 7, 8], [8, 6]), ([2, 7, 8], [8, 6]), ([3, 2, 5, 8], [8, 6]), ([2, 1, 5, 8], [8, 6]),
           ([4, 1, 1, 8], [8, 6])]


def matmul_model(path, sa, sb, epilogue):
    out = list(np.matmul(np.zeros(sa), np.zeros(sb)).shape)
    nodes, inits, inputs, y = [], [], [vi("x", sa)], "m"
    if epilogue == "transposed_b":
        inits.append(w("wt", [sb[1], sb[0]]))
        nodes.append(helper.make_node("Transpose", ["wt"], ["w"], perm=[1, 0]))
    else:
        inits.append(w("w", sb))
    nodes.append(helper.make_node("MatMul", ["x", "w"], ["m"]))
    if epilogue in ("bias", "bias_gelu"):
        inits.append(w("b", [sb[-1]]))
        nodes.append(helper.make_node("Add", ["m", "b"], ["y0"]))
        y = "y0"
        if epilogue == "bias_gelu":
            nodes += [helper.make_node("Sigmoid", ["y0"], ["s"]), helper.make_node("Mul", ["y0", "s"], ["y1"])]
            y = "y1"
    if epilogue == "row_bias":  # one value per row of the matrix: not a per-row vector of the folded rows
        inits.append(w("rb", [out[-2], 1]))
        nodes.append(helper.make_node("Add", ["m", "rb"], ["y0"]))
        y = "y0"
    if epilogue == "residual":
        inputs.append(vi("r", out))
        nodes.append(helper.make_node("Add", ["m", "r"], ["y0"]))
        y = "y0"
    return save(path, nodes, inputs, [vi(y, out)], inits), out


def gemm_calls(model, tmp_path, cache):
    """(batch extent, M) of every lt_gemm_f32 call in the generated C."""
    d = tmp_path / "code"
    r = lathe("compile", model, "--dump-code", d, cache=cache)
    assert r.returncode == 0, r.stderr
    calls = re.findall(r"lt_gemm_f32\(a\d+, a\d+, a\d+, a\d+, a\d+, a\d+, (\d+), (\d+), (\d+),", (d / "model.c").read_text())
    return [(int(nb), int(m)) for nb, _, m in calls]


@pytest.mark.parametrize("sa,sb", MATMULS)
@pytest.mark.parametrize("epilogue", ["none", "bias", "bias_gelu", "row_bias", "residual", "transposed_b"])
def test_matmul_batch_dims_fold_into_rows(tmp_path, cache, sa, sb, epilogue):
    m, out = matmul_model(tmp_path / "mm.onnx", sa, sb, epilogue)
    same_as_interp(m, tmp_path, cache)
    if epilogue == "none":
        rows = int(np.prod(out[:-1]))
        assert gemm_calls(m, tmp_path, cache) == [(1, rows)], (sa, sb)


@pytest.mark.parametrize("data,ind,b", [
    ([4, 5, 6], [[1], [-1], [0]], 0),                      # rows picked (the torch.export idiom for x[:, idx])
    ([4, 5, 6], [[1, 2], [3, -5]], 0),                     # two leading dims
    ([2, 5, 6], [[[1], [4]], [[0], [2]]], 1),               # batch_dims 1
    ([3, 4], [[[0, 1]], [[2, 3]], [[-1, -2]]], 0),          # every dim: scalars
])
def test_gathernd_with_constant_indices_compiles(tmp_path, cache, data, ind, b):
    indices = numpy_helper.from_array(np.array(ind, np.int64), "i")
    ref = onnx.reference.ReferenceEvaluator(helper.make_model(helper.make_graph(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=b)], "g", [vi("x", data)], [vi("y", None)], [indices]),
        opset_imports=[helper.make_opsetid("", 17)]))
    out_shape = list(ref.run(None, {"x": np.zeros(data, np.float32)})[0].shape)
    m = save(tmp_path / "gnd.onnx", [helper.make_node("GatherND", ["x", "i"], ["g"], batch_dims=b),
                                     helper.make_node("Relu", ["g"], ["y"])], [vi("x", data)], [vi("y", out_shape)],
             [indices])
    same_as_interp(m, tmp_path, cache)
    r = lathe("compile", m, cache=cache)
    assert r.returncode == 0 and " 0 host steps" in r.stdout, r.stdout + r.stderr


# The embedding lookup of every transformer: a Gather-family node whose indices are the model's input
# (directly or through a Reshape, as GPT-2's input_ids.view(-1, n)). It compiles; the plan checks the
# indices on the host before each run, so a bad token id fails the run (exit 2, the node and the
# element named) on every backend and in the standalone C export, as in the interpreter.
def index_models(tmp_path):
    table = w("table", [50, 8])
    return {
        "gather": (save(tmp_path / "gather.onnx", [
            helper.make_node("Reshape", ["ids", "shp"], ["ids2"]),
            helper.make_node("Gather", ["table", "ids2"], ["emb"]),
            helper.make_node("Relu", ["emb"], ["y"])],
            [vi("ids", [2, 6], T.INT64)], [vi("y", [3, 4, 8])],
            [table, numpy_helper.from_array(np.array([3, 4], np.int64), "shp")]), "ids", (2, 6), 50),
        "gather_axis1_int32": (save(tmp_path / "gather1.onnx", [helper.make_node("Gather", ["table", "ids"], ["y"], axis=1)],
                                    [vi("ids", [5], T.INT32)], [vi("y", [50, 5])], [table]), "ids", (5,), 8),
        "gather_elements": (save(tmp_path / "gel.onnx", [helper.make_node("GatherElements", ["table", "ids"], ["y"], axis=0)],
                                 [vi("ids", [4, 8], T.INT64)], [vi("y", [4, 8])], [table]), "ids", (4, 8), 50),
        "gathernd_batch": (save(tmp_path / "gnd.onnx", [helper.make_node("GatherND", ["t3", "ids"], ["y"], batch_dims=1)],
                                [vi("ids", [2, 3, 1], T.INT64)], [vi("y", [2, 3, 4])], [w("t3", [2, 7, 4])]),
                           "ids", (2, 3, 1), 7),
    }


@pytest.mark.parametrize("name", ["gather", "gather_axis1_int32", "gather_elements", "gathernd_batch"])
def test_input_indices_compile_and_are_checked(tmp_path, cache, name):
    model, inp, shape, dim = index_models(tmp_path)[name]
    r = lathe("compile", model, cache=cache)
    assert r.returncode == 0 and re.search(r"\b0 host steps", r.stdout), r.stdout + r.stderr
    dt = np.int32 if "int32" in name else np.int64
    good = RNG.integers(-dim, dim, shape).astype(dt)
    np.save(tmp_path / "good.npy", good)
    same_as_interp(model, tmp_path, cache, "--input", f"{inp}={tmp_path / 'good.npy'}")
    for bad_value in (dim, -dim - 1):
        bad = good.copy()
        bad.flat[good.size - 2] = bad_value
        np.save(tmp_path / "bad.npy", bad)
        for backend in ("interp", "cpu", "loopir"):
            r = lathe("run", model, "--backend", backend, "--input", f"{inp}={tmp_path / 'bad.npy'}", cache=cache)
            assert r.returncode == 2, (backend, r.stdout, r.stderr)
            assert f"index {bad_value}" in r.stderr and "out of range" in r.stderr, (backend, r.stderr)
        if os.environ.get("CC", "cc") and name == "gather":
            d = tmp_path / "export"
            r = lathe("compile", model, "-o", d, "--target", "c", cache=cache)
            assert r.returncode == 0, r.stderr
            src = (d / "model.c").read_text()
            assert "is out of range" in src
            exe = d / "prog"
            r = subprocess.run([os.environ.get("CC") or "cc", "-O1", str(d / "model.c"), str(d / "model_main.c"), "-lm",
                                "-o", str(exe)], capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr[-3000:]
            bad.tofile(d / "ids.bin")
            r = subprocess.run([str(exe), str(d / "ids.bin"), str(d / "y.bin")], capture_output=True, text=True, timeout=60)
            assert r.returncode != 0 and f"index {bad_value} (element {good.size - 2} of input 'ids')" in r.stderr, r.stderr
            good.tofile(d / "ids.bin")
            r = subprocess.run([str(exe), str(d / "ids.bin"), str(d / "y.bin")], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr


# float16 / bfloat16 models on the CPU: Conv, ConvTranspose, Gemm and MatMul compute in float32
# between Casts (the widen_gemm pass; the CPU kernels take float32 operands), the elementwise ops
# stay narrow; equal to the interpreter to the narrow type's tolerance, with no host step.
@pytest.mark.parametrize("dt,tol", [(T.FLOAT16, 1e-3), (T.BFLOAT16, 1e-2)])
def test_narrow_float_gemm_and_conv_compile_on_cpu(tmp_path, cache, dt, tol):
    npdt = onnx.helper.tensor_dtype_to_np_dtype(dt)

    def nw(name, shape):
        return numpy_helper.from_array(RNG.uniform(-0.5, 0.5, shape).astype(np.float32), name) if dt == T.BFLOAT16 \
            else numpy_helper.from_array(RNG.uniform(-0.5, 0.5, shape).astype(npdt), name)
    nodes = [helper.make_node("Cast", ["x"], ["xn"], to=dt),
             helper.make_node("Conv", ["xn", "wc", "bc"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ConvTranspose", ["r", "wt"], ["t"], strides=[2, 2]),
             helper.make_node("Reshape", ["t", "shp"], ["f"]),
             helper.make_node("Gemm", ["f", "wg", "bg"], ["g"], transB=1),
             helper.make_node("MatMul", ["g", "wm"], ["m"]),
             helper.make_node("Cast", ["m"], ["y"], to=T.FLOAT)]
    inits = [nw("wc", [4, 3, 3, 3]), nw("bc", [4]), nw("wt", [4, 2, 2, 2]), nw("wg", [16, 2 * 10 * 10]), nw("bg", [16]),
             nw("wm", [16, 8]), numpy_helper.from_array(np.array([2, -1], np.int64), "shp")]
    if dt == T.BFLOAT16:  # numpy has no bfloat16: cast the float32 weights in the graph
        nodes = [helper.make_node("Cast", [i.name], [i.name + "_n"], to=dt) for i in inits[:-1]] + nodes
        for nd in nodes[len(inits) - 1:]:
            for k, name in enumerate(nd.input):
                if name in {i.name for i in inits[:-1]}:
                    nd.input[k] = name + "_n"
    m = save(tmp_path / "narrow.onnx", nodes, [vi("x", [2, 3, 5, 5])], [vi("y", [2, 8])], inits)
    r = lathe("compile", m, cache=cache)
    assert r.returncode == 0 and re.search(r"\b0 host steps", r.stdout), r.stdout + r.stderr
    want = outputs_of(m, "interp", tmp_path, cache)
    for b in ("cpu", "loopir"):
        got = outputs_of(m, b, tmp_path, cache)
        np.testing.assert_allclose(got["y"], want["y"], rtol=tol, atol=tol * np.abs(want["y"]).max(), err_msg=b)


# If compiles (the inline_if pass): a condition that folds (here from a Shape) inlines the taken
# branch; one given at run time inlines both branches and selects each output with Where. Branches
# read outer values and hold their own initializers and Constants; an If whose branches disagree in
# shape stays a host step and still answers right.
def if_model(path, cond, branch_shapes_differ=False):
    kt = numpy_helper.from_array(RNG.uniform(-1, 1, [6, 5]).astype(np.float32), "kt")
    then = helper.make_graph([helper.make_node("MatMul", ["x", "kt"], ["t0"]), helper.make_node("Relu", ["t0"], ["t"])],
                             "then", [], [vi("t", [3, 5])], [kt])
    ke = helper.make_node("Constant", [], ["ke"], value=numpy_helper.from_array(
        RNG.uniform(-1, 1, [6, 4 if branch_shapes_differ else 5]).astype(np.float32)))
    other = helper.make_graph([ke, helper.make_node("MatMul", ["x", "ke"], ["e0"]), helper.make_node("Sigmoid", ["e0"], ["e"])],
                              "else", [], [vi("e", None)])
    nodes, inputs, inits = [], [vi("x", [3, 6])], []
    if cond == "shape":  # x has 3 rows: Shape(x)[0] == 3 folds to true
        nodes += [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["s0"]),
                  helper.make_node("Equal", ["s0", "three"], ["c"])]
        inits += [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                  numpy_helper.from_array(np.array(3, np.int64), "three")]
    else:
        inputs.append(vi("c", [1], T.BOOL))
    nodes += [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    return save(path, nodes, inputs, [vi("y", None)], inits)


@pytest.mark.parametrize("cond", ["shape", True, False])
def test_if_compiles(tmp_path, cache, cond):
    m = if_model(tmp_path / "if.onnx", cond)
    np.save(tmp_path / "x.npy", RNG.uniform(-1, 1, [3, 6]).astype(np.float32))
    extra = ["--input", f"x={tmp_path / 'x.npy'}"]
    if cond != "shape":
        np.save(tmp_path / "c.npy", np.array([cond]))
        extra += ["--input", f"c={tmp_path / 'c.npy'}"]
    r = lathe("compile", m, cache=cache)
    assert r.returncode == 0 and re.search(r"\b0 host steps", r.stdout), r.stdout + r.stderr
    same_as_interp(m, tmp_path, cache, *extra)
    y = outputs_of(m, "cpu", tmp_path, cache, *extra)["y"]
    assert ((y >= 0).all() and (y == 0).any()) if cond in ("shape", True) else ((y > 0) & (y < 1)).all()


def test_if_with_branches_of_different_shapes_stays_on_host(tmp_path, cache):
    m = if_model(tmp_path / "if.onnx", True, branch_shapes_differ=True)
    np.save(tmp_path / "c.npy", np.array([False]))
    r = lathe("compile", m, cache=cache)
    assert r.returncode == 0 and re.search(r"\b1 host steps", r.stdout), r.stdout + r.stderr
    same_as_interp(m, tmp_path, cache, "--input", f"c={tmp_path / 'c.npy'}")


def test_if_edge_cases(tmp_path, cache):
    """A branch that outputs a model input (the output keeps its name, through an Identity); a float
    condition of 0.5 (true, as the interpreter reads it); a run-time condition whose untaken branch
    would fail on an index (left to the interpreter, which runs only the taken branch)."""
    passthru = helper.make_graph([], "then", [], [vi("x", [3, 6])])
    neg = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", [3, 6])])
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    m = save(tmp_path / "if1.onnx", [helper.make_node("If", ["half"], ["y"], then_branch=passthru, else_branch=neg)],
             [vi("x", [3, 6])], [vi("y", [3, 6])], [half])
    np.save(tmp_path / "x.npy", RNG.uniform(-1, 1, [3, 6]).astype(np.float32))
    same_as_interp(m, tmp_path, cache, "--input", f"x={tmp_path / 'x.npy'}")
    y = outputs_of(m, "cpu", tmp_path, cache, "--input", f"x={tmp_path / 'x.npy'}")["y"]
    np.testing.assert_array_equal(y, np.load(tmp_path / "x.npy"))

    table = numpy_helper.from_array(RNG.uniform(-1, 1, [4]).astype(np.float32), "table")
    take = helper.make_graph([helper.make_node("Gather", ["table", "i"], ["t"])], "then", [], [vi("t", [])])
    zero = helper.make_graph([helper.make_node("Constant", [], ["z"], value=numpy_helper.from_array(np.array(0, np.float32)))],
                             "else", [], [vi("z", [])])
    m = save(tmp_path / "if2.onnx", [helper.make_node("Less", ["i", "four"], ["c"]),
                                     helper.make_node("If", ["c"], ["y"], then_branch=take, else_branch=zero)],
             [vi("i", [], T.INT64)], [vi("y", [])], [table, numpy_helper.from_array(np.array(4, np.int64), "four")])
    np.save(tmp_path / "i.npy", np.array(7, np.int64))
    same_as_interp(m, tmp_path, cache, "--input", f"i={tmp_path / 'i.npy'}")
