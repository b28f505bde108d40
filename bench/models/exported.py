"""exported.py — the zoo's exported models: graph-only snapshots of what PyTorch's exporters, tf2onnx
and paddle2onnx emit (bench/models/exported/*.onnx.gz, written by export_torch.py,
exported/export_tf.py and exported/export_paddle.py), refilled into runnable models.

A snapshot keeps the exporter's graph exactly; float initializers of more than 64 elements were
stripped of their data and carry the statistics of the values the framework drew
("lathe-zoo-stripped mean=M std=S min=A max=B"). build() refills each with seeded values of that
distribution: a constant when std is 0 (LayerNorm's ones, zero biases), uniform over [min, max] when
its spread is a uniform's (torch's kaiming-uniform Linear and Conv weights), else a normal of that
mean and std clipped to [min, max] (Hugging Face's N(0, 0.02) embeddings). Where the framework's own
init gives a degenerate model (every output equal), refill() says what it draws instead, and the
manifest entry says so ("refill": "fan_in"). The seed is derived from
the model and the initializer's name, so a build is a pure function of the snapshot (concurrent
builds write the same bytes; the rename into place is safe).

Entry points:
  SNAPSHOTS                    {tag: manifest entry} (exported.json: inputs with kinds, exporter, opset;
                               and the DERIVED variants: float16 and int8 models made by onnxruntime's tools)
  build(tag, size=None)        the runnable model's path (out/exported/<tag>[_<size>].onnx, built on first use);
                               size "full" gives image models their deployed input size (224 x 224)
  make_inputs(tag, seed)       {input name: array}: N(0,1) images/audio/features (in the input's float
                               type), token ids uniform over the vocabulary (in the input's integer type;
                               "tokens V padded": the last quarter 0, the padding id), attention masks of
                               ones then zeros for the last quarter, "value N" inputs (a sample rate) N
  bind_dims(tag)               the --dim bindings of its symbolic dims (batch 1, sequence / time as the
                               example the exporter traced)
"""
import gzip
import hashlib
import json
import os
import re

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SNAP_DIR = os.path.join(HERE, "exported")
OUT = os.path.join(HERE, "out", "exported")
with open(os.path.join(SNAP_DIR, "exported.json")) as _f:
    _MANIFEST = json.load(_f)
SNAPSHOTS = dict(_MANIFEST["models"])    # tag -> source, exporter, opset, inputs, ops
NOT_EXPORTED = _MANIFEST["not_exported"]  # tag -> the exporter's error
# Variants users make from an exported model with onnxruntime's own tools: derived from a snapshot
# when first built (deterministic: seeded weights, seeded calibration inputs), listed in SNAPSHOTS.
DERIVED = {
    "gpt2_ci.fp16": ("gpt2_ci", "onnxruntime.transformers float16 converter"),
    "resnet18_ci.qdq": ("resnet18_ci", "onnxruntime quantize_static: QDQ, int8 per-channel weights, uint8 activations"),
    "bert_ci.int8": ("bert_ci", "onnxruntime quantize_dynamic: DynamicQuantizeLinear + MatMulInteger"),
    "mobilenet_v2_ci.convinteger": ("mobilenet_v2_ci", "onnxruntime quantize_dynamic of Conv: ConvInteger"),
}
for _tag, (_base, _how) in DERIVED.items():
    SNAPSHOTS[_tag] = dict(SNAPSHOTS[_base], exporter=SNAPSHOTS[_base]["exporter"] + " + " + _how, derived_from=_base)
STAT = re.compile(r"lathe-zoo-stripped mean=(\S+) std=(\S+) min=(\S+) max=(\S+)")
FULL_IMAGE = 224


def _seed(*parts):
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "little")


def refill(model, tag, fan_in=False):
    """Give every stripped initializer seeded values of its recorded distribution (in place).
    A weight matrix the framework zeroed (torchvision's ViT head) would make every output equal: it
    gets N(0, 1/fan_in) instead. fan_in: convolution weights get He's variance-preserving
    N(0, 2/fan_in) (torchvision's fan-out init shrinks an untrained depthwise net's logits to 1e-10)."""
    for i, t in enumerate(model.graph.initializer):
        m = STAT.match(t.doc_string or "")
        if not m:
            continue
        mean, std, lo, hi = map(float, m.groups())
        shape = tuple(t.dims)
        rng = np.random.default_rng(_seed(tag, t.name))
        fan = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        if len(shape) >= 2 and std == 0 and mean == 0:
            a = rng.normal(0, 1 / np.sqrt(fan), shape)
        elif fan_in and len(shape) == 4:
            a = rng.normal(0, np.sqrt(2 / fan), shape)
        elif std == 0 or hi == lo:
            a = np.full(shape, mean)
        elif abs((hi - lo) - np.sqrt(12) * std) < 0.15 * (hi - lo):  # a uniform's spread
            a = rng.uniform(lo, hi, shape)
        else:
            a = np.clip(rng.normal(mean, std, shape), lo, hi)
        dt = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
        new = numpy_helper.from_array(a.astype(dt), t.name)
        model.graph.initializer[i].CopyFrom(new)
    return model


def _image_input(model, hw):
    for inp in model.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if len(dims) == 4:
            dims[2].dim_value, dims[3].dim_value = hw, hw


def snapshot_path(tag):
    return os.path.join(SNAP_DIR, tag + ".onnx.gz")


def _derive(tag, src, dst):
    """Write DERIVED[tag]'s transform of model file src to dst."""
    base = DERIVED[tag][0]
    if tag.endswith(".fp16"):
        from onnxruntime.transformers.float16 import convert_float_to_float16
        onnx.save(convert_float_to_float16(onnx.load(src), keep_io_types=False), dst)
        return
    from onnxruntime import quantization as q
    if tag.endswith(".qdq"):
        class Reader(q.CalibrationDataReader):
            def __init__(self):
                self.feeds = iter([make_inputs(base, seed=k, path=src) for k in range(8)])

            def get_next(self):
                return next(self.feeds, None)
        q.quantize_static(src, dst, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
    elif tag.endswith(".convinteger"):
        q.quantize_dynamic(src, dst, op_types_to_quantize=["Conv"], weight_type=q.QuantType.QUInt8)
    else:  # uint8 weights: onnxruntime's AVX2 uint8 x int8 kernel saturates int16 pair sums (off the spec)
        q.quantize_dynamic(src, dst, op_types_to_quantize=["MatMul"], weight_type=q.QuantType.QUInt8)


def build(tag, size=None):
    """The runnable model of snapshot `tag` (refilled), built once into out/exported/."""
    entry = SNAPSHOTS[tag]
    if tag in DERIVED:
        path = os.path.join(OUT, f"{tag}.onnx")
        if not os.path.exists(path):
            tmp = f"{path}.tmp{os.getpid()}.onnx"
            _derive(tag, build(DERIVED[tag][0]), tmp)
            os.replace(tmp, path)
        return path
    suffix = f"_{size}" if size == "full" and entry.get("image_sizes") else ""
    path = os.path.join(OUT, f"{tag}{suffix}.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(OUT, exist_ok=True)
    with gzip.open(snapshot_path(tag), "rb") as f:
        model = onnx.load_from_string(f.read())
    refill(model, tag, fan_in=entry.get("refill") == "fan_in")
    if suffix:
        _image_input(model, FULL_IMAGE)
    tmp = f"{path}.tmp{os.getpid()}"
    onnx.save(model, tmp)
    os.replace(tmp, path)
    return path


def _dims(entry, name):
    for i in entry["inputs"]:
        if i["name"] == name:
            return i
    raise KeyError(name)


def bind_dims(tag, path=None):
    """{symbolic dim of the model file: size} for the example the exporter traced (batch 1)."""
    e = SNAPSHOTS[tag]
    model = onnx.load(path or build(tag), load_external_data=False)
    out = {}
    for inp in model.graph.input:
        spec = _dims(e, inp.name)
        for k, d in enumerate(inp.type.tensor_type.shape.dim):
            if d.dim_param:
                out[d.dim_param] = 1 if d.dim_param == "batch" else int(spec["example"][k])
    return out


def make_inputs(tag, seed=0, path=None):
    """{name: array} for the model's inputs, shapes from the model file (dims bound by bind_dims)."""
    e = SNAPSHOTS[tag]
    model = onnx.load(path or build(tag), load_external_data=False)
    dims = bind_dims(tag, path)
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in model.graph.input:
        spec = _dims(e, inp.name)
        shape = [d.dim_value if d.dim_value else dims.get(d.dim_param, 1) for d in inp.type.tensor_type.shape.dim]
        kind = spec["kind"]
        dt = onnx.helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
        if kind.startswith("tokens"):  # int64 from torch, int32 from Keras through tf2onnx
            ids = rng.integers(0, int(kind.split()[1]), shape).astype(dt)
            if kind.endswith("padded"):  # id 0 is padding (Keras' mask_zero): the last quarter of each row
                ids[..., shape[-1] - max(1, shape[-1] // 4):] = 0
            feeds[inp.name] = ids
        elif kind == "mask":
            m = np.ones(shape, np.int64)
            m[..., shape[-1] - max(1, shape[-1] // 4):] = 0
            feeds[inp.name] = m
        elif kind.startswith("value"):
            feeds[inp.name] = np.full(shape, int(kind.split()[1]), np.int64)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(dt)
    return feeds
