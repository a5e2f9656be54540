"""Field checks shared by the validators.

Validators collect every problem instead of stopping at the first: each check appends
`"<field.path>: <message>"` to a `Problems` list and returns the value when it is usable
(or None), so later checks can go on with what is valid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from central.errors import InputError, shown
from central.model import annotations as model_annotations
from central.resources.quantity import parse_quantity

Problems = list[str]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_LABEL_MAX = 63
BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def add(problems: Problems, path: str, message: str) -> None:
    problems.append(f"{path}: {message}" if path else message)


def readable(problems: Problems, parse: Callable[..., Any], *args: Any, prefix: str = "") -> Any:
    """What the scheduler and the agent will read must parse: run the model's own parser (so
    admission can never let in what they would refuse) and turn its InputError into a problem."""
    try:
        return parse(*args)
    except InputError as err:
        add(problems, f"{prefix}{err.where}", err.message)
        return None


def interpreted(problems: Problems, raw_annotations: Any, kind: str, prefix: str = "") -> None:
    """The annotations plugins and the agent interpret (central.model.annotations), each valid."""
    if isinstance(raw_annotations, Mapping):
        for err in model_annotations.check(raw_annotations, kind):
            add(problems, f"{prefix}{err.where}", err.message)


def integer(
    problems: Problems, value: Any, path: str, minimum: int | None = 0, maximum: int | None = None
) -> int | None:
    """`value` if it is an int within [minimum, maximum], else a problem and None (in the API
    server's words for the CRD schema's bounds, which Volcano leaves these checks to)."""
    if isinstance(value, bool) or not isinstance(value, int):
        add(problems, path, f"must be an integer, got {quote(value)}")
        return None
    if minimum is not None and value < minimum:
        add(problems, path, f"should be greater than or equal to {minimum}, got {value}")
        return None
    if maximum is not None and value > maximum:
        add(problems, path, f"should be less than or equal to {maximum}, got {value}")
        return None
    return value


def mapping(problems: Problems, value: Any, path: str) -> Mapping[str, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        add(problems, path, f"must be a map, got {type(value).__name__}")
        return None
    return value


def sequence(problems: Problems, value: Any, path: str) -> list[Any] | None:
    if value is None:
        return []
    if not isinstance(value, list):
        add(problems, path, f"must be a list, got {type(value).__name__}")
        return None
    return value


def dns_label(problems: Problems, value: Any, path: str, max_length: int = DNS_LABEL_MAX) -> str | None:
    """`value` if it is a DNS-1123 label; the problems use the API server's words for the CRD
    schema's minLength and pattern, where Volcano checks the names."""
    if value == "":
        add(problems, path, "should be at least 1 chars long")
        return None
    if not isinstance(value, str):
        add(problems, path, "is required")
        return None
    if len(value) > max_length:
        add(problems, path, f"must be no more than {max_length} characters, got {len(value)}")
        return None
    if not _DNS_LABEL.match(value):
        add(
            problems,
            path,
            f"{quote(value)} should match '{_DNS_LABEL.pattern}': lower case letters, digits and '-', "
            "starting and ending with a letter or digit",
        )
        return None
    return value


def resources(problems: Problems, value: Any, path: str) -> dict[str, Decimal]:
    """A ResourceList as exact quantities; each bad or negative quantity is a problem."""
    raw = mapping(problems, value, path)
    out: dict[str, Decimal] = {}
    for name, text in (raw or {}).items():
        try:
            quantity = parse_quantity(text)
        except InputError as err:
            add(problems, f"{path}.{name}", err.message)
            continue
        if quantity < 0:
            add(problems, f"{path}.{name}", f"must not be negative, got {quote(text)}")
            continue
        out[str(name)] = quantity
    return out


def at_most(
    problems: Problems, small: Mapping[str, Decimal], big: Mapping[str, Decimal], small_path: str, big_path: str
) -> None:
    """small <= big on every dimension both name (an unset bound is unlimited)."""
    for name in sorted(small):
        if name in big and small[name] > big[name]:
            add(
                problems,
                f"{small_path}.{name}",
                f"{fmt(small[name], name)} must be <= {big_path}.{name} ({fmt(big[name], name)})",
            )


def fmt(value: Decimal, resource: str = "") -> str:
    """A quantity for people: bytes with a binary suffix (`20Gi`), anything else as a plain number."""
    if resource in BYTE_RESOURCES or resource.startswith("hugepages-"):
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= size and value % size == 0:
                return f"{value // size}{suffix}"
    return format(value.normalize(), "f")


def quote(value: Any) -> str:
    """A value as it appears in messages: JSON-like, so strings are in double quotes."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return shown(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
