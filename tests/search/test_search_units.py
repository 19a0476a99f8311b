"""The namespace search's readers, over a stand-in client: the service's error on one
entity is counted and the others are read; any other error stops the search and is raised
by the caller's iterator (sync and asyncio); closing the iterator early stops the readers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sbmgmt.actions.contract import Progress
from sbmgmt.actions.search import search_namespace, search_namespace_async
from sbmgmt.errors import NotFoundError
from sbmgmt.message import Message, ReceivedMessage, as_received


def _messages(count: int) -> list[ReceivedMessage]:
    return [as_received(Message(body=f"m{n}".encode()), sequence_number=n + 1)
            for n in range(count)]


class _Entity:
    def __init__(self, path: str) -> None:
        self.path = path

    def _check(self) -> None:
        if self.path == "gone":
            raise NotFoundError("The messaging entity 'gone' could not be found.")
        if self.path == "broken":
            raise RuntimeError("a bug, not the service")

    def peek_all(self, first: int, last: int | None) -> Iterator[ReceivedMessage]:
        self._check()
        yield from _messages(1000)

    async def peek_all_async(self) -> AsyncIterator[ReceivedMessage]:
        self._check()
        for message in _messages(1000):
            yield message


class _Client:
    def entity(self, path: str) -> _Entity:
        return _Entity(path)


class _AsyncEntity(_Entity):
    def peek_all(self, first: int, last: int | None) -> Any:
        return self.peek_all_async()


class _AsyncClient:
    def entity(self, path: str) -> _AsyncEntity:
        return _AsyncEntity(path)


def test_the_services_error_is_counted_and_the_others_read() -> None:
    told: list[Progress] = []
    matches = search_namespace(_Client(), ["a", "gone", "b"],  # type: ignore[arg-type]
                               on_progress=told.append, in_flight=2)
    found = list(matches)
    assert sorted((f.entity, f.message.sequence_number or 0) for f in found) == \
        sorted((e, n) for e in ("a", "b") for n in range(1, 1001))
    assert [entity for entity, _ in matches.report.failed] == ["gone"]
    assert "could not be found" in matches.report.failed[0][1]
    assert told[-1].counts["not_searched"] == 1


def test_another_error_is_raised_by_the_iterator() -> None:
    with pytest.raises(RuntimeError, match="a bug"):
        list(search_namespace(_Client(), ["a", "broken", "b"],  # type: ignore[arg-type]
                              in_flight=2))
    with pytest.raises(RuntimeError, match="a bug"):
        asyncio.run(_all(["a", "broken"]))


async def _all(paths: list[str]) -> list[Any]:
    return [f async for f in search_namespace_async(_AsyncClient(),  # type: ignore[arg-type]
                                                    paths, in_flight=2)]


def test_closing_the_iterator_stops_the_readers() -> None:
    before = threading.active_count()
    found = search_namespace(_Client(), [f"q{n}" for n in range(20)],  # type: ignore[arg-type]
                             in_flight=4)
    first = next(found)
    assert first.message.sequence_number == 1
    found.close()  # type: ignore[attr-defined]
    assert threading.active_count() == before
