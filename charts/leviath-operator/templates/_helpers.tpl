{{/* Names, labels and the image references every template uses. */}}

{{- define "leviath.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "leviath.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "leviath.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "leviath.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "leviath.selectorLabels" -}}
app.kubernetes.io/name: {{ include "leviath.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "leviath.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "leviath.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: leviath
{{- end -}}

{{- define "leviath.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "leviath.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository[:tag][@digest] of an image block, with the chart's image as the fallback. */}}
{{- define "leviath.imageRef" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- $repo := default $root.Values.image.repository $img.repository -}}
{{- $digest := default $root.Values.image.digest $img.digest -}}
{{- $tag := default (default $root.Chart.AppVersion $root.Values.image.tag) $img.tag -}}
{{- if $digest -}}{{ printf "%s@%s" $repo $digest }}{{- else -}}{{ printf "%s:%s" $repo $tag }}{{- end -}}
{{- end -}}

{{- define "leviath.image" -}}
{{- include "leviath.imageRef" (list .Values.image .) -}}
{{- end -}}

{{- define "leviath.sidecarImage" -}}
{{- include "leviath.imageRef" (list .Values.sidecar.image .) -}}
{{- end -}}

{{/*
The default runtime image: controller.runtimeImage, else the reference runtime (agent.image). Another image than
the operator's, so the operator's digest is never applied to it; its tag falls back to the operator's tag.
*/}}
{{- define "leviath.runtimeImage" -}}
{{- $a := .Values.agent.image -}}
{{- $tag := default (default .Chart.AppVersion .Values.image.tag) $a.tag -}}
{{- $ref := ternary (printf "%s@%s" $a.repository $a.digest) (printf "%s:%s" $a.repository $tag) (ne $a.digest "") -}}
{{- default $ref .Values.controller.runtimeImage -}}
{{- end -}}

{{/* The namespaces the operator may write in under the namespaced scope, one per line, deduplicated. */}}
{{- define "leviath.writeNamespaces" -}}
{{- $all := list .Values.sandboxNamespace.name -}}
{{- range .Values.rbac.namespaces }}{{ $all = append $all . }}{{ end -}}
{{- range ($all | uniq) }}
{{ . }}
{{- end -}}
{{- end -}}

{{/* The kubernetes.io/tls Secret of the secure metrics server: the one named, or the one the chart generates. */}}
{{- define "leviath.metricsTlsSecret" -}}
{{- .Values.metrics.secure.certSecretName | default (printf "%s-metrics-tls" (include "leviath.fullname" .)) -}}
{{- end }}

{{/* Whether the controller's metrics certificate is mounted from a Secret (else it makes one in memory). */}}
{{- define "leviath.metricsCertMounted" -}}
{{- if and .Values.metrics.secure.enabled (or .Values.metrics.secure.certSecretName .Values.metrics.secure.generateCertificate) }}true{{ end -}}
{{- end }}

{{/* The Secret holding the sidecars' metrics scrape token, which the controller creates. */}}
{{- define "leviath.sidecarMetricsTokenSecret" -}}
{{- .Values.metrics.sidecar.tokenSecretName | default (printf "%s-sidecar-metrics" (include "leviath.fullname" .)) -}}
{{- end }}
