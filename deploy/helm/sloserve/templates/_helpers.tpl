{{/* labels every object carries, as deploy/kustomize's labels: entry */}}
{{- define "sloserve.labels" -}}
app.kubernetes.io/part-of: sloserve
{{- end -}}
{{/* the gateway pod's labels and the Service / Deployment selector */}}
{{- define "sloserve.gatewaySelector" -}}
app.kubernetes.io/name: sloserve
app.kubernetes.io/component: gateway
{{- end -}}
{{- define "sloserve.image" -}}
{{ .Values.image.repository }}:{{ required "image.tag is required (pin it; never latest)" .Values.image.tag }}
{{- end -}}
