"""Every attribute name a span, a span event or a measurement carries is one of
sbmgmt/telemetry/_names.py's (none written out in _instruments.py): a retried call and a
failing one, spans and events and the duration's points."""

from __future__ import annotations

import uuid

import pytest

from fakes import FakeNamespace
from sbmgmt import RetryPolicy
from sbmgmt.client import ManagementClient
from sbmgmt.errors import MessageLockLostError
from sbmgmt.ops import peek_message
from sbmgmt.telemetry import _names

from .conftest import Recorded

NAMES = {getattr(_names, name) for name in _names.__all__ if name.isupper()}
#: What OpenTelemetry's ``record_exception`` writes on its own "exception" event.
RECORDED_EXCEPTION = {"exception.type", "exception.message", "exception.stacktrace",
                      "exception.escaped"}


def test_every_attribute_name_is_one_of_the_names_module(
        recorded: Recorded, fake: FakeNamespace) -> None:
    retry = RetryPolicy(max_attempts=4, initial_backoff=0.01, max_backoff=0.02, jitter=0.0)
    fake.faults.server_busy(2, operation=peek_message.OPERATION)
    with ManagementClient.from_connection_string(fake.connection_string, timeout=10,
                                                 retry=retry) as client:
        client.entity("q").peek_messages()
        with pytest.raises(MessageLockLostError):
            client.entity("q").renew_message_locks([uuid.uuid4()])
    spans = recorded.spans()
    assert {span.name for span in spans} >= {"peek q", "renew_message_lock q"}
    seen: set[str] = set()
    for span in spans:
        seen |= set(span.attributes or {})
        for event in span.events:
            if event.name != "exception":
                assert event.name == _names.RETRY_EVENT
                seen |= set(event.attributes or {})
            else:
                assert set(event.attributes or {}) <= RECORDED_EXCEPTION
    for point in recorded.points("messaging.client.operation.duration"):
        seen |= set(point.attributes)
    assert {_names.ATTEMPT, _names.RETRY_DELAY, _names.ATTEMPTS} <= seen
    assert seen <= NAMES, seen - NAMES
