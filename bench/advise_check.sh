#!/usr/bin/env bash
# `syncopate advise` against reality (docs/advise.md): for each cluster profile
# (bench/advise_profiles.sh), the advisor's recommendation twice, from a probe of the job
# (`advise probe`, its tolerance fitted to two short runs) and from the profile's flags at the
# default tolerance (1 step), then every store mode the advisor predicts, measured with
# `syncopate compare` (the same work for every mode: the MLP on Fashion-MNIST, the profile's
# learning rate, the default step-size rule, emulated steps, seed 1).
# A recommendation with options (ssp --staleness=9) that compare did not run as such runs on its
# own. Per profile: each recommendation's measured time to the target over the best measured
# mode's (a recommendation that did not reach the target in the time limit: "miss").
#   bench/advise_check.sh [PROFILES]
# PROFILES: which profiles, e.g. 1,2,5 (default: all). Runs go to OUT (default
# /tmp/syncopate-advise-check); TIME_LIMIT (default 90s) caps each run, PROBE (default 15s) each
# probe run; MODES (default the store modes) the modes compare measures, e.g. with the
# peer-to-peer ones added. REUSE=1 runs nothing but the advisor: it asks it again on the probes and the
# measurements an earlier run left in OUT. BIN_DIR (default build/bin) holds syncopate.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/syncopate-advise-check}
limit=${TIME_LIMIT:-90s}
probe=${PROBE:-15s}
syncopate=${BIN_DIR:-build/bin}/syncopate
[[ -x $syncopate ]] || { echo "build first: ./scripts/build.sh" >&2; exit 1; }
mkdir -p "$out"

source bench/advise_profiles.sh
modes=${MODES:-asp,bsp,ssp,dssp,wbsp,wbsp-overlap,hybrid}
choose_profiles "${1:-}"

# A recommendation's measured time over the best measured time, or "miss".
ratio() {
  local t=-
  [[ -n $1 ]] && t=${measured[$1]:--}
  [[ $t == - || $best == - ]] && { echo miss; return; }
  awk -v t="$t" -v b="$best" 'BEGIN { printf "%.2f", t / b }'
}
# The recommended mode with its options ("ssp --staleness=9") in an advise output.
recommended() { sed -n 's/^recommended: --mode=\(.*\) (confidence \([a-z]*\).*/\1|\2/p' "$1"; }

: >"$out/measured.txt"
echo "advise against compare, $(date -u +%F); time limit $limit per run, probe $probe per run"
printf '%-3s %-38s %-34s %-7s %-34s %-7s %-22s\n' "#" "profile" "probe: recommended (tolerance)" \
  "ratio" "flags: recommended" "ratio" "best measured"
for n in "${chosen[@]}"; do
  IFS='|' read -r trainers slowdowns step rate target <<<"${profiles[$((n - 1))]}"
  dir=$out/profile-$n
  job=(--trainers="$trainers" --slowdown="$slowdowns" --step-time="$step" --learning-rate="$rate")
  if [[ ${REUSE:-0} == 1 ]]; then
    [[ -f $dir/probe.log && -f $dir/compare/compare.csv ]] ||
      { echo "profile $n: nothing to reuse in $dir" >&2; exit 1; }
  else
    rm -rf "$dir"
    mkdir -p "$dir"
    "$syncopate" advise probe "${job[@]}" --time-limit="$probe" --report-dir="$dir/probe" \
      >"$dir/probe.log" 2>&1 || { echo "profile $n: the probe failed, see $dir/probe.log" >&2; exit 1; }
    "$syncopate" compare --modes="$modes" "${job[@]}" --target-accuracy="$target" \
      --time-limit="$limit" --report-dir="$dir/compare" >"$dir/compare.log" 2>&1 || true
    [[ -f $dir/compare/compare.csv ]] ||
      { echo "profile $n: compare failed, see $dir/compare.log" >&2; exit 1; }
  fi

  # The advice on the profile the probe measured, with the tolerance it fitted (its first profile
  # line, e.g. "8 trainers, step 50ms x slowdowns 1,1.5, 407080-byte model over 10.0 Gbit/s
  # links; staleness tolerance 0.84 steps"), and on the flags' profile at the default tolerance:
  # both from this advisor, so that REUSE=1 re-asks it on the same measurements.
  measured_profile=$(grep -m1 ' trainers, step ' "$dir/probe.log")
  read -r p_trainers p_step p_slowdowns p_bytes p_gbps tolerance <<<"$(sed -E \
    's/^([0-9]+) trainers, step ([^ ]+) x slowdowns ([^ ]+), ([0-9.e+]+)-byte model over ([0-9.]+) Gbit\/s links; staleness tolerance ([0-9.]+) steps$/\1 \2 \3 \4 \5 \6/' \
    <<<"$measured_profile")"
  [[ -n $tolerance ]] || { echo "profile $n: no profile in $dir/probe.log" >&2; exit 1; }
  "$syncopate" advise --trainers="$p_trainers" --profile="$p_slowdowns" --step="$p_step" \
    --model-bytes="$p_bytes" --link-gbps="$p_gbps" --staleness-tolerance="$tolerance" \
    >"$dir/advice-probe.log" 2>&1 || { echo "profile $n: advise failed, see $dir/advice-probe.log" >&2; exit 1; }
  IFS='|' read -r by_probe probe_confidence <<<"$(recommended "$dir/advice-probe.log")"
  grep -q '^staleness tolerance fitted' "$dir/probe.log" || tolerance="not fitted"
  "$syncopate" advise --trainers="$trainers" --profile="$slowdowns" --step="$step" \
    --model-bytes=407080 >"$dir/flags.log" 2>&1 ||
    { echo "profile $n: advise failed, see $dir/flags.log" >&2; exit 1; }
  IFS='|' read -r by_flags flags_confidence <<<"$(recommended "$dir/flags.log")"

  # Each recommendation's time: from the compare, or from a run of its own when it has options.
  declare -A measured=()
  for m in ${modes//,/ }; do measured[$m]=$(time_of "$dir/compare" "$m"); done
  for rec in "$by_probe" "$by_flags"; do
    [[ -n $rec && -z ${measured[$rec]+x} ]] || continue
    read -r -a parts <<<"$rec"
    sub=$dir/${rec//[ =]/-}
    [[ -f $sub/compare.csv ]] || "$syncopate" compare --modes="${parts[0]}" "${parts[@]:1}" "${job[@]}" \
      --target-accuracy="$target" --time-limit="$limit" --report-dir="$sub" >"$sub.log" 2>&1 || true
    measured[$rec]=$(time_of "$sub" "${parts[0]}")
  done
  best=- best_mode=-
  for m in "${!measured[@]}"; do
    t=${measured[$m]:--}
    [[ $t == - ]] && continue
    if [[ $best == - ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$t best_mode=$m
    fi
  done
  printf '%-3s %-38s %-34s %-7s %-34s %-7s %-22s\n' "$n" "$trainers x $slowdowns, $step, lr $rate" \
    "$by_probe ($probe_confidence, $tolerance)" "$(ratio "$by_probe")" \
    "$by_flags ($flags_confidence)" "$(ratio "$by_flags")" "$best_mode ${best}s"
  {
    echo "profile $n: ${profiles[$((n - 1))]}"
    for m in "${!measured[@]}"; do echo "  $m ${measured[$m]}"; done
  } >>"$out/measured.txt"
  unset measured
done
echo "every mode's time: $out/measured.txt; each profile's logs: $out/profile-N/"
