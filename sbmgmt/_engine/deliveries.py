"""The per-request path on the wire: write requests, take replies, read outcomes.

Every function here runs on the engine's thread and calls proton's C functions on
the raw link and delivery pointers: wrapping each delivery in proton's Python
objects cost more than the rest of the work done for it. The same functions serve
the management link pairs and the ``$cbs`` pair (put-tokens are requests of its
:class:`~sbmgmt._protocol.dispatcher.Dispatcher`).
"""

from __future__ import annotations

import time
from typing import Any

from cproton import (
    PN_ACCEPTED,
    PN_REJECTED,
    PN_RELEASED,
    pn_delivery,
    pn_delivery_aborted,
    pn_delivery_partial,
    pn_delivery_pending,
    pn_delivery_readable,
    pn_delivery_remote_state,
    pn_delivery_settle,
    pn_delivery_settled,
    pn_delivery_update,
    pn_delivery_updated,
    pn_link_advance,
    pn_link_credit,
    pn_link_current,
    pn_link_flow,
    pn_link_send,
    pn_link_state,
)
from proton import Delivery
from proton import Endpoint as ProtonEndpoint

from .._protocol.dispatcher import Dispatcher
from ..amqp.envelope import correlation_key, reply_of, reply_parts
from ..amqp.transaction_frames import set_transactional_state
from ..errors import ProtocolError
from ..transport.receive_buffer import ReceiveBuffer
from .failures import describe

__all__ = ["ReceiveBuffer", "outcome", "pump", "reply_credit", "take_replies"]

_LOCAL_CLOSED = ProtonEndpoint.LOCAL_CLOSED
_MAX_CREDIT = 2**31 - 1


def reply_credit(window: int) -> int:
    """The credit a reply link is given and topped up to: twice the window, so that
    it never falls below the window (it is topped up once it reaches it). Credit is
    the peer's to spend: with less than the requests in flight, the service holds
    finished replies until our flow frame reaches it, half a round trip later (with
    the window as credit topped up at half, up to half of them waited so)."""
    return min(2 * window, _MAX_CREDIT)


def pump(sender: Any, dispatcher: Dispatcher, generation: int) -> None:
    """Write what the sender's credit and the dispatcher's window allow (``sender`` is
    the C link). A request whose transaction was lost (or belongs to an earlier
    connection than ``generation``) fails unsent."""
    now = time.monotonic()
    while pn_link_credit(sender) > 0:
        request = dispatcher.next_sendable()
        if request is None:
            break
        transaction = request.transaction
        if transaction is not None and (
                transaction.lost is not None or transaction.generation != generation):
            transaction.lost = transaction.lost or "its connection was closed"
            dispatcher.on_reply_error(request.key, transaction.lost_error(request.operation))
            continue
        delivery = pn_delivery(sender, request.key.encode())
        if transaction is not None:
            assert transaction.txn_id is not None
            set_transactional_state(delivery, transaction.txn_id)
        pn_link_send(sender, request.payload)
        pn_link_advance(sender)
        dispatcher.on_sent(request, now)


def take_replies(
    receiver: Any, dispatcher: Dispatcher | None, window: int, buffer: ReceiveBuffer
) -> None:
    """Take every complete reply waiting on ``receiver`` (the C link), accepting each,
    into ``dispatcher``; then, once the credit is down to ``window``, top it up to
    :func:`reply_credit`. Without a dispatcher (a link we no longer know) the deliveries
    are accepted and dropped."""
    taken = False
    while True:
        delivery = pn_link_current(receiver)
        if (not delivery or pn_delivery_aborted(delivery) or pn_delivery_partial(delivery)
                or not pn_delivery_readable(delivery)):
            break
        raw = buffer.receive(receiver, pn_delivery_pending(delivery))
        pn_link_advance(receiver)
        if pn_link_state(receiver) & _LOCAL_CLOSED:
            _settle(delivery, PN_RELEASED)
            continue
        if dispatcher is not None:
            _on_reply(dispatcher, raw)
        taken = True
        _settle(delivery, PN_ACCEPTED)
    if not taken or dispatcher is None:
        return
    credit = pn_link_credit(receiver)
    if credit <= window:
        pn_link_flow(receiver, reply_credit(window) - credit)


def outcome(delivery: Any, dispatcher: Dispatcher | None) -> None:
    """A request's delivery was updated: a rejection fails it; settle what the peer
    settled."""
    if not pn_delivery_updated(delivery):
        return
    if pn_delivery_remote_state(delivery) == PN_REJECTED and dispatcher is not None:
        _rejected(dispatcher, Delivery.wrap(delivery))  # type: ignore[no-untyped-call]
    if pn_delivery_settled(delivery):
        pn_delivery_settle(delivery)


def _rejected(dispatcher: Dispatcher, delivery: Any) -> None:
    condition = delivery.remote.condition
    tag = delivery.tag  # proton 0.40 gives the tag as str (it was our key's bytes)
    key = tag if isinstance(tag, str) else bytes(tag).decode("utf-8", "replace")
    request_error = ProtocolError(f"the service rejected the request ({describe(condition)})")
    dispatcher.on_reply_error(key, request_error)


def _on_reply(dispatcher: Dispatcher, raw: bytes) -> None:
    try:
        correlation, properties, body = reply_parts(raw)
    except ProtocolError as exc:
        dispatcher.on_reply_error(None, exc)
        return
    try:
        reply = reply_of(correlation, properties, body)
    except ProtocolError as exc:
        dispatcher.on_reply_error(
            None if correlation is None else correlation_key(correlation), exc
        )
    else:
        dispatcher.on_reply(reply.correlation_key, reply)


def _settle(delivery: Any, state: int) -> None:
    """Settle a received delivery (a C pointer) with ``state``: ``Delivery.update`` then
    ``settle``, without proton's copy of an (empty) local disposition first."""
    pn_delivery_update(delivery, state)
    pn_delivery_settle(delivery)
