#!/usr/bin/env bash
# Installs, builds and runs the whole test suite. Pass CTest arguments to narrow it, e.g.
#   ./scripts/test.sh -L unit        ./scripts/test.sh -LE e2e
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/install-chart-tools.sh build/tools
./scripts/build.sh
cd build
ctest --output-on-failure -j2 "$@"
