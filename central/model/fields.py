"""Reading fields of Kubernetes objects (dicts), with errors that name the field.

Shared by the parsers of the model: every helper raises InputError whose `where` is the
field path, and the caller adds the object (`object_ref`) and the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import yaml

from central.errors import InputError, shown

CLUSTER_SCOPED = frozenset({"Node", "Queue", "PriorityClass", "Namespace", "HyperNode"})
OBJECT_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_DNS_SUBDOMAIN = re.compile(OBJECT_NAME_PATTERN)


# The spellings Go's strconv.ParseBool reads: Volcano's argument getters and its job plugins'
# boolean flags take these, and nothing else, for true and false.
GO_BOOLS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
            **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}


def is_object_name(name: object) -> bool:
    """A name the API server accepts for most objects (a DNS-1123 subdomain)."""
    return isinstance(name, str) and len(name) <= 253 and _DNS_SUBDOMAIN.match(name) is not None


def map_at(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`obj[key]` where it is a map, else an empty one: for reading a part of an object that
    may be missing or malformed (what refuses it is checked elsewhere)."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def list_at(obj: Mapping[str, Any], key: str) -> list[Any]:
    """`obj[key]` where it is a list, else an empty one (as `map_at`)."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def object_ref(obj: Mapping[str, Any]) -> str:
    """`Kind namespace/name` (or `Kind name` for cluster-scoped kinds) for messages."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
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


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# Go's time.Duration is int64 nanoseconds: about 292 years. Longer is an error there and here,
# which also keeps `creation + duration` inside what a datetime can hold.
MAX_DURATION_SECONDS = (2**63 - 1) / 1e9


def parse_duration(text: object, where: str) -> timedelta:
    """A Go duration such as `1h30m`, `90s`, `500ms` or `0`, at most Go's ~292 years."""
    value = text.strip() if isinstance(text, str) else None
    if value == "0":
        return timedelta(0)
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(value or "") if value and len(value) <= 64 else ():
        if match.start() != pos:
            break
        total += float(match[1]) * _UNIT_SECONDS[match[2]]
        pos = match.end()
    if not value or pos != len(value):
        raise InputError(where, f"expected a duration like 90s, 30m or 1h30m, got {shown(text)}")
    if total > MAX_DURATION_SECONDS:
        raise InputError(where, f"duration {value} is too long (at most 2562047h, Go's limit)")
    return timedelta(seconds=total)


# Bounds on the shape of any document a user hands us. Real objects nest about 15 deep;
# YAML aliases can make a small file expand to an exponential tree (or a cycle), which every
# walk over it would pay for, so both are refused when the file is read.
MAX_DEPTH = 100
MAX_NODES = 1_000_000


# libyaml's C loader where PyYAML was built with it: the same safe subset, 7.7x less CPU than the
# pure-Python one on a 2,000-node / 20,000-pod manifest (3.5 s against 27 s)
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_documents(data: bytes | str, where: str) -> list[Any]:
    """Every document of a YAML (or JSON) text, in any encoding YAML allows (UTF-8, or UTF-16/32
    with a byte-order mark). InputError for bad bytes, bad syntax, or a tree too deep or too big."""
    try:
        docs = list(yaml.load_all(data, Loader=YAML_LOADER))  # noqa: S506 (a safe loader)
    except yaml.YAMLError as err:
        if "nesting depth" in str(getattr(err, "problem", "")):
            # libyaml 0.2.5+ (PyYAML 6.0.4's wheels) stops at its own limit: the same refusal
            raise InputError(where, f"nested deeper than {MAX_DEPTH} levels") from None
        raise InputError(where, _yaml_problem(err)) from None
    except RecursionError:
        raise InputError(where, f"nested deeper than {MAX_DEPTH} levels") from None
    for doc in docs:
        check_tree(doc, where)
    return docs


def check_tree(value: Any, where: str) -> None:
    """Refuse a decoded document that nests deeper than MAX_DEPTH, has more than MAX_NODES
    values (counting each alias expansion), or contains itself."""
    stack: list[tuple[Any, int, tuple[int, ...]]] = [(value, 0, ())]
    visited = 0
    while stack:
        item, depth, path = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            raise InputError(where, f"more than {MAX_NODES} values (YAML aliases expand to copies)")
        if depth > MAX_DEPTH:
            raise InputError(where, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, (Mapping, list)):
            if id(item) in path:
                raise InputError(where, "a YAML alias makes the document contain itself")
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1, (*path, id(item))) for child in children)


def _yaml_problem(err: Exception) -> str:
    """A YAML error on one line: where and what."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is None:
        return f"malformed YAML: {problem}"
    return f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def get_path(obj: Mapping[str, Any], path: str, default: Any = None) -> Any:
    value: Any = obj
    for part in path.split("."):
        if value is None:
            return default
        if not isinstance(value, Mapping):
            raise InputError(path, f"expected a map, got {type(value).__name__}")
        value = value.get(part)
    return default if value is None else value


_KIND_NAMES = {Mapping: "a map", dict: "a map", list: "a list", str: "a string", int: "an integer",
               bool: "true or false", float: "a number"}


def typed(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if isinstance(value, bool) and kind is int or not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise InputError(where, f"expected {expected}, got {shown(value)}")
    return value


def integer(value: Any, where: str, minimum: int | None = None) -> int:
    typed(value, int, where)
    if minimum is not None and value < minimum:
        raise InputError(where, f"must be >= {minimum}, got {shown(value)}")
    return int(value)


def listed(obj: Mapping[str, Any], path: str) -> list[Any]:
    value: list[Any] = typed(get_path(obj, path, []), list, path)
    return value


def str_map(obj: Mapping[str, Any], path: str) -> dict[str, str]:
    value = typed(get_path(obj, path, {}), Mapping, path)
    return {str(k): str(v) for k, v in value.items()}


def metadata(obj: Mapping[str, Any], namespaced: bool) -> tuple[str, str]:
    meta = typed(obj.get("metadata") or {}, Mapping, "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("metadata.name", "is required")
    namespace = typed(meta.get("namespace") or ("default" if namespaced else ""), str, "metadata.namespace")
    return namespace, name


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
            raise InputError(where, f"expected a list of ids like 0-3,8, got {shown(text)}")
        if any(len(e) > digits or int(e) >= limit for e in ends):
            raise InputError(where, f"{shown(part)} is beyond the node's {limit} ids (0-{limit - 1})")
        first, last = int(ends[0]), int(ends[-1])
        if first > last:
            raise InputError(where, f"range {shown(part)} runs backwards")
        out.update(range(first, last + 1))
    return sorted(out)

