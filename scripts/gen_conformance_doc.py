#!/usr/bin/env python3
"""gen_conformance_doc.py — writes docs/CONFORMANCE.md from the JSON of `lathe conformance --json FILE`:
the totals, passed/total per operator, and every failing or skipped test with its reason.

    scripts/gen_conformance_doc.py results.json [-o docs/CONFORMANCE.md]
    scripts/gen_conformance_doc.py --run build/lathe [-j N] [-o docs/CONFORMANCE.md]   # run, then write
    ... --also "cuda (H200)=cuda.json" --also ...   # other backends' runs: totals + their failures

The per-operator table is the first run's; each --also run adds a row to the "Per backend" table
and lists the tests whose verdict differs from the first run's.

Each test counts toward one operator: the op its model uses whose name (case and underscores
ignored) is the longest prefix of the test name (test_reduce_sum_keepdims -> ReduceSum); for an
"_expanded" test, the function it expands (test_softmax_axis_0_expanded -> Softmax); else the model's
only op (test_greater_equal -> GreaterOrEqual, test_batchnorm_epsilon -> BatchNormalization); else
the best name match among all ONNX ops or the model's ops.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def known_ops():
    """All op names onnx defines (domain-qualified outside ai.onnx), if onnx is importable."""
    try:
        import onnx.defs
    except ImportError:
        return set()
    ops = set()
    for s in onnx.defs.get_all_schemas_with_history():
        ops.add(s.name if s.domain in ("", "ai.onnx") else f"{s.domain}:{s.name}")
    return ops


def model_ops(suite, name):
    """Ops of a test's model read with onnx (for tests whose model lathe could not load)."""
    try:
        import onnx
        m = onnx.load(os.path.join(suite, name, "model.onnx"), load_external_data=False)
    except Exception:  # noqa: BLE001 - a broken model simply has no ops to report
        return []
    return sorted({n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}:{n.op_type}" for n in m.graph.node})


def key(s):
    return s.split(":")[-1].replace("_", "").lower()


# Test-name abbreviations the suite uses for an operator.
ALIASES = {"mvn": "MeanVarianceNormalization", "nllloss": "NegativeLogLikelihoodLoss",
           "sce": "SoftmaxCrossEntropyLoss"}


def main_op(test_name, used, all_ops):
    k = key(test_name[5:] if test_name.startswith("test_") else test_name)
    k = k.replace("aionnxml", "", 1) if k.startswith("aionnxml") else k
    for short, op in ALIASES.items():
        if k.startswith(short):
            return op

    def by_name(ops):
        best = None
        for op in sorted(ops):
            ok = key(op)
            if ok and k.startswith(ok) and (best is None or len(ok) > len(key(best))):
                best = op
        return best

    real = [o for o in used if o != "Constant"]
    # an expanded test (a function's body) is about the function, which its model no longer uses
    if "expanded" in test_name:
        found = by_name(set(all_ops) | set(used))
        if found:
            return found
    found = by_name(used)
    if found:
        return found
    if len(real) == 1:
        return real[0]
    found = by_name(set(all_ops))
    if found:
        return found
    if not used:
        return "(unknown)"

    def common(op):
        ok, n = key(op), 0
        while n < min(len(ok), len(k)) and ok[n] == k[n]:
            n += 1
        return n

    return max(sorted(used), key=common)


def cell(s, limit=400):
    s = (s or "").replace("\n", " ").replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def backend_section(results, also):
    """The 'Per backend' table: totals of each run, and the tests whose verdict differs from the first."""
    lines = ["## Per backend", "",
             "| Backend | Passed | Failed | Skipped | Tests that differ from the first row |",
             "|---|---:|---:|---:|---|"]
    base = {t["name"]: t["status"] for t in results["tests"]}
    runs = [(results.get("backend", "interp"), results)] + also
    for name, r in runs:
        diff = sorted(t["name"] + (" (" + t["status"] + ")") for t in r["tests"]
                      if base.get(t["name"]) != t["status"]) if r is not results else []
        lines.append(f"| {cell(name, 80)} | {r['passed']} | {r['failed']} | {r['skipped']} | "
                     f"{cell(', '.join(diff), 600) if diff else 'none'} |")
    return lines + [""]


def write_doc(results, out_path, also=()):
    tests = results["tests"]
    suite = results.get("suite", "")
    all_ops = known_ops()
    per_op = collections.OrderedDict()
    for t in tests:
        used = t.get("ops") or (model_ops(suite, t["name"]) if suite else [])
        op = main_op(t["name"], used, all_ops)
        t["main_op"] = op
        st = per_op.setdefault(op, {"passed": 0, "failed": 0, "skipped": 0})
        st[{"pass": "passed", "fail": "failed", "skip": "skipped"}[t["status"]]] += 1
    passed, failed, skipped = results["passed"], results["failed"], results["skipped"]
    total = passed + failed + skipped
    lines = [
        f"# ONNX conformance — `{results.get('backend', 'interp')}` backend",
        "",
        "Generated by `scripts/gen_conformance_doc.py` from `lathe conformance --json`; do not edit by hand.",
        "",
        f"onnx node tests: **{passed} passed**, {failed} failed, {skipped} skipped of {total}"
        + (f" ({100.0 * passed / total:.1f}% passing)." if total else "."),
        "",
        *(backend_section(results, list(also)) if also else []),
        "## Per operator",
        "",
        "Each test is counted once, under the operator it tests.",
        "",
        "| Operator | Passed | Total | |",
        "|---|---:|---:|---|",
    ]
    for op in sorted(per_op, key=lambda o: (":" in o, o.lower())):  # ai.onnx first, then other domains
        st = per_op[op]
        n = st["passed"] + st["failed"] + st["skipped"]
        mark = "ok" if st["passed"] == n else ("partial" if st["passed"] else "fails")
        lines.append(f"| {op} | {st['passed']} | {n} | {mark} |")
    fails = [t for t in tests if t["status"] == "fail"]
    lines += ["", f"## Failing tests ({len(fails)})", ""]
    if fails:
        lines += ["| Test | Operator | Reason |", "|---|---|---|"]
        lines += [f"| {t['name']} | {t['main_op']} | {cell(t.get('reason'))} |" for t in fails]
    else:
        lines.append("None.")
    skips = [t for t in tests if t["status"] == "skip"]
    if skips:
        lines += ["", f"## Skipped tests ({len(skips)})", "", "| Test | Reason |", "|---|---|"]
        lines += [f"| {t['name']} | {cell(t.get('reason'))} |" for t in skips]
    lines.append("")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(tmp, out_path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?", help="JSON written by lathe conformance --json")
    ap.add_argument("--run", metavar="LATHE", help="run LATHE conformance first (instead of reading results)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="parallel tests with --run")
    ap.add_argument("--backend", default="interp", help="backend for --run (default interp)")
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "CONFORMANCE.md"))
    ap.add_argument("--also", action="append", default=[], metavar="NAME=JSON",
                    help="another backend's run: a row of the per-backend table (repeatable)")
    a = ap.parse_args(argv)
    if bool(a.results) == bool(a.run):
        ap.error("give either RESULTS.json or --run LATHE")
    path = a.results
    tmpdir = None
    if a.run:
        tmpdir = tempfile.mkdtemp(prefix="lathe-conf-")
        path = os.path.join(tmpdir, "results.json")
        r = subprocess.run([a.run, "conformance", "--backend", a.backend, "-j", str(a.jobs), "--json", path])
        if r.returncode != 0:
            sys.exit(f"lathe conformance exited with {r.returncode}")
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    also = []
    for spec in a.also:
        name, _, file = spec.partition("=")
        if not file:
            ap.error(f"--also needs NAME=JSON, got '{spec}'")
        with open(file, encoding="utf-8") as f:
            also.append((name, json.load(f)))
    write_doc(results, a.output, also)
    print(f"wrote {a.output}: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    if tmpdir:
        os.remove(path)
        os.rmdir(tmpdir)


if __name__ == "__main__":
    main()
