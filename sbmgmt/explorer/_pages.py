"""Messages page by page: one peek per page, nothing kept between requests.

A page is asked for by where it starts (a sequence number) and how long it is; the page
says where the next one starts (its last sequence number plus one) and whether the entity
ended (a full page peeks one message past its end to know). The server keeps no page: each
request peeks, renders and forgets, so it holds at most one page per view, whatever the
size of the queue. Going back is the browser's: the page's address carries its start, and
the starts of the pages before it travel in the address too (:func:`trail_after`, the last
:data:`MAX_TRAIL`).

A filter by state (active, deferred, scheduled: a peek returns all three) keeps peeking
until the page is full, the entity ends, or :data:`MAX_SCANS` peeks were made; the page
then says how far it looked.
"""

from __future__ import annotations

import dataclasses
import enum

from ..client import EntityClient
from ..entity_paths import dead_letter_path
from ..message import MessageState, ReceivedMessage

__all__ = ["MAX_PAGE", "MAX_SCANS", "MAX_TRAIL", "Page", "StateFilter", "SubQueue",
           "peek_page", "queue_path", "trail_after"]

#: The largest page: the service's most messages per peek.
MAX_PAGE = 250
#: The most peeks behind one filtered page.
MAX_SCANS = 20
#: The most earlier page starts an address carries.
MAX_TRAIL = 50


class SubQueue(str, enum.Enum):
    """Which queue of an entity: its own, or its dead-letter queue."""

    MAIN = "main"
    DEAD_LETTER = "deadletter"


class StateFilter(str, enum.Enum):
    """Which messages of a page: all, or those in one state."""

    ALL = "all"
    ACTIVE = "active"
    DEFERRED = "deferred"
    SCHEDULED = "scheduled"

    def admits(self, message: ReceivedMessage) -> bool:
        """Whether the message is one this filter shows."""
        return self is StateFilter.ALL or message.state is MessageState[self.name]


@dataclasses.dataclass(frozen=True)
class Page:
    """One page of messages: where it started, the messages, where the next page starts
    (None: the entity ended) and the last sequence number looked at."""

    start: int
    messages: list[ReceivedMessage]
    next_start: int | None
    scanned_to: int | None


def queue_path(path: str, queue: SubQueue) -> str:
    """The entity path of a sub-queue (``PATH/$DeadLetterQueue`` for the dead letters)."""
    return dead_letter_path(path) if queue is SubQueue.DEAD_LETTER else path


def peek_page(entity: EntityClient, start: int, size: int,
              state: StateFilter = StateFilter.ALL) -> Page:
    """Peek one page of messages from ``start``.

    Args:
        entity: The (sub-)queue's client.
        start: The first sequence number to look at (1 or more).
        size: The most messages on the page (1 to :data:`MAX_PAGE`).
        state: Only messages in this state.

    Returns:
        The page.

    Raises:
        ValueError: ``start`` or ``size`` out of range.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    if not 1 <= size <= MAX_PAGE:
        raise ValueError(f"a page holds 1 to {MAX_PAGE} messages, not {size}")
    if start < 1:
        raise ValueError(f"a page starts at sequence number 1 or more, not {start}")
    found: list[ReceivedMessage] = []
    position, last = start, None
    for _ in range(MAX_SCANS if state is not StateFilter.ALL else 1):
        peeked = entity.peek_messages(position, size - len(found) if state is StateFilter.ALL
                                      else MAX_PAGE)
        if not peeked:
            return Page(start, found, None, last)
        for message in peeked:
            last = message.sequence_number
            if state.admits(message):
                found.append(message)
                if len(found) == size:
                    break
        assert last is not None  # a peeked message has its sequence number
        position = last + 1
        if len(found) == size:
            break
    # A full page's "next" must lead somewhere: one message peeked past it says whether the
    # entity goes on (else the last page's "next" led to "no more messages").
    if not entity.peek_messages(position, 1):
        return Page(start, found, None, last)
    return Page(start, found, position, last)


def trail_after(trail: list[int], start: int) -> list[int]:
    """The starts of the pages before the next one: this page's added, the oldest dropped."""
    return [*trail, start][-MAX_TRAIL:]
