"""test_bad_input.py — the lathe CLI on malformed models, hostile external data and unknown ops.

Every case checks the exit code (2 for a bad model or input, 3 for an unsupported op), that the
message names what is wrong and where (file, byte offset, tensor, node), that the process was not
killed by a signal, and that `lathe run --output out.npz` leaves no output file behind when it fails.
The binary is $LATHE_BIN (default build/lathe, relative to the repository root).
"""
import os
import random
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
LATHE = Path(os.environ.get("LATHE_BIN", "build/lathe"))
if not LATHE.is_absolute():
    LATHE = ROOT / LATHE

pytestmark = pytest.mark.skipif(not LATHE.exists(), reason=f"lathe binary not built ({LATHE})")


def lathe(*args, timeout=60):
    r = subprocess.run([str(LATHE), *map(str, args)], capture_output=True, text=True, errors="replace", timeout=timeout)
    assert r.returncode >= 0, f"lathe killed by signal {-r.returncode}: {args}\n{r.stderr}"
    return r


def expect_fail(model_path, code, *needles, tmp_path):
    """inspect and run both fail with `code`, name every needle, and leave no output file."""
    for cmd in (["inspect", model_path], ["run", model_path, "--output", tmp_path / "out.npz"]):
        r = lathe(*cmd)
        msg = r.stdout + r.stderr
        assert r.returncode == code, f"{cmd}: exit {r.returncode}, expected {code}\n{msg}"
        for n in needles:
            assert n in msg, f"{cmd}: message lacks {n!r}:\n{msg}"
        assert not (tmp_path / "out.npz").exists(), f"{cmd}: left an output file behind"


def small_model(extra_inits=(), nodes=None, ir=8):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    if nodes is None:
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Add", ["r", "w"], ["y"], name="add")]
    inits = [numpy_helper.from_array(np.array([1, 2, 3, 4], np.float32), "w")] if nodes and "w" in nodes[-1].input else []
    g = helper.make_graph(nodes, "g", [x], [y], initializer=inits + list(extra_inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=ir)


def write(path, model):
    data = model if isinstance(model, bytes) else model.SerializeToString()
    path.write_bytes(data)
    return path


def test_valid_model_runs(tmp_path):
    p = write(tmp_path / "ok.onnx", small_model())
    r = lathe("inspect", p)
    assert r.returncode == 0, r.stderr
    r = lathe("run", p, "--fill", "ones", "--output", tmp_path / "out.npz")
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], np.ones((2, 4)) + [1, 2, 3, 4])


def test_truncated_file(tmp_path):
    data = small_model().SerializeToString()
    for cut in (1, 7, len(data) // 2, len(data) - 1):
        p = write(tmp_path / "trunc.onnx", data[:cut])
        expect_fail(p, 2, "trunc.onnx", "byte", tmp_path=tmp_path)


def test_empty_file(tmp_path):
    p = write(tmp_path / "empty.onnx", b"")
    expect_fail(p, 2, "empty.onnx", "no ir_version", tmp_path=tmp_path)


def test_random_bytes(tmp_path):
    for seed in range(8):
        data = bytes(random.Random(seed).getrandbits(8) for _ in range(2048))
        p = write(tmp_path / f"random{seed}.onnx", data)
        expect_fail(p, 2, f"random{seed}.onnx", "byte", tmp_path=tmp_path)


def test_byte_flips_never_crash(tmp_path):
    """Each byte of the first kilobyte flipped in turn: exit 0, 2 or 3, never a crash."""
    extra = [numpy_helper.from_array(np.linspace(-1, 1, 160).astype(np.float32), "unused")]
    data = small_model(extra).SerializeToString()
    assert len(data) >= 700
    p = tmp_path / "flip.onnx"
    codes = {}
    for i in range(min(len(data), 1024)):
        b = bytearray(data)
        b[i] ^= 0xFF
        p.write_bytes(bytes(b))
        r = lathe("inspect", p, timeout=30)
        assert r.returncode in (0, 2, 3), f"flip at byte {i}: exit {r.returncode}\n{r.stderr}"
        if r.returncode:
            assert "flip.onnx" in r.stderr or "flip.onnx" in r.stdout or "unsupported" in r.stderr, r.stderr
        codes[r.returncode] = codes.get(r.returncode, 0) + 1
    assert codes.get(2, 0) > 0


def nested_if(levels):
    leaf = lambda name: helper.make_graph(  # noqa: E731
        [helper.make_node("Identity", ["x"], [name])], "leaf", [], [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)])
    g = leaf("o0")
    for k in range(1, levels + 1):
        node = helper.make_node("If", ["c"], [f"o{k}"], then_branch=g, else_branch=leaf(f"e{k}"))
        g = helper.make_graph([node], f"level{k}", [], [helper.make_tensor_value_info(f"o{k}", TensorProto.FLOAT, None)])
    top = helper.make_graph(g.node, "main", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], list(g.output))
    return helper.make_model(top, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_nesting_past_limit(tmp_path):
    ok = write(tmp_path / "shallow.onnx", nested_if(4))
    assert lathe("inspect", ok).returncode == 0
    p = write(tmp_path / "deep.onnx", nested_if(25))
    expect_fail(p, 2, "deep.onnx", "nested deeper than the limit", "byte", tmp_path=tmp_path)


def raw_tensor(name, dims, raw, dtype=TensorProto.FLOAT):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def test_raw_data_wrong_length(tmp_path):
    bad = raw_tensor("badw", [2, 3], b"\0" * 8)
    p = write(tmp_path / "rawlen.onnx", small_model([bad]))
    expect_fail(p, 2, "rawlen.onnx", "'badw'", "raw_data has 8 bytes, expected 24", tmp_path=tmp_path)


def test_negative_dims(tmp_path):
    bad = raw_tensor("negw", [2, -3], b"")
    p = write(tmp_path / "neg.onnx", small_model([bad]))
    expect_fail(p, 2, "neg.onnx", "'negw'", "negative dimension -3", tmp_path=tmp_path)


def test_overflowing_dims(tmp_path):
    bad = raw_tensor("bigw", [1 << 40, 1 << 40, 1 << 20], b"\0" * 4)
    p = write(tmp_path / "big.onnx", small_model([bad]))
    expect_fail(p, 2, "big.onnx", "'bigw'", "overflow", tmp_path=tmp_path)


def test_undefined_input(tmp_path):
    nodes = [helper.make_node("Relu", ["nowhere"], ["y"], name="lost")]
    p = write(tmp_path / "undef.onnx", small_model(nodes=nodes))
    expect_fail(p, 2, "undef.onnx", "'lost'", "'nowhere'", tmp_path=tmp_path)


def test_unsupported_ir_version(tmp_path):
    p = write(tmp_path / "ir99.onnx", small_model(ir=99))
    expect_fail(p, 3, "ir99.onnx", "IR version 99", tmp_path=tmp_path)


# ---- external data ----
def external_model(folder, location, offset=0, length=16):
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = small_model()
    del m.graph.initializer[:]
    m.graph.initializer.append(t)
    folder.mkdir(parents=True, exist_ok=True)
    return write(folder / "model.onnx", m)


WEIGHTS = np.array([1, 2, 3, 4], np.float32).tobytes()


def test_external_data_ok(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "w.bin").write_bytes(b"\0" * 8 + WEIGHTS)
    p = external_model(d, "w.bin", offset=8)
    r = lathe("run", p, "--fill", "zeros", "--output", tmp_path / "out.npz")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], np.tile([1, 2, 3, 4], (2, 1)))
    # a subfolder is fine too
    (d / "sub").mkdir()
    (d / "sub" / "w.bin").write_bytes(WEIGHTS)
    p = external_model(d, "sub/w.bin")
    assert lathe("inspect", p).returncode == 0


def test_external_dotdot(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHTS)
    p = external_model(tmp_path / "m", "../w.bin")
    expect_fail(p, 2, "'w'", "../w.bin", "'..'", tmp_path=tmp_path)
    p = external_model(tmp_path / "m", "sub/../../w.bin")
    expect_fail(p, 2, "'w'", "'..'", tmp_path=tmp_path)


def test_external_absolute(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHTS)
    p = external_model(tmp_path / "m", str(tmp_path / "w.bin"))
    expect_fail(p, 2, "'w'", str(tmp_path / "w.bin"), "absolute path", tmp_path=tmp_path)


def test_external_symlink(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHTS)
    d = tmp_path / "m"
    d.mkdir()
    os.symlink(tmp_path / "w.bin", d / "link.bin")
    p = external_model(d, "link.bin")
    expect_fail(p, 2, "'w'", "link.bin", "symbolic link", tmp_path=tmp_path)
    # a link to a folder in the middle of the path
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "w.bin").write_bytes(WEIGHTS)
    os.symlink(tmp_path / "outside", d / "sub")
    p = external_model(d, "sub/w.bin")
    expect_fail(p, 2, "'w'", "sub/w.bin", "symbolic link", tmp_path=tmp_path)


def test_external_hardlink(tmp_path):
    (tmp_path / "w.bin").write_bytes(WEIGHTS)
    d = tmp_path / "m"
    d.mkdir()
    os.link(tmp_path / "w.bin", d / "hard.bin")
    p = external_model(d, "hard.bin")
    expect_fail(p, 2, "'w'", "hard.bin", "hard link", tmp_path=tmp_path)


def test_external_past_end(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "w.bin").write_bytes(WEIGHTS)
    p = external_model(d, "w.bin", offset=8, length=16)
    expect_fail(p, 2, "'w'", "w.bin", "past the end of the file", tmp_path=tmp_path)
    p = external_model(d, "w.bin", offset=(1 << 63) - 8, length=16)
    expect_fail(p, 2, "'w'", "past the end", tmp_path=tmp_path)


def test_external_missing(tmp_path):
    p = external_model(tmp_path / "m", "nothere.bin")
    expect_fail(p, 2, "'w'", "nothere.bin", "missing", tmp_path=tmp_path)


def test_external_not_regular(tmp_path):
    d = tmp_path / "m"
    (d / "adir").mkdir(parents=True)
    p = external_model(d, "adir")
    expect_fail(p, 2, "'w'", "adir", "not a regular file", tmp_path=tmp_path)


# ---- unsupported ops and bad input data ----
def test_unknown_op(tmp_path):
    nodes = [helper.make_node("FooBar", ["x"], ["y"], name="mystery", domain="my.domain"),
             helper.make_node("FooBar", ["x"], ["z"], name="second", domain="my.domain")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 3)])
    p = write(tmp_path / "unknown.onnx", m)
    r = lathe("inspect", p)
    assert r.returncode == 0 and "FooBar" in r.stdout, r.stdout + r.stderr
    r = lathe("run", p, "--output", tmp_path / "out.npz")
    msg = r.stdout + r.stderr
    assert r.returncode == 3, msg
    for needle in ("FooBar", "my.domain", "opset 3", "mystery", "2 nodes"):
        assert needle in msg, f"message lacks {needle!r}: {msg}"
    assert not (tmp_path / "out.npz").exists()


def test_bad_input_data(tmp_path):
    p = write(tmp_path / "ok.onnx", small_model())
    good = numpy_helper.from_array(np.ones((2, 4), np.float32), "x").SerializeToString()
    bad = tmp_path / "x.pb"
    bad.write_bytes(good[: len(good) - 5])
    r = lathe("run", p, "--input", f"x={bad}", "--output", tmp_path / "out.npz")
    assert r.returncode == 2, r.stderr
    assert "x.pb" in r.stderr and "byte" in r.stderr, r.stderr
    assert not (tmp_path / "out.npz").exists()
    # wrong raw_data length in an input file
    bad.write_bytes(raw_tensor("x", [2, 4], b"\0" * 12).SerializeToString())
    r = lathe("run", p, "--input", f"x={bad}", "--output", tmp_path / "out.npz")
    assert r.returncode == 2 and "raw_data has 12 bytes, expected 32" in r.stderr, r.stderr
    assert not (tmp_path / "out.npz").exists()


# ---- ImageDecoder on hostile images ----
# Each format's file is written here byte by byte (no Pillow needed): a small valid image, which
# must decode, then truncated, corrupt and huge-dimension variants, which must fail with exit
# status 2 and a message naming the node and the format, never a crash. A format whose library
# this build lacks is skipped (exit 3, "built without").
import struct  # noqa: E402
import zlib  # noqa: E402


def img_png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def img_png(w, h, idat=None):
    """An 8-bit truecolor PNG of w x h (idat: the compressed data, default a gradient)."""
    if idat is None:
        idat = zlib.compress(b"".join(b"\0" + bytes((x * 40 + y * 7) & 255 for x in range(w * 3)) for y in range(h)))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + img_png_chunk(b"IHDR", ihdr) + img_png_chunk(b"IDAT", idat) + img_png_chunk(b"IEND", b"")


def img_webp(w, h, argb=(255, 10, 200, 30), cut_stream=False):
    """A lossless WebP (VP8L) of one color: five one-symbol prefix codes, so pixels take no bits."""
    bits, n = 0, 0
    fields = [(w - 1, 14), (h - 1, 14), (0, 1), (0, 3), (0, 1), (0, 1), (0, 1)]  # size, no alpha, v0; no
    for sym in (argb[2], argb[1], argb[3], argb[0], 0):  # transform / color cache / meta codes; G R B A dist
        fields += [(1, 1), (0, 1), (1, 1), (sym, 8)]  # simple code of one 8-bit symbol
    for v, k in fields:
        bits, n = bits | v << n, n + k
    body = b"\x2f" + bits.to_bytes((n + 7) // 8, "little")
    body = body[:5] if cut_stream else body
    chunk = b"VP8L" + struct.pack("<I", len(body)) + body + b"\0" * (len(body) % 2)
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def img_webp_canvas(w, h):
    """An extended WebP header (VP8X) declaring a w x h canvas and nothing else."""
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\0" * 4 + (w - 1).to_bytes(3, "little") + (h - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x


def img_j2k(w, h):
    """A JPEG 2000 codestream of w x h 8-bit gray: one tile, no wavelet levels, one empty packet, so
    every sample is 128 (the DC level shift)."""
    def seg(marker, data):
        return struct.pack(">HH", marker, len(data) + 2) + data
    siz = struct.pack(">HIIIIIIIIH", 0, w, h, 0, 0, w, h, 0, 0, 1) + bytes((7, 1, 1))
    cod = bytes((0, 0)) + struct.pack(">H", 1) + bytes((0, 0, 4, 4, 0, 1))
    head = b"\xff\x4f" + seg(0xFF51, siz) + seg(0xFF52, cod) + seg(0xFF5C, bytes((0x40, 8 << 3)))
    return head + seg(0xFF90, struct.pack(">HIBB", 0, 12 + 2 + 1, 0, 1)) + b"\xff\x93\x00" + b"\xff\xd9"


def img_tiff(w, h, strip=None):
    """A little-endian 8-bit RGB TIFF, one deflate-compressed strip (default: a gradient)."""
    if strip is None:
        strip = zlib.compress(bytes((i * 13) & 255 for i in range(w * h * 3)))
    tags = [(256, 4, 1, w), (257, 4, 1, h), (258, 3, 3, None), (259, 3, 1, 8), (262, 3, 1, 2), (273, 4, 1, None),
            (277, 3, 1, 3), (278, 4, 1, h), (279, 4, 1, len(strip))]
    bps_at = 8 + 2 + 12 * len(tags) + 4
    out = b"II*\0" + struct.pack("<IH", 8, len(tags))
    for tag, typ, count, val in tags:
        val = bps_at if tag == 258 else bps_at + 6 if tag == 273 else val
        out += struct.pack("<HHIHH" if typ == 3 and count == 1 else "<HHII", tag, typ, count, *((val, 0) if typ == 3 and count == 1 else (val,)))
    return out + struct.pack("<I", 0) + struct.pack("<HHH", 8, 8, 8) + strip


def image_model(data, pixel_format="RGB"):
    init = numpy_helper.from_array(np.frombuffer(data, np.uint8).copy(), "encoded")
    node = helper.make_node("ImageDecoder", ["encoded"], ["y"], name="decode_it", pixel_format=pixel_format)
    g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], initializer=[init])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def run_image(tmp_path, data, pixel_format="RGB"):
    p = write(tmp_path / "img.onnx", image_model(data, pixel_format))
    out = tmp_path / "out.npz"
    if out.exists():
        out.unlink()
    r = lathe("run", p, "--output", out)
    if r.returncode == 3 and "built without" in r.stderr:
        pytest.skip(r.stderr.strip())
    return r, (np.load(out)["y"] if r.returncode == 0 else None)


IMAGE_FORMATS = {
    "png": ("PNG", lambda: img_png(3, 2)),
    "webp": ("WebP", lambda: img_webp(3, 2)),
    "jpeg2000": ("JPEG 2000", lambda: img_j2k(3, 2)),
    "tiff": ("TIFF", lambda: img_tiff(3, 2)),
}


def bad_png_zlib():
    return img_png(3, 2, idat=bytes(range(7, 40)))


def bad_png_crc():
    data = bytearray(img_png(3, 2))
    data[20] ^= 1  # a byte of IHDR's height
    return bytes(data)


HOSTILE = {
    "png": [bad_png_zlib, bad_png_crc, lambda: img_png(100000, 100000, idat=zlib.compress(b"\0" * 64)),
            lambda: img_png(0x7FFFFFFF, 1, idat=zlib.compress(b"\0" * 64))],
    "webp": [lambda: img_webp(3, 2, cut_stream=True), lambda: img_webp(16383, 16383, cut_stream=True),
             lambda: img_webp_canvas(20000, 20000), lambda: img_webp_canvas(1 << 24, 1 << 24)],
    "jpeg2000": [lambda: img_j2k(100000, 100000), lambda: img_j2k(0, 0), lambda: img_j2k(1 << 31, 1 << 31)],
    "tiff": [lambda: img_tiff(100000, 100000, strip=zlib.compress(b"\0" * 30)),
             lambda: img_tiff(3, 2, strip=b"\x78\x9c" + b"\xff" * 20)],
}


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_image_decoder_valid(tmp_path, fmt):
    """The hand-made files decode (so the hostile variants below start from something valid)."""
    r, y = run_image(tmp_path, IMAGE_FORMATS[fmt][1]())
    assert r.returncode == 0, r.stderr
    assert y.shape == (2, 3, 3) and y.dtype == np.uint8
    expect = {"png": [0, 40, 80], "webp": [10, 200, 30], "jpeg2000": [128, 128, 128], "tiff": [0, 13, 26]}[fmt]
    assert list(y[0, 0]) == expect, y


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_image_decoder_truncated(tmp_path, fmt):
    name, make = IMAGE_FORMATS[fmt]
    data = make()
    for cut in sorted({12, 16, max(12, len(data) // 3), len(data) // 2, len(data) - 6}):  # the signature stays
        r, _ = run_image(tmp_path, data[:cut])
        msg = r.stdout + r.stderr
        assert r.returncode == 2, f"{fmt} cut at {cut}: exit {r.returncode}\n{msg}"
        assert "decode_it" in msg and name in msg, f"{fmt} cut at {cut}: {msg}"
        assert not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize("fmt", sorted(HOSTILE))
def test_image_decoder_corrupt_and_huge(tmp_path, fmt):
    name = IMAGE_FORMATS[fmt][0]
    for i, make in enumerate(HOSTILE[fmt]):
        r, _ = run_image(tmp_path, make())
        msg = r.stdout + r.stderr
        assert r.returncode == 2, f"{fmt} case {i}: exit {r.returncode}\n{msg}"
        assert "decode_it" in msg and name in msg, f"{fmt} case {i}: {msg}"
        assert not (tmp_path / "out.npz").exists()
    # a huge header names the size and the limit
    huge = HOSTILE[fmt][{"png": 2, "webp": 2, "jpeg2000": 0, "tiff": 0}[fmt]]()
    r, _ = run_image(tmp_path, huge)
    assert r.returncode == 2 and "too large" in r.stderr, r.stderr
