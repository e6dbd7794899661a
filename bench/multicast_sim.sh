#!/usr/bin/env bash
# SelMcast against Orpheus in `syncopate sim multicast` (flow-level, max-min fair sharing), at n = 100 and
# 200, bandwidth spread 0.5, L3 and L7, defaults p = 0.3n, k = 4. Two horizons: the first k rounds
# (no pair forced yet: the selection alone) and 20 rounds (with the k-round rule's forced pairs).
# Prints one line per setting with the ratio SelMcast / Orpheus of the simulated round time.
# usage: bench/multicast_sim.sh [OUT_DIR]   (JSON per setting in OUT_DIR, default a temp dir)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SIM="$ROOT/build/bin/syncopate"
OUT="${1:-$(mktemp -d)}"
mkdir -p "$OUT"
printf '%-5s %-3s %-7s %11s %11s %9s %11s %11s %13s\n' n layer rounds sel_norm orph_norm \
  "time_ratio" sel_scale orph_scale select_ms_max
for n in 100 200; do
  for layer in l3 l7; do
    for rounds in 4 20; do
      trials=5
      # L7 at n=200 is 12,000 flows per round: fewer trials keep it to a couple of minutes.
      [ "$layer" = l7 ] && [ "$n" = 200 ] && trials=1
      json="$OUT/sim-$n-$layer-$rounds.json"
      "$SIM" sim multicast --trainers="$n" --layer="$layer" --rounds="$rounds" --trials="$trials" \
        --bandwidth-spread=0.5 --json="$json" >/dev/null
      /usr/bin/python3 - "$json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, o = d["modes"]["selmcast"], d["modes"]["orpheus"]
print(f'{d["trainers"]:<5} {d["layer"]:<3} {d["rounds"]:<7} {s["normalized_completion"]:11.3f} '
      f'{o["normalized_completion"]:11.3f} {s["completion_seconds"] / o["completion_seconds"]:9.3f} '
      f'{s["multicast_scale"]:11.3f} {o["multicast_scale"]:11.3f} {s["selection_ms_max"]:13.2f}')
PY
    done
  done
done
