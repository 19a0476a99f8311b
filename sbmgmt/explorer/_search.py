"""The explorer's search: one entity's messages (its messages tab's search box) and the whole
namespace's, on :mod:`sbmgmt.actions.search`.

Theory of operation. ``GET /search`` (an entity) or ``GET /search/all`` (the namespace) with
conditions starts a search on a thread of its own and answers at once with the page: the
form as filled in and an empty list whose last row is a poller. The poller asks
``GET /search/rows?id=&after=N`` after a short delay; the answer is the rows found since
the N-th and, while the search runs, a new poller (htmx swaps the old one out for them),
so the matches appear as they are found and the list stops asking once the search ended
(its status line says how many were read and found, or what stopped it). Leaving the page
does not stop the search; ``POST /search/stop`` does (the Stop button), and a search stops
by itself at its ``max`` matches. What a search holds is its rows (at most ``max``, at
most :data:`MOST_ROWS`), as text; the last :data:`KEPT` searches are remembered.

Each row opens the message view; on an entity's search each row has the tick box the
messages page has, which the same resubmit / move forms (``POST /repair``) take.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._wording import counted
from ..actions.contract import CancelToken, Progress
from ..actions.entities import EntityKind
from ..actions.search import (
    ConditionError,
    Conditions,
    Found,
    Matches,
    search,
    search_namespace,
)
from ..entity_paths import DEAD_LETTER_SUFFIX, is_dead_letter_path
from ..message import id_text
from ._form_values import BadInput, choice_value, error_text, number_value, text_value
from ._namespace import Namespace
from ._pages import SubQueue, queue_path

__all__ = ["KEPT", "MOST_ROWS", "search_routes"]

#: The most searches remembered (the oldest finished one is forgotten first).
KEPT = 20
#: The most matches one search shows (``max`` is at most this).
MOST_ROWS = 1000
_DEFAULT_MAX = 100
#: The fields of the search form, in the order the page shows them.
_FIELDS = ("body", "regex", "path_expression", "where", "session", "state", "max")
_STATES = ("any", "active", "deferred", "scheduled")

Render = Callable[..., Response]


@dataclasses.dataclass
class _Search:
    """One search: its rows so far, how far it got, how it ended."""

    id: str
    title: str
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    read: int = 0
    failed_entities: tuple[tuple[str, str], ...] = ()
    ended: bool = False
    error: str | None = None
    cancel: CancelToken = dataclasses.field(default_factory=CancelToken)

    def told(self, progress: Progress) -> None:
        self.read = progress.done


class _Searches:
    """The searches of this explorer, by their random id."""

    def __init__(self) -> None:
        self._searches: OrderedDict[str, _Search] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, title: str, found: Callable[[_Search], Matches],
              describe_error: Callable[[Exception], str]) -> _Search:
        with self._lock:
            job = _Search(secrets.token_urlsafe(12), title)
            self._searches[job.id] = job
            for old in [s for s in self._searches.values() if s.ended][:-KEPT]:
                del self._searches[old.id]

        def run() -> None:
            matches = None
            try:
                matches = found(job)
                for item in matches:
                    job.rows.append(_row(item))
            except Exception as error:  # the list's status line says what stopped it
                job.error = describe_error(error)
            finally:
                if matches is not None:
                    job.failed_entities = matches.report.failed
                job.ended = True

        threading.Thread(target=run, name=f"sbmgmt-explorer-search-{job.id[:6]}",
                         daemon=True).start()
        return job

    def get(self, search_id: str) -> _Search | None:
        with self._lock:
            return self._searches.get(search_id)


def _row(found: Found) -> dict[str, Any]:
    """What the list shows of a match (text only: nothing of the message is kept)."""
    message = found.message
    dead = is_dead_letter_path(found.entity)
    path = found.entity.rstrip("/")[:-len(DEAD_LETTER_SUFFIX)] if dead else found.entity
    kind = (EntityKind.SUBSCRIPTION if "/subscriptions/" in path.lower()
            else EntityKind.QUEUE).value
    link = urlencode({"path": path, "kind": kind, "queue": "deadletter" if dead else "main",
                      "seq": message.sequence_number})
    return {"entity": found.entity, "seq": message.sequence_number, "link": link,
            "state": message.state.name.lower(),
            "message_id": "" if message.message_id is None else id_text(message.message_id),
            "session": message.session_id or "", "subject": message.subject or "",
            "enqueued": message.enqueued_time, "bytes": len(message.body_bytes())}


def _text(query: Any, key: str) -> str | None:
    value = query.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _conditions(query: Any) -> Conditions | None:
    """The search form's conditions; None when it asks for nothing yet (a first visit)."""
    body, regex, path = _text(query, "body"), _text(query, "regex"), \
        _text(query, "path_expression")
    where, session = _text(query, "where"), _text(query, "session")
    state = query.get("state") or "any"
    if state not in _STATES:
        raise BadInput(f"state must be one of {', '.join(_STATES)}")
    if not any((body, regex, path, where, session)) and state == "any":
        return None
    conditions = Conditions(where=where, body=body, body_regex=regex, path=path,
                            states=None if state == "any" else frozenset({state}),
                            session_id=session)
    try:
        conditions.matcher()
    except ConditionError as error:
        raise BadInput(str(error)) from None
    return conditions


class _SearchViews:
    """The search's route handlers."""

    def __init__(self, namespace: Namespace, page: Render, entity_page: Render) -> None:
        self._ns = namespace
        self._page = page
        self._entity_page = entity_page
        self._searches = _Searches()

    def _form(self, request: Request) -> dict[str, Any]:
        query = request.query_params
        return {name: query.get(name, "") for name in _FIELDS} | {
            "states": _STATES, "max_rows": MOST_ROWS,
            "dead_letter": query.get("queue") == SubQueue.DEAD_LETTER.value}

    async def entity(self, request: Request) -> Response:
        """An entity's search: the form, and the list of what it finds as it finds it."""
        query = request.query_params
        path = text_value(query, "path")
        queue = choice_value(query, "queue", SubQueue, SubQueue.MAIN)
        most = number_value(query, "max", _DEFAULT_MAX, minimum=1, maximum=MOST_ROWS)
        conditions = _conditions(query)
        source = queue_path(path, queue)
        job = None
        if conditions is not None:
            job = self._searches.start(
                f"{source}", lambda s: search(self._ns.client, source, conditions,
                                              max_count=most, on_progress=s.told,
                                              cancel=s.cancel),
                self._described)
        return self._entity_page(request, "search.html", "messages", queue=queue.value,
                                 search=job, many=False, **self._form(request))

    async def namespace(self, request: Request) -> Response:
        """The namespace's search: every queue's and subscription's messages (or their
        dead-letter queues), several entities at once."""
        query = request.query_params
        most = number_value(query, "max", _DEFAULT_MAX, minimum=1, maximum=MOST_ROWS)
        dead = query.get("dead_letter") == "yes"
        conditions = _conditions(query)
        job = None
        if conditions is not None:
            def found(job: _Search) -> Matches:
                paths = [e.name for e in self._ns.entities() if e.kind is not EntityKind.TOPIC]
                return search_namespace(self._ns.client, paths, conditions, dead_letter=dead,
                                        max_count=most, on_progress=job.told,
                                        cancel=job.cancel)

            job = self._searches.start("the namespace", found, self._described)
        return self._page(request, "search_all.html", search=job, many=True,
                          **self._form(request) | {"dead_letter": dead})

    async def rows(self, request: Request) -> Response:
        """The rows found since the ``after``-th, the status, and (while the search runs) the
        next poller."""
        query = request.query_params
        job = self._searches.get(text_value(query, "id"))
        if job is None:
            raise BadInput("no such search (it was forgotten: search again)")
        after = number_value(query, "after", 0, minimum=0)
        ended = job.ended  # read before the rows: a row added after it is in the next answer
        rows = job.rows[after:]
        return self._page(request, "_search_rows.html", search=job, rows=rows,
                          after=after + len(rows), ended=ended,
                          many=query.get("many") == "yes",
                          said=_status(job, after + len(rows), ended))

    async def stop(self, request: Request) -> Response:
        """Stop a search (it ends at its next message)."""
        form = await request.form()
        job = self._searches.get(text_value(form, "id"))
        if job is None:
            raise BadInput("no such search")
        job.cancel.cancel()
        return self._page(request, "_notice.html", text="stopping the search", error=False)

    def _described(self, error: Exception) -> str:
        return self._ns.redacted(error_text(error))


def _status(job: _Search, shown: int, ended: bool) -> str:
    found = counted(shown, "message")
    read = f"{job.read} read"
    failed = "" if not job.failed_entities else (
        "; not searched: " + ", ".join(f"{entity} ({reason})"
                                       for entity, reason in job.failed_entities))
    if job.error is not None and ended:
        return f"stopped: {job.error} (found {found}, {read})"
    if not ended:
        return f"searching… found {found}, {read}"
    stopped = " (stopped)" if job.cancel.cancelled else ""
    return f"found {found}, {read}{stopped}{failed}"


def search_routes(namespace: Namespace, page: Render, entity_page: Render) -> list[Route]:
    """The search's routes, rendered by the explorer's own page functions.

    Args:
        namespace: What is searched.
        page: Renders a template as a page (the explorer's ``_page``).
        entity_page: Renders an entity's tab (the explorer's ``_entity_page``).

    Returns:
        The routes to mount.
    """
    views = _SearchViews(namespace, page, entity_page)
    return [
        Route("/search", views.entity),
        Route("/search/all", views.namespace),
        Route("/search/rows", views.rows),
        Route("/search/stop", views.stop, methods=["POST"]),
    ]
