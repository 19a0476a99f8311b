"""The fake's log (issue 58, "a log worth reading"): the lines of a run of the official SDK
tell its story in order, name every refusal with its reason, hold no key or token, and
are not written at all by an embedded namespace that was not asked; ``python -m fakes``
logs at INFO where Config.json's ``Logging`` says (stderr, a file, both)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus.exceptions import ServiceBusError

from fakes import FakeNamespace
from fakes._log import FakeLog, parse_level
from fakes._throttle import Throttle
from sbmgmt.auth import generate_sas_token
from tests._waiting import wait_until
from tests.conftest import TOKEN_MARKS, secrets_in
from tests.hostile._raw import RawPeer, authorize, message_bytes

ROOT = Path(__file__).resolve().parents[2]
KEY = "SAS_KEY_VALUE"


class _Lines(logging.Handler):
    """Every ``fakes.*`` record of a test, as ``logger: message`` lines."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")

    def index(self, *parts: str, after: int = -1) -> int:
        """The first line after ``after`` holding every part (-1 when none)."""
        for number, line in enumerate(self.lines):
            if number > after and all(part in line for part in parts):
                return number
        return -1


@pytest.fixture
def lines() -> Iterator[_Lines]:
    handler = _Lines()
    logger = logging.getLogger("fakes")
    level = logger.level
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_an_sdk_run_reads_like_a_story(lines: _Lines) -> None:
    with FakeNamespace(http_port=0, log_level="DEBUG") as fake:
        fake.add_queue("orders")
        with ServiceBusClient.from_connection_string(fake.connection_string) as client:
            with client.get_queue_sender("orders") as sender:
                sender.send_messages(ServiceBusMessage(b"pay", message_id="m-1"))
            with client.get_queue_receiver("orders", max_wait_time=5) as receiver:
                assert [str(m) for m in receiver.peek_messages(max_message_count=5)] == ["pay"]
                received = receiver.receive_messages(max_message_count=1, max_wait_time=5)
                assert [str(m) for m in received] == ["pay"]
                receiver.complete_message(received[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{fake.http_port}/health") as answer:
            assert answer.status == 200
        # the client's close reaches the fake a moment after the SDK returns
        assert wait_until(lambda: lines.index("fakes.connections", "closed") >= 0
                          and lines.index("fakes.http", "GET /health: 200") >= 0)
    print("\n".join(lines.lines))  # the story, for whoever runs this with -s

    opened = lines.index("fakes.connections", "connection 1 opened from 127.0.0.1:")
    token = lines.index("fakes.cbs", "connection 1: $cbs put-token for",
                        "/orders: 202", after=opened)
    attached = lines.index("fakes.links", "connection 1: sender attached to orders",
                           after=token)
    sent = lines.index("fakes.transfers", "connection 1: transfer to orders", after=attached)
    detached = lines.index("fakes.links", "connection 1: sender detached from orders: "
                           "by the client", after=sent)
    closed = lines.index("fakes.connections", "connection 1 closed (127.0.0.1:",
                         "closed by the client", after=detached)
    assert -1 not in (opened, token, attached, sent, detached, closed), lines.lines
    receiving = lines.index("fakes.links", "receiver attached to orders", after=closed)
    peeked = lines.index("fakes.management", "peek-message on orders: 200 in", after=receiving)
    delivered = lines.index("fakes.transfers", ": delivery of orders #1 to its receiver",
                            after=receiving)
    assert -1 not in (receiving, peeked, delivered), lines.lines
    assert lines.index("fakes.http", "GET /health: 200 in") >= 0
    text = "\n".join(lines.lines)
    assert not secrets_in(text)


def test_refusals_say_why_and_keep_the_token_out(lines: _Lines) -> None:
    with FakeNamespace(log_level="INFO") as fake:
        fake.add_queue("orders")
        wrong = fake.connection_string.replace(KEY, "V3JvbmdLZXlWYWx1ZQ==")
        with pytest.raises(ServiceBusError), ServiceBusClient.from_connection_string(
                wrong, retry_total=0) as client, client.get_queue_sender("orders") as sender:
            sender.send_messages(ServiceBusMessage(b"x"))
        with RawPeer("127.0.0.1", fake.port) as peer:  # a namespace token, then the attach
            authorize(peer, "127.0.0.1", fake.port, fake.key_name, KEY)
            link = peer.sender("missing")
            assert peer.pump(lambda: link.remote_condition is not None)
        assert wait_until(lambda: lines.index("refused attach on missing") >= 0)
    print("\n".join(lines.lines))
    assert lines.index("fakes.cbs", "$cbs put-token for", ": 401 ") >= 0, lines.lines
    assert lines.index("fakes.refusals", "refused attach on missing:", "could not be found"
                       ) >= 0, lines.lines
    text = "\n".join(lines.lines)
    assert not secrets_in(text)
    assert "transfer" not in text  # INFO: the messages themselves are DEBUG lines


def test_lines_are_scrubbed_of_keys_and_signatures(lines: _Lines) -> None:
    log = FakeLog("INFO", secrets=["c2VjcmV0LWtleQ=="])
    token = generate_sas_token("sb://h/q", "root", "c2VjcmV0LWtleQ==", int(time.time()) + 60)
    log.refused("q", "attach", f"the key c2VjcmV0LWtleQ== and the token {token}")
    log.http_request("GET", "/q", 401, 0.001, f"Authorization: {token}")
    assert len(lines.lines) == 2
    for line in lines.lines:
        assert "c2VjcmV0LWtleQ==" not in line
        assert not any(mark in line for mark in ("sig=", token))
        assert "***" in line


def test_an_embedded_namespace_writes_no_line_unless_asked(lines: _Lines) -> None:
    logging.getLogger("fakes").setLevel(logging.DEBUG)
    with FakeNamespace(http_port=0) as fake:
        fake.add_queue("orders")
        with ServiceBusClient.from_connection_string(fake.connection_string) as client, \
                client.get_queue_sender("orders") as sender:
            sender.send_messages(ServiceBusMessage(b"x"))
        with urllib.request.urlopen(f"http://127.0.0.1:{fake.http_port}/health") as answer:
            assert answer.status == 200
        # what it did is counted all the same (/metrics reads the counts)
        assert wait_until(lambda: fake.log.counts.connections_opened == 1
                          and fake.log.counts.connections_open == 0)
    story = ("fakes.connections", "fakes.links", "fakes.cbs", "fakes.management",
             "fakes.http", "fakes.refusals", "fakes.transfers")
    assert [line for line in lines.lines if line.startswith(story)] == []


def test_a_namespace_asked_for_info_lets_its_lines_through() -> None:
    logger = logging.getLogger("fakes")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        FakeNamespace(log_level="info")
        assert logger.isEnabledFor(logging.INFO)
    finally:
        logger.setLevel(level)


@pytest.mark.parametrize(("given", "level"), [
    (None, None), ("off", None), ("OFF", None), ("info", logging.INFO),
    (" DEBUG ", logging.DEBUG), (logging.WARNING, logging.WARNING)])
def test_levels_are_read_by_name_or_number(given: str | int | None, level: int | None) -> None:
    assert parse_level(given) == level


@pytest.mark.parametrize("given", ["loud", "", True])
def test_a_level_that_is_none_is_refused_naming_the_choices(given: object) -> None:
    with pytest.raises(ValueError, match=r"DEBUG, INFO, WARNING, ERROR or OFF|a name or a"):
        parse_level(given)  # type: ignore[arg-type]


# --- python -m fakes ----------------------------------------------------------------------

_CONFIG = """{"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [{"Name": "q1"}],
  "Topics": []}], "Logging": {"Type": "%s"}}}"""


def _serve(tmp_path: Path, logging_type: str, *extra: str) -> tuple[str, str]:
    """Run ``python -m fakes`` in ``tmp_path`` (its temporary directory too) with a
    Config.json of ``logging_type``, send one message with the SDK, stop it; its stderr and
    its log file's text ("" if none)."""
    (tmp_path / "Config.json").write_text(_CONFIG % logging_type)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    env.pop("CONFIG_PATH", None)
    env.pop("CONFIG_JSON", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes", "--config", "Config.json", "--host", "127.0.0.1",
         "--port", "0", "--http-port", "0", *extra], cwd=tmp_path, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        connection_string = process.stdout.readline().strip()
        process.stdout.readline()
        with ServiceBusClient.from_connection_string(connection_string) as client, \
                client.get_queue_sender("q1") as sender:
            sender.send_messages(ServiceBusMessage(b"x"))
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    log_file = tmp_path / "fake-servicebus.log"
    return err, log_file.read_text() if log_file.exists() else ""


def test_python_m_fakes_logs_at_info_where_the_config_says(tmp_path: Path) -> None:
    err, file_text = _serve(tmp_path, "Console,File")
    for text in (err, file_text):
        assert "INFO fakes.connections: connection 1 opened from 127.0.0.1:" in text
        assert "INFO fakes.links: connection 1: sender attached to q1" in text
        assert "closed by the client" in text
        assert "fakes.transfers" not in text  # DEBUG only
        assert not secrets_in(text) and not any(mark in text for mark in TOKEN_MARKS)


def test_file_logging_leaves_stderr_quiet(tmp_path: Path) -> None:
    err, file_text = _serve(tmp_path, "File", "--log-level", "DEBUG")
    assert "fakes.connections" not in err
    assert "DEBUG fakes.transfers: connection 1: transfer to q1" in file_text



def test_a_throttled_send_is_logged_with_the_services_words(lines: _Lines) -> None:
    with FakeNamespace(log_level="INFO") as fake:
        fake.add_queue("orders")
        # ten credits in a second that never ends: the eleventh message is throttled,
        # however slowly the machine sends (a raw peer: no SDK retry in the way)
        fake._store.throttle = Throttle(10, clock=lambda: 0.0)
        with RawPeer("127.0.0.1", fake.port) as peer:
            authorize(peer, "127.0.0.1", fake.port, fake.key_name, KEY)
            link = peer.sender("orders")
            assert peer.pump(lambda: link.credit > 0)
            deliveries = [peer.send(link, message_bytes(body=i)) for i in range(12)]
            assert peer.pump(lambda: all(d.remote_state for d in deliveries), timeout=10)
    assert lines.index("fakes.refusals", "throttled transfer on orders: The request was "
                       "terminated because the entity is being throttled") >= 0, lines.lines[-5:]
