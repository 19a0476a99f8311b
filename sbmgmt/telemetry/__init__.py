"""OpenTelemetry traces and metrics for every operation and for the lock renewer.

Install the ``otel`` extra (``pip install 'sbmgmt[otel]'``: the OpenTelemetry *API*
only) and configure a tracer provider and / or a meter provider in the application, as
for any instrumented library; sbmgmt then records, with no call of its own:

- a CLIENT span per management operation, named ``"{operation} {entity}"``, with the
  messaging semantic conventions' attributes for Azure Service Bus (retries are events
  on it), and the lock renewer's batched requests as spans linked to the messages'
  own trace context;
- the W3C ``traceparent`` (and ``Diagnostic-Id``) of the schedule span on each message
  scheduled, as the official SDKs put it, so that the consumer's trace joins it;
- ``messaging.client.operation.duration``, ``sbmgmt.client.active_requests``, and the
  renewer's ``sbmgmt.renewer.locks``, ``.renewals``, ``.losses`` and ``.margin``.

Without the API, or without a provider, nothing is recorded and the calls pay one
cheap check (:mod:`sbmgmt.telemetry._switch`). docs/observability.md has the set-ups
and the meaning of every attribute and metric.
"""

from __future__ import annotations

# For sbmgmt's own layers (the client core and the renewer), not applications: current()
# is the hot paths' one check (the instruments, or None when nothing records), and
# LIVE_RENEWERS the renewers that the locks-held gauge reads.
from ._live import LIVE_RENEWERS as LIVE_RENEWERS
from ._switch import RECHECK_INTERVAL, pin
from ._switch import current as current

__all__ = ["RECHECK_INTERVAL", "follow_global_providers", "instrument"]


def instrument(tracer_provider: object | None = None,
               meter_provider: object | None = None) -> None:
    """Record to these providers instead of the global ones (None: record no spans, or
    no metrics). For an application that keeps its providers out of the globals, and
    for tests; takes effect for calls that start afterwards."""
    pin(tracer_provider, meter_provider, follow_globals=False)


def follow_global_providers() -> None:
    """Undo :func:`instrument`: follow the global providers again (the default)."""
    pin(None, None, follow_globals=True)
