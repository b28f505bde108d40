#!/usr/bin/env python3
"""make_sample.py [DIR] — write the sample models the README's commands use into DIR (default sample/):

  squeezenet.onnx            the onnx package's light SqueezeNet (input data_0: float[1,3,224,224],
                             output softmaxout_1: float[1,1000,1,1]), copied from the installed package
  data_0.npy                 the input its expected output was made with (a ramp: element i = i / n,
                             what `lathe run --fill ramp` gives)
  softmaxout_1_expected.npy  that expected output (the package's output_0.pb)
  mlp.onnx                   a tiny two-layer perceptron with a symbolic batch dimension (input x:
                             float[batch,64], output probs: float[batch,10]), random weights (seed 0)

Needs only numpy and onnx (scripts/setup.sh installs them). Rewrites the files every time (a few
hundred KB); scripts/run_sample.sh calls it.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def light_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def squeezenet(out):
    src = light_dir()
    shutil.copyfile(os.path.join(src, "light_squeezenet.onnx"), os.path.join(out, "squeezenet.onnx"))
    n = 1 * 3 * 224 * 224
    ramp = (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(1, 3, 224, 224)
    np.save(os.path.join(out, "data_0.npy"), ramp)
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(src, "light_squeezenet_output_0.pb")))
    np.save(os.path.join(out, "softmaxout_1_expected.npy"), want)


def mlp(out):
    rng = np.random.default_rng(0)
    w = lambda name, *shape: numpy_helper.from_array(  # noqa: E731
        (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        initializer=[w("w1", 64, 128), numpy_helper.from_array(np.zeros(128, np.float32), "b1"), w("w2", 128, 10)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="lathe make_sample.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "mlp.onnx"))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "sample"
    os.makedirs(out, exist_ok=True)
    squeezenet(out)
    mlp(out)
    print(f"sample models in {out}/: squeezenet.onnx (input data_0: float[1,3,224,224]), data_0.npy, "
          f"softmaxout_1_expected.npy, mlp.onnx (input x: float[batch,64])")


if __name__ == "__main__":
    main()
