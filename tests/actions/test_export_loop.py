"""The one export loop (``sbmgmt.actions.export.Exporter``) and the import, on the contract
of every long action (``sbmgmt.actions.contract``): progress records, a cancel token that
stops them between two units of work, a report that says CANCELLED and counts what was
done. Counted by MessageId and body against the fake: nothing written or sent twice,
nothing changed where the messages were read."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from fakes import FakeNamespace
from sbmgmt import ManagementClient
from sbmgmt.actions.contract import CancelToken, Outcome, Progress
from sbmgmt.actions.export import Exporter, export_entity, read_messages, write_messages
from sbmgmt.actions.import_file import import_messages
from sbmgmt.message import Message, ReceivedMessage

MESSAGES = 40


@pytest.fixture
def client(fake_namespace: FakeNamespace) -> Iterator[ManagementClient]:
    fake_namespace.send("queue", *(Message(body=f"body {n}".encode(), message_id=f"m{n}")
                                   for n in range(MESSAGES)))
    with ManagementClient.from_connection_string(fake_namespace.connection_string,
                                                 timeout=10) as mgmt:
        yield mgmt


def keys(messages: list[ReceivedMessage] | list[Message]) -> list[tuple[object, object]]:
    return [(m.message_id, m.body) for m in messages]


def test_the_loop_writes_what_write_messages_writes_and_reads_no_message_past_max_count(
        client: ManagementClient) -> None:
    peeked = list(client.entity("queue").peek_all())
    pulled: list[int] = []

    def counted() -> Iterator[ReceivedMessage]:
        for message in peeked:
            pulled.append(message.sequence_number or 0)
            yield message

    seen: list[Progress] = []
    exporter = Exporter("queue", max_count=7, on_progress=seen.append)
    out = io.StringIO()
    report = exporter.write(counted(), out)
    same = io.StringIO()
    write_messages(peeked[:7], same)
    assert out.getvalue() == same.getvalue()  # one format, one line a message
    assert len(pulled) == 7  # the loop ends at the 7th: no page more is waited for
    assert (report.exported, report.outcome, report.first_sequence_number,
            report.last_sequence_number) == (7, Outcome.FINISHED, peeked[0].sequence_number,
                                             peeked[6].sequence_number)
    assert [(p.done, dict(p.counts)) for p in seen] == [
        (n, {"exported": n}) for n in range(1, 8)]
    assert report.record() == {
        "entity": "queue", "outcome": "finished", "counts": {"exported": 7},
        "first_sequence_number": peeked[0].sequence_number,
        "last_sequence_number": peeked[6].sequence_number}
    with pytest.raises(ValueError, match="max_count"):
        Exporter("queue", max_count=0)


def test_keep_chooses_and_cancel_is_checked_on_every_message_read(
        client: ManagementClient) -> None:
    peeked = list(client.entity("queue").peek_all())
    even = [m for m in peeked if (m.sequence_number or 0) % 2 == 0]
    cancel = CancelToken()
    exporter = Exporter("queue", keep=lambda m: (m.sequence_number or 0) % 2 == 0,
                        on_progress=lambda now: now.done == 5 and cancel.cancel(),
                        cancel=cancel)
    lines = list(exporter.lines(peeked))
    assert keys(list(read_messages(lines))) == keys(even[:5])
    assert exporter.report.outcome is Outcome.CANCELLED and exporter.report.cancelled
    assert exporter.report.record()["outcome"] == "cancelled"
    assert exporter.report.counts() == {"exported": 5}


def test_export_entity_cancelled_counts_what_it_wrote_and_changes_nothing(
        client: ManagementClient, fake_namespace: FakeNamespace) -> None:
    cancel = CancelToken()
    out = io.StringIO()
    report = export_entity(client.entity("queue"), out,
                           on_progress=lambda now: now.done == 12 and cancel.cancel(),
                           cancel=cancel)
    written = list(read_messages(io.StringIO(out.getvalue())))
    assert report.cancelled and report.exported == len(written) == 12
    assert keys(written) == [(f"m{n}", f"body {n}".encode()) for n in range(12)]
    assert fake_namespace.accounting("queue")["active"] == MESSAGES


def test_an_import_cancelled_sends_each_message_at_most_once_and_says_how_many(
        client: ManagementClient, fake_namespace: FakeNamespace) -> None:
    fake_namespace.add_queue("target")
    messages = list(read_messages(_exported(client)))
    cancel = CancelToken()
    seen: list[Progress] = []

    def told(now: Progress) -> None:
        seen.append(now)
        if now.done >= 10:
            cancel.cancel()

    report = import_messages(client, "target", messages, batch_size=5, in_flight=1,
                             on_progress=told, cancel=cancel)
    arrived = list(client.entity("target").peek_all())
    assert report.outcome is Outcome.CANCELLED
    assert 10 <= report.sent == len(arrived) < MESSAGES
    assert keys(arrived) == keys(messages[:report.sent])  # in order, none twice
    assert {p.total for p in seen} == {MESSAGES}  # a list: its length is the total
    assert seen[-1].counts == {"sent": report.sent, "failed": 0, "left": 0}
    assert report.record()["counts"] == {"sent": report.sent, "failed": 0, "left": 0}
    finished = import_messages(client, "target", messages[report.sent:], batch_size=7)
    assert finished.outcome is Outcome.FINISHED and finished.sent == MESSAGES - report.sent
    assert keys(list(client.entity("target").peek_all())) == keys(messages)


def _exported(client: ManagementClient) -> io.StringIO:
    out = io.StringIO()
    export_entity(client.entity("queue"), out)
    out.seek(0)
    return out
