"""The deferred messages' settlement, sans-I/O: what to do, in what order, and what
became of each sequence number (the package's docstring is the theory of operation).

``batch_steps`` is one batch's core (lock these numbers, settle them, halve on a number not
found); ``order`` is the settlement's order of work (the probe, the batches on the entity,
each session's lock, its batches, its release). Both yield steps, which ``_settle`` makes
with the contract's ``drive`` or ``drive_async``; ``Run`` keeps the report, the progress
and the cancellation for either driver; ``start`` checks a settlement's choices before
anything is sent.
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...errors import NotFoundError, ServiceBusManagementError, SessionLockLostError
from ...message import ReceivedMessage
from ...ops import update_disposition
from ..contract import ActionReport, CancelToken, OnProgress, Outcome, Progress, is_cancelled

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_IN_FLIGHT", "DeferredAction", "DeferredReport",
           "Selection"]

DEFAULT_BATCH_SIZE = 100
"""Sequence numbers per receive-by-sequence-number (and lock tokens per update-disposition)."""

DEFAULT_IN_FLIGHT = 16
"""Batches worked on at once (each is a receive, then a settlement)."""

_MESSAGE_NOT_FOUND = "com.microsoft:message-not-found"


Selection = Iterable[ReceivedMessage | int]
"""What to settle: messages as [find_deferred][sbmgmt.actions.deferred.find_deferred] or
[select_deferred][sbmgmt.actions.deferred.select_deferred] gave them (their session id is
used on a session entity), or bare sequence numbers (of messages without a session)."""


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


@dataclass(kw_only=True)
class DeferredReport(ActionReport):
    """Exactly what a settlement did, by sequence number.

    Attributes:
        action: What was asked.
        settled: The sequence numbers completed, abandoned or dead-lettered, as asked.
        not_found: Those that were not deferred messages of the entity when their batch
            ran (settled or expired meanwhile, or locked by another receiver).
        failed: Those that failed otherwise, each with the error's text; a settlement
            whose reply was lost may have been applied (the text says so).
        not_attempted: Those not started because the run was cancelled (the outcome is
            then CANCELLED).
        sessions: The sessions locked to settle their messages (a session entity).
    """

    action: DeferredAction
    settled: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    not_attempted: list[int] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Every selected sequence number (each is in exactly one of the lists)."""
        return (len(self.settled) + len(self.not_found) + len(self.failed)
                + len(self.not_attempted))

    def counts(self) -> dict[str, int]:
        """The sequence numbers by outcome.

        Returns:
            How many are ``settled``, ``not_found``, ``failed`` and ``not_attempted``.
        """
        return {"settled": len(self.settled), "not_found": len(self.not_found),
                "failed": len(self.failed), "not_attempted": len(self.not_attempted)}

    def details(self) -> dict[str, Any]:
        """The settlement's own fields of :meth:`record`.

        Returns:
            The action, and each list of sequence numbers (``failed``: number -> error).
        """
        return {"action": self.action.value, "settled": self.settled,
                "not_found": self.not_found,
                "failed": {str(n): text for n, text in self.failed.items()},
                "not_attempted": self.not_attempted, "sessions": self.sessions}

    def _add(self, outcome: BatchOutcome) -> None:
        self.settled.extend(outcome.settled)
        self.not_found.extend(outcome.not_found)
        self.failed.update(outcome.failed)


# ---- settling: one batch, sans-I/O ------------------------------------------------------


@dataclass(frozen=True)
class Receive:
    """Lock these deferred messages (receive-by-sequence-number, peek-lock)."""

    numbers: list[int]


@dataclass(frozen=True)
class Settle:
    """Settle the messages these lock tokens hold (update-disposition)."""

    messages: list[ReceivedMessage]


Step = Receive | Settle


@dataclass
class BatchOutcome:
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


def batch_steps(numbers: list[int]) -> Generator[Step, Any, BatchOutcome]:
    """One batch: lock its messages, settle them; halve it when a number is not found.

    Yields the requests to make; a driver sends back each reply (the received messages,
    or None for a settlement) or throws its error in.
    """
    outcome = BatchOutcome()
    pending = [numbers]
    while pending:
        part = pending.pop()
        try:
            messages: list[ReceivedMessage] = yield Receive(part)
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
            yield Settle(messages)
        except ServiceBusManagementError as error:
            outcome.failed.update(dict.fromkeys(part, _failure(error, True)))
            continue
        outcome.settled.extend(part)
    return outcome


@dataclass(frozen=True)
class Plan:
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
          batch_size: int, in_flight: int) -> Plan:
    chosen = DeferredAction(action)
    if chosen is not DeferredAction.DEAD_LETTER and (reason is not None
                                                     or description is not None):
        raise ValueError("dead_letter_reason and dead_letter_description go with the "
                         "dead_letter action only")
    for name, value in (("batch_size", batch_size), ("in_flight", in_flight)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    return Plan(chosen, reason, description, batch_size, in_flight)


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


class Run:
    """One settlement's report, progress and cancellation (either driver)."""

    def __init__(self, plan: Plan, path: str, total: int, on_progress: OnProgress | None,
                 cancel: CancelToken | None) -> None:
        self.plan = plan
        self.report = DeferredReport(action=plan.action, entity=path)
        self.total = total
        self._on_progress = on_progress
        self._cancel = cancel
        self._lock = threading.Lock()

    def may_start(self, numbers: list[int]) -> bool:
        """Whether a batch may start; if cancelled, its numbers are not attempted."""
        if not is_cancelled(self._cancel):
            return True
        with self._lock:
            self.report.outcome = Outcome.CANCELLED
            self.report.not_attempted.extend(numbers)
        return False

    def done(self, outcome: BatchOutcome) -> None:
        with self._lock:
            self.report._add(outcome)
            counts = self.report.counts()
        if self._on_progress is not None:
            done = counts["settled"] + counts["not_found"] + counts["failed"]
            self._on_progress(Progress(done, self.total, counts))

    def session_failed(self, numbers: list[int], error: ServiceBusManagementError) -> None:
        self.done(BatchOutcome(failed=dict.fromkeys(numbers, _failure(error, False))))


def _first_probe(groups: dict[str | None, list[int]], requires_session: bool | None,
                 plan: Plan) -> tuple[str, list[int]] | None:
    """The batch that tells whether the entity requires sessions, when that is unknown."""
    if requires_session is not None:
        return None
    for session, numbers in groups.items():
        if session is not None:
            return session, plan.batches(numbers)[0]
    return None


def start(action: DeferredAction | str, dead_letter_reason: str | None,
          dead_letter_description: str | None, batch_size: int, in_flight: int, path: str,
          selection: Selection, on_progress: OnProgress | None, cancel: CancelToken | None,
          ) -> tuple[Run, dict[str | None, list[int]]]:
    """A settlement's choices checked (before anything is sent), its run and its numbers
    by session."""
    plan = _plan(action, dead_letter_reason, dead_letter_description, batch_size, in_flight)
    groups = _group(selection)
    return Run(plan, path, sum(map(len, groups.values())), on_progress, cancel), groups


def _after_probe(run: Run, groups: dict[str | None, list[int]], session: str,
                 first: list[int], outcome: BatchOutcome) -> bool:
    """Whether the entity requires sessions, from the probe's outcome (kept if it does not)."""
    if outcome.needs_session:
        return True
    run.done(outcome)
    groups[session] = groups[session][len(first):]
    return False


@dataclass(frozen=True)
class Probe:
    """Run this one batch on the entity; reply: its outcome, which tells whether the entity
    requires sessions."""

    numbers: list[int]


@dataclass(frozen=True)
class Batches:
    """Run these numbers' batches, ``in_flight`` at once, on ``lock`` (a session's lock
    that a ``LockSession`` step replied) or on the entity (``lock`` None); reply: None."""

    lock: Any
    numbers: list[int]


@dataclass(frozen=True)
class LockSession:
    """Lock this session (renewed until ``Unlock``); reply: the lock."""

    session: str


@dataclass(frozen=True)
class Unlock:
    """Release the session's lock taken last (and stop renewing it); reply: None."""


Work = Probe | Batches | LockSession | Unlock


def order(run: Run, groups: dict[str | None, list[int]],
          requires_session: bool | None) -> Generator[Work, Any, None]:
    """A settlement's work in order, shared by both drivers (sans-I/O): the probe when
    whether the entity requires sessions is unknown, then every number on the entity, or
    the numbers without a session on the entity and each session's under its lock (a
    session whose lock is refused fails its numbers with the error)."""
    probe = _first_probe(groups, requires_session, run.plan)
    if probe is not None and run.may_start(probe[1]):
        outcome: BatchOutcome = yield Probe(probe[1])
        requires_session = _after_probe(run, groups, *probe, outcome)
    if not requires_session:
        yield Batches(None, [n for numbers in groups.values() for n in numbers])
        return
    yield Batches(None, groups.pop(None, []))
    for session, numbers in groups.items():
        assert session is not None
        if not run.may_start(numbers):
            continue
        try:
            lock = yield LockSession(session)
        except ServiceBusManagementError as error:
            run.session_failed(numbers, error)
            continue
        run.report.sessions.append(session)
        yield Batches(lock, numbers)
        # A failed release leaves the lock to expire; the numbers are counted already.
        with contextlib.suppress(ServiceBusManagementError):
            yield Unlock()

