"""A message scheduled under a span carries that span's W3C trace context, as the official
SDKs put it (``traceparent`` and ``Diagnostic-Id``), and the official azure-servicebus
SDK reads it back on the receiving side once the message is due (real time, ~1 s)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from azure.servicebus import ServiceBusClient
from opentelemetry.trace import SpanContext, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message

from .conftest import Recorded

DUE_IN = timedelta(seconds=1)
WAIT = 10


def _traceparent(context: SpanContext) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def test_the_sdk_receives_the_schedule_spans_context(
        recorded: Recorded, fake: FakeNamespace, client: ManagementClient) -> None:
    with recorded.tracer.start_as_current_span("place order") as parent:
        client.entity("q").schedule_messages(
            [Message(body=b"order 1")], datetime.now(timezone.utc) + DUE_IN)
    (schedule,) = recorded.spans("schedule q")
    assert schedule.context is not None
    expected = _traceparent(schedule.context)

    with ServiceBusClient.from_connection_string(fake.connection_string) as sdk, \
            sdk.get_queue_receiver("q", max_wait_time=WAIT) as receiver:
        (received,) = receiver.receive_messages(max_message_count=1, max_wait_time=WAIT)
        receiver.complete_message(received)
    properties = received.application_properties
    assert properties is not None
    assert properties[b"traceparent"].decode() == expected
    assert properties[b"Diagnostic-Id"].decode() == expected

    # The consumer continues the producer's trace from what it received.
    carrier = {"traceparent": properties[b"traceparent"].decode()}
    consumer = get_current_span(TraceContextTextMapPropagator().extract(carrier))
    assert consumer.get_span_context().trace_id == parent.get_span_context().trace_id
    assert consumer.get_span_context().span_id == schedule.context.span_id


def test_a_trace_context_the_message_carries_is_kept(
        recorded: Recorded, client: ManagementClient) -> None:
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    q = client.entity("q")
    (sequence,) = q.schedule_messages(
        [Message(body=b"x", application_properties={"traceparent": own, "k": 1})],
        datetime.now(timezone.utc) + timedelta(hours=1))
    (peeked,) = q.peek_messages(sequence, 1)
    (schedule,) = recorded.spans("schedule q")
    assert schedule.context is not None
    assert peeked.application_properties["traceparent"] == own
    assert peeked.application_properties["k"] == 1
    assert peeked.application_properties["Diagnostic-Id"] == _traceparent(schedule.context)


def test_nothing_is_added_without_a_tracer(recorded: Recorded, client: ManagementClient) -> None:
    from sbmgmt import telemetry

    telemetry.instrument(None, recorded.meter_provider)  # metrics only
    q = client.entity("q")
    (sequence,) = q.schedule_messages([Message(body=b"x")],
                                      datetime.now(timezone.utc) + timedelta(hours=1))
    (peeked,) = q.peek_messages(sequence, 1)
    assert peeked.application_properties == {}
    assert recorded.spans() == []
    (point,) = [p for p in recorded.points("messaging.client.operation.duration")
                if p.attributes["messaging.operation.name"] == "schedule"]
    assert point.count == 1
