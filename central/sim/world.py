"""The simulated cluster of `caldera simulate --until`: API objects, controller loops, kubelets.

It plays, in one process and with no threads, the parts a real cluster has around the
scheduler, calling the very functions those parts call on a cluster:
- the API server: Jobs, PodGroups, Pods, Queues and Commands as dicts, each change fed to
  the scheduler's `ClusterCache` as its informers would feed it;
- the job, PodGroup and queue controllers (`central.controllers`), and those of CronJobs and
  JobFlows (`central.sim.workflows`), run until they have nothing left to do after every
  change, with no latency (a `requeue_after` becomes a timer);
- the scheduler's sink: binds, evictions and status writes land on the objects;
- the kubelets (`central.sim.kubelet`): bound pods run at once and finish when their work is
  done; evicted pods are gone once the controllers have seen them terminating.
The clock is the caller's (`central.sim.timeline`): every method takes `now` in seconds from
the start, and the controllers see `epoch0 + now`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from central.controllers.job_policies import format_time
from central.controllers.jobs import FINISHED, reconcile
from central.controllers.podgroups import podgroup_for_pod
from central.controllers.queues import reconcile_queue, subtree
from central.model import podlife
from central.model.cache import ClusterCache
from central.model.dra import DeviceClaimWrite
from central.model.objects import TaskStatus
from central.model.parse import GROUP_NAME
from central.model.schedulinggate import without_queue_gate
from central.model.volumes import ClaimBinding
from central.sim.kubelet import Kubelets
from central.sim.workflows import KINDS as WORKFLOW_KINDS
from central.sim.workflows import WAKE, Workflows

ENDED = FINISHED | {"Aborted"}
MAX_ROUNDS = 100  # controller passes per instant; more means two controllers fight


def _queue_of(podgroup: dict[str, Any]) -> str:
    return str((podgroup.get("spec") or {}).get("queue") or "default")


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


class World:
    def __init__(self, cache: ClusterCache, epoch0: float, on_timer: Callable[[float, str], None]):
        self.cache = cache
        self.epoch0 = epoch0
        self.on_timer = on_timer  # (when, job key): the job controller asked to look again then
        self.jobs: dict[str, dict[str, Any]] = {}
        self.podgroups: dict[str, dict[str, Any]] = {}
        self.podgroups_in: dict[str, dict[str, dict[str, Any]]] = {}  # queue -> its PodGroups, by key
        self.pods: dict[str, dict[str, Any]] = {}
        self.queues: dict[str, dict[str, Any]] = {}
        self.commands: dict[str, dict[str, Any]] = {}
        self.pods_of: dict[str, set[str]] = {}  # group key (= Volcano Job key) -> pod keys
        self.dirty_jobs: set[str] = set()
        self.dirty_queues: set[str] = set()
        self.deleting: set[str] = set()  # evicted pods, gone at the end of the instant
        self.retiring: set[str] = set()  # finished jobs, to remove once their pods have stopped
        self.changed = True  # something the scheduler sees changed since its last cycle
        self.job_phases: dict[str, list[tuple[float, str]]] = {}  # job key -> (time, phase) changes
        self.queue_of: dict[str, str] = {}  # job key -> queue
        self.kubelets = Kubelets()
        self.queue_alloc: dict[str, dict[str, float]] = {}  # queue -> requests of its running pods
        self._charged: dict[str, tuple[str, tuple[tuple[str, float], ...]]] = {}  # pod -> (queue, requests)
        self.workflows = Workflows(self)
        self.workflows_due = False  # a job changed phase, a workflow object arrived, or a schedule fell due

    # --- arrivals ----------------------------------------------------------------------------

    def submit(self, obj: dict[str, Any], now: float) -> None:
        """A user creates `obj` (a Job, PodGroup, Pod, Queue or Command) at `now`."""
        kind, key = obj["kind"], key_of(obj)
        obj.setdefault("metadata", {}).setdefault("creationTimestamp", format_time(self.epoch0 + now))
        if kind == "Job":
            self.jobs[key] = obj
            self.queue_of[key] = str(obj["spec"].get("queue") or "default")
            self._phase(key, "Pending", now)
            self.dirty_jobs.add(key)
        elif kind == "PodGroup":
            self._put_podgroup(obj, now)
        elif kind == "Pod":
            self._put_pod(obj, now)
        elif kind == "Queue":
            self.queues[obj["metadata"]["name"]] = obj
            self.cache.apply(obj)
            self.dirty_queues.add(obj["metadata"]["name"])
        elif kind in WORKFLOW_KINDS:
            self.workflows.submit(obj)
            self.workflows_due = True
        elif kind == "Command":
            self.commands[key] = obj
            target = obj.get("target") or {}
            if target.get("kind") == "Queue":
                self.dirty_queues.add(str(target.get("name")))
            else:
                self.dirty_jobs.add(f"{key.split('/')[0]}/{target.get('name')}")
        self.changed = True

    def _put_podgroup(self, pg: dict[str, Any], now: float) -> None:
        key = key_of(pg)
        owned = any(o.get("kind") == "Job" and str(o.get("apiVersion", "")).startswith("batch.volcano.sh/")
                    for o in pg["metadata"].get("ownerReferences") or [])  # a Volcano Job's: its controller's
        if key not in self.podgroups and not owned:
            self.queue_of[key] = str((pg.get("spec") or {}).get("queue") or "default")
            self._phase(key, "Pending", now)
        self._unlist_podgroup(key)
        self.podgroups[key] = pg
        self.podgroups_in.setdefault(_queue_of(pg), {})[key] = pg
        self.cache.apply(pg)

    def _unlist_podgroup(self, key: str) -> None:
        old = self.podgroups.get(key)
        if old is not None:
            self.podgroups_in[_queue_of(old)].pop(key, None)

    def _put_pod(self, pod: dict[str, Any], now: float) -> None:
        meta = pod["metadata"]
        meta.setdefault("namespace", "default")
        meta.setdefault("uid", f"{meta['namespace']}-{meta['name']}")
        decision = podgroup_for_pod(pod, None, (self.cache.scheduler_name,))
        if decision is not None:  # the PodGroup controller groups a plain pod before the scheduler sees it
            if key_of(decision.podgroup) not in self.podgroups:
                self._put_podgroup(decision.podgroup, now)
            meta.setdefault("annotations", {}).update(decision.pod_annotations)
        key = key_of(pod)
        self.pods[key] = pod
        group = (meta.get("annotations") or {}).get(GROUP_NAME)
        if group:
            self.pods_of.setdefault(f"{meta['namespace']}/{group}", set()).add(key)
        self.cache.apply(pod)

    # --- the controllers -----------------------------------------------------------------------

    def settle(self, now: float) -> None:
        """Run the controllers until none has anything left to do."""
        for _ in range(MAX_ROUNDS):
            if not (self.dirty_jobs or self.dirty_queues):
                if not self.workflows_due:
                    return
                self.workflows_due = False
                self.workflows.sync(now)  # the Jobs it starts are dirty: another pass
                continue
            jobs, self.dirty_jobs = sorted(self.dirty_jobs), set()
            for key in jobs:
                if key in self.jobs:
                    self._sync_job(key, now)
            queues, self.dirty_queues = sorted(self.dirty_queues), set()
            for name in queues:
                if name in self.queues:
                    self._sync_queue(name)
        raise RuntimeError(f"controllers did not settle after {MAX_ROUNDS} passes: {sorted(self.dirty_jobs)[:5]}")

    def _sync_job(self, key: str, now: float) -> None:
        job = self.jobs[key]
        namespace = key.split("/", 1)[0]
        pods = [self.pods[k] for k in sorted(self.pods_of.get(key, ()))]
        commands = [c for k, c in self.commands.items() if k.startswith(namespace + "/")]
        # The world keys a job's PodGroup, pods and phases by the job's name, so its PodGroup keeps
        # that name (as Volcano's before 1.5): the controller names it `<job>-<uid>` only given a uid.
        unnamed = {**job, "metadata": {k: v for k, v in job["metadata"].items() if k != "uid"}}
        d = reconcile(unnamed, self.podgroups.get(key), pods, self.epoch0 + now, commands)
        for name in d.delete_commands:
            self.commands.pop(f"{namespace}/{name}", None)
        if d.delete_podgroup:
            self._delete_podgroup(f"{namespace}/{d.delete_podgroup}")
        if d.create_podgroup is not None and key not in self.podgroups:
            self._put_podgroup(d.create_podgroup, now)
        if d.update_podgroup and key in self.podgroups:
            self.podgroups[key]["spec"].update(d.update_podgroup)
            self.cache.apply(self.podgroups[key])
        for name in d.delete_pods:
            self.delete_pod(f"{namespace}/{name}", now)
        for pod in d.create_pods:
            self._put_pod(pod, now)
        if d.status_changed:
            job["status"] = d.status
            self._phase(key, str((d.status.get("state") or {}).get("phase") or "Pending"), now)
        if d.delete_job:
            del self.jobs[key]
        if d.requeue_after == 0.0:
            self.dirty_jobs.add(key)
        elif d.requeue_after is not None:
            self.on_timer(now + d.requeue_after, key)
        self.changed = self.changed or bool(d.create_pods or d.delete_pods or d.create_podgroup or d.delete_podgroup)

    def _sync_queue(self, name: str) -> None:
        queue = self.queues[name]
        podgroups = [pg for member in subtree(name, self.queues) for pg in self.podgroups_in.get(member, {}).values()]
        d = reconcile_queue(queue, self.queues, podgroups, list(self.commands.values()))
        for command in d.delete_commands:
            self.commands = {k: c for k, c in self.commands.items() if c["metadata"]["name"] != command}
        if d.annotations:
            annotations = queue["metadata"].setdefault("annotations", {})
            for k, v in d.annotations.items():
                annotations.pop(k, None) if v is None else annotations.__setitem__(k, v)
        if d.spec_patch:
            queue.setdefault("spec", {}).update(d.spec_patch)
        if d.status_changed:
            queue["status"] = d.status
        for change in d.cascade:
            child = self.queues.get(change.name)
            if child is not None:
                child.setdefault("status", {})["state"] = change.state
                notes = child["metadata"].setdefault("annotations", {})
                for k, v in change.annotations.items():
                    notes.pop(k, None) if v is None else notes.__setitem__(k, v)
                self.cache.apply(child)
                self.dirty_queues.add(change.name)
        if d.status_changed or d.annotations or d.spec_patch:
            self.cache.apply(queue)
            self.changed = True

    def _delete_podgroup(self, key: str) -> None:
        self._unlist_podgroup(key)
        pg = self.podgroups.pop(key, None)
        if pg is not None:
            self.cache.delete("PodGroup", pg["metadata"].get("namespace"), pg["metadata"]["name"])

    def wake(self, key: str) -> None:
        """A timer fell due: a job controller's requeue, or the CronJobs' next schedule time."""
        if key == WAKE:
            self.workflows_due = True
        else:
            self.dirty_jobs.add(key)

    def delete_job(self, key: str, now: float) -> None:
        """A user or a controller deletes the Job: its pods and PodGroup go with it (garbage
        collection); one that had not finished ends as Terminated."""
        for pod in sorted(self.pods_of.pop(key, ())):
            self.delete_pod(pod, now)
        self._delete_podgroup(key)
        if self.jobs.pop(key, None) is not None and self.job_phase(key) not in ENDED:
            self._phase(key, "Terminated", now)
        self.retiring.discard(key)
        self.dirty_jobs.discard(key)
        self.changed = True

    def _phase(self, key: str, phase: str, now: float) -> None:
        history = self.job_phases.setdefault(key, [])
        if not history or history[-1][1] != phase:
            history.append((now, phase))
            self.workflows_due = self.workflows_due or bool(self.workflows.cronjobs or self.workflows.jobflows)
        if phase in FINISHED:
            self.retiring.add(key)

    def retire(self, now: float) -> None:
        """Finished jobs leave the cluster, as with ttlSecondsAfterFinished: 0, so that a week of
        history does not weigh on every later cycle; their record stays in `job_phases`."""
        for key in sorted(self.retiring):
            pods = self.pods_of.get(key, ())
            if any(self.pods[p].get("status", {}).get("phase") in ("Running", "Pending") for p in pods):
                continue  # a job completed by policy still has pods terminating: next time
            self.retiring.discard(key)
            for pod in sorted(self.pods_of.pop(key, ())):
                self.delete_pod(pod, now)
            self._delete_podgroup(key)
            job = self.jobs.pop(key, None)
            if job is not None and self.workflows.keeps(job):
                self.workflows.retired[key] = job
            self.dirty_jobs.discard(key)

    # --- the kubelets --------------------------------------------------------------------------

    def start_pod(self, key: str, node: str, annotations: dict[str, str], now: float) -> None:
        """The scheduler bound the pod: it runs on `node` from now on."""
        pod = self.pods[key]
        pod["spec"]["nodeName"] = node
        pod["metadata"].setdefault("annotations", {}).update(annotations)
        started = format_time(self.epoch0 + now)
        pod["status"] = {"phase": "Running", "startTime": started,  # PodScheduled: the cdp plugin's cooldown start
                         "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": started}]}
        task = self.cache.tasks[key]
        task.annotations.update(annotations)
        task.scheduled_at = started
        self.cache.set_status(task, TaskStatus.RUNNING, node)
        job = self.cache.jobs.get(task.job_uid)
        self._charge(key, (job.queue if job else "default", task.template.resreq))
        group = f"{task.namespace}/{pod['metadata']['annotations'].get(GROUP_NAME)}"
        self.kubelets.start(key, group, self._needs(pod, group), node, podlife.pod_lifetime(pod).seconds,
                            podlife.cross_node_slowdown(pod), now)
        if group in self.jobs:  # the scheduler's own binds give it nothing new to decide: no `changed`
            self.dirty_jobs.add(group)

    def _charge(self, key: str, charge: tuple[str, tuple[tuple[str, float], ...]] | None) -> None:
        """Start (or with None, stop) counting a running pod's requests to its queue."""
        old = self._charged.pop(key, None)
        for charged, sign in ((old, -1.0), (charge, 1.0)):
            if charged is None:
                continue
            queue, requests = charged
            tally = self.queue_alloc.setdefault(queue, {})
            for name, value in requests:
                tally[name] = tally.get(name, 0.0) + sign * value
        if charge is not None:
            self._charged[key] = charge

    def _needs(self, pod: dict[str, Any], group: str) -> int:
        """N of the progress model: min-peers on the pod, its Job or its PodGroup; else minAvailable."""
        for obj in (pod, self.jobs.get(group), self.podgroups.get(group)):
            found = podlife.min_peers(obj) if obj is not None else None
            if found is not None:
                return found
        job = self.cache.jobs.get(group)
        return job.min_available if job is not None else 1

    def finish_pod(self, key: str, now: float) -> None:
        """The pod's work is done: it exits with its exit code."""
        pod = self.pods[key]
        code = podlife.pod_lifetime(pod).exit_code
        pod["status"] = {**pod["status"], "phase": "Succeeded" if code == 0 else "Failed", "containerStatuses": [
            {"name": "main", "restartCount": 0,
             "state": {"terminated": {"exitCode": code, "finishedAt": format_time(self.epoch0 + now)}}}]}
        task = self.cache.tasks[key]
        self.cache.set_status(task, TaskStatus.SUCCEEDED if code == 0 else TaskStatus.FAILED, task.node)
        self.kubelets.stop(key, now, succeeded=code == 0)
        self._charge(key, None)
        self._touch_owner(pod)
        self._settle_plain_group(key, now)

    def evict_pod(self, key: str, now: float) -> None:
        """Eviction: the pod terminates (DisruptionTarget), and is gone at the end of the instant."""
        pod = self.pods.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        pod["metadata"]["deletionTimestamp"] = format_time(self.epoch0 + now)
        conditions = pod.setdefault("status", {}).setdefault("conditions", [])
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"})
        task = self.cache.tasks[key]
        self.cache.set_status(task, TaskStatus.RELEASING, task.node)
        self.deleting.add(key)
        self.kubelets.stop(key, now)
        self._charge(key, None)
        self._touch_owner(pod)

    def reap(self, now: float) -> None:
        """Terminating pods are gone."""
        for key in sorted(self.deleting):
            self.delete_pod(key, now)
        self.deleting.clear()

    def delete_pod(self, key: str, now: float) -> None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.kubelets.remove(key, now)
        self._charge(key, None)
        meta = pod["metadata"]
        self.cache.delete("Pod", meta["namespace"], meta["name"])
        group = (meta.get("annotations") or {}).get(GROUP_NAME)
        if group:
            self.pods_of.get(f"{meta['namespace']}/{group}", set()).discard(key)
        self._touch_owner(pod)

    def _touch_owner(self, pod: dict[str, Any]) -> None:
        self.changed = True
        meta = pod["metadata"]
        group = (meta.get("annotations") or {}).get(GROUP_NAME)
        if group and f"{meta['namespace']}/{group}" in self.jobs:
            self.dirty_jobs.add(f"{meta['namespace']}/{group}")

    def _settle_plain_group(self, key: str, now: float) -> None:
        """A PodGroup of plain pods ends when all its pods have: Completed, or Failed if one failed."""
        meta = self.pods[key]["metadata"]
        group = f"{meta['namespace']}/{(meta.get('annotations') or {}).get(GROUP_NAME)}"
        if group in self.jobs or group not in self.job_phases:
            return
        phases = [(self.pods[k].get("status") or {}).get("phase") for k in self.pods_of.get(group, ())]
        if all(p in ("Succeeded", "Failed") for p in phases):
            self._phase(group, "Failed" if "Failed" in phases else "Completed", now)

    # --- the scheduler's sink ------------------------------------------------------------------

    def sink(self, now: float) -> "WorldSink":
        return WorldSink(self, now)

    def job_phase(self, key: str) -> str:
        history = self.job_phases.get(key)
        return history[-1][1] if history else "Pending"


class WorldSink:
    """Where a cycle's decisions go in the simulated cluster (a `ClusterSink`)."""

    def __init__(self, world: World, now: float):
        self.world, self.now = world, now
        self._annotations: dict[str, dict[str, str]] = {}

    def annotate(self, pod_key: str, annotations: dict[str, str]) -> None:
        self._annotations[pod_key] = annotations

    def bind_claims(self, pod_key: str, bindings: tuple[ClaimBinding, ...]) -> None:
        """Never called: the simulator reads no storage objects (its manifests skip them), so
        volume binding is off in its sessions."""

    def reserve_device_claims(self, pod_key: str, writes: tuple[DeviceClaimWrite, ...]) -> None:
        """Not kept: the simulated cluster keeps no claim status between sessions (a session
        still allocates its own claims without overlap; see docs/dra.md)."""

    def bind(self, pod_key: str, node: str) -> None:
        self.world.start_pod(pod_key, node, self._annotations.pop(pod_key, {}), self.now)

    def nominate(self, pod_key: str, node: str) -> None:
        pod = self.world.pods.get(pod_key)
        if pod is not None:
            pod.setdefault("status", {})["nominatedNodeName"] = node

    def evict(self, pod_key: str, reason: str) -> None:
        self.world.evict_pod(pod_key, self.now)

    def remove_queue_gate(self, pod_key: str) -> None:
        pod = self.world.pods.get(pod_key)
        task = self.world.cache.tasks.get(pod_key)
        if pod is None or task is None:
            return
        pod["spec"]["schedulingGates"] = [{"name": g} for g in without_queue_gate(task.scheduling_gates)]
        task.scheduling_gates = without_queue_gate(task.scheduling_gates)

    def update_podgroup_status(self, podgroup_key: str, status: dict[str, Any]) -> None:
        pg = self.world.podgroups.get(podgroup_key)
        if pg is None:
            return
        pg["status"] = status
        if podgroup_key in self.world.jobs:
            self.world.dirty_jobs.add(podgroup_key)
        elif status["phase"] == "Running" and self.world.job_phase(podgroup_key) in ("Pending", "Inqueue"):
            self.world._phase(podgroup_key, "Running", self.now)
        self.world.dirty_queues.add(str((pg.get("spec") or {}).get("queue") or "default"))

    def update_queue_status(self, queue_name: str, status: dict[str, Any]) -> None:
        queue = self.world.queues.get(queue_name)
        if queue is not None:
            queue["status"] = {**(queue.get("status") or {}), "allocated": status.get("allocated", {})}

    def annotate_queue(self, queue_name: str, annotations: dict[str, str]) -> None:
        queue = self.world.queues.get(queue_name)
        if queue is not None:
            meta = queue.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}

    def publish_node_resources(self, node: str, resources: dict[str, str]) -> None:
        pass  # the agents' reports are static in a simulation

