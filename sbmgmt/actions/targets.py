"""Where a resubmit, a move or an import may send, checked before anything is locked,
sent or changed; and the copies a target's duplicate detection would drop.

Theory of operation
-------------------
:func:`check_target` answers for one target, in three steps, cheapest first:

1. *The path* (no I/O): a subscription takes no message (a client sends to its topic), nor
   does a dead-letter queue (the service alone moves messages there), and the source is
   not its own target: each is a [WrongEntityError][sbmgmt.errors.WrongEntityError].
2. *A sender's attach* (AMQP, always): the service refuses an attach to an entity that
   does not exist (``amqp:not-found``: a [NotFoundError][sbmgmt.errors.NotFoundError]) or
   that the credentials may not send to (``amqp:unauthorized-access``). The link is
   detached at once; nothing is sent. This is the whole check where the administration
   API cannot be read.
3. *The entity's properties* (the administration API, when the caller hands a
   ``describe`` function: ``sbmgmt.actions.entities.entity_properties`` over the
   ``admin`` extra's client): its kind (a name that is a subscription there is refused)
   and ``RequiresDuplicateDetection`` with ``DuplicateDetectionHistoryTimeWindow``. When
   they cannot be read (no ``admin`` extra, no rights to read them, the emulator's HTTP
   port not reachable) the check says why in ``unread``, and duplicate detection is
   *unknown*: the front ends say so before they ask.

Duplicate detection (the service's page "Duplicate detection",
<https://learn.microsoft.com/azure/service-bus-messaging/duplicate-detection>): a target
that requires it *accepts* a message whose MessageId it saw within its window and
*discards* it. A repair's copy keeps the original's MessageId, so without care the copy is
dropped while the original is completed: the message is gone (issue 56). Which ids a target
saw is not readable, so :func:`at_risk` is conservative: a copy is safe only when it goes
back to the top-level entity it was enqueued in (a dead letter resubmitted) and was
enqueued longer than the window ago; any other copy keeping its MessageId into a target
that detects duplicates may be dropped. What to do with those is the caller's choice,
:class:`IfDuplicate`; the default refuses the whole run before anything is locked.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..client import ManagementClient
from ..entity_paths import DEAD_LETTER_SUFFIX, is_dead_letter_path
from ..errors import NotFoundError, ServiceBusManagementError, WrongEntityError
from ..message import Message, MessageId, id_text

__all__ = [
    "DEAD_LETTER_SUFFIX",
    "ORIGINAL_MESSAGE_ID",
    "Describe",
    "IfDuplicate",
    "TargetCheck",
    "at_risk",
    "check_target",
    "refuse_path",
    "with_new_message_id",
]

_SUBSCRIPTIONS = "/subscriptions/"
#: The application property a copy sent with a new MessageId keeps the old one in.
ORIGINAL_MESSAGE_ID = "OriginalMessageId"
#: Reads an entity's properties by path (``entity_properties(admin, path)``'s shape: an
#: object with ``counts.kind`` and a ``properties`` mapping).
Describe = Callable[[str], Any]


class IfDuplicate(str, enum.Enum):
    """What to do with copies a target's duplicate detection may drop."""

    REFUSE = "refuse"
    """Refuse the whole run before anything is locked or sent (the default)."""
    NEW_ID = "new-id"
    """Send those copies with a new MessageId (a UUID), the old one kept in the
    application property ``OriginalMessageId``: the target keeps them."""
    LEAVE = "leave"
    """Leave those messages where they are (not moved, not sent); move the rest."""
    SEND = "send"
    """Send them as they are (you know the target never saw those ids); the report names
    them as copies the service may have dropped."""


@dataclass(frozen=True)
class TargetCheck:
    """What was found out about one target.

    Attributes:
        path: The target's path.
        duplicate_detection: Whether it requires duplicate detection; None: not known
            (its properties could not be read, ``unread`` says why).
        window: Its duplicate-detection history window, when it detects duplicates.
        unread: Why its properties were not read (None when they were).
    """

    path: str
    duplicate_detection: bool | None
    window: timedelta | None = None
    unread: str | None = None


def _top_level(path: str) -> str:
    return path.split("/", 1)[0]


def _refuse_subscription(target: str) -> None:
    raise WrongEntityError(
        f"cannot send to {target!r}: it is a subscription, and no client can send to one; "
        f"send to its topic {_top_level(target)!r} (every subscription whose rules match "
        "gets a copy) or to a queue", operation="check")


def refuse_path(target: str, source: str | None = None) -> None:
    """Refuse a target by its path alone (no I/O): a subscription, a dead-letter queue,
    the source itself.

    Args:
        target: Where the messages would be sent.
        source: Where they are taken from (None for an import).

    Raises:
        WrongEntityError: The target cannot take them.
    """
    lowered = target.lower()
    if _SUBSCRIPTIONS in lowered:
        _refuse_subscription(target)
    if is_dead_letter_path(target):
        raise WrongEntityError(
            f"cannot send to {target!r}: a dead-letter queue takes only what the service "
            "dead-letters; send to a queue or a topic", operation="check")
    if source is not None and lowered == source.lower():
        raise WrongEntityError(f"the source and the target are the same entity ({source!r})",
                               operation="check")


def check_target(client: ManagementClient, target: str, *, source: str | None = None,
                 describe: Describe | None = None) -> TargetCheck:
    """Check that ``target`` exists and can be sent to, and read its duplicate detection
    (module docstring: what is checked, and how).

    Args:
        client: The namespace's client.
        target: The queue or topic to send to.
        source: The entity the messages come from (refused as the target).
        describe: Reads an entity's properties through the administration API (the
            front ends pass ``partial(entity_properties, admin)``); None: AMQP only, and
            duplicate detection is unknown.

    Returns:
        What was found.

    Raises:
        WrongEntityError: A subscription, a dead-letter queue, or the source itself.
        NotFoundError: There is no such entity.
        sbmgmt.errors.UnauthorizedError: The credentials may not send to it.
        sbmgmt.errors.ServiceBusManagementError: The attach failed otherwise (a lost
            connection: transient).
    """
    refuse_path(target, source)
    try:
        with client.entity(target).sender():
            pass
    except NotFoundError as error:  # the attach's refusal, or its put-token's (404)
        said = error.description or str(error)
        raise NotFoundError(f"cannot send to {target!r}: it does not exist ({said})",
                            operation="check", status_code=404,
                            description=error.description) from None
    if describe is None:
        return TargetCheck(target, None, unread="the administration API was not asked")
    try:
        described = describe(target)
    except (ServiceBusManagementError, ImportError) as error:
        return TargetCheck(target, None, unread=str(error) or type(error).__name__)
    if getattr(described.counts.kind, "value", None) == "subscription":
        _refuse_subscription(target)
    properties = described.properties
    detects = bool(properties.get("requires_duplicate_detection"))
    window = properties.get("duplicate_detection_history_time_window")
    return TargetCheck(target, detects,
                       window if detects and isinstance(window, timedelta) else None)


def at_risk(check: TargetCheck, message_id: MessageId | None, *, enqueued_in: str | None,
            enqueued_time: datetime | None, now: datetime | None = None) -> bool:
    """Whether a copy sent to ``check.path`` keeping ``message_id`` may be dropped as a
    duplicate (module docstring: why this is conservative).

    Args:
        check: The target's check.
        message_id: The MessageId the copy would keep (None: never a duplicate).
        enqueued_in: The top-level entity the original was enqueued in, when known.
        enqueued_time: When it was enqueued there.
        now: The time to judge at (default: now).

    Returns:
        True when the target detects duplicates and the copy cannot be shown safe; False
        when it does not detect them, or when that is not known (``check.unread``).
    """
    if not check.duplicate_detection or message_id is None:
        return False
    window = check.window if check.window is not None else timedelta(days=7)
    if (enqueued_in is not None and enqueued_time is not None
            and enqueued_in.lower() == _top_level(check.path).lower()):
        moment = now or datetime.now(timezone.utc)
        return enqueued_time + window > moment
    return True


def with_new_message_id(message: Message) -> Message:
    """``message`` with a new MessageId (a UUID, as text), its old one kept in the
    application property :data:`ORIGINAL_MESSAGE_ID`.

    Args:
        message: The copy to send.

    Returns:
        The copy with its new id.
    """
    properties = dict(message.application_properties)
    if message.message_id is not None:
        properties[ORIGINAL_MESSAGE_ID] = id_text(message.message_id)
    return message.model_copy(update={"message_id": str(uuid.uuid4()),
                                      "application_properties": properties})
