"""Sending the replies of the ``$cbs`` and ``$management`` nodes, and their fault plans.

A reply goes on a sender link of the request's connection that the client attached to the
node: the one whose target is the request's ``reply-to``, else any open one (remembered
per (node, reply-to) in the connection's bounded reply cache, the hot path's shortcut).
A reply is sent pre-settled, whether or not the link has credit (a sender's credit goes
below 0 by the replies queued without it: :mod:`fakes._routing` reads that to hold back
the request link's credit). A fault plan (:mod:`fakes._faults`) may drop, change,
repeat, delay or hold a reply; held replies wait in :class:`Replies` until their pauses
are removed. Not thread-safe: the server calls it under the namespace lock.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from cproton import pn_delivery, pn_delivery_settle, pn_link_advance, pn_link_send, pn_link_state
from proton import Endpoint, Message

from sbmgmt.amqp.envelope import Request

from ._addresses import normalize
from ._faults import ReplyPlan
from ._limits import Limits, ThrottledLog, failure_site
from ._links import ConnectionRecord
from ._management import Reply
from ._proton import LinkHandle

__all__ = ["Replies"]

#: Runs an action (under the namespace lock) after a delay in seconds.
Later = Callable[[float, Callable[[], None]], object]


class Replies:
    """The replies' sender: reply-link choice, encoding, transfer, fault plans."""

    def __init__(self, limits: Limits, warnings: ThrottledLog, later: Later) -> None:
        self._limits = limits
        self._warnings = warnings
        self._later = later
        self._held: list[tuple[ReplyPlan, Callable[[], None]]] = []

    def send(self, connection: ConnectionRecord, node: str, reply_to: Any,
             reply: Reply | Message) -> None:
        """Send ``reply`` to ``reply_to`` on a reply link of ``node`` (dropped, with a
        throttled warning, when there is none or it cannot be encoded)."""
        if not isinstance(reply_to, str):  # a list, a map, a number: no address
            reply_to = None
        chosen = connection.reply_cache.get((node, reply_to))
        if chosen is None or not pn_link_state(chosen._impl) & Endpoint.LOCAL_ACTIVE:
            chosen = _reply_link(connection, node, reply_to)
            if chosen is None:
                self._warnings.warning("no-reply-link", "no reply link for %s on this "
                                       "connection; reply dropped", node)
                return
            if len(connection.reply_cache) >= self._limits.reply_cache_size:
                connection.reply_cache.clear()
            connection.reply_cache[(node, reply_to)] = chosen
        try:
            encoded = reply.encode()
        except Exception as exc:  # e.g. a request's message-id that is no correlation-id
            self._warnings.warning("reply-encoding", "a reply for %s could not be encoded "
                                   "(%s); reply dropped", node, failure_site(exc))
            return
        connection.reply_tag += 1
        impl = chosen._impl
        delivery = pn_delivery(impl, connection.reply_tag.to_bytes(8, "big"))
        pn_link_send(impl, encoded)
        pn_link_advance(impl)
        pn_delivery_settle(delivery)

    def planned(self, connection: ConnectionRecord, node: str, request: Request,
                planned: Reply, plan: ReplyPlan) -> None:
        """Send ``planned`` as the fault plan says: dropped, changed, repeated, late or held."""
        if plan.drop:
            return
        reply: Reply | Message = planned
        if plan.malformed is not None:
            reply = plan.malformed(request.message_id)
        if plan.wrong_correlation_id:
            if isinstance(reply, Reply):
                reply = dataclasses.replace(reply, correlation_id=uuid.uuid4())
            else:
                reply.correlation_id = uuid.uuid4()
        reply_to = request.reply_to

        def send() -> None:
            for _ in range(plan.copies):
                self.send(connection, node, reply_to, reply)

        if plan.paused_by:
            self._held.append((plan, send))
        elif plan.delay > 0:
            self._later(plan.delay, send)
        else:
            send()

    def release_held(self) -> None:
        """Send the held replies whose pauses have all been removed."""
        ready = [send for plan, send in self._held if not plan.held()]
        self._held = [(plan, send) for plan, send in self._held if plan.held()]
        for send in ready:
            send()


def _reply_link(connection: ConnectionRecord, node: str,
                reply_to: str | None) -> LinkHandle | None:
    """The node's active sender link whose target is ``reply_to``, else any active one."""
    links = connection.reply_links.get(node, [])
    target = normalize(reply_to)
    chosen = next((r for r in links if normalize(r.remote_target.address) == target
                   and r.state & Endpoint.LOCAL_ACTIVE), None)
    if chosen is None:
        chosen = next((r for r in links if r.state & Endpoint.LOCAL_ACTIVE), None)
    return chosen
