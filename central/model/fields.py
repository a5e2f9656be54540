"""Reading fields of Kubernetes objects (dicts), with errors that name the field.

Shared by the parsers of the model: every helper raises InputError whose `where` is the
field path, and the caller adds the object (`object_ref`) and the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from central.errors import InputError

CLUSTER_SCOPED = frozenset({"Node", "Queue", "PriorityClass", "Namespace"})


def object_ref(obj: Mapping[str, Any]) -> str:
    """`Kind namespace/name` (or `Kind name` for cluster-scoped kinds) for messages."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    kind = obj.get("kind", "<no kind>")
    name = meta.get("name", "<unnamed>")
    if kind in CLUSTER_SCOPED:
        return f"{kind} {name}"
    return f"{kind} {meta.get('namespace') or 'default'}/{name}"


def parse_time(text: str, where: str) -> datetime:
    """An RFC 3339 time such as a creationTimestamp (`2026-01-01T00:00:00Z`)."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise InputError(where, f"expected an RFC 3339 time like 2026-01-01T00:00:00Z, got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def parse_duration(text: str, where: str) -> timedelta:
    """A Go duration such as `1h30m`, `90s` or `500ms`."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text).strip():
        raise InputError(where, f"expected a duration like 30m, 1h or 1h30m, got {text!r}")
    return timedelta(seconds=sum(float(n) * units[u] for n, u in parts))


def yaml_problem(err: Exception) -> str:
    """A YAML error on one line: where and what."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark else f"malformed YAML: {problem}"


def get_path(obj: Mapping[str, Any], path: str, default: Any = None) -> Any:
    value: Any = obj
    for part in path.split("."):
        if value is None:
            return default
        if not isinstance(value, Mapping):
            raise InputError(path, f"expected a map, got {type(value).__name__}")
        value = value.get(part)
    return default if value is None else value


def typed(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if isinstance(value, bool) and kind is int or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(where, f"expected {expected}, got {value!r}")
    return value


def integer(value: Any, where: str, minimum: int | None = None) -> int:
    typed(value, int, where)
    if minimum is not None and value < minimum:
        raise InputError(where, f"must be >= {minimum}, got {value}")
    return int(value)


def listed(obj: Mapping[str, Any], path: str) -> list[Any]:
    value = get_path(obj, path, [])
    return typed(value, list, path)


def str_map(obj: Mapping[str, Any], path: str) -> dict[str, str]:
    value = typed(get_path(obj, path, {}), Mapping, path)
    return {str(k): str(v) for k, v in value.items()}


def metadata(obj: Mapping[str, Any], namespaced: bool) -> tuple[str, str]:
    meta = typed(obj.get("metadata") or {}, Mapping, "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("metadata.name", "is required")
    namespace = meta.get("namespace") or ("default" if namespaced else "")
    return str(namespace), name


def parse_index_list(text: object, where: str, limit: int) -> list[int]:
    """A Linux list of ids such as a cpuset ("0-3,8,10-11") or GPU card ids ("0,2"), each
    below `limit` (the node's CPUs or cards); sorted, without repeats.

    Every bound is checked before a range is expanded, so "0-99999999" is refused at once
    instead of costing seconds and gigabytes."""
    if not isinstance(text, str):
        raise InputError(where, f"expected a list of ids like 0-3,8, got {type(text).__name__}")
    digits = len(str(max(limit - 1, 0)))
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, dash, high = part.partition("-")
        ends = (low.strip(), high.strip()) if dash else (low.strip(),)
        if not all(e.isascii() and e.isdigit() for e in ends):
            raise InputError(where, f"expected a list of ids like 0-3,8, got {_shown(text)}")
        if any(len(e) > digits or int(e) >= limit for e in ends):
            raise InputError(where, f"{_shown(part)} is beyond the node's {limit} ids (0-{limit - 1})")
        first, last = int(ends[0]), int(ends[-1])
        if first > last:
            raise InputError(where, f"range {_shown(part)} runs backwards")
        out.update(range(first, last + 1))
    return sorted(out)


def _shown(text: str) -> str:
    """User text quoted in a message, cut short: an error line stays one readable line."""
    return repr(text) if len(text) <= 60 else f"{text[:50]!r}... ({len(text)} characters)"
