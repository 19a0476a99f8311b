"""An in-memory Pager over a set of sequence numbers, for planning and paging tests."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

from sbmgmt.errors import ServerBusyError
from sbmgmt.message import ReceivedMessage
from sbmgmt.ops import peek_message


class MemoryPager:
    """Answers peeks from sorted sequence numbers; ``busy_once`` starts fail once (503)."""

    def __init__(self, sequence_numbers: Iterable[int], busy_once: Iterable[int] = ()) -> None:
        self.sequence_numbers = sorted(set(sequence_numbers))
        self.busy_once = set(busy_once)
        self.submitted: list[tuple[int, int]] = []
        self.retried: list[tuple[int, int]] = []

    def _messages(self, start: int, count: int) -> list[ReceivedMessage]:
        index = bisect.bisect_left(self.sequence_numbers, start)
        return [ReceivedMessage(sequence_number=n, body=str(n).encode())
                for n in self.sequence_numbers[index:index + count]]

    def submit(self, start: int, count: int) -> Future[Any]:
        self.submitted.append((start, count))
        future: Future[Any] = Future()
        if start in self.busy_once:
            self.busy_once.discard(start)
            future.set_exception(ServerBusyError("busy", status_code=503))
        else:
            future.set_result(peek_message.Response(messages=tuple(self._messages(start, count))))
        return future

    def peek(self, start: int, count: int) -> list[ReceivedMessage]:
        self.retried.append((start, count))
        return self._messages(start, count)
