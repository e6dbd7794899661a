#!/usr/bin/env bash
# Tests of the Helm chart, without a cluster. usage: chart_test.sh lint|validate|structure|manifests
#   lint       helm lint --strict with every ci/*-values.yaml; yamllint on the values files; values
#              that break values.schema.json are refused
#   validate   helm template with every ci/*-values.yaml; yamllint and the Kubernetes /
#              Prometheus Operator schemas (npm kubernetes-models) on the rendered objects
#   structure  check_rendered.py on each rendering, and that it catches a broken one
#   manifests  deploy/kubernetes/ equals a fresh scripts/render-manifests.sh
# Needs the tools of scripts/install-chart-tools.sh in $SYNCOPATE_TOOLS_DIR (default build/tools).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CHART="$ROOT/helm/syncopate"
TOOLS="${SYNCOPATE_TOOLS_DIR:-$ROOT/build/tools}"
HELM="$TOOLS/bin/helm"
if [ ! -x "$HELM" ] || [ ! -d "$TOOLS/node_modules/kubernetes-models" ]; then
  echo "chart tools missing in $TOOLS: run scripts/install-chart-tools.sh" >&2
  exit 1
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
VALUES_LINT='{extends: default, rules: {document-start: disable, line-length: {max: 120}}}'
# Rendered output mixes toYaml's unindented sequences with indented ones, and embeds dashboards.
RENDERED_LINT='{extends: default, rules: {document-start: disable, line-length: disable,
  indentation: {spaces: 2, indent-sequences: whatever}}}'

render() {  # render NAME VALUES_FILE [helm args...] -> $OUT/NAME.yaml
  local name="$1" values="$2"
  shift 2
  "$HELM" template demo "$CHART" --namespace ml -f "$values" "$@" >"$OUT/$name.yaml" 2>"$OUT/$name.err" ||
    { cat "$OUT/$name.err" >&2; echo "FAIL: helm template with $values" >&2; return 1; }
}

expect_refused() {  # expect_refused WHAT PATTERN [helm args...]: the schema must refuse them
  local what="$1" pattern="$2"
  shift 2
  if "$HELM" template demo "$CHART" "$@" >"$OUT/refused.yaml" 2>"$OUT/refused.err"; then
    echo "FAIL: $what was accepted" >&2
    return 1
  fi
  grep -q -- "$pattern" "$OUT/refused.err" ||
    { cat "$OUT/refused.err" >&2; echo "FAIL: $what refused without naming $pattern" >&2; return 1; }
  echo "ok: $what refused"
}

case "${1:-}" in
  lint)
    for values in "$CHART"/ci/*-values.yaml; do
      "$HELM" lint --strict "$CHART" -f "$values" >"$OUT/lint.out" 2>&1 ||
        { cat "$OUT/lint.out" >&2; echo "FAIL: helm lint --strict with $values" >&2; exit 1; }
      echo "ok: helm lint --strict -f $(basename "$values")"
    done
    yamllint -s -d "$VALUES_LINT" "$CHART/Chart.yaml" "$CHART/values.yaml" "$CHART"/ci/*.yaml
    echo "ok: yamllint on the values files"
    expect_refused "a misspelt key" "tranier" --set tranier.replicas=3
    expect_refused "a string replica count" "/trainer/replicas" --set-string trainer.replicas=three
    expect_refused "an unknown mode" "/sync/mode" --set sync.mode=bulk
    expect_refused "zero store shards" "/store/shards" --set store.shards=0
    expect_refused "a bad duration" "/sync/startTimeout" --set sync.startTimeout=soon
    # A custom trainer's values (trainer.custom): typos, wrong types, clashes with the chart's own
    # volumes, and combinations that cannot work.
    custom=(--set trainer.custom.image=registry.example.com/my-trainer:1.0)
    expect_refused "a misspelt custom trainer key" "runToCompletition" "${custom[@]}" \
      --set trainer.custom.runToCompletition=true
    expect_refused "a string startup grace" "/trainer/custom/startupGraceSeconds" "${custom[@]}" \
      --set-string trainer.custom.startupGraceSeconds=10m
    expect_refused "a string runToCompletion" "/trainer/custom/runToCompletion" "${custom[@]}" \
      --set-string trainer.custom.runToCompletion=yes
    expect_refused "a negative backoffLimit" "/trainer/custom/backoffLimit" "${custom[@]}" \
      --set trainer.custom.backoffLimit=-1
    expect_refused "a misspelt resources key" "request" "${custom[@]}" \
      --set trainer.custom.resources.request.cpu=2
    expect_refused "a volume named as the chart's /tmp" "/trainer/custom/volumes/0/name" "${custom[@]}" \
      --set 'trainer.custom.volumes[0].name=tmp' --set 'trainer.custom.volumes[0].emptyDir.medium=Memory'
    expect_refused "a mount on the chart's /tmp" "/trainer/custom/volumeMounts/0/mountPath" "${custom[@]}" \
      --set 'trainer.custom.volumeMounts[0].name=scratch' --set 'trainer.custom.volumeMounts[0].mountPath=/tmp'
    expect_refused "a relative modelDir" "/trainer/custom/modelDir" "${custom[@]}" \
      --set trainer.custom.modelDir=models
    expect_refused "a modelDir on no mount" "trainer.custom.modelDir /models is on none" "${custom[@]}" \
      --set trainer.custom.modelDir=/models
    expect_refused "a modelDir on a read-only mount" "trainer.custom.modelDir /data/out is on none" \
      "${custom[@]}" --set trainer.custom.modelDir=/data/out \
      --set 'trainer.custom.volumeMounts[0].name=data' --set 'trainer.custom.volumeMounts[0].mountPath=/data' \
      --set 'trainer.custom.volumeMounts[0].readOnly=true'
    expect_refused "runToCompletion without a custom image" "needs trainer.custom.image" \
      --set trainer.custom.runToCompletion=true
    expect_refused "runToCompletion with per-pod certificates" "tls.trainerCertificates perPod" "${custom[@]}" \
      --set trainer.custom.runToCompletion=true --set tls.trainerCertificates=perPod
    ;;
  validate)
    for values in "$CHART"/ci/*-values.yaml; do
      render "$(basename "$values" -values.yaml)" "$values"
    done
    yamllint -s -d "$RENDERED_LINT" "$OUT"/*.yaml
    renderings=("$OUT"/*.yaml)
    echo "ok: yamllint on ${#renderings[@]} renderings"
    node "$HERE/validate_manifests.mjs" "$TOOLS" --self-test
    node "$HERE/validate_manifests.mjs" "$TOOLS" "$OUT"/*.yaml
    ;;
  structure)
    for values in "$CHART"/ci/*-values.yaml; do
      name="$(basename "$values" -values.yaml)"
      render "$name" "$values"
      /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$values" "$OUT/$name.yaml"
      echo "ok: structure of $name"
    done
    # Scaling through --set reaches the workloads too.
    printf 'trainer:\n  replicas: 7\nstore:\n  shards: 4\n' >"$OUT/scaled-values.yaml"
    render scaled "$OUT/scaled-values.yaml"
    /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$OUT/scaled-values.yaml" "$OUT/scaled.yaml"
    echo "ok: structure with 7 trainers and 4 shards"
    # The checks can fail: a trainer dialling a wrong port, a Service forwarding to a missing port.
    sed 's/--coordinator=\(.*\):7000/--coordinator=\1:7001/' "$OUT/default.yaml" >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/default-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a wrong coordinator port went unnoticed" >&2
      exit 1
    fi
    grep -q "has no port 7001" "$OUT/broken.out"
    sed 's/targetPort: metrics/targetPort: metricz/' "$OUT/default.yaml" >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/default-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a Service forwarding to a missing port went unnoticed" >&2
      exit 1
    fi
    grep -q "targetPort metricz" "$OUT/broken.out"
    sed 's/-coordinator:7000"/-coordinator:7001"/' "$OUT/custom-trainer.yaml" >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/custom-trainer-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a custom trainer given a wrong coordinator port went unnoticed" >&2
      exit 1
    fi
    grep -q "has no port 7001" "$OUT/broken.out"
    # A Job's trainer named after its pod (random) instead of its completion index.
    sed 's/value: demo-syncopate-trainer-$(JOB_COMPLETION_INDEX)/value: $(POD_NAME)/' \
      "$OUT/custom-trainer-job.yaml" >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/custom-trainer-job-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a Job's trainer named after its random pod name went unnoticed" >&2
      exit 1
    fi
    grep -q "not a stable name" "$OUT/broken.out"
    # A Job that restarts trainers which finished, or a startup grace shorter than asked.
    sed 's/restartPolicy: OnFailure/restartPolicy: Always/' "$OUT/custom-trainer-job.yaml" >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/custom-trainer-job-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a Job restarting finished trainers went unnoticed" >&2
      exit 1
    fi
    grep -q "must stay done" "$OUT/broken.out"
    sed 's/failureThreshold: 91/failureThreshold: 9/' "$OUT/custom-trainer-job.yaml" >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/custom-trainer-job-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a startupProbe shorter than trainer.custom.startupGraceSeconds went unnoticed" >&2
      exit 1
    fi
    grep -q "not trainer.custom.startupGraceSeconds" "$OUT/broken.out"
    # runToCompletion renders a Job and no StatefulSet; without it, the checks want a StatefulSet.
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/custom-trainer-values.yaml" \
      "$OUT/custom-trainer-job.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a trainer Job without trainer.custom.runToCompletion went unnoticed" >&2
      exit 1
    fi
    grep -q "the trainers are a Job, not a StatefulSet" "$OUT/broken.out"
    sed 's|/syncopate/trainer/${POD_NAME}|/syncopate/trainer/trainer-0|' "$OUT/per-pod-certs.yaml" \
      >"$OUT/broken.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$CHART/ci/per-pod-certs-values.yaml" \
      "$OUT/broken.yaml" >"$OUT/broken.out"; then
      echo "FAIL: every trainer pod given one name's certificate went unnoticed" >&2
      exit 1
    fi
    grep -q "a trainer's certificate names" "$OUT/broken.out"
    printf 'store:\n  pullWait: 60s\n' >"$OUT/long-wait-values.yaml"
    render long-wait "$OUT/long-wait-values.yaml"
    if /usr/bin/python3 "$HERE/check_rendered.py" "$CHART" "$OUT/long-wait-values.yaml" \
      "$OUT/long-wait.yaml" >"$OUT/broken.out"; then
      echo "FAIL: a pull wait as long as the stream idle timeout went unnoticed" >&2
      exit 1
    fi
    grep -q "must exceed --pull-wait" "$OUT/broken.out"
    echo "ok: broken renderings are caught"
    ;;
  manifests)
    SYNCOPATE_TOOLS_DIR="$TOOLS" "$ROOT/scripts/render-manifests.sh" "$OUT/manifests"
    diff -ru "$ROOT/deploy/kubernetes" "$OUT/manifests" ||
      { echo "FAIL: deploy/kubernetes/ is stale: run scripts/render-manifests.sh" >&2; exit 1; }
    echo "ok: deploy/kubernetes/ matches the chart"
    ;;
  *)
    echo "usage: $0 lint|validate|structure|manifests" >&2
    exit 2
    ;;
esac
