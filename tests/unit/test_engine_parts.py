"""The engine's parts, driven by hand without sockets: link states, CBS tokens, attach,
reconnects.

No socket and no thread: the token manager's ``$cbs`` dispatcher is driven as the
engine drives it (take a put-token, mark it sent, hand it a reply), timers are
recorded instead of run, and the clocks are moved by hand.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from proton import Connection, Message

from sbmgmt._engine.connection import Endpoint, Reconnects
from sbmgmt._engine.engine import Engine, Work
from sbmgmt._engine.link_pairs import EntityLinks, LinkState
from sbmgmt._protocol.dispatcher import PendingRequest
from sbmgmt._protocol.retry import Backoff
from sbmgmt._protocol.tokens import PUT_TOKEN_TIMEOUT, TokenManager
from sbmgmt.amqp.envelope import Reply
from sbmgmt.errors import (
    ConnectCause,
    ConnectFailedError,
    ServerBusyError,
    ServiceBusManagementError,
    UnauthorizedError,
)
from sbmgmt.transport.selector_loop import Task


@dataclass
class _Token:
    token: str = "SharedAccessSignature sr=x&sig=secret"
    expires_on: float = 4600.0
    token_type: str = "servicebus.windows.net:sastoken"


@dataclass
class _Source:
    fail: Exception | None = None
    asked: list[str] = field(default_factory=list)

    def get_token(self, audience: str) -> _Token:
        self.asked.append(audience)
        if self.fail is not None:
            raise self.fail
        return _Token()


class _Harness:
    """A token manager with its engine's side recorded."""

    def __init__(self, source: _Source | None = None) -> None:
        self.now = 1000.0  # both clocks: wall (epoch s) and monotonic
        self.source = source or _Source()
        self.timers: list[tuple[float, Callable[[], None], Task]] = []
        self.attached: list[EntityLinks] = []
        self.refused: list[tuple[EntityLinks, ServiceBusManagementError]] = []
        self.sends = 0
        self.manager = TokenManager(
            self.source, schedule=self._schedule, attach=self._attach,
            refuse=lambda links, error: self.refused.append((links, error)),
            send=self._send, name="test", window=4,
            wall_clock=lambda: self.now, clock=lambda: self.now,
        )
        self.manager.connected()
        self.links = EntityLinks("queue-1", "sb://ns/queue-1", "queue-1/reply", 4)

    def _schedule(self, delay: float, callback: Callable[[], None]) -> Task:
        task = Task(self.now + delay, callback)
        self.timers.append((delay, callback, task))
        return task

    def _attach(self, links: EntityLinks) -> None:
        links.move(LinkState.ATTACHING)  # as the engine does when it creates the links
        self.attached.append(links)

    def _send(self) -> None:
        self.sends += 1

    def put_token(self) -> Message:
        """The put-token the engine would write next, marked sent."""
        request = self.manager.dispatcher.next_sendable()
        assert request is not None
        self.manager.dispatcher.on_sent(request, self.now)
        message = Message()
        message.decode(request.payload)
        return message

    def reply(self, message: Message, status: int, description: str | None = None) -> None:
        self.manager.dispatcher.on_reply(str(message.id), Reply(
            correlation_key=str(message.id), status_code=status, description=description,
            error_condition=None, application_properties={}, body=None,
        ))


def test_link_states_move_only_forward_and_reset_from_anywhere() -> None:
    links = EntityLinks("q", "sb://ns/q", "q/reply", 4)
    assert links.node == "q/$management"
    for state in (LinkState.AUTHORIZING, LinkState.ATTACHING, LinkState.READY):
        links.move(state)
        assert links.state is state
    with pytest.raises(RuntimeError, match="no transition from ready to authorizing"):
        links.move(LinkState.AUTHORIZING)
    links.reset()
    assert links.state is LinkState.IDLE
    with pytest.raises(RuntimeError, match="from idle to ready"):
        links.move(LinkState.READY)


def test_a_reset_cancels_the_token_refresh() -> None:
    links = EntityLinks("q", "sb://ns/q", "q/reply", 4)
    links.refresh_task = task = Task(1.0, lambda: None)
    links.move(LinkState.AUTHORIZING)
    links.reset()
    assert task.cancelled and links.refresh_task is None


def test_an_accepted_token_attaches_and_schedules_its_refresh() -> None:
    h = _Harness()
    h.manager.authorize(h.links)
    assert h.links.state is LinkState.AUTHORIZING and h.sends == 1
    message = h.put_token()
    assert message.reply_to == h.manager.reply_to
    assert message.properties == {
        "operation": "put-token", "type": "servicebus.windows.net:sastoken",
        "name": "sb://ns/queue-1",
    }
    assert message.body == _Token().token
    h.reply(message, 202)
    assert h.attached == [h.links] and not h.refused
    # 3,600 s left: refreshed 300 s (the margin) before the expiry
    assert [delay for delay, _, _ in h.timers] == [3300.0]
    assert h.links.refresh_task is h.timers[0][2]


def test_a_refused_token_refuses_the_entity_with_unauthorized() -> None:
    h = _Harness()
    h.manager.authorize(h.links)
    h.reply(h.put_token(), 401, "bad signature")
    assert not h.attached
    [(links, error)] = h.refused
    assert links is h.links
    assert isinstance(error, UnauthorizedError)
    assert error.status_code == 401
    assert "refused with status 401: bad signature" in str(error)
    assert "secret" not in str(error)


def test_a_5xx_refusal_is_the_error_its_status_names() -> None:
    h = _Harness()
    h.manager.authorize(h.links)
    h.reply(h.put_token(), 503)
    assert isinstance(h.refused[0][1], ServerBusyError)


def test_no_token_from_the_source_refuses_without_sending() -> None:
    h = _Harness(_Source(fail=OSError("no credential")))
    h.manager.authorize(h.links)
    assert h.sends == 0 and h.manager.dispatcher.queued == 0
    [(_, error)] = h.refused
    assert "put-token for queue-1 failed: no token (OSError)" in str(error)


def test_an_unanswered_put_token_times_out_and_refuses() -> None:
    h = _Harness()
    h.manager.authorize(h.links)
    h.put_token()
    h.now += PUT_TOKEN_TIMEOUT + 1
    h.manager.dispatcher.tick(h.now)
    [(_, error)] = h.refused
    assert isinstance(error, UnauthorizedError)
    assert "no reply within" in str(error)


def test_a_failed_refresh_keeps_the_links_and_retries_later() -> None:
    h = _Harness()
    h.manager.authorize(h.links)
    h.reply(h.put_token(), 200)
    h.links.move(LinkState.READY)
    _, refresh, _ = h.timers.pop()
    h.now += 3300
    refresh()
    h.reply(h.put_token(), 401)
    assert not h.refused and h.links.state is LinkState.READY
    # retried TOKEN_REFRESH_RETRY (10 s) later, less the 20 % margin
    assert [delay for delay, _, _ in h.timers] == [8.0]
    h.timers.pop()[1]()
    h.reply(h.put_token(), 200)
    assert h.attached == [h.links]  # once: a refresh does not attach again
    assert h.timers[0][0] == pytest.approx(4600.0 - h.now - 0.2 * (4600.0 - h.now))


def test_a_refresh_of_an_idle_entity_sends_nothing() -> None:
    h = _Harness()
    h.manager.refresh(h.links)
    assert h.sends == 0 and not h.source.asked


def test_a_reply_after_the_connection_was_lost_changes_nothing() -> None:
    h = _Harness()
    h.manager.authorize(h.links)
    message = h.put_token()
    h.manager.connection_lost()
    assert h.manager.dispatcher.in_flight == 0
    h.reply(message, 200)  # too late: the dispatcher no longer knows it
    assert not h.attached and not h.refused
    # the next connection: a new reply address, the entity authorizes again
    old = h.manager.reply_to
    h.manager.connected()
    assert h.manager.reply_to != old
    h.links.reset()
    h.manager.authorize(h.links)
    h.reply(h.put_token(), 200)
    assert h.attached == [h.links]


def test_reconnects_back_off_after_each_loss_and_start_over_once_open() -> None:
    now = [50.0]
    reconnects = Reconnects(Backoff(initial=1.0, maximum=4.0, jitter=0.0), lambda: now[0])
    assert reconnects.wait() == 0.0  # the first connection opens at once
    connection = SimpleNamespace(_impl=object())  # what proton's wrappers hold
    assert reconnects.opening(connection) == 1
    assert reconnects.is_current(SimpleNamespace(_impl=connection._impl))  # another wrapper
    waits = []
    for _ in range(4):
        reconnects.lost()
        waits.append(reconnects.wait())
        reconnects.opening(SimpleNamespace(_impl=object()))
    assert waits == [1.0, 2.0, 4.0, 4.0]  # doubling, capped
    assert not reconnects.is_current(connection)  # an earlier connection's events
    now[0] += 4.0
    assert reconnects.wait() == 0.0
    reconnects.opened()
    reconnects.lost()
    assert reconnects.wait() == 1.0


class _Loop:
    """The engine's loop, without sockets: connections are bare proton ``Connection``
    objects (no transport, no peer) and timers are recorded."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self.timers: list[Task] = []

    def connect(self, host: str, port: int, **_: object) -> Connection:
        connection = Connection()
        connection.open()
        self.connections.append(connection)
        return connection

    def schedule(self, delay: float, callback: Callable[[], None]) -> Task:
        task = Task(delay, callback)  # its "deadline" is the delay asked for
        self.timers.append(task)
        return task

    def stop(self) -> None:
        pass


def _engine(work: deque[Work]) -> tuple[Engine, _Loop]:
    engine = Engine(Endpoint("ns.example", 5671, tls=False), _Source(),
                    (lambda e: f"sb://ns/{e}", lambda e: f"{e}/reply"), 4, "test")
    loop = _Loop()
    engine.loop = loop  # type: ignore[assignment]
    engine.take_inbox = lambda: _drain(work)
    return engine, loop


def _state(links: EntityLinks) -> LinkState:
    """The state now (read through a call: mypy would keep an earlier assert's)."""
    return links.state


def _drain(work: deque[Work]) -> deque[Work]:
    taken = deque(work)
    work.clear()
    return taken


def _peek_request(key: str) -> PendingRequest:
    return PendingRequest(key=key, operation="com.microsoft:peek-message", idempotent=True,
                          payload=b"", timeout=30.0, decode=lambda reply: reply)


def _accept_put_token(engine: Engine) -> None:
    dispatcher = engine.tokens.dispatcher
    request = dispatcher.next_sendable()
    assert request is not None and request.operation == "put-token"
    dispatcher.on_sent(request, 0.0)
    dispatcher.on_reply(request.key, Reply(
        correlation_key=request.key, status_code=200, description=None,
        error_condition=None, application_properties={}, body=None))


def test_the_first_request_connects_authorizes_then_attaches_the_link_pair() -> None:
    work: deque[Work] = deque([("queue-1", _peek_request("a"))])
    engine, loop = _engine(work)
    engine.on_wake()
    assert len(loop.connections) == 1
    links = engine._links.entities["queue-1"]
    assert _state(links) is LinkState.AUTHORIZING
    assert links.sender is None and links.receiver is None  # no management link yet
    _accept_put_token(engine)
    assert _state(links) is LinkState.ATTACHING
    assert links.sender.target.address == "queue-1/$management"
    assert links.receiver.source.address == "queue-1/$management"
    assert links.receiver.target.address == "queue-1/reply"
    assert links.receiver.credit == 8  # twice the window (reply_credit)


def test_a_refused_attach_fails_the_waiting_request_and_starts_over() -> None:
    request = _peek_request("a")
    work: deque[Work] = deque([("queue-1", request)])
    engine, _ = _engine(work)
    engine.on_wake()
    _accept_put_token(engine)
    links = engine._links.entities["queue-1"]
    engine.link_closed(links.sender)  # the peer detached it before it was open
    assert _state(links) is LinkState.IDLE and links.sender is None
    with pytest.raises(ServiceBusManagementError, match="attaching queue-1/\\$management"):
        request.future.result(0)
    work.append(("queue-1", _peek_request("b")))
    engine.on_wake()
    assert _state(links) is LinkState.AUTHORIZING  # the next request tries again


def test_a_first_connection_that_never_opened_fails_what_waits_at_once() -> None:
    request = _peek_request("a")
    engine, loop = _engine(deque([("queue-1", request)]))
    engine.on_wake()
    reason = "proton:io: connection failed: ECONNREFUSED (Connection refused)"
    engine.connection_lost(SimpleNamespace(connection=loop.connections[0]), reason)
    with pytest.raises(ConnectFailedError, match=r"cannot connect to ns\.example:5671") as failed:
        request.future.result(0)
    assert failed.value.cause is ConnectCause.REFUSED
    assert engine._reconnect_task is None  # nothing waits: no reconnect


def test_a_lost_connection_resets_the_links_and_reconnects_after_a_backoff() -> None:
    work: deque[Work] = deque([("queue-1", _peek_request("a"))])
    engine, loop = _engine(work)
    engine.on_wake()
    _accept_put_token(engine)
    links = engine._links.entities["queue-1"]
    connection = loop.connections[0]
    engine.connection_opened(SimpleNamespace(connection=connection))
    engine.connection_lost(SimpleNamespace(connection=connection), "disconnected")
    assert _state(links) is LinkState.IDLE
    assert engine.tokens.dispatcher.in_flight == 0
    assert len(loop.connections) == 1  # not at once: the request waits for the backoff
    reconnect = engine._reconnect_task
    assert reconnect is not None and reconnect in loop.timers
    assert 0.0 < reconnect.deadline <= 0.05  # the delay: RECONNECT_BACKOFF after one loss
    reconnect.callback()
    assert len(loop.connections) == 2
    assert _state(links) is LinkState.AUTHORIZING  # the queued request's entity again
    # an event of the first connection changes nothing now
    engine.connection_lost(SimpleNamespace(connection=connection), "late")
    assert len(loop.connections) == 2 and links.state is LinkState.AUTHORIZING
