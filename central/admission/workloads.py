"""Admission of CronJobs (batch.volcano.sh/v1alpha1) and JobFlows (flow.volcano.sh/v1alpha1),
on CREATE and UPDATE, with Volcano's rules and each problem naming its field:

validate_cronjob(cronjob) -> Problems     a schedule of five cron fields (or a descriptor) with no
                                          CRON_TZ/TZ prefix, a time zone that exists (not Local),
                                          a name short enough for the `-<minutes>` suffix of its
                                          Jobs (52 characters)
validate_jobflow(jobflow) -> Problems     flows named, `dependsOn.targets` naming flows of
                                          the same JobFlow, and no cycle (Volcano: "jobflow Flow
                                          is not DAG")

The JobTemplates a JobFlow names need not exist yet (the controller waits for them, as Volcano's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from central.admission.fields import Problems
from central.controllers.cronjobs import ScheduleError, parse_schedule

MAX_CRONJOB_NAME = 63 - 11  # a Job's name is the CronJob's and `-` and up to 10 digits of minutes
_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_QUALIFIED_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def validate_cronjob(cronjob: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    meta, spec = cronjob.get("metadata") or {}, cronjob.get("spec") or {}
    schedule, zone = spec.get("schedule"), spec.get("timeZone")
    if not schedule:
        problems.append("spec.schedule: required, but got empty")
    elif not isinstance(schedule, str):
        problems.append("spec.schedule: must be a string")
    elif "TZ" in schedule:
        problems.append("spec.schedule: should not contain TZ or CRON_TZ; set the time zone in spec.timeZone")
    else:
        try:
            parse_schedule(schedule)
        except ScheduleError as err:
            problems.append(f"spec.schedule: not a valid cron expression ({err})")
    if zone is not None:
        if not isinstance(zone, str) or not zone:
            problems.append("spec.timeZone: must be unset or a non-empty string")
        elif zone.lower() == "local":
            problems.append("spec.timeZone: can't be Local; name a zone of the IANA database (Europe/Berlin)")
        elif any(p in (".", "..") or p.startswith("-") or not _ZONE_PART.match(p) for p in zone.split("/")):
            problems.append(f"spec.timeZone: unknown time zone {zone!r}")
        else:
            try:
                parse_schedule("* * * * *", zone)
            except ScheduleError:
                problems.append(f"spec.timeZone: unknown time zone {zone!r}")
    name = str(meta.get("name") or "")
    if len(name) > MAX_CRONJOB_NAME:
        problems.append(f"metadata.name: {name!r} is longer than {MAX_CRONJOB_NAME} characters, which leaves no room "
                        "for the suffix of its Jobs' names (63 in all)")
    elif name and not _QUALIFIED_NAME.match(name):
        problems.append(f"metadata.name: {name!r} is not a valid name (lower-case letters, digits, '-' and '.')")
    return problems


def validate_jobflow(jobflow: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    flows = (jobflow.get("spec") or {}).get("flows") or []
    if not isinstance(flows, list):
        return ["spec.flows: must be a list"]
    names: list[str] = [str((f or {}).get("name") or "") for f in flows if isinstance(f, dict)]
    graph: dict[str, list[str]] = {}
    for i, flow in enumerate(flows):
        if not isinstance(flow, dict) or not flow.get("name"):
            problems.append(f"spec.flows[{i}].name: required")
            continue
        name = str(flow["name"])  # a name given twice is allowed, as Volcano's webhook allows it
        targets = ((flow.get("dependsOn") or {}).get("targets")) or []
        for j, target in enumerate(targets):
            if target not in names:
                problems.append(f"spec.flows[{i}].dependsOn.targets[{j}]: jobflow Flow is not DAG: vertex is not "
                                f"defined: {target!r} names no flow of this JobFlow")
        graph.setdefault(name, []).extend(t for t in targets if t in names)
    cycle = _cycle(graph)
    if cycle:
        at = names.index(cycle[0])
        problems.append(f"spec.flows[{at}].dependsOn: jobflow Flow is not DAG: {' -> '.join(cycle)}")
    return problems


def _cycle(graph: dict[str, list[str]]) -> list[str]:
    """One cycle of the dependency graph as [a, b, ..., a], or [] for a DAG."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return []
