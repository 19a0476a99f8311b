"""The HTTP port's framing items of issue 58, on raw sockets to 127.0.0.1: a request framed
twice (``Content-Length`` and ``Transfer-Encoding``) is answered and its connection closed
(RFC 9112, section 6.1); a chunk size no length can hold is 400 at once, one past the body
limit 413 at once; ``/health`` and ``/metrics`` answer with a query (an ``api-version``
included) as without one."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from fakes import FakeNamespace, Limits
from sbmgmt.auth import generate_sas_token

KEY = "SAS_KEY_VALUE"
#: Short time-outs: a connection the port wrongly kept open would wait this long at most.
SHORT = Limits(http_header_timeout=2.0, http_body_timeout=2.0, http_idle_timeout=20.0)


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0, limits=SHORT) as namespace:
        namespace.add_queue("q")
        yield namespace


def _exchange(fake: FakeNamespace, data: bytes, *, wait: float = 5.0) -> tuple[bytes, bool]:
    """Send ``data`` on a new connection; what came back within ``wait`` seconds, and
    whether the port closed the connection by then."""
    assert fake.http_port is not None
    with socket.create_connection(("127.0.0.1", fake.http_port), timeout=wait) as sock:
        sock.sendall(data)
        chunks, deadline = [], time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                return b"".join(chunks), True
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
        return b"".join(chunks), False


def _statuses(answer: bytes) -> list[int]:
    """The status code of every response in ``answer``."""
    return [int(line.split(b" ", 2)[1]) for line in answer.split(b"\r\n")
            if line.startswith(b"HTTP/1.")]


def _authorization() -> bytes:
    token = generate_sas_token("https://x", "RootManageSharedAccessKey", KEY,
                               int(time.time()) + 300)
    return b"Authorization: " + token.encode() + b"\r\n"


_HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize("version", [b"HTTP/1.1", b"HTTP/1.0"])
def test_a_request_framed_twice_is_answered_then_closed(fake: FakeNamespace,
                                                        version: bytes) -> None:
    # the body by its transfer coding (3 bytes), a second request behind it on the same
    # connection: it must never be read as a request (request smuggling)
    twice = (b"POST /q?api-version=2021-05 " + version + b"\r\nHost: x\r\n" + _authorization()
             + b"Connection: keep-alive\r\nContent-Length: 3\r\n"
             b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + _HEALTH)
    answer, closed = _exchange(fake, twice)
    assert closed, answer
    assert len(_statuses(answer)) == 1, answer
    assert b"connection: close" in answer.lower()
    # a request framed once leaves its connection open for the next
    answer, closed = _exchange(fake, _HEALTH, wait=1.0)
    assert _statuses(answer) == [200] and not closed


def test_a_chunk_size_of_sixteen_fs_is_400_at_once(fake: FakeNamespace) -> None:
    request = (b"PUT /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n" + _authorization()
               + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc")
    started = time.monotonic()
    answer, closed = _exchange(fake, request)
    assert _statuses(answer) == [400], answer
    assert b"<Code>400</Code>" in answer and b"chunk size" in answer
    assert closed
    assert time.monotonic() - started < SHORT.http_body_timeout  # not the body's time-out


def test_a_chunk_past_the_body_limit_is_413_at_once(fake: FakeNamespace) -> None:
    size = f"{SHORT.http_max_body_bytes + 1:x}".encode()
    request = (b"PUT /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n" + _authorization()
               + b"Transfer-Encoding: chunked\r\n\r\n" + size + b"\r\nabc")
    started = time.monotonic()
    answer, closed = _exchange(fake, request)
    assert _statuses(answer) == [413], answer
    assert closed
    assert time.monotonic() - started < SHORT.http_body_timeout


@pytest.mark.parametrize("target", [b"/health?api-version=2021-05", b"/health?x=1",
                                    b"/metrics?api-version=2021-05"])
def test_the_ports_own_paths_answer_with_a_query(fake: FakeNamespace, target: bytes) -> None:
    # no token, and a wrong one: neither is the administration API's business here
    for authorization in (b"", b"Authorization: SharedAccessSignature sr=x&se=1&skn=y\r\n"):
        answer, _closed = _exchange(
            fake, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + authorization
            + b"Connection: close\r\n\r\n")
        assert _statuses(answer) == [200], answer


def test_the_administration_api_still_wants_its_token(fake: FakeNamespace) -> None:
    answer, closed = _exchange(fake, b"GET /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _statuses(answer) == [401] and closed
    # a POST to the health path is no health check: the administration API's, screened
    answer, closed = _exchange(
        fake, b"POST /health?api-version=2021-05 HTTP/1.1\r\nHost: x\r\nContent-Length: 0"
        b"\r\n\r\n")
    assert _statuses(answer) == [401] and closed
