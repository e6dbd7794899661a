#!/usr/bin/env bash
# Long-lived Transfer streams against a call per transfer (docs/transport.md), on whole jobs:
# alternating `syncopate local` runs whose trainers use one transport or the other, same binaries,
# same seed. Not a test: figures for bench/docs.
#   bench/transport_ab.sh store|peer [MODE] [PAIRS]
#     store: --store-transport (default mode bsp): the round's critical path (bench/round_spans.py)
#     peer:  --peer-transport (default mode dssync): each trainer's exchange time and round time
#            from its trace ("exchange" events)
# Environment: TRAINERS (4 for peer, 5 for store), TIME_LIMIT (14s), OUT (/tmp/syncopate-transport-ab).
set -euo pipefail
case "${1:-}" in
  store) default_mode=bsp; default_trainers=5 ;;
  peer) default_mode=dssync; default_trainers=4 ;;
  *) echo "usage: bench/transport_ab.sh store|peer [MODE] [PAIRS]" >&2; [[ "${1:-}" == --help ]]; exit ;;
esac
kind="$1"
mode="${2:-$default_mode}"
pairs="${3:-3}"
trainers="${TRAINERS:-$default_trainers}"
out="${OUT:-/tmp/syncopate-transport-ab}"
cd "$(dirname "$0")/.."
./scripts/build.sh > /dev/null
rm -rf "$out"
mkdir -p "$out"
# Two copies of the binaries; in one, syncopate-trainer is a wrapper that adds the call transport.
for t in stream call; do cp -r build/bin "$out/bin-$t"; done
mv "$out/bin-call/syncopate-trainer" "$out/bin-call/syncopate-trainer.real"
printf '#!/bin/sh\nexec "$(dirname "$0")/syncopate-trainer.real" --%s-transport=call "$@"\n' \
  "$kind" > "$out/bin-call/syncopate-trainer"
chmod +x "$out/bin-call/syncopate-trainer"
for i in $(seq 1 "$pairs"); do
  for t in call stream; do
    d="$out/$t-$i"
    "$out/bin-$t/syncopate" local --mode="$mode" --trainers="$trainers" --target-accuracy=0.99 \
      --time-limit="${TIME_LIMIT:-14s}" --insecure --report-dir="$d" > "$d.log" 2>&1 || true
    if [[ "$kind" == store ]]; then
      echo "$t pair $i: $(/usr/bin/python3 bench/round_spans.py "$d" 2>&1 | tail -4 | tr '\n' ' ')"
      continue
    fi
    /usr/bin/python3 - "$d" "$t" "$i" <<'PY'
import glob, json, statistics, sys
d, t, i = sys.argv[1:]
seconds, rounds = [], []
for f in glob.glob(f"{d}/trainer-*.trace.jsonl"):
    xs = [e for e in map(json.loads, open(f)) if e.get("event") == "exchange"]
    seconds += [e["seconds"] for e in xs]
    if len(xs) > 1:
        rounds.append((xs[-1]["t_us"] - xs[0]["t_us"]) / 1e6 / (len(xs) - 1))
if not seconds:
    sys.exit(f"{t} pair {i}: no exchange in {d}")
print(f"{t} pair {i}: {len(seconds)} exchanges, mean {1000 * statistics.mean(seconds):.2f} ms, "
      f"median {1000 * statistics.median(seconds):.2f} ms; round {1000 * statistics.mean(rounds):.2f} ms")
PY
  done
done
