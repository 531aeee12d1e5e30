{{/* Names and labels shared by the templates. */}}

{{- define "kvpool.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kvpool.operatorName" -}}{{ include "kvpool.fullname" . }}-operator{{- end -}}
{{- define "kvpool.webhookServiceName" -}}{{ include "kvpool.fullname" . }}-webhook{{- end -}}
{{- define "kvpool.webhookSecretName" -}}{{ include "kvpool.fullname" . }}-webhook-certs{{- end -}}
{{- define "kvpool.metricsServiceName" -}}{{ include "kvpool.fullname" . }}-metrics{{- end -}}

{{- define "kvpool.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: kvpool
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kvpool
{{- end -}}

{{- define "kvpool.operatorSelector" -}}
app.kubernetes.io/name: kvpool
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* <registry>/<repository>:<tag>, without a registry when none is set. */}}
{{- define "kvpool.image" -}}
{{- $registry := .registry | default "" | trimSuffix "/" -}}
{{- if $registry -}}{{ $registry }}/{{- end -}}{{ .repository }}:{{ .tag }}
{{- end -}}

{{- define "kvpool.operatorImage" -}}
{{- include "kvpool.image" (dict "registry" .Values.image.registry "repository" .Values.operator.image.repository "tag" (.Values.operator.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{- define "kvpool.storeImage" -}}
{{- include "kvpool.image" (dict "registry" .Values.image.registry "repository" .Values.store.image.repository "tag" .Values.store.image.tag) -}}
{{- end -}}

{{- define "kvpool.certManager" -}}
{{- if eq .Values.webhook.certificates.source "cert-manager" -}}true{{- else if ne .Values.webhook.certificates.source "self-managed" -}}
{{- fail (printf "webhook.certificates.source=%s: must be self-managed or cert-manager" .Values.webhook.certificates.source) -}}
{{- end -}}
{{- end -}}

{{/* cert-manager's CA injector fills the caBundle of configurations annotated with the Certificate. */}}
{{- define "kvpool.webhookAnnotations" -}}
{{- if include "kvpool.certManager" . -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "kvpool.webhookSecretName" . }}
{{- end -}}
{{- end -}}
