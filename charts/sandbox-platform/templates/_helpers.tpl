{{/* Name of the chart, overridable. */}}
{{- define "sandbox-platform.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified prefix of every resource name. */}}
{{- define "sandbox-platform.fullname" -}}
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

{{/* Labels on every resource. */}}
{{- define "sandbox-platform.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: sandbox-platform
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of a component: call with (dict "ctx" $ "component" "operator"). */}}
{{- define "sandbox-platform.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandbox-platform.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "sandbox-platform.operatorName" -}}{{ include "sandbox-platform.fullname" . }}-operator{{- end -}}
{{- define "sandbox-platform.gatewayName" -}}{{ include "sandbox-platform.fullname" . }}-gateway{{- end -}}

{{/* Name of the master key Secret (generated or existing). */}}
{{- define "sandbox-platform.masterKeySecret" -}}
{{- default (printf "%s-master-key" (include "sandbox-platform.fullname" .)) .Values.masterKey.existingSecret -}}
{{- end -}}

{{/* Name of the API keys Secret (generated or existing). */}}
{{- define "sandbox-platform.apiKeysSecret" -}}
{{- default (printf "%s-api-keys" (include "sandbox-platform.fullname" .)) .Values.apiKeys.existingSecret -}}
{{- end -}}

{{/* Image reference of a component: call with an images.* entry. */}}
{{- define "sandbox-platform.image" -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}

{{/*
An image reference as the image policy reads it (templates/sandbox-policy.yaml): name[:tag][@digest]
with the gateway's former parser's exact rules (docs/adr/0028). The name's first segment is a
registry host only when the name has more segments and it holds a '.' or ':' (localhost reads the
same either way); path components are lowercase alphanumerics joined by '.', '_', '__' or dashes.
RE2 syntax without backslashes: the same text is a CEL string in the policy and a Go regexp here.
*/}}
{{- define "sandbox-platform.imageNamePattern" -}}
{{- $l := "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?" -}}
{{- $host := printf "(%s([.]%s)+(:[0-9]{1,5})?|%s:[0-9]{1,5})" $l $l $l -}}
{{- $c := "[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*" -}}
{{- $n := "[a-z0-9]+((_|__|-+)[a-z0-9]+)*" -}}
{{- printf "(%s|(%s|%s)(/%s)+)" $c $host $n $c -}}
{{- end -}}

{{/* A whole image reference: name, optional tag, optional digest. */}}
{{- define "sandbox-platform.imageRefPattern" -}}
{{- printf "^%s(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$" (include "sandbox-platform.imageNamePattern" .) -}}
{{- end -}}

{{/* An allowlist entry admitting every repository below a path: name/* */}}
{{- define "sandbox-platform.imageBelowPattern" -}}
{{- printf "^%s/[*]$" (include "sandbox-platform.imageNamePattern" .) -}}
{{- end -}}

{{/* Restricted-PSA container securityContext shared by the operator and gateway. */}}
{{- define "sandbox-platform.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Restricted-PSA pod securityContext shared by the operator and gateway. */}}
{{- define "sandbox-platform.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Fails the render when values contradict each other. */}}
{{- define "sandbox-platform.validate" -}}
{{- if has .Release.Namespace .Values.sandboxNamespaces -}}
{{- fail (printf "sandboxNamespaces must not include the release namespace %q: sandbox pods must not share a namespace with the operator and gateway" .Release.Namespace) -}}
{{- end -}}
{{- if and (not .Values.apiKeys.existingSecret) (eq (len .Values.apiKeys.keys) 0) -}}
{{- fail "set apiKeys.keys (at least one key) or apiKeys.existingSecret: the gateway refuses to start without API keys" -}}
{{- end -}}
{{- range $ns, $_ := .Values.policy.namespaces -}}
{{- if not (has $ns $.Values.sandboxNamespaces) -}}
{{- fail (printf "policy.namespaces: namespace %q is not in sandboxNamespaces" $ns) -}}
{{- end -}}
{{- end -}}
{{- if .Values.gateway.policy.imageAllowlist -}}
{{- fail "gateway.policy.imageAllowlist is gone: images are allowed by the admission policy now, for kubectl and the gateway alike; move the entries to policy.images (or policy.namespaces.<ns>.images) (docs/adr/0028-policy-at-admission.md)" -}}
{{- end -}}
{{- range .Values.apiKeys.keys -}}
{{- range .namespaces -}}
{{- if not (has . $.Values.sandboxNamespaces) -}}
{{- fail (printf "apiKeys: namespace %q is not in sandboxNamespaces" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
