#!/usr/bin/env bash
# One command per seed claim, in the seeds' regime: emulated accelerator steps (--step-time), a
# heterogeneous cluster, repeated runs; then OUT/report.md with one table per claim (paper's
# figure, ours, ratio, runs, spread) and the plots. Not a test: bench/README.md records what it
# gave.
#
#   bench/reproduce.sh wbsp|dssp|hybrid|links|all OUT
# (all: the three seed claims, wbsp, dssp and hybrid; links runs on its own)
#
# A comparison that exits non-zero (a run with a fault exits 4, and still reports) does not stop
# the others: the report covers them all, and the script then exits 1.
#
# Every claim runs for each model in $MODELS, and every comparison is back to back in one run of
# this script, each mode with the same work: the same step time, slowdowns, seeds, learning rate
# and, under Syncopate's default step-size rule (docs/modes.md), the same step per unit of work.
# Settings (environment, defaults in brackets):
#   REPEATS [3]          runs per mode (seeds 1, 2, ...)
#   STEP_TIME [100ms]    the emulated accelerator step of the fastest trainer
#   SLOWDOWN [1,2,4,6]   one factor per trainer (the straggler profile)
#   MODELS ["mlp cnn"]   built-in models to run each claim on
#   TARGET [0.85]        test accuracy that ends a run
#   TIME_LIMIT [300s]    a run that has not reached the target by then counts as not reached
#   LEARNING_RATE [0.1]  or LR_SWEEP=0.05,0.1,0.2,0.4 to tune every mode (4x the time)
#   SSP_BOUNDS [3,6,9,12,15]  the SSP bounds DSSP is compared with
#   LINKS [100mbit,100mbit,100mbit,20mbit]  the links claim's: each trainer's upload and download
#                        (one per trainer of SLOWDOWN; run it with SLOWDOWN=1,1,1,1 for links alone)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: bench/reproduce.sh wbsp|dssp|hybrid|links|all OUT" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
claim="$1"
out="$2"
case "$claim" in wbsp|dssp|hybrid|links|all) ;; *) usage ;; esac

REPEATS="${REPEATS:-3}"
STEP_TIME="${STEP_TIME:-100ms}"
SLOWDOWN="${SLOWDOWN:-1,2,4,6}"
MODELS="${MODELS:-mlp cnn}"
TARGET="${TARGET:-0.85}"
TIME_LIMIT="${TIME_LIMIT:-300s}"
LEARNING_RATE="${LEARNING_RATE:-0.1}"
LR_SWEEP="${LR_SWEEP:-}"
SSP_BOUNDS="${SSP_BOUNDS:-3,6,9,12,15}"
LINKS="${LINKS:-100mbit,100mbit,100mbit,20mbit}"
trainers=$(( $(tr -cd ',' <<< "$SLOWDOWN" | wc -c) + 1 ))
failed=0  # a compare exited non-zero

mkdir -p "$out"
./scripts/build.sh > "$out/build.log" 2>&1 || { echo "build failed: see $out/build.log" >&2; exit 1; }

# compare DIR MODEL FLAGS...: one `syncopate compare` in the claim's regime, and its plot as PNG.
compare() {
  local dir="$1" model="$2"; shift 2
  local rate=(--learning-rate="$LEARNING_RATE")
  [[ -n "$LR_SWEEP" ]] && rate=(--lr-sweep="$LR_SWEEP")
  rm -rf "$dir"
  echo "== $dir: $*" >&2
  ./build/bin/syncopate compare --model="$model" --trainers="$trainers" --slowdown="$SLOWDOWN" \
    --step-time="$STEP_TIME" --target-accuracy="$TARGET" --time-limit="$TIME_LIMIT" \
    --eval-interval=0.2s --repeats="$REPEATS" "${rate[@]}" --report-dir="$dir" "$@" \
    > "$dir.txt" 2> "$dir.log" || {
    # A run with a fault (exit 4) still reports; the claim goes on, and this script fails at the end.
    local code=$?
    echo "compare exited $code: see $dir.log" >&2
    failed=1
  }
  cat "$dir.txt" >&2
  (cd "$dir" && sed -e "s/^set terminal svg.*/set terminal pngcairo size 1200,480 font 'sans,10'/" \
      -e "s/compare\.svg/compare.png/" compare.gp | gnuplot) 2>> "$dir.log" || true
}

run_claim() {
  local name="$1" model
  for model in $MODELS; do
    local dir="$out/$name-$model"
    case "$name" in
      wbsp) compare "$dir" "$model" --modes=bsp,ssp,asp,wbsp,wbsp-overlap ;;
      hybrid) compare "$dir" "$model" --modes=bsp,asp,hybrid ;;
      # Link-limited: the remedies that hide or skip transfers against the baselines.
      links) compare "$dir" "$model" --modes=bsp,ssp,asp,wbsp-overlap,dssync,selmcast-ssp \
        --egress-rate="$LINKS" --ingress-rate="$LINKS" ;;
      dssp)
        mkdir -p "$dir"
        compare "$dir/dssp-asp" "$model" --modes=dssp,asp --staleness=3 --staleness-max=15
        # Algorithm 1 as published, without the hard cap at s_hi (docs/modes.md).
        compare "$dir/dssp-paper" "$model" --modes=dssp --staleness=3 --staleness-max=15 \
          --dssp-rule=paper
        local s
        for s in ${SSP_BOUNDS//,/ }; do
          compare "$dir/ssp-s$s" "$model" --modes=ssp --staleness="$s"
        done ;;
    esac
  done
}

if [[ "$claim" == all ]]; then
  for c in wbsp dssp hybrid; do run_claim "$c"; done
else
  run_claim "$claim"
fi
rate_text="learning rate $LEARNING_RATE"
[[ -n "$LR_SWEEP" ]] && rate_text="learning rates $LR_SWEEP (best per mode)"
/usr/bin/python3 bench/reproduce_report.py "$out" \
  --settings "step time $STEP_TIME x slowdowns $SLOWDOWN, $trainers trainers, target $TARGET, \
time limit $TIME_LIMIT, $REPEATS repeats, $rate_text"
echo "report: $out/report.md"
exit "$failed"
