"""The two API-server calls the agent makes: evict a pod and set or clear its node's taint.

Plain HTTPS with the pod's service-account token (no informers, no watch: the agent needs
nothing else). The taint update reads the node, edits spec.taints and patches with the
resourceVersion it read, so a concurrent change (the node controller writes Nodes often) is
never overwritten: the apiserver answers 409 and the read-modify-write starts again.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
CONFLICT_RETRIES = 5  # client-go's retry.DefaultRetry steps


class KubeApi:
    def __init__(self, base_url: str, node_name: str, token_file: Path | None = None,
                 ca_file: Path | None = None, timeout_s: float = 10.0) -> None:
        self.base_url, self.node_name = base_url.rstrip("/"), node_name
        self._token_file, self._timeout = token_file, timeout_s
        self._ssl = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              content_type: str = "application/json") -> dict[str, Any]:
        request = urllib.request.Request(self.base_url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
        request.add_header("Content-Type", content_type)
        request.add_header("Accept", "application/json")
        if self._token_file is not None:
            request.add_header("Authorization", f"Bearer {self._token_file.read_text().strip()}")
        with urllib.request.urlopen(request, timeout=self._timeout, context=self._ssl) as answer:
            decoded: dict[str, Any] = json.loads(answer.read() or b"{}")
            return decoded

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body` (a TokenReview, a SubjectAccessReview): the API server's answer."""
        return self._call("POST", path, body)

    def evict(self, namespace: str, name: str) -> None:
        self._call("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        })

    def set_taint(self, key: str, effect: str, present: bool) -> None:
        for attempt in range(CONFLICT_RETRIES):
            node = self._call("GET", f"/api/v1/nodes/{self.node_name}")
            taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != key]
            if present:
                taints.append({"key": key, "effect": effect})
            try:
                self._call("PATCH", f"/api/v1/nodes/{self.node_name}", {
                    "metadata": {"resourceVersion": node.get("metadata", {}).get("resourceVersion", "")},
                    "spec": {"taints": taints},
                }, content_type="application/merge-patch+json")
                return
            except urllib.error.HTTPError as err:
                if err.code != 409 or attempt == CONFLICT_RETRIES - 1:
                    raise
