"""Message commands: peek, schedule, cancel, deferred receive / settle, locks renew."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated

import typer

from .._wording import counted
from ..client import EntityClient, SettleMode
from ..entity_paths import dead_letter_path
from ..errors import ScheduledMessagesNotFoundError
from ..message import Message, ReceivedMessage
from ..ops.update_disposition import DispositionStatus
from ._command import command, group
from ._exit import UsageProblem
from ._export import CountAlias, at_most
from ._input import messages_from_ndjson
from ._render import (
    DEAD_LETTER_COLUMNS,
    LOCK_TOKEN,
    LOCKED_COLUMNS,
    MESSAGE_COLUMNS,
    SEQUENCE,
    Column,
    Record,
    iso_time,
    message_record,
    outcome,
)
from ._state import CliState
from ._times import parse_time

__all__ = ["deferred", "locks", "register"]

_PAGE = 100

Entity = Annotated[str, typer.Argument(help="Entity path: QUEUE or TOPIC/Subscriptions/SUB.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print what would be done; send nothing.")]
SessionOption = Annotated[
    str | None, typer.Option("--session", help="Session id (on a session entity).")
]

deferred = group("deferred", "Deferred messages: list, export, complete or dead-letter them; "
                 "receive and settle them by sequence number.")
locks = group("locks", "Renew message locks.")


def _lock_tokens(texts: Sequence[str]) -> list[uuid.UUID]:
    tokens = []
    for text in texts:
        try:
            tokens.append(uuid.UUID(text))
        except ValueError:
            raise UsageProblem(f"{text!r} is not a lock token (a UUID)") from None
    return tokens


def peek_pages(
    entity: EntityClient, start: int, limit: int | None, session: str | None
) -> Iterator[list[ReceivedMessage]]:
    """Pages of peeked messages from ``start`` until ``limit`` (None: the end)."""
    next_sequence, remaining = start, limit
    while remaining is None or remaining > 0:
        size = _PAGE if remaining is None else min(_PAGE, remaining)
        page = entity.peek_messages(next_sequence, size, session)
        if not page:
            return
        yield page
        last = page[-1].sequence_number
        if last is None:
            return
        next_sequence = last + 1
        if remaining is not None:
            remaining -= len(page)


def peek(
    ctx: typer.Context,
    entity: Entity,
    dead_letter: Annotated[
        bool, typer.Option("--dead-letter", help="Peek the entity's dead-letter queue.")
    ] = False,
    from_sequence: Annotated[
        int, typer.Option("--from", min=0, help="First sequence number to look at.")
    ] = 1,
    max_count: Annotated[
        int | None, typer.Option("--max", min=1, show_default=False,
                                 help="At most this many messages (default 10).")
    ] = None,
    all_messages: Annotated[
        bool, typer.Option("--all", help="Every message to the end (paged).")
    ] = False,
    session: SessionOption = None,
    count: CountAlias = None,
) -> None:
    """Browse messages without locking them.

    Example: sbmgmt peek orders --dead-letter --all -o ndjson
    """
    most = at_most(max_count, count)
    if all_messages and most is not None:
        raise UsageProblem(f"give {'--max' if count is None else '--count'} or --all, not both")
    state = CliState.of(ctx)
    path = dead_letter_path(entity) if dead_letter else entity
    client = state.entity(path, requires_session=session is not None)
    limit = None if all_messages else (most or 10)

    def records() -> Iterator[Record]:
        with state.renderer.progress("peeking", limit) as advance:
            if limit is None:  # --all: several pages in flight (EntityClient.peek_all)
                for message in client.peek_all(from_sequence, session_id=session):
                    advance(1)
                    yield message_record(message)
                return
            for page in peek_pages(client, from_sequence, limit, session):
                advance(len(page))
                yield from (message_record(message) for message in page)

    where = " in the dead-letter queue" if dead_letter else ""
    state.renderer.records(
        records(), DEAD_LETTER_COLUMNS if dead_letter else MESSAGE_COLUMNS,
        empty=f"no messages from sequence number {from_sequence}{where}",
    )


def _messages_from_arguments(
    bodies: Sequence[str], files: Sequence[Path], session_id: str | None,
    subject: str | None, content_type: str | None,
) -> list[Message]:
    if bodies or files:
        payloads = [body.encode() for body in bodies] + [path.read_bytes() for path in files]
        return [
            Message(body=payload, session_id=session_id, subject=subject,
                    content_type=content_type)
            for payload in payloads
        ]
    if sys.stdin.isatty():
        raise UsageProblem("give --body, --file, or NDJSON messages on stdin")
    messages = list(messages_from_ndjson(sys.stdin))
    if not messages:
        raise UsageProblem("stdin held no messages")
    return messages


SCHEDULE_COLUMNS = (SEQUENCE, Column.time("scheduled_enqueue_time", "scheduled"))


def schedule(
    ctx: typer.Context,
    entity: Entity,
    at: Annotated[
        str, typer.Option("--at", help="When: ISO 8601, 'now', or relative (+10m, +1d).")
    ],
    body: Annotated[
        list[str] | None, typer.Option("--body", help="A message body (text); repeatable.")
    ] = None,
    file: Annotated[
        list[Path] | None,
        typer.Option("--file", exists=True, dir_okay=False,
                     help="A file whose bytes are one message body; repeatable."),
    ] = None,
    session_id: Annotated[
        str | None, typer.Option("--session-id", help="Session id of --body/--file messages.")
    ] = None,
    subject: Annotated[str | None, typer.Option(help="Subject of --body/--file messages.")] = None,
    content_type: Annotated[
        str | None, typer.Option(help="Content type of --body/--file messages.")
    ] = None,
    batch_size: Annotated[
        int, typer.Option(min=1, help="Messages per schedule request.")
    ] = 100,
) -> None:
    """Schedule messages for later; prints their sequence numbers.

    Bodies come from --body, --file, or NDJSON on stdin (one message per line:
    {"body": "text", "session_id": "s1", "application_properties": {"k": 1}}).

    Example: sbmgmt schedule orders --at +10m --body hello --body world
    """
    when = parse_time(at)
    state = CliState.of(ctx)
    messages = _messages_from_arguments(body or [], file or [], session_id, subject, content_type)
    client = state.entity(entity, requires_session=any(m.session_id for m in messages))

    def records() -> Iterator[Record]:
        with state.renderer.progress("scheduling", len(messages)) as advance:
            for start in range(0, len(messages), batch_size):
                batch = messages[start:start + batch_size]
                for sequence_number in client.schedule_messages(batch, when):
                    yield {"sequence_number": sequence_number,
                           "scheduled_enqueue_time": iso_time(when)}
                advance(len(batch))

    state.renderer.records(records(), SCHEDULE_COLUMNS)


def cancel(
    ctx: typer.Context,
    entity: Entity,
    sequence_numbers: Annotated[
        list[int], typer.Argument(min=0, help="Sequence numbers of scheduled messages.")
    ],
    dry_run: DryRun = False,
) -> None:
    """Cancel scheduled messages.

    Example: sbmgmt cancel orders 17 18 --dry-run
    """
    state = CliState.of(ctx)
    if not dry_run:
        try:
            state.entity(entity).cancel_scheduled_messages(sequence_numbers)
        except ScheduledMessagesNotFoundError as error:
            raise _not_cancelled(entity, sequence_numbers, error) from None
    numbers = ", ".join(map(str, sequence_numbers))
    state.renderer.done(
        outcome(dry_run, f"cancel the scheduled messages {numbers} of {entity}",
                f"cancelled the scheduled messages {numbers} of {entity}"),
        [{"sequence_number": n, "dry_run": dry_run} for n in sequence_numbers],
    )


def _not_cancelled(entity: str, asked: Sequence[int],
                   error: ScheduledMessagesNotFoundError) -> ScheduledMessagesNotFoundError:
    """The service's refusal, said as what happened: which numbers are not scheduled
    messages, and that the reply says nothing of the others given."""
    missing = ", ".join(map(str, error.sequence_numbers))
    others = [n for n in dict.fromkeys(asked) if n not in error.sequence_numbers]
    text = (f"not cancelled: {entity} has no scheduled message with the sequence "
            f"number{'s' * (len(error.sequence_numbers) > 1)} {missing}")
    if others:
        listed = ", ".join(map(str, others))
        verb = "was" if len(others) == 1 else "were"
        text += (f"; the reply does not say whether {listed} {verb} cancelled "
                 f"(sbmgmt peek {entity} --from {min(others)} shows what is scheduled)")
    return ScheduledMessagesNotFoundError(
        f"{text} (the service answered: {error.description})",
        sequence_numbers=error.sequence_numbers, operation=error.operation,
        status_code=error.status_code, error_condition=error.error_condition,
        description=error.description)


@command(deferred, "receive")
def deferred_receive(
    ctx: typer.Context,
    entity: Entity,
    sequence_numbers: Annotated[
        list[int], typer.Argument(min=0, help="Sequence numbers of deferred messages.")
    ],
    receive_and_delete: Annotated[
        bool, typer.Option("--receive-and-delete", help="Remove them instead of locking them.")
    ] = False,
    session: SessionOption = None,
) -> None:
    """Receive deferred messages by sequence number (locked unless --receive-and-delete).

    Example: sbmgmt deferred receive orders 3 4 -o json
    """
    state = CliState.of(ctx)
    client = state.entity(entity, requires_session=session is not None)
    mode: SettleMode = "receive_and_delete" if receive_and_delete else "peek_lock"
    received = client.receive_deferred_messages(sequence_numbers, mode, session)
    state.renderer.records((message_record(m) for m in received), LOCKED_COLUMNS)


# --status: the words people use, and the wire's own (the reference page's "suspended",
# the service's "defered"), as DispositionStatus.
_STATUSES = {
    "completed": DispositionStatus.COMPLETED,
    "abandoned": DispositionStatus.ABANDONED,
    "dead-letter": DispositionStatus.SUSPENDED,
    "deferred": DispositionStatus.DEFERED,
    "suspended": DispositionStatus.SUSPENDED,
    "defered": DispositionStatus.DEFERED,
}
_SETTLED_AS = {
    DispositionStatus.COMPLETED: "completed",
    DispositionStatus.ABANDONED: "abandoned",
    DispositionStatus.SUSPENDED: "dead-lettered",
    DispositionStatus.DEFERED: "deferred",
}


def _settle_status(text: str) -> DispositionStatus:
    try:
        return _STATUSES[text.strip().lower()]
    except KeyError:
        raise typer.BadParameter(
            f"{text!r} is not a status: use completed, abandoned, dead-letter or deferred"
        ) from None


@command(deferred, "settle")
def deferred_settle(
    ctx: typer.Context,
    entity: Entity,
    lock_tokens: Annotated[list[str], typer.Argument(help="Lock tokens (UUIDs).")],
    status: Annotated[
        DispositionStatus,
        typer.Option("--status", parser=_settle_status, metavar="STATUS",
                     help="completed, abandoned, dead-letter or deferred (the wire's "
                     "suspended and defered are accepted too)."),
    ],
    reason: Annotated[
        str | None, typer.Option(help="Dead-letter reason (with --status dead-letter).")
    ] = None,
    description: Annotated[
        str | None, typer.Option(help="Dead-letter description (with --status dead-letter).")
    ] = None,
    session: SessionOption = None,
    dry_run: DryRun = False,
) -> None:
    """Settle locked messages: complete, abandon, dead-letter or defer them.

    TOKEN: a lock token that deferred receive printed.

    Example: sbmgmt deferred settle orders $TOKEN --status completed

    Example: sbmgmt deferred settle orders $TOKEN --status dead-letter --reason x
    """
    state = CliState.of(ctx)
    tokens = _lock_tokens(lock_tokens)
    if (reason is not None or description is not None) and (
            status is not DispositionStatus.SUSPENDED):
        raise UsageProblem("--reason and --description say why a message is dead-lettered: "
                           "they go with --status dead-letter")
    if not dry_run:
        state.entity(entity, requires_session=session is not None).update_disposition(
            tokens, status, dead_letter_reason=reason, dead_letter_description=description,
            session_id=session,
        )
    count = f"{counted(len(tokens), 'message')} of {entity}"
    state.renderer.done(
        outcome(dry_run, f"settle {count} as {_SETTLED_AS[status]}",
                f"{_SETTLED_AS[status]} {count}"),
        [{"lock_token": str(t), "status": status.value, "dry_run": dry_run} for t in tokens],
    )


@command(locks, "renew")
def locks_renew(
    ctx: typer.Context,
    entity: Entity,
    lock_tokens: Annotated[list[str], typer.Argument(help="Lock tokens (UUIDs).")],
) -> None:
    """Renew message locks, many in one request; prints each new expiry.

    TOKEN: a lock token that deferred receive printed.

    Example: sbmgmt locks renew orders $TOKEN
    """
    state = CliState.of(ctx)
    tokens = _lock_tokens(lock_tokens)
    expirations = state.entity(entity).renew_message_locks(tokens)
    state.renderer.records(
        ({"lock_token": str(t), "locked_until": iso_time(e)}
         for t, e in zip(tokens, expirations, strict=True)),
        (LOCK_TOKEN, Column.time("locked_until")),
    )


def register(app: typer.Typer) -> None:
    """Add the message commands and groups to the root app."""
    command(app, "peek")(peek)
    command(app, "schedule")(schedule)
    command(app, "cancel")(cancel)
    app.add_typer(deferred)
    app.add_typer(locks)
