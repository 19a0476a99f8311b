"""A data directory read back (docs/fake.md, "A data directory"): each message is kept as
the bytes it was written as and decoded when it is first used, so what comes back must be
the message that was sent, field by field; what was due while the fake was stopped falls
due at the restart; the two sync modes both keep what was acknowledged; and ``/metrics``
names the directory (what the explorer shows)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fakes import FakeClock, FakeNamespace
from fakes._data_dir import DATABASE, DataDirError
from sbmgmt.amqp.values import ms_from_datetime
from sbmgmt.message import Message, ReceivedMessage

START = 1_700_000_000.0


def _sent(count: int) -> list[Message]:
    return [Message(body=f"body-{i}".encode() * (i + 1), message_id=f"m{i}",
                    application_properties={"i": i, "name": f"n{i}"},
                    subject=f"s{i}", correlation_id=f"c{i}")
            for i in range(count)]


def _fields(message: ReceivedMessage) -> tuple[object, ...]:
    """What a receiver reads of a message (the enqueued time as the wire carries it: in
    milliseconds; in memory the fake keeps its clock's microseconds)."""
    assert message.enqueued_time is not None
    return (message.message_id, message.body, message.application_properties,
            message.subject, message.correlation_id, message.sequence_number,
            ms_from_datetime(message.enqueued_time))


@pytest.mark.parametrize("sync", ["normal", "full"])
def test_every_message_comes_back_field_by_field(tmp_path: Path, sync: str) -> None:
    kept = tmp_path / "kept"
    first = FakeNamespace(data_dir=kept, data_dir_sync=sync, clock=FakeClock(START))
    first.add_queue("q")
    first.send("q", *_sent(20))
    # The first ten locked and given back by the restart (one delivery more): decoded
    # before the stop; the last ten never decoded after the restart until received.
    before = {m.message_id: m for m in first.receive_and_lock("q", 10)}
    first.stop()
    again = FakeNamespace(data_dir=kept, data_dir_sync=sync, clock=FakeClock(START))
    try:
        back = again.receive_and_lock("q", 30)
    finally:
        again.stop()
    assert [m.message_id for m in back] == [f"m{i}" for i in range(20)]
    for message in back:
        i = int(str(message.message_id)[1:])
        sent = _sent(20)[i]
        assert (message.body, message.application_properties, message.subject,
                message.correlation_id, message.sequence_number) == (
            sent.body, sent.application_properties, sent.subject, sent.correlation_id, i + 1)
        if i < 10:
            earlier = before[message.message_id]
            assert _fields(message) == _fields(earlier)
            assert message.delivery_count == 1  # its lock did not survive the restart
        else:
            assert message.delivery_count == 0


def test_an_unknown_sync_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataDirError, match="sync must be one of normal, full, not 'always'"):
        FakeNamespace(data_dir=tmp_path / "kept", data_dir_sync="always")
    assert not (tmp_path / "kept" / DATABASE).exists()


def test_what_fell_due_while_stopped_is_applied_at_the_restart(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    first = FakeNamespace(data_dir=kept, clock=FakeClock(START))
    first.add_queue("short", default_ttl=timedelta(seconds=30))
    first.add_queue("dead", default_ttl=timedelta(seconds=30), dead_lettering_on_expiration=True)
    first.add_queue("long", default_ttl=timedelta(hours=1))
    for queue in ("short", "dead", "long"):
        first.send(queue, *_sent(3))
    first.stop()
    again = FakeNamespace(data_dir=kept, clock=FakeClock(START + 60))
    try:
        assert again.accounting("short")["active"] == 0
        assert again.accounting("short")["expired"] == 3
        assert again.accounting("dead")["dead_lettered"] == 3
        assert [m.message_id for m in again.receive_and_lock("dead/$DeadLetterQueue", 5)] == [
            "m0", "m1", "m2"]
        assert [m.message_id for m in again.receive_and_lock("long", 5)] == ["m0", "m1", "m2"]
    finally:
        again.stop()


def _data_dir_samples(namespace: FakeNamespace) -> list[dict[str, str]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{namespace.http_port}/metrics") as answer:
        page = answer.read().decode()
    return [sample.labels for family in text_string_to_metric_families(page)
            for sample in family.samples if sample.name == "fakes_data_dir_info"]


def test_metrics_name_the_data_directory_and_its_sync(tmp_path: Path) -> None:
    with FakeNamespace(data_dir=tmp_path / "kept", data_dir_sync="full", http_port=0) as kept:
        assert _data_dir_samples(kept) == [{"path": str(tmp_path / "kept"), "sync": "full"}]
    with FakeNamespace(http_port=0) as in_memory:
        assert _data_dir_samples(in_memory) == []


def test_a_lock_given_back_counts_one_delivery_across_restarts(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    first = FakeNamespace(data_dir=kept)
    first.add_queue("q")
    first.send("q", *_sent(4))
    first.receive_and_lock("q", 2)
    first.stop()
    FakeNamespace(data_dir=kept).stop()  # m0, m1 given back, never read
    third = FakeNamespace(data_dir=kept)
    try:
        back = third.receive_and_lock("q", 5)
    finally:
        third.stop()
    assert [(m.message_id, m.body, m.delivery_count) for m in back] == [
        (sent.message_id, sent.body, 1 if i < 2 else 0) for i, sent in enumerate(_sent(4))]


def test_a_change_before_a_message_is_read_keeps_its_bytes(tmp_path: Path) -> None:
    """Scheduled messages that fall due after a restart, before anything reads them: their
    rows' state column changes and their bytes stay as written (the next restart has both)."""
    kept = tmp_path / "kept"
    due = datetime.fromtimestamp(START + 30, timezone.utc)
    first = FakeNamespace(data_dir=kept, clock=FakeClock(START))
    first.add_queue("q")
    first.send("q", *(m.model_copy(update={"scheduled_enqueue_time": due}) for m in _sent(3)))
    assert first.accounting("q")["scheduled"] == 3
    first.stop()
    second = FakeNamespace(data_dir=kept, clock=FakeClock(START + 60))
    assert second.accounting("q")["active"] == 3  # due now: active, not read
    second.stop()
    with sqlite3.connect(kept / DATABASE) as db:
        assert db.execute("SELECT state FROM messages").fetchall() == [("active",)] * 3
    third = FakeNamespace(data_dir=kept, clock=FakeClock(START + 90))
    try:
        back = third.receive_and_lock("q", 5)
    finally:
        third.stop()
    assert [(m.message_id, m.body, m.enqueued_time) for m in back] == [
        (sent.message_id, sent.body, due) for sent in _sent(3)]


def test_a_message_not_read_before_the_stop_is_not_read_after_it(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    first = FakeNamespace(data_dir=kept)
    first.add_queue("q")
    first.send("q", *_sent(1))
    first.stop()
    again = FakeNamespace(data_dir=kept)
    again.stop()
    with pytest.raises(DataDirError, match=rf"message 1 was not read: the data directory "
                       rf"{kept} is closed \(the namespace stopped\)"):
        again.receive_and_lock("q", 1)


def test_sbmgmt_fake_serve_passes_the_directory_and_its_sync_on(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    process = subprocess.Popen(
        [sys.executable, "-m", "sbmgmt.cli", "fake", "serve", "--data-dir", str(kept),
         "--data-dir-sync", "full"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("Endpoint=sb://127.0.0.1:")
        http = process.stdout.readline().strip()
        with urllib.request.urlopen(f"{http}/metrics") as answer:
            page = answer.read().decode()
        assert [sample.labels for family in text_string_to_metric_families(page)
                for sample in family.samples if sample.name == "fakes_data_dir_info"] == [
            {"path": str(kept), "sync": "full"}]
    finally:
        process.terminate()
        process.communicate(timeout=30)
