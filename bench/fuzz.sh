#!/usr/bin/env bash
# The long fuzz run: every libFuzzer target of tests/fuzz for RUNS executions (default 10 million)
# or SECONDS (default 7200), whichever comes first, from its seeds and the corpus earlier runs grew
# in build-sanitized/tests/fuzz/corpus/. Prints one row per target: executions, executions per
# second, coverage, corpus size, peak memory and findings (a finding is a crash, a sanitizer report,
# a broken rule of the target, a leak, a timeout or running out of memory; its input is kept in
# build-sanitized/tests/fuzz/findings/).
#   bench/fuzz.sh [RUNS] [SECONDS] [TARGET...]
# JOBS (default 1) targets run at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000000}
seconds=${2:-7200}
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(push_assembler_fuzz checkpoint_fuzz peer_inbox_fuzz tensor_fuzz flags_fuzz)
fi
./scripts/test-sanitized.sh -N >/dev/null  # configures and builds, runs nothing
fuzz=build-sanitized/tests/fuzz
(cd "$fuzz" && ./fuzz_seeds seeds)
logs=$(mktemp -d)

# A finding makes the target exit non-zero: recorded, and the other targets go on.
run_one() {
  local t=$1 rc=0
  "$fuzz/$t" -runs="$runs" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$fuzz/findings/$t-" \
    "$fuzz/corpus/$t" "$fuzz/seeds/$t" >"$logs/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$logs/$t.rc"
}
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "${JOBS:-1}" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1 || true; }
printf '%-20s %12s %9s %6s %7s %8s %s\n' target executions exec/s cov corpus rss_mb findings
for t in "${targets[@]}"; do
  log=$logs/$t.log
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  corpus=$(find "$fuzz/corpus/$t" -type f | wc -l)
  findings=none
  if [ "$(cat "$logs/$t.rc")" != 0 ]; then
    findings="$(grep -m1 -E 'ERROR|broken rule|runtime error' "$log" || echo "exit $(cat "$logs/$t.rc")")"
  fi
  printf '%-20s %12s %9s %6s %7s %8s %s\n' "$t" "$(stat number_of_executed_units "$log")" \
    "$(stat average_exec_per_sec "$log")" "${cov:-?}" "$corpus" "$(stat peak_rss_mb "$log")" \
    "$findings"
done
echo "logs: $logs"
