"""Volcano's benchmark cases as the e2e bench builds them: the objects each scheduler is
given, and, where Volcano's source is cached, that the translation still says what its case
files say."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime, timezone

import pytest
import yaml

from central.bench import e2e_audit
from central.bench.e2e_cases import (
    CASE_NAMES,
    CASES,
    KWOK_TAINT,
    RACKS,
    hypernodes,
    min_resources,
    objects,
    racks,
    workload,
)
from central.bench.session import BENCH_CONF
from central.conformance import build as volcano_build
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle

# Volcano's benchmark Makefile's defaults for `make test-gang-env` (JOBS is the size here).
MAKEFILE_DEFAULTS = {"MIN_AVAILABLE": "100", "REPLICAS": "100", "JOBS": "10"}


def test_gang_case_is_whole_jobs_of_its_shape():
    work = workload(10, 1050, "gang")
    assert len(work.podgroups) == 10 and len(work.pods) == 1000  # 1050 pods: 10 whole jobs of 100
    spec = work.podgroups[0]["spec"]
    assert spec == {"minMember": 100, "queue": "default", "minResources": {"cpu": "100000m", "memory": str(100 * 2**30)}}
    members = Counter(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in work.pods)
    assert set(members.values()) == {100} and set(members) == {pg["metadata"]["name"] for pg in work.podgroups}
    assert [q["metadata"]["name"] for q in work.queues] == ["default"]


def test_every_case_pod_lands_on_the_kwok_nodes_only():
    for name in CASES:
        work = workload(8, 100, name)
        assert all(n.taints == (KWOK_TAINT,) and (n.cpu, n.memory, n.pods) == ("32", "256Gi", 110) for n in work.nodes)
        assert all(work.node_labels[n.name]["type"] == "kwok" for n in work.nodes)
        for pod in work.pods:
            spec = pod["spec"]
            assert spec["nodeSelector"] == {"type": "kwok"}
            assert spec["tolerations"][0]["key"] == KWOK_TAINT["key"]
            resources = spec["containers"][0]["resources"]
            assert resources["requests"] == resources["limits"]


def test_pod_case_is_bare_pods():
    work = workload(5, 30, "pod")
    assert len(work.pods) == 30 and work.podgroups == []
    assert all("annotations" not in p["metadata"] for p in work.pods)


def test_comprehensive_case_has_a_master_and_ten_workers_per_job():
    work = workload(5, 25, "gang-comprehensive")
    assert len(work.podgroups) == 2 and len(work.pods) == 22
    tasks = Counter(p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in work.pods)
    assert tasks == {"master": 2, "worker": 20}
    # minResources: the first minAvailable (10) pods in task order, the master and 9 workers
    assert work.podgroups[0]["spec"]["minResources"] == {"cpu": "550m", "memory": str(100 * 2**20 + 9 * 50 * 2**20)}


def test_network_topology_case_has_racks_under_spines():
    work = workload(10, 100, "gang-net-topo")
    assert all(pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2} for pg in work.podgroups)
    rack = {n: labels["topology-rack"] for n, labels in work.node_labels.items()}
    assert Counter(rack.values()) == {"rack-0": 2, "rack-1": 2, "rack-2": 2, "rack-3": 4}  # the remainder in the last
    assert {labels["topology-spine"] for labels in work.node_labels.values()} == {"spine-0", "spine-1"}
    assert work.node_labels["kwok-node-0"]["topology-spine"] == "spine-0"
    assert work.node_labels["kwok-node-9"]["topology-spine"] == "spine-1"
    tiers = {h["metadata"]["name"]: h["spec"]["tier"] for h in hypernodes()}
    assert tiers == {"rack-0": 1, "rack-1": 1, "rack-2": 1, "rack-3": 1, "spine-0": 2, "spine-1": 2}
    assert racks(3) == [0, 1, 2] and len(set(racks(1000))) == RACKS


def test_min_resources_sums_quantities():
    assert min_resources([CASES["gang"].tasks[0]] * 3) == {"cpu": "3000m", "memory": str(3 * 2**30)}


def test_mixed_is_the_default_and_every_case_has_a_name():
    assert CASE_NAMES[0] == "mixed" and set(CASE_NAMES[1:]) == set(CASES)


def _volcano_case_file(src, case) -> dict:
    text = (src / "benchmark" / case.source).read_text()
    text = re.sub(r"\$\{(\w+)\}", lambda m: MAKEFILE_DEFAULTS.get(m.group(1), "1"), text)
    return yaml.safe_load(text)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.min_available is not None])
def test_gang_cases_say_what_volcanos_case_files_say(name):
    src = volcano_build.Build(volcano_build.cache_root()).src
    if not (src / "benchmark").is_dir():
        pytest.skip(f"Volcano's source is not cached at {src}")
    case = CASES[name]
    job = _volcano_case_file(src, case)["jobTemplate"]
    assert case.min_available == job["minAvailable"] and case.queue == job["queue"]
    assert [(t.name, t.replicas, str(t.cpu), str(t.memory)) for t in case.tasks] == \
        [(t["name"], t["replicas"], str(t["cpu"]), str(t["memory"])) for t in job["tasks"]]
    if job.get("enableNetworkTopology"):
        assert case.topology == {"mode": job["networkTopologyMode"], "highestTierAllowed": job["networkTopologyHighestTier"]}
    else:
        assert case.topology is None


def test_pod_case_says_what_volcanos_case_file_says():
    src = volcano_build.Build(volcano_build.cache_root()).src
    if not (src / "benchmark").is_dir():
        pytest.skip(f"Volcano's source is not cached at {src}")
    template = _volcano_case_file(src, CASES["pod"])["podTemplate"]
    task = CASES["pod"].tasks[0]
    assert (task.cpu, task.memory) == (template["cpu"], template["memory"])


def test_audit_counts_each_client_and_the_servers_rates(tmp_path):
    def event(user, agent, verb, resource, sub=None, second=0):
        ref = {"resource": resource, "namespace": "bench", **({"subresource": sub} if sub else {})}
        return {"user": {"username": user}, "userAgent": agent, "verb": verb, "objectRef": ref,
                "stageTimestamp": f"2026-01-01T00:00:{second:02d}.000000Z"}
    log = tmp_path / "audit.log"
    events = [event("admin", "python", "create", "pods", second=s) for s in range(0, 10)]  # 10 creates over 9 s
    events += [event("admin", "vc-scheduler/v0.0.0 (linux/amd64)", "create", "pods", "binding", s) for s in (1, 3, 5)]
    events += [event("admin", "vc-controller-manager/v0.0.0", "create", "podgroups")]
    events += [event(e2e_audit.KUBE_SCHEDULER, "kube-scheduler/v1.33", "create", "events")]
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    got = e2e_audit.read(log, e2e_audit.CLIENTS["volcano"], "bench")
    assert got.by_client == {"vc-scheduler": {"create pods/binding": 3},
                             "vc-controller-manager": {"create podgroups": 1}}
    assert got.creates_per_s == pytest.approx(10 / 9) and got.binds_per_s == pytest.approx(3 / 4)
    assert e2e_audit.summary(got, bound=3)[0].startswith("vc-scheduler: 1.00 requests per bound pod (3;")
    assert e2e_audit.read(tmp_path / "absent.log", e2e_audit.CLIENTS["caldera"], "bench").by_client == {
        "caldera-scheduler": {}}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_every_case_loads_into_the_cache_the_session_bench_measures(name):
    """`caldera bench --case` in memory: the same objects, read by the cache, placed by a cycle."""
    cache = ClusterCache()
    for obj in objects(workload(8, 40, name)):
        cache.apply(obj)
    pods = [t for t in cache.tasks.values() if t.status == TaskStatus.PENDING]
    assert len(pods) == len(workload(8, 40, name).pods) and all(t.job_uid for t in pods)
    placed = run_cycle(cache, load_config(BENCH_CONF), now=datetime(2026, 1, 1, tzinfo=timezone.utc)).binds
    assert len(placed) == len(pods)  # 8 nodes of 32 CPUs have room for every case's 40 pods
