"""vcctl's own table layouts, byte for byte, for the list commands Caldera shares with it
(`job list`, `queue list`, `pod list`): scripts that parse vcctl's columns by position, and
Volcano's vcctl suite, which compares `job list` with its PrintJobs, read Caldera's the same.

    job_table(jobs, all_namespaces) -> str    PrintJobs: a name column as wide as the longest
                                              name + 3, then fixed widths; rows keep their padding
    queue_table(queues) -> str                PrintQueues: fixed widths, Parent after State
    pod_table(pods, all_namespaces) -> str    PrintPods: each column as wide as its widest value
                                              + 8, or its header + 2

Go's `%-Ns` pads to N and never cuts, so a longer value pushes the row right, as there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

JOB_TYPE = "volcano.sh/job-type"
JOB_HEADERS = ("Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running", "Succeeded",
               "Failed", "Unknown", "RetryCount")
JOB_WIDTHS = (15, 12, 12, 12, 6, 10, 10, 12, 10, 12, 10)  # after the name column
QUEUE_HEADERS = ("Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed")
QUEUE_WIDTHS = (25, 8, 8, 8, 8, 8, 8, 8, 8)


def _row(cells: Sequence[Any], widths: Sequence[int]) -> str:
    return "".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True)) + "\n"


def _status(obj: dict[str, Any], field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def job_table(jobs: Sequence[dict[str, Any]], all_namespaces: bool = False) -> str:
    name_width = max([len("Name")] + [len(j["metadata"]["name"]) for j in jobs]) + 3
    namespace_width = max([len("Namespace")] + [len(j["metadata"].get("namespace") or "") for j in jobs]) + 3
    widths = ((namespace_width,) if all_namespaces else ()) + (name_width, *JOB_WIDTHS)
    out = [_row((("Namespace",) if all_namespaces else ()) + JOB_HEADERS, widths)]
    for job in jobs:
        meta, status = job["metadata"], job.get("status") or {}
        cells = [meta["name"], (meta.get("creationTimestamp") or "0001-01-01")[:10],
                 (status.get("state") or {}).get("phase", ""), (meta.get("labels") or {}).get(JOB_TYPE) or "Batch",
                 sum(int(t.get("replicas") or 0) for t in (job.get("spec") or {}).get("tasks") or []),
                 *(_status(job, f) for f in ("minAvailable", "pending", "running", "succeeded", "failed", "unknown",
                                             "retryCount"))]
        out.append(_row(([meta.get("namespace") or ""] if all_namespaces else []) + cells, widths))
    return "".join(out)


def queue_table(queues: Sequence[dict[str, Any]]) -> str:
    out = [_row(QUEUE_HEADERS, QUEUE_WIDTHS)]
    for queue in queues:
        spec = queue.get("spec") or {}
        out.append(_row((queue["metadata"]["name"], spec.get("weight", 0), (queue.get("status") or {}).get("state", ""),
                         spec.get("parent", ""), *(_status(queue, f) for f in
                                                   ("inqueue", "pending", "running", "unknown", "completed"))),
                        QUEUE_WIDTHS))
    return "".join(out)


def pod_table(pods: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Callable[[dict[str, Any]], Any]]]) -> str:
    values = [[str(fn(pod)) for _, fn in columns] for pod in pods]
    widths = [max([len(header) + 2] + [len(row[i]) + 8 for row in values]) for i, (header, _) in enumerate(columns)]
    return "".join(_row(row, widths) for row in [[header for header, _ in columns], *values])
