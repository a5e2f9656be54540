"""The CronJob controller's decisions (batch.volcano.sh/v1alpha1 CronJob), as Volcano's, which
follows Kubernetes' CronJob controller: pure functions of the CronJob, the Jobs it controls and
the time, so they are tested without a cluster (the loop is `loops.cronjobs`).

One sync, in Volcano's order:
1. finished Jobs (Completed, Failed, Terminated) leave `status.active`; the newest completion
   sets `status.lastSuccessfulTime`; the oldest finished Jobs beyond the successful and failed
   history limits are deleted;
2. active references to Jobs that no longer exist are dropped;
3. unless suspended: the most recent unmet schedule time (no earlier than
   `startingDeadlineSeconds` before now) starts a Job named `<cronjob>-<minutes since epoch>`,
   after the concurrency policy (Forbid skips while one is active, Replace deletes the active);
4. the loop looks again just after the next schedule time.

Schedules are cron's five fields or a descriptor (`@hourly`), read by croniter; the time zone is
`spec.timeZone`, or a `CRON_TZ=`/`TZ=` prefix (which then wins, as in Volcano), else UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterError

API_VERSION = "batch.volcano.sh/v1alpha1"
SCHEDULED_TIMESTAMP = "volcano.sh/cronjob-scheduled-timestamp"
FINISHED = ("Completed", "Failed", "Terminated")
NEXT_SCHEDULE_DELTA = 0.1  # seconds after the schedule time the loop looks again (Volcano's 100 ms)
MANY_MISSED = 100


class ScheduleError(ValueError):
    """A schedule or time zone that cannot be read."""


@dataclass(frozen=True)
class Schedule:
    expression: str
    zone: timezone | ZoneInfo

    def next(self, after: datetime) -> datetime:
        """The first schedule time strictly after `after` (cron's resolution: whole minutes)."""
        start = after.astimezone(self.zone)
        nxt: datetime = croniter(self.expression, start).get_next(datetime)
        return nxt.astimezone(timezone.utc)


def _zone(name: str) -> timezone | ZoneInfo:
    if name in ("", "UTC", "Local"):  # Go's LoadLocation("") is UTC; the controller runs in UTC
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ScheduleError(f"unknown time zone {name!r}") from err


def parse_schedule(schedule: str, time_zone: str | None = None) -> Schedule:
    """A CronJob's schedule, or ScheduleError saying what is wrong with it."""
    text = schedule.strip()
    zone_name = time_zone or ""
    if text.startswith(("CRON_TZ=", "TZ=")):
        prefix, _, text = text.partition(" ")
        zone_name = prefix.split("=", 1)[1]
        text = text.strip()
    zone = _zone(zone_name)
    if text.startswith("@every"):
        raise ScheduleError(f"{text!r}: @every is not supported")
    if not text or len(text.split()) not in (1, 5) or not croniter.is_valid(text):
        raise ScheduleError(f"unparseable schedule {schedule!r}: want five fields or a descriptor such as @hourly")
    if len(text.split()) == 1 and not text.startswith("@"):
        raise ScheduleError(f"unparseable schedule {schedule!r}: want five fields or a descriptor such as @hourly")
    try:
        croniter(text, datetime(2000, 1, 1, tzinfo=timezone.utc)).get_next(datetime)
    except (CroniterError, ValueError) as err:
        raise ScheduleError(f"unparseable schedule {schedule!r}: {err}") from err
    return Schedule(text, zone)


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def most_recent_schedule_time(cronjob: dict[str, Any], now: datetime, schedule: Schedule,
                              with_deadline: bool) -> tuple[datetime, datetime | None, int]:
    """(earliest time considered, the latest schedule time in (earliest, now] or None, how many
    were missed), as Kubernetes' mostRecentScheduleTime."""
    spec, status = cronjob.get("spec") or {}, cronjob.get("status") or {}
    earliest = parse_time(status.get("lastScheduleTime")) or parse_time(cronjob["metadata"].get("creationTimestamp")) or now
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=deadline))
    t1 = schedule.next(earliest)
    if now < t1:
        return earliest, None, 0
    t2 = schedule.next(t1)
    if now < t2:
        return earliest, t1, 0
    between = round((t2 - t1).total_seconds())
    missed = int((now - t1).total_seconds()) // between + 1
    recent = None
    t = schedule.next(t1 + timedelta(seconds=(missed - 2) * between))
    while t <= now:
        recent = t
        t = schedule.next(t)
    return earliest, recent, missed


def next_schedule_delay(cronjob: dict[str, Any], now: datetime, schedule: Schedule) -> float:
    """Seconds until just after the next schedule time."""
    earliest, recent, missed = most_recent_schedule_time(cronjob, now, schedule, False)
    base = recent or (earliest if missed == 0 else now)
    return (schedule.next(base) - now).total_seconds() + NEXT_SCHEDULE_DELTA


def job_name(cronjob: dict[str, Any], scheduled: datetime) -> str:
    return f"{cronjob['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def controller_ref(cronjob: dict[str, Any]) -> dict[str, Any]:
    meta = cronjob["metadata"]
    return {"apiVersion": API_VERSION, "kind": "CronJob", "name": meta["name"], "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


def job_from_template(cronjob: dict[str, Any], scheduled: datetime, schedule: Schedule) -> dict[str, Any]:
    template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    annotations = dict(tmeta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP] = scheduled.astimezone(schedule.zone).isoformat(timespec="seconds").replace(
        "+00:00", "Z")
    return {"apiVersion": API_VERSION, "kind": "Job",
            "metadata": {"name": job_name(cronjob, scheduled), "namespace": cronjob["metadata"].get("namespace"),
                         "labels": dict(tmeta.get("labels") or {}), "annotations": annotations,
                         "ownerReferences": [controller_ref(cronjob)]},
            "spec": dict(template.get("spec") or {})}


def controlled_by(job: dict[str, Any], cronjob: dict[str, Any]) -> bool:
    meta = cronjob["metadata"]
    return any(ref.get("controller") and ref.get("kind") == "CronJob" and ref.get("name") == meta["name"]
               and ref.get("uid") == meta.get("uid") for ref in job["metadata"].get("ownerReferences") or [])


def _phase(job: dict[str, Any]) -> str:
    return (((job.get("status") or {}).get("state")) or {}).get("phase") or ""


def _reference(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {"apiVersion": API_VERSION, "kind": "Job", "namespace": meta.get("namespace"), "name": meta["name"],
            "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}


@dataclass
class CronJobDecision:
    status: dict[str, Any]
    status_changed: bool = False
    create: dict[str, Any] | None = None
    delete: list[str] = field(default_factory=list)  # Job names, oldest first
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    requeue_after: float | None = None


def _oldest_first(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(jobs, key=lambda j: (j["metadata"].get("creationTimestamp") or "~", j["metadata"]["name"]))


def _finish(cronjob: dict[str, Any], jobs: list[dict[str, Any]], d: CronJobDecision) -> None:
    spec = cronjob.get("spec") or {}
    active = d.status.setdefault("active", [])
    succeeded, failed = [], []
    for job in jobs:
        phase = _phase(job)
        if phase not in FINISHED:
            continue
        uid = job["metadata"].get("uid")
        if any(ref.get("uid") == uid for ref in active):
            active[:] = [ref for ref in active if ref.get("uid") != uid]
            d.events.append(("Normal", "SawCompletedJob", f"Saw completed job: {job['metadata']['name']} in active, remove"))
            d.status_changed = True
        if phase == "Completed":
            finished = parse_time(((job.get("status") or {}).get("state") or {}).get("lastTransitionTime"))
            last = parse_time(d.status.get("lastSuccessfulTime"))
            if finished is not None and (last is None or finished > last):
                d.status["lastSuccessfulTime"] = format_time(finished)
                d.status_changed = True
            succeeded.append(job)
        elif phase == "Failed":  # Terminated leaves active but counts in neither history
            failed.append(job)
    for jobs_of_kind, limit in ((succeeded, spec.get("successfulJobsHistoryLimit")),
                                (failed, spec.get("failedJobsHistoryLimit"))):
        if limit is None or len(jobs_of_kind) <= limit:
            continue
        for job in _oldest_first(jobs_of_kind)[:len(jobs_of_kind) - limit]:
            d.delete.append(job["metadata"]["name"])
            active[:] = [ref for ref in active if ref.get("uid") != job["metadata"].get("uid")]
            d.events.append(("Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']!r}"))
            d.status_changed = True


def reconcile_cronjob(cronjob: dict[str, Any], jobs: list[dict[str, Any]], now: datetime) -> CronJobDecision:
    """What to do for one CronJob, given every Job in its namespace, at `now` (aware, UTC)."""
    status = dict(cronjob.get("status") or {})
    status["active"] = [dict(ref) for ref in status.get("active") or []]
    d = CronJobDecision(status=status)
    if cronjob["metadata"].get("deletionTimestamp"):
        return d
    spec = cronjob.get("spec") or {}
    owned = [j for j in jobs if controlled_by(j, cronjob)]
    _finish(cronjob, owned, d)
    uids = {j["metadata"].get("uid") for j in owned}
    for ref in list(status["active"]):
        if ref.get("uid") not in uids:  # the Job is gone (or was replaced under the same name)
            d.events.append(("Warning", "StaleReference", f"Active job {ref.get('name')!r} no longer exists (UID: {ref.get('uid')})"))
            status["active"].remove(ref)
            d.status_changed = True
    if spec.get("suspend"):
        return d
    try:
        schedule = parse_schedule(spec.get("schedule") or "", spec.get("timeZone"))
    except ScheduleError as err:
        d.events.append(("Warning", "InvalidSchedule", str(err)))
        return d
    _, scheduled, missed = most_recent_schedule_time(cronjob, now, schedule, True)
    d.requeue_after = next_schedule_delay(cronjob, now, schedule)
    if scheduled is None:
        return d
    if missed > MANY_MISSED:
        d.events.append(("Warning", "TooManyMissedTimes",
                         "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"))
    name = job_name(cronjob, scheduled)
    if any(ref.get("name") == name for ref in status["active"]) or status.get("lastScheduleTime") == format_time(scheduled):
        return d
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy == "Forbid" and status["active"]:
        d.events.append(("Warning", "ForbidConcurrent", "Skipping job creation because another job is already running"))
        return d
    if policy == "Replace" and status["active"]:
        d.events.append(("Warning", "ReplaceConcurrent", "Replacing active job for CronJob"))
        for ref in status["active"]:
            d.delete.append(ref["name"])
            d.events.append(("Normal", "SuccessfulDelete", f"Deleted job {ref['name']!r}"))
        status["active"] = []
        d.status_changed = True
    d.create = job_from_template(cronjob, scheduled, schedule)
    status["lastScheduleTime"] = format_time(scheduled)
    d.status_changed = True
    # the loop adds the created Job's reference to status.active (its uid comes from the create)
    return d


def active_reference(job: dict[str, Any]) -> dict[str, Any]:
    """status.active's entry for a Job just created."""
    return _reference(job)
