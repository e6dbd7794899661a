#!/usr/bin/env bash
# The straggler-mode benchmark: `syncopate compare` on two profiles, then the ratios the targets are
# stated in (time to target against BSP and against the best of SSP/ASP; compute-time ratio per
# mode). Not a test: it prints figures for bench/README.md.
#   bench/modes_bench.sh [OUT_DIR]        (default: /tmp/syncopate-modes-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/syncopate-modes-bench}"
modes=bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid,asp
mkdir -p "$out"

run_profile() {  # name, then extra flags
  local name="$1"; shift
  rm -rf "${out:?}/$name"
  ./build/bin/syncopate compare --modes="$modes" --trainers=4 --target-accuracy=0.85 \
    --time-limit=180s --eval-interval=0.5s --report-dir="$out/$name" "$@" > "$out/$name.txt" 2> "$out/$name.log"
  echo "== profile $name: $*"
  cat "$out/$name.txt"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { t[$1] = ($col["reached_target"] == "true") ? $col["time_to_target_seconds"] : ""; r[$1] = $col["compute_time_ratio"] }
    END {
      best = ""; for (m in t) if (m ~ /^(dssp|wbsp|wbsp-overlap|hybrid)$/ && t[m] != "" && (best == "" || t[m] + 0 < t[best] + 0)) best = m
      base = (t["ssp"] != "" && (t["asp"] == "" || t["ssp"] + 0 <= t["asp"] + 0)) ? "ssp" : "asp"
      if (best == "" || t["bsp"] == "" || t[base] == "") { print "  a mode did not reach the target: no time ratios"; exit }
      printf "  best straggler mode: %s (%.1fs)\n", best, t[best]
      printf "  time to target vs bsp: %.2f (target <= 0.5)\n", t[best] / t["bsp"]
      printf "  time to target vs best of ssp/asp (%s): %.2f (target <= 0.8)\n", base, t[best] / t[base]
      printf "  compute-time ratio: wbsp %.2f (target >= 0.91), wbsp-overlap %.2f (target >= 0.95)\n", r["wbsp"], r["wbsp-overlap"]
    }' "$out/$name/compare.csv"
}

./scripts/build.sh > /dev/null
run_profile A-mlp-b64-1124 --slowdown=1,1,2,4
run_profile B-mlp-b512-1118 --slowdown=1,1,1,8 --batch-size=512
