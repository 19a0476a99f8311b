"""The tracer, the instruments, and one operation's span and measurements.

Only imported once a real provider is set (:mod:`sbmgmt.telemetry._switch`): this is
where the ``opentelemetry`` API is used.

An :class:`Operation` is one management call as the caller sees it: a CLIENT span named
``"{operation} {entity}"`` from the call's start to its outcome, retries included; each
retry is an event on it (``sbmgmt.retry``: the failed attempt's number, its
``error.type``, the backoff before the next one), not a span of its own
(docs/observability.md, "Retries"). Its duration goes to the
``messaging.client.operation.duration`` histogram, and it counts in
``sbmgmt.client.active_requests`` while under way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import CancelledError, Future
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from tenacity import RetryCallState

from .._engine.connection import Endpoint
from .._version import __version__
from ..ops import schedule_message
from ..ops._base import OpModel
from . import _names as names
from ._context import context_headers, links_of
from ._live import LIVE_RENEWERS

__all__ = ["Instruments", "Meters", "Operation"]

_SCOPE = "sbmgmt"
_SCHEMA = "https://opentelemetry.io/schemas/1.27.0"
#: The conventions' advice for messaging.client.operation.duration (seconds).
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                     7.5, 10.0)
#: Lock time left when a renewal lands (seconds): fine near expiry, coarse far from it.
_MARGIN_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0,
                   300.0)


def _observe_locks(options: CallbackOptions) -> Iterable[Observation]:
    """The locks-held gauge: the locks of every live renewer, by kind."""
    message = session = 0
    for renewer in list(LIVE_RENEWERS):
        held = renewer.locks_held()
        message += held[0]
        session += held[1]
    return [Observation(message, {names.LOCK_KIND: "message"}),
            Observation(session, {names.LOCK_KIND: "session"})]


class Meters:
    """The metric instruments of one meter provider (made once per provider: the
    locks-held gauge's callback must be registered once)."""

    def __init__(self, meter_provider: Any) -> None:
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider, schema_url=_SCHEMA)
        self.duration = meter.create_histogram(
            "messaging.client.operation.duration", unit="s",
            description="Duration of a management operation, retries included",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS)
        self.active = meter.create_up_down_counter(
            "sbmgmt.client.active_requests", unit="{request}",
            description="Management operations under way")
        self.renewals = meter.create_counter(
            "sbmgmt.renewer.renewals", unit="{lock}",
            description="Locks the renewer renewed")
        self.losses = meter.create_counter(
            "sbmgmt.renewer.losses", unit="{lock}",
            description="Locks the renewer stopped renewing, by reason")
        self.margin = meter.create_histogram(
            "sbmgmt.renewer.margin", unit="s",
            description="Lock time left when a renewal's reply landed",
            explicit_bucket_boundaries_advisory=_MARGIN_BUCKETS)
        meter.create_observable_up_down_counter(
            "sbmgmt.renewer.locks", callbacks=[_observe_locks], unit="{lock}",
            description="Locks the renewers hold now")

    def renewed(self, kind: str, margins: Sequence[float]) -> None:
        """Locks of one kind renewed, with the lock time each had left when renewed."""
        attributes = {names.LOCK_KIND: kind}
        self.renewals.add(len(margins), attributes)
        for margin in margins:
            self.margin.record(margin, attributes)

    def lost(self, kind: str, reason: str) -> None:
        """A lock the renewer dropped, and why."""
        self.losses.add(1, {names.LOCK_KIND: kind, names.LOSS_REASON: reason})


#: The instruments made for each meter provider used, by identity (kept: a provider lives
#: as long as the process anyway, the SDK's registers itself for its shutdown at exit).
_meters: dict[int, tuple[Any, Meters]] = {}


def _meters_of(meter_provider: Any) -> Meters:
    known = _meters.get(id(meter_provider))
    if known is None or known[0] is not meter_provider:
        known = _meters[id(meter_provider)] = (meter_provider, Meters(meter_provider))
    return known[1]


class Instruments:
    """The tracer and the metric instruments of the providers in use (either may be None)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        self._providers = (tracer_provider, meter_provider)
        self.tracer = (None if tracer_provider is None else
                       trace.get_tracer(_SCOPE, __version__, tracer_provider,
                                        schema_url=_SCHEMA))
        self.meters = None if meter_provider is None else _meters_of(meter_provider)

    def uses(self, tracer_provider: Any, meter_provider: Any) -> bool:
        """Whether these instruments belong to exactly these providers."""
        old_tracer, old_meter = self._providers
        return old_tracer is tracer_provider and old_meter is meter_provider

    def operation(self, endpoint: Endpoint | None, entity: str, request: OpModel,
                  links: Sequence[Link] = ()) -> Operation:
        """Start the span and the measurements of one operation on ``entity``."""
        return Operation(self, endpoint, entity, request, links)

    def linked_operation(self, endpoint: Endpoint | None, entity: str, request: OpModel,
                         targets: Iterable[object]) -> Operation:
        """:meth:`operation` linked to the trace context each target (a received
        message) carries, as the renewer's batched requests are."""
        links = links_of(targets) if self.tracer is not None else []
        return Operation(self, endpoint, entity, request, links)

    def call(self, run: Callable[..., Any], endpoint: Endpoint, entity: str,
             request: OpModel, *args: Any) -> Any:
        """``run(entity, request, *args, on_retry)`` observed as one operation."""
        operation = self.operation(endpoint, entity, request)
        try:
            result = run(entity, operation.request, *args, operation.retried)
        except BaseException as error:
            operation.end(error)
            raise
        operation.end(None, result)
        return result

    async def call_async(self, run: Callable[..., Any], endpoint: Endpoint, entity: str,
                         request: OpModel, *args: Any) -> Any:
        """The coroutine twin of :meth:`call`."""
        operation = self.operation(endpoint, entity, request)
        try:
            result = await run(entity, operation.request, *args, operation.retried)
        except BaseException as error:
            operation.end(error)
            raise
        operation.end(None, result)
        return result


class Operation:
    """One operation's span (if tracing) and measurements (if metering), from now on."""

    __slots__ = ("_attempts", "_instruments", "_metric_attributes", "_start", "request",
                 "span")

    def __init__(self, instruments: Instruments, endpoint: Endpoint | None, entity: str,
                 request: OpModel, links: Sequence[Link]) -> None:
        self._instruments = instruments
        self._attempts = 1
        name, kind, disposition = names.operation_names(request)
        attributes: dict[str, Any] = {
            names.SYSTEM: names.SYSTEM_VALUE,
            names.OPERATION_NAME: name,
            names.DESTINATION: entity,
        }
        if kind is not None:
            attributes[names.OPERATION_TYPE] = kind
        subscription = names.subscription_of(entity)
        if subscription is not None:
            attributes[names.SUBSCRIPTION] = subscription
        if endpoint is not None:
            attributes[names.SERVER_ADDRESS] = endpoint.host
            attributes[names.SERVER_PORT] = endpoint.port
        self._metric_attributes = dict(attributes)
        if disposition is not None:
            attributes[names.DISPOSITION_STATUS] = disposition
        count = names.batch_count(request)
        if count is not None:
            attributes[names.BATCH_COUNT] = count
        tracer = instruments.tracer
        self.span = None if tracer is None else tracer.start_span(
            f"{name} {entity}", kind=SpanKind.CLIENT, attributes=attributes,
            links=links or None)
        #: What to send: the request, with the span's trace context on scheduled messages.
        self.request = request
        if self.span is not None and isinstance(request, schedule_message.Request):
            self.request = schedule_message.with_trace_context(
                request, context_headers(self.span))
        if instruments.meters is not None:
            instruments.meters.active.add(1, self._metric_attributes)
        self._start = time.perf_counter()

    def retried(self, state: RetryCallState) -> None:
        """tenacity's ``before_sleep``: the attempt failed and the call will try again."""
        self._attempts += 1
        if self.span is None:
            return
        error = None if state.outcome is None else state.outcome.exception()
        event: dict[str, Any] = {names.ATTEMPT: state.attempt_number,
                                 names.RETRY_DELAY: state.upcoming_sleep}
        if error is not None:
            event[names.ERROR_TYPE] = names.error_type(error)
            event[names.EXCEPTION_MESSAGE] = str(error)
        self.span.add_event(names.RETRY_EVENT, event)

    def end(self, error: BaseException | None, result: object = None) -> None:
        """The operation is over: its outcome on the span, its duration measured
        (``result``: its Response, when it succeeded)."""
        elapsed = time.perf_counter() - self._start
        attributes = self._metric_attributes
        meters = self._instruments.meters
        if meters is not None:
            meters.active.add(-1, attributes)
            if error is not None:
                attributes = {**attributes, names.ERROR_TYPE: names.error_type(error)}
            meters.duration.record(elapsed, attributes)
        span = self.span
        if span is None:
            return
        if self._attempts > 1:
            span.set_attribute(names.ATTEMPTS, self._attempts)
        deleted = names.deleted_count(result)
        if deleted is not None:
            span.set_attribute(names.DELETED_COUNT, deleted)
        if error is not None:
            span.set_attribute(names.ERROR_TYPE, names.error_type(error))
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, str(error)))
        span.end()

    def end_with(self, future: Future[Any]) -> None:
        """End when ``future`` is done, with its outcome (on the thread that completes it)."""
        future.add_done_callback(self._future_done)

    def _future_done(self, future: Future[Any]) -> None:
        if future.cancelled():
            self.end(CancelledError())
            return
        error = future.exception()
        self.end(error, None if error is not None else future.result())
