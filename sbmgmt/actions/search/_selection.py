"""What a search found, handed on: the selection of resubmit / move, and the messages an
export file (``sbmgmt find -o ndjson``) names."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from ...errors import ExportFormatError, ProtocolError
from ...message import MessageId, ReceivedMessage
from ..export import message_from_json
from ..repair import Selection
from ._records import Found

__all__ = ["FoundLines", "found_selection", "read_found"]


def found_selection(found: Iterable[Found | ReceivedMessage]) -> Selection:
    """The [Selection][sbmgmt.actions.repair.Selection] of exactly these messages, for
    ``plan_resubmit`` / ``plan_move``: their sequence numbers, each with its MessageId (a
    message at one of those numbers with another MessageId is not taken).

    Args:
        found: What a search found (or the messages).

    Returns:
        The selection.

    Raises nothing.
    """
    ids: dict[int, MessageId | None] = {}
    for item in found:
        message = item.message if isinstance(item, Found) else item
        if message.sequence_number is not None:
            ids[message.sequence_number] = message.message_id
    return _selection(ids)


def _selection(ids: dict[int, MessageId | None]) -> Selection:
    def same_message(message: ReceivedMessage) -> bool:
        return message.sequence_number in ids and ids[message.sequence_number] == \
            message.message_id
    return Selection(sequence_numbers=frozenset(ids), where=same_message)


@dataclass(frozen=True)
class FoundLines:
    """The messages an export file names (``sbmgmt find -o ndjson``, ``sbmgmt export``):
    each line's sequence number and MessageId.

    Attributes:
        ids: Sequence number -> MessageId (None when the line has none).
    """

    ids: dict[int, MessageId | None]

    def selection(self) -> Selection:
        """The [Selection][sbmgmt.actions.repair.Selection] of these messages (each sequence
        number with its MessageId).

        Returns:
            The selection.
        """
        return _selection(self.ids)


def read_found(lines: Iterable[str]) -> FoundLines:
    """Read the messages an export file's lines name: every line is checked (the export
    format), and must carry its sequence number (``broker.sequence_number``).

    Args:
        lines: The file's lines (blank ones are skipped).

    Returns:
        The sequence numbers and MessageIds.

    Raises:
        sbmgmt.errors.ExportFormatError: A line is not a message of the format, or has no
            sequence number (a file written from messages that were never in an entity);
            its ``line`` says which.
    """
    ids: dict[int, MessageId | None] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            message = message_from_json(record)
        except (ValueError, TypeError, ProtocolError) as exc:
            raise ExportFormatError(f"line {number}: {exc}", line=number) from None
        broker = record.get("broker") if isinstance(record, dict) else None
        sequence = broker.get("sequence_number") if isinstance(broker, dict) else None
        if isinstance(sequence, bool) or not isinstance(sequence, int):
            raise ExportFormatError(f"line {number}: no broker.sequence_number (the line "
                                    "does not come from an entity)", line=number)
        ids[sequence] = message.message_id
    return FoundLines(ids)
