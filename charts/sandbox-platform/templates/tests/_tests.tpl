{{/*
`helm test` (templates/tests/): Pods that run only on `helm test RELEASE`, on the gateway's image
(node, nothing else needed), each with a deadline. Hook objects are deleted when every test
passed; a failed test's Pod stays (its log is printed by helm: hook-output-log-policy) until the
next `helm test` replaces it.
*/}}
{{- define "sandbox-platform.testName" -}}{{ include "sandbox-platform.fullname" . }}-test{{- end -}}

{{/* Labels and annotations of every test hook object: call with (dict "ctx" $ "weight" N). */}}
{{- define "sandbox-platform.testMeta" -}}
namespace: {{ .ctx.Release.Namespace }}
labels:
  {{- include "sandbox-platform.labels" .ctx | nindent 2 }}
  app.kubernetes.io/name: {{ include "sandbox-platform.name" .ctx }}
  app.kubernetes.io/component: helm-test
annotations:
  helm.sh/hook: test
  helm.sh/hook-weight: {{ .weight | quote }}
  helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
  helm.sh/hook-output-log-policy: hook-succeeded,hook-failed
{{- end -}}

{{/* The spec of a test Pod running a node ES module script: call with (dict "ctx" $ "script" S "env" LIST). */}}
{{- define "sandbox-platform.testPodSpec" -}}
restartPolicy: Never
serviceAccountName: {{ include "sandbox-platform.testName" .ctx }}
automountServiceAccountToken: true
activeDeadlineSeconds: {{ .ctx.Values.tests.timeoutSeconds }}
securityContext:
  {{- include "sandbox-platform.podSecurityContext" .ctx | nindent 2 }}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: test
    image: {{ include "sandbox-platform.image" .ctx.Values.images.gateway | quote }}
    imagePullPolicy: {{ .ctx.Values.images.gateway.pullPolicy }}
    command: ["/usr/bin/node", "--input-type=module", "-e"]
    args:
      - {{ .script | quote }}
    env:
      - { name: NODE_EXTRA_CA_CERTS, value: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt }
      - { name: RELEASE_NAMESPACE, value: {{ .ctx.Release.Namespace | quote }} }
      - { name: GATEWAY_URL, value: {{ printf "http://%s.%s.svc:%v" (include "sandbox-platform.gatewayName" .ctx) .ctx.Release.Namespace .ctx.Values.gateway.service.port | quote }} }
      - { name: DEADLINE_SECONDS, value: {{ .ctx.Values.tests.timeoutSeconds | quote }} }
      {{- with .env }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    securityContext:
      {{- include "sandbox-platform.containerSecurityContext" .ctx | nindent 6 }}
    resources:
      requests: { cpu: 10m, memory: 32Mi }
      limits: { cpu: 500m, memory: 128Mi }
{{- end -}}
