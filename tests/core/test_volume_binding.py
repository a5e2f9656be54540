"""Volume binding as kube-scheduler does it: claims filter nodes, placement binds them.

Each case is a small cluster fed to the cache, one cycle, and what the sink was handed: the
claim bindings written before each bind, the binds, and why the others wait.
"""

from __future__ import annotations

from typing import Any

import pytest

from central.model.cache import ClusterCache
from central.model.volumes import ClaimBinding, parse_claim, parse_volume
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.testing import RecordingSink
from tests.builders import claim, csinode, node, pod, podgroup, storage_class, volume

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def hosts(*names: str, zone: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return [node(n, labels={"kubernetes.io/hostname": n, **({"topology.kubernetes.io/zone": zone[n]} if zone else {})})
            for n in names]


def with_claims(name: str, *claims: str, group: str = "pg") -> dict[str, Any]:
    return pod(name, "ml", group=group, volumes=[{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                                 for i, c in enumerate(claims)])


def cycle(*objects: dict[str, Any]) -> tuple[RecordingSink, Any]:
    cache = ClusterCache()
    for obj in objects:
        cache.apply(obj)
    sink = RecordingSink()
    result = run_cycle(cache, load_config(CONF), sink)
    return sink, result


def test_a_local_volume_pins_the_pod_to_its_node_and_the_smallest_fitting_volume_there_is_taken():
    sink, _ = cycle(*hosts("n1", "n2", "n3"), storage_class(),
                    volume("big-on-n2", storage="10Gi", node="n2"), volume("small-on-n2", storage="5Gi", node="n2"),
                    volume("tiny-on-n1", storage="1Gi", node="n1"), volume("tiny-on-n3", storage="1Gi", node="n3"),
                    claim("data", storage="4Gi"), podgroup("pg"), with_claims("p-0", "data"))
    assert sink.of("bind") == [("ml/p-0", "n2")]
    assert sink.of("bind_claims") == [("ml/p-0", (ClaimBinding("ml/data", "small-on-n2", "n2"),))]
    methods = [m for m, _, _ in sink.calls]
    assert methods.index("bind_claims") < methods.index("bind")


def test_a_bound_claim_keeps_the_pod_where_its_volume_is():
    sink, _ = cycle(*hosts("n1", "n2"), storage_class(), volume("pv", node="n2", claim_ref="ml/data"),
                    claim("data", volume="pv"), podgroup("pg"), with_claims("p-0", "data"))
    assert sink.of("bind") == [("ml/p-0", "n2")]
    assert sink.of("bind_claims") == []  # nothing to write: the claim is bound


def test_wait_for_first_consumer_provisioning_selects_a_node_within_the_allowed_topology():
    sink, _ = cycle(*hosts("n1", "n2", zone={"n1": "a", "n2": "b"}),
                    storage_class("fast", provisioner="test.caldera.sh/fake", zones=["b"]),
                    claim("data", storage_class="fast"), podgroup("pg"), with_claims("p-0", "data"))
    assert sink.of("bind") == [("ml/p-0", "n2")]
    assert sink.of("bind_claims") == [("ml/p-0", (ClaimBinding("ml/data", "", "n2"),))]


def test_a_claim_already_given_a_node_is_being_provisioned_there():
    sink, _ = cycle(*hosts("n1", "n2"), storage_class("fast", provisioner="test.caldera.sh/fake"),
                    claim("data", storage_class="fast", selected_node="n1"), podgroup("pg"), with_claims("p-0", "data"))
    assert sink.of("bind") == [("ml/p-0", "n1")]
    assert sink.of("bind_claims") == []


def test_a_gang_whose_volumes_cannot_all_be_met_places_nothing_and_names_the_claim():
    sink, result = cycle(*hosts("n1", "n2"), storage_class(),
                         volume("pv-1", node="n1"), volume("pv-2", node="n2"),
                         *(claim(f"data-{i}") for i in range(3)), podgroup("pg", min_member=3),
                         *(with_claims(f"p-{i}", f"data-{i}") for i in range(3)))
    assert sink.of("bind") == [] and sink.of("bind_claims") == []
    reasons = " ".join(result.pending_reasons.values())
    assert "node(s) didn't find available persistent volumes to bind for claim" in reasons, result.pending_reasons


def test_two_pods_sharing_a_claim_share_its_volume_and_both_write_the_same_binding():
    sink, _ = cycle(*hosts("n1", "n2"), storage_class(), volume("pv", node="n2", modes=("ReadWriteMany",)),
                    claim("shared", modes=("ReadWriteMany",)), podgroup("pg", min_member=2),
                    with_claims("p-0", "shared"), with_claims("p-1", "shared"))
    assert sorted(sink.of("bind")) == [("ml/p-0", "n2"), ("ml/p-1", "n2")]
    assert {b for _, b in sink.of("bind_claims")} == {(ClaimBinding("ml/shared", "pv", "n2"),)}


def test_one_pod_cannot_take_one_volume_for_two_claims():
    _, result = cycle(*hosts("n1"), storage_class(), volume("pv", node="n1"), claim("a"), claim("b"),
                      podgroup("pg"), with_claims("p-0", "a", "b"))
    assert result.binds == {}
    assert "node(s) didn't find available persistent volumes to bind" in result.pending_reasons["ml/p-0"]


def test_an_unbound_immediate_claim_and_a_missing_claim_hold_the_pod():
    _, result = cycle(*hosts("n1"), storage_class("now", provisioner="x", mode="Immediate"),
                      claim("later", storage_class="now"), podgroup("pg"), podgroup("pg2"),
                      with_claims("p-0", "later"), with_claims("q-0", "absent", group="pg2"))
    assert result.binds == {}
    assert "pod has unbound immediate PersistentVolumeClaims" in result.pending_reasons["ml/p-0"]
    assert 'persistentvolumeclaim "absent" not found' in result.pending_reasons["ml/q-0"]


def test_the_csi_attach_limit_of_a_node_is_kept():
    placed = pod("old", "ml", node="n1", phase="Running",
                 volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "old-data"}}])
    sink, _ = cycle(*hosts("n1", "n2"), csinode("n1", ebs_csi_aws_com=1), csinode("n2", ebs_csi_aws_com=1),
                    storage_class("ebs", provisioner="ebs.csi.aws.com"),
                    volume("pv-old", storage_class="ebs", csi_driver="ebs.csi.aws.com", claim_ref="ml/old-data"),
                    claim("old-data", storage_class="ebs", volume="pv-old"), placed,
                    claim("data", storage_class="ebs"), podgroup("pg"), with_claims("p-0", "data"))
    assert sink.of("bind") == [("ml/p-0", "n2")]  # n1 already attaches its one volume


def test_the_in_tree_attach_limit_is_the_nodes_allocatable():
    full = node("n1", labels={"kubernetes.io/hostname": "n1"})
    full["status"]["allocatable"]["attachable-volumes-aws-ebs"] = "0"
    pv = volume("disk", storage_class="")
    del pv["spec"]["local"]
    pv["spec"]["awsElasticBlockStore"] = {"volumeID": "vol-1"}
    _, result = cycle(full, pv, claim("data", storage_class="", volume="disk"), podgroup("pg"),
                      with_claims("p-0", "data"))
    assert result.binds == {}
    assert "node(s) exceed max volume count" in result.pending_reasons["ml/p-0"]


def test_the_simulator_without_storage_objects_ignores_claims():
    sink, _ = cycle(*hosts("n1"), podgroup("pg"), with_claims("p-0", "unknown"))
    assert sink.of("bind") == [("ml/p-0", "n1")]


@pytest.mark.parametrize("change, fits", [
    ({}, True),
    ({"storage": "512Mi"}, False),  # too small
    ({"storage_class": "other"}, False),
    ({"modes": ("ReadOnlyMany",)}, False),  # lacks the claim's ReadWriteOnce
    ({"modes": ("ReadWriteOnce", "ReadOnlyMany")}, True),
    ({"labels": {"tier": "gold"}}, True),
])
def test_a_volume_matches_a_claim_by_class_size_modes_and_selector(change: dict[str, Any], fits: bool):
    wanted = parse_claim(claim("data", selector={"matchLabels": {"tier": "gold"}} if "labels" in change else None))
    assert parse_volume(volume("pv", **change)).matches(wanted) is fits


def test_a_volume_claimed_by_another_claim_is_not_free():
    wanted = parse_claim(claim("data"))
    assert parse_volume(volume("pv", claim_ref="ml/data")).free_for(wanted)
    assert not parse_volume(volume("pv", claim_ref="ml/other")).free_for(wanted)
    assert parse_volume(volume("pv")).free_for(wanted)
