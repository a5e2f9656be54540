"""`caldera job view` prints vcctl's PrintJobInfo and PrintEvents layout byte for byte.

Each fixture under tests/data/vcctl holds a Job and its Events as the API returns them, and the
text vcctl prints for them (time in UTC), taken from `vcctl job view` built from Volcano's
source and pointed at a server returning the fixture. view_job is the Job and Events of vcctl's
own TestViewJob (pkg/cli/job/view_test.go); view_running_job has every field vcctl prints. The
one change to vcctl's text: API Version and Kind are filled in, where vcctl's typed client has
cleared them.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from central.resources.canonical import canonical_quantity
from central.vcctl.common import human_duration
from central.vcctl.describe import describe_job, events_section, go_json, go_time, oldest_first

DATA = Path(__file__).resolve().parents[1] / "data" / "vcctl"
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


@pytest.mark.parametrize("name", ["view_job", "view_running_job"])
def test_a_job_and_its_events_print_as_vcctl_prints_them(name: str) -> None:
    fixture = json.loads((DATA / f"{name}.json").read_text())
    now = datetime.fromisoformat(fixture["now"].replace("Z", "+00:00"))
    printed = describe_job(fixture["job"], timezone.utc) + events_section(fixture["events"], now)
    assert printed == (DATA / f"{name}.txt").read_text()


def running_job() -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "u-1", "resourceVersion": "42", "generation": 2,
                     "creationTimestamp": "2026-03-04T05:06:07Z", "labels": {"team": "a&b"}},
        "spec": {"minAvailable": 2, "schedulerName": "volcano", "plugins": {"ssh": [], "svc": [], "env": ["--x", "--y"]},
                 "tasks": [{"name": "worker", "replicas": 2, "template": {
                     "metadata": {"annotations": {"kubernetes.io/availablezone": "az-1"}},
                     "spec": {"restartPolicy": "OnFailure", "containers": [{
                         "name": "main", "image": "busybox", "workingDir": "/w",
                         "resources": {"requests": {"cpu": "1000m", "memory": "1024Mi"}, "limits": {"cpu": "1500m"}}}]}}}]},
        "status": {"state": {"phase": "Running"}, "running": 2, "minAvailable": 2,
                   "conditions": [{"status": "Pending", "lastTransitionTime": "2026-03-04T05:06:08Z"},
                                  {"status": "Running"}]},
    }


def test_a_running_job_shows_its_values_as_gos_fmt_does() -> None:
    text = describe_job(running_job(), timezone.utc)
    lines = text.splitlines()
    assert lines[2] == 'Labels:     \t{"team":"a\\u0026b"}'  # encoding/json escapes HTML characters
    assert lines[3] == "Annotations:\t<none>"
    assert lines[4:6] == ["API Version:\tbatch.volcano.sh/v1alpha1", "Kind:       \tJob"]
    assert "  Creation Timestamp:\t2026-03-04 05:06:07 +0000 UTC\n" in text
    assert "    Env:\t[--x --y]\n    Ssh:\t[]\n  Scheduler Name:    \tvolcano\n" in text  # svc is not listed, as vcctl
    assert "          Kubernetes . Io / Availablezone:            \taz-1\n" in text
    assert ("            Limits:\n              Cpu:   \t1500m\n              Memory:\t0\n"
            "            Requests:\n              Cpu:   \t1\n              Memory:\t1Gi\n"
            "            Working Dir:\t/w\n") in text
    assert text.endswith("Status:\n  Running:      \t2\n  Min Available:\t2\n  State:\n    Phase:\tRunning\n"
                         "  Conditions:\n    Status\tTransitionTime\n"
                         "    Pending \t2026-03-04 05:06:08 +0000 UTC \n    Running \t<nil> \n")


def test_times_are_shown_in_the_given_zone() -> None:
    assert go_time("2026-03-04T05:06:07Z", timezone(timedelta(hours=2), "CEST")) == "2026-03-04 07:06:07 +0200 CEST"
    assert go_time(None) == "0001-01-01 00:00:00 +0000 UTC"


def event(reason: str, first: str, last: str, count: int, message: str = "m", host: str = "") -> dict[str, Any]:
    return {"type": "Normal", "reason": reason, "message": f"  {message}\n", "count": count,
            "firstTimestamp": first, "lastTimestamp": last,
            "source": {"component": "vc-controller-manager", **({"host": host} if host else {})}}


def test_events_show_their_count_age_and_source_oldest_first() -> None:
    later = event("PodGroupPending", "2026-03-04T04:06:07Z", "2026-03-04T05:05:07Z", 3, "waiting")
    first = event("Created", "2026-03-04T05:03:07Z", "2026-03-04T05:03:07Z", 1, "created pods", host="n1")
    lines = events_section(oldest_first([later, first]), NOW).splitlines()
    assert lines[0] == "Events:"
    assert lines[3] == ("Normal         \tCreated                                 \t3m                            "
                        "\tvc-controller-manager, n1               \tcreated pods")
    assert lines[4].split("\t")[2].rstrip() == "60s (x3 over 60m)"
    assert lines[4].endswith("\twaiting")
    assert events_section([], NOW) == "Events: \t<none>\n"


@pytest.mark.parametrize("seconds, shown", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"), (600, "10m"),
    (179 * 60, "179m"), (3 * 3600, "3h"), (3 * 3600 + 600, "3h10m"), (9 * 3600, "9h"), (48 * 3600, "2d"),
    (50 * 3600, "2d2h"), (10 * 86400, "10d"), (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y"),
])
def test_ages_read_as_kubectls(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


@pytest.mark.parametrize("value, shown", [
    ("1000m", "1"), ("1500m", "1500m"), ("0.5", "500m"), ("1000", "1k"), ("1e3", "1e3"), ("1E", "1E"),
    ("100Mi", "100Mi"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("0.5Ki", "512"), (2, "2"), ("0.1n", "1n"),
])
def test_quantities_are_canonical_as_apimachinery_prints_them(value: object, shown: str) -> None:
    assert canonical_quantity(value) == shown


def test_json_of_maps_is_gos() -> None:
    assert go_json({"b": "<x>", "a": "é"}) == '{"a":"é","b":"\\u003cx\\u003e"}'
