"""Charts drawn at build time as inline SVG: no script, no CDN, readable with styles off (each
chart carries a title and its numbers beside it in a table)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

_TRACK_COLOURS = {"generation": "var(--gen)", "update": "var(--upd)"}
_SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


def colour(track: str) -> str:
    """The colour a track is drawn in, everywhere on the site."""
    return _TRACK_COLOURS.get(track, "var(--muted)")


def series_colour(index: int) -> str:
    return _SERIES_COLOURS[index % len(_SERIES_COLOURS)]


def monthly_bars(title: str, months: Sequence[str], series: Mapping[str, Sequence[int]]) -> Markup:
    """Stacked bars, one per month, one colour per series (a track)."""
    width, height, left, bottom = 720, 220, 36, 28
    totals = [sum(values[i] for values in series.values()) for i in range(len(months))]
    top = max(totals, default=0) or 1
    top += top % 2  # an even top: the middle grid line falls on a whole number
    step = (width - left - 8) / max(len(months), 1)
    every = -(-len(months) // 10)  # at most ten month labels: each is about 60 px wide
    bar = max(step * 0.8, 1.0)
    parts = [_frame(title, width, height)]
    parts.append(_y_axis(left, height - bottom, 12, top))
    for i, month in enumerate(months):
        x = left + i * step + (step - bar) / 2
        y = float(height - bottom)
        for name, values in series.items():
            value = values[i]
            if not value:
                continue
            h = (height - bottom - 12) * value / top
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colour(name)}">'
                f"<title>{escape(month)}: {value} {escape(name)}</title></rect>"
            )
        if i % every == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 10}" text-anchor="middle" '
                f'class="tick">{escape(month)}</text>'
            )
    parts.append(_legend([(name, colour(name)) for name in series], width))
    parts.append("</svg>")
    return Markup("".join(parts))


def horizontal_bars(
    title: str, rows: Sequence[tuple[str, int]], css_class: str = "stage", log: bool = False
) -> Markup:
    """One bar per row, its count at its end: the funnel's stages or its drop reasons. With
    ``log`` the lengths are logarithmic, so thousands of commits and a dozen tasks both show."""
    row_height, label_width, width = 22, 230, 720
    height = row_height * len(rows) + 8
    top = max((value for _, value in rows), default=0) or 1
    parts = [_frame(title, width, height)]
    for i, (label, value) in enumerate(rows):
        y = 4 + i * row_height
        share = math.log1p(value) / math.log1p(top) if log else value / top
        w = (width - label_width - 70) * share
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 15}" text-anchor="end" class="label">{escape(label)}</text>'
            f'<rect class="{css_class}" x="{label_width}" y="{y + 3}" width="{w:.1f}" '
            f'height="{row_height - 6}">'
            f"<title>{escape(label)}: {value}</title></rect>"
            f'<text x="{label_width + w + 6:.1f}" y="{y + 15}" class="value">{value}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def contamination(
    title: str, series: Mapping[str, Sequence[tuple[int, float, int]]], span: tuple[int, int]
) -> Markup:
    """Success% by task month relative to each agent's training cutoff: one line per agent, the
    cutoff a dashed vertical line at 0. A point is (months after the cutoff, Success%, tasks)."""
    width, height, left, bottom, right = 720, 280, 40, 36, 12
    low, high = span
    if high == low:
        low, high = low - 1, high + 1
    plot_w, plot_h = width - left - right, height - bottom - 12

    def x_of(month: int) -> float:
        return left + plot_w * (month - low) / (high - low)

    def y_of(percent: float) -> float:
        return 12 + plot_h * (1 - percent / 100)

    parts = [_frame(title, width, height)]
    parts.append(_y_axis(left, height - bottom, 12, 100, suffix="%"))
    zero = x_of(0)
    parts.append(
        f'<line class="cutoff" x1="{zero:.1f}" x2="{zero:.1f}" y1="12" y2="{height - bottom}"/>'
        f'<text x="{zero + 4:.1f}" y="22" class="tick">training cutoff</text>'
    )
    for month in _ticks(low, high):
        parts.append(
            f'<text x="{x_of(month):.1f}" y="{height - 18}" text-anchor="middle" '
            f'class="tick">{month:+d}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 3}" text-anchor="middle" class="tick">'
        "months between the task's date and the agent's training cutoff</text>"
    )
    legend = []
    for index, (agent, points) in enumerate(series.items()):
        shade = series_colour(index)
        legend.append((agent, shade))
        coords = " ".join(f"{x_of(m):.1f},{y_of(p):.1f}" for m, p, _ in points)
        dots = "".join(
            f'<circle cx="{x_of(m):.1f}" cy="{y_of(p):.1f}" r="3.5" fill="{shade}">'
            f"<title>{escape(agent)}: {m:+d} months, Success {p:.1f}% over {n} tasks</title></circle>"
            for m, p, n in points
        )
        parts.append(
            f'<g class="series" data-agent="{escape(agent)}"><polyline fill="none" stroke="{shade}" '
            f'stroke-width="2" points="{coords}"/>{dots}</g>'
        )
    parts.append(_legend(legend, width))
    parts.append("</svg>")
    return Markup("".join(parts))


def _frame(title: str, width: int, height: int) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" preserveAspectRatio="xMinYMin meet" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


def _y_axis(left: int, base: int, top: int, highest: float, suffix: str = "") -> str:
    parts = []
    for fraction in (0, 0.5, 1):
        y = base - (base - top) * fraction
        value = highest * fraction
        label = f"{value:.0f}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"
        parts.append(
            f'<line class="grid" x1="{left}" x2="100%" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" class="tick">{label}</text>'
        )
    return "".join(parts)


def _legend(entries: Sequence[tuple[str, str]], width: int) -> str:
    parts = []
    x = width - 8
    for label, shade in reversed(entries):
        text = escape(label)
        x -= 14 + 7 * len(label)
        parts.append(
            f'<rect x="{x}" y="2" width="10" height="10" fill="{shade}"/>'
            f'<text x="{x + 13}" y="11" class="tick">{text}</text>'
        )
    return f'<g class="legend">{"".join(parts)}</g>'


def _ticks(low: int, high: int) -> list[int]:
    step = max(1, (high - low) // 8)
    step = next((s for s in (1, 2, 3, 6, 12, 24, 60) if s >= step), step)
    first = low - low % step if low % step else low
    return [m for m in range(first, high + 1, step) if m >= low]
