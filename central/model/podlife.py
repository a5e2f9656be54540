"""How a simulated pod lives: the `sim.caldera.sh/*` annotations, read in one place.

Both simulated clocks use these: `caldera simulate --until` (simulated time) and the
simulated kubelet behind `caldera up` (wall time). Every reader is total: an absent
annotation gives the default, a malformed one raises InputError naming the object and the
annotation, so one line tells the user what to fix.

- `sim.caldera.sh/duration` (Pod): how long the pod runs once started; absent: until deleted.
- `sim.caldera.sh/exit-code` (Pod): the exit code it ends with; default 0 (Succeeded).
- `sim.caldera.sh/min-peers` (Pod, PodGroup or Job): how many pods of its job must run for
  it to make progress; absent: the job's minAvailable.
- `sim.caldera.sh/submit-at` (Job, PodGroup or Pod): when the object appears, as a duration
  from the start of the simulation; absent: at the start.
- `sim.caldera.sh/cross-node-slowdown` (Pod): factor on the pod's progress time while its
  job spans more than one node; default 1 (placement does not matter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.errors import InputError
from central.model.fields import object_ref, parse_duration

PREFIX = "sim.caldera.sh/"
DURATION = PREFIX + "duration"
EXIT_CODE = PREFIX + "exit-code"
MIN_PEERS = PREFIX + "min-peers"
SUBMIT_AT = PREFIX + "submit-at"
CROSS_NODE_SLOWDOWN = PREFIX + "cross-node-slowdown"


def pod_duration(pod: Mapping[str, Any]) -> float | None:
    """Seconds the pod runs before it exits; None: it runs until deleted."""
    text = _annotation(pod, DURATION)
    if text is None:
        return None
    return parse_duration(text, _where(pod, DURATION)).total_seconds()


def pod_exit_code(pod: Mapping[str, Any]) -> int:
    """The exit code the pod ends with (0..255); 0 when not annotated."""
    text = _annotation(pod, EXIT_CODE)
    if text is None:
        return 0
    try:
        code = int(text)
    except ValueError:
        code = -1
    if not 0 <= code <= 255:
        raise InputError(_where(pod, EXIT_CODE), f"expected an exit code 0..255, got {text!r}")
    return code


def min_peers(obj: Mapping[str, Any]) -> int | None:
    """Pods of the job that must run for any of them to progress; None: not annotated."""
    text = _annotation(obj, MIN_PEERS)
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(_where(obj, MIN_PEERS), f"expected a whole number >= 1, got {text!r}")
    return int(text)


def submit_at(obj: Mapping[str, Any]) -> float:
    """Seconds from the start of the simulation at which the object appears (0 when absent)."""
    text = _annotation(obj, SUBMIT_AT)
    if text is None:
        return 0.0
    return parse_duration(text, _where(obj, SUBMIT_AT)).total_seconds()


def cross_node_slowdown(pod: Mapping[str, Any]) -> float:
    """Factor (>= 1) on the pod's running time while its job spans several nodes."""
    text = _annotation(pod, CROSS_NODE_SLOWDOWN)
    if text is None:
        return 1.0
    try:
        factor = float(text)
    except ValueError:
        factor = 0.0
    if not 1.0 <= factor < float("inf"):
        raise InputError(_where(pod, CROSS_NODE_SLOWDOWN), f"expected a factor >= 1 such as 1.3, got {text!r}")
    return factor


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping) or annotations.get(key) is None:
        return None
    value = annotations[key]
    if not isinstance(value, str):
        raise InputError(_where(obj, key), f"annotation values are strings, got {value!r}")
    return value.strip()


def _where(obj: Mapping[str, Any], key: str) -> str:
    return f"{object_ref(obj)}: metadata.annotations[{key}]"
