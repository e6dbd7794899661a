#!/usr/bin/env bash
# Builds the Syncopate images from this checkout: syncopate-build (the compiler stage), then
# syncopate-store, syncopate-coordinator and syncopate-trainer, tagged with the chart's appVersion.
# usage: docker/build-images.sh [TAG]
# Environment: REGISTRY (prefix, e.g. ghcr.io/me), BUILD_BASE (default debian:bookworm),
# RUNTIME_BASE (default debian:bookworm-slim), TRAINER_BASE (the trainer's runtime base, default
# RUNTIME_BASE; e.g. a CUDA runtime image with the same Debian/Ubuntu package set), SYNCOPATE_CUDA
# (default OFF; ON builds the trainer's CUDA plugin, on a BUILD_BASE with the toolkit and cuDNN),
# FROM_BUILD (a build directory of this checkout made on Debian 12, e.g. build: syncopate-build
# takes its binaries instead of compiling them again; docker/prebuilt.Dockerfile).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TAG="${1:-$(awk -F'"' '/^appVersion:/ { print $2 }' "$ROOT/helm/syncopate/Chart.yaml")}"
PREFIX="${REGISTRY:+$REGISTRY/}"
RUNTIME_BASE="${RUNTIME_BASE:-debian:bookworm-slim}"
# Host networking: apt inside the build reaches the mirror even where Docker has no bridge.
BUILD=(docker build --network=host)

if [ -z "${FROM_BUILD:-}" ]; then
  "${BUILD[@]}" -f "$ROOT/docker/build.Dockerfile" -t "syncopate-build:$TAG" \
    --build-arg "BUILD_BASE=${BUILD_BASE:-debian:bookworm}" \
    --build-arg "SYNCOPATE_CUDA=${SYNCOPATE_CUDA:-OFF}" "$ROOT"
else
  # The same /out as build.Dockerfile writes, from FROM_BUILD's binaries. Their runtime packages
  # are looked up in this host's dpkg, so the host must be what the images run: Debian 12.
  if ! grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
    echo "FROM_BUILD needs a Debian 12 (bookworm) host; build in the image instead" >&2
    exit 1
  fi
  FROM_BUILD="$(cd "$FROM_BUILD" && pwd)"
  stage="$(mktemp -d)"
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/out/lib"
  for binary in syncopate-store syncopate-coordinator syncopate-trainer; do
    [ -x "$FROM_BUILD/bin/$binary" ] || { echo "no $FROM_BUILD/bin/$binary: build it first" >&2; exit 1; }
    strip -o "$stage/out/$binary" "$FROM_BUILD/bin/$binary"
    "$ROOT/docker/runtime-packages.sh" "$stage/out/$binary" >"$stage/out/$binary.packages"
  done
  if [ -d "$FROM_BUILD/python/syncopate" ]; then
    cp -r "$FROM_BUILD/python" "$stage/out/python"
    "$ROOT/docker/runtime-packages.sh" "$stage/out/python/syncopate"/_syncopate*.so \
      >"$stage/out/python.packages"
  fi
  if [ "${SYNCOPATE_CUDA:-OFF}" = ON ]; then
    cp "$FROM_BUILD/lib/libsyncopate-cuda.so" "$stage/out/lib/"
    strip "$stage/out/lib/libsyncopate-cuda.so"
  fi
  "${BUILD[@]}" -f "$ROOT/docker/prebuilt.Dockerfile" -t "syncopate-build:$TAG" \
    --build-arg "BUILD_BASE=${BUILD_BASE:-debian:bookworm}" "$stage"
fi
for component in store coordinator trainer; do
  base="$RUNTIME_BASE"
  [ "$component" = trainer ] && base="${TRAINER_BASE:-$RUNTIME_BASE}"
  "${BUILD[@]}" -f "$ROOT/docker/$component.Dockerfile" -t "${PREFIX}syncopate-$component:$TAG" \
    --build-arg "BUILD_IMAGE=syncopate-build:$TAG" --build-arg "RUNTIME_BASE=$base" "$ROOT/docker"
  echo "built ${PREFIX}syncopate-$component:$TAG"
done
