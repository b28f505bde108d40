"""graph_builder.py — a small helper over onnx.helper for writing the benchmark models by hand, in the form
real exporters produce (PyTorch's TorchScript exporter at opset 17): weights as named initializers,
small constants (scalars, shape pieces, axes) as Constant nodes, shape arithmetic as
Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains.

Invariants: every tensor name is unique (names are derived from a scope path like an exporter's
"/encoder/layer.3/attention/MatMul_1_output_0"); random weights come from the one numpy Generator
passed in, so a model is a pure function of its seed. Entry point: Builder (see its methods); a model
function calls b.input(...), layers of b.op(...), b.output(...) and finally b.model().
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.int32): TensorProto.INT32}


class Builder:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.used = set()
        self.counts = {}
        self.scopes = []

    # ---- names ----
    def scope(self, s):
        """Context manager: names created inside are prefixed with /s (nested scopes join)."""
        b = self

        class _Scope:
            def __enter__(self):
                b.scopes.append(s)

            def __exit__(self, *exc):
                b.scopes.pop()
        return _Scope()

    def _unique(self, base):
        key = "/" + "/".join(self.scopes + [base]) if self.scopes else "/" + base
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        name = key if n == 0 else f"{key}_{n}"
        assert name not in self.used, name
        self.used.add(name)
        return name

    def param_name(self, leaf):
        """A weight's name, exporter style: scope path joined with dots (encoder.layer.3.query.weight)."""
        name = ".".join(self.scopes + [leaf])
        assert name not in self.used, name
        self.used.add(name)
        return name

    # ---- graph pieces ----
    def input(self, name, dtype, shape):
        self.inputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], shape))
        self.used.add(name)
        return name

    def output(self, name, dtype, shape):
        self.outputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(dtype)], shape))

    def weight(self, leaf, array):
        """A named initializer holding `array` (converted to a contiguous numpy array)."""
        name = self.param_name(leaf)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def normal(self, leaf, shape, std, mean=0.0):
        a = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
        if mean:
            a += np.float32(mean)
        return self.weight(leaf, a)

    def uniform(self, leaf, shape, lo, hi):
        return self.weight(leaf, self.rng.uniform(lo, hi, size=shape).astype(np.float32))

    def const(self, value, dtype=None):
        """A Constant node (what the exporter emits for scalars and shape pieces); returns its output."""
        arr = np.asarray(value, dtype=dtype)
        out = self._unique("Constant_output_0")
        t = numpy_helper.from_array(arr, out + "_value")
        self.nodes.append(helper.make_node("Constant", [], [out], name=out[:-len("_output_0")], value=t))
        return out

    def op(self, op_type, inputs, n_out=1, **attrs):
        """Append a node; returns its output name (or a list when n_out > 1)."""
        base = self._unique(op_type)
        outs = [f"{base}_output_{i}" for i in range(n_out)]
        for o in outs:
            self.used.add(o)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=base, **attrs))
        return outs[0] if n_out == 1 else outs

    # ---- exporter idioms ----
    def dim(self, x, axis):
        """x.size(axis) as a 1-D int64 tensor: Shape -> Gather(scalar) -> Unsqueeze."""
        g = self.op("Gather", [self.op("Shape", [x]), self.const(axis, np.int64)], axis=0)
        return self.op("Unsqueeze", [g, self.const([0], np.int64)])

    def dim_scalar(self, x, axis):
        """x.size(axis) as a 0-D int64 tensor: Shape -> Gather(scalar)."""
        return self.op("Gather", [self.op("Shape", [x]), self.const(axis, np.int64)], axis=0)

    def shape_cat(self, parts):
        """Concat of 1-D int64 pieces: each part is a tensor name or a python list of ints."""
        names = [p if isinstance(p, str) else self.const(p, np.int64) for p in parts]
        return self.op("Concat", names, axis=0)

    def reshape(self, x, parts):
        return self.op("Reshape", [x, self.shape_cat(parts)])

    def linear(self, x, leaf, k, n, std, bias=True):
        """PyTorch Linear on a 3-D input: MatMul(x, W^T folded to [k, n]) then Add(bias, ...)."""
        with self.scope(leaf):
            w = self.normal("weight", (k, n), std)
            y = self.op("MatMul", [x, w])
            if bias:
                y = self.op("Add", [self.normal("bias", (n,), 0.02), y])
        return y

    def layer_norm(self, x, leaf, n, eps):
        with self.scope(leaf):
            g = self.weight("weight", (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32))
            b = self.normal("bias", (n,), 0.05)
            return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    def model(self, doc=""):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="lathe-bench", producer_version="1", doc_string=doc)
        m.ir_version = IR_VERSION
        onnx.checker.check_model(m)
        return m
