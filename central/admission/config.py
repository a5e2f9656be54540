"""What a cluster operator can set for admission: limits against denial of service.

Volcano bounds neither the number of tasks in a job nor their replicas (a 1 KB job can ask
for 10^9 pods); Caldera refuses jobs beyond these limits. Defaults are generous for real
training jobs and small enough that one job cannot flood the API server with pods.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from central.admission.resourcegroups import ResourceGroupsFile
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
    # Volcano's --enable-queue-allocated-pods-check: refuse deleting a queue with allocated pods.
    queue_allocated_pods_check: bool = False
    features: frozenset[str] = frozenset()  # Volcano's --feature-gates that are on
    resource_groups: ResourceGroupsFile | None = None  # Volcano's --admission-conf: pods placed by group

    def job_limits(self) -> JobLimits:
        return JobLimits(self.max_tasks_per_job, self.max_replicas_per_task, self.max_replicas_per_job)


DEFAULT_CONFIG = AdmissionConfig()


def add_job_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """The job limits' flags, one definition for the webhook, the controllers and `caldera
    validate`. The webhook and the controllers must get the same values (daemonset/ passes
    them to both from one ConfigMap): the webhook refuses a job beyond them, and the Job
    controller builds no more pods than they allow (a bigger admitted job would be InvalidJob)."""
    parser.add_argument("--max-tasks-per-job", "--max-tasks", dest="max_tasks_per_job", type=int,
                        default=DEFAULT_LIMITS.max_tasks, help="tasks per job")
    parser.add_argument("--max-replicas-per-task", "--max-task-replicas", dest="max_replicas_per_task", type=int,
                        default=DEFAULT_LIMITS.max_replicas_per_task, help="replicas per task")
    parser.add_argument("--max-replicas-per-job", "--max-replicas", dest="max_replicas_per_job", type=int,
                        default=DEFAULT_LIMITS.max_replicas,
                        help="replicas per job, all tasks together")


def job_limits_of(args: argparse.Namespace) -> JobLimits:
    return JobLimits(args.max_tasks_per_job, args.max_replicas_per_task, args.max_replicas_per_job)
