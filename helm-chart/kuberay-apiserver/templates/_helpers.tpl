{{/* Names and labels shared by the templates. */}}

{{- define "kuberay-apiserver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* fullnameOverride, else the release name (with the chart's name when it lacks it). */}}
{{- define "kuberay-apiserver.fullname" -}}
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

{{- define "kuberay-apiserver.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "kuberay-apiserver.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The APIServer's rules, for its ClusterRole or, in singleNamespaceInstall, its Role. */}}
{{- define "kuberay-apiserver.rules" -}}
rules:
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [list]
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [get, list]
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [ray.io]
    resources: [rayclusters, rayjobs, rayservices]
    verbs: [get, list, watch, create, update, patch, delete]
{{- end -}}
