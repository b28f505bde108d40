#!/usr/bin/env bash
# test.sh — the whole test run (what CI runs): set up, build with -Werror, unit tests, CLI and
# bad-input tests, the 9 light models, the ONNX conformance suite against its committed floor (and
# every test's CUDA code compiled with NVRTC), then
# the same unit tests and the interpreter's conformance run under AddressSanitizer + UndefinedBehaviorSanitizer,
# and bounded runs of the import and tuning-database fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)
# NVRTC from pip when the system has none (setup.sh installed it)
if [ -z "${LATHE_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -qE 'libnvrtc\.so\.1[23] '; then
  LATHE_NVRTC=$(scripts/nvrtc_path.sh)
  export LATHE_NVRTC
fi

echo "== build"
scripts/build.sh build
echo "== unit tests"
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== CLI, bad-input and model tests"
LATHE_BIN=build/lathe python3 -m pytest -q -n "$jobs" tests
echo "== conformance (interp, and cpu: the compiled path)"
scripts/conformance_check.sh build/lathe interp
scripts/conformance_check.sh build/lathe cpu
echo "== CUDA code generation: every conformance test compiled for the GPU with NVRTC (no GPU needed)"
scripts/conformance_check.sh build/lathe cuda-compile

echo "== ASan+UBSan build"
scripts/build.sh build-asan -DLATHE_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j "$jobs"
LATHE_BIN=build-asan/lathe python3 -m pytest -q -n "$jobs" tests/test_bad_input.py tests/test_cli.py tests/test_audit_issue2.py -k "not light_model"
scripts/conformance_check.sh build-asan/lathe interp

echo "== fuzz (bounded)"
scripts/build.sh build-fuzz -DLATHE_FUZZ=ON -DCMAKE_C_COMPILER=clang
mkdir -p build-fuzz/corpus
python3 fuzz/make_corpus.py build-fuzz/corpus
build-fuzz/fuzz_import -max_total_time="${LATHE_FUZZ_SECONDS:-60}" -rss_limit_mb=2048 build-fuzz/corpus
fuzz/tune_db_seeds.sh build-fuzz/corpus_tune_db
build-fuzz/fuzz_tune_db -max_total_time="${LATHE_FUZZ_TUNE_SECONDS:-20}" -max_len=4096 -rss_limit_mb=2048 build-fuzz/corpus_tune_db
echo "== all tests passed"
