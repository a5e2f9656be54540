"""Sharded scheduling on the real control plane: two schedulers started with
`--scheduler-sharding-mode=hard`, each on the NodeShard the sharding controller (in `caldera
controllers`) writes for it. No pod is bound twice, no gang is split across the two shards,
and when one scheduler is killed its nodes move to the other and the pods waiting for them bind.

They schedule pods of their own scheduler name, so the suite's scheduler leaves them alone."""

from __future__ import annotations

import os
import signal

import pytest

from central.controllers.sharding import nodes_desired
from central.kube.client import COORDINATION, VOLCANO_SHARD, ApiError, path
from central.localcluster.processes import alive
from tests.e2e.bindwatch import BindWatch
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

SCHEDULER = "sharded"
LOCK = "vc-scheduler-sharded"
SHARDS = ("shard-a", "shard-b")


def start_shard_scheduler(tenant: Tenant, shard: str):
    cluster = tenant.cluster
    assert cluster.runner is not None
    extra = [*cluster.extra_args.get("caldera-scheduler", []), f"--scheduler-name={SCHEDULER}",
             f"--lock-object-name={LOCK}", "--scheduler-sharding-mode=hard", f"--scheduler-sharding-name={shard}"]
    return cluster.runner.start("caldera-scheduler", extra=extra, process_name=f"caldera-scheduler-{shard}")


def shards(tenant: Tenant) -> dict[str, frozenset[str]]:
    items = tenant.kube.get(path(VOLCANO_SHARD, "nodeshards"))["items"]
    return {item["metadata"]["name"]: nodes_desired(item) or frozenset() for item in items}


def sharded_job(name: str, tenant: Tenant, replicas: int, cpu: str = "1", node: str | None = None) -> dict:
    job = volcano_job(name, tenant.queue, replicas=replicas, cpu=cpu)
    job["spec"]["schedulerName"] = SCHEDULER
    if node is not None:
        job["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return job


def test_two_shards_bind_each_pod_once_keep_gangs_whole_and_take_over_a_killed_ones_nodes(tenant: Tenant) -> None:
    cluster = tenant.cluster
    everyone = {n.name for n in cluster.nodes}
    procs = {shard: start_shard_scheduler(tenant, shard) for shard in SHARDS}
    watch = BindWatch(tenant)
    try:
        wait_for(lambda: set(shards(tenant)) >= set(SHARDS) and all(shards(tenant)[s] for s in SHARDS)
                 and shards(tenant)[SHARDS[0]] | shards(tenant)[SHARDS[1]] == everyone,
                 "the sharding controller to give both schedulers nodes", timeout=60)
        split = shards(tenant)
        assert not split[SHARDS[0]] & split[SHARDS[1]]
        gangs = [f"gang-{i}" for i in range(4)]
        for name in gangs:
            tenant.submit(sharded_job(name, tenant, replicas=3))
        tenant.submit(sharded_job("single", tenant, replicas=1))
        wait_for(lambda: len(tenant.pods()) == 13 and all(p["spec"].get("nodeName") for p in tenant.pods()),
                 "both shards to bind every pod", timeout=90)
        shard_of = {node: shard for shard, nodes in split.items() for node in nodes}
        by_job: dict[str, set[str]] = {}
        for pod in tenant.pods():
            job = pod["metadata"]["labels"]["volcano.sh/job-name"]
            by_job.setdefault(job, set()).add(shard_of[pod["spec"]["nodeName"]])
        assert all(len(by_job[name]) == 1 for name in gangs), by_job  # each gang on one shard
        # kill one shard's scheduler; a job that fits only on one of its nodes waits for them to move
        victim, survivor = SHARDS
        target = sorted(split[victim])[0]
        os.kill(procs[victim].pid, signal.SIGKILL)
        wait_for(lambda: not alive(procs[victim].pid), "the killed scheduler to be gone", timeout=10)
        tenant.submit(sharded_job("after", tenant, replicas=2, cpu="500m", node=target))
        # its Lease (15 s) lapses unrenewed; the controller then hands its nodes over
        wait_for(lambda: shards(tenant).get(survivor) == everyone and not shards(tenant).get(victim),
                 "the killed scheduler's nodes to move to the other", timeout=60)
        wait_for(lambda: all(p["spec"].get("nodeName") == target for p in tenant.pods()
                             if p["metadata"]["labels"]["volcano.sh/job-name"] == "after")
                 and len(tenant.pods()) == 15, "the waiting pods to bind on the moved node", timeout=60)
        assert all(len(nodes) == 1 for nodes in watch.seen.values()), watch.seen  # no pod bound twice
        assert len(watch.seen) == 15
    finally:
        watch.close()
        for shard in SHARDS:
            cluster.sup.stop(f"caldera-scheduler-{shard}")
        admin = tenant.kube
        leases = admin.get(path(COORDINATION, "leases", "caldera-system"))["items"]
        for lease in leases:
            if lease["metadata"]["name"].startswith(LOCK):
                admin.delete(path(COORDINATION, "leases", "caldera-system", lease["metadata"]["name"]))
        for shard in SHARDS:
            try:
                admin.delete(path(VOLCANO_SHARD, "nodeshards", None, shard))
            except ApiError:
                pass
