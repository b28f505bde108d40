"""test_artifact.py — .lathe artifacts: compile once, run where there is no C compiler.

`lathe compile MODEL --save x.lathe` writes the model, its options and the compiled module in one file;
`lathe run x.lathe` (and lathe.compile / lathe.InferenceSession in Python) runs it with the C compiler
and NVRTC hidden: PATH holds only fake `cc`/`gcc`/`clang` that would write a marker file, CC and
LATHE_NVRTC name nothing, and the cache folder must stay empty. Outputs must equal the ONNX model's
compiled through the normal path, bit for bit. Damaged artifacts fail with one clear line: a changed byte
names its section, a meta that asks for a CPU feature this machine lacks names the feature, a truncated
file or a huge section length names the file and the byte offset, options that no longer produce the
saved module's source are refused (never compiled again). Models: sample/mlp.onnx when present (else
the same shape of perceptron), a small convolution model and a small residual CNN like the zoo's, all
with random weights. The binary comes from $LATHE_BIN (default build/lathe), the library from
$LATHE_LIBRARY (default: liblathe.so beside the binary).
"""
import hashlib
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
LIB = os.environ.get("LATHE_LIBRARY", os.path.join(os.path.dirname(LATHE), "liblathe.so"))
RNG = np.random.default_rng(20240611)


def run(*args, env=None, timeout=600):
    full = dict(os.environ)
    full.pop("LATHE_CACHE_DIR", None)
    full.update(env or {})
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=full)


def no_compiler_env(tmp):
    """PATH with only fake compilers that leave a marker; CC and NVRTC point nowhere; an empty cache."""
    fake = tmp / "fakebin"
    fake.mkdir(exist_ok=True)
    marker = tmp / "compiler-ran"
    for name in ("cc", "gcc", "clang", "c99", "nvcc"):
        p = fake / name
        p.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\nexit 1\n")
        p.chmod(0o755)
    cache = tmp / "empty-cache"
    cache.mkdir(exist_ok=True)
    env = {"PATH": str(fake), "CC": "/nonexistent", "LATHE_NVRTC": "/nonexistent", "LATHE_CACHE_DIR": str(cache),
           "XDG_CACHE_HOME": str(cache), "HOME": str(tmp)}
    return env, marker, cache


def assert_no_compiler(marker, cache):
    assert not marker.exists(), f"a compiler ran: {marker.read_text()}"
    assert os.listdir(cache) == [], f"the cache was written: {os.listdir(cache)}"


def rand(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def mlp_model(path):
    src = os.path.join(ROOT, "sample", "mlp.onnx")
    if os.path.exists(src):
        with open(src, "rb") as f:
            path.write_bytes(f.read())
        return path
    w1, b1, w2, b2 = rand(64, 32), rand(32), rand(32, 10), rand(10)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "w2"], ["l0"]),
             helper.make_node("Add", ["l0", "b2"], ["l1"]), helper.make_node("Softmax", ["l1"], ["probs"], axis=-1)]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def conv_model(path):
    w, b = rand(8, 3, 3, 3), rand(8)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 8, 8])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def zoo_like_model(path):
    """A small residual CNN: conv-BN-relu stem, a residual block, global pooling, a classifier."""
    c = 16
    inits, nodes = [], []

    def init(name, a):
        inits.append(numpy_helper.from_array(a, name))
        return name

    def conv_bn(x, cin, cout, name, relu=True, stride=1):
        w = init(name + "_w", rand(cout, cin, 3, 3, scale=0.2))
        nodes.append(helper.make_node("Conv", [x, w], [name + "_c"], pads=[1, 1, 1, 1], strides=[stride, stride]))
        bn = [init(name + s, a) for s, a in (("_g", 1 + rand(cout, scale=0.1)), ("_b", rand(cout, scale=0.1)),
                                             ("_m", rand(cout, scale=0.1)), ("_v", 1 + np.abs(rand(cout, scale=0.1))))]
        nodes.append(helper.make_node("BatchNormalization", [name + "_c", *bn], [name + "_bn"]))
        if not relu:
            return name + "_bn"
        nodes.append(helper.make_node("Relu", [name + "_bn"], [name + "_r"]))
        return name + "_r"

    s = conv_bn("x", 3, c, "stem", stride=2)
    a = conv_bn(s, c, c, "b1a")
    b = conv_bn(a, c, c, "b1b", relu=False)
    nodes.append(helper.make_node("Add", [s, b], ["res"]))
    nodes.append(helper.make_node("Relu", ["res"], ["res_r"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["res_r"], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    nodes.append(helper.make_node("Gemm", ["flat", init("fc_w", rand(10, c)), init("fc_b", rand(10))], ["logits"],
                                  transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"], axis=1))
    g = helper.make_graph(nodes, "zoo_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 32, 32])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["n", 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)]), str(path))
    return path


MODELS = {"mlp": (mlp_model, ["--dim", "batch=3"]), "conv": (conv_model, []),
          "zoo_like": (zoo_like_model, ["--dim", "n=2"])}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each model saved as an artifact (with a compiler), and its outputs through the normal path."""
    d = tmp_path_factory.mktemp("artifacts")
    cache = d / "cache"
    out = {}
    for name, (make, bind) in MODELS.items():
        m = make(d / f"{name}.onnx")
        art = d / f"{name}.lathe"
        r = run("compile", m, *bind, "--save", art, env={"LATHE_CACHE_DIR": str(cache)})
        assert r.returncode == 0, r.stderr
        assert "saved:" in r.stdout and art.exists()
        ref = d / f"{name}_ref.npz"
        r = run("run", m, *bind, "--seed", 11, "--output", ref, env={"LATHE_CACHE_DIR": str(cache)})
        assert r.returncode == 0, r.stderr
        out[name] = (m, art, ref, bind)
    return d, out


def npz_equal(a, b):
    x, y = np.load(a), np.load(b)
    assert sorted(x.files) == sorted(y.files)
    for k in x.files:
        assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape, k
        assert np.array_equal(x[k], y[k]), f"{k}: max diff {np.max(np.abs(x[k] - y[k]))}"
        assert np.any(x[k] != 0), f"{k}: all zeros"


@pytest.mark.parametrize("name", list(MODELS))
def test_run_without_compiler(saved, tmp_path, name):
    _, models = saved
    _, art, ref, _ = models[name]
    env, marker, cache = no_compiler_env(tmp_path)
    got = tmp_path / "got.npz"
    r = run("run", art, "--seed", 11, "--output", got, env=env)
    assert r.returncode == 0, r.stderr
    assert_no_compiler(marker, cache)
    npz_equal(got, ref)


PY_CHECK = r"""
import sys, numpy as np, lathe
art, onnx_path, dims = sys.argv[1], sys.argv[2], sys.argv[3]
x = np.load(sys.argv[4])
m = lathe.compile(art)
got = m(**{m.inputs[0].name: x})
sess = lathe.InferenceSession(art, providers=["CPUExecutionProvider"])
got2 = sess.run(None, {sess.get_inputs()[0].name: x})
np.savez(sys.argv[5], a=list(got.values())[0], b=got2[0])
"""


@pytest.mark.parametrize("name", ["mlp", "zoo_like"])
def test_python_without_compiler(saved, tmp_path, name):
    if not os.path.exists(LIB):
        pytest.skip(f"no {LIB}")
    _, models = saved
    m, art, _, bind = models[name]
    dims = dict(kv.split("=") for kv in bind[1::2])
    shape = (3, 64) if name == "mlp" else (2, 3, 32, 32)
    x = RNG.standard_normal(shape).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    env, marker, cache = no_compiler_env(tmp_path)
    env.update({"LATHE_LIBRARY": LIB, "PYTHONPATH": os.path.join(ROOT, "python")})
    full = dict(os.environ)
    full.update(env)
    r = subprocess.run([sys.executable, "-c", PY_CHECK, art, m, ",".join(dims), tmp_path / "x.npy", tmp_path / "o.npz"],
                       capture_output=True, text=True, timeout=600, env=full)
    assert r.returncode == 0, r.stderr
    assert_no_compiler(marker, cache)
    # the reference: the ONNX model compiled here, in the normal way
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.setdefault("LATHE_LIBRARY", LIB)
    import lathe
    ref = lathe.compile(str(m), dims={k: int(v) for k, v in dims.items()}, cache_dir=str(tmp_path / "c2"))
    want = list(ref(**{ref.inputs[0].name: x}).values())[0]
    o = np.load(tmp_path / "o.npz")
    assert np.array_equal(o["a"], want) and np.array_equal(o["b"], want)
    assert np.any(want != 0)


# ---- damaged and foreign artifacts ----

def sections(data):
    assert data[:8] == b"LATHEART"
    _, n = struct.unpack_from("<II", data, 8)
    off, out = 16, []
    for _ in range(n):
        tag = data[off:off + 8].rstrip(b"\0").decode()
        (length,) = struct.unpack_from("<Q", data, off + 8)
        out.append((tag, off, off + 48, length))
        off += 48 + length
    return out


def rewrite_meta(data, fn):
    secs = sections(data)
    tag, head, body, length = secs[0]
    assert tag == "meta"
    meta = fn(data[body:body + length].decode()).encode()
    hdr = b"meta".ljust(8, b"\0") + struct.pack("<Q", len(meta)) + hashlib.sha256(meta).digest()
    return data[:head] + hdr + meta + data[body + length:]


def one_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("section", ["meta", "model", "module"])
def test_tampered_byte_names_section(saved, tmp_path, section):
    _, models = saved
    art = models["conv"][1]
    data = bytearray(art.read_bytes())
    sec = {t: (b, n) for t, _, b, n in sections(bytes(data))}
    body, length = sec[section]
    data[body + length // 2] ^= 0x5A
    bad = tmp_path / "tampered.lathe"
    bad.write_bytes(bytes(data))
    env, marker, cache = no_compiler_env(tmp_path)
    r = run("run", bad, env=env)
    assert r.returncode == 2, r.stderr
    line = one_line(r.stderr)
    assert f"section '{section}'" in line and "tampered.lathe" in line and "SHA-256" in line
    assert_no_compiler(marker, cache)


def test_missing_cpu_feature_refused(saved, tmp_path):
    _, models = saved
    art = models["mlp"][1]
    flags = ""
    with open("/proc/cpuinfo") as f:
        for ln in f:
            if ln.startswith(("flags", "Features")):
                flags = ln.split(":", 1)[1].split()
                break
    candidates = ["avx512_fp16", "amx_tile", "avx512er", "avx512_4fmaps", "sse4a", "fma4"]
    missing = next((c for c in candidates if c not in flags), "lathe_test_feature")

    def add(meta):
        return "\n".join(ln + f" {missing}" if ln.startswith("cpu_features=") else ln for ln in meta.split("\n"))

    bad = tmp_path / "foreign.lathe"
    bad.write_bytes(rewrite_meta(art.read_bytes(), add))
    env, marker, cache = no_compiler_env(tmp_path)
    r = run("run", bad, env=env)
    assert r.returncode == 3, r.stderr
    line = one_line(r.stderr)
    assert missing in line and "foreign.lathe" in line and "lacks" in line
    assert_no_compiler(marker, cache)


def test_changed_options_never_recompile(saved, tmp_path):
    _, models = saved
    art = models["zoo_like"][1]
    bad = tmp_path / "other.lathe"
    bad.write_bytes(rewrite_meta(art.read_bytes(), lambda m: m.replace("no_fusion=0", "no_fusion=1")))
    env, marker, cache = no_compiler_env(tmp_path)
    r = run("run", bad, env=env)
    assert r.returncode == 2, r.stderr
    assert "artifact built by another lathe version/options" in one_line(r.stderr)
    assert_no_compiler(marker, cache)


def test_truncated_and_hostile(saved, tmp_path):
    _, models = saved
    data = models["mlp"][1].read_bytes()
    secs = sections(data)
    huge = bytearray(data)
    struct.pack_into("<Q", huge, secs[1][1] + 8, (1 << 63) + 5)
    cases = {"truncated": data[:len(data) // 2], "header": data[:11], "magic": b"XATHEART" + data[8:],
             "huge": bytes(huge), "count": data[:12] + struct.pack("<I", 1 << 30) + data[16:],
             "trailing": data + b"\0"}
    env, marker, cache = no_compiler_env(tmp_path)
    for name, blob in cases.items():
        p = tmp_path / f"{name}.lathe"
        p.write_bytes(blob)
        r = run("run", p, env=env)
        assert r.returncode == 2, (name, r.stderr)
        line = one_line(r.stderr)
        if name != "magic":  # not an artifact at all: read as ONNX, which fails on its own terms
            assert f"{name}.lathe: byte " in line, (name, line)
    assert_no_compiler(marker, cache)


def test_save_refusals(saved, tmp_path):
    _, models = saved
    m = models["mlp"][0]
    r = run("compile", m, "--save", tmp_path / "x.lathe")  # batch unbound
    assert r.returncode != 0 and not (tmp_path / "x.lathe").exists()
    r = run("compile", m, "--dim", "batch=2", "--save", tmp_path / "x.lathe", "-o", tmp_path / "out")
    assert r.returncode == 1


def test_cuda_save_without_gpu_is_clear(saved, tmp_path):
    """A CUDA artifact holds a cubin built for the GPU it is saved on: with no GPU, one clear line."""
    _, models = saved
    r = run("compile", models["conv"][0], "--target", "cuda", "--save", tmp_path / "c.lathe")
    if r.returncode == 0:
        pytest.skip("a CUDA device is present (tests/gpu/run.sh artifact covers it)")
    assert r.returncode == 3 and "CUDA" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "c.lathe").exists()
