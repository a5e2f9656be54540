"""The person-readable report of a simulation."""

from __future__ import annotations

from central.model.cache import ClusterCache
from central.sim.simulate import SimulationResult


def render_table(result: SimulationResult, cache: ClusterCache, paths: list[str], skipped: dict[str, int]) -> str:
    pods = [t for t in cache.tasks.values() if t.job_uid]
    lines = [
        f"Simulated {result.cycles} cycle(s) on {', '.join(paths)}",
        f"  {len(cache.nodes)} nodes, {len(cache.all_queues())} queues, {len(cache.jobs)} podgroups, {len(pods)} pods",
    ]
    if skipped:
        lines.append("  skipped (not scheduling objects): " + ", ".join(f"{n} {k}" for k, n in sorted(skipped.items())))
    lines += ["", f"Binds ({len(result.binds)}):"]
    lines += _columns([(pod, "->", node) for pod, node in sorted(result.binds.items())]) or ["  (none)"]
    if result.pipelined:
        lines += ["", f"Pipelined, waiting for resources being released ({len(result.pipelined)}):"]
        lines += _columns([(pod, "->", node) for pod, node in sorted(result.pipelined.items())])
    if result.evictions:
        lines += ["", f"Evictions ({len(result.evictions)}):"] + [f"  {pod}" for pod in sorted(result.evictions)]
    lines += ["", "PodGroups:"]
    rows = []
    for uid, status in sorted(result.podgroups.items()):
        job = cache.jobs.get(uid)
        queue = job.queue if job else ""
        rows.append((uid, status["phase"], f"queue={queue}", f"running={status.get('running', 0)}"))
    lines += _columns(rows) or ["  (none)"]
    unschedulable = [(uid, c) for uid, s in sorted(result.podgroups.items()) for c in s["conditions"]
                     if c.get("type") == "Unschedulable" and c.get("transitionID") and c.get("message")]
    if unschedulable:
        lines += ["", "Why not scheduled:"]
        lines += [f"  {uid}: {c['message']}" for uid, c in unschedulable]
    if result.pending:
        lines += ["", f"Pending pods ({len(result.pending)}):"]
        lines += [f"  {pod}: {reason}" for pod, reason in sorted(result.pending.items())]
    if result.faults:
        lines += ["", f"Objects with data the scheduler could not use ({len(result.faults)}):"]
        lines += [f"  {reason}" for _, reason in sorted(result.faults.items())]
    return "\n".join(lines)


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
