"""A session's undo log: how a session that fails is taken back.

A session works on the cache's own objects. While it is open the cache journals every task
status and node charge (`ClusterCache.set_status`); this log adds what the journal does
not see: queues the session made up (root, the default queue), the jobs' phases,
conditions and fit errors as the session found them, nominations it set at close, and what
plugins `remember`ed. `rollback` replays all of it backwards, so the cache again mirrors
the cluster as the session found it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from central.model.cache import ClusterCache
from central.model.objects import JobInfo


class Journal:
    def __init__(self, cache: ClusterCache):
        self._cache = cache
        self._undo: list[Callable[[], None]] = []  # what rollback() restores besides task statuses
        self._saved_jobs: list[tuple[JobInfo, str, list[dict[str, Any]], Any, Any]] = []
        cache.journal = []

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Run `undo` if the session is rolled back (the newest first)."""
        self._undo.append(undo)

    def save_jobs(self, jobs: Iterable[JobInfo]) -> None:
        """Keep each job's phase, conditions and fit errors as the session found them."""
        self._saved_jobs.extend((job, job.phase, job.conditions, job.fit_errors, job.reported) for job in jobs)

    def recall(self, plugin: str, key: str) -> Any:
        """What `plugin` remembered under `key` in an earlier session (None: nothing)."""
        return self._cache.plugin_memory.get((plugin, key))

    def remember(self, plugin: str, key: str, value: Any) -> None:
        """Keep `value` for `plugin` beyond this session: in the cache, which lives as long as
        the scheduler (or the simulation) does; a rolled back session takes it back."""
        memory, slot = self._cache.plugin_memory, (plugin, key)
        if slot in memory:
            was = memory[slot]
            self._undo.append(lambda: memory.__setitem__(slot, was))
        else:
            self._undo.append(lambda: memory.pop(slot, None))
        memory[slot] = value

    def close(self) -> None:
        """The session closed: the cache stops journaling."""
        self._cache.journal = None

    def rollback(self) -> None:
        """Put the cache back exactly as the session found it: every task status and node
        charge (from the cache's journal, newest first), job phases, conditions and fit
        errors, nominations, and what plugins remembered."""
        cache = self._cache
        journal, cache.journal = cache.journal or [], None
        for i in range(len(journal) - 3, -1, -3):
            cache.set_status(journal[i], journal[i + 1], journal[i + 2])
        for undo in reversed(self._undo):
            undo()
        for job, phase, conditions, fit_errors, reported in self._saved_jobs:
            job.phase, job.conditions, job.fit_errors, job.reported = phase, conditions, fit_errors, reported
