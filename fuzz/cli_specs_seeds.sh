#!/usr/bin/env bash
# cli_specs_seeds.sh DIR — seed corpus for fuzz/fuzz_cli_specs.c: a selector byte (bit 0 the model,
# bit 1 whether a spec holding '=' is a file), then the --shapes, --dim and --input specs separated
# by NUL bytes: valid specs for both models, the overflow and grammar edge cases, names to escape.
set -euo pipefail
mkdir -p "$1"
seed() { printf "$2" > "$1/$3"; }
seed "$1" '\000x:4x3,y:2x5\000N=4\000x=in.npy' ok_shapes
seed "$1" '\000z:7,y:2x7,s:\000M=7\000a:b=c=data.npy' bind_shared
seed "$1" '\001in:6\000K=6\000in.npy' one_input
seed "$1" '\003in:6\000K=6\000k=v.npz' one_input_file
seed "$1" '\000x:99999999999999999999x3\000N=99999999999999999999\000inputs.npz' overflow
seed "$1" '\000x:-1x3\000N=-1\000nosuch=f.npy' negative
seed "$1" '\000x:4X3x\000=5\000=f' grammar
seed "$1" '\000\033[31mred\033[0m:1\000\302\233=1\000\342\200\256=f\377' escapes
