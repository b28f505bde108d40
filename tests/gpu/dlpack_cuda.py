#!/usr/bin/env python3
"""dlpack_cuda.py — GPU tensors in and out of an InferenceSession on the CUDA provider with no host copy, for
tests/gpu/run.sh (a script: the GPU machine may lack pytest). Needs torch with CUDA (else one SKIP row).

Per model (a MatMul + Add + Relu built here, the zoo's resnet18_ci at batch 4 and bert_ci at batch 2 x
sequence 32, their dims bound with add_free_dimension_override_by_name):
  * reference: onnxruntime on the CPU when installed, else lathe's CPU provider (and, for the small model,
    numpy); every GPU path must agree with it (rtol 1e-3, atol 1e-4) and with the same session's
    host-memory run;
  * run() with torch CUDA feeds (computed by torch just before, on its stream: the run must wait for them);
  * IO binding: bind_input / bind_output with device_type 'cuda' on torch tensors' data_ptr(): outputs
    written into the bound tensors (the OrtValue's data_ptr is the bound one), and the run's copies
    (lathe_compiled_last_run_copies) device to device only where the model has no host step and no
    checked index input (bert_ci's token ids are read back to check their range: reported);
  * outputs allocated by the run on the GPU (bind_output(name, 'cuda'), run_with_ort_values on CUDA feeds)
    taken by torch.from_dlpack with no copy (same data_ptr), alive after the session and OrtValue are gone;
    OrtValues made on 'cuda' (ortvalue_from_numpy, ortvalue_from_shape_and_type) bound both ways;
    a host feed mixed with GPU ones;
  * refusals on the real driver: a strided CUDA tensor, host memory (pageable and pinned) bound as 'cuda'
    (the driver's pointer attributes), a bound buffer smaller than the output (reported as a note);
  * timing: median of --reps runs of the host-memory path (numpy in, numpy out: copies through the host)
    and of the IO-bound GPU path, and their ratio;
  * the small model with its batch symbolic: torch CUDA tensors at three batch sizes run on the family
    (one compile, its plan for each shape selected), IO-bound with no copy through the host.
Prints one summary row.

usage: dlpack_cuda.py --lathe BUILD/lathe [--summary FILE] [--reps N]   (exit 1 when a check fails)
"""
import argparse
import gc
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
LABEL = "dlpack (cuda)"


def row(summary, status, text):
    line = f"{LABEL:<28} {status:<8} {text}"
    print(line)
    if summary:
        with open(summary, "a") as f:
            f.write(line + "\n")


def small_model(d):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((256, 512)) * 0.05).astype(np.float32)
    b = (rng.standard_normal(512) * 0.1).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"]), helper.make_node("ReduceSum", ["y"], ["s"], axes=[1], keepdims=0)],
        "mm_add_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 512]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch"])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    m.ir_version = 8
    path = os.path.join(d, "mm_add_relu.onnx")
    onnx.save(m, path)

    def reference(feeds):
        y = np.maximum(feeds["x"] @ w + b, 0)
        return [y, y.sum(axis=1)]
    return path, {"batch": 64}, {"x": np.random.default_rng(6).standard_normal((64, 256)).astype(np.float32)}, reference


def zoo_model(tag, dims):
    import exported
    path = exported.build(tag)
    feeds = exported.make_inputs(tag, seed=3, path=path)
    # the exporter's example shapes, re-drawn at the dims bound here
    rng = np.random.default_rng(7)
    out = {}
    for name, a in feeds.items():
        shape = list(a.shape)
        if tag == "bert_ci":
            shape = [dims["batch"], dims["sequence"]]
            if name == "input_ids":
                out[name] = rng.integers(0, 1000, shape).astype(a.dtype)
            else:
                m = np.ones(shape, a.dtype)
                m[:, -4:] = 0
                out[name] = m
        else:
            shape[0] = dims["batch"]
            out[name] = rng.standard_normal(shape).astype(a.dtype)
    return path, dims, out, None


def close(got, want, what, failed, rtol=1e-3, atol=1e-4):
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        failed.append(f"{what}: {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}")
        return
    if want.dtype.kind in "fc":
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
            failed.append(f"{what}: max abs error {err:.3g}")
    elif not np.array_equal(got, want):
        failed.append(f"{what}: differs")


def median_ms(f, reps):
    for _ in range(3):
        f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def expect_error(what, f, pattern, failed, lathe):
    import re
    try:
        f()
    except lathe.LatheError as e:
        if not re.search(pattern, str(e)):
            failed.append(f"{what}: message {str(e)[:160]!r} lacks {pattern!r}")
        else:
            print(f"  refused as expected: {what}: {str(e)[:150]}")
        return
    failed.append(f"{what}: not refused")


def check_model(lathe, torch, ort, name, path, dims, feeds, reference, cache, reps, failed, notes):
    print(f"== {name}")
    so = lathe.SessionOptions()
    for k, v in dims.items():
        so.add_free_dimension_override_by_name(k, v)
    if cache:
        so.add_session_config_entry("lathe.cache_dir", cache)
    t0 = time.perf_counter()
    sess = lathe.InferenceSession(path, so, providers=["CUDAExecutionProvider"])
    print(f"  compiled for the GPU in {time.perf_counter() - t0:.1f} s; backend {sess.lathe_backend}, "
          f"{sess.lathe_shape_mode}")
    if sess.lathe_backend != "cuda":
        failed.append(f"{name}: the session runs on {sess.lathe_backend}, not cuda")
        return None
    onames = [o.name for o in sess.get_outputs()]
    # the reference: onnxruntime on the CPU (or lathe's CPU provider), and numpy for the small model
    if ort is not None:
        osess = ort.SessionOptions()
        for k, v in dims.items():
            osess.add_free_dimension_override_by_name(k, v)
        ref = ort.InferenceSession(path, osess, providers=["CPUExecutionProvider"]).run(None, feeds)
    else:
        ref = lathe.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    if reference is not None:
        for k, (a, b) in enumerate(zip(ref, reference(feeds))):
            close(a, b.astype(a.dtype), f"{name} reference vs numpy {onames[k]}", failed)
    host = sess.run(None, feeds)
    for k, (g, w) in enumerate(zip(host, ref)):
        close(g, w, f"{name} host-memory run {onames[k]}", failed)
    host_copies = dict(sess.lathe_last_run_copies or {})
    # torch CUDA feeds, computed just before the run on torch's stream: run() returns numpy arrays
    tfeeds = {n: (torch.from_numpy(a).cuda() * 1 if a.dtype.kind == "f" else torch.from_numpy(a).cuda() + 0)
              for n, a in feeds.items()}
    got = sess.run(None, tfeeds)
    for k, (g, w) in enumerate(zip(got, ref)):
        close(g, w, f"{name} run() on CUDA feeds {onames[k]}", failed)
        close(g, host[k], f"{name} run() on CUDA feeds vs the host-memory run {onames[k]}", failed, 1e-5, 1e-6)
    # IO binding into torch tensors
    touts = [torch.empty(tuple(r.shape), dtype=getattr(torch, str(r.dtype)), device="cuda") for r in ref]
    b = sess.io_binding()
    for n, t in tfeeds.items():
        b.bind_input(n, "cuda", 0, feeds[n].dtype, list(t.shape), t.data_ptr())
    for n, t, r in zip(onames, touts, ref):
        b.bind_output(n, "cuda", 0, r.dtype, list(t.shape), t.data_ptr())
    sess.run_with_iobinding(b)
    copies = dict(sess.lathe_last_run_copies or {})
    for k, (t, ov) in enumerate(zip(touts, b.get_outputs())):
        close(t.cpu().numpy(), ref[k], f"{name} IO-bound torch output {onames[k]}", failed)
        if ov.data_ptr() != t.data_ptr() or ov.device_name() != "cuda":
            failed.append(f"{name}: the bound output {onames[k]} is not the torch tensor's memory")
    through_host = copies.get("host_to_device_bytes", -1) + copies.get("device_to_host_bytes", -1)
    io_bytes = sum(a.nbytes for a in feeds.values()) + sum(r.nbytes for r in ref)
    print(f"  copies of a host-memory run: {host_copies}")
    print(f"  copies of an IO-bound GPU run: {copies}")
    if name == "mm_add_relu" and (copies.get("host_to_device") != 0 or copies.get("device_to_host") != 0):
        failed.append(f"{name}: the GPU run copied through the host: {copies}")
    if not 0 <= through_host < io_bytes:
        failed.append(f"{name}: the GPU run moved {through_host} bytes through the host (inputs and outputs: "
                      f"{io_bytes})")
    if through_host:
        notes.append(f"{name} reads {through_host} B back (checked indices / host steps)")
    # outputs allocated by the run on the GPU, to torch through DLPack (no copy), alive after the session
    b2 = sess.io_binding()
    for n, t in tfeeds.items():
        b2.bind_ortvalue_input(n, lathe.OrtValue.from_dlpack(t))
    for n in onames:
        b2.bind_output(n, "cuda")
    sess.run_with_iobinding(b2)
    ovs = b2.get_outputs()
    tt = [torch.from_dlpack(ov) for ov in ovs]
    for k, (t, ov) in enumerate(zip(tt, ovs)):
        if not t.is_cuda or t.data_ptr() != ov.data_ptr():
            failed.append(f"{name}: torch.from_dlpack({onames[k]}) copied (or is not on the GPU)")
    # run_with_ort_values on GPU feeds: GPU outputs
    rv = sess.run_with_ort_values(None, {n: lathe.OrtValue.ortvalue_from_numpy(a, "cuda", 0) for n, a in feeds.items()})
    if any(v.device_name() != "cuda" for v in rv):
        failed.append(f"{name}: run_with_ort_values on GPU feeds gave outputs on the host")
    rt = [torch.from_dlpack(v) for v in rv]
    # an OrtValue made on 'cuda' bound as output; a host feed among GPU ones
    ovo = [lathe.OrtValue.ortvalue_from_shape_and_type(list(r.shape), r.dtype, "cuda", 0) for r in ref]
    b3 = sess.io_binding()
    first = True
    for n, a in feeds.items():
        if first:
            b3.bind_cpu_input(n, a)  # the host one: copied up for the run
            first = False
        else:
            b3.bind_ortvalue_input(n, lathe.OrtValue.from_dlpack(tfeeds[n]))
    for n, ov in zip(onames, ovo):
        b3.bind_ortvalue_output(n, ov)
    sess.run_with_iobinding(b3)
    for k, ov in enumerate(ovo):
        close(ov.numpy(), ref[k], f"{name} OrtValue on cuda bound as output {onames[k]} (a host feed mixed in)", failed)
    del ovs, b2, rv
    gc.collect()
    for k, (t, u) in enumerate(zip(tt, rt)):
        close(t.cpu().numpy(), ref[k], f"{name} DLPack output {onames[k]} after its OrtValue is gone", failed)
        close(u.cpu().numpy(), ref[k], f"{name} run_with_ort_values output {onames[k]}", failed)
    # timing: host memory in and out vs GPU memory in and out
    t_host = median_ms(lambda: sess.run(None, feeds), reps)
    t_dev = median_ms(lambda: sess.run_with_iobinding(b), reps)
    t_feed = median_ms(lambda: sess.run(None, tfeeds), reps)
    print(f"  median of {reps}: host memory {t_host:.3f} ms, IO-bound GPU memory {t_dev:.3f} ms "
          f"(x{t_host / t_dev:.2f}), run() on CUDA feeds {t_feed:.3f} ms")
    return sess, tfeeds, onames, ref, tt, (t_host, t_dev)


def refusals(lathe, torch, sess, tfeeds, onames, ref, failed, notes):
    print("== refusals")
    n0, t0 = next(iter(tfeeds.items()))
    if t0.dim() == 2:
        wide = torch.zeros((t0.shape[0], 2 * t0.shape[1]), dtype=t0.dtype, device="cuda")
        expect_error("a strided CUDA tensor", lambda: sess.run(None, {n0: wide[:, ::2]}), "strided GPU tensor", failed,
                     lathe)
    host = np.zeros(tuple(t0.shape), np.float32)
    b = sess.io_binding()
    b.bind_input(n0, "cuda", 0, np.float32, list(host.shape), host.ctypes.data)
    for n in onames:
        b.bind_output(n, "cuda")
    expect_error("pageable host memory bound as 'cuda'", lambda: sess.run_with_iobinding(b),
                 r"not CUDA device memory|host memory", failed, lathe)
    pinned = torch.zeros(tuple(t0.shape), dtype=torch.float32, pin_memory=True)
    b.bind_input(n0, "cuda", 0, np.float32, list(pinned.shape), pinned.data_ptr())
    expect_error("pinned host memory bound as 'cuda'", lambda: sess.run_with_iobinding(b), r"host memory", failed,
                 lathe)
    # a bound output buffer smaller than the output: the driver's allocation range (a note, not a failure:
    # how finely a driver reports ranges is its own)
    small = lathe.OrtValue.ortvalue_from_shape_and_type([16], np.float32, "cuda", 0)
    b.bind_input(n0, "cuda", 0, np.float32, list(t0.shape), t0.data_ptr())
    b.bind_output(onames[0], "cuda", 0, ref[0].dtype, list(ref[0].shape), small.data_ptr())
    try:
        sess.run_with_iobinding(b)
        notes.append("a 64-byte buffer bound for a larger output was NOT refused")
    except lathe.LatheError as e:
        print(f"  refused as expected: a buffer too small: {str(e)[:150]}")
        if "past the end" not in str(e):
            failed.append(f"a buffer too small: unexpected message {str(e)[:150]!r}")


def symbolic_family(lathe, torch, path, reference, cache, failed):
    """The small model with its batch left symbolic: GPU tensors at three batch sizes run on the family
    (one compile, no plan per signature), IO-bound into torch tensors with no copy through the host."""
    print("== mm_add_relu, batch symbolic (the family)")
    so = lathe.SessionOptions()
    if cache:
        so.add_session_config_entry("lathe.cache_dir", cache)
    sess = lathe.InferenceSession(path, so, providers=["CUDAExecutionProvider"])
    onames = [o.name for o in sess.get_outputs()]
    for n in (3, 17, 64):
        x = np.random.default_rng(n).standard_normal((n, 256)).astype(np.float32)
        ref = reference({"x": x})
        tx = torch.from_numpy(x).cuda()
        touts = [torch.empty(r.shape, dtype=torch.float32, device="cuda") for r in ref]
        b = sess.io_binding()
        b.bind_input("x", "cuda", 0, np.float32, list(tx.shape), tx.data_ptr())
        for name, t in zip(onames, touts):
            b.bind_output(name, "cuda", 0, np.float32, list(t.shape), t.data_ptr())
        sess.run_with_iobinding(b)
        copies = dict(sess.lathe_last_run_copies or {})
        for k, t in enumerate(touts):
            close(t.cpu().numpy(), ref[k], f"symbolic batch {n}: IO-bound output {onames[k]}", failed)
        got = sess.run(None, {"x": tx})
        for k, g in enumerate(got):
            close(g, ref[k], f"symbolic batch {n}: run() on a CUDA feed {onames[k]}", failed)
        if copies.get("host_to_device") != 0 or copies.get("device_to_host") != 0:
            failed.append(f"symbolic batch {n}: the GPU run copied through the host: {copies}")
    print(f"  shape mode {sess.lathe_shape_mode}, compiles {sess.lathe_compile_count}, "
          f"plans per signature {sess.lathe_cached_shapes}")
    if sess.lathe_shape_mode != "family" or sess.lathe_compile_count != 1 or sess.lathe_cached_shapes:
        failed.append(f"symbolic batch: GPU runs did not stay on the family ({sess.lathe_shape_mode}, "
                      f"{sess.lathe_compile_count} compiles, {sess.lathe_cached_shapes})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    os.environ.setdefault("LATHE_LIBRARY", os.path.join(os.path.dirname(os.path.abspath(a.lathe)), "liblathe.so"))
    try:
        import torch
    except ImportError:
        row(a.summary, "SKIP", "torch is not installed")
        return 0
    if not torch.cuda.is_available():
        row(a.summary, "SKIP", "torch has no CUDA device")
        return 0
    import lathe
    if "CUDAExecutionProvider" not in lathe.get_available_providers():
        row(a.summary, "SKIP", "lathe's CUDA provider is unavailable (driver or NVRTC)")
        return 0
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    cache = os.environ.get("LATHE_CUDA_CACHE")
    failed, notes, times = [], [], {}
    with tempfile.TemporaryDirectory() as d:
        models = [("mm_add_relu",) + small_model(d)]
        for tag, dims in (("resnet18_ci", {"batch": 4}), ("bert_ci", {"batch": 2, "sequence": 32})):
            try:
                models.append((tag,) + zoo_model(tag, dims))
            except Exception as e:  # noqa: BLE001 — the zoo needs onnx; the small model still runs
                notes.append(f"{tag} not built: {e}")
        try:
            symbolic_family(lathe, torch, models[0][1], models[0][4], cache, failed)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            failed.append(f"symbolic batch: {type(e).__name__}: {str(e)[:200]}")
        first = None
        for name, path, dims, feeds, reference in models:
            try:
                r = check_model(lathe, torch, ort, name, path, dims, feeds, reference, cache, a.reps, failed, notes)
            except Exception as e:  # noqa: BLE001 — one model's crash is that model's failure
                import traceback
                traceback.print_exc()
                failed.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
                continue
            if r is None:
                continue
            times[name] = r[5]
            if first is None:
                first = r
        if first is not None:
            try:
                refusals(lathe, torch, *first[:4], failed, notes)
            except Exception as e:  # noqa: BLE001
                failed.append(f"refusals: {type(e).__name__}: {str(e)[:200]}")
            # outputs handed to torch stay valid after the session and its OrtValues are gone
            tt, ref = first[4], first[3]
            del first, r
            gc.collect()
            for k, t in enumerate(tt):
                close(t.cpu().numpy(), ref[k], f"DLPack output {k} after the session is gone", failed)
    for f in failed:
        print("FAILED", f)
    for n in notes:
        print("NOTE", n)
    ratios = ", ".join(f"{n} {h:.3f}/{g:.3f} ms (x{h / g:.2f})" for n, (h, g) in times.items())
    if failed:
        row(a.summary, "FAILED", failed[0][:110])
        return 1
    row(a.summary, "ok", f"GPU in/out equal to the CPU, no host copy; host vs GPU memory: {ratios}"
        + (f"; note: {notes[0][:80]}" if notes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
