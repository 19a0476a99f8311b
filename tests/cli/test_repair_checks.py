"""Nothing lost by an administrator's mistake (issue 56), through the command (in this
process: :func:`~tests.cli.conftest.in_process`; the real process's exit codes are
tests/cli/test_subprocess.py's): a mistyped
or wrong target is refused before anything is locked (its own permanent exit code), a
target with duplicate detection is refused unless told what to do with the copies it would
drop, an empty or contradictory selection is refused, numbers asked for and not found are
said, and messages outside a selection come back as they were. Every case counts the
messages by MessageId and body, everywhere they could be."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from azure.servicebus import ServiceBusClient

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.export import export_entity
from sbmgmt.cli import ExitCode
from tests.actions.test_repair_sdk import receive_all

from .conftest import in_process

COUNT = 6
WINDOW = timedelta(minutes=5)
#: Every entity a message of these tests could end up in.
PLACES = ("orders", "orders/$DeadLetterQueue", "archive", "archive/$DeadLetterQueue",
          "dd", "dd/$DeadLetterQueue", "events/Subscriptions/all",
          "events/Subscriptions/all/$DeadLetterQueue")


@pytest.fixture
def fake() -> Iterator[FakeNamespace]:
    with FakeNamespace(http_port=0) as namespace:
        namespace.add_queue("orders", max_delivery_count=2)
        namespace.add_queue("archive")
        namespace.add_queue("dd", requires_duplicate_detection=True,
                            duplicate_detection_history_time_window=WINDOW)
        namespace.add_topic("events")
        namespace.add_subscription("events", "all")
        yield namespace


def _dead_letter(fake: FakeNamespace, queue: str, count: int = COUNT) -> None:
    fake.send(queue, *(Message(body=f"body {i}".encode(), message_id=f"m{i}",
                               application_properties={"k": i}) for i in range(count)))
    locked = fake.receive_and_lock(queue, count)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        client.entity(queue).update_disposition([m.lock_token for m in locked], "suspended",
                                                dead_letter_reason="Poison")


def _where(fake: FakeNamespace) -> dict[str, Counter[tuple[str, bytes]]]:
    """Every message by (MessageId, body), per entity (peeked: nothing changes)."""
    found: dict[str, Counter[tuple[str, bytes]]] = {}
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        for place in PLACES:
            messages = list(client.entity(place).peek_all())
            if messages:
                found[place] = Counter((str(m.message_id), bytes(m.body)) for m in messages)
    return found


def _deliveries(fake: FakeNamespace, place: str) -> list[int]:
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        return [m.delivery_count or 0 for m in client.entity(place).peek_all()]


def _all(count: int = COUNT) -> Counter[tuple[str, bytes]]:
    return Counter((f"m{i}", f"body {i}".encode()) for i in range(count))


def _run(fake: FakeNamespace, *args: str) -> tuple[int, str, str]:
    """``sbmgmt ARGS`` against the fake, without its HTTP port: AMQP only."""
    done = in_process(*args, conn=fake.connection_string)
    return done.returncode, done.stdout, done.stderr


def _with_http(fake: FakeNamespace, *args: str) -> tuple[int, str, str]:
    """As :func:`_run`, with the fake's HTTP port (the target's properties readable)."""
    done = in_process(*args, conn=fake.connection_string,
                      env={"EMULATOR_HTTP_PORT": str(fake.http_port)})
    return done.returncode, done.stdout, done.stderr


# ---- a mistyped or wrong target --------------------------------------------------------


def test_a_mistyped_target_is_refused_before_anything_is_locked(fake: FakeNamespace) -> None:
    _dead_letter(fake, "orders")
    before, counted = _where(fake), _deliveries(fake, "orders/$DeadLetterQueue")
    for _ in range(3):  # MaxDeliveryCount is 2: locking them each time dead-lettered them
        code, _out, err = _run(fake, "move", "orders", "archiv", "--yes")
        assert code == ExitCode.NOT_FOUND, err
        assert "'archiv'" in err and "does not exist" in err
        assert "run the command again" not in err
    code, _out, err = _run(fake, "move", "orders", "archiv", "--dead-letter", "--yes")
    assert code == ExitCode.NOT_FOUND, err
    assert _where(fake) == before == {"orders/$DeadLetterQueue": _all()}
    assert _deliveries(fake, "orders/$DeadLetterQueue") == counted  # none locked since


def test_a_mistyped_source_is_not_found(fake: FakeNamespace) -> None:
    code, _out, err = _run(fake, "resubmit", "ordrs", "--yes")
    assert code == ExitCode.NOT_FOUND, err


@pytest.mark.parametrize("target", ["events/Subscriptions/all", "events/all",
                                    "orders/$DeadLetterQueue", "archive/$DeadLetterQueue"])
def test_import_to_a_subscription_or_a_dead_letter_queue_is_refused(
        fake: FakeNamespace, tmp_path: Path, target: str) -> None:
    file = _exported(fake, tmp_path)
    code, _out, err = _run(fake, "import", str(file), target, "--yes")
    assert code == ExitCode.WRONG_ENTITY, err
    assert _where(fake) == {"orders": _all()}


def test_import_to_a_missing_entity_is_not_found(fake: FakeNamespace, tmp_path: Path) -> None:
    file = _exported(fake, tmp_path)
    code, _out, err = _run(fake, "import", str(file), "ordrs", "--dry-run")
    assert code == ExitCode.NOT_FOUND, err
    assert _where(fake) == {"orders": _all()}


def _exported(fake: FakeNamespace, tmp_path: Path) -> Path:
    fake.send("orders", *(Message(body=f"body {i}".encode(), message_id=f"m{i}")
                          for i in range(COUNT)))
    file = tmp_path / "orders.jsonl"
    with ManagementClient.from_connection_string(fake.connection_string) as client, \
            file.open("w", encoding="utf-8") as out:
        export_entity(client.entity("orders"), out)
    return file


@pytest.mark.parametrize(("source", "target"), [
    ("orders", "orders"), ("orders", "ORDERS"), ("orders", "events/all"),
    ("orders", "orders/$DeadLetterQueue"),
])
def test_move_to_itself_a_subscription_or_a_dead_letter_queue_is_refused(
        fake: FakeNamespace, source: str, target: str) -> None:
    fake.send("orders", *(Message(body=f"body {i}".encode(), message_id=f"m{i}")
                          for i in range(COUNT)))
    code, _out, err = _run(fake, "move", source, target, "--yes")
    assert code == ExitCode.WRONG_ENTITY, err
    assert _where(fake) == {"orders": _all()}
    assert _deliveries(fake, "orders") == [0] * COUNT


def test_the_short_topic_sub_form_works_for_a_source(fake: FakeNamespace) -> None:
    fake.send("events", *(Message(body=f"body {i}".encode(), message_id=f"m{i}")
                          for i in range(COUNT)))
    code, out, err = _run(fake, "-o", "json", "move", "events/all", "archive", "--yes")
    assert code == ExitCode.OK, err
    assert json.loads(out)["source"] == "events/Subscriptions/all"
    assert _where(fake) == {"archive": _all()}


def test_resubmit_of_a_subscription_s_dead_letters_is_a_wrong_entity(
        fake: FakeNamespace) -> None:
    """``events/all`` is read as the subscription (not an error of the path); its dead
    letters cannot go back to it: a wrong entity, and nothing is locked."""
    fake.send("events", *(Message(body=f"body {i}".encode(), message_id=f"m{i}")
                          for i in range(COUNT)))
    locked = fake.receive_and_lock("events/Subscriptions/all", COUNT)
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        client.entity("events/Subscriptions/all").update_disposition(
            [m.lock_token for m in locked], "suspended", dead_letter_reason="Poison")
    code, _out, err = _run(fake, "resubmit", "events/all", "--yes")
    assert code == ExitCode.WRONG_ENTITY, err
    assert "came from the subscription 'events/Subscriptions/all'" in err
    assert _where(fake) == {"events/Subscriptions/all/$DeadLetterQueue": _all()}


# ---- the selection ---------------------------------------------------------------------


def test_an_empty_time_range_is_refused(fake: FakeNamespace) -> None:
    _dead_letter(fake, "orders")
    code, _out, err = _run(fake, "resubmit", "orders", "--before", "-1d", "--after", "now",
                           "--yes")
    assert code == ExitCode.BAD_ARGUMENTS, err
    assert "no time is both" in err
    assert _where(fake) == {"orders/$DeadLetterQueue": _all()}


def test_numbers_not_found_are_said_in_the_table(fake: FakeNamespace) -> None:
    _dead_letter(fake, "orders")
    code, out, err = _run(fake, "resubmit", "orders", "-s", "424242", "--yes")
    assert code == ExitCode.OK, err
    assert "424242" in out
    code, out, err = _run(fake, "-o", "json", "resubmit", "orders", "-s", "424242", "-s", "2",
                          "--yes")
    assert code == ExitCode.OK, err
    summary = json.loads(out)
    assert summary["not_in_source"] == [424242] and summary["moved"] == 1
    assert _where(fake) == {"orders": Counter({("m1", b"body 1"): 1}),
                            "orders/$DeadLetterQueue": _all() - Counter({("m1", b"body 1"): 1})}


def test_json_has_one_shape_whatever_happened(fake: FakeNamespace) -> None:
    _dead_letter(fake, "orders", 2)
    nothing = json.loads(_run(fake, "-o", "json", "move", "orders", "archive", "--yes")[1])
    something = json.loads(_run(fake, "-o", "json", "move", "orders", "archive",
                                "--dead-letter", "--yes")[1])
    assert isinstance(nothing, dict) and isinstance(something, dict)
    assert set(nothing) == set(something)
    assert (nothing["planned"], something["planned"]) == (0, 2)


# ---- duplicate detection ---------------------------------------------------------------


def test_resubmit_into_duplicate_detection_is_refused_by_default(fake: FakeNamespace) -> None:
    _dead_letter(fake, "dd")
    counted = _deliveries(fake, "dd/$DeadLetterQueue")
    code, out, err = _with_http(fake, "resubmit", "dd", "--dry-run", "-o", "json")
    assert code == ExitCode.OK, err
    assert {row["message_id"]: row["may_be_dropped"] for row in json.loads(out)} == {
        f"m{i}": True for i in range(COUNT)}
    code, _out, err = _with_http(fake, "resubmit", "dd", "--yes")
    assert code == ExitCode.DUPLICATES, err
    assert "dd detects duplicates" in err and "m0" in err
    assert _where(fake) == {"dd/$DeadLetterQueue": _all()}
    assert _deliveries(fake, "dd/$DeadLetterQueue") == counted  # nothing locked since


def test_without_the_administration_api_it_says_so(fake: FakeNamespace) -> None:
    _dead_letter(fake, "orders")
    code, _out, err = _run(fake, "resubmit", "orders", "--dry-run")
    assert code == ExitCode.OK, err
    assert "duplicate detection of orders was not read" in err
    assert "--if-duplicate new-id" in err


def test_new_ids_keep_every_message_and_the_sdk_receives_them(fake: FakeNamespace) -> None:
    _dead_letter(fake, "dd")
    code, out, err = _with_http(fake, "-o", "json", "resubmit", "dd", "--if-duplicate",
                                "new-id", "--yes")
    assert code == ExitCode.OK, err
    summary = json.loads(out)
    assert summary["moved"] == COUNT and len(summary["new_message_ids"]) == COUNT
    with ServiceBusClient.from_connection_string(fake.connection_string) as sdk:
        received = receive_all(sdk, "dd", COUNT + 1)  # one more: a double would come
    arrived = Counter((m.application_properties[b"OriginalMessageId"].decode(), str(m).encode())
                      for m in received)
    assert arrived == _all()  # each once, none lost, none doubled
    assert {str(m.message_id) for m in received} == set(summary["new_message_ids"].values())
    assert _where(fake) == {}  # nothing left behind, nothing dead-lettered


def test_leave_moves_only_what_the_target_keeps(fake: FakeNamespace) -> None:
    _dead_letter(fake, "dd")
    code, out, err = _with_http(fake, "-o", "json", "move", "dd", "archive", "--dead-letter",
                                "--yes")
    assert code == ExitCode.OK, err  # archive does not detect duplicates: nothing at risk
    assert json.loads(out)["duplicate_detection"] == {"archive": False}
    assert _where(fake) == {"archive": _all()}
    code, out, err = _with_http(fake, "-o", "json", "move", "archive", "dd", "--if-duplicate",
                                "leave", "--yes")
    assert code == ExitCode.OK, err
    assert json.loads(out)["left"] == list(range(1, COUNT + 1))
    assert _where(fake) == {"archive": _all()}
    assert _deliveries(fake, "archive") == [0] * COUNT  # given back: released


def test_send_as_they_are_reports_what_the_service_may_have_dropped(
        fake: FakeNamespace) -> None:
    _dead_letter(fake, "dd", 2)
    code, out, err = _with_http(fake, "resubmit", "dd", "--if-duplicate", "send", "--yes")
    assert code == ExitCode.OK, err
    assert "2 sent with a MessageId the target may have seen" in out


def test_import_into_duplicate_detection_is_refused_then_renamed(
        fake: FakeNamespace, tmp_path: Path) -> None:
    file = _exported(fake, tmp_path)
    code, _out, err = _with_http(fake, "import", str(file), "dd", "--yes")
    assert code == ExitCode.DUPLICATES, err
    assert _where(fake) == {"orders": _all()}
    code, out, err = _with_http(fake, "-o", "json", "import", str(file), "dd",
                                "--if-duplicate", "new-id", "--yes")
    assert code == ExitCode.OK, err
    assert json.loads(out)["sent"] == COUNT
    with ManagementClient.from_connection_string(fake.connection_string) as client:
        copies = list(client.entity("dd").peek_all())
    assert Counter((m.application_properties["OriginalMessageId"], bytes(m.body))
                   for m in copies) == _all()


# ---- messages outside the selection ----------------------------------------------------


def test_messages_not_selected_come_back_unchanged(fake: FakeNamespace) -> None:
    fake.send("orders", *(Message(body=f"body {i}".encode(), message_id=f"m{i}",
                                  application_properties={"k": i}) for i in range(COUNT)))
    code, _out, err = _run(fake, "move", "orders", "archive", "--where", f"k = {COUNT - 1}",
                           "--dry-run")
    assert code == ExitCode.OK, err
    assert f"{COUNT - 1} other messages of orders" in err  # said before the run
    for _ in range(3):  # MaxDeliveryCount is 2: were it a delivery, they would be dead letters
        code, _out, err = _run(fake, "move", "orders", "archive", "--where",
                               f"k = {COUNT - 1}", "--yes")
        assert code == ExitCode.OK, err
    last = Counter({(f"m{COUNT - 1}", f"body {COUNT - 1}".encode()): 1})
    assert _where(fake) == {"orders": _all() - last, "archive": last}
    assert _deliveries(fake, "orders") == [0] * (COUNT - 1)


def test_a_batch_past_a_transactions_100_is_refused_in_words(fake: FakeNamespace) -> None:
    """``--batch-size`` up to 1,000 is for runs without transactions: with them, more than
    the service's 100 messages a transaction is refused before anything is locked."""
    _dead_letter(fake, "orders")
    before = _where(fake)
    code, _out, err = _run(fake, "move", "orders", "archive", "--dead-letter",
                           "--batch-size", "500", "--yes")
    assert code == ExitCode.BAD_ARGUMENTS, err
    assert "at most 100 messages in a transaction" in err and "Error" not in err
    assert _where(fake) == before
    code, _out, err = _run(fake, "move", "orders", "archive", "--dead-letter",
                           "--batch-size", "500", "--no-transaction", "--yes")
    assert code == ExitCode.OK, err
    assert _where(fake) == {"archive": _all()}
