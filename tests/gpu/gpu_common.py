"""gpu_common.py — what the scripts tests/gpu/run.sh calls share: a small CNN built with onnx.helper, and
the summary row each script prints and appends to run.sh's summary file.
"""
import numpy as np


def cnn(path):
    """Conv 3->8 (3x3, padded), Relu, GlobalAveragePool, Gemm 8->10, Softmax on x [2, 3, 16, 16]; random
    weights (seed 3); saved to path."""
    import onnx
    from onnx import TensorProto as T, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32))  # noqa: E731
    inits = [w(8, 3, 3, 3), w(8), w(8, 10), w(10)]
    for t, n in zip(inits, ["cw", "cb", "gw", "gb"]):
        t.name = n
    nodes = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "gw", "gb"], ["g"]),
             helper.make_node("Softmax", ["g"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", T.FLOAT, [2, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def report(name, failed, ok_text, summary=None):
    """Print every failure, then the row "NAME  ok|FAILED  text" (the first failure's text when one
    failed), append the row to summary when given; returns the exit status (1 when one failed)."""
    for f in failed:
        print("FAILED", f)
    line = f"{name:<28} {'FAILED' if failed else 'ok':<8} " + (ok_text if not failed else failed[0][:90])
    print(line)
    if summary:
        with open(summary, "a") as f:
            f.write(line + "\n")
    return 1 if failed else 0
