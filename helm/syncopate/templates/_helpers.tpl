{{/* Chart name, truncated to a DNS label. */}}
{{- define "syncopate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name prefix of every resource: <release>-<chart> unless the release already holds it. */}}
{{- define "syncopate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A component's resource name: <fullname>-<component>. Call with (list $ "store"). */}}
{{- define "syncopate.componentName" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "syncopate.fullname" $root) (index . 1) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "syncopate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Immutable labels for selectors. */}}
{{- define "syncopate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "syncopate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "syncopate.labels" -}}
helm.sh/chart: {{ include "syncopate.chart" . }}
{{ include "syncopate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: syncopate
{{- end }}

{{/* Selector labels of one component. Call with (list $ "store"). */}}
{{- define "syncopate.componentSelectorLabels" -}}
{{ include "syncopate.selectorLabels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels of one component's objects. Call with (list $ "store"). */}}
{{- define "syncopate.componentLabels" -}}
{{ include "syncopate.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "syncopate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "syncopate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* A component's image. Call with (list $ .Values.store.image). */}}
{{- define "syncopate.image" -}}
{{- $root := index . 0 }}
{{- $image := index . 1 }}
{{- $tag := default $root.Chart.AppVersion $root.Values.image.tag }}
{{- if $root.Values.image.registry }}
{{- printf "%s/%s:%s" $root.Values.image.registry $image.repository $tag }}
{{- else }}
{{- printf "%s:%s" $image.repository $tag }}
{{- end }}
{{- end }}

{{/* The coordinator's address as trainers dial it: its Service. */}}
{{- define "syncopate.coordinatorAddress" -}}
{{- printf "%s:%d" (include "syncopate.componentName" (list . "coordinator")) (int .Values.coordinator.port) }}
{{- end }}

{{/* The store shards' stable addresses through the headless Service, in shard order. */}}
{{- define "syncopate.storeAddresses" -}}
{{- $store := include "syncopate.componentName" (list . "store") }}
{{- $addresses := list }}
{{- range $i := until (int .Values.store.shards) }}
{{- $addresses = append $addresses (printf "%s-%d.%s-headless.%s.svc.%s:%d" $store $i $store $.Release.Namespace $.Values.global.clusterDomain (int $.Values.store.port)) }}
{{- end }}
{{- join "," $addresses }}
{{- end }}

{{/* Pod-level settings every component shares. */}}
{{- define "syncopate.podCommon" -}}
serviceAccountName: {{ include "syncopate.serviceAccountName" . }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}

{{/* Downward-API environment: POD_NAME and POD_INDEX (the StatefulSet ordinal). */}}
{{- define "syncopate.podIdentityEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_INDEX
  valueFrom:
    fieldRef:
      fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
{{- end }}

{{/* A PodDisruptionBudget for one component. Call with (list $ "store" .Values.store.pdb); a
minAvailable in the dict replaces maxUnavailable. */}}
{{- define "syncopate.pdb" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $pdb := index . 2 }}
{{- if $pdb.create }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "syncopate.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "syncopate.componentLabels" (list $root $component) | nindent 4 }}
spec:
  {{- if hasKey $pdb "minAvailable" }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ $pdb.maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "syncopate.componentSelectorLabels" (list $root $component) | nindent 6 }}
{{- end }}
{{- end }}

{{/* Scrape relabelings the dashboards and alerts rely on: job = syncopate-<component>, instance =
the pod name (a trainer's name, as the coordinator's `trainer` label has it). A trainer of an Indexed
Job (trainer.custom.runToCompletion) is named <job>-<completion index> instead of its pod's random
name. Call with (list $ "trainer"). */}}
{{- define "syncopate.scrapeRelabelings" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 -}}
- targetLabel: job
  replacement: syncopate-{{ $component }}
- sourceLabels: [__meta_kubernetes_pod_name]
  targetLabel: instance
{{- if and (eq $component "trainer") (include "syncopate.trainerJob" $root) }}
- sourceLabels: [__meta_kubernetes_pod_controller_name, __meta_kubernetes_pod_annotation_batch_kubernetes_io_job_completion_index]
  separator: ;
  regex: (.+);(.+)
  replacement: ${1}-${2}
  targetLabel: instance
{{- end }}
{{- end }}

{{/* "true" when the trainers run as an Indexed Job (trainer.custom.runToCompletion with
trainer.custom.image), else "". */}}
{{- define "syncopate.trainerJob" -}}
{{- if and .Values.trainer.custom.image .Values.trainer.custom.runToCompletion }}true{{ end }}
{{- end }}

{{/* The flag that gives a process its credentials: its certificate directory, or none. */}}
{{- define "syncopate.tlsArg" -}}
{{- if .Values.tls.enabled }}--tls-dir=/etc/syncopate/tls{{ else }}--insecure{{ end }}
{{- end }}

{{/* A component's certificate Secret. Call with (list $ "store"). */}}
{{- define "syncopate.tlsSecret" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $given := index $root.Values.tls.secrets $component }}
{{- default (printf "%s-tls" (include "syncopate.componentName" (list $root $component))) $given }}
{{- end }}

{{/* The certificate's mount (with TLS on). */}}
{{- define "syncopate.tlsVolumeMount" -}}
- name: tls
  mountPath: /etc/syncopate/tls
  readOnly: true
{{- end }}

{{/* The certificate's volume (with TLS on). Call with (list $ "store"). */}}
{{- define "syncopate.tlsVolume" -}}
- name: tls
  secret:
    secretName: {{ include "syncopate.tlsSecret" . }}
{{- end }}

{{/* The trainers' certificate volume (with TLS on): the pool Secret, or a certificate of each pod's
own from cert-manager's csi-driver, whose URI names the pod (the trainer's --name). */}}
{{- define "syncopate.trainerTlsVolume" -}}
{{- if eq .Values.tls.trainerCertificates "perPod" }}
{{- $csi := .Values.tls.csi -}}
- name: tls
  csi:
    driver: csi.cert-manager.io
    readOnly: true
    volumeAttributes:
      csi.cert-manager.io/issuer-name: {{ $csi.issuerName | quote }}
      csi.cert-manager.io/issuer-kind: {{ $csi.issuerKind | quote }}
      csi.cert-manager.io/issuer-group: {{ $csi.issuerGroup | quote }}
      csi.cert-manager.io/common-name: ${POD_NAME}
      csi.cert-manager.io/uri-sans: {{ printf "spiffe://%s/syncopate/trainer/${POD_NAME}" $csi.trustDomain | quote }}
      csi.cert-manager.io/key-usages: digital signature,key encipherment,server auth,client auth
      csi.cert-manager.io/duration: {{ $csi.duration | quote }}
      csi.cert-manager.io/renew-before: {{ $csi.renewBefore | quote }}
      {{- with .Values.podSecurityContext.fsGroup }}
      csi.cert-manager.io/fs-group: {{ . | int64 | quote }}
      {{- end }}
      csi.cert-manager.io/ca-file: ca.crt
      csi.cert-manager.io/certificate-file: tls.crt
      csi.cert-manager.io/privatekey-file: tls.key
{{- else }}
{{- include "syncopate.tlsVolume" (list . "trainer") }}
{{- end }}
{{- end }}

{{/* How a gRPC port is probed: gRPC's health check in plaintext; with TLS a TCP connect, as the
kubelet's gRPC probe speaks no TLS. Call with (list $ port). */}}
{{- define "syncopate.grpcProbe" -}}
{{- $root := index . 0 }}
{{- $port := index . 1 }}
{{- if $root.Values.tls.enabled -}}
tcpSocket:
  port: {{ $port }}
{{- else -}}
grpc:
  port: {{ $port }}
{{- end }}
{{- end }}
