"""The API requests each scheduler makes, from the API server's audit log.

Every control plane of the e2e bench runs kube-apiserver with the same audit policy: every
request at level Metadata (who, what, no bodies), logged once when its response is complete,
as JSON lines. A scheduler's requests are the events of its client: by user for Caldera (its
ServiceAccount) and kube-scheduler (system:kube-scheduler), by user agent for Volcano's
components (they share the admin credential on the bench's cluster). The same log gives the
API server's own rates: pod creates/s and binds/s over the measured window.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived", "ResponseStarted"],
          "rules": [{"level": "Metadata"}]}
LOG = "audit.log"

CALDERA_SCHEDULER = "system:serviceaccount:caldera-system:caldera-scheduler"
KUBE_SCHEDULER = "system:kube-scheduler"


@dataclass(frozen=True)
class Client:
    """One process's requests: matched by the audit user, or by the user agent's program name."""

    label: str
    user: str = ""
    agent: str = ""

    def matches(self, event: dict[str, Any]) -> bool:
        if self.user:
            return bool(event.get("user", {}).get("username") == self.user)
        return str(event.get("userAgent", "")).split("/", 1)[0] == self.agent


CLIENTS = {
    "caldera": [Client("caldera-scheduler", user=CALDERA_SCHEDULER)],
    "kube-scheduler": [Client("kube-scheduler", user=KUBE_SCHEDULER)],
    "volcano": [Client("vc-scheduler", agent="vc-scheduler"), Client("vc-controller-manager", agent="vc-controller-manager")],
}


@dataclass
class Requests:
    """What the log held for one run: each client's requests by kind (`verb resource[/sub]`),
    and the API server's pod creates and binds per second between their first and last."""

    by_client: dict[str, Counter[str]] = field(default_factory=dict)
    creates_per_s: float = 0.0
    binds_per_s: float = 0.0


def apiserver_args(directory: Path) -> tuple[str, ...]:
    """kube-apiserver's flags for the audit log under `directory` (the policy file is written)."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(POLICY))
    return (f"--audit-policy-file={policy}", f"--audit-log-path={directory / LOG}", "--audit-log-format=json",
            "--audit-log-maxbackup=0", "--audit-log-maxsize=0")


def kind(event: dict[str, Any]) -> str:
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", event.get("requestURI", "?").split("?", 1)[0])
    sub = ref.get("subresource")
    return f"{event.get('verb', '?')} {resource}{'/' + sub if sub else ''}"


def read(log: Path, clients: list[Client], namespace: str) -> Requests:
    """Count the log's events (a missing log counts nothing)."""
    out = Requests({c.label: Counter() for c in clients})
    creates: list[float] = []
    binds: list[float] = []
    if not log.exists():
        return out
    with open(log) as lines:
        for line in lines:
            event = json.loads(line)
            for client in clients:
                if client.matches(event):
                    out.by_client[client.label][kind(event)] += 1
            ref = event.get("objectRef") or {}
            if ref.get("resource") == "pods" and ref.get("namespace") == namespace and event.get("verb") == "create":
                sub = ref.get("subresource")
                if sub == "binding":
                    binds.append(_seconds(event.get("stageTimestamp", "")))
                elif not sub:
                    creates.append(_seconds(event.get("stageTimestamp", "")))
    out.creates_per_s, out.binds_per_s = _rate(creates), _rate(binds)
    return out


def summary(requests: Requests, bound: int, top: int = 4) -> list[str]:
    """Per client: requests per bound pod, and its commonest kinds per bound pod."""
    lines = []
    for label, counts in requests.by_client.items():
        total = sum(counts.values())
        kinds = ", ".join(f"{k} {n / max(bound, 1):.2f}" for k, n in counts.most_common(top))
        lines.append(f"{label}: {total / max(bound, 1):.2f} requests per bound pod ({total:,}; {kinds})")
    return lines


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0


def _rate(times: list[float]) -> float:
    if len(times) < 2:
        return 0.0
    span = max(times) - min(times)
    return len(times) / span if span > 0 else 0.0

