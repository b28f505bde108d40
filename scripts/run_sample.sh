#!/usr/bin/env bash
# run_sample.sh — the main job on a fresh machine: set up, build, and run a sample model (the onnx
# package's SqueezeNet) on the CPU, comparing it with the expected output shipped next to it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
light=$(python3 -c "import onnx,os;print(os.path.join(os.path.dirname(onnx.__file__),'backend/test/data/light'))")
mkdir -p out
build/lathe inspect "$light/light_squeezenet.onnx"
build/lathe run "$light/light_squeezenet.onnx" --fill ramp --output out/squeezenet.npz
python3 - "$light/light_squeezenet_output_0.pb" out/squeezenet.npz <<'PYEOF'
import sys, numpy as np, onnx, onnx.numpy_helper as nh
want = nh.to_array(onnx.load_tensor(sys.argv[1]))
got = list(np.load(sys.argv[2]).values())[0]
np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-7)
print(f"squeezenet output {got.shape} matches the expected output (rtol 1e-3)")
PYEOF
