"""zoo.py — the model set shared by bench/models/build.py, bench/cpu/run.py and tests/test_models_ort.py:
the 4 benchmark models the project builds itself (random weights, fixed seeds) and the 9 "light"
models shipped inside the onnx package, each with a deterministic input generator.

Entry points:
  BENCH (name -> builder function), LIGHT (names), ALL (both, bench models first)
  model_path(name)          where the .onnx lives (bench models: bench/models/out/NAME.onnx)
  ensure_built(name)        build a bench model if its file is missing (atomic, safe under pytest -n N)
  light_probe(name)         a light model with its pre-softmax logits as an extra output (for tests)
  make_inputs(name, seed)   {input name: numpy array}: N(0, 1) float images; token ids uniform over the
                            vocabulary; BERT's attention mask 1 for the first 100 tokens, 0 after (so
                            the mask path is exercised); token types 0 then 1 at the midpoint
Invariant: a bench model is a pure function of its builder's seed, so concurrent builds write the same
bytes and the rename into place is safe.
"""
import fcntl
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
sys.path.insert(0, HERE)

import cnn_models as cnn  # noqa: E402
import transformer_models as tfm  # noqa: E402

BENCH = {
    "resnet50": cnn.resnet50,
    "mobilenetv2": cnn.mobilenetv2,
    "bert_base": tfm.bert_base,
    "gpt2_small": tfm.gpt2_small,
}
LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
         "squeezenet", "vgg19", "zfnet512"]
ALL = list(BENCH) + [f"light_{n}" for n in LIGHT]
SEQ = 128  # the transformers' sequence length
VOCAB = {"bert_base": 30522, "gpt2_small": 50257}


def model_path(name):
    if name.startswith("light_"):
        return os.path.join(LIGHT_DIR, f"{name}.onnx")
    if name not in BENCH:
        raise KeyError(f"unknown model '{name}' (models: {', '.join(ALL)})")
    return os.path.join(OUT, f"{name}.onnx")


def build(name, path=None):
    """Build bench model `name` into `path` (default: its place under out/), atomically."""
    path = path or model_path(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    m = BENCH[name]()
    tmp = f"{path}.tmp{os.getpid()}"
    onnx.save(m, tmp)
    os.replace(tmp, path)
    return path


def ensure_built(name):
    path = model_path(name)
    if name.startswith("light_") or os.path.exists(path):
        return path
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait, then reuse
        if not os.path.exists(path):
            build(name, path)
    return path


def light_probe(name):
    """The light model `name` with the input of its final Softmax added as a second graph output (built
    into out/NAME.probe.onnx on first use). The light models' weights are constants, so every class
    gets the same logit and the softmax output is exactly 1/1000 whatever the network computed; the
    logit itself (one value repeated, large, and input-dependent) carries the whole computation. Models
    that do not end in Softmax (densenet121 ends in a Conv) are returned unchanged."""
    src = model_path(name)
    m = onnx.load(src)
    last = [n for n in m.graph.node if m.graph.output[0].name in n.output][0]
    if last.op_type != "Softmax":
        return src
    path = os.path.join(OUT, f"{name}.probe.onnx")
    if not os.path.exists(path):
        os.makedirs(OUT, exist_ok=True)
        m.graph.output.append(onnx.helper.make_tensor_value_info(last.input[0], onnx.TensorProto.FLOAT, None))
        tmp = f"{path}.tmp{os.getpid()}"
        onnx.save(m, tmp)
        os.replace(tmp, path)
    return path


def input_specs(path):
    """[(name, numpy dtype, shape with None for symbolic dims)] of the inputs a caller must feed."""
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    specs = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        specs.append((vi.name, dt, shape))
    return specs


def make_inputs(name, seed=0):
    rng = np.random.default_rng(seed)
    if name in VOCAB:
        ids = rng.integers(0, VOCAB[name], size=(1, SEQ), dtype=np.int64)
        if name == "gpt2_small":
            return {"input_ids": ids}
        mask = np.zeros((1, SEQ), dtype=np.int64)
        mask[:, :100] = 1
        types = np.zeros((1, SEQ), dtype=np.int64)
        types[:, SEQ // 2:] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    feeds = {}
    for iname, dt, shape in input_specs(model_path(name)):
        assert dt == np.float32 and None not in shape, (name, iname, dt, shape)
        feeds[iname] = rng.standard_normal(shape, dtype=np.float32)
    return feeds
