#!/usr/bin/env bash
# setup.sh — install what lathe needs on a fresh Debian machine: a C toolchain, CMake, zlib, the image
# codec libraries of ImageDecoder (JPEG, PNG, WebP, JPEG 2000, TIFF), clang
# with its sanitizer/fuzzer runtime, the pinned Python packages (onnx 1.22.0 for the conformance
# suite, numpy, pytest), and NVRTC (CUDA's runtime compiler, from PyPI when the system has none: the
# tests compile every generated CUDA kernel with it; no GPU needed). Safe to run again: it installs
# only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

# ImageDecoder's codecs (each optional to the build): libjpeg, libpng, libwebp, libopenjp2, libtiff;
# pkg-config finds libwebp and libopenjp2
pkgs=(build-essential cmake pkg-config zlib1g-dev libjpeg-dev libpng-dev libwebp-dev libopenjp2-7-dev libtiff-dev
      clang libclang-rt-14-dev python3 python3-pip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

PY=${LATHE_PYTHON:-python3}
if ! "$PY" - <<'PYEOF' 2>/dev/null
import sys
want = {l.split("==")[0].lower().replace("_", "-"): l.split("==")[1].strip()
        for l in open("requirements.txt") if "==" in l and not l.startswith("#")}
from importlib.metadata import version, PackageNotFoundError
for name, ver in want.items():
    try:
        if version(name) != ver: sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PYEOF
then
  echo "setup: installing Python packages from requirements.txt"
  "$PY" -m pip install -q -r requirements.txt || "$PY" -m pip install -q --break-system-packages -r requirements.txt
fi

# NVRTC: the system's (a CUDA toolkit) if ldconfig knows it, else the pinned wheel (scripts/nvrtc_path.sh
# finds it for the tests)
if [ -z "${LATHE_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -qE 'libnvrtc\.so\.1[23] ' &&
   [ -z "$(scripts/nvrtc_path.sh)" ]; then
  echo "setup: installing NVRTC (nvidia-cuda-nvrtc==13.0.88)"
  "$PY" -m pip install -q nvidia-cuda-nvrtc==13.0.88 || "$PY" -m pip install -q --break-system-packages nvidia-cuda-nvrtc==13.0.88
fi
