#!/usr/bin/env bash
# The main job: install, build the binaries it runs, then train Fashion-MNIST on a local cluster of
# 4 trainers with slowdowns 1,1,2,4 under every PS mode, one after another (`syncopate compare`),
# and print the comparison: time to 85% test accuracy, compute-time ratio and waiting per mode,
# with a picture.
#
# Defaults are the README's; the environment may narrow the run (readme_e2e_test does, to run this
# very script quickly). Relative paths are taken from the checkout's root:
#   SYNCOPATE_DEMO_MODES       modes to compare        (bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid,asp)
#   SYNCOPATE_DEMO_TIME_LIMIT  time limit per mode     (120s)
#   SYNCOPATE_DEMO_RUNS_DIR    where run folders go    (runs, in the checkout; made when missing)
#   SYNCOPATE_DEMO_BUILD       0: use the binaries in SYNCOPATE_BIN_DIR, install and build nothing
#   SYNCOPATE_BIN_DIR          the binaries            (build/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SYNCOPATE_DEMO_BUILD:-1}" != 0 ]; then
  ./scripts/install-deps.sh
  # Only what `syncopate compare` starts (the CLI's target brings the services and, where CUDA is
  # built, its plugin), and the Python package the README's "Bring your own model" runs; the tests
  # are scripts/test.sh's.
  ./scripts/build.sh syncopate _syncopate
fi
bin="${SYNCOPATE_BIN_DIR:-build/bin}"
out="${SYNCOPATE_DEMO_RUNS_DIR:-runs}/demo-$(date +%Y%m%d-%H%M%S)"
"$bin/syncopate" compare --modes="${SYNCOPATE_DEMO_MODES:-bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid,asp}" \
  --trainers=4 --slowdown=1,1,2,4 --target-accuracy=0.85 \
  --time-limit="${SYNCOPATE_DEMO_TIME_LIMIT:-120s}" --report-dir="$out"
echo "per-mode reports in $out/<mode>/; accuracy over time and compute-time ratios: $out/compare.svg"
