{{/*
The objects of one manifest file of daemonset/ ("files/<name>"), each a dict.
*/}}
{{- define "caldera.objects" -}}
{{- $objects := list -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (.root.Files.Get (printf "files/%s" .file)) -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if and $obj (hasKey $obj "kind") -}}
{{- $objects = append $objects $obj -}}
{{- end -}}
{{- end -}}
{{- toJson $objects -}}
{{- end -}}

{{/*
The pod spec of a workload (a CronJob's lives in its jobTemplate), or nothing.
*/}}
{{- define "caldera.podTemplate" -}}
{{- if eq .kind "CronJob" -}}{{ toJson .spec.jobTemplate.spec.template }}
{{- else if has .kind (list "Deployment" "DaemonSet" "Job") -}}{{ toJson .spec.template }}
{{- end -}}
{{- end -}}

{{/*
Apply the values to one object in place: image, pull secrets, replicas, resources, node
selection, affinity, priority, pod annotations, extra arguments, the shared settings, the scheduler's configuration, the agent's configuration. Objects no value names stay as
daemonset/ has them.
*/}}
{{- define "caldera.customize" -}}
{{- $obj := .obj -}}
{{- $v := .root.Values -}}
{{- $component := get (dict "caldera-scheduler" "scheduler" "caldera-controllers" "controllers"
      "caldera-admission" "admission" "caldera-nodeagent" "agent"
      "caldera-certs" "certs" "caldera-certs-renew" "certs") $obj.metadata.name -}}
{{- $values := get $v (default "none" $component) -}}
{{- $template := include "caldera.podTemplate" $obj -}}
{{- if and $template $values -}}
{{- $pod := $obj.spec.template -}}
{{- if eq $obj.kind "CronJob" -}}{{- $pod = $obj.spec.jobTemplate.spec.template -}}{{- end -}}
{{- range $c := $pod.spec.containers -}}
{{- $_ := set $c "image" (printf "%s:%s" $v.image.repository (default $.root.Chart.AppVersion $v.image.tag)) -}}
{{- if $v.image.pullPolicy -}}{{- $_ := set $c "imagePullPolicy" $v.image.pullPolicy -}}{{- end -}}
{{- if $values.resources -}}{{- $_ := set $c "resources" $values.resources -}}{{- end -}}
{{- end -}}
{{- if $values.extraArgs -}}
{{- $c := first $pod.spec.containers -}}
{{- $_ := set $c "args" (concat (default (list) $c.args) $values.extraArgs) -}}
{{- end -}}
{{- if and (eq $component "admission") $values.clientCASecret -}}
{{- /* TLS client authentication: the CA of the API server's webhook client certificate */ -}}
{{- $c := first $pod.spec.containers -}}
{{- $_ := set $c "args" (append (default (list) $c.args) "--client-ca-file=/etc/caldera/client-ca/ca.crt") -}}
{{- $_ := set $c "volumeMounts" (append (default (list) $c.volumeMounts) (dict "name" "client-ca" "mountPath" "/etc/caldera/client-ca" "readOnly" true)) -}}
{{- $_ := set $pod.spec "volumes" (append (default (list) $pod.spec.volumes) (dict "name" "client-ca" "secret" (dict "secretName" $values.clientCASecret "items" (list (dict "key" "ca.crt" "path" "ca.crt"))))) -}}
{{- end -}}
{{- if $v.imagePullSecrets -}}{{- $_ := set $pod.spec "imagePullSecrets" $v.imagePullSecrets -}}{{- end -}}
{{- if $values.nodeSelector -}}{{- $_ := set $pod.spec "nodeSelector" $values.nodeSelector -}}{{- end -}}
{{- if $values.tolerations -}}{{- $_ := set $pod.spec "tolerations" $values.tolerations -}}{{- end -}}
{{- if $values.affinity -}}{{- $_ := set $pod.spec "affinity" $values.affinity -}}{{- end -}}
{{- if $values.priorityClassName -}}{{- $_ := set $pod.spec "priorityClassName" $values.priorityClassName -}}{{- end -}}
{{- if $values.podAnnotations -}}
{{- $meta := default (dict) $pod.metadata -}}
{{- $_ := set $meta "annotations" (merge (dict) $values.podAnnotations (default (dict) $meta.annotations)) -}}
{{- $_ := set $pod "metadata" $meta -}}
{{- end -}}
{{- if and (eq $obj.kind "Deployment") (hasKey $values "replicas") -}}
{{- $_ := set $obj.spec "replicas" $values.replicas -}}
{{- end -}}
{{- end -}}
{{- if and (eq $obj.kind "Job") (eq $obj.metadata.name "caldera-certs") -}}
{{- /* a Job's pod is immutable: one Job per release revision, the previous one removed by helm */ -}}
{{- $_ := set $obj.metadata "name" (printf "caldera-certs-%d" .root.Release.Revision) -}}
{{- end -}}
{{- if and (eq $obj.kind "ConfigMap") (eq $obj.metadata.name "caldera-settings") -}}
{{- $l := $v.jobLimits -}}
{{- $_ := set $obj "data" (dict "scheduler-name" $v.schedulerName "max-tasks-per-job" (toString $l.maxTasksPerJob)
      "max-replicas-per-task" (toString $l.maxReplicasPerTask) "max-replicas-per-job" (toString $l.maxReplicasPerJob)) -}}
{{- end -}}
{{- if and (eq $obj.kind "ConfigMap") (eq $obj.metadata.name "volcano-scheduler-configmap") -}}
{{- $conf := $v.scheduler.config -}}
{{- if $v.scheduler.numaAware -}}
{{- $parsed := fromYaml (default (get $obj.data "volcano-scheduler.conf") $conf) -}}
{{- $last := last $parsed.tiers -}}
{{- $_ := set $last "plugins" (append $last.plugins (dict "name" "numa-aware")) -}}
{{- $conf = toYaml $parsed -}}
{{- end -}}
{{- if $conf -}}{{- $_ := set $obj.data "volcano-scheduler.conf" $conf -}}{{- end -}}
{{- end -}}
{{- if and (eq $obj.kind "DaemonSet") (eq $obj.metadata.name "caldera-nodeagent") (ne (toJson $v.agent.cgroupWritableSubtrees) (toJson (list "kubepods.slice"))) -}}
{{- /* the manifest writes kubepods.slice only: other subtrees instead, or (empty) the whole tree */ -}}
{{- $pod := $obj.spec.template.spec -}}
{{- $agent := first $pod.containers -}}
{{- $mounts := list -}}
{{- range $m := $agent.volumeMounts -}}
{{- if eq $m.name "host-cgroup" -}}{{- $_ := set $m "readOnly" (not (empty $v.agent.cgroupWritableSubtrees)) -}}{{- end -}}
{{- if ne $m.name "host-cgroup-kubepods" -}}{{- $mounts = append $mounts $m -}}{{- end -}}
{{- end -}}
{{- $volumes := list -}}
{{- range $vol := $pod.volumes -}}
{{- if ne $vol.name "host-cgroup-kubepods" -}}{{- $volumes = append $volumes $vol -}}{{- end -}}
{{- end -}}
{{- range $i, $sub := $v.agent.cgroupWritableSubtrees -}}
{{- $name := printf "host-cgroup-rw-%d" $i -}}
{{- $mounts = append $mounts (dict "name" $name "mountPath" (printf "/host/cgroup/%s" $sub) "mountPropagation" "HostToContainer") -}}
{{- $volumes = append $volumes (dict "name" $name "hostPath" (dict "path" (printf "/sys/fs/cgroup/%s" $sub) "type" "Directory")) -}}
{{- end -}}
{{- $_ := set $agent "volumeMounts" $mounts -}}
{{- $_ := set $pod "volumes" $volumes -}}
{{- end -}}
{{- if and (eq $obj.kind "ConfigMap") (eq $obj.metadata.name "caldera-nodeagent-config") $v.agent.metricsAuthorize -}}
{{- $agent := fromYaml (get $obj.data "agent.yaml") -}}
{{- $_ := set $agent.exporter "authorize" true -}}
{{- $_ := set $obj.data "agent.yaml" (toYaml $agent) -}}
{{- end -}}
{{- if and (eq $obj.kind "ConfigMap") (eq $obj.metadata.name "caldera-nodeagent-config") $v.agent.config -}}
{{- $agent := mergeOverwrite (fromYaml (get $obj.data "agent.yaml")) $v.agent.config -}}
{{- $_ := set $obj.data "agent.yaml" (toYaml $agent) -}}
{{- end -}}
{{- if $v.admission.resourceGroups -}}
{{- include "caldera.resourceGroups" (dict "obj" $obj "groups" $v.admission.resourceGroups) -}}
{{- end -}}
{{- end -}}

{{/*
admission.resourceGroups: Volcano's admission configuration, and the pods webhook's
matchCondition widened to the pods they name (by namespace, or by annotation key and value);
the annotation volcano.sh/resource-group is always sent.
*/}}
{{- define "caldera.resourceGroups" -}}
{{- $obj := .obj -}}
{{- if and (eq $obj.kind "ConfigMap") (eq $obj.metadata.name "volcano-admission-configmap") -}}
{{- $_ := set $obj.data "volcano-admission.conf" (toYaml (dict "resourceGroups" .groups)) -}}
{{- end -}}
{{- if eq $obj.kind "MutatingWebhookConfiguration" -}}
{{- $extra := list -}}
{{- range $g := .groups -}}
{{- $object := default (dict) $g.object -}}
{{- if eq (default "" $object.key) "namespace" -}}
{{- $extra = append $extra (printf "request.namespace in %s" (toJson $object.value)) -}}
{{- else -}}
{{- range $pair := default (list) $object.value -}}
{{- $kv := splitn ":" 2 $pair -}}
{{- $extra = append $extra (printf "object.metadata.?annotations.orValue({})[?%s].orValue('') == %s"
      (toJson (trim $kv._0)) (toJson (trim (default "" $kv._1)))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $extra -}}
{{- range $w := $obj.webhooks -}}
{{- if eq $w.name "mutatepod.caldera.sh" -}}
{{- range $c := $w.matchConditions -}}
{{- if eq $c.name "opted-in" -}}
{{- $_ := set $c "expression" (printf "%s || %s" $c.expression (join " || " $extra)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
One object as YAML, moved into the release's namespace: daemonset/ names caldera-system in
metadata, ServiceAccount subjects, Service DNS names, flags and CEL expressions alike.
*/}}
{{- define "caldera.inRelease" -}}
{{- toJson .obj | replace "caldera-system" .root.Release.Namespace | fromJson | toYaml -}}
{{- end -}}

{{/*
Whether to leave this object out. Beside Volcano (values besideVolcano): Volcano's controllers
keep reconciling every Job (Caldera's Job controller would too), so Caldera's controllers do
not run. With agent.podReads authorizer: the agent's pods-list ClusterRole and its binding.
*/}}
{{- define "caldera.leftOutBesideVolcano" -}}
{{- if and .root.Values.besideVolcano (has .obj.kind (list "Deployment" "PodDisruptionBudget")) (eq .obj.metadata.name "caldera-controllers") -}}true{{- end -}}
{{- if and (eq .root.Values.agent.podReads "authorizer") (eq .obj.metadata.name "caldera-nodeagent-list-pods") -}}true{{- end -}}
{{- end -}}

{{/*
Beside Volcano: Caldera's webhooks see only the Jobs of its own scheduler name, and leave
Queues, PodGroups and HyperNodes to Volcano's webhooks; the pods and evictions webhooks stay.
*/}}
{{- define "caldera.webhooksBesideVolcano" -}}
{{- $obj := .obj -}}
{{- if and .root.Values.besideVolcano (hasSuffix "WebhookConfiguration" $obj.kind) -}}
{{- $ours := printf "has(object.spec.schedulerName) && object.spec.schedulerName == '%s'" .root.Values.schedulerName -}}
{{- $kept := list -}}
{{- range $hook := $obj.webhooks -}}
{{- if or (hasPrefix "mutatejob." $hook.name) (hasPrefix "validatejob." $hook.name) -}}
{{- $_ := set $hook "matchConditions" (list (dict "name" "caldera-jobs-only" "expression" $ours)) -}}
{{- $kept = append $kept $hook -}}
{{- else if or (hasPrefix "validatepod." $hook.name) (hasPrefix "validateagenteviction." $hook.name) -}}
{{- $kept = append $kept $hook -}}
{{- end -}}
{{- end -}}
{{- $_ := set $obj "webhooks" $kept -}}
{{- end -}}
{{- end -}}
