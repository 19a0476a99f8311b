"""The explorer's parts without a browser: how a body is shown, how a page is peeked."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sbmgmt import Message, ReceivedMessage
from sbmgmt.explorer._message_view import MAX_HEX, BodyKind, body_view, fields_of, type_name
from sbmgmt.explorer._pages import MAX_SCANS, StateFilter, SubQueue, peek_page, queue_path
from sbmgmt.message import MessageState
from tests._waiting import wait_until


def _received(body: Any, **fields: Any) -> ReceivedMessage:
    return ReceivedMessage(body=body, sequence_number=fields.pop("sequence_number", 1),
                           **fields)


@pytest.mark.parametrize(("body", "kind"), [
    (b'  {"a": [1, 2]}', BodyKind.JSON),
    (b"[1, 2]", BodyKind.JSON),
    (b'"just a string"', BodyKind.JSON),
    (b"<a><b>1</b></a>", BodyKind.XML),
    (b"<not closed", BodyKind.TEXT),
    (b"{not json", BodyKind.TEXT),
    (b"", BodyKind.TEXT),
    ("caf\u00e9\tnew\nline".encode(), BodyKind.TEXT),
    (b"\x00\x01text", BodyKind.HEX),
    (b"\xff\xfe", BodyKind.HEX),
])
def test_the_body_is_shown_in_the_form_that_fits(body: bytes, kind: BodyKind) -> None:
    assert body_view(_received(body)).kind is kind


def test_an_xml_body_that_expands_a_billion_times_is_shown_as_text() -> None:
    levels = "".join(f'<!ENTITY e{n} "{f"&e{n - 1};" * 10}">' for n in range(1, 10))
    bomb = (f'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e0 "lol">{levels}]><x>&e9;</x>'
            ).encode()
    shown = body_view(_received(bomb))
    assert (shown.kind, shown.text) == (BodyKind.TEXT, bomb.decode())


def test_a_large_binary_body_is_dumped_in_part() -> None:
    shown = body_view(_received(bytes(MAX_HEX + 10)))
    assert shown.kind is BodyKind.HEX and shown.truncated and shown.size == MAX_HEX + 10
    assert len(shown.text.splitlines()) == MAX_HEX // 16


def test_an_amqp_value_body_is_shown_as_its_value() -> None:
    shown = body_view(_received({"k": [1, b"\x01"]}, body_type="value"))
    assert shown.kind is BodyKind.VALUE and '"k"' in shown.text and "01" in shown.text


def test_values_keep_their_type_names() -> None:
    assert [(f.name, f.value, f.type) for f in fields_of(
        {"s": "x", "n": 3, "f": 1.5, "b": True, "bin": b"\x01\x02", "none": None})] == [
        ("s", "x", "string"), ("n", "3", "long"), ("f", "1.5", "double"),
        ("b", "True", "boolean"), ("bin", "01 02", "binary"), ("none", "None", "null")]
    assert type_name(MessageState.SCHEDULED) == "enum"


class _Entity:
    """Peeks from a list of messages, counting the peeks."""

    def __init__(self, messages: list[ReceivedMessage]) -> None:
        self.messages = messages
        self.peeks = 0

    def peek_messages(self, start: int, count: int) -> list[ReceivedMessage]:
        self.peeks += 1
        return [m for m in self.messages if (m.sequence_number or 0) >= start][:count]


def _messages(count: int, scheduled_every: int = 0) -> list[ReceivedMessage]:
    return [_received(b"x", sequence_number=n, state=MessageState.SCHEDULED
                      if scheduled_every and n % scheduled_every == 0 else MessageState.ACTIVE)
            for n in range(1, count + 1)]


def test_a_page_is_one_peek_and_one_past_it_and_says_where_the_next_starts() -> None:
    entity = _Entity(_messages(120))
    page = peek_page(entity, 51, 50)  # type: ignore[arg-type]
    assert [m.sequence_number for m in page.messages] == list(range(51, 101))
    assert (page.next_start, entity.peeks) == (101, 2)
    assert peek_page(entity, 121, 50).next_start is None  # type: ignore[arg-type]


def test_a_full_last_page_has_no_next() -> None:
    """The last 50 of 100 fill a page: there is no next page to lead to "no more
    messages"."""
    page = peek_page(_Entity(_messages(100)), 51, 50)  # type: ignore[arg-type]
    assert len(page.messages) == 50 and page.next_start is None


def test_a_filtered_page_peeks_on_until_full_and_no_further() -> None:
    entity = _Entity(_messages(10_000, scheduled_every=100))
    page = peek_page(entity, 1, 5, StateFilter.SCHEDULED)  # type: ignore[arg-type]
    assert [m.sequence_number for m in page.messages] == [100, 200, 300, 400, 500]
    assert page.next_start == 501 and entity.peeks == 3  # 1-250, 251-500 and 501
    sparse = _Entity(_messages(20_000, scheduled_every=3_000))
    found = peek_page(sparse, 1, 5, StateFilter.SCHEDULED)  # type: ignore[arg-type]
    assert sparse.peeks == MAX_SCANS + 1 and found.scanned_to == MAX_SCANS * 250
    assert [m.sequence_number for m in found.messages] == [3_000]
    assert found.next_start == MAX_SCANS * 250 + 1


def test_bad_pages_are_refused() -> None:
    with pytest.raises(ValueError, match="1 to 250"):
        peek_page(_Entity([]), 1, 251)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="1 or more"):
        peek_page(_Entity([]), 0, 10)  # type: ignore[arg-type]


def test_the_dead_letter_queue_path() -> None:
    assert queue_path("t/Subscriptions/s", SubQueue.DEAD_LETTER) == (
        "t/Subscriptions/s/$DeadLetterQueue")
    assert queue_path("q", SubQueue.MAIN) == "q"


def test_a_message_model_round_trip_keeps_the_view_stable() -> None:
    message = Message(body=b'{"a": 1}')
    assert body_view(_received(message.body)).text == '{\n  "a": 1\n}'


def test_a_confirmation_is_held_once_and_the_oldest_dropped() -> None:
    from sbmgmt.explorer._held import KEPT, Held

    dropped: list[int] = []
    held: Held[int] = Held(dropped.append)
    keys = [held.put(n) for n in range(KEPT + 2)]
    assert dropped == [0, 1]
    assert held.take(keys[0]) is None
    assert held.take(keys[2]) == 2
    assert held.take(keys[2]) is None  # taken once: a second click does nothing again
    assert held.take("made-up") is None
    assert len(set(keys)) == KEPT + 2


def test_a_job_shows_the_last_progress_record_and_stops_when_cancelled() -> None:
    """The one adapter from an action's Progress records to the job page (_jobs.py)."""
    from sbmgmt.actions.contract import CancelToken, OnProgress, Progress
    from sbmgmt.explorer._jobs import Jobs

    told, finish = threading.Event(), threading.Event()

    def work(on_progress: OnProgress, cancel: CancelToken) -> str:
        on_progress(Progress(1200, None, {"moved": 1198, "failed": 2, "left": 0}))
        on_progress(Progress(1300, 5000, {"moved": 1298, "failed": 2}))
        told.set()
        finish.wait(10)
        return "moved 1298; cancelled" if cancel.cancelled else "moved all"

    job = Jobs().start("move", None, work, str)
    assert told.wait(10)
    assert (job.done, job.total, job.tally) == (1300, 5000, "moved 1,298 · failed 2")
    assert job.running and not job.stopping
    job.cancel.cancel()
    assert job.stopping
    finish.set()
    assert wait_until(lambda: not job.running)
    assert job.outcome == "moved 1298; cancelled" and not job.stopping
