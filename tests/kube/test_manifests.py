"""The install manifests parse, hang together, and grant exactly what the code uses.

The scheduler's and the controllers' RBAC is checked against real traffic: each runs on a real
kube-apiserver with its own ServiceAccount's token and daemonset/'s RBAC applied (binds, an
eviction, status writes, Events, the Lease, queue creation, ...), and the apiserver must have
refused none of it.
"""

from __future__ import annotations

import threading

import pytest
import yaml

from central.kube.leader import LeaderElector
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod
from tests.manifests import COMMANDS, ROOT, by_kind, documents, parsed_args
from tests.waiting import eventually

PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
QUEUE = ("scheduling.volcano.sh/v1beta1", "Queue")


def test_kustomization_lists_every_manifest():
    listed = set(yaml.safe_load((ROOT / "kustomization.yaml").read_text())["resources"])
    present = {p.name for p in ROOT.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed <= present, f"kustomization.yaml lists missing files: {sorted(listed - present)}"
    # the agent's DaemonSet (daemonset/nodeagent*.yaml, from the node agent's branch) belongs
    # in the same one-command install: once it is here it must be listed too
    assert present <= listed, f"add {sorted(present - listed)} to daemonset/kustomization.yaml resources"


def test_one_namespace_for_every_component():
    namespaces = {d["metadata"]["namespace"] for d in documents() if "namespace" in d["metadata"]}
    assert namespaces == {"caldera-system"}
    assert by_kind("Namespace").keys() == {"caldera-system"}


def test_names_are_unique_per_kind():
    seen = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in documents()]
    assert len(seen) == len(set(seen))


def test_every_component_runs_the_image_the_kustomization_sets():
    [image] = yaml.safe_load((ROOT / "kustomization.yaml").read_text())["images"]
    for doc in documents():
        if doc["kind"] in ("Deployment", "DaemonSet"):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                assert container["image"].rpartition(":")[0] == image["name"], doc["metadata"]["name"]


def test_bindings_point_at_existing_roles_and_accounts():
    accounts = {(d["metadata"]["namespace"], d["metadata"]["name"])
                for d in documents() if d["kind"] == "ServiceAccount"}
    roles = {(d["kind"], d["metadata"]["name"]) for d in documents() if d["kind"] in ("Role", "ClusterRole")}
    for binding in documents():
        if binding["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in roles
            for subject in binding["subjects"]:
                assert (subject["namespace"], subject["name"]) in accounts
    for deployment in by_kind("Deployment").values():
        spec = deployment["spec"]["template"]["spec"]
        assert (deployment["metadata"]["namespace"], spec["serviceAccountName"]) in accounts


def test_no_wildcards_and_no_secrets_for_the_scheduler():
    for role in documents():
        if role["kind"] in ("Role", "ClusterRole"):
            for rule in role["rules"]:
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule[field], f"{role['metadata']['name']}: wildcard {field}"
    scheduler = by_kind("ClusterRole")["caldera-scheduler"]
    resources = {r for rule in scheduler["rules"] for r in rule["resources"]}
    assert "secrets" not in resources and "configmaps" not in resources
    assert not {v for rule in scheduler["rules"] for v in rule["verbs"]} & {"delete", "deletecollection"}


def test_scheduler_rbac_covers_what_the_scheduler_does(real, tmp_path):
    kube = real.as_account("caldera-scheduler", tmp_path)
    real.put(node("n1", pods=10))
    for i in range(2):
        real.put(pod(f"p{i}"))
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "big"}, "spec": {"minMember": 50, "queue": "default"}})
    real.put(dict(pod("big-0", group="big")))
    ns = real.namespace
    conf = by_kind("ConfigMap")["volcano-scheduler-configmap"]["data"]["volcano-scheduler.conf"]
    elector = LeaderElector(kube, "caldera-system", "vc-scheduler", "a", lease_duration=2, renew_deadline=1.5,
                            retry_period=0.1)
    scheduler = Scheduler(kube, ClusterCache(), run_cycle, ConfigFile(None, load_config, load_config(conf, "cm")),
                          period=0.05, elector=elector)
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(lambda: real.pod("p1")["spec"].get("nodeName"), what="binds")
        eventually(lambda: (real.get(*PODGROUP, "big").get("status") or {}).get("conditions"),
                   what="a status write")
        scheduler.sink.evict(f"{ns}/p0", "test")
        scheduler.sink.nominate(f"{ns}/big-0", "n1")
        scheduler.sink.publish_node_resources("n1", {"kubernetes.io/batch-cpu": "1000"})
        scheduler.sink.annotate(f"{ns}/big-0", {"volcano.sh/gpu-index": "0"})
        scheduler.sink.bind(f"{ns}/big-0", "n1")
        eventually(lambda: real.get("scheduling.volcano.sh/v1beta1", "Queue", "default"), what="the default queue")
        scheduler.sink.annotate_queue("default", {"caldera.sh/fairshare-usage": "{}"})  # usage kept across restarts
        scheduler.sink.flush()
        scheduler.sink.drain()
    finally:
        stop.set()
        thread.join(10)
    for verb, resource in (("create", "pods/binding"), ("create", "pods/eviction"), ("create", "events"),
                           ("update", "podgroups"), ("update", "leases"), ("patch", "pods"), ("patch", "pods/status"),
                           ("patch", "nodes/status"), ("create", "queues"), ("patch", "queues"), ("watch", "pods")):
        assert real.proxy.count(verb, resource), (verb, resource)  # the run above really exercised it
    assert not real.proxy.forbidden, f"the scheduler's RBAC lacks {real.proxy.forbidden}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_deployment_args_are_flags_the_command_knows(name):
    deployment = by_kind("Deployment")[name]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"][0] == "caldera"
    parsed_args(name)
    ports = {p["name"] for p in container["ports"]}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] in ports
    assert deployment["spec"]["replicas"] >= 2
    if name != "caldera-admission":  # the webhook is stateless; the others must elect a leader
        assert "--leader-elect" in container["args"]


def test_the_scheduler_name_and_job_limits_come_from_one_configmap():
    """Change caldera-settings, and the scheduler, the controllers and the webhook all follow:
    no component names a scheduler or a limit of its own."""
    settings = by_kind("ConfigMap")["caldera-settings"]["data"]
    for name in COMMANDS:
        [container] = by_kind("Deployment")[name]["spec"]["template"]["spec"]["containers"]
        literal = [a for a in container["args"] if a.startswith(("--scheduler-name", "--max-")) and "$(" not in a]
        assert not literal, f"{name} sets {literal} itself"
    scheduler, controllers, webhook = (parsed_args(n) for n in ("caldera-scheduler", "caldera-controllers",
                                                                "caldera-admission"))
    assert scheduler.scheduler_name == controllers.scheduler_name[0] == webhook.scheduler_name \
        == settings["scheduler-name"]
    for flag in ("max_tasks_per_job", "max_replicas_per_task", "max_replicas_per_job"):
        assert getattr(controllers, flag) == getattr(webhook, flag) == int(settings[flag.replace("_", "-")])


def test_scheduler_reads_its_configmap_which_is_valid():
    deployment = by_kind("Deployment")["caldera-scheduler"]
    pod_spec = deployment["spec"]["template"]["spec"]
    [container] = pod_spec["containers"]
    conf_path = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--scheduler-conf="))
    mount = next(m for m in container["volumeMounts"] if conf_path.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod_spec["volumes"] if v["name"] == mount["name"])
    configmap = by_kind("ConfigMap")[volume["configMap"]["name"]]
    key = conf_path[len(mount["mountPath"]) + 1:]
    assert load_config(configmap["data"][key], key).actions


def test_crds_serve_what_the_clients_call():
    crds = by_kind("CustomResourceDefinition")
    expected = {"queues.scheduling.volcano.sh": ("Cluster", "v1beta1", True),
                "podgroups.scheduling.volcano.sh": ("Namespaced", "v1beta1", False),  # as Volcano's
                "jobs.batch.volcano.sh": ("Namespaced", "v1alpha1", True),
                "commands.bus.volcano.sh": ("Namespaced", "v1alpha1", False),
                "hypernodes.topology.volcano.sh": ("Cluster", "v1alpha1", True),
                "cronjobs.batch.volcano.sh": ("Namespaced", "v1alpha1", True),
                "jobflows.flow.volcano.sh": ("Namespaced", "v1alpha1", True),
                "jobtemplates.flow.volcano.sh": ("Namespaced", "v1alpha1", True),
                "nodeshards.shard.volcano.sh": ("Cluster", "v1alpha1", True)}
    uncolumned = {"commands.bus.volcano.sh", "cronjobs.batch.volcano.sh", "jobtemplates.flow.volcano.sh"}
    assert set(crds) == set(expected)
    for name, (scope, version, status) in expected.items():
        crd = crds[name]
        [served] = crd["spec"]["versions"]
        assert (crd["spec"]["scope"], served["name"]) == (scope, version)
        assert ("status" in (served.get("subresources") or {})) == status
        # Volcano's own columns (`kubectl get pg` prints RUNNINGS there too); its Command, CronJob
        # and JobTemplate have none
        assert bool(served.get("additionalPrinterColumns")) == (name not in uncolumned)
        assert name == f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"


def test_webhooks_point_at_the_admission_service():
    services = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in documents() if d["kind"] == "Service"}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for config in by_kind(kind).values():
            for hook in config["webhooks"]:
                service = hook["clientConfig"]["service"]
                assert (service["namespace"], service["name"]) in services
                assert hook["failurePolicy"] == "Fail" and hook["timeoutSeconds"] <= 10
                if any(g == "" for rule in hook["rules"] for g in rule["apiGroups"]):
                    # core objects only through matchConditions (an outage never blocks anyone
                    # else's pods, as Volcano's pods webhook did, Volcano #3734): the agents' evictions,
                    # and the pods of Caldera's scheduler or pinning CPUs
                    conditions = [c["expression"] for c in hook["matchConditions"]]
                    if service["path"] == "/pods/validate":
                        assert "object.spec.schedulerName == 'volcano'" in conditions[0]
                        assert "caldera.sh/cpuset" in conditions[0] and kind == "ValidatingWebhookConfiguration"
                        continue
                    if service["path"] == "/pods/mutate":  # only the pods that opt in: queue gate, resource group
                        assert conditions == ["['scheduling.volcano.sh/queue-allocation-gate', 'volcano.sh/resource-group']"
                                              ".exists(k, k in object.metadata.?annotations.orValue({}))"]
                        assert kind == "MutatingWebhookConfiguration"
                        continue
                    if service["path"] == "/owners/validate":  # the controllers' creates alone
                        assert conditions == [
                            "request.userInfo.username == 'system:serviceaccount:caldera-system:caldera-controllers'"]
                        assert all(rule["operations"] == ["CREATE"] for rule in hook["rules"])
                        continue
                    assert conditions == [
                        "request.userInfo.username == 'system:serviceaccount:caldera-system:caldera-nodeagent'"]
                    assert hook["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                              "resources": ["pods/eviction"]}]


def test_controllers_rbac_covers_what_the_controllers_do(real, tmp_path):
    from central.admission.jobs import mutate_job
    from central.cli import main
    from central.controllers.loops.command import build, run_controllers
    from central.kube.client import VOLCANO_SCHEDULING, path

    job = mutate_job({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                      "metadata": {"name": "mpi", "namespace": real.namespace},
                      "spec": {"plugins": {"ssh": [], "svc": [], "env": []}, "tasks": [
                          {"name": "w", "replicas": 2, "template": {"spec": {"terminationGracePeriodSeconds": 0,
                                                                              "containers": [
                              {"name": "c", "image": "busybox"}]}}}]}})
    uid = real.put(job)["metadata"]["uid"]
    group = f"mpi-{uid}"  # the Job's PodGroup, named as Volcano names it
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
              "spec": {"weight": 1}})
    real.put(pod("plain"))
    kube = real.as_account("caldera-controllers", tmp_path)  # the CLI below is a user: the admin
    stop = threading.Event()
    elector = LeaderElector(kube, "caldera-system", "vc-controller-manager", "c", lease_duration=2,
                            renew_deadline=1.5, retry_period=0.1)
    thread = threading.Thread(target=run_controllers, args=(build(kube, 2, ("volcano",)), stop, elector), daemon=True)
    thread.start()
    try:
        eventually(lambda: real.get(*PODGROUP, group), what="the job's PodGroup")
        real.admin.merge_patch(path(VOLCANO_SCHEDULING, "podgroups", real.namespace, group),
                               {"status": {"phase": "Inqueue"}})  # as the scheduler's enqueue would
        eventually(lambda: real.pod("mpi-w-1"), what="the job's pods")
        eventually(lambda: (real.pod("plain")["metadata"].get("annotations") or {}).get(
            "scheduling.k8s.io/group-name"), what="the plain pod's PodGroup")
        assert main(["job", "suspend", "-N", "mpi", "-n", real.namespace, "--kubeconfig", real.kubeconfig]) == 0
        assert main(["queue", "operate", "-n", "team", "-a", "close", "--kubeconfig", real.kubeconfig]) == 0
        eventually(lambda: (real.get(*QUEUE, "team").get("status") or {}).get("state") == "Closed",
                   what="the queue closed")
        eventually(lambda: real.pod("mpi-w-0") is None, what="the job's pods deleted")
    finally:
        stop.set()
        thread.join(10)
    for verb, resource in (("create", "pods"), ("delete", "pods"), ("create", "secrets"), ("create", "services"),
                           ("create", "podgroups"), ("update", "jobs/status"), ("patch", "queues/status"),
                           ("delete", "commands")):
        assert real.proxy.count(verb, resource), (verb, resource)  # the run above really exercised it
    assert not real.proxy.forbidden, f"the controllers' RBAC lacks {real.proxy.forbidden}"


def test_agents_stream_to_the_scheduler_service():
    agent_conf = yaml.safe_load(by_kind("ConfigMap")["caldera-nodeagent-config"]["data"]["agent.yaml"])
    host, _, port = agent_conf["stream"]["server"].rpartition(":")
    service_name, namespace, _ = host.split(".", 2)
    service = by_kind("Service")[service_name]
    assert service["metadata"]["namespace"] == namespace
    [stream] = [p for p in service["spec"]["ports"] if p["port"] == int(port)]
    scheduler = by_kind("Deployment")["caldera-scheduler"]
    [container] = scheduler["spec"]["template"]["spec"]["containers"]
    assert stream["targetPort"] in {p["name"] for p in container["ports"]}
    assert any(a.endswith(f":{next(p['containerPort'] for p in container['ports'] if p['name'] == stream['targetPort'])}")
               for a in container["args"] if a.startswith("--agent-address="))
    labels = scheduler["spec"]["template"]["metadata"]["labels"]
    selector = service["spec"]["selector"]
    assert {k: v for k, v in selector.items() if k != "caldera.sh/leader"}.items() <= labels.items()
