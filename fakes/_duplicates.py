"""Duplicate detection: the message-ids an entity has seen within its history window.

``RequiresDuplicateDetection`` with ``DuplicateDetectionHistoryTimeWindow`` (10 minutes
when not given, as the service's default): a message whose message-id was accepted
within the window is accepted again and dropped. Ids are kept in arrival order, so
forgetting the ones older than the window pops from the front; a message without a
message-id is never a duplicate.
"""

from __future__ import annotations

from collections import deque

from sbmgmt.message import MessageId, id_text

from ._errors import ArgumentError

__all__ = ["DEFAULT_WINDOW", "DuplicateDetector", "update_window"]

#: The service's default ``DuplicateDetectionHistoryTimeWindow``, in seconds.
DEFAULT_WINDOW = 600.0


class DuplicateDetector:
    """Message-ids seen in the last ``window`` seconds, with the sequence number of the
    copy that was kept (0 for a topic, which stores nothing itself)."""

    def __init__(self, window: float) -> None:
        if window <= 0:
            raise ValueError("the duplicate detection window must be positive")
        self.window = window
        self._seen: dict[str, tuple[float, int]] = {}
        self._arrivals: deque[tuple[float, str]] = deque()
        #: The ids noted since a data directory last took them (None: no data directory).
        self.fresh: list[tuple[str, float, int]] | None = None

    def original(self, message_id: MessageId | None, now: float) -> int | None:
        """The sequence number kept for ``message_id`` within the window, if it was seen."""
        if message_id is None:
            return None
        self._forget(now)
        seen = self._seen.get(id_text(message_id))
        return None if seen is None else seen[1]

    def note(self, message_id: MessageId | None, now: float, sequence: int) -> None:
        """Remember that ``message_id`` was accepted at ``now`` as ``sequence``."""
        if message_id is None:
            return
        key = id_text(message_id)  # a ulong, uuid or binary id as the text the service shows
        self._seen[key] = (now, sequence)
        self._arrivals.append((now, key))
        if self.fresh is not None:
            self.fresh.append((key, now, sequence))

    def seen(self) -> list[tuple[str, float, int]]:
        """Every id remembered now: (id, when, sequence number), oldest first."""
        return sorted(((key, at, sequence) for key, (at, sequence) in self._seen.items()),
                      key=lambda row: row[1])

    def _forget(self, now: float) -> None:
        arrivals, seen = self._arrivals, self._seen
        while arrivals and arrivals[0][0] + self.window <= now:
            at, message_id = arrivals.popleft()
            if seen.get(message_id, (None, 0))[0] == at:
                del seen[message_id]


def update_window(detector: DuplicateDetector | None, window: float | None, name: str) -> None:
    """An update's ``DuplicateDetectionHistoryTimeWindow`` for the entity ``name``: whether it
    detects duplicates cannot change once it exists (ArgumentError, as the service answers)."""
    if (window is None) != (detector is None):
        raise ArgumentError(f"The value for RequiresDuplicateDetection of {name!r} "
                            "cannot be changed once it exists.")
    if detector is not None and window is not None:
        detector.window = window
