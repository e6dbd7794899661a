#!/usr/bin/env bash
# Real links instead of emulated ones: four trainers, each in its own network namespace, joined to
# a hub namespace (store and coordinator) by veth links shaped with `tc tbf` at 100 Mbit/s, except
# two directions at 20 Mbit/s: trainer-2 sends slowly (a slow sender) and trainer-3 receives slowly
# (a slow receiver). A selmcast job runs until the coordinator has measured every trainer's link;
# the test then checks its estimates (from /metrics): trainer-2's upload and trainer-3's download
# rank below every other trainer's, and neither slow direction drags another estimate down with
# it: the trainers trainer-2 sends to keep their downloads, and those sending to trainer-3 their
# uploads (each estimate is what a trainer's streams moved at once, not bytes over the span the
# slowest one stretched). Per ordered pair, those through a slow direction read at most its rate,
# well below the others' median.
# Every address lives inside namespaces this test creates (10.77.0.0/24); nothing in the root
# namespace is touched. Exits 77 (CTest: skipped) without root, iproute2 or tc.
# usage: netns_bandwidth_test.sh BIN_DIR
set -euo pipefail
BIN="$(cd "${1:?usage: $0 BIN_DIR}" && pwd)"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "SKIP: needs root, ip and tc"
  exit 77
fi
P="syn$$"
HUB="${P}hub"
WORK="$(mktemp -d /tmp/syncopate-netns-XXXXXX)"
PIDS=()
NAMESPACES=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -n 5 "$WORK"/*.log >&2 || true; exit 1; }

if ! ip netns add "$HUB" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"
  exit 77
fi
NAMESPACES+=("$HUB")
in_hub() { ip netns exec "$HUB" "$@"; }
in_hub ip link set lo up
in_hub ip link add br0 type bridge
in_hub ip addr add 10.77.0.1/24 dev br0
in_hub ip link set br0 up

UP=(100mbit 100mbit 20mbit 100mbit)    # what each trainer sends at
DOWN=(100mbit 100mbit 100mbit 20mbit)  # what each trainer receives at
for i in 0 1 2 3; do
  ns="${P}t$i"
  ip netns add "$ns"
  NAMESPACES+=("$ns")
  # The pair is made inside the hub, then one end moves into the trainer's namespace.
  in_hub ip link add "h$i" type veth peer name "v$i"
  in_hub ip link set "v$i" netns "$ns"
  in_hub ip link set "h$i" master br0 up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "10.77.0.$((10 + i))/24" dev "v$i"
  ip netns exec "$ns" ip link set "v$i" up
  # Shape both directions: the trainer's side sends, the hub's side sends towards the trainer.
  ip netns exec "$ns" tc qdisc add dev "v$i" root tbf rate "${UP[$i]}" burst 32kbit latency 400ms
  in_hub tc qdisc add dev "h$i" root tbf rate "${DOWN[$i]}" burst 32kbit latency 400ms
done

# Mutual TLS as in a real job: a CA and one certificate per process.
certs() { "$BIN/syncopate" certs "$@" >/dev/null || fail "syncopate certs $*"; }
certs ca --ca-dir="$WORK/tls/ca"
certs issue --ca-dir="$WORK/tls/ca" --role=store --name=store-0 --out="$WORK/tls/store"
certs issue --ca-dir="$WORK/tls/ca" --role=coordinator --name=coordinator-0 --out="$WORK/tls/coordinator"
for i in 0 1 2 3; do
  certs issue --ca-dir="$WORK/tls/ca" --role=trainer --name="trainer-$i" --out="$WORK/tls/trainer-$i"
done

# Started with ip netns exec itself (not in_hub, a shell function that & would fork): $! is then
# the server, which cleanup kills.
ip netns exec "$HUB" "$BIN/syncopate-store" --listen=10.77.0.1:7070 --metrics-listen=10.77.0.1:9100 \
  --tls-dir="$WORK/tls/store" >"$WORK/store.log" 2>&1 &
PIDS+=($!)
ip netns exec "$HUB" "$BIN/syncopate-coordinator" --listen=10.77.0.1:7000 --metrics-listen=10.77.0.1:9101 \
  --stores=10.77.0.1:7070 --mode=selmcast --p=0.5 --min-trainers=4 --exchange-timeout=5s \
  --tls-dir="$WORK/tls/coordinator" >"$WORK/coordinator.log" 2>&1 &
PIDS+=($!)
for i in 0 1 2 3; do
  ip netns exec "${P}t$i" env OPENBLAS_NUM_THREADS=1 "$BIN/syncopate-trainer" \
    --coordinator=10.77.0.1:7000 --name="trainer-$i" --rank="$i" --world=4 \
    --peer-listen="10.77.0.$((10 + i)):7100" --metrics-listen=127.0.0.1:0 \
    --tls-dir="$WORK/tls/trainer-$i" >"$WORK/trainer-$i.log" 2>&1 &
  PIDS+=($!)
done

# Poll the coordinator's estimates until every trainer's link is measured over 30+ rounds.
metrics=""
for _ in $(seq 240); do
  sleep 0.5
  for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a process exited early"; done
  metrics="$(in_hub curl -sf http://10.77.0.1:9101/metrics || true)"
  measured="$(grep -c '^syncopate_coordinator_trainer_link_bytes_per_second' <<<"$metrics" || true)"
  pairs="$(grep -c '^syncopate_coordinator_pair_link_bytes_per_second' <<<"$metrics" || true)"
  clock="$(awk '/^syncopate_coordinator_min_clock / { print int($2) }' <<<"$metrics")"
  if [ "$measured" -eq 8 ] && [ "${pairs:-0}" -ge 10 ] && [ "${clock:-0}" -ge 30 ]; then break; fi
done
[ "${measured:-0}" -eq 8 ] || fail "the coordinator measured $measured of 8 link directions"
# Most pairs, not all: in one run beside the rest of the suite a pair had no stream measured within
# the 120 s (11 of 12).
[ "${pairs:-0}" -ge 10 ] || fail "the coordinator measured $pairs of the 12 ordered pairs"
echo "coordinator estimates at min clock $clock:"
grep -E '^syncopate_coordinator_(trainer|pair)_link_bytes_per_second' <<<"$metrics"

/usr/bin/python3 - "$metrics" <<'PY'
import re, sys
rates = {}
for name, direction, value in re.findall(
        r'syncopate_coordinator_trainer_link_bytes_per_second\{(?=[^}]*trainer="([^"]+)")'
        r'(?=[^}]*direction="([^"]+)")[^}]*\} (\S+)', sys.argv[1]):
    rates[(name, direction)] = float(value)
ok = True
# (slow trainer, direction): trainer-2 sends slowly, trainer-3 receives slowly.
for slow_name, direction in (("trainer-2", "upload"), ("trainer-3", "download")):
    slow = rates[(slow_name, direction)]
    others = {f"trainer-{i}": rates[(f"trainer-{i}", direction)]
              for i in range(4) if f"trainer-{i}" != slow_name}
    print(f"{direction}: {slow_name} {slow / 1e6:.2f} MB/s, others "
          + ", ".join(f"{n} {o / 1e6:.2f}" for n, o in others.items()) + " MB/s")
    if not all(slow < o for o in others.values()):
        print(f"FAIL: {slow_name}'s {direction} is not ranked below every other trainer's")
        ok = False
    # Everyone else, the other slow direction's trainer too, keeps an estimate well above the slow
    # link's (the links are 5x apart): a slow peer does not cap it. Measured here (bench/README.md,
    # "Link estimates"): per-stream estimates 2.5-5.2x the slow link's; the rule before them
    # (bytes over the span of a round's streams) 1.95-2.3x, so this check alone does not always
    # tell the two apart; BandwidthEstimatorTest does.
    for name, rate in others.items():
        if rate < 2 * slow:
            print(f"FAIL: {name}'s {direction} ({rate / 1e6:.2f} MB/s) is under twice the slow "
                  f"link's: a slow peer capped it")
            ok = False
# Each ordered pair: those through a slow direction (from trainer-2, to trainer-3) against the rest.
pairs = {(sender, receiver): float(value) for receiver, sender, value in re.findall(
    r'syncopate_coordinator_pair_link_bytes_per_second\{(?=[^}]*receiver="([^"]+)")'
    r'(?=[^}]*sender="([^"]+)")[^}]*\} (\S+)', sys.argv[1])}
slow_pairs = {p: r for p, r in pairs.items() if p[0] == "trainer-2" or p[1] == "trainer-3"}
fast_pairs = {p: r for p, r in pairs.items() if p not in slow_pairs}
if len(slow_pairs) < 3 or len(fast_pairs) < 5:
    print(f"FAIL: {len(slow_pairs)} of 5 pairs through a slow link and {len(fast_pairs)} of 7 others")
    sys.exit(1)
for label, group in (("through a slow link", slow_pairs), ("fast", fast_pairs)):
    print(f"pairs {label}: " + ", ".join(f"{s[-1]}->{r[-1]} {v / 1e6:.2f}"
                                         for (s, r), v in sorted(group.items())) + " MB/s")
# A pair's estimate is the fastest of its recent streams; a stream that shared a link or yielded
# as a low-priority addition moved slower than its path can, so single fast pairs can read low
# (2.5-3.9 MB/s at the lowest in five runs) while their median stayed 2.5-2.9x the fastest slow pair's
# (5.9-6.9 against 2.4 MB/s).
slow_link = 20e6 / 8
fastest_slow = max(slow_pairs.values())
fast_median = sorted(fast_pairs.values())[len(fast_pairs) // 2]
if fastest_slow > 1.2 * slow_link:
    print(f"FAIL: a pair through a slow link reads {fastest_slow / 1e6:.2f} MB/s, over its link's "
          f"{slow_link / 1e6:.2f}")
    ok = False
if fast_median < 1.5 * fastest_slow:
    print(f"FAIL: the median of the other pairs ({fast_median / 1e6:.2f} MB/s) is under 1.5x the "
          f"fastest pair through a slow link")
    ok = False
sys.exit(0 if ok else 1)
PY
echo "passed"
