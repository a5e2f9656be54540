"""The sharding controller: each shard scheduler's NodeShard (`shard.volcano.sh/v1alpha1`).

The schedulers started with `--scheduler-sharding-mode=hard` each hold a Lease labelled with
their shard's name (`caldera.sh/scheduler-shard`) in the schedulers' Lease namespace. Any change
to a Node, such a Lease or a NodeShard queues one key; its sync judges which schedulers are
alive (a Lease that stopped changing for its duration, as observed here, or was released) and
writes `central.controllers.sharding.assign`'s answer: a live scheduler keeps its nodes, a dead
one's NodeShard is emptied and its nodes go to the others, new nodes to the emptiest shard.
Each write is conditional on the resourceVersion read. While any shard Lease exists the sync
runs again every second, so a scheduler that dies (whose Lease then stops changing) loses its
nodes within a lease duration and a second, with no other event needed.

Nodes are spread by count: this controller does not watch pods, so it has no utilisation to
weigh them by (`assign` would use it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from central.controllers.loops.base import ControllerLoop
from central.controllers.sharding import SHARD_LABEL, LeaseWatch, assign, nodes_desired, nodeshard
from central.kube.client import COORDINATION, CORE, VOLCANO_SHARD, ApiError, KubeClient, path
from central.kube.events import EventRecorder

log = logging.getLogger(__name__)

ALL = "nodeshards"
RESYNC = 1.0  # seconds between syncs while shard schedulers exist: a dead one's Lease sends no event


class ShardingController(ControllerLoop):
    name = "sharding-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, lease_namespace: str,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(client, events, workers=1)  # one writer: its assignments build on each other
        self.clock = clock
        self.leases_seen = LeaseWatch()
        self.leases = self.watch(path(COORDINATION, "leases", lease_namespace), lambda _: [ALL],
                                 query={"labelSelector": SHARD_LABEL})
        self.shards = self.watch(path(VOLCANO_SHARD, "nodeshards"), lambda _: [ALL])
        self.nodes = self.watch(path(CORE, "nodes"), lambda _: [ALL] if self.leases.objects else [])
        self.moves = 0  # nodes given to another shard than they had

    def sync(self, key: str) -> float | None:
        leases = list(self.leases.objects.values())
        live = self.leases_seen.observe_leases(leases, self.clock())
        shards = dict(self.shards.objects)
        current = {name: sorted(nodes_desired(obj) or ()) for name, obj in shards.items()}
        nodes: dict[str, float | None] = {name: None for name in self.nodes.objects}
        wanted = assign(nodes, live, current)
        collection = path(VOLCANO_SHARD, "nodeshards")
        failed: ApiError | None = None
        for name in sorted(set(shards) | set(wanted)):
            desired = wanted.get(name, [])  # a dead scheduler's shard is emptied, not deleted
            obj = shards.get(name)
            if obj is not None and current[name] == desired:
                continue
            self.moves += len(set(desired) - set(current.get(name, ())))
            try:
                if obj is None:
                    self.client.request("POST", collection, body=nodeshard(name, desired))
                else:
                    self.client.request("PUT", f"{collection}/{name}",
                                        body=dict(obj, spec=dict(obj.get("spec") or {}, nodesDesired=desired)))
                log.info("%s: NodeShard %s: %d node(s)%s", self.name, name, len(desired),
                         "" if name in live else " (its scheduler is not alive)")
            except ApiError as err:  # 409: the watch is behind; the retry reads again
                log.warning("%s: NodeShard %s: %s", self.name, name, err)
                failed = failed or err
        if failed is not None:
            raise failed
        return RESYNC if leases or shards else None
