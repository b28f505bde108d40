"""test_cuda_compile.py — every kernel the model set generates for the GPU compiles with NVRTC, on a
machine with no GPU (CI): `lathe compile MODEL --target cuda -o DIR` emits the CUDA translation unit
(DIR/model.cu) and builds it with NVRTC (DIR/model.cubin). A broken CUDA emitter, prelude or GPU
lowering fails here. (The conformance suite's kernels are checked the same way by
`lathe conformance --backend cuda --compile-only`, run by scripts/test.sh.)

Models: the 9 light models of the onnx package and the benchmark models (bench/models: ResNet-50,
MobileNetV2, BERT-base and GPT-2 small at sequence 128, built on first use), with the input shapes of
bench/models/zoo.make_inputs. The report must name at least one kernel, and the cubin must be written.
NVRTC: the system's (libnvrtc.so.13 / .12) or $LATHE_NVRTC (scripts/test.sh sets it to pip's wheel).
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
import zoo  # noqa: E402

LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)


def shapes_args(name):
    args = []
    for k, v in zoo.make_inputs(name, seed=0).items():
        args += ["--shapes", "%s:%s" % (k, "x".join(str(d) for d in v.shape))]
    return args


@pytest.mark.parametrize("name", zoo.ALL)
def test_model_cuda_kernels_compile_with_nvrtc(tmp_path, name):
    path = zoo.light_probe(name) if name.startswith("light_") else zoo.ensure_built(name)
    out = tmp_path / "cuda"
    r = subprocess.run([LATHE, "compile", path, "--target", "cuda", "-o", str(out)] + shapes_args(name),
                       capture_output=True, text=True, timeout=1800)
    text = r.stdout + r.stderr
    assert r.returncode == 0, f"lathe compile --target cuda {name} exited {r.returncode}:\n{text[-4000:]}"
    assert "no cubin" not in text, f"NVRTC not found (install it: scripts/setup.sh):\n{text[-2000:]}"
    assert (out / "model.cu").stat().st_size > 0
    assert (out / "model.cubin").stat().st_size > 0, text[-2000:]
    first = text.split("cuda: ", 1)[1].split(" kernels", 1)[0] if "cuda: " in text else "0"
    assert int(first) > 0, f"{name}: no kernel was generated for the GPU:\n{text[-2000:]}"


def depthwise_model(path, h, w, symbolic=False):
    """A 3x3 depthwise Conv (8 channels, pad 1) and a Relu: the GPU lowers it to the direct entry."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    dims = [1, 8, "h", "w"] if symbolic else [1, 8, h, w]
    wt = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 1, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], group=8, pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)], [wt])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def direct_modes(source):
    """The index mode argument (cuda_conv.h lt_conv_direct) of each call of the direct entry."""
    calls = [line for line in source.splitlines() if "lt_cuda_conv_f32_direct(a0" in line]
    return [c.split("gthr, ", 1)[1].split(",", 1)[0].strip() for c in calls]


@pytest.mark.parametrize("h,w,mode", [(64, 48, "2"), (8192, 8192, "1"), (16384, 16384, "0")])
def test_direct_conv_index_mode_by_size(tmp_path, h, w, mode):
    """32-bit offsets and one output a thread at ordinary sizes; a grid-stride loop once the grid is
    capped (2^28 outputs); 64-bit offsets past 2^31. Each builds with NVRTC."""
    path = str(tmp_path / "dw.onnx")
    depthwise_model(path, h, w)
    out = tmp_path / "cuda"
    r = subprocess.run([LATHE, "compile", path, "--target", "cuda", "--arch", "sm_90a", "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert direct_modes((out / "model.cu").read_text()) == [mode]
    assert (out / "model.cubin").stat().st_size > 0


def test_direct_conv_mode_stays_a_constant_for_every_shape(tmp_path):
    """Compiled for every shape, the mode is no run-time scalar: shapes of one bucket share it."""
    path = str(tmp_path / "dw.onnx")
    depthwise_model(path, 0, 0, symbolic=True)
    out = tmp_path / "code"
    r = subprocess.run([LATHE, "compile", path, "--target", "cuda", "--arch", "sm_90a", "--probe", "x:1x8x40x56",
                        "--probe", "x:1x8x33x21", "--dump-code", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "buckets: 1;" in r.stdout, r.stdout
    assert direct_modes((out / "model.cu").read_text()) == ["2"]


def data_dependent_model(path, op, n, classes=4, symbolic=False):
    """NonMaxSuppression of n boxes x `classes` classes, or a sorted Unique of n integers, each
    followed by a compiled node: the GPU lowers the op to a kernel on one block (lower_nms.c,
    lower_unique.c)."""
    import numpy as np
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    if op == "nms":
        inits = [nh.from_array(np.array([5], np.int64), "mo"), nh.from_array(np.array([0.5], np.float32), "iou")]
        nodes = [h.make_node("NonMaxSuppression", ["b", "s", "mo", "iou"], ["sel"]), h.make_node("Neg", ["sel"], ["y"])]
        inputs = [h.make_tensor_value_info("b", T.FLOAT, [1, n, 4]), h.make_tensor_value_info("s", T.FLOAT, [1, classes, n])]
    else:
        inits = []
        nodes = [h.make_node("Unique", ["x"], ["u", "ix", "inv", "cnt"], sorted=1), h.make_node("Mul", ["u", "cnt"], ["y"])]
        inputs = [h.make_tensor_value_info("x", T.INT64, ["n"] if symbolic else [n])]
    g = h.make_graph(nodes, op, inputs, [h.make_tensor_value_info("y", T.INT64, None)], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def launches(source, kernel):
    """The launch comment's block size of each emitted kernel whose comment names `kernel`."""
    out = []
    for chunk in source.split("/* lt_k")[1:]:
        head = chunk.split("*/", 1)[0]
        if kernel in head:
            out.append(int(head.split("block (", 1)[1].split(",", 1)[0]))
    return out


@pytest.mark.parametrize("op,n,classes,threads", [("nms", 300, 4, 32), ("nms", 200, 80, 96), ("nms", 50, 1500, 1024),
                                                  ("unique", 3, 0, 32), ("unique", 20000, 0, 1024)])
def test_data_dependent_kernels_on_a_block(tmp_path, op, n, classes, threads):
    """NonMaxSuppression takes a thread per (batch, class) pair, up to 1024 (more pairs: a thread takes
    several); Unique sorts on a block of up to 1024 threads, half its padded length. Each builds with
    NVRTC."""
    path = str(tmp_path / f"{op}.onnx")
    data_dependent_model(path, op, n, classes)
    out = tmp_path / "cuda"
    r = subprocess.run([LATHE, "compile", path, "--target", "cuda", "--arch", "sm_90a", "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    src = (out / "model.cu").read_text()
    assert launches(src, "NonMaxSuppressionPadded" if op == "nms" else "UniquePadded") == [threads], src[-3000:]
    assert "__syncthreads()" in src
    assert (out / "model.cubin").stat().st_size > 0


def test_unique_block_stays_1024_for_every_shape(tmp_path):
    """Compiled for every shape, the sort's block has 1024 threads whatever the size (a thread count
    is no run-time scalar)."""
    path = str(tmp_path / "uq.onnx")
    data_dependent_model(path, "unique", 0, symbolic=True)
    out = tmp_path / "code"
    r = subprocess.run([LATHE, "compile", path, "--target", "cuda", "--arch", "sm_90a", "--probe", "x:700",
                        "--probe", "x:3000", "--dump-code", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(launches((out / "model.cu").read_text(), "UniquePadded")) == {1024}
