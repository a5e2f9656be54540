"""The CronJob controller's decisions, with cases from Volcano's (and Kubernetes') CronJob
controller: schedule times, missed runs, concurrency policies, suspend, starting deadline,
history limits and the status fields."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from central.controllers.cronjobs import (
    SCHEDULED_TIMESTAMP,
    ScheduleError,
    active_reference,
    format_time,
    most_recent_schedule_time,
    parse_schedule,
    reconcile_cronjob,
)

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


def cronjob(schedule="*/1 * * * *", created=T0 - timedelta(hours=1), **spec):
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": "cj", "namespace": "ns", "uid": "cj-uid", "creationTimestamp": format_time(created)},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"app": "x"}},
                                                           "spec": {"minAvailable": 1, "tasks": []}}, **spec},
            "status": {}}


def job(name, phase="Running", created=T0, finished=None, uid=None):
    state = {"phase": phase}
    if finished:
        state["lastTransitionTime"] = format_time(finished)
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid or f"{name}-uid", "creationTimestamp": format_time(created),
                         "ownerReferences": [{"kind": "CronJob", "name": "cj", "uid": "cj-uid", "controller": True}]},
            "status": {"state": state}}


def test_schedules_parse_with_time_zones_and_refuse_bad_ones():
    assert parse_schedule("0 9 * * *", "Asia/Shanghai").next(T0) == datetime(2026, 3, 2, 1, 0, tzinfo=timezone.utc)
    assert parse_schedule("CRON_TZ=Asia/Shanghai 0 9 * * *").next(T0) == datetime(2026, 3, 2, 1, 0, tzinfo=timezone.utc)
    assert parse_schedule("@hourly").next(T0) == T0 + timedelta(hours=1)
    for bad in ("bad", "* * * *", "61 * * * *", "@every 5m", ""):
        with pytest.raises(ScheduleError):
            parse_schedule(bad)
    with pytest.raises(ScheduleError, match="time zone"):
        parse_schedule("* * * * *", "Mars/Olympus")


def test_most_recent_schedule_time_counts_missed_runs():
    cj = cronjob("0 * * * *", created=T0 - timedelta(minutes=30))
    _, recent, missed = most_recent_schedule_time(cj, T0 - timedelta(minutes=1), parse_schedule("0 * * * *"), True)
    assert recent is None and missed == 0
    _, recent, missed = most_recent_schedule_time(cj, T0 + timedelta(minutes=5), parse_schedule("0 * * * *"), True)
    assert recent == T0 and missed == 0
    _, recent, missed = most_recent_schedule_time(cj, T0 + timedelta(hours=5, minutes=5), parse_schedule("0 * * * *"), True)
    assert recent == T0 + timedelta(hours=5) and missed == 6


def test_a_due_schedule_creates_one_named_owned_job_and_records_the_time():
    d = reconcile_cronjob(cronjob(), [], T0 + timedelta(seconds=5))
    assert d.create is not None
    assert d.create["metadata"]["name"] == f"cj-{int(T0.timestamp()) // 60}"
    assert d.create["metadata"]["ownerReferences"][0] | {} == {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
                                                                "name": "cj", "uid": "cj-uid", "controller": True,
                                                                "blockOwnerDeletion": True}
    assert d.create["metadata"]["annotations"][SCHEDULED_TIMESTAMP] == "2026-03-01T10:00:00Z"
    assert d.create["metadata"]["labels"] == {"app": "x"} and d.create["spec"]["minAvailable"] == 1
    assert d.status["lastScheduleTime"] == "2026-03-01T10:00:00Z" and d.status_changed
    assert d.requeue_after == pytest.approx(55.1)


def test_an_already_scheduled_time_creates_nothing():
    cj = cronjob()
    cj["status"] = {"lastScheduleTime": format_time(T0)}
    d = reconcile_cronjob(cj, [], T0 + timedelta(seconds=5))
    assert d.create is None and not d.status_changed


def test_suspend_creates_nothing_but_still_tidies_finished_jobs():
    cj = cronjob(suspend=True)
    cj["status"] = {"active": [active_reference(job("a"))]}
    d = reconcile_cronjob(cj, [job("a", "Completed", finished=T0)], T0 + timedelta(seconds=5))
    assert d.create is None and d.status["active"] == [] and d.status["lastSuccessfulTime"] == format_time(T0)
    assert d.requeue_after is None


@pytest.mark.parametrize("policy,create,delete", [("Allow", True, []), ("Forbid", False, []), ("Replace", True, ["old"])])
def test_concurrency_policies_with_a_job_still_running(policy, create, delete):
    cj = cronjob(concurrencyPolicy=policy)
    cj["status"] = {"active": [active_reference(job("old"))], "lastScheduleTime": format_time(T0 - timedelta(minutes=1))}
    d = reconcile_cronjob(cj, [job("old")], T0 + timedelta(seconds=5))
    assert (d.create is not None) == create
    assert d.delete == delete
    if policy == "Replace":
        assert d.status["active"] == []


def test_starting_deadline_skips_runs_missed_by_more_than_it():
    cj = cronjob("0 * * * *", created=T0 - timedelta(hours=3), startingDeadlineSeconds=60)
    assert reconcile_cronjob(cj, [], T0 + timedelta(minutes=5)).create is None
    assert reconcile_cronjob(cj, [], T0 + timedelta(seconds=30)).create is not None


def test_history_limits_delete_the_oldest_finished_jobs():
    jobs = [job(f"ok{i}", "Completed", created=T0 + timedelta(minutes=i), finished=T0 + timedelta(minutes=i, seconds=30))
            for i in range(5)]
    jobs += [job(f"bad{i}", "Failed", created=T0 + timedelta(minutes=i)) for i in range(3)]
    jobs += [job("gone", "Terminated")]
    cj = cronjob(successfulJobsHistoryLimit=3, failedJobsHistoryLimit=1, suspend=True)
    d = reconcile_cronjob(cj, jobs, T0 + timedelta(minutes=10))
    assert d.delete == ["ok0", "ok1", "bad0", "bad1"]
    assert d.status["lastSuccessfulTime"] == format_time(T0 + timedelta(minutes=4, seconds=30))


def test_stale_active_references_and_foreign_jobs():
    cj = cronjob(suspend=True)
    cj["status"] = {"active": [active_reference(job("vanished"))]}
    foreign = job("other")
    foreign["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    d = reconcile_cronjob(cj, [foreign], T0)
    assert d.status["active"] == [] and ("Warning", "StaleReference") in [e[:2] for e in d.events]
    assert d.delete == []


def test_many_missed_runs_start_only_the_latest_and_warn():
    cj = cronjob("*/1 * * * *", created=T0 - timedelta(days=1))
    d = reconcile_cronjob(cj, [], T0 + timedelta(seconds=1))
    assert d.create["metadata"]["name"] == f"cj-{int(T0.timestamp()) // 60}"
    assert ("Warning", "TooManyMissedTimes") in [e[:2] for e in d.events]


def test_a_bad_schedule_is_an_event_not_a_crash():
    d = reconcile_cronjob(cronjob("nope"), [], T0)
    assert d.create is None and d.events[0][1] == "InvalidSchedule"
