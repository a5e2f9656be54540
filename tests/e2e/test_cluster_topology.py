"""Network-topology-aware scheduling on a real kube-apiserver: HyperNodes through the CRD and
the admission webhook, their status.nodeCount from the controllers, a hard-mode Job placed
inside one HyperNode of the tier it allows, and one that no such HyperNode holds waiting with
the tier named."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from central.kube.client import ApiError, KubeClient
from tests.builders import exact, hypernode, member
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

HYPERNODES = "/apis/topology.volcano.sh/v1alpha1/hypernodes"


def leftovers(kube: KubeClient) -> list[str]:
    """Pods still on a node whose namespace is gone or going: an earlier test's, being deleted."""
    live = {ns["metadata"]["name"] for ns in kube.get("/api/v1/namespaces")["items"]
            if (ns.get("status") or {}).get("phase") != "Terminating"}
    return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in kube.get("/api/v1/pods")["items"]
            if p["spec"].get("nodeName") and p["metadata"]["namespace"] not in live
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]


@pytest.fixture
def fabric(tenant: Tenant) -> Iterator[dict[str, set[str]]]:
    """Two racks under one spine: rack-a holds node-1 (16 cpu), rack-b node-2 and gpu-1 (32).

    The tests count on those cpus being free, so the fixture first waits out the pods of
    earlier tests whose namespaces are still being deleted."""
    wait_for(lambda: not leftovers(tenant.kube), "earlier tests' pods gone from the nodes", timeout=120)
    prefix = tenant.namespace[-4:]
    racks = {f"rack-a-{prefix}": {"node-1"}, f"rack-b-{prefix}": {"node-2", "gpu-1"}}
    made = []
    try:
        for name, members in racks.items():
            rack = hypernode(name, 1, [exact(n) for n in sorted(members)])
            made.append(tenant.create(HYPERNODES, rack)["metadata"]["name"])
        spine = hypernode(f"spine-{prefix}", 2, [exact(n, "HyperNode") for n in racks])
        made.append(tenant.create(HYPERNODES, spine)["metadata"]["name"])
        yield racks
    finally:
        for name in made:
            try:
                tenant.kube.delete(f"{HYPERNODES}/{name}")
            except ApiError:
                pass


def test_hypernode_crd_is_structural_and_bad_hypernodes_are_refused(tenant: Tenant) -> None:
    crd = tenant.kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/hypernodes.topology.volcano.sh")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions.get("Established") == "True" and conditions.get("NonStructuralSchema") != "True"
    bad = hypernode(f"bad-{tenant.namespace[-4:]}", 1, [member(regexMatch={"pattern": "node-(["})])
    with pytest.raises(ApiError) as refused:
        tenant.create(HYPERNODES, bad)
    assert refused.value.code == 400 and "spec.members[0].selector.regexMatch.pattern" in refused.value.message
    bad_job = volcano_job("tiered", tenant.queue, extra_spec={"networkTopology": {"mode": "hard", "highestTierAllowed": 0}})
    with pytest.raises(ApiError) as job_refused:
        tenant.submit(bad_job)
    assert "spec.networkTopology.highestTierAllowed" in job_refused.value.message


def test_hard_mode_job_lands_within_one_hypernode(tenant: Tenant, fabric: dict[str, set[str]]) -> None:
    # 3 pods of 6 cpu: 18 cpu, more than rack-a's one node has; rack-b's two nodes hold them.
    tenant.submit(volcano_job("ring", tenant.queue, replicas=3, cpu="6",
                              extra_spec={"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}))
    pg = wait_for(lambda: tenant.job_podgroup("ring"), "the Job's PodGroup")
    assert pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}
    wait_for(lambda: len(tenant.pods()) == 3 and all(p["spec"].get("nodeName") for p in tenant.pods()),
             "the gang bound", timeout=90)
    placed = {p["spec"]["nodeName"] for p in tenant.pods()}
    rack_b = next(members for name, members in fabric.items() if name.startswith("rack-b"))
    assert placed <= rack_b, placed


def test_the_controllers_count_each_hypernodes_nodes(tenant: Tenant, fabric: dict[str, set[str]]) -> None:
    spine = f"spine-{tenant.namespace[-4:]}"
    wanted = {**{name: len(members) for name, members in fabric.items()}, spine: 3}

    def counts() -> bool:
        return all((tenant.kube.get(f"{HYPERNODES}/{name}").get("status") or {}).get("nodeCount") == count
                   for name, count in wanted.items())

    wait_for(counts, "status.nodeCount of every HyperNode", timeout=60)


def test_hard_mode_job_no_hypernode_holds_waits_naming_the_tier(tenant: Tenant, fabric: dict[str, set[str]]) -> None:
    # 3 pods of 12 cpu: 36 cpu, more than either rack; across racks it would fit (48 cpu).
    tenant.submit(volcano_job("wide", tenant.queue, replicas=3, cpu="12",
                              extra_spec={"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}))

    def unschedulable() -> str | None:
        pg = tenant.job_podgroup("wide") or {}
        messages = [c.get("message", "") for c in (pg.get("status") or {}).get("conditions") or []
                    if c.get("type") == "Unschedulable"]
        return next((m for m in messages if "highestTierAllowed 1" in m), None)

    message = wait_for(unschedulable, "the PodGroup Unschedulable, naming the tier", timeout=90)
    assert "network topology hard" in message
    assert not any(p["spec"].get("nodeName") for p in tenant.pods())


def test_partitions_each_land_whole_inside_one_hypernode(tenant: Tenant, fabric: dict[str, set[str]]) -> None:
    # 2 partitions of 2 pods of 9 cpu, each held to one rack: rack-a's single 16-cpu node
    # holds no partition, rack-b holds one; the job starts with that one (minPartitions 1)
    # and the other waits, naming its sub-group. Without partitions 3 of the pods would fit.
    partition = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1,
                 "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    job = volcano_job("parts", tenant.queue, replicas=4, min_available=2, cpu="9")
    job["spec"]["tasks"][0]["partitionPolicy"] = partition
    tenant.submit(job)
    pg = wait_for(lambda: tenant.job_podgroup("parts"), "the Job's PodGroup")
    [policy] = pg["spec"]["subGroupPolicy"]
    assert (policy["name"], policy["subGroupSize"], policy["minSubGroups"]) == ("worker", 2, 1)
    assert policy["matchLabelKeys"] == ["volcano.sh/partition-id"]
    wait_for(lambda: sum(1 for p in tenant.pods() if p["spec"].get("nodeName")) == 2, "one partition bound", timeout=90)

    def waiting_reason() -> str | None:
        for pod in tenant.pods():
            for cond in (pod.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "PodScheduled" and "subGroup worker-" in (cond.get("message") or ""):
                    return str(cond["message"])
        return None

    assert "fits in no HyperNode" in wait_for(waiting_reason, "the other partition's reason", timeout=60)
    pods = tenant.pods()
    bound = [p for p in pods if p["spec"].get("nodeName")]
    assert len({p["metadata"]["labels"]["volcano.sh/partition-id"] for p in bound}) == 1  # one whole partition
    rack_b = next(members for name, members in fabric.items() if name.startswith("rack-b"))
    assert {p["spec"]["nodeName"] for p in bound} == rack_b
    assert sorted(p["metadata"]["labels"]["volcano.sh/partition-id"] for p in pods) == ["0", "0", "1", "1"]


def test_hypernodes_are_discovered_from_node_labels_and_follow_them(tenant: Tenant) -> None:
    """Volcano's label discovery: the controllers' ConfigMap names node labels by tier, the
    HyperNode controller keeps HyperNodes matching them, and only the ones it discovered."""
    kube, key = tenant.kube, f"test.caldera.sh/rack-{tenant.namespace[-4:]}"
    config_maps = "/api/v1/namespaces/caldera-system/configmaps"
    conf = ("networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config:\n    networkTopologyTypes:\n"
            f"      racks:\n      - nodeLabel: {key}\n      - nodeLabel: kubernetes.io/hostname\n")
    selector = "volcano.sh/network-topology-source=label"

    def discovered() -> dict[str, list[str]]:
        items = kube.request("GET", HYPERNODES, {"labelSelector": selector})["items"]
        return {hn["metadata"]["labels"].get(key, ""): sorted(m["selector"]["exactMatch"]["name"]
                                                            for m in hn["spec"]["members"]) for hn in items}

    try:
        for name, rack in (("node-1", "r1"), ("node-2", "r1"), ("gpu-1", "r2")):
            kube.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {key: rack}}})
        kube.create(config_maps, {"metadata": {"name": "caldera-controller-configmap"},
                                  "data": {"volcano-controller.conf": conf}})
        wait_for(lambda: discovered() == {"r1": ["node-1", "node-2"], "r2": ["gpu-1"]}, "two racks discovered",
                 timeout=60)
        kube.merge_patch("/api/v1/nodes/node-2", {"metadata": {"labels": {key: "r2"}}})
        wait_for(lambda: discovered() == {"r1": ["node-1"], "r2": ["gpu-1", "node-2"]}, "node-2 moved", timeout=60)
        kube.merge_patch("/api/v1/nodes/node-1", {"metadata": {"labels": {key: None}}})
        wait_for(lambda: discovered() == {"r2": ["gpu-1", "node-2"]}, "the emptied rack deleted", timeout=60)
        controllers = KubeClient.connect(str(tenant.cluster.dir / "kubeconfigs" / "caldera-controllers"))
        with pytest.raises(ApiError) as refused:  # their token cannot write a hand-made HyperNode
            controllers.request("POST", HYPERNODES, {"dryRun": "All"},
                                hypernode(f"forged-{tenant.namespace[-4:]}", 1, [exact("node-1")]))
        assert refused.value.code == 403 and "discovered from node labels" in refused.value.message
    finally:
        if kube.get_or_none(f"{config_maps}/caldera-controller-configmap"):
            kube.delete(f"{config_maps}/caldera-controller-configmap")
        for name in ("node-1", "node-2", "gpu-1"):
            kube.merge_patch(f"/api/v1/nodes/{name}", {"metadata": {"labels": {key: None}}})
        for hn in kube.request("GET", HYPERNODES, {"labelSelector": selector})["items"]:
            kube.delete(f"{HYPERNODES}/{hn['metadata']['name']}")
