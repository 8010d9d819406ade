{{/* Dev-mode dependencies run hardened too: a fixed non-root uid, a read-only root filesystem, no capabilities. */}}
{{- define "notify.dev.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
fsGroup: {{ .uid }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "notify.dev.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* A ClusterIP Service in front of one dev dependency. Call with (dict "root" $ "component" "redis" "ports" (list (dict "name" "redis" "port" 6379))). */}}
{{- define "notify.dev.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "notify.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "notify.componentLabels" . | nindent 4 }}
spec:
  {{- if .headless }}
  clusterIP: None
  {{- end }}
  selector:
    {{- include "notify.selectorLabels" . | nindent 4 }}
  ports:
    {{- range .ports }}
    - name: {{ .name }}
      port: {{ .port }}
      targetPort: {{ .name }}
      protocol: TCP
    {{- end }}
{{- end }}
