"""What a cluster operator can set for admission: limits against denial of service.

Volcano bounds neither the number of tasks in a job nor their replicas (a 1 KB job can ask
for 10^9 pods); Caldera refuses jobs beyond these limits. Defaults are generous for real
training jobs and small enough that one job cannot flood the API server with pods.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SCHEDULER = "volcano"


@dataclass(frozen=True)
class AdmissionConfig:
    max_tasks_per_job: int = 100
    max_replicas_per_task: int = 10_000
    max_replicas_per_job: int = 10_000
    max_queue_depth: int = 5  # Volcano's --max-queue-depth; root's children are at depth 1
    scheduler_name: str = DEFAULT_SCHEDULER  # the default the job mutator fills in


DEFAULT_CONFIG = AdmissionConfig()
