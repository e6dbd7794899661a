#!/bin/bash
# Syncopate's store against ps-lite (dmlc/ps-lite), push+pull goodput on loopback, back to back.
#   PSLITE_DIR=/path/to/ps-lite bench/pslite/compare.sh [SIZES_MIB] [ROUNDS]
# TRANSPORT=call runs Syncopate's side with a call per push and pull (default: the Transfer
# stream, docs/transport.md).
# Builds ps-lite (CMake, Release; needs libzmq3-dev and libprotobuf-dev) and pslite_bench.cc in
# $PSLITE_DIR/build, then for each round and size runs syncopate-store-bench --mib=SIZE
# --transfer-only and ps-lite's scheduler, server and worker, alternating, and prints one line per
# pair. Both sides time 5 push+pull repeats after one untimed warm-up, and nothing else between
# them. ps-lite's logs go to $PSLITE_DIR/build/logs. ps-lite is not vendored: fetch it into a
# scratch folder outside this repository.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
sizes="${1:-1 4 40 64}"
rounds="${2:-3}"
: "${PSLITE_DIR:?set PSLITE_DIR to a checkout of https://github.com/dmlc/ps-lite}"
store_bench="$repo/build/bin/syncopate-store-bench"
[[ -x "$store_bench" ]] || { echo "build Syncopate first: scripts/build.sh" >&2; exit 2; }

build="$PSLITE_DIR/build"
cmake -S "$PSLITE_DIR" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" pslite >/dev/null
g++ -O3 -std=c++17 -I"$PSLITE_DIR/include" "$here/pslite_bench.cc" "$build/libpslite.a" \
  -lzmq -lprotobuf -lpthread -o "$build/pslite_bench"

logs="$build/logs"
mkdir -p "$logs"

# One ps-lite job: a scheduler, a server and a worker; prints the worker's JSON line, or fails
# (naming the logs) when any of the three did.
pslite() {
  export DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1 DMLC_PS_ROOT_URI=127.0.0.1 DMLC_INTERFACE=lo
  export DMLC_PS_ROOT_PORT=$((20000 + RANDOM % 20000)) MIB="$1" REPEATS=5
  DMLC_ROLE=scheduler timeout 120 "$build/pslite_bench" >"$logs/scheduler.log" 2>&1 &
  local scheduler=$!
  DMLC_ROLE=server timeout 120 "$build/pslite_bench" >"$logs/server.log" 2>&1 &
  local server=$!
  local rc=0
  DMLC_ROLE=worker timeout 120 "$build/pslite_bench" 2>"$logs/worker.log" || rc=$?
  wait "$server" || rc=$?
  wait "$scheduler" || rc=$?
  if ((rc != 0)); then
    echo "ps-lite failed (exit $rc) at $1 MiB: see $logs" >&2
    return 1
  fi
}

for round in $(seq "$rounds"); do
  for mib in $sizes; do
    ours="$("$store_bench" --mib="$mib" --repeats=5 --transfer-only \
      --transport="${TRANSPORT:-stream}" | tail -1)"
    # This script draws ps-lite's port at random; one already taken fails the job, so draw again.
    for attempt in 1 2 3; do
      if theirs="$(pslite "$mib")"; then break; fi
      grep -q "bind failed" "$logs/scheduler.log" "$logs/server.log" && ((attempt < 3)) || exit 1
      echo "ps-lite's port was taken: trying another" >&2
    done
    python3 - "$round" "$mib" "$ours" "$theirs" <<'PY'
import json, sys
round_, mib, ours, theirs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
s, p, tcp = ours["store_gbps"], theirs["push_pull_gbps"], ours["tcp_gbps"]
print(f"round {round_}  {mib:>3} MiB  syncopate {s:.2f} GB/s  ps-lite {p:.2f} GB/s  "
      f"raw TCP {tcp:.2f} GB/s  syncopate/ps-lite {s / p:.2f}  ps-lite/TCP {p / tcp:.2f}")
PY
  done
done
