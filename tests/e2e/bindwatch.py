"""Every node each pod of a test's namespace is ever seen bound to, from a watch: a pod bound
twice shows two."""

from __future__ import annotations

import threading

from tests.e2e.conftest import Tenant


class BindWatch:
    """Every nodeName each pod of the namespace is ever seen with, from a watch."""

    def __init__(self, tenant: Tenant):
        self.seen: dict[str, set[str]] = {}
        self.stream = tenant.kube.stream(f"/api/v1/namespaces/{tenant.namespace}/pods", {}, timeout=300)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for event in self.stream:
                pod = event.get("object") or {}
                node = (pod.get("spec") or {}).get("nodeName")
                if node:
                    self.seen.setdefault(pod["metadata"]["uid"], set()).add(node)
        except Exception:  # the stream closed at the end of the test
            pass

    def close(self) -> None:
        self.stream.close()
