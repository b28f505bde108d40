#!/usr/bin/env bash
# tests/gpu/run.sh — THE script to run on a GPU machine (CUDA driver + toolkit; no internet needed).
#
# Builds lathe, runs the CUDA unit tests, `lathe conformance --backend cuda` (every node test compiled
# for the GPU and run there: plans upload weights once, copy inputs/outputs per run and replay their
# kernels as a CUDA graph; nodes with no GPU lowering run as host steps), the model tests
# (`lathe run --backend cuda` against onnxruntime's CPU outputs, when python3 has numpy, onnx and
# onnxruntime), bench/gpu (kernels: lathe vs cuBLAS; models: bench_models.py), vs PyTorch eager and
# torch.compile when torch is installed), then prints a short summary table. Anything missing on the
# machine is reported and skipped, never fatal.
#
# usage: tests/gpu/run.sh [PHASE...]       PHASE: env build unit conformance models hostile idioms indices
#                                          artifact symbolic data_dependent dlpack bench bench_models summary
#                                          (default: all of them, in that order)
# Each phase writes its rows to $BUILD/gpu_summary.<phase>.txt (replacing its previous ones), so phases
# run in separate invocations (each under 10 minutes on an H100: build ~1-2 min, unit ~2 min, bench
# ~5 min with torch.compile) still end with one table: `tests/gpu/run.sh summary` prints it.
# Environment: BUILD (default build-gpu), JOBS (default nproc), LATHE_CUDA_CACHE (cubin cache, default
# $BUILD/cuda-cache), BENCH_ARGS (extra bench.py arguments, e.g. "--no-compile" or "--reps 10"),
# BENCH_MODELS_ARGS (extra bench_models.py arguments, e.g. "--models resnet50_b1_fp32 --no-compile"),
# CONFORMANCE_TIMEOUT (seconds, default 540), MODELS (default "quick"; "zoo" the exported architectures;
# "all" both and the big models),
# LATHE_ONNX_SUITE (the ONNX node tests, when the onnx package is not installed), LATHE_NVRTC (the NVRTC
# library; found under /usr/local/cuda* or a pip nvidia-cuda-nvrtc package when not on the loader path).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
export LATHE_CUDA_CACHE=${LATHE_CUDA_CACHE:-$BUILD/cuda-cache}
SUMMARY=/dev/null # set per phase: $BUILD/gpu_summary.<phase>.txt
PHASES=(env build unit conformance models hostile idioms indices artifact symbolic data_dependent dlpack bench bench_models)
PY=${PYTHON:-python3}
mkdir -p "$BUILD"
# NVRTC off the loader path (a toolkit not in ld.so.conf, or pip's nvidia-cuda-nvrtc): tell lathe
if [ -z "${LATHE_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.1[23]'; then
    LATHE_NVRTC=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libnvrtc.so.1[23]' 2>/dev/null | head -1)
    if [ -n "$LATHE_NVRTC" ]; then
        export LATHE_NVRTC
        export LD_LIBRARY_PATH=$(dirname "$LATHE_NVRTC")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} # its builtins library
    fi
fi

row() { printf '%-28s %-8s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY"; }
have_py() { command -v "$PY" >/dev/null 2>&1; }
py_has() { have_py && "$PY" -c "import $1" >/dev/null 2>&1; }
secs() { echo $(( $(date +%s) - $1 )); }

# One tests/gpu script: ROW (its summary row's name), SCRIPT, then the Python modules it needs besides
# onnx and numpy; a missing one is a SKIP row.
gpu_script() {
    local name=$1 script=$2 m
    shift 2
    for m in onnx numpy "$@"; do
        if ! py_has "$m"; then row "$name" "SKIP" "python3 lacks $m"; return; fi
    done
    "$PY" "$ROOT/tests/gpu/$script" --lathe "$BUILD/lathe" --summary "$SUMMARY"
}

phase_env() {
    echo "== environment"
    local gpu drv
    if command -v nvidia-smi >/dev/null 2>&1; then
        gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
        drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
        row "gpu" "info" "${gpu:-unknown}, driver ${drv:-?}"
    else
        row "gpu" "info" "nvidia-smi not found"
    fi
    if command -v nvcc >/dev/null 2>&1; then row "cuda toolkit" "info" "$(nvcc --version | tail -1)"
    else row "cuda toolkit" "info" "nvcc not on PATH (NVRTC is what lathe needs)"; fi
    local nvrtc
    nvrtc=$( (ldconfig -p 2>/dev/null | grep -o 'libnvrtc\.so\.1[0-9]' | sort -u | tr '\n' ' ') || true)
    [ -z "$nvrtc" ] && nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1? 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
    row "nvrtc" "info" "${nvrtc:-not found}"
    if have_py; then
        local mods=""
        for m in numpy onnx onnxruntime torch; do
            if v=$("$PY" -c "import $m; print($m.__version__)" 2>/dev/null); then mods="$mods $m $v;"
            else mods="$mods $m -;"; fi
        done
        if py_has torch; then
            mods="$mods torch.cuda $("$PY" -c 'import torch; print(torch.cuda.is_available())' 2>/dev/null)"
        fi
        row "python" "info" "$("$PY" --version 2>&1):$mods"
    else
        row "python" "info" "python3 not found (model tests and PyTorch comparison skipped)"
    fi
}

phase_build() {
    echo "== build ($BUILD, -j$JOBS)"
    local t0; t0=$(date +%s)
    if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLATHE_WERROR=OFF >"$BUILD/cmake.log" 2>&1 &&
        cmake --build "$BUILD" -j"$JOBS" >>"$BUILD/cmake.log" 2>&1; then
        row "build" "ok" "$(secs "$t0") s"
    else
        tail -30 "$BUILD/cmake.log"
        row "build" "FAILED" "see $BUILD/cmake.log"
        return 1
    fi
    # the benchmark driver: linked against the static library and the optional image codecs it may
    # have been built with (every one pkg-config knows; an unused one costs nothing)
    local cc=${CC:-cc} out="$BUILD/bench_kernels" codecs=() p
    for p in libpng libwebp libopenjp2 libtiff-4; do
        pkg-config --exists "$p" 2>/dev/null && codecs+=($(pkg-config --libs "$p"))
    done
    local flags=(-std=gnu11 -O2 -I"$ROOT/src" -I"$ROOT/include" "$ROOT/bench/gpu/bench_kernels.c" "$BUILD/liblathe.a")
    if "$cc" "${flags[@]}" "${codecs[@]}" -lz -lm -ldl -lpthread -o "$out" >"$BUILD/bench_build.log" 2>&1 ||
        "$cc" "${flags[@]}" "${codecs[@]}" -ljpeg -lz -lm -ldl -lpthread -o "$out" >>"$BUILD/bench_build.log" 2>&1; then
        row "bench_kernels build" "ok" "$out"
    else
        tail -20 "$BUILD/bench_build.log"
        row "bench_kernels build" "FAILED" "see $BUILD/bench_build.log"
    fi
}

phase_unit() {
    echo "== CUDA unit tests"
    local t
    for t in test_cuda_nogpu test_cuda_nvrtc test_cuda_gpu test_codegen test_plan_device test_run_device; do
        if [ ! -x "$BUILD/$t" ]; then row "$t" "MISSING" "not built"; continue; fi
        local t0 log="$BUILD/$t.log"; t0=$(date +%s)
        (cd "$ROOT" && timeout 600 "$BUILD/$t") >"$log" 2>&1
        local rc=$?
        grep -E '^test_|SKIP|check failed|mismatch|want' "$log" | head -40
        local note
        note=$(grep -E 'SKIP|ceilings:|all match|MISMATCH|ran .* on the GPU' "$log" | head -3 | tr '\n' ' ' | cut -c1-150)
        if [ $rc -ne 0 ]; then row "$t" "FAILED" "exit $rc after $(secs "$t0") s; see $log"
        elif grep -q 'SKIP (' "$log"; then row "$t" "skip" "$(secs "$t0") s ${note}"
        else row "$t" "ok" "$(secs "$t0") s ${note}"; fi
    done
}

phase_conformance() {
    echo "== lathe conformance --backend cuda"
    local lathe="$BUILD/lathe" probe
    if [ ! -x "$lathe" ]; then row "conformance cuda" "SKIP" "lathe not built"; return; fi
    probe=$("$lathe" run "$ROOT/tests/data/add.onnx" --backend cuda 2>&1 >/dev/null)
    local rc=$?
    if [ $rc -eq 3 ] && echo "$probe" | grep -qiE "not available|unknown backend"; then
        row "conformance cuda" "SKIP" "the CLI has no cuda backend wired yet: $(echo "$probe" | head -1 | cut -c1-90)"
        return
    fi
    local t0 out="$BUILD/conformance_cuda.txt"; t0=$(date +%s)
    timeout "${CONFORMANCE_TIMEOUT:-540}" "$lathe" conformance --backend cuda -j "$JOBS" --timeout 120 \
        --cache-dir "$LATHE_CUDA_CACHE" --json "$BUILD/conformance_cuda.json" >"$out" 2>&1
    rc=$?
    local counts; counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$out" | tail -1)
    if [ "${counts%% skipped*}" = "0 passed, 0 failed, 0" ]; then
        row "conformance cuda" "FAILED" "no tests found: give the onnx 1.22.0 node tests with LATHE_ONNX_SUITE=DIR"
    elif [ -n "$counts" ]; then row "conformance cuda" "ran" "$counts ($(secs "$t0") s); failures in $out"
    elif [ $rc -eq 124 ]; then row "conformance cuda" "TIMEOUT" "after ${CONFORMANCE_TIMEOUT:-540} s (raise CONFORMANCE_TIMEOUT)"
    else row "conformance cuda" "FAILED" "exit $rc: $(tail -1 "$out" | cut -c1-100)"; fi
}

phase_models() {
    echo "== models vs onnxruntime (CPU)"
    local m
    for m in numpy onnx onnxruntime; do
        if ! py_has $m; then row "models vs onnxruntime" "SKIP" "python3 lacks $m"; return; fi
    done
    local t0; t0=$(date +%s)
    "$PY" "$ROOT/tests/gpu/models_ort.py" --lathe "$BUILD/lathe" --set "${MODELS:-quick}" --summary "$SUMMARY"
    echo "(models: $(secs "$t0") s)"
}

phase_hostile() {
    echo "== hostile shapes on the GPU (under compute-sanitizer when installed)"
    gpu_script "hostile shapes (cuda)" hostile_cuda.py
}

phase_idioms() {
    echo "== exporter idioms on the GPU (wide rows, folded MatMuls, ...) against the interpreter"
    gpu_script "exporter idioms (cuda)" idioms_cuda.py
}

phase_indices() {
    echo "== compiled Gathers and Scatters on the GPU (constant, input and computed indices) against the interpreter"
    gpu_script "indices (cuda)" indices_cuda.py pytest
}

phase_artifact() {
    echo "== a CUDA .lathe artifact: saved on the GPU, run with no NVRTC"
    gpu_script "artifact (cuda)" artifact_cuda.py
    gpu_script "artifact offline (cuda)" artifact_offline_cuda.py
}

phase_symbolic() {
    echo "== symbolic dims compiled once on the GPU (bert_ci at several shapes) against the interpreter"
    gpu_script "symbolic dims (cuda)" symbolic_cuda.py
}

phase_data_dependent() {
    echo "== models whose sizes depend on the data, split and compiled on the GPU, against the interpreter"
    gpu_script "data-dependent sizes (cuda)" data_dependent_cuda.py
}

phase_dlpack() {
    echo "== GPU tensors in and out (torch CUDA tensors, IO binding, DLPack) with no host copy, against the CPU"
    gpu_script "dlpack (cuda)" dlpack_cuda.py torch
}

phase_bench() {
    echo "== bench/gpu"
    if [ ! -x "$BUILD/bench_kernels" ]; then row "bench/gpu" "SKIP" "bench_kernels not built"; return; fi
    if ! have_py; then
        "$BUILD/bench_kernels" | tee "$BUILD/bench_kernels.txt"
        row "bench/gpu" "ran" "python3 missing: no PyTorch column; table in $BUILD/bench_kernels.txt"
        return
    fi
    local t0; t0=$(date +%s)
    # shellcheck disable=SC2086
    "$PY" "$ROOT/bench/gpu/bench.py" --bin "$BUILD/bench_kernels" --json-out "$BUILD/bench_gpu.json" \
        --summary "$SUMMARY" ${BENCH_ARGS:-} 2>&1 | tee "$BUILD/bench_gpu.txt"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then row "bench/gpu" "FAILED" "exit $rc: $(grep -E 'bench_kernels|bench.py' "$BUILD/bench_gpu.txt" | tail -1 | cut -c1-110)"
    else row "bench/gpu" "ok" "$(secs "$t0") s; full output in $BUILD/bench_gpu.txt"; fi
}

phase_bench_models() {
    echo "== bench/gpu/bench_models.py (ResNet-50, BERT-base: lathe vs PyTorch eager / torch.compile)"
    if ! py_has torch; then row "bench models" "SKIP" "python3 lacks torch"; return; fi
    if [ ! -x "$BUILD/lathe" ]; then row "bench models" "SKIP" "lathe not built"; return; fi
    local t0; t0=$(date +%s)
    # shellcheck disable=SC2086
    "$PY" "$ROOT/bench/gpu/bench_models.py" --lathe "$BUILD/lathe" --workdir "$BUILD/bench_models" \
        --summary "$SUMMARY" ${BENCH_MODELS_ARGS:-} 2>&1 | tee "$BUILD/bench_models.txt"
    echo "(bench models: $(secs "$t0") s)"
}

phase_summary() {
    echo
    echo "================ tests/gpu/run.sh summary ================"
    local p any=0
    for p in "${PHASES[@]}"; do
        [ -s "$BUILD/gpu_summary.$p.txt" ] && cat "$BUILD/gpu_summary.$p.txt" && any=1
    done
    [ $any -eq 1 ] || echo "(no phase has run yet)"
}

phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=("${PHASES[@]}" summary)
for p in "${phases[@]}"; do
    case "$p" in
    env | build | unit | conformance | models | hostile | idioms | indices | artifact | symbolic | data_dependent | dlpack | bench | bench_models)
        SUMMARY=$BUILD/gpu_summary.$p.txt
        : >"$SUMMARY"
        "phase_$p" || { [ "$p" = build ] && phase_summary && exit 1; } ;;
    summary) phase_summary ;;
    *) echo "unknown phase '$p' (${PHASES[*]} summary)"; exit 1 ;;
    esac
done
