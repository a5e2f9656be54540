"""Two active schedulers on a real kube-apiserver, each on its own NodeShard: every pod bound
once, each gang on one shard, cluster-wide work from the leader Lease's holder alone."""

from __future__ import annotations

import threading

from central.controllers.sharding import SHARD_LABEL, nodeshard
from central.framework.conf import DEFAULT_CONF_YAML
from central.kube.client import VOLCANO_SHARD, path
from central.kube.leader import LeaderElector
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from central.scheduler.shardowner import OWNER_ANNOTATION
from central.scheduler.shards import ClusterLeader, Sharding, shard_lease_name
from tests.builders import node, pod, podgroup
from tests.waiting import eventually

PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
SHARDS = {"a": ["n1", "n2"], "b": ["n3", "n4"]}


def shard_scheduler(real, shard: str) -> Scheduler:
    def elector(name: str, **labels: str) -> LeaderElector:
        return LeaderElector(real.kube.fork(), real.namespace, name, f"test_{shard}", lease_duration=3.0,
                             renew_deadline=2.0, retry_period=0.2, labels=labels or None)
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    return Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=0.05, bind_backoff=(0.01, 0.05),
                     elector=elector(shard_lease_name("vc-scheduler", shard), **{SHARD_LABEL: shard}),
                     sharding=Sharding(shard, ClusterLeader(elector("vc-scheduler"))), lease_namespace=real.namespace)


def test_two_shard_schedulers_bind_every_pod_once_and_never_split_a_gang(real):
    for nodes in SHARDS.values():
        for name in nodes:
            real.put(node(name, cpu="4", pods=20))
    for shard, nodes in SHARDS.items():
        real.admin.create(path(VOLCANO_SHARD, "nodeshards"), nodeshard(shard, nodes))
    gangs = {}
    for i in range(4):  # 12 of the 16 cores: a shard holds two gangs, never three
        real.put(podgroup(f"g{i}", min_member=3))
        gangs[f"g{i}"] = [f"g{i}-{k}" for k in range(3)]
        for name in gangs[f"g{i}"]:
            real.put(pod(name, group=f"g{i}", cpu="1"))
    plain = [f"p{k}" for k in range(8)]
    for name in plain:
        real.put(pod(name, cpu="250m"))
    schedulers = [shard_scheduler(real, shard) for shard in SHARDS]
    stop = threading.Event()
    threads = [threading.Thread(target=s.run, args=(stop,), daemon=True) for s in schedulers]
    for thread in threads:
        thread.start()
    everyone = [name for names in gangs.values() for name in names] + plain
    try:
        eventually(lambda: all(real.pod(name)["spec"].get("nodeName") for name in everyone), timeout=60,
                   what="every pod bound")
        eventually(lambda: not any(OWNER_ANNOTATION in (real.get(*PODGROUP, g)["metadata"].get("annotations") or {})
                                   for g in gangs), timeout=30, what="every gang's claim released")
        for scheduler in schedulers:
            scheduler.sink.drain()
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    shard_of = {n: shard for shard, nodes in SHARDS.items() for n in nodes}
    for group, names in gangs.items():
        assert len({shard_of[real.pod(name)["spec"]["nodeName"]] for name in names}) == 1, group
    # each bind the API server accepted, counted by the replica that sent it: one per pod
    assert sum(s.sink.counts["bind"] for s in schedulers) == len(everyone)
    assert sum(s.sharding.claims_won for s in schedulers if s.sharding) >= len(gangs)
    # the Inqueue status that let the gangs be allocated came from the one leader's enqueue
    assert all(real.get(*PODGROUP, g)["status"]["phase"] == "Running" for g in gangs)
