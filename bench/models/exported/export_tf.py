#!/usr/bin/env python3
"""export_tf.py — export Keras models with tf2onnx and keep graph-only snapshots for the zoo.

Run offline by a developer, in a virtualenv of its own (TensorFlow is not needed by CI or by lathe's
tests: they read the snapshots). The snapshots in this folder were written with tensorflow-cpu 2.15.1
(tf.keras 2.15) and tf2onnx 1.17.0 on Python 3.11:

  python3 -m venv /tmp/venv-tf
  /tmp/venv-tf/bin/pip install tensorflow-cpu==2.15.1 tf2onnx==1.17.0 onnx==1.17.0
  /tmp/venv-tf/bin/python bench/models/exported/export_tf.py OUT_DIR [--only NAME,...]

Each model is built by Keras with its own initialisers (glorot-uniform kernels, zero biases; the
BatchNormalization statistics randomized as export_torch.py's randomize_bn does, so the folded
values are real), converted by `tf2onnx.convert.from_keras` at tf2onnx's default opset (15) with the NHWC
(channels-last) input Keras gives it, then stripped by export_torch.strip: float initializers of more
than 64 elements keep name, dtype, dims and the statistics of their values, bench/models/exported.py
refills them when the zoo is built. What is kept is exactly the graph tf2onnx emits (the Transposes
its optimizer leaves around the NHWC convolutions, Pad for ZeroPadding2D, MultiHeadAttention's
Einsums rewritten into shape arithmetic, Reshape, Transpose and MatMul, its `unk__N` symbolic dims).

tf2onnx's output is not byte-for-byte reproducible: its generated names (`new_shape__N`) and, now
and then, a no-op Reshape its transpose optimizer leaves in place vary from run to run; the graph
computes the same. The snapshots here are one such run.

Writes OUT_DIR/<name>_ci.onnx and OUT_DIR/exported.json (entries in the manifest's format: source,
exporter, opset, inputs with kind and the traced example shape). Gzip each snapshot into this folder
(`gzip -9n`) and merge its entry into exported.json by hand, as for export_torch.py.
"""
import argparse
import json
import os
import sys
import time
import traceback

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from export_torch import strip  # noqa: E402  (imports neither torch nor anything else heavy)


def randomize_bn(model, seed=0):
    """Untrained Keras BatchNormalization is the identity (mean 0, variance 1, gamma 1, beta 0): give it
    spread statistics so the exported graph folds real values (export_torch.randomize_bn's values)."""
    import tensorflow as tf
    rng = np.random.default_rng(seed)
    for layer in model.submodules:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            n = layer.gamma.shape[0]
            layer.moving_mean.assign(rng.standard_normal(n).astype(np.float32) * 0.1)
            layer.moving_variance.assign(rng.uniform(0.75, 1.25, n).astype(np.float32))
            layer.gamma.assign(rng.uniform(0.75, 1.25, n).astype(np.float32))
            layer.beta.assign(rng.standard_normal(n).astype(np.float32) * 0.1)
    return model


# ---- the models: name -> builder() returning (keras model, input signature, input specs) ----

def efficientnet():
    """keras.applications' own EfficientNet builder (the code of EfficientNetB0) at width 0.5 and depth
    0.5 (one block per stage), 64 x 64 NHWC input, 100 classes: Rescaling and Normalization, stride-2
    ZeroPadding2D (Pad), depthwise convolutions, swish, squeeze-excite (ReduceMean, Reshape, 1x1 convs,
    Multiply), a Dense head with Softmax."""
    import tensorflow as tf
    from keras.src.applications.efficientnet import EfficientNet
    hw = 64
    m = EfficientNet(0.5, 0.5, hw, weights=None, input_shape=(hw, hw, 3), classes=100, model_name="efficientnet_ci")
    return randomize_bn(m), [tf.TensorSpec((None, hw, hw, 3), tf.float32, name="input_1")], \
        [("input_1", "float32", ["batch", hw, hw, 3], "image", [1, hw, hw, 3])]


def transformer():
    """The Keras text classifier (keras.io's 'text classification with Transformer'): token and
    position Embeddings (Range over the sequence's run-time length), two encoder blocks of
    MultiHeadAttention (Einsum projections) + Add + LayerNormalization + a ReLU feed-forward, masked
    by Embedding(mask_zero=True) (token 0 is padding), then GlobalAveragePooling1D and a Dense head.
    int32 token ids of unknown batch and length."""
    import tensorflow as tf
    L = tf.keras.layers
    vocab, maxlen, d, heads, ff, layers, seq = 1000, 64, 64, 4, 128, 2, 16

    class AddPosition(L.Layer):  # passes the token Embedding's mask on
        def __init__(self):
            super().__init__()
            self.supports_masking = True
            self.pos = L.Embedding(maxlen, d)

        def call(self, x):
            positions = tf.range(start=0, limit=tf.shape(x)[1], delta=1)
            return x + self.pos(positions)

    ids = L.Input(shape=(None,), dtype="int32", name="input_ids")
    x = AddPosition()(L.Embedding(vocab, d, mask_zero=True)(ids))
    for _ in range(layers):
        a = L.MultiHeadAttention(num_heads=heads, key_dim=d // heads)(x, x)
        x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, a]))
        f = L.Dense(d)(L.Dense(ff, activation="relu")(x))
        x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, f]))
    x = L.GlobalAveragePooling1D()(x)
    out = L.Dense(10)(x)
    m = tf.keras.Model(ids, out)
    return m, [tf.TensorSpec((None, None), tf.int32, name="input_ids")], \
        [("input_ids", "int32", ["batch", "sequence"], "tokens %d padded" % vocab, [1, seq])]


MODELS = {
    "keras_efficientnet": efficientnet,
    "keras_transformer": transformer,
}
SOURCES = {
    "keras_efficientnet": "Keras EfficientNet (keras.applications' builder, width and depth 0.5), NHWC: one Transpose, "
                          "BatchNorm folded into Conv, ZeroPadding2D as Pad, swish (Sigmoid, Mul), SE, Softmax",
    "keras_transformer": "Keras transformer encoder: MultiHeadAttention's Einsums as Shape/Gather/ReduceProd/Reshape/"
                         "Transpose around MatMul and Gemm, LayerNormalization decomposed (GlobalAveragePool over the "
                         "last axis, Sqrt, Reciprocal), mask_zero padding mask (Equal, Not, And), int32 ids",
}


def manifest_entry(m, path, exporter, specs, source, stripped):
    """One model's entry in exported.json's format (the shape the exporter wrote, the traced example)."""
    def dims(vi):
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]
    graph_inputs = {i.name: i for i in m.graph.input}
    inputs = [{"name": name, "dtype": dtype, "shape": dims(graph_inputs[name]), "kind": kind, "example": example}
              for name, dtype, _shape, kind, example in specs]
    return {"size": "ci", "source": source, "exporter": exporter,
            "opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
            "inputs": inputs, "nodes": len(m.graph.node), "stripped": stripped, "bytes": os.path.getsize(path),
            "ops": sorted({n.op_type for n in m.graph.node})}


def run_exports(models, export_one, out, only):
    """Export each model (tag NAME_ci), print one line per model, write OUT/exported.json."""
    os.makedirs(out, exist_ok=True)
    man = {}
    for name in (only.split(",") if only else list(models)):
        tag = f"{name}_ci"
        t = time.time()
        try:
            man[tag] = export_one(name, os.path.join(out, tag + ".onnx"))
            man[tag]["seconds"] = round(time.time() - t, 1)
            print(f"{tag}: {man[tag]['nodes']} nodes, {man[tag]['bytes']} bytes, {man[tag]['seconds']} s", flush=True)
        except Exception as e:  # noqa: BLE001 - reported per model
            man[tag] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
            print(f"{tag}: FAILED {man[tag]['error']}", flush=True)
            traceback.print_exc(limit=3)
        with open(os.path.join(out, "exported.json"), "w") as f:
            json.dump(man, f, indent=1, sort_keys=True)
    return 0 if all("error" not in e for e in man.values()) else 1


def export_one(name, path):
    import tensorflow as tf
    import tf2onnx
    tf.keras.utils.set_random_seed(0)
    model, signature, specs = MODELS[name]()
    model_proto, _ = tf2onnx.convert.from_keras(model, input_signature=signature, output_path=None)
    n = strip(model_proto)
    onnx.save(model_proto, path)
    return manifest_entry(model_proto, path, f"tf2onnx {tf2onnx.__version__} (tensorflow {tf.__version__})", specs,
                          SOURCES[name], n)


def cli(models, export_one, doc):
    """An export script's command line: OUT [--only NAME,...] (this one's, and export_paddle.py's)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    return run_exports(models, export_one, a.out, a.only)


def main():
    return cli(MODELS, export_one, __doc__)


if __name__ == "__main__":
    sys.exit(main())
