"""Calls from other threads onto the fake's server thread (fakes/_server_calls.py,
``Server._call``): each call's failure goes to its own caller in its own words, a failing
call neither hides the calls queued after it nor loses a stop asked for in the same
wake-up, and a stopped server answers at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import fakes._server
from fakes import FakeNamespace
from fakes._server import Server
from fakes._server_calls import CallQueue, QueuedCall, ServerStopped
from tests._waiting import wait_until

WAIT = 5.0


def _until(condition: Callable[[], bool]) -> None:
    assert wait_until(condition, WAIT), "timed out waiting"


def _fail() -> int:
    raise ValueError("the first call fails")


def test_each_queued_call_answers_its_own_caller() -> None:
    queue = CallQueue()
    calls = [QueuedCall(lambda: 1, "one"), QueuedCall(_fail, "fail"),
             QueuedCall(lambda: 3, "three")]
    for call in calls:
        queue.put(call)
    queue.run_queued()
    assert calls[0].outcome(0) == 1
    with pytest.raises(ValueError, match="the first call fails"):
        calls[1].outcome(0)
    assert calls[2].outcome(0) == 3


def test_a_closed_queue_fails_what_it_holds_and_refuses_more() -> None:
    queue = CallQueue()
    waiting = QueuedCall(lambda: 1, "serve an in-memory connection")
    queue.put(waiting)
    queue.close()
    with pytest.raises(ServerStopped, match="stopped before it could serve an in-memory"):
        waiting.outcome(0)
    with pytest.raises(ServerStopped, match="cannot expire the tokens"):
        queue.put(QueuedCall(lambda: 1, "expire the tokens"))


def _server(fake: FakeNamespace) -> Server:
    server = fake._server
    assert server is not None
    return server


def test_a_failing_call_neither_hides_the_next_one_nor_loses_a_stop() -> None:
    with FakeNamespace() as fake:
        server = _server(fake)
        outcomes: dict[str, Any] = {}

        def call(name: str, action: Callable[[], int]) -> None:
            try:
                outcomes[name] = server._call(action, name)
            except Exception as exc:
                outcomes[name] = exc

        threads = [threading.Thread(target=call, args=("fail", _fail)),
                   threading.Thread(target=call, args=("answer", lambda: 42)),
                   threading.Thread(target=server.stop)]
        with fake._lock:  # the server thread waits for the lock in a wake-up of its own
            server.wake()
            _until(lambda: not server._signals)
            threads[0].start()
            _until(lambda: len(server._calls._calls) == 1)
            threads[1].start()
            _until(lambda: len(server._calls._calls) == 2)
            threads[2].start()  # the stop: into the same wake-up as both calls
            _until(lambda: server._signals == {"fake_call", "fake_stop"})
        for thread in threads:
            thread.join(WAIT)
        assert isinstance(outcomes["fail"], ValueError), outcomes
        assert outcomes["answer"] == 42
        assert not server._thread.is_alive()


def test_a_call_that_does_not_happen_in_time_says_which(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fakes._server, "_CALL_TIMEOUT", 0.2)
    with FakeNamespace() as fake:
        with fake._lock, pytest.raises(TimeoutError) as late:
            fake.clock.advance(1)
        assert str(late.value) == ("the fake namespace's server thread did not apply a move "
                                   "of the fake clock within 0.2 s")
        with fake._lock, pytest.raises(TimeoutError, match="did not close the client conn"):
            _server(fake).close_connections()


def test_a_stopped_server_answers_at_once() -> None:
    with FakeNamespace() as fake:
        server = _server(fake)
        server.stop()
        with pytest.raises(ServerStopped, match="cannot detach the links to the deleted"):
            server.detach_deleted(["q"])  # not a TimeoutError: it did not wait
