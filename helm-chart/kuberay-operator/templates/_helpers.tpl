{{/*
Names, labels, the operator's arguments and its RBAC rules, shared by the templates.
*/}}

{{/* The chart's short name (label app.kubernetes.io/name). */}}
{{- define "kuberay-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The pods' app.kubernetes.io/component. */}}
{{- define "kuberay-operator.component" -}}
{{- default .Chart.Name .Values.componentOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: fullnameOverride, else the release name (with the chart's name when it lacks it). */}}
{{- define "kuberay-operator.fullname" -}}
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

{{- define "kuberay-operator.labels" -}}
app.kubernetes.io/name: {{ include "kuberay-operator.name" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "kuberay-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kuberay-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The watched namespaces, comma-separated: watchNamespace, else the release's with singleNamespaceInstall. */}}
{{- define "kuberay-operator.watchNamespace" -}}
{{- if .Values.watchNamespace -}}
{{- join "," .Values.watchNamespace -}}
{{- else if .Values.singleNamespaceInstall -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* --feature-gates=A=true,B=false from the featureGates list (nothing when the list is empty). */}}
{{- define "kuberay-operator.featureGates" -}}
{{- $gates := list -}}
{{- range .Values.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" .name .enabled) -}}
{{- end -}}
{{- if $gates -}}
--feature-gates={{ join "," $gates }}
{{- end -}}
{{- end -}}

{{/* The node event forwarder's non-empty lists by name (sources, reasons, types), as YAML; none unless
enabled. */}}
{{- define "kuberay-operator.nodeEventForwarder" -}}
{{- $lists := dict -}}
{{- with .Values.nodeEventForwarder -}}
{{- if .enabled -}}
{{- range $name := list "sources" "reasons" "types" -}}
{{- with index $.Values.nodeEventForwarder $name }}{{ $_ := set $lists $name . }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $lists -}}
{{- end -}}

{{/* Refuses values the operator would refuse at start-up, with the value's path. */}}
{{- define "kuberay-operator.validate" -}}
{{- if hasKey .Values "reconcileConcurrency" -}}
{{- if not (regexMatch "^[1-9][0-9]*$" (toString .Values.reconcileConcurrency)) -}}
{{- fail (printf "values.reconcileConcurrency must be a positive integer, got %q" (toString .Values.reconcileConcurrency)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.kubeClient -}}
{{- if and (hasKey . "qps") (not (regexMatch "^[0-9]+(\\.[0-9]+)?$" (toString .qps))) -}}
{{- fail (printf "values.kubeClient.qps must be a valid float number, got %q" (toString .qps)) -}}
{{- end -}}
{{- if and (hasKey . "burst") (not (regexMatch "^[0-9]+$" (toString .burst))) -}}
{{- fail (printf "values.kubeClient.burst must be a non-negative integer, got %q" (toString .burst)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The operator's arguments, as a YAML list: the config file, or the flags, then the feature gates. */}}
{{- define "kuberay-operator.args" -}}
{{- $args := list -}}
{{- if .Values.configuration.enabled -}}
{{- $args = list "--config" "/etc/kuberay/config.yaml" -}}
{{- else -}}
{{- with .Values.batchScheduler -}}
{{- if .enabled -}}{{- $args = append $args "--enable-batch-scheduler" -}}{{- end -}}
{{- if .name -}}{{- $args = append $args (printf "--batch-scheduler=%s" .name) -}}{{- end -}}
{{- end -}}
{{- with include "kuberay-operator.watchNamespace" . -}}
{{- $args = concat $args (list "--watch-namespace" .) -}}
{{- end -}}
{{- if and .Values.logging.baseDir .Values.logging.fileName -}}
{{- $args = concat $args (list "--log-file-path" (printf "%s/%s" .Values.logging.baseDir .Values.logging.fileName)) -}}
{{- end -}}
{{- with .Values.logging.stdoutEncoder -}}{{- $args = concat $args (list "--log-stdout-encoder" .) -}}{{- end -}}
{{- with .Values.logging.fileEncoder -}}{{- $args = concat $args (list "--log-file-encoder" .) -}}{{- end -}}
{{- if hasKey .Values "useKubernetesProxy" -}}
{{- $args = append $args (printf "--use-kubernetes-proxy=%t" .Values.useKubernetesProxy) -}}
{{- end -}}
{{- if hasKey .Values "leaderElectionEnabled" -}}
{{- $args = append $args (printf "--enable-leader-election=%t" .Values.leaderElectionEnabled) -}}
{{- end -}}
{{- if and .Values.metrics (hasKey .Values.metrics "enabled") -}}
{{- $args = append $args (printf "--enable-metrics=%t" .Values.metrics.enabled) -}}
{{- end -}}
{{- if hasKey .Values "reconcileConcurrency" -}}
{{- $args = append $args (printf "--reconcile-concurrency=%v" .Values.reconcileConcurrency) -}}
{{- end -}}
{{- with .Values.kubeClient -}}
{{- if hasKey . "qps" -}}{{- $args = append $args (printf "--qps=%v" .qps) -}}{{- end -}}
{{- if hasKey . "burst" -}}{{- $args = append $args (printf "--burst=%v" .burst) -}}{{- end -}}
{{- end -}}
{{- with .Values.configuration.allowedNodeLabels -}}
{{- $args = append $args (printf "--allowed-node-labels=%s" (join "," .)) -}}
{{- end -}}
{{- range $flag, $list := include "kuberay-operator.nodeEventForwarder" . | fromYaml -}}
{{- $args = append $args (printf "--node-event-forwarder-%s=%s" $flag (join "," $list)) -}}
{{- end -}}
{{- end -}}
{{- with include "kuberay-operator.featureGates" . -}}
{{- $args = append $args . -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/*
The operator's rules, for its ClusterRole or each watched namespace's Role: deploy/rbac/role.yaml's (the
rules the operator's tests run under, read through files/operator-rules.yaml). They include every batch
scheduler's PodGroups whatever batchScheduler says: rules for kinds a cluster lacks are harmless.
*/}}
{{- define "kuberay-operator.rules" -}}
rules:
{{ (.Files.Get "files/operator-rules.yaml" | fromYaml).rules | toYaml }}
{{- end -}}
