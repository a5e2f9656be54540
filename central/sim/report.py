"""The person-readable report of a simulation: a summary first, then details.

The summary stays a screenful whatever the cluster's size (binds and pending pods counted,
pending reasons grouped with their counts, PodGroups by phase, one row per queue); each
detail section after it is capped at `limit` rows unless `limit` is None (--details, -o wide).
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from central.errors import printable
from central.model.cache import ClusterCache
from central.model.objects import TaskStatus
from central.resources.vectors import format_value
from central.sim.simulate import SimulationResult

DETAIL_ROWS = 20  # rows per detail section without --details
PIPE_WIDTH = 200  # line width when stdout is not a terminal
REASON_ROWS = 10  # distinct pending reasons in the summary
REASON_WIDTH = 160  # a grouped reason longer than this is cut (the full text is in the details)


def print_report(result: SimulationResult, cache: ClusterCache, paths: list[str], skipped: dict[str, int],
                 limit: int | None = DETAIL_ROWS, summary_only: bool = False) -> None:
    """The report on stdout: coloured and fitted to a terminal, else plain text (no trailing
    blanks, lines up to PIPE_WIDTH) for files and pipes."""
    terminal = Console(highlight=False)
    if terminal.is_terminal:
        render(terminal, result, cache, paths, skipped, limit, summary_only)
        return
    buffer = Console(highlight=False, file=io.StringIO(), width=PIPE_WIDTH, color_system=None, record=True)
    render(buffer, result, cache, paths, skipped, limit, summary_only)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in buffer.export_text().splitlines()))


def render(console: Console, result: SimulationResult, cache: ClusterCache, paths: list[str],
           skipped: dict[str, int], limit: int | None = DETAIL_ROWS, summary_only: bool = False) -> None:
    pods = [t for t in cache.tasks.values() if t.job_uid]
    pending = pending_reasons(result, cache)
    foreign = [t for t in cache.tasks.values() if not t.job_uid and t.node is None]
    console.print(f"Simulated {counted(result.cycles, 'cycle')} on {', '.join(paths)}")
    console.print("  " + ", ".join(counted(n, noun) for n, noun in (
        (len(cache.nodes), "node"), (len(cache.all_queues()), "queue"), (len(cache.jobs), "podgroup"),
        (len(pods), "pod"))))
    if skipped:
        console.print("  skipped (not scheduling objects, or workloads of other schedulers): "
                      + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    if foreign:
        names = sorted({t.scheduler_name or "default-scheduler" for t in foreign})
        console.print(f"  {counted(len(foreign), 'pending pod')} left to other schedulers ({', '.join(names)}); "
                      f"--scheduler-name picks whose pods are scheduled")
    console.print()
    console.print(_summary(result, cache, pending))
    if summary_only:
        return
    bound = Counter(cache.tasks[pod].job_uid for pod in result.binds if pod in cache.tasks)
    # an Unschedulable condition stays on a PodGroup after it runs: shown while pods still wait
    waiting = {cache.tasks[pod].job_uid for pod in pending if pod in cache.tasks}
    sections: list[tuple[str, Sequence[str], list[tuple[str, ...]]]] = [
        ("Binds", ("POD", "NODE"), sorted(result.binds.items())),
        ("Pipelined, waiting for resources being released", ("POD", "NODE"), sorted(result.pipelined.items())),
        ("Evictions", ("POD", "REASON"), [(pod, result.eviction_reasons.get(pod, "")) for pod in sorted(result.evictions)]),
        ("PodGroups", ("PODGROUP", "PHASE", "QUEUE", "BOUND NOW", "RUNNING BEFORE"),
         [(uid, status["phase"], cache.jobs[uid].queue if uid in cache.jobs else "", str(bound.get(uid, 0)),
           str(status.get("running", 0))) for uid, status in sorted(result.podgroups.items())]),
        ("Why not scheduled", ("PODGROUP", "REASON"),
         [(uid, c["message"]) for uid, s in sorted(result.podgroups.items()) for c in s["conditions"]
          if uid in waiting and c.get("type") == "Unschedulable" and c.get("transitionID") and c.get("message")]),
        ("Pending pods", ("POD", "REASON"), sorted(pending.items())),
        ("Objects with data the scheduler could not use", ("OBJECT", "REASON"), sorted(result.faults.items())),
    ]
    for title, header, rows in sections:
        if rows or title in ("Binds", "PodGroups"):
            console.print()
            console.print(_details(title, header, rows, limit))


def pending_reasons(result: SimulationResult, cache: ClusterCache) -> dict[str, str]:
    """Every pod of ours still pending after the run, with a reason: the scheduler's, else
    its PodGroup's Unschedulable message, else why its PodGroup did not run."""
    out = {pod: reason for pod, reason in result.pending.items() if pod not in result.pipelined}
    for uid, task in cache.tasks.items():
        if not task.job_uid or uid in out or uid in result.binds or uid in result.pipelined:
            continue
        if task.status != TaskStatus.PENDING or task.node is not None:
            continue
        status = result.podgroups.get(task.job_uid) or {}
        message = next((c.get("message") for c in status.get("conditions") or []
                        if c.get("type") == "Unschedulable" and c.get("message")), None)
        out[uid] = message or f"PodGroup {task.job_uid} is {status.get('phase', 'not scheduled')} (no reason recorded)"
    return out


def _summary(result: SimulationResult, cache: ClusterCache, pending: dict[str, str]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    counts = f"{len(result.binds)} bound, {len(pending)} pending"
    if result.pipelined:
        counts += f", {len(result.pipelined)} pipelined"
    if result.evictions:
        counts += f", {len(result.evictions)} evicted"
    table.add_row("Pods", counts)
    phases = Counter(status["phase"] for status in result.podgroups.values())
    table.add_row("PodGroups", ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items())) or "none")
    if pending:
        table.add_row("Pending", _grouped_reasons(pending, cache))
    table.add_row("Queues", _queues(result, cache))
    if result.faults:
        table.add_row("Bad data", Text(f"{counted(len(result.faults), 'object')} the scheduler could not use", style="red"))
    return table


def _grouped_reasons(pending: dict[str, str], cache: ClusterCache) -> Table:
    """One row per reason, counted: the pod's and its PodGroup's names are masked so that
    8,000 pods of 1,000 groups waiting for the same thing make one row. A row shows the
    reason of its first pod as written (names and all) when its pods share one PodGroup, else
    with the PodGroup called "its PodGroup", since each pod's is another."""
    groups: dict[str, list[str]] = {}
    owners: dict[str, set[str]] = {}
    for pod, reason in sorted(pending.items()):
        task = cache.tasks.get(pod)
        group = task.job_uid if task is not None and task.job_uid else ""
        masked = reason.replace(pod, "\0pod\0")
        if group:
            masked = masked.replace(f"PodGroup {group}", "\0group\0").replace(group, "\0group\0")
        groups.setdefault(masked, []).append(pod)
        owners.setdefault(masked, set()).add(group)
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("PODS", justify="right")
    table.add_column("PENDING BECAUSE", overflow="fold")
    table.add_column("E.G.", overflow="fold")
    for masked, pods in ranked[:REASON_ROWS]:
        reason = pending[pods[0]] if len(owners[masked]) == 1 else _unmask(masked)
        table.add_row(str(len(pods)), cell(reason if len(reason) <= REASON_WIDTH else reason[:REASON_WIDTH - 1] + "…"),
                      cell(pods[0]))
    if len(ranked) > REASON_ROWS:
        rest = sum(len(pods) for _, pods in ranked[REASON_ROWS:])
        table.add_row(str(rest), Text(f"{len(ranked) - REASON_ROWS} other reasons (see Pending pods)", style="dim"), "")
    return table


def _unmask(reason: str) -> str:
    """A reason shared by pods of several PodGroups, in words: "its PodGroup", "the pod"."""
    text = reason.replace("\0group\0", "its PodGroup").replace("\0pod\0", "the pod")
    return text[:1].upper() + text[1:]


def counted(n: int, noun: str) -> str:
    """`1 podgroup`, `2 podgroups`: a count with its noun in the number it takes."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _queues(result: SimulationResult, cache: ClusterCache) -> Table:
    """DESERVED is the share the last cycle's proportion or capacity plugin computed (the header
    names it); with neither enabled, the Queue's own spec.deserved."""
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    deserved = f"DESERVED ({result.deserved_by})" if result.deserved_by else "DESERVED (spec)"
    # PodGroups by phase, as `kubectl get queue` counts them: INQUEUE holds those admitted
    # whose pods are not running yet (the pods a cycle just bound included)
    for column in ("QUEUE", "ALLOCATED", deserved, "CAPABILITY", "PENDING", "INQUEUE", "RUNNING"):
        table.add_column(column, overflow="fold")
    for queue in sorted(cache.all_queues().values(), key=lambda q: q.name):
        status = result.queues.get(queue.name) or {}
        allocated = status.get("allocated") or {}
        share = result.deserved.get(queue.name, {}) if result.deserved_by else queue.deserved
        table.add_row(cell(queue.name), ",".join(f"{k}={v}" for k, v in sorted(allocated.items())) or "-",
                      _resources(share), _resources(queue.capability),
                      str(status.get("pending", 0)), str(status.get("inqueue", 0)), str(status.get("running", 0)))
    return table


def cell(text: str) -> Text:
    """User data (names, reasons) as a table cell: shown as written, never read as Rich markup,
    its control and bidi characters escaped (central.errors.printable)."""
    return Text(printable(text))


def _resources(items: dict[str, float]) -> str:
    return ",".join(f"{k}={format_value(k, v)}" for k, v in sorted(items.items())) or "-"


def _details(title: str, header: Sequence[str], rows: list[tuple[str, ...]], limit: int | None) -> Table:
    shown = rows if limit is None else rows[:limit]
    table = Table(title=f"{title} ({len(rows)})", title_justify="left", title_style="bold", box=None,
                  header_style="bold", pad_edge=False, show_header=bool(rows))
    for column in header:
        table.add_column(column, overflow="fold")
    for row in shown:
        table.add_row(*(cell(c) for c in row))
    if not rows:
        table.add_row("(none)")
    elif len(shown) < len(rows):
        table.add_row(Text(f"... {len(rows) - len(shown)} more (--details or -o wide for all)", style="dim"))
    return table
