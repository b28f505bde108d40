"""_dlpack.py — DLPack in pure ctypes, for tensors in GPU memory (numpy handles the CPU ones itself).

Reading: `read(obj)` takes anything with __dlpack__ (a torch or CuPy CUDA tensor, ...), asks it for a
legacy "dltensor" capsule and reads the DLTensor inside: data pointer (byte_offset added), shape,
strides, element type, device. The capsule is kept in the returned Tensor (`owner`) and left unconsumed,
so the producer's memory stays alive as long as the Tensor does and is released, through the capsule's
own destructor, when it goes.

Writing: `export(ptr, shape, dtype, device, owner)` makes a "dltensor" capsule over memory lathe owns or
borrows (a CUDA OrtValue): a DLManagedTensor whose deleter drops the reference to `owner` that keeps the
memory alive. A consumer that takes the capsule (torch.from_dlpack, cupy.from_dlpack) renames it
"used_dltensor" and calls the deleter when it is done; a capsule nobody takes calls it from its
destructor. Both callbacks take the GIL (ctypes callbacks do), so a consumer may call the deleter from
any thread.

Layout and codes are DLPack's (dlpack.h, v0.8 / the unversioned ABI every consumer reads).
"""
import ctypes
import threading

import numpy as np

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                11: "rocm_host", 13: "cuda_managed", 14: "oneapi"}

_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_NAME = b"dltensor"
_USED = b"used_dltensor"

# The Python C API, called with the GIL held (PYFUNCTYPE). The raw forms take a PyObject * as an address:
# a capsule's destructor gets one whose reference count is already zero, which must not be touched.
_api = ctypes.pythonapi
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR)(
    ("PyCapsule_New", _api))


# ---- element types ----

def _dtype_table():
    t = {(_INT, 8): np.int8, (_INT, 16): np.int16, (_INT, 32): np.int32, (_INT, 64): np.int64,
         (_UINT, 8): np.uint8, (_UINT, 16): np.uint16, (_UINT, 32): np.uint32, (_UINT, 64): np.uint64,
         (_FLOAT, 16): np.float16, (_FLOAT, 32): np.float32, (_FLOAT, 64): np.float64,
         (_COMPLEX, 64): np.complex64, (_COMPLEX, 128): np.complex128, (_BOOL, 8): np.bool_}
    try:
        import ml_dtypes
        t[(_BFLOAT, 16)] = ml_dtypes.bfloat16
    except ImportError:
        pass
    return {k: np.dtype(v) for k, v in t.items()}


_DTYPES = _dtype_table()
_CODES = {v: k for k, v in _DTYPES.items()}


def dtype_of(code, bits, lanes):
    """numpy dtype of a DLPack (code, bits, lanes), or None when numpy (with ml_dtypes) has none."""
    if lanes != 1:
        return None
    return _DTYPES.get((code, bits))


def dtype_code(dtype):
    """(code, bits) of a numpy dtype, or None."""
    return _CODES.get(np.dtype(dtype))


# ---- reading ----

class Tensor:
    """A tensor read through DLPack: ptr (the first element's address), shape, strides (None: C order,
    in elements), dtype (numpy, None when numpy has no such type), dl_dtype (code, bits, lanes), device
    (type, id), owner (the capsule: keeps the producer's memory alive)."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "dl_dtype", "device", "owner")

    @property
    def contiguous(self):
        if self.strides is None:
            return True
        want = 1
        for d, s in zip(reversed(self.shape), reversed(self.strides)):
            if d != 1 and s != want:
                return 0 in self.shape  # an empty tensor has no elements to misplace
            want *= d
        return True


def device_of(obj):
    """(device type, id) from obj.__dlpack_device__(), or None when obj has none (or it fails)."""
    f = getattr(obj, "__dlpack_device__", None)
    if f is None:
        return None
    try:
        d = f()
        return int(d[0]), int(d[1])
    except Exception:  # noqa: BLE001 — not a DLPack device: the caller treats the object as host data
        return None


def read(obj):
    """obj's DLPack tensor (see Tensor). Raises ValueError (or the producer's own error) when obj gives no
    legacy DLPack capsule."""
    cap = obj.__dlpack__()
    if type(cap).__name__ != "PyCapsule":
        raise ValueError(f"__dlpack__() returned {type(cap).__name__}, not a DLPack capsule")
    if not _is_valid(cap, _NAME):
        name = _get_name(cap)
        raise ValueError(f"__dlpack__() returned a capsule named {name!r}, not an unused 'dltensor'")
    addr = _get_pointer(cap, _NAME)
    mt = DLManagedTensor.from_address(addr)
    t = mt.dl_tensor
    if t.ndim < 0 or t.ndim > 64:
        raise ValueError(f"DLPack tensor of rank {t.ndim}")
    out = Tensor()
    out.shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    out.strides = tuple(int(t.strides[i]) for i in range(t.ndim)) if t.strides else None
    out.ptr = (t.data or 0) + int(t.byte_offset)
    out.dl_dtype = (int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes))
    out.dtype = dtype_of(*out.dl_dtype)
    out.device = (int(t.device.device_type), int(t.device.device_id))
    out.owner = cap
    return out


# ---- writing ----

_lock = threading.Lock()
_live = {}  # DLManagedTensor address -> (the struct, its shape array, owner): alive until the deleter runs


def _release(addr):
    try:
        with _lock:
            _live.pop(addr, None)
    except Exception:  # noqa: BLE001 — interpreter shutdown: nothing left to release
        pass


def _deleter(mt):
    _release(ctypes.cast(mt, ctypes.c_void_p).value)


def _destructor(capsule):
    """A capsule's destructor: the consumer never took it (still named 'dltensor'): release it here."""
    try:
        if _is_valid_raw(capsule, _NAME):
            _release(_get_pointer_raw(capsule, _NAME))
    except Exception:  # noqa: BLE001 — never raise from a destructor
        pass


_DELETER_FN = _DELETER(_deleter)
_DESTRUCTOR_FN = _CAPSULE_DESTRUCTOR(_destructor)


def export(ptr, shape, dtype, device, owner):
    """A 'dltensor' capsule over `ptr` (C order), of numpy dtype `dtype`, on DLPack `device` (type, id);
    `owner` is kept alive until the consumer is done with the memory."""
    code = dtype_code(dtype)
    if code is None:
        raise TypeError(f"element type {np.dtype(dtype)} has no DLPack code")
    mt = DLManagedTensor()
    n = len(shape)
    dims = (ctypes.c_int64 * max(2 * n, 1))(*shape)  # the shape, then C-order strides (in elements)
    step = 1
    for k in reversed(range(n)):
        dims[n + k] = step
        step *= max(int(shape[k]), 1)
    t = mt.dl_tensor
    t.data = ptr or None
    t.device = DLDevice(int(device[0]), int(device[1]))
    t.ndim = n
    t.dtype = DLDataType(code[0], code[1], 1)
    t.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    # explicit strides: consumers from before DLPack 0.8 need them (NULL reads as C order since)
    t.strides = ctypes.cast(ctypes.byref(dims, 8 * n), ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    mt.manager_ctx = None
    mt.deleter = _DELETER_FN
    addr = ctypes.addressof(mt)
    with _lock:
        _live[addr] = (mt, dims, owner)
    return _capsule_new(addr, _NAME, _DESTRUCTOR_FN)


def live_exports():
    """How many exported capsules still hold their owner (tests)."""
    with _lock:
        return len(_live)
