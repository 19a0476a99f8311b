"""The reply link's credit never falls below the window: the service can always deliver
every reply in flight at once (two proton engines wired together in memory)."""

from __future__ import annotations

from typing import Any

from proton import Connection, Endpoint, Transport

from sbmgmt._engine.deliveries import ReceiveBuffer, reply_credit, take_replies
from sbmgmt._protocol.dispatcher import Dispatcher

_WINDOW = 4


def _pump(a: Transport, b: Transport) -> None:
    for _ in range(20):
        moved = 0
        for source, target in ((a, b), (b, a)):
            pending = source.pending()
            if pending > 0:
                target.push(source.peek(pending))
                source.pop(pending)
                moved += pending
        if not moved:
            return


def _pair() -> tuple[Any, Any, Transport, Transport]:
    """Our reply receiver (with its credit) and the peer's sender of the same link."""
    ours, theirs = Connection(), Connection()
    ours_transport, theirs_transport = Transport(), Transport(Transport.SERVER)
    ours_transport.bind(ours)
    theirs_transport.bind(theirs)
    ours.open()
    session = ours.session()
    session.open()
    receiver = session.receiver("replies")
    receiver.open()
    receiver.flow(reply_credit(_WINDOW))
    _pump(ours_transport, theirs_transport)
    theirs.open()
    remote_session = theirs.session_head(Endpoint.LOCAL_UNINIT)
    remote_session.open()
    sender = theirs.link_head(Endpoint.LOCAL_UNINIT)
    sender.open()
    _pump(ours_transport, theirs_transport)
    return receiver, sender, ours_transport, theirs_transport


def test_the_reply_credit_is_twice_the_window_and_topped_up_at_the_window() -> None:
    receiver, sender, ours, theirs = _pair()
    assert sender.credit == 2 * _WINDOW
    dispatcher = Dispatcher(window=_WINDOW)
    buffer = ReceiveBuffer()
    for sent in range(1, 3 * _WINDOW + 1):
        delivery = sender.delivery(str(sent).encode())
        sender.send(b"not an envelope")  # fails as malformed: still a reply taken
        sender.advance()
        delivery.settle()
        _pump(ours, theirs)
        take_replies(receiver._impl, dispatcher, _WINDOW, buffer)
        _pump(ours, theirs)
        assert sender.credit >= _WINDOW  # never less than the requests in flight
    assert reply_credit(2**31) == 2**31 - 1  # a link's credit is a uint; proton takes an int
