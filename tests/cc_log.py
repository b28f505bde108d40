"""cc_log.py — a C compiler command that counts its runs, for the tests that check a model compiled once
for every shape builds code only for new buckets (test_symbolic_shapes.py, test_cli_symbolic.py,
test_inference_session.py).

counting_cc(tmp_path) writes a wrapper script that appends a line to a log for each compile (not the
`cc --version` probe lathe runs to identify the compiler) and then runs the real compiler ($CC, else
cc); it returns the script's path and the log's. compiles(log) is the number of compiles so far.
"""
import os


def counting_cc(tmp_path):
    log = tmp_path / "cc.log"
    real = os.environ.get("CC") or "cc"
    script = tmp_path / "cc-logged"
    script.write_text(f"#!/bin/sh\ncase \"$*\" in *--version*) ;; *) echo run >> {log} ;; esac\n"
                      f"exec {real} \"$@\"\n")
    script.chmod(0o755)
    return str(script), log


def compiles(log):
    return len(log.read_text().splitlines()) if log.exists() else 0
