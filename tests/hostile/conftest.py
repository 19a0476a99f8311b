"""Fixtures of the hostile-client suite: one fake for the module, and a client that must
still be served after each attack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient

QUEUE = "q"
#: A queue nobody sends to: the normal client's peek on it must answer [].
PROBE = "probe"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace() as namespace:
        namespace.add_queue(QUEUE)
        namespace.add_queue(PROBE)
        yield namespace


@pytest.fixture(scope="module")
def client(fake: FakeNamespace) -> Iterator[ManagementClient]:
    with ManagementClient.from_connection_string(fake.connection_string, timeout=5) as c:
        yield c


def served(client: ManagementClient) -> bool:
    """The invariant: a normal client's request is answered."""
    return client.entity(PROBE).peek_messages() == []
