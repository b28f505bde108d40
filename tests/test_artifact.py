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


# ---- CUDA artifacts saved with no GPU (--arch: NVRTC here), loaded on a device ----
#
# This machine has no GPU; a fake driver (a small C library built here: one device whose compute
# capability FAKE_CUDA_MAJOR.FAKE_CUDA_MINOR the test chooses, modules accepted when they are ELF
# cubins, launches doing nothing) stands in for one, so the loader's whole path runs: the device is
# opened for the recorded architecture, the pipeline reruns with the recorded options, the emitted
# source must hash as recorded, and the cubin reaches cuModuleLoadData (or is refused before it).
# Its outputs are meaningless; tests/gpu/artifact_offline_cuda.py checks them on a real GPU.

FAKE_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef unsigned long long P;
#define CTX ((void *)0x1234)
static int env_int(const char *n, int d) { const char *v = getenv(n); return v && *v ? atoi(v) : d; }
static void note(const char *what, const char *arg) {
    const char *p = getenv("FAKE_CUDA_LOG"); FILE *f = p ? fopen(p, "a") : NULL;
    if (f) { fprintf(f, "%s %s\n", what, arg); fclose(f); }
}
int cuInit(unsigned f) { return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuGetErrorName(int r, const char **s) { *s = r == 209 ? "CUDA_ERROR_NO_BINARY_FOR_GPU" : "CUDA_ERROR_UNKNOWN"; return 0; }
int cuGetErrorString(int r, const char **s) { *s = "fake driver error"; return 0; }
int cuGetExportTable(const void **t, const void *id) { return 1; } /* NVRTC asks; none here */
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) {
    switch (a) { case 75: *v = env_int("FAKE_CUDA_MAJOR", 9); break; case 76: *v = env_int("FAKE_CUDA_MINOR", 0); break;
    case 16: *v = 132; break; case 1: *v = 1024; break; case 97: *v = 232448; break; case 38: *v = 52428800; break;
    case 13: *v = 1980000; break; case 36: *v = 2619000; break; case 37: *v = 5120; break; default: return 1; }
    return 0; }
int cuDeviceGetName(char *n, int len, int d) {
    snprintf(n, (size_t)len, "Fake GPU %d.%d", env_int("FAKE_CUDA_MAJOR", 9), env_int("FAKE_CUDA_MINOR", 0)); return 0; }
int cuDeviceTotalMem_v2(size_t *b, int d) { *b = (size_t)80 << 30; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = CTX; return 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
int cuCtxSetCurrent(void *c) { return c == CTX ? 0 : 201; }
int cuMemAlloc_v2(P *p, size_t n) { *p = (P)calloc(1, n ? n : 1); return *p ? 0 : 2; }
int cuMemFree_v2(P p) { free((void *)p); return 0; }
int cuMemGetInfo_v2(size_t *f, size_t *t) { *f = (size_t)70 << 30; *t = (size_t)80 << 30; return 0; }
int cuMemcpyHtoDAsync_v2(P d, const void *s, size_t n, void *st) { memcpy((void *)d, s, n); return 0; }
int cuMemcpyDtoHAsync_v2(void *d, P s, size_t n, void *st) { memcpy(d, (void *)s, n); return 0; }
int cuMemcpyDtoDAsync_v2(P d, P s, size_t n, void *st) { memmove((void *)d, (void *)s, n); return 0; }
int cuMemsetD8Async(P d, unsigned char v, size_t n, void *st) { memset((void *)d, v, n); return 0; }
int cuModuleLoadData(void **m, const void *img) {
    if (!img || memcmp(img, "\177ELF", 4) != 0) return 209;
    note("load", "cubin"); *m = malloc(1); return 0; }
int cuModuleUnload(void *m) { free(m); return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) { note("function", name); *f = (void *)m; return 0; }
int cuFuncGetAttribute(int *v, int a, void *f) { *v = a == 0 ? 1024 : 0; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,
                   void *st, void **params, void **extra) { return 0; }
int cuStreamCreate(void **s, unsigned f) { *s = (void *)0x5; return 0; }
int cuStreamDestroy_v2(void *s) { return 0; }
int cuStreamSynchronize(void *s) { return 0; }
int cuEventCreate(void **e, unsigned f) { *e = malloc(sizeof(float)); return 0; }
int cuEventDestroy_v2(void *e) { free(e); return 0; }
int cuEventRecord(void *e, void *s) { *(float *)e = 0; return 0; }
int cuEventSynchronize(void *e) { return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0; return 0; }
int cuStreamBeginCapture_v2(void *s, int mode) { return 0; }
int cuStreamEndCapture(void *s, void **g) { *g = malloc(1); return 0; }
int cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { *e = malloc(1); return 0; }
int cuGraphLaunch(void *e, void *s) { return 0; }
int cuGraphExecDestroy(void *e) { free(e); return 0; }
int cuGraphDestroy(void *g) { free(g); return 0; }
"""

NO_DEVICE = {"LD_LIBRARY_PATH": "/nonexistent", "CUDA_VISIBLE_DEVICES": ""}  # a real GPU, if any, is not seen


@pytest.fixture(scope="module")
def cuda_saved(saved, tmp_path_factory):
    """The conv model and the zoo's bert_ci saved for sm_90a here, with no GPU: {name: (model, artifact, bind)}."""
    d = tmp_path_factory.mktemp("cuda_artifacts")
    _, models = saved
    sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
    import exported
    todo = {"conv": (models["conv"][0], []),
            "bert_ci": (exported.build("bert_ci"), ["--dim", "batch=2", "--dim", "sequence=16"])}
    out = {}
    for name, (m, bind) in todo.items():
        art = d / f"{name}.lathe"
        r = run("compile", m, *bind, "--target", "cuda", "--save", art, "--arch", "sm_90a", env=NO_DEVICE)
        if r.returncode == 3 and "NVRTC" in r.stderr:
            pytest.skip(f"no NVRTC here: {r.stderr.strip()}")
        assert r.returncode == 0, r.stderr
        assert "with no device" in r.stdout and "saved:" in r.stdout and art.exists(), r.stdout
        out[name] = (m, art, bind)
    return d, out


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    """A folder holding the fake libcuda.so.1 (skips with no C compiler)."""
    d = tmp_path_factory.mktemp("fake_cuda")
    (d / "fake.c").write_text(FAKE_DRIVER)
    try:
        r = subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", str(d / "libcuda.so.1"), str(d / "fake.c")],
                           capture_output=True, text=True, timeout=120)
    except OSError as e:
        pytest.skip(f"no C compiler for the fake driver: {e}")
    if r.returncode != 0:
        pytest.skip(f"the fake driver does not build: {r.stderr[-300:]}")
    return d


def fake_env(fake, tmp, major=9, minor=0):
    env, marker, cache = no_compiler_env(tmp)
    log = tmp / "fake-driver.log"
    env.update({"LD_LIBRARY_PATH": str(fake), "FAKE_CUDA_MAJOR": str(major), "FAKE_CUDA_MINOR": str(minor),
                "FAKE_CUDA_LOG": str(log), "CUDA_VISIBLE_DEVICES": "0"})
    return env, marker, cache, log


def meta_of(data):
    tag, _, body, length = sections(data)[0]
    assert tag == "meta"
    return dict(ln.split("=", 1) for ln in data[body:body + length].decode().splitlines())


@pytest.mark.parametrize("name", ["conv", "bert_ci"])
def test_cuda_offline_artifact_is_what_nvrtc_builds(cuda_saved, tmp_path, name):
    """Sections and hashes check; the meta records the architecture and shapes; the module is an ELF cubin;
    the recorded source hash is that of `--target cuda -o DIR --arch sm_90a`'s model.cu (the same compile).
    (-o's model.cubin may differ: NVRTC names internal symbols after the program, model.cu there.)"""
    _, arts = cuda_saved
    m, art, bind = arts[name]
    data = art.read_bytes()
    secs = sections(data)
    assert [t for t, *_ in secs] == ["meta", "model", "module"]
    assert sum(48 + n for *_, n in secs) + 16 == len(data)
    for _, head, body, n in secs:
        assert hashlib.sha256(data[body:body + n]).digest() == data[head + 16:head + 48]
    meta = meta_of(data)
    assert meta["backend"] == "cuda" and meta["arch"] == "sm_90a" and "cpu_features" not in meta
    shapes = [ln[6:] for ln in data[secs[0][2]:secs[0][2] + secs[0][3]].decode().splitlines() if ln.startswith("input=")]
    assert shapes == ["0:2x3x16x16"] if name == "conv" else shapes and all(s.endswith(":2x16") for s in shapes), shapes
    module = {t: data[b:b + n] for t, _, b, n in secs}["module"]
    assert module[:4] == b"\x7fELF" and hashlib.sha256(module).hexdigest() == meta["module_sha256"]
    out = tmp_path / "out"
    r = run("compile", m, *bind, "--target", "cuda", "-o", out, "--arch", "sm_90a", env=NO_DEVICE)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256((out / "model.cu").read_bytes()).hexdigest() == meta["source_sha256"]


def test_cuda_artifact_without_gpu_is_clear(cuda_saved, tmp_path):
    """Running a CUDA artifact here: exit 3 with the backend's one line, before anything is compiled."""
    _, arts = cuda_saved
    env, marker, cache = no_compiler_env(tmp_path)
    env.update(NO_DEVICE)
    r = run("run", arts["conv"][1], env=env)
    assert r.returncode == 3, r.stderr
    line = one_line(r.stderr)
    assert "CUDA backend unavailable" in line, line
    assert_no_compiler(marker, cache)


def test_cuda_artifact_tampered_module_refused(cuda_saved, tmp_path):
    _, arts = cuda_saved
    data = bytearray(arts["conv"][1].read_bytes())
    _, _, body, n = sections(bytes(data))[2]
    data[body + n // 2] ^= 0x40
    bad = tmp_path / "tampered.lathe"
    bad.write_bytes(bytes(data))
    r = run("run", bad, env=NO_DEVICE)
    assert r.returncode == 2 and "section 'module'" in one_line(r.stderr), r.stderr


def test_cuda_save_arch_refusals(saved, tmp_path):
    """No GPU: --arch is needed; a bad, virtual or unknown architecture is refused in one line; no file."""
    _, models = saved
    m, art = models["conv"][0], tmp_path / "c.lathe"
    r = run("compile", m, "--target", "cuda", "--save", art, env=NO_DEVICE)
    assert r.returncode == 1, r.stderr
    line = one_line(r.stderr)
    assert "--arch" in line and "CUDA backend unavailable" in line, line
    for arch, want in (("bogus", "not a GPU architecture"), ("sm_90x", "not a GPU architecture"),
                       ("compute_90", "holds a cubin"), ("", "needs the architecture")):
        r = run("compile", m, "--target", "cuda", "--save", art, "--arch", arch, env=NO_DEVICE)
        assert r.returncode == 1, (arch, r.stderr)
        assert want in one_line(r.stderr), (arch, r.stderr)
    r = run("compile", m, "--target", "cuda", "--save", art, "--arch=sm_99", env=NO_DEVICE)
    if "NVRTC" in r.stderr and r.returncode == 3:
        pytest.skip("no NVRTC here")
    assert r.returncode == 1 and "cannot build for sm_99" in one_line(r.stderr), r.stderr
    r = run("compile", m, "--save", art, "--arch", "sm_90a")  # a CPU artifact has no GPU architecture
    assert r.returncode == 1 and "--arch is for --target cuda" in r.stderr, r.stderr
    assert not art.exists()


@pytest.mark.parametrize("name", ["conv", "bert_ci"])
def test_cuda_offline_artifact_loads_on_device(cuda_saved, fake_driver, tmp_path, name):
    """On an sm_90 device (fake): the source is emitted again as recorded and the cubin loaded, with no
    NVRTC and no compiler; the kernels are looked up by name."""
    _, arts = cuda_saved
    env, marker, cache, log = fake_env(fake_driver, tmp_path)
    r = run("run", arts[name][1], env=env)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    assert calls.count("load cubin") == 1 and any(c.startswith("function lt_k") for c in calls), calls
    assert_no_compiler(marker, cache)


def test_cuda_offline_artifact_python(cuda_saved, fake_driver, tmp_path):
    if not os.path.exists(LIB):
        pytest.skip(f"no {LIB}")
    _, arts = cuda_saved
    env, marker, cache, log = fake_env(fake_driver, tmp_path)
    env.update({"LATHE_LIBRARY": LIB, "PYTHONPATH": os.path.join(ROOT, "python")})
    full = dict(os.environ)
    full.update(env)
    code = "import sys, numpy as np, lathe\nm = lathe.compile(sys.argv[1])\nm(x=np.ones((2, 3, 16, 16), np.float32))\n"
    r = subprocess.run([sys.executable, "-c", code, arts["conv"][1]], capture_output=True, text=True, timeout=600, env=full)
    assert r.returncode == 0, r.stderr
    assert "load cubin" in log.read_text()
    assert_no_compiler(marker, cache)


@pytest.mark.parametrize("cc,ok", [((9, 0), True), ((8, 0), False), ((10, 0), False), ((9, 1), False)])
def test_cuda_artifact_arch_mismatch_refused(cuda_saved, fake_driver, tmp_path, cc, ok):
    """sm_90a runs on compute capability 9.0 only; elsewhere one line names both architectures, and the
    driver never sees the cubin."""
    _, arts = cuda_saved
    env, marker, cache, log = fake_env(fake_driver, tmp_path, *cc)
    r = run("run", arts["conv"][1], env=env)
    if ok:
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 3, r.stderr
    line = one_line(r.stderr)
    own = f"sm_{cc[0]}{cc[1]}"
    assert "built for sm_90a" in line and own in line and "cannot run it" in line, line
    assert not log.exists() or "load" not in log.read_text()
    assert_no_compiler(marker, cache)


def test_cuda_sm80_artifact_runs_on_later_minor(saved, fake_driver, tmp_path):
    """A plain sm_XY cubin runs on X.Y and later minors of X (8.6), not on another major (9.0)."""
    _, models = saved
    art = tmp_path / "c80.lathe"
    r = run("compile", models["conv"][0], "--target", "cuda", "--save", art, "--arch", "sm_80", env=NO_DEVICE)
    if r.returncode == 3 and "NVRTC" in r.stderr:
        pytest.skip("no NVRTC here")
    assert r.returncode == 0, r.stderr
    env, _, _, _ = fake_env(fake_driver, tmp_path, 8, 6)
    assert run("run", art, env=env).returncode == 0
    env, _, _, _ = fake_env(fake_driver, tmp_path, 9, 0)
    r = run("run", art, env=env)
    assert r.returncode == 3 and "built for sm_80" in one_line(r.stderr), r.stderr


def test_cuda_changed_options_never_rebuild(cuda_saved, fake_driver, tmp_path):
    _, arts = cuda_saved
    bad = tmp_path / "other.lathe"
    bad.write_bytes(rewrite_meta(arts["conv"][1].read_bytes(), lambda m: m.replace("no_fusion=0", "no_fusion=1")))
    env, marker, cache, log = fake_env(fake_driver, tmp_path)
    r = run("run", bad, env=env)
    assert r.returncode == 2, r.stderr
    assert "artifact built by another lathe version/options" in one_line(r.stderr)
    assert_no_compiler(marker, cache)


@pytest.mark.parametrize("name", ["conv", "bert_ci"])
def test_cuda_saved_on_device_is_identical(cuda_saved, fake_driver, tmp_path, name):
    """Saved on a device (fake sm_90a: no --arch, the device's architecture, the backend's own NVRTC build
    and module load), the artifact is byte for byte the one saved here with no device."""
    _, arts = cuda_saved
    m, art, bind = arts[name]
    env, _, _, log = fake_env(fake_driver, tmp_path)
    for k in ("PATH", "CC", "LATHE_NVRTC"):  # NVRTC is needed here
        env.pop(k)
    on_device = tmp_path / "device.lathe"
    r = run("compile", m, *bind, "--target", "cuda", "--save", on_device, env=env)
    assert r.returncode == 0, r.stderr
    assert "with no device" not in r.stdout and "load cubin" in log.read_text()
    assert on_device.read_bytes() == art.read_bytes()
