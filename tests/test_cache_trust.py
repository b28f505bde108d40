"""test_cache_trust.py — the compiled-module cache trusts no one, and a bad compiler cannot hang lathe.

The cache folder (and the parents lathe creates) are made 0700; a folder that is group- or
other-writable, or owned by another user, is refused with exit 2 and one line naming it, its owner and
mode, and what to do. What lathe loads from the cache is checked through the descriptor it loads from:
a planted .so of the right name with no manifest (its constructor would write a file: the file must
not appear), a module whose bytes were changed, a symlink to a planted .so whose manifest matches it,
a module owned by another user or group-writable: each is rebuilt (and replaced by a regular file that
matches its manifest), never loaded. tune.tsv is refused when group-writable, foreign-owned or a
symbolic link, and so is the measured ceilings file (the CUDA cubin cache's checks are
tests/unit/test_cuda_nvrtc.c's). A compiler that hangs is killed with its whole process group after --cc-timeout
seconds (exit 2, the message names the compiler and the limit); the temporary files a compile killed
with -9 leaves are swept by the next compile once stale (fresh or foreign ones stay); a failing or
hanging --no-cache build removes its temporary folder. The CLI still gives the compiler (and the
kernels) OMP_WAIT_POLICY=PASSIVE, the library no longer sets it.

The tests run as root here: ownership is tested with os.chown to another uid. The binary comes from
$LATHE_BIN (default build/lathe).
"""
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
CC = os.environ.get("CC") or "cc"
OTHER_UID = 54321


def lathe(*args, timeout=300, env=None, umask=None):
    full = dict(os.environ)
    full.pop("LATHE_CACHE_DIR", None)
    full.update(env or {})
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=full,
                          preexec_fn=pre)


def need_root():
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("trust-model")
    n = [helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Neg", ["e"], ["y"])]
    g = helper.make_graph(n, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = d / "exp.onnx"
    onnx.save(m, str(path))
    return str(path)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A shared object whose constructor writes the file named by $LATHE_TEST_MARK (built with cc)."""
    d = tmp_path_factory.mktemp("planted")
    src = d / "planted.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   '__attribute__((constructor)) static void planted(void) {\n'
                   '    const char *p = getenv("LATHE_TEST_MARK");\n'
                   '    FILE *f = fopen(p ? p : "/dev/null", "w");\n'
                   '    if (f) { fputs("planted code ran\\n", f); fclose(f); }\n}\n'
                   'int lathe_n_kernels = 0;\n')
    so = d / "planted.so"
    subprocess.run([*CC.split(), "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return so


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def module_of(cache):
    """The one module of a cache folder: its .so and manifest paths."""
    sos = [p for p in cache.glob("*.so") if not p.name.endswith(".prelude.so")]
    assert len(sos) == 1, sorted(os.listdir(cache))
    so = sos[0]
    return so, so.with_suffix(".manifest")


def write_manifest(path, digest):
    path.write_text(f"lathe-cpu-manifest-v1\nsha256 {digest}\n")
    os.chmod(path, 0o600)


def compile_ok(model, cache, *extra, env=None):
    r = lathe("compile", model, "--cache-dir", cache, *extra, env=env)
    assert r.returncode == 0, r.stderr
    return r


def assert_rebuilt(so, manifest):
    st = os.lstat(so)
    assert stat.S_ISREG(st.st_mode) and not st.st_mode & 0o022
    assert f"sha256 {sha256(so)}" in manifest.read_text()


# ---- the cache folder ----

def test_cache_folders_are_created_0700(model, tmp_path):
    cache = tmp_path / "a" / "b" / "cache"
    r = lathe("compile", model, env={"LATHE_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    for d in (tmp_path / "a", tmp_path / "a" / "b", cache):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    so, manifest = module_of(cache)
    assert_rebuilt(so, manifest)


def test_permissive_umask(model, tmp_path):
    """With umask 000 (or 002) the compiler's output would be group/other-writable: lathe takes the
    write bits off its own fresh module instead of refusing it, and the folder is still 0700."""
    cache = tmp_path / "cache"
    for i in range(2):
        r = lathe("compile", model, "--cache-dir", cache, umask=0)
        assert r.returncode == 0, r.stderr
        assert ("cache hit" if i else "cache miss") in r.stdout, r.stdout
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    for f in cache.iterdir():
        assert not os.stat(f).st_mode & 0o022, f


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_writable_cache_folder_is_refused(model, tmp_path, mode):
    cache = tmp_path / "shared"
    cache.mkdir()
    os.chmod(cache, mode)
    r = lathe("compile", model, "--cache-dir", cache)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = r.stderr.strip()
    assert "\n" not in line and str(cache) in line and f"{mode:04o}" in line and "chmod go-w" in line, line
    assert list(cache.iterdir()) == []
    # the same from the environment
    r = lathe("compile", model, env={"LATHE_CACHE_DIR": str(cache)})
    assert r.returncode == 2 and str(cache) in r.stderr


def test_foreign_cache_folder_is_refused(model, tmp_path):
    need_root()
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, OTHER_UID, OTHER_UID)
    r = lathe("compile", model, "--cache-dir", cache)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = r.stderr.strip()
    assert "\n" not in line and str(cache) in line and f"uid {OTHER_UID}" in line and "0700" in line, line
    assert list(cache.iterdir()) == []


# ---- what is loaded from it ----

def test_planted_module_is_never_loaded(model, planted, tmp_path):
    """A .so of the right name in a fresh folder, with no manifest: rebuilt, its constructor never runs."""
    first = tmp_path / "first"
    compile_ok(model, first)
    so, _ = module_of(first)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    shutil.copy(planted, cache / so.name)
    mark = tmp_path / "mark"
    r = compile_ok(model, cache, env={"LATHE_TEST_MARK": str(mark)})
    assert "cache miss" in r.stdout
    assert not mark.exists(), "the planted module was loaded"
    assert_rebuilt(cache / so.name, (cache / so.name).with_suffix(".manifest"))
    # the rebuilt module is a hit from now on
    assert "cache hit" in compile_ok(model, cache).stdout


def test_tampered_module_is_rebuilt(model, tmp_path):
    cache = tmp_path / "cache"
    compile_ok(model, cache)
    so, manifest = module_of(cache)
    data = bytearray(so.read_bytes())
    data[len(data) // 2] ^= 0xFF
    so.write_bytes(bytes(data))
    r = compile_ok(model, cache)
    assert "cache miss" in r.stdout, r.stdout
    assert_rebuilt(so, manifest)
    r = lathe("run", model, "--cache-dir", cache, "--fill", "ones")
    assert r.returncode == 0 and "-2.71828" in r.stdout, r.stdout + r.stderr


def test_planted_module_with_forged_manifest_needs_the_owner_check(model, planted, tmp_path):
    """Whoever can write the folder can forge the manifest: a planted file that matches it is still
    refused when it is a symlink, another user's, or group-writable."""
    cache = tmp_path / "cache"
    compile_ok(model, cache)
    so, manifest = module_of(cache)
    mark = tmp_path / "mark"
    outside = tmp_path / "outside.so"
    shutil.copy(planted, outside)
    cases = ["symlink", "group-writable"] + (["foreign"] if os.geteuid() == 0 else [])
    for case in cases:
        so.unlink()
        if case == "symlink":
            os.symlink(outside, so)
        else:
            shutil.copy(planted, so)
            os.chmod(so, 0o775 if case == "group-writable" else 0o755)
            if case == "foreign":
                os.chown(so, OTHER_UID, OTHER_UID)
        write_manifest(manifest, sha256(planted))
        r = compile_ok(model, cache, env={"LATHE_TEST_MARK": str(mark)})
        assert "cache miss" in r.stdout, (case, r.stdout)
        assert not mark.exists(), f"{case}: the planted module was loaded"
        assert_rebuilt(so, manifest)
        assert os.stat(so).st_uid == os.geteuid()
    assert sha256(outside) == sha256(planted)  # the link's target was not written through


def test_tune_db_is_checked(model, tmp_path):
    cache = tmp_path / "cache"
    compile_ok(model, cache)
    tsv = cache / "tune.tsv"
    tsv.write_text("# lathe tuning database v1\n")
    os.chmod(tsv, 0o600)
    compile_ok(model, cache)  # ours and private: read
    os.chmod(tsv, 0o664)
    r = lathe("compile", model, "--cache-dir", cache)
    assert r.returncode == 2 and str(tsv) in r.stderr and "0664" in r.stderr and "chmod go-w" in r.stderr, r.stderr
    os.chmod(tsv, 0o600)
    if os.geteuid() == 0:
        os.chown(tsv, OTHER_UID, OTHER_UID)
        r = lathe("compile", model, "--cache-dir", cache)
        assert r.returncode == 2 and f"uid {OTHER_UID}" in r.stderr, r.stderr
    tsv.unlink()
    other = tmp_path / "elsewhere.tsv"
    other.write_text("# lathe tuning database v1\n")
    os.symlink(other, tsv)
    r = lathe("compile", model, "--cache-dir", cache)
    assert r.returncode == 2 and "symbolic link" in r.stderr, r.stderr
    r = lathe("compile", model, "--cache-dir", cache, "--tune-db", other)
    assert r.returncode == 0, r.stderr


def test_ceilings_file_is_checked(tmp_path):
    """The measured ceilings steer what profile reports: written 0600 into a checked folder, read only
    when ours and private, never through a link."""
    cache = tmp_path / "cache"
    r = lathe("ceilings", "--cache-dir", cache, "--threads", 1)
    assert r.returncode == 0, r.stderr
    path = cache / "ceilings-1t.txt"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    os.chmod(path, 0o664)
    r = lathe("ceilings", "--cache-dir", cache, "--threads", 1)
    assert r.returncode == 2 and str(path) in r.stderr and "0664" in r.stderr and "chmod go-w" in r.stderr, r.stderr
    os.chmod(path, 0o600)
    if os.geteuid() == 0:
        os.chown(path, OTHER_UID, OTHER_UID)
        r = lathe("ceilings", "--cache-dir", cache, "--threads", 1)
        assert r.returncode == 2 and f"uid {OTHER_UID}" in r.stderr, r.stderr
        os.chown(path, 0, 0)
    os.rename(path, tmp_path / "real.txt")
    os.symlink(tmp_path / "real.txt", path)
    r = lathe("ceilings", "--cache-dir", cache, "--threads", 1)
    assert r.returncode == 2 and "symbolic link" in r.stderr, r.stderr
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    r = lathe("ceilings", "--cache-dir", shared, "--threads", 1)
    assert r.returncode == 2 and "chmod go-w" in r.stderr and list(shared.iterdir()) == [], r.stderr


# ---- the compiler ----

def fake_cc(tmp_path, body):
    """A compiler script: answers --version like a compiler, runs body (sh) for a compile; $OUT is the -o path."""
    script = tmp_path / "fake-cc"
    script.write_text('#!/bin/sh\n'
                      'for a in "$@"; do case "$a" in --version) echo "fake-cc 1.0"; exit 0;; esac; done\n'
                      'OUT=; prev=; for a in "$@"; do [ "$prev" = "-o" ] && OUT=$a; prev=$a; done\n'
                      f'echo "$OUT" > {tmp_path}/out-path\n' + body + '\n')
    os.chmod(script, 0o755)
    return script


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_hanging_compiler_is_killed(model, tmp_path):
    cc = fake_cc(tmp_path, f"sleep 60 & echo $! > {tmp_path}/child-pid\nwait")
    t0 = time.monotonic()
    r = lathe("compile", model, "--cache-dir", tmp_path / "cache", "--cc", cc, "--cc-timeout", "2", timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert str(cc) in r.stderr and "2 s" in r.stderr and "--cc-timeout" in r.stderr, r.stderr
    assert 1.5 < took < 20, took
    child = int((tmp_path / "child-pid").read_text())
    for _ in range(50):  # the compiler's own child died with it (the whole process group)
        if not pid_alive(child):
            break
        time.sleep(0.1)
    assert not pid_alive(child), "the compiler's child is still running"
    # a hanging --no-cache build removes its temporary folder too
    r = lathe("compile", model, "--no-cache", "--cc", cc, "--cc-timeout", "1", timeout=60)
    assert r.returncode == 2, r.stderr
    out = (tmp_path / "out-path").read_text().strip()
    assert out and not os.path.exists(os.path.dirname(out)), out


def test_python_cc_timeout(model, tmp_path):
    """Python's compile(cc_timeout=) is the CLI's --cc-timeout."""
    lathe_py = pytest.importorskip("lathe")
    cc = fake_cc(tmp_path, "sleep 60")
    t0 = time.monotonic()
    with pytest.raises(lathe_py.LatheError, match="cc_timeout") as e:
        lathe_py.compile(model, cache_dir=str(tmp_path / "cache"), cc=str(cc), cc_timeout=1.5)
    assert e.value.status == "io" and str(cc) in str(e.value) and time.monotonic() - t0 < 20
    for bad in (0, -1, float("nan"), "2", True):
        with pytest.raises(ValueError, match="cc_timeout"):
            lathe_py.compile(model, cache_dir=str(tmp_path / "cache"), cc=str(cc), cc_timeout=bad)


def test_cc_timeout_usage(model):
    for bad in ["abc", "-1", "1e9"]:
        r = lathe("compile", model, "--no-cache", "--cc-timeout", bad)
        assert r.returncode == 1 and "--cc-timeout" in r.stderr, (bad, r.stderr)
    assert "--cc-timeout" in lathe("compile", "--help").stdout


def test_killed_compile_leftovers_are_swept(model, tmp_path):
    """lathe killed with -9 mid-compile leaves the compiler's output file; the next miss removes it
    once stale, and leaves fresh temporaries (a compile running now) and other users' files alone."""
    cache = tmp_path / "cache"
    cc = fake_cc(tmp_path, f'echo partial > "$OUT"; echo $$ > {tmp_path}/cc-pid; exec sleep 60')
    p = subprocess.Popen([LATHE, "compile", model, "--cache-dir", str(cache), "--cc", str(cc)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if (tmp_path / "cc-pid").exists():
                break
            time.sleep(0.05)
        p.kill()
        p.wait()
    finally:
        if (tmp_path / "cc-pid").exists():
            try:
                os.kill(int((tmp_path / "cc-pid").read_text()), 9)
            except (ProcessLookupError, ValueError):
                pass
    left = [f for f in os.listdir(cache) if ".tmp." in f]
    assert left, os.listdir(cache)
    old = time.time() - 2 * 3600
    for f in left:
        os.utime(cache / f, (old, old))
    fresh = cache / "other.so.tmp.1.1"
    fresh.write_text("a compile running now")
    foreign = cache / "foreign.so.tmp.1.2"
    foreign.write_text("not ours")
    os.utime(foreign, (old, old))
    if os.geteuid() == 0:
        os.chown(foreign, OTHER_UID, OTHER_UID)
    compile_ok(model, cache)
    names = os.listdir(cache)
    assert not [f for f in left if f in names], names
    assert fresh.name in names
    assert foreign.name in names or os.geteuid() != 0


def test_failing_no_cache_build_leaves_no_temporary_folder(model, tmp_path):
    cc = fake_cc(tmp_path, 'echo "fake-cc: error: no" >&2; exit 1')
    r = lathe("compile", model, "--no-cache", "--cc", cc)
    assert r.returncode == 2 and "fake-cc: error: no" in r.stderr, r.stderr
    out = (tmp_path / "out-path").read_text().strip()
    assert out and not os.path.exists(os.path.dirname(out)), out
    assert "no-cache build" in r.stderr


def test_wait_policy_is_the_tools_default(model, tmp_path):
    """The CLI sets OMP_WAIT_POLICY=PASSIVE (the compiler and the kernels inherit it) unless set;
    the library leaves the environment alone."""
    cc = tmp_path / "env-cc"
    cc.write_text(f'#!/bin/sh\necho "${{OMP_WAIT_POLICY:-unset}}" > {tmp_path}/policy\nexec {CC} "$@"\n')
    os.chmod(cc, 0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    r = subprocess.run([LATHE, "compile", model, "--no-cache", "--cc", str(cc)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "policy").read_text().strip() == "PASSIVE"
    r = subprocess.run([LATHE, "compile", model, "--no-cache", "--cc", str(cc)], capture_output=True, text=True,
                       env={**env, "OMP_WAIT_POLICY": "ACTIVE"}, timeout=300)
    assert (tmp_path / "policy").read_text().strip() == "ACTIVE"
    lib = os.path.join(os.path.dirname(LATHE), "liblathe.so")
    if not os.path.exists(lib):
        pytest.skip("no liblathe.so next to the binary")
    code = ("import ctypes, sys\n"
            "lib = ctypes.CDLL(sys.argv[1])\n"
            "libc = ctypes.CDLL(None); libc.getenv.restype = ctypes.c_char_p\n"
            "lib.lathe_compile.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,"
            " ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]\n"
            "out = ctypes.c_void_p(); err = ctypes.create_string_buffer(4096)\n"
            "rc = lib.lathe_compile(sys.argv[2].encode(), None, None, ctypes.byref(out), err, 4096)\n"
            "print(rc, err.value.decode(), libc.getenv(b'OMP_WAIT_POLICY'))\n")
    r = subprocess.run([sys.executable, "-c", code, lib, model], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("0 ") and r.stdout.strip().endswith("None"), r.stdout + r.stderr
