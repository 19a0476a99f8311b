"""The contract every long action speaks: progress, cancel, outcome, report, and its drivers.

A long action (purge, resubmit / move, import, export, the deferred messages' settlement,
search) runs for seconds to hours, and three kinds of caller watch it: a script, the CLI
(a progress bar, Ctrl-C) and the explorer (a job page, a Cancel button). They all speak to
every action in the same words:

- a :class:`Progress` record, told to the caller's ``on_progress`` callback as the action
  goes: how many items are done, of how many when that is known, and the counts by
  outcome so far (``{"moved": 90, "failed": 2}``). The callback may be called from a worker
  thread; it must be quick and must not raise.
- a :class:`CancelToken`, which the caller sets (:meth:`CancelToken.cancel`) from any
  thread, a signal handler included: the action checks it between its units of work
  (a batch, a page, a message), lets the units on the wire finish, starts no new one, and
  returns its report with :attr:`Outcome.CANCELLED`. It never raises for a cancellation.
- an :class:`Outcome` (finished, cancelled, failed) and a report that extends
  :class:`ActionReport`: the entity, the outcome, the counts by outcome, and
  :meth:`ActionReport.record`, the report as JSON-ready data for ``--json`` and the
  explorer.

Sans-I/O cores
--------------
An action whose decisions do not depend on how its requests are sent is written once as
a generator (a *core*) that yields the requests it wants made (a *step*) and is sent back
each reply, or has the request's :class:`~sbmgmt.errors.ServiceBusManagementError`
thrown into it, and finally returns its result. :func:`drive` runs a core over blocking
calls and :func:`drive_async` over awaited ones; neither knows what the steps mean, so
the blocking and the asyncio form of an action share every decision (the deferred
messages' settlement and repair are written this way).
"""

from __future__ import annotations

import enum
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..errors import ServiceBusManagementError

__all__ = [
    "ActionReport",
    "CancelToken",
    "Core",
    "OnProgress",
    "Outcome",
    "Progress",
    "drive",
    "drive_async",
    "is_cancelled",
]


class Outcome(str, enum.Enum):
    """How a long action ended."""

    FINISHED = "finished"
    """It did everything it was asked (some items may still have failed one by one)."""
    CANCELLED = "cancelled"
    """The caller's :class:`CancelToken` stopped it; the report counts what was done."""
    FAILED = "failed"
    """An error stopped it before the end; the report counts what was done before."""


@dataclass(frozen=True)
class Progress:
    """How far a long action has gone, as told to its ``on_progress`` callback.

    Attributes:
        done: Items finished so far, whatever their outcome (messages deleted, moved,
            written, sent, settled; for a search, messages read).
        total: How many there are in all, when the action knows it in advance (a plan's
            count, a selection's size); None when it does not (a purge of a live entity).
        counts: Items so far by outcome, in the action's own words, for example
            ``{"moved": 90, "failed": 2}``.
    """

    done: int
    total: int | None = None
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def fraction(self) -> float | None:
        """``done / total`` (at most 1.0), or None when the total is not known."""
        if not self.total:
            return None
        return min(1.0, self.done / self.total)


OnProgress = Callable[[Progress], None]
"""The type of every long action's ``on_progress`` callback."""


class CancelToken:
    """Asks a long action to stop: set it from any thread (a signal handler included).

    The action checks it between units of work; what is on the wire finishes, nothing new
    starts, and the action returns its report with :attr:`Outcome.CANCELLED`.
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the action to stop (idempotent)."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` has been called."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the token is cancelled, or ``timeout`` seconds pass.

        Args:
            timeout: Seconds to wait at most; None waits for the cancellation.

        Returns:
            True when it was cancelled.

        Raises nothing.
        """
        return self._event.wait(timeout)

    @property
    def event(self) -> threading.Event:
        """The token's own event, for an API below the actions that polls a
        ``threading.Event`` (the clients' ``purge_messages``, the topology's
        ``apply_plan``): set once :meth:`cancel` is called (setting it cancels the token)."""
        return self._event

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled})"


def is_cancelled(token: CancelToken | None) -> bool:
    """Whether ``token`` is given and has been cancelled.

    Args:
        token: The action's cancel token, or None when the caller gave none.

    Returns:
        True when there is a token and it was cancelled.

    Raises nothing.
    """
    return token is not None and token.cancelled


@dataclass(kw_only=True)
class ActionReport(ABC):
    """What every long action's report says; each action's report extends it.

    Attributes:
        entity: The entity the action ran on (for a move, its source).
        outcome: How it ended.
        error: Why it failed, in the user's words, when ``outcome`` is FAILED.
    """

    entity: str
    outcome: Outcome = Outcome.FINISHED
    error: str | None = None

    @property
    def cancelled(self) -> bool:
        """Whether a :class:`CancelToken` stopped the action."""
        return self.outcome is Outcome.CANCELLED

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """Items by outcome, in the action's own words.

        Returns:
            A count per outcome, for example ``{"deleted": 120}``.
        """

    def details(self) -> dict[str, Any]:
        """The action's own fields beyond the common ones, for :meth:`record`.

        Returns:
            JSON-ready values by name (none by default).
        """
        return {}

    def record(self) -> dict[str, Any]:
        """The report as JSON-ready data, for ``--output json`` and the explorer.

        Returns:
            ``entity``, ``outcome``, ``counts``, ``error`` (when there is one) and the
            action's :meth:`details`.
        """
        data: dict[str, Any] = {
            "entity": self.entity,
            "outcome": self.outcome.value,
            "counts": self.counts(),
        }
        if self.error is not None:
            data["error"] = self.error
        data.update(self.details())
        return data


_Step = TypeVar("_Step")
_Result = TypeVar("_Result")

Core = Generator[_Step, Any, _Result]
"""A sans-I/O action core: yields steps, is sent replies (or thrown errors), returns a result."""


@dataclass(frozen=True)
class _Done(Generic[_Result]):
    value: _Result


def _advance(core: Generator[_Step, Any, _Result], reply: Any,
             error: ServiceBusManagementError | None) -> _Step | _Done[_Result]:
    try:
        return core.throw(error) if error is not None else core.send(reply)
    except StopIteration as stop:
        return _Done(stop.value)


def _reply(call: Callable[[_Step], Any],
           step: _Step) -> tuple[Any, ServiceBusManagementError | None]:
    try:
        return call(step), None
    except ServiceBusManagementError as error:
        return None, error


async def _reply_async(call: Callable[[_Step], Awaitable[Any]],
                       step: _Step) -> tuple[Any, ServiceBusManagementError | None]:
    try:
        return await call(step), None
    except ServiceBusManagementError as error:
        return None, error


def drive(core: Generator[_Step, Any, _Result], call: Callable[[_Step], Any]) -> _Result:
    """Run a sans-I/O core with blocking calls.

    Args:
        core: The action's core: it yields steps and returns its result.
        call: Makes the request a step asks for and returns its reply.

    Returns:
        What the core returned.

    Raises:
        Exception: Whatever the core raises; a ``ServiceBusManagementError`` of ``call``
            is thrown into the core, which decides.
    """
    step = _advance(core, None, None)
    while not isinstance(step, _Done):
        step = _advance(core, *_reply(call, step))
    return step.value


async def drive_async(core: Generator[_Step, Any, _Result],
                      call: Callable[[_Step], Awaitable[Any]]) -> _Result:
    """The asyncio twin of :func:`drive`: the same contract, with ``call`` awaited.

    Args:
        core: As for :func:`drive`.
        call: Makes the request a step asks for; its awaitable gives the reply.

    Returns:
        What the core returned.

    Raises:
        Exception: Whatever the core raises, as for :func:`drive`.
    """
    step = _advance(core, None, None)
    while not isinstance(step, _Done):
        step = _advance(core, *await _reply_async(call, step))
    return step.value
