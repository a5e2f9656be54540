"""Volcano's controllers as pure functions of objects (plain dicts as the API returns them).

The functions here use no Kubernetes client: the loops of `loops/` (the controller process)
list and watch the objects, call these functions and apply what they return.

- `jobs.reconcile(job, podgroup, pods, now, commands=()) -> JobDecision`: the vcjob state
  machine, dependsOn, TTL, suspend/resume (see central/controllers/jobs.py), over the job
  parsed once into a typed spec (central/model/jobspec.py); its parts: `job_podgroup` (the
  PodGroup half of a sync), `job_pods` (the pod half), `job_policies` (lifecycle policies),
  `job_volumes` (PVCs).
- `jobplugins.apply_plugins(job, pods)` / `jobplugins.job_objects(job)`: job plugins env, svc, ssh,
  pytorch, tensorflow, mpi.
- `queues.reconcile_queue(queue, queues, podgroups, commands=()) -> QueueDecision`: Open /
  Closing / Closed with the cascade to child queues and per-phase PodGroup counts.
- `podgroups.podgroup_for_pod(pod, owner) -> dict | None`: PodGroups for plain pods.
- `bus`: the event, action and Command vocabulary shared with admission.
"""
