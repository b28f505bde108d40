#!/usr/bin/env python3
"""export_torch.py — export real architectures with PyTorch's exporters and keep graph-only snapshots.

Run where torch, torchvision and transformers are installed (the GPU machine has them; no GPU is
used). Each model is built from its library with random initialisation (torchvision's and Hugging
Face's own init schemes), exported by torch.onnx's TorchScript exporter (opset 17) and, for the
models listed in DYNAMO, by its torch.export-based exporter (dynamo=True, opset 18), then stripped:
every float initializer of more than STRIP_MIN elements keeps its name, dtype and dims but loses its
data, and records in its doc_string the statistics of the values the framework drew
("lathe-zoo-stripped mean=M std=S min=A max=B"), so bench/models/exported.py refills it with seeded
values of the same distribution (not N(0,1), which saturates deep nets). Integer tensors (shapes,
indices) and small ones are kept as they are. What is kept is exactly the graph the exporter emits.

  python3 bench/models/export_torch.py OUT_DIR [--only NAME,...] [--seconds N]

Writes OUT_DIR/<name>.onnx (and <name>.dynamo.onnx) and OUT_DIR/exported.json: per model its source,
exporter, opset, inputs (name, dtype, shape with symbolic dims, kind: image / tokens VOCAB / mask /
audio / sequence) and the configuration (full: the size deployed; ci: fewer layers, smaller width,
same ops). A model that fails to export is listed with its error instead.
"""
import argparse
import json
import os
import sys
import time
import traceback

import numpy as np
import onnx
from onnx import numpy_helper

STRIP_MIN = 64


def strip(model):
    """Float initializers of more than STRIP_MIN elements: data dropped, statistics kept."""
    n = 0
    for t in model.graph.initializer:
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                               onnx.TensorProto.DOUBLE):
            continue
        if t.data_location == onnx.TensorProto.EXTERNAL:
            continue
        a = numpy_helper.to_array(t).astype(np.float64)
        if a.size <= STRIP_MIN:
            continue
        doc = "lathe-zoo-stripped mean=%.9g std=%.9g min=%.9g max=%.9g" % (a.mean(), a.std(), a.min(), a.max())
        dims, dt, name = list(t.dims), t.data_type, t.name
        t.Clear()
        t.name, t.data_type, t.doc_string = name, dt, doc
        t.dims.extend(dims)
        n += 1
    return n


# ---- the models: name -> builder(size) returning (module, example inputs, input specs) ----

def tv(name, **kw):
    import torchvision
    return getattr(torchvision.models, name)(weights=None, **kw)


def image_model(fn, hw_full=224, hw_ci=64, channels=3):
    def build(size):
        import torch
        hw = hw_full if size == "full" else hw_ci
        m = fn()
        return m, (torch.randn(1, channels, hw, hw),), [("input", "float32", ["batch", channels, hw, hw], "image")]
    return build


def hf_text(cls_name, config_fn, extra_inputs=(), vocab_attr="vocab_size", seq_full=128, seq_ci=16, mask=True):
    def build(size):
        import torch
        import transformers
        cfg = config_fn(size)
        model = getattr(transformers, cls_name)(cfg)
        seq = seq_full if size == "full" else seq_ci
        vocab = getattr(cfg, vocab_attr)
        ids = torch.randint(0, vocab, (1, seq))
        args, specs = [ids], [("input_ids", "int64", ["batch", "sequence"], "tokens %d" % vocab)]
        if mask:
            args.append(torch.ones(1, seq, dtype=torch.int64))
            specs.append(("attention_mask", "int64", ["batch", "sequence"], "mask"))
        return Wrap(model), tuple(args), specs
    return build


def Wrap(model):
    """A module returning only the first output (logits / last hidden state) as a tensor."""
    import torch

    class W(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            kw = {"input_ids": args[0]}
            if len(args) > 1:
                kw["attention_mask"] = args[1]
            out = self.m(**kw, return_dict=False, **({"use_cache": False} if "use_cache" in
                                                      self.m.forward.__code__.co_varnames else {}))
            return out[0]
    return W(model).eval()


def cfg(cls, full, ci):
    def make(size):
        import transformers
        return getattr(transformers, cls)(**(full if size == "full" else ci))
    return make


def recurrent(kind, bidir):
    def build(size):
        import torch
        hidden, layers, feat = (256, 2, 80) if size == "full" else (32, 2, 16)

        class R(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(torch.nn, kind)(feat, hidden, num_layers=layers, batch_first=True, bidirectional=bidir)
                self.out = torch.nn.Linear(hidden * (2 if bidir else 1), 10)

            def forward(self, x):
                y, _ = self.rnn(x)
                return self.out(y)
        seq = 50 if size == "full" else 12
        return R().eval(), (torch.randn(1, seq, feat),), [("features", "float32", ["batch", "time", feat], "sequence")]
    return build


def crnn(size):
    import torch
    h, w, classes = (32, 128, 97) if size == "full" else (32, 64, 37)
    ch = 64 if size == "full" else 16

    class C(torch.nn.Module):  # a CRNN text recogniser: CNN, then a bidirectional LSTM, then a CTC head
        def __init__(self):
            super().__init__()
            c = torch.nn
            self.cnn = c.Sequential(c.Conv2d(1, ch, 3, padding=1), c.BatchNorm2d(ch), c.ReLU(), c.MaxPool2d(2),
                                    c.Conv2d(ch, ch * 2, 3, padding=1), c.BatchNorm2d(ch * 2), c.ReLU(), c.MaxPool2d(2),
                                    c.Conv2d(ch * 2, ch * 2, 3, padding=1), c.ReLU(), c.MaxPool2d((8, 1)))
            self.rnn = c.LSTM(ch * 2, ch, bidirectional=True, batch_first=True)
            self.fc = c.Linear(ch * 2, classes)

        def forward(self, x):
            f = self.cnn(x).squeeze(2).permute(0, 2, 1)
            y, _ = self.rnn(f)
            return self.fc(y).log_softmax(-1)
    return C().eval(), (torch.randn(1, 1, h, w),), [("image", "float32", ["batch", 1, h, w], "image")]


def whisper_encoder(size):
    import torch
    import transformers
    c = dict(d_model=384, encoder_layers=4, encoder_attention_heads=6, decoder_layers=1, num_mel_bins=80,
             max_source_positions=1500) if size == "full" else \
        dict(d_model=64, encoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4, decoder_layers=1,
             num_mel_bins=16,
             max_source_positions=50)
    enc = transformers.WhisperModel(transformers.WhisperConfig(**c)).get_encoder()

    class E(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = enc

        def forward(self, x):
            return self.e(x, return_dict=False)[0]
    frames = 2 * c["max_source_positions"]
    return E().eval(), (torch.randn(1, c["num_mel_bins"], frames),), \
        [("input_features", "float32", ["batch", c["num_mel_bins"], frames], "audio")]


# ---- hand-written architectures in the style of their reference implementations ----

def conv_bn_act(c, cin, cout, k=3, s=1, act="silu", groups=1):
    """Ultralytics' Conv: Conv2d (no bias) + BatchNorm2d + SiLU (ReLU for the CNNs that use it)."""
    layers = [c.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), c.BatchNorm2d(cout)]
    if act:
        layers.append(c.SiLU() if act == "silu" else c.ReLU())
    return c.Sequential(*layers)


def randomize_bn(module, seed=0):
    """Untrained BatchNorm is the identity; give running statistics and affine parameters spread so the
    exported graph folds real values (the snapshot keeps them only through its statistics)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
    return module


def yolov8(size):
    """A YOLOv8-style detector (ultralytics' layout, written out): C2f blocks (Split, Concat), SPPF
    (three MaxPools), nearest Resize upsampling, a decoupled head with DFL (Softmax over 16 bins and a
    fixed 1x1 conv), anchor decode and Sigmoid scores: output [batch, 4 + classes, anchors]."""
    import torch
    c = torch.nn
    hw, w, d, nc = (320, 16, 1, 80) if size == "full" else (128, 8, 1, 20)
    reg = 16

    class C2f(c.Module):
        def __init__(self, cin, cout, n, shortcut):
            super().__init__()
            self.h = cout // 2
            self.cv1 = conv_bn_act(c, cin, 2 * self.h, 1)
            self.cv2 = conv_bn_act(c, (2 + n) * self.h, cout, 1)
            self.m = c.ModuleList(c.Sequential(conv_bn_act(c, self.h, self.h), conv_bn_act(c, self.h, self.h))
                                  for _ in range(n))
            self.shortcut = shortcut

        def forward(self, x):
            y = list(self.cv1(x).split((self.h, self.h), 1))
            for m in self.m:
                y.append(y[-1] + m(y[-1]) if self.shortcut else m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class SPPF(c.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.cv1 = conv_bn_act(c, cin, cin // 2, 1)
            self.cv2 = conv_bn_act(c, cin // 2 * 4, cout, 1)
            self.m = c.MaxPool2d(5, 1, 2)

        def forward(self, x):
            y = [self.cv1(x)]
            for _ in range(3):
                y.append(self.m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class Y(c.Module):
        def __init__(self):
            super().__init__()
            ch = [w * 4, w * 8, w * 16]
            self.stem = c.Sequential(conv_bn_act(c, 3, w, 3, 2), conv_bn_act(c, w, w * 2, 3, 2), C2f(w * 2, w * 2, d, True))
            self.p3 = c.Sequential(conv_bn_act(c, w * 2, ch[0], 3, 2), C2f(ch[0], ch[0], d, True))
            self.p4 = c.Sequential(conv_bn_act(c, ch[0], ch[1], 3, 2), C2f(ch[1], ch[1], d, True))
            self.p5 = c.Sequential(conv_bn_act(c, ch[1], ch[2], 3, 2), C2f(ch[2], ch[2], d, True), SPPF(ch[2], ch[2]))
            self.up = c.Upsample(scale_factor=2, mode="nearest")
            self.n4 = C2f(ch[2] + ch[1], ch[1], d, False)
            self.n3 = C2f(ch[1] + ch[0], ch[0], d, False)
            self.d3 = conv_bn_act(c, ch[0], ch[0], 3, 2)
            self.n4b = C2f(ch[0] + ch[1], ch[1], d, False)
            self.d4 = conv_bn_act(c, ch[1], ch[1], 3, 2)
            self.n5b = C2f(ch[1] + ch[2], ch[2], d, False)
            c2, c3 = max(16, ch[0] // 4, reg * 4), max(ch[0], min(nc, 100))
            self.box = c.ModuleList(c.Sequential(conv_bn_act(c, x, c2), conv_bn_act(c, c2, c2), c.Conv2d(c2, 4 * reg, 1))
                                    for x in ch)
            self.cls = c.ModuleList(c.Sequential(conv_bn_act(c, x, c3), conv_bn_act(c, c3, c3), c.Conv2d(c3, nc, 1))
                                    for x in ch)
            self.dfl = c.Conv2d(reg, 1, 1, bias=False).requires_grad_(False)
            self.dfl.weight.data[:] = torch.arange(reg, dtype=torch.float).view(1, reg, 1, 1)
            self.strides = (8, 16, 32)

        def forward(self, x):
            x = self.stem(x)
            p3 = self.p3(x)
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            t4 = self.n4(torch.cat([self.up(p5), p4], 1))
            o3 = self.n3(torch.cat([self.up(t4), p3], 1))
            o4 = self.n4b(torch.cat([self.d3(o3), t4], 1))
            o5 = self.n5b(torch.cat([self.d4(o4), p5], 1))
            feats = [o3, o4, o5]
            b = x.shape[0]
            outs, anchors, strides = [], [], []
            for i, f in enumerate(feats):
                outs.append(torch.cat([self.box[i](f), self.cls[i](f)], 1).view(b, 4 * reg + nc, -1))
                h, wd = f.shape[2], f.shape[3]
                sy, sx = torch.meshgrid(torch.arange(h, dtype=torch.float) + 0.5, torch.arange(wd, dtype=torch.float) + 0.5,
                                        indexing="ij")
                anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
                strides.append(torch.full((h * wd, 1), float(self.strides[i])))
            y = torch.cat(outs, 2)
            anc = torch.cat(anchors, 0).transpose(0, 1).unsqueeze(0)
            st = torch.cat(strides, 0).transpose(0, 1)
            box, cls = y.split((4 * reg, nc), 1)
            a = box.shape[2]
            dist = self.dfl(box.view(b, 4, reg, a).transpose(2, 1).softmax(1)).view(b, 4, a)
            lt, rb = dist.chunk(2, 1)
            x1y1, x2y2 = anc - lt, anc + rb
            xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * st
            return torch.cat((xywh, cls.sigmoid()), 1)
    return randomize_bn(Y()).eval(), (torch.randn(1, 3, hw, hw),), [("images", "float32", ["batch", 3, hw, hw], "image")]


def yolox(size):
    """A YOLOX-style detector: Focus (four strided Slices + Concat), CSP blocks with SiLU, a PAN neck
    with nearest Resize, the decoupled head (cls / reg / obj) and the grid decode (Exp of wh)."""
    import torch
    c = torch.nn
    hw, w, nc = (320, 16, 80) if size == "full" else (128, 8, 20)

    class CSP(c.Module):
        def __init__(self, cin, cout, shortcut=True):
            super().__init__()
            h = cout // 2
            self.a, self.b = conv_bn_act(c, cin, h, 1), conv_bn_act(c, cin, h, 1)
            self.m = c.Sequential(conv_bn_act(c, h, h, 1), conv_bn_act(c, h, h, 3))
            self.out = conv_bn_act(c, 2 * h, cout, 1)
            self.shortcut = shortcut

        def forward(self, x):
            a = self.a(x)
            a = a + self.m(a) if self.shortcut else self.m(a)
            return self.out(torch.cat([a, self.b(x)], 1))

    class X(c.Module):
        def __init__(self):
            super().__init__()
            self.focus = conv_bn_act(c, 12, w, 3)
            self.d2 = c.Sequential(conv_bn_act(c, w, 2 * w, 3, 2), CSP(2 * w, 2 * w))
            self.d3 = c.Sequential(conv_bn_act(c, 2 * w, 4 * w, 3, 2), CSP(4 * w, 4 * w))
            self.d4 = c.Sequential(conv_bn_act(c, 4 * w, 8 * w, 3, 2), CSP(8 * w, 8 * w))
            self.d5 = c.Sequential(conv_bn_act(c, 8 * w, 16 * w, 3, 2), CSP(16 * w, 16 * w, False))
            self.lat5 = conv_bn_act(c, 16 * w, 8 * w, 1)
            self.c4 = CSP(16 * w, 8 * w, False)
            self.lat4 = conv_bn_act(c, 8 * w, 4 * w, 1)
            self.c3 = CSP(8 * w, 4 * w, False)
            self.up = c.Upsample(scale_factor=2, mode="nearest")
            self.stems = c.ModuleList(conv_bn_act(c, x, 4 * w, 1) for x in (4 * w, 8 * w, 8 * w))
            self.cls = c.ModuleList(c.Sequential(conv_bn_act(c, 4 * w, 4 * w), conv_bn_act(c, 4 * w, 4 * w),
                                                 c.Conv2d(4 * w, nc, 1)) for _ in range(3))
            self.reg = c.ModuleList(c.Sequential(conv_bn_act(c, 4 * w, 4 * w), conv_bn_act(c, 4 * w, 4 * w)) for _ in range(3))
            self.box = c.ModuleList(c.Conv2d(4 * w, 4, 1) for _ in range(3))
            self.obj = c.ModuleList(c.Conv2d(4 * w, 1, 1) for _ in range(3))

        def forward(self, x):
            x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)
            x = self.d2(self.focus(x))
            p3 = self.d3(x)
            p4 = self.d4(p3)
            p5 = self.d5(p4)
            l5 = self.lat5(p5)
            f4 = self.c4(torch.cat([self.up(l5), p4], 1))
            l4 = self.lat4(f4)
            f3 = self.c3(torch.cat([self.up(l4), p3], 1))
            outs, grids, strides = [], [], []
            for i, (f, s) in enumerate(zip((f3, f4, l5), (8, 16, 32))):
                t = self.stems[i](f)
                r = self.reg[i](t)
                o = torch.cat([self.box[i](r), self.obj[i](r).sigmoid(), self.cls[i](t).sigmoid()], 1)
                b, _, h, wd = o.shape
                outs.append(o.flatten(2))
                yv, xv = torch.meshgrid(torch.arange(h), torch.arange(wd), indexing="ij")
                grids.append(torch.stack((xv, yv), 2).view(1, -1, 2).float())
                strides.append(torch.full((1, h * wd, 1), float(s)))
            o = torch.cat(outs, 2).permute(0, 2, 1)
            g, st = torch.cat(grids, 1), torch.cat(strides, 1)
            return torch.cat([(o[..., :2] + g) * st, o[..., 2:4].exp() * st, o[..., 4:]], -1)
    return randomize_bn(X()).eval(), (torch.randn(1, 3, hw, hw),), [("images", "float32", ["batch", 3, hw, hw], "image")]


def dbnet(size):
    """A DBNet/U-Net-style text detector: a CNN encoder, an FPN decoder (nearest Resize, Add, Concat)
    and the DB head (Conv-BN-ReLU, two ConvTranspose 2x2 stride 2, Sigmoid); height and width are
    unknown dims as paddle2onnx writes them."""
    import torch
    c = torch.nn
    hw, w = (640, 16) if size == "full" else (96, 8)

    class D(c.Module):
        def __init__(self):
            super().__init__()
            chans = [w, 2 * w, 4 * w, 8 * w]
            self.stages = c.ModuleList()
            cin = 3
            for i, ch in enumerate(chans):  # strides 4, 8, 16, 32
                self.stages.append(c.Sequential(conv_bn_act(c, cin, ch, 3, 2, act="relu"),
                                                conv_bn_act(c, ch, ch, 3, 2 if i == 0 else 1, act="relu")))
                cin = ch
            self.lat = c.ModuleList(c.Conv2d(ch, 4 * w, 1, bias=False) for ch in chans)
            self.smooth = c.ModuleList(c.Conv2d(4 * w, w, 3, padding=1, bias=False) for _ in chans)
            self.head = c.Sequential(c.Conv2d(4 * w, w, 3, padding=1, bias=False), c.BatchNorm2d(w), c.ReLU(),
                                     c.ConvTranspose2d(w, w, 2, 2), c.BatchNorm2d(w), c.ReLU(),
                                     c.ConvTranspose2d(w, 1, 2, 2), c.Sigmoid())

        def forward(self, x):
            feats = []
            for s in self.stages:
                x = s(x)
                feats.append(x)
            lat = [l(f) for l, f in zip(self.lat, feats)]
            for i in range(len(lat) - 1, 0, -1):
                lat[i - 1] = lat[i - 1] + torch.nn.functional.interpolate(lat[i], scale_factor=2, mode="nearest")
            outs = [self.smooth[i](lat[i]) for i in range(len(lat))]
            outs = [torch.nn.functional.interpolate(o, scale_factor=2 ** i, mode="nearest") for i, o in enumerate(outs)]
            return self.head(torch.cat(outs[::-1], 1))
    return randomize_bn(D()).eval(), (torch.randn(1, 3, hw, hw),), [("x", "float32", ["batch", 3, "height", "width"], "image")]


def detr(size):
    """Hugging Face's DetrForObjectDetection (its own ResNet backbone, no timm, nothing downloaded):
    sine position embeddings from the pixel mask (CumSum), encoder-decoder attention, learned queries;
    output [batch, queries, classes + 1 + 4] (logits and boxes)."""
    import torch
    import transformers
    if size == "full":
        bb = transformers.ResNetConfig(depths=[2, 2, 2, 2], hidden_sizes=[64, 128, 256, 512], embedding_size=64,
                                       layer_type="basic", out_features=["stage4"])
        kw = dict(d_model=256, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
                  encoder_ffn_dim=2048, decoder_ffn_dim=2048, num_queries=100, num_labels=91)
        hw = 512
    else:
        bb = transformers.ResNetConfig(depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 48, 64], embedding_size=16,
                                       layer_type="basic", out_features=["stage4"])
        kw = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                  encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=20, num_labels=10)
        hw = 128
    cfg = transformers.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone=None,
                                  backbone_config=bb, **kw)
    model = transformers.DetrForObjectDetection(cfg).eval()

    class W(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, x):
            out = self.m(pixel_values=x, return_dict=False)
            return torch.cat([out[0], out[1]], -1)
    return randomize_bn(W()).eval(), (torch.randn(1, 3, hw, hw),), [("pixel_values", "float32", ["batch", 3, hw, hw],
                                                                      "image")]


def kws(size):
    """A DS-CNN keyword spotter (the ARM 'Hello Edge' layout): MFCC [1, 49, 10] in, a strided conv,
    depthwise-separable blocks, global average pooling, 12 classes."""
    import torch
    c = torch.nn
    ch = 172 if size == "full" else 32

    class K(c.Module):
        def __init__(self):
            super().__init__()
            layers = [c.Conv2d(1, ch, (10, 4), (2, 2), (5, 1), bias=False), c.BatchNorm2d(ch), c.ReLU()]
            for _ in range(4):
                layers += [c.Conv2d(ch, ch, 3, 1, 1, groups=ch, bias=False), c.BatchNorm2d(ch), c.ReLU(),
                           c.Conv2d(ch, ch, 1, bias=False), c.BatchNorm2d(ch), c.ReLU()]
            self.f = c.Sequential(*layers, c.AdaptiveAvgPool2d(1), c.Flatten())
            self.fc = c.Linear(ch, 12)

        def forward(self, x):
            return self.fc(self.f(x))
    return randomize_bn(K()).eval(), (torch.randn(1, 1, 49, 10),), [("mfcc", "float32", ["batch", 1, 49, 10], "audio")]


def vad(size):
    """A Silero-style voice-activity detector, scripted so the exporter writes its control flow: an If on
    the sample rate input picks one of two branches (16 kHz / 8 kHz), each an STFT as a Conv1d with a
    fixed basis, the magnitude, a conv encoder, an LSTM and a sigmoid head; output [batch, 1]."""
    import torch
    c = torch.nn
    hid = 64 if size == "full" else 16

    def stft_basis(n_fft):
        t = torch.arange(n_fft, dtype=torch.float)
        k = torch.arange(n_fft // 2 + 1, dtype=torch.float).unsqueeze(1)
        win = torch.hann_window(n_fft)
        ang = 2 * torch.pi * k * t / n_fft
        return torch.cat([torch.cos(ang) * win, -torch.sin(ang) * win], 0).unsqueeze(1)

    class Branch(c.Module):
        def __init__(self, n_fft):
            super().__init__()
            self.bins = n_fft // 2 + 1
            self.hop = n_fft // 2
            self.register_buffer("basis", stft_basis(n_fft))
            self.enc = c.Sequential(c.Conv1d(self.bins, hid, 3, padding=1), c.ReLU(), c.Conv1d(hid, hid, 3, padding=1),
                                    c.ReLU())
            self.rnn = c.LSTM(hid, hid, batch_first=True)
            self.out = c.Linear(hid, 1)

        def forward(self, x):
            s = torch.nn.functional.conv1d(x.unsqueeze(1), self.basis, stride=self.hop)
            re, im = s[:, :self.bins], s[:, self.bins:]
            mag = torch.sqrt(re * re + im * im + 1e-9)
            h = self.enc(mag).permute(0, 2, 1)
            y, _ = self.rnn(h)
            return torch.sigmoid(self.out(y)).mean(1)

    class V(c.Module):
        def __init__(self):
            super().__init__()
            self.b16 = Branch(256)
            self.b8 = Branch(128)

        def forward(self, x, sr):
            if bool(sr == 16000):
                return self.b16(x)
            return self.b8(x)
    m = torch.jit.script(V().eval())
    return m, (torch.randn(1, 512), torch.tensor(16000, dtype=torch.int64)), \
        [("input", "float32", ["batch", 512], "audio"), ("sr", "int64", [], "value 16000")]


def half(build_fn):
    """The model in float16 on the GPU, as users export for TensorRT / onnxruntime-gpu."""
    def build(size):
        import torch
        m, args, specs = build_fn(size)
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        m = m.half().to(dev)
        args = tuple(a.half().to(dev) if a.is_floating_point() else a.to(dev) for a in args)
        return m, args, [(n, "float16" if dt == "float32" else dt, shp, kind) for n, dt, shp, kind in specs]
    return build


MODELS = {
    "resnet18": image_model(lambda: tv("resnet18")),
    "resnet50": image_model(lambda: tv("resnet50")),
    "mobilenet_v2": image_model(lambda: tv("mobilenet_v2")),
    "mobilenet_v3_large": image_model(lambda: tv("mobilenet_v3_large")),
    "efficientnet_b0": image_model(lambda: tv("efficientnet_b0")),
    "convnext_tiny": image_model(lambda: tv("convnext_tiny")),
    "regnet_y_400mf": image_model(lambda: tv("regnet_y_400mf")),
    "densenet121": image_model(lambda: tv("densenet121")),
    "googlenet": image_model(lambda: tv("googlenet", aux_logits=False, init_weights=True)),
    "shufflenet_v2": image_model(lambda: tv("shufflenet_v2_x1_0")),
    "vit_b_16": image_model(lambda: tv("vit_b_16"), hw_ci=224),
    "swin_t": image_model(lambda: tv("swin_t"), hw_ci=224),
    "lraspp_mobilenet_v3": image_model(lambda: tv_seg("lraspp_mobilenet_v3_large"), hw_ci=128),
    "deeplabv3_mobilenet_v3": image_model(lambda: tv_seg("deeplabv3_mobilenet_v3_large"), hw_ci=128),
    "inception_v3": image_model(lambda: tv("inception_v3", aux_logits=False, init_weights=True), hw_full=299, hw_ci=96),
    "resnext50_32x4d": image_model(lambda: tv("resnext50_32x4d")),
    "mnasnet1_0": image_model(lambda: tv("mnasnet1_0")),
    "bert": hf_text("BertModel", cfg("BertConfig", {}, dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                            intermediate_size=128, vocab_size=1000))),
    "distilbert": hf_text("DistilBertModel", cfg("DistilBertConfig", {}, dict(dim=64, n_layers=2, n_heads=4,
                                                                            hidden_dim=128, vocab_size=1000))),
    "gpt2": hf_text("GPT2LMHeadModel", cfg("GPT2Config", {}, dict(n_embd=64, n_layer=2, n_head=4, vocab_size=1000))),
    "llama": hf_text("LlamaForCausalLM", cfg(
        "LlamaConfig",
        dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=2, num_attention_heads=32,
             num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048),
        dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             vocab_size=1000, max_position_embeddings=128))),
    "t5_encoder": hf_text("T5EncoderModel", cfg("T5Config", dict(d_model=512, d_ff=2048, num_layers=6, num_heads=8),
                                                dict(d_model=64, d_ff=128, num_layers=2, num_heads=4, vocab_size=1000))),
    "clip_text": hf_text("CLIPTextModel", cfg("CLIPTextConfig", {}, dict(hidden_size=64, intermediate_size=128,
                                                                        num_hidden_layers=2, num_attention_heads=4,
                                                                        vocab_size=1000)), seq_full=77, seq_ci=16),
    "whisper_encoder": whisper_encoder,
    "lstm_bidir": recurrent("LSTM", True),
    "gru": recurrent("GRU", False),
    "crnn": crnn,
    "yolov8": yolov8,
    "yolox": yolox,
    "dbnet": dbnet,
    "detr": detr,
    "kws_dscnn": kws,
    "vad": vad,
    "resnet18_fp16": half(image_model(lambda: tv("resnet18"))),
}
DYNAMO = ["resnet18", "gpt2", "llama", "vit_b_16"]


def tv_seg(name):
    import torch
    import torchvision

    class S(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)

        def forward(self, x):
            return self.m(x)["out"]
    return S()


def export_one(name, size, dynamo, path):
    import torch
    module, args, specs = MODELS[name](size)
    module.eval()
    names = [s[0] for s in specs]
    dyn = {s[0]: {i: d for i, d in enumerate(s[2]) if isinstance(d, str)} for s in specs}
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(module, args, path, input_names=names, output_names=["output"], dynamo=True,
                              opset_version=18, external_data=False)
        else:
            torch.onnx.export(module, args, path, input_names=names, output_names=["output"], dynamo=False,
                              opset_version=17, dynamic_axes={**dyn, "output": {0: "batch"}})
    m = onnx.load(path)
    stripped = strip(m)
    onnx.save(m, path)
    return {"size": size, "exporter": "torch.export (dynamo)" if dynamo else "torchscript",
            "opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
            "inputs": [{"name": s[0], "dtype": s[1], "shape": s[2], "kind": s[3], "example": list(a.shape)}
                       for s, a in zip(specs, args)],
            "nodes": len(m.graph.node), "stripped": stripped, "bytes": os.path.getsize(path),
            "ops": sorted({n.op_type for n in m.graph.node})}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--only", default=None)
    ap.add_argument("--seconds", type=float, default=1e9, help="start no export after this long")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch
    torch.manual_seed(0)
    names = a.only.split(",") if a.only else list(MODELS)
    man, t0 = {}, time.time()
    for name in names:
        for size in ("ci", "full"):
            for dynamo in ([False, True] if name in DYNAMO else [False]):
                tag = f"{name}_{size}" + (".dynamo" if dynamo else "")
                if time.time() - t0 > a.seconds:
                    man[tag] = {"error": "not exported (time budget)"}
                    continue
                t = time.time()
                try:
                    torch.manual_seed(0)
                    man[tag] = export_one(name, size, dynamo, os.path.join(a.out, tag + ".onnx"))
                    man[tag]["seconds"] = round(time.time() - t, 1)
                    print(f"{tag}: {man[tag]['nodes']} nodes, {man[tag]['bytes']} bytes, {man[tag]['seconds']} s",
                          flush=True)
                except Exception as e:  # noqa: BLE001 - reported per model
                    man[tag] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
                    print(f"{tag}: FAILED {man[tag]['error']}", flush=True)
                    traceback.print_exc(limit=2)
                with open(os.path.join(a.out, "exported.json"), "w") as f:
                    json.dump(man, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
