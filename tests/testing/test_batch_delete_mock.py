"""sbmgmt.testing's mock answers batch-delete-messages like any operation: registered
replies (a count, 204, a refusal), the recorded requests, and a purge driven by them."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from sbmgmt import ManagementClient, ops
from sbmgmt.errors import BadRequestError, PurgeError
from sbmgmt.testing import MockManagementNode

CUTOFF = datetime(2030, 1, 2, tzinfo=timezone.utc)


def test_a_purge_against_registered_replies() -> None:
    with MockManagementNode() as mock:
        for count in (500, 120):
            mock.add(ops.batch_delete_messages, entity="orders", times=1,
                     response=ops.batch_delete_messages.Response(message_count=count))
        mock.add(ops.batch_delete_messages, entity="orders",
                 response=ops.batch_delete_messages.Response(message_count=0))
        with ManagementClient.from_connection_string(mock.connection_string) as client:
            assert client.entity("orders").purge_messages(before=CUTOFF) == 620
        # One request first; after its full reply, up to 32 in flight (surplus ones get 0);
        # the reply of 120 is not a zero, so it may be refilled once before the first zero
        # comes back: at most 1 + 32 + 1.
        requests = mock.requests(ops.batch_delete_messages.Request)
        assert 3 <= len(requests) <= 34
        assert set(requests) == {ops.batch_delete_messages.Request(
            message_count=500, enqueued_time_utc=CUTOFF)}


def test_a_refusal_reaches_the_caller_with_the_count() -> None:
    with MockManagementNode() as mock:
        mock.add(ops.batch_delete_messages, entity="orders", times=1,
                 response=ops.batch_delete_messages.Response(message_count=500))
        mock.add(ops.batch_delete_messages, entity="orders",
                 error=BadRequestError("Invalid Message Count"))
        with ManagementClient.from_connection_string(mock.connection_string) as client:
            orders = client.entity("orders")
            with pytest.raises(PurgeError) as caught:
                orders.purge_messages(before=CUTOFF)
    assert caught.value.deleted == 500
    assert isinstance(caught.value.error, BadRequestError)
