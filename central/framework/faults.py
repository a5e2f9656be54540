"""Fault boundaries: one object's bad data is that object's problem, never the cycle's.

Users write annotations and fields the scheduler interprets; some will not parse. Every
parser of user data raises `InputError` naming the object and field. Wherever the session
handles one job, task or node (a plugin reading annotations at open, an action placing one
job), an `InputError` is caught for that object alone and recorded here as a `Fault`:

- a job (PodGroup) becomes invalid for the session: JobValid fails with the reason, its
  statement is discarded, and if it has pods left to place it closes Unschedulable with
  the reason as the message (a running job with nothing to place keeps its phase);
- a node is filtered out of placement for the session, the reason counted in fit errors;
- a task (pod) that is still pending faults its job (a gang is placed whole or not at all);
  a pod already placed is only reported: there is nothing left to decide about it.

Each fault goes out as a Warning Event on the object and is counted by kind and source
(`caldera_scheduling_faults_total`). Any other exception is a Caldera bug: it ends the
cycle, and `run_cycle` rolls the cache back to where the session found it.

Catching costs nothing while nothing is raised (zero-cost `try` since Python 3.11), and the
boundaries are per job and per object, never per node row or per plugin call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from central.errors import InputError

if TYPE_CHECKING:
    from central.framework.session import Session
    from central.framework.statement import Statement
    from central.model.objects import JobInfo

EVENT_REASON = "InvalidSchedulingData"  # the Warning Event's reason on the faulted object


@dataclass(frozen=True, slots=True)
class Fault:
    kind: str  # "PodGroup", "Pod" or "Node": the object the Event goes on
    key: str  # "<namespace>/<name>", or the node's name
    source: str  # the plugin or action that met the bad data (a metric label: bounded)
    reason: str  # the InputError's text, naming object and field


class JobBoundary:
    """`with ssn.job_boundary(job, "allocate", stmt):` an InputError inside discards `stmt`,
    faults the job, and is swallowed; any other exception passes through."""

    __slots__ = ("ssn", "job", "source", "stmt")

    def __init__(self, ssn: "Session", job: "JobInfo", source: str, stmt: "Statement | None"):
        self.ssn, self.job, self.source, self.stmt = ssn, job, source, stmt

    def __enter__(self) -> "JobBoundary":
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> bool:
        if kind is None or not issubclass(kind, InputError):
            return False
        if self.stmt is not None:
            self.stmt.discard()
        self.ssn.fault_job(self.job, err, self.source)  # type: ignore[arg-type]
        return True
