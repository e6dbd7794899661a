#!/usr/bin/env bash
# Installs, builds and runs the whole test suite, then the checking build (sanitizers, thread-safety
# analysis, fuzz targets: scripts/test-sanitized.sh). Pass CTest arguments to run only part of the
# regular suite, without the checking build, e.g.
#   ./scripts/test.sh -L unit        ./scripts/test.sh -LE e2e
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/install-chart-tools.sh build/tools
./scripts/build.sh
(cd build && ctest --output-on-failure -j2 "$@")
if [ $# -eq 0 ]; then
  ./scripts/test-sanitized.sh
fi
