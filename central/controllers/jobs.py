"""The Volcano Job (batch.volcano.sh/v1alpha1) controller as one pure function.

    reconcile(job, podgroup, pods, now, commands=()) -> JobDecision

`job` is the Job as the API returns it (admission has applied the defaults), `podgroup` its
PodGroup or None, `pods` the pods it owns, `now` epoch seconds, `commands` the bus Commands
in its namespace (only those targeting this job are used). The loop applies the decision:
- `create_podgroup` / `delete_podgroup` / `update_podgroup` (a patch of spec after a scale);
- `create_pods` / `delete_pods`; `create_objects` (PVCs, plugin Services, ConfigMaps, Secrets,
  NetworkPolicies; AlreadyExists is fine), `update_objects` (replace), `delete_objects`;
- `status` when `status_changed`; `delete_commands` (consumed); `delete_job` (TTL expired);
- `events` as Kubernetes Events on the job; call again after `requeue_after` seconds when
  set (a policy timeout or the TTL falls due then; 0 after a phase change).
Calling it again with the same inputs returns the same decision (a new ssh key aside), so a
lost write is simply redone.

The state machine (Volcano's `job/state`): one step per call.
- Pending: create the job's PVCs, plugin objects and PodGroup; once the PodGroup has left
  Pending (Inqueue), create the missing pods (a task with dependsOn waits until the tasks it names
  have minAvailable pods running or succeeded) and delete pods beyond `replicas`.
  -> Running when minAvailable <= running + succeeded + failed.
- Running: same sync. -> Completed once minSuccess pods succeeded; when every pod finished,
  -> Completed if enough succeeded (minAvailable, minSuccess, and each task's minAvailable when
  the job needs all its pods), else Failed; -> Pending when more pods are pending than the
  gang can spare (pending > replicas - minAvailable).
- Actions, from a Command (it wins) or from the lifecycle policies (job_policies.py), in
  Pending or Running: RestartJob (delete every pod and the PodGroup, new version), RestartTask
  (the task's pods), RestartPod (the pod) -> Restarting with retryCount + 1; AbortJob ->
  Aborting, CompleteJob -> Completing, TerminateJob -> Terminating (each deletes the pods that
  have not finished, the PodGroup and the plugin objects).
- Restarting: -> Failed when retryCount >= maxRetry; else deletes pods of older versions and
  -> Pending once replicas - terminating >= minAvailable.
- Aborting / Completing / Terminating: -> Aborted / Completed / Terminated once no pod is
  pending, running or terminating. Aborting or Aborted + ResumeJob -> Restarting with a new
  version. Unlike Volcano, resuming does not count as a retry (vo#5385: suspend/resume three
  times must not fail a job).
- Completed / Terminated / Failed: finished; the job is deleted `ttlSecondsAfterFinished`
  after the transition.
Pods are built by `central.model.jobs.expand_job` and edited by the job plugins.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from central.controllers import bus
from central.controllers.job_policies import (
    JOB_VERSION,
    Trigger,
    format_time,
    is_ready,
    is_terminating,
    parse_time,
    pod_index,
    pod_phase,
    pod_task,
    pod_version,
    triggers,
)
from central.controllers.job_volumes import claims, claims_to_create, mount_claims
from central.controllers.plugins import apply_plugins, build_plugins, deleted_objects, job_objects, updated_objects
from central.errors import InputError
from central.model.jobs import DEFAULT_LIMITS, JobLimits, expand_job

PENDING, RUNNING, RESTARTING = "Pending", "Running", "Restarting"
COMPLETING, COMPLETED, ABORTING, ABORTED = "Completing", "Completed", "Aborting", "Aborted"
TERMINATING, TERMINATED, FAILED = "Terminating", "Terminated", "Failed"
FINISHED = frozenset({COMPLETED, TERMINATED, FAILED})  # TTL applies
KILLING = {ABORTING: ABORTED, COMPLETING: COMPLETED, TERMINATING: TERMINATED}
KILL_ACTIONS = {bus.ABORT_JOB: ABORTING, bus.COMPLETE_JOB: COMPLETING, bus.TERMINATE_JOB: TERMINATING}
RESTART_ACTIONS = frozenset({bus.RESTART_JOB, bus.RESTART_TASK, bus.RESTART_POD})
DEFAULT_MAX_RETRY = 3
MAX_CONDITIONS = 20
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
RESIZED_PODGROUP_FIELDS = ("minMember", "minTaskMember", "minResources", "priorityClassName")


@dataclass
class JobDecision:
    status: dict[str, Any] = field(default_factory=dict)  # the job's whole new status
    status_changed: bool = False
    create_podgroup: dict[str, Any] | None = None
    delete_podgroup: str | None = None
    update_podgroup: dict[str, Any] | None = None  # new spec fields (RESIZED_PODGROUP_FIELDS; None: remove)
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    create_objects: list[dict[str, Any]] = field(
        default_factory=list
    )  # PVCs; plugin Services, ConfigMaps, Secrets, ...
    update_objects: list[dict[str, Any]] = field(default_factory=list)  # to replace (svc hosts after a scale)
    delete_objects: list[tuple[str, str]] = field(default_factory=list)  # (kind, name)
    delete_commands: list[str] = field(default_factory=list)
    delete_job: bool = False
    requeue_after: float | None = None
    events: list[tuple[str, str]] = field(default_factory=list)  # (reason, message) for Kubernetes Events


def reconcile(
    job: Mapping[str, Any],
    podgroup: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]],
    now: float,
    commands: Iterable[Mapping[str, Any]] = (),
    action: str | None = None,
    limits: JobLimits = DEFAULT_LIMITS,
) -> JobDecision:
    """`action`, when given, is executed instead of a Command's: the loop's TerminateJob once a
    job failed MAX_REQUEUE times (Volcano's max-requeue-num), so it stops instead of retrying.
    `limits` are the admission webhook's (the same flags): a job beyond them is InvalidJob."""
    step = _Step(job, podgroup, pods, now, limits)
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return step.finish(job.get("status") or {})  # being deleted: the garbage collector removes what it owns
    if action is None:
        mine = bus.commands_for(list(commands), "Job", step.name)
        if mine:
            step.decision.delete_commands.append(str(mine[0]["metadata"]["name"]))
            action = str(mine[0].get("action"))
    try:
        step.run(action)
    except InputError as err:  # only a job that bypassed admission gets here
        step.decision = JobDecision(delete_commands=step.decision.delete_commands)
        step.status.setdefault("state", {}).update(reason="InvalidJob", message=str(err))
        step.decision.events.append(("InvalidJob", str(err)))
    return step.finish(job.get("status") or {})


class _Step:
    def __init__(
        self, job: Mapping[str, Any], podgroup: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], now: float,
        limits: JobLimits = DEFAULT_LIMITS,
    ):
        self.job = job
        self.limits = limits
        self.spec: Mapping[str, Any] = job.get("spec") or {}
        self.name = str(job["metadata"]["name"])
        self.podgroup = podgroup
        self.pods = {str(p["metadata"]["name"]): p for p in pods}
        self.now = now
        self.status: dict[str, Any] = copy.deepcopy(dict(job.get("status") or {}))
        self.phase = str((self.status.get("state") or {}).get("phase") or PENDING)
        self.version = int(self.status.get("version") or 0)
        self.deleting: set[str] = set()
        self.created: list[dict[str, Any]] = []
        self.decision = JobDecision()

    # --- the state machine ---------------------------------------------------------------

    def run(self, command: str | None) -> None:
        if self.phase in (PENDING, RUNNING):
            trigger = None if command else self._policy_trigger()
            action = command or (trigger.action if trigger else None)
            if action in RESTART_ACTIONS:
                self._restart(action, trigger)
            elif action in KILL_ACTIONS:
                self._begin_kill(KILL_ACTIONS[action], trigger.describe() if trigger else f"{action} command")
            else:
                self._sync()
        elif self.phase == RESTARTING:
            self._restarting()
        elif self.phase in (ABORTING, ABORTED) and command == bus.RESUME_JOB:
            self.version += 1
            self._transition(RESTARTING, "Resumed", "ResumeJob command")
        elif self.phase in KILLING:
            self._cleanup()
            if self._alive() == 0:
                self._transition(KILLING[self.phase], self.phase, "all pods have stopped")
        else:  # Aborted and the finished phases
            self._cleanup()
            self._expire()

    def _policy_trigger(self) -> Trigger | None:
        found = triggers(self.job, self.pods.values(), self.version)
        due = [t for t in found if t.due <= self.now]
        later = [t.due for t in found if t.due > self.now]
        if later:
            self._requeue(min(later) - self.now)
        return due[0] if due else None

    def _restart(self, action: str, trigger: Trigger | None) -> None:
        if action == bus.RESTART_JOB:
            self._kill(retain_finished=False)
            self._drop_podgroup()
            self.version += 1
        elif trigger is not None and action == bus.RESTART_TASK:
            self._kill(retain_finished=False, task=trigger.task)
        elif trigger is not None and action == bus.RESTART_POD:
            self._kill(retain_finished=False, pod=trigger.pod)
        self.status["retryCount"] = int(self.status.get("retryCount") or 0) + 1
        self._transition(RESTARTING, action, trigger.describe() if trigger else f"{action} command")

    def _begin_kill(self, phase: str, why: str) -> None:
        self._transition(phase, phase, why)
        self._cleanup()

    def _restarting(self) -> None:
        if int(self.status.get("retryCount") or 0) >= int(self.spec.get("maxRetry") or DEFAULT_MAX_RETRY):
            self._transition(FAILED, "MaxRetryReached", f"retried {self.status.get('retryCount')} times")
            self._cleanup()
            return
        for name, pod in self.pods.items():
            if pod_version(pod) < self.version:
                self._delete_pod(name)
        terminating = sum(1 for n, p in self.pods.items() if is_terminating(p) or n in self.deleting)
        if self._replicas() - terminating >= self._min_available():
            self._transition(PENDING, "Restarted", "old pods are gone")

    def _sync(self) -> None:
        self._add_job_objects()
        replicas = self._task_replicas()
        for name, pod in self.pods.items():
            if pod_task(pod) not in replicas or pod_index(pod) >= replicas[pod_task(pod)]:
                self._delete_pod(name)  # scaled down, or a task that is gone
        missing = {
            f"{self.name}-{task}-{i}": task
            for task, count in replicas.items()
            for i in range(count)
            if f"{self.name}-{task}-{i}" not in self.pods
        }
        if self._podgroup_ready() and missing:
            startable = {task for task in set(missing.values()) if self._dependencies_met(task)}
            self.created = self._build_pods([n for n, task in missing.items() if task in startable])
        self.decision.create_pods = self.created
        if self.deleting or self.created:  # maybe scaled: the loop rewrites what differs (svc host lists)
            self.decision.update_objects = updated_objects(self.job)
        counts = self._counts()
        finished = counts["Succeeded"] + counts["Failed"]
        min_available, total = self._min_available(), self._replicas()
        min_success = self.spec.get("minSuccess")
        if self.phase == PENDING:
            if min_available <= counts["Running"] + finished:
                self._transition(RUNNING, "MinAvailableReached", f"{counts['Running'] + finished} pods started")
        elif min_success is not None and counts["Succeeded"] >= int(min_success):
            self._transition(COMPLETED, "MinSuccessReached", f"{counts['Succeeded']} pods succeeded")
        elif finished >= total:
            if self._succeeded_enough(counts["Succeeded"]):
                self._transition(COMPLETED, "Completed", f"{counts['Succeeded']} of {total} pods succeeded")
            else:
                self._transition(FAILED, "Failed", f"only {counts['Succeeded']} of {total} pods succeeded")
        elif counts["Pending"] > total - min_available:
            self._transition(PENDING, "GangBroken", f"{counts['Pending']} pods pending")

    def _succeeded_enough(self, succeeded: int) -> bool:
        min_success = self.spec.get("minSuccess")
        if min_success is not None and succeeded < int(min_success):
            return False
        if self._min_available() >= self._replicas():
            by_task = self._task_counts()
            for task in self.spec.get("tasks") or []:
                if task.get("minAvailable") is not None and by_task.get(str(task["name"]), {}).get(
                    "Succeeded", 0
                ) < int(task["minAvailable"]):
                    return False
        return succeeded >= self._min_available()

    def _expire(self) -> None:
        ttl = self.spec.get("ttlSecondsAfterFinished")
        since = parse_time((self.status.get("state") or {}).get("lastTransitionTime"))
        if self.phase not in FINISHED or ttl is None or since is None:
            return
        due = since + int(ttl)
        if self.now >= due:
            self.decision.delete_job = True
        else:
            self._requeue(due - self.now)

    # --- effects -------------------------------------------------------------------------

    def _transition(self, phase: str, reason: str, message: str) -> None:
        if phase == self.phase:
            return
        when = format_time(self.now)
        self.status["state"] = {"phase": phase, "reason": reason, "message": message, "lastTransitionTime": when}
        history = [*(self.status.get("conditions") or []), {"status": phase, "lastTransitionTime": when}]
        self.status["conditions"] = history[-MAX_CONDITIONS:]  # suspend/resume loops must not grow the object forever
        self.decision.events.append((reason, f"{self.phase} -> {phase}: {message}"))
        self.phase = phase
        self._requeue(0.0)

    def _requeue(self, seconds: float) -> None:
        current = self.decision.requeue_after
        self.decision.requeue_after = seconds if current is None else min(current, seconds)

    def _delete_pod(self, name: str) -> None:
        if name not in self.deleting and not is_terminating(self.pods[name]):
            self.deleting.add(name)
            self.decision.delete_pods.append(name)

    def _kill(self, retain_finished: bool, task: str | None = None, pod: str | None = None) -> None:
        for name, p in self.pods.items():
            if (
                (task is None or pod_task(p) == task)
                and (pod is None or name == pod)
                and not (retain_finished and pod_phase(p) in ("Succeeded", "Failed"))
            ):
                self._delete_pod(name)

    def _cleanup(self) -> None:
        """What every stopping or stopped job does: unfinished pods, the PodGroup and plugin objects go."""
        self._kill(retain_finished=True)
        self._drop_podgroup()
        controlled = self.status.get("controlledResources") or {}
        plugins = [v for k, v in controlled.items() if k.startswith("plugin-")]
        if plugins:
            self.decision.delete_objects = deleted_objects(self.job, plugins)
            self.status["controlledResources"] = {k: v for k, v in controlled.items() if not k.startswith("plugin-")}

    def _drop_podgroup(self) -> None:
        if self.podgroup is not None and not (self.podgroup.get("metadata") or {}).get("deletionTimestamp"):
            self.decision.delete_podgroup = str(self.podgroup["metadata"]["name"])
            self.podgroup = None

    def _add_job_objects(self) -> None:
        """Once per job (recorded in status.controlledResources, as Volcano does): PVCs and plugin objects."""
        controlled = dict(self.status.get("controlledResources") or {})
        created = {claim["metadata"]["name"]: claim for claim in claims_to_create(self.job)}
        for name, _, _ in claims(self.job):  # named claims are recorded too, as Volcano does
            if f"volume-pvc-{name}" not in controlled:
                if name in created:
                    self.decision.create_objects.append(created[name])
                controlled[f"volume-pvc-{name}"] = name
        missing = [p.name for p in build_plugins(self.job) if f"plugin-{p.name}" not in controlled]
        if missing:
            self.decision.create_objects += job_objects(self.job, missing)
            controlled.update({f"plugin-{name}": name for name in missing})
        if controlled:
            self.status["controlledResources"] = controlled

    def _podgroup_ready(self) -> bool:
        """Whether pods may be created: the PodGroup of this version exists and has left Pending."""
        pg = self.podgroup
        if pg is not None:
            stamped = ((pg.get("metadata") or {}).get("annotations") or {}).get(JOB_VERSION)
            if stamped is not None and str(stamped).isdigit() and int(stamped) < self.version:
                self._drop_podgroup()  # left over from before a restart
                return False
            self._resize_podgroup(pg)
            return str((pg.get("status") or {}).get("phase") or PENDING) != PENDING
        created, _ = expand_job(self.job, self.version, self.limits)
        created["metadata"]["annotations"] = {
            **created["metadata"].get("annotations", {}),
            JOB_VERSION: str(self.version),
        }
        self.decision.create_podgroup = created
        return False

    def _resize_podgroup(self, pg: Mapping[str, Any]) -> None:
        """After the job was scaled (admission lets minAvailable and replicas change), so is its
        PodGroup: minMember, minTaskMember, minResources, priorityClassName (Volcano's
        updatePodGroupIfJobUpdate). The cheap comparison first: expanding the job costs O(pods)."""
        spec = pg.get("spec") or {}
        task_min = {
            str(t.get("name")): int(t.get("minAvailable", t.get("replicas", 1))) for t in self.spec.get("tasks") or []
        }
        min_member = int(self.spec.get("minAvailable", sum(task_min.values())))
        if (spec.get("minMember"), spec.get("minTaskMember") or {}, spec.get("priorityClassName")) == (
            min_member, task_min, self.spec.get("priorityClassName")
        ):
            return
        wanted, _ = expand_job(self.job, self.version, self.limits)
        self.decision.update_podgroup = {k: wanted["spec"].get(k) for k in RESIZED_PODGROUP_FIELDS}

    def _build_pods(self, names: list[str]) -> list[dict[str, Any]]:
        """The named pods as expand_job makes them, edited by the job's plugins."""
        if not names:
            return []
        wanted = set(names)
        _, pods = expand_job(self.job, self.version, self.limits)
        built = apply_plugins(self.job, [p for p in pods if p["metadata"]["name"] in wanted])
        for pod in built:
            mount_claims(self.job, pod)
        return built

    def _dependencies_met(self, task: str) -> bool:
        spec = next((t for t in self.spec.get("tasks") or [] if t.get("name") == task), {})
        depends = spec.get("dependsOn") or {}
        names = list(depends.get("name") or [])
        if not names:
            return True
        met = [self._task_ready(name) for name in names]
        return any(met) if depends.get("iteration") == "any" else all(met)

    def _task_ready(self, task: str) -> bool:
        spec = next((t for t in self.spec.get("tasks") or [] if t.get("name") == task), {})
        needed = int(spec.get("minAvailable", spec.get("replicas", 1)))
        ready = sum(1 for p in self.pods.values() if pod_task(p) == task and not is_terminating(p) and is_ready(p))
        return ready >= needed

    # --- counting ------------------------------------------------------------------------

    def _task_replicas(self) -> dict[str, int]:
        return {str(t.get("name")): int(t.get("replicas", 1)) for t in self.spec.get("tasks") or []}

    def _replicas(self) -> int:
        return sum(self._task_replicas().values())

    def _min_available(self) -> int:
        if self.spec.get("minAvailable"):
            return int(self.spec["minAvailable"])
        return sum(int(t.get("minAvailable", t.get("replicas", 1))) for t in self.spec.get("tasks") or [])

    def _live_pods(self) -> list[Mapping[str, Any]]:
        """Pods that are not being deleted, with the ones created in this step (Pending)."""
        kept = [p for n, p in self.pods.items() if n not in self.deleting and not is_terminating(p)]
        return kept + self.created

    def _counts(self) -> dict[str, int]:
        counts = dict.fromkeys(POD_PHASES, 0)
        for pod in self._live_pods():
            counts[pod_phase(pod) if pod_phase(pod) in counts else "Unknown"] += 1
        return counts

    def _task_counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for pod in self._live_pods():
            phases = out.setdefault(pod_task(pod), {})
            phases[pod_phase(pod)] = phases.get(pod_phase(pod), 0) + 1
        return out

    def _alive(self) -> int:
        counts = self._counts()
        terminating = sum(1 for n, p in self.pods.items() if is_terminating(p) or n in self.deleting)
        return counts["Pending"] + counts["Running"] + counts["Unknown"] + terminating

    def finish(self, old_status: Mapping[str, Any]) -> JobDecision:
        counts = self._counts()
        self.status.update({key.lower(): value for key, value in counts.items()})
        self.status["terminating"] = sum(1 for n, p in self.pods.items() if is_terminating(p) or n in self.deleting)
        self.status["minAvailable"] = self._min_available()
        self.status["version"] = self.version
        self.status.setdefault("retryCount", 0)
        self.status["taskStatusCount"] = {
            task: {"phase": phases} for task, phases in sorted(self._task_counts().items())
        }
        self.status.setdefault("state", {"phase": self.phase, "lastTransitionTime": format_time(self.now)})
        self.decision.status = self.status
        self.decision.status_changed = self.status != dict(old_status)
        return self.decision
