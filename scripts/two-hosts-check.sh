#!/usr/bin/env bash
# Runs docs/several-hosts.md's two-host recipe on one Linux machine, with two network hosts: two
# network namespaces, A (10.78.0.1) and B (10.78.0.2), that reach each other only over a virtual
# Ethernet pair, as two machines would over their network. A runs `syncopate serve` and trainer 0,
# B runs trainer 1, each from its trainer-<r>.env (the run directory is shared, as on a shared
# filesystem). Nothing in this machine's own network namespace is touched. Needs root and
# `ip netns` (iproute2); builds nothing (run ./scripts/build.sh first).
#
#   ./scripts/two-hosts-check.sh [MODE [TRAINER [SERVE FLAGS...]]]
#
# MODE: any mode (default bsp); TRAINER: builtin (default, syncopate-trainer) or pytorch
# (examples/pytorch/train.py); SERVE FLAGS replace the default end of the job, the target
# accuracy 0.80 within 180 s. Prints serve's end line and exits with serve's status: 0 when the
# job ended as asked.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-bsp}
TRAINER=${2:-builtin}
shift $(($# < 2 ? $# : 2))
SERVE_FLAGS=("$@")
[[ ${#SERVE_FLAGS[@]} -gt 0 ]] || SERVE_FLAGS=(--target-accuracy=0.80 --time-limit=180s)
NS_A=syncopate-a$$
NS_B=syncopate-b$$
HOST_A=10.78.0.1
HOST_B=10.78.0.2
BIN=$PWD/build/bin
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's, which sees Debian's torch
RUN_DIR=$(mktemp -d /tmp/syncopate-two-hosts.XXXXXX)

if [[ $(id -u) != 0 ]]; then
  echo "two-hosts-check: needs root (it makes a network namespace)" >&2
  exit 2
fi
for b in syncopate syncopate-trainer; do
  [[ -x $BIN/$b ]] || { echo "two-hosts-check: $BIN/$b is missing; run ./scripts/build.sh" >&2; exit 2; }
done

cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  ip netns del "$NS_A" 2>/dev/null || true
  ip netns del "$NS_B" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$NS_A"
ip netns add "$NS_B"
# The pair is made in A, then one end moves into B.
ip netns exec "$NS_A" ip link add veth-a type veth peer name veth-b
ip netns exec "$NS_A" ip link set veth-b netns "$NS_B"
ip netns exec "$NS_A" ip addr add "$HOST_A/24" dev veth-a
ip netns exec "$NS_B" ip addr add "$HOST_B/24" dev veth-b
for ns in "$NS_A" "$NS_B"; do
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip link set "veth-${ns:10:1}" up
done

# Host A: the job's services.
ip netns exec "$NS_A" "$BIN/syncopate" serve --mode="$MODE" --trainers=2 --listen="$HOST_A:0" --run-dir="$RUN_DIR" \
  "${SERVE_FLAGS[@]}" >"$RUN_DIR/serve.out" 2>&1 &
serve=$!
for _ in $(seq 300); do
  [[ -f $RUN_DIR/trainer-1.env ]] && break
  kill -0 "$serve" 2>/dev/null || { cat "$RUN_DIR/serve.out"; exit 1; }
  sleep 0.1
done
[[ -f $RUN_DIR/trainer-1.env ]] || { echo "two-hosts-check: serve wrote no env files" >&2; exit 1; }

# Each trainer serves its peers on its own host's address (the peer-to-peer modes).
trainer() {
  local rank=$1 host=$2
  local peers="export SYNCOPATE_PEER_LISTEN=$host:0"
  if [[ $TRAINER == pytorch ]]; then
    echo ". $RUN_DIR/trainer-$rank.env && $peers && \
          PYTHONPATH=$PWD/build/python exec $PYTHON examples/pytorch/train.py"
  else
    echo ". $RUN_DIR/trainer-$rank.env && $peers && exec $BIN/syncopate-trainer"
  fi
}
ip netns exec "$NS_A" bash -c "$(trainer 0 "$HOST_A")" >"$RUN_DIR/trainer-0.out" 2>&1 &
trainers=($!)
ip netns exec "$NS_B" bash -c "$(trainer 1 "$HOST_B")" >"$RUN_DIR/trainer-1.out" 2>&1 &
trainers+=($!)

# A trainer that fails ends the check at once (serve would wait for it until its time limit).
while kill -0 "$serve" 2>/dev/null; do
  for r in 0 1; do
    pid=${trainers[$r]}
    [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null || continue
    trainers[$r]=
    wait "$pid" && continue
    echo "two-hosts-check: trainer $r failed:" >&2
    tail -n 5 "$RUN_DIR/trainer-$r.out" >&2
    exit 1
  done
  sleep 0.5
done
status=0
wait "$serve" || status=$?
grep -E "^mode " "$RUN_DIR/serve.out" | tail -1 || tail -5 "$RUN_DIR/serve.out"
echo "two-hosts-check: $MODE ($TRAINER trainers) across $HOST_A and $HOST_B: serve exited $status" \
  "(run directory $RUN_DIR)"
exit "$status"
