"""Synthetic workloads and public traces, as trace rows (central/sim/trace.py).

`generate(jobs, seed, span)`: a reproducible synthetic workload. Distributions:
- arrivals: a Poisson process over `span` (exponential gaps, mean span / jobs);
- gang size: pods per job 1, 2, 4, 8, 16 or 32 with probabilities .20 .15 .15 .15 .20 .15
  (mean 10.3), all in one gang (minAvailable = all pods); jobs of 4 or more pods are 1 ps
  per 4 workers, others one task;
- duration: log-normal, median 30 minutes, sigma 1.5 (heavy tail: mean about 1.5 hours,
  1 in 100 jobs longer than 16 hours), capped at 48 hours;
- GPU share: 30% of jobs ask 1 nvidia.com/gpu per worker;
- requests per pod: 1, 2, 4 or 8 CPUs (probabilities .4 .3 .2 .1), 4 GiB per CPU;
- queues: `queues` maps names to weights; a job picks a queue with probability weight / sum.
`cluster(nodes, seed, queues)`: Nodes (80% 32-CPU/128Gi, 20% with 8 GPUs as well) and the
Queues with those weights, as manifests.

`from_pai(job_rows, task_rows)`: the Alibaba PAI GPU trace (cluster-trace-gpu-v2020), whose
pai_job_table rows are job_name, inst_id, user, status, start_time, end_time and pai_task_table
rows job_name, task_name, inst_num, status, start_time, end_time, plan_cpu (percent of a
core), plan_mem (GB), plan_gpu (percent of a GPU), gpu_type. A job is submitted at its
start_time (relative to the earliest), each task runs end_time - start_time with inst_num
replicas, plan_gpu is rounded up to whole GPUs, a job whose status is Failed exits 1, and jobs
or tasks without times (still running when the trace ended) are left out and counted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Any

from central.errors import InputError

GANG_SIZES = ((1, 0.20), (2, 0.15), (4, 0.15), (8, 0.15), (16, 0.20), (32, 0.15))
CPUS = ((1, 0.4), (2, 0.3), (4, 0.2), (8, 0.1))
GPU_SHARE = 0.30
DURATION_MEDIAN_S, DURATION_SIGMA, DURATION_CAP_S = 1800.0, 1.5, 48 * 3600.0
DEFAULT_QUEUES = {"prod": 4, "batch": 2, "research": 1, "dev": 1}


def generate(jobs: int, seed: int, span: float, queues: dict[str, int] | None = None) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    queues = queues or DEFAULT_QUEUES
    names, weights = list(queues), list(queues.values())
    rows, now = [], 0.0
    for i in range(jobs):
        now += rng.expovariate(jobs / span)
        size = _pick(rng, GANG_SIZES)
        cpu = _pick(rng, CPUS)
        gpu = rng.random() < GPU_SHARE
        duration = min(DURATION_CAP_S, round(rng.lognormvariate(math.log(DURATION_MEDIAN_S), DURATION_SIGMA)))
        worker = {"cpu": str(cpu), "memory": f"{4 * cpu}Gi", **({"nvidia.com/gpu": "1"} if gpu else {})}
        ps = size // 5 if size >= 4 else 0
        tasks = [{"name": "worker", "replicas": size - ps, "requests": worker, "duration": duration}]
        if ps:
            ps_requests = {"cpu": "1", "memory": "4Gi"}
            tasks.insert(0, {"name": "ps", "replicas": ps, "requests": ps_requests, "duration": duration})
        rows.append({"name": f"job-{i}", "submit": round(now, 1), "queue": rng.choices(names, weights)[0],
                     "minAvailable": size, "tasks": tasks})
    return rows


def cluster(nodes: int, seed: int, queues: dict[str, int] | None = None) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
         "spec": {"weight": weight, "reclaimable": True}}
        for name, weight in (queues or DEFAULT_QUEUES).items()]
    for i in range(nodes):
        gpus = 8 if rng.random() < 0.2 else 0
        allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}"},
                    "status": {"allocatable": allocatable, "capacity": allocatable}})
    return out


def from_pai(job_rows: Iterable[list[str]], task_rows: Iterable[list[str]]) -> tuple[list[dict[str, Any]], int]:
    """(trace rows, jobs left out) from the two PAI tables' CSV rows (no header line)."""
    jobs: dict[str, tuple[float, str]] = {}
    for n, row in enumerate(job_rows, 1):
        _width(row, 6, f"pai_job_table row {n}")
        start = _time(row[4], f"pai_job_table row {n}: start_time")
        if start is not None:
            jobs[row[0]] = (start, row[3])
    tasks: dict[str, list[dict[str, Any]]] = {}
    incomplete = set()
    for n, row in enumerate(task_rows, 1):
        _width(row, 10, f"pai_task_table row {n}")
        where = f"pai_task_table row {n}"
        start, end = _time(row[4], f"{where}: start_time"), _time(row[5], f"{where}: end_time")
        if start is None or end is None:
            incomplete.add(row[0])
            continue
        replicas = max(1, round(_float(row[2], f"{where}: inst_num")))
        requests = {"cpu": f"{_float(row[6], f'{where}: plan_cpu') / 100:g}",
                    "memory": f"{_float(row[7], f'{where}: plan_mem'):g}G"}
        gpu = _float(row[8], f"{where}: plan_gpu") if row[8] else 0.0
        if gpu > 0:
            requests["nvidia.com/gpu"] = str(math.ceil(gpu / 100))
        tasks.setdefault(row[0], []).append({"name": _dns(row[1]), "replicas": replicas, "requests": requests,
                                              "duration": max(0.0, end - start)})
    usable = sorted((start, name) for name, (start, _) in jobs.items() if name in tasks and name not in incomplete)
    origin = usable[0][0] if usable else 0.0
    rows = []
    for start, name in usable:
        for task in tasks[name]:
            if jobs[name][1] == "Failed":
                task["exitCode"] = 1
        rows.append({"name": f"pai-{name[:40]}", "submit": start - origin, "queue": "default",
                     "minAvailable": sum(t["replicas"] for t in tasks[name]), "tasks": _unique(tasks[name])})
    return rows, len(jobs) - len(usable)


def _pick(rng: random.Random, table: tuple[tuple[int, float], ...]) -> int:
    return rng.choices([v for v, _ in table], [p for _, p in table])[0]


def _width(row: list[str], width: int, where: str) -> None:
    if len(row) != width:
        raise InputError(where, f"expected {width} comma-separated columns, got {len(row)}")


def _time(text: str, where: str) -> float | None:
    return None if text.strip() in ("", "nan", "NaN") else _float(text, where)


def _float(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(where, f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(where, f"expected a number >= 0, got {text!r}")
    return value


def _dns(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    return cleaned[:30] or "task"


def _unique(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, int] = {}
    for task in tasks:
        n = seen[task["name"]] = seen.get(task["name"], 0) + 1
        if n > 1:
            task["name"] = f"{task['name']}-{n}"
    return tasks
