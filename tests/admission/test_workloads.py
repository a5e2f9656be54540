"""Admission of CronJobs and JobFlows: Volcano's webhook rules (admit_cronjob.go,
validate_jobflow.go), each refusal naming the object's field."""

from __future__ import annotations

from typing import Any

import pytest

from central.admission import Cluster, admit


def cronjob(name: str = "nightly", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"tasks": []}}, **spec}}


def jobflow(*flows: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "dag", "namespace": "ns"},
            "spec": {"flows": list(flows)}}


def errors(obj: dict[str, Any]) -> list[str]:
    return admit(obj, Cluster()).errors


@pytest.mark.parametrize("obj,expected", [
    (cronjob(), None),
    (cronjob(schedule="@daily", timeZone="Europe/Berlin"), None),
    (cronjob(schedule=""), "spec.schedule: required"),
    (cronjob(schedule="*/5 * * *"), "spec.schedule: not a valid cron expression"),
    (cronjob(schedule="61 * * * *"), "spec.schedule: not a valid cron expression"),
    (cronjob(schedule="CRON_TZ=UTC 0 * * * *"), "spec.schedule: should not contain TZ"),
    (cronjob(timeZone=""), "spec.timeZone: must be unset or a non-empty string"),
    (cronjob(timeZone="Local"), "spec.timeZone: can't be Local"),
    (cronjob(timeZone="Mars/Olympus_Mons"), "spec.timeZone: unknown time zone"),
    (cronjob(timeZone="../etc/passwd"), "spec.timeZone: unknown time zone"),
    (cronjob(name="x" * 53), "metadata.name: 'xxxxxxxx"),
    (cronjob(name="Upper"), "metadata.name: 'Upper' is not a valid name"),
])
def test_cronjob_rules(obj: dict[str, Any], expected: str | None) -> None:
    found = errors(obj)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expected), found


@pytest.mark.parametrize("flows,expected", [
    ([{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}], None),
    ([{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["zz"]}}],
     "spec.flows[1].dependsOn.targets[0]: jobflow Flow is not DAG: vertex is not defined: 'zz' names no flow of this JobFlow"),
    ([{"name": "a", "dependsOn": {"targets": ["a"]}}], "spec.flows[0].dependsOn: jobflow Flow is not DAG: a -> a"),
    ([{"name": "a", "dependsOn": {"targets": ["c"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}},
      {"name": "c", "dependsOn": {"targets": ["b"]}}], "spec.flows[0].dependsOn: jobflow Flow is not DAG: a -> c -> b -> a"),
    ([{"name": "a"}, {"name": "a"}], None),  # Volcano's e2e: duplicate flow names are allowed
    ([{"dependsOn": {}}], "spec.flows[0].name: required"),
])
def test_jobflow_rules(flows: list[dict[str, Any]], expected: str | None) -> None:
    found = errors(jobflow(*flows))
    if expected is None:
        assert found == []
    else:
        assert found == [expected]


def test_other_groups_kinds_of_the_same_name_are_not_judged() -> None:
    assert errors(dict(cronjob(schedule="nope"), apiVersion="batch/v1")) == []
