#!/bin/bash
# run_nchwc.sh — one convolution layer in isolation, NCHW (conv.h) against channel-blocked NCHW{B}c
# (conv_nchwc.h, the layout_nchwc pass's kernels), at MobileNetV2's and ResNet-50's Conv shapes with
# their fused epilogues, plus the chain-end reorders: builds bench/micro/nchwc_bench.c with the CPU
# backend's flags and runs it (TSV: case, threads, nchw ms, nchwc ms, ratio, nchwc GFLOP/s).
# Usage: bench/micro/run_nchwc.sh [-t 1,2] [-r REPS] [-f SUBSTRING]
# Environment: CC (default cc), MICRO_BUILD (default build-micro/), OMP_WAIT_POLICY (default PASSIVE).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${MICRO_BUILD:-$root/build-micro}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
mkdir -p "$out"
${CC:-cc} -O3 -march=native -fopenmp -std=gnu11 -Wall -Wextra -Werror -I"$root/src" "$here/nchwc_bench.c" \
  -o "$out/nchwc_bench" -lm
exec "$out/nchwc_bench" "$@"
