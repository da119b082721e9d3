{{/* Names, labels and the pod template shared by the head and every worker group. */}}

{{/* fullnameOverride, else the release name (with nameOverride, "kuberay", when it lacks it). */}}
{{- define "ray-cluster.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ray-cluster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* rayStartParams with every value quoted, the deprecated initArgs merged in; nothing when both are empty. */}}
{{- define "ray-cluster.rayStartParams" -}}
{{- $params := dict -}}
{{- range $key, $value := .rayStartParams }}{{ $_ := set $params $key (toString $value) }}{{ end -}}
{{- range $key, $value := .initArgs }}{{ $_ := set $params $key (toString $value) }}{{ end -}}
{{- with $params }}
rayStartParams:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
A group's pod template. Arguments: root (the chart's context), group (the head's or a worker group's values),
container (ray-head or ray-worker), defaultResources (used when the group sets none).
*/}}
{{- define "ray-cluster.podTemplate" -}}
{{- $root := .root -}}
{{- $group := .group -}}
{{- $image := $group.image | default $root.Values.image -}}
metadata:
  labels:
    {{- include "ray-cluster.labels" $root | nindent 4 }}
    {{- with $group.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $group.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with $group.initContainers }}
  initContainers:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: {{ .container }}
      image: {{ $image.repository }}:{{ $image.tag }}
      imagePullPolicy: {{ $image.pullPolicy }}
      {{- range $key := list "command" "args" }}
      {{- with index $group $key }}
      {{ $key }}:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- end }}
      {{- with concat ($root.Values.common.containerEnv | default list) ($group.containerEnv | default list) }}
      env:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- range $key := list "envFrom" "volumeMounts" "ports" }}
      {{- with index $group $key }}
      {{ $key }}:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- end }}
      {{- with $group.resources | default .defaultResources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- range $key := list "lifecycle" "securityContext" }}
      {{- with index $group $key }}
      {{ $key }}:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- end }}
    {{- with $group.sidecarContainers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- range $key := list "volumes" "dnsConfig" "nodeSelector" "affinity" "tolerations" "topologySpreadConstraints" "resourceClaims" }}
  {{- with index $group $key }}
  {{ $key }}:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
  {{- range $key := list "priorityClassName" "priority" "restartPolicy" "runtimeClassName" "serviceAccountName" }}
  {{- with index $group $key }}
  {{ $key }}: {{ . }}
  {{- end }}
  {{- end }}
  {{- with $group.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* One workerGroupSpecs entry. Arguments: root, name (the group's name), group (its values). */}}
{{- define "ray-cluster.workerGroup" -}}
{{- $group := .group -}}
- groupName: {{ .name }}
  replicas: {{ $group.replicas }}
  minReplicas: {{ $group.minReplicas | default 0 }}
  maxReplicas: {{ $group.maxReplicas | default 2147483647 }}
  numOfHosts: {{ $group.numOfHosts | default 1 }}
  {{- include "ray-cluster.rayStartParams" $group | nindent 2 }}
  template:
    {{- include "ray-cluster.podTemplate" (dict "root" .root "group" $group "container" "ray-worker" "defaultResources" .defaultResources) | nindent 4 }}
{{- end -}}
