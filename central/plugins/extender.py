"""extender: Volcano's HTTP scheduler extender, so extenders written for Volcano plug in.

    - name: extender
      arguments:
        extender.urlPrefix: http://127.0.0.1:8888
        extender.httpTimeout: 100ms        # Go duration, default 1s
        extender.onSessionOpenVerb: onSessionOpen
        extender.onSessionCloseVerb: onSessionClose
        extender.predicateVerb: predicate
        extender.prioritizeVerb: prioritize
        extender.preemptableVerb: preemptable
        extender.reclaimableVerb: reclaimable
        extender.queueOverusedVerb: queueOverused
        extender.jobEnqueueableVerb: jobEnqueueable
        extender.jobEnqueuedVerb: jobEnqueued
        extender.jobReadyVerb: jobReady
        extender.allocateFuncVerb: allocateFunc
        extender.deallocateFuncVerb: deallocateFunc
        extender.ignorable: true
        extender.managedResources: [nvidia.com/gpu]

Each configured verb is one POST of JSON to `<urlPrefix>/<verb>` (bodies in
`central.plugins.extenderwire`); a verb left out is not called and its point answers as if
the plugin were absent. With `managedResources`, the task verbs (predicate, prioritize,
preemptable, reclaimable, the allocate/deallocate events) are sent only for pods that
request or limit one of them. A call fails on a transport error, a status other than 200,
a body over 10 MiB or one that does not decode; then, as in Volcano:
- ignorable: the verb is a no-op (the predicate passes, no score, no vote, no veto);
- otherwise: the predicate fails the node (unresolvable) with the error; prioritize faults the
  job for the session (Volcano places nothing for the task); preemptable, reclaimable and
  jobEnqueueable reject; queueOverused says overused; jobReady says not ready; an allocate
  event refuses the allocation. jobEnqueued, deallocate events and onSessionClose only log.
A predicate answer with a message fails the node with its code (2 Unschedulable,
3 UnschedulableAndUnresolvable, anything else an error: unresolvable).

Differences from Volcano, on purpose: an ignorable error in preemptable or reclaimable
abstains (Volcano answers Permit with no victims, which vetoes every victim), and a failed
onSessionOpen of a non-ignorable extender makes every verb answer as failed for the session
(Volcano then registers nothing, so a required extender's verdicts are skipped).
Predicate calls for one task go out 16 at a time, as Volcano's predicate workers do.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from central.errors import InputError
from central.framework import extension as ext
from central.framework.plugin import ABSTAIN, PERMIT, REJECT, Arguments, Plugin
from central.framework.status import Check, Code
from central.model.fields import parse_duration
from central.model.objects import JobInfo, QueueInfo, TaskInfo, TaskStatus
from central.plugins import extenderwire as wire

if TYPE_CHECKING:
    from central.framework.handle import Handle
    from central.framework.plugin import PluginOption

log = logging.getLogger(__name__)

PREFIX = "extender."
VERBS = ("onSessionOpenVerb", "onSessionCloseVerb", "predicateVerb", "prioritizeVerb", "preemptableVerb",
         "reclaimableVerb", "queueOverusedVerb", "jobEnqueueableVerb", "jobEnqueuedVerb", "jobReadyVerb",
         "allocateFuncVerb", "deallocateFuncVerb")
MAX_BODY = 10 << 20  # Volcano's maxBodySize
PREDICATE_WORKERS = 16
UNSCHEDULABLE, UNRESOLVABLE = 2, 3  # Volcano's status codes


class ExtenderError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    url_prefix: str
    timeout: float  # seconds
    verbs: dict[str, str]  # e.g. "predicateVerb" -> "predicate"; unset verbs absent
    ignorable: bool
    managed: frozenset[str]


def send(settings: Settings, verb: str, body: Any) -> Any:
    """POST `body` as JSON to `<urlPrefix>/<verb>`; the decoded answer (ExtenderError on failure)."""
    url = settings.url_prefix.rstrip("/") + "/" + verb
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=settings.timeout) as resp:
            data = resp.read(MAX_BODY + 1)
    except urllib.error.HTTPError as err:
        raise ExtenderError(f"failed {verb} with extender at URL {url}, code {err.code}") from None
    except (OSError, ValueError) as err:
        raise ExtenderError(f"{verb} with extender at URL {url}: {getattr(err, 'reason', err)}") from None
    if len(data) > MAX_BODY:
        raise ExtenderError(f"{verb} with extender at URL {url}: http: request body too large (over {MAX_BODY} bytes)")
    try:
        return json.loads(data) if data.strip() else None
    except ValueError as err:
        raise ExtenderError(f"{verb} with extender at URL {url}: invalid JSON answer: {err}") from None


class Extender(Plugin, ext.Predicate, ext.BatchNodeOrder, ext.Preemptable, ext.Reclaimable, ext.JobEnqueueable,
               ext.JobEnqueued, ext.Overused, ext.JobReady, ext.AllocationEvents, ext.SessionClose):
    name = "extender"
    calls_out = True
    closes_by_state = True  # its last word is a call to the extender: no condition

    @classmethod
    def read_arguments(cls, args: Arguments) -> Settings:
        url = args.get(PREFIX + "urlPrefix", "", str)
        verbs = {verb: args.get(PREFIX + verb, "", str) for verb in VERBS}
        if not url and any(verbs.values()):
            raise args.error(PREFIX + "urlPrefix", "required when a verb is set (the extender's address)")
        if url and not url.startswith(("http://", "https://")):
            raise args.error(PREFIX + "urlPrefix", f"expected an http:// or https:// URL, got {url!r}")
        timeout = parse_duration(args.get(PREFIX + "httpTimeout", "1s", str),
                                 f"plugin {cls.name}: arguments.{PREFIX}httpTimeout").total_seconds()
        if timeout <= 0:
            raise args.error(PREFIX + "httpTimeout", "must be more than 0")
        managed = args.get(PREFIX + "managedResources", [], list)
        if not all(isinstance(m, str) for m in managed):
            raise args.error(PREFIX + "managedResources", f"expected a list of resource names, got {managed!r}")
        return Settings(url, timeout, {k: v for k, v in verbs.items() if v},
                        args.get(PREFIX + "ignorable", False, bool), frozenset(managed))

    def __init__(self, option: PluginOption, handle: Handle) -> None:
        super().__init__(option, handle)
        self.settings: Settings
        self.down: str | None = None  # why every verb fails this session (a failed onSessionOpen)
        if "onSessionOpenVerb" in self.settings.verbs:
            body = {"Jobs": {j.uid: self._job(j) for j in handle.jobs.values()},
                    "Nodes": {n.name: self._node(n) for n in handle.nodes},
                    "Queues": {q.name: wire.queue(q) for q in handle.queues.values()},
                    "NamespaceInfo": {}, "RevocableNodes": {n.name: self._node(n) for n in handle.nodes
                                                            if n.labels.get(wire.REVOCABLE_ZONE)},
                    "NodeList": None}
            try:
                self._send("onSessionOpenVerb", body)
            except ExtenderError as err:
                log.warning("extender onSessionOpen failed: %s", err)
                if not self.settings.ignorable:
                    self.down = str(err)

    # --- calls --------------------------------------------------------------------------

    def _send(self, verb: str, body: Any) -> Any:
        if self.down is not None:
            raise ExtenderError(f"onSessionOpen failed: {self.down}")
        return send(self.settings, self.settings.verbs[verb], body)

    def _call(self, verb: str, body: Any, decode: Callable[[Any], Any]) -> Any:
        """The decoded answer; ExtenderError when the call or the decoding fails."""
        answer = self._send(verb, body)
        try:
            return decode(answer if answer is not None else {})
        except wire.DecodeError as err:
            raise ExtenderError(f"{self.settings.verbs[verb]}: {err}") from None

    def batchable(self, task: TaskInfo) -> bool:
        """Only when it neither filters nor scores the task (its answers come from outside)."""
        verbs = self.settings.verbs
        return not self._interested(task) or not ("predicateVerb" in verbs or "prioritizeVerb" in verbs)

    def _interested(self, task: TaskInfo) -> bool:
        """Volcano's IsInterested: any managed resource among the pod's requests (limits of
        extended resources equal their requests)."""
        managed = self.settings.managed
        return not managed or any(name in managed for name, _ in task.template.resreq)

    def _node(self, node: Any) -> dict[str, Any]:
        return wire.node(node, self.handle.table, self.handle.dims.names)

    def _job(self, job: JobInfo) -> dict[str, Any]:
        return wire.job(job, self.handle.dims.names)

    # --- placement ------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> list[Check]:
        if "predicateVerb" not in self.settings.verbs or not self._interested(task) or not len(rows):
            return []
        body_task = wire.task(task)
        nodes = self.handle.nodes

        def ask(row: int) -> tuple[int, str]:
            try:
                answer = self._call("predicateVerb", {"task": body_task, "node": self._node(nodes[row])},
                                    lambda a: (wire.field(a, "status", str, ""), wire.integer(a, "code")))
            except ExtenderError as err:
                return (0, "") if self.settings.ignorable else (1, f"extender: {err}")
            message, code = answer
            return (code or 1, f"extender: {message}") if message else (0, "")

        with ThreadPoolExecutor(max_workers=min(PREDICATE_WORKERS, len(rows))) as pool:
            answers = list(pool.map(ask, (int(r) for r in rows)))
        return _checks(answers)

    def batch_node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray | None:
        if "prioritizeVerb" not in self.settings.verbs or not self._interested(task):
            return None
        nodes = [self.handle.nodes[int(r)] for r in rows]
        try:
            scores, message = self._call("prioritizeVerb", {"task": wire.task(task), "nodes": [self._node(n) for n in nodes]},
                                         lambda a: (wire.field(a, "nodeScore", dict, None), wire.field(a, "errorMessage", str, "")))
            if message or scores is None:
                raise ExtenderError(f"prioritize answered an error: {message!r}")
            return np.array([_score(scores.get(n.name, 0.0)) for n in nodes], dtype=float)
        except ExtenderError as err:
            if self.settings.ignorable:
                return None
            raise InputError(f"plugin {self.name}", str(err)) from None

    # --- victims --------------------------------------------------------------------------

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        return self._victims("preemptableVerb", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        return self._victims("reclaimableVerb", reclaimer, candidates)

    def _victims(self, verb: str, evictor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo] | None:
        if verb not in self.settings.verbs or not self._interested(evictor):
            return None
        body = {"evictor": wire.task(evictor), "evictees": [wire.task(t) for t in candidates]}
        try:
            status, victims = self._call(verb, body, lambda a: (wire.integer(a, "status"), wire.field(a, "victims", list, [])))
            uids = {wire.field(v, "UID", str, "") for v in victims}
        except (ExtenderError, wire.DecodeError) as err:
            log.warning("extender %s failed: %s", self.settings.verbs[verb], err)
            return None if self.settings.ignorable else []
        if status == ABSTAIN:
            return None
        return [t for t in candidates if t.uid in uids]

    # --- jobs and queues ------------------------------------------------------------------

    def job_enqueueable(self, job: JobInfo) -> int:
        if "jobEnqueueableVerb" not in self.settings.verbs:
            return ABSTAIN
        try:
            vote = self._call("jobEnqueueableVerb", {"job": self._job(job)}, lambda a: wire.integer(a, "status"))
        except ExtenderError as err:
            log.warning("extender jobEnqueueable failed: %s", err)
            if self.settings.ignorable:
                return PERMIT
            vote = REJECT
        if vote == REJECT:
            self.handle.note_job(job, "extender: the extender refused to enqueue the job")
        return max(REJECT, min(PERMIT, vote))

    def job_enqueued(self, job: JobInfo) -> None:
        if "jobEnqueuedVerb" in self.settings.verbs:
            self._quietly("jobEnqueuedVerb", {"job": self._job(job)})

    def overused(self, queue: QueueInfo) -> bool:
        if "queueOverusedVerb" not in self.settings.verbs:
            return False
        try:
            return bool(self._call("queueOverusedVerb", {"queue": wire.queue(queue)}, lambda a: wire.field(a, "overused", bool, False)))
        except ExtenderError as err:
            log.warning("extender queueOverused failed: %s", err)
            return not self.settings.ignorable

    def job_ready(self, job: JobInfo) -> bool:
        if "jobReadyVerb" not in self.settings.verbs:
            return True
        try:
            return bool(self._call("jobReadyVerb", {"job": self._job(job)}, lambda a: wire.field(a, "status", bool, False)))
        except ExtenderError as err:
            log.warning("extender jobReady failed: %s", err)
            return self.settings.ignorable

    # --- events ---------------------------------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        """Refuses an allocation or pipeline the extender fails (not the undo of an eviction)."""
        if "allocateFuncVerb" not in self.settings.verbs or not self._interested(task):
            return
        refusable = task.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED)
        try:
            message = self._call("allocateFuncVerb", {"task": wire.task(task)}, lambda a: wire.field(a, "errorMessage", str, ""))
        except ExtenderError as err:
            message = "" if self.settings.ignorable else str(err)
        if message and refusable:
            raise InputError(f"plugin {self.name}", f"allocateFunc refused {task.uid}: {message}")

    def on_deallocate(self, task: TaskInfo) -> None:
        if "deallocateFuncVerb" in self.settings.verbs and self._interested(task):
            self._quietly("deallocateFuncVerb", {"task": wire.task(task)})

    def on_session_close(self) -> None:
        if "onSessionCloseVerb" in self.settings.verbs:
            self._quietly("onSessionCloseVerb", {})

    def _quietly(self, verb: str, body: Any) -> None:
        """Calls whose failure Volcano only logs."""
        try:
            self._send(verb, body)
        except ExtenderError as err:
            log.warning("extender %s failed: %s", self.settings.verbs[verb], err)


def _checks(answers: list[tuple[int, str]]) -> list[Check]:
    """One Check per distinct failure (code and message), over the rows asked."""
    checks = []
    for code, message in dict.fromkeys(a for a in answers if a[0]):
        failing = np.array([a == (code, message) for a in answers], dtype=bool)
        kind = Code.UNSCHEDULABLE if code == UNSCHEDULABLE else Code.UNRESOLVABLE
        checks.append(Check(~failing, message, kind))
    return checks


def _score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExtenderError(f"prioritize: cannot unmarshal {type(value).__name__} into a float64 node score")
    return float(value)
