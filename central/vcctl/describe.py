"""`caldera job view`: vcctl's PrintJobInfo and PrintEvents (pkg/cli/job/view.go), byte for byte.

    describe_job(job, zone) -> str      the Job, field for field in vcctl's order and indentation
    events_section(events, now) -> str  its Events, as vcctl ends the view

Values are shown as Go's fmt shows them there: maps as compact JSON with sorted keys, string
lists as `[a b]`, times as time.Time's String() in the local zone, quantities in canonical form,
a missing field as its zero value. vcctl's own quirks are kept, since scripts read its layout
by position: only the env and ssh plugins are listed, three fixed pod annotations always print,
Working Dir sits under Resources, and the Events header says "Form" for "From".

Where the output differs from vcctl on a live cluster, it is in what is shown, not the layout:
API Version and Kind are the Job's (vcctl's typed client clears them and prints them empty),
the Events are those whose involvedObject is this Job (vcctl takes every Event whose name
starts with `<job>.`), and they are listed oldest first, as `kubectl describe` orders them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any

from central.errors import InputError
from central.resources.canonical import canonical_quantity
from central.vcctl.common import human_duration

GO_ZERO_TIME = "0001-01-01 00:00:00 +0000 UTC"
# the pod annotations vcctl always prints, under the labels it gives them
TEMPLATE_ANNOTATIONS = (("Cri . Cci . Io / Container - Type:          ", "cri.cci.io/container-type"),
                        ("Kubernetes . Io / Availablezone:            ", "kubernetes.io/availablezone"),
                        ("Network . Alpha . Kubernetes . Io / Network:", "network.alpha.kubernetes.io/network"))
STATUS_COUNTS = (("Succeeded:    ", "succeeded"), ("Pending:      ", "pending"), ("Running:      ", "running"),
                 ("Failed:       ", "failed"), ("Terminating:  ", "terminating"), ("Unknown:      ", "unknown"),
                 ("RetryCount:   ", "retryCount"), ("Min Available:", "minAvailable"), ("Version:      ", "version"))
EVENT_COLUMNS = "%-15s\t%-40s\t%-30s\t%-40s\t%s\n"


class _Lines:
    """vcctl's WriteLine: two spaces of indent per level."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, level: int, text: str) -> None:
        self.parts.append("  " * level + text + "\n")

    def text(self) -> str:
        return "".join(self.parts)


def describe_job(job: dict[str, Any], zone: tzinfo | None = None) -> str:
    """PrintJobInfo's text for `job` (as the API returns it); times in `zone` (default: local)."""
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    line = _Lines()
    line(0, f"Name:       \t{meta.get('name', '')}")
    line(0, f"Namespace:  \t{meta.get('namespace', '')}")
    line(0, f"Labels:     \t{go_json(meta['labels']) if meta.get('labels') else '<none>'}")
    line(0, f"Annotations:\t{go_json(meta['annotations']) if meta.get('annotations') else '<none>'}")
    line(0, f"API Version:\t{job.get('apiVersion', '')}")
    line(0, f"Kind:       \t{job.get('kind', '')}")
    line(0, "Metadata:")
    line(1, f"Creation Timestamp:\t{go_time(meta.get('creationTimestamp'), zone)}")
    line(1, f"Generate Name:     \t{meta.get('generateName', '')}")
    line(1, f"Generation:        \t{int(meta.get('generation') or 0)}")
    line(1, f"Resource Version:  \t{meta.get('resourceVersion', '')}")
    line(1, f"UID:               \t{meta.get('uid', '')}")
    line(0, "Spec:")
    line(1, f"Min Available:     \t{int(spec.get('minAvailable') or 0)}")
    line(1, "Plugins:")
    plugins = spec.get("plugins") or {}
    line(2, f"Env:\t{go_list(plugins.get('env'))}")
    line(2, f"Ssh:\t{go_list(plugins.get('ssh'))}")
    line(1, f"Scheduler Name:    \t{spec.get('schedulerName', '')}")
    line(1, "Tasks:")
    for task in spec.get("tasks") or []:
        _task(line, task, zone)
    line(0, "Status:")
    for label, field in STATUS_COUNTS:
        if int(status.get(field) or 0) > 0:
            line(1, f"{label}\t{int(status[field])}")
    line(1, "State:")
    line(2, f"Phase:\t{(status.get('state') or {}).get('phase', '')}")
    controlled = status.get("controlledResources") or {}
    if controlled:
        line(1, "Controlled Resources:")
        for key in sorted(controlled):  # Go's map order is random; sorted is one of its orders
            line(2, f"{key}: \t{controlled[key]}")
    conditions = status.get("conditions") or []
    if conditions:
        line(1, "Conditions:\n    Status\tTransitionTime")
        for condition in conditions:
            stamp = condition.get("lastTransitionTime")
            line(2, f"{condition.get('status', '')} \t{go_time(stamp, zone) if stamp else '<nil>'} ")
    return line.text()


def _task(line: _Lines, task: dict[str, Any], zone: tzinfo | None) -> None:
    template = task.get("template") or {}
    template_meta, pod = template.get("metadata") or {}, template.get("spec") or {}
    annotations = template_meta.get("annotations") or {}
    line(2, f"Name:\t{task.get('name', '')}")
    line(2, f"Replicas:\t{int(task.get('replicas') or 0)}")
    line(2, "Template:")
    line(3, "Metadata:")
    line(4, "Annotations:")
    for label, key in TEMPLATE_ANNOTATIONS:
        line(5, f"{label}\t{annotations.get(key, '')}")
    line(4, f"Creation Timestamp:\t{go_time(template_meta.get('creationTimestamp'), zone)}")
    line(3, "Spec:")
    line(4, "Containers:")
    for container in pod.get("containers") or []:
        line(5, "Command:")
        for word in container.get("command") or []:
            line(6, word)
        line(5, f"Image:\t{container.get('image', '')}")
        line(5, f"Name: \t{container.get('name', '')}")
        line(5, "Ports:")
        for port in container.get("ports") or []:
            line(6, f"Container Port:\t{int(port.get('containerPort') or 0)}")
            line(6, f"Name:          \t{port.get('name', '')}")
        resources = container.get("resources") or {}
        line(5, "Resources:")
        for heading, field in (("Limits:", "limits"), ("Requests:", "requests")):
            amounts = resources.get(field) or {}
            line(6, heading)
            line(7, f"Cpu:   \t{_quantity(amounts.get('cpu', 0))}")
            line(7, f"Memory:\t{_quantity(amounts.get('memory', 0))}")
        line(6, f"Working Dir:\t{container.get('workingDir', '')}")
    line(4, "Image Pull Secrets:")
    for secret in pod.get("imagePullSecrets") or []:
        line(5, f"Name:     \t{secret.get('name', '')}")
    line(4, f"Restart Policy:   \t{pod.get('restartPolicy', '')}")


def _quantity(value: object) -> str:
    try:
        return canonical_quantity(value)
    except InputError:  # shown as stored: a view never fails on a value the API let through
        return str(value)


def events_section(events: Sequence[dict[str, Any]], now: datetime) -> str:
    """PrintEvents's text: a row per Event in the given order, or `Events: <none>`."""
    if not events:
        return "Events: \t<none>\n"
    out = ["Events:\n", EVENT_COLUMNS % ("Type", "Reason", "Age", "Form", "Message"),
           EVENT_COLUMNS % (("-------",) * 5)]
    for event in events:
        last = since(event.get("lastTimestamp"), now)
        count = int(event.get("count") or 0)
        age = f"{last} (x{count} over {since(event.get('firstTimestamp'), now)})" if count > 1 else \
            since(event.get("firstTimestamp"), now)
        source = event.get("source") or {}
        origin = ", ".join([source.get("component", "")] + ([source["host"]] if source.get("host") else []))
        out.append(EVENT_COLUMNS % (event.get("type", ""), event.get("reason", ""), age, origin,
                                    (event.get("message") or "").strip()))
    return "".join(out)


def oldest_first(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`kubectl describe`'s order: by the time each Event last happened (stable for ties)."""
    def when(event: dict[str, Any]) -> datetime:
        stamp = event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")
        return _parse(stamp) if stamp else datetime.min.replace(tzinfo=timezone.utc)
    return sorted(events, key=when)


def go_json(mapping: dict[str, Any]) -> str:
    """encoding/json's Marshal of a map: sorted keys, no spaces, HTML characters escaped."""
    text = json.dumps(mapping, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def go_list(words: Sequence[str] | None) -> str:
    """fmt's %v of a []string: `[a b]`, `[]` when empty or absent."""
    return "[" + " ".join(words or []) + "]"


def go_time(stamp: str | None, zone: tzinfo | None = None) -> str:
    """time.Time's String() of an API timestamp, in `zone` (default: local) as metav1.Time
    decodes it; the zero time when absent."""
    if not stamp:
        return GO_ZERO_TIME
    moment = _parse(stamp).astimezone(zone)
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    offset = moment.strftime("%z")
    return f"{moment:%Y-%m-%d %H:%M:%S}{'.' + fraction if fraction else ''} {offset} {moment.tzname() or offset}"


def since(stamp: str | None, now: datetime) -> str:
    """vcctl's TranslateTimestampSince: how long ago, `<unknown>` when absent."""
    if not stamp:
        return "<unknown>"
    return human_duration((now - _parse(stamp)).total_seconds())


def _parse(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
