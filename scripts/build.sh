#!/usr/bin/env bash
# Configures (once) and builds Syncopate into build/: every target, or only the TARGETs named.
#   ./scripts/build.sh                 everything (binaries, CUDA plugin, tests, benchmarks)
#   ./scripts/build.sh syncopate       the CLI and what it starts (services, CUDA plugin)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
if [ $# -eq 0 ]; then
  cmake --build build
else
  cmake --build build --target "$@"
fi
