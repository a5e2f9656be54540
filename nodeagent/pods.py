"""Which pods run on this node: the PodInfo the agent needs, and how a PodList becomes it.

The agent needs namespace, name, uid, the Kubernetes QoS class (it decides the cgroup path),
the co-location QoS level, priority and requests. The QoS level is the `volcano.sh/qos-level`
annotation (LC, HLS, LS online; BE offline) and, without one, follows the Kubernetes QoS class
as koordinator maps it (`GetPodQoSClassWithKubeQoS`): BestEffort -> BE, Burstable and
Guaranteed -> LS (koordinator's LSR for Guaranteed has no Volcano level; LS is its nearest).
Volcano's own agent reads an unannotated pod as level 0, never offline; we do not, because an
unannotated BestEffort pod sits in the cgroup the offline quota squeezes anyway.
`qos.default_level` forces one level for every unannotated pod instead.
The kubelet source polls its local /pods; the API-server source is a watch (`nodeagent.podwatch`).
"""

from __future__ import annotations

import json
import re
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

QOS_ANNOTATION = "volcano.sh/qos-level"
CPUSET_ANNOTATION = "caldera.sh/cpuset"  # written by the scheduler's numa-aware plugin
BATCH_CPU, BATCH_MEMORY = "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"  # offline pods' requests
ONLINE_LEVELS = ("LC", "HLS", "LS")
QOS_LEVELS = (*ONLINE_LEVELS, "BE")
LEVEL_BY_KUBE_QOS = {"Guaranteed": "LS", "Burstable": "LS", "BestEffort": "BE"}
MAX_ANNOTATION_CHARS = 1024  # a cpuset of 4096 CPUs spelled out fits; anything longer is garbage
_QUANTITY = re.compile(r"^([0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SUFFIX = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def parse_quantity(text: object) -> float:
    """A Kubernetes quantity ("500m", "2Gi", "1.5") as a number; raises ValueError."""
    match = _QUANTITY.match(str(text).strip()[:64])
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * _SUFFIX[match.group(2)]


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    uid: str
    qos_class: str = "BestEffort"
    qos_level: str = "LS"
    priority: int = 0
    cpu_request_cores: float = 0.0
    memory_request_bytes: int = 0
    cpuset: str = ""  # CPUs the scheduler chose (annotation caldera.sh/cpuset), for pinning
    cpu_limit_cores: float | None = None  # the pod's own limit (kubelet's pod cgroup); None: unlimited
    memory_limit_bytes: int | None = None

    @property
    def online(self) -> bool:
        return self.qos_level in ONLINE_LEVELS


class PodSource(Protocol):
    def pods(self) -> list[PodInfo]: ...


class StaticPodSource:
    """A fixed list: tests, and nodes where no kubelet is reachable (empty list)."""

    def __init__(self, pods: list[PodInfo] | None = None) -> None:
        self._pods = list(pods or [])

    def pods(self) -> list[PodInfo]:
        return list(self._pods)


def qos_level(annotation: object, qos_class: str, default_level: str = "") -> str:
    """The co-location level: a valid annotation, else `default_level` when set, else by QoS class."""
    if isinstance(annotation, str) and annotation in QOS_LEVELS:
        return annotation
    return default_level or LEVEL_BY_KUBE_QOS.get(qos_class, "LS")


def kube_qos_class(spec: dict[str, Any]) -> str:
    """The QoS class the API server would give (for objects whose status does not carry it yet)."""
    requests = limits = 0
    guaranteed = True
    for container in spec.get("containers") or []:
        resources = (container.get("resources") or {}) if isinstance(container, dict) else {}
        req, lim = resources.get("requests") or {}, resources.get("limits") or {}
        requests += len(req)
        limits += len(lim)
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim[name]) != lim[name]:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_info(item: dict[str, Any], default_level: str = "") -> PodInfo | None:
    """One pod of a PodList or watch event; None when it is not running here or is malformed."""
    meta, status, spec = (item.get(k) or {} for k in ("metadata", "status", "spec"))
    if not (isinstance(meta, dict) and isinstance(status, dict) and isinstance(spec, dict)):
        return None
    if not isinstance(meta.get("uid"), str) or not meta["uid"] or status.get("phase") not in ("Running", "Pending"):
        return None
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
    qos_class = status.get("qosClass")
    if qos_class not in LEVEL_BY_KUBE_QOS:
        qos_class = kube_qos_class(spec)
    cpu, memory = _requests(spec)
    cpu_limit, memory_limit = _limits(spec)
    cpuset = annotations.get(CPUSET_ANNOTATION, "")
    priority = spec.get("priority")
    return PodInfo(
        namespace=str(meta.get("namespace", "default")),
        name=str(meta.get("name", "")),
        uid=meta["uid"],
        qos_class=qos_class,
        qos_level=qos_level(annotations.get(QOS_ANNOTATION), qos_class, default_level),
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        cpu_request_cores=cpu,
        memory_request_bytes=int(memory),
        cpuset=cpuset if isinstance(cpuset, str) and len(cpuset) <= MAX_ANNOTATION_CHARS else "",
        cpu_limit_cores=cpu_limit,
        memory_limit_bytes=None if memory_limit is None else int(memory_limit),
    )


def pods_from_pod_list(doc: dict[str, Any], default_level: str = "") -> list[PodInfo]:
    """Running pods of a v1 PodList (the kubelet's /pods answer); skips malformed items."""
    items = doc.get("items") if isinstance(doc, dict) else None
    pods = (pod_info(item, default_level) for item in items or [] if isinstance(item, dict))
    return [p for p in pods if p is not None]


def _summed(spec: dict[str, Any], kind: str) -> tuple[float | None, float | None]:
    """Container requests or limits summed per resource (first name, else the batch-* one);
    None when a container has none (for limits: the pod is unlimited) or it does not parse."""
    totals: list[float | None] = [0.0, 0.0]
    containers = spec.get("containers") or []
    for container in containers if isinstance(containers, list) else []:
        resources = container.get("resources") if isinstance(container, dict) else None
        values = (resources or {}).get(kind) if isinstance(resources, dict) else None
        values = values if isinstance(values, dict) else {}
        for i, (name, batch) in enumerate((("cpu", BATCH_CPU), ("memory", BATCH_MEMORY))):
            try:
                if name in values:
                    value = parse_quantity(values[name])
                elif batch in values:  # millicores for batch-cpu, as koordinator and Volcano count it
                    value = parse_quantity(values[batch]) / (1000 if name == "cpu" else 1)
                else:
                    value = None
            except ValueError:
                value = None
            total = totals[i]
            totals[i] = None if value is None or total is None else total + value
    return totals[0], totals[1]


def _requests(spec: dict[str, Any]) -> tuple[float, float]:
    """Summed container requests; a missing or unparsable one counts as 0 (the pod still runs)."""
    cpu = memory = 0.0
    containers = spec.get("containers") or []
    for container in containers if isinstance(containers, list) else []:
        one = {"containers": [container]}
        c, m = _summed(one, "requests")
        cpu, memory = cpu + (c or 0.0), memory + (m or 0.0)
    return cpu, memory


def _limits(spec: dict[str, Any]) -> tuple[float | None, float | None]:
    """The pod's limits as the kubelet sets its cgroup: summed, or None if one container has none."""
    if not spec.get("containers"):
        return None, None
    return _summed(spec, "limits")


class HttpPodSource:
    """GETs a PodList with the pod's service-account token: from the kubelet
    (https://127.0.0.1:10250/pods) or from the API server
    (/api/v1/pods?fieldSelector=spec.nodeName=<node>)."""

    def __init__(self, url: str, token_file: Path | None, default_level: str = "", ca_file: Path | None = None,
                 timeout_s: float = 5.0) -> None:
        self._url, self._token_file, self._default = url, token_file, default_level
        self._timeout = timeout_s
        # Always verified: the token goes only to a server that proves it is the kubelet or the API
        # server (a kubelet with serverTLSBootstrap has a certificate from the cluster CA).
        self._ssl = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)

    def pods(self) -> list[PodInfo]:
        request = urllib.request.Request(self._url)
        if self._token_file is not None:
            request.add_header("Authorization", f"Bearer {self._token_file.read_text().strip()}")
        with urllib.request.urlopen(request, timeout=self._timeout, context=self._ssl) as answer:
            return pods_from_pod_list(json.load(answer), self._default)
