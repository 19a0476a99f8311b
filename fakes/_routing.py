"""Routing: each link's node, fixed at attach, and the messages clients send to it.

Theory of operation
-------------------
At attach (:meth:`Router.attach`) a link gets its :class:`~fakes._links.LinkRecord`: a
receiver link of the server (the client sends on it) gets its node (:mod:`fakes._nodes`:
a coordinator target, ``$cbs``, ``<entity>/$management`` or the entity); a sender link to
``$cbs`` or a ``$management`` node is one of the node's reply links; a sender link to an
entity is a receiver of its messages (:mod:`fakes._consumers`). An entity's links need the
entity to exist and a valid token of the connection that covers the address.

Each delivery event reads the complete transfers off the receiver link
(:meth:`Router.receive`): a transfer larger than the link's ``max-message-size`` is
rejected (its bytes dropped as they arrive, before anything decodes it), an aborted one
discarded, and every other one handed to the node; its delivery is settled with what the
node did (accepted, declared, or the transactional-state's accepted when staged) or
rejected with the condition of the error it raised (``amqp:internal-error`` for an
unexpected one, confined to that delivery). A request link gets its credit back when
half is used, unless its node's replies are waiting for reply-link credit beyond the
limit: then it waits too (the connection's ``starved`` set) until a reply link gets
credit (:meth:`Router.reply_credit`). Not thread-safe: the server calls it under the
namespace lock.
"""

from __future__ import annotations

import uuid

from cproton import (
    PN_ACCEPTED,
    pn_delivery_aborted,
    pn_delivery_partial,
    pn_delivery_pending,
    pn_delivery_readable,
    pn_delivery_settle,
    pn_delivery_update,
    pn_link_advance,
    pn_link_credit,
    pn_link_current,
    pn_link_flow,
)
from proton import Condition, Delivery, Endpoint, Terminus, symbol

from sbmgmt.amqp.transaction_frames import DECLARED, set_transactional_state, transactional_state
from sbmgmt.errors import ProtocolError
from sbmgmt.transport.receive_buffer import ReceiveBuffer

from ._addresses import CBS_NODE, normalize, split_management
from ._auth import Scope, scope_of
from ._clock import FakeClock
from ._consumers import Consumers
from ._coordinator import Coordinator
from ._errors import EntityNotFound, FakeServiceError, NotAllowed, Unauthorized
from ._faults import Faults
from ._limits import Limits, ThrottledLog, failure_site
from ._links import CREDIT, ENTITY_CREDIT, ConnectionRecord, LinkRecord, Records, open_link
from ._log import FakeLog
from ._node import Node
from ._nodes.cbs import CbsNode, TokenPolicy
from ._nodes.coordinator import CoordinatorNode
from ._nodes.entity import EntityNode
from ._nodes.management import ManagementHandler, ManagementRequests
from ._proton import LinkHandle, Pointer, wrap_delivery
from ._replies import Replies
from ._store import Store

__all__ = ["Router"]

_INTERNAL_ERROR = "amqp:internal-error"
_SIZE_EXCEEDED = "amqp:link:message-size-exceeded"
_TRACKING_ID = symbol("com.microsoft:tracking-id")
#: A send-via sender's attach property: where its messages go ("Send via" in the
#: service's AMQP protocol guide).
_TRANSFER_DESTINATION = symbol("com.microsoft:transfer-destination-address")


class Router:
    """Attaches links to their nodes and hands the nodes the messages sent to them."""

    def __init__(self, records: Records, consumers: Consumers, store: Store, clock: FakeClock,
                 transactions: Coordinator, management: ManagementHandler, faults: Faults,
                 replies: Replies, tokens: TokenPolicy, limits: Limits, warnings: ThrottledLog,
                 max_message_size: int, *, log: FakeLog | None = None) -> None:
        self._records = records
        self._consumers = consumers
        self._store = store
        self._clock = clock
        self._transactions = transactions
        self.management = management
        self._faults = faults
        self._replies = replies
        self._tokens = tokens
        self._limits = limits
        self._warnings = warnings
        self._max_message_size = max_message_size
        self._received = ReceiveBuffer()
        self._log = FakeLog() if log is None else log

    # --- attach ------------------------------------------------------------------------

    def attach(self, link: LinkHandle, connection: ConnectionRecord) -> LinkRecord:
        """Answer ``link``'s attach and return its record (kept by the caller); a
        FakeServiceError refuses it."""
        if link.is_receiver and link.remote_target.type == Terminus.COORDINATOR:
            record = LinkRecord(link, connection, "",
                                CoordinatorNode(connection, self._transactions))
            open_link(link, self._max_message_size)
            return record
        address = normalize(link.remote_source.address if link.is_sender
                            else link.remote_target.address)
        record = LinkRecord(link, connection, address,
                            self._node(connection, address) if link.is_receiver else None)
        path, management = split_management(address)
        if link.is_receiver and not management:
            self._refuse_subscription(path)
            self._send_via(link, record, connection)
        if address.lower() == CBS_NODE:
            if link.is_sender:
                connection.reply_links.setdefault(CBS_NODE, []).append(link)
            open_link(link, self._max_message_size)
            return record
        if not self._store.exists(path):
            raise EntityNotFound.of(path)
        if not connection.tokens.covers(scope_of(address), self._clock.now()):
            raise Unauthorized(
                f"Unauthorized access to {address!r}: no valid token for it on this connection.")
        if management:
            if link.is_sender:
                connection.reply_links.setdefault(path.lower(), []).append(link)
            open_link(link, self._max_message_size)
        elif link.is_receiver:
            open_link(link, self._max_message_size, credit=ENTITY_CREDIT)
        else:
            record.key = self._records.next_key()
            self._consumers.attach(record, record.key, path)
        return record

    def _send_via(self, link: LinkHandle, record: LinkRecord,
                  connection: ConnectionRecord) -> None:
        """A sender attached with ``com.microsoft:transfer-destination-address``: its
        messages go to that entity, via the one attached (send-via); the destination must
        exist and the connection hold a token for it too."""
        properties = link.remote_properties or {}
        destination = properties.get(_TRANSFER_DESTINATION)
        if destination is None or not isinstance(record.node, EntityNode):
            return
        target = normalize(str(destination))
        if not self._store.exists(target):
            raise EntityNotFound.of(target)
        self._refuse_subscription(target)
        if not connection.tokens.covers(scope_of(target), self._clock.now()):
            raise Unauthorized(
                f"Unauthorized access to {target!r}: no valid token for it on this connection.")
        record.node = EntityNode(connection, target, self._store, self._transactions,
                                 via=record.node.name)

    def _refuse_subscription(self, path: str) -> None:
        """A sender to a subscription (``topic/Subscriptions/name``) is refused: the service
        takes a topic's messages only through the topic (issue 58: the service allows no
        sender on a subscription; its words for it are not published, these are the
        fake's)."""
        parts = path.split("/")
        if len(parts) >= 3 and parts[-2].lower() == "subscriptions" \
                and self._store.is_topic("/".join(parts[:-2])):
            raise NotAllowed(
                f"Cannot send to the subscription {path!r}: messages reach a subscription "
                "through its topic.")

    def _names_entity(self, scope: Scope) -> bool:
        """Whether a token audience's scope names an entity: its ``$management`` node, the
        entity (a dead-letter queue, a subscription) or a path above one."""
        path = "/".join(scope[:-1] if scope[-1] == "$management" else scope)
        if self._store.exists(path):
            return True
        below = path + "/"
        paths = [*(e.path for e in self._store.entities()),
                 *(t.name for t in self._store.topics())]
        return any(p.lower().startswith(below) for p in paths)

    def _node(self, connection: ConnectionRecord, address: str) -> Node:
        """The node the messages sent to ``address`` go to."""
        if address.lower() == CBS_NODE:
            return CbsNode(connection, self._tokens, self._replies, self._names_entity)
        path, management = split_management(address)
        if management:
            return ManagementRequests(connection, path, path.lower(), self.management,
                                      self._faults, self._replies)
        return EntityNode(connection, path, self._store, self._transactions)

    # --- transfers ---------------------------------------------------------------------

    def receive(self, link: LinkHandle) -> bool:
        """Take every complete message waiting on a receiver link, settling each; whether
        any was taken. Called for each delivery event, it finds nothing left by the time
        the events of messages taken together with an earlier one are dispatched."""
        record = self._records.links.get(link._impl)
        if record is None:
            # Refused at attach, or its connection already forgotten (closed by the fake):
            # what it sends goes nowhere, unsettled; the client learns of the detach or the
            # lost connection, not of a node that never had the link.
            return self._drop(link)
        node = record.node
        assert node is not None  # every receiver link's record has one
        impl = link._impl
        limit = self._max_message_size
        oversized = record.oversized
        taken = False
        while True:
            delivery = pn_link_current(impl)
            if not delivery or not pn_delivery_readable(delivery):
                break
            if pn_delivery_partial(delivery):
                if pn_delivery_pending(delivery) > limit or delivery in oversized:
                    # too large already: drop its bytes as they come
                    oversized.add(delivery)
                    self._received.receive(impl, pn_delivery_pending(delivery))
                break
            if pn_delivery_aborted(delivery):  # an aborted transfer is discarded
                oversized.discard(delivery)
                pn_link_advance(impl)
                pn_delivery_settle(delivery)
                continue
            data = self._received.receive(impl, pn_delivery_pending(delivery))
            pn_link_advance(impl)
            taken = True
            if len(data) > limit or (oversized and delivery in oversized):
                oversized.discard(delivery)
                _reject(delivery, Condition(_SIZE_EXCEEDED, (
                    f"The received message exceeds the limit of {limit} bytes on this link "
                    "(max-message-size); it was not stored.")))
                pn_delivery_settle(delivery)
                continue
            self._log.transfer(record.connection.key, record.address, len(data))
            self._incoming(node, delivery, data)
        if taken and pn_link_credit(impl) < _refill_below(node):
            self._top_up(record, node)
        return taken

    def _drop(self, link: LinkHandle) -> bool:
        """Read and discard every complete message waiting on a link without a record."""
        impl = link._impl
        taken = False
        while True:
            delivery = pn_link_current(impl)
            if not delivery or not pn_delivery_readable(delivery) or pn_delivery_partial(
                    delivery):
                return taken
            self._received.receive(impl, pn_delivery_pending(delivery))
            pn_link_advance(impl)
            taken = True

    def _incoming(self, node: Node, delivery: Pointer, data: bytes) -> None:
        """Hand one message to its node and settle its delivery with what the node did."""
        txn = transactional_state(delivery)
        txn_id = None if txn is None else txn[0]
        try:
            declared = node.accept(data, txn_id, self._clock.now())
        except FakeServiceError as exc:
            self._log.rejected(node.name, exc)
            _reject(delivery, Condition(exc.condition, exc.description))
        except ProtocolError as exc:
            _reject(delivery, Condition("amqp:decode-error", str(exc)))
        except Exception as exc:  # confined to this delivery: the server goes on
            self._warnings.warning("delivery", "a message to %s failed (%s); rejected",
                                   node.name, failure_site(exc))
            _reject(delivery, Condition(
                _INTERNAL_ERROR, f"The fake namespace could not handle the message "
                f"({type(exc).__name__})."))
        else:
            if declared is not None:  # declared (0x33): [txn-id]
                wrapped = wrap_delivery(delivery)
                wrapped.local.data = [declared]
                wrapped.update(DECLARED)
            elif txn_id is not None:
                set_transactional_state(delivery, txn_id, PN_ACCEPTED)
            else:
                pn_delivery_update(delivery, PN_ACCEPTED)
        pn_delivery_settle(delivery)

    # --- request links' credit -----------------------------------------------------------

    def _top_up(self, record: LinkRecord, node: Node) -> None:
        """Give a request link its credit back, unless its node's replies are waiting
        for reply-link credit beyond the limit: then it waits too (in ``starved``)."""
        connection = record.connection
        replies_to = node.replies_to
        if replies_to is not None:
            # A sender's credit goes below 0 by the deliveries queued without credit.
            waiting = sum(max(0, -pn_link_credit(r._impl))
                          for r in connection.reply_links.get(replies_to, ()))
            if waiting >= self._limits.max_waiting_replies:
                if record not in connection.starved:
                    connection.starved.add(record)
                    self._warnings.warning(
                        "starved", "%d replies for %s wait for reply-link credit; its request "
                        "link gets no more credit until they leave", waiting, replies_to)
                return
        connection.starved.discard(record)
        impl = record.link._impl
        pn_link_flow(impl, _credit(node) - pn_link_credit(impl))

    def reply_credit(self, link: LinkHandle) -> None:
        """A sender link that is no receiver of an entity got credit: if it is a reply
        link, top up the request links starved for it."""
        record = self._records.links.get(link._impl)
        if record is None or not record.connection.starved:
            return
        connection = record.connection
        for starved in list(connection.starved):
            if starved.node is None or not starved.link.state & Endpoint.LOCAL_ACTIVE:
                connection.starved.discard(starved)
            else:
                self._top_up(starved, starved.node)


def _reject(delivery: Pointer, condition: Condition) -> None:
    """Reject with an error that carries an info map, as the service's do (a tracking
    id): the Python SDK's sender reads the error's third field and stalls without it."""
    wrapped = wrap_delivery(delivery)
    wrapped.local.condition = Condition(condition.name, condition.description,
                                        {_TRACKING_ID: str(uuid.uuid4())})
    wrapped.update(Delivery.REJECTED)


def _credit(node: Node) -> int:
    """The credit a link to ``node`` is given and topped up to."""
    return ENTITY_CREDIT if isinstance(node, EntityNode) else CREDIT


def _refill_below(node: Node) -> int:
    """The credit below which a link to ``node`` is topped up after a read: an entity's
    after every read (the service keeps a sender's credit near its 1000), a request
    link's once half is used."""
    return ENTITY_CREDIT if isinstance(node, EntityNode) else CREDIT // 2
