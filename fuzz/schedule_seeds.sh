#!/usr/bin/env bash
# schedule_seeds.sh FUZZER DIR — seed corpus for fuzz/fuzz_schedule.c: the default CPU and GPU
# schedules of every kernel the fuzzer schedules (the fuzzer writes them), and a few steps by hand.
set -euo pipefail
mkdir -p "$2"
LATHE_FUZZ_SCHEDULE_SEEDS="$2" "$1" -runs=0 "$2" >/dev/null 2>&1
printf '\000split i0 2; reorder i0.o i0.i' > "$2/hand_reorder"
printf '\001tile i0 i1 2 3; parallel i0.o' > "$2/hand_tile"
printf '\002fuse i0 i1; unroll i0.i1 4' > "$2/hand_fuse"
printf '\003split i1 9223372036854775807' > "$2/hand_absurd_split"
printf '\265microkernel i1 r5' > "$2/hand_microkernel_inner_let" # a nest whose index reads a LET inside it
