"""Property-based fuzz of the fake's HTTP port (issue 39): methods, paths, query strings,
headers and bodies, valid and broken, sent raw on 127.0.0.1. No answer is a 500, nothing
crashes, and after every request the official SDK is still served on both ports (a peek
over AMQP, a runtime-properties read over HTTP). A longer run:
``SBMGMT_HTTP_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/hostile/test_http_fuzz.py``."""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusReceiver
from azure.servicebus.management import ServiceBusAdministrationClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import FakeNamespace, Limits
from sbmgmt.auth import generate_sas_token
from sbmgmt.cli._entities import plain_http_transport

KEY = "SAS_KEY_VALUE"
_STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")
#: The queue the SDK is served on: longer than any path segment the fuzz draws, so that no
#: fuzzed DELETE or PUT can touch it.
PROBE = "sdk-probe-queue-1"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeNamespace]:
    limits = Limits(http_header_timeout=1.0, http_body_timeout=1.0)
    with FakeNamespace(http_port=0, limits=limits) as namespace:
        namespace.add_queue("q")
        namespace.add_queue(PROBE)
        namespace.add_topic("t")
        namespace.add_subscription("t", "s")
        yield namespace


@pytest.fixture(scope="module")
def peers(fake: FakeNamespace) -> Iterator[tuple[ServiceBusReceiver,
                                                 ServiceBusAdministrationClient]]:
    assert fake.http_connection_string is not None
    with ServiceBusClient.from_connection_string(fake.connection_string,
                                                 retry_total=0) as client, \
            client.get_queue_receiver(PROBE) as receiver, \
            ServiceBusAdministrationClient.from_connection_string(
                fake.http_connection_string, transport=plain_http_transport(),
                retry_total=0) as admin:
        yield receiver, admin


segments = st.sampled_from(["q", "t", "s", "Subscriptions", "subscriptions", "Rules", "$Default",
                            "$Resources", "queues", "topics", "$namespaceinfo", "..", ".",
                            "%2F", "%00", "%", "%ZZ", "%C3%A9", "a%20b", "x" * 300, "", "%2e%2e",
                            "q%2F$DeadLetterQueue"]) | st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="?#"),
    max_size=12)
queries = st.lists(st.sampled_from(["api-version=2021-05", "api-version=2017-04", "$skip=1",
                                    "$top=2", "$top=0", "$skip=-1", "$top=%D9%A3",
                                    "$skip=" + "9" * 40, "api-version", "&&", "=%"])
                   | st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126,
                                                    blacklist_characters="#"), max_size=10),
                   max_size=4)
#: the API's own methods most of the time, so that most requests reach the handlers
methods = st.one_of(st.sampled_from(["GET", "PUT", "DELETE"]),
                    st.sampled_from(["GET", "PUT", "DELETE"]),
                    st.sampled_from(["HEAD", "POST", "OPTIONS", "PATCH", "get", "PUT PUT", ""]),
                    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=8))
#: the API's resources, or any path
paths = st.one_of(
    st.sampled_from(["/q", "/t", "/t/Subscriptions/s", "/t/Subscriptions/s/Rules/$Default",
                     "/$Resources/queues", "/$Resources/topics", "/$namespaceinfo",
                     "/t/Subscriptions", "/t/Subscriptions/s/Rules"]),
    st.builds(lambda kind, n: kind.format(n=n),
              st.sampled_from(["/new{n}", "/t/Subscriptions/new{n}",
                               "/t/Subscriptions/s/Rules/new{n}", "/dir%2Fnew{n}"]),
              st.integers(0, 5)),
    st.lists(segments, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts)))
_ENTRY = ('<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">'
          '<{kind} xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/'
          'connect">{inner}</{kind}></content></entry>')
fields = st.sampled_from([
    "", "<LockDuration>PT30S</LockDuration>", "<LockDuration>P10000000D</LockDuration>",
    "<MaxDeliveryCount>\u0663</MaxDeliveryCount>", "<RequiresSession>yes</RequiresSession>",
    "<DefaultMessageTimeToLive>P10000000D</DefaultMessageTimeToLive>",
    "<ForwardTo>q</ForwardTo>", "<ForwardTo>sb://x/nowhere</ForwardTo>",
    "<Status>Frozen</Status>", "<UserMetadata>\u00e9</UserMetadata>",
    "<Filter><SqlExpression>1=</SqlExpression></Filter>", "<AutoDeleteOnIdle>PT1S"
    "</AutoDeleteOnIdle>"])
bodies = st.one_of(
    st.just(b""),
    st.binary(max_size=200),
    st.builds(lambda kind, inner: _ENTRY.format(kind=kind, inner="".join(inner)).encode(),
              st.sampled_from(["QueueDescription", "TopicDescription",
                               "SubscriptionDescription", "RuleDescription", "Nothing"]),
              st.lists(fields, max_size=3)),
    st.sampled_from([b'<!DOCTYPE a [<!ENTITY b "c">]><a>&b;</a>',
                     '<?xml version="1.0" encoding="utf-16"?><!DOCTYPE a><a/>'.encode("utf-16"),
                     b"<entry>" + b"<x/>" * 11_000 + b"</entry>", b"<a>", b"\xff\xfe\x00<"]))


@st.composite
def requests(draw: st.DrawFn, host: str, token: str) -> bytes:
    """One raw request: its line, headers (some broken) and body (some not as announced)."""
    path = draw(paths)
    query = draw(st.just(["api-version=2021-05"]) | queries)
    target = path + ("?" + "&".join(query) if query else "")
    body = draw(bodies)
    headers: list[tuple[str, str]] = [("Host", draw(st.just(host) | st.sampled_from(
        [host, "x", "[::1", "[::1]:1", "", "a b"])))]
    auth = draw(st.just("valid") | st.sampled_from(["valid", "none", "garbage"]))
    if auth == "valid":
        headers.append(("Authorization", token))
    elif auth == "garbage":
        headers.append(("Authorization", draw(st.text(
            alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60))))
    framing = draw(st.just("length") | st.sampled_from(
        ["length", "short", "twice", "garbage", "chunked", "bad-chunk", "none"]))
    if framing == "length":
        headers.append(("Content-Length", str(len(body))))
    elif framing == "short":
        headers.append(("Content-Length", str(len(body) + 10)))
    elif framing == "twice":
        headers += [("Content-Length", str(len(body))), ("Content-Length", "1")]
    elif framing == "garbage":
        headers.append(("Content-Length", draw(st.sampled_from(["-1", "1e3", "\u0663",
                                                                "9" * 30, ""]))))
    elif framing in ("chunked", "bad-chunk"):
        headers.append(("Transfer-Encoding", "chunked"))
        size = f"{len(body):x}" if framing == "chunked" else "zz"
        body = f"{size}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    for name, value in draw(st.lists(st.tuples(
            st.sampled_from(["If-Match", "Content-Type", "Expect", "Connection",
                             "ServiceBusSupplementaryAuthorization", "X-Any"]),
            st.sampled_from(["*", "close", "keep-alive", "100-continue", "\u00e9", "x" * 100])),
            max_size=3)):
        headers.append((name, value))
    method = draw(methods)
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers)
    return head.encode("utf-8") + b"\r\n" + body


def _exchange(port: int, data: bytes) -> bytes:
    """Send ``data``, close our side, read until the fake closes (or 5 s pass)."""
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, ConnectionResetError, BrokenPipeError):
            pass
    return b"".join(chunks)


@settings(max_examples=int(os.environ.get("SBMGMT_HTTP_FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_request_gets_a_500_and_the_sdk_is_still_served(
        fake: FakeNamespace, peers: tuple[ServiceBusReceiver, ServiceBusAdministrationClient],
        data: Any) -> None:
    port = fake.http_port
    assert port is not None
    host = f"127.0.0.1:{port}"
    token = generate_sas_token(f"https://{host}", fake.key_name, KEY, int(time.time()) + 600)
    raw = data.draw(requests(host, token))
    answer = _exchange(port, raw)
    statuses = [int(code) for code in _STATUS.findall(answer)]
    assert all(status < 500 for status in statuses), (raw[:300], answer[:300])
    receiver, admin = peers
    assert receiver.peek_messages(max_message_count=1) is not None
    assert admin.get_queue_runtime_properties(PROBE).name == PROBE
