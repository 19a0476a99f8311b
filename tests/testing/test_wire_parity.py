"""The in-process path and the AMQP path of the mock carry the same bytes, for every
operation of ``sbmgmt.ops.OPERATIONS``: the request message the client encodes, the
reply message the mock encodes, and the Response the client decodes from it."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from pytest_mock import MockerFixture

from fakes._management import Reply
from fakes._server import Server
from sbmgmt import ManagementClient, ops
from sbmgmt.amqp.envelope import Request, parse_request
from sbmgmt.message import Message, ReceivedMessage
from sbmgmt.ops._base import OpModel
from sbmgmt.ops.update_disposition import DispositionStatus
from sbmgmt.rules import RuleDescription, SqlFilter, SqlRuleAction
from sbmgmt.testing import MockManagementNode

WHEN = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
TOKENS = (uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"), uuid.UUID(int=7))
PEEKED = ReceivedMessage(body=b"peeked", message_id="m-1", sequence_number=3,
                         enqueued_time=WHEN, application_properties={"colour": "red"})

#: A request and a response for each operation (the test below checks the keys are
#: exactly the registry's operations).
SAMPLES: dict[str, tuple[OpModel, OpModel]] = {
    ops.add_rule.OPERATION: (
        ops.add_rule.Request(rule_name="red", filter=SqlFilter(expression="colour = 'red'"),
                             action=SqlRuleAction(expression="SET seen = TRUE")),
        ops.add_rule.Response()),
    ops.cancel_scheduled_message.OPERATION: (
        ops.cancel_scheduled_message.Request(sequence_numbers=(5, 2**40)),
        ops.cancel_scheduled_message.Response()),
    ops.enumerate_rules.OPERATION: (
        ops.enumerate_rules.Request(top=10, skip=1),
        ops.enumerate_rules.Response(rules=(RuleDescription(
            name="red", filter=SqlFilter(expression="colour = 'red'"), created_at=WHEN),))),
    ops.get_message_sessions.OPERATION: (
        ops.get_message_sessions.Request(last_updated_time=WHEN, skip=0, top=5),
        ops.get_message_sessions.Response(skip=2, session_ids=("s-1", "s-2"))),
    ops.get_session_state.OPERATION: (
        ops.get_session_state.Request(session_id="s-1"),
        ops.get_session_state.Response(session_state=b"\x00state")),
    ops.peek_message.OPERATION: (
        ops.peek_message.Request(from_sequence_number=3, message_count=5),
        ops.peek_message.Response(messages=(PEEKED,))),
    ops.receive_by_sequence_number.OPERATION: (
        ops.receive_by_sequence_number.Request(sequence_numbers=(3,), session_id="s-1"),
        ops.receive_by_sequence_number.Response(messages=(
            PEEKED.model_copy(update={"lock_token": TOKENS[0]}),))),
    ops.remove_rule.OPERATION: (
        ops.remove_rule.Request(rule_name="red"), ops.remove_rule.Response()),
    ops.renew_lock.OPERATION: (
        ops.renew_lock.Request(lock_tokens=TOKENS),
        ops.renew_lock.Response(expirations=(WHEN, WHEN))),
    ops.renew_session_lock.OPERATION: (
        ops.renew_session_lock.Request(session_id="s-1"),
        ops.renew_session_lock.Response(expiration=WHEN)),
    ops.schedule_message.OPERATION: (
        ops.schedule_message.Request(messages=(
            Message(body=b"later", message_id="m-2", scheduled_enqueue_time=WHEN),)),
        ops.schedule_message.Response(sequence_numbers=(42,))),
    ops.set_session_state.OPERATION: (
        ops.set_session_state.Request(session_id="s-1", session_state=b"state"),
        ops.set_session_state.Response()),
    ops.update_disposition.OPERATION: (
        ops.update_disposition.Request(
            disposition_status=DispositionStatus.SUSPENDED, lock_tokens=TOKENS,
            dead_letter_reason="poison", properties_to_modify={"tries": 3}),
        ops.update_disposition.Response()),
}


def test_every_operation_of_the_registry_has_a_sample() -> None:
    assert set(SAMPLES) == set(ops.OPERATIONS)


def exchange(connection_string: str, request: OpModel) -> Any:
    """One request through a real client (no retries; a fixed timeout, so the same
    ``com.microsoft:server-timeout`` on both paths); its Response."""
    with ManagementClient.from_connection_string(connection_string, timeout=5) as client:
        return client.entity("orders").submit(request, timeout=5.0).result(10)


def normalised(raw: bytes, message: Request) -> bytes:
    """``raw`` with the request's message-id (a correlation-id in the reply) and reply-to
    (unique per client) blanked out."""
    blanked = raw.replace(message.message_id.bytes, bytes(16))
    return blanked.replace(message.reply_to.encode(), b"x" * len(message.reply_to))


def captured(incoming: Any, encoded: Any, start: tuple[int, int]) -> tuple[bytes, bytes]:
    """The one management request's bytes and its reply's bytes since ``start``."""
    requests = [c.args[3] for c in incoming.call_args_list[start[0]:] if c.args[1].management]
    # The $cbs node's put-token replies are Replies too (status-code): not counted here.
    replies = [reply for call, reply in zip(encoded.call_args_list[start[1]:],
                                            encoded.spy_return_list[start[1]:], strict=True)
               if call.args[0].status_key == "statusCode"]
    assert len(requests) == len(replies) == 1
    message = parse_request(requests[0])
    return normalised(requests[0], message), normalised(bytes(replies[0]), message)


@pytest.mark.parametrize("operation", sorted(ops.OPERATIONS))
def test_the_in_process_and_the_wire_path_carry_the_same_bytes(
        operation: str, mocker: MockerFixture) -> None:
    request, response = SAMPLES[operation]
    mock = MockManagementNode()
    mock.add(operation, response=response)
    incoming = mocker.spy(Server, "_incoming")
    encoded = mocker.spy(Reply, "encode")
    try:
        over_wire = exchange(mock.serve(), request)
        wire = captured(incoming, encoded, (0, 0))
        start = (len(incoming.call_args_list), len(encoded.spy_return_list))
        with mock.intercept():
            in_process = exchange(mock.connection_string, request)
        memory = captured(incoming, encoded, start)
    finally:
        mock.close()

    assert memory == wire
    assert in_process == over_wire == response
    assert [call.request for call in mock.calls] == [request, request]
