#!/usr/bin/env python3
"""codegen_snapshot.py — record what the compiler generates for a model set, and compare two records.

A refactoring that must leave behaviour unchanged is checked the strict way with this: the generated
code of every model is byte-identical before and after. For each model it runs

  lathe compile MODEL --dump-code DIR/cpu --cc /bin/true     (CPU: model.c, kernels.txt, groups.txt;
                                                              the C compiler is skipped, so the
                                                              compile itself ends in an error)
  lathe compile MODEL --target c -o DIR/export               (the standalone C export)
  lathe compile MODEL --target cuda -o DIR/cuda              (CUDA: model.cu, kernels.txt, groups.txt)

and writes MANIFEST: one line per generated file, "sha256  model/kind/file", plus each command's exit
status and first error line (so a model refused before and after is compared too). Binary artefacts
(model.cubin, model.weights) are left out: they follow from the text.

Models: every onnx node test (LATHE_ONNX_SUITE or the installed onnx package's backend/test/data/node),
the onnx "light" models and the benchmark models (built on first use with bench/models/build.py,
symbolic dims bound to batch 1, sequence 128).

  scripts/codegen_snapshot.py record OUT [--lathe build/lathe] [--jobs N] [--only SUBSTR] [--no-bench]
  scripts/codegen_snapshot.py compare OLD NEW      # exit 1 and list the differences when any
"""
import argparse
import concurrent.futures as cf
import hashlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = {
    "cpu": ["--dump-code", "{dir}", "--cc", "/bin/true", "--no-cache"],
    "export": ["--target", "c", "-o", "{dir}", "--embed-limit", "0"],
    "cuda": ["--target", "cuda", "-o", "{dir}"],
}
SKIP_FILES = {"model.cubin", "model.weights"}
TRANSFORMER_DIMS = ["--dim", "batch=1", "--dim", "sequence=128"]


def node_suite():
    env = os.environ.get("LATHE_ONNX_SUITE")
    if env:
        return env
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def models(args):
    """[(label, path, extra args)] in a fixed order."""
    out = []
    suite = node_suite()
    for name in sorted(os.listdir(suite)):
        path = os.path.join(suite, name, "model.onnx")
        if os.path.exists(path):
            out.append((f"node/{name}", path, []))
    if not args.no_bench:
        sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
        import zoo
        for name in zoo.ALL:
            extra = TRANSFORMER_DIMS if name in zoo.VOCAB else []
            out.append((f"model/{name}", zoo.ensure_built(name), extra))
    if args.only:
        out = [m for m in out if args.only in m[0]]
    return out


def record_one(lathe, outdir, label, path, extra):
    lines = []
    for kind, template in KINDS.items():
        d = os.path.join(outdir, label, kind)
        os.makedirs(d, exist_ok=True)
        cmd = [lathe, "compile", path] + extra + [a.replace("{dir}", d) for a in template]
        env = dict(os.environ, LATHE_CACHE_DIR=os.path.join(outdir, ".cache"))
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600, env=env)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        first = next((ln for ln in err.splitlines() if "error" in ln), "")
        # the temporary module path of a skipped C compiler run differs per run
        if kind == "cpu" and ".so.tmp" in first:
            first = "(module build skipped)"
        lines.append(f"status  {label}/{kind}  rc={rc} {first}")
        for f in sorted(os.listdir(d)):
            if f in SKIP_FILES:
                continue
            with open(os.path.join(d, f), "rb") as fh:
                lines.append(f"{hashlib.sha256(fh.read()).hexdigest()}  {label}/{kind}/{f}")
    return lines


def record(args):
    os.makedirs(args.out, exist_ok=True)
    ms = models(args)
    lathe = os.path.abspath(args.lathe)
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        results = list(ex.map(lambda m: record_one(lathe, args.out, *m), ms))
    with open(os.path.join(args.out, "MANIFEST"), "w") as fh:
        for lines in results:
            fh.write("\n".join(lines) + "\n")
    print(f"recorded {len(ms)} models into {args.out}/MANIFEST")
    return 0


def read_manifest(d):
    entries = {}
    with open(os.path.join(d, "MANIFEST")) as fh:
        for ln in fh:
            ln = ln.rstrip("\n")
            if ln.startswith("status  "):
                _, key, rest = ln.split("  ", 2)
                entries["status " + key] = rest
            elif ln:
                digest, key = ln.split("  ", 1)
                entries[key] = digest
    return entries


def compare(args):
    old, new = read_manifest(args.old), read_manifest(args.new)
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a != b:
            diffs.append((key, a, b))
    for key, a, b in diffs:
        if key.startswith("status "):
            print(f"{key}: {a!r} -> {b!r}")
        elif a is None or b is None:
            print(f"{key}: {'only in new' if a is None else 'only in old'}")
        else:
            print(f"{key}: differs   (diff {os.path.join(args.old, key)} {os.path.join(args.new, key)})")
    print(f"{len(old)} entries before, {len(new)} after, {len(diffs)} differ")
    return 1 if diffs else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out")
    r.add_argument("--lathe", default=os.path.join(ROOT, "build", "lathe"))
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    r.add_argument("--only", default=None, help="only models whose label contains this")
    r.add_argument("--no-bench", action="store_true", help="node tests only")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    args = ap.parse_args()
    return record(args) if args.cmd == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
