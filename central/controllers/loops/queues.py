"""The Queue controller: Open / Closing / Closed from Commands, the cascade to child queues,
and the PodGroup counts in each Queue's status, by the pure `reconcile_queue`."""

from __future__ import annotations

from typing import Any

from central.controllers.loops.base import ControllerLoop, url_for
from central.kube.client import VOLCANO_BUS, VOLCANO_SCHEDULING, KubeClient, path
from central.kube.events import EventRecorder
from central.model.objects import QUEUE_CONTROLLER_FIELDS


class QueueController(ControllerLoop):
    """Queues: Open / Closing / Closed from Commands, the cascade to children, PodGroup counts."""

    name = "queue-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1):
        super().__init__(client, events, workers)
        from central.controllers.queues import reconcile_queue

        self.reconcile = reconcile_queue
        self.queues = self.watch(path(VOLCANO_SCHEDULING, "queues"), self._with_children)
        self.podgroups = self.watch(path(VOLCANO_SCHEDULING, "podgroups"),
                                    lambda pg: [(pg.get("spec") or {}).get("queue") or "default"])
        self.commands = self.watch(path(VOLCANO_BUS, "commands"), lambda c: [c["target"]["name"]] if (
            c.get("target") or {}).get("kind") == "Queue" else [])

    def _with_children(self, queue: dict[str, Any]) -> list[str]:
        name = queue["metadata"]["name"]
        children = [n for n, q in list(self.queues.objects.items()) if (q.get("spec") or {}).get("parent") == name]
        return [name, *children]

    def _write_own_status(self, name: str, status: dict[str, Any]) -> None:
        """The state and PodGroup counts alone, as a merge patch: the scheduler writes the rest
        of the status (allocated), and whole-status PUTs from both conflicted and could write
        back each other's stale values."""
        own = {k: v for k, v in status.items() if k in QUEUE_CONTROLLER_FIELDS}
        self.client.request("PATCH", url_for("Queue", None, name, "status"), body={"status": own},
                            content_type="application/merge-patch+json")

    def sync(self, key: str) -> float | None:
        queue = self.queues.objects.get(key)
        if queue is None:
            return None
        queues = dict(self.queues.objects)
        commands = list(self.commands.objects.values())
        d = self.reconcile(queue, queues, list(self.podgroups.objects.values()), commands)
        url = url_for("Queue", None, key)
        if d.annotations or d.spec_patch:
            patch: dict[str, Any] = {}
            if d.annotations:
                patch["metadata"] = {"annotations": d.annotations}
            if d.spec_patch:
                patch["spec"] = d.spec_patch
            queue = self.client.merge_patch(url, patch)
        if d.status_changed:
            self._write_own_status(key, d.status)
        for change in d.cascade:
            child = queues.get(change.name)
            if child is None:
                continue
            if change.annotations:
                child = self.client.merge_patch(url_for("Queue", None, change.name),
                                                {"metadata": {"annotations": change.annotations}})
            self._write_own_status(change.name, {"state": change.state})
            self.queue.add(change.name)
        for name in d.delete_commands:
            command = next((c for c in commands if c["metadata"]["name"] == name), None)
            if command is not None:
                self.delete("Command", command["metadata"].get("namespace"), name)
        return None
