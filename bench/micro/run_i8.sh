#!/bin/bash
# run_i8.sh — the exact 8-bit integer GEMM / convolution (gemm_i8.h) against the float32 kernels
# (gemm.h, conv.h) on the same shapes: builds bench/micro/gemm_i8_bench.c with the CPU backend's
# flags and runs it (TSV: case, threads, f32 ms, int8 ms, f32/int8, int8 GMAC/s).
# Usage: bench/micro/run_i8.sh [-t 1,2] [-r REPS] [-f SUBSTRING]
# Environment: CC (default cc), MICRO_BUILD (default build-micro/), OMP_WAIT_POLICY (default PASSIVE).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${MICRO_BUILD:-$root/build-micro}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
mkdir -p "$out"
${CC:-cc} -O3 -march=native -fopenmp -std=gnu11 -Wall -Wextra -Werror -I"$root/src" "$here/gemm_i8_bench.c" \
  -o "$out/gemm_i8_bench" -lm
exec "$out/gemm_i8_bench" "$@"
