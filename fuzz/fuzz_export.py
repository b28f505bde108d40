#!/usr/bin/env python3
"""fuzz_export.py — differential fuzzer of the standalone C export and of CUDA emission.

Each round builds one ONNX model holding --batch independent random chains (the "executions": each
chain is one small model of 1..--max-ops compiled ops: Relu, Neg, Abs, Sigmoid, Tanh, Add, Mul, Sub
with broadcast constants or a second input, MatMul, Gemm, Conv, MaxPool, AveragePool, Reshape,
Flatten, Transpose, Softmax, ReduceMean, ReduceMax, Concat, on random shapes), every name drawn from
tests/hostile_names.py or made up. So one round is one `lathe compile -o DIR` (the export), one cc
call per -std (c99, c11 with -Wall -Werror), one program run, one `lathe run --backend interp`, and
with --cuda one `lathe compile --target cuda` (one NVRTC compile). A round passes when everything
compiles and every output of the program equals the interpreter's (inputs: the --fill ramp data,
given to the program as .npy files). A failing round is saved under --out (model, log) and its chains
are retried one by one to name the culprit.

  python3 fuzz/fuzz_export.py --seconds 60                 # the bounded run CI uses
  python3 fuzz/fuzz_export.py --seconds 3600 --cuda --jobs 8 --out findings/
Exit status: 0 no finding, 1 findings (listed), 2 usage or set-up error.
$LATHE_BIN (default build/lathe) and $CC (default cc) as the tests use them.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import hostile_names as hn  # noqa: E402

UNARY = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh"]

class Chain:
    """One random chain: inputs, initializers, nodes, outputs, all named by `name()`."""

    def __init__(self, rng, name, max_ops):
        self.rng, self.name = rng, name
        self.inputs, self.inits, self.nodes, self.outputs = [], [], [], []
        rank = rng.choice([1, 2, 2, 3, 4, 4])
        shape = [rng.randint(1, 6) for _ in range(rank)]
        x = self.input(shape)
        for _ in range(rng.randint(1, max_ops)):
            x, shape = self.step(x, shape)
            if rng.random() < 0.2:
                self.outputs.append((x, list(shape)))
        if not self.outputs or self.outputs[-1][0] != x:
            self.outputs.append((x, list(shape)))

    def input(self, shape):
        n = self.name()
        self.inputs.append((n, list(shape)))
        return n

    def const(self, shape, scale=0.5):
        n = self.name()
        a = np.array(self.rng.uniform(-scale, scale), np.float32) if not shape else \
            np.random.default_rng(self.rng.randint(0, 1 << 30)).uniform(-scale, scale, shape).astype(np.float32)
        self.inits.append(numpy_helper.from_array(a, n))
        return n

    def node(self, op, ins, **attrs):
        out = self.name()
        self.nodes.append(helper.make_node(op, ins, [out], name=self.name(), **attrs))
        return out

    def step(self, x, shape):
        rng, rank = self.rng, len(shape)
        ops = UNARY + ["Add", "Mul", "Sub", "Softmax", "Reshape", "Flatten", "Transpose", "ReduceMean", "ReduceMax",
                       "Concat"]
        if rank >= 2:
            ops += ["MatMul", "MatMul"]
        if rank == 2:
            ops += ["Gemm"]
        if rank == 4:
            ops += ["Conv", "Conv", "MaxPool", "AveragePool"]
        op = rng.choice(ops)
        n = int(np.prod(shape))
        if op in UNARY:
            return self.node(op, [x]), shape
        if op in ("Add", "Mul", "Sub"):
            if rng.random() < 0.3:
                other = self.input(shape)
            else:
                bshape = [d if rng.random() < 0.5 else 1 for d in shape][rng.randint(0, rank):]
                other = self.const(bshape)
            ins = [x, other] if rng.random() < 0.7 else [other, x]
            return self.node(op, ins), shape
        if op == "Softmax":
            return self.node(op, [x], axis=rng.randint(-rank, rank - 1)), shape
        if op == "Reshape":
            divs = [d for d in range(1, n + 1) if n % d == 0]
            a = rng.choice(divs)
            new = rng.choice([[n], [a, n // a], [1, a, n // a], [a, 1, n // a, 1]])
            return self.node(op, [x, self.shape_const(new)]), new
        if op == "Flatten":
            ax = rng.randint(0, rank)
            return self.node(op, [x], axis=ax), [int(np.prod(shape[:ax])), int(np.prod(shape[ax:]))]
        if op == "Transpose":
            perm = list(range(rank))
            rng.shuffle(perm)
            return self.node(op, [x], perm=perm), [shape[p] for p in perm]
        if op in ("ReduceMean", "ReduceMax"):
            axes = sorted(rng.sample(range(rank), rng.randint(1, rank)))
            keep = rng.randint(0, 1) if len(axes) < rank else 1
            new = [1 if i in axes else d for i, d in enumerate(shape)] if keep else \
                [d for i, d in enumerate(shape) if i not in axes]
            return self.node(op, [x], axes=axes, keepdims=keep), new
        if op == "Concat":
            ax = rng.randint(0, rank - 1)
            other = self.const(shape) if rng.random() < 0.5 else x
            new = list(shape)
            new[ax] *= 2
            return self.node(op, [x, other], axis=ax), new
        # (weights of one element make a host step, which the export refuses: at least two)
        if op == "MatMul":
            k, m = shape[-1], rng.randint(1 if shape[-1] > 1 else 2, 8)
            return self.node(op, [x, self.const([k, m], 0.3)]), shape[:-1] + [m]
        if op == "Gemm":
            k, m = shape[-1], rng.randint(1 if shape[-1] > 1 else 2, 8)
            tb = rng.randint(0, 1)
            w = self.const([m, k] if tb else [k, m], 0.3)
            ins = [x, w] + ([self.const([m])] if rng.random() < 0.5 else [])
            return self.node(op, ins, transB=tb, alpha=0.5), [shape[0], m]
        if op == "Conv":
            cin, h, w = shape[1], shape[2], shape[3]
            cout, k = rng.randint(1, 6), rng.choice([1, 3])
            pad = k // 2 if rng.random() < 0.7 else 0
            if h + 2 * pad < k or w + 2 * pad < k:
                pad = k // 2
            group = cin if rng.random() < 0.2 else 1
            if group > 1:
                cout = cin
            bias = rng.random() < 0.5
            ins = [x, self.const([cout, cin // group, k, k], 0.3)] + ([self.const([cout])] if bias else [])
            y = self.node(op, ins, pads=[pad] * 4, group=group)
            return y, [shape[0], cout, h + 2 * pad - k + 1, w + 2 * pad - k + 1]
        if op in ("MaxPool", "AveragePool"):
            h, w = shape[2], shape[3]
            k = 2 if h >= 2 and w >= 2 else 1
            return self.node(op, [x], kernel_shape=[k, k], strides=[k, k]), [shape[0], shape[1], h // k, w // k]
        raise AssertionError(op)

    def shape_const(self, dims):
        n = self.name()
        self.inits.append(numpy_helper.from_array(np.array(dims, np.int64), n))
        return n


class Names:
    """Unique names: mostly hostile, some plain; invalid UTF-8 through hostile_names' placeholders."""

    def __init__(self, rng):
        self.rng, self.used, self.k = rng, set(), 0
        self.namer = hn.Namer(hn.NAMES)

    def __call__(self):
        while True:
            self.k += 1
            r = self.rng.random()
            if r < 0.6:
                self.namer.i = self.rng.randrange(len(hn.NAMES))
                s = self.namer()
            elif r < 0.8:  # a hostile name with a suffix: new names of the same families
                s = self.rng.choice(hn.NAMES).encode("utf-8", "surrogateescape").decode("utf-8", "replace") + \
                    self.rng.choice(["", "_", ".", "*/", "??/", "\\", "\n", "%n"]) + str(self.k)
            else:
                s = "t%d" % self.k
            if s not in self.used:
                self.used.add(s)
                return s


def build_model(chains, names, path):
    inputs, inits, nodes, outputs = [], [], [], []
    for c in chains:
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in c.inputs]
        inits += c.inits
        nodes += c.nodes
        outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in c.outputs]
    g = helper.make_graph(nodes, names(), inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return hn.save_model(m, path, names.namer)


def ramp(shape):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64) / max(n, 1)).astype(np.float32).reshape(shape)


def sh(cmd, timeout, cwd=None):
    try:
        return subprocess.run([str(c) for c in cmd], capture_output=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, -9, b"", b"timed out")


def check(chains, names, d, a):
    """Compile, build, run and compare one batch; returns None or a description of the failure."""
    os.makedirs(d, exist_ok=True)
    model = build_model(chains, names, os.path.join(d, "m.onnx"))
    r = sh([a.lathe, "run", model, "--backend", "interp", "--fill", "ramp", "--output", os.path.join(d, "ref.npz"),
            "--values", "0"], 600)
    if r.returncode != 0:
        return "interp: " + r.stderr.decode(errors="replace")[-2000:]
    with np.load(os.path.join(d, "ref.npz")) as z:
        want = [z[k] for k in z.files]
    exp = os.path.join(d, "exp")
    r = sh([a.lathe, "compile", model, "-o", exp, *(["--cache-dir", a.cache] if a.cache else [])], 900)
    if r.returncode != 0:
        return "export: " + r.stderr.decode(errors="replace")[-2000:]
    args = []
    for c in chains:
        for i, (_, shape) in enumerate(c.inputs):
            p = os.path.join(d, "in%d.npy" % len(args))
            np.save(p, ramp(shape))
            args.append(p)
    for std in a.std:
        exe = os.path.join(d, "prog_" + std)
        r = sh([*a.cc.split(), "-std=" + std, "-Wall", "-Werror", "-O0", os.path.join(exp, "model.c"),
                os.path.join(exp, "model_main.c"), "-lm", "-o", exe], 900)
        if r.returncode != 0:
            return "cc -std=%s: %s" % (std, r.stderr.decode(errors="replace")[-3000:])
        outs = [os.path.join(d, "out%d.npy" % k) for k in range(len(want))]
        r = sh([exe, *args, *outs], 300, cwd=d)
        if r.returncode != 0:
            return "program (-std=%s) exited %d: %s" % (std, r.returncode, r.stderr.decode(errors="replace")[-2000:])
        for k, w in enumerate(want):
            g = np.load(outs[k])
            if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-4, equal_nan=True):
                err = np.max(np.abs(g.astype(np.float64) - w)) if g.shape == w.shape else "shape %s" % (g.shape,)
                return "output %d differs from the interpreter (-std=%s): max error %s" % (k, std, err)
        # one run compares; the other -std values need only build
        for other in a.std[1:]:
            r = sh([*a.cc.split(), "-std=" + other, "-Wall", "-Werror", "-fsyntax-only",
                    os.path.join(exp, "model.c"), os.path.join(exp, "model_main.c")], 900)
            if r.returncode != 0:
                return "cc -std=%s: %s" % (other, r.stderr.decode(errors="replace")[-3000:])
        break
    if a.cuda:
        r = sh([a.lathe, "compile", model, "--target", "cuda", "-o", os.path.join(d, "cuda"),
                *(["--cache-dir", a.cache] if a.cache else [])], 900)
        text = (r.stdout + r.stderr).decode(errors="replace")
        if r.returncode != 0:
            return "cuda compile: " + text[-3000:]
        if "no cubin" in text:
            a.cuda = False
            print("fuzz_export: NVRTC not found, CUDA emission not fuzzed", flush=True)
    return None


def record_finding(a, seed, r, chains, names, d, why, out, findings, lock):
    """Keep a failing round under --out, name the chain whose output differs (and with --isolate, the chains
    that fail alone), and report it."""
    keep = os.path.join(out, "seed%d_round%d" % (seed, r))
    shutil.copytree(d, keep, dirs_exist_ok=True)
    culprits = []
    if why.startswith("output "):  # the chain whose output differs
        k = int(why.split()[1])
        for i, c in enumerate(chains):
            if k < len(c.outputs):
                culprits.append(i)
                break
            k -= len(c.outputs)
    for i, c in enumerate(chains if a.isolate else []):  # which chain alone fails?
        one = check([c], names, os.path.join(d, "c%d" % i), a)
        if one:
            culprits.append(i)
            shutil.copytree(os.path.join(d, "c%d" % i), os.path.join(keep, "chain%d" % i), dirs_exist_ok=True)
            if len(culprits) >= 3:
                break
    with open(os.path.join(keep, "why.txt"), "w") as f:
        f.write(why + "\nchains failing alone: %s\n" % culprits)
    with lock:
        findings.append("%s: %s (chains alone: %s)" % (keep, why.splitlines()[0][:300], culprits))
        print("fuzz_export: FINDING in round %d: %s" % (r, why[:2000]), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="stop starting rounds after this long (default 60)")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: the time)")
    ap.add_argument("--batch", type=int, default=40, help="chains per model, so per compiler call (default 40)")
    ap.add_argument("--max-ops", type=int, default=6, help="ops per chain at most (default 6)")
    ap.add_argument("--cuda", action="store_true", help="also compile every batch with --target cuda (NVRTC)")
    ap.add_argument("--out", default=None, help="folder for failing rounds (default: a temporary one)")
    ap.add_argument("--std", default="c99,c11", help="C standards to build with (default c99,c11)")
    ap.add_argument("--cache-dir", default=None, help="lathe's module cache (default: lathe's own, so warm)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="rounds run at once (default 1); one run, one count, however many jobs")
    ap.add_argument("--progress", action="store_true", help="a line per round")
    ap.add_argument("--isolate", action="store_true",
                    help="after a failing round, check its chains one by one (slow) to name the culprits")
    a = ap.parse_args()
    a.std = a.std.split(",")
    a.lathe = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
    if not os.path.isabs(a.lathe):
        a.lathe = os.path.join(ROOT, a.lathe)
    a.cc = os.environ.get("CC") or "cc"
    if not os.path.exists(a.lathe) or not shutil.which(a.cc.split()[0]):
        print("fuzz_export: need %s and a C compiler (%s)" % (a.lathe, a.cc), file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else int(time.time())
    work = tempfile.mkdtemp(prefix="lathe-fuzz-export-")
    a.cache = a.cache_dir
    out = a.out or os.path.join(work, "findings")
    os.makedirs(out, exist_ok=True)
    state = {"rounds": 0, "execs": 0}
    findings, lock, t0 = [], threading.Lock(), time.time()

    def one_round(r):
        rng = random.Random(seed * 1000003 + r)
        names = Names(rng)
        chains = [Chain(rng, names, a.max_ops) for _ in range(a.batch)]
        d = os.path.join(work, "r%d" % r)
        why = check(chains, names, d, a)
        if why:
            record_finding(a, seed, r, chains, names, d, why, out, findings, lock)
        shutil.rmtree(d, ignore_errors=True)
        with lock:
            state["execs"] += 0 if why else len(chains)
            if a.progress:
                print("fuzz_export: round %d %s, %d chains passed so far, %.0f s" % (
                    r, "FAILED" if why else "ok", state["execs"], time.time() - t0), flush=True)

    def worker():  # rounds are numbered in the order workers take them, so a seed names them all
        while True:
            with lock:
                if time.time() - t0 >= a.seconds:
                    return
                r = state["rounds"]
                state["rounds"] += 1
            one_round(r)

    threads = [threading.Thread(target=worker) for _ in range(max(1, a.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rounds, execs = state["rounds"], state["execs"]
    secs = time.time() - t0
    print("fuzz_export: seed %d, %d rounds, %d models (chains) compiled, built with %s%s, run and equal to the "
          "interpreter, in %.0f s; %d failing round(s)" % (seed, rounds, execs, "/".join(a.std), " + NVRTC" if a.cuda
                                                           else "", secs, len(findings)), flush=True)
    for f in findings:
        print("  " + f)
    if not findings:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
