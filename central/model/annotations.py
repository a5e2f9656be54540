"""The annotations that Caldera's plugins and the node agent interpret: one total parser each.

Every parser returns a value within bounds or raises InputError naming the annotation. The
same table serves three readers, so what admission lets in is exactly what the scheduler and
the agent can read:
- admission (`check`) refuses a Pod, PodGroup or Job carrying a bad value, on CREATE and UPDATE;
- the plugins call the parsers (the CPU and GPU lists with the node's own bound);
- the agent's copy of the CPU-list grammar (nodeagent cannot import central) keeps the same
  bound rule: never expand a range past the CPUs that exist.

`caldera.sh/cpuset` and `caldera.sh/numa-nodes` are also an authority: they pin a pod to CPUs.
Only the scheduler writes them; admission checks who is asking (see central.admission.pods).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from central.errors import InputError, shown
from central.model.fields import parse_duration, parse_index_list

CPUSET = "caldera.sh/cpuset"
NUMA_NODES = "caldera.sh/numa-nodes"
NUMA_POLICY = "volcano.sh/numa-topology-policy"
NUMA_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
GPU_INDEX = "volcano.sh/gpu-index"
GPU_UNHEALTHY = "volcano.sh/gpu-unhealthy-ids"
SLA_WAITING_TIME = "volcano.sh/sla-waiting-time"
SLA_WAITING_TIME_UNPREFIXED = "sla-waiting-time"  # Volcano reads it when the prefixed one is absent
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
PREEMPTABLE = "volcano.sh/preemptable"
TASK_PRIORITY = "volcano.sh/task-priority"
TASK_INDEX = "volcano.sh/task-index"
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
QOS_LEVEL = "volcano.sh/qos-level"
QOS_LEVELS = ("LC", "HLS", "LS", "BE")
TOPOLOGY_AFFINITY = "volcano.sh/task-topology-affinity"
TOPOLOGY_ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TOPOLOGY_TASK_ORDER = "volcano.sh/task-topology-task-order"
ALLOWED_NAMESPACES = "caldera.sh/allowed-namespaces"
SCHEDULER_ONLY = frozenset({CPUSET, NUMA_NODES})

# Linux's NR_CPUS ceiling: no machine has more CPU ids, so no list may name more. The scheduler
# and the agent bound a list by the node's own CPUs; admission, which knows no node, by this.
MAX_CPUS = 8192
MAX_GPUS = 256
INT32 = 2**31 - 1
_BUDGET = re.compile(r"([0-9]{1,9})(%?)")


def _where(key: str) -> str:
    return f"metadata.annotations[{key}]"


def id_list(text: object, key: str, limit: int) -> list[int]:
    """A Linux list of ids ("0-3,8,10-11"), each below `limit`, bounded before expansion."""
    return parse_index_list(text, _where(key), limit)


def cpu_set(text: object, limit: int = MAX_CPUS) -> frozenset[int]:
    return frozenset(id_list(text, CPUSET, limit))


def gpu_ids(text: object, key: str = GPU_INDEX, limit: int = MAX_GPUS) -> list[int]:
    """Card ids ("0,2"); an empty value means no cards."""
    return id_list(text, key, limit) if isinstance(text, str) and text.strip() else []


def count_or_percent(text: object, key: str) -> tuple[int, bool]:
    """(n, is_percent) for the disruption-budget annotations: an integer >= 0 or 0%..100%, as
    Volcano's tdm reads them. (Its pod webhook is stricter, > 0 and 1%..99%: see admission.)"""
    match = _BUDGET.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None or match[2] and int(match[1]) > 100:
        raise InputError(_where(key), f"expected an integer or a percentage like 25%, got {shown(text)}")
    return int(match[1]), bool(match[2])


def integer(text: object, key: str, minimum: int = -INT32, maximum: int = INT32) -> int:
    match = re.fullmatch(r"[-+]?[0-9]{1,10}", text.strip()) if isinstance(text, str) else None
    value = int(match[0]) if match else None
    if value is None or not minimum <= value <= maximum:
        raise InputError(_where(key), f"expected an integer in {minimum}..{maximum}, got {shown(text)}")
    return value


def one_of(text: object, key: str, valid: tuple[str, ...]) -> str:
    if text not in valid:
        raise InputError(_where(key), f"unknown value {shown(text)}; valid: {', '.join(valid)}")
    return str(text)


def task_groups(text: object, key: str) -> list[set[str]]:
    """task-topology groups: "ps,worker;chief" -> [{"ps", "worker"}, {"chief"}]."""
    if not isinstance(text, str) or len(text) > 4096:
        raise InputError(_where(key), f"expected task names like ps,worker;chief, got {shown(text)}")
    return [{t.strip() for t in group.split(",") if t.strip()} for group in text.split(";") if group.strip()]


_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def namespaces(text: object, key: str = ALLOWED_NAMESPACES) -> frozenset[str] | None:
    """A Queue's tenants: namespace names separated by commas; `*` (or no annotation) is every
    namespace, and None stands for that."""
    if not isinstance(text, str) or len(text) > 64 * 1024:
        raise InputError(_where(key), f"expected namespace names like team-a,team-b, got {shown(text)}")
    names = {n.strip() for n in text.split(",") if n.strip()}
    if "*" in names:
        return None
    bad = sorted(n for n in names if not _NAMESPACE.fullmatch(n))
    if bad or not names:
        raise InputError(_where(key), f"expected namespace names like team-a,team-b or *, got {shown(text)}")
    return frozenset(names)


@dataclass(frozen=True)
class Annotation:
    key: str
    kinds: frozenset[str]  # where it is read: Pod, PodGroup (a Job carries it to both), Node, Queue
    parse: Callable[[object], object]


def _bool(key: str) -> Callable[[object], object]:
    """Go's strconv.ParseBool, which Volcano reads these with."""
    return lambda text: one_of(text, key, ("1", "t", "T", "TRUE", "true", "True",
                                           "0", "f", "F", "FALSE", "false", "False"))


def _duration(key: str) -> Callable[[object], object]:
    return lambda text: parse_duration(text, _where(key))


ANNOTATIONS = {a.key: a for a in (
    Annotation(CPUSET, frozenset({"Pod"}), cpu_set),
    Annotation(NUMA_NODES, frozenset({"Pod"}), lambda t: id_list(t, NUMA_NODES, 1024)),
    Annotation(NUMA_POLICY, frozenset({"Pod", "PodGroup"}), lambda t: one_of(t, NUMA_POLICY, NUMA_POLICIES)),
    Annotation(GPU_INDEX, frozenset({"Pod"}), gpu_ids),
    Annotation(GPU_UNHEALTHY, frozenset({"Node"}), lambda t: gpu_ids(t, GPU_UNHEALTHY)),
    Annotation(SLA_WAITING_TIME, frozenset({"PodGroup"}), _duration(SLA_WAITING_TIME)),
    Annotation(SLA_WAITING_TIME_UNPREFIXED, frozenset({"PodGroup"}), _duration(SLA_WAITING_TIME_UNPREFIXED)),
    Annotation(COOLDOWN_TIME, frozenset({"PodGroup"}), _duration(COOLDOWN_TIME)),
    Annotation(JDB_MIN_AVAILABLE, frozenset({"Pod", "PodGroup"}), lambda t: count_or_percent(t, JDB_MIN_AVAILABLE)),
    Annotation(JDB_MAX_UNAVAILABLE, frozenset({"Pod", "PodGroup"}), lambda t: count_or_percent(t, JDB_MAX_UNAVAILABLE)),
    Annotation(PREEMPTABLE, frozenset({"Pod", "PodGroup"}), _bool(PREEMPTABLE)),
    Annotation(TASK_PRIORITY, frozenset({"Pod"}), lambda t: integer(t, TASK_PRIORITY)),
    Annotation(TASK_INDEX, frozenset({"Pod"}), lambda t: integer(t, TASK_INDEX, 0)),
    Annotation(GROUP_MIN_MEMBER, frozenset({"Pod"}), lambda t: integer(t, GROUP_MIN_MEMBER, 0)),
    Annotation(QOS_LEVEL, frozenset({"Pod"}), lambda t: one_of(t, QOS_LEVEL, QOS_LEVELS)),
    Annotation(TOPOLOGY_AFFINITY, frozenset({"PodGroup"}), lambda t: task_groups(t, TOPOLOGY_AFFINITY)),
    Annotation(TOPOLOGY_ANTI_AFFINITY, frozenset({"PodGroup"}), lambda t: task_groups(t, TOPOLOGY_ANTI_AFFINITY)),
    Annotation(ALLOWED_NAMESPACES, frozenset({"Queue"}), namespaces),
    Annotation(TOPOLOGY_TASK_ORDER, frozenset({"PodGroup"}), lambda t: task_groups(t, TOPOLOGY_TASK_ORDER)),
)}


def check(annotations: Mapping[str, Any], kind: str) -> list[InputError]:
    """Every problem with the interpreted annotations of an object of `kind`, in key order.
    A Job is checked as both: its annotations pass to its PodGroup and its pods."""
    kinds = {"Pod", "PodGroup"} if kind == "Job" else {kind}
    problems: list[InputError] = []
    for key in sorted(k for k in annotations if k in ANNOTATIONS and ANNOTATIONS[k].kinds & kinds):
        try:
            ANNOTATIONS[key].parse(annotations[key])
        except InputError as err:
            problems.append(err)
    if JDB_MIN_AVAILABLE in annotations and JDB_MAX_UNAVAILABLE in annotations:
        problems.append(InputError("metadata.annotations", "not allow configure multiple annotations at same time: "
                                   f"{JDB_MIN_AVAILABLE} and {JDB_MAX_UNAVAILABLE}"))
    return problems
