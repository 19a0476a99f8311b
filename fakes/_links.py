"""The server's bookkeeping of client connections and links, kept beside proton's objects.

Theory of operation
-------------------
Nothing is stored on proton's objects. Each client connection the server serves has a
:class:`ConnectionRecord` (its key, its CBS tokens, its reply links, the links it holds)
and each link attached without refusal a :class:`LinkRecord` (its connection, address and
node), in dicts keyed by proton's C pointer (``_impl``). A record holds proton's wrapper,
which holds a reference on the C object, so a pointer is not reused while its record
lives. A link's record goes when the client detaches it (:meth:`Records.drop_link`), a
connection's and its links' when it closes or fails (:meth:`Records.forget`). A link
with no record is one refused at attach (or of a forgotten connection): readers treat it
as unknown.

A connection refused for the namespace's connection limit gets no record; its pointer is
in :attr:`Records.refused` until its transport closes. Not thread-safe: the server uses
it under the namespace lock.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from proton import Condition, Endpoint, Terminus, symbol

from ._auth import TokenBook
from ._node import Node
from ._proton import ConnectionHandle, LinkHandle, Pointer

__all__ = ["CREDIT", "ENTITY_CREDIT", "ConnectionRecord", "LinkRecord", "Records", "open_link"]

#: The credit a request link (``$cbs``, ``$management``, the coordinator) is given, and
#: topped up to once it falls below half.
CREDIT = 500
#: The credit a sender to an entity is given, and topped up to after each read: the
#: service's (its flow right after a sender attaches carries ``link-credit`` 1000).
ENTITY_CREDIT = 1000
SESSION_FILTER = symbol("com.microsoft:session-filter")


@dataclass(eq=False)
class ConnectionRecord:
    """What one client connection holds: its tokens, its reply links and its links."""

    key: int
    connection: ConnectionHandle
    tokens: TokenBook = field(default_factory=TokenBook)
    #: Sender links to ``$cbs`` or a ``$management`` node, by the node's reply key.
    reply_links: dict[str, list[LinkHandle]] = field(default_factory=dict)
    #: (node, reply-to as sent) -> the link last chosen for it (the hot path's shortcut).
    reply_cache: dict[tuple[str, str | None], LinkHandle] = field(default_factory=dict)
    reply_tag: int = 0
    #: Request links whose credit was not topped up while their node's replies waited.
    starved: set[LinkRecord] = field(default_factory=set)
    #: The pointers of its links that have a record (attached, not yet detached): their
    #: number is bounded by ``Limits.max_links_per_connection``.
    link_pointers: set[Pointer] = field(default_factory=set)
    #: Since when (monotonic seconds) it holds no link; None while it holds one
    #: (:mod:`fakes._idle` closes a connection left without links too long).
    linkless_since: float | None = field(default_factory=time.monotonic)
    #: Whether it ever held a link (a new connection has less time to attach its first).
    linked: bool = False

    @property
    def links(self) -> int:
        """How many links it holds now."""
        return len(self.link_pointers)


@dataclass(slots=True, eq=False)
class LinkRecord:
    """One attached link: where it belongs and where the client's messages on it go."""

    link: LinkHandle
    connection: ConnectionRecord
    #: The address as attached, normalized ("" for a coordinator).
    address: str
    #: Where the messages sent on it go (a receiver link of the server); None for the
    #: server's sender links (reply links, the entities' receivers).
    node: Node | None = None
    #: The receiver's key (its consumer, its session wait, its session lock's owner).
    key: int | None = None
    #: Its incoming deliveries (C pointers) larger than the limit while partial: their
    #: bytes are dropped as they arrive, and the delivery is rejected when complete.
    oversized: set[Pointer] = field(default_factory=set)
    #: When (monotonic seconds) a transfer, settlement or flow last crossed it
    #: (:mod:`fakes._idle` detaches an entity link idle too long).
    active_at: float = field(default_factory=time.monotonic)


class Records:
    """The records of every connection and link the server serves now."""

    def __init__(self) -> None:
        self.connections: dict[Pointer, ConnectionRecord] = {}
        self.by_key: dict[int, ConnectionRecord] = {}
        self.links: dict[Pointer, LinkRecord] = {}
        #: Connections refused for the connection limit (their frames are not served).
        self.refused: set[Pointer] = set()
        self._next_key = 1

    def next_key(self) -> int:
        """A fresh key (connections and receivers share the sequence)."""
        key = self._next_key
        self._next_key += 1
        return key

    def connection(self, connection: ConnectionHandle) -> ConnectionRecord:
        """The connection's record, made on first sight."""
        found = self.connections.get(connection._impl)
        if found is None:
            found = ConnectionRecord(self.next_key(), connection)
            self.connections[connection._impl] = found
            self.by_key[found.key] = found
        return found

    def find(self, connection: ConnectionHandle) -> ConnectionRecord | None:
        """The connection's record, if it has one."""
        return self.connections.get(connection._impl)

    def link(self, link: LinkHandle) -> LinkRecord | None:
        """The link's record; None for a link refused at attach."""
        return self.links.get(link._impl)

    def add_link(self, record: LinkRecord) -> None:
        """Keep an attached link's record (it counts against its connection's links)."""
        self.links[record.link._impl] = record
        connection = record.connection
        connection.link_pointers.add(record.link._impl)
        connection.linkless_since = None
        connection.linked = True

    def drop_link(self, link: LinkHandle) -> LinkRecord | None:
        """The client detached ``link``: forget its record (returned, if it had one)."""
        record = self.links.pop(link._impl, None)
        if record is not None:
            connection = record.connection
            connection.link_pointers.discard(link._impl)
            if not connection.link_pointers:
                connection.linkless_since = time.monotonic()
            connection.starved.discard(record)
            unlist_reply_link(connection, link)
        return record

    def forget(self, connection: ConnectionHandle) -> ConnectionRecord | None:
        """The connection closed or failed: forget it and its links (returned, if known)."""
        self.refused.discard(connection._impl)
        record = self.connections.pop(connection._impl, None)
        if record is not None:
            del self.by_key[record.key]
            for pointer in record.link_pointers:
                self.links.pop(pointer, None)
        return record

    def active_links(self, records: Iterable[ConnectionRecord] | None = None
                     ) -> list[LinkHandle]:
        """The locally open links of ``records`` (every connection's by default)."""
        found: list[LinkHandle] = []
        for record in self.connections.values() if records is None else records:
            link = record.connection.link_head(Endpoint.LOCAL_ACTIVE)
            while link is not None:
                found.append(link)
                link = link.next(Endpoint.LOCAL_ACTIVE)
        return found

    def address(self, link: LinkHandle) -> str:
        """The address ``link`` attached with ("" without a record)."""
        record = self.links.get(link._impl)
        return "" if record is None else record.address


def unlist_reply_link(connection: ConnectionRecord, link: LinkHandle) -> None:
    """``link`` no longer carries replies of ``connection``'s nodes."""
    for links in connection.reply_links.values():
        if link in links:
            links.remove(link)


def open_link(link: LinkHandle, max_message_size: int, *, session_id: str | None = None,
              properties: dict[symbol, Any] | None = None, credit: int = CREDIT) -> None:
    """Answer a link's attach: its termini as asked (the session filter set to
    ``session_id``), its settle modes, the namespace's ``max-message-size``, and a
    receiver's first ``credit``."""
    link.source.copy(link.remote_source)
    link.target.copy(link.remote_target)
    if session_id is not None:
        link.source.filter.clear()
        link.source.filter.put_object({SESSION_FILTER: session_id})
    if properties is not None:
        link.properties = properties
    link.snd_settle_mode = link.remote_snd_settle_mode
    link.rcv_settle_mode = link.remote_rcv_settle_mode
    link.max_message_size = max_message_size
    link.open()
    if link.is_receiver:
        link.flow(credit)


def refuse_link(link: LinkHandle, condition: str, description: str) -> None:
    """Refuse a link's attach: answer it with a null terminus where the node would be (the
    source of a link the fake sends on, the target of one it receives on: AMQP 1.0 part 2
    §2.6.3, "this is indicated by setting the local terminus ... to null") and detach it at
    once with ``condition``. The SDKs fail the link's open on it, as they do against the
    service (azure-sdk-for-python's ``test_queue_by_servicebus_client_session_fail`` and
    ``test_session_by_session_client_conn_str_receive_handler_peeklock`` expect the error
    from ``_open_with_retry``); an attach answered with a terminus looked open to them."""
    if link.is_sender:
        link.source.type = Terminus.UNSPECIFIED  # encoded as a null source
        link.target.copy(link.remote_target)
    else:
        link.target.type = Terminus.UNSPECIFIED
        link.source.copy(link.remote_source)
    link.open()
    link.condition = Condition(condition, description)
    link.close()
