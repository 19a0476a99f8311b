"""Search: the messages of an entity, its dead-letter queue or a whole namespace that meet
some conditions, handed out as they are read.

The service has no search: every message is peeked and tested on the client. A search
reads the entity with ``peek_all`` (pages in flight, in sequence-number order, nothing
locked, nothing changed) and tests each message as it comes, so the first match is
handed out while the rest is still being read, and nothing is kept but the pages in
flight and the matches not yet taken (memory does not grow with the entity).

Conditions (:class:`Conditions`, every given one must hold), tested cheapest first:

- the sequence-number range (also the range peeked), the state (active, deferred,
  scheduled), the session id, the enqueued-time range;
- ``where``: a SQL filter over the system and application properties, as a subscription
  rule evaluates it (:mod:`sbmgmt.sql`, the evaluator the fake's rules run on);
- ``body`` (a case-insensitive substring) and ``body_regex`` (a regular expression): the
  body's text as the explorer shows it (:mod:`sbmgmt.message_view`: JSON and XML
  indented, an amqp-value or amqp-sequence body as JSON, binary as a hex dump). A JSON
  body is indented only when its compact text, whitespace aside, holds the substring
  (the standard library's indenting encoder costs several times the parse); the regular
  expression needs the indented text of every JSON body it reaches;
- ``path``: ``$...`` is a JSONPath query (RFC 9535, by the python-jsonpath package) on a
  JSON body or an amqp-value / amqp-sequence body; anything else is an ElementTree path
  (the standard library's XPath subset) on an XML body. The path matches when it
  selects something; ``PATH OP VALUE`` (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``,
  VALUE a JSON literal) when one of the values it selects compares so.

:func:`search` / :func:`search_async` read one entity (or its dead-letter queue);
:func:`search_namespace` / :func:`search_namespace_async` read many, several at once
(``entities_in_flight``: threads on the sync client, tasks on the asyncio one), and hand
out their matches as each finds them, through a bounded queue (a reader that stops
taking them stops the readers).

Theory of operation of a namespace search (sync): ``entities_in_flight`` reader threads
each take the next path (under a lock), read it as :func:`search` does and put each match
in a queue of :data:`_QUEUED_MATCHES` (waiting while it is full, giving up once ``cancel``
is set); a reader puts ``None`` when no path is left. The caller's iterator takes from the
queue until every reader put its ``None``, ``max_count`` matches were handed out, or
``cancel`` is set; leaving it (closed, broken off, raised through) sets ``cancel`` and
joins the readers. An entity whose read fails with the service's error is counted as
failed and the reader goes on; any other exception stops every reader and is raised by
the caller's iterator. The asyncio twin is the same with tasks and an ``asyncio.Queue``
(leaving cancels the tasks). A :class:`Found` is the entity and the message. What was
found can be handed on: :func:`found_selection` makes the
[Selection][sbmgmt.actions.repair.Selection] of resubmit / move; the messages themselves
go to ``export.write_messages`` or ``deferred.settle_deferred``; :func:`read_found` reads
the sequence numbers and MessageIds back from an export file (``sbmgmt find -o
ndjson``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import queue
import re
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import jsonpath
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as parse_xml

from ..aio import AsyncManagementClient
from ..client import ManagementClient
from ..errors import ExportFormatError, ProtocolError, ServiceBusManagementError
from ..message import MessageId, MessageState, ReceivedMessage
from ..message_view import BodyForm, BodyKind, body_form, might_contain
from ..sql import SqlSyntaxError, parse_filter
from .export import message_from_json
from .repair import DEAD_LETTER_SUFFIX, Selection

__all__ = [
    "DEFAULT_ENTITIES_IN_FLIGHT",
    "ConditionError",
    "Conditions",
    "Found",
    "FoundLines",
    "SearchProgress",
    "found_selection",
    "read_found",
    "search",
    "search_async",
    "search_namespace",
    "search_namespace_async",
]

#: Entities read at once by a namespace search.
DEFAULT_ENTITIES_IN_FLIGHT = 4
#: Matches held for the reader at most, in a namespace search (the readers wait beyond).
_QUEUED_MATCHES = 256
#: Progress is told every so many messages read (and at each entity's end).
_PROGRESS_EVERY = 500

_STATES = {"active": MessageState.ACTIVE, "deferred": MessageState.DEFERRED,
           "scheduled": MessageState.SCHEDULED}
_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge,
    "<": operator.lt, ">": operator.gt}
# A trailing comparison: the path, an operator, a JSON literal (or a single-quoted string).
_TRAILING = re.compile(
    r"^(?P<path>.+?)\s*(?P<op>==|!=|<=|>=|<|>)\s*"
    r"(?P<value>'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
    r"|true|false|null)\s*$")


class ConditionError(ValueError):
    """A condition of a search that cannot be used: a SQL filter, a regular expression or
    a path that does not parse, an unknown state, a range that is empty.

    Attributes:
        condition: The condition's name (``where``, ``body_regex``, ``path``, ``states``...).
    """

    def __init__(self, condition: str, reason: str) -> None:
        super().__init__(f"{condition}: {reason}")
        self.condition = condition


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


@dataclass(frozen=True)
class Found:
    """A message a search found, and the entity it is in.

    Attributes:
        entity: The path read (``q``, ``t/Subscriptions/s``, ``q/$DeadLetterQueue``).
        message: The message, as peeked (no lock).
    """

    entity: str
    message: ReceivedMessage


@dataclass(frozen=True)
class SearchProgress:
    """How far a search got.

    Attributes:
        read: Messages read so far, every entity together.
        found: Messages found so far.
        entities_done: Entities read to the end (or to ``max_count``).
        entities: Entities to read (1 for one entity).
        failed: Entities that could not be read, each with the reason.
    """

    read: int
    found: int
    entities_done: int
    entities: int
    failed: tuple[tuple[str, str], ...] = ()


OnProgress = Callable[[SearchProgress], None]


# ---- conditions ---------------------------------------------------------------------------


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


class _BodyOf:
    """One message's body form, decided at the first body condition that needs it."""

    __slots__ = ("form", "message")

    def __init__(self, message: ReceivedMessage) -> None:
        self.message = message
        self.form: BodyForm | None = None

    def get(self) -> BodyForm:
        if self.form is None:
            self.form = body_form(self.message)
        return self.form


_BodyTest = Callable[[_BodyOf], bool]


def _substring_test(text: str) -> _BodyTest:
    needle = text.casefold()
    pieces = needle.split()

    def contains(body: _BodyOf) -> bool:
        if not might_contain(body.message, needle):
            return False  # told from the raw text, unparsed
        form = body.get()
        if form.kind in (BodyKind.JSON, BodyKind.VALUE):
            compact = form.compact_text().casefold()
            if not all(piece in compact for piece in pieces):
                return False  # not in the tokens: not in the indented text either
        return needle in form.text.casefold()

    return contains


def _regex_test(pattern: str) -> _BodyTest:
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise ConditionError("body_regex", f"not a regular expression: {error}") from None
    return lambda body: compiled.search(body.get().text) is not None


def _literal(text: str) -> Any:
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    return json.loads(text)


def _compares(op: Callable[[Any, Any], bool], value: Any) -> Callable[[Any], bool]:
    def holds(found: Any) -> bool:
        if isinstance(value, str) != isinstance(found, str) or \
                isinstance(value, bool) != isinstance(found, bool):
            return False  # a number is not compared with text, nor a bool with a number
        try:
            return bool(op(found, value))
        except TypeError:
            return False
    return holds


def _split_comparison(text: str, literal: Callable[[str], Any],
                      ) -> tuple[str, Callable[[Any], bool] | None]:
    """The path and the test of what it selects (None: selecting something is enough)."""
    trailing = _TRAILING.match(text)
    if trailing is None:
        return text, None
    return trailing["path"], _compares(_COMPARISONS[trailing["op"]], literal(trailing["value"]))


def _json_path_test(text: str) -> _BodyTest:
    try:
        whole = jsonpath.compile(text)
        test: Callable[[Any], bool] | None = None
    except jsonpath.JSONPathError:
        path, test = _split_comparison(text, _literal)
        try:
            whole = jsonpath.compile(path)
        except jsonpath.JSONPathError as error:
            raise ConditionError("path", f"not a JSONPath query: {_first_line(error)}") \
                from None

    def selects(body: _BodyOf) -> bool:
        form = body.get()
        if form.kind not in (BodyKind.JSON, BodyKind.VALUE):
            return False
        try:
            values = whole.findall(form.document)
        except (jsonpath.JSONPathError, TypeError):
            return False  # a value the query cannot walk (a proton type, a tuple)
        return bool(values) if test is None else any(test(value) for value in values)

    return selects


def _xml_text(node: ElementTree.Element, like: Any) -> Any:
    """An element's text, as a number when it is compared with a number."""
    text = (node.text or "").strip()
    if isinstance(like, (int, float)) and not isinstance(like, bool):
        try:
            return float(text)
        except ValueError:
            return text
    return text


def _xml_path_test(text: str) -> _BodyTest:
    compared: list[Any] = []

    def literal(value: str) -> Any:
        compared.append(_literal(value))
        return compared[0]

    path, test = _split_comparison(text, literal)
    if path.startswith("//"):
        path = "." + path
    elif path.startswith("/"):
        raise ConditionError("path", "an ElementTree path starts at the root element: write "
                             "'order/total' or './/total', not '/root/order/total'")
    try:
        ElementTree.fromstring("<x/>").findall(path)
    except (SyntaxError, KeyError, TypeError) as error:
        raise ConditionError("path", f"not an ElementTree path: {error}") from None
    like = compared[0] if compared else None

    def selects(body: _BodyOf) -> bool:
        form = body.get()
        if form.kind is not BodyKind.XML:
            return False
        assert form.raw is not None
        try:
            nodes = parse_xml(form.raw.strip()).findall(path)
        except (ElementTree.ParseError, DefusedXmlException, SyntaxError):
            return False
        if test is None:
            return bool(nodes)
        return any(test(_xml_text(node, like)) for node in nodes)

    return selects


def _first_line(value: object) -> str:
    return str(value).strip().splitlines()[0] if str(value).strip() else "empty"


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
        self._tests = tuple(tests)
        self._body_tests = tuple(self._body(conditions))

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

    @staticmethod
    def _body(conditions: Conditions) -> list[_BodyTest]:
        tests: list[_BodyTest] = []
        if conditions.body is not None:
            if not conditions.body:
                raise ConditionError("body", "the text to find is empty")
            tests.append(_substring_test(conditions.body))
        if conditions.body_regex is not None:
            tests.append(_regex_test(conditions.body_regex))
        if conditions.path is not None:
            text = conditions.path.strip()
            if not text:
                raise ConditionError("path", "the path is empty")
            tests.append(_json_path_test(text) if text.startswith("$") else _xml_path_test(text))
        return tests

    def compiled(self) -> Callable[[ReceivedMessage], bool]:
        """The one test: the cheap ones, then the body's (a single test on its own: a
        search reads every message of an entity through it)."""
        tests, body_tests = self._tests, self._body_tests
        if len(tests) == 1 and not body_tests:
            return tests[0]
        if len(body_tests) == 1 and not tests:
            body_test = body_tests[0]
            return lambda message: body_test(_BodyOf(message))

        def matches(message: ReceivedMessage) -> bool:
            for test in tests:
                if not test(message):
                    return False
            if not body_tests:
                return True
            body = _BodyOf(message)
            return all(test(body) for test in body_tests)

        return matches


# ---- one entity --------------------------------------------------------------------------


def _path(entity: str, dead_letter: bool) -> str:
    if dead_letter and not entity.endswith(DEAD_LETTER_SUFFIX):
        return entity + DEAD_LETTER_SUFFIX
    return entity


def _check_max(max_count: int | None) -> None:
    if max_count is not None and (isinstance(max_count, bool) or max_count < 1):
        raise ValueError(f"max_count must be 1 or more, got {max_count}")


@dataclass
class _Tally:
    """What a search has read and found, told to ``on_progress`` now and then."""

    entities: int
    on_progress: OnProgress | None
    max_count: int | None
    read: int = 0
    found: int = 0
    entities_done: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    _told: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def counted(self, read: int, found: int) -> None:
        with self._lock:
            self.read += read
            self.found += found
            if self.read - self._told >= _PROGRESS_EVERY:
                self._tell()

    def entity_done(self, failure: tuple[str, str] | None = None) -> None:
        with self._lock:
            self.entities_done += 1
            if failure is not None:
                self.failed.append(failure)
            self._tell()

    def full(self) -> bool:
        return self.max_count is not None and self.found >= self.max_count

    def _tell(self) -> None:
        self._told = self.read
        if self.on_progress is not None:
            self.on_progress(SearchProgress(self.read, self.found, self.entities_done,
                                            self.entities, tuple(self.failed)))


def _range(conditions: Conditions) -> tuple[int, int | None]:
    return conditions.from_sequence_number or 1, conditions.to_sequence_number


def search(client: ManagementClient, entity: str, conditions: Conditions | None = None, *,
           dead_letter: bool = False, max_count: int | None = None,
           on_progress: OnProgress | None = None,
           cancel: threading.Event | None = None) -> Iterator[Found]:
    """The messages of one entity (or its dead-letter queue) that meet ``conditions``,
    handed out as they are read (peeked: nothing is locked or changed).

    The conditions are checked here, before anything is sent; the read starts when the
    iterator is first advanced.

    Args:
        client: The namespace's client.
        entity: A queue, a subscription (``TOPIC/Subscriptions/SUB``) or a dead-letter queue.
        conditions: What to find; None: every message.
        dead_letter: Read the entity's dead-letter queue.
        max_count: Stop after this many matches; None: read to the end.
        on_progress: Told what was read and found, every few hundred messages and at the
            end.
        cancel: Set it to stop the read (the iterator ends).

    Returns:
        An iterator of [Found][sbmgmt.actions.search.Found], in sequence-number order.

    Raises:
        ConditionError: A condition cannot be used.
        ValueError: ``max_count`` is below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed (raised by the iterator).
    """
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    _check_max(max_count)
    tally = _Tally(1, on_progress, max_count)
    return _read(client, _path(entity, dead_letter), conditions, matches, tally, cancel, True)


class _Reading:
    """One entity's read, as it goes: what it has read and found, told to the tally (the
    loop that peeks is the sync or the asyncio one)."""

    def __init__(self, path: str, matches: Callable[[ReceivedMessage], bool],
                 tally: _Tally) -> None:
        self.path, self.matches, self.tally = path, matches, tally
        self.read = self.found = 0

    def take(self, message: ReceivedMessage) -> Found | None:
        """The message, found if it matches."""
        self.read += 1
        if self.matches(message):
            self.found += 1
            self._tell()
            return Found(self.path, message)
        if self.read >= _PROGRESS_EVERY:
            self._tell()
        return None

    def end(self, last: bool) -> None:
        """The read is over (``last``: the search's only entity, told done here)."""
        self._tell()
        if last:
            self.tally.entity_done()

    def _tell(self) -> None:
        self.tally.counted(self.read, self.found)
        self.read = self.found = 0


def _read(client: ManagementClient, path: str, conditions: Conditions,
          matches: Callable[[ReceivedMessage], bool], tally: _Tally,
          cancel: threading.Event | None, last: bool) -> Generator[Found, None, None]:
    first, to = _range(conditions)
    reading = _Reading(path, matches, tally)
    try:
        for message in client.entity(path).peek_all(first, to):
            found = reading.take(message)
            if found is not None:
                yield found
                if tally.full():
                    break
            if cancel is not None and cancel.is_set():
                break
    finally:
        reading.end(last)


async def search_async(client: AsyncManagementClient, entity: str,
                       conditions: Conditions | None = None, *, dead_letter: bool = False,
                       max_count: int | None = None,
                       on_progress: OnProgress | None = None) -> AsyncIterator[Found]:
    """:func:`search` on the asyncio client: an asynchronous iterator of the matches.

    Args:
        client: The namespace's asyncio client.
        entity: A queue, a subscription or a dead-letter queue.
        conditions: What to find; None: every message.
        dead_letter: Read the entity's dead-letter queue.
        max_count: Stop after this many matches; None: read to the end.
        on_progress: Told what was read and found now and then.

    Yields:
        Each [Found][sbmgmt.actions.search.Found], in sequence-number order (cancel the
        task, or stop iterating, to stop the read).

    Raises:
        ConditionError: A condition cannot be used (at the first iteration, before
            anything is sent).
        ValueError: ``max_count`` is below 1.
        sbmgmt.errors.ServiceBusManagementError: A peek failed.
    """
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    _check_max(max_count)
    tally = _Tally(1, on_progress, max_count)
    async for found in _read_async(client, _path(entity, dead_letter), conditions, matches,
                                   tally, True):
        yield found


async def _read_async(client: AsyncManagementClient, path: str, conditions: Conditions,
                      matches: Callable[[ReceivedMessage], bool], tally: _Tally,
                      last: bool) -> AsyncIterator[Found]:
    first, to = _range(conditions)
    reading = _Reading(path, matches, tally)
    try:
        async for message in client.entity(path).peek_all(first, to):
            found = reading.take(message)
            if found is not None:
                yield found
                if tally.full():
                    break
    finally:
        reading.end(last)


# ---- a namespace ---------------------------------------------------------------------------


class _Stop(Exception):
    """The reader stopped taking matches: the entity readers end."""


def _prepared(conditions: Conditions | None, entities: Iterable[str], dead_letter: bool,
              max_count: int | None, in_flight: int, on_progress: OnProgress | None,
              ) -> tuple[Conditions, Callable[[ReceivedMessage], bool], list[str], _Tally]:
    """A namespace search's arguments checked (before anything is sent), its paths and its
    tally."""
    conditions = conditions or Conditions()
    matches = conditions.matcher()
    _check_max(max_count)
    if in_flight < 1:
        raise ValueError(f"entities_in_flight must be 1 or more, got {in_flight}")
    paths = [_path(entity, dead_letter) for entity in entities]
    return conditions, matches, paths, _Tally(len(paths), on_progress, max_count)


def search_namespace(client: ManagementClient, entities: Iterable[str],
                     conditions: Conditions | None = None, *, dead_letter: bool = False,
                     max_count: int | None = None,
                     entities_in_flight: int = DEFAULT_ENTITIES_IN_FLIGHT,
                     on_progress: OnProgress | None = None,
                     cancel: threading.Event | None = None) -> Iterator[Found]:
    """The messages of many entities that meet ``conditions``, several entities read at
    once, each match handed out as its entity's reader finds it.

    An entity that cannot be read (deleted meanwhile, not authorized) does not stop the
    others: it is told in ``on_progress``'s ``failed``. Each reader is a thread of its
    own; the matches wait for the caller in a bounded queue, so a caller that takes them
    slowly slows the readers rather than fill the memory. Closing the iterator (or
    ``cancel``) stops every reader.

    Args:
        client: The namespace's client.
        entities: The paths to read: queues and subscriptions (a topic keeps no
            messages), e.g. from [list_entities][sbmgmt.actions.entities.list_entities].
        conditions: What to find; None: every message.
        dead_letter: Read each entity's dead-letter queue instead.
        max_count: Stop after this many matches in all; None: read everything.
        entities_in_flight: Entities read at once (1 or more).
        on_progress: Told what was read and found now and then, and at each entity's end
            (from the readers' threads).
        cancel: Set it to stop every reader (the iterator ends).

    Returns:
        An iterator of [Found][sbmgmt.actions.search.Found]: each entity's in
        sequence-number order, the entities interleaved.

    Raises:
        ConditionError: A condition cannot be used (nothing is sent).
        ValueError: ``max_count`` or ``entities_in_flight`` is below 1.
    """
    conditions, matches, paths, tally = _prepared(conditions, entities, dead_letter,
                                                  max_count, entities_in_flight, on_progress)
    return _namespace(client, paths, conditions, matches, tally, entities_in_flight,
                      cancel or threading.Event())


def _namespace(client: ManagementClient, paths: Sequence[str], conditions: Conditions,
               matches: Callable[[ReceivedMessage], bool], tally: _Tally, in_flight: int,
               cancel: threading.Event) -> Iterator[Found]:
    waiting: queue.Queue[Found | None] = queue.Queue(_QUEUED_MATCHES)
    todo = iter(paths)
    todo_lock = threading.Lock()
    crashed: list[Exception] = []

    def hand(found: Found | None) -> None:
        while not cancel.is_set():
            with contextlib.suppress(queue.Full):
                waiting.put(found, timeout=0.1)
                return
        raise _Stop

    def reader() -> None:
        try:
            while not cancel.is_set() and not tally.full():
                with todo_lock:
                    path = next(todo, None)
                if path is None:
                    return
                failure = None
                try:
                    with contextlib.closing(_read(client, path, conditions, matches, tally,
                                                  cancel, last=False)) as matched:
                        for found in matched:
                            hand(found)
                except ServiceBusManagementError as error:
                    failure = (path, str(error))
                tally.entity_done(failure)
        except _Stop:
            return
        except Exception as error:  # not the service's answer: the caller's iterator raises it
            crashed.append(error)
            cancel.set()
        finally:
            with contextlib.suppress(_Stop):
                hand(None)

    readers = [threading.Thread(target=reader, name=f"sbmgmt-search-{n}", daemon=True)
               for n in range(min(in_flight, max(1, len(paths))))]
    for thread in readers:
        thread.start()
    running = len(readers)
    handed = 0
    try:
        while running and not cancel.is_set():
            try:
                found = waiting.get(timeout=0.1)
            except queue.Empty:
                continue
            if found is None:
                running -= 1
                continue
            yield found
            handed += 1
            if tally.max_count is not None and handed >= tally.max_count:
                break
    finally:
        cancel.set()
        for thread in readers:
            thread.join()
    if crashed:
        raise crashed[0]


async def search_namespace_async(client: AsyncManagementClient, entities: Iterable[str],
                                 conditions: Conditions | None = None, *,
                                 dead_letter: bool = False, max_count: int | None = None,
                                 entities_in_flight: int = DEFAULT_ENTITIES_IN_FLIGHT,
                                 on_progress: OnProgress | None = None,
                                 ) -> AsyncIterator[Found]:
    """:func:`search_namespace` on the asyncio client: each entity read by a task of its
    own, ``entities_in_flight`` at once.

    Args:
        client: The namespace's asyncio client.
        entities: The paths to read (queues and subscriptions).
        conditions: What to find; None: every message.
        dead_letter: Read each entity's dead-letter queue instead.
        max_count: Stop after this many matches in all; None: read everything.
        entities_in_flight: Entities read at once (1 or more).
        on_progress: Told what was read and found now and then.

    Yields:
        Each [Found][sbmgmt.actions.search.Found] as its entity's task finds it.

    Raises:
        ConditionError: A condition cannot be used (at the first iteration, before
            anything is sent).
        ValueError: ``max_count`` or ``entities_in_flight`` is below 1.
    """
    conditions, matches, paths, tally = _prepared(conditions, entities, dead_letter,
                                                  max_count, entities_in_flight, on_progress)
    waiting: asyncio.Queue[Found | None] = asyncio.Queue(_QUEUED_MATCHES)
    todo = iter(paths)

    async def reader() -> None:
        try:
            for path in todo:
                if tally.full():
                    return
                failure = None
                try:
                    async for found in _read_async(client, path, conditions, matches, tally,
                                                   last=False):
                        await waiting.put(found)
                except ServiceBusManagementError as error:
                    failure = (path, str(error))
                tally.entity_done(failure)
        finally:
            await waiting.put(None)

    tasks = [asyncio.create_task(reader())
             for _ in range(min(entities_in_flight, max(1, len(paths))))]
    running, handed = len(tasks), 0
    try:
        while running:
            found = await waiting.get()
            if found is None:
                running -= 1
                continue
            yield found
            handed += 1
            if max_count is not None and handed >= max_count:
                break
    finally:
        for task in tasks:
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
    crashed = [e for e in ended if isinstance(e, Exception)]  # not the service's answer
    if crashed:
        raise crashed[0]


# ---- what was found, handed on --------------------------------------------------------------


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
