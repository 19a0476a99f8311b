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

from ._conditions import ConditionError, Conditions
from ._entity import search, search_async
from ._namespace import DEFAULT_IN_FLIGHT, search_namespace, search_namespace_async
from ._records import Found, SearchReport
from ._selection import FoundLines, found_selection, read_found
from ._tally import AsyncMatches, Matches

__all__ = [
    "DEFAULT_IN_FLIGHT",
    "AsyncMatches",
    "ConditionError",
    "Conditions",
    "Found",
    "FoundLines",
    "Matches",
    "SearchReport",
    "found_selection",
    "read_found",
    "search",
    "search_async",
    "search_namespace",
    "search_namespace_async",
]
