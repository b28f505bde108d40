"""fuzz_python_args.py — random-argument fuzzing of the Python binding (python/lathe): lathe.compile(...)
with wrong types, values out of range, NUL bytes, bad paths, odd shapes= / dims= / options, and calls of
the models it returns with wrong dtypes, shapes, ranks, names, None, 0-d, 0-size, non-contiguous,
big-endian, read-only, huge (virtual) and object arrays. Every case must either work (then the outputs
are checked against numpy) or raise an exception of a kind a caller expects (TypeError, ValueError,
LatheError, OSError, MemoryError) with a message; it must never crash the interpreter.

Cases run in child processes, a batch per child: a child that dies (a signal, an abort) is a crash,
reported with the case that was running, and the next child starts after it. Cases are drawn from a
seeded random generator, so a finding replays with the same --seed and case number (--case N runs one
case in this process and prints its arguments).

    python3 tests/fuzz_python_args.py --cases 300 --seed 1      # bounded (CI)
    python3 tests/fuzz_python_args.py --cases 20000 --jobs 8    # a long run
Exit status: 0 when nothing was found, 1 with findings (each printed). The library is $LATHE_LIBRARY,
else the liblathe.so next to $LATHE_BIN (default build/lathe); compiled code goes to a temporary cache.
"""
import argparse
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = ("TypeError", "ValueError", "LatheError", "OSError", "MemoryError", "FileNotFoundError",
            "NotADirectoryError", "PermissionError", "FileExistsError", "IsADirectoryError")


def library():
    lib = os.environ.get("LATHE_LIBRARY")
    if not lib:
        bin_ = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
        lib = os.path.join(os.path.dirname(os.path.abspath(bin_)), "liblathe.so")
    return lib


# ---------------------------------------------------------------- models
def write_models(d):
    """The models the cases use, in folder d; returns {name: path}."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    def save(name, nodes, ins, outs, inits=()):
        g = helper.make_graph(nodes, "g", ins, outs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        p = os.path.join(d, name)
        onnx.save(m, p)
        return p

    vi = helper.make_tensor_value_info
    paths = {
        # y = x * s: a symbolic batch and a 0-d input
        "scaled": save("scaled.onnx", [helper.make_node("Mul", ["x", "s"], ["y"])],
                       [vi("x", TensorProto.FLOAT, ["N", 3]), vi("s", TensorProto.FLOAT, [])],
                       [vi("y", TensorProto.FLOAT, ["N", 3])]),
        # static int64 (the compiled zero-copy path): y = a + 1
        "static": save("static.onnx", [helper.make_node("Add", ["a", "one"], ["y"])],
                       [vi("a", TensorProto.INT64, [2, 2])], [vi("y", TensorProto.INT64, [2, 2])],
                       [onnx.numpy_helper.from_array(np.array(1, np.int64), "one")]),
        # strings (interp): y = Identity(t)
        "strings": save("strings.onnx", [helper.make_node("Identity", ["t"], ["y"])],
                        [vi("t", TensorProto.STRING, [2])], [vi("y", TensorProto.STRING, [2])]),
        # a name a terminal would act on, unknown rank
        "oddname": save("oddname.onnx", [helper.make_node("Relu", ["\x1b[31mx", ], ["y\x07"])],
                        [vi("\x1b[31mx", TensorProto.FLOAT, None)], [vi("y\x07", TensorProto.FLOAT, None)]),
    }
    with open(os.path.join(d, "text.onnx"), "w") as f:
        f.write("ir_version: 8\n")
    paths["text"] = os.path.join(d, "text.onnx")
    return paths


# ---------------------------------------------------------------- random arguments
HUGE = [2 ** 31, 2 ** 32 + 1, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64, 2 ** 70, -1, -2 ** 63]


def pick(r, *opts):
    return opts[r.randrange(len(opts))]


def rand_name(r):
    return pick(r, "x", "s", "a", "t", "N", "y", "", "nosuch", "x,y", "x:1", "x=1", "x\0y", "\x1b[31mx", "\udcff",
                "é", 0, None, b"x", 1.5, ("x",))


def rand_dim(r):
    return pick(r, 0, 1, 2, 3, 4, -1, r.choice(HUGE), 1.0, "3", None, True, [2], "x")


def rand_shapes(r):
    k = r.randrange(14)
    if k == 0:
        return None
    if k == 1:
        return pick(r, "x:2x3", "x:2x3,s:", "x:-1x3", "x:99999999999999999999x3", "x:2y3", ":", ",", "x:", "s:1",
                    "x:2x3\0", "x" * 600 + ":1", "\x1b:1", "x:2x3,x:4x3", "x:2x3x", "x:0x3")
    if k == 2:
        return pick(r, 5, 1.5, ["x", 2], [("x", (2, 3))], b"x:2x3", object())
    if k == 3:
        return {"x": tuple(rand_dim(r) for _ in range(r.randrange(4))), "s": pick(r, (), [], None, 1)}
    if k == 4:
        return {"x": [1] * pick(r, 16, 17, 40)}
    if k == 5:
        import numpy as np
        return {"x": np.array([pick(r, 1, 2, 3), 3], dtype=pick(r, np.int64, np.int32, np.uint64, np.float32))}
    if k == 6:
        return {rand_name(r): (2, 3)}
    if k == 7:
        return {"x": pick(r, "2x3", b"23", 3, None, {2: 3})}
    return {"x": (pick(r, 1, 2, 3, 4), 3), "s": ()}


def rand_dims(r):
    k = r.randrange(8)
    if k == 0:
        return pick(r, "N=2", "N=-1", "N=99999999999999999999", "N", "=2", "N=2,N=3", "nosuch=1", "N=2\0", "N=0x10", 7)
    if k == 1:
        return {rand_name(r): rand_dim(r)}
    if k == 2:
        return {"N": rand_dim(r)}
    if k == 3:
        return pick(r, [("N", 2)], ["N"], 1.5)
    if k in (4, 5):
        return {"N": pick(r, 1, 2, 3)}
    return None


def good_args(r, model):
    """Arguments that compile `model`."""
    backend = pick(r, "cpu", "interp")
    kw = {"backend": backend}
    if backend == "cpu" and model == "scaled":
        n = pick(r, 1, 2, 3)
        if r.random() < 0.5:
            kw["shapes"] = pick(r, {"x": (n, 3), "s": ()}, f"x:{n}x3,s:")
        else:
            kw["dims"] = pick(r, {"N": n}, f"N={n}")
    if backend == "cpu" and model == "oddname":
        kw["shapes"] = {"\x1b[31mx": (pick(r, 1, 2),)}
    if r.random() < 0.2 and backend == "cpu":
        kw["threads"] = pick(r, 1, 2)
    return kw


def bad_arg(r, paths, tmp):
    """One argument that is wrong in some way (or odd but fine): (name, value)."""
    name = pick(r, "path", "backend", "shapes", "shapes", "dims", "threads", "opt_level", "seed", "cache_dir", "cc",
                "dump_code_dir", "enable_passes", "tune_db", "nosuch_argument")
    value = {
        "path": lambda: pick(r, None, 5, os.fsencode(paths["scaled"]), pathlib.Path(paths["static"]),
                             paths["scaled"] + "\0x", os.path.join(tmp, "missing.onnx"), tmp, paths["text"], "",
                             "\udcff.onnx", [paths["scaled"]]),
        "backend": lambda: pick(r, "cuda", "CPU", "", None, 1, "cpu\0"),
        "shapes": lambda: rand_shapes(r),
        "dims": lambda: rand_dims(r),
        "threads": lambda: pick(r, None, 0, -1, 2 ** 40, 2 ** 31, "2", 1.5, True, 3),
        "opt_level": lambda: pick(r, None, 0, 1, 3, -1, 4, "1", 2.0, True),
        "seed": lambda: pick(r, 0, -1, 2 ** 64 - 1, 2 ** 64, 2 ** 70, "x", 1.5, None),
        "cache_dir": lambda: pick(r, False, True, 5, os.path.join(tmp, "c\0d"), os.path.join(tmp, "sub", "cache"),
                                  paths["text"], os.fsencode(os.path.join(tmp, "bcache"))),
        "cc": lambda: pick(r, "no-such-compiler-xyz", "", 5, "cc\0", "false"),
        "dump_code_dir": lambda: pick(r, os.path.join(tmp, "dump", "a", "b"), paths["text"],
                                      os.path.join(paths["text"], "sub"), 5, "d\0"),
        "enable_passes": lambda: pick(r, ["layout_nchwc"], ["nope"], 5, [None], "layout_nchwc", ["a,b"], [""], ["x\0"]),
        "tune_db": lambda: pick(r, False, os.path.join(tmp, "missing.tsv"), paths["text"], 5, "t\0"),
        "nosuch_argument": lambda: 1,
    }[name]()
    return name, value


def rand_compile_args(r, paths, tmp):
    """(model name, path, kwargs) for one lathe.compile call: good arguments, with one or two made wrong
    (or odd) in half of the cases."""
    model = pick(r, "scaled", "scaled", "scaled", "static", "static", "strings", "oddname")
    path = paths[model]
    kw = good_args(r, model)
    n_bad = pick(r, 0, 0, 1, 1, 2)
    for _ in range(n_bad):
        name, value = bad_arg(r, paths, tmp)
        if name == "path":
            path = value
        else:
            kw[name] = value
    if kw.get("cc") is None:
        kw.pop("cc", None)
    return model, path, kw, n_bad == 0


GOOD_KINDS = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 23}  # arguments a model must accept (see rand_array)


def rand_array(r, np, want_dtype, want_shape):
    """(argument, kind) for an input whose declared dtype / shape are these (shape: tuple, None = unknown);
    kinds in GOOD_KINDS are right (the declared dtype in either byte order, any memory layout)."""
    shape = tuple(d if isinstance(d, int) else pick(r, 1, 2, 3) for d in (want_shape if want_shape is not None else (2,)))
    k = r.randrange(24)
    return _rand_array(r, np, want_dtype, shape, k), k


def _rand_array(r, np, want_dtype, shape, k):
    dt = want_dtype if want_dtype is not None else np.float32
    good = (np.arange(int(np.prod(shape)), dtype=np.int64) % 5).astype(dt).reshape(shape) if dt != object else \
        np.array(["a%d" % i for i in range(int(np.prod(shape)))], dtype=object).reshape(shape)
    if k < 8:
        return good
    if k == 8:
        return good.astype(good.dtype.newbyteorder(">")) if good.dtype != object else good
    if k == 9:
        return np.repeat(good, 2, axis=-1)[..., ::2] if good.ndim else good  # non-contiguous, same shape
    if k == 10:
        return np.asfortranarray(good) if good.ndim else good  # (asfortranarray makes 0-d 1-d)
    if k == 11:
        g = good.copy()
        g.flags.writeable = False
        return g
    if k == 12:
        return good.astype(pick(r, np.float64, np.float16, np.int32, np.bool_, np.complex64, np.uint8, object, "U3",
                                "S3", "datetime64[s]"))
    if k == 13:
        return good.reshape(-1)  # another rank
    if k == 14:
        return np.zeros(pick(r, (0,), (0, 3), (), (1,) * 17, (2, 0, 3)), dtype=good.dtype)
    if k == 15:
        return np.broadcast_to(np.zeros((), dtype=good.dtype), (2 ** 40, 3))  # huge, virtual
    if k == 16:
        return pick(r, None, 1, 1.5, "s", b"s", [1, 2], [[1], [1, 2]], [["a", "b"]], {}, object(), np.float32(2))
    if k == 17:
        return good.tolist() if good.ndim else good.item()
    if k == 18:
        return np.ma.masked_array(good)
    if k == 19:
        return np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f4")])
    if k == 20:
        return np.array([object(), None], dtype=object)
    if k == 21:
        return np.array(["x\0y", "\udcff"], dtype=object)
    if k == 22:
        return np.array(2, dtype=good.dtype)  # 0-d
    return good.astype(good.dtype)


def rand_call(r, np, model):
    """(args, kwargs, good) for calling a compiled model; good: every argument is right."""
    feeds, good = {}, True
    for info in model.inputs:
        shape = None if info.shape is None else tuple(d if isinstance(d, int) else None for d in info.shape)
        feeds[info.name], kind = rand_array(r, np, info.dtype, shape)
        good = good and (kind in GOOD_KINDS or (kind == 22 and shape == ()))
    k = r.randrange(12)
    if k == 0 and feeds:
        feeds.pop(r.choice(list(feeds)))
    elif k == 1:
        feeds[rand_name(r)] = np.zeros(1, np.float32)
    if k == 2:
        extra = pick(r, [], [np.zeros(1)])
        return list(feeds.values()) + extra, {}, good and not extra
    if k == 3:
        return [feeds], {}, good
    if k == 4:
        return [], {"__positional__": 1}, False
    return [], feeds, good and k > 1


def check_outputs(np, model_name, args, kwargs, out):
    """A call that returned: outputs right for the inputs that were accepted."""
    assert isinstance(out, dict), f"returned {type(out).__name__}"
    feeds = dict(kwargs) if kwargs else (args[0] if args and isinstance(args[0], dict) else {})
    if model_name == "scaled" and "x" in feeds and "s" in feeds and not args:
        x, s = np.asarray(feeds["x"]), np.asarray(feeds["s"])
        if x.dtype == np.float32 and s.dtype == np.float32 and np.all(np.isfinite(x)):
            np.testing.assert_allclose(out["y"], x * s, rtol=1e-6)
    if model_name == "static" and "a" in feeds and not args:
        a = np.asarray(feeds["a"])
        if a.dtype == np.int64 and a.shape == (2, 2):
            np.testing.assert_array_equal(out["y"], a + 1)


# ---------------------------------------------------------------- running cases
def run_case(i, seed, paths, tmp, verbose=False):
    """One case; returns (outcome, detail): ok, expected (an exception a caller can handle) or finding."""
    import numpy as np
    import lathe
    r = random.Random(seed * 1_000_003 + i)
    model_name, path, kw, good = rand_compile_args(r, paths, tmp)
    kw.setdefault("cache_dir", os.path.join(tmp, "cache"))
    if verbose:
        print(f"case {i}: lathe.compile({path!r}, **{kw!r})")
    stage = "compile"
    try:
        m = lathe.compile(path, **kw)
        stage = "call"
        for _ in range(r.randrange(1, 4)):
            try:
                args, kwargs, good_call = rand_call(r, np, m)
            except (TypeError, ValueError):  # numpy refused to make this argument
                continue
            if verbose:
                print(f"  call ({'good' if good_call else 'bad'}): args={args!r:.300} kwargs={kwargs!r:.300}")
            try:
                out = m(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - classified below
                if type(e).__name__ not in EXPECTED or not str(e).strip() or good_call:
                    return "finding", (f"{'right ' if good_call else ''}call raised {type(e).__name__}: {e!s:.300}\n"
                                       f"{traceback.format_exc(limit=4)}")
                continue
            check_outputs(np, model_name, args, kwargs, out)
        m.close()
        return "ok", ""
    except AssertionError as e:
        return "finding", f"{stage}: wrong result: {e!s:.500}"
    except Exception as e:  # noqa: BLE001 - classified here
        name = type(e).__name__
        if good and stage == "compile":
            return "finding", f"compile with right arguments raised {name}: {e!s:.300}"
        if name not in EXPECTED:
            return "finding", f"{stage} raised {name}: {e!s:.300}\n{traceback.format_exc(limit=4)}"
        if not str(e).strip():
            return "finding", f"{stage} raised {name} with an empty message"
        return "expected", f"{name}: {e!s:.120}"


def child(seed, start, count, tmp):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    paths = write_models(tmp)
    for i in range(start, start + count):
        print(f"start {i}", flush=True)
        outcome, detail = run_case(i, seed, paths, tmp)
        print(f"{outcome} {i} {detail!r}", flush=True)


def run_batches(seed, cases, batch, jobs, timeout):
    """Run cases [0, cases) in children; returns (counts, findings)."""
    tmp = tempfile.mkdtemp(prefix="lathe-fuzz-py-")
    env = dict(os.environ, LATHE_LIBRARY=library(), PYTHONFAULTHANDLER="1")
    counts = {"ok": 0, "expected": 0, "finding": 0, "crash": 0}
    findings = []
    pending = [(s, min(batch, cases - s)) for s in range(0, cases, batch)]
    running = []
    try:
        while pending or running:
            while pending and len(running) < jobs:
                s, n = pending.pop(0)
                d = os.path.join(tmp, f"w{s}")
                os.makedirs(d, exist_ok=True)
                p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", str(seed), str(s), str(n),
                                      d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                running.append((p, s, n, time.time()))
            time.sleep(0.05)
            for item in list(running):
                p, s, n, t0 = item
                if p.poll() is None and time.time() - t0 < timeout:
                    continue
                if p.poll() is None:
                    p.kill()
                out, err = p.communicate()
                running.remove(item)
                last, done = None, set()
                for line in out.splitlines():
                    word, _, rest = line.partition(" ")
                    idx, _, detail = rest.partition(" ")
                    if word == "start":
                        last = int(idx)
                    elif word in counts:
                        done.add(int(idx))
                        counts[word] += 1
                        if word == "finding":
                            findings.append((int(idx), eval(detail)))  # noqa: S307 - our own repr()
                if len(done) < n:  # the child died (or hung) in case `last`
                    counts["crash"] += 1
                    why = f"exit status {p.returncode}" if p.returncode is not None else "timeout"
                    findings.append((last, f"the interpreter died ({why}):\n{err[-2000:]}"))
                    rest = s + n - (last + 1)
                    if rest > 0:
                        pending.insert(0, (last + 1, rest))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return counts, findings


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=50, help="cases per child process")
    ap.add_argument("--jobs", type=int, default=1, help="children at once")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a batch may take")
    ap.add_argument("--case", type=int, help="run this one case here, printing its arguments")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(int(a.child[0]), int(a.child[1]), int(a.child[2]), a.child[3])
        return 0
    if a.case is not None:
        os.environ["LATHE_LIBRARY"] = library()
        sys.path.insert(0, os.path.join(ROOT, "python"))
        tmp = tempfile.mkdtemp(prefix="lathe-fuzz-py-")
        try:
            print(run_case(a.case, a.seed, write_models(tmp), tmp, verbose=True))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
    t0 = time.time()
    counts, findings = run_batches(a.seed, a.cases, a.batch, a.jobs, a.timeout)
    for idx, detail in sorted(findings, key=lambda f: f[0] if f[0] is not None else -1):
        print(f"FINDING case {idx} (replay: {sys.argv[0]} --seed {a.seed} --case {idx}):\n  {detail}")
    print(f"fuzz_python_args: {a.cases} cases in {time.time() - t0:.1f} s: {counts['ok']} ran, "
          f"{counts['expected']} raised a caller's exception, {counts['finding']} findings, {counts['crash']} crashes")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
