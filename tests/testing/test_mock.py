"""sbmgmt.testing's mock management node, in process: the real client against registered
replies (registry order, times, errors, callbacks, transport outcomes, recorded calls)."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient, ops
from sbmgmt._protocol.dispatcher import PendingRequest
from sbmgmt._protocol.retry import RetryPolicy
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.amqp.encode import encode_message
from sbmgmt.errors import (
    BadRequestError,
    ConnectionLostError,
    LinkDetachedError,
    LockLostError,
    MessageLockLostError,
    NotFoundError,
    OperationError,
    OperationTimeoutError,
    ProtocolError,
    ServerBusyError,
    SessionLockLostError,
)
from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.testing import Call, MockManagementNode

# The mock replaces the socket, so nothing is resolved or dialled.
CONNECTION_STRING = MockManagementNode().connection_string
WHEN = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
RENEWED = ops.renew_lock.Response(expirations=(WHEN,))
FAST_RETRY = RetryPolicy(initial_backoff=0.01, max_backoff=0.05)


@pytest.fixture
def client() -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(CONNECTION_STRING, timeout=5,
                                                 retry=FAST_RETRY) as c:
        yield c


def renew(client: ManagementClient, entity: str = "orders") -> list[datetime]:
    return client.entity(entity).renew_message_locks([uuid.uuid4()])


def test_a_registered_response_reaches_the_caller_and_the_call_is_recorded(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    renewed = ops.renew_lock.Response(expirations=(WHEN,) * 300)
    registration = sbmgmt_mock.add(ops.renew_lock, entity="orders", response=renewed)
    tokens = [uuid.uuid4() for _ in range(300)]

    assert client.entity("orders").renew_message_locks(tokens) == [WHEN] * 300

    assert sbmgmt_mock.calls == [Call(ops.renew_lock.OPERATION, "orders",
                                      ops.renew_lock.Request(lock_tokens=tuple(tokens)))]
    assert registration.calls == sbmgmt_mock.calls
    assert registration.call_count == 1


def test_registrations_for_one_operation_answer_in_order_then_the_last_repeats(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    later = ops.renew_lock.Response(expirations=(WHEN.replace(year=2031),))
    sbmgmt_mock.add(ops.renew_lock, response=RENEWED)
    sbmgmt_mock.add(ops.renew_lock, response=later)

    assert [renew(client) for _ in range(3)] == [[WHEN], [*later.expirations],
                                                 [*later.expirations]]


def test_times_limits_a_registration_and_then_the_request_is_unmatched(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, response=RENEWED, times=2)
    assert renew(client) == renew(client) == [WHEN]

    with pytest.raises(ProtocolError,
                       match=re.escape("no registered reply for com.microsoft:renew-lock")):
        renew(client)
    with pytest.raises(AssertionError, match="answered 2/2"):
        sbmgmt_mock.verify()
    sbmgmt_mock.reset()


def test_an_unmatched_request_fails_at_once_listing_what_was_registered(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, entity="orders", response=RENEWED, times=1)

    with pytest.raises(ProtocolError) as raised:
        client.entity("invoices").peek_messages()

    text = str(raised.value)
    assert "no registered reply for com.microsoft:peek-message on 'invoices'" in text
    assert "com.microsoft:renew-lock on 'orders' -> response" in text
    assert [c.entity for c in sbmgmt_mock.calls] == ["invoices"]  # not retried
    with pytest.raises(AssertionError) as failed:
        sbmgmt_mock.verify()
    assert "no registered reply for com.microsoft:peek-message" in str(failed.value)
    assert renew(client) == [WHEN]  # the rejection failed that request alone
    sbmgmt_mock.reset()


def test_entity_names_match_without_case(sbmgmt_mock: MockManagementNode,
                                         client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, entity="Orders", response=RENEWED)
    assert renew(client, "orders") == [WHEN]
    assert sbmgmt_mock.calls[0].entity == "orders"


def test_unused_registrations_are_reported(client: ManagementClient) -> None:
    mock = MockManagementNode()
    with mock:
        mock.add(ops.renew_lock, response=RENEWED)
        unused = mock.add(ops.peek_message, entity="dlq", error=NotFoundError)
        twice = mock.add(ops.get_session_state, error=SessionLockLostError, times=2)
        renew(client)
        with pytest.raises(SessionLockLostError):
            client.entity("sessions").get_session_state("s1")

        assert mock.unused() == [unused, twice]
        with pytest.raises(AssertionError) as failed:
            mock.assert_all_used()
        assert "2 registered replies were not used" in str(failed.value)
        assert "com.microsoft:peek-message on 'dlq'" in str(failed.value)
        mock.reset()


def test_ordered_requests_must_follow_the_registrations(client: ManagementClient) -> None:
    with MockManagementNode(ordered=True) as mock:
        mock.add(ops.renew_lock, response=RENEWED)
        mock.add(ops.peek_message, response=ops.peek_message.Response())

        with pytest.raises(ProtocolError,
                           match=re.escape("ordered: expected <com.microsoft:renew-lock")):
            client.entity("orders").peek_messages()
        assert renew(client) == [WHEN]
        assert client.entity("orders").peek_messages() == []
        with pytest.raises(ProtocolError, match="ordered"):
            renew(client)
        mock.reset()


@pytest.mark.parametrize(("error", "raised"), [
    (MessageLockLostError, MessageLockLostError),
    (SessionLockLostError, SessionLockLostError),
    (LockLostError, LockLostError),
    (NotFoundError("gone", description="The messaging entity could not be found."),
     NotFoundError),
    (OperationError("teapot", status_code=418, error_condition="x:teapot"), OperationError),
    (MessageLockLostError("gone", status_code=410), MessageLockLostError),
    (BadRequestError("odd", status_code=422), BadRequestError),
])
def test_an_error_class_or_instance_becomes_the_reply_the_client_maps_back(
        sbmgmt_mock: MockManagementNode, client: ManagementClient,
        error: type[Exception] | Exception, raised: type[Exception]) -> None:
    sbmgmt_mock.add(ops.renew_lock, error=error)

    with pytest.raises(raised) as caught:
        renew(client)

    assert type(caught.value) is raised
    if isinstance(error, OperationError):
        assert caught.value.status_code == error.status_code or error.status_code is None
        assert caught.value.description == error.description


def test_a_raw_status_and_condition(sbmgmt_mock: MockManagementNode,
                                    client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, status=410, condition="com.microsoft:message-lock-lost",
                    description="The lock supplied is invalid.")
    with pytest.raises(MessageLockLostError) as caught:
        renew(client)
    assert (caught.value.status_code, caught.value.description) == (
        410, "The lock supplied is invalid.")


def test_a_transient_status_is_retried_with_the_real_policy(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, error=ServerBusyError, times=2)
    sbmgmt_mock.add(ops.renew_lock, response=RENEWED)

    assert renew(client) == [WHEN]
    assert len(sbmgmt_mock.calls) == 3


def test_a_callback_answers_from_the_request(sbmgmt_mock: MockManagementNode,
                                             client: ManagementClient) -> None:
    def expire_known(call: Call) -> ops.renew_lock.Response:
        request = call.request
        assert isinstance(request, ops.renew_lock.Request)
        if len(request.lock_tokens) > 1:
            raise MessageLockLostError("one of the locks is gone")
        return ops.renew_lock.Response(expirations=(WHEN,) * len(request.lock_tokens))

    sbmgmt_mock.add(ops.renew_lock, callback=expire_known)

    assert renew(client) == [WHEN]
    with pytest.raises(MessageLockLostError):
        client.entity("orders").renew_message_locks([uuid.uuid4(), uuid.uuid4()])


def test_a_failing_callback_fails_the_request_and_the_test(client: ManagementClient) -> None:
    mock = MockManagementNode()
    with mock:
        mock.add(ops.renew_lock, callback=lambda call: ops.peek_message.Response())
        with pytest.raises(ProtocolError, match="the callback's result must be a"):
            renew(client)
        with pytest.raises(AssertionError,
                           match=re.escape("the reply to com.microsoft:renew-lock")):
            mock.verify()
        mock.reset()


def test_a_lost_connection_is_retried_on_a_new_connection(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, error=ConnectionLostError)
    sbmgmt_mock.add(ops.renew_lock, response=RENEWED)

    assert renew(client) == [WHEN]
    assert len(sbmgmt_mock.calls) == 2


def test_a_lost_connection_is_not_replayed_for_a_request_that_may_have_applied(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.schedule_message, error=ConnectionLostError)

    with pytest.raises(ConnectionLostError) as caught:
        client.entity("orders").schedule_messages([Message(body=b"x")], WHEN)
    assert caught.value.may_have_been_applied
    assert len(sbmgmt_mock.calls) == 1


def test_a_detached_link_is_reattached_and_retried(sbmgmt_mock: MockManagementNode,
                                                    client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, error=LinkDetachedError)
    sbmgmt_mock.add(ops.renew_lock, response=RENEWED)
    assert renew(client) == [WHEN]


def test_no_reply_lets_the_client_time_out(sbmgmt_mock: MockManagementNode) -> None:
    sbmgmt_mock.add(ops.peek_message, error=OperationTimeoutError)
    with ManagementClient.from_connection_string(
            CONNECTION_STRING, timeout=0.2, retry=RetryPolicy(max_attempts=1)) as client, \
            pytest.raises(OperationTimeoutError):
        client.entity("orders").peek_messages()


def send_malformed_renew(connection_string: str) -> BadRequestError:
    """A renew-lock whose lock token is a string, written by the real client's I/O thread
    (its models would never encode it); the error its reply maps to."""
    with ManagementClient.from_connection_string(connection_string, timeout=5) as client:
        message_id = uuid.uuid4()
        payload = encode_message(
            message_id=message_id, reply_to=client._core.reply_to("orders"),
            application_properties={"operation": ops.renew_lock.OPERATION},
            body={"lock-tokens": ["not-a-uuid"]})
        pending = PendingRequest(
            key=str(message_id), operation=ops.renew_lock.OPERATION, idempotent=True,
            payload=payload, timeout=5,
            decode=lambda reply: ops.renew_lock.decode(
                reply.status_code, reply.application_properties, reply.body))
        client._core.io.submit("orders", pending)
        with pytest.raises(BadRequestError) as caught:
            pending.future.result(10)
    return caught.value


def test_a_malformed_request_is_refused_as_the_fake_namespace_refuses_it() -> None:
    """The mock decodes the bytes the client wrote, as the fake namespace does: both
    answer the same 400 to the same malformed request."""
    with FakeNamespace() as fake:
        fake.add_queue("orders")
        from_fake = send_malformed_renew(fake.connection_string)
    with MockManagementNode() as mock:
        from_mock = send_malformed_renew(CONNECTION_STRING)
        assert mock.calls == []

    assert (from_mock.status_code, from_mock.error_condition, from_mock.description) == (
        from_fake.status_code, from_fake.error_condition, from_fake.description)
    assert from_mock.status_code == 400


def test_argument_checks(sbmgmt_mock: MockManagementNode) -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        sbmgmt_mock.add(ops.renew_lock)
    with pytest.raises(ValueError, match="exactly one of"):
        sbmgmt_mock.add(ops.renew_lock, response=RENEWED, error=MessageLockLostError)
    with pytest.raises(TypeError, match=re.escape("must be a sbmgmt.ops.renew_lock.Response")):
        sbmgmt_mock.add(ops.renew_lock, response=ops.peek_message.Response())
    with pytest.raises(TypeError, match="cannot make the client raise ProtocolError"):
        sbmgmt_mock.add(ops.renew_lock, error=ProtocolError)
    with pytest.raises(TypeError, match="no reply status maps to OperationError"):
        sbmgmt_mock.add(ops.renew_lock, error=OperationError)
    with pytest.raises(TypeError, match=re.escape("sbmgmt.errors class or instance")):
        sbmgmt_mock.add(ops.renew_lock, error=KeyError)
    with pytest.raises(ValueError, match="times must be at least 1"):
        sbmgmt_mock.add(ops.renew_lock, response=RENEWED, times=0)
    with pytest.raises(ValueError, match="go with status="):
        sbmgmt_mock.add(ops.renew_lock, error=BadRequestError, condition="x")
    with pytest.raises(KeyError, match="unknown management operation"):
        sbmgmt_mock.add("com.microsoft:nope", status=500)
    with pytest.raises(TypeError, match=re.escape("an sbmgmt.ops module")):
        sbmgmt_mock.add(pytest, status=500)  # type: ignore[arg-type]
    assert sbmgmt_mock.add("com.microsoft:renew-lock", status=500, times=1).operation == (
        ops.renew_lock.OPERATION)
    sbmgmt_mock.reset()


def test_a_reply_larger_than_a_read_arrives_whole(sbmgmt_mock: MockManagementNode,
                                                 client: ManagementClient) -> None:
    """A 300 KB peek reply crosses the pipe in several reads and many frames."""
    big = ReceivedMessage(body=bytes(range(256)) * 1200, sequence_number=1, enqueued_time=WHEN)
    sbmgmt_mock.add(ops.peek_message, response=ops.peek_message.Response(messages=(big,)))

    [peeked] = client.entity("orders").peek_messages()

    assert peeked.body_bytes() == big.body_bytes()


def test_the_asyncio_client_runs_against_the_mock(sbmgmt_mock: MockManagementNode) -> None:
    sbmgmt_mock.add(ops.get_session_state, entity="sessions",
                    response=ops.get_session_state.Response(session_state=b"step-3"))

    async def main() -> bytes | None:
        async with AsyncManagementClient.from_connection_string(CONNECTION_STRING) as client:
            return await client.entity("sessions").get_session_state("s-1")

    assert asyncio.run(main()) == b"step-3"
    assert sbmgmt_mock.calls[0].request == ops.get_session_state.Request(session_id="s-1")


def test_a_closed_mock_disconnects_new_connections_and_serves_no_more() -> None:
    mock = MockManagementNode()
    mock.add(ops.renew_lock, response=RENEWED, times=1)
    with mock.intercept(), ManagementClient.from_connection_string(
            CONNECTION_STRING, timeout=0.5, retry=RetryPolicy(max_attempts=1)) as client:
        mock.close()
        with pytest.raises((ConnectionLostError, OperationTimeoutError)):
            renew(client)
    with pytest.raises(RuntimeError, match="closed"):
        mock.serve()
    assert mock.calls == []


def test_requests_of_one_operation_are_typed_and_filtered_by_entity(
        sbmgmt_mock: MockManagementNode, client: ManagementClient) -> None:
    sbmgmt_mock.add(ops.renew_lock, response=RENEWED)
    sbmgmt_mock.add(ops.peek_message, response=ops.peek_message.Response())
    first, second = uuid.uuid4(), uuid.uuid4()
    client.entity("orders").renew_message_locks([first])
    client.entity("invoices").peek_messages()
    client.entity("Invoices").renew_message_locks([second])

    assert [r.lock_tokens for r in sbmgmt_mock.requests(ops.renew_lock.Request)] == [
        (first,), (second,)]
    assert sbmgmt_mock.requests(ops.renew_lock.Request, entity="invoices") == [
        ops.renew_lock.Request(lock_tokens=(second,))]
    with pytest.raises(TypeError, match="Request class"):
        sbmgmt_mock.requests(ReceivedMessage)  # type: ignore[type-var]
