#!/usr/bin/env bash
# Peer-to-peer modes on one machine with emulated links: `syncopate compare` over bsp, dssync,
# selmcast, selmcast-ssp, orpheus and orpheus-ssp with 4 trainers, trainer 3's link (both
# directions) at a fifth of the others' (20 vs 100 Mbit/s, token buckets on every transfer, store
# traffic included).
# Prints time to the target test accuracy (80%) and the mean round time (wall seconds per clock of
# the fastest trainer), each as a ratio of bsp's; the compute-time ratio (SelMcast's "NPU
# utilization": compute over wall time, mean over trainers); and the multicast scale (models
# delivered per multicast over n - 1; "-" for bsp). Not a test: figures for bench/README.md.
#   bench/p2p_bench.sh [OUT_DIR]        (default: /tmp/syncopate-p2p-bench)
# Environment: MODES (bsp first), TARGET (0.80), STEP_TIME (emulated accelerator step, 0s),
# TIME_LIMIT (200s).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/syncopate-p2p-bench}"
rm -rf "$out"
./scripts/build.sh > /dev/null
modes="${MODES:-bsp,dssync,selmcast,selmcast-ssp,orpheus,orpheus-ssp}"
./build/bin/syncopate compare --modes="$modes" --trainers=4 \
  --target-accuracy="${TARGET:-0.80}" --time-limit="${TIME_LIMIT:-200s}" --eval-interval=0.5s \
  --step-time="${STEP_TIME:-0s}" \
  --egress-rate=100mbit,100mbit,100mbit,20mbit --ingress-rate=100mbit,100mbit,100mbit,20mbit \
  --report-dir="$out" > "$out.txt" 2> "$out.log"
cat "$out.txt"
/usr/bin/python3 - "$out" "$modes" "${TARGET:-0.80}" <<'PY'
import json, sys
out, modes, target = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3])
rows = {}
for mode in modes:
    s = json.load(open(f"{out}/{mode}/summary.json"))
    clock = max(t["clock"] for t in s["per_trainer"])
    rows[mode] = (s.get("time_to_target_seconds") if s["reached_target"] else None,
                  s["wall_seconds"] / max(clock, 1), s["compute_time_ratio"],
                  s.get("multicast_scale", 0))
base_t, base_r = rows["bsp"][:2]
to = f"to {target:.0%} (s)"
print(f'{"mode":13} {to:>11} {"vs bsp":>7} {"round (ms)":>11} {"vs bsp":>7} {"util":>5} {"scale":>6}')
for mode, (t, r, util, scale) in rows.items():
    tt = f"{t:11.1f}" if t is not None else f'{"-":>11}'
    rt = f"{t / base_t:7.2f}" if t is not None and base_t else f'{"-":>7}'
    sc = f"{scale:6.2f}" if scale > 0 else f'{"-":>6}'
    print(f"{mode:13} {tt} {rt} {r * 1000:11.1f} {r / base_r:7.2f} {util:5.2f} {sc}")
PY
