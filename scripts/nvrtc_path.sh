#!/usr/bin/env bash
# nvrtc_path.sh — print the path of the NVRTC library that pip's nvidia-cuda-nvrtc wheel installed
# (for LATHE_NVRTC), or nothing when that wheel is not installed. The system's NVRTC (a CUDA toolkit
# known to ldconfig) needs no path: lathe finds libnvrtc.so.13 / .12 by name.
"${LATHE_PYTHON:-python3}" - <<'PYEOF' 2>/dev/null || true
import glob, importlib.util, os
spec = importlib.util.find_spec("nvidia")
for root in (spec.submodule_search_locations if spec else []):
    for lib in sorted(glob.glob(os.path.join(root, "cu1[23]", "lib", "libnvrtc.so.1[23]")) +
                      glob.glob(os.path.join(root, "cuda_nvrtc", "lib", "libnvrtc.so.1[23]")), reverse=True):
        print(lib)
        raise SystemExit(0)
PYEOF
