"""_capi.py — ctypes declarations of lathe's public C API (include/lathe.h) and the search for liblathe.so.

The structs and prototypes here mirror include/lathe.h field for field; change both together.
The library is loaded once, on first use (load()), from the first of:
  1. $LATHE_LIBRARY (a path to liblathe.so: an explicit choice always wins),
  2. liblathe.so next to this file (what `pip install ./python` ships),
  3. build/liblathe.so of the source tree this file sits in (python/lathe -> ../../build), for running
     from a checkout with PYTHONPATH=python.
A missing library raises LatheError naming every place that was tried.
"""
import ctypes
import os

c_i64_p = ctypes.POINTER(ctypes.c_int64)


class LatheError(RuntimeError):
    """An error reported by lathe. `status` is the C status name ("invalid", "unsupported", ...)."""

    def __init__(self, message, status="internal"):
        super().__init__(message)
        self.status = status


# Option structs: the C API reads a zeroed field as "the default", so each mirror ends in zeroed spare
# room: a field the C header appends later reads as its default here instead of past the struct's end.
_SPARE = ("_spare", ctypes.c_uint64 * 16)


class LoadOptions(ctypes.Structure):
    _fields_ = [("shapes", ctypes.c_char_p), ("dims", ctypes.c_char_p), ("seed", ctypes.c_uint64),
                ("max_loop_bytes", ctypes.c_int64), _SPARE]


class CompileOptions(ctypes.Structure):
    _fields_ = [("opt_level", ctypes.c_int), ("backend", ctypes.c_char_p), ("threads", ctypes.c_int),
                ("cache_dir", ctypes.c_char_p), ("cc", ctypes.c_char_p), ("dump_code_dir", ctypes.c_char_p),
                ("nvrtc", ctypes.c_char_p), ("enable_passes", ctypes.c_char_p), ("tune_db", ctypes.c_char_p),
                ("cc_timeout", ctypes.c_double), ("no_split", ctypes.c_int), _SPARE]


class RunCopies(ctypes.Structure):
    """lathe_run_copies (written by the library: the spare room takes fields it may append)."""
    _fields_ = [("host_to_device_bytes", ctypes.c_int64), ("device_to_host_bytes", ctypes.c_int64),
                ("device_to_device_bytes", ctypes.c_int64), ("host_to_device", ctypes.c_int),
                ("device_to_host", ctypes.c_int), ("device_to_device", ctypes.c_int), _SPARE]


_P = ctypes.c_void_p
_S = ctypes.c_char_p
_I = ctypes.c_int
_PROTOS = {
    # name: (restype, argtypes)
    "lathe_version": (_S, []),
    "lathe_status_name": (_S, [_I]),
    "lathe_dtype_name": (_S, [_I]),
    "lathe_dtype_size": (ctypes.c_size_t, [_I]),
    "lathe_model_load": (_I, [_S, ctypes.POINTER(LoadOptions), ctypes.POINTER(_P), _S, ctypes.c_size_t]),
    "lathe_model_free": (None, [_P]),
    "lathe_model_error": (_S, [_P]),
    "lathe_model_num_inputs": (_I, [_P]),
    "lathe_model_num_outputs": (_I, [_P]),
    "lathe_model_input_name": (_S, [_P, _I]),
    "lathe_model_output_name": (_S, [_P, _I]),
    "lathe_model_input_dtype": (_I, [_P, _I]),
    "lathe_model_output_dtype": (_I, [_P, _I]),
    "lathe_model_input_shape": (_I, [_P, _I, c_i64_p, _I]),
    "lathe_model_output_shape": (_I, [_P, _I, c_i64_p, _I]),
    "lathe_model_input_dim_name": (_S, [_P, _I, _I]),
    "lathe_model_output_dim_name": (_S, [_P, _I, _I]),
    "lathe_tensor_create": (_I, [_I, _I, c_i64_p, ctypes.POINTER(_P)]),
    "lathe_tensor_create_copy": (_I, [_I, _I, c_i64_p, _P, ctypes.POINTER(_P)]),
    "lathe_tensor_free": (None, [_P]),
    "lathe_tensor_data": (_P, [_P]),
    "lathe_tensor_dtype": (_I, [_P]),
    "lathe_tensor_rank": (_I, [_P]),
    "lathe_tensor_shape": (c_i64_p, [_P]),
    "lathe_tensor_numel": (ctypes.c_int64, [_P]),
    "lathe_tensor_nbytes": (ctypes.c_size_t, [_P]),
    "lathe_tensor_set_string": (_I, [_P, ctypes.c_int64, _S, ctypes.c_size_t]),
    "lathe_run": (_I, [_P, ctypes.POINTER(_P), _I, ctypes.POINTER(_P), _I]),
    # compiled models
    "lathe_compile": (_I, [_S, ctypes.POINTER(LoadOptions), ctypes.POINTER(CompileOptions), ctypes.POINTER(_P), _S,
                           ctypes.c_size_t]),
    "lathe_compiled_free": (None, [_P]),
    "lathe_compiled_error": (_S, [_P]),
    "lathe_compiled_report": (_S, [_P]),
    "lathe_compiled_num_inputs": (_I, [_P]),
    "lathe_compiled_num_outputs": (_I, [_P]),
    "lathe_compiled_input_name": (_S, [_P, _I]),
    "lathe_compiled_output_name": (_S, [_P, _I]),
    "lathe_compiled_input_dtype": (_I, [_P, _I]),
    "lathe_compiled_output_dtype": (_I, [_P, _I]),
    "lathe_compiled_input_shape": (_I, [_P, _I, c_i64_p, _I]),
    "lathe_compiled_output_shape": (_I, [_P, _I, c_i64_p, _I]),
    "lathe_compiled_run": (_I, [_P, ctypes.POINTER(_P), _I, ctypes.POINTER(_P), _I]),
    "lathe_compiled_run_buffers": (_I, [_P, ctypes.POINTER(_P), _I, ctypes.POINTER(_P), _I]),
    "lathe_compiled_select_shapes": (_I, [_P, _I, ctypes.POINTER(_I), ctypes.POINTER(c_i64_p)]),
    "lathe_compiled_output_bytes": (ctypes.c_size_t, [_P, _I]),
    "lathe_compiled_set_threads": (None, [_P, _I]),
    # GPU memory (models compiled for "cuda")
    "lathe_compiled_run_device": (_I, [_P, ctypes.POINTER(_P), _I, ctypes.POINTER(_P), _I, _P]),
    "lathe_compiled_last_run_copies": (_I, [_P, ctypes.POINTER(RunCopies)]),
    "lathe_device_open": (_I, [_S, _I, ctypes.POINTER(_P), _S, ctypes.c_size_t]),
    "lathe_device_close": (None, [_P]),
    "lathe_device_error": (_S, [_P]),
    "lathe_device_alloc": (_I, [_P, ctypes.c_size_t, ctypes.POINTER(_P)]),
    "lathe_device_free": (None, [_P, _P]),
    "lathe_device_copy": (_I, [_P, _P, _P, ctypes.c_size_t, _I]),
}
# Symbols a library from before the compiled path (or GPU memory) lacks: their absence makes backend="cpu"
# (or GPU tensors) unavailable rather than the library unusable.
OPTIONAL = {n for n in _PROTOS if n.startswith("lathe_compile") or n.startswith("lathe_device")}

_lib = None
_lib_path = None


def candidates():
    """The paths load() tries, in order (see the module comment)."""
    out = []
    env = os.environ.get("LATHE_LIBRARY")
    if env:
        out.append(env)
    here = os.path.dirname(os.path.abspath(__file__))
    out.append(os.path.join(here, "liblathe.so"))
    out.append(os.path.join(os.path.dirname(os.path.dirname(here)), "build", "liblathe.so"))
    return out


def load():
    """The loaded library (a ctypes.CDLL with prototypes set), loading it on first call."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    env = os.environ.get("LATHE_LIBRARY")
    for path in candidates():
        if not os.path.isfile(path):
            tried.append(f"{path} (missing)")
            if env and path == env:  # an explicit choice that does not exist is an error, not a fallback
                raise LatheError(f"LATHE_LIBRARY={env}: no such file", "usage")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise LatheError(f"cannot load {path}: {e}", "io") from e
        missing = []
        for name, (res, args) in _PROTOS.items():
            fn = getattr(lib, name, None)
            if fn is None:
                if name not in OPTIONAL:
                    missing.append(name)
                continue
            fn.restype, fn.argtypes = res, args
        if missing:
            raise LatheError(f"{path} is not a compatible liblathe (missing {', '.join(missing)})", "usage")
        _lib, _lib_path = lib, path
        return lib
    raise LatheError("liblathe.so not found; tried " + ", ".join(tried) +
                     ". Install the package with `pip install ./python`, build the tree (scripts/build.sh), "
                     "or set LATHE_LIBRARY to the library's path", "usage")


def library_path():
    load()
    return _lib_path


def has(name):
    return getattr(load(), name, None) is not None


# lathe_status -> the short name LatheError.status carries (the enum's suffix, lower case; stable, unlike
# lathe_status_name's human wording)
STATUS = {0: "ok", 1: "usage", 2: "invalid", 3: "unsupported", 4: "nomem", 5: "io", 6: "internal"}


def status_name(st):
    return STATUS.get(st, "internal")
