"""A data directory (docs/fake.md, "A data directory"): what the official SDK left in a
namespace is there again after a clean restart, message by message (MessageId, body,
sequence number, state, delivery count); and the directories the fake refuses."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from azure.servicebus.management import ServiceBusAdministrationClient, SqlRuleFilter

from fakes import FakeNamespace
from fakes._data_dir import DATABASE, FORMAT_VERSION, DataDirError
from sbmgmt.cli._entities import plain_http_transport
from sbmgmt.message import Message

pytest_plugins = ["pytester"]

WAIT = 2
# A row of what peek shows of a message: (MessageId, body, sequence number, state, count).
Row = tuple[str, str, int, int, int]


def _peek(client: ServiceBusClient, queue: str | None = None, topic: str | None = None,
          subscription: str | None = None, sub_queue: ServiceBusSubQueue | None = None,
          session_id: str | None = None) -> list[Row]:
    receiver = (client.get_queue_receiver(queue, sub_queue=sub_queue, session_id=session_id)
                if queue is not None else
                client.get_subscription_receiver(topic or "", subscription or "",
                                                 sub_queue=sub_queue))
    with receiver:
        peeked = receiver.peek_messages(max_message_count=100, sequence_number=1)
    return [(str(m.message_id), str(m), m.sequence_number or 0, int(m.state),
             m.delivery_count or 0) for m in peeked]


def _client(namespace: FakeNamespace) -> ServiceBusClient:
    return ServiceBusClient.from_connection_string(namespace.connection_string, retry_total=0)


def _populate(namespace: FakeNamespace) -> dict[str, int]:
    """Every state and every kind of entity, through the SDK; the sequence numbers given."""
    namespace.add_queue("q", max_delivery_count=5)
    namespace.add_queue("sq", requires_session=True)
    namespace.add_queue("dq", requires_duplicate_detection=True)
    namespace.add_topic("t")
    namespace.add_subscription("t", "s")
    numbers: dict[str, int] = {}
    with _client(namespace) as client:
        with client.get_queue_sender("q") as sender:
            sender.send_messages([ServiceBusMessage(f"body-{i}", message_id=f"m{i}")
                                  for i in range(7)])
            later = datetime.now(timezone.utc) + timedelta(hours=1)
            numbers["scheduled"], numbers["cancelled"] = sender.schedule_messages(
                [ServiceBusMessage("body-s", message_id="ms"),
                 ServiceBusMessage("body-c", message_id="mc")], later)
            sender.cancel_scheduled_messages(numbers["cancelled"])
        with client.get_queue_receiver("q", max_wait_time=WAIT) as receiver:
            got = {str(m.message_id): m for m in receiver.receive_messages(
                max_message_count=6, max_wait_time=WAIT)}
            receiver.complete_message(got["m0"])
            receiver.abandon_message(got["m1"])
            receiver.defer_message(got["m2"])
            receiver.dead_letter_message(got["m3"], reason="r", error_description="d")
            # m4 and m5 stay locked: no lock survives the restart.
        with client.get_queue_sender("sq") as sender:
            sender.send_messages([ServiceBusMessage(f"body-a{i}", message_id=f"a{i}",
                                                    session_id="A") for i in range(2)])
        with client.get_queue_receiver("sq", session_id="A") as receiver:
            receiver.session.set_state(b"where A got to")
        with client.get_queue_sender("dq") as sender:
            sender.send_messages(ServiceBusMessage("body-d", message_id="once"))
        with client.get_topic_sender("t") as sender:
            sender.send_messages(ServiceBusMessage("body-t", message_id="mt"))
    return numbers


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "kept"


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory,
              ) -> Iterator[tuple[FakeNamespace, dict[str, int]]]:
    """One namespace populated, stopped and started again on its directory (the tests
    below read it; the one that sends adds a message the others leave out)."""
    directory = tmp_path_factory.mktemp("restarted")
    first = FakeNamespace(data_dir=directory).start()
    try:
        numbers = _populate(first)
    finally:
        first.stop()
    again = FakeNamespace(data_dir=directory).start()
    yield again, numbers
    again.stop()


ACTIVE, DEFERRED, SCHEDULED = 0, 1, 2


def test_every_state_of_a_queue_survives_a_clean_restart(
        restarted: tuple[FakeNamespace, dict[str, int]]) -> None:
    namespace, numbers = restarted
    with _client(namespace) as client:
        rows = [row for row in _peek(client, "q") if row[0] != "next"]
        dead = _peek(client, "q", sub_queue=ServiceBusSubQueue.DEAD_LETTER)
    # m0 completed and mc cancelled are gone; m1 abandoned once; m2 deferred after one
    # delivery; m4, m5 were locked: back with one more delivery; m6 never received.
    assert rows == [
        ("m1", "body-1", 2, ACTIVE, 1), ("m2", "body-2", 3, DEFERRED, 1),
        ("m4", "body-4", 5, ACTIVE, 1), ("m5", "body-5", 6, ACTIVE, 1),
        ("m6", "body-6", 7, ACTIVE, 0), ("ms", "body-s", numbers["scheduled"], SCHEDULED, 0)]
    assert [row[:3] for row in dead] == [("m3", "body-3", 4)]
    counts = namespace.accounting("q")
    assert (counts["active"], counts["deferred"], counts["scheduled"]) == (4, 1, 1)


def test_sequence_numbers_go_on_from_where_they_were(
        restarted: tuple[FakeNamespace, dict[str, int]]) -> None:
    namespace, numbers = restarted
    with _client(namespace) as client, client.get_queue_sender("q") as sender:
        (number,) = sender.schedule_messages(ServiceBusMessage("next", message_id="next"),
                                             datetime.now(timezone.utc) + timedelta(hours=1))
    assert number == numbers["cancelled"] + 1  # never reused, the cancelled one's included


def test_sessions_topics_and_duplicate_detection_survive_a_clean_restart(
        restarted: tuple[FakeNamespace, dict[str, int]]) -> None:
    namespace, _ = restarted
    with _client(namespace) as client:
        with client.get_queue_receiver("sq", session_id="A") as receiver:
            assert receiver.session.get_state() == b"where A got to"
            assert [str(m) for m in receiver.peek_messages(max_message_count=10)] == [
                "body-a0", "body-a1"]
        assert [row[:3] for row in _peek(client, topic="t", subscription="s")] == [
            ("mt", "body-t", 1)]
        with client.get_queue_sender("dq") as sender:  # within the window: a duplicate
            sender.send_messages(ServiceBusMessage("body-d", message_id="once"))
        assert [row[:2] for row in _peek(client, "dq")] == [("once", "body-d")]
    assert namespace.accounting("dq")["duplicate"] == 1


def test_rules_and_entities_made_by_the_administration_api_survive(directory: Path) -> None:
    first = FakeNamespace(data_dir=directory, http_port=0).start()
    try:
        admin = ServiceBusAdministrationClient.from_connection_string(
            first.http_connection_string or "", transport=plain_http_transport())
        admin.create_topic("made")
        admin.create_subscription("made", "red")
        admin.delete_rule("made", "red", "$Default")
        admin.create_rule("made", "red", "only-red", filter=SqlRuleFilter("colour = 'red'"))
        admin.create_queue("gone")
        admin.delete_queue("gone")
    finally:
        first.stop()
    again = FakeNamespace(data_dir=directory, http_port=0).start()
    try:
        admin = ServiceBusAdministrationClient.from_connection_string(
            again.http_connection_string or "", transport=plain_http_transport())
        assert [r.name for r in admin.list_rules("made", "red")] == ["only-red"]
        assert [q.name for q in admin.list_queues()] == []
        with _client(again) as client, client.get_topic_sender("made") as sender:
            sender.send_messages([
                ServiceBusMessage("red", application_properties={"colour": "red"}),
                ServiceBusMessage("blue", application_properties={"colour": "blue"})])
        assert again.accounting("made/Subscriptions/red")["active"] == 1
    finally:
        again.stop()


# --- refusals --------------------------------------------------------------------------


def test_a_second_fake_on_the_directory_is_refused_with_the_first_ones_pid(
        directory: Path) -> None:
    with FakeNamespace(data_dir=directory), pytest.raises(
            DataDirError, match=rf"in use by another fake \(pid {os.getpid()}\)"):
        FakeNamespace(data_dir=directory)
    FakeNamespace(data_dir=directory).stop()  # free again once the first stopped


def test_a_directory_of_another_format_version_is_refused(directory: Path) -> None:
    FakeNamespace(data_dir=directory).stop()
    with sqlite3.connect(directory / DATABASE) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    with pytest.raises(DataDirError, match="has format version 99; this fake reads format "
                       f"version {FORMAT_VERSION} only"):
        FakeNamespace(data_dir=directory)


def test_a_file_that_is_not_a_database_is_refused_with_its_path(directory: Path) -> None:
    directory.mkdir()
    (directory / DATABASE).write_bytes(b"not a database at all" * 100)
    with pytest.raises(DataDirError, match=rf"{directory / DATABASE} is not a data directory"):
        FakeNamespace(data_dir=directory)


@pytest.mark.parametrize("damage", [
    "x'00ff'",  # not a message
    # the same length, one byte of the body changed: still a message, not the one written
    "substr(content, 1, length(content) - 1) || x'21'",
])
def test_a_damaged_row_refuses_the_whole_namespace(directory: Path, damage: str) -> None:
    namespace = FakeNamespace(data_dir=directory)
    namespace.add_queue("fine")
    namespace.send("fine", *(Message(body=f"b{i}".encode(), message_id=f"m{i}")
                             for i in range(3)))
    namespace.stop()
    with sqlite3.connect(directory / DATABASE) as db:
        changed = db.execute(f"UPDATE messages SET content = {damage} "
                             "WHERE key & 0xffffffffff = 2").rowcount
    assert changed == 1
    with pytest.raises(DataDirError, match=rf"{directory / DATABASE} is damaged and was not read"):
        FakeNamespace(data_dir=directory)


def test_without_a_data_directory_nothing_is_written(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with FakeNamespace() as namespace:
        namespace.add_queue("q")
        assert namespace.data_dir is None
    assert list(tmp_path.iterdir()) == []


def test_the_plugins_option_keeps_each_test_namespace(pytester: pytest.Pytester,
                                                      tmp_path: Path) -> None:
    pytester.makepyfile(test_kept=(
        "from sbmgmt.message import Message\n\n"
        "def test_one(fake_namespace):\n"
        "    fake_namespace.send('queue', Message(body=b'x', message_id='x'))\n"
        "    print('ACTIVE', fake_namespace.accounting('queue')['active'])\n"))
    kept = tmp_path / "runs"
    for expected in (1, 2):  # the second run starts where the first stopped
        result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider",
                                               f"--fake-data-dir={kept}")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"*ACTIVE {expected}"])
    assert (kept / "test_one-1" / DATABASE).is_file()
