"""test_data_dependent.py — models whose sizes depend on the data, split at those ops and compiled.

An op whose output size the values decide (NonZero, NonMaxSuppression, Unique, TopK with a run-time k,
Compress, a Loop's scan output) leaves every node after it without a static shape. The compiler splits
the graph there (src/compile/split.h): NonZero becomes a compiled kernel with a padded output, the other
ops stay host steps, and the nodes after them are compiled at run time as a family keyed by the sizes the
data gives. Checked here, on the models of data_dependent_models.py:
  - every output equals the reference interpreter's, with its shape, over runs whose data-dependent
    sizes differ (and a NonZero that finds nothing: [2, 0]);
  - after the first runs, further sizes run with no C compiler invocation (a wrapper script logs each
    compile; no cache folder, so every build is a real compiler run);
  - the compile report names the split and how many of the ops compiled;
  - a model with symbolic batch and a NonZero runs at several batches, the plans of every batch sharing
    one compiled rest (the C compiler runs for few of the new batches);
  - the CLI runs files with different counts in one process (--each), and an artifact (--save) of such a
    model keeps the data-dependent part as host steps and runs with no compiler.
The library comes from $LATHE_LIBRARY (default build/liblathe.so), the binary from $LATHE_BIN.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("LATHE_LIBRARY", os.path.join(ROOT, "build", "liblathe.so"))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)
onnx = pytest.importorskip("onnx")

import lathe  # noqa: E402
from cc_log import compiles, counting_cc  # noqa: E402
import data_dependent_models as ddm  # noqa: E402


def check(got, want, what):
    assert set(got) == set(want), what
    for name in want:
        assert got[name].shape == want[name].shape, f"{what}: {name} {got[name].shape} vs {want[name].shape}"
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("name", sorted(ddm.MODELS))
def test_sizes_from_data(name, tmp_path):
    build, make_feeds = ddm.MODELS[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(build(), path)
    cc, log = counting_cc(tmp_path)
    model = lathe.compile(str(path), cache_dir=False, cc=cc)
    ref = lathe.compile(str(path), backend="interp")
    rng = np.random.default_rng(7)
    after = []
    for i in range(10):
        f = make_feeds(rng)
        check(model.run(f), ref.run(f), f"{name} run {i}")
        after.append(compiles(log))
    assert after[-1] >= 1
    report = model.report
    # the C compiler runs once per new bucket of the rest, never for a size whose bucket exists (the
    # buckets depend on the machine's vector width: sizes shorter than a vector make kernels of their own)
    buckets = int(re.search(r"the rest after.*buckets: (\d+)", report).group(1))
    assert after[-1] - after[0] == buckets - 1 and buckets <= 3, f"{name}: compiles {after}, {buckets} buckets\n{report}"
    assert "data-dependent sizes: split after 1 op(s)" in report, report
    assert f"({1 if name in ('nonzero', 'topk', 'compress', 'nms', 'unique', 'unique_rows') else 0} compiled with a padded output" in report, report
    assert "the rest after" in report and "buckets:" in report, report


def test_nonzero_finds_nothing(tmp_path):
    path = tmp_path / "nz.onnx"
    onnx.save(ddm.nonzero(), path)
    model, ref = lathe.compile(str(path), cache_dir=False), lathe.compile(str(path), backend="interp")
    rng = np.random.default_rng(1)
    for none in (True, False, True):
        f = ddm.nonzero_feeds(rng, none=none)
        got = model.run(f)
        check(got, ref.run(f), f"none={none}")
    assert got["nz"].shape == (2, 0) and got["y"].shape == (0,)


def test_symbolic_batch_and_nonzero(tmp_path):
    """Symbolic batch and a data-dependent count: the plans of every batch share one rest (its model
    written with the batch symbolic), so new batches and counts mostly take an existing bucket."""
    path = tmp_path / "nz_sym.onnx"
    onnx.save(ddm.nonzero(batch="n"), path)
    cc, log = counting_cc(tmp_path)
    model, ref = lathe.compile(str(path), cache_dir=False, cc=cc), lathe.compile(str(path), backend="interp")
    rng = np.random.default_rng(2)
    after = []
    for batch in (5, 9, 5, 3, 7, 6, 12, 4):
        f = ddm.nonzero_feeds(rng, batch=batch)
        check(model.run(f), ref.run(f), f"batch {batch}")
        after.append(compiles(log))
    # each batch's plan used to split off a rest of its own, compiled anew; shared, a new batch compiles
    # only where its sizes need a new bucket of the rest (small sizes that coincide, such as a count equal
    # to a static dim, simplify differently)
    assert after[-1] - after[2] <= 3, f"the C compiler ran for most new batches: {after}"


def run_cli(*args):
    return subprocess.run([LATHE, *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", sorted(ddm.MODELS))
def test_cli_each(name, tmp_path):
    """`lathe run --each` over files of different data-dependent sizes, in one process (also under ASan)."""
    build, make_feeds = ddm.MODELS[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(build(), path)
    rng = np.random.default_rng(3)
    files = []
    for i in range(3):
        files.append(tmp_path / f"in{i}.npz")
        np.savez(files[-1], **make_feeds(rng))
    ref = lathe.compile(str(path), backend="interp")
    out = tmp_path / "out"
    r = run_cli("run", path, *sum((["--each", f] for f in files), []), "--output", out)
    assert r.returncode == 0, r.stderr
    for f in files:
        with np.load(f) as z:
            want = ref.run({k: z[k] for k in z.files})
        with np.load(out / f"{f.stem}.npz") as z:
            check({k: z[k] for k in z.files}, want, f.name)


def test_cli_artifact(tmp_path):
    """An artifact of a model with NonZero keeps it and what follows as host steps: no compiler needed."""
    path = tmp_path / "nz.onnx"
    onnx.save(ddm.nonzero(), path)
    inp = tmp_path / "in.npz"
    np.savez(inp, **ddm.nonzero_feeds(np.random.default_rng(4)))
    ref = lathe.compile(str(path), backend="interp")
    art = tmp_path / "nz.lathe"
    r = run_cli("compile", path, "--save", art)
    assert r.returncode == 0, r.stderr
    assert "data-dependent sizes" not in r.stdout  # an artifact carries no compiler for the rest
    env = dict(os.environ, CC="/nonexistent/cc", PATH="/nonexistent")
    r = subprocess.run([LATHE, "run", str(art), "--input", str(inp), "--output", str(tmp_path / "a.npz")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    with np.load(inp) as z:
        want = ref.run({"x": z["x"]})
    with np.load(tmp_path / "a.npz") as z:
        check({k: z[k] for k in z.files}, want, "artifact")


def test_cli_no_split(tmp_path):
    """--no-split keeps NonZero and what follows as host steps; the outputs are the same."""
    path = tmp_path / "nz.onnx"
    onnx.save(ddm.nonzero(), path)
    inp = tmp_path / "in.npz"
    np.savez(inp, **ddm.nonzero_feeds(np.random.default_rng(5)))
    split, host = run_cli("compile", path), run_cli("compile", path, "--no-split")
    assert split.returncode == 0 and host.returncode == 0, split.stderr + host.stderr
    assert "data-dependent sizes: split after 1 op(s) (1 compiled" in split.stdout, split.stdout
    assert "data-dependent sizes" not in host.stdout, host.stdout
    outs = []
    for flags in ([], ["--no-split"]):
        out = tmp_path / f"o{len(outs)}.npz"
        r = run_cli("run", path, "--input", inp, "--output", out, *flags)
        assert r.returncode == 0, r.stderr
        with np.load(out) as z:
            outs.append({k: z[k] for k in z.files})
    check(outs[0], outs[1], "--no-split")


def topk_model(axis, largest, dtype, values_only=False):
    from onnx import TensorProto as T, helper as h
    tt = {np.float32: T.FLOAT, np.int32: T.INT32}[dtype]
    outs = ["v"] if values_only else ["v", "i"]
    nodes = [h.make_node("TopK", ["x", "k"], outs, axis=axis, largest=largest),
             h.make_node("Cast", ["v"], ["vf"], to=T.FLOAT), h.make_node("Neg", ["vf"], ["y"])]
    outputs = [h.make_tensor_value_info("y", T.FLOAT, None)]
    if not values_only:
        outputs.append(h.make_tensor_value_info("i", T.INT64, None))
    g = h.make_graph(nodes, "tk", [h.make_tensor_value_info("x", tt, [3, 7, 4]), h.make_tensor_value_info("k", T.INT64, [1])],
                     outputs)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.parametrize("axis,largest,dtype,values_only", [(1, 1, np.float32, False), (-1, 0, np.int32, False),
                                                           (0, 1, np.float32, True)])
def test_topk_runtime_k(axis, largest, dtype, values_only, tmp_path):
    """TopK with k given at run time compiles (TopKPadded): every k from 0 to the axis length, NaNs and
    ties included, equals the interpreter; a k out of range is refused naming the node."""
    path = tmp_path / "tk.onnx"
    onnx.save(topk_model(axis, largest, dtype, values_only), path)
    model, ref = lathe.compile(str(path), cache_dir=False), lathe.compile(str(path), backend="interp")
    assert "(1 compiled with a padded output" in model.report, model.report
    rng = np.random.default_rng(9)
    length = (3, 7, 4)[axis]
    for k in list(range(length + 1)) + [length // 2]:
        x = (rng.integers(-3, 4, (3, 7, 4)) if dtype == np.int32 else rng.standard_normal((3, 7, 4))).astype(dtype)
        if dtype == np.float32:
            x[0, 1, 2] = np.nan
            x[1, 2, 3] = x[1, 3, 3]  # a tie
        f = {"x": x, "k": np.array([k], np.int64)}
        check(model.run(f), ref.run(f), f"k={k}")
    for bad in (length + 1, -1):
        with pytest.raises(lathe.LatheError) as e:
            model.run({"x": np.zeros((3, 7, 4), dtype), "k": np.array([bad], np.int64)})
        assert "TopK" in str(e.value) and str(bad) in str(e.value), str(e.value)


def test_cli_topk_values_only(tmp_path):
    """TopK with its indices output omitted, through the interpreter and compiled (also under ASan: the
    interpreter once wrote the missing output's slot)."""
    path = tmp_path / "tkv.onnx"
    onnx.save(topk_model(1, 1, np.float32, values_only=True), path)
    inp = tmp_path / "in.npz"
    np.savez(inp, x=np.random.default_rng(6).standard_normal((3, 7, 4)).astype(np.float32), k=np.array([3], np.int64))
    outs = []
    for backend in ("interp", "cpu"):
        out = tmp_path / f"{backend}.npz"
        r = run_cli("run", path, "--input", inp, "--output", out, "--backend", backend)
        assert r.returncode == 0, r.stderr
        with np.load(out) as z:
            outs.append({k: z[k] for k in z.files})
    check(outs[1], outs[0], "values-only TopK")


@pytest.mark.parametrize("axis,clen", [(1, 7), (1, 4), (None, 30), (0, 3), (-1, 5)])
def test_compress_compiled(axis, clen, tmp_path):
    """Compress by a condition computed from the data compiles (CompressPadded): along an axis, flat, with a
    condition shorter than the axis; equal to the interpreter when nothing, some or everything is kept."""
    from onnx import TensorProto as T, helper as h
    attrs = {} if axis is None else {"axis": axis}
    nodes = [h.make_node("Greater", ["c", "zero"], ["cond"]), h.make_node("Compress", ["x", "cond"], ["s"], **attrs),
             h.make_node("Mul", ["s", "s"], ["y"])]
    g = h.make_graph(nodes, "cp", [h.make_tensor_value_info("x", T.FLOAT, [3, 7, 5]), h.make_tensor_value_info("c", T.FLOAT, [clen])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     [onnx.numpy_helper.from_array(np.array(0, np.float32), "zero")])
    path = tmp_path / "cp.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    model, ref = lathe.compile(str(path), cache_dir=False), lathe.compile(str(path), backend="interp")
    assert "(1 compiled with a padded output" in model.report, model.report
    rng = np.random.default_rng(11)
    for c in (-np.ones(clen), np.ones(clen), rng.standard_normal(clen), rng.standard_normal(clen)):
        f = {"x": rng.standard_normal((3, 7, 5)).astype(np.float32), "c": c.astype(np.float32)}
        check(model.run(f), ref.run(f), f"axis {axis}, condition {c}")


def test_python_no_split(tmp_path):
    """lathe.compile(no_split=True) keeps the host steps: no split in the report, the same outputs."""
    path = tmp_path / "nms.onnx"
    onnx.save(ddm.nms(), path)
    split, host = lathe.compile(str(path), cache_dir=False), lathe.compile(str(path), cache_dir=False, no_split=True)
    assert "data-dependent sizes" in split.report and "data-dependent sizes" not in host.report, host.report
    f = ddm.nms_feeds(np.random.default_rng(8))
    check(split.run(f), host.run(f), "no_split")
    with pytest.raises(TypeError):
        lathe.compile(str(path), no_split="yes")


@pytest.mark.parametrize("k,largest,dtype", [(17, 1, np.float32), (100, 0, np.float32), (64, 1, np.float64),
                                             (300, 1, np.int64), (999, 0, np.float32)])
def test_topk_large_k(k, largest, dtype, tmp_path):
    """TopK with a constant k above 16 takes the heap kernel: equal to the interpreter (NaNs, ties, the
    order of equal values by index)."""
    from onnx import TensorProto as T, helper as h
    tt = {np.float32: T.FLOAT, np.float64: T.DOUBLE, np.int64: T.INT64}[dtype]
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)]
    g = h.make_graph(nodes, "tk", [h.make_tensor_value_info("x", tt, [4, 1000])],
                     [h.make_tensor_value_info("v", tt, None), h.make_tensor_value_info("i", T.INT64, None)],
                     [onnx.numpy_helper.from_array(np.array([k], np.int64), "k")])
    path = tmp_path / "tk.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    model, ref = lathe.compile(str(path), cache_dir=False), lathe.compile(str(path), backend="interp")
    assert "host steps" in model.report and ", 0 host steps" in model.report, model.report
    rng = np.random.default_rng(k)
    x = rng.integers(-20, 20, (4, 1000)).astype(dtype)  # many ties
    if dtype != np.int64:
        x[0, ::7] = np.nan
        x[1] = rng.standard_normal(1000)
    f = {"x": x}
    got, want = model.run(f), ref.run(f)
    np.testing.assert_array_equal(got["i"], want["i"])
    np.testing.assert_array_equal(got["v"], want["v"])


@pytest.mark.parametrize("name", ["nonzero", "topk", "compress", "topk_heap", "topk_padded_heap"])
def test_cuda_kernels_compile_with_nvrtc(name, tmp_path):
    """The padded kernels and the heap TopK (k constant, or given at run time over a long axis), emitted
    for the GPU, build with NVRTC (no GPU needed)."""
    path = tmp_path / f"{name}.onnx"
    if name.endswith("heap"):
        from onnx import TensorProto as T, helper as h
        given = name == "topk_padded_heap"
        g = h.make_graph([h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)], "tk",
                         [h.make_tensor_value_info("x", T.FLOAT, [8, 500])] +
                         ([h.make_tensor_value_info("k", T.INT64, [1])] if given else []),
                         [h.make_tensor_value_info("v", T.FLOAT, None), h.make_tensor_value_info("i", T.INT64, None)],
                         [] if given else [onnx.numpy_helper.from_array(np.array([50], np.int64), "k")])
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    else:
        onnx.save(ddm.MODELS[name][0](), path)
    out = tmp_path / "cuda"
    r = run_cli("compile", path, "--target", "cuda", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "model.cubin").stat().st_size > 0, r.stdout + r.stderr
    groups = (out / "groups.txt").read_text()
    want = {"nonzero": "NonZeroPadded", "topk": "TopKPadded", "compress": "CompressPadded", "topk_heap": "(TopK)",
            "topk_padded_heap": "TopKPadded"}[name]
    assert "anchor=" in groups and want in groups, groups


def test_topk_runtime_k_heap(tmp_path):
    """TopK with k given at run time over an axis longer than 64 takes the heap kernel with a run-time k:
    k from 0 to the axis length, NaNs and ties, equal to the interpreter bit for bit."""
    from onnx import TensorProto as T, helper as h
    g = h.make_graph([h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=1)], "tk",
                     [h.make_tensor_value_info("x", T.FLOAT, [5, 300]), h.make_tensor_value_info("k", T.INT64, [1])],
                     [h.make_tensor_value_info("v", T.FLOAT, None), h.make_tensor_value_info("i", T.INT64, None)])
    path = tmp_path / "tk.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    model, ref = lathe.compile(str(path), cache_dir=False), lathe.compile(str(path), backend="interp")
    rng = np.random.default_rng(12)
    for k in (0, 1, 2, 17, 100, 299, 300):
        x = rng.integers(-30, 30, (5, 300)).astype(np.float32)
        x[0, ::11] = np.nan
        f = {"x": x, "k": np.array([k], np.int64)}
        got, want = model.run(f), ref.run(f)
        np.testing.assert_array_equal(got["i"], want["i"], err_msg=f"k={k}")
        np.testing.assert_array_equal(got["v"], want["v"], err_msg=f"k={k}")
