#!/usr/bin/env bash
# Configures build/ (the first time, or again when given -D options) and builds Syncopate: every
# target, or only the TARGETs named.
#   ./scripts/build.sh                        everything (binaries, CUDA plugin, tests, benchmarks)
#   ./scripts/build.sh syncopate              the CLI and what it starts (services, CUDA plugin)
#   ./scripts/build.sh -DSYNCOPATE_CUDA=OFF   reconfigure with a CMake option, then build everything
set -euo pipefail
cd "$(dirname "$0")/.."
configure=()
targets=()
for arg in "$@"; do
  case $arg in
    -D*) configure+=("$arg") ;;
    *) targets+=("$arg") ;;
  esac
done
if [ ! -f build/build.ninja ] || [ ${#configure[@]} -gt 0 ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${configure[@]}"
fi
if [ ${#targets[@]} -eq 0 ]; then
  cmake --build build
else
  cmake --build build --target "${targets[@]}"
fi
