"""Finding an entity's deferred messages (without locking), a page of them, a person's
choice of them by sequence number, and their export: every one a read of ``peek_all``
(pages in flight) keeping the messages whose state is deferred.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Iterator
from dataclasses import dataclass
from typing import IO

from ...aio import AsyncEntityClient
from ...client import EntityClient
from ...message import MessageState, ReceivedMessage
from ..contract import CancelToken, OnProgress, Progress
from ..export import Exporter, ExportReport

_PAGE_SIZE = 250
_PAGES_IN_FLIGHT = 32

__all__ = ["DeferredPage", "DeferredSelection", "deferred_page", "deferred_page_async",
           "export_deferred", "export_deferred_async", "find_deferred", "find_deferred_async",
           "select_deferred"]


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


# ---- finding --------------------------------------------------------------------------


def _is_deferred(message: ReceivedMessage) -> bool:
    return message.state is MessageState.DEFERRED


def find_deferred(
    entity: EntityClient, from_sequence_number: int = 1, *, session_id: str | None = None,
    page_size: int = _PAGE_SIZE, pages_in_flight: int = _PAGES_IN_FLIGHT,
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
    session_id: str | None = None, page_size: int = _PAGE_SIZE,
    pages_in_flight: int = _PAGES_IN_FLIGHT,
) -> AsyncGenerator[ReceivedMessage, None]:
    """The asyncio twin of [find_deferred][sbmgmt.actions.deferred.find_deferred]: the same
    messages, from an async iterator.

    Args:
        entity: The queue or subscription's asyncio client.
        from_sequence_number: As for ``find_deferred``.
        session_id: As for ``find_deferred``.
        page_size: As for ``find_deferred``.
        pages_in_flight: As for ``find_deferred``.

    Returns:
        An async iterator over the deferred messages (peeked: no lock tokens).

    Raises:
        ValueError: As for ``find_deferred`` (from the first iteration).
        sbmgmt.errors.ServiceBusManagementError: As for ``find_deferred``.
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
    """The asyncio twin of [deferred_page][sbmgmt.actions.deferred.deferred_page]: the same
    page, read on the asyncio client.

    Args:
        entity: The queue or subscription's asyncio client.
        from_sequence_number: As for ``deferred_page``.
        max_count: As for ``deferred_page``.
        session_id: As for ``deferred_page``.

    Returns:
        The page, as ``deferred_page`` gives it.

    Raises:
        ValueError: As for ``deferred_page``.
        sbmgmt.errors.ServiceBusManagementError: As for ``deferred_page``.
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


@dataclass(frozen=True)
class DeferredSelection:
    """Deferred messages chosen by sequence number
    ([select_deferred][sbmgmt.actions.deferred.select_deferred]).

    Attributes:
        messages: The deferred messages chosen, in sequence-number order (peeked, with
            their session ids: what
            [settle_deferred][sbmgmt.actions.deferred.settle_deferred] takes).
        not_found: The numbers asked for that are not deferred messages of the entity
            (another state, settled, or never there), in order.
    """

    messages: list[ReceivedMessage]
    not_found: list[int]


def select_deferred(
    entity: EntityClient, numbers: Iterable[int] | None = None, *,
    session_id: str | None = None, on_progress: OnProgress | None = None,
) -> DeferredSelection:
    """The deferred messages a person chose by sequence number, or every one: the one way
    both front ends turn ticked or typed numbers into the messages to settle.

    One read, pages in flight: the entity from the lowest number asked for to the highest
    (``peek_all``'s range; without numbers, the whole entity), keeping the deferred
    messages asked for. Nothing is locked or changed.

    Args:
        entity: The queue or subscription.
        numbers: The sequence numbers chosen; None or empty: every deferred message.
        session_id: Only this session's messages; None: every message of the entity.
        on_progress: Told after each deferred message chosen (how many so far).

    Returns:
        The messages, and the numbers that are not deferred messages of the entity.

    Raises:
        ValueError: A negative sequence number.
        sbmgmt.errors.ServiceBusManagementError: A peek failed, as for ``peek_all``.
    """
    wanted = sorted(set(numbers or ()))
    if wanted and wanted[0] < 0:
        raise ValueError(f"{wanted[0]} is not a sequence number")
    read = (entity.peek_all(wanted[0], wanted[-1], session_id=session_id) if wanted
            else entity.peek_all(session_id=session_id))
    chosen = set(wanted)
    found: list[ReceivedMessage] = []
    for message in read:
        if _is_deferred(message) and (not wanted or message.sequence_number in chosen):
            found.append(message)
            if on_progress is not None:
                on_progress(Progress(len(found), len(wanted) or None, {"found": len(found)}))
    have = {message.sequence_number for message in found}
    return DeferredSelection(found, [number for number in wanted if number not in have])


# ---- exporting --------------------------------------------------------------------------


def export_deferred(
    entity: EntityClient, out: IO[str], *, from_sequence_number: int = 1,
    max_count: int | None = None, session_id: str | None = None,
    on_progress: OnProgress | None = None, cancel: CancelToken | None = None,
) -> ExportReport:
    """Write the entity's deferred messages in the export format (docs/export-format.md).

    The messages [find_deferred][sbmgmt.actions.deferred.find_deferred] finds, one line
    each, through the one export loop (``sbmgmt.actions.export.Exporter``: the messages
    of another state are read past); nothing changes on the entity (peeking takes no
    lock). The file reads back with ``sbmgmt.actions.export.read_messages``.

    Args:
        entity: The queue or subscription.
        out: A text file open for writing.
        from_sequence_number: The first sequence number to look at.
        max_count: The most messages to write (1 or more); None: every one found.
        session_id: Only this session's messages; None: every message of the entity.
        on_progress: Told after each message written (the count so far).
        cancel: Checked before each message read (deferred or not); set, the export stops
            there and the report's outcome is CANCELLED.

    Returns:
        What was written: ``sbmgmt.actions.export.ExportReport``.

    Raises:
        ValueError: ``max_count`` below 1, or a negative ``from_sequence_number``.
        sbmgmt.errors.ServiceBusManagementError: A peek failed, as for ``peek_all``; what
            was written before stays written.
    """
    exporter = Exporter(entity.path, max_count=max_count, keep=_is_deferred,
                        on_progress=on_progress, cancel=cancel)
    return exporter.write(entity.peek_all(from_sequence_number, page_size=_PAGE_SIZE,
                                          pages_in_flight=_PAGES_IN_FLIGHT,
                                          session_id=session_id), out)


async def export_deferred_async(
    entity: AsyncEntityClient, out: IO[str], *, from_sequence_number: int = 1,
    max_count: int | None = None, session_id: str | None = None,
    on_progress: OnProgress | None = None, cancel: CancelToken | None = None,
) -> ExportReport:
    """The asyncio twin of [export_deferred][sbmgmt.actions.deferred.export_deferred]: the
    same lines and report, read on the asyncio client.

    Args:
        entity: The queue or subscription's asyncio client.
        out: A text file open for writing (written to on the event loop).
        from_sequence_number: As for ``export_deferred``.
        max_count: As for ``export_deferred``.
        session_id: As for ``export_deferred``.
        on_progress: As for ``export_deferred``, called on the event loop.
        cancel: As for ``export_deferred``.

    Returns:
        What was written, as ``export_deferred`` reports it.

    Raises:
        ValueError: As for ``export_deferred``.
        sbmgmt.errors.ServiceBusManagementError: As for ``export_deferred``; what was
            written before stays written.
    """
    exporter = Exporter(entity.path, max_count=max_count, keep=_is_deferred,
                        on_progress=on_progress, cancel=cancel)
    return await exporter.write_async(entity.peek_all(
        from_sequence_number, page_size=_PAGE_SIZE, pages_in_flight=_PAGES_IN_FLIGHT,
        session_id=session_id), out)
