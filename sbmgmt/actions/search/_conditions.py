"""A search's conditions (:class:`Conditions`), checked and compiled once into one test of
a message: the cheap ones first (sequence numbers, state, session, enqueued time, the SQL
filter), the body's last (:mod:`._body_tests`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from ...message import MessageState, ReceivedMessage
from ...sql import SqlSyntaxError, parse_filter
from ._body_tests import BodyOf, body_tests
from ._records import ConditionError

__all__ = ["ConditionError", "Conditions"]

_STATES = {"active": MessageState.ACTIVE, "deferred": MessageState.DEFERRED,
           "scheduled": MessageState.SCHEDULED}


@dataclass(frozen=True)
class Conditions:
    """What a message must meet to be found; every condition given must hold (None: any).

    Attributes:
        where: A SQL filter over the system and application properties (docs/sql-filters.md).
        body: A text the body must contain, case-insensitively, as the explorer shows it.
        body_regex: A regular expression (Python's ``re``) the shown body must contain a
            match of; ``(?i)`` makes it case-insensitive.
        path: ``$...``: a JSONPath query on a JSON (or amqp-value) body; otherwise an
            ElementTree path on an XML body; either may end with a comparison
            (``$.order.total > 100``, ``order/status == 'failed'``).
        states: Only messages in these states (``active``, ``deferred``, ``scheduled``).
        session_id: Only this session's messages.
        enqueued_from: Only messages enqueued at or after this time (UTC when naive).
        enqueued_to: Only messages enqueued at or before this time (UTC when naive).
        from_sequence_number: Only sequence numbers from this one (the read starts there).
        to_sequence_number: Only sequence numbers up to this one (the read stops there).
    """

    where: str | None = None
    body: str | None = None
    body_regex: str | None = None
    path: str | None = None
    states: frozenset[str] | None = None
    session_id: str | None = None
    enqueued_from: datetime | None = None
    enqueued_to: datetime | None = None
    from_sequence_number: int | None = None
    to_sequence_number: int | None = None

    def matcher(self) -> Callable[[ReceivedMessage], bool]:
        """The conditions compiled into one test, checked first.

        Returns:
            A function that tells whether a message meets every condition.

        Raises:
            ConditionError: A condition cannot be used; it names which and why.
        """
        return _Matcher(self).compiled()


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


class _Matcher:
    """The conditions, compiled once: cheap tests first, the body last."""

    def __init__(self, conditions: Conditions) -> None:
        tests: list[Callable[[ReceivedMessage], bool]] = []
        first, last = conditions.from_sequence_number, conditions.to_sequence_number
        if first is not None and last is not None and last < first:
            raise ConditionError("sequence numbers", f"the range {first}..{last} is empty")
        if first is not None:
            tests.append(lambda m: (m.sequence_number or 0) >= first)
        if last is not None:
            tests.append(lambda m: (m.sequence_number or 0) <= last)
        if conditions.states is not None:
            unknown = sorted(set(conditions.states) - _STATES.keys())
            if unknown or not conditions.states:
                raise ConditionError("states", f"{unknown[0]!r} is not a state (active, "
                                     "deferred, scheduled)" if unknown else "none given")
            states = frozenset(_STATES[name] for name in conditions.states)
            tests.append(lambda m: m.state in states)
        if conditions.session_id is not None:
            session = conditions.session_id
            tests.append(lambda m: m.session_id == session)
        tests += self._times(conditions)
        if conditions.where is not None:
            try:
                program = parse_filter(conditions.where)
            except SqlSyntaxError as error:
                raise ConditionError("where", str(error)) from None
            tests.append(program.matches)
        screens, body = body_tests(conditions.body, conditions.body_regex, conditions.path)
        self._tests = (*tests, *screens)
        self._body_tests = tuple(body)

    @staticmethod
    def _times(conditions: Conditions) -> list[Callable[[ReceivedMessage], bool]]:
        start = None if conditions.enqueued_from is None else _utc(conditions.enqueued_from)
        end = None if conditions.enqueued_to is None else _utc(conditions.enqueued_to)
        if start is not None and end is not None and end < start:
            raise ConditionError("enqueued time", f"the range {start.isoformat()} .. "
                                 f"{end.isoformat()} is empty")
        tests: list[Callable[[ReceivedMessage], bool]] = []
        if start is not None:
            tests.append(lambda m: m.enqueued_time is not None and m.enqueued_time >= start)
        if end is not None:
            tests.append(lambda m: m.enqueued_time is not None and m.enqueued_time <= end)
        return tests

    def compiled(self) -> Callable[[ReceivedMessage], bool]:
        """The one test: the cheap ones, then the body's (one or two tests composed
        directly: a search reads every message of an entity through it)."""
        tests, body_tests = self._tests, self._body_tests
        if len(tests) == 1 and not body_tests:
            return tests[0]
        if len(body_tests) == 1 and len(tests) <= 1:
            body_test = body_tests[0]
            if not tests:
                return lambda message: body_test(BodyOf(message))
            first = tests[0]
            return lambda message: first(message) and body_test(BodyOf(message))

        def matches(message: ReceivedMessage) -> bool:
            for test in tests:
                if not test(message):
                    return False
            if not body_tests:
                return True
            body = BodyOf(message)
            return all(test(body) for test in body_tests)

        return matches
