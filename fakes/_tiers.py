"""The service's tiers: each one's published quotas and features, in one place.

A namespace of the fake has one :class:`Tier` (``FakeNamespace(tier="basic" | "standard" |
"premium")``, ``python -m fakes --tier``; Standard by default, as the emulator's message
size is Standard's). Every number below is the service's, with the public page it comes
from beside it; docs/fake.md ("Tiers") has the same table. A test that needs a huge quota
reached quickly makes a tier of its own with a smaller number
(``dataclasses.replace(STANDARD, max_entities=3)``): the rules are the same, only the
number differs.

The pages (learn.microsoft.com/azure/service-bus-messaging/...):

- ``service-bus-quotas`` (its two tables: "limits common across all tiers" and "limits that
  are different for Basic, Standard, and Premium tiers");
- ``service-bus-premium-messaging`` ("Large messages support": 100 MB on AMQP, set per entity
  with ``MaxMessageSizeInKilobytes`` between 1,024 and 102,400);
- ``batch-delete`` ("Quotas": Standard 500 messages, Premium 4,000);
- ``service-bus-throttling`` (Standard: 1,000 credits a second per namespace; a message is 1,
  a management operation 10; Premium has no such limit);
- the features table of ``service-bus-premium-messaging`` / the quotas page ("Topics,
  Transactions, De-duplication, Sessions, ForwardTo/SendVia": not in Basic).

What the fake does with each is in :mod:`fakes._store` (entities, subscriptions, filters,
features), :mod:`fakes._storable` (property and header sizes), :mod:`fakes._coordinator`
(messages per transaction), :mod:`fakes._throttle` (credits), the administration API
(entity sizes, ``MaxMessageSizeInKilobytes``) and the management node (batch delete).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import ArgumentError, ArgumentOutOfRange, QuotaExceeded
from ._storable import MessageSizeExceeded

__all__ = ["BASIC", "PREMIUM", "STANDARD", "TIERS", "Tier", "tier_named"]

_KB = 1024
_MB = 1024 * 1024
#: "Queue or topic size | 1, 2, 3, 4 GB, or 5 GB" (quotas, Basic and Standard); the values
#: the service takes for ``MaxSizeInMegabytes`` (the Azure CLI's ``--max-size`` help lists
#: them: 1024, 2048, 3072, 4096, 5120, and Premium's 10240 to 81920).
_STANDARD_SIZES = (1024, 2048, 3072, 4096, 5120)
#: "80 GB" for Premium (quotas); the sizes between, as the Azure CLI lists them.
_PREMIUM_SIZES = (*_STANDARD_SIZES, 10240, 20480, 40960, 81920)
#: A partitioned entity of Basic or Standard has 16 partitions, each of the size asked
#: for: it reports 16 times that ("80 GB, if partitioning is enabled", quotas;
#: azure-sdk-for-net issue 3855: a partitioned queue reads back 16 GB).
_PARTITIONS = 16


@dataclass(frozen=True)
class Tier:
    """One tier's quotas (bytes, counts) and features."""

    #: The service's name for it, as its error texts quote it.
    name: str
    #: "Message size ... 256 KB" (Basic, Standard); "AMQP protocol: Up to 100 MB for single
    #: message" (Premium), quotas. Every link advertises it as its max-message-size.
    max_message_size: int
    #: "Number of messages per transaction | 100" (quotas, common).
    max_transaction_messages: int = 100
    #: "Maximum message property size for each property is 32 KB" (quotas, common).
    max_property_size: int = 32 * _KB
    #: "Cumulative size of all properties can't exceed 64 KB. This limit applies to the
    #: entire header of the brokered message" (quotas, common).
    max_header_size: int = 64 * _KB
    #: "Standard | 500 messages", "Premium | 4,000 messages" (batch-delete, "Quotas"; the
    #: quotas page's common table says 500 for every tier).
    max_batch_delete: int = 500
    #: "Number of topics or queues per namespace | 10,000 | 10,000 | 1,000 per messaging
    #: unit (MU)" (quotas; the fake's Premium namespace has one messaging unit).
    max_entities: int = 10_000
    #: "Number of subscriptions per topic | 2,000" (quotas, every tier).
    max_subscriptions_per_topic: int = 2_000
    #: "Number of SQL filters per topic | 2,000" (quotas, common).
    max_sql_filters_per_topic: int = 2_000
    #: "Number of correlation filters per topic | 100,000" (quotas, common).
    max_correlation_filters_per_topic: int = 100_000
    #: The ``MaxSizeInMegabytes`` values an entity may have ("Queue or topic size", quotas).
    entity_sizes: tuple[int, ...] = _STANDARD_SIZES
    #: Whether entities may be partitioned (Basic and Standard; Premium partitions the
    #: namespace instead, quotas "Number of partitioned topics or queues": N/A).
    partitioning: bool = True
    #: ``MaxMessageSizeInKilobytes``'s range, or None where it cannot be set ("This property
    #: is only used in Premium today", the REST API; "must be between 1024 and 102400 when
    #: the namespace ... is using 'Premium' tier", the service's words in Azure/
    #: ResourceModules issue 2629). Where it can, an entity's messages are held to it: "For
    #: Premium, the default maximum message size per entity is 1 MB. You can increase it up
    #: to 100 MB per queue or topic" (quotas) ...
    message_size_kilobytes: tuple[int, int] | None = None
    #: ... (its value when a create does not set it) ...
    default_message_size_kilobytes: int | None = None
    #: ... and a batch to this many bytes: "All protocols: Up to 1 MB for message batch"
    #: (quotas, Premium; None: a batch is held to the message size, as Basic and Standard).
    max_batch_size: int | None = None
    #: "Operations per second | 1,000 | 1,000 | N/A" (quotas), credit-based
    #: (service-bus-throttling); None: no fixed limit (Premium).
    credits_per_second: int | None = 1_000
    #: Features the Basic tier lacks (the quotas page's features table: "Topics,
    #: Transactions, De-duplication, Sessions, ForwardTo/SendVia").
    topics: bool = True
    transactions: bool = True
    duplicate_detection: bool = True
    sessions: bool = True
    forwarding: bool = True
    #: "The property 'AutoDeleteOnIdle' cannot be set when creating a Queue because the
    #: namespace '...' is using 'Basic' tier." (the service's words, MassTransit issue 657).
    auto_delete_on_idle: bool = True

    def __post_init__(self) -> None:
        for name in ("max_message_size", "max_transaction_messages", "max_property_size",
                     "max_header_size", "max_batch_delete", "max_entities",
                     "max_subscriptions_per_topic", "max_sql_filters_per_topic",
                     "max_correlation_filters_per_topic"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")
        if self.credits_per_second is not None and self.credits_per_second < 1:
            raise ValueError(f"credits_per_second must be at least 1 (or None), not "
                             f"{self.credits_per_second!r}")

    # --- the checks the store, the administration API and the management node make ----

    def refuse_feature(self, prop: str, kind: str) -> None:
        """Raise the service's refusal of ``prop`` set on a ``kind`` (Queue, Subscription)
        in a namespace of this tier, as its words go for AutoDeleteOnIdle on Basic."""
        raise ArgumentError(f"The property '{prop}' cannot be set when creating a {kind} "
                            f"because the namespace is using '{self.name}' tier.")

    def check_topics(self) -> None:
        """Topics exist in this tier (Basic has none)."""
        if not self.topics:
            raise ArgumentError(f"Topics are not supported because the namespace is using "
                                f"'{self.name}' tier.")

    def check_entity_count(self, count: int) -> None:
        """A namespace holding ``count`` queues and topics may create one more."""
        if count >= self.max_entities:
            raise QuotaExceeded(f"The maximum entity count of {self.max_entities} queues and "
                                f"topics in a '{self.name}' tier namespace has been reached.")

    def check_subscription_count(self, topic: str, count: int) -> None:
        """A topic holding ``count`` subscriptions may have one more."""
        if count >= self.max_subscriptions_per_topic:
            raise QuotaExceeded(f"The topic '{topic}' has the maximum of "
                                f"{self.max_subscriptions_per_topic} subscriptions.")

    def check_filter_counts(self, topic: str, sql: int, correlation: int) -> None:
        """A topic may hold ``sql`` SQL filters and ``correlation`` correlation filters."""
        if sql > self.max_sql_filters_per_topic:
            raise QuotaExceeded(f"The topic '{topic}' may hold at most "
                                f"{self.max_sql_filters_per_topic} SQL filters.")
        if correlation > self.max_correlation_filters_per_topic:
            raise QuotaExceeded(f"The topic '{topic}' may hold at most "
                                f"{self.max_correlation_filters_per_topic} correlation "
                                "filters.")

    def check_batch_delete(self, count: int) -> None:
        """A batch delete may ask for ``count`` messages (the service's words, as the
        JavaScript SDK's issue 34274 quotes them)."""
        if count > self.max_batch_delete:
            raise ArgumentOutOfRange(
                f"Invalid Message Count : requested {count}. Message count should be between "
                f"1 and {self.max_batch_delete}.")

    def check_transaction_size(self, count: int) -> None:
        """A transaction may hold ``count`` messages (the quotas page's words)."""
        if count > self.max_transaction_messages:
            raise QuotaExceeded(f"Cannot send more than {self.max_transaction_messages} "
                                "messages in a single transaction.")

    def check_entity_size(self, megabytes: int, partitioned: bool) -> None:
        """``MaxSizeInMegabytes`` is one of this tier's values (16 times one for a
        partitioned entity)."""
        allowed = self.entity_sizes
        if partitioned and self.partitioning:
            allowed = tuple(size * _PARTITIONS for size in allowed)
        if megabytes not in allowed:
            raise ArgumentError(
                f"The specified value {megabytes} is invalid. The property MaxSizeInMegabytes "
                f"must be one of the following values: {';'.join(map(str, allowed))} on a "
                f"'{self.name}' tier namespace.")

    def check_entity_message(self, path: str, size: int, batch: bool,
                             kilobytes: int | None) -> None:
        """A transfer of ``size`` bytes (a ``batch`` or one message) to the entity at ``path``
        whose ``MaxMessageSizeInKilobytes`` is ``kilobytes`` (None: the tier's default), where
        the tier sets one per entity (Premium; elsewhere the links' size is the limit)."""
        if self.message_size_kilobytes is None:
            return
        limit = (self.max_batch_size if batch and self.max_batch_size is not None
                 else (kilobytes or self.default_message_size_kilobytes or 0) * _KB)
        if size > limit:
            what = "batch" if batch else "message"
            raise MessageSizeExceeded(
                f"The {what} of {size} bytes exceeds the limit of {limit} bytes of "
                f"'{path}' (its MaxMessageSizeInKilobytes on a '{self.name}' tier namespace"
                f"{'; a batch: 1 MB' if batch else ''}).")

    def check_message_size_kilobytes(self, kilobytes: int) -> None:
        """``MaxMessageSizeInKilobytes`` within this tier's range (settable on Premium only;
        elsewhere only the tier's own size is taken, the value the service reads back and an
        update sends again)."""
        span = self.message_size_kilobytes
        if span is None:
            if kilobytes == self.max_message_size // _KB:
                return
            raise ArgumentError(f"The property 'MaxMessageSizeInKilobytes' can only be set "
                                f"when the namespace is using 'Premium' tier; it is using "
                                f"'{self.name}' tier.")
        if not span[0] <= kilobytes <= span[1]:
            raise ArgumentError(f"The property value for 'MaxMessageSizeInKilobytes' must be "
                                f"between {span[0]} and {span[1]} when the namespace is "
                                f"using '{self.name}' tier.")


#: The Standard tier, the fake's default (the emulator's message size is Standard's).
STANDARD = Tier("Standard", max_message_size=256 * _KB)
#: The Basic tier: Standard's quotas, without topics, transactions, duplicate detection,
#: sessions, forwarding or auto-delete-on-idle.
BASIC = Tier("Basic", max_message_size=256 * _KB, topics=False, transactions=False,
             duplicate_detection=False, sessions=False, forwarding=False,
             auto_delete_on_idle=False)
#: The Premium tier (one messaging unit): 100 MB messages, batch deletes of 4,000, larger
#: entities, 1,000 entities, no fixed throttling.
PREMIUM = Tier("Premium", max_message_size=100 * _MB, max_batch_delete=4_000,
               max_entities=1_000, entity_sizes=_PREMIUM_SIZES, partitioning=False,
               message_size_kilobytes=(1024, 102_400), default_message_size_kilobytes=1024,
               max_batch_size=1 * _MB, credits_per_second=None)
#: The tiers by the names ``--tier`` and ``FakeNamespace(tier=...)`` take.
TIERS = {"basic": BASIC, "standard": STANDARD, "premium": PREMIUM}


def tier_named(tier: str | Tier) -> Tier:
    """The tier ``basic``, ``standard`` or ``premium`` (any case), or ``tier`` itself."""
    if isinstance(tier, Tier):
        return tier
    found = TIERS.get(tier.lower()) if isinstance(tier, str) else None
    if found is None:
        raise ValueError(f"tier must be 'basic', 'standard' or 'premium' (or a fakes.Tier), "
                         f"not {tier!r}")
    return found
