"""The PodGroup controller: a PodGroup for every plain pod of our schedulers, by the pure
`podgroup_for_pod`, and none left for a ReplicaSet or StatefulSet scaled to 0
(`podgroup_of_idle_owner`). Keys are pods' `<namespace>/<name>` and owners' `<Kind>:<namespace>/<name>`."""

from __future__ import annotations

from typing import Any

from central.controllers.loops.base import ControllerLoop
from central.controllers.podgroups import podgroup_for_pod, podgroup_of_idle_owner
from central.kube.client import CORE, KubeClient, path
from central.kube.events import EventRecorder
from central.kube.informer import object_key
from central.model.parse import GROUP_NAME

OWNER_URLS = {"ReplicaSet": ("/apis/apps/v1", "replicasets"), "StatefulSet": ("/apis/apps/v1", "statefulsets"),
              "Deployment": ("/apis/apps/v1", "deployments"), "Job": ("/apis/batch/v1", "jobs")}


class PodGroupController(ControllerLoop):
    """A PodGroup for every plain pod of our schedulers (Deployments, StatefulSets, bare pods)."""

    name = "podgroup-controller"

    def __init__(self, client: KubeClient, events: EventRecorder, workers: int = 1,
                 scheduler_names: tuple[str, ...] = ("volcano",)):
        super().__init__(client, events, workers)
        self.decide = podgroup_for_pod
        self.scheduler_names = scheduler_names
        self.pods = self.watch(path(CORE, "pods"), self._ungrouped)
        self.owners = {kind: self.watch(path("/apis/apps/v1", plural), self._idle(kind))
                       for kind, plural in (("ReplicaSet", "replicasets"), ("StatefulSet", "statefulsets"))}

    def _idle(self, kind: str) -> Any:
        def keys(owner: dict[str, Any]) -> list[str]:
            spec = owner.get("spec") or {}
            return [f"{kind}:{object_key(owner)}"] if spec.get("replicas", 1) == 0 else []
        return keys

    def _ungrouped(self, pod: dict[str, Any]) -> list[str]:
        annotations = pod["metadata"].get("annotations") or {}
        if (pod.get("spec") or {}).get("schedulerName") in self.scheduler_names \
                and GROUP_NAME not in annotations and object_key(pod) in self.pods.objects:
            return [object_key(pod)]
        return []

    def sync(self, key: str) -> float | None:
        kind, colon, owner_key = key.partition(":")
        if colon:
            owner = self.owners[kind].objects.get(owner_key)
            name = podgroup_of_idle_owner(dict(owner, kind=kind)) if owner is not None else None
            if name is not None:
                self.delete("PodGroup", owner_key.split("/", 1)[0], name)
            return None
        pod = self.pods.objects.get(key)
        if pod is None:
            return None
        d = self.decide(pod, self._owner(pod), self.scheduler_names)
        if d is None:
            return None
        self.create(d.podgroup)
        namespace, name = key.split("/", 1)
        self.client.merge_patch(path(CORE, "pods", namespace, name), {"metadata": {"annotations": d.pod_annotations}})
        return None

    def _owner(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod's controller (its group-min-member annotation sets the gang size)."""
        ref = next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None or ref.get("kind") not in OWNER_URLS:
            return None
        prefix, plural = OWNER_URLS[ref["kind"]]
        return self.client.get_or_none(path(prefix, plural, pod["metadata"].get("namespace"), ref["name"]))
