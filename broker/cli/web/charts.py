"""Charts as inline SVG, drawn here on the server: no chart library, no script, no third-party file.

A line chart of samples over time (rates, lag) and a bar chart of counts per broker (the
partition distribution) are all the console draws, and SVG of a few hundred points is a few
kilobytes of markup the browser renders as it is.  Every label is escaped.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 640, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 26
MAX_DOTS = 120
"""Each sample is also a dot while there are at most this many; beyond, only the last is."""
BAR_HEIGHT, BAR_GAP, LABEL_WIDTH = 14, 6, 140


def number(value: float) -> str:
    """A value for an axis label: 3 significant digits, with k/M for thousands and millions."""
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}"


def empty_chart(title: str, message: str) -> Markup:
    return Markup(
        f'<svg class="chart empty" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">'
        f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">{escape(message)}</text></svg>'
    )


def line_chart(samples: Sequence[tuple[float, float]], title: str, unit: str) -> Markup:
    """``samples`` (epoch seconds, value), oldest first, as a line with dots and labelled axes."""
    if not samples:
        return empty_chart(title, "no samples yet: the console samples every few seconds")
    first, last = samples[0][0], samples[-1][0]
    span = max(last - first, 1.0)
    top = max(max(v for _, v in samples), 1e-9)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def xy(t: float, v: float) -> tuple[float, float]:
        return LEFT + (t - first) / span * inner_w, TOP + inner_h - v / top * inner_h

    points = [xy(t, v) for t, v in samples]
    path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(points))
    dots = points if len(points) <= MAX_DOTS else points[-1:]
    circles = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5"/>' for x, y in dots)
    ago = (time.time() - first) / 60
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
        f'<line class="axis" x1="{LEFT}" y1="{TOP + inner_h}" x2="{WIDTH - RIGHT}" y2="{TOP + inner_h}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + inner_h}"/>'
        f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{number(top)}</text>'
        f'<text x="{LEFT - 6}" y="{TOP + inner_h}" text-anchor="end">0</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 6}">{ago:.0f} min ago</text>'
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">now ({escape(unit)})</text>'
        f'<path class="line" d="{path}"/><g class="dots">{circles}</g></svg>'
    )


def bar_chart(rows: Sequence[tuple[str, Sequence[int]]], series: Sequence[str], title: str) -> Markup:
    """Horizontal bars: one group per row (a broker), one bar per series (leaders, replicas)."""
    if not rows:
        return empty_chart(title, "nothing to show")
    top = max((v for _, values in rows for v in values), default=0) or 1
    group_h = len(series) * BAR_HEIGHT + BAR_GAP
    height = TOP + len(rows) * group_h + BOTTOM
    inner_w = WIDTH - LABEL_WIDTH - RIGHT - 40
    parts = []
    for r, (label, values) in enumerate(rows):
        y0 = TOP + r * group_h
        parts.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{y0 + BAR_HEIGHT}" text-anchor="end">{escape(label)}</text>'
        )
        for s, value in enumerate(values):
            y = y0 + s * BAR_HEIGHT
            w = value / top * inner_w
            parts.append(
                f'<rect class="bar s{s}" x="{LABEL_WIDTH}" y="{y}" width="{w:.1f}" height="{BAR_HEIGHT - 2}">'
                f"<title>{escape(series[s])}: {value}</title></rect>"
                f'<text x="{LABEL_WIDTH + w + 4:.1f}" y="{y + BAR_HEIGHT - 3}">{value}</text>'
            )
    legend = " ".join(
        f'<tspan class="legend s{s}">&#9632; {escape(name)}</tspan>' for s, name in enumerate(series)
    )
    return Markup(
        f'<svg class="chart bars" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{''.join(parts)}"
        f'<text x="{LABEL_WIDTH}" y="{height - 6}">{legend}</text></svg>'
    )
