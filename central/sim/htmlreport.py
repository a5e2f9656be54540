"""`caldera simulate --until --report FILE.html`: one self-contained page (inline SVG, no scripts).

For a design doc: the figures of every configuration in one table, then one chart per metric
with every configuration overlaid on the same time axis (utilisation per resource, each
queue's share against its deserved share, jobs waiting and running), the distribution of job
completion times, and per configuration a table of every job's times.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from central.errors import InputError
from central.sim.svgchart import COLOURS, Axis, Series, fraction_axis, line_chart, time_axis
from central.sim.timed import JOB_COLUMNS, comparison_rows, job_rows
from central.sim.timeline import TimedResult

JOB_ROWS = 2000  # rows of a per-job table; the rest are in -o json
STYLE = ("body{font:14px sans-serif;margin:2em;max-width:64em;color:#222}h2{margin-top:1.6em}"
         "table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;text-align:left;"
         "border-bottom:1px solid #e4e4e4;white-space:nowrap}th{background:#f4f4f4}"
         "td.n{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1em 0}"
         "figcaption{font-weight:bold;margin-bottom:.3em}svg{background:#fff}.axis-title{font-size:12px}"
         "p.note{color:#666}")


def write_report(path: str, runs: dict[str, TimedResult]) -> None:
    try:
        Path(path).write_text(render(runs))
    except OSError as err:
        raise InputError(path, f"cannot write: {err.strerror}") from None


def render(runs: dict[str, TimedResult]) -> str:
    colours = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(runs)}
    clock = time_axis(max(max(run.time for run in runs.values()), 1.0))
    parts = ["<!doctype html><html lang=en><meta charset=utf-8><title>caldera simulate</title>",
             f"<style>{STYLE}</style>", "<h1>caldera simulate</h1>",
             "<h2>Summary</h2>", _table(comparison_rows(runs)),
             "<h2>Over time</h2>",
             '<p class="note">Every configuration on one chart per figure, over the same time axis: '
             "from the start to the end of the longest run.</p>"]
    resources = sorted({res for run in runs.values() for res in run.metrics["utilization"]})
    for resource in resources:
        series = [Series(name, _steps([(t, u.get(resource, 0.0)) for t, u, _ in run.timeline], run.time),
                         colours[name]) for name, run in runs.items()]
        parts.append(_figure(f"Utilisation of {resource}: allocated / allocatable",
                             line_chart(series, clock, fraction_axis(f"{resource} allocated"))))
    queues = sorted({q for run in runs.values() for q in run.metrics["queue_share"]})
    for queue in queues:
        parts.append(_figure(f"Queue {queue}: dominant share of the cluster, dashed its deserved share",
                             line_chart(_share_series(runs, queue, colours), clock, fraction_axis("share"))))
    for title, axis_title, counts in (
            ("Jobs waiting: submitted, not started", "jobs waiting", _waiting),
            ("Jobs running: started, not finished", "jobs running", _running)):
        series = [Series(name, _steps(counts(run), run.time), colours[name]) for name, run in runs.items()]
        high = max((v for line in series for _, v in line.points), default=1.0)
        parts.append(_figure(title, line_chart(series, clock, Axis(axis_title, max(high, 1.0), 1.0, _count_label))))
    parts.append(_jct_figure(runs, colours))
    parts.append("<h2>Jobs</h2><p class=note>Times from the start of the run (H:MM:SS); wait is submitted to "
                 "started (its pods made progress), JCT submitted to finished; - where not reached.</p>")
    for name, run in runs.items():
        rows = job_rows(run)
        parts.append(f"<h3>{_html(name)} ({len(rows)} jobs)</h3>")
        parts.append(_table([JOB_COLUMNS, *rows[:JOB_ROWS]], numeric_from=3))
        if len(rows) > JOB_ROWS:
            parts.append(f"<p class=note>{len(rows) - JOB_ROWS} more jobs: see <code>-o json</code>.</p>")
    return "\n".join(parts) + "\n"


def _share_series(runs: dict[str, TimedResult], queue: str, colours: dict[str, str]) -> list[Series]:
    out = []
    deserved = {name: run.metrics["queue_share"].get(queue, {}).get("deserved", 0.0) for name, run in runs.items()}
    for name, run in runs.items():
        out.append(Series(name, _steps([(t, s.get(queue, 0.0)) for t, _, s in run.timeline], run.time), colours[name]))
    end = max(run.time for run in runs.values())
    if len(set(deserved.values())) == 1:  # one deserved line serves every configuration
        out.append(Series("deserved", [(0.0, next(iter(deserved.values()))), (end, next(iter(deserved.values())))],
                          "#555", dashed=True))
    else:
        out += [Series(f"{name} deserved", [(0.0, d), (end, d)], colours[name], dashed=True)
                for name, d in deserved.items()]
    return out


def _jct_figure(runs: dict[str, TimedResult], colours: dict[str, str]) -> str:
    """The share of a configuration's jobs finished within each JCT: a step up per job."""
    times = {name: sorted(j["finished"] - j["submitted"] for j in run.jobs.values() if j["finished"] is not None)
             for name, run in runs.items()}
    longest = max([1.0, *(t for jct in times.values() for t in jct)])
    series = []
    for name, jct in times.items():
        total = len(runs[name].jobs)
        points: list[tuple[float, float]] = [(0.0, 0.0)]
        for i, t in enumerate(jct):
            points += [(t, i / total), (t, (i + 1) / total)]
        points.append((longest, points[-1][1]))  # flat to the right edge: jobs never finished stay missing
        series.append(Series(name, points, colours[name]))
    return _figure("Job completion time: share of all jobs finished within it",
                   line_chart(series, time_axis(longest, "job completion time"), fraction_axis("jobs finished")))


def _waiting(run: TimedResult) -> list[tuple[float, float]]:
    return _count_between(run, "submitted", "started")


def _running(run: TimedResult) -> list[tuple[float, float]]:
    return _count_between(run, "started", "finished")


def _count_between(run: TimedResult, since: str, until: str) -> list[tuple[float, float]]:
    """How many jobs have reached `since` and not `until`, at every moment that changes it."""
    changes: dict[float, int] = {}
    for job in run.jobs.values():
        if job[since] is None:
            continue
        changes[job[since]] = changes.get(job[since], 0) + 1
        if job[until] is not None:
            changes[job[until]] = changes.get(job[until], 0) - 1
    out, level = [(0.0, 0.0)], 0
    for t in sorted(changes):
        level += changes[t]
        out.append((t, float(level)))
    return out


def _count_label(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else ""


def _steps(points: Sequence[tuple[float, float]], end: float, width: int = 1000) -> list[tuple[float, float]]:
    """A value holds until the next sample: steps up to `end`, at most about `width` of them
    (the value in effect at each of `width` even moments), so a week stays a small page."""
    if len(points) > width:
        at, i, picked = [end * k / width for k in range(width + 1)], 0, []
        for t in at:
            while i + 1 < len(points) and points[i + 1][0] <= t:
                i += 1
            picked.append((t, points[i][1]))
        points = picked
    out: list[tuple[float, float]] = []
    for t, v in points:
        if out:
            out.append((t, out[-1][1]))
        out.append((t, v))
    if out:
        out.append((end, out[-1][1]))
    return out


def _figure(caption: str, svg: str) -> str:
    return f"<figure><figcaption>{_html(caption)}</figcaption>{svg}</figure>"


def _table(rows: Sequence[Sequence[str]], numeric_from: int = 1) -> str:
    head, *body = rows
    out = ["<table><tr>" + "".join(f"<th>{_html(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f'<td class="n">{_html(c)}</td>' if i >= numeric_from else f"<td>{_html(c)}</td>"
                             for i, c in enumerate(row)) + "</tr>" for row in body]
    out.append("</table>")
    return "".join(out)


def _html(text: str) -> str:
    return html.escape(str(text))

