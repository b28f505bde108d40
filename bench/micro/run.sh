#!/bin/bash
# run.sh — the microkernel benchmark: builds bench/micro/gemm_bench.c with the CPU backend's flags
# (cc -O3 -march=native -fopenmp), as a program and as a shared library, and runs onnxruntime's
# kernels on the same cases in the same process, in turns (bench/micro/ort_bench.py), then prints
# a table of GFLOP/s, the ratio lathe/ORT (> 1: lathe faster) and the share of the FMA peak.
#
# Usage: bench/micro/run.sh [-t 1,2] [-r REPS] [-f SUBSTRING] [--no-ort]
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
threads=1,2 reps=20 filter="" ort=1
while [ $# -gt 0 ]; do
  case "$1" in
    -t) threads=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    -f) filter=$2; shift 2 ;;
    --no-ort) ort=0; shift ;;
    *) echo "usage: $0 [-t 1,2] [-r REPS] [-f SUBSTRING] [--no-ort]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
flags="-O3 -march=native -fopenmp -std=gnu11 -Wall -Wextra -Werror -I$root/src"
$cc $flags "$here/gemm_bench.c" -o "$out/gemm_bench" -lm
$cc $flags -fPIC -shared -DLT_BENCH_LIBRARY "$here/gemm_bench.c" -o "$out/libgemm_bench.so" -lm
fargs=()
[ -n "$filter" ] && fargs=(-f "$filter")
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
if [ $ort = 0 ]; then
  "$out/gemm_bench" -t "$threads" -r "$reps" "${fargs[@]}"
  exit 0
fi
python3 "$here/ort_bench.py" "$out/gemm_bench" "$out/libgemm_bench.so" -t "$threads" -r "$reps" "${fargs[@]}" \
  | tee "$out/micro_raw.tsv" | python3 "$here/table.py"
