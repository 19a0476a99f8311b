"""Careless input to the client: each is a TypeError / ValueError naming the argument,
raised before anything is sent, and the client goes on working afterwards."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from fakes import FakeNamespace
from sbmgmt import AsyncManagementClient, ManagementClient
from sbmgmt._drivers.io_thread import Endpoint, IOThread
from sbmgmt._protocol.dispatcher import PendingRequest
from sbmgmt.auth import generate_sas_token
from sbmgmt.errors import UnauthorizedError
from sbmgmt.message import Message
from sbmgmt.ops import decode_reply, encode_request, peek_message

QUEUE = "q"
_PEEK = peek_message.Request(from_sequence_number=1, message_count=1)
LATER = datetime.now(timezone.utc) + timedelta(hours=1)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue(QUEUE)
        yield namespace


@pytest.fixture(scope="module")
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as c:
        yield c


def _sent(client: ManagementClient) -> int:
    return client.stats.submitted


CARELESS_CALLS: dict[str, tuple[Any, type[Exception], str]] = {
    "entity(None)": (lambda c: c.entity(None), TypeError, "path"),
    "entity(42)": (lambda c: c.entity(42), TypeError, "path"),
    "schedule_messages(one message)": (
        lambda c: c.entity(QUEUE).schedule_messages(Message(body=b"x"), LATER),
        TypeError, "messages"),
    "schedule_messages(a str)": (
        lambda c: c.entity(QUEUE).schedule_messages("hello", LATER), TypeError, "messages"),
    "schedule_messages([not a message])": (
        lambda c: c.entity(QUEUE).schedule_messages([b"x"], LATER), TypeError, "messages[0]"),
    "scheduled time as a string": (
        lambda c: c.entity(QUEUE).schedule_messages([Message(body=b"x")], "2030-01-01"),
        TypeError, "scheduled_enqueue_time"),
    "scheduled time as a number": (
        lambda c: c.entity(QUEUE).schedule_messages([Message(body=b"x")], 1_900_000_000),
        TypeError, "scheduled_enqueue_time"),
    "last_updated_time as a string": (
        lambda c: c.entity(QUEUE).list_sessions("2030-01-01"), TypeError, "last_updated_time"),
    "application property that cannot be encoded": (
        lambda c: c.entity(QUEUE).schedule_messages(
            [Message(body=b"x", application_properties={"when": object()})], LATER),
        TypeError, "'when'"),
    "application property int too large": (
        lambda c: c.entity(QUEUE).schedule_messages(
            [Message(body=b"x", application_properties={"big": 2**70})], LATER),
        TypeError, "'big'"),
    "properties_to_modify that cannot be encoded": (
        lambda c: c.entity(QUEUE).update_disposition(
            ["00000000-0000-0000-0000-000000000001"], "abandoned",
            properties_to_modify={"bad": {1, 2}}),
        TypeError, "properties_to_modify['bad']"),
    "submit(timeout=inf)": (
        lambda c: c.entity(QUEUE).submit(_PEEK, timeout=math.inf),
        ValueError, "timeout"),
    "submit(timeout=-1)": (
        lambda c: c.entity(QUEUE).submit(_PEEK, timeout=-1),
        ValueError, "timeout"),
    "submit(timeout=0)": (
        lambda c: c.entity(QUEUE).submit(_PEEK, timeout=0),
        ValueError, "timeout"),
}


@pytest.mark.parametrize("name", list(CARELESS_CALLS))
def test_careless_call_is_a_typed_error_and_nothing_is_sent(
        client: ManagementClient, name: str) -> None:
    call, error, names = CARELESS_CALLS[name]
    before = _sent(client)
    with pytest.raises(error, match=names.replace("[", r"\[").replace("]", r"\]")):
        call(client)
    assert _sent(client) == before
    assert client.entity(QUEUE).peek_messages() == []  # still usable


@pytest.mark.parametrize(("settings", "error", "names"), [
    ({"timeout": math.inf}, ValueError, "timeout"),
    ({"timeout": math.nan}, ValueError, "timeout"),
    ({"timeout": None}, TypeError, "timeout"),
    ({"timeout": -1.0}, ValueError, "timeout"),
    ({"timeout": "30"}, TypeError, "timeout"),
    ({"timeout": 5_000_000.0}, ValueError, "timeout"),  # > 2**32 - 1 ms
    ({"window": 0}, ValueError, "window"),
    ({"window": -3}, ValueError, "window"),
    ({"window": 2.5}, TypeError, "window"),
])
@pytest.mark.parametrize("kind", [ManagementClient, AsyncManagementClient])
def test_bad_client_settings_are_refused_at_construction(
        fake: FakeNamespace, kind: type[ManagementClient], settings: dict[str, Any],
        error: type[Exception], names: str) -> None:
    with pytest.raises(error, match=names):
        kind.from_connection_string(fake.connection_string, **settings)
    with pytest.raises(error, match=names):
        kind(f"{fake.host}:{fake.port}", _GarbageCredential(lambda valid: valid, fake),
             **settings)


@pytest.mark.parametrize("conn_str", [None, 42, b"Endpoint=sb://x/"])
def test_connection_string_that_is_not_a_str(conn_str: Any) -> None:
    with pytest.raises(TypeError, match="conn_str"):
        ManagementClient.from_connection_string(conn_str)


def test_the_largest_timeout_the_server_timeout_holds_is_accepted(
        fake: FakeNamespace) -> None:
    with ManagementClient.from_connection_string(fake.connection_string,
                                                 timeout=4_294_967.0) as client:
        assert client.entity(QUEUE).peek_messages() == []


def test_naive_datetimes_are_taken_as_utc(client: ManagementClient) -> None:
    queue = client.entity(QUEUE)
    naive = datetime(2099, 1, 2, 3, 4, 5)
    [number] = queue.schedule_messages([Message(body=b"naive")], naive)
    try:
        [peeked] = queue.peek_messages(from_sequence_number=number, max_count=1)
        assert peeked.scheduled_enqueue_time == naive.replace(tzinfo=timezone.utc)
    finally:
        queue.cancel_scheduled_messages([number])


@dataclass(frozen=True)
class _Token:
    token: Any
    expires_on: Any
    token_type: Any = "servicebus.windows.net:sastoken"


class _GarbageCredential:
    """A token provider whose tokens are ``spoil(valid token)``, until it is fixed."""

    def __init__(self, spoil: Callable[[_Token], Any], fake: FakeNamespace) -> None:
        self.spoil = spoil
        self.fake = fake
        self.fixed = False

    def get_token(self, audience: str) -> Any:
        expires = int(time.time()) + 3600
        valid = _Token(generate_sas_token(audience, self.fake.key_name, "SAS_KEY_VALUE",
                                          expires), expires)
        return valid if self.fixed else self.spoil(valid)


@pytest.mark.parametrize("spoil", [
    lambda valid: None,
    lambda valid: _Token(valid.token, "tomorrow"),
    lambda valid: _Token(valid.token, None),
    lambda valid: _Token(valid.token, math.nan),
    lambda valid: _Token(None, valid.expires_on),
    lambda valid: _Token(valid.token, valid.expires_on, None),
], ids=["None", "expiry a string", "expiry None", "expiry nan", "token None", "type None"])
def test_a_token_provider_returning_garbage_is_an_authentication_error(
        fake: FakeNamespace, spoil: Callable[[_Token], Any]) -> None:
    credential = _GarbageCredential(spoil, fake)
    io = IOThread(Endpoint(fake.host, fake.port, tls=False), credential,
                  audience_for=lambda e: f"sb://{fake.host}:{fake.port}/{e}",
                  reply_to_for=lambda e: f"{e}/$management/reply")
    try:
        def request() -> PendingRequest:
            message_id = uuid.uuid4()
            encoded = encode_request(_PEEK, message_id=message_id,
                                     reply_to="q/$management/reply", server_timeout_ms=4000)
            return PendingRequest(key=str(message_id), operation=peek_message.OPERATION,
                                  idempotent=True, payload=encoded.payload, timeout=5,
                                  decode=lambda reply: decode_reply(_PEEK, reply))

        first = request()
        io.submit(QUEUE, first)
        with pytest.raises(UnauthorizedError, match="token"):
            first.future.result(10)
        credential.fixed = True  # the I/O thread survived: the next request is served
        second = request()
        io.submit(QUEUE, second)
        assert second.future.result(10).messages == ()
    finally:
        io.close()
