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
- Running: same sync; a job scaled to 0 replicas stays Running. -> Completed once minSuccess pods succeeded; when every pod finished,
  -> Completed if enough succeeded (minAvailable, minSuccess, and each task's minAvailable when
  the job needs all its pods), else Failed; -> Pending when more pods are pending than the
  gang can spare (pending > replicas - minAvailable).
- Actions, from a Command (it wins) or from the lifecycle policies (job_policies.py), in
  Pending or Running: RestartJob (delete every pod and the PodGroup, new version), RestartTask
  (the task's pods), RestartPod (the pod), RestartPartition (the pods of the failed pod's
  partition, by its `volcano.sh/partition-id` label) -> Restarting with retryCount + 1; AbortJob ->
  Aborting, CompleteJob -> Completing, TerminateJob -> Terminating (each deletes the pods that
  have not finished, the PodGroup and the plugin objects).
- Restarting: -> Failed when retryCount >= maxRetry; else deletes pods of older versions and
  -> Pending once replicas - terminating >= minAvailable.
- Aborting / Completing / Terminating: -> Aborted / Completed / Terminated once no pod is
  pending, running or terminating. Aborting or Aborted + ResumeJob -> Restarting with a new
  version. Unlike Volcano, resuming does not count as a retry (Volcano #5385: suspend/resume three
  times must not fail a job).
- Completed / Terminated / Failed: finished; the job is deleted `ttlSecondsAfterFinished`
  after the transition.
The job is parsed once per spec change into a typed spec (central/model/jobspec.py); the
PodGroup half of the sync is job_podgroup.py, the pod half job_pods.py (pods are built from
the spec and edited by the job plugins); lifecycle policies are job_policies.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from central.controllers import bus
from central.controllers.job_podgroup import sync_podgroup
from central.controllers.job_pods import Tally, build_job_pods, dependencies_met, missing_pods, surplus_pods, tally
from central.controllers.job_policies import PodFacts, Trigger, format_time, parse_time, read_pod, triggers
from central.controllers.job_volumes import claims_to_create
from central.controllers.jobplugins import (
    build_plugins,
    deleted_objects,
    job_objects,
    updated_objects,
)
from central.errors import InputError
from central.model.jobspec import DEFAULT_LIMITS, JobLimits, JobSpec, job_spec
from central.model.subgroups import PARTITION_ID

PENDING, RUNNING, RESTARTING = "Pending", "Running", "Restarting"
COMPLETING, COMPLETED, ABORTING, ABORTED = "Completing", "Completed", "Aborting", "Aborted"
TERMINATING, TERMINATED, FAILED = "Terminating", "Terminated", "Failed"
FINISHED = frozenset({COMPLETED, TERMINATED, FAILED})  # TTL applies
KILLING = {ABORTING: ABORTED, COMPLETING: COMPLETED, TERMINATING: TERMINATED}
KILL_ACTIONS = {bus.ABORT_JOB: ABORTING, bus.COMPLETE_JOB: COMPLETING, bus.TERMINATE_JOB: TERMINATING}
RESTART_ACTIONS = frozenset({bus.RESTART_JOB, bus.RESTART_TASK, bus.RESTART_POD, bus.RESTART_PARTITION})
MAX_CONDITIONS = 20


@dataclass
class JobDecision:
    status: dict[str, Any] = field(default_factory=dict)  # the job's whole new status (shares what did not change)
    status_changed: bool = False
    create_podgroup: dict[str, Any] | None = None
    delete_podgroup: str | None = None
    update_podgroup: dict[str, Any] | None = None  # spec fields to rewrite (see job_podgroup; None: remove)
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    create_objects: list[dict[str, Any]] = field(
        default_factory=list
    )  # PVCs; plugin Services, ConfigMaps, Secrets, ...
    update_objects: list[dict[str, Any]] = field(default_factory=list)  # to replace (svc host lists after a scale)
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
    step = _Step(job, podgroup, pods, now)
    if (job.get("metadata") or {}).get("deletionTimestamp"):  # the garbage collector removes what it owns
        with contextlib.suppress(InputError):
            step.spec = job_spec(job, limits)  # for status.minAvailable
        return step.finish(job.get("status") or {})
    if action is None:
        mine = bus.commands_for(list(commands), "Job", step.name)
        if mine:
            step.decision.delete_commands.append(str(mine[0]["metadata"]["name"]))
            action = str(mine[0].get("action"))
            step.announce(action)
    try:
        step.spec = job_spec(job, limits)
        step.advance(action)
    except InputError as err:  # only a job that bypassed admission gets here
        step.decision = JobDecision(delete_commands=step.decision.delete_commands)
        step.status["state"] = {**(step.status.get("state") or {}), "reason": "InvalidJob", "message": str(err)}
        step.decision.events.append(("InvalidJob", str(err)))
    return step.finish(job.get("status") or {})


ASKED = " command"  # how a transition a user asked for (a Command) ends its message


def unschedulable_message(podgroup: Mapping[str, Any] | None) -> str | None:
    """The message of the PodGroup's Unschedulable condition when it is the newer of that and
    Scheduled (the scheduler stamps whichever holds each session); None otherwise."""
    latest: dict[str, Mapping[str, Any]] = {}
    for condition in ((podgroup or {}).get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("status") == "True":
            latest[str(condition.get("type"))] = condition
    refused, placed = latest.get("Unschedulable"), latest.get("Scheduled")
    if refused is None or not refused.get("message"):
        return None
    if placed is not None and str(placed.get("lastTransitionTime") or "") > str(refused.get("lastTransitionTime") or ""):
        return None
    return str(refused["message"])


def event_type(reason: str, message: str) -> str:
    """The type of the Event for a decision's (reason, message): Warning for what went wrong
    (an invalid job, a job failed, or aborted by a policy), as `kubectl get events
    --field-selector type=Warning` expects; Normal for the rest, including a stop the user
    asked for with a Command (`vcctl job suspend`)."""
    if reason == "InvalidJob":
        return "Warning"
    if f" -> {FAILED}:" in message:
        return "Warning"
    return "Warning" if f" -> {ABORTED}:" in message and not message.endswith(ASKED) else "Normal"


class _Step:
    def __init__(
        self, job: Mapping[str, Any], podgroup: Mapping[str, Any] | None, pods: Iterable[Mapping[str, Any]], now: float
    ):
        self.job = job
        self.spec: JobSpec | None = None  # parsed in reconcile, where a bad job is reported
        self.name = str(job["metadata"]["name"])
        self.podgroup = podgroup
        self.pods = {f.name: f for f in map(read_pod, pods)}
        self.now = now
        # a shallow copy: a step replaces what it changes and never edits a nested value in place
        self.status: dict[str, Any] = dict(job.get("status") or {})
        self.phase = str((self.status.get("state") or {}).get("phase") or PENDING)
        self.version = int(self.status.get("version") or 0)
        self.deleting: set[str] = set()
        self.created: list[PodFacts] = []
        self.decision = JobDecision()

    @property
    def parsed(self) -> JobSpec:
        assert self.spec is not None, "reconcile parses the spec before running a step"
        return self.spec

    # --- the state machine ---------------------------------------------------------------

    def advance(self, command: str | None) -> None:
        """One step of the state machine: the command, else a due policy action, else a sync."""
        if self.phase in (PENDING, RUNNING):
            trigger = None if command else self._due_policy_trigger()
            if trigger is not None:
                self.announce(trigger.action)
            action = command or (trigger.action if trigger else None)
            if action in RESTART_ACTIONS:
                self._begin_restart(action, trigger)
            elif action in KILL_ACTIONS:
                self._start_stopping(KILL_ACTIONS[action], trigger.describe() if trigger else f"{action} command")
            else:
                self._sync_and_update_phase()
        elif self.phase == RESTARTING:
            self._continue_restart()
        elif self.phase in (ABORTING, ABORTED) and command == bus.RESUME_JOB:
            self.version += 1
            self._transition(RESTARTING, "Resumed", "ResumeJob command")
        elif self.phase in KILLING:
            self._stop_and_release()
            if self._tally().unstopped == 0:
                cause = str((self.status.get("state") or {}).get("message") or "")
                asked = f" after the {cause}" if cause.endswith(ASKED) else ""  # a user's own stop stays Normal
                self._transition(KILLING[self.phase], self.phase, f"all pods have stopped{asked}")
        else:  # Aborted and the finished phases
            self._stop_and_release()
            self._delete_after_ttl()

    def _due_policy_trigger(self) -> Trigger | None:
        found = triggers(self.parsed, self.pods.values(), self.version, self.podgroup)
        due = [t for t in found if t.due <= self.now]
        later = [t.due for t in found if t.due > self.now]
        if later:
            self._requeue(min(later) - self.now)
        return due[0] if due else None

    def announce(self, action: str) -> None:
        """Volcano's Event for an action a Command or a policy asks for, before it runs (the
        loop's own TerminateJob after too many failures has its own); its text, trailing space
        included, is what tools and Volcano's e2e specs match."""
        self.decision.events.append(("ExecuteAction", f"Start to execute action {action} "))

    def _begin_restart(self, action: str, trigger: Trigger | None) -> None:
        if action == bus.RESTART_JOB:
            # On the last retry the finished pods stay, for their logs (Volcano's killPods).
            last_retry = int(self.status.get("retryCount") or 0) >= self.parsed.max_retry - 1
            self._delete_pods(retain_finished=last_retry)
            self._delete_podgroup()
            self.version += 1
        elif trigger is not None and action == bus.RESTART_TASK:
            self._delete_pods(retain_finished=False, task=trigger.task)
        elif trigger is not None and action == bus.RESTART_POD:
            self._delete_pods(retain_finished=False, pod=trigger.pod)
        elif trigger is not None and action == bus.RESTART_PARTITION:
            partition = self._partition(trigger.pod)
            if partition is not None:  # a pod of no partition: Volcano restarts nothing
                self._delete_pods(retain_finished=False, task=trigger.task, partition=partition)
        self.status["retryCount"] = int(self.status.get("retryCount") or 0) + 1
        self._transition(RESTARTING, action, trigger.describe() if trigger else f"{action} command")

    def _start_stopping(self, phase: str, why: str) -> None:
        self._transition(phase, phase, why)
        self._stop_and_release()

    def _continue_restart(self) -> None:
        if int(self.status.get("retryCount") or 0) >= self.parsed.max_retry:
            self._transition(FAILED, "MaxRetryReached", f"retried {self.status.get('retryCount')} times")
            self._stop_and_release()
            return
        for name, pod in self.pods.items():
            if pod.version < self.version:
                self._delete_pod(name)
        if self.parsed.replicas - self._tally().terminating >= self.parsed.min_available:
            self._transition(PENDING, "Restarted", "old pods are gone")

    def _sync_and_update_phase(self) -> None:
        """Pending and Running: the job's objects, its PodGroup and its pods, then the phase the pods say."""
        spec = self.parsed
        self._create_job_objects_once()
        for name in surplus_pods(spec, self.pods.values()):
            self._delete_pod(name)  # scaled down, or a task that is gone
        self._sync_podgroup_and_pods()
        if self.deleting or self.created:  # maybe scaled: the loop rewrites what differs (svc host lists)
            self.decision.update_objects = updated_objects(self.job)
        tallied = self._tally()
        counts = tallied.phases
        finished = counts["Succeeded"] + counts["Failed"]
        if self.phase == PENDING:
            if spec.min_available <= counts["Running"] + finished:
                self._transition(RUNNING, "MinAvailableReached", f"{counts['Running'] + finished} pods started")
        elif spec.replicas == 0:
            pass  # scaled down to zero: the job keeps its phase (and so its objects), as in Volcano
        elif spec.min_success is not None and counts["Succeeded"] >= spec.min_success:
            self._transition(COMPLETED, "MinSuccessReached", f"{counts['Succeeded']} pods succeeded")
        elif finished >= spec.replicas:
            if self._succeeded_enough(tallied):
                self._transition(COMPLETED, "Completed", f"{counts['Succeeded']} of {spec.replicas} pods succeeded")
            else:
                self._transition(FAILED, "Failed", f"only {counts['Succeeded']} of {spec.replicas} pods succeeded")
        elif counts["Pending"] > spec.replicas - spec.min_available:
            self._transition(PENDING, "GangBroken", f"{counts['Pending']} pods pending")
        if self.phase == PENDING:
            self._tell_why_pending()

    def _tell_why_pending(self) -> None:
        """A Pending job's state says why its PodGroup waits, the scheduler's latest
        Unschedulable condition (what Volcano #3834 asks for): reason Unschedulable and its
        message, the phase and its transition time kept."""
        message = unschedulable_message(self.podgroup)
        state = self.status.get("state") or {}
        if message is not None and (state.get("reason"), state.get("message")) != ("Unschedulable", message):
            self.status["state"] = {**state, "phase": PENDING, "reason": "Unschedulable", "message": message}

    def _sync_podgroup_and_pods(self) -> None:
        """The PodGroup first; the missing pods once it has left Pending, those whose dependsOn is met."""
        spec = self.parsed
        missing = missing_pods(spec, self.pods)
        group = sync_podgroup(spec, self.podgroup, self.version)
        self.decision.create_podgroup = group.create
        self.decision.update_podgroup = group.update
        if group.delete is not None:
            self.decision.delete_podgroup = group.delete
        if group.create is not None or group.delete is not None:
            self.podgroup = None
        if not (group.pods_allowed and missing):
            return
        live = [p for p in self.pods.values() if not p.terminating]
        startable = {t.name for t in missing.values() if dependencies_met(spec, t, live)}
        names = {name for name, task in missing.items() if task.name in startable}
        group_name = str(self.podgroup["metadata"]["name"]) if self.podgroup is not None else None
        self.decision.create_pods = build_job_pods(self.job, spec, names, self.version, group_name)
        self.created = [read_pod(pod) for pod in self.decision.create_pods]

    def _succeeded_enough(self, counts: Tally) -> bool:
        spec, succeeded = self.parsed, counts.phases["Succeeded"]
        if spec.min_success is not None and succeeded < spec.min_success:
            return False
        if spec.min_available >= spec.replicas:
            for task in spec.tasks:
                done = counts.tasks.get(task.name, {}).get("Succeeded", 0)
                if task.declares_min_available and done < task.min_available:
                    return False
        return succeeded >= spec.min_available

    def _delete_after_ttl(self) -> None:
        ttl = self.parsed.ttl_after_finished
        since = parse_time((self.status.get("state") or {}).get("lastTransitionTime"))
        if self.phase not in FINISHED or ttl is None or since is None:
            return
        due = since + ttl
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
        if name not in self.deleting and not self.pods[name].terminating:
            self.deleting.add(name)
            self.decision.delete_pods.append(name)

    def _delete_pods(self, retain_finished: bool, task: str | None = None, pod: str | None = None,
                     partition: str | None = None) -> None:
        for name, p in self.pods.items():
            if (
                (task is None or p.task == task)
                and (pod is None or name == pod)
                and (partition is None or self._partition(name) == partition)
                and not (retain_finished and p.phase in ("Succeeded", "Failed"))
            ):
                self._delete_pod(name)

    def _partition(self, pod: str) -> str | None:
        """The partition-id label of the job's pod `pod` (None: none, or no such pod)."""
        facts = self.pods.get(pod)
        labels = (facts.pod.get("metadata") or {}).get("labels") or {} if facts is not None else {}
        value = labels.get(PARTITION_ID)
        return str(value) if value is not None else None

    def _stop_and_release(self) -> None:
        """What every stopping or stopped job does: unfinished pods, the PodGroup and plugin objects go."""
        self._delete_pods(retain_finished=True)
        self._delete_podgroup()
        controlled = self.status.get("controlledResources") or {}
        plugins = [v for k, v in controlled.items() if k.startswith("plugin-")]
        if plugins:
            self.decision.delete_objects = deleted_objects(self.job, plugins)
            self.status["controlledResources"] = {k: v for k, v in controlled.items() if not k.startswith("plugin-")}

    def _delete_podgroup(self) -> None:
        if self.podgroup is not None and not (self.podgroup.get("metadata") or {}).get("deletionTimestamp"):
            self.decision.delete_podgroup = str(self.podgroup["metadata"]["name"])
            self.podgroup = None

    def _create_job_objects_once(self) -> None:
        """Once per job (recorded in status.controlledResources, as Volcano does): PVCs and plugin objects."""
        spec = self.parsed
        controlled = dict(self.status.get("controlledResources") or {})
        new_claims = [c for c in spec.claims if f"volume-pvc-{c.name}" not in controlled]
        if new_claims:  # named claims are recorded too, as Volcano does
            created = {c["metadata"]["name"]: c for c in claims_to_create(self.job, spec)}
            for claim in new_claims:
                if claim.name in created and f"volume-pvc-{claim.name}" not in controlled:
                    self.decision.create_objects.append(created[claim.name])
                controlled[f"volume-pvc-{claim.name}"] = claim.name
        missing: list[str] = []
        if any(f"plugin-{name}" not in controlled for name in spec.plugins):  # else no need to parse their flags
            missing = [p.name for p in build_plugins(self.job) if f"plugin-{p.name}" not in controlled]
        if missing:
            self.decision.create_objects += job_objects(self.job, missing)
            controlled.update({f"plugin-{name}": name for name in missing})
        if controlled:
            self.status["controlledResources"] = controlled

    def _tally(self) -> Tally:
        return tally(self.pods.values(), self.deleting, self.created)

    def finish(self, old_status: Mapping[str, Any]) -> JobDecision:
        counts = self._tally()
        self.status.update({key.lower(): value for key, value in counts.phases.items()})
        self.status["terminating"] = counts.terminating
        if self.spec is not None:  # a job that cannot be read keeps the figure it had
            self.status["minAvailable"] = self.spec.min_available
        self.status["version"] = self.version
        self.status.setdefault("retryCount", 0)
        self.status["taskStatusCount"] = {
            task: {"phase": phases} for task, phases in sorted(counts.tasks.items())
        }
        if "state" not in self.status:
            self.status["state"] = {"phase": self.phase, "lastTransitionTime": format_time(self.now)}
        self.decision.status = self.status
        self.decision.status_changed = self.status != dict(old_status)
        return self.decision
