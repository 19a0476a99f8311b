"""Which links a CBS token opens: those its audience covers (namespace, entity or the node's
own address), never more; and a token that expires in real time stops its links.

A raw AMQP client (proton's BlockingConnection) puts tokens for chosen audiences, as the
JavaScript SDK does for ``<entity>/$management``, then attaches.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from proton import Endpoint, Message, Timeout
from proton.utils import BlockingConnection, LinkDetached
from pytest_mock import MockerFixture

import fakes._auth
from fakes import FakeNamespace
from fakes._auth import TokenBook, scope_of
from sbmgmt.auth import audience_for, generate_sas_token

KEY_NAME, KEY = "RootManageSharedAccessKey", "SAS_KEY_VALUE"


@pytest.fixture
def namespace() -> Iterator[FakeNamespace]:
    with FakeNamespace(key_name=KEY_NAME, key=KEY) as fake:
        for queue in ("q", "q2", "qq"):
            fake.add_queue(queue)
        yield fake


class Client:
    """One AMQP connection that puts tokens on ``$cbs`` and attaches links."""

    def __init__(self, namespace: FakeNamespace) -> None:
        self.namespace = namespace
        self.connection = BlockingConnection(f"amqp://127.0.0.1:{namespace.port}",
                                             allowed_mechs="ANONYMOUS", timeout=10)
        self._replies = self.connection.create_receiver("$cbs", name="cbs-replies")
        self._requests = self.connection.create_sender("$cbs", name="cbs-requests")

    def put_token(self, path: str | None, expires_in: int = 3600) -> int:
        """Put a token for ``sb://host/<path>``; the reply's status code."""
        audience = audience_for(self.namespace.host, path)
        token = generate_sas_token(audience, KEY_NAME, KEY, int(time.time()) + expires_in)
        self._requests.send(Message(body=token, reply_to="cbs-reply", properties={
            "operation": "put-token", "type": "servicebus.windows.net:sastoken",
            "name": audience}))
        reply = self._replies.receive()
        status: int = reply.properties["status-code"]
        return status

    def opens(self, address: str, *, receiver: bool = False) -> bool:
        """Whether a link to ``address`` attaches (refused: detached by the fake)."""
        name = f"link-{uuid.uuid4()}"
        try:
            if receiver:
                self.connection.create_receiver(address, name=name).close()
            else:
                self.connection.create_sender(address, name=name).close()
        except LinkDetached as exc:
            assert "amqp:unauthorized-access" in str(exc)
            return False
        return True


@pytest.fixture
def client(namespace: FakeNamespace) -> Iterator[Client]:
    opened = Client(namespace)
    try:
        yield opened
    finally:
        opened.connection.close()


def test_a_token_for_the_management_node_opens_that_node_only(client: Client) -> None:
    assert client.put_token("q/$management") == 202
    assert client.opens("q/$management") and client.opens("q/$management", receiver=True)
    assert not client.opens("q")                      # no sending to the entity
    assert not client.opens("q", receiver=True)       # nor receiving from it
    assert not client.opens("q/$DeadLetterQueue", receiver=True)
    assert not client.opens("q2/$management")


def test_an_entity_token_opens_the_entity_and_its_nodes_and_nothing_of_another(
        client: Client) -> None:
    assert client.put_token("q") == 202
    assert client.opens("q") and client.opens("Q", receiver=True)  # names ignore case
    assert client.opens("q/$management")
    assert client.opens("q/$DeadLetterQueue", receiver=True)
    assert not client.opens("q2")
    assert not client.opens("qq")   # a prefix of the name is not a path segment


def test_a_namespace_token_opens_every_entity(client: Client) -> None:
    assert client.put_token(None) == 202
    assert all(client.opens(address) for address in ("q", "q2/$management", "qq"))


def test_a_token_expiring_in_real_time_detaches_the_links_it_authorized(
        client: Client) -> None:
    assert client.put_token("q", expires_in=2) == 202
    link = client.connection.create_receiver("q", name="short-lived")
    with pytest.raises(LinkDetached, match="amqp:unauthorized-access"):
        client.connection.wait(lambda: bool(link.link.state & Endpoint.REMOTE_CLOSED),
                               timeout=5, msg="the link outlived its token")


def test_a_link_covered_by_another_valid_token_stays_open(client: Client) -> None:
    assert client.put_token("q", expires_in=2) == 202
    assert client.put_token(None) == 202   # the namespace, for an hour
    link = client.connection.create_receiver("q", name="covered-twice")
    with pytest.raises(Timeout):
        client.connection.wait(lambda: bool(link.link.state & Endpoint.REMOTE_CLOSED),
                               timeout=2.5)
    assert link.link.state & Endpoint.REMOTE_ACTIVE


def test_the_tokens_a_connection_holds_are_bounded(
        client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fakes._auth, "MAX_GRANTS_PER_CONNECTION", 3)
    assert [client.put_token(path) for path in ("q/$management", "q2", "qq")] == [202] * 3
    assert client.put_token("q") == 403          # a fourth audience
    assert client.put_token("q2") == 202         # a new token for a held audience replaces it
    assert client.opens("q2") and not client.opens("q")


def test_the_lookup_reads_the_address_prefixes_only() -> None:
    book = TokenBook()
    for n in range(1000):
        book.put(scope_of(f"queue-{n}/$management"), expiry=2000.0, now=1000.0)
    assert book.covers(scope_of("Queue-7/$management"), 1500.0)
    assert not book.covers(scope_of("queue-7"), 1500.0)
    assert not book.covers(scope_of("queue-7/$management"), 2000.0)  # expired
    assert book.prune(2000.0) and not book.grants


def test_an_attach_that_crossed_the_fakes_own_close_is_not_answered(
        namespace: FakeNamespace, mocker: MockerFixture) -> None:
    """A cut (``faults.close_connections``) forgets the connection's record, tokens with it;
    an attach the client wrote before the close frame still arrives. The fake answers it
    with nothing, as the service answers nothing on a connection it closed: a refusal
    ("unauthorized", from a fresh record holding no token) would end a client's retries,
    which do not retry an authorization refusal."""
    server = namespace._server
    assert server is not None
    attach = mocker.patch.object(server.router, "attach")
    closed = mocker.Mock(state=Endpoint.LOCAL_CLOSED | Endpoint.REMOTE_ACTIVE)
    link = mocker.Mock(state=Endpoint.LOCAL_UNINIT | Endpoint.REMOTE_ACTIVE, connection=closed)
    server.on_link_remote_open(mocker.Mock(link=link))
    attach.assert_not_called()
    assert server.records.find(closed) is None  # no fresh, tokenless record made for it
