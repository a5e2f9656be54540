"""Fixtures: a fresh API stand-in per test and the real kubernetes client pointed at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from central.kube.client import KubeClient
from tests.kube.apiserver import ApiServer


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with ApiServer() as server:
        yield server


@pytest.fixture
def kubeconfig(api: ApiServer, tmp_path) -> str:
    return api.kubeconfig(str(tmp_path / "kubeconfig"))


@pytest.fixture
def kube(kubeconfig: str) -> KubeClient:
    return KubeClient.connect(kubeconfig, qps=1000, burst=1000)


def eventually(check: Callable[[], object], timeout: float = 10.0, what: str = "condition") -> object:
    """Poll `check` until it returns something truthy (tests wait on threads, never on time)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


from tests.kube.realapi import real, real_api  # noqa: E402,F401  (fixtures)
