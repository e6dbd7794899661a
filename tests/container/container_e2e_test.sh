#!/usr/bin/env bash
# Builds the images from docker/ (from BIN_DIR's binaries, or compiled in the image with
# SYNCOPATE_CONTAINER_FROM_SOURCE=1) and runs a short training job in containers: a store, a
# coordinator and two trainers on the host network. Checks that the job reaches its target accuracy
# and every container exits 0, that the store checkpoints its model on SIGTERM, and that the images
# run as a non-root user.
#
# Uses a running Docker engine, or starts Debian's dockerd (overlay2 storage, or vfs where overlay
# does not work; no bridge, no iptables; data in $SYNCOPATE_DOCKER_ROOT, default
# /var/tmp/syncopate-docker: about 9 GB with vfs, removed
# afterwards unless SYNCOPATE_DOCKER_KEEP=1 keeps it as a layer cache for the next run). No registry
# is reachable here, so the Debian 12 base image is made locally with debootstrap from
# $SYNCOPATE_DEBIAN_MIRROR. Exits 77 (CTest: skipped) only for these reasons: no engine runs and
# dockerd is not installed, or this is not root, or the disk has less than 15 GB free for one. An
# installed dockerd that does not start is a failure, with its log's tail.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="$(cd "${1:?usage: $0 BIN_DIR (the build's bin/: the images' binaries, syncopate certs)}" && pwd)"
WORK="$(mktemp -d /tmp/syncopate-container-XXXXXX)"
DOCKER_ROOT="${SYNCOPATE_DOCKER_ROOT:-/var/tmp/syncopate-docker}"
MIRROR="${SYNCOPATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE=syncopate-test/debian:bookworm
TAG=e2e
CONTAINERS=()
DOCKERD_PID=""
export DOCKER_BUILDKIT=0  # the classic builder: no buildx plugin needed

cleanup() {
  for c in "${CONTAINERS[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  if [ -n "$DOCKERD_PID" ]; then
    kill "$DOCKERD_PID" 2>/dev/null || true
    wait "$DOCKERD_PID" 2>/dev/null || true
    # dockerd leaves its network namespace mounted in the exec root.
    umount -l "$WORK"/exec/netns/* 2>/dev/null || true
    [ "${SYNCOPATE_DOCKER_KEEP:-0}" = 1 ] || rm -rf "$DOCKER_ROOT/data" 2>/dev/null || true
  fi
  rm -rf "$WORK" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $(date +%T) $*"; }

# --- A Docker engine -------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v dockerd >/dev/null; then
    echo "SKIP: no Docker engine, and dockerd cannot be started here (needs root and docker.io)"
    exit 77
  fi
  mkdir -p "$DOCKER_ROOT"
  free_gb=$(($(df --output=avail -k "$DOCKER_ROOT" | tail -1) / 1000000))
  if [ ! -d "$DOCKER_ROOT/data" ] && [ "$free_gb" -lt 15 ]; then
    echo "SKIP: only $free_gb GB free under $DOCKER_ROOT; dockerd with vfs needs about 15"
    exit 77
  fi
  export DOCKER_HOST="unix://$WORK/docker.sock"
  start_dockerd() {  # start_dockerd DRIVER: true once the engine answers
    step "starting dockerd ($1) in $DOCKER_ROOT"
    dockerd --storage-driver "$1" --iptables=false --bridge=none --data-root "$DOCKER_ROOT/data" \
      --exec-root "$WORK/exec" --pidfile "$WORK/docker.pid" --host "$DOCKER_HOST" \
      >>"$WORK/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    for _ in $(seq 60); do
      docker info >/dev/null 2>&1 && return 0
      kill -0 "$DOCKERD_PID" 2>/dev/null || break
      sleep 0.5
    done
    kill "$DOCKERD_PID" 2>/dev/null || true
    wait "$DOCKERD_PID" 2>/dev/null || true
    DOCKERD_PID=""
    return 1
  }
  # overlay2 shares layers; vfs, which copies every layer whole (several times slower to build),
  # only where the kernel or the file system has no overlay, or a kept vfs cache is there.
  if [ -d "$DOCKER_ROOT/data/vfs" ] || ! start_dockerd overlay2; then
    start_dockerd vfs || true
  fi
  if ! docker info >/dev/null 2>&1; then
    # The engine is installed and there is room: a start that fails is a failure to look into
    # (a flag this script passes, a stale socket), never a skip that could hide one.
    tail -20 "$WORK/dockerd.log" >&2
    fail "dockerd is installed but did not start (its log's tail above)"
  fi
fi

# --- A local Debian 12 base image ------------------------------------------------------------
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  step "debootstrap bookworm from $MIRROR"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -20 "$WORK/debootstrap.log" >&2; fail "debootstrap failed"; }
  tar -C "$WORK/rootfs" -c . | docker import - "$BASE" >/dev/null
  rm -rf "$WORK/rootfs"
fi

# --- The images ------------------------------------------------------------------------------
# From this build's binaries (FROM_BUILD), which the rest of the suite tests: compiling them
# again in docker/build.Dockerfile took most of this test's time. SYNCOPATE_CONTAINER_FROM_SOURCE=1
# compiles them there instead, as a release build does.
from_build="$BIN/.."
[ "${SYNCOPATE_CONTAINER_FROM_SOURCE:-0}" = 1 ] && from_build=""
step "building the images${from_build:+ from $from_build}"
FROM_BUILD="$from_build" BUILD_BASE="$BASE" RUNTIME_BASE="$BASE" "$ROOT/docker/build-images.sh" "$TAG" >"$WORK/build.log" 2>&1 ||
  { tail -40 "$WORK/build.log" >&2; fail "docker/build-images.sh failed"; }
for component in store coordinator trainer; do
  user="$(docker image inspect -f '{{.Config.User}}' "syncopate-$component:$TAG")"
  [ "$user" = "65532:65532" ] || fail "syncopate-$component runs as '$user', not 65532:65532"
  size="$(docker image inspect -f '{{.Size}}' "syncopate-$component:$TAG")"
  echo "syncopate-$component:$TAG: user $user, $((size / 1000000)) MB"
done

# --- A short job in containers ---------------------------------------------------------------
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
STORE_PORT="$(free_port)"
STORE_METRICS="$(free_port)"
COORDINATOR_PORT="$(free_port)"
mkdir -p "$WORK/checkpoints"
chown 65532:65532 "$WORK/checkpoints"
# Mutual TLS as the chart runs it: each container gets its certificate directory (a Secret's
# layout: ca.crt, tls.crt, tls.key), readable by the images' user.
certs() { "$BIN/syncopate" certs "$@" >/dev/null || fail "syncopate certs $*"; }
certs ca --ca-dir="$WORK/tls/ca"
certs issue --ca-dir="$WORK/tls/ca" --role=store --name=store-0 --out="$WORK/tls/store"
certs issue --ca-dir="$WORK/tls/ca" --role=coordinator --name=coordinator-0 --out="$WORK/tls/coordinator"
for rank in 0 1; do
  certs issue --ca-dir="$WORK/tls/ca" --role=trainer --name="trainer-$rank" --out="$WORK/tls/trainer-$rank"
done
rm -rf "$WORK/tls/ca"
chown -R 65532:65532 "$WORK/tls"
tls() { echo "-v $WORK/tls/$1:/etc/syncopate/tls:ro"; }
run() {  # run NAME DOCKER-RUN-ARGS...: a read-only container on the host network
  local name="syncopate-e2e-$1-$$"
  shift
  docker run -d --name "$name" --network=host --read-only "$@" >/dev/null
  CONTAINERS+=("$name")
}
step "running a store, a coordinator and two trainers"
# shellcheck disable=SC2046  # tls prints two words: -v and the mount
run store -v "$WORK/checkpoints:/var/lib/syncopate" $(tls store) "syncopate-store:$TAG" \
  --tls-dir=/etc/syncopate/tls \
  --listen="127.0.0.1:$STORE_PORT" --metrics-listen="127.0.0.1:$STORE_METRICS" \
  --checkpoint-dir=/var/lib/syncopate --checkpoint-interval=0s
# shellcheck disable=SC2046
run coordinator $(tls coordinator) "syncopate-coordinator:$TAG" --tls-dir=/etc/syncopate/tls \
  --listen="127.0.0.1:$COORDINATOR_PORT" --metrics-listen=127.0.0.1:0 \
  --stores="127.0.0.1:$STORE_PORT" --mode=ssp --staleness=2 --min-trainers=2 \
  --target-accuracy=0.72 --exit-when-done
for rank in 0 1; do
  # shellcheck disable=SC2046
  run "trainer-$rank" $(tls "trainer-$rank") "syncopate-trainer:$TAG" --tls-dir=/etc/syncopate/tls \
    --coordinator="127.0.0.1:$COORDINATOR_PORT" --name="trainer-$rank" --rank="$rank" --world=2 \
    --metrics-listen=127.0.0.1:0 --eval-interval=1s --eval-samples=2000 --device=auto
done

wait_exit() {  # wait_exit CONTAINER SECONDS -> prints its exit code
  local code
  code="$(timeout "$2" docker wait "$1")" || { docker logs --tail 20 "$1" >&2; fail "$1 still running after $2 s"; }
  echo "$code"
}
for c in "${CONTAINERS[@]:1}"; do
  code="$(wait_exit "$c" 300)"
  docker logs "$c" >"$WORK/$c.log" 2>&1
  [ "$code" = 0 ] || { tail -20 "$WORK/$c.log" >&2; fail "$c exited $code"; }
  echo "$c exited 0"
done
grep -q "training is done" "$WORK/${CONTAINERS[1]}.log" || fail "the coordinator never declared the job done"
grep -h "training is done" "$WORK/${CONTAINERS[1]}.log" | head -1
# --device=auto, as the chart passes on GPU nodes: a CPU image has no CUDA plugin where the trainer
# looks for one (beside it, in /usr/local/lib), and says so before it trains on the CPU.
grep -q "no CUDA backend: /usr/local/lib/libsyncopate-cuda.so does not exist" \
  "$WORK/${CONTAINERS[2]}.log" || fail "trainer-0 did not say why it trains on the CPU"

# The store serves the trained model until stopped, then checkpoints it.
version="$(curl -sf "http://127.0.0.1:$STORE_METRICS/metrics" | awk '/^syncopate_store_live_version / { print $2 }')"
if [ -z "$version" ] || [ "${version%.*}" -le 1 ]; then
  fail "the store's model never changed (version '$version')"
fi
docker stop -t 20 "${CONTAINERS[0]}" >/dev/null
code="$(wait_exit "${CONTAINERS[0]}" 30)"
[ "$code" = 0 ] || { docker logs --tail 20 "${CONTAINERS[0]}" >&2; fail "the store exited $code on SIGTERM"; }
[ -s "$WORK/checkpoints/shard-0.ckpt" ] || fail "the store wrote no checkpoint on SIGTERM"
echo "store: model version $version, checkpoint $(stat -c %s "$WORK/checkpoints/shard-0.ckpt") bytes"
step "passed"
