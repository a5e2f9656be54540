"""How a simulated pod lives: the `sim.caldera.sh/*` annotations, read in one place.

Both simulated clocks use these: `caldera simulate --until` (simulated time) and the
simulated kubelet behind `caldera up` (wall time). Every reader is total: an absent
annotation gives the default, a malformed one raises InputError naming the object and the
annotation, so one line tells the user what to fix.

- `sim.caldera.sh/duration` (Pod): how long the pod runs once started; absent: its containers'
  commands say (`commandrun`: `sh -c "sleep 10; exit 1"`), and a command not understood runs
  until deleted.
- `sim.caldera.sh/exit-code` (Pod): the exit code it ends with when `duration` is set; default 0.
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
from central.model.commandrun import Run, container_run
from central.model.fields import object_ref, parse_duration

PREFIX = "sim.caldera.sh/"
DURATION = PREFIX + "duration"
EXIT_CODE = PREFIX + "exit-code"
MIN_PEERS = PREFIX + "min-peers"
SUBMIT_AT = PREFIX + "submit-at"
CROSS_NODE_SLOWDOWN = PREFIX + "cross-node-slowdown"


_DURATIONS: dict[str, float] = {}  # annotation text -> seconds: a week's pods share a few hundred texts


def pod_duration(pod: Mapping[str, Any]) -> float | None:
    """Seconds the pod runs before it exits; None: it runs until deleted."""
    text = _annotation(pod, DURATION)
    if text is None:
        return None
    seconds = _DURATIONS.get(text)
    if seconds is None:  # a text read before parsed fine; only an unread one can fail
        seconds = parse_duration(text, _where(pod, DURATION)).total_seconds()
        if len(_DURATIONS) < 100_000:  # bounded: a memo, not a record
            _DURATIONS[text] = seconds
    return seconds


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


def pod_lifetime(pod: Mapping[str, Any]) -> Run:
    """The whole pod's run from its start: the annotations when `duration` is set, else its
    containers' commands played as the kubelet plays them (see `init_runs`, `container_runs`):
    it ends when every regular container has ended for good, Failed if any of them failed."""
    duration = pod_duration(pod)
    if duration is not None:
        return Run(duration, pod_exit_code(pod))
    policy = restart_policy(pod)
    elapsed = 0.0
    for _, run in init_runs(pod):
        if run.seconds is None:
            return Run(None)
        elapsed += run.seconds
        if run.exit_code != 0:  # the pod fails, or the init container restarts for ever
            return Run(elapsed, run.exit_code) if policy == "Never" else Run(None)
    runs = [run for _, run in container_runs(pod)]
    if not runs or any(run.seconds is None or restarts(policy, run.exit_code) for run in runs):
        return Run(None)
    failed = [run.exit_code for run in runs if run.exit_code != 0]
    return Run(elapsed + max(run.seconds or 0.0 for run in runs), failed[0] if failed else 0)


def init_runs(pod: Mapping[str, Any]) -> list[tuple[str, Run]]:
    """The init containers that run to completion, in order, with their runs. One whose command
    is not understood completes at once (an init container must end for the pod to start);
    sidecars (`restartPolicy: Always`) run beside the pod and are left out."""
    spec = pod.get("spec") or {}
    return [(c["name"], container_run(c) or Run(0.0)) for c in spec.get("initContainers") or []
            if c.get("restartPolicy") != "Always"]


def container_runs(pod: Mapping[str, Any]) -> list[tuple[str, Run]]:
    """The regular containers with their runs; one not understood runs until deleted."""
    spec = pod.get("spec") or {}
    return [(c["name"], container_run(c) or Run(None)) for c in spec.get("containers") or []]


def restart_policy(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("restartPolicy") or "Always")


def restarts(policy: str, exit_code: int) -> bool:
    """Whether the kubelet starts a container again after it exits with `exit_code`."""
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


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
