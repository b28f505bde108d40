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
            "inputs": [{"name": s[0], "dtype": s[1], "shape": s[2], "kind": s[3]} for s in specs],
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
