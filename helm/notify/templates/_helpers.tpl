{{/* Names, labels, images, security contexts and secret wiring shared by every template. */}}

{{- define "notify.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "notify.fullname" -}}
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

{{/* Name of one component's objects: <fullname>-<component>. Call with (dict "root" $ "component" "gateway"). */}}
{{- define "notify.componentName" -}}
{{- printf "%s-%s" (include "notify.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "notify.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "notify.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: notify
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select one component's pods. Call with (dict "root" $ "component" "gateway"). */}}
{{- define "notify.selectorLabels" -}}
app.kubernetes.io/name: {{ include "notify.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "notify.componentLabels" -}}
{{ include "notify.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Pods allowed to call auth-svc and dispatch-svc besides the gateway: notifyctl, the helm test. */}}
{{- define "notify.grpcClientLabel" -}}
notify.io/grpc-client: "true"
{{- end }}

{{- define "notify.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "notify.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* <registry>/<repository>:<tag>[@digest]. Call with (dict "root" $ "image" .Values.gateway.image). */}}
{{- define "notify.image" -}}
{{- $registry := .root.Values.image.registry }}
{{- $repository := ternary .image.repository (printf "%s/%s" $registry .image.repository) (empty $registry) }}
{{- $tag := .image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion }}
{{- if .image.digest }}
{{- printf "%s:%s@%s" $repository $tag .image.digest }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{- define "notify.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "notify.containerSecurityContext" -}}
{{ toYaml .Values.containerSecurityContext }}
{{- end }}

{{/* The only writable place in a Notify container (the root filesystem is read-only). */}}
{{- define "notify.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end }}

{{- define "notify.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* ---- Secrets ---------------------------------------------------------------------------------------------- */}}

{{- define "notify.secretName" -}}
{{- default (printf "%s-secrets" (include "notify.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}

{{/* Environment variable of each secret setting, and whether the services can read it from a file (<VAR>_FILE). */}}
{{- define "notify.secretSettings" -}}
databaseUrl: { env: DATABASE_URL, file: database-url, fromFile: true }
redisUrl: { env: REDIS_URL, file: redis-url, fromFile: true }
natsUrl: { env: NATS_URL, file: nats-url, fromFile: true }
smtpUrl: { env: SMTP_URL, file: smtp-url, fromFile: true }
gatewayToken: { env: GATEWAY_TOKEN, file: gateway-token, fromFile: true }
mailerToken: { env: MAILER_TOKEN, file: mailer-token, fromFile: true }
bounceToken: { env: BOUNCE_TOKEN, file: bounce-token, fromFile: true }
adminToken: { env: ADMIN_TOKEN, file: admin-token, fromFile: true }
dataKey: { env: NOTIFY_DATA_KEY, file: data-key, fromFile: true }
{{- end }}

{{- define "notify.secretMountPath" -}}/var/run/secrets/notify{{- end }}

{{/*
Environment of the secret settings a container needs: `<VAR>_FILE` pointing into the mounted Secret when
secrets.mountAsFiles and the services read that setting from a file, else `<VAR>` from the Secret.
Call with (dict "root" $ "settings" (list "databaseUrl" "natsUrl")), and "secretName" for another Secret than the
release's (the migration Job's hook Secret).
*/}}
{{- define "notify.secretEnv" -}}
{{- $root := .root }}
{{- $all := include "notify.secretSettings" $root | fromYaml }}
{{- range .settings }}
{{- $setting := get $all . }}
{{- if and $root.Values.secrets.mountAsFiles $setting.fromFile }}
- name: {{ $setting.env }}_FILE
  value: {{ printf "%s/%s" (include "notify.secretMountPath" $root) $setting.file }}
{{- else }}
- name: {{ $setting.env }}
  valueFrom:
    secretKeyRef:
      name: {{ $.secretName | default (include "notify.secretName" $root) }}
      key: {{ get $root.Values.secrets.keys . }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret volume holding the file-readable settings of a container (nothing when mountAsFiles is off). */}}
{{- define "notify.secretVolume" -}}
{{- $root := .root }}
{{- $all := include "notify.secretSettings" $root | fromYaml }}
{{- $items := list }}
{{- range .settings }}
{{- $setting := get $all . }}
{{- if and $root.Values.secrets.mountAsFiles $setting.fromFile }}
{{- $items = append $items (dict "key" (get $root.Values.secrets.keys .) "path" $setting.file) }}
{{- end }}
{{- end }}
{{- if $items }}
- name: secrets
  secret:
    secretName: {{ .secretName | default (include "notify.secretName" $root) }}
    defaultMode: 0440
    items:
      {{- toYaml $items | nindent 6 }}
{{- end }}
{{- end }}

{{- define "notify.secretVolumeMount" -}}
{{- $root := .root }}
{{- $all := include "notify.secretSettings" $root | fromYaml }}
{{- $mounted := false }}
{{- range .settings }}
{{- if and $root.Values.secrets.mountAsFiles (get $all .).fromFile }}{{ $mounted = true }}{{ end }}
{{- end }}
{{- if $mounted }}
- name: secrets
  mountPath: {{ include "notify.secretMountPath" $root }}
  readOnly: true
{{- end }}
{{- end }}

{{/* ---- Common pod pieces ------------------------------------------------------------------------------------ */}}

{{/* Variables every service reads, besides the ConfigMap: its OpenTelemetry identity. */}}
{{- define "notify.identityEnv" -}}
- name: OTEL_SERVICE_NAME
  value: {{ .component }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "service.namespace=%s,k8s.namespace.name=%s,k8s.pod.name=$(POD_NAME)" .root.Release.Name .root.Release.Namespace }}
{{- end }}

{{/* Checksums that roll the pods when their configuration or chart-managed secrets change. */}}
{{- define "notify.configChecksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.secrets.existingSecret }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end }}

{{/* Scheduling and placement of one component. Call with (dict "root" $ "component" "gateway" "values" .Values.gateway). */}}
{{- define "notify.scheduling" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
topologySpreadConstraints:
{{- if .values.topologySpreadConstraints }}
  {{- toYaml .values.topologySpreadConstraints | nindent 2 }}
{{- else }}
  {{- range list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
  - maxSkew: 1
    topologyKey: {{ . }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "notify.selectorLabels" (dict "root" $.root "component" $.component) | nindent 8 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* A PodDisruptionBudget. Call with (dict "root" $ "component" "gateway" "values" .Values.gateway). */}}
{{- define "notify.pdb" -}}
{{- if .values.pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "notify.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "notify.componentLabels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "notify.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}

{{/* A CPU HorizontalPodAutoscaler. Call with (dict "root" $ "component" "gateway" "values" .Values.gateway). */}}
{{- define "notify.hpa" -}}
{{- if .values.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "notify.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "notify.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "notify.componentName" . }}
  minReplicas: {{ .values.autoscaling.minReplicas }}
  maxReplicas: {{ .values.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .values.autoscaling.targetCPUUtilizationPercentage }}
  {{- with .values.autoscaling.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* ---- Addresses --------------------------------------------------------------------------------------------- */}}

{{/* In-cluster DNS name of a component's Service. Call with (dict "root" $ "component" "auth-svc"). */}}
{{- define "notify.componentHost" -}}
{{- printf "%s.%s.svc.%s" (include "notify.componentName" .) .root.Release.Namespace .root.Values.clusterDomain }}
{{- end }}

{{/* Fails rendering when values contradict each other; included by the ConfigMap, which every install renders. */}}
{{- define "notify.validate" -}}
{{- if and (ne .Values.natsAuth.mode "none") (not .Values.natsAuth.secretName) }}
{{- fail "natsAuth.mode needs natsAuth.secretName: a Secret with one key per component (gateway, auth-svc, dispatch-svc, mailer-svc, webhook-svc) holding its NATS password or NKey seed." }}
{{- end }}
{{- if and .Values.mailer.keda.enabled .Values.mailer.autoscaling.enabled }}
{{- fail "mailer.keda.enabled and mailer.autoscaling.enabled are mutually exclusive: KEDA creates its own HorizontalPodAutoscaler for the mailer Deployment, and two autoscalers on one Deployment fight each other. Enable one of them." }}
{{- end }}
{{- if and .Values.dev.enabled .Values.secrets.existingSecret }}
{{- fail "dev.enabled writes its own Secret (the in-cluster PostgreSQL, Redis, NATS and mail sink addresses): leave secrets.existingSecret empty in dev mode." }}
{{- end }}
{{- if and .Values.mailer.keda.enabled (not .Values.mailer.keda.natsServerMonitoringEndpoint) (not .Values.dev.enabled) }}
{{- fail "mailer.keda.natsServerMonitoringEndpoint is required with mailer.keda.enabled: the host:port of the NATS HTTP monitoring endpoint (port 8222) KEDA reads the consumer lag from." }}
{{- end }}
{{- if ge (int .Values.config.webhook.projectConcurrency) (int .Values.config.webhook.concurrency) }}
{{- fail "config.webhook.projectConcurrency must be below config.webhook.concurrency: one project's endpoints may never hold every request of a webhook sender." }}
{{- end }}
{{- if and .Values.httpRoute.enabled (not .Values.httpRoute.parentRefs) }}
{{- fail "httpRoute.parentRefs is required with httpRoute.enabled: the Gateway(s) the route attaches to." }}
{{- end }}
{{- if not (or .Values.secrets.existingSecret .Values.dev.enabled) }}
{{- $missing := list }}
{{- range $key := list "databaseUrl" "redisUrl" "natsUrl" "smtpUrl" }}
{{- if not (get $.Values.secrets $key) }}{{ $missing = append $missing (printf "secrets.%s" $key) }}{{ end }}
{{- end }}
{{- if $missing }}
{{- fail (printf "Notify needs its PostgreSQL, Redis, NATS (JetStream) and SMTP relay: set %s, or secrets.existingSecret naming a Secret with those keys, or dev.enabled=true to run single-replica copies inside the release (trying Notify out only)." (join ", " $missing)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
NOTIFY_PUBLIC_URL, the base of the mailers' unsubscribe links: config.publicUrl, else the first host of the chart's
Ingress (https when its TLS section names that host), else the first HTTPRoute hostname (https), else empty (the
mailers' default, a loopback address: fine with a port-forward, no use to recipients).
*/}}
{{- define "notify.publicUrl" -}}
{{- $ingressHost := "" -}}
{{- if .Values.ingress.enabled }}{{ with .Values.ingress.hosts }}{{ $ingressHost = (first .).host | default "" }}{{ end }}{{ end -}}
{{- if contains "*" $ingressHost }}{{ $ingressHost = "" }}{{ end -}}
{{- if .Values.config.publicUrl -}}
{{- .Values.config.publicUrl | trimSuffix "/" -}}
{{- else if $ingressHost -}}
{{- $tls := false -}}
{{- range .Values.ingress.tls }}{{ if has $ingressHost (.hosts | default list) }}{{ $tls = true }}{{ end }}{{ end -}}
{{- printf "%s://%s" (ternary "https" "http" $tls) $ingressHost -}}
{{- else if and .Values.httpRoute.enabled .Values.httpRoute.hostnames (not (contains "*" (first .Values.httpRoute.hostnames))) -}}
{{- printf "https://%s" (first .Values.httpRoute.hostnames) -}}
{{- end -}}
{{- end }}

{{/*
"true" when the chart's own edge speaks HTTPS to browsers: an Ingress with a TLS section, or an HTTPRoute (attached to a
Gateway listener, which terminates TLS). The gateway then marks its panel cookies Secure (PANEL_COOKIE_SECURE) even
where the proxy's X-Forwarded-Proto does not reach it; Strict-Transport-Security follows that header (TRUSTED_PROXY_HOPS).
*/}}
{{- define "notify.edgeTerminatesTls" -}}
{{- or (and .Values.ingress.enabled (not (empty .Values.ingress.tls))) .Values.httpRoute.enabled -}}
{{- end }}

{{/* TRUSTED_PROXY_HOPS: the value, or 1 when the chart's own Ingress or HTTPRoute puts one proxy in front, else 0. */}}
{{- define "notify.trustedProxyHops" -}}
{{- $hops := .Values.config.gateway.trustedProxyHops -}}
{{- if kindIs "invalid" $hops -}}
{{- if or .Values.ingress.enabled .Values.httpRoute.enabled }}1{{ else }}0{{ end -}}
{{- else -}}
{{- $hops | int -}}
{{- end -}}
{{- end }}

{{/* ---- TLS between the services (grpcTls) ------------------------------------------------------------------- */}}

{{- define "notify.grpcTlsSecretName" -}}
{{- .Values.grpcTls.secretName | default (printf "%s-grpc-tls" (include "notify.fullname" .)) }}
{{- end }}

{{- define "notify.grpcTlsMountPath" -}}/var/run/secrets/notify-grpc-tls{{- end }}

{{/*
Environment of a gRPC server (role "server": its certificate and key) or client (role "client": the CA that issued
the servers' certificates). Nothing without grpcTls.enabled. Call with (dict "root" $ "role" "server").
*/}}
{{- define "notify.grpcTlsEnv" -}}
{{- if .root.Values.grpcTls.enabled }}
{{- $path := include "notify.grpcTlsMountPath" .root }}
{{- if eq .role "server" }}
- name: GRPC_TLS_CERT_FILE
  value: {{ $path }}/tls.crt
- name: GRPC_TLS_KEY_FILE
  value: {{ $path }}/tls.key
{{- else }}
- name: GRPC_TLS_CA_FILE
  value: {{ $path }}/ca.crt
{{- end }}
{{- end }}
{{- end }}

{{- define "notify.grpcTlsVolumeMount" -}}
{{- if .Values.grpcTls.enabled }}
- name: grpc-tls
  mountPath: {{ include "notify.grpcTlsMountPath" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* The servers mount their key pair, the clients only the CA certificate: a client never holds a server's key. */}}
{{- define "notify.grpcTlsVolume" -}}
{{- if .root.Values.grpcTls.enabled }}
- name: grpc-tls
  secret:
    secretName: {{ include "notify.grpcTlsSecretName" .root }}
    items:
      {{- if eq .role "server" }}
      - { key: tls.crt, path: tls.crt }
      - { key: tls.key, path: tls.key }
      {{- else }}
      - { key: ca.crt, path: ca.crt }
      {{- end }}
{{- end }}
{{- end }}

{{/*
A probe of a gRPC server: grpc.health.v1 in plaintext; with grpcTls the kubelet cannot speak TLS to a gRPC probe,
so the ops listener answers instead (/healthz alive, /readyz dependencies reachable).
Call with (dict "root" $ "port" <grpc port> "path" "/healthz").
*/}}
{{- define "notify.grpcServerProbe" -}}
{{- if .root.Values.grpcTls.enabled }}
httpGet: { path: {{ .path }}, port: metrics }
{{- else }}
grpc: { port: {{ .port }} }
{{- end }}
{{- end }}

{{/* ---- NATS credentials (natsAuth) ----------------------------------------------------------------------------- */}}

{{- define "notify.natsAuthMountPath" -}}/var/run/secrets/notify-nats{{- end }}

{{/*
The NATS identity of a component: with natsAuth.mode userPassword the user is the component's name and the Secret's
key of that name holds its password; with nkey that key holds its NKey seed. Only the component's own key is mounted.
Call with (dict "root" $ "component" "dispatch-svc").
*/}}
{{- define "notify.natsAuthEnv" -}}
{{- $path := include "notify.natsAuthMountPath" .root }}
{{- if eq .root.Values.natsAuth.mode "userPassword" }}
- name: NATS_USER
  value: {{ .component }}
- name: NATS_PASSWORD_FILE
  value: {{ $path }}/password
{{- else if eq .root.Values.natsAuth.mode "nkey" }}
- name: NATS_NKEY_SEED_FILE
  value: {{ $path }}/nkey-seed
{{- end }}
{{- end }}

{{- define "notify.natsAuthVolumeMount" -}}
{{- if ne .Values.natsAuth.mode "none" }}
- name: nats-auth
  mountPath: {{ include "notify.natsAuthMountPath" . }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "notify.natsAuthVolume" -}}
{{- if ne .root.Values.natsAuth.mode "none" }}
- name: nats-auth
  secret:
    secretName: {{ .root.Values.natsAuth.secretName }}
    items:
      - { key: {{ .component }}, path: {{ ternary "password" "nkey-seed" (eq .root.Values.natsAuth.mode "userPassword") }} }
{{- end }}
{{- end }}

{{/*
The init container of every service that uses the database: it reads the recorded migrations and ends once the
schema is the one this release's code expects (migrate-cli.ts --wait), so that a service never starts on an older
schema, whatever starts first (dev mode's Job, or a Deployment applied without the hooks). Call with
(dict "root" $ "image" .Values.authSvc.image "settings" $settings).
*/}}
{{- define "notify.waitForSchema" -}}
{{- $database := dict "root" .root "settings" (list "databaseUrl") }}
- name: wait-for-schema
  image: {{ include "notify.image" (dict "root" .root "image" .image) }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  command: ["node", "platform/src/database/migrate-cli.ts", "--wait"]
  securityContext:
    {{- include "notify.containerSecurityContext" .root | nindent 4 }}
  env:
    - name: LOG_LEVEL
      value: {{ .root.Values.config.logLevel | quote }}
    {{- include "notify.secretEnv" $database | trim | nindent 4 }}
  resources:
    requests: { cpu: 10m, memory: 64Mi }
    limits: { memory: 128Mi }
  volumeMounts:
    {{- include "notify.tmpVolumeMount" .root | nindent 4 }}
    {{- include "notify.secretVolumeMount" $database | trim | nindent 4 }}
{{- end }}
