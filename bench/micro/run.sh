#!/bin/bash
# run.sh — the microkernel benchmark: builds bench/micro/gemm_bench.c with the CPU backend's flags
# (cc -O3 -march=native -fopenmp), as a program and as a shared library, and runs onnxruntime's
# kernels on the same cases in the same process, in turns (bench/micro/ort_bench.py), then prints
# a table of GFLOP/s, the ratio lathe/ORT (> 1: lathe faster) and the share of the FMA peak.
#
# Usage: bench/micro/run.sh [-t 1,2] [-r REPS] [-f SUBSTRING] [--no-ort] [--base ROOT] [--clock cpu|wall]
#   --base ROOT: also build the harness against ROOT/src/codegen/prelude (an older copy of the
#   headers, e.g. `git archive HEAD src | tar -x -C /tmp/base`) and time it in the same turns:
#   the table then shows before/after ratios to ORT from one process.
#   --clock: 1-thread timings use the calling thread's CPU time by default (cpu), which leaves out
#   time spent descheduled on a shared machine; wall for wall-clock time.
#   needs: cc, python3 with numpy, onnx and onnxruntime (pip install onnxruntime==1.23.2) unless
#   --no-ort. Environment: CC (default cc), MICRO_BUILD (default build-micro/), OMP_WAIT_POLICY (default
#   PASSIVE here: on a machine whose cores are shared with other work, spinning OpenMP threads
#   stall parallel regions by whole scheduler periods; pass OMP_WAIT_POLICY=ACTIVE to compare).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${MICRO_BUILD:-$root/build-micro}
cc=${CC:-cc}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
threads=1,2 reps=20 filter="" ort=1 base="" clock=cpu
while [ $# -gt 0 ]; do
  case "$1" in
    -t) threads=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -f) filter=$2; shift 2 ;;
    --no-ort) ort=0; shift ;;
    --base) base=$2; shift 2 ;;
    --clock) clock=$2; shift 2 ;;
    *) echo "usage: $0 [-t 1,2] [-r REPS] [-f SUBSTRING] [--no-ort] [--base ROOT] [--clock cpu|wall]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
flags="-O3 -march=native -fopenmp -std=gnu11 -Wall -Wextra -Werror"
$cc $flags -I"$root/src" "$here/gemm_bench.c" -o "$out/gemm_bench" -lm
$cc $flags -I"$root/src" -fPIC -shared -DLT_BENCH_LIBRARY "$here/gemm_bench.c" -o "$out/libgemm_bench.so" -lm
bargs=()
if [ -n "$base" ]; then
  $cc $flags -I"$base/src" -fPIC -shared -DLT_BENCH_LIBRARY "$here/gemm_bench.c" -o "$out/libgemm_bench_base.so" -lm
  bargs=(--base "$out/libgemm_bench_base.so")
fi
fargs=()
[ -n "$filter" ] && fargs=(-f "$filter")
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
if [ $ort = 0 ]; then
  "$out/gemm_bench" -t "$threads" -r "$reps" "${fargs[@]}"
  exit 0
fi
python3 "$here/ort_bench.py" "$out/gemm_bench" "$out/libgemm_bench.so" "${bargs[@]}" -t "$threads" -r "$reps" \
  --clock "$clock" "${fargs[@]}" | tee "$out/micro_raw.tsv" | python3 "$here/table.py"
