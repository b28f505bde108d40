"""test_inference_session.py — lathe's onnxruntime-compatible API (python/lathe/session.py) against
onnxruntime itself: one script body, `scenario(ort, models)`, written as an onnxruntime user writes it,
runs once with `ort = onnxruntime` and once with `ort = lathe`, and the two runs' results are compared:
metadata (get_inputs / get_outputs name, shape, type; get_modelmeta), outputs of a model with a
symbolic batch dim at three batch sizes and of a static convolution model (from a path and from bytes,
at two optimization levels), the errors a caller can make (unknown input or output name, missing input,
wrong dtype, rank or static dim), DLPack round trips, and IO binding into a preallocated numpy buffer.
Then what only lathe has: a symbolic model compiled once for every input shape (a family), the C
compiler running once per bucket, not per shape (a compiler wrapper logs its runs; no cache folder, so
every build is real), outputs equal to onnxruntime's at every shape; the per-signature path where the
family cannot serve (an input of unknown rank; the family refused as unsupported, faked) and its
bounded plan cache; DLPack feeds read in place (torch too where it is installed), GPU buffers refused.

The library under test is $LATHE_LIBRARY, default the liblathe.so next to $LATHE_BIN (build/lathe), and
the package is imported from python/ of this checkout. Models are written with onnx.helper; compiled
code goes to a per-module cache folder (the "lathe.cache_dir" session config entry; onnxruntime
stores and ignores it). Data is random.
"""
import json
import os
import re
import sys
import warnings

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE_BIN = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE_BIN):
    LATHE_BIN = os.path.join(ROOT, LATHE_BIN)
LIB = os.environ.get("LATHE_LIBRARY") or os.path.join(os.path.dirname(LATHE_BIN), "liblathe.so")
os.environ["LATHE_LIBRARY"] = LIB
sys.path.insert(0, os.path.join(ROOT, "python"))
import lathe  # noqa: E402

MODULES = {"onnxruntime": onnxruntime, "lathe": lathe}


# ---- models -----------------------------------------------------------------------------------------

def _save(path, graph, **props):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], **props)
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("session-models")
    rng = np.random.default_rng(11)
    # MLP with a symbolic batch dim: probs = softmax(relu(x @ W1 + b1) @ W2 + b2), idx = argmax(probs)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(32).astype(np.float32) * 0.1
    w2 = rng.standard_normal((32, 10)).astype(np.float32) * 0.3
    b2 = rng.standard_normal(10).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h"]), helper.make_node("MatMul", ["h", "W2"], ["l0"]),
             helper.make_node("Add", ["l0", "b2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
             helper.make_node("ArgMax", ["probs"], ["idx"], axis=1, keepdims=0)]
    g = helper.make_graph(
        nodes, "mlp_graph", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, ["batch"])],
        initializer=[numpy_helper.from_array(a, n) for a, n in [(w1, "W1"), (b1, "b1"), (w2, "W2"), (b2, "b2")]],
        doc_string="two layers")
    mlp = _save(d / "mlp.onnx", g, producer_name="session-test", producer_version="1.0", domain="test.lathe",
                model_version=3, doc_string="an MLP with a symbolic batch")
    m = onnx.load(mlp)
    helper.set_model_props(m, {"author": "tests", "purpose": "compat"})
    onnx.save(m, mlp)

    # a static convolution model with two inputs: y = mean(relu(conv(img, K) + bias * s)), s: float[1]
    k = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.2
    bias = rng.standard_normal((1, 8, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["img", "K"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["bias", "s"], ["bs"]), helper.make_node("Add", ["c", "bs"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["y"])]
    g = helper.make_graph(
        nodes, "conv_graph",
        [helper.make_tensor_value_info("img", TensorProto.FLOAT, [2, 3, 12, 12]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        initializer=[numpy_helper.from_array(k, "K"), numpy_helper.from_array(bias, "bias")])
    conv = _save(d / "conv.onnx", g, producer_name="session-test")

    # the MLP with no shape on its input (rank unknown: the family cannot serve it); the checker wants a
    # shape on graph inputs, onnxruntime and lathe take the model without one
    m = onnx.load(mlp)
    m.graph.input[0].type.tensor_type.ClearField("shape")
    mlp_norank = str(d / "mlp_norank.onnx")
    onnx.save(m, mlp_norank)
    return {"mlp": mlp, "conv": conv, "mlp_norank": mlp_norank}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lathe-cache"))


# ---- the one script body, for either module --------------------------------------------------------

def make_session(ort, model, cache, level=None, threads=1, **config):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    if level is not None:
        so.graph_optimization_level = level
    so.add_session_config_entry("lathe.cache_dir", cache)  # onnxruntime stores it and ignores it
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def scenario(ort, models, cache, workdir):
    """Everything an onnxruntime user does, with `ort` as the only name for the runtime. Returns a dict of
    what each step gave (arrays, metadata, caught exceptions) for the two modules' runs to be compared."""
    r = {}
    rng = np.random.default_rng(2024)

    # metadata
    s = make_session(ort, models["mlp"], cache)
    r["inputs"] = [(i.name, i.shape, i.type) for i in s.get_inputs()]
    r["outputs"] = [(o.name, o.shape, o.type) for o in s.get_outputs()]
    meta = s.get_modelmeta()
    r["meta"] = (meta.producer_name, meta.graph_name, meta.domain, meta.description, meta.version,
                 meta.custom_metadata_map)
    r["providers"] = s.get_providers()
    r["provider_options"] = s.get_provider_options()
    r["threads"] = s.get_session_options().intra_op_num_threads

    # a symbolic batch at three sizes, then a repeated size
    r["xs"] = {n: rng.standard_normal((n, 16)).astype(np.float32) for n in (1, 5, 8)}
    for n in (1, 5, 8, 5):
        r[f"mlp_{n}"] = s.run(None, {"x": r["xs"][n]})
    r["mlp_selected"] = s.run(["idx", "probs"], {"x": r["xs"][8]})
    r["mlp_empty_names"] = s.run([], {"x": r["xs"][1]})

    # errors
    x = r["xs"][5]
    cases = {
        "unknown_input": lambda: s.run(None, {"x": x, "bogus": x}),
        "unknown_output": lambda: s.run(["bogus"], {"x": x}),
        "missing_input": lambda: s.run(None, {}),
        "wrong_dtype": lambda: s.run(None, {"x": x.astype(np.float64)}),
        "wrong_rank": lambda: s.run(None, {"x": x[None]}),
        "wrong_dim": lambda: s.run(None, {"x": rng.standard_normal((5, 15)).astype(np.float32)}),
        "int_for_float": lambda: s.run(None, {"x": (x * 10).astype(np.int64)}),
    }
    r["errors"] = {}
    for name, call in cases.items():
        try:
            call()
            r["errors"][name] = None
        except Exception as e:  # noqa: BLE001 — compared between the two modules
            r["errors"][name] = e

    # a static model, from a path and from bytes, at two optimization levels
    conv_in = {"img": rng.standard_normal((2, 3, 12, 12)).astype(np.float32),
               "s": rng.standard_normal(1).astype(np.float32)}
    c = make_session(ort, models["conv"], cache)
    r["conv_inputs"] = [(i.name, i.shape, i.type) for i in c.get_inputs()]
    r["conv_outputs"] = [(o.name, o.shape, o.type) for o in c.get_outputs()]
    r["conv"] = c.run(None, conv_in)
    with open(models["conv"], "rb") as f:
        r["conv_bytes"] = make_session(ort, f.read(), cache).run(["y"], conv_in)
    r["conv_O0"] = make_session(ort, models["conv"], cache, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(
        None, conv_in)
    r["conv_basic"] = make_session(ort, models["conv"], cache, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC).run(
        None, conv_in)
    try:
        c.run(None, {"img": conv_in["img"][:1], "s": conv_in["s"]})
        r["conv_wrong_static_dim"] = None
    except Exception as e:  # noqa: BLE001
        r["conv_wrong_static_dim"] = e

    # DLPack: outputs export it (numpy arrays), arrays read back through it feed the session
    y = s.run(["probs"], {"x": x})[0]
    back = np.from_dlpack(y)
    r["dlpack_shared"] = np.shares_memory(back, y)
    r["dlpack_roundtrip"] = c.run(None, {"img": np.from_dlpack(conv_in["img"]), "s": np.from_dlpack(conv_in["s"])})

    # IO binding: the input read in place, one output written into a preallocated buffer, one allocated
    xb = rng.standard_normal((4, 16)).astype(np.float32)
    out = np.full((4, 10), np.nan, np.float32)
    b = s.io_binding()
    b.bind_cpu_input("x", xb)
    b.bind_output("probs", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
    b.bind_output("idx")
    s.run_with_iobinding(b)
    vals = b.get_outputs()
    r["iob_same_memory"] = (vals[0].data_ptr() == out.ctypes.data, np.shares_memory(vals[0].numpy(), out))
    r["iob_out"] = out.copy()
    r["iob_copies"] = b.copy_outputs_to_cpu()
    r["iob_meta"] = [(v.shape(), v.data_type()) for v in vals]
    r["iob_expected"] = s.run(None, {"x": xb})
    b.clear_binding_outputs()
    try:
        s.run_with_iobinding(b)
        r["iob_no_outputs"] = None
    except Exception as e:  # noqa: BLE001
        r["iob_no_outputs"] = e

    # profiling: a JSON trace, named by end_profiling(), at profile_file_prefix
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(workdir, "trace")
    so.add_session_config_entry("lathe.cache_dir", cache)
    p = ort.InferenceSession(models["conv"], so, providers=["CPUExecutionProvider"])
    p.run(None, conv_in)
    trace = p.end_profiling()
    r["profile_name"] = trace
    with open(trace) as f:
        r["profile"] = json.load(f)
    r["conv_in"] = conv_in
    return r


@pytest.fixture(scope="module")
def results(models, cache, tmp_path_factory):
    return {name: scenario(mod, models, cache, str(tmp_path_factory.mktemp(f"prof-{name}")))
            for name, mod in MODULES.items()}


# ---- comparisons ------------------------------------------------------------------------------------

def _close(a, b, what):
    assert len(a) == len(b), what
    for u, v in zip(a, b):
        assert isinstance(u, np.ndarray) and isinstance(v, np.ndarray), what
        assert u.dtype == v.dtype and u.shape == v.shape, f"{what}: {u.dtype}{u.shape} vs {v.dtype}{v.shape}"
        if u.dtype.kind == "f":
            np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-5, err_msg=what)
        else:
            np.testing.assert_array_equal(u, v, err_msg=what)


def test_metadata_matches(results):
    ort, lt = results["onnxruntime"], results["lathe"]
    assert lt["inputs"] == ort["inputs"] == [("x", ["batch", 16], "tensor(float)")]
    assert lt["outputs"] == ort["outputs"] == [("probs", ["batch", 10], "tensor(float)"),
                                               ("idx", ["batch"], "tensor(int64)")]
    assert lt["conv_inputs"] == ort["conv_inputs"]
    assert lt["conv_outputs"] == ort["conv_outputs"]
    assert lt["meta"] == ort["meta"]
    assert lt["meta"][0] == "session-test" and lt["meta"][5] == {"author": "tests", "purpose": "compat"}
    assert lt["providers"] == ort["providers"] == ["CPUExecutionProvider"]
    assert lt["provider_options"] == ort["provider_options"] == {"CPUExecutionProvider": {}}
    assert lt["threads"] == ort["threads"] == 1


def test_outputs_match(results):
    ort, lt = results["onnxruntime"], results["lathe"]
    for n in (1, 5, 8):
        assert lt["mlp_5"][0].shape == (5, 10)
        _close(lt[f"mlp_{n}"], ort[f"mlp_{n}"], f"mlp batch {n}")
    _close(lt["mlp_selected"], ort["mlp_selected"], "outputs by name")
    assert lt["mlp_selected"][0].dtype == np.int64
    _close(lt["mlp_empty_names"], ort["mlp_empty_names"], "output_names=[]")
    for key in ("conv", "conv_bytes", "conv_O0", "conv_basic", "dlpack_roundtrip"):
        _close(lt[key], ort[key], key)
    assert float(np.abs(lt["conv"][0]).max()) > 0  # not a degenerate all-zero answer


def test_errors_match(results):
    ort, lt = results["onnxruntime"]["errors"], results["lathe"]["errors"]
    expect = {"unknown_input": "Invalid input name: bogus", "unknown_output": "Invalid output name:bogus",
              "missing_input": "Required inputs (['x']) are missing from input feed ([]).",
              "wrong_dtype": "Unexpected input data type. Actual: (tensor(double)) , expected: (tensor(float))",
              "wrong_rank": "Invalid rank for input: x Got: 3 Expected: 2",
              "wrong_dim": "Got invalid dimensions for input: x for the following indices\n index: 1 Got: 15 "
                           "Expected: 16",
              "int_for_float": "Unexpected input data type. Actual: (tensor(int64))"}
    for case, text in expect.items():
        eo, el = ort[case], lt[case]
        assert eo is not None and el is not None, case
        assert text in str(eo) and text in str(el), f"{case}: {eo!r} / {el!r}"
        assert type(el).__name__ == type(eo).__name__ or isinstance(el, type(eo)), f"{case}: {type(eo)} {type(el)}"
        assert isinstance(el, lathe.LatheError)
    assert isinstance(lt["missing_input"], ValueError) and isinstance(ort["missing_input"], ValueError)
    assert isinstance(lt["unknown_input"], lathe.InvalidArgument)
    assert isinstance(lt["wrong_dtype"], lathe.capi.onnxruntime_pybind11_state.InvalidArgument)
    eo, el = results["onnxruntime"]["conv_wrong_static_dim"], results["lathe"]["conv_wrong_static_dim"]
    assert "Got invalid dimensions for input: img" in str(eo) and "Got invalid dimensions for input: img" in str(el)
    eo, el = results["onnxruntime"]["iob_no_outputs"], results["lathe"]["iob_no_outputs"]
    assert isinstance(eo, RuntimeError) and isinstance(el, RuntimeError)
    assert "At least one output should be requested" in str(eo) and "At least one output should be requested" in str(el)


def test_dlpack_roundtrip(results):
    for name, r in results.items():
        assert r["dlpack_shared"], name


def test_iobinding_writes_the_buffer(results):
    ort, lt = results["onnxruntime"], results["lathe"]
    for name, r in results.items():
        assert r["iob_same_memory"] == (True, True), name
        assert not np.isnan(r["iob_out"]).any(), name
        _close([r["iob_out"]], r["iob_expected"][:1], f"{name}: bound buffer vs run()")
        _close(r["iob_copies"], r["iob_expected"], f"{name}: copy_outputs_to_cpu vs run()")
    assert lt["iob_meta"] == ort["iob_meta"] == [([4, 10], "tensor(float)"), ([4], "tensor(int64)")]
    _close(lt["iob_copies"], ort["iob_copies"], "io binding")


def test_profiling_trace(results):
    for name, r in results.items():
        assert isinstance(r["profile"], list) and r["profile"], name
        assert all({"name", "ph", "ts", "dur"} <= set(e) for e in r["profile"]), name
        assert os.path.basename(r["profile_name"]).startswith("trace_") and r["profile_name"].endswith(".json")
    assert any(e["name"] == "model_run" for e in results["lathe"]["profile"])


# ---- lathe's own behaviour -------------------------------------------------------------------------

def counting_cc(tmp_path):
    """A compiler command that logs each run, then runs the real compiler (as tests/test_symbolic_shapes.py)."""
    log = tmp_path / "cc.log"
    real = os.environ.get("CC") or "cc"
    script = tmp_path / "cc-logged"
    script.write_text(f"#!/bin/sh\necho run >> {log}\nexec {real} \"$@\"\n")
    script.chmod(0o755)
    return str(script), log


def cc_runs(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def buckets(session):
    """The bucket count of the family's report ("...; buckets: 2; ...")."""
    m = re.search(r"buckets: (\d+)", session.lathe_report)
    return int(m.group(1)) if m else 0


def test_symbolic_shapes_share_one_compiled_model(models, tmp_path, monkeypatch):
    cc, log = counting_cc(tmp_path)
    monkeypatch.setenv("CC", cc)  # the session's lathe.compile takes $CC
    s = make_session(lathe, models["mlp"], "")  # "": no cache folder, so every build runs the compiler
    assert s.lathe_backend == "cpu" and s.lathe_shape_mode == "family"
    assert s.lathe_compile_count == 1 and cc_runs(log) == 0  # compiled for every shape; nothing built yet
    rng = np.random.default_rng(5)
    ref = onnxruntime.InferenceSession(models["mlp"], providers=["CPUExecutionProvider"])
    sizes = (2, 7, 3, 9, 2, 1, 5, 1, 7)
    for n in sizes:
        runs_before, buckets_before = cc_runs(log), buckets(s)
        x = rng.standard_normal((n, 16)).astype(np.float32)
        _close(s.run(None, {"x": x}), ref.run(None, {"x": x}), f"batch {n}")
        if buckets(s) == buckets_before:  # a shape of an existing bucket: no compiler run
            assert cc_runs(log) == runs_before, f"batch {n} ran the C compiler in bucket(s) it already had"
    assert cc_runs(log) >= 1
    assert 1 <= buckets(s) < len(set(sizes)), s.lathe_report  # shapes shared buckets
    assert s.lathe_compile_count == 1 and s.lathe_cached_shapes == []  # every shape ran on the one model
    assert s._family.threads == 1
    static = make_session(lathe, models["conv"], str(tmp_path / "cache"))
    assert static.lathe_compile_count == 1 and static.lathe_shape_mode == "static"  # compiled when made
    static.run(None, {"img": rng.standard_normal((2, 3, 12, 12)).astype(np.float32),
                      "s": rng.standard_normal(1).astype(np.float32)})
    assert static.lathe_compile_count == 1 and len(static.lathe_cached_shapes) == 1


def test_per_signature_plan_cache_is_bounded(models, cache):
    """An input of unknown rank: no family; each signature is compiled on its own and the plans kept are
    bounded by lathe.max_cached_shapes."""
    s = make_session(lathe, models["mlp_norank"], cache, **{"lathe.max_cached_shapes": "2"})
    assert s.lathe_shape_mode == "per-signature" and s.lathe_compile_count == 0
    rng = np.random.default_rng(6)
    ref = onnxruntime.InferenceSession(models["mlp_norank"], providers=["CPUExecutionProvider"])
    for n in (1, 2, 3, 1):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        _close(s.run(None, {"x": x}), ref.run(None, {"x": x}), f"batch {n}")
    assert s.lathe_compile_count == 4  # batch 1 was dropped (least recently used) before it came back
    assert [sig[0][0] for sig in s.lathe_cached_shapes] == [3, 1]
    with pytest.raises(lathe.InvalidArgument, match="max_cached_shapes"):
        make_session(lathe, models["mlp"], cache, **{"lathe.max_cached_shapes": "0"})


def test_family_refused_falls_back_per_signature(models, cache, monkeypatch):
    """Where lathe.compile refuses the unbound model as unsupported, the session compiles per signature;
    a shape the family refuses at run time is compiled on its own, the other shapes stay on the family.
    (Both refusals are faked: no model at hand triggers them.)"""
    import lathe.session as session
    real = session._lathe_compile

    def refusing(path, shapes=None, backend="cpu", **kw):
        if shapes is None and backend != "interp":
            raise lathe.LatheError("a model compiled for every shape: not supported here (faked)", "unsupported")
        return real(path, shapes=shapes, backend=backend, **kw)
    rng = np.random.default_rng(7)
    ref = onnxruntime.InferenceSession(models["mlp"], providers=["CPUExecutionProvider"])
    xs = {n: rng.standard_normal((n, 16)).astype(np.float32) for n in (2, 3)}
    with monkeypatch.context() as mp:
        mp.setattr(session, "_lathe_compile", refusing)
        s = make_session(lathe, models["mlp"], cache)
        assert s.lathe_shape_mode == "per-signature" and s.lathe_compile_count == 0
        for n in (2, 3, 2):
            _close(s.run(None, {"x": xs[n]}), ref.run(None, {"x": xs[n]}), f"per signature, batch {n}")
        assert s.lathe_compile_count == 2

    s = make_session(lathe, models["mlp"], cache)
    fam = s._family
    family_run = fam._run_selected if fam._selects else fam._run_tensors

    def refuse_batch_3(arrays):
        if arrays[0].shape[0] == 3:
            raise lathe.LatheError("batch 3: not supported by the family (faked)", "unsupported")
        return family_run(arrays)
    fam._run_selected = fam._run_tensors = refuse_batch_3
    for n in (2, 3, 2, 3):
        _close(s.run(None, {"x": xs[n]}), ref.run(None, {"x": xs[n]}), f"family, batch {n}")
    assert s.lathe_shape_mode == "family" and s._family is fam
    assert s.lathe_compile_count == 2 and s.lathe_cached_shapes == [((3, 16),)]


def test_free_dimension_override(models, cache):
    results = []
    for ort in (onnxruntime, lathe):
        so = ort.SessionOptions()
        so.add_free_dimension_override_by_name("batch", 3)
        so.add_session_config_entry("lathe.cache_dir", cache)
        s = ort.InferenceSession(models["mlp"], so, providers=["CPUExecutionProvider"])
        results.append(([i.shape for i in s.get_inputs()], [o.shape for o in s.get_outputs()]))
        with pytest.raises(Exception, match="Got invalid dimensions for input: x"):
            s.run(None, {"x": np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)})
    assert results[0] == results[1] == ([[3, 16]], [[3, 10], [3]])


class DLPackOnly:
    """A CPU tensor seen only through the DLPack protocol (no __array__, not a numpy array)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_feeds_read_in_place(models, cache):
    from lathe.session import _as_array
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    a = _as_array("x", DLPackOnly(x), np.dtype(np.float32))
    assert np.shares_memory(a, x)  # contiguous: no copy
    f = np.asfortranarray(x)
    assert not np.shares_memory(_as_array("x", DLPackOnly(f), np.dtype(np.float32)), f)  # copied to C order
    s = make_session(lathe, models["mlp"], cache)
    ref = onnxruntime.InferenceSession(models["mlp"], providers=["CPUExecutionProvider"])
    _close(s.run(None, {"x": DLPackOnly(x)}), ref.run(None, {"x": x}), "DLPack feed")
    _close(s.run(None, {"x": DLPackOnly(f)}), ref.run(None, {"x": x}), "Fortran-order DLPack feed")
    out = s.run(["probs"], {"x": x})[0]
    assert np.shares_memory(np.from_dlpack(out), out)


def test_dlpack_torch(models, cache):
    torch = pytest.importorskip("torch")
    from lathe.session import _as_array
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    t = torch.from_numpy(x.copy())
    assert np.shares_memory(_as_array("x", t, np.dtype(np.float32)), t.numpy())
    s = make_session(lathe, models["mlp"], cache)
    probs, idx = s.run(None, {"x": t})
    ref = onnxruntime.InferenceSession(models["mlp"], providers=["CPUExecutionProvider"]).run(None, {"x": x})
    _close([probs, idx], ref, "torch feed")
    back = torch.from_dlpack(probs)
    assert back.data_ptr() == probs.ctypes.data
    with pytest.raises(lathe.InvalidArgument, match="Unexpected input data type"):
        s.run(None, {"x": t.double()})


def test_iobinding_pointer_input_and_gpu_refused(models, cache):
    s = make_session(lathe, models["mlp"], cache)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    out = np.zeros((2, 10), np.float32)
    b = s.io_binding()
    b.bind_input("x", "cpu", 0, np.float32, [2, 16], x.ctypes.data)
    b.bind_ortvalue_output("probs", lathe.OrtValue.ortvalue_from_numpy(out))
    s.run_with_iobinding(b)
    _close([out], s.run(["probs"], {"x": x}), "pointer-bound input, OrtValue-bound output")
    assert b.get_outputs()[0].numpy() is out
    with pytest.raises(lathe.InvalidArgument, match="a GPU pointer, but this session runs on the CPU"):
        b.bind_input("x", "cuda", 0, np.float32, [2, 16], x.ctypes.data)
    with pytest.raises(lathe.InvalidArgument, match="GPU memory, but this session runs on the CPU"):
        b.bind_output("probs", "cuda")
    with pytest.raises(RuntimeError, match="Failed to find NodeArg with name: nope"):
        b.bind_cpu_input("nope", x)
    b.bind_output("probs", "cpu", 0, np.float64, [2, 10], np.zeros((2, 10)).ctypes.data)
    with pytest.raises(lathe.InvalidArgument, match="Unexpected output data type"):
        s.run_with_iobinding(b)


class FakeCuda:
    """A tensor that says it lives on CUDA device `dev` (DLPack): __dlpack__ gives a capsule over host memory
    marked as that device (GPU memory stands in for, below), or fails when `capsule` is False."""

    def __init__(self, a, dev=(2, 0), capsule=True):
        self._a, self._dev, self._capsule = a, dev, capsule

    def __dlpack__(self, **kwargs):
        from lathe import _dlpack
        if not self._capsule:
            raise AssertionError("a session on the CPU must not read a GPU tensor")
        return _dlpack.export(self._a.ctypes.data, self._a.shape, self._a.dtype, self._dev, self._a)

    def __dlpack_device__(self):
        return self._dev


def test_gpu_memory_refused_on_cpu(models, cache):
    """A session on the CPU refuses GPU memory, naming the input, without reading it."""
    s = make_session(lathe, models["mlp"], cache)
    x = np.zeros((2, 16), np.float32)
    for dev, name in (((2, 0), "cuda:0"), ((13, 0), "cuda_managed:0"), ((2, 1), "cuda:1")):
        with pytest.raises(lathe.InvalidArgument, match=rf"input 'x': a tensor in GPU memory \({name}\), but this "
                                                       r"session runs on the CPU \(providers \['CPUExecutionProvider'\]\)"):
            s.run(None, {"x": FakeCuda(x, dev, capsule=False)})
        with pytest.raises(lathe.InvalidArgument, match="but this session runs on the CPU"):
            s.run_with_ort_values(None, {"x": FakeCuda(x, dev, capsule=False)})
    b = s.io_binding()
    b.bind_cpu_input("x", FakeCuda(x, capsule=False))
    b.bind_output("probs")
    with pytest.raises(lathe.InvalidArgument, match="input 'x': a tensor in GPU memory"):
        s.run_with_iobinding(b)
    with pytest.raises(lathe.InvalidArgument, match="device_id 1: lathe runs on CUDA device 0"):
        b.bind_input("x", "cuda", 1, np.float32, [2, 16], 1 << 20)
    with pytest.raises(lathe.Fail, match="device_type 'dml'"):
        b.bind_output("probs", "dml")
    # the CPU model's own call: host memory only
    from lathe.session import _as_array
    with pytest.raises(lathe.InvalidArgument, match="a tensor on cuda:0: this call takes host memory"):
        _as_array("x", FakeCuda(x, capsule=False), np.dtype(np.float32))
    if "CUDAExecutionProvider" not in lathe.get_available_providers():
        with pytest.raises(lathe.LatheError, match="CUDA backend unavailable"):
            lathe.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "cuda", 0)
        with pytest.raises(lathe.LatheError, match="CUDA backend unavailable"):
            lathe.OrtValue.ortvalue_from_numpy(x, "cuda", 0)


def test_dlpack_ctypes(models):
    """The DLPack reader and writer GPU values go through, checked on host memory with numpy (and torch)."""
    import gc
    from lathe import _dlpack
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = _dlpack.read(a)
    assert (t.ptr, t.shape, t.strides, t.dtype, t.device, t.contiguous) == (a.ctypes.data, (2, 3, 4), None,
                                                                             np.dtype(np.float32), (1, 0), True)
    v = _dlpack.read(a[:, :, ::2])
    assert v.shape == (2, 3, 2) and v.strides == (12, 4, 2) and not v.contiguous
    assert _dlpack.read(a[:1]).contiguous and _dlpack.read(a[:, 1:2, :]).shape == (2, 1, 4)
    for dt in (np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_, np.complex64):
        b = np.ones(5, dt)
        assert _dlpack.read(b).dtype == np.dtype(dt)
        back = np.from_dlpack(FakeCuda(b, (1, 0)))
        assert back.dtype == np.dtype(dt) and back.ctypes.data == b.ctypes.data
    del back
    gc.collect()
    n0 = _dlpack.live_exports()
    back = np.from_dlpack(FakeCuda(a, (1, 0)))  # consumed: released when the consumer is done
    assert np.shares_memory(back, a) and _dlpack.live_exports() == n0 + 1
    del back
    gc.collect()
    assert _dlpack.live_exports() == n0
    cap = FakeCuda(a, (1, 0)).__dlpack__()  # never consumed: released by the capsule
    assert _dlpack.live_exports() == n0 + 1
    del cap
    gc.collect()
    assert _dlpack.live_exports() == n0
    with pytest.raises(ValueError, match="not a DLPack capsule"):
        _dlpack.read(type("X", (), {"__dlpack__": lambda self: 3})())
    try:
        import torch
    except ImportError:
        return
    tt = torch.from_dlpack(FakeCuda(a, (1, 0)))
    assert tt.data_ptr() == a.ctypes.data and tuple(tt.shape) == (2, 3, 4)
    tr = _dlpack.read(torch.arange(6, dtype=torch.int64).reshape(2, 3).t())
    assert tr.dtype == np.int64 and tr.shape == (3, 2) and tr.strides == (1, 3) and not tr.contiguous


@pytest.fixture
def gpu_standin(monkeypatch):
    """GPU memory stood in for by host memory, on this machine: lathe's device calls are replaced (allocation by
    ctypes buffers, copies by memmove) and lathe_compiled_run_device by lathe_compiled_run_buffers, so the
    session's GPU paths (feeds read through DLPack, IO binding of 'cuda' pointers and OrtValues, outputs
    allocated on the device and exported through DLPack) run end to end on a model compiled for the CPU."""
    from lathe import _capi, session
    lib = _capi.load()

    class Lib:
        def __getattr__(self, name):
            return getattr(lib, name)

        @staticmethod
        def lathe_compiled_run_device(h, ins, ni, outs, no, stream):
            Lib.device_runs += 1
            return lib.lathe_compiled_run_buffers(h, ins, ni, outs, no)

    Lib.device_runs = 0
    buffers = {}

    class Alloc:
        __slots__ = ("ptr",)

        def __init__(self, nbytes):
            buf = ctypes.create_string_buffer(max(nbytes, 1))
            self.ptr = ctypes.addressof(buf)
            buffers[self.ptr] = buf

    import ctypes
    compile_for = session._lathe_compile
    monkeypatch.setattr(session, "_lathe_compile", lambda *a, **k: compile_for(*a, **dict(k, backend="cpu")))
    monkeypatch.setattr(_capi, "_lib", Lib())
    monkeypatch.setattr(session, "_cuda_device", lambda: 1)
    monkeypatch.setattr(session, "_DeviceAlloc", Alloc)
    monkeypatch.setattr(session, "_dev_copy", lambda dst, src, n, kind, what: ctypes.memmove(dst, src, n) if n else None)
    return Lib


def _gpu_session(models, cache, name="conv"):
    s = make_session(lathe, models[name], cache)
    s._backend = "cuda"  # compiled for the CPU; its runs on "GPU" memory go to run_buffers (gpu_standin)
    return s


def test_gpu_paths_standin(models, cache, gpu_standin):
    from lathe import _dlpack
    s = _gpu_session(models, cache)
    ref = onnxruntime.InferenceSession(models["conv"], providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(31)
    img = rng.standard_normal((2, 3, 12, 12)).astype(np.float32)
    sc = np.array([0.5], np.float32)
    want = ref.run(None, {"img": img, "s": sc})
    # run(): GPU feeds read in place, outputs as numpy arrays (onnxruntime's contract); a host feed mixed in
    n0 = gpu_standin.device_runs
    _close(s.run(None, {"img": FakeCuda(img), "s": FakeCuda(sc)}), want, "GPU feeds")
    _close(s.run(None, {"img": FakeCuda(img), "s": sc}), want, "GPU and host feeds")
    assert gpu_standin.device_runs == n0 + 2
    assert s.lathe_last_run_copies == {k: 0 for k in ("host_to_device", "device_to_host", "device_to_device",
                                                       "host_to_device_bytes", "device_to_host_bytes",
                                                       "device_to_device_bytes")}
    # run_with_ort_values on GPU feeds: GPU outputs, exported through DLPack without a copy
    y, = s.run_with_ort_values(None, {"img": lathe.OrtValue.ortvalue_from_numpy(img, "cuda", 0), "s": FakeCuda(sc)})
    assert y.device_name() == "cuda" and y.shape() == [2, 8] and y.data_type() == "tensor(float)"
    assert y.element_type() == 1 and y.tensor_size_in_bytes() == 64 and "cuda" in repr(y)
    assert y.__dlpack_device__() == (2, 0)
    t = _dlpack.read(y)
    assert t.ptr == y.data_ptr() and t.shape == (2, 8) and t.device == (2, 0) and t.dtype == np.float32
    _close([y.numpy()], want, "GPU OrtValue output")
    del t
    # IO binding: 'cuda' pointers in and out, written in place
    img_dev, out_dev = img.copy(), np.full((2, 8), np.nan, np.float32)  # their addresses stand for GPU memory
    b = s.io_binding()
    b.bind_input("img", "cuda", 0, np.float32, [2, 3, 12, 12], img_dev.ctypes.data)
    b.bind_ortvalue_input("s", lathe.OrtValue.ortvalue_from_numpy(sc, "cuda", 0))
    b.bind_output("y", "cuda", 0, np.float32, [2, 8], out_dev.ctypes.data)
    s.run_with_iobinding(b)
    _close([out_dev], want, "IO-bound GPU output")
    got = b.get_outputs()[0]
    assert got.device_name() == "cuda" and got.data_ptr() == out_dev.ctypes.data
    _close(b.copy_outputs_to_cpu(), want, "copy_outputs_to_cpu")
    # an output the run allocates on the GPU; a GPU OrtValue bound as output; a host output among GPU inputs
    b.bind_output("y", "cuda")
    s.run_with_iobinding(b)
    got = b.get_outputs()[0]
    assert got.device_name() == "cuda" and got.data_ptr() != out_dev.ctypes.data
    _close([got.numpy()], want, "run-allocated GPU output")
    ov = lathe.OrtValue.ortvalue_from_shape_and_type([2, 8], np.float32, "cuda", 0)
    assert ov.device_name() == "cuda" and not ov.numpy().any()
    b.bind_ortvalue_output("y", ov)
    s.run_with_iobinding(b)
    assert b.get_outputs()[0].data_ptr() == ov.data_ptr()
    _close([ov.numpy()], want, "GPU OrtValue bound as output")
    host_out = np.zeros((2, 8), np.float32)
    b.bind_output("y", "cpu", 0, np.float32, [2, 8], host_out.ctypes.data)
    s.run_with_iobinding(b)
    _close([host_out], want, "host output of a GPU run")
    b.bind_output("y")
    s.run_with_iobinding(b)
    assert b.get_outputs()[0].device_name() == "cpu"
    _close([b.get_outputs()[0].numpy()], want, "unbound host output of a GPU run")
    # a wrong bound output; a strided or misplaced GPU feed; the wrong dtype, as for host feeds
    b.bind_output("y", "cuda", 0, np.float32, [2, 9], out_dev.ctypes.data)
    with pytest.raises(lathe.InvalidArgument, match=r"shape verification failed. Current shape:\{2,9\}"):
        s.run_with_iobinding(b)
    with pytest.raises(lathe.InvalidArgument, match="Unexpected input data type"):
        s.run(None, {"img": FakeCuda(img.astype(np.float64)), "s": sc})
    with pytest.raises(lathe.InvalidArgument, match="Got invalid dimensions for input: img"):
        s.run(None, {"img": FakeCuda(img[:1]), "s": sc})
    with pytest.raises(lathe.InvalidArgument, match="lathe runs on CUDA device 0"):
        s.run(None, {"img": FakeCuda(img, (2, 1)), "s": sc})

    class Strided(FakeCuda):
        def __dlpack__(self, **kwargs):
            cap = self._a.__dlpack__()
            mt = _dlpack.DLManagedTensor.from_address(_dlpack._get_pointer(cap, b"dltensor"))
            mt.dl_tensor.device = _dlpack.DLDevice(2, 0)  # numpy's capsule of a strided view, "on the GPU"
            return cap
    wide = np.zeros((2, 3, 12, 24), np.float32)
    with pytest.raises(lathe.InvalidArgument, match="a strided GPU tensor"):
        s.run(None, {"img": Strided(wide[..., ::2]), "s": sc})
    # update_inplace and numpy() of a GPU OrtValue copy through the host
    ov2 = lathe.OrtValue.ortvalue_from_numpy(np.zeros(3, np.int64), "cuda", 0)
    ov2.update_inplace(np.arange(3))
    assert ov2.numpy().tolist() == [0, 1, 2]
    with pytest.raises(lathe.InvalidArgument, match="update_inplace"):
        ov2.update_inplace(np.arange(4))
    assert lathe.OrtValue.from_dlpack(FakeCuda(sc)).device_name() == "cuda"


def test_gpu_symbolic_and_runtime_shapes_standin(models, cache, gpu_standin, tmp_path):
    """A symbolic model's GPU run takes the family (its plan for the run's shapes selected first): no compile
    per signature; an output whose shape is known only at run time is refused on GPU memory."""
    s = _gpu_session(models, cache, "mlp")
    assert s.lathe_shape_mode == "family" and s.lathe_compile_count == 1
    ort = onnxruntime.InferenceSession(models["mlp"], providers=["CPUExecutionProvider"])
    for n in (3, 5, 3):
        x = np.random.default_rng(n).standard_normal((n, 16)).astype(np.float32)
        _close(s.run(None, {"x": FakeCuda(x)}), ort.run(None, {"x": x}), f"batch {n}, GPU feed")
        _close(s.run(None, {"x": x}), ort.run(None, {"x": x}), f"batch {n}, host feed (the family)")
    assert s.lathe_shape_mode == "family" and s.lathe_compile_count == 1
    assert s.lathe_cached_shapes == []
    # NonZero: an output of a run-time shape
    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"])], "nz",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("nz", TensorProto.INT64, [2, None])])
    nz = _save(tmp_path / "nz.onnx", g)
    s = make_session(lathe, nz, cache)
    s._backend = "cuda"
    with pytest.raises(lathe.LatheError, match=r"output\(s\) \['nz'\]: the shape is known only at run time"):
        s.run(None, {"x": FakeCuda(np.ones((2, 3), np.float32))})


def test_providers_and_options(models, cache):
    assert "CPUExecutionProvider" in lathe.get_available_providers()
    assert lathe.get_device() in ("CPU", "GPU")
    assert lathe.GraphOptimizationLevel.ORT_ENABLE_ALL == onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL.value
    so = lathe.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED  # onnxruntime's enum
    assert so.graph_optimization_level is lathe.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    with pytest.raises(TypeError):
        so.graph_optimization_level = "fast"
    with pytest.raises(AttributeError):
        so.intra_op_num_thread = 2  # a typo is an error, as onnxruntime's
    so.add_session_config_entry("lathe.cache_dir", cache)
    s = lathe.InferenceSession(models["conv"], so, providers=[("CPUExecutionProvider", {"arena_extend_strategy": 1})])
    assert s._opt_level == 2 and s.get_providers() == ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in lathe.get_available_providers():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = lathe.InferenceSession(models["conv"], so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
        assert s.get_providers() == ["CPUExecutionProvider"] and s.lathe_backend == "cpu"
        assert any("CUDAExecutionProvider" in str(x.message) for x in w)
    with pytest.raises(ValueError, match="should be the same length"):
        lathe.InferenceSession(models["conv"], so, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    with pytest.raises(lathe.NoSuchFile, match="File doesn't exist"):
        lathe.InferenceSession(os.path.join(cache, "missing.onnx"))
    with pytest.raises(lathe.InvalidProtobuf, match="<model bytes>"):
        lathe.InferenceSession(b"not a model")
    with pytest.raises(lathe.Fail, match="terminate"):
        ro = lathe.RunOptions()
        ro.terminate = True
        s.run(None, {}, ro)


def test_cuda_provider(models, cache):
    """On a GPU machine: the CUDA provider compiles for the GPU (inputs and outputs copied per run) and
    agrees with onnxruntime on the CPU, IO binding included; elsewhere it falls back (tested above)."""
    if "CUDAExecutionProvider" not in lathe.get_available_providers():
        pytest.skip("no CUDA device, driver or NVRTC here")
    assert lathe.get_device() == "GPU"
    so = lathe.SessionOptions()
    so.add_session_config_entry("lathe.cache_dir", cache)
    s = lathe.InferenceSession(models["mlp"], so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert s.get_providers() == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert s.get_provider_options()["CUDAExecutionProvider"]["device_id"] == "0"
    ref = onnxruntime.InferenceSession(models["mlp"], providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(12)
    for n in (2, 9, 2):
        x = rng.standard_normal((n, 16)).astype(np.float32)
        got, want = s.run(None, {"x": x}), ref.run(None, {"x": x})
        np.testing.assert_allclose(got[0], want[0], rtol=1e-3, atol=1e-5)
        np.testing.assert_array_equal(got[1], want[1])
    assert s.lathe_backend == "cuda" and s.lathe_shape_mode == "family" and s.lathe_compile_count == 1
    x = rng.standard_normal((4, 16)).astype(np.float32)
    out = np.full((4, 10), np.nan, np.float32)
    b = s.io_binding()
    b.bind_cpu_input("x", x)
    b.bind_output("probs", "cpu", 0, np.float32, [4, 10], out.ctypes.data)
    s.run_with_iobinding(b)
    np.testing.assert_allclose(out, ref.run(["probs"], {"x": x})[0], rtol=1e-3, atol=1e-5)
    with pytest.raises(lathe.InvalidArgument, match="device_id"):
        lathe.InferenceSession(models["mlp"], so, providers=[("CUDAExecutionProvider", {"device_id": 1})])
