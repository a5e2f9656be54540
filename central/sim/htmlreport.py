"""`caldera simulate --until --report FILE.html`: one self-contained page (inline SVG, no scripts).

Per configuration: utilisation per resource over time, and each queue's share over time next
to its deserved share (dashed). Across configurations: the JCT distribution (a CDF per
configuration) and the summary table.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from central.errors import InputError
from central.sim.timed import comparison
from central.sim.timeline import TimedResult

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
W, H, PAD = 640, 220, 40
Series = tuple[str, Sequence[tuple[float, float]], bool]  # (label, points, dashed)


def write_report(path: str, runs: dict[str, TimedResult]) -> None:
    parts = ["<!doctype html><meta charset=utf-8><title>caldera simulate</title>",
             "<style>body{font:14px sans-serif;margin:2em;max-width:60em}pre{background:#f6f6f6;padding:1em}"
             "svg{background:#fff;border:1px solid #ddd}</style>",
             "<h1>caldera simulate</h1>", f"<pre>{html.escape(comparison(runs))}</pre>",
             "<h2>Job completion time (CDF)</h2>", _jct_chart(runs)]
    for name, run in runs.items():
        end = max(run.time, 1.0)
        util = {res: [(t, u.get(res, 0.0)) for t, u, _ in run.timeline] for res in run.metrics["utilization"]}
        parts += [f"<h2>{html.escape(name)}</h2>", "<h3>Utilisation (allocated / allocatable)</h3>",
                  _chart([(res, _steps(points, end), False) for res, points in util.items()], end, "hours")]
        series: list[Series] = []
        for queue, share in run.metrics["queue_share"].items():
            series.append((queue, _steps([(t, s.get(queue, 0.0)) for t, _, s in run.timeline], end), False))
            series.append((f"{queue} deserved", [(0.0, share["deserved"]), (end, share["deserved"])], True))
        parts += ["<h3>Queue share (dominant resource) against deserved</h3>", _chart(series, end, "hours")]
    try:
        Path(path).write_text("\n".join(parts) + "\n")
    except OSError as err:
        raise InputError(path, f"cannot write: {err.strerror}") from None


def _jct_chart(runs: dict[str, TimedResult]) -> str:
    series: list[Series] = []
    longest = 1.0
    for name, run in runs.items():
        jct = sorted(j["finished"] - j["submitted"] for j in run.jobs.values() if j["finished"] is not None)
        if jct:
            longest = max(longest, jct[-1])
            series.append((name, [(t, (i + 1) / len(run.jobs)) for i, t in enumerate(jct)], False))
    return _chart(series, longest, "hours")


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


def _chart(series: list[Series], x_max: float, unit: str) -> str:
    def xy(t: float, v: float) -> str:
        return f"{PAD + (W - 2 * PAD) * t / x_max:.1f},{H - PAD - (H - 2 * PAD) * min(v, 1.0):.1f}"

    out = [f'<svg width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
           f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#999"/>',
           f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#999"/>',
           f'<text x="{PAD - 5}" y="{PAD + 4}" text-anchor="end" font-size="11">1</text>',
           f'<text x="{PAD - 5}" y="{H - PAD + 4}" text-anchor="end" font-size="11">0</text>',
           f'<text x="{W - PAD}" y="{H - PAD + 16}" text-anchor="end" font-size="11">'
           f'{x_max / 3600:.1f} {unit}</text>']
    for i, (label, points, dashed) in enumerate(series):
        colour = COLOURS[(i // 2 if any(d for _, _, d in series) else i) % len(COLOURS)]
        dash = ' stroke-dasharray="5,4"' if dashed else ""
        path = " ".join(xy(t, v) for t, v in points)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5"{dash} points="{path}"/>')
        out.append(f'<text x="{W - PAD + 4 - 120}" y="{PAD + 14 * i}" font-size="11" fill="{colour}">'
                   f'{html.escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)
