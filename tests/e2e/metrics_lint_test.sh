#!/usr/bin/env bash
# End-to-end: every process of a running `syncopate local` cluster serves /metrics that pass
# `promtool check metrics` (Prometheus naming and format rules). Trainer 0 asks for --device=auto,
# so it loads the CUDA plugin where one is built and serves /metrics with it loaded.
#   metrics_lint_test.sh BIN_DIR
set -euo pipefail
bin="$1"
dir=$(mktemp -d "${TMPDIR:-/tmp}/syncopate-e2e-metrics-XXXXXX")
"$bin/syncopate" local --mode=hybrid --trainers=2 --device=auto,cpu --time-limit=20s \
  --target-accuracy=0.99 --report-dir="$dir/run" > "$dir/run.out" 2>&1 &
local_pid=$!
trap 'kill -INT $local_pid 2>/dev/null || true; wait $local_pid 2>/dev/null || true' EXIT

# Wait (bounded) until the cluster is up and a trainer has pushed.
for _ in $(seq 1 120); do
  if [ -f "$dir/run/cluster.json" ] && grep -q '"pushed"' "$dir/run/trainer-1.trace.jsonl" 2>/dev/null; then
    break
  fi
  sleep 0.5
done
[ -f "$dir/run/cluster.json" ] || { echo "cluster never started; see $dir"; exit 1; }
if [ -f "$bin/../lib/libsyncopate-cuda.so" ] && grep -q "no CUDA backend" "$dir/run/trainer-0.log"; then
  echo "trainer 0 did not load the CUDA plugin that was built; see $dir/run/trainer-0.log"
  exit 1
fi
grep -q "compute backend: " "$dir/run/trainer-0.log" || { echo "trainer 0 logged no backend"; exit 1; }

ports=$(grep -o '"metrics_port": [0-9]*' "$dir/run/cluster.json" | grep -o '[0-9]*$')
checked=0
for port in $ports; do
  curl -sf --max-time 10 "http://127.0.0.1:$port/metrics" > "$dir/metrics-$port.txt"
  grep -q '^syncopate_' "$dir/metrics-$port.txt" || { echo "port $port serves no syncopate metrics"; exit 1; }
  if ! promtool check metrics < "$dir/metrics-$port.txt"; then
    echo "port $port: promtool check metrics failed (output in $dir/metrics-$port.txt)"
    exit 1
  fi
  checked=$((checked + 1))
done
# One store, the coordinator and two trainers.
[ "$checked" -eq 4 ] || { echo "checked $checked processes, expected 4"; exit 1; }
echo "promtool check metrics passed for $checked processes"
