"""The HyperNode controller: `status.nodeCount` of every HyperNode, kept current, and the
HyperNodes discovered from node labels (`central.controllers.hypernode_discovery`).

Any change to a Node or a HyperNode may move nodes between HyperNodes (labels, patterns,
members), so every change queues one key and one sync recounts them all
(`central.controllers.hypernodes.node_counts`, cheap next to the list it reads), writing the
statuses that differ. With discovery configured (the controllers' ConfigMap enables the
`label` source), the same changes and the ConfigMap's queue a second key, whose sync creates,
updates and deletes the discovered HyperNodes to match the nodes' labels.
"""

from __future__ import annotations

import logging

from central.controllers.hypernode_discovery import CONFIG_KEY, desired_hypernodes, discovered, parse_config, plan
from central.controllers.hypernodes import node_counts
from central.controllers.loops.base import ControllerLoop
from central.errors import InputError
from central.kube.client import CORE, VOLCANO_TOPOLOGY, ApiError, KubeClient, path
from central.kube.events import EventRecorder

log = logging.getLogger(__name__)

ALL = "hypernodes"  # the work key of the counts
DISCOVER = "discovery"  # the work key of label discovery


class HyperNodeController(ControllerLoop):
    name = "hypernode-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1,
                 discovery_config: tuple[str, str] | None = None):
        """`discovery_config`: (namespace, name) of the ConfigMap holding `volcano-controller.conf`."""
        super().__init__(client, events, workers)
        self.discovery_config = discovery_config
        extra = [DISCOVER] if discovery_config else []
        self.hypernodes = self.watch(path(VOLCANO_TOPOLOGY, "hypernodes"), lambda _: [ALL, *extra])
        self.nodes = self.watch(path(CORE, "nodes"), lambda _: ([ALL] if self.hypernodes.objects else []) + extra)
        if discovery_config is not None:
            namespace, name = discovery_config
            self.config = self.watch(path(CORE, "configmaps", namespace), lambda _: [DISCOVER],
                                     query={"fieldSelector": f"metadata.name={name}"})

    def sync(self, key: str) -> float | None:
        if key == DISCOVER:
            self._discover()
            return None
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

    def _discover(self) -> None:
        assert self.discovery_config is not None
        namespace, name = self.discovery_config
        config_map = self.config.objects.get(f"{namespace}/{name}")
        try:
            types = parse_config(str(((config_map or {}).get("data") or {}).get(CONFIG_KEY) or ""))
        except InputError as err:  # a bad config waits for the next edit; the discovered HyperNodes stay
            log.warning("%s: ConfigMap %s/%s, %s: %s", self.name, namespace, name, CONFIG_KEY, err)
            return
        if types is None:
            return
        existing = discovered(dict(self.hypernodes.objects))
        create, update, delete = plan(desired_hypernodes(types, self.nodes.objects.values(), existing), existing)
        collection = path(VOLCANO_TOPOLOGY, "hypernodes")
        for obj in create:
            try:
                self.client.request("POST", collection, body=obj)
            except ApiError as err:
                if err.code != 409:  # made by an earlier sync the watch has not shown yet
                    raise
        for obj in update:
            self.client.request("PUT", f"{collection}/{obj['metadata']['name']}", body=obj)
        for gone in delete:
            try:
                self.client.request("DELETE", f"{collection}/{gone}")
            except ApiError as err:
                if err.code != 404:
                    raise
        if create or update or delete:
            log.info("%s: label discovery created %d, updated %d, deleted %d HyperNodes",
                     self.name, len(create), len(update), len(delete))
