#!/usr/bin/env python3
"""export_paddle.py — export a Paddle model with paddle2onnx and keep a graph-only snapshot for the zoo.

Run offline by a developer, in a virtualenv of its own (Paddle is not needed by CI or by lathe's
tests: they read the snapshots). The snapshot in this folder was written with paddlepaddle 3.3.1
and paddle2onnx 2.1.0 on Python 3.11:

  python3 -m venv /tmp/venv-pd
  /tmp/venv-pd/bin/pip install paddlepaddle==3.3.1 paddle2onnx==2.1.0 packaging==26.3 \
      onnxruntime==1.32.0 onnx_graphsurgeon==0.6.1 sympy==1.14.0
  /tmp/venv-pd/bin/python bench/models/exported/export_paddle.py OUT_DIR [--only NAME,...]

The network is written out with the paddle API in the layout of PaddleClas' PP-LCNet (nothing is
downloaded), initialised as PaddleClas does (KaimingNormal convolutions; the BatchNorm statistics
randomized as export_torch.py's randomize_bn does), saved for inference by paddle.jit.save with an
InputSpec of [None, 3, None, None] and converted by paddle2onnx at opset 11, the opset PaddleOCR's
deployment guide passes, with its default optimization (Polygraphy's constant folding, which needs
onnxruntime, onnx_graphsurgeon and sympy: installed above, else Polygraphy pip-installs them itself).
Each unknown dim of the input is its own symbol: paddle2onnx 2.x names them DynamicDimension.0, .1
and .2 (`float[DynamicDimension.0,3,DynamicDimension.1,DynamicDimension.2]`). Then stripped by
export_torch.strip (float initializers of more than 64 elements keep name, dtype, dims and the
statistics of their values; bench/models/exported.py refills them).

Writes OUT_DIR/<name>_ci.onnx and OUT_DIR/exported.json; gzip the snapshot into this folder
(`gzip -9n`) and merge its entry into exported.json by hand.
"""
import os
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from export_torch import strip  # noqa: E402  (imports neither torch nor anything else heavy)
from export_tf import cli, manifest_entry  # noqa: E402  (TensorFlow is imported only by its builders)

OPSET = 11


def randomize_bn(layer, seed=0):
    """Untrained BatchNorm is the identity: give it spread statistics (export_torch.randomize_bn's)."""
    import paddle
    rng = np.random.default_rng(seed)
    for m in layer.sublayers():
        if isinstance(m, paddle.nn.BatchNorm2D):
            n = m._mean.shape[0]
            m._mean.set_value(rng.standard_normal(n).astype(np.float32) * 0.1)
            m._variance.set_value(rng.uniform(0.75, 1.25, n).astype(np.float32))
            m.weight.set_value(rng.uniform(0.75, 1.25, n).astype(np.float32))
            m.bias.set_value(rng.standard_normal(n).astype(np.float32) * 0.1)
    return layer


def pplcnet():
    """PP-LCNet (PaddleClas' layout) at scale 0.5 with two of the six 5x5 blocks of stage 5: a 3x3
    stride-2 stem, depthwise-separable blocks (depthwise Conv-BN-HardSwish, pointwise Conv-BN-HardSwish),
    squeeze-excite in the last stage (AdaptiveAvgPool2D, 1x1 Conv, ReLU, 1x1 Conv, Hardsigmoid, Mul),
    then global pooling, a 1x1 "last conv" to 1280 channels, HardSwish, Flatten and a Linear head.
    Input [?, 3, ?, ?]: any batch, height and width (the pooling is adaptive)."""
    import paddle
    from paddle import nn
    from paddle.nn.initializer import KaimingNormal
    scale, classes = 0.5, 100
    net = {  # kernel, in, out, stride, SE (PaddleClas' NET_CONFIG, blocks5 cut from 6 to 2 repeats)
        "blocks2": [[3, 16, 32, 1, False]],
        "blocks3": [[3, 32, 64, 2, False], [3, 64, 64, 1, False]],
        "blocks4": [[3, 64, 128, 2, False], [3, 128, 128, 1, False]],
        "blocks5": [[3, 128, 256, 2, False], [5, 256, 256, 1, False]],
        "blocks6": [[5, 256, 512, 2, True], [5, 512, 512, 1, True]],
    }

    def div(v, d=8):
        new = max(d, int(v + d / 2) // d * d)
        return new + d if new < 0.9 * v else new

    class ConvBN(nn.Layer):
        def __init__(self, k, cin, cout, s, groups=1):
            super().__init__()
            self.conv = nn.Conv2D(cin, cout, k, s, (k - 1) // 2, groups=groups,
                                  weight_attr=paddle.ParamAttr(initializer=KaimingNormal()), bias_attr=False)
            self.bn = nn.BatchNorm2D(cout)
            self.act = nn.Hardswish()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class SE(nn.Layer):
        def __init__(self, c, r=4):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.conv1 = nn.Conv2D(c, c // r, 1)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2D(c // r, c, 1)
            self.hsig = nn.Hardsigmoid()

        def forward(self, x):
            return paddle.multiply(x, self.hsig(self.conv2(self.relu(self.conv1(self.pool(x))))))

    class DepthwiseSeparable(nn.Layer):
        def __init__(self, k, cin, cout, s, se):
            super().__init__()
            self.dw = ConvBN(k, cin, cin, s, groups=cin)
            self.se = SE(cin) if se else None
            self.pw = ConvBN(1, cin, cout, 1)

        def forward(self, x):
            x = self.dw(x)
            if self.se is not None:
                x = self.se(x)
            return self.pw(x)

    class PPLCNet(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = ConvBN(3, 3, div(16 * scale), 2)
            blocks = []
            for name in ("blocks2", "blocks3", "blocks4", "blocks5", "blocks6"):
                for k, cin, cout, s, se in net[name]:
                    blocks.append(DepthwiseSeparable(k, div(cin * scale), div(cout * scale), s, se))
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.last_conv = nn.Conv2D(div(512 * scale), 1280, 1, bias_attr=False)
            self.act = nn.Hardswish()
            self.dropout = nn.Dropout(p=0.2, mode="downscale_in_infer")
            self.flatten = nn.Flatten(start_axis=1, stop_axis=-1)
            self.fc = nn.Linear(1280, classes)

        def forward(self, x):
            x = self.pool(self.blocks(self.conv1(x)))
            return self.fc(self.flatten(self.dropout(self.act(self.last_conv(x)))))

    return randomize_bn(PPLCNet()), [("x", "float32", ["?", 3, "?", "?"], "image", [1, 3, 64, 96])]


MODELS = {"pplcnet": pplcnet}
SOURCES = {"pplcnet": "PP-LCNet (PaddleClas layout, scale 0.5): BatchNormalization, HardSwish as HardSigmoid + Mul, SE "
                      "with HardSigmoid, unknown batch, height and width (DynamicDimension.N)"}


def export_one(name, path):
    import paddle
    import paddle2onnx
    paddle.seed(0)
    layer, specs = MODELS[name]()
    layer.eval()
    spec = [paddle.static.InputSpec([None if d == "?" else d for d in s[2]], s[1], s[0]) for s in specs]
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "inference")
        paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), prefix)
        program = prefix + (".json" if os.path.exists(prefix + ".json") else ".pdmodel")
        paddle2onnx.export(program, prefix + ".pdiparams", path, opset_version=OPSET, enable_onnx_checker=True)
    m = onnx.load(path)
    n = strip(m)
    onnx.save(m, path)
    return manifest_entry(m, path, f"paddle2onnx {paddle2onnx.__version__} (paddlepaddle {paddle.__version__})", specs,
                          SOURCES[name], n)


def main():
    return cli(MODELS, export_one, __doc__)


if __name__ == "__main__":
    sys.exit(main())
