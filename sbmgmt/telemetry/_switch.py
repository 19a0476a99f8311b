"""Whether telemetry is on: the one check on the hot paths, decided once and re-checked cheaply.

Theory of operation
-------------------
The library never configures OpenTelemetry; it follows the application's global
providers (``opentelemetry.trace.set_tracer_provider`` /
``opentelemetry.metrics.set_meter_provider``), or the ones pinned by
:func:`sbmgmt.telemetry.instrument`.

Until the application sets one, the API hands out a *proxy* provider (and the API's
no-op ones when told to do nothing): spans and instruments from them do nothing, yet
building a span's name and attributes, timing the call and touching the proxy still
cost. So the hot paths ask :func:`current` instead, which returns the live
:class:`~sbmgmt.telemetry._instruments.Instruments` or None:

- without ``opentelemetry-api`` installed it is None for good (the state is *settled*);
- otherwise the providers are looked up at most once a second (:data:`RECHECK_INTERVAL`):
  a provider whose class is the API's own (proxy or no-op) counts as not set. Between
  two look-ups a call costs one ``time.monotonic()`` and a comparison;
- once both a real tracer provider and a real meter provider are in use the state is
  settled (the API lets each global be set only once), and a call costs an attribute read.

A provider set by the application therefore takes effect within a second, on calls
that start after it; nothing is recorded for calls already under way.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._instruments import Instruments

__all__ = ["RECHECK_INTERVAL", "current", "pin", "refresh"]

#: Seconds between two look-ups of the global providers while one is not set.
RECHECK_INTERVAL = 1.0

#: The modules whose provider classes are the API's proxies and no-ops.
_API_MODULES = ("opentelemetry.trace", "opentelemetry.metrics")


class _State:
    __slots__ = ("instruments", "next_check", "pinned", "settled")

    def __init__(self) -> None:
        self.instruments: Instruments | None = None
        #: No look-up can change the answer any more (no API, or both providers real).
        self.settled = False
        self.next_check = 0.0
        #: (tracer provider, meter provider) given to :func:`pin`, or None: the globals.
        self.pinned: tuple[Any, Any] | None = None


_state = _State()
_refresh_lock = threading.Lock()


def current() -> Instruments | None:
    """The live instruments, or None when no provider is set (the hot paths' one check)."""
    state = _state
    if state.settled or time.monotonic() < state.next_check:
        return state.instruments
    return refresh()


def refresh() -> Instruments | None:
    """Look the providers up now (and keep the answer until the next look-up)."""
    with _refresh_lock:
        state = _state
        state.next_check = time.monotonic() + RECHECK_INTERVAL
        try:
            from ._instruments import Instruments
        except ImportError:  # no opentelemetry-api: nothing will ever be recorded
            state.instruments = None
            state.settled = True
            return None
        tracer_provider, meter_provider = _providers(state.pinned)
        tracer_provider = tracer_provider if _is_real(tracer_provider) else None
        meter_provider = meter_provider if _is_real(meter_provider) else None
        old = state.instruments
        if tracer_provider is None and meter_provider is None:
            state.instruments = None
        elif old is None or not old.uses(tracer_provider, meter_provider):
            state.instruments = Instruments(tracer_provider, meter_provider)
        state.settled = tracer_provider is not None and meter_provider is not None
        return state.instruments


def pin(tracer_provider: object | None, meter_provider: object | None, *,
        follow_globals: bool) -> None:
    """Use these providers instead of the globals (``follow_globals``: the globals again)."""
    with _refresh_lock:
        _state.pinned = None if follow_globals else (tracer_provider, meter_provider)
        _state.instruments = None
        _state.settled = False
        _state.next_check = 0.0
    refresh()


def _providers(pinned: tuple[Any, Any] | None) -> tuple[Any, Any]:
    if pinned is not None:
        return pinned
    from opentelemetry import metrics, trace

    return trace.get_tracer_provider(), metrics.get_meter_provider()


def _is_real(provider: object) -> bool:
    """Whether spans or measurements given to ``provider`` go anywhere: not None, and not
    one of the API's own proxy or no-op providers."""
    return provider is not None and not type(provider).__module__.startswith(_API_MODULES)
