"""test_symbolic_shapes.py — a model with symbolic dims compiled once, run at many shapes.

lathe.compile on a model whose inputs keep symbolic dims (none bound) returns one compiled model for
every shape: each new input shape runs the host pipeline at that shape (milliseconds) and takes a
bucket's module, whose kernels read the extents that differ as run-time scalars, so no C compiler
runs for a shape whose bucket exists (src/compile/family.h). Checked here, on the zoo's bert_ci
(batch and sequence symbolic) and pplcnet_ci (batch, height and width symbolic):
  - outputs equal the reference interpreter's at every shape (fp32 tolerances), new bucket or not;
  - shapes of one bucket, batch and sequence (or image size) both varying, run with the C compiler
    invoked only for the first (the compiler is a wrapper script that logs each run; no cache folder,
    so every build is a real compiler run);
  - the report lists the buckets and the shapes each took;
  - a shape outside a range given as `sequence=1..64` and named dims that disagree between inputs
    are refused with one line naming the input and dim.
The library comes from $LATHE_LIBRARY (default build/liblathe.so).
"""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
os.environ.setdefault("LATHE_LIBRARY", os.path.join(ROOT, "build", "liblathe.so"))
pytest.importorskip("onnx")

import lathe  # noqa: E402
import exported  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cc_log import compiles, counting_cc  # noqa: E402


def bert_feeds(batch, seq, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 100, size=(batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - 3:] = 0  # padding at the end
    return {"input_ids": ids, "attention_mask": mask}


def check_against_interpreter(path, model, feeds):
    ref = lathe.compile(path, backend="interp").run(feeds)
    got = model.run(feeds)
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-5, err_msg=name)
        assert got[name].shape == ref[name].shape


@pytest.fixture(scope="module")
def bert():
    return exported.build("bert_ci")


def test_three_shapes_one_compile(bert, tmp_path):
    cc, log = counting_cc(tmp_path)
    model = lathe.compile(bert, cache_dir=False, cc=cc)
    assert compiles(log) == 0  # nothing is built before the first run
    check_against_interpreter(bert, model, bert_feeds(4, 33, 0))
    first = compiles(log)
    assert first >= 1
    for batch, seq in ((4, 57), (2, 41), (3, 50), (8, 97), (4, 33)):  # batch and sequence both vary
        check_against_interpreter(bert, model, bert_feeds(batch, seq, seq))
    assert compiles(log) == first, "a shape of an existing bucket ran the C compiler"
    report = model.report
    assert "bucket 1: made at batch=4, sequence=33" in report, report
    assert "buckets: 1" in report, report
    assert "with run-time scalars" in report


def test_every_shape_correct_across_buckets(bert, tmp_path):
    model = lathe.compile(bert, cache_dir=str(tmp_path / "cache"))
    # the plans share one workspace: a bigger shape grows it (dropping the cached plans, rebuilt when a
    # shape comes back), a smaller one runs in it
    for batch, seq in ((1, 8), (2, 16), (3, 7), (1, 1), (5, 64), (2, 16), (1, 8)):
        check_against_interpreter(bert, model, bert_feeds(batch, seq, batch * seq))
    assert "buckets:" in model.report
    assert "one for every plan" in model.report, model.report


def test_image_sizes(tmp_path):
    """Image sizes of every residue share one bucket (batch 1 is its own)."""
    path = exported.build("pplcnet_ci")
    cc, log = counting_cc(tmp_path)
    model = lathe.compile(path, cache_dir=False, cc=cc)
    ref_model = lathe.compile(path, backend="interp")
    rng = np.random.default_rng(3)
    first = None
    for shape in ((2, 3, 64, 96), (3, 3, 48, 40), (2, 3, 33, 45), (4, 3, 65, 77), (1, 3, 96, 64), (2, 3, 64, 96)):
        x = rng.standard_normal(shape).astype(np.float32)
        ref = ref_model.run({"x": x})
        got = model.run({"x": x})
        for name in ref:
            np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-5, err_msg=f"{name} at {shape}")
        if first is not None and shape[0] > 1:
            assert compiles(log) == first, f"{shape} ran the C compiler: {model.report}"
        first = compiles(log)
    assert "buckets: 2" in model.report, model.report


def test_range_refused(bert):
    model = lathe.compile(bert, dims="sequence=1..64", cache_dir=False)
    with pytest.raises(lathe.LatheError) as e:
        model.run(bert_feeds(1, 65, 0))
    msg = str(e.value)
    assert "sequence" in msg and "65" in msg and "1..64" in msg and "input_ids" in msg, msg


def test_named_dims_must_agree(bert):
    model = lathe.compile(bert, cache_dir=False)
    feeds = bert_feeds(2, 16, 0)
    feeds["attention_mask"] = np.ones((2, 17), np.int64)
    with pytest.raises(lathe.LatheError) as e:
        model.run(feeds)
    msg = str(e.value)
    assert "sequence" in msg and "16" in msg and "17" in msg and "attention_mask" in msg, msg
