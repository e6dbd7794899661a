#!/usr/bin/env bash
# `syncopate advise` against Sync-Switch (Li et al., ICDCS 2021), which trains under BSP first and
# switches once to ASP at a time it finds offline (docs/advise.md). For each cluster profile
# (bench/advise_profiles.sh): the advisor's recommendation from a probe of the job (`advise probe`);
# asp, bsp and the recommended mode measured with `syncopate compare`; then Sync-Switch emulated
# with two runs, `syncopate local --mode=bsp --time-limit=S` and `--mode=asp --resume-from` its
# model, for S at each of FRACTIONS of bsp's own time to target, and the best of those switch
# points kept: an oracle offline policy, Sync-Switch at its best. The same work everywhere (the
# MLP on Fashion-MNIST, the profile's learning rate, the default step-size rule, emulated steps,
# seed 1). Sync-Switch's time is S plus the asp run's time to target (or bsp's own, when it gets
# there before S); the asp run starts from the bsp run's model with fresh rounds.
#   bench/syncswitch_check.sh [PROFILES]
# PROFILES: which profiles, e.g. 1,4,6 (default: all). OUT (default
# /tmp/syncopate-syncswitch), TIME_LIMIT (default 90s, each run), PROBE (default 15s, each probe
# run), FRACTIONS (default "0.25 0.5 0.75"), BIN_DIR (default build/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/syncopate-syncswitch}
limit=${TIME_LIMIT:-90s}
probe=${PROBE:-15s}
fractions=${FRACTIONS:-0.25 0.5 0.75}
syncopate=${BIN_DIR:-build/bin}/syncopate
[[ -x $syncopate ]] || { echo "build first: ./scripts/build.sh" >&2; exit 1; }
mkdir -p "$out"

source bench/advise_profiles.sh
choose_profiles "${1:-}"
# A run's time to target from its summary.json, or "-".
summary_time() {
  python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
t = s.get("time_to_target_seconds")
print("%.2f" % t if s.get("reached_target") and t is not None else "-")' "$1/summary.json" 2>/dev/null || echo -
}
ratio() { [[ $1 == - || $2 == - ]] && echo miss || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
min() { [[ $1 == - ]] && { echo "$2"; return; }; [[ $2 == - ]] && { echo "$1"; return; }
  awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }

echo "advise against Sync-Switch, $(date -u +%F); time limit $limit per run, switch at $fractions of bsp's time"
printf '%-3s %-34s %-8s %-8s %-28s %-24s %-s\n' "#" "profile" "asp s" "bsp s" \
  "advised (s)" "sync-switch best (s)" "advised / sync-switch"
for n in "${chosen[@]}"; do
  IFS='|' read -r trainers slowdowns step rate target <<<"${profiles[$((n - 1))]}"
  dir=$out/profile-$n
  rm -rf "$dir"
  mkdir -p "$dir"
  job=(--trainers="$trainers" --slowdown="$slowdowns" --step-time="$step" --learning-rate="$rate"
    --target-accuracy="$target")
  "$syncopate" advise probe "${job[@]:0:4}" --time-limit="$probe" --report-dir="$dir/probe" \
    >"$dir/probe.log" 2>&1 || { echo "profile $n: the probe failed, see $dir/probe.log" >&2; exit 1; }
  advised=$(sed -n 's/^recommended: --mode=\([^ ]*\).*/\1/p' "$dir/probe.log" | head -1)
  [[ -n $advised ]] || { echo "profile $n: no recommendation in $dir/probe.log" >&2; exit 1; }
  modes=asp,bsp
  [[ $advised == asp || $advised == bsp ]] || modes+=",$advised"
  "$syncopate" compare --modes="$modes" "${job[@]}" --time-limit="$limit" \
    --report-dir="$dir/compare" >"$dir/compare.log" 2>&1 || true
  t_asp=$(time_of "$dir/compare" asp) t_bsp=$(time_of "$dir/compare" bsp)
  t_advised=$(time_of "$dir/compare" "$advised")

  best=- best_at=-
  # Without bsp's time to target, the switch points are fractions of the time limit.
  span=$t_bsp
  [[ $span == - ]] && span=${limit%s}
  for f in $fractions; do
    s=$(awk -v f="$f" -v t="$span" 'BEGIN { printf "%.1f", f * t }')
    run=$dir/switch-$f
    "$syncopate" local --mode=bsp "${job[@]}" --time-limit="${s}s" --report-dir="$run/bsp" \
      >"$run-bsp.log" 2>&1 || true
    t=$(summary_time "$run/bsp")
    if [[ $t == - ]]; then
      "$syncopate" local --mode=asp "${job[@]}" --time-limit="$limit" --resume-from="$run/bsp" \
        --report-dir="$run/asp" >"$run-asp.log" 2>&1 || true
      t_rest=$(summary_time "$run/asp")
      [[ $t_rest != - ]] && t=$(awk -v a="$s" -v b="$t_rest" 'BEGIN { printf "%.2f", a + b }')
    fi
    echo "  profile $n: switch after ${s}s of bsp: ${t}s" >>"$out/switches.txt"
    [[ $(min "$best" "$t") == "$t" && $t != - ]] && best=$t best_at=$s
  done
  printf '%-3s %-34s %-8s %-8s %-28s %-24s %-s\n' "$n" "$trainers x $slowdowns, $step, lr $rate" \
    "$t_asp" "$t_bsp" "$advised ($t_advised)" "after ${best_at}s ($best)" "$(ratio "$t_advised" "$best")"
done
echo "every switch point: $out/switches.txt; each profile's logs: $out/profile-N/"
