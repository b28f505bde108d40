"""session.py — onnxruntime's Python API over lathe, so that `import lathe as ort` is the only change.

    import lathe as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    sess.get_inputs()[0]         # NodeArg(name='x', type='tensor(float)', shape=['batch', 64])
    y, = sess.run(None, {"x": x})                        # a list of numpy arrays, in output order

What each call does, and every way it differs from onnxruntime, is in python/README.md ("Switching
from onnxruntime"). In short:

* An InferenceSession loads the model once for its metadata (names, types, shapes with the symbolic
  dims' names, as onnxruntime reports them), then compiles it with lathe.compile when the session is
  made. A model whose input dims are all static (after the free-dimension overrides) is compiled for
  those shapes. One that keeps symbolic dims is compiled once with them unbound: one compiled model for
  every input shape (a "family", src/compile/family.h), where a new shape costs the host pipeline
  (milliseconds) and the C compiler (or NVRTC) runs only when a shape needs a new bucket; the family
  caches the plans of the last 8 shapes itself. Where the family cannot serve (an input of unknown
  rank; lathe.compile refusing the unbound model as unsupported; a run at some shape refused as
  unsupported) the session compiles each input-shape signature on its own, as it did before families,
  and keeps those plans ("lathe.max_cached_shapes", default 4, least recently used dropped first).
  lathe's on-disk cache (by content hash) makes building code seen before cheap either way.
* Feeds are checked as onnxruntime checks them (names, dtype, rank, static dims) and raise classes
  named as onnxruntime's (InvalidArgument, ...), all subclasses of LatheError; where onnxruntime
  raises a builtin (ValueError for missing inputs) the class derives from that builtin too.
* Feeds are numpy arrays or anything with __dlpack__ on the CPU (read in place when C-contiguous);
  outputs are numpy arrays. A model compiled for fixed shapes reads the feeds and writes the outputs
  in place (lathe_compiled_run_buffers); a family first selects the run's input shapes
  (lathe_compiled_select_shapes: its plan for them), then runs the same way into fresh arrays.
* IO binding (sess.io_binding()) binds CPU memory: inputs read as feeds are, caller-provided output
  buffers written in place for fixed shapes, or filled with a copy of the result after the run for a
  symbolic model (and for outputs whose shape is only known at run time).
* GPU memory, in a session on the CUDA provider: feeds that are CUDA tensors (DLPack device kDLCUDA: torch,
  CuPy, a CUDA OrtValue), IO-bound CUDA pointers and OrtValues on 'cuda' are read and written in place by
  lathe_compiled_run_device (device-to-device copies into and out of the compiled model's own buffers, no
  host copy); run() still returns numpy arrays (onnxruntime's contract: a copy to the host), while IO
  binding's 'cuda' outputs and run_with_ort_values on GPU feeds give CUDA OrtValues, which export DLPack
  (torch.from_dlpack). Host feeds mixed in are copied to the GPU for the run. A symbolic model runs GPU
  memory on its family: the run's input shapes are selected first (lathe_compiled_select_shapes: the
  C API needs the shapes for device pointers), which gives the outputs' shapes; where the family cannot
  serve, on a plan compiled for that input-shape signature. A session on the CPU refuses GPU memory,
  naming the input.
"""
import collections
import collections.abc
import ctypes
import datetime
import enum
import json
import operator
import os
import shutil
import tempfile
import threading
import time
import types
import warnings
import weakref

import numpy as np

from . import _capi, _dlpack
from . import _NP, _ONNX, compile as _lathe_compile
from ._capi import LatheError

__all__ = ["InferenceSession", "SessionOptions", "RunOptions", "GraphOptimizationLevel", "ExecutionMode",
           "ExecutionOrder", "NodeArg", "ModelMetadata", "IOBinding", "SessionIOBinding", "OrtValue",
           "get_available_providers", "get_all_providers", "get_device", "get_version_string", "get_build_info",
           "set_seed", "set_default_logger_severity", "set_default_logger_verbosity", "capi",
           "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException", "InvalidProtobuf",
           "ModelLoaded", "InvalidGraph", "EPFail", "MissingInputError"]

CPU_PROVIDER = "CPUExecutionProvider"
CUDA_PROVIDER = "CUDAExecutionProvider"
_KNOWN_PROVIDERS = [CUDA_PROVIDER, CPU_PROVIDER]


# ---------------------------------------------------------------------------------------------------
# Errors: onnxruntime's classes (onnxruntime.capi.onnxruntime_pybind11_state.*), as LatheError subclasses.
# Messages read "[LatheError] : CODE : NAME : message", CODE and NAME being onnxruntime's status codes.

class _OrtStyleError(LatheError):
    _code, _code_name = 1, "FAIL"

    def __init__(self, message, status="invalid"):
        super().__init__(f"[LatheError] : {self._code} : {self._code_name} : {message}", status)


def _error_class(name, code, code_name, doc, bases=(_OrtStyleError,)):
    return type(name, bases, {"_code": code, "_code_name": code_name, "__doc__": doc, "__module__": __name__})


Fail = _error_class("Fail", 1, "FAIL", "A run or compile failed (onnxruntime's Fail).")
InvalidArgument = _error_class("InvalidArgument", 2, "INVALID_ARGUMENT",
                               "A bad feed, output name or option (onnxruntime's InvalidArgument).")
NoSuchFile = _error_class("NoSuchFile", 3, "NO_SUCHFILE", "The model file does not exist (onnxruntime's NoSuchFile).")
NoModel = _error_class("NoModel", 4, "NO_MODEL", "onnxruntime's NoModel (not raised by lathe).")
EngineError = _error_class("EngineError", 5, "ENGINE_ERROR", "onnxruntime's EngineError (not raised by lathe).")
RuntimeException = _error_class("RuntimeException", 6, "RUNTIME_EXCEPTION",
                                "An internal error of lathe (onnxruntime's RuntimeException).")
InvalidProtobuf = _error_class("InvalidProtobuf", 7, "INVALID_PROTOBUF",
                               "The bytes are not an ONNX model (onnxruntime's InvalidProtobuf).")
ModelLoaded = _error_class("ModelLoaded", 8, "MODEL_LOADED", "onnxruntime's ModelLoaded (not raised by lathe).")
NotImplemented_ = _error_class("NotImplemented", 9, "NOT_IMPLEMENTED",
                               "lathe cannot run something in the model (onnxruntime's NotImplemented).")
InvalidGraph = _error_class("InvalidGraph", 10, "INVALID_GRAPH",
                            "The model is not valid (onnxruntime's InvalidGraph).")
EPFail = _error_class("EPFail", 11, "EP_FAIL", "An execution provider failed (onnxruntime's EPFail).")


class MissingInputError(LatheError, ValueError):
    """Required inputs are missing from the feed (onnxruntime raises a plain ValueError)."""

    def __init__(self, message):
        super().__init__(message, "usage")


# `ort.capi.onnxruntime_pybind11_state.InvalidArgument` spelled the same after `import lathe as ort`
_state = types.ModuleType("lathe.capi.onnxruntime_pybind11_state",
                          "onnxruntime's exception classes, as lathe raises them (attribute access only).")
for _cls in (Fail, InvalidArgument, NoSuchFile, NoModel, EngineError, RuntimeException, InvalidProtobuf, ModelLoaded,
             NotImplemented_, InvalidGraph, EPFail):
    setattr(_state, _cls.__name__, _cls)
capi = types.ModuleType("lathe.capi", "onnxruntime.capi's look-alike: capi.onnxruntime_pybind11_state.<error class>")
capi.onnxruntime_pybind11_state = _state


def _from_lathe(e, phase, path=None):
    """A LatheError from lathe.compile or a run as onnxruntime's class for that situation (see README).
    path: the temporary file a model given as bytes was written to (named "<model bytes>" instead)."""
    msg, st = str(e), getattr(e, "status", "internal")
    if path:
        msg = msg.replace(path, "<model bytes>")
    if st == "unsupported":
        cls = NotImplemented_
    elif st == "internal":
        cls = RuntimeException
    elif st == "invalid":
        if phase == "load":
            cls = InvalidProtobuf if "not an ONNX model" in msg else InvalidGraph
        elif phase == "compile":
            cls = InvalidGraph
        else:
            cls = InvalidArgument
    elif st == "usage":
        cls = InvalidArgument
    else:  # nomem, io (a compiler failure, a cache folder refused)
        cls = Fail
    err = cls(msg, st)
    err.__cause__ = e
    return err


# ---------------------------------------------------------------------------------------------------
# Enums (values as onnxruntime's)

class GraphOptimizationLevel(enum.IntEnum):
    """Mapped onto lathe's -O levels: DISABLE_ALL -O0, BASIC -O1, EXTENDED -O2, LAYOUT and ALL -O3."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted; no effect (lathe runs a plan's steps in order, parallel inside kernels)."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """Accepted; no effect (lathe's compiler fixes the order)."""
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


_OPT_LEVEL = {GraphOptimizationLevel.ORT_DISABLE_ALL: 0, GraphOptimizationLevel.ORT_ENABLE_BASIC: 1,
              GraphOptimizationLevel.ORT_ENABLE_EXTENDED: 2, GraphOptimizationLevel.ORT_ENABLE_LAYOUT: 3,
              GraphOptimizationLevel.ORT_ENABLE_ALL: None}


def _enum_value(cls, what, v):
    """v as a member of cls: a member, an int of one, or onnxruntime's own enum value (it converts to int)."""
    if isinstance(v, cls):
        return v
    try:
        return cls(int(v) if not isinstance(v, bool) else None)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a {cls.__name__} ({', '.join(cls.__members__)}), got {v!r}") from None


# ---------------------------------------------------------------------------------------------------
# Options

def _add_config_entry(config, method, key, value):
    """SessionOptions' and RunOptions' config entries: string keys to string values, as onnxruntime's."""
    if not isinstance(key, str) or not isinstance(value, str):
        raise TypeError(f"{method}(key, value) takes two strings")
    config[key] = value


def _get_config_entry(config, owner, key):
    if key not in config:
        raise Fail(f"{owner} does not have configuration with key: {key}", "usage")
    return config[key]


class SessionOptions:
    """onnxruntime.SessionOptions. Effective: intra_op_num_threads (lathe's threads; 0 = every CPU),
    graph_optimization_level (lathe's -O level), enable_profiling / profile_file_prefix (a session-level
    trace: load, compiles, runs), add_free_dimension_override_by_name (fixes a symbolic dim), and the
    session config entries "lathe.cache_dir", "lathe.max_cached_shapes", "lathe.enable_passes".
    Everything else is accepted and stored with no effect (README: "Switching from onnxruntime")."""

    __slots__ = ("enable_cpu_mem_arena", "enable_mem_pattern", "enable_mem_reuse", "enable_profiling",
                 "_execution_mode", "_execution_order", "_graph_optimization_level", "inter_op_num_threads",
                 "intra_op_num_threads", "log_severity_level", "log_verbosity_level", "logid",
                 "optimized_model_filepath", "profile_file_prefix", "use_deterministic_compute",
                 "use_per_session_threads", "_config", "_dim_overrides", "_denotation_overrides")

    def __init__(self):
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self._execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self._execution_order = ExecutionOrder.DEFAULT
        self._graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.inter_op_num_threads = 0
        self.intra_op_num_threads = 0
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.profile_file_prefix = "lathe_profile_"
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config = {}
        self._dim_overrides = {}
        self._denotation_overrides = {}

    graph_optimization_level = property(
        lambda self: self._graph_optimization_level,
        lambda self, v: setattr(self, "_graph_optimization_level",
                                _enum_value(GraphOptimizationLevel, "graph_optimization_level", v)))
    execution_mode = property(
        lambda self: self._execution_mode,
        lambda self, v: setattr(self, "_execution_mode", _enum_value(ExecutionMode, "execution_mode", v)))
    execution_order = property(
        lambda self: self._execution_order,
        lambda self, v: setattr(self, "_execution_order", _enum_value(ExecutionOrder, "execution_order", v)))

    def add_session_config_entry(self, key, value):
        _add_config_entry(self._config, "add_session_config_entry", key, value)

    def get_session_config_entry(self, key):
        return _get_config_entry(self._config, "SessionOptions", key)

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Fix the symbolic dim `dim_name` to `dim_value` (lathe's dims=): shapes report it, feeds must match."""
        if not isinstance(dim_name, str) or not dim_name:
            raise TypeError(f"dim_name must be a non-empty string, got {dim_name!r}")
        if isinstance(dim_value, bool) or not isinstance(dim_value, (int, np.integer)) or dim_value < 0:
            raise TypeError(f"dim_value must be a non-negative integer, got {dim_value!r}")
        self._dim_overrides[dim_name] = int(dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        """Stored, no effect (lathe does not read dim denotations): a warning says so when a session starts."""
        self._denotation_overrides[str(dim_denotation)] = int(dim_value)

    def add_initializer(self, name, ortvalue):
        raise NotImplemented_("add_initializer: lathe compiles initializers into the model; overriding them is "
                              "not supported", "unsupported")

    def add_external_initializers(self, names, ortvalues):
        raise NotImplemented_("add_external_initializers: not supported by lathe", "unsupported")

    def register_custom_ops_library(self, path):
        raise NotImplemented_("register_custom_ops_library: lathe has no custom operator libraries", "unsupported")

    def has_providers(self):
        return False

    def _copy(self):
        c = SessionOptions()
        for k in self.__slots__:
            v = getattr(self, k)
            setattr(c, k, dict(v) if isinstance(v, dict) else v)
        return c

    @classmethod
    def _adopt(cls, other):
        """A copy of our own options, or of a look-alike (onnxruntime's SessionOptions) by attribute."""
        if isinstance(other, SessionOptions):
            return other._copy()
        c = cls()
        for k in ("enable_cpu_mem_arena", "enable_mem_pattern", "enable_mem_reuse", "enable_profiling",
                  "execution_mode", "execution_order", "graph_optimization_level", "inter_op_num_threads",
                  "intra_op_num_threads", "log_severity_level", "log_verbosity_level", "logid",
                  "optimized_model_filepath", "profile_file_prefix", "use_deterministic_compute"):
            if hasattr(other, k):
                setattr(c, k, getattr(other, k))
        return c

    def __repr__(self):
        return (f"<lathe.SessionOptions intra_op_num_threads={self.intra_op_num_threads} "
                f"graph_optimization_level={self.graph_optimization_level.name}>")


class RunOptions:
    """onnxruntime.RunOptions. `terminate` set before a run makes it raise; the rest has no effect."""

    __slots__ = ("log_severity_level", "log_verbosity_level", "logid", "only_execute_path_to_fetches", "terminate",
                 "_config")

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self.terminate = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        _add_config_entry(self._config, "add_run_config_entry", key, value)

    def get_run_config_entry(self, key):
        return _get_config_entry(self._config, "RunOptions", key)

    def add_active_adapter(self, adapter):
        raise NotImplemented_("add_active_adapter: LoRA adapters are not supported by lathe", "unsupported")


# ---------------------------------------------------------------------------------------------------
# Metadata

class NodeArg:
    """An input or output: .name, .shape (int per static dim, the dim's name for a symbolic one, None for
    an unnamed unknown one; [] when the rank is unknown), .type ('tensor(float)', ...)."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name, type, shape):
        self.name, self.type, self.shape = name, type, shape

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    __str__ = __repr__


class ModelMetadata:
    """onnxruntime.ModelMetadata. The C API exposes none of these: they are read from the ONNX file
    with the onnx package when it is installed, else they keep the defaults (empty, version 2**63-1)."""

    __slots__ = ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                 "custom_metadata_map")

    def __init__(self):
        self.producer_name = self.graph_name = self.domain = self.description = self.graph_description = ""
        self.version = (1 << 63) - 1  # onnxruntime's value when the model sets none
        self.custom_metadata_map = {}

    def __repr__(self):
        return f"<lathe.ModelMetadata producer_name={self.producer_name!r} graph_name={self.graph_name!r}>"


def _type_name(dt):
    """ONNX element type number -> onnxruntime's 'tensor(float)' spelling."""
    return f"tensor({_capi.load().lathe_dtype_name(dt).decode()})"


def _np_type_name(dtype):
    if dtype.kind in "OUS":
        return "tensor(string)"
    num = _ONNX.get(dtype.newbyteorder("=")) if dtype.byteorder not in "=|" else _ONNX.get(dtype)
    return _type_name(num) if num is not None else f"numpy {dtype}"


def _onnx_type_string(tp):
    """An onnx TypeProto as onnxruntime spells it: 'seq(tensor(float))', 'map(int64,tensor(float))', ..."""
    kind = tp.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        t = getattr(tp, kind)
        name = _type_name(t.elem_type)[len("tensor"):]
        return ("sparse_tensor" if kind == "sparse_tensor_type" else "tensor") + name
    if kind == "sequence_type":
        return f"seq({_onnx_type_string(tp.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({_onnx_type_string(tp.optional_type.elem_type)})"
    if kind == "map_type":
        key = _capi.load().lathe_dtype_name(tp.map_type.key_type).decode()
        return f"map({key},{_onnx_type_string(tp.map_type.value_type)})"
    return "unknown"


def _read_onnx(path):
    """The ModelProto at path (no external data) when the onnx package is installed, else None."""
    try:
        import onnx
    except ImportError:
        return None
    try:
        return onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 — metadata is best effort: lathe already loaded the model
        return None


class _Info:
    """What the session knows of one input or output."""
    __slots__ = ("name", "dt", "np_dtype", "shape", "arg")

    def __init__(self, name, dt, shape, type_str):
        self.name, self.dt, self.shape = name, dt, shape  # shape: tuple (int / str / None) or None
        self.np_dtype = _NP.get(dt) if dt else None
        self.arg = NodeArg(name, type_str, list(shape) if shape is not None else [])

    @property
    def static(self):
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)


# ---------------------------------------------------------------------------------------------------
# Providers and module-level functions

_cuda_state = None
_seed = 0


def _cuda_available():
    """A CUDA driver with at least one device, NVRTC, and a library that compiles: lathe's "cuda" backend can run."""
    global _cuda_state
    if _cuda_state is None:
        _cuda_state = False
        try:
            if _capi.has("lathe_compile"):
                cuda = ctypes.CDLL("libcuda.so.1")
                n = ctypes.c_int(0)
                if cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value > 0:
                    for name in (os.environ.get("LATHE_NVRTC"), "libnvrtc.so.13", "libnvrtc.so.12"):
                        if not name:
                            continue
                        try:
                            ctypes.CDLL(name)
                            _cuda_state = True
                            break
                        except OSError:
                            pass
        except (OSError, AttributeError, LatheError):
            _cuda_state = False
    return _cuda_state


def get_all_providers():
    """Every provider name lathe knows."""
    return list(_KNOWN_PROVIDERS)


def get_available_providers():
    """['CUDAExecutionProvider', 'CPUExecutionProvider'] where a GPU, its driver and NVRTC are present, else
    ['CPUExecutionProvider']."""
    return [CUDA_PROVIDER, CPU_PROVIDER] if _cuda_available() else [CPU_PROVIDER]


def get_device():
    """'GPU' where the CUDA provider is available, else 'CPU'."""
    return "GPU" if _cuda_available() else "CPU"


def get_version_string():
    return _capi.load().lathe_version().decode()


def get_build_info():
    return f"lathe {get_version_string()} ({_capi.library_path()})"


def set_seed(seed):
    """Seed of the random-number operators (RandomNormal, ...) for sessions made after this call."""
    global _seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    _seed = int(seed) & ((1 << 64) - 1)


def set_default_logger_severity(level):
    """Accepted; no effect (lathe never logs)."""


def set_default_logger_verbosity(level):
    """Accepted; no effect (lathe never logs)."""


def _provider_available(name):
    """Whether lathe can run with this provider. The GPU is probed only when CUDA is asked for (the probe
    initializes the CUDA driver in this process)."""
    return name == CPU_PROVIDER or (name == CUDA_PROVIDER and _cuda_available())


def _normalize_providers(providers, provider_options):
    """onnxruntime's check_and_normalize_provider_args: ([names], [options dicts of strings])."""
    names, opts = [], []

    def add(name, options):
        if not _provider_available(name):
            warnings.warn(f"Specified provider '{name}' is not in available provider names."
                          f"Available providers: '{', '.join(get_available_providers())}'")
        if name in names:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.")
            return
        names.append(name)
        opts.append({str(k): str(v) for k, v in options.items()})

    if providers is None:
        return [CPU_PROVIDER], [{}]
    if isinstance(providers, str) or not isinstance(providers, collections.abc.Sequence):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
        for name, options in zip(providers, provider_options):
            add(name, options)
    else:
        for p in providers:
            if isinstance(p, str):
                add(p, {})
            elif isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], dict):
                add(p[0], p[1])
            else:
                raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
    return names, opts


# ---------------------------------------------------------------------------------------------------
# Values

def _element_dtype(element_type):
    """A numpy type or an ONNX element type number -> numpy dtype."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        dt = _NP.get(int(element_type))
        if dt is None:
            raise InvalidArgument(f"element type {element_type} has no numpy equivalent here "
                                  f"(install ml_dtypes for bfloat16, float8 and int4 types)")
        return dt
    try:
        return np.dtype(element_type)
    except TypeError:
        raise InvalidArgument(f"element_type must be a numpy type or an ONNX element type number, "
                              f"got {element_type!r}") from None


def _shape_tuple(shape, what):
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise InvalidArgument(f"{what}: shape must be a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise InvalidArgument(f"{what}: negative dimension in {list(dims)}")
    return dims


def _address(ptr, what):
    if isinstance(ptr, bool) or not isinstance(ptr, (int, np.integer)):
        raise InvalidArgument(f"{what}: buffer_ptr must be an integer address, got {ptr!r}")
    return int(ptr)


def _array_at(ptr, dtype, shape, what):
    """A numpy array viewing `ptr` (CPU memory the caller owns): nothing is copied."""
    ptr = _address(ptr, what)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = n * dtype.itemsize
    if nbytes == 0:
        return np.empty(shape, dtype)
    if not ptr:
        raise InvalidArgument(f"{what}: buffer_ptr is NULL")
    buf = (ctypes.c_char * nbytes).from_address(int(ptr))
    return np.frombuffer(buf, dtype=dtype, count=n).reshape(shape)


def _device_kind(device_type, device_id, what):
    """'cpu' or 'cuda' for onnxruntime's device_type (device 0 only); others are refused."""
    dev = str(device_type).lower()
    if dev == "cpu":
        return "cpu"
    if dev == "cuda":
        if isinstance(device_id, bool) or not isinstance(device_id, (int, np.integer)) or int(device_id) != 0:
            raise InvalidArgument(f"{what}: device_id {device_id!r}: lathe runs on CUDA device 0 (choose the GPU "
                                  f"with CUDA_VISIBLE_DEVICES)", "usage")
        return "cuda"
    raise Fail(f"{what}: device_type '{device_type}': lathe binds 'cpu' and 'cuda' memory only", "unsupported")


# ---------------------------------------------------------------------------------------------------
# GPU memory (the CUDA provider): lathe_device_* allocates and copies, lathe_compiled_run_device runs on it

_H2D, _D2H = 0, 1
_dev_lock = threading.Lock()
_dev_handle = None  # the process's lathe_device on CUDA device 0: opened on first use, never closed


def _cuda_device():
    global _dev_handle
    with _dev_lock:
        if _dev_handle is None:
            lib = _capi.load()
            if not _capi.has("lathe_device_open"):
                raise NotImplemented_(f"{_capi.library_path()} has no GPU memory calls (an older liblathe)",
                                      "unsupported")
            h = ctypes.c_void_p()
            err = ctypes.create_string_buffer(1024)
            st = lib.lathe_device_open(b"cuda", 0, ctypes.byref(h), err, len(err))
            if st != 0:
                raise _from_lathe(LatheError(f"GPU memory: {err.value.decode(errors='replace')}",
                                             _capi.status_name(st)), "run")
            _dev_handle = h.value
        return _dev_handle


def _dev_check(st, what):
    if st != 0:
        msg = _capi.load().lathe_device_error(_dev_handle).decode(errors="replace")
        raise _from_lathe(LatheError(f"{what}: {msg}", _capi.status_name(st)), "run")


def _dev_copy(dst, src, nbytes, kind, what):
    if nbytes:
        _dev_check(_capi.load().lathe_device_copy(_cuda_device(), dst, src, nbytes, kind), what)


class _DeviceAlloc:
    """GPU memory lathe allocated (lathe_device_alloc), freed when the last reference goes."""
    __slots__ = ("ptr",)

    def __init__(self, nbytes):
        dev = _cuda_device()
        p = ctypes.c_void_p()
        _dev_check(_capi.load().lathe_device_alloc(dev, nbytes, ctypes.byref(p)),
                   f"allocating {nbytes} bytes of GPU memory")
        self.ptr = p.value

    def __del__(self):
        p = getattr(self, "ptr", None)
        self.ptr = None
        if p and _dev_handle:
            try:
                _capi.load().lathe_device_free(_dev_handle, p)
            except Exception:  # noqa: BLE001 — interpreter shutdown
                pass


class _DeviceTensor:
    """A dense, C-order tensor in GPU memory: ptr, shape, dtype (numpy), device_id, and owner, what keeps the
    memory alive (a _DeviceAlloc, a DLPack tensor whose capsule holds the producer's memory, an OrtValue, or
    None for a pointer the caller bound and keeps alive)."""
    __slots__ = ("ptr", "shape", "dtype", "device_id", "owner")

    def __init__(self, ptr, shape, dtype, device_id=0, owner=None):
        self.ptr, self.shape, self.dtype = int(ptr or 0), tuple(int(d) for d in shape), np.dtype(dtype)
        self.device_id, self.owner = device_id, owner

    @classmethod
    def alloc(cls, shape, dtype, what="a GPU tensor"):
        dtype = np.dtype(dtype)
        if dtype.kind in "OUS":
            raise NotImplemented_(f"{what}: strings cannot live in GPU memory", "unsupported")
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize if shape else dtype.itemsize
        a = _DeviceAlloc(n)
        return cls(a.ptr, shape, dtype, 0, a)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def nbytes(self):
        return (int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1) * self.dtype.itemsize

    def to_numpy(self, out=None):
        """A host copy (into `out`, a C-contiguous array of this shape and dtype, when given)."""
        a = np.empty(self.shape, self.dtype) if out is None else out
        _dev_copy(a.ctypes.data, self.ptr, self.nbytes, _D2H, "copying a GPU tensor to the host")
        return a

    def from_numpy(self, a):
        a = np.ascontiguousarray(a)
        _dev_copy(self.ptr, a.ctypes.data, self.nbytes, _H2D, "copying to a GPU tensor")


def _gpu_device(v):
    """(DLPack device type, id) of a value in GPU memory (a CUDA OrtValue, a bound GPU buffer, a DLPack
    tensor on kDLCUDA or kDLCUDAManaged), None for host data."""
    if isinstance(v, OrtValue):
        return (_dlpack.KDL_CUDA, v._dev.device_id) if v._dev is not None else None
    if isinstance(v, _DeviceTensor):
        return (_dlpack.KDL_CUDA, v.device_id)
    if isinstance(v, np.ndarray) or not hasattr(v, "__dlpack__"):
        return None
    d = _dlpack.device_of(v)
    return d if d is not None and d[0] in (_dlpack.KDL_CUDA, _dlpack.KDL_CUDA_MANAGED) else None


def _device_str(dev):
    return f"{_dlpack.DEVICE_NAMES.get(dev[0], f'device type {dev[0]}')}:{dev[1]}"


def _read_gpu(name, v):
    """A GPU value as a _DeviceTensor, read in place (nothing copied)."""
    if isinstance(v, OrtValue):
        return v._dev
    if isinstance(v, _DeviceTensor):
        return v
    try:
        t = _dlpack.read(v)
    except Exception as e:  # noqa: BLE001 — the producer's own error, named
        raise InvalidArgument(f"input '{name}': cannot read the GPU tensor through DLPack: {e}") from None
    if t.dtype is None:
        raise InvalidArgument(f"input '{name}': DLPack element type (code, bits, lanes) {t.dl_dtype} has no numpy "
                              f"equivalent (install ml_dtypes for bfloat16)")
    if t.device[1] != 0:
        raise InvalidArgument(f"input '{name}': a tensor on {_device_str(t.device)}: lathe runs on CUDA device 0 "
                              f"(choose the GPU with CUDA_VISIBLE_DEVICES)")
    if not t.contiguous:
        raise InvalidArgument(f"input '{name}': a strided GPU tensor (strides {list(t.strides)} for shape "
                              f"{list(t.shape)}): lathe reads dense C-order memory; make it contiguous first "
                              f"(torch: .contiguous())")
    return _DeviceTensor(t.ptr, t.shape, t.dtype, 0, t)


class OrtValue:
    """onnxruntime.OrtValue, minimal: a tensor in CPU memory, backed by a numpy array (never copied), or in
    GPU memory ('cuda'), read and written in place by runs on the CUDA provider and exported through DLPack."""

    __slots__ = ("_array", "_dev")

    def __init__(self, array):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"OrtValue wraps a numpy array, got {type(array).__name__}")
        self._array, self._dev = array, None

    @classmethod
    def _on_gpu(cls, dev):
        v = cls.__new__(cls)
        v._array, v._dev = None, dev
        return v

    @classmethod
    def _of(cls, x):
        return cls._on_gpu(x) if isinstance(x, _DeviceTensor) else cls(x)

    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj, /, device_type="cpu", device_id=0, vendor_id=-1):
        """The array itself ('cpu'), or a copy of it in GPU memory ('cuda')."""
        if _device_kind(device_type, device_id, "ortvalue_from_numpy") == "cuda":
            a = np.ascontiguousarray(numpy_obj)
            d = _DeviceTensor.alloc(a.shape, a.dtype, "ortvalue_from_numpy")
            d.from_numpy(a)
            return cls._on_gpu(d)
        return cls(np.asarray(numpy_obj))

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data, /, onnx_element_type):
        dt = _element_dtype(onnx_element_type)
        if dt.itemsize != data.dtype.itemsize:
            raise InvalidArgument(f"ortvalue_from_numpy_with_onnx_type: {data.dtype} and {dt} differ in size")
        return cls(data.view(dt))

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        """A zero-filled tensor in CPU memory, or in GPU memory (allocated by lathe) for 'cuda'."""
        kind = _device_kind(device_type, device_id, "ortvalue_from_shape_and_type")
        dims, dt = _shape_tuple(shape, "ortvalue_from_shape_and_type"), _element_dtype(element_type)
        if kind == "cuda":
            d = _DeviceTensor.alloc(dims, dt, "ortvalue_from_shape_and_type")
            d.from_numpy(np.zeros(dims, dt))
            return cls._on_gpu(d)
        return cls(np.zeros(dims, dt))

    @classmethod
    def from_dlpack(cls, data, /, is_bool_tensor=False):
        """A DLPack tensor without a copy: on the CPU through numpy, on the GPU read in place (it stays
        alive as long as the OrtValue)."""
        if _gpu_device(data) is not None:
            return cls._on_gpu(_read_gpu("from_dlpack", data))
        return cls(np.from_dlpack(data))

    def to_dlpack(self):
        if self._dev is not None:
            d = self._dev
            return _dlpack.export(d.ptr, d.shape, d.dtype, (_dlpack.KDL_CUDA, d.device_id), d)
        return self._array.__dlpack__()

    def __dlpack__(self, **kwargs):
        """A DLPack capsule of the data, not a copy (GPU values: the run that wrote them has finished, so
        a consumer's stream needs no wait)."""
        if self._dev is not None:
            return self.to_dlpack()
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if self._dev is not None:
            return (_dlpack.KDL_CUDA, self._dev.device_id)
        return self._array.__dlpack_device__()

    def numpy(self):
        """The backing array itself (for a bound output buffer, the caller's memory); a GPU value's host copy."""
        if self._dev is not None:
            return self._dev.to_numpy()
        return self._array

    def data_ptr(self):
        return self._dev.ptr if self._dev is not None else self._array.ctypes.data

    def device_name(self):
        return "cuda" if self._dev is not None else "cpu"

    def _dtype(self):
        return self._dev.dtype if self._dev is not None else self._array.dtype

    def shape(self):
        return list(self._dev.shape if self._dev is not None else self._array.shape)

    def data_type(self):
        return _np_type_name(self._dtype())

    def element_type(self):
        dt = self._dtype()
        return 8 if dt.kind in "OUS" else _ONNX.get(dt, 0)

    def tensor_size_in_bytes(self):
        return self._dev.nbytes if self._dev is not None else self._array.nbytes

    def has_value(self):
        return True

    def is_tensor(self):
        return True

    def is_sparse_tensor(self):
        return False

    def is_tensor_sequence(self):
        return False

    def update_inplace(self, np_arr):
        if self._dev is not None:
            a = np.asarray(np_arr)
            if a.dtype != self._dev.dtype or a.shape != self._dev.shape:
                raise InvalidArgument(f"update_inplace: expected {self._dev.dtype}{list(self._dev.shape)}, got "
                                      f"{a.dtype}{list(a.shape)}")
            self._dev.from_numpy(a)
            return
        np.copyto(self._array, np.asarray(np_arr), casting="no")

    def __repr__(self):
        where = " on cuda:0" if self._dev is not None else ""
        return f"<lathe.OrtValue {self.data_type()} {self.shape()}{where}>"


_KDL_CPU, _KDL_CUDA_HOST = 1, 3


def _as_array(name, v, dtype):
    """A feed as a numpy array, without a copy where possible: numpy arrays and C-contiguous CPU DLPack
    tensors (torch, ...) are read in place; lists and scalars are converted to the input's dtype.
    Non-contiguous or misaligned data is copied (the compiled code reads dense, row-major memory)."""
    if isinstance(v, np.ndarray):
        a = v
    elif isinstance(v, OrtValue):
        a = v.numpy()
    elif hasattr(v, "__dlpack__"):
        dev = v.__dlpack_device__() if hasattr(v, "__dlpack_device__") else (_KDL_CPU, 0)
        if int(dev[0]) not in (_KDL_CPU, _KDL_CUDA_HOST):
            raise InvalidArgument(f"input '{name}': a tensor on {_device_str((int(dev[0]), int(dev[1])))}: this "
                                  f"call takes host memory (an InferenceSession on the CUDA provider reads CUDA "
                                  f"tensors in place; elsewhere copy it to the CPU first)")
        try:
            a = np.from_dlpack(v)
        except (BufferError, TypeError, RuntimeError, ValueError) as e:
            raise InvalidArgument(f"input '{name}': cannot read the DLPack tensor: {e}") from None
    else:
        try:
            a = np.asarray(v, dtype=dtype if dtype is not None and dtype != np.object_ else None)
        except (TypeError, ValueError, OverflowError) as e:
            raise InvalidArgument(f"input '{name}': cannot make an array from {type(v).__name__}: {e}") from None
    if dtype is not None and a.dtype != dtype and a.dtype.byteorder not in "=|" and a.dtype.newbyteorder("=") == dtype:
        a = a.astype(dtype)  # the same type in the other byte order: the library reads native order
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = np.array(a, order="C", copy=True)
    return a


# ---------------------------------------------------------------------------------------------------
# The session

# Plans of the per-signature path kept per session ("lathe.max_cached_shapes"). The family caches its
# per-shape plans itself (8, least recently used dropped): the C API has no option to change that.
_DEFAULT_MAX_SHAPES = 4
_INT_MAX = (1 << 31) - 1


def _threads_arg(v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"intra_op_num_threads must be an integer, got {v!r}")
    if not 0 <= v <= _INT_MAX:
        raise ValueError(f"intra_op_num_threads must be between 0 and {_INT_MAX}, got {v}")
    return int(v)


class InferenceSession:
    """onnxruntime.InferenceSession over lathe: InferenceSession(path_or_bytes, sess_options=None,
    providers=None, provider_options=None). See the module comment and python/README.md."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._enable_fallback = int(kwargs.get("enable_fallback", 1)) == 1
        self._lock = threading.RLock()
        self._plans = collections.OrderedDict()  # input-shape signature -> lathe.Model compiled for it
        self._family = None        # the lathe.Model compiled for every input shape (symbolic dims unbound)
        self._family_refused = None  # why the model has no family (then every signature compiles on its own)
        self._compiles = 0         # lathe.compile calls that made a compiled model
        self._events, self._profiling = [], False
        self._start_ns = time.time_ns()
        self._t0 = time.perf_counter_ns()
        self._tmpdir = None
        self._finalizer = None
        if isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path, self._model_bytes = os.fspath(path_or_bytes), None
            if isinstance(self._model_path, bytes):
                self._model_path = os.fsdecode(self._model_path)
            path = self._model_path
            if not os.path.exists(path):
                raise NoSuchFile(f"Load model from {path} failed:Load model {path} failed. File doesn't exist", "io")
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path, self._model_bytes = None, bytes(path_or_bytes)
            # the compiler reads files: the bytes go to a private temporary folder, removed with the session
            self._tmpdir = tempfile.mkdtemp(prefix="lathe-session-")
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._tmpdir, True)
            path = os.path.join(self._tmpdir, "model.onnx")
            with open(path, "wb") as f:
                f.write(self._model_bytes)
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._path = path
        self._sess_options_initial = sess_options
        self._options = SessionOptions._adopt(sess_options) if sess_options is not None else SessionOptions()
        self._read_options()
        self._profiling = bool(self._options.enable_profiling)
        t = time.perf_counter_ns()
        self._load_meta()
        self._event("Session", "model_loading_uri" if self._model_path else "model_loading_array", t)
        t = time.perf_counter_ns()
        self._set_providers(providers, provider_options)
        self._event("Session", "session_initialization", t)

    # ---- options ----
    def _read_options(self):
        o = self._options
        self._threads = _threads_arg(o.intra_op_num_threads)
        level = _enum_value(GraphOptimizationLevel, "graph_optimization_level", o.graph_optimization_level)
        self._opt_level = _OPT_LEVEL[level]
        cfg = o._config
        self._max_shapes = _DEFAULT_MAX_SHAPES
        if "lathe.max_cached_shapes" in cfg:
            try:
                self._max_shapes = int(cfg["lathe.max_cached_shapes"])
            except ValueError:
                self._max_shapes = 0
            if self._max_shapes < 1:
                raise InvalidArgument(f"session config 'lathe.max_cached_shapes' must be a positive integer, got "
                                      f"{cfg['lathe.max_cached_shapes']!r}", "usage")
        self._cache_dir = None  # lathe.compile's default folder
        if "lathe.cache_dir" in cfg:
            self._cache_dir = cfg["lathe.cache_dir"] or False
        passes = cfg.get("lathe.enable_passes", "")
        self._enable_passes = [p for p in passes.split(",") if p] or None
        if o._denotation_overrides:
            warnings.warn("add_free_dimension_override_by_denotation has no effect in lathe (it does not read dim "
                          "denotations): use add_free_dimension_override_by_name")
        self._seed = _seed

    # ---- metadata ----
    def _load_meta(self):
        """Load the model once (the interpreter's loader: no compile) for names, types and shapes with the
        symbolic dims' names, the free-dimension overrides applied. Names no dim in the model has are
        ignored, as onnxruntime ignores them."""
        dims = dict(self._options._dim_overrides)
        while True:
            try:
                meta = _lathe_compile(self._path, backend="interp", dims=dims or None, seed=self._seed)
                break
            except LatheError as e:
                bad = [k for k in dims if f"no dimension named '{k}'" in str(e)]
                if e.status == "usage" and bad:
                    for k in bad:
                        del dims[k]
                    continue
                raise _from_lathe(e, "load", self._tmp_path()) from None
            except (TypeError, ValueError) as e:
                raise InvalidArgument(str(e), "usage") from None
        self._dims = dims
        self._proto = None
        self._proto_read = False
        interp_only = not _capi.has("lathe_compile")  # a library without the compiler: this model is the runner
        try:
            lib, h = meta._lib, meta._h
            self._inputs = [self._info(lib.lathe_model_input_dtype(h, i), t, "input", i)
                            for i, t in enumerate(meta.inputs)]
            self._outputs = [self._info(lib.lathe_model_output_dtype(h, k), t, "output", k)
                             for k, t in enumerate(meta.outputs)]
        finally:
            if interp_only:
                self._interp = meta
            else:
                meta.close()  # its weights are not kept: each compile loads the model itself
        self._in_by_name = {t.name: (i, t) for i, t in enumerate(self._inputs)}
        self._out_by_name = {t.name: k for k, t in enumerate(self._outputs)}

    def _tmp_path(self):
        return self._path if self._model_bytes is not None else None

    def _onnx_model(self):
        if not self._proto_read:
            self._proto, self._proto_read = _read_onnx(self._path), True
        return self._proto

    def _info(self, dt, t, kind, i):
        if dt:
            type_str = _type_name(dt)
        else:  # a sequence, map or optional: spelled from the ONNX file when the onnx package is there
            proto = self._onnx_model()
            type_str = "unknown"
            if proto is not None:
                vals = [v for v in (proto.graph.input if kind == "input" else proto.graph.output) if v.name == t.name]
                if vals:
                    type_str = _onnx_type_string(vals[0].type)
        return _Info(t.name, dt, t.shape, type_str)

    def get_inputs(self):
        return [t.arg for t in self._inputs]

    def get_outputs(self):
        return [t.arg for t in self._outputs]

    def get_overridable_initializers(self):
        """[]: lathe compiles initializers into the model (they cannot be fed)."""
        return []

    def get_modelmeta(self):
        m = ModelMetadata()
        proto = self._onnx_model()
        if proto is not None:
            m.producer_name, m.graph_name, m.domain = proto.producer_name, proto.graph.name, proto.domain
            m.description, m.graph_description = proto.doc_string, proto.graph.doc_string
            if proto.HasField("model_version"):
                m.version = proto.model_version
            m.custom_metadata_map = {p.key: p.value for p in proto.metadata_props}
        return m

    def get_session_options(self):
        return self._options

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {k: dict(v) for k, v in self._provider_options.items()}

    def get_profiling_start_time_ns(self):
        return self._start_ns

    # ---- lathe's own view of the session ----
    @property
    def lathe_backend(self):
        """The lathe backend the session runs on: "cpu", "cuda" or "interp"."""
        return self._backend

    @property
    def lathe_compile_count(self):
        """How many compiled models this session made (lathe.compile calls): 1 for a static model, 1 for a
        symbolic one however many shapes it runs at (its family builds code once per bucket inside:
        lathe_report lists them), plus one per input-shape signature compiled on its own (the
        per-signature path, where the family cannot serve). A set_providers() compiles again."""
        return self._compiles

    @property
    def lathe_shape_mode(self):
        """How the session runs input shapes: "static" (every input dim fixed: one plan, compiled when the
        session is made), "family" (one compiled model for every shape), "per-signature" (each new
        input-shape signature compiled on its own: the family cannot serve this model) or "interp"
        (the reference interpreter, a library without the compiler)."""
        with self._lock:
            if self._backend == "interp":
                return "interp"
            if not self._symbolic:
                return "static"
            return "per-signature" if self._family_refused is not None else "family"

    @property
    def lathe_cached_shapes(self):
        """The input-shape signatures with a plan compiled for that signature alone, least recently used
        first: the static model's, and those of the per-signature path. Shapes run on the family are
        cached inside it (its last 8 shapes) and are not listed."""
        with self._lock:
            return list(self._plans)

    @property
    def lathe_report(self):
        """The compile report of the family (one summary line, then a line per bucket: the shape it was
        made at, its kernels, how many shapes took it) when the session has one, else of the plan run
        last; "" before anything is compiled and for the interpreter."""
        with self._lock:
            m = self._family if self._family is not None else next(reversed(self._plans.values()), None)
        return m.report if m is not None else ""

    # ---- providers ----
    def _set_providers(self, providers, provider_options):
        names, opts = _normalize_providers(providers, provider_options)
        self._requested = list(zip(names, opts))
        cands = [(n, o) for n, o in self._requested if _provider_available(n)]
        if not cands:
            cands = [(CPU_PROVIDER, {})]
        self._candidates = cands
        self._use(0)
        if self._backend == "interp":
            return
        # compile now, as onnxruntime prepares everything when the session is made: every input dim known,
        # for those shapes; else once for every shape (the family builds code when runs need it)
        if not self._symbolic:
            self._plan(tuple(t.shape for t in self._inputs), phase="compile")
        else:
            self._family_model(phase="compile")

    def _use(self, idx):
        name, opts = self._candidates[idx]
        self._cand_idx = idx
        # a family belongs to its backend: made again, for the new one, when next needed
        self._family, self._family_refused = None, None
        if name == CUDA_PROVIDER:
            dev = opts.get("device_id", "0")
            if dev not in ("0", ""):
                raise InvalidArgument(f"CUDAExecutionProvider device_id {dev}: lathe runs on device 0 (choose the GPU "
                                      f"with CUDA_VISIBLE_DEVICES)", "usage")
            self._backend = "cuda"
            self._providers = [CUDA_PROVIDER, CPU_PROVIDER]
            self._provider_options = {CUDA_PROVIDER: dict(opts, device_id="0"), CPU_PROVIDER: {}}
        else:
            self._backend = "cpu" if _capi.has("lathe_compile") else "interp"
            self._providers = [CPU_PROVIDER]
            self._provider_options = {CPU_PROVIDER: dict(opts)}

    def set_providers(self, providers=None, provider_options=None):
        """Choose providers again; compiled plans and the family are dropped and the model is compiled again
        for the new backend."""
        with self._lock:
            self._plans.clear()
            self._set_providers(providers, provider_options)

    def disable_fallback(self):
        self._enable_fallback = False

    def enable_fallback(self):
        self._enable_fallback = True

    # ---- compiling ----
    @property
    def _symbolic(self):
        """An input dim is not fixed (symbolic, unknown, or the rank unknown)."""
        return not all(t.static for t in self._inputs)

    def _model_for(self, sig):
        """The compiled model a run of this input-shape signature takes: a plan compiled for that signature
        (the static model's, or the per-signature path's), else the family, else a new plan."""
        with self._lock:
            m = self._plans.get(sig)
            if m is not None:
                self._plans.move_to_end(sig)
                return m
            if self._backend != "interp" and self._symbolic:
                fam = self._family_model()
                if fam is not None:
                    return fam
            return self._plan(sig)

    def _family_model(self, phase="run"):
        """The model compiled once for every input shape (made on first use); None where the family cannot
        serve this model: an input of unknown rank (the C API compiles nothing for it), or lathe.compile
        refusing the unbound model as unsupported. Other errors are raised, as a static model's are."""
        with self._lock:
            if self._family is None and self._family_refused is None:
                if any(t.shape is None for t in self._inputs):
                    self._family_refused = "an input has no known rank (or is not a tensor)"
                else:
                    try:
                        self._family = self._compile(None, phase)
                        self._compiles += 1
                    except NotImplemented_ as e:
                        if "CUDA backend unavailable" in str(e):  # the provider's failure, not the family's
                            raise
                        self._family_refused = str(e)
            return self._family

    def _plan(self, sig, phase="run"):
        """The compiled model for this input-shape signature alone: cached, else compiled (and cached,
        bounded by lathe.max_cached_shapes)."""
        with self._lock:
            m = self._plans.get(sig)
            if m is not None:
                self._plans.move_to_end(sig)
                return m
            if self._backend == "interp":
                m = self._interp  # the reference interpreter takes any shape: one model for every signature
            else:
                m = self._compile(sig, phase)
                self._compiles += 1
            self._plans[sig] = m
            while len(self._plans) > self._max_shapes:
                self._plans.popitem(last=False)  # a run still using it holds a reference
            return m

    def _compile(self, sig, phase):
        """lathe.compile with the inputs' symbolic dims bound to this signature's shapes, or (sig None) left
        unbound: the family, one compiled model for every shape. The free-dimension overrides are bound in
        both. An unusable CUDA backend moves the session to the next provider (unless fallback is off)."""
        parts = []
        for t, shape in zip(self._inputs, sig or ()):
            if t.static:
                continue
            if "," in t.name:
                raise NotImplemented_(f"input '{t.name}': lathe cannot compile for a new shape of an input whose "
                                      f"name holds ','", "unsupported")
            parts.append(f"{t.name}:" + "x".join(str(d) for d in shape))
        t0 = time.perf_counter_ns()
        dims = dict(self._dims)  # the free-dimension overrides; one an input's shape already bound is dropped
        while True:
            try:
                m = _lathe_compile(self._path, shapes=",".join(parts) or None, dims=dims or None,
                                   backend=self._backend, threads=self._threads, opt_level=self._opt_level,
                                   seed=self._seed, cache_dir=self._cache_dir, enable_passes=self._enable_passes)
                break
            except LatheError as e:
                bad = [k for k in dims if f"no dimension named '{k}'" in str(e)]
                if e.status == "usage" and bad:
                    for k in bad:
                        del dims[k]
                    continue
                if (self._backend == "cuda" and e.status == "unsupported" and "CUDA backend unavailable" in str(e)
                        and self._enable_fallback and self._cand_idx + 1 < len(self._candidates)):
                    warnings.warn(f"CUDAExecutionProvider: {e}; falling back to "
                                  f"{self._candidates[self._cand_idx + 1][0]}")
                    self._use(self._cand_idx + 1)
                    continue
                raise _from_lathe(e, phase, self._tmp_path()) from None
            except (TypeError, ValueError) as e:
                raise InvalidArgument(str(e), "usage") from None
        names = [t.name for t in m.inputs]
        if names != [t.name for t in self._inputs]:
            raise RuntimeException(f"compiled inputs {names} differ from the model's "
                                   f"{[t.name for t in self._inputs]}", "internal")
        if sig is None:  # the declared shapes, symbolic dims by name
            args = {"shapes": {t.name: t.arg.shape for t in self._inputs}, "every_shape": True}
        else:
            args = {"shapes": {t.name: list(s) for t, s in zip(self._inputs, sig)}}
        self._event("Session", "lathe_compile", t0, dict(args, backend=self._backend))
        return m

    # ---- feeds ----
    def _check_feed(self, name, value):
        """(input index, checked C-contiguous array) or the error onnxruntime raises for it."""
        entry = self._in_by_name.get(name)
        if entry is None:
            raise InvalidArgument(f"Invalid input name: {name}")
        i, t = entry
        if t.np_dtype is None:
            raise NotImplemented_(f"input '{name}' ({t.arg.type}) cannot be given from Python (not a tensor, or of an "
                                  f"element type numpy lacks: install ml_dtypes for bfloat16, float8 and int4 types)",
                                  "unsupported")
        dev = _gpu_device(value)
        if dev is not None:
            self._need_gpu(f"input '{name}': a tensor in GPU memory ({_device_str(dev)})")
            a = _read_gpu(name, value)
        else:
            a = _as_array(name, value, t.np_dtype)
        ok = a.dtype == t.np_dtype or (t.np_dtype == np.object_ and a.dtype.kind in "US")
        if not ok:
            raise InvalidArgument(f"Unexpected input data type. Actual: ({_np_type_name(a.dtype)}) , "
                                  f"expected: ({t.arg.type})")
        if t.shape is not None:
            if a.ndim != len(t.shape):
                raise InvalidArgument(f"Invalid rank for input: {name} Got: {a.ndim} Expected: {len(t.shape)} "
                                      f"Please fix either the inputs/outputs or the model.")
            bad = [(k, g, e) for k, (g, e) in enumerate(zip(a.shape, t.shape)) if isinstance(e, int) and g != e]
            if bad:
                lines = "".join(f" index: {k} Got: {g} Expected: {e}\n" for k, g, e in bad)
                raise InvalidArgument(f"Got invalid dimensions for input: {name} for the following indices\n{lines} "
                                      f"Please fix either the inputs/outputs or the model.")
        if a.ndim > 16:
            raise InvalidArgument(f"input '{name}': rank {a.ndim} exceeds 16")
        return i, a

    def _need_gpu(self, what):
        if self._backend != "cuda":
            raise InvalidArgument(f"{what}, but this session runs on the CPU (providers {self._providers}): make "
                                  f"the session with providers=['CUDAExecutionProvider'] to run on GPU memory, or "
                                  f"copy it to the CPU")

    def _feeds(self, values):
        """{name: value} -> arrays (or _DeviceTensors, for GPU memory) in input order; every input must be
        there."""
        arrays = [None] * len(self._inputs)
        for name, v in values.items():
            i, a = self._check_feed(name, v)
            arrays[i] = a
        missing = [t.name for t, a in zip(self._inputs, arrays) if a is None]
        if missing:
            raise MissingInputError(f"Required inputs ({missing}) are missing from input feed ({list(values)}).")
        return arrays

    def _output_indices(self, output_names):
        if not output_names:
            return list(range(len(self._outputs)))
        if isinstance(output_names, str):
            raise TypeError(f"output_names must be a list of names, not the string {output_names!r}")
        idx = []
        for n in output_names:
            k = self._out_by_name.get(n)
            if k is None:
                raise InvalidArgument(f"Invalid output name:{n}")
            idx.append(k)
        return idx

    # ---- running ----
    def _device_model(self, sig):
        """The compiled model a run on GPU memory takes: a plan compiled for this input-shape signature (the
        static model's, or the per-signature path's), else the family (its plan for these shapes selected
        before the run), else a plan compiled for the signature now."""
        with self._lock:
            m = self._plans.get(sig)
            if m is not None:
                self._plans.move_to_end(sig)
                return m
            if self._backend != "interp" and self._symbolic:
                fam = self._family_model()
                if fam is not None and fam._selects:
                    return fam
            return self._plan(sig)

    def _execute_device(self, values, bound=None, on_gpu=()):
        """A run on GPU memory (lathe_compiled_run_device). values: per input a _DeviceTensor (read in place)
        or a host array (copied to the GPU for this run). bound: {output index: _DeviceTensor (written in place)
        or a host array (filled with a copy)}. Other outputs come back as new GPU tensors for the indices in
        on_gpu, else as host arrays (a copy). Returns every output."""
        bound = bound or {}
        self._need_gpu("GPU memory was given")
        sig = tuple(tuple(v.shape) for v in values)
        model = self._device_model(sig)
        t0 = time.perf_counter_ns()
        with model._lock:
            h = model._check_open()
            shapes = [o.shape for o in model.outputs]
            if model._selects:  # the family: its plan for these input shapes, and the outputs' shapes there
                try:
                    shapes = model._select_shapes(sig)
                except LatheError as e:
                    raise _from_lathe(e, "run", self._tmp_path()) from None
            if shapes is False or not (model._buffers or model._selects):
                dyn = [o.name for o in model.outputs if o.shape is None or not all(isinstance(d, int) for d in o.shape)]
                raise NotImplemented_(f"output(s) {dyn}: the shape is known only at run time, and lathe writes GPU "
                                      f"memory only for shapes known before the run: run on host memory",
                                      "unsupported")
            temps, ins = [], []
            for info, v in zip(model.inputs, values):
                if not isinstance(v, _DeviceTensor):  # a host feed among GPU ones: copied up for this run
                    d = _DeviceTensor.alloc(v.shape, v.dtype, f"input '{info.name}'")
                    d.from_numpy(v)
                    temps.append(d)
                    v = d
                ins.append(v.ptr)
            outs, ptrs, down = [], [], []
            for k, o in enumerate(model.outputs):
                b = bound.get(k)
                if b is not None:
                    self._check_bound(k, b, o.dtype, shapes[k])
                if isinstance(b, _DeviceTensor):
                    d = b
                else:
                    d = _DeviceTensor.alloc(shapes[k], o.dtype, f"output '{o.name}'")
                    if b is not None or k not in on_gpu:
                        down.append((k, d, b))
                outs.append(d)
                ptrs.append(d.ptr)
            lib = model._lib
            in_arr = (ctypes.c_void_p * max(len(ins), 1))(*ins)
            out_arr = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
            st = lib.lathe_compiled_run_device(h, in_arr, len(ins), out_arr, len(ptrs), None)
            if st != 0:
                e = LatheError(lib.lathe_compiled_error(h).decode(errors="replace"), _capi.status_name(st))
                raise _from_lathe(e, "run", self._tmp_path()) from None
            for k, d, b in down:
                outs[k] = d.to_numpy(b)
            self._last_model = model
        self._event("Session", "model_run", t0, {"shapes": [list(s) for s in sig], "device": "cuda"})
        return outs

    @property
    def lathe_last_run_copies(self):
        """The copies between host and GPU memory the session's last run made ({'host_to_device': n,
        'device_to_host': n, 'device_to_device': n, and the same with _bytes}): a run on GPU memory of a model
        with no host step and no checked index input makes device-to-device copies only; all 0 on the CPU.
        None before the first run."""
        m = getattr(self, "_last_model", None)
        return m.last_run_copies if m is not None else None

    def _execute(self, arrays, bound=None):
        """Run on the checked input arrays; returns every output as a numpy array. bound: {output index:
        caller's C-contiguous writable array} written in place (run_buffers) or copied into (the family,
        and plans whose outputs have run-time shapes)."""
        bound = bound or {}
        sig = tuple(a.shape for a in arrays)
        model = self._model_for(sig)
        t0 = time.perf_counter_ns()
        try:
            outs = self._run_on(model, arrays, bound)
        except LatheError as e:
            # The family refused this shape as unsupported (a limit of compiling for every shape, or the model
            # at this shape): compile the signature on its own. Where the model is at fault, that compile or
            # its run raises the error again.
            if model is not self._family or e.status != "unsupported":
                raise
            model = self._plan(sig)
            outs = self._run_on(model, arrays, bound)
        self._event("Session", "model_run", t0, {"shapes": [list(s) for s in sig]})
        return outs

    def _run_on(self, model, arrays, bound):
        with model._lock:
            model._check_open()
            self._last_model = model
            if model._buffers:
                outs = []
                for k, o in enumerate(model.outputs):
                    b = bound.get(k)
                    if b is not None:
                        self._check_bound(k, b, o.dtype, o.shape)
                        outs.append(b)
                    else:
                        outs.append(np.empty(o.shape, dtype=o.dtype))
                _run_buffers(model, arrays, outs)
                return outs
            # the family (its shapes selected, then run on the feeds in place) and outputs with run-time shapes:
            # the result comes back in fresh arrays, and a bound buffer gets a copy, its shape checked first
            try:
                res = model._run_selected(arrays) if model._selects else model._run_tensors(arrays)
            except LatheError as e:
                if isinstance(e, _OrtStyleError):
                    raise
                raise _from_lathe(e, "run", self._tmp_path()) from None
            outs = [res[o.name] for o in model.outputs]
        for k, b in bound.items():
            self._check_bound(k, b, outs[k].dtype, outs[k].shape)
            np.copyto(b, outs[k], casting="no")
            outs[k] = b
        return outs

    def _check_bound(self, k, b, dtype, shape):
        name = self._outputs[k].name
        if b.dtype != dtype:
            raise InvalidArgument(f"Unexpected output data type. Actual: ({_np_type_name(b.dtype)}) , "
                                  f"expected: ({_np_type_name(np.dtype(dtype))})")
        if tuple(b.shape) != tuple(shape):
            raise InvalidArgument(f"output '{name}': shape verification failed. Current shape:"
                                  f"{{{','.join(map(str, b.shape))}}} Requested shape:{{{','.join(map(str, shape))}}}")

    def _check_run_options(self, run_options):
        if run_options is not None and getattr(run_options, "terminate", False):
            raise Fail("Exiting due to terminate flag being set to true.", "usage")

    def run(self, output_names, input_feed, run_options=None):
        """Outputs named in output_names (None or []: all), in that order, as numpy arrays. Feeds in GPU memory
        (CUDA DLPack tensors, CUDA OrtValues) are read there by a session on the CUDA provider."""
        self._check_run_options(run_options)
        if not isinstance(input_feed, collections.abc.Mapping):
            raise TypeError(f"input_feed must be a dict {{input name: array}}, got {type(input_feed).__name__}")
        missing = [t.name for t in self._inputs if t.name not in input_feed and not t.arg.type.startswith("optional")]
        if missing:
            raise MissingInputError(f"Required inputs ({missing}) are missing from input feed ({list(input_feed)}).")
        return self._run(output_names, input_feed, False)

    def _run(self, output_names, input_feed, gpu_outputs):
        arrays = self._feeds(input_feed)
        idx = self._output_indices(output_names)
        if any(isinstance(a, _DeviceTensor) for a in arrays):
            outs = self._execute_device(arrays, {}, range(len(self._outputs)) if gpu_outputs else ())
        else:
            outs = self._execute(arrays)
        return [outs[k] for k in idx]

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """run(), with OrtValue inputs and outputs; when a feed is in GPU memory the outputs are OrtValues in
        GPU memory too (no copy to the host)."""
        self._check_run_options(run_options)
        if not isinstance(input_dict_ort_values, collections.abc.Mapping):
            raise TypeError(f"input_feed must be a dict {{input name: OrtValue}}, got "
                            f"{type(input_dict_ort_values).__name__}")
        missing = [t.name for t in self._inputs if t.name not in input_dict_ort_values
                   and not t.arg.type.startswith("optional")]
        if missing:
            raise MissingInputError(f"Required inputs ({missing}) are missing from input feed "
                                    f"({list(input_dict_ort_values)}).")
        return [OrtValue._of(a) for a in self._run(output_names, input_dict_ort_values, True)]

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """run() on a new thread; then callback(results, user_data, error message or "")."""
        def work():
            try:
                res = self.run(output_names, input_feed, run_options)
            except Exception as e:  # noqa: BLE001 — handed to the callback, as onnxruntime does
                callback(None, user_data, str(e))
            else:
                callback(res, user_data, "")
        threading.Thread(target=work, daemon=True).start()

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        self._check_run_options(run_options)
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise TypeError("run_with_iobinding takes an IOBinding made by this session's io_binding()")
        iobinding._run(run_options)

    # ---- profiling ----
    def _event(self, cat, name, t_start, args=None):
        if not self._profiling:
            return
        now = time.perf_counter_ns()
        self._events.append({"cat": cat, "pid": os.getpid(), "tid": threading.get_ident(),
                             "dur": (now - t_start) // 1000, "ts": (t_start - self._t0) // 1000, "ph": "X",
                             "name": name, "args": args or {}})

    def end_profiling(self):
        """Write the trace (Chrome trace format: load, compiles, runs) and return its file name; "" when
        profiling is off."""
        if not self._profiling:
            return ""
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        name = f"{self._options.profile_file_prefix}_{stamp}.json"
        with open(name, "w") as f:
            json.dump(self._events, f)
        self._profiling = False
        return name


def _run_buffers(model, arrays, outs):
    """lathe_compiled_run_buffers on the arrays' own memory (outputs written in place)."""
    lib, h = model._lib, model._h
    dummy = ctypes.c_char()  # a zero-size array may have no data pointer: a valid dummy address then

    def ptrs(xs):
        return (ctypes.c_void_p * max(len(xs), 1))(*[x.ctypes.data if x.size else ctypes.addressof(dummy)
                                                      for x in xs])
    st = lib.lathe_compiled_run_buffers(h, ptrs(arrays), len(arrays), ptrs(outs), len(outs))
    if st != 0:
        e = LatheError(lib.lathe_compiled_error(h).decode(errors="replace"), _capi.status_name(st))
        raise _from_lathe(e, "run") from None


# ---------------------------------------------------------------------------------------------------
# IO binding

_ON_GPU = object()  # an output bound to 'cuda' with no buffer: the run allocates it in GPU memory


class IOBinding:
    """onnxruntime.IOBinding: inputs read in place, outputs bound to a buffer written in place (no copy of the
    result), other bound outputs allocated by the run. CPU memory, and GPU memory ('cuda' pointers and
    OrtValues, CUDA DLPack tensors) in a session on the CUDA provider."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}          # name -> array, _DeviceTensor (or the object given, checked at run)
        self._outputs = []         # [(name, array, _DeviceTensor, _ON_GPU or None)] in bind order
        self._results = []

    def _check_input(self, name):
        if name not in self._session._in_by_name:
            raise InvalidArgument(f"Failed to find NodeArg with name: {name} in the def list")

    def bind_cpu_input(self, name, arr_on_cpu):
        self._check_input(name)
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """Read `shape` elements of `element_type` at buffer_ptr, in CPU memory or, device_type 'cuda', GPU
        memory (the caller keeps it alive and unchanged until the run)."""
        what = f"bind_input '{name}'"
        kind = _device_kind(device_type, device_id, what)
        self._check_input(name)
        dims = _shape_tuple(shape, what)
        dt = _element_dtype(element_type)
        if kind == "cuda":
            self._session._need_gpu(f"{what}: a GPU pointer")
            self._inputs[name] = _DeviceTensor(_address(buffer_ptr, what), dims, dt)
        else:
            self._inputs[name] = _array_at(buffer_ptr, dt, dims, what)

    def bind_ortvalue_input(self, name, ortvalue):
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_input: expected a lathe.OrtValue, got {type(ortvalue).__name__}")
        if ortvalue._dev is not None:
            self._check_input(name)
            self._session._need_gpu(f"bind_ortvalue_input '{name}': an OrtValue in GPU memory")
            self._inputs[name] = ortvalue._dev
            return
        self.bind_cpu_input(name, ortvalue.numpy())

    def _set_output(self, name, arr):
        for i, (n, _) in enumerate(self._outputs):
            if n == name:
                self._outputs[i] = (name, arr)
                return
        self._outputs.append((name, arr))

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Write the output at buffer_ptr (CPU memory, or GPU memory for device_type 'cuda'); without a buffer
        the run allocates it on that device."""
        what = f"bind_output '{name}'"
        kind = _device_kind(device_type, device_id, what)
        if kind == "cuda":
            self._session._need_gpu(f"{what}: GPU memory")
        if buffer_ptr is None:
            self._set_output(name, _ON_GPU if kind == "cuda" else None)
            return
        if element_type is None or shape is None:
            raise ValueError("`element_type` and `shape` are to be provided if pre-allocated memory is provided")
        dims = _shape_tuple(shape, what)
        dt = _element_dtype(element_type)
        if kind == "cuda":
            self._set_output(name, _DeviceTensor(_address(buffer_ptr, what), dims, dt))
        else:
            self._set_output(name, _array_at(buffer_ptr, dt, dims, what))

    def bind_ortvalue_output(self, name, ortvalue):
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_output: expected a lathe.OrtValue, got {type(ortvalue).__name__}")
        if ortvalue._dev is not None:
            self._session._need_gpu(f"bind_ortvalue_output '{name}': an OrtValue in GPU memory")
            self._set_output(name, ortvalue._dev)
            return
        a = ortvalue.numpy()
        if not (a.flags.c_contiguous and a.flags.writeable and a.flags.aligned):
            raise InvalidArgument(f"bind_ortvalue_output '{name}': the buffer must be C-contiguous, aligned and "
                                  f"writable (it is written in place)")
        self._set_output(name, a)

    def synchronize_inputs(self):
        """No-op: a run waits for all work on the GPU before it reads GPU inputs."""

    def synchronize_outputs(self):
        """No-op: a run returns when its outputs are written, GPU ones included."""

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = []
        self._results = []

    def get_outputs(self):
        """The outputs of the last run, in bind order, as OrtValues (a bound buffer's is that buffer)."""
        return list(self._results)

    get_outputs_as_ortvaluevector = get_outputs

    def copy_outputs_to_cpu(self):
        """Copies of the last run's outputs, in bind order, as numpy arrays (GPU ones copied to the host)."""
        return [v.numpy() if v._dev is not None else v.numpy().copy() for v in self._results]

    def _run(self, run_options):
        s = self._session
        if not self._outputs:
            raise Fail("At least one output should be requested.", "usage")
        arrays = s._feeds(self._inputs)
        bound, order, on_gpu = {}, [], set()
        for name, arr in self._outputs:
            k = s._out_by_name.get(name)
            if k is None:
                raise InvalidArgument(f"Invalid output name:{name}")
            order.append(k)
            if arr is _ON_GPU:
                on_gpu.add(k)
            elif arr is not None:
                bound[k] = arr
        if on_gpu or any(isinstance(a, _DeviceTensor) for a in arrays + list(bound.values())):
            outs = s._execute_device(arrays, bound, on_gpu)
        else:
            outs = s._execute(arrays, bound)
        self._results = [OrtValue._of(outs[k]) for k in order]


SessionIOBinding = IOBinding
