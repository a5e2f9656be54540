"""Which pods run on this node: one small interface, an HTTP implementation and a static one.

The agent needs namespace, name, uid, the Kubernetes QoS class (it decides the cgroup path),
the co-location QoS level from the `volcano.sh/qos-level` annotation, priority and requests.
Without a pod source the agent still reports node-level data.
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
ONLINE_LEVELS = ("LC", "HLS", "LS")
QOS_LEVELS = (*ONLINE_LEVELS, "BE")
_QUANTITY = re.compile(r"^([0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SUFFIX = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def parse_quantity(text: object) -> float:
    """A Kubernetes quantity ("500m", "2Gi", "1.5") as a number; raises ValueError."""
    match = _QUANTITY.match(str(text).strip())
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


def pods_from_pod_list(doc: dict[str, Any], default_level: str) -> list[PodInfo]:
    """Running pods of a v1 PodList (the kubelet's /pods answer); skips malformed items."""
    pods = []
    for item in doc.get("items") or []:
        meta, status = item.get("metadata") or {}, item.get("status") or {}
        if not meta.get("uid") or status.get("phase") not in ("Running", "Pending"):
            continue
        level = (meta.get("annotations") or {}).get(QOS_ANNOTATION, default_level)
        cpu, memory = _requests(item.get("spec") or {})
        pods.append(PodInfo(
            namespace=meta.get("namespace", "default"),
            name=meta.get("name", ""),
            uid=meta["uid"],
            qos_class=status.get("qosClass", "BestEffort"),
            qos_level=level if level in QOS_LEVELS else default_level,
            priority=int((item.get("spec") or {}).get("priority") or 0),
            cpu_request_cores=cpu,
            memory_request_bytes=int(memory),
            cpuset=(meta.get("annotations") or {}).get(CPUSET_ANNOTATION, ""),
        ))
    return pods


def _requests(spec: dict[str, Any]) -> tuple[float, float]:
    """Summed container requests; an unparsable quantity counts as 0 (the pod still runs)."""
    cpu = memory = 0.0
    for container in spec.get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        try:
            cpu += parse_quantity(requests.get("cpu", 0))
            memory += parse_quantity(requests.get("memory", 0))
        except ValueError:
            continue
    return cpu, memory


class HttpPodSource:
    """GETs a PodList with the pod's service-account token: from the kubelet
    (https://127.0.0.1:10250/pods) or from the API server
    (/api/v1/pods?fieldSelector=spec.nodeName=<node>)."""

    def __init__(self, url: str, token_file: Path | None, default_level: str, ca_file: Path | None = None,
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
