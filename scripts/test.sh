#!/usr/bin/env bash
# test.sh — the whole test run (what CI runs): set up, build with -Werror, the layer check, unit
# tests, CLI and bad-input tests, the 9 light models, the ONNX conformance suite against its
# committed floor (and every test's CUDA code compiled with NVRTC), then the same unit tests and the
# interpreter's conformance run under AddressSanitizer + UndefinedBehaviorSanitizer, and bounded runs
# of every fuzzer (docs/FUZZING.md).
#
# One line per stage with its time ("== unit-tests ... ok (41 s)"); each stage's whole output goes to
# build/test-logs/<stage>.log, and a failing stage prints the end of its log and fails the script.
# A stage is one line: `stage NAME COMMAND [ARGS...]` (COMMAND may be a function defined here).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
logs=build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.log

# stage NAME CMD... — run CMD with its output in $logs/NAME.log and print one line with the time; on
# failure print the end of the log and exit with CMD's status. CMD runs in a subshell outside any
# condition, so `set -e` holds inside it (an `if` or `||` around it would switch -e off).
stage() {
    local name=$1 log="$logs/$1.log" t0=$SECONDS rc
    shift
    printf '== %-32s ' "$name ..."
    set +e
    ( set -e; "$@" ) >"$log" 2>&1 </dev/null
    rc=$?
    set -e
    if [ "$rc" -eq 0 ]; then
        echo "ok ($((SECONDS - t0)) s)"
        return 0
    fi
    echo "FAILED (exit $rc, $((SECONDS - t0)) s); the end of $log:"
    tail -n "${LATHE_TEST_TAIL:-60}" "$log" | sed 's/^/    /'
    exit "$rc"
}

nvrtc_env() { # NVRTC from pip when the system has none (setup.sh installed it)
    if [ -z "${LATHE_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -qE 'libnvrtc\.so\.1[23] '; then
        LATHE_NVRTC=$(scripts/nvrtc_path.sh)
        export LATHE_NVRTC
    fi
}
asan_env() {
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
}
stage setup scripts/setup.sh
nvrtc_env
stage build scripts/build.sh build
# every include and every call of a layer goes to a layer below it (cmake/layers.cmake); the build
# above already linked each layer against only those (build/layers/)
stage layers python3 scripts/check_layers.py --objects build
stage sample scripts/run_sample.sh --prepare
stage unit-tests ctest --test-dir build --output-on-failure -j "$jobs"
stage pytest env LATHE_BIN=build/lathe python3 -m pytest -q -n "$jobs" tests
stage conformance-interp scripts/conformance_check.sh build/lathe interp
stage conformance-cpu scripts/conformance_check.sh build/lathe cpu
stage conformance-cuda-compile scripts/conformance_check.sh build/lathe cuda-compile

stage asan-build scripts/build.sh build-asan -DLATHE_SANITIZE=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug
asan_env
stage asan-unit-tests ctest --test-dir build-asan --output-on-failure -j "$jobs"
stage asan-pytest env LATHE_BIN=build-asan/lathe python3 -m pytest -q -n "$jobs" tests/test_bad_input.py tests/test_cli.py tests/test_import_interpreter_audit.py tests/test_hostile_shapes.py tests/test_input_limits.py tests/test_frozen_params.py tests/test_quant_ops.py tests/test_index_checks.py tests/test_cli_symbolic.py tests/test_data_dependent.py -k "not light_model and not word_cleared and not sizes_from_data and not finds_nothing and not symbolic_batch"
stage asan-conformance-interp scripts/conformance_check.sh build-asan/lathe interp

stage fuzz-build scripts/build.sh build-fuzz -DLATHE_FUZZ=ON -DCMAKE_C_COMPILER=clang
mkdir -p build-fuzz/corpus
stage fuzz-corpus python3 fuzz/make_corpus.py build-fuzz/corpus
stage fuzz-import build-fuzz/fuzz_import -max_total_time="${LATHE_FUZZ_SECONDS:-60}" -rss_limit_mb=2048 build-fuzz/corpus
stage fuzz-tune-db-seeds fuzz/tune_db_seeds.sh build-fuzz/corpus_tune_db
stage fuzz-tune-db build-fuzz/fuzz_tune_db -max_total_time="${LATHE_FUZZ_TUNE_SECONDS:-20}" -max_len=4096 -rss_limit_mb=2048 build-fuzz/corpus_tune_db
stage fuzz-npy-seeds python3 fuzz/io_seeds.py npy build-fuzz/corpus_npy
stage fuzz-npy build-fuzz/fuzz_npy -max_total_time="${LATHE_FUZZ_IO_SECONDS:-20}" -max_len=4096 -malloc_limit_mb=256 -rss_limit_mb=2048 build-fuzz/corpus_npy
stage fuzz-npz-seeds python3 fuzz/io_seeds.py npz build-fuzz/corpus_npz
stage fuzz-npz build-fuzz/fuzz_npz -max_total_time="${LATHE_FUZZ_IO_SECONDS:-20}" -max_len=65536 -malloc_limit_mb=256 -rss_limit_mb=2048 build-fuzz/corpus_npz
stage fuzz-image-seeds python3 fuzz/image_seeds.py build-fuzz/corpus_image
stage fuzz-image-decode build-fuzz/fuzz_image_decode -max_total_time="${LATHE_FUZZ_IO_SECONDS:-20}" -max_len=65536 -rss_limit_mb=4096 build-fuzz/corpus_image
stage fuzz-artifact-seeds bash -c 'mkdir -p build-fuzz/corpus_artifact && build/lathe compile sample/mlp.onnx --dim batch=2 --save build-fuzz/corpus_artifact/mlp.lathe >/dev/null'
stage fuzz-artifact build-fuzz/fuzz_artifact -max_total_time="${LATHE_FUZZ_IO_SECONDS:-20}" -max_len=262144 -rss_limit_mb=2048 build-fuzz/corpus_artifact
stage fuzz-schedule-seeds fuzz/schedule_seeds.sh build-fuzz/fuzz_schedule build-fuzz/corpus_schedule
stage fuzz-schedule build-fuzz/fuzz_schedule -max_total_time="${LATHE_FUZZ_SCHEDULE_SECONDS:-20}" -max_len=512 -dict=fuzz/schedule.dict -rss_limit_mb=2048 build-fuzz/corpus_schedule
stage fuzz-cli-specs-seeds fuzz/cli_specs_seeds.sh build-fuzz/corpus_cli_specs
stage fuzz-cli-specs build-fuzz/fuzz_cli_specs -max_total_time="${LATHE_FUZZ_CLI_SECONDS:-20}" -max_len=512 -dict=fuzz/cli_specs.dict -rss_limit_mb=2048 build-fuzz/corpus_cli_specs
stage fuzz-python-args env LATHE_BIN=build/lathe python3 tests/fuzz_python_args.py --cases 300 --seed 1 --jobs "$jobs"
stage fuzz-export env LATHE_BIN=build/lathe python3 fuzz/fuzz_export.py --seconds "${LATHE_FUZZ_EXPORT_SECONDS:-60}" --batch 40 --cuda
# the compile pipeline against the interpreter on mutated node tests (kernels in the bounds-checked
# Loop IR evaluator); -entropic=0: entropic scheduling spends most of the time on bookkeeping here
node_tests=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node'))")
mkdir -p build-fuzz/corpus_compile_diff
stage fuzz-compile-diff env LATHE_FUZZ_NODE_TESTS="$node_tests" build-fuzz/fuzz_compile_diff -entropic=0 -max_total_time="${LATHE_FUZZ_DIFF_SECONDS:-60}" -max_len=64 -rss_limit_mb=4096 -timeout=60 build-fuzz/corpus_compile_diff
echo "== all tests passed (logs in $logs)"
