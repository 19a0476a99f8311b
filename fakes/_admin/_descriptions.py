"""Queue, topic, subscription and namespace descriptions: the store's entities as the
service's XML, and a request's description as the store's settings.

Elements are written in the order of the service's data contracts, which is the order the
SDKs' models declare (azure-servicebus's generated ``QueueDescription`` and friends); each
SDK reads them by name, the service's own deserializer by order. What changes the fake's
behaviour becomes :class:`~fakes._entity_state.EntitySettings`; the other properties a client may
set (size limits, status, metadata, auto-delete...) are kept in the entity's ``described``
map and reported back as set, but not acted on.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .._addresses import normalize
from .._entity import Entity
from .._entity_state import EntitySettings, MessageCounts
from .._errors import ArgumentError
from .._store import Topic
from .._tiers import Tier
from .._validation import check_idle, check_settings, check_topic_settings, check_window, dated
from ._authorization import EMPTY as NO_AUTHORIZATION_RULES
from ._authorization import KEY as AUTHORIZATION_RULES
from ._durations import NEVER, format_duration, parse_duration
from ._xml import COUNT_NS, SB_NS, XSI_NS, attribute, element, local_name, timestamp

__all__ = ["QUEUE_DESCRIBED", "SUBSCRIPTION_DESCRIBED", "TOPIC_DESCRIBED", "check_tier",
           "default_rule_node", "described", "description_fields", "entity_settings",
           "forwarding_target", "namespace_xml", "queue_xml", "subscription_xml",
           "topic_settings", "topic_xml"]

Fields = dict[str, str]

#: The service's defaults for what a create leaves out.
DEFAULT_LOCK_DURATION = 60.0
DEFAULT_MAX_DELIVERY_COUNT = 10
DEFAULT_DUPLICATE_WINDOW = 600.0
_WINDOW_NAME = "DuplicateDetectionHistoryTimeWindow"
_STATUSES = ("Active", "Disabled", "SendDisabled", "ReceiveDisabled")

def _bool(name: str, text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ArgumentError(f"{name} must be true or false, not {text[:40]!r}.")
    return text.lower() == "true"


def _int(name: str, text: str, most: int = 2**31 - 1) -> int:
    """A whole number from 1 to ``most`` (a 32-bit integer, as the service's are)."""
    if not (text.isascii() and text.lstrip("+-").isdigit() and len(text) <= 11):
        raise ArgumentError(f"{name} must be a whole number, not {text[:40]!r}.")
    value = int(text)
    if not 1 <= value <= most:
        raise ArgumentError(f"{name} must be from 1 to {most}, not {value}.")
    return value


def _duration(name: str, text: str) -> float | None:
    """Seconds of a positive ``xs:duration`` (None: never, also past what the fake dates)."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise ArgumentError(f"{name}: {exc}.") from None
    if value is not None and value <= 0:
        raise ArgumentError(f"{name} must be positive, not {text[:40]!r}.")
    return dated(value)


def _status(name: str, text: str) -> str:
    if text not in _STATUSES:
        raise ArgumentError(f"{name} must be one of {', '.join(_STATUSES)}, not "
                            f"{text[:40]!r}.")
    return text


def _window_text(name: str, text: str) -> str:
    """``DuplicateDetectionHistoryTimeWindow``: kept and read back whether duplicate
    detection is on or not, within 20 s to 7 days either way, as the service keeps and
    checks it (azure-sdk-for-python's ``test_mgmt_topic_create_with_topic_description`` and
    ``test_mgmt_queue_update_success`` read back 12 minutes with detection off;
    ``test_mgmt_topic_update_invalid`` has 25 days refused)."""
    seconds = _duration(name, text)
    if seconds is None:
        raise ArgumentError(f"{name} must be at most 7 days, not {text[:40]!r}.")
    _checked(check_window, seconds)
    return format_duration(seconds)


def _idle(name: str, text: str) -> str:
    seconds = _duration(name, text)
    _checked(check_idle, seconds)
    return format_duration(seconds)


@dataclass(frozen=True)
class _Kept:
    """A property kept, not acted on: the service's default (as written) and how a sent
    value is read into the text kept (400 when it cannot be); ``blank`` is kept as sent."""

    default: str | None
    read: Callable[[str, str], str]
    blank: bool = False


_BOOL = functools.partial(_Kept, read=lambda name, text: str(_bool(name, text)).lower())
_INT = functools.partial(_Kept, read=lambda name, text: str(_int(name, text)))

#: Kept-not-acted-on properties by element.
_COMMON: dict[str, _Kept] = {
    "EnableBatchedOperations": _BOOL("true"),
    "Status": _Kept("Active", _status),
    "UserMetadata": _Kept(None, lambda name, text: text, blank=True),
    "AutoDeleteOnIdle": _Kept(NEVER, _idle),
}
QUEUE_DESCRIBED = {**_COMMON, "MaxSizeInMegabytes": _INT("1024"),
                   _WINDOW_NAME: _Kept(format_duration(DEFAULT_DUPLICATE_WINDOW), _window_text),
                   "IsAnonymousAccessible": _BOOL("false"), "SupportOrdering": _BOOL("true"),
                   "EnablePartitioning": _BOOL("false"), "EnableExpress": _BOOL("false"),
                   "MaxMessageSizeInKilobytes": _INT("256")}
TOPIC_DESCRIBED = {**QUEUE_DESCRIBED, "FilteringMessagesBeforePublishing": _BOOL("false"),
                   "EnableSubscriptionPartitioning": _BOOL("false")}
SUBSCRIPTION_DESCRIBED = {**_COMMON, "DeadLetteringOnFilterEvaluationExceptions": _BOOL("true")}


def description_fields(node: ET.Element) -> Fields:
    """The simple elements of a description, by name (nested ones are read apart)."""
    return {local_name(child): (child.text or "").strip() for child in node if len(child) == 0}


def _field(fields: Fields, name: str) -> str | None:
    """A field's text; None when it is absent or empty (the default then)."""
    return fields.get(name) or None


def _bool_field(fields: Fields, name: str, default: bool) -> bool:
    text = _field(fields, name)
    return default if text is None else _bool(name, text)


def _duration_field(fields: Fields, name: str, default: float | None) -> float | None:
    text = _field(fields, name)
    return default if text is None else _duration(name, text)


def _checked(check: Callable[..., None], *args: object) -> None:
    """A range check of :mod:`fakes._validation`, its ValueError as a 400."""
    try:
        check(*args)
    except ValueError as exc:
        raise ArgumentError(f"{exc}.") from None


def forwarding_target(fields: Fields, name: str) -> str | None:
    """A forwarding target: the SDKs send a URL (``sb://<namespace>/<entity>``) or a name."""
    text = fields.get(name)
    return normalize(text) or None if text else None


def entity_settings(fields: Fields) -> EntitySettings:
    """The settings of a queue or subscription from its description (defaults for what is
    left out, as a create on the service), within the service's ranges."""
    lock_duration = _duration_field(fields, "LockDuration", DEFAULT_LOCK_DURATION)
    if lock_duration is None:
        raise ArgumentError("LockDuration must be a finite duration.")
    window = _duration_field(fields, "DuplicateDetectionHistoryTimeWindow",
                             DEFAULT_DUPLICATE_WINDOW)
    required = _bool_field(fields, "RequiresDuplicateDetection", False)
    deliveries = _field(fields, "MaxDeliveryCount")
    settings = EntitySettings(
        requires_session=_bool_field(fields, "RequiresSession", False),
        lock_duration=lock_duration,
        max_delivery_count=(DEFAULT_MAX_DELIVERY_COUNT if deliveries is None
                            else _int("MaxDeliveryCount", deliveries)),
        default_ttl=_duration_field(fields, "DefaultMessageTimeToLive", None),
        dead_lettering_on_expiration=_bool_field(fields, "DeadLetteringOnMessageExpiration",
                                                 False),
        forward_to=forwarding_target(fields, "ForwardTo"),
        forward_dead_lettered_messages_to=forwarding_target(
            fields, "ForwardDeadLetteredMessagesTo"),
        duplicate_detection_window=window if required else None)
    _checked(check_settings, settings)
    return settings


def topic_settings(fields: Fields) -> tuple[float | None, float | None]:
    """A topic's duplicate detection window (None when it detects none) and default TTL."""
    window = _duration_field(fields, "DuplicateDetectionHistoryTimeWindow",
                             DEFAULT_DUPLICATE_WINDOW)
    required = _bool_field(fields, "RequiresDuplicateDetection", False)
    ttl = _duration_field(fields, "DefaultMessageTimeToLive", None)
    _checked(check_topic_settings, window if required else None, ttl)
    return window if required else None, ttl


def check_tier(tier: Tier, kept: dict[str, str], kind: str) -> float | None:
    """The kept properties of a ``kind`` (Queue, Topic, Subscription) a tier refuses (an
    entity size not among its values, a ``MaxMessageSizeInKilobytes`` outside its range, an
    idle time on Basic), the service's 400, with the tier's default
    ``MaxMessageSizeInKilobytes`` filled in where it has one; the ``AutoDeleteOnIdle`` they
    set in seconds (None: never)."""
    size = kept.get("MaxSizeInMegabytes")
    if size is not None:
        tier.check_entity_size(int(size), kept.get("EnablePartitioning") == "true")
    kilobytes = kept.get("MaxMessageSizeInKilobytes")
    if kilobytes is not None:
        tier.check_message_size_kilobytes(int(kilobytes))
    elif tier.default_message_size_kilobytes is not None and kind != "Subscription":
        # Premium's default (1 MB), kept so that it reads back and holds the entity's messages
        kept["MaxMessageSizeInKilobytes"] = str(tier.default_message_size_kilobytes)
    idle = kept.get("AutoDeleteOnIdle")
    seconds = None if idle is None else _duration("AutoDeleteOnIdle", idle)
    if seconds is not None and not tier.auto_delete_on_idle:
        tier.refuse_feature("AutoDeleteOnIdle", kind)
    return seconds


def described(fields: Fields, kinds: Mapping[str, _Kept]) -> dict[str, str]:
    """The kept-not-acted-on properties a description sets, each read by its kind."""
    kept: dict[str, str] = {}
    for name, kind in kinds.items():
        text = fields.get(name)
        if text is None or (text == "" and not kind.blank):
            continue
        kept[name] = kind.read(name, text)
    return kept


def _kept(values: Mapping[str, str], kinds: Mapping[str, _Kept], name: str) -> str:
    return element(name, values.get(name, kinds[name].default))


def _open(root: str) -> str:
    return f"<{root}{attribute('xmlns', SB_NS)}{attribute('xmlns:i', XSI_NS)}>"


def _count_details(counts: MessageCounts) -> str:
    """``CountDetails``: the one ``xmlns:d2p1`` declaration the JavaScript SDK looks for."""
    values = (("ActiveMessageCount", counts.active),
              ("DeadLetterMessageCount", counts.dead_letter),
              ("ScheduledMessageCount", counts.scheduled),
              ("TransferDeadLetterMessageCount", counts.transfer_dead_letter),
              ("TransferMessageCount", counts.transfer))
    inner = "".join(element(f"d2p1:{name}", str(value)) for name, value in values)
    return f"<CountDetails{attribute('xmlns:d2p1', COUNT_NS)}>{inner}</CountDetails>"


def _forward(host: str, path: str | None) -> str | None:
    return None if path is None else f"sb://{host}/{path}"


def _times(created: float, updated: float, accessed: float) -> str:
    return (element("CreatedAt", timestamp(created)) + element("UpdatedAt", timestamp(updated))
            + element("AccessedAt", timestamp(accessed)))


def _window(window: float | None, values: Mapping[str, str]) -> str:
    """The window detection uses, else the one kept with detection off, else the default."""
    if window is not None:
        return element(_WINDOW_NAME, format_duration(window))
    return _kept(values, QUEUE_DESCRIBED, _WINDOW_NAME)


def queue_xml(queue: Entity, host: str) -> str:
    """A queue's ``QueueDescription`` with its runtime counts."""
    settings, values, kinds = queue.settings, queue.described, QUEUE_DESCRIBED
    counts = queue.counts()
    return "".join((
        _open("QueueDescription"),
        element("LockDuration", format_duration(settings.lock_duration)),
        _kept(values, kinds, "MaxSizeInMegabytes"),
        element("RequiresDuplicateDetection",
                str(settings.duplicate_detection_window is not None).lower()),
        element("RequiresSession", str(settings.requires_session).lower()),
        element("DefaultMessageTimeToLive", format_duration(settings.default_ttl)),
        element("DeadLetteringOnMessageExpiration",
                str(settings.dead_lettering_on_expiration).lower()),
        _window(settings.duplicate_detection_window, values),
        element("MaxDeliveryCount", str(settings.max_delivery_count)),
        _kept(values, kinds, "EnableBatchedOperations"),
        element("SizeInBytes", str(counts.size_in_bytes)),
        element("MessageCount", str(counts.total)),
        _kept(values, kinds, "IsAnonymousAccessible"),
        values.get(AUTHORIZATION_RULES, NO_AUTHORIZATION_RULES),  # XML made by _authorization
        _kept(values, kinds, "Status"),
        element("ForwardTo", _forward(host, settings.forward_to)),
        _kept(values, kinds, "UserMetadata"),
        _times(queue.created_at, queue.updated_at, queue.accessed_at),
        _kept(values, kinds, "SupportOrdering"),
        _count_details(counts),
        _kept(values, kinds, "AutoDeleteOnIdle"),
        _kept(values, kinds, "EnablePartitioning"),
        element("EntityAvailabilityStatus", "Available"),
        element("ForwardDeadLetteredMessagesTo",
                _forward(host, settings.forward_dead_lettered_messages_to)),
        _kept(values, kinds, "EnableExpress"),
        _kept(values, kinds, "MaxMessageSizeInKilobytes"),
        "</QueueDescription>"))


def topic_xml(topic: Topic) -> str:
    """A topic's ``TopicDescription`` with its runtime counts and filter counts."""
    values, kinds = topic.described, TOPIC_DESCRIBED
    counts = topic.counts()
    rules = [rule for subscription in topic.subscriptions.values()
             for rule in subscription.rules()]
    correlation = sum(1 for rule in rules if rule.filter.kind == "correlation")
    window = None if topic.duplicates is None else topic.duplicates.window
    return "".join((
        _open("TopicDescription"),
        element("DefaultMessageTimeToLive", format_duration(topic.default_ttl)),
        _kept(values, kinds, "MaxSizeInMegabytes"),
        element("RequiresDuplicateDetection", str(window is not None).lower()),
        _window(window, values),
        _kept(values, kinds, "EnableBatchedOperations"),
        element("SizeInBytes", str(counts.size_in_bytes)),
        _kept(values, kinds, "FilteringMessagesBeforePublishing"),
        _kept(values, kinds, "IsAnonymousAccessible"),
        values.get(AUTHORIZATION_RULES, NO_AUTHORIZATION_RULES),  # XML made by _authorization
        _kept(values, kinds, "Status"),
        _times(topic.created_at, topic.updated_at, topic.accessed_at),
        _kept(values, kinds, "SupportOrdering"),
        _count_details(counts),
        element("SubscriptionCount", str(len(topic.subscriptions))),
        element("SqlFilterCount", str(len(rules) - correlation)),
        element("CorrelationFilterCount", str(correlation)),
        _kept(values, kinds, "AutoDeleteOnIdle"),
        _kept(values, kinds, "EnablePartitioning"),
        element("EntityAvailabilityStatus", "Available"),
        _kept(values, kinds, "EnableSubscriptionPartitioning"),
        _kept(values, kinds, "EnableExpress"),
        _kept(values, kinds, "UserMetadata"),
        _kept(values, kinds, "MaxMessageSizeInKilobytes"),
        "</TopicDescription>"))


def subscription_xml(subscription: Entity, host: str) -> str:
    """A subscription's ``SubscriptionDescription`` with its runtime counts."""
    settings, values, kinds = subscription.settings, subscription.described, SUBSCRIPTION_DESCRIBED
    counts = subscription.counts()
    return "".join((
        _open("SubscriptionDescription"),
        element("LockDuration", format_duration(settings.lock_duration)),
        element("RequiresSession", str(settings.requires_session).lower()),
        element("DefaultMessageTimeToLive", format_duration(settings.default_ttl)),
        element("DeadLetteringOnMessageExpiration",
                str(settings.dead_lettering_on_expiration).lower()),
        _kept(values, kinds, "DeadLetteringOnFilterEvaluationExceptions"),
        element("MessageCount", str(counts.total)),
        element("MaxDeliveryCount", str(settings.max_delivery_count)),
        _kept(values, kinds, "EnableBatchedOperations"),
        _kept(values, kinds, "Status"),
        element("ForwardTo", _forward(host, settings.forward_to)),
        _times(subscription.created_at, subscription.updated_at, subscription.accessed_at),
        _count_details(counts),
        _kept(values, kinds, "UserMetadata"),
        element("ForwardDeadLetteredMessagesTo",
                _forward(host, settings.forward_dead_lettered_messages_to)),
        _kept(values, kinds, "AutoDeleteOnIdle"),
        element("EntityAvailabilityStatus", "Available"),
        "</SubscriptionDescription>"))


def namespace_xml(name: str, created: float) -> str:
    """``NamespaceInfo``: a Standard messaging namespace (no alias, no messaging units)."""
    return "".join((
        _open("NamespaceInfo"),
        element("CreatedTime", timestamp(created)),
        element("MessagingSKU", "Standard"),
        element("ModifiedTime", timestamp(created)),
        element("Name", name),
        element("NamespaceType", "Messaging"),
        "</NamespaceInfo>"))


def default_rule_node(node: ET.Element) -> ET.Element | None:
    """A subscription description's default rule (``DefaultRuleDescription``, or
    ``RuleDescription`` as azure-servicebus names it), if it has one."""
    for child in node:
        if local_name(child) in ("DefaultRuleDescription", "RuleDescription"):
            return child
    return None
