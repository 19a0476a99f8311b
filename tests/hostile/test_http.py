"""The fake's HTTP port against hostile clients (issue 39): each attack the issue names is
refused with a 4xx and the service's ``<Error>`` body or bounded, never a 500, and the port
keeps serving. Raw sockets on 127.0.0.1 only; short limits keep every test within seconds."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import timedelta

import pytest

from fakes import ConfigError, FakeNamespace, Limits
from fakes._auth import audience_scope
from fakes._loopback import audience_hosts, ipv6_loopback
from sbmgmt.auth import generate_sas_token
from tests._waiting import wait_until

KEY = "SAS_KEY_VALUE"
#: Short time-outs, so that a slow client is cut within a second or two.
SHORT = Limits(http_header_timeout=1.0, http_body_timeout=1.0, http_idle_timeout=2.0)


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0, limits=SHORT) as namespace:
        namespace.add_queue("q")
        yield namespace


def _port(fake: FakeNamespace) -> int:
    assert fake.http_port is not None
    return fake.http_port


def _token(fake: FakeNamespace, path: str = "") -> str:
    audience = f"https://{fake.host}:{_port(fake)}/{path}".rstrip("/")
    return generate_sas_token(audience, fake.key_name, KEY, int(time.time()) + 300)


def _request(fake: FakeNamespace, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", _port(fake), timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _admin(fake: FakeNamespace, method: str, path: str,
           body: bytes | None = None) -> tuple[int, bytes]:
    return _request(fake, method, path, body, {"Authorization": _token(fake)})


def _raw(fake: FakeNamespace, data: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``data`` on a new connection and read until the fake closes it (or ``wait``)."""
    with socket.create_connection(("127.0.0.1", _port(fake)), timeout=wait) as sock:
        sock.sendall(data)
        return _read_to_close(sock)


def _read_to_close(sock: socket.socket) -> bytes:
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _error_code(answer: bytes) -> str | None:
    """The ``<Code>`` of an answer's ``<Error>`` body (it must parse)."""
    body = answer.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in answer else answer
    return ET.fromstring(body).findtext("Code")


def _authorization_for_x(fake: FakeNamespace) -> bytes:
    """An ``Authorization`` header line for the raw requests' ``Host: x``."""
    token = generate_sas_token("https://x", fake.key_name, KEY, int(time.time()) + 300)
    return b"Authorization: " + token.encode()


def _healthy(fake: FakeNamespace) -> bool:
    return _request(fake, "GET", "/health")[0] == 200


# --- framing --------------------------------------------------------------------------------

@pytest.mark.parametrize("request_bytes", [
    # two Content-Length headers
    b"PUT /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\nAUTH\r\nContent-Length: 3\r\n"
    b"Content-Length: 4\r\n\r\nabcd",
    # a chunk size that is no number
    b"PUT /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\nAUTH\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    # a request line that is none
    b"\x00\x01\x02 / HTTP/1.1\r\n\r\n",
])
def test_malformed_requests_are_400_with_the_error_body(fake: FakeNamespace,
                                                        request_bytes: bytes) -> None:
    answer = _raw(fake, request_bytes.replace(b"AUTH", _authorization_for_x(fake)))
    assert _status(answer) == 400
    assert _error_code(answer) == "400"
    assert _healthy(fake)


def test_a_body_shorter_than_its_length_times_out_with_408(fake: FakeNamespace) -> None:
    answer = _raw(fake, b"PUT /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: 100\r\n\r\nshort")
    assert _status(answer) == 401  # no token: refused before the body is awaited
    answer = _raw(fake, b"PUT /q?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n"
                  + _authorization_for_x(fake) + b"\r\nContent-Length: 100\r\n\r\nshort")
    assert _status(answer) == 408 and _error_code(answer) == "408"
    assert _healthy(fake)


def test_headers_that_trickle_are_cut_at_the_header_timeout(fake: FakeNamespace) -> None:
    with socket.create_connection(("127.0.0.1", _port(fake)), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        try:
            for _ in range(40):
                sock.sendall(b"X-Slow: 1\r\n")
                assert _healthy(fake)  # others are served meanwhile
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_to_close(sock)
        took = time.monotonic() - started
    assert _status(answer) == 408 and _error_code(answer) == "408"
    assert took < 8


def test_headers_past_the_limit_are_431() -> None:
    with FakeNamespace(http_port=0, limits=Limits(http_max_header_bytes=4096)) as fake:
        answer = _raw(fake, b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 8000 + b"\r\n\r\n")
        assert _status(answer) == 431 and _error_code(answer) == "431"
        assert _healthy(fake)


def test_connections_past_the_cap_are_answered_503() -> None:
    with FakeNamespace(http_port=0, limits=Limits(http_max_connections=3)) as fake:
        held = [socket.create_connection(("127.0.0.1", _port(fake)), timeout=5)
                for _ in range(3)]
        try:
            for sock in held:
                sock.sendall(b"GET /hea")  # a request begun, not finished
            time.sleep(0.3)
            answer = _raw(fake, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _status(answer) == 503 and _error_code(answer) == "503"
        finally:
            for sock in held:
                sock.close()
        wait_until(lambda: _healthy_quietly(fake), 5)
        assert _healthy(fake)


def _healthy_quietly(fake: FakeNamespace) -> bool:
    try:
        return _healthy(fake)
    except (OSError, http.client.HTTPException):
        return False


def test_one_connection_carries_many_requests(fake: FakeNamespace) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", _port(fake), timeout=10)
    try:
        peers = set()
        for _ in range(5):
            connection.request("GET", "/q?api-version=2021-05",
                               headers={"Authorization": _token(fake)})
            response = connection.getresponse()
            assert response.status == 200
            response.read()
            assert connection.sock is not None
            peers.add(connection.sock.getsockname())
        assert len(peers) == 1
    finally:
        connection.close()


def test_an_idle_kept_alive_connection_is_closed(fake: FakeNamespace) -> None:
    with socket.create_connection(("127.0.0.1", _port(fake)), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        started = time.monotonic()
        answer = _read_to_close(sock)  # the answer, then the close after the idle time-out
        assert b"200 OK" in answer
        assert SHORT.http_idle_timeout <= time.monotonic() - started < 8


# --- refused bodies are not read -------------------------------------------------------------

def test_an_unauthorized_body_is_refused_before_it_is_read(fake: FakeNamespace) -> None:
    """50 MB announced, none sent: the 401 comes at once, not after a body time-out."""
    with socket.create_connection(("127.0.0.1", _port(fake)), timeout=10) as sock:
        sock.sendall(b"PUT /q2?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: 52428800\r\n\r\n")
        started = time.monotonic()
        answer = _read_to_close(sock)
        took = time.monotonic() - started
    assert _status(answer) == 413  # past the body limit: refused from its length alone
    assert took < SHORT.http_body_timeout
    with socket.create_connection(("127.0.0.1", _port(fake)), timeout=10) as sock:
        sock.sendall(b"PUT /q2?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: 500000\r\n\r\n")
        started = time.monotonic()
        answer = _read_to_close(sock)
        took = time.monotonic() - started
    assert _status(answer) == 401 and _error_code(answer) == "401"
    assert took < SHORT.http_body_timeout


def test_a_refused_request_that_expects_100_continue_gets_no_invitation(
        fake: FakeNamespace) -> None:
    with socket.create_connection(("127.0.0.1", _port(fake)), timeout=10) as sock:
        sock.sendall(b"PUT /q2?api-version=2021-05 HTTP/1.1\r\nHost: x\r\n"
                     b"Expect: 100-continue\r\nContent-Length: 500000\r\n\r\n")
        started = time.monotonic()
        answer = _read_to_close(sock)
        took = time.monotonic() - started
    assert b"100 Continue" not in answer
    assert _status(answer) == 401 and took < SHORT.http_body_timeout


def test_a_refused_client_still_sending_reads_its_answer(fake: FakeNamespace) -> None:
    status, body = _request(fake, "PUT", "/q2?api-version=2021-05", b"x" * 500_000)
    assert status == 401 and ET.fromstring(body).findtext("Code") == "401"


# --- queries, names and ranges ---------------------------------------------------------------

@pytest.mark.parametrize("query", ["$top=%D9%A3", "$skip=" + "9" * 5000, "$top=0",
                                   "$skip=-1", "$top=%EF%BC%91", "$top=1e3"])
def test_counts_that_are_no_ascii_numbers_are_400(fake: FakeNamespace, query: str) -> None:
    status, body = _admin(fake, "GET", f"/$Resources/queues?api-version=2021-05&{query}")
    assert status == 400 and ET.fromstring(body).findtext("Code") == "400"


BAD_NAMES = ["..", "a/../b", "a%2F%2Fb", "%00", "a%20b", "caf%C3%A9", "$cbs",
             "q%2F$DeadLetterQueue", "x" * 261, "t/Subscriptions/s/x", "-a", "a."]


def _queue_entry() -> bytes:
    return (b'<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">'
            b'<QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/'
            b'servicebus/connect"/></content></entry>')


@pytest.mark.parametrize("name", BAD_NAMES)
def test_names_the_service_refuses_are_400_on_the_api(fake: FakeNamespace, name: str) -> None:
    status, body = _admin(fake, "PUT", f"/{name}?api-version=2021-05", _queue_entry())
    assert status == 400, body
    assert ET.fromstring(body).findtext("Code") == "400"


@pytest.mark.parametrize("name", ["..", "a/../b", "a//b", "a\x00b", "a b", "café", "$cbs",
                                  "q/$DeadLetterQueue", "x" * 261])
def test_the_same_names_are_refused_by_the_test_api_and_config(name: str) -> None:
    with FakeNamespace() as fake:
        with pytest.raises(ValueError, match="not a valid"):
            fake.add_queue(name)
        with pytest.raises(ValueError, match="not a valid"):
            fake.add_topic(name)
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": name}], "Topics": []}], "Logging": {"Type": "Console"}}}
    with pytest.raises(ConfigError, match=r"Queues\[0\]\.Name"):
        FakeNamespace(config)


def test_subscription_and_rule_names_follow_the_same_rule(fake: FakeNamespace) -> None:
    fake.add_topic("t")
    with pytest.raises(ValueError, match="not a valid"):
        fake.add_subscription("t", "a/b")
    status, _ = _admin(fake, "PUT", "/t/Subscriptions/a%2Fb?api-version=2021-05",
                       _queue_entry().replace(b"QueueDescription", b"SubscriptionDescription"))
    assert status == 400


def test_a_scoped_token_cannot_create_a_sibling_by_a_dotted_name(fake: FakeNamespace) -> None:
    fake.add_topic("t")
    fake.add_subscription("t", "s1")
    token = _token(fake, "t/Subscriptions/s1")
    for path in ("/t/Subscriptions/s1/../s2", "/t/Subscriptions/s1%2F..%2Fs2",
                 "/t/Subscriptions/s1/x"):
        status, _ = _request(fake, "PUT", f"{path}?api-version=2021-05", _queue_entry(),
                             {"Authorization": token})
        assert status in (400, 401), path
    assert _admin(fake, "GET", "/t/Subscriptions/s2?api-version=2021-05")[0] == 404


def test_a_nul_in_a_path_gets_an_answer_that_parses(fake: FakeNamespace) -> None:
    status, body = _admin(fake, "GET", "/t%00x/Subscriptions/s?api-version=2021-05")
    assert status == 404
    assert ET.fromstring(body).findtext("Code") == "404"


@pytest.mark.parametrize(("element", "value"), [
    ("LockDuration", "P10000000D"), ("LockDuration", "PT1S"), ("LockDuration", "PT6M"),
    ("DuplicateDetectionHistoryTimeWindow", "PT1S"), ("MaxDeliveryCount", "0"),
    ("MaxDeliveryCount", "99999999999"), ("AutoDeleteOnIdle", "PT1M")])
def test_values_out_of_the_services_range_are_400(fake: FakeNamespace, element: str,
                                                  value: str) -> None:
    description = f"<{element}>{value}</{element}>".encode()
    if element == "DuplicateDetectionHistoryTimeWindow":
        description += b"<RequiresDuplicateDetection>true</RequiresDuplicateDetection>"
    body = _queue_entry().replace(b"servicebus/connect\"/>",
                                  b"servicebus/connect\">" + description
                                  + b"</QueueDescription>")
    status, answer = _admin(fake, "PUT", "/ranged?api-version=2021-05", body)
    assert status == 400, answer
    assert _admin(fake, "GET", "/$Resources/queues?api-version=2021-05")[0] == 200


def test_ranges_are_one_rule_with_shorter_durations_for_tests() -> None:
    with FakeNamespace() as fake:
        fake.add_queue("quick", lock_duration=timedelta(seconds=1))  # shorter on purpose
        with pytest.raises(ValueError, match="LockDuration"):
            fake.add_queue("slow", lock_duration=timedelta(days=10_000_000 // 1000))
        with pytest.raises(ValueError, match="MaxDeliveryCount"):
            fake.add_queue("never", max_delivery_count=0)
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "q", "Properties": {"LockDuration": "PT1S"}}], "Topics": []}],
        "Logging": {"Type": "Console"}}}
    with pytest.raises(ConfigError, match=r"Queues\[0\]\.Properties.*LockDuration"):
        FakeNamespace(config)


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_config_booleans_are_json_booleans(value: object) -> None:
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "q", "Properties": {"RequiresSession": value}}], "Topics": []}],
        "Logging": {"Type": "Console"}}}
    with pytest.raises(ConfigError, match="RequiresSession"):
        FakeNamespace(config)


@pytest.mark.parametrize("value", ["3", 3.5, True])
def test_config_numbers_are_json_numbers(value: object) -> None:
    config = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
        {"Name": "q", "Properties": {"MaxDeliveryCount": value}}], "Topics": []}],
        "Logging": {"Type": "Console"}}}
    with pytest.raises(ConfigError, match="MaxDeliveryCount"):
        FakeNamespace(config)


def test_a_dead_letter_path_cannot_be_taken_by_a_queue(fake: FakeNamespace) -> None:
    """The issue's KeyError: a queue named like another's dead-letter queue, then a delete."""
    assert _admin(fake, "PUT", "/x%2F$DeadLetterQueue?api-version=2021-05",
                  _queue_entry())[0] == 400
    assert _admin(fake, "PUT", "/x?api-version=2021-05", _queue_entry())[0] == 201
    assert _admin(fake, "DELETE", "/x?api-version=2021-05")[0] == 200
    assert _admin(fake, "GET", "/$Resources/queues?api-version=2021-05")[0] == 200


# --- XML -----------------------------------------------------------------------------------

def test_a_dtd_is_refused_in_every_encoding(fake: FakeNamespace) -> None:
    document = ('<?xml version="1.0" encoding="{}"?><!DOCTYPE entry [<!ENTITY a "aaaa">]>'
                '<entry xmlns="http://www.w3.org/2005/Atom">&a;</entry>')
    for encoding in ("utf-8", "utf-16", "utf-16-le", "latin-1"):
        body = document.format(encoding).encode(encoding)
        if encoding == "utf-16-le":
            body = b"\xff\xfe" + body
        status, answer = _admin(fake, "PUT", "/dtd?api-version=2021-05", body)
        assert status == 400, (encoding, answer)


def test_entity_expansion_is_refused(fake: FakeNamespace) -> None:
    lol = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 8))
    body = (f'<!DOCTYPE entry [<!ENTITY l0 "lol">{lol}]><entry xmlns="http://www.w3.org/'
            f'2005/Atom"><content><QueueDescription><UserMetadata>&l7;</UserMetadata>'
            f'</QueueDescription></content></entry>').encode()
    status, _ = _admin(fake, "PUT", "/bomb?api-version=2021-05", body)
    assert status == 400


def test_a_body_of_too_many_elements_is_refused(fake: FakeNamespace) -> None:
    body = b"<entry>" + b"<a/>" * 20_000 + b"</entry>"
    status, _ = _admin(fake, "PUT", "/many?api-version=2021-05", body)
    assert status == 400


# --- IPv6 audiences ------------------------------------------------------------------------

def test_audiences_compare_ipv6_literals_by_address() -> None:
    hosts = audience_hosts("::1")
    for audience in ("sb://[::1]:5672/q", "sb://[0:0:0:0:0:0:0:1]/q", "amqps://[::1]/q"):
        assert audience_scope(audience, hosts) == ("q",)
    assert audience_scope("sb://[fe80:0::1]:1/q", audience_hosts("FE80::1")) == ("q",)


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_the_official_admin_client_is_served_on_the_ipv6_loopback() -> None:
    """A token for ``sb://[::1]:PORT`` (what azure-servicebus signs for that endpoint) and
    the official administration client pointed at ``[::1]``."""
    from azure.servicebus.management import ServiceBusAdministrationClient

    from sbmgmt.cli._entities import plain_http_transport

    with FakeNamespace(host="localhost", http_port=0) as fake:
        fake.add_queue("q")
        port = _port(fake)
        token = generate_sas_token(f"sb://[::1]:{port}/q", fake.key_name, KEY,
                                   int(time.time()) + 300)
        connection = http.client.HTTPConnection("::1", port, timeout=10)
        try:
            connection.request("GET", "/q?api-version=2021-05",
                               headers={"Authorization": token})
            response = connection.getresponse()
            assert response.status == 200, response.read()
        finally:
            connection.close()
        endpoint = (f"Endpoint=sb://[::1]:{port};SharedAccessKeyName={fake.key_name};"
                    f"SharedAccessKey={KEY};UseDevelopmentEmulator=true")
        with ServiceBusAdministrationClient.from_connection_string(
                endpoint, transport=plain_http_transport(), retry_total=0) as admin:
            assert admin.get_queue("q").name == "q"


# --- a DELETE racing the server thread ------------------------------------------------------

def test_deletes_racing_the_amqp_server_leave_the_store_whole() -> None:
    """The administration API deletes and re-creates a queue while the AMQP server thread
    delivers to it and its locks expire: every answer is 2xx/404, never a 500, and the
    namespace serves at the end."""
    with FakeNamespace(http_port=0) as fake:
        from azure.servicebus import ServiceBusClient, ServiceBusMessage

        fake.add_queue("race", lock_duration=timedelta(seconds=1))
        stop = threading.Event()
        statuses: list[int] = []

        def churn() -> None:
            while not stop.is_set():
                for method, body in (("DELETE", None), ("PUT", _queue_entry())):
                    statuses.append(_admin(fake, method, "/race?api-version=2021-05",
                                           body)[0])

        worker = threading.Thread(target=churn)
        worker.start()
        try:
            with ServiceBusClient.from_connection_string(fake.connection_string,
                                                         retry_total=0) as client:
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline:
                    try:
                        with client.get_queue_sender("race") as sender:
                            sender.send_messages(ServiceBusMessage(b"x"))
                        with client.get_queue_receiver("race", max_wait_time=0.2) as receiver:
                            receiver.receive_messages(max_message_count=5, max_wait_time=0.2)
                    except Exception as exc:  # a link to a deleted queue is detached: expected
                        assert "internal-error" not in str(exc), exc
        finally:
            stop.set()
            worker.join()
        assert statuses and set(statuses) <= {200, 201, 404, 409}, statuses
        assert _admin(fake, "GET", "/$Resources/queues?api-version=2021-05")[0] == 200
        _admin(fake, "PUT", "/race?api-version=2021-05", _queue_entry())  # 201 or 409
        assert _admin(fake, "DELETE", "/race?api-version=2021-05")[0] == 200
        fake.add_queue("race")  # the name is free again: nothing was left half-removed
        assert fake.accounting("race") is not None


# --- slow connections (the 3,000-connection run is bench/http_hostile.py) -------------------

def test_trickling_connections_hold_no_thread_and_others_are_served() -> None:
    """200 connections trickle their headers: the port holds no thread for them, answers
    ``/health`` and an authorized GET meanwhile, cuts them at the header time-out (408),
    and once they are gone its connections are back to none."""
    with FakeNamespace(http_port=0, limits=SHORT) as fake:
        fake.add_queue("q")
        threads_before = threading.active_count()
        socks = [socket.create_connection(("127.0.0.1", _port(fake)), timeout=5)
                 for _ in range(200)]
        try:
            for sock in socks:
                sock.sendall(b"GET /health HTTP/1.1\r\nX-Slow: ")
            for _ in range(3):
                for sock in socks:
                    with contextlib.suppress(OSError):
                        sock.send(b"a")
                assert threading.active_count() <= threads_before
                assert _healthy(fake)
                assert _admin(fake, "GET", "/q?api-version=2021-05")[0] == 200
                time.sleep(0.2)
            # each read waits for its cut: the header time-out (1 s) is within the
            # sockets' (5 s)
            cut = [_read_to_close(sock) for sock in socks]
            assert all(_status(answer) == 408 for answer in cut)
        finally:
            for sock in socks:
                sock.close()
        http_port = fake._http
        assert http_port is not None
        wait_until(lambda: http_port.open_connections() == 0, 5)
        assert http_port.open_connections() == 0
        assert threading.active_count() <= threads_before
