#!/usr/bin/env python3
"""table.py — turns ort_bench.py's TSV (stdin; with lathe's columns) into the markdown table of
bench/micro/run.sh: GFLOP/s per case and thread count, lathe/ORT speed ratio (> 1: lathe faster,
at the medians and at the best runs), lathe's share of the in-process FMA peak, and the geometric
mean of the ratios per thread count. With a baseline library's columns (ort_bench.py --base), the
baseline's ratio to ORT ("before") is printed beside lathe's ("after")."""
import math
import sys

peak, rows = {}, []
for line in sys.stdin:
    if line.startswith("#"):
        print(line.rstrip())
        continue
    v = line.rstrip("\n").split("\t")
    if v[0] == "peak":
        peak[int(v[1])] = float(v[3])
    elif len(v) >= 8:
        rows.append(v)
plural = lambda t: "s" if t > 1 else ""
has_base = any(len(v) >= 11 for v in rows)
print("FMA peak measured in-process: " +
      ", ".join(f"{t} thread{plural(t)}: {p:.0f} GFLOP/s" for t, p in sorted(peak.items())))
print()
head = "| case | thr | ORT ms | ORT GFLOP/s | lathe ms | lathe GFLOP/s | lathe/ORT | lathe % peak | best runs lathe/ORT |"
if has_base:
    head += " before/ORT | best runs before/ORT |"
print(head)
print("|---" * (head.count("|") - 1) + "|")
logs, blogs = {}, {}
for v in rows:
    name, th = v[0], int(v[1])
    oms, og, ob, lms, lg, lb = (float(x) for x in v[2:8])
    r = lg / og
    logs.setdefault(th, []).append(math.log(r))
    pk = peak.get(th)
    pct = f"{100 * lg / pk:.0f}%" if pk else "-"
    line = f"| {name} | {th} | {oms:.3f} | {og:.1f} | {lms:.3f} | {lg:.1f} | {r:.2f} | {pct} | {lb / ob:.2f} |"
    if has_base and len(v) >= 11:
        bms, bg, bb = (float(x) for x in v[8:11])
        blogs.setdefault(th, []).append(math.log(bg / og))
        line += f" {bg / og:.2f} | {bb / ob:.2f} |"
    print(line)
print()
for th, l in sorted(logs.items()):
    line = f"geometric mean lathe/ORT speed, {th} thread{plural(th)}: {math.exp(sum(l) / len(l)):.2f} over {len(l)} cases"
    if th in blogs:
        b = blogs[th]
        line += f" (before: {math.exp(sum(b) / len(b)):.2f})"
    print(line)
