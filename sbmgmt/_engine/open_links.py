"""Opening links on a connection's one session (a sender, a receiver, a coordinator)."""

from __future__ import annotations

from typing import Any

from proton import Connection, Link, Receiver, Sender, Session, Terminus

__all__ = [
    "create_coordinator",
    "create_message_receiver",
    "create_message_sender",
    "create_receiver",
    "create_sender",
]


def create_sender(connection: Connection, *, target: str, name: str) -> Sender:
    """Open a sender to ``target`` on the connection's session."""
    sender = _session(connection).sender(name)
    sender.target.address = target
    sender.open()
    return sender


def create_receiver(connection: Connection, *, source: str, target: str,
                    name: str, filters: dict[Any, Any] | None = None) -> Receiver:
    """Open a receiver from ``source`` whose target (reply address) is ``target``;
    ``filters`` is the source's filter set."""
    receiver = _session(connection).receiver(name)
    receiver.source.address = source
    if filters is not None:
        receiver.source.filter.put_object(filters)
    receiver.target.address = target
    receiver.open()
    return receiver


def create_message_sender(connection: Connection, *, target: str, name: str,
                          properties: dict[Any, Any] | None = None) -> Sender:
    """Open a sender of messages to the entity ``target``, each transfer unsettled until
    the service's outcome; ``properties`` are the attach's link properties (send-via's
    transfer destination)."""
    sender = _session(connection).sender(name)
    sender.target.address = target
    sender.snd_settle_mode = Link.SND_UNSETTLED
    if properties:
        sender.properties = properties
    sender.open()
    return sender


def create_message_receiver(connection: Connection, *, source: str, name: str) -> Receiver:
    """Open a peek-lock receiver from the entity ``source`` (no credit yet): the service
    sends each message unsettled and locked; the receiver settles it ("receiver settles
    first", as the SDKs attach)."""
    receiver = _session(connection).receiver(name)
    receiver.source.address = source
    receiver.target.address = name
    receiver.snd_settle_mode = Link.SND_UNSETTLED
    receiver.rcv_settle_mode = Link.RCV_FIRST
    receiver.open()
    return receiver


def create_coordinator(connection: Connection, *, name: str, capability: Any) -> Sender:
    """Open a sender to the connection's transaction coordinator: its target is a
    coordinator ("amqp:coordinator:list", 0x30: [capabilities]) with ``capability``."""
    sender = _session(connection).sender(name)
    sender.target.type = Terminus.COORDINATOR
    sender.target.capabilities.put_object(capability)
    sender.open()
    return sender


def _session(connection: Connection) -> Session:
    """The connection's one session, opened on first use."""
    session: Session | None = getattr(connection, "sbmgmt_session", None)
    if session is None:
        session = connection.session()
        session.open()
        connection.sbmgmt_session = session
    return session
