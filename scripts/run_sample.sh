#!/usr/bin/env bash
# run_sample.sh — the main job on a fresh machine: set up, build, write the sample models into
# sample/ (scripts/make_sample.py: the onnx package's SqueezeNet with its input and expected output,
# and a tiny MLP with a symbolic batch dimension), and run SqueezeNet on the CPU, comparing its output
# with the expected one. Every command in README.md runs as written afterwards.
#   scripts/run_sample.sh --prepare   only (re)write sample/ (no set-up, no build, no run)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --prepare ]; then
    exec python3 scripts/make_sample.py sample
fi
scripts/setup.sh
scripts/build.sh build
python3 scripts/make_sample.py sample
mkdir -p out
build/lathe inspect sample/squeezenet.onnx
build/lathe run sample/squeezenet.onnx --input data_0=sample/data_0.npy --output out/squeezenet.npz
python3 - out/squeezenet.npz sample/softmaxout_1_expected.npy <<'PYEOF'
import sys, numpy as np
got = np.load(sys.argv[1])["softmaxout_1"]
want = np.load(sys.argv[2])
np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-7)
print(f"squeezenet output {got.shape} matches the expected output (rtol 1e-3)")
PYEOF
