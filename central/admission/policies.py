"""Validation of lifecycle policies (`spec.policies` and `spec.tasks[i].policies`).

Volcano's rules: each policy names an event (or events) or an exit code, not both and not
neither; exit code 0 is not a failure; an event or exit code appears at most once in a list;
`*` stands alone; only the events and actions a user may name (bus.POLICY_EVENTS/ACTIONS).
The messages are Volcano's verbatim (its double space after a duplicate event included), since
users match on them.
"""

from __future__ import annotations

from typing import Any

from central.admission.fields import Problems, add, integer, mapping, quote, sequence
from central.controllers import bus
from central.errors import InputError


def validate_policies(problems: Problems, raw: Any, path: str) -> None:
    policies = sequence(problems, raw, path)
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for i, item in enumerate(policies or []):
        where = f"{path}[{i}]"
        policy = mapping(problems, item, where)
        if policy is None:
            continue
        events = _events(problems, policy, where)
        exit_code = policy.get("exitCode")
        if events and exit_code is not None:
            add(problems, where, "must not specify event and exitCode simultaneously")
        elif not events and exit_code is None:
            add(problems, where, "either event and exitCode should be specified")
        action = policy.get("action")
        if action not in bus.POLICY_ACTIONS:
            add(
                problems,
                f"{where}.action",
                f"invalid policy action {quote(action)}; valid actions: {', '.join(bus.POLICY_ACTIONS)}",
            )
        for event_path, event in events:
            if event not in bus.POLICY_EVENTS:
                add(
                    problems,
                    event_path,
                    f"invalid policy event {quote(event)}; valid events: {', '.join(bus.POLICY_EVENTS)}",
                )
            elif event in seen_events:
                add(problems, event_path, f"duplicate event {event}  across different policy")
            else:
                seen_events.add(event)
        if exit_code is not None and not events:
            code = integer(problems, exit_code, f"{where}.exitCode", minimum=None)
            if code == 0:
                add(problems, f"{where}.exitCode", "0 is not a valid error code")
            elif code is not None and code in seen_codes:
                add(problems, f"{where}.exitCode", f"duplicate exitCode {code}")
            if code is not None:
                seen_codes.add(code)
        if policy.get("timeout") is not None:
            try:
                bus.parse_duration(policy["timeout"])
            except InputError as err:
                add(problems, f"{where}.timeout", err.message)
    if bus.ANY in seen_events and len(seen_events) > 1:
        add(problems, path, "if there's * here, no other policy should be here")


def _events(problems: Problems, policy: Any, where: str) -> list[tuple[str, Any]]:
    """(field path, event) for `event` and each of `events`, repeats within one policy dropped."""
    out: list[tuple[str, Any]] = []
    if policy.get("event"):
        out.append((f"{where}.event", policy["event"]))
    for j, event in enumerate(sequence(problems, policy.get("events"), f"{where}.events") or []):
        if all(event != e for _, e in out):
            out.append((f"{where}.events[{j}]", event))
    return out
