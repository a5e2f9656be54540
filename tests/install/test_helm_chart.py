"""charts/caldera rendered by the real helm (built from its Go module, versions.HELM, by the e2e
half): it lints, renders exactly what the kustomization applies, and each value changes what it
says. Where helm is not built yet these skip and say so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from central.localcluster import versions
from central.localcluster.helm import cached_helm
from central.model.fields import YAML_LOADER
from tests.manifests import documents

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "caldera"


@pytest.fixture(scope="module")
def helm() -> Path:
    # the non-e2e half builds nothing from Go: it renders with helm where the e2e half (or
    # CI's build step) has built it already, and says so where it has not
    binary = cached_helm()
    if binary is None:
        pytest.skip(f"helm {versions.HELM} is not built yet (the e2e half builds it: pytest -m e2e "
                    "tests/install/test_helm_release.py)")
    return binary


def render(helm: Path, *values: str, namespace: str = "caldera-system", crds: bool = False) -> list[dict[str, Any]]:
    # the cluster the control-plane tests run (helm built by `go install` defaults to v1.20)
    args = [str(helm), "template", "caldera", str(CHART), "--kube-version", versions.KUBERNETES, "-n", namespace]
    if crds:
        args.append("--include-crds")
    for value in values:
        args += ["--set-json" if value.startswith("json:") else "--set", value.removeprefix("json:")]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.load_all(result.stdout, Loader=YAML_LOADER) if d]  # noqa: S506


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def test_helm_lint(helm):
    result = subprocess.run([str(helm), "lint", "--strict", str(CHART)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "symbolic link" not in result.stdout + result.stderr  # the chart carries copies, not links


def test_default_values_render_exactly_the_kustomization(helm):
    rendered = render(helm, crds=True)
    # helm makes the namespace (install -n NS --create-namespace); the chart never renders it
    expected = [d for d in documents() if d["kind"] != "Namespace"]
    # the one deliberate difference: a Job's pod is immutable, so helm names it per revision
    for obj in rendered:
        if key(obj) == ("Job", "caldera-system", "caldera-certs-1"):
            obj["metadata"]["name"] = "caldera-certs"
    got, want = by_key(rendered), by_key(expected)  # helm orders by kind for install, not by file
    assert sorted(got) == sorted(want) and len(rendered) == len(expected)
    for name, obj in want.items():
        assert got[name] == obj, name


def by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {key(o): o for o in objects}


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    template = obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob" else obj["spec"]["template"]
    return template["spec"]["containers"]


def test_image_and_placement_values(helm):
    objects = render(helm, "image.repository=registry.example/caldera", "image.tag=9.9.9",
                     "image.pullPolicy=Always", "json:scheduler.nodeSelector={\"role\":\"control\"}",
                     "json:agent.resources={\"limits\":{\"memory\":\"256Mi\"}}", "controllers.replicas=3")
    workloads = [o for o in objects if o["kind"] in ("Deployment", "DaemonSet", "Job", "CronJob")]
    assert {c["image"] for o in workloads for c in containers(o)} == {"registry.example/caldera:9.9.9"}
    assert {c["imagePullPolicy"] for o in workloads for c in containers(o)} == {"Always"}
    objects = by_key(objects)
    scheduler = objects[("Deployment", "caldera-system", "caldera-scheduler")]
    assert scheduler["spec"]["template"]["spec"]["nodeSelector"] == {"role": "control"}
    [agent] = containers(objects[("DaemonSet", "caldera-system", "caldera-nodeagent")])
    assert agent["resources"] == {"limits": {"memory": "256Mi"}}
    assert objects[("Deployment", "caldera-system", "caldera-controllers")]["spec"]["replicas"] == 3


def test_the_webhook_asks_for_the_api_servers_client_certificate_only_when_given_its_ca(helm):
    def webhook(*values: str) -> tuple[dict, dict]:
        deployment = by_key(render(helm, *values))[("Deployment", "caldera-system", "caldera-admission")]
        return containers(deployment)[0], deployment["spec"]["template"]["spec"]

    container, _ = webhook()
    assert not any(a.startswith("--client-ca-file") for a in container["args"])  # managed clusters: off
    container, pod = webhook("admission.clientCASecret=apiserver-webhook-client-ca")
    assert "--client-ca-file=/etc/caldera/client-ca/ca.crt" in container["args"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "client-ca"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "client-ca"]
    assert mount["mountPath"] == "/etc/caldera/client-ca" and volume["secret"]["secretName"] == "apiserver-webhook-client-ca"


def test_metrics_authorize_turns_the_agents_check_on_and_lets_it_ask_the_reviews(helm):
    import yaml

    for on in (False, True):
        objects = by_key(render(helm, *(["agent.metricsAuthorize=true"] if on else [])))
        config = objects[("ConfigMap", "caldera-system", "caldera-nodeagent-config")]["data"]["agent.yaml"]
        assert yaml.safe_load(config)["exporter"]["authorize"] is on
        binding = objects.get(("ClusterRoleBinding", "", "caldera-nodeagent-metrics-auth"))
        assert (binding is not None) is on
        if on:
            assert binding["roleRef"]["name"] == "system:auth-delegator"
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "caldera-nodeagent",
                                            "namespace": "caldera-system"}]


def test_numa_aware_is_one_flag_and_the_config_stays_valid(helm):
    from central.scheduler import load_config

    objects = by_key(render(helm, "scheduler.numaAware=true"))
    conf = objects[("ConfigMap", "caldera-system", "volcano-scheduler-configmap")]["data"]["volcano-scheduler.conf"]
    config = load_config(conf, "chart")
    assert "numa-aware" in [p.name for p in config.tiers[-1]]


def test_agent_thresholds_merge_into_its_config_which_loads(helm, tmp_path):
    from nodeagent.config import load_config

    objects = by_key(render(helm, "json:agent.config={\"qos\":{\"cpu_suppress\":{\"threshold_percent\":70}}}"))
    text = objects[("ConfigMap", "caldera-system", "caldera-nodeagent-config")]["data"]["agent.yaml"]
    (tmp_path / "agent.yaml").write_text(text)
    config = load_config(tmp_path / "agent.yaml")
    assert config.qos.cpu_suppress.threshold_percent == 70
    assert config.qos.memory_protect.min_bytes == 536870912  # the rest kept, integers intact


def test_cert_manager_instead_of_caldera_certs(helm):
    kinds = {(o["kind"], o["metadata"]["name"]) for o in render(helm, "certs.enabled=false")}
    assert not {name for kind, name in kinds if name.startswith("caldera-certs")}
    assert ("Deployment", "caldera-admission") in kinds


def test_monitoring_objects_come_from_daemonset_monitoring(helm):
    objects = render(helm, "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
                     "metrics.dashboard.enabled=true")
    kinds = {o["kind"] for o in objects}
    assert {"PodMonitor", "PrometheusRule"} <= kinds
    [dashboard] = [o for o in objects if o["metadata"]["name"] == "caldera-grafana-dashboard"]
    assert json.loads(dashboard["data"]["caldera.json"]) == json.loads(
        (ROOT / "daemonset" / "monitoring" / "dashboard.json").read_text())
    assert not {"PodMonitor", "PrometheusRule"} & {o["kind"] for o in render(helm)}


def _writable_cgroups(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    pod = by_key(objects)[("DaemonSet", "caldera-system", "caldera-nodeagent")]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert {m["name"] for m in pod["containers"][0]["volumeMounts"]} == set(volumes)
    return [(m["mountPath"], volumes[m["name"]]["hostPath"]["path"]) for m in pod["containers"][0]["volumeMounts"]
            if not m.get("readOnly") and "hostPath" in volumes[m["name"]]]


def test_the_agent_can_write_only_the_pods_cgroups_by_default(helm):
    assert _writable_cgroups(render(helm)) == [("/host/cgroup/kubepods.slice", "/sys/fs/cgroup/kubepods.slice")]


def test_the_agent_can_write_only_the_named_cgroup_subtrees(helm):
    v1 = ["cpu/kubepods.slice", "memory/kubepods.slice"]
    assert _writable_cgroups(render(helm, "json:agent.cgroupWritableSubtrees=" + json.dumps(v1))) == [
        (f"/host/cgroup/{sub}", f"/sys/fs/cgroup/{sub}") for sub in v1]
    # empty: the whole tree, for layouts that differ from node to node
    assert _writable_cgroups(render(helm, "json:agent.cgroupWritableSubtrees=[]")) == [
        ("/host/cgroup", "/sys/fs/cgroup")]


def test_the_agents_pods_list_role_is_left_out_where_the_authorizer_decides(helm):
    def grants(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {(o["kind"], o["metadata"]["name"]) for o in objects if "nodeagent" in o["metadata"]["name"]
                and o["kind"].startswith("ClusterRole")}
    fallback = {("ClusterRole", "caldera-nodeagent-list-pods"), ("ClusterRoleBinding", "caldera-nodeagent-list-pods")}
    by_rbac = grants(render(helm))
    assert fallback <= by_rbac
    assert grants(render(helm, "agent.podReads=authorizer")) == by_rbac - fallback


def test_scheduler_name_and_job_limits_are_one_value_each_for_every_component(helm):
    from tests.manifests import COMMANDS, parsed_args

    objects = render(helm, "schedulerName=batch-x", "jobLimits.maxReplicasPerJob=500")
    settings = by_key(objects)[("ConfigMap", "caldera-system", "caldera-settings")]["data"]
    assert settings == {"scheduler-name": "batch-x", "max-tasks-per-job": "100",
                        "max-replicas-per-task": "10000", "max-replicas-per-job": "500"}
    args = {name: parsed_args(name, objects) for name in COMMANDS}
    assert args["caldera-scheduler"].scheduler_name == args["caldera-admission"].scheduler_name == "batch-x"
    assert args["caldera-controllers"].scheduler_name == ["batch-x"]
    assert args["caldera-controllers"].max_replicas_per_job == args["caldera-admission"].max_replicas_per_job == 500


def test_everything_lands_in_the_release_namespace_and_no_namespace_is_rendered(helm):
    objects = render(helm, "certs.enabled=true", "json:metrics.serviceMonitor.enabled=true",
                     "json:metrics.prometheusRule.enabled=true", "json:metrics.dashboard.enabled=true", namespace="batch")
    assert "caldera-system" not in json.dumps(objects)  # flags, DNS names, subjects, CEL alike
    assert "Namespace" not in {o["kind"] for o in objects}
    namespaced = [o for o in objects if not o["kind"].startswith(("Cluster", "Validating", "Mutating", "FlowSchema"))]
    assert {o["metadata"].get("namespace") for o in namespaced} == {"batch"}
    webhooks = [w for o in objects if o["kind"].endswith("WebhookConfiguration") for w in o["webhooks"]]
    assert {w["clientConfig"]["service"]["namespace"] for w in webhooks} == {"batch"}
    bindings = [o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert {s["namespace"] for o in bindings for s in o["subjects"]} == {"batch"}
    flows = [o for o in objects if o["kind"] == "FlowSchema"]
    assert {s["serviceAccount"]["namespace"] for o in flows for r in o["spec"]["rules"] for s in r["subjects"]} == {"batch"}


def test_crds_come_only_from_crds_dir_which_helm_never_deletes(helm):
    # helm installs crds/ once, skips CRDs already there (Volcano's) and leaves them on uninstall
    assert "CustomResourceDefinition" not in {o["kind"] for o in render(helm)}
    crds = {o["metadata"]["name"] for o in render(helm, crds=True) if o["kind"] == "CustomResourceDefinition"}
    assert crds == set(by_kind_name("CustomResourceDefinition"))


def by_kind_name(kind: str) -> list[str]:
    return [d["metadata"]["name"] for d in documents() if d["kind"] == kind]


def test_pod_values_reach_every_pod_they_name(helm):
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "role", "operator": "In", "values": ["control"]}]}]}}}
    objects = by_key(render(helm, "json:imagePullSecrets=[{\"name\":\"regcred\"}]",
                            f"json:scheduler.affinity={json.dumps(affinity)}", "admission.priorityClassName=platform",
                            "json:controllers.podAnnotations={\"sidecar.istio.io/inject\":\"false\"}",
                            "json:scheduler.extraArgs=[\"--kube-api-qps=500\"]"))
    pods = {name: (o["spec"]["jobTemplate"]["spec"]["template"] if o["kind"] == "CronJob" else o["spec"]["template"])
            for (kind, _, name), o in objects.items() if kind in ("Deployment", "DaemonSet", "Job", "CronJob")}
    assert {name: pod["spec"].get("imagePullSecrets") for name, pod in pods.items()} == {
        name: [{"name": "regcred"}] for name in pods}
    assert pods["caldera-scheduler"]["spec"]["affinity"] == affinity
    # unset, the manifests' preferred anti-affinity stays
    anti = pods["caldera-controllers"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert pods["caldera-admission"]["spec"]["priorityClassName"] == "platform"
    assert pods["caldera-scheduler"]["spec"]["priorityClassName"] == "system-cluster-critical"
    annotations = pods["caldera-controllers"]["metadata"]["annotations"]
    assert annotations["sidecar.istio.io/inject"] == "false" and annotations["prometheus.io/scrape"] == "true"
    [scheduler] = pods["caldera-scheduler"]["spec"]["containers"]
    assert scheduler["args"][-1] == "--kube-api-qps=500" and "--leader-elect" in scheduler["args"]


def test_two_replica_components_have_a_disruption_budget(helm):
    objects = render(helm)
    budgets = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "PodDisruptionBudget"}
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == set(budgets)
    for deployment in deployments:
        budget = budgets[deployment["metadata"]["name"]]
        assert budget["maxUnavailable"] == 1
        assert budget["selector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_monitors_and_rules_carry_the_labels_value(helm):
    objects = render(helm, "metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true",
                     "metrics.labels.release=kube-prometheus-stack")
    monitoring = [o for o in objects if o["kind"] in ("PodMonitor", "PrometheusRule")]
    assert monitoring and all(o["metadata"]["labels"] == {"app.kubernetes.io/part-of": "caldera",
                                                          "release": "kube-prometheus-stack"} for o in monitoring)


def test_beside_volcano_caldera_touches_only_what_names_it(helm):
    objects = render(helm, "besideVolcano=true", "schedulerName=caldera", crds=True)
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    # Volcano's controllers reconcile every Job: Caldera's would make a second set of pods
    assert ("Deployment", "caldera-controllers") not in kinds and ("Deployment", "caldera-scheduler") in kinds
    hooks = {w["name"]: w for o in objects if o["kind"].endswith("WebhookConfiguration") for w in o["webhooks"]}
    assert set(hooks) == {"mutatejob.caldera.sh", "validatejob.caldera.sh", "validatepod.caldera.sh",
                          "validateagenteviction.caldera.sh"}
    for name in ("mutatejob.caldera.sh", "validatejob.caldera.sh"):
        assert [m["expression"] for m in hooks[name]["matchConditions"]] == [
            "has(object.spec.schedulerName) && object.spec.schedulerName == 'caldera'"]
    assert not [n for n in hooks if n.endswith(".volcano.sh")]  # never one of Volcano's webhook names
    settings = by_key(objects)[("ConfigMap", "caldera-system", "caldera-settings")]["data"]
    assert settings["scheduler-name"] == "caldera"


def test_resource_groups_fill_the_admission_config_and_widen_only_the_pods_webhook(helm):
    groups = [{"resourceGroup": "management", "object": {"key": "namespace", "value": ["mng-1", "mng-2"]},
               "labels": {"volcano.sh/nodetype": "management"}},
              {"resourceGroup": "cpu", "object": {"key": "annotation", "value": ["example.com/pool: cpu"]},
               "schedulerName": "volcano"}]
    objects = {key(o): o for o in render(helm, "json:admission.resourceGroups=" + json.dumps(groups))}
    conf = objects[("ConfigMap", "caldera-system", "volcano-admission-configmap")]["data"]["volcano-admission.conf"]
    from central.admission.resourcegroups import parse_resource_groups
    parsed = parse_resource_groups(conf)  # the webhook reads what Helm wrote
    assert [g.name for g in parsed] == ["management", "cpu"] and parsed[1].annotations == (("example.com/pool", "cpu"),)
    mutate = objects[("MutatingWebhookConfiguration", "", "caldera-mutate")]
    [pods] = [w for w in mutate["webhooks"] if w["name"] == "mutatepod.caldera.sh"]
    [condition] = pods["matchConditions"]
    assert condition["expression"].endswith(
        """ || request.namespace in ["mng-1","mng-2"] || """
        """object.metadata.?annotations.orValue({})[?"example.com/pool"].orValue('') == "cpu\"""")
    default = {key(o): o for o in render(helm)}[("MutatingWebhookConfiguration", "", "caldera-mutate")]
    assert [w for w in default["webhooks"] if w["name"] != "mutatepod.caldera.sh"] == [
        w for w in mutate["webhooks"] if w["name"] != "mutatepod.caldera.sh"]
