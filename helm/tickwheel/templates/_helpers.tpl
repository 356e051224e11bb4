{{/*
Names, labels and the pieces every tickwheel pod shares.
*/}}

{{- define "tickwheel.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's resource name prefix, at most 63 characters. */}}
{{- define "tickwheel.fullname" -}}
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

{{- define "tickwheel.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one component. Call with (dict "root" $ "component" "timer"). */}}
{{- define "tickwheel.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tickwheel.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* All labels of one component. Call with (dict "root" $ "component" "timer"). */}}
{{- define "tickwheel.labels" -}}
helm.sh/chart: {{ include "tickwheel.chart" .root }}
{{ include "tickwheel.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: tickwheel
{{- end }}

{{- define "tickwheel.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The settings every tickwheel process reads, as `NAME: "value"` lines: the ConfigMap's data,
and the topology Job's env (a pre-install hook runs before the ConfigMap exists).
*/}}
{{- define "tickwheel.commonEnv" -}}
KAFKA_BOOTSTRAP_SERVERS: {{ required "kafka.bootstrapServers is required" .Values.kafka.bootstrapServers | quote }}
TICKWHEEL_REPLICATION_FACTOR: {{ .Values.topics.replicationFactor | quote }}
TICKWHEEL_LOG_LEVEL: {{ .Values.logLevel | quote }}
{{- if .Values.topics.prefix }}
TICKWHEEL_TOPIC_PREFIX: {{ .Values.topics.prefix | quote }}
{{- end }}
{{- if .Values.topics.existingConfigMap }}
TICKWHEEL_TOPOLOGY_FILE: "/etc/tickwheel/topology/topics.toml"
{{- end }}
{{- range $name, $value := .Values.env }}
{{ $name }}: {{ $value | quote }}
{{- end }}
{{- end }}

{{/* A map of name: value as a container's env list. Call with the map. */}}
{{- define "tickwheel.envList" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}

{{/*
The instance name: the pod's name, through the downward API. Timers and the history sink use
Kafka static membership keyed by it (group.instance.id), so it must be unique among running
pods and the same across container restarts of one pod; a pod's name is both.
*/}}
{{- define "tickwheel.instanceEnv" -}}
- name: TICKWHEEL_INSTANCE
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}

{{/* The Secret holding CLICKHOUSE_URL, or "" when history is embedded. */}}
{{- define "tickwheel.clickhouseSecretName" -}}
{{- if .Values.clickhouse.existingSecret }}
{{- .Values.clickhouse.existingSecret }}
{{- else if .Values.clickhouse.url }}
{{- printf "%s-clickhouse" (include "tickwheel.fullname" .) }}
{{- end }}
{{- end }}

{{/* Pod-level settings shared by every tickwheel pod. */}}
{{- define "tickwheel.podSpecCommon" -}}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}

{{/*
Volumes every tickwheel pod mounts: /tmp and TICKWHEEL_HOME are writable (the root filesystem
is read-only), and the topology override when one is given. Call with
(dict "root" $ "claim" NAME): the data volume is that PersistentVolumeClaim, or an emptyDir
when NAME is "".
*/}}
{{- define "tickwheel.volumes" -}}
- name: tmp
  emptyDir: {}
- name: data
  {{- if .claim }}
  persistentVolumeClaim:
    claimName: {{ .claim }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- if .root.Values.topics.existingConfigMap }}
- name: topology
  configMap:
    name: {{ .root.Values.topics.existingConfigMap }}
    items:
      - key: topics.toml
        path: topics.toml
{{- end }}
{{- end }}

{{- define "tickwheel.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /var/lib/tickwheel
{{- if .Values.topics.existingConfigMap }}
- name: topology
  mountPath: /etc/tickwheel/topology
  readOnly: true
{{- end }}
{{- end }}

{{/* Scheduling: the component's own nodeSelector/tolerations/affinity, else the chart's. */}}
{{- define "tickwheel.scheduling" -}}
{{- $component := .component }}
{{- with (default .root.Values.nodeSelector $component.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default .root.Values.tolerations $component.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default .root.Values.affinity $component.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
