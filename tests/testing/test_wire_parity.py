"""The in-process path and the AMQP path of the mock carry the same bytes, for every
operation of ``sbmgmt.ops.OPERATIONS``: the request message the client encodes, the
reply message the mock encodes, and the Response the client decodes from it."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_mock import MockerFixture

from fakes._management import Reply
from fakes._nodes.management import ManagementRequests
from sbmgmt import ManagementClient, ops
from sbmgmt.amqp.envelope import Request, parse_request
from sbmgmt.ops._base import OpModel
from sbmgmt.testing import MockManagementNode
from tests._operations import SAMPLES


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
    requests = [c.args[1] for c in incoming.call_args_list[start[0]:]]
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
    incoming = mocker.spy(ManagementRequests, "accept")
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
