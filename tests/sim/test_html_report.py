"""`caldera simulate --until --report`: one page, every configuration overlaid per metric on one
time axis, axes with ticks and titles, legends beside the data, a per-job table; and the page
as a real browser draws it."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from central.cli import main
from central.sim.svgchart import LEFT, PLOT_W, ticks, time_axis

TOPOLOGY = Path(__file__).resolve().parents[2] / "examples" / "experiments" / "task-topology"
MARGIN = 28  # the page's body margin (2em of 14px)
BLUE, RED = (0x1F, 0x77, 0xB4), (0xD6, 0x27, 0x28)  # the first two configurations' colours


def _page(tmp_path, capsys) -> str:
    page = tmp_path / "report.html"
    assert main(["simulate", "--manifests", str(TOPOLOGY / "cluster.yaml"), "--manifests", str(TOPOLOGY / "jobs.yaml"),
                 "--until", "4h", "--config", str(TOPOLOGY / "spread.conf"),
                 "--config", str(TOPOLOGY / "task-topology.conf"), "--report", str(page)]) == 0
    capsys.readouterr()
    return page.read_text()


def test_every_configuration_overlaid_with_axes_and_legends(tmp_path, capsys):
    text = _page(tmp_path, capsys)
    charts = re.findall(r"<figcaption>(.*?)</figcaption>(<svg.*?</svg>)", text)
    captions = [caption for caption, _ in charts]
    assert captions[:2] == ["Utilisation of cpu: allocated / allocatable", "Utilisation of memory: allocated / allocatable"]
    assert any(c.startswith("Queue default") for c in captions) and captions[-1].startswith("Job completion time")
    for caption, svg in charts:
        lines = re.findall(r'<polyline[^>]*stroke="([^"]+)"', svg)
        assert {"#1f77b4", "#d62728"} <= set(lines), caption  # both configurations on the one chart
        legend_x = [float(x) for x in re.findall(r'<g class="legend"><line x1="([\d.]+)"', svg)]
        assert legend_x and min(legend_x) > LEFT + PLOT_W, caption  # right of the plot area, not over it
        assert 'class="axis-title"' in svg and svg.count('text-anchor="middle">') >= 4, caption  # titled, ticked
    over_time = [svg for caption, svg in charts if not caption.startswith("Job completion")]
    # the same time axis everywhere: the spread run's 78 minutes, ticked 0 to 80 minutes
    assert all(">simulated time (minutes)</text>" in svg and ">80</text>" in svg for svg in over_time)
    assert ">cpu allocated (%)</text>" in text and ">deserved<title>" in text
    # the per-job table of each configuration, and nothing the page would fetch or run
    assert text.count("<th>SUBMITTED</th><th>STARTED</th><th>FINISHED</th><th>WAIT</th>") == 2
    assert "<td>default/tf-1</td><td>default</td><td>Completed</td>" in text
    assert "<script" not in text and not re.search(r'(src|href)="', text)


def test_ticks_and_time_units():
    assert ticks(1.0, 4) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert ticks(78.0) == [0.0, 20.0, 40.0, 60.0, 80.0]
    assert ticks(3.0) == [0.0, 1.0, 2.0, 3.0]
    assert time_axis(4680).title == "simulated time (minutes)" and time_axis(4680).high == 78
    assert time_axis(168 * 3600).title == "simulated time (days)"
    assert time_axis(24 * 3600).title == "simulated time (hours)"


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB(A) rows of an 8-bit, non-interlaced PNG (what chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, header = 8, [], b""
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        data = png[at + 8:at + 8 + length]
        header = data if kind == b"IHDR" else header
        if kind == b"IDAT":
            chunks.append(data)
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    step = 3 if colour == 2 else 4
    raw, rows, previous = zlib.decompress(b"".join(chunks)), [], bytearray(width * step)
    stride = width * step
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - step] if x >= step else 0
            up, corner = previous[x], previous[x - step] if x >= step else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line) if step == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
        previous = line
    return width, height, rows


def test_page_renders_in_a_headless_browser(tmp_path, capsys):
    """Debian's chromium draws the page: the first chart shows both configurations' lines (its
    blue and red) in the plot area, and its legend to the right of it."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium here (apt-get install chromium) to look at the page")
    page = tmp_path / "report.html"
    page.write_text(_page(tmp_path, capsys))
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,520",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    width, height, rows = _pixels(shot.read_bytes())
    assert (width, height) == (900, 520)

    def columns(colour: tuple[int, int, int]) -> set[int]:
        """x of every pixel near `colour` (antialiasing blurs lines)."""
        out = set()
        for row in rows:
            for x in range(width):
                r, g, b = row[3 * x:3 * x + 3]
                if abs(r - colour[0]) + abs(g - colour[1]) + abs(b - colour[2]) < 40:
                    out.add(x)
        return out

    plot = range(MARGIN + LEFT, MARGIN + LEFT + PLOT_W)  # the page's margin, then the chart's
    legend = range(MARGIN + LEFT + PLOT_W + 8, MARGIN + LEFT + PLOT_W + 40)  # the legend's keys
    for colour in (BLUE, RED):
        xs = columns(colour)
        assert len(xs & set(plot)) > 100  # a line across the plot
        assert xs & set(legend)  # and its key beside it
