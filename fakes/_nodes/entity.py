"""An entity as the target of a client's sender: its messages are stored (a batch, message
format 0x80013700, split into its messages, all checked before any is kept), or staged on
the transaction their transfer names.

A send-via sender (attached to the *via* entity with the link property
``com.microsoft:transfer-destination-address``) stores what it sends in the destination;
inside a transaction the send counts as work on the via entity (the transaction's one
top-level entity), and the destination gets the messages only when it commits.

Each message costs the namespace's throttle a credit (``fakes._throttle``: a batch as many as
it holds), taken before any is kept: a throttled transfer is refused whole with
``com.microsoft:server-busy``."""

from __future__ import annotations

from dataclasses import dataclass

from sbmgmt.amqp.sections import SECTION_CODES
from sbmgmt.errors import ProtocolError
from sbmgmt.message import Message as SbMessage

from .._coordinator import Coordinator, Staged
from .._links import ConnectionRecord
from .._storable import check_storable
from .._store import Store

__all__ = ["EntityNode"]


@dataclass(eq=False)
class EntityNode:
    """The entity at ``name`` (as attached), for a sender on ``connection``."""

    connection: ConnectionRecord
    name: str
    store: Store
    transactions: Coordinator
    replies_to: str | None = None
    #: The entity the sender attached to, when it sends via it to ``name``.
    via: str | None = None

    def accept(self, data: bytes, txn_id: bytes | None, now: float) -> bytes | None:
        path, store = self.name, self.store
        messages = _split_batch(SbMessage.from_bytes(data))
        for message in messages:  # all checked before any is kept
            check_storable(message, len(data))
        store.check_message_size(path, len(data), len(messages) > 1)
        if not store.is_topic(path):
            store.entity(path).check_sessions(messages)
        store.throttle.charge(len(messages))
        if txn_id is None:
            for message in messages:
                store.send(path, message, now)
            return None
        transaction = self.transactions.transaction(txn_id, self.connection.key, now)
        store.check_send(path)

        def send(at: float) -> None:
            for message in messages:
                store.send(path, message, at)

        transaction.stage(Staged(send, entity=self.via or path, messages=len(messages)))
        return None


def _split_batch(message: SbMessage) -> list[SbMessage]:
    """A batch (message-format 0x80013700) carries one encoded message per data section."""
    body = message.body
    parts = body if isinstance(body, list) else [body]
    if message.body_type != "data" or not parts:  # not data, or no body section at all
        return [message]
    if not all(len(p) > 3 and p[0] == 0 and p[1] == 0x53 and p[2] in SECTION_CODES
               for p in parts):
        return [message]
    try:
        return [SbMessage.from_bytes(bytes(p)) for p in parts]
    except ProtocolError:
        return [message]
