"""The benchmarks' synthetic cluster as API objects: nodes of mixed shapes (some with GPUs,
some tainted), gang jobs of 1 to 64 pods across 4 weighted queues, the pods of a job sharing
a template as a Volcano task's do. Used by `caldera bench` (a session) and `caldera bench
--e2e` (a real API server) alike, so both measure the same cluster.
"""

from __future__ import annotations

import random
from typing import Any

NODE_SHAPES = [  # (cpu, memory GiB, gpus, share)
    (16, 64, 0, 0.45), (32, 128, 0, 0.30), (64, 256, 0, 0.15), (32, 256, 4, 0.07), (96, 768, 8, 0.03)]
POD_SHAPES = [  # (cpu, memory, gpu)
    ("500m", "1Gi", 0), ("1", "2Gi", 0), ("2", "4Gi", 0), ("4", "8Gi", 0), ("250m", "512Mi", 0),
    ("8", "32Gi", 1), ("2", "8Gi", 0), ("1", "4Gi", 0)]
QUEUES = {"prod": 4, "batch": 2, "research": 1, "dev": 1}


def synthetic_cluster(nodes: int, pods: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [
        {"kind": "Queue", "metadata": {"name": name}, "spec": {"weight": weight}} for name, weight in QUEUES.items()]
    shapes = rng.choices(NODE_SHAPES, weights=[s[3] for s in NODE_SHAPES], k=nodes)
    for i, (cpu, mem, gpus, _) in enumerate(shapes):
        alloc = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
        spec: dict[str, Any] = {}
        if gpus:
            spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        elif i % 50 == 0:
            spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
        objects.append({"kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 3}"}},
                        "spec": spec, "status": {"allocatable": alloc}})
    made, job = 0, 0
    while made < pods:
        size = min(pods - made, rng.choice([1, 1, 2, 4, 8, 8, 16, 32, 64]))
        pod_cpu, pod_mem, gpu = rng.choice(POD_SHAPES)
        queue = rng.choice(list(QUEUES))
        name = f"job-{job:05d}"
        objects.append({"kind": "PodGroup", "metadata": {"name": name, "namespace": "bench"},
                        "spec": {"minMember": size, "queue": queue}, "status": {"phase": "Pending"}})
        requests = {"cpu": pod_cpu, "memory": pod_mem, **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
        tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}] if gpu else []
        for t in range(size):
            objects.append({"kind": "Pod", "metadata": {
                "name": f"{name}-{t}", "namespace": "bench",
                "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": "worker"}},
                "spec": {"schedulerName": "volcano", "tolerations": tolerations,
                         "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]},
                "status": {"phase": "Pending"}})
        made += size
        job += 1
    return objects
