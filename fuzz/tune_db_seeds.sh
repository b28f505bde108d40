#!/usr/bin/env bash
# tune_db_seeds.sh DIR — seed corpus for fuzz/fuzz_tune_db.c: a small valid tuning database (kernel
# schedules and the layout entries lathe tune writes) and an empty one.
set -euo pipefail
mkdir -p "$1"
h1=326120c6aa6cf2bdbaa0fafba345ada8e7fc4f5650c0111158690a876b2f1fdf
h2=bbb5ea5d54c546a4dae0830827e0cf2512a4e2dbefbda1df09acd9d8a954a78e
printf '# lathe tuning database v1\n# hash\ttarget\tshapes\tseconds\tschedule\n%s\tcpu-avx512f\tthreads=2\t0.000377216\tparallel o1; vectorize lane; split r0 16; vectorize r0.i\n%s\tcpu-avx2\tthreads=1\t2.18e-05\tparallel o1; split r1 2; unroll r1.i 4\n%s\tcpu-avx512f\tthreads=2 passes=layout_nchwc\t0.0101\t-\n' \
    "$h1" "$h2" "$h2" > "$1/db.tsv"
printf '# lathe tuning database v1\n' > "$1/empty.tsv"
