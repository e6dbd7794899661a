#!/usr/bin/env bash
# The main job: install, build, then train Fashion-MNIST on a local cluster of 4 trainers with
# slowdowns 1,1,2,4 under every PS mode, one after another (`syncopate compare`), and print the
# comparison: time to 85% test accuracy, compute-time ratio and waiting per mode, with a picture.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
out=runs/demo-$(date +%Y%m%d-%H%M%S)
./build/bin/syncopate compare --modes=bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid,asp --trainers=4 \
  --slowdown=1,1,2,4 --target-accuracy=0.85 --time-limit=120s --report-dir="$out"
echo "per-mode reports in $out/<mode>/; accuracy over time and compute-time ratios: $out/compare.svg"
