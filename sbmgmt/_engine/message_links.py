"""Sender links and peek-lock receiver links to an entity (I/O thread).

The management client otherwise only talks to ``<entity>/$management``; moving a message
needs the two links every messaging SDK has: a *sender* whose target is an entity (or, for
send-via, the entity a transaction acts on, with the link property
``com.microsoft:transfer-destination-address`` naming where the service forwards what it
takes), and a *peek-lock receiver* whose source is an entity, given credit, whose
deliveries arrive locked (their delivery tag is the lock token) and are settled on the
link: accepted completes, released / modified abandons.

Theory of operation
-------------------
A caller holds a :class:`MessageLink` and hands the I/O thread :class:`LinkWork` items
(attach, detach, send, receive, settle), each with its own ``future``.
:class:`MessageLinks` (one per engine, touched only on the I/O thread) keeps them, and
moves each link through its :class:`MessageLinkState` (the states and the moves they
allow: :mod:`sbmgmt._engine.message_link_state`; the service's dispositions read:
:mod:`sbmgmt._engine.delivery_outcomes`):

- ``WAITING``: an attach waits until every entity it needs (its address and, for send-via,
  the destination: the service wants a token for both) is authorized on the connection;
  the engine calls :meth:`MessageLinks.authorized` as each token is accepted;
- ``ATTACHING``: the peer answers with its attach; one without a source / target is a
  refusal, whose detach carries the reason;
- ``ATTACHED``: a send's messages wait for credit and are written as unsettled transfers
  (tag: a counter), one each; the send resolves when every one has its outcome (accepted,
  or failed with the service's first rejection); a transactional send carries the
  transactional-state of its transaction on each transfer. A
  receive asks for credit up to its ``max_count``, resolves with what arrived when it has
  that many or its wait ends; messages that arrive with no receive waiting are kept for the
  next one (they are locked for this link), and so are those a receiver's ``prefetch``
  credit brought (a new prefetch applies from the next credit given: none is taken back).
  A receiver's detach first drains its credit, if it has any (``DRAINING``: the
  service's answer comes after anything it still sends), then (``DETACHING``) releases
  every lock the link holds and nobody settled (received or only prefetched, or settled
  in a transaction that was rolled back: given back, so nothing is sent to it again),
  then closes; a second detach meanwhile does nothing. A settle writes each
  delivery's disposition (a transactional-state with the outcome inside a transaction)
  and resolves when the service has settled them all (a rejection fails it with the
  service's error), or, in a transaction, answered with its transactional-state. A
  delivery is forgotten once the service settles it; one it answered in a transaction
  without settling stays held until it does (at the commit), so that after a rollback it
  can be settled again (the coordinator tells :meth:`MessageLinks.discharged` how each
  transaction ended).

The connection's loss (or the peer's detach) ends the link (``ENDED``): every pending item
fails with :class:`~sbmgmt.errors.ConnectionLostError` /
:class:`~sbmgmt.errors.LinkDetachedError`, and ``closed`` resolves. A link does not
re-attach by itself: the locks of what it received died with it (the service releases
them when they expire), so the caller opens a new one.
"""

from __future__ import annotations

import itertools
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

from cproton import (
    PN_ACCEPTED,
    PN_MODIFIED,
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
    pn_link_drain,
    pn_link_flow,
    pn_link_send,
)
from proton import Delivery, Link, symbol

from ..amqp.transaction_frames import TRANSACTIONAL_STATE, set_transactional_state
from ..errors import (
    ConnectionLostError,
    LinkDetachedError,
    ServiceBusManagementError,
    attach_refused,
    error_for_status,
)
from ..message import ReceivedMessage, lock_token_from_delivery_tag
from ..transport.receive_buffer import ReceiveBuffer
from .delivery_outcomes import address as _address
from .delivery_outcomes import outcome_error as _outcome_error
from .delivery_outcomes import tag as _tag
from .message_link_state import (
    LinkWork,
    MessageLink,
    MessageLinkState,
    Operation,
    Outcome,
    resolve,
    settle_future,
)
from .open_links import create_message_receiver, create_message_sender

__all__ = ["TRANSFER_DESTINATION", "LinkWork", "MessageLink", "MessageLinkState",
           "MessageLinks", "Operation", "Outcome"]

#: The attach property of a send-via link: where the service forwards what it takes
#: ("com.microsoft:transfer-destination-address", the AMQP protocol guide, "Send via").
TRANSFER_DESTINATION = symbol("com.microsoft:transfer-destination-address")

#: How long a detaching receiver waits for the service to answer its drain.
_DRAIN_WAIT = 2.0
_S = MessageLinkState
#: The states in which a link has no proton link to act on (work on it fails).
_UNUSABLE = (_S.IDLE, _S.WAITING, _S.ENDED)


class MessageLinks:
    """Every sender and receiver link of one engine (I/O thread only).

    ``schedule(delay, callback)`` is the loop's timer; ``is_authorized(entity)`` says
    whether the entity's token was accepted on the current connection; ``generation()``
    is the current connection's generation (a transaction of another is lost).
    """

    def __init__(self, schedule: Callable[[float, Callable[[], None]], Any],
                 is_authorized: Callable[[str], bool],
                 generation: Callable[[], int]) -> None:
        self._schedule = schedule
        self._is_authorized = is_authorized
        self._generation = generation
        self._waiting: list[MessageLink] = []
        self._by_name: dict[str, MessageLink] = {}
        self._tags = itertools.count(1)
        self._received = ReceiveBuffer()
        #: The deliveries each open transaction holds settled but not yet settled by the
        #: service, by txn-id: a rollback gives them back to their receivers' hold.
        self._staged_in: dict[bytes, list[tuple[MessageLink, uuid.UUID]]] = {}

    def waiting(self, entity: str) -> bool:
        """Whether attaches wait for ``entity``'s authorization."""
        return any(entity in link.needs() for link in self._waiting)

    def owns(self, name: str) -> bool:
        """Whether ``name`` is one of these links."""
        return name in self._by_name

    # ---- work from callers -----------------------------------------------------------

    def take(self, work: LinkWork, connection: Any) -> None:
        """Carry out (or queue) one work item; ``connection`` is the current one or None."""
        link = work.link
        if work.operation == "attach":
            link.move(_S.WAITING)
            self._waiting.append(link)
            if connection is not None:
                self.authorized(connection)
            resolve(work)
            return
        if work.operation == "detach":
            self._detach(link)
            resolve(work)
            return
        if work.operation == "prefetch":
            if link.state not in (_S.DRAINING, _S.ENDED):
                link.prefetch = work.max_count
                self._flow(link)
            resolve(work)
            return
        if link.state in _UNUSABLE:
            resolve(work, error=self._ended_error(link, work))
            return
        if work.operation == "send":
            work.outstanding = len(work.payloads)
            if not work.outstanding:
                resolve(work)
                return
            link.sends.append(work)
            self._pump_sends(link)
        elif work.operation == "receive":
            link.receives.append(work)
            work.timer = self._schedule(work.wait, lambda: self._receive_ended(work))
            self._serve_receives(link)
        else:
            self._settle(link, work)

    def authorized(self, connection: Any) -> None:
        """Attach every waiting link whose entities are all authorized now."""
        for link in list(self._waiting):
            if all(self._is_authorized(entity) for entity in link.needs()):
                self._waiting.remove(link)
                self._attach(link, connection)

    def refused(self, entity: str, error: ServiceBusManagementError) -> None:
        """``entity``'s authorization failed: fail the attaches that need it."""
        for link in list(self._waiting):
            if entity in link.needs():
                self._waiting.remove(link)
                self._end(link, type(error)(
                    f"attaching the {link.what()}: {error}", operation="attach",
                    status_code=error.status_code, error_condition=error.error_condition,
                    description=error.description))

    def _attach(self, link: MessageLink, connection: Any) -> None:
        if link.opened.done():
            return
        properties = (None if link.destination is None
                      else {TRANSFER_DESTINATION: link.destination})
        if link.receiver:
            link.link = create_message_receiver(connection, source=link.address, name=link.name)
        else:
            link.link = create_message_sender(connection, target=link.address, name=link.name,
                                              properties=properties)
        link.move(_S.ATTACHING)
        self._by_name[link.name] = link

    def _detach(self, link: MessageLink) -> None:
        if link.state in (_S.DRAINING, _S.DETACHING):
            return  # detaching already
        if link in self._waiting:
            self._waiting.remove(link)
        if link.state in _UNUSABLE:
            self._end(link, LinkDetachedError(f"the {link.what()} was detached",
                                              operation="detach"))
            return
        if link.receiver and link.state is _S.ATTACHED:
            # First the credit goes (drained: what the service still sends comes before its
            # answer), so that nothing given back is sent here again; then every lock still
            # held is given back, and the link closes.
            link.prefetch = 0
            for work in list(link.receives):
                link.receives.remove(work)
                resolve(work, work.collected)
            receiver = link.link._impl
            if pn_link_credit(receiver) > 0:
                link.move(_S.DRAINING)
                pn_link_drain(receiver, 0)
                link.drain_timer = self._schedule(_DRAIN_WAIT, lambda: self._drained(link))
                return
        self._close(link)

    def _drained(self, link: MessageLink) -> None:
        """The credit is gone (or the service did not answer the drain in time)."""
        if link.state is not _S.DRAINING:
            return
        _cancel_drain_timer(link)
        self._close(link)

    def _close(self, link: MessageLink) -> None:
        link.move(_S.DETACHING)
        if link.receiver:
            self._release_held(link)
        link.link.close()

    def flow(self, link: Any) -> None:
        """A flow frame for one of these links: a drained receiver closes."""
        ours = self._by_name.get(link.name)
        if ours is not None and ours.state is _S.DRAINING and pn_link_credit(link._impl) <= 0:
            self._drained(ours)

    # ---- the peer's events -------------------------------------------------------------

    def remote_open(self, link: Any) -> bool:
        """The peer's attach for one of these links (False: not one of them)."""
        ours = self._by_name.get(link.name)
        if ours is None:
            return False
        terminus = link.remote_source if ours.receiver else link.remote_target
        if terminus is None or terminus.address is None:
            return True  # a refusal: its detach follows with the reason
        settle_future(ours.opened)
        if ours.state is _S.ATTACHING:
            ours.move(_S.ATTACHED)
            if ours.receiver:
                self._flow(ours)
        return True

    def remote_close(self, link: Any) -> bool:
        """The peer detached one of these links (False: not one of them)."""
        ours = self._by_name.get(link.name)
        if ours is None:
            return False
        condition = link.remote_condition
        name = None if condition is None else str(condition.name)
        description = None if condition is None else condition.description
        if ours.state is _S.ATTACHING:  # never attached: the peer refused the attach
            error: ServiceBusManagementError = attach_refused(
                f"attaching the {ours.what()}", name, description)
        elif condition is None:
            error = LinkDetachedError(f"the {ours.what()} was detached", operation="detach")
        else:
            error = LinkDetachedError(
                f"the {ours.what()} was detached ({name}: {description})",
                operation="detach", error_condition=name, description=description)
        self._end(ours, error)
        if not link.state & Link.LOCAL_CLOSED:
            link.close()
        return True

    def connection_lost(self, reason: str) -> None:
        """The connection is gone, and every link (and lock) with it."""
        for link in [*self._by_name.values(), *self._waiting]:
            self._end(link, ConnectionLostError(
                f"the {link.what()}: connection lost ({reason})", operation="link",
                may_have_been_applied=True))
        self._waiting.clear()
        self._staged_in.clear()

    def fail_all(self, error: Callable[[MessageLink], ServiceBusManagementError]) -> None:
        """End every link with ``error(link)`` (the client is closing)."""
        for link in [*self._by_name.values(), *self._waiting]:
            self._end(link, error(link))
        self._waiting.clear()
        self._staged_in.clear()

    def discharged(self, txn_id: bytes, committed: bool) -> None:
        """A transaction ended. Not committed, the deliveries settled in it are held as
        received again: they may be settled again, and a detach gives them back (else their
        locks would outlive the link until they expire). Committed, the service settles
        them (until it does they stay held, and a detach leaves them to it)."""
        for link, token in self._staged_in.pop(txn_id, ()):
            if not committed:
                link.transacted.discard(token)

    def credit(self, link: Any) -> None:
        """A sender got credit."""
        ours = self._by_name.get(link.name)
        if ours is not None:
            self._pump_sends(ours)

    def delivery(self, delivery: Any, name: str, receiver: bool) -> None:
        """A delivery of one of these links was updated (or arrived)."""
        ours = self._by_name.get(name)
        if ours is None:
            return
        if receiver:
            if pn_delivery_updated(delivery) and (
                    pn_delivery_settled(delivery)
                    or pn_delivery_remote_state(delivery) == TRANSACTIONAL_STATE):
                self._settled(ours, delivery)
            # A delivery read already (every settlement's) is not the link's current one:
            # each transfer that arrives has an event of its own.
            if pn_delivery_readable(delivery):
                self._take_messages(ours)
        else:
            self._send_outcome(ours, delivery)

    # ---- sending -------------------------------------------------------------------------

    def _pump_sends(self, link: MessageLink) -> None:
        if link.state is not _S.ATTACHED:
            return
        sender = link.link._impl
        generation = self._generation()
        while link.sends and pn_link_credit(sender) > 0:
            work = link.sends[0]
            if work.future.done():  # cancelled by its caller (or failed): the rest stays
                link.sends.popleft()
                continue
            transaction = work.transaction
            if transaction is not None and (
                    transaction.lost is not None or transaction.generation != generation):
                transaction.lost = transaction.lost or "its connection was closed"
                link.sends.popleft()
                resolve(work, error=transaction.lost_error("send"))
                continue
            tag = str(next(self._tags)).encode()
            delivery = pn_delivery(sender, tag)
            if transaction is not None:
                assert transaction.txn_id is not None
                set_transactional_state(delivery, transaction.txn_id)
            pn_link_send(sender, work.payloads[work.sent])
            pn_link_advance(sender)
            link.unsettled[tag] = work
            work.sent += 1
            if work.sent == len(work.payloads):
                link.sends.popleft()

    def _send_outcome(self, link: MessageLink, delivery: Any) -> None:
        if not pn_delivery_updated(delivery):
            return
        state = pn_delivery_remote_state(delivery)
        if state == 0:
            return
        work = link.unsettled.pop(_tag(delivery), None)
        error = _outcome_error(delivery, state, "send")
        pn_delivery_settle(delivery)
        if work is None:
            return
        if error is None and state not in (PN_ACCEPTED, TRANSACTIONAL_STATE):
            error = ServiceBusManagementError(f"send: unexpected outcome 0x{state:x}",
                                              operation="send")
        self._outcome(work, error)

    # ---- receiving -----------------------------------------------------------------------

    def _flow(self, link: MessageLink) -> None:
        """Give the receiver the credit its waiting receives ask for."""
        if link.state is not _S.ATTACHED:
            return
        asked = sum(w.max_count - len(w.collected) for w in link.receives)
        wanted = asked + link.prefetch - len(link.buffered)
        receiver = link.link._impl
        missing = wanted - pn_link_credit(receiver)
        if missing > 0:
            pn_link_flow(receiver, missing)

    def _take_messages(self, link: MessageLink) -> None:
        receiver = link.link._impl
        while True:
            delivery = pn_link_current(receiver)
            if (not delivery or pn_delivery_aborted(delivery) or pn_delivery_partial(delivery)
                    or not pn_delivery_readable(delivery)):
                break
            raw = self._received.receive(receiver, pn_delivery_pending(delivery))
            pn_link_advance(receiver)
            if link.state is _S.DETACHING:  # closed here: nobody will receive it
                pn_delivery_update(delivery, PN_RELEASED)
                continue
            token = lock_token_from_delivery_tag(_tag(delivery))
            link.deliveries[token] = delivery
            link.token_at[_address(delivery)] = token
            link.buffered.append(ReceivedMessage.from_bytes(bytes(raw), lock_token=token))
        if link.state is _S.DRAINING:
            if pn_link_credit(receiver) <= 0:
                self._drained(link)
            return
        self._serve_receives(link)

    def _serve_receives(self, link: MessageLink) -> None:
        while link.receives:
            work = link.receives[0]
            if work.future.done():
                link.receives.popleft()
                continue
            while link.buffered and len(work.collected) < work.max_count:
                work.collected.append(link.buffered.popleft())
            if len(work.collected) < work.max_count:
                break
            link.receives.popleft()
            resolve(work, work.collected)
        self._flow(link)

    def _release_held(self, link: MessageLink) -> None:
        """Give back every lock this link holds and nobody settled (received or only
        prefetched); a settlement staged in a transaction is left to the transaction.

        The outcome is AMQP's ``released`` (part 3 §3.4.4: the message was not processed,
        so it is no delivery attempt), not ``modified`` with ``delivery-failed`` (an
        abandon, which counts): the service makes a released message available at once with
        its delivery count unchanged (azure-servicebus's test
        ``test_queue_by_queue_client_conn_str_receive_handler_release_messages``), so a
        repair's receiver, which holds what it did not select until it ends, wears out no
        message it did not move."""
        for token, delivery in list(link.deliveries.items()):
            if token not in link.transacted:  # the service settles it (not a pre-settled one)
                pn_delivery_update(delivery, PN_RELEASED)
        link.deliveries.clear()
        link.token_at.clear()
        link.buffered.clear()

    def _receive_ended(self, work: LinkWork) -> None:
        work.timer = None
        link = work.link
        if work in link.receives:
            link.receives.remove(work)
        resolve(work, work.collected)

    # ---- settling ------------------------------------------------------------------------

    def _settle(self, link: MessageLink, work: LinkWork) -> None:
        generation = self._generation()
        transaction = work.transaction
        if transaction is not None and (
                transaction.lost is not None or transaction.generation != generation):
            transaction.lost = transaction.lost or "its connection was closed"
            resolve(work, error=transaction.lost_error("settle"))
            return
        code = PN_ACCEPTED if work.outcome == "completed" else PN_MODIFIED
        missing = [token for token in work.lock_tokens if token not in link.deliveries]
        if missing:
            resolve(work, error=error_for_status(
                "settle", 410, "com.microsoft:message-lock-lost",
                f"the lock of {missing[0]} is not held by this link"))
            return
        for token in work.lock_tokens:
            delivery = link.deliveries[token]
            if transaction is not None:
                assert transaction.txn_id is not None
                set_transactional_state(delivery, transaction.txn_id, code)
            else:
                if code == PN_MODIFIED:
                    Delivery.wrap(delivery).local.failed = True  # type: ignore[no-untyped-call]
                pn_delivery_update(delivery, code)
            link.settling[_address(delivery)] = work
        work.outstanding = len(work.lock_tokens)
        if not work.outstanding:
            resolve(work)

    def _settled(self, link: MessageLink, delivery: Any) -> None:
        address = _address(delivery)
        work = link.settling.pop(address, None)
        state = pn_delivery_remote_state(delivery)
        error = _outcome_error(delivery, state, "settle")
        token = link.token_at.get(address)
        if state == TRANSACTIONAL_STATE and error is None and not pn_delivery_settled(delivery):
            # Staged in its transaction and not settled by the service: held until it is
            # (when the transaction commits); after a rollback the lock is still held here,
            # and the message may be settled again.
            if token is not None:
                link.transacted.add(token)
                if work is not None and work.transaction is not None \
                        and work.transaction.txn_id is not None:
                    self._staged_in.setdefault(work.transaction.txn_id, []).append(
                        (link, token))
        else:
            # Settled by the service (at once, or by the commit of the transaction it was
            # staged in): forgotten here too, so a long move holds no delivery it finished.
            if token is not None:
                link.deliveries.pop(token, None)
                link.transacted.discard(token)
                del link.token_at[address]
            pn_delivery_settle(delivery)
        if work is None:
            return
        if error is None and state == PN_REJECTED:
            error = ServiceBusManagementError("settle: rejected", operation="settle")
        self._outcome(work, error)

    @staticmethod
    def _outcome(work: LinkWork, error: ServiceBusManagementError | None) -> None:
        """One of a send's transfers or a settle's deliveries has its outcome: the work
        resolves with the last (failed with the first error)."""
        if error is not None and work.error is None:
            work.error = error
        work.outstanding -= 1
        if work.outstanding <= 0:
            resolve(work, error=work.error)

    # ---- the end -------------------------------------------------------------------------

    def _end(self, link: MessageLink, error: ServiceBusManagementError) -> None:
        self._by_name.pop(link.name, None)
        _cancel_drain_timer(link)
        if link.reason is None:
            link.reason = str(error)
        link.move(_S.ENDED)
        settle_future(link.opened, error)
        # A work with several transfers or deliveries is in these once each.
        pending = dict.fromkeys([*link.sends, *link.unsettled.values(), *link.settling.values()])
        link.sends.clear()
        link.unsettled.clear()
        link.settling.clear()
        for work in pending:
            resolve(work, error=error)
        receives, link.receives = list(link.receives), deque()
        for work in receives:
            # What arrived is locked by a link that is gone: the locks die with it.
            resolve(work, error=error)
        link.buffered.clear()
        link.deliveries.clear()
        link.token_at.clear()
        settle_future(link.closed)

    def _ended_error(self, link: MessageLink, work: LinkWork) -> ServiceBusManagementError:
        why = link.reason or "it is not attached"
        return LinkDetachedError(f"{work.operation}: the {link.what()} ended ({why})",
                                 operation=work.operation)


def _cancel_drain_timer(link: MessageLink) -> None:
    if link.drain_timer is not None:
        link.drain_timer.cancel()
        link.drain_timer = None
