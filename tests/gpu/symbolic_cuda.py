#!/usr/bin/env python3
"""symbolic_cuda.py — a model with symbolic dims compiled once on the GPU, for tests/gpu/run.sh (a script:
the GPU machine may lack pytest).

lathe.compile on the zoo's bert_ci (batch and sequence symbolic) and pplcnet_ci (batch and image size
symbolic) with backend "cuda" and no cache folder gives one model for every shape (src/compile/family.h).
It runs at shapes of one bucket and at others; each output must equal the reference interpreter's (rtol
1e-3: the GPU's float order differs), the shapes meant to share the first bucket must build no NVRTC
module, and the report says how many buckets and NVRTC module builds bert_ci's shapes took, printed as
the summary line. The plans of a bucket share up to four instantiated CUDA graphs, a fifth shape updating
one in place (the report's device graphs line).

usage: symbolic_cuda.py --lathe BUILD/lathe [--summary FILE]   (exit 1 when a check fails)
"""
import argparse
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_common import report  # noqa: E402


def feeds(batch, seq, seed):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - 3:] = 0
    return {"input_ids": rng.integers(0, 100, size=(batch, seq)).astype(np.int64), "attention_mask": mask}


def run_shapes(lathe, path, shapes, make_feeds, must_share, failed, min_updates=0):
    """Run the model compiled once (backend cuda, no cache folder) at every shape against the interpreter;
    the shapes at the indices in must_share must not build an NVRTC module."""
    model = lathe.compile(path, backend="cuda", cache_dir=False)
    ref = lathe.compile(path, backend="interp")
    built = 0
    for i, shape in enumerate(shapes):
        f = make_feeds(shape, i)
        got, want = model.run(f), ref.run(f)
        now = re.search(r"modules built: (\d+)", model.report)
        now = int(now.group(1)) if now else built
        name_shape = "x".join(str(d) for d in shape)
        print(f"{os.path.basename(path)} {name_shape}: {'new bucket (NVRTC)' if now > built else 'no NVRTC'}")
        if now > built and i in must_share:
            failed.append(f"{os.path.basename(path)} {name_shape} built an NVRTC module (its bucket should exist)")
        built = now
        for name in want:
            if got[name].shape != want[name].shape or not np.allclose(got[name], want[name], rtol=1e-3, atol=1e-4):
                err = float(np.abs(got[name].astype(np.float64) - want[name]).max()) if got[name].shape == want[name].shape \
                    else "shape"
                failed.append(f"{name} at {name_shape}: max error {err}")
    print(model.report)
    # CUDA graphs per bucket: these models have no host step (one segment a plan); a bucket holds up to 4
    # instantiated graphs (its shapes in turn replay without updates), each instantiated once, and a fifth
    # shape of a bucket updates one in place
    g = re.search(r"device graphs: (\d+) \(at most (\d+) .*instantiated (\d+) times, updated in place (\d+) times",
                  model.report)
    b = re.search(r"buckets: (\d+);", model.report)
    if not g or not b:
        failed.append(f"{os.path.basename(path)}: the report has no device graphs or buckets line")
    else:
        graphs, most, inst, upd = (int(v) for v in g.groups())
        if not int(b.group(1)) <= graphs <= most * int(b.group(1)) or inst != graphs or upd < min_updates:
            failed.append(f"{os.path.basename(path)}: {g.group(0)} for {b.group(1)} buckets (want 1..{most} graphs a "
                          f"bucket, each instantiated once, at least {min_updates} updates)")
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lathe", required=True)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    os.environ.setdefault("LATHE_LIBRARY", os.path.join(os.path.dirname(os.path.abspath(a.lathe)), "liblathe.so"))
    import lathe
    import exported
    failed = []
    # bert_ci: the first shape makes a bucket; the next four (batch and sequence both moving, the attention's
    # rows of one row class: 33..64, two elements per lane of a warp) must take it without NVRTC; the rest may
    # make others (batch 1, rows of another class, which take another row kernel).
    bert = exported.build("bert_ci")
    shapes = ((4, 33), (4, 57), (2, 41), (3, 50), (8, 60), (1, 16), (16, 64), (16, 96), (5, 128), (4, 33))
    model = run_shapes(lathe, bert, shapes, lambda s, seed: feeds(*s, seed), must_share=range(1, 5), failed=failed)
    # pplcnet_ci: image sizes of every residue in one bucket (five shapes: the fifth updates one of its graphs)
    ppl = exported.build("pplcnet_ci")
    images = ((2, 3, 64, 64), (3, 3, 48, 40), (2, 3, 33, 45), (2, 3, 56, 72), (3, 3, 40, 52), (1, 3, 64, 64))
    run_shapes(lathe, ppl, images, lambda s, seed: {"x": np.random.default_rng(seed).standard_normal(s).astype(np.float32)},
               must_share=range(1, 5), failed=failed, min_updates=1)
    m = re.search(r"buckets: (\d+); modules built: (\d+), reused: (\d+)", model.report)
    what = f"bert_ci {len(shapes)} runs, {len(set(shapes))} shapes: {m.group(1)} buckets, {m.group(2)} NVRTC builds, {m.group(3)} reused" if m else "no report"
    return report("symbolic dims (cuda)", failed, f"equal to the interpreter; {what}", a.summary)


if __name__ == "__main__":
    sys.exit(main())
