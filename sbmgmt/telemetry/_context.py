"""Trace context on messages: what a scheduled message carries, and what a received one says.

The official SDKs put the W3C trace context of the producing span in two application
properties of each message they send or schedule, ``traceparent`` and
``Diagnostic-Id`` (the same value; the older name is what earlier consumers read), and
``tracestate`` when there is one. They never replace a value the message already
carries (azure-servicebus 7.15: ``trace_message`` sets them with ``setdefault``).
Consumers read ``traceparent``, falling back to ``Diagnostic-Id``. A received message's
keys may be ``str`` (sbmgmt) or ``bytes`` (azure-servicebus), its values too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = [
    "DIAGNOSTIC_ID",
    "TRACEPARENT",
    "TRACESTATE",
    "context_headers",
    "links_of",
]

TRACEPARENT = "traceparent"
DIAGNOSTIC_ID = "Diagnostic-Id"
TRACESTATE = "tracestate"

_W3C = TraceContextTextMapPropagator()


def context_headers(span: Span) -> dict[str, str]:
    """The application properties that carry ``span``'s context (empty for a span that
    is not sampled-in or has no valid context)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, context=trace.set_span_in_context(span))
    parent = carrier.get(TRACEPARENT)
    if parent is None:
        return {}
    headers = {TRACEPARENT: parent, DIAGNOSTIC_ID: parent}
    state = carrier.get(TRACESTATE)
    if state:
        headers[TRACESTATE] = state
    return headers


def links_of(targets: Iterable[object]) -> list[Link]:
    """A link to the trace context each target (a received message) carries, where it
    carries one (others are skipped)."""
    links = []
    for target in targets:
        properties = getattr(target, "application_properties", None)
        if not isinstance(properties, Mapping) or not properties:
            continue
        parent = _text(properties, TRACEPARENT) or _text(properties, DIAGNOSTIC_ID)
        if not parent:
            continue
        carrier = {TRACEPARENT: parent}
        state = _text(properties, TRACESTATE)
        if state:
            carrier[TRACESTATE] = state
        context = trace.get_current_span(_W3C.extract(carrier)).get_span_context()
        if context.is_valid:
            links.append(Link(context))
    return links


def _text(properties: Mapping[Any, Any], key: str) -> str | None:
    value = properties.get(key)
    if value is None:
        value = properties.get(key.encode("ascii"))
    if isinstance(value, bytes):
        try:
            return value.decode("ascii")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None
