"""Deferred messages: find them, list them a page at a time, and settle a selection.

A deferred message is received only by its sequence number; a consumer that lost the
number leaves it in the entity for good. This action finds them with a whole-entity
peek (``peek_all``: pages in flight) that keeps the messages whose
``x-opt-message-state`` is deferred, and settles a selection of them: each batch of
sequence numbers is locked with receive-by-sequence-number, then completed, abandoned
(back to deferred) or dead-lettered with update-disposition, several batches in flight.
What it finds can be written in the export format (:func:`export_deferred`).

Theory of operation
-------------------
*Finding* reads the entity once, in sequence-number order; what ``peek_all`` promises
holds here: every message that is deferred for the whole read is found once, one
deferred (or settled) while the read runs may or may not be. Nothing is changed by it.

*Settling* groups the selection by session, cuts each group into batches of
``batch_size`` numbers and runs a batch as a small sans-I/O coroutine
(:func:`_batch_steps`): it yields the requests to make (receive these numbers, settle
these lock tokens) and is sent back each reply or error, so that the blocking driver
(:func:`settle_deferred`, batches on a thread pool of ``in_flight`` threads over the
sync client, which pipelines them on its one connection) and the asyncio driver
(:func:`settle_deferred_async`, ``in_flight`` tasks) share every decision. The
settlement's order of work is another such generator (:func:`_order`: the probe below,
the batches on the entity, each session's lock taken, its batches, its lock released);
both generators run under :func:`~sbmgmt.actions.contract.drive` or
:func:`~sbmgmt.actions.contract.drive_async`, which only make the
calls each step asks for. What they decide:

- receive-by-sequence-number fails as a whole when one of its numbers is not a
  deferred message any more (settled, expired, or locked by another receiver: the
  service's ``com.microsoft:message-not-found``); the batch is then halved and each
  half asked again, down to single numbers, so every number ends in exactly one of
  ``settled``, ``not_found`` or ``failed``, counted by sequence number;
- any other refusal or a lost reply fails the batch's numbers with the error's text
  (a receive whose reply was lost may have locked them: the locks expire and the
  messages are deferred again; a settlement whose reply was lost may or may not have
  been applied: ``failed`` says so);
- cancellation (``cancel``) is checked before each batch starts: batches in flight
  finish, the others are counted in ``not_attempted``.

A batch's message locks are held for one round trip (received, then settled at once),
far inside any lock duration; what is held long is a session's lock (below), which a
lock renewer keeps alive.

On a session entity a session's deferred messages are locked only by the holder of the
session's lock (the service answers session-lock-lost otherwise). The selection's
messages carry their session id; when the entity is not known to require sessions the
first batch of a session's messages is tried without the lock, and a session-lock-lost
answer switches the whole run to sessions. Each session is then locked with the
client's own session lock (``q.session(id)``) for the time its batches take, kept alive
by a lock renewer, and released before the next session.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from ..aio import AsyncEntityClient
from ..client import EntityClient
from ..errors import (
    NotFoundError,
    ServiceBusManagementError,
    SessionLockLostError,
)
from ..message import MessageState, ReceivedMessage
from ..ops import update_disposition
from ..renewer import AsyncLockRenewer, LockRenewer
from .contract import drive, drive_async
from .export import ExportReport, write_messages

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_IN_FLIGHT",
    "DeferredAction",
    "DeferredPage",
    "DeferredProgress",
    "DeferredReport",
    "deferred_page",
    "deferred_page_async",
    "export_deferred",
    "export_deferred_async",
    "find_deferred",
    "find_deferred_async",
    "settle_deferred",
    "settle_deferred_async",
]

DEFAULT_BATCH_SIZE = 100
"""Sequence numbers per receive-by-sequence-number (and lock tokens per update-disposition)."""

DEFAULT_IN_FLIGHT = 16
"""Batches worked on at once (each is a receive, then a settlement)."""

_MESSAGE_NOT_FOUND = "com.microsoft:message-not-found"


Selection = Iterable[ReceivedMessage | int]
"""What to settle: messages as :func:`find_deferred` gave them (their session id is used on
a session entity), or bare sequence numbers (of messages without a session)."""


class DeferredAction(str, enum.Enum):
    """What to do with the selected deferred messages."""

    COMPLETE = "complete"
    """Remove them (update-disposition ``completed``)."""
    ABANDON = "abandon"
    """Unlock them: they stay deferred, with one more delivery counted (``abandoned``)."""
    DEAD_LETTER = "dead_letter"
    """Move them to the dead-letter queue with a reason (``suspended``)."""

    @property
    def status(self) -> update_disposition.DispositionStatus:
        """The update-disposition status that does it."""
        return _STATUS[self]

    @property
    def past_tense(self) -> str:
        """``completed``, ``abandoned`` or ``dead-lettered``."""
        return _PAST[self]


_STATUS = {
    DeferredAction.COMPLETE: update_disposition.DispositionStatus.COMPLETED,
    DeferredAction.ABANDON: update_disposition.DispositionStatus.ABANDONED,
    DeferredAction.DEAD_LETTER: update_disposition.DispositionStatus.SUSPENDED,
}
_PAST = {DeferredAction.COMPLETE: "completed", DeferredAction.ABANDON: "abandoned",
         DeferredAction.DEAD_LETTER: "dead-lettered"}


@dataclass(frozen=True)
class DeferredPage:
    """One page of an entity's deferred messages.

    Attributes:
        messages: Up to the page's size of deferred messages, in sequence-number order
            (peeked: no lock tokens).
        next_sequence_number: Where the next page starts; None when the entity holds no
            more deferred messages past this page.
    """

    messages: list[ReceivedMessage]
    next_sequence_number: int | None


@dataclass(frozen=True)
class DeferredProgress:
    """How far a settlement is, as passed to the ``progress`` callback after each batch.

    Attributes:
        total: The sequence numbers selected.
        settled: Those settled so far.
        not_found: Those that were not (or no longer) deferred messages, so far.
        failed: Those that failed otherwise, so far.
    """

    total: int
    settled: int
    not_found: int
    failed: int

    @property
    def done(self) -> int:
        """The numbers dealt with so far, whatever became of them."""
        return self.settled + self.not_found + self.failed


@dataclass
class DeferredReport:
    """Exactly what a settlement did, by sequence number.

    Attributes:
        action: What was asked.
        entity: The entity's path.
        settled: The sequence numbers completed, abandoned or dead-lettered, as asked.
        not_found: Those that were not deferred messages of the entity when their batch
            ran (settled or expired meanwhile, or locked by another receiver).
        failed: Those that failed otherwise, each with the error's text; a settlement
            whose reply was lost may have been applied (the text says so).
        not_attempted: Those not started because the run was cancelled.
        sessions: The sessions locked to settle their messages (a session entity).
        cancelled: Whether the run was cancelled before the end.
    """

    action: DeferredAction
    entity: str
    settled: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    not_attempted: list[int] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    cancelled: bool = False

    @property
    def total(self) -> int:
        """Every selected sequence number (each is in exactly one of the lists)."""
        return (len(self.settled) + len(self.not_found) + len(self.failed)
                + len(self.not_attempted))

    def _snapshot(self, total: int) -> DeferredProgress:
        """The counts so far, as the ``progress`` callback gets them."""
        return DeferredProgress(total, len(self.settled), len(self.not_found), len(self.failed))

    def _add(self, outcome: _Outcome) -> None:
        self.settled.extend(outcome.settled)
        self.not_found.extend(outcome.not_found)
        self.failed.update(outcome.failed)


# ---- finding --------------------------------------------------------------------------


def _is_deferred(message: ReceivedMessage) -> bool:
    return message.state is MessageState.DEFERRED


def find_deferred(
    entity: EntityClient, from_sequence_number: int = 1, *, session_id: str | None = None,
    page_size: int = 250, pages_in_flight: int = 32,
) -> Iterator[ReceivedMessage]:
    """Every deferred message of the entity, in sequence-number order, without locking.

    One whole-entity peek with pages in flight
    ([EntityClient.peek_all][sbmgmt.EntityClient.peek_all]) keeps the messages whose
    state is deferred. A message deferred or settled while the read runs may or may not
    be found; every message deferred for the whole read is found once.

    Args:
        entity: The queue or subscription (its dead-letter queue too).
        from_sequence_number: The first sequence number to look at.
        session_id: Only this session's messages; None: every message of the entity.
        page_size: Messages per peek request (1 to 250).
        pages_in_flight: Peek requests kept on the wire at once.

    Returns:
        An iterator over the deferred messages (peeked: no lock tokens).

    Raises:
        ValueError: ``page_size`` or ``pages_in_flight`` out of range, or a negative
            ``from_sequence_number`` (at once).
        sbmgmt.errors.ServiceBusManagementError: From the iterator: a page failed, as for
            ``peek_all``.
    """
    messages = entity.peek_all(from_sequence_number, page_size=page_size,
                               pages_in_flight=pages_in_flight, session_id=session_id)
    return filter(_is_deferred, messages)


async def find_deferred_async(
    entity: AsyncEntityClient, from_sequence_number: int = 1, *,
    session_id: str | None = None, page_size: int = 250, pages_in_flight: int = 32,
) -> AsyncGenerator[ReceivedMessage, None]:
    """[find_deferred][sbmgmt.actions.deferred.find_deferred] on the asyncio client.

    Args:
        entity: The queue or subscription (its dead-letter queue too).
        from_sequence_number: The first sequence number to look at.
        session_id: Only this session's messages; None: every message of the entity.
        page_size: Messages per peek request (1 to 250).
        pages_in_flight: Peek requests kept on the wire at once.

    Returns:
        An async iterator over the deferred messages (peeked: no lock tokens).

    Raises:
        ValueError: ``page_size`` or ``pages_in_flight`` out of range, or a negative
            ``from_sequence_number``.
        sbmgmt.errors.ServiceBusManagementError: A page failed, as for ``peek_all``.
    """
    async for message in entity.peek_all(from_sequence_number, page_size=page_size,
                                         pages_in_flight=pages_in_flight,
                                         session_id=session_id):
        if _is_deferred(message):
            yield message


def _page_size(max_count: int) -> int:
    if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 1:
        raise ValueError(f"max_count must be a positive int, got {max_count!r}")
    return max_count


def _page(found: list[ReceivedMessage], max_count: int) -> DeferredPage:
    if len(found) < max_count:
        return DeferredPage(found, None)
    last = found[-1].sequence_number
    return DeferredPage(found, None if last is None else last + 1)


def deferred_page(
    entity: EntityClient, from_sequence_number: int = 1, max_count: int = 100, *,
    session_id: str | None = None,
) -> DeferredPage:
    """A page of the entity's deferred messages (for a browser's table, say).

    The entity is read from ``from_sequence_number`` until ``max_count`` deferred messages
    are found or it ends; the next page starts at ``next_sequence_number``.

    Args:
        entity: The queue or subscription.
        from_sequence_number: Where the page starts (a previous page's
            ``next_sequence_number``).
        max_count: The most messages on the page (1 or more).
        session_id: Only this session's messages; None: every message of the entity.

    Returns:
        The page: [DeferredPage][sbmgmt.actions.deferred.DeferredPage].

    Raises:
        ValueError: ``max_count`` below 1, or a negative ``from_sequence_number``.
        sbmgmt.errors.ServiceBusManagementError: A peek failed, as for ``peek_all``.
    """
    count = _page_size(max_count)
    found: list[ReceivedMessage] = []
    for message in find_deferred(entity, from_sequence_number, session_id=session_id):
        found.append(message)
        if len(found) == count:
            break
    return _page(found, count)


async def deferred_page_async(
    entity: AsyncEntityClient, from_sequence_number: int = 1, max_count: int = 100, *,
    session_id: str | None = None,
) -> DeferredPage:
    """[deferred_page][sbmgmt.actions.deferred.deferred_page] on the asyncio client.

    Args:
        entity: The queue or subscription.
        from_sequence_number: Where the page starts (a previous page's
            ``next_sequence_number``).
        max_count: The most messages on the page (1 or more).
        session_id: Only this session's messages; None: every message of the entity.

    Returns:
        The page: [DeferredPage][sbmgmt.actions.deferred.DeferredPage].

    Raises:
        ValueError: ``max_count`` below 1, or a negative ``from_sequence_number``.
        sbmgmt.errors.ServiceBusManagementError: A peek failed, as for ``peek_all``.
    """
    count = _page_size(max_count)
    found: list[ReceivedMessage] = []
    messages = find_deferred_async(entity, from_sequence_number, session_id=session_id)
    async for message in messages:
        found.append(message)
        if len(found) == count:
            break
    await messages.aclose()
    return _page(found, count)


# ---- exporting --------------------------------------------------------------------------


class _Export:
    """Writes the found messages one line each, counting them, until ``max_count``."""

    def __init__(self, out: IO[str], max_count: int | None,
                 progress: Callable[[int], None] | None) -> None:
        if max_count is not None:
            _page_size(max_count)
        self._out = out
        self._max_count = max_count
        self._progress = progress
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None

    def write(self, message: ReceivedMessage) -> bool:
        """Write one message; whether more are wanted."""
        write_messages((message,), self._out)
        self.count += 1
        self.first = message.sequence_number if self.first is None else self.first
        self.last = message.sequence_number
        if self._progress is not None:
            self._progress(self.count)
        return self.count != self._max_count

    def report(self, path: str) -> ExportReport:
        return ExportReport(path, self.count, self.first, self.last)


def export_deferred(
    entity: EntityClient, out: IO[str], *, from_sequence_number: int = 1,
    max_count: int | None = None, session_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """Write the entity's deferred messages in the export format (docs/export-format.md).

    The messages [find_deferred][sbmgmt.actions.deferred.find_deferred] finds, one line
    each (``sbmgmt.actions.export.write_messages``); nothing changes on the
    entity (peeking takes no lock). The file reads back with
    ``sbmgmt.actions.export.read_messages``.

    Args:
        entity: The queue or subscription.
        out: A text file open for writing.
        from_sequence_number: The first sequence number to look at.
        max_count: The most messages to write (1 or more); None: every one found.
        session_id: Only this session's messages; None: every message of the entity.
        progress: Called with the number of messages written so far, after each one.

    Returns:
        What was written: ``sbmgmt.actions.export.ExportReport``.

    Raises:
        ValueError: ``max_count`` below 1, or a negative ``from_sequence_number``.
        sbmgmt.errors.ServiceBusManagementError: A peek failed, as for ``peek_all``; what
            was written before stays written.
    """
    export = _Export(out, max_count, progress)
    for message in find_deferred(entity, from_sequence_number, session_id=session_id):
        if not export.write(message):
            break
    return export.report(entity.path)


async def export_deferred_async(
    entity: AsyncEntityClient, out: IO[str], *, from_sequence_number: int = 1,
    max_count: int | None = None, session_id: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """[export_deferred][sbmgmt.actions.deferred.export_deferred] on the asyncio client.

    Args:
        entity: The queue or subscription.
        out: A text file open for writing (written to on the event loop).
        from_sequence_number: The first sequence number to look at.
        max_count: The most messages to write (1 or more); None: every one found.
        session_id: Only this session's messages; None: every message of the entity.
        progress: Called with the number of messages written so far, after each one.

    Returns:
        What was written: ``sbmgmt.actions.export.ExportReport``.

    Raises:
        ValueError: ``max_count`` below 1, or a negative ``from_sequence_number``.
        sbmgmt.errors.ServiceBusManagementError: A peek failed, as for ``peek_all``; what
            was written before stays written.
    """
    export = _Export(out, max_count, progress)
    messages = find_deferred_async(entity, from_sequence_number, session_id=session_id)
    async for message in messages:
        if not export.write(message):
            break
    await messages.aclose()
    return export.report(entity.path)


# ---- settling: one batch, sans-I/O ------------------------------------------------------


@dataclass(frozen=True)
class _Receive:
    """Lock these deferred messages (receive-by-sequence-number, peek-lock)."""

    numbers: list[int]


@dataclass(frozen=True)
class _Settle:
    """Settle the messages these lock tokens hold (update-disposition)."""

    messages: list[ReceivedMessage]


_Step = _Receive | _Settle


@dataclass
class _Outcome:
    settled: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    #: A receive was refused for want of a session lock (the entity requires sessions).
    needs_session: bool = False


def _not_found(error: ServiceBusManagementError) -> bool:
    """A message (not the entity) that is not there to lock."""
    return isinstance(error, NotFoundError) and error.error_condition == _MESSAGE_NOT_FOUND


def _failure(error: ServiceBusManagementError, settling: bool) -> str:
    text = " ".join(str(error).split())
    if settling and getattr(error, "may_have_been_applied", False):
        return f"{text} (the settlement may have been applied)"
    return text


def _batch_steps(numbers: list[int]) -> Generator[_Step, Any, _Outcome]:
    """One batch: lock its messages, settle them; halve it when a number is not found.

    Yields the requests to make; a driver sends back each reply (the received messages,
    or None for a settlement) or throws its error in.
    """
    outcome = _Outcome()
    pending = [numbers]
    while pending:
        part = pending.pop()
        try:
            messages: list[ReceivedMessage] = yield _Receive(part)
        except ServiceBusManagementError as error:
            if _not_found(error) and len(part) > 1:
                half = len(part) // 2
                pending += [part[half:], part[:half]]
            elif _not_found(error):
                outcome.not_found.append(part[0])
            else:
                outcome.needs_session |= isinstance(error, SessionLockLostError)
                outcome.failed.update(dict.fromkeys(part, _failure(error, False)))
            continue
        try:
            yield _Settle(messages)
        except ServiceBusManagementError as error:
            outcome.failed.update(dict.fromkeys(part, _failure(error, True)))
            continue
        outcome.settled.extend(part)
    return outcome


class _Settler(Protocol):
    """What settles a batch: an entity's client, or the lock of one of its sessions."""

    def receive_deferred_messages(
        self, sequence_numbers: Iterable[int], settle_mode: Any = ...,
    ) -> list[ReceivedMessage]: ...

    def update_disposition(
        self, lock_tokens: Iterable[Any], status: Any, dead_letter_reason: str | None = ...,
        dead_letter_description: str | None = ...,
    ) -> object: ...


class _AsyncSettler(Protocol):
    """The asyncio twin of :class:`_Settler`."""

    async def receive_deferred_messages(
        self, sequence_numbers: Iterable[int], settle_mode: Any = ...,
    ) -> list[ReceivedMessage]: ...

    async def update_disposition(
        self, lock_tokens: Iterable[Any], status: Any, dead_letter_reason: str | None = ...,
        dead_letter_description: str | None = ...,
    ) -> object: ...


@dataclass(frozen=True)
class _Plan:
    """The choices of one settlement, shared by both drivers."""

    action: DeferredAction
    reason: str | None
    description: str | None
    batch_size: int
    in_flight: int

    def settle_arguments(self, messages: list[ReceivedMessage]) -> tuple[Any, ...]:
        tokens = [m.lock_token for m in messages]
        if self.action is DeferredAction.DEAD_LETTER:
            return tokens, self.action.status, self.reason, self.description
        return tokens, self.action.status

    def batches(self, numbers: list[int]) -> list[list[int]]:
        return [numbers[i:i + self.batch_size] for i in range(0, len(numbers),
                                                               self.batch_size)]


def _plan(action: DeferredAction | str, reason: str | None, description: str | None,
          batch_size: int, in_flight: int) -> _Plan:
    chosen = DeferredAction(action)
    if chosen is not DeferredAction.DEAD_LETTER and (reason is not None
                                                     or description is not None):
        raise ValueError("dead_letter_reason and dead_letter_description go with the "
                         "dead_letter action only")
    for name, value in (("batch_size", batch_size), ("in_flight", in_flight)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    return _Plan(chosen, reason, description, batch_size, in_flight)


def _group(selection: Selection) -> dict[str | None, list[int]]:
    """The selected sequence numbers by session (None: no session), each once, in order."""
    groups: dict[str | None, list[int]] = {}
    seen: set[int] = set()
    for item in selection:
        if isinstance(item, ReceivedMessage):
            number, session = item.sequence_number, item.session_id
        elif isinstance(item, int) and not isinstance(item, bool):
            number, session = item, None
        else:
            raise TypeError(f"selection: a ReceivedMessage or a sequence number, got "
                            f"{type(item).__name__}")
        if number is None or number < 0:
            raise ValueError(f"selection: {number!r} is not a sequence number")
        if number not in seen:
            seen.add(number)
            groups.setdefault(session, []).append(number)
    return groups


def _run_batch(settler: _Settler, plan: _Plan, numbers: list[int]) -> _Outcome:
    """Drive :func:`_batch_steps` with blocking calls."""
    return drive(_batch_steps(numbers), lambda step: (
        settler.receive_deferred_messages(step.numbers) if isinstance(step, _Receive)
        else settler.update_disposition(*plan.settle_arguments(step.messages))))


async def _run_batch_async(settler: _AsyncSettler, plan: _Plan, numbers: list[int]) -> _Outcome:
    """Drive :func:`_batch_steps` with awaited calls."""
    return await drive_async(_batch_steps(numbers), lambda step: (
        settler.receive_deferred_messages(step.numbers) if isinstance(step, _Receive)
        else settler.update_disposition(*plan.settle_arguments(step.messages))))


# ---- settling: the drivers --------------------------------------------------------------


Progress = Callable[[DeferredProgress], None]


class _Run:
    """One settlement's report, progress and cancellation (either driver)."""

    def __init__(self, plan: _Plan, path: str, total: int, progress: Progress | None,
                 cancelled: Callable[[], bool]) -> None:
        self.plan = plan
        self.report = DeferredReport(plan.action, path)
        self.total = total
        self._progress = progress
        self._cancelled = cancelled
        self._lock = threading.Lock()

    def may_start(self, numbers: list[int]) -> bool:
        """Whether a batch may start; if cancelled, its numbers are not attempted."""
        if not self._cancelled():
            return True
        with self._lock:
            self.report.cancelled = True
            self.report.not_attempted.extend(numbers)
        return False

    def done(self, outcome: _Outcome) -> None:
        with self._lock:
            self.report._add(outcome)
            snapshot = self.report._snapshot(self.total)
        if self._progress is not None:
            self._progress(snapshot)

    def session_failed(self, numbers: list[int], error: ServiceBusManagementError) -> None:
        self.done(_Outcome(failed=dict.fromkeys(numbers, _failure(error, False))))


def _first_probe(groups: dict[str | None, list[int]], requires_session: bool | None,
                 plan: _Plan) -> tuple[str, list[int]] | None:
    """The batch that tells whether the entity requires sessions, when that is unknown."""
    if requires_session is not None:
        return None
    for session, numbers in groups.items():
        if session is not None:
            return session, plan.batches(numbers)[0]
    return None


def _submit_through(entity: EntityClient | AsyncEntityClient) -> Any:
    """The renewer's ``submit`` over the entity's client (a session lock renews itself
    through its own ``renew_lock``; this is only the renewer's way to its connection)."""

    def submit(path: str, request: Any, timeout: float) -> Any:
        return entity.submit(request, timeout=timeout)

    return submit


def _start(plan: _Plan, path: str, selection: Selection, progress: Progress | None,
           cancelled: Callable[[], bool]) -> tuple[_Run, dict[str | None, list[int]]]:
    groups = _group(selection)
    return _Run(plan, path, sum(map(len, groups.values())), progress, cancelled), groups


def _after_probe(run: _Run, groups: dict[str | None, list[int]], session: str,
                 first: list[int], outcome: _Outcome) -> bool:
    """Whether the entity requires sessions, from the probe's outcome (kept if it does not)."""
    if outcome.needs_session:
        return True
    run.done(outcome)
    groups[session] = groups[session][len(first):]
    return False


@dataclass(frozen=True)
class _Probe:
    """Run this one batch on the entity; reply: its outcome, which tells whether the entity
    requires sessions."""

    numbers: list[int]


@dataclass(frozen=True)
class _Batches:
    """Run these numbers' batches, ``in_flight`` at once, on ``lock`` (a session's lock
    that a :class:`_Lock` step replied) or on the entity (``lock`` None); reply: None."""

    lock: Any
    numbers: list[int]


@dataclass(frozen=True)
class _Lock:
    """Lock this session (renewed until :class:`_Unlock`); reply: the lock."""

    session: str


@dataclass(frozen=True)
class _Unlock:
    """Release the session's lock taken last (and stop renewing it); reply: None."""


_Work = _Probe | _Batches | _Lock | _Unlock


def _order(run: _Run, groups: dict[str | None, list[int]],
           requires_session: bool | None) -> Generator[_Work, Any, None]:
    """A settlement's work in order, shared by both drivers (sans-I/O): the probe when
    whether the entity requires sessions is unknown, then every number on the entity, or
    the numbers without a session on the entity and each session's under its lock (a
    session whose lock is refused fails its numbers with the error)."""
    probe = _first_probe(groups, requires_session, run.plan)
    if probe is not None and run.may_start(probe[1]):
        outcome: _Outcome = yield _Probe(probe[1])
        requires_session = _after_probe(run, groups, *probe, outcome)
    if not requires_session:
        yield _Batches(None, [n for numbers in groups.values() for n in numbers])
        return
    yield _Batches(None, groups.pop(None, []))
    for session, numbers in groups.items():
        assert session is not None
        if not run.may_start(numbers):
            continue
        try:
            lock = yield _Lock(session)
        except ServiceBusManagementError as error:
            run.session_failed(numbers, error)
            continue
        run.report.sessions.append(session)
        yield _Batches(lock, numbers)
        # A failed release leaves the lock to expire; the numbers are counted already.
        with contextlib.suppress(ServiceBusManagementError):
            yield _Unlock()


def settle_deferred(
    entity: EntityClient,
    selection: Selection,
    action: DeferredAction | str,
    *,
    dead_letter_reason: str | None = None,
    dead_letter_description: str | None = None,
    requires_session: bool | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    in_flight: int = DEFAULT_IN_FLIGHT,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> DeferredReport:
    """Complete, abandon or dead-letter deferred messages, in batches, several in flight.

    Each batch of sequence numbers is locked (receive-by-sequence-number), then settled
    (update-disposition). See the module's theory of operation for what is done when a
    number is no longer deferred, a reply is lost, or the entity requires sessions.

    Args:
        entity: The queue or subscription that holds them.
        selection: Messages [find_deferred][sbmgmt.actions.deferred.find_deferred] gave,
            or sequence numbers (of messages without a session); each is settled once.
        action: A [DeferredAction][sbmgmt.actions.deferred.DeferredAction] or its value.
        dead_letter_reason: With ``dead_letter``: the messages' ``DeadLetterReason``.
        dead_letter_description: With ``dead_letter``: their
            ``DeadLetterErrorDescription``.
        requires_session: Whether the entity requires sessions; None: found out from the
            first batch of messages that have a session id.
        batch_size: Sequence numbers per request (1 or more).
        in_flight: Batches worked on at once (1 or more).
        progress: Called after each batch with the counts so far (on a worker thread).
        cancel: Set it to stop starting batches; those in flight finish.

    Returns:
        What was done, by sequence number:
        [DeferredReport][sbmgmt.actions.deferred.DeferredReport].

    Raises:
        TypeError: An item of ``selection`` is neither a message nor an int.
        ValueError: An unknown ``action``, a reason without ``dead_letter``, a bad
            ``batch_size`` or ``in_flight``, or a negative sequence number (before anything
            is sent).
    """
    plan = _plan(action, dead_letter_reason, dead_letter_description, batch_size, in_flight)
    run, groups = _start(plan, entity.path, selection, progress,
                         (lambda: False) if cancel is None else cancel.is_set)
    with ThreadPoolExecutor(plan.in_flight, thread_name_prefix="sbmgmt-deferred") as pool, \
            ExitStack() as renewing, ExitStack() as held:
        renewer: LockRenewer | None = None

        def each(settler: _Settler, numbers: list[int]) -> None:
            if run.may_start(numbers):
                run.done(_run_batch(settler, plan, numbers))

        def all_of(settler: _Settler, numbers: list[int]) -> None:
            for future in [pool.submit(each, settler, batch) for batch in plan.batches(numbers)]:
                future.result()

        def call(work: _Work) -> Any:
            nonlocal renewer
            if isinstance(work, _Probe):
                return _run_batch(entity, plan, work.numbers)
            if isinstance(work, _Batches):
                return all_of(entity if work.lock is None else work.lock, work.numbers)
            if isinstance(work, _Unlock):
                return held.close()
            if renewer is None:
                renewer = renewing.enter_context(LockRenewer(_submit_through(entity)))
            lock = held.enter_context(entity.session(work.session))
            renewer.register_session(entity, lock)
            held.callback(renewer.unregister_session, entity, lock)
            return lock

        drive(_order(run, groups, requires_session), call)
    return run.report


async def settle_deferred_async(
    entity: AsyncEntityClient,
    selection: Selection,
    action: DeferredAction | str,
    *,
    dead_letter_reason: str | None = None,
    dead_letter_description: str | None = None,
    requires_session: bool | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    in_flight: int = DEFAULT_IN_FLIGHT,
    progress: Progress | None = None,
    cancel: asyncio.Event | None = None,
) -> DeferredReport:
    """[settle_deferred][sbmgmt.actions.deferred.settle_deferred] on the asyncio client.

    Args:
        entity: The queue or subscription that holds them.
        selection: Messages
            [find_deferred_async][sbmgmt.actions.deferred.find_deferred_async] gave, or
            sequence numbers (of messages without a session); each is settled once.
        action: A [DeferredAction][sbmgmt.actions.deferred.DeferredAction] or its value.
        dead_letter_reason: With ``dead_letter``: the messages' ``DeadLetterReason``.
        dead_letter_description: With ``dead_letter``: their
            ``DeadLetterErrorDescription``.
        requires_session: Whether the entity requires sessions; None: found out from the
            first batch of messages that have a session id.
        batch_size: Sequence numbers per request (1 or more).
        in_flight: Batches worked on at once (1 or more).
        progress: Called after each batch with the counts so far (on the event loop).
        cancel: Set it to stop starting batches; those in flight finish.

    Returns:
        What was done, by sequence number:
        [DeferredReport][sbmgmt.actions.deferred.DeferredReport].

    Raises:
        TypeError: An item of ``selection`` is neither a message nor an int.
        ValueError: An unknown ``action``, a reason without ``dead_letter``, a bad
            ``batch_size`` or ``in_flight``, or a negative sequence number (before anything
            is sent).
    """
    plan = _plan(action, dead_letter_reason, dead_letter_description, batch_size, in_flight)
    run, groups = _start(plan, entity.path, selection, progress,
                         (lambda: False) if cancel is None else cancel.is_set)
    slots = asyncio.Semaphore(plan.in_flight)

    async def each(settler: _AsyncSettler, numbers: list[int]) -> None:
        async with slots:
            if run.may_start(numbers):
                run.done(await _run_batch_async(settler, plan, numbers))

    async def all_of(settler: _AsyncSettler, numbers: list[int]) -> None:
        await asyncio.gather(*(each(settler, batch) for batch in plan.batches(numbers)))

    async with AsyncExitStack() as renewing, AsyncExitStack() as held:
        renewer: AsyncLockRenewer | None = None

        async def call(work: _Work) -> Any:
            nonlocal renewer
            if isinstance(work, _Probe):
                return await _run_batch_async(entity, plan, work.numbers)
            if isinstance(work, _Batches):
                return await all_of(entity if work.lock is None else work.lock, work.numbers)
            if isinstance(work, _Unlock):
                return await held.aclose()
            if renewer is None:
                renewer = await renewing.enter_async_context(
                    AsyncLockRenewer(_submit_through(entity)))
            lock = await held.enter_async_context(entity.session(work.session))
            renewer.register_session(entity, lock)
            held.callback(renewer.unregister_session, entity, lock)
            return lock

        await drive_async(_order(run, groups, requires_session), call)
    return run.report
