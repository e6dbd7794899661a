#!/usr/bin/env bash
# Builds the Syncopate images from this checkout: syncopate-build (the compiler stage), then
# syncopate-store, syncopate-coordinator and syncopate-trainer, tagged with the chart's appVersion.
# usage: docker/build-images.sh [TAG]
# Environment: REGISTRY (prefix, e.g. ghcr.io/me), BUILD_BASE (default debian:bookworm),
# RUNTIME_BASE (default debian:bookworm-slim), TRAINER_BASE (the trainer's runtime base, default
# RUNTIME_BASE; e.g. a CUDA runtime image with the same Debian/Ubuntu package set), SYNCOPATE_CUDA
# (default OFF; ON builds the trainer's CUDA plugin, on a BUILD_BASE with the toolkit and cuDNN).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TAG="${1:-$(awk -F'"' '/^appVersion:/ { print $2 }' "$ROOT/helm/syncopate/Chart.yaml")}"
PREFIX="${REGISTRY:+$REGISTRY/}"
RUNTIME_BASE="${RUNTIME_BASE:-debian:bookworm-slim}"
# Host networking: apt inside the build reaches the mirror even where Docker has no bridge.
BUILD=(docker build --network=host)

"${BUILD[@]}" -f "$ROOT/docker/build.Dockerfile" -t "syncopate-build:$TAG" \
  --build-arg "BUILD_BASE=${BUILD_BASE:-debian:bookworm}" \
  --build-arg "SYNCOPATE_CUDA=${SYNCOPATE_CUDA:-OFF}" "$ROOT"
for component in store coordinator trainer; do
  base="$RUNTIME_BASE"
  [ "$component" = trainer ] && base="${TRAINER_BASE:-$RUNTIME_BASE}"
  "${BUILD[@]}" -f "$ROOT/docker/$component.Dockerfile" -t "${PREFIX}syncopate-$component:$TAG" \
    --build-arg "BUILD_IMAGE=syncopate-build:$TAG" --build-arg "RUNTIME_BASE=$base" "$ROOT/docker"
  echo "built ${PREFIX}syncopate-$component:$TAG"
done
