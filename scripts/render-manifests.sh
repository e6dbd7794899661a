#!/usr/bin/env bash
# Renders the Helm chart into plain manifests for users without Helm (deploy/kubernetes/):
#   syncopate-gpu.yaml  the chart's defaults (GPU trainers)
#   syncopate-cpu.yaml  CPU-only trainers (helm/syncopate/ci/cpu-only-values.yaml)
# Release "syncopate" in namespace "syncopate". usage: render-manifests.sh [OUT_DIR]
# The test helm_chart_manifests fails when the committed files differ from a fresh rendering.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/deploy/kubernetes}"
HELM="${SYNCOPATE_TOOLS_DIR:-$ROOT/build/tools}/bin/helm"
[ -x "$HELM" ] || { echo "no helm at $HELM: run scripts/install-chart-tools.sh" >&2; exit 1; }
mkdir -p "$OUT"
render() {  # render FILE [helm args...]
  local file="$1"
  shift
  {
    echo "# Rendered from helm/syncopate by scripts/render-manifests.sh; do not edit."
    echo "# kubectl create namespace syncopate && kubectl apply -n syncopate -f $file"
    "$HELM" template syncopate "$ROOT/helm/syncopate" --namespace syncopate "$@" 2>/dev/null
  } >"$OUT/$file"
}
render syncopate-gpu.yaml
render syncopate-cpu.yaml -f "$ROOT/helm/syncopate/ci/cpu-only-values.yaml"
