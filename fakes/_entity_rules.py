"""A subscription's rules: one record per rule, changed only through the entity's methods.

Every way in calls the same methods: the AMQP rule operations
(:mod:`fakes._session_rule_ops`: add-rule, remove-rule, enumerate-rules), the administration
API's rule handlers (:mod:`fakes._admin._operations`) and the fan-out (:mod:`fakes._store`
reads :meth:`EntityRules.rules`). A rule's record, :class:`StoredRule`, holds the rule as the
fake evaluates it and, for a SQL filter or action that came with SQL parameters, the
expression and parameters as they were sent (the fake's SQL engine has none, so they are
bound into the evaluated rule; the administration API reports them back as sent). The
record is replaced or removed as a whole, so what is reported can never outlive the rule it
describes, and every change dates the subscription (``updated_at``: the administration API's
UpdatedAt), whichever way it came in.

:class:`EntityRules` is a mixin of :class:`~fakes._entity.Entity`, which holds the records;
what it uses of the entity is the :class:`_Subscription` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

from sbmgmt.rules import PropertyValue, RuleDescription

from ._entity_state import as_datetime
from ._errors import ArgumentError, EntityAlreadyExists, EntityNotFound
from ._rules import check_rule

__all__ = ["EntityRules", "SentSql", "StoredRule"]


@dataclass(frozen=True)
class SentSql:
    """A SQL filter's or action's expression and its parameters, as a client sent them."""

    expression: str
    parameters: dict[str, PropertyValue] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredRule:
    """One rule of a subscription: ``rule`` as evaluated (SQL parameters bound) and, when its
    SQL filter or action had parameters, that part as it was sent."""

    rule: RuleDescription
    sent_filter: SentSql | None = None
    sent_action: SentSql | None = None

    @property
    def name(self) -> str:
        """The rule's name, unique in its subscription."""
        return self.rule.name

    def checked(self) -> StoredRule:
        """This record, if its SQL filter and action parse (else 400, in the service's words)."""
        try:
            check_rule(self.rule)
        except ValueError as exc:
            raise ArgumentError(f"The rule {self.name!r} is not valid: {exc}") from None
        return self

    def dated(self, now: float) -> StoredRule:
        """This record with the rule's creation time set to ``now`` unless it has one."""
        if self.rule.created_at is not None:
            return self
        return replace(self, rule=self.rule.model_copy(update={"created_at": as_datetime(now)}))


class _Subscription(Protocol):
    """What the rule methods use of the entity that holds the records."""

    path: str
    updated_at: float
    _rules: dict[str, StoredRule]


class EntityRules:
    """The rule half of a subscription (a mixin: the entity holds the records)."""

    def rules(self: _Subscription) -> list[RuleDescription]:
        """The rules as evaluated, in creation order (as enumerate-rules lists them)."""
        return [stored.rule for stored in self._rules.values()]

    def stored_rules(self: _Subscription) -> list[StoredRule]:
        """Every rule's record, in creation order."""
        return list(self._rules.values())

    def stored_rule(self: _Subscription, name: str) -> StoredRule:
        """The record of the rule ``name`` (404 if there is none)."""
        stored = self._rules.get(name)
        if stored is None:
            raise EntityNotFound.of(f"{self.path}/Rules/{name}")
        return stored

    def add_rule(self: _Subscription, stored: StoredRule, now: float) -> StoredRule:
        """Add a rule (409 if its name is taken, 400 if its SQL does not parse), created
        ``now`` unless it says when; returns the record kept."""
        if stored.name in self._rules:
            raise EntityAlreadyExists(
                f"The messaging entity '{self.path}/Rules/{stored.name}' already exists.")
        kept = self._rules[stored.name] = stored.checked().dated(now)
        self.updated_at = now
        return kept

    def replace_rule(self: _Subscription, stored: StoredRule, now: float) -> StoredRule:
        """Replace the rule of the same name (404 if there is none, 400 if the new SQL does
        not parse), keeping its creation time; returns the record kept."""
        existing = EntityRules.stored_rule(self, stored.name)
        rule = stored.checked().rule.model_copy(update={"created_at": existing.rule.created_at})
        kept = self._rules[stored.name] = replace(stored, rule=rule)
        self.updated_at = now
        return kept

    def remove_rule(self: _Subscription, name: str, now: float) -> None:
        """Remove the rule ``name`` and everything kept about it (404 if there is none)."""
        EntityRules.stored_rule(self, name)
        del self._rules[name]
        self.updated_at = now
