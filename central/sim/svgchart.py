"""Line charts as inline SVG for the `--report` page: no script, no library, one string each.

    line_chart(series, x_axis, y_axis) -> "<svg ...>...</svg>"

Both axes have ticks at round numbers, their labels and a title with the unit; the legend sits
in its own column right of the plot, never over the data. Every chart of a page that shares an
`Axis` draws the same scale, so charts stacked on the page can be compared by eye.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
PLOT_W, PLOT_H = 560, 200  # the data area
LEFT, RIGHT, TOP, BOTTOM = 64, 190, 12, 46  # margins: tick labels and title; legend; -; tick labels and title
LEGEND_CHARS = 26  # a legend entry longer than this is cut (its full text in a tooltip)


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float]]  # (x, y) in the axes' own units
    colour: str
    dashed: bool = False


@dataclass(frozen=True)
class Axis:
    title: str  # with its unit, e.g. "simulated time (hours)"
    high: float  # the axis runs from 0 to `high`
    scale: float = 1.0  # data units per axis unit (3600 for seconds shown in hours)
    label: Callable[[float], str] = lambda v: f"{v:g}"  # a tick's text, from its axis value


def time_axis(seconds: float, title: str = "simulated time") -> Axis:
    """Seconds shown in minutes, hours or days, whichever keeps the numbers small."""
    for unit, scale in (("minutes", 60.0), ("hours", 3600.0), ("days", 86400.0)):
        if seconds / scale <= 120 or unit == "days":
            return Axis(f"{title} ({unit})", max(seconds, 1.0) / scale, scale)
    raise AssertionError("unreachable")


def fraction_axis(title: str) -> Axis:
    """0 to 1, ticked in percent."""
    return Axis(f"{title} (%)", 1.0, 1.0, lambda v: f"{v * 100:.0f}")


def ticks(high: float, wanted: int = 5) -> list[float]:
    """Round numbers from 0 to at least `high`, steps of 1, 2, 2.5 or 5 times a power of ten."""
    if high <= 0:
        return [0.0, 1.0]
    raw = high / wanted
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    count = math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]


def line_chart(series: Sequence[Series], x: Axis, y: Axis) -> str:
    x_ticks, y_ticks = ticks(x.high), ticks(y.high, 4)
    x_top, y_top = x_ticks[-1], y_ticks[-1]
    width = LEFT + PLOT_W + RIGHT
    height = max(TOP + PLOT_H + BOTTOM, TOP + 16 * len(series) + 8)  # room for every legend entry

    def px(value: float) -> float:
        return LEFT + PLOT_W * min(value / x.scale / x_top, 1.0)

    def py(value: float) -> float:
        return TOP + PLOT_H - PLOT_H * max(0.0, min(value / y.scale / y_top, 1.0))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">']
    for t in x_ticks:
        at = LEFT + PLOT_W * t / x_top
        out.append(f'<line x1="{at:.1f}" y1="{TOP}" x2="{at:.1f}" y2="{TOP + PLOT_H + 4}" stroke="#eee"/>'
                   f'<text x="{at:.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle">{html.escape(x.label(t))}</text>')
    for t in y_ticks:
        at = TOP + PLOT_H - PLOT_H * t / y_top
        out.append(f'<line x1="{LEFT - 4}" y1="{at:.1f}" x2="{LEFT + PLOT_W}" y2="{at:.1f}" stroke="#eee"/>'
                   f'<text x="{LEFT - 7}" y="{at + 4:.1f}" text-anchor="end">{html.escape(y.label(t))}</text>')
    out.append(f'<path d="M{LEFT},{TOP}V{TOP + PLOT_H}H{LEFT + PLOT_W}" fill="none" stroke="#888"/>')
    out.append(f'<text x="{LEFT + PLOT_W / 2}" y="{height - 8}" text-anchor="middle" class="axis-title">'
               f'{html.escape(x.title)}</text>')
    out.append(f'<text transform="translate(14,{TOP + PLOT_H / 2}) rotate(-90)" text-anchor="middle" '
               f'class="axis-title">{html.escape(y.title)}</text>')
    for line in series:
        if not line.points:
            continue
        dash = ' stroke-dasharray="5,4"' if line.dashed else ""
        points = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in line.points)
        out.append(f'<polyline fill="none" stroke="{line.colour}" stroke-width="1.6"{dash} points="{points}">'
                   f'<title>{html.escape(line.label)}</title></polyline>')
    for i, line in enumerate(series):  # the legend, in the right margin
        at = TOP + 8 + 16 * i
        label = line.label if len(line.label) <= LEGEND_CHARS else line.label[:LEGEND_CHARS - 1] + "…"
        dash = ' stroke-dasharray="5,4"' if line.dashed else ""
        out.append(f'<g class="legend"><line x1="{LEFT + PLOT_W + 12}" y1="{at}" x2="{LEFT + PLOT_W + 36}" y2="{at}" '
                   f'stroke="{line.colour}" stroke-width="2"{dash}/><text x="{LEFT + PLOT_W + 42}" y="{at + 4}">'
                   f'{html.escape(label)}<title>{html.escape(line.label)}</title></text></g>')
    out.append("</svg>")
    return "".join(out)
