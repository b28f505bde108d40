#!/usr/bin/env python3
"""io_seeds.py npy|npz FOLDER — seed corpus for fuzz/fuzz_npy.c or fuzz/fuzz_npz.c.

npy: every dtype lathe reads (both byte orders), C and Fortran order, 0-d, empty and huge-but-empty
shapes, byte and unicode strings, format versions 1.0, 2.0 and 3.0, and a few broken headers.
npz: np.savez and np.savez_compressed archives, an archive with a folder entry, a zip64 one, and a
small zip bomb (directory entries sharing one member), which the decoder must refuse.
"""
import io
import os
import struct
import sys
import zipfile

import numpy as np


def npy(a, version=None):
    b = io.BytesIO()
    if version:
        np.lib.format.write_array(b, a, version=version)
    else:
        np.save(b, a)
    return b.getvalue()


def raw_npy(header, data=b""):
    h = header.encode()
    h += b" " * (-(10 + len(h) + 1) % 16) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data


def npy_seeds():
    out = {}
    for dt in ("<i1", "<i2", ">i4", "<i8", "<u1", ">u2", "<u4", "<u8", "<f2", ">f4", "<f8", "<c8", ">c16", "|b1"):
        out[f"{dt[1:]}_{'be' if dt[0] == '>' else 'le'}"] = npy((np.arange(6) % 3).astype(dt).reshape(2, 3))
    out["fortran"] = npy(np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
    out["scalar"] = npy(np.array(3.5, np.float64))
    out["empty"] = npy(np.zeros((0, 3), np.int32))
    out["bytes"] = npy(np.array([b"ab", b"", b"xyz"]))
    out["unicode"] = npy(np.array(["h\u00e9", "\u4e2d\u6587", "\U0001F600"]))
    out["v2"] = npy(np.arange(4, dtype=np.int16), (2, 0))
    out["v3"] = npy(np.array(["x"]), (3, 0))
    out["huge_string_item"] = raw_npy("{'descr': '<U4000000000', 'fortran_order': False, 'shape': (0,), }")
    out["huge_empty_fortran"] = raw_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (0, 4611686018427387904, 4, 2), }")
    out["lying_shape"] = raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }", b"\0" * 16)
    out["structured"] = raw_npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", b"\0" * 4)
    return out


def bomb(n=8):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", npy(np.zeros(4096, np.float32)))
    d = b.getvalue()
    eocd = len(d) - 22
    _, size, off = struct.unpack_from("<HII", d, eocd + 10)
    entry = d[off:off + size]
    nlen = struct.unpack_from("<H", entry, 28)[0]
    cd = b""
    for i in range(n):
        name = f"a{i}.npy".encode()
        e = bytearray(entry[:46]) + name + entry[46 + nlen:]
        struct.pack_into("<H", e, 28, len(name))
        cd += bytes(e)
    return d[:off] + cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), off, 0)


def npz_seeds():
    out = {}
    b = io.BytesIO()
    np.savez(b, x=np.arange(6, dtype=np.float32).reshape(2, 3), s=np.array(["a", "bc"]), e=np.zeros((0,), np.int8))
    out["stored"] = b.getvalue()
    b = io.BytesIO()
    np.savez_compressed(b, x=np.ones((4, 4), np.float64), y=np.arange(10, dtype=np.int64))
    out["deflated"] = b.getvalue()
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr("dir/", b"")
        z.writestr("dir/v.npy", npy(np.array([1, 2], np.uint16)))
    out["folder"] = b.getvalue()
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("big.npy", "w", force_zip64=True) as f:
            f.write(npy(np.arange(8, dtype=np.int32)))
    out["zip64"] = b.getvalue()
    out["bomb"] = bomb()
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("npy", "npz"):
        print("usage: io_seeds.py npy|npz FOLDER", file=sys.stderr)
        return 1
    os.makedirs(sys.argv[2], exist_ok=True)
    for name, data in (npy_seeds() if sys.argv[1] == "npy" else npz_seeds()).items():
        with open(os.path.join(sys.argv[2], f"{name}.{sys.argv[1]}"), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
