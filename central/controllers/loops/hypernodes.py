"""The HyperNode controller: `status.nodeCount` of every HyperNode, kept current.

Any change to a Node or a HyperNode may move nodes between HyperNodes (labels, patterns,
members), so every change queues one key and one sync recounts them all
(`central.controllers.hypernodes.node_counts`, cheap next to the list it reads), writing the
statuses that differ.
"""

from __future__ import annotations

import logging

from central.controllers.hypernodes import node_counts
from central.controllers.loops.base import ControllerLoop
from central.kube.client import CORE, VOLCANO_TOPOLOGY, ApiError, KubeClient, path
from central.kube.events import EventRecorder

log = logging.getLogger(__name__)

ALL = "hypernodes"  # the one work key


class HyperNodeController(ControllerLoop):
    name = "hypernode-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1):
        super().__init__(client, events, workers)
        self.hypernodes = self.watch(path(VOLCANO_TOPOLOGY, "hypernodes"), lambda _: [ALL])
        self.nodes = self.watch(path(CORE, "nodes"), lambda _: [ALL] if self.hypernodes.objects else [])

    def sync(self, key: str) -> float | None:
        hypernodes = dict(self.hypernodes.objects)
        counts = node_counts(hypernodes.values(), list(self.nodes.objects.values()))
        failed: ApiError | None = None
        for name, count in sorted(counts.items()):
            obj = hypernodes[name]
            status = dict(obj.get("status") or {})
            if status.get("nodeCount") != count:
                status["nodeCount"] = count
                try:
                    self.client.request("PUT", path(VOLCANO_TOPOLOGY, "hypernodes", None, name, "status"),
                                        body=dict(obj, status=status))
                except ApiError as err:  # the others are still written; the retry recounts them all
                    log.warning("%s: status of HyperNode %s: %s", self.name, name, err)
                    failed = failed or err
        if failed is not None:
            raise failed
        return None
