#!/usr/bin/env bash
# conformance_check.sh LATHE BACKEND — run the ONNX node suite and fail if fewer tests pass than the
# floor committed in tests/conformance_floor.txt (a ratchet: raise it as the count goes up).
set -euo pipefail
cd "$(dirname "$0")/.."
# BACKEND cuda-compile: every test compiled for the GPU (emitted CUDA built with NVRTC), not run.
bin=$1 backend=$2
floor=$(awk -v b="$backend" '$1 == b {print $2}' tests/conformance_floor.txt)
args=(--backend "$backend")
[ "$backend" = cuda-compile ] && args=(--backend cuda --compile-only)
out=$(mktemp)
"$bin" conformance "${args[@]}" -j "$(nproc)" --cache-dir "${LATHE_CI_CACHE:-build/ci-cache}" | tee "$out"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -n 1)
rm -f "$out"
passed=${summary%% passed*}
echo "conformance ($backend): $summary (floor $floor)"
if [ -z "$summary" ] || [ "$passed" -lt "$floor" ]; then
  echo "conformance ($backend): below the floor of $floor" >&2
  exit 1
fi
