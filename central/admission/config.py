"""What a cluster operator can set for admission: limits against denial of service.

Volcano bounds neither the number of tasks in a job nor their replicas (a 1 KB job can ask
for 10^9 pods); Caldera refuses jobs beyond these limits. Defaults are generous for real
training jobs and small enough that one job cannot flood the API server with pods.
"""

from __future__ import annotations

from dataclasses import dataclass

from central.model.jobspec import DEFAULT_LIMITS, JobLimits

DEFAULT_SCHEDULER = "volcano"


@dataclass(frozen=True)
class AdmissionConfig:
    max_tasks_per_job: int = DEFAULT_LIMITS.max_tasks
    max_replicas_per_task: int = DEFAULT_LIMITS.max_replicas_per_task
    max_replicas_per_job: int = DEFAULT_LIMITS.max_replicas
    max_queue_depth: int = 5  # Volcano's --max-queue-depth; root's children are at depth 1
    scheduler_name: str = DEFAULT_SCHEDULER  # the default the job mutator fills in; pods of it are checked
    # The only identity that may set caldera.sh/cpuset and caldera.sh/numa-nodes on a pod.
    scheduler_user: str = "system:serviceaccount:caldera-system:caldera-scheduler"

    def job_limits(self) -> JobLimits:
        return JobLimits(self.max_tasks_per_job, self.max_replicas_per_task, self.max_replicas_per_job)


DEFAULT_CONFIG = AdmissionConfig()
