"""A controller's writes into a namespace being deleted: each key logged once, at debug, and not
retried; the same failures for an object that stays are warned about and retried."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from central.controllers.loops.base import ControllerLoop
from central.controllers.loops.jobs import JobController
from central.kube.client import ApiError
from tests.waiting import eventually

LOGGER = "central.controllers.loops.base"
TERMINATING = ApiError(403, "Forbidden", "unable to create new content in namespace team because it is being terminated")
NAMESPACE_GONE = ApiError(404, "NotFound", 'namespaces "team" not found')
CASCADED = ApiError(404, "NotFound", 'pods "j-0" not found')
CONFLICT = ApiError(409, "Conflict", "the object has been modified")


class Failing(ControllerLoop):
    name = "failing"

    def __init__(self, err: ApiError, deleting: bool):
        super().__init__(None, events=None, workers=1)  # type: ignore[arg-type]
        self.err, self.deleting, self.calls = err, deleting, 0

    def sync(self, key: str) -> float | None:
        self.calls += 1
        raise self.err

    def being_deleted(self, key: str) -> bool:
        return self.deleting


def drain(loop: Failing, keys: list[str], rounds: int = 3) -> None:
    """A worker syncs each key `rounds` times (each round re-adds them, as new events would)."""
    loop.start_workers()
    try:
        for n in range(1, rounds + 1):
            for key in keys:
                loop.queue.add(key)
            eventually(lambda n=n: loop.calls >= n * len(keys) and loop.syncs >= n * len(keys))
    finally:
        loop.stop(5)


@pytest.mark.parametrize("err, deleting", [(TERMINATING, False), (NAMESPACE_GONE, False),
                                           (CASCADED, True), (CONFLICT, True)])
def test_writes_into_a_namespace_being_deleted_log_once_at_debug(caplog, err, deleting) -> None:
    loop = Failing(err, deleting)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        drain(loop, ["team/a", "team/b"])
    records = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert {level for level, _ in records} == {logging.DEBUG}, records
    assert sorted(m.split()[1].rstrip(":") for _, m in records) == ["team/a", "team/b"]  # once per key
    assert loop.calls == 6  # three rounds of two keys: no backoff retry in between
    assert loop.queue.failures("team/a") == 0


@pytest.mark.parametrize("err, deleting", [
    (CASCADED, False),  # a PodGroup or pod missing while its Job stays: recreate it
    (CONFLICT, False),
    (ApiError(403, "Forbidden", "denied by policy caldera-owned"), True),  # refused, whatever the Job's state
    (ApiError(500, "InternalError", "etcd"), True),
])
def test_other_failures_are_warned_and_retried(caplog, err, deleting) -> None:
    loop = Failing(err, deleting)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        drain(loop, ["team/a"], rounds=1)
    levels = [r.levelno for r in caplog.records]
    assert levels and set(levels) == {logging.WARNING}  # one per retry


def test_the_job_controller_knows_a_job_being_deleted() -> None:
    jobs: dict[str, Any] = {"team/live": {"metadata": {"name": "live"}},
                            "team/going": {"metadata": {"name": "going", "deletionTimestamp": "2026-01-01T00:00:00Z"}}}
    controller = JobController.__new__(JobController)
    controller.jobs = type("R", (), {"objects": jobs})()  # type: ignore[assignment]
    assert [controller.being_deleted(k) for k in ("team/live", "team/going", "team/gone")] == [False, True, True]
