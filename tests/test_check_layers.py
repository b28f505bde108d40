"""test_check_layers.py — scripts/check_layers.py, the layer check CI runs (the `layers` stage).

On this tree it passes and prints every layer of cmake/layers.cmake. On a small tree of its own
(two layers, base below graph) it passes while graph includes base, and fails naming the file,
the line and both layers once base includes graph (an upward include), once a file's include
names no file, and once src/ has a folder the table does not declare.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def test_this_tree_passes():
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(ROOT, "cmake", "layers.cmake")) as f:
        layers = [line.split("(")[1].split()[0].rstrip(")") for line in f if line.startswith("lathe_layer(")]
    assert layers[0] == "base" and layers[-1] == "tools"
    for name in layers:
        assert f"  {name} " in r.stdout


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def small_tree(tmp_path):
    root = str(tmp_path)
    write(root, "cmake/layers.cmake", "lathe_layer(base)\nlathe_layer(graph DEPS base)\nlathe_layer(tools DEPS graph)\n")
    write(root, "src/base/base.h", "/* base */\n")
    write(root, "src/base/base.c", '#include "base.h"\n')
    write(root, "src/graph/graph.c", '#include "../base/base.h"\n#include "graph.h"\n')
    write(root, "src/graph/graph.h", "/* graph */\n")
    return root


def test_small_tree_passes(tmp_path):
    r = run("--root", small_tree(tmp_path))
    assert r.returncode == 0, r.stdout
    assert re.search(r"^  graph +declares: base +uses: base\(i\)$", r.stdout, re.M), r.stdout


def test_upward_include_fails(tmp_path):
    root = small_tree(tmp_path)
    write(root, "src/base/base.c", '#include "base.h"\n\n#include "graph/graph.h"\n')
    r = run("--root", root)
    assert r.returncode == 1
    assert "base -> graph: base includes graph, which is not below it" in r.stdout
    assert 'src/base/base.c:3: #include "graph/graph.h"' in r.stdout
    assert "graph(i)!" in r.stdout


def test_unresolved_include_and_undeclared_folder_fail(tmp_path):
    root = small_tree(tmp_path)
    write(root, "src/graph/graph.c", '#include "../base/nothere.h"\n')
    write(root, "src/extra/x.c", "int x;\n")
    r = run("--root", root)
    assert r.returncode == 1
    assert 'src/graph/graph.c:1: #include "../base/nothere.h" names no file of the tree' in r.stdout
    assert "src/extra/: a folder that is no declared layer" in r.stdout
