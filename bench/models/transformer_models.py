"""transformer_models.py — the two transformer benchmark models, random weights (std 0.02, as the reference
implementations initialize them), fp32, written node for node as PyTorch's TorchScript exporter
(opset 17, dynamic axes "batch" and "sequence") writes the Hugging Face models:

- bert_base(): BertModel, 12 layers, hidden 768, 12 heads, FFN 3072, vocabulary 30522. Inputs
  input_ids / attention_mask / token_type_ids (int64 [batch, sequence]); outputs last_hidden_state
  [batch, sequence, 768] and pooler_output [batch, 768]. Embeddings are Gathers (positions sliced from
  a [1, 512] buffer by the sequence length), LayerNormalization (eps 1e-12), Q/K/V as MatMul + Add,
  heads split and merged by Shape -> Gather -> Unsqueeze -> Concat -> Reshape and Transpose, the
  extended mask (1 - mask) * finfo(float32).min, Softmax, GELU in its Erf form.
- gpt2_small(): GPT2LMHeadModel, 12 layers, 768, 12 heads, vocabulary 50257, 1024 positions. Input
  input_ids (int64 [batch, sequence]); output logits [batch, sequence, 50257]. Conv1D layers as
  Reshape -> Gemm -> Reshape (torch.addmm on a view), fused QKV split with Split, positions from Range,
  the causal mask sliced from a bool [1, 1, 1024, 1024] buffer and applied with Where(mask, scores,
  finfo.min), GELU in its tanh form (gelu_new: Pow, Tanh), pre-LayerNorm blocks (eps 1e-5), LM head
  MatMul with the tied embedding matrix transposed (a separate [768, 50257] initializer, as the
  exporter's constant folding leaves it).
"""
import math

import numpy as np

from graph_builder import Builder

FMIN = float(np.finfo(np.float32).min)


def _split_heads(b, x, heads, head_dim, perm):
    """x.view(x.size()[:-1] + (heads, head_dim)).permute(...) as the exporter writes it."""
    shape = b.shape_cat([b.dim(x, 0), b.dim(x, 1), [heads], [head_dim]])
    return b.op("Transpose", [b.op("Reshape", [x, shape])], perm=perm)


def _merge_heads(b, x, hidden):
    """x.permute(0, 2, 1, 3).contiguous().view(x.size()[:-2] + (hidden,))."""
    t = b.op("Transpose", [x], perm=[0, 2, 1, 3])
    return b.op("Reshape", [t, b.shape_cat([b.dim(t, 0), b.dim(t, 1), [hidden]])])


def bert_base(seed=768, layers=12, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512):
    b = Builder("bert_base", seed)
    dims = ["batch", "sequence"]
    ids = b.input("input_ids", np.int64, dims)
    mask = b.input("attention_mask", np.int64, dims)
    types = b.input("token_type_ids", np.int64, dims)
    head_dim = hidden // heads

    with b.scope("embeddings"):
        seq = b.dim(ids, 1)
        pos_buf = b.weight("position_ids", np.arange(max_pos, dtype=np.int64)[None, :])
        pos = b.op("Slice", [pos_buf, b.const([0], np.int64), seq, b.const([1], np.int64), b.const([1], np.int64)])
        we = b.op("Gather", [b.normal("word_embeddings.weight", (vocab, hidden), 0.02), ids])
        te = b.op("Gather", [b.normal("token_type_embeddings.weight", (2, hidden), 0.02), types])
        e = b.op("Add", [we, te])
        pe = b.op("Gather", [b.normal("position_embeddings.weight", (max_pos, hidden), 0.02), pos])
        e = b.op("Add", [e, pe])
        x = b.layer_norm(e, "LayerNorm", hidden, 1e-12)

    # the extended attention mask, [batch, 1, 1, sequence]
    m = b.op("Unsqueeze", [mask, b.const([1, 2], np.int64)])
    m = b.op("Cast", [m], to=1)
    m = b.op("Sub", [b.const(1.0, np.float32), m])
    ext = b.op("Mul", [m, b.const(FMIN, np.float32)])

    for li in range(layers):
        with b.scope(f"encoder.layer.{li}"):
            with b.scope("attention.self"):
                q = _split_heads(b, b.linear(x, "query", hidden, hidden, 0.02), heads, head_dim, [0, 2, 1, 3])
                k = _split_heads(b, b.linear(x, "key", hidden, hidden, 0.02), heads, head_dim, [0, 2, 3, 1])
                v = _split_heads(b, b.linear(x, "value", hidden, hidden, 0.02), heads, head_dim, [0, 2, 1, 3])
                s = b.op("MatMul", [q, k])
                s = b.op("Div", [s, b.const(math.sqrt(head_dim), np.float32)])
                s = b.op("Add", [s, ext])
                p = b.op("Softmax", [s], axis=-1)
                ctx = _merge_heads(b, b.op("MatMul", [p, v]), hidden)
            with b.scope("attention.output"):
                a = b.linear(ctx, "dense", hidden, hidden, 0.02)
                x = b.layer_norm(b.op("Add", [a, x]), "LayerNorm", hidden, 1e-12)
            with b.scope("intermediate"):
                h = b.linear(x, "dense", hidden, ffn, 0.02)
                g = b.op("Erf", [b.op("Div", [h, b.const(1.4142135381698608, np.float32)])])
                g = b.op("Add", [g, b.const(1.0, np.float32)])
                h = b.op("Mul", [b.op("Mul", [h, g]), b.const(0.5, np.float32)])
            with b.scope("output"):
                o = b.linear(h, "dense", ffn, hidden, 0.02)
                x = b.layer_norm(b.op("Add", [o, x]), "LayerNorm", hidden, 1e-12)

    assert b.nodes[-1].op_type == "LayerNormalization" and b.nodes[-1].output[0] == x
    b.nodes[-1].output[0] = x = "last_hidden_state"
    with b.scope("pooler"):
        first = b.op("Gather", [x, b.const(0, np.int64)], axis=1)
        w = b.normal("dense.weight", (hidden, hidden), 0.02)
        pooled = b.op("Gemm", [first, w, b.normal("dense.bias", (hidden,), 0.02)], alpha=1.0, beta=1.0, transB=1)
        b.op("Tanh", [pooled])
        b.nodes[-1].output[0] = "pooler_output"
    b.output("last_hidden_state", np.float32, dims + [hidden])
    b.output("pooler_output", np.float32, ["batch", hidden])
    return b.model("BERT-base encoder (BertModel), random weights (lathe bench)")


def _conv1d(b, x, leaf, nx, nf, std):
    """GPT-2's Conv1D: size_out = x.size()[:-1] + (nf,); addmm(bias, x.view(-1, nx), W).view(size_out)."""
    with b.scope(leaf):
        w = b.normal("weight", (nx, nf), std)
        bias = b.normal("bias", (nf,), 0.02)
        flat = b.op("Reshape", [x, b.shape_cat([[-1], b.dim(x, -1)])])
        y = b.op("Gemm", [flat, w, bias], alpha=1.0, beta=1.0)
        return b.op("Reshape", [y, b.shape_cat([b.dim(x, 0), b.dim(x, 1), [nf]])])


def gpt2_small(seed=124, layers=12, hidden=768, heads=12, vocab=50257, n_ctx=1024):
    b = Builder("gpt2_small", seed)
    dims = ["batch", "sequence"]
    ids = b.input("input_ids", np.int64, dims)
    head_dim = hidden // heads
    wte = b.rng.standard_normal((vocab, hidden), dtype=np.float32) * np.float32(0.02)

    with b.scope("transformer"):
        seq = b.dim_scalar(ids, 1)
        ids2 = b.op("Reshape", [ids, b.shape_cat([[-1], b.dim(ids, 1)])])
        pos = b.op("Range", [b.const(0, np.int64), seq, b.const(1, np.int64)])
        pos = b.op("Unsqueeze", [pos, b.const([0], np.int64)])
        te = b.op("Gather", [b.weight("wte.weight", wte), ids2])
        pe = b.op("Gather", [b.normal("wpe.weight", (n_ctx, hidden), 0.01), pos])
        x = b.op("Add", [te, pe])
        causal = np.tril(np.ones((n_ctx, n_ctx), dtype=np.bool_))[None, None]
        for li in range(layers):
            with b.scope(f"h.{li}"):
                h = b.layer_norm(x, "ln_1", hidden, 1e-5)
                with b.scope("attn"):
                    qkv = _conv1d(b, h, "c_attn", hidden, 3 * hidden, 0.02)
                    q, k, v = b.op("Split", [qkv, b.const([hidden] * 3, np.int64)], n_out=3, axis=2)
                    q = _split_heads(b, q, heads, head_dim, [0, 2, 1, 3])
                    k = _split_heads(b, k, heads, head_dim, [0, 2, 3, 1])
                    v = _split_heads(b, v, heads, head_dim, [0, 2, 1, 3])
                    s = b.op("MatMul", [q, k])
                    s = b.op("Div", [s, b.const(math.sqrt(head_dim), np.float32)])
                    ql, kl = b.dim(q, 2), b.dim(k, 3)
                    bias = b.weight("bias", causal)
                    cm = b.op("Slice", [bias, b.op("Sub", [kl, ql]), kl, b.const([2], np.int64),
                                        b.const([1], np.int64)])
                    cm = b.op("Slice", [cm, b.const([0], np.int64), kl, b.const([3], np.int64),
                                        b.const([1], np.int64)])
                    s = b.op("Where", [cm, s, b.const(FMIN, np.float32)])
                    p = b.op("Softmax", [s], axis=-1)
                    a = _merge_heads(b, b.op("MatMul", [p, v]), hidden)
                    a = _conv1d(b, a, "c_proj", hidden, hidden, 0.02 / math.sqrt(2 * layers))
                x = b.op("Add", [a, x])
                h = b.layer_norm(x, "ln_2", hidden, 1e-5)
                with b.scope("mlp"):
                    f = _conv1d(b, h, "c_fc", hidden, 4 * hidden, 0.02)
                    half = b.op("Mul", [f, b.const(0.5, np.float32)])
                    cube = b.op("Pow", [f, b.const(3.0, np.float32)])
                    inner = b.op("Add", [f, b.op("Mul", [cube, b.const(0.044715, np.float32)])])
                    t = b.op("Tanh", [b.op("Mul", [inner, b.const(math.sqrt(2.0 / math.pi), np.float32)])])
                    g = b.op("Mul", [half, b.op("Add", [t, b.const(1.0, np.float32)])])
                    m = _conv1d(b, g, "c_proj", 4 * hidden, hidden, 0.02 / math.sqrt(2 * layers))
                x = b.op("Add", [x, m])
        x = b.layer_norm(x, "ln_f", hidden, 1e-5)
    b.op("MatMul", [x, b.weight("lm_head.weight_T", np.ascontiguousarray(wte.T))])
    b.nodes[-1].output[0] = "logits"
    b.output("logits", np.float32, dims + [vocab])
    return b.model("GPT-2 small (GPT2LMHeadModel) forward, random weights (lathe bench)")
