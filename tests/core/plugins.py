"""Plugins made for the framework tests."""

from __future__ import annotations

from central.errors import InputError
from central.framework.conf import PluginOption
from central.framework.extension import POINTS, Predicate
from central.framework.plugin import Plugin


def plugin(name, flags=None, **methods):
    """A plugin `name` declaring the points of `methods` (point name: function), which answer
    them, with `flags`."""
    bases = (Plugin, *dict.fromkeys(POINTS[m].protocol for m in methods))
    cls = type(name, bases, {k: staticmethod(v) for k, v in methods.items()})
    return cls(PluginOption(name, flags or {}, {}), handle=None)


class RefusingPlugin(Plugin, Predicate):
    """A plugin whose placement reads bad data of one job: the action's boundary catches it."""

    name = "refusing"

    def predicate(self, task, rows):
        if task.job_uid == "ns/bad":
            raise InputError(f"Pod {task.uid}: metadata.annotations[example.com/x]", "unreadable")
        return []
