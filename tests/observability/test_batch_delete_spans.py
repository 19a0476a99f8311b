"""A batch delete is a span per request: the count asked for as the batch size, the count
the reply deleted as ``sbmgmt.deleted_message_count``; a purge is one span per request, sync
(submitted: the span ends with the future) and asyncio alike."""

from __future__ import annotations

import asyncio

from fakes import FakeNamespace
from sbmgmt.aio import AsyncManagementClient
from sbmgmt.client import ManagementClient
from sbmgmt.message import Message
from tests._waiting import wait_until

from .conftest import Recorded


def test_delete_and_purge_spans_carry_the_counts(recorded: Recorded, fake: FakeNamespace,
                                                 client: ManagementClient) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(7)))
    q = client.entity("q")
    assert q.delete_messages(3) == 3
    (span,) = recorded.spans("delete_messages q")
    assert span.attributes is not None
    assert span.attributes["messaging.operation.name"] == "delete_messages"
    assert span.attributes["messaging.batch.message_count"] == 3
    assert span.attributes["sbmgmt.deleted_message_count"] == 3

    assert q.purge_messages(batch_size=2, in_flight=1) == 4
    assert wait_until(lambda: len(recorded.spans("delete_messages q")) == 4)
    deleted = [s.attributes["sbmgmt.deleted_message_count"]  # type: ignore[index]
               for s in recorded.spans("delete_messages q")[1:]]
    assert deleted == [2, 2, 0]


def test_asyncio_spans_carry_the_count(recorded: Recorded, fake: FakeNamespace) -> None:
    fake.send("q", *(Message(body=b"x") for _ in range(2)))

    async def main() -> int:
        async with AsyncManagementClient.from_connection_string(fake.connection_string,
                                                                timeout=10) as client:
            return await client.entity("q").delete_messages(5)

    assert asyncio.run(main()) == 2
    (span,) = recorded.spans("delete_messages q")
    assert span.attributes is not None
    assert span.attributes["sbmgmt.deleted_message_count"] == 2
