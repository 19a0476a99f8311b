"""The dispatcher's rules, one by one, with a clock we move by hand."""

from __future__ import annotations

import logging
import weakref
from typing import Any

import pytest

from sbmgmt._protocol.dispatcher import Dispatcher, PendingRequest, server_timeout_ms
from sbmgmt.errors import (
    BadRequestError,
    ClientClosedError,
    ConnectionLostError,
    LinkDetachedError,
    OperationTimeoutError,
    ProtocolError,
)


def _request(
    key: str, *, timeout: float = 10.0, idempotent: bool = True, decode: Any = None
) -> PendingRequest:
    return PendingRequest(
        key=key,
        operation="com.microsoft:test",
        idempotent=idempotent,
        payload=key.encode(),
        timeout=timeout,
        decode=decode or (lambda reply: ("decoded", reply)),
    )


def _send_all(dispatcher: Dispatcher, now: float) -> list[PendingRequest]:
    sent = []
    while (request := dispatcher.next_sendable()) is not None:
        dispatcher.on_sent(request, now)
        sent.append(request)
    return sent


def test_reply_resolves_its_own_future() -> None:
    d = Dispatcher()
    a, b = _request("a"), _request("b")
    d.submit(a, 0.0)
    d.submit(b, 0.0)
    assert [r.key for r in _send_all(d, 0.0)] == ["a", "b"]
    assert d.on_reply("b", "reply-b") is True
    assert b.future.result(0) == ("decoded", "reply-b")
    assert not a.future.done()
    assert d.in_flight == 1
    assert d.stats.completed == 1


class _Response:
    """A stand-in response that can be watched with a weak reference."""


def test_a_finished_request_is_not_kept_for_its_deadline() -> None:
    """Once the caller drops the future, the response is gone: the dispatcher's deadline
    heap does not keep a finished request (and its response) until its timeout."""
    d = Dispatcher()
    request = _request("a", timeout=60.0, decode=lambda reply: reply)
    d.submit(request, 0.0)
    _send_all(d, 0.0)
    response = _Response()
    d.on_reply("a", response)
    watched = weakref.ref(response)
    del request, response
    assert watched() is None
    assert d.tick(1.0) is not None   # its stale deadlines are still queued, harmlessly
    assert d.tick(61.0) is None


def test_window_bounds_in_flight_and_queue_drains_in_order() -> None:
    d = Dispatcher(window=3)
    requests = [_request(str(i)) for i in range(10)]
    for r in requests:
        d.submit(r, 0.0)
    assert [r.key for r in _send_all(d, 0.0)] == ["0", "1", "2"]
    assert d.in_flight == 3
    assert d.queued == 7
    d.on_reply("1", None)
    assert [r.key for r in _send_all(d, 0.0)] == ["3"]
    assert d.stats.max_in_flight == 3


def test_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="window"):
        Dispatcher(window=0)


def test_timeout_starts_when_sent() -> None:
    d = Dispatcher(window=1)
    first, second = _request("first", timeout=5.0), _request("second", timeout=5.0)
    d.submit(first, 0.0)
    d.submit(second, 0.0)
    _send_all(d, 0.0)
    d.on_reply("first", None)
    assert d.tick(4.0) is not None
    _send_all(d, 4.0)  # second is sent at t=4, its deadline is t=9
    d.tick(8.9)
    assert not second.future.done()
    d.tick(9.0)
    with pytest.raises(OperationTimeoutError, match="no reply within 5 s"):
        second.future.result(0)
    assert d.stats.timed_out == 1
    assert d.in_flight == 0


def test_queued_request_times_out_as_never_sent() -> None:
    d = Dispatcher()
    r = _request("x", timeout=2.0)
    d.submit(r, 0.0)
    assert d.tick(2.0) is None
    with pytest.raises(OperationTimeoutError, match="not sent within 2 s"):
        r.future.result(0)
    assert d.next_sendable() is None


def test_never_sent_request_names_the_last_connection_problem() -> None:
    d = Dispatcher()
    d.on_link_lost("connection lost (SSL Failure: certificate verify failed)")
    r = _request("x", timeout=2.0)
    d.submit(r, 0.0)
    d.tick(2.0)
    with pytest.raises(OperationTimeoutError, match="certificate verify failed"):
        r.future.result(0)
    d.submit(ok := _request("y"), 3.0)
    _send_all(d, 3.0)
    assert d.last_loss is None and not ok.future.done()


def test_tick_returns_the_next_deadline() -> None:
    d = Dispatcher()
    d.submit(_request("a", timeout=3.0), 1.0)
    assert d.tick(1.0) == 4.0


def test_late_reply_is_counted_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    d = Dispatcher(name="q")
    r = _request("slow", timeout=1.0)
    d.submit(r, 0.0)
    _send_all(d, 0.0)
    d.tick(1.5)
    with caplog.at_level(logging.DEBUG, logger="sbmgmt.dispatcher"):
        assert d.on_reply("slow", "too late") is False
    assert d.stats.late_replies == 1
    assert d.stats.unknown_replies == 0
    assert isinstance(r.future.exception(0), OperationTimeoutError)
    assert "late reply" in caplog.text


def test_unknown_reply_is_counted_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    d = Dispatcher(name="q")
    with caplog.at_level(logging.WARNING, logger="sbmgmt.dispatcher"):
        assert d.on_reply("nobody", "x") is False
        assert d.on_reply(None, "x") is False
    assert d.stats.unknown_replies == 2
    assert "unknown correlation-id" in caplog.text


def test_duplicate_reply_resolves_once() -> None:
    d = Dispatcher()
    r = _request("k")
    d.submit(r, 0.0)
    _send_all(d, 0.0)
    assert d.on_reply("k", 1) is True
    assert d.on_reply("k", 2) is False
    assert r.future.result(0) == ("decoded", 1)


def test_decode_error_fails_that_request_alone() -> None:
    def refuse(reply: Any) -> Any:
        raise BadRequestError("bad", operation="op", status_code=400)

    d = Dispatcher()
    bad, good = _request("bad", decode=refuse), _request("good")
    d.submit(bad, 0.0)
    d.submit(good, 0.0)
    _send_all(d, 0.0)
    d.on_reply("bad", None)
    d.on_reply("good", "ok")
    assert isinstance(bad.future.exception(0), BadRequestError)
    assert good.future.result(0) == ("decoded", "ok")


def test_decoder_bug_becomes_protocol_error() -> None:
    def broken(reply: Any) -> Any:
        raise KeyError("oops")

    d = Dispatcher()
    r = _request("r", decode=broken)
    d.submit(r, 0.0)
    _send_all(d, 0.0)
    d.on_reply("r", None)
    with pytest.raises(ProtocolError, match="could not be decoded"):
        r.future.result(0)
    assert d.in_flight == 0


def test_reply_error_fails_that_request() -> None:
    d = Dispatcher()
    r = _request("r")
    d.submit(r, 0.0)
    _send_all(d, 0.0)
    assert d.on_reply_error("r", ProtocolError("reply has no statusCode")) is True
    assert isinstance(r.future.exception(0), ProtocolError)
    assert d.on_reply_error("r", ProtocolError("again")) is False


def test_link_lost_fails_sent_requests_and_keeps_unsent_ones() -> None:
    d = Dispatcher(window=3)
    schedule = _request("schedule", idempotent=False)
    peek = _request("peek", idempotent=True)
    taken = _request("taken")
    queued = _request("queued")
    for r in (schedule, peek, taken, queued):
        d.submit(r, 0.0)
    d.on_sent(d.next_sendable(), 0.0)  # type: ignore[arg-type]
    d.on_sent(d.next_sendable(), 0.0)  # type: ignore[arg-type]
    assert d.next_sendable() is taken  # taken for sending, not yet written
    d.on_link_lost("connection lost")
    lost = schedule.future.exception(0)
    assert isinstance(lost, ConnectionLostError)
    assert lost.may_have_been_applied is True
    assert "may have applied it" in str(lost)
    peek_error = peek.future.exception(0)
    assert isinstance(peek_error, ConnectionLostError)
    assert peek_error.may_have_been_applied is False
    assert not taken.future.done() and not queued.future.done()
    assert d.in_flight == 0
    assert [r.key for r in _send_all(d, 1.0)] == ["taken", "queued"]


def test_link_detached_uses_the_given_error_type() -> None:
    d = Dispatcher()
    r = _request("r")
    d.submit(r, 0.0)
    _send_all(d, 0.0)
    d.on_link_lost("detached", error_type=LinkDetachedError, error_condition="amqp:x")
    error = r.future.exception(0)
    assert isinstance(error, LinkDetachedError)
    assert error.error_condition == "amqp:x"


def test_fail_all_empties_everything() -> None:
    d = Dispatcher(window=1)
    a, b = _request("a"), _request("b")
    d.submit(a, 0.0)
    d.submit(b, 0.0)
    _send_all(d, 0.0)
    d.fail_all(lambda r: ClientClosedError(f"{r.operation}: closed"))
    assert isinstance(a.future.exception(0), ClientClosedError)
    assert isinstance(b.future.exception(0), ClientClosedError)
    assert (d.in_flight, d.queued) == (0, 0)
    assert d.tick(100.0) is None


def test_cancelled_future_is_skipped_and_late_results_ignored() -> None:
    d = Dispatcher()
    cancelled, sent = _request("c"), _request("s")
    d.submit(cancelled, 0.0)
    d.submit(sent, 0.0)
    assert cancelled.future.cancel()
    assert [r.key for r in _send_all(d, 0.0)] == ["s"]
    assert sent.future.cancel()
    assert d.on_reply("s", "whatever") is True  # resolving a cancelled future is harmless
    assert d.in_flight == 0


def test_stale_deadlines_are_compacted() -> None:
    d = Dispatcher(window=10_000)
    for i in range(3000):
        r = _request(str(i))
        d.submit(r, 0.0)
    for r in _send_all(d, 0.0):
        d.on_reply(r.key, None)
    d.tick(0.0)
    assert len(d._deadlines) == 0
    assert d.stats.completed == 3000


@pytest.mark.parametrize(
    ("timeout", "expected"),
    [(30.0, 29_500), (1.0, 500), (0.4, 200), (0.0001, 1)],
)
def test_server_timeout_leaves_a_margin(timeout: float, expected: int) -> None:
    assert server_timeout_ms(timeout) == expected
