"""Fault boundaries: one object's bad data is that object's problem, never the cycle's.

Users write annotations and fields the scheduler interprets; some will not parse. Every
parser of user data raises `InputError` naming the object and field. Wherever the session
handles one job, task or node (a plugin reading annotations at open, an action placing one
job), an `InputError` is caught for that object alone and recorded here as a `Fault`:

- a job (PodGroup) becomes invalid for the session: JobValid fails with the reason, its
  statement is discarded, and if it has pods left to place it closes Unschedulable with
  the reason as the message (a running job with nothing to place keeps its phase);
- a node is filtered out of placement for the session, the reason counted in fit errors;
- a node whose agent's latest report was refused (`central.agents.bounds`: out of range, or
  more than the Node has) is faulted by every session until a report is accepted;
- a task (pod) that is still pending faults its job (a gang is placed whole or not at all);
  a pod already placed is only reported: there is nothing left to decide about it.

Each fault goes out as a Warning Event on the object and is counted by kind and source
(`caldera_scheduling_faults_total`). Any other exception is a Caldera bug: it ends the
cycle, and `run_cycle` rolls the cache back to where the session found it.

Catching costs nothing while nothing is raised (zero-cost `try` since Python 3.11), and the
boundaries are per job and per object, never per node row or per plugin call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from central.errors import InputError
from central.framework.decisions import Discardable
from central.model.objects import TaskStatus

if TYPE_CHECKING:
    from central.model.objects import JobInfo, NodeInfo, TaskInfo

EVENT_REASON = "InvalidSchedulingData"  # the Warning Event's reason on the faulted object
AGENT_REPORT = "agent-report"  # the source of a Node's fault when its agent's report was refused


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str  # "PodGroup", "Pod" or "Node": the object the Event goes on
    key: str  # "<namespace>/<name>", or the node's name
    source: str  # the plugin or action that met the bad data (a metric label: bounded)
    reason: str  # the InputError's text, naming object and field


class Faults:
    """The faults of one session, by object, and the jobs they make invalid (job uid -> reason)."""

    def __init__(self, jobs: Mapping[str, JobInfo], exclude_node: Callable[[int], None]):
        self._jobs = jobs
        self._exclude_node = exclude_node  # takes a node row out of placement
        self.by_object: dict[tuple[str, str], Fault] = {}
        self.jobs: dict[str, str] = {}

    def job_reason(self, job: JobInfo) -> str | None:
        """Why the job is faulted this session (None: it is not)."""
        return self.jobs.get(job.uid)

    def fault_job(self, job: JobInfo, err: InputError, source: str) -> None:
        """The job cannot be scheduled this session: JobValid fails with the reason."""
        reason = str(err)
        self.jobs.setdefault(job.uid, reason)
        self.by_object.setdefault(("PodGroup", job.uid), Fault("PodGroup", job.uid, source, reason))

    def fault_node(self, node: NodeInfo, err: InputError, source: str, exclude: bool = True) -> None:
        """No task is placed on the node this session; with `exclude=False` only reported (the
        plugin has already confined the damage, e.g. to the node's GPUs)."""
        self.by_object.setdefault(("Node", node.name), Fault("Node", node.name, source, str(err)))
        if exclude:
            self._exclude_node(node.index)

    def fault_task(self, task: TaskInfo, err: InputError, source: str) -> None:
        """A pending task faults its job; a placed one is only reported."""
        self.by_object.setdefault(("Pod", task.uid), Fault("Pod", task.uid, source, str(err)))
        job = self._jobs.get(task.job_uid)
        if task.status == TaskStatus.PENDING and job is not None:
            self.jobs.setdefault(job.uid, str(err))

    def fault_hypernode(self, name: str, reason: str, source: str) -> None:
        """The HyperNode is left out of the topology this session."""
        self.by_object.setdefault(("HyperNode", name), Fault("HyperNode", name, source, reason))

    def boundary(self, job: JobInfo, source: str, stmt: Discardable | None = None) -> JobBoundary:
        """A `with` block in which bad data of `job` faults the job (discarding `stmt`)."""
        return JobBoundary(self, job, source, stmt)


class JobBoundary:
    """`with handle.job_boundary(job, "allocate", stmt):` an InputError inside discards
    `stmt`, faults the job, and is swallowed; any other exception passes through."""

    __slots__ = ("faults", "job", "source", "stmt")

    def __init__(self, faults: Faults, job: JobInfo, source: str, stmt: Discardable | None):
        self.faults, self.job, self.source, self.stmt = faults, job, source, stmt

    def __enter__(self) -> JobBoundary:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> bool:
        if kind is None or not issubclass(kind, InputError) or not isinstance(err, InputError):
            return False
        if self.stmt is not None:
            self.stmt.discard()
        self.faults.fault_job(self.job, err, self.source)
        return True
