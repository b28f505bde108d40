"""test_input_limits.py — bounded memory and arithmetic on hostile inputs, through the lathe CLI and the
Python package.

- .npz: a zip bomb whose directory entries all point at one deflate stream is refused (overlapping
  members); the sizes the members claim are bounded by a limit the user can raise
  (LATHE_MAX_INPUT_BYTES for the CLI); a member that inflates to more than it claims is an error.
- .npy: a string dtype of 4e9 characters with shape (0,) is refused by its item size (it used to malloc
  16 GB); a Fortran-order header with shape (0, 2^62, 4, 2) decodes without overflowing (run this file
  with LATHE_BIN pointing at a -DLATHE_SANITIZE=ON build to see UBSan agree).
- Loop: a trip count of INT64_MAX with a scan output, or with a sequence that grows each iteration,
  stops at the interpreter's memory limit with an error naming the node (it used to grow forever).
- Shapes of 2^62 elements (Tile, Expand) are errors on every backend, never wrapped arithmetic.
- A tuning database step `split i0 9223372036854775807` (a 2^63-iteration loop) is refused, and the
  compile falls back to the default schedule; an integer that does not fit int64 is not clamped to
  INT64_MAX.
- An external-data file truncated after the model was loaded: running it gives the data as loaded
  (or an error), never SIGBUS.

The binary is $LATHE_BIN (default build/lathe); the library for the Python case is the liblathe.so
next to it (or $LATHE_LIBRARY).
"""
import io
import os
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
LATHE = Path(os.environ.get("LATHE_BIN", "build/lathe"))
if not LATHE.is_absolute():
    LATHE = ROOT / LATHE
LIB = os.environ.get("LATHE_LIBRARY") or str(LATHE.parent / "liblathe.so")

pytestmark = pytest.mark.skipif(not LATHE.exists(), reason=f"lathe binary not built ({LATHE})")


def lathe(*args, timeout=120, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([str(LATHE), *map(str, args)], capture_output=True, text=True, errors="replace",
                       timeout=timeout, env=e)
    assert r.returncode >= 0, f"lathe killed by signal {-r.returncode}: {args}\n{r.stderr}"
    return r


def save(path, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save(m, str(path))
    return path


def identity_model(path, n):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])
    return save(path, [helper.make_node("Identity", ["x"], ["y"], name="copy")], [x], [y])


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def deflated_npz(members):
    """A deflated zip of {name: npy bytes} (zipfile, as np.savez_compressed writes)."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return bytearray(b.getvalue())


def central_directory(data):
    """(offset, size, count) of the central directory of a zip without a comment."""
    eocd = len(data) - 22
    assert struct.unpack_from("<I", data, eocd)[0] == 0x06054B50
    count, size, off = struct.unpack_from("<HII", data, eocd + 10)
    return off, size, count


# ---- .npz ----
def make_bomb(n_entries=40, nbytes=4 << 20):
    """One deflated member; a central directory of n_entries copies of its entry, renamed, all at offset 0."""
    data = deflated_npz({"x.npy": npy_bytes(np.zeros(nbytes // 4, np.float32))})
    off, size, count = central_directory(data)
    assert count == 1
    entry = bytes(data[off:off + size])
    nlen = struct.unpack_from("<H", entry, 28)[0]
    cd = b""
    for i in range(n_entries):
        name = b"x.npy" if i == 0 else f"a{i:02d}.npy".encode()
        e = bytearray(entry[:46]) + name + entry[46 + nlen:]
        struct.pack_into("<H", e, 28, len(name))
        cd += bytes(e)
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n_entries, n_entries, len(cd), off, 0)
    return bytes(data[:off]) + cd + eocd


def test_npz_bomb_refused(tmp_path):
    model = identity_model(tmp_path / "m.onnx", 1 << 20)
    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(make_bomb())
    with zipfile.ZipFile(bomb) as z:  # Python's zipfile reads it: every entry is "valid"
        assert len(z.namelist()) == 40
    for spec in (bomb, f"x={bomb}"):
        r = lathe("run", model, "--input", spec, "--output", tmp_path / "out.npz")
        assert r.returncode == 2, r.stderr
        assert "overlap" in r.stderr and "zip bomb" in r.stderr, r.stderr
        assert "a01.npy" in r.stderr or "x.npy" in r.stderr, r.stderr
        assert not (tmp_path / "out.npz").exists()


def test_npz_limit_can_be_raised(tmp_path):
    n = 1 << 19  # 2 MiB of float32
    model = identity_model(tmp_path / "m.onnx", n)
    p = tmp_path / "in.npz"
    x = np.arange(n, dtype=np.float32)
    np.savez_compressed(p, x=x)
    r = lathe("run", model, "--input", p, "--output", tmp_path / "out.npz", env={"LATHE_MAX_INPUT_BYTES": "1M"})
    assert r.returncode == 2, r.stderr
    assert "limit of 1048576 bytes" in r.stderr and "x.npy" in r.stderr, r.stderr
    r = lathe("run", model, "--input", p, "--output", tmp_path / "out.npz", env={"LATHE_MAX_INPUT_BYTES": "64M"})
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], x)
    # the same limit holds for a plain .npy
    np.save(tmp_path / "x.npy", x)
    r = lathe("run", model, "--input", tmp_path / "x.npy", env={"LATHE_MAX_INPUT_BYTES": "1M"})
    assert r.returncode == 2 and "limit of 1048576 bytes" in r.stderr, r.stderr


def test_npz_member_larger_than_claimed(tmp_path):
    model = identity_model(tmp_path / "m.onnx", 4096)
    data = deflated_npz({"x.npy": npy_bytes(np.zeros(4096, np.float32))})
    off, size, count = central_directory(data)
    usize = struct.unpack_from("<I", data, off + 24)[0]
    struct.pack_into("<I", data, off + 24, usize - 64)  # central directory claims 64 bytes less
    struct.pack_into("<I", data, 22, usize - 64)  # and so does the local header
    p = tmp_path / "short.npz"
    p.write_bytes(bytes(data))
    r = lathe("run", model, "--input", p)
    assert r.returncode == 2, r.stderr
    assert f"inflates to more than the {usize - 64} bytes" in r.stderr, r.stderr


# ---- .npy ----
def raw_npy(header):
    h = header.encode()
    h += b" " * (-(10 + len(h) + 1) % 16) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h


def test_npy_huge_string_item(tmp_path):
    model = identity_model(tmp_path / "m.onnx", 4)
    p = tmp_path / "u.npy"
    p.write_bytes(raw_npy("{'descr': '<U4000000000', 'fortran_order': False, 'shape': (0,), }"))
    assert len(p.read_bytes()) < 100
    r = lathe("run", model, "--input", p)
    assert r.returncode == 2, r.stderr
    assert "item size 16000000000 bytes exceeds" in r.stderr, r.stderr


def test_npy_fortran_huge_empty_shape(tmp_path):
    model = identity_model(tmp_path / "m.onnx", 4)
    p = tmp_path / "f.npy"
    p.write_bytes(raw_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (0, 4611686018427387904, 4, 2), }"))
    r = lathe("run", model, "--input", p)
    assert r.returncode == 2, r.stderr  # decoded (empty), then refused by the input's declared rank
    assert "input 'x'" in r.stderr, r.stderr


# ---- Loop and sequences ----
BIG = 1 << 20  # floats in the tensor each iteration keeps (4 MiB, shared: little real memory)


def endless_loop_model(path, body_nodes, body_outputs, carried_names=(), carried_inputs=(), loop_outputs=("ys",),
                       before=(), after=(), outputs=()):
    """A Loop of trip count INT64_MAX whose condition stays true, named endless_loop; `big` (BIG floats)
    and the model input x (float[1], unused) are in scope."""
    big = numpy_helper.from_array(np.ones(BIG, np.float32), "big")
    trip = numpy_helper.from_array(np.array(2**63 - 1, np.int64), "trip")
    cond = numpy_helper.from_array(np.array(True), "cond")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"])] + list(body_nodes), "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])] + list(carried_inputs),
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, [])] + list(body_outputs))
    loop = helper.make_node("Loop", ["trip", "cond", *carried_names], list(loop_outputs), name="endless_loop", body=body)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    return save(path, [*before, loop, *after], [x], list(outputs), inits=[big, trip, cond])


def test_loop_scan_output_memory_limit(tmp_path):
    p = endless_loop_model(tmp_path / "scan.onnx", [helper.make_node("Identity", ["big"], ["kept"])],
                           [helper.make_tensor_value_info("kept", TensorProto.FLOAT, [BIG])],
                           outputs=[helper.make_tensor_value_info("ys", TensorProto.FLOAT, [None, BIG])])
    for backend in ("interp", "cpu"):
        r = lathe("run", p, "--backend", backend, "--fill", "zeros", timeout=120, env={"LATHE_CACHE_DIR": str(tmp_path / "c")})
        assert r.returncode == 2, r.stderr
        assert "endless_loop" in r.stderr and "limit of 4294967296 bytes" in r.stderr, r.stderr


def test_loop_memory_limit_can_be_changed(tmp_path):
    """LATHE_MAX_LOOP_BYTES (the CLI) and max_loop_bytes (Python, the C API's load options) set the limit,
    for the interpreter and for a compiled model's host steps alike; a value that is not a size is
    reported and the default kept."""
    p = endless_loop_model(tmp_path / "scan.onnx", [helper.make_node("Identity", ["big"], ["kept"])],
                           [helper.make_tensor_value_info("kept", TensorProto.FLOAT, [BIG])],
                           outputs=[helper.make_tensor_value_info("ys", TensorProto.FLOAT, [None, BIG])])
    for backend in ("interp", "cpu"):
        r = lathe("run", p, "--backend", backend, "--fill", "zeros", timeout=120,
                  env={"LATHE_CACHE_DIR": str(tmp_path / "c"), "LATHE_MAX_LOOP_BYTES": "16M"})
        assert r.returncode == 2 and "endless_loop" in r.stderr and "limit of 16777216 bytes" in r.stderr, r.stderr
        assert "LATHE_MAX_LOOP_BYTES" in r.stderr, r.stderr
    r = lathe("run", p, "--backend", "interp", "--fill", "zeros", timeout=120, env={"LATHE_MAX_LOOP_BYTES": "lots"})
    assert r.returncode == 2 and "LATHE_MAX_LOOP_BYTES='lots' is not a size" in r.stderr, r.stderr
    assert "limit of 4294967296 bytes" in r.stderr, r.stderr
    lathe_py = pytest.importorskip("lathe")
    for backend in ("interp", "cpu"):
        m = lathe_py.compile(p, backend=backend, max_loop_bytes=8 << 20, cache_dir=str(tmp_path / "c"))
        with pytest.raises(lathe_py.LatheError, match="limit of 8388608 bytes") as e:
            m(np.zeros(1, np.float32))
        assert e.value.status == "nomem" and "endless_loop" in str(e.value)
    with pytest.raises(ValueError, match="max_loop_bytes"):
        lathe_py.compile(p, backend="interp", max_loop_bytes=0)


def seq_info(name):
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [BIG])))


def test_loop_sequence_memory_limit(tmp_path):
    p = endless_loop_model(
        tmp_path / "seq.onnx", [helper.make_node("SequenceInsert", ["s_in", "big"], ["s_out"], name="grow")],
        [seq_info("s_out")], carried_names=["s0"],
        carried_inputs=[seq_info("s_in")], loop_outputs=["s_end"],
        before=[helper.make_node("SequenceEmpty", [], ["s0"], dtype=TensorProto.FLOAT)],
        after=[helper.make_node("SequenceLength", ["s_end"], ["n"])],
        outputs=[helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    r = lathe("run", p, "--backend", "interp", "--fill", "zeros", timeout=120)
    assert r.returncode == 2, r.stderr
    assert "grow" in r.stderr and "limit of 4294967296 bytes" in r.stderr and "sequence" in r.stderr, r.stderr


def test_split_to_sequence_of_empty_tensors(tmp_path):
    # [10^9, 0] holds no data but splits into 10^9 tensors
    shape = numpy_helper.from_array(np.array([10**9, 0], np.int64), "shape")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["z"]),
             helper.make_node("SplitToSequence", ["z"], ["s"], name="split_all", axis=0),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    p = save(tmp_path / "split.onnx", nodes, [x], [helper.make_tensor_value_info("n", TensorProto.INT64, [])], [shape])
    r = lathe("run", p, "--backend", "interp", "--fill", "zeros", timeout=120)
    assert r.returncode == 2, r.stderr
    assert "split_all" in r.stderr and "limit of" in r.stderr, r.stderr


# ---- shapes of 2^62 elements ----
@pytest.mark.parametrize("case", ["tile", "expand"])
def test_huge_shapes_are_errors(tmp_path, case):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    if case == "tile":
        arg = numpy_helper.from_array(np.array([2**62], np.int64), "reps")
        node = helper.make_node("Tile", ["x", "reps"], ["y"], name="huge")
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**62])
    else:
        arg = numpy_helper.from_array(np.array([2**62, 4], np.int64), "shape")
        node = helper.make_node("Expand", ["x", "shape"], ["y"], name="huge")
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**62, 4])
    p = save(tmp_path / f"{case}.onnx", [node], [x], [y], [arg])
    for backend in ("interp", "cpu"):
        r = lathe("run", p, "--backend", backend, "--fill", "zeros", timeout=120, env={"LATHE_CACHE_DIR": str(tmp_path / "c")})
        assert r.returncode == 2, f"{backend}: {r.returncode}\n{r.stderr}"


# ---- tuning database steps ----
def tune_db_for(tmp_path, model, steps):
    """A tuning database that gives every kernel of `model` the schedule `steps`: the keys come from a
    database `lathe tune` writes (one trial), the steps are replaced."""
    db = tmp_path / "tune.tsv"
    r = lathe("tune", model, "--tune-db", db, "--trials", "1", timeout=300, env={"LATHE_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    lines = [ln.split("\t") for ln in db.read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines, db.read_text()
    db.write_text("# lathe tuning database v1\n" + "".join("\t".join(f[:4] + [steps]) + "\n" for f in lines))
    return db


@pytest.fixture(scope="module")
def add_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("tune")
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [8, 16])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])
    return save(d / "add.onnx", [helper.make_node("Add", ["a", "b"], ["y"], name="add")], [a, b], [y])


def test_tune_db_absurd_split_factor(tmp_path, add_model):
    """The step is refused (the library's error names it: tests/unit/test_io_limits.c); the compile
    then takes the default schedule, so the kernel runs as usual instead of for 2^63 iterations."""
    db = tune_db_for(tmp_path, add_model, "split i0 9223372036854775807")
    env = {"LATHE_CACHE_DIR": str(tmp_path / "cache")}
    r = lathe("run", add_model, "--tune-db", db, "--fill", "ramp", "--output", tmp_path / "tuned.npz", timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    r = lathe("run", add_model, "--backend", "interp", "--fill", "ramp", "--output", tmp_path / "ref.npz", env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "tuned.npz")["y"], np.load(tmp_path / "ref.npz")["y"])


def test_tune_db_factor_out_of_range(tmp_path, add_model):
    """A factor that does not fit int64 is a malformed database line, not INT64_MAX."""
    db = tune_db_for(tmp_path, add_model, "split i0 99999999999999999999999")
    r = lathe("run", add_model, "--tune-db", db, timeout=120, env={"LATHE_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 2, r.stderr
    assert "tune.tsv:2" in r.stderr and "split i0 99999999999999999999999" in r.stderr, r.stderr


# ---- external data truncated while loaded ----
def sanitized_library():
    """A -DLATHE_SANITIZE=ON liblathe.so needs the sanitizer runtime loaded first: not from Python."""
    try:
        return b"__asan_init" in Path(LIB).read_bytes()
    except OSError:
        return False


@pytest.mark.skipif(sanitized_library(), reason="the library is built with sanitizers (Python cannot load it)")
@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_external_data_truncated_after_load(tmp_path, backend):
    d = tmp_path / "m"
    d.mkdir()
    w = np.arange(1 << 16, dtype=np.float32)  # 256 KiB: many pages
    (d / "w.bin").write_bytes(w.tobytes())
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend([w.size])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [w.size])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [w.size])
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], initializer=[t])
    model = d / "model.onnx"
    model.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString())
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(ROOT / 'python')!r})
        import lathe
        m = lathe.compile({str(model)!r}, backend={backend!r}, cache_dir={str(tmp_path / 'cache')!r})
        open({str(d / 'w.bin')!r}, 'r+b').truncate(0)
        try:
            y = m(x=np.zeros({w.size}, np.float32))["y"]
        except lathe.LatheError as e:
            print('error', e)
        else:
            print('same' if np.array_equal(y, np.arange({w.size}, dtype=np.float32)) else 'different')
    """)
    env = dict(os.environ, LATHE_LIBRARY=LIB)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, f"exit {r.returncode} (signal {-r.returncode if r.returncode < 0 else 0})\n{r.stderr}"
    assert r.stdout.strip() in ("same",) or r.stdout.startswith("error"), r.stdout + r.stderr
