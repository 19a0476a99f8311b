"""The lock renewer's telemetry over a short real-time run against the fake: its batched
requests are spans linked to the messages' own trace context, and its metrics say how
many locks it holds, how many it renewed, with what margin left, and what it lost."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from opentelemetry.trace import SpanContext

from fakes import FakeNamespace
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message
from sbmgmt.renewer import LockRenewer, LossReason
from tests._waiting import wait_until

from .conftest import Recorded

LOCK = timedelta(seconds=3)
TRACED = 2
PLAIN = 2
RENEWALS_EACH = 2


@pytest.fixture
def work() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue("work", lock_duration=LOCK)
        namespace.add_queue("sessions", lock_duration=LOCK, requires_session=True)
        yield namespace


def _traceparent(context: SpanContext) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def test_renewer_spans_and_metrics_over_a_real_time_run(recorded: Recorded,
                                                        work: FakeNamespace) -> None:
    producers = []
    for index in range(TRACED):
        with recorded.tracer.start_as_current_span(f"produce {index}") as span:
            producers.append(span.get_span_context())
            work.send("work", Message(body=b"t", application_properties={
                "traceparent": _traceparent(span.get_span_context())}))
    work.send("work", *(Message(body=b"p") for _ in range(PLAIN)))
    locked = work.receive_and_lock("work", TRACED + PLAIN)
    assert len(locked) == TRACED + PLAIN

    with ManagementClient.from_connection_string(work.connection_string, timeout=10) as client, \
            client.entity("sessions").session("s1") as session, \
            LockRenewer(client, max_renewal_duration=None) as renewer:
        renewer.register_session("sessions", session)
        for message in locked:
            renewer.register("work", message)
        # A token the service does not know: lost at its first renewal.
        renewer.register("work", uuid.uuid4(), datetime.now(timezone.utc) + LOCK)
        assert wait_until(lambda: renewer.stats().tokens_renewed >= RENEWALS_EACH * len(locked)
                          and renewer.stats().sessions_renewed >= RENEWALS_EACH
                          and renewer.stats().lost_total == 1, 20)
        held = {p.attributes["sbmgmt.lock.kind"]: p.value
                for p in recorded.points("sbmgmt.renewer.locks")}
        assert held == {"message": len(locked), "session": 1}
        renewer.unregister_session("sessions", session)
        assert wait_until(lambda: renewer.stats().requests_in_flight == 0)
        # (a request's span ends in its future's first callback, before the renewer
        # counts it out of flight)
        stats = renewer.stats()

    assert stats.lost[LossReason.LOCK_LOST] == 1
    renewals = {p.attributes["sbmgmt.lock.kind"]: p.value
                for p in recorded.points("sbmgmt.renewer.renewals")}
    assert renewals == {"message": stats.tokens_renewed, "session": stats.sessions_renewed}
    margins = {p.attributes["sbmgmt.lock.kind"]: p
               for p in recorded.points("sbmgmt.renewer.margin")}
    assert margins["message"].count == stats.tokens_renewed
    assert margins["session"].count == stats.sessions_renewed
    for margin in margins.values():
        assert 0 < margin.min <= margin.max < LOCK.total_seconds()
    assert min(m.min for m in margins.values()) == pytest.approx(stats.tightest_margin)
    (losses,) = recorded.points("sbmgmt.renewer.losses")
    assert losses.attributes == {"sbmgmt.lock.kind": "message",
                                 "sbmgmt.lock.loss_reason": "lock_lost"}
    assert losses.value == 1
    held_after = {p.attributes["sbmgmt.lock.kind"]: p.value
                  for p in recorded.points("sbmgmt.renewer.locks")}
    assert held_after == {"message": 0, "session": 0}

    spans = recorded.spans("renew_message_lock work")
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["server.address"] == "127.0.0.1"
        assert span.attributes["messaging.batch.message_count"] >= 1
    linked = {link.context.span_id for span in spans for link in span.links}
    assert linked == {context.span_id for context in producers}
    failed = [s for s in spans if s.attributes and "error.type" in s.attributes]
    assert failed and all(s.attributes and s.attributes["error.type"]
                          == "com.microsoft:message-lock-lost" for s in failed)
    durations = {name: sum(p.count for p in recorded.points("messaging.client.operation.duration")
                           if p.attributes["messaging.operation.name"] == name)
                 for name in ("renew_message_lock", "renew_session_lock")}
    # Our own session lock renews itself through its client call: one span, one duration.
    assert durations == {"renew_message_lock": len(spans),
                         "renew_session_lock": stats.sessions_renewed}
    assert len(recorded.spans("renew_session_lock sessions")) == stats.sessions_renewed
    assert stats.renew_requests == len(spans) + stats.sessions_renewed
