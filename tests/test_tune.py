"""test_tune.py — `lathe tune` and the tuning database the compiles read.

A small model with loop kernels (softmax, LayerNorm, an elementwise chain, a row sum) is tuned into a
fresh database (few trials, short timings): the run prints one row per searched kernel, the database
holds one entry per kernel for this CPU and thread count, and a second tune finds them all there
(nothing measured again). `lathe run --tune-db` then compiles with the tuned schedules (the compile
report counts them) and gives the same outputs as the default schedules (--no-tune-db) and the
interpreter; an entry whose schedule no longer applies falls back to the default (same outputs, not
counted); a malformed database is an error naming the file and line; a missing --tune-db file is an
error; --backend cuda is a usage error for tune. The summary counts kernels consistently: a model with
two identical chains searches one and shares its entry with the other; a second tune takes both from
the database. Speed-ups are ratios of medians timed in turns (--confirm), never below 1x (a winner
that is not faster when timed again is dropped for the default). A Concat in front of a
channel-blocked convolution compiles without falling back to the interpreter, tunes without an
internal error, and computes what the interpreter does. The default database is tune.tsv in the cache
directory, read by `lathe run` without any flag. Python's tune_db= does the same. For a model with
convolutions, tune times the NCHW and channel-blocked layouts and records both; compiles turn the
blocked layout on exactly when the recorded times say it was faster (times edited in the database
to force each way), never against --disable-pass, with the same outputs.

The binary comes from $LATHE_BIN (default build/lathe).
"""
import os
import re
import subprocess

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)


def lathe(*args, timeout=600):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("tune")
    rng = np.random.default_rng(5)
    f = lambda name, *shape: numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)  # noqa: E731
    nodes = [
        helper.make_node("Mul", ["x", "s"], ["a"]),
        helper.make_node("Tanh", ["a"], ["t"]),
        helper.make_node("Add", ["t", "x"], ["u"]),
        helper.make_node("Softmax", ["u"], ["p"], axis=-1),
        helper.make_node("LayerNormalization", ["p", "g", "b"], ["y"], axis=-1),
        helper.make_node("ReduceSum", ["u", "ax"], ["r"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "tune", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [96, 320])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [96, 320]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [96])],
        initializer=[f("s", 320), f("g", 320), f("b", 320), numpy_helper.from_array(np.array([1], np.int64), "ax")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = d / "tune.onnx"
    onnx.save(m, str(path))
    x = rng.uniform(-2, 2, (96, 320)).astype(np.float32)
    np.save(d / "x.npy", x)
    return d, str(path), str(d / "x.npy")


def tune(path, db, cache, *extra):
    return lathe("tune", path, "--db", db, "--cache-dir", cache, "--threads", 2, "--trials", 5, "--min-time", 1,
                 *extra)


def run_outputs(path, x, out, cache, *extra):
    r = lathe("run", path, "--input", f"x={x}", "--output", out, "--cache-dir", cache, "--threads", 2, *extra)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        return {k: z[k] for k in z.files}, r


def db_entries(db):
    with open(db) as fh:
        return [line.rstrip("\n").split("\t") for line in fh if line.strip() and not line.startswith("#")]


def counts(out, variant="NCHW"):
    """The summary line of a tune: kernels, tuned, searched now, identical to one searched now, from the
    database, not tunable."""
    m = re.search(rf"^{variant}: (\d+) kernel\(s\), (\d+) with tuned schedules: (\d+) searched now, (\d+) identical "
                  r"to one searched now, (\d+) from the database; (\d+) not tunable", out, re.M)
    assert m, out
    return dict(zip(("kernels", "tuned", "searched", "same", "known", "untunable"), map(int, m.groups())))


def speedups(out):
    """(default ms, tuned ms, speedup) of every kernel row."""
    return [tuple(map(float, m.groups())) for m in
            re.finditer(r"^lt_k\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x", out, re.M)]


def make_faster(db, variant):
    """Edit the recorded layout times at 2 threads so that `variant` ("default" or "layout_nchwc") won."""
    lines = []
    for line in open(db).read().splitlines():
        p = line.split("\t")
        if len(p) == 5 and p[2].startswith("threads=2 passes="):
            p[3] = "0.001" if p[2].endswith("=" + variant) else "0.002"
        lines.append("\t".join(p))
    with open(db, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def test_tune_then_run(model):
    d, path, x = model
    cache, db = str(d / "cache"), str(d / "tune.tsv")
    r = tune(path, db, cache)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if re.match(r"lt_k\d+\s", line)]
    assert rows, r.stdout
    c = counts(r.stdout)
    assert c["searched"] == len(rows) and c["same"] == 0 and c["known"] == 0, r.stdout
    assert c["tuned"] == len(rows) and c["kernels"] == c["tuned"] + c["untunable"], r.stdout
    m = re.search(r"measurements: (\d+) kernel builds timed, (\d+) rejected as wrong", r.stdout)
    assert m and int(m.group(1)) >= len(rows) and int(m.group(2)) == 0, r.stdout
    entries = db_entries(db)
    assert len(entries) == len(rows)
    for e in entries:
        assert len(e) == 5 and re.fullmatch(r"[0-9a-f]{64}", e[0]) and e[1].startswith("cpu-") and e[2] == "threads=2"
        assert float(e[3]) > 0
    # again: every kernel comes from the database, nothing is measured
    r2 = tune(path, db, cache)
    assert r2.returncode == 0, r2.stderr
    c2 = counts(r2.stdout)
    assert c2["searched"] == 0 and c2["same"] == 0 and c2["known"] == len(rows), r2.stdout
    assert "measurements: 0 kernel builds timed" in r2.stdout, r2.stdout
    assert len(db_entries(db)) == len(rows)

    # the compile takes them (the report counts them) and computes the same as the default schedules
    tuned, rt = run_outputs(path, x, str(d / "t.npz"), cache, "--tune-db", db, "--time-passes")
    plain, _ = run_outputs(path, x, str(d / "p.npz"), cache, "--no-tune-db")
    interp, _ = run_outputs(path, x, str(d / "i.npz"), cache, "--backend", "interp")
    rep = lathe("compile", path, "--cache-dir", cache, "--threads", 2, "--tune-db", db, "-o", str(d / "out_c"))
    assert rep.returncode == 0, rep.stderr
    assert re.search(rf"tuned schedules: {len(rows)} kernel\(s\)", rep.stdout + rep.stderr), rep.stdout
    for k in ("y", "r"):
        np.testing.assert_allclose(tuned[k], plain[k], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(tuned[k], interp[k], rtol=1e-4, atol=1e-5)
    # another thread count has no entries
    rep1 = lathe("compile", path, "--cache-dir", cache, "--threads", 1, "--tune-db", db, "-o", str(d / "out_c1"))
    assert rep1.returncode == 0 and "tuned schedules" not in rep1.stdout + rep1.stderr

    # the default database: tune.tsv in the cache directory, read without a flag
    cache2 = str(d / "cache2")
    os.makedirs(cache2)
    with open(db) as src, open(os.path.join(cache2, "tune.tsv"), "w") as dst:
        dst.write(src.read())
    rep2 = lathe("compile", path, "--cache-dir", cache2, "--threads", 2, "-o", str(d / "out_c2"))
    assert rep2.returncode == 0 and re.search(r"tuned schedules: \d+ kernel", rep2.stdout + rep2.stderr), rep2.stdout
    rep3 = lathe("compile", path, "--cache-dir", cache2, "--threads", 2, "--no-tune-db", "-o", str(d / "out_c3"))
    assert rep3.returncode == 0 and "tuned schedules" not in rep3.stdout + rep3.stderr


def test_stale_entry_falls_back(model):
    d, path, x = model
    cache, db = str(d / "cache_s"), str(d / "stale.tsv")
    r = tune(path, db, cache)
    assert r.returncode == 0, r.stderr
    lines = open(db).read().splitlines()
    bad = [("\t".join(line.split("\t")[:4] + ["split no_such_loop 4"]) if not line.startswith("#") else line)
           for line in lines]
    with open(db, "w") as fh:
        fh.write("\n".join(bad) + "\n")
    got, _ = run_outputs(path, x, str(d / "s.npz"), cache, "--tune-db", db)
    want, _ = run_outputs(path, x, str(d / "w.npz"), cache, "--no-tune-db")
    for k in ("y", "r"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=0)
    rep = lathe("compile", path, "--cache-dir", cache, "--threads", 2, "--tune-db", db, "-o", str(d / "out_s"))
    out = rep.stdout + rep.stderr
    assert rep.returncode == 0 and "tuned schedules:" not in out, out
    assert "did not apply" in out and "no_such_loop" in out and "tuned schedules rejected:" in out, out
    strict = lathe("compile", path, "--cache-dir", cache, "--threads", 2, "--tune-db", db, "--strict")
    assert strict.returncode == 2 and "tuned schedule of" in strict.stderr and "no_such_loop" in strict.stderr, \
        strict.stderr


def test_bad_databases(model, tmp_path):
    d, path, x = model
    cache = str(tmp_path / "c")
    bad = tmp_path / "bad.tsv"
    bad.write_text("# lathe tuning database v1\nnot a line\n")
    r = lathe("run", path, "--cache-dir", cache, "--tune-db", bad)
    assert r.returncode == 2 and "bad.tsv" in r.stderr and "2" in r.stderr, r.stderr
    r = lathe("tune", path, "--cache-dir", cache, "--db", bad)
    assert r.returncode == 2 and "bad.tsv" in r.stderr, r.stderr
    missing = tmp_path / "missing.tsv"
    r = lathe("run", path, "--cache-dir", cache, "--tune-db", missing)
    assert r.returncode == 2 and "missing.tsv" in r.stderr, r.stderr
    assert not missing.exists()
    r = lathe("tune", path, "--backend", "cuda", "--db", tmp_path / "x.tsv")
    assert r.returncode == 1 and "cpu" in r.stderr, r.stderr
    r = lathe("tune")
    assert r.returncode == 1 and "MODEL" in r.stderr


def test_python_tune_db(model, tmp_path):
    """lathe.compile(tune_db=...): the database's schedules (the report counts them), the same outputs;
    None reads tune.tsv in the cache folder, False ignores it, a missing file raises."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "python"))
    lathe_py = pytest.importorskip("lathe")
    d, path, x = model
    cache = tmp_path / "c"
    cache.mkdir()
    db = str(cache / "tune.tsv")
    r = tune(path, db, str(cache))
    assert r.returncode == 0, r.stderr
    n = len(db_entries(db))
    feeds = {"x": np.load(x)}
    tuned = lathe_py.compile(path, threads=2, cache_dir=str(cache), tune_db=db)
    dflt = lathe_py.compile(path, threads=2, cache_dir=str(cache))  # tune.tsv in the cache folder
    plain = lathe_py.compile(path, threads=2, cache_dir=str(cache), tune_db=False)
    assert f"tuned schedules: {n} kernel(s)" in tuned.report
    assert f"tuned schedules: {n} kernel(s)" in dflt.report
    assert "tuned schedules" not in plain.report
    a, b = tuned(feeds), plain(feeds)
    for k in ("y", "r"):
        np.testing.assert_allclose(a[k], b[k], rtol=1e-4, atol=1e-5)
    for m in (tuned, dflt, plain):
        m.close()
    with pytest.raises(lathe_py.LatheError, match="nope.tsv"):
        lathe_py.compile(path, threads=2, cache_dir=str(cache), tune_db=str(tmp_path / "nope.tsv"))


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("tune_conv")
    rng = np.random.default_rng(8)
    f = lambda name, *shape: numpy_helper.from_array(rng.uniform(-0.3, 0.3, shape).astype(np.float32), name)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 20, 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 20, 20])],
                              initializer=[f("w1", 32, 32, 3, 3), f("b1", 32), f("w2", 32, 32, 3, 3), f("b2", 32)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = d / "conv.onnx"
    onnx.save(m, str(path))
    np.save(d / "x.npy", rng.uniform(-1, 1, (1, 32, 20, 20)).astype(np.float32))
    return d, str(path), str(d / "x.npy")


def test_layout_decision(conv_model):
    """lathe tune times the model in NCHW and channel-blocked and records both; a compile turns the
    blocked layout on when the database says it was faster (the report says so), never when it is
    disabled by name, and the outputs are the same either way."""
    d, path, x = conv_model
    cache, db = str(d / "cache"), str(d / "db.tsv")
    r = tune(path, db, cache, "--runs", 3)
    assert r.returncode == 0, r.stderr
    if "does not apply" in r.stdout:
        pytest.skip("no channel-blocked kernels on this CPU (needs AVX2 or AVX-512)")
    m = re.search(r"layout: NCHW ([\d.]+) ms, channel-blocked ([\d.]+) ms", r.stdout)
    assert m, r.stdout
    rows = {e[2]: e for e in db_entries(db) if e[2].startswith("threads=2 passes=")}
    assert set(rows) == {"threads=2 passes=default", "threads=2 passes=layout_nchwc"}, rows
    assert all(e[4] == "-" and float(e[3]) > 0 for e in rows.values())
    # make the blocked layout the faster one, then the slower one
    for fast, want in (("layout_nchwc", True), ("default", False)):
        make_faster(db, fast)
        rep = lathe("compile", path, "--cache-dir", cache, "--threads", 2, "--tune-db", db, "-o", str(d / f"o_{fast}"))
        assert rep.returncode == 0, rep.stderr
        assert ("tuned passes: layout_nchwc" in rep.stdout) == want, rep.stdout
    # blocked faster again: used by run; --disable-pass wins; outputs agree
    make_faster(db, "layout_nchwc")
    off = lathe("compile", path, "--cache-dir", cache, "--threads", 2, "--tune-db", db, "--disable-pass",
                "layout_nchwc", "-o", str(d / "o_off"))
    assert off.returncode == 0 and "tuned passes" not in off.stdout, off.stdout
    got, rr = run_outputs(path, x, str(d / "b.npz"), cache, "--tune-db", db, "--time-passes")
    assert re.search(r"layout_nchwc.*yes", rr.stderr), rr.stderr
    want, _ = run_outputs(path, x, str(d / "n.npz"), cache, "--no-tune-db")
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-5)
    # another thread count: no decision
    rep1 = lathe("compile", path, "--cache-dir", cache, "--threads", 1, "--tune-db", db, "-o", str(d / "o_t1"))
    assert rep1.returncode == 0 and "tuned passes" not in rep1.stdout


def test_python_layout_decision(conv_model, tmp_path):
    """Python's tune_db= carries the layout choice too."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "python"))
    lathe_py = pytest.importorskip("lathe")
    d, path, x = conv_model
    cache, db = str(tmp_path / "c"), str(tmp_path / "db.tsv")
    r = tune(path, db, cache, "--runs", 2)
    assert r.returncode == 0, r.stderr
    if "does not apply" in r.stdout:
        pytest.skip("no channel-blocked kernels on this CPU (needs AVX2 or AVX-512)")
    make_faster(db, "layout_nchwc")
    blocked = lathe_py.compile(path, threads=2, cache_dir=cache, tune_db=db)
    plain = lathe_py.compile(path, threads=2, cache_dir=cache, tune_db=False)
    assert "tuned passes: layout_nchwc" in blocked.report and "tuned passes" not in plain.report
    feeds = {"x": np.load(x)}
    np.testing.assert_allclose(blocked(feeds)["y"], plain(feeds)["y"], rtol=1e-4, atol=1e-5)
    blocked.close()
    plain.close()


@pytest.fixture(scope="module")
def twin_model(tmp_path_factory):
    """Two identical elementwise chains on two inputs: one kernel key, two kernels."""
    d = tmp_path_factory.mktemp("tune_twin")
    nodes = []
    for i in ("a", "b"):
        nodes += [helper.make_node("Mul", [f"x{i}", f"x{i}"], [f"m{i}"]),
                  helper.make_node("Tanh", [f"m{i}"], [f"t{i}"]),
                  helper.make_node("Add", [f"t{i}", f"x{i}"], [f"y{i}"])]
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [64, 256]) for i in ("a", "b")]
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [64, 256]) for i in ("a", "b")]
    m = helper.make_model(helper.make_graph(nodes, "twin", inputs, outputs), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = d / "twin.onnx"
    onnx.save(m, str(path))
    return d, str(path)


def test_tune_counts_and_confirmed_speedups(twin_model):
    """The summary's counts add up (the twin shares the first kernel's entry; a second tune takes both
    from the database), and every row's speed-up is its two medians' ratio, never below 1x."""
    d, path = twin_model
    cache, db = str(d / "cache"), str(d / "db.tsv")
    r = tune(path, db, cache, "--confirm", 3)
    assert r.returncode == 0, r.stderr
    assert "medians of 3 runs each, timed in turns" in r.stdout, r.stdout
    c = counts(r.stdout)
    assert c == {"kernels": 2, "tuned": 2, "searched": 1, "same": 1, "known": 0, "untunable": 0}, r.stdout
    rows = speedups(r.stdout)
    assert len(rows) == 1, r.stdout
    for default_ms, tuned_ms, x in rows:
        assert x >= 1.0 and tuned_ms <= default_ms, r.stdout
        assert abs(x - default_ms / tuned_ms) <= 0.01 * x + 0.01, r.stdout
    assert re.search(r"database: .*\(1 entries, 1 new\)", r.stdout), r.stdout
    r2 = tune(path, db, cache)
    assert r2.returncode == 0, r2.stderr
    assert counts(r2.stdout) == {"kernels": 2, "tuned": 2, "searched": 0, "same": 0, "known": 2, "untunable": 0}
    assert "(1 entries, 0 new)" in r2.stdout, r2.stdout
    bad = lathe("tune", path, "--db", db, "--cache-dir", cache, "--confirm", 0)
    assert bad.returncode == 1 and "--confirm" in bad.stderr, bad.stderr


@pytest.fixture(scope="module")
def concat_conv_model(tmp_path_factory):
    """Two convolutions concatenated, then a third: the layout pass puts a Concat in front of a
    channel-blocked reorder, which fusion joins into the reorder's group (as in SqueezeNet)."""
    d = tmp_path_factory.mktemp("tune_concat")
    rng = np.random.default_rng(9)
    f = lambda name, *shape: numpy_helper.from_array(rng.uniform(-0.3, 0.3, shape).astype(np.float32), name)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r0", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Concat", ["r1", "r2"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3", "b3"], ["y"])]
    graph = helper.make_graph(nodes, "concat_conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])],
                              initializer=[f("w0", 16, 16, 3, 3), f("b0", 16), f("w1", 16, 16, 1, 1), f("b1", 16),
                                           f("w2", 16, 16, 3, 3), f("b2", 16), f("w3", 16, 32, 1, 1), f("b3", 16)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = d / "concat_conv.onnx"
    onnx.save(m, str(path))
    np.save(d / "x.npy", rng.uniform(-1, 1, (1, 16, 12, 12)).astype(np.float32))
    return d, str(path), str(d / "x.npy")


def test_concat_before_blocked_layout(concat_conv_model):
    """The channel-blocked layout of a Concat feeding a convolution: no group falls back to the
    interpreter ("operand buffers missing" before), tune reports no internal error, and the outputs
    are the interpreter's."""
    d, path, x = concat_conv_model
    cache = str(d / "cache")
    rep = lathe("compile", path, "--cache-dir", cache, "--threads", 2, "--no-tune-db", "--enable-pass", "layout_nchwc",
                "--dump-code", str(d / "code"))
    assert rep.returncode == 0, rep.stderr
    groups = (d / "code" / "groups.txt").read_text()
    if "Nchwc" not in groups:
        pytest.skip("no channel-blocked kernels on this CPU (needs AVX2 or AVX-512)")
    assert "operand buffers missing" not in rep.stdout + rep.stderr, rep.stdout + rep.stderr
    assert not re.search(r"fallbacks: [1-9]", rep.stdout), rep.stdout
    assert re.search(r"Concat, n\d+ NchwcReorderIn", groups), groups  # the case: a Concat fused before a reorder
    got, _ = run_outputs(path, x, str(d / "b.npz"), cache, "--no-tune-db", "--enable-pass", "layout_nchwc")
    want, _ = run_outputs(path, x, str(d / "i.npz"), cache, "--backend", "interp")
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-4, atol=1e-5)
    for extra in ((), ("--enable-pass", "layout_nchwc")):
        r = tune(path, str(d / f"db{len(extra)}.tsv"), cache, "--runs", 2, *extra)
        assert r.returncode == 0, r.stderr
        assert "warning" not in r.stderr and "operand buffers missing" not in r.stdout + r.stderr, r.stdout + r.stderr
