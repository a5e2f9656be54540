"""The scheduler configuration the suites edit, kept in the scheduler's configuration file as a
kubelet keeps a ConfigMap volume: the suites change the ConfigMap
`volcano-system/integration-scheduler-configmap` (key `volcano-scheduler-ci.conf`, the name of
Volcano CI's helm release) and expect the running scheduler to reload it."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from central.kube.client import ApiError, KubeClient

NAMESPACE = "volcano-system"
CONFIGMAP = "integration-scheduler-configmap"
KEY = "volcano-scheduler-ci.conf"

log = logging.getLogger(__name__)


def write_if_changed(target: Path, text: str) -> bool:
    """Replace `target` with `text` in one rename when it differs; True when written. The new
    file is written beside the folder, not in it: a scheduler watching the folder (Volcano's
    fsnotify) then sees one create, of the finished file."""
    try:
        if target.read_text() == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    staging = target.parent.with_name(f".{target.parent.name}.{target.name}.new")
    staging.write_text(text)
    os.replace(staging, target)
    return True


def configured_text(configmap: dict[str, Any] | None) -> str | None:
    """The key's text in a ConfigMap object, or None (missing ConfigMap or key: the file stays)."""
    data = (configmap or {}).get("data") or {}
    text = data.get(KEY)
    return text if isinstance(text, str) else None


class ConfigMapSync:
    """Polls the ConfigMap and rewrites `target` when its key changes, until `stop()`."""

    def __init__(self, kube: KubeClient, target: Path, interval: float = 0.5):
        self.kube, self.target, self.interval = kube, target, interval
        self.writes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="conformance-confsync", daemon=True)

    def sync_once(self) -> bool:
        text = configured_text(self.kube.get_or_none(f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIGMAP}"))
        if text is None or not write_if_changed(self.target, text):
            return False
        self.writes += 1
        log.info("scheduler configuration synced to %s", self.target)
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except (ApiError, OSError) as err:  # the apiserver going away at the end, a retry later
                log.debug("config sync: %s", err)
            self._stop.wait(self.interval)

    def start(self) -> "ConfigMapSync":
        self.sync_once()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
