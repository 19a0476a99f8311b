"""Planning a repair: the source peeked end to end (nothing is locked or changed), the
messages the selection picks kept with their targets, each target checked, and the copies
a target's duplicate detection may drop marked (:func:`plan_resubmit`, :func:`plan_move`,
:func:`refuse_duplicates`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone

from sbmgmt.client import EntityClient, ManagementClient
from sbmgmt.errors import DuplicatesRefusedError, WrongEntityError
from sbmgmt.message import MessageState, ReceivedMessage, id_text

from ..targets import DEAD_LETTER_SUFFIX, Describe, IfDuplicate, at_risk, check_target
from .selection import Planned, RepairPlan, Selection

__all__ = ["plan_move", "plan_resubmit", "refuse_duplicates", "top_level"]

_SUBSCRIPTIONS = "/subscriptions/"


def top_level(path: str) -> str:
    """The top-level entity of ``path`` (``q`` for ``q/$DeadLetterQueue``)."""
    return path.split("/", 1)[0]


def _is_subscription(path: str) -> bool:
    return _SUBSCRIPTIONS in path.lower()


def _parent(source: str) -> str:
    if not source.endswith(DEAD_LETTER_SUFFIX):
        raise ValueError(f"resubmit takes messages from a dead-letter queue (a path ending "
                         f"in {DEAD_LETTER_SUFFIX!r}), got {source!r}; use move for another "
                         "entity")
    return source[: -len(DEAD_LETTER_SUFFIX)]


def _resubmit_target(source: str, message: ReceivedMessage) -> str:
    """Where a dead letter came from: its ``x-opt-deadletter-source`` (an auto-forwarded
    message dead-lettered on its way), else the queue whose dead-letter queue holds it."""
    origin = message.dead_letter_source or _parent(source)
    if _is_subscription(origin):
        raise WrongEntityError(
            f"message {message.sequence_number} came from the subscription {origin!r}: a "
            "message cannot be sent to a subscription, and sending it to the topic delivers it "
            "to every subscription whose rules match; move it with an explicit target instead",
            operation="check")
    return origin


def _plan(entity: EntityClient, selection: Selection,
          target_of: Callable[[ReceivedMessage], str]) -> RepairPlan:
    items: list[Planned] = []
    #: Sequence numbers of the active messages not selected, in order (the receiver takes
    #: those ahead of the last selected one too).
    others: list[int] = []
    for message in entity.peek_all():
        if not selection.matches(message):
            if message.state is MessageState.ACTIVE and message.sequence_number is not None:
                others.append(message.sequence_number)
            continue
        assert message.sequence_number is not None
        items.append(Planned(message.sequence_number, message.message_id, target_of(message),
                             message.dead_letter_reason, message.enqueued_time))
        if selection.max_count is not None and len(items) >= selection.max_count:
            break
    last = items[-1].sequence_number if items else 0
    asked = selection.sequence_numbers or frozenset()
    return RepairPlan(entity.path, tuple(items),
                      not_found=tuple(sorted(asked - {item.sequence_number for item in items})),
                      held=sum(1 for number in others if number < last))


def _checked(client: ManagementClient, plan: RepairPlan, describe: Describe | None,
             ) -> RepairPlan:
    """The plan with each target checked (it exists and can be sent to, its duplicate
    detection read) and the copies its duplicate detection may drop marked."""
    checks = dict(plan.checks)
    for target in sorted(plan.targets):
        if target not in checks:
            checks[target] = check_target(client, target, source=plan.source,
                                          describe=describe)
    now = datetime.now(timezone.utc)
    enqueued_in = top_level(plan.source)
    risky = frozenset(item.sequence_number for item in plan.items if at_risk(
        checks[item.target], item.message_id, enqueued_in=enqueued_in,
        enqueued_time=item.enqueued_time, now=now))
    return replace(plan, checks=checks, at_risk=risky)


def plan_resubmit(client: ManagementClient, source: str,
                  selection: Selection | None = None, *,
                  describe: Describe | None = None) -> RepairPlan:
    """Plan sending dead letters back to where they came from (peeks; changes nothing).

    Args:
        client: The namespace's client.
        source: A dead-letter queue's path (``q/$DeadLetterQueue``).
        selection: Which messages; None: all.
        describe: Reads an entity's properties through the administration API, for each
            target's duplicate detection
            ([check_target][sbmgmt.actions.targets.check_target]); None: not read.

    Returns:
        The plan: each message's target is its ``x-opt-deadletter-source`` if it has one,
        else the queue the dead-letter queue belongs to; each target checked.

    Raises:
        ValueError: ``source`` is not a dead-letter queue.
        sbmgmt.errors.WrongEntityError: A message came from a subscription (only
            ``plan_move`` with an explicit target can send it on).
        sbmgmt.errors.NotFoundError: The source, or a target, does not exist.
        sbmgmt.errors.ServiceBusManagementError: A peek or a target's check failed.
    """
    _parent(source)
    plan = _plan(client.entity(source), selection or Selection(),
                 lambda message: _resubmit_target(source, message))
    return _checked(client, plan, describe)


def plan_move(client: ManagementClient, source: str, target: str,
              selection: Selection | None = None, *,
              describe: Describe | None = None) -> RepairPlan:
    """Plan moving messages from any queue, subscription or dead-letter queue to ``target``
    (peeks; changes nothing). The target is checked first (it exists and can be sent to),
    before the source is read.

    Args:
        client: The namespace's client.
        source: The entity to take them from.
        target: The queue or topic to send them to.
        selection: Which messages; None: all.
        describe: Reads an entity's properties through the administration API, for the
            target's kind and duplicate detection
            ([check_target][sbmgmt.actions.targets.check_target]); None: not read.

    Returns:
        The plan.

    Raises:
        sbmgmt.errors.WrongEntityError: ``target`` is a subscription or a dead-letter queue
            (nothing can be sent there), or is the source itself.
        sbmgmt.errors.NotFoundError: The target, or the source, does not exist.
        sbmgmt.errors.ServiceBusManagementError: A peek or the target's check failed.
    """
    check = check_target(client, target, source=source, describe=describe)
    plan = _plan(client.entity(source), selection or Selection(), lambda _message: target)
    return _checked(client, replace(plan, checks={target: check}), describe)


def refuse_duplicates(plan: RepairPlan, if_duplicate: IfDuplicate) -> None:
    """Refuse a plan whose copies a target's duplicate detection may drop when no choice
    was made for them (what ``repair`` checks first; the front ends check it before
    they ask).

    Args:
        plan: The plan.
        if_duplicate: The choice made for those copies.

    Raises:
        sbmgmt.errors.DuplicatesRefusedError: The plan has items at risk and
            ``if_duplicate`` is ``REFUSE``; ``message_ids`` names them.
    """
    if not plan.at_risk or if_duplicate is not IfDuplicate.REFUSE:
        return
    ids = tuple(id_text(item.message_id) for item in plan.items
                if item.sequence_number in plan.at_risk and item.message_id is not None)
    detecting = ", ".join(sorted({item.target for item in plan.items
                                  if item.sequence_number in plan.at_risk}))
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    raise DuplicatesRefusedError(
        f"{detecting} detects duplicates: it may drop {len(ids)} of the copies, which keep "
        f"their MessageId ({shown}), while the originals are removed; nothing was done. "
        "Choose what to do with them: a new MessageId (the old one kept in OriginalMessageId), "
        "leave them in the source, or send them as they are", message_ids=ids)
