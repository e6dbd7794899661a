#!/usr/bin/env bash
# The main job: install, build, then train Fashion-MNIST on a local cluster of 4 trainers with
# slowdowns 1,1,2,4, once under BSP and once under SSP(s=3), and print both reports.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
out=runs/demo-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
for mode in bsp ssp; do
  ./build/bin/syncopate local --mode=$mode --staleness=3 --trainers=4 --slowdown=1,1,2,4 \
    --target-accuracy=0.85 --time-limit=120s --report-dir="$out/$mode"
done
echo "reports: $out/bsp/summary.json $out/ssp/summary.json"
