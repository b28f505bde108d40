#!/usr/bin/env python3
"""check_layers.py — check that every layer of lathe uses only the layers below it, and print the
layer graph.

The layers and what each declares it uses are the lathe_layer(...) lines of cmake/layers.cmake (the
same table the build reads); a layer may use what it declares and, transitively, what those declare.
Checked:
  includes  every `#include "..."` of src/ and tools/ (resolved as the compiler does: next to the
            file, then src/, then include/) must name a file of the same layer or of one below;
  symbols   with --objects DIR: every undefined symbol of the layers' object files under DIR (a
            build folder) that another layer's object defines must be defined in a layer below
            (the build's own link check, liblathe_<layer>.so with --no-undefined, catches the same);
  folders   every folder of src/ is a declared layer, and every declared layer but tools a folder.
Prints each layer (lowest first) with what it declares and what it uses (by include and by call),
then every violation with the file and line (or object and symbol). Exit 1 on any violation,
2 on a usage error.

  scripts/check_layers.py [--root DIR] [--layers FILE] [--objects BUILD_DIR]
"""
import argparse
import os
import re
import subprocess
import sys

LAYER_RE = re.compile(r"^\s*lathe_layer\(\s*([A-Za-z0-9_]+)((?:\s+DEPS(?:\s+[A-Za-z0-9_]+)+)?)\s*\)\s*$")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXT = (".c", ".h", ".def")


def read_layers(path):
    """[(name, [deps])] in file order."""
    layers = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.lstrip().startswith("lathe_layer("):
                continue
            m = LAYER_RE.match(line)
            if not m:
                raise SystemExit(f"{path}:{i}: cannot read this lathe_layer line (one line, NAME [DEPS ...])")
            deps = m.group(2).split()[1:] if m.group(2) else []
            layers.append((m.group(1), deps))
    names = [n for n, _ in layers]
    for n, deps in layers:
        for d in deps:
            if d not in names[:names.index(n)]:
                raise SystemExit(f"{path}: layer {n} declares {d}, which is not a layer declared before it")
    return layers


def closure(layers):
    below = {}
    for n, deps in layers:  # file order is bottom-up, so every dep is already closed
        s = set(deps)
        for d in deps:
            s |= below[d]
        below[n] = s
    return below


def layer_of(root, path):
    """The layer of a file (a path relative to root), or None outside src/ and tools/."""
    parts = path.split(os.sep)
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] == "tools":
        return "tools"
    if parts[0] == "include":
        return "api"  # the public C API header
    return None


def resolve(root, rel_dir, name):
    for base in (rel_dir, "src", "include"):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def scan_includes(root):
    """{(from, to): [where]} and a list of unresolved includes."""
    edges, unresolved = {}, []
    for top in ("src", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for fn in sorted(files):
                if not fn.endswith(SOURCE_EXT):
                    continue
                full = os.path.join(d, fn)
                rel = os.path.relpath(full, root)
                src_layer = layer_of(root, rel)
                with open(full, errors="replace") as f:
                    for ln, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        target = resolve(root, os.path.dirname(rel), m.group(1))
                        if target is None:
                            unresolved.append(f"{rel}:{ln}: #include \"{m.group(1)}\" names no file of the tree")
                            continue
                        dst_layer = layer_of(root, target)
                        if dst_layer and dst_layer != src_layer:
                            edges.setdefault((src_layer, dst_layer), []).append(f"{rel}:{ln}: #include \"{m.group(1)}\"")
    return edges, unresolved


def object_layer(root, rel, names):
    """The layer of an object file (rel: its path inside its target's folder, e.g. src/ops/ops.c.o),
    or None: not one of lathe's, or left over from a source that no longer exists (a build folder
    keeps the objects of moved files)."""
    if rel == "generated/lt_prelude_embed.c.o":
        return "codegen"  # the embedded prelude headers (cmake/embed.cmake)
    m = re.match(r"((src/([A-Za-z0-9_]+)|tools)/.*\.c)\.o$", rel)
    if not m or not os.path.isfile(os.path.join(root, m.group(1))):
        return None
    layer = m.group(3) or "tools"
    return layer if layer in names else None


def scan_symbols(root, objdir, names):
    """{(from, to): [where]} from the object files of the layers under objdir."""
    objs = []
    # the targets the build has now (a folder of a target that no longer exists keeps old objects)
    listed = os.path.join(objdir, "CMakeFiles", "TargetDirectories.txt")
    current = None
    if os.path.isfile(listed):
        with open(listed) as f:
            current = {os.path.relpath(line.strip(), objdir).replace(os.sep, "/") for line in f if line.strip()}
    for d, _, files in os.walk(objdir):
        # the library's and the tool's objects (CMakeFiles/lathe_<layer>.dir, CMakeFiles/lathe.dir),
        # not the fuzz build's instrumented copy of the same sources nor the tests'
        rel = os.path.relpath(d, objdir).replace(os.sep, "/")
        m = re.match(r"CMakeFiles/lathe(_[A-Za-z0-9]+)?\.dir(?=/|$)", rel)
        if not m or "fuzz" in rel or (current is not None and m.group(0) not in current):
            continue
        for fn in files:
            if fn.endswith(".o"):
                full = os.path.join(d, fn)
                inside = os.path.relpath(full, os.path.join(objdir, m.group(0))).replace(os.sep, "/")
                layer = object_layer(root, inside, names)
                if layer:
                    objs.append((full, layer))
    if not objs:
        raise SystemExit(f"--objects {objdir}: no object files of lathe's layers there (build first)")
    defined, undefined = {}, []
    for full, layer in sorted(objs):
        out = subprocess.run(["nm", "-P", full], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            sym, kind = f[0], f[1]
            if kind == "U":
                undefined.append((sym, full, layer))
            elif kind in "TDBRVWCG" and kind.isupper():
                defined.setdefault(sym, layer)
    edges = {}
    for sym, full, layer in undefined:
        owner = defined.get(sym)
        if owner and owner != layer:
            edges.setdefault((layer, owner), []).append(f"{os.path.relpath(full, objdir)}: calls {sym}")
    return edges


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--root", default=here, help="the source tree (default: this script's)")
    ap.add_argument("--layers", help="the layer table (default: ROOT/cmake/layers.cmake)")
    ap.add_argument("--objects", help="a build folder: check the symbols of its object files too")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    layers = read_layers(a.layers or os.path.join(root, "cmake", "layers.cmake"))
    names = [n for n, _ in layers]
    below = closure(layers)
    declared = dict(layers)
    problems = []

    folders = sorted(e for e in os.listdir(os.path.join(root, "src")) if os.path.isdir(os.path.join(root, "src", e)))
    for f in folders:
        if f not in declared:
            problems.append(f"src/{f}/: a folder that is no declared layer (add it to the layer table)")
    for n in names:
        if n != "tools" and n not in folders:
            problems.append(f"layer {n}: declared, but src/{n}/ does not exist")

    inc, unresolved = scan_includes(root)
    problems += unresolved
    sym = scan_symbols(root, os.path.abspath(a.objects), set(names)) if a.objects else {}

    def upward(e):
        src, dst = e
        return src in below and dst not in below[src]

    print("layer graph (lowest first): each layer, what it declares, what it uses")
    print("  (i: by #include, c: by call; ! marks a use of a layer that is not below it)")
    width = max(len(n) for n in names)
    for n in names:
        uses = sorted({d for (s, d) in list(inc) + list(sym) if s == n}, key=lambda d: (d not in names, names.index(d) if d in names else 0, d))
        shown = []
        for d in uses:
            how = ("i" if (n, d) in inc else "") + ("c" if (n, d) in sym else "")
            shown.append(f"{d}({how}){'!' if upward((n, d)) else ''}")
        print(f"  {n:<{width}}  declares: {' '.join(declared[n]) or '-':<26} uses: {' '.join(shown) or '-'}")

    for what, edges in (("includes", inc), ("calls into", sym)):
        for e in sorted(edges):
            if upward(e):
                problems.append(f"{e[0]} -> {e[1]}: {e[0]} {what} {e[1]}, which is not below it:")
                problems += [f"    {w}" for w in edges[e][:20]]
                if len(edges[e]) > 20:
                    problems.append(f"    ... and {len(edges[e]) - 20} more")
    if problems:
        print("\nlayer violations:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"\nok: {len(names)} layers; every include{' and call' if a.objects else ''} goes to a layer below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
