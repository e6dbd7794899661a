#!/usr/bin/env bash
# Compressed pushes against float32 ones (docs/compression.md): the same job, the CNN on
# Fashion-MNIST under asp with 4 trainers to 0.85, once per codec, with and without a 100 Mbit/s
# egress limit on every trainer. Each codec runs REPEATS times (seeds 1, 2, ...), the same seeds and
# settings for every codec; the table gives each codec's median time to target and its ratio to
# `none` in the same setting.
#   bench/compression.sh [REPEATS] [CODECS] [RATES]
# CODECS default: none,bf16,topk:0.01; RATES default: 100mbit,unlimited. Runs go to
# OUT (default /tmp/syncopate-compression-bench). BIN_DIR (default build/bin) holds syncopate.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-2}
IFS=, read -r -a codecs <<<"${2:-none,bf16,topk:0.01}"
IFS=, read -r -a rates <<<"${3:-100mbit,unlimited}"
out=${OUT:-/tmp/syncopate-compression-bench}
syncopate=${BIN_DIR:-build/bin}/syncopate
[[ -x $syncopate ]] || { echo "build first: ./scripts/build.sh" >&2; exit 1; }
mkdir -p "$out"

# The median time to target of a compare report (compare.csv's 6th column), or "-" if none.
median() { awk -F, 'NR == 2 { print ($6 == "" ? "-" : $6) }' "$1/compare.csv"; }

echo "asp, 4 trainers, CNN, target 0.85, $repeats run(s) each; $(date -u +%F)"
printf '%-10s %-10s %12s %8s\n' egress codec time-to-0.85 ratio
for rate in "${rates[@]}"; do
  reference=
  for codec in "${codecs[@]}"; do
    dir=$out/$rate-${codec//:/-}
    limit=()
    [[ $rate == unlimited ]] || limit=(--egress-rate="$rate")
    "$syncopate" compare --modes=asp --trainers=4 --model=cnn "${limit[@]}" \
      --compression="$codec" --target-accuracy=0.85 --time-limit=300s --repeats="$repeats" \
      --report-dir="$dir" >"$dir.log" 2>&1 || { echo "$codec at $rate failed: see $dir.log" >&2; exit 1; }
    t=$(median "$dir")
    [[ $codec == none ]] && reference=$t
    ratio=$(awk -v t="$t" -v r="$reference" 'BEGIN { print (t == "-" || r == "" || r == "-") ? "-" : sprintf("%.2f", t / r) }')
    printf '%-10s %-10s %12s %8s\n' "$rate" "$codec" "$t" "$ratio"
  done
done
