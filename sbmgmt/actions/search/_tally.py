"""What a search has read and found (:class:`Tally`), told to ``on_progress`` as
:class:`~sbmgmt.actions.contract.Progress` records now and then, and the iterators a search
returns (:class:`Matches`, :class:`AsyncMatches`): its matches as they are found, and its
:class:`~._records.SearchReport` once it ended.

A tally is shared by the readers of a namespace search (threads): its counts move under a
lock, and each record is told under it (the callback must be quick, the contract says).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, field

from ..contract import OnProgress, Outcome, Progress
from ._records import Found, SearchReport

__all__ = ["AsyncMatches", "Matches", "Tally"]

#: Progress is told every so many messages read (and at each entity's end).
PROGRESS_EVERY = 500


@dataclass
class Tally:
    """What a search has read and found, and how it ended."""

    entity: str
    entities: int
    on_progress: OnProgress | None
    max_count: int | None
    read: int = 0
    found: int = 0
    entities_done: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    outcome: Outcome = Outcome.FINISHED
    error: str | None = None
    _told: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def counted(self, read: int, found: int) -> None:
        with self._lock:
            self.read += read
            self.found += found
            if self.read - self._told >= PROGRESS_EVERY:
                self._tell()

    def entity_done(self, failure: tuple[str, str] | None = None) -> None:
        with self._lock:
            self.entities_done += 1
            if failure is not None:
                self.failed.append(failure)
            self._tell()

    def full(self) -> bool:
        return self.max_count is not None and self.found >= self.max_count

    def ended(self, outcome: Outcome, error: str | None = None) -> None:
        """How the search ended, when not FINISHED (the first word stays)."""
        with self._lock:
            if self.outcome is Outcome.FINISHED:
                self.outcome, self.error = outcome, error

    def report(self) -> SearchReport:
        with self._lock:
            return SearchReport(entity=self.entity, outcome=self.outcome, error=self.error,
                                read=self.read, found=self.found, entities=self.entities,
                                entities_done=self.entities_done, failed=tuple(self.failed))

    def _tell(self) -> None:
        self._told = self.read
        if self.on_progress is not None:
            self.on_progress(Progress(self.read, None, {
                "found": self.found, "entities_done": self.entities_done,
                "not_searched": len(self.failed)}))


class Matches(Iterator[Found]):
    """What a search finds, as it finds it (an iterator of
    [Found][sbmgmt.actions.search.Found]), and :attr:`report` once it ended: closing it
    early (``close()``, leaving a ``for`` loop by ``break``) stops the read."""

    def __init__(self, found: Generator[Found, None, None],
                 report: Callable[[], SearchReport],
                 has_all: Callable[[], bool] | None = None) -> None:
        """``has_all``: whether every match wanted was handed out already (then the read
        is closed at once, not advanced to its next message)."""
        self._found, self._report, self._has_all = found, report, has_all

    def __next__(self) -> Found:
        if self._has_all is not None and self._has_all():
            self._found.close()
            raise StopIteration
        return next(self._found)

    def close(self) -> None:
        """Stop the search (the readers end; what was counted stays in the report)."""
        self._found.close()

    @property
    def report(self) -> SearchReport:
        """What the search read and found so far, and how it ended."""
        return self._report()


class AsyncMatches(AsyncIterator[Found]):
    """:class:`Matches` for the asyncio client."""

    def __init__(self, found: AsyncGenerator[Found, None],
                 report: Callable[[], SearchReport],
                 has_all: Callable[[], bool] | None = None) -> None:
        self._found, self._report, self._has_all = found, report, has_all

    async def __anext__(self) -> Found:
        if self._has_all is not None and self._has_all():
            await self._found.aclose()
            raise StopAsyncIteration
        return await self._found.__anext__()

    async def aclose(self) -> None:
        """Stop the search."""
        await self._found.aclose()

    @property
    def report(self) -> SearchReport:
        """What the search read and found so far, and how it ended."""
        return self._report()
