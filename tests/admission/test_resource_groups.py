"""Resource groups in the pods mutating webhook: Volcano's TestMutatePods cases, the file read
again on change, and bad configurations named by field."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from central.admission.config import AdmissionConfig
from central.admission.pods import mutate_pod
from central.admission.resourcegroups import ResourceGroupsFile, parse_resource_groups, place_in_group
from central.errors import InputError

AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}
CONF = f"""
resourceGroups:
- resourceGroup: management
  object: {{key: namespace, value: [mng-ns-1, mng-ns-2]}}
  schedulerName: default-scheduler
  tolerations: [{{key: mng-taint-1, operator: Exists, effect: NoSchedule}}]
  affinity: '{json.dumps(AFFINITY)}'
  labels: {{volcano.sh/nodetype: management}}
- resourceGroup: cpu
  object: {{key: annotation, value: ["volcano.sh/resource-group: cpu"]}}
  schedulerName: volcano
  labels: {{volcano.sh/nodetype: cpu}}
- resourceGroup: gpu
  schedulerName: volcano
  labels: {{volcano.sh/nodetype: gpu}}
"""


def pod(name: str, namespace: str = "", scheduler: str = "", **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **({"schedulerName": scheduler} if scheduler else {})}}


@pytest.mark.parametrize(("given", "added"), [
    pytest.param(pod("mng-pod", "mng-ns-1", "default-scheduler"), {
        "nodeSelector": {"volcano.sh/nodetype": "management"}, "affinity": AFFINITY,
        "tolerations": [{"key": "mng-taint-1", "operator": "Exists", "effect": "NoSchedule"}],
        "schedulerName": "default-scheduler"}, id="test-1 by namespace"),
    pytest.param(pod("cpu-pod", **{"volcano.sh/resource-group": "cpu"}),
                 {"nodeSelector": {"volcano.sh/nodetype": "cpu"}, "schedulerName": "volcano"}, id="test-2 by annotation"),
    pytest.param(pod("gpu-pod", **{"volcano.sh/resource-group": "gpu"}),
                 {"nodeSelector": {"volcano.sh/nodetype": "gpu"}, "schedulerName": "volcano"}, id="test-3 by group name"),
    pytest.param(pod("normal-pod"), {}, id="test-4 in no group"),
])
def test_volcanos_mutate_pods_cases(given: dict[str, Any], added: dict[str, Any]) -> None:
    out = place_in_group(given, parse_resource_groups(CONF), given["metadata"]["namespace"])
    assert out["spec"] == {**given["spec"], **added}
    assert given["spec"].get("nodeSelector") is None  # a copy: the request's object is untouched


def test_a_pods_own_selector_and_affinity_stay() -> None:
    given = pod("p", "mng-ns-2")
    given["spec"].update(nodeSelector={"zone": "a"}, affinity={"podAffinity": {}}, tolerations=[{"operator": "Exists"}])
    spec = place_in_group(given, parse_resource_groups(CONF), "mng-ns-2")["spec"]
    assert spec["nodeSelector"] == {"zone": "a", "volcano.sh/nodetype": "management"}
    assert spec["affinity"] == {"podAffinity": {}}  # Volcano: only a pod without one gets the group's
    assert len(spec["tolerations"]) == 2


@pytest.mark.parametrize(("text", "where"), [
    ("resourceGroups: [{resourceGroup: a, object: {key: label}}]", "resourceGroups[0].object.key"),
    ("resourceGroups: [{resourceGroup: a, object: {key: annotation, value: [no-colon]}}]", "resourceGroups[0].object.value[0]"),
    ("resourceGroups: [{resourceGroup: a, affinity: '{not json'}]", "resourceGroups[0].affinity"),
    ("resourceGroups: [{resourceGroup: a, tolerations: [{operator: Near}]}]", "resourceGroups[0].tolerations[0].operator"),
    ("resourceGroups: {a: b}", "resourceGroups"),
])
def test_a_bad_configuration_names_the_field(text: str, where: str) -> None:
    with pytest.raises(InputError) as err:
        parse_resource_groups(text)
    assert err.value.where == where


def test_the_file_is_read_again_when_it_changes_and_a_bad_change_keeps_the_last_groups(tmp_path: Path) -> None:
    path = tmp_path / "admission.conf"
    path.write_text("resourceGroups: []\n")
    conf = ResourceGroupsFile(str(path))
    config = AdmissionConfig(resource_groups=conf)
    assert mutate_pod(pod("p", "mng-ns-1"), config, "mng-ns-1")["spec"].get("nodeSelector") is None
    path.write_text(CONF)
    os.utime(path, ns=(1, 2_000_000_000_000))  # a new stamp, whatever the clock's resolution
    assert mutate_pod(pod("p", "mng-ns-1"), config, "mng-ns-1")["spec"]["nodeSelector"] == {"volcano.sh/nodetype": "management"}
    path.write_text("resourceGroups: [{object: {key: label}}]\n")
    os.utime(path, ns=(1, 3_000_000_000_000))
    assert mutate_pod(pod("p", "mng-ns-1"), config, "mng-ns-1")["spec"]["schedulerName"] == "default-scheduler"
    assert conf.problem is not None and "resourceGroups[0].object.key" in conf.problem
    path.write_text("resourceGroups: {")
    with pytest.raises(InputError):
        ResourceGroupsFile(str(path))  # at start a bad file is an error, not a silent empty list
