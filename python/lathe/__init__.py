"""lathe — Python binding of lathe, a deep-learning compiler for ONNX models (numpy in, numpy out).

    import numpy as np, lathe
    model = lathe.compile("resnet50.onnx")                       # compiled for this CPU (cached)
    print(model.inputs)          # [TensorInfo(name='input', dtype=dtype('float32'), shape=(1, 3, 224, 224))]
    out = model(input=np.random.rand(1, 3, 224, 224).astype(np.float32))
    out["logits"]                # a dict of numpy arrays, one per graph output, in graph order

    bert = lathe.compile("bert.onnx", shapes={"input_ids": (1, 128), "attention_mask": (1, 128),
                                              "token_type_ids": (1, 128)}, threads=2)
    ref = lathe.compile("model.onnx", backend="interp")          # the reference interpreter

Entry points: compile(path, shapes=None, backend="cpu", threads=None, opt_level=None, ...) -> Model;
Model(**inputs) / Model(dict) / Model(*arrays) -> {output name: ndarray}; Model.inputs / .outputs
(TensorInfo: name, numpy dtype, shape with ints, dim names for symbolic dims, None for unknown);
version(); LatheError (with .status: "usage", "invalid", "unsupported", ...).

Backends: "cpu" compiles the model for fixed input shapes (declared, or bound by `shapes` / `dims`)
into native code through the system C compiler, cached by content under cache_dir (default
$XDG_CACHE_HOME/lathe or ~/.cache/lathe, as the CLI); with symbolic dims left unbound it gives one
model for every input shape, building code once per bucket of shapes at the runs that need it (the
report lists the buckets); "interp" runs the reference interpreter and
accepts symbolic dims at run time. Inputs must have the declared dtype (numpy arrays of another dtype
are refused, not converted; the same dtype in the other byte order, Python lists and scalars are
converted); 0-d arrays are scalars of shape (); outputs are fresh arrays the caller owns. One Model
may be used from several threads: calls are serialized by a lock. Bad arguments raise TypeError or
ValueError (wrong type, out of range, a NUL byte in a name or path) before the library is called;
the library's own messages name options the Python way (shapes=..., dims=...).
The shared library is found as described in lathe/_capi.py (LATHE_LIBRARY overrides).

onnxruntime's API (lathe/session.py): `import lathe as ort`, then ort.InferenceSession(path_or_bytes,
sess_options, providers), SessionOptions, RunOptions, GraphOptimizationLevel, IO binding, OrtValue,
get_available_providers(), get_device() as onnxruntime has them; python/README.md ("Switching from
onnxruntime") lists what is supported and every difference.
"""
import ctypes
import math
import operator
import os
import re
import threading
from collections import namedtuple

import numpy as np

from . import _capi
from ._capi import LatheError

__all__ = ["compile", "Model", "TensorInfo", "LatheError", "version", "library_path", "backends",
           # onnxruntime's API (session.py)
           "InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode",
           "ExecutionOrder", "NodeArg", "ModelMetadata", "IOBinding", "SessionIOBinding", "OrtValue",
           "get_available_providers", "get_all_providers", "get_device", "get_version_string", "get_build_info",
           "set_seed", "set_default_logger_severity", "set_default_logger_verbosity", "capi",
           "Fail", "InvalidArgument", "NoSuchFile", "InvalidProtobuf", "InvalidGraph", "RuntimeException", "EPFail",
           "MissingInputError"]

TensorInfo = namedtuple("TensorInfo", "name dtype shape")
TensorInfo.__doc__ = "An input or output: name, numpy dtype (None if not a tensor), shape (ints; str = symbolic)"

STRING = 8


def _np_dtypes():
    """ONNX element type number -> numpy dtype (types numpy lacks come from ml_dtypes when installed)."""
    table = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
             8: np.object_, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
             14: np.complex64, 15: np.complex128}
    try:
        import ml_dtypes
        for num, name in [(16, "bfloat16"), (17, "float8_e4m3fn"), (18, "float8_e4m3fnuz"), (19, "float8_e5m2"),
                          (20, "float8_e5m2fnuz"), (21, "uint4"), (22, "int4"), (23, "float4_e2m1fn"),
                          (24, "float8_e8m0fnu"), (25, "uint2"), (26, "int2")]:
            if hasattr(ml_dtypes, name):
                table[num] = getattr(ml_dtypes, name)
    except ImportError:
        pass
    return {k: np.dtype(v) for k, v in table.items()}


_NP = _np_dtypes()
_ONNX = {v: k for k, v in _NP.items()}


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _capi.load().lathe_version().decode()


def library_path():
    """The path of the liblathe.so in use."""
    return _capi.library_path()


def backends():
    """Backends this library offers: ["cpu", "interp"] (just ["interp"] for a library without a compiler).
    "cuda" is not listed but is accepted by compile() where a GPU, its driver and NVRTC are present."""
    return (["cpu"] if _capi.has("lathe_compile") else []) + ["interp"]


def __getattr__(name):
    if name == "__version__":
        return version()
    raise AttributeError(name)


def _default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lathe")


_INT64_MAX = (1 << 63) - 1
_INT_MAX = (1 << 31) - 1


def _int_arg(what, v, lo, hi):
    """v as an int in [lo, hi]: TypeError for a non-integer (bool and float included), ValueError out of range."""
    if isinstance(v, bool):
        raise TypeError(f"{what} must be an integer, got {v!r}")
    try:
        n = operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(v).__name__} {v!r}") from None
    if not lo <= n <= hi:
        raise ValueError(f"{what} must be between {lo} and {hi}, got {n}")
    return n


def _mapping(what, arg):
    try:
        return dict(arg)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a dict or a string, got {type(arg).__name__} {arg!r}") from None


def _name_arg(what, name):
    if not isinstance(name, str):
        raise TypeError(f"{what}: names must be strings, got {type(name).__name__} {name!r}")
    if not name or "\0" in name or "," in name:
        raise ValueError(f"{what}: the name {name!r} cannot be given here (empty, or holds ',' or a NUL byte)")
    return name


def _shapes_arg(shapes):
    """{"x": (1, 3, 224, 224)} or "x:1x3x224x224" -> the C API's "x:1x3x224x224,y:4" (None stays None)."""
    if shapes is None or isinstance(shapes, str):
        return shapes
    parts = []
    for name, dims in _mapping("shapes", shapes).items():
        _name_arg("shapes", name)
        if ":" in name:
            raise ValueError(f"shapes: input name '{name}' cannot be given here (it holds ',' or ':')")
        if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
            dims = [dims]
        elif isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
            raise TypeError(f"shapes['{name}'] must be a tuple of non-negative integers, got {dims!r}")
        dims = list(dims)
        if len(dims) > 16:
            raise ValueError(f"shapes['{name}']: rank {len(dims)} exceeds 16")
        for d in dims:
            if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or not 0 <= d <= _INT64_MAX:
                raise ValueError(f"shapes['{name}']: dims must be non-negative integers below 2**63, got {dims!r}")
        parts.append(f"{name}:" + "x".join(str(int(d)) for d in dims))
    return ",".join(parts)


def _dims_arg(dims):
    if dims is None or isinstance(dims, str):
        return dims
    out = []
    for name, n in _mapping("dims", dims).items():
        _name_arg("dims", name)
        if "=" in name:
            raise ValueError(f"dims: the name {name!r} cannot be given here (it holds '=')")
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 0 <= n <= _INT64_MAX:
            raise ValueError(f"dims['{name}'] must be a non-negative integer below 2**63, got {n!r}")
        out.append(f"{name}={int(n)}")
    return ",".join(out)


def _enc(s, what="argument"):
    """A str / bytes / path as the bytes the C API takes (None stays None); a NUL byte would cut it short."""
    if s is None:
        return None
    try:
        b = s if isinstance(s, bytes) else os.fsencode(s)
    except TypeError:
        raise TypeError(f"{what} must be a string or a path, got {type(s).__name__} {s!r}") from None
    if b"\0" in b:
        raise ValueError(f"{what}: embedded NUL byte in {s!r}")
    return b


# The library's messages name the command line's options (--shapes x:DIMS, --dim N=<size>); from Python
# they name compile()'s arguments instead.
_PY_WORDING = [
    (re.compile(r"--dim (.+?)=<size>"), lambda m: f"dims={{{m.group(1)!r}: <size>}}"),
    (re.compile(r"--shapes (.+?):DIMS"), lambda m: f"shapes={{{m.group(1)!r}: (d0, d1, ...)}}"),
    (re.compile(r" or its data with --input"), lambda m: " or use backend='interp' (it takes any shape)"),
    (re.compile(r"give its data with --input"), lambda m: "use backend='interp'"),
    (re.compile(r"--shapes/--dim"), lambda m: "shapes=/dims="),
    (re.compile(r"--shapes\b"), lambda m: "shapes"),
    (re.compile(r"--dim\b"), lambda m: "dims"),
]


def _py_message(msg):
    """A library message worded for Python callers (see _PY_WORDING)."""
    for pattern, repl in _PY_WORDING:
        msg = pattern.sub(repl, msg)
    return msg


def _error(msg, status):
    return LatheError(_py_message(msg.decode(errors="replace") if isinstance(msg, bytes) else msg), status)


def _info(lib, prefix, handle, i, dim_name=None):
    name = getattr(lib, f"{prefix}_name")(handle, i).decode("utf-8", "surrogateescape")  # any bytes round-trip
    dt = _NP.get(getattr(lib, f"{prefix}_dtype")(handle, i))
    dims = (ctypes.c_int64 * 16)()
    rank = getattr(lib, f"{prefix}_shape")(handle, i, dims, 16)
    if rank < 0:
        return TensorInfo(name, dt, None)
    shape = []
    for a in range(rank):
        if dims[a] >= 0:
            shape.append(int(dims[a]))
        else:
            n = dim_name(handle, i, a) if dim_name else None
            shape.append(n.decode("utf-8", "surrogateescape") if n else None)
    return TensorInfo(name, dt, tuple(shape))


class Model:
    """A loaded (backend "interp") or compiled (backend "cpu") model. Make one with lathe.compile()."""

    def __init__(self, path, backend, handle, lib, threads):
        self.path, self.backend = path, backend
        self._h, self._lib, self._lock = handle, lib, threading.Lock()
        self._threads = threads
        if backend == "interp":
            n_in, n_out = lib.lathe_model_num_inputs(handle), lib.lathe_model_num_outputs(handle)
            self.inputs = [_info(lib, "lathe_model_input", handle, i, lib.lathe_model_input_dim_name)
                           for i in range(n_in)]
            self.outputs = [_info(lib, "lathe_model_output", handle, i, lib.lathe_model_output_dim_name)
                            for i in range(n_out)]
        else:
            n_in, n_out = lib.lathe_compiled_num_inputs(handle), lib.lathe_compiled_num_outputs(handle)
            self.inputs = [_info(lib, "lathe_compiled_input", handle, i) for i in range(n_in)]
            self.outputs = [_info(lib, "lathe_compiled_output", handle, i) for i in range(n_out)]
        self._names = [t.name for t in self.inputs]
        # the zero-copy path: every input and output a static, non-string tensor
        self._buffers = backend in ("cpu", "cuda") and all(
            t.dtype is not None and t.dtype != np.object_ and t.shape is not None and
            all(isinstance(d, int) for d in t.shape) for t in self.inputs + self.outputs)
        # compiled for every shape (symbolic input dims): the same path once the run's shapes are selected
        self._selects = not self._buffers and backend in ("cpu", "cuda") and _capi.has("lathe_compiled_select_shapes") and \
            all(t.dtype is not None and t.dtype != np.object_ and t.shape is not None for t in self.inputs + self.outputs) \
            and any(not isinstance(d, int) for t in self.inputs for d in t.shape)
        self._selected = {}  # input shapes -> what _run_selected passes for them

    # ---- lifetime ----
    def close(self):
        """Free the native model now (otherwise when garbage collected). Waits for a run in progress."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ did not get far
            return
        with lock:
            h, self._h = self._h, None
            if h:
                (self._lib.lathe_model_free if self.backend == "interp" else self._lib.lathe_compiled_free)(h)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<lathe.Model {self.path!r} backend={self.backend} inputs={self._names}>"

    # ---- properties ----
    @property
    def report(self):
        """The compile report (stage times, kernels, host steps, cache hit, memory); "" for interp."""
        if self.backend == "interp" or not self._h:
            return ""
        return self._lib.lathe_compiled_report(self._h).decode(errors="replace")

    @property
    def threads(self):
        return self._threads

    @threads.setter
    def threads(self, n):
        """Thread count of the compiled kernels (0 or None: every CPU). Not for backend "interp"."""
        if self.backend == "interp":
            raise LatheError("threads: the interpreter runs on one thread", "usage")
        n = 0 if n is None else _int_arg("threads", n, 0, _INT_MAX)
        with self._lock:
            self._lib.lathe_compiled_set_threads(self._check_open(), n)
            self._threads = n

    def _check_open(self):
        if not self._h:
            raise LatheError(f"{self.path}: the model was closed", "usage")
        return self._h

    @property
    def last_run_copies(self):
        """The copies between host and GPU memory the last run made (lathe_compiled_last_run_copies): a dict of
        host_to_device, device_to_host, device_to_device (counts) and the same with _bytes; all 0 for the CPU.
        None for backend "interp" (or a library without the call)."""
        if self.backend == "interp" or not _capi.has("lathe_compiled_last_run_copies"):
            return None
        rc = _capi.RunCopies()
        with self._lock:
            if self._lib.lathe_compiled_last_run_copies(self._check_open(), ctypes.byref(rc)) != 0:
                return None
        return {k: int(getattr(rc, k)) for k in ("host_to_device", "device_to_host", "device_to_device",
                                                  "host_to_device_bytes", "device_to_host_bytes",
                                                  "device_to_device_bytes")}

    # ---- running ----
    def _feeds(self, args, kwargs):
        if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
            feeds = dict(args[0])
        else:
            if len(args) > len(self._names):
                raise TypeError(f"{self.path}: {len(args)} positional inputs given, the model has {len(self._names)}")
            feeds = dict(zip(self._names, args))
            for k, v in kwargs.items():
                if k in feeds:
                    raise TypeError(f"input '{k}' given twice")
                feeds[k] = v
        unknown = [k for k in feeds if k not in self._names]
        if unknown:
            raise TypeError(f"unknown input(s) {', '.join(map(repr, unknown))}; the model's inputs are {self._names}")
        missing = [n for n in self._names if n not in feeds]
        if missing:
            raise TypeError(f"missing input(s) {', '.join(map(repr, missing))}")
        arrays = []
        for info in self.inputs:
            v = feeds[info.name]
            if info.dtype is None:
                raise TypeError(f"input '{info.name}': cannot be given from Python (not a tensor, or of an element "
                                f"type numpy lacks: install ml_dtypes for bfloat16, float8 and int4 types)")
            if isinstance(v, np.ndarray):
                if v.dtype != info.dtype and v.dtype.newbyteorder("=") == info.dtype:
                    v = v.astype(info.dtype)  # the same type in the other byte order: the library reads native order
                if v.dtype != info.dtype and not (info.dtype == np.object_ and v.dtype.kind in "US"):
                    raise TypeError(f"input '{info.name}': expected dtype {info.dtype}, got {v.dtype}")
            else:
                try:
                    v = np.asarray(v, dtype=info.dtype if info.dtype != np.object_ else None)
                except (TypeError, ValueError, OverflowError) as e:
                    kind = TypeError if isinstance(e, TypeError) else ValueError
                    raise kind(f"input '{info.name}': cannot make an array of {info.dtype} from "
                               f"{type(v).__name__}: {e}") from None
            if info.dtype == np.object_ and v.dtype.kind not in "OUS":
                raise TypeError(f"input '{info.name}': expected strings, got dtype {v.dtype}")
            if v.ndim > 16:
                raise ValueError(f"input '{info.name}': rank {v.ndim} exceeds 16")
            arrays.append(np.asarray(v, order="C"))  # 0-d stays 0-d (np.ascontiguousarray makes it (1,))
        return arrays

    def _make_tensor(self, name, a):
        lib = self._lib
        dt = STRING if a.dtype.kind in "OUS" else _ONNX.get(a.dtype)
        if dt is None:
            raise TypeError(f"input '{name}': dtype {a.dtype} has no lathe equivalent")
        dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        t = ctypes.c_void_p()
        if dt == STRING:
            flat = a.reshape(-1)
            for i, s in enumerate(flat):
                if not isinstance(s, (str, bytes)):
                    raise TypeError(f"input '{name}': element {i} is {type(s).__name__} {s!r}, not a string")
            st = lib.lathe_tensor_create(dt, a.ndim, dims, ctypes.byref(t))
            if st == 0:
                for i, s in enumerate(flat):
                    b = s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")
                    if lib.lathe_tensor_set_string(t, i, b, len(b)) != 0:
                        lib.lathe_tensor_free(t)
                        raise LatheError(f"input '{name}': cannot set string {i}", "nomem")
        else:
            st = lib.lathe_tensor_create_copy(dt, a.ndim, dims, a.ctypes.data if a.size else None, ctypes.byref(t))
        if st != 0:
            raise LatheError(f"input '{name}': cannot make a tensor of shape {a.shape} ({_capi.status_name(st)})",
                             _capi.status_name(st))
        return t.value

    def _to_numpy(self, t):
        lib = self._lib
        dt = lib.lathe_tensor_dtype(t)
        rank = lib.lathe_tensor_rank(t)
        sp = lib.lathe_tensor_shape(t)
        shape = tuple(int(sp[i]) for i in range(rank))
        n = lib.lathe_tensor_numel(t)
        data = lib.lathe_tensor_data(t)
        if dt == STRING:
            ptrs = (ctypes.c_char_p * n).from_address(data) if n else []
            flat = np.array([p.decode("utf-8", "surrogateescape") for p in ptrs] if n else [], dtype=object)
            return flat.reshape(shape)
        npdt = _NP.get(dt)
        if npdt is None:
            name = lib.lathe_dtype_name(dt).decode()
            raise LatheError(f"output of type {name}: install ml_dtypes to receive it in numpy", "unsupported")
        nbytes = lib.lathe_tensor_nbytes(t)
        if nbytes == 0:
            return np.empty(shape, dtype=npdt)
        buf = (ctypes.c_char * nbytes).from_address(data)
        return np.frombuffer(buf, dtype=npdt, count=n).reshape(shape).copy()

    def _run_buffers(self, arrays):
        lib, h = self._lib, self._h
        for info, a in zip(self.inputs, arrays):
            if a.shape != info.shape:
                raise LatheError(f"input '{info.name}': expected shape {list(info.shape)}, got {list(a.shape)} "
                                 f"(the model was compiled for fixed shapes: compile again with shapes=...)",
                                 "invalid")
        outs = [np.empty(o.shape, dtype=o.dtype) for o in self.outputs]
        # a zero-size array may have no data pointer: give the library a valid dummy address then
        dummy = ctypes.c_char()

        def ptrs(xs):
            return (ctypes.c_void_p * max(len(xs), 1))(*[x.ctypes.data if x.size else ctypes.addressof(dummy)
                                                          for x in xs])
        ins, ops = ptrs(arrays), ptrs(outs)
        st = lib.lathe_compiled_run_buffers(h, ins, len(arrays), ops, len(outs))
        if st != 0:
            raise _error(f"{self.path}: {lib.lathe_compiled_error(h).decode(errors='replace')}", _capi.status_name(st))
        return {o.name: a for o, a in zip(self.outputs, outs)}

    def _select_shapes(self, shapes):
        """A model compiled for every shape: its plan for these input shapes selected (the next
        run_buffers / run_device runs at them). Returns the outputs' shapes at them, or False when one is
        known only at run time. What a shape needs on this side (its ctypes arguments, the output shapes)
        is kept per input shapes (16 of them)."""
        lib, h = self._lib, self._h
        key = tuple(tuple(s) for s in shapes)
        sel = self._selected.get(key)
        if sel is None:
            n = len(key)
            ranks = (ctypes.c_int * max(n, 1))(*[len(s) for s in key])
            arrs = [(ctypes.c_int64 * max(len(s), 1))(*s) for s in key]
            dims = (_capi.c_i64_p * max(n, 1))(*[ctypes.cast(a, _capi.c_i64_p) for a in arrs])
            sel = [ranks, arrs, dims, None]
        st = lib.lathe_compiled_select_shapes(h, len(key), sel[0], sel[2])
        if st != 0:
            raise _error(f"{self.path}: {lib.lathe_compiled_error(h).decode(errors='replace')}", _capi.status_name(st))
        if sel[3] is None:  # the outputs' shapes at these input shapes (False: one is known only at run time)
            out_shapes, buf = [], (ctypes.c_int64 * 16)()
            for k in range(len(self.outputs)):
                r = lib.lathe_compiled_output_shape(h, k, buf, 16)
                if r < 0 or r > 16 or any(buf[a] < 0 for a in range(r)):
                    out_shapes = False
                    break
                out_shapes.append(tuple(buf[a] for a in range(r)))
            sel[3] = out_shapes
            if len(self._selected) >= 16:
                self._selected.pop(next(iter(self._selected)))
            self._selected[key] = sel
        return sel[3]

    def _run_selected(self, arrays):
        """A model compiled for every shape: its plan for these shapes selected, then run on the arrays in place
        (as _run_buffers); outputs whose shape is only known at run time go through _run_tensors."""
        lib, h = self._lib, self._h
        out_shapes = self._select_shapes([a.shape for a in arrays])
        if out_shapes is False:
            return self._run_tensors(arrays)
        outs = [np.empty(shape, dtype=o.dtype) for shape, o in zip(out_shapes, self.outputs)]
        dummy = ctypes.c_char()  # a zero-size array may have no data pointer

        def ptrs(xs):
            return (ctypes.c_void_p * max(len(xs), 1))(*[x.ctypes.data if x.size else ctypes.addressof(dummy)
                                                          for x in xs])
        st = lib.lathe_compiled_run_buffers(h, ptrs(arrays), len(arrays), ptrs(outs), len(outs))
        if st != 0:
            raise _error(f"{self.path}: {lib.lathe_compiled_error(h).decode(errors='replace')}", _capi.status_name(st))
        return {o.name: a for o, a in zip(self.outputs, outs)}

    def _run_tensors(self, arrays):
        lib, h = self._lib, self._h
        n_out = len(self.outputs)
        ins = (ctypes.c_void_p * max(len(arrays), 1))()
        outs = (ctypes.c_void_p * max(n_out, 1))()
        try:
            for i, (info, a) in enumerate(zip(self.inputs, arrays)):
                ins[i] = self._make_tensor(info.name, a)
            if self.backend == "interp":
                st = lib.lathe_run(h, ins, len(arrays), outs, n_out)
                err = lib.lathe_model_error
            else:
                st = lib.lathe_compiled_run(h, ins, len(arrays), outs, n_out)
                err = lib.lathe_compiled_error
            if st != 0:
                raise _error(f"{self.path}: {err(h).decode(errors='replace')}", _capi.status_name(st))
            return {o.name: self._to_numpy(outs[k]) for k, o in enumerate(self.outputs)}
        finally:
            for p in list(ins) + list(outs):
                if p:
                    lib.lathe_tensor_free(p)

    def run(self, feeds=None, **kwargs):
        """Run on {name: array} (and/or keyword arrays); returns {output name: ndarray} in graph order."""
        merged = dict(feeds or {})
        for k, v in kwargs.items():
            if k in merged:
                raise TypeError(f"input '{k}' given twice")
            merged[k] = v
        return self(merged)

    def __call__(self, *args, **kwargs):
        arrays = self._feeds(args, kwargs)
        with self._lock:
            self._check_open()
            if self._buffers:
                return self._run_buffers(arrays)
            return self._run_selected(arrays) if self._selects else self._run_tensors(arrays)


def compile(path, shapes=None, backend="cpu", threads=None, opt_level=None, *, dims=None, seed=0, cache_dir=None,
            cc=None, dump_code_dir=None, nvrtc=None, enable_passes=None, tune_db=None, cc_timeout=None,
            max_loop_bytes=None, no_split=False):
    """Load (and for backend "cpu", compile) the ONNX model at `path`; returns a Model.

    shapes: {"input": (1, 3, 224, 224), ...} or "input:1x3x224x224" — fixes input shapes.
    dims: {"batch": 1, "sequence": 128} or "batch=1,sequence=128" — binds symbolic dims everywhere.
    backend: "cpu" (compiled, the default), "cuda" (compiled for the GPU: weights uploaded once, inputs and
      outputs copied per run, the kernels replayed as a CUDA graph; nodes with no GPU lowering run on the host)
      or "interp" (the reference interpreter).
    threads: threads of the compiled kernels (None or 0: every CPU).
    opt_level: 0..3 (None: the library's default, -O3, the same as the CLI).
    seed: seed of the model's random-number operators.
    cache_dir: the compiled-code cache (None: $XDG_CACHE_HOME/lathe or ~/.cache/lathe; False: no cache).
    cc: the C compiler command (None: $CC, else "cc"). dump_code_dir: write the generated C (or CUDA) here.
    nvrtc: for backend "cuda", the NVRTC library tried first (None: $LATHE_NVRTC, then libnvrtc.so.13 / .12).
    enable_passes: names of graph passes that are off by default to run too, e.g. ["layout_nchwc"]
      (the CLI's --enable-pass); an unknown name raises LatheError (status "usage") listing the passes.
    tune_db: a tuning database (`lathe tune` writes one): backend "cpu" kernels take its schedules for this
      CPU and thread count (None: tune.tsv in the cache folder when it exists, as the CLI; False: the
      default schedules; a path that does not exist raises LatheError).
    cc_timeout: seconds one C compiler run may take (None: the library's 300; past it the compiler is killed
      and LatheError is raised naming it and the limit).
    max_loop_bytes: most bytes a Loop's scan outputs or one sequence may hold while the model runs (None: the
      library's 4 GiB); past it the call raises LatheError (status "out of memory") naming the node.
    no_split: True keeps ops whose output size depends on the data (NonZero, NonMaxSuppression, TopK with a
      run-time k, ...) and every node after them on the host (the CLI's --no-split); by default the nodes
      after them are compiled at run time for the sizes the data gives (the report says so).
    Raises LatheError (with .status) when the model cannot be loaded or compiled.
    """
    lib = _capi.load()
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"path must be a string or a path, got {type(path).__name__} {path!r}") from None
    path_b = _enc(path, "path")
    if not path_b:
        raise ValueError("path is empty")
    if not isinstance(backend, str) or backend not in ("cpu", "cuda", "interp"):
        raise LatheError(f"backend {backend!r} is not available (backends: {', '.join(backends())})", "unsupported")
    if seed is None:
        raise ValueError("seed must be a non-negative integer, got None")
    seed = _int_arg("seed", seed, 0, (1 << 64) - 1)
    sh, dm = _shapes_arg(shapes), _dims_arg(dims)
    loop_limit = 0 if max_loop_bytes is None else _int_arg("max_loop_bytes", max_loop_bytes, 1, (1 << 63) - 1)
    if cc_timeout is None:
        timeout = 0.0  # the C API's "default"
    elif isinstance(cc_timeout, bool) or not isinstance(cc_timeout, (int, float, np.integer, np.floating)) or \
            not cc_timeout > 0 or not math.isfinite(cc_timeout):
        raise ValueError(f"cc_timeout must be a positive number of seconds, got {cc_timeout!r}")
    else:
        timeout = float(cc_timeout)
    lo = _capi.LoadOptions(_enc(sh, "shapes"), _enc(dm, "dims"), seed, loop_limit)
    err = ctypes.create_string_buffer(4096)
    h = ctypes.c_void_p()
    if backend == "interp":
        if threads not in (None, 0, 1):
            raise LatheError("threads: the interpreter runs on one thread", "usage")
        if opt_level not in (None, 0):
            raise LatheError("opt_level: the interpreter runs the graph as written (use backend='cpu')", "usage")
        if enable_passes:
            raise LatheError("enable_passes: the interpreter runs the graph as written (use backend='cpu')", "usage")
        if no_split:
            raise LatheError("no_split: the interpreter runs every node on the host already (use backend='cpu')", "usage")
        st = lib.lathe_model_load(path_b, ctypes.byref(lo), ctypes.byref(h), err, len(err))
        if st != 0:
            raise _error(err.value, _capi.status_name(st))
        return Model(path, backend, h.value, lib, 1)
    if not _capi.has("lathe_compile"):
        raise LatheError(f"{_capi.library_path()} has no compiler (an interpreter-only build): use backend='interp'",
                         "unsupported")
    if opt_level is None:
        level = 0  # the C API's "default"
    elif not isinstance(opt_level, bool) and isinstance(opt_level, (int, np.integer)) and opt_level in (0, 1, 2, 3):
        level = -1 if opt_level == 0 else int(opt_level)
    else:
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    n = 0 if threads is None else _int_arg("threads", threads, 0, _INT_MAX)
    if cache_dir is None:
        cache_dir = _default_cache_dir()
    elif cache_dir is False:
        cache_dir = None
    else:
        cache_dir = os.fsdecode(_enc(cache_dir, "cache_dir"))
    if dump_code_dir is not None:
        dump_code_dir = os.fsdecode(_enc(dump_code_dir, "dump_code_dir"))
        try:
            os.makedirs(dump_code_dir, exist_ok=True)  # with missing parents, as the CLI's --dump-code
        except OSError as e:
            raise type(e)(e.errno, f"dump_code_dir: cannot create folder {dump_code_dir}: {e.strerror}") from None
    if cc is None:
        cc = os.environ.get("CC") or None
    if nvrtc is None:
        nvrtc = os.environ.get("LATHE_NVRTC") or None
    if isinstance(enable_passes, str):
        enable_passes = [enable_passes]
    try:
        enable = list(enable_passes or ())
    except TypeError:
        raise TypeError(f"enable_passes must be a pass name or a list of names, got {enable_passes!r}") from None
    for name in enable:
        if not isinstance(name, str) or not name or "," in name or "\0" in name:
            raise ValueError(f"enable_passes: expected pass names, got {name!r}")
    if not isinstance(no_split, (bool, np.bool_)):
        raise TypeError(f"no_split must be True or False, got {no_split!r}")
    if tune_db is None:
        default = os.path.join(cache_dir, "tune.tsv") if cache_dir else None
        tune_db = default if default and os.path.isfile(default) else None
    elif tune_db is False:
        tune_db = None
    co = _capi.CompileOptions(level, _enc(backend), n, _enc(cache_dir, "cache_dir"), _enc(cc, "cc"),
                              _enc(dump_code_dir, "dump_code_dir"), _enc(nvrtc, "nvrtc"),
                              _enc(",".join(enable) if enable else None, "enable_passes"), _enc(tune_db, "tune_db"),
                              timeout, 1 if no_split else 0)
    st = lib.lathe_compile(path_b, ctypes.byref(lo), ctypes.byref(co), ctypes.byref(h), err, len(err))
    if st != 0:
        raise _error(err.value, _capi.status_name(st))
    return Model(path, backend, h.value, lib, n)


# onnxruntime's Python API over the above (imported last: it uses compile, Model and the dtype tables)
from .session import (InferenceSession, SessionOptions, RunOptions, GraphOptimizationLevel, ExecutionMode,  # noqa: E402
                      ExecutionOrder, NodeArg, ModelMetadata, IOBinding, SessionIOBinding, OrtValue,
                      get_available_providers, get_all_providers, get_device, get_version_string, get_build_info,
                      set_seed, set_default_logger_severity, set_default_logger_verbosity, capi, Fail,
                      InvalidArgument, NoSuchFile, InvalidProtobuf, InvalidGraph, RuntimeException, EPFail,
                      MissingInputError)
