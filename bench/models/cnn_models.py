"""cnn_models.py — the two convolutional benchmark models, random weights, fp32, batch 1, 3x224x224:

- resnet50(): ResNet-50 v1.5 (torchvision topology: bottleneck blocks [3, 4, 6, 3], the stride on the
  3x3 conv, 1x1 projection shortcuts) with explicit BatchNormalization nodes after every Conv (the
  ONNX model zoo form, which exercises lathe's Conv+BN folding), Flatten + Gemm(transB=1) head.
- mobilenetv2(): MobileNetV2 1.0 (inverted residuals t,c,n,s as in the paper) in the form PyTorch's
  exporter writes in eval mode: BN folded into Conv biases, ReLU6 as Clip(0, 6) with Constant bounds,
  depthwise convs as group=C Conv, GlobalAveragePool + Flatten + Gemm head.

Weights: He-normal convs (std sqrt(2 / fan_in)), so activations keep their scale through ReLU; the last
BN of each residual branch has a small gamma (0.25) so the residual sum stays O(1) over 16 blocks
instead of doubling its variance each block. The logits come out O(1) for N(0, 1) inputs.
"""
import numpy as np

from graph_builder import Builder


def _conv(b, x, leaf, cin, cout, k, stride=1, group=1, bias=False, std=None):
    with b.scope(leaf):
        fan_in = cin // group * k * k
        w = b.normal("weight", (cout, cin // group, k, k), std if std is not None else np.sqrt(2.0 / fan_in))
        ins = [x, w] + ([b.normal("bias", (cout,), 0.05)] if bias else [])
    with b.scope(leaf):
        return b.op("Conv", ins, dilations=[1, 1], group=group, kernel_shape=[k, k], pads=[k // 2] * 4,
                    strides=[stride, stride])


def _bn(b, x, leaf, c, gamma=1.0):
    with b.scope(leaf):
        scale = b.weight("weight", (gamma * b.rng.uniform(0.8, 1.2, c)).astype(np.float32))
        bias = b.normal("bias", (c,), 0.05)
        mean = b.normal("running_mean", (c,), 0.05)
        var = b.uniform("running_var", (c,), 0.8, 1.2)
        return b.op("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5, momentum=0.9)


def resnet50(seed=50):
    b = Builder("resnet50", seed)
    x = b.input("input", np.float32, [1, 3, 224, 224])
    y = _conv(b, x, "conv1", 3, 64, 7, stride=2)
    y = b.op("Relu", [_bn(b, y, "bn1", 64)])
    y = b.op("MaxPool", [y], ceil_mode=0, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    cin = 64
    for li, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], 1):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            cout = width * 4
            with b.scope(f"layer{li}.{bi}"):
                h = b.op("Relu", [_bn(b, _conv(b, y, "conv1", cin, width, 1), "bn1", width)])
                h = b.op("Relu", [_bn(b, _conv(b, h, "conv2", width, width, 3, stride=s), "bn2", width)])
                h = _bn(b, _conv(b, h, "conv3", width, cout, 1), "bn3", cout, gamma=0.25)
                if bi == 0:
                    with b.scope("downsample"):
                        sc = _bn(b, _conv(b, y, "0", cin, cout, 1, stride=s, std=np.sqrt(1.0 / cin)), "1", cout)
                else:
                    sc = y
                y = b.op("Relu", [b.op("Add", [h, sc])])
            cin = cout
    y = b.op("GlobalAveragePool", [y])
    y = b.op("Flatten", [y], axis=1)
    with b.scope("fc"):
        w = b.normal("weight", (1000, 2048), np.sqrt(1.0 / 2048))
        bias = b.normal("bias", (1000,), 0.05)
        y = b.op("Gemm", [y, w, bias], alpha=1.0, beta=1.0, transB=1)
    b.nodes[-1].output[0] = "logits"
    b.output("logits", np.float32, [1, 1000])
    return b.model("ResNet-50 v1.5, random weights (lathe bench)")


def mobilenetv2(seed=2):
    b = Builder("mobilenetv2", seed)
    x = b.input("input", np.float32, [1, 3, 224, 224])

    def relu6(v):
        return b.op("Clip", [v, b.const(0.0, np.float32), b.const(6.0, np.float32)])

    with b.scope("features.0"):
        y = relu6(_conv(b, x, "0", 3, 32, 3, stride=2, bias=True))
    cin, idx = 32, 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            with b.scope(f"features.{idx}.conv"):
                h, j = y, 0
                if t != 1:
                    h = relu6(_conv(b, h, f"{j}.0", cin, hidden, 1, bias=True))
                    j += 1
                h = relu6(_conv(b, h, f"{j}.0", hidden, hidden, 3, stride=stride, group=hidden, bias=True))
                # the linear bottleneck: no activation, smaller weights keep the residual sum bounded
                h = _conv(b, h, f"{j + 1}", hidden, c, 1, bias=True, std=np.sqrt(0.5 / hidden))
                y = b.op("Add", [y, h]) if stride == 1 and cin == c else h
            cin, idx = c, idx + 1
    with b.scope(f"features.{idx}"):
        y = relu6(_conv(b, y, "0", cin, 1280, 1, bias=True))
    y = b.op("GlobalAveragePool", [y])
    y = b.op("Flatten", [y], axis=1)
    with b.scope("classifier.1"):
        w = b.normal("weight", (1000, 1280), np.sqrt(1.0 / 1280))
        bias = b.normal("bias", (1000,), 0.05)
        y = b.op("Gemm", [y, w, bias], alpha=1.0, beta=1.0, transB=1)
    b.nodes[-1].output[0] = "logits"
    b.output("logits", np.float32, [1, 1000])
    return b.model("MobileNetV2 1.0 224, random weights, BN folded (lathe bench)")
