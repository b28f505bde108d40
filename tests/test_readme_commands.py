"""test_readme_commands.py — README.md's commands run as written after the set-up, and the docs stay
inside the repository.

Every line of every ```sh block in README.md is run with bash (so its comments, quotes and `;` work as
a reader's shell would take them), in order, in a fresh folder laid out like the repository root
after scripts/run_sample.sh: `build/lathe` (and build/liblathe.so) linking to the binary under test
($LATHE_BIN, default build/lathe), `sample/` written by the set-up's own sample step
(scripts/make_sample.py), an empty `out/`, and `scripts`/`python` linking to the repository's.
LATHE_CACHE_DIR points into the folder (compiled modules and tune.tsv stay out of ~/.cache), and
Python finds the package through PYTHONPATH and LATHE_LIBRARY, as `pip install ./python` would
provide. Each command must exit 0; a failure names the command and shows the end of its output.

Not run, each for the reason in SKIP: the two set-up commands themselves and `pip install` (they
install and build; this test stands in for their effect), and anything with `--backend cuda`
(needs a GPU). Each SKIP entry must still be in the README, so the list cannot rot.

Also: no Markdown link in README.md or docs/*.md points outside the repository or at a missing file,
and no relative path in their text ("../x/y.md" in prose or code) leaves the repository.
"""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LATHE = os.environ.get("LATHE_BIN", os.path.join(ROOT, "build", "lathe"))
if not os.path.isabs(LATHE):
    LATHE = os.path.join(ROOT, LATHE)

SKIP = {
    "scripts/run_sample.sh": "the set-up itself (apt-get, pip, build): this test runs its sample step instead",
    "scripts/test.sh": "the whole CI run, which runs this test",
    "pip install ./python": "installs into the environment: PYTHONPATH and LATHE_LIBRARY stand in for it",
}
GPU_MARK = "--backend cuda"


def readme_commands(text):
    """The lines of the ```sh blocks, without blank lines and whole-line comments."""
    cmds, fence, sh = [], False, False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fence, sh = (False, False) if fence else (True, line.strip() == "```sh")
            continue
        if sh and line.strip() and not line.strip().startswith("#"):
            cmds.append(line.strip())
    return cmds


def command_only(line):
    """The command without its trailing comment (for matching SKIP)."""
    return re.sub(r"\s+#.*$", "", line).strip()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme")
    os.makedirs(d / "build")
    os.symlink(LATHE, d / "build" / "lathe")
    lib = os.path.join(os.path.dirname(LATHE), "liblathe.so")
    if os.path.exists(lib):
        os.symlink(lib, d / "build" / "liblathe.so")
    for name in ("scripts", "python", "docs"):
        os.symlink(os.path.join(ROOT, name), d / name)
    os.makedirs(d / "out")
    r = subprocess.run(["python3", os.path.join(ROOT, "scripts", "make_sample.py"), str(d / "sample")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return d


def test_skip_list_matches_readme():
    cmds = [command_only(c) for c in readme_commands(open(os.path.join(ROOT, "README.md")).read())]
    assert cmds, "README.md has no ```sh blocks"
    for skipped in SKIP:
        assert skipped in cmds, f"SKIP names '{skipped}', which README.md no longer has"


def test_readme_commands_run(workdir):
    env = dict(os.environ, LATHE_CACHE_DIR=str(workdir / "cache"), PYTHONPATH=str(workdir / "python"),
               LATHE_LIBRARY=str(workdir / "build" / "liblathe.so"))
    env.pop("LATHE_NO_PROGRESS", None)
    ran, failed = [], []
    for line in readme_commands(open(os.path.join(ROOT, "README.md")).read()):
        if command_only(line) in SKIP or GPU_MARK in line:
            continue
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=workdir, env=env, capture_output=True,
                           text=True, timeout=900)
        ran.append(line)
        if r.returncode != 0:
            tail = "\n".join((r.stdout + r.stderr).splitlines()[-15:])
            failed.append(f"$ {line}\nexit {r.returncode}\n{tail}")
    assert len(ran) >= 10, ran
    assert not failed, "README commands that fail as written:\n\n" + "\n\n".join(failed)
    # what they promise to leave behind
    for path in ("out/squeezenet.npz", "out/code/model.c", "out/opt.onnx", "out/squeezenet/model.c",
                 "out/trace.json", "out/roofline.svg"):
        assert (workdir / path).exists(), path


def markdown_files():
    docs = os.path.join(ROOT, "docs")
    return [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "python", "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_docs_stay_in_repo(path):
    text = open(path, encoding="utf-8").read()
    for rel in re.findall(r"(?:\.\./)+[\w.-]+(?:/[\w.-]+)*", text):  # a path in prose or code
        inside = [os.path.normpath(os.path.join(base, rel)) for base in (os.path.dirname(path), ROOT)]
        assert any(f.startswith(ROOT + os.sep) and os.path.exists(f) for f in inside), \
            f"{path}: '{rel}' is not a file of the repository (relative to the document or the root)"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://|#|mailto:", target):
            continue
        full = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
        assert full == ROOT or full.startswith(ROOT + os.sep), f"{path}: link {target} leaves the repository"
        assert os.path.exists(full), f"{path}: link {target} names a missing file"
