#!/usr/bin/env bash
# build.sh [DIR] [cmake options...] — configure and build lathe (default DIR: build).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DLATHE_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
