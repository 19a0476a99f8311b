"""The explorer's charts: counts and rates over time, drawn as SVG on the server.

Theory of operation. The explorer's :class:`~sbmgmt.actions.watch.Sampler` lists the
namespace every few seconds on its own thread (started and stopped with the server:
``_server.py``) into its bounded :class:`~sbmgmt.actions.watch.History`; the pages here
only read that history, so a chart costs the service nothing. ``GET /charts`` is the
namespace's charts (its totals) with the largest movers; ``GET /charts/entity?path=`` an
entity's; each page's charts poll their fragment (``/charts/part``) at the sampling's
interval. ``GET /charts/movers`` is the movers' fragment the namespace page shows at its
top, and the namespace list's sparklines come from :func:`sparkline` (a template global).

Why SVG drawn on the server rather than a vendored chart library (uPlot, the smallest of the
usual ones, is tens of kilobytes minified, as much again as htmx's 53 KB): a chart here is a
few lines over at most the history's length (an hour at 5 s:
:data:`~sbmgmt.actions.watch.DEFAULT_LENGTH`), which the server writes as one ``<path>``
each (a sparkline is about 1.4 KB, a chart 10-40 KB); nothing runs in the browser (the page's
CSP allows our scripts only, and htmx swaps the fragments in), it works offline, and a test
reads it as text. The SVG has no text in it: it is stretched to the page's width
(``preserveAspectRatio="none"``, the strokes ``non-scaling-stroke``), and the scale, the
times and the legend are HTML around it, so they are as readable on a phone as at 1,280 px.
Every value is a number the server formats; the entity's name is only ever in the HTML,
autoescaped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..actions.entities import EntityKind
from ..actions.watch import NAMESPACE, Point, Sampler, rates
from ._form_values import kind_value, number_value, text_value

__all__ = ["Chart", "Line", "chart_routes", "sparkline"]

#: The chart's drawing box (the SVG's viewBox), stretched to the page's width.
_WIDTH, _HEIGHT = 600.0, 160.0
#: A sparkline's box, and how many of the last samples it draws.
_SPARK_WIDTH, _SPARK_HEIGHT, _SPARK_POINTS = 80.0, 18.0, 60
#: The counts a chart of counts draws, with their names on the page.
_COUNT_LINES = (("active", "active"), ("dead_letter", "dead-letter"),
                ("scheduled", "scheduled"), ("transfer", "transfer"))
#: The movers' windows the page offers, in minutes (any of 1 to 60 is taken), and how many
#: movers of each kind it lists.
_WINDOWS = (1, 5, 15, 60)
_DEFAULT_MINUTES, _MOST_MINUTES, _MOVERS = 5, 60, 5
#: The pages poll at the sampling's interval, but not more often than this (seconds).
_FASTEST_POLL = 1.0

Render = Callable[..., Response]


@dataclasses.dataclass(frozen=True)
class Line:
    """One series of a chart: its name, its CSS class, its SVG path, and its values and
    their times (seconds since the epoch): the path's points, in its ``data-`` attributes
    for whoever reads the page as text (a test, a script)."""

    label: str
    css: str
    path: str
    values: tuple[float | None, ...]
    times: tuple[float, ...]

    @property
    def latest_text(self) -> str:
        """The last value as the legend says it (an en dash: none yet)."""
        latest = self.values[-1] if self.values else None
        return "\u2013" if latest is None else _number(latest)

    @property
    def value_text(self) -> str:
        """The values as the path's ``data-values``: numbers, ``-`` for a gap."""
        return " ".join("-" if v is None else _number(v) for v in self.values)

    @property
    def time_text(self) -> str:
        """The times as the path's ``data-times``: seconds since the epoch, to the ms."""
        return " ".join(f"{at:.3f}" for at in self.times)


@dataclasses.dataclass(frozen=True)
class Chart:
    """A chart: its lines over one time axis from ``start`` to ``end`` (UTC), scaled so
    that ``top`` is the box's top."""

    title: str
    unit: str
    lines: tuple[Line, ...]
    top: float
    start: str
    end: str

    @property
    def top_text(self) -> str:
        """The scale's top as the page says it."""
        return _number(self.top)


def _number(value: float) -> str:
    """A value as text: a whole number without a point, else two decimals at most."""
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")


def _scale(values: Sequence[float | None]) -> float:
    """The top of the scale: the largest value (1 at least, so a flat 0 is at the bottom)."""
    return max([1.0, *(v for v in values if v is not None)])


def _path(times: Sequence[float], values: Sequence[float | None], top: float,
          width: float, height: float) -> str:
    """``values`` at ``times`` as an SVG path in a ``width`` x ``height`` box (``top`` at
    the box's top, 0 at its bottom); a None breaks the line."""
    if not times:
        return ""
    first, span = times[0], (times[-1] - times[0]) or 1.0
    pieces: list[str] = []
    moved = False
    for at, value in zip(times, values, strict=True):
        if value is None:
            moved = False
            continue
        x = (at - first) / span * width
        y = height - value / top * height
        pieces.append(f"{'L' if moved else 'M'}{x:.1f},{y:.1f}")
        moved = True
    return " ".join(pieces)


def _time(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).strftime("%H:%M:%S")


def _chart(title: str, unit: str, times: Sequence[float],
           series: Sequence[tuple[str, str, Sequence[float | None]]]) -> Chart:
    top = _scale([v for _, _, values in series for v in values])
    lines = tuple(Line(label, css, _path(times, values, top, _WIDTH, _HEIGHT), tuple(values),
                       tuple(times)) for label, css, values in series)
    return Chart(title, unit, lines, top, _time(times[0]) if times else "",
                 _time(times[-1]) if times else "")


def charts_of(points: Sequence[Point], kind: EntityKind) -> list[Chart]:
    """An entity's (or the namespace's) charts: its counts, and its messages in and out
    per second (a topic has no counts of its own but scheduled: its subscriptions hold its
    messages)."""
    times = [p.at for p in points]
    counted = [(label, field.replace("_", "-"), [p.count(field) for p in points])
               for field, label in _COUNT_LINES]
    counted = [line for line in counted if any(v is not None for v in line[2])]
    found = [_chart("Messages", "messages", times, counted)]
    if kind is not EntityKind.TOPIC:
        moved = rates(points)
        found.append(_chart("In and out", "messages per second", [r.at for r in moved], [
            ("in", "incoming", [r.incoming for r in moved]),
            ("out", "outgoing", [r.outgoing for r in moved]),
            ("dead-lettered", "dead-lettered", [r.dead_lettered for r in moved])]))
    return found


def sparkline(sampler: Sampler, name: str) -> Markup:
    """A small SVG of an entity's active and dead-letter counts over the last
    :data:`_SPARK_POINTS` samples (nothing before the first sample that listed it)."""
    history = sampler.history
    active = history.series(name, "active", _SPARK_POINTS)
    dead = history.series(name, "dead_letter", _SPARK_POINTS)
    if not active and not dead:
        return Markup("")
    if all(v is None for v in active):  # a topic: its scheduled messages
        active = history.series(name, "scheduled", _SPARK_POINTS)
    top = _scale([*active, *dead])
    times = [float(i) for i in range(len(active))]
    step = _SPARK_WIDTH / (_SPARK_POINTS - 1)
    width = max(len(active) - 1, 1) * step
    drawn = [("active", active), *([("dead-letter", dead)] if any(dead) else [])]
    lines = [f'<path class="{css}" d="{_path(times, values, top, width, _SPARK_HEIGHT)}"/>'
             for css, values in drawn]
    return Markup(f'<svg class="spark" viewBox="0 -1 {_SPARK_WIDTH:g} {_SPARK_HEIGHT + 2:g}" '
                  f'preserveAspectRatio="none" aria-hidden="true">{"".join(lines)}</svg>')


class _ChartViews:
    def __init__(self, sampler: Sampler, page: Render, redacted: Callable[[str], str]) -> None:
        self._sampler = sampler
        self._page = page
        self._redacted = redacted

    def _status(self) -> dict[str, Any]:
        sampler = self._sampler
        latest = sampler.history.latest
        return {"interval": sampler.interval, "poll": max(sampler.interval, _FASTEST_POLL),
                "length": sampler.history.length,
                "kept_minutes": round(sampler.history.length * sampler.interval / 60, 1),
                "took": None if latest is None else latest.took,
                "sampled": 0 if latest is None else len(latest.entities),
                "failure": None if sampler.failure is None else self._redacted(sampler.failure)}

    def _charts(self, request: Request) -> dict[str, Any]:
        path = request.query_params.get("path", "")
        if not path:
            return {"path": "", "kind": "", "charts": charts_of(
                self._sampler.history.points(NAMESPACE), EntityKind.QUEUE), **self._status()}
        kind = kind_value(request.query_params, text_value(request.query_params, "path"))
        return {"path": path, "kind": kind.value,
                "charts": charts_of(self._sampler.history.points(path), kind),
                **self._status()}

    def _movers(self, request: Request) -> dict[str, Any]:
        minutes = number_value(request.query_params, "minutes", _DEFAULT_MINUTES,
                               minimum=1, maximum=_MOST_MINUTES)
        history = self._sampler.history
        return {"minutes": minutes, "windows": _WINDOWS,
                "dead_letters": history.movers(minutes * 60.0, "dead_letter", _MOVERS),
                "actives": history.movers(minutes * 60.0, "active", _MOVERS),
                **self._status()}

    async def page(self, request: Request) -> Response:
        """The namespace's charts (no ``path``) or an entity's, with the movers."""
        return self._page(request, "charts.html", **{**self._charts(request),
                                                     **self._movers(request)})

    async def part(self, request: Request) -> Response:
        """The charts alone (what the page polls)."""
        return self._page(request, "_charts.html", **self._charts(request))

    async def movers(self, request: Request) -> Response:
        """The movers alone (the namespace page's top, polled)."""
        return self._page(request, "_movers.html", **self._movers(request))


def chart_routes(sampler: Sampler, page: Render,
                 redacted: Callable[[str], str]) -> list[Route]:
    """The charts' routes, over the explorer's sampler.

    Args:
        sampler: What samples the namespace (its history is what the charts draw).
        page: Renders a template as a page (the explorer's ``_page``).
        redacted: Takes the connection's secrets out of a failed listing's words
            (``Namespace.redacted``).

    Returns:
        The routes to mount.
    """
    views = _ChartViews(sampler, page, redacted)
    return [Route("/charts", views.page), Route("/charts/entity", views.page),
            Route("/charts/part", views.part), Route("/charts/movers", views.movers)]

