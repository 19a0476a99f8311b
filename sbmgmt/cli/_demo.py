"""A readable tour of every management operation.

With no connection string it starts the embedded fake namespace and runs the whole
tour (it writes: sends, schedules, settles, changes rules). With a connection string
it runs only the read-only part against that namespace: peeks of an entity and its
dead-letter queue, its sessions and, for a subscription, its rules.
"""

from __future__ import annotations

import contextlib
import io
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from rich.console import Console

from .._wording import counted
from ..actions.export import write_messages
from ..actions.repair import plan_resubmit, repair
from ..auth import parse_connection_string
from ..client import EntityClient, ManagementClient
from ..entity_paths import dead_letter_path
from ..errors import OperationError
from ..message import Message, ReceivedMessage, id_text
from ..ops.update_disposition import DispositionStatus
from ..rules import CorrelationFilter, SqlFilter, SqlRuleAction
from ._render import (
    DEAD_LETTER_COLUMNS,
    MESSAGE_COLUMNS,
    RULE_COLUMNS,
    iso_time,
    message_record,
    rule_record,
    table,
    table_time,
)

if TYPE_CHECKING:
    from fakes import FakeNamespace

__all__ = ["EXPLORER_HINT", "run_demo"]

QUEUE = "orders"
SESSION_QUEUE = "conversations"
TOPIC = "events"
SUBSCRIPTION = f"{TOPIC}/Subscriptions/audit"


def run_demo(
    connection_string: str | None, console: Console | None = None, *, entity: str | None = None
) -> None:
    """Run the tour: the full one on the embedded fake, read-only on a real namespace."""
    console = console or Console()
    if connection_string:
        path = entity or parse_connection_string(connection_string).entity_path
        with ManagementClient.from_connection_string(connection_string) as client:
            _read_only_tour(client, console, path)
        return
    from fakes import FakeNamespace

    with FakeNamespace(http_port=0) as fake:
        fake.add_queue(QUEUE, lock_duration=timedelta(seconds=30))
        fake.add_queue(SESSION_QUEUE, requires_session=True)
        fake.add_topic(TOPIC)
        fake.add_subscription(TOPIC, "audit")
        console.rule("[bold]sbmgmt demo[/] — embedded fake namespace")
        console.print(f"fake namespace listening on {fake.host}:{fake.port}")
        with ManagementClient.from_connection_string(fake.connection_string) as client:
            _full_tour(fake, client, console)


def _read_only_tour(client: ManagementClient, console: Console, path: str | None) -> None:
    if not path:
        raise ValueError("name the entity to look at (EntityPath in the connection string)")
    console.rule(f"[bold]sbmgmt demo[/] — read-only tour of {path}")
    target = client.entity(path)
    with _step(console, f"peek the first 10 messages of {path}"):
        _show_messages(console, target.peek_messages(from_sequence_number=0, max_count=10))
    with _step(console, "peek its dead-letter queue"):
        dlq = client.entity(dead_letter_path(path))
        _show_messages(console, dlq.peek_messages(from_sequence_number=0, max_count=10),
                       dead_letter=True)
    with _step(console, "list its sessions"):
        console.print(", ".join(target.list_sessions()) or "(no sessions)")
    if "/subscriptions/" in path.lower():
        with _step(console, "list the subscription's rules"):
            _show_rules(console, target)


def _full_tour(fake: FakeNamespace, client: ManagementClient, console: Console) -> None:
    queue = client.entity(QUEUE)
    send, lock = fake.send, fake.receive_and_lock

    with _step(console, f"send 6 messages to {QUEUE!r} (through the fake)"):
        send(QUEUE, *(Message(body=f"order #{i}".encode(), message_id=f"order-{i}",
                              subject="order", application_properties={"n": i})
                      for i in range(1, 7)))

    with _step(console, "schedule 2 messages for an hour from now"):
        at = datetime.now(timezone.utc) + timedelta(hours=1)
        scheduled = queue.schedule_messages(
            [Message(body=b"reminder", subject="later"), Message(body=b"follow-up")], at
        )
        console.print(f"sequence numbers: {', '.join(map(str, scheduled))}")

    with _step(console, "peek the queue: active and scheduled messages"):
        _show_messages(console, queue.peek_messages(from_sequence_number=0, max_count=20))

    with _step(console, "lock 4 messages, then renew all 4 locks in ONE request"):
        locked = lock(QUEUE, 4)
        tokens = [m.lock_token for m in locked if m.lock_token is not None]
        for token, expiry in zip(tokens, queue.renew_message_locks(tokens), strict=True):
            console.print(f"lock {token} now held until {_when(expiry)}")

    with _step(console, "defer 2 of them, then receive the deferred messages by sequence number"):
        queue.update_disposition(tokens[:2], DispositionStatus.DEFERED)
        deferred = queue.receive_deferred_messages(
            [m.sequence_number for m in locked[:2] if m.sequence_number is not None])
        _show_messages(console, deferred)

    with _step(console, "complete the deferred messages with update-disposition"):
        queue.update_disposition([m.lock_token for m in deferred if m.lock_token is not None],
                                 DispositionStatus.COMPLETED)
        console.print(f"completed {len(deferred)} messages")

    with _step(console, "dead-letter one message and peek the dead-letter queue"):
        queue.update_disposition(tokens[2:3], DispositionStatus.SUSPENDED,
                                 dead_letter_reason="demo", dead_letter_description="shown")
        dlq = client.entity(dead_letter_path(QUEUE))
        _show_messages(console, dlq.peek_messages(from_sequence_number=0, max_count=10),
                       dead_letter=True)

    with _step(console, "the administrator's loop: find the dead letters, export them, "
                        "resubmit them"):
        _administrators_loop(client, console)

    with _step(console, "cancel the scheduled messages"):
        queue.cancel_scheduled_messages(scheduled)
        remaining = queue.peek_messages(from_sequence_number=0, max_count=20)
        still = sum(m.scheduled_enqueue_time is not None for m in remaining)
        console.print(f"cancelled {len(scheduled)}; {len(remaining)} messages left to peek, "
                      f"{still or 'none'} of them scheduled")

    sessions = client.entity(SESSION_QUEUE)
    with _step(console, "sessions: send, lock one, set/get its state, renew its lock"):
        send(SESSION_QUEUE, *(Message(body=b"hello", session_id=sid, message_id=str(uuid.uuid4()))
                              for sid in ("alice", "bob", "carol")))
        with sessions.session("alice") as alice:  # this client locks the session itself
            alice.set_state(b'{"step": 2}')
            console.print(f"state of 'alice': {_state_text(alice.get_state())}")
            console.print(f"session lock renewed until {_when(alice.renew_lock())}")
            alice.set_state(None)
            console.print(f"state after clearing: {_state_text(alice.get_state())}")

    with _step(console, "list the sessions"):
        console.print(", ".join(sessions.list_sessions()))
        _show_messages(console, sessions.peek_messages(from_sequence_number=0, max_count=5,
                                                       session_id="bob"))

    subscription = client.entity(SUBSCRIPTION)
    with _step(console, f"rules on {SUBSCRIPTION!r}: add, list, remove"):
        subscription.add_rule("big-orders", SqlFilter(expression="amount > 100"),
                              SqlRuleAction(expression="SET priority = 'high'"))
        subscription.add_rule("from-eu", CorrelationFilter(subject="order",
                                                           properties={"region": "eu"}))
        _show_rules(console, subscription)
        subscription.remove_rule("big-orders")
        console.print("removed 'big-orders'")
        _show_rules(console, subscription)

    with _step(console, "message counts of every entity, from the administration API"):
        _show_counts(fake, console)

    with _step(console, "errors are typed: renew a lock that is gone"):
        try:
            queue.renew_message_locks([uuid.uuid4()])
        except OperationError as exc:
            console.print(f"{type(exc).__name__}: {exc}")

    console.rule("[bold green]tour complete")
    console.print(EXPLORER_HINT)


#: The demo's last line: what the README promises after it.
EXPLORER_HINT = "next: .venv/bin/sbmgmt --emulator explore opens the explorer in the browser"


def _administrators_loop(client: ManagementClient, console: Console) -> None:
    """Dead letters found, exported (a JSON line each, the export format) and resubmitted to
    where they came from: the actions the CLI's ``export`` and ``resubmit`` and the explorer
    call, each line with the command that does the same."""
    source = dead_letter_path(QUEUE)
    dead = list(client.entity(source).peek_all())
    found = ", ".join(f"{id_text(m.message_id or '')} ({m.dead_letter_reason})" for m in dead)
    console.print(f"found {counted(len(dead), 'dead letter')}: {found} "
                  f"(sbmgmt peek {QUEUE} --dead-letter)")
    exported = io.StringIO()
    lines = write_messages(dead, exported)
    console.print(f"exported {counted(lines, 'JSON line')}, {len(exported.getvalue())} bytes "
                  f"(sbmgmt export {QUEUE} --dead-letter)")
    report = repair(client, plan_resubmit(client, source))
    console.print(f"resubmitted {len(report.moved)} of {report.planned} to {QUEUE} "
                  f"(sbmgmt resubmit {QUEUE} --yes)")
    left = client.entity(source).peek_messages(from_sequence_number=1, max_count=10)
    console.print(f"dead letters left: {len(left) or 'none'}")


@contextlib.contextmanager
def _step(console: Console, title: str) -> Iterator[None]:
    console.print()
    console.print(f"[bold cyan]▶ {title}[/]")
    yield


def _when(moment: datetime) -> str:
    """A time as the CLI's tables show it: ``2026-11-26 09:30:00 UTC``."""
    return f"{table_time(iso_time(moment))} UTC"


def _state_text(state: bytes | None) -> str:
    """A session state as text when it is UTF-8, else its size; ``(none)`` when cleared."""
    if state is None:
        return "(none)"
    try:
        return state.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(state)} bytes>"


def _show_messages(console: Console, messages: Sequence[ReceivedMessage], *,
                   dead_letter: bool = False) -> None:
    """The messages as ``sbmgmt peek`` (``--dead-letter``) shows them."""
    if not messages:
        console.print("(no messages)")
        return
    columns = DEAD_LETTER_COLUMNS if dead_letter else MESSAGE_COLUMNS
    console.print(table([message_record(m) for m in messages], columns, console.width))


def _show_counts(fake: FakeNamespace, console: Console) -> None:
    """What ``sbmgmt entities`` lists: azure-servicebus's administration client on the fake's
    HTTP port (the admin extra; without it, say so)."""
    from ._entities import entity_columns, entity_records, plain_http_transport

    try:
        transport = plain_http_transport()
    except ImportError as missing:
        console.print(f"(skipped: {missing})")
        return
    from azure.servicebus.management import ServiceBusAdministrationClient

    assert fake.http_connection_string is not None  # the tour's fake opens its HTTP port
    with ServiceBusAdministrationClient.from_connection_string(
            fake.http_connection_string, transport=transport) as admin:
        records = entity_records(admin)
    console.print(table(records, entity_columns(console.width)))


def _show_rules(console: Console, entity: EntityClient) -> None:
    """The rules as ``sbmgmt rules list`` shows them."""
    console.print(table([rule_record(rule) for rule in entity.list_rules()], RULE_COLUMNS))
